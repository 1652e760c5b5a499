/* SPDX-License-Identifier: Apache-2.0 */
/* The complex functions (abs, sign, sqrt, ..., power, atan2, maximum) against values known
 * in closed form, the digits kept near zero by expm1 and log1p, the same bits eager and
 * compiled, complex products (dot_general, convolution), bitcast_convert of complex values,
 * and the refusal of remainder. */
#include <string.h>

#include "complex_values.h"

/* |got - want| within tol of each part, relative to the larger of |want| and 1. */
static bool near(kiln_dtype dt, double complex got, double complex want) {
    double tol = dt == KILN_C64 ? 4e-7 : 4e-15, scale = fmax(cabs(want), 1.0);
    return fabs(creal(got) - creal(want)) <= tol * scale &&
           fabs(cimag(got) - cimag(want)) <= tol * scale;
}

typedef kiln_tensor *(*unary_op)(kiln_ctx *, kiln_tensor *);
typedef kiln_tensor *(*binary_op)(kiln_ctx *, kiln_tensor *, kiln_tensor *);

/* op(x) for one value, as a double complex. */
static double complex apply(kiln_ctx *cx, kiln_dtype dt, unary_op op, double complex x) {
    double re = creal(x), im = cimag(x);
    kiln_tensor *t = complex_tensor(cx, dt, KILN_SHAPE(1), &re, &im, 1);
    kiln_tensor *r = op(cx, t);
    cr_assert_not_null(r, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_dtype(r), dt);
    double complex v = element(r, 0);
    kiln_tensor_release(t);
    kiln_tensor_release(r);
    return v;
}

static double complex apply2(kiln_ctx *cx, kiln_dtype dt, binary_op op, double complex a,
                             double complex b) {
    double re[2] = {creal(a), creal(b)}, im[2] = {cimag(a), cimag(b)};
    kiln_tensor *ta = complex_tensor(cx, dt, KILN_SHAPE(1), &re[0], &im[0], 1);
    kiln_tensor *tb = complex_tensor(cx, dt, KILN_SHAPE(1), &re[1], &im[1], 1);
    kiln_tensor *r = op(cx, ta, tb);
    cr_assert_not_null(r, "%s", kiln_ctx_error_message(cx));
    double complex v = element(r, 0);
    kiln_tensor_release(ta);
    kiln_tensor_release(tb);
    kiln_tensor_release(r);
    return v;
}

#define PI 3.14159265358979323846

