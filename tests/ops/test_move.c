/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_move: a moved temporary gives its memory to the next elementwise builder's result
 * when nothing else can reach it, and is dropped after that builder; memory another
 * reference, a view or the user's wrapped array can reach is never written; a failed
 * builder leaves the moved tensor as it was; tracing ignores the mark. The broadcasts an
 * elementwise builder makes are dropped (or written over) at once too. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/buffer_cache.h"
#include "core/tensor_internal.h"
#include "test_util.h"

#define N 4096

static kiln_tensor *ramp(kiln_ctx *cx, kiln_dtype dt, int64_t n) {
    return kiln_convert(cx, kiln_iota(cx, KILN_I32, KILN_SHAPE(n), 0), dt);
}

static const float *floats(const kiln_tensor *t) { return kiln_tensor_data(t); }

static size_t live_bytes(kiln_ctx *cx) {
    kiln_cache_stats st;
    cr_assert_eq(kiln_ctx_cache_stats(cx, &st), KILN_OK);
    return st.live_bytes;
}

Test(move, a_chain_runs_in_the_first_temporarys_memory) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = ramp(cx, KILN_F32, N);
    kiln_tensor *t = kiln_multiply(cx, x, x);
    const void *mem = kiln_tensor_data(t);
    size_t before = live_bytes(cx);
    kiln_tensor *y = kiln_exponential(cx, kiln_move(kiln_negate(cx, kiln_move(t))));
    expect_ok(cx);
    cr_expect_eq(kiln_tensor_data(y), mem, "the chain's result is written over t's memory");
    cr_expect_eq(live_bytes(cx), before, "no new block: %zu bytes live, %zu before", live_bytes(cx),
                 before);
    for (int i = 0; i < N; i += 97) {
        float want = expf(-(float)i * (float)i);
        cr_expect_eq(floats(y)[i], want, "y[%d] = %g, want %g", i, floats(y)[i], want);
    }
    kiln_ctx_release(cx);
}

Test(move, both_operands_the_same_moved_tensor) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *t = kiln_add(cx, ramp(cx, KILN_F32, N), kiln_scalar(cx, 1.0, KILN_F32));
    const void *mem = kiln_tensor_data(t);
    kiln_tensor *m = kiln_move(t);
    kiln_tensor *y = kiln_multiply(cx, m, m); /* one reference given, dropped once */
    expect_ok(cx);
    cr_expect_eq(kiln_tensor_data(y), mem);
    for (int i = 0; i < N; i += 101)
        cr_expect_eq(floats(y)[i], (float)(i + 1) * (float)(i + 1));
    kiln_ctx_release(cx);
}

Test(move, the_second_operand_may_take_the_result) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = ramp(cx, KILN_F32, N);
    kiln_tensor *t = kiln_negate(cx, x);
    const void *mem = kiln_tensor_data(t);
    kiln_tensor *y = kiln_subtract(cx, x, kiln_move(t)); /* x - (-x) */
    expect_ok(cx);
    cr_expect_eq(kiln_tensor_data(y), mem);
    for (int i = 0; i < N; i += 89)
        cr_expect_eq(floats(y)[i], 2.0f * (float)i);
    kiln_ctx_release(cx);
}

Test(move, another_reference_sees_the_tensor_unchanged) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *t = ramp(cx, KILN_F32, N);
    kiln_tensor *kept = kiln_tensor_retain(t);
    kiln_tensor *y = kiln_negate(cx, kiln_move(t));
    expect_ok(cx);
    cr_expect_neq(kiln_tensor_data(y), kiln_tensor_data(kept));
    cr_expect_eq(floats(kept)[7], 7.0f, "the retained tensor keeps its values");
    cr_expect_eq(floats(y)[7], -7.0f);
    kiln_tensor_release(kept); /* the scope's reference went with the move */
    kiln_ctx_release(cx);
}

