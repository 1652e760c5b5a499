/* SPDX-License-Identifier: Apache-2.0 */
/* Large results of an executable: with the default allocator they start on a 2 MiB boundary
 * (so their huge-page advice covers them whole) and hold the right values from the first
 * call on; a user's allocator is never asked for more than the 4096-byte alignment its
 * contract allows. */
#include <stdint.h>

#include "base/alloc.h"
#include "test_util.h"

#define N ((int64_t)(KILN_HUGE_BLOCK / sizeof(float)) + 1000)

static kiln_status twice_plus_one(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *user) {
    (void)user;
    out[0] = kiln_add(cx, kiln_add(cx, in[0], in[0]), kiln_scalar_like(cx, in[0], 1));
    return kiln_ctx_status(cx);
}

static kiln_exe *compile_twice(kiln_ctx *cx) {
    kiln_region fn = {twice_plus_one, NULL};
    kiln_arg_spec arg = {.dtype = KILN_F32, .shape = KILN_SHAPE(N)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &arg, 1, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    return exe;
}

/* Calls exe on iota(N) twice (a fresh buffer, then a pooled one) and checks both results. */
static void call_and_check(kiln_ctx *cx, kiln_exe *exe, bool want_huge_aligned) {
    kiln_tensor *x = kiln_iota(cx, KILN_F32, KILN_SHAPE(N), 0);
    cr_assert_not_null(x, "%s", kiln_ctx_error_message(cx));
    for (int call = 0; call < 2; call++) {
        kiln_tensor *r = NULL;
        cr_assert_eq(kiln_exe_call(cx, exe, &x, &r), KILN_OK, "%s", kiln_ctx_error_message(cx));
        const float *p = kiln_tensor_data(r);
        if (want_huge_aligned) cr_expect_eq((uintptr_t)p % KILN_HUGE_PAGE, 0, "call %d", call);
        for (int64_t i = 0; i < N; i += 4093)
            cr_assert_eq(p[i], 2.0f * (float)i + 1.0f, "call %d, element %lld", call, (long long)i);
        cr_assert_eq(p[N - 1], 2.0f * (float)(N - 1) + 1.0f);
        kiln_tensor_release(r);
    }
    kiln_tensor_release(x);
}

Test(large_results, default_allocator_results_start_on_a_huge_page) {
    kiln_ctx *cx = test_ctx();
    kiln_exe *exe = compile_twice(cx);
    call_and_check(cx, exe, true);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

static size_t max_alignment_asked;

static void *recording_alloc(void *user, size_t size, size_t alignment) {
    (void)user;
    if (alignment > max_alignment_asked) max_alignment_asked = alignment;
    return kiln_allocator_default()->alloc(NULL, size, alignment);
}

static void recording_free(void *user, void *p, size_t size) {
    (void)user;
    kiln_allocator_default()->free(NULL, p, size);
}

Test(large_results, a_users_allocator_is_asked_for_at_most_4096_byte_alignment) {
    kiln_allocator a = {recording_alloc, recording_free, NULL};
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &a;
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    max_alignment_asked = 0;
    kiln_exe *exe = compile_twice(cx);
    call_and_check(cx, exe, false);
    cr_expect_leq(max_alignment_asked, 4096, "asked for %zu", max_alignment_asked);
    cr_expect_geq(max_alignment_asked, KILN_DATA_ALIGNMENT);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}
