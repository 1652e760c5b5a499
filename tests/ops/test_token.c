/* SPDX-License-Identifier: Apache-2.0 */
/* Tokens (!stablehlo.token): made by create_token and after_all, passed through calls,
 * loops, conditionals and optimization_barrier, returned as their empty i1 tensors, in
 * every backend; refused by the ops that take tensors. The text forms are
 * tests/ir/test_token_text.c. */
#include <string.h>

#include "op_cases.h"
#include "test_util.h"

static const char program[] =
    "func.func @main(%x: tensor<3xf32>, %t: !stablehlo.token, %p: tensor<i1>) -> "
    "(tensor<3xf32>, !stablehlo.token, !stablehlo.token) {\n"
    "  %t0 = stablehlo.create_token : !stablehlo.token\n"
    "  %t1 = stablehlo.after_all %t0, %t : !stablehlo.token\n"
    "  %y, %u = func.call @step(%x, %t1) : (tensor<3xf32>, !stablehlo.token) -> "
    "(tensor<3xf32>, !stablehlo.token)\n"
    "  %i = stablehlo.constant dense<0> : tensor<i32>\n"
    "  %w:3 = stablehlo.while(%a = %i, %b = %y, %c = %u) : tensor<i32>, tensor<3xf32>, "
    "!stablehlo.token\n"
    "    cond {\n"
    "      %n = stablehlo.constant dense<3> : tensor<i32>\n"
    "      %lt = stablehlo.compare LT, %a, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
    "      stablehlo.return %lt : tensor<i1>\n"
    "    } do {\n"
    "      %one = stablehlo.constant dense<1> : tensor<i32>\n"
    "      %a1 = stablehlo.add %a, %one : tensor<i32>\n"
    "      %b1, %c1 = func.call @step(%b, %c) : (tensor<3xf32>, !stablehlo.token) -> "
    "(tensor<3xf32>, !stablehlo.token)\n"
    "      stablehlo.return %a1, %b1, %c1 : tensor<i32>, tensor<3xf32>, !stablehlo.token\n"
    "    }\n"
    "  %r = \"stablehlo.if\"(%p) ({\n"
    "    %k = stablehlo.after_all %w#2 : !stablehlo.token\n"
    "    stablehlo.return %k : !stablehlo.token\n"
    "  }, {\n"
    "    stablehlo.return %t : !stablehlo.token\n"
    "  }) : (tensor<i1>) -> !stablehlo.token\n"
    "  %z:2 = stablehlo.optimization_barrier %w#1, %r : tensor<3xf32>, !stablehlo.token\n"
    "  return %z#0, %z#1, %t0 : tensor<3xf32>, !stablehlo.token, !stablehlo.token\n"
    "}\n"
    "func.func private @step(%x: tensor<3xf32>, %t: !stablehlo.token) -> (tensor<3xf32>, "
    "!stablehlo.token) {\n"
    "  %y = stablehlo.add %x, %x : tensor<3xf32>\n"
    "  %u = stablehlo.after_all %t : !stablehlo.token\n"
    "  return %y, %u : tensor<3xf32>, !stablehlo.token\n"
    "}\n";

/* A token argument or result is its empty i1 tensor at run time (as JAX passes them). */
Test(token, tokens_pass_through_calls_loops_and_branches_in_every_backend) {
    const char *backends[TEST_MAX_BACKENDS];
    int nb = test_backends(backends, TEST_MAX_BACKENDS);
    kiln_ctx *cx = test_ctx();
    for (int b = 0; b < nb; b++) {
        kiln_exe *exe = NULL;
        cr_assert_eq(test_compile_text(cx, program, backends[b], true, &exe), KILN_OK, "%s: %s",
                     backends[b], kiln_ctx_error_message(cx));
        for (int pred = 0; pred < 2; pred++) {
            const float x[3] = {1, -2, 0.5f};
            const uint8_t p = (uint8_t)pred;
            kiln_tensor *args[3] = {kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(3), x, sizeof x),
                                    kiln_tensor_from_host(cx, KILN_BOOL, KILN_SHAPE(0), NULL, 0),
                                    kiln_tensor_from_host(cx, KILN_BOOL, KILN_SHAPE_SCALAR, &p, 1)};
            kiln_tensor *out[3] = {NULL};
            cr_assert_eq(kiln_exe_call(cx, exe, args, out), KILN_OK, "%s: %s", backends[b],
                         kiln_ctx_error_message(cx));
            const float *y = kiln_tensor_data(out[0]);
            for (int i = 0; i < 3; i++) /* doubled once, then three times in the loop */
                cr_assert_eq(y[i], x[i] * 16, "%s: element %d is %g", backends[b], i, y[i]);
            for (int r = 1; r < 3; r++) {
                cr_assert_eq(kiln_tensor_dtype(out[r]), KILN_BOOL, "%s", backends[b]);
                cr_assert_eq(kiln_tensor_numel(out[r]), 0, "%s", backends[b]);
                cr_assert_eq(kiln_tensor_rank(out[r]), 1, "%s", backends[b]);
            }
            for (int i = 0; i < 3; i++) {
                kiln_tensor_release(args[i]);
                kiln_tensor_release(out[i]);
            }
        }
        kiln_exe_release(exe);
    }
    kiln_ctx_release(cx);
}

static void expect_refused(kiln_ctx *cx, const char *op_line, const char *fragment) {
    test_expect_op_refused(cx, "%t: !stablehlo.token, %x: tensor<2xf32>", op_line, fragment);
}

/* Tokens go where StableHLO takes them, and nowhere else. */
Test(token, ops_that_take_tensors_refuse_tokens) {
    kiln_ctx *cx = test_ctx();
    expect_refused(cx, "%0 = stablehlo.add %t, %t : !stablehlo.token",
                   "operand 1 is a !stablehlo.token; stablehlo.add takes tensors");
    expect_refused(cx,
                   "%0 = stablehlo.after_all %t, %x : (!stablehlo.token, tensor<2xf32>) -> "
                   "!stablehlo.token",
                   "operand 2 is f32[2]; after_all joins tokens");
    expect_refused(cx, "%0 = stablehlo.reshape %t : (!stablehlo.token) -> tensor<0xi1>",
                   "operand 1 is a !stablehlo.token; stablehlo.reshape takes tensors");
    expect_refused(cx, "%0 = stablehlo.after_all %t : tensor<0xi1>", "!stablehlo.token");
    kiln_ctx_release(cx);
}

const kiln_op_coverage kiln_cover_token[] = {
    {KILN_OP_AFTER_ALL, "token/tokens_pass_through_calls_loops_and_branches_in_every_backend"},
    {KILN_OP_CREATE_TOKEN, "token/tokens_pass_through_calls_loops_and_branches_in_every_backend"},
    {KILN_OP_COUNT, NULL},
};
