/* SPDX-License-Identifier: Apache-2.0 */
/* The one thread pool kiln's own work runs on (kernels, fused-kernel tiles, native
 * kernels, BLAS calls on fixed chunks): threads of kiln's (threads_pool.c) that spin
 * briefly after a job and then park, so an idle pool takes no CPU from other work. oneDNN
 * (and OpenBLAS's OpenMP flavour, when a call lets it split) run on OpenMP's team, whose
 * count this file keeps at kiln's.
 *
 * Work is split into `n` items; kiln__parallel_for hands contiguous ranges of items to the
 * pool's threads. Callers must make results independent of how items are split (each item
 * writes its own outputs; reductions combine per-item partials in a fixed order), so that
 * results are bitwise the same for every thread count. Small work (fewer than `grain`
 * items per thread, or one thread configured) runs inline on the calling thread, and so
 * does a call made from inside a parallel range (no nested pools) or while another
 * thread's job holds the pool. */
#ifndef KILN_BASE_THREADS_H
#define KILN_BASE_THREADS_H

#include <stdbool.h>
#include <stdint.h>

/* Runs fn(user, begin, end) over [0, n) split into at most kiln__threads_count() ranges
 * of at least `grain` items each (grain < 1 counts as 1), one per thread, and returns when
 * all have run. n <= 0 runs nothing. fn must not fail in a way that needs unwinding: it
 * records its own errors (e.g. in a per-range slot). Thread-safe. */
typedef void (*kiln__range_fn)(void *user, int64_t begin, int64_t end);
void kiln__parallel_for(int64_t n, int64_t grain, kiln__range_fn fn, void *user);

/* The number of threads kiln__parallel_for may use (>= 1): the last count set by
 * kiln__threads_set_count (the ctx option num_threads), else KILN_NUM_THREADS when it
 * holds a positive integer, else the CPUs the process may run on. Thread-safe. */
int kiln__threads_count(void);

/* Sets the process-wide count (n <= 0: back to the default above, KILN_NUM_THREADS read
 * again), and tells the hook set by kiln__threads_on_count_change. Thread-safe; takes
 * effect for calls that start after it returns. */
void kiln__threads_set_count(int n);

/* Registers fn (NULL: none) to be called with the count each time it is set or first
 * resolved, and at once with the current count when it is already resolved: how a backend
 * keeps a library's own thread count (BLAS's) in step, since base may not call libraries.
 * One hook per process; a later call replaces it, and gets back the one replaced (NULL if
 * none). fn runs on the thread that changes the count and must be thread-safe. */
typedef void (*kiln__threads_count_fn)(int n);
kiln__threads_count_fn kiln__threads_on_count_change(kiln__threads_count_fn fn);

/* True while the calling thread runs inside a parallel range of kiln__parallel_for. */
bool kiln__threads_in_parallel(void);

/* Called before a library that uses OpenMP is opened (oneDNN, OpenBLAS): makes its team
 * park when idle (OMP_WAIT_POLICY=passive, unless the environment says otherwise), since
 * the runtime reads the policy once, when it loads. */
void kiln__threads_before_openmp(void);

/* Makes the next BLAS call on this thread use kiln's count (OpenBLAS's OpenMP flavour
 * follows the calling thread's OpenMP setting, which is per thread). Cheap; call it before
 * each BLAS or oneDNN call. */
void kiln__threads_sync_blas(void);

/* Makes the next BLAS or oneDNN call on this thread use n threads (a primitive built on
 * another thread for the count its caller had). */
void kiln__threads_blas_set(int n);

/* Makes the BLAS calls on this thread run on one thread, until the next
 * kiln__threads_sync_blas: for calls whose results must not depend on how BLAS would
 * split them. */
void kiln__threads_blas_one(void);

#endif
