/* SPDX-License-Identifier: Apache-2.0 */
/* Batched f32 matrix transposes in 16 x 16 tiles: the layout changes around oneDNN's
 * convolutions (NCHW <-> NHWC activations; OIHW weights into blocks of output channels,
 * where the columns, input channel by kernel position, also become kernel position by
 * input channel: the `group` of kiln__transpose_f32).
 *
 * oneDNN's own reorders move these at ~4-9 GB/s on one thread here; tiles of 16 x 16 read
 * and write whole 64-byte lines, so every line is fetched and written once. Pure data
 * movement: the bits do not depend on how the work is split. */
#include <immintrin.h>

#include "backends/cpu/lib/cpu_features.h"
#include "backends/cpu/lib/dense_f32.h"
#include "base/threads.h"

#define AVX2_TARGET __attribute__((target("avx2")))
#define TILE 16
/* Elements per thread at least: a thread's share must outweigh waking it. */
#define MIN_ELEMS_PER_THREAD 65536

/* Rows d[0..8) (each 8 wide) = the transpose of src (8 x 8, ld lds). */
AVX2_TARGET static inline void t8x8(const float *src, int64_t lds, float *const *d) {
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + lds);
    __m256 r2 = _mm256_loadu_ps(src + 2 * lds), r3 = _mm256_loadu_ps(src + 3 * lds);
    __m256 r4 = _mm256_loadu_ps(src + 4 * lds), r5 = _mm256_loadu_ps(src + 5 * lds);
    __m256 r6 = _mm256_loadu_ps(src + 6 * lds), r7 = _mm256_loadu_ps(src + 7 * lds);
    __m256 u0 = _mm256_unpacklo_ps(r0, r1), u1 = _mm256_unpackhi_ps(r0, r1);
    __m256 u2 = _mm256_unpacklo_ps(r2, r3), u3 = _mm256_unpackhi_ps(r2, r3);
    __m256 u4 = _mm256_unpacklo_ps(r4, r5), u5 = _mm256_unpackhi_ps(r4, r5);
    __m256 u6 = _mm256_unpacklo_ps(r6, r7), u7 = _mm256_unpackhi_ps(r6, r7);
    __m256 s0 = _mm256_shuffle_ps(u0, u2, 0x44), s1 = _mm256_shuffle_ps(u0, u2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(u1, u3, 0x44), s3 = _mm256_shuffle_ps(u1, u3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(u4, u6, 0x44), s5 = _mm256_shuffle_ps(u4, u6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(u5, u7, 0x44), s7 = _mm256_shuffle_ps(u5, u7, 0xEE);
    _mm256_storeu_ps(d[0], _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_storeu_ps(d[1], _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_storeu_ps(d[2], _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_storeu_ps(d[3], _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_storeu_ps(d[4], _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_storeu_ps(d[5], _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_storeu_ps(d[6], _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_storeu_ps(d[7], _mm256_permute2f128_ps(s3, s7, 0x31));
}

/* The destination row of source column c: columns [cols / group][group] become rows
 * [group][cols / group]. */
static inline int64_t dst_row(int64_t c, int64_t cols, int64_t group) {
    return group == 1 ? c : c % group * (cols / group) + c / group;
}

/* Rows [r0, r1) of one matrix: dst[dst_row(c) * rows + r] = src[r * cols + c]. */
AVX2_TARGET static void rows_avx2(const float *src, float *dst, int64_t rows, int64_t cols,
                                  int64_t group, int64_t r0, int64_t r1) {
    int64_t r = r0;
    for (; r + TILE <= r1; r += TILE) {
        int64_t c = 0;
        /* Column c is (ci, cg) of [cols / group][group], stepped without dividing. */
        int64_t ci = 0, cg = 0, inner = cols / group;
        for (; c + TILE <= cols; c += TILE) {
            const float *s = src + r * cols + c;
            float *d[TILE];
            for (int k = 0; k < TILE; k++) {
                d[k] = dst + (cg * inner + ci) * rows + r;
                if (++cg == group) cg = 0, ci++;
            }
            float *d1[8], *d2[8], *d3[8];
            for (int k = 0; k < 8; k++)
                d1[k] = d[8 + k], d2[k] = d[k] + 8, d3[k] = d[8 + k] + 8;
            t8x8(s, cols, d);
            t8x8(s + 8, cols, d1);
            t8x8(s + 8 * cols, cols, d2);
            t8x8(s + 8 * cols + 8, cols, d3);
        }
        for (; c < cols; c++)
            for (int64_t i = r; i < r + TILE; i++)
                dst[dst_row(c, cols, group) * rows + i] = src[i * cols + c];
    }
    for (; r < r1; r++)
        for (int64_t c = 0; c < cols; c++)
            dst[dst_row(c, cols, group) * rows + r] = src[r * cols + c];
}

static void rows_plain(const float *src, float *dst, int64_t rows, int64_t cols, int64_t group,
                       int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++)
        for (int64_t c = 0; c < cols; c++)
            dst[dst_row(c, cols, group) * rows + r] = src[r * cols + c];
}

typedef struct transpose_job {
    const float *src;
    float *dst;
    int64_t rows, cols, group, src_stride, dst_stride;
    int64_t bands; /* bands of TILE rows per matrix */
    bool avx2;
} transpose_job;

/* Items are bands of TILE rows, matrix by matrix. */
static void transpose_range(void *user, int64_t begin, int64_t end) {
    const transpose_job *j = user;
    for (int64_t it = begin; it < end; it++) {
        int64_t b = it / j->bands, r0 = it % j->bands * TILE;
        int64_t r1 = r0 + TILE < j->rows ? r0 + TILE : j->rows;
        const float *s = j->src + b * j->src_stride;
        float *d = j->dst + b * j->dst_stride;
        if (j->avx2)
            rows_avx2(s, d, j->rows, j->cols, j->group, r0, r1);
        else
            rows_plain(s, d, j->rows, j->cols, j->group, r0, r1);
    }
}

void kiln__transpose_f32(const float *src, float *dst, int64_t batch, int64_t rows, int64_t cols,
                         int64_t group, int64_t src_stride, int64_t dst_stride) {
    if (batch <= 0 || rows <= 0 || cols <= 0 || group < 1 || cols % group != 0) return;
    transpose_job j = {.src = src,
                       .dst = dst,
                       .rows = rows,
                       .cols = cols,
                       .group = group,
                       .src_stride = src_stride,
                       .dst_stride = dst_stride,
                       .bands = (rows + TILE - 1) / TILE,
                       .avx2 = kiln__cpu_avx2()};
    int64_t per_item = TILE * cols;
    int64_t grain = per_item >= MIN_ELEMS_PER_THREAD ? 1 : MIN_ELEMS_PER_THREAD / per_item;
    kiln__parallel_for(batch * j.bands, grain, transpose_range, &j);
}
