/* SPDX-License-Identifier: Apache-2.0 */
/* Differentiation rules of the window ops: reduce_window (add, max, min; one input) and
 * select_and_scatter (add scatter; the builtin comparisons as select).
 *
 * - reduce_window add is linear: its transpose is a reduce_window add of the cotangent,
 *   dilated by the strides and padded so that each input element sums the outputs whose
 *   windows hold it (the convolution-input transpose with a kernel of ones).
 * - reduce_window max/min routes each output's cotangent to the element its window
 *   selected. Without dilations that is select_and_scatter (ge/le: the first extreme
 *   wins, as the forward fold keeps the first); with dilations the selected element's
 *   position is carried through a reduce_window over (value, position) pairs and the
 *   cotangents are scattered there. The forward padding (init values) and the init value
 *   itself win when nothing beats it strictly; then the cotangent goes to the init value.
 * - The jvp of max/min (and the vjp of select_and_scatter's source) reads one value per
 *   window at the selected element: a reduce_window over (value, tangent) pairs whose
 *   region carries the tangent of the element it keeps. */
#include <math.h>

#include "autodiff/rules.h"

/* Referenced by rules.c so that a static link keeps this file's rules. */
extern const char kiln__rules_window_linked;
const char kiln__rules_window_linked = 1;

static int64_t entry(const kiln_dims *d, int32_t i, int64_t dflt) {
    return i < d->count ? d->v[i] : dflt;
}

static int64_t dilate(int64_t size, int64_t dilation) {
    return size == 0 ? 0 : (size - 1) * dilation + 1;
}

static kiln_dims all_dims(int32_t rank) {
    kiln_dims d = {.count = rank};
    for (int32_t i = 0; i < rank; i++)
        d.v[i] = i;
    return d;
}

static kiln__value *or_zeros(kiln__emitter *e, kiln__value *t, const kiln__value *like) {
    return t ? t : kiln__emit_zeros(e, like->type);
}

/* The window attributes with every list filled in (count 0 means the defaults). */
static kiln_window_params full_window(const kiln_window_params *w, int32_t rank) {
    kiln_window_params f = {0};
    f.window_dimensions = w->window_dimensions;
    f.window_strides.count = f.base_dilations.count = f.window_dilations.count = rank;
    f.padding_low.count = f.padding_high.count = rank;
    for (int32_t i = 0; i < rank; i++) {
        f.window_strides.v[i] = entry(&w->window_strides, i, 1);
        f.base_dilations.v[i] = entry(&w->base_dilations, i, 1);
        f.window_dilations.v[i] = entry(&w->window_dilations, i, 1);
        f.padding_low.v[i] = entry(&w->padding_low, i, 0);
        f.padding_high.v[i] = entry(&w->padding_high, i, 0);
    }
    return f;
}

typedef enum reducer { REDUCE_OTHER, REDUCE_ADD, REDUCE_MAX, REDUCE_MIN } reducer;

/* The op a two-argument region computes: its builtin, or the lone op of a traced block
 * applied to its two arguments (in either order: these ops commute). */
static reducer reducer_of(const kiln__ir_op *o, int32_t region) {
    switch (kiln__ad_region_op(o, region)) {
    case KILN_OP_ADD: return REDUCE_ADD;
    case KILN_OP_MAXIMUM: return REDUCE_MAX;
    case KILN_OP_MINIMUM: return REDUCE_MIN;
    default: return REDUCE_OTHER;
    }
}

/* A one-input reduce_window with a builtin region. */
static kiln__value *emit_reduce_window(kiln__emitter *e, kiln__value *x, kiln__value *init,
                                       const kiln_window_params *w, const kiln_region *region) {
    kiln__attrs a = {.fn = e->fn, .n_results = 1, .n_regions = 1};
    a.u.window = *w;
    a.region[0] = region;
    kiln__value *operands[2] = {x, init};
    return kiln__emit(e, KILN_OP_REDUCE_WINDOW, &a, operands, 2);
}

/* reduce_window over (x, y) with inits (x_init, y_init) whose region keeps the pair whose
 * x wins: the accumulated pair stays while keep(acc_x, new_x) holds, `keep` being the
 * comparison `dir` (so GE keeps the first maximum, LE the first minimum). Returns the y
 * of the kept pair per window. */
