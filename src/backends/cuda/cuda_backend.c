/* SPDX-License-Identifier: Apache-2.0 */
/* The cuda backend's table (backend/backend.h), listed by the registry from the start so
 * that users see why it cannot run: without a driver or a device, the driver's reason;
 * with them, that the backend does not run programs yet (its code generator is here and
 * tested: codegen.c). Nothing else is reachable while `available` says no. */
#include <stdio.h>

#include "backends/cuda/cuda.h"
#include "backends/cuda/driver_api.h"

static kiln_status available(char *reason, size_t cap) {
    const kiln__cuda_driver *d = kiln__cuda_driver_get();
    if (!d->loaded) {
        snprintf(reason, cap, "%s", d->reason);
        return KILN_UNAVAILABLE;
    }
    snprintf(reason, cap,
             "%d device%s (%s, sm_%d%d); the cuda backend generates and checks its kernels but "
             "does not run programs yet",
             (int)d->n_devices, d->n_devices == 1 ? "" : "s", d->devices[0].name,
             d->devices[0].major, d->devices[0].minor);
    return KILN_UNAVAILABLE;
}

static int32_t device_count(const kiln_ctx *cx) {
    (void)cx;
    return 0;
}

static kiln_status device_info(const kiln_ctx *cx, int32_t id, kiln__device_info *out) {
    (void)out;
    return kiln_ctx_set_error((kiln_ctx *)cx, KILN_UNAVAILABLE, "cuda: no device %d", (int)id);
}

static bool supports_op(kiln_op op, kiln_dtype dtype) {
    (void)op, (void)dtype;
    return false;
}

static kiln_status eval_op(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                           kiln_tensor *const *operands, int n_operands, kiln_tensor **results,
                           int n_results) {
    (void)op, (void)attrs, (void)operands, (void)n_operands, (void)results, (void)n_results;
    return kiln_ctx_set_error(cx, KILN_UNAVAILABLE, "cuda: the backend does not run ops yet");
}

static kiln_status compile(kiln_ctx *cx, const kiln__compile_request *req,
                           kiln__executable **out_exe) {
    (void)req;
    *out_exe = NULL;
    return kiln_ctx_set_error(cx, KILN_UNAVAILABLE, "cuda: the backend does not run programs yet");
}

static kiln_status execute(kiln_ctx *cx, const kiln__executable *exe,
                           const kiln__execute_args *args, kiln__event **out_event) {
    (void)exe, (void)args;
    *out_event = NULL;
    return kiln_ctx_set_error(cx, KILN_UNAVAILABLE, "cuda: the backend does not run programs yet");
}

static void release(kiln__executable *exe) { (void)exe; }

static const kiln__backend cuda = {
    .struct_size = sizeof(kiln__backend),
    .version = KILN_BACKEND_VERSION,
    .name = "cuda",
    .device_type = KILN_DEVICE_TYPE_CUDA,
    .available = available,
    .device_count = device_count,
    .device_info = device_info,
    .supports_op = supports_op,
    .eval_op = eval_op,
    .compile = compile,
    .execute = execute,
    .release = release,
};

const kiln__backend *kiln__cuda_backend(void) { return &cuda; }
