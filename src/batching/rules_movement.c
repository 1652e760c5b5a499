/* SPDX-License-Identifier: Apache-2.0 */
/* Batching rules of the data-movement ops: the same op over one more (leading) dimension,
 * its dimension attributes shifted past it. A dynamic_slice or dynamic_update_slice whose
 * start differs per example becomes a gather or a scatter; a padding value that does, a
 * select between the padded operand and the values. */
#include "batching/batch.h"

const char kiln__batch_movement_linked = 1;

static kiln_shape prepend_shape(const kiln_shape *s, int64_t v) {
    kiln_shape r = {.rank = s->rank + 1};
    r.dims[0] = v;
    for (int32_t d = 0; d < s->rank && d + 1 < KILN_MAX_RANK; d++)
        r.dims[d + 1] = s->dims[d];
    return r;
}

/* The op again on its batched first operand, with attributes `a`. */
static kiln_status one(kiln__batch *b, const kiln__batch_op *v, const kiln__attrs *a,
                       kiln__value **out, bool *out_batched) {
    out[0] = kiln__emit(&b->e, v->op->kind, a, v->in, 1);
    out_batched[0] = true;
    return kiln_ctx_status(b->e.cx);
}

kiln_status kiln__batch_BITCAST_CONVERT(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                        bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    return one(b, op, &a, out, out_batched);
}

kiln_status kiln__batch_REDUCE_PRECISION(kiln__batch *b, const kiln__batch_op *op,
                                         kiln__value **out, bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    return one(b, op, &a, out, out_batched);
}

kiln_status kiln__batch_BROADCAST_IN_DIM(kiln__batch *b, const kiln__batch_op *op,
                                         kiln__value **out, bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    a.u.broadcast.shape = prepend_shape(&a.u.broadcast.shape, b->size);
    a.u.broadcast.dims = kiln__batch_dims(&a.u.broadcast.dims, 0, 1);
    return one(b, op, &a, out, out_batched);
}

kiln_status kiln__batch_RESHAPE(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    a.u.reshape = prepend_shape(&a.u.reshape, b->size);
    return one(b, op, &a, out, out_batched);
}

kiln_status kiln__batch_TRANSPOSE(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                  bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    a.u.permutation = kiln__batch_dims(&a.u.permutation, 0, 1);
    return one(b, op, &a, out, out_batched);
}

kiln_status kiln__batch_REVERSE(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    a.u.reverse_dims = kiln__batch_dims(&a.u.reverse_dims, -1, 1);
    return one(b, op, &a, out, out_batched);
}

kiln_status kiln__batch_SLICE(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                              bool *out_batched) {
    kiln__attrs a = kiln__batch_attrs(op->op);
    a.u.slice.start = kiln__batch_dims(&a.u.slice.start, 0, 0);
    a.u.slice.limit = kiln__batch_dims(&a.u.slice.limit, b->size, 0);
    a.u.slice.strides = kiln__batch_dims(&a.u.slice.strides, 1, 0);
    return one(b, op, &a, out, out_batched);
}

/* A zero start index of the dtype the op's other indices have (i64 when it has none). */
static kiln__value *zero_index(kiln__batch *b, const kiln__batch_op *v, int32_t first_index) {
    kiln_dtype t = first_index < v->n_in ? v->in[first_index]->type->dtype : KILN_I64;
    return kiln__emit_scalar(&b->e, t, 0);
}

static bool indices_batched(const kiln__batch_op *v, int32_t first) {
    for (int32_t i = first; i < v->n_in; i++)
        if (v->batched[i]) return true;
    return false;
}

/* The per-example start indices op->in[first..] (k of them, batched or shared) as one [B, k]
 * tensor; with `limit` (the operand's and update's shapes), each start clamped to
 * [0, limit->dims[d]] first. */
static kiln__value *start_rows(kiln__batch *b, const kiln__batch_op *op, int32_t first,
                               const kiln_shape *limit) {
    int32_t k = op->n_in - first;
    kiln__value *cols[KILN_MAX_RANK];
    kiln_shape col = {.rank = 2, .dims = {b->size, 1}}, lane = {.rank = 1, .dims = {b->size}};
    for (int32_t i = 0; i < k; i++) {
        kiln__value *s = op->in[first + i];
        if (!op->batched[first + i]) s = kiln__emit_broadcast(&b->e, s, &lane, &KILN_DIMS_NONE);
        if (limit) {
            kiln_dtype t = op->in[first + i]->type->dtype;
            kiln__value *ops[3] = {kiln__emit_scalar(&b->e, t, 0), s,
                                   kiln__emit_scalar(&b->e, t, (double)limit->dims[i])};
            kiln__attrs ca = {.fn = b->e.fn};
            s = kiln__emit(&b->e, KILN_OP_CLAMP, &ca, ops, 3);
        }
        cols[i] = kiln__emit_reshape(&b->e, s, &col);
    }
    kiln__attrs ca = {.fn = b->e.fn};
    ca.u.dimension = 1;
    return k == 1 ? cols[0] : kiln__emit(&b->e, KILN_OP_CONCATENATE, &ca, cols, k);
}

