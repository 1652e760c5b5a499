/* SPDX-License-Identifier: Apache-2.0 */
/* Tuples as text: tuple<...> types (nested, empty, in signatures and regions), tuple and
 * get_tuple_element in both forms, printed back as written, and what the types refuse.
 * Running them is tests/ops/test_tuple.c. */
#include <string.h>

#include "goldens.h"
#include "test_util.h"

const char *const golden_tuple =
    "module @kiln {\n"
    "  // calling convention of @main: 2 arguments, 2 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<2xf64>, %arg1: tensor<i64>) -> (tensor<2xf64>, "
    "tuple<>) {\n"
    "    %0 = stablehlo.tuple %arg1 : tuple<tensor<i64>>\n"
    "    %1 = stablehlo.tuple %arg0, %0 : tuple<tensor<2xf64>, tuple<tensor<i64>>>\n"
    "    %2 = stablehlo.get_tuple_element %1[1] : (tuple<tensor<2xf64>, tuple<tensor<i64>>>) "
    "-> tuple<tensor<i64>>\n"
    "    %3 = stablehlo.get_tuple_element %2[0] : (tuple<tensor<i64>>) -> tensor<i64>\n"
    "    %4 = stablehlo.convert %3 : (tensor<i64>) -> tensor<f64>\n"
    "    %5 = stablehlo.get_tuple_element %1[0] : (tuple<tensor<2xf64>, tuple<tensor<i64>>>) "
    "-> tensor<2xf64>\n"
    "    %6 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<f64>) -> tensor<2xf64>\n"
    "    %7 = stablehlo.add %5, %6 : tensor<2xf64>\n"
    "    %8 = stablehlo.tuple : tuple<>\n"
    "    return %7, %8 : tensor<2xf64>, tuple<>\n"
    "  }\n"
    "}\n";

Test(tuple_text, the_golden_prints_as_itself) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = test_parse(cx, golden_tuple);
    char *text = kiln_module_to_string(cx, m);
    cr_assert_str_eq(text, golden_tuple);
    kiln_string_free(cx, text);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* The generic forms read as the same ops. */
Test(tuple_text, generic_forms_read_alike) {
    kiln_ctx *cx = test_ctx();
    static const char generic[] =
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %t = \"stablehlo.tuple\"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> "
        "tuple<tensor<2xf32>, tensor<2xf32>>\n"
        "  %e = \"stablehlo.get_tuple_element\"(%t) <{index = 1 : i32}> : "
        "(tuple<tensor<2xf32>, tensor<2xf32>>) -> tensor<2xf32>\n"
        "  return %e : tensor<2xf32>\n}\n";
    kiln_module *m = test_parse(cx, generic);
    char *text = kiln_module_to_string(cx, m);
    static const char *const lines[] = {
        "%0 = stablehlo.tuple %arg0, %arg0 : tuple<tensor<2xf32>, tensor<2xf32>>",
        "%1 = stablehlo.get_tuple_element %0[1] : (tuple<tensor<2xf32>, tensor<2xf32>>) -> "
        "tensor<2xf32>",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_assert(strstr(text, lines[i]), "missing\n  %s\nin\n%s", lines[i], text);
    kiln_string_free(cx, text);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static void expect_refused(kiln_ctx *cx, const char *op_line, const char *fragment) {
    test_expect_op_refused(cx, "%x: tensor<2xf32>, %t: tuple<tensor<2xf32>, tensor<i1>>", op_line,
                           fragment);
}

Test(tuple_text, what_the_types_refuse_is_refused_when_read) {
    kiln_ctx *cx = test_ctx();
    expect_refused(cx,
                   "%0 = stablehlo.get_tuple_element %t[2] : (tuple<tensor<2xf32>, "
                   "tensor<i1>>) -> tensor<2xf32>",
                   "index is 2; the tuple has 2 elements");
    expect_refused(cx,
                   "%0 = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xf32>, "
                   "tensor<i1>>) -> tensor<2xf32>",
                   "the op's type says");
    expect_refused(cx,
                   "%0 = stablehlo.get_tuple_element %x[0] : (tensor<2xf32>) -> "
                   "tensor<2xf32>",
                   "operand 1 is f32[2]; expected a tuple");
    expect_refused(cx, "%0 = stablehlo.tuple %x, %x : tuple<tensor<2xf32>>",
                   "stablehlo.tuple of 2 operands needs a tuple type of as many elements");
    expect_refused(cx, "%0 = stablehlo.tuple %x : tensor<2xf32>", "needs a tuple type");
    expect_refused(cx, "%0 = stablehlo.add %t, %t : tuple<tensor<2xf32>, tensor<i1>>",
                   "operand 1 is a tuple; stablehlo.add takes tensors");
    expect_refused(cx, "%0 = stablehlo.tuple %x : tuple<tensor<2xf32> 3>",
                   "to close the tuple type");
    kiln_ctx_release(cx);
}
