/* SPDX-License-Identifier: Apache-2.0 */
/* Communicators (comm.h): the public API of kiln/spmd.h that is not a builder, the grid's
 * process groups, and running the processes of a local communicator on threads. */
#define _POSIX_C_SOURCE 200809L
#include "backend/comm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/ctx_internal.h"

kiln_comm_options kiln_comm_options_default(void) {
    return (kiln_comm_options){.struct_size = sizeof(kiln_comm_options),
                               .num_replicas = 1,
                               .num_partitions = 1,
                               .timeout_ms = 60000};
}

kiln_status kiln__comm_options(kiln_ctx *cx, const char *fn, const kiln_comm_options *in,
                               kiln_comm_options *out) {
    *out = kiln_comm_options_default();
    if (!in) return KILN_OK;
    if (in->struct_size < offsetof(kiln_comm_options, timeout_ms) + sizeof in->timeout_ms)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: options->struct_size is %zu; expected %zu", fn,
                                  in->struct_size, sizeof *in);
    *out = *in;
    if (out->num_replicas < 1 || out->num_partitions < 1)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: options->num_replicas (%d) and num_partitions (%d) must "
                                  "be at least 1",
                                  fn, (int)out->num_replicas, (int)out->num_partitions);
    if ((int64_t)out->num_replicas * out->num_partitions > KILN_COMM_MAX_PROCESSES)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: %d x %d processes; at most %d (KILN_COMM_MAX_PROCESSES)", fn,
                                  (int)out->num_replicas, (int)out->num_partitions,
                                  KILN_COMM_MAX_PROCESSES);
    if (out->timeout_ms < 0)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: options->timeout_ms is negative (%lld)", fn,
                                  (long long)out->timeout_ms);
    return KILN_OK;
}

kiln_status kiln__comm_init(kiln_ctx *cx, kiln_comm *c, const kiln__comm_ops *ops,
                            const kiln_comm_options *o, int32_t self) {
    atomic_init(&c->refs, 1);
    c->ops = ops;
    c->kind = ops->kind;
    c->num_replicas = o->num_replicas;
    c->num_partitions = o->num_partitions;
    c->n_processes = o->num_replicas * o->num_partitions;
    c->self = self;
    c->timeout_ms = o->timeout_ms;
    c->allocator = *kiln_ctx_allocator(cx);
    return KILN_OK;
}

kiln_comm *kiln_comm_retain(kiln_comm *comm) {
    if (comm) atomic_fetch_add(&comm->refs, 1);
    return comm;
}

void kiln_comm_release(kiln_comm *comm) {
    if (comm && atomic_fetch_sub(&comm->refs, 1) == 1) comm->ops->destroy(comm);
}

int32_t kiln_comm_num_replicas(const kiln_comm *comm) { return comm ? comm->num_replicas : 0; }
int32_t kiln_comm_num_partitions(const kiln_comm *comm) { return comm ? comm->num_partitions : 0; }
int32_t kiln_comm_self(const kiln_comm *comm) { return comm ? comm->self : -1; }
const char *kiln_comm_kind(const kiln_comm *comm) { return comm ? comm->kind : "none"; }

static void comm_release_opaque(void *comm) { kiln_comm_release(comm); }

kiln_status kiln_ctx_set_comm(kiln_ctx *cx, kiln_comm *comm, int32_t process) {
    static const char fn[] = "kiln_ctx_set_comm";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (comm) {
        if (process < 0 || process >= comm->n_processes)
            return kiln_ctx_set_error(
                cx, KILN_INVALID_ARGUMENT, "%s: process %d is outside the grid of %d x %d", fn,
                (int)process, (int)comm->num_replicas, (int)comm->num_partitions);
        if (comm->self >= 0 && process != comm->self)
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: this process is process %d of the %s communicator, "
                                      "not %d",
                                      fn, (int)comm->self, comm->kind, (int)process);
        kiln_comm_retain(comm);
    }
    if (cx->comm && cx->comm_release) cx->comm_release(cx->comm);
    cx->comm = comm;
    cx->comm_process = comm ? process : 0;
    cx->comm_release = comm ? comm_release_opaque : NULL;
    return KILN_OK;
}

kiln_comm *kiln_ctx_comm(const kiln_ctx *cx, int32_t *out_process) {
    if (out_process) *out_process = cx && cx->comm ? cx->comm_process : 0;
    return cx ? cx->comm : NULL;
}

kiln__place kiln__place_of(const kiln_ctx *cx) {
    kiln__place p = {.num_replicas = 1, .num_partitions = 1};
    if (!cx || !cx->comm) return p;
    p.comm = cx->comm;
    p.process = cx->comm_process;
    p.num_replicas = p.comm->num_replicas;
    p.num_partitions = p.comm->num_partitions;
    p.replica = p.process / p.num_partitions;
    p.partition = p.process % p.num_partitions;
    return p;
}

