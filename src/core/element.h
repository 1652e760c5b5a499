/* SPDX-License-Identifier: Apache-2.0 */
/* Reading and writing single elements of any dtype as double or int64_t. Used where
 * speed does not matter (fills, printing, file conversion); kernels have their own. */
#ifndef KILN_CORE_ELEMENT_H
#define KILN_CORE_ELEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln/dtype.h"

/* Correctly rounded double -> 16-bit float conversions (nearest even). */
uint16_t kiln__f64_to_f16(double value);
uint16_t kiln__f64_to_bf16(double value);

/* The stored byte of a sub-byte integer (KILN_I2 ... KILN_U4) holding `value` wrapped to
 * the type's width: its low bits, the others zero (ml_dtypes' int4: -1 is 0x0f). */
static inline uint8_t kiln__wrap_narrow(kiln_dtype dtype, int64_t value) {
    unsigned bits = dtype == KILN_I2 || dtype == KILN_U2 ? 2u : 4u;
    return (uint8_t)((uint64_t)value & ((1u << bits) - 1u));
}

/* The value of a stored sub-byte integer (the bits above its width ignored). */
static inline int64_t kiln__narrow_value(kiln_dtype dtype, uint8_t stored) {
    unsigned bits = dtype == KILN_I2 || dtype == KILN_U2 ? 2u : 4u;
    int64_t low = stored & ((1u << bits) - 1u);
    bool negative = (dtype == KILN_I2 || dtype == KILN_I4) && (low >> (bits - 1u));
    return negative ? low - (1 << bits) : low;
}

/* The exponent and mantissa widths of a small float type; false for any other dtype. */
bool kiln__small_float_params(kiln_dtype dtype, int *exponent_bits, int *mantissa_bits);

/* Element i of `data` as double (a complex element's real part). */
double kiln__element_load(const void *data, kiln_dtype dtype, int64_t i);

/* A complex element's parts as doubles (the imaginary part 0 for a real dtype), and the
 * store of both (a real dtype takes the real part, as kiln__element_store). */
void kiln__element_load_complex(const void *data, kiln_dtype dtype, int64_t i, double *re,
                                double *im);
void kiln__element_store_complex(void *data, kiln_dtype dtype, int64_t i, double re, double im);

/* Stores `value` into element i: floats round to nearest even (complex: the real part,
 * imaginary 0); integers and bool take the value converted as kiln__element_fits accepts
 * it (trunc toward zero, non-zero is true). Callers check kiln__element_fits first:
 * out-of-range integers saturate. */
void kiln__element_store(void *data, kiln_dtype dtype, int64_t i, double value);

/* Stores an integer exactly for integer dtypes (wrapping modulo 2^bits), bool as != 0,
 * and rounded for floats. */
void kiln__element_store_int(void *data, kiln_dtype dtype, int64_t i, int64_t value);

/* True when `value` can be stored in the dtype: any value for floats and complex; for
 * integers, not NaN and trunc(value) within range; for bool, not NaN. */
bool kiln__element_fits(kiln_dtype dtype, double value);

/* True when the integer is within the dtype's range (always true for floats and bool). */
bool kiln__element_fits_int(kiln_dtype dtype, int64_t value);

#endif
