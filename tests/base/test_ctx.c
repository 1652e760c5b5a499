/* SPDX-License-Identifier: Apache-2.0 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "failing_allocator.h"
#include "test_util.h"

Test(status, names_cover_the_canonical_codes) {
    cr_assert_str_eq(kiln_status_name(KILN_OK), "OK");
    cr_assert_str_eq(kiln_status_name(KILN_INVALID_ARGUMENT), "INVALID_ARGUMENT");
    cr_assert_str_eq(kiln_status_name(KILN_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
    cr_assert_str_eq(kiln_status_name(KILN_DATA_LOSS), "DATA_LOSS");
    cr_assert_str_eq(kiln_status_name(KILN_UNAUTHENTICATED), "UNAUTHENTICATED");
    cr_assert_str_eq(kiln_status_name((kiln_status)17), "UNKNOWN_STATUS");
    cr_assert_str_eq(kiln_status_name((kiln_status)-1), "UNKNOWN_STATUS");
    cr_assert_eq(KILN_UNAUTHENTICATED, 16);
    cr_assert_eq(KILN_UNIMPLEMENTED, 12);
}

Test(version, is_the_header_version) { cr_assert_str_eq(kiln_version_string(), "0.1.0"); }

Test(ctx, create_with_defaults_and_release) {
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(NULL, &cx), KILN_OK);
    cr_assert_eq(kiln_ctx_status(cx), KILN_OK);
    cr_assert_str_eq(kiln_ctx_error_message(cx), "");
    cr_assert_eq(kiln_ctx_device(cx).type, KILN_DEVICE_TYPE_CPU);
    cr_assert_eq(kiln_scope_depth(cx), 0);
    kiln_ctx_release(cx);
    kiln_ctx_release(NULL);
}

Test(ctx, create_rejects_bad_options) {
    kiln_ctx *cx = (kiln_ctx *)0x1;
    cr_assert_eq(kiln_ctx_create(NULL, NULL), KILN_INVALID_ARGUMENT);

    kiln_ctx_options o = kiln_ctx_options_default();
    o.struct_size = 0;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_INVALID_ARGUMENT);
    cr_assert_null(cx);

    o = kiln_ctx_options_default();
    kiln_allocator half = {.alloc = kiln_allocator_default()->alloc, .free = NULL};
    o.allocator = &half;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_INVALID_ARGUMENT);

    o = kiln_ctx_options_default();
    o.log_level = (kiln_log_level)9;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_INVALID_ARGUMENT);

    o = kiln_ctx_options_default();
    o.device = (kiln_device){KILN_DEVICE_TYPE_CUDA, 0};
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_INVALID_ARGUMENT);
    cr_assert_null(cx);
}

Test(ctx, accepts_options_from_an_older_smaller_struct) {
    /* A struct that ends after `allocator`: the later fields take their defaults. */
    kiln_ctx_options o = kiln_ctx_options_default();
    o.struct_size = offsetof(kiln_ctx_options, allocator) + sizeof(o.allocator);
    o.log_level = (kiln_log_level)77; /* beyond struct_size: must be ignored */
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    kiln_ctx_release(cx);
}

Test(ctx, errors_are_sticky_until_cleared) {
    kiln_ctx *cx = test_ctx();
    cr_assert_eq(kiln_ctx_set_error(cx, KILN_NOT_FOUND, "first %d", 1), KILN_NOT_FOUND);
    cr_assert_eq(kiln_ctx_set_error(cx, KILN_INTERNAL, "second"), KILN_INTERNAL);
    cr_assert_eq(kiln_ctx_status(cx), KILN_NOT_FOUND);
    cr_assert_str_eq(kiln_ctx_error_message(cx), "first 1");
    kiln_ctx_clear_error(cx);
    cr_assert_eq(kiln_ctx_status(cx), KILN_OK);
    cr_assert_str_eq(kiln_ctx_error_message(cx), "");
    cr_assert_eq(kiln_ctx_set_error(cx, KILN_OK, "not an error"), KILN_OK);
    cr_assert_eq(kiln_ctx_status(cx), KILN_OK);
    kiln_ctx_release(cx);
}

Test(ctx, long_messages_are_truncated_not_overflowed) {
    kiln_ctx *cx = test_ctx();
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    kiln_ctx_set_error(cx, KILN_UNKNOWN, "%s", big);
    cr_assert_lt(strlen(kiln_ctx_error_message(cx)), 1024);
    cr_assert_gt(strlen(kiln_ctx_error_message(cx)), 1000);
    kiln_ctx_release(cx);
}

