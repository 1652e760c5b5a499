/* SPDX-License-Identifier: Apache-2.0 */
/* The passes (src/passes): golden text before and after each canonicalize rewrite and
 * cse, what must not be rewritten, and results kept equal through compile and call. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "failing_allocator.h"
#include "ir/ir.h"
#include "ir/print.h"
#include "passes/passes.h"
#include "test_util.h"

#define STATUS(cx) kiln_ctx_status(cx)

static kiln_arg_spec arg(kiln_dtype dtype, kiln_shape shape) {
    return (kiln_arg_spec){.dtype = dtype, .shape = shape};
}

static kiln_module *lower(kiln_ctx *cx, kiln_region_fn fn, const kiln_arg_spec *args,
                          int32_t n_args, int32_t n_results) {
    kiln_region r = {fn, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &r, args, n_args, n_results, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    return m;
}

static void expect_text(kiln_ctx *cx, const kiln_module *m, const char *golden, const char *tag) {
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text, "%s: %s", tag, kiln_ctx_error_message(cx));
    if (strcmp(text, golden) != 0) {
        cr_log_error("%s: got\n%s\nwant\n%s", tag, text, golden);
        kiln_string_free(cx, text);
        cr_assert_fail("%s: the printed module differs from its golden", tag);
    }
    kiln_string_free(cx, text);
}

/* Lowers fn, checks the text before, runs canonicalize + cse + dce, checks the text after
 * and that the module still verifies. Returns the number of changes. */
static int32_t check(kiln_region_fn fn, const kiln_arg_spec *args, int32_t n_args,
                     int32_t n_results, const char *before, const char *after, const char *tag) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = lower(cx, fn, args, n_args, n_results);
    expect_text(cx, m, before, tag);
    int32_t changes = kiln__passes_simplify(m, 0);
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s: %s", tag, kiln_ctx_error_message(cx));
    expect_text(cx, m, after, tag);
    kiln_module_release(m);
    kiln_ctx_release(cx);
    return changes;
}

/* ---- the functions ----------------------------------------------------------------------- */

#define FN(name) \
    static kiln_status name(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user)

FN(add_int_zero) {
    (void)user;
    out[0] = kiln_add(cx, kiln_add(cx, in[0], kiln_scalar(cx, 0, KILN_I32)),
                      kiln_scalar(cx, 3, KILN_I32));
    return STATUS(cx);
}
FN(mul_int_one_zero) {
    (void)user;
    kiln_tensor *a = kiln_multiply(cx, kiln_scalar(cx, 1, KILN_I32), in[0]);
    out[0] = kiln_add(cx, a, kiln_multiply(cx, in[0], kiln_scalar(cx, 0, KILN_I32)));
    return STATUS(cx);
}
FN(float_zero_kept) {
    (void)user;
    kiln_tensor *a = kiln_multiply(cx, in[0], kiln_scalar(cx, 0, KILN_F32));
    out[0] = kiln_add(cx, kiln_add(cx, in[0], kiln_scalar(cx, 0, KILN_F32)), a);
    return STATUS(cx);
}
FN(float_one) {
    (void)user;
    out[0] = kiln_multiply(cx, in[0], kiln_scalar(cx, 1, KILN_F32));
    return STATUS(cx);
}
FN(negate_negate) {
    (void)user;
    out[0] = kiln_sine(cx, kiln_negate(cx, kiln_negate(cx, in[0])));
    return STATUS(cx);
}
FN(transpose_transpose) {
    (void)user;
    kiln_tensor *t = kiln_transpose(cx, in[0], KILN_DIMS(1, 2, 0));
    out[0] = kiln_transpose(cx, t, KILN_DIMS(1, 2, 0));
    kiln_tensor *back =
        kiln_transpose(cx, kiln_transpose(cx, out[0], KILN_DIMS(2, 0, 1)), KILN_DIMS(2, 0, 1));
    out[1] = kiln_transpose(cx, back, KILN_DIMS(1, 2, 0));
    return STATUS(cx);
}
FN(reshape_reshape) {
    (void)user;
    kiln_tensor *flat = kiln_reshape(cx, in[0], KILN_SHAPE(6));
    out[0] = kiln_reshape(cx, flat, KILN_SHAPE(3, 2));
    out[1] = kiln_sine(cx, kiln_reshape(cx, flat, KILN_SHAPE(2, 3)));
    return STATUS(cx);
}
FN(convert_same) {
    (void)user;
    out[0] = kiln_sine(cx, kiln_convert(cx, in[0], KILN_F32));
    return STATUS(cx);
}
FN(slice_slice) {
    (void)user;
    kiln_tensor *s = kiln_slice(cx, in[0], KILN_DIMS(1, 2), KILN_DIMS(9, 10), KILN_DIMS(1, 2));
    out[0] = kiln_slice(cx, s, KILN_DIMS(2, 1), KILN_DIMS(7, 4), KILN_DIMS(2, 2));
    return STATUS(cx);
}
FN(moved_splat) {
    (void)user;
    kiln_tensor *big = kiln_broadcast_in_dim(cx, in[0], KILN_SHAPE(1000, 2000), (kiln_dims){0});
    out[0] = kiln_slice(cx, big, KILN_DIMS(1, 2), KILN_DIMS(3, 5), KILN_DIMS(1, 1));
    out[1] = kiln_reshape(cx, big, KILN_SHAPE(2000, 1000));
    out[2] = kiln_transpose(cx, big, KILN_DIMS(1, 0));
    out[3] = kiln_reverse(cx, big, KILN_DIMS(0));
    return STATUS(cx);
}
FN(common) {
    (void)user;
    kiln_tensor *a = kiln_add(cx, kiln_sine(cx, in[0]), kiln_scalar(cx, 2, KILN_F32));
    kiln_tensor *b = kiln_add(cx, kiln_sine(cx, in[0]), kiln_scalar(cx, 2, KILN_F32));
    kiln_tensor *c = kiln_add(cx, kiln_sine(cx, in[0]), kiln_scalar(cx, 3, KILN_F32));
    out[0] = kiln_multiply(cx, kiln_multiply(cx, a, b), c);
    return STATUS(cx);
}

