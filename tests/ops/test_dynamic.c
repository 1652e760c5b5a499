/* SPDX-License-Identifier: Apache-2.0 */
/* The dynamic-shape ops and get_dimension_size run: with shape operands known only when
 * the program runs (every backend runs their static forms' kernels), with constant ones
 * (canonicalize makes them their static ops), and with values that disagree with the
 * declared types (refused by name when the op runs). The text forms are
 * tests/ir/test_dynamic_text.c; the interpreter's conformance cases run in both modes. */
#include <string.h>

#include "op_cases.h"
#include "passes/passes.h"
#include "test_util.h"

/* The spec's examples (stablehlo/tests/interpret), their shape operands arguments. */
static const char program[] =
    "func.func @main(%x: tensor<3x1xi64>, %dims: tensor<3xi64>, %flat: tensor<1xi32>, "
    "%m: tensor<5x4xi64>, %v: tensor<i64>, %lo: tensor<2xi64>, %hi: tensor<2xi64>, "
    "%in: tensor<2xi64>, %g: tensor<3x4x2xi64>, %idx: tensor<2x3x2xi64>, %sizes: tensor<3xi64>, "
    "%l: tensor<1x4x4x1xi64>, %r: tensor<3x3x1x1xi64>, %pad: tensor<2x2xi64>, "
    "%shape: tensor<2xi64>) -> (tensor<3x2x2xi64>, tensor<6xi64>, tensor<7x5xi64>, "
    "tensor<2x3x2x2xi64>, tensor<1x2x2x1xi64>, tensor<3x4xi64>, tensor<i32>) {\n"
    "  %0 = stablehlo.dynamic_broadcast_in_dim %x, %dims, dims = [0, 2] "
    "{known_expanding_dimensions = array<i64: 1>, known_nonexpanding_dimensions = "
    "array<i64: 0>} : (tensor<3x1xi64>, tensor<3xi64>) -> tensor<3x2x2xi64>\n"
    "  %t = stablehlo.reshape %x : (tensor<3x1xi64>) -> tensor<1x3xi64>\n"
    "  %c = stablehlo.concatenate %t, %t, dim = 1 : (tensor<1x3xi64>, tensor<1x3xi64>) -> "
    "tensor<1x6xi64>\n"
    "  %1 = stablehlo.dynamic_reshape %c, %flat : (tensor<1x6xi64>, tensor<1xi32>) -> "
    "tensor<6xi64>\n"
    "  %2 = stablehlo.dynamic_pad %m, %v, %lo, %hi, %in : (tensor<5x4xi64>, tensor<i64>, "
    "tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<7x5xi64>\n"
    "  %3 = \"stablehlo.dynamic_gather\"(%g, %idx, %sizes) {dimension_numbers = "
    "#stablehlo.gather<offset_dims = [2, 3], collapsed_slice_dims = [0], start_index_map = "
    "[1, 0], index_vector_dim = 2>, indices_are_sorted = false} : (tensor<3x4x2xi64>, "
    "tensor<2x3x2xi64>, tensor<3xi64>) -> tensor<2x3x2x2xi64>\n"
    "  %4 = \"stablehlo.dynamic_conv\"(%l, %r, %pad) {window_strides = array<i64: 4, 4>, "
    "lhs_dilation = array<i64: 2, 2>, rhs_dilation = array<i64: 1, 1>, window_reversal = "
    "array<i1: false, false>, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, "
    "o]->[b, 0, 1, f]>, batch_group_count = 1 : i64, feature_group_count = 1 : i64} : "
    "(tensor<1x4x4x1xi64>, tensor<3x3x1x1xi64>, tensor<2x2xi64>) -> tensor<1x2x2x1xi64>\n"
    "  %5 = stablehlo.dynamic_iota %shape, dim = 1 : (tensor<2xi64>) -> tensor<3x4xi64>\n"
    "  %6 = stablehlo.get_dimension_size %m, dim = 1 : (tensor<5x4xi64>) -> tensor<i32>\n"
    "  return %0, %1, %2, %3, %4, %5, %6 : tensor<3x2x2xi64>, tensor<6xi64>, tensor<7x5xi64>, "
    "tensor<2x3x2x2xi64>, tensor<1x2x2x1xi64>, tensor<3x4xi64>, tensor<i32>\n}\n";

