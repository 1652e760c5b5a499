/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/ops_reduce.h: reduce, reduce_window, select_and_scatter, and numpy-style reductions.
 * Part of kiln/ops.h (read its overview first); include that header, not this one.
 *
 *     // the sum of each row, and the index of each row's maximum
 *     kiln_tensor *s = kiln_sum(cx, x, KILN_DIMS(-1), false);
 *     kiln_tensor *i = kiln_argmax(cx, x, -1, false);
 *     // StableHLO reduce with a builtin region (no callback per element)
 *     kiln_tensor *init = kiln_scalar_like(cx, x, 0), *out;
 *     kiln_reduce(cx, &x, &init, 1, KILN_DIMS(0), kiln_region_add(), &out);
 *
 * Semantics are StableHLO's. The builtin regions (kiln_region_add(), multiply, maximum,
 * minimum, and, or) run without calling back; on i1 add is or and multiply is and;
 * maximum/minimum propagate NaN and order -0 < +0. The spec leaves the order of a
 * reduction to the implementation; kiln's:
 *  - builtin regions (reduce): the init value is combined once with the reduction of the
 *    elements. Float sums are pairwise (as numpy's: error growing with log n, not n, also
 *    over outer axes); f16 and bf16 are reduced in f32 and rounded once at the end.
 *    reduce_window folds each window in row-major order from the init value (f16/bf16 in
 *    f32, rounded once).
 *  - any other region (and every variadic reduce) is called once per element on rank-0
 *    tensors, folding each result element's inputs in row-major order from the init
 *    value: acc = region(acc, x). It must return rank-0 tensors of the inputs' dtypes
 *    (INVALID_ARGUMENT otherwise).
 * All functions here are thread-safe for distinct ctxs; results belong to the innermost
 * scope; errors are INVALID_ARGUMENT with a message naming the builder and argument, or
 * RESOURCE_EXHAUSTED, or what a region reported.
 */
#ifndef KILN_OPS_REDUCE_H
#define KILN_OPS_REDUCE_H

#include "kiln/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reduces n >= 1 inputs of one shape over `dims` (distinct, in 0..rank-1; count 0 reduces
 * nothing, which still applies the region once per element) with `region` (2n rank-0 args:
 * the accumulators then the input elements; n results), starting from the rank-0 `inits`
 * (one per input, of its dtype). Results (the input shape without dims, the inputs'
 * dtypes) go to out[0..n-1]; on error they are all NULL and the status is returned. An
 * empty reduction gives the init values. */
KILN_API kiln_status kiln_reduce(kiln_ctx *cx, kiln_tensor *const *inputs,
                                 kiln_tensor *const *inits, int32_t n, kiln_dims dims,
                                 const kiln_region *region, kiln_tensor **out);

/* Window geometry for reduce_window and select_and_scatter. Lists of count 0 take their
 * defaults: strides and dilations 1, padding 0. */
typedef struct kiln_window_params {
    kiln_dims window_dimensions;
    kiln_dims window_strides;
    kiln_dims base_dilations;
    kiln_dims window_dilations;
    kiln_dims padding_low;
    kiln_dims padding_high;
} kiln_window_params;

/* Reduces each window of the inputs, as reduce does, per the spec: the inputs are padded
 * with their init values (padding_low/high before and after each dimension, may be
 * negative to crop; base_dilations - 1 between elements), and result[i] reduces the
 * window starting at i * window_strides of window_dimensions elements window_dilations
 * apart, starting from the init value (padding elements take part as init values). The
 * result shape per dimension is floor((padded - dilated_window) / stride) + 1, or 0 when
 * the dilated window does not fit. window_dimensions, strides and dilations must be >= 1
 * and have one entry per dimension. */
KILN_API kiln_status kiln_reduce_window(kiln_ctx *cx, kiln_tensor *const *inputs,
                                        kiln_tensor *const *inits, int32_t n,
                                        const kiln_window_params *params, const kiln_region *region,
                                        kiln_tensor **out);

/* For each window of `operand` (window_dimensions, window_strides, padding_low/high; source
 * has one element per window), `select` (2 rank-0 args of operand's dtype, i1 result)
 * picks an element: the window's operand elements (padding holds none) are visited in
 * row-major order, and the selected one is replaced by the current one whenever
 * select(selected, current) is false, so kiln_region_greater_equal() picks the first
 * maximum. Then result[selected] = scatter(result[selected], source element), visiting the
 * source in row-major order; the result (operand's shape and dtype) starts as `init`
 * (rank 0) everywhere. A window without operand elements scatters nothing. Base and window
 * dilations must be 1 (or left empty). The builtin comparisons and combining regions
 * (and kiln_region_replace()) run without calling back; with a builtin scatter, f16 and
 * bf16 results accumulate in f32 and are rounded once. */
KILN_API kiln_tensor *kiln_select_and_scatter(kiln_ctx *cx, kiln_tensor *operand,
                                              kiln_tensor *source, kiln_tensor *init,
                                              const kiln_window_params *params,
                                              const kiln_region *select,
                                              const kiln_region *scatter);

/* ---- numpy conveniences: over `axes` (negative from the end; count 0: all axes) ---------
 * keepdims keeps the reduced axes with size 1. The result has x's dtype, except sum and
 * prod of bool (i64: numpy counts). Unlike numpy, integer sums and products do not widen
 * to 64 bits: they wrap in x's dtype. max, min, argmax and argmin of an empty axis are
 * errors (numpy's "zero-size array") unless the result is empty too; the sum of an empty
 * axis is 0 and the product 1. */

KILN_API kiln_tensor *kiln_sum(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims);
/* Floats only (an integer or bool x is INVALID_ARGUMENT: convert it first); f16 and bf16
 * are summed and divided in f32. The mean of an empty axis is NaN. */
KILN_API kiln_tensor *kiln_mean(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims);
KILN_API kiln_tensor *kiln_prod(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims);
KILN_API kiln_tensor *kiln_max(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims);
KILN_API kiln_tensor *kiln_min(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims);
/* Index (i64) of the first maximum / minimum along one axis; NaN counts as the extreme
 * (the first NaN wins), and -0 ties +0. A variadic reduce over (x, iota) with an internal
 * region that the evaluator runs without calling back. x needs rank >= 1. */
KILN_API kiln_tensor *kiln_argmax(kiln_ctx *cx, kiln_tensor *x, int64_t axis, bool keepdims);
KILN_API kiln_tensor *kiln_argmin(kiln_ctx *cx, kiln_tensor *x, int64_t axis, bool keepdims);
/* Numerically stable (the maximum is subtracted first; rows whose maximum is not finite
 * subtract 0); floats only; f16 and bf16 are computed in f32 and rounded at the end.
 * softmax and log_softmax work along one axis and keep x's shape. */
KILN_API kiln_tensor *kiln_logsumexp(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims);
KILN_API kiln_tensor *kiln_softmax(kiln_ctx *cx, kiln_tensor *x, int64_t axis);
KILN_API kiln_tensor *kiln_log_softmax(kiln_ctx *cx, kiln_tensor *x, int64_t axis);

#ifdef __cplusplus
}
#endif

#endif
