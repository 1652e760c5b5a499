/* SPDX-License-Identifier: Apache-2.0 */
/* stablehlo.fft: FFT, IFFT, RFFT, IRFFT against a direct sum in long double for every
 * length to 40 and longer ones of each method (powers of two, other lengths by Bluestein),
 * in one to three dimensions, round trips, the same bits compiled, the text forms, and the
 * errors of inference. */
#include <string.h>

#include "complex_values.h"

/* The DFT of n values x[0], x[stride], ... (sign -1 forward, +1 inverse, unscaled). */
static void direct_dft(const long double complex *x, long double complex *out, int64_t n,
                       int64_t stride, int sign) {
    const long double pi = 3.141592653589793238462643383279502884L;
    for (int64_t k = 0; k < n; k++) {
        long double complex acc = 0;
        for (int64_t j = 0; j < n; j++) {
            long double a = 2 * pi * (long double)((j * k) % n) / (long double)n;
            acc += x[j * stride] * (cosl(a) + sign * sinl(a) * I);
        }
        out[k] = acc;
    }
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static double uniform(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
}

/* The largest |got - want| over the largest |want| (at least 1). */
static double relative_error(const kiln_tensor *got, const long double complex *want, int64_t n) {
    double err = 0, scale = 1;
    for (int64_t i = 0; i < n; i++) {
        double complex g = element(got, i);
        err = fmax(err, cabs(g - (double complex)want[i]));
        scale = fmax(scale, cabs((double complex)want[i]));
    }
    return err / scale;
}

Test(fft, one_dimension_matches_the_direct_sum_for_every_method) {
    kiln_ctx *cx = test_ctx();
    int64_t lengths[48];
    int n_lengths = 0;
    for (int64_t n = 1; n <= 40; n++)
        lengths[n_lengths++] = n;
    const int64_t longer[] = {64, 97, 128, 255, 256, 1000};
    for (size_t i = 0; i < sizeof longer / sizeof longer[0]; i++)
        lengths[n_lengths++] = longer[i];
    static double re[2 * 1000], im[2 * 1000];
    static long double complex x[2 * 1000], want[2 * 1000];
    for (int li = 0; li < n_lengths; li++) {
        int64_t n = lengths[li];
        for (int64_t i = 0; i < 2 * n; i++) {
            re[i] = uniform(), im[i] = uniform();
            x[i] = re[i] + im[i] * I;
        }
        for (int k = 0; k < 2; k++) {
            kiln_dtype dt = complex_types[k];
            double tol = dt == KILN_C64 ? 2e-6 : 1e-13;
            kiln_scope_begin(cx);
            kiln_tensor *t = kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(2, n), re,
                                                   sizeof(double) * (size_t)(2 * n));
            kiln_tensor *u = kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(2, n), im,
                                                   sizeof(double) * (size_t)(2 * n));
            kiln_tensor *z = kiln_convert(cx, kiln_complex(cx, t, u), dt);
            for (int inv = 0; inv < 2; inv++) {
                kiln_tensor *f = kiln_fft(cx, z, inv ? KILN_FFT_INVERSE : KILN_FFT_FORWARD,
                                          KILN_DIMS(n));
                cr_assert_not_null(f, "%s", kiln_ctx_error_message(cx));
                for (int row = 0; row < 2; row++) {
                    long double complex xr[1000];
                    for (int64_t i = 0; i < n; i++)
                        xr[i] = (long double complex)rounded(dt, (double complex)x[row * n + i]);
                    direct_dft(xr, want + row * n, n, 1, inv ? 1 : -1);
                    if (inv)
                        for (int64_t i = 0; i < n; i++)
                            want[row * n + i] /= (long double)n;
                }
                double err = relative_error(f, want, 2 * n);
                cr_assert(err <= tol * log2((double)n + 1), "%s %s of length %lld: error %g",
                          kiln_dtype_name(dt), inv ? "IFFT" : "FFT", (long long)n, err);
            }
            kiln_scope_end(cx);
        }
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* RFFT is the FFT of (x, 0) cut to N/2 + 1; IRFFT undoes it, for even and odd lengths. */
Test(fft, real_transforms_and_their_round_trip) {
    kiln_ctx *cx = test_ctx();
    const int64_t lengths[] = {1, 2, 5, 8, 9, 33, 100};
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        int64_t n = lengths[li], h = n / 2 + 1;
        double v[3 * 100];
        for (int64_t i = 0; i < 3 * n; i++)
            v[i] = uniform();
        const kiln_dtype reals[2] = {KILN_F32, KILN_F64};
        for (int k = 0; k < 2; k++) {
            kiln_scope_begin(cx);
            kiln_tensor *x64 = kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(3, n), v,
                                                     sizeof(double) * (size_t)(3 * n));
            kiln_tensor *x = kiln_convert(cx, x64, reals[k]);
            kiln_tensor *r = kiln_fft(cx, x, KILN_FFT_REAL, KILN_DIMS(n));
            cr_assert_not_null(r, "%s", kiln_ctx_error_message(cx));
            cr_assert_eq(kiln_tensor_dtype(r), reals[k] == KILN_F32 ? KILN_C64 : KILN_C128);
            cr_assert(kiln_tensor_dim(r, 1) == h, "the last dimension is N/2 + 1");
            kiln_tensor *full = kiln_fft(cx, kiln_convert(cx, x, kiln_tensor_dtype(r)),
                                         KILN_FFT_FORWARD, KILN_DIMS(n));
            for (int64_t row = 0; row < 3; row++)
                for (int64_t i = 0; i < h; i++)
                    cr_assert(element(r, row * h + i) == element(full, row * n + i),
                              "RFFT is the first half of the FFT (n %lld)", (long long)n);
            kiln_tensor *back = kiln_fft(cx, r, KILN_FFT_INVERSE_REAL, KILN_DIMS(n));
            cr_assert_not_null(back, "%s", kiln_ctx_error_message(cx));
            cr_assert_eq(kiln_tensor_dtype(back), reals[k]);
            double tol = reals[k] == KILN_F32 ? 1e-6 : 1e-14;
            for (int64_t i = 0; i < 3 * n; i++)
                cr_assert(fabs(kiln_tensor_item(cx, back, i) - kiln_tensor_item(cx, x, i)) <=
                              tol * 8,
                          "IRFFT(RFFT(x)) = x (n %lld, element %lld)", (long long)n,
                          (long long)i);
            kiln_scope_end(cx);
        }
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Two and three dimensions: the direct sums along each dimension in turn. */
Test(fft, several_dimensions_are_transforms_along_each) {
    kiln_ctx *cx = test_ctx();
    enum { A = 3, B = 4, C = 5, N = A * B * C };
    double re[2 * N], im[2 * N];
    long double complex want[2 * N], tmp[2 * N];
    for (int i = 0; i < 2 * N; i++)
        re[i] = uniform(), im[i] = uniform();
    double complex x[2 * N];
    for (int i = 0; i < 2 * N; i++)
        x[i] = re[i] + im[i] * I;
    kiln_tensor *z = complex_tensor(cx, KILN_C128, KILN_SHAPE(2, A, B, C), re, im, 2 * N);
    kiln_tensor *f3 = kiln_fft(cx, z, KILN_FFT_FORWARD, KILN_DIMS(A, B, C));
    kiln_tensor *f2 = kiln_fft(cx, z, KILN_FFT_FORWARD, KILN_DIMS(B, C));
    cr_assert_not_null(f3 && f2, "%s", kiln_ctx_error_message(cx));
    for (int dims = 2; dims <= 3; dims++) {
        for (int i = 0; i < 2 * N; i++)
            want[i] = x[i];
        const int64_t size[3] = {A, B, C}, stride[3] = {B * C, C, 1};
        for (int d = 3 - dims; d < 3; d++) {
            for (int i = 0; i < 2 * N; i++)
                tmp[i] = want[i];
            /* every line along d */
            for (int64_t start = 0; start < 2 * N; start++) {
                if ((start / stride[d]) % size[d] != 0) continue;
                long double complex line[8];
                direct_dft(tmp + start, line, size[d], stride[d], -1);
                for (int64_t k = 0; k < size[d]; k++)
                    want[start + k * stride[d]] = line[k];
            }
        }
        double err = relative_error(dims == 3 ? f3 : f2, want, 2 * N);
        cr_assert(err <= 1e-14, "%d dimensions: error %g", dims, err);
    }
    /* IFFT of FFT, and IRFFT of RFFT, in three dimensions */
    kiln_tensor *back = kiln_fft(cx, f3, KILN_FFT_INVERSE, KILN_DIMS(A, B, C));
    cr_assert_not_null(back, "%s", kiln_ctx_error_message(cx));
    for (int i = 0; i < 2 * N; i++)
        cr_assert(cabs(element(back, i) - x[i]) <= 1e-14, "IFFT(FFT(x)) = x");
    kiln_tensor *real = kiln_real(cx, z);
    kiln_tensor *half = kiln_fft(cx, real, KILN_FFT_REAL, KILN_DIMS(A, B, C));
    kiln_tensor *again = kiln_fft(cx, half, KILN_FFT_INVERSE_REAL, KILN_DIMS(A, B, C));
    cr_assert_not_null(again, "%s", kiln_ctx_error_message(cx));
    cr_assert(kiln_tensor_dim(half, 3) == C / 2 + 1);
    for (int i = 0; i < 2 * N; i++)
        cr_assert(fabs(kiln_tensor_item(cx, again, i) - re[i]) <= 1e-14, "IRFFT(RFFT(x)) = x");
    kiln_tensor *all[] = {z, f3, f2, back, real, half, again};
    for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
        kiln_tensor_release(all[t]);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

static kiln_status spectra(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_fft(cx, in[0], KILN_FFT_REAL, KILN_DIMS(4, 6));
    out[1] = kiln_fft(cx, out[0], KILN_FFT_INVERSE_REAL, KILN_DIMS(4, 6));
    out[2] = kiln_fft(cx, kiln_convert(cx, in[0], KILN_C64), KILN_FFT_INVERSE, KILN_DIMS(6));
    return kiln_ctx_status(cx);
}

/* Traced, printed as JAX prints it, read back, compiled: the same bits as eager. */
Test(fft, prints_reads_back_and_compiles_to_the_eager_bits) {
    kiln_ctx *cx = test_ctx();
    double v[4 * 6];
    for (int i = 0; i < 24; i++)
        v[i] = uniform();
    kiln_tensor *x = kiln_convert(
        cx, kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(4, 6), v, sizeof v), KILN_F32);
    kiln_tensor *eager[3];
    cr_assert_eq(spectra(cx, &x, eager, NULL), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_arg_spec spec = {.dtype = KILN_F32, .shape = KILN_SHAPE(4, 6)};
    kiln_region fn = {spectra, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &spec, 1, 3, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text, "%s", kiln_ctx_error_message(cx));
    cr_assert(strstr(text, "stablehlo.fft %arg0, type = RFFT, length = [4, 6] : "
                           "(tensor<4x6xf32>) -> tensor<4x4xcomplex<f32>>"),
              "%s", text);
    cr_assert(strstr(text, "type = IRFFT, length = [4, 6]") && strstr(text, "type = IFFT"), "%s",
              text);
    kiln_module *again = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &again), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *text2 = kiln_module_to_string(cx, again);
    cr_assert_str_eq(text2, text);
    /* the generic form reads too */
    const char *generic =
        "func.func @main(%x: tensor<8xcomplex<f64>>) -> tensor<8xcomplex<f64>> {\n"
        "  %0 = \"stablehlo.fft\"(%x) <{fft_length = array<i64: 8>, fft_type = "
        "#stablehlo<fft_type IFFT>}> : (tensor<8xcomplex<f64>>) -> tensor<8xcomplex<f64>>\n"
        "  return %0 : tensor<8xcomplex<f64>>\n}\n";
    kiln_module *g = NULL;
    cr_assert_eq(kiln_module_parse(cx, generic, strlen(generic), NULL, &g), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *gtext = kiln_module_to_string(cx, g);
    cr_assert(strstr(gtext, "stablehlo.fft %arg0, type = IFFT, length = [8]"), "%s", gtext);
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, again, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *compiled[3];
    cr_assert_eq(kiln_exe_call_n(cx, exe, &x, 1, compiled, 3), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    for (int r = 0; r < 3; r++) {
        cr_assert(memcmp(kiln_tensor_data(compiled[r]), kiln_tensor_data(eager[r]),
                         kiln_tensor_nbytes(eager[r])) == 0,
                  "result %d compiled equals eager", r);
        kiln_tensor_release(compiled[r]);
        kiln_tensor_release(eager[r]);
    }
    kiln_exe_release(exe);
    kiln_string_free(cx, text);
    kiln_string_free(cx, text2);
    kiln_string_free(cx, gtext);
    kiln_module_release(m);
    kiln_module_release(again);
    kiln_module_release(g);
    kiln_tensor_release(x);
    kiln_ctx_release(cx);
}

Test(fft, inference_names_what_is_wrong) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *z = kiln_zeros(cx, KILN_C64, KILN_SHAPE(2, 8));
    kiln_tensor *f = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2, 8));
    cr_assert_null(kiln_fft(cx, z, KILN_FFT_FORWARD, KILN_DIMS(4)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_fft: operand 1 has type complex<f32>[2,8]; FFT with fft_length[0] = 4 "
                 "needs dimension 1 of size 4");
    cr_assert_null(kiln_fft(cx, z, KILN_FFT_FORWARD, KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT, "fft_length has 0 sizes; expected 1 to 3");
    cr_assert_null(kiln_fft(cx, z, KILN_FFT_FORWARD, KILN_DIMS(1, 2, 8)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "FFT of 3 dimensions needs rank >= 3");
    cr_assert_null(kiln_fft(cx, f, KILN_FFT_FORWARD, KILN_DIMS(8)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "operand 1 has dtype f32; FFT takes complex<f32> or complex<f64>");
    cr_assert_null(kiln_fft(cx, z, KILN_FFT_REAL, KILN_DIMS(8)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "operand 1 has dtype complex<f32>; RFFT takes f32 or f64");
    cr_assert_null(kiln_fft(cx, z, KILN_FFT_INVERSE_REAL, KILN_DIMS(8)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "IRFFT with fft_length[0] = 8 needs dimension 1 of size 5");
    cr_assert_null(kiln_fft(cx, z, (kiln_fft_type)9, KILN_DIMS(8)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "fft_type 9 is not FFT, IFFT, RFFT or IRFFT");
    cr_assert_null(kiln_fft(cx, z, KILN_FFT_FORWARD, KILN_DIMS(0)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "fft_length[0] is 0; expected >= 1");
    cr_assert_null(kiln_fft(cx, NULL, KILN_FFT_FORWARD, KILN_DIMS(8)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_fft");
    kiln_tensor_release(z);
    kiln_tensor_release(f);
    kiln_ctx_release(cx);
}
