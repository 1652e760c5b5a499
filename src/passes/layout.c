/* SPDX-License-Identifier: Apache-2.0 */
/* Layout assignment for convolutions (README.md, "layout"): the activations of a chain of
 * convolutions, their bias and activation epilogues, pooling and the gradients of all of
 * them are kept channels last ([N, H, W, C]) between the chain's ends, while every value
 * the program shows keeps its logical (StableHLO) layout.
 *
 * The pass changes dimension numbers and moves transposes, nothing else; every rewrite is
 * an identity of StableHLO (kernels for the new layouts may still add in another order):
 *   - a convolution whose result is not channels last computes it channels last, followed
 *     by a transpose back to the logical layout (done only when every user of its result
 *     is one of those below, so the transpose can move on, and when it reaches a
 *     convolution, pooling or a reduction through elementwise ops: otherwise the transpose
 *     would only move to the end);
 *   - that transpose moves down through what follows: an elementwise op whose other
 *     operands are the same transpose, broadcasts or scalars (the broadcasts are redone
 *     for the new layout); a reduce_window or a reduce of one input; a select_and_scatter
 *     whose operand and source both come through it (windows, padding and reduced
 *     dimensions are permuted alike);
 *   - a convolution reading it takes the transpose into its dimension numbers instead.
 * Transposes that reach the chain's ends stay (kiln__pass_canonicalize then merges or
 * removes those that meet). Only the transposes this pass made are moved: a program's
 * own transposes are left where the program put them. */
#include <string.h>

#include "passes/passes.h"

/* The builder name of the transposes this pass makes: how it tells them from a program's
 * own (compared by address). */
static const char layout_fn[] = "layout";

/* The permutation of v when it is a transpose this pass made, else NULL. */
static const kiln_dims *moved_perm(const kiln__value *v) {
    const kiln__ir_op *d = v->def;
    if (!d || d->kind != KILN_OP_TRANSPOSE || d->attrs->fn != layout_fn) return NULL;
    return &d->attrs->u.permutation;
}

/* The shape s of a value seen through transpose(., p) taken back: dims'[p[i]] = s[i]. */
static kiln_shape unpermuted(const kiln_shape *s, const kiln_dims *p) {
    kiln_shape r = *s;
    for (int32_t i = 0; i < p->count; i++)
        r.dims[p->v[i]] = s->dims[i];
    return r;
}

/* A new op of `kind` with one result of type t, placed just before `at`. NULL when out of
 * memory (the module's ctx has the error; nothing is changed). */
static kiln__ir_op *insert_before(kiln_module *m, kiln__ir_op *at, kiln_op kind,
                                  const kiln__attrs *a, kiln__value *const *operands, int32_t n,
                                  const kiln__type *t) {
    kiln__ir_op *op = kiln__block_append(m, at->block, kind, a, operands, n, t, 1, 0);
    if (op) kiln__op_move_before(op, at);
    return op;
}

/* Gives op's single result the type `inner` (the operands now come untransposed) and puts a
 * transpose by p after it that makes the old type again, for every later use. False when
 * out of memory (op's result keeps its type; the caller must not have changed anything
 * else yet). */
static bool retype_and_transpose(kiln_module *m, kiln__ir_op *op, const kiln__type *inner,
                                 const kiln_dims *p) {
    kiln__value *res = op->results[0];
    kiln__type outer = *res->type;
    kiln__attrs a = {.fn = layout_fn};
    a.u.permutation = *p;
    kiln__ir_op *t = kiln__block_append(m, op->block, KILN_OP_TRANSPOSE, &a, &res, 1, &outer, 1, 0);
    if (!t) return false;
    if (op->next != t) kiln__op_move_before(t, op->next);
    if (!kiln__value_set_type(m, res, inner)) {
        kiln__op_unlink(t);
        res->uses--;
        return false;
    }
    kiln__replace_uses(op->block, t, res, t->results[0]);
    return true;
}

/* ---- convolutions ------------------------------------------------------------------------ */

/* Rank-4 float convolutions without groups: what the CPU's convolution library runs
 * channels last, and what a chain of layers is made of. */
static bool conv_candidate(const kiln__ir_op *op) {
    if (op->kind != KILN_OP_CONVOLUTION || op->results[0]->type->shape.rank != 4) return false;
    const kiln_conv_params *c = &op->attrs->u.conv;
    kiln_dtype dt = op->results[0]->type->dtype;
    return kiln_dtype_is_float(dt) && c->feature_group_count <= 1 && c->batch_group_count <= 1;
}

/* Takes the transposes this pass made on a convolution's operands into its dimension
 * numbers: an operand dimension d of transpose(x, p) is dimension p[d] of x. */
