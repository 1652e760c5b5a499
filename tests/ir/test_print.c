/* SPDX-License-Identifier: Apache-2.0 */
/* The StableHLO text printer: goldens for every op of ops.def (lowered from small
 * functions, as tests/ir/test_trace.c does), literals, names, regions, the calling
 * convention, and errors. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/element.h"
#include "failing_allocator.h"
#include "goldens.h"
#include "ir/ir.h"
#include "ir/print.h"
#include "test_util.h"

/* ---- helpers --------------------------------------------------------------------------- */

/* Lowers fn over the argument specs; fails the test on error. */
static kiln_module *lower(kiln_ctx *cx, kiln_region_fn fn, void *user, const kiln_arg_spec *args,
                          int32_t n_args, int32_t n_results) {
    kiln_region r = {fn, user};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &r, args, n_args, n_results, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    return m;
}

/* Compares the module's text with `golden`; on a difference, writes the text to a file
 * and names the first line that differs. */
static void expect_text(kiln_ctx *cx, const kiln_module *m, const char *golden, const char *tag) {
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text, "%s: %s", tag, kiln_ctx_error_message(cx));
    if (!golden || strcmp(text, golden) != 0) {
        char file[128];
        snprintf(file, sizeof file, "print_%s.mlir", tag);
        const char *path = test_tmp_path(file);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs(text, f);
            fclose(f);
        }
        const char *a = text, *b = golden ? golden : "";
        int line = 1;
        while (*a && *a == *b) {
            if (*a == '\n') line++;
            a++, b++;
        }
        const char *la = a, *lb = b;
        while (la > text && la[-1] != '\n')
            la--;
        while (golden && lb > golden && lb[-1] != '\n')
            lb--;
        cr_log_error("%s: line %d differs\n  got:  %.*s\n  want: %.*s\n(whole text in %s)", tag,
                     line, (int)strcspn(la, "\n"), la, (int)strcspn(lb, "\n"), lb, path);
        kiln_string_free(cx, text);
        cr_assert_fail("%s: the printed module differs from its golden", tag);
    }
    kiln_string_free(cx, text);
    expect_ok(cx);
}

static kiln_arg_spec arg(kiln_dtype dtype, kiln_shape shape) {
    return (kiln_arg_spec){.dtype = dtype, .shape = shape};
}

#define STATUS(cx) kiln_ctx_status(cx)

/* ---- goldens: every op of ops.def -------------------------------------------------------- */

/* The EMLX step of jit.h's overview (three iterations): constant, broadcast_in_dim,
 * multiply, add; x is donated and y returned unchanged. */
static kiln_status emlx(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *acc = in[0];
    for (int i = 1; i <= 3; i++)
        acc = kiln_add(cx, kiln_multiply(cx, kiln_scalar(cx, i, KILN_F32), acc), in[1]);
    out[0] = acc;
    out[1] = in[1];
    return STATUS(cx);
}

const char *const golden_emlx =
    "module @kiln {\n"
    "  // calling convention of @main: 2 arguments, 2 results\n"
    "  //   donated arguments: %arg0\n"
    "  //   preserved results (returned unchanged): result 1 = %arg1\n"
    "  //   aliased results (may reuse a donated buffer): result 0 -> %arg0\n"
    "  func.func public @main(%arg0: tensor<10x10xf32> {kiln.path = \"x\", tf.aliasing_output = 0 "
    ": i32}, %arg1: tensor<10x10xf32> {kiln.path = \"y\"}) -> (tensor<10x10xf32>, "
    "tensor<10x10xf32>) {\n"
    "    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>\n"
    "    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<10x10xf32>\n"
    "    %1 = stablehlo.multiply %0, %arg0 : tensor<10x10xf32>\n"
    "    %2 = stablehlo.add %1, %arg1 : tensor<10x10xf32>\n"
    "    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
    "    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<10x10xf32>\n"
    "    %4 = stablehlo.multiply %3, %2 : tensor<10x10xf32>\n"
    "    %5 = stablehlo.add %4, %arg1 : tensor<10x10xf32>\n"
    "    %cst_1 = stablehlo.constant dense<3.000000e+00> : tensor<f32>\n"
    "    %6 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<10x10xf32>\n"
    "    %7 = stablehlo.multiply %6, %5 : tensor<10x10xf32>\n"
    "    %8 = stablehlo.add %7, %arg1 : tensor<10x10xf32>\n"
    "    return %8, %arg1 : tensor<10x10xf32>, tensor<10x10xf32>\n"
    "  }\n"
    "}\n";

Test(print, emlx_step_with_its_calling_convention) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[2] = {
        {.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10), .name = "x", .donate = true},
        {.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10), .name = "y"}};
    kiln_module *m = lower(cx, emlx, NULL, args, 2, 2);
    expect_text(cx, m, golden_emlx, "emlx");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status unary(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *(*const chain[])(kiln_ctx *, kiln_tensor *) = {kiln_abs,
                                                                kiln_negate,
                                                                kiln_sign,
                                                                kiln_floor,
                                                                kiln_ceil,
                                                                kiln_round_nearest_afz,
                                                                kiln_round_nearest_even,
                                                                kiln_sqrt,
                                                                kiln_rsqrt,
                                                                kiln_cbrt,
                                                                kiln_exponential,
                                                                kiln_exponential_minus_one,
                                                                kiln_log,
                                                                kiln_log_plus_one,
                                                                kiln_logistic,
                                                                kiln_sine,
                                                                kiln_cosine,
                                                                kiln_tan,
                                                                kiln_tanh};
    kiln_tensor *y = in[0];
    for (size_t i = 0; i < sizeof chain / sizeof chain[0]; i++)
        y = chain[i](cx, y);
    out[0] = y;
    out[1] = kiln_is_finite(cx, in[0]);
    out[2] = kiln_count_leading_zeros(cx, kiln_popcnt(cx, kiln_not(cx, in[1])));
    return STATUS(cx);
}

const char *const golden_unary =
    "module @kiln {\n"
    "  // calling convention of @main: 2 arguments, 3 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xi32>) -> (tensor<4xf32>, "
    "tensor<4xi1>, tensor<4xi32>) {\n"
    "    %0 = stablehlo.abs %arg0 : tensor<4xf32>\n"
    "    %1 = stablehlo.negate %0 : tensor<4xf32>\n"
    "    %2 = stablehlo.sign %1 : tensor<4xf32>\n"
    "    %3 = stablehlo.floor %2 : tensor<4xf32>\n"
    "    %4 = stablehlo.ceil %3 : tensor<4xf32>\n"
    "    %5 = stablehlo.round_nearest_afz %4 : tensor<4xf32>\n"
    "    %6 = stablehlo.round_nearest_even %5 : tensor<4xf32>\n"
    "    %7 = stablehlo.sqrt %6 : tensor<4xf32>\n"
    "    %8 = stablehlo.rsqrt %7 : tensor<4xf32>\n"
    "    %9 = stablehlo.cbrt %8 : tensor<4xf32>\n"
    "    %10 = stablehlo.exponential %9 : tensor<4xf32>\n"
    "    %11 = stablehlo.exponential_minus_one %10 : tensor<4xf32>\n"
    "    %12 = stablehlo.log %11 : tensor<4xf32>\n"
    "    %13 = stablehlo.log_plus_one %12 : tensor<4xf32>\n"
    "    %14 = stablehlo.logistic %13 : tensor<4xf32>\n"
    "    %15 = stablehlo.sine %14 : tensor<4xf32>\n"
    "    %16 = stablehlo.cosine %15 : tensor<4xf32>\n"
    "    %17 = stablehlo.tan %16 : tensor<4xf32>\n"
    "    %18 = stablehlo.tanh %17 : tensor<4xf32>\n"
    "    %19 = stablehlo.is_finite %arg0 : (tensor<4xf32>) -> tensor<4xi1>\n"
    "    %20 = stablehlo.not %arg1 : tensor<4xi32>\n"
    "    %21 = stablehlo.popcnt %20 : tensor<4xi32>\n"
    "    %22 = stablehlo.count_leading_zeros %21 : tensor<4xi32>\n"
    "    return %18, %19, %22 : tensor<4xf32>, tensor<4xi1>, tensor<4xi32>\n"
    "  }\n"
    "}\n";

Test(print, unary_elementwise_ops) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[2] = {arg(KILN_F32, KILN_SHAPE(4)), arg(KILN_I32, KILN_SHAPE(4))};
    kiln_module *m = lower(cx, unary, NULL, args, 2, 3);
    expect_text(cx, m, golden_unary, "unary");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status binary(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *(*const floats[])(kiln_ctx *, kiln_tensor *, kiln_tensor *) = {
        kiln_add,   kiln_subtract, kiln_multiply, kiln_divide, kiln_remainder,
        kiln_power, kiln_maximum,  kiln_minimum,  kiln_atan2};
    kiln_tensor *(*const ints[])(kiln_ctx *, kiln_tensor *,
                                 kiln_tensor *) = {kiln_and,
                                                   kiln_or,
                                                   kiln_xor,
                                                   kiln_shift_left,
                                                   kiln_shift_right_arithmetic,
                                                   kiln_shift_right_logical};
    kiln_tensor *y = in[0];
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++)
        y = floats[i](cx, y, in[1]);
    kiln_tensor *z = in[2];
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        z = ints[i](cx, z, in[3]);
    out[0] = y;
    out[1] = z;
    return STATUS(cx);
}

const char *const golden_binary =
    "module @kiln {\n"
    "  // calling convention of @main: 4 arguments, 2 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<2x2xi32>, "
    "%arg3: tensor<2x2xi32>) -> (tensor<4xf32>, tensor<2x2xi32>) {\n"
    "    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>\n"
    "    %1 = stablehlo.subtract %0, %arg1 : tensor<4xf32>\n"
    "    %2 = stablehlo.multiply %1, %arg1 : tensor<4xf32>\n"
    "    %3 = stablehlo.divide %2, %arg1 : tensor<4xf32>\n"
    "    %4 = stablehlo.remainder %3, %arg1 : tensor<4xf32>\n"
    "    %5 = stablehlo.power %4, %arg1 : tensor<4xf32>\n"
    "    %6 = stablehlo.maximum %5, %arg1 : tensor<4xf32>\n"
    "    %7 = stablehlo.minimum %6, %arg1 : tensor<4xf32>\n"
    "    %8 = stablehlo.atan2 %7, %arg1 : tensor<4xf32>\n"
    "    %9 = stablehlo.and %arg2, %arg3 : tensor<2x2xi32>\n"
    "    %10 = stablehlo.or %9, %arg3 : tensor<2x2xi32>\n"
    "    %11 = stablehlo.xor %10, %arg3 : tensor<2x2xi32>\n"
    "    %12 = stablehlo.shift_left %11, %arg3 : tensor<2x2xi32>\n"
    "    %13 = stablehlo.shift_right_arithmetic %12, %arg3 : tensor<2x2xi32>\n"
    "    %14 = stablehlo.shift_right_logical %13, %arg3 : tensor<2x2xi32>\n"
    "    return %8, %14 : tensor<4xf32>, tensor<2x2xi32>\n"
    "  }\n"
    "}\n";

