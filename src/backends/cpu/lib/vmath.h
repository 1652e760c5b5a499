/* SPDX-License-Identifier: Apache-2.0 */
/* f32 sine and cosine for the evaluator and the fused engine, computed in double precision
 * inside the vector lanes and rounded once to float. Before that rounding the error is below
 * 2^-33.5 relative, so the float result is the correctly rounded one except where the exact
 * value lies within that distance of a midpoint between two floats (then it is the other
 * neighbour): at most 0.50176 ulp, measured by bench/vmath_check.c on all 2^32 inputs
 * against libm's double sin/cos.
 *
 * |x| <= KILN__VM_TRIG_MAX takes the vector path; larger |x|, infinities and NaN take libm's
 * double sin/cos rounded to float (NaN for infinities, the input NaN quieted for NaN). The
 * baseline, AVX2+FMA and AVX-512 versions perform the same double operations in the same
 * order (the baseline one through fma()), so every version, every vector width and every
 * position inside a vector give the same bits. */
#ifndef KILN_BACKENDS_CPU_VMATH_H
#define KILN_BACKENDS_CPU_VMATH_H

#include <stdbool.h>
#include <stdint.h>

/* Up to this magnitude the two-part pi keeps the reduction accurate (checked exhaustively). */
#define KILN__VM_TRIG_MAX 0x1p20

typedef enum kiln__vm_fn { KILN__VM_SIN, KILN__VM_COS, KILN__VM_N_FN } kiln__vm_fn;

/* Instruction sets, widest last; KILN__VM_BEST picks the widest the CPU has. */
typedef enum kiln__vm_isa {
    KILN__VM_BASELINE,
    KILN__VM_AVX2,
    KILN__VM_AVX512,
    KILN__VM_N_ISA,
    KILN__VM_BEST = -1
} kiln__vm_isa;

/* r[i] = fn(x[i]) for i < n; x and r may be the same array, or not overlap at all. */
typedef void (*kiln__vm_kernel)(const float *x, float *r, int64_t n);

/* The kernel of `fn` for `isa`, or NULL when the CPU lacks that instruction set (or fn/isa
 * is out of range). Thread-safe. */
kiln__vm_kernel kiln__vm_get(kiln__vm_fn fn, kiln__vm_isa isa);

/* One element through the baseline version (the definition the vector ones follow). */
float kiln__vm_scalar(kiln__vm_fn fn, float x);

#endif
