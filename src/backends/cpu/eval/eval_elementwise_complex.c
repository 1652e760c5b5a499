/* SPDX-License-Identifier: Apache-2.0 */
/* Complex arithmetic and functions for the elementwise kernels. Add and subtract go part by
 * part and multiply is (ac-bd) + (ad+bc)i in the parts' type, as the spec's reference
 * interpreter computes them; everything else is computed on double _Complex values and
 * rounded once to the parts' type (complex<f32> too, as the reference does). The functions
 * are C's <complex.h> (Annex G: branch cuts, infinities and NaN as it says) where C has
 * one; the others are written below from the spec's definitions, and power of zero is
 * XLA's (0^0 = 1, after Kahan). */
#include "backends/cpu/eval/complex_value.h"
#include "backends/cpu/eval/eval_elementwise.h"

typedef kiln__cplx cplx;

/* ---- functions of one value ----------------------------------------------------------------- */

static cplx c_sqrt(cplx z) { return csqrt(z); }
static cplx c_rsqrt(cplx z) { return 1.0 / csqrt(z); }
static cplx c_exp(cplx z) { return cexp(z); }
static cplx c_log(cplx z) { return clog(z); }
static cplx c_sin(cplx z) { return csin(z); }
static cplx c_cos(cplx z) { return ccos(z); }
static cplx c_tan(cplx z) { return ctan(z); }
static cplx c_tanh(cplx z) { return ctanh(z); }
static cplx c_logistic(cplx z) { return 1.0 / (1.0 + cexp(-z)); }

/* The principal cube root: |z|^(1/3) at a third of z's argument (the reference's rule). */
static cplx c_cbrt(cplx z) {
    double r = cbrt(cabs(z)), t = carg(z) / 3.0;
    return kiln__cplx_of(r * cos(t), r * sin(t));
}

/* exp(z) - 1 with the real part as expm1(x) cos y - 2 sin^2(y/2), so that a small z keeps
 * its digits (exp(z) - 1 loses them all); on the real axis expm1 itself. */
static cplx c_expm1(cplx z) {
    double x = creal(z), y = cimag(z);
    if (y == 0) return kiln__cplx_of(expm1(x), y);
    double s = sin(0.5 * y);
    return kiln__cplx_of(expm1(x) * cos(y) - 2.0 * s * s, exp(x) * sin(y));
}

/* log(1 + z): the argument of 1 + z, and log |1 + z| as log1p(2x + x^2 + y^2) / 2 near 0
 * (where log |1 + z| loses the digits of a small z); on the real axis log1p itself. */
static cplx c_log1p(cplx z) {
    double x = creal(z), y = cimag(z);
    if (y == 0 && x >= -1) return kiln__cplx_of(log1p(x), y);
    double re = fabs(x) < 0.5 && fabs(y) < 0.5 ? 0.5 * log1p(x * (x + 2.0) + y * y)
                                               : log(hypot(x + 1.0, y));
    return kiln__cplx_of(re, atan2(y, x + 1.0));
}

/* z / |z|; 0 at 0 and NaN (both parts) where a part is NaN, as the spec says. */
static cplx c_sign(cplx z) {
    double x = creal(z), y = cimag(z);
    if (isnan(x) || isnan(y)) return kiln__cplx_of(NAN, NAN);
    if (x == 0 && y == 0) return kiln__cplx_of(0.0, 0.0);
    double a = hypot(x, y);
    return kiln__cplx_of(x / a, y / a);
}

typedef cplx (*unary_fn)(cplx);

static unary_fn unary_of(kiln_op op) {
    switch (op) {
    case KILN_OP_SIGN: return c_sign;
    case KILN_OP_SQRT: return c_sqrt;
    case KILN_OP_RSQRT: return c_rsqrt;
    case KILN_OP_CBRT: return c_cbrt;
    case KILN_OP_EXPONENTIAL: return c_exp;
    case KILN_OP_EXPONENTIAL_MINUS_ONE: return c_expm1;
    case KILN_OP_LOG: return c_log;
    case KILN_OP_LOG_PLUS_ONE: return c_log1p;
    case KILN_OP_LOGISTIC: return c_logistic;
    case KILN_OP_SINE: return c_sin;
    case KILN_OP_COSINE: return c_cos;
    case KILN_OP_TAN: return c_tan;
    case KILN_OP_TANH: return c_tanh;
    default: return NULL;
    }
}

