/* SPDX-License-Identifier: Apache-2.0 */
/* Golden text for each simplification pass (src/passes): a function in StableHLO text is
 * parsed, one pass (or the bounded canonicalize + cse + dce pipeline) runs, and the printed
 * function must equal the golden. Each golden is itself checked to be the printer's form
 * (it parses and prints back to itself), and the rewritten function must compute the same
 * bits as the original on inputs full of the values that break careless identities (-0,
 * +0, NaN, infinities, 1, -1, the integer extremes). Every rewrite has a case, and so has
 * every near miss that must be left alone. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ir/ir.h"
#include "passes/passes.h"
#include "test_util.h"

typedef enum which { CANON, CSE, DCE, LICM, UNROLL, SIMPLIFY } which;

/* The printed entry function of m, without the module wrapper and its comment lines, and
 * de-indented by two spaces (so that it reads like the inputs below). Caller frees. */
static char *func_text(kiln_ctx *cx, const kiln_module *m) {
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text, "%s", kiln_ctx_error_message(cx));
    size_t n = strlen(text);
    char *out = malloc(n + 1), *w = out;
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) + 1 : strlen(p);
        bool skip = strncmp(p, "module ", 7) == 0 || strncmp(p, "  //", 4) == 0 ||
                    (len >= 1 && p[0] == '}');
        if (!skip) {
            size_t indent = len >= 2 && p[0] == ' ' && p[1] == ' ' ? 2 : 0;
            memcpy(w, p + indent, len - indent);
            w += len - indent;
        }
        p += len;
    }
    *w = '\0';
    kiln_string_free(cx, text);
    return out;
}

static kiln_module *parse(kiln_ctx *cx, const char *text, const char *tag) {
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s: %s", tag,
                 kiln_ctx_error_message(cx));
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s: %s", tag, kiln_ctx_error_message(cx));
    return m;
}

static int32_t run_pass(kiln_module *m, which w) {
    switch (w) {
    case CANON: return kiln__pass_canonicalize(m);
    case CSE: return kiln__pass_cse(m);
    case DCE: return kiln__pass_dce(m);
    case LICM: return kiln__pass_licm(m);
    case UNROLL: return kiln__pass_unroll(m) + kiln__pass_dce(m);
    case SIMPLIFY: return kiln__passes_simplify(m, 0);
    }
    return 0;
}

/* ---- same results before and after ---------------------------------------------------- */

static uint64_t mix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* An input of type t whose first elements are the troublesome values. */
static kiln_tensor *input(kiln_ctx *cx, const kiln__type *t, uint64_t seed) {
    int64_t n = 1;
    for (int32_t i = 0; i < t->shape.rank; i++)
        n *= t->shape.dims[i];
    size_t w = kiln_dtype_size(t->dtype);
    unsigned char *buf = calloc((size_t)n + 1, w);
    static const double fspecial[] = {-0.0, 0.0, NAN, INFINITY, -INFINITY, 1.0, -1.0, 0.5};
    static const int64_t ispecial[] = {0, 1, -1, INT64_MIN, INT64_MAX, 2, -2, 127};
    for (int64_t i = 0; i < n; i++) {
        unsigned char *e = buf + (size_t)i * w;
        uint64_t r = mix(&seed);
        if (kiln_dtype_is_float(t->dtype)) {
            double v = i < 8 ? fspecial[i] : (double)(int64_t)(r % 2001 - 1000) / 100.0;
            float f = (float)v;
            uint16_t h = t->dtype == KILN_F16 ? kiln_f32_to_f16(f) : kiln_f32_to_bf16(f);
            if (t->dtype == KILN_F64)
                memcpy(e, &v, 8);
            else if (t->dtype == KILN_F32)
                memcpy(e, &f, 4);
            else
                memcpy(e, &h, 2);
        } else {
            uint64_t v = i < 8 ? (uint64_t)ispecial[i] : r;
            if (t->dtype == KILN_BOOL) v &= 1;
            memcpy(e, &v, w);
        }
    }
    kiln_tensor *x = kiln_tensor_from_host(cx, t->dtype, t->shape, buf, (size_t)n * w);
    free(buf);
    cr_assert_not_null(x, "%s", kiln_ctx_error_message(cx));
    return x;
}

/* Compiles both modules exactly as they are (no passes, no folding) and checks that they
 * give the same bits on the same inputs. */
static void expect_same_results(kiln_ctx *cx, kiln_module *before, kiln_module *after,
                                const char *tag) {
    kiln_compile_options o = kiln_compile_options_default();
    o.disable_passes = true;
    o.disable_constant_folding = true;
    kiln_exe *e1 = NULL, *e2 = NULL;
    cr_assert_eq(kiln_compile(cx, before, &o, &e1), KILN_OK, "%s: %s", tag,
                 kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_compile(cx, after, &o, &e2), KILN_OK, "%s: %s", tag,
                 kiln_ctx_error_message(cx));
    const kiln__block *body = before->funcs[0]->body;
    kiln_tensor *args[16];
    cr_assert_leq(body->n_args, 16);
    cr_assert_leq(body->n_results, 16);
    kiln_scope_begin(cx);
    for (int32_t i = 0; i < body->n_args; i++)
        args[i] = input(cx, body->args[i]->type, (uint64_t)i * 7919u + 1u);
    kiln_tensor *r1[16], *r2[16];
    cr_assert_eq(kiln_exe_call(cx, e1, args, r1), KILN_OK, "%s: %s", tag,
                 kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_exe_call(cx, e2, args, r2), KILN_OK, "%s: %s", tag,
                 kiln_ctx_error_message(cx));
    for (int32_t r = 0; r < body->n_results; r++) {
        size_t n = kiln_tensor_nbytes(r1[r]);
        cr_assert_eq(n, kiln_tensor_nbytes(r2[r]), "%s: result %d size", tag, (int)r);
        cr_assert(n == 0 || memcmp(kiln_tensor_data(r1[r]), kiln_tensor_data(r2[r]), n) == 0,
                  "%s: result %d differs after the pass", tag, (int)r);
    }
    kiln_scope_end(cx);
    kiln_exe_release(e1);
    kiln_exe_release(e2);
}

/* Parses `input`, runs the pass, compares with `golden` (the input itself when NULL: nothing
 * may change). Returns the pass's change count. */
static int32_t golden(const char *input_text, which w, const char *want, const char *tag) {
    kiln_ctx *cx = test_ctx();
    kiln_module *before = parse(cx, input_text, tag);
    kiln_module *m = parse(cx, input_text, tag);
    /* The input is in printed form, so an unchanged function prints back the same. */
    char *in_text = func_text(cx, m);
    cr_assert_str_eq(in_text, input_text, "%s: the input is not in printed form", tag);
    free(in_text);
    int32_t changes = run_pass(m, w);
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s: %s", tag, kiln_ctx_error_message(cx));
    char *got = func_text(cx, m);
    const char *expect = want ? want : input_text;
    if (strcmp(got, expect) != 0) {
        cr_log_error("%s: got\n%s\nwant\n%s", tag, got, expect);
        free(got);
        cr_assert_fail("%s: the function after the pass differs from its golden", tag);
    }
    free(got);
    if (want) {
        /* The golden is the printer's own form. */
        kiln_module *g = parse(cx, want, tag);
        char *again = func_text(cx, g);
        cr_assert_str_eq(again, want, "%s: the golden does not print back to itself", tag);
        free(again);
        kiln_module_release(g);
    } else {
        cr_assert_eq(changes, 0, "%s: %d changes reported, none made", tag, (int)changes);
    }
    expect_same_results(cx, before, m, tag);
    kiln_module_release(before);
    kiln_module_release(m);
    expect_ok(cx);
    kiln_ctx_release(cx);
    return changes;
}

#define CHANGES(input, pass, want, tag) cr_expect_gt(golden(input, pass, want, tag), 0, "%s", tag)
#define UNCHANGED(input, pass, tag) golden(input, pass, NULL, tag)

/* ---- canonicalize: arithmetic identities ---------------------------------------------- */

