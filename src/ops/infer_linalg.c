/* SPDX-License-Identifier: Apache-2.0 */
/* Inference for the contractions: dot_general and convolution (StableHLO spec, sections
 * "dot_general" and "convolution"). The result dtype is attrs->result_dtype; operands are
 * converted to it before multiplying, so it may differ from theirs (i8 x i8 -> i32,
 * f32 x f32 -> f64). KILN_DTYPE_COUNT means the operands' dtype, which must then match. */
#include <stdio.h>

#include "ops/infer.h"

static kiln_status result_dtype(kiln_ctx *cx, const kiln__attrs *attrs, const kiln__type *lhs,
                                const kiln__type *rhs, kiln_dtype *out) {
    kiln_dtype r = attrs->result_dtype;
    if (r == KILN_DTYPE_COUNT) {
        if (lhs->dtype != rhs->dtype)
            return kiln__infer_error(cx, attrs,
                                     "operands have dtypes %s and %s; expected one dtype, or "
                                     "pass the result dtype to convert both to",
                                     kiln_dtype_name(lhs->dtype), kiln_dtype_name(rhs->dtype));
        r = lhs->dtype;
    }
    if (!kiln_dtype_is_valid(r))
        return kiln__infer_error(cx, attrs, "result dtype %d is not a valid dtype", (int)r);
    /* Converting a complex operand to a real result would drop its imaginary part. */
    if (!kiln_dtype_is_complex(r) &&
        (kiln_dtype_is_complex(lhs->dtype) || kiln_dtype_is_complex(rhs->dtype)))
        return kiln__infer_error(cx, attrs,
                                 "operands have dtypes %s and %s; a complex operand needs a "
                                 "complex result dtype, not %s",
                                 kiln_dtype_name(lhs->dtype), kiln_dtype_name(rhs->dtype),
                                 kiln_dtype_name(r));
    *out = r;
    return KILN_OK;
}

/* ---- dot_general ------------------------------------------------------------------- */

/* side is "lhs" or "rhs"; the attribute names are literals, so that a dot that checks
 * out formats nothing (inference runs for every traced or eager op). */
static kiln_status check_dot_dims(kiln_ctx *cx, const kiln__attrs *attrs, const char *side,
                                  const kiln_dims *batch, const kiln_dims *contract, int32_t rank) {
    bool lhs = side[0] == 'l';
    kiln_status s =
        kiln__check_dims(cx, attrs, lhs ? "lhs_batching_dims" : "rhs_batching_dims", batch, rank);
    if (s != KILN_OK) return s;
    if ((s = kiln__check_dims(cx, attrs, lhs ? "lhs_contracting_dims" : "rhs_contracting_dims",
                              contract, rank)) != KILN_OK)
        return s;
    for (int32_t i = 0; i < contract->count; i++)
        for (int32_t j = 0; j < batch->count; j++)
            if (contract->v[i] == batch->v[j])
                return kiln__infer_error(cx, attrs,
                                         "dimension %lld of %s is both a batching and a "
                                         "contracting dimension",
                                         (long long)contract->v[i], side);
    return KILN_OK;
}

/* The i-th of lhs's dimensions `ld` and of rhs's `rd` (as many, checked) have one size;
 * `kind` ("batching", "contracting") names them. */
static kiln_status check_paired_sizes(kiln_ctx *cx, const kiln__attrs *attrs, const char *kind,
                                      const kiln__type *lhs, const kiln__type *rhs,
                                      const kiln_dims *ld, const kiln_dims *rd) {
    for (int32_t i = 0; i < ld->count; i++) {
        int64_t a = lhs->shape.dims[ld->v[i]];
        int64_t b = rhs->shape.dims[rd->v[i]];
        if (a != b)
            return kiln__infer_error(cx, attrs,
                                     "%s dimension %lld of lhs has size %lld but %s dimension "
                                     "%lld of rhs has size %lld",
                                     kind, (long long)ld->v[i], (long long)a, kind,
                                     (long long)rd->v[i], (long long)b);
    }
    return KILN_OK;
}

