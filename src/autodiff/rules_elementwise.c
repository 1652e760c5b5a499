/* SPDX-License-Identifier: Apache-2.0 */
/* Differentiation rules: elementwise ops, compare, select, clamp and convert.
 *
 * Most unary rules are "derivative times the incoming (co)tangent", with the derivative
 * written in terms of the operand x and, where cheaper, the result y. maximum and
 * minimum split ties evenly between the operands (JAX's balanced rule); floor, ceil,
 * round and sign have zero derivative; integer-only ops have none. */
#include "autodiff/rules.h"

/* Referenced by rules.c so the static library links this file (see there). */
extern const char kiln__rules_elementwise_linked;
const char kiln__rules_elementwise_linked = 1;

typedef kiln__value *(*deriv_fn)(kiln__emitter *e, kiln__value *x, kiln__value *y);

static kiln__value *one_like(kiln__emitter *e, kiln__value *x) {
    return kiln__emit_full_like(e, x, 1.0);
}

static kiln__value *d_abs(kiln__emitter *e, kiln__value *x, kiln__value *y) {
    (void)y;
    return kiln__emit_unary(e, KILN_OP_SIGN, x);
}
static kiln__value *d_sqrt(kiln__emitter *e, kiln__value *x, kiln__value *y) {
    (void)x;
    return kiln__emit_div(e, kiln__emit_full_like(e, y, 0.5), y);
}
static kiln__value *d_rsqrt(kiln__emitter *e, kiln__value *x, kiln__value *y) {
    return kiln__emit_mul(e, kiln__emit_full_like(e, y, -0.5), kiln__emit_div(e, y, x));
}
static kiln__value *d_cbrt(kiln__emitter *e, kiln__value *x, kiln__value *y) {
    return kiln__emit_div(e, y, kiln__emit_mul(e, kiln__emit_full_like(e, x, 3.0), x));
}
static kiln__value *d_exp(kiln__emitter *e, kiln__value *x, kiln__value *y) {
    (void)e, (void)x;
    return y;
}
static kiln__value *d_expm1(kiln__emitter *e, kiln__value *x, kiln__value *y) {
    (void)x;
    return kiln__emit_add(e, y, one_like(e, y));
}
static kiln__value *d_log(kiln__emitter *e, kiln__value *x, kiln__value *y) {
    (void)y;
    return kiln__emit_div(e, one_like(e, x), x);
}
static kiln__value *d_log1p(kiln__emitter *e, kiln__value *x, kiln__value *y) {
    (void)y;
    return kiln__emit_div(e, one_like(e, x), kiln__emit_add(e, x, one_like(e, x)));
}
static kiln__value *d_logistic(kiln__emitter *e, kiln__value *x, kiln__value *y) {
    (void)x;
    return kiln__emit_mul(e, y, kiln__emit_sub(e, one_like(e, y), y));
}
static kiln__value *d_sin(kiln__emitter *e, kiln__value *x, kiln__value *y) {
    (void)y;
    return kiln__emit_unary(e, KILN_OP_COSINE, x);
}
static kiln__value *d_cos(kiln__emitter *e, kiln__value *x, kiln__value *y) {
    (void)y;
    return kiln__emit_neg(e, kiln__emit_unary(e, KILN_OP_SINE, x));
}
static kiln__value *d_tan(kiln__emitter *e, kiln__value *x, kiln__value *y) {
    (void)x;
    return kiln__emit_add(e, one_like(e, y), kiln__emit_mul(e, y, y));
}
static kiln__value *d_tanh(kiln__emitter *e, kiln__value *x, kiln__value *y) {
    (void)x;
    return kiln__emit_sub(e, one_like(e, y), kiln__emit_mul(e, y, y));
}

static kiln_status unary_vjp(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                             kiln__value **out, deriv_fn d) {
    if (!cts[0]) return KILN_OK;
    out[0] = kiln__emit_mul(e, cts[0], d(e, op->primals[0], op->outs[0]));
    return kiln_ctx_status(e->cx);
}
static kiln_status unary_jvp(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *ts,
                             kiln__value **out, deriv_fn d) {
    if (!ts[0]) return KILN_OK;
    out[0] = kiln__emit_mul(e, ts[0], d(e, op->primals[0], op->outs[0]));
    return kiln_ctx_status(e->cx);
}

/* Defines the rules of op NAME as the pair VJP, JVP (the unary or the binary ones) given
 * the op's derivative ARG. */
