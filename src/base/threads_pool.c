/* SPDX-License-Identifier: Apache-2.0 */
/* kiln's thread pool (threads.h): workers of its own that spin a little after each job and
 * then park on a futex, so that an idle pool costs no CPU (OpenMP's workers spin for the
 * cores other work needs: the reason this pool exists).
 *
 * One job at a time: a caller takes the pool's lock, publishes the job (function, range,
 * thread count) and bumps `gen`; every started worker sees the new generation, runs its
 * range when its number is below the job's thread count, and acknowledges. The caller runs
 * range 0 itself and returns when all have acknowledged, so that the job's fields are never
 * rewritten while a worker may still read them. A caller that finds the pool busy (another
 * thread's job) runs its work inline: the ranges never affect results (threads.h). */
#define _GNU_SOURCE /* syscall, sched_getaffinity */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/threads_pool.h"

#define MAX_WORKERS 1023
/* Pause loops (about 50 ns each) before parking: a worker stays awake for the next op of a
 * program (microseconds later), not for a program that has returned; a caller waits for
 * real work, and parks after about 0.2 ms of it. */
#define SPIN_WORKER 1000
#define SPIN_CALLER 4000

static struct {
    pthread_mutex_t mu; /* one job at a time; guards starting workers */
    int n_workers;      /* started, besides the callers */
    atomic_uint gen;    /* the job's number; workers wait on it */
    atomic_uint acks;   /* workers done with this job; the caller waits on it */
    atomic_int caller_parked;
    /* the job, written before gen is bumped, read by workers after, kept until every
     * worker has acknowledged it */
    kiln__range_fn fn;
    void *user;
    int64_t n, t;
    int expect; /* the acknowledgements the job waits for: every worker's */
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local bool in_range;

static void pause_cpu(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void futex_wait(atomic_uint *word, unsigned seen) {
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void futex_wake(atomic_uint *word) {
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Range i of t over [0, n): by number, so a given t always splits the same way. */
static void run_part(kiln__range_fn fn, void *user, int64_t n, int64_t t, int64_t i) {
    int64_t base = n / t, rem = n % t;
    int64_t begin = i * base + (i < rem ? i : rem);
    int64_t end = begin + base + (i < rem ? 1 : 0);
    if (begin < end) fn(user, begin, end);
}

/* arg: the worker's number (1...) and the generation it starts at (no job runs while a
 * worker is started, so it is the generation of the next job minus one). */
static void *worker(void *arg) {
    const int64_t me = (int64_t)((uintptr_t)arg >> 32);
    unsigned seen = (unsigned)((uintptr_t)arg & 0xffffffffu);
    in_range = true;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&pool.gen, memory_order_acquire)) == seen) {
            if (++spins < SPIN_WORKER)
                pause_cpu();
            else
                futex_wait(&pool.gen, seen);
        }
        seen = g;
        int expect = pool.expect;
        if (me < pool.t) run_part(pool.fn, pool.user, pool.n, pool.t, me);
        /* after this the job may be replaced: nothing of it is read below */
        unsigned done = atomic_fetch_add(&pool.acks, 1) + 1;
        if ((int)done == expect && atomic_load(&pool.caller_parked)) futex_wake(&pool.acks);
    }
    return NULL;
}

/* Starts workers up to `want` (pool.mu held); as many as could be started. */
static int grow(int want) {
    if (want > MAX_WORKERS) want = MAX_WORKERS;
    while (pool.n_workers < want) {
        pthread_attr_t at;
        pthread_t th;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        /* a worker starts at the current generation: it must not run an old job */
        uintptr_t arg = (uintptr_t)(pool.n_workers + 1) << 32 | atomic_load(&pool.gen);
        int rc = pthread_create(&th, &at, worker, (void *)arg);
        pthread_attr_destroy(&at);
        if (rc != 0) break;
        pool.n_workers++;
    }
    return pool.n_workers;
}

/* A child of fork has none of the workers: it starts its own when it needs them. */
static void after_fork_child(void) {
    pthread_mutex_init(&pool.mu, NULL);
    pool.n_workers = 0;
    atomic_store(&pool.acks, 0);
    atomic_store(&pool.caller_parked, 0);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void register_fork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

bool kiln__pool_in_range(void) { return in_range; }

int kiln__pool_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void kiln__pool_run(int64_t n, int64_t t, kiln__range_fn fn, void *user) {
    pthread_once(&fork_once, register_fork);
    if (pthread_mutex_trylock(&pool.mu) != 0) { /* another thread's job: run inline */
        fn(user, 0, n);
        return;
    }
    int workers = grow((int)t - 1);
    if (workers + 1 < t) t = workers + 1;
    if (t <= 1) {
        pthread_mutex_unlock(&pool.mu);
        fn(user, 0, n);
        return;
    }
    pool.fn = fn, pool.user = user, pool.n = n, pool.t = t, pool.expect = workers;
    atomic_store_explicit(&pool.acks, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool.gen, 1, memory_order_release);
    futex_wake(&pool.gen); /* parked workers; spinning ones see the new generation */
    in_range = true;
    run_part(fn, user, n, t, 0);
    in_range = false;
    int spins = 0;
    unsigned done;
    while ((int)(done = atomic_load_explicit(&pool.acks, memory_order_acquire)) < workers) {
        if (++spins < SPIN_CALLER) {
            pause_cpu();
            continue;
        }
        atomic_store(&pool.caller_parked, 1); /* then look again: a worker may have missed it */
        done = atomic_load(&pool.acks);
        if ((int)done < workers) futex_wait(&pool.acks, done);
        atomic_store(&pool.caller_parked, 0);
    }
    pthread_mutex_unlock(&pool.mu);
}
