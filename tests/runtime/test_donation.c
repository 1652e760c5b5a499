/* SPDX-License-Identifier: Apache-2.0 */
/* Donation: a donated argument's buffer takes the result aliased to it, and the argument is
 * dead afterwards, for every use. Includes Reactant.jl's buffer-donation cases. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <math.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test_util.h"

static kiln_exe *compile_fn(kiln_ctx *cx, kiln_region_fn f, const kiln_arg_spec *args,
                            int32_t n_args, int32_t n_results, const char *name,
                            bool assert_nonallocating) {
    kiln_region fn = {f, NULL};
    kiln_lower_options lo = kiln_lower_options_default();
    lo.name = name;
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, args, n_args, n_results, &lo, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_compile_options co = kiln_compile_options_default();
    co.assert_nonallocating = assert_nonallocating;
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &co, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    return exe;
}

static kiln_tensor *f32_values(kiln_ctx *cx, kiln_shape shape, float start) {
    kiln_tensor *t = kiln_iota(cx, KILN_F32, shape, shape.rank - 1);
    return kiln_add(cx, t, kiln_scalar(cx, start, KILN_F32));
}

static void expect_all(kiln_ctx *cx, const kiln_tensor *t, const float *want) {
    for (int64_t i = 0; i < kiln_tensor_numel(t); i++)
        cr_assert_eq(kiln_tensor_item(cx, t, i), want[i], "element %d: %g, expected %g", (int)i,
                     kiln_tensor_item(cx, t, i), want[i]);
}

/* ---- Reactant.jl: test/buffer_donation.jl ------------------------------------------------- */

/* donate_fill_x_with_2(x, y): x .= 2 */
static kiln_status fill_x_with_2(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_broadcast_to(cx, kiln_scalar(cx, 2, KILN_F32), *kiln_tensor_shape(in[0]));
    out[1] = in[1];
    return kiln_ctx_status(cx);
}

/* donate_inplace_mul(x, y): x .*= y */
static kiln_status inplace_mul(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_multiply(cx, in[0], in[1]);
    out[1] = in[1];
    return kiln_ctx_status(cx);
}

Test(donation, reactant_cases_update_x_in_place_and_preserve_y) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[2] = {
        {.dtype = KILN_F32, .shape = KILN_SHAPE(2, 2), .name = "x", .donate = true},
        {.dtype = KILN_F32, .shape = KILN_SHAPE(2, 2), .name = "y"}};
    kiln_region_fn fns[2] = {fill_x_with_2, inplace_mul};
    const float want[2][4] = {{2, 2, 2, 2}, {3, 8, 15, 24}};
    for (int f = 0; f < 2; f++) {
        /* Every result reuses a buffer: x's (donated) or y's (preserved). */
        kiln_exe *exe = compile_fn(cx, fns[f], args, 2, 2, "donate", true);
        kiln_exe_info info;
        cr_assert_eq(kiln_exe_info_get(cx, exe, &info), KILN_OK);
        cr_assert_eq(info.aliases[0], 0);
        cr_assert_eq(info.aliases[1], -1);
        cr_assert_eq(info.preserved[0], -1);
        cr_assert_eq(info.preserved[1], 1);
        cr_assert(info.args[0].donate && !info.args[1].donate);
        kiln_tensor *x =
            kiln_reshape(cx, kiln_iota(cx, KILN_F32, KILN_SHAPE(4), 0), KILN_SHAPE(2, 2));
        x = kiln_add(cx, x, kiln_scalar(cx, 1, KILN_F32));              /* 1 2 3 4 */
        kiln_tensor *y = kiln_add(cx, x, kiln_scalar(cx, 2, KILN_F32)); /* 3 4 5 6 */
        const void *x_buffer = kiln_tensor_data(x), *y_buffer = kiln_tensor_data(y);
        kiln_tensor *r[2];
        cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, r), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        expect_all(cx, r[0], want[f]);
        cr_assert_eq(kiln_tensor_data(r[0]), x_buffer); /* x's buffer, updated in place */
        cr_assert_eq(kiln_tensor_data(r[1]), y_buffer); /* y's buffer, returned as is */
        cr_assert_null(kiln_tensor_data(x));            /* x is dead */
        expect_all(cx, y, (const float[]){3, 4, 5, 6}); /* y is alive and unchanged */
        float back[4];
        cr_assert_eq(kiln_tensor_to_host(cx, x, back, sizeof back), KILN_FAILED_PRECONDITION);
        expect_error(cx, KILN_FAILED_PRECONDITION,
                     "kiln_tensor_to_host: tensor was donated to 'donate' as 'x'");
        /* The result can be donated in turn (the next step of a training loop). */
        kiln_tensor *r2[2];
        cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){r[0], y}, r2), KILN_OK);
        cr_assert_eq(kiln_tensor_data(r2[0]), x_buffer);
        kiln_exe_release(exe);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- a dead tensor, everywhere ------------------------------------------------------------ */

