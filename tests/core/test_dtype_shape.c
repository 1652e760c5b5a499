/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <stdint.h>

#include "test_util.h"

Test(dtype, names_sizes_and_parsing_round_trip) {
    static const char *names[] = {"i1",   "i8",   "i16",          "i32",         "i64",
                                  "ui8",  "ui16", "ui32",         "ui64",        "f16",
                                  "bf16", "f32",  "f64",          "complex<f32>", "complex<f64>",
                                  "i2",   "i4",   "ui2",          "ui4",         "f8E4M3FN",
                                  "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3B11FNUZ",
                                  "f8E4M3", "f8E3M4", "f8E8M0FNU", "f6E2M3FN", "f6E3M2FN",
                                  "f4E2M1FN"};
    static const size_t sizes[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16,
                                   1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    static const uint32_t bits[] = {1, 8, 16, 32, 64, 8, 16, 32, 64, 16, 16, 32, 64, 64, 128,
                                    2, 4, 2, 4, 8, 8, 8, 8, 8, 8, 8, 8, 6, 6, 4};
    _Static_assert(sizeof sizes / sizeof sizes[0] == KILN_DTYPE_COUNT, "a size per dtype");
    _Static_assert(sizeof bits / sizeof bits[0] == KILN_DTYPE_COUNT, "a width per dtype");
    _Static_assert(sizeof names / sizeof names[0] == KILN_DTYPE_COUNT, "a name per dtype");
    for (int i = 0; i < KILN_DTYPE_COUNT; i++) {
        cr_assert_str_eq(kiln_dtype_name((kiln_dtype)i), names[i]);
        cr_assert_eq(kiln_dtype_size((kiln_dtype)i), sizes[i]);
        cr_assert_eq(kiln_dtype_bits((kiln_dtype)i), bits[i], "%s", names[i]);
        kiln_dtype d = KILN_DTYPE_COUNT;
        cr_assert(kiln_dtype_parse(names[i], &d));
        cr_assert_eq(d, (kiln_dtype)i);
    }
    kiln_dtype d = KILN_F32;
    cr_assert_not(kiln_dtype_parse("float32", &d));
    cr_assert_not(kiln_dtype_parse("i", &d));
    cr_assert_not(kiln_dtype_parse("", &d));
    cr_assert_not(kiln_dtype_parse(NULL, &d));
    cr_assert_eq(d, KILN_F32);
    cr_assert(kiln_dtype_parse_n("bf16>", 4, &d));
    cr_assert_eq(d, KILN_BF16);
    cr_assert_not(kiln_dtype_parse_n("f3", 2, &d));
    cr_assert_str_eq(kiln_dtype_name((kiln_dtype)99), "invalid");
    cr_assert_eq(kiln_dtype_size((kiln_dtype)-1), 0);
    cr_assert_not(kiln_dtype_is_valid(KILN_DTYPE_COUNT));
}

Test(dtype, classification) {
    cr_assert(kiln_dtype_is_float(KILN_BF16));
    cr_assert_not(kiln_dtype_is_float(KILN_I32));
    cr_assert(kiln_dtype_is_integer(KILN_U64));
    cr_assert_not(kiln_dtype_is_integer(KILN_BOOL));
    cr_assert_not(kiln_dtype_is_float(KILN_BOOL));
    cr_assert(kiln_dtype_is_signed(KILN_I8));
    cr_assert(kiln_dtype_is_signed(KILN_F16));
    cr_assert_not(kiln_dtype_is_signed(KILN_U8));
    cr_assert(kiln_dtype_is_complex(KILN_C64) && kiln_dtype_is_complex(KILN_C128));
    cr_assert_not(kiln_dtype_is_complex(KILN_F64));
    cr_assert_not(kiln_dtype_is_float(KILN_C64) || kiln_dtype_is_signed(KILN_C128));
    cr_assert_eq(kiln_dtype_component(KILN_C64), KILN_F32);
    cr_assert_eq(kiln_dtype_component(KILN_C128), KILN_F64);
    cr_assert_eq(kiln_dtype_component(KILN_I8), KILN_I8);
    /* the sub-byte integers and the small floats */
    cr_assert(kiln_dtype_is_integer(KILN_I4) && kiln_dtype_is_signed(KILN_I2));
    cr_assert(kiln_dtype_is_integer(KILN_U4) && !kiln_dtype_is_signed(KILN_U2));
    cr_assert(kiln_dtype_is_float(KILN_F8E4M3FN) && kiln_dtype_is_signed(KILN_F4E2M1FN));
    cr_assert(kiln_dtype_is_float(KILN_F8E8M0FNU) && !kiln_dtype_is_integer(KILN_F6E2M3FN));
    for (int i = 0; i < KILN_DTYPE_COUNT; i++)
        cr_assert_eq(kiln_dtype_is_narrow((kiln_dtype)i), i >= KILN_I2, "%d", i);
}

Test(dtype, dlpack_codes_match_dlpack) {
    cr_assert_eq(kiln_dtype_dlpack_code(KILN_F32), 2);
    cr_assert_eq(kiln_dtype_dlpack_bits(KILN_F32), 32);
    cr_assert_eq(kiln_dtype_dlpack_code(KILN_BF16), 4);
    cr_assert_eq(kiln_dtype_dlpack_code(KILN_BOOL), 6);
    cr_assert_eq(kiln_dtype_dlpack_bits(KILN_BOOL), 8);
    cr_assert_eq(kiln_dtype_dlpack_code(KILN_U16), 1);
    cr_assert_eq(kiln_dtype_dlpack_code(KILN_I64), 0);
    for (int i = 0; i < KILN_DTYPE_COUNT; i++) {
        kiln_dtype d;
        cr_assert(kiln_dtype_from_dlpack((uint8_t)kiln_dtype_dlpack_code((kiln_dtype)i),
                                         kiln_dtype_dlpack_bits((kiln_dtype)i), 1, &d));
        cr_assert_eq(d, (kiln_dtype)i);
    }
    kiln_dtype d;
    cr_assert_not(kiln_dtype_from_dlpack(2, 32, 4, &d)); /* vector lanes */
    cr_assert(kiln_dtype_from_dlpack(5, 64, 1, &d) && d == KILN_C64); /* DLPack's kDLComplex */
    cr_assert(kiln_dtype_from_dlpack(5, 128, 1, &d) && d == KILN_C128);
    cr_assert_not(kiln_dtype_from_dlpack(5, 32, 1, &d)); /* complex<f16>: not a kiln type */
    cr_assert_not(kiln_dtype_from_dlpack(0, 128, 1, &d));
    cr_assert(kiln_dtype_from_dlpack(10, 8, 1, &d) && d == KILN_F8E4M3FN); /* kDLFloat8_e4m3fn */
    cr_assert(kiln_dtype_from_dlpack(17, 4, 1, &d) && d == KILN_F4E2M1FN);
    cr_assert(kiln_dtype_from_dlpack(0, 4, 1, &d) && d == KILN_I4);
    cr_assert_eq(KILN_DEVICE_TYPE_CPU, 1);
    cr_assert_eq(KILN_DEVICE_TYPE_CUDA, 2);
    cr_assert_str_eq(kiln_device_type_name(KILN_DEVICE_TYPE_CPU), "cpu");
    cr_assert_str_eq(kiln_device_type_name((kiln_device_type)77), "unknown");
}

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

Test(half, f16_known_values) {
    cr_assert_eq(kiln_f32_to_f16(1.0f), 0x3c00);
    cr_assert_eq(kiln_f32_to_f16(-2.0f), 0xc000);
    cr_assert_eq(kiln_f32_to_f16(65504.0f), 0x7bff);
    cr_assert_eq(kiln_f32_to_f16(65519.99f), 0x7bff); /* rounds down to the max */
    cr_assert_eq(kiln_f32_to_f16(65520.0f), 0x7c00);  /* the tie rounds to even: inf */
    cr_assert_eq(kiln_f32_to_f16(INFINITY), 0x7c00);
    cr_assert_eq(kiln_f32_to_f16(-INFINITY), 0xfc00);
    cr_assert_eq(kiln_f32_to_f16(-0.0f), 0x8000);
    cr_assert_eq(kiln_f32_to_f16(ldexpf(1, -24)), 0x0001); /* smallest subnormal */
    cr_assert_eq(kiln_f32_to_f16(ldexpf(1, -25)), 0x0000); /* tie to even: zero */
    cr_assert_eq(kiln_f32_to_f16(ldexpf(3, -26)), 0x0001);
    cr_assert_eq(kiln_f32_to_f16(ldexpf(3, -25)), 0x0002); /* 1.5 ulp: tie to even 2 */
    cr_assert_eq(kiln_f32_to_f16(ldexpf(1, -14)), 0x0400); /* smallest normal */
    cr_assert_eq(kiln_f32_to_f16(ldexpf(1023, -24) + ldexpf(1, -25)), 0x0400); /* carry */
    cr_assert_eq(kiln_f32_to_f16(1.0f + ldexpf(1, -11)), 0x3c00);              /* tie to even */
    cr_assert_eq(kiln_f32_to_f16(1.0f + ldexpf(3, -11)), 0x3c02);
    uint16_t nan = kiln_f32_to_f16(NAN);
    cr_assert_eq(nan & 0x7c00, 0x7c00);
    cr_assert_neq(nan & 0x3ff, 0);
    cr_assert(isnan(kiln_f16_to_f32(0x7e00)));
    cr_assert_eq(kiln_f16_to_f32(0x0001), ldexpf(1, -24));
    cr_assert_eq(bits_of(kiln_f16_to_f32(0x8000)), 0x80000000u);
}

Test(half, every_f16_and_bf16_round_trips_through_f32) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = kiln_f16_to_f32((uint16_t)h);
        if (isnan(f)) {
            cr_assert(isnan(kiln_f16_to_f32(kiln_f32_to_f16(f))));
            continue;
        }
        cr_assert_eq(kiln_f32_to_f16(f), h, "f16 %04x", h);
        float b = kiln_bf16_to_f32((uint16_t)h);
        if (!isnan(b)) cr_assert_eq(kiln_f32_to_bf16(b), h, "bf16 %04x", h);
    }
}

