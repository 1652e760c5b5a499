/* SPDX-License-Identifier: Apache-2.0 */
/* The StableHLO text parser: round trips of the printer's goldens, literals, JAX modules,
 * func.call, the check dialect, conformance chunks compiled and run, errors with their
 * positions, and every prefix of a valid program. */
#define _DEFAULT_SOURCE /* mkdtemp, mkfifo */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "goldens.h"
#include "ir/ir.h"
#include "kiln/parse.h"
#include "test_util.h"

/* The printer's goldens (copied from tests/ir/test_print.c). */
static kiln_module *parse_text(kiln_ctx *cx, const char *text, bool checks) {
    kiln_parse_options o = kiln_parse_options_default();
    o.allow_checks = checks;
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), &o, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_not_null(m);
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    return m;
}

static char *reprint(kiln_ctx *cx, const char *text) {
    kiln_module *m = parse_text(cx, text, false);
    char *s = kiln_module_to_string(cx, m);
    cr_assert_not_null(s, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    return s;
}

/* print(parse(text)) == text when the text carries a calling convention; otherwise the
 * second round is a fixpoint. */
static void round_trip(const char *text, const char *tag) {
    kiln_ctx *cx = test_ctx();
    char *once = reprint(cx, text);
    if (strstr(text, "calling convention")) {
        if (strcmp(once, text) != 0) {
            const char *a = once, *b = text;
            while (*a && *a == *b)
                a++, b++;
            cr_assert_fail("%s: differs at\n  got:  %.80s\n  want: %.80s", tag, a, b);
        }
    }
    char *twice = reprint(cx, once);
    cr_assert_str_eq(twice, once, "%s: not a fixpoint", tag);
    kiln_string_free(cx, once);
    kiln_string_free(cx, twice);
    kiln_ctx_release(cx);
}

Test(parse, printer_goldens_round_trip) {
    const struct {
        const char *text, *tag;
    } cases[] = {{golden_emlx, "emlx"},
                 {golden_unary, "unary"},
                 {golden_binary, "binary"},
                 {golden_compare_select, "compare_select"},
                 {golden_rng, "rng"},
                 {golden_movement, "movement"},
                 {golden_indexing, "indexing"},
                 {golden_reductions, "reductions"},
                 {golden_contractions, "contractions"},
                 {golden_control, "control"},
                 {golden_handmade, "handmade"},
                 {golden_names, "names"},
                 {golden_nested_calls, "nested_calls"},
                 {golden_collective, "collective"},
                 {golden_collective_text, "collective_text"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        round_trip(cases[i].text, cases[i].tag);
}

/* Parses, compiles, runs a no-argument module and evaluates its checks. Returns the
 * number of failed checks (-1: no checks). */
static int run_checks(kiln_ctx *cx, const char *text) {
    kiln_module *m = parse_text(cx, text, true);
    int bad = test_run_checks(cx, m);
    kiln_module_release(m);
    return bad;
}

Test(parse, conformance_style_chunks_run_and_check) {
    kiln_ctx *cx = test_ctx();
    const char *chunks[] = {
        "func.func @add_op_test_si64() {\n"
        "  %lhs = stablehlo.constant dense<[0, 1, -9223372036854775808]> : tensor<3xi64>\n"
        "  %rhs = stablehlo.constant dense<[0, 2, 1]> : tensor<3xi64>\n"
        "  %result = stablehlo.add %lhs, %rhs : tensor<3xi64>\n"
        "  check.expect_eq_const %result, dense<[0, 3, -9223372036854775807]> : tensor<3xi64>\n"
        "  func.return\n"
        "}\n",
        "func.func @while() {\n"
        "  %init_i = stablehlo.constant dense<0> : tensor<i64>\n"
        "  %init_sum = stablehlo.constant dense<0> : tensor<i64>\n"
        "  %one = stablehlo.constant dense<1> : tensor<i64>\n"
        "  %ten = stablehlo.constant dense<10> : tensor<i64>\n"
        "  %results0, %results1 = stablehlo.while(%arg0 = %init_i, %arg1 = %init_sum) : "
        "tensor<i64>, tensor<i64>\n"
        "  cond {\n"
        "    %cond = stablehlo.compare LT, %arg0, %ten : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
        "    stablehlo.return %cond : tensor<i1>\n"
        "  } do {\n"
        "    %new_sum = stablehlo.add %arg1, %one : tensor<i64>\n"
        "    %new_i = stablehlo.add %arg0, %one : tensor<i64>\n"
        "    stablehlo.return %new_i, %new_sum : tensor<i64>, tensor<i64>\n"
        "  }\n"
        "  check.expect_eq_const %results0, dense<10> : tensor<i64>\n"
        "  check.expect_eq %results1, %ten : tensor<i64>\n"
        "  func.return\n"
        "}\n",
        "func.func @reduce() {\n"
        "  %input = stablehlo.constant dense<[[0, 1, 2, 3, 4, 5]]> : tensor<1x6xi64>\n"
        "  %init_value = stablehlo.constant dense<0> : tensor<i64>\n"
        "  %result = \"stablehlo.reduce\"(%input, %init_value) ({\n"
        "    ^bb0(%arg0: tensor<i64>, %arg1: tensor<i64>):\n"
        "      %0 = stablehlo.add %arg0, %arg1 : tensor<i64>\n"
        "      stablehlo.return %0 : tensor<i64>\n"
        "  }) {\n"
        "    dimensions = array<i64: 1>\n"
        "  } : (tensor<1x6xi64>, tensor<i64>) -> tensor<1xi64>\n"
        "  check.expect_eq_const %result, dense<[15]> : tensor<1xi64>\n"
        "  func.return\n"
        "}\n",
        "func.func @sort_stable() {\n"
        "  %input0 = stablehlo.constant dense<[[1, 2, 3], [3, 2, 1]]> : tensor<2x3xi64>\n"
        "  %input1 = stablehlo.constant dense<[[3, 2, 1], [1, 2, 3]]> : tensor<2x3xi64>\n"
        "  %result0, %result1 = \"stablehlo.sort\"(%input0, %input1) ({\n"
        "    ^bb0(%arg0: tensor<i64>, %arg1: tensor<i64>, %arg2: tensor<i64>, %arg3: "
        "tensor<i64>):\n"
        "      %predicate = stablehlo.compare GT, %arg0, %arg1 : (tensor<i64>, tensor<i64>) -> "
        "tensor<i1>\n"
        "      stablehlo.return %predicate : tensor<i1>\n"
        "  }) {\n"
        "    dimension = 0 : i64,\n"
        "    is_stable = true\n"
        "  } : (tensor<2x3xi64>, tensor<2x3xi64>) -> (tensor<2x3xi64>, tensor<2x3xi64>)\n"
        "  check.expect_eq_const %result0, dense<[[3, 2, 3], [1, 2, 1]]> : tensor<2x3xi64>\n"
        "  check.expect_eq_const %result1, dense<[[1, 2, 1], [3, 2, 3]]> : tensor<2x3xi64>\n"
        "  func.return\n"
        "}\n",
        "func.func @main() {\n"
        "  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf64>\n"
        "  %1 = func.call @twice(%0) : (tensor<2xf64>) -> tensor<2xf64>\n"
        "  check.expect_almost_eq_const %1, dense<[2.00001, 4.0]> : tensor<2xf64> {tolerance = "
        "0.001 : f64}\n"
        "  check.expect_close %1, %1, max_ulp_difference = 3 : tensor<2xf64>, tensor<2xf64>\n"
        "  check.expect_almost_eq %1, %1, tolerance = 0.1 : tensor<2xf64>\n"
        "  func.return\n"
        "}\n"
        "func.func @twice(%arg0: tensor<2xf64>) -> tensor<2xf64> {\n"
        "  %0 = func.call @add(%arg0, %arg0) : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>\n"
        "  func.return %0 : tensor<2xf64>\n"
        "}\n"
        "func.func private @add(%a: tensor<2xf64>, %b: tensor<2xf64>) -> tensor<2xf64> {\n"
        "  %0 = stablehlo.add %a, %b : tensor<2xf64>\n"
        "  func.return %0 : tensor<2xf64>\n"
        "}\n",
    };
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++)
        cr_assert_eq(run_checks(cx, chunks[i]), 0, "chunk %zu", i);
    /* a failing check reports the first mismatch */
    const char *bad = "func.func @f() {\n"
                      "  %0 = stablehlo.constant dense<[1.0, 2.0, 3.0, 1.5]> : tensor<4xf32>\n"
                      "  check.expect_eq_const %0, dense<[1.0, 2.0, 3.0, 2.0]> : tensor<4xf32>\n"
                      "  func.return\n"
                      "}\n";
    kiln_module *m = parse_text(cx, bad, true);
    const kiln_check *c;
    int32_t n;
    cr_assert_eq(kiln_module_checks(cx, m, &c, &n), KILN_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(c[0].line, 3);
    kiln_tensor *v =
        kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), (float[]){1, 2, 3, 1.5f}, 16);
    cr_assert_eq(kiln_check_evaluate(cx, &c[0], v, NULL), KILN_FAILED_PRECONDITION);
    cr_assert_str_eq(kiln_ctx_error_message(cx), "index 3: got 1.5, expected 2");
    kiln_ctx_clear_error(cx);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(parse, check_semantics) {
    kiln_ctx *cx = test_ctx();
    kiln_check eq = {.kind = KILN_CHECK_EQ, .expected_result = -1};
    kiln_tensor *a =
        kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(3), (double[]){-0.0, NAN, INFINITY}, 24);
    kiln_tensor *b =
        kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(3), (double[]){0.0, NAN, INFINITY}, 24);
    cr_assert_eq(kiln_check_evaluate(cx, &eq, a, b), KILN_FAILED_PRECONDITION); /* NaN != NaN */
    kiln_ctx_clear_error(cx);
    kiln_check almost = {.kind = KILN_CHECK_ALMOST_EQ, .tolerance = 1e-4, .expected_result = -1};
    cr_assert_eq(kiln_check_evaluate(cx, &almost, a, b), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_check close = {.kind = KILN_CHECK_CLOSE, .max_ulp = 1, .expected_result = -1};
    cr_assert_eq(kiln_check_evaluate(cx, &close, a, b), KILN_OK, "%s", kiln_ctx_error_message(cx));
    double x = 1.0, y = nextafter(nextafter(1.0, 2.0), 2.0);
    kiln_tensor *c1 = kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(1), &x, 8);
    kiln_tensor *c2 = kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(1), &y, 8);
    cr_assert_eq(kiln_check_evaluate(cx, &close, c1, c2), KILN_FAILED_PRECONDITION);
    kiln_ctx_clear_error(cx);
    close.max_ulp = 2;
    cr_assert_eq(kiln_check_evaluate(cx, &close, c1, c2), KILN_OK);
    kiln_ctx_release(cx);
}

