/* SPDX-License-Identifier: Apache-2.0 */
/* Concatenates written in place (suite `concat_parts`: the cpu backend's plan): when a
 * concatenate's operands are made by ops of its block for it alone, those ops write
 * straight into the result and the concatenate does not run (kiln_exe_print says so). The
 * results are the evaluator's, bit for bit, whether the result is a value of the arena, a
 * result tensor, a donated argument's buffer or a loop's carry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static kiln_tensor *ramp(kiln_ctx *cx, kiln_shape shape, double scale) {
    kiln_tensor *t = kiln_iota(cx, KILN_F32, shape, shape.rank - 1);
    return kiln_sine(cx, kiln_multiply(cx, t, kiln_scalar(cx, scale, KILN_F32)));
}

static kiln_tensor *copy_of(kiln_ctx *cx, kiln_tensor *t) {
    return kiln_tensor_from_host(cx, kiln_tensor_dtype(t), *kiln_tensor_shape(t),
                                 kiln_tensor_data(t), kiln_tensor_nbytes(t));
}

/* Compiles f (argument 0 donated when asked), calls it on a copy of x and runs it eagerly
 * on x: the results must agree bit for bit. Returns the printout (kiln_string_free). */
static char *check(kiln_ctx *cx, kiln_region_fn f, kiln_tensor *x, bool donate) {
    kiln_arg_spec spec = {
        .dtype = kiln_tensor_dtype(x), .shape = *kiln_tensor_shape(x), .donate = donate};
    kiln_region fn = {f, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &spec, 1, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    kiln_tensor *arg = copy_of(cx, x), *got = NULL, *want = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &arg, &got), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(f(cx, &x, &want, NULL), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_nbytes(got), kiln_tensor_nbytes(want));
    cr_assert(memcmp(kiln_tensor_data(got), kiln_tensor_data(want), kiln_tensor_nbytes(got)) == 0,
              "the concatenate written in place computes other bits");
    char *text = kiln_exe_to_string(cx, exe);
    cr_assert(text);
    kiln_exe_release(exe);
    expect_ok(cx);
    return text;
}

static bool written_in_place(const char *text) {
    return strstr(text, "concatenate") &&
           strstr(text, "(in place: its operands' ops wrote into it)");
}

/* [exp(x[1:]) , x[:1] * 3]: a rotation with work on both parts, the function's result. */
static kiln_status rotate(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = in[0];
    int64_t n = kiln_tensor_dim(x, 0);
    kiln_tensor *parts[2] = {
        kiln_exponential(cx, kiln_slice(cx, x, KILN_DIMS(1), KILN_DIMS(n), KILN_DIMS_NONE)),
        kiln_multiply(cx, kiln_slice(cx, x, KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS_NONE),
                      kiln_scalar(cx, 3, KILN_F32))};
    out[0] = kiln_concatenate(cx, parts, 2, 0);
    return kiln_ctx_status(cx);
}

Test(concat_parts, a_result_made_of_its_parts) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = ramp(cx, KILN_SHAPE(1000), 0.01);
    char *text = check(cx, rotate, x, false);
    cr_expect(written_in_place(text), "%s", text);
    cr_expect(strstr(text, "part of a result"), "%s", text);
    kiln_string_free(cx, text);
    kiln_ctx_release(cx);
}

/* The parts read x after the first of them is written: a donated x's buffer must not take
 * the result (it would be overwritten while it is read). */
Test(concat_parts, a_donated_argument_read_by_later_parts_is_not_overwritten) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = ramp(cx, KILN_SHAPE(1000), 0.01);
    char *text = check(cx, rotate, x, true);
    cr_expect(written_in_place(text), "%s", text);
    kiln_string_free(cx, text);
    kiln_ctx_release(cx);
}

/* The concatenate along dimension 1 of [1, n] values, then used by another op: its buffer
 * is in the arena. */
