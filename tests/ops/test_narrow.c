/* SPDX-License-Identifier: Apache-2.0 */
/* The narrow types (sub-byte integers and small floats): arithmetic computed wide and
 * narrowed once (ops/widen.h), the ops that read a sub-byte integer's bits, conversions
 * (saturating from floats, wrapping between integers), bitcasts between equal widths,
 * products, and the same bits eager and compiled. */
#include <math.h>
#include <string.h>

#include "test_util.h"

static kiln_tensor *bytes(kiln_ctx *cx, kiln_dtype dt, const uint8_t *b, int64_t n) {
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, KILN_SHAPE(n), b, (size_t)n);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

static void expect_bytes(kiln_ctx *cx, kiln_tensor *t, const uint8_t *want, int64_t n,
                         const char *what) {
    cr_assert_not_null(t, "%s: %s", what, kiln_ctx_error_message(cx));
    const uint8_t *got = kiln_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s: byte %lld is 0x%02x, expected 0x%02x", what,
                     (long long)i, got[i], want[i]);
}

Test(narrow, sub_byte_integers_wrap_and_keep_their_bits) {
    kiln_ctx *cx = test_ctx();
    /* i4 in its low bits: 7, -8 (0x8), -1 (0xf), 1 */
    const uint8_t a[4] = {0x7, 0x8, 0xf, 0x1}, one[4] = {1, 1, 1, 1};
    kiln_tensor *x = bytes(cx, KILN_I4, a, 4), *o = bytes(cx, KILN_I4, one, 4);
    const uint8_t sum[4] = {0x8, 0x9, 0x0, 0x2}; /* 7+1 wraps to -8 */
    expect_bytes(cx, kiln_add(cx, x, o), sum, 4, "i4 add");
    const uint8_t neg[4] = {0x9, 0x8, 0x1, 0xf}; /* -(-8) wraps to -8 */
    expect_bytes(cx, kiln_negate(cx, x), neg, 4, "i4 negate");
    const uint8_t pop[4] = {3, 1, 4, 1}, clz[4] = {1, 0, 0, 3};
    expect_bytes(cx, kiln_popcnt(cx, x), pop, 4, "i4 popcnt");
    expect_bytes(cx, kiln_count_leading_zeros(cx, x), clz, 4, "i4 clz");
    const uint8_t srl[4] = {0x3, 0x4, 0x7, 0x0}; /* logical: -1 >> 1 is 7 */
    expect_bytes(cx, kiln_shift_right_logical(cx, x, o), srl, 4, "i4 srl");
    const uint8_t sra[4] = {0x3, 0xc, 0xf, 0x0}; /* arithmetic: -8 >> 1 is -4 */
    expect_bytes(cx, kiln_shift_right_arithmetic(cx, x, o), sra, 4, "i4 sra");
    /* ui4: the arithmetic shift takes bit 3 as the sign (XLA's 9 >> 1 is 12) */
    const uint8_t u4[3] = {9, 15, 7}, u4s[3] = {1, 1, 1}, u4r[3] = {12, 15, 3};
    expect_bytes(cx, kiln_shift_right_arithmetic(cx, bytes(cx, KILN_U4, u4, 3),
                                                 bytes(cx, KILN_U4, u4s, 3)),
                 u4r, 3, "ui4 sra");
    /* ui2: 3 + 1 wraps to 0 */
    const uint8_t u[2] = {3, 2}, u1[2] = {1, 1}, usum[2] = {0, 3};
    expect_bytes(cx, kiln_add(cx, bytes(cx, KILN_U2, u, 2), bytes(cx, KILN_U2, u1, 2)), usum, 2,
                 "ui2 add");
    /* bitcast between equal widths keeps the bits; convert keeps the value */
    const uint8_t same[4] = {0x7, 0x8, 0xf, 0x1};
    expect_bytes(cx, kiln_bitcast_convert(cx, x, KILN_U4), same, 4, "i4 -> ui4 bitcast");
    kiln_tensor *wide = kiln_convert(cx, x, KILN_I32);
    const int32_t *w = kiln_tensor_data(wide);
    cr_assert(w[0] == 7 && w[1] == -8 && w[2] == -1 && w[3] == 1);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(narrow, floats_convert_to_sub_byte_integers_saturating) {
    kiln_ctx *cx = test_ctx();
    const float f[5] = {10.0f, -20.0f, NAN, -2.7f, 3.9f};
    kiln_tensor *x = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(5), f, sizeof f);
    const uint8_t want[5] = {0x7, 0x8, 0x0, 0xe, 0x3}; /* 7, -8, 0, -2, 3 */
    expect_bytes(cx, kiln_convert(cx, x, KILN_I4), want, 5, "f32 -> i4");
    const int32_t i[3] = {20, -9, 255};
    kiln_tensor *xi = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(3), i, sizeof i);
    const uint8_t wrapped[3] = {0x4, 0x7, 0xf}; /* integers wrap, as ml_dtypes' int4 */
    expect_bytes(cx, kiln_convert(cx, xi, KILN_I4), wrapped, 3, "i32 -> i4");
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* A small float op rounds once: f8E4M3FN 1 + 1/16 is 1 (a tie to even), + 3/16 is 1.25. */
Test(narrow, small_floats_compute_in_f32_and_round_once) {
    kiln_ctx *cx = test_ctx();
    const kiln_dtype t = KILN_F8E4M3FN;
    const uint8_t a[3] = {kiln_small_float_encode(t, 1.0), kiln_small_float_encode(t, 1.0),
                          kiln_small_float_encode(t, 448.0)};
    const uint8_t b[3] = {kiln_small_float_encode(t, 0.0625), kiln_small_float_encode(t, 0.1875),
                          kiln_small_float_encode(t, 32.0)};
    kiln_tensor *r = kiln_add(cx, bytes(cx, t, a, 3), bytes(cx, t, b, 3));
    cr_assert_not_null(r, "%s", kiln_ctx_error_message(cx));
    const uint8_t *g = kiln_tensor_data(r);
    cr_assert_eq(kiln_small_float_decode(t, g[0]), 1.0f);
    cr_assert_eq(kiln_small_float_decode(t, g[1]), 1.25f);
    cr_assert(isnan(kiln_small_float_decode(t, g[2])), "448 + 32 overflows to NaN (no inf)");
    /* compare reads the values */
    kiln_tensor *lt = kiln_compare(cx, bytes(cx, t, a, 3), bytes(cx, t, b, 3), KILN_CMP_LT,
                                   KILN_CMP_DEFAULT);
    const uint8_t lt_want[3] = {0, 0, 0};
    expect_bytes(cx, lt, lt_want, 3, "f8 compare");
    /* a product of f8 matrices, accumulated in f32 and rounded once */
    uint8_t m[4];
    for (int i = 0; i < 4; i++)
        m[i] = kiln_small_float_encode(t, i + 1);
    kiln_tensor *mm = kiln_tensor_from_host(cx, t, KILN_SHAPE(2, 2), m, 4);
    kiln_dot_params dp = {.lhs_contracting_dims = KILN_DIMS(1),
                          .rhs_contracting_dims = KILN_DIMS(0)};
    kiln_tensor *p = kiln_dot_general(cx, mm, mm, &dp, KILN_F32);
    cr_assert_not_null(p, "%s", kiln_ctx_error_message(cx));
    const float *pf = kiln_tensor_data(p);
    cr_assert(pf[0] == 7 && pf[1] == 10 && pf[2] == 15 && pf[3] == 22);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

static kiln_status mixed(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *a = kiln_multiply(cx, in[0], in[1]);
    a = kiln_add(cx, kiln_exponential(cx, a), in[1]);
    out[0] = kiln_maximum(cx, a, kiln_tanh(cx, in[0]));
    kiln_tensor *i = kiln_convert(cx, in[0], KILN_I4);
    out[1] = kiln_xor(cx, kiln_multiply(cx, i, i), kiln_popcnt(cx, i));
    return kiln_ctx_status(cx);
}

/* The widening pass and eager mode follow one rule: the same bits, every small float. */
Test(narrow, compiled_equals_eager_bit_for_bit) {
    kiln_ctx *cx = test_ctx();
    for (int d = KILN_F8E4M3FN; d <= KILN_F4E2M1FN; d++) {
        kiln_dtype t = (kiln_dtype)d;
        uint8_t a[16], b[16];
        for (int i = 0; i < 16; i++) {
            a[i] = kiln_small_float_encode(t, (i - 6) * 0.375);
            b[i] = kiln_small_float_encode(t, 0.5 + i * 0.25);
        }
        kiln_tensor *in[2] = {bytes(cx, t, a, 16), bytes(cx, t, b, 16)};
        kiln_tensor *eager[2];
        cr_assert_eq(mixed(cx, in, eager, NULL), KILN_OK, "%s: %s", kiln_dtype_name(t),
                     kiln_ctx_error_message(cx));
        kiln_arg_spec spec[2] = {{.dtype = t, .shape = KILN_SHAPE(16)},
                                 {.dtype = t, .shape = KILN_SHAPE(16)}};
        test_expect_compiled_equals_eager(cx, (kiln_region){mixed, NULL}, spec, in, 2, eager, 2,
                                          kiln_dtype_name(t));
        kiln_tensor_release(eager[0]);
        kiln_tensor_release(eager[1]);
        kiln_tensor_release(in[0]);
        kiln_tensor_release(in[1]);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(narrow, text_reads_and_prints_every_narrow_type) {
    kiln_ctx *cx = test_ctx();
    const char *text = "func.func @main(%a: tensor<3xf8E4M3FN>, %b: tensor<2xi4>) -> "
                       "(tensor<3xf8E4M3FN>, tensor<2xi4>) {\n"
                       "  %c = stablehlo.constant dense<[1.5, 448.0, 0x7F]> : tensor<3xf8E4M3FN>\n"
                       "  %d = stablehlo.constant dense<[-8, 7]> : tensor<2xi4>\n"
                       "  %0 = stablehlo.add %a, %c : tensor<3xf8E4M3FN>\n"
                       "  %1 = stablehlo.add %b, %d : tensor<2xi4>\n"
                       "  return %0, %1 : tensor<3xf8E4M3FN>, tensor<2xi4>\n"
                       "}\n";
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *printed = kiln_module_to_string(cx, m);
    cr_assert_not_null(printed, "%s", kiln_ctx_error_message(cx));
    cr_assert(strstr(printed, "dense<[1.500000e+00, 4.480000e+02, 0x7F]> : tensor<3xf8E4M3FN>"),
              "%s", printed);
    cr_assert(strstr(printed, "dense<[-8, 7]> : tensor<2xi4>"), "%s", printed);
    kiln_string_free(cx, printed);
    kiln_module_release(m);
    const char *wide = "func.func @main() -> tensor<i4> {\n"
                       "  %c = stablehlo.constant dense<8> : tensor<i4>\n"
                       "  return %c : tensor<i4>\n}\n";
    cr_assert_neq(kiln_module_parse(cx, wide, strlen(wide), NULL, &m), KILN_OK);
    expect_error(cx, KILN_INVALID_ARGUMENT, "integer literal 8 out of range for i4");
    kiln_ctx_release(cx);
}
