/* SPDX-License-Identifier: Apache-2.0 */
/* Differentiation rules: control flow (while, if, case, call) and optimization_barrier.
 *
 * These rules recurse into the transform (transform.h) on their regions. Forward mode
 * rebuilds the op with the tangents as extra results (if, case) or extra loop carries
 * (while); a call is inlined. Reverse mode builds a new op whose regions recompute their
 * forward ops and then run backwards; the cotangents of values a region uses from
 * outside (its free values) come out as results. A while loop differentiates in reverse
 * only when its trip count is fixed (the form kiln_fori_loop traces: a counter from a
 * constant, compared below a constant, incremented by 1): the carries of every iteration
 * are stacked by a forward loop, then a reverse loop walks them backwards. */
#include "autodiff/transform.h"

/* Referenced by rules.c so the static library links this file (see there). */
extern const char kiln__rules_control_linked;
const char kiln__rules_control_linked = 1;

#define MAX_VALUES 256

kiln_status kiln__vjp_OPTIMIZATION_BARRIER(kiln__emitter *e, const kiln__ad_op *op,
                                           kiln__value *const *cts, kiln__value **out_cts) {
    for (int32_t i = 0; i < op->n_primals; i++)
        out_cts[i] = cts[i];
    return kiln_ctx_status(e->cx);
}
kiln_status kiln__jvp_OPTIMIZATION_BARRIER(kiln__emitter *e, const kiln__ad_op *op,
                                           kiln__value *const *tangents,
                                           kiln__value **out_tangents) {
    for (int32_t i = 0; i < op->n_outs; i++)
        out_tangents[i] = tangents[i];
    return kiln_ctx_status(e->cx);
}

/* Adds ct to the cotangent of src value k. */
static bool accumulate(kiln__ad *ad, const kiln__value *k, kiln__value *ct) {
    if (!ct) return true;
    kiln__value *sum = kiln__emit_add_any(&ad->e, kiln__vmap_get(&ad->deriv, k), ct);
    return sum && kiln__vmap_put(&ad->deriv, k, sum);
}

/* ---- call: inlined ---------------------------------------------------------------------- */

static kiln_status region_vjp(kiln__ad *ad, const kiln__block *sb, kiln__value *const *cts,
                              const kiln__value *const *fv, int32_t n_fv, kiln__value **fv_cts,
                              kiln__value **arg_cts);
static int32_t op_free_values(kiln__ad *ad, const kiln__ir_op *op, const kiln__value **out);

kiln_status kiln__vjp_CALL(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                           kiln__value **out_cts) {
    kiln__ad *ad = kiln__ad_of(e);
    if (!ad) return kiln_ctx_status(e->cx);
    const kiln__block *b = op->op->regions[0];
    const kiln__value *fv[MAX_VALUES];
    kiln__value *fv_cts[MAX_VALUES];
    int32_t n_fv = op_free_values(ad, op->op, fv);
    if (n_fv < 0)
        return kiln__emit_error(e, KILN_UNIMPLEMENTED, "a call uses too many outer values");
    for (int32_t i = 0; i < b->n_args; i++)
        if (!kiln__vmap_put(&ad->primal, b->args[i], op->primals[i])) return kiln_ctx_status(e->cx);
    kiln_status s = region_vjp(ad, b, cts, fv, n_fv, fv_cts, out_cts);
    for (int32_t k = 0; k < n_fv && s == KILN_OK; k++)
        if (!accumulate(ad, fv[k], fv_cts[k])) s = kiln_ctx_status(e->cx);
    return s;
}

kiln_status kiln__jvp_CALL(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *tangents,
                           kiln__value **out_tangents) {
    kiln__ad *ad = kiln__ad_of(e);
    if (!ad) return kiln_ctx_status(e->cx);
    const kiln__block *b = op->op->regions[0];
    for (int32_t i = 0; i < b->n_args; i++)
        if (!kiln__vmap_put(&ad->primal, b->args[i], op->primals[i]) ||
            !kiln__vmap_put(&ad->deriv, b->args[i], tangents[i]))
            return kiln_ctx_status(e->cx);
    kiln_status s = kiln__ad_jvp_ops(ad, b);
    for (int32_t j = 0; j < b->n_results && s == KILN_OK; j++) {
        if (!kiln__vmap_put(&ad->primal, op->op->results[j],
                            kiln__vmap_get(&ad->primal, b->results[j])))
            return kiln_ctx_status(e->cx);
        out_tangents[j] = kiln__vmap_get(&ad->deriv, b->results[j]);
    }
    return s;
}