Test(parse, literals) {
    kiln_ctx *cx = test_ctx();
    const char *text =
        "func.func @main() -> (tensor<2xi1>, tensor<3xi1>, tensor<ui64>, tensor<i64>, "
        "tensor<2xf32>, tensor<bf16>, tensor<f16>, tensor<4xf32>, tensor<2x2xf32>, tensor<0x3xi8>, "
        "tensor<2xi32>) {\n"
        "  %0 = stablehlo.constant dense<[true, false]> : tensor<2xi1>\n"
        "  %1 = stablehlo.constant dense<[0, 1, 1]> : tensor<3xi1>\n"
        "  %2 = stablehlo.constant dense<18446744073709551615> : tensor<ui64>\n"
        "  %3 = stablehlo.constant dense<-9223372036854775808> : tensor<i64>\n"
        "  %4 = stablehlo.constant dense<[3.14159265358979323846, -8.74227765E-8]> : "
        "tensor<2xf32>\n"
        "  %5 = stablehlo.constant dense<0.1> : tensor<bf16>\n"
        "  %6 = stablehlo.constant dense<0x7E00> : tensor<f16>\n"
        "  %7 = stablehlo.constant dense<\"0x0000803F000000400000404000008040\"> : tensor<4xf32>\n"
        "  %8 = stablehlo.constant dense<2.5> : tensor<2x2xf32>\n"
        "  %9 = stablehlo.constant dense<> : tensor<0x3xi8>\n"
        "  %10 = stablehlo.constant dense<[0x10, -3]> : tensor<2xi32>\n"
        "  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10 : tensor<2xi1>, tensor<3xi1>, "
        "tensor<ui64>, tensor<i64>, tensor<2xf32>, tensor<bf16>, tensor<f16>, tensor<4xf32>, "
        "tensor<2x2xf32>, tensor<0x3xi8>, tensor<2xi32>\n"
        "}\n";
    kiln_module *m = parse_text(cx, text, false);
    const kiln__block *b = m->funcs[0]->body;
    const kiln_tensor *t[11];
    for (int i = 0; i < 11; i++)
        t[i] = b->results[i]->def->attrs->u.constant;
    const uint8_t *b0 = kiln_tensor_data(t[0]), *b1 = kiln_tensor_data(t[1]);
    cr_assert(b0[0] == 1 && b0[1] == 0 && b1[0] == 0 && b1[1] == 1 && b1[2] == 1);
    cr_assert_eq(*(const uint64_t *)kiln_tensor_data(t[2]), UINT64_MAX);
    cr_assert_eq(*(const int64_t *)kiln_tensor_data(t[3]), INT64_MIN);
    const float *f4 = kiln_tensor_data(t[4]);
    cr_assert_eq(f4[0], 3.14159265358979323846f);
    cr_assert_eq(f4[1], -8.74227765E-8f);
    cr_assert_eq(*(const uint16_t *)kiln_tensor_data(t[5]), 0x3DCD); /* 0.1 in bf16 */
    cr_assert_eq(*(const uint16_t *)kiln_tensor_data(t[6]), 0x7E00);
    const float *f7 = kiln_tensor_data(t[7]);
    cr_assert(f7[0] == 1 && f7[1] == 2 && f7[2] == 3 && f7[3] == 4);
    const float *f8 = kiln_tensor_data(t[8]);
    cr_assert(f8[0] == 2.5f && f8[3] == 2.5f);
    cr_assert_eq(kiln_tensor_numel(t[9]), 0);
    const int32_t *i10 = kiln_tensor_data(t[10]);
    cr_assert(i10[0] == 16 && i10[1] == -3);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(parse, jax_module_with_donation) {
    kiln_ctx *cx = test_ctx();
    const char *text =
        "module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n"
        "  func.func public @main(%arg0: tensor<2x3xf32> {mhlo.layout_mode = \"default\", "
        "tf.aliasing_output = 0 : i32}, %arg1: tensor<2x3xf32> {jax.buffer_donor = true}) -> "
        "(tensor<2x3xf32> {jax.result_info = \"\", mhlo.layout_mode = \"default\"}) {\n"
        "    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
        "    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>\n"
        "    %1 = stablehlo.multiply %arg0, %0 : tensor<2x3xf32>\n"
        "    %2 = stablehlo.add %1, %arg1 : tensor<2x3xf32>\n"
        "    return %2 : tensor<2x3xf32>\n"
        "  }\n"
        "}\n";
    kiln_module *m = parse_text(cx, text, false);
    kiln_module_info info;
    cr_assert_eq(kiln_module_info_get(cx, m, &info), KILN_OK);
    cr_assert_eq(info.n_args, 2);
    cr_assert(info.donated[0] && info.donated[1]);
    cr_assert_eq(info.aliases[0], 0);
    cr_assert_eq(info.preserved[0], -1);
    kiln_exe *exe;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    float xs[6] = {1, 2, 3, 4, 5, 6};
    kiln_tensor *x = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 3), xs, sizeof xs);
    kiln_tensor *y = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 3), xs, sizeof xs);
    kiln_tensor *r;
    cr_assert_eq(kiln_exe_call_n(cx, exe, (kiln_tensor *[]){x, y}, 2, &r, 1), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    const float *rs = kiln_tensor_data(r);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(rs[i], 3 * xs[i]);
    cr_assert_str_eq(m->name, "jit_f");
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static void parse_fails(const char *text, bool checks, const char *message) {
    kiln_ctx *cx = test_ctx();
    kiln_parse_options o = kiln_parse_options_default();
    o.allow_checks = checks;
    o.filename = "t.mlir";
    kiln_module *m = (kiln_module *)1;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), &o, &m), KILN_INVALID_ARGUMENT,
                 "accepted: %s", text);
    cr_assert_null(m);
    cr_assert_str_eq(kiln_ctx_error_message(cx), message);
    kiln_ctx_release(cx);
}

