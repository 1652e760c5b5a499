/* SPDX-License-Identifier: Apache-2.0 */
/* The op schema (src/ops/op_syntax.h): its table is consistent, the generic form of each op
 * (attributes by StableHLO's names) reads as its pretty form does, and the errors that the
 * schema's decoders give name the attribute. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kiln/parse.h"
#include "ops/op_syntax.h"
#include "test_util.h"

Test(op_syntax, the_table_is_consistent) {
    int32_t with_attrs = 0;
    for (int op = 0; op < KILN_OP_COUNT; op++) {
        const kiln__op_syntax *s = kiln__op_syntax_get((kiln_op)op);
        const char *name = kiln__op_get_info((kiln_op)op)->name;
        cr_assert(s->form == KILN__FORM_PLAIN || s->form == KILN__FORM_INLINE ||
                      s->form == KILN__FORM_GENERIC || s->form == KILN__FORM_CUSTOM,
                  "%s: no form", name);
        with_attrs += s->n_attrs > 0;
        for (int32_t i = 0; i < s->n_attrs; i++) {
            const kiln__attr_desc *d = &s->attrs[i];
            cr_assert(d->name && d->name[0], "%s: attribute %d has no name", name, (int)i);
            cr_assert_eq(kiln__op_attr_find((kiln_op)op, d->name, strlen(d->name)), d,
                         "%s.%s: not found by its name (named twice?)", name, d->name);
            cr_assert_lt(d->offset, sizeof(kiln__attrs), "%s.%s", name, d->name);
            cr_assert_lt(d->offset2, sizeof(kiln__attrs), "%s.%s", name, d->name);
            if (d->kind == KILN__AK_ENUM)
                cr_assert(d->mnemonic && d->enum_names && d->n_enum > 0, "%s.%s", name, d->name);
            if (d->kind == KILN__AK_STRUCT) {
                cr_assert(d->mnemonic && d->n_fields > 0, "%s.%s", name, d->name);
                for (int32_t f = 0; f < d->n_fields; f++)
                    cr_assert(d->fields[f].kind == KILN__AK_DIMS ||
                                  d->fields[f].kind == KILN__AK_I64,
                              "%s.%s.%s", name, d->name, d->fields[f].name);
            }
            /* what the pretty forms can write */
            if (d->in_pretty)
                cr_assert(s->form == KILN__FORM_INLINE &&
                              (d->kind == KILN__AK_I64 || d->kind == KILN__AK_DIMS ||
                               d->kind == KILN__AK_ENUM || d->kind == KILN__AK_BOOL),
                          "%s.%s: in a pretty form it cannot write", name, d->name);
            /* a flag is written only when set, so it must be optional */
            if (d->in_pretty && d->kind == KILN__AK_BOOL)
                cr_assert(d->pretty_optional && d->pretty, "%s.%s", name, d->name);
            /* the pretty order, when it is its own, names each attribute once */
            if (s->pretty_order) {
                bool seen = false;
                for (int32_t j = 0; j < s->n_attrs; j++)
                    seen |= kiln__op_pretty_attr(s, j) == d;
                cr_assert(seen, "%s.%s: not in the pretty order", name, d->name);
            }
            if (d->before_operands)
                cr_assert(d->kind == KILN__AK_ENUM && !d->pretty, "%s.%s", name, d->name);
            if (d->count != KILN__AC_NONE)
                cr_assert(!d->required && (d->kind == KILN__AK_DIMS || d->kind == KILN__AK_PADDING),
                          "%s.%s: a count for what is not a list left out", name, d->name);
            /* the generic form's order is StableHLO's, by name (the convolutions excepted:
             * their dimension numbers come first, the counts of the others follow) */
            bool conv = op == KILN_OP_CONVOLUTION || op == KILN_OP_DYNAMIC_CONV;
            if (i > 0 && !(conv && i == 1) && s->form == KILN__FORM_GENERIC)
                cr_assert_lt(strcmp(s->attrs[i - 1].name, d->name), 0, "%s: %s after %s", name,
                             d->name, s->attrs[i - 1].name);
        }
        if (kiln__op_has((kiln_op)op, KILN_OPF_ELEMENTWISE) && op != KILN_OP_COMPARE &&
            op != KILN_OP_SELECT)
            cr_assert_eq(s->form, KILN__FORM_PLAIN, "%s", name);
    }
    cr_assert_geq(with_attrs, 18);
    cr_assert_eq(kiln__op_syntax_get(KILN_OP_COUNT)->form, KILN__FORM_CUSTOM);
}