/* ---- goldens ----------------------------------------------------------------------------- */

static const char *const before_add_int_zero =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xi32>) -> tensor<4xi32> {\n"
    "    %c = stablehlo.constant dense<0> : tensor<i32>\n"
    "    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4xi32>\n"
    "    %1 = stablehlo.add %arg0, %0 : tensor<4xi32>\n"
    "    %c_0 = stablehlo.constant dense<3> : tensor<i32>\n"
    "    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<4xi32>\n"
    "    %3 = stablehlo.add %1, %2 : tensor<4xi32>\n"
    "    return %3 : tensor<4xi32>\n"
    "  }\n"
    "}\n";
static const char *const after_add_int_zero =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xi32>) -> tensor<4xi32> {\n"
    "    %c = stablehlo.constant dense<3> : tensor<i32>\n"
    "    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4xi32>\n"
    "    %1 = stablehlo.add %arg0, %0 : tensor<4xi32>\n"
    "    return %1 : tensor<4xi32>\n"
    "  }\n"
    "}\n";

static const char *const before_mul_int_one_zero =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xi32>) -> tensor<4xi32> {\n"
    "    %c = stablehlo.constant dense<1> : tensor<i32>\n"
    "    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4xi32>\n"
    "    %1 = stablehlo.multiply %0, %arg0 : tensor<4xi32>\n"
    "    %c_0 = stablehlo.constant dense<0> : tensor<i32>\n"
    "    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<4xi32>\n"
    "    %3 = stablehlo.multiply %arg0, %2 : tensor<4xi32>\n"
    "    %4 = stablehlo.add %1, %3 : tensor<4xi32>\n"
    "    return %4 : tensor<4xi32>\n"
    "  }\n"
    "}\n";
static const char *const after_mul_int_one_zero =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): result 0 = %arg0\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xi32>) -> tensor<4xi32> {\n"
    "    return %arg0 : tensor<4xi32>\n"
    "  }\n"
    "}\n";

static const char *const before_float_zero_kept =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>\n"
    "    %1 = stablehlo.multiply %arg0, %0 : tensor<4xf32>\n"
    "    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4xf32>\n"
    "    %3 = stablehlo.add %arg0, %2 : tensor<4xf32>\n"
    "    %4 = stablehlo.add %3, %1 : tensor<4xf32>\n"
    "    return %4 : tensor<4xf32>\n"
    "  }\n"
    "}\n";
static const char *const after_float_zero_kept =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>\n"
    "    %1 = stablehlo.multiply %arg0, %0 : tensor<4xf32>\n"
    "    %2 = stablehlo.add %arg0, %0 : tensor<4xf32>\n"
    "    %3 = stablehlo.add %2, %1 : tensor<4xf32>\n"
    "    return %3 : tensor<4xf32>\n"
    "  }\n"
    "}\n";

static const char *const before_float_one =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>\n"
    "    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>\n"
    "    %1 = stablehlo.multiply %arg0, %0 : tensor<4xf32>\n"
    "    return %1 : tensor<4xf32>\n"
    "  }\n"
    "}\n";
static const char *const after_float_one =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): result 0 = %arg0\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    return %arg0 : tensor<4xf32>\n"
    "  }\n"
    "}\n";

