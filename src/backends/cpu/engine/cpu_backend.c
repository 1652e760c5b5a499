/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU backend's table: the evaluator for eager ops (eval/kernels.c), the compiled
 * engine (exe_*.c) for executables, and the ctx's logical CPU devices (eval/cpu_devices.c).
 * Nothing in backends/cpu/ calls back into this file but through the table. */
#include "backends/cpu/engine/cpu_backend.h"
#include "backends/cpu/engine/exe.h"
#include "backends/cpu/eval/eval.h"
#include "backends/cpu/lib/blas_api.h"

static const kiln__backend cpu = {
    .struct_size = sizeof(kiln__backend),
    .version = KILN_BACKEND_VERSION,
    .name = "cpu",
    .device_type = KILN_DEVICE_TYPE_CPU,
    .device_count = kiln__cpu_device_count,
    .device_info = kiln__cpu_device_info,
    .supports_op = kiln__cpu_supports_op,
    .eval_op = kiln__cpu_eager_op,
    .compile = kiln__cpu_compile,
    .execute = kiln__cpu_execute,
    .release = kiln__cpu_release,
    .info = kiln__cpu_info,
    .print = kiln__cpu_print,
    .native_status = kiln__cpu_native_status,
};

const kiln__backend *kiln__cpu_backend(void) {
    kiln__cpu_threads_init();
    return &cpu;
}
