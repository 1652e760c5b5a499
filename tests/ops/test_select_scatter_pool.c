/* SPDX-License-Identifier: Apache-2.0 */
/* select_and_scatter as max (or min) pooling's gradient: rank-4 f32/f64 channels first or
 * channels last (what layout assignment makes of a convolution chain), windows that do not overlap, a builtin comparison and add take a direct kernel
 * (eval_reduce_window.c); it must give the general loop's results bit for bit. The
 * reference below is the spec's loop written out: for each source element, the window's
 * elements in row-major order, the selected one replaced whenever select(selected,
 * current) is false, then result[selected] = scatter(result[selected], source), from init
 * everywhere. Values come from a small set, so windows hold ties (which of equal maxima is
 * selected differs between >= and >), and include NaN and both zeros. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static uint32_t rng = 0x9e3779b9u;

static double next_value(void) {
    static const double pool[] = {0.0, -0.0, 1.0, 2.0, 2.0, -1.5, 3.25, NAN};
    rng = rng * 1664525u + 1013904223u;
    return pool[(rng >> 16) % 8];
}

typedef enum { GE, GT, LE, LT } sel_kind;

static bool keep(sel_kind k, double a, double b) {
    return k == GE ? a >= b : k == GT ? a > b : k == LE ? a <= b : a < b;
}

static const kiln_region *region_of(sel_kind k) {
    return k == GE   ? kiln_region_greater_equal()
           : k == GT ? kiln_region_greater()
           : k == LE ? kiln_region_less_equal()
                     : kiln_region_less();
}

/* The spec's loop (windows at strides sh, sw, no padding), in dtype dt's arithmetic. */
static void reference(kiln_dtype dt, const double *x, const double *src, double init, int64_t N,
                      int64_t C, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t sh,
                      int64_t sw, int64_t OH, int64_t OW, sel_kind k, double *out) {
    for (int64_t i = 0; i < N * C * H * W; i++)
        out[i] = init;
    for (int64_t p = 0; p < N * C; p++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t sel = -1;
                for (int64_t a = 0; a < kh; a++)
                    for (int64_t b = 0; b < kw; b++) {
                        int64_t c = p * H * W + (oh * sh + a) * W + ow * sw + b;
                        if (sel < 0 || !keep(k, x[sel], x[c])) sel = c;
                    }
                double s = src[(p * OH + oh) * OW + ow];
                out[sel] = dt == KILN_F32 ? (double)((float)out[sel] + (float)s) : out[sel] + s;
            }
}

static kiln_tensor *make(kiln_ctx *cx, kiln_dtype dt, kiln_shape shape, const double *v) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    size_t es = kiln_dtype_size(dt);
    unsigned char *buf = malloc((size_t)n * es + 1);
    for (int64_t i = 0; i < n; i++) {
        if (dt == KILN_F32) {
            float f = (float)v[i];
            memcpy(buf + i * es, &f, es);
        } else {
            memcpy(buf + i * es, &v[i], es);
        }
    }
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, shape, buf, (size_t)n * es);
    free(buf);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

/* Same bits, any NaN for any NaN. */
static bool same(kiln_dtype dt, const void *got, double want) {
    if (dt == KILN_F32) {
        float g, w = (float)want;
        memcpy(&g, got, 4);
        return (isnan(g) && isnan(w)) || memcmp(&g, &w, 4) == 0;
    }
    double g;
    memcpy(&g, got, 8);
    return (isnan(g) && isnan(want)) || memcmp(&g, &want, 8) == 0;
}

/* [N, C, H, W] in row-major order as [N, H, W, C]. */
static double *channels_last(const double *v, int64_t N, int64_t C, int64_t H, int64_t W) {
    double *r = malloc(sizeof(double) * (size_t)(N * C * H * W));
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < H * W; i++)
                r[(n * H * W + i) * C + c] = v[(n * C + c) * H * W + i];
    return r;
}

/* The case on [N, C, H, W] data, or with `last` on the same data laid out [N, H, W, C]
 * (the window over dimensions 1 and 2). */
