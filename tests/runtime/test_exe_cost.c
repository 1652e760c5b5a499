/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_exe_info's cost: what one call computes, by XLA's conventions, the same whether the
 * cpu backend fuses the ops or the interpreter runs them one by one (this suite also runs
 * with KILN_BACKEND=interpreter). */
#include "test_util.h"

static kiln_cost cost_with(kiln_ctx *cx, kiln_region_fn f, void *user, const kiln_arg_spec *args,
                           int32_t n_args) {
    kiln_region fn = {f, user};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, args, n_args, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_compile_options o = kiln_compile_options_default();
    o.disable_unrolling = true; /* a loop's cost is its body's times its trip count */
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    kiln_exe_info info;
    cr_assert_eq(kiln_exe_info_get(cx, exe, &info), KILN_OK);
    kiln_exe_release(exe);
    return info.cost;
}

static kiln_cost cost_of(kiln_ctx *cx, kiln_region_fn f, const kiln_arg_spec *args,
                         int32_t n_args) {
    return cost_with(cx, f, NULL, args, n_args);
}

static kiln_status matmul(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_matmul(cx, in[0], in[1]);
    return kiln_ctx_status(cx);
}

Test(exe_cost, dot_general_counts_two_flops_per_multiply_accumulate) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(8, 16)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(16, 4)}};
    kiln_cost c = cost_of(cx, matmul, a, 2);
    cr_assert_eq(c.flops, 2 * 8 * 4 * 16);
    cr_assert_eq(c.transcendentals, 0);
    cr_assert_eq(c.bytes_read, (8 * 16 + 16 * 4) * 4);
    cr_assert_eq(c.bytes_written, 8 * 4 * 4);
    kiln_ctx_release(cx);
}

/* Convolution geometry of the tests: NCHW, OIHW, padding, stride and lhs dilation the
 * same in both spatial dimensions. */
typedef struct conv_geometry {
    int64_t pad, stride, lhs_dilation;
} conv_geometry;

static kiln_status conv(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const conv_geometry *g = u;
    kiln_conv_params p = kiln_conv_params_nchw(2);
    p.padding_low = KILN_DIMS(g->pad, g->pad);
    p.padding_high = KILN_DIMS(g->pad, g->pad);
    p.window_strides = KILN_DIMS(g->stride, g->stride);
    p.lhs_dilation = KILN_DIMS(g->lhs_dilation, g->lhs_dilation);
    out[0] = kiln_convolution(cx, in[0], in[1], &p, KILN_DTYPE_COUNT);
    return kiln_ctx_status(cx);
}

/* The (output position, tap) pairs of one spatial dimension that read an input element,
 * neither padding nor a hole of the lhs dilation: what XLA counts, by brute force. */
static int64_t taps_reading_input(int64_t in, int64_t window, const conv_geometry *g) {
    int64_t span = (in - 1) * g->lhs_dilation + 1 + 2 * g->pad;
    int64_t out = (span - window) / g->stride + 1, n = 0;
    for (int64_t o = 0; o < out; o++)
        for (int64_t k = 0; k < window; k++) {
            int64_t at = o * g->stride + k - g->pad;
            if (at >= 0 && at <= (in - 1) * g->lhs_dilation && at % g->lhs_dilation == 0) n++;
        }
    return n;
}

static kiln_cost conv_cost(kiln_ctx *cx, conv_geometry *g) {
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(2, 3, 8, 8)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(5, 3, 3, 3)}};
    return cost_with(cx, conv, g, a, 2);
}

Test(exe_cost, convolution_counts_the_taps_that_read_input) {
    kiln_ctx *cx = test_ctx();
    conv_geometry geometries[] = {{0, 1, 1}, {1, 1, 1}, {2, 2, 1}, {1, 1, 2}, {2, 3, 3}};
    for (size_t i = 0; i < sizeof geometries / sizeof geometries[0]; i++) {
        conv_geometry *g = &geometries[i];
        kiln_cost c = conv_cost(cx, g);
        int64_t per_dim = taps_reading_input(8, 3, g);
        /* batch 2 x 5 output features, each tap over 3 input features */
        cr_assert_eq(c.flops, 2 * (2 * 5) * per_dim * per_dim * 3,
                     "pad %lld stride %lld lhs dilation %lld: %lld flops", (long long)g->pad,
                     (long long)g->stride, (long long)g->lhs_dilation, (long long)c.flops);
    }
    /* Without padding every tap reads input: the full window. */
    cr_assert_eq(conv_cost(cx, &geometries[0]).flops, 2 * (2 * 5 * 6 * 6) * (3 * 3 * 3));
    kiln_ctx_release(cx);
}

