/* Common-subexpression elimination: a later op of a block that computes what an earlier op
 * of the same block computes (same kind, operands, result types and attributes) has its
 * uses moved to the earlier op's results; dce then removes it. Conservative: only ops
 * whose attributes are compared field by field below take part; ops with regions never
 * do. */
#include <string.h>

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

static bool type_eq(const kiln__type *a, const kiln__type *b) {
    return a->dtype == b->dtype && shape_eq(&a->shape, &b->shape);
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
    for (int32_t i = 0; i < a->n_results; i++)
        if (!type_eq(&a->results[i]->type, &b->results[i]->type)) return false;
    return attrs_eq(a->kind, &a->attrs, &b->attrs);
}

static bool live(const kiln__ir_op *op) {
    for (int32_t i = 0; i < op->n_results; i++)
        if (op->results[i]->uses > 0) return true;
    return false;
}

static int32_t cse_block(kiln__block *b) {
    int32_t changes = 0;
    for (kiln__ir_op *op = b->first; op; op = op->next) {
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) changes += cse_block(op->regions[r]);
        if (op->n_regions != 0 || !live(op)) continue;
        for (kiln__ir_op *prev = op->prev; prev; prev = prev->prev) {
            if (!live(prev) || !same_op(prev, op)) continue;
            int32_t n = 0;
            for (int32_t i = 0; i < op->n_results; i++)
                n += kiln__replace_uses(b, op, op->results[i], prev->results[i]);
            if (n > 0) changes++;
            break;
        }
    }
    return changes;
}

int32_t kiln__pass_cse(kiln_module *m) {
    int32_t changes = 0;
    for (int32_t f = 0; f < m->n_funcs; f++)
        changes += cse_block(m->funcs[f]->body);
    return changes;
}
