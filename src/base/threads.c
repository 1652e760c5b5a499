/* The thread pool (see threads.h): OpenMP's team, sized by one process-wide count. */
#include "base/threads.h"

#include <stdatomic.h>
#include <stdlib.h>

#ifdef KILN_HAVE_OPENMP
#include <omp.h>
#endif

/* 0 until resolved. */
static atomic_int g_count;

/* Set once by a backend that keeps a library's own thread count in step (base knows no
 * library). */
static _Atomic(kiln__threads_count_fn) g_on_change;

static void notify(int n) {
    kiln__threads_count_fn fn = atomic_load(&g_on_change);
    if (fn) fn(n);
}

kiln__threads_count_fn kiln__threads_on_count_change(kiln__threads_count_fn fn) {
    kiln__threads_count_fn old = atomic_exchange(&g_on_change, fn);
    int n = atomic_load(&g_count);
    if (fn && n > 0) fn(n);
    return old;
}

static int default_count(void) {
#ifdef KILN_HAVE_OPENMP
    const char *env = getenv("KILN_NUM_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v > 0) return v > 1024 ? 1024 : (int)v;
    }
    int n = omp_get_num_procs();
    return n > 0 ? n : 1;
#else
    return 1;
#endif
}

int kiln__threads_count(void) {
    int n = atomic_load_explicit(&g_count, memory_order_relaxed);
    if (n > 0) return n;
    n = default_count();
    int expected = 0;
    if (atomic_compare_exchange_strong(&g_count, &expected, n)) notify(n);
    return atomic_load(&g_count);
}

void kiln__threads_set_count(int n) {
    if (n <= 0) n = default_count();
#ifndef KILN_HAVE_OPENMP
    n = 1;
#endif
    atomic_store(&g_count, n);
    notify(n);
}

bool kiln__threads_in_parallel(void) {
#ifdef KILN_HAVE_OPENMP
    return omp_in_parallel();
#else
    return false;
#endif
}

void kiln__threads_sync_blas(void) {
#ifdef KILN_HAVE_OPENMP
    int n = kiln__threads_count();
    if (omp_get_max_threads() != n) omp_set_num_threads(n);
#endif
}

void kiln__threads_blas_set(int n) {
#ifdef KILN_HAVE_OPENMP
    if (n >= 1 && omp_get_max_threads() != n) omp_set_num_threads(n);
#else
    (void)n;
#endif
}

void kiln__threads_blas_one(void) {
#ifdef KILN_HAVE_OPENMP
    if (omp_get_max_threads() != 1) omp_set_num_threads(1);
#endif
}

void kiln__parallel_for(int64_t n, int64_t grain, kiln__range_fn fn, void *user) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int64_t t = kiln__threads_count();
    if (t > n / grain) t = n / grain;
    if (t <= 1 || kiln__threads_in_parallel()) {
        fn(user, 0, n);
        return;
    }
#ifdef KILN_HAVE_OPENMP
#pragma omp parallel num_threads((int)t)
    {
        /* Ranges by thread number, so every thread count splits the same way for a given
         * team size, and the split never depends on scheduling. */
        int64_t nt = omp_get_num_threads(), i = omp_get_thread_num();
        int64_t base = n / nt, rem = n % nt;
        int64_t begin = i * base + (i < rem ? i : rem);
        int64_t end = begin + base + (i < rem ? 1 : 0);
        if (begin < end) fn(user, begin, end);
    }
#endif
}
