/* SPDX-License-Identifier: Apache-2.0 */
/* The deprecated stablehlo.dot (StableHLO's tests and older artifacts, vhlo.dot_v1) reads
 * as the dot_general it means: the lhs's last dimension contracted with the rhs's first. */
#include <string.h>

#include "test_util.h"

static char *printed(kiln_ctx *cx, const char *lhs, const char *rhs, const char *out) {
    char text[1024];
    snprintf(text, sizeof text,
             "func.func @main(%%a: %s, %%b: %s) -> %s {\n  %%0 = \"stablehlo.dot\"(%%a, %%b) "
             "{precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision "
             "HIGHEST>]} : (%s, %s) -> %s\n  func.return %%0 : %s\n}\n",
             lhs, rhs, out, lhs, rhs, out, out);
    kiln_module *m = NULL;
    if (kiln_module_parse(cx, text, strlen(text), NULL, &m) != KILN_OK) return NULL;
    char *s = kiln_module_to_string(cx, m);
    kiln_module_release(m);
    return s;
}

Test(dot_legacy, reads_as_the_dot_general_it_means) {
    kiln_ctx *cx = test_ctx();
    char *s = printed(cx, "tensor<8x16xf32>", "tensor<16x4xf32>", "tensor<8x4xf32>");
    cr_assert_not_null(s, "%s", kiln_ctx_error_message(cx));
    cr_assert(strstr(s, "%0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] "
                        ": (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>"),
              "%s", s);
    kiln_string_free(cx, s);
    s = printed(cx, "tensor<16xf32>", "tensor<16xf32>", "tensor<f32>");
    cr_assert_not_null(s, "%s", kiln_ctx_error_message(cx));
    cr_assert(strstr(s, "contracting_dims = [0] x [0]"), "%s", s);
    kiln_string_free(cx, s);
    cr_assert_null(printed(cx, "tensor<2x8x16xf32>", "tensor<16x4xf32>", "tensor<2x8x4xf32>"));
    expect_error(cx, KILN_INVALID_ARGUMENT, "stablehlo.dot takes two operands of rank 1 or 2");
    cr_assert_null(printed(cx, "tensor<8x16xf32>", "tensor<15x4xf32>", "tensor<8x4xf32>"));
    cr_assert_neq(kiln_ctx_status(cx), KILN_OK);
    kiln_ctx_clear_error(cx);
    kiln_ctx_release(cx);
}
