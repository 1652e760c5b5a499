/* SPDX-License-Identifier: Apache-2.0 */
/* Control flow (while, if, case, call, optimization_barrier) and sources (constant, iota,
 * rng_bit_generator), with the conformance cases of StableHLO's interpreter tests
 * (while.mlir, if.mlir, case.mlir, call.mlir, optimization_barrier.mlir, constant.mlir,
 * iota.mlir) and the spec's rng_bit_generator example.
 *
 * The regions here compute on host values (reading their rank-0 arguments), so these
 * tests do not depend on the elementwise kernels; only kiln_where and kiln_cast do. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "failing_allocator.h"
#include "frontend/op_run.h"
#include "op_cases.h"
#include "test_util.h"

/* ---- helpers ------------------------------------------------------------------------- */

static kiln_tensor *scalar_i64(kiln_ctx *cx, int64_t v) {
    return kiln_tensor_from_host(cx, KILN_I64, KILN_SHAPE_SCALAR, &v, sizeof v);
}

static kiln_tensor *scalar_i32(kiln_ctx *cx, int32_t v) {
    return kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE_SCALAR, &v, sizeof v);
}

static kiln_tensor *scalar_bool(kiln_ctx *cx, bool v) {
    uint8_t b = v;
    return kiln_tensor_from_host(cx, KILN_BOOL, KILN_SHAPE_SCALAR, &b, 1);
}

static kiln_tensor *scalar_f32(kiln_ctx *cx, float v) {
    return kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE_SCALAR, &v, sizeof v);
}

static kiln_tensor *vec_i64(kiln_ctx *cx, int64_t n, int64_t fill) {
    return kiln_full_int(cx, KILN_I64, KILN_SHAPE(n), fill);
}

static kiln_tensor *state_u64(kiln_ctx *cx, int64_t n, const uint64_t *words) {
    return kiln_tensor_from_host(cx, KILN_U64, KILN_SHAPE(n), words, (size_t)n * 8);
}

static int64_t as_i64(const kiln_tensor *t) {
    int64_t v;
    memcpy(&v, kiln_tensor_data(t), sizeof v);
    return v;
}

static void expect_i64(kiln_ctx *cx, const kiln_tensor *t, int64_t n, int64_t want) {
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_dtype(t), KILN_I64);
    cr_assert_eq(kiln_tensor_numel(t), n);
    const int64_t *d = kiln_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(d[i], want, "element %lld is %lld; expected %lld", (long long)i,
                     (long long)d[i], (long long)want);
}

static kiln_status ok_if(kiln_ctx *cx, bool ok) { return ok ? KILN_OK : kiln_ctx_status(cx); }

/* ---- regions ------------------------------------------------------------------------- */

/* State (i, sum): while i < limit { sum += step; i += 1 }, counting calls. */
typedef struct loop_info {
    int64_t limit;
    int64_t step;
    int cond_calls, body_calls;
    int n; /* state size, for the generic regions */
} loop_info;

static kiln_status cond_lt(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r, void *user) {
    loop_info *L = user;
    L->cond_calls++;
    r[0] = scalar_bool(cx, as_i64(args[0]) < L->limit);
    return ok_if(cx, r[0]);
}

static kiln_status body_count(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r, void *user) {
    loop_info *L = user;
    L->body_calls++;
    r[0] = scalar_i64(cx, as_i64(args[0]) + 1);
    r[1] = scalar_i64(cx, as_i64(args[1]) + L->step);
    return ok_if(cx, r[0] && r[1]);
}

static kiln_status cond_false(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r, void *user) {
    (void)args;
    ((loop_info *)user)->cond_calls++;
    r[0] = scalar_bool(cx, false);
    return ok_if(cx, r[0]);
}

/* Returns its n arguments unchanged. */
static kiln_status body_identity(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r,
                                 void *user) {
    (void)cx;
    loop_info *L = user;
    L->body_calls++;
    for (int i = 0; i < L->n; i++)
        r[i] = args[i];
    return KILN_OK;
}

/* Runs the body `limit` times, counting in user data (for states that are not counters). */
static kiln_status cond_calls_below(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r,
                                    void *user) {
    (void)args;
    loop_info *L = user;
    r[0] = scalar_bool(cx, L->cond_calls++ < L->limit);
    return ok_if(cx, r[0]);
}

static kiln_status cond_i32(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r, void *user) {
    (void)args, (void)user;
    r[0] = scalar_i32(cx, 1);
    return ok_if(cx, r[0]);
}

static kiln_status cond_vector(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r,
                               void *user) {
    (void)args, (void)user;
    r[0] = kiln_ones(cx, KILN_BOOL, KILN_SHAPE(2));
    return ok_if(cx, r[0]);
}

static kiln_status body_short(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r, void *user) {
    (void)user;
    r[0] = scalar_i64(cx, as_i64(args[0]) + 1); /* r[1] left NULL */
    return ok_if(cx, r[0]);
}

static kiln_status body_f32(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r, void *user) {
    (void)user;
    r[0] = scalar_f32(cx, 1.0f);
    r[1] = args[1];
    return ok_if(cx, r[0]);
}

static kiln_status body_wrong_shape(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r,
                                    void *user) {
    (void)user;
    r[0] = scalar_i64(cx, as_i64(args[0]) + 1);
    r[1] = vec_i64(cx, 3, 0);
    return ok_if(cx, r[0] && r[1]);
}

/* Makes some tensors, records an error of its own and fails. */
static kiln_status body_fails(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r, void *user) {
    (void)args, (void)user;
    r[0] = vec_i64(cx, 100, 1);
    r[1] = vec_i64(cx, 100, 2);
    return kiln_ctx_set_error(cx, KILN_DATA_LOSS, "the body broke on purpose");
}

/* Fails without a message. */
static kiln_status region_aborts(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r,
                                 void *user) {
    (void)cx, (void)args, (void)r, (void)user;
    return KILN_ABORTED;
}

/* ---- while --------------------------------------------------------------------------- */

