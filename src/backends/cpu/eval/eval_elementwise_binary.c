/* SPDX-License-Identifier: Apache-2.0 */
/* Evaluator kernels for the binary elementwise ops. Operands have one type and shape (the
 * builders broadcast first). Floating-point ops are typed loops over f32/f64 arrays (f16/bf16
 * computed in f32, rounded once); integer ops follow StableHLO where C has undefined
 * behaviour: arithmetic wraps, x/0 = -1 (all ones unsigned), INT_MIN/-1 = INT_MIN, x%0 = x,
 * INT_MIN%-1 = 0, shifts by at least the width give 0 (or the sign for arithmetic right
 * shifts) with the amount read as unsigned, and power by squaring wraps. On i1, add and
 * maximum are or, multiply and minimum are and. */

#include "backends/cpu/eval/eval_elementwise.h"

#define KERNEL(NAME) KILN__EW_KERNEL(NAME)

/* ---- floating-point array kernels --------------------------------------------------------- */

#define T float
#define FN(name) name##_f32
#define FMOD fmodf
#define POW powf
#define ATAN2 atan2f
#define NANMAX kiln__nanmaxf
#define NANMIN kiln__nanminf
#include "backends/cpu/eval/elementwise_binary_float.inc"

#define T double
#define FN(name) name##_f64
#define FMOD fmod
#define POW pow
#define ATAN2 atan2
#define NANMAX kiln__nanmax
#define NANMIN kiln__nanmin
#include "backends/cpu/eval/elementwise_binary_float.inc"

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

/* The integer ops (INT_NONE: none), and their loops for each integer dtype
 * (elementwise_binary_int.inc). */
enum int_binary {
    INT_NONE,
    INT_ADD,
    INT_SUBTRACT,
    INT_MULTIPLY,
    INT_DIVIDE,
    INT_REMAINDER,
    INT_POWER,
    INT_MAXIMUM,
    INT_MINIMUM,
    INT_AND,
    INT_OR,
    INT_XOR,
    INT_SHIFT_LEFT,
    INT_SHIFT_RIGHT_LOGICAL,
    INT_SHIFT_RIGHT_ARITHMETIC,
};

#define KILN__EW_INT_TEMPLATE "backends/cpu/eval/elementwise_binary_int.inc"
#include "backends/cpu/eval/elementwise_int_types.inc"

/* Runs op on n elements of integer dtype dt; false for any other dtype. */
static inline __attribute__((always_inline)) bool int_binary(kiln_dtype dt, enum int_binary op,
                                                             const void *a_, const void *b_,
                                                             void *r_, int64_t n) {
    switch (dt) {
    case KILN_I8: binary_i8(op, a_, b_, r_, n); return true;
    case KILN_I16: binary_i16(op, a_, b_, r_, n); return true;
    case KILN_I32: binary_i32(op, a_, b_, r_, n); return true;
    case KILN_I64: binary_i64(op, a_, b_, r_, n); return true;
    case KILN_U8: binary_u8(op, a_, b_, r_, n); return true;
    case KILN_U16: binary_u16(op, a_, b_, r_, n); return true;
    case KILN_U32: binary_u32(op, a_, b_, r_, n); return true;
    case KILN_U64: binary_u64(op, a_, b_, r_, n); return true;
    default: return false;
    }
}

/* ---- kernels ------------------------------------------------------------------------------ */

/* One binary kernel: on i1 bool_op (on 0/1 as u8), on integers int_op, on floats f32/f64
 * (NULL: none), on complex values op's complex kernel; any other dtype is an error. Always
 * inlined into each kernel with its ops constant, so that each keeps only its own loops. */
static inline __attribute__((always_inline)) kiln_status
run(kiln_ctx *cx, kiln_op op, kiln_tensor *const *operands, kiln_tensor **results,
    enum int_binary bool_op, enum int_binary int_op, kiln__ew_binary_f32 f32,
    kiln__ew_binary_f64 f64) {
    kiln_dtype dt = kiln_tensor_dtype(operands[0]);
    int64_t n = kiln_tensor_numel(results[0]);
    if (n == 0) return KILN_OK;
    const void *a_ = kiln__in(operands[0]);
    const void *b_ = kiln__in(operands[1]);
    void *r_ = kiln__out(results[0]);
    if (kiln_dtype_is_complex(dt) && kiln__ew_complex_binary(op, dt, a_, b_, r_, n))
        return KILN_OK;
    if (dt == KILN_BOOL && bool_op != INT_NONE) {
        binary_u8(bool_op, a_, b_, r_, n);
        return KILN_OK;
    }
    /* and, or, xor are the same bits signed or not: one loop per width. A sub-byte integer
     * reaches here only for shift_right_logical (ops/widen.h), which shifts its bits: its
     * byte, zero above them, as a ui8. */
    bool bitwise = int_op == INT_AND || int_op == INT_OR || int_op == INT_XOR;
    kiln_dtype int_dt = kiln_dtype_is_narrow(dt) ? KILN_U8
                        : !bitwise         ? dt
                        : dt == KILN_I8   ? KILN_U8
                        : dt == KILN_I16 ? KILN_U16
                        : dt == KILN_I32 ? KILN_U32
                        : dt == KILN_I64 ? KILN_U64
                                         : dt;
    if (int_op != INT_NONE && int_binary(int_dt, int_op, a_, b_, r_, n)) return KILN_OK;
    if (f32 && kiln__ew_float_binary(dt, a_, b_, r_, n, f32, f64)) return KILN_OK;
    return kiln__ew_bad_dtype(cx, kiln__op_get_info(op)->name, dt);
}

