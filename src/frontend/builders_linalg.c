/* SPDX-License-Identifier: Apache-2.0 */
/* Builders for the contractions: dot_general, convolution, and numpy's matmul on top of
 * dot_general (with broadcast_in_dim for the batch dimensions, so the recorded ops stay
 * pure StableHLO). */
#include <stdio.h>

#include "base/ctx_internal.h"
#include "frontend/op_run.h"

/* The result dtype: as given, or the operands' when they agree (left as KILN_DTYPE_COUNT
 * otherwise, for inference to report). */
static kiln_dtype resolve_dtype(const kiln_tensor *lhs, const kiln_tensor *rhs, kiln_dtype d) {
    if (d != KILN_DTYPE_COUNT || !lhs || !rhs) return d;
    kiln_dtype a = kiln_tensor_dtype(lhs), b = kiln_tensor_dtype(rhs);
    return a == b ? a : KILN_DTYPE_COUNT;
}

kiln_tensor *kiln_dot_general(kiln_ctx *cx, kiln_tensor *lhs, kiln_tensor *rhs,
                              const kiln_dot_params *params, kiln_dtype result_dtype) {
    static const char fn[] = "kiln_dot_general";
    if (!cx) return NULL;
    if (!params) return kiln__null_argument_ptr(cx, fn, "params");
    kiln__attrs attrs = {.fn = fn};
    attrs.u.dot = *params;
    attrs.result_dtype = resolve_dtype(lhs, rhs, result_dtype);
    kiln_tensor *operands[2] = {lhs, rhs};
    return kiln__op_run1(cx, KILN_OP_DOT_GENERAL, &attrs, operands, 2);
}

kiln_conv_params kiln_conv_params_nchw(int32_t spatial) {
    kiln_conv_params p = {0};
    if (spatial < 0 || spatial > KILN_MAX_RANK - 2) {
        /* Rejected by kiln_convolution: no dimension -1. */
        p.input_batch_dimension = p.input_feature_dimension = -1;
        p.kernel_input_feature_dimension = p.kernel_output_feature_dimension = -1;
        p.output_batch_dimension = p.output_feature_dimension = -1;
        return p;
    }
    p.input_batch_dimension = 0;
    p.input_feature_dimension = 1;
    p.kernel_output_feature_dimension = 0;
    p.kernel_input_feature_dimension = 1;
    p.output_batch_dimension = 0;
    p.output_feature_dimension = 1;
    kiln_dims spatial_dims = {.count = spatial}, ones = {.count = spatial},
              zeros = {.count = spatial};
    for (int32_t i = 0; i < spatial; i++) {
        spatial_dims.v[i] = 2 + i;
        ones.v[i] = 1;
        zeros.v[i] = 0;
    }
    p.input_spatial_dimensions = p.kernel_spatial_dimensions = p.output_spatial_dimensions =
        spatial_dims;
    p.window_strides = p.lhs_dilation = p.rhs_dilation = ones;
    p.padding_low = p.padding_high = zeros;
    p.feature_group_count = p.batch_group_count = 1;
    return p;
}

static void default_list(kiln_dims *d, int32_t n, int64_t value) {
    if (d->count != 0 || n <= 0 || n > KILN_MAX_RANK) return;
    d->count = n;
    for (int32_t i = 0; i < n; i++)
        d->v[i] = value;
}

kiln_tensor *kiln_convolution(kiln_ctx *cx, kiln_tensor *lhs, kiln_tensor *rhs,
                              const kiln_conv_params *params, kiln_dtype result_dtype) {
    static const char fn[] = "kiln_convolution";
    if (!cx) return NULL;
    if (!params) return kiln__null_argument_ptr(cx, fn, "params");
    kiln__attrs attrs = {.fn = fn};
    kiln_conv_params *p = &attrs.u.conv;
    *p = *params;
    int32_t spatial = lhs ? kiln_tensor_rank(lhs) - 2 : 0;
    default_list(&p->window_strides, spatial, 1);
    default_list(&p->padding_low, spatial, 0);
    default_list(&p->padding_high, spatial, 0);
    default_list(&p->lhs_dilation, spatial, 1);
    default_list(&p->rhs_dilation, spatial, 1);
    if (p->feature_group_count == 0) p->feature_group_count = 1;
    if (p->batch_group_count == 0) p->batch_group_count = 1;
    attrs.result_dtype = resolve_dtype(lhs, rhs, result_dtype);
    kiln_tensor *operands[2] = {lhs, rhs};
    return kiln__op_run1(cx, KILN_OP_CONVOLUTION, &attrs, operands, 2);
}

/* broadcast_in_dim of x to `shape`, its dimensions mapped to the trailing ones. */
static kiln_tensor *broadcast_trailing(kiln_ctx *cx, const char *fn, kiln_tensor *x,
                                       const kiln_shape *shape) {
    const kiln_shape *s = kiln_tensor_shape(x);
    if (kiln_shape_equal(s, shape)) return x;
    kiln__attrs a = {.fn = fn};
    a.u.broadcast.shape = *shape;
    a.u.broadcast.dims.count = s->rank;
    for (int32_t d = 0; d < s->rank; d++)
        a.u.broadcast.dims.v[d] = shape->rank - s->rank + d;
    return kiln__op_run1(cx, KILN_OP_BROADCAST_IN_DIM, &a, &x, 1);
}

