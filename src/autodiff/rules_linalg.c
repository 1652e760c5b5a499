/* SPDX-License-Identifier: Apache-2.0 */
/* Differentiation rules of the contractions: dot_general and convolution.
 *
 * Both are bilinear, so their jvp is the op applied to one tangent and the other primal,
 * twice, and their vjp is a contraction of the cotangent with the other operand. The
 * cotangent contractions are expressed as the same ops (dot_general + transpose back to
 * the operand's layout; convolutions whose strides, dilations, padding and groups are
 * derived from the forward ones), so the backward pass runs on the same kernels as the
 * forward one.
 *
 * dtypes: the op converts its operands to the result dtype before multiplying, so the
 * cotangent contractions run in the result dtype too and are converted to each operand's
 * dtype at the end. Integer operands (and integer results) get no derivative. */
#include "autodiff/rules.h"

/* Referenced by rules.c so that a static link keeps this file's rules. */
extern const char kiln__rules_linalg_linked;
const char kiln__rules_linalg_linked = 1;

static kiln__value *convert_to(kiln__emitter *e, kiln__value *x, kiln_dtype dtype) {
    if (!x || x->type->dtype == dtype) return x;
    return kiln__emit_convert(e, x, dtype);
}

/* The status a rule returns: the ctx's once an emit helper has failed. */
static kiln_status rule_status(kiln__emitter *e) { return kiln_ctx_status(e->cx); }

/* ---- dot_general --------------------------------------------------------------------- */

/* The cotangent of one operand ("self") of a dot_general from the result cotangent g and
 * the other operand. g's dimensions are [batch, lhs free, rhs free]; contracting g's
 * dimensions that belong to the other operand with the other operand's free dimensions
 * (batching g's batch with the other's) leaves [batch, self free, other contracting],
 * which a transpose puts back into self's layout. */
static kiln__value *dot_cotangent(kiln__emitter *e, const kiln__ir_op *o, bool self_is_lhs,
                                  kiln__value *g, kiln__value *other, const kiln__type *self_type,
                                  kiln_dtype result_dtype) {
    const kiln_dot_params *p = &o->attrs->u.dot;
    const kiln_dims *self_batch = self_is_lhs ? &p->lhs_batching_dims : &p->rhs_batching_dims;
    const kiln_dims *self_contract =
        self_is_lhs ? &p->lhs_contracting_dims : &p->rhs_contracting_dims;
    const kiln_dims *other_batch = self_is_lhs ? &p->rhs_batching_dims : &p->lhs_batching_dims;
    const kiln_dims *other_contract =
        self_is_lhs ? &p->rhs_contracting_dims : &p->lhs_contracting_dims;
    int32_t nb = self_batch->count;
    int32_t self_rank = self_type->shape.rank, other_rank = other->type->shape.rank;
    int32_t n_self_free = self_rank - nb - self_contract->count;
    /* g's dimensions holding the other operand's free dimensions. */
    int32_t other_free_at = self_is_lhs ? nb + n_self_free : nb;

    kiln_dot_params q = {0};
    for (int32_t i = 0; i < nb; i++) {
        q.lhs_batching_dims.v[i] = i;
        q.rhs_batching_dims.v[i] = other_batch->v[i];
    }
    q.lhs_batching_dims.count = q.rhs_batching_dims.count = nb;
    int32_t k = 0;
    for (int32_t d = 0; d < other_rank; d++) {
        if (kiln__ad_dims_contain(other_batch, d) || kiln__ad_dims_contain(other_contract, d))
            continue;
        q.lhs_contracting_dims.v[k] = other_free_at + k;
        q.rhs_contracting_dims.v[k] = d;
        k++;
    }
    q.lhs_contracting_dims.count = q.rhs_contracting_dims.count = k;
    /* The result is [batch, g's remaining dimensions (self's free ones, in order), the
     * other's remaining dimensions (its contracting ones, in increasing order)]. */
    kiln__attrs a = {0};
    a.u.dot = q;
    a.result_dtype = result_dtype;
    a.fn = e->fn;
    kiln__value *operands[2] = {g, other};
    kiln__value *r = kiln__emit(e, KILN_OP_DOT_GENERAL, &a, operands, 2);
    if (!r) return NULL;

    /* src[k]: the dimension of self that result dimension k holds. */
    int64_t src[KILN_MAX_RANK];
    int32_t n = 0;
    for (int32_t i = 0; i < nb; i++)
        src[n++] = self_batch->v[i];
    for (int32_t d = 0; d < self_rank; d++)
        if (!kiln__ad_dims_contain(self_batch, d) && !kiln__ad_dims_contain(self_contract, d))
            src[n++] = d;
    for (int32_t d = 0; d < other_rank; d++) {
        /* other's contracting dimensions remain, in increasing order; each pairs with
         * the matching contracting dimension of self. */
        for (int32_t j = 0; j < other_contract->count; j++)
            if (other_contract->v[j] == d) src[n++] = self_contract->v[j];
    }
    kiln_dims perm = {.count = self_rank};
    bool identity = true;
    for (int32_t i = 0; i < n; i++) {
        perm.v[src[i]] = i;
        identity &= src[i] == i;
    }
    if (!identity) r = kiln__emit_transpose(e, r, &perm);
    return convert_to(e, r, self_type->dtype);
}

