/* kiln/ops_movement.h: data movement: broadcast, reshape, transpose, reverse, slices, pad,
 * concatenate, and numpy-style shape conveniences.
 * Part of kiln/ops.h (read its overview first); include that header, not this one.
 * Negative dimension numbers are errors in the StableHLO builders; the conveniences at the
 * end accept numpy's negative axes (counted from the end).
 */
#ifndef KILN_OPS_MOVEMENT_H
#define KILN_OPS_MOVEMENT_H

#include "kiln/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* StableHLO broadcast_in_dim: x's dimension i becomes dimension dims.v[i] of `shape`
 * (dims strictly a map into 0..rank-1, one per dimension of x; each x dimension is 1 or
 * equal to the target's). */
KILN_API kiln_tensor *kiln_broadcast_in_dim(kiln_ctx *cx, kiln_tensor *x, kiln_shape shape,
                                            kiln_dims dims);

/* numpy broadcast_to: x's trailing dimensions aligned with shape's. */
KILN_API kiln_tensor *kiln_broadcast_to(kiln_ctx *cx, kiln_tensor *x, kiln_shape shape);

/* Same elements in row-major order, new shape (same element count). One dimension may be
 * -1 (inferred), as in numpy. */
KILN_API kiln_tensor *kiln_reshape(kiln_ctx *cx, kiln_tensor *x, kiln_shape shape);

/* result dimension i is x's dimension perm.v[i]; perm is a permutation of 0..rank-1. */
KILN_API kiln_tensor *kiln_transpose(kiln_ctx *cx, kiln_tensor *x, kiln_dims perm);

/* Reverses the order of elements along each dimension in dims (distinct). */
KILN_API kiln_tensor *kiln_reverse(kiln_ctx *cx, kiln_tensor *x, kiln_dims dims);

/* x[start:limit:strides] per dimension; 0 <= start <= limit <= dim; strides > 0, and a
 * stride of 0 (or strides.count 0) means 1. */
KILN_API kiln_tensor *kiln_slice(kiln_ctx *cx, kiln_tensor *x, kiln_dims start, kiln_dims limit,
                                 kiln_dims strides);

/* A slice of `sizes` starting at the run-time indices `starts[0..rank-1]` (rank-0 integer
 * tensors of one dtype), each clamped to [0, dim - size]. */
KILN_API kiln_tensor *kiln_dynamic_slice(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *const *starts,
                                         kiln_dims sizes);

/* x with `update` written at `starts` (clamped as in dynamic_slice). */
KILN_API kiln_tensor *kiln_dynamic_update_slice(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *update,
                                                kiln_tensor *const *starts);

/* Pads with the rank-0 `value`: `low` and `high` per dimension (negative values cut),
 * `interior` (>= 0) between elements. Count 0 lists mean all zeros. */
KILN_API kiln_tensor *kiln_pad(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *value, kiln_dims low,
                               kiln_dims high, kiln_dims interior);

/* Joins n >= 1 tensors of one dtype along `dim`; the other dimensions must match. */
KILN_API kiln_tensor *kiln_concatenate(kiln_ctx *cx, kiln_tensor *const *xs, int32_t n,
                                       int64_t dim);

/* ---- numpy conveniences (negative axes count from the end) ----------------------------- */

/* Inserts a size-1 dimension at `axis` (-rank-1 <= axis <= rank). */
KILN_API kiln_tensor *kiln_expand_dims(kiln_ctx *cx, kiln_tensor *x, int64_t axis);
/* Removes the listed size-1 dimensions; all of them when axes.count is 0. */
KILN_API kiln_tensor *kiln_squeeze(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes);
/* concatenate with a numpy axis. */
KILN_API kiln_tensor *kiln_concat(kiln_ctx *cx, kiln_tensor *const *xs, int32_t n, int64_t axis);
/* Stacks n tensors of one shape along a new axis. */
KILN_API kiln_tensor *kiln_stack(kiln_ctx *cx, kiln_tensor *const *xs, int32_t n, int64_t axis);

#ifdef __cplusplus
}
#endif

#endif
