/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <stdint.h>

#include "failing_allocator.h"
#include "test_util.h"

static void expect_text(kiln_ctx *cx, kiln_tensor *t, const char *want) {
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    char *s = kiln_tensor_to_string(cx, t, NULL);
    cr_assert_not_null(s, "%s", kiln_ctx_error_message(cx));
    cr_assert_str_eq(s, want);
    kiln_string_free(cx, s);
}

static kiln_tensor *f64s(kiln_ctx *cx, int n, const double *v) {
    return kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(n), v, (size_t)n * sizeof(double));
}

Test(print, integers_and_nesting) {
    kiln_ctx *cx = test_ctx();
    expect_text(cx, kiln_iota(cx, KILN_I32, KILN_SHAPE(3, 4), 1),
                "i32[3,4]\n[[0, 1, 2, 3],\n [0, 1, 2, 3],\n [0, 1, 2, 3]]");
    expect_text(cx, kiln_iota(cx, KILN_I8, KILN_SHAPE(2, 2, 2), 1),
                "i8[2,2,2]\n[[[0, 0],\n  [1, 1]],\n\n [[0, 0],\n  [1, 1]]]");
    expect_text(cx, kiln_arange(cx, KILN_I16, -2, 2, 1), "i16[4]\n[-2, -1,  0,  1]");
    expect_text(cx, kiln_full_int(cx, KILN_U64, KILN_SHAPE(1), INT64_MAX),
                "ui64[1]\n[9223372036854775807]");
    uint64_t big = UINT64_MAX;
    expect_text(cx, kiln_tensor_from_host(cx, KILN_U64, KILN_SHAPE_SCALAR, &big, 8),
                "ui64[]\n18446744073709551615");
    expect_text(cx, kiln_tensor_from_host(cx, KILN_BOOL, KILN_SHAPE(2), (uint8_t[]){1, 0}, 2),
                "i1[2]\n[ true, false]");
    kiln_ctx_release(cx);
}

Test(print, floats_share_one_format) {
    kiln_ctx *cx = test_ctx();
    expect_text(cx, kiln_linspace(cx, KILN_F32, 0, 1, 5), "f32[5]\n[0.00, 0.25, 0.50, 0.75, 1.00]");
    expect_text(cx, kiln_scalar(cx, 2.5, KILN_F64), "f64[]\n2.5");
    expect_text(cx, kiln_arange(cx, KILN_F32, 0, 3, 1), "f32[3]\n[0., 1., 2.]");
    expect_text(cx, f64s(cx, 2, (double[]){1e-5, 1}), "f64[2]\n[1e-05, 1e+00]");
    expect_text(cx, f64s(cx, 2, (double[]){1.5e9, -2.25}), "f64[2]\n[ 1.50e+09, -2.25e+00]");
    expect_text(cx, f64s(cx, 4, (double[]){NAN, INFINITY, -INFINITY, 1.5}),
                "f64[4]\n[ nan,  inf, -inf,  1.5]");
    expect_text(cx, f64s(cx, 1, (double[]){1.0 / 3.0}), "f64[1]\n[0.33333333]");
    expect_text(cx, kiln_full(cx, KILN_BF16, KILN_SHAPE(1), 0.1), "bf16[1]\n[0.10009766]");
    kiln_ctx_release(cx);
}

Test(print, empty_and_elided) {
    kiln_ctx *cx = test_ctx();
    expect_text(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(0, 3)), "f32[0,3]\n[]");
    expect_text(cx, kiln_arange(cx, KILN_F32, 0, 2000, 1),
                "f32[2000]\n[   0.,    1.,    2.,   ..., 1997., 1998., 1999.]");
    char *s = kiln_tensor_to_string(cx, kiln_iota(cx, KILN_I32, KILN_SHAPE(100, 100), 0), NULL);
    cr_assert_str_eq(s, "i32[100,100]\n"
                        "[[ 0,  0,  0, ...,  0,  0,  0],\n"
                        " [ 1,  1,  1, ...,  1,  1,  1],\n"
                        " [ 2,  2,  2, ...,  2,  2,  2],\n"
                        " ...,\n"
                        " [97, 97, 97, ..., 97, 97, 97],\n"
                        " [98, 98, 98, ..., 98, 98, 98],\n"
                        " [99, 99, 99, ..., 99, 99, 99]]");
    kiln_string_free(cx, s);
    kiln_ctx_release(cx);
}

