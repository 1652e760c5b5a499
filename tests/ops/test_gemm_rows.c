/* SPDX-License-Identifier: Apache-2.0 */
/* Products of a few rows with a large matrix (kiln__gemm_rows_f32, gemm_rows_f32.c): every
 * output is the chain x[0] M[0][j], then fma(x[i], M[i][j], .) in order, bit for bit, for
 * every row count, width (the masked tail tiles, the work items of 1024 columns), depth
 * (the blocks of 16 rows), leading dimension and thread count; a row's result equals
 * kiln__gemv_f32's for that row alone, and matmul through dot_general takes this path and
 * keeps that batch invariance. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/eval/eval_linalg.h"
#include "backends/cpu/lib/dense_f32.h"
#include "base/threads.h"
#include "test_util.h"

static uint32_t rng = 0x13572468u;

static float next_value(void) {
    rng = rng * 1664525u + 1013904223u;
    return ldexpf((float)(rng >> 8) / 8388608.0f - 1.0f, (int)(rng % 7) - 3);
}

static float *random_floats(int64_t n) {
    float *v = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    cr_assert_not_null(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = next_value();
    return v;
}

/* The chain every output must be. */
static float chain(const float *x, const float *w, int64_t ldw, int64_t k, int64_t j) {
    if (k == 0) return 0.0f;
    float y = x[0] * w[j];
    for (int64_t i = 1; i < k; i++)
        y = fmaf(x[i], w[i * ldw + j], y);
    return y;
}

static void require_kernel(void) {
    if (!kiln__gemm_rows_f32_available())
        cr_skip_test("this CPU has no AVX-512: products of few rows go to BLAS");
}

Test(gemm_rows, every_output_is_the_fma_chain_bit_for_bit) {
    require_kernel();
    const int64_t ms[] = {1, 2, 3, 7, 8, 9, 13, 16};
    const int64_t ks[] = {1, 2, 15, 16, 17, 33, 100};
    const int64_t ns[] = {1, 15, 16, 17, 31, 32, 33, 255, 257, 600, 1023, 1024, 1025, 2100};
    int checked = 0;
    for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
        for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++)
            for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
                int64_t m = ms[a], k = ks[b], n = ns[c];
                /* leading dimensions wider than the rows: views into larger arrays */
                int64_t ldx = k + (int64_t)(c % 3), ldw = n + (int64_t)(a % 2) * 5,
                        ldy = n + (int64_t)(b % 2) * 3;
                float *x = random_floats(m * ldx), *w = random_floats(k * ldw);
                float *y = malloc(sizeof(float) * (size_t)(m * ldy));
                for (int64_t i = 0; i < m * ldy; i++)
                    y[i] = 12345.0f; /* padding between rows must stay */
                kiln__gemm_rows_f32(x, ldx, m, w, ldw, k, n, y, ldy);
                for (int64_t r = 0; r < m; r++) {
                    for (int64_t j = 0; j < n; j++) {
                        float want = chain(x + r * ldx, w, ldw, k, j);
                        cr_assert(memcmp(&y[r * ldy + j], &want, sizeof want) == 0,
                                  "m %lld k %lld n %lld: y[%lld][%lld] = %a, expected %a",
                                  (long long)m, (long long)k, (long long)n, (long long)r,
                                  (long long)j, y[r * ldy + j], want);
                    }
                    for (int64_t j = n; j < ldy; j++)
                        cr_assert_eq(y[r * ldy + j], 12345.0f, "a padding element was written");
                }
                checked++;
                free(x), free(w), free(y);
            }
    cr_assert_eq(checked, 8 * 7 * 14);
}

Test(gemm_rows, rows_equal_gemv_and_do_not_depend_on_threads) {
    require_kernel();
    if (!kiln__gemv_f32_available()) cr_skip_test("no AVX2/FMA: no GEMV kernel to compare with");
    const int64_t m = 6, k = 700, n = 1500;
    float *x = random_floats(m * k), *w = random_floats(k * n);
    float *y[3], *row = malloc(sizeof(float) * n);
    for (int t = 0; t < 3; t++) {
        kiln__threads_set_count(t + 1);
        y[t] = malloc(sizeof(float) * (size_t)(m * n));
        kiln__gemm_rows_f32(x, k, m, w, n, k, n, y[t], n);
    }
    kiln__threads_set_count(0);
    for (int t = 1; t < 3; t++)
        cr_assert(memcmp(y[0], y[t], sizeof(float) * (size_t)(m * n)) == 0,
                  "%d threads differ from 1", t + 1);
    for (int64_t r = 0; r < m; r++) {
        kiln__gemv_f32(x + r * k, 1, w, n, k, n, row);
        cr_assert(memcmp(row, y[0] + r * n, sizeof(float) * (size_t)n) == 0,
                  "row %lld differs from its GEMV", (long long)r);
    }
    for (int t = 0; t < 3; t++)
        free(y[t]);
    free(row), free(x), free(w);
}

Test(gemm_rows, empty_and_zero_depth) {
    require_kernel();
    float x[4] = {1, 2, 3, 4}, w[4] = {5, 6, 7, 8}, y[4] = {9, 9, 9, 9};
    kiln__gemm_rows_f32(x, 2, 2, w, 2, 0, 2, y, 2); /* k = 0: zeros */
    for (int i = 0; i < 4; i++)
        cr_assert_eq(y[i], 0.0f);
    y[0] = 9;
    kiln__gemm_rows_f32(x, 2, 0, w, 2, 2, 2, y, 2); /* no rows, no columns: nothing */
    kiln__gemm_rows_f32(x, 2, 2, w, 2, 2, 0, y, 2);
    cr_assert_eq(y[0], 9.0f);
}

Test(gemm_rows, matmul_of_a_small_batch_is_batch_invariant) {
    require_kernel();
    kiln_ctx *cx = test_ctx();
    /* 327,680 weights: this path (two passes, of 8 and 4 rows), not BLAS */
    const int64_t m = 12, k = 512, n = 640;
    float *xv = random_floats(m * k), *wv = random_floats(k * n);
    kiln_tensor *x =
        kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(m, k), xv, sizeof(float) * (size_t)(m * k));
    kiln_tensor *w =
        kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(k, n), wv, sizeof(float) * (size_t)(k * n));
    kiln_tensor *y = kiln_matmul(cx, x, w);
    cr_assert_not_null(y, "%s", kiln_ctx_error_message(cx));
    const float *ys = kiln_tensor_data(y);
    for (int64_t r = 0; r < m; r++) {
        kiln_tensor *xr = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(1, k), xv + r * k,
                                                sizeof(float) * (size_t)k);
        kiln_tensor *yr = kiln_matmul(cx, xr, w); /* one row: the GEMV */
        cr_assert(memcmp(kiln_tensor_data(yr), ys + r * n, sizeof(float) * (size_t)n) == 0,
                  "row %lld of the batch differs from the row alone", (long long)r);
        for (int64_t j = 0; j < n; j += 37) {
            double s = 0;
            for (int64_t i = 0; i < k; i++)
                s += (double)xv[r * k + i] * (double)wv[i * n + j];
            cr_assert(fabs(ys[r * n + j] - s) <= 1e-4 * (1 + fabs(s)), "y[%lld][%lld]",
                      (long long)r, (long long)j);
        }
    }
    free(xv), free(wv);
    expect_ok(cx);
    kiln_ctx_release(cx);
}
