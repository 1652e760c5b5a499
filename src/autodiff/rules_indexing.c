/* SPDX-License-Identifier: Apache-2.0 */
/* Differentiation rules of the indexing ops: dynamic_slice, dynamic_update_slice, gather
 * and scatter. Index operands never get a derivative (NULL).
 *
 * The index semantics carry into the derivatives: dynamic_slice, dynamic_update_slice and
 * gather clamp their start indices (so their transposes clamp the same way: the
 * dynamic_* ops clamp by themselves, gather's transpose clamps explicitly before
 * scattering, since scatter does not clamp), and scatter skips each update element whose
 * full index falls outside the operand (so the cotangent of such an element is zero:
 * gathered from a zero-padded cotangent). scatter is differentiable with the add, replace,
 * maximum and minimum regions, and multiply with unique_indices (builtin regions, or
 * traced blocks doing the same). */
#include "autodiff/rules.h"

/* Referenced by rules.c so that a static link keeps this file's rules. */
extern const char kiln__rules_indexing_linked;
const char kiln__rules_indexing_linked = 1;

static kiln__value *or_zeros(kiln__emitter *e, kiln__value *t, const kiln__value *like) {
    return t ? t : kiln__emit_zeros(e, like->type);
}

/* ---- dynamic_slice, dynamic_update_slice --------------------------------------------- */

static kiln__value *emit_dus(kiln__emitter *e, kiln__value *x, kiln__value *update,
                             kiln__value *const *starts, int32_t n_starts) {
    kiln__value *operands[KILN_MAX_RANK + 2];
    operands[0] = x;
    operands[1] = update;
    for (int32_t i = 0; i < n_starts; i++)
        operands[2 + i] = starts[i];
    kiln__attrs a = {.fn = e->fn};
    return kiln__emit(e, KILN_OP_DYNAMIC_UPDATE_SLICE, &a, operands, 2 + n_starts);
}

static kiln__value *emit_ds(kiln__emitter *e, kiln__value *x, kiln__value *const *starts,
                            int32_t n_starts, const kiln_shape *sizes) {
    kiln__value *operands[KILN_MAX_RANK + 1];
    operands[0] = x;
    for (int32_t i = 0; i < n_starts; i++)
        operands[1 + i] = starts[i];
    kiln__attrs a = {.fn = e->fn};
    a.u.slice_sizes.count = sizes->rank;
    for (int32_t d = 0; d < sizes->rank; d++)
        a.u.slice_sizes.v[d] = sizes->dims[d];
    return kiln__emit(e, KILN_OP_DYNAMIC_SLICE, &a, operands, 1 + n_starts);
}

/* The slice's cotangent lands where the slice was read: dynamic_update_slice clamps its
 * start indices exactly as dynamic_slice does, so an out-of-range start puts it at the
 * same clamped window. */
kiln_status kiln__vjp_DYNAMIC_SLICE(kiln__emitter *e, const kiln__ad_op *op,
                                    kiln__value *const *cts, kiln__value **out_cts) {
    kiln__value *x = op->primals[0];
    if (!cts[0] || !kiln__ad_has_derivative(x)) return kiln_ctx_status(e->cx);
    out_cts[0] =
        emit_dus(e, kiln__emit_zeros(e, x->type), cts[0], op->primals + 1, op->n_primals - 1);
    return kiln_ctx_status(e->cx);
}

kiln_status kiln__jvp_DYNAMIC_SLICE(kiln__emitter *e, const kiln__ad_op *op,
                                    kiln__value *const *tangents, kiln__value **out_tangents) {
    if (!tangents[0] || !kiln__ad_has_derivative(op->primals[0])) return kiln_ctx_status(e->cx);
    out_tangents[0] = emit_ds(e, tangents[0], op->primals + 1, op->n_primals - 1,
                              &op->op->results[0]->type->shape);
    return kiln_ctx_status(e->cx);
}

/* The operand's cotangent is the result's with the (clamped) window zeroed; the update's
 * is that window. */