/* ---- if and case: forward ------------------------------------------------------------------ */

/* Sets b's results after the jvp of region sb: sb's n primal results, then the tangents of
 * its results float_of[0..nf) (zeros where none reached). */
static kiln_status set_jvp_results(kiln__ad *ad, kiln__block *b, const kiln__block *sb, int32_t n,
                                   const int32_t *float_of, int32_t nf) {
    kiln__value *res[MAX_VALUES];
    kiln_status s = KILN_OK;
    for (int32_t j = 0; j < n; j++)
        res[j] = kiln__vmap_get(&ad->primal, sb->results[j]);
    for (int32_t k = 0; k < nf && s == KILN_OK; k++) {
        const kiln__value *v = sb->results[float_of[k]];
        res[n + k] = kiln__vmap_get(&ad->deriv, v);
        if (!res[n + k]) res[n + k] = kiln__emit_zeros(&ad->e, v->type);
        if (!res[n + k]) s = kiln_ctx_status(ad->e.cx);
    }
    if (s == KILN_OK) s = kiln__block_set_results(ad->e.m, b, res, n + nf);
    return s;
}

/* After the rebuilt op nop (status s so far): maps src's n results to nop's first n and
 * gives the tangents of src's results float_of[0..nf) as nop's next nf. */
static kiln_status take_jvp_results(kiln__ad *ad, kiln_status s, const kiln__ir_op *src,
                                    const kiln__ir_op *nop, int32_t n, const int32_t *float_of,
                                    int32_t nf, kiln__value **out_tangents) {
    kiln_ctx *cx = ad->e.cx;
    if (s != KILN_OK) return kiln_ctx_status(cx) != KILN_OK ? kiln_ctx_status(cx) : s;
    for (int32_t j = 0; j < n; j++)
        if (!kiln__vmap_put(&ad->primal, src->results[j], nop->results[j]))
            return kiln_ctx_status(cx);
    for (int32_t k = 0; k < nf; k++)
        out_tangents[float_of[k]] = nop->results[n + k];
    return KILN_OK;
}

/* Gives each float value among the n of `types` a tangent slot: appends its type after the
 * n and its index to float_of. Returns how many, or -1 where they would pass MAX_VALUES. */
static int32_t add_tangent_slots(kiln__type *types, int32_t n, int32_t *float_of) {
    int32_t nf = 0;
    for (int32_t j = 0; j < n; j++)
        if (kiln_dtype_is_float(types[j].dtype)) {
            if (n + nf >= MAX_VALUES) return -1;
            float_of[nf] = j;
            types[n + nf++] = types[j];
        }
    return nf;
}

/* Emits region r of the rebuilt op nop, its block taking n_args values of `types`, and makes
 * it the block ad emits into (the caller restores the outer block); NULL on error. */
static kiln__block *enter_region(kiln__ad *ad, kiln__ir_op *nop, int32_t r,
                                 const kiln__type *types, int32_t n_args) {
    kiln__block *b = kiln__emit_region_block(&ad->e, nop, r, types, n_args);
    if (b) ad->e.block = b;
    return b;
}

/* An if or case like op's, on its predicate or index, with n results of `types`; the
 * caller builds its regions. */
static kiln__ir_op *emit_branches(kiln__emitter *e, const kiln__ad_op *op, const kiln__type *types,
                                  int32_t n) {
    const kiln__ir_op *src = op->op;
    kiln__attrs a;
    kiln__attrs_copy(&a, src->attrs, src->kind);
    a.n_results = n;
    return kiln__emit_op_typed(e, src->kind, &a, op->primals, 1, types, n);
}

/* The one forward rule of if and case: the predicate or index has no tangent, and the
 * tangents of the outer values the branches use are read from ad->deriv. */