Test(half, f16_rounding_matches_a_double_reference_on_a_sweep) {
    /* Reference: pick the nearer of the two neighbouring f16 values, ties to even. */
    for (uint32_t h = 0; h < 0x7bff; h += 7) {
        double lo = kiln_f16_to_f32((uint16_t)h), hi = kiln_f16_to_f32((uint16_t)(h + 1));
        for (int k = 1; k < 8; k++) {
            float x = (float)(lo + (hi - lo) * k / 8.0);
            uint16_t want = k < 4   ? (uint16_t)h
                            : k > 4 ? (uint16_t)(h + 1)
                                    : (uint16_t)((h & 1) ? h + 1 : h);
            cr_assert_eq(kiln_f32_to_f16(x), want, "h=%04x k=%d", h, k);
        }
    }
}

Test(half, bf16_known_values) {
    cr_assert_eq(kiln_f32_to_bf16(1.0f), 0x3f80);
    cr_assert_eq(kiln_f32_to_bf16(-0.0f), 0x8000);
    /* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even is 1. */
    cr_assert_eq(kiln_f32_to_bf16(1.0f + ldexpf(1, -8)), 0x3f80);
    cr_assert_eq(kiln_f32_to_bf16(1.0f + ldexpf(3, -8)), 0x3f82);
    cr_assert_eq(kiln_f32_to_bf16(3.4028235e38f), 0x7f80); /* max f32 rounds to inf */
    uint16_t nan = kiln_f32_to_bf16(NAN);
    cr_assert(isnan(kiln_bf16_to_f32(nan)));
    /* A signalling NaN whose payload is only in the low bits must stay a NaN. */
    float snan;
    uint32_t sbits = 0x7f800001u;
    memcpy(&snan, &sbits, 4);
    cr_assert(isnan(kiln_bf16_to_f32(kiln_f32_to_bf16(snan))));
    cr_assert_eq(kiln_bf16_to_f32(0x3f80), 1.0f);
}

