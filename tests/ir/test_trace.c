/* SPDX-License-Identifier: Apache-2.0 */
#include "ir/ir.h"
#include "test_util.h"

static kiln_status emlx_step(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *acc = in[0];
    for (int i = 1; i <= 10; i++)
        acc = kiln_add(cx, kiln_multiply(cx, kiln_scalar(cx, i, KILN_F32), acc), in[1]);
    out[0] = acc;
    out[1] = in[1];
    return kiln_ctx_status(cx);
}

Test(trace, lowering_records_ops_and_the_calling_convention) {
    kiln_ctx *cx = test_ctx();
    kiln_region fn = {emlx_step, NULL};
    kiln_arg_spec args[2] = {{KILN_F32, KILN_SHAPE(10, 10), "x", true},
                             {KILN_F32, KILN_SHAPE(10, 10), "y", false}};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, args, 2, 2, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_module_info info;
    cr_assert_eq(kiln_module_info_get(cx, m, &info), KILN_OK);
    cr_assert_eq(info.n_args, 2);
    cr_assert_eq(info.n_results, 2);
    /* per step: constant, broadcast, multiply, add */
    cr_assert_eq(info.n_ops, 40);
    cr_assert_eq(info.preserved[0], -1);
    cr_assert_eq(info.preserved[1], 1); /* y is returned unchanged */
    cr_assert(info.donated[0]);
    cr_assert_not(info.donated[1]);
    cr_assert_eq(info.aliases[0], 0); /* the result may reuse x's buffer */
    cr_assert_eq(info.aliases[1], -1);
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    expect_ok(cx);
    cr_assert_eq(kiln_scope_depth(cx), 0);
    kiln_ctx_release(cx);
}

static kiln_status leak_tracer(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *user) {
    *(kiln_tensor **)user = kiln_tensor_retain(in[0]);
    out[0] = kiln_negate(cx, in[0]);
    return kiln_ctx_status(cx);
}

Test(trace, traced_tensors_cannot_be_read_or_used_later) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *kept = NULL;
    kiln_region fn = {leak_tracer, &kept};
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(3)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &a, 1, 1, NULL, &m), KILN_OK);
    cr_assert(kiln_tensor_is_traced(kept));
    float v[3];
    cr_assert_eq(kiln_tensor_to_host(cx, kept, v, sizeof v), KILN_FAILED_PRECONDITION);
    expect_error(cx, KILN_FAILED_PRECONDITION, "traced");
    kiln_tensor_release(kept);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status with_while(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user);
static kiln_status cond_lt(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_compare(cx, a[0], kiln_scalar(cx, 10, KILN_I64), KILN_CMP_LT, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}
static kiln_status body_inc(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, a[0], kiln_scalar(cx, 1, KILN_I64));
    r[1] = kiln_multiply(cx, a[1], a[1]);
    return kiln_ctx_status(cx);
}
static kiln_status with_while(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_region cond = {cond_lt, NULL}, body = {body_inc, NULL};
    kiln_tensor *init[2] = {kiln_scalar(cx, 0, KILN_I64), in[0]};
    return kiln_while(cx, init, 2, &cond, &body, out);
}

Test(trace, regions_become_blocks) {
    kiln_ctx *cx = test_ctx();
    kiln_region fn = {with_while, NULL};
    kiln_arg_spec a = {.dtype = KILN_F64, .shape = KILN_SHAPE(2)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &a, 1, 2, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln__ir_op *w = m->funcs[0]->body->last;
    cr_assert_eq(w->kind, KILN_OP_WHILE);
    cr_assert_eq(w->n_regions, 2);
    cr_assert_eq(w->regions[0]->n_args, 2);
    cr_assert_eq(w->regions[1]->n_results, 2);
    cr_assert_eq(w->results[1]->type->dtype, KILN_F64);
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(trace, lower_rejects_bad_arguments) {
    kiln_ctx *cx = test_ctx();
    kiln_region fn = {emlx_step, NULL};
    kiln_module *m = (kiln_module *)&m;
    kiln_arg_spec bad = {.dtype = KILN_F32, .shape = KILN_SHAPE(-1)};
    cr_assert_eq(kiln_lower(cx, &fn, &bad, 1, 1, NULL, &m), KILN_INVALID_ARGUMENT);
    cr_assert_null(m);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_lower: args[0]: shape [-1]");
    cr_assert_eq(kiln_lower(cx, NULL, &bad, 1, 1, NULL, &m), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "fn is NULL");
    kiln_arg_spec one = {.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10)};
    cr_assert_eq(kiln_lower(cx, &fn, &one, 1, 2, NULL, &m), KILN_INVALID_ARGUMENT);
    cr_assert_null(m);
    kiln_ctx_clear_error(cx);
    kiln_ctx_release(cx);
}

static kiln_status double_it(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u; /* a[0] is the counter, a[1] the state */
    r[0] = kiln_add(cx, a[1], a[1]);
    return kiln_ctx_status(cx);
}

static kiln_status with_fori(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_region body = {double_it, NULL};
    return kiln_fori_loop(cx, 0, 5, in, 1, &body, out);
}

Test(trace, fori_loop_traces_into_a_while) {
    kiln_ctx *cx = test_ctx();
    kiln_region fn = {with_fori, NULL};
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(4)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &a, 1, 1, NULL, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    bool found = false;
    for (kiln__ir_op *op = m->funcs[0]->body->first; op; op = op->next)
        found |= op->kind == KILN_OP_WHILE;
    cr_assert(found);
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    kiln_ctx_release(cx);
}