static int32_t absorb_operands(kiln_module *m, kiln__ir_op *op) {
    int32_t changed = 0;
    for (int32_t i = 0; i < 2; i++) {
        const kiln_dims *p = moved_perm(op->operands[i]);
        if (!p) continue;
        kiln__attrs *own = kiln__op_attrs_mut(m, op);
        if (!own) return changed;
        kiln_conv_params *c = &own->u.conv;
        if (i == 0) {
            c->input_batch_dimension = p->v[c->input_batch_dimension];
            c->input_feature_dimension = p->v[c->input_feature_dimension];
            for (int32_t d = 0; d < c->input_spatial_dimensions.count; d++)
                c->input_spatial_dimensions.v[d] = p->v[c->input_spatial_dimensions.v[d]];
        } else {
            c->kernel_input_feature_dimension = p->v[c->kernel_input_feature_dimension];
            c->kernel_output_feature_dimension = p->v[c->kernel_output_feature_dimension];
            for (int32_t d = 0; d < c->kernel_spatial_dimensions.count; d++)
                c->kernel_spatial_dimensions.v[d] = p->v[c->kernel_spatial_dimensions.v[d]];
        }
        kiln__set_operand(op, i, op->operands[i]->def->operands[0]);
        changed++;
    }
    return changed;
}

/* Makes a convolution compute its result channels last, [batch, spatial..., feature], with
 * a transpose back to its logical layout after it. */
static int32_t result_channels_last(kiln_module *m, kiln__ir_op *op) {
    const kiln_conv_params *c = &op->attrs->u.conv;
    int32_t S = (int32_t)c->output_spatial_dimensions.count;
    /* p[logical dim] = its position channels last; the transpose back reads p. */
    kiln_dims p = {.count = S + 2};
    p.v[c->output_batch_dimension] = 0;
    for (int32_t d = 0; d < S; d++)
        p.v[c->output_spatial_dimensions.v[d]] = 1 + d;
    p.v[c->output_feature_dimension] = S + 1;
    bool identity = true;
    for (int32_t i = 0; i < p.count; i++)
        identity &= p.v[i] == i;
    if (identity) return 0;
    /* The channels-last result y holds logical dimension i at p[i]: transpose(y, p) gives
     * the logical result back. */
    kiln__type inner = *op->results[0]->type;
    inner.shape = unpermuted(&op->results[0]->type->shape, &p);
    kiln__attrs *own = kiln__op_attrs_mut(m, op);
    if (!own) return 0;
    if (!retype_and_transpose(m, op, &inner, &p)) return 0;
    own->u.conv.output_batch_dimension = 0;
    for (int32_t d = 0; d < S; d++)
        own->u.conv.output_spatial_dimensions.v[d] = 1 + d;
    own->u.conv.output_feature_dimension = S + 1;
    return 1;
}

/* ---- moving a transpose down ------------------------------------------------------------ */

/* An elementwise op of transposes by p (at least one this pass made), broadcasts and
 * scalars becomes the op of the untransposed values, then one transpose. */
static int32_t through_elementwise(kiln_module *m, kiln__ir_op *op) {
    const kiln_dims *p = NULL;
    for (int32_t i = 0; i < op->n_operands && !p; i++)
        p = moved_perm(op->operands[i]);
    if (!p || op->n_results != 1) return 0;
    int32_t rank = op->results[0]->type->shape.rank;
    for (int32_t i = 0; i < op->n_operands; i++) {
        const kiln__value *v = op->operands[i];
        const kiln_dims *q = moved_perm(v);
        if (q ? kiln__dims_equal(p, q) : v->type->shape.rank == 0) continue;
        if (!v->def || v->def->kind != KILN_OP_BROADCAST_IN_DIM || v->type->shape.rank != rank)
            return 0;
    }
    /* The broadcasts again, for the untransposed shape: operand dim k went to dim
     * dims[k], which is dimension p[dims[k]] untransposed. */
    kiln__value *now[8];
    if (op->n_operands > 8) return 0;
    for (int32_t i = 0; i < op->n_operands; i++) {
        kiln__value *v = op->operands[i];
        if (moved_perm(v) || v->type->shape.rank == 0) {
            now[i] = moved_perm(v) ? v->def->operands[0] : v;
            continue;
        }
        const kiln__ir_op *b = v->def;
        kiln__attrs a;
        kiln__attrs_copy(&a, b->attrs, KILN_OP_BROADCAST_IN_DIM);
        a.u.broadcast.shape = unpermuted(&b->attrs->u.broadcast.shape, p);
        for (int32_t k = 0; k < a.u.broadcast.dims.count; k++)
            a.u.broadcast.dims.v[k] = p->v[b->attrs->u.broadcast.dims.v[k]];
        kiln__type t = {.dtype = v->type->dtype, .shape = unpermuted(&v->type->shape, p)};
        kiln__ir_op *nb =
            insert_before(m, op, KILN_OP_BROADCAST_IN_DIM, &a, &b->operands[0], 1, &t);
        if (!nb) return 0; /* the ones made already are dead: dce removes them */
        now[i] = nb->results[0];
    }
    kiln__type inner = *op->results[0]->type;
    inner.shape = unpermuted(&inner.shape, p);
    if (!retype_and_transpose(m, op, &inner, p)) return 0;
    for (int32_t i = 0; i < op->n_operands; i++)
        kiln__set_operand(op, i, now[i]);
    return 1;
}