Test(parse, errors_name_line_and_column) {
    parse_fails("func.func @f() {\n  %0 = stablehlo.frobnicate %0 : tensor<f32>\n  return\n}\n",
                false, "t.mlir:2:8: error: unknown op 'stablehlo.frobnicate'");
    parse_fails("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                "  %0 = stablehlo.add %a, %b : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n",
                false, "t.mlir:2:26: error: use of undefined value '%b'");
    parse_fails("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                "  %a = stablehlo.add %a, %a : tensor<2xf32>\n  return %a : tensor<2xf32>\n}\n",
                false, "t.mlir:2:3: error: redefinition of value '%a'");
    parse_fails("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                "  %0 = stablehlo.add %a, %a : tensor<3xf32>\n  return %0 : tensor<2xf32>\n}\n",
                false,
                "t.mlir:2:31: error: type mismatch: operand 0 is tensor<2xf32>, the op's type "
                "says tensor<3xf32>");
    parse_fails("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                "  %0 = stablehlo.add %a : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n",
                false, "t.mlir:2:8: error: stablehlo.add takes 2 operands, got 1");
    parse_fails("func.func @f() -> tensor<2xf32> {\n"
                "  %0 = stablehlo.constant dense<[1.0, 2.0> : tensor<2xf32>\n  return %0 : "
                "tensor<2xf32>\n}\n",
                false,
                "t.mlir:2:42: error: expected ']' to close a list in a dense literal, found '>'");
    parse_fails("func.func @f() -> tensor<3xf32> {\n"
                "  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<3xf32>\n  return %0 : "
                "tensor<3xf32>\n}\n",
                false, "t.mlir:2:33: error: dense literal shape does not match tensor<3xf32>");
    parse_fails("func.func @f() {\n  %0 = stablehlo.constant dense<1> : tensor<i64>\n"
                "  check.expect_eq_const %0, dense<1> : tensor<i64>\n  func.return\n}\n",
                false, "t.mlir:3:3: error: check op 'check.expect_eq_const' needs allow_checks");
    parse_fails("module @\"abc {\n}\n", false, "t.mlir:1:9: error: unterminated string");
    parse_fails("func.func @f() {\n  func.return\n", false,
                "t.mlir:3:1: error: expected '}' after the terminator, found end of input");
    parse_fails("func.func @f() {\n  %0 = func.call @g() : () -> tensor<i64>\n  func.return\n}\n",
                false, "t.mlir:2:18: error: call to undefined function @g");
    parse_fails("func.func @f() {\n  func.call @f() : () -> ()\n  func.return\n}\n", false,
                "t.mlir:2:13: error: @f calls itself (recursion?)");
    parse_fails("func.func @main() {\n  func.call @g() : () -> ()\n  func.return\n}\n"
                "func.func @g() {\n  func.call @main() : () -> ()\n  func.return\n}\n",
                false, "t.mlir:6:13: error: @main calls itself (recursion?)");
}