kiln_status kiln__vjp_DYNAMIC_UPDATE_SLICE(kiln__emitter *e, const kiln__ad_op *op,
                                           kiln__value *const *cts, kiln__value **out_cts) {
    kiln__value *x = op->primals[0], *u = op->primals[1], *g = cts[0];
    if (!g || !kiln__ad_has_derivative(x)) return kiln_ctx_status(e->cx);
    kiln__value *const *starts = op->primals + 2;
    int32_t n_starts = op->n_primals - 2;
    out_cts[0] = emit_dus(e, g, kiln__emit_zeros(e, u->type), starts, n_starts);
    out_cts[1] = emit_ds(e, g, starts, n_starts, &u->type->shape);
    return kiln_ctx_status(e->cx);
}

kiln_status kiln__jvp_DYNAMIC_UPDATE_SLICE(kiln__emitter *e, const kiln__ad_op *op,
                                           kiln__value *const *tangents,
                                           kiln__value **out_tangents) {
    kiln__value *x = op->primals[0], *u = op->primals[1];
    if (!kiln__ad_has_derivative(x) || (!tangents[0] && !tangents[1]))
        return kiln_ctx_status(e->cx);
    out_tangents[0] = emit_dus(e, or_zeros(e, tangents[0], x), or_zeros(e, tangents[1], u),
                               op->primals + 2, op->n_primals - 2);
    return kiln_ctx_status(e->cx);
}

/* ---- index arithmetic ---------------------------------------------------------------- */

/* Index arithmetic runs in i64 (u64 indices stay unsigned: converting them could wrap). */
static kiln__value *wide_indices(kiln__emitter *e, kiln__value *idx) {
    if (!idx || idx->type->dtype == KILN_I64 || idx->type->dtype == KILN_U64) return idx;
    return kiln__emit_convert(e, idx, KILN_I64);
}

/* A value of idx's type whose entries along index_vector_dim are v[0..n-1] (every entry
 * v[0] when the index vector is implicit, ivd == rank). */
static kiln__value *index_vector(kiln__emitter *e, const kiln__value *idx, int64_t ivd,
                                 const int64_t *v, int32_t n) {
    kiln_dtype dt = idx->type->dtype;
    if (n == 0 || ivd >= idx->type->shape.rank)
        return kiln__emit_full(e, idx->type, n ? (double)v[0] : 0.0);
    kiln__value *parts[KILN_MAX_RANK] = {NULL};
    kiln__type one = {.dtype = dt, .shape = {.rank = 1, .dims = {1}}};
    for (int32_t j = 0; j < n; j++)
        parts[j] = kiln__emit_full(e, &one, (double)v[j]);
    kiln__value *vec = parts[0];
    if (n > 1) {
        kiln__attrs a = {.fn = e->fn};
        a.u.dimension = 0;
        vec = kiln__emit(e, KILN_OP_CONCATENATE, &a, parts, n);
    }
    kiln_dims dims = {.count = 1, .v = {ivd}};
    return kiln__emit_broadcast(e, vec, &idx->type->shape, &dims);
}

static kiln__value *emit_clamp(kiln__emitter *e, kiln__value *lo, kiln__value *x, kiln__value *hi) {
    kiln__value *operands[3] = {lo, x, hi};
    kiln__attrs a = {.fn = e->fn};
    return kiln__emit(e, KILN_OP_CLAMP, &a, operands, 3);
}

/* ---- gather ----------------------------------------------------------------------------- */

static kiln__value *emit_scatter(kiln__emitter *e, kiln__value *input, kiln__value *idx,
                                 kiln__value *updates, const kiln_scatter_params *sp,
                                 const kiln_region *region) {
    kiln__attrs a = {.fn = e->fn, .n_results = 1, .n_regions = 1};
    a.u.scatter = *sp;
    a.region[0] = region;
    kiln__value *operands[3] = {input, idx, updates};
    return kiln__emit(e, KILN_OP_SCATTER, &a, operands, 3);
}