/* ---- process groups ---------------------------------------------------------------------- */

kiln__group_mode kiln__group_mode_of(kiln_op op, const kiln__attrs *attrs) {
    bool channel = attrs->u.collective.channel_handle > 0;
    if (op == KILN_OP_ALL_TO_ALL || op == KILN_OP_COLLECTIVE_PERMUTE ||
        op == KILN_OP_COLLECTIVE_BROADCAST || op == KILN_OP_COLLECTIVE_REDUCE)
        return channel ? KILN__CROSS_PARTITION : KILN__CROSS_REPLICA;
    if (!channel) return KILN__CROSS_REPLICA;
    return attrs->u.collective.use_global_device_ids ? KILN__FLATTENED_IDS
                                                     : KILN__CROSS_REPLICA_AND_PARTITION;
}

kiln_status kiln__process_group(kiln_ctx *cx, const char *fn, const kiln__groups *groups,
                                kiln__group_mode mode, const kiln__place *place, int32_t *members,
                                int32_t *n_members, int32_t *index) {
    int32_t R = place->num_replicas, P = place->num_partitions;
    /* The ids name replicas, partitions or processes; `mine` is this process's. */
    int32_t range = mode == KILN__CROSS_PARTITION ? P : mode == KILN__FLATTENED_IDS ? R * P : R;
    int32_t mine = mode == KILN__CROSS_PARTITION ? place->partition
                   : mode == KILN__FLATTENED_IDS ? place->process
                                                 : place->replica;
    const char *kind = mode == KILN__CROSS_PARTITION ? "partition"
                       : mode == KILN__FLATTENED_IDS ? "process"
                                                     : "replica";
    int32_t row[KILN_COMM_MAX_PROCESSES], n = 0;
    bool found = false;
    if (groups->rows == 0 || groups->cols == 0) { /* one group of all */
        for (int32_t i = 0; i < range; i++)
            row[n++] = i;
        found = true;
    }
    for (int32_t r = 0; r < groups->rows && groups->cols > 0; r++) {
        int32_t m = 0, ids[KILN_COMM_MAX_PROCESSES];
        bool here = false;
        for (int32_t c = 0; c < groups->cols; c++) {
            int32_t id = groups->ids[r * groups->cols + c];
            if (id < 0) continue;
            if (id >= range)
                return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                          "%s: the groups name %s %d; the grid has %d %ss (%d x "
                                          "%d processes)",
                                          fn, kind, (int)id, (int)range, kind, (int)R, (int)P);
            ids[m++] = id;
            here |= id == mine;
        }
        if (here && !found) {
            memcpy(row, ids, (size_t)m * sizeof *row);
            n = m;
            found = true;
        }
    }
    *n_members = 0;
    *index = -1;
    if (!found) return KILN_OK;
    int32_t k = 0;
    switch (mode) {
    case KILN__CROSS_REPLICA:
        for (int32_t i = 0; i < n; i++)
            members[k++] = row[i] * P + place->partition;
        break;
    case KILN__CROSS_PARTITION:
        for (int32_t i = 0; i < n; i++)
            members[k++] = place->replica * P + row[i];
        break;
    case KILN__CROSS_REPLICA_AND_PARTITION:
        for (int32_t p = 0; p < P; p++)
            for (int32_t i = 0; i < n; i++)
                members[k++] = row[i] * P + p;
        break;
    case KILN__FLATTENED_IDS:
        for (int32_t i = 0; i < n; i++)
            members[k++] = row[i];
        break;
    }
    for (int32_t i = 0; i < k; i++)
        if (members[i] == place->process) *index = i;
    *n_members = k;
    return KILN_OK;
}

/* ---- primitives ---------------------------------------------------------------------------- */

/* A primitive without a communicator: the process is alone, so its group is itself (or
 * empty) and what it receives is what it sends (nbytes of it). */
static kiln_status alone(kiln_ctx *cx, const int32_t *members, int32_t n_members,
                         const void *send, size_t nbytes, void *recv, const char *what) {
    if (n_members > 1 || (n_members == 1 && members[0] != 0))
        return kiln_ctx_set_error(cx, KILN_INTERNAL, "%s: internal: a group beyond the process",
                                  what);
    if (n_members == 1 && nbytes) memmove(recv, send, nbytes);
    return KILN_OK;
}

kiln_status kiln__comm_all_gather(kiln_ctx *cx, const kiln__place *place, const int32_t *members,
                                  int32_t n_members, const void *send, size_t nbytes, void *recv,
                                  const char *what, uint64_t sig) {
    if (place->comm)
        return place->comm->ops->all_gather(cx, place->comm, place->process, members, n_members,
                                            send, nbytes, recv, what, sig);
    return alone(cx, members, n_members, send, nbytes, recv, what);
}

