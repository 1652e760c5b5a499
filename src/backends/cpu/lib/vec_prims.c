/* SPDX-License-Identifier: Apache-2.0 */
/* The fused engine's vectorized primitives over f32/f64 tiles (fused_internal.h). Every
 * one computes exactly what the evaluator's kernel for the op computes on f32/f64 (the same
 * expressions, the same SLEEF and vmath.h functions, the same NaN and -0 rules), so a fused
 * kernel's results are bitwise the evaluator's. Each exists twice: compiled for the baseline
 * ISA and for AVX2+FMA; the CPU decides which, once, when a kernel is built. */
#include "backends/cpu/lib/cpu_features.h"
#include "backends/cpu/lib/vec_prims.h"

#include <math.h>

#include "backends/cpu/lib/float_minmax.h"
#include "backends/cpu/lib/sleef_avx2.h"
#include "backends/cpu/lib/vmath.h"

#define AVX2_TARGET __attribute__((target("avx2,fma")))

/* ---- elementwise loops -------------------------------------------------------------------- */

/* Each type's loops twice: for the baseline ISA and for AVX2+FMA (vec_prims_loops.inc). */
#define T float
#define FN(name) name##_f32_base
#define TARGET
#define NANMAX kiln__nanmaxf
#define NANMIN kiln__nanminf
#define FABS fabsf
#define SQRT sqrtf
#define ONE 1.0f
#include "backends/cpu/lib/vec_prims_loops.inc"

#define T float
#define FN(name) name##_f32_avx2
#define TARGET AVX2_TARGET
#define NANMAX kiln__nanmaxf
#define NANMIN kiln__nanminf
#define FABS fabsf
#define SQRT sqrtf
#define ONE 1.0f
#include "backends/cpu/lib/vec_prims_loops.inc"

#define T double
#define FN(name) name##_f64_base
#define TARGET
#define NANMAX kiln__nanmax
#define NANMIN kiln__nanmin
#define FABS fabs
#define SQRT sqrt
#define ONE 1.0
#include "backends/cpu/lib/vec_prims_loops.inc"

#define T double
#define FN(name) name##_f64_avx2
#define TARGET AVX2_TARGET
#define NANMAX kiln__nanmax
#define NANMIN kiln__nanmin
#define FABS fabs
#define SQRT sqrt
#define ONE 1.0
#include "backends/cpu/lib/vec_prims_loops.inc"

/* ---- transcendentals ---------------------------------------------------------------------- */

/* The scalar forms are the evaluator's (used when SLEEF or AVX2 is missing). */
#include "backends/cpu/lib/libm_f32.inc"
#define FN(name) name##_f32s
#include "backends/cpu/lib/vec_prims_scalar.inc"

#include "backends/cpu/lib/libm_f64.inc"
#define FN(name) name##_f64s
#include "backends/cpu/lib/vec_prims_scalar.inc"

#ifdef KILN_HAVE_SLEEF
#include "backends/cpu/lib/sleef_avx2_f32.inc"
#define T float
#define FN(name) name##_f32v
#include "backends/cpu/lib/vec_prims_avx2.inc"

#include "backends/cpu/lib/sleef_avx2_f64.inc"
#define T double
#define FN(name) name##_f64v
#include "backends/cpu/lib/vec_prims_avx2.inc"

/* AVX-512 for exp (f32, f64) and f64 sin and cos: the same SLEEF functions 16 floats or 8
 * doubles at a time, whose results equal the 8-wide ones' element by element
 * (tests/runtime/test_fused.c compares them with the evaluator's bit for bit; log, for one, does
 * not agree on every input, so the others stay 8 wide). */
#define AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx2,fma")))

extern AVX512_TARGET __m512 Sleef_finz_expf16_u10avx512f(__m512);
extern AVX512_TARGET __m512d Sleef_finz_expd8_u10avx512f(__m512d);
extern AVX512_TARGET __m512d Sleef_finz_sind8_u10avx512f(__m512d);
extern AVX512_TARGET __m512d Sleef_finz_cosd8_u10avx512f(__m512d);

#define T float
#define V __m512
#define MASK __mmask16
#define W 16
#define LOADU _mm512_loadu_ps
#define STOREU _mm512_storeu_ps
#define MASKZ_LOADU _mm512_maskz_loadu_ps
#define MASK_STOREU _mm512_mask_storeu_ps
#define FN(name) name##_f32w
#define VEXP Sleef_finz_expf16_u10avx512f
#include "backends/cpu/lib/vec_prims_avx512.inc"

#define T double
#define V __m512d
#define MASK __mmask8
#define W 8
#define LOADU _mm512_loadu_pd
#define STOREU _mm512_storeu_pd
#define MASKZ_LOADU _mm512_maskz_loadu_pd
#define MASK_STOREU _mm512_mask_storeu_pd
#define FN(name) name##_f64w
#define VEXP Sleef_finz_expd8_u10avx512f
#define VSIN Sleef_finz_sind8_u10avx512f
#define VCOS Sleef_finz_cosd8_u10avx512f
#include "backends/cpu/lib/vec_prims_avx512.inc"

