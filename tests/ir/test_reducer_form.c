/* SPDX-License-Identifier: Apache-2.0 */
/* reduce's region form as JAX prints it (jax 0.10.2's as_text): `reducer(%acc: T, %x: T)`
 * for one input, one group per input for several, and the compact form with a discardable
 * attribute dictionary. Each is read, run, and printed in a form that reads back. */
#include <string.h>

#include "test_util.h"

/* jnp.argmax(x, axis=1) for x: f32[3, 4] */
static const char argmax[] =
    "func.func public @main(%arg0: tensor<3x4xf32>) -> tensor<3xi32> {\n"
    "  %0 = stablehlo.iota dim = 1 : tensor<3x4xi32>\n"
    "  %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
    "  %c = stablehlo.constant dense<0> : tensor<i32>\n"
    "  %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1] : "
    "(tensor<3x4xf32>, tensor<3x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<3xf32>, "
    "tensor<3xi32>)\n"
    "   reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: "
    "tensor<i32>)  {\n"
    "    %2 = stablehlo.compare GT, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> "
    "tensor<i1>\n"
    "    %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> "
    "tensor<i1>\n"
    "    %4 = stablehlo.or %2, %3 : tensor<i1>\n"
    "    %5 = stablehlo.compare EQ, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> "
    "tensor<i1>\n"
    "    %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> "
    "tensor<i1>\n"
    "    %7 = stablehlo.and %5, %6 : tensor<i1>\n"
    "    %8 = stablehlo.or %4, %7 : tensor<i1>\n"
    "    %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<f32>\n"
    "    %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>\n"
    "    stablehlo.return %9, %10 : tensor<f32>, tensor<i32>\n"
    "  }\n"
    "  return %1#1 : tensor<3xi32>\n"
    "}\n";

/* lax.reduce(x, 0.0, lambda a, b: a * 1 + b, (0,)) for x: f32[3, 4] (a body of two ops
 * whose result does not depend on the order the elements are combined in) */
static const char two_op_body[] =
    "func.func public @main(%arg0: tensor<3x4xf32>) -> tensor<4xf32> {\n"
    "  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "  %0 = stablehlo.reduce(%arg0 init: %cst) across dimensions = [0] : (tensor<3x4xf32>, "
    "tensor<f32>) -> tensor<4xf32>\n"
    "   reducer(%arg1: tensor<f32>, %arg2: tensor<f32>)  {\n"
    "    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>\n"
    "    %1 = stablehlo.multiply %arg1, %cst_0 : tensor<f32>\n"
    "    %2 = stablehlo.add %1, %arg2 : tensor<f32>\n"
    "    stablehlo.return %2 : tensor<f32>\n"
    "  }\n"
    "  return %0 : tensor<4xf32>\n"
    "}\n";

/* StableHLO's print_reduce.mlir: the compact form with an attribute dictionary */
static const char compact_with_attrs[] =
    "func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2xf32> {\n"
    "  %0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "  %1 = stablehlo.reduce(%arg0 init: %0) applies stablehlo.add across dimensions = [1] "
    "{custom_user_attr = 1 : i64} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
    "  return %1 : tensor<2xf32>\n"
    "}\n";

/* Parses text, checks that its printed form reads back to itself, runs it on x (f32[rows,
 * cols], x[i] = values[i]) and returns the result's bytes in out. */
static void run(const char *text, const float *x, int64_t rows, int64_t cols, void *out,
                size_t out_bytes) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = test_parse(cx, text);
    char *once = kiln_module_to_string(cx, m);
    kiln_module *again = test_parse(cx, once);
    char *twice = kiln_module_to_string(cx, again);
    cr_assert_str_eq(once, twice);
    kiln_string_free(cx, once);
    kiln_string_free(cx, twice);
    kiln_module_release(again);
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *arg = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(rows, cols), x,
                                             (size_t)(rows * cols) * sizeof *x);
    kiln_tensor *res = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &arg, &res), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_nbytes(res), out_bytes);
    memcpy(out, kiln_tensor_data(res), out_bytes);
    kiln_tensor_release(arg);
    kiln_tensor_release(res);
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(reducer_form, jax_argmax_with_one_group_per_input) {
    const float x[12] = {1, 5, 5, 2, -1, -3, -2, -1, 0, 0, 7, 7};
    int32_t got[3];
    run(argmax, x, 3, 4, got, sizeof got);
    cr_assert(got[0] == 1 && got[1] == 0 && got[2] == 2, "%d %d %d", got[0], got[1], got[2]);
}

Test(reducer_form, one_input_of_a_region_of_several_ops) {
    const float x[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    float got[4];
    run(two_op_body, x, 3, 4, got, sizeof got);
    for (int j = 0; j < 4; j++) {
        float want = x[j] + x[4 + j] + x[8 + j];
        cr_assert_eq(got[j], want, "column %d: %g, expected %g", j, got[j], want);
    }
}

Test(reducer_form, compact_form_with_an_attribute_dictionary) {
    const float x[6] = {1, 2, 3, 4, 5, 6};
    float got[2];
    run(compact_with_attrs, x, 2, 3, got, sizeof got);
    cr_assert(got[0] == 6 && got[1] == 15, "%g %g", got[0], got[1]);
}
