/* SPDX-License-Identifier: Apache-2.0 */
/* f32 products of a few rows with a large row-major matrix, Y = X M (X [m x k], M [k x n]),
 * streaming M once without packing it: up to 8 rows of X as tiles of 8 x 32 outputs, 9 to
 * 16 in one pass as tiles of 16 x 16 (tile16, X transposed first; VGG11's 16 x 25088 x 4096
 * layer on two threads: 35 ms in two passes of 8 rows, 28 ms in one).
 *
 * This is a dense layer at a small batch (VGG's classifier at batch 8: 8 x 4096 times
 * 4096 x 4096). OpenBLAS packs M before multiplying, which at 8 rows costs as much as the
 * product. Here the 8 x 32 outputs of a tile of 32 columns stay in 16 AVX-512 registers
 * while the tile walks down 16 rows of M at a time, then the next tile of the same rows;
 * work items are ranges of 1024 columns. On an AMD EPYC (32 MiB L3, M from memory), one
 * thread: 8 x 4096 x 4096 4.4 ms (15 GB/s of M), 8 x 4096 x 1000 0.8 ms, 8 x 25088 x 4096
 * 27 ms; 32-row blocks of 256-column items read 4096-wide rows at 9 GB/s (rows a power of
 * two apart share cache sets) and 1000-wide ones at 3 GB/s.
 *
 * Each output is the chain of roundings of kiln__gemv_f32 (gemv_f32.c): y[j] = x[0] M[0][j],
 * then y[j] = fma(x[i], M[i][j], y[j]) for i = 1 .. k-1 in order. So a row's result is
 * the same whatever the batch it is in, the split or the thread count. */
#include <immintrin.h>
#include <stdlib.h>

#include "backends/cpu/lib/cpu_features.h"
#include "backends/cpu/lib/dense_f32.h"
#include "base/threads.h"

#define AVX512_TARGET __attribute__((target("avx512f,avx2,fma")))

#define ROWS_MAX 8     /* rows of X per pass (16 accumulators of 16 lanes) */
#define TILE 32        /* columns per tile: two vectors */
#define K_BLOCK 16     /* rows of M per pass over the tiles of an item */
#define ITEM_COLS 1024 /* columns per work item */
#define PAR_MACS 65536 /* work items of fewer multiply-adds stay on one thread */

bool kiln__gemm_rows_f32_available(void) { return kiln__cpu_avx512(); }

typedef struct rows_job {
    const float *x, *w;
    const float *xt; /* 9 to 16 rows: X transposed, [k][16] (rows past m zero), else NULL */
    float *y;
    int64_t m, k, n, ldx, ldw, ldy;
} rows_job;

static __mmask16 lane_mask(int lanes) {
    return lanes >= 16  ? (__mmask16)0xffff
           : lanes <= 0 ? (__mmask16)0
                        : (__mmask16)((1u << lanes) - 1u);
}

/* The chains of one tile: rows [i0, i1) of M for every row of X (at most ROWS_MAX) and the
 * 32 columns at j (`lanes` of them valid): from x[.][0] * M[0] when i0 == 0, else
 * continuing the chains stored in y. The loops over the rows have a constant trip count
 * (rows past m repeat row m - 1 and are not stored), so they unroll and the 16
 * accumulators stay in registers (a loop that stopped at m kept them on the stack: a
 * third of the FMA rate). The lines of M that the tile two tiles on needs are prefetched:
 * walking a strip down the rows defeats the hardware's stream prefetchers (8 x 4096 x
 * 4096 on one thread: 7.4 ms, 9 GB/s, before both changes; 4.4 ms, 15 GB/s, after). */
