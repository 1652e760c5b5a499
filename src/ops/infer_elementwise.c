/* SPDX-License-Identifier: Apache-2.0 */
/* Shape and dtype inference for the elementwise family: unary and binary elementwise ops,
 * compare, select, clamp, convert, bitcast_convert and reduce_precision. The rules are
 * StableHLO's (docs/spec.md): operands of one type (the builders broadcast before
 * calling), and the dtypes each op accepts. */
#include <stdio.h>

#include "ops/infer.h"

/* Sets of dtypes, as bit masks over kiln_dtype. */
#define BIT(d) (1u << (d))
_Static_assert(KILN_DTYPE_COUNT <= 32, "a dtype set is 32 bits");
enum {
    SET_BOOL = BIT(KILN_BOOL),
    SET_SINT = BIT(KILN_I2) | BIT(KILN_I4) | BIT(KILN_I8) | BIT(KILN_I16) | BIT(KILN_I32) |
               BIT(KILN_I64),
    SET_UINT = BIT(KILN_U2) | BIT(KILN_U4) | BIT(KILN_U8) | BIT(KILN_U16) | BIT(KILN_U32) |
               BIT(KILN_U64),
    SET_INT = SET_SINT | SET_UINT,
    /* f16, bf16, f32, f64 and the small floats, KILN_F8E4M3FN .. KILN_F4E2M1FN */
    SET_FLOAT = BIT(KILN_F16) | BIT(KILN_BF16) | BIT(KILN_F32) | BIT(KILN_F64) |
                ((BIT(KILN_F4E2M1FN) << 1) - BIT(KILN_F8E4M3FN)),
    SET_COMPLEX = BIT(KILN_C64) | BIT(KILN_C128),
    SET_ALL = SET_BOOL | SET_INT | SET_FLOAT,
    SET_NUMBER = SET_INT | SET_FLOAT | SET_COMPLEX,
};

/* What a set of dtypes is called in messages. */
static const char *set_text(unsigned set) {
    switch (set) {
    case SET_FLOAT: return "a floating-point dtype (f4E2M1FN .. f8E8M0FNU, f16, bf16, f32, f64)";
    case SET_INT: return "an integer dtype (i2..i64, ui2..ui64)";
    case SET_INT | SET_BOOL: return "i1 or an integer dtype";
    case SET_SINT | SET_FLOAT: return "a signed integer or floating-point dtype";
    case SET_INT | SET_FLOAT: return "an integer or floating-point dtype";
    case SET_FLOAT | SET_COMPLEX: return "a floating-point or complex dtype";
    case SET_SINT | SET_FLOAT | SET_COMPLEX:
        return "a signed integer, floating-point or complex dtype";
    case SET_NUMBER: return "an integer, floating-point or complex dtype";
    default: return "a supported dtype";
    }
}

static bool in_set(kiln_dtype dtype, unsigned set) {
    return kiln_dtype_is_valid(dtype) && (set & BIT(dtype)) != 0;
}

static kiln_status check_dtype(kiln_ctx *cx, const kiln__attrs *attrs, int index, kiln_dtype dtype,
                               unsigned set) {
    if (in_set(dtype, set)) return KILN_OK;
    if (!kiln_dtype_is_valid(dtype))
        return kiln__infer_error(cx, attrs, "operand %d has invalid dtype %d", index + 1,
                                 (int)dtype);
    return kiln__infer_error(cx, attrs, "operand %d has dtype %s; expected %s", index + 1,
                             kiln_dtype_name(dtype), set_text(set));
}

/* Operand `index` must have exactly the type `want` (the type of operand `ref`). */
static kiln_status check_same_type(kiln_ctx *cx, const kiln__attrs *attrs,
                                   const kiln__type *operands, int index, int ref) {
    const kiln__type *t = &operands[index], *want = &operands[ref];
    if (t->dtype == want->dtype && kiln_shape_equal(&t->shape, &want->shape)) return KILN_OK;
    char have[KILN__TYPE_TEXT], expected[KILN__TYPE_TEXT];
    return kiln__infer_error(
        cx, attrs, "operand %d has type %s; expected %s (the type of operand %d)", index + 1,
        kiln__type_text(t, have), kiln__type_text(want, expected), ref + 1);
}

/* x -> same type, x's dtype in `set` (kiln__infer checked the counts). */
static kiln_status unary(kiln_ctx *cx, const kiln__attrs *attrs, const kiln__type *operands,
                         kiln__type *results, unsigned set) {
    kiln_status s = check_dtype(cx, attrs, 0, operands[0].dtype, set);
    if (s != KILN_OK) return s;
    results[0] = operands[0];
    return KILN_OK;
}