static kiln__value *reduce_window_pairs(kiln__emitter *e, kiln__value *x, kiln__value *y,
                                        kiln__value *x_init, kiln__value *y_init,
                                        const kiln_window_params *w, kiln_compare_direction dir) {
    if (!x || !y || !x_init || !y_init) return NULL;
    kiln__attrs a = {.fn = e->fn, .n_results = 2, .n_regions = 1};
    a.u.window = *w;
    kiln__value *operands[4] = {x, y, x_init, y_init};
    kiln__ir_op *op = kiln__emit_op(e, KILN_OP_REDUCE_WINDOW, &a, operands, 4);
    if (!op) return NULL;
    kiln__type args[4] = {{.dtype = x->type->dtype},
                          {.dtype = y->type->dtype},
                          {.dtype = x->type->dtype},
                          {.dtype = y->type->dtype}};
    kiln__block *b = kiln__emit_region_block(e, op, 0, args, 4);
    if (!b) return NULL;
    kiln__emitter in = *e;
    in.block = b;
    kiln__value *keep = kiln__emit_compare(&in, dir, b->args[0], b->args[2]);
    kiln__value *res[2] = {kiln__emit_select(&in, keep, b->args[0], b->args[2]),
                           kiln__emit_select(&in, keep, b->args[1], b->args[3])};
    if (!res[0] || !res[1]) return NULL;
    if (kiln__block_set_results(e->m, b, res, 2) != KILN_OK) {
        kiln__emit_error(e, KILN_RESOURCE_EXHAUSTED, "out of memory building the derivative");
        return NULL;
    }
    return op->results[1];
}

static kiln_status window_unsupported(kiln__emitter *e, const kiln__ad_op *op, const char *mode) {
    const kiln__ir_op *o = op->op;
    if (o->n_results != 1)
        return kiln__emit_error(e, KILN_UNIMPLEMENTED,
                                "stablehlo.reduce_window of %d inputs has no %s rule (one input "
                                "reduced with add, maximum or minimum is differentiable)",
                                (int)o->n_results, mode);
    return kiln__emit_error(e, KILN_UNIMPLEMENTED,
                            "stablehlo.reduce_window has a %s rule only for the add, maximum "
                            "and minimum regions; this one reduces otherwise",
                            mode);
}

/* ---- reduce_window add ----------------------------------------------------------------- */

/* Per dimension (input I, window K, stride s, base dilation bd, window dilation wd,
 * padding lo, cotangent O): the cotangent interior-padded by s-1, padded by
 * (K-1)*wd - lo below and so that the size is (I-1)*bd + (K-1)*wd + 1, then summed over
 * windows of K elements wd apart, striding bd: one sum per input element. */
static kiln__value *window_sum_transpose(kiln__emitter *e, kiln__value *g, const kiln__type *x_type,
                                         const kiln_window_params *w) {
    int32_t rank = x_type->shape.rank;
    if (kiln__ad_is_empty(x_type) || kiln__ad_is_empty(g->type)) return kiln__emit_zeros(e, x_type);
    kiln_dims low = {.count = rank}, high = {.count = rank}, interior = {.count = rank};
    kiln_window_params t = {0};
    t.window_dimensions = w->window_dimensions;
    t.window_strides = w->base_dilations;
    t.window_dilations = w->window_dilations;
    t.base_dilations.count = t.padding_low.count = t.padding_high.count = rank;
    for (int32_t d = 0; d < rank; d++) {
        int64_t I = x_type->shape.dims[d], K = w->window_dimensions.v[d];
        int64_t O = g->type->shape.dims[d], s = w->window_strides.v[d];
        int64_t kd = dilate(K, w->window_dilations.v[d]);
        low.v[d] = kd - 1 - w->padding_low.v[d];
        high.v[d] = dilate(I, w->base_dilations.v[d]) + kd - 1 - dilate(O, s) - low.v[d];
        interior.v[d] = s - 1;
        t.base_dilations.v[d] = 1;
        t.padding_low.v[d] = t.padding_high.v[d] = 0;
    }
    kiln__value *zero = kiln__emit_scalar(e, g->type->dtype, 0.0);
    kiln__value *padded = kiln__emit_pad(e, g, zero, &low, &high, &interior);
    return emit_reduce_window(e, padded, zero, &t, kiln_region_add());
}

