/* SPDX-License-Identifier: Apache-2.0 */
/* stablehlo.composite: read in both forms, printed in the pretty one with its name and
 * attributes as written, run as its decomposition, and its errors. */
#include <string.h>

#include "test_util.h"

static const char program[] =
    "func.func private @add_n.impl(%arg0: tensor<3xi64>) -> tensor<3xi64> {\n"
    "  %0 = stablehlo.constant dense<2> : tensor<3xi64>\n"
    "  %1 = stablehlo.add %arg0, %0 : tensor<3xi64>\n"
    "  return %1 : tensor<3xi64>\n"
    "}\n"
    "func.func @main(%x: tensor<3xi64>) -> tensor<3xi64> {\n"
    "  %0 = stablehlo.composite \"my.add_n\" %x {\n"
    "    composite_attributes = { n = 2 : i64, tag = \"a, b\" },\n"
    "    decomposition = @add_n.impl, version = 1 : i32\n"
    "  } : (tensor<3xi64>) -> tensor<3xi64>\n"
    "  %1 = \"stablehlo.composite\"(%0) <{decomposition = @add_n.impl, name = \"plain\"}> "
    ": (tensor<3xi64>) -> tensor<3xi64>\n"
    "  return %1 : tensor<3xi64>\n"
    "}\n";

Test(composite, prints_in_the_pretty_form_and_reads_back) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = test_parse(cx, program);
    char *printed = kiln_module_to_string(cx, m);
    cr_assert_not_null(printed, "%s", kiln_ctx_error_message(cx));
    cr_assert(strstr(printed, "stablehlo.composite \"my.add_n\" %arg0 {composite_attributes = "
                              "{n = 2 : i64, tag = \"a, b\"}, decomposition = @add_n.impl, "
                              "version = 1 : i32} : (tensor<3xi64>) -> tensor<3xi64>"),
              "%s", printed);
    cr_assert(strstr(printed, "stablehlo.composite \"plain\" %0 {decomposition = @"), "%s",
              printed);
    kiln_module *again = test_parse(cx, printed);
    char *twice = kiln_module_to_string(cx, again);
    cr_assert_str_eq(twice, printed);
    kiln_string_free(cx, printed);
    kiln_string_free(cx, twice);
    kiln_module_release(m);
    kiln_module_release(again);
    kiln_ctx_release(cx);
}

Test(composite, runs_its_decomposition) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = test_parse(cx, program);
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    const int64_t v[3] = {1, -5, 40};
    kiln_tensor *x = kiln_tensor_from_host(cx, KILN_I64, KILN_SHAPE(3), v, sizeof v), *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &r), KILN_OK, "%s", kiln_ctx_error_message(cx));
    const int64_t *got = kiln_tensor_data(r);
    cr_assert(got[0] == 5 && got[1] == -1 && got[2] == 44, "%lld %lld %lld", (long long)got[0],
              (long long)got[1], (long long)got[2]);
    kiln_tensor_release(r);
    kiln_tensor_release(x);
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static void expect_parse_error(kiln_ctx *cx, const char *op_line, const char *fragment) {
    char text[1024];
    snprintf(text, sizeof text,
             "func.func private @f(%%a: tensor<f32>) -> tensor<f32> {\n"
             "  return %%a : tensor<f32>\n"
             "}\n"
             "func.func @main(%%x: tensor<f32>) -> tensor<f32> {\n"
             "  %%0 = %s\n"
             "  return %%0 : tensor<f32>\n"
             "}\n",
             op_line);
    kiln_module *m = NULL;
    cr_assert_neq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "parsed: %s",
                  op_line);
    expect_error(cx, KILN_INVALID_ARGUMENT, fragment);
}

Test(composite, every_parser_error_names_what_is_wrong) {
    kiln_ctx *cx = test_ctx();
    expect_parse_error(cx,
                       "stablehlo.composite %x {decomposition = @f} : (tensor<f32>) -> "
                       "tensor<f32>",
                       "expected the composite's name (a string)");
    expect_parse_error(cx,
                       "stablehlo.composite \"n\" %x {version = 1 : i32} : (tensor<f32>) -> "
                       "tensor<f32>",
                       "needs a decomposition = @function");
    expect_parse_error(cx,
                       "stablehlo.composite \"n\" %x {decomposition = \"f\"} : "
                       "(tensor<f32>) -> tensor<f32>",
                       "decomposition must be a symbol");
    expect_parse_error(cx,
                       "\"stablehlo.composite\"(%x) {decomposition = @f} : (tensor<f32>) -> "
                       "tensor<f32>",
                       "needs a name");
    expect_parse_error(cx,
                       "\"stablehlo.composite\"(%x) {decomposition = @f, name = 3 : i32} : "
                       "(tensor<f32>) -> tensor<f32>",
                       "name must be a string");
    expect_parse_error(cx,
                       "stablehlo.composite \"n\" %x {decomposition = @f, name = \"m\"} : "
                       "(tensor<f32>) -> tensor<f32>",
                       "the name is given twice");
    expect_parse_error(cx, "stablehlo.composite \"n\" %x {decomposition = @f} : tensor<f32>",
                       "needs a function type");
    expect_parse_error(cx,
                       "stablehlo.composite \"n\" %x {decomposition = @missing} : "
                       "(tensor<f32>) -> tensor<f32>",
                       "missing");
    kiln_ctx_release(cx);
}
