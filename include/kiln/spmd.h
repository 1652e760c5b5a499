/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/spmd.h: programs that run on several processes at once, and the collectives they
 * communicate with (StableHLO's "parallel execution").
 *
 * The processes form a grid of num_replicas x num_partitions; process (replica,
 * partition) has the process id replica * num_partitions + partition (StableHLO's
 * "flattened id"). A communicator (kiln_comm) connects them: kiln_comm_create_local makes
 * one whose processes are threads of this OS process (the ctx's logical CPU devices, as
 * XLA's host platform gives them), and kiln/mpi.h one process per MPI rank. A ctx bound to
 * a communicator (kiln_ctx_set_comm) runs its collectives, eager or compiled, as its
 * process; an unbound ctx is a grid of one process.
 *
 * Every process of the communicator must run every collective, in the same order, with the
 * same attributes and operand types (as an SPMD program does): processes that disagree get
 * an error naming both sides, on every process; one that never arrives makes the others
 * fail after the communicator's timeout rather than hang.
 *
 * Reductions combine the group's values in group order with kiln's own kernels (StableHLO's
 * NaN and signed-zero rules, any reduction region), so results are the same bits on every
 * process and for every communicator and thread count.
 *
 *     // two replicas, in this process: each sums its x with the other's
 *     static kiln_status step(kiln_ctx *cx, int32_t process, void *user) {
 *         kiln_tensor **out = user;
 *         kiln_tensor *x = kiln_full(cx, KILN_F32, KILN_SHAPE(4), process + 1.0);
 *         out[process] = kiln_tensor_retain(kiln_all_reduce(cx, x, kiln_region_add(), NULL));
 *         return kiln_ctx_status(cx);
 *     }
 *     kiln_comm *comm;
 *     kiln_comm_options o = kiln_comm_options_default();
 *     o.num_replicas = 2;
 *     kiln_comm_create_local(cx, &o, &comm);
 *     kiln_tensor *out[2];
 *     kiln_spmd_run(cx, comm, step, out);       // out[0], out[1]: [3, 3, 3, 3]
 *     kiln_comm_release(comm);
 */
#ifndef KILN_SPMD_H
#define KILN_SPMD_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln/ctx.h"
#include "kiln/export.h"
#include "kiln/jit.h"
#include "kiln/ops.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- communicators ------------------------------------------------------------------- */

typedef struct kiln_comm kiln_comm;

/* The most processes a communicator (and a collective's groups) may hold. */
#define KILN_COMM_MAX_PROCESSES 256

typedef struct kiln_comm_options {
    size_t struct_size;     /* sizeof(kiln_comm_options) */
    int32_t num_replicas;   /* >= 1; default 1 */
    int32_t num_partitions; /* >= 1; default 1 */
    /* How long a process waits at a collective for the others before it fails (and makes
     * them fail) with DEADLINE_EXCEEDED. Default 60000; 0: wait forever. */
    int64_t timeout_ms;
} kiln_comm_options;

/* Options with every field at its default. Pure; thread-safe. */
KILN_API kiln_comm_options kiln_comm_options_default(void);

/* A communicator whose num_replicas x num_partitions processes are threads of this
 * process (kiln_spmd_run starts them). *out_comm is new (kiln_comm_release). Errors:
 * INVALID_ARGUMENT (NULL arguments, struct_size, counts below 1, more than
 * KILN_COMM_MAX_PROCESSES processes, a negative timeout), RESOURCE_EXHAUSTED. */
KILN_API kiln_status kiln_comm_create_local(kiln_ctx *cx, const kiln_comm_options *options,
                                            kiln_comm **out_comm);

/* Reference counting (atomic: thread-safe). NULL is a no-op. */
KILN_API kiln_comm *kiln_comm_retain(kiln_comm *comm);
KILN_API void kiln_comm_release(kiln_comm *comm);

/* A communicator of one process per OS process, over a transport of the caller's (kiln/mpi.h
 * is one; NCCL would be another): two primitives that every process calls in the same
 * order, for every collective, with a description of the op (`what`, for messages) and a
 * hash of its attributes and operand types (`sig`), so that processes running different
 * ops can all fail (INVALID_ARGUMENT naming both) instead of hanging.
 *  - all_gather: within `members` (process ids in group order; n_members 0 when this
 *    process is in no group, which must still take part in the agreement on sig), every
 *    member receives every member's nbytes bytes, in group order, at recv;
 *  - all_to_all (optional: NULL makes kiln build it from all_gather, moving n_members times
 *    the bytes): send and recv hold n_members chunks of chunk_bytes; member i's j-th chunk
 *    becomes member j's i-th;
 *  - permute: send nbytes to process `to` and receive nbytes from `from` into recv (either
 *    -1 for none: recv is then left alone).
 * Errors are recorded in cx (kiln_ctx_set_error) and returned. The arithmetic of the
 * collectives (ordered reductions) is kiln's, on top of these. */
typedef struct kiln_comm_impl {
    size_t struct_size; /* sizeof(kiln_comm_impl) */
    const char *kind;   /* "mpi", ... (static) */
    int32_t self;       /* this OS process's process id */
    void *user;
    kiln_status (*all_gather)(void *user, kiln_ctx *cx, const int32_t *members, int32_t n_members,
                              const void *send, size_t nbytes, void *recv, const char *what,
                              uint64_t sig);
    kiln_status (*all_to_all)(void *user, kiln_ctx *cx, const int32_t *members, int32_t n_members,
                              const void *send, size_t chunk_bytes, void *recv, const char *what,
                              uint64_t sig);
    kiln_status (*permute)(void *user, kiln_ctx *cx, int32_t to, int32_t from, const void *send,
                           size_t nbytes, void *recv, const char *what, uint64_t sig);
    void (*destroy)(void *user); /* with the last reference (may be NULL) */
} kiln_comm_impl;

/* A communicator over impl (copied; impl->user is owned by it from now on, destroy called
 * with the last kiln_comm_release, also when this fails). Errors: INVALID_ARGUMENT (NULL
 * arguments, options as kiln_comm_create_local's, a self outside the grid, a missing
 * primitive), RESOURCE_EXHAUSTED. */
KILN_API kiln_status kiln_comm_create(kiln_ctx *cx, const kiln_comm_options *options,
                                      const kiln_comm_impl *impl, kiln_comm **out_comm);

/* The grid (0 for a NULL comm). Thread-safe. */
KILN_API int32_t kiln_comm_num_replicas(const kiln_comm *comm);
KILN_API int32_t kiln_comm_num_partitions(const kiln_comm *comm);
/* The process id this OS process runs as (an MPI communicator: its rank), or -1 when
 * every process is a thread here (a local communicator). Thread-safe. */
KILN_API int32_t kiln_comm_self(const kiln_comm *comm);
/* "local", "mpi", or a kiln_comm_impl's kind. */
KILN_API const char *kiln_comm_kind(const kiln_comm *comm);

/* Binds cx to process `process` (0 .. replicas*partitions-1) of comm: its collectives
 * communicate as that process. The ctx keeps a reference to comm; a NULL comm unbinds.
 * Errors: INVALID_ARGUMENT (a process outside the grid; for a communicator of one process
 * per OS process, any process but kiln_comm_self). Not thread-safe (the ctx's). */
KILN_API kiln_status kiln_ctx_set_comm(kiln_ctx *cx, kiln_comm *comm, int32_t process);

/* The communicator cx is bound to (borrowed; NULL when none) and its process there (0
 * when none) in *out_process (may be NULL). */
KILN_API kiln_comm *kiln_ctx_comm(const kiln_ctx *cx, int32_t *out_process);

/* Runs fn once for every process of a local communicator, all at once, each on a thread
 * of its own with a ctx of its own (the options of cx: allocator, devices, backend, log)
 * bound to that process; returns when all have returned. Tensors fn keeps
 * (kiln_tensor_retain) outlive its ctx. When a process fails (fn returns an error or its
 * ctx holds one), the others' collectives fail too instead of waiting, and the first
 * failure is recorded in cx as "process P: <message>". Errors: INVALID_ARGUMENT (NULL
 * arguments, a communicator that is not local), RESOURCE_EXHAUSTED (threads), what fn
 * reports. */
typedef kiln_status (*kiln_spmd_fn)(kiln_ctx *cx, int32_t process, void *user);
KILN_API kiln_status kiln_spmd_run(kiln_ctx *cx, kiln_comm *comm, kiln_spmd_fn fn, void *user);

/* kiln_exe_call on every process of a local communicator at once: process p takes
 * args[p * n_args ..] and stores its results at out_results[p * n_results ..] (new
 * tensors owned by cx's innermost scope; all NULL on error). n_args and n_results are the
 * executable's (kiln_exe_info). Errors: those of kiln_spmd_run and kiln_exe_call, the
 * message naming the process. */
KILN_API kiln_status kiln_exe_call_spmd(kiln_ctx *cx, kiln_exe *exe, kiln_comm *comm,
                                        kiln_tensor *const *args, kiln_tensor **out_results);

/* ---- collectives ----------------------------------------------------------------------- */

/* How a collective splits the grid into groups (StableHLO's process groups):
 *   channel_id <= 0:                       cross_replica: each group is `ids` as replica ids,
 *                                          one group per partition;
 *   channel_id > 0, !use_global_device_ids: cross_replica_and_partition: a group is
 *                                          `ids`' replicas in every partition;
 *   channel_id > 0, use_global_device_ids: flattened_ids: `ids` are process ids.
 * all_to_all and collective_broadcast read channel_id > 0 as cross_partition (ids are
 * partition ids) instead. `ids` holds n_groups rows of group_size ids, -1 padding shorter
 * groups; NULL (or n_groups 0) is one group of every replica (partition, process). */
typedef struct kiln_replica_groups {
    const int64_t *ids;
    int32_t n_groups, group_size;
    int64_t channel_id;
    bool use_global_device_ids;
} kiln_replica_groups;

/* Like every builder (kiln/ops.h): results owned by the innermost scope, NULL and a sticky
 * error on failure; traced, they become ops of the module. Result types depend on the
 * grid of the ctx that builds them (a group of "all replicas" has num_replicas members):
 * trace SPMD programs in a ctx bound to their communicator (kiln_ctx_set_comm; any process
 * of a local one). Errors: INVALID_ARGUMENT (bad groups or dimensions; a group naming a
 * process outside the grid or a group size that differs from the one the result type was
 * made for, when run), DEADLINE_EXCEEDED and ABORTED (another process failed or never
 * arrived), what the communicator reports. */

/* This process's replica id and partition id, as u32 scalars. */
KILN_API kiln_tensor *kiln_replica_id(kiln_ctx *cx);
KILN_API kiln_tensor *kiln_partition_id(kiln_ctx *cx);

/* Every process of a group gets computation(x@group[0], x@group[1], ...), combined in group
 * order. groups NULL: all replicas. */
KILN_API kiln_tensor *kiln_all_reduce(kiln_ctx *cx, kiln_tensor *x, const kiln_region *computation,
                                      const kiln_replica_groups *groups);

/* Every process of a group gets the group's x concatenated along `dim`, in group order. */
KILN_API kiln_tensor *kiln_all_gather(kiln_ctx *cx, kiln_tensor *x, int64_t dim,
                                      const kiln_replica_groups *groups);

/* all_reduce, then process i of the group keeps the i-th of group-size equal parts of the
 * result along `dim`. */
KILN_API kiln_tensor *kiln_reduce_scatter(kiln_ctx *cx, kiln_tensor *x, int64_t dim,
                                          const kiln_region *computation,
                                          const kiln_replica_groups *groups);

/* x split along split_dim into split_count parts; part i goes to process i of the group,
 * which concatenates the parts it receives along concat_dim, in group order. */
KILN_API kiln_tensor *kiln_all_to_all(kiln_ctx *cx, kiln_tensor *x, int64_t split_dim,
                                      int64_t concat_dim, int64_t split_count,
                                      const kiln_replica_groups *groups);

/* pairs: n_pairs (source, target) ids (replicas; partitions when channel_id > 0): each
 * target gets its source's x, every other process zeros. */
KILN_API kiln_tensor *kiln_collective_permute(kiln_ctx *cx, kiln_tensor *x, const int64_t *pairs,
                                              int32_t n_pairs, int64_t channel_id);

/* Every process of a group gets x@group[0]; processes in no group get zeros. */
KILN_API kiln_tensor *kiln_collective_broadcast(kiln_ctx *cx, kiln_tensor *x,
                                                const kiln_replica_groups *groups);

/* The group's first process gets computation(x@group[0], x@group[1], ...), combined in
 * group order; every other process gets zeros (the transpose of collective_broadcast). */
KILN_API kiln_tensor *kiln_collective_reduce(kiln_ctx *cx, kiln_tensor *x,
                                             const kiln_region *computation,
                                             const kiln_replica_groups *groups);

#ifdef __cplusplus
}
#endif

#endif
