/* SPDX-License-Identifier: Apache-2.0 */
#include "kiln/dtype.h"

#include <math.h>
#include <string.h>

#include "core/element.h"
#include "core/half.h"
#include "kiln/device.h"

typedef struct dtype_info {
    const char *name;
    size_t size;
    kiln_dlpack_code code;
    uint8_t bits;
} dtype_info;

#define SMALL(name, code, bits) {name, 1, KILN_DLPACK_##code, bits}

static const dtype_info infos[KILN_DTYPE_COUNT] = {
    [KILN_BOOL] = {"i1", 1, KILN_DLPACK_BOOL, 8},
    [KILN_I8] = {"i8", 1, KILN_DLPACK_INT, 8},
    [KILN_I16] = {"i16", 2, KILN_DLPACK_INT, 16},
    [KILN_I32] = {"i32", 4, KILN_DLPACK_INT, 32},
    [KILN_I64] = {"i64", 8, KILN_DLPACK_INT, 64},
    [KILN_U8] = {"ui8", 1, KILN_DLPACK_UINT, 8},
    [KILN_U16] = {"ui16", 2, KILN_DLPACK_UINT, 16},
    [KILN_U32] = {"ui32", 4, KILN_DLPACK_UINT, 32},
    [KILN_U64] = {"ui64", 8, KILN_DLPACK_UINT, 64},
    [KILN_F16] = {"f16", 2, KILN_DLPACK_FLOAT, 16},
    [KILN_BF16] = {"bf16", 2, KILN_DLPACK_BFLOAT, 16},
    [KILN_F32] = {"f32", 4, KILN_DLPACK_FLOAT, 32},
    [KILN_F64] = {"f64", 8, KILN_DLPACK_FLOAT, 64},
    [KILN_C64] = {"complex<f32>", 8, KILN_DLPACK_COMPLEX, 64},
    [KILN_C128] = {"complex<f64>", 16, KILN_DLPACK_COMPLEX, 128},
    [KILN_I2] = {"i2", 1, KILN_DLPACK_INT, 2},
    [KILN_I4] = {"i4", 1, KILN_DLPACK_INT, 4},
    [KILN_U2] = {"ui2", 1, KILN_DLPACK_UINT, 2},
    [KILN_U4] = {"ui4", 1, KILN_DLPACK_UINT, 4},
    [KILN_F8E4M3FN] = SMALL("f8E4M3FN", FLOAT8_E4M3FN, 8),
    [KILN_F8E5M2] = SMALL("f8E5M2", FLOAT8_E5M2, 8),
    [KILN_F8E4M3FNUZ] = SMALL("f8E4M3FNUZ", FLOAT8_E4M3FNUZ, 8),
    [KILN_F8E5M2FNUZ] = SMALL("f8E5M2FNUZ", FLOAT8_E5M2FNUZ, 8),
    [KILN_F8E4M3B11FNUZ] = SMALL("f8E4M3B11FNUZ", FLOAT8_E4M3B11FNUZ, 8),
    [KILN_F8E4M3] = SMALL("f8E4M3", FLOAT8_E4M3, 8),
    [KILN_F8E3M4] = SMALL("f8E3M4", FLOAT8_E3M4, 8),
    [KILN_F8E8M0FNU] = SMALL("f8E8M0FNU", FLOAT8_E8M0FNU, 8),
    [KILN_F6E2M3FN] = SMALL("f6E2M3FN", FLOAT6_E2M3FN, 6),
    [KILN_F6E3M2FN] = SMALL("f6E3M2FN", FLOAT6_E3M2FN, 6),
    [KILN_F4E2M1FN] = SMALL("f4E2M1FN", FLOAT4_E2M1FN, 4),
};

bool kiln_dtype_is_valid(kiln_dtype dtype) {
    return (int)dtype >= 0 && (int)dtype < KILN_DTYPE_COUNT;
}

size_t kiln_dtype_size(kiln_dtype dtype) {
    return kiln_dtype_is_valid(dtype) ? infos[dtype].size : 0;
}

uint32_t kiln_dtype_bits(kiln_dtype dtype) {
    if (dtype == KILN_BOOL) return 1;
    return kiln_dtype_is_valid(dtype) ? infos[dtype].bits : 0;
}

const char *kiln_dtype_name(kiln_dtype dtype) {
    return kiln_dtype_is_valid(dtype) ? infos[dtype].name : "invalid";
}

bool kiln_dtype_parse_n(const char *text, size_t length, kiln_dtype *out_dtype) {
    if (!text || !out_dtype) return false;
    for (int i = 0; i < KILN_DTYPE_COUNT; i++) {
        if (strlen(infos[i].name) == length && memcmp(infos[i].name, text, length) == 0) {
            *out_dtype = (kiln_dtype)i;
            return true;
        }
    }
    return false;
}

