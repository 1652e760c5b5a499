/* SPDX-License-Identifier: Apache-2.0 */
/* Module fingerprints (ir/fingerprint.h): equal for the same program parsed twice, different
 * for programs that differ in any one attribute, type, operand, constant or function;
 * refused for a module with a large constant. */
#include <stdlib.h>

#include "ir/fingerprint.h"
#include "test_util.h"

static kiln__fingerprint print_of(kiln_ctx *cx, const char *text, bool *ok) {
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s\n%s",
                 kiln_ctx_error_message(cx), text);
    kiln__fingerprint f;
    *ok = kiln__module_fingerprint(cx, m, &f);
    kiln_module_release(m);
    return f;
}

static bool same(kiln_ctx *cx, const char *a, const char *b) {
    bool oka, okb;
    kiln__fingerprint fa = print_of(cx, a, &oka), fb = print_of(cx, b, &okb);
    cr_assert(oka && okb, "no fingerprint for\n%s\nor\n%s", a, b);
    bool eq = kiln__fingerprint_equal(&fa, &fb);
    kiln__fingerprint_free(&fa);
    kiln__fingerprint_free(&fb);
    return eq;
}

#define FN(body, sig)                                                                            \
    "func.func public @main(%arg0: tensor<4x6xf32>, %arg1: tensor<4x6xf32>) -> " sig " {\n" body \
    "\n}\n"

static const char *const base =
    FN("  %0 = stablehlo.add %arg0, %arg1 : tensor<4x6xf32>\n"
       "  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>\n"
       "  %2 = stablehlo.slice %1 [0:6:2, 1:4] : (tensor<6x4xf32>) -> tensor<3x3xf32>\n"
       "  %cst = stablehlo.constant dense<2.0> : tensor<f32>\n"
       "  %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x3xf32>\n"
       "  %4 = stablehlo.multiply %2, %3 : tensor<3x3xf32>\n"
       "  return %4 : tensor<3x3xf32>",
       "tensor<3x3xf32>");

Test(fingerprint, equal_for_the_same_program) {
    kiln_ctx *cx = test_ctx();
    cr_expect(same(cx, base, base));
    kiln_ctx_release(cx);
}

/* base with its first `from` replaced by `to` (one piece of one line). */
static char *variant(const char *from, const char *to) {
    const char *at = strstr(base, from);
    cr_assert_not_null(at, "base lacks \"%s\"", from);
    size_t head = (size_t)(at - base), n = strlen(base) - strlen(from) + strlen(to);
    char *v = malloc(n + 1);
    memcpy(v, base, head);
    strcpy(v + head, to);
    strcat(v, at + strlen(from));
    return v;
}

Test(fingerprint, any_difference_shows) {
    kiln_ctx *cx = test_ctx();
    static const char *const changes[][2] = {
        {"add %arg0, %arg1", "add %arg0, %arg0"},                       /* an operand */
        {"add %arg0, %arg1", "subtract %arg0, %arg1"},                  /* the op */
        {"[0:6:2, 1:4]", "[0:6:2, 0:3]"},                               /* a slice's start */
        {"[0:6:2, 1:4]", "[0:3, 1:4]"},                                 /* a slice's stride */
        {"dense<2.0>", "dense<2.5>"},                                   /* a constant's value */
        {"return %4 : tensor<3x3xf32>", "return %2 : tensor<3x3xf32>"}, /* the result */
    };
    for (size_t i = 0; i < sizeof changes / sizeof *changes; i++) {
        char *v = variant(changes[i][0], changes[i][1]);
        cr_expect(!same(cx, base, v), "\"%s\" -> \"%s\" keeps the fingerprint", changes[i][0],
                  changes[i][1]);
        free(v);
    }
    /* A permutation, and so the types after it. */
    char *t = variant("dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>",
                      "dims = [0, 1] : (tensor<4x6xf32>) -> tensor<4x6xf32>");
    char *v = strstr(t, "(tensor<6x4xf32>)");
    cr_assert_not_null(v);
    memcpy(v, "(tensor<4x6xf32>)", strlen("(tensor<4x6xf32>)"));
    char *u = strstr(t, "[0:6:2, 1:4]");
    cr_assert_not_null(u);
    memcpy(u, "[0:3:1, 1:4]", strlen("[0:3:1, 1:4]"));
    cr_expect(!same(cx, base, t), "a transpose's permutation keeps the fingerprint");
    free(t);
    kiln_ctx_release(cx);
}

Test(fingerprint, a_large_constant_has_none) {
    kiln_ctx *cx = test_ctx();
    const char *text = "func.func public @main(%arg0: tensor<100xf32>) -> tensor<100xf32> {\n"
                       "  %cst = stablehlo.constant dense<1.0> : tensor<100xf32>\n"
                       "  %0 = stablehlo.add %arg0, %cst : tensor<100xf32>\n"
                       "  return %0 : tensor<100xf32>\n}\n";
    bool ok = true;
    kiln__fingerprint f = print_of(cx, text, &ok);
    cr_expect(!ok, "400 bytes of constant: no fingerprint");
    cr_expect_eq(kiln_ctx_status(cx), KILN_OK, "an unfit module records nothing");
    kiln__fingerprint_free(&f);
    kiln_ctx_release(cx);
}