#define RULES_WITH(NAME, VJP, JVP, ARG)                                                            \
    kiln_status kiln__vjp_##NAME(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts, \
                                 kiln__value **out_cts) {                                          \
        return VJP(e, op, cts, out_cts, ARG);                                                      \
    }                                                                                              \
    kiln_status kiln__jvp_##NAME(kiln__emitter *e, const kiln__ad_op *op,                          \
                                 kiln__value *const *tangents, kiln__value **out_tangents) {       \
        return JVP(e, op, tangents, out_tangents, ARG);                                            \
    }
#define UNARY(NAME, fn) RULES_WITH(NAME, unary_vjp, unary_jvp, fn)

UNARY(ABS, d_abs)
UNARY(SQRT, d_sqrt)
UNARY(RSQRT, d_rsqrt)
UNARY(CBRT, d_cbrt)
UNARY(EXPONENTIAL, d_exp)
UNARY(EXPONENTIAL_MINUS_ONE, d_expm1)
UNARY(LOG, d_log)
UNARY(LOG_PLUS_ONE, d_log1p)
UNARY(LOGISTIC, d_logistic)
UNARY(SINE, d_sin)
UNARY(COSINE, d_cos)
UNARY(TAN, d_tan)
UNARY(TANH, d_tanh)

/* Zero derivative (piecewise constant), or no derivative (integer and boolean results):
 * nothing flows. */
#define ZERO(NAME) KILN__AD_NO_DERIVATIVE(NAME)

ZERO(SIGN)
ZERO(FLOOR)
ZERO(CEIL)
ZERO(ROUND_NEAREST_AFZ)
ZERO(ROUND_NEAREST_EVEN)
ZERO(NOT)
ZERO(IS_FINITE)
ZERO(POPCNT)
ZERO(COUNT_LEADING_ZEROS)
ZERO(AND)
ZERO(OR)
ZERO(XOR)
ZERO(SHIFT_LEFT)
ZERO(SHIFT_RIGHT_ARITHMETIC)
ZERO(SHIFT_RIGHT_LOGICAL)
ZERO(COMPARE)

kiln_status kiln__vjp_NEGATE(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                             kiln__value **out_cts) {
    (void)op;
    out_cts[0] = kiln__emit_neg(e, cts[0]);
    return kiln_ctx_status(e->cx);
}
kiln_status kiln__jvp_NEGATE(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *tangents,
                             kiln__value **out_tangents) {
    (void)op;
    out_tangents[0] = kiln__emit_neg(e, tangents[0]);
    return kiln_ctx_status(e->cx);
}

/* ---- binary ------------------------------------------------------------------------------ */

/* The partial derivatives of a binary op at (a, b) with result y: *da and *db (NULL where a
 * partial is not needed). */
typedef void (*partials_fn)(kiln__emitter *e, kiln__value *a, kiln__value *b, kiln__value *y,
                            kiln__value **da, kiln__value **db, bool need_a, bool need_b);

static kiln_status binary_vjp(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                              kiln__value **out, partials_fn p) {
    if (!cts[0]) return KILN_OK;
    kiln__value *da = NULL, *db = NULL;
    p(e, op->primals[0], op->primals[1], op->outs[0], &da, &db, true, true);
    out[0] = da ? kiln__emit_mul(e, cts[0], da) : NULL;
    out[1] = db ? kiln__emit_mul(e, cts[0], db) : NULL;
    return kiln_ctx_status(e->cx);
}
static kiln_status binary_jvp(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *ts,
                              kiln__value **out, partials_fn p) {
    if (!ts[0] && !ts[1]) return KILN_OK;
    kiln__value *da = NULL, *db = NULL;
    p(e, op->primals[0], op->primals[1], op->outs[0], &da, &db, ts[0] != NULL, ts[1] != NULL);
    kiln__value *ta = ts[0] && da ? kiln__emit_mul(e, ts[0], da) : NULL;
    kiln__value *tb = ts[1] && db ? kiln__emit_mul(e, ts[1], db) : NULL;
    out[0] = kiln__emit_add_any(e, ta, tb);
    return kiln_ctx_status(e->cx);
}

