/* SPDX-License-Identifier: Apache-2.0 */
/* Packed weights (backends/cpu/lib/packed_weights.h): a convolution's weights, re-laid out for
 * oneDNN, are kept between calls while their bytes are unchanged and laid out again when
 * anything wrote them: a new tensor at a recycled address, donation, a recycled result
 * buffer, kiln_move, wrapped memory written by a donated call. Every result is checked
 * against a direct double-precision convolution, so a stale copy would show. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include <kiln/nn.h>

#include "backends/cpu/eval/eval_linalg.h"
#include "backends/cpu/lib/packed_weights.h"
#include "test_util.h"

#define N 1
#define C 16
#define H 12
#define W 12
#define O 32
#define K 3

/* y = conv2d(x, w), padding 1: 1.2M multiply-adds, enough for oneDNN. */
static kiln_status conv_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_nn_conv2d_params p = {.padding = {1, 1}};
    out[0] = kiln_nn_conv2d(cx, in[0], in[1], NULL, &p);
    return kiln_ctx_status(cx);
}

/* w' = w * 0.5 - 0.25, w donated: the result takes w's buffer. */
static kiln_status update_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_subtract(cx, kiln_multiply(cx, in[0], kiln_scalar(cx, 0.5, KILN_F32)),
                           kiln_scalar(cx, 0.25, KILN_F32));
    return kiln_ctx_status(cx);
}

/* w = base * s (s a scalar): weights that come out of an executable's result pool. */
static kiln_status make_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_multiply(cx, in[0], kiln_broadcast_to(cx, in[1], *kiln_tensor_shape(in[0])));
    return kiln_ctx_status(cx);
}

static kiln_exe *compile(kiln_ctx *cx, kiln_region_fn f, const kiln_arg_spec *args, int32_t n) {
    kiln_region fn = {f, NULL};
    kiln_lower_options lo = kiln_lower_options_default();
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, args, n, 1, &lo, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    kiln_compile_options co = kiln_compile_options_default();
    cr_assert_eq(kiln_compile(cx, m, &co, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    return exe;
}

static uint32_t rng = 0x2468ace1u;

static float next_value(void) {
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / 8388608.0f - 1.0f; /* [-1, 1) */
}

static kiln_tensor *random_tensor(kiln_ctx *cx, kiln_shape shape) {
    return test_f32_generated(cx, shape, next_value);
}

/* y against the direct convolution of x with w in double precision. */
static void expect_conv(const kiln_tensor *x, const kiln_tensor *w, const kiln_tensor *y,
                        const char *what) {
    cr_assert_not_null(y, "%s: no result", what);
    const float *xs = kiln_tensor_data(x), *ws = kiln_tensor_data(w), *ys = kiln_tensor_data(y);
    for (int o = 0; o < O; o++)
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W; j++) {
                double s = 0;
                for (int c = 0; c < C; c++)
                    for (int a = 0; a < K; a++)
                        for (int b = 0; b < K; b++) {
                            int ii = i + a - 1, jj = j + b - 1;
                            if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                            s += (double)xs[(c * H + ii) * W + jj] *
                                 (double)ws[((o * C + c) * K + a) * K + b];
                        }
                double got = ys[(o * H + i) * W + j];
                cr_assert(fabs(got - s) <= 1e-4, "%s: y[%d,%d,%d] = %.7g, expected %.7g", what, o,
                          i, j, got, s);
            }
}

/* conv(x, w), compiled. */
static kiln_exe *compile_conv(kiln_ctx *cx) {
    kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(N, C, H, W), .name = "x"},
                             {.dtype = KILN_F32, .shape = KILN_SHAPE(O, C, K, K), .name = "w"}};
    return compile(cx, conv_fn, args, 2);
}

/* Calls conv(x, w) and checks the result. */
/* update(w), w donated, compiled. */
static kiln_exe *compile_update(kiln_ctx *cx) {
    kiln_arg_spec args[1] = {
        {.dtype = KILN_F32, .shape = KILN_SHAPE(O, C, K, K), .name = "w", .donate = true}};
    return compile(cx, update_fn, args, 1);
}