static char *printed(kiln_ctx *cx, const char *text) {
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s\n%s",
                 kiln_ctx_error_message(cx), text);
    char *s = kiln_module_to_string(cx, m);
    cr_assert_not_null(s);
    kiln_module_release(m);
    return s;
}

/* One function of the given signature whose body is `op` (defining %0) and its return. */
static void same_module(kiln_ctx *cx, const char *sig, const char *result_type, const char *generic,
                        const char *pretty) {
    char a[4096], b[4096];
    snprintf(a, sizeof a, "func.func @main(%s) -> %s {\n  %s\n  return %%0 : %s\n}\n", sig,
             result_type, generic, result_type);
    snprintf(b, sizeof b, "func.func @main(%s) -> %s {\n  %s\n  return %%0 : %s\n}\n", sig,
             result_type, pretty, result_type);
    char *sa = printed(cx, a), *sb = printed(cx, b);
    cr_assert_str_eq(sa, sb, "generic and pretty forms differ:\n%s\n%s", a, b);
    kiln_string_free(cx, sa);
    kiln_string_free(cx, sb);
}

Test(op_syntax, generic_forms_read_as_the_pretty_ones) {
    kiln_ctx *cx = test_ctx();
    const char *x23 = "%x: tensor<2x3xf32>, %y: tensor<2x3xf32>";
    same_module(cx, x23, "tensor<2x3xi1>",
                "%0 = \"stablehlo.compare\"(%x, %y) {comparison_direction = "
                "#stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type "
                "FLOAT>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>",
                "%0 = stablehlo.compare  LT, %x, %y,  FLOAT : (tensor<2x3xf32>, "
                "tensor<2x3xf32>) -> tensor<2x3xi1>");
    /* compare_type left out: from the dtype */
    same_module(cx, x23, "tensor<2x3xi1>",
                "%0 = \"stablehlo.compare\"(%x, %y) <{comparison_direction = "
                "#stablehlo<comparison_direction GE>}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> "
                "tensor<2x3xi1>",
                "%0 = stablehlo.compare  GE, %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> "
                "tensor<2x3xi1>");
    same_module(cx, "", "tensor<4x2xi32>",
                "%0 = \"stablehlo.iota\"() {iota_dimension = 1 : i64} : () -> tensor<4x2xi32>",
                "%0 = stablehlo.iota dim = 1 : tensor<4x2xi32>");
    same_module(cx, "%x: tensor<2x3xf32>", "tensor<3x2xf32>",
                "%0 = \"stablehlo.transpose\"(%x) {permutation = array<i64: 1, 0>} : "
                "(tensor<2x3xf32>) -> tensor<3x2xf32>",
                "%0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> "
                "tensor<3x2xf32>");
    same_module(cx, "%x: tensor<3xf32>", "tensor<2x3xf32>",
                "%0 = \"stablehlo.broadcast_in_dim\"(%x) <{broadcast_dimensions = array<i64: "
                "1>}> : (tensor<3xf32>) -> tensor<2x3xf32>",
                "%0 = stablehlo.broadcast_in_dim %x, dims = [1] : (tensor<3xf32>) -> "
                "tensor<2x3xf32>");
    same_module(cx, "%x: tensor<2x3xf32>", "tensor<2x3xf32>",
                "%0 = \"stablehlo.reverse\"(%x) {dimensions = array<i64: 0>} : "
                "(tensor<2x3xf32>) -> tensor<2x3xf32>",
                "%0 = stablehlo.reverse %x, dims = [0] : tensor<2x3xf32>");
    same_module(cx, "%x: tensor<2x6xf32>", "tensor<2x2xf32>",
                "%0 = \"stablehlo.slice\"(%x) {start_indices = array<i64: 0, 1>, limit_indices "
                "= array<i64: 2, 5>, strides = array<i64: 1, 2>} : (tensor<2x6xf32>) -> "
                "tensor<2x2xf32>",
                "%0 = stablehlo.slice %x [0:2, 1:5:2] : (tensor<2x6xf32>) -> tensor<2x2xf32>");
    same_module(cx, "%x: tensor<2x6xf32>, %i: tensor<i32>, %j: tensor<i32>", "tensor<1x3xf32>",
                "%0 = \"stablehlo.dynamic_slice\"(%x, %i, %j) {slice_sizes = array<i64: 1, 3>} "
                ": (tensor<2x6xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>",
                "%0 = stablehlo.dynamic_slice %x, %i, %j, sizes = [1, 3] : (tensor<2x6xf32>, "
                "tensor<i32>, tensor<i32>) -> tensor<1x3xf32>");
    same_module(cx, "%x: tensor<2x3xf32>, %v: tensor<f32>", "tensor<5x4xf32>",
                "%0 = \"stablehlo.pad\"(%x, %v) {edge_padding_low = array<i64: 1, 0>, "
                "edge_padding_high = array<i64: 1, 1>, interior_padding = array<i64: 1, 0>} : "
                "(tensor<2x3xf32>, tensor<f32>) -> tensor<5x4xf32>",
                "%0 = stablehlo.pad %x, %v, low = [1, 0], high = [1, 1], interior = [1, 0] : "
                "(tensor<2x3xf32>, tensor<f32>) -> tensor<5x4xf32>");
    same_module(cx, x23, "tensor<4x3xf32>",
                "%0 = \"stablehlo.concatenate\"(%x, %y) {dimension = 0 : i64} : "
                "(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>",
                "%0 = stablehlo.concatenate %x, %y, dim = 0 : (tensor<2x3xf32>, "
                "tensor<2x3xf32>) -> tensor<4x3xf32>");
    same_module(cx, "%x: tensor<5x2x3xf32>, %y: tensor<5x3x4xf32>", "tensor<5x2x4xf32>",
                "%0 = \"stablehlo.dot_general\"(%x, %y) {dot_dimension_numbers = "
                "#stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
                "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>, "
                "precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision "
                "DEFAULT>]} : (tensor<5x2x3xf32>, tensor<5x3x4xf32>) -> tensor<5x2x4xf32>",
                "%0 = stablehlo.dot_general %x, %y, batching_dims = [0] x [0], "
                "contracting_dims = [2] x [1] : (tensor<5x2x3xf32>, tensor<5x3x4xf32>) -> "
                "tensor<5x2x4xf32>");
    same_module(cx, "%x: tensor<1x4x4x2xf32>, %k: tensor<3x3x2x5xf32>", "tensor<1x2x2x5xf32>",
                "%0 = \"stablehlo.convolution\"(%x, %k) {dimension_numbers = "
                "#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, window_strides = "
                "array<i64: 1, 1>, padding = dense<0> : tensor<2x2xi64>, lhs_dilation = "
                "array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, window_reversal = "
                "array<i1: false, false>, feature_group_count = 1 : i64, batch_group_count = 1 "
                ": i64} : (tensor<1x4x4x2xf32>, tensor<3x3x2x5xf32>) -> tensor<1x2x2x5xf32>",
                "%0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, "
                "o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], "
                "lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, "
                "feature_group_count = 1 : i64} : (tensor<1x4x4x2xf32>, tensor<3x3x2x5xf32>) "
                "-> tensor<1x2x2x5xf32>");
    kiln_ctx_release(cx);
}