Test(print, long_rows_wrap_at_the_line_width) {
    kiln_ctx *cx = test_ctx();
    char *s = kiln_tensor_to_string(cx, kiln_arange(cx, KILN_F64, 0, 50, 0.5), NULL);
    cr_assert_not_null(s);
    int lines = 1, col = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '\n') {
            lines++;
            col = 0;
        } else {
            cr_assert_leq(++col, 75, "line too long in:\n%s", s);
        }
    }
    cr_assert_gt(lines, 5);
    kiln_string_free(cx, s);
    kiln_ctx_release(cx);
}

Test(print, options_change_precision_and_threshold) {
    kiln_ctx *cx = test_ctx();
    kiln_print_options o = kiln_print_options_default();
    o.precision = 3;
    o.threshold = 4;
    o.edge_items = 2;
    char *s = kiln_tensor_to_string(cx, kiln_linspace(cx, KILN_F64, 0, 1, 7), &o);
    cr_assert_str_eq(s, "f64[7]\n[0.000, 0.167,   ..., 0.833, 1.000]");
    kiln_string_free(cx, s);
    /* The format comes from the items shown, as in numpy. */
    o.edge_items = 1;
    s = kiln_tensor_to_string(cx, kiln_linspace(cx, KILN_F64, 0, 1, 7), &o);
    cr_assert_str_eq(s, "f64[7]\n[0., ..., 1.]");
    kiln_string_free(cx, s);
    o.precision = 40;
    cr_assert_null(kiln_tensor_to_string(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(1)), &o));
    expect_error(cx, KILN_INVALID_ARGUMENT, "options out of range");
    kiln_print_options old = {.struct_size = 8};
    cr_assert_null(kiln_tensor_to_string(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(1)), &old));
    expect_error(cx, KILN_INVALID_ARGUMENT, "struct_size");
    kiln_ctx_release(cx);
}

Test(print, to_a_stream, .init = cr_redirect_stdout) {
    kiln_ctx *cx = test_ctx();
    cr_assert_eq(kiln_tensor_print(cx, kiln_iota(cx, KILN_U8, KILN_SHAPE(3), 0), stdout), KILN_OK);
    fflush(stdout);
    cr_assert_stdout_eq_str("ui8[3]\n[0, 1, 2]\n");
    cr_assert_eq(kiln_tensor_print(cx, NULL, stdout), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "tensor is NULL");
    cr_assert_eq(kiln_tensor_print(cx, kiln_zeros(cx, KILN_U8, KILN_SHAPE(1)), NULL),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "stream is NULL");
    kiln_string_free(cx, NULL);
    kiln_ctx_release(cx);
}

Test(print, allocation_failure_is_reported) {
    for (int64_t n = 4; n < 12; n++) {
        failing_allocator fa;
        kiln_ctx *cx = failing_allocator_ctx(&fa);
        cr_assert_not_null(cx);
        kiln_tensor *t = kiln_arange(cx, KILN_F32, 0, 500, 1);
        fa.fail_after = fa.allocations + (n - 4); /* let a few string blocks through */
        char *s = kiln_tensor_to_string(cx, t, NULL);
        if (s)
            kiln_string_free(cx, s);
        else
            cr_assert_eq(kiln_ctx_status(cx), KILN_RESOURCE_EXHAUSTED);
        kiln_ctx_release(cx);
        cr_assert_eq(fa.live_blocks, 0);
    }
}