Test(move, a_view_sees_its_memory_unchanged) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *t = ramp(cx, KILN_F32, N);
    kiln_tensor *v = kiln_reshape(cx, t, KILN_SHAPE(64, 64));
    expect_ok(cx);
    kiln_tensor *y = kiln_negate(cx, kiln_move(t));
    expect_ok(cx);
    cr_expect_neq(kiln_tensor_data(y), kiln_tensor_data(v));
    cr_expect_eq(floats(v)[65], 65.0f, "the view keeps its values");
    cr_expect_eq(floats(y)[65], -65.0f);
    kiln_ctx_release(cx);
}

Test(move, wrapped_user_memory_is_never_written) {
    kiln_ctx *cx = test_ctx();
    float user[N];
    for (int i = 0; i < N; i++)
        user[i] = (float)i;
    kiln_tensor *t =
        kiln_tensor_wrap_host_writable(cx, KILN_F32, KILN_SHAPE(N), user, sizeof user, NULL, NULL);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *y = kiln_negate(cx, kiln_move(t));
    expect_ok(cx);
    cr_expect_neq(kiln_tensor_data(y), (const void *)user);
    cr_expect_eq(user[9], 9.0f, "the user's array keeps its values");
    cr_expect_eq(floats(y)[9], -9.0f);
    kiln_ctx_release(cx);
}

Test(move, a_failed_builder_leaves_the_moved_tensor_as_it_was) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *t = ramp(cx, KILN_F32, N);
    kiln_tensor *bad = ramp(cx, KILN_F32, 3);
    cr_expect_null(kiln_add(cx, kiln_move(t), bad));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_add: operand 2 has shape");
    cr_expect_eq(floats(t)[11], 11.0f, "t keeps its values and its reference");
    /* The mark is cleared: the next builder leaves t alone. */
    const void *mem = kiln_tensor_data(t);
    kiln_tensor *y = kiln_negate(cx, t);
    expect_ok(cx);
    cr_expect_neq(kiln_tensor_data(y), mem);
    cr_expect_eq(floats(t)[11], 11.0f);
    /* So does a failure inside the op (a dtype the op refuses). */
    kiln_tensor *i = ramp(cx, KILN_I32, N);
    cr_expect_null(kiln_sine(cx, kiln_move(i)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_sine");
    cr_expect_eq(((const int32_t *)kiln_tensor_data(i))[5], 5);
    kiln_ctx_release(cx);
}

Test(move, other_dtypes_of_the_same_width_take_the_memory) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *f = kiln_add(cx, ramp(cx, KILN_F32, N), kiln_scalar(cx, 0.75, KILN_F32));
    const void *mem = kiln_tensor_data(f);
    kiln_tensor *i = kiln_convert(cx, kiln_move(f), KILN_I32); /* f32 -> i32: 4 bytes each */
    expect_ok(cx);
    cr_expect_eq(kiln_tensor_data(i), mem);
    cr_expect_eq(((const int32_t *)kiln_tensor_data(i))[10], 10);
    /* f32 -> f64 cannot: a new buffer, and f is dropped all the same. */
    kiln_tensor *g = kiln_add(cx, ramp(cx, KILN_F32, N), kiln_scalar(cx, 0.5, KILN_F32));
    size_t before = live_bytes(cx);
    kiln_tensor *d = kiln_convert(cx, kiln_move(g), KILN_F64);
    expect_ok(cx);
    cr_expect_eq(((const double *)kiln_tensor_data(d))[3], 3.5);
    cr_expect_eq(live_bytes(cx), before - N * 4 + N * 8, "g's block went back at once");
    /* select over a moved on_true, and a compare of bytes into bools */
    kiln_tensor *on_true = ramp(cx, KILN_F32, N);
    mem = kiln_tensor_data(on_true);
    kiln_tensor *pred = kiln_compare(cx, ramp(cx, KILN_F32, N), kiln_scalar(cx, 100, KILN_F32),
                                     KILN_CMP_LT, KILN_CMP_DEFAULT);
    kiln_tensor *s = kiln_select(cx, pred, kiln_move(on_true), kiln_scalar(cx, -1, KILN_F32));
    expect_ok(cx);
    cr_expect_eq(kiln_tensor_data(s), mem);
    cr_expect_eq(floats(s)[99], 99.0f);
    cr_expect_eq(floats(s)[100], -1.0f);
    kiln_tensor *bytes = ramp(cx, KILN_U8, N);
    mem = kiln_tensor_data(bytes);
    kiln_tensor *b = kiln_compare(cx, kiln_move(bytes), kiln_scalar(cx, 3, KILN_U8), KILN_CMP_EQ,
                                  KILN_CMP_DEFAULT);
    expect_ok(cx);
    cr_expect_eq(kiln_tensor_data(b), mem);
    const uint8_t *bv = kiln_tensor_data(b);
    cr_expect(bv[3] == 1 && bv[4] == 0 && bv[259] == 1);
    kiln_ctx_release(cx);
}

