/* SPDX-License-Identifier: Apache-2.0 */
/* Convolution gradients on oneDNN (src/backends/cpu/eval/dnnl_conv.c): a convolution that is a
 * kernel's gradient (autodiff's conv_kernel_cotangent: the input with batch and feature
 * roles swapped, the cotangent as a kernel larger than the result) runs as oneDNN's weight
 * gradient of the forward convolution, strides and dilations swapped back; one that dilates
 * its input (conv_input_cotangent of a strided convolution: a transposed convolution) runs
 * as oneDNN's input gradient, its kernel reversed back. Random geometries in random layouts
 * against im2col + GEMM, and compiled gradients against the interpreter. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <kiln/autodiff.h>

#include "backends/cpu/eval/eval.h"
#include "backends/cpu/eval/eval_linalg.h"
#include "backends/cpu/lib/dnnl_api.h"
#include "base/threads.h"
#include "failing_allocator.h"
#include "test_util.h"

static uint64_t rng_state;

static uint64_t rnd(void) {
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}

static int64_t rnd_int(int64_t lo, int64_t hi) {
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static void shuffle(int64_t *v, int32_t n) {
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t j = (int32_t)(rnd() % (uint64_t)(i + 1));
        int64_t t = v[i];
        v[i] = v[j], v[j] = t;
    }
}

static kiln_tensor *random_f32(kiln_ctx *cx, kiln_shape s, uint64_t seed) {
    kiln_tensor *t = kiln_random_uniform(cx, kiln_key_from_seed(seed), KILN_F32, s, -1, 1);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

/* A writable result of zeros (the kernels fill preallocated results). */
static kiln_tensor *zeros_f32(kiln_ctx *cx, kiln_shape s) {
    kiln_tensor *t = kiln_zeros(cx, KILN_F32, s);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

static void expect_close(const kiln_tensor *a, const kiln_tensor *b, double tol, const char *what,
                         int trial) {
    cr_assert_eq(kiln_tensor_numel(a), kiln_tensor_numel(b), "%s, trial %d", what, trial);
    const float *x = kiln_tensor_data(a), *y = kiln_tensor_data(b);
    for (int64_t i = 0; i < kiln_tensor_numel(a); i++)
        cr_assert(fabs((double)x[i] - (double)y[i]) <= tol,
                  "%s, trial %d: element %lld: %.9g vs %.9g", what, trial, (long long)i, x[i],
                  y[i]);
}

static int64_t dilate(int64_t size, int64_t d) { return size == 0 ? 0 : (size - 1) * d + 1; }

/* Random dimension numbers with S spatial dimensions (every 4th trial in order): q's roles,
 * every list of q S long, and the operands' non-spatial sizes: sizes = {lhs batch, lhs
 * feature, kernel input feature, kernel output feature, result batch, result feature}. The
 * caller sets the spatial sizes, at q's spatial dimensions, and the lists' values. */
static void random_roles(int trial, int32_t S, const int64_t *sizes, kiln_conv_params *q,
                         kiln_shape *ls, kiln_shape *rs, kiln_shape *os) {
    int32_t R = S + 2;
    int64_t pos[3][KILN_MAX_RANK];
    for (int t = 0; t < 3; t++) {
        for (int32_t i = 0; i < R; i++)
            pos[t][i] = i;
        if (trial % 4) shuffle(pos[t], R);
    }
    *q = (kiln_conv_params){0};
    *ls = (kiln_shape){.rank = R}, *rs = (kiln_shape){.rank = R}, *os = (kiln_shape){.rank = R};
    q->input_batch_dimension = pos[0][0], q->input_feature_dimension = pos[0][1];
    q->kernel_input_feature_dimension = pos[1][0], q->kernel_output_feature_dimension = pos[1][1];
    q->output_batch_dimension = pos[2][0], q->output_feature_dimension = pos[2][1];
    ls->dims[pos[0][0]] = sizes[0], ls->dims[pos[0][1]] = sizes[1];
    rs->dims[pos[1][0]] = sizes[2], rs->dims[pos[1][1]] = sizes[3];
    os->dims[pos[2][0]] = sizes[4], os->dims[pos[2][1]] = sizes[5];
    q->input_spatial_dimensions.count = q->kernel_spatial_dimensions.count =
        q->output_spatial_dimensions.count = q->window_strides.count = q->padding_low.count =
            q->padding_high.count = q->rhs_dilation.count = q->lhs_dilation.count = S;
    for (int32_t d = 0; d < S; d++) {
        q->input_spatial_dimensions.v[d] = pos[0][2 + d];
        q->kernel_spatial_dimensions.v[d] = pos[1][2 + d];
        q->output_spatial_dimensions.v[d] = pos[2][2 + d];
    }
}

/* q on l and r through kiln__dnnl_conv and through the evaluator, each against ref (im2col
 * + GEMM) within tol; true when kiln__dnnl_conv ran it as the gradient that `ran` counts. */
static bool check_against_im2col(kiln_ctx *cx, kiln_tensor *l, kiln_tensor *r,
                                 const kiln_conv_params *q, const kiln_tensor *ref, double tol,
                                 int64_t (*ran)(void), const char *what, int trial) {
    kiln__attrs at = {.u.conv = *q, .result_dtype = KILN_F32};
    kiln_tensor *direct = zeros_f32(cx, *kiln_tensor_shape(ref));
    kiln_status st = KILN_UNKNOWN;
    int64_t before = ran();
    bool taken = false;
    if (kiln__dnnl_conv(cx, &at, l, r, NULL, direct, &st)) {
        cr_assert_eq(st, KILN_OK, "trial %d: %s", trial, kiln_ctx_error_message(cx));
        expect_close(direct, ref, tol, what, trial);
        taken = ran() == before + 1;
    }
    /* Through the evaluator too (it picks oneDNN by itself). */
    kiln_tensor *eval = kiln_convolution(cx, l, r, q, KILN_DTYPE_COUNT);
    expect_close(eval, ref, tol, "kiln_convolution vs im2col", trial);
    return taken;
}

/* False (with a warning) where this process cannot open oneDNN: the path is not tested. */
static bool have_onednn(const char *path) {
    if (kiln__dnnl_conv_available()) return true;
    cr_log_warn("oneDNN cannot be opened (%s): the %s path is not tested", kiln__dnnl_api_error(),
                path);
    return false;
}

Test(onednn_gradients, kernel_gradients_run_as_weight_gradients_and_match_im2col) {
    /* The weight gradient of a forward convolution (batch N, C -> O channels, kernel K,
     * stride s, dilation rd, padding lo and hi) as autodiff writes it: lhs = x with batch
     * role on C and feature role on N, rhs = the cotangent [N, O, out] as the kernel, result
     * [C, O, K] (batch C, feature O); window strides rd, rhs dilation s, padding lo and the
     * high padding that leaves exactly K outputs (negative when the forward dropped input:
     * oneDNN declines those). */
    if (!have_onednn("weight-gradient")) return;
    kiln_ctx *cx = test_ctx();
    rng_state = 0x9e3779b97f4a7c15ull;
    kiln__dnnl_conv_any_size(true);
    int taken = 0, eligible = 0;
    for (int trial = 0; trial < 60; trial++) {
        kiln_scope_begin(cx);
        int32_t S = 1 + trial % 3;
        int64_t N = rnd_int(1, 3), C = rnd_int(1, 4), O = rnd_int(1, 5);
        kiln_conv_params q;
        kiln_shape ls, rs, os;
        random_roles(trial, S, (const int64_t[]){C, N, N, O, C, O}, &q, &ls, &rs, &os);
        bool exact = true;
        for (int32_t d = 0; d < S; d++) {
            int64_t K = rnd_int(1, 3), s = rnd_int(1, 2), rd = rnd_int(1, 2);
            int64_t lo = rnd_int(0, 1), hi = rnd_int(0, 2);
            int64_t I = dilate(K, rd) + 2 * s + rnd_int(0, S == 3 ? 2 : 5);
            int64_t out = (I + lo + hi - dilate(K, rd)) / s + 1;
            ls.dims[q.input_spatial_dimensions.v[d]] = I;
            rs.dims[q.kernel_spatial_dimensions.v[d]] = out;
            os.dims[q.output_spatial_dimensions.v[d]] = K;
            q.window_strides.v[d] = rd;
            q.rhs_dilation.v[d] = s;
            q.lhs_dilation.v[d] = 1;
            q.padding_low.v[d] = lo;
            q.padding_high.v[d] = dilate(out, s) + dilate(K, rd) - 1 - I - lo;
            exact = exact && q.padding_high.v[d] >= 0;
        }
        kiln_tensor *l = random_f32(cx, ls, 1000 + (uint64_t)trial);
        kiln_tensor *r = random_f32(cx, rs, 2000 + (uint64_t)trial);
        kiln__dnnl_conv_force_off(true);
        kiln_tensor *ref = kiln_convolution(cx, l, r, &q, KILN_DTYPE_COUNT);
        kiln__dnnl_conv_force_off(false);
        cr_assert_not_null(ref, "trial %d: %s", trial, kiln_ctx_error_message(cx));
        cr_assert(kiln_shape_equal(kiln_tensor_shape(ref), &os), "trial %d: result shape", trial);
        /* Each result sums N * (outputs per kernel position) products of values in [-1, 1). */
        double terms = (double)N * (double)kiln_tensor_numel(r) / (double)(N * O);
        double tol = 1e-6 * terms + 1e-5;
        taken += check_against_im2col(cx, l, r, &q, ref, tol, kiln__dnnl_conv_kernel_gradients_run,
                                      "oneDNN weight gradient vs im2col", trial);
        eligible += exact;
        kiln_scope_end(cx);
    }
    kiln__dnnl_conv_any_size(false);
    /* oneDNN may leave a geometry to im2col (where it has only reference loops), but most
     * geometries with exact padding run as weight gradients. */
    cr_assert_gt(eligible, 20);
    cr_assert_gt(2 * taken, eligible, "oneDNN took %d of %d as weight gradients", taken, eligible);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(onednn_gradients, input_dilated_convolutions_run_as_input_gradients_and_match_im2col) {
    /* A convolution with input dilation s (the forward stride), window strides 1, rhs
     * dilation rd, kernel K and padding up to (K - 1) * rd on each side: any such is the
     * input gradient of a forward convolution with the kernel reversed (padding beyond that
     * would be the forward's negative padding: oneDNN declines it). */
    if (!have_onednn("input-gradient")) return;
    kiln_ctx *cx = test_ctx();
    rng_state = 0x2545f4914f6cdd1dull;
    kiln__dnnl_conv_any_size(true);
    int taken = 0, eligible = 0;
    for (int trial = 0; trial < 60; trial++) {
        kiln_scope_begin(cx);
        int32_t S = 1 + trial % 3;
        int64_t N = rnd_int(1, 3), O = rnd_int(1, 5), C = rnd_int(1, 4);
        kiln_conv_params q;
        kiln_shape ls, rs, os; /* os: the result's shape comes from kiln_convolution */
        random_roles(trial, S, (const int64_t[]){N, O, O, C, N, C}, &q, &ls, &rs, &os);
        bool fits = true;
        for (int32_t d = 0; d < S; d++) {
            int64_t K = rnd_int(1, 3), s = rnd_int(d == 0 ? 2 : 1, 3), rd = rnd_int(1, 2);
            int64_t reach = (K - 1) * rd;
            ls.dims[q.input_spatial_dimensions.v[d]] = rnd_int(1, S == 3 ? 4 : 7);
            rs.dims[q.kernel_spatial_dimensions.v[d]] = K;
            q.window_strides.v[d] = 1;
            q.lhs_dilation.v[d] = s;
            q.rhs_dilation.v[d] = rd;
            /* mostly within the reach; sometimes one past it */
            q.padding_low.v[d] = rnd_int(0, reach + (trial % 5 == 0));
            q.padding_high.v[d] = rnd_int(0, reach);
            fits = fits && q.padding_low.v[d] <= reach;
        }
        kiln_tensor *l = random_f32(cx, ls, 3000 + (uint64_t)trial);
        kiln_tensor *r = random_f32(cx, rs, 4000 + (uint64_t)trial);
        kiln__dnnl_conv_force_off(true);
        kiln_tensor *ref = kiln_convolution(cx, l, r, &q, KILN_DTYPE_COUNT);
        kiln__dnnl_conv_force_off(false);
        if (!ref) { /* the result would be empty: not a convolution kiln computes */
            cr_assert_eq(kiln_ctx_status(cx), KILN_INVALID_ARGUMENT, "trial %d: %s", trial,
                         kiln_ctx_error_message(cx));
            kiln_ctx_clear_error(cx);
            kiln_scope_end(cx);
            continue;
        }
        double tol = 1e-6 * (double)(O * kiln_tensor_numel(r) / (O * C)) + 1e-5;
        taken += check_against_im2col(cx, l, r, &q, ref, tol, kiln__dnnl_conv_input_gradients_run,
                                      "oneDNN input gradient vs im2col", trial);
        eligible += fits;
        kiln_scope_end(cx);
    }
    kiln__dnnl_conv_any_size(false);
    cr_assert_gt(eligible, 20);
    cr_assert_gt(2 * taken, eligible, "oneDNN took %d of %d as input gradients", taken, eligible);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* loss(x, w) = sum(conv(x, w) * c): strided, dilated, padded on both sides unevenly. */
static kiln_status loss_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_conv_params p = kiln_conv_params_nchw(2);
    p.window_strides = KILN_DIMS(2, 1);
    p.rhs_dilation = KILN_DIMS(1, 2);
    p.padding_low = KILN_DIMS(1, 0);
    p.padding_high = KILN_DIMS(0, 2);
    kiln_tensor *y = kiln_convolution(cx, in[0], in[1], &p, KILN_DTYPE_COUNT);
    out[0] = kiln_sum(cx, kiln_multiply(cx, y, in[2]), KILN_DIMS_NONE, false);
    return kiln_ctx_status(cx);
}

static kiln_status grad_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region loss = {loss_fn, NULL};
    kiln_grad_options o = kiln_grad_options_default();
    const int32_t argnums[] = {0, 1};
    o.argnums = argnums;
    o.n_argnums = 2;
    return kiln_grad(cx, &loss, 3, in, &o, out);
}

Test(onednn_gradients, compiled_gradients_match_the_interpreter) {
    kiln_ctx *cx = test_ctx();
    /* x [2, 3, 12, 10], w [4, 3, 3, 2]: out [2, 4, 6, 10]; the input's gradient dilates
     * the cotangent by the stride (2, 1). */
    kiln_arg_spec specs[3] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(2, 3, 12, 10)},
                              {.dtype = KILN_F32, .shape = KILN_SHAPE(4, 3, 3, 2)},
                              {.dtype = KILN_F32, .shape = KILN_SHAPE(2, 4, 6, 10)}};
    kiln_tensor *args[3];
    for (int i = 0; i < 3; i++)
        args[i] = random_f32(cx, specs[i].shape, 70 + (uint64_t)i);
    kiln_region fn = {grad_fn, NULL};
    kiln_tensor *got[2][2] = {{0}};
    kiln__dnnl_conv_any_size(true);
    int64_t ran_w = 0, ran_d = 0;
    /* The CPU backend, then the interpreter on im2col + GEMM (the evaluator's own loops). */
    for (int interp = 0; interp < 2; interp++) {
        kiln__dnnl_conv_force_off(interp == 1);
        int64_t before_w = kiln__dnnl_conv_kernel_gradients_run();
        int64_t before_d = kiln__dnnl_conv_input_gradients_run();
        kiln_module *m = NULL;
        kiln_exe *exe = NULL;
        cr_assert_eq(kiln_lower(cx, &fn, specs, 3, 2, NULL, &m), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        kiln_compile_options o = kiln_compile_options_default();
        o.backend = interp ? "interpreter" : "cpu";
        cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
        cr_assert_eq(kiln_exe_call(cx, exe, args, got[interp]), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        kiln_exe_release(exe);
        kiln_module_release(m);
        if (!interp) {
            ran_w = kiln__dnnl_conv_kernel_gradients_run() - before_w;
            ran_d = kiln__dnnl_conv_input_gradients_run() - before_d;
        }
    }
    kiln__dnnl_conv_force_off(false);
    kiln__dnnl_conv_any_size(false);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(got[0][0]), &specs[0].shape));
    cr_assert(kiln_shape_equal(kiln_tensor_shape(got[0][1]), &specs[1].shape));
    expect_close(got[0][0], got[1][0], 1e-4, "compiled input gradient vs interpreter", 0);
    expect_close(got[0][1], got[1][1], 1e-4, "compiled kernel gradient vs interpreter", 0);
    if (kiln__dnnl_conv_available()) {
        cr_assert_eq(ran_w, 1, "the kernel gradient ran %lld times as oneDNN's weight gradient",
                     (long long)ran_w);
        cr_assert_eq(ran_d, 1, "the input gradient ran %lld times as oneDNN's input gradient",
                     (long long)ran_d);
    } else {
        cr_log_warn("oneDNN cannot be opened (%s): only the fallback is tested",
                    kiln__dnnl_api_error());
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* The weight gradient of a 3x3 convolution with padding 1 as autodiff writes it for NCHW:
 * x [N, C, H, W] with batch role on C and feature role on N, the cotangent [N, O, H, W] as
 * the kernel, the result [O, C, 3, 3]. */
static kiln_conv_params weight_gradient_params(void) {
    kiln_conv_params w = {0};
    w.input_batch_dimension = 1, w.input_feature_dimension = 0;
    w.input_spatial_dimensions = KILN_DIMS(2, 3);
    w.kernel_input_feature_dimension = 0, w.kernel_output_feature_dimension = 1;
    w.kernel_spatial_dimensions = KILN_DIMS(2, 3);
    w.output_batch_dimension = 1, w.output_feature_dimension = 0;
    w.output_spatial_dimensions = KILN_DIMS(2, 3);
    w.padding_low = KILN_DIMS(1, 1), w.padding_high = KILN_DIMS(1, 1);
    return w;
}

Test(onednn_gradients, same_bits_on_every_thread_count) {
    /* kiln's results do not depend on the thread count (README): the gradients on oneDNN
     * neither, at sizes that run in parallel (weight gradients of 64 and 128 output
     * channels, a stride-2 input gradient). */
    kiln_ctx *cx = test_ctx();
    kiln_conv_params w = weight_gradient_params(); /* x [64, 4, ...] * g [4, 128, ...] */
    kiln_conv_params d = kiln_conv_params_nchw(2); /* g [4, 64, 14, 14] dilated by 2 */
    d.lhs_dilation = KILN_DIMS(2, 2);
    d.padding_low = KILN_DIMS(1, 1), d.padding_high = KILN_DIMS(2, 2);
    struct {
        const kiln_conv_params *p;
        kiln_shape l, r;
        int64_t (*ran)(void);
    } cases[] = {
        {&w, KILN_SHAPE(4, 64, 28, 28), KILN_SHAPE(4, 64, 28, 28),
         kiln__dnnl_conv_kernel_gradients_run},
        {&w, KILN_SHAPE(4, 64, 28, 28), KILN_SHAPE(4, 128, 28, 28),
         kiln__dnnl_conv_kernel_gradients_run},
        {&d, KILN_SHAPE(4, 64, 14, 14), KILN_SHAPE(32, 64, 3, 3),
         kiln__dnnl_conv_input_gradients_run},
    };
    for (int c = 0; c < 3; c++) {
        kiln_scope_begin(cx);
        kiln_tensor *l = random_f32(cx, cases[c].l, 90 + (uint64_t)c);
        kiln_tensor *r = random_f32(cx, cases[c].r, 95 + (uint64_t)c);
        int64_t before = cases[c].ran();
        kiln__threads_set_count(1);
        kiln_tensor *one = kiln_convolution(cx, l, r, cases[c].p, KILN_DTYPE_COUNT);
        cr_assert_not_null(one, "%s", kiln_ctx_error_message(cx));
        for (int t = 2; t <= 3; t++) {
            kiln__threads_set_count(t);
            kiln_tensor *more = kiln_convolution(cx, l, r, cases[c].p, KILN_DTYPE_COUNT);
            cr_assert_not_null(more, "%s", kiln_ctx_error_message(cx));
            expect_close(more, one, 0.0, "the same bits on another thread count", c * 10 + t);
        }
        if (kiln__dnnl_conv_available())
            cr_assert_eq(cases[c].ran() - before, 3, "case %d: ran as a gradient %lld times", c,
                         (long long)(cases[c].ran() - before));
        kiln_scope_end(cx);
    }
    kiln__threads_set_count(0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(onednn_gradients, pieces_without_a_workspace_run_on_the_caller) {
    /* A weight gradient of 128 output channels runs as two pieces on kiln's pool. Without
     * the threads' workspaces a worker cannot run its piece, and the calling thread runs it
     * again with the ctx's allocator: the same bits. When that allocator fails too, the call
     * reports RESOURCE_EXHAUSTED and leaks nothing. */
    if (!have_onednn("weight-gradient")) return;
    kiln_ctx *cx = test_ctx();
    kiln_conv_params w = weight_gradient_params(); /* x [64, 4, ...] * g [4, 128, ...] */
    kiln_tensor *l = random_f32(cx, KILN_SHAPE(4, 64, 28, 28), 80);
    kiln_tensor *r = random_f32(cx, KILN_SHAPE(4, 128, 28, 28), 81);
    kiln__attrs at = {.u.conv = w, .result_dtype = KILN_F32};
    kiln__threads_set_count(2);
    kiln_tensor *want = zeros_f32(cx, KILN_SHAPE(128, 64, 3, 3));
    kiln_status st = KILN_UNKNOWN;
    cr_assert(kiln__dnnl_conv(cx, &at, l, r, NULL, want, &st));
    cr_assert_eq(st, KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln__dnnl_conv_no_workspace(true);
    kiln_tensor *got = zeros_f32(cx, KILN_SHAPE(128, 64, 3, 3));
    cr_assert(kiln__dnnl_conv(cx, &at, l, r, NULL, got, &st));
    cr_assert_eq(st, KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_close(got, want, 0.0, "pieces rerun on the calling thread", 0);
    failing_allocator fa;
    kiln_ctx *fcx = failing_allocator_ctx(&fa);
    cr_assert_not_null(fcx);
    int64_t live = fa.live_blocks;
    fa.fail_after = fa.allocations; /* every allocation from here on fails */
    cr_assert(kiln__dnnl_conv(fcx, &at, l, r, NULL, got, &st));
    kiln__dnnl_conv_no_workspace(false);
    kiln__threads_set_count(0);
    cr_assert_eq(st, KILN_RESOURCE_EXHAUSTED);
    expect_error(fcx, KILN_RESOURCE_EXHAUSTED, "convolution");
    cr_assert_eq(fa.live_blocks, live, "a buffer leaked");
    kiln_ctx_release(fcx);
    expect_ok(cx);
    kiln_ctx_release(cx);
}
