/* Algebraic identities (README.md). Every rewrite either moves an op's uses to a value
 * that already exists or changes an op in place, so the pass never allocates. */
#include <string.h>

#include "passes/passes.h"

static bool type_eq(const kiln__type *a, const kiln__type *b) {
    if (a->dtype != b->dtype || a->shape.rank != b->shape.rank) return false;
    for (int32_t i = 0; i < a->shape.rank; i++)
        if (a->shape.dims[i] != b->shape.dims[i]) return false;
    return true;
}

/* Whether every element of t is 0 (want_one false) or 1 (want_one true). */
static bool splat_is(const kiln_tensor *t, bool want_one) {
    kiln_dtype dt = kiln_tensor_dtype(t);
    size_t size = kiln_dtype_size(dt), n = kiln_tensor_nbytes(t);
    const unsigned char *p = kiln_tensor_data(t);
    if (!p || size == 0 || size > 8) return false;
    for (size_t at = 0; at < n; at += size) {
        const unsigned char *e = p + at;
        bool ok = false;
        switch (dt) {
        case KILN_F16:
        case KILN_BF16: {
            uint16_t v;
            memcpy(&v, e, sizeof v);
            ok = want_one ? v == (dt == KILN_F16 ? 0x3C00u : 0x3F80u) : false;
            break;
        }
        case KILN_F32: {
            float v;
            memcpy(&v, e, sizeof v);
            ok = want_one && v == 1.0f;
            break;
        }
        case KILN_F64: {
            double v;
            memcpy(&v, e, sizeof v);
            ok = want_one && v == 1.0;
            break;
        }
        default: { /* bool and integers, little-endian, zero-extended */
            uint64_t v = 0;
            for (size_t i = 0; i < size; i++)
                v |= (uint64_t)e[i] << (8 * i);
            ok = v == (want_one ? 1u : 0u);
            break;
        }
        }
        if (!ok) return false;
    }
    return true;
}

/* v is a constant (or a broadcast_in_dim of a scalar constant) whose elements are all 0
 * or all 1. */
static bool is_splat(const kiln__value *v, bool want_one) {
    const kiln__ir_op *d = v->def;
    if (d && d->kind == KILN_OP_BROADCAST_IN_DIM) {
        const kiln__ir_op *s = d->operands[0]->def;
        if (!s || s->kind != KILN_OP_CONSTANT || d->operands[0]->type.shape.rank != 0) return false;
        d = s;
    }
    if (!d || d->kind != KILN_OP_CONSTANT || !d->attrs.u.constant) return false;
    return splat_is(d->attrs.u.constant, want_one);
}

static void set_operand(kiln__ir_op *op, int32_t i, kiln__value *v) {
    op->operands[i]->uses--;
    v->uses++;
    op->operands[i] = v;
}

/* Replaces the uses of op's only result with v, when their types are equal. */
static int32_t forward(kiln__ir_op *op, kiln__value *v) {
    if (!type_eq(&op->results[0]->type, &v->type)) return 0;
    return kiln__replace_uses(op->block, op, op->results[0], v) > 0;
}

static bool is_int(kiln_dtype dt) { return kiln_dtype_is_integer(dt); }

static int32_t rewrite(kiln__ir_op *op) {
    if (op->n_results != 1 || op->results[0]->uses == 0) return 0;
    kiln__value *res = op->results[0];
    kiln_dtype dt = res->type.dtype;
    switch (op->kind) {
    case KILN_OP_ADD:
        if (!is_int(dt)) return 0; /* floats: -0 + 0 is +0 */
        for (int32_t i = 0; i < 2; i++)
            if (is_splat(op->operands[1 - i], false)) return forward(op, op->operands[i]);
        return 0;
    case KILN_OP_MULTIPLY:
        if (dt == KILN_BOOL) return 0;
        for (int32_t i = 0; i < 2; i++)
            if (is_splat(op->operands[1 - i], true)) return forward(op, op->operands[i]);
        if (!is_int(dt)) return 0; /* floats: NaN * 0, -x * 0 */
        for (int32_t i = 0; i < 2; i++)
            if (is_splat(op->operands[1 - i], false)) return forward(op, op->operands[1 - i]);
        return 0;
    case KILN_OP_NEGATE: {
        const kiln__ir_op *in = op->operands[0]->def;
        if (in && in->kind == KILN_OP_NEGATE) return forward(op, in->operands[0]);
        return 0;
    }
    case KILN_OP_CONVERT:
    case KILN_OP_BITCAST_CONVERT: return forward(op, op->operands[0]);
    case KILN_OP_RESHAPE: {
        if (type_eq(&op->operands[0]->type, &res->type)) return forward(op, op->operands[0]);
        const kiln__ir_op *in = op->operands[0]->def;
        if (in && in->kind == KILN_OP_RESHAPE) {
            set_operand(op, 0, in->operands[0]);
            return 1;
        }
        return 0;
    }
    case KILN_OP_TRANSPOSE: {
        const kiln_dims *p = &op->attrs.u.permutation;
        bool identity = true;
        for (int32_t i = 0; i < p->count; i++)
            identity &= p->v[i] == i;
        if (identity) return forward(op, op->operands[0]);
        const kiln__ir_op *in = op->operands[0]->def;
        if (!in || in->kind != KILN_OP_TRANSPOSE) return 0;
        const kiln_dims *q = &in->attrs.u.permutation;
        if (q->count != p->count) return 0;
        kiln_dims c = {.count = p->count};
        for (int32_t i = 0; i < p->count; i++) {
            if (p->v[i] < 0 || p->v[i] >= q->count) return 0;
            c.v[i] = q->v[p->v[i]];
        }
        op->attrs.u.permutation = c;
        set_operand(op, 0, in->operands[0]);
        return 1;
    }
    case KILN_OP_SLICE: {
        const kiln__ir_op *in = op->operands[0]->def;
        if (!in || in->kind != KILN_OP_SLICE) return 0;
        const kiln_dims *s2 = &op->attrs.u.slice.start, *t2 = &op->attrs.u.slice.strides;
        const kiln_dims *s1 = &in->attrs.u.slice.start, *t1 = &in->attrs.u.slice.strides;
        int32_t rank = res->type.shape.rank;
        if (s1->count != rank || s2->count != rank || t1->count != rank || t2->count != rank)
            return 0;
        kiln_dims start = {.count = rank}, limit = {.count = rank}, strides = {.count = rank};
        for (int32_t d = 0; d < rank; d++) {
            int64_t n = res->type.shape.dims[d];
            if (n <= 0) return 0; /* empty: left alone */
            start.v[d] = s1->v[d] + s2->v[d] * t1->v[d];
            strides.v[d] = t1->v[d] * t2->v[d];
            limit.v[d] = start.v[d] + (n - 1) * strides.v[d] + 1;
        }
        op->attrs.u.slice.start = start;
        op->attrs.u.slice.limit = limit;
        op->attrs.u.slice.strides = strides;
        set_operand(op, 0, in->operands[0]);
        return 1;
    }
    default: return 0;
    }
}

static int32_t canon_block(kiln__block *b) {
    int32_t changes = 0;
    for (kiln__ir_op *op = b->first; op; op = op->next) {
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) changes += canon_block(op->regions[r]);
        changes += rewrite(op);
    }
    return changes;
}

int32_t kiln__pass_canonicalize(kiln_module *m) {
    int32_t changes = 0;
    for (int32_t f = 0; f < m->n_funcs; f++)
        changes += canon_block(m->funcs[f]->body);
    return changes;
}
