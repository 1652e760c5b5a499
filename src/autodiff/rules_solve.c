/* SPDX-License-Identifier: Apache-2.0 */
/* Differentiation rules of triangular_solve and cholesky (real floats; the matrices are the
 * last two dimensions, the others a batch).
 *
 * triangular_solve: with T the triangle it reads (ones on the diagonal when unit_diagonal)
 * and op(T) what it applies, X = op(T)^-1 B (left) or B op(T)^-1 (right). Forward:
 * dX = solve(dB - op(dT) X) (left) or solve(dB - X op(dT)); reverse: gB = solve with the
 * transpose flipped of g, and gA = the triangle of op^T(-gB X^T) (left) or op^T(-X^T gB).
 *
 * cholesky (lower): A = L L^T read from A's lower triangle, S the symmetric matrix that
 * triangle stands for. Forward: dL = L phi(L^-1 dS L^-T), phi the lower triangle with the
 * diagonal halved. Reverse: P = L^-T phi(L^T gL) L^-1, and gA = the lower triangle of P
 * plus the strict lower triangle of P^T (both entries of S that one entry of A makes). The
 * upper factor is the transpose of the lower one of A^T. */
#include "autodiff/rules.h"

/* Referenced by rules.c so that a static link keeps this file's rules. */
extern const char kiln__rules_solve_linked;
const char kiln__rules_solve_linked = 1;

static kiln_status rule_status(kiln__emitter *e) { return kiln_ctx_status(e->cx); }

/* x with its last two dimensions swapped. */
static kiln__value *swap_last(kiln__emitter *e, kiln__value *x) {
    if (!x) return NULL;
    int32_t r = x->type->shape.rank;
    kiln_dims perm = {.count = r};
    for (int32_t i = 0; i < r; i++)
        perm.v[i] = i;
    perm.v[r - 2] = r - 1;
    perm.v[r - 1] = r - 2;
    return kiln__emit_transpose(e, x, &perm);
}

/* p q, batched over the leading dimensions. */
static kiln__value *matmul(kiln__emitter *e, kiln__value *p, kiln__value *q) {
    if (!p || !q) return NULL;
    int32_t r = p->type->shape.rank;
    kiln__attrs a = {0};
    for (int32_t i = 0; i < r - 2; i++)
        a.u.dot.lhs_batching_dims.v[i] = a.u.dot.rhs_batching_dims.v[i] = i;
    a.u.dot.lhs_batching_dims.count = a.u.dot.rhs_batching_dims.count = r - 2;
    a.u.dot.lhs_contracting_dims = (kiln_dims){.count = 1, .v = {r - 1}};
    a.u.dot.rhs_contracting_dims = (kiln_dims){.count = 1, .v = {r - 2}};
    a.result_dtype = p->type->dtype;
    a.fn = e->fn;
    kiln__value *operands[2] = {p, q};
    return kiln__emit(e, KILN_OP_DOT_GENERAL, &a, operands, 2);
}

/* Which entries of the last two dimensions (row i, column j) a mask keeps. */
typedef enum { LOWER, STRICT_LOWER, UPPER, STRICT_UPPER } triangle;

/* x where (i, j) is in the triangle, else 0; scale times x on the diagonal (a halved
 * diagonal: 0.5). */
static kiln__value *masked(kiln__emitter *e, kiln__value *x, triangle t, double diagonal) {
    if (!x) return NULL;
    const kiln_shape *s = &x->type->shape;
    int32_t r = s->rank;
    kiln__attrs ia = {.fn = e->fn};
    ia.u.iota.dtype = KILN_I64;
    ia.u.iota.shape = *s;
    ia.u.iota.dimension = r - 2;
    kiln__value *row = kiln__emit(e, KILN_OP_IOTA, &ia, NULL, 0);
    ia.u.iota.dimension = r - 1;
    kiln__value *col = kiln__emit(e, KILN_OP_IOTA, &ia, NULL, 0);
    static const kiln_compare_direction dirs[] = {KILN_CMP_LE, KILN_CMP_LT, KILN_CMP_GE,
                                                  KILN_CMP_GT};
    kiln__value *keep = kiln__emit_compare(e, dirs[t], col, row);
    kiln__value *y = kiln__emit_select(e, keep, x, kiln__emit_full_like(e, x, 0));
    if (diagonal != 1 && (t == LOWER || t == UPPER)) {
        kiln__value *on = kiln__emit_compare(e, KILN_CMP_EQ, col, row);
        y = kiln__emit_select(e, on, kiln__emit_mul(e, y, kiln__emit_full_like(e, y, diagonal)), y);
    }
    return y;
}

/* triangular_solve on (a, b) with o's attributes, the transpose flipped when `flip`, the
 * side `left`. */
static kiln__value *solve(kiln__emitter *e, const kiln__ir_op *o, kiln__value *a, kiln__value *b,
                          bool left, bool flip) {
    kiln__attrs at = {.fn = e->fn};
    at.u.triangular = o->attrs->u.triangular;
    at.u.triangular.left_side = left;
    if (flip)
        at.u.triangular.transpose_a = o->attrs->u.triangular.transpose_a == KILN_TRANSPOSE_NONE
                                          ? KILN_TRANSPOSE_T
                                          : KILN_TRANSPOSE_NONE;
    kiln__value *operands[2] = {a, b};
    return kiln__emit(e, KILN_OP_TRIANGULAR_SOLVE, &at, operands, 2);
}

