/* SPDX-License-Identifier: Apache-2.0 */
/* Result buffers reused across calls: a result the caller released gives its buffer back to
 * the executable, and the next call writes into it instead of a fresh (page-faulting) one.
 * Results the caller still holds are never written; donation keeps working; the pool holds
 * a bounded number of bytes, follows the calling ctx's allocator, survives the executable
 * while its buffers are in use, and is safe to use from several threads. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/tensor_internal.h"
#include "failing_allocator.h"
#include "test_util.h"

#define N 4096

/* f(x) = x * x + 1: exact in f32 for the small integers used here. */
static kiln_status square_plus_one(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                   void *user) {
    (void)user;
    out[0] = kiln_add(cx, kiln_multiply(cx, in[0], in[0]), kiln_scalar_like(cx, in[0], 1));
    return kiln_ctx_status(cx);
}

static kiln_exe *compile_square(kiln_ctx *cx, bool donate) {
    kiln_region fn = {square_plus_one, NULL};
    kiln_arg_spec arg = {.dtype = KILN_F32, .shape = KILN_SHAPE(N), .name = "x", .donate = donate};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &arg, 1, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    return exe;
}

/* x[i] = (i + seed) % 100 - 50 */
static kiln_tensor *input(kiln_ctx *cx, int seed) {
    float h[N];
    for (int i = 0; i < N; i++)
        h[i] = (float)((i + seed) % 100 - 50);
    kiln_tensor *t = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(N), h, sizeof h);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

static bool holds_result(const kiln_tensor *r, int seed) {
    const float *p = kiln_tensor_data(r);
    for (int i = 0; i < N; i++) {
        float x = (float)((i + seed) % 100 - 50);
        if (p[i] != x * x + 1) return false;
    }
    return true;
}

static kiln_tensor *call(kiln_ctx *cx, kiln_exe *exe, kiln_tensor *x) {
    kiln_tensor *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &r), KILN_OK, "%s", kiln_ctx_error_message(cx));
    return r;
}

Test(result_pool, a_released_result_buffer_is_reused) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    cr_assert_not_null(cx);
    kiln_exe *exe = compile_square(cx, false);
    kiln_tensor *x1 = input(cx, 1), *x2 = input(cx, 2);
    kiln_tensor *r = call(cx, exe, x1);
    cr_assert(holds_result(r, 1));
    const void *first = kiln_tensor_data(r);
    kiln_tensor_release(r);
    int64_t live = fa.live_bytes;
    r = call(cx, exe, x2);
    cr_expect_eq(kiln_tensor_data(r), first, "the second call did not reuse the first's buffer");
    /* Only a tensor header was allocated (the C library might hand back a freed block at
     * the same address, so the pointer alone does not prove reuse). */
    cr_expect_lt(fa.live_bytes - live, N * (int64_t)sizeof(float));
    cr_assert(holds_result(r, 2));
    kiln_tensor_release(r);
    kiln_tensor_release(x1);
    kiln_tensor_release(x2);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

