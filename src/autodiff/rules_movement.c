/* SPDX-License-Identifier: Apache-2.0 */
/* Differentiation rules: data movement (broadcast_in_dim, reshape, transpose, reverse,
 * slice, pad, concatenate), reduce_precision, and the sources (constant, iota,
 * rng_bit_generator, and bitcast_convert), which have no derivative. Every movement op is
 * linear, so its jvp is the op itself applied to the tangent and its vjp the transposed
 * movement. */
#include "autodiff/rules.h"

/* Referenced by rules.c so the static library links this file (see there). */
extern const char kiln__rules_movement_linked;
const char kiln__rules_movement_linked = 1;

#define NONE(NAME) KILN__AD_NO_DERIVATIVE(NAME)

NONE(CONSTANT)
NONE(IOTA)
NONE(RNG_BIT_GENERATOR)
NONE(BITCAST_CONVERT)

/* The op again, on the tangent of operand 0 (the linear ops of one operand). */
static kiln_status same_op_jvp(kiln__emitter *e, const kiln__ad_op *op,
                               kiln__value *const *tangents, kiln__value **out_tangents) {
    if (!tangents[0]) return KILN_OK;
    out_tangents[0] = kiln__emit(e, op->op->kind, op->op->attrs, tangents, 1);
    return kiln_ctx_status(e->cx);
}

/* broadcast_in_dim: sum over the result dimensions that do not come from the operand and
 * over those that were stretched from size 1; then put the operand's dimensions back in
 * its order (dims need not be increasing) and reshape to its shape. */
kiln_status kiln__vjp_BROADCAST_IN_DIM(kiln__emitter *e, const kiln__ad_op *op,
                                       kiln__value *const *cts, kiln__value **out_cts) {
    if (!cts[0]) return KILN_OK;
    const kiln__type *in = op->op->operands[0]->type;
    const kiln__type *out = op->op->results[0]->type;
    const kiln_dims *dims = &op->op->attrs->u.broadcast.dims;
    kiln_dims sum = {0};
    int64_t from[KILN_MAX_RANK]; /* result dim -> operand dim, or -1 */
    for (int32_t r = 0; r < out->shape.rank; r++)
        from[r] = -1;
    for (int32_t i = 0; i < dims->count; i++)
        from[dims->v[i]] = i;
    int64_t kept[KILN_MAX_RANK]; /* the operand dims that survive, in result order */
    int32_t n_kept = 0;
    for (int32_t r = 0; r < out->shape.rank; r++) {
        if (from[r] < 0 || (in->shape.dims[from[r]] == 1 && out->shape.dims[r] != 1))
            sum.v[sum.count++] = r;
        else
            kept[n_kept++] = from[r];
    }
    kiln__value *s = kiln__emit_reduce_sum(e, cts[0], &sum);
    /* Transpose the kept dims into increasing operand order. */
    kiln_dims perm = {.count = n_kept};
    for (int32_t k = 0, pos = 0; k < in->shape.rank; k++)
        for (int32_t j = 0; j < n_kept; j++)
            if (kept[j] == k) perm.v[pos++] = j;
    s = kiln__emit_transpose(e, s, &perm);
    out_cts[0] = kiln__emit_reshape(e, s, &in->shape);
    return kiln_ctx_status(e->cx);
}
KILN__JVP_AS(BROADCAST_IN_DIM, same_op_jvp);

kiln_status kiln__vjp_RESHAPE(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                              kiln__value **out_cts) {
    if (!cts[0]) return KILN_OK;
    out_cts[0] = kiln__emit_reshape(e, cts[0], &op->op->operands[0]->type->shape);
    return kiln_ctx_status(e->cx);
}
KILN__JVP_AS(RESHAPE, same_op_jvp);

kiln_status kiln__vjp_TRANSPOSE(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                                kiln__value **out_cts) {
    if (!cts[0]) return KILN_OK;
    const kiln_dims *p = &op->op->attrs->u.permutation;
    kiln_dims inv = {.count = p->count};
    for (int32_t i = 0; i < p->count; i++)
        inv.v[p->v[i]] = i;
    out_cts[0] = kiln__emit_transpose(e, cts[0], &inv);
    return kiln_ctx_status(e->cx);
}
KILN__JVP_AS(TRANSPOSE, same_op_jvp);

kiln_status kiln__vjp_REVERSE(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                              kiln__value **out_cts) {
    if (!cts[0]) return KILN_OK;
    out_cts[0] = kiln__emit(e, KILN_OP_REVERSE, op->op->attrs, cts, 1);
    return kiln_ctx_status(e->cx);
}
KILN__JVP_AS(REVERSE, same_op_jvp);

/* reduce_precision: linear in the sense JAX gives it (its jvp and transpose round the
 * tangent and the cotangent the same way, jax/_src/lax/lax.py reduce_precision_p). */
kiln_status kiln__vjp_REDUCE_PRECISION(kiln__emitter *e, const kiln__ad_op *op,
                                       kiln__value *const *cts, kiln__value **out_cts) {
    if (!cts[0]) return KILN_OK;
    out_cts[0] = kiln__emit(e, KILN_OP_REDUCE_PRECISION, op->op->attrs, cts, 1);
    return kiln_ctx_status(e->cx);
}
KILN__JVP_AS(REDUCE_PRECISION, same_op_jvp);

/* slice: the cotangent lands where the elements came from (a pad with zeros, the stride
 * becoming interior padding). */