/* A chain of n functions, @f0 calling @f1 ... calling @f<n-1>, each adding one. */
static char *call_chain(int n) {
    size_t cap = (size_t)n * 400 + 64, len = 0;
    char *s = malloc(cap);
    cr_assert_not_null(s);
    for (int i = 0; i < n; i++) {
        if (i + 1 < n)
            len += (size_t)snprintf(s + len, cap - len,
                                    "func.func @f%d(%%x: tensor<i32>) -> tensor<i32> {\n"
                                    "  %%0 = func.call @f%d(%%x) : (tensor<i32>) -> tensor<i32>\n",
                                    i, i + 1);
        else
            len += (size_t)snprintf(s + len, cap - len,
                                    "func.func @f%d(%%x: tensor<i32>) -> tensor<i32> {\n"
                                    "  %%0 = stablehlo.abs %%x : tensor<i32>\n",
                                    i);
        len += (size_t)snprintf(s + len, cap - len,
                                "  %%c = stablehlo.constant dense<1> : tensor<i32>\n"
                                "  %%1 = stablehlo.add %%0, %%c : tensor<i32>\n"
                                "  return %%1 : tensor<i32>\n}\n");
    }
    return s;
}

Test(parse, calls_nest_to_the_limit_and_no_deeper) {
    kiln_ctx *cx = test_ctx();
    kiln_parse_options o = kiln_parse_options_default();
    o.entry = "f0";
    /* 65 functions: 64 levels of calls, each a copy of its callee's (complete) body */
    char *text = call_chain(65);
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), &o, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *x = kiln_scalar(cx, -5, KILN_I32), *y = NULL;
    cr_assert_eq(kiln_exe_call_n(cx, exe, &x, 1, &y, 1), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(*(const int32_t *)kiln_tensor_data(y), 5 + 65);
    kiln_exe_release(exe);
    kiln_module_release(m);
    free(text);
    text = call_chain(66);
    cr_assert_neq(kiln_module_parse(cx, text, strlen(text), &o, &m), KILN_OK);
    cr_assert(strstr(kiln_ctx_error_message(cx), "error: calls nested more than 64 deep"), "%s",
              kiln_ctx_error_message(cx));
    free(text);
    kiln_ctx_release(cx);
}

