/* SPDX-License-Identifier: Apache-2.0 */
/* kiln's thread pool (base/threads_pool.c behind kiln__parallel_for): ranges split by
 * number, the same for a given count; idle workers park (an idle pool takes no CPU);
 * callers on several threads at once each get their work done (one of them on the pool,
 * the others inline); a child of fork starts workers of its own. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/threads.h"
#include "test_util.h"

#define N 1000

typedef struct record {
    _Atomic int hits[N];
    _Atomic int64_t begins[64], ends[64];
    _Atomic int calls;
} record;

static void mark(void *user, int64_t b, int64_t e) {
    record *r = user;
    int k = atomic_fetch_add(&r->calls, 1);
    if (k < 64) atomic_store(&r->begins[k], b), atomic_store(&r->ends[k], e);
    for (int64_t i = b; i < e; i++)
        atomic_fetch_add(&r->hits[i], 1);
}

static bool covered_once(record *r, int64_t n) {
    for (int64_t i = 0; i < N; i++)
        if (atomic_load(&r->hits[i]) != (i < n ? 1 : 0)) return false;
    return true;
}

Test(thread_pool, ranges_are_split_by_number) {
    for (int t = 2; t <= 5; t++) {
        kiln__threads_set_count(t);
        for (int rep = 0; rep < 20; rep++) {
            record *r = calloc(1, sizeof *r);
            cr_assert_not_null(r);
            kiln__parallel_for(10, 1, mark, r);
            cr_assert(covered_once(r, 10));
            cr_assert_eq(atomic_load(&r->calls), t, "%d ranges for %d threads", r->calls, t);
            /* range i of t: 10 / t items, one more for the first 10 % t */
            for (int k = 0; k < t; k++) {
                int64_t b = atomic_load(&r->begins[k]), e = atomic_load(&r->ends[k]), at = 0;
                bool found = false;
                for (int i = 0; i < t && !found; i++) {
                    int64_t len = 10 / t + (i < 10 % t ? 1 : 0);
                    if (at == b) {
                        found = true;
                        cr_assert_eq(e - b, len, "range %d", i);
                    }
                    at += len;
                }
                cr_assert(found, "range [%lld, %lld) is not one of %d's", (long long)b,
                          (long long)e, t);
            }
            free(r);
        }
    }
    kiln__threads_set_count(0);
}

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void work(void *user, int64_t b, int64_t e) {
    volatile double *sink = user, x = 0;
    for (int64_t i = b * 1000; i < e * 1000; i++)
        x += (double)i * 1e-9;
    *sink += x;
}

Test(thread_pool, idle_workers_take_no_cpu) {
    kiln__threads_set_count(4); /* more workers than this machine may have cores */
    volatile double sink = 0;
    for (int i = 0; i < 50; i++)
        kiln__parallel_for(400, 1, work, (void *)&sink);
    usleep(20000); /* past the workers' short spin */
    double before = cpu_seconds();
    usleep(200000);
    double used = cpu_seconds() - before;
    cr_assert_lt(used, 0.02, "an idle pool used %.3f s of CPU in 0.2 s", used);
    /* and they wake for the next job */
    record *r = calloc(1, sizeof *r);
    cr_assert_not_null(r);
    kiln__parallel_for(N, 1, mark, r);
    cr_assert(covered_once(r, N));
    cr_assert_eq(atomic_load(&r->calls), 4);
    free(r);
    kiln__threads_set_count(0);
}

static void *caller(void *arg) {
    (void)arg;
    for (int i = 0; i < 200; i++) {
        record *r = calloc(1, sizeof *r);
        if (!r) return (void *)1;
        kiln__parallel_for(N, 1, mark, r);
        bool ok = covered_once(r, N);
        free(r);
        if (!ok) return (void *)1;
    }
    return NULL;
}

Test(thread_pool, callers_on_several_threads_each_get_their_work_done) {
    kiln__threads_set_count(3);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, caller, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *rv = (void *)1;
        pthread_join(th[i], &rv);
        cr_assert_null(rv, "caller %d saw an item run twice or never", i);
    }
    kiln__threads_set_count(0);
}

Test(thread_pool, a_forked_child_starts_its_own_workers) {
    kiln__threads_set_count(2);
    record *r = calloc(1, sizeof *r);
    cr_assert_not_null(r);
    kiln__parallel_for(N, 1, mark, r); /* the parent's workers exist now */
    cr_assert(covered_once(r, N));
    free(r);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        record *c = calloc(1, sizeof *c);
        if (!c) _exit(2);
        kiln__parallel_for(N, 1, mark, c);
        _exit(covered_once(c, N) && atomic_load(&c->calls) == 2 ? 0 : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's work: status %d", status);
    kiln__threads_set_count(0);
}