static kiln_status chain(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = in[0];
    kiln_tensor *y = kiln_add(cx, kiln_multiply(cx, kiln_exponential(cx, x), x), kiln_sine(cx, x));
    out[0] = kiln_sum(cx, y, KILN_DIMS(1), false);
    return kiln_ctx_status(cx);
}

Test(exe_cost, elementwise_ops_and_reductions_count_per_element) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(10, 20)};
    kiln_cost c = cost_of(cx, chain, &a, 1);
    /* exp and sin per element; multiply, add and the reduction's combine per element. */
    cr_assert_eq(c.transcendentals, 2 * 200);
    cr_assert_eq(c.flops, 3 * 200);
    cr_assert_geq(c.bytes_read, 200 * 4);
    cr_assert_geq(c.bytes_written, 10 * 4);
    kiln_ctx_release(cx);
}

static kiln_status moves(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_transpose(cx, kiln_reverse(cx, in[0], KILN_DIMS(0)), KILN_DIMS(1, 0));
    return kiln_ctx_status(cx);
}

Test(exe_cost, data_movement_costs_bytes_not_flops) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F64, .shape = KILN_SHAPE(6, 7)};
    kiln_cost c = cost_of(cx, moves, &a, 1);
    cr_assert_eq(c.flops, 0);
    cr_assert_eq(c.transcendentals, 0);
    cr_assert_geq(c.bytes_read, 6 * 7 * 8);
    cr_assert_geq(c.bytes_written, 6 * 7 * 8);
    kiln_ctx_release(cx);
}

/* A dimension of 2^62 beside a 0: the sums saturate instead of overflowing (UBSan in CI). */
Test(exe_cost, empty_tensors_with_huge_dimensions_cost_nothing) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(0, (int64_t)1 << 40)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE((int64_t)1 << 40, 0)}};
    kiln_cost c = cost_of(cx, matmul, a, 2);
    cr_assert_eq(c.flops, 0);
    cr_assert_eq(c.bytes_read, 0);
    cr_assert_eq(c.bytes_written, 0);
    kiln_ctx_release(cx);
}

static kiln_status affine_body(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_add(cx, kiln_multiply(cx, in[1], kiln_scalar(cx, 2, KILN_F32)),
                      kiln_scalar(cx, 1, KILN_F32));
    return kiln_ctx_status(cx);
}

static kiln_status ten_steps(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region body = {affine_body, NULL};
    return kiln_fori_loop(cx, 0, 10, in, 1, &body, out);
}

Test(exe_cost, a_fori_loop_counts_its_body_as_often_as_it_runs) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(8)};
    kiln_cost c = cost_of(cx, ten_steps, &a, 1);
    /* per iteration: multiply and add of 8 elements, the counter's add, the condition's
     * compare */
    cr_assert_eq(c.flops, 10 * (8 + 8 + 1 + 1), "%lld flops", (long long)c.flops);
    kiln_ctx_release(cx);
}

/* A body's op reading a value of the function around it (a slot of that block, numbered
 * past the body's own slots): its cost uses that value's type. */
static kiln_tensor *late_weights(kiln_ctx *cx, kiln_tensor *w) {
    for (int i = 0; i < 30; i++)
        w = kiln_tanh(cx, w);
    return w;
}

static kiln_status weights_only(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_add(cx, in[0], late_weights(cx, in[1]));
    return kiln_ctx_status(cx);
}

static kiln_status matmul_body(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    out[0] = kiln_matmul(cx, in[1], u);
    return kiln_ctx_status(cx);
}

static kiln_status matmul_steps(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *w = late_weights(cx, in[1]);
    kiln_region body = {matmul_body, w};
    kiln_tensor *r = NULL;
    kiln_status s = kiln_fori_loop(cx, 0, 10, in, 1, &body, &r);
    if (s != KILN_OK) return s;
    out[0] = kiln_add(cx, r, w);
    return kiln_ctx_status(cx);
}

Test(exe_cost, a_body_op_reading_an_outer_value_costs_by_its_type) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(4, 4)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(4, 4)}};
    kiln_cost outside = cost_of(cx, weights_only, a, 2);
    kiln_cost c = cost_of(cx, matmul_steps, a, 2);
    /* per iteration: a 4x4 by 4x4 product (2 flops per multiply-accumulate), the counter's
     * add, the condition's compare */
    cr_assert_eq(c.flops, outside.flops + 10 * (2 * 4 * 4 * 4 + 1 + 1), "%lld flops, %lld outside",
                 (long long)c.flops, (long long)outside.flops);
    kiln_ctx_release(cx);
}