enum { N_ARGS = 15, N_RESULTS = 7 };

typedef struct arg_values {
    kiln_dtype dtype;
    kiln_shape shape;
    int64_t v[32];
} arg_values;

/* The spec examples' operands; `bad` spoils shape operand `bad` (0: none) as the test
 * says. */
static void make_args(kiln_ctx *cx, kiln_tensor **args, const arg_values *over, int n_over) {
    arg_values a[N_ARGS] = {
        {KILN_I64, KILN_SHAPE(3, 1), {1, 2, 3}},
        {KILN_I64, KILN_SHAPE(3), {3, 2, 2}},
        {KILN_I32, KILN_SHAPE(1), {6}},
        {KILN_I64, KILN_SHAPE(5, 4), {0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 0, 0, 0, 0, 0}},
        {KILN_I64, KILN_SHAPE_SCALAR, {-1}},
        {KILN_I64, KILN_SHAPE(2), {1, -1}},
        {KILN_I64, KILN_SHAPE(2), {1, -1}},
        {KILN_I64, KILN_SHAPE(2), {0, 1}},
        {KILN_I64, KILN_SHAPE(3, 4, 2), {0}},
        {KILN_I64, KILN_SHAPE(2, 3, 2), {0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9}},
        {KILN_I64, KILN_SHAPE(3), {1, 2, 2}},
        {KILN_I64,
         KILN_SHAPE(1, 4, 4, 1),
         {1, 2, 5, 6, 3, 4, 7, 8, 10, 11, 14, 15, 12, 13, 16, 17}},
        {KILN_I64, KILN_SHAPE(3, 3, 1, 1), {1, 1, 1, 1, 1, 1, 1, 1, 1}},
        {KILN_I64, KILN_SHAPE(2, 2), {1, 1, 1, 1}},
        {KILN_I64, KILN_SHAPE(2), {3, 4}},
    };
    for (int i = 0; i < 24; i++)
        a[8].v[i] = i + 1;
    for (int k = 0; k < n_over; k++)
        for (int i = 0; i < N_ARGS; i++)
            if ((int)over[k].dtype == (int)KILN_DTYPE_COUNT + i)
                memcpy(a[i].v, over[k].v, sizeof a[i].v);
    for (int i = 0; i < N_ARGS; i++) {
        int64_t n = 1;
        for (int32_t d = 0; d < a[i].shape.rank; d++)
            n *= a[i].shape.dims[d];
        int32_t i32[32];
        for (int64_t e = 0; e < n; e++)
            i32[e] = (int32_t)a[i].v[e];
        const void *data = a[i].dtype == KILN_I32 ? (const void *)i32 : (const void *)a[i].v;
        size_t size = (size_t)n * (a[i].dtype == KILN_I32 ? 4 : 8);
        args[i] = kiln_tensor_from_host(cx, a[i].dtype, a[i].shape, data, size);
    }
    expect_ok(cx);
}

/* Replace argument i's values: {KILN_DTYPE_COUNT + i, {0}, {values...}}. */
#define ARG(i, ...)                                                              \
    {                                                                            \
        (kiln_dtype)(KILN_DTYPE_COUNT + (i)), KILN_SHAPE_SCALAR, { __VA_ARGS__ } \
    }

static kiln_exe *compile_text(kiln_ctx *cx, const char *text, const char *backend) {
    kiln_exe *exe = NULL;
    cr_assert_eq(test_compile_text(cx, text, backend, true, &exe), KILN_OK, "%s: %s", backend,
                 kiln_ctx_error_message(cx));
    return exe;
}

static void expect_i64(const kiln_tensor *t, const int64_t *want, int64_t n, const char *what) {
    cr_assert_eq(kiln_tensor_numel(t), n, "%s: %lld elements", what,
                 (long long)kiln_tensor_numel(t));
    const int64_t *got = kiln_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s: element %lld is %lld; expected %lld", what, (long long)i,
                     (long long)got[i], (long long)want[i]);
}

