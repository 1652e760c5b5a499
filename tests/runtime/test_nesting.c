/* SPDX-License-Identifier: Apache-2.0 */
/* Deep nesting: regions and traces nest up to KILN__MAX_TRACE_DEPTH (128) levels, and every
 * stage (lower, compile, call, print, parse, grad) handles that; one level more, or nesting
 * deeper than a thread's stack allows, is a clear error, never a crash. */
#include <math.h>
#include <stdio.h>

#include "kiln/autodiff.h"
#include "test_util.h"

typedef struct nest_env {
    kiln_tensor *x;
    int left;
} nest_env;

static kiln_status leaf(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)in;
    out[0] = kiln_cosine(cx, ((nest_env *)u)->x);
    return kiln_ctx_status(cx);
}

/* cond(x > 0, <the next level>, cos x), `left` levels deep, sin x innermost. */
static kiln_status nest(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)in;
    nest_env *e = u;
    if (e->left-- <= 0) {
        out[0] = kiln_sine(cx, e->x);
        return kiln_ctx_status(cx);
    }
    kiln_region t = {nest, e}, f = {leaf, e};
    kiln_tensor *p =
        kiln_compare(cx, e->x, kiln_scalar_like(cx, e->x, 0), KILN_CMP_GT, KILN_CMP_DEFAULT);
    return kiln_cond(cx, p, &t, &f, NULL, 0, 1, out);
}

static int depth_of_fn;
static kiln_status nested_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    nest_env e = {in[0], depth_of_fn};
    return nest(cx, NULL, out, &e);
}

static kiln_status lower_nested(kiln_ctx *cx, int depth, kiln_module **m) {
    depth_of_fn = depth;
    kiln_region r = {nested_fn, NULL};
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE_SCALAR};
    return kiln_lower(cx, &r, &a, 1, 1, NULL, m);
}

Test(nesting, the_limit_works_in_every_stage) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = NULL;
    cr_assert_eq(lower_nested(cx, 128, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *x = kiln_scalar(cx, 0.5, KILN_F32), *y = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &y), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_float_eq(kiln_tensor_item(cx, y, 0), sin(0.5), 1e-6);
    /* kiln reads back what it prints */
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text);
    kiln_module *back = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &back), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_string_free(cx, text);
    kiln_module_release(back);
    kiln_exe_release(exe);
    kiln_module_release(m);
    /* its gradient, eagerly */
    depth_of_fn = 128;
    kiln_region r = {nested_fn, NULL};
    kiln_tensor *d = NULL;
    cr_assert_eq(kiln_grad(cx, &r, 1, &x, NULL, &d), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_float_eq(kiln_tensor_item(cx, d, 0), cos(0.5), 1e-6);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(nesting, deeper_is_an_error_however_deep) {
    kiln_ctx *cx = test_ctx();
    const int depths[] = {129, 1000, 100000};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        kiln_module *m = NULL;
        cr_assert_eq(lower_nested(cx, depths[i], &m), KILN_RESOURCE_EXHAUSTED);
        cr_assert_null(m);
        expect_error(cx, KILN_RESOURCE_EXHAUSTED,
                     "kiln_cond: region 1: regions and traces nested deeper than 128 levels");
    }
    kiln_ctx_release(cx);
}

/* g_k(x) = d/dx g_{k-1}(x), g_0 = sin: k kiln_grad calls inside each other. */
static int grads_left;
static kiln_status nested_grad(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    if (grads_left-- <= 0) {
        out[0] = kiln_sine(cx, in[0]);
        return kiln_ctx_status(cx);
    }
    kiln_region r = {nested_grad, NULL};
    return kiln_grad(cx, &r, 1, in, NULL, out);
}

Test(nesting, nested_grads_to_the_limit_and_past_it) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = kiln_scalar(cx, 0.5, KILN_F32), *d = NULL;
    grads_left = 128; /* the 128th derivative of sin is sin */
    cr_assert_eq(nested_grad(cx, &x, &d, NULL), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_float_eq(kiln_tensor_item(cx, d, 0), sin(0.5), 1e-5);
    grads_left = 1000;
    cr_assert_eq(nested_grad(cx, &x, &d, NULL), KILN_RESOURCE_EXHAUSTED);
    expect_error(cx, KILN_RESOURCE_EXHAUSTED, "kiln_grad: regions and traces nested deeper");
    kiln_ctx_release(cx);
}

/* On a small thread stack the same nesting fails clearly before the stack runs out. */
typedef struct stack_job {
    int depth;
    kiln_status status;
    char message[256];
} stack_job;

static void *lower_on_thread(void *u) {
    stack_job *j = u;
    kiln_ctx *cx = NULL;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return NULL;
    kiln_module *m = NULL;
    j->status = lower_nested(cx, j->depth, &m);
    snprintf(j->message, sizeof j->message, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    kiln_ctx_release(cx);
    return NULL;
}

Test(nesting, a_small_thread_stack_is_an_error_not_a_crash) {
    stack_job j = {.depth = 128, .status = KILN_INTERNAL};
    test_run_with_stack(lower_on_thread, &j, 256);
    cr_assert_eq(j.status, KILN_RESOURCE_EXHAUSTED, "%s", j.message);
    cr_assert(strstr(j.message, "nested too deep for this thread's stack") != NULL, "%s",
              j.message);
}