static kiln_status branches_jvp(kiln__emitter *e, const kiln__ad_op *op,
                                kiln__value *const *tangents, kiln__value **out_tangents) {
    (void)tangents;
    kiln__ad *ad = kiln__ad_of(e);
    if (!ad) return kiln_ctx_status(e->cx);
    const kiln__ir_op *src = op->op;
    int32_t n = src->n_results;
    kiln__type types[MAX_VALUES];
    int32_t float_of[MAX_VALUES];
    for (int32_t j = 0; j < n; j++)
        types[j] = *src->results[j]->type;
    int32_t nf = add_tangent_slots(types, n, float_of);
    if (nf < 0) return kiln__emit_error(e, KILN_UNIMPLEMENTED, "too many results to differentiate");
    kiln__ir_op *nop = emit_branches(e, op, types, n + nf);
    if (!nop) return kiln_ctx_status(e->cx);
    kiln__block *outer = ad->e.block;
    kiln_status s = KILN_OK;
    for (int32_t r = 0; r < src->n_regions && s == KILN_OK; r++) {
        kiln__block *b = enter_region(ad, nop, r, NULL, 0);
        if (!b) return kiln_ctx_status(e->cx);
        const kiln__block *sb = src->regions[r];
        s = kiln__ad_jvp_ops(ad, sb);
        if (s == KILN_OK) s = set_jvp_results(ad, b, sb, n, float_of, nf);
        ad->e.block = outer;
    }
    return take_jvp_results(ad, s, src, nop, n, float_of, nf, out_tangents);
}

KILN__JVP_AS(IF, branches_jvp);
KILN__JVP_AS(CASE, branches_jvp);

/* ---- if and case: reverse ------------------------------------------------------------------ */

/* The float values any region of op uses from outside, de-duplicated. */
static int32_t op_free_values(kiln__ad *ad, const kiln__ir_op *op, const kiln__value **out) {
    int32_t n = 0;
    for (int32_t r = 0; r < op->n_regions; r++) {
        const kiln__value *fv[MAX_VALUES];
        int32_t m = kiln__block_free_values(ad->e.cx, op->regions[r], true, fv, MAX_VALUES);
        if (m < 0) return -1;
        for (int32_t k = 0; k < m; k++) {
            bool seen = false;
            for (int32_t q = 0; q < n; q++)
                seen |= out[q] == fv[k];
            if (seen) continue;
            if (n >= MAX_VALUES) return -1;
            out[n++] = fv[k];
        }
    }
    return n;
}

/* In the current block: recomputes region sb (its arguments mapped already), seeds its
 * results with cts, runs it backwards, and writes the cotangents that reach the free
 * values fv into fv_cts and those of sb's arguments into arg_cts (may be NULL). The
 * outer cotangents of fv are left as they were. */
static kiln_status region_vjp(kiln__ad *ad, const kiln__block *sb, kiln__value *const *cts,
                              const kiln__value *const *fv, int32_t n_fv, kiln__value **fv_cts,
                              kiln__value **arg_cts) {
    kiln__value *saved[MAX_VALUES];
    for (int32_t k = 0; k < n_fv; k++) {
        saved[k] = kiln__vmap_get(&ad->deriv, fv[k]);
        if (!kiln__vmap_put(&ad->deriv, fv[k], NULL)) return kiln_ctx_status(ad->e.cx);
    }
    for (int32_t i = 0; i < sb->n_args; i++)
        if (!kiln__vmap_put(&ad->deriv, sb->args[i], NULL)) return kiln_ctx_status(ad->e.cx);
    kiln_status s = kiln__ad_forward(ad, sb);
    /* Forward values of the region are fresh: drop stale cotangents of earlier visits. */
    for (const kiln__ir_op *o = sb->first; o && s == KILN_OK; o = o->next)
        for (int32_t j = 0; j < o->n_results; j++)
            if (!kiln__vmap_put(&ad->deriv, o->results[j], NULL)) s = kiln_ctx_status(ad->e.cx);
    for (int32_t j = 0; j < sb->n_results && s == KILN_OK; j++)
        if (cts[j] && kiln_dtype_is_float(sb->results[j]->type->dtype) &&
            !accumulate(ad, sb->results[j], cts[j]))
            s = kiln_ctx_status(ad->e.cx);
    if (s == KILN_OK) s = kiln__ad_backward(ad, sb);
    for (int32_t k = 0; k < n_fv; k++) {
        fv_cts[k] = kiln__vmap_get(&ad->deriv, fv[k]);
        if (!kiln__vmap_put(&ad->deriv, fv[k], saved[k]) && s == KILN_OK)
            s = kiln_ctx_status(ad->e.cx);
    }
    if (arg_cts)
        for (int32_t i = 0; i < sb->n_args; i++)
            arg_cts[i] = kiln__vmap_get(&ad->deriv, sb->args[i]);
    return s;
}