Test(parse, first_line_offsets_positions) {
    kiln_ctx *cx = test_ctx();
    kiln_parse_options o = kiln_parse_options_default();
    o.filename = "x.mlir";
    o.first_line = 40;
    const char *text = "func.func @f() {\n  %0 = stablehlo.bogus : tensor<f32>\n}\n";
    kiln_module *m;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), &o, &m), KILN_INVALID_ARGUMENT);
    cr_assert_str_eq(kiln_ctx_error_message(cx),
                     "x.mlir:41:8: error: unknown op 'stablehlo.bogus'");
    kiln_ctx_release(cx);
}

/* Every prefix of valid programs parses or fails cleanly (run under ASan: no read past the
 * length; the prefix is copied into an exact-size buffer). */
Test(parse, every_prefix_fails_cleanly) {
    kiln_ctx *cx = test_ctx();
    const char *texts[] = {golden_control, golden_reductions, golden_indexing, golden_contractions,
                           golden_emlx};
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        size_t n = strlen(texts[t]);
        for (size_t len = 0; len <= n; len++) {
            char *buf = malloc(len ? len : 1);
            cr_assert_not_null(buf);
            memcpy(buf, texts[t], len);
            kiln_module *m = NULL;
            kiln_status s = kiln_module_parse(cx, buf, len, NULL, &m);
            if (s == KILN_OK)
                kiln_module_release(m);
            else
                cr_assert_eq(s, KILN_INVALID_ARGUMENT, "%s", kiln_ctx_error_message(cx));
            kiln_ctx_clear_error(cx);
            free(buf);
        }
    }
    kiln_ctx_release(cx);
}

Test(parse, deep_nesting_is_an_error) {
    kiln_ctx *cx = test_ctx();
    char text[4096];
    size_t o =
        (size_t)snprintf(text, sizeof text, "func.func @f() {\n  %%0 = stablehlo.constant dense<");
    for (int i = 0; i < 200; i++)
        text[o++] = '[';
    text[o] = '\0';
    kiln_module *m;
    cr_assert_eq(kiln_module_parse(cx, text, o, NULL, &m), KILN_INVALID_ARGUMENT);
    kiln_ctx_release(cx);
}

