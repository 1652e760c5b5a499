/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/buffer_cache.h"
#include "core/tensor_internal.h"
#include "failing_allocator.h"
#include "test_util.h"

Test(tensor, from_host_copies_and_reads_back) {
    kiln_ctx *cx = test_ctx();
    float src[6] = {1, 2, 3, 4, 5, 6};
    kiln_tensor *t = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 3), src, sizeof src);
    cr_assert_not_null(t);
    src[0] = 99; /* a copy: the tensor does not see this */
    float back[6];
    cr_assert_eq(kiln_tensor_to_host(cx, t, back, sizeof back), KILN_OK);
    cr_assert_eq(back[0], 1.0f);
    cr_assert_eq(back[5], 6.0f);
    cr_assert_eq(kiln_tensor_dtype(t), KILN_F32);
    cr_assert_eq(kiln_tensor_rank(t), 2);
    cr_assert_eq(kiln_tensor_dim(t, 1), 3);
    cr_assert_eq(kiln_tensor_dim(t, -1), 3);
    cr_assert_eq(kiln_tensor_dim(t, -2), 2);
    cr_assert_eq(kiln_tensor_dim(t, 2), -1);
    cr_assert_eq(kiln_tensor_dim(t, -3), -1);
    cr_assert_eq(kiln_tensor_numel(t), 6);
    cr_assert_eq(kiln_tensor_nbytes(t), 24);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(t), &KILN_SHAPE(2, 3)));
    cr_assert_eq(kiln_tensor_device(t).type, KILN_DEVICE_TYPE_CPU);
    cr_assert_eq((uintptr_t)kiln_tensor_data(t) % 64, 0);
    cr_assert_eq(kiln_tensor_item(cx, t, 4), 5.0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(tensor, from_host_rejects_bad_arguments) {
    kiln_ctx *cx = test_ctx();
    float src[4] = {0};
    cr_assert_null(kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 2), src, 12));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_tensor_from_host: nbytes is 12; a f32[2,2] tensor needs 16");
    cr_assert_null(kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 2), NULL, 16));
    expect_error(cx, KILN_INVALID_ARGUMENT, "data is NULL");
    cr_assert_null(kiln_tensor_from_host(cx, (kiln_dtype)77, KILN_SHAPE(2), src, 8));
    expect_error(cx, KILN_INVALID_ARGUMENT, "dtype 77 is not a valid kiln_dtype");
    cr_assert_null(kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, -2), src, 16));
    expect_error(cx, KILN_INVALID_ARGUMENT, "shape [2,-2] has a negative dimension at axis 1");
    cr_assert_null(kiln_tensor_from_host(cx, KILN_F32, (kiln_shape){.rank = 17}, src, 16));
    expect_error(cx, KILN_INVALID_ARGUMENT, "rank 17");
    cr_assert_null(kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(INT64_MAX / 4), src, 16));
    expect_error(cx, KILN_INVALID_ARGUMENT, "overflows");
    cr_assert_null(kiln_tensor_from_host(NULL, KILN_F32, KILN_SHAPE(1), src, 4));
    /* Empty tensors need no data. */
    kiln_tensor *e = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(0, 3), NULL, 0);
    cr_assert_not_null(e);
    cr_assert_eq(kiln_tensor_numel(e), 0);
    cr_assert_null(kiln_tensor_data(e));
    cr_assert_eq(kiln_tensor_to_host(cx, e, NULL, 0), KILN_OK);
    kiln_ctx_release(cx);
}

Test(tensor, accessors_tolerate_null) {
    cr_assert_eq(kiln_tensor_rank(NULL), -1);
    cr_assert_eq(kiln_tensor_dim(NULL, 0), -1);
    cr_assert_null(kiln_tensor_shape(NULL));
    cr_assert_eq(kiln_tensor_numel(NULL), 0);
    cr_assert_eq(kiln_tensor_nbytes(NULL), 0);
    cr_assert_null(kiln_tensor_data(NULL));
    cr_assert_not(kiln_dtype_is_valid(kiln_tensor_dtype(NULL)));
    cr_assert_null(kiln_tensor_retain(NULL));
    kiln_tensor_release(NULL);
}

