/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_compile and kiln_exe_call: the EMLX step, the buffer plan, results that are
 * arguments, constants, duplicates or control-flow values, argument checks, and
 * allocation failure at every point of compile and call. */
#include "failing_allocator.h"
#include "ir/ir.h"
#include "test_util.h"

/* The EMLX benchmark: acc = x; for i in 1..10: acc = i*acc + y. */
static kiln_status emlx_step(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *acc = in[0];
    for (int i = 1; i <= 10; i++)
        acc = kiln_add(cx, kiln_multiply(cx, kiln_scalar(cx, i, KILN_F32), acc), in[1]);
    out[0] = acc;
    return kiln_ctx_status(cx);
}

static kiln_tensor *filled(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape, double start) {
    kiln_tensor *t = kiln_iota(cx, KILN_F64, shape, shape.rank - 1);
    t = kiln_add(cx, kiln_multiply(cx, t, kiln_scalar(cx, 0.25, KILN_F64)),
                 kiln_scalar(cx, start, KILN_F64));
    return kiln_convert(cx, t, dtype);
}

static void expect_equal(const kiln_tensor *a, const kiln_tensor *b) {
    cr_assert_eq(kiln_tensor_dtype(a), kiln_tensor_dtype(b));
    cr_assert(kiln_shape_equal(kiln_tensor_shape(a), kiln_tensor_shape(b)));
    cr_assert_eq(kiln_tensor_nbytes(a), kiln_tensor_nbytes(b));
    if (kiln_tensor_nbytes(a))
        cr_assert(memcmp(kiln_tensor_data(a), kiln_tensor_data(b), kiln_tensor_nbytes(a)) == 0);
}

static kiln_exe *lower_and_compile(kiln_ctx *cx, kiln_region_fn f, void *user,
                                   const kiln_arg_spec *args, int32_t n_args, int32_t n_results) {
    kiln_region fn = {f, user};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, args, n_args, n_results, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    /* These tests pin the planner on the traced ops: no simplification passes, no fusion. */
    kiln_compile_options o = kiln_compile_options_default();
    o.disable_passes = true;
    o.disable_fusion = true;
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m); /* the executable keeps what it needs */
    return exe;
}

Test(compile, emlx_step_matches_eager) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10), .name = "x"},
                             {.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10), .name = "y"}};
    kiln_exe *exe = lower_and_compile(cx, emlx_step, NULL, args, 2, 1);
    kiln_exe_info info;
    cr_assert_eq(kiln_exe_info_get(cx, exe, &info), KILN_OK);
    cr_assert_eq(info.n_args, 2);
    cr_assert_eq(info.n_results, 1);
    /* the signature, as the module declared it */
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(info.args[i].dtype, KILN_F32);
        cr_assert(kiln_shape_equal(&info.args[i].shape, &args[i].shape));
        cr_assert_str_eq(info.args[i].name, i ? "y" : "x");
        cr_assert(!info.args[i].donate);
    }
    cr_assert_eq(info.results[0].dtype, KILN_F32);
    cr_assert(kiln_shape_equal(&info.results[0].shape, &args[0].shape));
    /* The constants and their broadcasts are folded: a multiply and an add per step. */
    cr_assert_eq(info.n_ops, 20);
    cr_assert_eq(info.aliases[0], -1);
    cr_assert_eq(info.preserved[0], -1);
    /* 19 intermediates; every multiply and add works in place over the one before. */
    cr_assert_eq(info.n_buffers, 19);
    cr_assert_eq(info.arena_bytes, 448); /* one f32[10,10], cache-line aligned */
    kiln_tensor *x = filled(cx, KILN_F32, KILN_SHAPE(10, 10), -1),
                *y = kiln_scalar(cx, 0.5, KILN_F32);
    y = kiln_broadcast_to(cx, y, KILN_SHAPE(10, 10));
    kiln_tensor *want = NULL;
    emlx_step(cx, (kiln_tensor *[]){x, y}, &want, NULL);
    int depth = kiln_scope_depth(cx);
    for (int i = 0; i < 3; i++) {
        kiln_tensor *r = NULL;
        cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, &r), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        expect_equal(r, want);
        kiln_tensor_release(r); /* results are the scope's: an early release is fine */
    }
    cr_assert_eq(kiln_scope_depth(cx), depth);
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* A weight made outside the function is captured as a constant: the executable shares its
 * buffer, so the module and the caller's tensor may both go. */
