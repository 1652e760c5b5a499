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

#define UNARY_LOOP(name, T, EXPR)                                                                  \
    static void name##_base(void *r_, const void *a_, const void *b_, const void *c_, int64_t n) { \
        (void)b_, (void)c_;                                                                        \
        T *restrict r = r_;                                                                        \
        const T *restrict a = a_;                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T x = a[i];                                                                            \
            r[i] = (EXPR);                                                                         \
        }                                                                                          \
    }                                                                                              \
    static AVX2_TARGET void name##_avx2(void *r_, const void *a_, const void *b_, const void *c_,  \
                                        int64_t n) {                                               \
        (void)b_, (void)c_;                                                                        \
        T *restrict r = r_;                                                                        \
        const T *restrict a = a_;                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T x = a[i];                                                                            \
            r[i] = (EXPR);                                                                         \
        }                                                                                          \
    }

/* One loop body, with x and y read as XA and YA (an element, or a scalar operand's one
 * value, so that a broadcast constant is never spread over a tile). */
#define BINARY_BODY(T, EXPR, XA, YA)            \
    T *restrict r = r_;                         \
    const T *restrict a = a_, *restrict b = b_; \
    (void)c_;                                   \
    for (int64_t i = 0; i < n; i++) {           \
        T x = XA, y = YA;                       \
        r[i] = (EXPR);                          \
    }

#define BINARY_VARIANT(name, sfx, T, EXPR, XA, YA)                                         \
    static void name##sfx##_base(void *r_, const void *a_, const void *b_, const void *c_, \
                                 int64_t n) {                                              \
        BINARY_BODY(T, EXPR, XA, YA)                                                       \
    }                                                                                      \
    static AVX2_TARGET void name##sfx##_avx2(void *r_, const void *a_, const void *b_,     \
                                             const void *c_, int64_t n) {                  \
        BINARY_BODY(T, EXPR, XA, YA)                                                       \
    }

#define BINARY_LOOP(name, T, EXPR)                 \
    BINARY_VARIANT(name, , T, EXPR, a[i], b[i])    \
    BINARY_VARIANT(name, _vs, T, EXPR, a[i], b[0]) \
    BINARY_VARIANT(name, _sv, T, EXPR, a[0], b[i])

BINARY_LOOP(add_f32, float, x + y)
BINARY_LOOP(sub_f32, float, x - y)
BINARY_LOOP(mul_f32, float, x *y)
BINARY_LOOP(div_f32, float, x / y)
BINARY_LOOP(max_f32, float, kiln__nanmaxf(x, y))
BINARY_LOOP(min_f32, float, kiln__nanminf(x, y))
BINARY_LOOP(add_f64, double, x + y)
BINARY_LOOP(sub_f64, double, x - y)
BINARY_LOOP(mul_f64, double, x *y)
BINARY_LOOP(div_f64, double, x / y)
BINARY_LOOP(max_f64, double, kiln__nanmax(x, y))
BINARY_LOOP(min_f64, double, kiln__nanmin(x, y))
UNARY_LOOP(neg_f32, float, -x)
UNARY_LOOP(abs_f32, float, fabsf(x))
UNARY_LOOP(sqrt_f32, float, sqrtf(x))
UNARY_LOOP(rsqrt_f32, float, 1.0f / sqrtf(x))
UNARY_LOOP(neg_f64, double, -x)
UNARY_LOOP(abs_f64, double, fabs(x))
UNARY_LOOP(sqrt_f64, double, sqrt(x))
UNARY_LOOP(rsqrt_f64, double, 1.0 / sqrt(x))

/* select: a is the i1 predicate (one byte per element). */
#define SELECT_LOOP(name, T)                                                                       \
    static void name##_base(void *r_, const void *a_, const void *b_, const void *c_, int64_t n) { \
        T *restrict r = r_;                                                                        \
        const uint8_t *restrict p = a_;                                                            \
        const T *restrict x = b_, *restrict y = c_;                                                \
        for (int64_t i = 0; i < n; i++)                                                            \
            r[i] = p[i] ? x[i] : y[i];                                                             \
    }                                                                                              \
    static AVX2_TARGET void name##_avx2(void *r_, const void *a_, const void *b_, const void *c_,  \
                                        int64_t n) {                                               \
        T *restrict r = r_;                                                                        \
        const uint8_t *restrict p = a_;                                                            \
        const T *restrict x = b_, *restrict y = c_;                                                \
        for (int64_t i = 0; i < n; i++)                                                            \
            r[i] = p[i] ? x[i] : y[i];                                                             \
    }
SELECT_LOOP(select_f32, float)
SELECT_LOOP(select_f64, double)

