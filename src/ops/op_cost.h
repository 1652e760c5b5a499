/* SPDX-License-Identifier: Apache-2.0 */
/* What one run of an op costs: arithmetic, transcendental calls and the bytes it touches.
 * Used for kiln_exe_info's cost (and so the PJRT plugin's cost analysis) and for the
 * fused kernels' costs. The conventions are XLA's cost analysis's: a multiply-add is two
 * flops (dot_general and convolution count 2 per multiply-accumulate), a transcendental
 * function is counted apart from flops, and data movement costs bytes, not flops. */
#ifndef KILN_OPS_OP_COST_H
#define KILN_OPS_OP_COST_H

#include <stdint.h>

#include "ops/attrs.h"
#include "ops/infer.h"
#include "ops/op.h"

typedef struct kiln__cost {
    int64_t flops;           /* arithmetic per element; 2 per multiply-accumulate */
    int64_t transcendentals; /* exp, log, sin, ... per element */
    int64_t bytes_read;      /* operand bytes */
    int64_t bytes_written;   /* result bytes */
} kiln__cost;

/* Is `op` an elementwise op whose evaluation costs a transcendental function call? */
bool kiln__op_transcendental(kiln_op op);

/* The types of an op's operands and results, as the caller holds them: index i below
 * n_operands is operand i, the rest are results (i - n_operands). */
typedef const kiln__type *(*kiln__cost_type_fn)(const void *holder, int32_t i);

/* The cost of one run of an op. Region ops (while, if, case, call, and the update regions
 * of reduce, scatter, sort) count their own work: a reduction one flop per reduced
 * element, a loop or branch nothing beyond moving its operands, since its trip count or
 * branch is not known here. Sums saturate at INT64_MAX rather than overflow. Pure;
 * thread-safe. */
kiln__cost kiln__op_cost(kiln_op op, const kiln__attrs *attrs, int32_t n_operands,
                         int32_t n_results, kiln__cost_type_fn type, const void *holder);

/* a + b, saturating at INT64_MAX (costs are non-negative). */
void kiln__cost_add(kiln__cost *total, const kiln__cost *c);

/* total += c * times (times >= 0), saturating. */
void kiln__cost_add_times(kiln__cost *total, const kiln__cost *c, int64_t times);

/* How many times a while's body runs when that is known at compile time (a loop
 * kiln_fori_loop made: its attributes say), else -1. */
int64_t kiln__loop_trip_count(const kiln__attrs *attrs);

#endif
