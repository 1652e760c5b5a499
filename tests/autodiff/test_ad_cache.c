/* SPDX-License-Identifier: Apache-2.0 */
/* The ctx's cache of eager derivatives: a repeated eager kiln_grad compiles once; any change
 * to what the derivative computes (a shape, a captured value, the function) compiles anew
 * and gives the right answer; large captured constants are not cached; the bound evicts
 * the least recently used; clear and the statistics. */
#include <math.h>
#include <stdint.h>

#include "test_util.h"

static kiln_jit_stats stats(kiln_ctx *cx) {
    kiln_jit_stats s;
    cr_assert_eq(kiln_ad_cache_stats(cx, &s), KILN_OK);
    return s;
}

/* sum(c * x^2) with c a captured scalar (the value `user` points to): grad = 2 c x. */
static kiln_status scaled_square(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                 void *user) {
    double c = *(const double *)user;
    kiln_tensor *x = in[0];
    out[0] = kiln_sum(cx, kiln_multiply(cx, kiln_scalar(cx, c, KILN_F32), kiln_multiply(cx, x, x)),
                      KILN_DIMS_NONE, false);
    return kiln_ctx_status(cx);
}

static kiln_tensor *ramp(kiln_ctx *cx, int64_t n) {
    return kiln_convert(cx, kiln_iota(cx, KILN_I32, KILN_SHAPE(n), 0), KILN_F32);
}

static void expect_grad(kiln_ctx *cx, double c, int64_t n) {
    kiln_tensor *x = ramp(cx, n), *g = NULL;
    kiln_region f = {scaled_square, &c};
    cr_assert_eq(kiln_grad(cx, &f, 1, &x, NULL, &g), KILN_OK, "%s", kiln_ctx_error_message(cx));
    const float *gv = kiln_tensor_data(g);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(gv[i], (float)(2 * c * (double)i), "c %g n %lld: g[%lld] = %g", c,
                     (long long)n, (long long)i, gv[i]);
}

Test(ad_cache, a_repeated_eager_grad_compiles_once) {
    kiln_ctx *cx = test_ctx();
    kiln_jit_stats s0 = stats(cx);
    cr_assert_eq(s0.compiles, 0);
    for (int i = 0; i < 5; i++)
        expect_grad(cx, 2.0, 16);
    kiln_jit_stats s = stats(cx);
    cr_expect_eq(s.compiles, 1);
    cr_expect_eq(s.hits, 4);
    cr_expect_eq(s.misses, 1);
    cr_expect_eq(s.entries, 1);
    cr_expect_gt(s.bytes, 0);
    cr_expect_gt(s.compile_ns, 0);
    kiln_ctx_release(cx);
}

Test(ad_cache, a_change_in_what_is_computed_compiles_anew) {
    kiln_ctx *cx = test_ctx();
    expect_grad(cx, 2.0, 16);
    expect_grad(cx, 3.0, 16); /* another captured value: another derivative */
    expect_grad(cx, 2.0, 17); /* another shape */
    cr_expect_eq(stats(cx).compiles, 3);
    expect_grad(cx, 3.0, 16);
    expect_grad(cx, 2.0, 17);
    expect_grad(cx, 2.0, 16);
    kiln_jit_stats s = stats(cx);
    cr_expect_eq(s.compiles, 3);
    cr_expect_eq(s.hits, 3);
    kiln_ctx_release(cx);
}

/* sum(w * x) with w captured through user: a constant of 4 KiB. */
static kiln_status weighted(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    out[0] = kiln_sum(cx, kiln_multiply(cx, (kiln_tensor *)user, in[0]), KILN_DIMS_NONE, false);
    return kiln_ctx_status(cx);
}

Test(ad_cache, large_captured_constants_are_compiled_every_call) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = ramp(cx, 1024);
    for (int k = 1; k <= 3; k++) {
        kiln_tensor *w = kiln_multiply(cx, ramp(cx, 1024), kiln_scalar(cx, k, KILN_F32)), *g = NULL;
        kiln_region f = {weighted, w};
        cr_assert_eq(kiln_grad(cx, &f, 1, &x, NULL, &g), KILN_OK, "%s", kiln_ctx_error_message(cx));
        cr_assert_eq(((const float *)kiln_tensor_data(g))[100], 100.0f * (float)k,
                     "the gradient is w, this call's");
    }
    kiln_jit_stats s = stats(cx);
    cr_expect_eq(s.entries, 0);
    cr_expect_eq(s.hits, 0);
    cr_expect_eq(s.misses, 3);
    kiln_ctx_release(cx);
}

Test(ad_cache, the_least_recently_used_is_evicted_and_clear_empties) {
    kiln_ctx *cx = test_ctx();
    for (int64_t n = 1; n <= KILN_AD_CACHE_ENTRIES; n++)
        expect_grad(cx, 1.0, n);
    expect_grad(cx, 1.0, 1); /* n = 1 is now the most recent; n = 2 the least */
    expect_grad(cx, 1.0, KILN_AD_CACHE_ENTRIES + 1);
    kiln_jit_stats s = stats(cx);
    cr_expect_eq(s.entries, KILN_AD_CACHE_ENTRIES);
    cr_expect_eq(s.evictions, 1);
    expect_grad(cx, 1.0, 1);
    cr_expect_eq(stats(cx).compiles, s.compiles, "n = 1 stayed");
    expect_grad(cx, 1.0, 2);
    cr_expect_eq(stats(cx).compiles, s.compiles + 1, "n = 2 was evicted");
    kiln_ad_cache_clear(cx);
    s = stats(cx);
    cr_expect_eq(s.entries, 0);
    cr_expect_eq(s.bytes, 0);
    expect_grad(cx, 1.0, 1);
    cr_expect_eq(stats(cx).compiles, s.compiles + 1);
    kiln_ctx_release(cx);
}

Test(ad_cache, stats_name_a_null_argument) {
    kiln_ctx *cx = test_ctx();
    cr_expect_eq(kiln_ad_cache_stats(NULL, NULL), KILN_INVALID_ARGUMENT);
    cr_expect_eq(kiln_ad_cache_stats(cx, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_ad_cache_stats: out is NULL");
    kiln_ad_cache_clear(NULL); /* a no-op */
    kiln_ctx_release(cx);
}

/* Eager and traced agree, and a traced grad does not touch the eager cache. */
static kiln_status grad_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    kiln_region f = {scaled_square, user};
    return kiln_grad(cx, &f, 1, in, NULL, out);
}

Test(ad_cache, traced_grads_are_not_cached_here) {
    kiln_ctx *cx = test_ctx();
    double c = 1.5;
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(8)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &(kiln_region){grad_fn, &c}, &a, 1, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_module_release(m);
    cr_expect_eq(stats(cx).misses + stats(cx).hits, 0);
    expect_grad(cx, 1.5, 8);
    cr_expect_eq(stats(cx).compiles, 1);
    kiln_ctx_release(cx);
}
