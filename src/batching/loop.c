/* SPDX-License-Identifier: Apache-2.0 */
/* The batching of an op without a rule: a loop over the batch (batch.h). */
#include <stdio.h>

#include "base/alloc.h"
#include "batching/batch.h"

#define MAX_VALUES 256

static kiln__value *i64(kiln__emitter *e, int64_t v) {
    return kiln__emit_scalar(e, KILN_I64, (double)v);
}

/* Example `at` of a batched value x ([B, ...] -> [...]). */
static kiln__value *example(kiln__emitter *e, kiln__value *x, kiln__value *at) {
    if (!x) return NULL;
    int32_t rank = x->type->shape.rank;
    kiln__value *ops[KILN_MAX_RANK + 1];
    ops[0] = x;
    ops[1] = at;
    kiln__value *zero = rank > 1 ? i64(e, 0) : NULL;
    for (int32_t d = 1; d < rank; d++)
        ops[d + 1] = zero;
    kiln__attrs a = {.fn = e->fn};
    a.u.slice_sizes.count = rank;
    a.u.slice_sizes.v[0] = 1;
    kiln_shape one = {.rank = rank - 1};
    for (int32_t d = 1; d < rank; d++) {
        a.u.slice_sizes.v[d] = x->type->shape.dims[d];
        one.dims[d - 1] = x->type->shape.dims[d];
    }
    kiln__value *s = kiln__emit(e, KILN_OP_DYNAMIC_SLICE, &a, ops, rank + 1);
    return kiln__emit_reshape(e, s, &one);
}

/* stack with example `at` replaced by x ([...] into [B, ...]). */
static kiln__value *store(kiln__emitter *e, kiln__value *stack, kiln__value *x, kiln__value *at) {
    if (!x) return NULL;
    int32_t rank = stack->type->shape.rank;
    kiln_shape lead = stack->type->shape;
    lead.dims[0] = 1;
    kiln__value *ops[KILN_MAX_RANK + 2];
    ops[0] = stack;
    ops[1] = kiln__emit_reshape(e, x, &lead);
    ops[2] = at;
    kiln__value *zero = rank > 1 ? i64(e, 0) : NULL;
    for (int32_t d = 1; d < rank; d++)
        ops[d + 2] = zero;
    kiln__attrs a = {.fn = e->fn};
    return kiln__emit(e, KILN_OP_DYNAMIC_UPDATE_SLICE, &a, ops, rank + 2);
}

kiln_status kiln__batch_by_loop(kiln__batch *b, const kiln__batch_op *v, kiln__value **out,
                                bool *out_batched) {
    const kiln__ir_op *op = v->op;
    kiln__emitter *e = &b->e;
    kiln_ctx *cx = e->cx;
    int32_t n = op->n_results + 1;
    if (n > MAX_VALUES)
        return kiln__emit_error(e, KILN_UNIMPLEMENTED,
                                "batching stablehlo.%s by a loop: more than %d results",
                                kiln__op_get_info(op->kind)->name, MAX_VALUES - 1);
    for (int32_t j = 0; j < op->n_results; j++)
        if (op->results[j]->type->shape.rank >= KILN_MAX_RANK)
            return kiln__emit_error(e, KILN_UNIMPLEMENTED,
                                    "a value of rank %d cannot gain a batch dimension (at most "
                                    "%d)",
                                    (int)op->results[j]->type->shape.rank, KILN_MAX_RANK);
    /* The carries: the counter, then a stack per result. */
    kiln__type types[MAX_VALUES];
    kiln__value *inits[MAX_VALUES], *next[MAX_VALUES];
    types[0] = (kiln__type){.dtype = KILN_I64, .shape = {.rank = 0}};
    inits[0] = i64(e, 0);
    for (int32_t j = 0; j < op->n_results; j++) {
        types[j + 1] = kiln__batch_type(b, op->results[j]->type);
        inits[j + 1] = kiln__emit_zeros(e, &types[j + 1]);
    }
    kiln__attrs a = {.fn = e->fn, .n_regions = 2, .n_results = n};
    a.u.loop.lower = 0;
    a.u.loop.upper = b->size;
    a.u.loop.known = true;
    char note[160];
    snprintf(note, sizeof note,
             "kiln_vmap: stablehlo.%s has no batching rule here: it runs in a loop over the "
             "batch, once per example",
             kiln__op_get_info(op->kind)->name);
    if (kiln__module_note(e->m, note) != KILN_OK) return kiln_ctx_status(cx);
    kiln__ir_op *w = kiln__emit_op_typed(e, KILN_OP_WHILE, &a, inits, n, types, n);
    kiln__block *cond = kiln__emit_region_block(e, w, 0, types, n);
    kiln__block *body = kiln__emit_region_block(e, w, 1, types, n);
    if (!cond || !body) return kiln_ctx_status(cx);
    kiln__emitter ce = *e, be = *e;
    ce.block = cond;
    be.block = body;
    kiln__value *lt = kiln__emit_compare(&ce, KILN_CMP_LT, cond->args[0], i64(&ce, b->size));
    if (!lt || kiln__block_set_results(e->m, cond, &lt, 1) != KILN_OK) return kiln_ctx_status(cx);

    /* The body: the op on example i of its batched operands and of the batched values its
     * regions use. */
    kiln__value *at = body->args[0];
    kiln__vmap local;
    kiln__vmap_init(&local, cx);
    bool ok = true;
    for (int32_t i = 0; i < v->n_in && ok; i++)
        ok = kiln__vmap_put(&local, op->operands[i],
                            v->batched[i] ? example(&be, v->in[i], at) : v->in[i]);
    const kiln__value *fv[MAX_VALUES];
    for (int32_t r = 0; r < op->n_regions && ok; r++) {
        int32_t m = kiln__block_free_values(cx, op->regions[r], false, fv, MAX_VALUES);
        if (m < 0) {
            kiln__emit_error(e, KILN_UNIMPLEMENTED,
                             "batching stablehlo.%s by a loop: its regions use more than %d "
                             "values from outside",
                             kiln__op_get_info(op->kind)->name, MAX_VALUES);
            ok = false;
        }
        for (int32_t k = 0; k < m && ok; k++) {
            kiln__value *x = kiln__batch_val(b, fv[k]);
            ok = kiln__vmap_put(&local, fv[k], kiln__batch_is(b, fv[k]) ? example(&be, x, at) : x);
        }
    }
    kiln__ir_op *copy =
        ok && kiln_ctx_status(cx) == KILN_OK ? kiln__clone_op(e->m, body, op, &local) : NULL;
    kiln__vmap_free(&local);
    if (!copy) return kiln_ctx_status(cx);
    next[0] = kiln__emit_add(&be, at, i64(&be, 1));
    for (int32_t j = 0; j < op->n_results; j++)
        next[j + 1] = store(&be, body->args[j + 1], copy->results[j], at);
    for (int32_t j = 0; j < n; j++)
        if (!next[j]) return kiln_ctx_status(cx);
    kiln_status s = kiln__block_set_results(e->m, body, next, n);
    if (s != KILN_OK) return s;
    for (int32_t j = 0; j < op->n_results; j++) {
        out[j] = w->results[j + 1];
        out_batched[j] = true;
    }
    return KILN_OK;
}
