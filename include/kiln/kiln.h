/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/kiln.h: everything public in one include.
 *
 * kiln is a tracing JIT compiler for array programs. This header pulls in the whole public
 * API; each header it includes documents its part:
 *   kiln/status.h  status codes          kiln/ctx.h     ctx, errors, logging, scopes
 *   kiln/alloc.h   injectable allocator  kiln/device.h  devices (DLPack codes)
 *   kiln/dtype.h   element types         kiln/shape.h   shapes
 *   kiln/tensor.h  tensors               kiln/random.h  Philox random tensors
 *   kiln/npy.h     .npy files            kiln/safetensors.h  safetensors files
 *   kiln/ops.h     the op builders (StableHLO ops and numpy-style conveniences), with
 *                  kiln/ops_elementwise.h, ops_movement.h, ops_indexing.h, ops_reduce.h,
 *                  ops_linalg.h and ops_control.h
 *   kiln/tree.h    tree descriptors: C structs of tensors as function arguments,
 *                  flatten and unflatten
 *   kiln/jit.h     tracing, lower -> compile -> call, the jit cache
 *   kiln/autodiff.h  reverse and forward mode (grad, vjp, jvp, custom_vjp)
 *   kiln/vmap.h    batching: a function of one example run on a batch
 *   kiln/parse.h   reading StableHLO text
 *   kiln/spmd.h    several processes: communicators, the collectives, SPMD calls
 *   kiln/nn.h      layers, losses, optimizers, models, weights on disk, digits data,
 *                  data-parallel training
 * (kiln/mpi.h, the MPI communicator, comes with libkiln_mpi.)
 */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include "kiln/alloc.h"
#include "kiln/autodiff.h"
#include "kiln/ctx.h"
#include "kiln/custom_call.h"
#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/export.h"
#include "kiln/jit.h"
#include "kiln/nn.h"
#include "kiln/npy.h"
#include "kiln/ops.h"
#include "kiln/parse.h"
#include "kiln/random.h"
#include "kiln/safetensors.h"
#include "kiln/shape.h"
#include "kiln/spmd.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "kiln/tree.h"
#include "kiln/version.h"
#include "kiln/vmap.h"

#endif