static const char *const before_negate_negate =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = stablehlo.negate %arg0 : tensor<4xf32>\n"
    "    %1 = stablehlo.negate %0 : tensor<4xf32>\n"
    "    %2 = stablehlo.sine %1 : tensor<4xf32>\n"
    "    return %2 : tensor<4xf32>\n"
    "  }\n"
    "}\n";
static const char *const after_negate_negate =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = stablehlo.sine %arg0 : tensor<4xf32>\n"
    "    return %0 : tensor<4xf32>\n"
    "  }\n"
    "}\n";

static const char *const before_transpose_transpose =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 2 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<3x4x2xf32>) "
    "{\n"
    "    %0 = stablehlo.transpose %arg0, dims = [1, 2, 0] : (tensor<2x3x4xf32>) -> "
    "tensor<3x4x2xf32>\n"
    "    %1 = stablehlo.transpose %0, dims = [1, 2, 0] : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>\n"
    "    %2 = stablehlo.transpose %1, dims = [2, 0, 1] : (tensor<4x2x3xf32>) -> tensor<3x4x2xf32>\n"
    "    %3 = stablehlo.transpose %2, dims = [2, 0, 1] : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>\n"
    "    %4 = stablehlo.transpose %3, dims = [1, 2, 0] : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>\n"
    "    return %1, %4 : tensor<4x2x3xf32>, tensor<3x4x2xf32>\n"
    "  }\n"
    "}\n";
static const char *const after_transpose_transpose =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 2 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<3x4x2xf32>) "
    "{\n"
    "    %0 = stablehlo.transpose %arg0, dims = [2, 0, 1] : (tensor<2x3x4xf32>) -> "
    "tensor<4x2x3xf32>\n"
    "    %1 = stablehlo.transpose %arg0, dims = [1, 2, 0] : (tensor<2x3x4xf32>) -> "
    "tensor<3x4x2xf32>\n"
    "    return %0, %1 : tensor<4x2x3xf32>, tensor<3x4x2xf32>\n"
    "  }\n"
    "}\n";

