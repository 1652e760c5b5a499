/* kiln/ops_elementwise.h: elementwise ops, compare, select, clamp, convert.
 * Part of kiln/ops.h (read its overview first); include that header, not this one.
 *
 * Binary ops take operands of one dtype whose shapes broadcast as numpy's do (trailing
 * dimensions equal or 1; rank-0 operands broadcast to anything); the result has the
 * broadcast shape. With equal shapes each is exactly the StableHLO op.
 */
#ifndef KILN_OPS_ELEMENTWISE_H
#define KILN_OPS_ELEMENTWISE_H

#include "kiln/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- unary: x -> same shape ------------------------------------------------------------
 * dtypes: abs, negate, sign: signed ints and floats (negate also unsigned: wraps);
 * not, popcnt, count_leading_zeros: bool (not only) and integers; is_finite: floats -> i1;
 * the rest: floats. */
KILN_API kiln_tensor *kiln_abs(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_negate(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_sign(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_not(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_floor(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_ceil(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_round_nearest_afz(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_round_nearest_even(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_sqrt(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_rsqrt(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_cbrt(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_exponential(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_exponential_minus_one(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_log(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_log_plus_one(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_logistic(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_sine(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_cosine(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_tan(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_tanh(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_is_finite(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_popcnt(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_count_leading_zeros(kiln_ctx *cx, kiln_tensor *x);

/* ---- binary (broadcasting) --------------------------------------------------------------
 * add, subtract, multiply, maximum, minimum: every dtype (on i1 add is or, multiply is
 * and); divide, remainder, power: ints and floats; atan2: floats; and, or, xor: bool and
 * ints; shifts: ints. */
KILN_API kiln_tensor *kiln_add(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);
KILN_API kiln_tensor *kiln_subtract(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);
KILN_API kiln_tensor *kiln_multiply(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);
KILN_API kiln_tensor *kiln_divide(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);
KILN_API kiln_tensor *kiln_remainder(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);
KILN_API kiln_tensor *kiln_power(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);
KILN_API kiln_tensor *kiln_maximum(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);
KILN_API kiln_tensor *kiln_minimum(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);
KILN_API kiln_tensor *kiln_atan2(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);
KILN_API kiln_tensor *kiln_and(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);
KILN_API kiln_tensor *kiln_or(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);
KILN_API kiln_tensor *kiln_xor(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);
KILN_API kiln_tensor *kiln_shift_left(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);
KILN_API kiln_tensor *kiln_shift_right_arithmetic(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);
KILN_API kiln_tensor *kiln_shift_right_logical(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);

/* ---- compare, select, clamp ------------------------------------------------------------ */

typedef enum kiln_compare_direction {
    KILN_CMP_EQ,
    KILN_CMP_NE,
    KILN_CMP_GE,
    KILN_CMP_GT,
    KILN_CMP_LE,
    KILN_CMP_LT,
} kiln_compare_direction;

typedef enum kiln_compare_type {
    KILN_CMP_DEFAULT,    /* FLOAT for floats, SIGNED for signed ints, UNSIGNED otherwise */
    KILN_CMP_FLOAT,      /* IEEE: NaN compares unequal to everything */
    KILN_CMP_TOTALORDER, /* -NaN < -inf < ... < -0 < +0 < ... < inf < NaN */
    KILN_CMP_SIGNED,
    KILN_CMP_UNSIGNED,
} kiln_compare_type;

/* a <dir> b elementwise (broadcasting) -> i1. The type must suit the dtype (FLOAT and
 * TOTALORDER for floats, SIGNED for signed ints, UNSIGNED for unsigned ints and i1). */
KILN_API kiln_tensor *kiln_compare(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b,
                                   kiln_compare_direction direction, kiln_compare_type type);

/* pred ? on_true : on_false, elementwise. pred is i1, of the result's shape or rank 0;
 * on_true and on_false have one dtype and broadcast together. */
KILN_API kiln_tensor *kiln_select(kiln_ctx *cx, kiln_tensor *pred, kiln_tensor *on_true,
                                  kiln_tensor *on_false);

/* min(max(x, lo), hi) elementwise with maximum/minimum's NaN rules; lo and hi have x's
 * shape or rank 0. */
KILN_API kiln_tensor *kiln_clamp(kiln_ctx *cx, kiln_tensor *lo, kiln_tensor *x, kiln_tensor *hi);

/* ---- conversions ----------------------------------------------------------------------- */

/* Value conversion to `dtype`: float->int truncates toward zero and saturates, NaN -> 0;
 * int->int wraps; to i1: x != 0; floats round to nearest even. */
KILN_API kiln_tensor *kiln_convert(kiln_ctx *cx, kiln_tensor *x, kiln_dtype dtype);

/* Reinterprets the bits. Same element size: same shape. Smaller target: a new minor
 * dimension of size (source bits / target bits); larger target: the minor dimension of x
 * must be (target bits / source bits) and is removed. */
KILN_API kiln_tensor *kiln_bitcast_convert(kiln_ctx *cx, kiln_tensor *x, kiln_dtype dtype);

#ifdef __cplusplus
}
#endif

#endif
