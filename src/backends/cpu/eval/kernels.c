/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU evaluator's kernel table, generated from ops.def, and the compile-time
 * preparation of kernels: what the CPU backend's table, its compiled engine and the
 * interpreter backend call to run or prepare one op. */
#include "backends/cpu/eval/eval.h"
#include "backends/cpu/eval/eval_elementwise.h"
#include "backends/cpu/eval/eval_linalg.h"
#include "backends/cpu/lib/vec_prims.h"

static const kiln__eval_fn table[] = {
#define KILN_OP(name, text, nin, nout, flags) kiln__eval_##name,
#include "ops/ops.def"
#undef KILN_OP
};
_Static_assert(sizeof table / sizeof table[0] == KILN_OP_COUNT, "one kernel per op");

/* The dynamic-shape ops whose static forms move elements (ops/dynamic.h), and
 * get_dimension_size, which reads its operand's shape alone: every element type. */
static bool runs_on_narrow_and_complex(kiln_op op) {
    switch (op) {
    case KILN_OP_DYNAMIC_IOTA:
    case KILN_OP_DYNAMIC_BROADCAST_IN_DIM:
    case KILN_OP_DYNAMIC_RESHAPE:
    case KILN_OP_DYNAMIC_PAD:
    case KILN_OP_DYNAMIC_GATHER:
    case KILN_OP_GET_DIMENSION_SIZE:
    case KILN_OP_CUSTOM_CALL: /* the registered function's business (kiln/custom_call.h) */
        return true;
    default: return false;
    }
}

/* The ops with complex kernels: those that move elements or bytes (the movement ops without
 * regions; control flow), the elementwise ones with a complex kernel
 * (eval_elementwise_complex.c), and the others written for complex. */
static bool runs_on_complex(kiln_op op) {
    if (kiln__op_has(op, KILN_OPF_CONTROL)) return true;
    if (kiln__op_has(op, KILN_OPF_MOVEMENT)) return !kiln__op_has(op, KILN_OPF_REGIONS);
    if (kiln__ew_complex_runs(op)) return true;
    switch (op) {
    case KILN_OP_REAL:
    case KILN_OP_IMAG:
    case KILN_OP_COMPLEX:
    case KILN_OP_DOT_GENERAL: /* in the compute representation of eval_linalg.h */
    case KILN_OP_CONVOLUTION:
    case KILN_OP_FFT:
    case KILN_OP_TRIANGULAR_SOLVE:
    case KILN_OP_CHOLESKY:
    case KILN_OP_COMPARE:
    case KILN_OP_CONVERT:
    case KILN_OP_REDUCE: /* through its region: the builtin kinds have no complex fast path */
    case KILN_OP_SELECT:
    case KILN_OP_CONSTANT:
    case KILN_OP_IOTA:
    case KILN_OP_DYNAMIC_CONV: /* convolution's */
    case KILN_OP_OPTIMIZATION_BARRIER: return true;
    default: return runs_on_narrow_and_complex(op);
    }
}

/* The ops with kernels for the narrow types (ops/widen.h: the others compute in the widened
 * types, between converts): those that move elements or bytes, the conversions, iota, random
 * bits, the four that read a sub-byte integer's bits (popcnt, clz, the right shifts), and
 * reduce_precision, which rounds a small float's own bits. */
static bool runs_on_narrow(kiln_op op) {
    if (kiln__op_has(op, KILN_OPF_CONTROL)) return true;
    if (kiln__op_has(op, KILN_OPF_MOVEMENT)) return !kiln__op_has(op, KILN_OPF_REGIONS);
    switch (op) {
    case KILN_OP_CONVERT:
    case KILN_OP_SELECT:
    case KILN_OP_CONSTANT:
    case KILN_OP_IOTA:
    case KILN_OP_RNG_BIT_GENERATOR:
    case KILN_OP_POPCNT:
    case KILN_OP_COUNT_LEADING_ZEROS:
    case KILN_OP_SHIFT_RIGHT_LOGICAL:
    case KILN_OP_SHIFT_RIGHT_ARITHMETIC:
    case KILN_OP_REDUCE_PRECISION:
    case KILN_OP_OPTIMIZATION_BARRIER: return true;
    default: return runs_on_narrow_and_complex(op);
    }
}

