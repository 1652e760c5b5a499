/* SPDX-License-Identifier: Apache-2.0 */
/* Loops, branches and calls run over the executable's memory plan (suite `loop_memory`:
 * the cpu backend's plan): a call allocates the same whatever the trip count, carries are
 * kept in place, in two buffers or not at all as the body allows (kiln_exe_print says
 * which), and every way of keeping them computes what the eager evaluator computes, bit
 * for bit, without touching the caller's tensors. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* ---- an allocator that counts ---------------------------------------------------------- */

static atomic_long n_allocs;

static void *counting_alloc(void *user, size_t size, size_t alignment) {
    (void)user;
    atomic_fetch_add(&n_allocs, 1);
    return kiln_allocator_default()->alloc(NULL, size, alignment);
}

static void counting_free(void *user, void *p, size_t size) {
    (void)user;
    kiln_allocator_default()->free(NULL, p, size);
}

static kiln_ctx *counting_ctx(void) {
    static kiln_allocator a = {counting_alloc, counting_free, NULL};
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &a;
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    return cx;
}

static kiln_exe *compile(kiln_ctx *cx, kiln_region_fn f, void *user, kiln_tensor *const *args,
                         int32_t n_args, int32_t n_results) {
    kiln_arg_spec specs[4];
    for (int32_t i = 0; i < n_args; i++)
        specs[i] = (kiln_arg_spec){.dtype = kiln_tensor_dtype(args[i]),
                                   .shape = *kiln_tensor_shape(args[i])};
    kiln_region fn = {f, user};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, specs, n_args, n_results, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_compile_options o = kiln_compile_options_default();
    o.disable_unrolling = true; /* the loops under test stay loops */
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    return exe;
}

static kiln_tensor *ramp(kiln_ctx *cx, int64_t n, double scale) {
    kiln_tensor *t = kiln_iota(cx, KILN_F32, KILN_SHAPE(n), 0);
    return kiln_sine(cx, kiln_multiply(cx, t, kiln_scalar(cx, scale, KILN_F32)));
}

static void expect_same_bits(kiln_tensor *a, kiln_tensor *b, const char *what) {
    cr_assert_eq(kiln_tensor_nbytes(a), kiln_tensor_nbytes(b), "%s", what);
    cr_assert(memcmp(kiln_tensor_data(a), kiln_tensor_data(b), kiln_tensor_nbytes(a)) == 0,
              "%s: the compiled loop computes other bits than the evaluator", what);
}

/* Compiles f, runs it and f eagerly on args; every result must agree bit for bit, and the
 * arguments must be unchanged. Returns the executable's printout (kiln_string_free). */
static char *compiled_matches_eager(kiln_ctx *cx, kiln_region_fn f, void *user,
                                    kiln_tensor *const *args, int32_t n_args, int32_t n_results) {
    kiln_tensor *before[4];
    for (int32_t i = 0; i < n_args; i++) {
        before[i] =
            kiln_tensor_from_host(cx, kiln_tensor_dtype(args[i]), *kiln_tensor_shape(args[i]),
                                  kiln_tensor_data(args[i]), kiln_tensor_nbytes(args[i]));
        cr_assert(before[i]);
    }
    kiln_exe *exe = compile(cx, f, user, args, n_args, n_results);
    kiln_tensor *got[4] = {0}, *want[4] = {0};
    cr_assert_eq(kiln_exe_call(cx, exe, args, got), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(f(cx, args, want, user), KILN_OK, "%s", kiln_ctx_error_message(cx));
    for (int32_t r = 0; r < n_results; r++) {
        char what[32];
        snprintf(what, sizeof what, "result %d", (int)r);
        expect_same_bits(got[r], want[r], what);
    }
    for (int32_t i = 0; i < n_args; i++)
        expect_same_bits(args[i], before[i], "an argument changed under the call");
    char *text = kiln_exe_to_string(cx, exe);
    cr_assert(text);
    kiln_exe_release(exe);
    return text;
}

static const char *carries_of(const char *text) {
    const char *c = strstr(text, "carries:");
    cr_assert(c, "the loop's carries are not printed:\n%s", text);
    return c;
}

/* ---- a loop bounded by an argument: the same allocations for 3 and 3,000 iterations ---- */

static kiln_status below_n(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    kiln_tensor *n = u;
    r[0] = kiln_compare(cx, s[0], n, KILN_CMP_LT, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}

static kiln_status relax(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *x = s[1];
    const int64_t n = kiln_tensor_dim(x, 0);
    kiln_tensor *l = kiln_slice(cx, x, KILN_DIMS(0), KILN_DIMS(n - 2), KILN_DIMS_NONE);
    kiln_tensor *c = kiln_slice(cx, x, KILN_DIMS(1), KILN_DIMS(n - 1), KILN_DIMS_NONE);
    kiln_tensor *rr = kiln_slice(cx, x, KILN_DIMS(2), KILN_DIMS(n), KILN_DIMS_NONE);
    kiln_tensor *mid = kiln_multiply(cx, kiln_add(cx, kiln_add(cx, l, c), rr),
                                     kiln_scalar(cx, 1.0 / 3.0, KILN_F32));
    kiln_tensor *parts[3] = {kiln_slice(cx, x, KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS_NONE), mid,
                             kiln_slice(cx, x, KILN_DIMS(n - 1), KILN_DIMS(n), KILN_DIMS_NONE)};
    r[0] = kiln_add(cx, s[0], kiln_scalar(cx, 1, KILN_I64));
    r[1] = kiln_concatenate(cx, parts, 3, 0);
    return kiln_ctx_status(cx);
}

static kiln_status relax_until(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region cond = {below_n, in[1]}, body = {relax, NULL};
    kiln_tensor *inits[2] = {kiln_scalar(cx, 0, KILN_I64), in[0]}, *res[2];
    kiln_status s = kiln_while(cx, inits, 2, &cond, &body, res);
    if (s != KILN_OK) return s;
    out[0] = res[1];
    return KILN_OK;
}

static long allocs_of_a_call(kiln_ctx *cx, kiln_exe *exe, kiln_tensor *const *args) {
    kiln_scope_begin(cx);
    long before = atomic_load(&n_allocs);
    kiln_tensor *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, args, &r), KILN_OK, "%s", kiln_ctx_error_message(cx));
    long n = atomic_load(&n_allocs) - before;
    kiln_scope_end(cx);
    return n;
}