/* dynamic_slice with a start that differs per example: a gather of one slice per example
 * (gather clamps its starts as dynamic_slice does), the indices [B, k] made of the k
 * starts; a batched operand pairs its batch with the indices' (a batching dimension). */
static kiln_status slices_by_gather(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                    bool *out_batched) {
    kiln__value *idx = start_rows(b, op, 1, NULL);
    const kiln_dims *sizes = &op->op->attrs->u.slice_sizes;
    kiln__attrs a = {.fn = op->op->attrs->fn};
    kiln_gather_params *g = &a.u.gather;
    bool xb = op->batched[0];
    g->index_vector_dim = 1;
    g->offset_dims.count = sizes->count;
    for (int32_t d = 0; d < sizes->count; d++) {
        g->offset_dims.v[d] = d + 1;
        g->start_index_map.v[d] = d + xb;
    }
    g->start_index_map.count = sizes->count;
    if (xb) {
        g->operand_batching_dims = KILN_DIMS(0);
        g->start_indices_batching_dims = KILN_DIMS(0);
    }
    g->slice_sizes.count = 0;
    if (xb) g->slice_sizes.v[g->slice_sizes.count++] = 1;
    for (int32_t d = 0; d < sizes->count; d++)
        g->slice_sizes.v[g->slice_sizes.count++] = sizes->v[d];
    kiln__value *ops[2] = {op->in[0], idx};
    out[0] = kiln__emit(&b->e, KILN_OP_GATHER, &a, ops, 2);
    out_batched[0] = true;
    return kiln_ctx_status(b->e.cx);
}

kiln_status kiln__batch_DYNAMIC_SLICE(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                      bool *out_batched) {
    if (indices_batched(op, 1)) return slices_by_gather(b, op, out, out_batched);
    kiln__value *ops[KILN_MAX_RANK + 1];
    ops[0] = op->in[0];
    ops[1] = zero_index(b, op, 1);
    for (int32_t i = 1; i < op->n_in; i++)
        ops[i + 1] = op->in[i];
    kiln__attrs a = kiln__batch_attrs(op->op);
    a.u.slice_sizes = kiln__batch_dims(&a.u.slice_sizes, b->size, 0);
    out[0] = kiln__emit(&b->e, KILN_OP_DYNAMIC_SLICE, &a, ops, op->n_in + 1);
    out_batched[0] = true;
    return kiln_ctx_status(b->e.cx);
}

/* dynamic_update_slice with a start that differs per example: a scatter replacing one
 * window per example into each example's own operand. Scatter skips a window out of
 * bounds where dynamic_update_slice moves it in, so the starts are clamped first. */
static kiln_status updates_by_scatter(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                      bool *out_batched) {
    const kiln_shape *x = &op->op->operands[0]->type->shape, *u = &op->op->operands[1]->type->shape;
    kiln_shape room = {.rank = x->rank};
    for (int32_t d = 0; d < x->rank; d++)
        room.dims[d] = x->dims[d] - u->dims[d];
    kiln__value *ops[3] = {kiln__batch_broadcast(b, op->in[0], op->batched[0]),
                           start_rows(b, op, 2, &room),
                           kiln__batch_broadcast(b, op->in[1], op->batched[1])};
    kiln__attrs a = {.fn = op->op->attrs->fn, .n_regions = 1, .n_results = 1};
    a.region[0] = kiln_region_replace();
    kiln_scatter_params *p = &a.u.scatter;
    p->update_window_dims.count = p->scatter_dims_to_operand_dims.count = x->rank;
    for (int32_t d = 0; d < x->rank; d++) {
        p->update_window_dims.v[d] = d + 1;
        p->scatter_dims_to_operand_dims.v[d] = d + 1;
    }
    p->input_batching_dims = KILN_DIMS(0);
    p->scatter_indices_batching_dims = KILN_DIMS(0);
    p->index_vector_dim = 1;
    p->unique_indices = true; /* one window per example, each into its own operand */
    out[0] = kiln__emit(&b->e, KILN_OP_SCATTER, &a, ops, 3);
    out_batched[0] = true;
    return kiln_ctx_status(b->e.cx);
}