static kiln_status parts(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] = kiln_complex(cx, kiln_imag(cx, in[0]), kiln_real(cx, in[0]));
    return STATUS(cx);
}

const char *const golden_parts =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>> {\n"
    "    %0 = stablehlo.real %arg0 : (tensor<3xcomplex<f32>>) -> tensor<3xf32>\n"
    "    %1 = stablehlo.imag %arg0 : (tensor<3xcomplex<f32>>) -> tensor<3xf32>\n"
    "    %2 = stablehlo.complex %1, %0 : tensor<3xcomplex<f32>>\n"
    "    return %2 : tensor<3xcomplex<f32>>\n"
    "  }\n"
    "}\n";

static kiln_status spectrum(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_fft(cx, kiln_fft(cx, in[0], KILN_FFT_REAL, KILN_DIMS(2, 6)),
                      KILN_FFT_INVERSE_REAL, KILN_DIMS(2, 6));
    return STATUS(cx);
}

/* fft's pretty form: the type before the lengths, the enum without MLIR's extra space */
const char *const golden_fft =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<2x6xf32>) -> tensor<2x6xf32> {\n"
    "    %0 = stablehlo.fft %arg0, type = RFFT, length = [2, 6] : (tensor<2x6xf32>) -> "
    "tensor<2x4xcomplex<f32>>\n"
    "    %1 = stablehlo.fft %0, type = IRFFT, length = [2, 6] : (tensor<2x4xcomplex<f32>>) -> "
    "tensor<2x6xf32>\n"
    "    return %1 : tensor<2x6xf32>\n"
    "  }\n"
    "}\n";

static kiln_status factor(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *l = kiln_cholesky(cx, in[0], true);
    out[0] = kiln_triangular_solve(cx, l, kiln_cholesky(cx, in[0], false), false, false, true,
                                   KILN_TRANSPOSE_ADJOINT);
    return STATUS(cx);
}

/* cholesky's pretty form (lower = false left out) and triangular_solve's generic one */
const char *const golden_triangular =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<3x3xf64>) -> tensor<3x3xf64> {\n"
    "    %0 = stablehlo.cholesky %arg0, lower = true : tensor<3x3xf64>\n"
    "    %1 = stablehlo.cholesky %arg0 : tensor<3x3xf64>\n"
    "    %2 = \"stablehlo.triangular_solve\"(%0, %1) <{left_side = false, lower = false, "
    "transpose_a = #stablehlo<transpose ADJOINT>, unit_diagonal = true}> : (tensor<3x3xf64>, "
    "tensor<3x3xf64>) -> tensor<3x3xf64>\n"
    "    return %2 : tensor<3x3xf64>\n"
    "  }\n"
    "}\n";

Test(print, triangular) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[1] = {arg(KILN_F64, KILN_SHAPE(3, 3))};
    kiln_module *m = lower(cx, factor, NULL, args, 1, 1);
    expect_text(cx, m, golden_triangular, "triangular");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status narrower(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_reduce_precision(cx, kiln_reduce_precision(cx, in[0], 5, 10), 8, 0);
    return STATUS(cx);
}

const char *const golden_reduce_precision =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = stablehlo.reduce_precision %arg0, format = e5m10 : tensor<4xf32>\n"
    "    %1 = stablehlo.reduce_precision %0, format = e8m0 : tensor<4xf32>\n"
    "    return %1 : tensor<4xf32>\n"
    "  }\n"
    "}\n";

Test(print, reduce_precision) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[1] = {arg(KILN_F32, KILN_SHAPE(4))};
    kiln_module *m = lower(cx, narrower, NULL, args, 1, 1);
    expect_text(cx, m, golden_reduce_precision, "reduce_precision");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status scalar_max(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_maximum(cx, in[0], in[1]);
    return STATUS(cx);
}

static kiln_status mapped(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_map(cx, &(kiln_region){scalar_max, NULL}, in, 2, KILN_F32);
    return STATUS(cx);
}

const char *const golden_map =
    "module @kiln {\n"
    "  // calling convention of @main: 2 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>) -> "
    "tensor<2x3xf32> {\n"
    "    %0 = \"stablehlo.map\"(%arg0, %arg1) <{dimensions = array<i64: 0, 1>}> ({\n"
    "    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):\n"
    "      %1 = stablehlo.maximum %arg2, %arg3 : tensor<f32>\n"
    "      stablehlo.return %1 : tensor<f32>\n"
    "    }) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>\n"
    "    return %0 : tensor<2x3xf32>\n"
    "  }\n"
    "}\n";

Test(print, map) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[2] = {arg(KILN_F32, KILN_SHAPE(2, 3)), arg(KILN_F32, KILN_SHAPE(2, 3))};
    kiln_module *m = lower(cx, mapped, NULL, args, 2, 1);
    expect_text(cx, m, golden_map, "map");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(print, fft) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[1] = {arg(KILN_F32, KILN_SHAPE(2, 6))};
    kiln_module *m = lower(cx, spectrum, NULL, args, 1, 1);
    expect_text(cx, m, golden_fft, "fft");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(print, complex_parts) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[1] = {arg(KILN_C64, KILN_SHAPE(3))};
    kiln_module *m = lower(cx, parts, NULL, args, 1, 1);
    expect_text(cx, m, golden_parts, "parts");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(print, binary_elementwise_ops) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[4] = {arg(KILN_F32, KILN_SHAPE(4)), arg(KILN_F32, KILN_SHAPE(4)),
                             arg(KILN_I32, KILN_SHAPE(2, 2)), arg(KILN_I32, KILN_SHAPE(2, 2))};
    kiln_module *m = lower(cx, binary, NULL, args, 4, 2);
    expect_text(cx, m, golden_binary, "binary");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* compare with each comparison type, select, clamp with rank-0 bounds, convert,
 * bitcast_convert. */
static kiln_status compare_select(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *user) {
    (void)user;
    kiln_tensor *a = in[0], *b = in[1], *i = in[2], *u = in[3];
    kiln_tensor *p = kiln_compare(cx, a, b, KILN_CMP_LT, KILN_CMP_DEFAULT);
    kiln_tensor *q = kiln_compare(cx, a, b, KILN_CMP_EQ, KILN_CMP_TOTALORDER);
    kiln_tensor *r = kiln_compare(cx, i, i, KILN_CMP_GE, KILN_CMP_DEFAULT);
    kiln_tensor *s = kiln_compare(cx, u, u, KILN_CMP_NE, KILN_CMP_DEFAULT);
    out[0] = kiln_select(cx, p, a, b);
    out[1] = kiln_clamp(cx, kiln_scalar(cx, 0, KILN_F32), a, kiln_scalar(cx, 1, KILN_F32));
    out[2] = kiln_convert(cx, i, KILN_BF16);
    out[3] = kiln_bitcast_convert(cx, a, KILN_U8);
    out[4] = kiln_and(cx, kiln_or(cx, p, q), kiln_xor(cx, r, s));
    return STATUS(cx);
}

const char *const golden_compare_select =
    "module @kiln {\n"
    "  // calling convention of @main: 4 arguments, 5 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>, %arg2: tensor<3xi64>, "
    "%arg3: tensor<3xui16>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xbf16>, tensor<3x4xui8>, "
    "tensor<3xi1>) {\n"
    "    %0 = stablehlo.compare  LT, %arg0, %arg1,  FLOAT : (tensor<3xf32>, tensor<3xf32>) -> "
    "tensor<3xi1>\n"
    "    %1 = stablehlo.compare  EQ, %arg0, %arg1,  TOTALORDER : (tensor<3xf32>, tensor<3xf32>) -> "
    "tensor<3xi1>\n"
    "    %2 = stablehlo.compare  GE, %arg2, %arg2,  SIGNED : (tensor<3xi64>, tensor<3xi64>) -> "
    "tensor<3xi1>\n"
    "    %3 = stablehlo.compare  NE, %arg3, %arg3,  UNSIGNED : (tensor<3xui16>, tensor<3xui16>) -> "
    "tensor<3xi1>\n"
    "    %4 = stablehlo.select %0, %arg0, %arg1 : tensor<3xi1>, tensor<3xf32>\n"
    "    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>\n"
    "    %5 = stablehlo.clamp %cst, %arg0, %cst_0 : (tensor<f32>, tensor<3xf32>, tensor<f32>) -> "
    "tensor<3xf32>\n"
    "    %6 = stablehlo.convert %arg2 : (tensor<3xi64>) -> tensor<3xbf16>\n"
    "    %7 = stablehlo.bitcast_convert %arg0 : (tensor<3xf32>) -> tensor<3x4xui8>\n"
    "    %8 = stablehlo.xor %2, %3 : tensor<3xi1>\n"
    "    %9 = stablehlo.or %0, %1 : tensor<3xi1>\n"
    "    %10 = stablehlo.and %9, %8 : tensor<3xi1>\n"
    "    return %4, %5, %6, %7, %10 : tensor<3xf32>, tensor<3xf32>, tensor<3xbf16>, "
    "tensor<3x4xui8>, tensor<3xi1>\n"
    "  }\n"
    "}\n";

Test(print, compare_select_clamp_and_conversions) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[4] = {arg(KILN_F32, KILN_SHAPE(3)), arg(KILN_F32, KILN_SHAPE(3)),
                             arg(KILN_I64, KILN_SHAPE(3)), arg(KILN_U16, KILN_SHAPE(3))};
    kiln_module *m = lower(cx, compare_select, NULL, args, 4, 5);
    expect_text(cx, m, golden_compare_select, "compare_select");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status rng(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *state = NULL;
    out[0] = kiln_rng_bit_generator(cx, in[0], KILN_RNG_PHILOX, KILN_U32, KILN_SHAPE(2, 3), &state);
    out[1] = kiln_rng_bit_generator(cx, state, KILN_RNG_THREE_FRY, KILN_F32, KILN_SHAPE(4), NULL);
    out[2] = kiln_rng_bit_generator(cx, in[0], KILN_RNG_DEFAULT, KILN_U8, KILN_SHAPE(3), NULL);
    return STATUS(cx);
}

const char *const golden_rng =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 3 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<2xui64>) -> (tensor<2x3xui32>, tensor<4xf32>, "
    "tensor<3xui8>) {\n"
    "    %output_state, %output = stablehlo.rng_bit_generator %arg0, algorithm =  PHILOX : "
    "(tensor<2xui64>) -> (tensor<2xui64>, tensor<2x3xui32>)\n"
    "    %output_state_0, %output_1 = stablehlo.rng_bit_generator %output_state, algorithm =  "
    "THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xf32>)\n"
    "    %output_state_2, %output_3 = stablehlo.rng_bit_generator %arg0, algorithm =  DEFAULT : "
    "(tensor<2xui64>) -> (tensor<2xui64>, tensor<3xui8>)\n"
    "    return %output, %output_1, %output_3 : tensor<2x3xui32>, tensor<4xf32>, tensor<3xui8>\n"
    "  }\n"
    "}\n";

Test(print, rng_bit_generator_names_its_results) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = arg(KILN_U64, KILN_SHAPE(2));
    kiln_module *m = lower(cx, rng, NULL, &a, 1, 3);
    expect_text(cx, m, golden_rng, "rng");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status movement(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *x = in[0], *i = in[1];
    kiln_tensor *starts[2] = {i, i};
    out[0] = kiln_broadcast_in_dim(cx, x, KILN_SHAPE(4, 2, 3), KILN_DIMS(1, 2));
    out[1] = kiln_reshape(cx, x, KILN_SHAPE(3, 2));
    out[2] = kiln_transpose(cx, x, KILN_DIMS(1, 0));
    out[3] = kiln_reverse(cx, x, KILN_DIMS(0));
    out[4] = kiln_slice(cx, x, KILN_DIMS(0, 1), KILN_DIMS(2, 3), KILN_DIMS(1, 2));
    out[5] = kiln_dynamic_slice(cx, x, starts, KILN_DIMS(1, 2));
    out[6] = kiln_dynamic_update_slice(cx, x, out[5], starts);
    out[7] = kiln_pad(cx, x, kiln_scalar(cx, 0, KILN_F32), KILN_DIMS(1, 0), KILN_DIMS(0, 2),
                      KILN_DIMS(0, 1));
    out[8] = kiln_concatenate(cx, (kiln_tensor *[]){x, out[3]}, 2, 0);
    return STATUS(cx);
}

const char *const golden_movement =
    "module @kiln {\n"
    "  // calling convention of @main: 2 arguments, 9 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<i32>) -> (tensor<4x2x3xf32>, "
    "tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x3xf32>, tensor<2x1xf32>, tensor<1x2xf32>, "
    "tensor<2x3xf32>, tensor<3x7xf32>, tensor<4x3xf32>) {\n"
    "    %0 = stablehlo.broadcast_in_dim %arg0, dims = [1, 2] : (tensor<2x3xf32>) -> "
    "tensor<4x2x3xf32>\n"
    "    %1 = stablehlo.reshape %arg0 : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
    "    %2 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
    "    %3 = stablehlo.reverse %arg0, dims = [0] : tensor<2x3xf32>\n"
    "    %4 = stablehlo.slice %arg0 [0:2, 1:3:2] : (tensor<2x3xf32>) -> tensor<2x1xf32>\n"
    "    %5 = stablehlo.dynamic_slice %arg0, %arg1, %arg1, sizes = [1, 2] : (tensor<2x3xf32>, "
    "tensor<i32>, tensor<i32>) -> tensor<1x2xf32>\n"
    "    %6 = stablehlo.dynamic_update_slice %arg0, %5, %arg1, %arg1 : (tensor<2x3xf32>, "
    "tensor<1x2xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>\n"
    "    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "    %7 = stablehlo.pad %arg0, %cst, low = [1, 0], high = [0, 2], interior = [0, 1] : "
    "(tensor<2x3xf32>, tensor<f32>) -> tensor<3x7xf32>\n"
    "    %8 = stablehlo.concatenate %arg0, %3, dim = 0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> "
    "tensor<4x3xf32>\n"
    "    return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<4x2x3xf32>, tensor<3x2xf32>, "
    "tensor<3x2xf32>, tensor<2x3xf32>, tensor<2x1xf32>, tensor<1x2xf32>, tensor<2x3xf32>, "
    "tensor<3x7xf32>, tensor<4x3xf32>\n"
    "  }\n"
    "}\n";

Test(print, data_movement_ops) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[2] = {arg(KILN_F32, KILN_SHAPE(2, 3)), arg(KILN_I32, KILN_SHAPE_SCALAR)};
    kiln_module *m = lower(cx, movement, NULL, args, 2, 9);
    expect_text(cx, m, golden_movement, "movement");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status indexing(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *table = in[0], *idx = in[1], *keys = in[2], *vals = in[3];
    kiln_gather_params g = {.offset_dims = KILN_DIMS(1),
                            .collapsed_slice_dims = KILN_DIMS(0),
                            .start_index_map = KILN_DIMS(0),
                            .index_vector_dim = 1,
                            .slice_sizes = KILN_DIMS(1, 3)};
    out[0] = kiln_gather(cx, table, idx, &g);
    kiln_scatter_params sp = {.update_window_dims = KILN_DIMS(1),
                              .inserted_window_dims = KILN_DIMS(0),
                              .scatter_dims_to_operand_dims = KILN_DIMS(0),
                              .index_vector_dim = 1,
                              .indices_are_sorted = true};
    kiln_status s = kiln_scatter(cx, &table, 1, idx, &out[0], &sp, kiln_region_add(), &out[1]);
    if (s != KILN_OK) return s;
    return kiln_sort(cx, (kiln_tensor *[]){keys, vals}, 2, 0, true, kiln_region_less(), &out[2]);
}

const char *const golden_indexing =
    "module @kiln {\n"
    "  // calling convention of @main: 4 arguments, 4 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4x3xf32>, %arg1: tensor<2x1xi32>, %arg2: "
    "tensor<5xf32>, %arg3: tensor<5xi32>) -> (tensor<2x3xf32>, tensor<4x3xf32>, tensor<5xf32>, "
    "tensor<5xi32>) {\n"
    "    %0 = \"stablehlo.gather\"(%arg0, %arg1) <{dimension_numbers = "
    "#stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], "
    "index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 3>}> : "
    "(tensor<4x3xf32>, tensor<2x1xi32>) -> tensor<2x3xf32>\n"
    "    %1 = \"stablehlo.scatter\"(%arg0, %arg1, %0) <{indices_are_sorted = true, "
    "scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims "
    "= [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> "
    "({\n"
    "    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):\n"
    "      %3 = stablehlo.add %arg4, %arg5 : tensor<f32>\n"
    "      stablehlo.return %3 : tensor<f32>\n"
    "    }) : (tensor<4x3xf32>, tensor<2x1xi32>, tensor<2x3xf32>) -> tensor<4x3xf32>\n"
    "    %2:2 = \"stablehlo.sort\"(%arg2, %arg3) <{dimension = 0 : i64, is_stable = true}> ({\n"
    "    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>, %arg6: tensor<i32>, %arg7: tensor<i32>):\n"
    "      %3 = stablehlo.compare  LT, %arg4, %arg5,  FLOAT : (tensor<f32>, tensor<f32>) -> "
    "tensor<i1>\n"
    "      stablehlo.return %3 : tensor<i1>\n"
    "    }) : (tensor<5xf32>, tensor<5xi32>) -> (tensor<5xf32>, tensor<5xi32>)\n"
    "    return %0, %1, %2#0, %2#1 : tensor<2x3xf32>, tensor<4x3xf32>, tensor<5xf32>, "
    "tensor<5xi32>\n"
    "  }\n"
    "}\n";

Test(print, gather_scatter_and_sort) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[4] = {arg(KILN_F32, KILN_SHAPE(4, 3)), arg(KILN_I32, KILN_SHAPE(2, 1)),
                             arg(KILN_F32, KILN_SHAPE(5)), arg(KILN_I32, KILN_SHAPE(5))};
    kiln_module *m = lower(cx, indexing, NULL, args, 4, 4);
    expect_text(cx, m, golden_indexing, "indexing");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* acc + x * x: a region stablehlo cannot print compactly. */
static kiln_status sum_of_squares(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, a[0], kiln_multiply(cx, a[1], a[1]));
    return STATUS(cx);
}