Test(canonicalize_golden, integer_add_and_subtract_zero) {
    CHANGES("func.func public @main(%arg0: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, "
            "tensor<4xi32>) {\n"
            "  %c = stablehlo.constant dense<0> : tensor<i32>\n"
            "  %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4xi32>\n"
            "  %1 = stablehlo.add %0, %arg0 : tensor<4xi32>\n"
            "  %2 = stablehlo.subtract %arg0, %0 : tensor<4xi32>\n"
            "  %3 = stablehlo.subtract %0, %arg0 : tensor<4xi32>\n"
            "  return %1, %2, %3 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, "
            "tensor<4xi32>) {\n"
            "  %c = stablehlo.constant dense<0> : tensor<i32>\n"
            "  %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4xi32>\n"
            "  %1 = stablehlo.subtract %0, %arg0 : tensor<4xi32>\n"
            "  return %arg0, %arg0, %1 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>\n"
            "}\n",
            "integer add and subtract zero");
}

/* x + (-0) and x - (+0) are x for every float x; x + (+0) (-0 + +0 = +0) and x - (-0) are
 * not, and neither is x * 0 (NaN, infinities, -0). */
Test(canonicalize_golden, float_signed_zeros) {
    CHANGES("func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {\n"
            "  %cst = stablehlo.constant dense<-0.000000e+00> : tensor<4xf32>\n"
            "  %0 = stablehlo.add %arg0, %cst : tensor<4xf32>\n"
            "  %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>\n"
            "  %1 = stablehlo.subtract %arg0, %cst_0 : tensor<4xf32>\n"
            "  return %0, %1 : tensor<4xf32>, tensor<4xf32>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {\n"
            "  return %arg0, %arg0 : tensor<4xf32>, tensor<4xf32>\n"
            "}\n",
            "x + (-0), x - (+0)");
}

Test(canonicalize_golden, float_zero_traps_are_kept) {
    UNCHANGED("func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, "
              "tensor<4xf32>, tensor<4xf32>) {\n"
              "  %cst = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>\n"
              "  %0 = stablehlo.add %arg0, %cst : tensor<4xf32>\n"
              "  %cst_0 = stablehlo.constant dense<-0.000000e+00> : tensor<4xf32>\n"
              "  %1 = stablehlo.subtract %arg0, %cst_0 : tensor<4xf32>\n"
              "  %2 = stablehlo.multiply %arg0, %cst : tensor<4xf32>\n"
              "  %3 = stablehlo.multiply %cst_0, %arg0 : tensor<4xf32>\n"
              "  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, "
              "tensor<4xf32>\n"
              "}\n",
              CANON, "float x + 0, x - (-0), x * 0");
}

/* The rewrites above are only sound because of the values: the kept forms really differ
 * from x on the inputs expect_same_results uses (-0 first, then +0, NaN, inf). */
Test(canonicalize_golden, float_zero_traps_differ_from_x) {
    kiln_ctx *cx = test_ctx();
    float v[4] = {-0.0f, 0.0f, NAN, INFINITY};
    kiln_tensor *x = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), v, sizeof v);
    const float *plus0 = kiln_tensor_data(kiln_add(cx, x, kiln_scalar(cx, 0.0, KILN_F32)));
    const float *times0 = kiln_tensor_data(kiln_multiply(cx, x, kiln_scalar(cx, 0.0, KILN_F32)));
    const float *minus_m0 = kiln_tensor_data(kiln_subtract(cx, x, kiln_scalar(cx, -0.0, KILN_F32)));
    expect_ok(cx);
    cr_expect(!signbit(plus0[0]), "-0 + +0 is +0, not x");
    cr_expect(!signbit(minus_m0[0]), "-0 - (-0) is +0, not x");
    cr_expect(isnan(times0[2]) && isnan(times0[3]), "NaN * 0 and inf * 0 are NaN, not 0");
    cr_expect(signbit(times0[0]), "-0 * +0 is -0");
    kiln_ctx_release(cx);
}

Test(canonicalize_golden, multiply_by_one_and_integer_zero) {
    CHANGES("func.func public @main(%arg0: tensor<3xi64>, %arg1: tensor<3xf16>, %arg2: "
            "tensor<3xbf16>, %arg3: tensor<3xi1>) -> (tensor<3xi64>, tensor<3xi64>, "
            "tensor<3xf16>, tensor<3xbf16>, tensor<3xi1>) {\n"
            "  %c = stablehlo.constant dense<1> : tensor<3xi64>\n"
            "  %0 = stablehlo.multiply %c, %arg0 : tensor<3xi64>\n"
            "  %c_0 = stablehlo.constant dense<0> : tensor<3xi64>\n"
            "  %1 = stablehlo.multiply %arg0, %c_0 : tensor<3xi64>\n"
            "  %cst = stablehlo.constant dense<1.000000e+00> : tensor<3xf16>\n"
            "  %2 = stablehlo.multiply %arg1, %cst : tensor<3xf16>\n"
            "  %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<3xbf16>\n"
            "  %3 = stablehlo.multiply %arg2, %cst_1 : tensor<3xbf16>\n"
            "  %c_2 = stablehlo.constant dense<true> : tensor<3xi1>\n"
            "  %4 = stablehlo.multiply %arg3, %c_2 : tensor<3xi1>\n"
            "  return %0, %1, %2, %3, %4 : tensor<3xi64>, tensor<3xi64>, tensor<3xf16>, "
            "tensor<3xbf16>, tensor<3xi1>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<3xi64>, %arg1: tensor<3xf16>, %arg2: "
            "tensor<3xbf16>, %arg3: tensor<3xi1>) -> (tensor<3xi64>, tensor<3xi64>, "
            "tensor<3xf16>, tensor<3xbf16>, tensor<3xi1>) {\n"
            "  %c = stablehlo.constant dense<0> : tensor<3xi64>\n"
            "  return %arg0, %c, %arg1, %arg2, %arg3 : tensor<3xi64>, tensor<3xi64>, "
            "tensor<3xf16>, tensor<3xbf16>, tensor<3xi1>\n"
            "}\n",
            "x * 1, integer x * 0");
}

/* A constant that is almost 1 or 0, or not a splat, is no identity. */
Test(canonicalize_golden, near_identities_are_kept) {
    UNCHANGED("func.func public @main(%arg0: tensor<2xf32>, %arg1: tensor<2xi32>) -> "
              "(tensor<2xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xf32>) {\n"
              "  %cst = stablehlo.constant dense<[1.000000e+00, 2.000000e+00]> : "
              "tensor<2xf32>\n"
              "  %0 = stablehlo.multiply %arg0, %cst : tensor<2xf32>\n"
              "  %c = stablehlo.constant dense<[0, 1]> : tensor<2xi32>\n"
              "  %1 = stablehlo.add %arg1, %c : tensor<2xi32>\n"
              "  %c_0 = stablehlo.constant dense<-1> : tensor<2xi32>\n"
              "  %2 = stablehlo.multiply %arg1, %c_0 : tensor<2xi32>\n"
              "  %cst_1 = stablehlo.constant dense<1.00000012> : tensor<2xf32>\n"
              "  %3 = stablehlo.divide %arg0, %cst_1 : tensor<2xf32>\n"
              "  return %0, %1, %2, %3 : tensor<2xf32>, tensor<2xi32>, tensor<2xi32>, "
              "tensor<2xf32>\n"
              "}\n",
              SIMPLIFY, "non-splat and near-1 constants");
}

Test(canonicalize_golden, divide_by_one) {
    CHANGES("func.func public @main(%arg0: tensor<4xf64>, %arg1: tensor<4xi8>) -> "
            "(tensor<4xf64>, tensor<4xi8>, tensor<4xf64>) {\n"
            "  %cst = stablehlo.constant dense<1.000000e+00> : tensor<f64>\n"
            "  %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f64>) -> "
            "tensor<4xf64>\n"
            "  %1 = stablehlo.divide %arg0, %0 : tensor<4xf64>\n"
            "  %c = stablehlo.constant dense<1> : tensor<4xi8>\n"
            "  %2 = stablehlo.divide %arg1, %c : tensor<4xi8>\n"
            "  %3 = stablehlo.divide %0, %arg0 : tensor<4xf64>\n"
            "  return %1, %2, %3 : tensor<4xf64>, tensor<4xi8>, tensor<4xf64>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<4xf64>, %arg1: tensor<4xi8>) -> "
            "(tensor<4xf64>, tensor<4xi8>, tensor<4xf64>) {\n"
            "  %cst = stablehlo.constant dense<1.000000e+00> : tensor<f64>\n"
            "  %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f64>) -> "
            "tensor<4xf64>\n"
            "  %1 = stablehlo.divide %0, %arg0 : tensor<4xf64>\n"
            "  return %arg0, %arg1, %1 : tensor<4xf64>, tensor<4xi8>, tensor<4xf64>\n"
            "}\n",
            "x / 1 (1 / x kept)");
}

