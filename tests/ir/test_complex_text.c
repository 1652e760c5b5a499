/* SPDX-License-Identifier: Apache-2.0 */
/* complex<f32> and complex<f64> in the StableHLO text: types, every dense literal form
 * (splat, list, hex parts, hex blobs) read to exact bytes and printed back as MLIR prints
 * them, the errors of malformed literals, the check ops comparing real and imaginary parts
 * apart, and the complex types in StableHLO's portable artifacts. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "ir/ir.h"
#include "ir/vhlo.h"
#include "kiln/parse.h"
#include "test_util.h"

static kiln_module *parse_ok(kiln_ctx *cx, const char *text, bool checks) {
    kiln_parse_options o = kiln_parse_options_default();
    o.allow_checks = checks;
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), &o, &m), KILN_OK, "%s\n%s",
                 kiln_ctx_error_message(cx), text);
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    return m;
}

/* The constant of result i of @main. */
static const kiln_tensor *constant_of(const kiln_module *m, int i) {
    const kiln__value *v = m->funcs[0]->body->results[i];
    cr_assert_eq(v->def->kind, KILN_OP_CONSTANT);
    return v->def->attrs->u.constant;
}

/* A module returning one constant: `dense<LITERAL> : TYPE`. */
static char *one_constant(const char *literal, const char *type) {
    size_t cap = strlen(literal) + 3 * strlen(type) + 200;
    char *s = malloc(cap);
    cr_assert_not_null(s);
    snprintf(s, cap,
             "func.func @main() -> %s {\n  %%0 = stablehlo.constant dense<%s> : %s\n"
             "  return %%0 : %s\n}\n",
             type, literal, type, type);
    return s;
}

/* The printer's line for the constant (its text after "stablehlo.constant "). */
static char *printed_constant(kiln_ctx *cx, const kiln_module *m) {
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text, "%s", kiln_ctx_error_message(cx));
    const char *at = strstr(text, "stablehlo.constant ");
    cr_assert_not_null(at, "%s", text);
    at += strlen("stablehlo.constant ");
    const char *end = strchr(at, '\n');
    char *line = malloc((size_t)(end - at) + 1);
    memcpy(line, at, (size_t)(end - at));
    line[end - at] = '\0';
    kiln_string_free(cx, text);
    return line;
}

/* The literal reads as `bytes`, prints as `printed` (dense<...> : type), and the printed
 * form reads back to the same bytes and prints the same again. */
