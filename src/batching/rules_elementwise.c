/* SPDX-License-Identifier: Apache-2.0 */
/* Batching rules of the elementwise ops and map: the op over the batched shape, every
 * unbatched operand (and every scalar operand clamp and select allow) broadcast to it. */
#include "batching/batch.h"

const char kiln__batch_elementwise_linked = 1;

static kiln_status elementwise(kiln__batch *b, const kiln__batch_op *v, kiln__value **out,
                               bool *out_batched) {
    const kiln__type *result = v->op->results[0]->type;
    kiln__type bt = kiln__batch_type(b, result);
    kiln__value *ops[3];
    for (int32_t i = 0; i < v->n_in && i < 3; i++) {
        int32_t rank = v->op->operands[i]->type->shape.rank;
        bool full = rank == result->shape.rank;
        if (v->batched[i] && full) {
            ops[i] = v->in[i];
            continue;
        }
        kiln_dims dims = {.count = 0};
        if (v->batched[i]) dims.v[dims.count++] = 0;
        for (int32_t d = 0; full && d < rank; d++)
            dims.v[dims.count++] = d + 1;
        ops[i] = kiln__emit_broadcast(&b->e, v->in[i], &bt.shape, &dims);
    }
    kiln__attrs a = kiln__batch_attrs(v->op);
    out[0] = kiln__emit(&b->e, v->op->kind, &a, ops, v->n_in);
    out_batched[0] = true;
    return kiln_ctx_status(b->e.cx);
}

#define ELEMENTWISE(NAME) KILN__BATCH_AS(NAME, elementwise);

ELEMENTWISE(ABS)
ELEMENTWISE(NEGATE)
ELEMENTWISE(SIGN)
ELEMENTWISE(NOT)
ELEMENTWISE(FLOOR)
ELEMENTWISE(CEIL)
ELEMENTWISE(ROUND_NEAREST_AFZ)
ELEMENTWISE(ROUND_NEAREST_EVEN)
ELEMENTWISE(SQRT)
ELEMENTWISE(RSQRT)
ELEMENTWISE(CBRT)
ELEMENTWISE(EXPONENTIAL)
ELEMENTWISE(EXPONENTIAL_MINUS_ONE)
ELEMENTWISE(LOG)
ELEMENTWISE(LOG_PLUS_ONE)
ELEMENTWISE(LOGISTIC)
ELEMENTWISE(SINE)
ELEMENTWISE(COSINE)
ELEMENTWISE(TAN)
ELEMENTWISE(TANH)
ELEMENTWISE(IS_FINITE)
ELEMENTWISE(POPCNT)
ELEMENTWISE(COUNT_LEADING_ZEROS)
ELEMENTWISE(REAL)
ELEMENTWISE(IMAG)
ELEMENTWISE(COMPLEX)
ELEMENTWISE(ADD)
ELEMENTWISE(SUBTRACT)
ELEMENTWISE(MULTIPLY)
ELEMENTWISE(DIVIDE)
ELEMENTWISE(REMAINDER)
ELEMENTWISE(POWER)
ELEMENTWISE(MAXIMUM)
ELEMENTWISE(MINIMUM)
ELEMENTWISE(ATAN2)
ELEMENTWISE(AND)
ELEMENTWISE(OR)
ELEMENTWISE(XOR)
ELEMENTWISE(SHIFT_LEFT)
ELEMENTWISE(SHIFT_RIGHT_ARITHMETIC)
ELEMENTWISE(SHIFT_RIGHT_LOGICAL)
ELEMENTWISE(COMPARE)
ELEMENTWISE(SELECT)
ELEMENTWISE(CLAMP)
ELEMENTWISE(CONVERT)

/* map: over the batched shape, its dimensions one more, every unbatched input broadcast;
 * a computation that reads a batched value from outside runs per example (the loop). */
kiln_status kiln__batch_MAP(kiln__batch *b, const kiln__batch_op *v, kiln__value **out,
                            bool *out_batched) {
    kiln__value *ops[64];
    if (v->n_in > 64 || kiln__batch_regions_batched(b, v->op))
        return kiln__batch_by_loop(b, v, out, out_batched);
    for (int32_t i = 0; i < v->n_in; i++)
        ops[i] = kiln__batch_broadcast(b, v->in[i], v->batched[i]);
    kiln__attrs a = kiln__batch_attrs(v->op);
    a.u.map_dims.count = v->op->results[0]->type->shape.rank + 1;
    for (int32_t d = 0; d < a.u.map_dims.count; d++)
        a.u.map_dims.v[d] = d;
    kiln__ir_op *n = kiln__batch_emit_like(b, v->op, &a, ops, v->n_in);
    out[0] = n ? n->results[0] : NULL;
    out_batched[0] = true;
    return kiln_ctx_status(b->e.cx);
}
