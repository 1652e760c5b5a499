/* The CPU backend's table: the evaluator for eager ops, the compiled engine (exe_*.c) for
 * executables, and the ctx's logical CPU devices, which share host memory. */
#include "backends/cpu/eval.h"
#include "backends/cpu/eval_linalg.h"
#include "backends/cpu/exe.h"
#include "base/ctx_internal.h"

static const kiln__eval_fn table[] = {
#define KILN_OP(name, text, nin, nout, flags) kiln__eval_##name,
#include "ops/ops.def"
#undef KILN_OP
};
_Static_assert(sizeof table / sizeof table[0] == KILN_OP_COUNT, "one kernel per op");

static bool supports_op(kiln_op op) { return (int)op >= 0 && op < KILN_OP_COUNT; }

kiln_status kiln__cpu_eval_op(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                              kiln_tensor *const *operands, int n_operands, kiln_tensor **results,
                              int n_results) {
    if (!supports_op(op))
        return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED, "cpu: op %d is not supported", (int)op);
    return table[op](cx, attrs, operands, n_operands, results, n_results);
}

/* Library primitives are built at compile time, so the first call runs at full speed. */
static kiln_status prepare_op(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                              const kiln__type *operands, int n_operands, const kiln__type *results,
                              int n_results) {
    /* A third operand is the bias of a fused epilogue (kiln__cpu_conv_bias_act). */
    if (op == KILN_OP_CONVOLUTION && (n_operands == 2 || n_operands == 3) && n_results == 1)
        return kiln__dnnl_conv_prepare(cx, attrs, &operands[0], &operands[1], &results[0],
                                       n_operands == 3);
    return KILN_OK;
}

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
    .supports_op = supports_op,
    .eval_op = kiln__cpu_eval_op,
    .compile = kiln__cpu_compile,
    .execute = kiln__cpu_execute,
    .release = kiln__cpu_release,
    .info = kiln__cpu_info,
    .print = kiln__cpu_print,
    .prepare_op = prepare_op,
};

const kiln__backend *kiln__cpu_backend(void) {
    kiln__cpu_threads_init();
    return &cpu;
}
