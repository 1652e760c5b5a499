/* SPDX-License-Identifier: Apache-2.0 */
/* Fusion decisions (src/passes/fusion.c) as golden text: which ops join which kernel,
 * which views are read in place, the kernels' inputs, instructions, outputs and
 * reductions. Each function is lowered and simplified as kiln_compile does first. */
#include <stdio.h>
#include <string.h>

#include "backend/region.h"
#include "base/arena.h"
#include "ir/ir.h"
#include "passes/passes.h"
#include "test_util.h"

static void *arena_alloc(void *user, size_t size, size_t align) {
    return kiln__arena_alloc(user, size, align);
}

static kiln__kreduce reduce_kind(const kiln__ir_op *op) {
    if (op->n_regions != 1 || !op->attrs->region[0]) return KILN__KREDUCE_NONE;
    switch (kiln__region_kind_of(op->attrs->region[0])) {
    case KILN_REGION_ADD: return KILN__KREDUCE_ADD;
    case KILN_REGION_MAXIMUM: return KILN__KREDUCE_MAX;
    default: return KILN__KREDUCE_NONE;
    }
}

/* The printed plan of m's body (simplified first); `max_instrs` 0 for the default, `fold`
 * the constant folding size (0: none). Releases m. */
static bool conv_epilogues; /* the options' conv_epilogue in the next check */

static void check_module(kiln_ctx *cx, kiln_module *m, int32_t max_instrs, size_t fold,
                         const char *golden, const char *tag) {
    kiln__passes_simplify(m, 0);
    kiln__arena arena;
    kiln__arena_init(&arena, cx, 4096);
    kiln__fusion_options o = {.max_instrs = max_instrs,
                              .fold_max_bytes = fold,
                              .reduce_kind = reduce_kind,
                              .conv_epilogue = conv_epilogues,
                              .alloc = arena_alloc,
                              .alloc_user = &arena};
    kiln__fusion f;
    cr_assert_eq(kiln__fusion_plan(cx, m->funcs[0]->body, &o, &f), KILN_OK);
    kiln__strbuf sb;
    kiln__strbuf_init(&sb, cx);
    kiln__fusion_print(&sb, m->funcs[0]->body, &f);
    char *text = kiln__strbuf_take(&sb);
    cr_assert_not_null(text);
    if (strcmp(text, golden) != 0) {
        cr_log_error("%s: got\n%s\nwant\n%s", tag, text, golden);
        kiln__strbuf_free_string(cx, text);
        cr_assert_fail("%s: the fusion plan differs from its golden", tag);
    }
    kiln__strbuf_free_string(cx, text);
    kiln__arena_destroy(&arena);
    kiln_module_release(m);
}

static void check(kiln_region_fn fn, const kiln_arg_spec *args, int32_t n_args, int32_t n_results,
                  int32_t max_instrs, size_t fold, const char *golden, const char *tag) {
    kiln_ctx *cx = test_ctx();
    kiln_region r = {fn, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &r, args, n_args, n_results, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    check_module(cx, m, max_instrs, fold, golden, tag);
    kiln_ctx_release(cx);
}

/* The same for a module in StableHLO text (for ops that tracing folds away: iota, math
 * on constants). */
static void check_text(const char *text, int32_t max_instrs, size_t fold, const char *golden,
                       const char *tag) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    check_module(cx, m, max_instrs, fold, golden, tag);
    kiln_ctx_release(cx);
}

#define FN(name) \
    static kiln_status name(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user)

#define two_f32_4x3                                                          \
    ((const kiln_arg_spec[]){{.dtype = KILN_F32, .shape = KILN_SHAPE(4, 3)}, \
                             {.dtype = KILN_F32, .shape = KILN_SHAPE(4, 3)}})

/* ---- elementwise chains ------------------------------------------------------------------- */

FN(emlx3) {
    (void)user;
    kiln_tensor *acc = in[0];
    for (int i = 2; i <= 4; i++)
        acc = kiln_add(cx, kiln_multiply(cx, kiln_scalar(cx, i, KILN_F32), acc), in[1]);
    out[0] = acc;
    return kiln_ctx_status(cx);
}

