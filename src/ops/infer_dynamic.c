/* SPDX-License-Identifier: Apache-2.0 */
/* Inference of the dynamic-shape ops (dynamic.h) and get_dimension_size. The result types
 * are declared (held in the attributes); what the types alone can check is checked here,
 * the rest when the shape operands' values are known (kiln__dynamic_static_form). */
#include "ops/dynamic.h"

#include <string.h>

/* Shape operand i: an integer tensor of shape [n], or [n, 2] with `pairs` (a convolution's
 * padding). */
static kiln_status check_shape_operand(kiln_ctx *cx, const kiln__attrs *a,
                                       const kiln__type *operands, int i, const char *name,
                                       int64_t n, bool pairs) {
    const kiln__type *t = &operands[i];
    char have[KILN__TYPE_TEXT];
    bool ok = kiln_dtype_is_integer(t->dtype) && t->dtype != KILN_BOOL;
    if (pairs)
        ok = ok && t->shape.rank == 2 && t->shape.dims[0] == n && t->shape.dims[1] == 2;
    else
        ok = ok && t->shape.rank == 1 && t->shape.dims[0] == n;
    if (ok) return KILN_OK;
    if (pairs)
        return kiln__infer_error(cx, a,
                                 "operand %d (%s) is %s; expected an integer tensor of "
                                 "shape [%lld,2]",
                                 i + 1, name, kiln__type_text(t, have), (long long)n);
    return kiln__infer_error(cx, a,
                             "operand %d (%s) is %s; expected an integer tensor of shape "
                             "[%lld]",
                             i + 1, name, kiln__type_text(t, have), (long long)n);
}

/* The result type that the attributes declare has a known, non-negative shape. */
static kiln_status check_declared(kiln_ctx *cx, const kiln__attrs *a, const kiln_shape *s) {
    if (s->rank < 0 || s->rank > KILN_MAX_RANK)
        return kiln__infer_error(cx, a, "the result has rank %d; expected 0 to %d", (int)s->rank,
                                 KILN_MAX_RANK);
    for (int32_t d = 0; d < s->rank; d++)
        if (s->dims[d] < 0) {
            char text[KILN__SHAPE_TEXT];
            return kiln__infer_error(cx, a, "the result shape %s is not static",
                                     kiln__shape_text(s, text));
        }
    return KILN_OK;
}

/* (C1-C2): output_shape lists the result's dimensions; the rest is iota's. */
KILN__INFER(DYNAMIC_IOTA) {
    kiln_status s = check_declared(cx, attrs, &attrs->u.iota.shape);
    if (s == KILN_OK)
        s = check_shape_operand(cx, attrs, operands, 0, "output_shape", attrs->u.iota.shape.rank,
                                false);
    if (s != KILN_OK) return s;
    (void)n_operands;
    return kiln__infer_IOTA(cx, attrs, NULL, 0, results, n_results);
}

/* broadcast_in_dim's (C1-C5), output_dimensions of the result's rank (C7), and the known
 * (non)expanding dimensions, distinct dimensions of the operand (C8-C10). */
