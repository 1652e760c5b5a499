/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA driver through dlopen (driver_api.h): the entry points are declared here with
 * the driver API's C types, so no CUDA header is needed to build. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/driver_api.h"
#include "base/dynlib.h"

typedef int cu_result; /* CUresult: 0 is CUDA_SUCCESS */
typedef int cu_device; /* CUdevice */

/* CUdevice_attribute values (cuda.h) */
#define CU_ATTR_CC_MAJOR 75
#define CU_ATTR_CC_MINOR 76

typedef void *cu_context;
typedef void *cu_module;
typedef void *cu_function;
typedef unsigned long long cu_ptr;

static struct {
    cu_result (*init)(unsigned);
    cu_result (*driver_version)(int *);
    cu_result (*device_count)(int *);
    cu_result (*device_get)(cu_device *, int);
    cu_result (*device_name)(char *, int, cu_device);
    cu_result (*device_attribute)(int *, int, cu_device);
    cu_result (*device_memory)(size_t *, cu_device);
    /* for sessions (kiln__cuda_session_open) */
    cu_result (*ctx_create)(cu_context *, unsigned, cu_device);
    cu_result (*ctx_destroy)(cu_context);
    cu_result (*module_load)(cu_module *, const void *);
    cu_result (*module_unload)(cu_module);
    cu_result (*module_function)(cu_function *, cu_module, const char *);
    cu_result (*mem_alloc)(cu_ptr *, size_t);
    cu_result (*mem_free)(cu_ptr);
    cu_result (*copy_htod)(cu_ptr, const void *, size_t);
    cu_result (*copy_dtoh)(void *, cu_ptr, size_t);
    cu_result (*launch)(cu_function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, void *, void **, void **);
    cu_result (*synchronize)(void);
    cu_result (*error_string)(cu_result, const char **);
} api;

static kiln__cuda_driver driver;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
    static const char *const names[] = {
        "cuInit",          "cuDriverGetVersion",   "cuDeviceGetCount",    "cuDeviceGet",
        "cuDeviceGetName", "cuDeviceGetAttribute", "cuDeviceTotalMem_v2", "cuCtxCreate_v2",
        "cuCtxDestroy_v2", "cuModuleLoadData",     "cuModuleUnload",      "cuModuleGetFunction",
        "cuMemAlloc_v2",   "cuMemFree_v2",         "cuMemcpyHtoD_v2",     "cuMemcpyDtoH_v2",
        "cuLaunchKernel",  "cuCtxSynchronize",     "cuGetErrorString"};
    void *const slots[] = {
        &api.init,        &api.driver_version,   &api.device_count,  &api.device_get,
        &api.device_name, &api.device_attribute, &api.device_memory, &api.ctx_create,
        &api.ctx_destroy, &api.module_load,      &api.module_unload, &api.module_function,
        &api.mem_alloc,   &api.mem_free,         &api.copy_htod,     &api.copy_dtoh,
        &api.launch,      &api.synchronize,      &api.error_string};
    const char *lib = getenv("KILN_CUDA_DRIVER");
    if (!lib || !*lib) lib = "libcuda.so.1";
    char error[200];
    if (!kiln__dynlib_open(lib, "the CUDA driver", names, slots, sizeof names / sizeof names[0],
                           error, sizeof error)) {
        snprintf(driver.reason, sizeof driver.reason, "%s", error);
        return;
    }
    cu_result rc = api.init(0);
    if (rc != 0) {
        snprintf(driver.reason, sizeof driver.reason,
                 "the CUDA driver (%s) did not start: cuInit returned %d (no GPU, or a stub "
                 "driver)",
                 lib, rc);
        return;
    }
    api.driver_version(&driver.version);
    int n = 0;
    if (api.device_count(&n) != 0 || n <= 0) {
        snprintf(driver.reason, sizeof driver.reason, "the CUDA driver (%s) lists no device", lib);
        return;
    }
    driver.loaded = true;
    for (int i = 0; i < n && i < KILN__CUDA_MAX_DEVICES; i++) {
        cu_device d;
        kiln__cuda_device *out = &driver.devices[driver.n_devices];
        if (api.device_get(&d, i) != 0) continue;
        api.device_name(out->name, (int)sizeof out->name, d);
        api.device_attribute(&out->major, CU_ATTR_CC_MAJOR, d);
        api.device_attribute(&out->minor, CU_ATTR_CC_MINOR, d);
        api.device_memory(&out->memory, d);
        driver.n_devices++;
    }
}

