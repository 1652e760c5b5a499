/* Pieces of the fused engine shared between its files (fused.c, fused_prims.c). */
#ifndef KILN_BACKENDS_CPU_FUSED_INTERNAL_H
#define KILN_BACKENDS_CPU_FUSED_INTERNAL_H

#include <stdint.h>

#include "backends/cpu/fused.h"

/* A primitive: r[i] = op(a[i], b[i], c[i]) for i < n, on tiles of one compute dtype (the
 * select predicate is one byte per element). Arguments a primitive does not take are
 * ignored. */
typedef void (*kiln__fprim)(void *r, const void *a, const void *b, const void *c, int64_t n);

/* The primitive for `op` on f32 or f64 (AVX2/FMA when the CPU has them), or NULL when the
 * op has none (the evaluator's kernel then runs on the tile). scalar 0 or 1: that operand
 * of a binary op is one value, read from its first element (NULL for other ops); -1: none. */
kiln__fprim kiln__fused_prim(kiln_op op, kiln_dtype dtype, int scalar);

/* The vector primitive of an f32/f64 transcendental (exp, expm1, log, log1p, sin, cos,
 * tan, tanh, cbrt, logistic) when the CPU has AVX2/FMA, or NULL: what the evaluator runs
 * eagerly, so that eager and compiled share one kernel. These primitives load each vector
 * before they store it, so r may be a. */
kiln__fprim kiln__fused_transcendental(kiln_op op, kiln_dtype dtype);

#endif