KILN__INFER(DYNAMIC_BROADCAST_IN_DIM) {
    (void)n_operands;
    const kiln_shape *shape = &attrs->u.dynamic_broadcast.shape;
    kiln_status s = check_declared(cx, attrs, shape);
    if (s == KILN_OK)
        s = check_shape_operand(cx, attrs, operands, 1, "output_dimensions", shape->rank, false);
    if (s != KILN_OK) return s;
    const kiln_dims *ex = &attrs->u.dynamic_broadcast.expanding;
    const kiln_dims *nx = &attrs->u.dynamic_broadcast.nonexpanding;
    kiln_dims both = *ex;
    for (int32_t i = 0; i < nx->count && both.count < KILN_MAX_RANK; i++)
        both.v[both.count++] = nx->v[i];
    if (ex->count + nx->count > KILN_MAX_RANK)
        return kiln__infer_error(cx, attrs,
                                 "%d known (non)expanding dimensions; the operand has "
                                 "%d dimensions",
                                 (int)(ex->count + nx->count), (int)operands[0].shape.rank);
    s = kiln__check_dims(cx, attrs, "known_expanding_dimensions + known_nonexpanding_dimensions",
                         &both, operands[0].shape.rank);
    if (s != KILN_OK) return s;
    kiln__attrs b;
    memset(&b, 0, sizeof b);
    kiln__attrs_copy(&b, attrs, KILN_OP_DYNAMIC_BROADCAST_IN_DIM);
    b.u.broadcast.shape = *shape;
    b.u.broadcast.dims = attrs->u.dynamic_broadcast.dims;
    return kiln__infer_BROADCAST_IN_DIM(cx, &b, operands, 1, results, n_results);
}

/* reshape's (C1-C2), output_shape of the result's rank (C4). */
KILN__INFER(DYNAMIC_RESHAPE) {
    (void)n_operands;
    kiln_status s = check_declared(cx, attrs, &attrs->u.reshape);
    if (s == KILN_OK)
        s = check_shape_operand(cx, attrs, operands, 1, "output_shape", attrs->u.reshape.rank,
                                false);
    if (s != KILN_OK) return s;
    return kiln__infer_RESHAPE(cx, attrs, operands, 1, results, n_results);
}

/* (C1-C2); the result's shape (C3-C4) is checked when the paddings are known. */
KILN__INFER(DYNAMIC_PAD) {
    (void)n_operands, (void)n_results;
    const kiln__type *x = &operands[0], *v = &operands[1];
    const kiln_shape *shape = &attrs->u.result_shape;
    kiln_status s = check_declared(cx, attrs, shape);
    if (s != KILN_OK) return s;
    char a[KILN__TYPE_TEXT];
    if (v->shape.rank != 0 || v->dtype != x->dtype)
        return kiln__infer_error(cx, attrs,
                                 "operand 2 (padding_value) is %s; expected a rank-0 %s tensor",
                                 kiln__type_text(v, a), kiln_dtype_name(x->dtype));
    static const char *const names[] = {"edge_padding_low", "edge_padding_high",
                                        "interior_padding"};
    for (int i = 0; i < 3; i++)
        if ((s = check_shape_operand(cx, attrs, operands, 2 + i, names[i], x->shape.rank, false)))
            return s;
    if (shape->rank != x->shape.rank) {
        char b[KILN__SHAPE_TEXT];
        return kiln__infer_error(cx, attrs,
                                 "the result shape %s has rank %d; operand 1 has rank %d",
                                 kiln__shape_text(shape, b), (int)shape->rank, (int)x->shape.rank);
    }
    results[0] = (kiln__type){.dtype = x->dtype, .shape = *shape};
    return KILN_OK;
}

/* gather's, with the slice sizes the result type gives (attrs_complete); slice_sizes holds
 * one per operand dimension (C11). */
KILN__INFER(DYNAMIC_GATHER) {
    (void)n_operands;
    kiln_status s =
        check_shape_operand(cx, attrs, operands, 2, "slice_sizes", operands[0].shape.rank, false);
    if (s != KILN_OK) return s;
    return kiln__infer_GATHER(cx, attrs, operands, 2, results, n_results);
}

/* The input's and kernel's spatial sizes for dimension d, when the dimension numbers can
 * be read (convolution's inference checks them). */
static bool spatial_sizes(const kiln_conv_params *p, const kiln__type *lhs, const kiln__type *rhs,
                          int32_t d, int64_t *in, int64_t *win) {
    int64_t i = p->input_spatial_dimensions.v[d], k = p->kernel_spatial_dimensions.v[d];
    if (d >= p->kernel_spatial_dimensions.count || i < 0 || i >= lhs->shape.rank || k < 0 ||
        k >= rhs->shape.rank)
        return false;
    *in = lhs->shape.dims[i];
    *win = rhs->shape.dims[k];
    return true;
}