static kiln_status affine(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    kiln_tensor *w = user;
    out[0] = kiln_tanh(cx, kiln_add(cx, kiln_matmul(cx, in[0], w), kiln_scalar(cx, 1, KILN_F64)));
    return kiln_ctx_status(cx);
}

Test(compile, captured_constants_outlive_module_and_caller) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F64, .shape = KILN_SHAPE(3, 30)};
    kiln_tensor *x = filled(cx, KILN_F64, KILN_SHAPE(3, 30), -2);
    cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
    kiln_tensor *w = filled(cx, KILN_F64, KILN_SHAPE(30, 30), 0.125); /* 7200 bytes: not folded */
    kiln_tensor *want = NULL;
    affine(cx, &x, &want, w);
    want = kiln_tensor_retain(want);
    kiln_exe *exe = lower_and_compile(cx, affine, w, &a, 1, 1);
    cr_assert_eq(kiln_scope_end(cx), KILN_OK); /* w goes */
    kiln_tensor *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &r), KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_equal(r, want);
    kiln_tensor_release(want);
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Four transposes: each intermediate dies at the next op, so two buffers take turns. */
static kiln_status transposes(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *t = in[0];
    for (int i = 0; i < 4; i++)
        t = kiln_transpose(cx, t, KILN_DIMS(1, 0));
    out[0] = t;
    return kiln_ctx_status(cx);
}

Test(compile, the_plan_reuses_buffers_by_liveness) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(8, 8)};
    kiln_exe *exe = lower_and_compile(cx, transposes, NULL, &a, 1, 1);
    kiln_exe_info info;
    kiln_exe_info_get(cx, exe, &info);
    cr_assert_eq(info.n_ops, 4);
    cr_assert_eq(info.n_buffers, 3);
    cr_assert_eq(info.arena_bytes, 2 * 256);
    kiln_tensor *x = filled(cx, KILN_F32, KILN_SHAPE(8, 8), 3), *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &r), KILN_OK);
    expect_equal(r, x);
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(compile, passes_simplify_before_planning) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(8, 8)};
    kiln_region fn = {transposes, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &a, 1, 1, NULL, &m), KILN_OK);
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    kiln_exe_info info;
    kiln_exe_info_get(cx, exe, &info);
    cr_assert_eq(info.n_ops, 0); /* the four transposes compose to the identity */
    kiln_tensor *x = filled(cx, KILN_F32, KILN_SHAPE(8, 8), 3), *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &r), KILN_OK);
    expect_equal(r, x);
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Results: a value twice, an argument unchanged, a constant, a value also used later. */
static kiln_status mixed(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *p = kiln_multiply(cx, in[0], in[1]);
    out[0] = p;
    out[1] = p;
    out[2] = in[0];
    out[3] = kiln_full(cx, KILN_I32, KILN_SHAPE(3), 7);
    out[4] = kiln_negate(cx, p);
    return kiln_ctx_status(cx);
}