Test(fusion, a_chain_with_scalar_constants_is_one_kernel) {
    check(emlx3, two_f32_4x3, 2, 1, 0, 0,
          "%2 = constant: constant\n"
          "%3 = broadcast_in_dim: view\n"
          "%4 = multiply: kernel #0\n"
          "%5 = add: kernel #0\n"
          "%6 = constant: constant\n"
          "%7 = broadcast_in_dim: view\n"
          "%8 = multiply: kernel #0\n"
          "%9 = add: kernel #0\n"
          "%10 = constant: constant\n"
          "%11 = broadcast_in_dim: view\n"
          "%12 = multiply: kernel #0\n"
          "%13 = add: kernel #0\n"
          "kernel #0 f32[4,3] (6 ops: multiply add multiply add multiply add)\n"
          "  in0 = scalar %2 f32[] = 2.000000e+00\n"
          "  in1 = contiguous %0 f32[4,3]\n"
          "  in2 = contiguous %1 f32[4,3]\n"
          "  in3 = scalar %6 f32[] = 3.000000e+00\n"
          "  in4 = scalar %10 f32[] = 4.000000e+00\n"
          "  r5 = multiply in0, in1 : f32\n"
          "  r6 = add r5, in2 : f32\n"
          "  r7 = multiply in3, r6 : f32\n"
          "  r8 = add r7, in2 : f32\n"
          "  r9 = multiply in4, r8 : f32\n"
          "  r10 = add r9, in2 : f32\n"
          "  out r10 -> %13\n",
          "emlx3");
}

/* exp(-x*x) * sin(x) + 0.5 * x: sin(x) and 0.5 * x have no producer in the kernel and
 * join it as siblings, so x is read once. */
FN(expsin) {
    (void)user;
    kiln_tensor *x = in[0];
    kiln_tensor *g = kiln_exponential(cx, kiln_negate(cx, kiln_multiply(cx, x, x)));
    out[0] = kiln_add(cx, kiln_multiply(cx, g, kiln_sine(cx, x)),
                      kiln_multiply(cx, kiln_scalar_like(cx, x, 0.5), x));
    return kiln_ctx_status(cx);
}

Test(fusion, siblings_join_the_open_kernel) {
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(8)};
    check(expsin, &a, 1, 1, 0, 0,
          "%1 = multiply: kernel #0\n"
          "%2 = negate: kernel #0\n"
          "%3 = exponential: kernel #0\n"
          "%4 = constant: constant\n"
          "%5 = broadcast_in_dim: view\n"
          "%6 = multiply: kernel #0\n"
          "%7 = sine: kernel #0\n"
          "%8 = multiply: kernel #0\n"
          "%9 = add: kernel #0\n"
          "kernel #0 f32[8] (7 ops: multiply negate exponential multiply sine multiply add)\n"
          "  in0 = contiguous %0 f32[8]\n"
          "  in1 = scalar %4 f32[] = 5.000000e-01\n"
          "  r2 = multiply in0, in0 : f32\n"
          "  r3 = negate r2 : f32\n"
          "  r4 = exponential r3 : f32\n"
          "  r5 = multiply in1, in0 : f32\n"
          "  r6 = sine in0 : f32\n"
          "  r7 = multiply r4, r6 : f32\n"
          "  r8 = add r7, r5 : f32\n"
          "  out r8 -> %9\n",
          "expsin");
}

/* ---- boundaries --------------------------------------------------------------------------- */

/* A dot between two chains: the first kernel is closed by the dot (which reads its value),
 * so the add after it starts a second kernel; the first value is also a result, so it
 * leaves the first kernel as an output. */
FN(around_dot) {
    (void)user;
    kiln_tensor *a = kiln_tanh(cx, kiln_add(cx, in[0], in[1]));
    kiln_tensor *d = kiln_matmul(cx, a, kiln_transpose(cx, in[1], KILN_DIMS(1, 0)));
    out[0] = kiln_subtract(cx, kiln_exponential(cx, d), d);
    out[1] = a;
    return kiln_ctx_status(cx);
}

