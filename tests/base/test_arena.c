/* SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>

#include "base/arena.h"
#include "base/strbuf.h"
#include "failing_allocator.h"
#include "test_util.h"

Test(arena, aligned_allocations_and_growth) {
    kiln_ctx *cx = test_ctx();
    kiln__arena a;
    kiln__arena_init(&a, cx, 256);
    char *p1 = kiln__arena_alloc(&a, 3, 1);
    double *p2 = kiln__arena_alloc(&a, sizeof(double) * 4, _Alignof(double));
    void *p3 = kiln__arena_alloc(&a, 10, 64);
    cr_assert(p1 && p2 && p3);
    cr_assert_eq((uintptr_t)p2 % _Alignof(double), 0);
    cr_assert_eq((uintptr_t)p3 % 64, 0);
    memset(p1, 1, 3);
    p2[3] = 1.5;
    /* Bigger than a block: gets a block of its own. */
    unsigned char *big = kiln__arena_alloc(&a, 10000, 16);
    cr_assert_not_null(big);
    memset(big, 7, 10000);
    cr_assert_eq(p2[3], 1.5);
    /* Many small ones span several blocks and never overlap. */
    int *ptrs[500];
    for (int i = 0; i < 500; i++) {
        ptrs[i] = kiln__arena_alloc(&a, sizeof(int), _Alignof(int));
        *ptrs[i] = i;
    }
    for (int i = 0; i < 500; i++)
        cr_assert_eq(*ptrs[i], i);
    void *z1 = kiln__arena_alloc(&a, 0, 1), *z2 = kiln__arena_alloc(&a, 0, 1);
    cr_assert(z1 && z2 && z1 != z2);
    char *s = kiln__arena_strndup(&a, "hello world", 5);
    cr_assert_str_eq(s, "hello");
    kiln__arena_reset(&a);
    cr_assert_eq(a.used_total, 0);
    cr_assert_not_null(kiln__arena_alloc(&a, 8, 8));
    kiln__arena_destroy(&a);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(arena, bad_alignment_is_an_internal_error) {
    kiln_ctx *cx = test_ctx();
    kiln__arena a;
    kiln__arena_init(&a, cx, 0);
    cr_assert_null(kiln__arena_alloc(&a, 8, 3));
    expect_error(cx, KILN_INTERNAL, "alignment");
    cr_assert_null(kiln__arena_alloc(&a, SIZE_MAX - 8, 8));
    expect_error(cx, KILN_RESOURCE_EXHAUSTED, "too large");
    kiln__arena_destroy(&a);
    kiln_ctx_release(cx);
}

Test(arena, out_of_memory_is_reported_and_nothing_leaks) {
    for (int64_t n = 2; n < 7; n++) { /* the ctx and its cache first */
        failing_allocator fa;
        failing_allocator_init(&fa, n);
        kiln_ctx_options o = kiln_ctx_options_default();
        o.allocator = &fa.allocator;
        kiln_ctx *cx = NULL;
        cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
        kiln__arena a;
        kiln__arena_init(&a, cx, 128);
        bool failed = false;
        for (int i = 0; i < 1000 && !failed; i++)
            failed = kiln__arena_alloc(&a, 100, 8) == NULL;
        cr_assert(failed);
        cr_assert_eq(kiln_ctx_status(cx), KILN_RESOURCE_EXHAUSTED);
        kiln__arena_destroy(&a);
        kiln_ctx_release(cx);
        cr_assert_eq(fa.live_blocks, 0);
    }
}

Test(strbuf, builds_and_grows) {
    kiln_ctx *cx = test_ctx();
    kiln__strbuf sb;
    kiln__strbuf_init(&sb, cx);
    kiln__strbuf_puts(&sb, "a");
    kiln__strbuf_printf(&sb, "%d-%s", 42, "x");
    kiln__strbuf_repeat(&sb, '.', 3);
    for (int i = 0; i < 200; i++)
        kiln__strbuf_puts(&sb, "0123456789");
    char big[600];
    memset(big, 'y', sizeof big - 1);
    big[sizeof big - 1] = 0;
    kiln__strbuf_printf(&sb, "%s", big);
    char *s = kiln__strbuf_take(&sb);
    cr_assert_not_null(s);
    cr_assert_eq(strncmp(s, "a42-x...0123", 12), 0);
    cr_assert_eq(strlen(s), 8 + 2000 + 599);
    kiln__strbuf_free_string(cx, s);
    kiln__strbuf_destroy(&sb);
    kiln_ctx_release(cx);
}

Test(strbuf, allocation_failure_yields_null) {
    failing_allocator fa;
    failing_allocator_init(&fa, 2);
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &fa.allocator;
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    kiln__strbuf sb;
    kiln__strbuf_init(&sb, cx);
    kiln__strbuf_puts(&sb, "hello");
    cr_assert_null(kiln__strbuf_take(&sb));
    expect_error(cx, KILN_RESOURCE_EXHAUSTED, "string");
    kiln_ctx_release(cx);
    cr_assert_eq(fa.live_blocks, 0);
}