/* The one reverse rule of if and case: the predicate or index gets no cotangent; the
 * outer values the branches use get theirs through ad->deriv. */
static kiln_status branches_vjp(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                                kiln__value **out_cts) {
    (void)out_cts;
    kiln__ad *ad = kiln__ad_of(e);
    if (!ad) return kiln_ctx_status(e->cx);
    const kiln__ir_op *src = op->op;
    const kiln__value *fv[MAX_VALUES];
    int32_t n_fv = op_free_values(ad, src, fv);
    if (n_fv < 0)
        return kiln__emit_error(e, KILN_UNIMPLEMENTED, "stablehlo.%s uses too many outer values",
                                kiln__op_get_info(src->kind)->name);
    if (n_fv == 0) return KILN_OK;
    kiln__type types[MAX_VALUES];
    for (int32_t k = 0; k < n_fv; k++)
        types[k] = *fv[k]->type;
    kiln__ir_op *nop = emit_branches(e, op, types, n_fv);
    if (!nop) return kiln_ctx_status(e->cx);
    kiln__block *outer = ad->e.block;
    kiln_status s = KILN_OK;
    for (int32_t r = 0; r < src->n_regions && s == KILN_OK; r++) {
        kiln__block *b = enter_region(ad, nop, r, NULL, 0);
        if (!b) return kiln_ctx_status(e->cx);
        kiln__value *fv_cts[MAX_VALUES];
        s = region_vjp(ad, src->regions[r], cts, fv, n_fv, fv_cts, NULL);
        for (int32_t k = 0; k < n_fv && s == KILN_OK; k++) {
            if (!fv_cts[k]) fv_cts[k] = kiln__emit_zeros(&ad->e, fv[k]->type);
            if (!fv_cts[k]) s = kiln_ctx_status(e->cx);
        }
        if (s == KILN_OK) s = kiln__block_set_results(ad->e.m, b, fv_cts, n_fv);
        ad->e.block = outer;
    }
    for (int32_t k = 0; k < n_fv && s == KILN_OK; k++)
        if (!accumulate(ad, fv[k], nop->results[k])) s = kiln_ctx_status(e->cx);
    return s;
}

KILN__VJP_AS(IF, branches_vjp);
KILN__VJP_AS(CASE, branches_vjp);

/* ---- while: forward ------------------------------------------------------------------------ */

kiln_status kiln__jvp_WHILE(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *tangents,
                            kiln__value **out_tangents) {
    kiln__ad *ad = kiln__ad_of(e);
    if (!ad) return kiln_ctx_status(e->cx);
    const kiln__ir_op *src = op->op;
    int32_t n = src->n_operands;
    int32_t float_of[MAX_VALUES];
    kiln__type types[MAX_VALUES];
    kiln__value *inits[MAX_VALUES];
    for (int32_t j = 0; j < n; j++) {
        types[j] = *src->operands[j]->type;
        inits[j] = op->primals[j];
    }
    int32_t nf = add_tangent_slots(types, n, float_of);
    if (nf < 0) return kiln__emit_error(e, KILN_UNIMPLEMENTED, "too many loop carries");
    for (int32_t k = 0; k < nf; k++) {
        int32_t j = float_of[k];
        inits[n + k] = tangents[j] ? tangents[j] : kiln__emit_zeros(e, &types[j]);
        if (!inits[n + k]) return kiln_ctx_status(e->cx);
    }
    kiln__attrs a;
    kiln__attrs_copy(&a, src->attrs, src->kind);
    a.n_results = n + nf;
    kiln__ir_op *nop = kiln__emit_op_typed(e, KILN_OP_WHILE, &a, inits, n + nf, types, n + nf);
    if (!nop) return kiln_ctx_status(e->cx);
    kiln__block *outer = ad->e.block;
    kiln_status s = KILN_OK;
    for (int32_t r = 0; r < 2 && s == KILN_OK; r++) {
        const kiln__block *sb = src->regions[r];
        kiln__block *b = enter_region(ad, nop, r, types, n + nf);
        if (!b) return kiln_ctx_status(e->cx);
        for (int32_t j = 0; j < n; j++)
            if (!kiln__vmap_put(&ad->primal, sb->args[j], b->args[j]) ||
                !kiln__vmap_put(&ad->deriv, sb->args[j], NULL))
                s = kiln_ctx_status(e->cx);
        for (int32_t k = 0; k < nf && s == KILN_OK; k++)
            if (!kiln__vmap_put(&ad->deriv, sb->args[float_of[k]], b->args[n + k]))
                s = kiln_ctx_status(e->cx);
        if (r == 0) {
            /* cond: forward only, its one result the predicate */
            if (s == KILN_OK) s = kiln__ad_forward(ad, sb);
            if (s == KILN_OK) s = set_jvp_results(ad, b, sb, 1, NULL, 0);
        } else {
            if (s == KILN_OK) s = kiln__ad_jvp_ops(ad, sb);
            if (s == KILN_OK) s = set_jvp_results(ad, b, sb, n, float_of, nf);
        }
        ad->e.block = outer;
    }
    return take_jvp_results(ad, s, src, nop, n, float_of, nf, out_tangents);
}