/* ---- functions of two values ---------------------------------------------------------------- */

static cplx c_divide(cplx a, cplx b) { return a / b; }

/* a^b = exp(b log a); a zero base with a real exponent b >= 0 gives 1 for b = 0 and 0
 * otherwise (XLA's rule; exp(b log 0) would be NaN). */
static cplx c_power(cplx a, cplx b) {
    if (a == 0 && cimag(b) == 0 && creal(b) >= 0) return kiln__cplx_of(creal(b) == 0 ? 1 : 0, 0);
    return cpow(a, b);
}

/* atan2(y, x) = -i log((x + iy) / sqrt(x^2 + y^2)), the spec's definition. */
static cplx c_atan2(cplx y, cplx x) {
    const cplx i = kiln__cplx_of(0, 1);
    return -i * clog((x + i * y) / csqrt(x * x + y * y));
}

/* The larger and smaller in the order of (real, imaginary) pairs; with a NaN the second
 * (the reference's rule: an unordered comparison is false). */
static cplx c_maximum(cplx a, cplx b) {
    bool a_wins = creal(a) == creal(b) ? cimag(a) > cimag(b) : creal(a) > creal(b);
    return a_wins ? a : b;
}
static cplx c_minimum(cplx a, cplx b) {
    bool a_wins = creal(a) == creal(b) ? cimag(a) < cimag(b) : creal(a) < creal(b);
    return a_wins ? a : b;
}

typedef cplx (*binary_fn)(cplx, cplx);

static binary_fn binary_of(kiln_op op) {
    switch (op) {
    case KILN_OP_DIVIDE: return c_divide;
    case KILN_OP_POWER: return c_power;
    case KILN_OP_ATAN2: return c_atan2;
    case KILN_OP_MAXIMUM: return c_maximum;
    case KILN_OP_MINIMUM: return c_minimum;
    default: return NULL;
    }
}

/* ---- the loops ------------------------------------------------------------------------------ */

#define T float
#define FN(name) name##_c64
#include "backends/cpu/eval/complex_loops.inc"

#define T double
#define FN(name) name##_c128
#include "backends/cpu/eval/complex_loops.inc"

static bool is_part_by_part(kiln_op op) {
    return op == KILN_OP_ADD || op == KILN_OP_SUBTRACT || op == KILN_OP_MULTIPLY;
}

bool kiln__ew_complex_runs(kiln_op op) {
    return op == KILN_OP_ABS || op == KILN_OP_NEGATE || is_part_by_part(op) || unary_of(op) ||
           binary_of(op);
}

bool kiln__ew_complex_unary(kiln_op op, kiln_dtype dt, const void *x, void *r, int64_t n) {
    unary_fn f = unary_of(op);
    if (!f || !kiln_dtype_is_complex(dt)) return false;
    (dt == KILN_C64 ? map_unary_c64 : map_unary_c128)(f, x, r, n);
    return true;
}

bool kiln__ew_complex_binary(kiln_op op, kiln_dtype dt, const void *a, const void *b, void *r,
                             int64_t n) {
    if (!kiln_dtype_is_complex(dt)) return false;
    if (is_part_by_part(op)) {
        (dt == KILN_C64 ? part_by_part_c64 : part_by_part_c128)(op, a, b, r, n);
        return true;
    }
    binary_fn f = binary_of(op);
    if (!f) return false;
    (dt == KILN_C64 ? map_binary_c64 : map_binary_c128)(f, a, b, r, n);
    return true;
}

void kiln__ew_complex_abs(kiln_dtype dt, const void *x, void *r, int64_t n) {
    (dt == KILN_C64 ? modulus_c64 : modulus_c128)(x, r, n);
}
