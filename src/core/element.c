/* SPDX-License-Identifier: Apache-2.0 */
#include "core/element.h"

#include <math.h>
#include <string.h>

#include "kiln/dtype.h"

#define LOAD(T, data, i) (((const T *)(data))[i])
#define STORE(T, data, i, v) (((T *)(data))[i] = (T)(v))

double kiln__element_load(const void *data, kiln_dtype dtype, int64_t i) {
    switch (dtype) {
    case KILN_BOOL: return LOAD(uint8_t, data, i) ? 1.0 : 0.0;
    case KILN_I8: return LOAD(int8_t, data, i);
    case KILN_I16: return LOAD(int16_t, data, i);
    case KILN_I32: return LOAD(int32_t, data, i);
    case KILN_I64: return (double)LOAD(int64_t, data, i);
    case KILN_U8: return LOAD(uint8_t, data, i);
    case KILN_U16: return LOAD(uint16_t, data, i);
    case KILN_U32: return LOAD(uint32_t, data, i);
    case KILN_U64: return (double)LOAD(uint64_t, data, i);
    case KILN_F16: return kiln_f16_to_f32(LOAD(uint16_t, data, i));
    case KILN_BF16: return kiln_bf16_to_f32(LOAD(uint16_t, data, i));
    case KILN_F32: return LOAD(float, data, i);
    case KILN_F64: return LOAD(double, data, i);
    case KILN_C64: return LOAD(float, data, 2 * i);
    case KILN_C128: return LOAD(double, data, 2 * i);
    case KILN_I2:
    case KILN_I4:
    case KILN_U2:
    case KILN_U4: return (double)kiln__narrow_value(dtype, LOAD(uint8_t, data, i));
    default: return kiln_small_float_decode(dtype, LOAD(uint8_t, data, i));
    }
}

void kiln__element_load_complex(const void *data, kiln_dtype dtype, int64_t i, double *re,
                                double *im) {
    switch (dtype) {
    case KILN_C64: *re = LOAD(float, data, 2 * i), *im = LOAD(float, data, 2 * i + 1); return;
    case KILN_C128: *re = LOAD(double, data, 2 * i), *im = LOAD(double, data, 2 * i + 1); return;
    default: *re = kiln__element_load(data, dtype, i), *im = 0.0; return;
    }
}

void kiln__element_store_complex(void *data, kiln_dtype dtype, int64_t i, double re, double im) {
    switch (dtype) {
    case KILN_C64: STORE(float, data, 2 * i, re), STORE(float, data, 2 * i + 1, im); return;
    case KILN_C128: STORE(double, data, 2 * i, re), STORE(double, data, 2 * i + 1, im); return;
    default: kiln__element_store(data, dtype, i, re); return;
    }
}

static const double int_min[KILN_DTYPE_COUNT] = {[KILN_I2] = -2.0,
                                                 [KILN_I4] = -8.0,
                                                 [KILN_I8] = -128.0,
                                                 [KILN_I16] = -32768.0,
                                                 [KILN_I32] = -2147483648.0,
                                                 [KILN_I64] = -9223372036854775808.0};
/* Exclusive upper bounds: 2^(bits-1) or 2^bits, exactly representable as doubles. */
static const double int_end[KILN_DTYPE_COUNT] = {
    [KILN_I8] = 128.0,         [KILN_I16] = 32768.0,
    [KILN_I32] = 2147483648.0, [KILN_I64] = 9223372036854775808.0,
    [KILN_U8] = 256.0,         [KILN_U16] = 65536.0,
    [KILN_U32] = 4294967296.0, [KILN_U64] = 18446744073709551616.0,
    [KILN_I2] = 2.0,           [KILN_I4] = 8.0,
    [KILN_U2] = 4.0,           [KILN_U4] = 16.0};

bool kiln__element_fits(kiln_dtype dtype, double value) {
    if (kiln_dtype_is_float(dtype) || kiln_dtype_is_complex(dtype)) return true;
    if (isnan(value)) return false;
    if (dtype == KILN_BOOL) return true;
    double t = trunc(value);
    return t >= int_min[dtype] && t < int_end[dtype];
}

