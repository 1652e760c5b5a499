/* SPDX-License-Identifier: Apache-2.0 */
/* The small float types (f8, f6, f4): one parameter row per type and one encoder and one
 * decoder for all of them, bit for bit as ml_dtypes (the code XLA converts with). */
#include <math.h>

#include "core/element.h"
#include "kiln/dtype.h"

/* How a type spends its largest exponent and its sign. */
typedef enum special {
    SPECIAL_IEEE,     /* largest exponent: infinity (mantissa 0) and NaNs */
    SPECIAL_NAN_ONES, /* no infinity; NaN is every bit but the sign set (the f8 FN types) */
    SPECIAL_FNUZ,     /* no infinity, no -0: NaN is the sign bit alone (0x80) */
    SPECIAL_FINITE,   /* neither infinity nor NaN (the f6 and f4 types) */
    SPECIAL_E8M0,     /* unsigned powers of two, no zero; NaN is all ones */
} special;

typedef struct format {
    int exponent_bits, mantissa_bits, bias;
    special kind;
} format;

static const format formats[] = {
    [KILN_F8E4M3FN - KILN_F8E4M3FN] = {4, 3, 7, SPECIAL_NAN_ONES},
    [KILN_F8E5M2 - KILN_F8E4M3FN] = {5, 2, 15, SPECIAL_IEEE},
    [KILN_F8E4M3FNUZ - KILN_F8E4M3FN] = {4, 3, 8, SPECIAL_FNUZ},
    [KILN_F8E5M2FNUZ - KILN_F8E4M3FN] = {5, 2, 16, SPECIAL_FNUZ},
    [KILN_F8E4M3B11FNUZ - KILN_F8E4M3FN] = {4, 3, 11, SPECIAL_FNUZ},
    [KILN_F8E4M3 - KILN_F8E4M3FN] = {4, 3, 7, SPECIAL_IEEE},
    [KILN_F8E3M4 - KILN_F8E4M3FN] = {3, 4, 3, SPECIAL_IEEE},
    [KILN_F8E8M0FNU - KILN_F8E4M3FN] = {8, 0, 127, SPECIAL_E8M0},
    [KILN_F6E2M3FN - KILN_F8E4M3FN] = {2, 3, 1, SPECIAL_FINITE},
    [KILN_F6E3M2FN - KILN_F8E4M3FN] = {3, 2, 3, SPECIAL_FINITE},
    [KILN_F4E2M1FN - KILN_F8E4M3FN] = {2, 1, 1, SPECIAL_FINITE},
};
_Static_assert(sizeof formats / sizeof formats[0] == KILN_F4E2M1FN - KILN_F8E4M3FN + 1,
               "a format per small float type");

static const format *format_of(kiln_dtype dtype) {
    if (dtype < KILN_F8E4M3FN || dtype > KILN_F4E2M1FN) return NULL;
    return &formats[dtype - KILN_F8E4M3FN];
}

/* The largest exponent field that holds finite values, and the largest mantissa there. */
static int max_field(const format *f) {
    int ones = (1 << f->exponent_bits) - 1;
    return f->kind == SPECIAL_IEEE || f->kind == SPECIAL_E8M0 ? ones - 1 : ones;
}
static int max_mantissa(const format *f) {
    int ones = (1 << f->mantissa_bits) - 1;
    return f->kind == SPECIAL_NAN_ONES ? ones - 1 : ones;
}

static double largest(const format *f) {
    int m = f->mantissa_bits;
    return ldexp((double)((1 << m) + max_mantissa(f)), max_field(f) - f->bias - m);
}

static uint8_t sign_bit(const format *f, bool negative) {
    return negative ? (uint8_t)(1u << (f->exponent_bits + f->mantissa_bits)) : 0;
}

static uint8_t nan_code(const format *f, bool negative) {
    int m = f->mantissa_bits, all = (1 << (f->exponent_bits + m)) - 1;
    switch (f->kind) {
    case SPECIAL_IEEE: /* quiet: the top mantissa bit */
        return (uint8_t)(sign_bit(f, negative) | (all & ~((1 << m) - 1)) | (1 << (m - 1)));
    case SPECIAL_NAN_ONES: return (uint8_t)(sign_bit(f, negative) | all);
    case SPECIAL_FNUZ: return 0x80;
    case SPECIAL_FINITE: /* ml_dtypes: a NaN becomes a zero of the other sign */
        return sign_bit(f, !negative);
    case SPECIAL_E8M0: return 0xff;
    }
    return 0;
}

