/* SPDX-License-Identifier: Apache-2.0 */
/* Differentiation rules of sort. Sorting permutes each input along one dimension by the
 * same permutation, so the tangents are permuted as the values were and the cotangents
 * are put back where their values came from. The permutation is found by sorting again
 * with an iota along the sorted dimension carried as one more input: the comparator
 * never looks at it (a builtin compares input 0 only; a traced comparator is copied with
 * two more, unused, arguments), and kiln's sort is stable, so it moves exactly as the
 * values did. A gather (jvp) or scatter (vjp) along the dimension, batched over the
 * others, applies it. */
#include "autodiff/rules.h"
#include "ir/clone.h"

/* Referenced by rules.c so that a static link keeps this file's rules. */
extern const char kiln__rules_sort_linked;
const char kiln__rules_sort_linked = 1;

static void *no_memory(kiln__emitter *e) {
    kiln__emit_error(e, KILN_RESOURCE_EXHAUSTED, "out of memory building the derivative");
    return NULL;
}

static int32_t sort_dim(const kiln__ir_op *o) {
    int32_t rank = o->operands[0]->type->shape.rank;
    int64_t d = o->attrs->u.sort.dimension;
    return (int32_t)(d < 0 ? d + rank : d);
}

/* The permutation (i64, the inputs' shape): element j along the sorted dimension of each
 * result came from position perm[j] of the inputs. */
static kiln__value *sort_permutation(kiln__emitter *e, const kiln__ad_op *op) {
    const kiln__ir_op *o = op->op;
    int32_t n = op->n_primals;
    if (n + 1 > 64) {
        kiln__emit_error(e, KILN_UNIMPLEMENTED,
                         "stablehlo.sort of %d inputs has no derivative rule (the permutation "
                         "rides along as one more input: at most 63 inputs)",
                         (int)n);
        return NULL;
    }
    const kiln__type *t = op->primals[0]->type;
    kiln__attrs ia = {.fn = e->fn};
    ia.u.iota.dtype = KILN_I64;
    ia.u.iota.shape = t->shape;
    ia.u.iota.dimension = sort_dim(o);
    kiln__value *operands[64];
    for (int32_t i = 0; i < n; i++)
        operands[i] = op->primals[i];
    operands[n] = kiln__emit(e, KILN_OP_IOTA, &ia, NULL, 0);
    if (!operands[n]) return NULL;
    kiln__attrs a;
    kiln__attrs_copy(&a, o->attrs, o->kind);
    a.fn = e->fn;
    a.regions = NULL;
    a.n_regions = 1;
    a.n_results = n + 1;
    a.u.sort.stable = true;
    /* Emitted with a stand-in region (a builtin block would get two arguments only), then
     * given the comparator's block with two more arguments, and its builtin tag back. */
    const kiln__block *cmp = o->n_regions > 0 ? o->regions[0] : NULL;
    const kiln_region *builtin = o->attrs->region[0];
    a.region[0] = NULL;
    kiln__ir_op *s = kiln__emit_op(e, KILN_OP_SORT, &a, operands, n + 1);
    kiln__attrs *own = s ? kiln__op_attrs_mut(e->m, s) : NULL;
    if (!own) return NULL;
    own->region[0] = builtin;
    kiln__type args[130];
    for (int32_t i = 0; i < 2 * n; i++)
        args[i] = (kiln__type){.dtype = op->primals[i / 2]->type->dtype};
    args[2 * n] = args[2 * n + 1] = (kiln__type){.dtype = KILN_I64};
    kiln__block *b = kiln__emit_region_block(e, s, 0, args, 2 * n + 2);
    if (!b) return NULL;
    if (cmp) {
        if (cmp->n_args != 2 * n || cmp->n_results != 1) {
            kiln__emit_error(e, KILN_INTERNAL,
                             "internal: the sort comparator has %d arguments and %d results",
                             (int)cmp->n_args, (int)cmp->n_results);
            return NULL;
        }
        kiln__value *r = NULL;
        if (kiln__inline_block(e->m, b, cmp, b->args, &r) != KILN_OK) return NULL;
        if (kiln__block_set_results(e->m, b, &r, 1) != KILN_OK) return no_memory(e);
    } else {
        kiln_compare_direction dir;
        if (builtin == kiln_region_less())
            dir = KILN_CMP_LT;
        else if (builtin == kiln_region_greater())
            dir = KILN_CMP_GT;
        else if (builtin == kiln_region_less_equal())
            dir = KILN_CMP_LE;
        else if (builtin == kiln_region_greater_equal())
            dir = KILN_CMP_GE;
        else {
            kiln__emit_error(e, KILN_INTERNAL, "internal: a sort without a comparator");
            return NULL;
        }
        kiln__emitter in = *e;
        in.block = b;
        kiln__value *r = kiln__emit_compare(&in, dir, b->args[0], b->args[1]);
        if (!r) return NULL;
        if (kiln__block_set_results(e->m, b, &r, 1) != KILN_OK) return no_memory(e);
    }
    return s->results[n];
}

