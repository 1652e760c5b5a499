/* SPDX-License-Identifier: Apache-2.0 */
/* Algebraic identities (README.md). Every rewrite either moves an op's uses to a value
 * that already exists or changes an op in place; changing one first gives it attributes
 * of its own (kiln__op_attrs_mut: they may be shared), and when that copy cannot be made
 * the op stays as it is. */
#include <string.h>

#include "ops/dynamic.h"
#include "passes/passes.h"

/* The splat values the identities look for. Integers and i1: ZERO and ONE. Floats: ONE,
 * and the two zeros by their bits, which are not interchangeable: x + (-0) and x - (+0)
 * are x for every x (also -0 and NaN), x + (+0) and x - (-0) are not (-0 + +0 is +0). */
typedef enum splat_kind { ZERO, ONE, POS_ZERO, NEG_ZERO } splat_kind;

/* Whether every element of t is `want`. */
static bool splat_is(const kiln_tensor *t, splat_kind want) {
    kiln_dtype dt = kiln_tensor_dtype(t);
    size_t size = kiln_dtype_size(dt), n = kiln_tensor_nbytes(t);
    const unsigned char *p = kiln_tensor_data(t);
    if (!p || size == 0 || size > 8 || kiln_dtype_is_complex(dt)) return false;
    bool fl = kiln_dtype_is_float(dt);
    if (fl && want == ZERO) return false; /* floats name their zero's sign */
    if (!fl && (want == POS_ZERO || want == NEG_ZERO)) return false;
    uint64_t sign = UINT64_C(1) << (8 * size - 1), bits = 0;
    switch (want) {
    case ZERO:
    case POS_ZERO: bits = 0; break;
    case NEG_ZERO: bits = sign; break;
    case ONE:
        switch (dt) {
        case KILN_F16: bits = 0x3C00u; break;
        case KILN_BF16: bits = 0x3F80u; break;
        case KILN_F32: bits = 0x3F800000u; break;
        case KILN_F64: bits = UINT64_C(0x3FF0000000000000); break;
        default: bits = 1; break;
        }
        break;
    }
    for (size_t at = 0; at < n; at += size) {
        /* Little-endian, zero-extended: compares integers by value, floats by bits. */
        uint64_t v = 0;
        for (size_t i = 0; i < size; i++)
            v |= (uint64_t)p[at + i] << (8 * i);
        if (v != bits) return false;
    }
    return true;
}

/* The value of v when it is a constant, or of the scalar constant it broadcasts (then
 * *broadcast is set); NULL otherwise. */
static const kiln_tensor *constant_of(const kiln__value *v, bool *broadcast) {
    const kiln__ir_op *d = v->def;
    *broadcast = false;
    if (d && d->kind == KILN_OP_BROADCAST_IN_DIM && d->operands[0]->type->shape.rank == 0) {
        d = d->operands[0]->def;
        *broadcast = true;
    }
    return d && d->kind == KILN_OP_CONSTANT ? d->attrs->u.constant : NULL;
}

/* v is a constant (or a broadcast_in_dim of a scalar constant) whose elements are all
 * `want`. */
static bool is_splat(const kiln__value *v, splat_kind want) {
    bool broadcast;
    const kiln_tensor *t = constant_of(v, &broadcast);
    return t && splat_is(t, want);
}

/* Replaces the uses of op's only result with v, when their types are equal. */
static int32_t forward(kiln__ir_op *op, kiln__value *v) {
    if (!kiln__type_equal(op->results[0]->type, v->type)) return 0;
    return kiln__replace_uses(op->block, op, op->results[0], v) > 0;
}

/* Integer dtypes and i1 (where add is or and multiply is and). */
static bool is_exact(kiln_dtype dt) { return dt == KILN_BOOL || kiln_dtype_is_integer(dt); }

static bool is_identity_perm(const kiln_dims *p) {
    for (int32_t i = 0; i < p->count; i++)
        if (p->v[i] != i) return false;
    return true;
}

