/* SPDX-License-Identifier: Apache-2.0 */
/* Running an op from a builder: check operands, infer result types, then evaluate on
 * the tensors' device (or, later, record it in the trace). */
#ifndef KILN_FRONTEND_OP_RUN_H
#define KILN_FRONTEND_OP_RUN_H

#include "ops/attrs.h"
#include "ops/infer.h"
#include "ops/op.h"

/* Runs `op` on operands[0..n_operands-1] with attrs (attrs->fn names the builder for
 * messages). Results go to results[0..n_results-1], owned by the innermost scope; on error
 * they are all NULL and the error is in cx. A NULL operand is reported as "<fn>: operand
 * <i> is NULL" unless an error is already recorded. */
kiln_status kiln__op_run(kiln_ctx *cx, kiln_op op, kiln__attrs *attrs, kiln_tensor *const *operands,
                         int n_operands, kiln_tensor **results, int n_results);

/* One-result convenience: returns the result or NULL. */
kiln_tensor *kiln__op_run1(kiln_ctx *cx, kiln_op op, kiln__attrs *attrs,
                           kiln_tensor *const *operands, int n_operands);

/* kiln__op_run1 for an elementwise op whose result may take over the memory of `reuse`
 * (one of the operands, or NULL) when nothing else can reach it: same shape and element
 * size, one reference, no views, kiln's own memory. The caller drops its reference to
 * `reuse` afterwards; the result then holds that memory alone. While tracing, and on a
 * backend with memory of its own, reuse is ignored. */
kiln_tensor *kiln__op_run1_over(kiln_ctx *cx, kiln_op op, kiln__attrs *attrs,
                                kiln_tensor *const *operands, int n_operands, kiln_tensor *reuse);

/* Broadcasts operands[0..n-1] to their common numpy shape, replacing (in the array) the
 * ones whose shape differs by broadcast_in_dim results. Records "<fn>: operand i has shape
 * ...; expected ... or a shape that broadcasts with it" when they do not broadcast. */
kiln_status kiln__broadcast_operands(kiln_ctx *cx, const char *fn, kiln_tensor **operands, int n);

/* The type of a tensor. */
kiln__type kiln__type_of(const kiln_tensor *t);

#endif