static void check_case_in(kiln_ctx *cx, kiln_dtype dt, int64_t N, int64_t C, int64_t H, int64_t W,
                          int64_t kh, int64_t kw, int64_t sh, int64_t sw, sel_kind k, double init,
                          bool last) {
    int64_t OH = (H - kh) / sh + 1, OW = (W - kw) / sw + 1, n = N * C * H * W;
    double *x = malloc(sizeof(double) * (size_t)n), *src = malloc(sizeof(double) * N * C * OH * OW);
    double *want = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        x[i] = next_value();
    for (int64_t i = 0; i < N * C * OH * OW; i++)
        src[i] = next_value() + (double)(i % 5);
    reference(dt, x, src, init, N, C, H, W, kh, kw, sh, sw, OH, OW, k, want);
    kiln_scope_begin(cx);
    kiln_window_params p = {.window_dimensions = KILN_DIMS(1, 1, kh, kw),
                            .window_strides = KILN_DIMS(1, 1, sh, sw)};
    kiln_tensor *xt, *st;
    if (last) {
        double *xl = channels_last(x, N, C, H, W), *sl = channels_last(src, N, C, OH, OW);
        double *wl = channels_last(want, N, C, H, W);
        xt = make(cx, dt, KILN_SHAPE(N, H, W, C), xl);
        st = make(cx, dt, KILN_SHAPE(N, OH, OW, C), sl);
        memcpy(want, wl, sizeof(double) * (size_t)n);
        free(xl), free(sl), free(wl);
        p = (kiln_window_params){.window_dimensions = KILN_DIMS(1, kh, kw, 1),
                                 .window_strides = KILN_DIMS(1, sh, sw, 1)};
    } else {
        xt = make(cx, dt, KILN_SHAPE(N, C, H, W), x);
        st = make(cx, dt, KILN_SHAPE(N, C, OH, OW), src);
    }
    kiln_tensor *r = kiln_select_and_scatter(cx, xt, st, kiln_scalar(cx, init, dt), &p,
                                             region_of(k), kiln_region_add());
    cr_assert_not_null(r, "%s", kiln_ctx_error_message(cx));
    const unsigned char *got = kiln_tensor_data(r);
    size_t es = kiln_dtype_size(dt);
    for (int64_t i = 0; i < n; i++)
        cr_assert(same(dt, got + i * es, want[i]),
                  "%s %lldx%lldx%lldx%lld%s window %lldx%lld stride %lldx%lld select %d init "
                  "%g: element %lld",
                  kiln_dtype_name(dt), (long long)N, (long long)C, (long long)H, (long long)W,
                  last ? " (channels last)" : "", (long long)kh, (long long)kw, (long long)sh,
                  (long long)sw, (int)k, init, (long long)i);
    kiln_scope_end(cx);
    free(x), free(src), free(want);
}

static void check_case(kiln_ctx *cx, kiln_dtype dt, int64_t N, int64_t C, int64_t H, int64_t W,
                       int64_t kh, int64_t kw, int64_t sh, int64_t sw, sel_kind k, double init) {
    check_case_in(cx, dt, N, C, H, W, kh, kw, sh, sw, k, init, false);
    check_case_in(cx, dt, N, C, H, W, kh, kw, sh, sw, k, init, true);
}

Test(select_scatter_pool, pooling_gradients_match_the_spec_loop_bit_for_bit) {
    kiln_ctx *cx = test_ctx();
    /* widths of 16 and more take the 2 x 2 kernel's eight windows a step, the rest its
     * tail; channels last, 8 and more channels take eight at a step, the rest the tail */
    const int64_t shapes[][4] = {{2, 3, 8, 8},  {1, 2, 7, 9}, {3, 1, 4, 6},
                                 {1, 4, 1, 5},  {2, 2, 6, 40}, {1, 3, 5, 17},
                                 {2, 19, 6, 7}, {1, 8, 5, 4}};
    const int64_t windows[][2] = {{2, 2}, {3, 3}, {2, 3}, {1, 2}, {1, 1}};
    for (int dt = 0; dt < 2; dt++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++)
                for (int k = 0; k < 4; k++) {
                    const int64_t *sh = shapes[s], kh = windows[w][0], kw = windows[w][1];
                    if (kh > sh[2] || kw > sh[3]) continue;
                    /* windows at their own size (the direct kernel), and overlapping ones
                     * at stride 1 (the general loop) */
                    check_case(cx, dt ? KILN_F64 : KILN_F32, sh[0], sh[1], sh[2], sh[3], kh, kw,
                               kh, kw, (sel_kind)k, k % 2 ? 1.5 : 0.0);
                    check_case(cx, dt ? KILN_F64 : KILN_F32, sh[0], sh[1], sh[2], sh[3], kh, kw,
                               1, 1, (sel_kind)k, 0.0);
                }
    expect_ok(cx);
    kiln_ctx_release(cx);
}
