/* kiln/ops_reduce.h: reduce, reduce_window, select_and_scatter, and numpy-style reductions.
 * Part of kiln/ops.h (read its overview first); include that header, not this one.
 */
#ifndef KILN_OPS_REDUCE_H
#define KILN_OPS_REDUCE_H

#include "kiln/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reduces n >= 1 inputs of one shape over `dims` (distinct) with `region` (2n rank-0 args:
 * the accumulators then the input elements; n results), starting from the rank-0 `inits`.
 * Results (the input shape without dims) go to out[0..n-1]. */
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

/* Reduces each window of the (padded, dilated) inputs, as reduce does. */
KILN_API kiln_status kiln_reduce_window(kiln_ctx *cx, kiln_tensor *const *inputs,
                                        kiln_tensor *const *inits, int32_t n,
                                        const kiln_window_params *params, const kiln_region *region,
                                        kiln_tensor **out);

/* For each window of `operand`, `select` (2 rank-0 args, i1 result) picks an element; the
 * matching element of `source` is combined with `scatter` into a result that starts as
 * `init` (rank 0). Window dilations must be 1. */
KILN_API kiln_tensor *kiln_select_and_scatter(kiln_ctx *cx, kiln_tensor *operand,
                                              kiln_tensor *source, kiln_tensor *init,
                                              const kiln_window_params *params,
                                              const kiln_region *select,
                                              const kiln_region *scatter);

/* ---- numpy conveniences: over `axes` (negative from the end; count 0: all axes) --------- */

KILN_API kiln_tensor *kiln_sum(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims);
KILN_API kiln_tensor *kiln_mean(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims);
KILN_API kiln_tensor *kiln_prod(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims);
KILN_API kiln_tensor *kiln_max(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims);
KILN_API kiln_tensor *kiln_min(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims);
/* Index (i64) of the first maximum / minimum along one axis; NaN counts as the extreme. */
KILN_API kiln_tensor *kiln_argmax(kiln_ctx *cx, kiln_tensor *x, int64_t axis, bool keepdims);
KILN_API kiln_tensor *kiln_argmin(kiln_ctx *cx, kiln_tensor *x, int64_t axis, bool keepdims);
/* Numerically stable (the maximum is subtracted first); floats only. */
KILN_API kiln_tensor *kiln_logsumexp(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims);
KILN_API kiln_tensor *kiln_softmax(kiln_ctx *cx, kiln_tensor *x, int64_t axis);
KILN_API kiln_tensor *kiln_log_softmax(kiln_ctx *cx, kiln_tensor *x, int64_t axis);

#ifdef __cplusplus
}
#endif

#endif