static kiln__value *emit_gather(kiln__emitter *e, kiln__value *x, kiln__value *idx,
                                const kiln_gather_params *gp) {
    kiln__attrs a = {.fn = e->fn};
    a.u.gather = *gp;
    kiln__value *operands[2] = {x, idx};
    return kiln__emit(e, KILN_OP_GATHER, &a, operands, 2);
}

/* Gather reads every slice at its clamped start; its transpose adds each cotangent slice
 * back at that same clamped start (scatter would skip an out-of-range start instead). */
kiln_status kiln__vjp_GATHER(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                             kiln__value **out_cts) {
    kiln__value *x = op->primals[0], *idx = op->primals[1], *g = cts[0];
    if (!g || !kiln__ad_has_derivative(x)) return kiln_ctx_status(e->cx);
    const kiln_gather_params *p = &op->op->attrs->u.gather;
    int32_t n = p->start_index_map.count;
    int64_t lo[KILN_MAX_RANK] = {0}, hi[KILN_MAX_RANK];
    for (int32_t j = 0; j < n; j++) {
        int64_t d = p->start_index_map.v[j];
        hi[j] = x->type->shape.dims[d] - p->slice_sizes.v[d];
    }
    kiln__value *wide = wide_indices(e, idx);
    kiln__value *clamped = NULL;
    if (wide)
        clamped = emit_clamp(e, index_vector(e, wide, p->index_vector_dim, lo, n), wide,
                             index_vector(e, wide, p->index_vector_dim, hi, n));
    kiln_scatter_params sp = {
        .update_window_dims = p->offset_dims,
        .inserted_window_dims = p->collapsed_slice_dims,
        .input_batching_dims = p->operand_batching_dims,
        .scatter_indices_batching_dims = p->start_indices_batching_dims,
        .scatter_dims_to_operand_dims = p->start_index_map,
        .index_vector_dim = p->index_vector_dim,
        .indices_are_sorted = p->indices_are_sorted,
        .unique_indices = false,
    };
    out_cts[0] = emit_scatter(e, kiln__emit_zeros(e, x->type), clamped, g, &sp, kiln_region_add());
    return kiln_ctx_status(e->cx);
}

kiln_status kiln__jvp_GATHER(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *tangents,
                             kiln__value **out_tangents) {
    if (!tangents[0] || !kiln__ad_has_derivative(op->primals[0])) return kiln_ctx_status(e->cx);
    out_tangents[0] = emit_gather(e, tangents[0], op->primals[1], &op->op->attrs->u.gather);
    return kiln_ctx_status(e->cx);
}

/* ---- scatter ---------------------------------------------------------------------------- */

typedef enum combiner {
    COMBINE_OTHER,
    COMBINE_ADD,
    COMBINE_REPLACE,
    COMBINE_MAX,
    COMBINE_MIN,
    COMBINE_MULTIPLY
} combiner;

/* What the update region does: the builtin it is, or a traced block that is one (a lone
 * add of its two arguments, or returning its second argument). */
static combiner combiner_of(const kiln__ir_op *o) {
    if (o->attrs->region[0] == kiln_region_replace()) return COMBINE_REPLACE;
    switch (kiln__ad_region_op(o, 0)) {
    case KILN_OP_ADD: return COMBINE_ADD;
    case KILN_OP_MAXIMUM: return COMBINE_MAX;
    case KILN_OP_MINIMUM: return COMBINE_MIN;
    case KILN_OP_MULTIPLY: return COMBINE_MULTIPLY;
    default: break;
    }
    const kiln__block *b = o->n_regions > 0 ? o->regions[0] : NULL;
    bool replaces = b && b->n_args == 2 && b->n_results == 1 && !b->first &&
                    b->results[0] == b->args[1];
    return replaces ? COMBINE_REPLACE : COMBINE_OTHER;
}