static kiln_status train_step(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_subtract(cx, in[0], kiln_multiply(cx, kiln_scalar(cx, 0.5, KILN_F32), in[1]));
    return kiln_ctx_status(cx);
}

static kiln_status uses_dead(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    out[0] = kiln_add(cx, in[0], (kiln_tensor *)u);
    return kiln_ctx_status(cx);
}

Test(donation, a_donated_tensor_is_dead_for_every_use) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[2] = {
        {.dtype = KILN_F32, .shape = KILN_SHAPE(3), .name = "params.w1", .donate = true},
        {.dtype = KILN_F32, .shape = KILN_SHAPE(3), .name = "grads.w1"}};
    kiln_exe *exe = compile_fn(cx, train_step, args, 2, 1, "train_step", true);
    kiln_tensor *w = f32_values(cx, KILN_SHAPE(3), 1), *g = f32_values(cx, KILN_SHAPE(3), 0);
    kiln_tensor *w2 = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){w, g}, &w2), KILN_OK);
    expect_all(cx, w2, (const float[]){1, 1.5f, 2});
    const char *msg = "tensor was donated to 'train_step' as 'params.w1'";
    char want[160];

    /* Its type stays readable; its data does not. */
    cr_assert_eq(kiln_tensor_dtype(w), KILN_F32);
    cr_assert_eq(kiln_tensor_numel(w), 3);
    cr_assert_null(kiln_tensor_data(w));
    float back[3];
    cr_assert_eq(kiln_tensor_to_host(cx, w, back, sizeof back), KILN_FAILED_PRECONDITION);
    snprintf(want, sizeof want, "kiln_tensor_to_host: %s", msg);
    expect_error(cx, KILN_FAILED_PRECONDITION, want);
    cr_assert(isnan(kiln_tensor_item(cx, w, 0)));
    snprintf(want, sizeof want, "kiln_tensor_item: %s", msg);
    expect_error(cx, KILN_FAILED_PRECONDITION, want);
    cr_assert_null(kiln_tensor_to_string(cx, w, NULL));
    expect_error(cx, KILN_FAILED_PRECONDITION, msg);
    cr_assert_eq(kiln_tensor_print(cx, w, stdout), KILN_FAILED_PRECONDITION);
    expect_error(cx, KILN_FAILED_PRECONDITION, msg);
    cr_assert_eq(kiln_npy_save(cx, test_tmp_path("dead.npy"), w), KILN_FAILED_PRECONDITION);
    snprintf(want, sizeof want, "kiln_npy_save: %s", msg);
    expect_error(cx, KILN_FAILED_PRECONDITION, want);
    void *data = NULL;
    size_t size = 0;
    cr_assert_eq(kiln_npy_save_buffer(cx, w, &data, &size), KILN_FAILED_PRECONDITION);
    cr_assert_null(data);
    expect_error(cx, KILN_FAILED_PRECONDITION, msg);

    /* As an operand: unary builders, broadcasting binary builders, others. */
    cr_assert_null(kiln_negate(cx, w));
    snprintf(want, sizeof want, "kiln_negate: operand 1: %s", msg);
    expect_error(cx, KILN_FAILED_PRECONDITION, want);
    cr_assert_null(kiln_add(cx, g, w));
    snprintf(want, sizeof want, "kiln_add: operand 2: %s", msg);
    expect_error(cx, KILN_FAILED_PRECONDITION, want);
    cr_assert_null(kiln_multiply(cx, kiln_scalar(cx, 2, KILN_F32), w)); /* would broadcast */
    expect_error(cx, KILN_FAILED_PRECONDITION, msg);
    cr_assert_null(kiln_reshape(cx, w, KILN_SHAPE(3, 1)));
    expect_error(cx, KILN_FAILED_PRECONDITION, msg);
    kiln_tensor *s = NULL;
    cr_assert_neq(kiln_sort(cx, &w, 1, 0, true, kiln_region_less(), &s), KILN_OK);
    expect_error(cx, KILN_FAILED_PRECONDITION, msg);

    /* As an argument of a call, and captured by a traced function. */
    kiln_tensor *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){w, g}, &r), KILN_FAILED_PRECONDITION);
    cr_assert_null(r);
    snprintf(want, sizeof want, "kiln_exe_call: args[0] ('params.w1'): %s", msg);
    expect_error(cx, KILN_FAILED_PRECONDITION, want);
    kiln_region fn = {uses_dead, w};
    kiln_module *m = NULL;
    cr_assert_neq(kiln_lower(cx, &fn, args, 1, 1, NULL, &m), KILN_OK);
    cr_assert_null(m);
    expect_error(cx, KILN_FAILED_PRECONDITION, msg);

    /* An unnamed argument is named by its position. */
    kiln_arg_spec unnamed[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(3), .donate = true},
                                {.dtype = KILN_F32, .shape = KILN_SHAPE(3)}};
    kiln_exe *exe2 = compile_fn(cx, train_step, unnamed, 2, 1, "step", false);
    cr_assert_eq(kiln_exe_call(cx, exe2, (kiln_tensor *[]){w2, g}, &r), KILN_OK);
    cr_assert_null(kiln_negate(cx, w2));
    expect_error(cx, KILN_FAILED_PRECONDITION, "tensor was donated to 'step' as args[0]");
    kiln_exe_release(exe2);
    kiln_tensor_release(w); /* a dead tensor is released as any other */
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- errors before anything runs ---------------------------------------------------------- */

