/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/dtype.h: element types.
 *
 * The element types of StableHLO that kiln supports, with their DLPack codes so tensors
 * cross to other frameworks unchanged. f16 and bf16 are storage types: kiln computes in
 * f32 and rounds to nearest even once per op. complex<f32> and complex<f64> hold each
 * element as its real part then its imaginary part (C's float _Complex, numpy's complex64,
 * DLPack's and PJRT's layout); which ops run on them is said where each op is declared.
 *
 *     kiln_dtype t;
 *     if (kiln_dtype_parse("bf16", &t)) printf("%s: %zu bytes\n", kiln_dtype_name(t),
 *                                               kiln_dtype_size(t));
 */
#ifndef KILN_DTYPE_H
#define KILN_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_dtype {
    KILN_BOOL = 0, /* i1: one byte per element, 0 or 1 */
    KILN_I8,
    KILN_I16,
    KILN_I32,
    KILN_I64,
    KILN_U8,
    KILN_U16,
    KILN_U32,
    KILN_U64,
    KILN_F16,
    KILN_BF16,
    KILN_F32,
    KILN_F64,
    KILN_C64,  /* complex<f32>: 8 bytes, {re, im} */
    KILN_C128, /* complex<f64>: 16 bytes, {re, im} */
    /* Integers narrower than a byte: one element per byte, the value's bits (two's
     * complement for i2 and i4) in its low bits and the others zero, as in ml_dtypes'
     * numpy arrays (int4 -1 is the byte 0x0f). Arithmetic wraps to the type's width. */
    KILN_I2,
    KILN_I4,
    KILN_U2,
    KILN_U4,
    /* The small floats of StableHLO (ml_dtypes' float8_*, float6_*, float4_*): one element
     * per byte, the encoding in its low bits. Ops compute in f32 and round to nearest even
     * once per op (kiln_small_float_encode says how each type treats overflow and NaN). */
    KILN_F8E4M3FN,       /* no infinity; NaN S.1111.111; max 448 */
    KILN_F8E5M2,         /* IEEE-like: infinities and NaNs; max 57344 */
    KILN_F8E4M3FNUZ,     /* no infinity, no -0; NaN is 0x80; bias 8; max 240 */
    KILN_F8E5M2FNUZ,     /* no infinity, no -0; NaN is 0x80; bias 16; max 57344 */
    KILN_F8E4M3B11FNUZ,  /* no infinity, no -0; NaN is 0x80; bias 11; max 30 */
    KILN_F8E4M3,         /* IEEE-like, bias 7; max 240 */
    KILN_F8E3M4,         /* IEEE-like, bias 3; max 15.5 */
    KILN_F8E8M0FNU,      /* powers of two 2^-127..2^127, no sign, no zero; NaN is 0xff */
    KILN_F6E2M3FN,       /* finite only (6 bits); max 7.5 */
    KILN_F6E3M2FN,       /* finite only (6 bits); max 28 */
    KILN_F4E2M1FN,       /* finite only (4 bits); max 6 */
    KILN_DTYPE_COUNT
} kiln_dtype;

/* DLPack's DLDataTypeCode values. */
typedef enum kiln_dlpack_code {
    KILN_DLPACK_INT = 0,
    KILN_DLPACK_UINT = 1,
    KILN_DLPACK_FLOAT = 2,
    KILN_DLPACK_BFLOAT = 4,
    KILN_DLPACK_COMPLEX = 5,
    KILN_DLPACK_BOOL = 6,
    KILN_DLPACK_FLOAT8_E3M4 = 7,
    KILN_DLPACK_FLOAT8_E4M3 = 8,
    KILN_DLPACK_FLOAT8_E4M3B11FNUZ = 9,
    KILN_DLPACK_FLOAT8_E4M3FN = 10,
    KILN_DLPACK_FLOAT8_E4M3FNUZ = 11,
    KILN_DLPACK_FLOAT8_E5M2 = 12,
    KILN_DLPACK_FLOAT8_E5M2FNUZ = 13,
    KILN_DLPACK_FLOAT8_E8M0FNU = 14,
    KILN_DLPACK_FLOAT6_E2M3FN = 15,
    KILN_DLPACK_FLOAT6_E3M2FN = 16,
    KILN_DLPACK_FLOAT4_E2M1FN = 17,
} kiln_dlpack_code;