Test(move, broadcasts_made_by_a_builder_are_dropped_at_once) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = ramp(cx, KILN_F32, N);
    kiln_tensor *half = kiln_scalar(cx, 0.5, KILN_F32);
    size_t before = live_bytes(cx);
    kiln_tensor *y = kiln_multiply(cx, half, x);
    expect_ok(cx);
    /* the broadcast of 0.5 became the result: one new data block, and y's record */
    cr_expect_eq(live_bytes(cx), before + N * 4 + kiln__buffer_cache_capacity(sizeof(kiln_tensor)),
                 "%zu live bytes, %zu before", live_bytes(cx), before);
    cr_expect_eq(floats(y)[6], 3.0f);
    kiln_ctx_release(cx);
}

Test(move, moved_tensors_in_a_scope_and_null) {
    kiln_ctx *cx = test_ctx();
    cr_expect_null(kiln_move(NULL));
    kiln_scope_begin(cx);
    kiln_tensor *x = ramp(cx, KILN_F32, N);
    kiln_tensor *y = kiln_abs(cx, kiln_move(kiln_negate(cx, x)));
    kiln_tensor *kept = kiln_tensor_retain(y);
    kiln_scope_end(cx); /* the scope no longer holds the moved temporary: nothing twice */
    cr_expect_eq(floats(kept)[12], 12.0f);
    kiln_tensor_release(kept);
    kiln_ctx_release(cx);
}

static kiln_status chain(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *x = in[0];
    kiln_tensor *g =
        kiln_exponential(cx, kiln_move(kiln_negate(cx, kiln_move(kiln_multiply(cx, x, x)))));
    out[0] = kiln_add(cx, kiln_move(kiln_multiply(cx, kiln_move(g), kiln_sine(cx, x))),
                      kiln_move(kiln_multiply(cx, kiln_scalar_like(cx, x, 0.5), x)));
    return kiln_ctx_status(cx);
}

Test(move, one_function_traced_and_eager) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = kiln_divide(cx, ramp(cx, KILN_F32, N), kiln_scalar(cx, 1000, KILN_F32));
    const float x7 = floats(x)[7];
    kiln_tensor *eager = NULL;
    cr_assert_eq(chain(cx, &x, &eager, NULL), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_expect_eq(floats(x)[7], x7, "the input is not written");
    kiln_arg_spec arg = {.dtype = KILN_F32, .shape = KILN_SHAPE(N)};
    kiln_region fn = {chain, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &arg, 1, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *compiled = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &compiled), KILN_OK, "%s", kiln_ctx_error_message(cx));
    for (int i = 0; i < N; i++) {
        float xi = floats(x)[i];
        float want = expf(-xi * xi) * sinf(xi) + 0.5f * xi;
        cr_assert(fabsf(floats(eager)[i] - want) <= 1e-6f * (1 + fabsf(want)), "eager[%d] %g %g", i,
                  floats(eager)[i], want);
        cr_assert(fabsf(floats(compiled)[i] - want) <= 1e-6f * (1 + fabsf(want)),
                  "compiled[%d] %g %g", i, floats(compiled)[i], want);
    }
    kiln_tensor_release(compiled);
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}
