/* SPDX-License-Identifier: Apache-2.0 */
/* Loop-invariant code motion: ops of a while's body that compute the same thing in every
 * iteration (their operands are values of the blocks around the loop, or results of such
 * ops) move to just before the while, so that they run once per loop instead of once per
 * iteration. Inner loops first: what leaves an inner loop may leave the outer one next.
 *
 * StableHLO ops cannot fail or trap, so running one that a loop of no iterations would not
 * have run changes no result. What moves:
 *   - every op that is not control flow or an optimization_barrier, whose regions (a
 *     reduce's or sort's body) read only their own values, and whose operands are
 *     invariant;
 *   - but views and constants (broadcast_in_dim, reshape, transpose, slice, reverse, pad,
 *     concatenate, iota, bitcast, constants: what a kernel reads in place, or what costs
 *     only memory) move only with an op that needs them, and so does an elementwise op
 *     whose result is larger than what it is computed from (through such views): computed
 *     in the loop from a few scalars, it costs no memory; hoisted, it is a buffer read in
 *     every iteration. */
#include <stdlib.h>

#include "base/alloc.h"
#include "passes/passes.h"

typedef enum placement {
    STAY,      /* varies with the iteration, or may not move */
    HOIST,     /* moved out of the loop */
    ON_DEMAND, /* invariant: moves when an op that moves needs it */
} placement;

typedef struct op_info {
    placement where;
    int64_t source; /* ON_DEMAND: the bytes it is computed from (through views) */
} op_info;

/* Does every value the ops of r (nested) read and return come from inside `top`? */
static bool closed(const kiln__block *r, const kiln__block *top) {
    for (const kiln__ir_op *op = r->first; op; op = op->next) {
        for (int32_t i = 0; i < op->n_operands; i++)
            if (!kiln__value_defined_in(op->operands[i], top)) return false;
        for (int32_t j = 0; j < op->n_regions; j++)
            if (op->regions[j] && !closed(op->regions[j], top)) return false;
    }
    for (int32_t i = 0; i < r->n_results; i++)
        if (!kiln__value_defined_in(r->results[i], top)) return false;
    return true;
}

static int64_t bytes_of(const kiln__value *v) {
    size_t n = 0;
    if (!kiln_shape_nbytes(&v->type->shape, v->type->dtype, &n) || n > INT64_MAX / 4)
        return INT64_MAX / 4;
    return (int64_t)n;
}

/* Ops that a kernel reads in place or that cost only memory: moved only when needed. */
static bool view_like(kiln_op kind) {
    switch (kind) {
    case KILN_OP_CONSTANT:
    case KILN_OP_IOTA:
    case KILN_OP_BROADCAST_IN_DIM:
    case KILN_OP_RESHAPE:
    case KILN_OP_TRANSPOSE:
    case KILN_OP_REVERSE:
    case KILN_OP_SLICE:
    case KILN_OP_BITCAST_CONVERT:
    case KILN_OP_PAD:
    case KILN_OP_CONCATENATE:
    case KILN_OP_DYNAMIC_SLICE: return true;
    default: return false;
    }
}

/* Where op (at position `index` of the loop's body) goes; ops before it are decided. */
static op_info place(const kiln__ir_op *op, const kiln__block *body, const op_info *info) {
    op_info stay = {STAY, 0};
    if (op->n_results == 0 || kiln__op_has(op->kind, KILN_OPF_CONTROL | KILN_OPF_COLLECTIVE) ||
        op->kind == KILN_OP_OPTIMIZATION_BARRIER)
        return stay;
    for (int32_t j = 0; j < op->n_regions; j++)
        if (op->regions[j] && !closed(op->regions[j], op->regions[j])) return stay;
    int64_t source = 0;
    for (int32_t i = 0; i < op->n_operands; i++) {
        const kiln__value *v = op->operands[i];
        const kiln__block *h = kiln__value_home(v);
        if (!kiln__value_defined_in(v, body)) {
            source += bytes_of(v);
            continue;
        }
        if (h != body || !v->def) return stay; /* a carry, or a value of a nested block */
        const op_info *d = &info[v->def->results[0]->id];
        if (d->where == STAY) return stay;
        source += d->where == ON_DEMAND ? d->source : bytes_of(v);
    }
    int64_t result = 0;
    for (int32_t r = 0; r < op->n_results; r++)
        result += bytes_of(op->results[r]);
    if (op->kind == KILN_OP_CONSTANT) return (op_info){ON_DEMAND, result};
    if (view_like(op->kind)) return (op_info){ON_DEMAND, source};
    if (kiln__op_has(op->kind, KILN_OPF_ELEMENTWISE) && result > source)
        return (op_info){ON_DEMAND, source};
    return (op_info){HOIST, 0};
}

