/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_comm_create_mpi (kiln/mpi.h): kiln's two communicator primitives (kiln_comm_impl)
 * on MPI.
 *
 * Every primitive call is one step of the program all ranks run: first an agreement (an
 * all-gather of the op's signature over all ranks; on a mismatch a second one of the ops'
 * descriptions, so every rank reports the same two ops), then the data. all_gather within
 * a group runs MPI's all-gather on a communicator of the group, made by MPI_Comm_split
 * when a signature is first seen; every rank sees the same signatures in the same order,
 * so all split together, and the cache (keyed by signature) is the same on every rank.
 * permute is a send and a receive. Each wait polls against the deadline (timeout_ms). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/mpi.h"

/* Communicators per group cached; past this the cache is emptied (on every rank alike). */
#define GROUP_CACHE 64
/* The length of the op descriptions exchanged on a mismatch. */
#define WHAT_MAX 200

typedef struct group_comm {
    uint64_t sig;
    MPI_Comm comm; /* MPI_COMM_NULL for a rank in no group or alone in its group */
} group_comm;

typedef struct transport {
    MPI_Comm world; /* a duplicate of the caller's */
    int rank, size;
    int64_t timeout_ms;
    bool initialized_mpi; /* this communicator called MPI_Init_thread */
    pthread_mutex_t lock; /* one MPI call at a time */
    group_comm groups[GROUP_CACHE];
    int n_groups;
    /* After a timeout a request is left behind: every later call fails. */
    bool broken;
    char why[256];
} transport;

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int init_users; /* live communicators that initialized MPI */

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Waits for n requests; DEADLINE_EXCEEDED (the transport broken) past the timeout. */
static kiln_status wait_all(transport *t, kiln_ctx *cx, MPI_Request *reqs, int n, const char *what,
                            const char *step) {
    int64_t start = now_ms(), deadline = t->timeout_ms > 0 ? start + t->timeout_ms : 0;
    bool patient = false; /* after a while, poll less often to leave the core to others */
    for (long spins = 0;; spins++) {
        int done = 0;
        int rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, msg, &len);
            snprintf(t->why, sizeof t->why, "MPI failed during %s: %.200s", step, msg);
            t->broken = true;
            return kiln_ctx_set_error(cx, KILN_INTERNAL, "%s: %s", what, t->why);
        }
        if (done) return KILN_OK;
        if ((spins & 255) == 0) {
            int64_t now = now_ms();
            if (deadline && now > deadline) {
                snprintf(t->why, sizeof t->why,
                         "rank %d waited %lld ms for the other ranks at %s of %s; they did not "
                         "all arrive (a rank failed, ended or runs a different program)",
                         t->rank, (long long)t->timeout_ms, step, what);
                t->broken = true;
                return kiln_ctx_set_error(cx, KILN_DEADLINE_EXCEEDED, "%s", t->why);
            }
            /* MPI moves data only while it is called: poll flat out while the others are
             * close behind, which is what a large transfer needs */
            patient = now - start > 100;
        }
        if (patient) {
            struct timespec pause = {0, 50000};
            nanosleep(&pause, NULL);
        }
    }
}

/* Every rank runs the same op: the signatures are all-gathered and compared. */
static kiln_status agree(transport *t, kiln_ctx *cx, uint64_t sig, const char *what) {
    uint64_t *sigs = malloc((size_t)t->size * sizeof *sigs);
    if (!sigs) return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", what);
    MPI_Request req;
    MPI_Iallgather(&sig, 1, MPI_UINT64_T, sigs, 1, MPI_UINT64_T, t->world, &req);
    kiln_status s = wait_all(t, cx, &req, 1, what, "the agreement on the op");
    int other = -1;
    for (int p = 1; p < t->size && s == KILN_OK && other < 0; p++)
        if (sigs[p] != sigs[0]) other = p;
    free(sigs);
    if (s != KILN_OK || other < 0) return s;
    /* They disagree (every rank knows): tell each other which ops. */
    char mine[WHAT_MAX] = {0};
    snprintf(mine, sizeof mine, "%s", what);
    char *all = calloc((size_t)t->size, WHAT_MAX);
    if (!all) return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", what);
    MPI_Iallgather(mine, WHAT_MAX, MPI_CHAR, all, WHAT_MAX, MPI_CHAR, t->world, &req);
    s = wait_all(t, cx, &req, 1, what, "the report of a disagreement");
    if (s == KILN_OK) {
        all[WHAT_MAX - 1] = all[(size_t)other * WHAT_MAX + WHAT_MAX - 1] = 0;
        s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "the processes disagree on a collective: process 0 runs %s, "
                               "process %d runs %s",
                               all, other, all + (size_t)other * WHAT_MAX);
    }
    free(all);
    return s;
}