/* transpose(dot_general(a, b)) that swaps the two free groups (batch dimensions in place)
 * is dot_general(b, a): the product is made in the order wanted instead of made and moved
 * (a gradient's outer product x^T g, batched by kiln_vmap, is such a pair). The dot takes
 * the transpose's type; it must have no other use. */
static int32_t swapped_dot(kiln_module *m, kiln__ir_op *op) {
    kiln__ir_op *dot = op->operands[0]->def;
    if (!dot || dot->kind != KILN_OP_DOT_GENERAL || dot->results[0]->uses != 1) return 0;
    const kiln_dot_params *d = &dot->attrs->u.dot;
    const kiln_dims *p = &op->attrs->u.permutation;
    int32_t nb = d->lhs_batching_dims.count;
    int32_t nl = dot->operands[0]->type->shape.rank - nb - d->lhs_contracting_dims.count;
    int32_t nr = dot->operands[1]->type->shape.rank - nb - d->rhs_contracting_dims.count;
    if (nl < 1 || nr < 1 || p->count != nb + nl + nr) return 0;
    for (int32_t i = 0; i < p->count; i++) {
        int64_t want = i < nb ? i : i < nb + nr ? nb + nl + (i - nb) : nb + (i - nb - nr);
        if (p->v[i] != want) return 0;
    }
    kiln__attrs *own = kiln__op_attrs_mut(m, dot);
    if (!own) return 0; /* out of memory: both ops stay as they are */
    if (!kiln__value_set_type(m, dot->results[0], op->results[0]->type)) return 0;
    kiln_dot_params s = own->u.dot;
    own->u.dot = (kiln_dot_params){.lhs_batching_dims = s.rhs_batching_dims,
                                   .rhs_batching_dims = s.lhs_batching_dims,
                                   .lhs_contracting_dims = s.rhs_contracting_dims,
                                   .rhs_contracting_dims = s.lhs_contracting_dims};
    kiln__value *a = dot->operands[0];
    dot->operands[0] = dot->operands[1];
    dot->operands[1] = a;
    return forward(op, dot->results[0]);
}

/* Folds op's operand, made by `in` of op's kind, into op: op then reads in's operand, and
 * the caller sets the merged attributes in the copy returned (NULL when out of memory: the
 * op stays as it is). */
static kiln__attrs *merge_inner(kiln_module *m, kiln__ir_op *op, const kiln__ir_op *in) {
    kiln__attrs *own = kiln__op_attrs_mut(m, op);
    if (own) kiln__set_operand(op, 0, in->operands[0]);
    return own;
}

/* The map i -> b[a[i]] (a transpose of a transpose, a broadcast of a broadcast); false
 * where some a[i] is not an index of b. */
static bool compose(const kiln_dims *a, const kiln_dims *b, kiln_dims *out) {
    *out = (kiln_dims){.count = a->count};
    for (int32_t i = 0; i < a->count; i++) {
        if (a->v[i] < 0 || a->v[i] >= b->count) return false;
        out->v[i] = b->v[a->v[i]];
    }
    return true;
}

static int32_t rewrite_transpose(kiln_module *m, kiln__ir_op *op) {
    const kiln_dims *p = &op->attrs->u.permutation;
    if (is_identity_perm(p)) return forward(op, op->operands[0]);
    if (swapped_dot(m, op)) return 1;
    const kiln__ir_op *in = op->operands[0]->def;
    if (!in || in->kind != KILN_OP_TRANSPOSE) return 0;
    const kiln_dims *q = &in->attrs->u.permutation;
    if (q->count != p->count) return 0;
    kiln_dims c;
    if (!compose(p, q, &c)) return 0;
    kiln__attrs *own = merge_inner(m, op, in);
    if (!own) return 0;
    own->u.permutation = c;
    return 1;
}