static kiln_status reductions(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *x = in[0], *zero = kiln_scalar(cx, 0, KILN_F32);
    kiln_status s = kiln_reduce(cx, &x, &zero, 1, KILN_DIMS(1), kiln_region_add(), &out[0]);
    kiln_region squares = {sum_of_squares, NULL};
    if (s == KILN_OK) s = kiln_reduce(cx, &x, &zero, 1, KILN_DIMS(0, 1), &squares, &out[1]);
    kiln_window_params w = {.window_dimensions = KILN_DIMS(2, 2),
                            .window_strides = KILN_DIMS(2, 2),
                            .padding_high = KILN_DIMS(0, 1)};
    if (s == KILN_OK) s = kiln_reduce_window(cx, &x, &zero, 1, &w, kiln_region_maximum(), &out[2]);
    kiln_window_params sw = {.window_dimensions = KILN_DIMS(2, 2),
                             .window_strides = KILN_DIMS(2, 2)};
    if (s == KILN_OK)
        out[3] = kiln_select_and_scatter(cx, x, in[1], zero, &sw, kiln_region_greater_equal(),
                                         kiln_region_add());
    return s == KILN_OK ? STATUS(cx) : s;
}

const char *const golden_reductions =
    "module @kiln {\n"
    "  // calling convention of @main: 2 arguments, 4 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4x6xf32>, %arg1: tensor<2x3xf32>) -> (tensor<4xf32>, "
    "tensor<f32>, tensor<2x3xf32>, tensor<4x6xf32>) {\n"
    "    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : "
    "(tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>\n"
    "    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "    %1 = \"stablehlo.reduce\"(%arg0, %cst_0) <{dimensions = array<i64: 0, 1>}> ({\n"
    "    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):\n"
    "      %4 = stablehlo.multiply %arg3, %arg3 : tensor<f32>\n"
    "      %5 = stablehlo.add %arg2, %4 : tensor<f32>\n"
    "      stablehlo.return %5 : tensor<f32>\n"
    "    }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<f32>\n"
    "    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "    %2 = \"stablehlo.reduce_window\"(%arg0, %cst_1) <{base_dilations = array<i64: 1, 1>, "
    "padding = dense<[[0, 0], [0, 1]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, "
    "window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>}> ({\n"
    "    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):\n"
    "      %4 = stablehlo.maximum %arg2, %arg3 : tensor<f32>\n"
    "      stablehlo.return %4 : tensor<f32>\n"
    "    }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x3xf32>\n"
    "    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "    %3 = \"stablehlo.select_and_scatter\"(%arg0, %arg1, %cst_2) <{padding = dense<0> : "
    "tensor<2x2xi64>, window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>}> "
    "({\n"
    "    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):\n"
    "      %4 = stablehlo.compare  GE, %arg2, %arg3,  FLOAT : (tensor<f32>, tensor<f32>) -> "
    "tensor<i1>\n"
    "      stablehlo.return %4 : tensor<i1>\n"
    "    }, {\n"
    "    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):\n"
    "      %4 = stablehlo.add %arg2, %arg3 : tensor<f32>\n"
    "      stablehlo.return %4 : tensor<f32>\n"
    "    }) : (tensor<4x6xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<4x6xf32>\n"
    "    return %0, %1, %2, %3 : tensor<4xf32>, tensor<f32>, tensor<2x3xf32>, tensor<4x6xf32>\n"
    "  }\n"
    "}\n";