KILN__INFER(DOT_GENERAL) {
    (void)n_operands, (void)n_results;
    const kiln__type *lhs = &operands[0], *rhs = &operands[1];
    const kiln_dot_params *p = &attrs->u.dot;
    kiln_dtype rd = KILN_DTYPE_COUNT;
    kiln_status s = result_dtype(cx, attrs, lhs, rhs, &rd);
    if (s != KILN_OK) return s;
    if (p->lhs_batching_dims.count != p->rhs_batching_dims.count)
        return kiln__infer_error(cx, attrs,
                                 "lhs has %d batching dimensions and rhs has %d; expected "
                                 "as many",
                                 (int)p->lhs_batching_dims.count, (int)p->rhs_batching_dims.count);
    if (p->lhs_contracting_dims.count != p->rhs_contracting_dims.count)
        return kiln__infer_error(cx, attrs,
                                 "lhs has %d contracting dimensions and rhs has %d; expected "
                                 "as many",
                                 (int)p->lhs_contracting_dims.count,
                                 (int)p->rhs_contracting_dims.count);
    if ((s = check_dot_dims(cx, attrs, "lhs", &p->lhs_batching_dims, &p->lhs_contracting_dims,
                            lhs->shape.rank)) != KILN_OK ||
        (s = check_dot_dims(cx, attrs, "rhs", &p->rhs_batching_dims, &p->rhs_contracting_dims,
                            rhs->shape.rank)) != KILN_OK)
        return s;
    if ((s = check_paired_sizes(cx, attrs, "batching", lhs, rhs, &p->lhs_batching_dims,
                                &p->rhs_batching_dims)) != KILN_OK ||
        (s = check_paired_sizes(cx, attrs, "contracting", lhs, rhs, &p->lhs_contracting_dims,
                                &p->rhs_contracting_dims)) != KILN_OK)
        return s;
    int32_t nb = p->lhs_batching_dims.count, nc = p->lhs_contracting_dims.count;
    int32_t rank = lhs->shape.rank + rhs->shape.rank - nb - 2 * nc;
    if (rank > KILN_MAX_RANK)
        return kiln__infer_error(cx, attrs, "the result would have rank %d; at most %d is allowed",
                                 (int)rank, KILN_MAX_RANK);
    kiln_shape out = {.rank = rank};
    int32_t r = 0;
    for (int32_t i = 0; i < nb; i++)
        out.dims[r++] = lhs->shape.dims[p->lhs_batching_dims.v[i]];
    for (int side = 0; side < 2; side++) {
        const kiln_shape *sh = side ? &rhs->shape : &lhs->shape;
        const kiln_dims *batch = side ? &p->rhs_batching_dims : &p->lhs_batching_dims;
        const kiln_dims *contract = side ? &p->rhs_contracting_dims : &p->lhs_contracting_dims;
        bool used[KILN_MAX_RANK] = {false};
        for (int32_t i = 0; i < batch->count; i++)
            used[batch->v[i]] = true;
        for (int32_t i = 0; i < contract->count; i++)
            used[contract->v[i]] = true;
        for (int32_t d = 0; d < sh->rank; d++)
            if (!used[d]) out.dims[r++] = sh->dims[d];
    }
    results[0] = (kiln__type){.dtype = rd, .shape = out};
    return KILN_OK;
}

/* ---- convolution ------------------------------------------------------------------- */

/* Checks that a list of attribute values has n entries. */
static kiln_status check_len(kiln_ctx *cx, const kiln__attrs *attrs, const char *what,
                             const kiln_dims *d, int32_t n) {
    if (d->count != n)
        return kiln__infer_error(cx, attrs,
                                 "%s has %d entries; expected %d (the operands have "
                                 "%d spatial dimensions)",
                                 what, (int)d->count, (int)n, (int)n);
    return KILN_OK;
}

/* Checks [batch] + spatial + [feature] (or the kernel's spatial + [in] + [out]): each in
 * range and none repeated. names[0], names[1] name the two single dimensions. */