/* For each element of an update (of type upd_type) scattered by `p` at `idx`: the element
 * of src at its full index, or 0 where that index is outside src (scatter skips those).
 * src is zero-padded by the window size on each side of every indexed dimension and the
 * start indices are clamped into [-window, size] and shifted by the window, so a gather
 * (which clamps) reads the padding exactly where scatter would have skipped. */
static kiln__value *gather_in_bounds(kiln__emitter *e, kiln__value *src, kiln__value *idx,
                                     const kiln_scatter_params *p, const kiln__type *upd_type) {
    if (!src || !idx) return NULL;
    int32_t rank = src->type->shape.rank;
    kiln_gather_params gp = {
        .offset_dims = p->update_window_dims,
        .collapsed_slice_dims = p->inserted_window_dims,
        .operand_batching_dims = p->input_batching_dims,
        .start_indices_batching_dims = p->scatter_indices_batching_dims,
        .start_index_map = p->scatter_dims_to_operand_dims,
        .index_vector_dim = p->index_vector_dim,
        .indices_are_sorted = p->indices_are_sorted,
    };
    gp.slice_sizes.count = rank;
    for (int32_t d = 0, w = 0; d < rank; d++) {
        if (kiln__ad_dims_contain(&p->inserted_window_dims, d) ||
            kiln__ad_dims_contain(&p->input_batching_dims, d))
            gp.slice_sizes.v[d] = 1;
        else
            gp.slice_sizes.v[d] = upd_type->shape.dims[p->update_window_dims.v[w++]];
    }
    kiln_dims low = {.count = rank}, high = {.count = rank}, interior = {.count = rank};
    int32_t n = p->scatter_dims_to_operand_dims.count;
    int64_t lo[KILN_MAX_RANK], hi[KILN_MAX_RANK], shift[KILN_MAX_RANK];
    kiln__value *wide = wide_indices(e, idx);
    if (!wide) return NULL;
    bool is_unsigned = !kiln_dtype_is_signed(wide->type->dtype);
    for (int32_t j = 0; j < n; j++) {
        int64_t d = p->scatter_dims_to_operand_dims.v[j];
        int64_t win = gp.slice_sizes.v[d];
        low.v[d] = high.v[d] = win;
        lo[j] = is_unsigned ? 0 : -win;
        hi[j] = src->type->shape.dims[d];
        shift[j] = win;
    }
    kiln__value *zero = kiln__emit_scalar(e, src->type->dtype, 0.0);
    kiln__value *padded = kiln__emit_pad(e, src, zero, &low, &high, &interior);
    int64_t ivd = p->index_vector_dim;
    kiln__value *start =
        emit_clamp(e, index_vector(e, wide, ivd, lo, n), wide, index_vector(e, wide, ivd, hi, n));
    start = kiln__emit_add(e, start, index_vector(e, wide, ivd, shift, n));
    return emit_gather(e, padded, start, &gp);
}

/* max/min: each result element is the extreme of the input element and the updates that
 * land on it; its derivative is shared evenly among those equal to it (JAX's choice for
 * ties), so the vjp and the jvp are transposes of each other. */
typedef struct extreme_winners {
    kiln__value *x_wins; /* i1, the input's shape: the input element equals the result */
    kiln__value *u_wins; /* i1, the updates' shape: in bounds and equal to the result */
    kiln__value *count;  /* the input's shape: how many share each result element (>= 1) */
} extreme_winners;