static kiln_status add2(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_add(cx, in[0], in[1]);
    out[1] = kiln_subtract(cx, in[0], in[1]);
    return kiln_ctx_status(cx);
}

Test(donation, the_same_tensor_donated_twice_is_an_error_before_anything_runs) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec both[2] = {{.dtype = KILN_I32, .shape = KILN_SHAPE(4), .donate = true},
                             {.dtype = KILN_I32, .shape = KILN_SHAPE(4), .donate = true}};
    kiln_exe *exe = compile_fn(cx, add2, both, 2, 2, "add2", true);
    kiln_tensor *x = kiln_full(cx, KILN_I32, KILN_SHAPE(4), 3), *r[2] = {NULL, NULL};
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, x}, r), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_exe_call: args[0] and args[1] are the same tensor, donated twice");
    cr_assert_null(r[0]);
    cr_assert_eq(kiln_tensor_item(cx, x, 0), 3); /* still alive */
    kiln_exe_release(exe);

    kiln_arg_spec one[2] = {{.dtype = KILN_I32, .shape = KILN_SHAPE(4)},
                            {.dtype = KILN_I32, .shape = KILN_SHAPE(4), .donate = true}};
    exe = compile_fn(cx, add2, one, 2, 2, "add2", false);
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, x}, r), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_exe_call: args[1] is donated, and the same tensor is also args[0]");
    cr_assert_eq(kiln_tensor_item(cx, x, 3), 3);
    kiln_tensor *y = kiln_full(cx, KILN_I32, KILN_SHAPE(4), 1);
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, r), KILN_OK);
    cr_assert_eq(kiln_tensor_item(cx, r[0], 0), 4);
    cr_assert_eq(kiln_tensor_item(cx, r[1], 0), 2);
    cr_assert_eq(kiln_tensor_item(cx, x, 0), 3); /* x was not donated */
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

static kiln_status plus_one(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_add(cx, in[0], kiln_scalar_like(cx, in[0], 1));
    return kiln_ctx_status(cx);
}

static kiln_status to_f64(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_convert(cx, in[0], KILN_F64);
    out[1] = in[1];
    return kiln_ctx_status(cx);
}

Test(donation, assert_nonallocating_fails_when_a_result_reuses_nothing) {
    kiln_ctx *cx = test_ctx();
    kiln_region fn = {plus_one, NULL};
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(5)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &a, 1, 1, NULL, &m), KILN_OK);
    kiln_compile_options o = kiln_compile_options_default();
    o.assert_nonallocating = true;
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_FAILED_PRECONDITION);
    cr_assert_null(exe);
    expect_error(cx, KILN_FAILED_PRECONDITION,
                 "kiln_compile: assert_nonallocating: result 0 (f32[5]) reuses no donated or "
                 "preserved buffer");
    kiln_module_release(m);
    /* A donated argument of another dtype cannot be reused. */
    kiln_arg_spec b[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(4), .donate = true},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(4)}};
    fn.fn = to_f64;
    cr_assert_eq(kiln_lower(cx, &fn, b, 2, 2, NULL, &m), KILN_OK);
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_FAILED_PRECONDITION);
    expect_error(cx, KILN_FAILED_PRECONDITION, "result 0 (f64[4])");
    /* Without the assertion it compiles; x is still donated (dead afterwards). */
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK);
    kiln_module_release(m);
    kiln_tensor *x = kiln_ones(cx, KILN_F32, KILN_SHAPE(4)), *r[2];
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, x}, r), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "donated");
    kiln_tensor *y = kiln_ones(cx, KILN_F32, KILN_SHAPE(4));
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, r), KILN_OK);
    cr_assert_eq(kiln_tensor_item(cx, r[0], 3), 1);
    cr_assert_null(kiln_tensor_data(x));
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- when the donated buffer cannot be written in place ----------------------------------- */