static void expect_spec_results(kiln_tensor **out, const char *backend) {
    static const int64_t broadcast[12] = {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
    static const int64_t reshaped[6] = {1, 2, 3, 1, 2, 3};
    static const int64_t padded[35] = {-1, -1, -1, -1, -1, -1, 0,  -1, 0,  -1, -1, 1,
                                       -1, 2,  -1, -1, 3,  -1, 4,  -1, -1, 5,  -1, 6,
                                       -1, -1, 0,  -1, 0,  -1, -1, -1, -1, -1, -1};
    static const int64_t gathered[24] = {1, 2,  3,  4,  3,  4,  5,  6,  13, 14, 15, 16,
                                         9, 10, 11, 12, 11, 12, 13, 14, 17, 18, 19, 20};
    static const int64_t conv[4] = {1, 5, 10, 14};
    static const int64_t iota[12] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
    char what[64];
    snprintf(what, sizeof what, "%s: dynamic_broadcast_in_dim", backend);
    expect_i64(out[0], broadcast, 12, what);
    snprintf(what, sizeof what, "%s: dynamic_reshape", backend);
    expect_i64(out[1], reshaped, 6, what);
    snprintf(what, sizeof what, "%s: dynamic_pad", backend);
    expect_i64(out[2], padded, 35, what);
    snprintf(what, sizeof what, "%s: dynamic_gather", backend);
    expect_i64(out[3], gathered, 24, what);
    snprintf(what, sizeof what, "%s: dynamic_conv", backend);
    expect_i64(out[4], conv, 4, what);
    snprintf(what, sizeof what, "%s: dynamic_iota", backend);
    expect_i64(out[5], iota, 12, what);
    cr_assert_eq(*(const int32_t *)kiln_tensor_data(out[6]), 4, "%s: get_dimension_size", backend);
}

static void release_all(kiln_tensor **t, int n) {
    for (int i = 0; i < n; i++)
        kiln_tensor_release(t[i]);
}

/* One call of the program on the spec examples' operands, its results checked. */
static void run_spec_examples(kiln_ctx *cx, kiln_exe *exe, const char *backend) {
    kiln_tensor *args[N_ARGS], *out[N_RESULTS];
    make_args(cx, args, NULL, 0);
    cr_assert_eq(kiln_exe_call(cx, exe, args, out), KILN_OK, "%s: %s", backend,
                 kiln_ctx_error_message(cx));
    expect_spec_results(out, backend);
    release_all(out, N_RESULTS);
    release_all(args, N_ARGS);
}

Test(dynamic, shape_operands_known_when_run_in_every_backend) {
    const char *backends[TEST_MAX_BACKENDS];
    int nb = test_backends(backends, TEST_MAX_BACKENDS);
    kiln_ctx *cx = test_ctx();
    for (int b = 0; b < nb; b++) {
        kiln_exe *exe = compile_text(cx, program, backends[b]);
        run_spec_examples(cx, exe, backends[b]);
        kiln_exe_release(exe);
    }
    kiln_ctx_release(cx);
}

/* Values that disagree with the declared result types are refused when the op runs, naming
 * the op and the operand, in every backend; the executable and the arguments stay good. */
Test(dynamic, values_that_disagree_with_the_types_are_refused_when_run) {
    const struct {
        arg_values arg;
        const char *fragment;
    } bad[] = {
        {ARG(1, 3, 2, 3), "dynamic_broadcast_in_dim: output_dimensions is [3,2,3]; the result "
                          "type's shape is [3,2,2]"},
        {ARG(2, 5), "dynamic_reshape: output_shape is [5]; the result type's shape is [6]"},
        {ARG(5, 0, 0), "dynamic_pad: the paddings give a result of type i64[6,6]; the result "
                       "type is i64[7,5]"},
        {ARG(7, -1, 1), "dynamic_pad: interior[0] is -1; expected 0 or more"},
        {ARG(10, 1, 1, 2), "dynamic_gather: slice_sizes give a result of type i64[2,3,1,2]; "
                           "the result type is i64[2,3,2,2]"},
        {ARG(13, 5, 5, 5, 5), "dynamic_conv: the padding gives a result of type "
                              "i64[1,4,4,1]; the result type is i64[1,2,2,1]"},
        {ARG(14, 4, 3), "dynamic_iota: output_shape is [4,3]; the result type's shape is [3,4]"},
    };
    const char *backends[TEST_MAX_BACKENDS];
    int nb = test_backends(backends, TEST_MAX_BACKENDS);
    kiln_ctx *cx = test_ctx();
    for (int b = 0; b < nb; b++) {
        kiln_exe *exe = compile_text(cx, program, backends[b]);
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            kiln_tensor *args[N_ARGS], *out[N_RESULTS] = {NULL};
            make_args(cx, args, &bad[i].arg, 1);
            cr_assert_neq(kiln_exe_call(cx, exe, args, out), KILN_OK, "%s: ran with %s",
                          backends[b], bad[i].fragment);
            expect_error(cx, KILN_INVALID_ARGUMENT, bad[i].fragment);
            release_all(args, N_ARGS);
        }
        run_spec_examples(cx, exe, backends[b]);
        kiln_exe_release(exe);
    }
    kiln_ctx_release(cx);
}

