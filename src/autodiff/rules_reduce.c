/* SPDX-License-Identifier: Apache-2.0 */
/* Differentiation rules: reduce with one input and a builtin region (add, max, min,
 * multiply). Variadic reduces (several inputs, e.g. an argmax) and custom regions are
 * UNIMPLEMENTED, naming the op.
 *
 * max and min: the derivative is shared evenly among every element equal to the result,
 * the init value included when it ties (JAX spreads it over the equal elements the same
 * way: a mask of the equal elements divided by their count). multiply: the derivative
 * with respect to x_i is the product of the other elements, computed without dividing by
 * x_i, so zeros are exact: with no zero it is p / x_i, with exactly one zero it is the
 * product of the non-zero elements at the zero and 0 elsewhere, with two or more zeros it
 * is 0. */
#include "autodiff/rules.h"

/* Referenced by rules.c so the static library links this file (see there). */
extern const char kiln__rules_reduce_linked;
const char kiln__rules_reduce_linked = 1;

typedef enum { R_ADD, R_MAX, R_MIN, R_MUL, R_OTHER } reducer;

static reducer reducer_of(const kiln__ir_op *op) {
    if (op->n_operands != 2 || op->n_results != 1) return R_OTHER;
    const kiln_region *r = op->attrs->region[0];
    if (r == kiln_region_add()) return R_ADD;
    if (r == kiln_region_maximum()) return R_MAX;
    if (r == kiln_region_minimum()) return R_MIN;
    if (r == kiln_region_multiply()) return R_MUL;
    return R_OTHER;
}

/* The result (of x reduced over dims) broadcast back to x's shape. */
static kiln__value *expand(kiln__emitter *e, kiln__value *r, const kiln__type *x,
                           const kiln_dims *reduced) {
    if (!r) return NULL;
    kiln_dims kept = {0};
    for (int32_t d = 0; d < x->shape.rank; d++) {
        bool gone = false;
        for (int32_t k = 0; k < reduced->count; k++)
            gone |= reduced->v[k] == d;
        if (!gone) kept.v[kept.count++] = d;
    }
    return kiln__emit_broadcast(e, r, &x->shape, &kept);
}

static kiln__value *reduce_with(kiln__emitter *e, kiln__value *x, const kiln_dims *dims,
                                const kiln_region *region, double init) {
    kiln__value *i = kiln__emit_scalar(e, x ? x->type->dtype : KILN_F32, init);
    if (!x || !i) return NULL;
    kiln__attrs a = {.fn = e->fn, .n_results = 1, .n_regions = 1};
    a.region[0] = region;
    a.u.reduce_dims = *dims;
    kiln__value *ops[2] = {x, i};
    return kiln__emit(e, KILN_OP_REDUCE, &a, ops, 2);
}

static kiln__value *all_dims_sum(kiln__emitter *e, kiln__value *x) {
    if (!x) return NULL;
    kiln_dims all = {.count = x->type->shape.rank};
    for (int32_t d = 0; d < all.count; d++)
        all.v[d] = d;
    return kiln__emit_reduce_sum(e, x, &all);
}

/* The per-element weights w (x's shape) and the init's weight wi (the result's shape)
 * such that dy = sum(w * dx) + wi * dinit. */