/* The triangle triangular_solve reads of a (strict when the diagonal is unit). */
static triangle read_triangle(const kiln__ir_op *o) {
    bool lower = o->attrs->u.triangular.lower, unit = o->attrs->u.triangular.unit_diagonal;
    return lower ? (unit ? STRICT_LOWER : LOWER) : (unit ? STRICT_UPPER : UPPER);
}

static bool transposes(const kiln__ir_op *o) {
    return o->attrs->u.triangular.transpose_a != KILN_TRANSPOSE_NONE;
}

kiln_status kiln__jvp_TRIANGULAR_SOLVE(kiln__emitter *e, const kiln__ad_op *op,
                                       kiln__value *const *tangents, kiln__value **out_tangents) {
    const kiln__ir_op *o = op->op;
    if (!kiln__ad_has_derivative(op->outs[0])) return rule_status(e);
    bool left = o->attrs->u.triangular.left_side;
    kiln__value *x = op->outs[0];
    kiln__value *rhs = kiln__ad_has_derivative(op->primals[1]) ? tangents[1] : NULL;
    kiln__value *da = kiln__ad_has_derivative(op->primals[0]) ? tangents[0] : NULL;
    if (da) {
        kiln__value *dt = masked(e, da, read_triangle(o), 1);
        if (transposes(o)) dt = swap_last(e, dt);
        kiln__value *prod = left ? matmul(e, dt, x) : matmul(e, x, dt);
        rhs = rhs ? kiln__emit_sub(e, rhs, prod) : kiln__emit_neg(e, prod);
    }
    if (rhs) out_tangents[0] = solve(e, o, op->primals[0], rhs, left, false);
    return rule_status(e);
}

kiln_status kiln__vjp_TRIANGULAR_SOLVE(kiln__emitter *e, const kiln__ad_op *op,
                                       kiln__value *const *cts, kiln__value **out_cts) {
    const kiln__ir_op *o = op->op;
    kiln__value *g = cts[0];
    if (!g || !kiln__ad_has_derivative(op->outs[0])) return rule_status(e);
    bool left = o->attrs->u.triangular.left_side;
    kiln__value *gb = solve(e, o, op->primals[0], g, left, true);
    if (kiln__ad_has_derivative(op->primals[1])) out_cts[1] = gb;
    if (kiln__ad_has_derivative(op->primals[0])) {
        kiln__value *x = op->outs[0];
        kiln__value *gop = left ? matmul(e, gb, swap_last(e, x)) : matmul(e, swap_last(e, x), gb);
        gop = kiln__emit_neg(e, gop);
        if (transposes(o)) gop = swap_last(e, gop);
        out_cts[0] = masked(e, gop, read_triangle(o), 1);
    }
    return rule_status(e);
}

/* ---- cholesky ------------------------------------------------------------------------------ */

/* A triangular_solve of l (lower) with b. */
static kiln__value *solve_lower(kiln__emitter *e, kiln__value *l, kiln__value *b, bool left,
                                bool transpose) {
    kiln__attrs at = {.fn = e->fn};
    at.u.triangular.left_side = left;
    at.u.triangular.lower = true;
    at.u.triangular.transpose_a = transpose ? KILN_TRANSPOSE_T : KILN_TRANSPOSE_NONE;
    kiln__value *operands[2] = {l, b};
    return kiln__emit(e, KILN_OP_TRIANGULAR_SOLVE, &at, operands, 2);
}

kiln_status kiln__jvp_CHOLESKY(kiln__emitter *e, const kiln__ad_op *op,
                               kiln__value *const *tangents, kiln__value **out_tangents) {
    const kiln__ir_op *o = op->op;
    if (!tangents[0] || !kiln__ad_has_derivative(op->outs[0])) return rule_status(e);
    bool lower = o->attrs->u.triangular.lower;
    kiln__value *l = lower ? op->outs[0] : swap_last(e, op->outs[0]);
    kiln__value *da = lower ? tangents[0] : swap_last(e, tangents[0]);
    /* the symmetric matrix the lower triangle stands for */
    kiln__value *ds =
        kiln__emit_add(e, masked(e, da, LOWER, 1), swap_last(e, masked(e, da, STRICT_LOWER, 1)));
    kiln__value *tmp = solve_lower(e, l, solve_lower(e, l, ds, true, false), false, true);
    kiln__value *dl = matmul(e, l, masked(e, tmp, LOWER, 0.5));
    out_tangents[0] = lower ? dl : swap_last(e, dl);
    return rule_status(e);
}

kiln_status kiln__vjp_CHOLESKY(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                               kiln__value **out_cts) {
    const kiln__ir_op *o = op->op;
    if (!cts[0] || !kiln__ad_has_derivative(op->primals[0])) return rule_status(e);
    bool lower = o->attrs->u.triangular.lower;
    kiln__value *l = lower ? op->outs[0] : swap_last(e, op->outs[0]);
    kiln__value *gl = lower ? cts[0] : swap_last(e, cts[0]);
    kiln__value *q = masked(e, matmul(e, swap_last(e, l), gl), LOWER, 0.5);
    kiln__value *p = solve_lower(e, l, solve_lower(e, l, q, false, false), true, true);
    kiln__value *ga =
        kiln__emit_add(e, masked(e, p, LOWER, 1), masked(e, swap_last(e, p), STRICT_LOWER, 1));
    out_cts[0] = lower ? ga : swap_last(e, ga);
    return rule_status(e);
}
