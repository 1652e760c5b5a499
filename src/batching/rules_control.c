/* SPDX-License-Identifier: Apache-2.0 */
/* Batching rules of control flow. A loop or branch whose predicate is the same for every
 * example stays one loop or branch with batched bodies. A batched predicate cannot choose
 * one path for the whole batch: a batched `if`/`case` runs every branch and selects per
 * example; a batched `while` runs until no example's condition holds, each example's
 * carries kept as they were once its own condition turned false (a masked carry). */
#include <string.h>

#include "batching/batch.h"
#include "ops/custom_call.h"

const char kiln__batch_control_linked = 1;

#define MAX_VALUES 256

/* A batched i1 [B] as a mask over the batched shape of `like` ([B] + S). */
static kiln__value *mask_like(kiln__batch *b, kiln__value *lane, kiln__value *like) {
    kiln_dims dims = {.count = 1, .v = {0}};
    return kiln__emit_broadcast(&b->e, lane, &like->type->shape, &dims);
}

/* Batches block src into dst (whose arguments the caller mapped), then its results, each
 * broadcast when want[j] (NULL: as they come; their batchedness into got[j] then). */
static kiln_status batch_region(kiln__batch *b, const kiln__block *src, kiln__block *dst,
                                const bool *want, bool *got, kiln__value **res) {
    kiln__block *saved = b->e.block;
    b->e.block = dst;
    kiln_status s = kiln__batch_block(b, src);
    for (int32_t j = 0; j < src->n_results && s == KILN_OK; j++) {
        const kiln__value *r = src->results[j];
        bool is = kiln__batch_is(b, r);
        res[j] = kiln__batch_val(b, r);
        if (want && want[j]) res[j] = kiln__batch_broadcast(b, res[j], is);
        if (got) got[j] = is;
        if (want && !want[j] && is)
            s = kiln__emit_error(&b->e, KILN_INTERNAL,
                                 "internal: a batched result of a region analysed as unbatched");
        if (!res[j]) s = kiln_ctx_status(b->e.cx);
    }
    b->e.block = saved;
    return s;
}

static bool map_args(kiln__batch *b, const kiln__block *src, const kiln__block *dst,
                     const bool *batched) {
    for (int32_t i = 0; i < src->n_args; i++)
        if (!kiln__batch_map(b, src->args[i], dst->args[i], batched[i])) return false;
    return true;
}

/* The batched i1 [B] predicate of a while's cond, reduced to "any example still running". */
static kiln__value *any_lane(kiln__batch *b, kiln__value *lane) {
    kiln__value *init = kiln__emit_scalar(&b->e, KILN_BOOL, 0);
    if (!init) return NULL;
    kiln__attrs a = {.fn = b->e.fn, .n_regions = 1, .n_results = 1};
    a.region[0] = kiln_region_or();
    a.u.reduce_dims = (kiln_dims){.count = 1, .v = {0}};
    kiln__value *ops[2] = {lane, init};
    return kiln__emit(&b->e, KILN_OP_REDUCE, &a, ops, 2);
}

