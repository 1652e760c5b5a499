/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU backend's streaming GEMV (kiln__gemv_f32), its batched transposes
 * (kiln__transpose_f32) and the oneDNN convolution path that uses them: results against
 * scalar references computed here (the GEMV bit for bit: each output is one chain of fused
 * multiply-adds in row order), the same bits on 1, 2 and 3 threads, signed zeros, NaN, and
 * out-of-memory in the convolution's own buffers. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/eval/eval.h"
#include "backends/cpu/eval/eval_linalg.h"
#include "backends/cpu/lib/dense_f32.h"
#include "base/threads.h"
#include "failing_allocator.h"
#include "test_util.h"

static uint64_t rng = 0x2545F4914F6CDD1DULL;

static float rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float *rnd_buf(int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    cr_assert_not_null(p);
    for (int64_t i = 0; i < n; i++)
        p[i] = rnd();
    return p;
}

/* y[j] = x[0] m[0][j], then fmaf(x[i], m[i][j], y[j]) for i = 1 .. k-1. */
static void gemv_reference(const float *x, int64_t incx, const float *m, int64_t ld, int64_t k,
                           int64_t n, float *y) {
    for (int64_t j = 0; j < n; j++) {
        float acc = k > 0 ? x[0] * m[j] : 0.0f;
        for (int64_t i = 1; i < k; i++)
            acc = fmaf(x[i * incx], m[i * ld + j], acc);
        y[j] = acc;
    }
}

/* ---- GEMV ----------------------------------------------------------------------------- */

Test(cpu_layout_kernels, gemv_is_the_fma_chain_on_every_thread_count) {
    if (!kiln__gemv_f32_available()) cr_skip_test("no AVX2/FMA on this CPU");
    static const int64_t ks[] = {1, 2, 3, 4, 5, 9, 300, 2049};
    static const int64_t ns[] = {1, 7, 8, 31, 33, 255, 257, 1000};
    for (size_t a = 0; a < sizeof ks / sizeof ks[0]; a++)
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
            int64_t k = ks[a], n = ns[b], ld = n + (int64_t)(b % 3), incx = 1 + (int64_t)(a % 2);
            float *m = rnd_buf(k * ld), *x = rnd_buf(k * incx);
            float *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
            cr_assert(want && got);
            gemv_reference(x, incx, m, ld, k, n, want);
            for (int t = 1; t <= 3; t++) {
                kiln__threads_set_count(t);
                memset(got, 0xff, (size_t)n * sizeof *got);
                kiln__gemv_f32(x, incx, m, ld, k, n, got);
                cr_assert(memcmp(got, want, (size_t)n * sizeof *got) == 0,
                          "k %lld n %lld, %d threads: differs from the fma chain", (long long)k,
                          (long long)n, t);
            }
            free(m), free(x), free(want), free(got);
        }
    kiln__threads_set_count(0);
}

Test(cpu_layout_kernels, gemv_edge_values) {
    if (!kiln__gemv_f32_available()) cr_skip_test("no AVX2/FMA on this CPU");
    /* One row: a product, so -1 * 0 is -0 (a chain started from +0 would give +0). */
    float m1[40], x1 = -1.0f, y1[40];
    for (int j = 0; j < 40; j++)
        m1[j] = j % 2 ? 0.0f : (float)j;
    kiln__gemv_f32(&x1, 1, m1, 40, 1, 40, y1);
    for (int j = 0; j < 40; j++) {
        cr_assert_eq(y1[j], -m1[j]);
        cr_assert(signbit(y1[j]), "element %d", j);
    }
    /* NaN and infinities propagate; inf - inf is NaN. */
    float m2[2 * 9] = {0}, x2[2] = {1.0f, 1.0f}, y2[9];
    m2[0] = NAN, m2[1] = INFINITY, m2[2] = INFINITY, m2[9 + 2] = -INFINITY, m2[9 + 3] = 5.0f;
    kiln__gemv_f32(x2, 1, m2, 9, 2, 9, y2);
    cr_assert(isnan(y2[0]));
    cr_assert(isinf(y2[1]) && y2[1] > 0);
    cr_assert(isnan(y2[2]));
    cr_assert_eq(y2[3], 5.0f);
    /* No rows: zeros; no columns: nothing written. */
    float y3[3] = {7, 7, 7};
    kiln__gemv_f32(x2, 1, m2, 9, 0, 3, y3);
    cr_assert(y3[0] == 0.0f && y3[1] == 0.0f && y3[2] == 0.0f);
    kiln__gemv_f32(x2, 1, m2, 9, 2, 0, y3);
    cr_assert_eq(y3[0], 0.0f);
}

