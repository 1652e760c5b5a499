/* SPDX-License-Identifier: Apache-2.0 */
/* Common-subexpression elimination: a later op of a block that computes what an earlier op
 * of the same block computes (same kind, operands, result types and attributes) has its
 * uses moved to the earlier op's results; dce then removes it. Conservative: only ops
 * whose attributes are compared field by field below take part; ops with regions never
 * do.
 *
 * Linear in the number of ops: each block's ops are hash-consed (a table keyed by kind,
 * operands, result types and attributes), and uses move to the replacements as the walk
 * reaches them (nested regions and block results included), instead of a scan of the rest
 * of the block per replacement. A value's `id` says whether it was replaced: the walk sets
 * it on every value before any use can see it (SSA: a value is defined before its uses),
 * 0 for a value that stays and -(k + 1) for one replaced by the k-th replacement, so a use
 * finds its replacement without a lookup in a map. */
#include <string.h>

#include "base/alloc.h"
#include "passes/passes.h"

static bool shape_eq(const kiln_shape *a, const kiln_shape *b) {
    if (a->rank != b->rank) return false;
    for (int32_t i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

static bool constant_eq(const kiln_tensor *a, const kiln_tensor *b) {
    if (a == b) return true;
    if (!a || !b) return false;
    if (kiln_tensor_dtype(a) != kiln_tensor_dtype(b)) return false;
    if (!shape_eq(kiln_tensor_shape(a), kiln_tensor_shape(b))) return false;
    size_t n = kiln_tensor_nbytes(a);
    if (n != kiln_tensor_nbytes(b)) return false;
    const void *da = kiln_tensor_data(a), *db = kiln_tensor_data(b);
    if (!da || !db) return false;
    return memcmp(da, db, n) == 0;
}

/* Whether the attributes of two ops of the same kind are equal; false for kinds whose
 * attributes are not compared here. */
static bool attrs_eq(kiln_op kind, const kiln__attrs *a, const kiln__attrs *b) {
    switch (kind) {
    case KILN_OP_COMPARE:
        return a->u.compare.direction == b->u.compare.direction &&
               a->u.compare.type == b->u.compare.type;
    case KILN_OP_CONVERT:
    case KILN_OP_BITCAST_CONVERT: return a->u.convert_to == b->u.convert_to;
    case KILN_OP_REDUCE_PRECISION:
        return a->u.precision.exponent_bits == b->u.precision.exponent_bits &&
               a->u.precision.mantissa_bits == b->u.precision.mantissa_bits;
    case KILN_OP_CONSTANT: return constant_eq(a->u.constant, b->u.constant);
    case KILN_OP_IOTA:
        return a->u.iota.dtype == b->u.iota.dtype && a->u.iota.dimension == b->u.iota.dimension &&
               shape_eq(&a->u.iota.shape, &b->u.iota.shape);
    case KILN_OP_BROADCAST_IN_DIM:
        return shape_eq(&a->u.broadcast.shape, &b->u.broadcast.shape) &&
               kiln__dims_equal(&a->u.broadcast.dims, &b->u.broadcast.dims);
    case KILN_OP_RESHAPE: return shape_eq(&a->u.reshape, &b->u.reshape);
    case KILN_OP_TRANSPOSE: return kiln__dims_equal(&a->u.permutation, &b->u.permutation);
    case KILN_OP_SLICE:
        return kiln__dims_equal(&a->u.slice.start, &b->u.slice.start) &&
               kiln__dims_equal(&a->u.slice.limit, &b->u.slice.limit) &&
               kiln__dims_equal(&a->u.slice.strides, &b->u.slice.strides);
    default:
        /* Other elementwise ops have no attributes. */
        return kiln__op_has(kind, KILN_OPF_ELEMENTWISE);
    }
}

static bool same_op(const kiln__ir_op *a, const kiln__ir_op *b) {
    if (a->kind != b->kind || a->n_operands != b->n_operands || a->n_results != b->n_results)
        return false;
    if (a->n_regions != 0 || b->n_regions != 0) return false;
    for (int32_t i = 0; i < a->n_operands; i++)
        if (a->operands[i] != b->operands[i]) return false;
    /* Types are interned in the module: equal types are the same pointer. */
    for (int32_t i = 0; i < a->n_results; i++)
        if (a->results[i]->type != b->results[i]->type) return false;
    return attrs_eq(a->kind, a->attrs, b->attrs);
}

static bool live(const kiln__ir_op *op) {
    for (int32_t i = 0; i < op->n_results; i++)
        if (op->results[i]->uses > 0) return true;
    return false;
}

/* ---- hashing: the same fields as same_op compares ------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_dims(uint64_t h, const kiln_dims *d) {
    h = mix(h, (uint64_t)d->count);
    for (int32_t i = 0; i < d->count; i++)
        h = mix(h, (uint64_t)d->v[i]);
    return h;
}

static uint64_t hash_shape(uint64_t h, const kiln_shape *s) {
    h = mix(h, (uint64_t)s->rank);
    for (int32_t i = 0; i < s->rank; i++)
        h = mix(h, (uint64_t)s->dims[i]);
    return h;
}

/* Of a constant: dtype, shape and (at most) its first 256 bytes. */
static uint64_t hash_constant(uint64_t h, const kiln_tensor *t) {
    if (!t) return h;
    h = mix(h, (uint64_t)kiln_tensor_dtype(t));
    h = hash_shape(h, kiln_tensor_shape(t));
    const unsigned char *d = kiln_tensor_data(t);
    size_t n = kiln_tensor_nbytes(t);
    for (size_t i = 0; d && i < n && i < 256; i++)
        h = mix(h, d[i]);
    return h;
}

static uint64_t hash_attrs(kiln_op kind, const kiln__attrs *a) {
    uint64_t h = 0;
    switch (kind) {
    case KILN_OP_COMPARE:
        return mix(mix(h, (uint64_t)a->u.compare.direction), (uint64_t)a->u.compare.type);
    case KILN_OP_CONVERT:
    case KILN_OP_BITCAST_CONVERT: return mix(h, (uint64_t)a->u.convert_to);
    case KILN_OP_REDUCE_PRECISION:
        return mix(mix(h, (uint64_t)a->u.precision.exponent_bits),
                   (uint64_t)a->u.precision.mantissa_bits);
    case KILN_OP_CONSTANT: return hash_constant(h, a->u.constant);
    case KILN_OP_IOTA:
        return hash_shape(mix(mix(h, (uint64_t)a->u.iota.dtype), (uint64_t)a->u.iota.dimension),
                          &a->u.iota.shape);
    case KILN_OP_BROADCAST_IN_DIM:
        return hash_dims(hash_shape(h, &a->u.broadcast.shape), &a->u.broadcast.dims);
    case KILN_OP_RESHAPE: return hash_shape(h, &a->u.reshape);
    case KILN_OP_TRANSPOSE: return hash_dims(h, &a->u.permutation);
    case KILN_OP_SLICE:
        return hash_dims(hash_dims(hash_dims(h, &a->u.slice.start), &a->u.slice.limit),
                         &a->u.slice.strides);
    default: return h;
    }
}

static uint64_t hash_op(const kiln__ir_op *op) {
    uint64_t h = mix(mix((uint64_t)op->kind, (uint64_t)op->n_operands), (uint64_t)op->n_results);
    for (int32_t i = 0; i < op->n_operands; i++)
        h = mix(h, (uint64_t)(uintptr_t)op->operands[i]);
    for (int32_t i = 0; i < op->n_results; i++)
        h = hash_shape(mix(h, (uint64_t)op->results[i]->type->dtype), &op->results[i]->type->shape);
    return mix(h, hash_attrs(op->kind, op->attrs));
}

/* ---- one block ---------------------------------------------------------------------------- */

/* The block's live ops so far, by hash (open addressing; cap a power of two, at most two
 * thirds full). Each slot keeps 32 bits of its op's hash beside it, so a probe past
 * another op compares those, not the ops (whose memory a table of 10^5 ops would
 * otherwise fetch at every step). */
typedef struct op_table {
    const kiln__ir_op **ops;
    uint32_t *tags;
    size_t cap;
    unsigned shift; /* 64 - log2(cap): the slot is the top bits of the mixed hash */
} op_table;

/* The earlier op equal to op, or NULL after adding op. */
static const kiln__ir_op *find_or_add(op_table *t, const kiln__ir_op *op) {
    uint64_t h = hash_op(op) * 0x9e3779b97f4a7c15ull;
    uint32_t tag = (uint32_t)h;
    for (size_t i = (size_t)(h >> t->shift);; i = (i + 1) & (t->cap - 1)) {
        if (!t->ops[i]) {
            t->ops[i] = op;
            t->tags[i] = tag;
            return NULL;
        }
        if (t->tags[i] == tag && same_op(t->ops[i], op)) return t->ops[i];
    }
}

/* The replacements so far: a replaced value's id is -(its index + 1). */
typedef struct replacements {
    kiln_ctx *cx;
    kiln__value **to;
    int32_t n, cap;
} replacements;

static bool add_replacement(replacements *r, kiln__value *from, kiln__value *to) {
    if (r->n == r->cap) {
        int32_t cap = r->cap ? 2 * r->cap : 256;
        kiln__value **p = kiln__alloc(r->cx, (size_t)cap * sizeof *p, _Alignof(void *), "cse");
        if (!p) return false;
        if (r->to) {
            memcpy(p, r->to, (size_t)r->n * sizeof *p);
            kiln__free(r->cx, r->to, (size_t)r->cap * sizeof *p);
        }
        r->to = p;
        r->cap = cap;
    }
    r->to[r->n] = to;
    from->id = -(++r->n);
    return true;
}

/* Moves each use of a replaced value to its replacement. */
static void rewrite(kiln__value **vals, int32_t n, const replacements *r) {
    for (int32_t i = 0; i < n; i++) {
        if (vals[i]->id >= 0) continue;
        kiln__value *to = r->to[-vals[i]->id - 1];
        vals[i]->uses--;
        to->uses++;
        vals[i] = to;
    }
}

/* Whether an op may be found equal to another (same_op can hold): attrs_eq holds for an
 * op's attributes and themselves exactly for the kinds it compares. */
static bool comparable(const kiln__ir_op *op) {
    return op->n_regions == 0 && attrs_eq(op->kind, op->attrs, op->attrs);
}

static int32_t cse_block(kiln_ctx *cx, kiln__block *b, replacements *r) {
    int32_t changes = 0;
    for (int32_t i = 0; i < b->n_args; i++)
        b->args[i]->id = 0;
    size_t n_ops = (size_t)b->n_ops;
    op_table t = {NULL, NULL, 16, 60};
    while (2 * t.cap < 3 * n_ops) {
        t.cap *= 2;
        t.shift--;
    }
    /* Out of memory: no table, no elimination in this block (uses still move, so that what
     * outer blocks replaced stays right), and no error: the pass only optimizes. */
    kiln_status before = kiln_ctx_status(cx);
    t.ops = kiln__calloc(cx, t.cap * sizeof *t.ops, _Alignof(void *), "cse");
    t.tags = t.ops ? kiln__alloc(cx, t.cap * sizeof *t.tags, _Alignof(uint32_t), "cse") : NULL;
    if (!t.tags && before == KILN_OK) kiln_ctx_clear_error(cx);
    for (kiln__ir_op *op = b->first; op; op = op->next) {
        rewrite(op->operands, op->n_operands, r);
        for (int32_t i = 0; i < op->n_regions; i++)
            if (op->regions[i]) changes += cse_block(cx, op->regions[i], r);
        for (int32_t i = 0; i < op->n_results; i++)
            op->results[i]->id = 0;
        if (!t.tags || !comparable(op) || !live(op)) continue;
        const kiln__ir_op *prev = find_or_add(&t, op);
        if (!prev) continue;
        int32_t n_before = r->n, i = 0;
        while (i < op->n_results && add_replacement(r, op->results[i], prev->results[i]))
            i++;
        if (i < op->n_results) { /* out of memory: keep this op; nothing half-replaced */
            for (int32_t j = 0; j < op->n_results; j++)
                op->results[j]->id = 0;
            r->n = n_before;
            if (before == KILN_OK) kiln_ctx_clear_error(cx);
            continue;
        }
        changes++;
    }
    rewrite(b->results, b->n_results, r);
    if (t.ops) kiln__free(cx, t.ops, t.cap * sizeof *t.ops);
    if (t.tags) kiln__free(cx, t.tags, t.cap * sizeof *t.tags);
    return changes;
}

int32_t kiln__pass_cse(kiln_module *m) {
    int32_t changes = 0;
    for (int32_t f = 0; f < m->n_funcs; f++) {
        replacements r = {.cx = m->cx};
        changes += cse_block(m->cx, m->funcs[f]->body, &r);
        if (r.to) kiln__free(m->cx, r.to, (size_t)r.cap * sizeof *r.to);
    }
    return changes;
}