Test(tensor, to_host_and_item_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *t = kiln_zeros(cx, KILN_I32, KILN_SHAPE(3));
    int32_t out[3];
    cr_assert_eq(kiln_tensor_to_host(cx, t, out, 8), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "nbytes is 8; the i32 tensor has 12 bytes");
    cr_assert_eq(kiln_tensor_to_host(cx, t, NULL, 12), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "dst is NULL");
    cr_assert_eq(kiln_tensor_to_host(cx, NULL, out, 12), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "tensor is NULL");
    cr_assert(isnan(kiln_tensor_item(cx, t, 3)));
    expect_error(cx, KILN_OUT_OF_RANGE, "index 3 is out of range for 3 elements");
    cr_assert(isnan(kiln_tensor_item(cx, t, -1)));
    expect_error(cx, KILN_OUT_OF_RANGE, "index -1");
    cr_assert(isnan(kiln_tensor_item(cx, NULL, 0)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "tensor is NULL");
    kiln_ctx_release(cx);
}

Test(tensor, a_null_operand_keeps_the_first_error) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *bad = kiln_zeros(cx, KILN_F32, KILN_SHAPE(-1));
    cr_assert_null(bad);
    cr_assert_null(kiln_tensor_to_string(cx, bad, NULL)); /* chained use of the NULL */
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_zeros: shape [-1]");
    kiln_ctx_release(cx);
}

typedef struct {
    int calls;
    void *seen;
} deleter_log;

static void count_delete(void *data, void *user) {
    deleter_log *log = user;
    log->calls++;
    log->seen = data;
    free(data);
}

Test(tensor, wrap_host_is_zero_copy_and_calls_the_deleter_once) {
    kiln_ctx *cx = test_ctx();
    deleter_log log = {0};
    double *mem = malloc(4 * sizeof(double));
    for (int i = 0; i < 4; i++)
        mem[i] = i * 0.5;
    kiln_scope_begin(cx);
    kiln_tensor *t =
        kiln_tensor_wrap_host(cx, KILN_F64, KILN_SHAPE(4), mem, 32, count_delete, &log);
    cr_assert_not_null(t);
    cr_assert_eq(kiln_tensor_data(t), mem);
    kiln_tensor *kept = kiln_tensor_retain(t);
    kiln_scope_end(cx);
    cr_assert_eq(log.calls, 0);
    cr_assert_eq(kiln_tensor_item(cx, kept, 3), 1.5);
    kiln_tensor_release(kept);
    cr_assert_eq(log.calls, 1);
    cr_assert_eq(log.seen, mem);
    kiln_ctx_release(cx);
}

Test(tensor, wrap_host_failure_leaves_the_memory_to_the_caller) {
    kiln_ctx *cx = test_ctx();
    deleter_log log = {0};
    double mem[4] = {0};
    cr_assert_null(kiln_tensor_wrap_host(cx, KILN_F64, KILN_SHAPE(5), mem, 32, count_delete, &log));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_tensor_wrap_host: nbytes is 32; a f64[5] tensor needs 40");
    cr_assert_null(kiln_tensor_wrap_host(cx, KILN_F64, KILN_SHAPE(3), (char *)mem + 4, 24,
                                         count_delete, &log));
    expect_error(cx, KILN_INVALID_ARGUMENT, "not aligned");
    cr_assert_null(kiln_tensor_wrap_host(cx, KILN_F64, KILN_SHAPE(3), NULL, 24, NULL, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "data is NULL");
    cr_assert_eq(log.calls, 0);

    /* Allocation failure inside wrap: still no deleter call. */
    for (int64_t n = 2; n <= 3; n++) { /* after the ctx and its cache */
        failing_allocator fa;
        failing_allocator_init(&fa, n);
        kiln_ctx_options o = kiln_ctx_options_default();
        o.allocator = &fa.allocator;
        kiln_ctx *small = NULL;
        cr_assert_eq(kiln_ctx_create(&o, &small), KILN_OK);
        cr_assert_null(
            kiln_tensor_wrap_host(small, KILN_F64, KILN_SHAPE(4), mem, 32, count_delete, &log));
        cr_assert_eq(kiln_ctx_status(small), KILN_RESOURCE_EXHAUSTED);
        kiln_ctx_release(small);
        cr_assert_eq(fa.live_blocks, 0);
    }
    cr_assert_eq(log.calls, 0);
    kiln_ctx_release(cx);
}

Test(scope, end_frees_unretained_tensors_and_retained_ones_survive) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    cr_assert_not_null(cx);
    int64_t base = fa.live_blocks;
    kiln_scope_begin(cx);
    kiln_tensor *a = kiln_ones(cx, KILN_F32, KILN_SHAPE(8));
    kiln_tensor *b = kiln_ones(cx, KILN_F32, KILN_SHAPE(8));
    (void)b;
    kiln_tensor *kept = kiln_tensor_retain(a);
    kiln_scope_end(cx);
    /* a's record and its storage (its 32 bytes in the same block); b's two blocks kept */
    cr_assert_eq(fa.live_blocks, base + 4);
    cr_assert_eq(kiln_ctx_trim(cx), kiln__buffer_cache_capacity(sizeof(kiln_tensor)) +
                                        kiln__buffer_cache_capacity(KILN__STORAGE_HEAD + 32));
    cr_assert_eq(fa.live_blocks, base + 2);
    cr_assert_eq(kiln_tensor_item(cx, kept, 7), 1.0);
    kiln_tensor_release(kept);
    kiln_ctx_trim(cx);
    cr_assert_eq(fa.live_blocks, base);
    kiln_ctx_release(cx);
    cr_assert_eq(fa.live_blocks, 0);
}