Test(cpu_layout_kernels, matmul_of_a_vector_takes_the_gemv) {
    /* x[1, K] @ W[K, N], and W contracted with x[K, 1] over K, through the public API: the
     * fma chain, bit for bit, when the CPU has FMA; within rounding of a double sum
     * otherwise. */
    kiln_ctx *cx = test_ctx();
    enum { K = 700, N = 300 };
    float *w = rnd_buf(K * N), *x = rnd_buf(K), *want = malloc(N * sizeof *want);
    cr_assert_not_null(want);
    gemv_reference(x, 1, w, N, K, N, want);
    kiln_tensor *tx = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(1, K), x, K * 4);
    kiln_tensor *tw = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(K, N), w, K * N * 4);
    kiln_tensor *row = kiln_matmul(cx, tx, tw);
    /* W contracted over its first dimension with x[K, 1]: M x with M read transposed. */
    kiln_dot_params dp = {.lhs_contracting_dims = KILN_DIMS(0),
                          .rhs_contracting_dims = KILN_DIMS(0)};
    kiln_tensor *col =
        kiln_dot_general(cx, tw, kiln_reshape(cx, tx, KILN_SHAPE(K, 1)), &dp, KILN_DTYPE_COUNT);
    expect_ok(cx);
    float got[2][N];
    cr_assert_eq(kiln_tensor_to_host(cx, row, got[0], sizeof got[0]), KILN_OK);
    cr_assert_eq(kiln_tensor_to_host(cx, col, got[1], sizeof got[1]), KILN_OK);
    for (int v = 0; v < 2; v++)
        for (int64_t j = 0; j < N; j++) {
            double ref = 0, mag = 0;
            for (int64_t i = 0; i < K; i++)
                ref += (double)x[i] * w[i * N + j], mag += fabs((double)x[i] * w[i * N + j]);
            cr_assert(fabs(got[v][j] - ref) <= 1e-6 * mag + 1e-30, "%d %lld", v, (long long)j);
            if (kiln__gemv_f32_available())
                cr_assert(memcmp(&got[v][j], &want[j], 4) == 0, "variant %d, column %lld", v,
                          (long long)j);
        }
    free(w), free(x), free(want);
    kiln_ctx_release(cx);
}

/* ---- transposes ----------------------------------------------------------------------- */

static void check_transpose(int64_t batch, int64_t rows, int64_t cols, int64_t group) {
    int64_t mat = rows * cols, extra = 5; /* the batch stride leaves a gap */
    float *src = rnd_buf(batch * (mat + extra));
    float *dst = malloc((size_t)(batch * (mat + extra)) * sizeof *dst);
    cr_assert_not_null(dst);
    for (int t = 1; t <= 3; t++) {
        kiln__threads_set_count(t);
        memset(dst, 0, (size_t)(batch * (mat + extra)) * sizeof *dst);
        kiln__transpose_f32(src, dst, batch, rows, cols, group, mat + extra, mat + extra);
        int64_t inner = cols / group;
        for (int64_t b = 0; b < batch; b++)
            for (int64_t r = 0; r < rows; r++)
                for (int64_t c = 0; c < cols; c++) {
                    /* Column c = (i, g) of [inner][group] lands on row g * inner + i. */
                    int64_t drow = (c % group) * inner + c / group;
                    float s = src[b * (mat + extra) + r * cols + c];
                    float d = dst[b * (mat + extra) + drow * rows + r];
                    cr_assert(memcmp(&s, &d, 4) == 0,
                              "batch %lld rows %lld cols %lld group %lld, %d threads: [%lld] "
                              "(%lld, %lld)",
                              (long long)batch, (long long)rows, (long long)cols, (long long)group,
                              t, (long long)b, (long long)r, (long long)c);
                }
        for (int64_t b = 0; b < batch; b++)
            for (int64_t e = 0; e < extra; e++)
                cr_assert_eq(dst[b * (mat + extra) + mat + e], 0.0f, "wrote past a matrix");
    }
    kiln__threads_set_count(0);
    free(src), free(dst);
}

