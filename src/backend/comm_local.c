/* SPDX-License-Identifier: Apache-2.0 */
/* The local communicator (comm.h): processes that are threads of this OS process and share
 * its memory. Each primitive is a rendezvous of every process: each posts where its bytes
 * are and what op it runs, waits until all have posted, checks that all run the same op,
 * copies what it receives straight from the others' buffers, and waits again until all
 * have copied (so that no buffer goes away while another process reads it). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend/comm.h"
#include "base/alloc.h"
#include "base/ctx_internal.h"

typedef struct post {
    const void *send;
    size_t nbytes;
    const char *what;
    uint64_t sig;
} post;

typedef struct local {
    kiln_comm base;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int32_t arrived;
    uint64_t generation;
    bool broken;
    kiln_status broken_status;
    char why[512];
    post posts[KILN_COMM_MAX_PROCESSES];
} local;

/* Marks the communicator broken (the first reason stays) and wakes every waiter. Called
 * with the lock held. */
static void break_locked(local *l, kiln_status s, const char *why) {
    if (!l->broken) {
        l->broken = true;
        l->broken_status = s;
        snprintf(l->why, sizeof l->why, "%s", why);
    }
    pthread_cond_broadcast(&l->cv);
}

static kiln_status broken_error(kiln_ctx *cx, local *l, const char *what) {
    return kiln_ctx_set_error(cx, l->broken_status, "%s: %s", what, l->why);
}

/* Waits until every process has arrived here; DEADLINE_EXCEEDED after the timeout (and
 * the others fail too), ABORTED when another process failed. */
static kiln_status barrier(kiln_ctx *cx, local *l, int32_t process, const char *what) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    int64_t ms = l->base.timeout_ms;
    deadline.tv_sec += (time_t)(ms / 1000);
    deadline.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&l->mu);
    if (l->broken) {
        pthread_mutex_unlock(&l->mu);
        return broken_error(cx, l, what);
    }
    uint64_t gen = l->generation;
    if (++l->arrived == l->base.n_processes) {
        l->arrived = 0;
        l->generation++;
        pthread_cond_broadcast(&l->cv);
        pthread_mutex_unlock(&l->mu);
        return KILN_OK;
    }
    while (l->generation == gen && !l->broken) {
        int rc = ms > 0 ? pthread_cond_timedwait(&l->cv, &l->mu, &deadline)
                        : pthread_cond_wait(&l->cv, &l->mu);
        if (rc == ETIMEDOUT && l->generation == gen && !l->broken) {
            char why[400];
            snprintf(why, sizeof why,
                     "process %d waited %lld ms for the other %d processes to reach a "
                     "collective; %d arrived (a process runs a different program, or stopped)",
                     (int)process, (long long)ms, (int)l->base.n_processes - 1,
                     (int)l->arrived - 1);
            break_locked(l, KILN_DEADLINE_EXCEEDED, why);
        }
    }
    bool ok = l->generation != gen;
    pthread_mutex_unlock(&l->mu);
    return ok ? KILN_OK : broken_error(cx, l, what);
}

/* Posts, waits for all, and checks that every process runs the same op. */
static kiln_status arrive(kiln_ctx *cx, local *l, int32_t process, const void *send, size_t nbytes,
                          const char *what, uint64_t sig) {
    l->posts[process] = (post){.send = send, .nbytes = nbytes, .what = what, .sig = sig};
    kiln_status s = barrier(cx, l, process, what);
    if (s != KILN_OK) return s;
    for (int32_t p = 0; p < l->base.n_processes; p++)
        if (l->posts[p].sig != sig) {
            int32_t a = p < process ? p : process, b = p < process ? process : p;
            kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "the processes disagree on a collective: process %d runs %s, "
                               "process %d runs %s",
                               (int)a, l->posts[a].what, (int)b, l->posts[b].what);
            /* the others' descriptions live in their frames: wait until every process has
             * read them before leaving (and so letting its frame go) */
            barrier(cx, l, process, what);
            return KILN_INVALID_ARGUMENT;
        }
    return KILN_OK;
}