Test(scope, early_release_of_a_scoped_tensor_is_safe) {
    kiln_ctx *cx = test_ctx();
    kiln_scope_begin(cx);
    kiln_tensor *a = kiln_zeros(cx, KILN_F32, KILN_SHAPE(1000));
    kiln_tensor_release(a); /* freed now; the scope forgets it */
    kiln_tensor *b = kiln_zeros(cx, KILN_F32, KILN_SHAPE(3));
    cr_assert_not_null(b);
    kiln_scope_end(cx);
    kiln_ctx_release(cx);
}

static kiln_tensor *make_result(kiln_ctx *cx) {
    kiln_scope_begin(cx);
    kiln_tensor *tmp = kiln_iota(cx, KILN_I32, KILN_SHAPE(4), 0);
    (void)tmp;
    kiln_tensor *result = kiln_full(cx, KILN_I32, KILN_SHAPE(2), 7);
    kiln_scope_escape(cx, result);
    kiln_scope_end(cx);
    return result;
}

Test(scope, escape_moves_a_result_to_the_outer_scope) {
    kiln_ctx *cx = test_ctx();
    kiln_scope_begin(cx);
    kiln_tensor *r = make_result(cx);
    cr_assert_not_null(r);
    cr_assert_eq(kiln_tensor_item(cx, r, 1), 7.0);
    /* r now belongs to this scope: escaping it again is fine, escaping twice is not. */
    cr_assert_eq(kiln_scope_escape(cx, r), r);
    cr_assert_null(kiln_scope_escape(cx, r));
    expect_error(cx, KILN_FAILED_PRECONDITION, "not owned by the innermost scope");
    cr_assert_null(kiln_scope_escape(cx, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "tensor is NULL");
    kiln_scope_end(cx);
    /* r is in the ctx's own scope now; escaping from the outermost scope hands it over. */
    cr_assert_eq(kiln_scope_escape(cx, r), r);
    kiln_ctx_release(cx);
    kiln_tensor_release(r); /* the caller's reference */
}

static void *churn(void *arg) {
    kiln_tensor *t = arg;
    for (int i = 0; i < 20000; i++) {
        kiln_tensor_retain(t);
        kiln_tensor_release(t);
    }
    return NULL;
}

Test(tensor, retain_and_release_are_thread_safe) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *t = kiln_tensor_retain(kiln_zeros(cx, KILN_U8, KILN_SHAPE(16)));
    pthread_t threads[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&threads[i], NULL, churn, t), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    kiln_ctx_release(cx);                   /* drops the scope's reference */
    cr_assert_eq(kiln_tensor_numel(t), 16); /* ours is still there */
    kiln_tensor_release(t);
}