static const char constant_shapes[] =
    "func.func @main(%x: tensor<1x6xf32>, %m: tensor<2x2xf32>, %v: tensor<f32>) -> "
    "(tensor<2x3xf32>, tensor<5x4xf32>, tensor<2x3x2xf32>, tensor<2x3xui8>) {\n"
    "  %s = stablehlo.constant dense<[2, 3]> : tensor<2xi32>\n"
    "  %0 = stablehlo.dynamic_reshape %x, %s : (tensor<1x6xf32>, tensor<2xi32>) -> "
    "tensor<2x3xf32>\n"
    "  %one = stablehlo.constant dense<1> : tensor<2xi64>\n"
    "  %lo = stablehlo.constant dense<[1, 0]> : tensor<2xi64>\n"
    "  %1 = stablehlo.dynamic_pad %m, %v, %lo, %one, %one : (tensor<2x2xf32>, tensor<f32>, "
    "tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<5x4xf32>\n"
    "  %d = stablehlo.constant dense<[2, 3, 2]> : tensor<3xui16>\n"
    "  %2 = stablehlo.dynamic_broadcast_in_dim %0, %d, dims = [0, 1] : (tensor<2x3xf32>, "
    "tensor<3xui16>) -> tensor<2x3x2xf32>\n"
    "  %3 = stablehlo.dynamic_iota %s, dim = 1 : (tensor<2xi32>) -> tensor<2x3xui8>\n"
    "  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<5x4xf32>, tensor<2x3x2xf32>, "
    "tensor<2x3xui8>\n}\n";

/* a constant that does not fit the type: the op stays dynamic, and is refused when run */
static const char wrong_constant[] =
    "func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n"
    "  %wrong = stablehlo.constant dense<4> : tensor<1xi64>\n"
    "  %0 = stablehlo.dynamic_reshape %x, %wrong : (tensor<3xf32>, tensor<1xi64>) -> "
    "tensor<3xf32>\n"
    "  return %0 : tensor<3xf32>\n}\n";

/* Constant shape operands make the ops their static forms, which fuse and plan as any
 * other op; one whose constant disagrees with its type stays as it is. */