Test(loop_memory, a_call_allocates_the_same_whatever_the_trip_count) {
    kiln_ctx *cx = counting_ctx();
    kiln_tensor *args[2] = {ramp(cx, 1000, 0.01), kiln_scalar(cx, 3, KILN_I64)};
    kiln_exe *exe = compile(cx, relax_until, NULL, args, 2, 1);
    allocs_of_a_call(cx, exe, args); /* the first call may fill pools */
    long few = allocs_of_a_call(cx, exe, args);
    kiln_tensor *many[2] = {args[0], kiln_scalar(cx, 3000, KILN_I64)};
    long lots = allocs_of_a_call(cx, exe, many);
    cr_expect_eq(few, lots, "3 iterations allocate %ld times, 3000 iterations %ld times", few,
                 lots);
    cr_expect_leq(lots, 4, "a call allocates %ld times", lots);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

Test(loop_memory, a_stencil_carry_matches_the_evaluator) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *args[2] = {ramp(cx, 257, 0.03), kiln_scalar(cx, 50, KILN_I64)};
    char *text = compiled_matches_eager(cx, relax_until, NULL, args, 2, 1);
    /* The concatenate's parts are written straight into the next carry while the kernel
     * still reads this one: two buffers (the counter is updated in place). */
    cr_expect(strstr(carries_of(text), "updated in place, two buffers"), "%s", text);
    kiln_string_free(cx, text);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- how carries are kept ------------------------------------------------------------- */

/* x reads itself reversed, so it cannot be written over; w is passed through; y is
 * updated elementwise from itself. */
static kiln_status mixed_body(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *x = s[1], *w = s[2], *y = s[3];
    r[0] = kiln_add(cx, kiln_multiply(cx, x, w), kiln_reverse(cx, x, KILN_DIMS(0)));
    r[0] = kiln_multiply(cx, kiln_tanh(cx, r[0]), kiln_scalar(cx, 0.9, KILN_F32));
    r[1] = w;
    r[2] = kiln_add(cx, kiln_multiply(cx, y, kiln_scalar(cx, 0.5, KILN_F32)), w);
    return kiln_ctx_status(cx);
}

static kiln_status mixed(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region body = {mixed_body, NULL};
    return kiln_fori_loop(cx, 0, 9, in, 3, &body, out);
}

Test(loop_memory, carries_in_two_buffers_passed_through_or_in_place) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *args[3] = {ramp(cx, 96, 0.1), ramp(cx, 96, 0.2), ramp(cx, 96, 0.3)};
    char *text = compiled_matches_eager(cx, mixed, NULL, args, 3, 3);
    cr_expect(
        strstr(carries_of(text), "updated in place, two buffers, passed through, updated in place"),
        "%s", text);
    kiln_string_free(cx, text);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* (a, b) -> (b, a + b): each carry is the other's next value. */
static kiln_status fib_body(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = s[2];
    r[1] = kiln_add(cx, s[1], s[2]);
    return kiln_ctx_status(cx);
}

static kiln_status fib(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region body = {fib_body, NULL};
    return kiln_fori_loop(cx, 0, 11, in, 2, &body, out);
}

Test(loop_memory, carries_that_trade_places) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *args[2] = {ramp(cx, 33, 0.4), ramp(cx, 33, 0.9)};
    char *text = compiled_matches_eager(cx, fib, NULL, args, 2, 2);
    cr_expect(strstr(carries_of(text), "two buffers, two buffers"), "%s", text);
    kiln_string_free(cx, text);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* The same value for two carries, and a constant for one. */
static kiln_status shared_body(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *x = kiln_exponential(cx, kiln_negate(cx, s[1]));
    r[0] = x;
    r[1] = x;
    r[2] = kiln_scalar(cx, 2.5, KILN_F32);
    return kiln_ctx_status(cx);
}

static kiln_status shared(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region body = {shared_body, NULL};
    return kiln_fori_loop(cx, 0, 5, in, 3, &body, out);
}

Test(loop_memory, one_value_for_two_carries_and_a_constant_carry) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *args[3] = {ramp(cx, 40, 0.4), ramp(cx, 40, 0.9), kiln_scalar(cx, -1, KILN_F32)};
    char *text = compiled_matches_eager(cx, shared, NULL, args, 3, 3);
    kiln_string_free(cx, text);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* A loop that runs no iteration returns its inits, as copies. */
static kiln_status never(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region body = {mixed_body, NULL};
    return kiln_fori_loop(cx, 4, 4, in, 3, &body, out);
}

Test(loop_memory, a_loop_of_no_iterations_returns_its_inits) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *args[3] = {ramp(cx, 16, 0.1), ramp(cx, 16, 0.2), ramp(cx, 16, 0.3)};
    kiln_exe *exe = compile(cx, never, NULL, args, 3, 3);
    kiln_tensor *got[3];
    cr_assert_eq(kiln_exe_call(cx, exe, args, got), KILN_OK, "%s", kiln_ctx_error_message(cx));
    for (int i = 0; i < 3; i++) {
        expect_same_bits(got[i], args[i], "an init");
        cr_expect_neq(kiln_tensor_data(got[i]), kiln_tensor_data(args[i]));
    }
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- branches and loops inside loops --------------------------------------------------- */

static kiln_status halve(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)in;
    out[0] = kiln_multiply(cx, u, kiln_scalar(cx, 0.5, KILN_F32));
    return kiln_ctx_status(cx);
}