bool kiln__cpu_supports_op(kiln_op op, kiln_dtype dtype) {
    if ((int)op < 0 || op >= KILN_OP_COUNT) return false;
    if (op == KILN_OP_TUPLE || op == KILN_OP_GET_TUPLE_ELEMENT) return false; /* no run-time form */
    if (kiln_dtype_is_complex(dtype)) return runs_on_complex(op);
    if (kiln_dtype_is_narrow(dtype)) return runs_on_narrow(op);
    return true; /* KILN_DTYPE_COUNT: the kind, yes */
}

/* UNIMPLEMENTED naming the op and the first of its tensors' dtypes the CPU does not run it
 * on, or KILN_OK. */
static kiln_status check_dtypes(kiln_ctx *cx, kiln_op op, kiln_tensor *const *operands,
                                int n_operands, kiln_tensor **results, int n_results) {
    if ((int)op < 0 || op >= KILN_OP_COUNT) return KILN_OK; /* kiln__cpu_eval_op says it */
    for (int i = 0; i < n_operands + n_results; i++) {
        const kiln_tensor *t = i < n_operands ? operands[i] : results[i - n_operands];
        kiln_dtype d = kiln_tensor_dtype(t);
        if (t && !kiln__cpu_supports_op(op, d))
            return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                      "cpu: stablehlo.%s on %s is not implemented",
                                      kiln__op_get_info(op)->name, kiln_dtype_name(d));
    }
    return KILN_OK;
}

kiln_status kiln__cpu_eval_op(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                              kiln_tensor *const *operands, int n_operands, kiln_tensor **results,
                              int n_results) {
    if ((int)op < 0 || op >= KILN_OP_COUNT)
        return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED, "cpu: op %d is not supported", (int)op);
    /* The f32/f64 transcendentals run the fused engine's primitive over the whole array:
     * the code the compiled tiles run (AVX-512 forms where the engine takes them), in
     * place too (kiln_move). */
    kiln__vec_prim_fn prim = n_operands == 1 && n_results == 1 &&
                                     kiln_tensor_dtype(operands[0]) == kiln_tensor_dtype(results[0])
                                 ? kiln__vec_transcendental(op, kiln_tensor_dtype(results[0]))
                                 : NULL;
    if (prim) {
        int64_t n = kiln_tensor_numel(results[0]);
        if (n > 0) prim(kiln__out(results[0]), kiln__in(operands[0]), NULL, NULL, n);
        return KILN_OK;
    }
    return table[op](cx, attrs, operands, n_operands, results, n_results);
}

kiln_status kiln__cpu_eager_op(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                               kiln_tensor *const *operands, int n_operands, kiln_tensor **results,
                               int n_results) {
    kiln_status s = check_dtypes(cx, op, operands, n_operands, results, n_results);
    if (s != KILN_OK) return s;
    return kiln__cpu_eval_op(cx, op, attrs, operands, n_operands, results, n_results);
}

/* Library primitives are built at compile time, so the first call runs at full speed. */
kiln_status kiln__cpu_prepare_op(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                                 const kiln__type *operands, int n_operands,
                                 const kiln__type *results, int n_results) {
    /* A third operand is the bias of a fused epilogue (kiln__cpu_conv_bias_act). */
    if (op == KILN_OP_CONVOLUTION && (n_operands == 2 || n_operands == 3) && n_results == 1)
        return kiln__dnnl_conv_prepare(cx, attrs, &operands[0], &operands[1], &results[0],
                                       n_operands == 3);
    return KILN_OK;
}
