/* SPDX-License-Identifier: Apache-2.0 */
/* Float sums over rows (kiln__reduce_f32/f64 with inner > 1) keep their documented order bit
 * for bit: each column's rows are added in blocks of 16, in order, and the blocks' sums are
 * combined as a binary counter does, i.e. complete pairwise trees of 1, 2, 4, ... blocks,
 * largest first, added left to right. The reference below is written from that description
 * (recursively, not by streaming), and every kernel variant must equal it exactly: AVX2 and
 * baseline, 1 to 3 threads, row counts with and without a partial last block (the AVX2
 * kernel prefetches the next block's rows; a partial one must not be read past). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reduce_variants.h"
#include "test_util.h"

#define BLOCK 16

#define DEF_REFERENCE(S, T)                                                                     \
    /* Rows [r0, r1) of column c, added in order. */                                            \
    static T S##_block_sum(const T *x, int64_t ld, int64_t c, int64_t r0, int64_t r1) {         \
        T s = x[r0 * ld + c];                                                                   \
        for (int64_t r = r0 + 1; r < r1; r++)                                                   \
            s += x[r * ld + c];                                                                 \
        return s;                                                                               \
    }                                                                                           \
    /* The complete pairwise tree over `count` (a power of two) blocks from block b. */         \
    static T S##_tree(const T *x, int64_t ld, int64_t c, int64_t R, int64_t b, int64_t count) { \
        if (count == 1) {                                                                       \
            const int64_t r1 = (b + 1) * BLOCK < R ? (b + 1) * BLOCK : R;                       \
            return S##_block_sum(x, ld, c, b * BLOCK, r1);                                      \
        }                                                                                       \
        const T left = S##_tree(x, ld, c, R, b, count / 2);                                     \
        return left + S##_tree(x, ld, c, R, b + count / 2, count / 2);                          \
    }                                                                                           \
    static T S##_reference(const T *x, int64_t R, int64_t ld, int64_t c) {                      \
        if (R == 0) return (T)-0.0;                                                             \
        const int64_t blocks = (R + BLOCK - 1) / BLOCK;                                         \
        int64_t top = 1;                                                                        \
        while (top * 2 <= blocks)                                                               \
            top *= 2;                                                                           \
        T acc = 0;                                                                              \
        bool first = true;                                                                      \
        int64_t b = 0;                                                                          \
        for (int64_t size = top; size >= 1; size /= 2) {                                        \
            if (!(blocks & size)) continue;                                                     \
            const T t = S##_tree(x, ld, c, R, b, size);                                         \
            acc = first ? t : acc + t;                                                          \
            first = false;                                                                      \
            b += size;                                                                          \
        }                                                                                       \
        return acc;                                                                             \
    }

DEF_REFERENCE(f32, float)
DEF_REFERENCE(f64, double)

typedef struct {
    int64_t O, R, I;
} shape3;

/* Row counts around the block and the prefetch's edges: one block, one row more, a partial
 * next block, exact powers of two of blocks, and odd widths for the vector tails; the last
 * three are large enough to be split across threads. */
static const shape3 SHAPES[] = {{1, 16, 40},  {1, 17, 33},   {2, 31, 67},    {1, 32, 64},
                                {1, 33, 9},   {3, 100, 45},  {1, 257, 96},   {1, 250, 131},
                                {2, 1000, 7}, {1, 520, 300}, {1, 600, 1000}, {2, 300, 260}};

Test(column_sums, f32_sums_follow_the_documented_order_bit_for_bit) {
    for (size_t k = 0; k < sizeof SHAPES / sizeof SHAPES[0]; k++) {
        const shape3 s = SHAPES[k];
        const int64_t n = s.O * s.R * s.I;
        float *x = malloc(sizeof(float) * (size_t)n),
              *out = malloc(sizeof(float) * (size_t)(s.O * s.I));
        for (int64_t i = 0; i < n; i++)
            x[i] = (float)spread((uint64_t)i);
        for (int v = 0; v < N_VARIANTS; v++) {
            set_variant(v);
            cr_assert(kiln__reduce_f32(KILN_REGION_ADD, x, s.O, s.R, s.I, out, true));
            for (int64_t o = 0; o < s.O; o++)
                for (int64_t c = 0; c < s.I; c++) {
                    const float want = f32_reference(x + o * s.R * s.I, s.R, s.I, c);
                    const float got = out[o * s.I + c];
                    cr_assert(memcmp(&got, &want, sizeof got) == 0,
                              "[%lld,%lld,%lld] variant %d at (%lld,%lld): got %a, want %a",
                              (long long)s.O, (long long)s.R, (long long)s.I, v, (long long)o,
                              (long long)c, got, want);
                }
        }
        reset_variant();
        free(x);
        free(out);
    }
}

Test(column_sums, f64_sums_follow_the_documented_order_bit_for_bit) {
    for (size_t k = 0; k < sizeof SHAPES / sizeof SHAPES[0]; k++) {
        const shape3 s = SHAPES[k];
        const int64_t n = s.O * s.R * s.I;
        double *x = malloc(sizeof(double) * (size_t)n);
        double *out = malloc(sizeof(double) * (size_t)(s.O * s.I));
        for (int64_t i = 0; i < n; i++)
            x[i] = spread((uint64_t)i);
        for (int v = 0; v < N_VARIANTS; v++) {
            set_variant(v);
            cr_assert(kiln__reduce_f64(KILN_REGION_ADD, x, s.O, s.R, s.I, out, true));
            for (int64_t o = 0; o < s.O; o++)
                for (int64_t c = 0; c < s.I; c++) {
                    const double want = f64_reference(x + o * s.R * s.I, s.R, s.I, c);
                    const double got = out[o * s.I + c];
                    cr_assert(memcmp(&got, &want, sizeof got) == 0,
                              "[%lld,%lld,%lld] variant %d at (%lld,%lld): got %a, want %a",
                              (long long)s.O, (long long)s.R, (long long)s.I, v, (long long)o,
                              (long long)c, got, want);
                }
        }
        reset_variant();
        free(x);
        free(out);
    }
}

/* The data above tells orders apart: a plain left-to-right sum differs from the blocked one
 * in some column, so the tests above could not pass with the wrong order. */
Test(column_sums, the_data_tells_summation_orders_apart) {
    const shape3 s = {1, 1000, 7};
    float *x = malloc(sizeof(float) * (size_t)(s.R * s.I));
    for (int64_t i = 0; i < s.R * s.I; i++)
        x[i] = (float)spread((uint64_t)i);
    int differ = 0;
    for (int64_t c = 0; c < s.I; c++) {
        float naive = x[c];
        for (int64_t r = 1; r < s.R; r++)
            naive += x[r * s.I + c];
        const float blocked = f32_reference(x, s.R, s.I, c);
        differ += memcmp(&naive, &blocked, sizeof naive) != 0;
    }
    cr_expect_gt(differ, 0, "no column tells the orders apart");
    free(x);
}