Test(canonicalize_golden, idempotent_binary_and_select) {
    CHANGES("func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<3xi32>, %arg2: "
            "tensor<3xi1>, %arg3: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, "
            "tensor<3xi32>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>) {\n"
            "  %0 = stablehlo.maximum %arg0, %arg0 : tensor<3xf32>\n"
            "  %1 = stablehlo.minimum %arg0, %arg3 : tensor<3xf32>\n"
            "  %2 = stablehlo.and %arg1, %arg1 : tensor<3xi32>\n"
            "  %3 = stablehlo.or %arg1, %arg1 : tensor<3xi32>\n"
            "  %4 = stablehlo.select %arg2, %arg3, %arg3 : tensor<3xi1>, tensor<3xf32>\n"
            "  %5 = stablehlo.select %arg2, %arg0, %arg3 : tensor<3xi1>, tensor<3xf32>\n"
            "  return %0, %1, %2, %3, %4, %5 : tensor<3xf32>, tensor<3xf32>, tensor<3xi32>, "
            "tensor<3xi32>, tensor<3xf32>, tensor<3xf32>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<3xi32>, %arg2: "
            "tensor<3xi1>, %arg3: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, "
            "tensor<3xi32>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>) {\n"
            "  %0 = stablehlo.minimum %arg0, %arg3 : tensor<3xf32>\n"
            "  %1 = stablehlo.select %arg2, %arg0, %arg3 : tensor<3xi1>, tensor<3xf32>\n"
            "  return %arg0, %0, %arg1, %arg1, %arg3, %1 : tensor<3xf32>, tensor<3xf32>, "
            "tensor<3xi32>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>\n"
            "}\n",
            "max(x, x), and(x, x), or(x, x), select(p, x, x)");
}

Test(canonicalize_golden, involutions) {
    CHANGES("func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xui8>) -> "
            "(tensor<4xf32>, tensor<4xui8>, tensor<4xui8>, tensor<4xf32>) {\n"
            "  %0 = stablehlo.negate %arg0 : tensor<4xf32>\n"
            "  %1 = stablehlo.negate %0 : tensor<4xf32>\n"
            "  %2 = stablehlo.not %arg1 : tensor<4xui8>\n"
            "  %3 = stablehlo.not %2 : tensor<4xui8>\n"
            "  %4 = stablehlo.negate %arg1 : tensor<4xui8>\n"
            "  %5 = stablehlo.negate %4 : tensor<4xui8>\n"
            "  %6 = stablehlo.abs %0 : tensor<4xf32>\n"
            "  %7 = stablehlo.abs %6 : tensor<4xf32>\n"
            "  return %1, %3, %5, %7 : tensor<4xf32>, tensor<4xui8>, tensor<4xui8>, "
            "tensor<4xf32>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xui8>) -> "
            "(tensor<4xf32>, tensor<4xui8>, tensor<4xui8>, tensor<4xf32>) {\n"
            "  %0 = stablehlo.negate %arg0 : tensor<4xf32>\n"
            "  %1 = stablehlo.abs %0 : tensor<4xf32>\n"
            "  return %arg0, %arg1, %arg1, %1 : tensor<4xf32>, tensor<4xui8>, tensor<4xui8>, "
            "tensor<4xf32>\n"
            "}\n",
            "negate(negate(x)), not(not(x)), abs(abs(x))");
}

Test(canonicalize_golden, convert_to_the_same_type) {
    CHANGES("func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<3xi32>) -> "
            "(tensor<3xf32>, tensor<3xi32>, tensor<3xf16>, tensor<3xui32>) {\n"
            "  %0 = stablehlo.convert %arg0 : tensor<3xf32>\n"
            "  %1 = stablehlo.bitcast_convert %arg1 : (tensor<3xi32>) -> tensor<3xi32>\n"
            "  %2 = stablehlo.convert %arg0 : (tensor<3xf32>) -> tensor<3xf16>\n"
            "  %3 = stablehlo.bitcast_convert %arg1 : (tensor<3xi32>) -> tensor<3xui32>\n"
            "  return %0, %1, %2, %3 : tensor<3xf32>, tensor<3xi32>, tensor<3xf16>, "
            "tensor<3xui32>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<3xi32>) -> "
            "(tensor<3xf32>, tensor<3xi32>, tensor<3xf16>, tensor<3xui32>) {\n"
            "  %0 = stablehlo.convert %arg0 : (tensor<3xf32>) -> tensor<3xf16>\n"
            "  %1 = stablehlo.bitcast_convert %arg1 : (tensor<3xi32>) -> tensor<3xui32>\n"
            "  return %arg0, %arg1, %0, %1 : tensor<3xf32>, tensor<3xi32>, tensor<3xf16>, "
            "tensor<3xui32>\n"
            "}\n",
            "convert to the same type");
}

/* ---- canonicalize: data movement ------------------------------------------------------ */

Test(canonicalize_golden, transpose_of_transpose) {
    CHANGES("func.func public @main(%arg0: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, "
            "tensor<2x3x4xf32>) {\n"
            "  %0 = stablehlo.transpose %arg0, dims = [1, 2, 0] : (tensor<2x3x4xf32>) -> "
            "tensor<3x4x2xf32>\n"
            "  %1 = stablehlo.transpose %0, dims = [1, 2, 0] : (tensor<3x4x2xf32>) -> "
            "tensor<4x2x3xf32>\n"
            "  %2 = stablehlo.transpose %0, dims = [2, 0, 1] : (tensor<3x4x2xf32>) -> "
            "tensor<2x3x4xf32>\n"
            "  return %1, %2 : tensor<4x2x3xf32>, tensor<2x3x4xf32>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, "
            "tensor<2x3x4xf32>) {\n"
            "  %0 = stablehlo.transpose %arg0, dims = [2, 0, 1] : (tensor<2x3x4xf32>) -> "
            "tensor<4x2x3xf32>\n"
            "  return %0, %arg0 : tensor<4x2x3xf32>, tensor<2x3x4xf32>\n"
            "}\n",
            "transpose of transpose");
}

/* canonicalize alone composes in place and leaves the inner op for dce. */
Test(canonicalize_golden, canonicalize_alone_leaves_dead_ops) {
    CHANGES("func.func public @main(%arg0: tensor<2x3xf32>) -> tensor<3x2xf32> {\n"
            "  %0 = stablehlo.reshape %arg0 : (tensor<2x3xf32>) -> tensor<6xf32>\n"
            "  %1 = stablehlo.reshape %0 : (tensor<6xf32>) -> tensor<3x2xf32>\n"
            "  return %1 : tensor<3x2xf32>\n"
            "}\n",
            CANON,
            "func.func public @main(%arg0: tensor<2x3xf32>) -> tensor<3x2xf32> {\n"
            "  %0 = stablehlo.reshape %arg0 : (tensor<2x3xf32>) -> tensor<6xf32>\n"
            "  %1 = stablehlo.reshape %arg0 : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
            "  return %1 : tensor<3x2xf32>\n"
            "}\n",
            "reshape of reshape, canonicalize only");
}