Test(cpu_layout_kernels, transposes_match_the_index_formula) {
    check_transpose(1, 1, 1, 1);
    check_transpose(2, 3, 5, 1);
    check_transpose(1, 16, 16, 1);
    check_transpose(3, 17, 33, 1);
    check_transpose(2, 64, 300, 1); /* NCHW -> NHWC */
    check_transpose(1, 784, 48, 1); /* NHWC -> NCHW */
    check_transpose(4, 100, 16, 1); /* NC/16HW16c -> NCHW */
    check_transpose(2, 600, 16, 1);
    check_transpose(1, 513, 48, 1);
    check_transpose(2, 32, 27, 9);  /* OIHW -> O/32 HWI 32o, 3 inputs */
    check_transpose(2, 16, 144, 9); /* 16 inputs: whole tiles */
    check_transpose(1, 64, 40, 4);
}

Test(cpu_layout_kernels, transpose_ignores_bad_groups) {
    float src[12], dst[12];
    for (int i = 0; i < 12; i++)
        src[i] = (float)i, dst[i] = -1.0f;
    kiln__transpose_f32(src, dst, 1, 2, 6, 4, 12, 12); /* 4 does not divide 6 */
    kiln__transpose_f32(src, dst, 1, 2, 6, 0, 12, 12);
    kiln__transpose_f32(src, dst, 0, 2, 6, 1, 12, 12);
    for (int i = 0; i < 12; i++)
        cr_assert_eq(dst[i], -1.0f);
}

/* ---- oneDNN convolutions with the transposes ------------------------------------------ */

/* NCHW input, OIHW weights, stride 1, padding 1 (VGG's layers): the first layer's 3 input
 * channels (an input read in place, a blocked result), a layer with 64 outputs (weights in
 * blocks of 64 or 32), and one whose output count no weight block divides. */
typedef struct conv_case {
    int64_t n, c, hw, o;
} conv_case;

/* The last one is large enough (75 M multiply-adds) for oneDNN to run it on every thread
 * (DNNL_PAR_MACS); the others run on one. */
static const conv_case conv_cases[] = {
    {1, 3, 30, 64}, {2, 16, 20, 64}, {1, 32, 9, 40}, {2, 64, 32, 64}};

static kiln_tensor *conv_of(kiln_ctx *cx, const conv_case *k, kiln_tensor *x, kiln_tensor *w) {
    (void)k;
    kiln_conv_params p = kiln_conv_params_nchw(2);
    p.padding_low = p.padding_high = KILN_DIMS(1, 1);
    return kiln_convolution(cx, x, w, &p, KILN_DTYPE_COUNT);
}

static void conv_inputs(kiln_ctx *cx, const conv_case *k, kiln_tensor **x, kiln_tensor **w) {
    int64_t nx = k->n * k->c * k->hw * k->hw, nw = k->o * k->c * 9;
    float *bx = rnd_buf(nx), *bw = rnd_buf(nw);
    *x = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(k->n, k->c, k->hw, k->hw), bx, nx * 4);
    *w = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(k->o, k->c, 3, 3), bw, nw * 4);
    free(bx), free(bw);
    cr_assert(*x && *w, "%s", kiln_ctx_error_message(cx));
}

static void expect_near(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b, double tol, int which) {
    int64_t n = kiln_tensor_numel(a);
    cr_assert_eq(n, kiln_tensor_numel(b));
    float *va = malloc((size_t)n * 4), *vb = malloc((size_t)n * 4);
    cr_assert(va && vb);
    cr_assert_eq(kiln_tensor_to_host(cx, a, va, (size_t)n * 4), KILN_OK);
    cr_assert_eq(kiln_tensor_to_host(cx, b, vb, (size_t)n * 4), KILN_OK);
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabsf(va[i] - vb[i]) <= tol, "case %d, element %lld: %.9g vs %.9g", which,
                  (long long)i, va[i], vb[i]);
    free(va), free(vb);
}

