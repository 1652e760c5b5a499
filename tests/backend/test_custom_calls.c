/* SPDX-License-Identifier: Apache-2.0 */
/* The custom-call registry (kiln/custom_call.h): functions called by programs in every
 * backend, their typed attributes, side effects, and every error, each naming the target. */
#include <stdatomic.h>
#include <string.h>

#include "test_util.h"

typedef struct counter {
    atomic_int calls;
} counter;

/* y = k * x + n (f32), with k, n, flag and name read from the attributes, checked. */
static kiln_status scale(kiln_ctx *cx, const kiln_custom_call_frame *call, void *user) {
    counter *c = user;
    atomic_fetch_add(&c->calls, 1);
    double k;
    int64_t n;
    bool flag;
    char name[8];
    if (kiln_custom_call_attr_f64(cx, call, "k", &k) != KILN_OK ||
        kiln_custom_call_attr_i64(cx, call, "n", &n) != KILN_OK ||
        kiln_custom_call_attr_bool(cx, call, "flag", &flag) != KILN_OK ||
        kiln_custom_call_attr_string(cx, call, "name", name, sizeof name, NULL) != KILN_OK)
        return kiln_ctx_status(cx);
    if (!flag || strcmp(name, "a\"b") != 0 || call->api_version != 4 || call->n_operands != 1 ||
        call->n_results != 1 || call->operands[0].dtype != KILN_F32)
        return kiln_ctx_set_error(cx, KILN_INTERNAL, "unexpected call");
    const float *x = call->operands[0].data;
    float *y = call->results[0].data;
    for (size_t i = 0; i < call->results[0].nbytes / sizeof *y; i++)
        y[i] = (float)(k * x[i] + (double)n);
    return KILN_OK;
}

static const char scale_program[] =
    "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  %y = stablehlo.custom_call @kiln.test.scale(%x) {api_version = 4 : i32, "
    "mhlo.backend_config = {flag = true, k = 2.500000e+00 : f32, n = 3 : i64, name = "
    "\"a\\\"b\"}} : (tensor<4xf32>) -> tensor<4xf32>\n"
    "  %z = stablehlo.add %y, %y : tensor<4xf32>\n"
    "  return %z : tensor<4xf32>\n}\n";

static kiln_status call1(kiln_ctx *cx, kiln_exe *exe, float *y) {
    const float x[4] = {1, -2, 0.5f, 4};
    kiln_tensor *arg = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), x, sizeof x);
    kiln_tensor *res = NULL;
    kiln_status s = kiln_exe_call(cx, exe, &arg, &res);
    if (s == KILN_OK && y) memcpy(y, kiln_tensor_data(res), 4 * sizeof *y);
    kiln_tensor_release(arg);
    kiln_tensor_release(res);
    return s;
}

Test(custom_calls, a_registered_function_runs_in_every_backend) {
    const char *backends[TEST_MAX_BACKENDS];
    int nb = test_backends(backends, TEST_MAX_BACKENDS);
    kiln_ctx *cx = test_ctx();
    counter c = {0};
    cr_assert_eq(kiln_custom_call_register(cx, "kiln.test.scale", scale, &c), KILN_OK);
    cr_assert(kiln_custom_call_is_registered("kiln.test.scale"));
    for (int b = 0; b < nb; b++) {
        kiln_exe *exe = NULL;
        cr_assert_eq(test_compile_text(cx, scale_program, backends[b], true, &exe), KILN_OK,
                     "%s: %s", backends[b], kiln_ctx_error_message(cx));
        float y[4];
        int before = atomic_load(&c.calls);
        cr_assert_eq(call1(cx, exe, y), KILN_OK, "%s: %s", backends[b], kiln_ctx_error_message(cx));
        cr_assert_eq(atomic_load(&c.calls), before + 1, "%s", backends[b]);
        const float want[4] = {11, -4, 8.5f, 26};
        for (int i = 0; i < 4; i++)
            cr_assert_eq(y[i], want[i], "%s: element %d is %g", backends[b], i, y[i]);
        kiln_exe_release(exe);
    }
    cr_assert_eq(kiln_custom_call_unregister(cx, "kiln.test.scale"), KILN_OK);
    cr_assert(!kiln_custom_call_is_registered("kiln.test.scale"));
    kiln_ctx_release(cx);
}

