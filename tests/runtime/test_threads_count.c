/* SPDX-License-Identifier: Apache-2.0 */
/* The thread pool: how the count is chosen (ctx option, KILN_NUM_THREADS, default), how
 * kiln__parallel_for splits work, and that the threaded kernels (dot_general, convolution
 * through oneDNN or im2col, the fused convolution + bias + relu, pooling) give bitwise the
 * same results on 1, 2 and 3 threads. Each test runs in its own process, so changing the
 * process-wide count does not leak into other tests. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "backends/cpu/eval/eval_linalg.h"
#include "base/threads.h"
#include "test_util.h"

/* Whether kiln was built with OpenMP: only then does a count above 1 stick. */
static bool threaded(void) {
    int before = kiln__threads_count();
    kiln__threads_set_count(2);
    bool r = kiln__threads_count() == 2;
    kiln__threads_set_count(before);
    return r;
}

/* ---- the count ------------------------------------------------------------------------ */

Test(threads_count, ctx_option_sets_the_process_count) {
    kiln_ctx_options o = kiln_ctx_options_default();
    cr_assert_eq(o.num_threads, 0);
    o.num_threads = 3;
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    cr_assert_eq(kiln__threads_count(), threaded() ? 3 : 1);
    /* 0 leaves the count as it is. */
    kiln_ctx *cx2 = NULL;
    o.num_threads = 0;
    cr_assert_eq(kiln_ctx_create(&o, &cx2), KILN_OK);
    cr_assert_eq(kiln__threads_count(), threaded() ? 3 : 1);
    kiln_ctx_release(cx2);
    kiln_ctx_release(cx);
}

Test(threads_count, negative_option_is_rejected) {
    kiln_ctx_options o = kiln_ctx_options_default();
    o.num_threads = -1;
    kiln_ctx *cx = (kiln_ctx *)&o; /* must be overwritten with NULL */
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_INVALID_ARGUMENT);
    cr_assert_null(cx);
}

Test(threads_count, options_from_before_num_threads_are_accepted) {
    kiln__threads_set_count(2);
    int before = kiln__threads_count();
    kiln_ctx_options o = kiln_ctx_options_default();
    o.num_threads = 7; /* beyond struct_size: must not be read */
    o.struct_size = offsetof(kiln_ctx_options, num_threads);
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    cr_assert_eq(kiln__threads_count(), before);
    kiln_ctx_release(cx);
}

Test(threads_count, environment_and_default) {
    unsetenv("KILN_NUM_THREADS");
    kiln__threads_set_count(0);
    int dflt = kiln__threads_count();
    cr_assert_geq(dflt, 1);
    setenv("KILN_NUM_THREADS", "5", 1);
    kiln__threads_set_count(0);
    cr_assert_eq(kiln__threads_count(), threaded() ? 5 : 1);
    /* Not a positive integer: ignored. */
    const char *bad[] = {"0", "-2", "3x", "", "many"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("KILN_NUM_THREADS", bad[i], 1);
        kiln__threads_set_count(0);
        cr_assert_eq(kiln__threads_count(), dflt, "KILN_NUM_THREADS=\"%s\"", bad[i]);
    }
    unsetenv("KILN_NUM_THREADS");
}

/* ---- parallel_for --------------------------------------------------------------------- */

typedef struct cover {
    _Atomic int hits[1000];
    _Atomic int calls;
    int64_t min_len;
    _Atomic int nested_inline;
} cover;

static void mark(void *user, int64_t b, int64_t e) {
    cover *c = user;
    atomic_fetch_add(&c->calls, 1);
    cr_assert_lt(b, e);
    if (e - b < c->min_len) c->min_len = e - b; /* racy min is fine: any value seen is real */
    for (int64_t i = b; i < e; i++)
        atomic_fetch_add(&c->hits[i], 1);
}

/* Each outer range makes a nested call, which must run inline (one range). */
static void nested(void *user, int64_t b, int64_t e) {
    cover *c = user;
    (void)b, (void)e;
    atomic_fetch_add(&c->calls, 1);
    cover *cc = calloc(1, sizeof *cc);
    cr_assert_not_null(cc);
    cc->min_len = 1000;
    kiln__parallel_for(100, 1, mark, cc);
    if (atomic_load(&cc->calls) == 1 && atomic_load(&cc->hits[99]) == 1)
        atomic_fetch_add(&c->nested_inline, 1);
    free(cc);
}