/* The communicator of this rank's group for the op `sig`, split on first use. */
static kiln_status group_of(transport *t, kiln_ctx *cx, uint64_t sig, const int32_t *members,
                            int32_t n_members, const char *what, MPI_Comm *out) {
    for (int i = 0; i < t->n_groups; i++)
        if (t->groups[i].sig == sig) {
            *out = t->groups[i].comm;
            return KILN_OK;
        }
    if (t->n_groups == GROUP_CACHE) {
        for (int i = 0; i < t->n_groups; i++)
            if (t->groups[i].comm != MPI_COMM_NULL) MPI_Comm_free(&t->groups[i].comm);
        t->n_groups = 0;
    }
    /* Groups are disjoint, so the first member names the group; a rank's position is its
     * index in the group, so the new communicator's ranks are in group order. */
    int color = MPI_UNDEFINED, key = 0;
    for (int32_t k = 0; k < n_members; k++)
        if (members[k] == t->rank) key = (int)k;
    if (n_members > 1) color = (int)members[0];
    MPI_Comm c = MPI_COMM_NULL;
    if (MPI_Comm_split(t->world, color, key, &c) != MPI_SUCCESS)
        return kiln_ctx_set_error(cx, KILN_INTERNAL, "%s: MPI_Comm_split failed", what);
    t->groups[t->n_groups++] = (group_comm){.sig = sig, .comm = c};
    *out = c;
    return KILN_OK;
}

/* The communicator of this rank's group (the world's when the group is every rank, in
 * rank order); MPI_COMM_NULL for a rank in no group. */
static kiln_status comm_of_group(transport *t, kiln_ctx *cx, uint64_t sig, const int32_t *members,
                                 int32_t n_members, const char *what, MPI_Comm *out) {
    bool everyone = n_members == t->size;
    for (int32_t k = 0; k < n_members && everyone; k++)
        everyone = members[k] == k;
    *out = t->world;
    return everyone ? KILN_OK : group_of(t, cx, sig, members, n_members, what, out);
}

static bool overlaps(const void *a, const void *b, size_t nb) {
    const char *x = a, *y = b;
    return x < y + nb && y < x + nb;
}

static kiln_status mpi_all_gather_locked(transport *t, kiln_ctx *cx, const int32_t *members,
                                         int32_t n_members, const void *send, size_t nbytes,
                                         void *recv, const char *what, uint64_t sig) {
    kiln_status s = agree(t, cx, sig, what);
    if (s != KILN_OK) return s;
    if (nbytes > INT_MAX)
        return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                  "%s: %zu bytes per process; MPI all-gathers at most %d", what,
                                  nbytes, INT_MAX);
    MPI_Comm c;
    if ((s = comm_of_group(t, cx, sig, members, n_members, what, &c)) != KILN_OK) return s;
    if (n_members == 0) return KILN_OK;
    if (n_members == 1) {
        if (nbytes) memmove(recv, send, nbytes);
        return KILN_OK;
    }
    /* MPI wants the send buffer apart from the receive buffer. */
    void *copy = NULL;
    if (nbytes && overlaps(send, recv, nbytes * (size_t)n_members)) {
        if (!(copy = malloc(nbytes)))
            return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", what);
        memcpy(copy, send, nbytes);
        send = copy;
    }
    MPI_Request req;
    MPI_Iallgather(send, (int)nbytes, MPI_BYTE, recv, (int)nbytes, MPI_BYTE, c, &req);
    s = wait_all(t, cx, &req, 1, what, "the all-gather");
    free(copy);
    return s;
}

static kiln_status broken(transport *t, kiln_ctx *cx, const char *what) {
    return kiln_ctx_set_error(cx, KILN_ABORTED,
                              "%s: the MPI communicator cannot be used after an earlier "
                              "failure: %s",
                              what, t->why);
}

