/* SPDX-License-Identifier: Apache-2.0 */
/* Evaluator kernels for the unary elementwise ops. Floating-point ops are typed loops over
 * f32/f64 arrays (f16/bf16 computed in f32, rounded once); integer ops wrap instead of
 * overflowing (abs(INT_MIN) = INT_MIN, negate of unsigned wraps). */
#include "backends/cpu/lib/cpu_features.h"
#include "backends/cpu/eval/eval_elementwise.h"
#include "backends/cpu/lib/sleef_avx2.h"
#include "backends/cpu/lib/vmath.h"

#define KERNEL(NAME) KILN__EW_KERNEL(NAME)

/* ---- floating-point array kernels --------------------------------------------------------- */

/* The transcendental kernels (f32 sin and cos: vmath.h, below). With SLEEF (KILN_HAVE_SLEEF)
 * and a CPU with AVX2 and FMA (checked at run time), 8 floats or 4 doubles at a time go
 * through SLEEF's 1.0-ulp (u10) functions, which follow C99 for NaN, infinities and -0; the
 * last partial vector goes through the same function on a padded copy, so an element's
 * result does not depend on its position. Otherwise (and always for the scalar loops) libm. */
#ifdef KILN_HAVE_SLEEF
#define KILN_AVX2 KILN_SLEEF_AVX2
#endif

#include "backends/cpu/lib/libm_f32.inc"
#include "backends/cpu/lib/sleef_avx2_f32.inc"
#define FN(name) name##_f32
#define FABS fabsf
#define FLOOR floorf
#define CEIL ceilf
#define ROUND roundf
#define NEARBYINT nearbyintf
#define SQRT sqrtf
#include "backends/cpu/eval/elementwise_unary_float.inc"

#include "backends/cpu/lib/libm_f64.inc"
#include "backends/cpu/lib/sleef_avx2_f64.inc"
#define FN(name) name##_f64
#define FABS fabs
#define FLOOR floor
#define CEIL ceil
#define ROUND round
#define NEARBYINT nearbyint
#define SQRT sqrt
#include "backends/cpu/eval/elementwise_unary_float.inc"

/* sin and cos of f32 (and of f16/bf16, computed in f32): vmath.h, at most 0.50176 ulp and the
 * same bits on every instruction set; the fused engine calls the same kernels. */
static void sin_f32(const float *px, float *pr, int64_t n) {
    kiln__vm_get(KILN__VM_SIN, KILN__VM_BEST)(px, pr, n);
}
static void cos_f32(const float *px, float *pr, int64_t n) {
    kiln__vm_get(KILN__VM_COS, KILN__VM_BEST)(px, pr, n);
}

/* A float op through its f32/f64 array kernels, or on complex values its complex kernel. */
static kiln_status run_float(kiln_ctx *cx, kiln_op op, const kiln_tensor *x, kiln_tensor *r,
                             kiln__ew_unary_f32 f32, kiln__ew_unary_f64 f64) {
    int64_t n = kiln_tensor_numel(r);
    kiln_dtype dt = kiln_tensor_dtype(x);
    if (n == 0) return KILN_OK;
    if (!kiln__ew_float_unary(dt, kiln__in(x), kiln__out(r), n, f32, f64) &&
        !kiln__ew_complex_unary(op, dt, kiln__in(x), kiln__out(r), n))
        return kiln__ew_bad_dtype(cx, kiln__op_get_info(op)->name, dt);
    return KILN_OK;
}

KERNEL(FLOOR) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_FLOOR, operands[0], results[0], floor_f32, floor_f64);
}

KERNEL(CEIL) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_CEIL, operands[0], results[0], ceil_f32, ceil_f64);
}

KERNEL(ROUND_NEAREST_AFZ) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_ROUND_NEAREST_AFZ, operands[0], results[0], round_afz_f32,
                     round_afz_f64);
}

KERNEL(ROUND_NEAREST_EVEN) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_ROUND_NEAREST_EVEN, operands[0], results[0], round_even_f32,
                     round_even_f64);
}

KERNEL(SQRT) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_SQRT, operands[0], results[0], sqrt_f32, sqrt_f64);
}

KERNEL(RSQRT) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_RSQRT, operands[0], results[0], rsqrt_f32, rsqrt_f64);
}

KERNEL(CBRT) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_CBRT, operands[0], results[0], cbrt_f32, cbrt_f64);
}

KERNEL(EXPONENTIAL) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_EXPONENTIAL, operands[0], results[0], exp_f32, exp_f64);
}

