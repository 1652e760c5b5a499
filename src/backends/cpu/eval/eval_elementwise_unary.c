/* Evaluator kernels for the unary elementwise ops. Floating-point ops are typed loops over
 * f32/f64 arrays (f16/bf16 computed in f32, rounded once); integer ops wrap instead of
 * overflowing (abs(INT_MIN) = INT_MIN, negate of unsigned wraps). */
#include "backends/cpu/lib/cpu_features.h"
#include "backends/cpu/eval/eval_elementwise.h"
#include "backends/cpu/lib/sleef_avx2.h"
#include "backends/cpu/lib/vmath.h"

#define KERNEL(NAME) KILN__EW_KERNEL(NAME)

/* One loop over n elements: x (of type T) from x_, the result (of type R) to r_. */
#define UN_LOOP(T, R, EXPR)                  \
    do {                                     \
        const T *px_ = x_;                   \
        R *pr_ = r_;                         \
        for (int64_t i_ = 0; i_ < n; i_++) { \
            T x = px_[i_];                   \
            pr_[i_] = (R)(EXPR);             \
        }                                    \
    } while (0)

/* ---- floating-point array kernels --------------------------------------------------------- */

#define FLOAT_UNARY_F32(name, E32)                                                  \
    static KILN__EW_VECTOR void name##_f32(const float *px, float *pr, int64_t n) { \
        for (int64_t i = 0; i < n; i++) {                                           \
            float x = px[i];                                                        \
            pr[i] = (E32);                                                          \
        }                                                                           \
    }
#define FLOAT_UNARY_F64(name, E64)                                                    \
    static KILN__EW_VECTOR void name##_f64(const double *px, double *pr, int64_t n) { \
        for (int64_t i = 0; i < n; i++) {                                             \
            double x = px[i];                                                         \
            pr[i] = (E64);                                                            \
        }                                                                             \
    }
#define FLOAT_UNARY(name, E32, E64) FLOAT_UNARY_F32(name, E32) FLOAT_UNARY_F64(name, E64)

FLOAT_UNARY(abs, fabsf(x), fabs(x))
FLOAT_UNARY(negate, -x, -x)
FLOAT_UNARY(sign, x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x, x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : x)
FLOAT_UNARY(floor, floorf(x), floor(x))
FLOAT_UNARY(ceil, ceilf(x), ceil(x))
FLOAT_UNARY(round_afz, roundf(x), round(x))
FLOAT_UNARY(round_even, nearbyintf(x), nearbyint(x))
FLOAT_UNARY(sqrt, sqrtf(x), sqrt(x))
FLOAT_UNARY(rsqrt, 1.0f / sqrtf(x), 1.0 / sqrt(x))
/* The transcendental kernels (f32 sin and cos: vmath.h, below). With SLEEF (KILN_HAVE_SLEEF)
 * and a CPU with AVX2 and FMA (checked at run time), 8 floats or 4 doubles at a time go
 * through SLEEF's 1.0-ulp (u10) functions, which follow C99 for NaN, infinities and -0; the
 * last partial vector goes through the same function on a padded copy, so an element's
 * result does not depend on its position. Otherwise (and always for the scalar expressions
 * E32/E64) scalar libm. */
#ifdef KILN_HAVE_SLEEF
#define KILN_AVX2 KILN_SLEEF_AVX2

/* V32/V64: expressions of the vector v (__m256 / __m256d). */
#define VEC_UNARY_F32(name, E32, V32)                                              \
    static KILN_AVX2 __m256 name##_v8(__m256 v) { return (V32); }                  \
    static KILN_AVX2 void name##_f32_avx2(const float *px, float *pr, int64_t n) { \
        int64_t i = 0;                                                             \
        for (; i + 8 <= n; i += 8)                                                 \
            _mm256_storeu_ps(pr + i, name##_v8(_mm256_loadu_ps(px + i)));          \
        if (i < n) {                                                               \
            float buf[8] = {0};                                                    \
            for (int64_t j = 0; j < n - i; j++)                                    \
                buf[j] = px[i + j];                                                \
            _mm256_storeu_ps(buf, name##_v8(_mm256_loadu_ps(buf)));                \
            for (int64_t j = 0; j < n - i; j++)                                    \
                pr[i + j] = buf[j];                                                \
        }                                                                          \
    }                                                                              \
    static void name##_f32(const float *px, float *pr, int64_t n) {                \
        if (kiln__cpu_avx2_fma()) {                                                \
            name##_f32_avx2(px, pr, n);                                            \
            return;                                                                \
        }                                                                          \
        for (int64_t i = 0; i < n; i++) {                                          \
            float x = px[i];                                                       \
            pr[i] = (E32);                                                         \
        }                                                                          \
    }