Test(compile, results_that_repeat_or_are_arguments_or_constants) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[2] = {{.dtype = KILN_I64, .shape = KILN_SHAPE(2, 3)},
                             {.dtype = KILN_I64, .shape = KILN_SHAPE(2, 3)}};
    kiln_exe *exe = lower_and_compile(cx, mixed, NULL, args, 2, 5);
    kiln_exe_info info;
    kiln_exe_info_get(cx, exe, &info);
    cr_assert_eq(info.preserved[2], 0);
    kiln_tensor *x = filled(cx, KILN_I64, KILN_SHAPE(2, 3), 1),
                *y = filled(cx, KILN_I64, KILN_SHAPE(2, 3), 5);
    kiln_tensor *want[5], *r[5], *r2[5];
    mixed(cx, (kiln_tensor *[]){x, y}, want, NULL);
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, r), KILN_OK);
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, r2), KILN_OK);
    for (int i = 0; i < 5; i++) {
        expect_equal(r[i], want[i]);
        expect_equal(r2[i], want[i]);
        cr_assert_neq(r[i], r2[i]); /* every call makes tensors of its own */
    }
    cr_assert_neq(r[0], r[1]);
    cr_assert_neq(kiln_tensor_data(r[0]), kiln_tensor_data(r[1]));
    cr_assert_eq(kiln_tensor_data(r[2]), kiln_tensor_data(x)); /* returned without a copy */
    cr_assert_neq(r[2], x);
    kiln_tensor_release(r[0]);
    expect_equal(r[1], want[1]);
    kiln_tensor_release(r[2]);
    expect_equal(x, want[2]); /* the argument is untouched */
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

static kiln_status count_cond(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_compare(cx, a[0], kiln_scalar(cx, 4, KILN_I32), KILN_CMP_LT, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}

/* x = x * y + sum(x) with a custom region: a region interpreted per element. */
static kiln_status sum_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, a[0], a[1]);
    return kiln_ctx_status(cx);
}

static kiln_status loop_body(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    kiln_tensor *y = u;
    kiln_region add = {sum_region, NULL};
    kiln_tensor *zero = kiln_scalar(cx, 0, KILN_F32), *s = NULL;
    kiln_reduce(cx, &a[1], &zero, 1, KILN_DIMS(0, 1), &add, &s);
    r[0] = kiln_add(cx, a[0], kiln_scalar(cx, 1, KILN_I32));
    r[1] = kiln_add(cx, kiln_multiply(cx, a[1], y), s);
    return kiln_ctx_status(cx);
}

static kiln_status looped(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region cond = {count_cond, NULL}, body = {loop_body, in[1]};
    kiln_tensor *w[2];
    kiln_tensor *init[2] = {kiln_scalar(cx, 0, KILN_I32), in[0]};
    if (kiln_while(cx, init, 2, &cond, &body, w) != KILN_OK) return kiln_ctx_status(cx);
    out[0] = w[1];
    out[1] = w[1];
    out[2] = kiln_add(cx, w[1], in[1]);
    out[3] = w[0];
    return kiln_ctx_status(cx);
}

Test(compile, control_flow_results_are_taken_or_copied) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(2, 2)},
                             {.dtype = KILN_F32, .shape = KILN_SHAPE(2, 2)}};
    kiln_exe *exe = lower_and_compile(cx, looped, NULL, args, 2, 4);
    kiln_tensor *x = filled(cx, KILN_F32, KILN_SHAPE(2, 2), -0.5);
    kiln_tensor *y = filled(cx, KILN_F32, KILN_SHAPE(2, 2), 0.5);
    kiln_tensor *want[4], *r[4];
    looped(cx, (kiln_tensor *[]){x, y}, want, NULL);
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, r), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    for (int i = 0; i < 4; i++)
        expect_equal(r[i], want[i]);
    cr_assert_neq(r[0], r[1]);
    cr_assert_eq(kiln_tensor_item(cx, r[3], 0), 4);
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

static kiln_status constant_only(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)in, (void)u;
    out[0] = kiln_full(cx, KILN_F16, KILN_SHAPE(2, 2), 1.5);
    return kiln_ctx_status(cx);
}

static kiln_status twice(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_multiply(cx, in[0], kiln_scalar(cx, 2, KILN_F32));
    out[1] = kiln_reshape(cx, out[0], KILN_SHAPE(3, 0));
    return kiln_ctx_status(cx);
}

Test(compile, no_arguments_and_empty_tensors) {
    kiln_ctx *cx = test_ctx();
    kiln_exe *exe = lower_and_compile(cx, constant_only, NULL, NULL, 0, 1);
    kiln_tensor *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, NULL, &r), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_item(cx, r, 3), 1.5);
    kiln_exe_release(exe);
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(0, 3)};
    exe = lower_and_compile(cx, twice, NULL, &a, 1, 2);
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(0, 3)), *rs[2];
    cr_assert_eq(kiln_exe_call(cx, exe, &x, rs), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_numel(rs[0]), 0);
    cr_assert_eq(kiln_tensor_dim(rs[1], 0), 3);
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

