/* SPDX-License-Identifier: Apache-2.0 */
/* OpenBLAS and oneDNN are opened when a product or a convolution first needs them, never
 * at start-up (blas_api.h, dnnl_api.h): a program that never multiplies matrices or never
 * convolves never maps them, and where they cannot be opened the same ops still run (kiln's
 * loops; im2col + GEMM, bit for bit what the test switch that declines oneDNN gives). Each
 * test runs in a process of its own (Criterion forks one per test), so each sees both
 * unopened at its start. */
#include <math.h>
#include <string.h>

#include "backends/cpu/lib/blas_api.h"
#include "backends/cpu/eval/eval_linalg.h"
#include "backends/cpu/lib/dnnl_api.h"
#include "base/dynlib.h"
#include "test_util.h"

/* Whether this build opens the libraries on first use; the sanitizer build links them too,
 * so that they are mapped from the start (CMakeLists.txt says why), and only the loading
 * itself and the fallbacks can be checked there. */
static bool opened_on_first_use(void) {
#ifdef KILN_TEST_LIBRARIES_AT_START
    return false;
#else
    return true;
#endif
}

/* A convolution big enough for oneDNN (at least 262,144 multiply-adds): f32[1,8,32,32]
 * with f32[16,8,3,3], padding 1. Returns the result's sum and its first element. */
static void convolve(kiln_ctx *cx, double *sum, double *first) {
    cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
    kiln_tensor *x =
        kiln_random_uniform(cx, kiln_key_from_seed(3), KILN_F32, KILN_SHAPE(1, 8, 32, 32), -1, 1);
    kiln_tensor *w =
        kiln_random_uniform(cx, kiln_key_from_seed(4), KILN_F32, KILN_SHAPE(16, 8, 3, 3), -1, 1);
    kiln_conv_params p = kiln_conv_params_nchw(2);
    p.padding_low = p.padding_high = KILN_DIMS(1, 1);
    kiln_tensor *y = kiln_convolution(cx, x, w, &p, KILN_DTYPE_COUNT);
    kiln_tensor *s = kiln_sum(cx, y, KILN_DIMS_NONE, false);
    cr_assert_not_null(s, "%s", kiln_ctx_error_message(cx));
    *sum = kiln_tensor_item(cx, s, 0);
    *first = kiln_tensor_item(cx, y, 0);
    cr_assert_eq(kiln_scope_end(cx), KILN_OK);
}

