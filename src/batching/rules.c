/* SPDX-License-Identifier: Apache-2.0 */
/* The rule table (a column of the op table): every op is given the loop (a weak default),
 * and the rules_<family>.c files override it with rules of their own. */
#include "batching/batch.h"

kiln_status kiln__batch_loop_default(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                     bool *out_batched);
kiln_status kiln__batch_loop_default(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                     bool *out_batched) {
    return kiln__batch_by_loop(b, op, out, out_batched);
}

#define KILN_OP(name, text, nin, nout, flags)                                                \
    __attribute__((weak, alias("kiln__batch_loop_default"))) kiln_status kiln__batch_##name( \
        kiln__batch *b, const kiln__batch_op *op, kiln__value **out, bool *out_batched);
#include "ops/ops.def"
#undef KILN_OP

const kiln__batch_rule kiln__batch_rules[KILN_OP_COUNT] = {
#define KILN_OP(name, text, nin, nout, flags) [KILN_OP_##name] = kiln__batch_##name,
#include "ops/ops.def"
#undef KILN_OP
};

/* The families are linked from a static library too: a weak default is already a
 * definition, so without a strong reference an archive member holding only rules would
 * never be extracted. */
extern const char kiln__batch_elementwise_linked, kiln__batch_movement_linked,
    kiln__batch_reduce_linked, kiln__batch_linalg_linked, kiln__batch_control_linked,
    kiln__batch_indexing_linked, kiln__batch_collective_linked;
extern const char *const kiln__batch_linked[];
const char *const kiln__batch_linked[] = {
    &kiln__batch_elementwise_linked, &kiln__batch_movement_linked, &kiln__batch_reduce_linked,
    &kiln__batch_linalg_linked,      &kiln__batch_control_linked,  &kiln__batch_indexing_linked,
    &kiln__batch_collective_linked};

bool kiln__batch_rule_is_loop(kiln_op kind) {
    if (kind < 0 || kind >= KILN_OP_COUNT) return true;
    return kiln__batch_rules[kind] == kiln__batch_loop_default;
}
