/* SPDX-License-Identifier: Apache-2.0 */
/* CPU kernels of the dynamic-shape ops (ops/dynamic.h): each reads its shape operands,
 * makes its static form and runs that form's kernel on the data operands, into the
 * result that was made with the declared type; and get_dimension_size. */
#include "backends/cpu/eval/eval.h"
#include "ops/dynamic.h"

static kiln_status run_static_form(kiln_ctx *cx, kiln_op kind, const kiln__attrs *attrs,
                                   kiln_tensor *const *operands, int n_operands,
                                   kiln_tensor **results, int n_results) {
    int32_t data = kiln__dynamic_data_operands(kind);
    if (data < 0 || n_operands <= data || n_operands > data + 3 || n_results != 1)
        return kiln_ctx_set_error(cx, KILN_INTERNAL, "cpu: stablehlo.%s with %d operands",
                                  kiln__op_get_info(kind)->name, n_operands);
    kiln__type types[5];
    int64_t values[3][2 * KILN_MAX_RANK];
    const int64_t *rows[3];
    for (int i = 0; i < n_operands; i++) {
        types[i] = (kiln__type){.dtype = kiln_tensor_dtype(operands[i]), .shape = *kiln_tensor_shape(operands[i])};
        if (i < data) continue;
        rows[i - data] = values[i - data];
        if (!kiln__dynamic_values(operands[i], values[i - data], 2 * KILN_MAX_RANK))
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "stablehlo.%s: operand %d is not a small integer tensor",
                                      kiln__op_get_info(kind)->name, i + 1);
    }
    kiln__type result = {.dtype = kiln_tensor_dtype(results[0]), .shape = *kiln_tensor_shape(results[0])};
    kiln__static_form f;
    kiln_status s =
        kiln__dynamic_static_form(cx, kind, attrs, types, n_operands, &result, rows, &f);
    if (s != KILN_OK) return s;
    /* the static kernel itself (the table in kernels.c names this file's) */
    switch (f.kind) {
    case KILN_OP_IOTA: return kiln__eval_IOTA(cx, &f.attrs, operands, 0, results, 1);
    case KILN_OP_BROADCAST_IN_DIM:
        return kiln__eval_BROADCAST_IN_DIM(cx, &f.attrs, operands, 1, results, 1);
    case KILN_OP_RESHAPE: return kiln__eval_RESHAPE(cx, &f.attrs, operands, 1, results, 1);
    case KILN_OP_PAD: return kiln__eval_PAD(cx, &f.attrs, operands, 2, results, 1);
    case KILN_OP_GATHER: return kiln__eval_GATHER(cx, &f.attrs, operands, 2, results, 1);
    case KILN_OP_CONVOLUTION: return kiln__eval_CONVOLUTION(cx, &f.attrs, operands, 2, results, 1);
    default:
        return kiln_ctx_set_error(cx, KILN_INTERNAL, "cpu: stablehlo.%s has no static form",
                                  kiln__op_get_info(kind)->name);
    }
}

KILN__EVAL(DYNAMIC_IOTA) {
    return run_static_form(cx, KILN_OP_DYNAMIC_IOTA, attrs, operands, n_operands, results,
                           n_results);
}
KILN__EVAL(DYNAMIC_BROADCAST_IN_DIM) {
    return run_static_form(cx, KILN_OP_DYNAMIC_BROADCAST_IN_DIM, attrs, operands, n_operands,
                           results, n_results);
}
KILN__EVAL(DYNAMIC_RESHAPE) {
    return run_static_form(cx, KILN_OP_DYNAMIC_RESHAPE, attrs, operands, n_operands, results,
                           n_results);
}
KILN__EVAL(DYNAMIC_PAD) {
    return run_static_form(cx, KILN_OP_DYNAMIC_PAD, attrs, operands, n_operands, results,
                           n_results);
}
KILN__EVAL(DYNAMIC_GATHER) {
    return run_static_form(cx, KILN_OP_DYNAMIC_GATHER, attrs, operands, n_operands, results,
                           n_results);
}
KILN__EVAL(DYNAMIC_CONV) {
    return run_static_form(cx, KILN_OP_DYNAMIC_CONV, attrs, operands, n_operands, results,
                           n_results);
}

KILN__EVAL(GET_DIMENSION_SIZE) {
    (void)n_operands, (void)n_results;
    const kiln_shape *shape = kiln_tensor_shape(operands[0]);
    int64_t d = attrs->u.dimension;
    if (d < 0 || d >= shape->rank || shape->dims[d] > INT32_MAX)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "stablehlo.get_dimension_size: dimension %lld of a rank-%d "
                                  "operand does not fit a tensor<i32>",
                                  (long long)d, (int)shape->rank);
    *(int32_t *)kiln__out(results[0]) = (int32_t)shape->dims[d];
    return KILN_OK;
}