/* api_version 2: a string backend_config, and the call's own attributes. */
static kiln_status configured(kiln_ctx *cx, const kiln_custom_call_frame *call, void *user) {
    (void)user;
    char config[16];
    size_t len;
    int64_t k;
    if (kiln_custom_call_backend_config(cx, call, config, sizeof config, &len) != KILN_OK ||
        kiln_custom_call_attr_i64(cx, call, "k", &k) != KILN_OK)
        return kiln_ctx_status(cx);
    if (strcmp(config, "hello") != 0 || len != 5 || call->api_version != 2)
        return kiln_ctx_set_error(cx, KILN_INTERNAL, "config '%s' (%zu)", config, len);
    float *y = call->results[0].data;
    for (int i = 0; i < 4; i++)
        y[i] = (float)k;
    return KILN_OK;
}

Test(custom_calls, a_string_backend_config_and_the_calls_own_attributes) {
    kiln_ctx *cx = test_ctx();
    static const char text[] =
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %y = stablehlo.custom_call @kiln.test.cfg(%x) {api_version = 2 : i32, "
        "backend_config = \"hello\", k = 7 : i64} : (tensor<4xf32>) -> tensor<4xf32>\n"
        "  return %y : tensor<4xf32>\n}\n";
    cr_assert_eq(kiln_custom_call_register(cx, "kiln.test.cfg", configured, NULL), KILN_OK);
    kiln_exe *exe = NULL;
    cr_assert_eq(test_compile_text(cx, text, NULL, true, &exe), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    float y[4];
    cr_assert_eq(call1(cx, exe, y), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert(y[0] == 7 && y[3] == 7);
    kiln_exe_release(exe);
    kiln_custom_call_unregister(cx, "kiln.test.cfg");
    kiln_ctx_release(cx);
}

static kiln_status count_only(kiln_ctx *cx, const kiln_custom_call_frame *call, void *user) {
    (void)cx;
    atomic_fetch_add(&((counter *)user)->calls, 1);
    memset(call->results[0].data, 0, call->results[0].nbytes);
    return KILN_OK;
}

/* A call with side effects runs though its result is unused; one without is removed. */
Test(custom_calls, side_effects_keep_a_call_whose_result_is_unused) {
    kiln_ctx *cx = test_ctx();
    counter c = {0};
    cr_assert_eq(kiln_custom_call_register(cx, "kiln.test.count", count_only, &c), KILN_OK);
    static const char text[] =
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %a = stablehlo.custom_call @kiln.test.count(%x) {has_side_effect = true} : "
        "(tensor<4xf32>) -> tensor<4xf32>\n"
        "  %b = stablehlo.custom_call @kiln.test.count(%x) : (tensor<4xf32>) -> "
        "tensor<4xf32>\n"
        "  return %x : tensor<4xf32>\n}\n";
    const char *backends[TEST_MAX_BACKENDS];
    int nb = test_backends(backends, TEST_MAX_BACKENDS);
    for (int b = 0; b < nb; b++) {
        kiln_exe *exe = NULL;
        cr_assert_eq(test_compile_text(cx, text, backends[b], true, &exe), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        int before = atomic_load(&c.calls);
        cr_assert_eq(call1(cx, exe, NULL), KILN_OK, "%s", kiln_ctx_error_message(cx));
        cr_assert_eq(atomic_load(&c.calls), before + 1, "%s: %d calls", backends[b],
                     atomic_load(&c.calls) - before);
        kiln_exe_release(exe);
    }
    kiln_custom_call_unregister(cx, "kiln.test.count");
    kiln_ctx_release(cx);
}

static kiln_status fails_with_message(kiln_ctx *cx, const kiln_custom_call_frame *call,
                                      void *user) {
    (void)call, (void)user;
    return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION, "the matrix is singular");
}

static kiln_status fails_silently(kiln_ctx *cx, const kiln_custom_call_frame *call, void *user) {
    (void)cx, (void)call, (void)user;
    return KILN_INTERNAL;
}

static kiln_status other(kiln_ctx *cx, const kiln_custom_call_frame *call, void *user) {
    (void)cx, (void)call, (void)user;
    return KILN_OK;
}

Test(custom_calls, every_error_names_the_target) {
    kiln_ctx *cx = test_ctx();
    counter c = {0};
    /* not registered: refused at compile time */
    kiln_exe *exe = NULL;
    cr_assert_neq(test_compile_text(cx, scale_program, NULL, true, &exe), KILN_OK);
    expect_error(cx, KILN_UNIMPLEMENTED,
                 "backend 'cpu' cannot run stablehlo.custom_call @kiln.test.scale (@main, op 0): "
                 "no function is registered for the target (kiln_custom_call_register)");
    /* unregistered after compiling: refused when run, and the executable stays good */
    cr_assert_eq(kiln_custom_call_register(cx, "kiln.test.scale", scale, &c), KILN_OK);
    cr_assert_eq(test_compile_text(cx, scale_program, NULL, true, &exe), KILN_OK);
    cr_assert_eq(kiln_custom_call_unregister(cx, "kiln.test.scale"), KILN_OK);
    cr_assert_neq(call1(cx, exe, NULL), KILN_OK);
    expect_error(cx, KILN_UNIMPLEMENTED,
                 "stablehlo.custom_call @kiln.test.scale: no function is registered");
    cr_assert_eq(kiln_custom_call_register(cx, "kiln.test.scale", scale, &c), KILN_OK);
    cr_assert_eq(call1(cx, exe, NULL), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_exe_release(exe);
    /* registering */
    cr_assert_eq(kiln_custom_call_register(cx, "kiln.test.scale", scale, &c), KILN_OK);
    cr_assert_eq(kiln_custom_call_register(cx, "kiln.test.scale", other, NULL),
                 KILN_ALREADY_EXISTS);
    expect_error(cx, KILN_ALREADY_EXISTS, "another function is registered for @kiln.test.scale");
    cr_assert_eq(kiln_custom_call_register(cx, "", other, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_custom_call_register: target is empty");
    cr_assert_eq(kiln_custom_call_register(cx, NULL, other, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_custom_call_register: target is NULL");
    cr_assert_eq(kiln_custom_call_register(cx, "kiln.test.x", NULL, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_custom_call_register: fn is NULL");
    cr_assert_eq(kiln_custom_call_unregister(cx, "kiln.test.none"), KILN_NOT_FOUND);
    expect_error(cx, KILN_NOT_FOUND, "no function is registered for @kiln.test.none");
    kiln_custom_call_unregister(cx, "kiln.test.scale");
    /* the function's own failures, named */
    static const char fails[] =
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %y = stablehlo.custom_call @kiln.test.fail(%x) : (tensor<4xf32>) -> tensor<4xf32>\n"
        "  return %y : tensor<4xf32>\n}\n";
    cr_assert_eq(kiln_custom_call_register(cx, "kiln.test.fail", fails_with_message, NULL),
                 KILN_OK);
    cr_assert_eq(test_compile_text(cx, fails, NULL, true, &exe), KILN_OK);
    cr_assert_neq(call1(cx, exe, NULL), KILN_OK);
    expect_error(cx, KILN_FAILED_PRECONDITION,
                 "stablehlo.custom_call @kiln.test.fail: the matrix is singular");
    kiln_custom_call_unregister(cx, "kiln.test.fail");
    cr_assert_eq(kiln_custom_call_register(cx, "kiln.test.fail", fails_silently, NULL), KILN_OK);
    cr_assert_neq(call1(cx, exe, NULL), KILN_OK);
    expect_error(cx, KILN_INTERNAL,
                 "stablehlo.custom_call @kiln.test.fail: the function "
                 "returned INTERNAL");
    kiln_exe_release(exe);
    kiln_custom_call_unregister(cx, "kiln.test.fail");
    kiln_ctx_release(cx);
}

/* The attribute accessors' errors, from inside a call. */
static kiln_status bad_attrs(kiln_ctx *cx, const kiln_custom_call_frame *call, void *user) {
    (void)user;
    int64_t i;
    double d;
    bool b;
    char s[4];
    size_t len;
#define EXPECT(expr, status, fragment)                                            \
    do {                                                                          \
        if ((expr) != (status) || !strstr(kiln_ctx_error_message(cx), fragment))  \
            return kiln_ctx_set_error(cx, KILN_INTERNAL, "%s gave \"%s\"", #expr, \
                                      kiln_ctx_error_message(cx));                \
        kiln_ctx_clear_error(cx);                                                 \
    } while (0)
    EXPECT(kiln_custom_call_attr_i64(cx, call, "missing", &i), KILN_NOT_FOUND,
           "kiln_custom_call_attr_i64: @kiln.test.attrs has no attribute 'missing'");
    EXPECT(kiln_custom_call_attr_i64(cx, call, "f", &i), KILN_INVALID_ARGUMENT,
           "attribute 'f' is 1.500000e+00 : f32; expected an integer");
    EXPECT(kiln_custom_call_attr_bool(cx, call, "i", &b), KILN_INVALID_ARGUMENT,
           "attribute 'i' is 5 : i64; expected true, false, 0 or 1");
    EXPECT(kiln_custom_call_attr_f64(cx, call, "s", &d), KILN_INVALID_ARGUMENT,
           "attribute 's' is \"long\"; expected a number");
    EXPECT(kiln_custom_call_attr_string(cx, call, "i", s, sizeof s, &len), KILN_INVALID_ARGUMENT,
           "expected a string");
    EXPECT(kiln_custom_call_attr_string(cx, call, "s", s, sizeof s, &len), KILN_OUT_OF_RANGE,
           "@kiln.test.attrs's s has 4 bytes; buf holds 3");
    if (strcmp(s, "lon") != 0 || len != 4) return kiln_ctx_set_error(cx, KILN_INTERNAL, "s");
    /* what converts: an integer as a float, a boolean as an integer */
    if (kiln_custom_call_attr_f64(cx, call, "i", &d) != KILN_OK || d != 5 ||
        kiln_custom_call_attr_i64(cx, call, "t", &i) != KILN_OK || i != 1 ||
        kiln_custom_call_attr_f64(cx, call, "f", &d) != KILN_OK || d != 1.5)
        return kiln_ctx_set_error(cx, KILN_INTERNAL, "conversions");
#undef EXPECT
    memset(call->results[0].data, 0, call->results[0].nbytes);
    return KILN_OK;
}

Test(custom_calls, attribute_accessors_refuse_what_does_not_fit) {
    kiln_ctx *cx = test_ctx();
    static const char text[] =
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %y = stablehlo.custom_call @kiln.test.attrs(%x) {api_version = 4 : i32, "
        "mhlo.backend_config = {f = 1.500000e+00 : f32, i = 5 : i64, s = \"long\", t = true}} "
        ": (tensor<4xf32>) -> tensor<4xf32>\n"
        "  return %y : tensor<4xf32>\n}\n";
    cr_assert_eq(kiln_custom_call_register(cx, "kiln.test.attrs", bad_attrs, NULL), KILN_OK);
    kiln_exe *exe = NULL;
    cr_assert_eq(test_compile_text(cx, text, NULL, true, &exe), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_eq(call1(cx, exe, NULL), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_exe_release(exe);
    kiln_custom_call_unregister(cx, "kiln.test.attrs");
    kiln_ctx_release(cx);
}

/* y = k x + 1 (f32), k from the backend_config dictionary */
static kiln_status axpy(kiln_ctx *cx, const kiln_custom_call_frame *call, void *user) {
    (void)user;
    double k;
    if (kiln_custom_call_attr_f64(cx, call, "k", &k) != KILN_OK) return kiln_ctx_status(cx);
    const float *x = call->operands[0].data;
    float *y = call->results[0].data;
    for (size_t i = 0; i < call->results[0].nbytes / sizeof *y; i++)
        y[i] = (float)(k * x[i] + 1);
    return KILN_OK;
}

static kiln_status traced_axpy(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_dtype dt = KILN_F32;
    kiln_shape s = *kiln_tensor_shape(in[0]);
    kiln_tensor *y = NULL;
    if (kiln_custom_call(cx, "kiln.test.axpy", in, 1, &dt, &s, 1, "{k = 3.0 : f32}", false, &y) !=
        KILN_OK)
        return kiln_ctx_status(cx);
    out[0] = kiln_add(cx, y, y);
    kiln_tensor_release(y);
    return kiln_ctx_status(cx);
}

/* kiln_custom_call from C: eagerly, and traced into a program that compiles and runs it. */
Test(custom_calls, called_from_c_eagerly_and_traced) {
    kiln_ctx *cx = test_ctx();
    cr_assert_eq(kiln_custom_call_register(cx, "kiln.test.axpy", axpy, NULL), KILN_OK);
    const float x[3] = {1, -2, 0.5f};
    kiln_tensor *in = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(3), x, sizeof x);
    kiln_dtype dt = KILN_F32;
    kiln_shape s = KILN_SHAPE(3);
    kiln_tensor *y = NULL;
    cr_assert_eq(
        kiln_custom_call(cx, "kiln.test.axpy", &in, 1, &dt, &s, 1, "{k = 2.0 : f32}", false, &y),
        KILN_OK, "%s", kiln_ctx_error_message(cx));
    const float *v = kiln_tensor_data(y);
    cr_assert(v[0] == 3 && v[1] == -3 && v[2] == 2, "%g %g %g", v[0], v[1], v[2]);
    kiln_tensor_release(y);
    /* traced: the module holds the call; the executable runs it */
    kiln_arg_spec spec = {.dtype = KILN_F32, .shape = KILN_SHAPE(3)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &(kiln_region){traced_axpy, NULL}, &spec, 1, 1, NULL, &m), KILN_OK,
                 "%s", kiln_ctx_error_message(cx));
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text, "%s", kiln_ctx_error_message(cx));
    cr_assert(strstr(text, "stablehlo.custom_call @kiln.test.axpy(%arg0) {api_version = 4 : i32, "
                           "mhlo.backend_config = {k = 3.0 : f32}}"),
              "%s", text);
    kiln_string_free(cx, text);
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    cr_assert_eq(kiln_exe_call(cx, exe, &in, &y), KILN_OK, "%s", kiln_ctx_error_message(cx));
    v = kiln_tensor_data(y);
    cr_assert(v[0] == 8 && v[1] == -10 && v[2] == 5, "%g %g %g", v[0], v[1], v[2]);
    kiln_tensor_release(y);
    kiln_exe_release(exe);
    /* the errors */
    cr_assert_neq(kiln_custom_call(cx, "", &in, 1, &dt, &s, 1, NULL, false, &y), KILN_OK);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_custom_call: target is empty");
    cr_assert_neq(kiln_custom_call(cx, "kiln.test.axpy", &in, 1, &dt, &s, 1, "k = 2", false, &y),
                  KILN_OK);
    expect_error(cx, KILN_INVALID_ARGUMENT, "backend_config is not an attribute dictionary");
    cr_assert_neq(kiln_custom_call(cx, "kiln.test.axpy", &in, 1, NULL, &s, 1, NULL, false, &y),
                  KILN_OK);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_results is 1");
    cr_assert_neq(kiln_custom_call(cx, "kiln.test.none", &in, 1, &dt, &s, 1, NULL, false, &y),
                  KILN_OK);
    expect_error(cx, KILN_UNIMPLEMENTED, "stablehlo.custom_call @kiln.test.none: no function");
    kiln_tensor_release(in);
    kiln_custom_call_unregister(cx, "kiln.test.axpy");
    kiln_ctx_release(cx);
}
