/* SPDX-License-Identifier: Apache-2.0 */
/* Batching rules of the contractions. dot_general: a batch both operands have becomes a
 * batch dimension of the op; one only one has becomes a free dimension of it. convolution:
 * the batch is folded into the op's own dimensions (the input's batch when only the input
 * has it, the kernel's output features when only the kernel has it, feature groups when
 * both do, as JAX does), so one convolution runs the whole batch. fft: the batch is one
 * more leading dimension. */
#include "batching/batch.h"

const char kiln__batch_linalg_linked = 1;

kiln_status kiln__batch_DOT_GENERAL(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                    bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    kiln_dot_params *p = &a.u.dot;
    bool lb = op->batched[0], rb = op->batched[1];
    int32_t nb = p->lhs_batching_dims.count;
    int32_t lhs_free = op->op->operands[0]->type->shape.rank - nb - p->lhs_contracting_dims.count;
    int32_t at = 0; /* where the batch lands in the op's result */
    if (lb) {
        p->lhs_batching_dims = kiln__batch_dims(&p->lhs_batching_dims, rb ? 0 : -1, 1);
        p->lhs_contracting_dims = kiln__batch_dims(&p->lhs_contracting_dims, -1, 1);
    }
    if (rb) {
        p->rhs_batching_dims = kiln__batch_dims(&p->rhs_batching_dims, lb ? 0 : -1, 1);
        p->rhs_contracting_dims = kiln__batch_dims(&p->rhs_contracting_dims, -1, 1);
    }
    if (lb && !rb) at = nb;
    if (rb && !lb) at = nb + lhs_free;
    kiln__value *r = kiln__emit(&b->e, KILN_OP_DOT_GENERAL, &a, op->in, 2);
    out[0] = kiln__batch_move_axis(&b->e, r, at, 0);
    out_batched[0] = true;
    return kiln_ctx_status(b->e.cx);
}

/* x ([B] + S, the batch at 0) with the batch merged into S's dimension d as its major part
 * (S[d] becomes B * S[d]). */
static kiln__value *merge(kiln__batch *b, kiln__value *x, int64_t d) {
    kiln__value *m = kiln__batch_move_axis(&b->e, x, 0, (int32_t)d);
    if (!m) return NULL;
    kiln_shape s = {.rank = m->type->shape.rank - 1};
    for (int32_t i = 0, k = 0; i < m->type->shape.rank; i++) {
        if (i == d + 1) continue;
        s.dims[k++] = m->type->shape.dims[i];
    }
    s.dims[d] = b->size * m->type->shape.dims[d + 1];
    return kiln__emit_reshape(&b->e, m, &s);
}

/* The inverse: y's dimension d (B * n, the batch major) split, the batch moved to 0. */
static kiln__value *split(kiln__batch *b, kiln__value *y, int64_t d) {
    if (!y) return NULL;
    kiln_shape s = {.rank = y->type->shape.rank + 1};
    for (int32_t i = 0, k = 0; i < y->type->shape.rank; i++) {
        if (i == d) {
            s.dims[k++] = b->size;
            s.dims[k++] = y->type->shape.dims[i] / b->size;
        } else {
            s.dims[k++] = y->type->shape.dims[i];
        }
    }
    return kiln__batch_move_axis(&b->e, kiln__emit_reshape(&b->e, y, &s), (int32_t)d, 0);
}

kiln_status kiln__batch_CONVOLUTION(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                    bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    kiln_conv_params *p = &a.u.conv;
    bool lb = op->batched[0], rb = op->batched[1];
    int64_t groups = p->feature_group_count > 1 ? p->feature_group_count : 1;
    int64_t batch_groups = p->batch_group_count > 1 ? p->batch_group_count : 1;
    if (batch_groups > 1 || (rb && groups > 1)) return kiln__batch_by_loop(b, op, out, out_batched);
    kiln__value *ops[2] = {op->in[0], op->in[1]};
    int64_t out_dim;
    if (lb && !rb) {
        ops[0] = merge(b, op->in[0], p->input_batch_dimension);
        out_dim = p->output_batch_dimension;
    } else if (rb && !lb) {
        ops[1] = merge(b, op->in[1], p->kernel_output_feature_dimension);
        out_dim = p->output_feature_dimension;
    } else {
        ops[0] = merge(b, op->in[0], p->input_feature_dimension);
        ops[1] = merge(b, op->in[1], p->kernel_output_feature_dimension);
        p->feature_group_count = b->size;
        out_dim = p->output_feature_dimension;
    }
    out[0] = split(b, kiln__emit(&b->e, KILN_OP_CONVOLUTION, &a, ops, 2), out_dim);
    out_batched[0] = true;
    return kiln_ctx_status(b->e.cx);
}

/* fft transforms the operand's last dimensions: a batch at 0 is one more leading one. */
kiln_status kiln__batch_FFT(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                            bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    out[0] = kiln__emit(&b->e, KILN_OP_FFT, &a, op->in, 1);
    out_batched[0] = op->batched[0];
    return kiln_ctx_status(b->e.cx);
}

/* triangular_solve and cholesky work on the last two dimensions: the batch is one more
 * leading one, of both operands of triangular_solve (broadcast where only one has it). */
kiln_status kiln__batch_TRIANGULAR_SOLVE(kiln__batch *b, const kiln__batch_op *op,
                                         kiln__value **out, bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    kiln__value *in[2];
    for (int i = 0; i < 2; i++)
        if (!(in[i] = kiln__batch_broadcast(b, op->in[i], op->batched[i])))
            return kiln_ctx_status(b->e.cx);
    out[0] = kiln__emit(&b->e, KILN_OP_TRIANGULAR_SOLVE, &a, in, 2);
    out_batched[0] = true;
    return kiln_ctx_status(b->e.cx);
}

KILN__BATCH_AS(CHOLESKY, kiln__batch_FFT);