/* Each output is init + its window's elements, padding positions counting as init: the
 * init value's derivative is the sum over outputs of g * (1 + positions without an
 * input element). */
static kiln__value *window_sum_init_cotangent(kiln__emitter *e, kiln__value *g, kiln__value *x,
                                              const kiln_window_params *w) {
    int64_t positions = 1;
    for (int32_t d = 0; d < w->window_dimensions.count; d++)
        positions *= w->window_dimensions.v[d];
    kiln__value *zero = kiln__emit_scalar(e, x->type->dtype, 0.0);
    kiln__value *count =
        emit_reduce_window(e, kiln__emit_full_like(e, x, 1.0), zero, w, kiln_region_add());
    kiln__value *factor =
        kiln__emit_sub(e, kiln__emit_scalar(e, x->type->dtype, 1.0 + (double)positions), count);
    kiln_dims all = all_dims(g->type->shape.rank);
    return kiln__emit_reduce_sum(e, kiln__emit_mul(e, g, factor), &all);
}

/* ---- reduce_window max / min ----------------------------------------------------------- */

static bool has_dilations(const kiln_window_params *w) {
    for (int32_t d = 0; d < w->window_dimensions.count; d++)
        if (w->base_dilations.v[d] != 1 || w->window_dilations.v[d] != 1) return true;
    return false;
}

static kiln__value *emit_select_and_scatter(kiln__emitter *e, kiln__value *x, kiln__value *source,
                                            kiln__value *init, const kiln_window_params *w,
                                            const kiln_region *select, const kiln_region *scatter) {
    kiln__attrs a = {.fn = e->fn, .n_regions = 2};
    a.u.window = *w;
    a.region[0] = select;
    a.region[1] = scatter;
    kiln__value *operands[3] = {x, source, init};
    return kiln__emit(e, KILN_OP_SELECT_AND_SCATTER, &a, operands, 3);
}

/* The vjp of a max (or min) window reduction without dilations. An output equal to the
 * init value came from the init (or padding), whose cotangent it is; the others go to
 * the first extreme element of their window. */
static void window_extreme_vjp_plain(kiln__emitter *e, const kiln__ad_op *op, kiln__value *g,
                                     const kiln_window_params *w, bool is_max,
                                     kiln__value **out_cts) {
    kiln__value *x = op->primals[0], *init = op->primals[1], *out = op->outs[0];
    kiln__value *from_init = kiln__emit_compare(e, KILN_CMP_EQ, out, init);
    kiln__value *zeros = kiln__emit_zeros(e, g->type);
    kiln__value *g_elems = kiln__emit_select(e, from_init, zeros, g);
    out_cts[0] = emit_select_and_scatter(
        e, x, g_elems, kiln__emit_scalar(e, x->type->dtype, 0.0), w,
        is_max ? kiln_region_greater_equal() : kiln_region_less_equal(), kiln_region_add());
    if (kiln__ad_has_derivative(init)) {
        kiln_dims all = all_dims(g->type->shape.rank);
        out_cts[1] = kiln__emit_reduce_sum(e, kiln__emit_select(e, from_init, g, zeros), &all);
    }
}

/* The general vjp (any dilations): the flat position of each window's selected element
 * (-1: the init value or padding) from a reduce_window over (value, position) pairs, and a
 * scatter-add of the cotangents there (a -1 position is skipped by scatter). */