Test(parse, files_are_read_only_when_regular) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = NULL;
    /* A device would never end and a FIFO would wait for a writer: both are refused. */
    cr_assert_eq(kiln_module_parse_file(cx, "/dev/zero", NULL, &m), KILN_INVALID_ARGUMENT);
    cr_assert_null(m);
    expect_error(cx, KILN_INVALID_ARGUMENT, "/dev/zero: not a regular file");
    char fifo[] = "/tmp/kiln_parse_fifo_XXXXXX";
    cr_assert_not_null(mkdtemp(fifo));
    char path[sizeof fifo + 16];
    snprintf(path, sizeof path, "%s/p.mlir", fifo);
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_assert_eq(kiln_module_parse_file(cx, path, NULL, &m), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "p.mlir: not a regular file");
    unlink(path);
    rmdir(fifo);
    cr_assert_eq(kiln_module_parse_file(cx, "/nonexistent/m.mlir", NULL, &m), KILN_NOT_FOUND);
    expect_error(cx, KILN_NOT_FOUND, "/nonexistent/m.mlir: cannot open for reading");
    /* A regular file is read to its size and parsed, with its path in positions. */
    char file[] = "/tmp/kiln_parse_file_XXXXXX";
    int fd = mkstemp(file);
    cr_assert_geq(fd, 0);
    const char text[] = "func.func @main(%x: tensor<f32>) -> tensor<f32> {\n  return %y : "
                        "tensor<f32>\n}\n";
    cr_assert_eq(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    cr_assert_eq(kiln_module_parse_file(cx, file, NULL, &m), KILN_INVALID_ARGUMENT);
    cr_assert(strstr(kiln_ctx_error_message(cx), file) != NULL, "%s", kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);
    unlink(file);
    kiln_ctx_release(cx);
}

/* An allocator that refuses blocks over 64 MiB and remembers the largest one asked for. */
static void *capped_alloc(void *user, size_t size, size_t alignment) {
    size_t *largest = user;
    if (size > *largest) *largest = size;
    if (size > ((size_t)64 << 20)) return NULL;
    const kiln_allocator *a = kiln_allocator_default();
    return a->alloc(a->user, size, alignment);
}

static void capped_free(void *user, void *ptr, size_t size) {
    (void)user;
    const kiln_allocator *a = kiln_allocator_default();
    a->free(a->user, ptr, size);
}

