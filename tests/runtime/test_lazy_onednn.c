/* oneDNN is opened when a convolution first needs it, never at start-up (dnnl_api.h): a
 * program that never convolves never maps it, and where it cannot be opened convolutions
 * still run, as im2col + GEMM (what the test switch that declines oneDNN gives, bit for
 * bit). Each test runs in a process of its own
 * (Criterion forks one per test), so each sees oneDNN unopened at its start. */
#include <math.h>

#include "backends/cpu/eval_linalg.h"
#include "test_util.h"

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

Test(lazy_onednn, a_program_that_never_convolves_never_maps_onednn) {
    kiln_ctx *cx = test_ctx();
    /* Eager elementwise ops and a matrix product (OpenBLAS). */
    cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
    kiln_tensor *a =
        kiln_random_uniform(cx, kiln_key_from_seed(1), KILN_F32, KILN_SHAPE(64, 64), -1, 1);
    kiln_tensor *c = kiln_cosine(cx, kiln_matmul(cx, a, a));
    cr_assert_not_null(c, "%s", kiln_ctx_error_message(cx));
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

Test(lazy_onednn, convolution_falls_back_when_onednn_cannot_be_opened) {
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
    cr_assert(!kiln__dnnl_api_mapped());
    cr_assert(sum == want_sum && first == want_first, "got %.9g / %.9g, want %.9g / %.9g", sum,
              first, want_sum, want_first);
    kiln_ctx_release(cx);
}