kiln_status kiln__vjp_SLICE(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                            kiln__value **out_cts) {
    if (!cts[0]) return KILN_OK;
    const kiln__type *in = op->op->operands[0]->type;
    const kiln__type *out = op->op->results[0]->type;
    const kiln_dims *start = &op->op->attrs->u.slice.start;
    const kiln_dims *strides = &op->op->attrs->u.slice.strides;
    int32_t rank = in->shape.rank;
    kiln_dims lo = {.count = rank}, hi = {.count = rank}, interior = {.count = rank};
    for (int32_t d = 0; d < rank; d++) {
        int64_t n = out->shape.dims[d];
        lo.v[d] = start->v[d];
        interior.v[d] = n > 0 ? strides->v[d] - 1 : 0;
        int64_t used = n > 0 ? start->v[d] + (n - 1) * strides->v[d] + 1 : start->v[d];
        hi.v[d] = in->shape.dims[d] - used;
    }
    kiln__value *zero = kiln__emit_scalar(e, out->dtype, 0.0);
    out_cts[0] = kiln__emit_pad(e, cts[0], zero, &lo, &hi, &interior);
    return kiln_ctx_status(e->cx);
}
KILN__JVP_AS(SLICE, same_op_jvp);

/* pad: the operand's cotangent is the unpadded, de-interleaved cotangent (JAX's
 * transpose: a negative pad, then a strided slice); the padding value's is the sum of the
 * rest. */
kiln_status kiln__vjp_PAD(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                          kiln__value **out_cts) {
    if (!cts[0]) return KILN_OK;
    const kiln__type *out = op->op->results[0]->type;
    const kiln__attrs *a = op->op->attrs;
    int32_t rank = out->shape.rank;
    kiln_dims lo = {.count = rank}, hi = {.count = rank}, none = {.count = rank};
    kiln_dims start = {.count = rank}, limit = {.count = rank}, strides = {.count = rank};
    kiln_dims all = {.count = rank};
    for (int32_t d = 0; d < rank; d++) {
        lo.v[d] = -a->u.pad.low.v[d];
        hi.v[d] = -a->u.pad.high.v[d];
        none.v[d] = 0;
        all.v[d] = d;
    }
    kiln__value *zero = kiln__emit_scalar(e, out->dtype, 0.0);
    kiln__value *unpadded = kiln__emit_pad(e, cts[0], zero, &lo, &hi, &none);
    if (!unpadded) return kiln_ctx_status(e->cx);
    for (int32_t d = 0; d < rank; d++) {
        start.v[d] = 0;
        limit.v[d] = unpadded->type->shape.dims[d];
        strides.v[d] = a->u.pad.interior.v[d] + 1;
    }
    kiln__value *t = kiln__emit_slice(e, unpadded, &start, &limit, &strides);
    out_cts[0] = t;
    if (kiln__ad_is_float(op->op->operands[1]->type))
        out_cts[1] = kiln__emit_sub(e, kiln__emit_reduce_sum(e, cts[0], &all),
                                    kiln__emit_reduce_sum(e, t, &all));
    return kiln_ctx_status(e->cx);
}
kiln_status kiln__jvp_PAD(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *tangents,
                          kiln__value **out_tangents) {
    if (!tangents[0] && !tangents[1]) return KILN_OK;
    kiln__value *ops[2] = {
        tangents[0] ? tangents[0] : kiln__emit_zeros(e, op->op->operands[0]->type),
        tangents[1] ? tangents[1] : kiln__emit_zeros(e, op->op->operands[1]->type)};
    if (!ops[0] || !ops[1]) return kiln_ctx_status(e->cx);
    out_tangents[0] = kiln__emit(e, KILN_OP_PAD, op->op->attrs, ops, 2);
    return kiln_ctx_status(e->cx);
}

kiln_status kiln__vjp_CONCATENATE(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                                  kiln__value **out_cts) {
    if (!cts[0]) return KILN_OK;
    int64_t dim = op->op->attrs->u.dimension, at = 0;
    const kiln__type *out = op->op->results[0]->type;
    int32_t rank = out->shape.rank;
    for (int32_t i = 0; i < op->n_primals; i++) {
        const kiln__type *in = op->op->operands[i]->type;
        kiln_dims start = {.count = rank}, limit = {.count = rank};
        for (int32_t d = 0; d < rank; d++) {
            start.v[d] = d == dim ? at : 0;
            limit.v[d] = d == dim ? at + in->shape.dims[d] : out->shape.dims[d];
        }
        at += in->shape.dims[dim];
        if (kiln__ad_is_float(in)) out_cts[i] = kiln__emit_slice(e, cts[0], &start, &limit, NULL);
    }
    return kiln_ctx_status(e->cx);
}
kiln_status kiln__jvp_CONCATENATE(kiln__emitter *e, const kiln__ad_op *op,
                                  kiln__value *const *tangents, kiln__value **out_tangents) {
    int32_t n = op->n_primals;
    if (n > 64) return kiln__emit_error(e, KILN_UNIMPLEMENTED, "concatenate of over 64 operands");
    kiln__value *ops[64];
    for (int32_t i = 0; i < n; i++)
        ops[i] = tangents[i] ? tangents[i] : kiln__emit_zeros(e, op->op->operands[i]->type);
    out_tangents[0] = kiln__emit(e, KILN_OP_CONCATENATE, op->op->attrs, ops, n);
    return kiln_ctx_status(e->cx);
}