/* clamp: a and c are the bounds, b the operand; min(max(x, lo), hi) as the evaluator. With
 * scalar bounds (_ss) they are loaded once, before the loop, so that the compiler computes
 * what depends on them alone once (3x faster than reading lo[0] in the loop). */
#define CLAMP_BODY(T, MAX, MIN, LO, HI)                             \
    T *restrict r = r_;                                             \
    const T *restrict lo = a_, *restrict x = b_, *restrict hi = c_; \
    if (n <= 0) return;                                             \
    const T lo0 = lo[0], hi0 = hi[0];                               \
    (void)lo0, (void)hi0;                                           \
    for (int64_t i = 0; i < n; i++)                                 \
        r[i] = MIN(MAX(x[i], LO), HI);
#define CLAMP_VARIANT(name, sfx, T, MAX, MIN, LO, HI)                                      \
    static void name##sfx##_base(void *r_, const void *a_, const void *b_, const void *c_, \
                                 int64_t n) {                                              \
        CLAMP_BODY(T, MAX, MIN, LO, HI)                                                    \
    }                                                                                      \
    static AVX2_TARGET void name##sfx##_avx2(void *r_, const void *a_, const void *b_,     \
                                             const void *c_, int64_t n) {                  \
        CLAMP_BODY(T, MAX, MIN, LO, HI)                                                    \
    }
#define CLAMP_LOOP(name, T, MAX, MIN)                \
    CLAMP_VARIANT(name, , T, MAX, MIN, lo[i], hi[i]) \
    CLAMP_VARIANT(name, _ss, T, MAX, MIN, lo0, hi0)
CLAMP_LOOP(clamp_f32, float, kiln__nanmaxf, kiln__nanminf)
CLAMP_LOOP(clamp_f64, double, kiln__nanmax, kiln__nanmin)

/* ---- transcendentals ---------------------------------------------------------------------- */

/* The scalar forms are the evaluator's (used when SLEEF or AVX2 is missing). */
#define SCALAR_LOOP(name, T, EXPR)                                                                 \
    static void name##_base(void *r_, const void *a_, const void *b_, const void *c_, int64_t n) { \
        (void)b_, (void)c_;                                                                        \
        T *restrict r = r_;                                                                        \
        const T *restrict a = a_;                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T x = a[i];                                                                            \
            r[i] = (EXPR);                                                                         \
        }                                                                                          \
    }
SCALAR_LOOP(exp_f32s, float, expf(x))
SCALAR_LOOP(expm1_f32s, float, expm1f(x))
SCALAR_LOOP(log_f32s, float, logf(x))
SCALAR_LOOP(log1p_f32s, float, log1pf(x))
SCALAR_LOOP(tan_f32s, float, tanf(x))
SCALAR_LOOP(tanh_f32s, float, tanhf(x))
SCALAR_LOOP(cbrt_f32s, float, cbrtf(x))
SCALAR_LOOP(logistic_f32s, float, x < 0.0f ? expf(x) / (1.0f + expf(x)) : 1.0f / (1.0f + expf(-x)))
SCALAR_LOOP(exp_f64s, double, exp(x))
SCALAR_LOOP(expm1_f64s, double, expm1(x))
SCALAR_LOOP(log_f64s, double, log(x))
SCALAR_LOOP(log1p_f64s, double, log1p(x))
SCALAR_LOOP(sin_f64s, double, sin(x))
SCALAR_LOOP(cos_f64s, double, cos(x))
SCALAR_LOOP(tan_f64s, double, tan(x))
SCALAR_LOOP(tanh_f64s, double, tanh(x))
SCALAR_LOOP(cbrt_f64s, double, cbrt(x))
SCALAR_LOOP(logistic_f64s, double, x < 0.0 ? exp(x) / (1.0 + exp(x)) : 1.0 / (1.0 + exp(-x)))

#ifdef KILN_HAVE_SLEEF
/* Whole vectors, then the last partial one through a padded copy (as the evaluator). */
#define VEC_PRIM32(name, V32)                                                                     \
    static AVX2_TARGET void name##_f32v(void *r_, const void *a_, const void *b_, const void *c_, \
                                        int64_t n) {                                              \
        (void)b_, (void)c_;                                                                       \
        float *r = r_;                                                                            \
        const float *a = a_;                                                                      \
        int64_t i = 0;                                                                            \
        for (; i + 8 <= n; i += 8) {                                                              \
            __m256 v = _mm256_loadu_ps(a + i);                                                    \
            _mm256_storeu_ps(r + i, (V32));                                                       \
        }                                                                                         \
        if (i < n) {                                                                              \
            float buf[8] = {0};                                                                   \
            for (int64_t j = 0; j < n - i; j++)                                                   \
                buf[j] = a[i + j];                                                                \
            __m256 v = _mm256_loadu_ps(buf);                                                      \
            _mm256_storeu_ps(buf, (V32));                                                         \
            for (int64_t j = 0; j < n - i; j++)                                                   \
                r[i + j] = buf[j];                                                                \
        }                                                                                         \
    }