KERNEL(EXPONENTIAL_MINUS_ONE) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_EXPONENTIAL_MINUS_ONE, operands[0], results[0], expm1_f32,
                     expm1_f64);
}

KERNEL(LOG) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_LOG, operands[0], results[0], log_f32, log_f64);
}

KERNEL(LOG_PLUS_ONE) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_LOG_PLUS_ONE, operands[0], results[0], log1p_f32, log1p_f64);
}

KERNEL(LOGISTIC) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_LOGISTIC, operands[0], results[0], logistic_f32, logistic_f64);
}

KERNEL(SINE) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_SINE, operands[0], results[0], sin_f32, sin_f64);
}

KERNEL(COSINE) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_COSINE, operands[0], results[0], cos_f32, cos_f64);
}

KERNEL(TAN) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_TAN, operands[0], results[0], tan_f32, tan_f64);
}

KERNEL(TANH) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run_float(cx, KILN_OP_TANH, operands[0], results[0], tanh_f32, tanh_f64);
}

/* ---- ops on integers and floats ----------------------------------------------------------- */

/* The integer ops, and their loops for each integer dtype (elementwise_unary_int.inc). */
enum int_unary { INT_ABS, INT_NEGATE, INT_SIGN, INT_NOT, INT_POPCNT, INT_CLZ };

#define KILN__EW_INT_TEMPLATE "backends/cpu/eval/elementwise_unary_int.inc"
#include "backends/cpu/eval/elementwise_int_types.inc"

/* Runs op on n elements of integer dtype dt; false for any other dtype. Always inlined with
 * op constant, so that each kernel keeps only its own loops. */
static inline __attribute__((always_inline)) bool int_unary(kiln_dtype dt, enum int_unary op,
                                                            const void *x_, void *r_, int64_t n) {
    switch (dt) {
    case KILN_I8: unary_i8(op, x_, r_, n); return true;
    case KILN_I16: unary_i16(op, x_, r_, n); return true;
    case KILN_I32: unary_i32(op, x_, r_, n); return true;
    case KILN_I64: unary_i64(op, x_, r_, n); return true;
    case KILN_U8: unary_u8(op, x_, r_, n); return true;
    case KILN_U16: unary_u16(op, x_, r_, n); return true;
    case KILN_U32: unary_u32(op, x_, r_, n); return true;
    case KILN_U64: unary_u64(op, x_, r_, n); return true;
    default: return false;
    }
}

/* The operands of a unary kernel, unpacked. */
typedef struct {
    kiln_dtype dt;
    int64_t n;
    const void *x_;
    void *r_;
} unary_args;

static inline unary_args unpack(kiln_tensor *const *operands, kiln_tensor **results) {
    unary_args u = {kiln_tensor_dtype(operands[0]), kiln_tensor_numel(results[0]), NULL, NULL};
    if (u.n == 0) return u;
    u.x_ = kiln__in(operands[0]);
    u.r_ = kiln__out(results[0]);
    return u;
}

/* An integer op (inference checked the dtype), or the error for any other dtype. */
static inline __attribute__((always_inline)) kiln_status int_only(kiln_ctx *cx, const char *op,
                                                                  enum int_unary iop,
                                                                  unary_args u) {
    if (!int_unary(u.dt, iop, u.x_, u.r_, u.n)) return kiln__ew_bad_dtype(cx, op, u.dt);
    return KILN_OK;
}

/* abs and negate: on floats the sign bit cleared or flipped (NaN payloads kept), on integers
 * wrapping. */
static inline __attribute__((always_inline)) kiln_status sign_bit_op(kiln_ctx *cx, unary_args u,
                                                                  bool negate) {
    if (u.n == 0) return KILN_OK;
    switch (u.dt) {
    case KILN_F16:
    case KILN_BF16: {
        const uint16_t *px = u.x_;
        uint16_t *pr = u.r_;
        const uint16_t keep = negate ? 0xffffu : 0x7fffu, flip = negate ? 0x8000u : 0;
        for (int64_t i = 0; i < u.n; i++)
            pr[i] = (uint16_t)((px[i] & keep) ^ flip);
        break;
    }
    case KILN_F32: (negate ? negate_f32 : abs_f32)(u.x_, u.r_, u.n); break;
    case KILN_F64: (negate ? negate_f64 : abs_f64)(u.x_, u.r_, u.n); break;
    /* Negation flips both parts' signs; the abs of a complex value is its modulus. */
    case KILN_C64:
    case KILN_C128:
        if (!negate)
            kiln__ew_complex_abs(u.dt, u.x_, u.r_, u.n);
        else if (u.dt == KILN_C64)
            negate_f32(u.x_, u.r_, 2 * u.n);
        else
            negate_f64(u.x_, u.r_, 2 * u.n);
        break;
    default:
        return negate ? int_only(cx, "negate", INT_NEGATE, u) : int_only(cx, "abs", INT_ABS, u);
    }
    return KILN_OK;
}

