/* SPDX-License-Identifier: Apache-2.0 */
/* Layout assignment (src/passes/layout.c, run by the CPU backend's compile): a chain of
 * convolutions, bias and ReLU epilogues, max and average pooling, and their gradients
 * (select_and_scatter, reductions of the bias gradients, the weight and data gradient
 * convolutions) computed channels last inside, the logical layout outside. Every result is
 * checked against the interpreter backend (the evaluator alone, op by op, on the module as
 * traced) and against the CPU backend without layout assignment, on oneDNN's kernels and
 * on im2col + GEMM; kiln_exe_print says how many convolutions moved and how many
 * transposes are left at the chains' ends. */
#include <math.h>
#include <string.h>

#include <kiln/autodiff.h>
#include <kiln/nn.h>

#include "backends/cpu/eval/eval_linalg.h"
#include "failing_allocator.h"
#include "test_util.h"

#define NB 2
#define CIN 3
#define HW 16
#define C1 8
#define C2 16

static kiln_tensor *features(kiln_ctx *cx, kiln_tensor *const *in) {
    kiln_nn_conv2d_params same = {.padding = {1, 1}};
    kiln_nn_pool2d_params two = {.window = {2, 2}};
    kiln_tensor *h = kiln_nn_relu(cx, kiln_nn_conv2d(cx, in[0], in[1], in[2], &same));
    h = kiln_nn_max_pool2d(cx, h, &two);
    h = kiln_nn_relu(cx, kiln_nn_conv2d(cx, h, in[3], in[4], &same));
    return kiln_nn_avg_pool2d(cx, h, &two);
}

/* The forward pass: [NB, C2, HW/4, HW/4], logical NCHW. */
static kiln_status forward_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = features(cx, in);
    return kiln_ctx_status(cx);
}

static kiln_status loss_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *h = features(cx, in);
    out[0] = kiln_sum(cx, kiln_multiply(cx, h, h), KILN_DIMS_NONE, false);
    return kiln_ctx_status(cx);
}

/* A training step's gradients: the loss and its gradients by the input and all four
 * parameters. */
static kiln_status grad_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region loss = {loss_fn, NULL};
    kiln_grad_options o = kiln_grad_options_default();
    const int32_t argnums[] = {0, 1, 2, 3, 4};
    o.argnums = argnums;
    o.n_argnums = 5;
    return kiln_value_and_grad(cx, &loss, 5, in, 1, &o, out, out + 1);
}

/* A convolution whose result is the program's result: it stays as it is. */
static kiln_status lone_conv_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                void *u) {
    (void)u;
    out[0] = kiln_nn_conv2d(cx, in[0], in[1], NULL, NULL);
    return kiln_ctx_status(cx);
}

static kiln_arg_spec specs[5];

static void make_specs(void) {
    const kiln_shape shapes[5] = {KILN_SHAPE(NB, CIN, HW, HW), KILN_SHAPE(C1, CIN, 3, 3),
                                  KILN_SHAPE(C1), KILN_SHAPE(C2, C1, 3, 3), KILN_SHAPE(C2)};
    for (int i = 0; i < 5; i++)
        specs[i] = (kiln_arg_spec){.dtype = KILN_F32, .shape = shapes[i]};
}

static void make_args(kiln_ctx *cx, kiln_tensor **args) {
    make_specs();
    for (int i = 0; i < 5; i++)
        args[i] = kiln_random_uniform(cx, kiln_key_from_seed(40 + (uint64_t)i), KILN_F32,
                                      specs[i].shape, i == 0 ? -1.0 : -0.4, i == 0 ? 1.0 : 0.4);
}

typedef enum { INTERPRETER, CPU, CPU_NO_LAYOUT } how;

/* Compiles fn (lowered afresh, so no compile sees another's rewrites) and runs it; the
 * results stay in the ctx's scope. *printed, when asked, gets kiln_exe_print's text. */
static void run(kiln_ctx *cx, kiln_region *fn, int n_out, how h, kiln_tensor *const *args,
                kiln_tensor **out, char **printed) {
    kiln_module *m = NULL;
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_lower(cx, fn, specs, 5, n_out, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = h == INTERPRETER ? "interpreter" : "cpu"; /* whatever KILN_BACKEND says */
    o.disable_layout_assignment = h == CPU_NO_LAYOUT;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_exe_call(cx, exe, args, out), KILN_OK, "%s", kiln_ctx_error_message(cx));
    if (printed) *printed = kiln_exe_to_string(cx, exe);
    kiln_exe_release(exe);
    kiln_module_release(m);
}

/* Results within f32 rounding of the reference's (the kernels sum in other orders). */
static void expect_close(const kiln_tensor *got, const kiln_tensor *want, const char *what) {
    cr_assert(kiln_shape_equal(kiln_tensor_shape(got), kiln_tensor_shape(want)), "%s: shape",
              what);
    const float *g = kiln_tensor_data(got), *w = kiln_tensor_data(want);
    int64_t n = kiln_tensor_numel(want);
    double scale = 0;
    for (int64_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(w[i]));
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(g[i] - w[i]) <= 1e-5 * scale + 1e-6, "%s: element %lld: %.9g, want %.9g",
                  what, (long long)i, g[i], w[i]);
}

/* The convolutions moved and the transposes left, from kiln_exe_print's layout line
 * (0, 0 without one). */
static void layout_line(const char *text, int *convs, int *transposes) {
    *convs = *transposes = 0;
    const char *at = strstr(text, "layout: ");
    if (at)
        cr_assert_eq(sscanf(at, "layout: %d convolutions compute channels last ([N, H, W, C]); "
                                "%d transposes",
                            convs, transposes),
                     2, "%s", at);
}