/* The op again on (a, b) with the recorded attributes. */
static kiln__value *same_op(kiln__emitter *e, const kiln__ir_op *o, kiln__value *a,
                            kiln__value *b) {
    kiln__value *operands[2] = {a, b};
    return kiln__emit(e, o->kind, o->attrs, operands, 2);
}

/* d(a * b) = da * b + a * db for a bilinear op. */
static kiln_status bilinear_jvp(kiln__emitter *e, const kiln__ad_op *op,
                                kiln__value *const *tangents, kiln__value **out_tangents) {
    const kiln__ir_op *o = op->op;
    if (!kiln_dtype_is_float(o->results[0]->type->dtype)) return rule_status(e);
    kiln__value *ta = kiln__ad_has_derivative(op->primals[0]) ? tangents[0] : NULL;
    kiln__value *tb = kiln__ad_has_derivative(op->primals[1]) ? tangents[1] : NULL;
    kiln__value *r = NULL;
    if (ta) r = same_op(e, o, ta, op->primals[1]);
    if (tb) r = kiln__emit_add_any(e, r, same_op(e, o, op->primals[0], tb));
    out_tangents[0] = r;
    return rule_status(e);
}

/* The cotangent of operand 0 (self_is_lhs) or 1 of a bilinear op o, of type self_type, from
 * the result cotangent g and the other operand; result_dtype is o's result dtype. */
typedef kiln__value *(*bilinear_cotangent)(kiln__emitter *e, const kiln__ir_op *o,
                                           bool self_is_lhs, kiln__value *g, kiln__value *other,
                                           const kiln__type *self_type, kiln_dtype result_dtype);

/* The reverse rule of a bilinear op: each float operand's cotangent is `cotangent` of g and
 * the other operand. */
static kiln_status bilinear_vjp(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                                kiln__value **out_cts, bilinear_cotangent cotangent) {
    kiln__value *g = cts[0];
    const kiln__ir_op *o = op->op;
    kiln_dtype rd = o->results[0]->type->dtype;
    if (!g || !kiln_dtype_is_float(rd)) return rule_status(e);
    kiln__value *lhs = op->primals[0], *rhs = op->primals[1];
    if (kiln__ad_has_derivative(lhs)) out_cts[0] = cotangent(e, o, true, g, rhs, lhs->type, rd);
    if (kiln__ad_has_derivative(rhs)) out_cts[1] = cotangent(e, o, false, g, lhs, rhs->type, rd);
    return rule_status(e);
}

kiln_status kiln__vjp_DOT_GENERAL(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                                  kiln__value **out_cts) {
    return bilinear_vjp(e, op, cts, out_cts, dot_cotangent);
}
KILN__JVP_AS(DOT_GENERAL, bilinear_jvp);

/* ---- convolution --------------------------------------------------------------------- */

/* Per spatial dimension i of a convolution: a list entry, or its default when the list
 * is empty. */
static int64_t entry(const kiln_dims *d, int32_t i, int64_t dflt) {
    return i < d->count ? d->v[i] : dflt;
}

static int64_t dilate(int64_t size, int64_t dilation) {
    return size == 0 ? 0 : (size - 1) * dilation + 1;
}

/* Moves a factor `groups` of dimension src (its major part) into dimension dst (as the
 * major part there): sizes [.., S, .., D, ..] become [.., S/groups, .., groups*D, ..].
 * The index of dst becomes g * D + d for the element at src index g * (S/groups) + s. */
static kiln__value *move_group_factor(kiln__emitter *e, kiln__value *x, int32_t src, int32_t dst,
                                      int64_t groups) {
    if (!x || groups == 1) return x;
    const kiln_shape *sh = &x->type->shape;
    int32_t rank = sh->rank;
    if (rank + 1 > KILN_MAX_RANK) {
        kiln__emit_error(e, KILN_UNIMPLEMENTED,
                         "the convolution gradient with groups needs rank %d; at most %d is "
                         "supported",
                         (int)rank + 1, KILN_MAX_RANK);
        return NULL;
    }
    /* Split src into [groups, S/groups]. */
    kiln_shape split = {.rank = rank + 1};
    for (int32_t d = 0, k = 0; d < rank; d++) {
        if (d == src) {
            split.dims[k++] = groups;
            split.dims[k++] = sh->dims[d] / groups;
        } else {
            split.dims[k++] = sh->dims[d];
        }
    }
    kiln__value *y = kiln__emit_reshape(e, x, &split);
    /* Put the groups axis (at src in `split`) right before dst's axis. */
    int32_t dst1 = dst + (dst > src ? 1 : 0);
    kiln_dims perm = {.count = rank + 1};
    int32_t k = 0;
    for (int32_t d = 0; d < rank + 1; d++) {
        if (d == src) continue;
        if (d == dst1) perm.v[k++] = src;
        perm.v[k++] = d;
    }
    y = kiln__emit_transpose(e, y, &perm);
    kiln_shape merged = *sh;
    merged.dims[src] = sh->dims[src] / groups;
    merged.dims[dst] = sh->dims[dst] * groups;
    return kiln__emit_reshape(e, y, &merged);
}

