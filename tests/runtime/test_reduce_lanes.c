/* SPDX-License-Identifier: Apache-2.0 */
/* Reduces with a body of their own in compiled executables: a body of exact or basic
 * IEEE elementwise ops runs once per reduced element across all outputs (exe_run.c,
 * reduce_lanes) instead of once per element, and must give what the evaluator's call per
 * element gives eagerly, bit for bit: argmax and argmin (ties and NaN), float arithmetic
 * in the body, constants in the body, several reduced dimensions, several operands; a
 * body with an op outside that set (exp) keeps the call per element. */
#include <math.h>
#include <string.h>

#include "test_util.h"

static uint32_t rng = 0x51ed2705u;

static float next_value(void) {
    static const float pool[] = {0.0f, -0.0f, 1.0f, 2.0f, 2.0f, -1.5f, 0.375f, NAN};
    rng = rng * 1664525u + 1013904223u;
    return pool[(rng >> 16) % 8] + (float)((rng >> 8) % 3) * 0.125f;
}

static kiln_tensor *random_f32(kiln_ctx *cx, kiln_shape shape) {
    return test_f32_generated(cx, shape, next_value);
}

/* Bodies: a * 0.5 + b (arithmetic and a constant); (max, count of b > 1) over two operands;
 * a + exp(b) (an op outside the set: per element). */
static kiln_status half_plus(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, kiln_multiply(cx, a[0], kiln_scalar(cx, 0.5, KILN_F32)), a[1]);
    return kiln_ctx_status(cx);
}

static kiln_status max_and_count(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u; /* a: acc value, acc count, x value, x count */
    r[0] = kiln_maximum(cx, a[0], a[2]);
    kiln_tensor *big = kiln_compare(cx, a[2], kiln_scalar(cx, 1, KILN_F32), KILN_CMP_GT,
                                    KILN_CMP_FLOAT);
    r[1] = kiln_add(cx, a[1], kiln_select(cx, big, a[3], kiln_scalar(cx, 0, KILN_I32)));
    return kiln_ctx_status(cx);
}

static kiln_status plus_exp(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, a[0], kiln_exponential(cx, a[1]));
    return kiln_ctx_status(cx);
}

typedef struct reduce_case {
    int kind; /* 0 argmax, 1 argmin, 2 half_plus, 3 max_and_count, 4 plus_exp */
    kiln_dims dims;
} reduce_case;

static kiln_status run_case(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const reduce_case *c = u;
    kiln_tensor *x = in[0];
    switch (c->kind) {
    case 0: out[0] = kiln_argmax(cx, x, c->dims.v[0], false); break;
    case 1: out[0] = kiln_argmin(cx, x, c->dims.v[0], false); break;
    case 2: {
        kiln_region r = {half_plus, NULL};
        kiln_tensor *init = kiln_scalar(cx, 0.25, KILN_F32);
        return kiln_reduce(cx, &x, &init, 1, c->dims, &r, out);
    }
    case 3: {
        kiln_region r = {max_and_count, NULL};
        kiln_tensor *ones = kiln_ones(cx, KILN_I32, *kiln_tensor_shape(x));
        kiln_tensor *ins[2] = {x, ones};
        kiln_tensor *inits[2] = {kiln_scalar(cx, -INFINITY, KILN_F32),
                                 kiln_scalar(cx, 0, KILN_I32)};
        return kiln_reduce(cx, ins, inits, 2, c->dims, &r, out);
    }
    default: {
        kiln_region r = {plus_exp, NULL};
        kiln_tensor *init = kiln_scalar(cx, 0, KILN_F32);
        return kiln_reduce(cx, &x, &init, 1, c->dims, &r, out);
    }
    }
    return kiln_ctx_status(cx);
}

static void expect_same(const kiln_tensor *a, const kiln_tensor *b, const char *what) {
    cr_assert_not_null(a, "%s: no compiled result", what);
    cr_assert_not_null(b, "%s: no eager result", what);
    cr_assert_eq(kiln_tensor_dtype(a), kiln_tensor_dtype(b), "%s", what);
    cr_assert_eq(kiln_tensor_nbytes(a), kiln_tensor_nbytes(b), "%s", what);
    const unsigned char *x = kiln_tensor_data(a), *y = kiln_tensor_data(b);
    size_t es = kiln_dtype_size(kiln_tensor_dtype(a));
    for (size_t i = 0; i < kiln_tensor_nbytes(a); i += es) {
        bool nan = kiln_tensor_dtype(a) == KILN_F32 && isnan(*(const float *)(x + i)) &&
                   isnan(*(const float *)(y + i));
        cr_assert(nan || memcmp(x + i, y + i, es) == 0, "%s: element %zu differs", what, i / es);
    }
}

Test(reduce_lanes, compiled_bodies_across_outputs_equal_the_eager_call_per_element) {
    kiln_ctx *cx = test_ctx();
    const kiln_shape shape = KILN_SHAPE(6, 37, 13);
    const reduce_case cases[] = {
        {0, KILN_DIMS(2)}, {0, KILN_DIMS(1)}, {1, KILN_DIMS(2)}, {1, KILN_DIMS(0)},
        {2, KILN_DIMS(2)}, {2, KILN_DIMS(0, 2)}, {3, KILN_DIMS(1)}, {3, KILN_DIMS(0, 1)},
        {4, KILN_DIMS(1)}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        kiln_scope_begin(cx);
        kiln_tensor *x = random_f32(cx, shape);
        int n_out = cases[k].kind == 3 ? 2 : 1;
        kiln_tensor *eager[2] = {NULL, NULL}, *compiled[2] = {NULL, NULL};
        cr_assert_eq(run_case(cx, &x, eager, (void *)&cases[k]), KILN_OK, "case %zu: %s", k,
                     kiln_ctx_error_message(cx));
        kiln_arg_spec spec = {.dtype = KILN_F32, .shape = shape, .name = "x"};
        kiln_region fn = {run_case, (void *)&cases[k]};
        kiln_module *m = NULL;
        kiln_exe *exe = NULL;
        cr_assert_eq(kiln_lower(cx, &fn, &spec, 1, n_out, NULL, &m), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
        cr_assert_eq(kiln_exe_call(cx, exe, &x, compiled), KILN_OK, "case %zu: %s", k,
                     kiln_ctx_error_message(cx));
        for (int i = 0; i < n_out; i++) {
            char what[64];
            snprintf(what, sizeof what, "case %zu result %d", k, i);
            expect_same(compiled[i], eager[i], what);
            kiln_tensor_release(compiled[i]);
        }
        kiln_exe_release(exe);
        kiln_module_release(m);
        kiln_scope_end(cx);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}
