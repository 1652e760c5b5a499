/* SPDX-License-Identifier: Apache-2.0 */
/* Vectorized primitives over contiguous f32/f64 arrays (vec_prims.c): the code the fused
 * engine runs on each tile and the evaluator runs eagerly on a whole array, so that eager
 * and compiled results are the same bits. */
#ifndef KILN_BACKENDS_CPU_LIB_VEC_PRIMS_H
#define KILN_BACKENDS_CPU_LIB_VEC_PRIMS_H

#include <stdint.h>

#include "kiln/dtype.h"
#include "ops/op.h"

/* A primitive: r[i] = op(a[i], b[i], c[i]) for i < n, on arrays of one compute dtype (the
 * select predicate is one byte per element). Arguments a primitive does not take are
 * ignored. */
typedef void (*kiln__vec_prim_fn)(void *r, const void *a, const void *b, const void *c, int64_t n);

/* The primitive for `op` on f32 or f64 (AVX2/FMA when the CPU has them), or NULL when the
 * op has none (the evaluator's kernel then runs on the tile). `scalars`: a mask of the
 * operands read as one value from their first element (bit i: operand i), so that a
 * broadcast constant is never spread over a tile; 0 for none. Variants exist for either
 * operand of a binary op and for both bounds of clamp (0b101); NULL for any other mask. */
kiln__vec_prim_fn kiln__vec_prim(kiln_op op, kiln_dtype dtype, unsigned scalars);

/* The vector primitive of an f32/f64 transcendental (exp, expm1, log, log1p, sin, cos,
 * tan, tanh, cbrt, logistic) when the CPU has AVX2/FMA, or NULL: what the evaluator runs
 * eagerly, so that eager and compiled share one kernel. These primitives load each vector
 * before they store it, so r may be a. */
kiln__vec_prim_fn kiln__vec_transcendental(kiln_op op, kiln_dtype dtype);

#endif
