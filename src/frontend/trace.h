/* SPDX-License-Identifier: Apache-2.0 */
/* Tracing: while kiln_lower runs a function, builders with traced operands record ops. */
#ifndef KILN_FRONTEND_TRACE_H
#define KILN_FRONTEND_TRACE_H

#include "ir/ir.h"

typedef struct kiln__trace {
    kiln_module *module;
    kiln__block *block; /* where ops are recorded now */
    struct kiln__trace *outer;
    int depth; /* how many traces enclose this one (regions, nested transforms) */
} kiln__trace;

/* How deep regions and traces may nest: deeper is RESOURCE_EXHAUSTED, never a crash. The
 * parser takes what tracing makes (src/ir/parse.c allows more, for lists and attributes). */
#define KILN__MAX_TRACE_DEPTH 128

/* Sets *inner up to record into block b of m one level inside outer (NULL: the top); fails
 * with RESOURCE_EXHAUSTED naming `what` when that nests deeper than KILN__MAX_TRACE_DEPTH
 * or than the calling thread's stack has room for. */
kiln_status kiln__trace_nest(kiln_ctx *cx, const char *what, kiln__trace *inner, kiln__trace *outer,
                             kiln_module *m, kiln__block *b);

/* True while kiln_lower traces a function on cx. */
bool kiln__tracing(const kiln_ctx *cx);

/* True when cx is tracing and op should be recorded rather than run: some operand is
 * traced, or the op has regions. */
bool kiln__trace_wants(kiln_ctx *cx, kiln_op op, kiln_tensor *const *operands, int n_operands);

/* Records op into the current trace; results become traced tensors owned by the
 * innermost scope. Same contract as kiln__op_run. */
kiln_status kiln__trace_op(kiln_ctx *cx, kiln_op op, kiln__attrs *attrs,
                           kiln_tensor *const *operands, int n_operands, kiln_tensor **results,
                           int n_results);

/* The IR value for a tensor inside the current trace: its own value if traced by this
 * trace, else a constant op recorded in the current block. NULL with an error recorded
 * when the tensor belongs to another (finished) trace. */
kiln__value *kiln__trace_value_of(kiln_ctx *cx, const char *fn, kiln_tensor *t);

/* A traced tensor for t in the current trace: t itself if traced, else a new traced
 * tensor standing for a constant op holding t (so ops on it are recorded, not folded). */
kiln_tensor *kiln__trace_capture(kiln_ctx *cx, const char *fn, kiln_tensor *t);

/* Traces `region` into a new block of `parent` (whose op is `op`, region index i) with
 * arguments of the given types; stores the block. */
kiln_status kiln__trace_region(kiln_ctx *cx, const char *what, const kiln_region *region,
                               kiln__ir_op *parent, int32_t index, const kiln__type *arg_types,
                               int32_t n_args, int32_t n_results);

/* How messages name region r of a control op: "true branch" / "false branch" (if),
 * "branch 2" (case), "region 1" (others). */
void kiln__branch_name(kiln_op kind, int32_t r, char *buf, size_t size);

/* The types of the n_results results of `region` on arguments of arg_types, found by
 * tracing it (into a scratch block of the current trace, or of a module of its own when
 * cx is not tracing) that is dropped again: nothing it records stays, and ops on concrete
 * tensors alone run as they would. For checking a branch that does not run, and learning
 * what a loop body returns before building the loop. */
kiln_status kiln__trace_result_types(kiln_ctx *cx, const char *what, const kiln_region *region,
                                     const kiln__type *arg_types, int32_t n_args, int32_t n_results,
                                     kiln__type *out);

#endif