static kiln_status mpi_all_gather(void *user, kiln_ctx *cx, const int32_t *members,
                                  int32_t n_members, const void *send, size_t nbytes, void *recv,
                                  const char *what, uint64_t sig) {
    transport *t = user;
    pthread_mutex_lock(&t->lock);
    kiln_status s =
        t->broken ? broken(t, cx, what)
                  : mpi_all_gather_locked(t, cx, members, n_members, send, nbytes, recv, what, sig);
    pthread_mutex_unlock(&t->lock);
    return s;
}

/* The other primitives' signatures differ from an all-gather's of the same op. */
#define ALL_TO_ALL_SALT 0x3c6ef372fe94f82bull

static kiln_status mpi_all_to_all(void *user, kiln_ctx *cx, const int32_t *members,
                                  int32_t n_members, const void *send, size_t chunk_bytes,
                                  void *recv, const char *what, uint64_t sig) {
    transport *t = user;
    pthread_mutex_lock(&t->lock);
    kiln_status s = t->broken ? broken(t, cx, what) : agree(t, cx, sig ^ ALL_TO_ALL_SALT, what);
    MPI_Comm c = MPI_COMM_NULL;
    if (s == KILN_OK) s = comm_of_group(t, cx, sig ^ ALL_TO_ALL_SALT, members, n_members, what, &c);
    size_t total = (size_t)n_members * chunk_bytes;
    if (s == KILN_OK && chunk_bytes > INT_MAX)
        s = kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                               "%s: chunks of %zu bytes; MPI exchanges at most %d", what,
                               chunk_bytes, INT_MAX);
    if (s == KILN_OK && n_members == 1 && total) memmove(recv, send, total);
    void *copy = NULL;
    if (s == KILN_OK && n_members > 1) {
        if (total && overlaps(send, recv, total)) {
            if (!(copy = malloc(total)))
                s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", what);
            else
                send = memcpy(copy, send, total);
        }
        if (s == KILN_OK) {
            MPI_Request req;
            MPI_Ialltoall(send, (int)chunk_bytes, MPI_BYTE, recv, (int)chunk_bytes, MPI_BYTE, c,
                          &req);
            s = wait_all(t, cx, &req, 1, what, "the all-to-all");
        }
    }
    free(copy);
    pthread_mutex_unlock(&t->lock);
    return s;
}

/* A permute's signature differs from an all-gather's of the same op. */
#define PERMUTE_SALT 0x9e3779b97f4a7c15ull

static kiln_status mpi_permute_locked(transport *t, kiln_ctx *cx, int32_t to, int32_t from,
                                      const void *send, size_t nbytes, void *recv, const char *what,
                                      uint64_t sig) {
    kiln_status s = agree(t, cx, sig ^ PERMUTE_SALT, what);
    if (s != KILN_OK) return s;
    if (nbytes > INT_MAX)
        return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                  "%s: %zu bytes per process; MPI sends at most %d", what, nbytes,
                                  INT_MAX);
    void *copy = NULL;
    if (to >= 0 && from >= 0 && nbytes && overlaps(send, recv, nbytes)) {
        if (!(copy = malloc(nbytes)))
            return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", what);
        memcpy(copy, send, nbytes);
        send = copy;
    }
    MPI_Request reqs[2];
    int n = 0;
    if (from >= 0) MPI_Irecv(recv, (int)nbytes, MPI_BYTE, from, 0, t->world, &reqs[n++]);
    if (to >= 0) MPI_Isend(send, (int)nbytes, MPI_BYTE, to, 0, t->world, &reqs[n++]);
    if (n) s = wait_all(t, cx, reqs, n, what, "the exchange");
    free(copy);
    return s;
}

static kiln_status mpi_permute(void *user, kiln_ctx *cx, int32_t to, int32_t from, const void *send,
                               size_t nbytes, void *recv, const char *what, uint64_t sig) {
    transport *t = user;
    pthread_mutex_lock(&t->lock);
    kiln_status s = t->broken ? broken(t, cx, what)
                              : mpi_permute_locked(t, cx, to, from, send, nbytes, recv, what, sig);
    pthread_mutex_unlock(&t->lock);
    return s;
}

static void release_mpi(bool initialized) {
    if (!initialized) return;
    pthread_mutex_lock(&init_lock);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (--init_users == 0 && !finalized) MPI_Finalize();
    pthread_mutex_unlock(&init_lock);
}