static extreme_winners find_winners(kiln__emitter *e, const kiln__ad_op *op) {
    kiln__value *x = op->primals[0], *idx = op->primals[1], *u = op->primals[2];
    kiln__value *out = op->outs[0];
    const kiln_scatter_params *p = &op->op->attrs->u.scatter;
    extreme_winners w = {0};
    w.x_wins = kiln__emit_compare(e, KILN_CMP_EQ, x, out);
    kiln__value *in_bounds = kiln__emit_compare(
        e, KILN_CMP_NE, gather_in_bounds(e, kiln__emit_full_like(e, x, 1.0), idx, p, u->type),
        kiln__emit_scalar(e, u->type->dtype, 0.0));
    kiln__value *equal =
        kiln__emit_compare(e, KILN_CMP_EQ, u, gather_in_bounds(e, out, idx, p, u->type));
    w.u_wins = kiln__emit_binary(e, KILN_OP_AND, in_bounds, equal);
    kiln__value *one = kiln__emit_scalar(e, x->type->dtype, 1.0);
    kiln__value *from_updates =
        emit_scatter(e, kiln__emit_zeros(e, x->type), idx,
                     kiln__emit_convert(e, w.u_wins, u->type->dtype), p, kiln_region_add());
    kiln__value *total =
        kiln__emit_add(e, kiln__emit_convert(e, w.x_wins, x->type->dtype), from_updates);
    /* A NaN result equals nothing: count 1 keeps its (zero) share finite. */
    w.count = kiln__emit_binary(e, KILN_OP_MAXIMUM, total, one);
    return w;
}

static kiln_status scatter_unsupported(kiln__emitter *e, const kiln__ad_op *op, const char *mode) {
    const kiln__ir_op *o = op->op;
    if (o->n_results == 1 && combiner_of(o) == COMBINE_MULTIPLY)
        return kiln__emit_error(e, KILN_UNIMPLEMENTED,
                                "stablehlo.scatter with a multiply region has a %s rule only "
                                "with unique_indices (as in JAX: the derivative of a product of "
                                "several updates at one position is not built)",
                                mode);
    if (o->n_results != 1)
        return kiln__emit_error(e, KILN_UNIMPLEMENTED,
                                "stablehlo.scatter of %d inputs has no %s rule (only one input "
                                "with an add, replace, maximum, minimum or multiply region is "
                                "differentiable)",
                                (int)o->n_results, mode);
    return kiln__emit_error(e, KILN_UNIMPLEMENTED,
                            "stablehlo.scatter has a %s rule only for the add, replace, "
                            "maximum and minimum regions (and multiply with unique_indices); "
                            "this one combines otherwise",
                            mode);
}

/* add: the input's cotangent passes through and each update's is the cotangent at its
 * index. replace: the last update written to a position (row-major order, as the op
 * applies them) wins it, so only the winner gets that position's cotangent and the
 * input keeps the cotangent only where nothing was written; the winners are found by
 * scattering each update element's number (1-based) and reading them back. */
kiln_status kiln__vjp_SCATTER(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                              kiln__value **out_cts) {
    const kiln__ir_op *o = op->op;
    if (o->n_results != 1) return scatter_unsupported(e, op, "vjp");
    kiln__value *x = op->primals[0], *idx = op->primals[1], *u = op->primals[2], *g = cts[0];
    if (!g || !kiln__ad_has_derivative(x)) return kiln_ctx_status(e->cx);
    combiner c = combiner_of(o);
    const kiln_scatter_params *p = &o->attrs->u.scatter;
    if (c == COMBINE_ADD) {
        out_cts[0] = g;
        out_cts[2] = gather_in_bounds(e, g, idx, p, u->type);
        return kiln_ctx_status(e->cx);
    }
    if (c == COMBINE_MAX || c == COMBINE_MIN) {
        extreme_winners w = find_winners(e, op);
        kiln__value *share = kiln__emit_div(e, g, w.count);
        out_cts[0] = kiln__emit_select(e, w.x_wins, share, kiln__emit_zeros(e, x->type));
        out_cts[2] = kiln__emit_select(e, w.u_wins, gather_in_bounds(e, share, idx, p, u->type),
                                       kiln__emit_zeros(e, u->type));
        return kiln_ctx_status(e->cx);
    }
    if (c == COMBINE_MULTIPLY && p->unique_indices) {
        /* Each position takes at most one update (the caller's promise, as in JAX): the
         * result is x * P with P the scattered updates (1 where none lands). */
        kiln__value *prod =
            emit_scatter(e, kiln__emit_full_like(e, x, 1.0), idx, u, p, kiln_region_multiply());
        out_cts[0] = kiln__emit_mul(e, g, prod);
        out_cts[2] = gather_in_bounds(e, kiln__emit_mul(e, g, x), idx, p, u->type);
        return kiln_ctx_status(e->cx);
    }
    if (c != COMBINE_REPLACE) return scatter_unsupported(e, op, "vjp");
    kiln__value *ids = kiln__ad_positions(e, &u->type->shape);
    ids = kiln__emit_add(e, ids, kiln__emit_scalar(e, KILN_I64, 1.0));
    kiln__type id_type = {.dtype = KILN_I64, .shape = x->type->shape};
    kiln__value *winners =
        emit_scatter(e, kiln__emit_zeros(e, &id_type), idx, ids, p, kiln_region_replace());
    kiln__value *written =
        kiln__emit_compare(e, KILN_CMP_NE, winners, kiln__emit_scalar(e, KILN_I64, 0.0));
    out_cts[0] = kiln__emit_select(e, written, kiln__emit_zeros(e, g->type), g);
    kiln__value *won =
        kiln__emit_compare(e, KILN_CMP_EQ, gather_in_bounds(e, winners, idx, p, u->type), ids);
    out_cts[2] = kiln__emit_select(e, won, gather_in_bounds(e, g, idx, p, u->type),
                                   kiln__emit_zeros(e, u->type));
    return kiln_ctx_status(e->cx);
}