static kiln_status check_dim_numbers(kiln_ctx *cx, const kiln__attrs *attrs, const char *operand,
                                     int64_t first, const char *first_name, int64_t second,
                                     const char *second_name, const kiln_dims *spatial,
                                     const char *spatial_name, int32_t rank) {
    int64_t all[KILN_MAX_RANK + 2];
    const char *names[KILN_MAX_RANK + 2];
    int32_t n = 0;
    all[n] = first, names[n++] = first_name;
    all[n] = second, names[n++] = second_name;
    for (int32_t i = 0; i < spatial->count; i++)
        all[n] = spatial->v[i], names[n++] = spatial_name;
    for (int32_t i = 0; i < n; i++) {
        if (all[i] < 0 || all[i] >= rank)
            return kiln__infer_error(cx, attrs, "%s %lld is not a dimension of the %s (rank %d)",
                                     names[i], (long long)all[i], operand, (int)rank);
        for (int32_t j = 0; j < i; j++)
            if (all[j] == all[i])
                return kiln__infer_error(cx, attrs,
                                         "%s dimension numbers repeat dimension %lld (%s and %s)",
                                         operand, (long long)all[i], names[j], names[i]);
    }
    return KILN_OK;
}

static kiln_status check_positive(kiln_ctx *cx, const kiln__attrs *attrs, const char *what,
                                  const kiln_dims *d) {
    for (int32_t i = 0; i < d->count; i++)
        if (d->v[i] <= 0)
            return kiln__infer_error(cx, attrs, "%s[%d] is %lld; expected a positive value", what,
                                     (int)i, (long long)d->v[i]);
    return KILN_OK;
}

/* Checks that `size`, the size of dimension `dim` of operand `operand` (`what` names it), is
 * a multiple of the group count `count` (`count_name`). */
static kiln_status check_multiple(kiln_ctx *cx, const kiln__attrs *attrs, const char *what,
                                  int64_t size, int64_t dim, int operand, const char *count_name,
                                  int64_t count) {
    if (size % count)
        return kiln__infer_error(cx, attrs,
                                 "the %s size %lld (dimension %lld of operand %d) is not a "
                                 "multiple of %s %lld",
                                 what, (long long)size, (long long)dim, operand, count_name,
                                 (long long)count);
    return KILN_OK;
}

static bool dilated(int64_t size, int64_t dilation, int64_t *out) {
    if (size == 0) {
        *out = 0;
        return true;
    }
    return !__builtin_mul_overflow(size - 1, dilation, out) &&
           !__builtin_add_overflow(*out, 1, out);
}

