/* SPDX-License-Identifier: Apache-2.0 */
/* The ctx's buffer cache: size classes, reuse of released tensor memory, the limit, trim,
 * statistics, the retry after an allocator failure, and tensors that outlive the ctx. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>

#include "base/buffer_cache.h"
#include "core/tensor_internal.h"
#include "failing_allocator.h"
#include "test_util.h"

/* The block of a tensor's own record: it comes from the cache too. */
#define RECORD kiln__buffer_cache_capacity(sizeof(kiln_tensor))

static kiln_cache_stats stats_of(kiln_ctx *cx) {
    kiln_cache_stats s;
    cr_assert_eq(kiln_ctx_cache_stats(cx, &s), KILN_OK);
    return s;
}

Test(buffer_cache, size_classes_are_64_byte_steps_then_quarters_then_pages) {
    cr_assert_eq(kiln__buffer_cache_capacity(1), 64);
    cr_assert_eq(kiln__buffer_cache_capacity(64), 64);
    cr_assert_eq(kiln__buffer_cache_capacity(65), 128);
    cr_assert_eq(kiln__buffer_cache_capacity(1024), 1024);
    cr_assert_eq(kiln__buffer_cache_capacity(1025), 1280);
    cr_assert_eq(kiln__buffer_cache_capacity(1280), 1280);
    cr_assert_eq(kiln__buffer_cache_capacity(1281), 1536);
    cr_assert_eq(kiln__buffer_cache_capacity(2048), 2048);
    cr_assert_eq(kiln__buffer_cache_capacity(2049), 2560);
    cr_assert_eq(kiln__buffer_cache_capacity(256 << 10), 256 << 10);
    /* Above 256 KiB, pages: a 1e7-element f32 tensor takes 40 MB and 1,536 bytes. */
    cr_assert_eq(kiln__buffer_cache_capacity((256 << 10) + 1), (256 << 10) + 4096);
    cr_assert_eq(kiln__buffer_cache_capacity(40000000), 40001536);
    for (size_t n = 1; n < 100000; n += 37) {
        size_t cap = kiln__buffer_cache_capacity(n);
        cr_assert_geq(cap, n);
        cr_assert_leq(cap, n < 1024 ? n + 63 : n + n / 4, "n %zu: capacity %zu", n, cap);
        cr_assert_eq(cap % 64, 0);
    }
}

Test(buffer_cache, released_memory_is_reused_by_the_next_tensor_of_its_class) {
    kiln_ctx *cx = test_ctx();
    kiln_cache_stats s0 = stats_of(cx);
    cr_assert_eq(s0.limit_bytes, KILN_CACHE_BYTES_DEFAULT);
    kiln_tensor *a = kiln_zeros(cx, KILN_F32, KILN_SHAPE(1000));
    const void *p = kiln_tensor_data(a);
    kiln_tensor_release(a);
    kiln_cache_stats s1 = stats_of(cx); /* its data block and its record */
    cr_assert_eq(s1.kept_blocks, s0.kept_blocks + 2);
    cr_assert_eq(s1.kept_bytes, s0.kept_bytes + 4096 + RECORD);
    /* 3,900 bytes round to the same 4 KiB class: the same block comes back. */
    kiln_tensor *b = kiln_ones(cx, KILN_U8, KILN_SHAPE(3900));
    cr_assert_eq(kiln_tensor_data(b), p);
    cr_assert_eq(kiln_tensor_item(cx, b, 3899), 1.0);
    kiln_cache_stats s2 = stats_of(cx);
    cr_assert_eq(s2.hits, s1.hits + 2);
    cr_assert_eq(s2.kept_bytes, s0.kept_bytes);
    cr_assert_geq(s2.live_bytes, 4096);
    /* Another class does not take it. */
    kiln_tensor_release(b);
    kiln_tensor *c = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2000));
    cr_assert_neq(kiln_tensor_data(c), p);
    cr_assert_eq(stats_of(cx).misses, s2.misses + 1);
    kiln_ctx_release(cx);
}

Test(buffer_cache, scope_end_returns_a_chain_of_results_for_the_next_iteration) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = kiln_ones(cx, KILN_F32, KILN_SHAPE(1 << 16));
    uint64_t misses = 0;
    for (int it = 0; it < 4; it++) {
        kiln_scope_begin(cx);
        kiln_tensor *y = kiln_exponential(cx, kiln_negate(cx, kiln_multiply(cx, x, x)));
        cr_assert_float_eq(kiln_tensor_item(cx, y, 5), 0.36787944, 1e-6);
        kiln_scope_end(cx);
        kiln_cache_stats s = stats_of(cx);
        if (it == 0)
            misses = s.misses;
        else
            cr_assert_eq(s.misses, misses, "iteration %d allocated fresh memory", it);
    }
    cr_assert_geq(stats_of(cx).kept_bytes, 3 * 4 * (1 << 16));
    kiln_ctx_release(cx);
}

