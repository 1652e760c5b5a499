/* SPDX-License-Identifier: Apache-2.0 */
/* Tuples run by being taken apart: every backend, with the passes or without them, runs a
 * program that makes tuples and takes their elements; what cannot be taken apart (a tuple
 * the program takes or gives, one carried by a loop) is refused by name at compile time.
 * The text forms are tests/ir/test_tuple_text.c. */
#include <string.h>

#include "op_cases.h"
#include "test_util.h"

static const char program[] =
    "func.func @main(%x: tensor<2xf64>, %y: tensor<i64>) -> (tensor<2xf64>, tensor<i64>) {\n"
    "  %v = stablehlo.tuple %y : tuple<tensor<i64>>\n"
    "  %t = stablehlo.tuple %x, %v : tuple<tensor<2xf64>, tuple<tensor<i64>>>\n"
    "  %a = stablehlo.get_tuple_element %t[0] : (tuple<tensor<2xf64>, tuple<tensor<i64>>>) -> "
    "tensor<2xf64>\n"
    "  %b = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xf64>, tuple<tensor<i64>>>) -> "
    "tuple<tensor<i64>>\n"
    "  %c = stablehlo.get_tuple_element %b[0] : (tuple<tensor<i64>>) -> tensor<i64>\n"
    "  %d = stablehlo.add %a, %a : tensor<2xf64>\n"
    "  return %d, %c : tensor<2xf64>, tensor<i64>\n}\n";

Test(tuple, tuples_are_taken_apart_in_every_backend_with_or_without_passes) {
    const char *backends[TEST_MAX_BACKENDS];
    int nb = test_backends(backends, TEST_MAX_BACKENDS);
    kiln_ctx *cx = test_ctx();
    for (int b = 0; b < nb; b++)
        for (int passes = 0; passes < 2; passes++) {
            kiln_exe *exe = NULL;
            cr_assert_eq(test_compile_text(cx, program, backends[b], passes, &exe), KILN_OK,
                         "%s: %s", backends[b], kiln_ctx_error_message(cx));
            const double x[2] = {1.5, -2};
            const int64_t y = 7;
            kiln_tensor *args[2] = {
                kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(2), x, sizeof x),
                kiln_tensor_from_host(cx, KILN_I64, KILN_SHAPE_SCALAR, &y, sizeof y)};
            kiln_tensor *out[2] = {NULL};
            cr_assert_eq(kiln_exe_call(cx, exe, args, out), KILN_OK, "%s: %s", backends[b],
                         kiln_ctx_error_message(cx));
            const double *d = kiln_tensor_data(out[0]);
            cr_assert(d[0] == 3 && d[1] == -4, "%s: %g %g", backends[b], d[0], d[1]);
            cr_assert_eq(*(const int64_t *)kiln_tensor_data(out[1]), 7, "%s", backends[b]);
            for (int i = 0; i < 2; i++) {
                kiln_tensor_release(args[i]);
                kiln_tensor_release(out[i]);
            }
            kiln_exe_release(exe);
        }
    kiln_ctx_release(cx);
}

/* A tuple that stays one is refused at compile time, by name, never at read time. */
Test(tuple, tuples_left_whole_are_refused_at_compile_time) {
    kiln_ctx *cx = test_ctx();
    static const char takes[] =
        "func.func @main(%t: tuple<tensor<2xf32>>) -> tensor<2xf32> {\n"
        "  %e = stablehlo.get_tuple_element %t[0] : (tuple<tensor<2xf32>>) -> tensor<2xf32>\n"
        "  return %e : tensor<2xf32>\n}\n";
    static const char gives[] = "func.func @main(%x: tensor<2xf32>) -> tuple<tensor<2xf32>> {\n"
                                "  %t = stablehlo.tuple %x : tuple<tensor<2xf32>>\n"
                                "  return %t : tuple<tensor<2xf32>>\n}\n";
    static const char carried[] =
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %t = stablehlo.tuple %x : tuple<tensor<2xf32>>\n"
        "  %r = func.call @id(%t) : (tuple<tensor<2xf32>>) -> tuple<tensor<2xf32>>\n"
        "  %e = stablehlo.get_tuple_element %r[0] : (tuple<tensor<2xf32>>) -> tensor<2xf32>\n"
        "  return %e : tensor<2xf32>\n}\n"
        "func.func private @id(%t: tuple<tensor<2xf32>>) -> tuple<tensor<2xf32>> {\n"
        "  return %t : tuple<tensor<2xf32>>\n}\n";
    const char *backends[TEST_MAX_BACKENDS];
    int nb = test_backends(backends, TEST_MAX_BACKENDS);
    for (int b = 0; b < nb; b++) {
        kiln_exe *exe = NULL;
        cr_assert_neq(test_compile_text(cx, takes, backends[b], true, &exe), KILN_OK);
        expect_error(cx, KILN_UNIMPLEMENTED, "@main argument 0 is a tuple");
        cr_assert_neq(test_compile_text(cx, gives, backends[b], true, &exe), KILN_OK);
        expect_error(cx, KILN_UNIMPLEMENTED, "@main result 0 is a tuple");
        kiln_status s = test_compile_text(cx, carried, backends[b], false, &exe);
        cr_assert_neq(s, KILN_OK, "%s compiled a call of a tuple", backends[b]);
        expect_error(cx, KILN_UNIMPLEMENTED, "cannot run stablehlo.tuple");
    }
    kiln_ctx_release(cx);
}

const kiln_op_coverage kiln_cover_tuple[] = {
    {KILN_OP_TUPLE, "tuple/tuples_are_taken_apart_in_every_backend_with_or_without_passes"},
    {KILN_OP_GET_TUPLE_ELEMENT,
     "tuple/tuples_are_taken_apart_in_every_backend_with_or_without_passes"},
    {KILN_OP_COUNT, NULL},
};