static kiln_status local_all_gather(kiln_ctx *cx, kiln_comm *c, int32_t process,
                                    const int32_t *members, int32_t n_members, const void *send,
                                    size_t nbytes, void *recv, const char *what, uint64_t sig) {
    local *l = (local *)c;
    kiln_status s = arrive(cx, l, process, send, nbytes, what, sig);
    if (s != KILN_OK) return s;
    for (int32_t k = 0; k < n_members && s == KILN_OK; k++) {
        const post *from = &l->posts[members[k]];
        if (from->nbytes != nbytes)
            s = kiln_ctx_set_error(cx, KILN_INTERNAL, "%s: internal: %zu bytes from process %d",
                                   what, from->nbytes, (int)members[k]);
        else if (nbytes)
            memcpy((unsigned char *)recv + (size_t)k * nbytes, from->send, nbytes);
    }
    kiln_status s2 = barrier(cx, l, process, what);
    return s != KILN_OK ? s : s2;
}

static kiln_status local_all_to_all(kiln_ctx *cx, kiln_comm *c, int32_t process,
                                    const int32_t *members, int32_t n_members, const void *send,
                                    size_t chunk_bytes, void *recv, const char *what,
                                    uint64_t sig) {
    local *l = (local *)c;
    size_t total = (size_t)n_members * chunk_bytes;
    kiln_status s = arrive(cx, l, process, send, total, what, sig);
    if (s != KILN_OK) return s;
    int32_t index = -1;
    for (int32_t k = 0; k < n_members; k++)
        if (members[k] == process) index = k;
    for (int32_t k = 0; k < n_members && s == KILN_OK && index >= 0; k++) {
        const post *from = &l->posts[members[k]];
        if (from->nbytes != total)
            s = kiln_ctx_set_error(cx, KILN_INTERNAL, "%s: internal: %zu bytes from process %d",
                                   what, from->nbytes, (int)members[k]);
        else if (chunk_bytes)
            memcpy((unsigned char *)recv + (size_t)k * chunk_bytes,
                   (const unsigned char *)from->send + (size_t)index * chunk_bytes, chunk_bytes);
    }
    kiln_status s2 = barrier(cx, l, process, what);
    return s != KILN_OK ? s : s2;
}

static kiln_status local_permute(kiln_ctx *cx, kiln_comm *c, int32_t process, int32_t to,
                                 int32_t from, const void *send, size_t nbytes, void *recv,
                                 const char *what, uint64_t sig) {
    (void)to; /* the receiver reads: `from` says it all here */
    local *l = (local *)c;
    kiln_status s = arrive(cx, l, process, send, nbytes, what, sig);
    if (s != KILN_OK) return s;
    if (from >= 0 && nbytes) memcpy(recv, l->posts[from].send, nbytes);
    kiln_status s2 = barrier(cx, l, process, what);
    return s2;
}

static void local_abort(kiln_comm *c, int32_t process, const char *message) {
    local *l = (local *)c;
    char why[512];
    snprintf(why, sizeof why, "process %d failed: %s", (int)process, message);
    pthread_mutex_lock(&l->mu);
    break_locked(l, KILN_ABORTED, why);
    pthread_mutex_unlock(&l->mu);
}

static void local_reset(kiln_comm *c) {
    local *l = (local *)c;
    pthread_mutex_lock(&l->mu);
    l->broken = false;
    l->arrived = 0;
    l->why[0] = 0;
    pthread_mutex_unlock(&l->mu);
}

static void local_destroy(kiln_comm *c) {
    local *l = (local *)c;
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    kiln_allocator a = c->allocator;
    kiln__raw_free(&a, l, sizeof *l);
}

static const kiln__comm_ops local_ops = {
    .kind = "local",
    .all_gather = local_all_gather,
    .all_to_all = local_all_to_all,
    .permute = local_permute,
    .abort = local_abort,
    .reset = local_reset,
    .destroy = local_destroy,
};

static kiln_status local_new(kiln_ctx *cx, const kiln_comm_options *o, kiln_comm **out) {
    local *l = kiln__alloc(cx, sizeof *l, _Alignof(local), "kiln_comm_create_local");
    if (!l) return KILN_RESOURCE_EXHAUSTED;
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    kiln__comm_init(cx, &l->base, &local_ops, o, -1);
    *out = &l->base;
    return KILN_OK;
}

kiln_status kiln_comm_create_local(kiln_ctx *cx, const kiln_comm_options *options,
                                   kiln_comm **out_comm) {
    static const char fn[] = "kiln_comm_create_local";
    if (out_comm) *out_comm = NULL;
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_comm) return kiln__null_argument(cx, fn, "out_comm");
    kiln_comm_options o;
    kiln_status s = kiln__comm_options(cx, fn, options, &o);
    if (s != KILN_OK) return s;
    return local_new(cx, &o, out_comm);
}