KERNEL(ADD) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run(cx, KILN_OP_ADD, operands, results, INT_OR, INT_ADD, add_f32, add_f64);
}

KERNEL(SUBTRACT) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run(cx, KILN_OP_SUBTRACT, operands, results, INT_NONE, INT_SUBTRACT, sub_f32, sub_f64);
}

KERNEL(MULTIPLY) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run(cx, KILN_OP_MULTIPLY, operands, results, INT_AND, INT_MULTIPLY, mul_f32, mul_f64);
}

KERNEL(DIVIDE) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run(cx, KILN_OP_DIVIDE, operands, results, INT_NONE, INT_DIVIDE, div_f32, div_f64);
}

KERNEL(REMAINDER) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run(cx, KILN_OP_REMAINDER, operands, results, INT_NONE, INT_REMAINDER, rem_f32, rem_f64);
}

KERNEL(POWER) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run(cx, KILN_OP_POWER, operands, results, INT_NONE, INT_POWER, pow_f32, pow_f64);
}

KERNEL(MAXIMUM) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run(cx, KILN_OP_MAXIMUM, operands, results, INT_OR, INT_MAXIMUM, max_f32, max_f64);
}

KERNEL(MINIMUM) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run(cx, KILN_OP_MINIMUM, operands, results, INT_AND, INT_MINIMUM, min_f32, min_f64);
}

KERNEL(ATAN2) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run(cx, KILN_OP_ATAN2, operands, results, INT_NONE, INT_NONE, atan2_f32, atan2_f64);
}

/* and, or, xor: the same on i1 (0/1) and integers. */
KERNEL(AND) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run(cx, KILN_OP_AND, operands, results, INT_AND, INT_AND, NULL, NULL);
}

KERNEL(OR) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run(cx, KILN_OP_OR, operands, results, INT_OR, INT_OR, NULL, NULL);
}

KERNEL(XOR) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run(cx, KILN_OP_XOR, operands, results, INT_XOR, INT_XOR, NULL, NULL);
}

KERNEL(SHIFT_LEFT) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run(cx, KILN_OP_SHIFT_LEFT, operands, results, INT_NONE, INT_SHIFT_LEFT, NULL, NULL);
}

KERNEL(SHIFT_RIGHT_LOGICAL) {
    (void)attrs, (void)n_operands, (void)n_results;
    return run(cx, KILN_OP_SHIFT_RIGHT_LOGICAL, operands, results, INT_NONE,
               INT_SHIFT_RIGHT_LOGICAL, NULL, NULL);
}

/* Arithmetic: the top bit is the sign, for unsigned dtypes too (as StableHLO's ashr). */
KERNEL(SHIFT_RIGHT_ARITHMETIC) {
    (void)attrs, (void)n_operands, (void)n_results;
    kiln_dtype dt = kiln_tensor_dtype(operands[0]);
    if (kiln_dtype_is_narrow(dt)) { /* on the type's bits: its top bit is the sign */
        int64_t n = kiln_tensor_numel(results[0]);
        if (n == 0) return KILN_OK;
        const uint8_t *a = kiln__in(operands[0]), *b = kiln__in(operands[1]);
        uint8_t *r = kiln__out(results[0]);
        unsigned bits = kiln_dtype_bits(dt), mask = (1u << bits) - 1u;
        for (int64_t i = 0; i < n; i++) {
            unsigned v = a[i] & mask, s = b[i] & mask, sign = (v >> (bits - 1)) & 1u;
            unsigned fill = sign ? mask : 0u; /* every bit shifted in is the sign */
            r[i] = (uint8_t)(s >= bits ? fill : ((v >> s) | (fill << (bits - s))) & mask);
        }
        return KILN_OK;
    }
    return run(cx, KILN_OP_SHIFT_RIGHT_ARITHMETIC, operands, results, INT_NONE,
               INT_SHIFT_RIGHT_ARITHMETIC, NULL, NULL);
}
