/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU evaluator: one reference kernel per op (kiln__eval_<name>), used by eager mode
 * and as the oracle for compiled executors. Kernels are correct first, and written so the
 * compiler vectorizes their inner loops; dot_general goes to BLAS. */
#ifndef KILN_BACKENDS_CPU_EVAL_H
#define KILN_BACKENDS_CPU_EVAL_H

#include "backend/backend.h"
#include "backend/region.h"
#include "core/tensor_internal.h"

/* A reference kernel's parameters (those of kiln__eval_fn), and the head of its definition:
 * `KILN__EVAL(ADD) { ... }` defines kiln__eval_ADD. */
#define KILN__EVAL_PARAMS                                                                 \
    kiln_ctx *cx, const kiln__attrs *attrs, kiln_tensor *const *operands, int n_operands, \
        kiln_tensor **results, int n_results
#define KILN__EVAL(NAME) kiln_status kiln__eval_##NAME(KILN__EVAL_PARAMS)

#define KILN_OP(name, text, nin, nout, flags) KILN__EVAL(name);
#include "ops/ops.def"
#undef KILN_OP

/* The evaluator (kernels.c): whether it runs ops of a kind on a dtype (the backends'
 * supports_op), runs op's reference kernel (UNIMPLEMENTED for an op outside the table; the
 * caller has asked supports_op, as kiln_compile does), the same after checking the tensors'
 * dtypes (eager mode: the backends' eval_op), and builds what a kernel needs at compile time
 * (oneDNN primitives for convolutions, with a third operand for a fused epilogue's bias).
 * The compiled engine and the interpreter backend call these directly. */
bool kiln__cpu_supports_op(kiln_op op, kiln_dtype dtype);
kiln_status kiln__cpu_eager_op(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                               kiln_tensor *const *operands, int n_operands, kiln_tensor **results,
                               int n_results);
kiln_status kiln__cpu_eval_op(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                              kiln_tensor *const *operands, int n_operands, kiln_tensor **results,
                              int n_results);
kiln_status kiln__cpu_prepare_op(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                                 const kiln__type *operands, int n_operands,
                                 const kiln__type *results, int n_results);

/* The ctx's logical CPU devices (cpu_devices.c), which the CPU and interpreter backends
 * share. */
int32_t kiln__cpu_device_count(const kiln_ctx *cx);
kiln_status kiln__cpu_device_info(const kiln_ctx *cx, int32_t id, kiln__device_info *out);

/* Element pointers of a tensor: const for operands, writable for preallocated results.
 * Inline, so that a kernel file needs no other file of the evaluator for them. */
static inline const void *kiln__in(const kiln_tensor *t) { return kiln_tensor_data(t); }
static inline void *kiln__out(kiln_tensor *t) { return kiln__tensor_mutable_data(t); }

#endif