#define TRANSCENDENTAL(name, f64)                               \
    (kiln__cpu_avx2_fma() ? ((f64) ? name##_f64v : name##_f32v) \
                          : ((f64) ? name##_f64s : name##_f32s))
#define TRANSCENDENTAL512(name, f64) \
    (kiln__cpu_avx512() ? ((f64) ? name##_f64w : name##_f32w) : TRANSCENDENTAL(name, f64))
#define F64_TRANSCENDENTAL512(name) \
    (kiln__cpu_avx512() ? name##_f64w : kiln__cpu_avx2_fma() ? name##_f64v : name##_f64s)
#else
#define TRANSCENDENTAL(name, f64) ((f64) ? name##_f64s : name##_f32s)
#define TRANSCENDENTAL512(name, f64) TRANSCENDENTAL(name, f64)
#define F64_TRANSCENDENTAL512(name) name##_f64s
#endif

/* sin and cos of f32 (f16/bf16 registers hold f32): vmath.h, the evaluator's kernels. */
static void sin_f32_vm(void *r, const void *a, const void *b, const void *c, int64_t n) {
    (void)b, (void)c;
    kiln__vm_get(KILN__VM_SIN, KILN__VM_BEST)(a, r, n);
}
static void cos_f32_vm(void *r, const void *a, const void *b, const void *c, int64_t n) {
    (void)b, (void)c;
    kiln__vm_get(KILN__VM_COS, KILN__VM_BEST)(a, r, n);
}

/* The loop for the CPU (avx2) and the element type (f64); PICK3 also by which operand is a
 * scalar (scalars: bit 0 the first, bit 1 the second). */
#define PICK(name) \
    (avx2 ? (f64 ? name##_f64_avx2 : name##_f32_avx2) : (f64 ? name##_f64_base : name##_f32_base))
#define PICK3(name) (scalars == 2 ? PICK(name##_vs) : scalars == 1 ? PICK(name##_sv) : PICK(name))

kiln__vec_prim_fn kiln__vec_prim(kiln_op op, kiln_dtype dtype, unsigned scalars) {
    bool f64 = dtype == KILN_F64, avx2 = kiln__cpu_avx2_fma();
    if (dtype != KILN_F32 && dtype != KILN_F64) return NULL;
    bool binary = op == KILN_OP_ADD || op == KILN_OP_SUBTRACT || op == KILN_OP_MULTIPLY ||
                  op == KILN_OP_DIVIDE || op == KILN_OP_MAXIMUM || op == KILN_OP_MINIMUM;
    if (op == KILN_OP_CLAMP && (scalars == 0 || scalars == 5)) {
        return scalars ? PICK(clamp_ss) : PICK(clamp);
    }
    if (scalars != 0 && !(binary && (scalars == 1 || scalars == 2))) return NULL;
    switch (op) {
    case KILN_OP_ADD: return PICK3(add);
    case KILN_OP_SUBTRACT: return PICK3(sub);
    case KILN_OP_MULTIPLY: return PICK3(mul);
    case KILN_OP_DIVIDE: return PICK3(div);
    case KILN_OP_MAXIMUM: return PICK3(max);
    case KILN_OP_MINIMUM: return PICK3(min);
    case KILN_OP_NEGATE: return PICK(neg);
    case KILN_OP_ABS: return PICK(abs);
    case KILN_OP_SQRT: return PICK(sqrt);
    case KILN_OP_RSQRT: return PICK(rsqrt);
    case KILN_OP_SELECT: return PICK(select);
    case KILN_OP_EXPONENTIAL: return TRANSCENDENTAL512(exp, f64);
    case KILN_OP_EXPONENTIAL_MINUS_ONE: return TRANSCENDENTAL(expm1, f64);
    case KILN_OP_LOG: return TRANSCENDENTAL(log, f64);
    case KILN_OP_LOG_PLUS_ONE: return TRANSCENDENTAL(log1p, f64);
    case KILN_OP_SINE: return f64 ? F64_TRANSCENDENTAL512(sin) : sin_f32_vm;
    case KILN_OP_COSINE: return f64 ? F64_TRANSCENDENTAL512(cos) : cos_f32_vm;
    case KILN_OP_TAN: return TRANSCENDENTAL(tan, f64);
    case KILN_OP_TANH: return TRANSCENDENTAL(tanh, f64);
    case KILN_OP_CBRT: return TRANSCENDENTAL(cbrt, f64);
    case KILN_OP_LOGISTIC: return TRANSCENDENTAL(logistic, f64);
    default: return NULL;
    }
}

kiln__vec_prim_fn kiln__vec_transcendental(kiln_op op, kiln_dtype dtype) {
    if (!kiln__cpu_avx2_fma() || (dtype != KILN_F32 && dtype != KILN_F64)) return NULL;
    switch (op) {
    case KILN_OP_EXPONENTIAL:
    case KILN_OP_EXPONENTIAL_MINUS_ONE:
    case KILN_OP_LOG:
    case KILN_OP_LOG_PLUS_ONE:
    case KILN_OP_SINE:
    case KILN_OP_COSINE:
    case KILN_OP_TAN:
    case KILN_OP_TANH:
    case KILN_OP_CBRT:
    case KILN_OP_LOGISTIC: return kiln__vec_prim(op, dtype, 0);
    default: return NULL;
    }
}
