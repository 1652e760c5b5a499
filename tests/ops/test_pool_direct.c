/* SPDX-License-Identifier: Apache-2.0 */
/* The direct pooling kernels of reduce_window (max and add over two spatial dimensions of
 * rank-4 f32/f64 tensors, channels first or last) against the general kernel, which a
 * rank-5 view of the same data takes: bitwise equal, NaN, -0 and padding included, for
 * init values that are and are not the identity. And a hand-checked case. */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"

static uint64_t rng = 77;
static double next_value(int i) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    /* Mostly ordinary values; some NaN, -0, +0 and repeats to exercise the ties. */
    switch (rng % 23) {
    case 0: return NAN;
    case 1: return -0.0;
    case 2: return 0.0;
    case 3: return 1.0;
    default: return (double)((int64_t)(rng >> 20) % 2001 - 1000) / 64.0 + i * 1e-7;
    }
}

static kiln_tensor *values(kiln_ctx *cx, kiln_dtype dt, kiln_shape s) {
    int64_t n = 1;
    for (int32_t d = 0; d < s.rank; d++)
        n *= s.dims[d];
    size_t es = kiln_dtype_size(dt);
    unsigned char *b = malloc((size_t)n * es + 1);
    cr_assert_not_null(b);
    for (int64_t i = 0; i < n; i++) {
        double v = next_value((int)i);
        if (dt == KILN_F32) {
            float f = (float)v;
            memcpy(b + i * 4, &f, 4);
        } else {
            memcpy(b + i * 8, &v, 8);
        }
    }
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, s, b, (size_t)n * es);
    free(b);
    cr_assert_not_null(t);
    return t;
}

/* Inserts a dimension of size 1 (window 1, stride 1, no padding) at position `at`. */
static kiln_dims insert1(kiln_dims d, int32_t at, int64_t v) {
    kiln_dims r = {.count = d.count + 1};
    for (int32_t i = 0, j = 0; i < r.count; i++)
        r.v[i] = i == at ? v : d.v[j++];
    return r;
}

