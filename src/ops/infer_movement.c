/* SPDX-License-Identifier: Apache-2.0 */
/* Shape and dtype inference for the data-movement ops: broadcast_in_dim, reshape,
 * transpose, reverse, slice, dynamic_slice, dynamic_update_slice, pad, concatenate.
 * The constraints are those of the StableHLO spec (C1, C2, ... in its op sections). */
#include "ops/infer.h"

/* Checks that a variadic op got at least `least` operands (kiln__infer checked the fixed
 * counts: every op here has one result). */
static kiln_status check_operands_at_least(kiln_ctx *cx, const kiln__attrs *attrs, int n_operands,
                                           int least) {
    if (n_operands < least)
        return kiln__infer_error(cx, attrs, "got %d operands; expected at least %d", n_operands,
                                 least);
    return KILN_OK;
}

/* Checks that a list attribute has one entry per dimension of operand 1. */
static kiln_status check_count(kiln_ctx *cx, const kiln__attrs *attrs, const char *what,
                               const kiln_dims *dims, int32_t rank) {
    if (dims->count != rank)
        return kiln__infer_error(cx, attrs,
                                 "%s has %d entries; expected %d (the rank of operand 1)", what,
                                 (int)dims->count, (int)rank);
    return KILN_OK;
}

static kiln_status check_shape(kiln_ctx *cx, const kiln__attrs *attrs, const kiln_shape *shape) {
    if (kiln_shape_is_valid(shape)) return KILN_OK;
    if (shape->rank < 0 || shape->rank > KILN_MAX_RANK)
        return kiln__infer_error(cx, attrs, "shape has rank %d; expected 0 to %d", (int)shape->rank,
                                 KILN_MAX_RANK);
    char text[KILN__SHAPE_TEXT];
    return kiln__infer_error(cx, attrs, "shape %s has a negative dimension",
                             kiln__shape_text(shape, text));
}

KILN__INFER(BROADCAST_IN_DIM) {
    (void)n_operands, (void)n_results;
    kiln_status s;
    const kiln__type *x = &operands[0];
    const kiln_shape *shape = &attrs->u.broadcast.shape;
    const kiln_dims *dims = &attrs->u.broadcast.dims;
    if ((s = check_shape(cx, attrs, shape)) != KILN_OK) return s;
    if ((s = check_count(cx, attrs, "dims", dims, x->shape.rank)) != KILN_OK) return s;
    if ((s = kiln__check_dims(cx, attrs, "dims", dims, shape->rank)) != KILN_OK) return s;
    for (int32_t d = 0; d < x->shape.rank; d++) {
        int64_t have = x->shape.dims[d], want = shape->dims[dims->v[d]];
        if (have != 1 && have != want) {
            char text[KILN__SHAPE_TEXT];
            return kiln__infer_error(cx, attrs,
                                     "operand 1 dimension %d has size %lld; expected 1 or %lld "
                                     "(dimension %lld of shape %s)",
                                     (int)d, (long long)have, (long long)want,
                                     (long long)dims->v[d], kiln__shape_text(shape, text));
        }
    }
    results[0] = (kiln__type){.dtype = x->dtype, .shape = *shape};
    return KILN_OK;
}

KILN__INFER(RESHAPE) {
    (void)n_operands, (void)n_results;
    kiln_status s;
    const kiln__type *x = &operands[0];
    const kiln_shape *shape = &attrs->u.reshape;
    if ((s = check_shape(cx, attrs, shape)) != KILN_OK) return s;
    int64_t have = 0, want = 0;
    bool ok = kiln_shape_numel(&x->shape, &have);
    bool fits = kiln_shape_numel(shape, &want);
    if (!ok || !fits || have != want) {
        char a[KILN__SHAPE_TEXT], b[KILN__SHAPE_TEXT];
        if (!fits)
            return kiln__infer_error(cx, attrs, "shape %s has too many elements",
                                     kiln__shape_text(shape, b));
        return kiln__infer_error(cx, attrs,
                                 "operand 1 has shape %s (%lld elements); shape %s has %lld",
                                 kiln__shape_text(&x->shape, a), (long long)have,
                                 kiln__shape_text(shape, b), (long long)want);
    }
    results[0] = (kiln__type){.dtype = x->dtype, .shape = *shape};
    return KILN_OK;
}

KILN__INFER(TRANSPOSE) {
    (void)n_operands, (void)n_results;
    kiln_status s;
    const kiln__type *x = &operands[0];
    const kiln_dims *perm = &attrs->u.permutation;
    if ((s = check_count(cx, attrs, "perm", perm, x->shape.rank)) != KILN_OK) return s;
    /* rank distinct dimensions in [0, rank): a permutation */
    if ((s = kiln__check_dims(cx, attrs, "perm", perm, x->shape.rank)) != KILN_OK) return s;
    kiln__type r = {.dtype = x->dtype, .shape = {.rank = x->shape.rank}};
    for (int32_t d = 0; d < x->shape.rank; d++)
        r.shape.dims[d] = x->shape.dims[perm->v[d]];
    results[0] = r;
    return KILN_OK;
}