static void p_mul(kiln__emitter *e, kiln__value *a, kiln__value *b, kiln__value *y,
                  kiln__value **da, kiln__value **db, bool na, bool nb) {
    (void)e, (void)y, (void)na, (void)nb;
    *da = b;
    *db = a;
}
static void p_div(kiln__emitter *e, kiln__value *a, kiln__value *b, kiln__value *y,
                  kiln__value **da, kiln__value **db, bool na, bool nb) {
    (void)a;
    if (na) *da = kiln__emit_div(e, one_like(e, b), b);
    if (nb) *db = kiln__emit_neg(e, kiln__emit_div(e, y, b));
}
/* remainder(a, b) = a - trunc(a / b) * b. */
static void p_rem(kiln__emitter *e, kiln__value *a, kiln__value *b, kiln__value *y,
                  kiln__value **da, kiln__value **db, bool na, bool nb) {
    (void)y;
    if (na) *da = one_like(e, a);
    if (nb) {
        kiln__value *q = kiln__emit_div(e, a, b);
        kiln__value *neg = kiln__emit_compare(e, KILN_CMP_LT, q, kiln__emit_full_like(e, q, 0));
        kiln__value *trunc = kiln__emit_select(e, neg, kiln__emit_unary(e, KILN_OP_CEIL, q),
                                               kiln__emit_unary(e, KILN_OP_FLOOR, q));
        *db = kiln__emit_neg(e, trunc);
    }
}
/* d/da a^b = b a^(b-1); d/db = log(a) a^b, with log(0) read as 0 so that 0^b (b > 0) has
 * derivative 0 in b, as JAX does. */
static void p_pow(kiln__emitter *e, kiln__value *a, kiln__value *b, kiln__value *y,
                  kiln__value **da, kiln__value **db, bool na, bool nb) {
    if (na)
        *da = kiln__emit_mul(
            e, b, kiln__emit_binary(e, KILN_OP_POWER, a, kiln__emit_sub(e, b, one_like(e, b))));
    if (nb) {
        kiln__value *zero = kiln__emit_compare(e, KILN_CMP_EQ, a, kiln__emit_full_like(e, a, 0));
        kiln__value *safe = kiln__emit_select(e, zero, one_like(e, a), a);
        *db = kiln__emit_mul(e, kiln__emit_unary(e, KILN_OP_LOG, safe), y);
    }
}
/* Balanced: where a and b tie, each gets half. */
static kiln__value *balanced(kiln__emitter *e, kiln__value *x, kiln__value *other, kiln__value *y) {
    kiln__value *x_is = kiln__emit_compare(e, KILN_CMP_EQ, x, y);
    kiln__value *o_is = kiln__emit_compare(e, KILN_CMP_EQ, other, y);
    kiln__value *share =
        kiln__emit_select(e, o_is, kiln__emit_full_like(e, y, 0.5), one_like(e, y));
    return kiln__emit_select(e, x_is, share, kiln__emit_full_like(e, y, 0.0));
}
static void p_minmax(kiln__emitter *e, kiln__value *a, kiln__value *b, kiln__value *y,
                     kiln__value **da, kiln__value **db, bool na, bool nb) {
    if (na) *da = balanced(e, a, b, y);
    if (nb) *db = balanced(e, b, a, y);
}
static void p_atan2(kiln__emitter *e, kiln__value *a, kiln__value *b, kiln__value *y,
                    kiln__value **da, kiln__value **db, bool na, bool nb) {
    (void)y;
    kiln__value *r2 = kiln__emit_add(e, kiln__emit_mul(e, a, a), kiln__emit_mul(e, b, b));
    if (na) *da = kiln__emit_div(e, b, r2);
    if (nb) *db = kiln__emit_neg(e, kiln__emit_div(e, a, r2));
}

#define BINARY(NAME, p) RULES_WITH(NAME, binary_vjp, binary_jvp, p)

BINARY(MULTIPLY, p_mul)
BINARY(DIVIDE, p_div)
BINARY(REMAINDER, p_rem)
BINARY(POWER, p_pow)
BINARY(MAXIMUM, p_minmax)
BINARY(MINIMUM, p_minmax)
BINARY(ATAN2, p_atan2)

kiln_status kiln__vjp_ADD(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                          kiln__value **out_cts) {
    (void)op;
    out_cts[0] = out_cts[1] = cts[0];
    return kiln_ctx_status(e->cx);
}
kiln_status kiln__jvp_ADD(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *tangents,
                          kiln__value **out_tangents) {
    (void)op;
    out_tangents[0] = kiln__emit_add_any(e, tangents[0], tangents[1]);
    return kiln_ctx_status(e->cx);
}
kiln_status kiln__vjp_SUBTRACT(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                               kiln__value **out_cts) {
    (void)op;
    out_cts[0] = cts[0];
    out_cts[1] = kiln__emit_neg(e, cts[0]);
    return kiln_ctx_status(e->cx);
}
kiln_status kiln__jvp_SUBTRACT(kiln__emitter *e, const kiln__ad_op *op,
                               kiln__value *const *tangents, kiln__value **out_tangents) {
    (void)op;
    out_tangents[0] = kiln__emit_add_any(e, tangents[0], kiln__emit_neg(e, tangents[1]));
    return kiln_ctx_status(e->cx);
}

/* ---- select, clamp, convert ---------------------------------------------------------- */