static void call_and_check(kiln_ctx *cx, kiln_exe *conv, kiln_tensor *x, kiln_tensor *w,
                           const char *what) {
    kiln_tensor *y = NULL;
    cr_assert_eq(kiln_exe_call(cx, conv, (kiln_tensor *[]){x, w}, &y), KILN_OK, "%s: %s", what,
                 kiln_ctx_error_message(cx));
    expect_conv(x, w, y, what);
    kiln_tensor_release(y);
}

static void require_onednn(void) {
    if (!kiln__dnnl_conv_available())
        cr_skip_test("oneDNN cannot be opened here: convolutions use im2col and pack nothing");
}

Test(packed_weights, unchanged_weights_are_packed_once_and_reused) {
    require_onednn();
    kiln_ctx *cx = test_ctx();
    kiln_exe *conv = compile_conv(cx);
    kiln_tensor *x = random_tensor(cx, KILN_SHAPE(N, C, H, W));
    kiln_tensor *w = random_tensor(cx, KILN_SHAPE(O, C, K, K));
    kiln__packed_stats s0 = kiln__packed_stats_get();
    call_and_check(cx, conv, x, w, "first call"); /* seen once: no copy yet */
    kiln__packed_stats s1 = kiln__packed_stats_get();
    cr_assert_eq(s1.packed, s0.packed, "a weight seen once is not copied");
    call_and_check(cx, conv, x, w, "second call"); /* seen again unchanged: copied */
    kiln__packed_stats s2 = kiln__packed_stats_get();
    cr_assert_eq(s2.packed, s1.packed + 1);
    cr_assert_gt(s2.bytes, 0);
    for (int i = 0; i < 3; i++)
        call_and_check(cx, conv, x, w, "later call");
    kiln__packed_stats s3 = kiln__packed_stats_get();
    cr_assert_eq(s3.packed, s2.packed, "nothing packed again");
    cr_assert_geq(s3.reused, s2.reused + 3);
    /* Eager convolutions of the same geometry and weights share the copy. */
    kiln_nn_conv2d_params p = {.padding = {1, 1}};
    kiln_tensor *y = kiln_nn_conv2d(cx, x, w, NULL, &p);
    expect_conv(x, w, y, "eager");
    cr_assert_geq(kiln__packed_stats_get().reused, s3.reused + 1);
    kiln_exe_release(conv);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(packed_weights, every_way_of_writing_a_weight_buffer_repacks) {
    require_onednn();
    kiln_ctx *cx = test_ctx();
    kiln_exe *conv = compile_conv(cx);
    kiln_exe *update = compile_update(cx);
    kiln_arg_spec make_args[2] = {
        {.dtype = KILN_F32, .shape = KILN_SHAPE(O, C, K, K), .name = "base"},
        {.dtype = KILN_F32, .shape = KILN_SHAPE_SCALAR, .name = "s"}};
    kiln_exe *make = compile(cx, make_fn, make_args, 2);
    kiln_tensor *x = random_tensor(cx, KILN_SHAPE(N, C, H, W));

    /* A new tensor where the old one was (the buffer cache hands its memory on). */
    kiln_tensor *w = random_tensor(cx, KILN_SHAPE(O, C, K, K));
    call_and_check(cx, conv, x, w, "w");
    call_and_check(cx, conv, x, w, "w, packed");
    kiln_tensor_release(w);
    w = random_tensor(cx, KILN_SHAPE(O, C, K, K));
    call_and_check(cx, conv, x, w, "a new w");
    call_and_check(cx, conv, x, w, "a new w, packed");

    /* Donation: the update's result takes w's buffer in place. */
    const void *buffer = kiln_tensor_data(w);
    kiln_tensor *w2 = NULL;
    cr_assert_eq(kiln_exe_call(cx, update, &w, &w2), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_data(w2), buffer, "the donated buffer holds the update");
    call_and_check(cx, conv, x, w2, "donated and updated");
    call_and_check(cx, conv, x, w2, "donated and updated, packed");

    /* kiln_move: an eager op writes its result over the weights. */
    buffer = kiln_tensor_data(w2);
    kiln_tensor *w3 = kiln_multiply(cx, kiln_move(w2), kiln_scalar(cx, -1.5, KILN_F32));
    cr_assert_eq(kiln_tensor_data(w3), buffer, "kiln_move wrote in place");
    call_and_check(cx, conv, x, w3, "moved");
    call_and_check(cx, conv, x, w3, "moved, packed");

    /* A recycled result buffer: weights from an executable, released, and the next result
     * of that executable in the same storage. */
    kiln_tensor *base = random_tensor(cx, KILN_SHAPE(O, C, K, K));
    kiln_tensor *wa = NULL, *wb = NULL;
    cr_assert_eq(kiln_exe_call(cx, make, (kiln_tensor *[]){base, kiln_scalar(cx, 1, KILN_F32)},
                               &wa),
                 KILN_OK);
    call_and_check(cx, conv, x, wa, "from the pool");
    call_and_check(cx, conv, x, wa, "from the pool, packed");
    buffer = kiln_tensor_data(wa);
    kiln_tensor_release(wa);
    cr_assert_eq(kiln_exe_call(cx, make, (kiln_tensor *[]){base, kiln_scalar(cx, -2, KILN_F32)},
                               &wb),
                 KILN_OK);
    cr_assert_eq(kiln_tensor_data(wb), buffer, "the result pool recycled the buffer");
    call_and_check(cx, conv, x, wb, "recycled");
    call_and_check(cx, conv, x, wb, "recycled, packed");
    kiln_tensor_release(wb);

    /* Wrapped writable memory, written by a donated call. */
    float *user = malloc(sizeof(float) * O * C * K * K);
    for (int i = 0; i < O * C * K * K; i++)
        user[i] = next_value();
    kiln_tensor *wu = kiln_tensor_wrap_host_writable(cx, KILN_F32, KILN_SHAPE(O, C, K, K), user,
                                                     sizeof(float) * O * C * K * K, NULL, NULL);
    cr_assert_not_null(wu, "%s", kiln_ctx_error_message(cx));
    call_and_check(cx, conv, x, wu, "wrapped");
    call_and_check(cx, conv, x, wu, "wrapped, packed");
    kiln_tensor *wu2 = NULL;
    cr_assert_eq(kiln_exe_call(cx, update, &wu, &wu2), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_data(wu2), (const void *)user,
                 "the update went into the user's memory");
    call_and_check(cx, conv, x, wu2, "wrapped, updated");
    call_and_check(cx, conv, x, wu2, "wrapped, updated, packed");
    kiln_tensor_release(wu2);
    free(user);

    kiln_exe_release(conv);
    kiln_exe_release(update);
    kiln_exe_release(make);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(packed_weights, weights_that_change_every_call_are_never_copied) {
    require_onednn();
    kiln_ctx *cx = test_ctx();
    kiln_exe *conv = compile_conv(cx);
    kiln_exe *update = compile_update(cx);
    kiln_tensor *x = random_tensor(cx, KILN_SHAPE(N, C, H, W));
    kiln_tensor *w = random_tensor(cx, KILN_SHAPE(O, C, K, K));
    kiln__packed_stats s0 = kiln__packed_stats_get();
    for (int step = 0; step < 6; step++) { /* a training loop: use, then update in place */
        call_and_check(cx, conv, x, w, "training step");
        kiln_tensor *next = NULL;
        cr_assert_eq(kiln_exe_call(cx, update, &w, &next), KILN_OK);
        w = next;
    }
    kiln__packed_stats s1 = kiln__packed_stats_get();
    cr_assert_eq(s1.packed, s0.packed, "weights written every step were copied");
    cr_assert_eq(s1.reused, s0.reused);
    kiln_exe_release(conv);
    kiln_exe_release(update);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(packed_weights, off_packs_each_call_with_the_same_results) {
    require_onednn();
    kiln_ctx *cx = test_ctx();
    kiln_exe *conv = compile_conv(cx);
    kiln_tensor *x = random_tensor(cx, KILN_SHAPE(N, C, H, W));
    kiln_tensor *w = random_tensor(cx, KILN_SHAPE(O, C, K, K));
    kiln_tensor *y[2] = {NULL, NULL};
    call_and_check(cx, conv, x, w, "warm");
    cr_assert_eq(kiln_exe_call(cx, conv, (kiln_tensor *[]){x, w}, &y[0]), KILN_OK);
    kiln__packed_force_off(true);
    kiln__packed_stats s0 = kiln__packed_stats_get();
    cr_assert_eq(kiln_exe_call(cx, conv, (kiln_tensor *[]){x, w}, &y[1]), KILN_OK);
    kiln__packed_stats s1 = kiln__packed_stats_get();
    kiln__packed_force_off(false);
    cr_assert_eq(s1.reused, s0.reused);
    cr_assert(memcmp(kiln_tensor_data(y[0]), kiln_tensor_data(y[1]),
                     kiln_tensor_nbytes(y[0])) == 0,
              "packed once or per call: the same bits");
    kiln_exe_release(conv);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

typedef struct thread_job {
    kiln_exe *conv;
    kiln_tensor *x, *w;
    const float *want; /* a checked result of the same call */
    int failures;
} thread_job;

static void *caller(void *arg) {
    thread_job *j = arg;
    kiln_ctx *cx = test_ctx();
    for (int i = 0; i < 20; i++) {
        kiln_tensor *y = NULL;
        if (kiln_exe_call(cx, j->conv, (kiln_tensor *[]){j->x, j->w}, &y) != KILN_OK) {
            j->failures++;
            continue;
        }
        const float *ys = kiln_tensor_data(y);
        for (int64_t k = 0; k < kiln_tensor_numel(y); k++)
            if (fabsf(ys[k] - j->want[k]) > 1e-4f) {
                j->failures++;
                break;
            }
        kiln_tensor_release(y);
    }
    kiln_ctx_release(cx);
    return NULL;
}

Test(packed_weights, threads_share_one_copy) {
    require_onednn();
    kiln_ctx *cx = test_ctx();
    kiln_exe *conv = compile_conv(cx);
    kiln_tensor *x = kiln_tensor_retain(random_tensor(cx, KILN_SHAPE(N, C, H, W)));
    kiln_tensor *w = kiln_tensor_retain(random_tensor(cx, KILN_SHAPE(O, C, K, K)));
    kiln_tensor *want = NULL;
    cr_assert_eq(kiln_exe_call(cx, conv, (kiln_tensor *[]){x, w}, &want), KILN_OK);
    expect_conv(x, w, want, "before the threads");
    kiln__packed_stats s0 = kiln__packed_stats_get();
    thread_job jobs[3];
    pthread_t th[3];
    for (int t = 0; t < 3; t++) {
        jobs[t] = (thread_job){conv, x, w, kiln_tensor_data(want), 0};
        cr_assert_eq(pthread_create(&th[t], NULL, caller, &jobs[t]), 0);
    }
    for (int t = 0; t < 3; t++) {
        pthread_join(th[t], NULL);
        cr_assert_eq(jobs[t].failures, 0, "thread %d", t);
    }
    kiln__packed_stats s1 = kiln__packed_stats_get();
    cr_assert_leq(s1.packed, s0.packed + 3, "at most one copy per racing thread");
    cr_assert_geq(s1.reused, s0.reused + 40);
    call_and_check(cx, conv, x, w, "after the threads");
    kiln_tensor_release(want);
    kiln_tensor_release(x);
    kiln_tensor_release(w);
    kiln_exe_release(conv);
    expect_ok(cx);
    kiln_ctx_release(cx);
}
