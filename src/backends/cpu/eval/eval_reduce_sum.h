/* SPDX-License-Identifier: Apache-2.0 */
/* The float sum kernels of the reduce, included by eval_reduce.c alone: a leaf of numpy's
 * pairwise tree along a contiguous run, four neighbouring leaves at once, a block of rows
 * summed in order, and one row block added into another.
 *
 * Each kernel exists twice: built for the baseline ISA and for AVX2 (chosen at run time).
 * Both variants perform the same operations in the same order (lanes are plain arrays of 8,
 * rows are added in order, no contraction), so they give bitwise the same results; AVX2
 * only widens what the compiler vectorizes. */
#ifndef KILN_BACKENDS_CPU_EVAL_REDUCE_SUM_H
#define KILN_BACKENDS_CPU_EVAL_REDUCE_SUM_H

#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define KILN_RED_AVX2 __attribute__((target("avx2")))
#define KILN_RED_HAVE_AVX2 1
#else
#define KILN_RED_HAVE_AVX2 0
#endif

#define RED_STREAM_BYTES 16384 /* a block's sums that fit L1: rows streamed whole */

/* The sum kernels of the baseline ISA (lanes are arrays of 8, rows are added in order) are
 * reduce_sum_base.inc, included by reduce_float.inc with the other kernels of a type. */

#if KILN_RED_HAVE_AVX2
#include <immintrin.h>

/* The same sum kernels with AVX2 intrinsics: a lane array of 8 is one __m256 of f32, or two
 * __m256d of f64; every lane sees the same additions in the same order as reduce_sum_base.inc. */
typedef struct {
    __m256d lo, hi;
} red_v8d;
static KILN_RED_AVX2 inline red_v8d red_load_f64(const double *p) {
    return (red_v8d){_mm256_loadu_pd(p), _mm256_loadu_pd(p + 4)};
}
static KILN_RED_AVX2 inline red_v8d red_add_f64(red_v8d a, red_v8d b) {
    return (red_v8d){_mm256_add_pd(a.lo, b.lo), _mm256_add_pd(a.hi, b.hi)};
}
static KILN_RED_AVX2 inline void red_store_f64(double *p, red_v8d v) {
    _mm256_storeu_pd(p, v.lo);
    _mm256_storeu_pd(p + 4, v.hi);
}
static KILN_RED_AVX2 inline __m256 red_load_f32(const float *p) { return _mm256_loadu_ps(p); }
static KILN_RED_AVX2 inline __m256 red_add_f32(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
static KILN_RED_AVX2 inline void red_store_f32(float *p, __m256 v) { _mm256_storeu_ps(p, v); }
/* Into L2, not L1: the rows of a block share L1 sets (rows a power of two apart). */
static KILN_RED_AVX2 inline void red_prefetch32_f32(const float *p) {
    _mm_prefetch((const char *)p, _MM_HINT_T1);
    _mm_prefetch((const char *)(p + 16), _MM_HINT_T1);
}
static KILN_RED_AVX2 inline void red_prefetch32_f64(const double *p) {
    for (int k = 0; k < 4; k++)
        _mm_prefetch((const char *)(p + 8 * k), _MM_HINT_T1);
}

/* The horizontal sums of four lane arrays, each ((0+1)+(2+3))+((4+5)+(6+7)): for f32 in
 * three horizontal adds and one add of the halves, which pair the lanes exactly so (the same
 * sums; where both addends are NaN, which one's payload survives may differ, as StableHLO
 * allows). */
static KILN_RED_AVX2 inline void red_hsum8x4_f32(__m256 a, __m256 b, __m256 c, __m256 d,
                                                 float s[4]) {
    const __m256 ab = _mm256_hadd_ps(a, b), cd = _mm256_hadd_ps(c, d); /* 0+1, 2+3 per half */
    const __m256 q = _mm256_hadd_ps(ab, cd); /* per half: (0+1)+(2+3) of a, b, c, d */
    _mm_storeu_ps(s, _mm_add_ps(_mm256_castps256_ps128(q), _mm256_extractf128_ps(q, 1)));
}
/* f64: each array is two vectors of 4; stored and added as the baseline does. */
static KILN_RED_AVX2 inline void red_hsum8x4_f64(red_v8d a, red_v8d b, red_v8d c, red_v8d d,
                                                 double s[4]) {
    const red_v8d v[4] = {a, b, c, d};
    for (int k = 0; k < 4; k++) {
        double r[8];
        red_store_f64(r, v[k]);
        s[k] = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    }
}

/* The AVX2 sum kernels of each type (reduce_sum_avx2.inc). */
#define T float
#define VT __m256
#define FN(name) f32_##name
#define VOP(op) red_##op##_f32
#include "backends/cpu/eval/reduce_sum_avx2.inc"
#define T double
#define VT red_v8d
#define FN(name) f64_##name
#define VOP(op) red_##op##_f64
#include "backends/cpu/eval/reduce_sum_avx2.inc"
#endif

#endif