static AVX512_TARGET void tile(const rows_job *jb, int64_t j, int lanes, int64_t i0, int64_t i1) {
    const int m = (int)jb->m;
    const __mmask16 lo = lane_mask(lanes), hi = lane_mask(lanes - 16);
    const float *w = jb->w + j;
    const float *xr[ROWS_MAX];
    for (int r = 0; r < ROWS_MAX; r++)
        xr[r] = jb->x + (r < m ? r : m - 1) * jb->ldx;
    float *y = jb->y + j;
    __m512 a[ROWS_MAX][2];
    int64_t i = i0;
    if (i0 == 0) {
        __m512 w0 = _mm512_maskz_loadu_ps(lo, w), w1 = _mm512_maskz_loadu_ps(hi, w + 16);
#pragma GCC unroll 8
        for (int r = 0; r < ROWS_MAX; r++) {
            __m512 xv = _mm512_set1_ps(xr[r][0]);
            a[r][0] = _mm512_mul_ps(xv, w0);
            a[r][1] = _mm512_mul_ps(xv, w1);
        }
        i = 1;
    } else {
#pragma GCC unroll 8
        for (int r = 0; r < ROWS_MAX; r++) {
            const float *yr = y + (r < m ? r : m - 1) * jb->ldy;
            a[r][0] = _mm512_maskz_loadu_ps(lo, yr);
            a[r][1] = _mm512_maskz_loadu_ps(hi, yr + 16);
        }
    }
    for (; i < i1; i++) {
        const float *wr = w + i * jb->ldw;
        _mm_prefetch((const char *)(wr + 2 * TILE), _MM_HINT_T0);
        _mm_prefetch((const char *)(wr + 2 * TILE + 16), _MM_HINT_T0);
        __m512 w0 = _mm512_maskz_loadu_ps(lo, wr), w1 = _mm512_maskz_loadu_ps(hi, wr + 16);
#pragma GCC unroll 8
        for (int r = 0; r < ROWS_MAX; r++) {
            __m512 xv = _mm512_set1_ps(xr[r][i]);
            a[r][0] = _mm512_fmadd_ps(xv, w0, a[r][0]);
            a[r][1] = _mm512_fmadd_ps(xv, w1, a[r][1]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < ROWS_MAX; r++) {
        if (r < m) { /* a constant trip count: `a` stays in registers */
            _mm512_mask_storeu_ps(y + r * jb->ldy, lo, a[r][0]);
            _mm512_mask_storeu_ps(y + r * jb->ldy + 16, hi, a[r][1]);
        }
    }
}

/* The chains of a tile of 16 rows of X (9 to 16 of them real) and the 16 columns at j,
 * as tile() computes 8 x 32: M is read once for all the rows. The 16 values of X that
 * each row of M meets are consecutive in xt, so one base register addresses all the
 * broadcasts (16 row pointers do not fit in the general registers). */
static AVX512_TARGET void tile16(const rows_job *jb, int64_t j, int lanes, int64_t i0, int64_t i1) {
    const int m = (int)jb->m;
    const __mmask16 lo = lane_mask(lanes);
    const float *w = jb->w + j, *xt = jb->xt;
    float *y = jb->y + j;
    __m512 a[16];
    int64_t i = i0;
    if (i0 == 0) {
        __m512 w0 = _mm512_maskz_loadu_ps(lo, w);
#pragma GCC unroll 16
        for (int r = 0; r < 16; r++)
            a[r] = _mm512_mul_ps(_mm512_set1_ps(xt[r]), w0);
        i = 1;
    } else {
#pragma GCC unroll 16
        for (int r = 0; r < 16; r++)
            a[r] = _mm512_maskz_loadu_ps(lo, y + (r < m ? r : m - 1) * jb->ldy);
    }
    for (; i < i1; i++) {
        const float *wr = w + i * jb->ldw, *xi = xt + i * 16;
        _mm_prefetch((const char *)(wr + 64), _MM_HINT_T0);
        __m512 w0 = _mm512_maskz_loadu_ps(lo, wr);
#pragma GCC unroll 16
        for (int r = 0; r < 16; r++)
            a[r] = _mm512_fmadd_ps(_mm512_set1_ps(xi[r]), w0, a[r]);
    }
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++)
        if (r < m) _mm512_mask_storeu_ps(y + r * jb->ldy, lo, a[r]);
}

/* Columns [begin * ITEM_COLS, end * ITEM_COLS) of Y. */
static void rows_range(void *user, int64_t begin, int64_t end) {
    const rows_job *jb = user;
    const int64_t width = jb->xt ? 16 : TILE;
    int64_t j0 = begin * ITEM_COLS, j1 = end * ITEM_COLS < jb->n ? end * ITEM_COLS : jb->n;
    for (int64_t i0 = 0; i0 < jb->k; i0 += K_BLOCK) {
        int64_t i1 = jb->k - i0 < K_BLOCK ? jb->k : i0 + K_BLOCK;
        for (int64_t j = j0; j < j1; j += width) {
            int lanes = (int)(j1 - j < width ? j1 - j : width);
            if (jb->xt)
                tile16(jb, j, lanes, i0, i1);
            else
                tile(jb, j, lanes, i0, i1);
        }
    }
}

/* All the columns of one pass over M, in work items of ITEM_COLS columns. */
static void run_rows(rows_job *jb) {
    int64_t items = (jb->n + ITEM_COLS - 1) / ITEM_COLS;
    int64_t per_item = jb->m * jb->k * ITEM_COLS;
    int64_t grain = per_item >= PAR_MACS ? 1 : PAR_MACS / per_item;
    kiln__parallel_for(items, grain, rows_range, jb);
}

void kiln__gemm_rows_f32(const float *x, int64_t ldx, int64_t m, const float *w, int64_t ldw,
                         int64_t k, int64_t n, float *y, int64_t ldy) {
    if (n <= 0 || m <= 0) return;
    if (k <= 0) {
        for (int64_t r = 0; r < m; r++)
            for (int64_t j = 0; j < n; j++)
                y[r * ldy + j] = 0.0f;
        return;
    }
    /* 9 to 16 rows: one pass over M with X transposed (a pass of 8 rows and one of the rest
     * when there is no memory for it) */
    float *xt = m > ROWS_MAX && m <= 16 ? malloc(sizeof(float) * 16 * (size_t)k) : NULL;
    if (xt) {
        for (int64_t i = 0; i < k; i++)
            for (int64_t r = 0; r < 16; r++)
                xt[i * 16 + r] = r < m ? x[r * ldx + i] : 0.0f;
        run_rows(&(rows_job){x, w, xt, y, m, k, n, ldx, ldw, ldy});
        free(xt);
        return;
    }
    /* 8 rows per pass over M */
    for (int64_t r0 = 0; r0 < m; r0 += ROWS_MAX) {
        int64_t rows = m - r0 < ROWS_MAX ? m - r0 : ROWS_MAX;
        run_rows(&(rows_job){x + r0 * ldx, w, NULL, y + r0 * ldy, rows, k, n, ldx, ldw, ldy});
    }
}