Test(buffer_cache, the_limit_bounds_what_is_kept_and_trim_frees_it) {
    failing_allocator fa;
    failing_allocator_init(&fa, -1);
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &fa.allocator;
    o.cache_bytes = 40000;
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    int64_t base = fa.live_blocks;
    kiln_scope_begin(cx);
    for (int i = 0; i < 4; i++)
        kiln_zeros(cx, KILN_F32, KILN_SHAPE(4096)); /* 16 KiB each */
    kiln_scope_end(cx);
    /* Two of the four data blocks fit under 40,000 bytes, and the four records. */
    cr_assert_leq(32768 + 4 * RECORD, 40000);
    kiln_cache_stats s = stats_of(cx);
    cr_assert_eq(s.kept_blocks, 2 + 4);
    cr_assert_eq(s.kept_bytes, 32768 + 4 * RECORD);
    cr_assert_eq(fa.live_blocks, base + 6);
    /* A lower limit frees what is above it, the biggest blocks first; trim frees the rest. */
    kiln_ctx_set_cache_limit(cx, 20000);
    cr_assert_eq(stats_of(cx).kept_bytes, 16384 + 4 * RECORD);
    cr_assert_eq(kiln_ctx_trim(cx), 16384 + 4 * RECORD);
    cr_assert_eq(kiln_ctx_trim(cx), 0);
    cr_assert_eq(fa.live_blocks, base);
    /* 0 keeps nothing. */
    kiln_ctx_set_cache_limit(cx, 0);
    kiln_tensor_release(kiln_zeros(cx, KILN_F32, KILN_SHAPE(4)));
    cr_assert_eq(stats_of(cx).kept_blocks, 0);
    cr_assert_eq(fa.live_blocks, base);
    kiln_ctx_release(cx);
    cr_assert_eq(fa.live_blocks, 0);
}

Test(buffer_cache, an_allocator_failure_frees_the_kept_blocks_and_tries_again) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    cr_assert_not_null(cx);
    kiln_tensor_release(kiln_zeros(cx, KILN_F32, KILN_SHAPE(4096)));
    cr_assert_eq(stats_of(cx).kept_bytes, 16384 + RECORD);
    /* The data allocation of the next tensor fails once: the kept 16 KiB go back, the
     * retry succeeds. The storage record comes first. */
    static float data[10000];
    data[9999] = 1;
    fa.fail_once = true;
    fa.fail_after = fa.allocations + 1;
    kiln_tensor *t = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(100, 100), data, sizeof data);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(fa.failures, 1);
    kiln_cache_stats s = stats_of(cx);
    cr_assert_eq(s.retries, 1);
    cr_assert_eq(s.kept_bytes, 0);
    cr_assert_eq(kiln_tensor_item(cx, t, 9999), 1.0);
    /* Failing twice is RESOURCE_EXHAUSTED naming the builder, and nothing leaks. */
    kiln_tensor_release(t);
    kiln_ctx_trim(cx);
    int64_t live = fa.live_blocks;
    fa.fail_once = false;
    fa.fail_after = fa.allocations + 1;
    cr_assert_null(kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(100, 100), data, sizeof data));
    fa.fail_after = -1;
    expect_error(cx, KILN_RESOURCE_EXHAUSTED,
                 "out of memory allocating 40000 bytes for kiln_tensor_from_host");
    cr_assert_eq(fa.live_blocks, live);
    kiln_ctx_release(cx);
    cr_assert_eq(fa.live_blocks, 0);
}

Test(buffer_cache, ctx_creation_fails_cleanly_when_the_cache_cannot_be_made) {
    failing_allocator fa;
    failing_allocator_init(&fa, 1); /* the ctx succeeds, its cache fails */
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &fa.allocator;
    kiln_ctx *cx = (kiln_ctx *)&cx;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_RESOURCE_EXHAUSTED);
    cr_assert_null(cx);
    cr_assert_eq(fa.live_blocks, 0);
}

