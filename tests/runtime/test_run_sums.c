/* SPDX-License-Identifier: Apache-2.0 */
/* Float sums along a contiguous run (kiln__reduce_f32/f64 with inner == 1) keep numpy's
 * pairwise order bit for bit: a run of at most 128 elements is a leaf (8 accumulators, each
 * taking every 8th element, combined as ((0+1)+(2+3))+((4+5)+(6+7)), the tail added after;
 * under 8 elements, added in order onto -0.0), a longer one splits where its left half is
 * the largest multiple of 8 not above n/2, and the halves' sums are added. The reference
 * below is written from that description, and every kernel variant must equal it exactly:
 * AVX2 and baseline, 1 to 3 threads, lengths whose trees are complete, uneven or split
 * across threads. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reduce_variants.h"
#include "test_util.h"

#define DEF_REFERENCE(S, T)                                                      \
    static T S##_leaf(const T *x, int64_t n) {                                   \
        if (n < 8) {                                                             \
            T s = (T)-0.0;                                                       \
            for (int64_t i = 0; i < n; i++)                                      \
                s += x[i];                                                       \
            return s;                                                            \
        }                                                                        \
        T r[8];                                                                  \
        for (int l = 0; l < 8; l++) {                                            \
            r[l] = x[l];                                                         \
            for (int64_t i = 8 + l; i < n - n % 8; i += 8)                       \
                r[l] += x[i];                                                    \
        }                                                                        \
        T s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])); \
        for (int64_t i = n - n % 8; i < n; i++)                                  \
            s += x[i];                                                           \
        return s;                                                                \
    }                                                                            \
    static T S##_reference(const T *x, int64_t n) {                              \
        if (n <= 128) return S##_leaf(x, n);                                     \
        const int64_t h = n / 2 - (n / 2) % 8;                                   \
        const T left = S##_reference(x, h);                                      \
        return left + S##_reference(x + h, n - h);                               \
    }

DEF_REFERENCE(f32, float)
DEF_REFERENCE(f64, double)

typedef struct {
    int64_t O, R;
} shape2;

/* Leaves only (1, 7, 8, 128), two leaves (129, 256), four equal leaves (512, 4096 rows),
 * uneven trees where one half splits once more than the other (300, 500, 1000, 2049), runs
 * long enough to be split across threads (the last three), and inputs over 4 MiB, whose
 * leaves variant 4 reads one after another rather than four at once (the last one; f64 the
 * last two). */
static const shape2 SHAPES[] = {{3, 1},    {2, 7},    {1, 8},      {2, 128},   {1, 129},
                                {3, 256},  {1, 300},  {2, 500},    {1, 512},   {2, 1000},
                                {1, 2049}, {5, 4096}, {1, 300007}, {64, 8191}, {1, 1048589}};

#define DEF_ORDER_TEST(S, T)                                                                       \
    Test(run_sums, S##_sums_follow_numpys_pairwise_order_bit_for_bit) {                            \
        for (size_t k = 0; k < sizeof SHAPES / sizeof SHAPES[0]; k++) {                            \
            const shape2 s = SHAPES[k];                                                            \
            T *x = malloc(sizeof(T) * (size_t)(s.O * s.R)), *out = malloc(sizeof(T) * s.O);        \
            for (int64_t i = 0; i < s.O * s.R; i++)                                                \
                x[i] = (T)spread((uint64_t)i + 6);                                                 \
            for (int v = 0; v < N_VARIANTS; v++) {                                                 \
                set_variant(v);                                                                    \
                cr_assert(kiln__reduce_##S(KILN_REGION_ADD, x, s.O, s.R, 1, out, true));           \
                for (int64_t o = 0; o < s.O; o++) {                                                \
                    const T want = S##_reference(x + o * s.R, s.R);                                \
                    cr_assert(memcmp(&out[o], &want, sizeof want) == 0,                            \
                              "[%lld,%lld] variant %d, row %lld: got %a, want %a", (long long)s.O, \
                              (long long)s.R, v, (long long)o, (double)out[o], (double)want);      \
                }                                                                                  \
            }                                                                                      \
            reset_variant();                                                                       \
            free(x);                                                                               \
            free(out);                                                                             \
        }                                                                                          \
    }

DEF_ORDER_TEST(f32, float)
DEF_ORDER_TEST(f64, double)

/* The data above tells orders apart: adding the four leaves of a 512-run left to right, or
 * a whole run in order, rounds differently from the tree in some row, so the tests above
 * could not pass with a wrong combination. */
Test(run_sums, the_data_tells_summation_orders_apart) {
    enum { O = 64, R = 512 };
    float *x = malloc(sizeof(float) * O * R);
    for (int64_t i = 0; i < O * R; i++)
        x[i] = (float)spread((uint64_t)i + 6);
    int leaves_differ = 0, naive_differs = 0;
    for (int64_t o = 0; o < O; o++) {
        const float *row = x + o * R, tree = f32_reference(row, R);
        const float chained =
            ((f32_leaf(row, 128) + f32_leaf(row + 128, 128)) + f32_leaf(row + 256, 128)) +
            f32_leaf(row + 384, 128);
        float naive = row[0];
        for (int64_t i = 1; i < R; i++)
            naive += row[i];
        leaves_differ += memcmp(&chained, &tree, sizeof tree) != 0;
        naive_differs += memcmp(&naive, &tree, sizeof tree) != 0;
    }
    cr_expect_gt(leaves_differ, 0, "no row tells the leaves' combination apart");
    cr_expect_gt(naive_differs, 0, "no row tells the pairwise tree from an in-order sum");
    free(x);
}