Test(print, reduce_reduce_window_and_select_and_scatter) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[2] = {arg(KILN_F32, KILN_SHAPE(4, 6)), arg(KILN_F32, KILN_SHAPE(2, 3))};
    kiln_module *m = lower(cx, reductions, NULL, args, 2, 4);
    expect_text(cx, m, golden_reductions, "reductions");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status contractions(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                void *user) {
    (void)user;
    kiln_dot_params dp = {.lhs_batching_dims = KILN_DIMS(0),
                          .rhs_batching_dims = KILN_DIMS(0),
                          .lhs_contracting_dims = KILN_DIMS(2),
                          .rhs_contracting_dims = KILN_DIMS(1)};
    out[0] = kiln_dot_general(cx, in[0], in[1], &dp, KILN_DTYPE_COUNT);
    kiln_dot_params mm = {.lhs_contracting_dims = KILN_DIMS(1),
                          .rhs_contracting_dims = KILN_DIMS(0)};
    out[1] = kiln_dot_general(cx, in[2], in[3], &mm, KILN_F64);
    kiln_conv_params cp = kiln_conv_params_nchw(2);
    cp.window_strides = KILN_DIMS(2, 1);
    cp.padding_low = KILN_DIMS(1, 0);
    cp.padding_high = KILN_DIMS(1, 2);
    cp.rhs_dilation = KILN_DIMS(1, 2);
    out[2] = kiln_convolution(cx, in[4], in[5], &cp, KILN_DTYPE_COUNT);
    return STATUS(cx);
}

const char *const golden_contractions =
    "module @kiln {\n"
    "  // calling convention of @main: 6 arguments, 3 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<2x3x4xf32>, %arg1: tensor<2x4x5xf32>, %arg2: "
    "tensor<3x4xf32>, %arg3: tensor<4x5xf32>, %arg4: tensor<1x2x5x5xf32>, %arg5: "
    "tensor<3x2x3x3xf32>) -> (tensor<2x3x5xf32>, tensor<3x5xf64>, tensor<1x3x3x3xf32>) {\n"
    "    %0 = stablehlo.dot_general %arg0, %arg1, batching_dims = [0] x [0], contracting_dims = "
    "[2] x [1] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>\n"
    "    %1 = stablehlo.dot_general %arg2, %arg3, contracting_dims = [1] x [0] : (tensor<3x4xf32>, "
    "tensor<4x5xf32>) -> tensor<3x5xf64>\n"
    "    %2 = stablehlo.convolution(%arg4, %arg5) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, "
    "0, 1], window = {stride = [2, 1], pad = [[1, 1], [0, 2]], lhs_dilate = [1, 1], rhs_dilate = "
    "[1, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x5x5xf32>, "
    "tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>\n"
    "    return %0, %1, %2 : tensor<2x3x5xf32>, tensor<3x5xf64>, tensor<1x3x3x3xf32>\n"
    "  }\n"
    "}\n";

Test(print, dot_general_and_convolution) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[6] = {
        arg(KILN_F32, KILN_SHAPE(2, 3, 4)),    arg(KILN_F32, KILN_SHAPE(2, 4, 5)),
        arg(KILN_F32, KILN_SHAPE(3, 4)),       arg(KILN_F32, KILN_SHAPE(4, 5)),
        arg(KILN_F32, KILN_SHAPE(1, 2, 5, 5)), arg(KILN_F32, KILN_SHAPE(3, 2, 3, 3))};
    kiln_module *m = lower(cx, contractions, NULL, args, 6, 3);
    expect_text(cx, m, golden_contractions, "contractions");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* while (i, x): i < 3 -> (i + 1, x * x), with an if in the body; case over three branches;
 * a call whose callee uses an outer value; an optimization barrier. */
static kiln_status less_than_3(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_compare(cx, a[0], kiln_scalar(cx, 3, KILN_I64), KILN_CMP_LT, KILN_CMP_DEFAULT);
    return STATUS(cx);
}

static kiln_status twice(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a;
    kiln_tensor *x = u;
    r[0] = kiln_add(cx, x, x);
    return STATUS(cx);
}

static kiln_status same(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)cx, (void)a;
    r[0] = u;
    return KILN_OK;
}

static kiln_status step(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, a[0], kiln_scalar(cx, 1, KILN_I64));
    kiln_tensor *odd = kiln_compare(cx, kiln_remainder(cx, a[0], kiln_scalar(cx, 2, KILN_I64)),
                                    kiln_scalar(cx, 1, KILN_I64), KILN_CMP_EQ, KILN_CMP_DEFAULT);
    kiln_region on_true = {twice, a[1]}, on_false = {same, a[1]};
    return kiln_cond(cx, odd, &on_true, &on_false, NULL, 0, 1, &r[1]);
}

static kiln_status branch_const(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a;
    r[0] = kiln_full(cx, KILN_F32, KILN_SHAPE(2), *(const double *)u);
    return STATUS(cx);
}

static kiln_status callee(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    kiln_tensor *outer = u;
    r[0] = kiln_multiply(cx, a[0], outer);
    r[1] = kiln_subtract(cx, a[1], a[0]);
    return STATUS(cx);
}

static kiln_status control(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_region cond = {less_than_3, NULL}, body = {step, NULL};
    kiln_tensor *state[2];
    kiln_status s = kiln_while(cx, (kiln_tensor *[]){kiln_scalar(cx, 0, KILN_I64), in[0]}, 2, &cond,
                               &body, state);
    if (s != KILN_OK) return s;
    out[0] = state[1];
    static const double values[3] = {1, 2, 0.5};
    kiln_region branches[3] = {
        {branch_const, (void *)&values[0]}, {same, in[0]}, {branch_const, (void *)&values[2]}};
    s = kiln_case(cx, in[1], branches, 3, NULL, 0, 1, &out[1]);
    if (s != KILN_OK) return s;
    kiln_region fn = {callee, in[2]};
    kiln_tensor *called[2];
    s = kiln_call(cx, &fn, (kiln_tensor *[]){in[0], out[1]}, 2, 2, called);
    if (s != KILN_OK) return s;
    out[2] = called[0];
    return kiln_optimization_barrier(cx, (kiln_tensor *[]){called[1], in[1]}, 2, &out[3]);
}

const char *const golden_control =
    "module @kiln {\n"
    "  // calling convention of @main: 3 arguments, 5 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<2xf32>, %arg1: tensor<i32>, %arg2: tensor<2xf32>) -> "
    "(tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<i32>) {\n"
    "    %c = stablehlo.constant dense<0> : tensor<i64>\n"
    "    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i64>, tensor<2xf32>\n"
    "    cond {\n"
    "      %c_1 = stablehlo.constant dense<3> : tensor<i64>\n"
    "      %4 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i64>, tensor<i64>) -> "
    "tensor<i1>\n"
    "      stablehlo.return %4 : tensor<i1>\n"
    "    } do {\n"
    "      %c_1 = stablehlo.constant dense<1> : tensor<i64>\n"
    "      %4 = stablehlo.add %iterArg, %c_1 : tensor<i64>\n"
    "      %c_2 = stablehlo.constant dense<2> : tensor<i64>\n"
    "      %5 = stablehlo.remainder %iterArg, %c_2 : tensor<i64>\n"
    "      %c_3 = stablehlo.constant dense<1> : tensor<i64>\n"
    "      %6 = stablehlo.compare  EQ, %5, %c_3,  SIGNED : (tensor<i64>, tensor<i64>) -> "
    "tensor<i1>\n"
    "      %7 = \"stablehlo.if\"(%6) ({\n"
    "        %8 = stablehlo.add %iterArg_0, %iterArg_0 : tensor<2xf32>\n"
    "        stablehlo.return %8 : tensor<2xf32>\n"
    "      }, {\n"
    "        stablehlo.return %iterArg_0 : tensor<2xf32>\n"
    "      }) : (tensor<i1>) -> tensor<2xf32>\n"
    "      stablehlo.return %4, %7 : tensor<i64>, tensor<2xf32>\n"
    "    }\n"
    "    %1 = \"stablehlo.case\"(%arg1) ({\n"
    "      %cst = stablehlo.constant dense<1.000000e+00> : tensor<2xf32>\n"
    "      stablehlo.return %cst : tensor<2xf32>\n"
    "    }, {\n"
    "      stablehlo.return %arg0 : tensor<2xf32>\n"
    "    }, {\n"
    "      %cst = stablehlo.constant dense<5.000000e-01> : tensor<2xf32>\n"
    "      stablehlo.return %cst : tensor<2xf32>\n"
    "    }) : (tensor<i32>) -> tensor<2xf32>\n"
    "    %2:2 = func.call @callee_0(%arg0, %1, %arg2) : (tensor<2xf32>, tensor<2xf32>, "
    "tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)\n"
    "    %3:2 = stablehlo.optimization_barrier %2#1, %arg1 : tensor<2xf32>, tensor<i32>\n"
    "    return %0#1, %1, %2#0, %3#0, %3#1 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, "
    "tensor<2xf32>, tensor<i32>\n"
    "  }\n"
    "  func.func private @callee_0(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>, %arg2: "
    "tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {\n"
    "    %0 = stablehlo.multiply %arg0, %arg2 : tensor<2xf32>\n"
    "    %1 = stablehlo.subtract %arg1, %arg0 : tensor<2xf32>\n"
    "    return %0, %1 : tensor<2xf32>, tensor<2xf32>\n"
    "  }\n"
    "}\n";