#define VEC_PRIM64(name, V64)                                                                     \
    static AVX2_TARGET void name##_f64v(void *r_, const void *a_, const void *b_, const void *c_, \
                                        int64_t n) {                                              \
        (void)b_, (void)c_;                                                                       \
        double *r = r_;                                                                           \
        const double *a = a_;                                                                     \
        int64_t i = 0;                                                                            \
        for (; i + 4 <= n; i += 4) {                                                              \
            __m256d v = _mm256_loadu_pd(a + i);                                                   \
            _mm256_storeu_pd(r + i, (V64));                                                       \
        }                                                                                         \
        if (i < n) {                                                                              \
            double buf[4] = {0};                                                                  \
            for (int64_t j = 0; j < n - i; j++)                                                   \
                buf[j] = a[i + j];                                                                \
            __m256d v = _mm256_loadu_pd(buf);                                                     \
            _mm256_storeu_pd(buf, (V64));                                                         \
            for (int64_t j = 0; j < n - i; j++)                                                   \
                r[i + j] = buf[j];                                                                \
        }                                                                                         \
    }
#define VEC_PRIM(name, V32, V64) VEC_PRIM32(name, V32) VEC_PRIM64(name, V64)
#define SLEEF_PRIM(name) \
    VEC_PRIM(name, Sleef_finz_##name##f8_u10avx2(v), Sleef_finz_##name##d4_u10avx2(v))
SLEEF_PRIM(exp)
SLEEF_PRIM(expm1)
SLEEF_PRIM(log)
VEC_PRIM64(sin, Sleef_finz_sind4_u10avx2(v))
VEC_PRIM64(cos, Sleef_finz_cosd4_u10avx2(v))
SLEEF_PRIM(tan)
SLEEF_PRIM(tanh)
SLEEF_PRIM(cbrt)
VEC_PRIM(log1p, kiln__log1p_v8(v), kiln__log1p_v4(v))
VEC_PRIM(logistic, kiln__sigmoid_v8(v), kiln__sigmoid_v4(v))
/* AVX-512 for exp (f32, f64) and f64 sin and cos: the same SLEEF functions 16 floats or 8
 * doubles at a time, whose results equal the 8-wide ones' element by element
 * (tests/runtime/test_fused.c compares them with the evaluator's bit for bit; log, for one, does
 * not agree on every input, so the others stay 8 wide). */
#define AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx2,fma")))

#define SLEEF_DECL512(f)                                                \
    extern AVX512_TARGET __m512 Sleef_finz_##f##f16_u10avx512f(__m512); \
    extern AVX512_TARGET __m512d Sleef_finz_##f##d8_u10avx512f(__m512d);
SLEEF_DECL512(exp)
SLEEF_DECL512(expm1)
SLEEF_DECL512(log)
SLEEF_DECL512(log1p)
SLEEF_DECL512(sin)
SLEEF_DECL512(cos)
SLEEF_DECL512(tan)
SLEEF_DECL512(tanh)
SLEEF_DECL512(cbrt)
#undef SLEEF_DECL512

/* Whole vectors, then the last partial one under a mask (masked lanes read nothing). */
#define VEC512_PRIM32(name, V32)                                                    \
    static AVX512_TARGET void name##_f32w(void *r_, const void *a_, const void *b_, \
                                          const void *c_, int64_t n) {              \
        (void)b_, (void)c_;                                                         \
        float *r = r_;                                                              \
        const float *a = a_;                                                        \
        int64_t i = 0;                                                              \
        for (; i + 16 <= n; i += 16) {                                              \
            __m512 v = _mm512_loadu_ps(a + i);                                      \
            _mm512_storeu_ps(r + i, (V32));                                         \
        }                                                                           \
        if (i < n) {                                                                \
            __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);                        \
            __m512 v = _mm512_maskz_loadu_ps(m, a + i);                             \
            _mm512_mask_storeu_ps(r + i, m, (V32));                                 \
        }                                                                           \
    }