/* A value beyond the largest finite one. */
static uint8_t overflow_code(const format *f, bool negative) {
    int m = f->mantissa_bits;
    switch (f->kind) {
    case SPECIAL_IEEE: return (uint8_t)(sign_bit(f, negative) | (((1 << f->exponent_bits) - 1) << m));
    case SPECIAL_FINITE:
        return (uint8_t)(sign_bit(f, negative) | (max_field(f) << m) | max_mantissa(f));
    default: return nan_code(f, negative);
    }
}

static uint8_t encode(const format *f, double value) {
    bool negative = signbit(value) != 0;
    if (isnan(value)) return nan_code(f, negative);
    double a = fabs(value);
    if (f->kind == SPECIAL_E8M0) {
        if (negative || a == 0.0 || isinf(a)) return 0xff;
        /* The nearest power of two, a tie (1.5 * 2^e) going up: round to nearest even
         * with no mantissa bits, the even neighbour being the larger. */
        int e = ilogb(a);
        if (ldexp(a, -e) >= 1.5) e++;
        if (e > 127) return 0xff;
        return (uint8_t)(e < -127 ? 0 : e + 127);
    }
    if (isinf(a)) return overflow_code(f, negative);
    int m = f->mantissa_bits, emin = 1 - f->bias;
    if (a == 0.0) return f->kind == SPECIAL_FNUZ ? 0 : sign_bit(f, negative);
    /* The value in units of its quantum (the last place of its binade, or of the
     * subnormals), rounded to nearest even: exact in double for every input, since the
     * scaling is by a power of two and the result is below 2^(m+1). */
    int e = ilogb(a);
    int quantum = (e < emin ? emin : e) - m;
    double units = nearbyint(ldexp(a, -quantum));
    double r = ldexp(units, quantum);
    if (r > largest(f)) return overflow_code(f, negative);
    if (r == 0.0) return f->kind == SPECIAL_FNUZ ? 0 : sign_bit(f, negative);
    int er = ilogb(r);
    int field = 0, mantissa;
    if (er < emin) {
        mantissa = (int)ldexp(r, m - emin);
    } else {
        field = er + f->bias;
        mantissa = (int)ldexp(r, m - er) - (1 << m);
    }
    return (uint8_t)(sign_bit(f, negative) | (field << m) | mantissa);
}

static float decode(const format *f, uint8_t bits) {
    int m = f->mantissa_bits, width = f->exponent_bits + m;
    if (f->kind == SPECIAL_E8M0) return bits == 0xff ? NAN : (float)ldexp(1.0, (int)bits - 127);
    bits &= (uint8_t)((1u << (width + 1)) - 1);
    if (f->kind == SPECIAL_FNUZ && bits == 0x80) return -NAN; /* ml_dtypes: negative */
    bool negative = (bits >> width) & 1;
    int field = (bits >> m) & ((1 << f->exponent_bits) - 1);
    int mantissa = bits & ((1 << m) - 1);
    int ones = (1 << f->exponent_bits) - 1;
    double v;
    if (f->kind == SPECIAL_IEEE && field == ones)
        v = mantissa ? NAN : INFINITY;
    else if (f->kind == SPECIAL_NAN_ONES && field == ones && mantissa == (1 << m) - 1)
        v = NAN;
    else if (field == 0)
        v = ldexp((double)mantissa, 1 - f->bias - m);
    else
        v = ldexp((double)((1 << m) | mantissa), field - f->bias - m);
    return (float)(negative ? -v : v);
}

uint8_t kiln_small_float_encode(kiln_dtype dtype, double value) {
    const format *f = format_of(dtype);
    return f ? encode(f, value) : 0;
}

float kiln_small_float_decode(kiln_dtype dtype, uint8_t bits) {
    const format *f = format_of(dtype);
    return f ? decode(f, bits) : NAN;
}

bool kiln__small_float_params(kiln_dtype dtype, int *exponent_bits, int *mantissa_bits) {
    const format *f = format_of(dtype);
    if (!f) return false;
    *exponent_bits = f->exponent_bits;
    *mantissa_bits = f->mantissa_bits;
    return true;
}