static int32_t rewrite_slice(kiln_module *m, kiln__ir_op *op) {
    kiln__value *res = op->results[0];
    /* A slice keeping its operand's type keeps every element: start 0, and a stride
     * other than 1 only over a dimension of size 1. */
    if (kiln__type_equal(op->operands[0]->type, res->type)) return forward(op, op->operands[0]);
    const kiln__ir_op *in = op->operands[0]->def;
    if (!in || in->kind != KILN_OP_SLICE) return 0;
    const kiln_dims *s2 = &op->attrs->u.slice.start, *t2 = &op->attrs->u.slice.strides;
    const kiln_dims *s1 = &in->attrs->u.slice.start, *t1 = &in->attrs->u.slice.strides;
    int32_t rank = res->type->shape.rank;
    if (s1->count != rank || s2->count != rank || t1->count != rank || t2->count != rank) return 0;
    kiln_dims start = {.count = rank}, limit = {.count = rank}, strides = {.count = rank};
    for (int32_t d = 0; d < rank; d++) {
        int64_t n = res->type->shape.dims[d];
        if (n <= 0) return 0; /* empty: left alone */
        start.v[d] = s1->v[d] + s2->v[d] * t1->v[d];
        strides.v[d] = t1->v[d] * t2->v[d];
        limit.v[d] = start.v[d] + (n - 1) * strides.v[d] + 1;
    }
    kiln__attrs *own = merge_inner(m, op, in);
    if (!own) return 0;
    own->u.slice.start = start;
    own->u.slice.limit = limit;
    own->u.slice.strides = strides;
    return 1;
}

/* reverse(reverse(x, A), B) is reverse(x, A xor B); reversing only dimensions of size 1
 * (or none) is x. */
static int32_t rewrite_reverse(kiln_module *m, kiln__ir_op *op) {
    const kiln__type *t = op->operands[0]->type;
    const kiln_dims *b = &op->attrs->u.reverse_dims;
    bool noop = true;
    for (int32_t i = 0; i < b->count; i++)
        if (b->v[i] < 0 || b->v[i] >= t->shape.rank || t->shape.dims[b->v[i]] > 1) noop = false;
    if (noop) return forward(op, op->operands[0]);
    const kiln__ir_op *in = op->operands[0]->def;
    if (!in || in->kind != KILN_OP_REVERSE) return 0;
    const kiln_dims *a = &in->attrs->u.reverse_dims;
    bool flip[KILN_MAX_RANK] = {false};
    for (int32_t i = 0; i < a->count; i++) {
        if (a->v[i] < 0 || a->v[i] >= KILN_MAX_RANK) return 0;
        flip[a->v[i]] = !flip[a->v[i]];
    }
    for (int32_t i = 0; i < b->count; i++)
        flip[b->v[i]] = !flip[b->v[i]];
    kiln_dims c = {.count = 0};
    for (int32_t d = 0; d < t->shape.rank; d++)
        if (flip[d]) c.v[c.count++] = d;
    kiln__attrs *own = merge_inner(m, op, in);
    if (!own) return 0;
    own->u.reverse_dims = c;
    return 1;
}

/* broadcast_in_dim with the identity mapping onto the same type is x; a broadcast of a
 * broadcast is one broadcast (x's dimension i goes where the inner one sent it, then where
 * the outer one sends that). */
static int32_t rewrite_broadcast(kiln_module *m, kiln__ir_op *op) {
    const kiln_dims *d = &op->attrs->u.broadcast.dims;
    if (kiln__type_equal(op->operands[0]->type, op->results[0]->type) && is_identity_perm(d))
        return forward(op, op->operands[0]);
    const kiln__ir_op *in = op->operands[0]->def;
    if (!in || in->kind != KILN_OP_BROADCAST_IN_DIM) return 0;
    const kiln_dims *e = &in->attrs->u.broadcast.dims;
    kiln_dims c;
    if (!compose(e, d, &c)) return 0;
    kiln__attrs *own = merge_inner(m, op, in);
    if (!own) return 0;
    own->u.broadcast.dims = c;
    return 1;
}