static kiln__value *emit_conv(kiln__emitter *e, kiln__value *lhs, kiln__value *rhs,
                              const kiln_conv_params *p, kiln_dtype result_dtype) {
    kiln__attrs a = {0};
    a.u.conv = *p;
    a.result_dtype = result_dtype;
    a.fn = e->fn;
    kiln__value *operands[2] = {lhs, rhs};
    return kiln__emit(e, KILN_OP_CONVOLUTION, &a, operands, 2);
}

/* The dimension numbers of one side of a convolution: its two roles (batch and feature of
 * the input or the output; input and output feature of the kernel) and its spatial
 * dimensions. The gradient convolutions give the forward sides other places. */
typedef struct conv_side {
    int64_t first, second;
    kiln_dims spatial;
} conv_side;

static conv_side input_side(const kiln_conv_params *p) {
    return (conv_side){p->input_batch_dimension, p->input_feature_dimension,
                       p->input_spatial_dimensions};
}
static conv_side kernel_side(const kiln_conv_params *p) {
    return (conv_side){p->kernel_input_feature_dimension, p->kernel_output_feature_dimension,
                       p->kernel_spatial_dimensions};
}
static conv_side output_side(const kiln_conv_params *p) {
    return (conv_side){p->output_batch_dimension, p->output_feature_dimension,
                       p->output_spatial_dimensions};
}
static conv_side swapped(conv_side d) { return (conv_side){d.second, d.first, d.spatial}; }

/* A convolution of S spatial dimensions with the given sides as input, kernel and output;
 * its windows (set_window) and groups are the caller's. */
static kiln_conv_params conv_of_sides(conv_side in, conv_side kernel, conv_side out, int32_t S) {
    kiln_conv_params q = {0};
    q.input_batch_dimension = in.first;
    q.input_feature_dimension = in.second;
    q.input_spatial_dimensions = in.spatial;
    q.kernel_input_feature_dimension = kernel.first;
    q.kernel_output_feature_dimension = kernel.second;
    q.kernel_spatial_dimensions = kernel.spatial;
    q.output_batch_dimension = out.first;
    q.output_feature_dimension = out.second;
    q.output_spatial_dimensions = out.spatial;
    q.window_strides.count = q.padding_low.count = q.padding_high.count = S;
    q.lhs_dilation.count = q.rhs_dilation.count = S;
    return q;
}

/* The forward window along spatial dimension i: stride s, lhs dilation ld, rhs dilation
 * rdil, low padding lo, and the input, kernel and output sizes I, K and O. */
/* A group count as the parameters hold it: 0 (never set) means one group. */
static int64_t group_count(int64_t count) { return count > 0 ? count : 1; }

typedef struct conv_window {
    int64_t s, ld, rdil, lo, I, K, O;
} conv_window;

static conv_window forward_window(const kiln_conv_params *p, int32_t i, const kiln_shape *in,
                                  const kiln_shape *kernel, const kiln_shape *out) {
    return (conv_window){entry(&p->window_strides, i, 1),
                         entry(&p->lhs_dilation, i, 1),
                         entry(&p->rhs_dilation, i, 1),
                         entry(&p->padding_low, i, 0),
                         in->dims[p->input_spatial_dimensions.v[i]],
                         kernel->dims[p->kernel_spatial_dimensions.v[i]],
                         out->dims[p->output_spatial_dimensions.v[i]]};
}

static void set_window(kiln_conv_params *q, int32_t i, int64_t stride, int64_t lhs_dilation,
                       int64_t rhs_dilation, int64_t lo, int64_t hi) {
    q->window_strides.v[i] = stride;
    q->lhs_dilation.v[i] = lhs_dilation;
    q->rhs_dilation.v[i] = rhs_dilation;
    q->padding_low.v[i] = lo;
    q->padding_high.v[i] = hi;
}

