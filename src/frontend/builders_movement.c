/* SPDX-License-Identifier: Apache-2.0 */
/* Builders for the data-movement ops (kiln/ops_movement.h): the StableHLO ops, whose
 * attributes the builders complete (slice strides, pad lists, reshape's -1), and the numpy
 * conveniences, which are expressed through them (so recorded programs stay StableHLO). */
#include <stdio.h>

#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "core/tensor_internal.h"
#include "frontend/op_run.h"

kiln_tensor *kiln_broadcast_in_dim(kiln_ctx *cx, kiln_tensor *x, kiln_shape shape, kiln_dims dims) {
    kiln__attrs a = {.fn = "kiln_broadcast_in_dim"};
    a.u.broadcast.shape = shape;
    a.u.broadcast.dims = dims;
    return kiln__op_run1(cx, KILN_OP_BROADCAST_IN_DIM, &a, &x, 1);
}

kiln_tensor *kiln_broadcast_to(kiln_ctx *cx, kiln_tensor *x, kiln_shape shape) {
    static const char fn[] = "kiln_broadcast_to";
    kiln__attrs a = {.fn = fn};
    a.u.broadcast.shape = shape;
    if (cx && x) {
        int32_t rank = kiln_tensor_rank(x);
        if (shape.rank >= 0 && shape.rank <= KILN_MAX_RANK && rank > shape.rank) {
            char have[KILN__SHAPE_TEXT], want[KILN__SHAPE_TEXT];
            kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "%s: operand 1 has shape %s, of higher rank than shape %s", fn,
                               kiln__shape_text(kiln_tensor_shape(x), have),
                               kiln__shape_text(&shape, want));
            return NULL;
        }
        a.u.broadcast.dims.count = rank;
        for (int32_t d = 0; d < rank; d++)
            a.u.broadcast.dims.v[d] = shape.rank - rank + d;
    }
    return kiln__op_run1(cx, KILN_OP_BROADCAST_IN_DIM, &a, &x, 1);
}

/* Runs reshape to a fully known shape under the name fn. */
static kiln_tensor *reshape_as(kiln_ctx *cx, const char *fn, kiln_tensor *x, kiln_shape shape) {
    kiln__attrs a = {.fn = fn};
    a.u.reshape = shape;
    return kiln__op_run1(cx, KILN_OP_RESHAPE, &a, &x, 1);
}

kiln_tensor *kiln_reshape(kiln_ctx *cx, kiln_tensor *x, kiln_shape shape) {
    static const char fn[] = "kiln_reshape";
    if (!cx) return NULL;
    if (x && shape.rank >= 0 && shape.rank <= KILN_MAX_RANK) {
        /* Resolve one -1 from the element count, as numpy does. */
        int32_t unknown = -1;
        int64_t known = 1;
        bool overflow = false;
        for (int32_t d = 0; d < shape.rank; d++) {
            int64_t v = shape.dims[d];
            if (v == -1) {
                if (unknown >= 0) {
                    kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                       "%s: shape has more than one -1 dimension (%d and %d)", fn,
                                       (int)unknown, (int)d);
                    return NULL;
                }
                unknown = d;
            } else if (v >= 0 && __builtin_mul_overflow(known, v, &known)) {
                overflow = true;
            }
        }
        if (unknown >= 0) {
            int64_t numel = kiln_tensor_numel(x);
            char have[KILN__SHAPE_TEXT], want[KILN__SHAPE_TEXT];
            bool negative = false;
            for (int32_t d = 0; d < shape.rank; d++)
                if (shape.dims[d] < -1) negative = true;
            if (!negative) { /* negative sizes are the inference's error */
                if (overflow || known == 0 || numel % known != 0) {
                    kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                       "%s: cannot reshape operand 1 of shape %s (%lld "
                                       "elements) into shape %s",
                                       fn, kiln__shape_text(kiln_tensor_shape(x), have),
                                       (long long)numel, kiln__shape_text(&shape, want));
                    return NULL;
                }
                shape.dims[unknown] = numel / known;
            }
        }
    }
    return reshape_as(cx, fn, x, shape);
}

kiln_tensor *kiln_transpose(kiln_ctx *cx, kiln_tensor *x, kiln_dims perm) {
    kiln__attrs a = {.fn = "kiln_transpose"};
    a.u.permutation = perm;
    return kiln__op_run1(cx, KILN_OP_TRANSPOSE, &a, &x, 1);
}

kiln_tensor *kiln_reverse(kiln_ctx *cx, kiln_tensor *x, kiln_dims dims) {
    kiln__attrs a = {.fn = "kiln_reverse"};
    a.u.reverse_dims = dims;
    return kiln__op_run1(cx, KILN_OP_REVERSE, &a, &x, 1);
}