KILN__INFER(CONVOLUTION) {
    (void)n_operands, (void)n_results;
    const kiln__type *lhs = &operands[0], *rhs = &operands[1];
    const kiln_conv_params *p = &attrs->u.conv;
    kiln_dtype rd = KILN_DTYPE_COUNT;
    kiln_status s = result_dtype(cx, attrs, lhs, rhs, &rd);
    if (s != KILN_OK) return s;
    int32_t N = lhs->shape.rank;
    char a[KILN__TYPE_TEXT], b[KILN__TYPE_TEXT];
    if (N < 2)
        return kiln__infer_error(cx, attrs,
                                 "operand 1 is %s; expected rank 2 or more (batch, feature "
                                 "and spatial dimensions)",
                                 kiln__type_text(lhs, a));
    if (rhs->shape.rank != N)
        return kiln__infer_error(cx, attrs,
                                 "operand 2 is %s but operand 1 is %s; expected the "
                                 "same rank",
                                 kiln__type_text(rhs, a), kiln__type_text(lhs, b));
    int32_t S = N - 2;
    if ((s = check_len(cx, attrs, "input_spatial_dimensions", &p->input_spatial_dimensions, S)) ||
        (s = check_len(cx, attrs, "kernel_spatial_dimensions", &p->kernel_spatial_dimensions, S)) ||
        (s = check_len(cx, attrs, "output_spatial_dimensions", &p->output_spatial_dimensions, S)) ||
        (s = check_len(cx, attrs, "window_strides", &p->window_strides, S)) ||
        (s = check_len(cx, attrs, "padding_low", &p->padding_low, S)) ||
        (s = check_len(cx, attrs, "padding_high", &p->padding_high, S)) ||
        (s = check_len(cx, attrs, "lhs_dilation", &p->lhs_dilation, S)) ||
        (s = check_len(cx, attrs, "rhs_dilation", &p->rhs_dilation, S)))
        return s;
    if ((s = check_dim_numbers(cx, attrs, "input", p->input_batch_dimension,
                               "input_batch_dimension", p->input_feature_dimension,
                               "input_feature_dimension", &p->input_spatial_dimensions,
                               "input_spatial_dimensions", N)) ||
        (s = check_dim_numbers(cx, attrs, "kernel", p->kernel_input_feature_dimension,
                               "kernel_input_feature_dimension", p->kernel_output_feature_dimension,
                               "kernel_output_feature_dimension", &p->kernel_spatial_dimensions,
                               "kernel_spatial_dimensions", N)) ||
        (s = check_dim_numbers(cx, attrs, "output", p->output_batch_dimension,
                               "output_batch_dimension", p->output_feature_dimension,
                               "output_feature_dimension", &p->output_spatial_dimensions,
                               "output_spatial_dimensions", N)))
        return s;
    if ((s = check_positive(cx, attrs, "window_strides", &p->window_strides)) ||
        (s = check_positive(cx, attrs, "lhs_dilation", &p->lhs_dilation)) ||
        (s = check_positive(cx, attrs, "rhs_dilation", &p->rhs_dilation)))
        return s;
    int64_t fgc = p->feature_group_count, bgc = p->batch_group_count;
    if (fgc <= 0)
        return kiln__infer_error(cx, attrs,
                                 "feature_group_count is %lld; expected a positive "
                                 "value",
                                 (long long)fgc);
    if (bgc <= 0)
        return kiln__infer_error(cx, attrs, "batch_group_count is %lld; expected a positive value",
                                 (long long)bgc);
    if (fgc != 1 && bgc != 1)
        return kiln__infer_error(cx, attrs,
                                 "feature_group_count is %lld and batch_group_count is %lld; "
                                 "expected one of them to be 1",
                                 (long long)fgc, (long long)bgc);
    int64_t batch = lhs->shape.dims[p->input_batch_dimension];
    int64_t features = lhs->shape.dims[p->input_feature_dimension];
    int64_t k_in = rhs->shape.dims[p->kernel_input_feature_dimension];
    int64_t k_out = rhs->shape.dims[p->kernel_output_feature_dimension];
    s = check_multiple(cx, attrs, "input batch", batch, p->input_batch_dimension, 1,
                       "batch_group_count", bgc);
    if (s == KILN_OK)
        s = check_multiple(cx, attrs, "input feature", features, p->input_feature_dimension, 1,
                           "feature_group_count", fgc);
    if (s != KILN_OK) return s;
    if (k_in != features / fgc)
        return kiln__infer_error(cx, attrs,
                                 "the kernel input feature size %lld (dimension %lld of operand "
                                 "2) should be the input feature size %lld / "
                                 "feature_group_count %lld = %lld",
                                 (long long)k_in, (long long)p->kernel_input_feature_dimension,
                                 (long long)features, (long long)fgc, (long long)(features / fgc));
    s = check_multiple(cx, attrs, "kernel output feature", k_out,
                       p->kernel_output_feature_dimension, 2, "batch_group_count", bgc);
    if (s == KILN_OK)
        s = check_multiple(cx, attrs, "kernel output feature", k_out,
                           p->kernel_output_feature_dimension, 2, "feature_group_count", fgc);
    if (s != KILN_OK) return s;
    kiln_shape out = {.rank = N};
    out.dims[p->output_batch_dimension] = batch / bgc;
    out.dims[p->output_feature_dimension] = k_out;
    for (int32_t d = 0; d < S; d++) {
        int64_t in = lhs->shape.dims[p->input_spatial_dimensions.v[d]];
        int64_t win = rhs->shape.dims[p->kernel_spatial_dimensions.v[d]];
        int64_t din, dwin, padded;
        if (!dilated(in, p->lhs_dilation.v[d], &din) ||
            !dilated(win, p->rhs_dilation.v[d], &dwin) ||
            __builtin_add_overflow(din, p->padding_low.v[d], &padded) ||
            __builtin_add_overflow(padded, p->padding_high.v[d], &padded))
            return kiln__infer_error(cx, attrs,
                                     "spatial dimension %d overflows after dilation "
                                     "and padding",
                                     (int)d);
        if (padded < 0)
            return kiln__infer_error(cx, attrs,
                                     "spatial dimension %d has size %lld after lhs_dilation %lld "
                                     "and padding (%lld, %lld); expected a size >= 0",
                                     (int)d, (long long)padded, (long long)p->lhs_dilation.v[d],
                                     (long long)p->padding_low.v[d],
                                     (long long)p->padding_high.v[d]);
        out.dims[p->output_spatial_dimensions.v[d]] =
            padded == 0 || dwin > padded ? 0 : (padded - dwin) / p->window_strides.v[d] + 1;
    }
    results[0] = (kiln__type){.dtype = rd, .shape = out};
    return KILN_OK;
}