kiln_status kiln__comm_all_to_all(kiln_ctx *cx, const kiln__place *place, const int32_t *members,
                                  int32_t n_members, const void *send, size_t chunk_bytes,
                                  void *recv, const char *what, uint64_t sig) {
    if (place->comm)
        return place->comm->ops->all_to_all(cx, place->comm, place->process, members, n_members,
                                            send, chunk_bytes, recv, what, sig);
    return alone(cx, members, n_members, send, chunk_bytes, recv, what);
}

kiln_status kiln__comm_permute(kiln_ctx *cx, const kiln__place *place, int32_t to, int32_t from,
                               const void *send, size_t nbytes, void *recv, const char *what,
                               uint64_t sig) {
    if (place->comm)
        return place->comm->ops->permute(cx, place->comm, place->process, to, from, send, nbytes,
                                         recv, what, sig);
    if (from == 0 && nbytes) memmove(recv, send, nbytes);
    return KILN_OK;
}

/* ---- running a local communicator's processes ---------------------------------------------- */

typedef struct worker {
    pthread_t thread;
    bool started;
    kiln_comm *comm;
    int32_t process;
    kiln_ctx_options options;
    kiln_spmd_fn fn;
    void *user;
    kiln_status status;
    char message[KILN_ERROR_MESSAGE_MAX];
} worker;

static void *worker_main(void *arg) {
    worker *w = arg;
    kiln_ctx *cx = NULL;
    w->status = kiln_ctx_create(&w->options, &cx);
    if (w->status != KILN_OK) {
        snprintf(w->message, sizeof w->message, "cannot create its ctx (%s)",
                 kiln_status_name(w->status));
    } else {
        w->status = kiln_ctx_set_comm(cx, w->comm, w->process);
        if (w->status == KILN_OK) w->status = w->fn(cx, w->process, w->user);
        if (w->status == KILN_OK) w->status = kiln_ctx_status(cx);
        if (w->status != KILN_OK)
            snprintf(w->message, sizeof w->message, "%s",
                     kiln_ctx_status(cx) != KILN_OK ? kiln_ctx_error_message(cx)
                                                    : kiln_status_name(w->status));
        kiln_ctx_release(cx);
    }
    if (w->status != KILN_OK) w->comm->ops->abort(w->comm, w->process, w->message);
    return NULL;
}

/* Which failure to report: a process's own error rather than the ABORTED or
 * DEADLINE_EXCEEDED the others got because of it. */
static bool primary_failure(kiln_status s) {
    return s != KILN_OK && s != KILN_ABORTED && s != KILN_DEADLINE_EXCEEDED;
}

kiln_status kiln_spmd_run(kiln_ctx *cx, kiln_comm *comm, kiln_spmd_fn fn, void *user) {
    static const char fn_name[] = "kiln_spmd_run";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!comm) return kiln__null_argument(cx, fn_name, "comm");
    if (!fn) return kiln__null_argument(cx, fn_name, "fn");
    if (comm->self >= 0)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: the %s communicator runs one process per OS process; "
                                  "bind a ctx with kiln_ctx_set_comm instead",
                                  fn_name, comm->kind);
    int32_t n = comm->n_processes;
    size_t bytes = (size_t)n * sizeof(worker);
    worker *ws = kiln__alloc(cx, bytes, _Alignof(worker), fn_name);
    if (!ws) return KILN_RESOURCE_EXHAUSTED;
    memset(ws, 0, bytes);
    comm->ops->reset(comm);
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &cx->allocator;
    o.log_fn = cx->log_fn;
    o.log_user = cx->log_user;
    o.log_level = cx->log_level;
    o.device = cx->device;
    o.cpu_devices = cx->cpu_devices;
    o.backend = cx->backend[0] ? cx->backend : NULL;
    kiln_status s = KILN_OK;
    for (int32_t p = 0; p < n; p++) {
        ws[p] = (worker){.comm = comm, .process = p, .options = o, .fn = fn, .user = user};
        if (pthread_create(&ws[p].thread, NULL, worker_main, &ws[p]) != 0) {
            s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED,
                                   "%s: cannot start the thread of process %d", fn_name, (int)p);
            comm->ops->abort(comm, p, "its thread could not start");
            break;
        }
        ws[p].started = true;
    }
    for (int32_t p = 0; p < n; p++)
        if (ws[p].started) pthread_join(ws[p].thread, NULL);
    int32_t first = -1;
    for (int32_t p = 0; p < n && s == KILN_OK; p++)
        if (primary_failure(ws[p].status) && first < 0) first = p;
    for (int32_t p = 0; p < n && s == KILN_OK && first < 0; p++)
        if (ws[p].status != KILN_OK) first = p;
    if (first >= 0)
        s = kiln_ctx_set_error(cx, ws[first].status, "process %d: %s", (int)first,
                               ws[first].message);
    kiln__free(cx, ws, bytes);
    return s;
}
