/* SPDX-License-Identifier: Apache-2.0 */
/* Loops of a few iterations are unrolled by kiln_compile (src/passes/unroll.c): no loop is
 * left in the executable, and it computes what the loop computes, bit for bit, and what the
 * evaluator computes; disable_unrolling keeps the loop. Longer loops stay loops. */
#include <string.h>

#include "test_util.h"

typedef struct {
    int steps;
} loop_spec;

/* acc = i * acc + y for i in [0, steps): the EMLX loop. */
static kiln_status emlx_body(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    kiln_tensor *y = u;
    kiln_tensor *i = kiln_convert(cx, in[0], KILN_F32);
    out[0] = kiln_add(cx, kiln_multiply(cx, i, in[1]), y);
    return kiln_ctx_status(cx);
}

static kiln_status emlx(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const loop_spec *spec = u;
    kiln_region body = {emlx_body, in[1]};
    return kiln_fori_loop(cx, 0, spec->steps, in, 1, &body, out);
}

/* Three steps of a loop inside each of four steps of another. */
static kiln_status inner_body(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_add(cx, kiln_tanh(cx, in[1]), kiln_scalar(cx, 0.25, KILN_F32));
    return kiln_ctx_status(cx);
}

static kiln_status outer_body(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region inner = {inner_body, NULL};
    kiln_tensor *x = kiln_multiply(cx, in[1], kiln_scalar(cx, 0.5, KILN_F32));
    return kiln_fori_loop(cx, 0, 3, &x, 1, &inner, out);
}

static kiln_status nested(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region body = {outer_body, NULL};
    return kiln_fori_loop(cx, 0, 4, in, 1, &body, out);
}

static kiln_exe *compile(kiln_ctx *cx, kiln_region_fn f, void *user, int32_t n_args,
                         bool keep_loops) {
    kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10)},
                             {.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10)}};
    kiln_region fn = {f, user};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, args, n_args, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_compile_options o = kiln_compile_options_default();
    o.disable_unrolling = keep_loops;
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    return exe;
}

static bool has_loop(kiln_ctx *cx, const kiln_exe *exe) {
    char *text = kiln_exe_to_string(cx, exe);
    cr_assert(text);
    bool loop = strstr(text, "while") != NULL;
    kiln_string_free(cx, text);
    return loop;
}

static kiln_tensor *ramp(kiln_ctx *cx, double scale) {
    kiln_tensor *t = kiln_iota(cx, KILN_F32, KILN_SHAPE(10, 10), 1);
    return kiln_sine(cx, kiln_multiply(cx, t, kiln_scalar(cx, scale, KILN_F32)));
}

static void expect_same_bits(kiln_tensor *a, kiln_tensor *b, const char *what) {
    cr_assert_eq(kiln_tensor_nbytes(a), kiln_tensor_nbytes(b), "%s", what);
    cr_assert(memcmp(kiln_tensor_data(a), kiln_tensor_data(b), kiln_tensor_nbytes(a)) == 0,
              "%s: other bits", what);
}

/* Unrolled, kept as a loop, and eager: the same bits; returns whether the default compile
 * left a loop. */
static bool unrolled_matches(kiln_ctx *cx, kiln_region_fn f, void *user, int32_t n_args) {
    kiln_tensor *args[2] = {ramp(cx, 0.1), ramp(cx, 0.3)};
    kiln_exe *unrolled = compile(cx, f, user, n_args, false);
    kiln_exe *looped = compile(cx, f, user, n_args, true);
    cr_assert(has_loop(cx, looped), "disable_unrolling left no loop");
    kiln_tensor *a = NULL, *b = NULL, *want = NULL;
    cr_assert_eq(kiln_exe_call(cx, unrolled, args, &a), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_exe_call(cx, looped, args, &b), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(f(cx, args, &want, user), KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_same_bits(a, b, "unrolled against the loop");
    expect_same_bits(a, want, "unrolled against the evaluator");
    bool loop = has_loop(cx, unrolled);
    kiln_exe_release(unrolled);
    kiln_exe_release(looped);
    expect_ok(cx);
    return loop;
}

Test(unroll, ten_steps_leave_no_loop) {
    kiln_ctx *cx = test_ctx();
    loop_spec spec = {10};
    cr_expect(!unrolled_matches(cx, emlx, &spec, 2), "10 steps were not unrolled");
    kiln_ctx_release(cx);
}

Test(unroll, seventeen_steps_stay_a_loop) {
    kiln_ctx *cx = test_ctx();
    loop_spec spec = {17};
    cr_expect(unrolled_matches(cx, emlx, &spec, 2), "17 steps were unrolled");
    kiln_ctx_release(cx);
}

Test(unroll, nested_loops_unroll_inside_out) {
    kiln_ctx *cx = test_ctx();
    cr_expect(!unrolled_matches(cx, nested, NULL, 1), "a loop is left");
    kiln_ctx_release(cx);
}

Test(unroll, no_steps_return_the_inits) {
    kiln_ctx *cx = test_ctx();
    loop_spec spec = {0};
    cr_expect(!unrolled_matches(cx, emlx, &spec, 2), "a loop is left");
    kiln_ctx_release(cx);
}