#define VEC_UNARY_F64(name, E64, V64)                                                \
    static KILN_AVX2 __m256d name##_v4(__m256d v) { return (V64); }                  \
    static KILN_AVX2 void name##_f64_avx2(const double *px, double *pr, int64_t n) { \
        int64_t i = 0;                                                               \
        for (; i + 4 <= n; i += 4)                                                   \
            _mm256_storeu_pd(pr + i, name##_v4(_mm256_loadu_pd(px + i)));            \
        if (i < n) {                                                                 \
            double buf[4] = {0};                                                     \
            for (int64_t j = 0; j < n - i; j++)                                      \
                buf[j] = px[i + j];                                                  \
            _mm256_storeu_pd(buf, name##_v4(_mm256_loadu_pd(buf)));                  \
            for (int64_t j = 0; j < n - i; j++)                                      \
                pr[i + j] = buf[j];                                                  \
        }                                                                            \
    }                                                                                \
    static void name##_f64(const double *px, double *pr, int64_t n) {                \
        if (kiln__cpu_avx2_fma()) {                                                  \
            name##_f64_avx2(px, pr, n);                                              \
            return;                                                                  \
        }                                                                            \
        for (int64_t i = 0; i < n; i++) {                                            \
            double x = px[i];                                                        \
            pr[i] = (E64);                                                           \
        }                                                                            \
    }
#define VEC_UNARY(name, E32, E64, V32, V64) \
    VEC_UNARY_F32(name, E32, V32) VEC_UNARY_F64(name, E64, V64)

#define LOG1P_UNARY(E32, E64) VEC_UNARY(log1p, E32, E64, kiln__log1p_v8(v), kiln__log1p_v4(v))
#define SLEEF_UNARY(name, E32, E64) \
    VEC_UNARY(name, E32, E64, Sleef_finz_##name##f8_u10avx2(v), Sleef_finz_##name##d4_u10avx2(v))
#define LOGISTIC_UNARY(E32, E64) \
    VEC_UNARY(logistic, E32, E64, kiln__sigmoid_v8(v), kiln__sigmoid_v4(v))
#define SLEEF_UNARY_F64(name, E64) VEC_UNARY_F64(name, E64, Sleef_finz_##name##d4_u10avx2(v))
#else
#define SLEEF_UNARY(name, E32, E64) FLOAT_UNARY(name, E32, E64)
#define LOGISTIC_UNARY(E32, E64) FLOAT_UNARY(logistic, E32, E64)
#define LOG1P_UNARY(E32, E64) FLOAT_UNARY(log1p, E32, E64)
#define SLEEF_UNARY_F64(name, E64) FLOAT_UNARY_F64(name, E64)
#endif

/* sin and cos of f32 (and of f16/bf16, computed in f32): vmath.h, at most 0.50176 ulp and the
 * same bits on every instruction set; the fused engine calls the same kernels. */
#define VMATH_UNARY(name, FN, E64)                                  \
    static void name##_f32(const float *px, float *pr, int64_t n) { \
        kiln__vm_get(FN, KILN__VM_BEST)(px, pr, n);                 \
    }                                                               \
    SLEEF_UNARY_F64(name, E64)

SLEEF_UNARY(cbrt, cbrtf(x), cbrt(x))
SLEEF_UNARY(exp, expf(x), exp(x))
SLEEF_UNARY(expm1, expm1f(x), expm1(x))
SLEEF_UNARY(log, logf(x), log(x))
LOG1P_UNARY(log1pf(x), log1p(x))
/* For x < 0, exp(-x) overflows long before the result underflows: use e^x / (1 + e^x). */
LOGISTIC_UNARY(x < 0.0f ? expf(x) / (1.0f + expf(x)) : 1.0f / (1.0f + expf(-x)),
               x < 0.0 ? exp(x) / (1.0 + exp(x)) : 1.0 / (1.0 + exp(-x)))
VMATH_UNARY(sin, KILN__VM_SIN, sin(x))
VMATH_UNARY(cos, KILN__VM_COS, cos(x))
SLEEF_UNARY(tan, tanf(x), tan(x))
SLEEF_UNARY(tanh, tanhf(x), tanh(x))

static kiln_status run_float(kiln_ctx *cx, const char *op, const kiln_tensor *x, kiln_tensor *r,
                             kiln__ew_unary_f32 f32, kiln__ew_unary_f64 f64) {
    int64_t n = kiln_tensor_numel(r);
    kiln_dtype dt = kiln_tensor_dtype(x);
    if (n == 0) return KILN_OK;
    if (!kiln__ew_float_unary(dt, kiln__in(x), kiln__out(r), n, f32, f64))
        return kiln__ew_bad_dtype(cx, op, dt);
    return KILN_OK;
}

