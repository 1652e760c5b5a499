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
} kiln_dlpack_code;

/* True for the values of kiln_dtype below KILN_DTYPE_COUNT. */
KILN_API bool kiln_dtype_is_valid(kiln_dtype dtype);

/* Bytes per element (bool is one byte); 0 for an invalid dtype. */
KILN_API size_t kiln_dtype_size(kiln_dtype dtype);

/* The StableHLO spelling: "i1", "i8" ... "i64", "ui8" ... "ui64", "f16", "bf16", "f32",
 * "f64", "complex<f32>", "complex<f64>"; "invalid" for an invalid dtype. Static string. */
KILN_API const char *kiln_dtype_name(kiln_dtype dtype);

/* Parses a StableHLO spelling (as kiln_dtype_name prints it). Returns false for anything
 * else, leaving *out_dtype alone. */
KILN_API bool kiln_dtype_parse(const char *text, kiln_dtype *out_dtype);

/* Like kiln_dtype_parse for the first `length` bytes of `text` (need not be terminated). */
KILN_API bool kiln_dtype_parse_n(const char *text, size_t length, kiln_dtype *out_dtype);

/* Classification. Bool is neither integer nor float; complex is neither float nor signed. */
KILN_API bool kiln_dtype_is_float(kiln_dtype dtype);
KILN_API bool kiln_dtype_is_integer(kiln_dtype dtype);
KILN_API bool kiln_dtype_is_signed(kiln_dtype dtype); /* signed ints and floats */
KILN_API bool kiln_dtype_is_complex(kiln_dtype dtype);

/* The type of a complex dtype's parts (f32 for complex<f32>, f64 for complex<f64>); any
 * other dtype is its own. */
KILN_API kiln_dtype kiln_dtype_component(kiln_dtype dtype);

/* DLPack: the DLDataType {code, bits, lanes = 1} of a dtype, and back (complex: code 5 with
 * the whole element's bits, 64 or 128). The conversion back returns false for types kiln
 * does not have (other widths, lanes != 1). */
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

#ifdef __cplusplus
}
#endif

#endif