Test(threads_count, parallel_for_covers_every_item_once) {
    int counts[] = {1, 2, 3, 4};
    for (size_t t = 0; t < sizeof counts / sizeof counts[0]; t++) {
        kiln__threads_set_count(counts[t]);
        int64_t sizes[] = {0, 1, 7, 999, 1000};
        int64_t grains[] = {1, 10, 400, 5000};
        for (size_t s = 0; s < 5; s++)
            for (size_t g = 0; g < 4; g++) {
                cover *c = calloc(1, sizeof *c);
                cr_assert_not_null(c);
                c->min_len = 1 << 30;
                kiln__parallel_for(sizes[s], grains[g], mark, c);
                for (int64_t i = 0; i < 1000; i++)
                    cr_assert_eq(atomic_load(&c->hits[i]), i < sizes[s] ? 1 : 0,
                                 "threads %d n %lld grain %lld: item %lld", counts[t],
                                 (long long)sizes[s], (long long)grains[g], (long long)i);
                int calls = atomic_load(&c->calls);
                cr_assert_leq(calls, counts[t]);
                if (sizes[s] > 0) {
                    cr_assert_geq(calls, 1);
                    /* Ranges hold at least `grain` items unless all of the work is smaller. */
                    if (calls > 1) cr_assert_geq(c->min_len, grains[g]);
                    if (sizes[s] < 2 * grains[g]) cr_assert_eq(calls, 1, "small work: inline");
                } else {
                    cr_assert_eq(calls, 0);
                }
                free(c);
            }
    }
}

Test(threads_count, nested_parallel_for_runs_inline) {
    kiln__threads_set_count(2);
    cover *c = calloc(1, sizeof *c);
    cr_assert_not_null(c);
    kiln__parallel_for(2, 1, nested, c);
    cr_assert_eq(atomic_load(&c->calls), threaded() ? 2 : 1);
    cr_assert_eq(atomic_load(&c->nested_inline), atomic_load(&c->calls));
    free(c);
}

/* ---- bitwise the same on 1, 2 and 3 threads --------------------------------------------- */

static int hook_calls, hook_last;
static void hook(int n) { hook_calls++, hook_last = n; }

Test(threads_count, count_changes_reach_the_registered_hook) {
    kiln__threads_set_count(3);
    hook_calls = 0;
    /* Registering when the count is known reports it at once. */
    kiln__threads_count_fn before = kiln__threads_on_count_change(hook);
    cr_assert_eq(hook_calls, 1);
    cr_assert_eq(hook_last, kiln__threads_count()); /* 3, or 1 without OpenMP */
    kiln__threads_set_count(2);
    cr_assert_eq(hook_calls, 2);
    cr_assert_eq(hook_last, kiln__threads_count());
    kiln__threads_set_count(0);
    cr_assert_eq(hook_calls, 3);
    cr_assert_eq(hook_last, kiln__threads_count());
    cr_assert_eq(kiln__threads_on_count_change(before), hook);
    kiln__threads_set_count(5);
    cr_assert_eq(hook_calls, 3, "a replaced hook is not called");
    kiln__threads_set_count(0);
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static float rnd_f32(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1);
}

static kiln_tensor *random_tensor(kiln_ctx *cx, kiln_dtype dt, kiln_shape s) {
    int64_t n = 1;
    for (int32_t d = 0; d < s.rank; d++)
        n *= s.dims[d];
    size_t es = kiln_dtype_size(dt);
    unsigned char *buf = malloc((size_t)n * es + 1);
    cr_assert_not_null(buf);
    for (int64_t i = 0; i < n; i++) {
        if (dt == KILN_F32) {
            float v = rnd_f32();
            memcpy(buf + i * 4, &v, 4);
        } else {
            double v = rnd_f32();
            memcpy(buf + i * 8, &v, 8);
        }
    }
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, s, buf, (size_t)n * es);
    free(buf);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

#define N_CASES 28