Test(result_pool, a_result_the_caller_holds_is_never_written) {
    kiln_ctx *cx = test_ctx();
    kiln_exe *exe = compile_square(cx, false);
    kiln_tensor *x1 = input(cx, 1), *x2 = input(cx, 2);
    kiln_tensor *r1 = call(cx, exe, x1);
    kiln_tensor *r2 = call(cx, exe, x2);
    cr_expect_neq(kiln_tensor_data(r1), kiln_tensor_data(r2));
    cr_expect(holds_result(r1, 1), "a held result was overwritten by the next call");
    cr_expect(holds_result(r2, 2));
    /* A second reference keeps the buffer in use after the first goes. */
    kiln_tensor *v = kiln_tensor_retain(r1);
    const void *held = kiln_tensor_data(r1);
    kiln_tensor_release(r1);
    kiln_tensor *r3 = call(cx, exe, x2);
    cr_expect_neq(kiln_tensor_data(r3), held, "a buffer still viewed was reused");
    cr_expect(holds_result(v, 1));
    kiln_tensor_release(v);
    kiln_tensor_release(r2);
    kiln_tensor_release(r3);
    kiln_tensor_release(x1);
    kiln_tensor_release(x2);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

Test(result_pool, donation_still_writes_into_the_donated_buffer) {
    kiln_ctx *cx = test_ctx();
    kiln_exe *exe = compile_square(cx, true);
    for (int k = 0; k < 3; k++) {
        kiln_tensor *x = input(cx, k);
        const void *buf = kiln_tensor_data(x);
        kiln_tensor *r = call(cx, exe, x);
        cr_expect_eq(kiln_tensor_data(r), buf, "the result did not take the donated buffer");
        cr_expect(holds_result(r, k));
        cr_expect_null(kiln_tensor_data(x));
        kiln_ctx_clear_error(cx);
        kiln_tensor_release(x);
        kiln_tensor_release(r);
    }
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

Test(result_pool, results_outlive_the_executable) {
    kiln_ctx *cx = test_ctx();
    kiln_exe *exe = compile_square(cx, false);
    kiln_tensor *x = input(cx, 3);
    kiln_tensor *r = call(cx, exe, x);
    kiln_tensor *pooled = call(cx, exe, x);
    kiln_tensor_release(pooled); /* waiting in the pool when the executable goes */
    kiln_exe_release(exe);
    cr_expect(holds_result(r, 3));
    kiln_tensor_release(r); /* freed now: LeakSanitizer and the allocator count check */
    kiln_tensor_release(x);
    kiln_ctx_release(cx);
}

Test(result_pool, pooled_bytes_are_bounded_and_freed_with_the_executable) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    cr_assert_not_null(cx);
    kiln_exe *exe = compile_square(cx, false);
    kiln_tensor *x = input(cx, 4);
    kiln_ctx_trim(cx);
    int64_t before = fa.live_bytes;
    kiln_tensor *r[6];
    for (int k = 0; k < 6; k++)
        r[k] = call(cx, exe, x);
    for (int k = 0; k < 6; k++)
        kiln_tensor_release(r[k]);
    /* Two results' worth wait for reuse (plus small per-call bookkeeping); the rest went
     * (to the ctx's buffer cache, trimmed here). */
    kiln_ctx_trim(cx);
    int64_t kept = fa.live_bytes - before;
    cr_expect_geq(kept, 2 * N * (int64_t)sizeof(float));
    cr_expect_lt(kept, 3 * N * (int64_t)sizeof(float), "%lld bytes kept", (long long)kept);
    kiln_tensor_release(x);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
    cr_expect_eq(fa.live_blocks, 0);
    cr_expect_eq(fa.live_bytes, 0);
}

Test(result_pool, a_ctx_with_another_allocator_gets_its_own_buffer) {
    failing_allocator fa;
    kiln_ctx *other = failing_allocator_ctx(&fa);
    cr_assert_not_null(other);
    kiln_ctx *cx = test_ctx();
    kiln_exe *exe = compile_square(cx, false);
    kiln_tensor *x = input(cx, 5);
    kiln_tensor *r = call(cx, exe, x);
    const void *first = kiln_tensor_data(r);
    kiln_tensor_release(r);
    int64_t before = fa.allocations;
    r = call(other, exe, x);
    cr_expect_neq(kiln_tensor_data(r), first);
    cr_expect_gt(fa.allocations, before, "the result did not come from the ctx's allocator");
    cr_expect(holds_result(r, 5));
    kiln_tensor_release(r);
    kiln_tensor_release(x);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
    kiln_ctx_release(other);
    cr_expect_eq(fa.live_bytes, 0);
}

Test(result_pool, out_of_memory_for_a_result_is_reported) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    cr_assert_not_null(cx);
    kiln_exe *exe = compile_square(cx, false);
    kiln_tensor *x = input(cx, 6);
    kiln_tensor *warm = call(cx, exe, x); /* the call state exists now */
    fa.fail_after = fa.allocations;       /* every further allocation fails */
    kiln_tensor *r = NULL;
    cr_expect_eq(kiln_exe_call(cx, exe, &x, &r), KILN_RESOURCE_EXHAUSTED);
    cr_expect_null(r);
    kiln_ctx_clear_error(cx);
    /* A released buffer needs no allocation to be reused (the tensor header still does). */
    fa.fail_after = -1;
    kiln_tensor_release(warm);
    r = call(cx, exe, x);
    cr_expect(holds_result(r, 6));
    kiln_tensor_release(r);
    kiln_tensor_release(x);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
    cr_expect_eq(fa.live_bytes, 0);
}