Test(fusion, a_dot_closes_the_kernel_it_reads) {
    check(around_dot, two_f32_4x3, 2, 2, 0, 0,
          "%2 = add: kernel #0\n"
          "%3 = tanh: kernel #0\n"
          "%4 = transpose: op\n"
          "%5 = dot_general: op\n"
          "%6 = exponential: kernel #1\n"
          "%7 = subtract: kernel #1\n"
          "kernel #0 f32[4,3] (2 ops: add tanh)\n"
          "  in0 = contiguous %0 f32[4,3]\n"
          "  in1 = contiguous %1 f32[4,3]\n"
          "  r2 = add in0, in1 : f32\n"
          "  r3 = tanh r2 : f32\n"
          "  out r3 -> %3\n"
          "kernel #1 f32[4,4] (2 ops: exponential subtract)\n"
          "  in0 = contiguous %5 f32[4,4]\n"
          "  r1 = exponential in0 : f32\n"
          "  r2 = subtract r1, in0 : f32\n"
          "  out r2 -> %7\n",
          "around_dot");
}

/* A transpose read by a kernel and by a dot: the dot needs it made (an op); the kernel
 * still reads the argument through the strided view. A reduce of the kernel's value ends
 * the kernel. */
FN(view_and_reduce) {
    (void)user;
    kiln_tensor *t = kiln_transpose(cx, in[0], KILN_DIMS(1, 0));
    kiln_tensor *e = kiln_exponential(cx, kiln_multiply(cx, t, t));
    out[0] = kiln_sum(cx, e, KILN_DIMS(1), false);
    out[1] = kiln_matmul(cx, t, in[0]);
    return kiln_ctx_status(cx);
}

Test(fusion, a_reduce_ends_its_producer_kernel_and_views_are_shared) {
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(4, 3)};
    check(view_and_reduce, &a, 1, 2, 0, 0,
          "%1 = transpose: op\n"
          "%2 = multiply: kernel #0\n"
          "%3 = exponential: kernel #0\n"
          "%4 = constant: constant\n"
          "%5 = reduce: kernel #0\n"
          "%6 = dot_general: op\n"
          "kernel #0 f32[3,4] (3 ops: multiply exponential reduce)\n"
          "  in0 = strided %0 f32[4,3] offset 0 strides [1,3]\n"
          "  r1 = multiply in0, in0 : f32\n"
          "  r2 = exponential r1 : f32\n"
          "  reduce add r2 dims [1] init %4 -> %5\n",
          "view_and_reduce");
}

/* Broadcasts, slices, reverses and iotas are access patterns. */
Test(fusion, broadcast_slice_reverse_and_iota_are_access_patterns) {
    check_text(
        "func.func @main(%arg0: tensor<6x3xf32>, %arg1: tensor<3xf32>) -> tensor<4x3xf32> {\n"
        "  %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<3xf32>) -> "
        "tensor<4x3xf32>\n"
        "  %1 = stablehlo.iota dim = 0 : tensor<4x3xf32>\n"
        "  %2 = stablehlo.slice %arg0 [1:5, 0:3] : (tensor<6x3xf32>) -> tensor<4x3xf32>\n"
        "  %3 = stablehlo.reverse %2, dims = [0] : tensor<4x3xf32>\n"
        "  %4 = stablehlo.multiply %0, %1 : tensor<4x3xf32>\n"
        "  %5 = stablehlo.add %4, %3 : tensor<4x3xf32>\n"
        "  return %5 : tensor<4x3xf32>\n"
        "}\n",
        0, 0,
        "%2 = broadcast_in_dim: view\n"
        "%3 = iota: view\n"
        "%4 = slice: view\n"
        "%5 = reverse: view\n"
        "%6 = multiply: kernel #0\n"
        "%7 = add: kernel #0\n"
        "kernel #0 f32[4,3] (2 ops: multiply add)\n"
        "  in0 = broadcast %1 f32[3] offset 0 strides [0,1]\n"
        "  in1 = iota f32 offset 0 strides [1,0]\n"
        "  in2 = strided %0 f32[6,3] offset 12 strides [-3,1]\n"
        "  r3 = multiply in0, in1 : f32\n"
        "  r4 = add r3, in2 : f32\n"
        "  out r4 -> %7\n",
        "patterns");
}

/* ---- limits ------------------------------------------------------------------------------- */

FN(long_chain) {
    (void)user;
    kiln_tensor *x = in[0];
    for (int i = 0; i < 5; i++)
        x = kiln_sine(cx, x);
    out[0] = x;
    return kiln_ctx_status(cx);
}