bool kiln_dtype_parse(const char *text, kiln_dtype *out_dtype) {
    if (!text) return false;
    return kiln_dtype_parse_n(text, strlen(text), out_dtype);
}

bool kiln_dtype_is_float(kiln_dtype dtype) {
    return (dtype >= KILN_F16 && dtype <= KILN_F64) ||
           (dtype >= KILN_F8E4M3FN && dtype <= KILN_F4E2M1FN);
}

bool kiln_dtype_is_integer(kiln_dtype dtype) {
    return (dtype >= KILN_I8 && dtype <= KILN_U64) || (dtype >= KILN_I2 && dtype <= KILN_U4);
}

bool kiln_dtype_is_signed(kiln_dtype dtype) {
    return (dtype >= KILN_I8 && dtype <= KILN_I64) || dtype == KILN_I2 || dtype == KILN_I4 ||
           kiln_dtype_is_float(dtype);
}

bool kiln_dtype_is_narrow(kiln_dtype dtype) {
    return dtype >= KILN_I2 && dtype <= KILN_F4E2M1FN;
}

bool kiln_dtype_is_complex(kiln_dtype dtype) { return dtype == KILN_C64 || dtype == KILN_C128; }

kiln_dtype kiln_dtype_component(kiln_dtype dtype) {
    return dtype == KILN_C64 ? KILN_F32 : dtype == KILN_C128 ? KILN_F64 : dtype;
}

kiln_dlpack_code kiln_dtype_dlpack_code(kiln_dtype dtype) {
    return kiln_dtype_is_valid(dtype) ? infos[dtype].code : KILN_DLPACK_INT;
}

uint8_t kiln_dtype_dlpack_bits(kiln_dtype dtype) {
    return kiln_dtype_is_valid(dtype) ? infos[dtype].bits : 0;
}

bool kiln_dtype_from_dlpack(uint8_t code, uint8_t bits, uint16_t lanes, kiln_dtype *out_dtype) {
    if (!out_dtype || lanes != 1) return false;
    for (int i = 0; i < KILN_DTYPE_COUNT; i++) {
        if ((uint8_t)infos[i].code == code && infos[i].bits == bits) {
            *out_dtype = (kiln_dtype)i;
            return true;
        }
    }
    return false;
}

const char *kiln_device_type_name(kiln_device_type type) {
    switch (type) {
    case KILN_DEVICE_TYPE_CPU: return "cpu";
    case KILN_DEVICE_TYPE_CUDA: return "cuda";
    case KILN_DEVICE_TYPE_CUDA_HOST: return "cuda_host";
    case KILN_DEVICE_TYPE_EXT: return "ext";
    }
    return "unknown";
}

/* ---- 16-bit floats ------------------------------------------------------------------ */

static uint32_t f32_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float bits_f32(uint32_t x) {
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* Rounds mantissa bits dropped by a right shift to nearest, ties to even. */
static uint32_t shift_round_even(uint32_t value, int shift) {
    uint32_t kept = value >> shift;
    uint32_t rest = value & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1))) kept++;
    return kept;
}

uint16_t kiln_f32_to_f16(float value) {
    uint32_t x = f32_bits(value);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff) /* inf, or NaN kept quiet with the top payload bits */
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        /* Below 2^-25 even the smallest subnormal is more than twice away: zero. */
        if (e < -10) return (uint16_t)sign;
        /* A carry out of the subnormal range lands exactly on the smallest normal. */
        return (uint16_t)(sign | shift_round_even(mant | 0x800000u, 14 - e));
    }
    /* A carry out of the mantissa bumps the exponent, up to infinity: both correct. */
    return (uint16_t)(sign | shift_round_even(((uint32_t)e << 23) | mant, 13));
}

float kiln_f16_to_f32(uint16_t bits) { return kiln__f16_to_f32_inline(bits); }

uint16_t kiln_f32_to_bf16(float value) {
    uint32_t x = f32_bits(value);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float kiln_bf16_to_f32(uint16_t bits) { return kiln__bf16_to_f32_inline(bits); }

/* double -> f32 rounded to odd, then to the 16-bit format to nearest even: the result is
 * the correctly rounded one, since f32 keeps at least two more bits than either format. */
static float f64_to_f32_round_odd(double value) {
    float f = (float)value;
    if (isnan(value) || (double)f == value) return f;
    if (fabs((double)f) > fabs(value)) f = nextafterf(f, 0.0f);
    return bits_f32(f32_bits(f) | 1u);
}

uint16_t kiln__f64_to_f16(double value) { return kiln_f32_to_f16(f64_to_f32_round_odd(value)); }
uint16_t kiln__f64_to_bf16(double value) { return kiln_f32_to_bf16(f64_to_f32_round_odd(value)); }