Test(print, while_if_case_call_and_optimization_barrier) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[3] = {arg(KILN_F32, KILN_SHAPE(2)), arg(KILN_I32, KILN_SHAPE_SCALAR),
                             arg(KILN_F32, KILN_SHAPE(2))};
    kiln_module *m = lower(cx, control, NULL, args, 3, 5);
    expect_text(cx, m, golden_control, "control");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* iota has no operands, so tracing always folds it: a module built by hand shows it, with
 * the forms that tracing does not make (no calling convention recorded, a dynamic_slice
 * of a rank-0 operand, a barrier over nothing). */
const char *const golden_handmade =
    "module @handmade {\n"
    "  func.func public @main(%arg0: tensor<f32>) -> (tensor<2x3xi32>, tensor<f32>) {\n"
    "    %0 = stablehlo.iota dim = 1 : tensor<2x3xi32>\n"
    "    %1 = \"stablehlo.dynamic_slice\"(%arg0) <{slice_sizes = array<i64>}> : (tensor<f32>) -> "
    "tensor<f32>\n"
    "    stablehlo.optimization_barrier()\n"
    "    return %0, %1 : tensor<2x3xi32>, tensor<f32>\n"
    "  }\n"
    "}\n";

Test(print, iota_and_handmade_edge_cases) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = kiln__module_new(cx, "handmade");
    cr_assert_not_null(m);
    kiln__func *f = kiln__module_add_func(m, "main", true);
    cr_assert_not_null(f);
    kiln__block *b = f->body;
    kiln__type scalar = {.dtype = KILN_F32, .shape = KILN_SHAPE_SCALAR};
    kiln__value *x = kiln__block_add_arg(m, b, scalar);
    kiln__attrs iota = {0};
    iota.u.iota.dtype = KILN_I32;
    iota.u.iota.shape = KILN_SHAPE(2, 3);
    iota.u.iota.dimension = 1;
    kiln__type it = {.dtype = KILN_I32, .shape = KILN_SHAPE(2, 3)};
    kiln__ir_op *op1 = kiln__block_append(m, b, KILN_OP_IOTA, &iota, NULL, 0, &it, 1, 0);
    kiln__attrs ds = {0};
    ds.u.slice_sizes = KILN_DIMS_NONE;
    kiln__ir_op *op2 = kiln__block_append(m, b, KILN_OP_DYNAMIC_SLICE, &ds, &x, 1, &scalar, 1, 0);
    kiln__attrs none = {0};
    kiln__ir_op *op3 =
        kiln__block_append(m, b, KILN_OP_OPTIMIZATION_BARRIER, &none, NULL, 0, NULL, 0, 0);
    cr_assert(op1 && op2 && op3);
    kiln__value *results[2] = {op1->results[0], op2->results[0]};
    cr_assert_eq(kiln__block_set_results(m, b, results, 2), KILN_OK);
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_text(cx, m, golden_handmade, "handmade");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* ---- names, attributes and the calling convention --------------------------------------- */

static kiln_status add_pairs(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] = kiln_add(cx, in[0], in[1]);
    out[1] = kiln_convert(cx, in[2], KILN_I32);
    out[2] = in[0];
    return STATUS(cx);
}

const char *const golden_names =
    "module @\"my model\" {\n"
    "  // calling convention of @main: 3 arguments, 3 results\n"
    "  //   donated arguments: %arg1, %arg2\n"
    "  //   preserved results (returned unchanged): result 2 = %arg0\n"
    "  //   aliased results (may reuse a donated buffer): result 0 -> %arg1\n"
    "  func.func public @main(%arg0: tensor<3xf32> {kiln.path = \"params.w1\"}, %arg1: "
    "tensor<3xf32> {kiln.path = \"odd \\\"name\\\" \\\\ caf\\C3\\A9\", tf.aliasing_output = 0 : "
    "i32}, %arg2: tensor<2x3xi8> {jax.buffer_donor = true}) -> (tensor<3xf32>, tensor<2x3xi32>, "
    "tensor<3xf32>) {\n"
    "    %0 = stablehlo.add %arg0, %arg1 : tensor<3xf32>\n"
    "    %1 = stablehlo.convert %arg2 : (tensor<2x3xi8>) -> tensor<2x3xi32>\n"
    "    return %0, %1, %arg0 : tensor<3xf32>, tensor<2x3xi32>, tensor<3xf32>\n"
    "  }\n"
    "}\n";