Test(pool_direct, matches_the_general_kernel_bitwise) {
    kiln_ctx *cx = test_ctx();
    struct {
        bool last;
        int64_t kh, kw, sh, sw, pl_h, ph_h, pl_w, ph_w;
    } geo[] = {
        {false, 2, 2, 2, 2, 0, 0, 0, 0}, {false, 3, 3, 2, 2, 1, 1, 1, 1},
        {false, 3, 2, 1, 3, 0, 2, 1, 0}, {true, 2, 2, 2, 2, 0, 0, 0, 0},
        {true, 3, 3, 1, 2, 1, 1, 2, 0},  {false, 1, 1, 1, 1, 0, 0, 0, 0},
    };
    for (size_t g = 0; g < sizeof geo / sizeof geo[0]; g++)
        for (int dti = 0; dti < 2; dti++)
            for (int kind = 0; kind < 2; kind++)
                for (int ini = 0; ini < 2; ini++) {
                    kiln_scope_begin(cx);
                    kiln_dtype dt = dti ? KILN_F64 : KILN_F32;
                    bool last = geo[g].last;
                    kiln_shape s = last ? KILN_SHAPE(2, 9, 8, 3) : KILN_SHAPE(2, 3, 9, 8);
                    kiln_tensor *x = values(cx, dt, s);
                    int32_t h = last ? 1 : 2, w = h + 1;
                    kiln_window_params p = {.window_dimensions = KILN_DIMS(1, 1, 1, 1),
                                            .window_strides = KILN_DIMS(1, 1, 1, 1),
                                            .padding_low = KILN_DIMS(0, 0, 0, 0),
                                            .padding_high = KILN_DIMS(0, 0, 0, 0)};
                    p.window_dimensions.v[h] = geo[g].kh, p.window_dimensions.v[w] = geo[g].kw;
                    p.window_strides.v[h] = geo[g].sh, p.window_strides.v[w] = geo[g].sw;
                    p.padding_low.v[h] = geo[g].pl_h, p.padding_high.v[h] = geo[g].ph_h;
                    p.padding_low.v[w] = geo[g].pl_w, p.padding_high.v[w] = geo[g].ph_w;
                    const kiln_region *region = kind ? kiln_region_add() : kiln_region_maximum();
                    double init_v = ini ? (kind ? 1.5 : 0.25) : (kind ? 0.0 : -INFINITY);
                    kiln_tensor *init = kiln_scalar(cx, init_v, dt);
                    kiln_tensor *direct = NULL, *general = NULL;
                    cr_assert_eq(kiln_reduce_window(cx, &x, &init, 1, &p, region, &direct), KILN_OK,
                                 "%s", kiln_ctx_error_message(cx));
                    /* The same data with a size-1 dimension added at the end. */
                    kiln_shape s5 = s;
                    s5.rank = 5;
                    s5.dims[4] = 1;
                    kiln_tensor *x5 = kiln_reshape(cx, x, s5);
                    kiln_window_params p5 = {.window_dimensions =
                                                 insert1(p.window_dimensions, 4, 1),
                                             .window_strides = insert1(p.window_strides, 4, 1),
                                             .padding_low = insert1(p.padding_low, 4, 0),
                                             .padding_high = insert1(p.padding_high, 4, 0)};
                    cr_assert_eq(kiln_reduce_window(cx, &x5, &init, 1, &p5, region, &general),
                                 KILN_OK, "%s", kiln_ctx_error_message(cx));
                    cr_assert_eq(kiln_tensor_numel(direct), kiln_tensor_numel(general));
                    cr_assert_gt(kiln_tensor_numel(direct), 0);
                    cr_assert(memcmp(kiln_tensor_data(direct), kiln_tensor_data(general),
                                     kiln_tensor_nbytes(direct)) == 0,
                              "geometry %zu, %s, %s, init %g: direct and general differ", g,
                              kiln_dtype_name(dt), kind ? "add" : "max", init_v);
                    kiln_scope_end(cx);
                }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Direct (rank 4) against general (the same data as rank 5) for one geometry. */
static void compare_once(kiln_ctx *cx, kiln_dtype dt, kiln_shape s, kiln_window_params p,
                         const kiln_region *region, double init_v) {
    kiln_scope_begin(cx);
    kiln_tensor *x = values(cx, dt, s), *init = kiln_scalar(cx, init_v, dt);
    kiln_tensor *direct = NULL, *general = NULL;
    cr_assert_eq(kiln_reduce_window(cx, &x, &init, 1, &p, region, &direct), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_shape s5 = s;
    s5.rank = 5;
    s5.dims[4] = 1;
    kiln_tensor *x5 = kiln_reshape(cx, x, s5);
    kiln_window_params p5 = {.window_dimensions = insert1(p.window_dimensions, 4, 1),
                             .window_strides = insert1(p.window_strides, 4, 1),
                             .padding_low = insert1(p.padding_low, 4, 0),
                             .padding_high = insert1(p.padding_high, 4, 0)};
    cr_assert_eq(kiln_reduce_window(cx, &x5, &init, 1, &p5, region, &general), KILN_OK);
    cr_assert_eq(kiln_tensor_nbytes(direct), kiln_tensor_nbytes(general));
    cr_assert(memcmp(kiln_tensor_data(direct), kiln_tensor_data(general),
                     kiln_tensor_nbytes(direct)) == 0,
              "direct and general differ");
    kiln_scope_end(cx);
}

Test(pool_direct, rows_and_channels_beyond_one_block) {
    /* More than 256 outputs per row (channels first) and 256 channels (channels last): the
     * kernels work in blocks of 256. */
    kiln_ctx *cx = test_ctx();
    kiln_window_params wide = {.window_dimensions = KILN_DIMS(1, 1, 2, 2),
                               .window_strides = KILN_DIMS(1, 1, 1, 2),
                               .padding_low = KILN_DIMS(0, 0, 0, 1),
                               .padding_high = KILN_DIMS(0, 0, 1, 0)};
    kiln_window_params deep = {.window_dimensions = KILN_DIMS(1, 2, 2, 1),
                               .window_strides = KILN_DIMS(1, 2, 1, 1),
                               .padding_low = KILN_DIMS(0, 1, 0, 0),
                               .padding_high = KILN_DIMS(0, 0, 0, 0)};
    for (int dti = 0; dti < 2; dti++) {
        kiln_dtype dt = dti ? KILN_F64 : KILN_F32;
        compare_once(cx, dt, KILN_SHAPE(1, 2, 3, 601), wide, kiln_region_maximum(), -INFINITY);
        compare_once(cx, dt, KILN_SHAPE(1, 2, 3, 601), wide, kiln_region_add(), 0.5);
        compare_once(cx, dt, KILN_SHAPE(2, 3, 3, 300), deep, kiln_region_maximum(), 2.0);
        compare_once(cx, dt, KILN_SHAPE(2, 3, 3, 300), deep, kiln_region_add(), 0.0);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(pool_direct, hand_checked_max_and_sum) {
    kiln_ctx *cx = test_ctx();
    /* One 4x4 plane, 2x2 windows, stride 2; and 3x3 windows, padding 1, for the sum. */
    float v[16] = {1, 5, -2, 0, 3, -1, 7, NAN, -0.0f, -4, 2, 2, 6, -3, 1, -5};
    kiln_tensor *x = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(1, 1, 4, 4), v, sizeof v);
    kiln_window_params p = {.window_dimensions = KILN_DIMS(1, 1, 2, 2),
                            .window_strides = KILN_DIMS(1, 1, 2, 2)};
    kiln_tensor *ninf = kiln_scalar(cx, -INFINITY, KILN_F32), *m = NULL;
    cr_assert_eq(kiln_reduce_window(cx, &x, &ninf, 1, &p, kiln_region_maximum(), &m), KILN_OK);
    const float *r = kiln_tensor_data(m);
    cr_assert_eq(r[0], 5.0f);
    cr_assert(isnan(r[1]), "NaN propagates");
    cr_assert_eq(r[2], 6.0f);
    cr_assert_eq(r[3], 2.0f);
    kiln_window_params q = {.window_dimensions = KILN_DIMS(1, 1, 3, 3),
                            .window_strides = KILN_DIMS(1, 1, 3, 3),
                            .padding_low = KILN_DIMS(0, 0, 1, 1)};
    kiln_tensor *one = kiln_scalar(cx, 1, KILN_F32), *s = NULL;
    cr_assert_eq(kiln_reduce_window(cx, &x, &one, 1, &q, kiln_region_add(), &s), KILN_OK);
    cr_assert_eq(kiln_tensor_numel(s), 1);
    /* Window rows -1..1, columns -1..1: 5 padding elements (init 1 each) + the init + 1, 5,
     * 3, -1. */
    cr_assert_eq(((const float *)kiln_tensor_data(s))[0], 1.0f + 5.0f + 1 + 5 + 3 - 1);
    expect_ok(cx);
    kiln_ctx_release(cx);
}
