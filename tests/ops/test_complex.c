/* SPDX-License-Identifier: Apache-2.0 */
/* complex<f32> and complex<f64>: the dtypes, their elements, the arithmetic and data
 * movement against a reference in double _Complex, parts, reductions and conversions (the
 * functions and products: test_complex_math.c). */
#include <string.h>

#include "complex_values.h"

Test(complex_types, dtypes_elements_and_fills) {
    kiln_ctx *cx = test_ctx();
    unsigned char buf[32] = {0};
    kiln__element_store_complex(buf, KILN_C64, 1, 1.5, -2.25);
    float parts[2];
    memcpy(parts, buf + 8, sizeof parts);
    cr_assert(parts[0] == 1.5f && parts[1] == -2.25f, "{re, im} in that order");
    cr_assert_eq(kiln__element_load(buf, KILN_C64, 1), 1.5, "a real read takes the real part");
    cr_assert(kiln__element_fits(KILN_C128, 1e300) && kiln__element_fits(KILN_C64, NAN));
    for (int k = 0; k < 2; k++) {
        kiln_dtype dt = complex_types[k];
        kiln_tensor *t = kiln_full(cx, dt, KILN_SHAPE(3), 4.0);
        cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
        cr_assert_eq(kiln_tensor_nbytes(t), 3 * kiln_dtype_size(dt));
        for (int64_t i = 0; i < 3; i++)
            cr_assert(element(t, i) == CMPLX(4.0, 0.0), "full fills (4, 0)");
        kiln_tensor *z = kiln_iota(cx, dt, KILN_SHAPE(4), 0);
        cr_assert_not_null(z, "%s", kiln_ctx_error_message(cx));
        for (int64_t i = 0; i < 4; i++)
            cr_assert(element(z, i) == CMPLX((double)i, 0.0), "iota is (i, 0)");
        kiln_tensor_release(t);
        kiln_tensor_release(z);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(complex_types, arithmetic_matches_the_reference) {
    kiln_ctx *cx = test_ctx();
    enum { N = 7 };
    const double are[N] = {1, -2.5, 0, 3e30, -0.0, 1e-3, 7};
    const double aim[N] = {2, 0.5, -1, -2e30, 0.0, 4, -7};
    const double bre[N] = {-3, 4, 0.25, 1e-30, 2, -1e3, 0};
    const double bim[N] = {0.5, -1, 8, 5, -0.0, 2, 1};
    for (int k = 0; k < 2; k++) {
        kiln_dtype dt = complex_types[k];
        kiln_tensor *a = complex_tensor(cx, dt, KILN_SHAPE(N), are, aim, N);
        kiln_tensor *b = complex_tensor(cx, dt, KILN_SHAPE(N), bre, bim, N);
        kiln_tensor *sum = kiln_add(cx, a, b), *diff = kiln_subtract(cx, a, b);
        kiln_tensor *prod = kiln_multiply(cx, a, b), *neg = kiln_negate(cx, a);
        kiln_tensor *quot = kiln_divide(cx, a, b);
        cr_assert_not_null(sum && diff && prod && neg && quot, "%s", kiln_ctx_error_message(cx));
        cr_assert_eq(kiln_tensor_dtype(prod), dt);
        for (int64_t i = 0; i < N; i++) {
            double complex x = rounded(dt, CMPLX(are[i], aim[i]));
            double complex y = rounded(dt, CMPLX(bre[i], bim[i]));
            cr_assert(element(sum, i) == rounded(dt, x + y), "%s add %lld", kiln_dtype_name(dt),
                      (long long)i);
            cr_assert(element(diff, i) == rounded(dt, x - y));
            /* (ac - bd) + (ad + bc)i, each part rounded once in the dtype's parts. */
            double complex want;
            if (dt == KILN_C64) {
                float xr = (float)creal(x), xi = (float)cimag(x), yr = (float)creal(y),
                      yi = (float)cimag(y);
                float pr = xr * yr - xi * yi, pi = xr * yi + xi * yr;
                want = CMPLX(pr, pi);
            } else {
                want = CMPLX(creal(x) * creal(y) - cimag(x) * cimag(y),
                             creal(x) * cimag(y) + cimag(x) * creal(y));
            }
            cr_assert(element(prod, i) == want, "%s multiply %lld", kiln_dtype_name(dt),
                      (long long)i);
            /* C's quotient (Annex G), complex<f32> computed in double and rounded once */
            cr_assert(element(quot, i) == rounded(dt, x / y), "%s divide %lld",
                      kiln_dtype_name(dt), (long long)i);
            double complex n = element(neg, i);
            cr_assert(creal(n) == -creal(x) && cimag(n) == -cimag(x));
            cr_assert_eq(signbit(creal(n)), !signbit(creal(x)), "negate flips the sign of -0");
        }
        kiln_tensor *all[] = {a, b, sum, diff, prod, neg, quot};
        for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
            kiln_tensor_release(all[t]);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(complex_types, data_movement_keeps_every_bit) {
    kiln_ctx *cx = test_ctx();
    double re[6], im[6];
    for (int i = 0; i < 6; i++)
        re[i] = i + 0.25, im[i] = -i - 0.5;
    for (int k = 0; k < 2; k++) {
        kiln_dtype dt = complex_types[k];
        kiln_tensor *x = complex_tensor(cx, dt, KILN_SHAPE(2, 3), re, im, 6);
        kiln_tensor *t = kiln_transpose(cx, x, KILN_DIMS(1, 0));
        kiln_tensor *c = kiln_concatenate(cx, (kiln_tensor *[]){x, x}, 2, 0);
        kiln_tensor *r = kiln_reverse(cx, x, KILN_DIMS(1));
        cr_assert_not_null(t && c && r, "%s", kiln_ctx_error_message(cx));
        for (int64_t i = 0; i < 2; i++)
            for (int64_t j = 0; j < 3; j++) {
                cr_assert(element(t, j * 2 + i) == element(x, i * 3 + j), "transpose");
                cr_assert(element(r, i * 3 + (2 - j)) == element(x, i * 3 + j), "reverse");
            }
        for (int64_t i = 0; i < 6; i++)
            cr_assert(element(c, 6 + i) == element(x, i), "concatenate");
        kiln_tensor_release(x);
        kiln_tensor_release(t);
        kiln_tensor_release(c);
        kiln_tensor_release(r);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* real, imag and complex take values apart and put them together, bit for bit (-0, NaN
 * payloads); of a real value, real is the value and imag is +0. */
Test(complex_types, parts_and_complex) {
    kiln_ctx *cx = test_ctx();
    const double re[4] = {1.5, -0.0, INFINITY, 3}, im[4] = {-2, 0.5, NAN, -0.0};
    for (int k = 0; k < 2; k++) {
        kiln_dtype dt = complex_types[k], part = kiln_dtype_component(dt);
        kiln_tensor *z = complex_tensor(cx, dt, KILN_SHAPE(2, 2), re, im, 4);
        kiln_tensor *r = kiln_real(cx, z), *i = kiln_imag(cx, z);
        cr_assert_not_null(r && i, "%s", kiln_ctx_error_message(cx));
        cr_assert_eq(kiln_tensor_dtype(r), part);
        kiln_tensor *back = kiln_complex(cx, r, i);
        cr_assert_not_null(back, "%s", kiln_ctx_error_message(cx));
        cr_assert_eq(kiln_tensor_dtype(back), dt);
        cr_assert(memcmp(kiln_tensor_data(back), kiln_tensor_data(z), kiln_tensor_nbytes(z)) == 0,
                  "%s: complex(real(z), imag(z)) is z bit for bit", kiln_dtype_name(dt));
        cr_assert(signbit(kiln_tensor_item(cx, r, 1)), "the real part -0 stays -0");
        kiln_tensor *i_of_r = kiln_imag(cx, r);
        cr_assert_not_null(i_of_r, "%s", kiln_ctx_error_message(cx));
        for (int64_t j = 0; j < 4; j++) {
            double v = kiln_tensor_item(cx, i_of_r, j);
            cr_assert(v == 0 && !signbit(v), "imag of a real value is +0");
        }
        kiln_tensor *all[] = {z, r, i, back, i_of_r};
        for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
            kiln_tensor_release(all[t]);
    }
    kiln_tensor *f = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2)), *g = kiln_zeros(cx, KILN_F64,
                                                                            KILN_SHAPE(2));
    cr_assert_null(kiln_complex(cx, f, g));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_complex: operand 2 has type f64[2]");
    kiln_tensor *h = kiln_zeros(cx, KILN_I32, KILN_SHAPE(2));
    cr_assert_null(kiln_complex(cx, h, h));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_complex: operand 1 has dtype i32; expected f32 or f64");
    cr_assert_null(kiln_real(cx, h));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_real: operand 1 has dtype i32");
    kiln_tensor_release(f);
    kiln_tensor_release(g);
    kiln_tensor_release(h);
    kiln_ctx_release(cx);
}

static kiln_status split_and_join(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *u) {
    (void)u;
    out[0] = kiln_complex(cx, kiln_imag(cx, in[0]), kiln_real(cx, in[0]));
    return kiln_ctx_status(cx);
}

/* The three ops traced, printed as StableHLO prints them, read back and compiled. */
Test(complex_types, parts_print_read_back_and_compile) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec spec = {.dtype = KILN_C64, .shape = KILN_SHAPE(3)};
    kiln_region fn = {split_and_join, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &spec, 1, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text, "%s", kiln_ctx_error_message(cx));
    cr_assert(strstr(text, "stablehlo.real %arg0 : (tensor<3xcomplex<f32>>) -> tensor<3xf32>"),
              "%s", text);
    cr_assert(strstr(text, ": tensor<3xcomplex<f32>>\n") && strstr(text, "stablehlo.complex "),
              "%s", text);
    kiln_module *again = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &again), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *text2 = kiln_module_to_string(cx, again);
    cr_assert_str_eq(text2, text);
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, again, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    const double re[3] = {1, -2, 3.5}, im[3] = {4, 0.25, -6};
    kiln_tensor *z = complex_tensor(cx, KILN_C64, KILN_SHAPE(3), re, im, 3), *w = NULL;
    cr_assert_eq(kiln_exe_call_n(cx, exe, &z, 1, &w, 1), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    for (int64_t i = 0; i < 3; i++)
        cr_assert(element(w, i) == CMPLX(im[i], re[i]), "swapped parts");
    kiln_tensor_release(z);
    kiln_tensor_release(w);
    kiln_exe_release(exe);
    kiln_string_free(cx, text);
    kiln_string_free(cx, text2);
    kiln_module_release(m);
    kiln_module_release(again);
    kiln_ctx_release(cx);
}

static kiln_status complex_sums(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                void *u) {
    (void)u;
    out[0] = kiln_sum(cx, in[0], KILN_DIMS(1), false);
    kiln_tensor *one = kiln_ones(cx, kiln_tensor_dtype(in[0]), KILN_SHAPE_SCALAR);
    kiln_status s = kiln_reduce(cx, &in[0], &one, 1, KILN_DIMS(0, 1), kiln_region_multiply(),
                                &out[1]);
    return s != KILN_OK ? s : kiln_ctx_status(cx);
}

/* Sums and products of complex values, eager and compiled, in the reduction's order. */
Test(complex_types, reductions_eager_and_compiled) {
    kiln_ctx *cx = test_ctx();
    const double re[6] = {1, -2, 0.5, 3, 4, -1}, im[6] = {0.5, 1, -1, 2, 0, 0.25};
    for (int k = 0; k < 2; k++) {
        kiln_dtype dt = complex_types[k];
        kiln_tensor *x = complex_tensor(cx, dt, KILN_SHAPE(2, 3), re, im, 6);
        kiln_tensor *eager[2];
        cr_assert_eq(complex_sums(cx, &x, eager, NULL), KILN_OK, "%s", kiln_ctx_error_message(cx));
        double complex prod = 1;
        for (int64_t i = 0; i < 2; i++) {
            double complex row = 0;
            for (int64_t j = 0; j < 3; j++) {
                row = rounded(dt, row + rounded(dt, CMPLX(re[i * 3 + j], im[i * 3 + j])));
                prod = rounded(dt, prod * CMPLX(re[i * 3 + j], im[i * 3 + j]));
            }
            cr_assert(element(eager[0], i) == row, "%s row %lld", kiln_dtype_name(dt),
                      (long long)i);
        }
        double complex got = element(eager[1], 0);
        cr_assert(cabs(got - prod) <= 1e-6 * cabs(prod), "%s product", kiln_dtype_name(dt));
        kiln_arg_spec spec = {.dtype = dt, .shape = KILN_SHAPE(2, 3)};
        kiln_region fn = {complex_sums, NULL};
        kiln_module *m = NULL;
        cr_assert_eq(kiln_lower(cx, &fn, &spec, 1, 2, NULL, &m), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        kiln_exe *exe = NULL;
        cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
        kiln_tensor *compiled[2];
        cr_assert_eq(kiln_exe_call_n(cx, exe, &x, 1, compiled, 2), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        for (int r = 0; r < 2; r++) {
            cr_assert(memcmp(kiln_tensor_data(compiled[r]), kiln_tensor_data(eager[r]),
                             kiln_tensor_nbytes(eager[r])) == 0,
                      "%s: result %d compiled equals eager", kiln_dtype_name(dt), r);
            kiln_tensor_release(compiled[r]);
            kiln_tensor_release(eager[r]);
        }
        kiln_exe_release(exe);
        kiln_module_release(m);
        kiln_tensor_release(x);
    }
    kiln_ctx_release(cx);
}

/* convert: complex to complex part by part, a real value to (x, 0) converted once, complex to
 * real its real part; in place too. */
Test(complex_types, convert_to_and_from_complex) {
    kiln_ctx *cx = test_ctx();
    const double re[3] = {1.5, -2.75, 16777217}, im[3] = {-0.5, 3, 0.125};
    kiln_tensor *z = complex_tensor(cx, KILN_C128, KILN_SHAPE(3), re, im, 3);
    kiln_tensor *z64 = kiln_convert(cx, z, KILN_C64), *f = kiln_convert(cx, z, KILN_F32);
    kiln_tensor *i = kiln_convert(cx, z64, KILN_I32);
    cr_assert_not_null(z64 && f && i, "%s", kiln_ctx_error_message(cx));
    for (int64_t k = 0; k < 3; k++) {
        cr_assert(element(z64, k) == rounded(KILN_C64, CMPLX(re[k], im[k])), "c128 -> c64");
        cr_assert_eq(kiln_tensor_item(cx, f, k), (double)(float)re[k], "c128 -> f32: real part");
        cr_assert_eq(kiln_tensor_item(cx, i, k), (double)(int32_t)(float)re[k], "c64 -> i32");
    }
    const int64_t big = (INT64_C(1) << 53) + 1; /* one rounding to f32, not two through f64 */
    kiln_tensor *n = kiln_tensor_from_host(cx, KILN_I64, KILN_SHAPE(1), &big, sizeof big);
    kiln_tensor *nc = kiln_convert(cx, n, KILN_C64);
    cr_assert_not_null(nc, "%s", kiln_ctx_error_message(cx));
    cr_assert(element(nc, 0) == CMPLX((float)big, 0.0), "i64 -> c64 rounds once");
    kiln_tensor *b = kiln_convert(cx, kiln_full(cx, KILN_BOOL, KILN_SHAPE(2), 1), KILN_C128);
    cr_assert_not_null(b, "%s", kiln_ctx_error_message(cx));
    cr_assert(element(b, 1) == CMPLX(1.0, 0.0), "i1 -> complex");
    kiln_tensor *all[] = {z, z64, f, i, n, nc, b};
    for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
        kiln_tensor_release(all[t]);
    expect_ok(cx);
    kiln_ctx_release(cx);
}
