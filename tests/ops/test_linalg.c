/* SPDX-License-Identifier: Apache-2.0 */
/* The contractions: dot_general, convolution, and numpy's matmul. Hand-checked values (the
 * StableHLO interpreter's conformance cases among them), every dtype (i1 as and/or,
 * wrapping integers, f16/bf16 accumulated in f32 and rounded once, conversion of the
 * operands to the result dtype), empty and rank-0 tensors, error paths, and random shapes
 * against naive references written from the spec's formulas (exact for small integers,
 * within a tolerance for f32 through BLAS). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "backends/cpu/engine/cpu_backend.h"
#include "backends/cpu/eval/eval.h"
#include "backends/cpu/eval/eval_linalg.h"
#include "core/element.h"
#include "failing_allocator.h"
#include "op_cases.h"
#include "test_util.h"

const kiln_op_coverage kiln_cover_linalg[] = {
    {KILN_OP_DOT_GENERAL, "linalg/dot_general_conformance"},
    {KILN_OP_CONVOLUTION, "linalg/convolution_conformance"},
    {KILN_OP_FFT, "fft/one_dimension_matches_the_direct_sum_for_every_method"},
    {KILN_OP_TRIANGULAR_SOLVE, "triangular/solve_every_form_and_multiply_back"},
    {KILN_OP_CHOLESKY, "triangular/cholesky_factors_multiply_back"},
    {KILN_OP_COUNT, NULL},
};

/* ---- helpers ------------------------------------------------------------------------- */

static int64_t numel_of(kiln_shape s) {
    int64_t n = 1;
    for (int32_t d = 0; d < s.rank; d++)
        n *= s.dims[d];
    return n;
}

/* A tensor of dtype dt holding v[0..numel-1] (v may be NULL when empty). */
static kiln_tensor *make(kiln_ctx *cx, kiln_dtype dt, kiln_shape shape, const double *v) {
    int64_t n = numel_of(shape);
    size_t es = kiln_dtype_size(dt);
    unsigned char *buf = malloc((size_t)n * es + 8);
    cr_assert_not_null(buf);
    for (int64_t i = 0; i < n; i++)
        kiln__element_store(buf, dt, i, v[i]);
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, shape, buf, (size_t)n * es);
    free(buf);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}
#define TENSOR(cx, dt, shape, ...) make(cx, dt, shape, (const double[]){__VA_ARGS__})

static void expect_shape(const kiln_tensor *t, kiln_shape want) {
    const kiln_shape *s = kiln_tensor_shape(t);
    char a[256], b[256];
    kiln_shape_format(s, a, sizeof a);
    kiln_shape_format(&want, b, sizeof b);
    cr_assert(kiln_shape_equal(s, &want), "shape %s, expected %s", a, b);
}

/* Asserts t has dtype dt, the shape, and exactly the values. */
static void expect_values(kiln_ctx *cx, const kiln_tensor *t, kiln_dtype dt, kiln_shape shape,
                          const double *want) {
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_dtype(t), dt, "dtype %s, expected %s",
                 kiln_dtype_name(kiln_tensor_dtype(t)), kiln_dtype_name(dt));
    expect_shape(t, shape);
    int64_t n = numel_of(shape);
    for (int64_t i = 0; i < n; i++) {
        double got = kiln_tensor_item(cx, t, i);
        cr_assert(got == want[i] || (isnan(got) && isnan(want[i])),
                  "%s: element %lld is %g, expected %g", kiln_dtype_name(dt), (long long)i, got,
                  want[i]);
    }
    expect_ok(cx);
}
#define EXPECT(cx, t, dt, shape, ...) expect_values(cx, t, dt, shape, (const double[]){__VA_ARGS__})

static kiln_dot_params dot_params(kiln_dims lb, kiln_dims rb, kiln_dims lc, kiln_dims rc) {
    return (kiln_dot_params){.lhs_batching_dims = lb,
                             .rhs_batching_dims = rb,
                             .lhs_contracting_dims = lc,
                             .rhs_contracting_dims = rc};
}

/* A deterministic generator (xorshift64*). */
static uint64_t rng_state;
static uint64_t rnd(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}
static int64_t rnd_int(int64_t lo, int64_t hi) { /* inclusive */
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}
static double rnd_unit(void) { return (double)(rnd() >> 11) / 9007199254740992.0 * 2 - 1; }