static void window_extreme_vjp_general(kiln__emitter *e, const kiln__ad_op *op, kiln__value *g,
                                       const kiln_window_params *w, bool is_max,
                                       kiln__value **out_cts) {
    kiln__value *x = op->primals[0], *init = op->primals[1];
    int64_t n = 1, n_out = 1;
    for (int32_t d = 0; d < x->type->shape.rank; d++)
        n *= x->type->shape.dims[d];
    for (int32_t d = 0; d < g->type->shape.rank; d++)
        n_out *= g->type->shape.dims[d];
    kiln__value *pos = kiln__ad_positions(e, &x->type->shape);
    kiln__value *none = kiln__emit_scalar(e, KILN_I64, -1.0);
    kiln__value *sel =
        reduce_window_pairs(e, x, pos, init, none, w, is_max ? KILN_CMP_GE : KILN_CMP_LE);
    kiln_shape flat_idx = {.rank = 2, .dims = {n_out, 1}}, flat_g = {.rank = 1, .dims = {n_out}};
    kiln__type flat_x = {.dtype = x->type->dtype, .shape = {.rank = 1, .dims = {n}}};
    kiln__attrs sa = {.fn = e->fn, .n_results = 1, .n_regions = 1};
    sa.u.scatter.inserted_window_dims = (kiln_dims){.count = 1, .v = {0}};
    sa.u.scatter.scatter_dims_to_operand_dims = (kiln_dims){.count = 1, .v = {0}};
    sa.u.scatter.index_vector_dim = 1;
    sa.region[0] = kiln_region_add();
    kiln__value *operands[3] = {kiln__emit_zeros(e, &flat_x), kiln__emit_reshape(e, sel, &flat_idx),
                                kiln__emit_reshape(e, g, &flat_g)};
    kiln__value *dx = NULL;
    if (operands[0] && operands[1] && operands[2])
        dx = kiln__emit(e, KILN_OP_SCATTER, &sa, operands, 3);
    out_cts[0] = kiln__emit_reshape(e, dx, &x->type->shape);
    if (kiln__ad_has_derivative(init)) {
        kiln_dims all = all_dims(g->type->shape.rank);
        kiln__value *from_init = kiln__emit_compare(e, KILN_CMP_EQ, sel, none);
        out_cts[1] = kiln__emit_reduce_sum(
            e, kiln__emit_select(e, from_init, g, kiln__emit_zeros(e, g->type)), &all);
    }
}

kiln_status kiln__vjp_REDUCE_WINDOW(kiln__emitter *e, const kiln__ad_op *op,
                                    kiln__value *const *cts, kiln__value **out_cts) {
    const kiln__ir_op *o = op->op;
    if (o->n_results != 1) return window_unsupported(e, op, "vjp");
    kiln__value *x = op->primals[0], *init = op->primals[1], *g = cts[0];
    if (!g || !kiln__ad_has_derivative(x)) return kiln_ctx_status(e->cx);
    reducer r = reducer_of(o, 0);
    kiln_window_params w = full_window(&o->attrs->u.window, x->type->shape.rank);
    if (r == REDUCE_ADD) {
        out_cts[0] = window_sum_transpose(e, g, x->type, &w);
        if (kiln__ad_has_derivative(init)) out_cts[1] = window_sum_init_cotangent(e, g, x, &w);
    } else if (r == REDUCE_MAX || r == REDUCE_MIN) {
        if (kiln__ad_is_empty(g->type) || kiln__ad_is_empty(x->type)) {
            out_cts[0] = kiln__emit_zeros(e, x->type);
            if (kiln__ad_has_derivative(init)) out_cts[1] = kiln__emit_zeros(e, init->type);
        } else if (has_dilations(&w)) {
            window_extreme_vjp_general(e, op, g, &w, r == REDUCE_MAX, out_cts);
        } else {
            window_extreme_vjp_plain(e, op, g, &w, r == REDUCE_MAX, out_cts);
        }
    } else {
        return window_unsupported(e, op, "vjp");
    }
    return kiln_ctx_status(e->cx);
}

/* Windows that share no element (stride >= window in every dimension). */
static bool disjoint_windows(const kiln_window_params *w) {
    for (int32_t d = 0; d < w->window_dimensions.count; d++)
        if (w->window_strides.v[d] < w->window_dimensions.v[d]) return false;
    return true;
}

/* The jvp of max (min) pooling over disjoint windows without dilations, on builtin fast
 * paths only (the pair-carrying reduce_window calls its region per element): each element
 * selected by a window not won by the init value is marked by select_and_scatter (every
 * element lies in one window at most), the marked tangents are summed per window, and the
 * windows the init value won take its tangent. */
