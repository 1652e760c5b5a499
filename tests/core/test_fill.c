/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <stdint.h>

#include "test_util.h"

Test(fill, zeros_ones_full_for_every_dtype) {
    kiln_ctx *cx = test_ctx();
    for (int d = 0; d < KILN_DTYPE_COUNT; d++) {
        kiln_tensor *z = kiln_zeros(cx, (kiln_dtype)d, KILN_SHAPE(3, 5));
        kiln_tensor *o = kiln_ones(cx, (kiln_dtype)d, KILN_SHAPE(3, 5));
        /* i2 holds -2..1; f8E8M0FNU only powers of two (3 rounds to 4) and no zero */
        double value = d == KILN_I2 ? 1.0 : 3.0;
        kiln_tensor *f = kiln_full(cx, (kiln_dtype)d, KILN_SHAPE(17), value);
        cr_assert(z && o && f, "%s: %s", kiln_dtype_name((kiln_dtype)d),
                  kiln_ctx_error_message(cx));
        for (int64_t i = 0; i < 15; i++) {
            if (d == KILN_F8E8M0FNU) /* zero bytes, as numpy's zeros: 2^-127 */
                cr_assert_eq(kiln_tensor_item(cx, z, i), ldexp(1.0, -127));
            else
                cr_assert_eq(kiln_tensor_item(cx, z, i), 0.0, "%s", kiln_dtype_name(d));
            cr_assert_eq(kiln_tensor_item(cx, o, i), 1.0);
        }
        double want = d == KILN_BOOL ? 1.0 : d == KILN_F8E8M0FNU ? 4.0 : value;
        for (int64_t i = 0; i < 17; i++)
            cr_assert_eq(kiln_tensor_item(cx, f, i), want);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(fill, full_rounds_floats_and_truncates_integers) {
    kiln_ctx *cx = test_ctx();
    cr_assert_eq(kiln_tensor_item(cx, kiln_full(cx, KILN_I32, KILN_SHAPE(1), -2.9), 0), -2.0);
    cr_assert_eq(kiln_tensor_item(cx, kiln_full(cx, KILN_F16, KILN_SHAPE(1), 0.1), 0),
                 (double)kiln_f16_to_f32(0x2e66));
    cr_assert_eq(kiln_tensor_item(cx, kiln_full(cx, KILN_BF16, KILN_SHAPE(1), 1e40), 0), INFINITY);
    cr_assert(isnan(kiln_tensor_item(cx, kiln_full(cx, KILN_F32, KILN_SHAPE(1), NAN), 0)));
    cr_assert_eq(kiln_tensor_item(cx, kiln_full(cx, KILN_U8, KILN_SHAPE(1), 255.7), 0), 255.0);
    /* double -> f16 is rounded once: 1 + 2^-11 + 2^-40 is just above the tie, so it rounds
     * up, where rounding through f32 first would have dropped 2^-40 and tied to even. */
    double v = 1.0 + ldexp(1, -11) + ldexp(1, -40);
    cr_assert_eq(kiln_tensor_item(cx, kiln_full(cx, KILN_F16, KILN_SHAPE(1), v), 0),
                 1.0 + ldexp(1, -10));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(fill, out_of_range_values_are_errors) {
    kiln_ctx *cx = test_ctx();
    cr_assert_null(kiln_full(cx, KILN_I8, KILN_SHAPE(2), 128));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_full: value 128 does not fit in i8");
    cr_assert_null(kiln_full(cx, KILN_U16, KILN_SHAPE(2), -1));
    expect_error(cx, KILN_INVALID_ARGUMENT, "does not fit in ui16");
    cr_assert_null(kiln_full(cx, KILN_I64, KILN_SHAPE(2), 9223372036854775808.0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "i64");
    cr_assert_null(kiln_full(cx, KILN_I32, KILN_SHAPE(2), NAN));
    expect_error(cx, KILN_INVALID_ARGUMENT, "nan");
    cr_assert_null(kiln_full(cx, KILN_BOOL, KILN_SHAPE(2), NAN));
    expect_error(cx, KILN_INVALID_ARGUMENT, "i1");
    cr_assert_null(kiln_scalar(cx, 1e10, KILN_I32));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_scalar");
    cr_assert_null(kiln_ones(cx, (kiln_dtype)50, KILN_SHAPE(1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_ones: dtype 50");
    cr_assert_null(kiln_zeros(cx, KILN_F32, KILN_SHAPE(-3)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_zeros: shape [-3]");
    kiln_ctx_release(cx);
}

Test(fill, full_int_is_exact_for_64_bit_values) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *t = kiln_full_int(cx, KILN_I64, KILN_SHAPE(3), INT64_MAX);
    int64_t v[3];
    kiln_tensor_to_host(cx, t, v, sizeof v);
    cr_assert_eq(v[2], INT64_MAX);
    kiln_tensor *u = kiln_full_int(cx, KILN_U64, KILN_SHAPE(1), 9007199254740993LL);
    uint64_t w;
    kiln_tensor_to_host(cx, u, &w, sizeof w);
    cr_assert_eq(w, 9007199254740993ULL);
    cr_assert_eq(kiln_tensor_item(cx, kiln_full_int(cx, KILN_F32, KILN_SHAPE(1), 16777217), 0),
                 16777216.0); /* rounded to nearest even */
    cr_assert_null(kiln_full_int(cx, KILN_U32, KILN_SHAPE(1), -5));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_full_int: value -5 does not fit in ui32");
    cr_assert_null(kiln_full_int(cx, KILN_I16, KILN_SHAPE(1), 40000));
    expect_error(cx, KILN_INVALID_ARGUMENT, "i16");
    kiln_ctx_release(cx);
}

Test(fill, scalar_is_rank_zero) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *s = kiln_scalar(cx, 2.5, KILN_F64);
    cr_assert_eq(kiln_tensor_rank(s), 0);
    cr_assert_eq(kiln_tensor_numel(s), 1);
    cr_assert_eq(kiln_tensor_item(cx, s, 0), 2.5);
    kiln_ctx_release(cx);
}

Test(fill, iota_counts_along_one_dimension) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *t = kiln_iota(cx, KILN_I32, KILN_SHAPE(2, 3, 4), 1);
    int32_t v[24];
    kiln_tensor_to_host(cx, t, v, sizeof v);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 4; c++)
                cr_assert_eq(v[a * 12 + b * 4 + c], b);
    kiln_tensor *f = kiln_iota(cx, KILN_F32, KILN_SHAPE(10, 10), 1);
    cr_assert_eq(kiln_tensor_item(cx, f, 37), 7.0);
    kiln_tensor *w = kiln_iota(cx, KILN_U8, KILN_SHAPE(300), 0); /* wraps modulo 256 */
    cr_assert_eq(kiln_tensor_item(cx, w, 299), 43.0);
    kiln_tensor *b = kiln_iota(cx, KILN_BOOL, KILN_SHAPE(3), 0);
    cr_assert_eq(kiln_tensor_item(cx, b, 0), 0.0);
    cr_assert_eq(kiln_tensor_item(cx, b, 2), 1.0);
    cr_assert_not_null(kiln_iota(cx, KILN_F32, KILN_SHAPE(0, 5), 1));
    expect_ok(cx);
    cr_assert_null(kiln_iota(cx, KILN_F32, KILN_SHAPE(3), 1));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_iota: dim is 1; expected 0 to 0 for a rank-1 shape");
    cr_assert_null(kiln_iota(cx, KILN_F32, KILN_SHAPE_SCALAR, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "rank-0");
    cr_assert_null(kiln_iota(cx, KILN_F32, KILN_SHAPE(3), -1));
    expect_error(cx, KILN_INVALID_ARGUMENT, "dim is -1");
    kiln_ctx_release(cx);
}

Test(fill, arange_matches_numpy) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *a = kiln_arange(cx, KILN_F64, 0, 1, 0.1); /* numpy: 10 elements */
    cr_assert_eq(kiln_tensor_numel(a), 10);
    cr_assert_eq(kiln_tensor_item(cx, a, 9), 9 * 0.1);     /* start + i * step, as numpy */
    kiln_tensor *b = kiln_arange(cx, KILN_I32, 10, 0, -3); /* 10, 7, 4, 1 */
    cr_assert_eq(kiln_tensor_numel(b), 4);
    cr_assert_eq(kiln_tensor_item(cx, b, 3), 1.0);
    kiln_tensor *e = kiln_arange(cx, KILN_F32, 5, 0, 1);
    cr_assert_eq(kiln_tensor_numel(e), 0);
    cr_assert_eq(kiln_tensor_rank(e), 1);
    expect_ok(cx);
    cr_assert_null(kiln_arange(cx, KILN_F32, 0, 1, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "step non-zero");
    cr_assert_null(kiln_arange(cx, KILN_F32, 0, INFINITY, 1));
    expect_error(cx, KILN_INVALID_ARGUMENT, "finite");
    cr_assert_null(kiln_arange(cx, KILN_F32, 0, 1e300, 1e-300));
    expect_error(cx, KILN_INVALID_ARGUMENT, "too many");
    cr_assert_null(kiln_arange(cx, KILN_I8, 0, 200, 1));
    expect_error(cx, KILN_INVALID_ARGUMENT, "do not fit in i8");
    kiln_ctx_release(cx);
}

Test(fill, linspace_includes_both_ends) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *t = kiln_linspace(cx, KILN_F64, -1, 1, 5);
    double v[5];
    kiln_tensor_to_host(cx, t, v, sizeof v);
    cr_assert_eq(v[0], -1.0);
    cr_assert_eq(v[1], -0.5);
    cr_assert_eq(v[2], 0.0);
    cr_assert_eq(v[4], 1.0);
    kiln_tensor *third = kiln_linspace(cx, KILN_F64, 0, 0.3, 4);
    cr_assert_eq(kiln_tensor_item(cx, third, 3), 0.3); /* exactly stop */
    kiln_tensor *one = kiln_linspace(cx, KILN_F32, 2, 9, 1);
    cr_assert_eq(kiln_tensor_item(cx, one, 0), 2.0);
    cr_assert_eq(kiln_tensor_numel(kiln_linspace(cx, KILN_F32, 0, 1, 0)), 0);
    expect_ok(cx);
    cr_assert_null(kiln_linspace(cx, KILN_F32, 0, 1, -1));
    expect_error(cx, KILN_INVALID_ARGUMENT, "num -1");
    cr_assert_null(kiln_linspace(cx, KILN_F32, NAN, 1, 3));
    expect_error(cx, KILN_INVALID_ARGUMENT, "finite");
    cr_assert_null(kiln_linspace(cx, KILN_U8, -1, 1, 3));
    expect_error(cx, KILN_INVALID_ARGUMENT, "ui8");
    kiln_ctx_release(cx);
}
