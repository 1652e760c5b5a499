/* SPDX-License-Identifier: Apache-2.0 */
/* Float maximum/minimum as StableHLO defines them (NaN propagates, -0 < +0), through keys:
 * the bits of a float as a signed integer, negatives' magnitude bits flipped, order like
 * the floats with -0 < +0; NaN gets the key asked for (the largest, INT*_MAX, wins a
 * maximum; the smallest a minimum). Integer compares and selects vectorize, and the
 * results do not depend on the order of the operands. For f32 and f64:
 *   key_f32(x, nan_key), unkey_f32(k), fmax_f32(a, b), fmin_f32(a, b); likewise _f64.
 * Used by the reductions (eval_reduce.c) and the pooling kernels (eval_reduce_window.c). */
#ifndef KILN_BACKENDS_CPU_EVAL_FLOAT_KEYS_H
#define KILN_BACKENDS_CPU_EVAL_FLOAT_KEYS_H

#include <stdint.h>
#include <string.h>

#include "backends/cpu/eval/float_layout_f32.inc"
#define KEY key_f32
#define UNKEY unkey_f32
#define FMAX fmax_f32
#define FMIN fmin_f32
#include "backends/cpu/eval/reduce_float_keys.inc"
#include "backends/cpu/eval/float_layout_f64.inc"
#define KEY key_f64
#define UNKEY unkey_f64
#define FMAX fmax_f64
#define FMIN fmin_f64
#include "backends/cpu/eval/reduce_float_keys.inc"

#endif
