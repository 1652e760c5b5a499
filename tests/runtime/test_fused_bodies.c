/* SPDX-License-Identifier: Apache-2.0 */
/* Loop and branch bodies are fused like the entry function (suite `fused`: the cpu
 * backend's plan, not run on the interpreter): the kernels of a body run on
 * the tiled engine each iteration, read values of the function around them as inputs,
 * and compute bit for bit what the same program computes unfused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static kiln_exe *compile(kiln_ctx *cx, kiln_region_fn f, void *user, const kiln_arg_spec *args,
                         int32_t n_args, bool fuse) {
    kiln_region fn = {f, user};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, args, n_args, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_compile_options o = kiln_compile_options_default();
    o.disable_fusion = !fuse;
    o.disable_unrolling = true; /* the loops under test stay loops */
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    return exe;
}

static kiln_tensor *ramp(kiln_ctx *cx, int64_t n, double scale) {
    kiln_tensor *t = kiln_iota(cx, KILN_F32, KILN_SHAPE(n), 0);
    return kiln_sine(cx, kiln_multiply(cx, t, kiln_scalar(cx, scale, KILN_F32)));
}

/* Runs f fused and unfused on args; the results must agree bit for bit. Returns the fused
 * executable's printout (free with kiln_string_free). */
static char *fused_matches_unfused(kiln_ctx *cx, kiln_region_fn f, void *user,
                                   kiln_tensor *const *args, int32_t n_args) {
    kiln_arg_spec specs[4];
    for (int32_t i = 0; i < n_args; i++)
        specs[i] = (kiln_arg_spec){.dtype = kiln_tensor_dtype(args[i]),
                                   .shape = *kiln_tensor_shape(args[i])};
    kiln_exe *fused = compile(cx, f, user, specs, n_args, true);
    kiln_exe *plain = compile(cx, f, user, specs, n_args, false);
    kiln_tensor *a = NULL, *b = NULL;
    cr_assert_eq(kiln_exe_call(cx, fused, args, &a), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_exe_call(cx, plain, args, &b), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_nbytes(a), kiln_tensor_nbytes(b));
    cr_assert(memcmp(kiln_tensor_data(a), kiln_tensor_data(b), kiln_tensor_nbytes(a)) == 0,
              "the fused body computes other bits");
    char *text = kiln_exe_to_string(cx, fused);
    cr_assert(text);
    kiln_exe_release(fused);
    kiln_exe_release(plain);
    return text;
}

static kiln_status heat_body(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = test_heat_step(cx, in[1], 0.1);
    return kiln_ctx_status(cx);
}

static kiln_status heat_loop(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region body = {heat_body, NULL};
    return kiln_fori_loop(cx, 0, 100, in, 1, &body, out);
}

Test(fused, a_loop_body_runs_as_fused_kernels) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = ramp(cx, 300, 0.05);
    char *text = fused_matches_unfused(cx, heat_loop, NULL, &x, 1);
    const char *body = strstr(text, "region 1:");
    cr_assert(body, "the loop's body is not printed:\n%s", text);
    cr_assert(strstr(body, "fused") && strstr(body, "multiply subtract add multiply add"),
              "the body's stencil is not one kernel:\n%s", text);
    kiln_string_free(cx, text);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* The body reads w and b of the function around the loop: they are kernel inputs. */
typedef struct {
    kiln_tensor *w, *b;
} captured;

static kiln_status affine_body(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const captured *c = u;
    out[0] = kiln_tanh(cx, kiln_add(cx, kiln_multiply(cx, in[1], c->w), c->b));
    return kiln_ctx_status(cx);
}

static kiln_status affine_loop(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    captured c = {kiln_exponential(cx, in[1]), kiln_negate(cx, in[2])};
    kiln_region body = {affine_body, &c};
    return kiln_fori_loop(cx, 0, 7, in, 1, &body, out);
}

Test(fused, a_body_reads_values_of_the_function_around_it) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *args[3] = {ramp(cx, 64, 0.3), ramp(cx, 64, 0.7), ramp(cx, 64, 1.1)};
    char *text = fused_matches_unfused(cx, affine_loop, NULL, args, 3);
    const char *body = strstr(text, "region 1:");
    cr_assert(body && strstr(body, "multiply add tanh"), "%s", text);
    kiln_string_free(cx, text);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Branches, and a loop inside a loop's body. */
static kiln_status on_true(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)in;
    kiln_tensor *x = u;
    out[0] = kiln_add(cx, kiln_multiply(cx, x, x), kiln_scalar(cx, 1, KILN_F32));
    return kiln_ctx_status(cx);
}

static kiln_status on_false(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)in;
    kiln_tensor *x = u;
    out[0] = kiln_subtract(cx, kiln_exponential(cx, x), x);
    return kiln_ctx_status(cx);
}

static kiln_status inner_body(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = in[1];
    kiln_tensor *pred = kiln_compare(cx, kiln_sum(cx, x, KILN_DIMS_NONE, false),
                                     kiln_scalar(cx, 0, KILN_F32), KILN_CMP_GT, KILN_CMP_DEFAULT);
    kiln_region t = {on_true, x}, f = {on_false, x};
    kiln_tensor *y = NULL;
    kiln_status s = kiln_cond(cx, pred, &t, &f, NULL, 0, 1, &y);
    if (s != KILN_OK) return s;
    out[0] = kiln_multiply(cx, kiln_tanh(cx, y), kiln_scalar(cx, 0.5, KILN_F32));
    return kiln_ctx_status(cx);
}

static kiln_status outer_body(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region inner = {inner_body, NULL};
    kiln_tensor *x = kiln_add(cx, in[1], kiln_scalar(cx, 0.25, KILN_F32));
    return kiln_fori_loop(cx, 0, 3, &x, 1, &inner, out);
}

static kiln_status nested(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region body = {outer_body, NULL};
    return kiln_fori_loop(cx, 0, 4, in, 1, &body, out);
}

Test(fused, branches_and_nested_loops_fuse_too) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = ramp(cx, 100, 0.2);
    char *text = fused_matches_unfused(cx, nested, NULL, &x, 1);
    if (getenv("SHOW")) fputs(text, stderr);
    cr_assert(strstr(text, "        op 0: fused") || strstr(text, "      op 0: fused"),
              "no kernel inside the nested bodies:\n%s", text);
    kiln_string_free(cx, text);
    expect_ok(cx);
    kiln_ctx_release(cx);
}