static kiln_status weights(kiln__emitter *e, const kiln__ad_op *op, reducer kind, kiln__value **w,
                           kiln__value **wi) {
    const kiln__type *xt = op->op->operands[0]->type;
    const kiln_dims *dims = &op->op->attrs->u.reduce_dims;
    kiln__value *x = op->primals[0], *init = op->primals[1], *y = op->outs[0];
    *w = *wi = NULL;
    if (kind == R_ADD) {
        *w = kiln__emit_full(e, xt, 1.0);
        *wi = kiln__emit_full(e, y->type, 1.0);
    } else if (kind == R_MAX || kind == R_MIN) {
        kiln__value *yb = expand(e, y, xt, dims);
        kiln__value *mask =
            kiln__emit_convert(e, kiln__emit_compare(e, KILN_CMP_EQ, x, yb), xt->dtype);
        kiln__value *init_b =
            y && init ? kiln__emit_broadcast(e, init, &y->type->shape, &(kiln_dims){0}) : NULL;
        if (y && y->type->shape.rank == 0) init_b = init;
        kiln__value *mask_i =
            kiln__emit_convert(e, kiln__emit_compare(e, KILN_CMP_EQ, init_b, y), xt->dtype);
        kiln__value *count = kiln__emit_add(e, kiln__emit_reduce_sum(e, mask, dims), mask_i);
        /* count is 0 only when y is NaN and nothing equals it: no derivative flows then. */
        kiln__value *safe =
            kiln__emit_binary(e, KILN_OP_MAXIMUM, count, kiln__emit_full_like(e, count, 1.0));
        *w = kiln__emit_div(e, mask, expand(e, safe, xt, dims));
        *wi = kiln__emit_div(e, mask_i, safe);
    } else {
        kiln__value *zero_x = kiln__emit_compare(e, KILN_CMP_EQ, x, kiln__emit_full_like(e, x, 0));
        kiln__value *nz = kiln__emit_select(e, zero_x, kiln__emit_full_like(e, x, 1.0), x);
        kiln__value *n_zero =
            kiln__emit_reduce_sum(e, kiln__emit_convert(e, zero_x, xt->dtype), dims);
        kiln__value *prod_x = reduce_with(e, x, dims, kiln_region_multiply(), 1.0);
        kiln__value *prod_nz =
            kiln__emit_mul(e, reduce_with(e, nz, dims, kiln_region_multiply(), 1.0),
                           init && y && y->type->shape.rank > 0
                               ? kiln__emit_broadcast(e, init, &y->type->shape, &(kiln_dims){0})
                               : init);
        kiln__value *pb = expand(e, prod_nz, xt, dims);
        kiln__value *zb = expand(e, n_zero, xt, dims);
        kiln__value *none = kiln__emit_compare(e, KILN_CMP_EQ, zb, kiln__emit_full_like(e, zb, 0));
        kiln__value *one = kiln__emit_compare(e, KILN_CMP_EQ, zb, kiln__emit_full_like(e, zb, 1));
        kiln__value *zero = kiln__emit_full(e, xt, 0.0);
        kiln__value *at_nonzero = kiln__emit_select(e, none, kiln__emit_div(e, pb, x), zero);
        kiln__value *at_zero = kiln__emit_select(e, one, pb, zero);
        *w = kiln__emit_select(e, zero_x, at_zero, at_nonzero);
        *wi = prod_x;
    }
    return kiln_ctx_status(e->cx);
}

/* What vjp and jvp of a reduce say when its region is not one they know. */
static kiln_status not_builtin(kiln__emitter *e, const kiln__ad_op *op, const char *mode) {
    return kiln__ad_unimplemented(e, op, mode,
                                  "reduce (only one input with a builtin add, maximum, minimum "
                                  "or multiply region)");
}

kiln_status kiln__vjp_REDUCE(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                             kiln__value **out_cts) {
    reducer kind = reducer_of(op->op);
    if (kind == R_OTHER) return not_builtin(e, op, "vjp");
    if (!cts[0]) return KILN_OK;
    const kiln__type *xt = op->op->operands[0]->type;
    const kiln_dims *dims = &op->op->attrs->u.reduce_dims;
    kiln__value *w, *wi;
    if (weights(e, op, kind, &w, &wi) != KILN_OK) return kiln_ctx_status(e->cx);
    out_cts[0] = kiln__emit_mul(e, expand(e, cts[0], xt, dims), w);
    out_cts[1] = all_dims_sum(e, kiln__emit_mul(e, cts[0], wi));
    return kiln_ctx_status(e->cx);
}

kiln_status kiln__jvp_REDUCE(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *tangents,
                             kiln__value **out_tangents) {
    reducer kind = reducer_of(op->op);
    if (kind == R_OTHER) return not_builtin(e, op, "jvp");
    const kiln_dims *dims = &op->op->attrs->u.reduce_dims;
    const kiln__type *yt = op->op->results[0]->type;
    kiln__value *w, *wi, *t = NULL;
    if (weights(e, op, kind, &w, &wi) != KILN_OK) return kiln_ctx_status(e->cx);
    if (tangents[0]) t = kiln__emit_reduce_sum(e, kiln__emit_mul(e, tangents[0], w), dims);
    if (tangents[1]) {
        kiln__value *ti = tangents[1];
        if (yt->shape.rank > 0) ti = kiln__emit_broadcast(e, ti, &yt->shape, &(kiln_dims){0});
        t = kiln__emit_add_any(e, t, kiln__emit_mul(e, ti, wi));
    }
    out_tangents[0] = t;
    return kiln_ctx_status(e->cx);
}
