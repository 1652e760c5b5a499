/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/ops_movement.h: data movement: broadcast, reshape, transpose, reverse, slices, pad,
 * concatenate, and numpy-style shape conveniences.
 * Part of kiln/ops.h (read its overview first); include that header, not this one.
 *
 * Every op here takes tensors of any dtype and returns a new tensor of the same dtype
 * (owned by the innermost scope) whose elements are exact copies of the operand's (or of a
 * padding value): bit patterns, NaN payloads and -0 included. Negative dimension numbers
 * are errors in the StableHLO builders; the conveniences at the end accept numpy's
 * negative axes (counted from the end). Errors are INVALID_ARGUMENT with a message naming
 * the builder and the operand or list at fault, or RESOURCE_EXHAUSTED.
 *
 *     kiln_tensor *t = kiln_transpose(cx, x, KILN_DIMS(1, 0));            // x.T
 *     kiln_tensor *r = kiln_slice(cx, x, KILN_DIMS(0, 1), KILN_DIMS(2, 3), KILN_DIMS_NONE);
 *     kiln_tensor *v = kiln_reshape(cx, x, KILN_SHAPE(-1));               // flatten
 */
#ifndef KILN_OPS_MOVEMENT_H
#define KILN_OPS_MOVEMENT_H

#include "kiln/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* StableHLO broadcast_in_dim: x's dimension i becomes dimension dims.v[i] of `shape`
 * (dims: one entry per dimension of x, distinct, in 0..rank(shape)-1, in any order; each x
 * dimension is 1 or equal to the target's). Target dimensions not in dims repeat x. */
KILN_API kiln_tensor *kiln_broadcast_in_dim(kiln_ctx *cx, kiln_tensor *x, kiln_shape shape,
                                            kiln_dims dims);

/* numpy broadcast_to: x's trailing dimensions aligned with shape's (each 1 or equal);
 * x may not have a higher rank than shape. */
KILN_API kiln_tensor *kiln_broadcast_to(kiln_ctx *cx, kiln_tensor *x, kiln_shape shape);

/* Same elements in row-major order, new shape (same element count). One dimension may be
 * -1 (inferred), as in numpy; it is an error when the other sizes multiply to 0 or do not
 * divide the element count. */
KILN_API kiln_tensor *kiln_reshape(kiln_ctx *cx, kiln_tensor *x, kiln_shape shape);

/* result dimension i is x's dimension perm.v[i]; perm is a permutation of 0..rank-1. */
KILN_API kiln_tensor *kiln_transpose(kiln_ctx *cx, kiln_tensor *x, kiln_dims perm);

/* Reverses the order of elements along each dimension in dims (distinct). */
KILN_API kiln_tensor *kiln_reverse(kiln_ctx *cx, kiln_tensor *x, kiln_dims dims);

/* x[start:limit:strides] per dimension; 0 <= start <= limit <= dim; strides > 0, and a
 * stride of 0 (or strides.count 0) means 1. */
KILN_API kiln_tensor *kiln_slice(kiln_ctx *cx, kiln_tensor *x, kiln_dims start, kiln_dims limit,
                                 kiln_dims strides);

/* A slice of `sizes` (0 <= size <= dim) starting at the run-time indices
 * `starts[0..rank-1]` (rank-0 tensors of one integer dtype, signed or unsigned; bool and
 * floats are errors), each clamped to [0, dim - size] as StableHLO does, so the slice is
 * always in bounds. starts may be NULL for a rank-0 x. */
KILN_API kiln_tensor *kiln_dynamic_slice(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *const *starts,
                                         kiln_dims sizes);

/* x with `update` (x's dtype and rank, no dimension larger than x's) written at `starts`
 * (clamped to [0, dim - update dim] as in dynamic_slice). x is not modified. */
KILN_API kiln_tensor *kiln_dynamic_update_slice(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *update,
                                                kiln_tensor *const *starts);

/* Pads with the rank-0 `value` (x's dtype): `low` and `high` per dimension (negative
 * values cut, also into interior padding), `interior` (>= 0) between elements. Result
 * dimension d: low + dim + max(dim - 1, 0) * interior + high, which must be >= 0. Count 0
 * lists mean all zeros. */
KILN_API kiln_tensor *kiln_pad(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *value, kiln_dims low,
                               kiln_dims high, kiln_dims interior);

/* Joins n >= 1 tensors of one dtype and rank (>= 1) along `dim`; the other dimensions must
 * match. Inputs of size 0 along dim are allowed. */
KILN_API kiln_tensor *kiln_concatenate(kiln_ctx *cx, kiln_tensor *const *xs, int32_t n,
                                       int64_t dim);

/* ---- numpy conveniences (negative axes count from the end) ----------------------------- */

/* Inserts a size-1 dimension at `axis` (-rank-1 <= axis <= rank). */
KILN_API kiln_tensor *kiln_expand_dims(kiln_ctx *cx, kiln_tensor *x, int64_t axis);
/* Removes the listed size-1 dimensions (listing a larger one is an error); all size-1
 * dimensions when axes.count is 0. */
KILN_API kiln_tensor *kiln_squeeze(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes);
/* concatenate with a numpy axis. */
KILN_API kiln_tensor *kiln_concat(kiln_ctx *cx, kiln_tensor *const *xs, int32_t n, int64_t axis);
/* Stacks n >= 1 tensors of one dtype and shape along a new axis
 * (-rank-1 <= axis <= rank). */
KILN_API kiln_tensor *kiln_stack(kiln_ctx *cx, kiln_tensor *const *xs, int32_t n, int64_t axis);

#ifdef __cplusplus
}
#endif

#endif