static kiln_status negate1(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_negate(cx, in[0]);
    return kiln_ctx_status(cx);
}

Test(compile, options_and_arguments_are_checked) {
    kiln_ctx *cx = test_ctx();
    kiln_region fn = {negate1, NULL};
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(2)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &a, 1, 1, NULL, &m), KILN_OK);
    kiln_exe *exe = (kiln_exe *)&exe;
    cr_assert_eq(kiln_compile(NULL, m, NULL, &exe), KILN_INVALID_ARGUMENT);
    cr_assert_eq(kiln_compile(cx, m, NULL, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_compile: out_exe is NULL");
    cr_assert_eq(kiln_compile(cx, NULL, NULL, &exe), KILN_INVALID_ARGUMENT);
    cr_assert_null(exe);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_compile: module is NULL");
    kiln_compile_options o = kiln_compile_options_default();
    cr_assert_eq(o.struct_size, sizeof o);
    cr_assert_not(o.assert_nonallocating);
    o.struct_size = 8;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "struct_size");
    o = kiln_compile_options_default();
    o.device = (kiln_device){.type = KILN_DEVICE_TYPE_CUDA, .id = 1};
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_UNAVAILABLE);
    expect_error(cx, KILN_UNAVAILABLE, "device cuda:1");
    o.device = KILN_DEVICE_CPU;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK);
    kiln_exe_info info;
    cr_assert_eq(kiln_exe_info_get(cx, NULL, &info), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_exe_info_get: exe is NULL");
    cr_assert_eq(kiln_exe_info_get(cx, exe, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_info is NULL");
    cr_assert_eq(kiln_exe_retain(exe), exe);
    kiln_exe_release(exe);
    kiln_exe_release(exe);
    kiln_exe_release(NULL);
    cr_assert_null(kiln_exe_retain(NULL));
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(compile, a_module_the_verifier_rejects_is_not_compiled) {
    kiln_ctx *cx = test_ctx();
    kiln_region fn = {negate1, NULL};
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(2)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &a, 1, 1, NULL, &m), KILN_OK);
    kiln__value *r = m->funcs[0]->body->first->results[0];
    kiln__type wrong = *r->type;
    wrong.dtype = KILN_I32;
    cr_assert(kiln__value_set_type(m, r, &wrong));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_INTERNAL);
    cr_assert_null(exe);
    expect_error(cx, KILN_INTERNAL, "verifier: @main, op 0 (stablehlo.negate)");
    /* The message reaches the compiling ctx when the module belongs to another one. */
    kiln_ctx *other = test_ctx();
    cr_assert_eq(kiln_compile(other, m, NULL, &exe), KILN_INTERNAL);
    expect_error(other, KILN_INTERNAL, "verifier");
    kiln_ctx_clear_error(cx);
    kiln_ctx_release(other);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status leak_tracer(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *user) {
    *(kiln_tensor **)user = kiln_tensor_retain(in[0]);
    out[0] = kiln_negate(cx, in[0]);
    return kiln_ctx_status(cx);
}

Test(compile, call_arguments_are_checked) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10), .name = "x"},
                             {.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10), .name = "y"}};
    kiln_exe *exe = lower_and_compile(cx, emlx_step, NULL, args, 2, 1);
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(10, 10));
    kiln_tensor *r = (kiln_tensor *)&r;
    cr_assert_eq(kiln_exe_call(NULL, exe, (kiln_tensor *[]){x, x}, &r), KILN_INVALID_ARGUMENT);
    cr_assert_eq(kiln_exe_call(cx, NULL, (kiln_tensor *[]){x, x}, &r), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_exe_call: exe is NULL");
    cr_assert_eq(kiln_exe_call(cx, exe, NULL, &r), KILN_INVALID_ARGUMENT);
    cr_assert_null(r);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_exe_call: args is NULL");
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, x}, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_exe_call: out_results is NULL");
    cr_assert_eq(kiln_exe_call_n(cx, exe, (kiln_tensor *[]){x, x, x}, 3, &r, 1),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "3 arguments given; the executable takes 2");
    kiln_tensor *two[2];
    cr_assert_eq(kiln_exe_call_n(cx, exe, (kiln_tensor *[]){x, x}, 2, two, 2),
                 KILN_INVALID_ARGUMENT);
    cr_assert_null(two[1]);
    expect_error(cx, KILN_INVALID_ARGUMENT, "room for 2 results given; the executable returns 1");
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, NULL}, &r), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_exe_call: args[1] is NULL");
    kiln_tensor *d = kiln_zeros(cx, KILN_F64, KILN_SHAPE(10, 10));
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, d}, &r), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_exe_call: args[1] ('y') has type f64[10,10]; expected f32[10,10]");
    kiln_tensor *s = kiln_zeros(cx, KILN_F32, KILN_SHAPE(10));
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){s, x}, &r), KILN_INVALID_ARGUMENT);
    cr_assert_null(r);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_exe_call: args[0] ('x') has type f32[10]; expected f32[10,10]");
    /* A traced tensor kept past its trace. */
    kiln_tensor *traced = NULL;
    kiln_region leak = {leak_tracer, &traced};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &leak, args, 1, 1, NULL, &m), KILN_OK);
    kiln_module_release(m);
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, traced}, &r),
                 KILN_FAILED_PRECONDITION);
    expect_error(cx, KILN_FAILED_PRECONDITION,
                 "kiln_exe_call: args[1] ('y'): the tensor is traced");
    kiln_tensor_release(traced);
    /* A call after all these errors still works. */
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, x}, &r), KILN_OK);
    cr_assert_eq(kiln_tensor_item(cx, r, 0), 0);
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(compile, an_executable_outlives_the_ctx_that_compiled_it) {
    kiln_ctx *a = test_ctx(), *b = test_ctx();
    kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(4)},
                             {.dtype = KILN_F32, .shape = KILN_SHAPE(4)}};
    kiln_exe *exe = lower_and_compile(a, emlx_step, NULL, args, 2, 1);
    kiln_ctx_release(a);
    kiln_tensor *x = kiln_ones(b, KILN_F32, KILN_SHAPE(4)), *r = NULL, *want = NULL;
    cr_assert_eq(kiln_exe_call(b, exe, (kiln_tensor *[]){x, x}, &r), KILN_OK);
    emlx_step(b, (kiln_tensor *[]){x, x}, &want, NULL);
    expect_equal(r, want);
    kiln_exe_release(exe);
    expect_ok(b);
    kiln_ctx_release(b);
}