Test(fusion, kernels_respect_the_size_limit) {
    kiln_arg_spec a = {.dtype = KILN_F64, .shape = KILN_SHAPE(5)};
    check(long_chain, &a, 1, 1, 2, 0,
          "%1 = sine: kernel #0\n"
          "%2 = sine: kernel #0\n"
          "%3 = sine: kernel #1\n"
          "%4 = sine: kernel #1\n"
          "%5 = sine: kernel #2\n"
          "kernel #0 f64[5] (2 ops: sine sine)\n"
          "  in0 = contiguous %0 f64[5]\n"
          "  r1 = sine in0 : f64\n"
          "  r2 = sine r1 : f64\n"
          "  out r2 -> %2\n"
          "kernel #1 f64[5] (2 ops: sine sine)\n"
          "  in0 = contiguous %2 f64[5]\n"
          "  r1 = sine in0 : f64\n"
          "  r2 = sine r1 : f64\n"
          "  out r2 -> %4\n"
          "kernel #2 f64[5] (1 ops: sine)\n"
          "  in0 = contiguous %4 f64[5]\n"
          "  r1 = sine in0 : f64\n"
          "  out r1 -> %5\n",
          "long_chain");
}

/* Small ops on constants only are left to constant folding. */
Test(fusion, constant_subexpressions_are_left_to_folding) {
    check_text("func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
               "  %0 = stablehlo.constant dense<1.5> : tensor<2xf32>\n"
               "  %1 = stablehlo.exponential %0 : tensor<2xf32>\n"
               "  %2 = stablehlo.add %arg0, %1 : tensor<2xf32>\n"
               "  return %2 : tensor<2xf32>\n"
               "}\n",
               0, 4096,
               "%1 = constant: constant\n"
               "%2 = exponential: op\n"
               "%3 = add: kernel #0\n"
               "kernel #0 f32[2] (1 ops: add)\n"
               "  in0 = contiguous %0 f32[2]\n"
               "  in1 = contiguous %2 f32[2]\n"
               "  r2 = add in0, in1 : f32\n"
               "  out r2 -> %3\n",
               "constant_math");
}

static void *failing_alloc(void *user, size_t size, size_t align) {
    (void)size, (void)align;
    kiln_ctx_set_error(user, KILN_RESOURCE_EXHAUSTED, "test: no memory");
    return NULL;
}

Test(fusion, an_allocation_failure_is_reported) {
    kiln_ctx *cx = test_ctx();
    kiln_region r = {expsin, NULL};
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(8)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &r, &a, 1, 1, NULL, &m), KILN_OK);
    kiln__fusion_options o = {.alloc = failing_alloc, .alloc_user = cx};
    kiln__fusion f;
    cr_assert_eq(kiln__fusion_plan(cx, m->funcs[0]->body, &o, &f), KILN_RESOURCE_EXHAUSTED);
    expect_error(cx, KILN_RESOURCE_EXHAUSTED, "no memory");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* ---- convolution epilogues ---------------------------------------------------------------- */

#define CONV_ATTRS                                                                               \
    "dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = "   \
    "[[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, " \
    "feature_group_count = 1 : i64}"
#define CONV_F32(res, lhs, rhs)                                       \
    "  " res " = stablehlo.convolution(" lhs ", " rhs ") " CONV_ATTRS \
    " : (tensor<2x3x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x5x5xf32>\n"
#define ARGS_F32 "%arg0: tensor<2x3x5x5xf32>, %arg1: tensor<4x3x3x3xf32>, %arg2: tensor<4xf32>"

static void check_conv(const char *body, const char *result_type, const char *golden,
                       const char *tag) {
    char text[4096];
    snprintf(text, sizeof text, "func.func @main(%s) -> %s {\n%s}\n", ARGS_F32, result_type, body);
    conv_epilogues = true;
    check_text(text, 0, 0, golden, tag);
    conv_epilogues = false;
}

/* nn's conv2d + relu: the bias (reshaped to [C,1,1], broadcast) and the maximum with a zero
 * splat run inside the convolution call; what reads the result is a kernel of its own. */