static int64_t dilated_size(int64_t size, int64_t dilation) {
    return size == 0 ? 0 : (size - 1) * dilation + 1;
}

/* convolution's (C1-C3, C5-C28), with a padding of the declared shape (C4). The declared
 * spatial sizes need the padding's values: here the convolution is checked with a padding
 * that gives them (none low, what is needed high), so every other constraint, the
 * batch and feature sizes of the result included, is checked now. */
KILN__INFER(DYNAMIC_CONV) {
    (void)n_operands;
    const kiln_conv_params *p = &attrs->u.dynamic_conv.conv;
    const kiln_shape *shape = &attrs->u.dynamic_conv.shape;
    int32_t S = p->input_spatial_dimensions.count;
    kiln_status s = check_declared(cx, attrs, shape);
    if (s == KILN_OK) s = check_shape_operand(cx, attrs, operands, 2, "padding", S, true);
    if (s != KILN_OK) return s;
    kiln__attrs c;
    memset(&c, 0, sizeof c);
    kiln__attrs_copy(&c, attrs, KILN_OP_DYNAMIC_CONV);
    c.u.conv = *p;
    c.u.conv.padding_low = (kiln_dims){.count = S};
    c.u.conv.padding_high = (kiln_dims){.count = S};
    for (int32_t d = 0; d < S && d < KILN_MAX_RANK; d++) {
        int64_t in, win, o = -1;
        if (!spatial_sizes(p, &operands[0], &operands[1], d, &in, &win)) continue;
        int64_t od =
            d < p->output_spatial_dimensions.count ? p->output_spatial_dimensions.v[d] : -1;
        if (od >= 0 && od < shape->rank) o = shape->dims[od];
        int64_t stride = d < p->window_strides.count ? p->window_strides.v[d] : 1;
        int64_t ld = d < p->lhs_dilation.count ? p->lhs_dilation.v[d] : 1;
        int64_t rd = d < p->rhs_dilation.count ? p->rhs_dilation.v[d] : 1;
        if (o < 0 || stride < 1 || ld < 1 || rd < 1 || in > (INT64_MAX >> 2) / ld ||
            win > (INT64_MAX >> 2) / rd || o > (INT64_MAX >> 2) / stride)
            continue; /* convolution's inference names what is wrong */
        int64_t din = dilated_size(in, ld), dwin = dilated_size(win, rd);
        c.u.conv.padding_high.v[d] = o == 0 ? -din : (o - 1) * stride + dwin - din;
    }
    s = kiln__infer_CONVOLUTION(cx, &c, operands, 2, results, n_results);
    if (s != KILN_OK) return s;
    if (!kiln_shape_equal(&results[0].shape, shape)) {
        char have[KILN__SHAPE_TEXT], want[KILN__SHAPE_TEXT];
        return kiln__infer_error(cx, attrs,
                                 "the result shape %s cannot be made by any padding; its batch "
                                 "and feature sizes would be those of %s",
                                 kiln__shape_text(shape, want),
                                 kiln__shape_text(&results[0].shape, have));
    }
    return KILN_OK;
}

/* (C1); the result is a tensor<i32>. */
KILN__INFER(GET_DIMENSION_SIZE) {
    (void)n_operands, (void)n_results;
    int64_t d = attrs->u.dimension;
    int32_t rank = operands[0].shape.rank;
    if (d < 0 || d >= rank)
        return kiln__infer_error(cx, attrs,
                                 "dimension is %lld; expected 0 to %d for operand 1 of "
                                 "rank %d",
                                 (long long)d, (int)rank - 1, (int)rank);
    results[0] = (kiln__type){.dtype = KILN_I32, .shape = {.rank = 0}};
    return KILN_OK;
}