/* x is read after the op making the aliased result: the result is copied in at the end. */
static kiln_status read_after(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_add(cx, in[0], kiln_scalar(cx, 1, KILN_F32));
    out[1] = kiln_multiply(cx, in[0], kiln_scalar(cx, 2, KILN_F32));
    return kiln_ctx_status(cx);
}

/* A transpose cannot write over its own operand. */
static kiln_status transposed(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_transpose(cx, in[0], KILN_DIMS(1, 0));
    return kiln_ctx_status(cx);
}

Test(donation, results_are_copied_into_the_donated_buffer_when_needed) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(2, 3), .donate = true};
    kiln_exe *exe = compile_fn(cx, read_after, &a, 1, 2, "read_after", false);
    kiln_tensor *x = f32_values(cx, KILN_SHAPE(2, 3), 0);
    const void *buffer = kiln_tensor_data(x);
    kiln_tensor *r[2];
    cr_assert_eq(kiln_exe_call(cx, exe, &x, r), KILN_OK);
    expect_all(cx, r[0], (const float[]){1, 2, 3, 1, 2, 3});
    expect_all(cx, r[1], (const float[]){0, 2, 4, 0, 2, 4});
    cr_assert_eq(kiln_tensor_data(r[0]), buffer);
    kiln_exe_release(exe);

    kiln_arg_spec sq = {.dtype = KILN_F32, .shape = KILN_SHAPE(2, 3), .donate = true};
    exe = compile_fn(cx, transposed, &sq, 1, 1, "transposed", true);
    x = f32_values(cx, KILN_SHAPE(2, 3), 0);
    buffer = kiln_tensor_data(x);
    cr_assert_eq(kiln_exe_call(cx, exe, &x, r), KILN_OK);
    cr_assert_eq(kiln_tensor_dim(r[0], 0), 3);
    expect_all(cx, r[0], (const float[]){0, 0, 1, 1, 2, 2});
    cr_assert_eq(kiln_tensor_data(r[0]), buffer);
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

static kiln_status identity(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)cx, (void)u;
    out[0] = in[0];
    return KILN_OK;
}

Test(donation, a_shared_buffer_is_not_written_but_the_tensor_still_dies) {
    kiln_ctx *cx = test_ctx();
    /* f(x) = x returns a tensor sharing x's buffer. */
    kiln_arg_spec keep = {.dtype = KILN_F32, .shape = KILN_SHAPE(3)};
    kiln_exe *id = compile_fn(cx, identity, &keep, 1, 1, "id", true);
    kiln_tensor *x = f32_values(cx, KILN_SHAPE(3), 10), *view = NULL;
    cr_assert_eq(kiln_exe_call(cx, id, &x, &view), KILN_OK);
    cr_assert_eq(kiln_tensor_data(view), kiln_tensor_data(x));
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(3), .donate = true};
    kiln_exe *exe = compile_fn(cx, plus_one, &a, 1, 1, "plus_one", true);
    kiln_tensor *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &view, &r), KILN_OK);
    expect_all(cx, r, (const float[]){11, 12, 13});
    cr_assert_neq(kiln_tensor_data(r), kiln_tensor_data(x)); /* not written over x */
    expect_all(cx, x, (const float[]){10, 11, 12});
    cr_assert_null(kiln_tensor_data(view));
    kiln_exe_release(exe);
    kiln_exe_release(id);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(donation, a_preserved_argument_may_be_donated_and_donate_all_skips_it) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(3), .name = "x", .donate = true};
    kiln_exe *exe = compile_fn(cx, identity, &a, 1, 1, "id", true);
    kiln_tensor *x = f32_values(cx, KILN_SHAPE(3), 1), *r = NULL;
    const void *buffer = kiln_tensor_data(x);
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &r), KILN_OK);
    cr_assert_eq(kiln_tensor_data(r), buffer);
    cr_assert_null(kiln_tensor_data(x));
    expect_all(cx, r, (const float[]){1, 2, 3});
    kiln_exe_release(exe);

    kiln_region fn = {to_f64, NULL};
    kiln_arg_spec b[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(3)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(3)}};
    kiln_lower_options lo = kiln_lower_options_default();
    lo.donate_all = true;
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, b, 2, 2, &lo, &m), KILN_OK);
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK);
    kiln_module_release(m);
    kiln_tensor *p = f32_values(cx, KILN_SHAPE(3), 0), *q = f32_values(cx, KILN_SHAPE(3), 5);
    kiln_tensor *rs[2];
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){p, q}, rs), KILN_OK);
    cr_assert_null(kiln_tensor_data(p));         /* donated (to nothing: the dtypes differ) */
    cr_assert_eq(kiln_tensor_item(cx, q, 0), 5); /* returned unchanged: not donated */
    cr_assert_eq(kiln_tensor_item(cx, rs[0], 2), 2);
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- wrapped memory ------------------------------------------------------------------------ */