Test(buffer_cache, tensors_outlive_the_ctx_and_their_memory_goes_back_to_the_allocator) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    kiln_tensor *kept = kiln_tensor_retain(kiln_full(cx, KILN_F64, KILN_SHAPE(300), 2.5));
    kiln_tensor_release(kiln_zeros(cx, KILN_F64, KILN_SHAPE(300)));
    kiln_ctx_release(cx);
    cr_assert_gt(fa.live_blocks, 0);
    cr_assert_eq(((const double *)kiln_tensor_data(kept))[299], 2.5);
    kiln_tensor_release(kept);
    cr_assert_eq(fa.live_blocks, 0);
    cr_assert_eq(fa.live_bytes, 0);
}

/* Releases on another thread give blocks back while this one allocates. */
typedef struct {
    kiln_tensor **ts;
    int n;
} releaser;

static void *release_all(void *user) {
    releaser *r = user;
    for (int i = 0; i < r->n; i++)
        kiln_tensor_release(r->ts[i]);
    return NULL;
}

Test(buffer_cache, blocks_come_back_from_other_threads) {
    kiln_ctx *cx = test_ctx();
    enum { N = 200 };
    kiln_tensor *ts[N];
    size_t live = stats_of(cx).live_bytes;
    kiln_scope_begin(cx);
    for (int i = 0; i < N; i++)
        ts[i] = kiln_tensor_retain(kiln_zeros(cx, KILN_F32, KILN_SHAPE(64 + i)));
    kiln_scope_end(cx); /* the retained references are the last */
    kiln_scope_begin(cx);
    releaser r = {ts, N};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, release_all, &r), 0);
    for (int i = 0; i < N; i++)
        cr_assert_not_null(kiln_ones(cx, KILN_F32, KILN_SHAPE(64 + i)));
    pthread_join(th, NULL);
    kiln_scope_end(cx);
    kiln_cache_stats s = stats_of(cx);
    cr_assert_eq(s.live_bytes, live); /* every block came back, none twice */
    cr_assert_geq(s.kept_blocks, 1);
    kiln_ctx_release(cx);
}