/* True for the values of kiln_dtype below KILN_DTYPE_COUNT. */
KILN_API bool kiln_dtype_is_valid(kiln_dtype dtype);

/* Bytes per element (bool is one byte; so is every type narrower than a byte); 0 for an
 * invalid dtype. */
KILN_API size_t kiln_dtype_size(kiln_dtype dtype);

/* The bits of the type's values (1 for bool, 4 for i4 and f4E2M1FN, 6 for the f6 types, 64
 * for complex<f32>); 0 for an invalid dtype. bitcast_convert counts these. */
KILN_API uint32_t kiln_dtype_bits(kiln_dtype dtype);

/* The StableHLO spelling: "i1", "i2", "i4", "i8" ... "i64", "ui2", "ui4", "ui8" ... "ui64",
 * "f4E2M1FN" ... "f8E8M0FNU", "f16", "bf16", "f32", "f64", "complex<f32>", "complex<f64>";
 * "invalid" for an invalid dtype. Static string. */
KILN_API const char *kiln_dtype_name(kiln_dtype dtype);

/* Parses a StableHLO spelling (as kiln_dtype_name prints it). Returns false for anything
 * else, leaving *out_dtype alone. */
KILN_API bool kiln_dtype_parse(const char *text, kiln_dtype *out_dtype);

/* Like kiln_dtype_parse for the first `length` bytes of `text` (need not be terminated). */
KILN_API bool kiln_dtype_parse_n(const char *text, size_t length, kiln_dtype *out_dtype);

/* Classification. Bool is neither integer nor float; complex is neither float nor signed.
 * The sub-byte integers are integers, the small floats floats; kiln_dtype_is_narrow is
 * true for both (the types ops widen to compute: i8/ui8 and f32). */
KILN_API bool kiln_dtype_is_float(kiln_dtype dtype);
KILN_API bool kiln_dtype_is_integer(kiln_dtype dtype);
KILN_API bool kiln_dtype_is_signed(kiln_dtype dtype); /* signed ints and floats */
KILN_API bool kiln_dtype_is_complex(kiln_dtype dtype);
KILN_API bool kiln_dtype_is_narrow(kiln_dtype dtype);

/* The type of a complex dtype's parts (f32 for complex<f32>, f64 for complex<f64>); any
 * other dtype is its own. */
KILN_API kiln_dtype kiln_dtype_component(kiln_dtype dtype);

/* DLPack: the DLDataType {code, bits, lanes = 1} of a dtype, and back (complex: code 5 with
 * the whole element's bits, 64 or 128; the sub-byte types with their own width, 2, 4 or 6,
 * although kiln's memory holds them one per byte). The conversion back returns false for
 * types kiln does not have (other widths, lanes != 1). */
KILN_API kiln_dlpack_code kiln_dtype_dlpack_code(kiln_dtype dtype);
KILN_API uint8_t kiln_dtype_dlpack_bits(kiln_dtype dtype);
KILN_API bool kiln_dtype_from_dlpack(uint8_t code, uint8_t bits, uint16_t lanes,
                                     kiln_dtype *out_dtype);

/* Conversions between the 16-bit float formats and f32, rounding to nearest even and
 * keeping NaN, infinities, signed zeros and subnormals. Thread-safe. */
KILN_API float kiln_f16_to_f32(uint16_t bits);
KILN_API uint16_t kiln_f32_to_f16(float value);
KILN_API float kiln_bf16_to_f32(uint16_t bits);
KILN_API uint16_t kiln_f32_to_bf16(float value);

/* The small float types (KILN_F8E4M3FN ... KILN_F4E2M1FN), bit for bit as ml_dtypes and
 * XLA convert them. Encoding rounds to nearest even; a value beyond the largest finite
 * one becomes infinity where the type has one, else NaN where it has one (the f8 FN and
 * FNUZ types), else the largest finite value (the f6 and f4 types, which also take NaN
 * to -0). The FNUZ types have no -0 (it becomes +0); f8E8M0FNU takes zero, negative
 * values and NaN to its NaN. Decoding is exact (every value is an f32). For any other
 * dtype encode returns 0 and decode NaN. Thread-safe. */
KILN_API uint8_t kiln_small_float_encode(kiln_dtype dtype, double value);
KILN_API float kiln_small_float_decode(kiln_dtype dtype, uint8_t bits);

#ifdef __cplusplus
}
#endif

#endif