KILN__INFER(REVERSE) {
    (void)n_operands, (void)n_results;
    const kiln__type *x = &operands[0];
    kiln_status s = kiln__check_dims(cx, attrs, "dims", &attrs->u.reverse_dims, x->shape.rank);
    if (s != KILN_OK) return s;
    results[0] = *x;
    return KILN_OK;
}

KILN__INFER(SLICE) {
    (void)n_operands, (void)n_results;
    kiln_status s;
    const kiln__type *x = &operands[0];
    int32_t rank = x->shape.rank;
    const kiln_dims *start = &attrs->u.slice.start, *limit = &attrs->u.slice.limit,
                    *strides = &attrs->u.slice.strides;
    if ((s = check_count(cx, attrs, "start", start, rank)) != KILN_OK) return s;
    if ((s = check_count(cx, attrs, "limit", limit, rank)) != KILN_OK) return s;
    if ((s = check_count(cx, attrs, "strides", strides, rank)) != KILN_OK) return s;
    kiln__type r = {.dtype = x->dtype, .shape = {.rank = rank}};
    for (int32_t d = 0; d < rank; d++) {
        int64_t lo = start->v[d], hi = limit->v[d], st = strides->v[d], n = x->shape.dims[d];
        if (lo < 0 || lo > n)
            return kiln__infer_error(cx, attrs, "start[%d] is %lld; expected 0 to %lld", (int)d,
                                     (long long)lo, (long long)n);
        if (hi < lo || hi > n)
            return kiln__infer_error(cx, attrs, "limit[%d] is %lld; expected %lld to %lld", (int)d,
                                     (long long)hi, (long long)lo, (long long)n);
        if (st <= 0)
            return kiln__infer_error(cx, attrs, "strides[%d] is %lld; expected a positive value",
                                     (int)d, (long long)st);
        r.shape.dims[d] = (hi - lo) / st + ((hi - lo) % st != 0);
    }
    results[0] = r;
    return KILN_OK;
}

/* Checks the start-index operands operands[first .. first+rank-1] of dynamic_slice and
 * dynamic_update_slice: rank-0 integer tensors of one dtype, one per dimension of x. */
static kiln_status check_starts(kiln_ctx *cx, const kiln__attrs *attrs, const kiln__type *operands,
                                int n_operands, int first, int32_t rank) {
    if (n_operands - first != rank)
        return kiln__infer_error(cx, attrs,
                                 "got %d start indices; expected %d (the rank of operand 1)",
                                 n_operands - first, (int)rank);
    for (int i = first; i < n_operands; i++) {
        const kiln__type *t = &operands[i];
        char text[KILN__TYPE_TEXT];
        if (t->shape.rank != 0 || !kiln_dtype_is_integer(t->dtype))
            return kiln__infer_error(cx, attrs,
                                     "start index %d (operand %d) is %s; expected a rank-0 "
                                     "integer tensor",
                                     i - first, i + 1, kiln__type_text(t, text));
        if (t->dtype != operands[first].dtype)
            return kiln__infer_error(cx, attrs,
                                     "start index %d (operand %d) has dtype %s; expected %s, the "
                                     "dtype of start index 0",
                                     i - first, i + 1, kiln_dtype_name(t->dtype),
                                     kiln_dtype_name(operands[first].dtype));
    }
    return KILN_OK;
}

KILN__INFER(DYNAMIC_SLICE) {
    (void)n_results;
    kiln_status s = check_operands_at_least(cx, attrs, n_operands, 1);
    if (s != KILN_OK) return s;
    const kiln__type *x = &operands[0];
    int32_t rank = x->shape.rank;
    s = check_starts(cx, attrs, operands, n_operands, 1, rank);
    if (s != KILN_OK) return s;
    const kiln_dims *sizes = &attrs->u.slice_sizes;
    if ((s = check_count(cx, attrs, "sizes", sizes, rank)) != KILN_OK) return s;
    kiln__type r = {.dtype = x->dtype, .shape = {.rank = rank}};
    for (int32_t d = 0; d < rank; d++) {
        if (sizes->v[d] < 0 || sizes->v[d] > x->shape.dims[d])
            return kiln__infer_error(cx, attrs, "sizes[%d] is %lld; expected 0 to %lld", (int)d,
                                     (long long)sizes->v[d], (long long)x->shape.dims[d]);
        r.shape.dims[d] = sizes->v[d];
    }
    results[0] = r;
    return KILN_OK;
}