Test(fusion, a_convolution_takes_its_bias_and_relu) {
    check_conv(
        CONV_F32("%0", "%arg0",
                 "%arg1") "  %1 = stablehlo.reshape %arg2 : (tensor<4xf32>) -> tensor<4x1x1xf32>\n"
                          "  %2 = stablehlo.broadcast_in_dim %1, dims = [1, 2, 3] : "
                          "(tensor<4x1x1xf32>) -> "
                          "tensor<2x4x5x5xf32>\n"
                          "  %3 = stablehlo.add %0, %2 : tensor<2x4x5x5xf32>\n"
                          "  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
                          "  %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> "
                          "tensor<2x4x5x5xf32>\n"
                          "  %5 = stablehlo.maximum %4, %3 : tensor<2x4x5x5xf32>\n"
                          "  %6 = stablehlo.multiply %5, %5 : tensor<2x4x5x5xf32>\n"
                          "  return %6 : tensor<2x4x5x5xf32>\n",
        "tensor<2x4x5x5xf32>",
        "%3 = convolution: op with epilogue bias relu\n"
        "%4 = reshape: view\n"
        "%5 = broadcast_in_dim: view\n"
        "%6 = add: epilogue of convolution %3\n"
        "%7 = constant: constant\n"
        "%8 = broadcast_in_dim: view\n"
        "%9 = maximum: epilogue of convolution %3\n"
        "%10 = multiply: kernel #0\n"
        "kernel #0 f32[2,4,5,5] (1 ops: multiply)\n"
        "  in0 = contiguous %9 f32[2,4,5,5]\n"
        "  r1 = multiply in0, in0 : f32\n"
        "  out r1 -> %10\n",
        "bias_relu");
}

/* A bias made by a kernel after the convolution: that kernel is closed at the add, so it
 * runs before the call; the bias enters with the feature dimension in place (dims = [1]). */
Test(fusion, a_bias_computed_after_the_convolution_is_made_first) {
    check_conv(
        CONV_F32("%0", "%arg0",
                 "%arg1") "  %1 = stablehlo.multiply %arg2, %arg2 : tensor<4xf32>\n"
                          "  %2 = stablehlo.broadcast_in_dim %1, dims = [1] : (tensor<4xf32>) -> "
                          "tensor<2x4x5x5xf32>\n"
                          "  %3 = stablehlo.add %2, %0 : tensor<2x4x5x5xf32>\n"
                          "  %4 = stablehlo.negate %1 : tensor<4xf32>\n"
                          "  return %3, %4 : tensor<2x4x5x5xf32>, tensor<4xf32>\n",
        "(tensor<2x4x5x5xf32>, tensor<4xf32>)",
        "%3 = convolution: op with epilogue bias\n"
        "%4 = multiply: kernel #0\n"
        "%5 = broadcast_in_dim: view\n"
        "%6 = add: epilogue of convolution %3\n"
        "%7 = negate: kernel #1\n"
        "kernel #0 f32[4] (1 ops: multiply)\n"
        "  in0 = contiguous %2 f32[4]\n"
        "  r1 = multiply in0, in0 : f32\n"
        "  out r1 -> %4\n"
        "kernel #1 f32[4] (1 ops: negate)\n"
        "  in0 = contiguous %4 f32[4]\n"
        "  r1 = negate in0 : f32\n"
        "  out r1 -> %7\n",
        "bias_after");
}

/* What does not fit the library call stays a kernel: a convolution result used twice, a
 * "bias" varying along a spatial dimension, a maximum with -0 (not StableHLO's relu at -0)
 * or with 1. */