/* The cotangent of the convolution's input: a convolution of the cotangent g (dilated by
 * the forward strides) with the kernel reversed in space and its feature roles swapped,
 * striding by the forward lhs dilation. Per spatial dimension (input size I, kernel K,
 * cotangent size O; forward stride s, lhs dilation ld, rhs dilation rd, padding lo):
 * low padding (K-1)*rd - lo and high padding chosen so that exactly I outputs come out,
 * ((I-1)*ld + (K-1)*rd + 1) - low - ((O-1)*s + 1). Feature groups regroup the kernel;
 * batch groups become feature groups whose outputs fold back into the batch. */
static kiln__value *conv_input_cotangent(kiln__emitter *e, const kiln_conv_params *p,
                                         kiln__value *g, kiln__value *kernel,
                                         const kiln__type *in_type, kiln_dtype rd) {
    int32_t S = in_type->shape.rank - 2;
    int64_t fgc = group_count(p->feature_group_count), bgc = group_count(p->batch_group_count);
    int64_t groups = fgc > 1 ? fgc : bgc;
    const kiln_shape *ks = &kernel->type->shape;
    kiln__value *w = move_group_factor(e, kernel, (int32_t)p->kernel_output_feature_dimension,
                                       (int32_t)p->kernel_input_feature_dimension, groups);
    kiln__attrs ra = {0};
    ra.u.reverse_dims = p->kernel_spatial_dimensions;
    ra.fn = e->fn;
    if (S > 0) w = kiln__emit(e, KILN_OP_REVERSE, &ra, &w, 1);

    kiln_conv_params q =
        conv_of_sides(output_side(p), swapped(kernel_side(p)), input_side(p), S);
    for (int32_t i = 0; i < S; i++) {
        conv_window f = forward_window(p, i, &in_type->shape, ks, &g->type->shape);
        int64_t before = dilate(f.K, f.rdil) - 1 - f.lo;
        set_window(&q, i, f.ld, f.s, f.rdil, before,
                   dilate(f.I, f.ld) + dilate(f.K, f.rdil) - 1 - dilate(f.O, f.s) - before);
    }
    q.feature_group_count = groups;
    q.batch_group_count = 1;
    kiln__value *r = emit_conv(e, g, w, &q, rd);
    if (bgc > 1)
        r = move_group_factor(e, r, (int32_t)p->input_feature_dimension,
                              (int32_t)p->input_batch_dimension, bgc);
    return convert_to(e, r, in_type->dtype);
}

/* The cotangent of the kernel: a convolution of the input (batch and feature roles
 * swapped) with the cotangent as the kernel (dilated by the forward strides), striding
 * by the forward rhs dilation, so that one output per kernel position comes out. Low
 * padding is the forward one; high padding ((O-1)*s + 1) - ((I-1)*ld + 1) +
 * ((K-1)*rd + 1) - lo - 1. Feature groups become batch groups and the reverse. */
static kiln__value *conv_kernel_cotangent(kiln__emitter *e, const kiln_conv_params *p,
                                          kiln__value *g, kiln__value *input,
                                          const kiln__type *k_type, kiln_dtype rd) {
    int32_t S = k_type->shape.rank - 2;
    int64_t fgc = group_count(p->feature_group_count), bgc = group_count(p->batch_group_count);
    kiln_conv_params q =
        conv_of_sides(swapped(input_side(p)), output_side(p), kernel_side(p), S);
    for (int32_t i = 0; i < S; i++) {
        conv_window f = forward_window(p, i, &input->type->shape, &k_type->shape, &g->type->shape);
        set_window(&q, i, f.rdil, f.ld, f.s, f.lo,
                   dilate(f.O, f.s) - dilate(f.I, f.ld) + dilate(f.K, f.rdil) - f.lo - 1);
    }
    q.feature_group_count = bgc;
    q.batch_group_count = fgc;
    kiln__value *r = emit_conv(e, input, g, &q, rd);
    return convert_to(e, r, k_type->dtype);
}

/* The input's (self_is_lhs) or the kernel's cotangent of convolution o; zeros where any of
 * g, input and kernel is empty. */
static kiln__value *conv_cotangent(kiln__emitter *e, const kiln__ir_op *o, bool self_is_lhs,
                                   kiln__value *g, kiln__value *other, const kiln__type *self_type,
                                   kiln_dtype rd) {
    const kiln_conv_params *p = &o->attrs->u.conv;
    if (kiln__ad_is_empty(g->type) || kiln__ad_is_empty(self_type) ||
        kiln__ad_is_empty(other->type))
        return kiln__emit_zeros(e, self_type);
    return self_is_lhs ? conv_input_cotangent(e, p, g, other, self_type, rd)
                       : conv_kernel_cotangent(e, p, g, other, self_type, rd);
}

kiln_status kiln__vjp_CONVOLUTION(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                                  kiln__value **out_cts) {
    return bilinear_vjp(e, op, cts, out_cts, conv_cotangent);
}
KILN__JVP_AS(CONVOLUTION, bilinear_jvp);