static const char *const before_reshape_reshape =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 2 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>) {\n"
    "    %0 = stablehlo.reshape %arg0 : (tensor<2x3xf32>) -> tensor<6xf32>\n"
    "    %1 = stablehlo.reshape %0 : (tensor<6xf32>) -> tensor<3x2xf32>\n"
    "    %2 = stablehlo.reshape %0 : (tensor<6xf32>) -> tensor<2x3xf32>\n"
    "    %3 = stablehlo.sine %2 : tensor<2x3xf32>\n"
    "    return %1, %3 : tensor<3x2xf32>, tensor<2x3xf32>\n"
    "  }\n"
    "}\n";
static const char *const after_reshape_reshape =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 2 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>) {\n"
    "    %0 = stablehlo.reshape %arg0 : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
    "    %1 = stablehlo.sine %arg0 : tensor<2x3xf32>\n"
    "    return %0, %1 : tensor<3x2xf32>, tensor<2x3xf32>\n"
    "  }\n"
    "}\n";

static const char *const before_convert_same =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = stablehlo.convert %arg0 : tensor<4xf32>\n"
    "    %1 = stablehlo.sine %0 : tensor<4xf32>\n"
    "    return %1 : tensor<4xf32>\n"
    "  }\n"
    "}\n";
static const char *const after_convert_same =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = stablehlo.sine %arg0 : tensor<4xf32>\n"
    "    return %0 : tensor<4xf32>\n"
    "  }\n"
    "}\n";

static const char *const before_slice_slice =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<10x12xf32>) -> tensor<3x2xf32> {\n"
    "    %0 = stablehlo.slice %arg0 [1:9, 2:10:2] : (tensor<10x12xf32>) -> tensor<8x4xf32>\n"
    "    %1 = stablehlo.slice %0 [2:7:2, 1:4:2] : (tensor<8x4xf32>) -> tensor<3x2xf32>\n"
    "    return %1 : tensor<3x2xf32>\n"
    "  }\n"
    "}\n";
static const char *const after_slice_slice =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<10x12xf32>) -> tensor<3x2xf32> {\n"
    "    %0 = stablehlo.slice %arg0 [3:8:2, 4:9:4] : (tensor<10x12xf32>) -> tensor<3x2xf32>\n"
    "    return %0 : tensor<3x2xf32>\n"
    "  }\n"
    "}\n";

static const char *const before_cse =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = stablehlo.sine %arg0 : tensor<4xf32>\n"
    "    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
    "    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>\n"
    "    %2 = stablehlo.add %0, %1 : tensor<4xf32>\n"
    "    %3 = stablehlo.sine %arg0 : tensor<4xf32>\n"
    "    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
    "    %4 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4xf32>\n"
    "    %5 = stablehlo.add %3, %4 : tensor<4xf32>\n"
    "    %6 = stablehlo.sine %arg0 : tensor<4xf32>\n"
    "    %cst_1 = stablehlo.constant dense<3.000000e+00> : tensor<f32>\n"
    "    %7 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4xf32>\n"
    "    %8 = stablehlo.add %6, %7 : tensor<4xf32>\n"
    "    %9 = stablehlo.multiply %2, %5 : tensor<4xf32>\n"
    "    %10 = stablehlo.multiply %9, %8 : tensor<4xf32>\n"
    "    return %10 : tensor<4xf32>\n"
    "  }\n"
    "}\n";
static const char *const after_cse =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = stablehlo.sine %arg0 : tensor<4xf32>\n"
    "    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
    "    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>\n"
    "    %2 = stablehlo.add %0, %1 : tensor<4xf32>\n"
    "    %cst_0 = stablehlo.constant dense<3.000000e+00> : tensor<f32>\n"
    "    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4xf32>\n"
    "    %4 = stablehlo.add %0, %3 : tensor<4xf32>\n"
    "    %5 = stablehlo.multiply %2, %2 : tensor<4xf32>\n"
    "    %6 = stablehlo.multiply %5, %4 : tensor<4xf32>\n"
    "    return %6 : tensor<4xf32>\n"
    "  }\n"
    "}\n";

static const char *const before_moved_splat =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 4 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<f32>) -> (tensor<2x3xf32>, tensor<2000x1000xf32>, "
    "tensor<2000x1000xf32>, tensor<1000x2000xf32>) {\n"
    "    %0 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> "
    "tensor<1000x2000xf32>\n"
    "    %1 = stablehlo.slice %0 [1:3, 2:5] : (tensor<1000x2000xf32>) -> tensor<2x3xf32>\n"
    "    %2 = stablehlo.reshape %0 : (tensor<1000x2000xf32>) -> tensor<2000x1000xf32>\n"
    "    %3 = stablehlo.transpose %0, dims = [1, 0] : (tensor<1000x2000xf32>) -> "
    "tensor<2000x1000xf32>\n"
    "    %4 = stablehlo.reverse %0, dims = [0] : tensor<1000x2000xf32>\n"
    "    return %1, %2, %3, %4 : tensor<2x3xf32>, tensor<2000x1000xf32>, tensor<2000x1000xf32>, "
    "tensor<1000x2000xf32>\n"
    "  }\n"
    "}\n";
static const char *const after_moved_splat =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 4 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<f32>) -> (tensor<2x3xf32>, tensor<2000x1000xf32>, "
    "tensor<2000x1000xf32>, tensor<1000x2000xf32>) {\n"
    "    %0 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> tensor<2x3xf32>\n"
    "    %1 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> "
    "tensor<2000x1000xf32>\n"
    "    %2 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> "
    "tensor<1000x2000xf32>\n"
    "    return %0, %1, %1, %2 : tensor<2x3xf32>, tensor<2000x1000xf32>, tensor<2000x1000xf32>, "
    "tensor<1000x2000xf32>\n"
    "  }\n"
    "}\n";

static const kiln_arg_spec i32_4[1] = {{.dtype = KILN_I32, .shape = {1, {4}}}};
static const kiln_arg_spec f32_4[1] = {{.dtype = KILN_F32, .shape = {1, {4}}}};

Test(canonicalize, add_int_zero) {
    cr_assert_gt(
        check(add_int_zero, i32_4, 1, 1, before_add_int_zero, after_add_int_zero, "add_int_zero"),
        0);
}
Test(canonicalize, mul_int_one_zero) {
    cr_assert_gt(check(mul_int_one_zero, i32_4, 1, 1, before_mul_int_one_zero,
                       after_mul_int_one_zero, "mul_int_one_zero"),
                 0);
}
Test(canonicalize, float_zero_is_not_rewritten) {
    check(float_zero_kept, f32_4, 1, 1, before_float_zero_kept, after_float_zero_kept,
          "float_zero_kept");
}
Test(canonicalize, float_times_one) {
    cr_assert_gt(check(float_one, f32_4, 1, 1, before_float_one, after_float_one, "float_one"), 0);
}
Test(canonicalize, negate_negate) {
    cr_assert_gt(check(negate_negate, f32_4, 1, 1, before_negate_negate, after_negate_negate,
                       "negate_negate"),
                 0);
}
Test(canonicalize, transpose_transpose) {
    kiln_arg_spec a = arg(KILN_F32, KILN_SHAPE(2, 3, 4));
    cr_assert_gt(check(transpose_transpose, &a, 1, 2, before_transpose_transpose,
                       after_transpose_transpose, "transpose_transpose"),
                 0);
}
Test(canonicalize, reshape_reshape) {
    kiln_arg_spec a = arg(KILN_F32, KILN_SHAPE(2, 3));
    cr_assert_gt(check(reshape_reshape, &a, 1, 2, before_reshape_reshape, after_reshape_reshape,
                       "reshape_reshape"),
                 0);
}
Test(canonicalize, convert_same) {
    check(convert_same, f32_4, 1, 1, before_convert_same, after_convert_same, "convert_same");
}
Test(canonicalize, slice_slice) {
    kiln_arg_spec a = arg(KILN_F32, KILN_SHAPE(10, 12));
    cr_assert_gt(check(slice_slice, &a, 1, 1, before_slice_slice, after_slice_slice, "slice_slice"),
                 0);
}
/* A slice, reshape, transpose or reverse of a broadcast scalar is the scalar broadcast to
 * its type: nothing of the big broadcast's size is left (a large splat constant from the
 * parser is such a broadcast). */
Test(canonicalize, moved_scalar_broadcast) {
    kiln_arg_spec a = arg(KILN_F32, (kiln_shape){0});
    cr_assert_gt(check(moved_splat, &a, 1, 4, before_moved_splat, after_moved_splat, "moved_splat"),
                 0);
}
Test(cse, common_subexpressions) {
    cr_assert_gt(check(common, f32_4, 1, 1, before_cse, after_cse, "cse"), 0);
}

/* ---- shared attributes ------------------------------------------------------------------- */

/* Two slices with the same attributes on different operands: the module keeps one copy,
 * and canonicalize folding the slice of a slice changes only that op. */
static const char *const shared_slices =
    "func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<6xf32>) -> "
    "(tensor<4xf32>, tensor<4xf32>) {\n"
    "  %0 = stablehlo.slice %arg0 [1:7] : (tensor<8xf32>) -> tensor<6xf32>\n"
    "  %1 = stablehlo.slice %0 [1:5] : (tensor<6xf32>) -> tensor<4xf32>\n"
    "  %2 = stablehlo.slice %arg1 [1:5] : (tensor<6xf32>) -> tensor<4xf32>\n"
    "  return %1, %2 : tensor<4xf32>, tensor<4xf32>\n"
    "}\n";

static kiln_module *parse_text(kiln_ctx *cx, const char *text) {
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    return m;
}

static const kiln__ir_op *nth_op(const kiln_module *m, int n) {
    const kiln__ir_op *op = m->funcs[0]->body->first;
    while (op && n-- > 0)
        op = op->next;
    cr_assert_not_null(op);
    return op;
}

Test(canonicalize, a_rewrite_changes_only_its_op_where_attributes_are_shared) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = parse_text(cx, shared_slices);
    const kiln__ir_op *inner = nth_op(m, 1), *other = nth_op(m, 2);
    cr_assert(inner->attrs_shared && inner->attrs == other->attrs, "equal attributes are one copy");
    cr_assert_neq(nth_op(m, 0)->attrs, inner->attrs);
    cr_assert_gt(kiln__pass_canonicalize(m), 0);
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert(!inner->attrs_shared && inner->attrs != other->attrs);
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text);
    cr_assert(strstr(text, "stablehlo.slice %arg0 [2:6]"), "%s", text);
    cr_assert(strstr(text, "stablehlo.slice %arg1 [1:5]"), "%s", text);
    kiln_string_free(cx, text);
    kiln_module_release(m);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Out of memory for the op's own copy of its attributes: the rewrite is skipped, the
 * module stays valid and unchanged. */
