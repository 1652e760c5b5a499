/* SPDX-License-Identifier: Apache-2.0 */
/* reduce_precision: against the formats it narrows to (e8m7 is bf16's rounding, e5m10
 * f16's with subnormals flushed), on a small float's own bits, through text and both
 * modes, its gradient, and its errors. */
#include <math.h>
#include <string.h>

#include "test_util.h"

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A spread of f32 values: every exponent, random mantissas and signs, no NaN. */
static void spread(float *x, int n) {
    uint32_t s = 12345u;
    for (int i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        uint32_t e = (uint32_t)i % 255u, m = s >> 9;
        x[i] = float_of((s & 1u) << 31 | e << 23 | m);
    }
}

/* x rounded through `dt` (kiln_convert there and back). */
static kiln_tensor *through(kiln_ctx *cx, kiln_tensor *x, kiln_dtype dt) {
    return kiln_convert(cx, kiln_convert(cx, x, dt), KILN_F32);
}

Test(reduce_precision, matches_bf16_and_f16_rounding) {
    kiln_ctx *cx = test_ctx();
    enum { N = 4096 };
    static float x[N];
    spread(x, N);
    kiln_tensor *t = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(N), x, sizeof x);
    kiln_tensor *r87 = kiln_reduce_precision(cx, t, 8, 7), *bf = through(cx, t, KILN_BF16);
    kiln_tensor *r510 = kiln_reduce_precision(cx, t, 5, 10), *h = through(cx, t, KILN_F16);
    expect_ok(cx);
    const float *a = kiln_tensor_data(r87), *b = kiln_tensor_data(bf);
    const float *c = kiln_tensor_data(r510), *d = kiln_tensor_data(h);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(bits_of(a[i]), bits_of(b[i]), "e8m7 of %a: %a, bf16 gives %a", x[i], a[i],
                     b[i]);
        /* f16 keeps subnormals; reduce_precision flushes them to a signed zero */
        float want = fabsf(d[i]) < 0x1p-14f ? copysignf(0.0f, x[i]) : d[i];
        cr_assert_eq(bits_of(c[i]), bits_of(want), "e5m10 of %a: %a, expected %a", x[i], c[i],
                     want);
    }
    kiln_ctx_release(cx);
}

Test(reduce_precision, nan_stays_unless_no_mantissa_bit_is_kept) {
    kiln_ctx *cx = test_ctx();
    const uint32_t in[3] = {0x7fc00001u, 0xffa00000u, 0x477ff000u}; /* 65520: to inf */
    float x[3];
    for (int i = 0; i < 3; i++)
        x[i] = float_of(in[i]);
    kiln_tensor *t = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(3), x, sizeof x);
    const float *k = kiln_tensor_data(kiln_reduce_precision(cx, t, 5, 10));
    const float *z = kiln_tensor_data(kiln_reduce_precision(cx, t, 5, 0));
    expect_ok(cx);
    cr_assert_eq(bits_of(k[0]), in[0], "the payload is kept");
    cr_assert_eq(bits_of(k[1]), in[1]);
    cr_assert_eq(bits_of(k[2]), 0x7f800000u, "65520 overflows e5m10: %a", k[2]);
    cr_assert_eq(bits_of(z[0]), 0x7f800000u, "NaN with no mantissa bit is +inf: %a", z[0]);
    cr_assert_eq(bits_of(z[1]), 0x7f800000u);
    /* widths at least the type's own change nothing */
    const float *same = kiln_tensor_data(kiln_reduce_precision(cx, t, 11, 60));
    for (int i = 0; i < 3; i++)
        cr_assert_eq(bits_of(same[i]), in[i]);
    kiln_ctx_release(cx);
}

/* On f8E4M3FN's own bits: e2m1 keeps the exponents of [1, 4) and one mantissa bit. */
Test(reduce_precision, rounds_a_small_float_in_its_own_format) {
    kiln_ctx *cx = test_ctx();
    const kiln_dtype t = KILN_F8E4M3FN;
    const double in[5] = {1.125, -1.75, 3.0, 0.5, 0.001953125 /* the smallest subnormal */};
    const double e2m1[5] = {1.0, -2.0, 3.0, 0.0, 0.0};
    uint8_t b[5];
    for (int i = 0; i < 5; i++)
        b[i] = kiln_small_float_encode(t, in[i]);
    kiln_tensor *x = kiln_tensor_from_host(cx, t, KILN_SHAPE(5), b, sizeof b);
    const uint8_t *r = kiln_tensor_data(kiln_reduce_precision(cx, x, 2, 1));
    const uint8_t *same = kiln_tensor_data(kiln_reduce_precision(cx, x, 4, 3));
    expect_ok(cx);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(kiln_small_float_decode(t, r[i]), (float)e2m1[i], "e2m1 of %g: %g", in[i],
                     (double)kiln_small_float_decode(t, r[i]));
        /* its own widths: unchanged, the subnormal too (it is not widened to f32 first) */
        cr_assert_eq(same[i], b[i], "e4m3 of %g changed", in[i]);
    }
    kiln_ctx_release(cx);
}