/* ---- fft ------------------------------------------------------------------------------ */

static const char *const fft_type_names[] = {"FFT", "IFFT", "RFFT", "IRFFT"};

/* The spec's constraints: 1 to 3 lengths, the operand's last dimensions those lengths (the
 * last one N/2 + 1 for IRFFT), complex operands but for RFFT's f32/f64, and the result type
 * that follows (C1-C5). */
KILN__INFER(FFT) {
    (void)n_operands, (void)n_results;
    const kiln__type *x = &operands[0];
    kiln_fft_type type = attrs->u.fft.type;
    const kiln_dims *len = &attrs->u.fft.length;
    if ((unsigned)type > KILN_FFT_INVERSE_REAL)
        return kiln__infer_error(cx, attrs, "fft_type %d is not FFT, IFFT, RFFT or IRFFT",
                                 (int)type);
    const char *name = fft_type_names[type];
    if (len->count < 1 || len->count > 3)
        return kiln__infer_error(cx, attrs, "fft_length has %d sizes; expected 1 to 3",
                                 (int)len->count);
    char have[KILN__TYPE_TEXT];
    if (x->shape.rank < len->count)
        return kiln__infer_error(cx, attrs, "operand 1 has type %s; %s of %d dimensions needs "
                                 "rank >= %d", kiln__type_text(x, have), name, (int)len->count,
                                 (int)len->count);
    for (int32_t i = 0; i < len->count; i++)
        if (len->v[i] < 1)
            return kiln__infer_error(cx, attrs, "fft_length[%d] is %lld; expected >= 1", (int)i,
                                     (long long)len->v[i]);
    bool real_in = type == KILN_FFT_REAL;
    if (real_in ? x->dtype != KILN_F32 && x->dtype != KILN_F64 : !kiln_dtype_is_complex(x->dtype))
        return kiln__infer_error(cx, attrs, "operand 1 has dtype %s; %s takes %s",
                                 kiln_dtype_name(x->dtype), name,
                                 real_in ? "f32 or f64" : "complex<f32> or complex<f64>");
    kiln__type r = *x;
    int32_t first = x->shape.rank - len->count;
    for (int32_t i = 0; i < len->count; i++) {
        int64_t want = len->v[i];
        bool last = i == len->count - 1;
        if (type == KILN_FFT_INVERSE_REAL && last) want = len->v[i] / 2 + 1;
        if (x->shape.dims[first + i] != want)
            return kiln__infer_error(cx, attrs,
                                     "operand 1 has type %s; %s with fft_length[%d] = %lld needs "
                                     "dimension %d of size %lld", kiln__type_text(x, have), name,
                                     (int)i, (long long)len->v[i], (int)(first + i),
                                     (long long)want);
    }
    if (type == KILN_FFT_REAL) {
        r.dtype = x->dtype == KILN_F32 ? KILN_C64 : KILN_C128;
        r.shape.dims[x->shape.rank - 1] = len->v[len->count - 1] / 2 + 1;
    } else if (type == KILN_FFT_INVERSE_REAL) {
        r.dtype = kiln_dtype_component(x->dtype);
        r.shape.dims[x->shape.rank - 1] = len->v[len->count - 1];
    }
    results[0] = r;
    return KILN_OK;
}

