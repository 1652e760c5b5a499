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

static struct {
    cu_result (*init)(unsigned);
    cu_result (*driver_version)(int *);
    cu_result (*device_count)(int *);
    cu_result (*device_get)(cu_device *, int);
    cu_result (*device_name)(char *, int, cu_device);
    cu_result (*device_attribute)(int *, int, cu_device);
    cu_result (*device_memory)(size_t *, cu_device);
} api;

static kiln__cuda_driver driver;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
    static const char *const names[] = {
        "cuInit",          "cuDriverGetVersion",   "cuDeviceGetCount",   "cuDeviceGet",
        "cuDeviceGetName", "cuDeviceGetAttribute", "cuDeviceTotalMem_v2"};
    void *const slots[] = {&api.init,         &api.driver_version, &api.device_count,
                           &api.device_get,   &api.device_name,    &api.device_attribute,
                           &api.device_memory};
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
