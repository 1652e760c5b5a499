/* Evaluator kernels for the binary elementwise ops. Operands have one type and shape (the
 * builders broadcast first). Floating-point ops are typed loops over f32/f64 arrays (f16/bf16
 * computed in f32, rounded once); integer ops follow StableHLO where C has undefined
 * behaviour: arithmetic wraps, x/0 = -1 (all ones unsigned), INT_MIN/-1 = INT_MIN, x%0 = x,
 * INT_MIN%-1 = 0, shifts by at least the width give 0 (or the sign for arithmetic right
 * shifts) with the amount read as unsigned, and power by squaring wraps. On i1, add and
 * maximum are or, multiply and minimum are and. */
#include "backends/cpu/eval/eval_elementwise.h"

#define KERNEL(NAME) KILN__EW_KERNEL(NAME)

/* One loop over n elements: x and y (of type T) from a_ and b_, the result (R) to r_. */
#define BIN_LOOP(T, R, EXPR)                 \
    do {                                     \
        const T *pa_ = a_;                   \
        const T *pb_ = b_;                   \
        R *pr_ = r_;                         \
        for (int64_t i_ = 0; i_ < n; i_++) { \
            T x = pa_[i_], y = pb_[i_];      \
            pr_[i_] = (R)(EXPR);             \
        }                                    \
    } while (0)

/* The operands of a binary kernel, unpacked. */
#define UNPACK                                      \
    (void)attrs, (void)n_operands, (void)n_results; \
    kiln_dtype dt = kiln_tensor_dtype(operands[0]); \
    int64_t n = kiln_tensor_numel(results[0]);      \
    if (n == 0) return KILN_OK;                     \
    const void *a_ = kiln__in(operands[0]);         \
    const void *b_ = kiln__in(operands[1]);         \
    void *r_ = kiln__out(results[0])

/* ---- floating-point array kernels --------------------------------------------------------- */

#define FLOAT_BINARY(name, E32, E64)                                                       \
    static KILN__EW_VECTOR void name##_f32(const float *pa, const float *pb, float *pr,    \
                                           int64_t n) {                                    \
        for (int64_t i = 0; i < n; i++) {                                                  \
            float x = pa[i], y = pb[i];                                                    \
            pr[i] = (E32);                                                                 \
        }                                                                                  \
    }                                                                                      \
    static KILN__EW_VECTOR void name##_f64(const double *pa, const double *pb, double *pr, \
                                           int64_t n) {                                    \
        for (int64_t i = 0; i < n; i++) {                                                  \
            double x = pa[i], y = pb[i];                                                   \
            pr[i] = (E64);                                                                 \
        }                                                                                  \
    }

FLOAT_BINARY(add, x + y, x + y)
FLOAT_BINARY(sub, x - y, x - y)
FLOAT_BINARY(mul, x *y, x *y)
FLOAT_BINARY(div, x / y, x / y)
FLOAT_BINARY(rem, fmodf(x, y), fmod(x, y))
FLOAT_BINARY(pow, powf(x, y), pow(x, y))
FLOAT_BINARY(max, kiln__nanmaxf(x, y), kiln__nanmax(x, y))
FLOAT_BINARY(min, kiln__nanminf(x, y), kiln__nanmin(x, y))
FLOAT_BINARY(atan2, atan2f(x, y), atan2(x, y))