kiln_tensor *kiln_slice(kiln_ctx *cx, kiln_tensor *x, kiln_dims start, kiln_dims limit,
                        kiln_dims strides) {
    kiln__attrs a = {.fn = "kiln_slice"};
    if (x && strides.count == 0) {
        strides.count = kiln_tensor_rank(x);
        for (int32_t d = 0; d < strides.count; d++)
            strides.v[d] = 1;
    }
    for (int32_t d = 0; d < strides.count && d < KILN_MAX_RANK; d++)
        if (strides.v[d] == 0) strides.v[d] = 1;
    a.u.slice.start = start;
    a.u.slice.limit = limit;
    a.u.slice.strides = strides;
    return kiln__op_run1(cx, KILN_OP_SLICE, &a, &x, 1);
}

/* Gathers [fixed..., starts[0..rank-1]] into ops; false (with the error recorded) when
 * starts is NULL but needed. Returns the operand count in *n. */
static bool with_starts(kiln_ctx *cx, const char *fn, kiln_tensor **ops, int fixed,
                        kiln_tensor *const *starts, int *n) {
    *n = fixed;
    if (!ops[0]) return true; /* op_run reports the NULL operand */
    int32_t rank = kiln_tensor_rank(ops[0]);
    if (rank > 0 && !starts) {
        kiln__null_argument(cx, fn, "starts");
        return false;
    }
    for (int32_t d = 0; d < rank; d++)
        ops[fixed + d] = starts[d];
    *n = fixed + rank;
    return true;
}

kiln_tensor *kiln_dynamic_slice(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *const *starts,
                                kiln_dims sizes) {
    static const char fn[] = "kiln_dynamic_slice";
    if (!cx) return NULL;
    kiln_tensor *ops[1 + KILN_MAX_RANK] = {x};
    int n;
    if (!with_starts(cx, fn, ops, 1, starts, &n)) return NULL;
    kiln__attrs a = {.fn = fn};
    a.u.slice_sizes = sizes;
    return kiln__op_run1(cx, KILN_OP_DYNAMIC_SLICE, &a, ops, n);
}

kiln_tensor *kiln_dynamic_update_slice(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *update,
                                       kiln_tensor *const *starts) {
    static const char fn[] = "kiln_dynamic_update_slice";
    if (!cx) return NULL;
    kiln_tensor *ops[2 + KILN_MAX_RANK] = {x, update};
    int n;
    if (!with_starts(cx, fn, ops, 2, starts, &n)) return NULL;
    kiln__attrs a = {.fn = fn};
    return kiln__op_run1(cx, KILN_OP_DYNAMIC_UPDATE_SLICE, &a, ops, n);
}

/* A count-0 list becomes rank zeros. */
static kiln_dims zeros_if_empty(kiln_dims d, int32_t rank) {
    if (d.count != 0) return d;
    kiln_dims z = {.count = rank};
    return z;
}

kiln_tensor *kiln_pad(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *value, kiln_dims low,
                      kiln_dims high, kiln_dims interior) {
    kiln__attrs a = {.fn = "kiln_pad"};
    int32_t rank = x ? kiln_tensor_rank(x) : 0;
    a.u.pad.low = zeros_if_empty(low, rank);
    a.u.pad.high = zeros_if_empty(high, rank);
    a.u.pad.interior = zeros_if_empty(interior, rank);
    kiln_tensor *ops[2] = {x, value};
    return kiln__op_run1(cx, KILN_OP_PAD, &a, ops, 2);
}

/* Checks the list of inputs of concatenate-like builders. */
static bool check_list(kiln_ctx *cx, const char *fn, kiln_tensor *const *xs, int32_t n) {
    if (!cx) return false;
    if (n < 1) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: n is %d; expected at least 1", fn,
                           (int)n);
        return false;
    }
    if (!xs) {
        kiln__null_argument(cx, fn, "xs");
        return false;
    }
    return true;
}

static kiln_tensor *concatenate_as(kiln_ctx *cx, const char *fn, kiln_tensor *const *xs, int32_t n,
                                   int64_t dim) {
    kiln__attrs a = {.fn = fn};
    a.u.dimension = dim;
    return kiln__op_run1(cx, KILN_OP_CONCATENATE, &a, xs, n);
}

kiln_tensor *kiln_concatenate(kiln_ctx *cx, kiln_tensor *const *xs, int32_t n, int64_t dim) {
    static const char fn[] = "kiln_concatenate";
    if (!check_list(cx, fn, xs, n)) return NULL;
    return concatenate_as(cx, fn, xs, n, dim);
}

/* ---- numpy conveniences ------------------------------------------------------------ */

/* Resolves a numpy axis against `count` positions (rank, or rank + 1 for a new axis). */
static bool numpy_axis(kiln_ctx *cx, const char *fn, int64_t axis, int64_t count, int64_t *out) {
    if (axis < -count || axis >= count) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: axis %lld is out of range [%lld, %lld]",
                           fn, (long long)axis, (long long)-count, (long long)count - 1);
        return false;
    }
    *out = axis < 0 ? axis + count : axis;
    return true;
}

/* x's shape with a size-1 dimension inserted at (resolved) axis, or false (error recorded)
 * when the rank would exceed KILN_MAX_RANK. */