kiln_tensor *kiln_matmul(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b) {
    static const char fn[] = "kiln_matmul";
    if (!cx) return NULL;
    if (!a || !b) return kiln__null_argument_ptr(cx, fn, a ? "operand 2" : "operand 1");
    const kiln_shape *as = kiln_tensor_shape(a), *bs = kiln_tensor_shape(b);
    char sa[KILN__SHAPE_TEXT], sb[KILN__SHAPE_TEXT];
    if (as->rank == 0 || bs->rank == 0) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: operand %d has shape []; expected at least one dimension", fn,
                           as->rank == 0 ? 1 : 2);
        return NULL;
    }
    if (kiln_tensor_dtype(a) != kiln_tensor_dtype(b)) {
        kiln_ctx_set_error(
            cx, KILN_INVALID_ARGUMENT, "%s: operands have dtypes %s and %s; expected one dtype", fn,
            kiln_dtype_name(kiln_tensor_dtype(a)), kiln_dtype_name(kiln_tensor_dtype(b)));
        return NULL;
    }
    int32_t ra = as->rank, rb = bs->rank;
    int32_t ka = ra - 1, kb = rb == 1 ? 0 : rb - 2;
    if (as->dims[ka] != bs->dims[kb]) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: operand 1 has shape %s and operand 2 has shape %s; the "
                           "contracted dimensions have sizes %lld and %lld",
                           fn, kiln__shape_text(as, sa), kiln__shape_text(bs, sb),
                           (long long)as->dims[ka], (long long)bs->dims[kb]);
        return NULL;
    }
    kiln__attrs attrs = {.fn = fn, .result_dtype = kiln_tensor_dtype(a)};
    kiln_dot_params *p = &attrs.u.dot;
    if (ra == 1 || rb <= 2) {
        /* A vector contracts directly: the other operand's remaining dimensions are the
         * result, as numpy gives after removing the promoted dimension. So does a matrix
         * b: a's leading dimensions come first in the result, as its batch. */
        p->lhs_contracting_dims = (kiln_dims){.count = 1, .v = {ka}};
        p->rhs_contracting_dims = (kiln_dims){.count = 1, .v = {kb}};
        kiln_tensor *operands[2] = {a, b};
        return kiln__op_run1(cx, KILN_OP_DOT_GENERAL, &attrs, operands, 2);
    }
    /* Broadcast the batch dimensions (all but the last two) numpy-style. */
    int32_t na = ra - 2, nb = rb - 2, n = na > nb ? na : nb;
    kiln_shape batch = {.rank = n};
    for (int32_t i = 0; i < n; i++) {
        int32_t ia = i - (n - na), ib = i - (n - nb);
        int64_t da = ia >= 0 ? as->dims[ia] : 1, db = ib >= 0 ? bs->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "%s: operand 1 has shape %s and operand 2 has shape %s; their "
                               "batch dimensions do not broadcast (%lld and %lld)",
                               fn, kiln__shape_text(as, sa), kiln__shape_text(bs, sb),
                               (long long)da, (long long)db);
            return NULL;
        }
        batch.dims[i] = da == 1 ? db : da;
    }
    kiln_shape ta = batch, tb = batch;
    ta.rank = tb.rank = n + 2;
    ta.dims[n] = as->dims[ra - 2], ta.dims[n + 1] = as->dims[ra - 1];
    tb.dims[n] = bs->dims[rb - 2], tb.dims[n + 1] = bs->dims[rb - 1];
    kiln_tensor *operands[2] = {broadcast_trailing(cx, fn, a, &ta), NULL};
    if (!operands[0]) return NULL;
    if (!(operands[1] = broadcast_trailing(cx, fn, b, &tb))) return NULL;
    p->lhs_batching_dims.count = p->rhs_batching_dims.count = n;
    for (int32_t i = 0; i < n; i++)
        p->lhs_batching_dims.v[i] = p->rhs_batching_dims.v[i] = i;
    p->lhs_contracting_dims = (kiln_dims){.count = 1, .v = {n + 1}};
    p->rhs_contracting_dims = (kiln_dims){.count = 1, .v = {n}};
    return kiln__op_run1(cx, KILN_OP_DOT_GENERAL, &attrs, operands, 2);
}

kiln_tensor *kiln_fft(kiln_ctx *cx, kiln_tensor *x, kiln_fft_type type, kiln_dims fft_length) {
    kiln__attrs attrs = {.fn = "kiln_fft"};
    attrs.u.fft.type = type;
    attrs.u.fft.length = fft_length;
    return kiln__op_run1(cx, KILN_OP_FFT, &attrs, &x, 1);
}

kiln_tensor *kiln_triangular_solve(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b, bool left_side,
                                   bool lower, bool unit_diagonal,
                                   kiln_solve_transpose transpose_a) {
    kiln__attrs attrs = {.fn = "kiln_triangular_solve"};
    attrs.u.triangular.left_side = left_side;
    attrs.u.triangular.lower = lower;
    attrs.u.triangular.unit_diagonal = unit_diagonal;
    attrs.u.triangular.transpose_a = transpose_a;
    kiln_tensor *operands[2] = {a, b};
    return kiln__op_run1(cx, KILN_OP_TRIANGULAR_SOLVE, &attrs, operands, 2);
}

kiln_tensor *kiln_cholesky(kiln_ctx *cx, kiln_tensor *a, bool lower) {
    kiln__attrs attrs = {.fn = "kiln_cholesky"};
    attrs.u.triangular.lower = lower;
    return kiln__op_run1(cx, KILN_OP_CHOLESKY, &attrs, &a, 1);
}