kiln_status kiln__batch_WHILE(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                              bool *out_batched) {
    const kiln__ir_op *w = op->op;
    const kiln__block *cond = w->regions[0], *body = w->regions[1];
    int32_t n = w->n_results;
    if (n > MAX_VALUES)
        return kiln__emit_error(&b->e, KILN_UNIMPLEMENTED, "a while with more than %d carries",
                                MAX_VALUES);
    /* Which carries become batched: those batched on entry, and any the body makes so,
     * until nothing changes. */
    bool cb[MAX_VALUES], rb[MAX_VALUES], pred = false;
    memcpy(cb, op->batched, (size_t)n * sizeof *cb);
    for (bool changed = true; changed;) {
        kiln_status s = kiln__batch_analyse(b, body, cb, rb);
        if (s != KILN_OK) return s;
        changed = false;
        for (int32_t j = 0; j < n; j++)
            if (rb[j] && !cb[j]) cb[j] = changed = true;
    }
    kiln_status s = kiln__batch_analyse(b, cond, cb, &pred);
    if (s != KILN_OK) return s;
    if (pred)
        for (int32_t j = 0; j < n; j++)
            cb[j] = true; /* the mask makes every carry differ per example */

    kiln__type types[MAX_VALUES];
    kiln__value *inits[MAX_VALUES], *res[MAX_VALUES];
    for (int32_t j = 0; j < n; j++) {
        const kiln__type *t = w->results[j]->type;
        types[j] = cb[j] ? kiln__batch_type(b, t) : *t;
        inits[j] = cb[j] ? kiln__batch_broadcast(b, op->in[j], op->batched[j]) : op->in[j];
    }
    kiln__attrs a = kiln__batch_attrs(w);
    if (pred) a.u.loop.known = false; /* each example stops on its own */
    kiln__ir_op *nw = kiln__emit_op_typed(&b->e, KILN_OP_WHILE, &a, inits, n, types, n);
    kiln__block *ncond = kiln__emit_region_block(&b->e, nw, 0, types, n);
    kiln__block *nbody = kiln__emit_region_block(&b->e, nw, 1, types, n);
    if (!ncond || !nbody) return kiln_ctx_status(b->e.cx);

    /* The condition: the batched predicate reduced to "any example still running". */
    kiln__value *p = NULL;
    if (!map_args(b, cond, ncond, cb)) return kiln_ctx_status(b->e.cx);
    if ((s = batch_region(b, cond, ncond, NULL, NULL, &p)) != KILN_OK) return s;
    if (pred) {
        kiln__block *saved = b->e.block;
        b->e.block = ncond;
        p = any_lane(b, p);
        b->e.block = saved;
    }
    if (!p || kiln__block_set_results(b->e.m, ncond, &p, 1) != KILN_OK)
        return kiln_ctx_status(b->e.cx);

    /* The body; with a batched predicate, each example's new carries only where its own
     * condition holds (computed again from the carries the iteration starts with). */
    kiln__value *lane = NULL;
    if (pred) {
        if (!map_args(b, cond, nbody, cb)) return kiln_ctx_status(b->e.cx);
        if ((s = batch_region(b, cond, nbody, NULL, NULL, &lane)) != KILN_OK) return s;
    }
    if (!map_args(b, body, nbody, cb)) return kiln_ctx_status(b->e.cx);
    if ((s = batch_region(b, body, nbody, cb, NULL, res)) != KILN_OK) return s;
    if (pred) {
        kiln__block *saved = b->e.block;
        b->e.block = nbody;
        for (int32_t j = 0; j < n; j++)
            res[j] = kiln__emit_select(&b->e, mask_like(b, lane, res[j]), res[j], nbody->args[j]);
        b->e.block = saved;
        for (int32_t j = 0; j < n; j++)
            if (!res[j]) return kiln_ctx_status(b->e.cx);
    }
    if ((s = kiln__block_set_results(b->e.m, nbody, res, n)) != KILN_OK) return s;
    for (int32_t j = 0; j < n; j++) {
        out[j] = nw->results[j];
        out_batched[j] = cb[j];
    }
    return KILN_OK;
}

/* if and case: branch r of op is region r (no arguments). With an unbatched selector, one
 * op whose branches are batched (a result batched in one branch is broadcast in the
 * others); with a batched one, every branch inlined and the results selected per example:
 * pick(r) says where branch r's results win over those of the branches after it. */
