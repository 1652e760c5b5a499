/* SPDX-License-Identifier: Apache-2.0 */
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
 * dtypes: abs, sign: signed ints and floats (abs(INT_MIN) = INT_MIN; sign keeps NaN and
 * the sign of zeros); negate: ints and floats (unsigned wraps); not: i1 and ints;
 * popcnt, count_leading_zeros: ints (count_leading_zeros(0) is the bit width); is_finite:
 * floats -> i1; the rest: floats. round_nearest_afz rounds ties away from zero (C round),
 * round_nearest_even to even; logistic is 1 / (1 + exp(-x)). No flush to zero.
 * Complex: abs (the modulus, of the parts' dtype), sign (x / |x|, 0 at 0), negate, sqrt,
 * rsqrt, cbrt (the principal root), exponential, exponential_minus_one, log,
 * log_plus_one, logistic, sine, cosine, tan, tanh take complex<f32|f64> too: computed in
 * double complex arithmetic (C's <complex.h>, its branch cuts) and rounded once.
 * Accuracy of the transcendentals (eager and compiled give the same bits): f32 sine and
 * cosine at most 0.502 ulp from the exact value (checked over every f32 input); the others,
 * and every f64 one, within 1 ulp (SLEEF's u10 functions); f16/bf16 are computed in f32
 * and rounded once. */
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

/* ---- complex values ---------------------------------------------------------------------
 * real and imag of complex<f32|f64> are its parts (f32|f64); of f32/f64 (any float dtype)
 * the value and 0. complex(re, im) of two f32 (f64) tensors of one shape (broadcasting) is
 * complex<f32> (complex<f64>). */
KILN_API kiln_tensor *kiln_real(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_imag(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_complex(kiln_ctx *cx, kiln_tensor *re, kiln_tensor *im);

/* ---- binary (broadcasting) --------------------------------------------------------------
 * add, multiply, maximum, minimum: every dtype (on i1 add and maximum are or, multiply and
 * minimum are and); subtract, divide, remainder, power: ints and floats; atan2: floats;
 * and, or, xor: i1 and ints; shifts: ints. On complex values add, subtract, multiply
 * (part by part, (ac - bd) + (ad + bc)i), divide (C's, in double), power (exp(b log a);
 * 0^0 = 1 and 0^b = 0 for real b > 0), atan2 (-i log((x + iy) / sqrt(x^2 + y^2))) and
 * maximum/minimum (in the order of (real, imaginary) pairs) run; remainder is refused.
 * Integers wrap. Integer divide truncates; x / 0 = -1 (all ones unsigned) and
 * INT_MIN / -1 = INT_MIN; x % 0 = x and INT_MIN % -1 = 0; remainder has the sign of the
 * dividend (fmod for floats). Integer power with a negative exponent is 0 unless the base
 * is 1 (-> 1) or -1 (-> -1 or 1). maximum/minimum propagate NaN and order -0 < +0. Shift
 * amounts are read as unsigned; shifting by the bit width or more gives 0, or for
 * shift_right_arithmetic copies of the top bit (which is the sign, for unsigned dtypes
 * too). */
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
    KILN_CMP_FLOAT,      /* IEEE: NaN compares unequal to everything (NE is true) */
    KILN_CMP_TOTALORDER, /* -NaN < -inf < ... < -0 < +0 < ... < inf < NaN, by bit pattern:
                            equal patterns are equal (NaN too), -0 != +0 */
    KILN_CMP_SIGNED,
    KILN_CMP_UNSIGNED,
} kiln_compare_type;

/* a <dir> b elementwise (broadcasting) -> i1. The type must suit the dtype (FLOAT and
 * TOTALORDER for floats, SIGNED for signed ints, UNSIGNED for unsigned ints and i1). */
KILN_API kiln_tensor *kiln_compare(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b,
                                   kiln_compare_direction direction, kiln_compare_type type);

/* pred ? on_true : on_false, elementwise, as numpy's where: pred is i1; on_true and
 * on_false have one dtype; all three broadcast together (a rank-0 pred picks a whole
 * operand). */
KILN_API kiln_tensor *kiln_select(kiln_ctx *cx, kiln_tensor *pred, kiln_tensor *on_true,
                                  kiln_tensor *on_false);

/* min(max(x, lo), hi) elementwise with maximum/minimum's NaN and signed-zero rules; lo and
 * hi have x's dtype and x's shape or rank 0 (not broadcast). Every dtype. */
KILN_API kiln_tensor *kiln_clamp(kiln_ctx *cx, kiln_tensor *lo, kiln_tensor *x, kiln_tensor *hi);

/* ---- conversions ----------------------------------------------------------------------- */

/* Value conversion to `dtype`, any dtype to any: float->int truncates toward zero and
 * saturates, NaN -> 0; int->int wraps; to i1: x != 0 (NaN is true); i1 -> 0 or 1; to
 * floats: rounded once to nearest even (infinity past the largest finite value), NaN,
 * infinities and signed zeros kept. */
KILN_API kiln_tensor *kiln_convert(kiln_ctx *cx, kiln_tensor *x, kiln_dtype dtype);

/* Reinterprets the bits. Same element size: same shape. Smaller target: a new minor
 * dimension of size (source bits / target bits); larger target: the minor dimension of x
 * must be (target bits / source bits) and is removed. Pieces are in little-endian order
 * (the first is the least significant); i1 counts as one bit, so 64 i1 make one i64. */
KILN_API kiln_tensor *kiln_bitcast_convert(kiln_ctx *cx, kiln_tensor *x, kiln_dtype dtype);

/* x (any float dtype) rounded as if to a float of `exponent_bits` (>= 1) exponent and
 * `mantissa_bits` (>= 0) mantissa bits, and held in x's dtype again (StableHLO's
 * reduce_precision; jax.lax.reduce_precision): round to nearest even, overflow to a signed
 * infinity, values below the narrower format's smallest normal to a signed zero. A NaN
 * stays NaN when mantissa_bits > 0 and becomes +infinity when it is 0. Works on the bits of
 * x's own format (f16 and the small floats are not widened first); widths at least x's
 * own change nothing. Returns a new tensor in the current scope (kiln/ops.h), or NULL with
 * INVALID_ARGUMENT for a non-float x, exponent_bits < 1 or mantissa_bits < 0 (naming the
 * attribute and its value). */
KILN_API kiln_tensor *kiln_reduce_precision(kiln_ctx *cx, kiln_tensor *x, int exponent_bits,
                                            int mantissa_bits);

/* StableHLO's map: `computation` called on the elements of each position of the inputs
 * (n_inputs of them, all of one shape; it takes one rank-0 tensor of each input's dtype
 * and returns one rank-0 tensor of `result_dtype`), its results making a tensor of that
 * shape. Traced under kiln_lower, the computation becomes the op's region; eagerly it is
 * called once per element (a function of the whole arrays is the fast way to write the
 * same thing). Returns a new tensor in the current scope (kiln/ops.h), or NULL with
 * INVALID_ARGUMENT for inputs of different shapes, no inputs, a NULL computation or input,
 * or a computation that returns anything but a scalar of result_dtype. */
KILN_API kiln_tensor *kiln_map(kiln_ctx *cx, const kiln_region *computation,
                               kiln_tensor *const *inputs, int32_t n_inputs,
                               kiln_dtype result_dtype);

#ifdef __cplusplus
}
#endif

#endif