/* ---- allocation failure ----------------------------------------------------------------- */

static kiln_ctx *failing_ctx(failing_allocator *fa) {
    kiln_ctx *cx = failing_allocator_ctx(fa);
    cr_assert_not_null(cx);
    return cx;
}

Test(compile, allocation_failure_at_every_point_of_compile_leaks_nothing) {
    /* The loop unrolled, and kept as a loop (its body's plan and carries). */
    kiln_region_fn fns[3] = {emlx_step, looped, looped};
    for (int f = 0; f < 3; f++) {
        kiln_compile_options o = kiln_compile_options_default();
        o.disable_unrolling = f == 2;
        failing_allocator fa;
        kiln_ctx *cx = failing_ctx(&fa);
        kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(2, 2)},
                                 {.dtype = KILN_F32, .shape = KILN_SHAPE(2, 2)}};
        kiln_region fn = {fns[f], NULL};
        /* A fresh module for every attempt: the passes rewrite it in place (the loop is
         * unrolled), so what a module holds after a compile is not a leak. */
        kiln_ctx_trim(cx);
        int64_t base = fa.live_blocks;
        int64_t k = 0;
        for (;; k++) {
            kiln_module *m = NULL;
            cr_assert_eq(kiln_lower(cx, &fn, args, 2, f ? 4 : 1, NULL, &m), KILN_OK);
            kiln_exe *exe = NULL;
            fa.fail_after = fa.allocations + k;
            kiln_status s = kiln_compile(cx, m, &o, &exe);
            fa.fail_after = -1;
            kiln_module_release(m);
            if (s == KILN_OK) {
                kiln_exe_release(exe);
                kiln_ctx_trim(cx);
                cr_assert_eq(fa.live_blocks, base);
                break;
            }
            cr_assert_eq(s, KILN_RESOURCE_EXHAUSTED, "failure %d: %s", (int)k,
                         kiln_ctx_error_message(cx));
            cr_assert_null(exe);
            kiln_ctx_trim(cx); /* what the buffer cache keeps is not a leak */
            cr_assert_eq(fa.live_blocks, base, "failure %d leaks", (int)k);
            kiln_ctx_clear_error(cx);
        }
        cr_assert_gt(k, 3);
        kiln_ctx_release(cx);
        cr_assert_eq(fa.live_blocks, 0);
    }
}