Test(canonicalize, no_memory_for_own_attributes_keeps_the_op) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    cr_assert_not_null(cx);
    kiln_module *m = parse_text(cx, shared_slices);
    kiln_ctx_clear_error(cx);
    /* Every allocation fails from here on, and the module's arena is filled up, so the
     * copy would need a new block. */
    fa.fail_after = fa.allocations;
    while (kiln__arena_alloc(&m->arena, 4096, 8))
        ;
    while (kiln__arena_alloc(&m->arena, 8, 8))
        ;
    kiln_ctx_clear_error(cx);
    cr_assert_eq(kiln__pass_canonicalize(m), 0);
    kiln_ctx_clear_error(cx);
    fa.fail_after = -1;
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    const kiln__ir_op *inner = nth_op(m, 1);
    cr_assert(inner->attrs_shared && inner->attrs == nth_op(m, 2)->attrs);
    cr_assert_eq(inner->operands[0], nth_op(m, 0)->results[0], "the slice of a slice stays");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* ---- results stay equal ------------------------------------------------------------------ */

FN(mixed) {
    (void)user;
    kiln_tensor *x = in[0], *y = in[1];
    kiln_tensor *a = kiln_multiply(cx, kiln_scalar(cx, 1, KILN_F32), kiln_sine(cx, x));
    kiln_tensor *b = kiln_sine(cx, x);
    kiln_tensor *t = kiln_transpose(cx, kiln_transpose(cx, kiln_add(cx, a, b), KILN_DIMS(1, 0)),
                                    KILN_DIMS(1, 0));
    kiln_tensor *s =
        kiln_slice(cx, kiln_slice(cx, t, KILN_DIMS(1, 0), KILN_DIMS(4, 5), KILN_DIMS(1, 2)),
                   KILN_DIMS(1, 1), KILN_DIMS(3, 3), KILN_DIMS(1, 1));
    kiln_tensor *r = kiln_reshape(cx, kiln_reshape(cx, s, KILN_SHAPE(4)), KILN_SHAPE(4, 1));
    out[0] = kiln_add(
        cx, kiln_negate(cx, kiln_negate(cx, r)),
        kiln_multiply(cx, kiln_scalar(cx, 0, KILN_F32),
                      kiln_slice(cx, y, KILN_DIMS(0, 0), KILN_DIMS(4, 1), KILN_DIMS_NONE)));
    out[1] = kiln_add(cx, kiln_convert(cx, y, KILN_F32), kiln_scalar(cx, 0, KILN_F32));
    return STATUS(cx);
}