Test(shape, make_and_validate) {
    kiln_shape s = KILN_SHAPE(2, 3, 4);
    cr_assert_eq(s.rank, 3);
    cr_assert_eq(s.dims[2], 4);
    kiln_shape t;
    int64_t dims[16];
    for (int i = 0; i < 16; i++)
        dims[i] = 1;
    cr_assert(kiln_shape_make(16, dims, &t));
    cr_assert_eq(t.rank, 16);
    cr_assert_not(kiln_shape_make(17, dims, &t));
    cr_assert_not(kiln_shape_make(-1, dims, &t));
    cr_assert_not(kiln_shape_make(2, NULL, &t));
    cr_assert(kiln_shape_make(0, NULL, &t));
    cr_assert_eq(t.rank, 0);
    dims[1] = -1;
    cr_assert_not(kiln_shape_make(2, dims, &t));
    cr_assert_not(kiln_shape_is_valid(&(kiln_shape){.rank = 17}));
    cr_assert_not(kiln_shape_is_valid(NULL));
    cr_assert(kiln_shape_is_valid(&KILN_SHAPE_SCALAR));
}

Test(shape, counts_with_overflow_checks) {
    int64_t n;
    size_t b;
    cr_assert(kiln_shape_numel(&KILN_SHAPE_SCALAR, &n));
    cr_assert_eq(n, 1);
    cr_assert(kiln_shape_numel(&KILN_SHAPE(3, 0, 5), &n));
    cr_assert_eq(n, 0);
    cr_assert(kiln_shape_nbytes(&KILN_SHAPE(3, 5), KILN_F64, &b));
    cr_assert_eq(b, 120);
    kiln_shape huge = KILN_SHAPE(INT64_MAX / 2, 3);
    cr_assert_not(kiln_shape_numel(&huge, &n));
    kiln_shape big = KILN_SHAPE(INT64_MAX / 4);
    cr_assert(kiln_shape_numel(&big, &n));
    cr_assert_not(kiln_shape_nbytes(&big, KILN_F64, &b)); /* bytes overflow */
    cr_assert_not(kiln_shape_nbytes(&KILN_SHAPE(2), (kiln_dtype)40, &b));
    /* A zero anywhere makes the count 0; the other dimensions' product must still fit, so
     * that strides and byte offsets do. */
    cr_assert(kiln_shape_numel(&KILN_SHAPE(INT64_MAX / 4, 0, 3), &n));
    cr_assert_eq(n, 0);
    cr_assert(kiln_shape_nbytes(&KILN_SHAPE(INT64_MAX / 4, 0, 3), KILN_I8, &b));
    cr_assert_eq(b, 0);
    cr_assert_not(kiln_shape_numel(&KILN_SHAPE(INT64_MAX, INT64_MAX, 0), &n));
    cr_assert_not(kiln_shape_numel(&KILN_SHAPE(0, INT64_C(1) << 62, 3), &n));
    cr_assert_not(kiln_shape_nbytes(&KILN_SHAPE(0, INT64_C(1) << 62), KILN_F32, &b));
}

Test(shape, equality_and_format) {
    kiln_shape a = KILN_SHAPE(2, 3), b = KILN_SHAPE(2, 3), c = KILN_SHAPE(3, 2);
    a.dims[5] = 99; /* unused tail is ignored */
    cr_assert(kiln_shape_equal(&a, &b));
    cr_assert_not(kiln_shape_equal(&a, &c));
    cr_assert_not(kiln_shape_equal(&a, &KILN_SHAPE(2, 3, 1)));
    char buf[64];
    cr_assert_eq(kiln_shape_format(&a, buf, sizeof buf), 5);
    cr_assert_str_eq(buf, "[2,3]");
    kiln_shape_format(&KILN_SHAPE_SCALAR, buf, sizeof buf);
    cr_assert_str_eq(buf, "[]");
    char tiny[4];
    cr_assert_eq(kiln_shape_format(&KILN_SHAPE(100, 200), tiny, sizeof tiny), 9);
    cr_assert_str_eq(tiny, "[10");
}