/* (a, b) -> a's type, both of one type with dtype in `set`. */
static kiln_status binary(kiln_ctx *cx, const kiln__attrs *attrs, const kiln__type *operands,
                          kiln__type *results, unsigned set) {
    kiln_status s = check_dtype(cx, attrs, 0, operands[0].dtype, set);
    if (s == KILN_OK) s = check_same_type(cx, attrs, operands, 1, 0);
    if (s != KILN_OK) return s;
    results[0] = operands[0];
    return KILN_OK;
}

#define UNARY(NAME, SET)                                 \
    KILN__INFER(NAME) {                                  \
        (void)n_operands, (void)n_results;               \
        return unary(cx, attrs, operands, results, SET); \
    }
#define BINARY(NAME, SET)                                 \
    KILN__INFER(NAME) {                                   \
        (void)n_operands, (void)n_results;                \
        return binary(cx, attrs, operands, results, SET); \
    }

UNARY(NEGATE, SET_NUMBER)
UNARY(SIGN, SET_SINT | SET_FLOAT | SET_COMPLEX)
UNARY(NOT, SET_INT | SET_BOOL)
UNARY(FLOOR, SET_FLOAT)
UNARY(CEIL, SET_FLOAT)
UNARY(ROUND_NEAREST_AFZ, SET_FLOAT)
UNARY(ROUND_NEAREST_EVEN, SET_FLOAT)
UNARY(SQRT, SET_FLOAT | SET_COMPLEX)
UNARY(RSQRT, SET_FLOAT | SET_COMPLEX)
UNARY(CBRT, SET_FLOAT | SET_COMPLEX)
UNARY(EXPONENTIAL, SET_FLOAT | SET_COMPLEX)
UNARY(EXPONENTIAL_MINUS_ONE, SET_FLOAT | SET_COMPLEX)
UNARY(LOG, SET_FLOAT | SET_COMPLEX)
UNARY(LOG_PLUS_ONE, SET_FLOAT | SET_COMPLEX)
UNARY(LOGISTIC, SET_FLOAT | SET_COMPLEX)
UNARY(SINE, SET_FLOAT | SET_COMPLEX)
UNARY(COSINE, SET_FLOAT | SET_COMPLEX)
UNARY(TAN, SET_FLOAT | SET_COMPLEX)
UNARY(TANH, SET_FLOAT | SET_COMPLEX)
UNARY(POPCNT, SET_INT)
UNARY(COUNT_LEADING_ZEROS, SET_INT)

BINARY(ADD, SET_ALL | SET_COMPLEX)
BINARY(SUBTRACT, SET_NUMBER)
BINARY(MULTIPLY, SET_ALL | SET_COMPLEX)
BINARY(DIVIDE, SET_NUMBER)
BINARY(REMAINDER, SET_NUMBER)
BINARY(POWER, SET_NUMBER)
BINARY(MAXIMUM, SET_ALL | SET_COMPLEX)
BINARY(MINIMUM, SET_ALL | SET_COMPLEX)
BINARY(ATAN2, SET_FLOAT | SET_COMPLEX)
BINARY(AND, SET_INT | SET_BOOL)
BINARY(OR, SET_INT | SET_BOOL)
BINARY(XOR, SET_INT | SET_BOOL)
BINARY(SHIFT_LEFT, SET_INT)
BINARY(SHIFT_RIGHT_ARITHMETIC, SET_INT)
BINARY(SHIFT_RIGHT_LOGICAL, SET_INT)

/* abs of a complex value is its magnitude, of the parts' type (the spec's C2). */
KILN__INFER(ABS) {
    (void)n_operands, (void)n_results;
    kiln_status s = unary(cx, attrs, operands, results, SET_SINT | SET_FLOAT | SET_COMPLEX);
    if (s == KILN_OK) results[0].dtype = kiln_dtype_component(operands[0].dtype);
    return s;
}

/* real and imag: of a complex value its part, of a float the value or 0; the parts' type
 * (the spec's C1, C2). */
static kiln_status part(kiln_ctx *cx, const kiln__attrs *attrs, const kiln__type *operands,
                        kiln__type *results) {
    kiln_status s = unary(cx, attrs, operands, results, SET_FLOAT | SET_COMPLEX);
    if (s == KILN_OK) results[0].dtype = kiln_dtype_component(operands[0].dtype);
    return s;
}
KILN__INFER(REAL) {
    (void)n_operands, (void)n_results;
    return part(cx, attrs, operands, results);
}
KILN__INFER(IMAG) {
    (void)n_operands, (void)n_results;
    return part(cx, attrs, operands, results);
}

