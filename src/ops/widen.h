/* SPDX-License-Identifier: Apache-2.0 */
/* The arithmetic of the narrow types (kiln_dtype_is_narrow: i2, i4, ui2, ui4 and the f8,
 * f6 and f4 floats): an op that computes values widens its narrow operands to i8, ui8 or
 * f32, computes there, and narrows each result back with one rounding (floats: to nearest
 * even; integers: wrapping to the type's width). Eager ops (frontend/op_run.c) and
 * compiled programs (the widening pass, passes/widen.c) both follow this one rule, so
 * they agree bit for bit.
 *
 * What does not widen: ops that only move elements (data movement, select, control flow,
 * the collectives) and ops with regions (whose region ops widen one by one), constants
 * and iota (made in the narrow type directly), convert and bitcast_convert (which define
 * the narrowing), and popcnt, count_leading_zeros and the right shifts, which read a
 * sub-byte integer's bits and run on them directly (an arithmetic shift takes the type's
 * top bit as the sign, for ui4 too, which widening to ui8 would lose), and reduce_precision,
 * which rounds a small float in its own format (as the spec's reference does: widened to
 * f32 first, an f8 subnormal would be flushed by a reduction to its own exponent width). */
#ifndef KILN_OPS_WIDEN_H
#define KILN_OPS_WIDEN_H

#include <stdbool.h>

#include "ops/attrs.h"
#include "ops/infer.h"

/* The type a narrow dtype computes in: f32 for the small floats, i8 for i2 and i4, ui8
 * for ui2 and ui4; any other dtype is its own. */
kiln_dtype kiln__widened(kiln_dtype dtype);

/* Whether op, with these operand and result types, computes in widened types. */
bool kiln__op_widens(kiln_op op, const kiln__type *operands, int n_operands,
                     const kiln__type *results, int n_results);

/* Widens the dtypes that op's attributes name (a dot_general's or convolution's result
 * dtype), in place. */
void kiln__attrs_widen(kiln_op op, kiln__attrs *attrs);

#endif