static kiln_status keep(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)in;
    out[0] = u; /* an outer value: copied into the branch's result */
    return kiln_ctx_status(cx);
}

static kiln_status inner(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, kiln_cosine(cx, s[1]), kiln_scalar(cx, 0.1, KILN_F32));
    return kiln_ctx_status(cx);
}

static kiln_status outer(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *x = s[1];
    kiln_tensor *big = kiln_compare(cx, kiln_max(cx, x, KILN_DIMS_NONE, false),
                                    kiln_scalar(cx, 0.5, KILN_F32), KILN_CMP_GT, KILN_CMP_DEFAULT);
    kiln_region t = {halve, x}, f = {keep, x};
    kiln_tensor *y = NULL;
    kiln_status st = kiln_cond(cx, big, &t, &f, NULL, 0, 1, &y);
    if (st != KILN_OK) return st;
    kiln_region body = {inner, NULL};
    return kiln_fori_loop(cx, 0, 3, &y, 1, &body, r);
}

static kiln_status nest(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region body = {outer, NULL};
    return kiln_fori_loop(cx, 0, 6, in, 1, &body, out);
}

Test(loop_memory, branches_and_loops_inside_a_loop) {
    kiln_ctx *cx = counting_ctx();
    kiln_tensor *x = ramp(cx, 500, 0.37);
    char *text = compiled_matches_eager(cx, nest, NULL, &x, 1, 1);
    cr_expect(strstr(text, "1 results written in place, 0 copied") &&
                  strstr(text, "0 results written in place, 1 copied"),
              "the branches' results are not planned:\n%s", text);
    kiln_string_free(cx, text);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* A carry the body's branch reads reversed while the branch's result becomes that carry:
 * writing the branch's result over the carry would overwrite what the branch still reads,
 * so the carry takes two buffers. */
static kiln_status flip(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)in;
    out[0] = kiln_add(cx, kiln_reverse(cx, u, KILN_DIMS(0)), kiln_scalar(cx, 1, KILN_F32));
    return kiln_ctx_status(cx);
}

static kiln_status halve_it(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)in;
    out[0] = kiln_multiply(cx, kiln_reverse(cx, u, KILN_DIMS(0)), kiln_scalar(cx, 0.5, KILN_F32));
    return kiln_ctx_status(cx);
}

static kiln_status branchy_body(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *x = s[1];
    kiln_tensor *big = kiln_compare(cx, kiln_sum(cx, x, KILN_DIMS_NONE, false),
                                    kiln_scalar(cx, 0, KILN_F32), KILN_CMP_GT, KILN_CMP_DEFAULT);
    kiln_region t = {flip, x}, f = {halve_it, x};
    return kiln_cond(cx, big, &t, &f, NULL, 0, 1, r);
}

static kiln_status branchy(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region body = {branchy_body, NULL};
    return kiln_fori_loop(cx, 0, 7, in, 1, &body, out);
}

Test(loop_memory, a_branch_reading_the_carry_keeps_it_in_two_buffers) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = ramp(cx, 64, 0.21);
    char *text = compiled_matches_eager(cx, branchy, NULL, &x, 1, 1);
    cr_expect(strstr(carries_of(text), "updated in place, two buffers"), "%s", text);
    kiln_string_free(cx, text);
    expect_ok(cx);
    kiln_ctx_release(cx);
}