kiln_status kiln__batch_DYNAMIC_UPDATE_SLICE(kiln__batch *b, const kiln__batch_op *op,
                                             kiln__value **out, bool *out_batched) {
    if (indices_batched(op, 2)) return updates_by_scatter(b, op, out, out_batched);
    kiln__value *ops[KILN_MAX_RANK + 2];
    ops[0] = kiln__batch_broadcast(b, op->in[0], op->batched[0]);
    ops[1] = kiln__batch_broadcast(b, op->in[1], op->batched[1]);
    ops[2] = zero_index(b, op, 2);
    for (int32_t i = 2; i < op->n_in; i++)
        ops[i + 1] = op->in[i];
    kiln__attrs a = kiln__batch_attrs(op->op);
    out[0] = kiln__emit(&b->e, KILN_OP_DYNAMIC_UPDATE_SLICE, &a, ops, op->n_in + 1);
    out_batched[0] = true;
    return kiln_ctx_status(b->e.cx);
}

/* pad with a padding value per example: the operand padded with any value, then each
 * example's value selected where the padding is (a mask padded the same way). */
static kiln_status pad_per_example(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                   bool *out_batched) {
    kiln__emitter *e = &b->e;
    const kiln__ir_op *p = op->op;
    kiln__attrs a = kiln__batch_attrs(p);
    kiln__value *x = kiln__batch_broadcast(b, op->in[0], op->batched[0]);
    kiln__value *padded_ops[2] = {x, kiln__emit_scalar(e, x ? x->type->dtype : KILN_F32, 0)};
    kiln__attrs pa = a;
    pa.u.pad.low = kiln__batch_dims(&a.u.pad.low, 0, 0);
    pa.u.pad.high = kiln__batch_dims(&a.u.pad.high, 0, 0);
    pa.u.pad.interior = kiln__batch_dims(&a.u.pad.interior, 0, 0);
    kiln__value *padded = kiln__emit(e, KILN_OP_PAD, &pa, padded_ops, 2);
    /* true at the operand's elements, false at the padding: the op's own pad of a mask */
    kiln__type one = {.dtype = KILN_BOOL, .shape = p->operands[0]->type->shape};
    kiln__value *mask_ops[2] = {kiln__emit_full(e, &one, 1), kiln__emit_scalar(e, KILN_BOOL, 0)};
    kiln__value *mask =
        kiln__batch_broadcast(b, kiln__emit(e, KILN_OP_PAD, &a, mask_ops, 2), false);
    kiln__value *values =
        padded ? kiln__emit_broadcast(e, op->in[1], &padded->type->shape, &KILN_DIMS(0)) : NULL;
    out[0] = kiln__emit_select(e, mask, padded, values);
    out_batched[0] = true;
    return kiln_ctx_status(e->cx);
}

kiln_status kiln__batch_PAD(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                            bool *out_batched) {
    if (op->batched[1]) return pad_per_example(b, op, out, out_batched);
    kiln__attrs a = kiln__batch_attrs(op->op);
    a.u.pad.low = kiln__batch_dims(&a.u.pad.low, 0, 0);
    a.u.pad.high = kiln__batch_dims(&a.u.pad.high, 0, 0);
    a.u.pad.interior = kiln__batch_dims(&a.u.pad.interior, 0, 0);
    kiln__value *ops[2] = {op->in[0], op->in[1]};
    out[0] = kiln__emit(&b->e, KILN_OP_PAD, &a, ops, 2);
    out_batched[0] = true;
    return kiln_ctx_status(b->e.cx);
}

/* Every operand batched (the unbatched ones broadcast), into ops (room for 64); false when
 * there are more. */
static bool all_batched(kiln__batch *b, const kiln__batch_op *op, kiln__value **ops) {
    if (op->n_in > 64) return false;
    for (int32_t i = 0; i < op->n_in; i++)
        ops[i] = kiln__batch_broadcast(b, op->in[i], op->batched[i]);
    return true;
}

kiln_status kiln__batch_CONCATENATE(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                    bool *out_batched) {
    kiln__value *ops[64];
    if (!all_batched(b, op, ops)) return kiln__batch_by_loop(b, op, out, out_batched);
    kiln__attrs a = kiln__batch_attrs(op->op);
    a.u.dimension += 1;
    out[0] = kiln__emit(&b->e, KILN_OP_CONCATENATE, &a, ops, op->n_in);
    out_batched[0] = true;
    return kiln_ctx_status(b->e.cx);
}

kiln_status kiln__batch_SORT(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                             bool *out_batched) {
    kiln__value *ops[64];
    if (!all_batched(b, op, ops)) return kiln__batch_by_loop(b, op, out, out_batched);
    kiln__attrs a = kiln__batch_attrs(op->op);
    a.u.sort.dimension += 1;
    kiln__ir_op *n = kiln__batch_emit_like(b, op->op, &a, ops, op->n_in);
    for (int32_t j = 0; n && j < n->n_results; j++) {
        out[j] = n->results[j];
        out_batched[j] = true;
    }
    return kiln_ctx_status(b->e.cx);
}