Test(complex_math, functions_give_their_closed_forms) {
    kiln_ctx *cx = test_ctx();
    const double s3 = sqrt(3.0), sh1 = 1.1752011936438014, ch1 = 1.5430806348152437;
    struct {
        const char *name;
        unary_op op;
        double complex x, want;
    } cases[] = {
        {"sqrt", kiln_sqrt, CMPLX(-4, 0), CMPLX(0, 2)},
        {"sqrt", kiln_sqrt, CMPLX(3, 4), CMPLX(2, 1)},
        {"rsqrt", kiln_rsqrt, CMPLX(-4, 0), CMPLX(0, -0.5)},
        {"cbrt", kiln_cbrt, CMPLX(-8, 0), CMPLX(1, s3)},
        {"exp", kiln_exponential, CMPLX(0, PI), CMPLX(-1, 0)},
        {"exp", kiln_exponential, CMPLX(1, PI / 2), CMPLX(0, 2.718281828459045)},
        {"expm1", kiln_exponential_minus_one, CMPLX(0, PI), CMPLX(-2, 0)},
        {"log", kiln_log, CMPLX(-1, 0), CMPLX(0, PI)},
        {"log", kiln_log, CMPLX(0, 1), CMPLX(0, PI / 2)},
        {"log1p", kiln_log_plus_one, CMPLX(-1, 1), CMPLX(0, PI / 2)},
        {"logistic", kiln_logistic, CMPLX(0, 0), CMPLX(0.5, 0)},
        {"logistic", kiln_logistic, CMPLX(0, PI / 2), CMPLX(0.5, 0.5)},
        {"sin", kiln_sine, CMPLX(0, 1), CMPLX(0, sh1)},
        {"cos", kiln_cosine, CMPLX(0, 1), CMPLX(ch1, 0)},
        {"tan", kiln_tan, CMPLX(0, 1), CMPLX(0, sh1 / ch1)},
        {"tanh", kiln_tanh, CMPLX(0, PI / 4), CMPLX(0, 1)},
        {"sign", kiln_sign, CMPLX(3, -4), CMPLX(0.6, -0.8)},
        {"sign", kiln_sign, CMPLX(0, 0), CMPLX(0, 0)},
    };
    for (int k = 0; k < 2; k++) {
        kiln_dtype dt = complex_types[k];
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            double complex got = apply(cx, dt, cases[c].op, cases[c].x);
            cr_assert(near(dt, got, cases[c].want), "%s %s(%g%+gi) = %.17g%+.17gi; expected %g%+gi",
                      kiln_dtype_name(dt), cases[c].name, creal(cases[c].x), cimag(cases[c].x),
                      creal(got), cimag(got), creal(cases[c].want), cimag(cases[c].want));
        }
        /* sign of a value with a NaN part is NaN in both parts */
        double complex s = apply(cx, dt, kiln_sign, CMPLX(NAN, 1));
        cr_assert(isnan(creal(s)) && isnan(cimag(s)), "%s sign(NaN + i)", kiln_dtype_name(dt));
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* exp(z) - 1 and log(1 + z) of a small z: z + z^2/2 and z - z^2/2 to every digit, where the
 * plain formulas keep none of the real part's. */
Test(complex_math, expm1_and_log1p_keep_the_digits_of_small_values) {
    kiln_ctx *cx = test_ctx();
    const double e = 1e-12;
    for (int k = 0; k < 2; k++) {
        kiln_dtype dt = complex_types[k];
        double tol = dt == KILN_C64 ? 4e-7 : 4e-15;
        double complex z = rounded(dt, CMPLX(e, e)), z2 = z * z;
        double complex m = apply(cx, dt, kiln_exponential_minus_one, z);
        double complex want_m = z + z2 / 2 + z2 * z / 6;
        cr_assert(fabs(creal(m) - creal(want_m)) <= tol * fabs(creal(want_m)), "%s expm1 %.17g",
                  kiln_dtype_name(dt), creal(m));
        cr_assert(fabs(cimag(m) - cimag(want_m)) <= tol * fabs(cimag(want_m)));
        double complex l = apply(cx, dt, kiln_log_plus_one, z);
        double complex want_l = z - z2 / 2 + z2 * z / 3;
        cr_assert(fabs(creal(l) - creal(want_l)) <= tol * fabs(creal(want_l)), "%s log1p %.17g",
                  kiln_dtype_name(dt), creal(l));
        cr_assert(fabs(cimag(l) - cimag(want_l)) <= tol * fabs(cimag(want_l)));
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(complex_math, abs_is_the_modulus_in_the_parts_dtype) {
    kiln_ctx *cx = test_ctx();
    const double re[3] = {3, -INFINITY, 1e300}, im[3] = {-4, NAN, 1e300};
    for (int k = 0; k < 2; k++) {
        kiln_dtype dt = complex_types[k];
        kiln_tensor *z = complex_tensor(cx, dt, KILN_SHAPE(3), re, im, 3);
        kiln_tensor *a = kiln_abs(cx, z);
        cr_assert_not_null(a, "%s", kiln_ctx_error_message(cx));
        cr_assert_eq(kiln_tensor_dtype(a), kiln_dtype_component(dt));
        cr_assert_eq(kiln_tensor_item(cx, a, 0), 5.0);
        cr_assert(isinf(kiln_tensor_item(cx, a, 1)), "|inf + NaN i| is inf (hypot)");
        double big = kiln_tensor_item(cx, a, 2);
        if (dt == KILN_C128)
            cr_assert(fabs(big - 1e300 * sqrt(2.0)) <= 1e285, "no overflow on the way: %g", big);
        else
            cr_assert(isinf(big), "complex<f32> parts of 1e300 are inf");
        kiln_tensor_release(z);
        kiln_tensor_release(a);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(complex_math, power_atan2_and_the_order_of_pairs) {
    kiln_ctx *cx = test_ctx();
    for (int k = 0; k < 2; k++) {
        kiln_dtype dt = complex_types[k];
        const char *n = kiln_dtype_name(dt);
        cr_assert(near(dt, apply2(cx, dt, kiln_power, CMPLX(0, 2), CMPLX(2, 0)), CMPLX(-4, 0)),
                  "%s (2i)^2", n);
        cr_assert(near(dt, apply2(cx, dt, kiln_power, CMPLX(-1, 0), CMPLX(0.5, 0)), CMPLX(0, 1)),
                  "%s (-1)^0.5", n);
        cr_assert(apply2(cx, dt, kiln_power, CMPLX(0, 0), CMPLX(0, 0)) == CMPLX(1, 0),
                  "%s 0^0 = 1", n);
        cr_assert(apply2(cx, dt, kiln_power, CMPLX(0, 0), CMPLX(2.5, 0)) == CMPLX(0, 0),
                  "%s 0^2.5 = 0", n);
        cr_assert(near(dt, apply2(cx, dt, kiln_atan2, CMPLX(1, 0), CMPLX(1, 0)),
                       CMPLX(PI / 4, 0)),
                  "%s atan2(1, 1)", n);
        cr_assert(near(dt, apply2(cx, dt, kiln_atan2, CMPLX(1, 0), CMPLX(-1, 0)),
                       CMPLX(3 * PI / 4, 0)),
                  "%s atan2(1, -1)", n);
        /* (real, imaginary) in that order */
        cr_assert(apply2(cx, dt, kiln_maximum, CMPLX(1, 5), CMPLX(1, 6)) == CMPLX(1, 6));
        cr_assert(apply2(cx, dt, kiln_maximum, CMPLX(2, 0), CMPLX(1, 9)) == CMPLX(2, 0));
        cr_assert(apply2(cx, dt, kiln_minimum, CMPLX(1, 5), CMPLX(1, 6)) == CMPLX(1, 5));
        cr_assert(apply2(cx, dt, kiln_minimum, CMPLX(2, 0), CMPLX(1, 9)) == CMPLX(1, 9));
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

static kiln_status every_function(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *u) {
    (void)u;
    unary_op ops[] = {kiln_sqrt,        kiln_rsqrt, kiln_cbrt,      kiln_exponential,
                      kiln_exponential_minus_one,   kiln_log,       kiln_log_plus_one,
                      kiln_logistic,    kiln_sine,  kiln_cosine,    kiln_tan,
                      kiln_tanh,        kiln_sign,  kiln_negate};
    kiln_tensor *acc = in[0];
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        acc = kiln_add(cx, acc, ops[i](cx, in[0]));
    acc = kiln_add(cx, acc, kiln_power(cx, in[0], in[1]));
    acc = kiln_add(cx, acc, kiln_atan2(cx, in[0], in[1]));
    acc = kiln_add(cx, acc, kiln_maximum(cx, in[0], in[1]));
    out[0] = kiln_add(cx, acc, kiln_minimum(cx, in[0], in[1]));
    out[1] = kiln_abs(cx, in[0]);
    return kiln_ctx_status(cx);
}

/* Compiled programs run the kernels eager mode runs: the same bits. */
Test(complex_math, compiled_equals_eager_bit_for_bit) {
    kiln_ctx *cx = test_ctx();
    enum { N = 8 };
    const double re[N] = {1, -2.5, 0.125, 3, -0.5, 7, 0.75, -1};
    const double im[N] = {2, 0.5, -1, -2, 0.25, -7, 0, 1e-3};
    for (int k = 0; k < 2; k++) {
        kiln_dtype dt = complex_types[k];
        kiln_tensor *in[2] = {complex_tensor(cx, dt, KILN_SHAPE(2, 4), re, im, N),
                              complex_tensor(cx, dt, KILN_SHAPE(2, 4), im, re, N)};
        kiln_tensor *eager[2];
        cr_assert_eq(every_function(cx, in, eager, NULL), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        kiln_arg_spec spec[2] = {{.dtype = dt, .shape = KILN_SHAPE(2, 4)},
                                 {.dtype = dt, .shape = KILN_SHAPE(2, 4)}};
        test_expect_compiled_equals_eager(cx, (kiln_region){every_function, NULL}, spec, in, 2,
                                          eager, 2, kiln_dtype_name(dt));
        kiln_tensor_release(eager[0]);
        kiln_tensor_release(eager[1]);
        kiln_tensor_release(in[0]);
        kiln_tensor_release(in[1]);
    }
    kiln_ctx_release(cx);
}

/* bitcast_convert: a complex value's pieces are its real part's bits, then its imaginary
 * part's (the reference's packing), and back. */
Test(complex_math, bitcast_convert_splits_and_joins_the_parts) {
    kiln_ctx *cx = test_ctx();
    const double re[2] = {1.5, -0.0}, im[2] = {-2.25, NAN};
    kiln_tensor *z = complex_tensor(cx, KILN_C64, KILN_SHAPE(2), re, im, 2);
    kiln_tensor *bits = kiln_bitcast_convert(cx, z, KILN_U32);
    cr_assert_not_null(bits, "%s", kiln_ctx_error_message(cx));
    cr_assert(kiln_tensor_rank(bits) == 2 && kiln_tensor_dim(bits, 1) == 2, "a last dim of 2");
    const uint32_t *u = kiln_tensor_data(bits);
    float parts[4] = {1.5f, -2.25f, -0.0f, NAN};
    uint32_t want[4];
    memcpy(want, parts, sizeof want);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(u[i], want[i], "piece %d", i);
    kiln_tensor *back = kiln_bitcast_convert(cx, bits, KILN_C64);
    kiln_tensor *pair = kiln_reshape(cx, z, KILN_SHAPE(1, 2));
    kiln_tensor *wide = kiln_bitcast_convert(cx, pair, KILN_C128);
    cr_assert_not_null(back && wide, "%s", kiln_ctx_error_message(cx));
    cr_assert(memcmp(kiln_tensor_data(back), kiln_tensor_data(z), kiln_tensor_nbytes(z)) == 0);
    cr_assert(memcmp(kiln_tensor_data(wide), kiln_tensor_data(z), kiln_tensor_nbytes(z)) == 0,
              "two complex<f32> are one complex<f64>'s bytes");
    kiln_tensor *all[] = {z, bits, back, pair, wide};
    for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
        kiln_tensor_release(all[t]);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Complex products: (ac - bd) + (ad + bc)i summed in order, never conjugated; eager and
 * compiled, transposed, in a convolution, and from real operands into a complex result. */
static double complex ref_entry(const double complex *a, const double complex *b, int64_t i,
                                int64_t j, int64_t K, int64_t N) {
    double complex acc = 0;
    for (int64_t p = 0; p < K; p++)
        acc += a[i * K + p] * b[p * N + j];
    return acc;
}

/* A tensor of the first numel(shape) values of v. */
static kiln_tensor *complex_matrix(kiln_ctx *cx, kiln_dtype dt, kiln_shape shape,
                                   const double complex *v) {
    double re[64], im[64];
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    cr_assert_leq(n, 64);
    for (int64_t i = 0; i < n; i++)
        re[i] = creal(v[i]), im[i] = cimag(v[i]);
    return complex_tensor(cx, dt, shape, re, im, n);
}

static kiln_status complex_product(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                   void *u) {
    const kiln_dot_params *p = u;
    out[0] = kiln_dot_general(cx, in[0], in[1], p, KILN_DTYPE_COUNT);
    return kiln_ctx_status(cx);
}

Test(complex_math, products_match_the_reference) {
    kiln_ctx *cx = test_ctx();
    enum { M = 3, K = 4, N = 5 };
    double complex a[M * K], b[K * N], at[K * M];
    for (int64_t i = 0; i < M * K; i++)
        a[i] = (double)(i % 5) - 2 + ((double)(i % 3) - 1.5) * I;
    for (int64_t i = 0; i < K * N; i++)
        b[i] = (double)(i % 4) - 1.25 + ((double)(i % 7) - 3) * I;
    for (int64_t i = 0; i < M; i++)
        for (int64_t p = 0; p < K; p++)
            at[p * M + i] = a[i * K + p];
    kiln_dot_params mm = {.lhs_contracting_dims = KILN_DIMS(1),
                          .rhs_contracting_dims = KILN_DIMS(0)};
    kiln_dot_params tm = {.lhs_contracting_dims = KILN_DIMS(0),
                          .rhs_contracting_dims = KILN_DIMS(0)};
    const kiln_dtype types[2] = {KILN_C64, KILN_C128};
    for (int k = 0; k < 2; k++) {
        kiln_dtype dt = types[k];
        double tol = dt == KILN_C64 ? 1e-5 : 1e-13;
        kiln_tensor *ta = complex_matrix(cx, dt, KILN_SHAPE(M, K), a);
        kiln_tensor *tat = complex_matrix(cx, dt, KILN_SHAPE(K, M), at);
        kiln_tensor *tb = complex_matrix(cx, dt, KILN_SHAPE(K, N), b);
        kiln_tensor *c = kiln_dot_general(cx, ta, tb, &mm, KILN_DTYPE_COUNT);
        kiln_tensor *ct = kiln_dot_general(cx, tat, tb, &tm, KILN_DTYPE_COUNT);
        cr_assert_not_null(c && ct, "%s", kiln_ctx_error_message(cx));
        cr_assert_eq(kiln_tensor_dtype(c), dt);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double complex want = ref_entry(a, b, i, j, K, N);
                cr_assert(cabs(element(c, i * N + j) - want) <= tol * (1 + cabs(want)),
                          "%s [%lld, %lld]", kiln_dtype_name(dt), (long long)i, (long long)j);
                cr_assert(cabs(element(ct, i * N + j) - want) <= tol * (1 + cabs(want)),
                          "%s transposed lhs", kiln_dtype_name(dt));
            }
        /* Compiled: the same bits as eager. */
        kiln_arg_spec spec[2] = {{.dtype = dt, .shape = KILN_SHAPE(M, K)},
                                 {.dtype = dt, .shape = KILN_SHAPE(K, N)}};
        kiln_region fn = {complex_product, &mm};
        kiln_module *mod = NULL;
        cr_assert_eq(kiln_lower(cx, &fn, spec, 2, 1, NULL, &mod), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        kiln_exe *exe = NULL;
        cr_assert_eq(kiln_compile(cx, mod, NULL, &exe), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        kiln_tensor *args[2] = {ta, tb}, *got = NULL;
        cr_assert_eq(kiln_exe_call_n(cx, exe, args, 2, &got, 1), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        cr_assert(memcmp(kiln_tensor_data(got), kiln_tensor_data(c), kiln_tensor_nbytes(c)) == 0,
                  "%s compiled equals eager", kiln_dtype_name(dt));
        /* A one-dimensional convolution is the same sums: x [1, 1, 4] with a filter [1, 1, 2]
         * gives x[o] w[0] + x[o + 1] w[1]. */
        kiln_conv_params cp = kiln_conv_params_nchw(1);
        kiln_tensor *x = complex_matrix(cx, dt, KILN_SHAPE(1, 1, 4), a);
        kiln_tensor *w = complex_matrix(cx, dt, KILN_SHAPE(1, 1, 2), b);
        kiln_tensor *y = kiln_convolution(cx, x, w, &cp, KILN_DTYPE_COUNT);
        cr_assert_not_null(y, "%s", kiln_ctx_error_message(cx));
        for (int64_t o = 0; o < 3; o++) {
            double complex want = a[o] * b[0] + a[o + 1] * b[1];
            cr_assert(cabs(element(y, o) - want) <= tol * (1 + cabs(want)), "%s conv %lld",
                      kiln_dtype_name(dt), (long long)o);
        }
        kiln_tensor *all[] = {ta, tat, tb, c, ct, got, x, w, y};
        for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
            kiln_tensor_release(all[t]);
        kiln_exe_release(exe);
        kiln_module_release(mod);
    }
    /* Real operands into a complex result: (x, 0) products. */
    const float lv[4] = {1, 2, 3, 4};
    const int32_t rv[4] = {5, 6, 7, 8};
    kiln_tensor *l = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 2), lv, sizeof lv);
    kiln_tensor *r = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(2, 2), rv, sizeof rv);
    kiln_tensor *lc = kiln_dot_general(cx, l, kiln_convert(cx, r, KILN_F32), &mm, KILN_C128);
    cr_assert_not_null(lc, "%s", kiln_ctx_error_message(cx));
    const double want_real[4] = {19, 22, 43, 50};
    for (int64_t i = 0; i < 4; i++)
        cr_assert(element(lc, i) == want_real[i], "f32 x f32 -> complex<f64>");
    /* A complex operand cannot go to a real result: its imaginary part would be lost. */
    kiln_tensor *z = kiln_zeros(cx, KILN_C64, KILN_SHAPE(2, 2));
    cr_assert_null(kiln_dot_general(cx, z, z, &mm, KILN_F32));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "a complex operand needs a complex result dtype, not f32");
    kiln_ctx_release(cx);
}

static kiln_status complex_remainder(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                     void *u) {
    (void)u;
    out[0] = kiln_remainder(cx, in[0], in[0]);
    return kiln_ctx_status(cx);
}

/* remainder is in the spec for complex values but not in its reference, nor in XLA: read
 * and lowered, refused when run, naming the op and the dtype. */
Test(complex_math, remainder_is_refused_eagerly_and_at_compile_time) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *z = kiln_ones(cx, KILN_C64, KILN_SHAPE(2));
    cr_assert_null(kiln_remainder(cx, z, z));
    expect_error(cx, KILN_UNIMPLEMENTED, "stablehlo.remainder on complex<f32>");
    kiln_arg_spec spec = {.dtype = KILN_C128, .shape = KILN_SHAPE(2)};
    kiln_region fn = {complex_remainder, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &spec, 1, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_UNIMPLEMENTED);
    expect_error(cx, KILN_UNIMPLEMENTED,
                 "kiln_compile: backend 'cpu' cannot run stablehlo.remainder on complex<f64> "
                 "(@main, op 0)");
    kiln_module_release(m);
    kiln_tensor_release(z);
    kiln_ctx_release(cx);
}