/* add and replace are linear in (input, updates) together: the same scatter of the
 * tangents. */
kiln_status kiln__jvp_SCATTER(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *tangents,
                              kiln__value **out_tangents) {
    const kiln__ir_op *o = op->op;
    if (o->n_results != 1) return scatter_unsupported(e, op, "jvp");
    kiln__value *x = op->primals[0], *u = op->primals[2];
    if (!kiln__ad_has_derivative(x) || (!tangents[0] && !tangents[2]))
        return kiln_ctx_status(e->cx);
    combiner c = combiner_of(o);
    if (c == COMBINE_OTHER || (c == COMBINE_MULTIPLY && !o->attrs->u.scatter.unique_indices))
        return scatter_unsupported(e, op, "jvp");
    if (c == COMBINE_MULTIPLY) {
        kiln__value *prod = emit_scatter(e, kiln__emit_full_like(e, x, 1.0), op->primals[1], u,
                                         &o->attrs->u.scatter, kiln_region_multiply());
        kiln__value *du = tangents[2]
                              ? emit_scatter(e, kiln__emit_zeros(e, x->type), op->primals[1],
                                             tangents[2], &o->attrs->u.scatter, kiln_region_add())
                              : NULL;
        kiln__value *r = tangents[0] ? kiln__emit_mul(e, tangents[0], prod) : NULL;
        out_tangents[0] = kiln__emit_add_any(e, r, du ? kiln__emit_mul(e, x, du) : NULL);
        return kiln_ctx_status(e->cx);
    }
    if (c == COMBINE_MAX || c == COMBINE_MIN) {
        extreme_winners w = find_winners(e, op);
        kiln__value *tx = or_zeros(e, tangents[0], x), *tu = or_zeros(e, tangents[2], u);
        kiln__value *sum = kiln__emit_add(
            e, kiln__emit_select(e, w.x_wins, tx, kiln__emit_zeros(e, x->type)),
            emit_scatter(e, kiln__emit_zeros(e, x->type), op->primals[1],
                         kiln__emit_select(e, w.u_wins, tu, kiln__emit_zeros(e, u->type)),
                         &o->attrs->u.scatter, kiln_region_add()));
        out_tangents[0] = kiln__emit_div(e, sum, w.count);
        return kiln_ctx_status(e->cx);
    }
    out_tangents[0] = emit_scatter(e, or_zeros(e, tangents[0], x), op->primals[1],
                                   or_zeros(e, tangents[2], u), &o->attrs->u.scatter,
                                   c == COMBINE_ADD ? kiln_region_add() : kiln_region_replace());
    return kiln_ctx_status(e->cx);
}
