/* SPDX-License-Identifier: Apache-2.0 */
/* Taking tuples apart (passes.h): every get_tuple_element of a tuple made in the module is
 * the value the tuple was made of, so its uses take that value; the tuples then have no
 * use and dce removes them. Nested tuples come apart in one walk: an inner tuple taken out
 * of an outer one is itself a tuple op's result. */
#include "passes/passes.h"

static int32_t untuple_block(kiln__block *b) {
    int32_t changes = 0;
    for (kiln__ir_op *op = b->first; op; op = op->next) {
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) changes += untuple_block(op->regions[r]);
        if (op->kind != KILN_OP_GET_TUPLE_ELEMENT || op->n_operands != 1) continue;
        const kiln__ir_op *t = op->operands[0]->def;
        int64_t i = op->attrs->u.tuple_index;
        if (!t || t->kind != KILN_OP_TUPLE || i < 0 || i >= t->n_operands) continue;
        changes += kiln__replace_uses(op->block, op, op->results[0], t->operands[i]) > 0;
    }
    return changes;
}

int32_t kiln__pass_untuple(kiln_module *m) {
    int32_t changes = 0;
    for (int32_t f = 0; f < m->n_funcs; f++)
        changes += untuple_block(m->funcs[f]->body);
    return changes;
}
