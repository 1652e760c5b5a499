/* Module fingerprints (ir/fingerprint.h): equal for the same program parsed twice, different
 * for programs that differ in any one attribute, type, operand, constant or function;
 * refused for a module with a large constant. */
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
    bool eq = fa.n == fb.n && fa.hash == fb.hash && memcmp(fa.bytes, fb.bytes, fa.n) == 0;
    kiln__fingerprint_free(cx, &fa);
    kiln__fingerprint_free(cx, &fb);
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

Test(fingerprint, any_difference_shows) {
    kiln_ctx *cx = test_ctx();
    static const char *const variants[] = {
        /* an operand */
        FN("  %0 = stablehlo.add %arg0, %arg0 : tensor<4x6xf32>\n"
           "  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>\n"
           "  %2 = stablehlo.slice %1 [0:6:2, 1:4] : (tensor<6x4xf32>) -> tensor<3x3xf32>\n"
           "  %cst = stablehlo.constant dense<2.0> : tensor<f32>\n"
           "  %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> "
           "tensor<3x3xf32>\n"
           "  %4 = stablehlo.multiply %2, %3 : tensor<3x3xf32>\n"
           "  return %4 : tensor<3x3xf32>",
           "tensor<3x3xf32>"),
        /* the op */
        FN("  %0 = stablehlo.subtract %arg0, %arg1 : tensor<4x6xf32>\n"
           "  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>\n"
           "  %2 = stablehlo.slice %1 [0:6:2, 1:4] : (tensor<6x4xf32>) -> tensor<3x3xf32>\n"
           "  %cst = stablehlo.constant dense<2.0> : tensor<f32>\n"
           "  %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> "
           "tensor<3x3xf32>\n"
           "  %4 = stablehlo.multiply %2, %3 : tensor<3x3xf32>\n"
           "  return %4 : tensor<3x3xf32>",
           "tensor<3x3xf32>"),
        /* a slice's start */
        FN("  %0 = stablehlo.add %arg0, %arg1 : tensor<4x6xf32>\n"
           "  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>\n"
           "  %2 = stablehlo.slice %1 [0:6:2, 0:3] : (tensor<6x4xf32>) -> tensor<3x3xf32>\n"
           "  %cst = stablehlo.constant dense<2.0> : tensor<f32>\n"
           "  %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> "
           "tensor<3x3xf32>\n"
           "  %4 = stablehlo.multiply %2, %3 : tensor<3x3xf32>\n"
           "  return %4 : tensor<3x3xf32>",
           "tensor<3x3xf32>"),
        /* a slice's stride */
        FN("  %0 = stablehlo.add %arg0, %arg1 : tensor<4x6xf32>\n"
           "  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>\n"
           "  %2 = stablehlo.slice %1 [0:3, 1:4] : (tensor<6x4xf32>) -> tensor<3x3xf32>\n"
           "  %cst = stablehlo.constant dense<2.0> : tensor<f32>\n"
           "  %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> "
           "tensor<3x3xf32>\n"
           "  %4 = stablehlo.multiply %2, %3 : tensor<3x3xf32>\n"
           "  return %4 : tensor<3x3xf32>",
           "tensor<3x3xf32>"),
        /* a constant's value */
        FN("  %0 = stablehlo.add %arg0, %arg1 : tensor<4x6xf32>\n"
           "  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>\n"
           "  %2 = stablehlo.slice %1 [0:6:2, 1:4] : (tensor<6x4xf32>) -> tensor<3x3xf32>\n"
           "  %cst = stablehlo.constant dense<2.5> : tensor<f32>\n"
           "  %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> "
           "tensor<3x3xf32>\n"
           "  %4 = stablehlo.multiply %2, %3 : tensor<3x3xf32>\n"
           "  return %4 : tensor<3x3xf32>",
           "tensor<3x3xf32>"),
        /* a transpose's permutation, and so the types after it */
        FN("  %0 = stablehlo.add %arg0, %arg1 : tensor<4x6xf32>\n"
           "  %1 = stablehlo.transpose %0, dims = [0, 1] : (tensor<4x6xf32>) -> tensor<4x6xf32>\n"
           "  %2 = stablehlo.slice %1 [0:3, 1:4] : (tensor<4x6xf32>) -> tensor<3x3xf32>\n"
           "  %cst = stablehlo.constant dense<2.0> : tensor<f32>\n"
           "  %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> "
           "tensor<3x3xf32>\n"
           "  %4 = stablehlo.multiply %2, %3 : tensor<3x3xf32>\n"
           "  return %4 : tensor<3x3xf32>",
           "tensor<3x3xf32>"),
        /* the result returned */
        FN("  %0 = stablehlo.add %arg0, %arg1 : tensor<4x6xf32>\n"
           "  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>\n"
           "  %2 = stablehlo.slice %1 [0:6:2, 1:4] : (tensor<6x4xf32>) -> tensor<3x3xf32>\n"
           "  %cst = stablehlo.constant dense<2.0> : tensor<f32>\n"
           "  %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> "
           "tensor<3x3xf32>\n"
           "  %4 = stablehlo.multiply %2, %3 : tensor<3x3xf32>\n"
           "  return %2 : tensor<3x3xf32>",
           "tensor<3x3xf32>"),
    };
    for (size_t i = 0; i < sizeof variants / sizeof *variants; i++)
        cr_expect(!same(cx, base, variants[i]), "variant %zu has the base's fingerprint", i);
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
    cr_expect_null(f.bytes);
    kiln_ctx_release(cx);
}
