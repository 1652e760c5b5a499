/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bench's linear-algebra and spectral cases: a complex<f32> GEMM beside OpenBLAS's
 * cgemm on the same data, an FFT of 2^20 complex<f32> values, and a triangular solve and a
 * Cholesky factorization of f32[1024, 1024] (the peers: numpy, scipy and JAX on XLA). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "bench.h"

/* ---- complex<f32> GEMM ---------------------------------------------------------------------- */

static kiln_status fn_matmul2(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_matmul(cx, in[0], in[1]);
    return kiln_ctx_status(cx);
}

static kiln_tensor *random_c64(kiln_ctx *cx, kiln_shape shape, uint64_t seed) {
    kiln_tensor *re = kiln_random_uniform(cx, kiln_key_from_seed(seed), KILN_F32, shape, -1, 1);
    kiln_tensor *im =
        kiln_random_uniform(cx, kiln_key_from_seed(seed + 1), KILN_F32, shape, -1, 1);
    kiln_tensor *z = kiln_complex(cx, re, im);
    kiln_tensor_release(re);
    kiln_tensor_release(im);
    return z;
}

typedef struct {
    const void *a, *b;
    void *c;
    int n;
} cgemm_state;

static void cgemm_once(void *user) {
    cgemm_state *g = user;
    static const float one[2] = {1, 0}, zero[2] = {0, 0};
    cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->n, g->n, g->n, one, g->a, g->n,
                g->b, g->n, zero, g->c, g->n);
}

void case_cgemm512(bench *b) {
    const int64_t n = 512;
    kiln_tensor *in[2] = {random_c64(b->cx, KILN_SHAPE(n, n), 70),
                          random_c64(b->cx, KILN_SHAPE(n, n), 72)};
    kiln_arg_spec args[2] = {{.dtype = KILN_C64, .shape = KILN_SHAPE(n, n)},
                             {.dtype = KILN_C64, .shape = KILN_SHAPE(n, n)}};
    if (check(b)) {
        run_spec rs = spec_fast(b);
        rs.flops = 8.0 * (double)n * (double)n * (double)n; /* 4 real multiply-adds each */
        rs.note = "matmul complex<f32>, dot_general on OpenBLAS's cgemm";
        kiln_region fn = {fn_matmul2, NULL};
        run_compiled(b, "kiln", &fn, args, 2, in, rs, NULL);
        cgemm_state g = {kiln_tensor_data(in[0]), kiln_tensor_data(in[1]), NULL, (int)n};
        g.c = malloc(8 * (size_t)(n * n));
        if (g.c && g.a && g.b) {
            stats s = measure(cgemm_once, &g, rs.calls);
            emit_time(b->suite, b->name, "openblas", "call", s, b->threads,
                      "cblas_cgemm, same data");
        }
        free(g.c);
    }
    kiln_tensor_release(in[0]), kiln_tensor_release(in[1]);
}

/* ---- FFT of 2^20 complex<f32> values ---------------------------------------------------------- */

static kiln_status fn_fft(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_fft(cx, in[0], KILN_FFT_FORWARD, KILN_DIMS(kiln_tensor_shape(in[0])->dims[0]));
    return kiln_ctx_status(cx);
}

void case_fft_1m(bench *b) {
    const int64_t n = 1 << 20;
    kiln_tensor *in[1] = {random_c64(b->cx, KILN_SHAPE(n), 74)};
    kiln_arg_spec args[1] = {{.dtype = KILN_C64, .shape = KILN_SHAPE(n)}};
    if (check(b)) {
        run_spec rs = spec_fast(b);
        rs.flops = 5.0 * (double)n * 20; /* the radix-2 count, 5 n log2 n */
        rs.bytes = 16.0 * (double)n;
        rs.note = "fft complex<f32> 2^20 (kiln's mixed radix, in double)";
        rs.calls = policy_slow(11);
        kiln_region fn = {fn_fft, NULL};
        run_compiled(b, "kiln", &fn, args, 1, in, rs, NULL);
    }
    kiln_tensor_release(in[0]);
}

/* ---- triangular_solve and cholesky of f32[1024, 1024] ---------------------------------------- */

/* A lower-triangular matrix well away from singular (uniform entries, n + 1 on the diagonal),
 * or, spd, the symmetric positive-definite a a^T / n + I. */
static kiln_tensor *matrix_f32(bench *b, int64_t n, bool spd, uint64_t seed) {
    kiln_tensor *r =
        kiln_random_uniform(b->cx, kiln_key_from_seed(seed), KILN_F32, KILN_SHAPE(n, n), -1, 1);
    float *m = malloc(sizeof(float) * (size_t)(n * n));
    const float *v = r ? kiln_tensor_data(r) : NULL;
    kiln_tensor *out = NULL;
    if (m && v) {
        if (spd) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)n,
                        1.0f / (float)n, v, (int)n, v, (int)n, 0.0f, m, (int)n);
            for (int64_t i = 0; i < n; i++)
                m[i * n + i] += 1;
        } else {
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++)
                    m[i * n + j] = j < i ? v[i * n + j] : j == i ? (float)n + 1 : 0;
        }
        out = kiln_tensor_from_host(b->cx, KILN_F32, KILN_SHAPE(n, n), m,
                                    sizeof(float) * (size_t)(n * n));
    }
    free(m);
    kiln_tensor_release(r);
    return out;
}

static kiln_status fn_trsm(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_triangular_solve(cx, in[0], in[1], true, true, false, KILN_TRANSPOSE_NONE);
    return kiln_ctx_status(cx);
}

static kiln_status fn_cholesky(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *u) {
    (void)u;
    out[0] = kiln_cholesky(cx, in[0], true);
    return kiln_ctx_status(cx);
}

void case_trsm1024(bench *b) {
    const int64_t n = 1024;
    kiln_tensor *in[2] = {matrix_f32(b, n, false, 76),
                          kiln_random_uniform(b->cx, kiln_key_from_seed(77), KILN_F32,
                                              KILN_SHAPE(n, n), -1, 1)};
    kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(n, n)},
                             {.dtype = KILN_F32, .shape = KILN_SHAPE(n, n)}};
    if (check(b)) {
        run_spec rs = spec_fast(b);
        rs.flops = (double)n * (double)n * (double)n; /* n^2 / 2 multiply-adds per column */
        rs.note = "triangular_solve f32, left, lower: OpenBLAS's strsm";
        rs.calls = policy_slow(11);
        kiln_region fn = {fn_trsm, NULL};
        run_compiled(b, "kiln", &fn, args, 2, in, rs, NULL);
    }
    kiln_tensor_release(in[0]), kiln_tensor_release(in[1]);
}

void case_cholesky1024(bench *b) {
    const int64_t n = 1024;
    kiln_tensor *in[1] = {matrix_f32(b, n, true, 78)};
    kiln_arg_spec args[1] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(n, n)}};
    if (check(b)) {
        run_spec rs = spec_fast(b);
        rs.flops = (double)n * (double)n * (double)n / 3.0;
        rs.note = "cholesky f32, lower: LAPACK's spotrf (OpenBLAS)";
        rs.calls = policy_slow(11);
        kiln_region fn = {fn_cholesky, NULL};
        run_compiled(b, "kiln", &fn, args, 1, in, rs, NULL);
    }
    kiln_tensor_release(in[0]);
}
