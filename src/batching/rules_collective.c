/* SPDX-License-Identifier: Apache-2.0 */
/* Batching rules of the collectives: a collective moves or combines each example's values
 * as it moves or combines any element, so the batched op is the same collective over the
 * batched operands, the dimensions it names shifted past the batch. The process ids are
 * the same for every example. */
#include "batching/batch.h"

const char kiln__batch_collective_linked = 1;

/* The same op on the operands as they are: each result batched as its operand is
 * (all_reduce, collective_permute; collective_broadcast and collective_reduce when their
 * roots are the same for every example). */
static kiln_status per_operand(kiln__batch *b, const kiln__batch_op *v, int32_t n_data,
                               kiln__value **out, bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(v->op);
    kiln__ir_op *op = kiln__batch_emit_like(b, v->op, &a, v->in, v->n_in);
    if (!op) return kiln_ctx_status(b->e.cx);
    for (int32_t j = 0; j < n_data; j++) {
        out[j] = op->results[j];
        out_batched[j] = v->batched[j];
    }
    return KILN_OK;
}

/* Every operand batched (broadcast when not), and the op's dimension attributes + 1. */
static kiln_status all_batched(kiln__batch *b, const kiln__batch_op *v, kiln__value **out,
                               bool *out_batched) {
    kiln__value *in[64];
    if (v->n_in > 64) return kiln__batch_by_loop(b, v, out, out_batched);
    for (int32_t i = 0; i < v->n_in; i++)
        in[i] = kiln__batch_broadcast(b, v->in[i], v->batched[i]);
    kiln__attrs a = kiln__batch_attrs(v->op);
    a.u.collective.dimension += 1;
    if (v->op->kind == KILN_OP_ALL_TO_ALL) a.u.collective.concat_dimension += 1;
    kiln__ir_op *op = kiln__batch_emit_like(b, v->op, &a, in, v->n_in);
    if (!op) return kiln_ctx_status(b->e.cx);
    for (int32_t j = 0; j < op->n_results; j++) {
        out[j] = op->results[j];
        out_batched[j] = true;
    }
    return KILN_OK;
}

kiln_status kiln__batch_REPLICA_ID(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                   bool *out_batched) {
    return per_operand(b, op, 1, out, out_batched);
}

kiln_status kiln__batch_PARTITION_ID(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                     bool *out_batched) {
    return per_operand(b, op, 1, out, out_batched);
}

kiln_status kiln__batch_ALL_REDUCE(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                   bool *out_batched) {
    return per_operand(b, op, op->n_in, out, out_batched);
}

kiln_status kiln__batch_COLLECTIVE_PERMUTE(kiln__batch *b, const kiln__batch_op *op,
                                           kiln__value **out, bool *out_batched) {
    return per_operand(b, op, 1, out, out_batched);
}

/* Roots that differ per example need a loop. */
static kiln_status rooted(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                          bool *out_batched) {
    bool dyn = op->op->attrs->u.collective.has_dynamic_root;
    if (dyn && op->batched[op->n_in - 1]) return kiln__batch_by_loop(b, op, out, out_batched);
    return per_operand(b, op, op->n_in - (dyn ? 1 : 0), out, out_batched);
}

KILN__BATCH_AS(COLLECTIVE_BROADCAST, rooted);

KILN__BATCH_AS(COLLECTIVE_REDUCE, rooted);

KILN__BATCH_AS(ALL_GATHER, all_batched);

KILN__BATCH_AS(REDUCE_SCATTER, all_batched);

KILN__BATCH_AS(ALL_TO_ALL, all_batched);