Test(canonicalize_golden, reshape_of_reshape) {
    CHANGES("func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<3x2xf32>, "
            "tensor<2x3xf32>) {\n"
            "  %0 = stablehlo.reshape %arg0 : (tensor<2x3xf32>) -> tensor<6xf32>\n"
            "  %1 = stablehlo.reshape %0 : (tensor<6xf32>) -> tensor<3x2xf32>\n"
            "  %2 = stablehlo.reshape %0 : (tensor<6xf32>) -> tensor<2x3xf32>\n"
            "  return %1, %2 : tensor<3x2xf32>, tensor<2x3xf32>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<3x2xf32>, "
            "tensor<2x3xf32>) {\n"
            "  %0 = stablehlo.reshape %arg0 : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
            "  return %0, %arg0 : tensor<3x2xf32>, tensor<2x3xf32>\n"
            "}\n",
            "reshape of reshape");
}

Test(canonicalize_golden, slice_of_slice) {
    CHANGES("func.func public @main(%arg0: tensor<10x12xf32>) -> (tensor<3x2xf32>, "
            "tensor<10x12xf32>) {\n"
            "  %0 = stablehlo.slice %arg0 [1:9, 2:10:2] : (tensor<10x12xf32>) -> "
            "tensor<8x4xf32>\n"
            "  %1 = stablehlo.slice %0 [2:7:2, 1:4:2] : (tensor<8x4xf32>) -> tensor<3x2xf32>\n"
            "  %2 = stablehlo.slice %arg0 [0:10, 0:12] : (tensor<10x12xf32>) -> "
            "tensor<10x12xf32>\n"
            "  return %1, %2 : tensor<3x2xf32>, tensor<10x12xf32>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<10x12xf32>) -> (tensor<3x2xf32>, "
            "tensor<10x12xf32>) {\n"
            "  %0 = stablehlo.slice %arg0 [3:8:2, 4:9:4] : (tensor<10x12xf32>) -> "
            "tensor<3x2xf32>\n"
            "  return %0, %arg0 : tensor<3x2xf32>, tensor<10x12xf32>\n"
            "}\n",
            "slice of slice, whole slice");
}

/* An empty slice of a slice is left alone (its composed limits would be meaningless), and
 * so is a slice that keeps the size but shifts. */
Test(canonicalize_golden, slices_kept) {
    UNCHANGED("func.func public @main(%arg0: tensor<6xf32>) -> (tensor<0xf32>, "
              "tensor<5xf32>) {\n"
              "  %0 = stablehlo.slice %arg0 [1:5] : (tensor<6xf32>) -> tensor<4xf32>\n"
              "  %1 = stablehlo.slice %0 [2:2] : (tensor<4xf32>) -> tensor<0xf32>\n"
              "  %2 = stablehlo.slice %arg0 [1:6] : (tensor<6xf32>) -> tensor<5xf32>\n"
              "  return %1, %2 : tensor<0xf32>, tensor<5xf32>\n"
              "}\n",
              SIMPLIFY, "empty and shifted slices");
}

Test(canonicalize_golden, reverse_of_reverse) {
    CHANGES("func.func public @main(%arg0: tensor<2x3x1xf32>) -> (tensor<2x3x1xf32>, "
            "tensor<2x3x1xf32>, tensor<2x3x1xf32>) {\n"
            "  %0 = stablehlo.reverse %arg0, dims = [0, 1] : tensor<2x3x1xf32>\n"
            "  %1 = stablehlo.reverse %0, dims = [1, 0] : tensor<2x3x1xf32>\n"
            "  %2 = stablehlo.reverse %0, dims = [1] : tensor<2x3x1xf32>\n"
            "  %3 = stablehlo.reverse %arg0, dims = [2] : tensor<2x3x1xf32>\n"
            "  return %1, %2, %3 : tensor<2x3x1xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<2x3x1xf32>) -> (tensor<2x3x1xf32>, "
            "tensor<2x3x1xf32>, tensor<2x3x1xf32>) {\n"
            "  %0 = stablehlo.reverse %arg0, dims = [0] : tensor<2x3x1xf32>\n"
            "  return %arg0, %0, %arg0 : tensor<2x3x1xf32>, tensor<2x3x1xf32>, "
            "tensor<2x3x1xf32>\n"
            "}\n",
            "reverse of reverse, reverse of a size-1 dim");
}

Test(canonicalize_golden, broadcast_of_broadcast) {
    CHANGES("func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<2x3xf32>) -> "
            "(tensor<4x3x2xf32>, tensor<2x3xf32>) {\n"
            "  %0 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<3xf32>) -> "
            "tensor<2x3xf32>\n"
            "  %1 = stablehlo.broadcast_in_dim %0, dims = [2, 1] : (tensor<2x3xf32>) -> "
            "tensor<4x3x2xf32>\n"
            "  %2 = stablehlo.broadcast_in_dim %arg1, dims = [0, 1] : (tensor<2x3xf32>) -> "
            "tensor<2x3xf32>\n"
            "  return %1, %2 : tensor<4x3x2xf32>, tensor<2x3xf32>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<2x3xf32>) -> "
            "(tensor<4x3x2xf32>, tensor<2x3xf32>) {\n"
            "  %0 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<3xf32>) -> "
            "tensor<4x3x2xf32>\n"
            "  return %0, %arg1 : tensor<4x3x2xf32>, tensor<2x3xf32>\n"
            "}\n",
            "broadcast of broadcast, identity broadcast");
}

/* A broadcast that transposes (dims not in order) is no identity even onto the same type. */
Test(canonicalize_golden, transposing_broadcast_is_kept) {
    UNCHANGED("func.func public @main(%arg0: tensor<3x3xf32>) -> tensor<3x3xf32> {\n"
              "  %0 = stablehlo.broadcast_in_dim %arg0, dims = [1, 0] : (tensor<3x3xf32>) -> "
              "tensor<3x3xf32>\n"
              "  return %0 : tensor<3x3xf32>\n"
              "}\n",
              SIMPLIFY, "transposing broadcast");
}

Test(canonicalize_golden, pad_and_concatenate_of_one) {
    CHANGES("func.func public @main(%arg0: tensor<2x3xi32>) -> (tensor<2x3xi32>, "
            "tensor<2x3xi32>, tensor<3x3xi32>) {\n"
            "  %c = stablehlo.constant dense<7> : tensor<i32>\n"
            "  %0 = stablehlo.pad %arg0, %c, low = [0, 0], high = [0, 0], interior = [0, 0] : "
            "(tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>\n"
            "  %1 = stablehlo.concatenate %arg0, dim = 1 : (tensor<2x3xi32>) -> tensor<2x3xi32>\n"
            "  %2 = stablehlo.pad %arg0, %c, low = [1, 0], high = [0, 0], interior = [0, 0] : "
            "(tensor<2x3xi32>, tensor<i32>) -> tensor<3x3xi32>\n"
            "  return %0, %1, %2 : tensor<2x3xi32>, tensor<2x3xi32>, tensor<3x3xi32>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<2x3xi32>) -> (tensor<2x3xi32>, "
            "tensor<2x3xi32>, tensor<3x3xi32>) {\n"
            "  %c = stablehlo.constant dense<7> : tensor<i32>\n"
            "  %0 = stablehlo.pad %arg0, %c, low = [1, 0], high = [0, 0], interior = [0, 0] : "
            "(tensor<2x3xi32>, tensor<i32>) -> tensor<3x3xi32>\n"
            "  return %arg0, %arg0, %0 : tensor<2x3xi32>, tensor<2x3xi32>, tensor<3x3xi32>\n"
            "}\n",
            "pad by nothing, concatenate of one");
}

/* A negative low pad and a positive high pad keep the shape but move the elements. */
Test(canonicalize_golden, shifting_pad_is_kept) {
    UNCHANGED("func.func public @main(%arg0: tensor<4xi32>) -> tensor<4xi32> {\n"
              "  %c = stablehlo.constant dense<7> : tensor<i32>\n"
              "  %0 = stablehlo.pad %arg0, %c, low = [-1], high = [1], interior = [0] : "
              "(tensor<4xi32>, tensor<i32>) -> tensor<4xi32>\n"
              "  return %0 : tensor<4xi32>\n"
              "}\n",
              SIMPLIFY, "shifting pad");
}

/* ---- cse ---------------------------------------------------------------------------------- */