static kiln_status branches(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                            bool *out_batched) {
    const kiln__ir_op *x = op->op;
    int32_t n = x->n_results, nb = x->n_regions;
    if (n > MAX_VALUES)
        return kiln__emit_error(&b->e, KILN_UNIMPLEMENTED, "stablehlo.%s with more than %d results",
                                kiln__op_get_info(x->kind)->name, MAX_VALUES);
    kiln__value *res[MAX_VALUES];
    bool got[MAX_VALUES];
    if (!op->batched[0]) {
        bool ob[MAX_VALUES] = {false}, rb[MAX_VALUES];
        for (int32_t r = 0; r < nb; r++) {
            kiln_status s = kiln__batch_analyse(b, x->regions[r], NULL, rb);
            if (s != KILN_OK) return s;
            for (int32_t j = 0; j < n; j++)
                ob[j] |= rb[j];
        }
        kiln__type types[MAX_VALUES];
        for (int32_t j = 0; j < n; j++)
            types[j] = ob[j] ? kiln__batch_type(b, x->results[j]->type) : *x->results[j]->type;
        kiln__attrs a = kiln__batch_attrs(x);
        kiln__ir_op *nx = kiln__emit_op_typed(&b->e, x->kind, &a, op->in, 1, types, n);
        for (int32_t r = 0; r < nb; r++) {
            kiln__block *blk = kiln__emit_region_block(&b->e, nx, r, NULL, 0);
            if (!blk) return kiln_ctx_status(b->e.cx);
            kiln_status s = batch_region(b, x->regions[r], blk, ob, NULL, res);
            if (s == KILN_OK) s = kiln__block_set_results(b->e.m, blk, res, n);
            if (s != KILN_OK) return s;
        }
        for (int32_t j = 0; j < n; j++) {
            out[j] = nx->results[j];
            out_batched[j] = ob[j];
        }
        return KILN_OK;
    }
    /* Batched: the last branch first, then each earlier one selected over it. */
    kiln__value *sel[MAX_VALUES];
    for (int32_t r = nb - 1; r >= 0; r--) {
        kiln_status s = batch_region(b, x->regions[r], b->e.block, NULL, got, res);
        if (s != KILN_OK) return s;
        for (int32_t j = 0; j < n; j++)
            res[j] = kiln__batch_broadcast(b, res[j], got[j]);
        if (r == nb - 1) {
            memcpy(sel, res, (size_t)n * sizeof *sel);
            continue;
        }
        /* if: branch 0 (true) where pred; case: branch r where index == r. */
        kiln__value *lane = op->in[0];
        if (x->kind == KILN_OP_CASE)
            lane = kiln__emit_compare(&b->e, KILN_CMP_EQ, op->in[0],
                                      kiln__emit_full_like(&b->e, op->in[0], (double)r));
        for (int32_t j = 0; j < n; j++)
            sel[j] = kiln__emit_select(&b->e, mask_like(b, lane, res[j]), res[j], sel[j]);
    }
    for (int32_t j = 0; j < n; j++) {
        out[j] = sel[j];
        out_batched[j] = true;
    }
    return kiln_ctx_status(b->e.cx);
}

KILN__BATCH_AS(IF, branches);

KILN__BATCH_AS(CASE, branches);

/* A call is inlined; one with a custom derivative runs per example instead, so that the
 * derivative stays its own. */
kiln_status kiln__batch_CALL(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                             bool *out_batched) {
    const kiln__ir_op *c = op->op;
    if (c->attrs->mark == KILN__MARK_CUSTOM_VJP || c->n_regions != 1 || !c->regions[0])
        return kiln__batch_by_loop(b, op, out, out_batched);
    const kiln__block *callee = c->regions[0];
    for (int32_t i = 0; i < callee->n_args && i < op->n_in; i++)
        if (!kiln__batch_map(b, callee->args[i], op->in[i], op->batched[i]))
            return kiln_ctx_status(b->e.cx);
    return batch_region(b, callee, b->e.block, NULL, out_batched, out);
}

/* Each value passes the barrier as it is (a stop_gradient stays one). */
kiln_status kiln__batch_OPTIMIZATION_BARRIER(kiln__batch *b, const kiln__batch_op *op,
                                             kiln__value **out, bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    kiln__ir_op *n = kiln__emit_op(&b->e, KILN_OP_OPTIMIZATION_BARRIER, &a, op->in, op->n_in);
    for (int32_t j = 0; n && j < n->n_results; j++) {
        out[j] = n->results[j];
        out_batched[j] = op->batched[j];
    }
    return kiln_ctx_status(b->e.cx);
}

/* custom_call: what its target computes is not kiln's to know, so it has no batched form,
 * and a loop of calls would change what a target with side effects does. */
kiln_status kiln__batch_CUSTOM_CALL(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                    bool *out_batched) {
    (void)out, (void)out_batched;
    const char *target = kiln__custom_call_target(op->op->attrs);
    return kiln__emit_error(&b->e, KILN_UNIMPLEMENTED,
                            "stablehlo.custom_call @%s cannot be batched (kiln does not know "
                            "what its target computes)",
                            target ? target : "?");
}