/* complex(re, im): two f32 or two f64 operands of one shape -> complex<f32|f64>. */
KILN__INFER(COMPLEX) {
    (void)n_operands, (void)n_results;
    kiln_dtype d = operands[0].dtype;
    if (d != KILN_F32 && d != KILN_F64)
        return kiln__infer_error(cx, attrs, "operand 1 has dtype %s; expected f32 or f64",
                                 kiln_dtype_is_valid(d) ? kiln_dtype_name(d) : "invalid");
    kiln_status s = check_same_type(cx, attrs, operands, 1, 0);
    if (s != KILN_OK) return s;
    results[0] = operands[0];
    results[0].dtype = d == KILN_F32 ? KILN_C64 : KILN_C128;
    return KILN_OK;
}

KILN__INFER(IS_FINITE) {
    (void)n_operands, (void)n_results;
    kiln_status s = unary(cx, attrs, operands, results, SET_FLOAT);
    if (s == KILN_OK) results[0].dtype = KILN_BOOL;
    return s;
}

static const char *compare_type_name(kiln_compare_type t) {
    static const char *const names[] = {"DEFAULT", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
    return (int)t >= 0 && (int)t < 5 ? names[t] : "?";
}

KILN__INFER(COMPARE) {
    (void)n_operands, (void)n_results;
    kiln_status s = binary(cx, attrs, operands, results, SET_ALL | SET_COMPLEX);
    if (s != KILN_OK) return s;
    kiln_compare_direction dir = attrs->u.compare.direction;
    kiln_compare_type type = attrs->u.compare.type;
    if ((int)dir < (int)KILN_CMP_EQ || (int)dir > (int)KILN_CMP_LT)
        return kiln__infer_error(cx, attrs,
                                 "comparison direction %d is not one of EQ, NE, GE, "
                                 "GT, LE, LT",
                                 (int)dir);
    if ((int)type < (int)KILN_CMP_DEFAULT || (int)type > (int)KILN_CMP_UNSIGNED)
        return kiln__infer_error(cx, attrs,
                                 "compare type %d is not one of DEFAULT, FLOAT, "
                                 "TOTALORDER, SIGNED, UNSIGNED",
                                 (int)type);
    kiln_dtype d = operands[0].dtype;
    const char *expected = NULL;
    if (kiln_dtype_is_complex(d)) {
        if (dir != KILN_CMP_EQ && dir != KILN_CMP_NE)
            return kiln__infer_error(cx, attrs, "complex compare supports only EQ and NE");
        if (type != KILN_CMP_DEFAULT && type != KILN_CMP_FLOAT) expected = "FLOAT";
    } else if (kiln_dtype_is_float(d)) {
        if (type != KILN_CMP_DEFAULT && type != KILN_CMP_FLOAT && type != KILN_CMP_TOTALORDER)
            expected = "FLOAT or TOTALORDER";
    } else if (in_set(d, SET_SINT)) {
        if (type != KILN_CMP_DEFAULT && type != KILN_CMP_SIGNED) expected = "SIGNED";
    } else if (type != KILN_CMP_DEFAULT && type != KILN_CMP_UNSIGNED) {
        expected = "UNSIGNED";
    }
    if (expected)
        return kiln__infer_error(cx, attrs, "compare type %s does not suit dtype %s; expected %s",
                                 compare_type_name(type), kiln_dtype_name(d), expected);
    results[0].dtype = KILN_BOOL;
    return KILN_OK;
}

/* Operand `index` must be rank 0 or have operand `ref`'s shape. */
static kiln_status check_scalar_or_shape(kiln_ctx *cx, const kiln__attrs *attrs,
                                         const kiln__type *operands, int index, int ref,
                                         const char *name) {
    const kiln_shape *s = &operands[index].shape, *want = &operands[ref].shape;
    if (s->rank == 0 || kiln_shape_equal(s, want)) return KILN_OK;
    char have[KILN__SHAPE_TEXT], expected[KILN__SHAPE_TEXT];
    return kiln__infer_error(cx, attrs, "operand %d (%s) has shape %s; expected rank 0 or %s",
                             index + 1, name, kiln__shape_text(s, have),
                             kiln__shape_text(want, expected));
}

KILN__INFER(SELECT) {
    (void)n_operands, (void)n_results;
    if (operands[0].dtype != KILN_BOOL)
        return kiln__infer_error(cx, attrs, "operand 1 (pred) has dtype %s; expected i1",
                                 kiln_dtype_name(operands[0].dtype));
    kiln_status s = check_dtype(cx, attrs, 1, operands[1].dtype, SET_ALL | SET_COMPLEX);
    if (s == KILN_OK) s = check_same_type(cx, attrs, operands, 2, 1);
    if (s == KILN_OK) s = check_scalar_or_shape(cx, attrs, operands, 0, 1, "pred");
    if (s != KILN_OK) return s;
    results[0] = operands[1];
    return KILN_OK;
}

KILN__INFER(CLAMP) {
    (void)n_operands, (void)n_results;
    kiln_status s = check_dtype(cx, attrs, 1, operands[1].dtype, SET_ALL);
    if (s != KILN_OK) return s;
    static const char *const names[3] = {"min", "operand", "max"};
    for (int i = 0; i < 3; i += 2) {
        if (operands[i].dtype != operands[1].dtype)
            return kiln__infer_error(cx, attrs,
                                     "operand %d (%s) has dtype %s; expected %s (the "
                                     "dtype of operand 2)",
                                     i + 1, names[i], kiln_dtype_name(operands[i].dtype),
                                     kiln_dtype_name(operands[1].dtype));
        s = check_scalar_or_shape(cx, attrs, operands, i, 1, names[i]);
        if (s != KILN_OK) return s;
    }
    results[0] = operands[1];
    return KILN_OK;
}

KILN__INFER(CONVERT) {
    (void)n_operands, (void)n_results;
    kiln_status s = unary(cx, attrs, operands, results, SET_ALL | SET_COMPLEX);
    if (s != KILN_OK) return s;
    if (!kiln_dtype_is_valid(attrs->u.convert_to))
        return kiln__infer_error(cx, attrs, "target dtype %d is not a dtype",
                                 (int)attrs->u.convert_to);
    results[0].dtype = attrs->u.convert_to;
    return KILN_OK;
}

/* Bits of an element for bitcast_convert: i1 counts as one bit. */
static int64_t bitcast_bits(kiln_dtype d) {
    return d == KILN_BOOL ? 1 : (int64_t)kiln_dtype_size(d) * 8;
}

KILN__INFER(BITCAST_CONVERT) {
    (void)n_operands, (void)n_results;
    kiln_status s = unary(cx, attrs, operands, results, SET_ALL | SET_COMPLEX);
    if (s != KILN_OK) return s;
    kiln_dtype to = attrs->u.convert_to;
    if (!kiln_dtype_is_valid(to))
        return kiln__infer_error(cx, attrs, "target dtype %d is not a dtype", (int)to);
    const kiln__type *x = &operands[0];
    int64_t from_bits = bitcast_bits(x->dtype), to_bits = bitcast_bits(to);
    kiln_shape shape = x->shape;
    char have[KILN__TYPE_TEXT];
    if (to_bits < from_bits) {
        if (shape.rank >= KILN_MAX_RANK)
            return kiln__infer_error(cx, attrs,
                                     "operand 1 has type %s; converting to %s adds a dimension "
                                     "and the rank would exceed %d",
                                     kiln__type_text(x, have), kiln_dtype_name(to), KILN_MAX_RANK);
        shape.dims[shape.rank++] = from_bits / to_bits;
    } else if (to_bits > from_bits) {
        int64_t want = to_bits / from_bits;
        if (shape.rank == 0 || shape.dims[shape.rank - 1] != want)
            return kiln__infer_error(cx, attrs,
                                     "operand 1 has type %s; converting to %s needs a last "
                                     "dimension of %lld",
                                     kiln__type_text(x, have), kiln_dtype_name(to),
                                     (long long)want);
        shape.dims[--shape.rank] = 0;
    }
    results[0].dtype = to;
    results[0].shape = shape;
    return KILN_OK;
}

/* reduce_precision: a float operand, and the spec's (C2) exponent_bits >= 1 and (C3)
 * mantissa_bits >= 0. */
KILN__INFER(REDUCE_PRECISION) {
    (void)n_operands, (void)n_results;
    kiln_status s = unary(cx, attrs, operands, results, SET_FLOAT);
    if (s != KILN_OK) return s;
    int64_t e = attrs->u.precision.exponent_bits, m = attrs->u.precision.mantissa_bits;
    if (e < 1 || e > 1024)
        return kiln__infer_error(cx, attrs, "exponent_bits is %lld; it must be in [1, 1024]",
                                 (long long)e);
    if (m < 0 || m > 1024)
        return kiln__infer_error(cx, attrs, "mantissa_bits is %lld; it must be in [0, 1024]",
                                 (long long)m);
    return KILN_OK;
}