/* One allocation failing at a time, anywhere in compile: either the compile fails with
 * RESOURCE_EXHAUSTED, or it succeeds (an optimization that could not get memory, such as
 * cse's table, is skipped) and computes the same as eagerly. */
static kiln_status dup_terms(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *acc = in[1];
    for (int i = 0; i < 6; i++) /* the same sin(x) * x, six times: cse's work */
        acc = kiln_add(cx, acc, kiln_multiply(cx, kiln_sine(cx, in[0]), in[0]));
    out[0] = acc;
    return kiln_ctx_status(cx);
}

Test(compile, one_failed_allocation_anywhere_in_compile_fails_cleanly_or_changes_nothing) {
    failing_allocator fa;
    kiln_ctx *cx = failing_ctx(&fa);
    kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(3, 4)},
                             {.dtype = KILN_F32, .shape = KILN_SHAPE(3, 4)}};
    kiln_region fn = {dup_terms, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, args, 2, 1, NULL, &m), KILN_OK);
    kiln_tensor *x = filled(cx, KILN_F32, KILN_SHAPE(3, 4), -1),
                *y = filled(cx, KILN_F32, KILN_SHAPE(3, 4), 2);
    kiln_tensor *want = NULL;
    cr_assert_eq(dup_terms(cx, (kiln_tensor *[]){x, y}, &want, NULL), KILN_OK);
    int succeeded = 0, failed = 0;
    for (int64_t k = 0;; k++) {
        fa.fail_once = true;
        fa.fail_after = fa.allocations + k;
        int64_t failures = fa.failures;
        kiln_exe *exe = NULL;
        kiln_status s = kiln_compile(cx, m, NULL, &exe);
        bool hit = fa.failures > failures;
        fa.fail_after = -1;
        fa.fail_once = false;
        if (s != KILN_OK) {
            cr_assert_eq(s, KILN_RESOURCE_EXHAUSTED, "failure %d: %s", (int)k,
                         kiln_ctx_error_message(cx));
            cr_assert_null(exe);
            kiln_ctx_clear_error(cx);
            failed++;
            continue;
        }
        kiln_tensor *got = NULL;
        cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, &got), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        expect_equal(got, want);
        kiln_exe_release(exe);
        succeeded++;
        if (!hit) break; /* past the compile's last allocation */
    }
    /* several allocations fail the compile (tensors' records and small data come from the
     * ctx's cache, where a kept block serves them without the allocator) */
    cr_assert_geq(failed, 3, "%d compiles failed", failed);
    /* some failures only cost an optimization (cse's table among them) */
    cr_assert_gt(succeeded, 1, "%d compiles succeeded", succeeded);
    kiln_module_release(m);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(compile, allocation_failure_at_every_point_of_a_call_leaks_nothing) {
    /* EMLX, the loop unrolled, donated, and kept as a loop. */
    for (int f = 0; f < 4; f++) {
        kiln_compile_options o = kiln_compile_options_default();
        o.disable_unrolling = f == 3;
        failing_allocator fa;
        kiln_ctx *cx = failing_ctx(&fa);
        kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(2, 2), .donate = f == 2},
                                 {.dtype = KILN_F32, .shape = KILN_SHAPE(2, 2)}};
        kiln_region fn = {f ? looped : emlx_step, NULL};
        kiln_module *m = NULL;
        cr_assert_eq(kiln_lower(cx, &fn, args, 2, f ? 4 : 1, NULL, &m), KILN_OK);
        kiln_tensor *want[4] = {NULL};
        cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
        kiln_tensor *x0 = filled(cx, KILN_F32, KILN_SHAPE(2, 2), 0.5);
        fn.fn(cx, (kiln_tensor *[]){x0, x0}, want, NULL);
        for (int i = 0; i < (f ? 4 : 1); i++)
            want[i] = kiln_tensor_retain(want[i]);
        cr_assert_eq(kiln_scope_end(cx), KILN_OK);
        /* Compiled once first: the passes rewrite the module in place (the loop is
         * unrolled); the compiles below find it simplified and leave it as it is. */
        kiln_exe *first = NULL;
        cr_assert_eq(kiln_compile(cx, m, &o, &first), KILN_OK);
        kiln_exe_release(first);
        kiln_ctx_trim(cx);
        int64_t base = fa.live_blocks;
        int64_t k = 0;
        for (;; k++) {
            kiln_exe *exe = NULL;
            cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK);
            cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
            kiln_tensor *x = filled(cx, KILN_F32, KILN_SHAPE(2, 2), 0.5);
            kiln_tensor *y = filled(cx, KILN_F32, KILN_SHAPE(2, 2), 0.5);
            kiln_tensor *r[4] = {NULL};
            fa.fail_after = fa.allocations + k;
            kiln_status s = kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, r);
            fa.fail_after = -1;
            if (s == KILN_OK)
                for (int i = 0; i < (f ? 4 : 1); i++)
                    expect_equal(r[i], want[i]);
            else
                for (int i = 0; i < (f ? 4 : 1); i++)
                    cr_assert_null(r[i]);
            cr_assert_eq(kiln_scope_end(cx), KILN_OK);
            kiln_exe_release(exe);
            kiln_ctx_trim(cx); /* what the buffer cache keeps is not a leak */
            cr_assert_eq(fa.live_blocks, base, "failure %d leaks", (int)k);
            if (s == KILN_OK) break;
            cr_assert_eq(s, KILN_RESOURCE_EXHAUSTED, "failure %d: %s", (int)k,
                         kiln_ctx_error_message(cx));
            kiln_ctx_clear_error(cx);
        }
        /* The EMLX step's small result buffer is made at compile time: its call allocates
         * only the result's tensor header. */
        cr_assert_gt(k, f ? 2 : 0, "%d allocation points in call %d", (int)k, f);
        /* Again with one executable, whose pooled call state is reused after failures. */
        kiln_exe *exe = NULL;
        cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK);
        for (int64_t j = 0; j <= k; j++) {
            cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
            kiln_tensor *x = filled(cx, KILN_F32, KILN_SHAPE(2, 2), 0.5);
            kiln_tensor *y = filled(cx, KILN_F32, KILN_SHAPE(2, 2), 0.5);
            kiln_tensor *r[4] = {NULL};
            fa.fail_after = fa.allocations + (k - j);
            kiln_status s = kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, r);
            fa.fail_after = -1;
            if (s == KILN_OK)
                for (int i = 0; i < (f ? 4 : 1); i++)
                    expect_equal(r[i], want[i]);
            kiln_ctx_clear_error(cx);
            cr_assert_eq(kiln_scope_end(cx), KILN_OK);
        }
        kiln_exe_release(exe);
        kiln_ctx_trim(cx);
        cr_assert_eq(fa.live_blocks, base);
        for (int i = 0; i < 4; i++)
            kiln_tensor_release(want[i]);
        kiln_module_release(m);
        kiln_ctx_release(cx);
        cr_assert_eq(fa.live_blocks, 0);
    }
}
