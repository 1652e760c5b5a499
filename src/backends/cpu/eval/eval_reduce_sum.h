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

/* The sum kernels of the baseline ISA: lanes are arrays of 8, rows are added in order. */
#define DEF_SUM_BASE(S, T, V, ATTR)                                                             \
    static ATTR T S##_sum_leaf##V(const T *restrict x, int64_t n) {                             \
        if (n < 8) {                                                                            \
            T s = (T)-0.0;                                                                      \
            for (int64_t i = 0; i < n; i++)                                                     \
                s += x[i];                                                                      \
            return s;                                                                           \
        }                                                                                       \
        {                                                                                       \
            T r[8];                                                                             \
            for (int l = 0; l < 8; l++)                                                         \
                r[l] = x[l];                                                                    \
            int64_t i = 8;                                                                      \
            for (; i + 8 <= n; i += 8)                                                          \
                for (int l = 0; l < 8; l++)                                                     \
                    r[l] += x[i + l];                                                           \
            T s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));            \
            for (; i < n; i++)                                                                  \
                s += x[i];                                                                      \
            return s;                                                                           \
        }                                                                                       \
    }                                                                                           \
    /* s[k] = sum_leaf(x[k], n[k]) for four leaves of at least 8 elements (the AVX2 variant     \
     * advances their four chains of additions together; here one leaf after another). */       \
    static ATTR void S##_sum_leaf4##V(const T *const x[4], const int64_t n[4], T s[4]) {        \
        for (int k = 0; k < 4; k++)                                                             \
            s[k] = S##_sum_leaf##V(x[k], n[k]);                                                 \
    }                                                                                           \
    /* t = x[0] + x[1] + ... + x[rows-1] (rows in order), four rows per pass over t.            \
     * pf_rows: see the AVX2 variant (a hint only; this fallback ignores it). */                \
    static ATTR void S##_sum_block##V(const T *restrict x, int64_t rows, int64_t ld, int64_t w, \
                                      T *restrict t, int64_t pf_rows) {                         \
        (void)pf_rows;                                                                          \
        int64_t r = 1;                                                                          \
        if (rows >= 4) {                                                                        \
            const T *restrict a = x, *restrict b = x + ld, *restrict c = x + 2 * ld,            \
                              *restrict d = x + 3 * ld;                                         \
            for (int64_t i = 0; i < w; i++)                                                     \
                t[i] = ((a[i] + b[i]) + c[i]) + d[i];                                           \
            r = 4;                                                                              \
        } else {                                                                                \
            for (int64_t i = 0; i < w; i++)                                                     \
                t[i] = x[i];                                                                    \
        }                                                                                       \
        for (; r + 4 <= rows; r += 4) {                                                         \
            const T *restrict a = x + r * ld, *restrict b = a + ld, *restrict c = b + ld,       \
                              *restrict d = c + ld;                                             \
            for (int64_t i = 0; i < w; i++)                                                     \
                t[i] = (((t[i] + a[i]) + b[i]) + c[i]) + d[i];                                  \
        }                                                                                       \
        for (; r < rows; r++) {                                                                 \
            const T *restrict a = x + r * ld;                                                   \
            for (int64_t i = 0; i < w; i++)                                                     \
                t[i] += a[i];                                                                   \
        }                                                                                       \
    }                                                                                           \
    static ATTR void S##_add_into##V(T *restrict d, const T *restrict s, int64_t w) {           \
        for (int64_t i = 0; i < w; i++)                                                         \
            d[i] += s[i];                                                                       \
    }

#if KILN_RED_HAVE_AVX2
#include <immintrin.h>