static void mpi_destroy(void *user) {
    transport *t = user;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        /* A broken transport leaves a request behind: its communicators are not freed
         * (MPI_Comm_free would wait for it). */
        for (int i = 0; i < t->n_groups && !t->broken; i++)
            if (t->groups[i].comm != MPI_COMM_NULL) MPI_Comm_free(&t->groups[i].comm);
        if (!t->broken) MPI_Comm_free(&t->world);
    }
    bool initialized = t->initialized_mpi;
    pthread_mutex_destroy(&t->lock);
    free(t);
    release_mpi(initialized);
}

/* MPI running, started here when the caller has not (and may not have a communicator). */
static kiln_status start_mpi(kiln_ctx *cx, MPI_Comm mpi_comm, bool *initialized) {
    static const char fn[] = "kiln_comm_create_mpi";
    *initialized = false;
    int finalized = 0, running = 0;
    MPI_Finalized(&finalized);
    if (finalized)
        return kiln_ctx_set_error(cx, KILN_UNAVAILABLE, "%s: MPI has been finalized", fn);
    pthread_mutex_lock(&init_lock);
    MPI_Initialized(&running);
    kiln_status s = KILN_OK;
    if (!running && mpi_comm != MPI_COMM_NULL) {
        s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "%s: mpi_comm is given but MPI is not initialized", fn);
    } else if (!running) {
        int provided = 0;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
            s = kiln_ctx_set_error(cx, KILN_UNAVAILABLE, "%s: MPI_Init_thread failed", fn);
        else
            *initialized = true;
    }
    if (s == KILN_OK && (*initialized || init_users > 0)) {
        /* a communicator made while kiln's MPI is up keeps it up too */
        *initialized = true;
        init_users++;
    }
    pthread_mutex_unlock(&init_lock);
    return s;
}

kiln_status kiln_comm_create_mpi(kiln_ctx *cx, const kiln_comm_options *options, MPI_Comm mpi_comm,
                                 kiln_comm **out_comm) {
    static const char fn[] = "kiln_comm_create_mpi";
    if (out_comm) *out_comm = NULL;
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_comm) return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: out_comm is NULL", fn);
    bool initialized = false;
    kiln_status s = start_mpi(cx, mpi_comm, &initialized);
    if (s != KILN_OK) return s;
    MPI_Comm base = mpi_comm == MPI_COMM_NULL ? MPI_COMM_WORLD : mpi_comm;
    int rank = 0, size = 0;
    MPI_Comm_rank(base, &rank);
    MPI_Comm_size(base, &size);
    kiln_comm_options o = kiln_comm_options_default();
    if (options) {
        o = *options; /* kiln_comm_create checks the fields */
        bool counts = o.struct_size >= sizeof o && o.num_replicas >= 1 && o.num_partitions >= 1;
        if (counts && (int64_t)o.num_replicas * o.num_partitions != size)
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                   "%s: options ask for %d x %d processes; the MPI "
                                   "communicator has %d ranks",
                                   fn, (int)o.num_replicas, (int)o.num_partitions, size);
    } else if (size > KILN_COMM_MAX_PROCESSES) {
        s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "%s: the MPI communicator has %d ranks; at most %d", fn, size,
                               KILN_COMM_MAX_PROCESSES);
    } else {
        o.num_replicas = size;
    }
    transport *t = s == KILN_OK ? calloc(1, sizeof *t) : NULL;
    if (s == KILN_OK && !t)
        s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    if (s != KILN_OK) {
        release_mpi(initialized);
        return s;
    }
    t->rank = rank;
    t->size = size;
    t->timeout_ms = o.struct_size >= sizeof o ? o.timeout_ms : 0;
    t->initialized_mpi = initialized;
    pthread_mutex_init(&t->lock, NULL);
    if (MPI_Comm_dup(base, &t->world) != MPI_SUCCESS) {
        pthread_mutex_destroy(&t->lock);
        free(t);
        release_mpi(initialized);
        return kiln_ctx_set_error(cx, KILN_INTERNAL, "%s: MPI_Comm_dup failed", fn);
    }
    kiln_comm_impl impl = {.struct_size = sizeof impl,
                           .kind = "mpi",
                           .self = rank,
                           .user = t,
                           .all_gather = mpi_all_gather,
                           .all_to_all = mpi_all_to_all,
                           .permute = mpi_permute,
                           .destroy = mpi_destroy};
    /* kiln_comm_create checks the options and destroys t when it fails. */
    return kiln_comm_create(cx, &o, &impl, out_comm);
}