/* ---- while: reverse -------------------------------------------------------------------------- */

static bool const_i64(const kiln__value *v, int64_t *out) {
    if (!v || !v->def || v->def->kind != KILN_OP_CONSTANT) return false;
    const kiln_tensor *t = v->def->attrs->u.constant;
    if (!t || kiln_tensor_dtype(t) != KILN_I64 || kiln_tensor_shape(t)->rank != 0) return false;
    const int64_t *d = kiln_tensor_data((kiln_tensor *)t);
    if (!d) return false;
    *out = d[0];
    return true;
}

/* The trip count of a fori-style loop: carry 0 an i64 counter starting at a constant,
 * cond `counter < constant`, body result 0 `counter + 1`. */
static bool trip_count(const kiln__ir_op *w, int64_t *lower, int64_t *n) {
    int64_t lo, hi, step;
    if (w->n_operands < 1 || !const_i64(w->operands[0], &lo)) return false;
    const kiln__block *cond = w->regions[0], *body = w->regions[1];
    const kiln__value *c = cond->results[0];
    if (!c->def || c->def->kind != KILN_OP_COMPARE ||
        c->def->attrs->u.compare.direction != KILN_CMP_LT || c->def->operands[0] != cond->args[0] ||
        !const_i64(c->def->operands[1], &hi))
        return false;
    const kiln__value *next = body->results[0];
    if (!next->def || next->def->kind != KILN_OP_ADD || next->def->operands[0] != body->args[0] ||
        !const_i64(next->def->operands[1], &step) || step != 1)
        return false;
    *lower = lo;
    *n = hi > lo ? hi - lo : 0;
    return true;
}

static kiln__value *i64(kiln__emitter *e, int64_t v) {
    return kiln__emit_scalar(e, KILN_I64, (double)v);
}

/* x with a leading dimension of 1 (for stacking). */
static kiln_shape with_lead(const kiln_shape *s, int64_t lead) {
    kiln_shape r = {.rank = s->rank + 1};
    r.dims[0] = lead;
    for (int32_t d = 0; d < s->rank; d++)
        r.dims[d + 1] = s->dims[d];
    return r;
}

static kiln__value *dyn_index(kiln__emitter *e, kiln__value *x, kiln__value *update,
                              kiln__value *at, int32_t rank) {
    kiln__value *ops[KILN_MAX_RANK + 3];
    int32_t n = 0;
    ops[n++] = x;
    if (update) ops[n++] = update;
    ops[n++] = at;
    kiln__value *zero = i64(e, 0);
    for (int32_t d = 1; d < rank; d++)
        ops[n++] = zero;
    if (!zero) return NULL;
    kiln__attrs a = {.fn = e->fn};
    if (update) return kiln__emit(e, KILN_OP_DYNAMIC_UPDATE_SLICE, &a, ops, n);
    a.u.slice_sizes.count = rank;
    a.u.slice_sizes.v[0] = 1;
    for (int32_t d = 1; d < rank; d++)
        a.u.slice_sizes.v[d] = x->type->shape.dims[d];
    return kiln__emit(e, KILN_OP_DYNAMIC_SLICE, &a, ops, n);
}