/* A cotangent for an operand that was broadcast from rank 0: the sum of all elements. */
static kiln__value *unbroadcast(kiln__emitter *e, kiln__value *ct, const kiln__value *operand) {
    if (!ct || operand->type->shape.rank == ct->type->shape.rank) return ct;
    kiln_dims all = {.count = ct->type->shape.rank};
    for (int32_t i = 0; i < all.count; i++)
        all.v[i] = i;
    return kiln__emit_reduce_sum(e, ct, &all);
}

kiln_status kiln__vjp_SELECT(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                             kiln__value **out_cts) {
    if (!cts[0]) return KILN_OK;
    kiln__value *zero = kiln__emit_zeros(e, cts[0]->type);
    out_cts[1] = kiln__emit_select(e, op->primals[0], cts[0], zero);
    out_cts[2] = kiln__emit_select(e, op->primals[0], zero, cts[0]);
    return kiln_ctx_status(e->cx);
}
kiln_status kiln__jvp_SELECT(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *tangents,
                             kiln__value **out_tangents) {
    if (!tangents[1] && !tangents[2]) return KILN_OK;
    const kiln__type *t = op->op->results[0]->type;
    kiln__value *a = tangents[1] ? tangents[1] : kiln__emit_zeros(e, t);
    kiln__value *b = tangents[2] ? tangents[2] : kiln__emit_zeros(e, t);
    out_tangents[0] = kiln__emit_select(e, op->primals[0], a, b);
    return kiln_ctx_status(e->cx);
}

/* clamp(lo, x, hi): x's derivative is 1 strictly inside (lo, hi); lo's where x < lo, hi's
 * where x > hi (JAX's choice at the boundaries). lo and hi may be rank 0. */
static void clamp_masks(kiln__emitter *e, const kiln__ad_op *op, kiln__value **in_x,
                        kiln__value **below, kiln__value **above) {
    kiln__value *lo = op->primals[0], *x = op->primals[1], *hi = op->primals[2];
    kiln__value *gt_lo = kiln__emit_compare(e, KILN_CMP_GT, x, lo);
    kiln__value *lt_hi = kiln__emit_compare(e, KILN_CMP_LT, x, hi);
    *in_x = kiln__emit_binary(e, KILN_OP_AND, gt_lo, lt_hi);
    *below = kiln__emit_compare(e, KILN_CMP_LT, x, lo);
    *above = kiln__emit_compare(e, KILN_CMP_GT, x, hi);
}

kiln_status kiln__vjp_CLAMP(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                            kiln__value **out_cts) {
    if (!cts[0]) return KILN_OK;
    kiln__value *in_x, *below, *above;
    clamp_masks(e, op, &in_x, &below, &above);
    kiln__value *zero = kiln__emit_zeros(e, cts[0]->type);
    out_cts[1] = kiln__emit_select(e, in_x, cts[0], zero);
    out_cts[0] = unbroadcast(e, kiln__emit_select(e, below, cts[0], zero), op->primals[0]);
    out_cts[2] = unbroadcast(e, kiln__emit_select(e, above, cts[0], zero), op->primals[2]);
    return kiln_ctx_status(e->cx);
}
kiln_status kiln__jvp_CLAMP(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *tangents,
                            kiln__value **out_tangents) {
    kiln__value *in_x, *below, *above;
    clamp_masks(e, op, &in_x, &below, &above);
    const kiln__type *t = op->op->results[0]->type;
    kiln__value *zero = kiln__emit_zeros(e, t), *r = NULL;
    if (tangents[1]) r = kiln__emit_select(e, in_x, tangents[1], zero);
    if (tangents[0]) r = kiln__emit_add_any(e, r, kiln__emit_select(e, below, tangents[0], zero));
    if (tangents[2]) r = kiln__emit_add_any(e, r, kiln__emit_select(e, above, tangents[2], zero));
    out_tangents[0] = r;
    return kiln_ctx_status(e->cx);
}

kiln_status kiln__vjp_CONVERT(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                              kiln__value **out_cts) {
    if (!cts[0] || !kiln__ad_is_float(op->op->operands[0]->type)) return KILN_OK;
    out_cts[0] = kiln__emit_convert(e, cts[0], op->op->operands[0]->type->dtype);
    return kiln_ctx_status(e->cx);
}
kiln_status kiln__jvp_CONVERT(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *tangents,
                              kiln__value **out_tangents) {
    if (!tangents[0] || !kiln__ad_is_float(op->op->results[0]->type)) return KILN_OK;
    out_tangents[0] = kiln__emit_convert(e, tangents[0], op->op->results[0]->type->dtype);
    return kiln_ctx_status(e->cx);
}
