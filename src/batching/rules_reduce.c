/* SPDX-License-Identifier: Apache-2.0 */
/* Batching rules of the reductions: the inputs batched (broadcast where only some are),
 * the reduced dimensions and windows shifted past the batch. An init value that differs
 * per example is left to the loop. */
#include "batching/batch.h"

const char kiln__batch_reduce_linked = 1;

#define MAX_INPUTS 32

/* Inputs [0, n) batched (broadcast), inits [n, 2n) as they are; false when an init is
 * batched or there are too many. */
static bool inputs_and_inits(kiln__batch *b, const kiln__batch_op *v, int32_t n,
                             kiln__value **ops) {
    if (n > MAX_INPUTS || v->n_in != 2 * n) return false;
    for (int32_t i = n; i < 2 * n; i++)
        if (v->batched[i]) return false;
    for (int32_t i = 0; i < n; i++)
        ops[i] = kiln__batch_broadcast(b, v->in[i], v->batched[i]);
    for (int32_t i = n; i < 2 * n; i++)
        ops[i] = v->in[i];
    return true;
}

static kiln_status results_of(kiln__batch *b, const kiln__ir_op *n, kiln__value **out,
                              bool *out_batched) {
    for (int32_t j = 0; n && j < n->n_results; j++) {
        out[j] = n->results[j];
        out_batched[j] = true;
    }
    return kiln_ctx_status(b->e.cx);
}

/* Emits op again with attrs `a` (already moved past the batch dimension) on its inputs, batched,
 * and its inits; by a loop where an init is batched. */
static kiln_status reduce_like(kiln__batch *b, const kiln__batch_op *op, const kiln__attrs *a,
                               kiln__value **out, bool *out_batched) {
    kiln__value *ops[2 * MAX_INPUTS];
    if (!inputs_and_inits(b, op, op->n_in / 2, ops))
        return kiln__batch_by_loop(b, op, out, out_batched);
    return results_of(b, kiln__batch_emit_like(b, op->op, a, ops, op->n_in), out, out_batched);
}

kiln_status kiln__batch_REDUCE(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                               bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    a.u.reduce_dims = kiln__batch_dims(&a.u.reduce_dims, -1, 1);
    return reduce_like(b, op, &a, out, out_batched);
}

/* A window of 1 along the batch: no stride, dilation or padding there. */
static kiln_window_params batch_window(const kiln_window_params *w) {
    return (kiln_window_params){.window_dimensions = kiln__batch_dims(&w->window_dimensions, 1, 0),
                                .window_strides = kiln__batch_dims(&w->window_strides, 1, 0),
                                .base_dilations = kiln__batch_dims(&w->base_dilations, 1, 0),
                                .window_dilations = kiln__batch_dims(&w->window_dilations, 1, 0),
                                .padding_low = kiln__batch_dims(&w->padding_low, 0, 0),
                                .padding_high = kiln__batch_dims(&w->padding_high, 0, 0)};
}

kiln_status kiln__batch_REDUCE_WINDOW(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                      bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    a.u.window = batch_window(&a.u.window);
    return reduce_like(b, op, &a, out, out_batched);
}

kiln_status kiln__batch_SELECT_AND_SCATTER(kiln__batch *b, const kiln__batch_op *op,
                                           kiln__value **out, bool *out_batched) {
    if (op->batched[2]) return kiln__batch_by_loop(b, op, out, out_batched);
    kiln__value *ops[3] = {kiln__batch_broadcast(b, op->in[0], op->batched[0]),
                           kiln__batch_broadcast(b, op->in[1], op->batched[1]), op->in[2]};
    kiln__attrs a = kiln__batch_attrs(op->op);
    a.u.window = batch_window(&a.u.window);
    return results_of(b, kiln__batch_emit_like(b, op->op, &a, ops, 3), out, out_batched);
}