static bool expanded_shape(kiln_ctx *cx, const char *fn, const kiln_shape *s, int64_t axis,
                           kiln_shape *out) {
    if (s->rank >= KILN_MAX_RANK) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: operand has rank %d; a new axis would exceed %d", fn, (int)s->rank,
                           KILN_MAX_RANK);
        return false;
    }
    out->rank = s->rank + 1;
    for (int32_t d = 0, k = 0; d < out->rank; d++)
        out->dims[d] = d == axis ? 1 : s->dims[k++];
    return true;
}

kiln_tensor *kiln_expand_dims(kiln_ctx *cx, kiln_tensor *x, int64_t axis) {
    static const char fn[] = "kiln_expand_dims";
    if (!cx) return NULL;
    if (!x) return reshape_as(cx, fn, x, (kiln_shape){0}); /* reports the NULL operand */
    const kiln_shape *s = kiln_tensor_shape(x);
    kiln_shape shape;
    if (!numpy_axis(cx, fn, axis, (int64_t)s->rank + 1, &axis) ||
        !expanded_shape(cx, fn, s, axis, &shape))
        return NULL;
    return reshape_as(cx, fn, x, shape);
}

kiln_tensor *kiln_squeeze(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes) {
    static const char fn[] = "kiln_squeeze";
    if (!cx) return NULL;
    if (!x) return reshape_as(cx, fn, x, (kiln_shape){0});
    const kiln_shape *s = kiln_tensor_shape(x);
    bool drop[KILN_MAX_RANK] = {false};
    if (axes.count < 0 || axes.count > KILN_MAX_RANK) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: axes has %d entries; expected 0 to %d",
                           fn, (int)axes.count, KILN_MAX_RANK);
        return NULL;
    }
    if (axes.count == 0)
        for (int32_t d = 0; d < s->rank; d++)
            drop[d] = s->dims[d] == 1;
    for (int32_t i = 0; i < axes.count; i++) {
        int64_t axis;
        if (!numpy_axis(cx, fn, axes.v[i], s->rank, &axis)) return NULL;
        if (drop[axis]) {
            kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: axes repeats axis %lld", fn,
                               (long long)axis);
            return NULL;
        }
        if (s->dims[axis] != 1) {
            kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "%s: axis %lld has size %lld; only size-1 axes can be squeezed", fn,
                               (long long)axis, (long long)s->dims[axis]);
            return NULL;
        }
        drop[axis] = true;
    }
    kiln_shape shape = {.rank = 0};
    for (int32_t d = 0; d < s->rank; d++)
        if (!drop[d]) shape.dims[shape.rank++] = s->dims[d];
    return reshape_as(cx, fn, x, shape);
}

kiln_tensor *kiln_concat(kiln_ctx *cx, kiln_tensor *const *xs, int32_t n, int64_t axis) {
    static const char fn[] = "kiln_concat";
    if (!check_list(cx, fn, xs, n)) return NULL;
    if (xs[0]) {
        int32_t rank = kiln_tensor_rank(xs[0]);
        if (rank > 0 && !numpy_axis(cx, fn, axis, rank, &axis)) return NULL;
    }
    return concatenate_as(cx, fn, xs, n, axis);
}

kiln_tensor *kiln_stack(kiln_ctx *cx, kiln_tensor *const *xs, int32_t n, int64_t axis) {
    static const char fn[] = "kiln_stack";
    if (!check_list(cx, fn, xs, n)) return NULL;
    for (int32_t i = 0; i < n; i++) {
        if (!xs[i]) { /* op_run's message for the first NULL */
            return concatenate_as(cx, fn, xs, n, 0);
        }
    }
    const kiln_shape *s = kiln_tensor_shape(xs[0]);
    for (int32_t i = 1; i < n; i++) {
        if (!kiln_shape_equal(kiln_tensor_shape(xs[i]), s)) {
            char have[KILN__SHAPE_TEXT], want[KILN__SHAPE_TEXT];
            kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "%s: operand %d has shape %s; expected %s, the shape of operand 1",
                               fn, (int)i + 1, kiln__shape_text(kiln_tensor_shape(xs[i]), have),
                               kiln__shape_text(s, want));
            return NULL;
        }
    }
    kiln_shape shape;
    if (!numpy_axis(cx, fn, axis, (int64_t)s->rank + 1, &axis) ||
        !expanded_shape(cx, fn, s, axis, &shape))
        return NULL;
    /* The expanded inputs are temporaries: released (freed early) once joined. */
    kiln_tensor *fixed[8], **parts = fixed;
    size_t bytes = (size_t)n * sizeof *parts;
    if (n > 8 && !(parts = kiln__alloc(cx, bytes, _Alignof(kiln_tensor *), fn))) return NULL;
    int32_t made = 0;
    kiln_tensor *r = NULL;
    for (; made < n; made++)
        if (!(parts[made] = reshape_as(cx, fn, xs[made], shape))) break;
    if (made == n) r = concatenate_as(cx, fn, parts, n, axis);
    for (int32_t i = 0; i < made; i++)
        kiln__tensor_discard(parts[i]);
    if (parts != fixed) kiln__free(cx, parts, bytes);
    return r;
}