bool kiln__element_fits_int(kiln_dtype dtype, int64_t value) {
    switch (dtype) {
    case KILN_I8: return value >= INT8_MIN && value <= INT8_MAX;
    case KILN_I16: return value >= INT16_MIN && value <= INT16_MAX;
    case KILN_I32: return value >= INT32_MIN && value <= INT32_MAX;
    case KILN_U8: return value >= 0 && value <= UINT8_MAX;
    case KILN_U16: return value >= 0 && value <= UINT16_MAX;
    case KILN_U32: return value >= 0 && value <= UINT32_MAX;
    case KILN_U64: return value >= 0;
    case KILN_I2: return value >= -2 && value <= 1;
    case KILN_I4: return value >= -8 && value <= 7;
    case KILN_U2: return value >= 0 && value <= 3;
    case KILN_U4: return value >= 0 && value <= 15;
    default: return true;
    }
}

void kiln__element_store(void *data, kiln_dtype dtype, int64_t i, double value) {
    if (kiln_dtype_is_integer(dtype)) {
        /* Saturate so that the conversion below is always defined. */
        double t = isnan(value) ? 0.0 : trunc(value);
        if (t < int_min[dtype]) t = int_min[dtype];
        if (t >= int_end[dtype]) {
            /* The largest value, as an integer (int_end - 1 is not exact for 64 bits). */
            switch (dtype) {
            case KILN_I64: STORE(int64_t, data, i, INT64_MAX); return;
            case KILN_U64: STORE(uint64_t, data, i, UINT64_MAX); return;
            default: t = int_end[dtype] - 1.0;
            }
        }
        switch (dtype) {
        case KILN_I8: STORE(int8_t, data, i, t); return;
        case KILN_I16: STORE(int16_t, data, i, t); return;
        case KILN_I32: STORE(int32_t, data, i, t); return;
        case KILN_I64: STORE(int64_t, data, i, t); return;
        case KILN_U8: STORE(uint8_t, data, i, t); return;
        case KILN_U16: STORE(uint16_t, data, i, t); return;
        case KILN_U32: STORE(uint32_t, data, i, t); return;
        case KILN_U64: STORE(uint64_t, data, i, t); return;
        case KILN_I2:
        case KILN_I4:
        case KILN_U2:
        case KILN_U4: STORE(uint8_t, data, i, kiln__wrap_narrow(dtype, (int64_t)t)); return;
        default: return;
        }
    }
    switch (dtype) {
    case KILN_BOOL: STORE(uint8_t, data, i, value != 0.0 && !isnan(value)); return;
    case KILN_F16: STORE(uint16_t, data, i, kiln__f64_to_f16(value)); return;
    case KILN_BF16: STORE(uint16_t, data, i, kiln__f64_to_bf16(value)); return;
    case KILN_F32: STORE(float, data, i, value); return;
    case KILN_F64: STORE(double, data, i, value); return;
    case KILN_C64:
    case KILN_C128: kiln__element_store_complex(data, dtype, i, value, 0.0); return;
    default: STORE(uint8_t, data, i, kiln_small_float_encode(dtype, value)); return;
    }
}

void kiln__element_store_int(void *data, kiln_dtype dtype, int64_t i, int64_t value) {
    uint64_t u = (uint64_t)value; /* wrapping conversions are defined on unsigned */
    switch (dtype) {
    case KILN_BOOL: STORE(uint8_t, data, i, value != 0); return;
    case KILN_I8:
    case KILN_U8: STORE(uint8_t, data, i, (uint8_t)u); return;
    case KILN_I16:
    case KILN_U16: STORE(uint16_t, data, i, (uint16_t)u); return;
    case KILN_I32:
    case KILN_U32: STORE(uint32_t, data, i, (uint32_t)u); return;
    case KILN_I64:
    case KILN_U64: STORE(uint64_t, data, i, u); return;
    case KILN_F16: STORE(uint16_t, data, i, kiln__f64_to_f16((double)value)); return;
    case KILN_BF16: STORE(uint16_t, data, i, kiln__f64_to_bf16((double)value)); return;
    case KILN_F32: STORE(float, data, i, (float)value); return; /* one rounding */
    case KILN_F64: STORE(double, data, i, (double)value); return;
    case KILN_C64:
        STORE(float, data, 2 * i, (float)value), STORE(float, data, 2 * i + 1, 0.0f);
        return;
    case KILN_C128:
        STORE(double, data, 2 * i, (double)value), STORE(double, data, 2 * i + 1, 0.0);
        return;
    case KILN_I2:
    case KILN_I4:
    case KILN_U2:
    case KILN_U4: STORE(uint8_t, data, i, kiln__wrap_narrow(dtype, value)); return;
    default: STORE(uint8_t, data, i, kiln_small_float_encode(dtype, (double)value)); return;
    }
}