Test(fusion, what_is_not_a_bias_or_relu_stays_a_kernel) {
    check_conv(
        CONV_F32(
            "%0", "%arg0",
            "%arg1") "  %1 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<4xf32>) -> "
                     "tensor<2x4x5x5xf32>\n"
                     "  %2 = stablehlo.add %0, %1 : tensor<2x4x5x5xf32>\n"
                     "  %3 = stablehlo.add %2, %0 : tensor<2x4x5x5xf32>\n"
                     "  return %3 : tensor<2x4x5x5xf32>\n",
        "tensor<2x4x5x5xf32>",
        "%3 = convolution: op\n"
        "%4 = broadcast_in_dim: view\n"
        "%5 = add: kernel #0\n"
        "%6 = add: kernel #0\n"
        "kernel #0 f32[2,4,5,5] (2 ops: add add)\n"
        "  in0 = contiguous %3 f32[2,4,5,5]\n"
        "  in1 = broadcast %2 f32[4] offset 0 strides [0,1,0,0]\n"
        "  r2 = add in0, in1 : f32\n"
        "  r3 = add r2, in0 : f32\n"
        "  out r3 -> %6\n",
        "used_twice");
    check_conv(
        CONV_F32("%0", "%arg0",
                 "%arg1") "  %cst = stablehlo.constant dense<-0.000000e+00> : tensor<f32>\n"
                          "  %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> "
                          "tensor<2x4x5x5xf32>\n"
                          "  %2 = stablehlo.maximum %0, %1 : tensor<2x4x5x5xf32>\n"
                          "  return %2 : tensor<2x4x5x5xf32>\n",
        "tensor<2x4x5x5xf32>",
        "%3 = convolution: op\n"
        "%4 = constant: constant\n"
        "%5 = broadcast_in_dim: view\n"
        "%6 = maximum: kernel #0\n"
        "kernel #0 f32[2,4,5,5] (1 ops: maximum)\n"
        "  in0 = contiguous %3 f32[2,4,5,5]\n"
        "  in1 = scalar %4 f32[] = -0.000000e+00\n"
        "  r2 = maximum in0, in1 : f32\n"
        "  out r2 -> %6\n",
        "minus_zero");
    check_conv(
        CONV_F32(
            "%0", "%arg0",
            "%arg1") "  %1 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<4xf32>) -> "
                     "tensor<2x4x5x5xf32>\n"
                     "  %2 = stablehlo.add %0, %1 : tensor<2x4x5x5xf32>\n"
                     "  %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>\n"
                     "  %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> "
                     "tensor<2x4x5x5xf32>\n"
                     "  %4 = stablehlo.maximum %2, %3 : tensor<2x4x5x5xf32>\n"
                     "  return %4 : tensor<2x4x5x5xf32>\n",
        "tensor<2x4x5x5xf32>",
        "%3 = convolution: op with epilogue bias\n"
        "%4 = broadcast_in_dim: view\n"
        "%5 = add: epilogue of convolution %3\n"
        "%6 = constant: constant\n"
        "%7 = broadcast_in_dim: view\n"
        "%8 = maximum: kernel #0\n"
        "kernel #0 f32[2,4,5,5] (1 ops: maximum)\n"
        "  in0 = contiguous %5 f32[2,4,5,5]\n"
        "  in1 = scalar %6 f32[] = 1.000000e+00\n"
        "  r2 = maximum in0, in1 : f32\n"
        "  out r2 -> %8\n",
        "max_one");
}

/* A "bias" that varies along a spatial dimension is an ordinary broadcast operand. */
Test(fusion, a_vector_along_another_dimension_is_not_a_bias) {
    conv_epilogues = true;
    check_text(
        "func.func @main(%arg0: tensor<2x3x5x5xf32>, %arg1: tensor<4x3x3x3xf32>, %arg2: "
        "tensor<5xf32>) -> tensor<2x4x5x5xf32> {\n" CONV_F32(
            "%0", "%arg0",
            "%arg1") "  %1 = stablehlo.broadcast_in_dim %arg2, dims = [3] : (tensor<5xf32>) -> "
                     "tensor<2x4x5x5xf32>\n"
                     "  %2 = stablehlo.add %0, %1 : tensor<2x4x5x5xf32>\n"
                     "  return %2 : tensor<2x4x5x5xf32>\n}\n",
        0, 0,
        "%3 = convolution: op\n"
        "%4 = broadcast_in_dim: view\n"
        "%5 = add: kernel #0\n"
        "kernel #0 f32[2,4,5,5] (1 ops: add)\n"
        "  in0 = contiguous %3 f32[2,4,5,5]\n"
        "  in1 = broadcast %2 f32[5] offset 0 strides [0,0,0,1]\n"
        "  r2 = add in0, in1 : f32\n"
        "  out r2 -> %5\n",
        "spatial");
    conv_epilogues = false;
}