static kiln_status program(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *y = kiln_multiply(cx, in[0], in[0]);
    out[0] = kiln_add(cx, kiln_reduce_precision(cx, y, 5, 10), in[0]);
    out[1] = kiln_reduce_precision(cx, kiln_convert(cx, in[0], KILN_BF16), 4, 2);
    return kiln_ctx_status(cx);
}

Test(reduce_precision, compiled_equals_eager) {
    kiln_ctx *cx = test_ctx();
    enum { N = 1024 };
    static float x[N];
    spread(x, N);
    kiln_tensor *in = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(N), x, sizeof x);
    kiln_tensor *eager[2];
    cr_assert_eq(program(cx, &in, eager, NULL), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_arg_spec spec = {.dtype = KILN_F32, .shape = KILN_SHAPE(N)};
    test_expect_compiled_equals_eager(cx, (kiln_region){program, NULL}, &spec, &in, 1, eager, 2,
                                      "reduce_precision");
    kiln_tensor_release(eager[0]);
    kiln_tensor_release(eager[1]);
    kiln_tensor_release(in);
    kiln_ctx_release(cx);
}

static kiln_status scaled_sum(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *c = kiln_full(cx, KILN_F32, KILN_SHAPE(4), 1.0001);
    out[0] = kiln_sum(cx, kiln_multiply(cx, kiln_reduce_precision(cx, in[0], 5, 10), c),
                      KILN_DIMS_NONE, false);
    return kiln_ctx_status(cx);
}

/* The cotangent is rounded as the value was (JAX's rule): 1.0001 reaches x as 1. */
Test(reduce_precision, gradient_rounds_the_cotangent) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), (float[]){1, 2, 3, 4},
                                           4 * sizeof(float));
    kiln_tensor *g = NULL;
    kiln_region f = {scaled_sum, NULL};
    cr_assert_eq(kiln_grad(cx, &f, 1, &x, NULL, &g), KILN_OK, "%s", kiln_ctx_error_message(cx));
    const float *d = kiln_tensor_data(g);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(d[i], 1.0f, "gradient %d is %a", i, d[i]);
    kiln_ctx_release(cx);
}

Test(reduce_precision, errors_name_the_attribute_and_the_operand) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *f = kiln_full(cx, KILN_F32, KILN_SHAPE(2), 1.0);
    kiln_tensor *i = kiln_full_int(cx, KILN_I32, KILN_SHAPE(2), 1);
    cr_assert_null(kiln_reduce_precision(cx, f, 0, 10));
    expect_error(cx, KILN_INVALID_ARGUMENT, "exponent_bits is 0");
    cr_assert_null(kiln_reduce_precision(cx, f, 5, -1));
    expect_error(cx, KILN_INVALID_ARGUMENT, "mantissa_bits is -1");
    cr_assert_null(kiln_reduce_precision(cx, i, 5, 10));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reduce_precision");
    const char *bad = "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
                      "  %0 = stablehlo.reduce_precision %x, format = e5x10 : tensor<2xf32>\n"
                      "  return %0 : tensor<2xf32>\n"
                      "}\n";
    kiln_module *m = NULL;
    cr_assert_neq(kiln_module_parse(cx, bad, strlen(bad), NULL, &m), KILN_OK);
    expect_error(cx, KILN_INVALID_ARGUMENT, "e<exponent bits>m<mantissa bits>");
    kiln_ctx_release(cx);
}

/* Both text forms read; the pretty one is printed and reads back. */
Test(reduce_precision, text_round_trips) {
    kiln_ctx *cx = test_ctx();
    const char *text = "func.func @main(%x: tensor<2xf64>) -> tensor<2xf64> {\n"
                       "  %0 = stablehlo.reduce_precision %x, format = e5m10 : tensor<2xf64>\n"
                       "  %1 = \"stablehlo.reduce_precision\"(%0) {exponent_bits = 3 : i32, "
                       "mantissa_bits = 0 : i32} : (tensor<2xf64>) -> tensor<2xf64>\n"
                       "  return %1 : tensor<2xf64>\n"
                       "}\n";
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *printed = kiln_module_to_string(cx, m);
    cr_assert_not_null(printed);
    cr_assert(strstr(printed, "format = e5m10 : tensor<2xf64>") &&
                  strstr(printed, "format = e3m0 : tensor<2xf64>"),
              "%s", printed);
    kiln_module *again = NULL;
    cr_assert_eq(kiln_module_parse(cx, printed, strlen(printed), NULL, &again), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *twice = kiln_module_to_string(cx, again);
    cr_assert_str_eq(twice, printed);
    kiln_string_free(cx, printed);
    kiln_string_free(cx, twice);
    kiln_module_release(m);
    kiln_module_release(again);
    kiln_ctx_release(cx);
}