/* A window attribute of one entry per dimension, permuted for the untransposed operand. */
static void permute_dims(kiln_dims *d, const kiln_dims *p) {
    if (d->count != p->count) return;
    kiln_dims r = *d;
    for (int32_t i = 0; i < p->count; i++)
        r.v[p->v[i]] = d->v[i];
    *d = r;
}

static void permute_window(kiln_window_params *w, const kiln_dims *p) {
    permute_dims(&w->window_dimensions, p);
    permute_dims(&w->window_strides, p);
    permute_dims(&w->base_dilations, p);
    permute_dims(&w->window_dilations, p);
    permute_dims(&w->padding_low, p);
    permute_dims(&w->padding_high, p);
}

/* reduce_window(transpose(x, p), init) is transpose(reduce_window(x, init), p) with the
 * window permuted; select_and_scatter likewise when its source comes through the same
 * transpose (its result has the operand's shape). */
static int32_t through_window(kiln_module *m, kiln__ir_op *op) {
    const kiln_dims *p = moved_perm(op->operands[0]);
    if (!p || op->n_results != 1) return 0;
    bool sas = op->kind == KILN_OP_SELECT_AND_SCATTER;
    if (sas && (!moved_perm(op->operands[1]) || !kiln__dims_equal(p, moved_perm(op->operands[1]))))
        return 0;
    if (!sas && op->n_operands != 2) return 0;
    kiln__attrs *own = kiln__op_attrs_mut(m, op);
    if (!own) return 0;
    kiln__type inner = *op->results[0]->type;
    inner.shape = unpermuted(&inner.shape, p);
    kiln_dims perm = *p; /* p lives in the transpose's attributes, which stay */
    if (!retype_and_transpose(m, op, &inner, &perm)) return 0;
    permute_window(&own->u.window, &perm);
    kiln__set_operand(op, 0, op->operands[0]->def->operands[0]);
    if (sas) kiln__set_operand(op, 1, op->operands[1]->def->operands[0]);
    return 1;
}

/* reduce(transpose(x, p), init) over dims D is reduce(x, init) over p[D], whose kept
 * dimensions come in x's order; a transpose puts them in the old order when that differs. */
static int32_t through_reduce(kiln_module *m, kiln__ir_op *op) {
    const kiln_dims *p = moved_perm(op->operands[0]);
    if (!p || op->n_operands != 2 || op->n_results != 1) return 0;
    const kiln_dims *D = &op->attrs->u.reduce_dims;
    int32_t rank = p->count;
    bool reduced[KILN_MAX_RANK] = {false}; /* by dimension of x */
    for (int32_t k = 0; k < D->count; k++)
        reduced[p->v[D->v[k]]] = true;
    kiln_dims nd = {.count = 0};
    for (int32_t d = 0; d < rank; d++)
        if (reduced[d]) nd.v[nd.count++] = d;
    /* Old result dim k is x's dimension p[i_k] (i_k the k-th kept dim); the new result
     * lists x's kept dimensions in order, so q[k] = the rank of p[i_k] among them. */
    kiln_dims q = {.count = 0};
    kiln__type inner = *op->results[0]->type;
    int32_t kept_rank[KILN_MAX_RANK], n = 0;
    const kiln_shape *xs = &op->operands[0]->def->operands[0]->type->shape;
    for (int32_t d = 0; d < rank; d++)
        if (!reduced[d]) {
            inner.shape.dims[n] = xs->dims[d];
            kept_rank[d] = n++;
        }
    for (int32_t i = 0; i < rank; i++)
        if (!reduced[p->v[i]]) q.v[q.count++] = kept_rank[p->v[i]];
    bool identity = true;
    for (int32_t k = 0; k < q.count; k++)
        identity &= q.v[k] == k;
    kiln__attrs *own = kiln__op_attrs_mut(m, op);
    if (!own) return 0;
    if (!identity && !retype_and_transpose(m, op, &inner, &q)) return 0;
    own->u.reduce_dims = nd;
    kiln__set_operand(op, 0, op->operands[0]->def->operands[0]);
    return 1;
}