Test(dynamic, constant_shape_operands_make_static_ops) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, constant_shapes, strlen(constant_shapes), NULL, &m), KILN_OK,
                 "%s", kiln_ctx_error_message(cx));
    cr_assert_geq(kiln__pass_canonicalize(m), 4);
    char *text = kiln_module_to_string(cx, m);
    static const char *const want[] = {
        "stablehlo.reshape %arg0 : (tensor<1x6xf32>) -> tensor<2x3xf32>",
        "stablehlo.pad %arg1, %arg2, low = [1, 0], high = [1, 1], interior = [1, 1] : "
        "(tensor<2x2xf32>, tensor<f32>) -> tensor<5x4xf32>",
        "stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3x2xf32>",
        "stablehlo.iota dim = 1 : tensor<2x3xui8>",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(text, want[i]), "missing\n  %s\nin\n%s", want[i], text);
    cr_assert_null(strstr(text, "stablehlo.dynamic"), "%s", text);
    kiln_string_free(cx, text);
    kiln_module_release(m);
    cr_assert_eq(kiln_module_parse(cx, wrong_constant, strlen(wrong_constant), NULL, &m), KILN_OK,
                 "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln__pass_canonicalize(m), 0);
    kiln_module_release(m);

    const char *backends[TEST_MAX_BACKENDS];
    int nb = test_backends(backends, TEST_MAX_BACKENDS);
    static const float padded[20] = {-1, -1, -1, -1, 1, -1, 2,  -1, -1, -1,
                                     -1, -1, 3,  -1, 4, -1, -1, -1, -1, -1};
    static const uint8_t iota[6] = {0, 1, 2, 0, 1, 2};
    for (int b = 0; b < nb; b++) {
        kiln_exe *exe = compile_text(cx, constant_shapes, backends[b]);
        const float x[6] = {1, 2, 3, 4, 5, 6}, mv[4] = {1, 2, 3, 4}, v = -1;
        kiln_tensor *args[3] = {
            kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(1, 6), x, sizeof x),
            kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 2), mv, sizeof mv),
            kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE_SCALAR, &v, sizeof v)};
        kiln_tensor *out[4] = {NULL};
        cr_assert_eq(kiln_exe_call(cx, exe, args, out), KILN_OK, "%s: %s", backends[b],
                     kiln_ctx_error_message(cx));
        cr_assert_arr_eq(kiln_tensor_data(out[0]), x, sizeof x, "%s: reshape", backends[b]);
        cr_assert_arr_eq(kiln_tensor_data(out[1]), padded, sizeof padded, "%s: pad", backends[b]);
        const float *bc = kiln_tensor_data(out[2]);
        for (int i = 0; i < 12; i++)
            cr_assert_eq(bc[i], x[i / 2], "%s: broadcast element %d", backends[b], i);
        cr_assert_arr_eq(kiln_tensor_data(out[3]), iota, sizeof iota, "%s: iota", backends[b]);
        release_all(out, 4);
        release_all(args, 3);
        kiln_exe_release(exe);

        exe = compile_text(cx, wrong_constant, backends[b]);
        kiln_tensor *arg = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(3), x, 3 * sizeof x[0]);
        kiln_tensor *res = NULL;
        cr_assert_neq(kiln_exe_call(cx, exe, &arg, &res), KILN_OK, "%s", backends[b]);
        expect_error(cx, KILN_INVALID_ARGUMENT,
                     "dynamic_reshape: output_shape is [4]; the result type's shape is [3]");
        kiln_tensor_release(arg);
        kiln_exe_release(exe);
    }
    kiln_ctx_release(cx);
}

const kiln_op_coverage kiln_cover_dynamic[] = {
    {KILN_OP_DYNAMIC_IOTA, "dynamic/shape_operands_known_when_run_in_every_backend"},
    {KILN_OP_DYNAMIC_BROADCAST_IN_DIM, "dynamic/shape_operands_known_when_run_in_every_backend"},
    {KILN_OP_DYNAMIC_RESHAPE, "dynamic/shape_operands_known_when_run_in_every_backend"},
    {KILN_OP_DYNAMIC_PAD, "dynamic/shape_operands_known_when_run_in_every_backend"},
    {KILN_OP_DYNAMIC_GATHER, "dynamic/shape_operands_known_when_run_in_every_backend"},
    {KILN_OP_DYNAMIC_CONV, "dynamic/shape_operands_known_when_run_in_every_backend"},
    {KILN_OP_GET_DIMENSION_SIZE, "dynamic/shape_operands_known_when_run_in_every_backend"},
    {KILN_OP_COUNT, NULL},
};