/* A while whose cond is `arg0 < limit` (arg0 an i64 counter). */
static kiln__ir_op *counted_loop(kiln__emitter *e, kiln__value *const *inits,
                                 const kiln__type *types, int32_t n, int64_t limit,
                                 kiln__block **out_body) {
    kiln__attrs a = {.fn = e->fn, .n_regions = 2, .n_results = n};
    kiln__ir_op *w = kiln__emit_op_typed(e, KILN_OP_WHILE, &a, inits, n, types, n);
    kiln__block *cond = kiln__emit_region_block(e, w, 0, types, n);
    kiln__block *body = kiln__emit_region_block(e, w, 1, types, n);
    if (!cond || !body) return NULL;
    kiln__emitter ce = *e;
    ce.block = cond;
    kiln__value *lt = kiln__emit_compare(&ce, KILN_CMP_LT, cond->args[0], i64(&ce, limit));
    if (!lt || kiln__block_set_results(e->m, cond, &lt, 1) != KILN_OK) return NULL;
    *out_body = body;
    return w;
}

/* Is carry j only written into? Its argument's one use starts a chain of
 * dynamic_update_slice ops (each the next one's operand 0, used nowhere else) whose last
 * result the body returns as carry j: a kiln_scan's stack of ys. The backward pass never
 * needs such a carry's value (the vjp of dynamic_update_slice reads only its type), so it
 * is not stacked per iteration: that would take n_iter copies of the whole stack. */
static bool write_only(const kiln__block *body, int32_t j) {
    const kiln__value *v = body->results[j];
    if (v->uses != 1) return false;
    for (int32_t hops = 0; hops < 1024; hops++) {
        if (v == body->args[j]) return hops > 0;
        const kiln__ir_op *d = v->def;
        if (!d || d->kind != KILN_OP_DYNAMIC_UPDATE_SLICE || d->block != body) return false;
        v = d->operands[0];
        if (v->uses != 1) return false;
    }
    return false;
}

/* Emits the loop w (fixed count: lower, n_iter > 0) from the initial carries `inits` as a
 * loop that also stacks the carries each iteration starts with: results 0..n-1 are w's,
 * n..2n-1 the stacks ([n_iter, ...] each; for a write-only carry a zero of its own type,
 * passed through). */
static kiln__ir_op *stacking_loop(kiln__ad *ad, const kiln__ir_op *w, kiln__value *const *prims,
                                  int64_t lower, int64_t n_iter) {
    kiln__emitter *e = &ad->e;
    int32_t n = w->n_operands, total = 2 * n - 1;
    const kiln__block *body = w->regions[1];
    kiln__value *inits[MAX_VALUES] = {0};
    kiln__type types[MAX_VALUES] = {0};
    for (int32_t j = 0; j < n; j++) {
        inits[j] = prims[j];
        types[j] = *w->operands[j]->type;
    }
    /* Carry 0 is the counter, known in every iteration: not stacked. */
    for (int32_t j = 1; j < n; j++) {
        types[n + j - 1] = write_only(body, j)
                               ? types[j]
                               : (kiln__type){.dtype = types[j].dtype, .shape = with_lead(&types[j].shape, n_iter)};
        inits[n + j - 1] = kiln__emit_zeros(e, &types[n + j - 1]);
        if (!inits[n + j - 1]) return NULL;
    }
    kiln__block *fb;
    kiln__ir_op *fw = counted_loop(e, inits, types, total, lower + n_iter, &fb);
    if (!fw) return NULL;
    kiln__block *outer = ad->e.block;
    kiln_status s = KILN_OK;
    ad->e.block = fb;
    kiln__value *res[MAX_VALUES];
    kiln__value *k = kiln__emit_sub(&ad->e, fb->args[0], i64(&ad->e, lower));
    for (int32_t j = 0; j < n && s == KILN_OK; j++) {
        if (!kiln__vmap_put(&ad->primal, body->args[j], fb->args[j])) s = kiln_ctx_status(e->cx);
        if (j == 0) continue;
        if (write_only(body, j)) {
            res[n + j - 1] = fb->args[n + j - 1];
            continue;
        }
        kiln_shape one = with_lead(&types[j].shape, 1);
        kiln__value *u = kiln__emit_reshape(&ad->e, fb->args[j], &one);
        res[n + j - 1] = dyn_index(&ad->e, fb->args[n + j - 1], u, k, one.rank);
    }
    if (s == KILN_OK) s = kiln__ad_forward(ad, body);
    for (int32_t j = 0; j < n && s == KILN_OK; j++)
        res[j] = kiln__vmap_get(&ad->primal, body->results[j]);
    if (s == KILN_OK && kiln_ctx_status(e->cx) == KILN_OK)
        s = kiln__block_set_results(ad->e.m, fb, res, total);
    ad->e.block = outer;
    if (s != KILN_OK || kiln_ctx_status(e->cx) != KILN_OK) return NULL;
    for (int32_t j = 1; j < n; j++)
        if (!kiln__vmap_put(&ad->stacks, w->results[j], fw->results[n + j - 1])) return NULL;
    return fw;
}