static void expect_literal(const char *literal, const char *type, const void *bytes, size_t n,
                           const char *printed) {
    kiln_ctx *cx = test_ctx();
    char *text = one_constant(literal, type);
    kiln_module *m = parse_ok(cx, text, false);
    const kiln_tensor *t = constant_of(m, 0);
    cr_assert_eq(kiln_tensor_nbytes(t), n, "%s", literal);
    cr_assert(n == 0 || memcmp(kiln_tensor_data(t), bytes, n) == 0, "%s: bytes differ", literal);
    char *line = printed_constant(cx, m);
    cr_assert_str_eq(line, printed);
    /* the printed form, read back */
    const char *body = line + strlen("dense<");
    const char *close = strstr(body, "> : ");
    cr_assert_not_null(close);
    char *again_lit = malloc((size_t)(close - body) + 1);
    memcpy(again_lit, body, (size_t)(close - body));
    again_lit[close - body] = '\0';
    char *again = one_constant(again_lit, type);
    kiln_module *m2 = parse_ok(cx, again, false);
    const kiln_tensor *t2 = constant_of(m2, 0);
    cr_assert(n == 0 || memcmp(kiln_tensor_data(t2), bytes, n) == 0,
              "%s: printed form reads differently", line);
    char *line2 = printed_constant(cx, m2);
    cr_assert_str_eq(line2, line);
    free(line2);
    free(again);
    free(again_lit);
    free(line);
    free(text);
    kiln_module_release(m2);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(complex_text, types_parse_and_print_with_their_stablehlo_spelling) {
    kiln_ctx *cx = test_ctx();
    const char *text =
        "func.func @main(%a: tensor<4xcomplex<f32>>, %b: tensor<complex<f64>>, "
        "%c: tensor<2x3xcomplex< f32 >>) -> (tensor<4xcomplex<f32>>, tensor<complex<f64>>, "
        "tensor<3x2xcomplex<f32>>) {\n"
        "  %0 = stablehlo.transpose %c, dims = [1, 0] : (tensor<2x3xcomplex<f32>>) -> "
        "tensor<3x2xcomplex<f32>>\n"
        "  return %a, %b, %0 : tensor<4xcomplex<f32>>, tensor<complex<f64>>, "
        "tensor<3x2xcomplex<f32>>\n"
        "}\n";
    kiln_module *m = parse_ok(cx, text, false);
    const kiln__func *f = m->funcs[0];
    cr_assert_eq(f->body->args[0]->type->dtype, KILN_C64);
    cr_assert_eq(f->body->args[1]->type->dtype, KILN_C128);
    cr_assert_eq(f->body->args[1]->type->shape.rank, 0);
    cr_assert_eq(f->body->args[2]->type->dtype, KILN_C64);
    char *once = kiln_module_to_string(cx, m);
    cr_assert_not_null(strstr(once, "func.func public @main(%arg0: tensor<4xcomplex<f32>>, "
                                    "%arg1: tensor<complex<f64>>, %arg2: "
                                    "tensor<2x3xcomplex<f32>>) -> (tensor<4xcomplex<f32>>, "
                                    "tensor<complex<f64>>, tensor<3x2xcomplex<f32>>) {"),
                      "%s", once);
    cr_assert_not_null(strstr(once, "stablehlo.transpose %arg2, dims = [1, 0] : "
                                    "(tensor<2x3xcomplex<f32>>) -> tensor<3x2xcomplex<f32>>"),
                       "%s", once);
    kiln_module *m2 = parse_ok(cx, once, false);
    char *twice = kiln_module_to_string(cx, m2);
    cr_assert_str_eq(twice, once);
    kiln_string_free(cx, once);
    kiln_string_free(cx, twice);
    kiln_module_release(m2);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(complex_text, splats_and_lists_read_exactly_and_print_as_mlir_does) {
    /* MLIR's own form (no space), the interpreter tests' form (a space), integer parts */
    expect_literal("(1.000000e+00,2.000000e+00)", "tensor<complex<f32>>", (float[]){1, 2}, 8,
                   "dense<(1.000000e+00,2.000000e+00)> : tensor<complex<f32>>");
    expect_literal("(3.140000e+00, 1.0)", "tensor<4xcomplex<f64>>",
                   (double[]){3.14, 1, 3.14, 1, 3.14, 1, 3.14, 1}, 64,
                   "dense<(3.140000e+00,1.000000e+00)> : tensor<4xcomplex<f64>>");
    expect_literal("( 1 , -2 )", "tensor<complex<f64>>", (double[]){1, -2}, 16,
                   "dense<(1.000000e+00,-2.000000e+00)> : tensor<complex<f64>>");
    expect_literal("[(1.0, 2.0), (3.0, -4.0)]", "tensor<2xcomplex<f64>>",
                   (double[]){1, 2, 3, -4}, 32,
                   "dense<[(1.000000e+00,2.000000e+00), (3.000000e+00,-4.000000e+00)]> : "
                   "tensor<2xcomplex<f64>>");
    expect_literal("[[(7.0, -2.0)], [(8.0, 4.0)], [(9.0, -5.0)]]", "tensor<3x1xcomplex<f32>>",
                   (float[]){7, -2, 8, 4, 9, -5}, 24,
                   "dense<[[(7.000000e+00,-2.000000e+00)], [(8.000000e+00,4.000000e+00)], "
                   "[(9.000000e+00,-5.000000e+00)]]> : tensor<3x1xcomplex<f32>>");
    /* the shortest text that reads back, part by part in the part's precision */
    expect_literal("[(0.967786788, -0.0926378369), (1.00166273, 7.52857188E-4)]",
                   "tensor<2xcomplex<f32>>",
                   (float[]){0.967786788f, -0.0926378369f, 1.00166273f, 7.52857188E-4f}, 16,
                   "dense<[(0.967786789,-0.0926378369), (1.00166273,7.52857188E-4)]> : "
                   "tensor<2xcomplex<f32>>");
    expect_literal("(1.6289371459221759, 0.5201745023045458)", "tensor<complex<f64>>",
                   (double[]){1.6289371459221759, 0.5201745023045458}, 16,
                   "dense<(1.628937145922176,0.52017450230454576)> : tensor<complex<f64>>");
    expect_literal("[(1.0, 2.0), (1.0, 2.0)]", "tensor<2xcomplex<f32>>", (float[]){1, 2, 1, 2},
                   16, "dense<(1.000000e+00,2.000000e+00)> : tensor<2xcomplex<f32>>");
    expect_literal("", "tensor<0xcomplex<f64>>", NULL, 0, "dense<> : tensor<0xcomplex<f64>>");
}

Test(complex_text, signed_zeros_infinities_nans_and_hex_parts_keep_their_bits) {
    /* hex parts have the component's width (StableHLO's compare.mlir, bitcast_convert.mlir) */
    uint64_t c128[8] = {0x7FF0000000000001, 0x8000000000000000, 0x0000000000000000,
                        0x7FF0000000000001, 0x8000000000000000, 0x0000000000000000,
                        0x4000000000000000, 0x3FF0000000000000};
    expect_literal("[(0x7FF0000000000001, 0x8000000000000000), (0x0000000000000000, "
                   "0x7FF0000000000001), (0x8000000000000000, 0x0000000000000000), (2.0, 1.0)]",
                   "tensor<4xcomplex<f64>>", c128, sizeof c128,
                   "dense<[(0x7FF0000000000001,-0.000000e+00), (0.000000e+00,0x7FF0000000000001), "
                   "(-0.000000e+00,0.000000e+00), (2.000000e+00,1.000000e+00)]> : "
                   "tensor<4xcomplex<f64>>");
    uint32_t c64[4] = {0x89ABCDEF, 0x01234567, 0x11111111, 0x00000000};
    expect_literal("[(0x89ABCDEF, 0x01234567), (0x11111111, 0x00000000)]",
                   "tensor<2xcomplex<f32>>", c64, sizeof c64,
                   "dense<[(-4.13604116E-33,2.99881655E-38), (1.14437421E-28,0.000000e+00)]> : "
                   "tensor<2xcomplex<f32>>");
    uint32_t special[6] = {0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x3FC00000};
    expect_literal("[(-0.0, 0x7F800000), (0xFF800000, 0x7FC00000), (0xFFC00001, 1.5)]",
                   "tensor<3xcomplex<f32>>", special, sizeof special,
                   "dense<[(-0.000000e+00,0x7F800000), (0xFF800000,0x7FC00000), "
                   "(0xFFC00001,1.500000e+00)]> : tensor<3xcomplex<f32>>");
}

Test(complex_text, hex_blobs_are_the_interleaved_bytes) {
    /* (1, 2), (3, 4) as f32 parts, little-endian, real first */
    expect_literal("\"0x0000803F000000400000404000008040\"", "tensor<2xcomplex<f32>>",
                   (float[]){1, 2, 3, 4}, 16,
                   "dense<[(1.000000e+00,2.000000e+00), (3.000000e+00,4.000000e+00)]> : "
                   "tensor<2xcomplex<f32>>");
    /* a blob of one element is a splat */
    expect_literal("\"0x000000000000F03F0000000000000040\"", "tensor<3xcomplex<f64>>",
                   (double[]){1, 2, 1, 2, 1, 2}, 48,
                   "dense<(1.000000e+00,2.000000e+00)> : tensor<3xcomplex<f64>>");
    /* over 100 elements print as a blob: real and imaginary parts interleaved */
    enum { N = 101 };
    double v[2 * N];
    char list[N * 48], want[N * 32 + 80];
    size_t o = (size_t)snprintf(list, sizeof list, "[");
    size_t w = (size_t)snprintf(want, sizeof want, "dense<\"0x");
    for (int i = 0; i < N; i++) {
        v[2 * i] = i;
        v[2 * i + 1] = -0.5 * i;
        o += (size_t)snprintf(list + o, sizeof list - o, "%s(%d, %g)", i ? ", " : "", i,
                              -0.5 * i);
        for (int part = 0; part < 2; part++) {
            unsigned char b[8];
            memcpy(b, &v[2 * i + part], 8);
            for (int k = 0; k < 8; k++)
                w += (size_t)snprintf(want + w, sizeof want - w, "%02X", b[k]);
        }
    }
    snprintf(list + o, sizeof list - o, "]");
    snprintf(want + w, sizeof want - w, "\"> : tensor<101xcomplex<f64>>");
    expect_literal(list, "tensor<101xcomplex<f64>>", v, sizeof v, want);
}

/* The parse fails with exactly `message`. */
static void parse_fails(const char *text, const char *message) {
    kiln_ctx *cx = test_ctx();
    kiln_parse_options o = kiln_parse_options_default();
    o.filename = "t.mlir";
    kiln_module *m = (kiln_module *)1;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), &o, &m), KILN_INVALID_ARGUMENT,
                 "accepted: %s", text);
    cr_assert_null(m);
    cr_assert_str_eq(kiln_ctx_error_message(cx), message);
    kiln_ctx_release(cx);
}