Test(cpu_layout_kernels, onednn_vgg_layers_match_im2col) {
    kiln_ctx *cx = test_ctx();
    kiln__dnnl_conv_any_size(true);
    for (int i = 0; i < (int)(sizeof conv_cases / sizeof conv_cases[0]); i++) {
        const conv_case *k = &conv_cases[i];
        kiln_scope_begin(cx);
        kiln_tensor *x, *w;
        conv_inputs(cx, k, &x, &w);
        kiln_tensor *fast = conv_of(cx, k, x, w);
        kiln__dnnl_conv_force_off(true);
        kiln_tensor *ref = conv_of(cx, k, x, w);
        kiln__dnnl_conv_force_off(false);
        /* At most 32 * 9 products in [-1, 1) per sum. */
        expect_near(cx, fast, ref, 1e-4, i);
        /* The same through a workspace of the call's own. */
        kiln__dnnl_conv_no_workspace(true);
        kiln_tensor *own = conv_of(cx, k, x, w);
        kiln__dnnl_conv_no_workspace(false);
        expect_near(cx, own, fast, 0.0, i);
        kiln_scope_end(cx);
    }
    kiln__dnnl_conv_any_size(false);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(cpu_layout_kernels, onednn_same_bits_on_every_thread_count) {
    kiln_ctx *cx = test_ctx();
    for (int i = 0; i < (int)(sizeof conv_cases / sizeof conv_cases[0]); i++) {
        const conv_case *k = &conv_cases[i];
        kiln_scope_begin(cx);
        kiln_tensor *x, *w;
        conv_inputs(cx, k, &x, &w);
        kiln__threads_set_count(1);
        kiln_tensor *one = conv_of(cx, k, x, w);
        for (int t = 2; t <= 3; t++) {
            kiln__threads_set_count(t);
            expect_near(cx, conv_of(cx, k, x, w), one, 0.0, i);
        }
        kiln_scope_end(cx);
    }
    kiln__threads_set_count(0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

typedef struct conv_thread {
    const conv_case *k;
    kiln_tensor *x, *w, *out;
    kiln_ctx *cx;
} conv_thread;

static void *conv_on_thread(void *user) {
    conv_thread *t = user;
    for (int r = 0; r < 5; r++) {
        kiln_tensor *o = conv_of(t->cx, t->k, t->x, t->w);
        kiln_tensor_release(t->out);
        t->out = kiln_tensor_retain(o);
    }
    return NULL;
}

Test(cpu_layout_kernels, onednn_threads_calling_at_once_get_their_own_workspace) {
    /* Each caller thread has its own ctx and workspace; results equal a serial call. */
    kiln_ctx *cx = test_ctx();
    const conv_case *k = &conv_cases[1];
    kiln_tensor *x, *w;
    conv_inputs(cx, k, &x, &w);
    kiln_tensor *want = conv_of(cx, k, x, w);
    conv_thread t[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        t[i] = (conv_thread){.k = k, .x = x, .w = w, .out = NULL, .cx = test_ctx()};
        cr_assert_eq(pthread_create(&th[i], NULL, conv_on_thread, &t[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        cr_assert_not_null(t[i].out, "%s", kiln_ctx_error_message(t[i].cx));
        expect_near(cx, t[i].out, want, 0.0, i);
        kiln_tensor_release(t[i].out);
        kiln_ctx_release(t[i].cx);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(cpu_layout_kernels, onednn_out_of_memory_for_its_buffers) {
    /* Without the workspace, the reorder buffers come from the ctx's allocator; when it
     * fails, the call reports RESOURCE_EXHAUSTED and leaks nothing. */
    if (!kiln__dnnl_conv_available()) cr_skip_test("built without oneDNN");
    kiln_ctx *cx = test_ctx();
    const conv_case *k = &conv_cases[1];
    kiln_tensor *x, *w;
    conv_inputs(cx, k, &x, &w);
    kiln_conv_params p = kiln_conv_params_nchw(2);
    p.padding_low = p.padding_high = KILN_DIMS(1, 1);
    kiln__attrs at = {.u.conv = p, .result_dtype = KILN_F32};
    kiln_tensor *want = conv_of(cx, k, x, w);
    kiln_tensor *dst = kiln_zeros(cx, KILN_F32, *kiln_tensor_shape(want));
    failing_allocator fa;
    kiln_ctx *fcx = failing_allocator_ctx(&fa);
    cr_assert_not_null(fcx);
    int64_t live = fa.live_blocks;
    kiln__dnnl_conv_no_workspace(true);
    fa.fail_after = fa.allocations; /* every allocation from here on fails */
    kiln_status st = KILN_OK;
    bool taken = kiln__dnnl_conv(fcx, &at, x, w, NULL, dst, &st);
    kiln__dnnl_conv_no_workspace(false);
    cr_assert(taken);
    cr_assert_eq(st, KILN_RESOURCE_EXHAUSTED);
    expect_error(fcx, KILN_RESOURCE_EXHAUSTED, "convolution");
    cr_assert_eq(fa.live_blocks, live, "a buffer leaked");
    /* With the workspace, the call needs nothing from the allocator and gets the result. */
    taken = kiln__dnnl_conv(fcx, &at, x, w, NULL, dst, &st);
    cr_assert(taken);
    cr_assert_eq(st, KILN_OK, "%s", kiln_ctx_error_message(fcx));
    expect_near(cx, dst, want, 0.0, 0);
    kiln_ctx_release(fcx);
    kiln_ctx_release(cx);
}

/* ---- 2 x 2 max pooling ---------------------------------------------------------------- */

/* Mostly ordinary values, with NaN of both signs, -0, +0 and ties. */
static float pool_value(void) {
    float v = rnd();
    switch (rng % 17) {
    case 0: return NAN;
    case 1: return -NAN;
    case 2: return -0.0f;
    case 3: return 0.0f;
    case 4: return 0.5f;
    default: return v;
    }
}

/* Max pooling 2 x 2 at stride 2 of an NCHW image (the vectorized kernel), against the same
 * data seen as rank 5, which the general reduce_window loops take: the same bits. */
static void check_pool2(kiln_ctx *cx, int64_t c, int64_t h, int64_t w, float init_v) {
    kiln_scope_begin(cx);
    int64_t n = 2 * c * h * w;
    float *b = malloc((size_t)n * sizeof *b);
    cr_assert_not_null(b);
    for (int64_t i = 0; i < n; i++)
        b[i] = pool_value();
    kiln_tensor *x = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, c, h, w), b, n * 4);
    free(b);
    kiln_tensor *init = kiln_scalar(cx, init_v, KILN_F32);
    kiln_window_params p = {.window_dimensions = KILN_DIMS(1, 1, 2, 2),
                            .window_strides = KILN_DIMS(1, 1, 2, 2),
                            .padding_low = KILN_DIMS(0, 0, 0, 0),
                            .padding_high = KILN_DIMS(0, 0, 0, 0)};
    kiln_window_params p5 = {.window_dimensions = KILN_DIMS(1, 1, 2, 2, 1),
                             .window_strides = KILN_DIMS(1, 1, 2, 2, 1),
                             .padding_low = KILN_DIMS(0, 0, 0, 0, 0),
                             .padding_high = KILN_DIMS(0, 0, 0, 0, 0)};
    kiln_tensor *x5 = kiln_reshape(cx, x, KILN_SHAPE(2, c, h, w, 1));
    kiln_tensor *direct = NULL, *general = NULL;
    cr_assert_eq(kiln_reduce_window(cx, &x, &init, 1, &p, kiln_region_maximum(), &direct), KILN_OK,
                 "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_reduce_window(cx, &x5, &init, 1, &p5, kiln_region_maximum(), &general),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_nbytes(direct), kiln_tensor_nbytes(general));
    cr_assert(memcmp(kiln_tensor_data(direct), kiln_tensor_data(general),
                     kiln_tensor_nbytes(direct)) == 0,
              "%lld x %lld x %lld, init %g: direct and general differ", (long long)c, (long long)h,
              (long long)w, init_v);
    kiln_scope_end(cx);
}

Test(cpu_layout_kernels, max_pool_2x2_matches_the_general_kernel) {
    kiln_ctx *cx = test_ctx();
    static const int64_t sizes[][3] = {{1, 2, 16}, {3, 5, 17}, {2, 8, 35}, {4, 7, 64}, {1, 3, 3}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        check_pool2(cx, sizes[i][0], sizes[i][1], sizes[i][2], -INFINITY);
        check_pool2(cx, sizes[i][0], sizes[i][1], sizes[i][2], 0.25f);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}
