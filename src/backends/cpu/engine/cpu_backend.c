/* The CPU backend's table: the evaluator for eager ops (kernels.c), the compiled engine
 * (exe_*.c) for executables, and the ctx's logical CPU devices, which share host memory.
 * Nothing in the folder calls back into this file but through the table. */
#include "backends/cpu/eval.h"
#include "backends/cpu/exe.h"
#include "base/ctx_internal.h"

int32_t kiln__cpu_device_count(const kiln_ctx *cx) { return cx->cpu_devices; }

static const kiln__memory_space host_memory[] = {
    {.kind = KILN__MEMORY_HOST, .name = "unpinned_host", .host_visible = true},
};

kiln_status kiln__cpu_device_info(const kiln_ctx *cx, int32_t id, kiln__device_info *out) {
    if (id < 0 || id >= cx->cpu_devices) return KILN_INVALID_ARGUMENT;
    *out = (kiln__device_info){.device = {.type = KILN_DEVICE_TYPE_CPU, .id = id},
                               .kind = "cpu",
                               .n_memories = 1,
                               .memories = host_memory};
    return KILN_OK;
}

static const kiln__backend cpu = {
    .struct_size = sizeof(kiln__backend),
    .version = KILN_BACKEND_VERSION,
    .name = "cpu",
    .device_type = KILN_DEVICE_TYPE_CPU,
    .device_count = kiln__cpu_device_count,
    .device_info = kiln__cpu_device_info,
    .supports_op = kiln__cpu_supports_op,
    .eval_op = kiln__cpu_eval_op,
    .compile = kiln__cpu_compile,
    .execute = kiln__cpu_execute,
    .release = kiln__cpu_release,
    .info = kiln__cpu_info,
    .print = kiln__cpu_print,
    .native_status = kiln__cpu_native_status,
    .prepare_op = kiln__cpu_prepare_op,
};

const kiln__backend *kiln__cpu_backend(void) {
    kiln__cpu_threads_init();
    return &cpu;
}
