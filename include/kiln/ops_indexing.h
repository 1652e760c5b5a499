/* kiln/ops_indexing.h: gather, scatter, sort, and the numpy conveniences take and one_hot.
 * Part of kiln/ops.h (read its overview first); include that header, not this one.
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

/* Slices of `operand` at the positions in the integer tensor `indices`; start indices are
 * clamped so every slice is in bounds. */
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

/* Combines `updates[i]` into copies of `inputs[i]` (n >= 1 of each, one shape across the
 * inputs and one across the updates) at the positions in `indices`, with `region` (2n
 * rank-0 args: the current values then the update values; n results). Updates whose
 * window falls out of bounds are skipped. Results go to out[0..n-1]. Returns the status. */
KILN_API kiln_status kiln_scatter(kiln_ctx *cx, kiln_tensor *const *inputs, int32_t n,
                                  kiln_tensor *indices, kiln_tensor *const *updates,
                                  const kiln_scatter_params *params, const kiln_region *region,
                                  kiln_tensor **out);

/* Sorts n >= 1 tensors of one shape together along `dim`, ordered by `comparator` (2n
 * rank-0 args: element a of each input then element b of each; one i1 result, true when a
 * goes before b). Stable when `stable` is true. Results go to out[0..n-1]. */
KILN_API kiln_status kiln_sort(kiln_ctx *cx, kiln_tensor *const *inputs, int32_t n, int64_t dim,
                               bool stable, const kiln_region *comparator, kiln_tensor **out);

/* ---- numpy conveniences ---------------------------------------------------------------- */

/* numpy.take(x, indices, axis): indices (integer tensor, any shape) select along axis;
 * out-of-range indices are clamped (as gather does). */
KILN_API kiln_tensor *kiln_take(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *indices, int64_t axis);

/* One-hot encoding: result shape indices.shape + [depth], 1 where the index matches and 0
 * elsewhere (out-of-range indices give all zeros), of `dtype`. */
KILN_API kiln_tensor *kiln_one_hot(kiln_ctx *cx, kiln_tensor *indices, int64_t depth,
                                   kiln_dtype dtype);

#ifdef __cplusplus
}
#endif

#endif