static void count_deleter(void *data, void *user) {
    (void)data;
    (*(int *)user)++;
}

Test(donation, wrapped_read_only_memory_is_never_written) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(4), .donate = true};
    kiln_exe *exe = compile_fn(cx, plus_one, &a, 1, 1, "plus_one", true);
    /* A page the process may only read: a write into it would fault. */
    long page = sysconf(_SC_PAGESIZE);
    float *mem =
        mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(mem, MAP_FAILED);
    for (int i = 0; i < 4; i++)
        mem[i] = (float)(i + 1);
    cr_assert_eq(mprotect(mem, (size_t)page, PROT_READ), 0);
    int deleted = 0;
    kiln_tensor *x =
        kiln_tensor_wrap_host(cx, KILN_F32, KILN_SHAPE(4), mem, 16, count_deleter, &deleted);
    kiln_tensor *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &r), KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_all(cx, r, (const float[]){2, 3, 4, 5});
    cr_assert_neq(kiln_tensor_data(r), (const void *)mem);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(mem[i], (float)(i + 1), "the caller's memory changed");
    cr_assert_null(kiln_tensor_data(x), "a donated tensor is dead, wrapped or not");
    cr_assert_eq(deleted, 1, "the memory goes back to its owner once the tensor died");
    munmap(mem, (size_t)page);

    /* Writable memory wrapped read-only keeps its values too (1,2,3,4 stays 1,2,3,4). */
    float user[4] = {1, 2, 3, 4};
    x = kiln_tensor_wrap_host(cx, KILN_F32, KILN_SHAPE(4), user, sizeof user, NULL, NULL);
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &r), KILN_OK);
    expect_all(cx, r, (const float[]){2, 3, 4, 5});
    for (int i = 0; i < 4; i++)
        cr_assert_eq(user[i], (float)(i + 1), "the caller's array changed");
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(donation, wrapped_writable_memory_takes_the_result_in_place) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(4), .donate = true};
    kiln_exe *exe = compile_fn(cx, plus_one, &a, 1, 1, "plus_one", true);
    float user[4] = {1, 2, 3, 4};
    int deleted = 0;
    kiln_tensor *x = kiln_tensor_wrap_host_writable(cx, KILN_F32, KILN_SHAPE(4), user, sizeof user,
                                                    count_deleter, &deleted);
    cr_assert_not_null(x, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &r), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_data(r), (const void *)user, "the result takes the memory");
    for (int i = 0; i < 4; i++)
        cr_assert_eq(user[i], (float)(i + 2));
    cr_assert_null(kiln_tensor_data(x));
    cr_assert_eq(deleted, 0, "the result still uses the memory");
    kiln_tensor_release(r);
    cr_assert_eq(deleted, 1, "the deleter runs when the result goes");
    kiln_exe_release(exe);

    /* The same checks as kiln_tensor_wrap_host, named after this function. */
    char bytes[32] = {0};
    cr_assert_null(
        kiln_tensor_wrap_host_writable(cx, KILN_F32, KILN_SHAPE(4), bytes + 1, 16, NULL, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_tensor_wrap_host_writable: data");
    cr_assert_null(
        kiln_tensor_wrap_host_writable(cx, KILN_F32, KILN_SHAPE(4), user, 12, NULL, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_tensor_wrap_host_writable");
    kiln_ctx_release(cx);
}