/* Dimension numbers that apply the permutation along dim, batched over the other
 * dimensions: one index per element, the implicit index vector (index_vector_dim ==
 * rank). */
static void batched_dims(int32_t rank, int32_t dim, kiln_dims *batch, kiln_dims *along) {
    batch->count = 0;
    for (int32_t d = 0; d < rank; d++)
        if (d != dim) batch->v[batch->count++] = d;
    *along = (kiln_dims){.count = 1, .v = {dim}};
}

/* The sort's permutation when a derivative flows through it (ds: the operands' cotangents
 * or tangents), else NULL. */
static kiln__value *permutation_if_flowing(kiln__emitter *e, const kiln__ad_op *op,
                                           kiln__value *const *ds) {
    bool any = false;
    for (int32_t i = 0; i < op->n_primals; i++)
        any |= ds[i] && kiln__ad_has_derivative(op->primals[i]);
    return any ? sort_permutation(e, op) : NULL;
}

kiln_status kiln__vjp_SORT(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                           kiln__value **out_cts) {
    kiln__value *perm = permutation_if_flowing(e, op, cts);
    if (!perm) return kiln_ctx_status(e->cx);
    int32_t rank = perm->type->shape.rank;
    kiln__attrs a = {.fn = e->fn, .n_results = 1, .n_regions = 1};
    kiln_scatter_params *p = &a.u.scatter;
    batched_dims(rank, sort_dim(op->op), &p->input_batching_dims, &p->inserted_window_dims);
    p->scatter_indices_batching_dims = p->input_batching_dims;
    p->scatter_dims_to_operand_dims = p->inserted_window_dims;
    p->index_vector_dim = rank;
    p->unique_indices = true;
    a.region[0] = kiln_region_add();
    for (int32_t i = 0; i < op->n_primals; i++) {
        if (!cts[i] || !kiln__ad_has_derivative(op->primals[i])) continue;
        kiln__value *operands[3] = {kiln__emit_zeros(e, op->primals[i]->type), perm, cts[i]};
        if (!operands[0]) break;
        out_cts[i] = kiln__emit(e, KILN_OP_SCATTER, &a, operands, 3);
    }
    return kiln_ctx_status(e->cx);
}

kiln_status kiln__jvp_SORT(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *tangents,
                           kiln__value **out_tangents) {
    kiln__value *perm = permutation_if_flowing(e, op, tangents);
    if (!perm) return kiln_ctx_status(e->cx);
    int32_t rank = perm->type->shape.rank;
    kiln__attrs a = {.fn = e->fn};
    kiln_gather_params *p = &a.u.gather;
    batched_dims(rank, sort_dim(op->op), &p->operand_batching_dims, &p->collapsed_slice_dims);
    p->start_indices_batching_dims = p->operand_batching_dims;
    p->start_index_map = p->collapsed_slice_dims;
    p->index_vector_dim = rank;
    p->slice_sizes.count = rank;
    for (int32_t d = 0; d < rank; d++)
        p->slice_sizes.v[d] = 1;
    for (int32_t i = 0; i < op->n_primals; i++) {
        if (!tangents[i] || !kiln__ad_has_derivative(op->primals[i])) continue;
        kiln__value *operands[2] = {tangents[i], perm};
        out_tangents[i] = kiln__emit(e, KILN_OP_GATHER, &a, operands, 2);
    }
    return kiln_ctx_status(e->cx);
}
