/* SPDX-License-Identifier: Apache-2.0 */
/* Unrolling loops of a few iterations: a while that counts from a constant to a constant
 * (the form kiln_fori_loop and JAX's fori_loop lower to: the condition `i < upper` on a
 * carry that starts at a constant and that the body increments by 1) and whose copies
 * stay small becomes that many copies of its body, one after the other, in the block
 * around it. The loop's bookkeeping goes (the condition, the carries' buffers), and the
 * copies fuse with each other and with what surrounds the loop. A loop of no iterations
 * becomes its inits.
 *
 * Only small loops: at most UNROLL_MAX_TRIPS iterations and UNROLL_MAX_OPS ops copied in
 * all (nested regions counted), so that compile time and code stay bounded. */
#include "base/alloc.h"
#include "ir/clone.h"
#include "passes/passes.h"

#define UNROLL_MAX_TRIPS 16
#define UNROLL_MAX_OPS 512

/* A rank-0 integer constant's value. */
static bool int_constant(const kiln__value *v, int64_t *out) {
    const kiln__ir_op *op = v->def;
    if (!op || op->kind != KILN_OP_CONSTANT || v->type->shape.rank != 0) return false;
    const kiln_tensor *t = op->attrs->u.constant;
    const void *p = t ? kiln_tensor_data(t) : NULL;
    if (!p) return false;
    switch (v->type->dtype) {
    case KILN_I32: *out = *(const int32_t *)p; return true;
    case KILN_I64: *out = *(const int64_t *)p; return true;
    default: return false;
    }
}

/* The number of iterations of loop when it counts from a constant to a constant, else -1. */
static int64_t trip_count(const kiln__ir_op *loop) {
    if (loop->n_regions != 2) return -1;
    const kiln__block *cond = loop->regions[0], *body = loop->regions[1];
    if (cond->n_results != 1 || !cond->results[0]->def) return -1;
    const kiln__ir_op *cmp = cond->results[0]->def;
    if (cmp->kind != KILN_OP_COMPARE || cmp->block != cond ||
        cmp->attrs->u.compare.direction != KILN_CMP_LT ||
        cmp->attrs->u.compare.type != KILN_CMP_SIGNED)
        return -1;
    /* The condition computes nothing else that could matter. */
    for (const kiln__ir_op *op = cond->first; op; op = op->next)
        if (op != cmp && op->kind != KILN_OP_CONSTANT) return -1;
    const kiln__value *i = cmp->operands[0];
    if (i->def || i->block != cond) return -1;
    int32_t k = i->index;
    int64_t lower, upper, step;
    if (!int_constant(loop->operands[k], &lower) || !int_constant(cmp->operands[1], &upper))
        return -1;
    const kiln__ir_op *inc = body->results[k]->def;
    if (!inc || inc->kind != KILN_OP_ADD || inc->block != body) return -1;
    const kiln__value *a = inc->operands[0], *b = inc->operands[1];
    const kiln__value *counter = body->args[k];
    if (!((a == counter && int_constant(b, &step)) || (b == counter && int_constant(a, &step))) ||
        step != 1)
        return -1;
    if (upper <= lower) return 0;
    int64_t n;
    return __builtin_sub_overflow(upper, lower, &n) ? -1 : n;
}

static int32_t count_ops(const kiln__block *b) {
    int32_t n = 0;
    for (const kiln__ir_op *op = b->first; op; op = op->next) {
        n++;
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) n += count_ops(op->regions[r]);
    }
    return n;
}

/* Maps every value from outside `top` that b (nested) reads or returns to itself. */
static bool map_outer(kiln__vmap *map, const kiln__block *b, const kiln__block *top) {
    for (const kiln__ir_op *op = b->first; op; op = op->next) {
        for (int32_t i = 0; i < op->n_operands; i++) {
            kiln__value *v = op->operands[i];
            if (!kiln__value_defined_in(v, top) && !kiln__vmap_put(map, v, v)) return false;
        }
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r] && !map_outer(map, op->regions[r], top)) return false;
    }
    for (int32_t i = 0; i < b->n_results; i++)
        if (!kiln__value_defined_in(b->results[i], top) &&
            !kiln__vmap_put(map, b->results[i], b->results[i]))
            return false;
    return true;
}

/* Copies the body `trips` times before the loop and moves the loop's uses to the last
 * copy's results (the loop is then dead, for dce). On failure the copies made are dead
 * and the loop stays. */
static bool unroll(kiln_module *m, kiln__ir_op *loop, int64_t trips) {
    const kiln__block *body = loop->regions[1];
    int32_t n = loop->n_results;
    kiln__value *fixed[16], **cur = fixed;
    size_t bytes = (size_t)n * sizeof *cur;
    if (n > 16 && !(cur = kiln__alloc(m->cx, bytes, _Alignof(kiln__value *), "unroll")))
        return false;
    for (int32_t i = 0; i < n; i++)
        cur[i] = loop->operands[i];
    kiln__vmap map;
    kiln__vmap_init(&map, m->cx);
    bool ok = map_outer(&map, body, body);
    for (int64_t t = 0; t < trips && ok; t++) {
        for (int32_t i = 0; i < body->n_args && ok; i++)
            ok = kiln__vmap_put(&map, body->args[i], cur[i]);
        for (const kiln__ir_op *op = body->first; op && ok; op = op->next) {
            kiln__ir_op *copy = kiln__clone_op(m, loop->block, op, &map);
            if (copy) kiln__op_move_before(copy, loop);
            ok = copy != NULL;
        }
        for (int32_t i = 0; i < n && ok; i++)
            ok = (cur[i] = kiln__vmap_get(&map, body->results[i])) != NULL;
    }
    kiln__vmap_free(&map);
    if (ok)
        for (int32_t i = 0; i < n; i++)
            kiln__replace_uses(loop->block, loop, loop->results[i], cur[i]);
    if (cur != fixed) kiln__free(m->cx, cur, bytes);
    return ok;
}

/* Unrolls op when its results are used and it runs few enough trips of a small enough body. */
static int32_t unroll_while(kiln_module *m, kiln__ir_op *op) {
    bool used = false;
    for (int32_t i = 0; i < op->n_results && !used; i++)
        used = op->results[i]->uses > 0;
    int64_t trips = used ? trip_count(op) : -1;
    if (trips < 0 || trips > UNROLL_MAX_TRIPS ||
        trips * count_ops(op->regions[1]) > UNROLL_MAX_OPS)
        return 0;
    kiln_status before = kiln_ctx_status(m->cx);
    if (unroll(m, op, trips)) return 1;
    if (before == KILN_OK) kiln_ctx_clear_error(m->cx); /* no error: the pass only optimizes */
    return 0;
}

int32_t kiln__pass_unroll(kiln_module *m) { return kiln__pass_each_while(m, unroll_while); }
