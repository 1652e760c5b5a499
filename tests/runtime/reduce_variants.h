/* SPDX-License-Identifier: Apache-2.0 */
/* What the float-sum order tests share (test_column_sums.c, test_run_sums.c): data that
 * tells summation orders apart, and the kernel variants every result must agree across. */
#ifndef KILN_TESTS_RUNTIME_REDUCE_VARIANTS_H
#define KILN_TESTS_RUNTIME_REDUCE_VARIANTS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/cpu/eval/eval_reduce.h"
#include "base/threads.h"

/* Value i of a sequence spread over many binades, so that any other association of a sum
 * rounds differently. */
static inline double spread(uint64_t i) {
    uint64_t h = (i + 1) * 0x9E3779B97F4A7C15u;
    double u = (double)(h >> 11) / 9007199254740992.0 * 2 - 1;
    return ldexp(u, (int)((h >> 3) % 24) - 12);
}

/* Variant v < N_VARIANTS: 0 one thread, 1 two threads, 2 three threads, 3 baseline ISA on
 * two threads, 4 one thread reading the leaves of run sums over 4 MiB one at a time (as
 * inputs larger than the last-level cache are read). */
#define N_VARIANTS 5
static inline void set_variant(int v) {
    kiln__threads_set_count(v == 0 || v == 4 ? 1 : v == 2 ? 3 : 2);
    kiln__reduce_force_baseline(v == 3);
    kiln__reduce_set_interleave_limit(v == 4 ? 4 << 20 : 0);
}

static inline void reset_variant(void) {
    kiln__reduce_force_baseline(false);
    kiln__reduce_set_interleave_limit(0);
    kiln__threads_set_count(0);
}

#endif