#define VEC512_PRIM64(name, V64)                                                    \
    static AVX512_TARGET void name##_f64w(void *r_, const void *a_, const void *b_, \
                                          const void *c_, int64_t n) {              \
        (void)b_, (void)c_;                                                         \
        double *r = r_;                                                             \
        const double *a = a_;                                                       \
        int64_t i = 0;                                                              \
        for (; i + 8 <= n; i += 8) {                                                \
            __m512d v = _mm512_loadu_pd(a + i);                                     \
            _mm512_storeu_pd(r + i, (V64));                                         \
        }                                                                           \
        if (i < n) {                                                                \
            __mmask8 m = (__mmask8)((1u << (n - i)) - 1u);                          \
            __m512d v = _mm512_maskz_loadu_pd(m, a + i);                            \
            _mm512_mask_storeu_pd(r + i, m, (V64));                                 \
        }                                                                           \
    }
#define VEC512_PRIM(name, V32, V64) VEC512_PRIM32(name, V32) VEC512_PRIM64(name, V64)
#define SLEEF_PRIM512(name) \
    VEC512_PRIM(name, Sleef_finz_##name##f16_u10avx512f(v), Sleef_finz_##name##d8_u10avx512f(v))
SLEEF_PRIM512(exp)
VEC512_PRIM64(sin, Sleef_finz_sind8_u10avx512f(v))
VEC512_PRIM64(cos, Sleef_finz_cosd8_u10avx512f(v))

#define TRANSCENDENTAL(name, f64)                               \
    (kiln__cpu_avx2_fma() ? ((f64) ? name##_f64v : name##_f32v) \
                          : ((f64) ? name##_f64s_base : name##_f32s_base))
#define TRANSCENDENTAL512(name, f64) \
    (kiln__cpu_avx512() ? ((f64) ? name##_f64w : name##_f32w) : TRANSCENDENTAL(name, f64))
#define F64_TRANSCENDENTAL512(name) \
    (kiln__cpu_avx512() ? name##_f64w : kiln__cpu_avx2_fma() ? name##_f64v : name##_f64s_base)
#else
#define TRANSCENDENTAL(name, f64) ((f64) ? name##_f64s_base : name##_f32s_base)
#define TRANSCENDENTAL512(name, f64) TRANSCENDENTAL(name, f64)
#define F64_TRANSCENDENTAL512(name) name##_f64s_base
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

#define PICK(name) (avx2 ? name##_avx2 : name##_base)
#define PICK3(name) (scalars == 2 ? PICK(name##_vs) : scalars == 1 ? PICK(name##_sv) : PICK(name))

kiln__vec_prim_fn kiln__vec_prim(kiln_op op, kiln_dtype dtype, unsigned scalars) {
    bool f64 = dtype == KILN_F64, avx2 = kiln__cpu_avx2_fma();
    if (dtype != KILN_F32 && dtype != KILN_F64) return NULL;
    bool binary = op == KILN_OP_ADD || op == KILN_OP_SUBTRACT || op == KILN_OP_MULTIPLY ||
                  op == KILN_OP_DIVIDE || op == KILN_OP_MAXIMUM || op == KILN_OP_MINIMUM;
    if (op == KILN_OP_CLAMP && (scalars == 0 || scalars == 5)) {
        if (scalars) return f64 ? PICK(clamp_f64_ss) : PICK(clamp_f32_ss);
        return f64 ? PICK(clamp_f64) : PICK(clamp_f32);
    }
    if (scalars != 0 && !(binary && (scalars == 1 || scalars == 2))) return NULL;
    switch (op) {
    case KILN_OP_ADD: return f64 ? PICK3(add_f64) : PICK3(add_f32);
    case KILN_OP_SUBTRACT: return f64 ? PICK3(sub_f64) : PICK3(sub_f32);
    case KILN_OP_MULTIPLY: return f64 ? PICK3(mul_f64) : PICK3(mul_f32);
    case KILN_OP_DIVIDE: return f64 ? PICK3(div_f64) : PICK3(div_f32);
    case KILN_OP_MAXIMUM: return f64 ? PICK3(max_f64) : PICK3(max_f32);
    case KILN_OP_MINIMUM: return f64 ? PICK3(min_f64) : PICK3(min_f32);
    case KILN_OP_NEGATE: return f64 ? PICK(neg_f64) : PICK(neg_f32);
    case KILN_OP_ABS: return f64 ? PICK(abs_f64) : PICK(abs_f32);
    case KILN_OP_SQRT: return f64 ? PICK(sqrt_f64) : PICK(sqrt_f32);
    case KILN_OP_RSQRT: return f64 ? PICK(rsqrt_f64) : PICK(rsqrt_f32);
    case KILN_OP_SELECT: return f64 ? PICK(select_f64) : PICK(select_f32);
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