static void constant_fails(const char *literal, const char *type, const char *message) {
    char *text = one_constant(literal, type);
    parse_fails(text, message);
    free(text);
}

Test(complex_text, malformed_literals_and_types_are_errors_that_say_where) {
    /* "  %0 = stablehlo.constant dense<" is 32 columns: the literal starts at column 33 */
    constant_fails("(1.0 2.0)", "tensor<complex<f32>>",
                   "t.mlir:2:38: error: expected ',' between the real and imaginary parts of a "
                   "complex literal, found '2'");
    constant_fails("(1.0, 2.0", "tensor<complex<f32>>",
                   "t.mlir:2:42: error: expected ')' after the imaginary part of a complex "
                   "literal, found '>'");
    constant_fails("(1.0, 2.0, 3.0)", "tensor<complex<f32>>",
                   "t.mlir:2:42: error: expected ')' after the imaginary part of a complex "
                   "literal, found ','");
    constant_fails("(1.0)", "tensor<complex<f32>>",
                   "t.mlir:2:37: error: expected ',' between the real and imaginary parts of a "
                   "complex literal, found ')'");
    constant_fails("(, 2.0)", "tensor<complex<f32>>",
                   "t.mlir:2:34: error: expected a number, found ','");
    constant_fails("(true, 2.0)", "tensor<complex<f32>>",
                   "t.mlir:2:34: error: expected a number for a f32 element");
    constant_fails("1.0", "tensor<complex<f32>>",
                   "t.mlir:2:33: error: expected a complex literal (re, im) for a complex<f32> "
                   "element");
    constant_fails("[(1.0, 2.0), 3.0]", "tensor<2xcomplex<f64>>",
                   "t.mlir:2:46: error: expected a complex literal (re, im) for a complex<f64> "
                   "element");
    constant_fails("(1.0, 2.0)", "tensor<f32>",
                   "t.mlir:2:33: error: a complex literal (re, im) for a f32 element");
    constant_fails("(0x100000000, 0)", "tensor<complex<f32>>",
                   "t.mlir:2:34: error: hex literal too wide for f32");
    constant_fails("[(1.0, 2.0)]", "tensor<2xcomplex<f32>>",
                   "t.mlir:2:33: error: dense literal shape does not match "
                   "tensor<2xcomplex<f32>>");
    constant_fails("\"0x0000803F0000004000000000\"", "tensor<2xcomplex<f32>>",
                   "t.mlir:2:33: error: hex blob has 12 bytes; tensor<2xcomplex<f32>> needs 16");
    parse_fails("func.func @main(%a: tensor<complex<i32>>) {\n  return\n}\n",
                "t.mlir:1:36: error: unsupported element type 'complex<i32>' (kiln has "
                "complex<f32> and complex<f64>)");
    parse_fails("func.func @main(%a: tensor<complex<f16>>) {\n  return\n}\n",
                "t.mlir:1:36: error: unsupported element type 'complex<f16>' (kiln has "
                "complex<f32> and complex<f64>)");
    parse_fails("func.func @main(%a: tensor<complex>) {\n  return\n}\n",
                "t.mlir:1:35: error: expected '<' after 'complex', found '>'");
    parse_fails("func.func @main(%a: tensor<complex<f32>) {\n  return\n}\n",
                "t.mlir:1:40: error: expected '>' to close the tensor type, found ')'");
}

