/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/ops_indexing.h: gather, scatter, sort, and the numpy conveniences take and one_hot.
 * Part of kiln/ops.h (read its overview first); include that header, not this one.
 *
 *     // rows 2, 0 and 2 of a [4,3] table (numpy: table[[2, 0, 2]])
 *     kiln_tensor *rows = kiln_take(cx, table, idx, 0);
 *     // sort each row of x ascending, carrying y along (values sorted by keys)
 *     kiln_tensor *sorted[2];
 *     kiln_sort(cx, (kiln_tensor *[]){x, y}, 2, -1, true, kiln_region_less(), sorted);
 *     // counts[i] += 1 for each i in idx (duplicates accumulate, in order)
 *     kiln_scatter_params sp = {.inserted_window_dims = KILN_DIMS(0),
 *                               .scatter_dims_to_operand_dims = KILN_DIMS(0),
 *                               .index_vector_dim = 1};
 *     kiln_tensor *total;
 *     kiln_scatter(cx, &counts, 1, idx, &ones, &sp, kiln_region_add(), &total);
 *
 * Index tensors may have any integer dtype (not i1). Builders follow kiln/ops.h: errors
 * are INVALID_ARGUMENT naming the builder and the operand or attribute, results belong to
 * the innermost scope; the status-returning ones set out[0..n-1] to NULL on error.
 */
#ifndef KILN_OPS_INDEXING_H
#define KILN_OPS_INDEXING_H

#include "kiln/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* StableHLO gather's dimension numbers and slice sizes (see the spec's gather). */
typedef struct kiln_gather_params {
    kiln_dims offset_dims;
    kiln_dims collapsed_slice_dims;
    kiln_dims operand_batching_dims;
    kiln_dims start_indices_batching_dims;
    kiln_dims start_index_map;
    int64_t index_vector_dim;
    kiln_dims slice_sizes;
    bool indices_are_sorted;
} kiln_gather_params;

/* StableHLO gather: slices of `operand` at the positions in the integer tensor `indices`;
 * start indices are clamped so every slice is in bounds. index_vector_dim ==
 * rank(indices) means each index is a single number (an implicit trailing 1). The
 * constraints are the spec's (C1-C23); in addition a collapsed or batching dimension of
 * slice size 0 is rejected unless the result is empty (the spec leaves it undefined). */
KILN_API kiln_tensor *kiln_gather(kiln_ctx *cx, kiln_tensor *operand, kiln_tensor *indices,
                                  const kiln_gather_params *params);

/* StableHLO scatter's dimension numbers (see the spec's scatter). */
typedef struct kiln_scatter_params {
    kiln_dims update_window_dims;
    kiln_dims inserted_window_dims;
    kiln_dims input_batching_dims;
    kiln_dims scatter_indices_batching_dims;
    kiln_dims scatter_dims_to_operand_dims;
    int64_t index_vector_dim;
    bool indices_are_sorted;
    bool unique_indices;
} kiln_scatter_params;

/* StableHLO scatter: combines `updates[i]` into copies of `inputs[i]` (n >= 1 of each, one
 * shape across the inputs and one across the updates; updates[i] has inputs[i]'s dtype)
 * at the positions in `indices`, with `region` (2n rank-0 args: the n current values then
 * the n update values; n rank-0 results of the inputs' dtypes). As the spec says, each
 * update element whose full index falls outside the inputs is skipped (a window that
 * straddles the edge is applied to its in-bounds part). Updates are applied in row-major
 * order of the updates, so repeated indices combine deterministically. The builtin regions
 * (kiln_region_add(), _multiply, _maximum, _minimum, _and, _or, _replace) run without
 * calling back; they combine one input, so n > 1 needs a custom region. Results go to
 * out[0..n-1]. Returns the status; a failing region's error is returned as is. */
KILN_API kiln_status kiln_scatter(kiln_ctx *cx, kiln_tensor *const *inputs, int32_t n,
                                  kiln_tensor *indices, kiln_tensor *const *updates,
                                  const kiln_scatter_params *params, const kiln_region *region,
                                  kiln_tensor **out);

/* StableHLO sort: sorts n >= 1 tensors of one shape (rank >= 1) together along `dim`
 * (negative counts from the end, as the spec allows), ordered by `comparator`: 2n rank-0
 * args in the spec's order, a_0, b_0, a_1, b_1, ... (element a then element b of input 0,
 * then of input 1, ...); one rank-0 i1 result, true when a goes before b. Stable when
 * `stable` is true (kiln's sort is always stable). kiln_region_less() / _greater() sort by
 * input 0 (the others follow) without calling back: SIGNED/UNSIGNED order for integers
 * and i1, FLOAT order for floats (f16/bf16 compared as f32) with -0 equal to +0 and NaN
 * placed deterministically: after everything in an ascending (less) sort, before
 * everything in a descending (greater) one. For IEEE total order, pass a comparator that
 * uses kiln_compare with KILN_CMP_TOTALORDER. Results go to out[0..n-1]. */
KILN_API kiln_status kiln_sort(kiln_ctx *cx, kiln_tensor *const *inputs, int32_t n, int64_t dim,
                               bool stable, const kiln_region *comparator, kiln_tensor **out);

/* ---- numpy conveniences ---------------------------------------------------------------- */

/* numpy.take(x, indices, axis): indices (integer tensor, any shape) select along axis
 * (negative axis counts from the end); result shape x.shape[:axis] + indices.shape +
 * x.shape[axis+1:]. Negative indices count from the end, as in numpy; indices still out
 * of range are clamped (as gather does) instead of raising. From an axis of size 0, empty
 * indices give an empty result and any other indices are INVALID_ARGUMENT (nothing to
 * take), as in numpy. */
KILN_API kiln_tensor *kiln_take(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *indices, int64_t axis);

/* One-hot encoding: result shape indices.shape + [depth], 1 where the index matches and 0
 * elsewhere (out-of-range and negative indices give all zeros, as jax.nn.one_hot), of
 * `dtype`. indices must be an integer tensor of rank < KILN_MAX_RANK; depth >= 0. */
KILN_API kiln_tensor *kiln_one_hot(kiln_ctx *cx, kiln_tensor *indices, int64_t depth,
                                   kiln_dtype dtype);

#ifdef __cplusplus
}
#endif

#endif