Test(buffer_cache, stats_name_a_null_argument) {
    kiln_ctx *cx = test_ctx();
    cr_assert_eq(kiln_ctx_cache_stats(NULL, NULL), KILN_INVALID_ARGUMENT);
    cr_assert_eq(kiln_ctx_cache_stats(cx, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_ctx_cache_stats: out is NULL");
    cr_assert_eq(kiln_ctx_trim(NULL), 0);
    kiln_ctx_set_cache_limit(NULL, 5); /* a no-op */
    kiln_ctx_release(cx);
}

Test(buffer_cache, refuses_zero_bytes_and_alignments_above_64) {
    kiln__buffer_cache *c = kiln__buffer_cache_new(kiln_allocator_default(), 1 << 20);
    cr_assert_not_null(c);
    size_t cap = 0;
    cr_assert_null(kiln__buffer_cache_alloc(c, 0, 64, &cap));
    cr_assert_null(kiln__buffer_cache_alloc(c, 100, 128, &cap));
    void *p = kiln__buffer_cache_alloc(c, 100, 64, &cap);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % 64, 0);
    cr_assert_eq(cap, 128);
    kiln__buffer_cache_free(c, p, cap);
    kiln_cache_stats s;
    kiln__buffer_cache_stats(c, &s);
    cr_assert_eq(s.kept_bytes, 128);
    cr_assert_eq(s.live_bytes, 0);
    kiln__buffer_cache_close(c); /* frees the kept block and, with no block out, the cache */
}

Test(buffer_cache, a_big_request_takes_the_smallest_kept_block_at_most_an_eighth_larger) {
    kiln__buffer_cache *c = kiln__buffer_cache_new(kiln_allocator_default(), 64 << 20);
    cr_assert_not_null(c);
    size_t mib = 1 << 20, cap_a, cap_b, cap_c, cap;
    void *a = kiln__buffer_cache_alloc(c, 4 * mib, 64, &cap_a);
    void *b = kiln__buffer_cache_alloc(c, 4 * mib + mib / 4, 64, &cap_b);
    void *d = kiln__buffer_cache_alloc(c, 8 * mib, 64, &cap_c);
    cr_assert(a && b && d);
    cr_assert_eq(cap_a, 4 * mib, "exactly the pages asked for");
    cr_assert_eq(cap_b, 4 * mib + mib / 4);
    kiln__buffer_cache_free(c, b, cap_b);
    kiln__buffer_cache_free(c, a, cap_a);
    kiln__buffer_cache_free(c, d, cap_c);
    kiln_cache_stats s;
    kiln__buffer_cache_stats(c, &s);
    cr_assert_eq(s.kept_blocks, 3);
    cr_assert_eq(s.kept_bytes, cap_a + cap_b + cap_c);
    /* 4 MiB - 1 KiB fits both 4 MiB blocks; the smaller one comes back. */
    void *p = kiln__buffer_cache_alloc(c, 4 * mib - 1024, 64, &cap);
    cr_assert_eq(p, a);
    cr_assert_eq(cap, cap_a, "the block's capacity, not the request's");
    /* 3.7 MiB: the 4.25 MiB block is more than an eighth larger; a new block. */
    void *q = kiln__buffer_cache_alloc(c, 4 * mib - 3 * mib / 10, 64, &cap);
    cr_assert_neq(q, b);
    cr_assert_eq(cap, (size_t)948 * 4096);
    kiln__buffer_cache_stats(c, &s);
    cr_assert_eq(s.hits, 1);
    cr_assert_eq(s.misses, 4);
    kiln__buffer_cache_free(c, p, cap_a);
    kiln__buffer_cache_free(c, q, cap);
    /* Trim and the limit free the large blocks too. */
    kiln__buffer_cache_set_limit(c, 10 * mib);
    kiln__buffer_cache_stats(c, &s);
    cr_assert_leq(s.kept_bytes, 10 * mib);
    cr_assert_eq(kiln__buffer_cache_trim(c), s.kept_bytes);
    kiln__buffer_cache_stats(c, &s);
    cr_assert_eq(s.kept_blocks, 0);
    kiln__buffer_cache_close(c);
}

/* Live allocator blocks after making a u8 tensor of n bytes, kept until the ctx goes. */
static int64_t blocks_for(kiln_ctx *cx, failing_allocator *fa, int64_t n, kiln_tensor **out) {
    kiln_ctx_trim(cx);
    int64_t before = fa->live_blocks;
    *out = kiln_full(cx, KILN_U8, KILN_SHAPE(n), 7);
    cr_assert_not_null(*out, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq((uintptr_t)kiln_tensor_data(*out) % 64, 0, "%lld bytes: data not aligned",
                 (long long)n);
    return fa->live_blocks - before;
}

Test(buffer_cache, a_small_tensors_storage_and_data_share_one_block) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    cr_assert_not_null(cx);
    kiln_tensor *t[4];
    /* the tensor's record, and one block for its storage and data */
    cr_assert_eq(blocks_for(cx, &fa, 1, &t[0]), 2);
    cr_assert_eq(blocks_for(cx, &fa, (int64_t)KILN__STORAGE_IN_BLOCK_MAX, &t[1]), 2);
    cr_assert_leq(kiln__buffer_cache_capacity(KILN__STORAGE_HEAD + KILN__STORAGE_IN_BLOCK_MAX),
                  1024);
    /* one byte more: the data has a block of its own */
    cr_assert_eq(blocks_for(cx, &fa, (int64_t)KILN__STORAGE_IN_BLOCK_MAX + 1, &t[2]), 3);
    cr_assert_eq(blocks_for(cx, &fa, 100000, &t[3]), 3);
    /* A view keeps the shared block alive after the tensor it was made from goes. */
    kiln_tensor *v = kiln_tensor_retain(kiln_reshape(cx, t[0], KILN_SHAPE(1, 1)));
    kiln_tensor_release(t[0]);
    cr_assert_eq(kiln_tensor_item(cx, v, 0), 7.0);
    kiln_tensor_release(v);
    kiln_ctx_release(cx);
    cr_assert_eq(fa.live_blocks, 0);
}

Test(buffer_cache, a_small_tensor_that_cannot_get_its_block_or_record_is_resource_exhausted) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    cr_assert_not_null(cx);
    static const float data[4] = {1, 2, 3, 4};
    char want[96];
    /* k = 0: the storage's block (with the data); k = 1: the tensor's record */
    for (int k = 0; k < 2; k++) {
        kiln_ctx_trim(cx);
        int64_t live = fa.live_blocks;
        fa.fail_once = false;
        fa.fail_after = fa.allocations + k;
        cr_assert_null(kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), data, sizeof data));
        fa.fail_after = -1;
        snprintf(want, sizeof want, "out of memory allocating %zu bytes for kiln_tensor_from_host",
                 k == 0 ? sizeof data : sizeof(kiln_tensor));
        expect_error(cx, KILN_RESOURCE_EXHAUSTED, want);
        kiln_ctx_trim(cx);
        cr_assert_eq(fa.live_blocks, live, "failure %d leaked", k);
    }
    kiln_ctx_release(cx);
    cr_assert_eq(fa.live_blocks, 0);
}