/* ---- check ops -------------------------------------------------------------------------- */

static kiln_tensor *c128(kiln_ctx *cx, const double *v, int n) {
    return kiln_tensor_from_host(cx, KILN_C128, KILN_SHAPE(n), v, (size_t)n * 16);
}

Test(complex_text, checks_compare_the_real_and_imaginary_parts_apart) {
    kiln_ctx *cx = test_ctx();
    kiln_check eq = {.kind = KILN_CHECK_EQ, .expected_result = -1};
    kiln_tensor *a = c128(cx, (double[]){1, -0.0, NAN, 2}, 2);
    kiln_tensor *b = c128(cx, (double[]){1, 0.0, NAN, 2}, 2);
    /* -0 == +0, and NaN != NaN, in the imaginary part as in the real */
    cr_assert_eq(kiln_check_evaluate(cx, &eq, a, b), KILN_FAILED_PRECONDITION);
    cr_assert_str_eq(kiln_ctx_error_message(cx), "index 1 (real part): got nan, expected nan");
    kiln_ctx_clear_error(cx);
    kiln_check almost = {.kind = KILN_CHECK_ALMOST_EQ, .tolerance = 1e-4, .expected_result = -1};
    cr_assert_eq(kiln_check_evaluate(cx, &almost, a, b), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *c = c128(cx, (double[]){1, 0.001, NAN, 2}, 2);
    cr_assert_eq(kiln_check_evaluate(cx, &almost, a, c), KILN_FAILED_PRECONDITION);
    cr_assert_str_eq(kiln_ctx_error_message(cx),
                     "index 0 (imaginary part): got -0, expected 0.001");
    kiln_ctx_clear_error(cx);
    /* ULPs counted per part: one part two ULPs off fails max_ulp = 1 */
    double one = 1.0, two_up = nextafter(nextafter(1.0, 2.0), 2.0);
    kiln_tensor *x = c128(cx, (double[]){one, one}, 1), *y = c128(cx, (double[]){one, two_up}, 1);
    kiln_check close = {.kind = KILN_CHECK_CLOSE, .max_ulp = 1, .expected_result = -1};
    cr_assert_eq(kiln_check_evaluate(cx, &close, x, y), KILN_FAILED_PRECONDITION);
    kiln_ctx_clear_error(cx);
    close.max_ulp = 2;
    cr_assert_eq(kiln_check_evaluate(cx, &close, x, y), KILN_OK, "%s", kiln_ctx_error_message(cx));
    /* complex<f32>: parts of 4 bytes */
    kiln_tensor *f = kiln_tensor_from_host(cx, KILN_C64, KILN_SHAPE(2), (float[]){1, 2, 3, 4}, 16);
    kiln_tensor *g = kiln_tensor_from_host(cx, KILN_C64, KILN_SHAPE(2), (float[]){1, 2, 3, 5}, 16);
    cr_assert_eq(kiln_check_evaluate(cx, &eq, f, f), KILN_OK);
    cr_assert_eq(kiln_check_evaluate(cx, &eq, f, g), KILN_FAILED_PRECONDITION);
    cr_assert_str_eq(kiln_ctx_error_message(cx), "index 1 (imaginary part): got 4, expected 5");
    kiln_ctx_clear_error(cx);
    kiln_tensor *ts[] = {a, b, c, x, y, f, g};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        kiln_tensor_release(ts[i]);
    kiln_ctx_release(cx);
}

Test(complex_text, check_ops_on_complex_values_parse_and_run) {
    kiln_ctx *cx = test_ctx();
    const char *text =
        "func.func @main() {\n"
        "  %0 = stablehlo.constant dense<[(1.5, 2.5), (7.5, 5.5)]> : tensor<2xcomplex<f64>>\n"
        "  %1 = stablehlo.constant dense<(1.0, -0.0)> : tensor<complex<f32>>\n"
        "  check.expect_eq_const %0, dense<[(1.5, 2.5), (7.5, 5.5)]> : tensor<2xcomplex<f64>>\n"
        "  check.expect_almost_eq_const %0, dense<[(1.5, 2.50001), (7.5, 5.5)]> : "
        "tensor<2xcomplex<f64>>\n"
        "  check.expect_close %1, %1, max_ulp_difference = 1 : tensor<complex<f32>>, "
        "tensor<complex<f32>>\n"
        "  check.expect_almost_eq %1, %1 : tensor<complex<f32>>\n"
        "  func.return\n"
        "}\n";
    kiln_module *m = parse_ok(cx, text, true);
    const kiln_check *c;
    int32_t n;
    cr_assert_eq(kiln_module_checks(cx, m, &c, &n), KILN_OK);
    cr_assert_eq(n, 4);
    cr_assert_eq(test_run_checks(cx, m), 0, "every check passes");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* ---- portable artifacts ----------------------------------------------------------------- */

/* Function `name` of the artifact as text, or NULL when the artifact lacks it. */
static char *function_text(kiln_ctx *cx, const unsigned char *bc, size_t n, const char *name) {
    kiln__bc r;
    cr_assert(kiln__bc_open(&r, cx, bc, n), "%s", r.error);
    kiln__strbuf sb;
    kiln__strbuf_init(&sb, cx);
    bool ok = kiln__vhlo_to_text(&r, &sb, name);
    char *text = kiln__strbuf_take(&sb);
    cr_assert(ok, "@%s: %s", name, r.error);
    kiln__bc_close(&r);
    char head[200];
    snprintf(head, sizeof head, "@%s(", name);
    if (!strstr(text, head)) {
        kiln__strbuf_free_string(cx, text);
        return NULL;
    }
    return text;
}

/* The types of function `name`'s signature in `text`: "(A, B) -> (C)", the argument names
 * left out. */
static void signature(const char *text, const char *name, char *out, size_t cap) {
    char head[200];
    snprintf(head, sizeof head, "@%s(", name);
    const char *p = strstr(text, head) + strlen(head) - 1;
    size_t k = 0;
    for (; *p && *p != '{' && *p != '\n' && k + 1 < cap; p++) {
        if (*p == '%') { /* "%v221_0: " */
            while (*p && *p != ' ')
                p++;
            continue;
        }
        out[k++] = *p;
    }
    while (k > 0 && out[k - 1] == ' ')
        k--;
    out[k] = '\0';
}

Test(complex_text, every_artifact_version_reads_its_complex_types) {
    const char *dir = KILN_CONFORMANCE_DIR "/vhlo";
    DIR *d = opendir(dir);
    if (!d) cr_skip_test("no conformance data");
    static const struct {
        const char *func, *signature;
    } cases[] = {
        {"type_complex_f32",
         "(tensor<complex<f32>>, tensor<complex<f32>>) -> (tensor<complex<f32>>)"},
        {"type_complex_f64",
         "(tensor<complex<f64>>, tensor<complex<f64>>) -> (tensor<complex<f64>>)"},
    };
    kiln_ctx *cx = test_ctx();
    int versions = 0, read = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "stablehlo_legalize_to_vhlo.", 27) != 0 || len < 8 ||
            strcmp(e->d_name + len - 8, ".mlir.bc") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t n;
        unsigned char *bc = test_read_file(path, &n);
        cr_assert_not_null(bc);
        versions++;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char *text = function_text(cx, bc, n, cases[i].func);
            if (!text) continue;
            char sig[256];
            signature(text, cases[i].func, sig, sizeof sig);
            cr_assert_str_eq(sig, cases[i].signature, "%s: @%s reads as\n%s", e->d_name,
                             cases[i].func, text);
            read++;
            kiln__strbuf_free_string(cx, text);
        }
        free(bc);
    }
    closedir(d);
    cr_assert_geq(versions, 30);
    cr_assert_eq(read, 2 * versions, "%d complex functions read", read);
    kiln_ctx_release(cx);
}