KERNEL(ABS) {
    (void)attrs, (void)n_operands, (void)n_results;
    return sign_bit_op(cx, unpack(operands, results), false);
}

KERNEL(NEGATE) {
    (void)attrs, (void)n_operands, (void)n_results;
    return sign_bit_op(cx, unpack(operands, results), true);
}

KERNEL(SIGN) {
    (void)attrs, (void)n_operands, (void)n_results;
    unary_args u = unpack(operands, results);
    if (u.n == 0) return KILN_OK;
    if (!int_unary(u.dt, INT_SIGN, u.x_, u.r_, u.n) &&
        !kiln__ew_float_unary(u.dt, u.x_, u.r_, u.n, sign_f32, sign_f64) &&
        !kiln__ew_complex_unary(KILN_OP_SIGN, u.dt, u.x_, u.r_, u.n))
        return kiln__ew_bad_dtype(cx, "sign", u.dt);
    return KILN_OK;
}

KERNEL(NOT) {
    (void)attrs, (void)n_operands, (void)n_results;
    unary_args u = unpack(operands, results);
    if (u.n == 0) return KILN_OK;
    if (u.dt == KILN_BOOL) {
        const uint8_t *px = u.x_;
        uint8_t *pr = u.r_;
        for (int64_t i = 0; i < u.n; i++)
            pr[i] = (uint8_t)(px[i] == 0);
        return KILN_OK;
    }
    return int_only(cx, "not", INT_NOT, u);
}

/* popcnt and count_leading_zeros read a sub-byte integer's bits, which its byte holds with
 * zeros above them (kiln/dtype.h): they count on that byte as a ui8, count_leading_zeros
 * then taking off the bits above the type's width. */
KERNEL(POPCNT) {
    (void)attrs, (void)n_operands, (void)n_results;
    unary_args u = unpack(operands, results);
    if (u.n == 0) return KILN_OK;
    if (kiln_dtype_is_narrow(u.dt)) u.dt = KILN_U8;
    return int_only(cx, "popcnt", INT_POPCNT, u);
}

KERNEL(COUNT_LEADING_ZEROS) {
    (void)attrs, (void)n_operands, (void)n_results;
    unary_args u = unpack(operands, results);
    if (u.n == 0) return KILN_OK;
    if (!kiln_dtype_is_narrow(u.dt)) return int_only(cx, "count_leading_zeros", INT_CLZ, u);
    uint8_t above = (uint8_t)(8 - kiln_dtype_bits(u.dt));
    u.dt = KILN_U8;
    kiln_status s = int_only(cx, "count_leading_zeros", INT_CLZ, u);
    uint8_t *r = u.r_;
    for (int64_t i = 0; s == KILN_OK && i < u.n; i++)
        r[i] = (uint8_t)(r[i] - above);
    return s;
}

KERNEL(IS_FINITE) {
    (void)attrs, (void)n_operands, (void)n_results;
    unary_args u = unpack(operands, results);
    if (u.n == 0) return KILN_OK;
    uint8_t *pr = u.r_;
    switch (u.dt) {
    case KILN_F16:
    case KILN_BF16: {
        /* All exponent bits set: infinity or NaN. */
        const uint16_t *px = u.x_;
        unsigned exponent = u.dt == KILN_F16 ? 0x7c00u : 0x7f80u;
        for (int64_t i = 0; i < u.n; i++)
            pr[i] = (uint8_t)((px[i] & exponent) != exponent);
        break;
    }
    case KILN_F32: {
        const float *px = u.x_;
        for (int64_t i = 0; i < u.n; i++)
            pr[i] = (uint8_t)isfinite(px[i]);
        break;
    }
    case KILN_F64: {
        const double *px = u.x_;
        for (int64_t i = 0; i < u.n; i++)
            pr[i] = (uint8_t)isfinite(px[i]);
        break;
    }
    default: return kiln__ew_bad_dtype(cx, "is_finite", u.dt);
    }
    return KILN_OK;
}