Test(cse_golden, merges_equal_ops) {
    CHANGES("func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %0 = stablehlo.sine %arg0 : tensor<4xf32>\n"
            "  %cst = stablehlo.constant dense<2.000000e+00> : tensor<4xf32>\n"
            "  %1 = stablehlo.add %0, %cst : tensor<4xf32>\n"
            "  %2 = stablehlo.sine %arg0 : tensor<4xf32>\n"
            "  %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<4xf32>\n"
            "  %3 = stablehlo.add %2, %cst_0 : tensor<4xf32>\n"
            "  %4 = stablehlo.multiply %1, %3 : tensor<4xf32>\n"
            "  return %4 : tensor<4xf32>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %0 = stablehlo.sine %arg0 : tensor<4xf32>\n"
            "  %cst = stablehlo.constant dense<2.000000e+00> : tensor<4xf32>\n"
            "  %1 = stablehlo.add %0, %cst : tensor<4xf32>\n"
            "  %2 = stablehlo.multiply %1, %1 : tensor<4xf32>\n"
            "  return %2 : tensor<4xf32>\n"
            "}\n",
            "cse then dce");
}

/* cse alone moves uses; the duplicates stay until dce. */
Test(cse_golden, cse_alone) {
    CHANGES("func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %0 = stablehlo.cosine %arg0 : tensor<4xf32>\n"
            "  %1 = stablehlo.cosine %arg0 : tensor<4xf32>\n"
            "  %2 = stablehlo.subtract %0, %1 : tensor<4xf32>\n"
            "  return %2 : tensor<4xf32>\n"
            "}\n",
            CSE,
            "func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %0 = stablehlo.cosine %arg0 : tensor<4xf32>\n"
            "  %1 = stablehlo.cosine %arg0 : tensor<4xf32>\n"
            "  %2 = stablehlo.subtract %0, %0 : tensor<4xf32>\n"
            "  return %2 : tensor<4xf32>\n"
            "}\n",
            "cse alone");
}

/* Different attributes or constants are different values: -0 is not +0, LT is not LE,
 * other slice bounds, another iota dimension, operands in the other order. */
Test(cse_golden, keeps_different_ops) {
    UNCHANGED("func.func public @main(%arg0: tensor<2x2xf32>, %arg1: tensor<2x2xf32>) -> "
              "(tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xi1>, tensor<2x2xi1>, "
              "tensor<1x2xf32>, tensor<1x2xf32>, tensor<2x2xi32>, tensor<2x2xi32>, "
              "tensor<2x2xf32>, tensor<2x2xf32>) {\n"
              "  %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x2xf32>\n"
              "  %cst_0 = stablehlo.constant dense<-0.000000e+00> : tensor<2x2xf32>\n"
              "  %0 = stablehlo.compare  LT, %arg0, %arg1,  FLOAT : (tensor<2x2xf32>, "
              "tensor<2x2xf32>) -> tensor<2x2xi1>\n"
              "  %1 = stablehlo.compare  LE, %arg0, %arg1,  FLOAT : (tensor<2x2xf32>, "
              "tensor<2x2xf32>) -> tensor<2x2xi1>\n"
              "  %2 = stablehlo.slice %arg0 [0:1, 0:2] : (tensor<2x2xf32>) -> tensor<1x2xf32>\n"
              "  %3 = stablehlo.slice %arg0 [1:2, 0:2] : (tensor<2x2xf32>) -> tensor<1x2xf32>\n"
              "  %4 = stablehlo.iota dim = 0 : tensor<2x2xi32>\n"
              "  %5 = stablehlo.iota dim = 1 : tensor<2x2xi32>\n"
              "  %6 = stablehlo.subtract %arg0, %arg1 : tensor<2x2xf32>\n"
              "  %7 = stablehlo.subtract %arg1, %arg0 : tensor<2x2xf32>\n"
              "  return %cst, %cst_0, %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2x2xf32>, "
              "tensor<2x2xf32>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<1x2xf32>, "
              "tensor<1x2xf32>, tensor<2x2xi32>, tensor<2x2xi32>, tensor<2x2xf32>, "
              "tensor<2x2xf32>\n"
              "}\n",
              SIMPLIFY, "different attributes");
}

/* Ops with regions are never merged, and a region's ops are merged only among
 * themselves. */
Test(cse_golden, regions) {
    CHANGES("func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<2xf32>, "
            "tensor<2xf32>) {\n"
            "  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
            "  %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions "
            "= [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
            "  %1 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions "
            "= [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
            "  %2 = \"stablehlo.reduce\"(%arg0, %cst) <{dimensions = array<i64: 1>}> ({\n"
            "  ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):\n"
            "    %4 = stablehlo.multiply %arg1, %arg2 : tensor<f32>\n"
            "    %5 = stablehlo.multiply %arg1, %arg2 : tensor<f32>\n"
            "    %6 = stablehlo.add %4, %5 : tensor<f32>\n"
            "    stablehlo.return %6 : tensor<f32>\n"
            "  }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
            "  %3 = stablehlo.multiply %1, %2 : tensor<2xf32>\n"
            "  return %3, %0 : tensor<2xf32>, tensor<2xf32>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<2xf32>, "
            "tensor<2xf32>) {\n"
            "  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
            "  %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions "
            "= [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
            "  %1 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions "
            "= [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
            "  %2 = \"stablehlo.reduce\"(%arg0, %cst) <{dimensions = array<i64: 1>}> ({\n"
            "  ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):\n"
            "    %4 = stablehlo.multiply %arg1, %arg2 : tensor<f32>\n"
            "    %5 = stablehlo.add %4, %4 : tensor<f32>\n"
            "    stablehlo.return %5 : tensor<f32>\n"
            "  }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
            "  %3 = stablehlo.multiply %1, %2 : tensor<2xf32>\n"
            "  return %3, %0 : tensor<2xf32>, tensor<2xf32>\n"
            "}\n",
            "regions");
}

/* ---- dce ---------------------------------------------------------------------------------- */

Test(dce_golden, removes_unused_chains) {
    CHANGES("func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %0 = stablehlo.exponential %arg0 : tensor<4xf32>\n"
            "  %1 = stablehlo.log %0 : tensor<4xf32>\n"
            "  %2 = stablehlo.tanh %arg0 : tensor<4xf32>\n"
            "  return %2 : tensor<4xf32>\n"
            "}\n",
            DCE,
            "func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %0 = stablehlo.tanh %arg0 : tensor<4xf32>\n"
            "  return %0 : tensor<4xf32>\n"
            "}\n",
            "dce");
}

Test(dce_golden, nothing_to_remove) {
    UNCHANGED("func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
              "  %0 = stablehlo.exponential %arg0 : tensor<4xf32>\n"
              "  %1 = stablehlo.log %0 : tensor<4xf32>\n"
              "  return %1 : tensor<4xf32>\n"
              "}\n",
              DCE, "dce, all live");
}

/* ---- the pipeline --------------------------------------------------------------------- */

/* Each rewrite exposes the next: four negations, then a transpose chain that composes to
 * the identity, then x * 1 with the 1 made by a reshape of a broadcast. Needs several
 * rounds of canonicalize + cse + dce. */
Test(pipeline_golden, fixed_point) {
    CHANGES("func.func public @main(%arg0: tensor<2x3xi32>) -> tensor<2x3xi32> {\n"
            "  %0 = stablehlo.negate %arg0 : tensor<2x3xi32>\n"
            "  %1 = stablehlo.negate %0 : tensor<2x3xi32>\n"
            "  %2 = stablehlo.negate %1 : tensor<2x3xi32>\n"
            "  %3 = stablehlo.negate %2 : tensor<2x3xi32>\n"
            "  %4 = stablehlo.transpose %3, dims = [1, 0] : (tensor<2x3xi32>) -> "
            "tensor<3x2xi32>\n"
            "  %5 = stablehlo.transpose %4, dims = [1, 0] : (tensor<3x2xi32>) -> "
            "tensor<2x3xi32>\n"
            "  %c = stablehlo.constant dense<1> : tensor<i32>\n"
            "  %6 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2x3xi32>\n"
            "  %7 = stablehlo.multiply %5, %6 : tensor<2x3xi32>\n"
            "  return %7 : tensor<2x3xi32>\n"
            "}\n",
            SIMPLIFY,
            "func.func public @main(%arg0: tensor<2x3xi32>) -> tensor<2x3xi32> {\n"
            "  return %arg0 : tensor<2x3xi32>\n"
            "}\n",
            "fixed point");
}

