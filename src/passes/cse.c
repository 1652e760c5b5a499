/* Common-subexpression elimination: a later op of a block that computes what an earlier op
 * of the same block computes (same kind, operands, result types and attributes) has its
 * uses moved to the earlier op's results; dce then removes it. Conservative: only ops
 * whose attributes are compared field by field below take part; ops with regions never
 * do.
 *
 * Linear in the number of ops: each block's ops are hash-consed (a table keyed by kind,
 * operands, result types and attributes), and uses move through one map from replaced
 * values to their replacements, applied to each op's operands as the walk reaches it
 * (nested regions and block results included), instead of a scan of the rest of the block
 * per replacement. */
#include <string.h>

#include "base/alloc.h"
#include "ir/clone.h"
#include "passes/passes.h"

static bool dims_eq(const kiln_dims *a, const kiln_dims *b) {
    if (a->count != b->count) return false;
    for (int32_t i = 0; i < a->count; i++)
        if (a->v[i] != b->v[i]) return false;
    return true;
}

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
    case KILN_OP_CONSTANT: return constant_eq(a->u.constant, b->u.constant);
    case KILN_OP_IOTA:
        return a->u.iota.dtype == b->u.iota.dtype && a->u.iota.dimension == b->u.iota.dimension &&
               shape_eq(&a->u.iota.shape, &b->u.iota.shape);
    case KILN_OP_BROADCAST_IN_DIM:
        return shape_eq(&a->u.broadcast.shape, &b->u.broadcast.shape) &&
               dims_eq(&a->u.broadcast.dims, &b->u.broadcast.dims);
    case KILN_OP_RESHAPE: return shape_eq(&a->u.reshape, &b->u.reshape);
    case KILN_OP_TRANSPOSE: return dims_eq(&a->u.permutation, &b->u.permutation);
    case KILN_OP_SLICE:
        return dims_eq(&a->u.slice.start, &b->u.slice.start) &&
               dims_eq(&a->u.slice.limit, &b->u.slice.limit) &&
               dims_eq(&a->u.slice.strides, &b->u.slice.strides);
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

/* The block's live ops so far, by hash (open addressing; cap a power of two). Each slot
 * keeps its op's hash, so a probe past another op compares hashes, not the ops (whose
 * memory a table of 10^5 ops would otherwise fetch at every step). */
typedef struct op_slot {
    uint64_t hash;
    const kiln__ir_op *op;
} op_slot;

typedef struct op_table {
    op_slot *slots;
    size_t cap;
    unsigned shift; /* 64 - log2(cap): the slot is the top bits of the mixed hash */
} op_table;

/* The earlier op equal to op, or NULL after adding op. */
static const kiln__ir_op *find_or_add(op_table *t, const kiln__ir_op *op) {
    uint64_t h = hash_op(op);
    for (size_t i = (size_t)((h * 0x9e3779b97f4a7c15ull) >> t->shift);; i = (i + 1) & (t->cap - 1)) {
        op_slot *s = &t->slots[i];
        if (!s->op) {
            *s = (op_slot){h, op};
            return NULL;
        }
        if (s->hash == h && same_op(s->op, op)) return s->op;
    }
}

/* Moves each use of a replaced value to its replacement (one lookup per use). */
static void rewrite(kiln__value **vals, int32_t n, const kiln__vmap *map) {
    if (map->n == 0) return;
    for (int32_t i = 0; i < n; i++) {
        kiln__value *to = kiln__vmap_get(map, vals[i]);
        if (!to) continue;
        vals[i]->uses--;
        to->uses++;
        vals[i] = to;
    }
}

static int32_t cse_block(kiln_ctx *cx, kiln__block *b, kiln__vmap *map) {
    int32_t changes = 0;
    size_t n_ops = (size_t)b->n_ops;
    op_table t = {NULL, 16, 60};
    while (t.cap < 2 * n_ops) {
        t.cap *= 2;
        t.shift--;
    }
    /* Out of memory: no table, no elimination in this block (uses still move, so that what
     * outer blocks replaced stays right), and no error: the pass only optimizes. */
    kiln_status before = kiln_ctx_status(cx);
    t.slots = kiln__alloc(cx, t.cap * sizeof *t.slots, _Alignof(void *), "cse");
    if (t.slots)
        memset(t.slots, 0, t.cap * sizeof *t.slots);
    else if (before == KILN_OK)
        kiln_ctx_clear_error(cx);
    for (kiln__ir_op *op = b->first; op; op = op->next) {
        rewrite(op->operands, op->n_operands, map);
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) changes += cse_block(cx, op->regions[r], map);
        if (op->n_regions != 0 || !live(op) || !t.slots) continue;
        const kiln__ir_op *prev = find_or_add(&t, op);
        if (!prev) continue;
        bool ok = true;
        for (int32_t i = 0; i < op->n_results && ok; i++)
            ok = kiln__vmap_put(map, op->results[i], prev->results[i]);
        if (!ok) { /* out of memory: keep this op; nothing half-replaced is left */
            for (int32_t i = 0; i < op->n_results; i++)
                kiln__vmap_put(map, op->results[i], NULL);
            if (before == KILN_OK) kiln_ctx_clear_error(cx);
            continue;
        }
        changes++;
    }
    rewrite(b->results, b->n_results, map);
    if (t.slots) kiln__free(cx, t.slots, t.cap * sizeof *t.slots);
    return changes;
}

int32_t kiln__pass_cse(kiln_module *m) {
    int32_t changes = 0;
    for (int32_t f = 0; f < m->n_funcs; f++) {
        kiln__vmap map;
        kiln__vmap_init(&map, m->cx);
        changes += cse_block(m->cx, m->funcs[f]->body, &map);
        kiln__vmap_free(&map);
    }
    return changes;
}
