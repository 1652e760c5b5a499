/* SPDX-License-Identifier: Apache-2.0 */
/* Communicators (kiln/spmd.h): what the collectives' kernels need of the processes they
 * talk to, and the grid's process groups.
 *
 * A communicator offers two primitives, which every collective is built from by the
 * kernels (backends/cpu/eval/eval_collective.c), so that the arithmetic (the ordered
 * reductions) is kiln's own and the same bits come out of every communicator:
 *  - all_gather: within a group, every member receives every member's bytes, in group
 *    order;
 *  - all_to_all: within a group, member i sends its j-th chunk to member j, which keeps it
 *    as its i-th (what bandwidth-bound reductions are built on: each member reduces one
 *    chunk, then the chunks are all-gathered);
 *  - permute: each process sends to at most one process and receives from at most one.
 * Every process of the communicator calls each primitive, in the same order (processes in
 * no group too, with no members), with a description of the op (`what`) and a hash of its
 * attributes and types (`sig`): processes whose sig differs all fail, naming both ops. A
 * process that fails (abort) or never arrives (the timeout) makes the others fail too. */
#ifndef KILN_BACKEND_COMM_H
#define KILN_BACKEND_COMM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/spmd.h"
#include "ops/attrs.h"

typedef struct kiln__comm_ops {
    const char *kind; /* "local", "mpi" */
    kiln_status (*all_gather)(kiln_ctx *cx, kiln_comm *c, int32_t process, const int32_t *members,
                              int32_t n_members, const void *send, size_t nbytes, void *recv,
                              const char *what, uint64_t sig);
    /* send and recv hold n_members chunks of chunk_bytes each, in group order. */
    kiln_status (*all_to_all)(kiln_ctx *cx, kiln_comm *c, int32_t process, const int32_t *members,
                              int32_t n_members, const void *send, size_t chunk_bytes, void *recv,
                              const char *what, uint64_t sig);
    /* to, from: process ids, or -1 for none (recv is then left as it is). */
    kiln_status (*permute)(kiln_ctx *cx, kiln_comm *c, int32_t process, int32_t to, int32_t from,
                           const void *send, size_t nbytes, void *recv, const char *what,
                           uint64_t sig);
    /* Process `process` failed with `message`: the others' primitives fail (ABORTED). */
    void (*abort)(kiln_comm *c, int32_t process, const char *message);
    /* Ready for another run of kiln_spmd_run (a local communicator forgets a failure). */
    void (*reset)(kiln_comm *c);
    void (*destroy)(kiln_comm *c);
} kiln__comm_ops;

struct kiln_comm {
    atomic_long refs;
    const kiln__comm_ops *ops;
    const char *kind; /* ops->kind, or the transport's (kiln_comm_impl) */
    int32_t num_replicas, num_partitions, n_processes;
    int32_t self; /* this OS process's process id; -1 when all are threads here */
    int64_t timeout_ms;
    kiln_allocator allocator; /* frees the communicator */
};

/* Where cx runs in the grid: its communicator (NULL: a grid of one process), process id
 * and the grid's size. */
typedef struct kiln__place {
    kiln_comm *comm;
    int32_t process, replica, partition;
    int32_t num_replicas, num_partitions;
} kiln__place;
kiln__place kiln__place_of(const kiln_ctx *cx);

/* How a collective's ids form groups (StableHLO's process-group strategies). */
typedef enum kiln__group_mode {
    KILN__CROSS_REPLICA,
    KILN__CROSS_PARTITION,
    KILN__CROSS_REPLICA_AND_PARTITION,
    KILN__FLATTENED_IDS,
} kiln__group_mode;

/* The mode of `op` for its channel handle and use_global_device_ids. */
kiln__group_mode kiln__group_mode_of(kiln_op op, const kiln__attrs *attrs);

/* The process group of `place` under `groups` and `mode`: members (process ids, in group
 * order; room for KILN_COMM_MAX_PROCESSES), their count (0 when the process is in no
 * group) and the process's index among them. Empty groups are one group of all. Errors:
 * INVALID_ARGUMENT naming `fn` (an id outside the grid). */
kiln_status kiln__process_group(kiln_ctx *cx, const char *fn, const kiln__groups *groups,
                                kiln__group_mode mode, const kiln__place *place, int32_t *members,
                                int32_t *n_members, int32_t *index);

/* The primitives for cx's place; without a communicator, the group must be the process
 * itself (a copy). */
kiln_status kiln__comm_all_gather(kiln_ctx *cx, const kiln__place *place, const int32_t *members,
                                  int32_t n_members, const void *send, size_t nbytes, void *recv,
                                  const char *what, uint64_t sig);
kiln_status kiln__comm_all_to_all(kiln_ctx *cx, const kiln__place *place, const int32_t *members,
                                  int32_t n_members, const void *send, size_t chunk_bytes,
                                  void *recv, const char *what, uint64_t sig);
kiln_status kiln__comm_permute(kiln_ctx *cx, const kiln__place *place, int32_t to, int32_t from,
                               const void *send, size_t nbytes, void *recv, const char *what,
                               uint64_t sig);

/* Sets up the shared part of a communicator made by an implementation (refs 1). */
kiln_status kiln__comm_init(kiln_ctx *cx, kiln_comm *c, const kiln__comm_ops *ops,
                            const kiln_comm_options *o, int32_t self);

/* The checked options (INVALID_ARGUMENT naming fn), defaults for a NULL pointer. */
kiln_status kiln__comm_options(kiln_ctx *cx, const char *fn, const kiln_comm_options *in,
                               kiln_comm_options *out);

#endif