/* One round of canonicalize, cse, dce merges the two sines (cse runs after canonicalize),
 * which makes maximum(%0, %0) for the next round: the round bound decides whether it
 * goes. */
Test(pipeline_golden, round_limit) {
    static const char *const text =
        "func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {\n"
        "  %0 = stablehlo.sine %arg0 : tensor<3xf32>\n"
        "  %1 = stablehlo.sine %arg0 : tensor<3xf32>\n"
        "  %2 = stablehlo.maximum %0, %1 : tensor<3xf32>\n"
        "  return %2 : tensor<3xf32>\n"
        "}\n";
    static const kiln__pass simplify[3] = {
        {"canonicalize", kiln__pass_canonicalize, 0},
        {"cse", kiln__pass_cse, KILN__PASS_IDEMPOTENT},
        {"dce", kiln__pass_dce, KILN__PASS_IDEMPOTENT | KILN__PASS_ENABLES_NOTHING},
    };
    kiln_ctx *cx = test_ctx();
    kiln_module *m = parse(cx, text, "round limit");
    cr_assert_eq(kiln__passes_run(m, simplify, 3, 0), 0, "zero rounds run nothing");
    cr_assert_eq(kiln__passes_run(m, simplify, 3, 1), 2, "cse merges %%1, dce removes it");
    char *got = func_text(cx, m);
    cr_assert_str_eq(got, "func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {\n"
                          "  %0 = stablehlo.sine %arg0 : tensor<3xf32>\n"
                          "  %1 = stablehlo.maximum %0, %0 : tensor<3xf32>\n"
                          "  return %1 : tensor<3xf32>\n"
                          "}\n");
    free(got);
    /* The next round forwards maximum(x, x) and removes it; then nothing changes. */
    cr_assert_eq(kiln__passes_run(m, simplify, 3, 8), 2);
    got = func_text(cx, m);
    cr_assert_str_eq(got, "func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {\n"
                          "  %0 = stablehlo.sine %arg0 : tensor<3xf32>\n"
                          "  return %0 : tensor<3xf32>\n"
                          "}\n");
    free(got);
    cr_assert_eq(kiln__passes_run(m, simplify, 3, 8), 0);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* The manager runs a pass again only when something it could act on changed: cse and
 * dce find nothing when run twice in a row, and dce's removals give nobody work. */
static int canon_runs, cse_runs, dce_runs;
static int32_t counted_canonicalize(kiln_module *m) { return canon_runs++, kiln__pass_canonicalize(m); }
static int32_t counted_cse(kiln_module *m) { return cse_runs++, kiln__pass_cse(m); }
static int32_t counted_dce(kiln_module *m) { return dce_runs++, kiln__pass_dce(m); }

Test(pipeline_golden, passes_run_only_when_something_changed_for_them) {
    static const char *const text =
        "func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {\n"
        "  %0 = stablehlo.sine %arg0 : tensor<3xf32>\n"
        "  %1 = stablehlo.sine %arg0 : tensor<3xf32>\n"
        "  %2 = stablehlo.maximum %0, %1 : tensor<3xf32>\n"
        "  return %2 : tensor<3xf32>\n"
        "}\n";
    static const kiln__pass counted[3] = {
        {"canonicalize", counted_canonicalize, 0},
        {"cse", counted_cse, KILN__PASS_IDEMPOTENT},
        {"dce", counted_dce, KILN__PASS_IDEMPOTENT | KILN__PASS_ENABLES_NOTHING},
    };
    kiln_ctx *cx = test_ctx();
    kiln_module *m = parse(cx, text, "counted passes");
    /* cse merges the sines (dce removes one); canonicalize then forwards maximum(x, x)
     * (dce removes it), so cse runs once more and finds nothing; canonicalize, which may
     * have more to do after its own change, runs a third time; nothing else runs. */
    cr_assert_eq(kiln__passes_run(m, counted, 3, 8), 4);
    cr_assert_eq(canon_runs, 3);
    cr_assert_eq(cse_runs, 2);
    cr_assert_eq(dce_runs, 2);
    char *got = func_text(cx, m);
    cr_assert_str_eq(got, "func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {\n"
                          "  %0 = stablehlo.sine %arg0 : tensor<3xf32>\n"
                          "  return %0 : tensor<3xf32>\n"
                          "}\n");
    free(got);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* When the passes turn a result into an argument, the calling convention says so: the
 * result is preserved, and the donated argument's buffer is no longer promised to
 * another result (which would overwrite the preserved one). */
Test(pipeline_golden, calling_convention_follows_the_rewrite) {
    static const char *const text =
        "func.func public @main(%arg0: tensor<4xf32> {tf.aliasing_output = 0 : i32}, %arg1: "
        "tensor<4xf32> {tf.aliasing_output = 1 : i32}) -> (tensor<4xf32>, tensor<4xf32>) {\n"
        "  %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>\n"
        "  %1 = stablehlo.reshape %arg0 : (tensor<4xf32>) -> tensor<4xf32>\n"
        "  return %0, %1 : tensor<4xf32>, tensor<4xf32>\n"
        "}\n";
    kiln_ctx *cx = test_ctx();
    kiln_module *m = parse(cx, text, "convention");
    cr_assert_gt(kiln__passes_simplify(m, 0), 0);
    char *got = kiln_module_to_string(cx, m);
    cr_assert_not_null(got);
    cr_assert_str_eq(got,
                     "module @kiln {\n"
                     "  // calling convention of @main: 2 arguments, 2 results\n"
                     "  //   donated arguments: %arg0, %arg1\n"
                     "  //   preserved results (returned unchanged): result 1 = %arg0\n"
                     "  //   aliased results (may reuse a donated buffer): none\n"
                     "  func.func public @main(%arg0: tensor<4xf32> {jax.buffer_donor = true}, "
                     "%arg1: tensor<4xf32> {jax.buffer_donor = true}) -> (tensor<4xf32>, "
                     "tensor<4xf32>) {\n"
                     "    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>\n"
                     "    return %0, %arg0 : tensor<4xf32>, tensor<4xf32>\n"
                     "  }\n"
                     "}\n");
    kiln_string_free(cx, got);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* ---- logging ---------------------------------------------------------------------------- */

typedef struct log_capture {
    char text[8192];
    size_t len;
    int lines;
} log_capture;

static void capture(void *user, kiln_log_level level, const char *message) {
    log_capture *c = user;
    (void)level;
    size_t n = strlen(message);
    if (c->len + n + 2 < sizeof c->text) {
        memcpy(c->text + c->len, message, n);
        c->len += n;
        c->text[c->len++] = '\n';
        c->text[c->len] = '\0';
    }
    c->lines++;
}

static kiln_ctx *logging_ctx(log_capture *c, kiln_log_level level) {
    kiln_ctx_options o = kiln_ctx_options_default();
    o.log_fn = capture;
    o.log_user = c;
    o.log_level = level;
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    return cx;
}

static const char *const negated_twice =
    "func.func public @main(%arg0: tensor<4xi32>) -> tensor<4xi32> {\n"
    "  %0 = stablehlo.negate %arg0 : tensor<4xi32>\n"
    "  %1 = stablehlo.negate %0 : tensor<4xi32>\n"
    "  return %1 : tensor<4xi32>\n"
    "}\n";

/* At debug level the module is logged before the passes and after each pass that changed
 * it; at other levels nothing is. */
Test(pipeline_golden, debug_log_shows_each_pass) {
    log_capture c = {.len = 0};
    kiln_ctx *cx = logging_ctx(&c, KILN_LOG_DEBUG);
    kiln_module *m = parse(cx, negated_twice, "log");
    cr_assert_gt(kiln__passes_simplify(m, 0), 0);
    cr_assert_eq(c.lines, 3, "before, canonicalize, dce; got:\n%s", c.text);
    const char *before = strstr(c.text, "passes: the module before the passes:\n");
    const char *canon = strstr(c.text, "passes: round 1: canonicalize made 1 changes:\n");
    const char *dce = strstr(c.text, "passes: round 1: dce made 2 changes:\n");
    cr_assert(before && canon && dce && before < canon && canon < dce, "%s", c.text);
    /* After canonicalize the negations are still there (dead); after dce they are gone. */
    cr_assert(strstr(canon, "stablehlo.negate %0") && strstr(canon, "return %arg0"), "%s", canon);
    cr_assert(!strstr(dce, "stablehlo.negate"), "%s", dce);
    expect_ok(cx);
    kiln_module_release(m);
    kiln_ctx_release(cx);

    log_capture quiet_log = {.len = 0};
    cx = logging_ctx(&quiet_log, KILN_LOG_INFO);
    m = parse(cx, negated_twice, "log");
    cr_assert_gt(kiln__passes_simplify(m, 0), 0);
    cr_assert_eq(quiet_log.lines, 0, "%s", quiet_log.text);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* ---- licm: loop-invariant code motion ------------------------------------------------- */

Test(licm_golden, invariant_ops_leave_the_loop_with_what_they_need) {
    CHANGES(
            "func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>) -> tensor<8xf32> {\n"
            "  %c = stablehlo.constant dense<0> : tensor<i64>\n"
            "  %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i64>, tensor<8xf32>\n"
            "  cond {\n"
            "    %c_1 = stablehlo.constant dense<5> : tensor<i64>\n"
            "    %1 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
            "    stablehlo.return %1 : tensor<i1>\n"
            "  } do {\n"
            "    %1 = stablehlo.exponential %arg1 : tensor<8xf32>\n"
            "    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
            "    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8xf32>\n"
            "    %3 = stablehlo.multiply %1, %2 : tensor<8xf32>\n"
            "    %4 = stablehlo.multiply %iterArg_0, %3 : tensor<8xf32>\n"
            "    %5 = stablehlo.add %4, %2 : tensor<8xf32>\n"
            "    %c_1 = stablehlo.constant dense<1> : tensor<i64>\n"
            "    %6 = stablehlo.add %iterArg, %c_1 : tensor<i64>\n"
            "    stablehlo.return %6, %5 : tensor<i64>, tensor<8xf32>\n"
            "  }\n"
            "  return %0#1 : tensor<8xf32>\n"
            "}\n",
            LICM,
            "func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>) -> tensor<8xf32> {\n"
            "  %c = stablehlo.constant dense<0> : tensor<i64>\n"
            "  %0 = stablehlo.exponential %arg1 : tensor<8xf32>\n"
            "  %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
            "  %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8xf32>\n"
            "  %2 = stablehlo.multiply %0, %1 : tensor<8xf32>\n"
            "  %3:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i64>, tensor<8xf32>\n"
            "  cond {\n"
            "    %c_1 = stablehlo.constant dense<5> : tensor<i64>\n"
            "    %4 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
            "    stablehlo.return %4 : tensor<i1>\n"
            "  } do {\n"
            "    %4 = stablehlo.multiply %iterArg_0, %2 : tensor<8xf32>\n"
            "    %5 = stablehlo.add %4, %1 : tensor<8xf32>\n"
            "    %c_1 = stablehlo.constant dense<1> : tensor<i64>\n"
            "    %6 = stablehlo.add %iterArg, %c_1 : tensor<i64>\n"
            "    stablehlo.return %6, %5 : tensor<i64>, tensor<8xf32>\n"
            "  }\n"
            "  return %3#1 : tensor<8xf32>\n"
            "}\n",
            "invariant ops leave the loop");
}

/* A broadcast scalar squared is computed from 4 bytes: hoisted, it would be a buffer read in
 * every iteration. A slice of an argument is a view the loop's kernel reads in place. */
Test(licm_golden, views_and_what_grows_from_them_stay) {
    UNCHANGED(
            "func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<f32>, %arg2: tensor<16xf32>) -> tensor<8xf32> {\n"
            "  %c = stablehlo.constant dense<0> : tensor<i64>\n"
            "  %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i64>, tensor<8xf32>\n"
            "  cond {\n"
            "    %c_1 = stablehlo.constant dense<3> : tensor<i64>\n"
            "    %1 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
            "    stablehlo.return %1 : tensor<i1>\n"
            "  } do {\n"
            "    %1 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<8xf32>\n"
            "    %2 = stablehlo.multiply %1, %1 : tensor<8xf32>\n"
            "    %3 = stablehlo.add %iterArg_0, %2 : tensor<8xf32>\n"
            "    %4 = stablehlo.slice %arg2 [0:8] : (tensor<16xf32>) -> tensor<8xf32>\n"
            "    %5 = stablehlo.subtract %3, %4 : tensor<8xf32>\n"
            "    %c_1 = stablehlo.constant dense<1> : tensor<i64>\n"
            "    %6 = stablehlo.add %iterArg, %c_1 : tensor<i64>\n"
            "    stablehlo.return %6, %5 : tensor<i64>, tensor<8xf32>\n"
            "  }\n"
            "  return %0#1 : tensor<8xf32>\n"
            "}\n",
            LICM, "views stay");
}

/* The inner loop's reduce (its region reads only its own values) and tanh leave both loops;
 * the ops that read a carry of either loop stay where they are. */
Test(licm_golden, nested_loops_inner_first) {
    CHANGES(
            "func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4x6xf32>) -> tensor<4xf32> {\n"
            "  %c = stablehlo.constant dense<0> : tensor<i64>\n"
            "  %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i64>, tensor<4xf32>\n"
            "  cond {\n"
            "    %c_1 = stablehlo.constant dense<2> : tensor<i64>\n"
            "    %1 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
            "    stablehlo.return %1 : tensor<i1>\n"
            "  } do {\n"
            "    %c_1 = stablehlo.constant dense<0> : tensor<i64>\n"
            "    %1:2 = stablehlo.while(%iterArg_3 = %c_1, %iterArg_4 = %iterArg_0) : tensor<i64>, tensor<4xf32>\n"
            "    cond {\n"
            "      %c_5 = stablehlo.constant dense<3> : tensor<i64>\n"
            "      %3 = stablehlo.compare  LT, %iterArg_3, %c_5,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
            "      stablehlo.return %3 : tensor<i1>\n"
            "    } do {\n"
            "      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
            "      %3 = stablehlo.reduce(%arg1 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>\n"
            "      %4 = stablehlo.tanh %3 : tensor<4xf32>\n"
            "      %5 = stablehlo.add %iterArg_4, %4 : tensor<4xf32>\n"
            "      %6 = stablehlo.multiply %5, %iterArg_0 : tensor<4xf32>\n"
            "      %c_5 = stablehlo.constant dense<1> : tensor<i64>\n"
            "      %7 = stablehlo.add %iterArg_3, %c_5 : tensor<i64>\n"
            "      stablehlo.return %7, %6 : tensor<i64>, tensor<4xf32>\n"
            "    }\n"
            "    %c_2 = stablehlo.constant dense<1> : tensor<i64>\n"
            "    %2 = stablehlo.add %iterArg, %c_2 : tensor<i64>\n"
            "    stablehlo.return %2, %1#1 : tensor<i64>, tensor<4xf32>\n"
            "  }\n"
            "  return %0#1 : tensor<4xf32>\n"
            "}\n",
            LICM,
            "func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4x6xf32>) -> tensor<4xf32> {\n"
            "  %c = stablehlo.constant dense<0> : tensor<i64>\n"
            "  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
            "  %0 = stablehlo.reduce(%arg1 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>\n"
            "  %1 = stablehlo.tanh %0 : tensor<4xf32>\n"
            "  %2:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i64>, tensor<4xf32>\n"
            "  cond {\n"
            "    %c_1 = stablehlo.constant dense<2> : tensor<i64>\n"
            "    %3 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
            "    stablehlo.return %3 : tensor<i1>\n"
            "  } do {\n"
            "    %c_1 = stablehlo.constant dense<0> : tensor<i64>\n"
            "    %3:2 = stablehlo.while(%iterArg_3 = %c_1, %iterArg_4 = %iterArg_0) : tensor<i64>, tensor<4xf32>\n"
            "    cond {\n"
            "      %c_5 = stablehlo.constant dense<3> : tensor<i64>\n"
            "      %5 = stablehlo.compare  LT, %iterArg_3, %c_5,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
            "      stablehlo.return %5 : tensor<i1>\n"
            "    } do {\n"
            "      %5 = stablehlo.add %iterArg_4, %1 : tensor<4xf32>\n"
            "      %6 = stablehlo.multiply %5, %iterArg_0 : tensor<4xf32>\n"
            "      %c_5 = stablehlo.constant dense<1> : tensor<i64>\n"
            "      %7 = stablehlo.add %iterArg_3, %c_5 : tensor<i64>\n"
            "      stablehlo.return %7, %6 : tensor<i64>, tensor<4xf32>\n"
            "    }\n"
            "    %c_2 = stablehlo.constant dense<1> : tensor<i64>\n"
            "    %4 = stablehlo.add %iterArg, %c_2 : tensor<i64>\n"
            "    stablehlo.return %4, %3#1 : tensor<i64>, tensor<4xf32>\n"
            "  }\n"
            "  return %2#1 : tensor<4xf32>\n"
            "}\n",
            "nested loops");
}

/* ---- unroll: loops of a few iterations ----------------------------------------------- */

/* 3 iterations of i < 3 from 0, i += 1: three copies of the body (then dce). */
Test(unroll_golden, a_counted_loop_becomes_copies_of_its_body) {
    CHANGES(
            "func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>) -> tensor<8xf32> {\n"
            "  %c = stablehlo.constant dense<0> : tensor<i64>\n"
            "  %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i64>, tensor<8xf32>\n"
            "  cond {\n"
            "    %c_1 = stablehlo.constant dense<3> : tensor<i64>\n"
            "    %1 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
            "    stablehlo.return %1 : tensor<i1>\n"
            "  } do {\n"
            "    %1 = stablehlo.exponential %arg1 : tensor<8xf32>\n"
            "    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
            "    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8xf32>\n"
            "    %3 = stablehlo.multiply %1, %2 : tensor<8xf32>\n"
            "    %4 = stablehlo.multiply %iterArg_0, %3 : tensor<8xf32>\n"
            "    %5 = stablehlo.add %4, %2 : tensor<8xf32>\n"
            "    %c_1 = stablehlo.constant dense<1> : tensor<i64>\n"
            "    %6 = stablehlo.add %iterArg, %c_1 : tensor<i64>\n"
            "    stablehlo.return %6, %5 : tensor<i64>, tensor<8xf32>\n"
            "  }\n"
            "  return %0#1 : tensor<8xf32>\n"
            "}\n",
            UNROLL,
            "func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>) -> tensor<8xf32> {\n"
            "  %0 = stablehlo.exponential %arg1 : tensor<8xf32>\n"
            "  %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
            "  %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8xf32>\n"
            "  %2 = stablehlo.multiply %0, %1 : tensor<8xf32>\n"
            "  %3 = stablehlo.multiply %arg0, %2 : tensor<8xf32>\n"
            "  %4 = stablehlo.add %3, %1 : tensor<8xf32>\n"
            "  %5 = stablehlo.exponential %arg1 : tensor<8xf32>\n"
            "  %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
            "  %6 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8xf32>\n"
            "  %7 = stablehlo.multiply %5, %6 : tensor<8xf32>\n"
            "  %8 = stablehlo.multiply %4, %7 : tensor<8xf32>\n"
            "  %9 = stablehlo.add %8, %6 : tensor<8xf32>\n"
            "  %10 = stablehlo.exponential %arg1 : tensor<8xf32>\n"
            "  %cst_1 = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
            "  %11 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<8xf32>\n"
            "  %12 = stablehlo.multiply %10, %11 : tensor<8xf32>\n"
            "  %13 = stablehlo.multiply %9, %12 : tensor<8xf32>\n"
            "  %14 = stablehlo.add %13, %11 : tensor<8xf32>\n"
            "  return %14 : tensor<8xf32>\n"
            "}\n",
            "three copies");
}

/* No iteration: the loop's results are its inits. */
Test(unroll_golden, a_loop_of_no_iterations_becomes_its_inits) {
    CHANGES(
            "func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>) -> tensor<8xf32> {\n"
            "  %c = stablehlo.constant dense<0> : tensor<i64>\n"
            "  %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i64>, tensor<8xf32>\n"
            "  cond {\n"
            "    %c_1 = stablehlo.constant dense<0> : tensor<i64>\n"
            "    %1 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
            "    stablehlo.return %1 : tensor<i1>\n"
            "  } do {\n"
            "    %1 = stablehlo.exponential %arg1 : tensor<8xf32>\n"
            "    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
            "    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8xf32>\n"
            "    %3 = stablehlo.multiply %1, %2 : tensor<8xf32>\n"
            "    %4 = stablehlo.multiply %iterArg_0, %3 : tensor<8xf32>\n"
            "    %5 = stablehlo.add %4, %2 : tensor<8xf32>\n"
            "    %c_1 = stablehlo.constant dense<1> : tensor<i64>\n"
            "    %6 = stablehlo.add %iterArg, %c_1 : tensor<i64>\n"
            "    stablehlo.return %6, %5 : tensor<i64>, tensor<8xf32>\n"
            "  }\n"
            "  return %0#1 : tensor<8xf32>\n"
            "}\n",
            UNROLL,
            "func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>) -> tensor<8xf32> {\n"
            "  return %arg0 : tensor<8xf32>\n"
            "}\n",
            "no iteration");
}

/* 17 iterations (past the bound), and a counter stepping by 2: both stay loops. */
Test(unroll_golden, long_loops_and_other_steps_stay) {
    UNCHANGED(
            "func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>) -> tensor<8xf32> {\n"
            "  %c = stablehlo.constant dense<0> : tensor<i64>\n"
            "  %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i64>, tensor<8xf32>\n"
            "  cond {\n"
            "    %c_1 = stablehlo.constant dense<17> : tensor<i64>\n"
            "    %1 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
            "    stablehlo.return %1 : tensor<i1>\n"
            "  } do {\n"
            "    %1 = stablehlo.exponential %arg1 : tensor<8xf32>\n"
            "    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
            "    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8xf32>\n"
            "    %3 = stablehlo.multiply %1, %2 : tensor<8xf32>\n"
            "    %4 = stablehlo.multiply %iterArg_0, %3 : tensor<8xf32>\n"
            "    %5 = stablehlo.add %4, %2 : tensor<8xf32>\n"
            "    %c_1 = stablehlo.constant dense<1> : tensor<i64>\n"
            "    %6 = stablehlo.add %iterArg, %c_1 : tensor<i64>\n"
            "    stablehlo.return %6, %5 : tensor<i64>, tensor<8xf32>\n"
            "  }\n"
            "  return %0#1 : tensor<8xf32>\n"
            "}\n",
            UNROLL, "17 iterations");
    UNCHANGED(
            "func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>) -> tensor<8xf32> {\n"
            "  %c = stablehlo.constant dense<0> : tensor<i64>\n"
            "  %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i64>, tensor<8xf32>\n"
            "  cond {\n"
            "    %c_1 = stablehlo.constant dense<5> : tensor<i64>\n"
            "    %1 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
            "    stablehlo.return %1 : tensor<i1>\n"
            "  } do {\n"
            "    %1 = stablehlo.exponential %arg1 : tensor<8xf32>\n"
            "    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
            "    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8xf32>\n"
            "    %3 = stablehlo.multiply %1, %2 : tensor<8xf32>\n"
            "    %4 = stablehlo.multiply %iterArg_0, %3 : tensor<8xf32>\n"
            "    %5 = stablehlo.add %4, %2 : tensor<8xf32>\n"
            "    %c_1 = stablehlo.constant dense<2> : tensor<i64>\n"
            "    %6 = stablehlo.add %iterArg, %c_1 : tensor<i64>\n"
            "    stablehlo.return %6, %5 : tensor<i64>, tensor<8xf32>\n"
            "  }\n"
            "  return %0#1 : tensor<8xf32>\n"
            "}\n",
            UNROLL, "a step of 2");
}
