/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/mpi.h: a communicator of one process per MPI rank (libkiln_mpi, built when MPI is
 * found), for SPMD programs started by mpirun:
 *
 *     // mpirun -np 4 ./train: four replicas, one per rank
 *     kiln_comm *comm;
 *     kiln_comm_create_mpi(cx, NULL, MPI_COMM_NULL, &comm);  // MPI_Init if needed
 *     kiln_ctx_set_comm(cx, comm, kiln_comm_self(comm));     // this rank's process
 *     kiln_comm_release(comm);                               // the ctx holds it
 *     ... kiln_exe_call(cx, exe, ...): its collectives talk to the other ranks ...
 *
 * Process p of the grid is rank p of the MPI communicator. The collectives are built from
 * MPI's all-gather (on a communicator per process group, split once and cached) and
 * point-to-point messages; reductions are kiln's own, in group order, so every rank gets
 * the same bits, and the same as with kiln_comm_create_local (kiln/spmd.h) for any MPI
 * library and algorithm. Before its data moves, each collective checks that every rank
 * runs the same op (a hash of its attributes and types, one 8-byte all-gather): ranks that
 * disagree all fail with INVALID_ARGUMENT naming both ops. A rank that never arrives makes
 * the others fail with DEADLINE_EXCEEDED after the options' timeout_ms; that communicator
 * cannot be used again (an MPI collective cannot be withdrawn): its later collectives fail
 * with ABORTED, and the program should end (MPI_Abort, or MPI_Finalize).
 *
 * MPI calls are serialized by the communicator: MPI_THREAD_SERIALIZED suffices when
 * several ctxs of one process use it. */
#ifndef KILN_MPI_H
#define KILN_MPI_H

#include <mpi.h>

#include "kiln/spmd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A communicator over the ranks of mpi_comm (duplicated: kiln's messages never meet the
 * caller's), or of MPI_COMM_WORLD for MPI_COMM_NULL, in which case MPI is initialized
 * (MPI_THREAD_SERIALIZED) when it is not yet, and finalized when the last communicator
 * that did so is released. options NULL: one replica per rank; otherwise num_replicas x
 * num_partitions must be the number of ranks. *out_comm is new (kiln_comm_release); its
 * kind is "mpi" and kiln_comm_self its rank. Errors: INVALID_ARGUMENT (NULL arguments,
 * options as kiln_comm_create_local's, a grid that is not the ranks, an uninitialized MPI
 * with a communicator given, more than KILN_COMM_MAX_PROCESSES ranks), UNAVAILABLE (MPI
 * cannot start or has been finalized), RESOURCE_EXHAUSTED. */
__attribute__((visibility("default"))) kiln_status
kiln_comm_create_mpi(kiln_ctx *cx, const kiln_comm_options *options, MPI_Comm mpi_comm,
                     kiln_comm **out_comm);

#ifdef __cplusplus
}
#endif

#endif
