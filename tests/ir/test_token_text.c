/* SPDX-License-Identifier: Apache-2.0 */
/* !stablehlo.token as text: the type in signatures, calls and regions, after_all and
 * create_token, printed back as written. Running them is tests/ops/test_token.c. */
#include <string.h>

#include "goldens.h"
#include "test_util.h"

const char *const golden_token =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 2 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): result 1 = %arg0\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: !stablehlo.token) -> (!stablehlo.token, "
    "!stablehlo.token) {\n"
    "    %0 = stablehlo.create_token : !stablehlo.token\n"
    "    %1 = stablehlo.after_all : !stablehlo.token\n"
    "    %2 = stablehlo.after_all %arg0, %0, %1 : !stablehlo.token\n"
    "    %3 = func.call @join(%2) : (!stablehlo.token) -> !stablehlo.token\n"
    "    return %3, %arg0 : !stablehlo.token, !stablehlo.token\n"
    "  }\n"
    "  func.func private @join(%arg0: !stablehlo.token) -> !stablehlo.token {\n"
    "    %0 = stablehlo.after_all %arg0 : !stablehlo.token\n"
    "    return %0 : !stablehlo.token\n"
    "  }\n"
    "}\n";

Test(token_text, the_golden_prints_as_itself) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, golden_token, strlen(golden_token), NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *text = kiln_module_to_string(cx, m);
    cr_assert_str_eq(text, golden_token);
    kiln_string_free(cx, text);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* The generic forms read as the same ops; a token is not a tensor<0xi1> in the text. */
Test(token_text, generic_forms_read_and_tokens_are_not_tensors) {
    kiln_ctx *cx = test_ctx();
    static const char generic[] =
        "func.func @main(%t: !stablehlo.token) -> !stablehlo.token {\n"
        "  %0 = \"stablehlo.create_token\"() : () -> !stablehlo.token\n"
        "  %1 = \"stablehlo.after_all\"(%t, %0) : (!stablehlo.token, !stablehlo.token) -> "
        "!stablehlo.token\n"
        "  return %1 : !stablehlo.token\n}\n";
    kiln_module *m = test_parse(cx, generic);
    char *text = kiln_module_to_string(cx, m);
    cr_assert(strstr(text, "%1 = stablehlo.after_all %arg0, %0 : !stablehlo.token"), "%s", text);
    kiln_string_free(cx, text);
    kiln_module_release(m);
    static const char mixed[] = "func.func @main(%t: !stablehlo.token) -> tensor<0xi1> {\n"
                                "  return %t : tensor<0xi1>\n}\n";
    cr_assert_neq(kiln_module_parse(cx, mixed, strlen(mixed), NULL, &m), KILN_OK);
    cr_assert(strstr(kiln_ctx_error_message(cx), "!stablehlo.token"), "%s",
              kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);
    kiln_ctx_release(cx);
}