/* The float dtypes, or the error for any other. */
#define FLOAT_DEFAULT(name, text)                                              \
    default:                                                                   \
        if (!kiln__ew_float_binary(dt, a_, b_, r_, n, name##_f32, name##_f64)) \
            return kiln__ew_bad_dtype(cx, text, dt);

/* ---- integer helpers ---------------------------------------------------------------------- */

/* base^e modulo 2^64 by squaring; truncating the result gives it modulo 2^bits. */
static inline uint64_t ipow(uint64_t base, uint64_t e) {
    uint64_t r = 1;
    while (e) {
        if (e & 1u) r *= base;
        base *= base;
        e >>= 1;
    }
    return r;
}

/* Signed power: a negative exponent gives 0 except for bases 1 and -1. */
static inline int64_t ipow_signed(int64_t base, int64_t e) {
    if (e < 0) return base == 1 ? 1 : base == -1 ? ((uint64_t)e & 1u ? -1 : 1) : 0;
    return (int64_t)ipow((uint64_t)base, (uint64_t)e);
}

/* ---- kernels ------------------------------------------------------------------------------ */

KERNEL(ADD) {
    UNPACK;
    switch (dt) {
    case KILN_BOOL: BIN_LOOP(uint8_t, uint8_t, x | y); break;
#define BODY(T, U, S, W, BITS, SG) BIN_LOOP(T, T, (W)x + (W)y)
        KILN__EW_INT_CASES(BODY)
#undef BODY
        FLOAT_DEFAULT(add, "add")
    }
    return KILN_OK;
}

KERNEL(SUBTRACT) {
    UNPACK;
    switch (dt) {
#define BODY(T, U, S, W, BITS, SG) BIN_LOOP(T, T, (W)x - (W)y)
        KILN__EW_INT_CASES(BODY)
#undef BODY
        FLOAT_DEFAULT(sub, "subtract")
    }
    return KILN_OK;
}

KERNEL(MULTIPLY) {
    UNPACK;
    switch (dt) {
    case KILN_BOOL: BIN_LOOP(uint8_t, uint8_t, x & y); break;
#define BODY(T, U, S, W, BITS, SG) BIN_LOOP(T, T, (W)x *(W)y)
        KILN__EW_INT_CASES(BODY)
#undef BODY
        FLOAT_DEFAULT(mul, "multiply")
    }
    return KILN_OK;
}

KERNEL(DIVIDE) {
    UNPACK;
    switch (dt) {
#define BODY(T, U, S, W, BITS, SG) \
    BIN_LOOP(T, T, y == 0 ? (T)-1 : SG && (S)y == -1 ? (T)(0 - (W)x) : (T)(x / y))
        KILN__EW_INT_CASES(BODY)
#undef BODY
        FLOAT_DEFAULT(div, "divide")
    }
    return KILN_OK;
}

KERNEL(REMAINDER) {
    UNPACK;
    switch (dt) {
#define BODY(T, U, S, W, BITS, SG) BIN_LOOP(T, T, y == 0 ? x : SG && (S)y == -1 ? 0 : x % y)
        KILN__EW_INT_CASES(BODY)
#undef BODY
        FLOAT_DEFAULT(rem, "remainder")
    }
    return KILN_OK;
}

KERNEL(POWER) {
    UNPACK;
    switch (dt) {
#define BODY(T, U, S, W, BITS, SG) \
    BIN_LOOP(T, T,                 \
             SG ? (uint64_t)ipow_signed((int64_t)x, (int64_t)y) : ipow((uint64_t)x, (uint64_t)y))
        KILN__EW_INT_CASES(BODY)
#undef BODY
        FLOAT_DEFAULT(pow, "power")
    }
    return KILN_OK;
}

KERNEL(MAXIMUM) {
    UNPACK;
    switch (dt) {
    case KILN_BOOL: BIN_LOOP(uint8_t, uint8_t, x | y); break;
#define BODY(T, U, S, W, BITS, SG) BIN_LOOP(T, T, x > y ? x : y)
        KILN__EW_INT_CASES(BODY)
#undef BODY
        FLOAT_DEFAULT(max, "maximum")
    }
    return KILN_OK;
}

KERNEL(MINIMUM) {
    UNPACK;
    switch (dt) {
    case KILN_BOOL: BIN_LOOP(uint8_t, uint8_t, x & y); break;
#define BODY(T, U, S, W, BITS, SG) BIN_LOOP(T, T, x < y ? x : y)
        KILN__EW_INT_CASES(BODY)
#undef BODY
        FLOAT_DEFAULT(min, "minimum")
    }
    return KILN_OK;
}

KERNEL(ATAN2) {
    UNPACK;
    switch (dt) { FLOAT_DEFAULT(atan2, "atan2") }
    return KILN_OK;
}

/* and, or, xor: the same on i1 (0/1) and integers. */
#define BITWISE_KERNEL(NAME, text, OP)                              \
    KERNEL(NAME) {                                                  \
        UNPACK;                                                     \
        switch (dt) {                                               \
        case KILN_BOOL:                                             \
        case KILN_I8:                                               \
        case KILN_U8: BIN_LOOP(uint8_t, uint8_t, x OP y); break;    \
        case KILN_I16:                                              \
        case KILN_U16: BIN_LOOP(uint16_t, uint16_t, x OP y); break; \
        case KILN_I32:                                              \
        case KILN_U32: BIN_LOOP(uint32_t, uint32_t, x OP y); break; \
        case KILN_I64:                                              \
        case KILN_U64: BIN_LOOP(uint64_t, uint64_t, x OP y); break; \
        default: return kiln__ew_bad_dtype(cx, text, dt);           \
        }                                                           \
        return KILN_OK;                                             \
    }

BITWISE_KERNEL(AND, "and", &)
BITWISE_KERNEL(OR, "or", |)
BITWISE_KERNEL(XOR, "xor", ^)

KERNEL(SHIFT_LEFT) {
    UNPACK;
    switch (dt) {
#define BODY(T, U, S, W, BITS, SG) BIN_LOOP(T, T, (U)y >= (BITS) ? 0 : (W)x << (U)y)
        KILN__EW_INT_CASES(BODY)
#undef BODY
    default: return kiln__ew_bad_dtype(cx, "shift_left", dt);
    }
    return KILN_OK;
}

KERNEL(SHIFT_RIGHT_LOGICAL) {
    UNPACK;
    switch (dt) {
#define BODY(T, U, S, W, BITS, SG) BIN_LOOP(T, T, (U)y >= (BITS) ? 0 : (U)x >> (U)y)
        KILN__EW_INT_CASES(BODY)
#undef BODY
    default: return kiln__ew_bad_dtype(cx, "shift_right_logical", dt);
    }
    return KILN_OK;
}

/* Arithmetic: the top bit is the sign, for unsigned dtypes too (as StableHLO's ashr). */
KERNEL(SHIFT_RIGHT_ARITHMETIC) {
    UNPACK;
    switch (dt) {
#define BODY(T, U, S, W, BITS, SG) \
    BIN_LOOP(T, T, (U)y >= (BITS) ? ((S)x < 0 ? (S)-1 : 0) : (S)x >> (U)y)
        KILN__EW_INT_CASES(BODY)
#undef BODY
    default: return kiln__ew_bad_dtype(cx, "shift_right_arithmetic", dt);
    }
    return KILN_OK;
}