/* Runs every threaded kernel on fixed random inputs; results into out[]. */
static void run_all(kiln_ctx *cx, kiln_tensor **out) {
    rng = 0x9e3779b97f4a7c15ULL;
    int k = 0;
    /* dot_general: BLAS-sized (threaded inside BLAS), batched small (threaded over the
     * batch), transposed small (copied), tiny (loops), f64. */
    kiln_tensor *a = random_tensor(cx, KILN_F32, KILN_SHAPE(150, 260));
    kiln_tensor *b = random_tensor(cx, KILN_F32, KILN_SHAPE(260, 170));
    out[k++] = kiln_matmul(cx, a, b);
    kiln_tensor *ba = random_tensor(cx, KILN_F32, KILN_SHAPE(300, 10, 12));
    kiln_tensor *bb = random_tensor(cx, KILN_F32, KILN_SHAPE(300, 12, 9));
    out[k++] = kiln_matmul(cx, ba, bb);
    kiln_dot_params tp = {.lhs_batching_dims = KILN_DIMS(0),
                          .rhs_batching_dims = KILN_DIMS(0),
                          .lhs_contracting_dims = KILN_DIMS(1),
                          .rhs_contracting_dims = KILN_DIMS(2)};
    kiln_tensor *tb = random_tensor(cx, KILN_F32, KILN_SHAPE(300, 9, 12));
    out[k++] =
        kiln_dot_general(cx, kiln_transpose(cx, ba, KILN_DIMS(0, 2, 1)), tb, &tp, KILN_DTYPE_COUNT);
    kiln_tensor *t1 = random_tensor(cx, KILN_F32, KILN_SHAPE(500, 2, 2));
    kiln_tensor *t2 = random_tensor(cx, KILN_F32, KILN_SHAPE(500, 2, 2));
    out[k++] = kiln_matmul(cx, t1, t2);
    kiln_tensor *v = random_tensor(cx, KILN_F32, KILN_SHAPE(1, 3000));
    kiln_tensor *mv = random_tensor(cx, KILN_F32, KILN_SHAPE(3000, 2500));
    out[k++] = kiln_matmul(cx, v, mv); /* GEMV */
    kiln_tensor *vc = random_tensor(cx, KILN_F32, KILN_SHAPE(3000, 1));
    out[k++] = kiln_matmul(cx, kiln_transpose(cx, mv, KILN_DIMS(1, 0)), vc);
    kiln_tensor *da = random_tensor(cx, KILN_F64, KILN_SHAPE(4, 90, 80));
    kiln_tensor *db = random_tensor(cx, KILN_F64, KILN_SHAPE(4, 80, 70));
    out[k++] = kiln_matmul(cx, da, db);
    /* BLAS-sized products split into several chunks: along M, along N with both operands
     * transposed, and the f64 contraction over two dimensions that once differed in the
     * last bit between 1 and 2 threads. */
    kiln_tensor *ga = random_tensor(cx, KILN_F32, KILN_SHAPE(1100, 70));
    kiln_tensor *gb = random_tensor(cx, KILN_F32, KILN_SHAPE(70, 90));
    out[k++] = kiln_matmul(cx, ga, gb);
    kiln_tensor *gt = random_tensor(cx, KILN_F32, KILN_SHAPE(700, 70));
    out[k++] = kiln_matmul(cx, kiln_transpose(cx, gb, KILN_DIMS(1, 0)),
                           kiln_transpose(cx, gt, KILN_DIMS(1, 0)));
    kiln_dot_params dp = {.lhs_contracting_dims = KILN_DIMS(0, 2),
                          .rhs_contracting_dims = KILN_DIMS(2, 1)};
    kiln_tensor *fa = random_tensor(cx, KILN_F64, KILN_SHAPE(60, 61, 2));
    kiln_tensor *fb = random_tensor(cx, KILN_F64, KILN_SHAPE(19, 2, 60, 17));
    out[k++] = kiln_dot_general(cx, fa, fb, &dp, KILN_DTYPE_COUNT);
    /* convolution: NCHW 3x3 pad 1 (VGG-like), strided and dilated, grouped, NHWC, f64
     * (im2col). */
    kiln_tensor *x = random_tensor(cx, KILN_F32, KILN_SHAPE(2, 16, 24, 24));
    kiln_tensor *w = random_tensor(cx, KILN_F32, KILN_SHAPE(32, 16, 3, 3));
    kiln_conv_params p = kiln_conv_params_nchw(2);
    p.padding_low = p.padding_high = KILN_DIMS(1, 1);
    out[k++] = kiln_convolution(cx, x, w, &p, KILN_DTYPE_COUNT);
    kiln_conv_params ps = p;
    ps.window_strides = KILN_DIMS(2, 1);
    ps.rhs_dilation = KILN_DIMS(1, 2);
    out[k++] = kiln_convolution(cx, x, w, &ps, KILN_DTYPE_COUNT);
    kiln_conv_params pg = p;
    pg.feature_group_count = 4;
    kiln_tensor *wg = random_tensor(cx, KILN_F32, KILN_SHAPE(32, 4, 3, 3));
    out[k++] = kiln_convolution(cx, x, wg, &pg, KILN_DTYPE_COUNT);
    kiln_conv_params ph = {.input_batch_dimension = 0,
                           .input_feature_dimension = 3,
                           .input_spatial_dimensions = KILN_DIMS(1, 2),
                           .kernel_input_feature_dimension = 2,
                           .kernel_output_feature_dimension = 3,
                           .kernel_spatial_dimensions = KILN_DIMS(0, 1),
                           .output_batch_dimension = 0,
                           .output_feature_dimension = 3,
                           .output_spatial_dimensions = KILN_DIMS(1, 2),
                           .padding_low = KILN_DIMS(1, 1),
                           .padding_high = KILN_DIMS(1, 1)};
    kiln_tensor *xh = random_tensor(cx, KILN_F32, KILN_SHAPE(2, 24, 24, 16));
    kiln_tensor *wh = random_tensor(cx, KILN_F32, KILN_SHAPE(3, 3, 16, 32));
    out[k++] = kiln_convolution(cx, xh, wh, &ph, KILN_DTYPE_COUNT);
    kiln_tensor *xd = random_tensor(cx, KILN_F64, KILN_SHAPE(2, 8, 12, 12));
    kiln_tensor *wd = random_tensor(cx, KILN_F64, KILN_SHAPE(8, 8, 3, 3));
    out[k++] = kiln_convolution(cx, xd, wd, &p, KILN_DTYPE_COUNT);
    /* The smallest grouped convolution that once differed (3 groups, stride 2, padding
     * [0, 1]); a depthwise one, strided and padded; a VGG-sized layer and a strided padded
     * ungrouped one, both large enough for oneDNN. */
    kiln_tensor *x1 = random_tensor(cx, KILN_F32, KILN_SHAPE(1, 3, 2));
    kiln_tensor *w1 = random_tensor(cx, KILN_F32, KILN_SHAPE(6, 1, 3));
    kiln_conv_params p1 = kiln_conv_params_nchw(1);
    p1.window_strides = KILN_DIMS(2);
    p1.padding_low = KILN_DIMS(0);
    p1.padding_high = KILN_DIMS(1);
    p1.feature_group_count = 3;
    out[k++] = kiln_convolution(cx, x1, w1, &p1, KILN_DTYPE_COUNT);
    kiln_tensor *wdw = random_tensor(cx, KILN_F32, KILN_SHAPE(16, 1, 3, 3));
    kiln_conv_params pdw = p;
    pdw.window_strides = KILN_DIMS(2, 2);
    pdw.feature_group_count = 16;
    out[k++] = kiln_convolution(cx, x, wdw, &pdw, KILN_DTYPE_COUNT);
    kiln_tensor *xv = random_tensor(cx, KILN_F32, KILN_SHAPE(1, 64, 28, 28));
    kiln_tensor *wv = random_tensor(cx, KILN_F32, KILN_SHAPE(128, 64, 3, 3));
    out[k++] = kiln_convolution(cx, xv, wv, &p, KILN_DTYPE_COUNT);
    kiln_conv_params pv = p;
    pv.window_strides = KILN_DIMS(2, 2);
    pv.padding_low = KILN_DIMS(0, 1);
    pv.padding_high = KILN_DIMS(1, 2);
    out[k++] = kiln_convolution(cx, xv, wv, &pv, KILN_DTYPE_COUNT);
    /* im2col split over (group, batch entry): f64 with groups, f32 with input dilation. */
    kiln_tensor *xg = random_tensor(cx, KILN_F64, KILN_SHAPE(5, 8, 10, 10));
    kiln_tensor *wgd = random_tensor(cx, KILN_F64, KILN_SHAPE(8, 4, 3, 3));
    kiln_conv_params pgd = p;
    pgd.feature_group_count = 2;
    out[k++] = kiln_convolution(cx, xg, wgd, &pgd, KILN_DTYPE_COUNT);
    kiln_conv_params pl = p;
    pl.lhs_dilation = KILN_DIMS(2, 2);
    out[k++] = kiln_convolution(cx, x, w, &pl, KILN_DTYPE_COUNT);
    /* convolution + bias + relu */
    kiln_tensor *bias = random_tensor(cx, KILN_F32, KILN_SHAPE(32));
    kiln_tensor *cb = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2, 32, 24, 24));
    cb = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 32, 24, 24), kiln_tensor_data(cb),
                               kiln_tensor_nbytes(cb));
    cr_assert_not_null(cb);
    kiln__attrs at = {.u.conv = p, .result_dtype = KILN_F32};
    cr_assert_eq(kiln__cpu_conv_bias_act(cx, &at, x, w, bias, KILN__ACT_RELU, cb), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    out[k++] = cb;
    /* pooling: 2x2/2 max NCHW, 3x3/2 padded avg-sum NCHW, NHWC max, f64 */
    kiln_window_params mp = {.window_dimensions = KILN_DIMS(1, 1, 2, 2),
                             .window_strides = KILN_DIMS(1, 1, 2, 2)};
    kiln_tensor *ninf = kiln_scalar(cx, -INFINITY, KILN_F32), *zero = kiln_scalar(cx, 0, KILN_F32);
    kiln_tensor *big = random_tensor(cx, KILN_F32, KILN_SHAPE(4, 16, 40, 40));
    cr_assert_eq(kiln_reduce_window(cx, &big, &ninf, 1, &mp, kiln_region_maximum(), &out[k++]),
                 KILN_OK);
    kiln_window_params ap = {.window_dimensions = KILN_DIMS(1, 1, 3, 3),
                             .window_strides = KILN_DIMS(1, 1, 2, 2),
                             .padding_low = KILN_DIMS(0, 0, 1, 1),
                             .padding_high = KILN_DIMS(0, 0, 1, 1)};
    cr_assert_eq(kiln_reduce_window(cx, &big, &zero, 1, &ap, kiln_region_add(), &out[k++]),
                 KILN_OK);
    kiln_window_params hp = {.window_dimensions = KILN_DIMS(1, 2, 2, 1),
                             .window_strides = KILN_DIMS(1, 2, 2, 1)};
    cr_assert_eq(kiln_reduce_window(cx, &big, &ninf, 1, &hp, kiln_region_maximum(), &out[k++]),
                 KILN_OK);
    kiln_tensor *bigd = random_tensor(cx, KILN_F64, KILN_SHAPE(2, 8, 30, 30));
    kiln_tensor *zd = kiln_scalar(cx, 0, KILN_F64);
    cr_assert_eq(kiln_reduce_window(cx, &bigd, &zd, 1, &ap, kiln_region_add(), &out[k++]), KILN_OK);
    /* triangular_solve and cholesky (OpenBLAS's trsm and potrf, whose own threads follow
     * kiln's count) at sizes where they block and thread */
    enum { S = 600 };
    kiln_tensor *sq = random_tensor(cx, KILN_F64, KILN_SHAPE(S, S));
    const double *q = kiln_tensor_data(sq);
    double *h = malloc(sizeof(double) * S * S); /* q q^T + S I: positive definite */
    cr_assert_not_null(h);
    for (int i = 0; i < S; i++)
        for (int j = 0; j < S; j++) {
            double acc = i == j ? S : 0;
            for (int c = 0; c < S; c++)
                acc += q[i * S + c] * q[j * S + c];
            h[i * S + j] = acc;
        }
    kiln_tensor *spd =
        kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(S, S), h, sizeof(double) * S * S);
    free(h);
    kiln_tensor *l = kiln_cholesky(cx, spd, true);
    out[k++] = l;
    out[k++] = kiln_triangular_solve(cx, l, random_tensor(cx, KILN_F64, KILN_SHAPE(S, 260)), true,
                                     true, false, KILN_TRANSPOSE_NONE);
    cr_assert_eq(k, N_CASES);
    expect_ok(cx);
}

Test(threads_count, kernels_are_bitwise_the_same_for_every_thread_count) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *ref[N_CASES], *got[N_CASES];
    kiln__threads_set_count(1);
    run_all(cx, ref);
    int counts[] = {2, 3, 1};
    for (size_t t = 0; t < sizeof counts / sizeof counts[0]; t++) {
        kiln__threads_set_count(counts[t]);
        run_all(cx, got);
        for (int i = 0; i < N_CASES; i++) {
            cr_assert_not_null(ref[i]);
            cr_assert_not_null(got[i]);
            cr_assert_eq(kiln_tensor_nbytes(ref[i]), kiln_tensor_nbytes(got[i]));
            cr_assert(memcmp(kiln_tensor_data(ref[i]), kiln_tensor_data(got[i]),
                             kiln_tensor_nbytes(ref[i])) == 0,
                      "case %d differs between 1 and %d threads", i, counts[t]);
        }
    }
    kiln_ctx_release(cx);
}