static int by_position(const void *a, const void *b) {
    int32_t x = (*(kiln__ir_op *const *)a)->results[0]->id;
    int32_t y = (*(kiln__ir_op *const *)b)->results[0]->id;
    return (x > y) - (x < y);
}

/* Moves op out of the loop, after the ops still in the body that it needs (ON_DEMAND ones:
 * every operand in the body is HOIST, moved already, or ON_DEMAND). stack holds room for
 * every op of the body. */
static int32_t hoist(kiln__ir_op *op, kiln__ir_op *loop, const kiln__block *body, op_info *info,
                     kiln__ir_op **stack, kiln__ir_op **order) {
    int32_t n_stack = 0, n_order = 0;
    stack[n_stack++] = op;
    info[op->results[0]->id].where = HOIST;
    while (n_stack > 0) {
        kiln__ir_op *o = stack[--n_stack];
        order[n_order++] = o;
        for (int32_t i = 0; i < o->n_operands; i++) {
            kiln__ir_op *d = o->operands[i]->def;
            if (!d || d->block != body) continue;
            op_info *di = &info[d->results[0]->id];
            if (di->where != ON_DEMAND) continue;
            di->where = HOIST;
            stack[n_stack++] = d;
        }
    }
    /* In the body's order (ids are positions), so each op lands after what it reads. */
    qsort(order, (size_t)n_order, sizeof *order, by_position);
    for (int32_t i = 0; i < n_order; i++)
        kiln__op_move_before(order[i], loop);
    return n_order;
}

static int32_t licm_loop(kiln_ctx *cx, kiln__ir_op *loop) {
    kiln__block *body = loop->n_regions == 2 ? loop->regions[1] : NULL;
    if (!body || body->n_ops == 0) return 0;
    int32_t n = body->n_ops;
    size_t bytes = (size_t)n * (sizeof(op_info) + 2 * sizeof(kiln__ir_op *));
    kiln_status before = kiln_ctx_status(cx);
    unsigned char *mem = kiln__alloc(cx, bytes, _Alignof(op_info), "licm");
    if (!mem) { /* no error: the pass only optimizes, and the loop stays as it is */
        if (before == KILN_OK) kiln_ctx_clear_error(cx);
        return 0;
    }
    op_info *info = (op_info *)(void *)mem;
    kiln__ir_op **stack = (kiln__ir_op **)(void *)(mem + (size_t)n * sizeof(op_info));
    kiln__ir_op **order = stack + n;
    int32_t index = 0;
    for (kiln__ir_op *op = body->first; op; op = op->next, index++)
        for (int32_t r = 0; r < op->n_results; r++)
            op->results[r]->id = index;
    int32_t moved = 0;
    index = 0;
    for (kiln__ir_op *op = body->first, *next; op; op = next, index++) {
        next = op->next;
        if (op->n_results == 0) continue;
        info[index] = place(op, body, info);
        if (info[index].where == HOIST) moved += hoist(op, loop, body, info, stack, order);
    }
    kiln__free(cx, mem, bytes);
    return moved;
}

static int32_t licm_while(kiln_module *m, kiln__ir_op *loop) { return licm_loop(m->cx, loop); }

int32_t kiln__pass_licm(kiln_module *m) { return kiln__pass_each_while(m, licm_while); }