Test(lazy_libraries, each_library_is_mapped_by_the_first_op_that_needs_it) {
    kiln_ctx *cx = test_ctx();
    cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
    kiln_tensor *a =
        kiln_random_uniform(cx, kiln_key_from_seed(1), KILN_F32, KILN_SHAPE(64, 64), -1, 1);
    /* Elementwise ops, a reduction and a tiny product (kiln's loops) need neither. */
    kiln_tensor *two =
        kiln_random_uniform(cx, kiln_key_from_seed(2), KILN_F32, KILN_SHAPE(2, 2), -1, 1);
    kiln_tensor *t = kiln_sum(cx, kiln_cosine(cx, a), KILN_DIMS_NONE, false);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    t = kiln_matmul(cx, two, two);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    if (opened_on_first_use()) {
        cr_assert(!kiln__blas_api_mapped(), "OpenBLAS was mapped before any product needed it");
        cr_assert(!kiln__dnnl_api_mapped(), "oneDNN was mapped before any convolution");
        /* kiln's own threads ran the work above (several threads: f32[64,64] is split);
         * OpenMP's runtime comes only with the libraries that use it */
        cr_assert(!kiln__dynlib_mapped("/libgomp"), "OpenMP was mapped without its libraries");
    }
    /* A 64 x 64 x 64 product opens OpenBLAS, not oneDNN. */
    kiln_tensor *c = kiln_cosine(cx, kiln_matmul(cx, a, a));
    cr_assert_not_null(c, "%s", kiln_ctx_error_message(cx));
    cr_assert(kiln__blas_api_mapped(), "a matrix product did not open OpenBLAS");
    cr_assert_not_null(kiln__blas_api_if_open());
    if (opened_on_first_use())
        cr_assert(!kiln__dnnl_api_mapped(), "oneDNN was mapped before any convolution");
    cr_assert_eq(kiln_scope_end(cx), KILN_OK);
    /* The first convolution opens it (where kiln was built with it). */
    double sum, first;
    convolve(cx, &sum, &first);
    if (!kiln__dnnl_conv_available()) cr_skip_test("built without oneDNN");
    cr_assert(kiln__dnnl_api_mapped(), "a convolution did not open oneDNN");
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(lazy_libraries, convolution_falls_back_when_onednn_cannot_be_opened) {
    double want_sum, want_first, sum, first;
    {
        /* The reference: im2col + GEMM, oneDNN declined by the test switch. */
        kiln_ctx *cx = test_ctx();
        kiln__dnnl_conv_force_off(true);
        convolve(cx, &want_sum, &want_first);
        kiln__dnnl_conv_force_off(false);
        kiln_ctx_release(cx);
    }
    kiln__dnnl_api_use_library("libkiln-no-such-onednn.so.0");
    kiln_ctx *cx = test_ctx();
    convolve(cx, &sum, &first);
    expect_ok(cx);
    cr_assert(!kiln__dnnl_conv_available());
    if (opened_on_first_use()) cr_assert(!kiln__dnnl_api_mapped());
    cr_assert(strstr(kiln__dnnl_api_error(), "libkiln-no-such-onednn.so.0") ||
                  strcmp(kiln__dnnl_api_error(), "built without oneDNN") == 0,
              "%s", kiln__dnnl_api_error());
    cr_assert(sum == want_sum && first == want_first, "got %.9g / %.9g, want %.9g / %.9g", sum,
              first, want_sum, want_first);
    kiln_ctx_release(cx);
}

/* Without OpenBLAS, f32 and f64 products (a GEMM, a GEMV, a batch) run as kiln's loops:
 * results within rounding of a double-precision reference, nothing mapped. */
Test(lazy_libraries, products_fall_back_when_openblas_cannot_be_opened) {
    kiln__blas_api_use_library("libkiln-no-such-openblas.so.0");
    kiln_ctx *cx = test_ctx();
    enum { M = 37, K = 70, N = 65 };
    float a[M * K], b[K * N];
    for (int i = 0; i < M * K; i++)
        a[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    for (int i = 0; i < K * N; i++)
        b[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
    kiln_tensor *ta = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(M, K), a, sizeof a);
    kiln_tensor *tb = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(K, N), b, sizeof b);
    kiln_tensor *c = kiln_matmul(cx, ta, tb);
    kiln_tensor *v =
        kiln_matmul(cx, kiln_slice(cx, ta, KILN_DIMS(0, 0), KILN_DIMS(1, K), KILN_DIMS(1, 1)),
                    tb); /* 1 x K x N: the GEMV path when BLAS is there */
    kiln_tensor *c64 =
        kiln_matmul(cx, kiln_convert(cx, ta, KILN_F64), kiln_convert(cx, tb, KILN_F64));
    cr_assert_not_null(c64, "%s", kiln_ctx_error_message(cx));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0;
            for (int p = 0; p < K; p++)
                want += (double)a[i * K + p] * (double)b[p * N + j];
            const double got = kiln_tensor_item(cx, c, i * N + j),
                         got64 = kiln_tensor_item(cx, c64, i * N + j);
            cr_assert(fabs(got - want) <= 1e-5 * (1 + fabs(want)), "(%d,%d): %g, want %g", i, j,
                      got, want);
            cr_assert(fabs(got64 - want) <= 1e-12 * (1 + fabs(want)));
            if (i == 0) cr_assert_eq(kiln_tensor_item(cx, v, j), got);
        }
    /* triangular_solve and cholesky: kiln's loops, in double */
    const double spd[4] = {4, 2, 2, 3}, rhs[2] = {2, 1};
    kiln_tensor *s = kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(2, 2), spd, sizeof spd);
    kiln_tensor *l = kiln_cholesky(cx, s, true);
    kiln_tensor *x = kiln_triangular_solve(
        cx, l, kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(2, 1), rhs, sizeof rhs), true, true,
        false, KILN_TRANSPOSE_NONE);
    cr_assert_not_null(x, "%s", kiln_ctx_error_message(cx));
    cr_assert(kiln_tensor_item(cx, l, 0) == 2 && kiln_tensor_item(cx, l, 1) == 0 &&
              kiln_tensor_item(cx, l, 2) == 1 &&
              fabs(kiln_tensor_item(cx, l, 3) - sqrt(2.0)) < 1e-15);
    /* L x = [2, 1]: x0 = 1, x1 = (1 - 1) / sqrt(2) = 0 */
    cr_assert(kiln_tensor_item(cx, x, 0) == 1 && kiln_tensor_item(cx, x, 1) == 0);
    cr_assert_eq(kiln_scope_end(cx), KILN_OK);
    expect_ok(cx);
    cr_assert_null(kiln__blas_api_get());
    cr_assert(strstr(kiln__blas_api_error(), "libkiln-no-such-openblas.so.0") != NULL, "%s",
              kiln__blas_api_error());
    if (opened_on_first_use()) cr_assert(!kiln__blas_api_mapped());
    kiln_ctx_release(cx);
}