Test(ctx, null_ctx_is_handled) {
    cr_assert_eq(kiln_ctx_status(NULL), KILN_INVALID_ARGUMENT);
    cr_assert_not_null(kiln_ctx_error_message(NULL));
    kiln_ctx_clear_error(NULL);
    cr_assert_eq(kiln_ctx_set_error(NULL, KILN_UNKNOWN, "x"), KILN_UNKNOWN);
    cr_assert_eq(kiln_scope_begin(NULL), KILN_INVALID_ARGUMENT);
    cr_assert_eq(kiln_scope_end(NULL), KILN_INVALID_ARGUMENT);
    kiln_ctx_log(NULL, KILN_LOG_ERROR, "nothing");
}

/* ---- logging ---------------------------------------------------------------------- */

typedef struct {
    int count;
    kiln_log_level last_level;
    char last[256];
} log_capture;

static void capture(void *user, kiln_log_level level, const char *message) {
    log_capture *c = user;
    c->count++;
    c->last_level = level;
    snprintf(c->last, sizeof c->last, "%s", message);
}

static kiln_ctx *ctx_with_log(log_capture *c, kiln_log_level level) {
    kiln_ctx_options o = kiln_ctx_options_default();
    o.log_fn = capture;
    o.log_user = c;
    o.log_level = level;
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    return cx;
}

Test(log, callback_receives_enabled_levels_only) {
    unsetenv("KILN_LOG");
    log_capture c = {0};
    kiln_ctx *cx = ctx_with_log(&c, KILN_LOG_INFO);
    kiln_ctx_log(cx, KILN_LOG_DEBUG, "hidden");
    cr_assert_eq(c.count, 0);
    kiln_ctx_log(cx, KILN_LOG_INFO, "compiled %s in %d us", "f", 12);
    cr_assert_eq(c.count, 1);
    cr_assert_eq(c.last_level, KILN_LOG_INFO);
    cr_assert_str_eq(c.last, "compiled f in 12 us");
    kiln_ctx_set_log_level(cx, KILN_LOG_DEBUG);
    cr_assert_eq(kiln_ctx_log_level(cx), KILN_LOG_DEBUG);
    kiln_ctx_log(cx, KILN_LOG_DEBUG, "now shown");
    cr_assert_eq(c.count, 2);
    kiln_ctx_set_log_level(cx, (kiln_log_level)42); /* ignored */
    cr_assert_eq(kiln_ctx_log_level(cx), KILN_LOG_DEBUG);
    kiln_ctx_log(cx, KILN_LOG_OFF, "never");
    cr_assert_eq(c.count, 2);
    kiln_ctx_release(cx);
}

Test(log, default_level_is_warn_with_a_callback_and_off_without) {
    unsetenv("KILN_LOG");
    log_capture c = {0};
    kiln_ctx *cx = ctx_with_log(&c, KILN_LOG_UNSET);
    cr_assert_eq(kiln_ctx_log_level(cx), KILN_LOG_WARN);
    kiln_ctx_log(cx, KILN_LOG_INFO, "quiet");
    kiln_ctx_log(cx, KILN_LOG_WARN, "loud");
    cr_assert_eq(c.count, 1);
    kiln_ctx_release(cx);
    kiln_ctx *plain = test_ctx();
    cr_assert_eq(kiln_ctx_log_level(plain), KILN_LOG_OFF);
    kiln_ctx_release(plain);
}

Test(log, environment_sets_the_level) {
    log_capture c = {0};
    setenv("KILN_LOG", "debug", 1);
    kiln_ctx *cx = ctx_with_log(&c, KILN_LOG_UNSET);
    cr_assert_eq(kiln_ctx_log_level(cx), KILN_LOG_DEBUG);
    /* At debug, recorded errors are logged too. */
    kiln_ctx_set_error(cx, KILN_INTERNAL, "boom");
    cr_assert_eq(c.count, 1);
    cr_assert_str_eq(c.last, "boom");
    kiln_ctx_release(cx);

    setenv("KILN_LOG", "ERROR", 1);
    cx = ctx_with_log(&c, KILN_LOG_UNSET);
    cr_assert_eq(kiln_ctx_log_level(cx), KILN_LOG_ERROR);
    kiln_ctx_release(cx);

    setenv("KILN_LOG", "shouting", 1); /* not a level: ignored */
    cx = ctx_with_log(&c, KILN_LOG_UNSET);
    cr_assert_eq(kiln_ctx_log_level(cx), KILN_LOG_WARN);
    kiln_ctx_release(cx);

    setenv("KILN_LOG", "debug", 1); /* an explicit level in the options wins */
    cx = ctx_with_log(&c, KILN_LOG_ERROR);
    cr_assert_eq(kiln_ctx_log_level(cx), KILN_LOG_ERROR);
    kiln_ctx_release(cx);
    unsetenv("KILN_LOG");
}