static bool pad_is_noop(const kiln__ir_op *op) {
    const kiln_dims *l = &op->attrs->u.pad.low, *h = &op->attrs->u.pad.high,
                    *n = &op->attrs->u.pad.interior;
    for (int32_t i = 0; i < l->count; i++)
        if (l->v[i] != 0) return false;
    for (int32_t i = 0; i < h->count; i++)
        if (h->v[i] != 0) return false;
    for (int32_t i = 0; i < n->count; i++)
        if (n->v[i] != 0) return false;
    return true;
}

/* The operand of a unary op `kind` defining v, or NULL. */
static kiln__value *inner_of(const kiln__value *v, kiln_op kind) {
    const kiln__ir_op *d = v->def;
    return d && d->kind == kind && d->n_operands == 1 ? d->operands[0] : NULL;
}

/* A movement op (slice, reshape, transpose, reverse) of a scalar's broadcast is that
 * scalar broadcast to the op's type: the op becomes the broadcast, so nothing of the
 * operand's size is made (a large splat constant reaches here as such a broadcast). */
static int32_t moved_scalar_broadcast(kiln_module *m, kiln__ir_op *op) {
    const kiln__ir_op *in = op->operands[0]->def;
    if (!in || in->kind != KILN_OP_BROADCAST_IN_DIM || in->operands[0]->type->shape.rank != 0)
        return 0;
    /* Out of memory for the broadcast's attributes: the op stays as it is. */
    kiln__attrs *own = kiln__op_set_kind(m, op, KILN_OP_BROADCAST_IN_DIM);
    if (!own) return 0;
    own->u.broadcast.shape = op->results[0]->type->shape;
    kiln__set_operand(op, 0, in->operands[0]);
    return 1;
}

/* The values of v when it is a constant integer tensor (or a scalar one broadcast). */
static bool constant_values(const kiln__value *v, int64_t *out, int64_t cap) {
    bool broadcast;
    const kiln_tensor *t = constant_of(v, &broadcast);
    int64_t n = 0;
    if (!t || !kiln_shape_numel(&v->type->shape, &n) || n > cap) return false;
    if (!broadcast) return kiln__dynamic_values(t, out, cap);
    if (!kiln__dynamic_values(t, out, 1)) return false;
    for (int64_t i = 1; i < n; i++)
        out[i] = out[0];
    return true;
}

/* A dynamic-shape op whose shape operands are constants is its static form (ops/dynamic.h),
 * which the backends fuse and plan as any other. One whose values do not check out stays as
 * it is: running it says why. */
static int32_t to_static_form(kiln_module *m, kiln__ir_op *op) {
    int32_t data = kiln__dynamic_data_operands(op->kind);
    if (data < 0 || op->n_operands <= data || op->n_operands > data + 3) return 0;
    kiln__type types[5];
    int64_t values[3][2 * KILN_MAX_RANK];
    const int64_t *rows[3];
    for (int32_t i = 0; i < op->n_operands; i++) {
        types[i] = *op->operands[i]->type;
        if (i < data) continue;
        rows[i - data] = values[i - data];
        if (!constant_values(op->operands[i], values[i - data], 2 * KILN_MAX_RANK)) return 0;
    }
    kiln__static_form f;
    if (kiln__dynamic_static_form(NULL, op->kind, op->attrs, types, op->n_operands,
                                  op->results[0]->type, rows, &f) != KILN_OK)
        return 0;
    kiln__attrs *own = kiln__op_set_kind(m, op, f.kind);
    if (!own) return 0; /* out of memory: the op stays dynamic, and runs so */
    kiln__attrs_copy(own, &f.attrs, f.kind);
    for (int32_t i = f.n_operands; i < op->n_operands; i++)
        op->operands[i]->uses--;
    op->n_operands = f.n_operands;
    return 1;
}