static void shuffle(int64_t *v, int32_t n) {
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t j = (int32_t)rnd_int(0, i);
        int64_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* Row-major strides. */
static void strides_of(kiln_shape s, int64_t *st) {
    int64_t acc = 1;
    for (int32_t d = s.rank - 1; d >= 0; d--) {
        st[d] = acc;
        acc *= s.dims[d];
    }
}

/* What a result element should be for dtype dt, from the exact sum of products of small
 * integers (i1: or of ands, that is sum != 0; integers wrap). */
static double as_dtype(kiln_dtype dt, double sum) {
    switch (dt) {
    case KILN_BOOL: return sum != 0;
    case KILN_I8: return (double)(int8_t)(uint8_t)((uint64_t)(int64_t)sum & 0xff);
    case KILN_U8: return (double)(uint8_t)((uint64_t)(int64_t)sum & 0xff);
    case KILN_I16: return (double)(int16_t)(uint16_t)((uint64_t)(int64_t)sum & 0xffff);
    case KILN_U16: return (double)(uint16_t)((uint64_t)(int64_t)sum & 0xffff);
    case KILN_U32: return (double)(uint32_t)((uint64_t)(int64_t)sum & 0xffffffffu);
    case KILN_U64: return sum < 0 ? sum + 18446744073709551616.0 : sum;
    case KILN_F16: return kiln_f16_to_f32(kiln__f64_to_f16(sum)); /* rounded once */
    case KILN_BF16: return kiln_bf16_to_f32(kiln__f64_to_bf16(sum));
    default: return sum;
    }
}

/* ---- reference dot_general (the spec's formula, in double) ---------------------------- */

static kiln_shape ref_dot(const double *l, kiln_shape ls, const double *r, kiln_shape rs,
                          const kiln_dot_params *p, double *out) {
    int32_t lf[KILN_MAX_RANK], rf[KILN_MAX_RANK], nlf = 0, nrf = 0;
    bool lu[KILN_MAX_RANK] = {false}, ru[KILN_MAX_RANK] = {false};
    int32_t nb = p->lhs_batching_dims.count, nc = p->lhs_contracting_dims.count;
    for (int32_t i = 0; i < nb; i++)
        lu[p->lhs_batching_dims.v[i]] = ru[p->rhs_batching_dims.v[i]] = true;
    for (int32_t i = 0; i < nc; i++)
        lu[p->lhs_contracting_dims.v[i]] = ru[p->rhs_contracting_dims.v[i]] = true;
    for (int32_t d = 0; d < ls.rank; d++)
        if (!lu[d]) lf[nlf++] = d;
    for (int32_t d = 0; d < rs.rank; d++)
        if (!ru[d]) rf[nrf++] = d;
    kiln_shape os = {.rank = nb + nlf + nrf};
    for (int32_t i = 0; i < nb; i++)
        os.dims[i] = ls.dims[p->lhs_batching_dims.v[i]];
    for (int32_t i = 0; i < nlf; i++)
        os.dims[nb + i] = ls.dims[lf[i]];
    for (int32_t i = 0; i < nrf; i++)
        os.dims[nb + nlf + i] = rs.dims[rf[i]];
    int64_t lst[KILN_MAX_RANK], rst[KILN_MAX_RANK], csz[KILN_MAX_RANK], K = 1;
    strides_of(ls, lst);
    strides_of(rs, rst);
    for (int32_t i = 0; i < nc; i++)
        K *= csz[i] = ls.dims[p->lhs_contracting_dims.v[i]];
    int64_t n = numel_of(os);
    for (int64_t o = 0; o < n; o++) {
        int64_t idx[KILN_MAX_RANK], rem = o;
        for (int32_t d = os.rank - 1; d >= 0; d--) {
            idx[d] = rem % os.dims[d];
            rem /= os.dims[d];
        }
        int64_t lo = 0, ro = 0;
        for (int32_t i = 0; i < nb; i++) {
            lo += idx[i] * lst[p->lhs_batching_dims.v[i]];
            ro += idx[i] * rst[p->rhs_batching_dims.v[i]];
        }
        for (int32_t i = 0; i < nlf; i++)
            lo += idx[nb + i] * lst[lf[i]];
        for (int32_t i = 0; i < nrf; i++)
            ro += idx[nb + nlf + i] * rst[rf[i]];
        double sum = 0;
        for (int64_t k = 0; k < K; k++) {
            int64_t krem = k, lk = lo, rk = ro;
            for (int32_t i = nc - 1; i >= 0; i--) {
                int64_t c = krem % csz[i];
                krem /= csz[i];
                lk += c * lst[p->lhs_contracting_dims.v[i]];
                rk += c * rst[p->rhs_contracting_dims.v[i]];
            }
            sum += l[lk] * r[rk];
        }
        out[o] = sum;
    }
    return os;
}

/* ---- reference convolution (the spec's formula, in double) ---------------------------- */

static void default_list(kiln_dims *d, int32_t n, int64_t v) {
    if (d->count) return;
    d->count = n;
    for (int32_t i = 0; i < n; i++)
        d->v[i] = v;
}

static kiln_shape ref_conv(const double *l, kiln_shape ls, const double *r, kiln_shape rs,
                           const kiln_conv_params *params, double *out) {
    int32_t S = ls.rank - 2;
    /* The documented defaults. */
    kiln_conv_params q = *params, *p = &q;
    default_list(&q.window_strides, S, 1);
    default_list(&q.lhs_dilation, S, 1);
    default_list(&q.rhs_dilation, S, 1);
    default_list(&q.padding_low, S, 0);
    default_list(&q.padding_high, S, 0);
    if (!q.feature_group_count) q.feature_group_count = 1;
    if (!q.batch_group_count) q.batch_group_count = 1;
    int64_t fgc = p->feature_group_count, bgc = p->batch_group_count;
    int64_t O = rs.dims[p->kernel_output_feature_dimension];
    int64_t I = rs.dims[p->kernel_input_feature_dimension];
    int64_t Nout = ls.dims[p->input_batch_dimension] / bgc;
    kiln_shape os = {.rank = ls.rank};
    os.dims[p->output_batch_dimension] = Nout;
    os.dims[p->output_feature_dimension] = O;
    for (int32_t d = 0; d < S; d++) {
        int64_t in = ls.dims[p->input_spatial_dimensions.v[d]];
        int64_t k = rs.dims[p->kernel_spatial_dimensions.v[d]];
        int64_t din = in == 0 ? 0 : (in - 1) * p->lhs_dilation.v[d] + 1;
        int64_t dk = k == 0 ? 0 : (k - 1) * p->rhs_dilation.v[d] + 1;
        int64_t padded = p->padding_low.v[d] + din + p->padding_high.v[d];
        os.dims[p->output_spatial_dimensions.v[d]] =
            padded <= 0 || dk > padded ? 0 : (padded - dk) / p->window_strides.v[d] + 1;
    }
    int64_t lst[KILN_MAX_RANK], rst[KILN_MAX_RANK], ost[KILN_MAX_RANK];
    strides_of(ls, lst);
    strides_of(rs, rst);
    strides_of(os, ost);
    int64_t GG = fgc * bgc, Og = O / GG, KS = 1;
    for (int32_t d = 0; d < S; d++)
        KS *= rs.dims[p->kernel_spatial_dimensions.v[d]];
    int64_t n = numel_of(os);
    for (int64_t o = 0; o < n; o++) {
        int64_t idx[KILN_MAX_RANK], rem = o;
        for (int32_t d = os.rank - 1; d >= 0; d--) {
            idx[d] = rem % os.dims[d];
            rem /= os.dims[d];
        }
        int64_t ob = idx[p->output_batch_dimension], of = idx[p->output_feature_dimension];
        int64_t g = of / Og;
        int64_t ib = bgc > 1 ? g * Nout + ob : ob, foff = fgc > 1 ? g * I : 0;
        double sum = 0;
        for (int64_t i = 0; i < I; i++) {
            for (int64_t kp = 0; kp < KS; kp++) {
                int64_t krem = kp, li = ib * lst[p->input_batch_dimension] +
                                        (foff + i) * lst[p->input_feature_dimension];
                int64_t ri = of * rst[p->kernel_output_feature_dimension] +
                             i * rst[p->kernel_input_feature_dimension];
                bool valid = true;
                for (int32_t d = S - 1; d >= 0; d--) {
                    int64_t kd = p->kernel_spatial_dimensions.v[d];
                    int64_t kx = krem % rs.dims[kd];
                    krem /= rs.dims[kd];
                    ri += kx * rst[kd];
                    int64_t x = idx[p->output_spatial_dimensions.v[d]] * p->window_strides.v[d] +
                                kx * p->rhs_dilation.v[d] - p->padding_low.v[d];
                    int64_t id = p->input_spatial_dimensions.v[d];
                    if (x < 0 || x % p->lhs_dilation.v[d] ||
                        x / p->lhs_dilation.v[d] >= ls.dims[id])
                        valid = false;
                    else
                        li += x / p->lhs_dilation.v[d] * lst[id];
                }
                if (valid) sum += l[li] * r[ri];
            }
        }
        out[o] = sum;
    }
    return os;
}

/* ---- dot_general: hand-checked values ----------------------------------------------- */

Test(linalg, dot_general_conformance) {
    kiln_ctx *cx = test_ctx();
    /* dot_general_op_test_si64: batched matmul by the identity. */
    kiln_tensor *l = TENSOR(cx, KILN_I64, KILN_SHAPE(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
    kiln_tensor *r = TENSOR(cx, KILN_I64, KILN_SHAPE(2, 2, 2), 1, 0, 0, 1, 1, 0, 0, 1);
    kiln_dot_params p = dot_params(KILN_DIMS(0), KILN_DIMS(0), KILN_DIMS(2), KILN_DIMS(1));
    EXPECT(cx, kiln_dot_general(cx, l, r, &p, KILN_DTYPE_COUNT), KILN_I64, KILN_SHAPE(2, 2, 2), 1,
           2, 3, 4, 5, 6, 7, 8);
    /* dot_general_op_test_empty_dims: no batching or contracting dims is an outer product. */
    l = TENSOR(cx, KILN_I64, KILN_SHAPE(2, 2), 1, 2, 3, 4);
    r = TENSOR(cx, KILN_I64, KILN_SHAPE(2, 2), 1, 0, 0, 1);
    kiln_dot_params none = {0};
    EXPECT(cx, kiln_dot_general(cx, l, r, &none, KILN_DTYPE_COUNT), KILN_I64,
           KILN_SHAPE(2, 2, 2, 2), 1, 0, 0, 1, 2, 0, 0, 2, 3, 0, 0, 3, 4, 0, 0, 4);
    /* dot_general_op_test_different_operand_and_result_element_types: f32 -> f64. */
    l = TENSOR(cx, KILN_F32, KILN_SHAPE(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
    r = TENSOR(cx, KILN_F32, KILN_SHAPE(2, 2, 2), 1, 0, 0, 1, 1, 0, 0, 1);
    EXPECT(cx, kiln_dot_general(cx, l, r, &p, KILN_F64), KILN_F64, KILN_SHAPE(2, 2, 2), 1, 2, 3, 4,
           5, 6, 7, 8);
    /* The f8 cases, in f16: [0,1,2,3] . [0,1,2,3] = 14. */
    l = TENSOR(cx, KILN_F16, KILN_SHAPE(4), 0, 1, 2, 3);
    kiln_dot_params vec = dot_params(KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(0), KILN_DIMS(0));
    EXPECT(cx, kiln_dot_general(cx, l, l, &vec, KILN_DTYPE_COUNT), KILN_F16, KILN_SHAPE_SCALAR, 14);
    l = TENSOR(cx, KILN_BF16, KILN_SHAPE(8), 0, 1, 2, 3, 4, 5, 6, 7);
    EXPECT(cx, kiln_dot_general(cx, l, l, &vec, KILN_DTYPE_COUNT), KILN_BF16, KILN_SHAPE_SCALAR,
           140);
    /* i8 x i8 -> i32: converted first, so no wrapping at 8 bits. */
    l = TENSOR(cx, KILN_I8, KILN_SHAPE(2), 100, -128);
    r = TENSOR(cx, KILN_I8, KILN_SHAPE(2), 100, -128);
    EXPECT(cx, kiln_dot_general(cx, l, r, &vec, KILN_I32), KILN_I32, KILN_SHAPE_SCALAR, 26384);
    kiln_ctx_release(cx);
}

Test(linalg, dot_general_matmul_every_dtype) {
    kiln_ctx *cx = test_ctx();
    kiln_dot_params mm = dot_params(KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(1), KILN_DIMS(0));
    for (int d = 0; d < KILN_DTYPE_COUNT; d++) {
        kiln_dtype dt = (kiln_dtype)d;
        if (kiln_dtype_is_narrow(dt)) continue; /* values past their range: test_narrow.c */
        if (dt == KILN_BOOL) {
            /* i1: multiply is AND, add is OR. */
            kiln_tensor *l = TENSOR(cx, dt, KILN_SHAPE(2, 3), 1, 0, 1, 0, 1, 0);
            kiln_tensor *r = TENSOR(cx, dt, KILN_SHAPE(3, 2), 1, 0, 0, 1, 1, 1);
            EXPECT(cx, kiln_dot_general(cx, l, r, &mm, KILN_DTYPE_COUNT), dt, KILN_SHAPE(2, 2), 1,
                   1, 0, 1);
            continue;
        }
        kiln_tensor *l = TENSOR(cx, dt, KILN_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
        kiln_tensor *r = TENSOR(cx, dt, KILN_SHAPE(3, 2), 1, 0, 0, 1, 1, 1);
        EXPECT(cx, kiln_dot_general(cx, l, r, &mm, KILN_DTYPE_COUNT), dt, KILN_SHAPE(2, 2), 4, 5,
               10, 11);
        /* Transposed operands: contract lhs dim 0 with rhs dim 1. */
        kiln_dot_params tt = dot_params(KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(0), KILN_DIMS(1));
        kiln_tensor *lt = TENSOR(cx, dt, KILN_SHAPE(3, 2), 1, 4, 2, 5, 3, 6);
        kiln_tensor *rt = TENSOR(cx, dt, KILN_SHAPE(2, 3), 1, 0, 1, 0, 1, 1);
        EXPECT(cx, kiln_dot_general(cx, lt, rt, &tt, KILN_DTYPE_COUNT), dt, KILN_SHAPE(2, 2), 4, 5,
               10, 11);
    }
    kiln_ctx_release(cx);
}

Test(linalg, dot_general_integers_wrap) {
    kiln_ctx *cx = test_ctx();
    kiln_dot_params vec = dot_params(KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(0), KILN_DIMS(0));
    kiln_tensor *l = TENSOR(cx, KILN_I8, KILN_SHAPE(2), 100, -128);
    EXPECT(cx, kiln_dot_general(cx, l, l, &vec, KILN_DTYPE_COUNT), KILN_I8, KILN_SHAPE_SCALAR,
           16); /* 10000 + 16384 = 26384 = 103 * 256 + 16 */
    l = TENSOR(cx, KILN_U8, KILN_SHAPE(2), 200, 255);
    kiln_tensor *r = TENSOR(cx, KILN_U8, KILN_SHAPE(2), 2, 255);
    EXPECT(cx, kiln_dot_general(cx, l, r, &vec, KILN_DTYPE_COUNT), KILN_U8, KILN_SHAPE_SCALAR,
           (400 + 65025) % 256);
    l = TENSOR(cx, KILN_U16, KILN_SHAPE(1), 65535);
    EXPECT(cx, kiln_dot_general(cx, l, l, &vec, KILN_DTYPE_COUNT), KILN_U16, KILN_SHAPE_SCALAR, 1);
    l = TENSOR(cx, KILN_I16, KILN_SHAPE(2), -32768, 300);
    EXPECT(cx, kiln_dot_general(cx, l, l, &vec, KILN_DTYPE_COUNT), KILN_I16, KILN_SHAPE_SCALAR,
           90000 - 65536);
    l = TENSOR(cx, KILN_I32, KILN_SHAPE(2), 65536, -2147483648.0);
    EXPECT(cx, kiln_dot_general(cx, l, l, &vec, KILN_DTYPE_COUNT), KILN_I32, KILN_SHAPE_SCALAR, 0);
    l = TENSOR(cx, KILN_U32, KILN_SHAPE(1), 4294967295.0);
    EXPECT(cx, kiln_dot_general(cx, l, l, &vec, KILN_DTYPE_COUNT), KILN_U32, KILN_SHAPE_SCALAR, 1);
    /* 64-bit: INT64_MIN * -1 = INT64_MIN, INT64_MAX * 2 + 3 wraps to 1. */
    int64_t a[3] = {INT64_MIN, INT64_MAX, 3}, b[3] = {-1, 2, 1}, got;
    l = kiln_tensor_from_host(cx, KILN_I64, KILN_SHAPE(3), a, sizeof a);
    r = kiln_tensor_from_host(cx, KILN_I64, KILN_SHAPE(3), b, sizeof b);
    kiln_tensor_to_host(cx, kiln_dot_general(cx, l, r, &vec, KILN_DTYPE_COUNT), &got, sizeof got);
    expect_ok(cx);
    cr_assert_eq(got, INT64_MIN + 1);
    uint64_t ua[2] = {UINT64_MAX, 1ULL << 63}, ub[2] = {3, 2}, ugot;
    l = kiln_tensor_from_host(cx, KILN_U64, KILN_SHAPE(2), ua, sizeof ua);
    r = kiln_tensor_from_host(cx, KILN_U64, KILN_SHAPE(2), ub, sizeof ub);
    kiln_tensor_to_host(cx, kiln_dot_general(cx, l, r, &vec, KILN_DTYPE_COUNT), &ugot, sizeof ugot);
    expect_ok(cx);
    cr_assert_eq(ugot, UINT64_MAX - 2);
    kiln_ctx_release(cx);
}

Test(linalg, dot_general_half_accumulates_in_f32_and_rounds_once) {
    kiln_ctx *cx = test_ctx();
    kiln_dot_params vec = dot_params(KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(0), KILN_DIMS(0));
    /* In f16, 2048 + 1 rounds back to 2048; in f32 the sum is 2050, which f16 holds. */
    kiln_tensor *l = TENSOR(cx, KILN_F16, KILN_SHAPE(3), 2048, 1, 1);
    kiln_tensor *r = TENSOR(cx, KILN_F16, KILN_SHAPE(3), 1, 1, 1);
    EXPECT(cx, kiln_dot_general(cx, l, r, &vec, KILN_DTYPE_COUNT), KILN_F16, KILN_SHAPE_SCALAR,
           2050);
    l = TENSOR(cx, KILN_BF16, KILN_SHAPE(3), 256, 1, 1);
    r = TENSOR(cx, KILN_BF16, KILN_SHAPE(3), 1, 1, 1);
    EXPECT(cx, kiln_dot_general(cx, l, r, &vec, KILN_DTYPE_COUNT), KILN_BF16, KILN_SHAPE_SCALAR,
           258);
    /* f32 operands converted to f16 first: 1 + 2^-12 becomes 1, so the result is 1 (an f32
     * product rounded at the end would give 1 + 2^-10). */
    l = TENSOR(cx, KILN_F32, KILN_SHAPE(2), 1 + ldexp(1, -12), 1 + ldexp(1, -12));
    r = TENSOR(cx, KILN_F32, KILN_SHAPE(2), 1, 0);
    EXPECT(cx, kiln_dot_general(cx, l, r, &vec, KILN_F16), KILN_F16, KILN_SHAPE_SCALAR, 1);
    l = TENSOR(cx, KILN_F64, KILN_SHAPE(2), 1.5, 2);
    r = TENSOR(cx, KILN_F64, KILN_SHAPE(2), 3, 0.25);
    EXPECT(cx, kiln_dot_general(cx, l, r, &vec, KILN_BF16), KILN_BF16, KILN_SHAPE_SCALAR, 5);
    /* f16 -> f32 result. */
    l = TENSOR(cx, KILN_F16, KILN_SHAPE(2), 65504, 65504);
    EXPECT(cx, kiln_dot_general(cx, l, l, &vec, KILN_F32), KILN_F32, KILN_SHAPE_SCALAR,
           (double)(float)(2.0 * 65504.0 * 65504.0));
    /* NaN and infinities propagate. */
    l = TENSOR(cx, KILN_F32, KILN_SHAPE(2), INFINITY, 1);
    r = TENSOR(cx, KILN_F32, KILN_SHAPE(2), 0, 1);
    EXPECT(cx, kiln_dot_general(cx, l, r, &vec, KILN_DTYPE_COUNT), KILN_F32, KILN_SHAPE_SCALAR,
           NAN);
    kiln_ctx_release(cx);
}

Test(linalg, dot_general_converts_operands_to_the_result_dtype) {
    kiln_ctx *cx = test_ctx();
    kiln_dot_params vec = dot_params(KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(0), KILN_DIMS(0));
    kiln_tensor *ones = TENSOR(cx, KILN_F32, KILN_SHAPE(3), 1, 1, 1);
    /* float -> int truncates, saturates, and maps NaN to 0. */
    kiln_tensor *l = TENSOR(cx, KILN_F32, KILN_SHAPE(3), 2.7, -1.5, NAN);
    EXPECT(cx, kiln_dot_general(cx, l, ones, &vec, KILN_I32), KILN_I32, KILN_SHAPE_SCALAR, 1);
    l = TENSOR(cx, KILN_F32, KILN_SHAPE(3), 1e10, 0, 0);
    EXPECT(cx, kiln_dot_general(cx, l, ones, &vec, KILN_I32), KILN_I32, KILN_SHAPE_SCALAR,
           2147483647);
    l = TENSOR(cx, KILN_F32, KILN_SHAPE(3), 300, -5, 0);
    EXPECT(cx, kiln_dot_general(cx, l, ones, &vec, KILN_U8), KILN_U8, KILN_SHAPE_SCALAR, 255);
    l = TENSOR(cx, KILN_F64, KILN_SHAPE(3), -1e300, 0, 0);
    kiln_tensor *ones64 = TENSOR(cx, KILN_F64, KILN_SHAPE(3), 1, 1, 1);
    int64_t got;
    kiln_tensor_to_host(cx, kiln_dot_general(cx, l, ones64, &vec, KILN_I64), &got, sizeof got);
    expect_ok(cx);
    cr_assert_eq(got, INT64_MIN);
    /* int -> bool is != 0; float -> bool too. */
    l = TENSOR(cx, KILN_I32, KILN_SHAPE(2), 0, 7);
    kiln_tensor *r = TENSOR(cx, KILN_I32, KILN_SHAPE(2), 5, 3);
    EXPECT(cx, kiln_dot_general(cx, l, r, &vec, KILN_BOOL), KILN_BOOL, KILN_SHAPE_SCALAR, 1);
    l = TENSOR(cx, KILN_F32, KILN_SHAPE(2), 0.5, 0);
    r = TENSOR(cx, KILN_F32, KILN_SHAPE(2), 0, -0.0);
    EXPECT(cx, kiln_dot_general(cx, l, r, &vec, KILN_BOOL), KILN_BOOL, KILN_SHAPE_SCALAR, 0);
    /* int -> int wraps: i32 300 to i8 is 44; u8 255 to i16 is 255. */
    l = TENSOR(cx, KILN_I32, KILN_SHAPE(1), 300);
    r = TENSOR(cx, KILN_I32, KILN_SHAPE(1), 1);
    EXPECT(cx, kiln_dot_general(cx, l, r, &vec, KILN_I8), KILN_I8, KILN_SHAPE_SCALAR, 44);
    l = TENSOR(cx, KILN_U8, KILN_SHAPE(1), 255);
    EXPECT(cx, kiln_dot_general(cx, l, l, &vec, KILN_I16), KILN_I16, KILN_SHAPE_SCALAR,
           65025 - 65536);
    /* bool -> f32, mixed operand dtypes with a result dtype. */
    l = TENSOR(cx, KILN_BOOL, KILN_SHAPE(3), 1, 0, 1);
    r = TENSOR(cx, KILN_I8, KILN_SHAPE(3), -3, 100, 5);
    EXPECT(cx, kiln_dot_general(cx, l, r, &vec, KILN_F32), KILN_F32, KILN_SHAPE_SCALAR, 2);
    /* i64 -> f32 rounds the operand: 2^24 + 1 becomes 2^24. */
    l = TENSOR(cx, KILN_I64, KILN_SHAPE(2), 16777217, 1);
    r = TENSOR(cx, KILN_I64, KILN_SHAPE(2), 1, 0);
    EXPECT(cx, kiln_dot_general(cx, l, r, &vec, KILN_F32), KILN_F32, KILN_SHAPE_SCALAR, 16777216);
    kiln_ctx_release(cx);
}

Test(linalg, dot_general_empty_and_rank_0) {
    kiln_ctx *cx = test_ctx();
    kiln_dot_params mm = dot_params(KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(1), KILN_DIMS(0));
    for (int d = 0; d < KILN_DTYPE_COUNT; d++) {
        kiln_dtype dt = (kiln_dtype)d;
        if (kiln_dtype_is_narrow(dt)) continue; /* values past their range: test_narrow.c */
        /* K = 0: a sum over nothing is 0. */
        kiln_tensor *l = make(cx, dt, KILN_SHAPE(2, 0), NULL);
        kiln_tensor *r = make(cx, dt, KILN_SHAPE(0, 3), NULL);
        EXPECT(cx, kiln_dot_general(cx, l, r, &mm, KILN_DTYPE_COUNT), dt, KILN_SHAPE(2, 3), 0, 0, 0,
               0, 0, 0);
        /* M = 0. */
        l = make(cx, dt, KILN_SHAPE(0, 3), NULL);
        r = TENSOR(cx, dt, KILN_SHAPE(3, 2), 1, 0, 0, 1, 1, 1);
        kiln_tensor *e = kiln_dot_general(cx, l, r, &mm, KILN_DTYPE_COUNT);
        expect_ok(cx);
        expect_shape(e, KILN_SHAPE(0, 2));
    }
    /* Rank 0: scalar x scalar is the product; scalar x vector scales it. */
    kiln_dot_params none = {0};
    kiln_tensor *s = TENSOR(cx, KILN_I32, KILN_SHAPE_SCALAR, -3);
    kiln_tensor *v = TENSOR(cx, KILN_I32, KILN_SHAPE(3), 1, 2, 3);
    EXPECT(cx, kiln_dot_general(cx, s, s, &none, KILN_DTYPE_COUNT), KILN_I32, KILN_SHAPE_SCALAR, 9);
    EXPECT(cx, kiln_dot_general(cx, s, v, &none, KILN_DTYPE_COUNT), KILN_I32, KILN_SHAPE(3), -3, -6,
           -9);
    EXPECT(cx, kiln_dot_general(cx, v, s, &none, KILN_F64), KILN_F64, KILN_SHAPE(3), -3, -6, -9);
    /* Batch only (elementwise product). */
    kiln_dot_params b = dot_params(KILN_DIMS(0), KILN_DIMS(0), KILN_DIMS_NONE, KILN_DIMS_NONE);
    EXPECT(cx, kiln_dot_general(cx, v, v, &b, KILN_DTYPE_COUNT), KILN_I32, KILN_SHAPE(3), 1, 4, 9);
    kiln_ctx_release(cx);
}

Test(linalg, dot_general_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *a = TENSOR(cx, KILN_F32, KILN_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    kiln_tensor *b = TENSOR(cx, KILN_F32, KILN_SHAPE(4, 2), 1, 2, 3, 4, 5, 6, 7, 8);
    kiln_tensor *c = TENSOR(cx, KILN_I32, KILN_SHAPE(3, 2), 1, 2, 3, 4, 5, 6);
    kiln_dot_params p = dot_params(KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(1), KILN_DIMS(0));
    cr_assert_null(kiln_dot_general(cx, a, b, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_dot_general: contracting dimension 1 of lhs has size 3 but contracting "
                 "dimension 0 of rhs has size 4");
    p = dot_params(KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS(1), KILN_DIMS(0));
    cr_assert_null(kiln_dot_general(cx, a, c, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "operands have dtypes f32 and i32");
    /* With a result dtype, both are converted: sum_k a[b, k] * c[k, b]. */
    EXPECT(cx, kiln_dot_general(cx, a, c, &p, KILN_F32), KILN_F32, KILN_SHAPE(2), 22, 64);
    kiln_ctx_release(cx);
}

Test(linalg, dot_general_attribute_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *a = TENSOR(cx, KILN_F32, KILN_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    kiln_tensor *b = TENSOR(cx, KILN_F32, KILN_SHAPE(3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9);
    kiln_dot_params p;
    p = dot_params(KILN_DIMS(0), KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS(1));
    cr_assert_null(kiln_dot_general(cx, a, b, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_dot_general: batching dimension 0 of lhs has size 2 but batching "
                 "dimension 0 of rhs has size 3");
    p = dot_params(KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(2), KILN_DIMS(0));
    cr_assert_null(kiln_dot_general(cx, a, b, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "lhs_contracting_dims[0] is 2; expected 0 to 1");
    p = dot_params(KILN_DIMS(-1), KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS(1));
    cr_assert_null(kiln_dot_general(cx, a, b, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "lhs_batching_dims[0] is -1");
    p = dot_params(KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(1, 1), KILN_DIMS(0, 1));
    cr_assert_null(kiln_dot_general(cx, a, b, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "lhs_contracting_dims repeats dimension 1");
    p = dot_params(KILN_DIMS(0), KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS(0));
    cr_assert_null(kiln_dot_general(cx, a, b, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "dimension 0 of rhs is both a batching and a contracting dimension");
    p = dot_params(KILN_DIMS(0), KILN_DIMS_NONE, KILN_DIMS(1), KILN_DIMS(0));
    cr_assert_null(kiln_dot_general(cx, a, b, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "lhs has 1 batching dimensions and rhs has 0; expected as many");
    p = dot_params(KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(1), KILN_DIMS_NONE);
    cr_assert_null(kiln_dot_general(cx, a, b, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "lhs has 1 contracting dimensions and rhs has 0");
    p = dot_params(KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(1), KILN_DIMS(0));
    cr_assert_null(kiln_dot_general(cx, a, b, &p, (kiln_dtype)99));
    expect_error(cx, KILN_INVALID_ARGUMENT, "result dtype 99 is not a valid dtype");
    cr_assert_null(kiln_dot_general(cx, a, b, NULL, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_dot_general: params is NULL");
    cr_assert_null(kiln_dot_general(cx, NULL, b, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_dot_general: operand 1 is NULL");
    /* A NULL operand from an earlier failure keeps the first error. */
    kiln_ctx_set_error(cx, KILN_INTERNAL, "first");
    cr_assert_null(kiln_dot_general(cx, a, NULL, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INTERNAL, "first");
    /* Result rank beyond KILN_MAX_RANK. */
    kiln_shape big = {.rank = 9};
    for (int32_t d = 0; d < 9; d++)
        big.dims[d] = 1;
    kiln_tensor *x = kiln_ones(cx, KILN_F32, big);
    kiln_dot_params none = {0};
    cr_assert_null(kiln_dot_general(cx, x, x, &none, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "the result would have rank 18");
    cr_assert_null(kiln_dot_general(NULL, a, b, &p, KILN_DTYPE_COUNT));
    kiln_ctx_release(cx);
}

/* ---- dot_general against the reference ------------------------------------------------ */

/* A random dot_general problem: dims of each role placed at random positions. */
typedef struct dot_case {
    kiln_shape ls, rs;
    kiln_dot_params p;
} dot_case;

static dot_case random_dot_case(void) {
    dot_case c;
    int32_t nb = (int32_t)rnd_int(0, 2), nc = (int32_t)rnd_int(0, 2);
    int32_t nlf = (int32_t)rnd_int(0, 2), nrf = (int32_t)rnd_int(0, 2);
    int64_t bsz[4], csz[4];
    for (int32_t i = 0; i < nb; i++)
        bsz[i] = rnd_int(1, 3);
    for (int32_t i = 0; i < nc; i++)
        csz[i] = rnd_int(1, 3);
    for (int side = 0; side < 2; side++) {
        int32_t nf = side ? nrf : nlf, rank = nb + nc + nf;
        int64_t pos[KILN_MAX_RANK];
        for (int32_t i = 0; i < rank; i++)
            pos[i] = i;
        shuffle(pos, rank);
        kiln_shape s = {.rank = rank};
        kiln_dims b = {.count = nb}, k = {.count = nc};
        for (int32_t i = 0; i < nb; i++) {
            b.v[i] = pos[i];
            s.dims[pos[i]] = bsz[i];
        }
        for (int32_t i = 0; i < nc; i++) {
            k.v[i] = pos[nb + i];
            s.dims[pos[nb + i]] = csz[i];
        }
        for (int32_t i = 0; i < nf; i++)
            s.dims[pos[nb + nc + i]] = rnd_int(1, 4);
        if (side) {
            c.rs = s;
            c.p.rhs_batching_dims = b;
            c.p.rhs_contracting_dims = k;
        } else {
            c.ls = s;
            c.p.lhs_batching_dims = b;
            c.p.lhs_contracting_dims = k;
        }
    }
    return c;
}

static void check_against_reference(kiln_ctx *cx, kiln_tensor *got, kiln_dtype dt,
                                    kiln_shape want_shape, const double *want, int trial) {
    cr_assert_not_null(got, "trial %d: %s", trial, kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_dtype(got), dt);
    expect_shape(got, want_shape);
    int64_t n = numel_of(want_shape);
    for (int64_t i = 0; i < n; i++) {
        double g = kiln_tensor_item(cx, got, i), w = as_dtype(dt, want[i]);
        cr_assert_eq(g, w, "trial %d, %s: element %lld is %g, expected %g", trial,
                     kiln_dtype_name(dt), (long long)i, g, w);
    }
}

Test(linalg, dot_general_matches_reference_for_random_shapes) {
    kiln_ctx *cx = test_ctx();
    rng_state = 0x9e3779b97f4a7c15ULL;
    double l[4096], r[4096], want[4096];
    for (int trial = 0; trial < 120; trial++) {
        dot_case c = random_dot_case();
        /* every wide dtype, in order (the narrow ones: test_narrow.c) */
        kiln_dtype dt = (kiln_dtype)(trial % KILN_I2);
        bool is_bool = dt == KILN_BOOL, is_unsigned = !kiln_dtype_is_signed(dt);
        int64_t nl = numel_of(c.ls), nr = numel_of(c.rs);
        for (int64_t i = 0; i < nl; i++)
            l[i] = (double)(is_bool ? rnd_int(0, 1) : is_unsigned ? rnd_int(0, 5) : rnd_int(-4, 4));
        for (int64_t i = 0; i < nr; i++)
            r[i] = (double)(is_bool ? rnd_int(0, 1) : is_unsigned ? rnd_int(0, 5) : rnd_int(-4, 4));
        kiln_scope_begin(cx);
        kiln_tensor *lt = make(cx, dt, c.ls, l), *rt = make(cx, dt, c.rs, r);
        kiln_shape ws = ref_dot(l, c.ls, r, c.rs, &c.p, want);
        check_against_reference(cx, kiln_dot_general(cx, lt, rt, &c.p, KILN_DTYPE_COUNT), dt, ws,
                                want, trial);
        /* The same problem with i8 operands widened to the result dtype. */
        if (!is_unsigned && dt != KILN_I8) {
            kiln_tensor *l8 = make(cx, KILN_I8, c.ls, l), *r8 = make(cx, KILN_I8, c.rs, r);
            check_against_reference(cx, kiln_dot_general(cx, l8, r8, &c.p, dt), dt, ws, want,
                                    trial);
        }
        kiln_scope_end(cx);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(linalg, dot_general_f32_matches_double_reference) {
    kiln_ctx *cx = test_ctx();
    rng_state = 12345;
    /* Batched, with each operand in a different layout: lhs [K, B, M], rhs [B, N, K]. */
    enum { B = 3, M = 37, K = 53, N = 29 };
    static double l[K * B * M], r[B * N * K], want[B * M * N];
    for (int i = 0; i < K * B * M; i++)
        l[i] = rnd_unit();
    for (int i = 0; i < B * N * K; i++)
        r[i] = rnd_unit();
    struct {
        kiln_shape ls, rs;
        kiln_dot_params p;
    } cases[] = {
        {KILN_SHAPE(K, B, M), KILN_SHAPE(B, N, K),
         dot_params(KILN_DIMS(1), KILN_DIMS(0), KILN_DIMS(0), KILN_DIMS(2))},
        {KILN_SHAPE(B, M, K), KILN_SHAPE(B, K, N),
         dot_params(KILN_DIMS(0), KILN_DIMS(0), KILN_DIMS(2), KILN_DIMS(1))},
        {KILN_SHAPE(B, K, M), KILN_SHAPE(B, N, K),
         dot_params(KILN_DIMS(0), KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS(2))},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        for (int f64 = 0; f64 < 2; f64++) {
            kiln_dtype dt = f64 ? KILN_F64 : KILN_F32;
            kiln_tensor *lt = make(cx, dt, cases[ci].ls, l), *rt = make(cx, dt, cases[ci].rs, r);
            kiln_tensor *got = kiln_dot_general(cx, lt, rt, &cases[ci].p, KILN_DTYPE_COUNT);
            cr_assert_not_null(got, "%s", kiln_ctx_error_message(cx));
            /* The reference from the values as the operands hold them. */
            static double lr[K * B * M], rr[B * N * K];
            for (int i = 0; i < K * B * M; i++)
                lr[i] = f64 ? l[i] : (double)(float)l[i];
            for (int i = 0; i < B * N * K; i++)
                rr[i] = f64 ? r[i] : (double)(float)r[i];
            kiln_shape ws = ref_dot(lr, cases[ci].ls, rr, cases[ci].rs, &cases[ci].p, want);
            expect_shape(got, ws);
            const void *data = kiln_tensor_data(got);
            double tol = f64 ? 1e-12 : 2e-5;
            for (int i = 0; i < B * M * N; i++) {
                double g = f64 ? ((const double *)data)[i] : ((const float *)data)[i];
                cr_assert(fabs(g - want[i]) <= tol * K,
                          "case %zu %s: element %d is %.9g, "
                          "expected %.9g",
                          ci, kiln_dtype_name(dt), i, g, want[i]);
            }
        }
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Products large enough to be split into chunks of rows or columns (several chunks and a
 * remainder), in every operand layout, f32 and f64: small integer values make every sum
 * exact, so the chunks' offsets are checked element by element. */
Test(linalg, dot_general_chunked_products_match_reference) {
    kiln_ctx *cx = test_ctx();
    rng_state = 777;
    struct {
        int64_t m, k, n;
    } sizes[] = {{1100, 70, 90}, {90, 70, 700}, {300, 40, 300}, {1, 300, 1500}, {1500, 300, 1}};
    static double l[1500 * 300], r[1500 * 300], want[1100 * 700];
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t m = sizes[si].m, k = sizes[si].k, n = sizes[si].n;
        for (int64_t i = 0; i < m * k; i++)
            l[i] = (double)rnd_int(-4, 4);
        for (int64_t i = 0; i < k * n; i++)
            r[i] = (double)rnd_int(-4, 4);
        for (int layout = 0; layout < 4; layout++) {
            bool tl = layout & 1, tr = layout & 2;
            kiln_shape ls = tl ? KILN_SHAPE(k, m) : KILN_SHAPE(m, k);
            kiln_shape rs = tr ? KILN_SHAPE(n, k) : KILN_SHAPE(k, n);
            kiln_dot_params p = dot_params(KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(tl ? 0 : 1),
                                           KILN_DIMS(tr ? 1 : 0));
            kiln_shape ws = ref_dot(l, ls, r, rs, &p, want);
            for (int f64 = 0; f64 < 2; f64++) {
                kiln_dtype dt = f64 ? KILN_F64 : KILN_F32;
                kiln_scope_begin(cx);
                kiln_tensor *lt = make(cx, dt, ls, l), *rt = make(cx, dt, rs, r);
                kiln_tensor *got = kiln_dot_general(cx, lt, rt, &p, KILN_DTYPE_COUNT);
                cr_assert_not_null(got, "%s", kiln_ctx_error_message(cx));
                expect_shape(got, ws);
                const void *data = kiln_tensor_data(got);
                for (int64_t i = 0; i < m * n; i++) {
                    double g = f64 ? ((const double *)data)[i] : ((const float *)data)[i];
                    cr_assert_eq(g, want[i],
                                 "%lldx%lldx%lld layout %d %s: element %lld is %g, expected %g",
                                 (long long)m, (long long)k, (long long)n, layout,
                                 kiln_dtype_name(dt), (long long)i, g, want[i]);
                }
                kiln_scope_end(cx);
            }
        }
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- matmul --------------------------------------------------------------------------- */

Test(linalg, matmul_follows_numpy) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *v = TENSOR(cx, KILN_F32, KILN_SHAPE(3), 1, 2, 3);
    kiln_tensor *m = TENSOR(cx, KILN_F32, KILN_SHAPE(3, 2), 1, 0, 0, 1, 1, 1);
    kiln_tensor *mt = TENSOR(cx, KILN_F32, KILN_SHAPE(2, 3), 1, 0, 1, 0, 1, 1);
    EXPECT(cx, kiln_matmul(cx, v, v), KILN_F32, KILN_SHAPE_SCALAR, 14);
    EXPECT(cx, kiln_matmul(cx, v, m), KILN_F32, KILN_SHAPE(2), 4, 5);
    EXPECT(cx, kiln_matmul(cx, mt, v), KILN_F32, KILN_SHAPE(2), 4, 5);
    EXPECT(cx, kiln_matmul(cx, mt, m), KILN_F32, KILN_SHAPE(2, 2), 2, 1, 1, 2);
    /* Stacked matrices times one matrix: the stack's dims lead. */
    kiln_tensor *st = TENSOR(cx, KILN_I32, KILN_SHAPE(2, 1, 3), 1, 2, 3, 4, 5, 6);
    kiln_tensor *mi = TENSOR(cx, KILN_I32, KILN_SHAPE(3, 2), 1, 0, 0, 1, 1, 1);
    EXPECT(cx, kiln_matmul(cx, st, mi), KILN_I32, KILN_SHAPE(2, 1, 2), 4, 5, 10, 11);
    /* A vector times a stack of matrices. */
    kiln_tensor *vi = TENSOR(cx, KILN_I32, KILN_SHAPE(3), 1, 1, 1);
    kiln_tensor *sm = TENSOR(cx, KILN_I32, KILN_SHAPE(2, 3, 1), 1, 2, 3, 4, 5, 6);
    EXPECT(cx, kiln_matmul(cx, vi, sm), KILN_I32, KILN_SHAPE(2, 1), 6, 15);
    EXPECT(cx, kiln_matmul(cx, st, vi), KILN_I32, KILN_SHAPE(2, 1), 6, 15);
    kiln_ctx_release(cx);
}

Test(linalg, matmul_broadcasts_batch_dimensions) {
    kiln_ctx *cx = test_ctx();
    /* [2,1,1,2] @ [3,2,2] -> [2,3,1,2]: a's batch [2,1] and b's [3] broadcast to [2,3]. */
    kiln_tensor *a = TENSOR(cx, KILN_I64, KILN_SHAPE(2, 1, 1, 2), 1, 2, 3, 4);
    kiln_tensor *b = TENSOR(cx, KILN_I64, KILN_SHAPE(3, 2, 2), 1, 0, 0, 1, 2, 0, 0, 2, 0, 1, 1, 0);
    EXPECT(cx, kiln_matmul(cx, a, b), KILN_I64, KILN_SHAPE(2, 3, 1, 2), 1, 2, 2, 4, 2, 1, 3, 4, 6,
           8, 4, 3);
    /* A matrix times a stack: the matrix is broadcast. */
    kiln_tensor *m = TENSOR(cx, KILN_I64, KILN_SHAPE(1, 2), 1, 10);
    EXPECT(cx, kiln_matmul(cx, m, b), KILN_I64, KILN_SHAPE(3, 1, 2), 1, 10, 2, 20, 10, 1);
    kiln_ctx_release(cx);
}

Test(linalg, matmul_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *s = TENSOR(cx, KILN_F32, KILN_SHAPE_SCALAR, 1);
    kiln_tensor *a = TENSOR(cx, KILN_F32, KILN_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    kiln_tensor *b = TENSOR(cx, KILN_F32, KILN_SHAPE(2, 2), 1, 2, 3, 4);
    kiln_tensor *c = TENSOR(cx, KILN_F64, KILN_SHAPE(3, 2), 1, 2, 3, 4, 5, 6);
    cr_assert_null(kiln_matmul(cx, s, a));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_matmul: operand 1 has shape []");
    cr_assert_null(kiln_matmul(cx, a, b));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_matmul: operand 1 has shape [2,3] and operand 2 has shape [2,2]; the "
                 "contracted dimensions have sizes 3 and 2");
    cr_assert_null(kiln_matmul(cx, a, c));
    expect_error(cx, KILN_INVALID_ARGUMENT, "operands have dtypes f32 and f64");
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2, 2, 3));
    kiln_tensor *y = kiln_zeros(cx, KILN_F32, KILN_SHAPE(3, 3, 1));
    cr_assert_null(kiln_matmul(cx, x, y));
    expect_error(cx, KILN_INVALID_ARGUMENT, "batch dimensions do not broadcast (2 and 3)");
    cr_assert_null(kiln_matmul(cx, NULL, y));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_matmul: operand 1 is NULL");
    kiln_ctx_release(cx);
}

/* ---- convolution: hand-checked values ---------------------------------------------- */

/* Dimension numbers written as StableHLO prints them, e.g. "b01f" for the input: b/f or
 * i/o name the batch/feature (input/output feature for the kernel) and digits the spatial
 * dimensions in order. */
static void dim_numbers(kiln_conv_params *p, const char *in, const char *k, const char *out) {
    int32_t S = (int32_t)strlen(in) - 2;
    p->input_spatial_dimensions.count = p->kernel_spatial_dimensions.count =
        p->output_spatial_dimensions.count = S;
    for (int32_t i = 0; in[i]; i++) {
        if (in[i] == 'b')
            p->input_batch_dimension = i;
        else if (in[i] == 'f')
            p->input_feature_dimension = i;
        else
            p->input_spatial_dimensions.v[in[i] - '0'] = i;
        if (k[i] == 'i')
            p->kernel_input_feature_dimension = i;
        else if (k[i] == 'o')
            p->kernel_output_feature_dimension = i;
        else
            p->kernel_spatial_dimensions.v[k[i] - '0'] = i;
        if (out[i] == 'b')
            p->output_batch_dimension = i;
        else if (out[i] == 'f')
            p->output_feature_dimension = i;
        else
            p->output_spatial_dimensions.v[out[i] - '0'] = i;
    }
}

static const double conv_lhs[16] = {1, 2, 5, 6, 3, 4, 7, 8, 10, 11, 14, 15, 12, 13, 16, 17};

Test(linalg, convolution_conformance) {
    kiln_ctx *cx = test_ctx();
    kiln_conv_params p = {0};
    dim_numbers(&p, "b01f", "01io", "b01f");
    p.window_strides = KILN_DIMS(4, 4);
    p.lhs_dilation = KILN_DIMS(2, 2);
    double nines[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, tens[9];
    for (int i = 0; i < 9; i++)
        tens[i] = 10;
    /* convolution_op_test_si64 */
    kiln_tensor *l = make(cx, KILN_I64, KILN_SHAPE(1, 4, 4, 1), conv_lhs);
    kiln_tensor *r = make(cx, KILN_I64, KILN_SHAPE(3, 3, 1, 1), nines);
    EXPECT(cx, kiln_convolution(cx, l, r, &p, KILN_DTYPE_COUNT), KILN_I64, KILN_SHAPE(1, 2, 2, 1),
           10, 26, 46, 62);
    /* convolution_op_test_si8: i8 x i8 -> i32. */
    kiln_tensor *l8 = make(cx, KILN_I8, KILN_SHAPE(1, 4, 4, 1), conv_lhs);
    kiln_tensor *r8 = make(cx, KILN_I8, KILN_SHAPE(3, 3, 1, 1), tens);
    EXPECT(cx, kiln_convolution(cx, l8, r8, &p, KILN_I32), KILN_I32, KILN_SHAPE(1, 2, 2, 1), 100,
           260, 460, 620);
    /* convolution_op_test_padding */
    kiln_conv_params pp = p;
    pp.padding_low = pp.padding_high = KILN_DIMS(1, 1);
    EXPECT(cx, kiln_convolution(cx, l, r, &pp, KILN_DTYPE_COUNT), KILN_I64, KILN_SHAPE(1, 2, 2, 1),
           1, 5, 10, 14);
    /* convolution_batch_group_count_4 */
    kiln_conv_params bg = {0};
    dim_numbers(&bg, "0b1f", "01io", "b01f");
    bg.window_strides = KILN_DIMS(4, 4);
    bg.lhs_dilation = KILN_DIMS(2, 2);
    bg.batch_group_count = 4;
    kiln_tensor *r2 = make(cx, KILN_I64, KILN_SHAPE(1, 2, 1, 4), nines);
    EXPECT(cx, kiln_convolution(cx, l, r2, &bg, KILN_DTYPE_COUNT), KILN_I64, KILN_SHAPE(1, 1, 2, 4),
           1, 3, 10, 12, 5, 7, 14, 16);
    /* convolution_feature_group_count_2 */
    kiln_conv_params fg = {0};
    dim_numbers(&fg, "b0f1", "0i1o", "b01f");
    fg.window_strides = KILN_DIMS(4, 4);
    fg.lhs_dilation = KILN_DIMS(2, 2);
    fg.feature_group_count = 2;
    EXPECT(cx, kiln_convolution(cx, l, r2, &fg, KILN_DTYPE_COUNT), KILN_I64, KILN_SHAPE(1, 2, 1, 4),
           3, 3, 11, 11, 21, 21, 29, 29);
    /* The same in f32 (im2col + sgemm) and f64. */
    kiln_tensor *lf = make(cx, KILN_F32, KILN_SHAPE(1, 4, 4, 1), conv_lhs);
    kiln_tensor *rf = make(cx, KILN_F32, KILN_SHAPE(3, 3, 1, 1), nines);
    EXPECT(cx, kiln_convolution(cx, lf, rf, &pp, KILN_DTYPE_COUNT), KILN_F32,
           KILN_SHAPE(1, 2, 2, 1), 1, 5, 10, 14);
    EXPECT(cx, kiln_convolution(cx, lf, rf, &p, KILN_F64), KILN_F64, KILN_SHAPE(1, 2, 2, 1), 10, 26,
           46, 62);
    kiln_ctx_release(cx);
}

Test(linalg, convolution_nchw_every_dtype) {
    kiln_ctx *cx = test_ctx();
    /* One image [1, 1, 4], one filter [1, 1, 2]: a sliding dot product. */
    kiln_conv_params p = kiln_conv_params_nchw(1);
    for (int d = 0; d < KILN_DTYPE_COUNT; d++) {
        kiln_dtype dt = (kiln_dtype)d;
        if (kiln_dtype_is_narrow(dt)) continue; /* values past their range: test_narrow.c */
        if (dt == KILN_BOOL) {
            kiln_tensor *x = TENSOR(cx, dt, KILN_SHAPE(1, 1, 4), 1, 0, 0, 1);
            kiln_tensor *w = TENSOR(cx, dt, KILN_SHAPE(1, 1, 2), 0, 1);
            EXPECT(cx, kiln_convolution(cx, x, w, &p, KILN_DTYPE_COUNT), dt, KILN_SHAPE(1, 1, 3), 0,
                   0, 1);
            continue;
        }
        kiln_tensor *x = TENSOR(cx, dt, KILN_SHAPE(1, 1, 4), 1, 2, 3, 4);
        kiln_tensor *w = TENSOR(cx, dt, KILN_SHAPE(1, 1, 2), 2, 1);
        EXPECT(cx, kiln_convolution(cx, x, w, &p, KILN_DTYPE_COUNT), dt, KILN_SHAPE(1, 1, 3), 4, 7,
               10);
        /* Stride 2, padding 1 on both sides, two output features. */
        kiln_conv_params q = p;
        q.window_strides = KILN_DIMS(2);
        q.padding_low = q.padding_high = KILN_DIMS(1);
        kiln_tensor *w2 = TENSOR(cx, dt, KILN_SHAPE(2, 1, 2), 2, 1, 1, 1);
        EXPECT(cx, kiln_convolution(cx, x, w2, &q, KILN_DTYPE_COUNT), dt, KILN_SHAPE(1, 2, 3), 1, 7,
               8, 1, 5, 4);
    }
    kiln_ctx_release(cx);
}

Test(linalg, convolution_dilations_negative_padding_and_wrapping) {
    kiln_ctx *cx = test_ctx();
    kiln_conv_params p = kiln_conv_params_nchw(1);
    kiln_tensor *x = TENSOR(cx, KILN_I32, KILN_SHAPE(1, 1, 5), 1, 2, 3, 4, 5);
    kiln_tensor *w = TENSOR(cx, KILN_I32, KILN_SHAPE(1, 1, 2), 1, 10);
    /* rhs_dilation 2: taps at distance 2. */
    kiln_conv_params q = p;
    q.rhs_dilation = KILN_DIMS(2);
    EXPECT(cx, kiln_convolution(cx, x, w, &q, KILN_DTYPE_COUNT), KILN_I32, KILN_SHAPE(1, 1, 3), 31,
           42, 53);
    /* lhs_dilation 2 (transposed convolution): x becomes 1 0 2 0 3 0 4 0 5. */
    q = p;
    q.lhs_dilation = KILN_DIMS(2);
    EXPECT(cx, kiln_convolution(cx, x, w, &q, KILN_DTYPE_COUNT), KILN_I32, KILN_SHAPE(1, 1, 8), 1,
           20, 2, 30, 3, 40, 4, 50);
    /* Negative padding crops: x[1..3]. */
    q = p;
    q.padding_low = KILN_DIMS(-1);
    q.padding_high = KILN_DIMS(-1);
    EXPECT(cx, kiln_convolution(cx, x, w, &q, KILN_DTYPE_COUNT), KILN_I32, KILN_SHAPE(1, 1, 2), 32,
           43);
    /* i8 result wraps: 100 * 2 + 100 * 2 = 400 -> -112. */
    kiln_tensor *x8 = TENSOR(cx, KILN_I8, KILN_SHAPE(1, 1, 2), 100, 100);
    kiln_tensor *w8 = TENSOR(cx, KILN_I8, KILN_SHAPE(1, 1, 2), 2, 2);
    EXPECT(cx, kiln_convolution(cx, x8, w8, &p, KILN_DTYPE_COUNT), KILN_I8, KILN_SHAPE(1, 1, 1),
           -112);
    /* f16 accumulates in f32 and rounds once: 2048 + 1 + 1. */
    kiln_tensor *xh = TENSOR(cx, KILN_F16, KILN_SHAPE(1, 3, 1), 2048, 1, 1);
    kiln_tensor *wh = TENSOR(cx, KILN_F16, KILN_SHAPE(1, 3, 1), 1, 1, 1);
    EXPECT(cx, kiln_convolution(cx, xh, wh, &p, KILN_DTYPE_COUNT), KILN_F16, KILN_SHAPE(1, 1, 1),
           2050);
    kiln_ctx_release(cx);
}

Test(linalg, convolution_empty_and_no_spatial_dimensions) {
    kiln_ctx *cx = test_ctx();
    kiln_conv_params p = kiln_conv_params_nchw(1);
    /* A window larger than the input: no output positions. */
    kiln_tensor *x = TENSOR(cx, KILN_F32, KILN_SHAPE(1, 1, 2), 1, 2);
    kiln_tensor *w = TENSOR(cx, KILN_F32, KILN_SHAPE(1, 1, 3), 1, 1, 1);
    kiln_tensor *e = kiln_convolution(cx, x, w, &p, KILN_DTYPE_COUNT);
    expect_ok(cx);
    expect_shape(e, KILN_SHAPE(1, 1, 0));
    /* An empty window: zeros. */
    kiln_tensor *w0 = make(cx, KILN_F32, KILN_SHAPE(2, 1, 0), NULL);
    EXPECT(cx, kiln_convolution(cx, x, w0, &p, KILN_DTYPE_COUNT), KILN_F32, KILN_SHAPE(1, 2, 3), 0,
           0, 0, 0, 0, 0);
    /* An empty input padded: the window sees only padding. */
    kiln_conv_params q = p;
    q.padding_low = q.padding_high = KILN_DIMS(1);
    kiln_tensor *x0 = make(cx, KILN_I32, KILN_SHAPE(1, 1, 0), NULL);
    kiln_tensor *wi = TENSOR(cx, KILN_I32, KILN_SHAPE(1, 1, 1), 5);
    EXPECT(cx, kiln_convolution(cx, x0, wi, &q, KILN_DTYPE_COUNT), KILN_I32, KILN_SHAPE(1, 1, 2), 0,
           0);
    /* No input features. */
    kiln_tensor *xf = make(cx, KILN_I32, KILN_SHAPE(2, 0, 3), NULL);
    kiln_tensor *wf = make(cx, KILN_I32, KILN_SHAPE(1, 0, 1), NULL);
    EXPECT(cx, kiln_convolution(cx, xf, wf, &p, KILN_DTYPE_COUNT), KILN_I32, KILN_SHAPE(2, 1, 3), 0,
           0, 0, 0, 0, 0);
    /* Empty batch. */
    kiln_tensor *xb = make(cx, KILN_F64, KILN_SHAPE(0, 1, 3), NULL);
    kiln_tensor *wb = TENSOR(cx, KILN_F64, KILN_SHAPE(1, 1, 1), 5);
    e = kiln_convolution(cx, xb, wb, &p, KILN_DTYPE_COUNT);
    expect_ok(cx);
    expect_shape(e, KILN_SHAPE(0, 1, 3));
    /* Rank 2, no spatial dimensions: [N, C] x [O, C] is a matrix product. */
    kiln_conv_params m = kiln_conv_params_nchw(0);
    kiln_tensor *a = TENSOR(cx, KILN_F32, KILN_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    kiln_tensor *b = TENSOR(cx, KILN_F32, KILN_SHAPE(2, 3), 1, 0, 1, 0, 1, 1);
    EXPECT(cx, kiln_convolution(cx, a, b, &m, KILN_DTYPE_COUNT), KILN_F32, KILN_SHAPE(2, 2), 4, 5,
           10, 11);
    kiln_conv_params mi = {0};
    dim_numbers(&mi, "fb", "io", "fb");
    kiln_tensor *ai = TENSOR(cx, KILN_I16, KILN_SHAPE(3, 2), 1, 4, 2, 5, 3, 6);
    kiln_tensor *bi = TENSOR(cx, KILN_I16, KILN_SHAPE(3, 2), 1, 0, 0, 1, 1, 1);
    EXPECT(cx, kiln_convolution(cx, ai, bi, &mi, KILN_DTYPE_COUNT), KILN_I16, KILN_SHAPE(2, 2), 4,
           10, 5, 11);
    kiln_ctx_release(cx);
}

Test(linalg, convolution_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_conv_params p = kiln_conv_params_nchw(2);
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2, 4, 5, 5));
    kiln_tensor *w = kiln_zeros(cx, KILN_F32, KILN_SHAPE(6, 3, 3, 3));
    cr_assert_null(kiln_convolution(cx, x, w, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_convolution: the kernel input feature size 3 (dimension 1 of operand 2) "
                 "should be the input feature size 4 / feature_group_count 1 = 4");
    kiln_conv_params q = p;
    q.feature_group_count = 3;
    cr_assert_null(kiln_convolution(cx, x, w, &q, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "the input feature size 4 (dimension 1 of operand 1) is not a multiple of "
                 "feature_group_count 3");
    kiln_tensor *w2 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(3, 2, 3, 3));
    q.feature_group_count = 2;
    cr_assert_null(kiln_convolution(cx, x, w2, &q, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "the kernel output feature size 3 (dimension 0 of operand 2) is not a multiple "
                 "of feature_group_count 2");
    q = p;
    q.batch_group_count = 3;
    kiln_tensor *w4 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(6, 4, 3, 3));
    cr_assert_null(kiln_convolution(cx, x, w4, &q, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "the input batch size 2 (dimension 0 of operand 1) is not a multiple of "
                 "batch_group_count 3");
    q.batch_group_count = 2;
    kiln_tensor *w5 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(5, 4, 3, 3));
    cr_assert_null(kiln_convolution(cx, x, w5, &q, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "the kernel output feature size 5 (dimension 0 of operand 2) is not a multiple "
                 "of batch_group_count 2");
    q.feature_group_count = 2;
    cr_assert_null(kiln_convolution(cx, x, w4, &q, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "expected one of them to be 1");
    q = p;
    q.feature_group_count = -1;
    cr_assert_null(kiln_convolution(cx, x, w4, &q, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "feature_group_count is -1");
    q = p;
    q.batch_group_count = -2;
    cr_assert_null(kiln_convolution(cx, x, w4, &q, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "batch_group_count is -2");
    /* Padding that leaves a negative size. */
    q = p;
    q.padding_low = KILN_DIMS(-3, 0);
    q.padding_high = KILN_DIMS(-3, 0);
    cr_assert_null(kiln_convolution(cx, x, w4, &q, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "spatial dimension 0 has size -1 after lhs_dilation 1 and padding (-3, -3); "
                 "expected a size >= 0");
    /* Dimension numbers. */
    q = p;
    q.input_feature_dimension = 4;
    cr_assert_null(kiln_convolution(cx, x, w4, &q, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "input_feature_dimension 4 is not a dimension of the input (rank 4)");
    q = p;
    q.kernel_spatial_dimensions = KILN_DIMS(2, 0);
    cr_assert_null(kiln_convolution(cx, x, w4, &q, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kernel dimension numbers repeat dimension 0 (kernel_output_feature_dimension "
                 "and kernel_spatial_dimensions)");
    q = p;
    q.output_spatial_dimensions = KILN_DIMS(2);
    cr_assert_null(kiln_convolution(cx, x, w4, &q, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "output_spatial_dimensions has 1 entries; expected 2");
    q = p;
    q.window_strides = KILN_DIMS(1, 0);
    cr_assert_null(kiln_convolution(cx, x, w4, &q, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "window_strides[1] is 0; expected a positive value");
    q = p;
    q.rhs_dilation = KILN_DIMS(1, 2, 3);
    cr_assert_null(kiln_convolution(cx, x, w4, &q, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "rhs_dilation has 3 entries; expected 2");
    q = p;
    q.lhs_dilation = KILN_DIMS(-1, 1);
    cr_assert_null(kiln_convolution(cx, x, w4, &q, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "lhs_dilation[0] is -1");
    /* Operands. */
    kiln_tensor *v = kiln_zeros(cx, KILN_F32, KILN_SHAPE(4));
    kiln_conv_params bad = kiln_conv_params_nchw(-1);
    cr_assert_null(kiln_convolution(cx, v, v, &bad, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "operand 1 is f32[4]; expected rank 2 or more");
    kiln_tensor *w3 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(6, 4, 3));
    cr_assert_null(kiln_convolution(cx, x, w3, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "operand 2 is f32[6,4,3] but operand 1 is f32[2,4,5,5]");
    kiln_tensor *wd = kiln_zeros(cx, KILN_F64, KILN_SHAPE(6, 4, 3, 3));
    cr_assert_null(kiln_convolution(cx, x, wd, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "operands have dtypes f32 and f64");
    bad = kiln_conv_params_nchw(15);
    cr_assert_null(kiln_convolution(cx, x, w4, &bad, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "input_spatial_dimensions has 0 entries; expected 2");
    cr_assert_null(kiln_convolution(cx, x, w4, NULL, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_convolution: params is NULL");
    cr_assert_null(kiln_convolution(cx, x, NULL, &p, KILN_DTYPE_COUNT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_convolution: operand 2 is NULL");
    /* Mixed dtypes are fine with a result dtype. */
    kiln_tensor *ok = kiln_convolution(cx, x, wd, &p, KILN_F32);
    expect_ok(cx);
    expect_shape(ok, KILN_SHAPE(2, 6, 3, 3));
    kiln_ctx_release(cx);
}

/* ---- convolution against the reference ---------------------------------------------- */

typedef struct conv_case {
    kiln_shape ls, rs;
    kiln_conv_params p;
} conv_case;

static conv_case random_conv_case(void) {
    conv_case c;
    kiln_conv_params *p = &c.p;
    *p = (kiln_conv_params){0};
    int32_t S = (int32_t)rnd_int(0, 9);
    S = S == 0 ? 0 : S <= 4 ? 1 : S <= 8 ? 2 : 3;
    int32_t N = S + 2;
    int64_t mode = rnd_int(0, 3), fgc = 1, bgc = 1;
    if (mode == 1) fgc = rnd_int(2, 3);
    if (mode == 2) bgc = rnd_int(2, 3);
    p->feature_group_count = fgc;
    p->batch_group_count = bgc;
    int64_t I = rnd_int(1, 3), Og = rnd_int(1, 2), Nout = rnd_int(1, 2);
    int64_t C = I * fgc, O = Og * fgc * bgc, B = Nout * bgc;
    int64_t pos[3][KILN_MAX_RANK];
    for (int k = 0; k < 3; k++) {
        for (int32_t i = 0; i < N; i++)
            pos[k][i] = i;
        shuffle(pos[k], N);
    }
    c.ls.rank = c.rs.rank = N;
    p->input_batch_dimension = pos[0][0];
    p->input_feature_dimension = pos[0][1];
    p->kernel_output_feature_dimension = pos[1][0];
    p->kernel_input_feature_dimension = pos[1][1];
    p->output_batch_dimension = pos[2][0];
    p->output_feature_dimension = pos[2][1];
    c.ls.dims[pos[0][0]] = B;
    c.ls.dims[pos[0][1]] = C;
    c.rs.dims[pos[1][0]] = O;
    c.rs.dims[pos[1][1]] = I;
    p->input_spatial_dimensions.count = p->kernel_spatial_dimensions.count =
        p->output_spatial_dimensions.count = p->window_strides.count = p->padding_low.count =
            p->padding_high.count = p->lhs_dilation.count = p->rhs_dilation.count = S;
    for (int32_t d = 0; d < S; d++) {
        p->input_spatial_dimensions.v[d] = pos[0][2 + d];
        p->kernel_spatial_dimensions.v[d] = pos[1][2 + d];
        p->output_spatial_dimensions.v[d] = pos[2][2 + d];
        int64_t in = rnd_int(1, S == 3 ? 2 : 6), k = rnd_int(1, 3);
        c.ls.dims[pos[0][2 + d]] = in;
        c.rs.dims[pos[1][2 + d]] = k;
        p->window_strides.v[d] = rnd_int(1, 3);
        p->lhs_dilation.v[d] = rnd_int(1, 2);
        p->rhs_dilation.v[d] = rnd_int(1, 2);
        p->padding_low.v[d] = rnd_int(-1, 2);
        p->padding_high.v[d] = rnd_int(-1, 2);
        int64_t din = (in - 1) * p->lhs_dilation.v[d] + 1;
        if (din + p->padding_low.v[d] + p->padding_high.v[d] < 0)
            p->padding_low.v[d] = p->padding_high.v[d] = 0;
    }
    return c;
}

Test(linalg, convolution_matches_reference_for_random_shapes) {
    kiln_ctx *cx = test_ctx();
    rng_state = 0x243f6a8885a308d3ULL;
    static double l[8192], r[8192], want[8192];
    for (int trial = 0; trial < 200; trial++) {
        conv_case c = random_conv_case();
        /* every wide dtype, in order (the narrow ones: test_narrow.c) */
        kiln_dtype dt = (kiln_dtype)(trial % KILN_I2);
        bool is_bool = dt == KILN_BOOL, is_unsigned = !kiln_dtype_is_signed(dt);
        int64_t nl = numel_of(c.ls), nr = numel_of(c.rs);
        cr_assert_leq(nl, 8192);
        cr_assert_leq(nr, 8192);
        for (int64_t i = 0; i < nl; i++)
            l[i] = (double)(is_bool ? rnd_int(0, 1) : is_unsigned ? rnd_int(0, 4) : rnd_int(-3, 3));
        for (int64_t i = 0; i < nr; i++)
            r[i] = (double)(is_bool ? rnd_int(0, 1) : is_unsigned ? rnd_int(0, 4) : rnd_int(-3, 3));
        kiln_shape ws = ref_conv(l, c.ls, r, c.rs, &c.p, want);
        cr_assert_leq(numel_of(ws), 8192);
        kiln_scope_begin(cx);
        kiln_tensor *lt = make(cx, dt, c.ls, l), *rt = make(cx, dt, c.rs, r);
        check_against_reference(cx, kiln_convolution(cx, lt, rt, &c.p, KILN_DTYPE_COUNT), dt, ws,
                                want, trial);
        if (dt == KILN_BF16 || dt == KILN_U8)
            check_against_reference(cx, kiln_convolution(cx, lt, rt, &c.p, KILN_F32), KILN_F32, ws,
                                    want, trial);
        if (dt == KILN_F64 || dt == KILN_I16)
            check_against_reference(cx, kiln_convolution(cx, lt, rt, &c.p, KILN_I64), KILN_I64, ws,
                                    want, trial);
        kiln_scope_end(cx);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(linalg, convolution_f32_matches_double_reference) {
    kiln_ctx *cx = test_ctx();
    rng_state = 777;
    static double l[2 * 8 * 11 * 11], r[16 * 8 * 3 * 3], want[2 * 16 * 11 * 11];
    static double lr[2 * 8 * 11 * 11], rr[16 * 8 * 3 * 3];
    for (size_t i = 0; i < sizeof l / sizeof l[0]; i++)
        lr[i] = (double)(float)(l[i] = rnd_unit());
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        rr[i] = (double)(float)(r[i] = rnd_unit());
    kiln_conv_params nchw = kiln_conv_params_nchw(2);
    nchw.padding_low = nchw.padding_high = KILN_DIMS(1, 1);
    kiln_conv_params nhwc = {0};
    dim_numbers(&nhwc, "b01f", "01io", "b01f");
    nhwc.padding_low = nhwc.padding_high = KILN_DIMS(1, 1);
    kiln_conv_params grouped = kiln_conv_params_nchw(2);
    grouped.feature_group_count = 4;
    grouped.window_strides = KILN_DIMS(2, 1);
    grouped.rhs_dilation = KILN_DIMS(1, 2);
    kiln_conv_params one = kiln_conv_params_nchw(2);
    struct {
        kiln_shape ls, rs;
        kiln_conv_params *p;
    } cases[] = {
        {KILN_SHAPE(2, 8, 11, 11), KILN_SHAPE(16, 8, 3, 3), &nchw},
        {KILN_SHAPE(2, 11, 11, 8), KILN_SHAPE(3, 3, 8, 16), &nhwc},
        {KILN_SHAPE(2, 8, 11, 11), KILN_SHAPE(16, 2, 3, 3), &grouped},
        {KILN_SHAPE(2, 8, 11, 11), KILN_SHAPE(16, 8, 1, 1), &one}, /* im2col is the input */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        kiln_tensor *lt = make(cx, KILN_F32, cases[ci].ls, l);
        kiln_tensor *rt = make(cx, KILN_F32, cases[ci].rs, r);
        kiln_tensor *got = kiln_convolution(cx, lt, rt, cases[ci].p, KILN_DTYPE_COUNT);
        cr_assert_not_null(got, "%s", kiln_ctx_error_message(cx));
        kiln_shape ws = ref_conv(lr, cases[ci].ls, rr, cases[ci].rs, cases[ci].p, want);
        expect_shape(got, ws);
        const float *g = kiln_tensor_data(got);
        for (int64_t i = 0; i < numel_of(ws); i++)
            cr_assert(fabs(g[i] - want[i]) <= 1e-4, "case %zu: element %lld is %.9g, expected %.9g",
                      ci, (long long)i, g[i], want[i]);
        /* f16 results: the same within f16's precision. */
        kiln_tensor *gh = kiln_convolution(cx, lt, rt, cases[ci].p, KILN_F16);
        cr_assert_not_null(gh, "%s", kiln_ctx_error_message(cx));
        for (int64_t i = 0; i < numel_of(ws); i += 7) {
            double h = kiln_tensor_item(cx, gh, i);
            cr_assert(fabs(h - want[i]) <= 0.05 + 0.004 * fabs(want[i]),
                      "case %zu f16: element %lld is %g, expected %g", ci, (long long)i, h,
                      want[i]);
        }
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(linalg, convolution_large_im2col_in_chunks) {
    /* K = 64 * 5 * 5 = 1600 rows of 60 * 60 positions: more than the kernel's im2col
     * budget, so it is made in chunks of output rows. Small integers: exact. */
    kiln_ctx *cx = test_ctx();
    rng_state = 99;
    kiln_shape xs = KILN_SHAPE(1, 64, 64, 64), ws = KILN_SHAPE(2, 64, 5, 5);
    static double x[64 * 64 * 64], w[2 * 64 * 25], want[2 * 60 * 60];
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        x[i] = (double)rnd_int(-2, 2);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        w[i] = (double)rnd_int(-2, 2);
    kiln_conv_params p = kiln_conv_params_nchw(2);
    kiln_shape os = ref_conv(x, xs, w, ws, &p, want);
    for (int f64 = 0; f64 < 2; f64++) {
        kiln_dtype dt = f64 ? KILN_F64 : KILN_F32;
        kiln_tensor *got =
            kiln_convolution(cx, make(cx, dt, xs, x), make(cx, dt, ws, w), &p, KILN_DTYPE_COUNT);
        check_against_reference(cx, got, dt, os, want, f64);
    }
    kiln_ctx_release(cx);
}

/* ---- allocation failures ------------------------------------------------------------ */

Test(linalg, allocation_failures_are_reported_without_leaks) {
    /* Each call is retried with the allocator failing after k allocations, for every k
     * until it succeeds: each failure must be RESOURCE_EXHAUSTED and leak nothing. */
    for (int which = 0; which < 3; which++) {
        bool done = false;
        for (int64_t k = 0; !done; k++) {
            cr_assert_lt(k, 200);
            failing_allocator fa;
            kiln_ctx *cx = failing_allocator_ctx(&fa);
            cr_assert_not_null(cx);
            kiln_tensor *a = kiln_iota(cx, KILN_F16, KILN_SHAPE(2, 3, 4), 1);
            kiln_tensor *b = kiln_iota(cx, KILN_F16, KILN_SHAPE(4, 3, 2), 0);
            kiln_tensor *c = kiln_iota(cx, KILN_I8, KILN_SHAPE(2, 3, 5, 4), 2);
            kiln_tensor *w = kiln_iota(cx, KILN_I8, KILN_SHAPE(3, 2, 3, 2), 3);
            cr_assert(a && b && c && w);
            fa.fail_after = fa.allocations + k;
            kiln_tensor *r = NULL;
            if (which == 0) {
                kiln_dot_params p =
                    dot_params(KILN_DIMS(1), KILN_DIMS(1), KILN_DIMS(0), KILN_DIMS(2));
                r = kiln_dot_general(cx, a, b, &p, KILN_DTYPE_COUNT);
            } else if (which == 1) {
                kiln_conv_params p = {0};
                dim_numbers(&p, "fb01", "o01i", "0b1f");
                r = kiln_convolution(cx, c, w, &p, KILN_I32);
            } else {
                kiln_conv_params p = {0};
                dim_numbers(&p, "fb01", "o01i", "0b1f");
                r = kiln_convolution(cx, c, w, &p, KILN_BF16);
            }
            if (r) {
                expect_ok(cx);
                done = true;
            } else {
                cr_assert_gt(fa.failures, 0);
                expect_error(cx, KILN_RESOURCE_EXHAUSTED, "");
            }
            kiln_ctx_release(cx);
            cr_assert_eq(fa.live_blocks, 0, "case %d, k %lld: %lld blocks leaked", which,
                         (long long)k, (long long)fa.live_blocks);
        }
    }
}

/* ---- the library paths: oneDNN against im2col, bias + relu, small products -------------- */

/* A tensor of f32 values in [-1, 1). */
static kiln_tensor *random_f32(kiln_ctx *cx, kiln_shape s, double *keep) {
    int64_t n = numel_of(s);
    double *v = keep ? keep : malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    cr_assert_not_null(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)(float)rnd_unit();
    kiln_tensor *t = make(cx, KILN_F32, s, v);
    if (!keep) free(v);
    return t;
}

/* A writable result tensor of zeros (kernels fill preallocated results). */
static kiln_tensor *result_like(kiln_ctx *cx, kiln_dtype dt, kiln_shape s) {
    size_t bytes = (size_t)numel_of(s) * kiln_dtype_size(dt);
    void *z = calloc(1, bytes + 1);
    cr_assert_not_null(z);
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, s, z, bytes);
    free(z);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

static void expect_close(const kiln_tensor *a, const kiln_tensor *b, double tol, const char *what,
                         int trial) {
    cr_assert_not_null(a);
    cr_assert_not_null(b);
    cr_assert_eq(kiln_tensor_numel(a), kiln_tensor_numel(b));
    const float *x = kiln_tensor_data(a), *y = kiln_tensor_data(b);
    for (int64_t i = 0; i < kiln_tensor_numel(a); i++)
        cr_assert(fabs((double)x[i] - (double)y[i]) <= tol,
                  "%s, trial %d: element %lld: %.9g vs %.9g", what, trial, (long long)i, x[i],
                  y[i]);
}

Test(linalg, convolution_onednn_matches_im2col) {
    /* f32 convolutions in random layouts, with groups, strides, padding and dilation: the
     * oneDNN path (where it takes them) against the im2col + GEMM path. Values in [-1, 1)
     * and at most 4 * 3 * 3 * 3 = 108 products per sum: 1e-4 covers f32's summation-order
     * differences. */
    kiln_ctx *cx = test_ctx();
    rng_state = 0x5151;
    int taken = 0, ungrouped = 0;
    kiln__dnnl_conv_any_size(true);
    for (int trial = 0; trial < 60; trial++) {
        kiln_scope_begin(cx);
        int32_t S = 1 + trial % 3, N = S + 2;
        int64_t pos[3][KILN_MAX_RANK];
        for (int k = 0; k < 3; k++) {
            for (int32_t i = 0; i < N; i++)
                pos[k][i] = i;
            if (trial % 4) shuffle(pos[k], N); /* every 4th: NCHW / OIHW */
        }
        kiln_conv_params p = {0};
        int64_t G = rnd_int(1, 2), I = rnd_int(1, 4), Og = rnd_int(1, 5), B = rnd_int(1, 2);
        kiln_shape ls = {.rank = N}, rs = {.rank = N};
        p.input_batch_dimension = pos[0][0], p.input_feature_dimension = pos[0][1];
        p.kernel_output_feature_dimension = pos[1][0], p.kernel_input_feature_dimension = pos[1][1];
        p.output_batch_dimension = pos[2][0], p.output_feature_dimension = pos[2][1];
        p.feature_group_count = G;
        ls.dims[pos[0][0]] = B, ls.dims[pos[0][1]] = I * G;
        rs.dims[pos[1][0]] = Og * G, rs.dims[pos[1][1]] = I;
        p.input_spatial_dimensions.count = p.kernel_spatial_dimensions.count =
            p.output_spatial_dimensions.count = p.window_strides.count = p.padding_low.count =
                p.padding_high.count = p.rhs_dilation.count = S;
        for (int32_t d = 0; d < S; d++) {
            p.input_spatial_dimensions.v[d] = pos[0][2 + d];
            p.kernel_spatial_dimensions.v[d] = pos[1][2 + d];
            p.output_spatial_dimensions.v[d] = pos[2][2 + d];
            int64_t k = rnd_int(1, 3);
            ls.dims[pos[0][2 + d]] = rnd_int(k + 2, S == 3 ? 6 : 9);
            rs.dims[pos[1][2 + d]] = k;
            p.window_strides.v[d] = rnd_int(1, 2);
            p.rhs_dilation.v[d] = rnd_int(1, 2);
            p.padding_low.v[d] = rnd_int(0, 1);
            p.padding_high.v[d] = rnd_int(0, 2);
        }
        ungrouped += G == 1;
        kiln_tensor *l = random_f32(cx, ls, NULL), *r = random_f32(cx, rs, NULL);
        kiln_tensor *fast = kiln_convolution(cx, l, r, &p, KILN_DTYPE_COUNT);
        cr_assert_not_null(fast, "trial %d: %s", trial, kiln_ctx_error_message(cx));
        kiln__dnnl_conv_force_off(true);
        kiln_tensor *ref = kiln_convolution(cx, l, r, &p, KILN_DTYPE_COUNT);
        kiln__dnnl_conv_force_off(false);
        expect_close(fast, ref, 1e-4, "oneDNN vs im2col", trial);
        /* The oneDNN entry point takes these (f32, padding >= 0, no input dilation). */
        kiln__attrs at = {.u.conv = p, .result_dtype = KILN_F32};
        kiln_tensor *direct = result_like(cx, KILN_F32, *kiln_tensor_shape(ref));
        kiln_status st = KILN_UNKNOWN;
        if (kiln__dnnl_conv(cx, &at, l, r, NULL, direct, &st)) {
            cr_assert_eq(G, 1, "trial %d: grouped convolutions go to im2col", trial);
            cr_assert_eq(st, KILN_OK, "%s", kiln_ctx_error_message(cx));
            expect_close(direct, ref, 1e-4, "kiln__dnnl_conv vs im2col", trial);
            taken++;
        }
        kiln_scope_end(cx);
    }
    kiln__dnnl_conv_any_size(false);
    /* oneDNN may leave an ungrouped geometry to im2col (where it has only its reference
     * loops), but not most of them. */
    if (kiln__dnnl_conv_available())
        cr_assert_gt(2 * taken, ungrouped, "oneDNN took %d of %d", taken, ungrouped);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(linalg, onednn_declines_what_it_cannot_compute) {
    kiln_ctx *cx = test_ctx();
    kiln__dnnl_conv_any_size(true); /* declined for what they are, not for their size */
    kiln_tensor *l = kiln_iota(cx, KILN_F32, KILN_SHAPE(1, 2, 5, 5), 3);
    kiln_tensor *r = kiln_iota(cx, KILN_F32, KILN_SHAPE(3, 2, 2, 2), 1);
    kiln_conv_params p = kiln_conv_params_nchw(2);
    kiln_status st = KILN_OK;
    /* Input dilation with window strides (no forward convolution's input gradient),
     * negative padding, a dtype other than f32, batch groups. */
    kiln_conv_params pd = p;
    pd.lhs_dilation = KILN_DIMS(2, 1);
    pd.window_strides = KILN_DIMS(2, 1);
    kiln_conv_params pn = p;
    pn.padding_low = KILN_DIMS(-1, 0);
    const kiln_conv_params *ps[] = {&pd, &pn};
    for (int i = 0; i < 2; i++) {
        kiln_tensor *want = kiln_convolution(cx, l, r, ps[i], KILN_DTYPE_COUNT);
        cr_assert_not_null(want, "%s", kiln_ctx_error_message(cx));
        kiln__attrs at = {.u.conv = *ps[i], .result_dtype = KILN_F32};
        kiln_tensor *o = result_like(cx, KILN_F32, *kiln_tensor_shape(want));
        cr_assert(!kiln__dnnl_conv(cx, &at, l, r, NULL, o, &st), "case %d", i);
    }
    kiln_tensor *ld = kiln_convert(cx, l, KILN_F64), *rd = kiln_convert(cx, r, KILN_F64);
    kiln__attrs at = {.u.conv = p, .result_dtype = KILN_F64};
    kiln_tensor *od = result_like(cx, KILN_F64, KILN_SHAPE(1, 3, 4, 4));
    cr_assert(!kiln__dnnl_conv(cx, &at, ld, rd, NULL, od, &st));
    kiln_conv_params pb = p;
    pb.batch_group_count = 3;
    kiln_tensor *l3 = kiln_iota(cx, KILN_F32, KILN_SHAPE(3, 2, 5, 5), 0);
    kiln__attrs ab = {.u.conv = pb, .result_dtype = KILN_F32};
    kiln_tensor *ob = result_like(cx, KILN_F32, KILN_SHAPE(1, 3, 4, 4));
    cr_assert(!kiln__dnnl_conv(cx, &ab, l3, r, NULL, ob, &st));
    kiln__dnnl_conv_any_size(false);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(linalg, prepare_op_builds_ahead_and_accepts_every_type) {
    kiln_ctx *cx = test_ctx();
    kiln_conv_params p = kiln_conv_params_nchw(2);
    p.padding_low = p.padding_high = KILN_DIMS(1, 1);
    kiln__attrs at = {.u.conv = p, .result_dtype = KILN_F32};
    kiln_dtype dts[] = {KILN_F32, KILN_F16, KILN_I32, KILN_F64};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        kiln__type ops[2] = {{.dtype = dts[i], .shape = KILN_SHAPE(2, 3, 8, 8)},
                              {.dtype = dts[i], .shape = KILN_SHAPE(4, 3, 3, 3)}};
        kiln__type res = {.dtype = dts[i], .shape = KILN_SHAPE(2, 4, 8, 8)};
        cr_assert_eq(kiln__cpu_prepare_op(cx, KILN_OP_CONVOLUTION, &at, ops, 2, &res, 1), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
    }
    /* Other ops: nothing to prepare. */
    kiln__type t = {.dtype = KILN_F32, .shape = KILN_SHAPE(3)};
    cr_assert_eq(kiln__cpu_prepare_op(cx, KILN_OP_ADD, &at, (kiln__type[]){t, t}, 2, &t, 1), KILN_OK);
    /* After preparing, the call agrees with im2col. */
    rng_state = 4;
    kiln_tensor *l = random_f32(cx, KILN_SHAPE(2, 3, 8, 8), NULL);
    kiln_tensor *r = random_f32(cx, KILN_SHAPE(4, 3, 3, 3), NULL);
    kiln_tensor *got = kiln_convolution(cx, l, r, &p, KILN_DTYPE_COUNT);
    kiln__dnnl_conv_force_off(true);
    kiln_tensor *want = kiln_convolution(cx, l, r, &p, KILN_DTYPE_COUNT);
    kiln__dnnl_conv_force_off(false);
    expect_close(got, want, 1e-5, "prepared", 0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* convolution + bias + relu, computed by the builders one op at a time. */
static kiln_tensor *bias_act_reference(kiln_ctx *cx, kiln_tensor *l, kiln_tensor *r,
                                       const kiln_conv_params *p, kiln_dtype dt, kiln_tensor *bias,
                                       bool relu) {
    kiln_tensor *c = kiln_convolution(cx, l, r, p, dt);
    if (bias)
        c = kiln_add(cx, c,
                     kiln_broadcast_in_dim(cx, bias, *kiln_tensor_shape(c),
                                           KILN_DIMS(p->output_feature_dimension)));
    if (relu) c = kiln_maximum(cx, c, kiln_scalar(cx, 0, kiln_tensor_dtype(c)));
    return c;
}

Test(linalg, conv_bias_act_matches_the_ops_one_by_one) {
    kiln_ctx *cx = test_ctx();
    rng_state = 31;
    kiln_conv_params nchw = kiln_conv_params_nchw(2);
    nchw.padding_low = nchw.padding_high = KILN_DIMS(1, 1);
    kiln_conv_params nhwc = {0};
    dim_numbers(&nhwc, "b01f", "01io", "b01f");
    nhwc.window_strides = KILN_DIMS(2, 2);
    kiln_conv_params grouped = kiln_conv_params_nchw(2);
    grouped.feature_group_count = 2;
    grouped.lhs_dilation = KILN_DIMS(2, 1); /* not oneDNN's: the loops */
    struct {
        kiln_shape ls, rs;
        kiln_conv_params *p;
        int fdim_size;
    } cases[] = {
        {KILN_SHAPE(2, 4, 7, 7), KILN_SHAPE(6, 4, 3, 3), &nchw, 6},
        {KILN_SHAPE(2, 7, 7, 4), KILN_SHAPE(3, 3, 4, 6), &nhwc, 6},
        {KILN_SHAPE(2, 4, 7, 7), KILN_SHAPE(6, 2, 3, 3), &grouped, 6},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int variant = 0; variant < 4; variant++) {
            kiln_scope_begin(cx);
            bool with_bias = variant & 1, relu = variant & 2;
            kiln_tensor *l = random_f32(cx, cases[ci].ls, NULL);
            kiln_tensor *r = random_f32(cx, cases[ci].rs, NULL);
            kiln_tensor *bias =
                with_bias ? random_f32(cx, KILN_SHAPE(cases[ci].fdim_size), NULL) : NULL;
            kiln_tensor *want = bias_act_reference(cx, l, r, cases[ci].p, KILN_F32, bias, relu);
            cr_assert_not_null(want, "%s", kiln_ctx_error_message(cx));
            kiln_tensor *got = result_like(cx, KILN_F32, *kiln_tensor_shape(want));
            kiln__attrs at = {.u.conv = *cases[ci].p, .result_dtype = KILN_F32};
            cr_assert_eq(kiln__cpu_conv_bias_act(cx, &at, l, r, bias,
                                                 relu ? KILN__ACT_RELU : KILN__ACT_NONE, got),
                         KILN_OK, "%s", kiln_ctx_error_message(cx));
            expect_close(got, want, 1e-5, "bias_act", (int)ci * 4 + variant);
            if (relu) {
                const float *g = kiln_tensor_data(got);
                for (int64_t i = 0; i < kiln_tensor_numel(got); i++)
                    cr_assert(!signbit(g[i]), "relu gives +0, never -0 or negatives");
            }
            kiln_scope_end(cx);
        }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(linalg, conv_bias_act_keeps_nan_and_gives_plus_zero) {
    /* StableHLO's maximum(x, 0): NaN stays NaN, -0 becomes +0, on both paths. */
    kiln_ctx *cx = test_ctx();
    kiln_conv_params p = kiln_conv_params_nchw(2);
    double lv[9] = {1, 2, 3, 4, NAN, 6, 7, 8, 9}, rv[1] = {-1};
    kiln_tensor *l = make(cx, KILN_F32, KILN_SHAPE(1, 1, 3, 3), lv);
    kiln_tensor *r = make(cx, KILN_F32, KILN_SHAPE(1, 1, 1, 1), rv);
    kiln_tensor *bias = TENSOR(cx, KILN_F32, KILN_SHAPE(1), 0.0);
    for (int off = 0; off < 2; off++) {
        kiln__dnnl_conv_force_off(off);
        kiln_tensor *got = result_like(cx, KILN_F32, KILN_SHAPE(1, 1, 3, 3));
        kiln__attrs at = {.u.conv = p, .result_dtype = KILN_F32};
        cr_assert_eq(kiln__cpu_conv_bias_act(cx, &at, l, r, bias, KILN__ACT_RELU, got), KILN_OK);
        const float *g = kiln_tensor_data(got);
        for (int i = 0; i < 9; i++) {
            if (i == 4)
                cr_assert(isnan(g[i]), "path %d: NaN must propagate, got %g", off, g[i]);
            else
                cr_assert(g[i] == 0 && !signbit(g[i]), "path %d: element %d is %g", off, i, g[i]);
        }
    }
    kiln__dnnl_conv_force_off(false);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(linalg, conv_bias_act_other_dtypes_use_the_loops) {
    kiln_ctx *cx = test_ctx();
    kiln_conv_params p = kiln_conv_params_nchw(1);
    kiln_dtype dts[] = {KILN_F16, KILN_BF16, KILN_F64, KILN_I32, KILN_I8, KILN_U8, KILN_BOOL};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        kiln_dtype dt = dts[i];
        bool is_bool = dt == KILN_BOOL, uns = !kiln_dtype_is_signed(dt);
        double lv[2 * 3 * 6], rv[4 * 3 * 2], bv[4];
        for (int k = 0; k < 36; k++)
            lv[k] = is_bool ? k % 2 : uns ? k % 5 : (k * 7) % 9 - 4;
        for (int k = 0; k < 24; k++)
            rv[k] = is_bool ? (k / 3) % 2 : uns ? k % 3 : (k * 5) % 7 - 3;
        for (int k = 0; k < 4; k++)
            bv[k] = is_bool ? k % 2 : uns ? k : dt == KILN_I8 ? 120 - k : k - 2;
        kiln_tensor *l = make(cx, dt, KILN_SHAPE(2, 3, 6), lv);
        kiln_tensor *r = make(cx, dt, KILN_SHAPE(4, 3, 2), rv);
        kiln_tensor *bias = make(cx, dt, KILN_SHAPE(4), bv);
        for (int relu = 0; relu < 2; relu++) {
            kiln_tensor *want = bias_act_reference(cx, l, r, &p, dt, bias, relu);
            cr_assert_not_null(want, "%s: %s", kiln_dtype_name(dt), kiln_ctx_error_message(cx));
            kiln_tensor *got = result_like(cx, dt, *kiln_tensor_shape(want));
            kiln__attrs at = {.u.conv = p, .result_dtype = dt};
            cr_assert_eq(kiln__cpu_conv_bias_act(cx, &at, l, r, bias, relu, got), KILN_OK, "%s",
                         kiln_ctx_error_message(cx));
            cr_assert(memcmp(kiln_tensor_data(got), kiln_tensor_data(want),
                             kiln_tensor_nbytes(want)) == 0,
                      "%s relu %d: differs from the ops one by one", kiln_dtype_name(dt), relu);
        }
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(linalg, conv_bias_act_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_conv_params p = kiln_conv_params_nchw(2);
    kiln__attrs at = {.u.conv = p, .result_dtype = KILN_F32};
    kiln_tensor *l = kiln_iota(cx, KILN_F32, KILN_SHAPE(1, 2, 4, 4), 2);
    kiln_tensor *r = kiln_iota(cx, KILN_F32, KILN_SHAPE(3, 2, 1, 1), 0);
    kiln_tensor *out = result_like(cx, KILN_F32, KILN_SHAPE(1, 3, 4, 4));
    kiln_tensor *b3 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(3));
    cr_assert_eq(
        kiln__cpu_conv_bias_act(cx, &at, l, r, kiln_zeros(cx, KILN_F32, KILN_SHAPE(4)), 0, out),
        KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln__cpu_conv_bias_act: bias must be f32[3]");
    cr_assert_eq(
        kiln__cpu_conv_bias_act(cx, &at, l, r, kiln_zeros(cx, KILN_F64, KILN_SHAPE(3)), 0, out),
        KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "got f64");
    cr_assert_eq(
        kiln__cpu_conv_bias_act(cx, &at, l, r, kiln_zeros(cx, KILN_F32, KILN_SHAPE(3, 3)), 0, out),
        KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "rank 2");
    /* [1, 3, 1] holds the three values in order: taken. */
    kiln_tensor *zero_w = kiln_zeros(cx, KILN_F32, KILN_SHAPE(3, 2, 1, 1));
    kiln_tensor *b131 = kiln_iota(cx, KILN_F32, KILN_SHAPE(1, 3, 1), 1);
    cr_assert_eq(kiln__cpu_conv_bias_act(cx, &at, l, zero_w, b131, 0, out), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    const float *o = kiln_tensor_data(out);
    for (int64_t i = 0; i < kiln_tensor_numel(out); i++)
        cr_assert_eq(o[i], (float)(i / 16), "zero weights: the bias of channel %lld at %lld",
                     (long long)(i / 16), (long long)i);
    cr_assert_eq(kiln__cpu_conv_bias_act(cx, &at, l, r, b3, 2, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "unknown activation 2");
    cr_assert_eq(kiln__cpu_conv_bias_act(cx, &at, NULL, r, b3, 0, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "must not be NULL");
    kiln__attrs bad = at;
    bad.u.conv.output_feature_dimension = 7;
    cr_assert_eq(kiln__cpu_conv_bias_act(cx, &bad, l, r, b3, 0, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "output feature dimension 7");
    kiln_ctx_release(cx);
}

Test(linalg, dot_general_small_paths_match_double_reference) {
    /* The sizes around the special paths: tiny products (loops), small transposed operands
     * (copied before BLAS), batches of small products (split across threads), vector times
     * matrix (GEMV), in f32 and f64, against a double reference. */
    kiln_ctx *cx = test_ctx();
    rng_state = 2024;
    struct {
        int64_t b, m, k, n;
        bool tl, tr;
    } cases[] = {
        {1, 1, 1, 1, false, false},
        {1, 2, 2, 2, true, false},
        {1, 1, 8, 1, false, true},
        {1, 2, 4, 2, true, true},
        {1, 3, 3, 3, false, false},
        {1, 10, 10, 10, true, false},
        {1, 10, 10, 10, false, true},
        {1, 10, 10, 10, true, true},
        {7, 10, 10, 10, false, false},
        {40, 5, 3, 4, true, false},
        {3, 33, 31, 30, true, true},
        {2, 70, 65, 60, false, true},
        /* vector x matrix (GEMV), in every layout, and just below its threshold */
        {1, 1, 300, 300, false, false},
        {1, 1, 300, 300, true, true},
        {2, 300, 300, 1, true, false},
        {1, 300, 300, 1, false, true},
        {1, 1, 50, 63, false, false},
        {1, 63, 50, 1, true, true},
        {1, 1, 90, 2100, false, false}, /* three blocks of columns, the last partial */
    };
    static double l[200000], r[200000], want[200000];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int f64 = 0; f64 < 2; f64++) {
            kiln_scope_begin(cx);
            int64_t B = cases[ci].b, M = cases[ci].m, K = cases[ci].k, N = cases[ci].n;
            kiln_dtype dt = f64 ? KILN_F64 : KILN_F32;
            /* lhs [B, M, K] or [B, K, M]; rhs [B, K, N] or [B, N, K]. */
            kiln_shape ls = cases[ci].tl ? KILN_SHAPE(B, K, M) : KILN_SHAPE(B, M, K);
            kiln_shape rs = cases[ci].tr ? KILN_SHAPE(B, N, K) : KILN_SHAPE(B, K, N);
            cr_assert_leq(B * M * K, 200000);
            cr_assert_leq(B * K * N, 200000);
            cr_assert_leq(B * M * N, 200000);
            for (int64_t i = 0; i < B * M * K; i++)
                l[i] = (double)(float)rnd_unit();
            for (int64_t i = 0; i < B * K * N; i++)
                r[i] = (double)(float)rnd_unit();
            kiln_dot_params p =
                dot_params(KILN_DIMS(0), KILN_DIMS(0), KILN_DIMS(cases[ci].tl ? 1 : 2),
                           KILN_DIMS(cases[ci].tr ? 2 : 1));
            kiln_shape ws = ref_dot(l, ls, r, rs, &p, want);
            kiln_tensor *got = kiln_dot_general(cx, make(cx, dt, ls, l), make(cx, dt, rs, r), &p,
                                                KILN_DTYPE_COUNT);
            cr_assert_not_null(got, "%s", kiln_ctx_error_message(cx));
            expect_shape(got, ws);
            for (int64_t i = 0; i < numel_of(ws); i++) {
                double g = kiln_tensor_item(cx, got, i);
                cr_assert(fabs(g - want[i]) <= (f64 ? 1e-12 : 2e-5) * (double)K,
                          "case %zu %s: element %lld is %.9g, expected %.9g", ci,
                          kiln_dtype_name(dt), (long long)i, g, want[i]);
            }
            kiln_scope_end(cx);
        }
    expect_ok(cx);
    kiln_ctx_release(cx);
}