KILN__INFER(DYNAMIC_UPDATE_SLICE) {
    (void)n_results;
    kiln_status s = check_operands_at_least(cx, attrs, n_operands, 2);
    if (s != KILN_OK) return s;
    const kiln__type *x = &operands[0], *u = &operands[1];
    char a[KILN__TYPE_TEXT], b[KILN__TYPE_TEXT];
    if (u->dtype != x->dtype || u->shape.rank != x->shape.rank)
        return kiln__infer_error(cx, attrs,
                                 "operand 2 (the update) is %s; expected the dtype and rank of "
                                 "operand 1, %s",
                                 kiln__type_text(u, a), kiln__type_text(x, b));
    for (int32_t d = 0; d < x->shape.rank; d++)
        if (u->shape.dims[d] > x->shape.dims[d])
            return kiln__infer_error(cx, attrs,
                                     "operand 2 (the update) is %s; larger than operand 1, %s, "
                                     "in dimension %d",
                                     kiln__type_text(u, a), kiln__type_text(x, b), (int)d);
    s = check_starts(cx, attrs, operands, n_operands, 2, x->shape.rank);
    if (s != KILN_OK) return s;
    results[0] = *x;
    return KILN_OK;
}

KILN__INFER(PAD) {
    (void)n_operands, (void)n_results;
    kiln_status s;
    const kiln__type *x = &operands[0], *v = &operands[1];
    char a[KILN__TYPE_TEXT];
    if (v->shape.rank != 0 || v->dtype != x->dtype)
        return kiln__infer_error(cx, attrs,
                                 "operand 2 (the padding value) is %s; expected a rank-0 %s "
                                 "tensor",
                                 kiln__type_text(v, a), kiln_dtype_name(x->dtype));
    int32_t rank = x->shape.rank;
    const kiln_dims *low = &attrs->u.pad.low, *high = &attrs->u.pad.high,
                    *interior = &attrs->u.pad.interior;
    if ((s = check_count(cx, attrs, "low", low, rank)) != KILN_OK) return s;
    if ((s = check_count(cx, attrs, "high", high, rank)) != KILN_OK) return s;
    if ((s = check_count(cx, attrs, "interior", interior, rank)) != KILN_OK) return s;
    kiln__type r = {.dtype = x->dtype, .shape = {.rank = rank}};
    for (int32_t d = 0; d < rank; d++) {
        int64_t n = x->shape.dims[d], in = interior->v[d], size;
        if (in < 0)
            return kiln__infer_error(cx, attrs, "interior[%d] is %lld; expected 0 or more", (int)d,
                                     (long long)in);
        /* size = n + max(n - 1, 0) * interior + low + high, when it fits */
        if (__builtin_mul_overflow(n > 0 ? n - 1 : 0, in, &size) ||
            __builtin_add_overflow(size, n, &size) ||
            __builtin_add_overflow(size, low->v[d], &size) ||
            __builtin_add_overflow(size, high->v[d], &size))
            return kiln__infer_error(cx, attrs, "the padded size of dimension %d overflows",
                                     (int)d);
        if (size < 0)
            return kiln__infer_error(cx, attrs,
                                     "dimension %d of the result would have size %lld (low %lld, "
                                     "high %lld, interior %lld, operand size %lld)",
                                     (int)d, (long long)size, (long long)low->v[d],
                                     (long long)high->v[d], (long long)in, (long long)n);
        r.shape.dims[d] = size;
    }
    results[0] = r;
    return KILN_OK;
}

KILN__INFER(CONCATENATE) {
    (void)n_results;
    kiln_status s = check_operands_at_least(cx, attrs, n_operands, 1);
    if (s != KILN_OK) return s;
    const kiln__type *x = &operands[0];
    int32_t rank = x->shape.rank;
    int64_t dim = attrs->u.dimension;
    if (rank == 0)
        return kiln__infer_error(cx, attrs, "operand 1 has rank 0; expected rank 1 or more");
    if (dim < 0 || dim >= rank)
        return kiln__infer_error(cx, attrs, "dim is %lld; expected 0 to %d", (long long)dim,
                                 (int)rank - 1);
    kiln__type r = *x;
    for (int i = 1; i < n_operands; i++) {
        const kiln__type *t = &operands[i];
        char a[KILN__TYPE_TEXT], b[KILN__TYPE_TEXT];
        bool same = t->dtype == x->dtype && t->shape.rank == rank;
        for (int32_t d = 0; same && d < rank; d++)
            if (d != dim && t->shape.dims[d] != x->shape.dims[d]) same = false;
        if (!same)
            return kiln__infer_error(cx, attrs,
                                     "operand %d is %s; expected operand 1's dtype and shape, %s, "
                                     "except in dimension %lld",
                                     i + 1, kiln__type_text(t, a), kiln__type_text(x, b),
                                     (long long)dim);
        if (__builtin_add_overflow(r.shape.dims[dim], t->shape.dims[dim], &r.shape.dims[dim]))
            return kiln__infer_error(cx, attrs, "the size of dimension %lld overflows",
                                     (long long)dim);
    }
    results[0] = r;
    return KILN_OK;
}