static int32_t rewrite(kiln_module *m, kiln__ir_op *op) {
    if (op->n_results != 1 || op->results[0]->uses == 0) return 0;
    kiln__value *res = op->results[0];
    kiln_dtype dt = res->type->dtype;
    kiln__value *a = op->n_operands > 0 ? op->operands[0] : NULL;
    kiln__value *b = op->n_operands > 1 ? op->operands[1] : NULL;
    switch (op->kind) {
    case KILN_OP_ADD:
        /* Integers: x + 0. Floats: only x + (-0); x + (+0) turns -0 into +0. */
        for (int32_t i = 0; i < 2; i++)
            if (is_splat(op->operands[1 - i], is_exact(dt) ? ZERO : NEG_ZERO))
                return forward(op, op->operands[i]);
        return 0;
    case KILN_OP_SUBTRACT:
        /* Integers: x - 0. Floats: only x - (+0); -0 - (-0) is +0. */
        if (is_splat(b, is_exact(dt) ? ZERO : POS_ZERO)) return forward(op, a);
        return 0;
    case KILN_OP_MULTIPLY:
        for (int32_t i = 0; i < 2; i++)
            if (is_splat(op->operands[1 - i], ONE)) return forward(op, op->operands[i]);
        if (!is_exact(dt)) return 0; /* floats: NaN * 0, -x * 0 */
        for (int32_t i = 0; i < 2; i++)
            if (is_splat(op->operands[1 - i], ZERO)) return forward(op, op->operands[1 - i]);
        return 0;
    case KILN_OP_DIVIDE: return is_splat(b, ONE) ? forward(op, a) : 0;
    case KILN_OP_MAXIMUM:
    case KILN_OP_MINIMUM:
    case KILN_OP_AND:
    case KILN_OP_OR: return a == b ? forward(op, a) : 0;
    case KILN_OP_SELECT: return op->operands[1] == op->operands[2] ? forward(op, b) : 0;
    case KILN_OP_NEGATE:
    case KILN_OP_NOT: {
        kiln__value *x = inner_of(a, op->kind);
        return x ? forward(op, x) : 0;
    }
    case KILN_OP_ABS: /* abs(abs(x)) is abs(x) */
        return inner_of(a, KILN_OP_ABS) ? forward(op, a) : 0;
    case KILN_OP_CONVERT:
    case KILN_OP_BITCAST_CONVERT: return forward(op, a);
    case KILN_OP_RESHAPE: {
        if (kiln__type_equal(a->type, res->type)) return forward(op, a);
        if (moved_scalar_broadcast(m, op)) return 1;
        const kiln__ir_op *in = a->def;
        if (in && in->kind == KILN_OP_RESHAPE) {
            kiln__set_operand(op, 0, in->operands[0]);
            return 1;
        }
        return 0;
    }
    case KILN_OP_TRANSPOSE: return moved_scalar_broadcast(m, op) ? 1 : rewrite_transpose(m, op);
    case KILN_OP_SLICE: return moved_scalar_broadcast(m, op) ? 1 : rewrite_slice(m, op);
    case KILN_OP_REVERSE: return moved_scalar_broadcast(m, op) ? 1 : rewrite_reverse(m, op);
    case KILN_OP_BROADCAST_IN_DIM: return rewrite_broadcast(m, op);
    case KILN_OP_PAD: return pad_is_noop(op) ? forward(op, a) : 0;
    case KILN_OP_CONCATENATE: return op->n_operands == 1 ? forward(op, a) : 0;
    case KILN_OP_DYNAMIC_IOTA:
    case KILN_OP_DYNAMIC_BROADCAST_IN_DIM:
    case KILN_OP_DYNAMIC_RESHAPE:
    case KILN_OP_DYNAMIC_PAD:
    case KILN_OP_DYNAMIC_GATHER:
    case KILN_OP_DYNAMIC_CONV: return to_static_form(m, op);
    default: return 0;
    }
}

static int32_t canon_block(kiln_module *m, kiln__block *b) {
    int32_t changes = 0;
    for (kiln__ir_op *op = b->first; op; op = op->next) {
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) changes += canon_block(m, op->regions[r]);
        changes += rewrite(m, op);
    }
    return changes;
}

int32_t kiln__pass_canonicalize(kiln_module *m) {
    int32_t changes = 0;
    for (int32_t f = 0; f < m->n_funcs; f++)
        changes += canon_block(m, m->funcs[f]->body);
    return changes;
}
