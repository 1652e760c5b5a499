/* SPDX-License-Identifier: Apache-2.0 */
/* f32 vector times a row-major matrix, y = x M (M [k x n], rows ld apart), streaming M once.
 *
 * This is a dense layer at batch 1 (VGG's classifier reads 411 MB of weights per call), so
 * it runs at memory bandwidth or not at all: OpenBLAS's GEMV, in the column blocks kiln
 * cuts for determinism, took 26 ms for that layer on one thread here (~16 GB/s, where one
 * thread reads ~24 GB/s); this kernel 20-22 ms. Each thread walks its own contiguous range
 * of columns down all rows, eight rows at a time, so the rows stream through the cache and
 * the outputs stay in L1.
 *
 * Every output is the same chain of roundings whatever the split or the vector width:
 * y[j] = x[0] M[0][j], then y[j] = fma(x[i], M[i][j], y[j]) for i = 1 .. k-1 in order. A
 * vector FMA and fmaf round alike, so tails computed one element at a time give the bits of
 * the vector body, and results do not depend on the thread count. */
#include <immintrin.h>
#include <math.h>

#include "backends/cpu/lib/cpu_features.h"
#include "backends/cpu/lib/dense_f32.h"
#include "base/threads.h"

#define FMA_TARGET __attribute__((target("avx2,fma")))

/* Columns per work item: a multiple of the vector body's width (32), so that every range
 * but the last runs the body only. */
#define GEMV_COLS 256
/* Work items of less than this many multiply-adds per thread stay on one thread. */
#define GEMV_PAR_MACS 65536

bool kiln__gemv_f32_available(void) { return kiln__cpu_avx2_fma(); }

/* y[j0..j1) = x[0] * row 0. */
FMA_TARGET static void first_row(const float *m, float x0, float *y, int64_t j0, int64_t j1) {
    __m256 xv = _mm256_set1_ps(x0);
    int64_t j = j0;
    for (; j + 8 <= j1; j += 8)
        _mm256_storeu_ps(y + j, _mm256_mul_ps(xv, _mm256_loadu_ps(m + j)));
    for (; j < j1; j++)
        y[j] = x0 * m[j];
}

/* y[j] = fma(x[7], r[7][j], ... fma(x[0], r[0][j], y[j])): eight rows per pass over y (one
 * load and store of y per eight rows; measured ~5% faster than four on VGG's layer). */
FMA_TARGET static void eight_rows(const float *const *r, const float *x, float *y, int64_t j0,
                                  int64_t j1) {
    int64_t j = j0;
    for (; j + 32 <= j1; j += 32) {
        /* Spelled out: GCC keeps an array of accumulators in memory. */
        __m256 a0 = _mm256_loadu_ps(y + j), a1 = _mm256_loadu_ps(y + j + 8);
        __m256 a2 = _mm256_loadu_ps(y + j + 16), a3 = _mm256_loadu_ps(y + j + 24);
        for (int q = 0; q < 8; q++) {
            /* a0..a3 = fma(xv, r[q][j .. j + 32), a0..a3). */
            __m256 xv = _mm256_set1_ps(x[q]);
            a0 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r[q] + j), a0);
            a1 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r[q] + j + 8), a1);
            a2 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r[q] + j + 16), a2);
            a3 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r[q] + j + 24), a3);
        }
        _mm256_storeu_ps(y + j, a0);
        _mm256_storeu_ps(y + j + 8, a1);
        _mm256_storeu_ps(y + j + 16, a2);
        _mm256_storeu_ps(y + j + 24, a3);
    }
    for (; j < j1; j++) {
        float acc = y[j];
        for (int q = 0; q < 8; q++)
            acc = fmaf(x[q], r[q][j], acc);
        y[j] = acc;
    }
}

/* y[j] = fma(x0, r[j], y[j]). */
FMA_TARGET static void one_row(const float *r, float x0, float *y, int64_t j0, int64_t j1) {
    __m256 xv = _mm256_set1_ps(x0);
    int64_t j = j0;
    for (; j + 8 <= j1; j += 8)
        _mm256_storeu_ps(y + j,
                         _mm256_fmadd_ps(xv, _mm256_loadu_ps(r + j), _mm256_loadu_ps(y + j)));
    for (; j < j1; j++)
        y[j] = fmaf(x0, r[j], y[j]);
}

typedef struct gemv_f32_job {
    const float *m, *x;
    float *y;
    int64_t k, n, ld, incx;
} gemv_f32_job;

/* Columns [begin * GEMV_COLS, end * GEMV_COLS) of y, down all k rows. */
static void gemv_f32_range(void *user, int64_t begin, int64_t end) {
    const gemv_f32_job *j = user;
    int64_t j0 = begin * GEMV_COLS, j1 = end * GEMV_COLS < j->n ? end * GEMV_COLS : j->n;
    const float *m = j->m;
    first_row(m, j->x[0], j->y, j0, j1);
    int64_t i = 1;
    for (; i + 8 <= j->k; i += 8) {
        float xs[8];
        const float *rs[8];
        for (int q = 0; q < 8; q++)
            xs[q] = j->x[(i + q) * j->incx], rs[q] = m + (i + q) * j->ld;
        eight_rows(rs, xs, j->y, j0, j1);
    }
    for (; i < j->k; i++)
        one_row(m + i * j->ld, j->x[i * j->incx], j->y, j0, j1);
}

void kiln__gemv_f32(const float *x, int64_t incx, const float *m, int64_t ld, int64_t k, int64_t n,
                    float *y) {
    if (n <= 0) return;
    if (k <= 0) {
        for (int64_t j = 0; j < n; j++)
            y[j] = 0.0f;
        return;
    }
    gemv_f32_job job = {.m = m, .x = x, .y = y, .k = k, .n = n, .ld = ld, .incx = incx};
    int64_t items = (n + GEMV_COLS - 1) / GEMV_COLS;
    int64_t per_item = k * GEMV_COLS;
    int64_t grain = per_item >= GEMV_PAR_MACS ? 1 : GEMV_PAR_MACS / per_item;
    kiln__parallel_for(items, grain, gemv_f32_range, &job);
}