kiln_status kiln__ad_forward_loop(kiln__ad *ad, const kiln__ir_op *w, bool *done) {
    *done = false;
    int64_t lower, n_iter;
    bool floats = false;
    for (int32_t j = 0; j < w->n_operands; j++)
        floats |= kiln_dtype_is_float(w->operands[j]->type->dtype);
    if (!floats || w->n_operands < 2 || 2 * w->n_operands + 2 >= MAX_VALUES ||
        !trip_count(w, &lower, &n_iter) || n_iter == 0)
        return KILN_OK;
    kiln__value *prims[MAX_VALUES];
    for (int32_t j = 0; j < w->n_operands; j++) {
        prims[j] = kiln__vmap_get(&ad->primal, w->operands[j]);
        if (!prims[j])
            return kiln__emit_error(&ad->e, KILN_INTERNAL, "internal: a loop init is not defined");
    }
    kiln__ir_op *fw = stacking_loop(ad, w, prims, lower, n_iter);
    if (!fw) return kiln_ctx_status(ad->e.cx);
    for (int32_t j = 0; j < w->n_operands; j++)
        if (!kiln__vmap_put(&ad->primal, w->results[j], fw->results[j]))
            return kiln_ctx_status(ad->e.cx);
    *done = true;
    return KILN_OK;
}

