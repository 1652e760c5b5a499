/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE /* RTLD_NOLOAD */
/* The thread pool's count and its BLAS/oneDNN side (see threads.h); the pool itself is
 * threads_pool.c. */
#include "base/threads.h"

#include "base/threads_pool.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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
    const char *env = getenv("KILN_NUM_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v > 0) return v > 1024 ? 1024 : (int)v;
    }
    return kiln__pool_cores();
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
    atomic_store(&g_count, n);
    notify(n);
}

/* OpenMP's runtime, as the libraries that use it (oneDNN, OpenBLAS's OpenMP flavour) bring
 * it in: kiln does not link it, so a process that never loads them never has its team.
 * Looked up until found (they load on first use); its functions are per thread. */
typedef struct omp_fns {
    int (*in_parallel)(void);
    int (*get_max_threads)(void);
    void (*set_num_threads)(int);
} omp_fns;
static _Atomic(const omp_fns *) g_omp;

static const omp_fns *omp(void) {
    const omp_fns *o = atomic_load_explicit(&g_omp, memory_order_acquire);
    if (o) return o;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static omp_fns fns;
    pthread_mutex_lock(&mu);
    o = atomic_load_explicit(&g_omp, memory_order_relaxed);
    void *lib = o ? NULL : dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib) {
        void *a = dlsym(lib, "omp_in_parallel"), *b = dlsym(lib, "omp_get_max_threads"),
             *c = dlsym(lib, "omp_set_num_threads");
        if (a && b && c) { /* POSIX: a function's address as void * */
            memcpy(&fns.in_parallel, &a, sizeof a);
            memcpy(&fns.get_max_threads, &b, sizeof b);
            memcpy(&fns.set_num_threads, &c, sizeof c);
            o = &fns;
            atomic_store_explicit(&g_omp, o, memory_order_release);
        }
        dlclose(lib); /* the library that brought it keeps it loaded */
    }
    pthread_mutex_unlock(&mu);
    return o;
}

void kiln__threads_before_openmp(void) {
    /* OpenMP reads its wait policy once, when it loads; its default keeps idle workers
     * spinning for the cores kiln's own pool and other processes need */
    setenv("OMP_WAIT_POLICY", "passive", 0);
}

bool kiln__threads_in_parallel(void) {
    const omp_fns *o = omp();
    if (o && o->in_parallel()) return true; /* inside a library's region (oneDNN's) */
    return kiln__pool_in_range();
}

void kiln__threads_sync_blas(void) { kiln__threads_blas_set(kiln__threads_count()); }

void kiln__threads_blas_set(int n) {
    const omp_fns *o = omp();
    if (o && n >= 1 && o->get_max_threads() != n) o->set_num_threads(n);
}

void kiln__threads_blas_one(void) { kiln__threads_blas_set(1); }

void kiln__parallel_for(int64_t n, int64_t grain, kiln__range_fn fn, void *user) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int64_t t = kiln__threads_count();
    if (t > n / grain) t = n / grain;
    if (t <= 1 || kiln__threads_in_parallel()) {
        fn(user, 0, n);
        return;
    }
    kiln__pool_run(n, t, fn, user);
}
