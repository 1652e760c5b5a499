/* SPDX-License-Identifier: Apache-2.0 */
/* f32 sine and cosine evaluated in double precision (vmath.h). A float has 24 bits and a
 * double 53, so plain double arithmetic leaves ~29 bits of room for the reduction and
 * polynomial errors: no double-float tricks, one short polynomial, one rounding at the end.
 *
 * Reduction by pi: sin takes q = round(x/pi) and h = q, cos takes q = floor(x/pi) and
 * h = q + 1/2; then r = x - h*pi lies in [-pi/2, pi/2] and the result is (-1)^q sin(r) for
 * sin, (-1)^(q+1) sin(r) = (-1)^q sin(-r) for cos. cos finds floor(x/pi) as x/pi - 1/2
 * rounded to the nearest integer by the magic constant, which also gives q's parity (no
 * float is close enough to a multiple of pi for the two to differ, and where they do, for
 * tiny x, both give 1; the results were compared with floor's over all 2^32 floats), and
 * computes -r rather than r (each negated step rounds exactly as the unnegated one): two
 * operations fewer than floor and a separate parity. x - h*PI_HI is exact (both are
 * multiples of 2^-52 once |x| >= 2^-29, and the difference is below 2), and PI_LO carries
 * the next 53 bits of pi, so
 * for |x| <= KILN__VM_TRIG_MAX r is accurate to a few 2^-53 relative (the float closest to
 * a multiple of pi/2 in that range is far enough from it; the exhaustive check confirms).
 *
 * sin(r) = r * P(r^2), P(s) = 1 + s*g(s) with g of degree 4: a near-minimax (Chebyshev) fit
 * computed with mpmath, relative error 2^-33.8 on [-pi/2, pi/2], rounded to double. With
 * the reduction error, the double result is within 2^-33.5 relative of sin(x): at most
 * 0.5 + 2^-9.5 ulp once rounded to float (0.50176 measured over all floats). The product
 * form keeps sin(-0) = -0. Each step below is one IEEE double operation (fma() is one
 * rounding), so the scalar form and the vector forms give the same bits. */
#include "backends/cpu/lib/vmath.h"
#include "backends/cpu/lib/cpu_features.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define KILN_VM_X86 1
#include <immintrin.h>
#else
#define KILN_VM_X86 0
#endif

#define PI_HI 0x1.921fb54442d18p+1
#define PI_LO 0x1.1a62633145c07p-53
#define INV_PI 0x1.45f306dc9c883p-2
/* v + ROUND_MAGIC rounds v to an integer held in the low mantissa bits (|v| < 2^51), so
 * bit 0 of its representation is the parity of that integer. */
#define ROUND_MAGIC 0x1.8p52

/* g(s) = S1 + s*(S2 + s*(S3 + s*(S4 + s*S5))) ~ (sin(r)/r - 1)/s, s = r^2. */
#define S5 -0x1.9db1cc2a4cb87p-26
#define S4 0x1.7196917ff9c49p-19
#define S3 -0x1.a01905ba4208ap-13
#define S2 0x1.11110fdaaf87bp-7
#define S1 -0x1.5555555460530p-3

