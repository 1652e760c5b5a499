/* SPDX-License-Identifier: Apache-2.0 */
/* IEEE-754 maximum and minimum as StableHLO defines them: NaN propagates (quieted), and
 * -0 < +0. kiln__nanmaxf / kiln__nanminf for f32, kiln__nanmax / kiln__nanmin for f64; the
 * evaluator's kernels and the vector primitives call the same functions. */
#ifndef KILN_BACKENDS_CPU_LIB_FLOAT_MINMAX_H
#define KILN_BACKENDS_CPU_LIB_FLOAT_MINMAX_H

#include <stdint.h>
#include <string.h>

#define FT float
#define IT int32_t
#define UT uint32_t
#define MAXMAG 0x7fffffff
#define QUIET 0x7f800000
#define FN(name) kiln__nan##name##f
#include "backends/cpu/lib/float_minmax.inc"

#define FT double
#define IT int64_t
#define UT uint64_t
#define MAXMAG 0x7fffffffffffffff
#define QUIET 0x7ff0000000000000
#define FN(name) kiln__nan##name
#include "backends/cpu/lib/float_minmax.inc"

#endif