/* Compiles m and calls it on (x, y), into out[0..1]. */
static void call(kiln_ctx *cx, kiln_module *m, kiln_tensor *x, kiln_tensor *y, kiln_tensor **out) {
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, out), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_exe_release(exe);
}

Test(passes, results_stay_equal) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[2] = {arg(KILN_F32, KILN_SHAPE(5, 5)), arg(KILN_F32, KILN_SHAPE(5, 5))};
    kiln_module *plain = lower(cx, mixed, args, 2, 2);
    kiln_module *opt = lower(cx, mixed, args, 2, 2);
    cr_assert_gt(kiln__passes_simplify(opt, 0), 0);
    cr_assert_eq(kiln__module_verify(opt), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *x = kiln_iota(cx, KILN_F32, KILN_SHAPE(5, 5), 1);
    kiln_tensor *y = kiln_sine(cx, kiln_iota(cx, KILN_F32, KILN_SHAPE(5, 5), 0));
    expect_ok(cx);
    kiln_tensor *want[2], *got[2];
    call(cx, plain, x, y, want);
    call(cx, opt, x, y, got);
    for (int r = 0; r < 2; r++) {
        size_t n = kiln_tensor_nbytes(want[r]);
        cr_assert_eq(n, kiln_tensor_nbytes(got[r]));
        cr_assert_eq(memcmp(kiln_tensor_data(want[r]), kiln_tensor_data(got[r]), n), 0,
                     "result %d differs", r);
        kiln_tensor_release(want[r]);
        kiln_tensor_release(got[r]);
    }
    kiln_module_release(plain);
    kiln_module_release(opt);
    kiln_ctx_release(cx);
}