/* ---- triangular_solve, cholesky ---------------------------------------------------------- */

/* a is [..., M, M] of a floating-point or complex dtype (operand `index`); M in *m. */
static kiln_status square_matrices(kiln_ctx *cx, const kiln__attrs *attrs, const kiln__type *a,
                                   int index, int64_t *m) {
    char have[KILN__TYPE_TEXT];
    if (!kiln_dtype_is_float(a->dtype) && !kiln_dtype_is_complex(a->dtype))
        return kiln__infer_error(cx, attrs,
                                 "operand %d has dtype %s; expected a floating-point or complex "
                                 "dtype",
                                 index + 1, kiln_dtype_name(a->dtype));
    int32_t r = a->shape.rank;
    if (r < 2 || a->shape.dims[r - 1] != a->shape.dims[r - 2])
        return kiln__infer_error(cx, attrs,
                                 "operand %d has type %s; expected a batch of square matrices "
                                 "[..., M, M]",
                                 index + 1, kiln__type_text(a, have));
    *m = a->shape.dims[r - 1];
    return KILN_OK;
}

/* The spec's constraints (C1-C5): b of a's dtype and batch, its dimension of size M on the
 * side a is applied from; the result is b's type. */
KILN__INFER(TRIANGULAR_SOLVE) {
    (void)n_operands, (void)n_results;
    const kiln__type *a = &operands[0], *b = &operands[1];
    int64_t m = 0;
    kiln_status s = square_matrices(cx, attrs, a, 0, &m);
    if (s != KILN_OK) return s;
    kiln_solve_transpose t = attrs->u.triangular.transpose_a;
    if (t != KILN_TRANSPOSE_NONE && t != KILN_TRANSPOSE_T && t != KILN_TRANSPOSE_ADJOINT)
        return kiln__infer_error(cx, attrs,
                                 "transpose_a %d is not NO_TRANSPOSE, TRANSPOSE or ADJOINT",
                                 (int)t);
    char ha[KILN__TYPE_TEXT], hb[KILN__TYPE_TEXT];
    if (b->dtype != a->dtype)
        return kiln__infer_error(cx, attrs, "operand 2 has dtype %s; expected %s (operand 1's)",
                                 kiln_dtype_name(b->dtype), kiln_dtype_name(a->dtype));
    int32_t r = a->shape.rank;
    bool batch_ok = b->shape.rank == r;
    for (int32_t d = 0; batch_ok && d < r - 2; d++)
        batch_ok = b->shape.dims[d] == a->shape.dims[d];
    bool left = attrs->u.triangular.left_side;
    if (!batch_ok || b->shape.dims[r - (left ? 2 : 1)] != m)
        return kiln__infer_error(cx, attrs,
                                 "operand 2 has type %s; with operand 1 of type %s and "
                                 "left_side = %s it must be [..., %s]",
                                 kiln__type_text(b, hb), kiln__type_text(a, ha),
                                 left ? "true" : "false", left ? "M, N" : "N, M");
    results[0] = *b;
    return KILN_OK;
}

KILN__INFER(CHOLESKY) {
    (void)n_operands, (void)n_results;
    int64_t m = 0;
    kiln_status s = square_matrices(cx, attrs, &operands[0], 0, &m);
    if (s != KILN_OK) return s;
    results[0] = operands[0];
    return KILN_OK;
}