/* ---- the walk ---------------------------------------------------------------------------- */

/* Ops that gain from a channels-last operand: a convolution takes it into its dimension
 * numbers, pooling and its gradient have channels-last kernels, a reduction reads it in
 * place. */
static bool gains(const kiln__ir_op *op) {
    return op->kind == KILN_OP_CONVOLUTION || op->kind == KILN_OP_SELECT_AND_SCATTER ||
           ((op->kind == KILN_OP_REDUCE_WINDOW || op->kind == KILN_OP_REDUCE) &&
            op->n_operands == 2);
}

/* Can a user take a transposed operand: move the transpose on (elementwise ops and those
 * that gain) or merge it (a transpose)? */
static bool takes_transposed(const kiln__ir_op *op) {
    return gains(op) || kiln__op_has(op->kind, KILN_OPF_ELEMENTWISE) ||
           op->kind == KILN_OP_TRANSPOSE;
}

/* Scratch ids of a block's op results while it is assigned: the number of uses that take
 * the value transposed, and a flag for a value that reaches an op that gains from it
 * through elementwise ops alone. */
#define USES_MASK 0x3fffffff
#define REACHES (1 << 30)

static int32_t assign_block(kiln_module *m, kiln__block *b, kiln__layout_stats *st) {
    int32_t changed = 0;
    /* A convolution's result moves channels last only when all of its uses take it
     * transposed (uses inside regions or by the block's results do not count, so such a
     * result stays), and when it reaches something that gains: a convolution whose result
     * only goes out through elementwise ops would just move its transpose to the end. */
    for (kiln__ir_op *op = b->first; op; op = op->next)
        for (int32_t r = 0; r < op->n_results; r++)
            op->results[r]->id = 0;
    for (kiln__ir_op *op = b->first; op; op = op->next)
        if (takes_transposed(op))
            for (int32_t i = 0; i < op->n_operands; i++)
                if (op->operands[i]->def && op->operands[i]->def->block == b) op->operands[i]->id++;
    for (kiln__ir_op *op = b->last; op; op = op->prev) { /* users before their operands */
        bool elementwise = kiln__op_has(op->kind, KILN_OPF_ELEMENTWISE);
        if (!gains(op) && !(elementwise && (op->results[0]->id & REACHES))) continue;
        for (int32_t i = 0; i < op->n_operands; i++)
            if (op->operands[i]->def && op->operands[i]->def->block == b)
                op->operands[i]->id |= REACHES;
    }
    for (kiln__ir_op *op = b->first; op; op = op->next) {
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) changed += assign_block(m, op->regions[r], st);
        if (op->kind == KILN_OP_CONVOLUTION) {
            changed += absorb_operands(m, op);
            const kiln__value *res = op->results[0];
            if (conv_candidate(op) && res->uses > 0 && (res->id & USES_MASK) == res->uses &&
                (res->id & REACHES) && result_channels_last(m, op)) {
                changed++;
                if (st) st->convolutions++;
                op = op->next; /* the transpose just made */
            }
        } else if (kiln__op_has(op->kind, KILN_OPF_ELEMENTWISE)) {
            changed += through_elementwise(m, op);
        } else if (op->kind == KILN_OP_REDUCE_WINDOW || op->kind == KILN_OP_SELECT_AND_SCATTER) {
            changed += through_window(m, op);
        } else if (op->kind == KILN_OP_REDUCE) {
            changed += through_reduce(m, op);
        }
    }
    return changed;
}

int32_t kiln__layout_assign(kiln_module *m, kiln__layout_stats *st) {
    if (st) memset(st, 0, sizeof *st);
    int32_t changed = 0;
    for (int32_t f = 0; f < m->n_funcs; f++)
        if (m->funcs[f] && m->funcs[f]->body) changed += assign_block(m, m->funcs[f]->body, st);
    return changed;
}

static int32_t count_transposes(const kiln__block *b) {
    int32_t n = 0;
    for (const kiln__ir_op *op = b->first; op; op = op->next) {
        if (op->kind == KILN_OP_TRANSPOSE && op->attrs->fn == layout_fn) n++;
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) n += count_transposes(op->regions[r]);
    }
    return n;
}

int32_t kiln__layout_transposes(const kiln_module *m) {
    int32_t n = 0;
    for (int32_t f = 0; f < m->n_funcs; f++)
        if (m->funcs[f] && m->funcs[f]->body) n += count_transposes(m->funcs[f]->body);
    return n;
}