kiln_status kiln__vjp_WHILE(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                            kiln__value **out_cts) {
    kiln__ad *ad = kiln__ad_of(e);
    if (!ad) return kiln_ctx_status(e->cx);
    const kiln__ir_op *src = op->op;
    int64_t lower, n_iter;
    if (!trip_count(src, &lower, &n_iter))
        return kiln__emit_error(e, KILN_UNIMPLEMENTED,
                                "reverse-mode differentiation of stablehlo.while needs a loop "
                                "with a fixed trip count (kiln_fori_loop); use kiln_jvp, or "
                                "write the loop with kiln_fori_loop");
    int32_t n = src->n_operands;
    const kiln__block *body = src->regions[1];
    if (n < 2) return KILN_OK; /* only the counter: nothing to differentiate */
    if (2 * n + 2 >= MAX_VALUES)
        return kiln__emit_error(e, KILN_UNIMPLEMENTED, "too many loop carries");
    if (n_iter == 0) {
        for (int32_t j = 0; j < n; j++)
            out_cts[j] = cts[j];
        return KILN_OK;
    }
    /* 1. The carries each iteration started with (1..n-1; 0 is the counter): stacked by
     * the forward pass, or by a loop of their own here. */
    kiln__value *stacks[MAX_VALUES] = {0};
    kiln__type types[MAX_VALUES];
    int32_t floats[MAX_VALUES], nf = 0; /* the float carries */
    kiln_status s = KILN_OK;
    for (int32_t j = 0; j < n; j++) {
        types[j] = *src->operands[j]->type;
        stacks[j] = j ? kiln__vmap_get(&ad->stacks, src->results[j]) : NULL;
        if (kiln_dtype_is_float(types[j].dtype)) floats[nf++] = j;
    }
    if (!stacks[1]) {
        kiln__ir_op *fw = stacking_loop(ad, src, op->primals, lower, n_iter);
        if (!fw) return kiln_ctx_status(e->cx);
        for (int32_t j = 1; j < n; j++)
            stacks[j] = fw->results[n + j - 1];
    }
    kiln__block *outer = ad->e.block;

    /* 2. The reverse loop: (j, float carry cotangents..., free-value cotangents...). */
    const kiln__value *fv[MAX_VALUES];
    int32_t n_fv = kiln__block_free_values(e->cx, body, true, fv, MAX_VALUES - 2 * n - 2);
    if (n_fv < 0)
        return kiln__emit_error(e, KILN_UNIMPLEMENTED, "the loop uses too many outer values");
    int32_t nr = 1 + nf + n_fv;
    kiln__value *rinit[MAX_VALUES] = {0};
    kiln__type rtypes[MAX_VALUES] = {0};
    rtypes[0] = (kiln__type){.dtype = KILN_I64, .shape = {.rank = 0}};
    rinit[0] = i64(e, 0);
    for (int32_t q = 0; q < nf; q++) {
        int32_t j = floats[q];
        rtypes[1 + q] = types[j];
        rinit[1 + q] = cts[j] ? cts[j] : kiln__emit_zeros(e, &types[j]);
    }
    for (int32_t q = 0; q < n_fv; q++) {
        rtypes[1 + nf + q] = *fv[q]->type;
        rinit[1 + nf + q] = kiln__emit_zeros(e, fv[q]->type);
    }
    for (int32_t i = 0; i < nr; i++)
        if (!rinit[i]) return kiln_ctx_status(e->cx);
    kiln__block *rb;
    kiln__ir_op *rw = counted_loop(e, rinit, rtypes, nr, n_iter, &rb);
    if (!rw) return kiln_ctx_status(e->cx);
    ad->e.block = rb;
    {
        kiln__value *res[MAX_VALUES] = {0}, *arg_cts[MAX_VALUES] = {0}, *fv_cts[MAX_VALUES] = {0};
        kiln__value *k = kiln__emit_sub(&ad->e, i64(&ad->e, n_iter - 1), rb->args[0]);
        kiln__value *counter = kiln__emit_add(&ad->e, k, i64(&ad->e, lower));
        if (!counter || !kiln__vmap_put(&ad->primal, body->args[0], counter))
            s = kiln_ctx_status(e->cx);
        for (int32_t j = 1; j < n && s == KILN_OK; j++) {
            kiln__value *stack = stacks[j];
            kiln__value *c = stack; /* a write-only carry: any value of its type will do */
            if (!write_only(body, j)) {
                kiln__value *row = dyn_index(&ad->e, stack, NULL, k, stack->type->shape.rank);
                c = kiln__emit_reshape(&ad->e, row, &types[j].shape);
            }
            if (!c || !kiln__vmap_put(&ad->primal, body->args[j], c)) s = kiln_ctx_status(e->cx);
        }
        kiln__value *body_cts[MAX_VALUES] = {0};
        for (int32_t q = 0; q < nf; q++)
            body_cts[floats[q]] = rb->args[1 + q];
        if (s == KILN_OK) s = region_vjp(ad, body, body_cts, fv, n_fv, fv_cts, arg_cts);
        res[0] = kiln__emit_add(&ad->e, rb->args[0], i64(&ad->e, 1));
        for (int32_t q = 0; q < nf && s == KILN_OK; q++) {
            int32_t j = floats[q];
            res[1 + q] = arg_cts[j] ? arg_cts[j] : kiln__emit_zeros(&ad->e, &types[j]);
        }
        for (int32_t q = 0; q < n_fv && s == KILN_OK; q++)
            res[1 + nf + q] = fv_cts[q] ? kiln__emit_add(&ad->e, rb->args[1 + nf + q], fv_cts[q])
                                        : rb->args[1 + nf + q];
        if (s == KILN_OK && kiln_ctx_status(e->cx) == KILN_OK)
            s = kiln__block_set_results(ad->e.m, rb, res, nr);
    }
    ad->e.block = outer;
    if (s != KILN_OK || kiln_ctx_status(e->cx) != KILN_OK) return kiln_ctx_status(e->cx);
    for (int32_t q = 0; q < nf; q++)
        out_cts[floats[q]] = rw->results[1 + q];
    for (int32_t q = 0; q < n_fv; q++)
        if (!accumulate(ad, fv[q], rw->results[1 + nf + q])) return kiln_ctx_status(e->cx);
    return KILN_OK;
}