static inline uint64_t bits_of(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static inline double double_of(uint64_t u) {
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* ---- the scalar form (the vector forms follow it operation by operation) ----------------- */

/* Huge arguments, infinities and NaN: libm's double sin/cos are correctly rounded in
 * practice, so rounding their result to float is as good as the fast path. */
static float trig_slow(float x, bool is_cos) {
    return (float)(is_cos ? cos((double)x) : sin((double)x));
}

static float trig_one(float xf, bool is_cos) {
    if (!(fabsf(xf) <= (float)KILN__VM_TRIG_MAX)) return trig_slow(xf, is_cos);
    double x = xf, h, parity, r;
    if (is_cos) {
        /* parity: ROUND_MAGIC + q; r here is -(x - h*pi) */
        parity = fma(x, INV_PI, -0.5) + ROUND_MAGIC;
        h = (parity - ROUND_MAGIC) + 0.5;
        r = fma(h, PI_HI, -x);
        r = fma(h, PI_LO, r);
    } else {
        /* h = +0 for x = -0, which keeps the sign of r (round() would give -0). */
        parity = fma(x, INV_PI, ROUND_MAGIC);
        h = parity - ROUND_MAGIC;
        r = fma(-h, PI_HI, x);
        r = fma(-h, PI_LO, r);
    }
    double s = r * r;
    double g = fma(S5, s, S4);
    g = fma(g, s, S3);
    g = fma(g, s, S2);
    g = fma(g, s, S1);
    double p = r * fma(g, s, 1.0);
    return (float)double_of(bits_of(p) ^ bits_of(parity) << 63);
}

float kiln__vm_scalar(kiln__vm_fn fn, float x) { return trig_one(x, fn == KILN__VM_COS); }

static void sin_base(const float *x, float *r, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        r[i] = trig_one(x[i], false);
}

static void cos_base(const float *x, float *r, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        r[i] = trig_one(x[i], true);
}

#if KILN_VM_X86

/* The loops take is_cos as a constant: inlined, each one is specialized. */
#define INLINE inline __attribute__((always_inline))

/* ---- AVX2 + FMA: 4 doubles per vector, 8 floats per step --------------------------------- */

#define AVX2_TARGET __attribute__((target("avx2,fma")))

/* trig_one's fast path on 4 doubles (vmath_trig.inc). */
#define FN trig4
#define TARGET AVX2_TARGET
#define V __m256d
#define ADD _mm256_add_pd
#define SUB _mm256_sub_pd
#define MUL _mm256_mul_pd
#define FMADD _mm256_fmadd_pd
#define FMSUB _mm256_fmsub_pd
#define FNMADD _mm256_fnmadd_pd
#define SET1 _mm256_set1_pd
#define XOR _mm256_xor_pd
#define SLLI_EPI64 _mm256_slli_epi64
#define TO_INT _mm256_castpd_si256
#define TO_PD _mm256_castsi256_pd
#include "backends/cpu/lib/vmath_trig.inc"

/* 8 elements from xs into rs (which may be xs). */
static AVX2_TARGET INLINE void step8(const float *xs, float *rs, bool is_cos) {
    __m256 xf = _mm256_loadu_ps(xs);
    __m256d lo = trig4(_mm256_cvtps_pd(_mm256_castps256_ps128(xf)), is_cos);
    __m256d hi = trig4(_mm256_cvtps_pd(_mm256_extractf128_ps(xf, 1)), is_cos);
    __m256 res = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
    __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), xf);
    int slow = _mm256_movemask_ps(
        _mm256_cmp_ps(ax, _mm256_set1_ps((float)KILN__VM_TRIG_MAX), _CMP_NLE_UQ));
    if (slow) {
        float xb[8], rb[8];
        _mm256_storeu_ps(xb, xf);
        _mm256_storeu_ps(rb, res);
        for (int j = 0; j < 8; j++)
            if (slow >> j & 1) rb[j] = trig_slow(xb[j], is_cos);
        res = _mm256_loadu_ps(rb);
    }
    _mm256_storeu_ps(rs, res);
}

static AVX2_TARGET INLINE void run_avx2(const float *x, float *r, int64_t n, bool is_cos) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        step8(x + i, r + i, is_cos);
    if (i < n) {
        float buf[8] = {0};
        memcpy(buf, x + i, (size_t)(n - i) * sizeof *buf);
        step8(buf, buf, is_cos);
        memcpy(r + i, buf, (size_t)(n - i) * sizeof *buf);
    }
}

static AVX2_TARGET void sin_avx2(const float *x, float *r, int64_t n) { run_avx2(x, r, n, false); }
static AVX2_TARGET void cos_avx2(const float *x, float *r, int64_t n) { run_avx2(x, r, n, true); }

