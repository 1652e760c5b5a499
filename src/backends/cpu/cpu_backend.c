#include "backends/cpu/eval.h"
#include "backends/cpu/eval_linalg.h"

static const kiln__eval_fn table[] = {
#define KILN_OP(name, text, nin, nout, flags) kiln__eval_##name,
#include "ops/ops.def"
#undef KILN_OP
};
_Static_assert(sizeof table / sizeof table[0] == KILN_OP_COUNT, "one kernel per op");

static bool supports_op(kiln_op op) { return (int)op >= 0 && op < KILN_OP_COUNT; }

static kiln_status eval_op(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
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

static const kiln__backend cpu = {
    .version = KILN_BACKEND_VERSION,
    .name = "cpu",
    .device = KILN_DEVICE_TYPE_CPU,
    .supports_op = supports_op,
    .eval_op = eval_op,
    .prepare_op = prepare_op,
};

const kiln__backend *kiln__cpu_backend(void) {
    kiln__cpu_threads_init();
    return &cpu;
}