static void check_program(kiln_region *fn, int n_out, int want_convs, int max_transposes) {
    kiln_ctx *cx = test_ctx();
    for (int dnnl = 0; dnnl < 2; dnnl++) { /* im2col + GEMM, then oneDNN at any size */
        kiln__dnnl_conv_any_size(dnnl == 1);
        kiln_scope_begin(cx);
        kiln_tensor *args[5], *want[6], *plain[6], *got[6];
        make_args(cx, args);
        char *text = NULL, *plain_text = NULL;
        run(cx, fn, n_out, INTERPRETER, args, want, NULL);
        run(cx, fn, n_out, CPU_NO_LAYOUT, args, plain, &plain_text);
        run(cx, fn, n_out, CPU, args, got, &text);
        for (int r = 0; r < n_out; r++) {
            char what[64];
            snprintf(what, sizeof what, "result %d (%s)", r, dnnl ? "oneDNN" : "im2col");
            expect_close(got[r], want[r], what);
            expect_close(plain[r], want[r], what);
        }
        int convs, transposes;
        layout_line(text, &convs, &transposes);
        cr_assert_eq(convs, want_convs, "%s", text);
        cr_assert(transposes <= max_transposes, "%d transposes left:\n%s", transposes, text);
        layout_line(plain_text, &convs, &transposes);
        cr_assert_eq(convs, 0, "disable_layout_assignment still moved %d", convs);
        kiln_string_free(cx, text);
        kiln_string_free(cx, plain_text);
        kiln_scope_end(cx);
    }
    kiln__dnnl_conv_any_size(false);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(layout, forward_chain_changes_layout_only_at_its_ends) {
    /* Both convolutions move; one transpose is left, before the result. */
    kiln_region fn = {forward_fn, NULL};
    check_program(&fn, 1, 2, 1);
}

Test(layout, training_gradients_match_the_interpreter) {
    /* The two forward convolutions and the second one's data gradient (which flows back
     * through ReLU and pooling into the first one's gradients) move; the weight gradients
     * and the input's gradient are results, and stay. Left: the first layer's activations
     * and the gradient's way into the first layer's data gradient. */
    kiln_region fn = {grad_fn, NULL};
    check_program(&fn, 6, 3, 2);
}

Test(layout, a_convolution_returned_as_it_is_stays) {
    kiln_ctx *cx = test_ctx();
    kiln_region fn = {lone_conv_fn, NULL};
    kiln_scope_begin(cx);
    kiln_tensor *args[5], *want[1], *got[1];
    make_args(cx, args);
    char *text = NULL;
    run(cx, &fn, 1, INTERPRETER, args, want, NULL);
    run(cx, &fn, 1, CPU, args, got, &text);
    expect_close(got[0], want[0], "lone convolution");
    cr_assert_null(strstr(text, "layout: "), "%s", text);
    kiln_string_free(cx, text);
    kiln_scope_end(cx);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* One allocation failing at a time anywhere in compiling the forward chain (the pass's new
 * ops, types and attributes included): the compile fails with RESOURCE_EXHAUSTED and
 * leaks nothing, or it succeeds (a rewrite that could not get memory is skipped) and
 * computes what the interpreter does. */
Test(layout, a_failed_allocation_fails_the_compile_cleanly_or_skips_a_rewrite) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    cr_assert_not_null(cx);
    kiln__dnnl_conv_any_size(true);
    kiln_region fn = {forward_fn, NULL};
    kiln_tensor *args[5], *want = NULL;
    make_args(cx, args);
    run(cx, &fn, 1, INTERPRETER, args, &want, NULL);
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = "cpu";
    int succeeded = 0, failed = 0;
    for (int64_t k = 0;; k++) {
        kiln_ctx_trim(cx);
        int64_t base = fa.live_blocks;
        kiln_module *m = NULL; /* a fresh one: a compile rewrites it */
        cr_assert_eq(kiln_lower(cx, &fn, specs, 5, 1, NULL, &m), KILN_OK);
        fa.fail_once = true;
        fa.fail_after = fa.allocations + k;
        int64_t failures = fa.failures;
        kiln_exe *exe = NULL;
        kiln_status s = kiln_compile(cx, m, &o, &exe);
        bool hit = fa.failures > failures;
        fa.fail_after = -1;
        fa.fail_once = false;
        if (s != KILN_OK) {
            cr_assert_eq(s, KILN_RESOURCE_EXHAUSTED, "failure %d: %s", (int)k,
                         kiln_ctx_error_message(cx));
            cr_assert_null(exe);
            kiln_ctx_clear_error(cx);
            kiln_module_release(m);
            kiln_ctx_trim(cx); /* what the buffer cache keeps is not a leak */
            cr_assert_eq(fa.live_blocks, base, "failure %d leaks", (int)k);
            failed++;
            continue;
        }
        cr_assert_eq(kiln_ctx_status(cx), KILN_OK, "failure %d left an error: %s", (int)k,
                     kiln_ctx_error_message(cx));
        kiln_tensor *got = NULL;
        cr_assert_eq(kiln_exe_call(cx, exe, args, &got), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        expect_close(got, want, "after a failed allocation");
        kiln_tensor_release(got);
        kiln_exe_release(exe);
        kiln_module_release(m);
        succeeded++;
        if (!hit) break; /* past the compile's last allocation */
    }
    cr_assert_geq(failed, 3, "%d compiles failed", failed);
    kiln__dnnl_conv_any_size(false);
    kiln_ctx_release(cx);
}
