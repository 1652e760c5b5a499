/* SPDX-License-Identifier: Apache-2.0 */
/* The dynamic-shape ops and get_dimension_size as text: both forms read, printed back
 * (the golden), and what the types alone refuse, each naming the operand. Running them
 * is tests/ops/test_dynamic.c. */
#include <string.h>

#include "goldens.h"
#include "test_util.h"

static char *printed(kiln_ctx *cx, const char *text) {
    kiln_module *m = test_parse(cx, text);
    char *s = kiln_module_to_string(cx, m);
    cr_assert_not_null(s, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    return s;
}

/* kiln's printed form: JAX's pretty forms where StableHLO has one, the generic form for
 * dynamic_gather and dynamic_conv, the known (non)expanding dimensions in a dictionary. */
const char *const golden_dynamic =
    "module @kiln {\n"
    "  // calling convention of @main: 10 arguments, 7 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<3x1xf32>, %arg1: tensor<3xi64>, %arg2: "
    "tensor<1xi32>, %arg3: tensor<f32>, %arg4: tensor<2xi64>, %arg5: tensor<2x3x2xi64>, %arg6: "
    "tensor<3xi64>, %arg7: tensor<1x4x4x1xf32>, %arg8: tensor<2x2xi64>, %arg9: "
    "tensor<3x3x1x1xf32>) -> "
    "(tensor<3x2x2xf32>, "
    "tensor<3xf32>, tensor<5x3xf32>, tensor<2x3x1x1xi64>, tensor<1x2x2x1xf32>, "
    "tensor<3x4xui8>, tensor<i32>) {\n"
    "    %0 = stablehlo.dynamic_broadcast_in_dim %arg0, %arg1, dims = [0, 2] "
    "{known_expanding_dimensions = array<i64: 1>, known_nonexpanding_dimensions = array<i64: "
    "0>} : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<3x2x2xf32>\n"
    "    %1 = stablehlo.dynamic_reshape %arg0, %arg2 : (tensor<3x1xf32>, tensor<1xi32>) -> "
    "tensor<3xf32>\n"
    "    %2 = stablehlo.dynamic_pad %arg0, %arg3, %arg4, %arg4, %arg4 : (tensor<3x1xf32>, "
    "tensor<f32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<5x3xf32>\n"
    "    %3 = \"stablehlo.dynamic_gather\"(%arg5, %arg5, %arg6) <{dimension_numbers = "
    "#stablehlo.gather<offset_dims = [2, 3], collapsed_slice_dims = [0], start_index_map = [1, "
    "0], index_vector_dim = 2>, indices_are_sorted = true}> : (tensor<2x3x2xi64>, "
    "tensor<2x3x2xi64>, tensor<3xi64>) -> tensor<2x3x1x1xi64>\n"
    "    %4 = \"stablehlo.dynamic_conv\"(%arg7, %arg9, %arg8) <{dimension_numbers = "
    "#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, batch_group_count = 1 : i64, "
    "feature_group_count = 1 : i64, lhs_dilation = array<i64: 2, 2>, rhs_dilation = "
    "array<i64: 1, 1>, window_strides = array<i64: 4, 4>}> : (tensor<1x4x4x1xf32>, "
    "tensor<3x3x1x1xf32>, tensor<2x2xi64>) -> tensor<1x2x2x1xf32>\n"
    "    %5 = stablehlo.dynamic_iota %arg4, dim = 1 : (tensor<2xi64>) -> tensor<3x4xui8>\n"
    "    %6 = stablehlo.get_dimension_size %arg7, dim = 2 : (tensor<1x4x4x1xf32>) -> "
    "tensor<i32>\n"
    "    return %0, %1, %2, %3, %4, %5, %6 : tensor<3x2x2xf32>, tensor<3xf32>, "
    "tensor<5x3xf32>, tensor<2x3x1x1xi64>, tensor<1x2x2x1xf32>, tensor<3x4xui8>, "
    "tensor<i32>\n"
    "  }\n"
    "}\n";

Test(dynamic_text, the_golden_prints_as_itself) {
    kiln_ctx *cx = test_ctx();
    char *once = printed(cx, golden_dynamic);
    cr_assert_str_eq(once, golden_dynamic);
    kiln_string_free(cx, once);
    kiln_ctx_release(cx);
}

/* The generic forms of the ops with a pretty one, and the pretty form's dictionary, read
 * as the same ops. */
Test(dynamic_text, generic_and_pretty_forms_read_alike) {
    kiln_ctx *cx = test_ctx();
    static const char generic[] =
        "func.func @main(%x: tensor<3x1xf32>, %d: tensor<3xi64>, %m: tensor<2x3xf32>) "
        "-> (tensor<3x2x2xf32>, tensor<6xf32>, tensor<3xi32>, tensor<i32>) {\n"
        "  %0 = \"stablehlo.dynamic_broadcast_in_dim\"(%x, %d) {broadcast_dimensions = "
        "array<i64: 0, 2>, known_nonexpanding_dimensions = array<i64: 0>} : (tensor<3x1xf32>, "
        "tensor<3xi64>) -> tensor<3x2x2xf32>\n"
        "  %s = stablehlo.constant dense<6> : tensor<1xi64>\n"
        "  %1 = \"stablehlo.dynamic_reshape\"(%m, %s) : (tensor<2x3xf32>, tensor<1xi64>) -> "
        "tensor<6xf32>\n"
        "  %n = stablehlo.constant dense<3> : tensor<1xi64>\n"
        "  %2 = \"stablehlo.dynamic_iota\"(%n) {iota_dimension = 0 : i64} : (tensor<1xi64>) -> "
        "tensor<3xi32>\n"
        "  %3 = \"stablehlo.get_dimension_size\"(%m) {dimension = 0 : i64} : (tensor<2x3xf32>) "
        "-> tensor<i32>\n"
        "  return %0, %1, %2, %3 : tensor<3x2x2xf32>, tensor<6xf32>, tensor<3xi32>, "
        "tensor<i32>\n}\n";
    char *text = printed(cx, generic);
    static const char *const lines[] = {
        "stablehlo.dynamic_broadcast_in_dim %arg0, %arg1, dims = [0, 2] "
        "{known_nonexpanding_dimensions = array<i64: 0>} : (tensor<3x1xf32>, tensor<3xi64>) -> "
        "tensor<3x2x2xf32>",
        "stablehlo.dynamic_reshape %arg2, %c : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<6xf32>",
        "stablehlo.dynamic_iota %c_0, dim = 0 : (tensor<1xi64>) -> tensor<3xi32>",
        "stablehlo.get_dimension_size %arg2, dim = 0 : (tensor<2x3xf32>) -> tensor<i32>",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_assert(strstr(text, lines[i]), "missing\n  %s\nin\n%s", lines[i], text);
    char *again = printed(cx, text);
    cr_assert_str_eq(again, text, "the printed module does not read back to itself");
    kiln_string_free(cx, again);
    kiln_string_free(cx, text);
    kiln_ctx_release(cx);
}

/* What the types alone say is wrong is refused when read, naming the operand or attribute;
 * what needs the shape operands' values is checked when the op runs
 * (tests/ops/test_dynamic.c). */
Test(dynamic_text, what_the_types_refuse_is_refused_when_read) {
    kiln_ctx *cx = test_ctx();
    test_expect_op_refused(
        cx, "%s: tensor<3xi64>",
        "%0 = stablehlo.dynamic_iota %s, dim = 0 : (tensor<3xi64>) -> tensor<3x4xf32>",
        "operand 1 (output_shape) is i64[3]; expected an integer tensor of shape [2]");
    test_expect_op_refused(
        cx, "%s: tensor<2xi64>",
        "%0 = stablehlo.dynamic_iota %s, dim = 2 : (tensor<2xi64>) -> tensor<3x4xf32>",
        "iota dimension is 2; expected 0 to 1");
    test_expect_op_refused(
        cx, "%x: tensor<6xf32>, %s: tensor<2xf32>",
        "%0 = stablehlo.dynamic_reshape %x, %s : (tensor<6xf32>, tensor<2xf32>) -> "
        "tensor<2x3xf32>",
        "operand 2 (output_shape) is f32[2]; expected an integer tensor");
    test_expect_op_refused(
        cx, "%x: tensor<6xf32>, %s: tensor<2xi64>",
        "%0 = stablehlo.dynamic_reshape %x, %s : (tensor<6xf32>, tensor<2xi64>) -> "
        "tensor<2x4xf32>",
        "(6 elements); shape [2,4] has 8");
    test_expect_op_refused(
        cx, "%x: tensor<3x1xf32>, %d: tensor<3xi64>",
        "%0 = stablehlo.dynamic_broadcast_in_dim %x, %d, dims = [0, 2] "
        "{known_expanding_dimensions = array<i64: 1>, known_nonexpanding_dimensions = "
        "array<i64: 1>} : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<3x2x2xf32>",
        "known_expanding_dimensions + known_nonexpanding_dimensions");
    test_expect_op_refused(cx, "%x: tensor<3x1xf32>, %d: tensor<3xi64>",
                           "%0 = stablehlo.dynamic_broadcast_in_dim %x, %d, dims = [0, 2] "
                           "{known_expanding_dimensions = array<i64: 2>} : (tensor<3x1xf32>, "
                           "tensor<3xi64>) -> tensor<3x2x2xf32>",
                           "known_expanding_dimensions + known_nonexpanding_dimensions");
    test_expect_op_refused(cx, "%x: tensor<3x2xf32>, %d: tensor<2xi64>",
                           "%0 = stablehlo.dynamic_broadcast_in_dim %x, %d, dims = [0] : "
                           "(tensor<3x2xf32>, tensor<2xi64>) -> tensor<3x2xf32>",
                           "dims");
    test_expect_op_refused(cx, "%x: tensor<2x3xi64>, %v: tensor<f32>, %p: tensor<2xi64>",
                           "%0 = stablehlo.dynamic_pad %x, %v, %p, %p, %p : (tensor<2x3xi64>, "
                           "tensor<f32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> "
                           "tensor<4x5xi64>",
                           "operand 2 (padding_value) is f32[]; expected a rank-0 i64 tensor");
    test_expect_op_refused(
        cx, "%x: tensor<2x3xi64>, %v: tensor<i64>, %p: tensor<3xi64>",
        "%0 = stablehlo.dynamic_pad %x, %v, %p, %p, %p : (tensor<2x3xi64>, "
        "tensor<i64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>) -> "
        "tensor<4x5xi64>",
        "operand 3 (edge_padding_low) is i64[3]; expected an integer tensor of shape "
        "[2]");
    test_expect_op_refused(cx, "%x: tensor<2x3xi64>, %v: tensor<i64>, %p: tensor<2xi64>",
                           "%0 = stablehlo.dynamic_pad %x, %v, %p, %p, %p : (tensor<2x3xi64>, "
                           "tensor<i64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> "
                           "tensor<4x5x1xi64>",
                           "the result shape [4,5,1] has rank 3; operand 1 has rank 2");
    test_expect_op_refused(cx, "%x: tensor<2x3xf32>",
                           "%0 = stablehlo.get_dimension_size %x, dim = 2 : (tensor<2x3xf32>) -> "
                           "tensor<i32>",
                           "dimension is 2; expected 0 to 1 for operand 1 of rank 2");
    test_expect_op_refused(cx, "%x: tensor<2x3xf32>",
                           "%0 = stablehlo.get_dimension_size %x, dim = 0 : (tensor<2x3xf32>) -> "
                           "tensor<i64>",
                           "i32");
    test_expect_op_refused(
        cx, "%x: tensor<3x4x2xf32>, %i: tensor<2x3x2xi64>, %s: tensor<2xi64>",
        "%0 = \"stablehlo.dynamic_gather\"(%x, %i, %s) {dimension_numbers = "
        "#stablehlo.gather<offset_dims = [2, 3], collapsed_slice_dims = [0], "
        "start_index_map = [1, 0], index_vector_dim = 2>} : (tensor<3x4x2xf32>, "
        "tensor<2x3x2xi64>, tensor<2xi64>) -> tensor<2x3x2x2xf32>",
        "operand 3 (slice_sizes) is i64[2]; expected an integer tensor of shape [3]");
    /* no padding makes batch 2 of a batch-1 input */
    test_expect_op_refused(cx,
                           "%l: tensor<1x4x4x1xf32>, %r: tensor<3x3x1x1xf32>, %p: tensor<2x2xi64>",
                           "%0 = \"stablehlo.dynamic_conv\"(%l, %r, %p) {dimension_numbers = "
                           "#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>} : "
                           "(tensor<1x4x4x1xf32>, tensor<3x3x1x1xf32>, tensor<2x2xi64>) -> "
                           "tensor<2x2x2x1xf32>",
                           "the result shape [2,2,2,1] cannot be made by any padding");
    test_expect_op_refused(
        cx, "%l: tensor<1x4x4x1xf32>, %r: tensor<3x3x1x1xf32>, %p: tensor<2xi64>",
        "%0 = \"stablehlo.dynamic_conv\"(%l, %r, %p) {dimension_numbers = "
        "#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>} : "
        "(tensor<1x4x4x1xf32>, tensor<3x3x1x1xf32>, tensor<2xi64>) -> "
        "tensor<1x2x2x1xf32>",
        "operand 3 (padding) is i64[2]; expected an integer tensor of shape [2,2]");
    /* shapes known only when the program runs: refused by name */
    test_expect_op_refused(
        cx, "%x: tensor<4xf32>, %s: tensor<1xi64>",
        "%0 = stablehlo.dynamic_reshape %x, %s : (tensor<4xf32>, tensor<1xi64>) -> "
        "tensor<?xf32>",
        "dynamic dimensions are not supported");
    kiln_ctx_release(cx);
}

/* StableHLO's raw form of convolution dimension numbers (what it prints when the layouts'
 * letters cannot say them) reads as the same numbers as the letters. */
Test(dynamic_text, convolution_dimension_numbers_in_the_raw_form) {
    kiln_ctx *cx = test_ctx();
    static const char raw[] =
        "func.func @main(%x: tensor<1x6x6x2xf32>, %w: tensor<3x3x2x4xf32>) -> "
        "tensor<1x4x4x4xf32> {\n"
        "  %0 = \"stablehlo.convolution\"(%x, %w) {dimension_numbers = #stablehlo.conv<raw "
        "input_batch_dimension = 0, input_feature_dimension = 3, input_spatial_dimensions = "
        "[1, 2], kernel_input_feature_dimension = 2, kernel_output_feature_dimension = 3, "
        "kernel_spatial_dimensions = [0, 1], output_batch_dimension = 0, "
        "output_feature_dimension = 3, output_spatial_dimensions = [1, 2]>} : "
        "(tensor<1x6x6x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x4x4x4xf32>\n"
        "  return %0 : tensor<1x4x4x4xf32>\n}\n";
    char *text = printed(cx, raw);
    cr_assert(strstr(text, "dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"), "%s", text);
    kiln_string_free(cx, text);
    test_expect_op_refused(cx, "%x: tensor<1x6x6x2xf32>, %w: tensor<3x3x2x4xf32>",
                           "%0 = \"stablehlo.convolution\"(%x, %w) {dimension_numbers = "
                           "#stablehlo.conv<raw input_batch_dimension = 0>} : "
                           "(tensor<1x6x6x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x4x4x4xf32>",
                           "#stablehlo.conv<raw ...> needs input_feature_dimension");
    kiln_ctx_release(cx);
}