Test(control, while_conformance) {
    /* while.mlir: i = 0, sum = 0; while (i < 10) { sum += 1; i += 1 } -> 10, 10 */
    kiln_ctx *cx = test_ctx();
    loop_info L = {.limit = 10, .step = 1};
    kiln_tensor *out[2];
    kiln_status s = kiln_while(cx, (kiln_tensor *[]){scalar_i64(cx, 0), scalar_i64(cx, 0)}, 2,
                               &(kiln_region){cond_lt, &L}, &(kiln_region){body_count, &L}, out);
    cr_assert_eq(s, KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_i64(cx, out[0], 1, 10);
    expect_i64(cx, out[1], 1, 10);
    cr_assert_eq(L.cond_calls, 11);
    cr_assert_eq(L.body_calls, 10);
    /* The spec's example starts at i = 1: 9 iterations. */
    loop_info M = {.limit = 10, .step = 1};
    s = kiln_while(cx, (kiln_tensor *[]){scalar_i64(cx, 1), scalar_i64(cx, 0)}, 2,
                   &(kiln_region){cond_lt, &M}, &(kiln_region){body_count, &M}, out);
    cr_assert_eq(s, KILN_OK);
    expect_i64(cx, out[0], 1, 10);
    expect_i64(cx, out[1], 1, 9);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, while_that_runs_zero_times_copies_the_inits) {
    kiln_ctx *cx = test_ctx();
    loop_info L = {.limit = 0};
    kiln_tensor *inits[2] = {scalar_i64(cx, 4), vec_i64(cx, 0, 0)}; /* one empty */
    kiln_tensor *out[2];
    cr_assert_eq(kiln_while(cx, inits, 2, &(kiln_region){cond_false, &L},
                            &(kiln_region){body_count, &L}, out),
                 KILN_OK);
    cr_assert_eq(L.cond_calls, 1);
    cr_assert_eq(L.body_calls, 0);
    expect_i64(cx, out[0], 1, 4);
    cr_assert_eq(kiln_tensor_numel(out[1]), 0);
    cr_assert_eq(kiln_tensor_rank(out[1]), 1);
    /* Tensors of their own: releasing them leaves the inits alone. */
    cr_assert_neq(out[0], inits[0]);
    cr_assert_neq(out[1], inits[1]);
    kiln_tensor_release(out[0]);
    kiln_tensor_release(out[1]);
    expect_i64(cx, inits[0], 1, 4);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, while_body_returning_its_arguments) {
    kiln_ctx *cx = test_ctx();
    loop_info L = {.limit = 3, .n = 2};
    kiln_tensor *inits[2] = {scalar_i64(cx, 7), vec_i64(cx, 5, -2)};
    kiln_tensor *out[2];
    cr_assert_eq(kiln_while(cx, inits, 2, &(kiln_region){cond_calls_below, &L},
                            &(kiln_region){body_identity, &L}, out),
                 KILN_OK);
    cr_assert_eq(L.body_calls, 3);
    expect_i64(cx, out[0], 1, 7);
    expect_i64(cx, out[1], 5, -2);
    cr_assert_neq(out[0], inits[0]);
    kiln_tensor_release(inits[0]); /* early releases in any order */
    kiln_tensor_release(out[1]);
    expect_i64(cx, out[0], 1, 7);
    expect_i64(cx, inits[1], 5, -2);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, while_with_no_state_and_with_many_values) {
    kiln_ctx *cx = test_ctx();
    loop_info L = {.limit = 3, .n = 0};
    cr_assert_eq(kiln_while(cx, NULL, 0, &(kiln_region){cond_calls_below, &L},
                            &(kiln_region){body_identity, &L}, NULL),
                 KILN_OK);
    cr_assert_eq(L.body_calls, 3);
    /* More state values than the kernels keep on the stack. */
    enum { N = 13 };
    kiln_tensor *inits[N], *out[N];
    for (int i = 0; i < N; i++)
        inits[i] = vec_i64(cx, i + 1, i);
    loop_info M = {.limit = 4, .n = N};
    cr_assert_eq(kiln_while(cx, inits, N, &(kiln_region){cond_calls_below, &M},
                            &(kiln_region){body_identity, &M}, out),
                 KILN_OK);
    cr_assert_eq(M.body_calls, 4);
    for (int i = 0; i < N; i++)
        expect_i64(cx, out[i], i + 1, i);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, while_cond_must_return_a_bool_scalar) {
    kiln_ctx *cx = test_ctx();
    loop_info L = {.limit = 3};
    kiln_tensor *inits[2] = {scalar_i64(cx, 0), scalar_i64(cx, 0)};
    kiln_tensor *out[2] = {inits[0], inits[0]};
    cr_assert_eq(kiln_while(cx, inits, 2, &(kiln_region){cond_i32, NULL},
                            &(kiln_region){body_count, &L}, out),
                 KILN_INVALID_ARGUMENT);
    cr_assert_null(out[0]);
    cr_assert_null(out[1]);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_while: cond returned i32[]; expected a rank-0 i1 (bool) tensor");
    cr_assert_eq(kiln_while(cx, inits, 2, &(kiln_region){cond_vector, NULL},
                            &(kiln_region){body_count, &L}, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "cond returned i1[2]");
    kiln_ctx_release(cx);
}

Test(control, while_body_results_must_match_the_inits) {
    kiln_ctx *cx = test_ctx();
    loop_info L = {.limit = 3, .step = 1};
    kiln_tensor *inits[2] = {scalar_i64(cx, 0), scalar_i64(cx, 0)};
    kiln_tensor *out[2];
    kiln_region cond = {cond_lt, &L};
    cr_assert_eq(kiln_while(cx, inits, 2, &cond, &(kiln_region){body_short, NULL}, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_while: body returned no tensor for result 2");
    cr_assert_eq(kiln_while(cx, inits, 2, &cond, &(kiln_region){body_f32, NULL}, out),
                 KILN_INVALID_ARGUMENT);
    cr_assert_null(out[0]);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_while: body result 1 has type f32[]; expected i64[] (the type of init 1)");
    cr_assert_eq(kiln_while(cx, inits, 2, &cond, &(kiln_region){body_wrong_shape, NULL}, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "body result 2 has type i64[3]; expected i64[]");
    kiln_ctx_release(cx);
}

Test(control, while_region_errors_propagate) {
    kiln_ctx *cx = test_ctx();
    loop_info L = {.limit = 3, .step = 1};
    kiln_tensor *inits[2] = {scalar_i64(cx, 0), scalar_i64(cx, 0)};
    kiln_tensor *out[2];
    cr_assert_eq(kiln_while(cx, inits, 2, &(kiln_region){cond_lt, &L},
                            &(kiln_region){body_fails, NULL}, out),
                 KILN_DATA_LOSS);
    cr_assert_null(out[0]);
    expect_error(cx, KILN_DATA_LOSS, "the body broke on purpose");
    cr_assert_eq(kiln_while(cx, inits, 2, &(kiln_region){region_aborts, NULL},
                            &(kiln_region){body_count, &L}, out),
                 KILN_ABORTED);
    expect_error(cx, KILN_ABORTED, "kiln_while: cond failed with ABORTED");
    kiln_ctx_release(cx);
}

Test(control, while_argument_errors) {
    kiln_ctx *cx = test_ctx();
    loop_info L = {.limit = 3, .step = 1};
    kiln_region cond = {cond_lt, &L}, body = {body_count, &L};
    kiln_tensor *inits[2] = {scalar_i64(cx, 0), scalar_i64(cx, 0)};
    kiln_tensor *out[2];
    cr_assert_eq(kiln_while(cx, inits, 2, NULL, &body, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_while: cond region is NULL");
    cr_assert_eq(kiln_while(cx, inits, 2, &cond, &(kiln_region){NULL, NULL}, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_while: body region has no function");
    cr_assert_eq(kiln_while(cx, (kiln_tensor *[]){inits[0], NULL}, 2, &cond, &body, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_while: operand 2 is NULL");
    cr_assert_eq(kiln_while(cx, inits, -1, &cond, &body, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_while: n is -1; expected >= 0");
    cr_assert_eq(kiln_while(cx, inits, 2, &cond, &body, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_while: out is NULL");
    cr_assert_eq(kiln_while(cx, NULL, 2, &cond, &body, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_while: inits is NULL");
    cr_assert_eq(kiln_while(NULL, inits, 2, &cond, &body, out), KILN_INVALID_ARGUMENT);
    kiln_ctx_release(cx);
}

Test(control, while_results_belong_to_the_innermost_scope) {
    kiln_ctx *cx = test_ctx();
    loop_info L = {.limit = 5, .step = 2};
    kiln_tensor *inits[2] = {scalar_i64(cx, 0), scalar_i64(cx, 0)};
    kiln_tensor *kept = NULL;
    cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
    kiln_tensor *out[2];
    cr_assert_eq(
        kiln_while(cx, inits, 2, &(kiln_region){cond_lt, &L}, &(kiln_region){body_count, &L}, out),
        KILN_OK);
    kept = kiln_scope_escape(cx, out[1]); /* owned by the innermost scope */
    cr_assert_not_null(kept, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_scope_end(cx), KILN_OK); /* drops out[0] */
    expect_i64(cx, kept, 1, 10);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- fori_loop ----------------------------------------------------------------------- */

/* (i, acc, count) -> (acc + i, count + 1) */
static kiln_status fori_sum(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r, void *user) {
    (void)user;
    cr_assert_eq(kiln_tensor_dtype(args[0]), KILN_I64);
    cr_assert_eq(kiln_tensor_rank(args[0]), 0);
    r[0] = scalar_i64(cx, as_i64(args[1]) + as_i64(args[0]));
    r[1] = scalar_i64(cx, as_i64(args[2]) + 1);
    return ok_if(cx, r[0] && r[1]);
}

static kiln_status fori_f32(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r, void *user) {
    (void)user;
    r[0] = scalar_f32(cx, 0.0f);
    r[1] = args[2];
    return ok_if(cx, r[0]);
}

/* (i, s_0 .. s_{n-1}) -> (s_k + i) */
static kiln_status fori_add_all(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r,
                                void *user) {
    int n = *(const int *)user;
    for (int k = 0; k < n; k++)
        if (!(r[k] = scalar_i64(cx, as_i64(args[1 + k]) + as_i64(args[0]))))
            return kiln_ctx_status(cx);
    return KILN_OK;
}

Test(control, fori_loop_sums_the_index) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *out[2];
    kiln_region body = {fori_sum, NULL};
    cr_assert_eq(kiln_fori_loop(cx, 2, 6, (kiln_tensor *[]){scalar_i64(cx, 0), scalar_i64(cx, 0)},
                                2, &body, out),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_i64(cx, out[0], 1, 2 + 3 + 4 + 5);
    expect_i64(cx, out[1], 1, 4);
    cr_assert_eq(kiln_fori_loop(cx, -3, 1,
                                (kiln_tensor *[]){scalar_i64(cx, 100), scalar_i64(cx, 0)}, 2, &body,
                                out),
                 KILN_OK);
    expect_i64(cx, out[0], 1, 100 - 3 - 2 - 1);
    expect_i64(cx, out[1], 1, 4);
    /* An empty range: the inits, copied. */
    kiln_tensor *inits[2] = {scalar_i64(cx, 9), scalar_i64(cx, 8)};
    cr_assert_eq(kiln_fori_loop(cx, 5, 5, inits, 2, &body, out), KILN_OK);
    expect_i64(cx, out[0], 1, 9);
    expect_i64(cx, out[1], 1, 8);
    cr_assert_neq(out[0], inits[0]);
    cr_assert_eq(kiln_fori_loop(cx, 7, 2, inits, 2, &body, out), KILN_OK);
    expect_i64(cx, out[1], 1, 8);
    /* More state values than fit on the stack. */
    enum { N = 10 };
    static const int n = N;
    kiln_tensor *many[N], *many_out[N];
    for (int k = 0; k < N; k++)
        many[k] = scalar_i64(cx, k);
    cr_assert_eq(
        kiln_fori_loop(cx, 0, 4, many, N, &(kiln_region){fori_add_all, (void *)&n}, many_out),
        KILN_OK, "%s", kiln_ctx_error_message(cx));
    for (int k = 0; k < N; k++)
        expect_i64(cx, many_out[k], 1, k + 6);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, fori_loop_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *inits[2] = {scalar_i64(cx, 0), scalar_i64(cx, 0)};
    kiln_tensor *out[2];
    cr_assert_eq(kiln_fori_loop(cx, 0, 3, inits, 2, &(kiln_region){fori_f32, NULL}, out),
                 KILN_INVALID_ARGUMENT);
    cr_assert_null(out[0]);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_fori_loop: body result 1 has type f32[]; expected i64[] (the type of "
                 "init 1)");
    cr_assert_eq(kiln_fori_loop(cx, 0, 3, inits, 2, &(kiln_region){body_fails, NULL}, out),
                 KILN_DATA_LOSS);
    expect_error(cx, KILN_DATA_LOSS, "the body broke on purpose");
    cr_assert_eq(kiln_fori_loop(cx, 0, 3, inits, 2, &(kiln_region){body_short, NULL}, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_fori_loop: body returned no tensor for result 2");
    cr_assert_eq(kiln_fori_loop(cx, 0, 3, inits, 2, NULL, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_fori_loop: body is NULL");
    cr_assert_eq(kiln_fori_loop(cx, 0, 3, (kiln_tensor *[]){inits[0], NULL}, 2,
                                &(kiln_region){fori_sum, NULL}, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_fori_loop: inits[1] is NULL");
    kiln_ctx_release(cx);
}

/* ---- if ------------------------------------------------------------------------------ */

/* if.mlir's branches: a constant made in the branch, returned twice. */
static kiln_status branch_fill(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r,
                               void *user) {
    (void)args;
    kiln_tensor *t = vec_i64(cx, 2, *(const int64_t *)user);
    r[0] = r[1] = t;
    return ok_if(cx, t);
}

/* case.mlir's branches: a tensor made outside the region, returned twice. */
static kiln_status branch_outer(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r,
                                void *user) {
    (void)cx, (void)args;
    r[0] = r[1] = user;
    return KILN_OK;
}

Test(control, if_conformance) {
    kiln_ctx *cx = test_ctx();
    static const int64_t zero = 0, one = 1;
    kiln_region t = {branch_fill, (void *)&zero}, f = {branch_fill, (void *)&one};
    kiln_tensor *out[2];
    cr_assert_eq(kiln_cond(cx, scalar_bool(cx, true), &t, &f, NULL, 0, 2, out), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    expect_i64(cx, out[0], 2, 0);
    expect_i64(cx, out[1], 2, 0);
    cr_assert_neq(out[0], out[1]); /* one tensor returned twice: two results */
    kiln_tensor_release(out[0]);
    expect_i64(cx, out[1], 2, 0);
    cr_assert_eq(kiln_cond(cx, scalar_bool(cx, false), &t, &f, NULL, 0, 2, out), KILN_OK);
    expect_i64(cx, out[0], 2, 1);
    expect_i64(cx, out[1], 2, 1);
    /* No results at all. */
    cr_assert_eq(kiln_cond(cx, scalar_bool(cx, false), &t, &f, NULL, 0, 0, NULL), KILN_OK);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, if_errors) {
    kiln_ctx *cx = test_ctx();
    static const int64_t zero = 0;
    kiln_region t = {branch_fill, (void *)&zero};
    kiln_tensor *out[2];
    cr_assert_eq(kiln_cond(cx, scalar_i32(cx, 1), &t, &t, NULL, 0, 2, out), KILN_INVALID_ARGUMENT);
    cr_assert_null(out[0]);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_cond: pred has type i32[]; expected a rank-0 i1 tensor");
    cr_assert_eq(kiln_cond(cx, kiln_ones(cx, KILN_BOOL, KILN_SHAPE(1)), &t, &t, NULL, 0, 2, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "pred has type i1[1]");
    cr_assert_eq(kiln_cond(cx, scalar_bool(cx, true), &t, NULL, NULL, 0, 2, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_cond: false branch is NULL");
    cr_assert_eq(
        kiln_cond(cx, scalar_bool(cx, true), &(kiln_region){NULL, NULL}, &t, NULL, 0, 2, out),
        KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_cond: true branch has no function");
    cr_assert_eq(kiln_cond(cx, NULL, &t, &t, NULL, 0, 2, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_cond: operand 1 is NULL");
    cr_assert_eq(kiln_cond(cx, scalar_bool(cx, true), &t, &t, NULL, 0, 2, NULL),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_cond: out is NULL");
    /* A branch that fails, or returns too few results. */
    cr_assert_eq(kiln_cond(cx, scalar_bool(cx, false), &t, &(kiln_region){body_fails, NULL}, NULL,
                           0, 2, out),
                 KILN_DATA_LOSS);
    expect_error(cx, KILN_DATA_LOSS, "the body broke on purpose");
    cr_assert_eq(kiln_cond(cx, scalar_bool(cx, true), &(kiln_region){region_aborts, NULL}, &t, NULL,
                           0, 1, out),
                 KILN_ABORTED);
    expect_error(cx, KILN_ABORTED, "kiln_cond: true branch failed with ABORTED");
    cr_assert_eq(kiln_cond(cx, scalar_bool(cx, true), &t, &t, NULL, 0, 3, (kiln_tensor *[3]){NULL}),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_cond: true branch returned no tensor for result 3");
    kiln_ctx_release(cx);
}

/* ---- case ---------------------------------------------------------------------------- */

Test(control, case_conformance) {
    /* case.mlir: index -1 and 2 run the last branch, 0 the first. */
    kiln_ctx *cx = test_ctx();
    kiln_tensor *b0 = vec_i64(cx, 2, 0), *b1 = vec_i64(cx, 2, 1);
    kiln_region branches[2] = {{branch_outer, b0}, {branch_outer, b1}};
    static const int32_t index[] = {-1, 0, 2, 1, INT32_MIN, INT32_MAX};
    static const int64_t want[] = {1, 0, 1, 1, 1, 1};
    for (size_t i = 0; i < sizeof index / sizeof index[0]; i++) {
        kiln_tensor *out[2];
        cr_assert_eq(kiln_case(cx, scalar_i32(cx, index[i]), branches, 2, NULL, 0, 2, out), KILN_OK,
                     "%s", kiln_ctx_error_message(cx));
        expect_i64(cx, out[0], 2, want[i]);
        expect_i64(cx, out[1], 2, want[i]);
        cr_assert_neq(out[0], b0);
        cr_assert_neq(out[0], b1);
        cr_assert_neq(out[0], out[1]);
    }
    /* One branch: every index runs it. */
    kiln_tensor *out[2];
    cr_assert_eq(kiln_case(cx, scalar_i32(cx, 5), branches, 1, NULL, 0, 2, out), KILN_OK);
    expect_i64(cx, out[0], 2, 0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, case_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *b0 = vec_i64(cx, 2, 0);
    kiln_region branches[2] = {{branch_outer, b0}, {NULL, NULL}};
    kiln_tensor *out[2];
    cr_assert_eq(kiln_case(cx, scalar_i64(cx, 0), branches, 1, NULL, 0, 2, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_case: index has type i64[]; expected a rank-0 i32 tensor");
    cr_assert_eq(
        kiln_case(cx, kiln_zeros(cx, KILN_I32, KILN_SHAPE(1)), branches, 1, NULL, 0, 2, out),
        KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "index has type i32[1]");
    cr_assert_eq(kiln_case(cx, scalar_i32(cx, 0), branches, 0, NULL, 0, 2, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_case: has 0 branches; expected at least 1");
    cr_assert_eq(kiln_case(cx, scalar_i32(cx, 0), branches, 2, NULL, 0, 2, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_case: branch 1 has no function");
    cr_assert_eq(kiln_case(cx, scalar_i32(cx, 0), NULL, 2, NULL, 0, 2, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_case: branches is NULL");
    cr_assert_eq(kiln_case(cx, scalar_i32(cx, 0), branches, -2, NULL, 0, 2, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_case: n_branches is -2; expected >= 0");
    kiln_region failing[2] = {{branch_outer, b0}, {body_fails, NULL}};
    cr_assert_eq(kiln_case(cx, scalar_i32(cx, 9), failing, 2, NULL, 0, 2, out), KILN_DATA_LOSS);
    cr_assert_null(out[0]);
    expect_error(cx, KILN_DATA_LOSS, "the body broke on purpose");
    kiln_ctx_release(cx);
}

/* ---- call ---------------------------------------------------------------------------- */

/* call.mlir's @add_2. */
static kiln_status add_2(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r, void *user) {
    (void)user;
    r[0] = scalar_i64(cx, as_i64(args[0]) + 2);
    return ok_if(cx, r[0]);
}

static kiln_status swap(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r, void *user) {
    (void)cx, (void)user;
    r[0] = args[1];
    r[1] = args[0];
    return KILN_OK;
}

Test(control, call_conformance) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *r;
    cr_assert_eq(
        kiln_call(cx, &(kiln_region){add_2, NULL}, (kiln_tensor *[]){scalar_i64(cx, 1)}, 1, 1, &r),
        KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_i64(cx, r, 1, 3);
    kiln_tensor *a = vec_i64(cx, 3, 5), *b = scalar_i64(cx, -1), *out[2];
    cr_assert_eq(kiln_call(cx, &(kiln_region){swap, NULL}, (kiln_tensor *[]){a, b}, 2, 2, out),
                 KILN_OK);
    expect_i64(cx, out[0], 1, -1);
    expect_i64(cx, out[1], 3, 5);
    cr_assert_neq(out[0], b);
    cr_assert_neq(out[1], a);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, call_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *r, *one = scalar_i64(cx, 1);
    cr_assert_eq(kiln_call(cx, NULL, &one, 1, 1, &r), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_call: callee is NULL");
    cr_assert_eq(kiln_call(cx, &(kiln_region){NULL, NULL}, &one, 1, 1, &r), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_call: callee has no function");
    cr_assert_eq(kiln_call(cx, &(kiln_region){add_2, NULL}, (kiln_tensor *[]){one, NULL}, 2, 1, &r),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_call: operand 2 is NULL");
    cr_assert_eq(kiln_call(cx, &(kiln_region){add_2, NULL}, NULL, 1, 1, &r), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_call: args is NULL");
    cr_assert_eq(
        kiln_call(cx, &(kiln_region){body_fails, NULL}, &one, 1, 2, (kiln_tensor *[2]){NULL}),
        KILN_DATA_LOSS);
    expect_error(cx, KILN_DATA_LOSS, "the body broke on purpose");
    cr_assert_eq(kiln_call(cx, &(kiln_region){add_2, NULL}, &one, 1, 2, (kiln_tensor *[2]){NULL}),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_call: callee returned no tensor for result 2");
    kiln_ctx_release(cx);
}

/* ---- nested control flow ------------------------------------------------------------- */

/* A branch that runs a while loop (i, sum) to its user limit and returns sum. */
static kiln_status branch_with_loop(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r,
                                    void *user) {
    (void)args;
    loop_info *L = user;
    kiln_tensor *out[2];
    kiln_status s = kiln_while(cx, (kiln_tensor *[]){scalar_i64(cx, 0), scalar_i64(cx, 0)}, 2,
                               &(kiln_region){cond_lt, L}, &(kiln_region){body_count, L}, out);
    if (s != KILN_OK) return s;
    r[0] = out[1];
    return KILN_OK;
}

static kiln_status branch_with_failing_loop(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r,
                                            void *user) {
    (void)args, (void)user;
    loop_info L = {.limit = 3};
    kiln_tensor *out[2];
    kiln_status s = kiln_while(cx, (kiln_tensor *[]){scalar_i64(cx, 0), scalar_i64(cx, 0)}, 2,
                               &(kiln_region){cond_lt, &L}, &(kiln_region){body_fails, NULL}, out);
    r[0] = out[1];
    return s;
}

static kiln_status branch_scalar(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r,
                                 void *user) {
    (void)args;
    r[0] = scalar_i64(cx, *(const int64_t *)user);
    return ok_if(cx, r[0]);
}

/* (i, sum) -> (i + 1, sum + case(i % 3){0, 10, 20}) */
static kiln_status body_with_case(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r,
                                  void *user) {
    (void)user;
    static const int64_t v[3] = {0, 10, 20};
    kiln_region branches[3] = {{branch_scalar, (void *)&v[0]},
                               {branch_scalar, (void *)&v[1]},
                               {branch_scalar, (void *)&v[2]}};
    kiln_tensor *picked;
    kiln_status s = kiln_case(cx, scalar_i32(cx, (int32_t)(as_i64(args[0]) % 3)), branches, 3, NULL,
                              0, 1, &picked);
    if (s != KILN_OK) return s;
    r[0] = scalar_i64(cx, as_i64(args[0]) + 1);
    r[1] = scalar_i64(cx, as_i64(args[1]) + as_i64(picked));
    return ok_if(cx, r[0] && r[1]);
}

static kiln_status identity1(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r, void *user) {
    (void)cx, (void)user;
    r[0] = args[0];
    return KILN_OK;
}

/* Calls the identity on its argument and releases that result early; returns a new state. */
static kiln_status body_call_release(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **r,
                                     void *user) {
    (void)user;
    kiln_tensor *same;
    kiln_status s = kiln_call(cx, &(kiln_region){identity1, NULL}, args, 1, 1, &same);
    if (s != KILN_OK) return s;
    cr_assert_neq(same, args[0]);
    kiln_tensor_release(same);                  /* must not take the loop's reference */
    r[0] = vec_i64(cx, 4, as_i64(args[0]) + 1); /* the next state: held by the loop alone */
    return ok_if(cx, r[0]);
}

Test(control, nested_control_flow) {
    kiln_ctx *cx = test_ctx();
    /* A while inside a cond. */
    loop_info L = {.limit = 5, .step = 3};
    static const int64_t seven = 7;
    kiln_region t = {branch_with_loop, &L}, f = {branch_scalar, (void *)&seven};
    kiln_tensor *r;
    cr_assert_eq(kiln_cond(cx, scalar_bool(cx, true), &t, &f, NULL, 0, 1, &r), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    expect_i64(cx, r, 1, 15);
    cr_assert_eq(kiln_cond(cx, scalar_bool(cx, false), &t, &f, NULL, 0, 1, &r), KILN_OK);
    expect_i64(cx, r, 1, 7);
    cr_assert_eq(L.body_calls, 5);
    /* A case inside a while. */
    loop_info M = {.limit = 6};
    kiln_tensor *out[2];
    cr_assert_eq(kiln_while(cx, (kiln_tensor *[]){scalar_i64(cx, 0), scalar_i64(cx, 0)}, 2,
                            &(kiln_region){cond_lt, &M}, &(kiln_region){body_with_case, NULL}, out),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_i64(cx, out[0], 1, 6);
    expect_i64(cx, out[1], 1, 60);
    /* Results released early inside a loop body leave the loop state alone. */
    loop_info K = {.limit = 4};
    cr_assert_eq(kiln_while(cx, (kiln_tensor *[]){vec_i64(cx, 4, 3)}, 1,
                            &(kiln_region){cond_calls_below, &K},
                            &(kiln_region){body_call_release, NULL}, out),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_i64(cx, out[0], 4, 7);
    /* An error deep inside propagates out of both. */
    kiln_region failing = {branch_with_failing_loop, NULL};
    cr_assert_eq(kiln_cond(cx, scalar_bool(cx, true), &failing, &f, NULL, 0, 1, &r),
                 KILN_DATA_LOSS);
    cr_assert_null(r);
    expect_error(cx, KILN_DATA_LOSS, "the body broke on purpose");
    cr_assert_eq(
        kiln_call(cx, &(kiln_region){body_fails, NULL}, NULL, 0, 2, (kiln_tensor *[2]){NULL}),
        KILN_DATA_LOSS);
    expect_error(cx, KILN_DATA_LOSS, "broke");
    kiln_ctx_release(cx);
}

/* ---- optimization_barrier ------------------------------------------------------------ */

Test(control, optimization_barrier_conformance) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *in[2] = {scalar_f32(cx, 0.0f), scalar_f32(cx, 1.0f)}, *out[2];
    cr_assert_eq(kiln_optimization_barrier(cx, in, 2, out), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_item(cx, out[0], 0), 0.0);
    cr_assert_eq(kiln_tensor_item(cx, out[1], 0), 1.0);
    cr_assert_neq(out[0], in[0]);
    /* Every dtype, bit for bit; an empty tensor; no operands. */
    for (int d = 0; d < KILN_DTYPE_COUNT; d++) {
        kiln_tensor *x = kiln_iota(cx, (kiln_dtype)d, KILN_SHAPE(2, 3), 1), *y;
        cr_assert_eq(kiln_optimization_barrier(cx, &x, 1, &y), KILN_OK);
        cr_assert_eq(kiln_tensor_dtype(y), (kiln_dtype)d);
        cr_assert(kiln_shape_equal(kiln_tensor_shape(y), kiln_tensor_shape(x)));
        cr_assert_eq(memcmp(kiln_tensor_data(y), kiln_tensor_data(x), kiln_tensor_nbytes(x)), 0);
    }
    kiln_tensor *e = kiln_zeros(cx, KILN_F64, KILN_SHAPE(0, 4)), *f;
    cr_assert_eq(kiln_optimization_barrier(cx, &e, 1, &f), KILN_OK);
    cr_assert_eq(kiln_tensor_dim(f, 1), 4);
    cr_assert_eq(kiln_optimization_barrier(cx, NULL, 0, NULL), KILN_OK);
    cr_assert_eq(kiln_optimization_barrier(cx, (kiln_tensor *[]){in[0], NULL}, 2, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_optimization_barrier: operand 2 is NULL");
    cr_assert_eq(kiln_optimization_barrier(cx, in, 2, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_optimization_barrier: out is NULL");
    kiln_ctx_release(cx);
}

/* ---- constant ------------------------------------------------------------------------ */

static void check_constant(kiln_ctx *cx, kiln_dtype dtype, const void *data, int64_t n) {
    size_t nbytes = (size_t)n * kiln_dtype_size(dtype);
    kiln_tensor *t = kiln_constant(cx, dtype, KILN_SHAPE(n), data, nbytes);
    cr_assert_not_null(t, "%s: %s", kiln_dtype_name(dtype), kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_dtype(t), dtype);
    cr_assert_eq(kiln_tensor_numel(t), n);
    cr_assert_neq(kiln_tensor_data(t), data);
    cr_assert_eq(memcmp(kiln_tensor_data(t), data, nbytes), 0, "%s", kiln_dtype_name(dtype));
}

Test(control, constant_every_dtype) {
    /* constant.mlir's values, bit for bit (NaN, infinities and subnormals included). */
    kiln_ctx *cx = test_ctx();
    static const uint8_t b[] = {0, 1, 1, 0};
    static const int8_t i8[] = {-128, -9, 0, 8, 127};
    static const uint8_t u8[] = {0, 16, 255};
    static const int16_t i16[] = {-32768, -129, 0, 128, 32767};
    static const uint16_t u16[] = {0, 256, 65535};
    static const int32_t i32[] = {INT32_MIN, -65537, 0, 65536, INT32_MAX};
    static const uint32_t u32[] = {0, 65536, 4294967295u};
    static const int64_t i64[] = {INT64_MIN, -2147483649LL, 0, 2147483648LL, INT64_MAX};
    static const uint64_t u64[] = {0, 4294967296ULL, UINT64_MAX};
    static const uint16_t bf16[] = {0x0000, 0x8000, 0x3f80, 0x3e00, 0x3dcd, 0x4049,
                                    0x7f80, 0xff80, 0x7fff, 0x0001, 0x8001};
    static const uint16_t f16[] = {0x0000, 0x8000, 0x3c00, 0x3000, 0x2e66, 0x4248,
                                   0x7c00, 0xfc00, 0x7fff, 0x0001, 0x8001};
    static const uint32_t f32[] = {0x00000000, 0x80000000, 0x3f800000, 0x3e000000,
                                   0x3dcccccd, 0x40490fdb, 0x7f800000, 0xff800000,
                                   0x7fffffff, 0x00000001, 0x80000001};
    static const uint64_t f64[] = {0,
                                   0x8000000000000000ULL,
                                   0x3ff0000000000000ULL,
                                   0x3fc0000000000000ULL,
                                   0x3fb999999999999aULL,
                                   0x400921fb54442d18ULL,
                                   0x7ff0000000000000ULL,
                                   0xfff0000000000000ULL,
                                   0x7fffffffffffffffULL,
                                   1,
                                   0x8000000000000001ULL};
    check_constant(cx, KILN_BOOL, b, 4);
    check_constant(cx, KILN_I8, i8, 5);
    check_constant(cx, KILN_U8, u8, 3);
    check_constant(cx, KILN_I16, i16, 5);
    check_constant(cx, KILN_U16, u16, 3);
    check_constant(cx, KILN_I32, i32, 5);
    check_constant(cx, KILN_U32, u32, 3);
    check_constant(cx, KILN_I64, i64, 5);
    check_constant(cx, KILN_U64, u64, 3);
    check_constant(cx, KILN_BF16, bf16, 11);
    check_constant(cx, KILN_F16, f16, 11);
    check_constant(cx, KILN_F32, f32, 11);
    check_constant(cx, KILN_F64, f64, 11);
    cr_assert_eq(
        kiln_tensor_item(cx, kiln_constant(cx, KILN_F32, KILN_SHAPE(11), f32, sizeof f32), 4),
        (double)0.1f);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, constant_shapes_and_copies) {
    kiln_ctx *cx = test_ctx();
    /* Rank 0, the spec's 2x2 example, empty without data. */
    double pi = 3.25;
    kiln_tensor *s = kiln_constant(cx, KILN_F64, KILN_SHAPE_SCALAR, &pi, sizeof pi);
    cr_assert_eq(kiln_tensor_rank(s), 0);
    cr_assert_eq(kiln_tensor_item(cx, s, 0), 3.25);
    float m[4] = {0.0f, 1.0f, 2.0f, 3.0f};
    kiln_tensor *t = kiln_constant(cx, KILN_F32, KILN_SHAPE(2, 2), m, sizeof m);
    m[3] = 99.0f; /* a copy: later changes to the host data do not show */
    cr_assert_eq(kiln_tensor_item(cx, t, 3), 3.0);
    kiln_tensor *e = kiln_constant(cx, KILN_I32, KILN_SHAPE(0, 3), NULL, 0);
    cr_assert_not_null(e, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_dim(e, 1), 3);
    /* Data not aligned to the element size. */
    _Alignas(8) unsigned char raw[1 + 3 * sizeof(float)];
    const float v[3] = {1.5f, -2.0f, 4.0f};
    memcpy(raw + 1, v, sizeof v);
    kiln_tensor *u = kiln_constant(cx, KILN_F32, KILN_SHAPE(3), raw + 1, sizeof v);
    cr_assert_not_null(u, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(memcmp(kiln_tensor_data(u), v, sizeof v), 0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, constant_errors) {
    kiln_ctx *cx = test_ctx();
    float f[2] = {1, 2};
    cr_assert_null(kiln_constant(cx, KILN_F32, KILN_SHAPE(2), f, 3));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_constant: nbytes is 3; a f32[2] tensor needs 8");
    cr_assert_null(kiln_constant(cx, KILN_F32, KILN_SHAPE(2), NULL, 8));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_constant: data is NULL");
    cr_assert_null(kiln_constant(cx, (kiln_dtype)99, KILN_SHAPE(2), f, 8));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_constant: dtype 99");
    cr_assert_null(kiln_constant(cx, KILN_F32, KILN_SHAPE(-1), f, 8));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_constant: shape [-1]");
    cr_assert_null(kiln_constant(NULL, KILN_F32, KILN_SHAPE(2), f, 8));
    /* The op itself, without a value. */
    kiln__attrs a = {.fn = "constant_test"};
    cr_assert_null(kiln__op_run1(cx, KILN_OP_CONSTANT, &a, NULL, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "constant_test: the constant's value is NULL");
    kiln_ctx_release(cx);
}

/* ---- iota ---------------------------------------------------------------------------- */

static kiln_tensor *iota_op(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape, int64_t dim) {
    kiln__attrs a = {.fn = "iota_test"};
    a.u.iota.dtype = dtype;
    a.u.iota.shape = shape;
    a.u.iota.dimension = dim;
    return kiln__op_run1(cx, KILN_OP_IOTA, &a, NULL, 0);
}

/* j as a value of dtype d: a sub-byte integer wraps (i2: 2 is -2), a small float rounds
 * (f8E8M0FNU: 3 is 4, 0 is NaN). */
static double in_dtype(kiln_dtype d, int64_t j) {
    if (d == KILN_I2) return (double)(((j + 2) & 3) - 2);
    if (kiln_dtype_is_narrow(d) && kiln_dtype_is_float(d))
        return kiln_small_float_decode(d, kiln_small_float_encode(d, (double)j));
    return (double)j;
}

static bool same_value(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

Test(control, iota_conformance) {
    /* iota.mlir: 3x4 along each dimension for every type; ui64 2x3x2 along each. */
    kiln_ctx *cx = test_ctx();
    for (int d = 1; d < KILN_DTYPE_COUNT; d++) {
        for (int dim = 0; dim < 2; dim++) {
            kiln_tensor *t = iota_op(cx, (kiln_dtype)d, KILN_SHAPE(3, 4), dim);
            cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
            cr_assert_eq(kiln_tensor_dtype(t), (kiln_dtype)d);
            for (int64_t r = 0; r < 3; r++)
                for (int64_t c = 0; c < 4; c++)
                    cr_assert(same_value(kiln_tensor_item(cx, t, r * 4 + c),
                                         in_dtype((kiln_dtype)d, dim == 0 ? r : c)),
                                 "%s dim %d [%lld,%lld]", kiln_dtype_name((kiln_dtype)d), dim,
                                 (long long)r, (long long)c);
        }
    }
    for (int dim = 0; dim < 3; dim++) {
        kiln_tensor *t = iota_op(cx, KILN_U64, KILN_SHAPE(2, 3, 2), dim);
        const uint64_t *v = kiln_tensor_data(t);
        for (int64_t a = 0; a < 2; a++)
            for (int64_t b = 0; b < 3; b++)
                for (int64_t c = 0; c < 2; c++)
                    cr_assert_eq(v[(a * 3 + b) * 2 + c], (uint64_t)(dim == 0   ? a
                                                                    : dim == 1 ? b
                                                                               : c));
    }
    /* i1: 0 then true. */
    kiln_tensor *t = iota_op(cx, KILN_BOOL, KILN_SHAPE(2, 3), 1);
    static const uint8_t want[6] = {0, 1, 1, 0, 1, 1};
    cr_assert_eq(memcmp(kiln_tensor_data(t), want, 6), 0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, iota_wraps_integers_rounds_floats_and_matches_kiln_iota) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *i8 = iota_op(cx, KILN_I8, KILN_SHAPE(300), 0);
    cr_assert_eq(kiln_tensor_item(cx, i8, 127), 127.0);
    cr_assert_eq(kiln_tensor_item(cx, i8, 200), -56.0);
    cr_assert_eq(kiln_tensor_item(cx, i8, 299), 43.0);
    kiln_tensor *u8 = iota_op(cx, KILN_U8, KILN_SHAPE(2, 300), 1);
    cr_assert_eq(kiln_tensor_item(cx, u8, 300 + 256), 0.0);
    cr_assert_eq(kiln_tensor_item(cx, u8, 300 + 255), 255.0);
    kiln_tensor *f16 = iota_op(cx, KILN_F16, KILN_SHAPE(2051), 0);
    cr_assert_eq(kiln_tensor_item(cx, f16, 2049), 2048.0); /* ties to even */
    cr_assert_eq(kiln_tensor_item(cx, f16, 2050), 2050.0);
    kiln_tensor *bf16 = iota_op(cx, KILN_BF16, KILN_SHAPE(300), 0);
    cr_assert_eq(kiln_tensor_item(cx, bf16, 257), 256.0);
    cr_assert_eq(kiln_tensor_item(cx, bf16, 259), 260.0);
    /* The same bytes as the core kiln_iota, for every dtype, shape and dimension. */
    const kiln_shape shapes[] = {KILN_SHAPE(7), KILN_SHAPE(4, 3, 5), KILN_SHAPE(2, 1, 3, 2)};
    for (int d = 0; d < KILN_DTYPE_COUNT; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int32_t dim = 0; dim < shapes[s].rank; dim++) {
                kiln_tensor *a = iota_op(cx, (kiln_dtype)d, shapes[s], dim);
                kiln_tensor *b = kiln_iota(cx, (kiln_dtype)d, shapes[s], dim);
                cr_assert(a && b, "%s", kiln_ctx_error_message(cx));
                cr_assert_eq(
                    memcmp(kiln_tensor_data(a), kiln_tensor_data(b), kiln_tensor_nbytes(a)), 0,
                    "%s shape %zu dim %d", kiln_dtype_name((kiln_dtype)d), s, dim);
            }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, iota_empty_and_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *e = iota_op(cx, KILN_F32, KILN_SHAPE(3, 0, 2), 0);
    cr_assert_not_null(e, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_numel(e), 0);
    cr_assert_null(iota_op(cx, KILN_F32, KILN_SHAPE_SCALAR, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "iota_test: iota dimension is 0, but a rank-0 shape has no dimension");
    cr_assert_null(iota_op(cx, KILN_I32, KILN_SHAPE(3, 4), 2));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "iota_test: iota dimension is 2; expected 0 to 1 for a rank-2 shape");
    cr_assert_null(iota_op(cx, KILN_I32, KILN_SHAPE(3, 4), -1));
    expect_error(cx, KILN_INVALID_ARGUMENT, "iota dimension is -1");
    cr_assert_null(iota_op(cx, (kiln_dtype)77, KILN_SHAPE(3), 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "iota_test: dtype 77 is not a valid kiln_dtype");
    cr_assert_null(iota_op(cx, KILN_I32, KILN_SHAPE(3, -4), 0));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "iota_test: shape [3,-4] has a negative dimension at axis 1");
    kiln_ctx_release(cx);
}

/* ---- rng_bit_generator --------------------------------------------------------------- */

static kiln_tensor *rng(kiln_ctx *cx, const uint64_t *words, int64_t m, kiln_rng_algorithm alg,
                        kiln_dtype dtype, kiln_shape shape, uint64_t *out_words) {
    kiln_tensor *ns = NULL;
    kiln_tensor *r = kiln_rng_bit_generator(cx, state_u64(cx, m, words), alg, dtype, shape, &ns);
    cr_assert_not_null(r, "%s", kiln_ctx_error_message(cx));
    cr_assert_not_null(ns);
    cr_assert_eq(kiln_tensor_dtype(r), dtype);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(r), &shape));
    cr_assert_eq(kiln_tensor_dtype(ns), KILN_U64);
    cr_assert_eq(kiln_tensor_numel(ns), m);
    if (out_words) memcpy(out_words, kiln_tensor_data(ns), (size_t)m * 8);
    return r;
}

static uint64_t word_at(const kiln_tensor *t, int64_t k) {
    size_t w = kiln_dtype_size(kiln_tensor_dtype(t));
    const unsigned char *p = (const unsigned char *)kiln_tensor_data(t) + (size_t)k * w;
    switch (w) {
    case 1: return p[0];
    case 2: {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    default: {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

Test(control, rng_three_fry_spec_example) {
    /* The spec's example: state [1, 2] -> [1, 6] and these 2x2 ui64 bits. */
    kiln_ctx *cx = test_ctx();
    uint64_t next[2];
    kiln_tensor *r =
        rng(cx, (const uint64_t[]){1, 2}, 2, KILN_RNG_THREE_FRY, KILN_U64, KILN_SHAPE(2, 2), next);
    cr_assert_eq(next[0], 1);
    cr_assert_eq(next[1], 6);
    static const uint64_t want[4] = {9236835810183407956ULL, 16087790271692313299ULL,
                                     18212823393184779219ULL, 2658481902456610144ULL};
    for (int k = 0; k < 4; k++)
        cr_assert_eq(word_at(r, k), want[k], "element %d: %llu", k,
                     (unsigned long long)word_at(r, k));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, rng_three_fry_known_answers_and_layout) {
    kiln_ctx *cx = test_ctx();
    /* Random123's Threefry-2x32-20 vectors, as (key, counter) states with 64-bit output:
     * the element is out[0] | out[1] << 32. */
    uint64_t next[2];
    kiln_tensor *r =
        rng(cx, (const uint64_t[]){0, 0}, 2, KILN_RNG_THREE_FRY, KILN_U64, KILN_SHAPE(1), next);
    cr_assert_eq(word_at(r, 0), 0x99ba4efe6b200159ULL);
    r = rng(cx, (const uint64_t[]){UINT64_MAX, UINT64_MAX}, 2, KILN_RNG_THREE_FRY, KILN_U64,
            KILN_SHAPE_SCALAR, next);
    cr_assert_eq(word_at(r, 0), 0xbb002be71cb996fcULL);
    cr_assert_eq(next[0], UINT64_MAX);
    cr_assert_eq(next[1], 0); /* the counter wraps */
    r = rng(cx, (const uint64_t[]){0x0370734413198a2eULL, 0x85a308d3243f6a88ULL}, 2,
            KILN_RNG_THREE_FRY, KILN_I64, KILN_SHAPE(1), NULL);
    cr_assert_eq(word_at(r, 0), 0x483df7a0c4923a9cULL);

    /* 32-bit outputs: pairs of words along the first even dimension. For state [0, 0] and
     * 3x2: row i is threefry(counter i), as XLA gives ([[1.7973e9, 2.5791e9], ...]). */
    r = rng(cx, (const uint64_t[]){0, 0}, 2, KILN_RNG_THREE_FRY, KILN_U32, KILN_SHAPE(3, 2), next);
    cr_assert_eq(next[1], 3);
    cr_assert_eq(word_at(r, 0), 0x6b200159u);
    cr_assert_eq(word_at(r, 1), 0x99ba4efeu);
    static const double approx[6] = {1.7973e9, 2.5791e9, 1.3515e9, 3.2358e9, 1.6886e9, 4.2293e9};
    for (int k = 0; k < 6; k++)
        cr_assert(fabs((double)word_at(r, k) - approx[k]) < 1e5, "element %d: %llu", k,
                  (unsigned long long)word_at(r, k));

    /* The layouts, against the 64-bit stream (element k = counter + k) of the same key. */
    const uint64_t st[2] = {0x123456789abcdefULL, 1000};
    kiln_tensor *w64 = rng(cx, st, 2, KILN_RNG_THREE_FRY, KILN_U64, KILN_SHAPE(16), NULL);
#define LO(k) (word_at(w64, k) & 0xffffffffu)
#define HI(k) (word_at(w64, k) >> 32)
    /* [3]: no even dimension, so the largest: [lo0, hi0, lo1]; counter + 2. */
    r = rng(cx, st, 2, KILN_RNG_THREE_FRY, KILN_U32, KILN_SHAPE(3), next);
    cr_assert_eq(next[1], 1002);
    cr_assert_eq(word_at(r, 0), LO(0));
    cr_assert_eq(word_at(r, 1), HI(0));
    cr_assert_eq(word_at(r, 2), LO(1));
    /* [2,3]: split dimension 0: row 0 the low words of counters 0..2, row 1 the high. */
    r = rng(cx, st, 2, KILN_RNG_THREE_FRY, KILN_I32, KILN_SHAPE(2, 3), next);
    cr_assert_eq(next[1], 1003);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(word_at(r, i), LO(i));
        cr_assert_eq(word_at(r, 3 + i), HI(i));
    }
    /* [3,5]: no even dimension; split the largest (1): row o, column 2h + w is word w of
     * counter o * 3 + h. */
    r = rng(cx, st, 2, KILN_RNG_THREE_FRY, KILN_F32, KILN_SHAPE(3, 5), next);
    cr_assert_eq(next[1], 1009);
    for (int o = 0; o < 3; o++)
        for (int c = 0; c < 5; c++) {
            int k = o * 3 + c / 2;
            cr_assert_eq(word_at(r, o * 5 + c), c % 2 ? HI(k) : LO(k), "[%d,%d]", o, c);
        }
    /* Rank 0: word 0 of one counter. */
    r = rng(cx, st, 2, KILN_RNG_THREE_FRY, KILN_U32, KILN_SHAPE_SCALAR, next);
    cr_assert_eq(next[1], 1001);
    cr_assert_eq(word_at(r, 0), LO(0));
#undef LO
#undef HI
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, rng_philox_known_answers_and_layout) {
    kiln_ctx *cx = test_ctx();
    /* Random123's Philox-4x32-10 vectors: state ui64[3] = {key, counter low, counter high}. */
    uint64_t next[3];
    kiln_tensor *r =
        rng(cx, (const uint64_t[]){0, 0, 0}, 3, KILN_RNG_PHILOX, KILN_U32, KILN_SHAPE(4), next);
    static const uint32_t kat0[4] = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
    for (int k = 0; k < 4; k++)
        cr_assert_eq(word_at(r, k), kat0[k]);
    cr_assert_eq(next[0], 0);
    cr_assert_eq(next[1], 1);
    cr_assert_eq(next[2], 0);
    r = rng(cx, (const uint64_t[]){UINT64_MAX, UINT64_MAX, UINT64_MAX}, 3, KILN_RNG_PHILOX,
            KILN_U32, KILN_SHAPE(2, 2), next);
    static const uint32_t kat1[4] = {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd};
    for (int k = 0; k < 4; k++)
        cr_assert_eq(word_at(r, k), kat1[k]);
    cr_assert_eq(next[0], UINT64_MAX);
    cr_assert_eq(next[1], 0); /* the 128-bit counter wraps */
    cr_assert_eq(next[2], 0);
    r = rng(cx,
            (const uint64_t[]){0x299f31d0a4093822ULL, 0x85a308d3243f6a88ULL, 0x0370734413198a2eULL},
            3, KILN_RNG_PHILOX, KILN_U64, KILN_SHAPE(2), next);
    cr_assert_eq(word_at(r, 0), 0x94fdccebd16cfe09ULL);
    cr_assert_eq(word_at(r, 1), 0x24126ea15001e420ULL);
    cr_assert_eq(next[1], 0x85a308d3243f6a89ULL);

    /* Layout: element k is word k % 4 of block k / 4; blocks count up with carry. */
    const uint64_t st[3] = {0xfeedf00dULL, UINT64_MAX - 1, 7};
    r = rng(cx, st, 3, KILN_RNG_PHILOX, KILN_U32, KILN_SHAPE(3, 3), next);
    cr_assert_eq(next[1], 1); /* 3 blocks */
    cr_assert_eq(next[2], 8);
    const uint32_t key[2] = {0xfeedf00du, 0};
    uint32_t blocks[3][4];
    const uint32_t ctrs[3][4] = {
        {0xfffffffe, 0xffffffff, 7, 0}, {0xffffffff, 0xffffffff, 7, 0}, {0, 0, 8, 0}};
    for (int b = 0; b < 3; b++)
        kiln_philox4x32_10(ctrs[b], key, blocks[b]);
    for (int k = 0; k < 9; k++)
        cr_assert_eq(word_at(r, k), blocks[k / 4][k % 4], "element %d", k);
    /* 64-bit: words {0,1} then {2,3} of each block; ceil(n / 2) blocks. */
    r = rng(cx, st, 3, KILN_RNG_PHILOX, KILN_F64, KILN_SHAPE(5), next);
    cr_assert_eq(next[1], 1);
    cr_assert_eq(next[2], 8);
    for (int k = 0; k < 5; k++) {
        const uint32_t *w = blocks[k / 2] + (k % 2) * 2;
        cr_assert_eq(word_at(r, k), (uint64_t)w[0] | (uint64_t)w[1] << 32, "element %d", k);
    }
    /* ui64[2]: the counter is {state[1], state[0]}, and only its low half is kept. */
    uint64_t next2[2];
    r = rng(cx, (const uint64_t[]){5, UINT64_MAX}, 2, KILN_RNG_PHILOX, KILN_U32, KILN_SHAPE(5),
            next2);
    cr_assert_eq(next2[0], 5);
    cr_assert_eq(next2[1], 1);
    const uint32_t k5[2] = {5, 0};
    uint32_t w0[4], w1[4];
    kiln_philox4x32_10((const uint32_t[]){0xffffffff, 0xffffffff, 5, 0}, k5, w0);
    kiln_philox4x32_10((const uint32_t[]){0, 0, 6, 0}, k5, w1);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(word_at(r, k), w0[k]);
    cr_assert_eq(word_at(r, 4), w1[0]);
    /* DEFAULT is PHILOX. */
    kiln_tensor *d = rng(cx, st, 3, KILN_RNG_DEFAULT, KILN_U32, KILN_SHAPE(3, 3), NULL);
    for (int k = 0; k < 9; k++)
        cr_assert_eq(word_at(d, k), blocks[k / 4][k % 4]);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, rng_every_dtype_is_deterministic_and_advances) {
    kiln_ctx *cx = test_ctx();
    const kiln_rng_algorithm algs[2] = {KILN_RNG_THREE_FRY, KILN_RNG_PHILOX};
    const uint64_t st[2] = {42, 7};
    for (int a = 0; a < 2; a++) {
        kiln_tensor *u32 = rng(cx, st, 2, algs[a], KILN_U32, KILN_SHAPE(4, 5), NULL);
        kiln_tensor *u64 = rng(cx, st, 2, algs[a], KILN_U64, KILN_SHAPE(4, 5), NULL);
        for (int d = 1; d < KILN_DTYPE_COUNT; d++) {
            if (kiln_dtype_is_complex((kiln_dtype)d)) continue; /* integers and floats only */
            uint64_t n1[2], n2[2];
            kiln_tensor *x = rng(cx, st, 2, algs[a], (kiln_dtype)d, KILN_SHAPE(4, 5), n1);
            kiln_tensor *y = rng(cx, st, 2, algs[a], (kiln_dtype)d, KILN_SHAPE(4, 5), n2);
            /* Same state, same bits and same next state. */
            cr_assert_eq(memcmp(kiln_tensor_data(x), kiln_tensor_data(y), kiln_tensor_nbytes(x)),
                         0);
            cr_assert_eq(n1[0], st[0]);
            cr_assert_eq(n1[1], n2[1]);
            cr_assert_gt(n1[1], st[1]);
            /* Narrow types are the 32-bit bits truncated (a sub-byte type's byte to its own
             * width); 64-bit types the 64-bit bits. */
            size_t w = kiln_dtype_size((kiln_dtype)d);
            uint32_t bits = kiln_dtype_bits((kiln_dtype)d);
            const kiln_tensor *ref = w == 8 ? u64 : u32;
            uint64_t mask = w == 8 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
            for (int k = 0; k < 20; k++)
                cr_assert_eq(word_at(x, k), word_at(ref, k) & mask, "%s element %d",
                             kiln_dtype_name((kiln_dtype)d), k);
            /* The next state gives other bits. */
            kiln_tensor *z = rng(cx, n1, 2, algs[a], (kiln_dtype)d, KILN_SHAPE(4, 5), NULL);
            int same = 0;
            for (int k = 0; k < 20; k++)
                same += word_at(z, k) == word_at(x, k);
            /* (a 2-bit value repeats one time in four by chance) */
            cr_assert_lt(same, bits < 8 ? 14 : 4, "%s: %d of 20 equal",
                         kiln_dtype_name((kiln_dtype)d), same);
        }
        /* An empty output leaves the state as it was. */
        uint64_t n[2];
        kiln_tensor *e = rng(cx, st, 2, algs[a], KILN_F32, KILN_SHAPE(0, 3), n);
        cr_assert_eq(kiln_tensor_numel(e), 0);
        cr_assert_eq(n[1], st[1]);
    }
    /* out_state may be NULL. */
    cr_assert_not_null(kiln_rng_bit_generator(cx, state_u64(cx, 2, st), KILN_RNG_PHILOX, KILN_I8,
                                              KILN_SHAPE(3), NULL));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(control, rng_errors) {
    kiln_ctx *cx = test_ctx();
    const uint64_t w[4] = {1, 2, 3, 4};
    kiln_tensor *ns = (kiln_tensor *)&ns;
    cr_assert_null(kiln_rng_bit_generator(cx, state_u64(cx, 3, w), KILN_RNG_THREE_FRY, KILN_U32,
                                          KILN_SHAPE(2), &ns));
    cr_assert_null(ns);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_rng_bit_generator: state has type ui64[3]; expected ui64[2] for THREE_FRY");
    cr_assert_null(kiln_rng_bit_generator(cx, state_u64(cx, 4, w), KILN_RNG_PHILOX, KILN_U32,
                                          KILN_SHAPE(2), NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "state has type ui64[4]; expected ui64[2] or ui64[3] for PHILOX");
    cr_assert_null(kiln_rng_bit_generator(cx, state_u64(cx, 1, w), KILN_RNG_DEFAULT, KILN_U32,
                                          KILN_SHAPE(2), NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "for DEFAULT");
    cr_assert_null(kiln_rng_bit_generator(cx, kiln_zeros(cx, KILN_I64, KILN_SHAPE(2)),
                                          KILN_RNG_PHILOX, KILN_U32, KILN_SHAPE(2), NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "state has type i64[2]");
    cr_assert_null(kiln_rng_bit_generator(cx, kiln_zeros(cx, KILN_U64, KILN_SHAPE(1, 2)),
                                          KILN_RNG_PHILOX, KILN_U32, KILN_SHAPE(2), NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "state has type ui64[1,2]");
    cr_assert_null(kiln_rng_bit_generator(cx, state_u64(cx, 2, w), KILN_RNG_PHILOX, KILN_BOOL,
                                          KILN_SHAPE(2), NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_rng_bit_generator: output dtype is i1; expected an integer or "
                 "floating-point type");
    cr_assert_null(kiln_rng_bit_generator(cx, state_u64(cx, 2, w), KILN_RNG_PHILOX, KILN_C64,
                                          KILN_SHAPE(2), NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_rng_bit_generator: output dtype is complex<f32>; expected an integer or "
                 "floating-point type");
    cr_assert_null(kiln_rng_bit_generator(cx, state_u64(cx, 2, w), (kiln_rng_algorithm)9, KILN_U32,
                                          KILN_SHAPE(2), NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "algorithm 9 is not a kiln_rng_algorithm");
    cr_assert_null(kiln_rng_bit_generator(cx, state_u64(cx, 2, w), KILN_RNG_PHILOX, KILN_U32,
                                          KILN_SHAPE(2, -1), NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "shape [2,-1] has a negative dimension");
    cr_assert_null(kiln_rng_bit_generator(cx, state_u64(cx, 2, w), KILN_RNG_PHILOX, (kiln_dtype)40,
                                          KILN_SHAPE(2), NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "dtype 40 is not a valid kiln_dtype");
    cr_assert_null(
        kiln_rng_bit_generator(cx, NULL, KILN_RNG_PHILOX, KILN_U32, KILN_SHAPE(2), NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_rng_bit_generator: operand 1 is NULL");
    kiln_ctx_release(cx);
}

/* ---- where, cast (need the elementwise and broadcast kernels) ------------------------- */

Test(control, where_broadcasts_all_three) {
    kiln_ctx *cx = test_ctx();
    const uint8_t p[3] = {1, 0, 1};
    const float a[4] = {1, 2, 3, 4};
    kiln_tensor *pred = kiln_tensor_from_host(cx, KILN_BOOL, KILN_SHAPE(3, 1), p, sizeof p);
    kiln_tensor *x = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(1, 4), a, sizeof a);
    kiln_tensor *y = scalar_f32(cx, -1.0f);
    kiln_tensor *r = kiln_where(cx, pred, x, y);
    cr_assert_not_null(r, "%s", kiln_ctx_error_message(cx));
    cr_assert(kiln_shape_equal(kiln_tensor_shape(r), &KILN_SHAPE(3, 4)));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_eq(kiln_tensor_item(cx, r, i * 4 + j), p[i] ? a[j] : -1.0);
    /* A non-bool condition is read as non-zero. */
    const int32_t c[4] = {0, 5, -1, 0};
    kiln_tensor *ci = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(4), c, sizeof c);
    r = kiln_where(cx, ci, x, y);
    cr_assert_not_null(r, "%s", kiln_ctx_error_message(cx));
    for (int j = 0; j < 4; j++)
        cr_assert_eq(kiln_tensor_item(cx, r, j), c[j] ? a[j] : -1.0);
    cr_assert_null(kiln_where(cx, pred, x, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_where: b is NULL");
    cr_assert_null(kiln_where(cx, kiln_ones(cx, KILN_BOOL, KILN_SHAPE(3)), x, y));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_where: operand");
    kiln_ctx_release(cx);
}

Test(control, cast_is_convert) {
    kiln_ctx *cx = test_ctx();
    const float v[3] = {1.7f, -2.5f, 300.0f};
    kiln_tensor *x = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(3), v, sizeof v);
    kiln_tensor *r = kiln_cast(cx, x, KILN_I32);
    cr_assert_not_null(r, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_item(cx, r, 0), 1.0);
    cr_assert_eq(kiln_tensor_item(cx, r, 1), -2.0);
    cr_assert_eq(kiln_tensor_item(cx, r, 2), 300.0);
    cr_assert_null(kiln_cast(cx, NULL, KILN_I32));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_cast: operand 1 is NULL");
    kiln_ctx_release(cx);
}

/* ---- memory pressure ----------------------------------------------------------------- */

static kiln_ctx *failing_ctx(failing_allocator *fa, int64_t fail_after) {
    failing_allocator_init(fa, fail_after);
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &fa->allocator;
    kiln_ctx *cx = NULL;
    if (kiln_ctx_create(&o, &cx) != KILN_OK) return NULL;
    return cx;
}

/* Runs a while with a nested case, a cond, a call, fori_loop and the sources; every
 * allocation is made to fail in turn: each run fails with RESOURCE_EXHAUSTED or succeeds,
 * and leaks nothing. */
static kiln_status workload(kiln_ctx *cx) {
    enum { N = 10 };
    kiln_tensor *inits[N], *out[N];
    for (int i = 0; i < N; i++)
        inits[i] = scalar_i64(cx, i);
    loop_info L = {.limit = 3, .n = N};
    kiln_status s = kiln_while(cx, inits, N, &(kiln_region){cond_calls_below, &L},
                               &(kiln_region){body_identity, &L}, out);
    if (s != KILN_OK) return s;
    loop_info M = {.limit = 4};
    s = kiln_while(cx, (kiln_tensor *[]){scalar_i64(cx, 0), scalar_i64(cx, 0)}, 2,
                   &(kiln_region){cond_lt, &M}, &(kiln_region){body_with_case, NULL}, out);
    if (s != KILN_OK) return s;
    static const int64_t one = 1;
    kiln_region t = {branch_fill, (void *)&one};
    if ((s = kiln_cond(cx, scalar_bool(cx, true), &t, &t, NULL, 0, 2, out)) != KILN_OK) return s;
    if ((s = kiln_call(cx, &(kiln_region){swap, NULL}, (kiln_tensor *[]){inits[0], inits[1]}, 2, 2,
                       out)) != KILN_OK)
        return s;
    if ((s = kiln_fori_loop(cx, 0, 3, (kiln_tensor *[]){inits[0], inits[1]}, 2,
                            &(kiln_region){fori_sum, NULL}, out)) != KILN_OK)
        return s;
    static const int n = N;
    if ((s = kiln_fori_loop(cx, 0, 2, inits, N, &(kiln_region){fori_add_all, (void *)&n}, out)) !=
        KILN_OK)
        return s;
    const float v[2] = {1, 2};
    if (!kiln_constant(cx, KILN_F32, KILN_SHAPE(2), v, sizeof v)) return kiln_ctx_status(cx);
    if (!iota_op(cx, KILN_I16, KILN_SHAPE(3, 4), 1)) return kiln_ctx_status(cx);
    const uint64_t st[2] = {1, 2};
    kiln_tensor *ns;
    if (!kiln_rng_bit_generator(cx, state_u64(cx, 2, st), KILN_RNG_THREE_FRY, KILN_U16,
                                KILN_SHAPE(5), &ns))
        return kiln_ctx_status(cx);
    return kiln_optimization_barrier(cx, inits, N, out);
}

Test(control, allocation_failures_leak_nothing) {
    bool succeeded = false;
    for (int64_t k = 0; k < 4000 && !succeeded; k++) {
        failing_allocator fa;
        kiln_ctx *cx = failing_ctx(&fa, k);
        if (!cx) continue;
        kiln_status s = workload(cx);
        if (s == KILN_OK && kiln_ctx_status(cx) == KILN_OK) {
            succeeded = true;
            expect_ok(cx);
        } else {
            /* A NULL from a failed allocation may meet a builder as a NULL operand (which
             * reports INVALID_ARGUMENT), but the ctx keeps the first error. */
            cr_assert_eq(kiln_ctx_status(cx), KILN_RESOURCE_EXHAUSTED, "fail_after %lld: %s: %s",
                         (long long)k, kiln_status_name(s), kiln_ctx_error_message(cx));
            cr_assert_gt(fa.failures, 0);
            expect_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory");
        }
        kiln_ctx_release(cx);
        cr_assert_eq(fa.live_blocks, 0, "fail_after %lld: %lld blocks leaked", (long long)k,
                     (long long)fa.live_blocks);
        cr_assert_eq(fa.live_bytes, 0);
    }
    cr_assert(succeeded, "the workload never succeeded");
}

const kiln_op_coverage kiln_cover_control[] = {
    {KILN_OP_WHILE, "control/while_conformance"},
    {KILN_OP_IF, "control/if_conformance"},
    {KILN_OP_CASE, "control/case_conformance"},
    {KILN_OP_CALL, "control/call_conformance"},
    {KILN_OP_MAP, "map/applies_its_computation_at_every_position"},
    {KILN_OP_OPTIMIZATION_BARRIER, "control/optimization_barrier_conformance"},
    {KILN_OP_CONSTANT, "control/constant_every_dtype"},
    {KILN_OP_IOTA, "control/iota_conformance"},
    {KILN_OP_RNG_BIT_GENERATOR, "control/rng_three_fry_spec_example"},
    /* no builder makes one and no backend runs one: read, printed and refused in
     * tests/ir/test_custom_call.c */
    {KILN_OP_CUSTOM_CALL, "custom_call/compiling_one_is_refused_naming_the_target_and_the_backend"},
    {KILN_OP_COUNT, NULL},
};