static kiln__value *window_extreme_jvp_disjoint(kiln__emitter *e, const kiln__ad_op *op,
                                                kiln__value *tx, kiln__value *ti,
                                                const kiln_window_params *w, bool is_max) {
    kiln__value *x = op->primals[0], *init = op->primals[1], *out = op->outs[0];
    kiln_dtype dt = x->type->dtype;
    kiln__value *from_init = kiln__emit_compare(e, KILN_CMP_EQ, out, init);
    kiln__value *zero = kiln__emit_scalar(e, dt, 0.0);
    kiln__value *marks = kiln__emit_select(e, from_init, kiln__emit_zeros(e, out->type),
                                           kiln__emit_full_like(e, out, 1.0));
    kiln__value *marked = emit_select_and_scatter(
        e, x, marks, zero, w, is_max ? kiln_region_greater_equal() : kiln_region_less_equal(),
        kiln_region_add());
    kiln__value *selected = kiln__emit_compare(e, KILN_CMP_NE, marked, zero);
    kiln__value *t_sel = kiln__emit_select(e, selected, tx, kiln__emit_zeros(e, tx->type));
    kiln__value *t_out = emit_reduce_window(e, t_sel, zero, w, kiln_region_add());
    return kiln__emit_add(e, t_out,
                          kiln__emit_select(e, from_init, ti, kiln__emit_zeros(e, out->type)));
}

kiln_status kiln__jvp_REDUCE_WINDOW(kiln__emitter *e, const kiln__ad_op *op,
                                    kiln__value *const *tangents, kiln__value **out_tangents) {
    const kiln__ir_op *o = op->op;
    if (o->n_results != 1) return window_unsupported(e, op, "jvp");
    kiln__value *x = op->primals[0], *init = op->primals[1];
    if (!kiln__ad_has_derivative(x) || (!tangents[0] && !tangents[1]))
        return kiln_ctx_status(e->cx);
    reducer r = reducer_of(o, 0);
    kiln_window_params w = full_window(&o->attrs->u.window, x->type->shape.rank);
    kiln__value *tx = or_zeros(e, tangents[0], x), *ti = or_zeros(e, tangents[1], init);
    if (r == REDUCE_ADD)
        out_tangents[0] = emit_reduce_window(e, tx, ti, &w, kiln_region_add());
    else if ((r == REDUCE_MAX || r == REDUCE_MIN) && !has_dilations(&w) && disjoint_windows(&w) &&
             !kiln__ad_is_empty(x->type) && !kiln__ad_is_empty(op->outs[0]->type))
        out_tangents[0] = window_extreme_jvp_disjoint(e, op, tx, ti, &w, r == REDUCE_MAX);
    else if (r == REDUCE_MAX || r == REDUCE_MIN)
        out_tangents[0] = reduce_window_pairs(e, x, tx, init, ti, &w,
                                              r == REDUCE_MAX ? KILN_CMP_GE : KILN_CMP_LE);
    else
        return window_unsupported(e, op, "jvp");
    return kiln_ctx_status(e->cx);
}

/* ---- select_and_scatter ---------------------------------------------------------------- */

/* The select region's comparison: a builtin, or a traced block holding one compare of
 * (arg 0, arg 1). KILN_CMP_NE when it is anything else. */
static kiln_compare_direction select_direction(const kiln__ir_op *o) {
    const kiln_region *r = o->attrs->region[0];
    if (r == kiln_region_greater_equal()) return KILN_CMP_GE;
    if (r == kiln_region_less_equal()) return KILN_CMP_LE;
    if (r == kiln_region_greater()) return KILN_CMP_GT;
    if (r == kiln_region_less()) return KILN_CMP_LT;
    const kiln__block *b = o->n_regions > 0 ? o->regions[0] : NULL;
    if (!b || b->n_args != 2 || b->n_results != 1) return KILN_CMP_NE;
    const kiln__ir_op *c = b->first;
    if (!c || c != b->last || c->kind != KILN_OP_COMPARE || c->results[0] != b->results[0] ||
        c->operands[0] != b->args[0] || c->operands[1] != b->args[1])
        return KILN_CMP_NE;
    kiln_compare_direction d = c->attrs->u.compare.direction;
    return d == KILN_CMP_GE || d == KILN_CMP_LE || d == KILN_CMP_GT || d == KILN_CMP_LT
               ? d
               : KILN_CMP_NE;
}

