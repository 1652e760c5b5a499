/* The one thread pool kiln uses for everything (kernels, fused-kernel tiles, BLAS).
 *
 * Work is split into `n` items; kiln__parallel_for hands contiguous ranges of items to the
 * pool's threads. Callers must make results independent of how items are split (each item
 * writes its own outputs; reductions combine per-item partials in a fixed order), so that
 * results are bitwise the same for every thread count. Small work (fewer than `grain`
 * items per thread, or one thread configured) runs inline on the calling thread. */
#ifndef KILN_BASE_THREADS_H
#define KILN_BASE_THREADS_H

#include <stdint.h>

/* Runs fn(user, begin, end) over [0, n) split into ranges of at least `grain` items. */
typedef void (*kiln__range_fn)(void *user, int64_t begin, int64_t end);
void kiln__parallel_for(int64_t n, int64_t grain, kiln__range_fn fn, void *user);

/* The number of threads kiln__parallel_for may use (>= 1): the ctx option or
 * KILN_NUM_THREADS when set, else the cores available. */
int kiln__threads_count(void);

/* Sets the count (n <= 0: back to the default). Also sets BLAS's thread count. */
void kiln__threads_set_count(int n);

#endif