const kiln__cuda_driver *kiln__cuda_driver_get(void) {
    pthread_once(&once, load);
    return &driver;
}

/* ---- sessions --------------------------------------------------------------------------- */

#define MAX_BUFFERS 256

struct kiln__cuda_session {
    cu_context ctx;
    cu_module module;
    cu_ptr buffers[MAX_BUFFERS];
    int n_buffers;
};

static bool check(cu_result rc, const char *what, char *err, size_t cap) {
    if (rc == 0) return true;
    const char *msg = NULL;
    if (api.error_string) api.error_string(rc, &msg);
    snprintf(err, cap, "%s: CUDA error %d (%s)", what, rc, msg ? msg : "unknown");
    return false;
}

bool kiln__cuda_session_open(const void *cubin, size_t size, kiln__cuda_session **out, char *err,
                             size_t cap) {
    (void)size;
    *out = NULL;
    const kiln__cuda_driver *d = kiln__cuda_driver_get();
    if (!d->loaded) {
        snprintf(err, cap, "%s", d->reason);
        return false;
    }
    kiln__cuda_session *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, cap, "out of memory");
        return false;
    }
    cu_device dev;
    if (!check(api.device_get(&dev, 0), "cuDeviceGet", err, cap) ||
        !check(api.ctx_create(&s->ctx, 0, dev), "cuCtxCreate", err, cap)) {
        free(s);
        return false;
    }
    if (!check(api.module_load(&s->module, cubin), "cuModuleLoadData", err, cap)) {
        api.ctx_destroy(s->ctx);
        free(s);
        return false;
    }
    *out = s;
    return true;
}

void kiln__cuda_session_close(kiln__cuda_session *s) {
    if (!s) return;
    for (int i = 0; i < s->n_buffers; i++)
        api.mem_free(s->buffers[i]);
    api.module_unload(s->module);
    api.ctx_destroy(s->ctx);
    free(s);
}

bool kiln__cuda_alloc(kiln__cuda_session *s, size_t nbytes, uint64_t *out_ptr, char *err,
                      size_t cap) {
    if (s->n_buffers == MAX_BUFFERS) {
        snprintf(err, cap, "more than %d buffers in one session", MAX_BUFFERS);
        return false;
    }
    cu_ptr p = 0;
    if (!check(api.mem_alloc(&p, nbytes ? nbytes : 1), "cuMemAlloc", err, cap)) return false;
    s->buffers[s->n_buffers++] = p;
    *out_ptr = p;
    return true;
}

bool kiln__cuda_copy_in(kiln__cuda_session *s, uint64_t dst, const void *src, size_t nbytes,
                        char *err, size_t cap) {
    (void)s;
    return nbytes == 0 || check(api.copy_htod(dst, src, nbytes), "cuMemcpyHtoD", err, cap);
}

bool kiln__cuda_copy_out(kiln__cuda_session *s, void *dst, uint64_t src, size_t nbytes, char *err,
                         size_t cap) {
    (void)s;
    return nbytes == 0 || check(api.copy_dtoh(dst, src, nbytes), "cuMemcpyDtoH", err, cap);
}

bool kiln__cuda_launch(kiln__cuda_session *s, const char *name, unsigned grid, unsigned block,
                       const void *arg, size_t arg_size, char *err, size_t cap) {
    (void)arg_size;
    cu_function f;
    if (!check(api.module_function(&f, s->module, name), "cuModuleGetFunction", err, cap))
        return false;
    void *params[1] = {(void *)arg};
    return check(api.launch(f, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel",
                 err, cap) &&
           check(api.synchronize(), "cuCtxSynchronize", err, cap);
}