static const kiln_region *select_builtin(kiln_compare_direction d) {
    switch (d) {
    case KILN_CMP_GE: return kiln_region_greater_equal();
    case KILN_CMP_LE: return kiln_region_less_equal();
    case KILN_CMP_GT: return kiln_region_greater();
    case KILN_CMP_LT: return kiln_region_less();
    default: return NULL;
    }
}

static kiln_status sas_unsupported(kiln__emitter *e, const char *mode) {
    return kiln__emit_error(e, KILN_UNIMPLEMENTED,
                            "stablehlo.select_and_scatter has a %s rule only with a comparison "
                            "select region (kiln_region_greater_equal() and the like) and the "
                            "add scatter region; this one is another",
                            mode);
}

/* The result is init plus each source element added at its window's selected element:
 * linear in (source, init). The source's cotangent is the cotangent at the selected
 * element, read by a reduce_window over (operand, cotangent) pairs that selects as the
 * op does, from an init that every element beats (-inf for ge/gt, +inf for le/lt). The
 * operand only chooses positions: no cotangent. */
kiln_status kiln__vjp_SELECT_AND_SCATTER(kiln__emitter *e, const kiln__ad_op *op,
                                         kiln__value *const *cts, kiln__value **out_cts) {
    const kiln__ir_op *o = op->op;
    kiln__value *x = op->primals[0], *source = op->primals[1], *g = cts[0];
    if (!g || !kiln__ad_has_derivative(source)) return kiln_ctx_status(e->cx);
    kiln_compare_direction dir = select_direction(o);
    if (dir == KILN_CMP_NE || reducer_of(o, 1) != REDUCE_ADD) return sas_unsupported(e, "vjp");
    kiln_window_params w = full_window(&o->attrs->u.window, x->type->shape.rank);
    if (kiln__ad_is_empty(source->type) || kiln__ad_is_empty(x->type)) {
        out_cts[1] = kiln__emit_zeros(e, source->type);
    } else if (disjoint_windows(&w)) {
        /* Every element lies in one window at most: mark the selected ones with the op
         * itself and sum the marked cotangents per window, on builtin fast paths. */
        kiln__value *zero = kiln__emit_scalar(e, x->type->dtype, 0.0);
        kiln__value *marked =
            emit_select_and_scatter(e, x, kiln__emit_full_like(e, source, 1.0), zero, &w,
                                    select_builtin(dir), kiln_region_add());
        kiln__value *selected = kiln__emit_compare(e, KILN_CMP_NE, marked, zero);
        kiln__value *g_sel = kiln__emit_select(e, selected, g, kiln__emit_zeros(e, g->type));
        out_cts[1] = emit_reduce_window(e, g_sel, zero, &w, kiln_region_add());
    } else {
        bool up = dir == KILN_CMP_GE || dir == KILN_CMP_GT;
        kiln__value *start = kiln__emit_scalar(e, x->type->dtype, up ? -INFINITY : INFINITY);
        out_cts[1] =
            reduce_window_pairs(e, x, g, start, kiln__emit_scalar(e, g->type->dtype, 0.0), &w, dir);
    }
    kiln_dims all = all_dims(g->type->shape.rank);
    out_cts[2] = kiln__emit_reduce_sum(e, g, &all);
    return kiln_ctx_status(e->cx);
}

kiln_status kiln__jvp_SELECT_AND_SCATTER(kiln__emitter *e, const kiln__ad_op *op,
                                         kiln__value *const *tangents, kiln__value **out_tangents) {
    const kiln__ir_op *o = op->op;
    kiln__value *source = op->primals[1], *init = op->primals[2];
    if (!kiln__ad_has_derivative(source) || (!tangents[1] && !tangents[2]))
        return kiln_ctx_status(e->cx);
    kiln_compare_direction dir = select_direction(o);
    if (dir == KILN_CMP_NE || reducer_of(o, 1) != REDUCE_ADD) return sas_unsupported(e, "jvp");
    out_tangents[0] = emit_select_and_scatter(e, op->primals[0], or_zeros(e, tangents[1], source),
                                              or_zeros(e, tangents[2], init), &o->attrs->u.window,
                                              select_builtin(dir), kiln_region_add());
    return kiln_ctx_status(e->cx);
}
