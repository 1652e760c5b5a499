/* SPDX-License-Identifier: Apache-2.0 */
/* SLEEF's AVX2 1-ulp (u10) functions, and the vector forms built from them, shared by the
 * evaluator's kernels (eval_elementwise_unary.c) and the fused engine's primitives
 * (fused_prims.c): both must compute the same bits. Only with KILN_HAVE_SLEEF; callers
 * check kiln__cpu_avx2_fma() before running any of these.
 *
 * Always the deterministic builds (Sleef_finz_: FMA, each lane on its own): the plain
 * sin, cos, tan and f64 exp pick one range reduction for the whole vector, so one lane's
 * result would depend on its neighbours (cos(0.1) changes by an ulp when another lane
 * holds 1e300) and 4-wide and 8-wide calls would disagree. The deterministic ones cost
 * the same here; for the functions without that choice both names are one symbol. */
#ifndef KILN_BACKENDS_CPU_SLEEF_AVX2_H
#define KILN_BACKENDS_CPU_SLEEF_AVX2_H

#ifdef KILN_HAVE_SLEEF
#include <immintrin.h>

#define KILN_SLEEF_AVX2 __attribute__((target("avx2,fma")))

#define KILN_SLEEF_DECL(f)                                            \
    extern KILN_SLEEF_AVX2 __m256 Sleef_finz_##f##f8_u10avx2(__m256); \
    extern KILN_SLEEF_AVX2 __m256d Sleef_finz_##f##d4_u10avx2(__m256d);
KILN_SLEEF_DECL(exp)
KILN_SLEEF_DECL(expm1)
KILN_SLEEF_DECL(log)
KILN_SLEEF_DECL(log1p)
KILN_SLEEF_DECL(sin)
KILN_SLEEF_DECL(cos)
KILN_SLEEF_DECL(tan)
KILN_SLEEF_DECL(tanh)
KILN_SLEEF_DECL(cbrt)
#undef KILN_SLEEF_DECL

/* logistic: e = exp(-|x|); x < 0 ? e / (1 + e) : 1 / (1 + e), as the scalar form. */
static inline KILN_SLEEF_AVX2 __m256 kiln__sigmoid_v8(__m256 v) {
    __m256 one = _mm256_set1_ps(1.0f);
    __m256 e = Sleef_finz_expf8_u10avx2(_mm256_or_ps(v, _mm256_set1_ps(-0.0f)));
    __m256 d = _mm256_add_ps(one, e);
    __m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
    return _mm256_div_ps(_mm256_blendv_ps(one, e, neg), d);
}
static inline KILN_SLEEF_AVX2 __m256d kiln__sigmoid_v4(__m256d v) {
    __m256d one = _mm256_set1_pd(1.0);
    __m256d e = Sleef_finz_expd4_u10avx2(_mm256_or_pd(v, _mm256_set1_pd(-0.0)));
    __m256d d = _mm256_add_pd(one, e);
    __m256d neg = _mm256_cmp_pd(v, _mm256_setzero_pd(), _CMP_LT_OQ);
    return _mm256_div_pd(_mm256_blendv_pd(one, e, neg), d);
}

/* SLEEF's log1p overflows to inf above about 1e38 (f32) / 1e307 (f64); there log1p(x) ==
 * log(x) to far below an ulp, so take log for x > 1e30 / 1e300. */
static inline KILN_SLEEF_AVX2 __m256 kiln__log1p_v8(__m256 v) {
    __m256 big = _mm256_cmp_ps(v, _mm256_set1_ps(1e30f), _CMP_GT_OQ);
    return _mm256_blendv_ps(Sleef_finz_log1pf8_u10avx2(v), Sleef_finz_logf8_u10avx2(v), big);
}
static inline KILN_SLEEF_AVX2 __m256d kiln__log1p_v4(__m256d v) {
    __m256d big = _mm256_cmp_pd(v, _mm256_set1_pd(1e300), _CMP_GT_OQ);
    return _mm256_blendv_pd(Sleef_finz_log1pd4_u10avx2(v), Sleef_finz_logd4_u10avx2(v), big);
}
#endif

#endif