Test(parse, literals_are_checked_before_memory_is_taken) {
    size_t largest = 0;
    kiln_allocator capped = {capped_alloc, capped_free, &largest};
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &capped;
    kiln_ctx *cx;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    /* Literals that do not fit a type of 2^32 elements (16 GiB of f32) fail as such, having
     * allocated nothing of that size. */
    static const char *const wrong[][2] = {
        {"dense<[1.0, 2.0]>", "dense literal shape does not match"},
        {"dense<\"0x0000803F0000803F\">", "hex blob has 8 bytes"},
        {"dense<>", "dense<> has no elements"}};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "func.func @main() -> tensor<4294967296xf32> {\n"
                 "  %%0 = stablehlo.constant %s : tensor<4294967296xf32>\n"
                 "  return %%0 : tensor<4294967296xf32>\n}\n",
                 wrong[i][0]);
        kiln_module *m = NULL;
        largest = 0;
        cr_assert_neq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK);
        expect_error(cx, KILN_INVALID_ARGUMENT, wrong[i][1]);
        cr_assert_lt(largest, (size_t)1 << 20, "%s: a block of %zu bytes was asked for",
                     wrong[i][0], largest);
    }
    /* A splat of 2^32 elements stays one element through parsing and compiling: a scalar
     * constant broadcast to its type, which a slice of it fuses with. */
    const char huge[] = "func.func @main() -> tensor<3xf32> {\n"
                        "  %0 = stablehlo.constant dense<1.5> : tensor<4294967296xf32>\n"
                        "  %1 = stablehlo.slice %0 [7:10] : (tensor<4294967296xf32>) -> "
                        "tensor<3xf32>\n"
                        "  return %1 : tensor<3xf32>\n}\n";
    kiln_module *hm = NULL;
    largest = 0;
    cr_assert_eq(kiln_module_parse(cx, huge, sizeof huge - 1, NULL, &hm), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *text = kiln_module_to_string(cx, hm);
    cr_assert(strstr(text, "stablehlo.constant dense<1.500000e+00> : tensor<f32>") &&
                  strstr(text, "stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> "
                               "tensor<4294967296xf32>"),
              "%s", text);
    kiln_string_free(cx, text);
    kiln_exe *hexe = NULL;
    cr_assert_eq(kiln_compile(cx, hm, NULL, &hexe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *hr = NULL;
    cr_assert_eq(kiln_exe_call(cx, hexe, NULL, &hr), KILN_OK, "%s", kiln_ctx_error_message(cx));
    for (int i = 0; i < 3; i++)
        cr_assert_eq(((const float *)kiln_tensor_data(hr))[i], 1.5f);
    cr_assert_lt(largest, (size_t)1 << 20, "a block of %zu bytes was asked for", largest);
    kiln_exe_release(hexe);
    kiln_module_release(hm);
    /* A splat of 2^24 elements (64 MiB) becomes the result, written once by the call. */
    const char splat[] = "func.func @main() -> tensor<16777216xf32> {\n"
                         "  %0 = stablehlo.constant dense<2.5> : tensor<16777216xf32>\n"
                         "  return %0 : tensor<16777216xf32>\n}\n";
    kiln_module *m = NULL;
    largest = 0;
    cr_assert_eq(kiln_module_parse(cx, splat, sizeof splat - 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_leq(largest, (size_t)64 << 20, "the splat is allocated once: %zu", largest);
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, NULL, &r), KILN_OK, "%s", kiln_ctx_error_message(cx));
    const float *v = kiln_tensor_data(r);
    for (int64_t i = 0; i < kiln_tensor_numel(r); i++)
        if (v[i] != 2.5f) cr_assert_fail("element %lld is %g", (long long)i, v[i]);
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* n nested stablehlo.if: each region but the innermost holds the next if. */
static char *nested_ifs(int n, size_t *out_len) {
    size_t cap = 256 + (size_t)n * 200, len = 0;
    char *t = malloc(cap);
    cr_assert_not_null(t);
    len +=
        (size_t)snprintf(t + len, cap - len,
                         "func.func @main(%%p: tensor<i1>, %%x: tensor<f32>) -> tensor<f32> {\n");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len, "%%v%d = \"stablehlo.if\"(%%p) ({\n", i);
    len += (size_t)snprintf(t + len, cap - len, "stablehlo.return %%x : tensor<f32>\n");
    for (int i = n - 1; i >= 0; i--)
        len += (size_t)snprintf(t + len, cap - len,
                                "}, {\nstablehlo.return %%x : tensor<f32>\n"
                                "}) : (tensor<i1>) -> tensor<f32>\n%s %%v%d : tensor<f32>\n",
                                i ? "stablehlo.return" : "return", i);
    len += (size_t)snprintf(t + len, cap - len, "}\n");
    *out_len = len;
    return t;
}

typedef struct {
    const char *text;
    size_t len;
    kiln_status status;
    char message[256];
} parse_job;

static void *parse_on_thread(void *user) {
    parse_job *j = user;
    kiln_ctx *cx = NULL;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return NULL;
    kiln_module *m = NULL;
    j->status = kiln_module_parse(cx, j->text, j->len, NULL, &m);
    snprintf(j->message, sizeof j->message, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    kiln_ctx_release(cx);
    return NULL;
}

/* Parses on a thread with a stack of stack_kib KiB. */
static parse_job parse_with_stack(const char *text, size_t len, size_t stack_kib) {
    parse_job j = {text, len, KILN_INTERNAL, ""};
    test_run_with_stack(parse_on_thread, &j, stack_kib);
    return j;
}

Test(parse, nesting_to_the_limit_and_small_thread_stacks) {
    size_t len;
    /* A few ops on a 128 KiB stack, then nesting on larger ones. */
    const char small[] = "func.func @main(%x: tensor<f32>) -> tensor<f32> {\n"
                         "  %0 = stablehlo.add %x, %x : tensor<f32>\n"
                         "  %1 = stablehlo.multiply %0, %x : tensor<f32>\n"
                         "  return %1 : tensor<f32>\n}\n";
    parse_job j = parse_with_stack(small, sizeof small - 1, 128);
    cr_assert_eq(j.status, KILN_OK, "%s", j.message);
    char *deep = nested_ifs(24, &len);
    j = parse_with_stack(deep, len, 1024);
    cr_assert_eq(j.status, KILN_OK, "%s", j.message);
    free(deep);
    deep = nested_ifs(47, &len);
    j = parse_with_stack(deep, len, 1024);
    cr_assert_eq(j.status, KILN_OK, "47 levels: %s", j.message);
    free(deep);
    /* The parser's limit (160 levels of regions, lists and attributes) is above tracing's
     * (128), so that kiln reads back what it prints; past it, an error. */
    deep = nested_ifs(140, &len);
    j = parse_with_stack(deep, len, 8192);
    cr_assert_eq(j.status, KILN_OK, "140 levels: %s", j.message);
    free(deep);
    deep = nested_ifs(170, &len);
    j = parse_with_stack(deep, len, 8192);
    cr_assert_eq(j.status, KILN_INVALID_ARGUMENT);
    cr_assert(strstr(j.message, "nesting too deep (more than 160 levels)") != NULL, "%s",
              j.message);
    free(deep);
    /* Where the stack is too small for the nesting, an error rather than a crash. */
    deep = nested_ifs(140, &len);
    j = parse_with_stack(deep, len, 128);
    cr_assert_eq(j.status, KILN_INVALID_ARGUMENT);
    cr_assert(strstr(j.message, "nesting too deep for this thread's stack") != NULL, "%s",
              j.message);
    free(deep);
}

/* JAX's text with debug information: location aliases before and after the module and
 * loc(...) after arguments, ops, bodies and the module. They are read as whitespace, so
 * the module is the one without them (the result's name stays); names that merely start
 * with "loc" are untouched. */
Test(parse, locations_are_read_and_dropped) {
    static const char with_locs[] =
        "#loc1 = loc(\"x\")\n"
        "module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n"
        "  func.func public @main(%arg0: tensor<4xf32> loc(\"x\")) -> (tensor<4xf32> "
        "{jax.result_info = \"result\"}) {\n"
        "    %loc = stablehlo.sine %arg0 : tensor<4xf32> loc(#loc7)\n"
        "    %0 = func.call @loc(%loc) : (tensor<4xf32>) -> tensor<4xf32> loc(callsite(#loc3 at "
        "#loc4))\n"
        "    return %0 : tensor<4xf32> loc(#loc)\n"
        "  } loc(#loc)\n"
        "  func.func private @loc(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "    %1 = stablehlo.cosine %a : tensor<4xf32> loc(fused[\"a(b)\", #loc2])\n"
        "    return %1 : tensor<4xf32>\n"
        "  }\n"
        "} loc(#loc)\n"
        "#loc = loc(unknown)\n"
        "#loc3 = loc(\"<string>\":5:4 to :69)\n";
    static const char without[] =
        "module @jit_f {\n"
        "  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = "
        "\"result\"}) {\n"
        "    %loc = stablehlo.sine %arg0 : tensor<4xf32>\n"
        "    %0 = func.call @loc(%loc) : (tensor<4xf32>) -> tensor<4xf32>\n"
        "    return %0 : tensor<4xf32>\n"
        "  }\n"
        "  func.func private @loc(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "    %1 = stablehlo.cosine %a : tensor<4xf32>\n"
        "    return %1 : tensor<4xf32>\n"
        "  }\n"
        "}\n";
    kiln_ctx *cx = test_ctx();
    char *a = reprint(cx, with_locs), *b = reprint(cx, without);
    cr_assert_str_eq(a, b);
    kiln_string_free(cx, a);
    kiln_string_free(cx, b);
    /* An unbalanced location is not skipped: the parser says where it is. */
    static const char broken[] = "func.func @f() {\n  return loc(\"x\"\n}\n";
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, broken, strlen(broken), NULL, &m), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "<text>:2:");
    kiln_ctx_release(cx);
}

/* A type whose dimensions' product does not fit (empty, but its strides could not be
 * computed) is refused where the parser reads it, as is a result that an op would make
 * that large. */
Test(parse, types_too_large_for_their_strides_are_errors) {
    kiln_ctx *cx = test_ctx();
    static const char arg[] = "func.func @main(%a: tensor<0x4611686018427387904x3xf32>) -> "
                              "tensor<0x4611686018427387904x3xf32> {\n"
                              "  return %a : tensor<0x4611686018427387904x3xf32>\n}\n";
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, arg, sizeof arg - 1, NULL, &m), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "1:21: error: tensor type too large: the product of its dimensions overflows");
    static const char result[] =
        "func.func @main(%a: tensor<0x1152921504606846976xf32>) -> "
        "tensor<0x1152921504606846976xf32> {\n"
        "  %0 = stablehlo.concatenate %a, %a, %a, %a, %a, dim = 1 : "
        "(tensor<0x1152921504606846976xf32>, "
        "tensor<0x1152921504606846976xf32>, tensor<0x1152921504606846976xf32>, "
        "tensor<0x1152921504606846976xf32>, tensor<0x1152921504606846976xf32>) -> "
        "tensor<0x5764607523034234880xf32>\n"
        "  return %a : tensor<0x1152921504606846976xf32>\n}\n";
    cr_assert_eq(kiln_module_parse(cx, result, sizeof result - 1, NULL, &m), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "too large");
    cr_assert_null(m);
    kiln_ctx_release(cx);
}

/* A parsed call keeps its callee's name when printed (each call's callee is a copy: a
 * second copy of the same function gets a suffix), and the text reads back. */
Test(parse, callees_keep_their_names_when_printed) {
    static const char text[] =
        "module @m {\n"
        "  func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {\n"
        "    %0 = func.call @relu(%arg0) : (tensor<3xf32>) -> tensor<3xf32>\n"
        "    %1 = func.call @relu(%0) : (tensor<3xf32>) -> tensor<3xf32>\n"
        "    return %1 : tensor<3xf32>\n"
        "  }\n"
        "  func.func private @relu(%x: tensor<3xf32>) -> tensor<3xf32> {\n"
        "    %c = stablehlo.constant dense<0.0> : tensor<3xf32>\n"
        "    %r = stablehlo.maximum %x, %c : tensor<3xf32>\n"
        "    return %r : tensor<3xf32>\n"
        "  }\n"
        "}\n";
    kiln_ctx *cx = test_ctx();
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, sizeof text - 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *printed = kiln_module_to_string(cx, m);
    cr_assert_not_null(printed);
    cr_assert(strstr(printed, "func.call @relu(%arg0)"), "%s", printed);
    cr_assert(strstr(printed, "func.call @relu_1("), "%s", printed);
    cr_assert(strstr(printed, "func.func private @relu("), "%s", printed);
    cr_assert(strstr(printed, "func.func private @relu_1("), "%s", printed);
    cr_assert_null(strstr(printed, "callee_"), "%s", printed);
    kiln_module *back = NULL;
    cr_assert_eq(kiln_module_parse(cx, printed, strlen(printed), NULL, &back), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *again = kiln_module_to_string(cx, back);
    cr_assert_str_eq(again, printed);
    kiln_string_free(cx, again);
    kiln_string_free(cx, printed);
    kiln_module_release(back);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}