typedef struct worker {
    kiln_exe *exe;
    int seed;
    int bad;
} worker;

/* Calls over and over, releasing some results at once and keeping others a while, so that
 * buffers move between the two threads through the pool. */
static void *work(void *arg) {
    worker *w = arg;
    kiln_ctx *cx = NULL;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) {
        w->bad = -1;
        return NULL;
    }
    kiln_tensor *x = input(cx, w->seed);
    kiln_tensor *kept = NULL;
    for (int k = 0; k < 200; k++) {
        kiln_tensor *r = NULL;
        if (kiln_exe_call(cx, w->exe, &x, &r) != KILN_OK) {
            w->bad++;
            break;
        }
        if (!holds_result(r, w->seed)) w->bad++;
        if (k % 3 == 0) {
            kiln_tensor_release(kept);
            kept = r;
        } else {
            kiln_tensor_release(r);
        }
        if (kept && !holds_result(kept, w->seed)) w->bad++;
    }
    kiln_tensor_release(kept);
    kiln_tensor_release(x);
    kiln_ctx_release(cx);
    return NULL;
}

Test(result_pool, two_threads_share_an_executable) {
    kiln_ctx *cx = test_ctx();
    kiln_exe *exe = compile_square(cx, false);
    worker w[2] = {{exe, 7, 0}, {exe, 8, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_expect_eq(w[0].bad, 0);
    cr_expect_eq(w[1].bad, 0);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

Test(result_pool, a_tensor_over_too_small_storage_is_refused) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    cr_assert_not_null(cx);
    kiln__storage *s = kiln__storage_new(cx, "test", 16);
    cr_assert_not_null(s);
    cr_expect_null(kiln__tensor_new_on(cx, "test", KILN_F32, KILN_SHAPE(5), s));
    expect_error(cx, KILN_INTERNAL, "test: a tensor of 20 bytes over storage of 16");
    s = kiln__storage_new(cx, "test", 16);
    cr_assert_not_null(s);
    cr_expect_null(kiln__tensor_new_on(cx, "test", KILN_F32, KILN_SHAPE(-1), s));
    expect_error(cx, KILN_INVALID_ARGUMENT, "negative dimension");
    s = kiln__storage_new(cx, "test", 16);
    kiln_tensor *t = kiln__tensor_new_on(cx, "test", KILN_F32, KILN_SHAPE(2, 2), s);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    kiln_tensor_release(t);
    kiln_ctx_release(cx);
    cr_expect_eq(fa.live_bytes, 0, "the refused storages were not released");
}

static kiln_status negate_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] = kiln_negate(cx, in[0]);
    return kiln_ctx_status(cx);
}

/* Bytes the first call of negate over f32[n] leaves allocated (its result held). */
static int64_t first_call_bytes(int64_t n) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    cr_assert_not_null(cx);
    kiln_region fn = {negate_fn, NULL};
    kiln_arg_spec arg = {.dtype = KILN_F32, .shape = KILN_SHAPE(n)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &arg, 1, 1, NULL, &m), KILN_OK);
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    kiln_tensor *x = kiln_iota(cx, KILN_F32, KILN_SHAPE(n), 0);
    int64_t live = fa.live_bytes;
    kiln_tensor *r = call(cx, exe, x);
    int64_t grown = fa.live_bytes - live;
    const float *p = kiln_tensor_data(r);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(p[i], -(float)i);
    kiln_tensor_release(r);
    kiln_tensor_release(x);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
    cr_expect_eq(fa.live_bytes, 0, "the pooled first result is freed with the executable");
    return grown;
}

Test(result_pool, small_results_of_a_first_call_are_made_at_compile_time) {
    /* 4 KiB of results: made by kiln_compile, the call adds only a tensor header. */
    cr_expect_lt(first_call_bytes(1024), 1024 * (int64_t)sizeof(float));
    /* Above that, the first call allocates its result. */
    cr_expect_geq(first_call_bytes(1025), 1025 * (int64_t)sizeof(float));
}