static void fails_with(kiln_ctx *cx, const char *sig, const char *result_type, const char *op,
                       const char *message) {
    char text[4096];
    snprintf(text, sizeof text, "func.func @main(%s) -> %s {\n  %s\n  return %%0 : %s\n}\n", sig,
             result_type, op, result_type);
    kiln_module *m = NULL;
    cr_assert_neq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s", text);
    cr_assert(strstr(kiln_ctx_error_message(cx), message), "expected '%s', got '%s'", message,
              kiln_ctx_error_message(cx));
}

Test(op_syntax, attribute_errors_name_the_attribute) {
    kiln_ctx *cx = test_ctx();
    const char *x = "%x: tensor<2x3xf32>";
    fails_with(cx, x, "tensor<3x2xf32>",
               "%0 = \"stablehlo.transpose\"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>",
               "2:8: error: missing attribute 'permutation'");
    fails_with(cx, x, "tensor<3x2xf32>",
               "%0 = \"stablehlo.transpose\"(%x) {permutation = 3 : i64} : (tensor<2x3xf32>) -> "
               "tensor<3x2xf32>",
               "error: attribute 'permutation' must be a list of integers");
    fails_with(cx, "%x: tensor<2x3xf32>, %y: tensor<2x3xf32>", "tensor<4x3xf32>",
               "%0 = \"stablehlo.concatenate\"(%x, %y) {dimension = [0]} : (tensor<2x3xf32>, "
               "tensor<2x3xf32>) -> tensor<4x3xf32>",
               "error: attribute 'dimension' must be an integer");
    fails_with(cx, "%x: tensor<2x3xf32>, %y: tensor<2x3xf32>", "tensor<2x3xi1>",
               "%0 = stablehlo.compare  XX, %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> "
               "tensor<2x3xi1>",
               "error: unknown comparison_direction 'XX'");
    fails_with(cx, "%x: tensor<2x3xf32>, %y: tensor<2x3xf32>", "tensor<2x3xi1>",
               "%0 = \"stablehlo.compare\"(%x, %y) {comparison_direction = 1 : i64} : "
               "(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>",
               "error: attribute 'comparison_direction' must be an enum");
    fails_with(cx, "%x: tensor<2x3xf32>, %i: tensor<1xi32>", "tensor<3xf32>",
               "%0 = \"stablehlo.gather\"(%x, %i) {slice_sizes = array<i64: 1, 3>} : "
               "(tensor<2x3xf32>, tensor<1xi32>) -> tensor<3xf32>",
               "error: gather needs dimension_numbers = #stablehlo.gather<...>");
    fails_with(cx, "%x: tensor<2x3xf32>, %i: tensor<1xi32>", "tensor<3xf32>",
               "%0 = \"stablehlo.gather\"(%x, %i) {dimension_numbers = #stablehlo.gather<"
               "offset_dims = [0], collapsed_slice_dims = [0], start_index_map = [0], "
               "index_vector_dim = 1>, indices_are_sorted = 3 : i64, slice_sizes = array<i64: "
               "1, 3>} : (tensor<2x3xf32>, tensor<1xi32>) -> tensor<3xf32>",
               "error: attribute 'indices_are_sorted' must be true or false");
    fails_with(cx, "%x: tensor<1x4x4x2xf32>, %k: tensor<3x3x2x5xf32>", "tensor<1x2x2x5xf32>",
               "%0 = \"stablehlo.convolution\"(%x, %k) {window_strides = array<i64: 1, 1>} : "
               "(tensor<1x4x4x2xf32>, tensor<3x3x2x5xf32>) -> tensor<1x2x2x5xf32>",
               "error: convolution needs dimension_numbers");
    fails_with(cx, "%x: tensor<1x4x4x2xf32>, %k: tensor<3x3x2x5xf32>", "tensor<1x2x2x5xf32>",
               "%0 = \"stablehlo.convolution\"(%x, %k) {dimension_numbers = "
               "#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, window_reversal = "
               "array<i1: true, false>} : (tensor<1x4x4x2xf32>, tensor<3x3x2x5xf32>) -> "
               "tensor<1x2x2x5xf32>",
               "error: window_reversal is not supported");
    fails_with(cx, "%x: tensor<4x4xf32>, %v: tensor<f32>", "tensor<2x2xf32>",
               "%0 = \"stablehlo.reduce_window\"(%x, %v) ({\n  ^bb0(%a: tensor<f32>, %b: "
               "tensor<f32>):\n    %s = stablehlo.add %a, %b : tensor<f32>\n    "
               "stablehlo.return %s : tensor<f32>\n  }) {window_dimensions = array<i64: 2, 2>, "
               "window_strides = array<i64: 2, 2>, padding = dense<[[0, 0]]> : "
               "tensor<1x2xi64>} : (tensor<4x4xf32>, tensor<f32>) -> tensor<2x2xf32>",
               "error: attribute 'padding' must be dense<...> : tensor<2x2xi64>");
    /* ops whose syntax is only generic */
    fails_with(cx, "%x: tensor<3xf32>", "tensor<3xf32>", "%0 = stablehlo.sort %x : tensor<3xf32>",
               "error: stablehlo.sort has no pretty form here: use the generic form");
    kiln_ctx_release(cx);
}