/* transpose(dot_general(a, b)) swapping the free groups becomes dot_general(b, a); a dot
 * with another use keeps its transpose. */
FN(transposed_batched_dot) {
    (void)user;
    kiln_dot_params p = {.lhs_batching_dims = KILN_DIMS(0),
                         .rhs_batching_dims = KILN_DIMS(0),
                         .lhs_contracting_dims = KILN_DIMS(2),
                         .rhs_contracting_dims = KILN_DIMS(1)};
    kiln_tensor *d = kiln_dot_general(cx, in[0], in[1], &p, KILN_DTYPE_COUNT); /* [2,3,5] */
    out[0] = kiln_transpose(cx, d, KILN_DIMS(0, 2, 1));                        /* [2,5,3] */
    kiln_tensor *e = kiln_dot_general(cx, in[1], in[0],
                                      &(kiln_dot_params){.lhs_batching_dims = KILN_DIMS(0),
                                                         .rhs_batching_dims = KILN_DIMS(0),
                                                         .lhs_contracting_dims = KILN_DIMS(1),
                                                         .rhs_contracting_dims = KILN_DIMS(2)},
                                      KILN_DTYPE_COUNT); /* [2,5,3], used twice */
    out[1] = kiln_add(cx, kiln_transpose(cx, e, KILN_DIMS(0, 2, 1)), kiln_scalar_like(cx, e, 1));
    out[2] = e;
    return kiln_ctx_status(cx);
}

Test(canonicalize, transposed_dot_is_the_dot_of_swapped_operands) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {arg(KILN_F32, KILN_SHAPE(2, 3, 4)), arg(KILN_F32, KILN_SHAPE(2, 4, 5))};
    kiln_module *m = lower(cx, transposed_batched_dot, a, 2, 3);
    kiln_exe *plain = NULL, *simplified = NULL;
    kiln_compile_options o = kiln_compile_options_default();
    o.disable_passes = true;
    cr_assert_eq(kiln_compile(cx, m, &o, &plain), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_gt(kiln__passes_simplify(m, 0), 0);
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    char *text = kiln_module_to_string(cx, m);
    /* One transpose is left: the one of the dot used twice. */
    const char *t = strstr(text, "stablehlo.transpose");
    cr_assert(t && !strstr(t + 1, "stablehlo.transpose"), "%s", text);
    cr_assert(strstr(text, "stablehlo.dot_general %arg1, %arg0"), "%s", text);
    kiln_string_free(cx, text);
    cr_assert_eq(kiln_compile(cx, m, NULL, &simplified), KILN_OK);
    kiln_tensor *x =
        kiln_random_uniform(cx, kiln_key_from_seed(1), KILN_F32, KILN_SHAPE(2, 3, 4), -1, 1);
    kiln_tensor *y =
        kiln_random_uniform(cx, kiln_key_from_seed(2), KILN_F32, KILN_SHAPE(2, 4, 5), -1, 1);
    kiln_tensor *r1[3], *r2[3];
    cr_assert_eq(kiln_exe_call(cx, plain, (kiln_tensor *[]){x, y}, r1), KILN_OK);
    cr_assert_eq(kiln_exe_call(cx, simplified, (kiln_tensor *[]){x, y}, r2), KILN_OK);
    for (int k = 0; k < 3; k++) {
        const float *u = kiln_tensor_data(r1[k]), *v = kiln_tensor_data(r2[k]);
        for (int64_t i = 0; i < kiln_tensor_numel(r1[k]); i++)
            cr_assert_float_eq(u[i], v[i], 1e-5, "result %d element %lld", k, (long long)i);
    }
    kiln_exe_release(plain);
    kiln_exe_release(simplified);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}