static kiln_status rows(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = in[0];
    kiln_tensor *parts[3] = {kiln_tanh(cx, x), kiln_negate(cx, x), kiln_cosine(cx, x)};
    kiln_tensor *c = kiln_concatenate(cx, parts, 3, 1);
    out[0] = kiln_sum(cx, kiln_multiply(cx, c, c), KILN_DIMS(1), false);
    return kiln_ctx_status(cx);
}

Test(concat_parts, a_value_of_the_arena_made_of_its_parts) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = ramp(cx, KILN_SHAPE(1, 300), 0.02);
    char *text = check(cx, rows, x, false);
    cr_expect(written_in_place(text), "%s", text);
    kiln_string_free(cx, text);
    kiln_ctx_release(cx);
}

/* Along dimension 1 of [2, n]: the parts are not runs of the result's bytes. And an
 * operand used twice: neither is written in place. */
static kiln_status interleaved(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = in[0];
    kiln_tensor *a = kiln_exponential(cx, x);
    kiln_tensor *parts[2] = {a, kiln_negate(cx, x)};
    kiln_tensor *c = kiln_concatenate(cx, parts, 2, 1);
    kiln_tensor *twice[2] = {a, a};
    kiln_tensor *d = kiln_concatenate(cx, twice, 2, 1);
    out[0] = kiln_add(cx, c, d);
    return kiln_ctx_status(cx);
}

Test(concat_parts, parts_that_are_not_runs_of_bytes_or_used_twice_are_copied) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = ramp(cx, KILN_SHAPE(2, 50), 0.05);
    char *text = check(cx, interleaved, x, false);
    cr_expect(!strstr(text, "(in place"), "%s", text);
    kiln_string_free(cx, text);
    kiln_ctx_release(cx);
}

/* A loop's carry made of parts that read the carry: it cannot be updated in place, so it
 * takes two buffers, and the parts are written into the one not being read. */
static kiln_status shift_body(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *parts[1] = {s[1]};
    kiln_tensor *rot[2];
    if (rotate(cx, parts, rot, NULL) != KILN_OK) return kiln_ctx_status(cx);
    r[0] = kiln_multiply(cx, rot[0], kiln_scalar(cx, 0.5, KILN_F32));
    return kiln_ctx_status(cx);
}

static kiln_status shifts(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region body = {shift_body, NULL};
    return kiln_fori_loop(cx, 0, 25, in, 1, &body, out);
}

static kiln_status stencil_body(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *x = s[1];
    int64_t n = kiln_tensor_dim(x, 0);
    kiln_tensor *mid = kiln_multiply(
        cx,
        kiln_add(cx, kiln_slice(cx, x, KILN_DIMS(0), KILN_DIMS(n - 2), KILN_DIMS_NONE),
                 kiln_slice(cx, x, KILN_DIMS(2), KILN_DIMS(n), KILN_DIMS_NONE)),
        kiln_scalar(cx, 0.5, KILN_F32));
    kiln_tensor *parts[3] = {kiln_slice(cx, x, KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS_NONE), mid,
                             kiln_slice(cx, x, KILN_DIMS(n - 1), KILN_DIMS(n), KILN_DIMS_NONE)};
    r[0] = kiln_concatenate(cx, parts, 3, 0);
    return kiln_ctx_status(cx);
}

static kiln_status stencils(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region body = {stencil_body, NULL};
    return kiln_fori_loop(cx, 0, 40, in, 1, &body, out);
}

Test(concat_parts, a_carry_made_of_its_parts_takes_two_buffers) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = ramp(cx, KILN_SHAPE(513), 0.03);
    char *text = check(cx, stencils, x, false);
    cr_expect(written_in_place(text), "%s", text);
    cr_expect(strstr(text, "carries: updated in place, two buffers"), "%s", text);
    kiln_string_free(cx, text);
    text = check(cx, shifts, x, false);
    kiln_string_free(cx, text);
    kiln_ctx_release(cx);
}