/* The same sum kernels with AVX2 intrinsics: a lane array of 8 is one __m256 of f32, or two
 * __m256d of f64; every lane sees the same additions in the same order as DEF_SUM_BASE. */
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
#define DEF_SUM_AVX2(S, T, VT)                                                                     \
    static KILN_RED_AVX2 T S##_hsum8(VT v) {                                                       \
        T r[8];                                                                                    \
        red_store_##S(r, v);                                                                       \
        return ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));                  \
    }                                                                                              \
    static KILN_RED_AVX2 T S##_sum_leaf_avx2(const T *restrict x, int64_t n) {                     \
        if (n < 8) {                                                                               \
            T s = (T)-0.0;                                                                         \
            for (int64_t i = 0; i < n; i++)                                                        \
                s += x[i];                                                                         \
            return s;                                                                              \
        }                                                                                          \
        VT r = red_load_##S(x);                                                                    \
        int64_t i = 8;                                                                             \
        for (; i + 8 <= n; i += 8)                                                                 \
            r = red_add_##S(r, red_load_##S(x + i));                                               \
        T s = S##_hsum8(r);                                                                        \
        for (; i < n; i++)                                                                         \
            s += x[i];                                                                             \
        return s;                                                                                  \
    }                                                                                              \
    /* sum_leaf4 with the four chains of additions advancing together (one chain leaves the        \
     * adder waiting on its latency). Leaves of 128 (any run 128 times a power of two long)        \
     * share their horizontal sums. */                                                             \
    static KILN_RED_AVX2 void S##_sum_leaf4_avx2(const T *const x[4], const int64_t n[4],          \
                                                 T s[4]) {                                         \
        const T *const a = x[0], *const b = x[1], *const c = x[2], *const d = x[3];                \
        VT r0 = red_load_##S(a), r1 = red_load_##S(b), r2 = red_load_##S(c), r3 = red_load_##S(d); \
        if (n[0] == 128 && n[1] == 128 && n[2] == 128 && n[3] == 128) {                            \
            for (int64_t i = 8; i < 128; i += 8) {                                                 \
                r0 = red_add_##S(r0, red_load_##S(a + i));                                         \
                r1 = red_add_##S(r1, red_load_##S(b + i));                                         \
                r2 = red_add_##S(r2, red_load_##S(c + i));                                         \
                r3 = red_add_##S(r3, red_load_##S(d + i));                                         \
            }                                                                                      \
            red_hsum8x4_##S(r0, r1, r2, r3, s);                                                    \
            return;                                                                                \
        }                                                                                          \
        int64_t m = n[0];                                                                          \
        for (int k = 1; k < 4; k++)                                                                \
            m = n[k] < m ? n[k] : m;                                                               \
        int64_t i = 8;                                                                             \
        for (; i + 8 <= m; i += 8) {                                                               \
            r0 = red_add_##S(r0, red_load_##S(a + i));                                             \
            r1 = red_add_##S(r1, red_load_##S(b + i));                                             \
            r2 = red_add_##S(r2, red_load_##S(c + i));                                             \
            r3 = red_add_##S(r3, red_load_##S(d + i));                                             \
        }                                                                                          \
        VT r[4] = {r0, r1, r2, r3};                                                                \
        for (int k = 0; k < 4; k++) {                                                              \
            int64_t j = i;                                                                         \
            for (; j + 8 <= n[k]; j += 8)                                                          \
                r[k] = red_add_##S(r[k], red_load_##S(x[k] + j));                                  \
            T t = S##_hsum8(r[k]);                                                                 \
            for (; j < n[k]; j++)                                                                  \
                t += x[k][j];                                                                      \
            s[k] = t;                                                                              \
        }                                                                                          \
    }                                                                                              \
    /* t = x[0] + ... + x[rows-1] in order. When t fits L1 the rows stream one after another.      \
     * Wider, all rows of a block go in one pass over strips of columns; walking down 16 rows      \
     * at once defeats the hardware prefetchers (16 streams, rows often a power of two apart),     \
     * so each row's piece of the following block (the first pf_rows rows after this block,        \
     * which the caller knows exist) is prefetched into L2 while this one is summed.               \
     * Prefetches change no result. */                                                             \
    static KILN_RED_AVX2 void S##_sum_block_avx2(const T *restrict x, int64_t rows, int64_t ld,    \
                                                 int64_t w, T *restrict t, int64_t pf_rows) {      \
        if (w * (int64_t)sizeof(T) <= RED_STREAM_BYTES) {                                          \
            /* t fits L1: stream the rows one after another, t += row (sequential reads the        \
             * prefetchers follow), the same additions in the same order per column. */            \
            (void)pf_rows;                                                                         \
            int64_t i = 0;                                                                         \
            for (; i + 8 <= w; i += 8)                                                             \
                red_store_##S(t + i, red_load_##S(x + i));                                         \
            for (; i < w; i++)                                                                     \
                t[i] = x[i];                                                                       \
            for (int64_t r = 1; r < rows; r++) {                                                   \
                const T *restrict a = x + r * ld;                                                  \
                for (i = 0; i + 32 <= w; i += 32) {                                                \
                    red_store_##S(t + i, red_add_##S(red_load_##S(t + i), red_load_##S(a + i)));   \
                    red_store_##S(t + i + 8,                                                       \
                                  red_add_##S(red_load_##S(t + i + 8), red_load_##S(a + i + 8)));  \
                    red_store_##S(t + i + 16, red_add_##S(red_load_##S(t + i + 16),                \
                                                          red_load_##S(a + i + 16)));              \
                    red_store_##S(t + i + 24, red_add_##S(red_load_##S(t + i + 24),                \
                                                          red_load_##S(a + i + 24)));              \
                }                                                                                  \
                for (; i + 8 <= w; i += 8)                                                         \
                    red_store_##S(t + i, red_add_##S(red_load_##S(t + i), red_load_##S(a + i)));   \
                for (; i < w; i++)                                                                 \
                    t[i] += a[i];                                                                  \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        const int64_t ahead = rows * ld;                                                           \
        int64_t i = 0;                                                                             \
        for (; i + 32 <= w; i += 32) {                                                             \
            const T *restrict a = x + i;                                                           \
            if (pf_rows > 0) red_prefetch32_##S(a + ahead);                                        \
            VT s0 = red_load_##S(a), s1 = red_load_##S(a + 8), s2 = red_load_##S(a + 16),          \
               s3 = red_load_##S(a + 24);                                                          \
            for (int64_t r = 1; r < rows; r++) {                                                   \
                a += ld;                                                                           \
                if (r < pf_rows) red_prefetch32_##S(a + ahead);                                    \
                s0 = red_add_##S(s0, red_load_##S(a));                                             \
                s1 = red_add_##S(s1, red_load_##S(a + 8));                                         \
                s2 = red_add_##S(s2, red_load_##S(a + 16));                                        \
                s3 = red_add_##S(s3, red_load_##S(a + 24));                                        \
            }                                                                                      \
            red_store_##S(t + i, s0);                                                              \
            red_store_##S(t + i + 8, s1);                                                          \
            red_store_##S(t + i + 16, s2);                                                         \
            red_store_##S(t + i + 24, s3);                                                         \
        }                                                                                          \
        for (; i + 8 <= w; i += 8) {                                                               \
            const T *restrict a = x + i;                                                           \
            VT s0 = red_load_##S(a);                                                               \
            for (int64_t r = 1; r < rows; r++) {                                                   \
                a += ld;                                                                           \
                s0 = red_add_##S(s0, red_load_##S(a));                                             \
            }                                                                                      \
            red_store_##S(t + i, s0);                                                              \
        }                                                                                          \
        for (; i < w; i++) {                                                                       \
            T s = x[i];                                                                            \
            for (int64_t r = 1; r < rows; r++)                                                     \
                s += x[r * ld + i];                                                                \
            t[i] = s;                                                                              \
        }                                                                                          \
    }                                                                                              \
    static KILN_RED_AVX2 void S##_add_into_avx2(T *restrict d, const T *restrict s, int64_t w) {   \
        int64_t i = 0;                                                                             \
        for (; i + 8 <= w; i += 8)                                                                 \
            red_store_##S(d + i, red_add_##S(red_load_##S(d + i), red_load_##S(s + i)));           \
        for (; i < w; i++)                                                                         \
            d[i] += s[i];                                                                          \
    }
DEF_SUM_AVX2(f32, float, __m256)
DEF_SUM_AVX2(f64, double, red_v8d)
#endif

#endif