Test(print, module_names_paths_and_donation) {
    kiln_ctx *cx = test_ctx();
    /* donate_all: arg 0 is returned unchanged (never donated), arg 1 may serve result 0,
     * arg 2 is donated with no result of its size (a buffer donor only). */
    kiln_arg_spec args[3] = {
        {.dtype = KILN_F32, .shape = KILN_SHAPE(3), .name = "params.w1"},
        {.dtype = KILN_F32, .shape = KILN_SHAPE(3), .name = "odd \"name\" \\ caf\xC3\xA9"},
        {.dtype = KILN_I8, .shape = KILN_SHAPE(2, 3)}};
    kiln_lower_options o = kiln_lower_options_default();
    o.name = "my model";
    o.donate_all = true;
    kiln_region r = {add_pairs, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &r, args, 3, 3, &o, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_text(cx, m, golden_names, "names");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status many_steps(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    int steps = *(const int *)user;
    kiln_tensor *acc = in[0];
    for (int i = 1; i <= steps; i++)
        acc = kiln_add(cx, kiln_multiply(cx, kiln_scalar(cx, i, KILN_F32), acc), in[0]);
    out[0] = acc;
    return STATUS(cx);
}

Test(print, large_functions_number_every_value) {
    kiln_ctx *cx = test_ctx();
    int steps = 300;
    kiln_arg_spec a = arg(KILN_F32, KILN_SHAPE(2));
    kiln_module *m = lower(cx, many_steps, &steps, &a, 1, 1);
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text, "%s", kiln_ctx_error_message(cx));
    /* Constants are %cst, %cst_0 ... %cst_298; ops are %0 ... %899. */
    cr_assert_not_null(strstr(text, "    %cst = stablehlo.constant dense<1.000000e+00>"));
    cr_assert_not_null(strstr(text, "    %cst_298 = stablehlo.constant dense<3.000000e+02>"));
    cr_assert_not_null(strstr(text, "    %899 = stablehlo.add %898, %arg0 : tensor<2xf32>\n"
                                    "    return %899 : tensor<2xf32>\n"));
    kiln_string_free(cx, text);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* ---- literals ---------------------------------------------------------------------------- */

/* Returns the concrete tensors in `user` (a NULL-terminated array): each becomes a
 * constant of the module. */
static kiln_status return_tensors(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *user) {
    (void)cx, (void)in;
    kiln_tensor *const *ts = user;
    for (int i = 0; ts[i]; i++)
        out[i] = ts[i];
    return KILN_OK;
}

/* The text of the constants' lines (between the signature and return). */
static char *constant_lines(kiln_ctx *cx, kiln_tensor **ts) {
    int n = 0;
    while (ts[n])
        n++;
    kiln_module *m = lower(cx, return_tensors, ts, NULL, 0, n);
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    char *start = strstr(text, ") {\n");
    char *end = strstr(text, "    return ");
    cr_assert(start && end && end > start);
    start += 4;
    size_t len = (size_t)(end - start);
    char *lines = malloc(len + 1);
    cr_assert_not_null(lines);
    memcpy(lines, start, len);
    lines[len] = '\0';
    kiln_string_free(cx, text);
    return lines;
}

static kiln_tensor *host(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape, const void *data) {
    int64_t numel = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        numel *= shape.dims[d];
    kiln_tensor *t =
        kiln_tensor_from_host(cx, dtype, shape, data, (size_t)numel * kiln_dtype_size(dtype));
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

static const char *const golden_floats =
    "    %cst = stablehlo.constant dense<1.500000e+00> : tensor<2x2xf32>\n"
    "    %cst_0 = stablehlo.constant dense<[[1.000000e-01, -0.000000e+00], [0x7FC00000, "
    "0xFF800000]]> : tensor<2x2xf32>\n"
    "    %cst_1 = stablehlo.constant dense<[3.1415920000000002, 0x7FF0000000000000, "
    "4.940660e-324, 0xFFF8000000000000]> : tensor<4xf64>\n"
    "    %cst_2 = stablehlo.constant dense<[1.099610e+00, 0x7E00, 6.550400e+04, -5.960460e-08]> "
    ": tensor<4xf16>\n"
    "    %cst_3 = stablehlo.constant dense<[0x7FC0, 1.000000e+00, 0x7F80, 1.000980e-01]> : "
    "tensor<4xbf16>\n"
    "    %cst_4 = stablehlo.constant dense<[0.000000e+00, -0.000000e+00]> : tensor<2xf32>\n"
    "    %cst_5 = stablehlo.constant dense<[3.14159203, 299792.5, 0x4A36FA94, 1.401300e-45, "
    "3.40282347E+38]> : tensor<5xf32>\n"
    "    %cst_6 = stablehlo.constant dense<0x7FC00000> : tensor<3xf32>\n";

Test(print, float_constants) {
    kiln_ctx *cx = test_ctx();
    float nested[4] = {0.1f, -0.0f, NAN, -INFINITY};
    double f64[4] = {3.141592, INFINITY, 5e-324, 0};
    uint64_t neg_nan = UINT64_C(0xFFF8000000000000);
    memcpy(&f64[3], &neg_nan, sizeof neg_nan);
    uint16_t f16[4] = {kiln_f32_to_f16(1.1f), 0x7E00, 0x7BFF, 0x8001};
    uint16_t bf16[4] = {0x7FC0, 0x3F80, 0x7F80, kiln_f32_to_bf16(0.1f)};
    float zeros[2] = {0.0f, -0.0f};
    float natural[5] = {3.141592f, 2.997925e+05f, 2.997925e+06f, 1e-45f, 3.4028235e38f};
    float nans[3] = {NAN, NAN, NAN};
    kiln_tensor *ts[] = {kiln_full(cx, KILN_F32, KILN_SHAPE(2, 2), 1.5),
                         host(cx, KILN_F32, KILN_SHAPE(2, 2), nested),
                         host(cx, KILN_F64, KILN_SHAPE(4), f64),
                         host(cx, KILN_F16, KILN_SHAPE(4), f16),
                         host(cx, KILN_BF16, KILN_SHAPE(4), bf16),
                         host(cx, KILN_F32, KILN_SHAPE(2), zeros),
                         host(cx, KILN_F32, KILN_SHAPE(5), natural),
                         host(cx, KILN_F32, KILN_SHAPE(3), nans),
                         NULL};
    char *lines = constant_lines(cx, ts);
    cr_assert_str_eq(lines, golden_floats);
    free(lines);
    kiln_ctx_release(cx);
}

static const char *const golden_integers =
    "    %c = stablehlo.constant dense<[[true, false, true], [false, false, true]]> : "
    "tensor<2x3xi1>\n"
    "    %c_0 = stablehlo.constant dense<true> : tensor<i1>\n"
    "    %c_1 = stablehlo.constant dense<[18446744073709551615, 0]> : tensor<2xui64>\n"
    "    %c_2 = stablehlo.constant dense<[-9223372036854775808, 9223372036854775807]> : "
    "tensor<2xi64>\n"
    "    %c_3 = stablehlo.constant dense<[-128, 127, 0]> : tensor<3xi8>\n"
    "    %c_4 = stablehlo.constant dense<[255, 0, 7]> : tensor<3xui8>\n"
    "    %c_5 = stablehlo.constant dense<[-32768, 32767]> : tensor<2xi16>\n"
    "    %c_6 = stablehlo.constant dense<[65535, 1]> : tensor<2xui16>\n"
    "    %c_7 = stablehlo.constant dense<[-2147483648, 2147483647]> : tensor<2xi32>\n"
    "    %c_8 = stablehlo.constant dense<[4294967295, 2]> : tensor<2xui32>\n"
    "    %c_9 = stablehlo.constant dense<-7> : tensor<1x1x1xi32>\n"
    "    %cst = stablehlo.constant dense<> : tensor<0x3xf32>\n"
    "    %c_10 = stablehlo.constant dense<0> : tensor<300xi64>\n";

Test(print, integer_bool_empty_and_splat_constants) {
    kiln_ctx *cx = test_ctx();
    uint8_t b[6] = {1, 0, 1, 0, 0, 1}, t = 1;
    uint64_t u64[2] = {UINT64_MAX, 0};
    int64_t i64[2] = {INT64_MIN, INT64_MAX};
    int8_t i8[3] = {-128, 127, 0};
    uint8_t u8[3] = {255, 0, 7};
    int16_t i16[2] = {-32768, 32767};
    uint16_t u16[2] = {65535, 1};
    int32_t i32[2] = {INT32_MIN, INT32_MAX}, one = -7;
    uint32_t u32[2] = {UINT32_MAX, 2};
    kiln_tensor *ts[] = {
        host(cx, KILN_BOOL, KILN_SHAPE(2, 3), b),      host(cx, KILN_BOOL, KILN_SHAPE_SCALAR, &t),
        host(cx, KILN_U64, KILN_SHAPE(2), u64),        host(cx, KILN_I64, KILN_SHAPE(2), i64),
        host(cx, KILN_I8, KILN_SHAPE(3), i8),          host(cx, KILN_U8, KILN_SHAPE(3), u8),
        host(cx, KILN_I16, KILN_SHAPE(2), i16),        host(cx, KILN_U16, KILN_SHAPE(2), u16),
        host(cx, KILN_I32, KILN_SHAPE(2), i32),        host(cx, KILN_U32, KILN_SHAPE(2), u32),
        host(cx, KILN_I32, KILN_SHAPE(1, 1, 1), &one), kiln_zeros(cx, KILN_F32, KILN_SHAPE(0, 3)),
        kiln_zeros(cx, KILN_I64, KILN_SHAPE(300)),     NULL};
    char *lines = constant_lines(cx, ts);
    cr_assert_str_eq(lines, golden_integers);
    free(lines);
    kiln_ctx_release(cx);
}

/* More than 100 elements that differ: a hex blob of the little-endian bytes (i1 stays a
 * list; exactly 100 elements stay a list). The expected text is built independently. */
static size_t put_hex(char *out, uint64_t bits, int bytes) {
    static const char hex[] = "0123456789ABCDEF";
    for (int i = 0; i < bytes; i++) {
        out[2 * i] = hex[(bits >> (8 * i + 4)) & 15];
        out[2 * i + 1] = hex[(bits >> (8 * i)) & 15];
    }
    return (size_t)(2 * bytes);
}

Test(print, large_constants_print_as_hex_blobs) {
    kiln_ctx *cx = test_ctx();
    float f[101], small[100];
    int16_t s[110];
    uint8_t b[128];
    for (int i = 0; i < 101; i++)
        f[i] = (float)i - 50.5f;
    for (int i = 0; i < 100; i++)
        small[i] = (float)i;
    for (int i = 0; i < 110; i++)
        s[i] = (int16_t)(i * 300 - 16000);
    for (int i = 0; i < 128; i++)
        b[i] = (uint8_t)(i % 3 == 0);
    kiln_tensor *ts[] = {
        host(cx, KILN_F32, KILN_SHAPE(101), f), host(cx, KILN_I16, KILN_SHAPE(10, 11), s),
        host(cx, KILN_BOOL, KILN_SHAPE(128), b), host(cx, KILN_F32, KILN_SHAPE(100), small), NULL};
    char *lines = constant_lines(cx, ts);
    char want[8192];
    size_t k = (size_t)snprintf(want, sizeof want, "    %%cst = stablehlo.constant dense<\"0x");
    for (int i = 0; i < 101; i++) {
        uint32_t bits;
        memcpy(&bits, &f[i], sizeof bits);
        k += put_hex(want + k, bits, 4);
    }
    k += (size_t)snprintf(want + k, sizeof want - k,
                          "\"> : tensor<101xf32>\n    %%c = stablehlo.constant dense<\"0x");
    for (int i = 0; i < 110; i++)
        k += put_hex(want + k, (uint16_t)s[i], 2);
    k += (size_t)snprintf(want + k, sizeof want - k,
                          "\"> : tensor<10x11xi16>\n    %%c_0 = stablehlo.constant dense<[");
    for (int i = 0; i < 128; i++)
        k += (size_t)snprintf(want + k, sizeof want - k, "%s%s", i ? ", " : "",
                              b[i] ? "true" : "false");
    k += (size_t)snprintf(want + k, sizeof want - k,
                          "]> : tensor<128xi1>\n    %%cst_1 = stablehlo.constant dense<[");
    for (int i = 0; i < 100; i++)
        k += (size_t)snprintf(want + k, sizeof want - k, "%s%.6e", i ? ", " : "", (double)i);
    snprintf(want + k, sizeof want - k, "]> : tensor<100xf32>\n");
    cr_assert_str_eq(lines, want);
    free(lines);
    kiln_ctx_release(cx);
}

/* ---- floats: the text reads back to the same bits ---------------------------------------- */

/* MLIR's float literal: [-]digits.digits[(e|E)(+|-)digits], or 0x and `width` hex digits. */
static bool float_literal(const char *s, int hex_width) {
    if (s[0] == '0' && s[1] == 'x') {
        int n = 0;
        for (const char *c = s + 2; *c; c++, n++)
            if (!((*c >= '0' && *c <= '9') || (*c >= 'A' && *c <= 'F'))) return false;
        return n == hex_width;
    }
    const char *c = s + (*s == '-');
    if (!(*c >= '0' && *c <= '9')) return false;
    while (*c >= '0' && *c <= '9')
        c++;
    if (*c++ != '.') return false;
    while (*c >= '0' && *c <= '9')
        c++;
    if (*c == 'e' || *c == 'E') {
        c++;
        if (*c != '+' && *c != '-') return false;
        c++;
        if (!(*c >= '0' && *c <= '9')) return false;
        while (*c >= '0' && *c <= '9')
            c++;
    }
    return *c == '\0';
}

static void expect_float(kiln_dtype dtype, uint64_t bits, const char *want) {
    char text[KILN__FLOAT_TEXT];
    size_t n = kiln__format_float(dtype, bits, text);
    cr_assert_eq(n, strlen(text));
    cr_assert_str_eq(text, want, "%s 0x%" PRIX64, kiln_dtype_name(dtype), bits);
}

static uint32_t f32_bits(float v) {
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static uint64_t f64_bits(double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

Test(print, floats_print_as_mlir_does) {
    /* MLIR's own examples: six digits when they read back, else the natural precision
     * (9 digits for f32, 17 for f64), else hex when that form has no point. */
    expect_float(KILN_F16, kiln_f32_to_f16(1.1f), "1.099610e+00");
    expect_float(KILN_F32, f32_bits(3.1415f), "3.141500e+00");
    expect_float(KILN_F32, f32_bits(3.141592f), "3.14159203");
    expect_float(KILN_F32, f32_bits(2.997925e+05f), "299792.5");
    expect_float(KILN_F32, f32_bits(2.997925e+06f), "0x4A36FA94");
    expect_float(KILN_F64, f64_bits(3.1415), "3.141500e+00");
    expect_float(KILN_F64, f64_bits(3.141592), "3.1415920000000002");
    expect_float(KILN_F64, f64_bits(3.141592653589793), "3.1415926535897931");
    expect_float(KILN_F32, f32_bits(42.0f), "4.200000e+01");
    expect_float(KILN_F32, f32_bits(-34e-12f), "-3.400000e-11");
    expect_float(KILN_F32, f32_bits(1.0f), "1.000000e+00");
    expect_float(KILN_F32, f32_bits(0.1f), "1.000000e-01");
    expect_float(KILN_F32, f32_bits(1234567.125f), "1234567.13");
    expect_float(KILN_F32, f32_bits(1.23456789e-10f), "1.23456786E-10");
    expect_float(KILN_F32, f32_bits(0.00123456789f), "0.00123456784");
    /* zeros, subnormals, extremes */
    expect_float(KILN_F32, 0, "0.000000e+00");
    expect_float(KILN_F32, 0x80000000u, "-0.000000e+00");
    expect_float(KILN_F64, UINT64_C(0x8000000000000000), "-0.000000e+00");
    expect_float(KILN_F16, 0x8000, "-0.000000e+00");
    expect_float(KILN_BF16, 0x8000, "-0.000000e+00");
    expect_float(KILN_F32, 1, "1.401300e-45");
    expect_float(KILN_F64, 1, "4.940660e-324");
    expect_float(KILN_F64, f64_bits(1.7976931348623157e308), "1.7976931348623157E+308");
    expect_float(KILN_F16, 0x7BFF, "6.550400e+04");
    expect_float(KILN_F16, 0x0001, "5.960460e-08");
    expect_float(KILN_BF16, 0x3DCD, "1.000980e-01");
    /* NaN and infinities: every hex digit of the width */
    expect_float(KILN_F32, 0x7FC00000u, "0x7FC00000");
    expect_float(KILN_F32, 0xFF800000u, "0xFF800000");
    expect_float(KILN_F32, 0x7F800001u, "0x7F800001");
    expect_float(KILN_F64, UINT64_C(0x7FF8000000000000), "0x7FF8000000000000");
    expect_float(KILN_F64, UINT64_C(0xFFF0000000000001), "0xFFF0000000000001");
    expect_float(KILN_F16, 0x7E00, "0x7E00");
    expect_float(KILN_F16, 0xFC00, "0xFC00");
    expect_float(KILN_BF16, 0x7FC0, "0x7FC0");
    expect_float(KILN_BF16, 0x7F80, "0x7F80");
    /* not a float */
    char text[KILN__FLOAT_TEXT];
    cr_assert_eq(kiln__format_float(KILN_I32, 5, text), 0);
    cr_assert_str_eq(text, "");
}

static bool is_special(kiln_dtype dtype, uint64_t bits) {
    switch (dtype) {
    case KILN_F16: return ((bits >> 10) & 0x1F) == 0x1F;
    case KILN_BF16: return ((bits >> 7) & 0xFF) == 0xFF;
    case KILN_F32: return ((bits >> 23) & 0xFF) == 0xFF;
    default: return ((bits >> 52) & 0x7FF) == 0x7FF;
    }
}

/* The text is a float literal that reads back to the bits (hex for NaN and infinities). */
static void expect_round_trip(kiln_dtype dtype, uint64_t bits) {
    char text[KILN__FLOAT_TEXT];
    kiln__format_float(dtype, bits, text);
    int width = (int)kiln_dtype_size(dtype) * 2;
    cr_assert(float_literal(text, width), "%s 0x%" PRIX64 ": \"%s\" is not a float literal",
              kiln_dtype_name(dtype), bits, text);
    if (text[0] == '0' && text[1] == 'x') {
        cr_assert_eq(strtoull(text + 2, NULL, 16), bits, "%s", text);
        return;
    }
    cr_assert_not(is_special(dtype, bits), "%s: NaN or infinity not in hex", text);
    double d = strtod(text, NULL);
    uint64_t back;
    switch (dtype) {
    case KILN_F16: back = kiln__f64_to_f16(d); break;
    case KILN_BF16: back = kiln__f64_to_bf16(d); break;
    case KILN_F32: back = f32_bits(strtof(text, NULL)); break;
    default: back = f64_bits(d); break;
    }
    cr_assert_eq(back, bits, "%s 0x%" PRIX64 ": \"%s\" reads back as 0x%" PRIX64,
                 kiln_dtype_name(dtype), bits, text, back);
}

Test(print, every_16_bit_float_reads_back) {
    for (uint32_t b = 0; b <= 0xFFFF; b++) {
        expect_round_trip(KILN_F16, b);
        expect_round_trip(KILN_BF16, b);
    }
}

static uint64_t next_random(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

Test(print, random_f32_and_f64_read_back) {
    uint64_t s = UINT64_C(0x9E3779B97F4A7C15);
    for (int i = 0; i < 100000; i++) {
        uint64_t r = next_random(&s);
        expect_round_trip(KILN_F32, (uint32_t)r);
        /* Small magnitudes and subnormals too: clear some exponent bits. */
        expect_round_trip(KILN_F32, (uint32_t)(r >> 32) & 0x807FFFFFu);
    }
    for (int i = 0; i < 20000; i++) {
        uint64_t r = next_random(&s);
        expect_round_trip(KILN_F64, r);
        expect_round_trip(KILN_F64, r & UINT64_C(0x800FFFFFFFFFFFFF));
        /* Values with short decimal forms. */
        expect_round_trip(KILN_F64, f64_bits((double)(int32_t)r / 1024.0));
        expect_round_trip(KILN_F32, f32_bits((float)(int16_t)r / 64.0f));
    }
}

/* ---- calls inside regions, callees inside callees ---------------------------------------- */

typedef struct nested {
    kiln_tensor *y; /* an argument of main */
    kiln_tensor *t; /* a value of the outer callee */
} nested;

static kiln_status inner_callee(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    const nested *n = u;
    r[0] = kiln_add(cx, kiln_add(cx, a[0], n->t), n->y);
    return STATUS(cx);
}

static kiln_status outer_callee(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    nested *n = u;
    n->t = kiln_multiply(cx, a[0], n->y);
    kiln_region fn = {inner_callee, n};
    return kiln_call(cx, &fn, &n->t, 1, 1, r);
}

static kiln_status loop_cond(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_compare(cx, a[0], kiln_scalar(cx, 4, KILN_I32), KILN_CMP_LT, KILN_CMP_DEFAULT);
    return STATUS(cx);
}

static kiln_status loop_body(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    r[0] = kiln_add(cx, a[0], kiln_scalar(cx, 1, KILN_I32));
    kiln_region fn = {outer_callee, u};
    return kiln_call(cx, &fn, &a[1], 1, 1, &r[1]);
}

static kiln_status calls_in_loops(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *user) {
    (void)user;
    nested n = {.y = in[1]};
    kiln_region cond = {loop_cond, NULL}, body = {loop_body, &n};
    kiln_tensor *state[2];
    kiln_status s = kiln_while(cx, (kiln_tensor *[]){kiln_scalar(cx, 0, KILN_I32), in[0]}, 2, &cond,
                               &body, state);
    if (s == KILN_OK) out[0] = state[1];
    return s;
}

const char *const golden_nested_calls =
    "module @kiln {\n"
    "  // calling convention of @main: 2 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<3xf64>, %arg1: tensor<3xf64>) -> tensor<3xf64> {\n"
    "    %c = stablehlo.constant dense<0> : tensor<i32>\n"
    "    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, tensor<3xf64>\n"
    "    cond {\n"
    "      %c_1 = stablehlo.constant dense<4> : tensor<i32>\n"
    "      %1 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> "
    "tensor<i1>\n"
    "      stablehlo.return %1 : tensor<i1>\n"
    "    } do {\n"
    "      %c_1 = stablehlo.constant dense<1> : tensor<i32>\n"
    "      %1 = stablehlo.add %iterArg, %c_1 : tensor<i32>\n"
    "      %2 = func.call @callee_0(%iterArg_0, %arg1) : (tensor<3xf64>, tensor<3xf64>) -> "
    "tensor<3xf64>\n"
    "      stablehlo.return %1, %2 : tensor<i32>, tensor<3xf64>\n"
    "    }\n"
    "    return %0#1 : tensor<3xf64>\n"
    "  }\n"
    "  func.func private @callee_0(%arg0: tensor<3xf64>, %arg1: tensor<3xf64>) -> tensor<3xf64> {\n"
    "    %0 = stablehlo.multiply %arg0, %arg1 : tensor<3xf64>\n"
    "    %1 = func.call @callee_1(%0, %0, %arg1) : (tensor<3xf64>, tensor<3xf64>, tensor<3xf64>) "
    "-> tensor<3xf64>\n"
    "    return %1 : tensor<3xf64>\n"
    "  }\n"
    "  func.func private @callee_1(%arg0: tensor<3xf64>, %arg1: tensor<3xf64>, %arg2: "
    "tensor<3xf64>) -> tensor<3xf64> {\n"
    "    %0 = stablehlo.add %arg0, %arg1 : tensor<3xf64>\n"
    "    %1 = stablehlo.add %0, %arg2 : tensor<3xf64>\n"
    "    return %1 : tensor<3xf64>\n"
    "  }\n"
    "}\n";

Test(print, calls_in_loops_and_in_callees) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[2] = {arg(KILN_F64, KILN_SHAPE(3)), arg(KILN_F64, KILN_SHAPE(3))};
    kiln_module *m = lower(cx, calls_in_loops, NULL, args, 2, 1);
    expect_text(cx, m, golden_nested_calls, "nested_calls");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* ---- printing to a stream, errors, allocation failures ----------------------------------- */

Test(print, module_print_writes_the_same_text) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[3] = {arg(KILN_F32, KILN_SHAPE(2)), arg(KILN_I32, KILN_SHAPE_SCALAR),
                             arg(KILN_F32, KILN_SHAPE(2))};
    kiln_module *m = lower(cx, control, NULL, args, 3, 5);
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cr_assert_eq(kiln_module_print(cx, m, f), KILN_OK, "%s", kiln_ctx_error_message(cx));
    long size = ftell(f);
    cr_assert_eq((size_t)size, strlen(golden_control));
    rewind(f);
    char *buf = malloc((size_t)size + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    buf[size] = '\0';
    cr_assert_str_eq(buf, golden_control);
    free(buf);
    fclose(f);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(print, null_arguments_are_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = arg(KILN_F32, KILN_SHAPE(2));
    int steps = 1;
    kiln_module *m = lower(cx, many_steps, &steps, &a, 1, 1);
    cr_assert_null(kiln_module_to_string(NULL, m));
    cr_assert_eq(kiln_module_print(NULL, m, stdout), KILN_INVALID_ARGUMENT);
    cr_assert_null(kiln_module_to_string(cx, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_module_to_string: module is NULL");
    cr_assert_eq(kiln_module_print(cx, NULL, stdout), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_module_print: module is NULL");
    cr_assert_eq(kiln_module_print(cx, m, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_module_print: stream is NULL");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(print, a_failed_write_is_reported) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = arg(KILN_F32, KILN_SHAPE(2));
    int steps = 1;
    kiln_module *m = lower(cx, many_steps, &steps, &a, 1, 1);
    FILE *f = fopen("/dev/full", "w");
    if (f) {
        setvbuf(f, NULL, _IONBF, 0);
        cr_assert_eq(kiln_module_print(cx, m, f), KILN_UNAVAILABLE);
        expect_error(cx, KILN_UNAVAILABLE, "kiln_module_print: writing failed");
        fclose(f);
    }
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* Every allocation the printer makes may fail: the result is then NULL with
 * RESOURCE_EXHAUSTED, and nothing leaks. A large module makes the name table grow. */
Test(print, allocation_failures_return_null_without_leaks) {
    int steps = 150;
    bool completed = false;
    for (int64_t n = 0; n < 64 && !completed; n++) {
        failing_allocator fa;
        kiln_ctx *cx = failing_allocator_ctx(&fa);
        cr_assert_not_null(cx);
        kiln_arg_spec args[3] = {arg(KILN_F32, KILN_SHAPE(2)), arg(KILN_I32, KILN_SHAPE_SCALAR),
                                 arg(KILN_F32, KILN_SHAPE(2))};
        kiln_module *big = lower(cx, many_steps, &steps, args, 1, 1);
        kiln_module *calls = lower(cx, control, NULL, args, 3, 5);
        fa.fail_after = fa.allocations + n;
        char *a = kiln_module_to_string(cx, big);
        char *b = a ? kiln_module_to_string(cx, calls) : NULL;
        fa.fail_after = -1;
        if (b) {
            completed = true;
            cr_assert_str_eq(b, golden_control);
            expect_ok(cx);
        } else {
            cr_assert_eq(kiln_ctx_status(cx), KILN_RESOURCE_EXHAUSTED, "n=%lld: %s", (long long)n,
                         kiln_ctx_error_message(cx));
        }
        kiln_string_free(cx, a);
        kiln_string_free(cx, b);
        kiln_module_release(big);
        kiln_module_release(calls);
        kiln_ctx_release(cx);
        cr_assert_eq(fa.live_blocks, 0, "n=%lld: %lld blocks leaked", (long long)n,
                     (long long)fa.live_blocks);
    }
    cr_assert(completed, "printing never succeeded");
}

/* ---- coverage: every op of ops.def appears in a golden ----------------------------------- */

typedef struct op_golden {
    kiln_op op;
    const char *const *golden;
} op_golden;

static const op_golden covered[] = {
    {KILN_OP_ABS, &golden_unary},
    {KILN_OP_NEGATE, &golden_unary},
    {KILN_OP_SIGN, &golden_unary},
    {KILN_OP_NOT, &golden_unary},
    {KILN_OP_FLOOR, &golden_unary},
    {KILN_OP_CEIL, &golden_unary},
    {KILN_OP_ROUND_NEAREST_AFZ, &golden_unary},
    {KILN_OP_ROUND_NEAREST_EVEN, &golden_unary},
    {KILN_OP_SQRT, &golden_unary},
    {KILN_OP_RSQRT, &golden_unary},
    {KILN_OP_CBRT, &golden_unary},
    {KILN_OP_EXPONENTIAL, &golden_unary},
    {KILN_OP_EXPONENTIAL_MINUS_ONE, &golden_unary},
    {KILN_OP_LOG, &golden_unary},
    {KILN_OP_LOG_PLUS_ONE, &golden_unary},
    {KILN_OP_LOGISTIC, &golden_unary},
    {KILN_OP_SINE, &golden_unary},
    {KILN_OP_COSINE, &golden_unary},
    {KILN_OP_TAN, &golden_unary},
    {KILN_OP_TANH, &golden_unary},
    {KILN_OP_IS_FINITE, &golden_unary},
    {KILN_OP_POPCNT, &golden_unary},
    {KILN_OP_COUNT_LEADING_ZEROS, &golden_unary},
    {KILN_OP_ADD, &golden_binary},
    {KILN_OP_SUBTRACT, &golden_binary},
    {KILN_OP_MULTIPLY, &golden_binary},
    {KILN_OP_DIVIDE, &golden_binary},
    {KILN_OP_REMAINDER, &golden_binary},
    {KILN_OP_POWER, &golden_binary},
    {KILN_OP_MAXIMUM, &golden_binary},
    {KILN_OP_MINIMUM, &golden_binary},
    {KILN_OP_ATAN2, &golden_binary},
    {KILN_OP_REAL, &golden_parts},
    {KILN_OP_IMAG, &golden_parts},
    {KILN_OP_COMPLEX, &golden_parts},
    {KILN_OP_FFT, &golden_fft},
    {KILN_OP_TRIANGULAR_SOLVE, &golden_triangular},
    {KILN_OP_CHOLESKY, &golden_triangular},
    {KILN_OP_AND, &golden_binary},
    {KILN_OP_OR, &golden_binary},
    {KILN_OP_XOR, &golden_binary},
    {KILN_OP_SHIFT_LEFT, &golden_binary},
    {KILN_OP_SHIFT_RIGHT_ARITHMETIC, &golden_binary},
    {KILN_OP_SHIFT_RIGHT_LOGICAL, &golden_binary},
    {KILN_OP_COMPARE, &golden_compare_select},
    {KILN_OP_SELECT, &golden_compare_select},
    {KILN_OP_CLAMP, &golden_compare_select},
    {KILN_OP_CONVERT, &golden_compare_select},
    {KILN_OP_BITCAST_CONVERT, &golden_compare_select},
    {KILN_OP_REDUCE_PRECISION, &golden_reduce_precision},
    {KILN_OP_MAP, &golden_map},
    {KILN_OP_CONSTANT, &golden_emlx},
    {KILN_OP_IOTA, &golden_handmade},
    {KILN_OP_RNG_BIT_GENERATOR, &golden_rng},
    {KILN_OP_BROADCAST_IN_DIM, &golden_movement},
    {KILN_OP_RESHAPE, &golden_movement},
    {KILN_OP_TRANSPOSE, &golden_movement},
    {KILN_OP_REVERSE, &golden_movement},
    {KILN_OP_SLICE, &golden_movement},
    {KILN_OP_DYNAMIC_SLICE, &golden_movement},
    {KILN_OP_DYNAMIC_UPDATE_SLICE, &golden_movement},
    {KILN_OP_PAD, &golden_movement},
    {KILN_OP_CONCATENATE, &golden_movement},
    {KILN_OP_GATHER, &golden_indexing},
    {KILN_OP_SCATTER, &golden_indexing},
    {KILN_OP_SORT, &golden_indexing},
    {KILN_OP_REPLICA_ID, &golden_collective},
    {KILN_OP_PARTITION_ID, &golden_collective},
    {KILN_OP_ALL_REDUCE, &golden_collective},
    {KILN_OP_ALL_GATHER, &golden_collective},
    {KILN_OP_REDUCE_SCATTER, &golden_collective},
    {KILN_OP_ALL_TO_ALL, &golden_collective},
    {KILN_OP_COLLECTIVE_PERMUTE, &golden_collective},
    {KILN_OP_COLLECTIVE_BROADCAST, &golden_collective},
    {KILN_OP_COLLECTIVE_REDUCE, &golden_collective_text},
    {KILN_OP_RUN_PARALLEL, &golden_run_parallel},
    {KILN_OP_CUSTOM_CALL, &golden_custom_call},
    {KILN_OP_DYNAMIC_IOTA, &golden_dynamic},
    {KILN_OP_DYNAMIC_BROADCAST_IN_DIM, &golden_dynamic},
    {KILN_OP_DYNAMIC_RESHAPE, &golden_dynamic},
    {KILN_OP_DYNAMIC_PAD, &golden_dynamic},
    {KILN_OP_DYNAMIC_GATHER, &golden_dynamic},
    {KILN_OP_DYNAMIC_CONV, &golden_dynamic},
    {KILN_OP_GET_DIMENSION_SIZE, &golden_dynamic},
    {KILN_OP_AFTER_ALL, &golden_token},
    {KILN_OP_CREATE_TOKEN, &golden_token},
    {KILN_OP_TUPLE, &golden_tuple},
    {KILN_OP_GET_TUPLE_ELEMENT, &golden_tuple},
    {KILN_OP_REDUCE, &golden_reductions},
    {KILN_OP_REDUCE_WINDOW, &golden_reductions},
    {KILN_OP_SELECT_AND_SCATTER, &golden_reductions},
    {KILN_OP_DOT_GENERAL, &golden_contractions},
    {KILN_OP_CONVOLUTION, &golden_contractions},
    {KILN_OP_WHILE, &golden_control},
    {KILN_OP_IF, &golden_control},
    {KILN_OP_CASE, &golden_control},
    {KILN_OP_CALL, &golden_control},
    {KILN_OP_OPTIMIZATION_BARRIER, &golden_control},
};

/* Does `text` name the op: "stablehlo.<name>" followed by a space, quote or parenthesis
 * (so stablehlo.reduce is not found in stablehlo.reduce_window)? A call is func.call. */
static bool mentions(const char *text, kiln_op op) {
    char needle[64];
    if (op == KILN_OP_CALL)
        snprintf(needle, sizeof needle, "func.call @");
    else if (strchr(kiln__op_get_info(op)->name, '.')) /* another dialect: "interpreter.x" */
        snprintf(needle, sizeof needle, "\"%s", kiln__op_get_info(op)->name);
    else
        snprintf(needle, sizeof needle, "stablehlo.%s", kiln__op_get_info(op)->name);
    for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle)) {
        char next = at[strlen(needle)];
        if (op == KILN_OP_CALL || next == ' ' || next == '"' || next == '(') return true;
    }
    return false;
}

Test(print, every_op_of_the_table_has_a_golden) {
    bool seen[KILN_OP_COUNT] = {false};
    for (size_t i = 0; i < sizeof covered / sizeof covered[0]; i++) {
        const char *golden = *covered[i].golden;
        cr_assert_not_null(golden);
        cr_assert(mentions(golden, covered[i].op), "the golden listed for %s does not print it",
                  kiln__op_get_info(covered[i].op)->name);
        seen[covered[i].op] = true;
    }
    int missing = 0;
    for (int op = 0; op < KILN_OP_COUNT; op++) {
        if (!seen[op]) {
            cr_log_error("op '%s' has no printer golden", kiln__op_get_info((kiln_op)op)->name);
            missing++;
        }
    }
    cr_assert_eq(missing, 0, "%d ops of ops.def have no printer golden", missing);
}
