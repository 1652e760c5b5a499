/* SPDX-License-Identifier: Apache-2.0 */
/* Batching rules of gather and scatter: the batch becomes one more batching dimension of
 * the op (StableHLO's operand_batching_dims / input_batching_dims and their index
 * counterparts), so example b gathers from, or scatters into, its own operand with its own
 * indices. An operand every example shares is gathered from as it is (only the indices
 * gain the batch); a scattered input every example shares is broadcast first (each example
 * scatters into its own copy). */
#include "batching/batch.h"

const char kiln__batch_indexing_linked = 1;

#define MAX_INPUTS 32

kiln_status kiln__batch_GATHER(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                               bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    kiln_gather_params *g = &a.u.gather;
    kiln__value *ops[2] = {op->in[0], kiln__batch_broadcast(b, op->in[1], op->batched[1])};
    /* The indices always carry the batch (at 0, the first of the result's batch dims);
     * the result's offset dimensions move one place. */
    g->index_vector_dim += 1;
    g->offset_dims = kiln__batch_dims(&g->offset_dims, -1, 1);
    g->start_indices_batching_dims = kiln__batch_dims(&g->start_indices_batching_dims, -1, 1);
    if (op->batched[0]) {
        /* The operand's batch pairs with the indices': a batching dimension of both. */
        g->collapsed_slice_dims = kiln__batch_dims(&g->collapsed_slice_dims, -1, 1);
        g->start_index_map = kiln__batch_dims(&g->start_index_map, -1, 1);
        g->operand_batching_dims = kiln__batch_dims(&g->operand_batching_dims, 0, 1);
        g->start_indices_batching_dims = kiln__batch_dims(&g->start_indices_batching_dims, 0, 0);
        g->slice_sizes = kiln__batch_dims(&g->slice_sizes, 1, 0);
    }
    out[0] = kiln__emit(&b->e, KILN_OP_GATHER, &a, ops, 2);
    out_batched[0] = true;
    return kiln_ctx_status(b->e.cx);
}

kiln_status kiln__batch_SCATTER(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                bool *out_batched) {
    int32_t n = (op->n_in - 1) / 2; /* inputs, indices, updates */
    if (n > MAX_INPUTS || op->n_in != 2 * n + 1)
        return kiln__batch_by_loop(b, op, out, out_batched);
    kiln__value *ops[2 * MAX_INPUTS + 1];
    for (int32_t i = 0; i < op->n_in; i++)
        ops[i] = kiln__batch_broadcast(b, op->in[i], op->batched[i]);
    kiln__attrs a = kiln__batch_attrs(op->op);
    kiln_scatter_params *p = &a.u.scatter;
    p->update_window_dims = kiln__batch_dims(&p->update_window_dims, -1, 1);
    p->inserted_window_dims = kiln__batch_dims(&p->inserted_window_dims, -1, 1);
    p->scatter_dims_to_operand_dims = kiln__batch_dims(&p->scatter_dims_to_operand_dims, -1, 1);
    p->input_batching_dims = kiln__batch_dims(&p->input_batching_dims, 0, 1);
    p->scatter_indices_batching_dims = kiln__batch_dims(&p->scatter_indices_batching_dims, 0, 1);
    p->index_vector_dim += 1;
    kiln__ir_op *s = kiln__batch_emit_like(b, op->op, &a, ops, op->n_in);
    for (int32_t j = 0; s && j < s->n_results; j++) {
        out[j] = s->results[j];
        out_batched[j] = true;
    }
    return kiln_ctx_status(b->e.cx);
}