Test(log, without_a_callback_lines_go_to_stderr, .init = cr_redirect_stderr) {
    setenv("KILN_LOG", "info", 1);
    kiln_ctx *cx = test_ctx();
    kiln_ctx_log(cx, KILN_LOG_INFO, "hello %d", 7);
    kiln_ctx_log(cx, KILN_LOG_DEBUG, "hidden");
    fflush(stderr);
    cr_assert_stderr_eq_str("kiln info: hello 7\n");
    kiln_ctx_release(cx);
    unsetenv("KILN_LOG");
}

Test(log, level_names_parse) {
    kiln_log_level l = KILN_LOG_UNSET;
    cr_assert(kiln_log_level_parse("warn", &l));
    cr_assert_eq(l, KILN_LOG_WARN);
    cr_assert(kiln_log_level_parse("Info", &l));
    cr_assert_eq(l, KILN_LOG_INFO);
    cr_assert(kiln_log_level_parse("off", &l));
    cr_assert_eq(l, KILN_LOG_OFF);
    cr_assert_not(kiln_log_level_parse("verbose", &l));
    cr_assert_eq(l, KILN_LOG_OFF);
    cr_assert_not(kiln_log_level_parse(NULL, &l));
    cr_assert_not(kiln_log_level_parse("warn", NULL));
}

/* ---- scopes ------------------------------------------------------------------------ */

Test(scope, nest_and_unbalanced_end_is_an_error) {
    kiln_ctx *cx = test_ctx();
    cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
    cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
    cr_assert_eq(kiln_scope_depth(cx), 2);
    cr_assert_eq(kiln_scope_end(cx), KILN_OK);
    cr_assert_eq(kiln_scope_end(cx), KILN_OK);
    cr_assert_eq(kiln_scope_end(cx), KILN_FAILED_PRECONDITION);
    expect_error(cx, KILN_FAILED_PRECONDITION, "no open scope");
    /* Open scopes are ended by release. */
    kiln_scope_begin(cx);
    kiln_scope_begin(cx);
    kiln_ctx_release(cx);
}

/* ---- the allocator ------------------------------------------------------------------ */

Test(alloc, every_allocation_goes_through_the_injected_allocator) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    cr_assert_not_null(cx);
    cr_assert_eq(fa.allocations, 2); /* the ctx and its buffer cache */
    cr_assert_eq(kiln_ctx_allocator(cx)->user, &fa);
    kiln_scope_begin(cx);
    kiln_tensor *t = kiln_zeros(cx, KILN_F32, KILN_SHAPE(4, 4));
    cr_assert_not_null(t);
    cr_assert_geq(fa.allocations, 4); /* scope, tensor, storage, data */
    cr_assert_geq(fa.live_bytes, 64);
    kiln_scope_end(cx);
    kiln_ctx_release(cx);
    cr_assert_eq(fa.live_blocks, 0);
    cr_assert_eq(fa.live_bytes, 0);
}

Test(alloc, ctx_creation_fails_cleanly_without_memory) {
    failing_allocator fa;
    failing_allocator_init(&fa, 0);
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &fa.allocator;
    kiln_ctx *cx = (kiln_ctx *)0x1;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_RESOURCE_EXHAUSTED);
    cr_assert_null(cx);
    cr_assert_eq(fa.live_blocks, 0);
}

Test(alloc, scope_begin_reports_exhaustion) {
    failing_allocator fa;
    failing_allocator_init(&fa, 2); /* the ctx and its buffer cache */
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &fa.allocator;
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    cr_assert_eq(kiln_scope_begin(cx), KILN_RESOURCE_EXHAUSTED);
    expect_error(cx, KILN_RESOURCE_EXHAUSTED, "scope");
    cr_assert_eq(kiln_scope_depth(cx), 0);
    kiln_ctx_release(cx);
    cr_assert_eq(fa.live_blocks, 0);
}

Test(alloc, default_allocator_aligns) {
    const kiln_allocator *a = kiln_allocator_default();
    void *p = a->alloc(a->user, 100, 64);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % 64, 0);
    a->free(a->user, p, 100);
}
