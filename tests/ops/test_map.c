/* SPDX-License-Identifier: Apache-2.0 */
/* map: a computation of scalars applied at every position, eagerly, compiled, under
 * vmap, read from text, and its errors. */
#include <string.h>

#include "test_util.h"

/* a * b + 1, as i64 */
static kiln_status fma1(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_add(cx, kiln_multiply(cx, in[0], in[1]), kiln_scalar(cx, 1, KILN_I64));
    return kiln_ctx_status(cx);
}

/* a < b, another dtype than the inputs' */
static kiln_status less(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_compare(cx, in[0], in[1], KILN_CMP_LT, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}

static kiln_tensor *i64s(kiln_ctx *cx, const int64_t *v, int64_t rows, int64_t cols) {
    return kiln_tensor_from_host(cx, KILN_I64, KILN_SHAPE(rows, cols), v,
                                 (size_t)(rows * cols) * sizeof *v);
}

Test(map, applies_its_computation_at_every_position) {
    kiln_ctx *cx = test_ctx();
    const int64_t a[6] = {0, 1, 2, 3, 4, 5}, b[6] = {4, 5, 6, 7, -1, 0};
    kiln_tensor *in[2] = {i64s(cx, a, 2, 3), i64s(cx, b, 2, 3)};
    kiln_tensor *r = kiln_map(cx, &(kiln_region){fma1, NULL}, in, 2, KILN_I64);
    kiln_tensor *c = kiln_map(cx, &(kiln_region){less, NULL}, in, 2, KILN_BOOL);
    expect_ok(cx);
    const int64_t *got = kiln_tensor_data(r);
    const uint8_t *lt = kiln_tensor_data(c);
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(got[i], a[i] * b[i] + 1, "element %d: %lld", i, (long long)got[i]);
        cr_assert_eq(lt[i], a[i] < b[i], "element %d", i);
    }
    cr_assert_eq(kiln_tensor_rank(r), 2);
    kiln_ctx_release(cx);
}

static kiln_status program(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_map(cx, &(kiln_region){fma1, NULL}, in, 2, KILN_I64);
    out[1] = kiln_map(cx, &(kiln_region){less, NULL}, in, 2, KILN_BOOL);
    return kiln_ctx_status(cx);
}

Test(map, compiled_equals_eager) {
    kiln_ctx *cx = test_ctx();
    int64_t a[12], b[12];
    for (int i = 0; i < 12; i++)
        a[i] = i * 7 - 30, b[i] = 11 - i * 3;
    kiln_tensor *in[2] = {i64s(cx, a, 3, 4), i64s(cx, b, 3, 4)}, *eager[2];
    cr_assert_eq(program(cx, in, eager, NULL), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_arg_spec spec[2] = {{.dtype = KILN_I64, .shape = KILN_SHAPE(3, 4)},
                             {.dtype = KILN_I64, .shape = KILN_SHAPE(3, 4)}};
    test_expect_compiled_equals_eager(cx, (kiln_region){program, NULL}, spec, in, 2, eager, 2,
                                      "map");
    kiln_tensor_release(eager[0]);
    kiln_tensor_release(eager[1]);
    kiln_ctx_release(cx);
}

static kiln_status fma1_map(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_map(cx, &(kiln_region){fma1, NULL}, in, 2, KILN_I64);
    return kiln_ctx_status(cx);
}

/* vmap over the first input only: the second is broadcast, the map gets a dimension. */
Test(map, vmap_maps_one_more_dimension) {
    kiln_ctx *cx = test_ctx();
    const int64_t a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30};
    kiln_tensor *args[2] = {i64s(cx, a, 2, 3),
                            kiln_tensor_from_host(cx, KILN_I64, KILN_SHAPE(3), b, sizeof b)};
    int32_t axes[2] = {0, KILN_VMAP_NONE};
    kiln_vmap_options o = kiln_vmap_options_default();
    o.in_axes = axes;
    kiln_tensor *out[1] = {NULL};
    kiln_region f = {fma1_map, NULL};
    cr_assert_eq(kiln_vmap(cx, &f, 2, args, 1, &o, out), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    const int64_t *got = kiln_tensor_data(out[0]);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(got[i], a[i] * b[i % 3] + 1, "element %d: %lld", i, (long long)got[i]);
    kiln_ctx_release(cx);
}

Test(map, reads_and_prints_the_generic_form) {
    kiln_ctx *cx = test_ctx();
    const char *text =
        "func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %0 = \"stablehlo.map\"(%a, %b) ({\n"
        "  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
        "    %1 = stablehlo.maximum %x, %y : tensor<f32>\n"
        "    stablehlo.return %1 : tensor<f32>\n"
        "  }) {dimensions = array<i64: 0>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
        "  return %0 : tensor<2xf32>\n"
        "}\n";
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *printed = kiln_module_to_string(cx, m);
    cr_assert_not_null(printed, "%s", kiln_ctx_error_message(cx));
    cr_assert(strstr(printed, "\"stablehlo.map\"(%arg0, %arg1)") &&
                  strstr(printed, "<{dimensions = array<i64: 0>}>"),
              "%s", printed);
    kiln_module *again = NULL;
    cr_assert_eq(kiln_module_parse(cx, printed, strlen(printed), NULL, &again), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_string_free(cx, printed);
    kiln_module_release(again);
    kiln_module_release(m);
    const char *bad = "func.func @main(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {\n"
                      "  %0 = \"stablehlo.map\"(%a) ({\n"
                      "  ^bb0(%x: tensor<f32>):\n"
                      "    stablehlo.return %x : tensor<f32>\n"
                      "  }) {dimensions = array<i64: 1, 0>} : (tensor<2x2xf32>) -> "
                      "tensor<2x2xf32>\n"
                      "  return %0 : tensor<2x2xf32>\n"
                      "}\n";
    cr_assert_neq(kiln_module_parse(cx, bad, strlen(bad), NULL, &m), KILN_OK);
    expect_error(cx, KILN_INVALID_ARGUMENT, "every dimension in order");
    kiln_ctx_release(cx);
}

static kiln_status wrong_dtype(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *u) {
    (void)u;
    out[0] = kiln_convert(cx, in[0], KILN_F32);
    return kiln_ctx_status(cx);
}

Test(map, errors_name_the_argument) {
    kiln_ctx *cx = test_ctx();
    const int64_t a[6] = {0};
    kiln_tensor *x = i64s(cx, a, 2, 3), *y = i64s(cx, a, 3, 2);
    kiln_region f = {fma1, NULL};
    cr_assert_null(kiln_map(cx, NULL, &x, 1, KILN_I64));
    expect_error(cx, KILN_INVALID_ARGUMENT, "computation");
    cr_assert_null(kiln_map(cx, &f, NULL, 1, KILN_I64));
    expect_error(cx, KILN_INVALID_ARGUMENT, "inputs");
    cr_assert_null(kiln_map(cx, &f, &x, 0, KILN_I64));
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_inputs is 0");
    cr_assert_null(kiln_map(cx, &f, (kiln_tensor *[]){x, NULL}, 2, KILN_I64));
    expect_error(cx, KILN_INVALID_ARGUMENT, "inputs[1] is NULL");
    cr_assert_null(kiln_map(cx, &f, (kiln_tensor *[]){x, y}, 2, KILN_I64));
    expect_error(cx, KILN_INVALID_ARGUMENT, "input 1 is i64[3,2]");
    cr_assert_null(kiln_map(cx, &(kiln_region){wrong_dtype, NULL}, &x, 1, KILN_I64));
    expect_error(cx, KILN_INVALID_ARGUMENT, "returned f32");
    kiln_ctx_release(cx);
}
