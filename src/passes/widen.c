/* SPDX-License-Identifier: Apache-2.0 */
/* The widening of narrow types (ops/widen.h) in a module: every op that computes on a
 * sub-byte integer or small float gets convert ops around it, its narrow operands widened
 * to i8, ui8 or f32 before it and its narrow results narrowed back after it, so that a
 * backend runs it in the wide types. Ops inside regions widen one by one like the others. */
#include "ops/widen.h"
#include "passes/passes.h"

#define MAX_WIDENED 8 /* operands or results of an op that widens (elementwise, dot, ...) */

/* A convert of v to `dtype`, placed just before `at`; NULL when out of memory. */
static kiln__value *convert_before(kiln_module *m, kiln__ir_op *at, kiln__value *v,
                                   kiln_dtype dtype) {
    kiln__attrs a = {.fn = "widen"};
    a.u.convert_to = dtype;
    kiln__type t = {.dtype = dtype, .shape = v->type->shape};
    kiln__ir_op *c = kiln__block_append(m, at->block, KILN_OP_CONVERT, &a, &v, 1, &t, 1, 0);
    if (!c) return NULL;
    kiln__op_move_before(c, at);
    return c->results[0];
}

/* Rewrites op to compute in the widened types; false when out of memory before anything
 * changed that would leave the module wrong (a convert made and not used is dead code). */
static bool widen_op(kiln_module *m, kiln__ir_op *op) {
    kiln__value *wide[MAX_WIDENED];
    for (int32_t i = 0; i < op->n_operands; i++) {
        kiln__value *v = op->operands[i];
        kiln_dtype w = kiln__widened(v->type->dtype);
        wide[i] = w == v->type->dtype ? v : convert_before(m, op, v, w);
        if (!wide[i]) return false;
    }
    /* The result types first: they are the step that can fail. */
    const kiln__type *narrow[MAX_WIDENED];
    for (int32_t r = 0; r < op->n_results; r++)
        narrow[r] = op->results[r]->type;
    kiln__attrs *own = kiln__op_attrs_mut(m, op);
    if (!own) return false;
    for (int32_t r = 0; r < op->n_results; r++) {
        kiln__type t = *narrow[r];
        t.dtype = kiln__widened(t.dtype);
        if (!kiln__value_set_type(m, op->results[r], &t)) {
            for (int32_t k = 0; k < r; k++)
                kiln__value_set_type(m, op->results[k], narrow[k]); /* interned: cannot fail */
            return false;
        }
    }
    kiln__attrs_widen(op->kind, own);
    for (int32_t i = 0; i < op->n_operands; i++)
        kiln__set_operand(op, i, wide[i]);
    for (int32_t r = 0; r < op->n_results; r++) {
        kiln__value *res = op->results[r];
        if (narrow[r]->dtype == res->type->dtype) continue;
        kiln__attrs a = {.fn = "widen"};
        a.u.convert_to = narrow[r]->dtype;
        kiln__ir_op *c =
            kiln__block_append(m, op->block, KILN_OP_CONVERT, &a, &res, 1, narrow[r], 1, 0);
        if (!c) return false; /* the module's ctx has the error; compile reports it */
        if (op->next != c) kiln__op_move_before(c, op->next);
        kiln__replace_uses(op->block, c, res, c->results[0]);
    }
    return true;
}

static int32_t widen_block(kiln_module *m, kiln__block *b) {
    int32_t changes = 0;
    for (kiln__ir_op *op = b->first; op; op = op->next) {
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) changes += widen_block(m, op->regions[r]);
        if (op->n_operands > MAX_WIDENED || op->n_results > MAX_WIDENED) continue;
        kiln__type in[MAX_WIDENED], out[MAX_WIDENED];
        for (int32_t i = 0; i < op->n_operands; i++)
            in[i] = *op->operands[i]->type;
        for (int32_t r = 0; r < op->n_results; r++)
            out[r] = *op->results[r]->type;
        if (!kiln__op_widens(op->kind, in, op->n_operands, out, op->n_results)) continue;
        if (!widen_op(m, op)) return changes;
        changes++;
    }
    return changes;
}

int32_t kiln__pass_widen(kiln_module *m) {
    int32_t changes = 0;
    for (int32_t f = 0; f < m->n_funcs; f++)
        changes += widen_block(m, m->funcs[f]->body);
    return changes;
}