#define FLOAT_KERNEL(NAME, name)                                                      \
    KERNEL(NAME) {                                                                    \
        (void)attrs, (void)n_operands, (void)n_results;                               \
        return run_float(cx, #name, operands[0], results[0], name##_f32, name##_f64); \
    }

FLOAT_KERNEL(FLOOR, floor)
FLOAT_KERNEL(CEIL, ceil)
FLOAT_KERNEL(ROUND_NEAREST_AFZ, round_afz)
FLOAT_KERNEL(ROUND_NEAREST_EVEN, round_even)
FLOAT_KERNEL(SQRT, sqrt)
FLOAT_KERNEL(RSQRT, rsqrt)
FLOAT_KERNEL(CBRT, cbrt)
FLOAT_KERNEL(EXPONENTIAL, exp)
FLOAT_KERNEL(EXPONENTIAL_MINUS_ONE, expm1)
FLOAT_KERNEL(LOG, log)
FLOAT_KERNEL(LOG_PLUS_ONE, log1p)
FLOAT_KERNEL(LOGISTIC, logistic)
FLOAT_KERNEL(SINE, sin)
FLOAT_KERNEL(COSINE, cos)
FLOAT_KERNEL(TAN, tan)
FLOAT_KERNEL(TANH, tanh)

/* ---- ops on integers and floats ----------------------------------------------------------- */

/* The operands of a unary kernel, unpacked. */
#define UNPACK                                      \
    (void)attrs, (void)n_operands, (void)n_results; \
    kiln_dtype dt = kiln_tensor_dtype(operands[0]); \
    int64_t n = kiln_tensor_numel(results[0]);      \
    if (n == 0) return KILN_OK;                     \
    const void *x_ = kiln__in(operands[0]);         \
    void *r_ = kiln__out(results[0])

KERNEL(ABS) {
    UNPACK;
    switch (dt) {
#define BODY(T, U, S, W, BITS, SG) UN_LOOP(T, T, SG && (S)x < 0 ? (T)(0 - (W)x) : x)
        KILN__EW_INT_CASES(BODY)
#undef BODY
    case KILN_F16:
    case KILN_BF16: UN_LOOP(uint16_t, uint16_t, x & 0x7fffu); break;
    case KILN_F32: abs_f32(x_, r_, n); break;
    case KILN_F64: abs_f64(x_, r_, n); break;
    default: return kiln__ew_bad_dtype(cx, "abs", dt);
    }
    return KILN_OK;
}

KERNEL(NEGATE) {
    UNPACK;
    switch (dt) {
#define BODY(T, U, S, W, BITS, SG) UN_LOOP(T, T, 0 - (W)x)
        KILN__EW_INT_CASES(BODY)
#undef BODY
    case KILN_F16:
    case KILN_BF16: UN_LOOP(uint16_t, uint16_t, x ^ 0x8000u); break;
    case KILN_F32: negate_f32(x_, r_, n); break;
    case KILN_F64: negate_f64(x_, r_, n); break;
    default: return kiln__ew_bad_dtype(cx, "negate", dt);
    }
    return KILN_OK;
}

KERNEL(SIGN) {
    UNPACK;
    switch (dt) {
#define BODY(T, U, S, W, BITS, SG) UN_LOOP(T, T, (x > 0) - (SG && (S)x < 0))
        KILN__EW_INT_CASES(BODY)
#undef BODY
    default:
        if (!kiln__ew_float_unary(dt, x_, r_, n, sign_f32, sign_f64))
            return kiln__ew_bad_dtype(cx, "sign", dt);
    }
    return KILN_OK;
}

KERNEL(NOT) {
    UNPACK;
    switch (dt) {
    case KILN_BOOL: UN_LOOP(uint8_t, uint8_t, x == 0); break;
#define BODY(T, U, S, W, BITS, SG) UN_LOOP(T, T, ~(W)x)
        KILN__EW_INT_CASES(BODY)
#undef BODY
    default: return kiln__ew_bad_dtype(cx, "not", dt);
    }
    return KILN_OK;
}

KERNEL(POPCNT) {
    UNPACK;
    switch (dt) {
#define BODY(T, U, S, W, BITS, SG) UN_LOOP(T, T, __builtin_popcountll((uint64_t)(U)x))
        KILN__EW_INT_CASES(BODY)
#undef BODY
    default: return kiln__ew_bad_dtype(cx, "popcnt", dt);
    }
    return KILN_OK;
}

KERNEL(COUNT_LEADING_ZEROS) {
    UNPACK;
    switch (dt) {
#define BODY(T, U, S, W, BITS, SG) \
    UN_LOOP(T, T, x == 0 ? (BITS) : __builtin_clzll((uint64_t)(U)x) - (64 - (BITS)))
        KILN__EW_INT_CASES(BODY)
#undef BODY
    default: return kiln__ew_bad_dtype(cx, "count_leading_zeros", dt);
    }
    return KILN_OK;
}

KERNEL(IS_FINITE) {
    UNPACK;
    switch (dt) {
    case KILN_F16: UN_LOOP(uint16_t, uint8_t, (x & 0x7c00u) != 0x7c00u); break;
    case KILN_BF16: UN_LOOP(uint16_t, uint8_t, (x & 0x7f80u) != 0x7f80u); break;
    case KILN_F32: UN_LOOP(float, uint8_t, isfinite(x)); break;
    case KILN_F64: UN_LOOP(double, uint8_t, isfinite(x)); break;
    default: return kiln__ew_bad_dtype(cx, "is_finite", dt);
    }
    return KILN_OK;
}