/* ---- AVX-512: 8 doubles per vector, 16 floats per step ----------------------------------- */

#define AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx2,fma")))

/* trig_one's fast path on 8 doubles (vmath_trig.inc). */
#define FN trig8
#define TARGET AVX512_TARGET
#define V __m512d
#define ADD _mm512_add_pd
#define SUB _mm512_sub_pd
#define MUL _mm512_mul_pd
#define FMADD _mm512_fmadd_pd
#define FMSUB _mm512_fmsub_pd
#define FNMADD _mm512_fnmadd_pd
#define SET1 _mm512_set1_pd
#define XOR _mm512_xor_pd
#define SLLI_EPI64 _mm512_slli_epi64
#define TO_INT _mm512_castpd_si512
#define TO_PD _mm512_castsi512_pd
#include "backends/cpu/lib/vmath_trig.inc"

/* The `mask` lanes of 16 elements from xs into rs (which may be xs); masked-off lanes are
 * neither read nor written. */
static AVX512_TARGET INLINE void step16(const float *xs, float *rs, __mmask16 mask, bool is_cos) {
    __m512 xf = _mm512_maskz_loadu_ps(mask, xs);
    __m256 xhi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(xf), 1));
    __m512d lo = trig8(_mm512_cvtps_pd(_mm512_castps512_ps256(xf)), is_cos);
    __m512d hi = trig8(_mm512_cvtps_pd(xhi), is_cos);
    __m512 res = _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(_mm512_cvtpd_ps(lo))),
                           _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1));
    __mmask16 slow = _mm512_cmp_ps_mask(_mm512_abs_ps(xf), _mm512_set1_ps((float)KILN__VM_TRIG_MAX),
                                        _CMP_NLE_UQ) &
                     mask;
    if (slow) {
        float xb[16], rb[16];
        _mm512_storeu_ps(xb, xf);
        _mm512_storeu_ps(rb, res);
        for (int j = 0; j < 16; j++)
            if (slow >> j & 1) rb[j] = trig_slow(xb[j], is_cos);
        res = _mm512_loadu_ps(rb);
    }
    _mm512_mask_storeu_ps(rs, mask, res);
}

static AVX512_TARGET INLINE void run_avx512(const float *x, float *r, int64_t n, bool is_cos) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        step16(x + i, r + i, (__mmask16)0xffff, is_cos);
    if (i < n) step16(x + i, r + i, (__mmask16)((1u << (n - i)) - 1u), is_cos);
}

static AVX512_TARGET void sin_avx512(const float *x, float *r, int64_t n) {
    run_avx512(x, r, n, false);
}
static AVX512_TARGET void cos_avx512(const float *x, float *r, int64_t n) {
    run_avx512(x, r, n, true);
}

/* The widest instruction set the CPU has. */
static kiln__vm_isa cpu_isa(void) {
    return kiln__cpu_avx512()     ? KILN__VM_AVX512
           : kiln__cpu_avx2_fma() ? KILN__VM_AVX2
                                  : KILN__VM_BASELINE;
}

#else
static kiln__vm_isa cpu_isa(void) { return KILN__VM_BASELINE; }
#endif

kiln__vm_kernel kiln__vm_get(kiln__vm_fn fn, kiln__vm_isa isa) {
    static const kiln__vm_kernel table[KILN__VM_N_ISA][KILN__VM_N_FN] = {
        {sin_base, cos_base},
#if KILN_VM_X86
        {sin_avx2, cos_avx2},
        {sin_avx512, cos_avx512},
#endif
    };
    if ((int)fn < 0 || fn >= KILN__VM_N_FN) return NULL;
    if (isa == KILN__VM_BEST) isa = cpu_isa();
    if ((int)isa < 0 || isa >= KILN__VM_N_ISA || isa > cpu_isa()) return NULL;
    return table[isa][fn];
}
