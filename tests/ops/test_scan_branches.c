/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_scan (JAX's lax.scan: forward, reverse, unrolled, without xs, of length 0,
 * differentiated both ways, batched), and kiln_cond / kiln_case with operands and the check
 * that their branches agree in type, eagerly and traced. */
#include <math.h>

#include "test_util.h"

static kiln_tensor *f32s(kiln_ctx *cx, kiln_shape shape, const float *v) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    return kiln_tensor_from_host(cx, KILN_F32, shape, v, (size_t)n * sizeof(float));
}

static void expect_f32(const kiln_tensor *t, const float *want, int64_t n, float tol) {
    cr_assert_not_null(t);
    cr_assert_eq(kiln_tensor_dtype(t), KILN_F32);
    cr_assert_eq(kiln_tensor_numel(t), n);
    const float *d = kiln_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabsf(d[i] - want[i]) <= tol * (1 + fabsf(want[i])), "element %lld: %g vs %g",
                  (long long)i, (double)d[i], (double)want[i]);
}

/* ---- scan ---------------------------------------------------------------------------- */

/* carry s (f32[2]), x_t (f32[2]): s' = s * 0.5 + x_t, y_t = (s', sum(x_t)). */
static kiln_status step(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, kiln_multiply(cx, a[0], kiln_scalar_like(cx, a[0], 0.5)), a[1]);
    r[1] = r[0];
    r[2] = kiln_sum(cx, a[1], KILN_DIMS(0), false);
    return kiln_ctx_status(cx);
}

static const float xs5[10] = {1, 2, 3, 4, -1, 0.5f, 2, 2, 0, -3};

/* The reference, one step at a time in plain C. */
static void reference(bool reverse, float *carry, float *ys0, float *ys1) {
    float s[2] = {0, 0};
    for (int k = 0; k < 5; k++) {
        int t = reverse ? 4 - k : k;
        for (int d = 0; d < 2; d++) {
            s[d] = s[d] * 0.5f + xs5[2 * t + d];
            ys0[2 * t + d] = s[d];
        }
        ys1[t] = xs5[2 * t] + xs5[2 * t + 1];
    }
    carry[0] = s[0];
    carry[1] = s[1];
}

static void run_scan(kiln_ctx *cx, const kiln_scan_options *o, kiln_tensor **carry,
                     kiln_tensor **ys) {
    kiln_tensor *init = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2));
    kiln_tensor *x = f32s(cx, KILN_SHAPE(5, 2), xs5);
    cr_assert_eq(kiln_scan(cx, &(kiln_region){step, NULL}, &init, 1, &x, 1, 2, o, carry, ys),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
}

Test(scan, forward_reverse_and_unrolled_agree_with_the_loop) {
    kiln_ctx *cx = test_ctx();
    for (int rev = 0; rev < 2; rev++) {
        float carry[2], ys0[10], ys1[5];
        reference(rev, carry, ys0, ys1);
        for (int32_t unroll = 1; unroll <= 6; unroll++) {
            kiln_scan_options o = kiln_scan_options_default();
            o.reverse = rev;
            o.unroll = unroll;
            kiln_tensor *c, *ys[2];
            run_scan(cx, &o, &c, ys);
            expect_f32(c, carry, 2, 0);
            expect_f32(ys[0], ys0, 10, 0);
            expect_f32(ys[1], ys1, 5, 0);
            cr_assert(kiln_shape_equal(kiln_tensor_shape(ys[0]), &KILN_SHAPE(5, 2)));
        }
    }
    kiln_ctx_release(cx);
}

static kiln_status scanned(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    kiln_scan_options o = kiln_scan_options_default();
    o.unroll = *(const int32_t *)u;
    return kiln_scan(cx, &(kiln_region){step, NULL}, &in[0], 1, &in[1], 1, 2, &o, &out[0], &out[1]);
}

Test(scan, traced_is_one_loop_with_the_same_results) {
    kiln_ctx *cx = test_ctx();
    float carry[2], ys0[10], ys1[5];
    reference(false, carry, ys0, ys1);
    for (int32_t unroll = 1; unroll <= 2; unroll++) {
        kiln_jit *jit;
        cr_assert_eq(kiln_jit_create(cx, &(kiln_region){scanned, &unroll}, 2, 3, NULL, &jit),
                     KILN_OK);
        kiln_tensor *args[2] = {kiln_zeros(cx, KILN_F32, KILN_SHAPE(2)),
                                f32s(cx, KILN_SHAPE(5, 2), xs5)};
        kiln_tensor *out[3];
        cr_assert_eq(kiln_jit_call_list(cx, jit, args, out), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        expect_f32(out[0], carry, 2, 0);
        expect_f32(out[1], ys0, 10, 0);
        expect_f32(out[2], ys1, 5, 0);
        kiln_jit_release(jit);
    }
    kiln_ctx_release(cx);
}

static kiln_status count_up(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u; /* no xs: carry i, y = i * i */
    r[0] = kiln_add(cx, a[0], kiln_scalar_like(cx, a[0], 1));
    r[1] = kiln_multiply(cx, a[0], a[0]);
    return kiln_ctx_status(cx);
}

Test(scan, without_xs_and_of_length_zero) {
    kiln_ctx *cx = test_ctx();
    kiln_scan_options o = kiln_scan_options_default();
    o.length = 4;
    kiln_tensor *i0 = kiln_scalar(cx, 0, KILN_I32), *c, *ys;
    cr_assert_eq(kiln_scan(cx, &(kiln_region){count_up, NULL}, &i0, 1, NULL, 0, 1, &o, &c, &ys),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(*(const int32_t *)kiln_tensor_data(c), 4);
    const int32_t *y = kiln_tensor_data(ys);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(y[k], k * k);
    /* Length 0: the carry as it came (a copy), empty ys of the body's types. */
    o.length = 0;
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(0, 2)),
                *init = kiln_ones(cx, KILN_F32, KILN_SHAPE(2));
    kiln_tensor *ys2[2];
    cr_assert_eq(kiln_scan(cx, &(kiln_region){step, NULL}, &init, 1, &x, 1, 2, &o, &c, ys2),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_neq(c, init);
    expect_f32(c, (float[]){1, 1}, 2, 0);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(ys2[0]), &KILN_SHAPE(0, 2)));
    cr_assert(kiln_shape_equal(kiln_tensor_shape(ys2[1]), &KILN_SHAPE(0)));
    kiln_ctx_release(cx);
}

/* An eager body may read values: here it counts its calls and reads the carry. */
static kiln_status reads_values(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    int *calls = u;
    ++*calls;
    int32_t v = *(const int32_t *)kiln_tensor_data(a[0]); /* NULL if traced: not here */
    r[0] = kiln_scalar(cx, v + 2, KILN_I32);
    r[1] = kiln_scalar(cx, v * 10, KILN_I32);
    return kiln_ctx_status(cx);
}

Test(scan, eagerly_each_step_runs_once_and_may_read_values) {
    kiln_ctx *cx = test_ctx();
    int calls = 0;
    kiln_scan_options o = kiln_scan_options_default();
    o.length = 5;
    o.unroll = 2;
    kiln_tensor *i0 = kiln_scalar(cx, 1, KILN_I32), *c, *ys;
    cr_assert_eq(
        kiln_scan(cx, &(kiln_region){reads_values, &calls}, &i0, 1, NULL, 0, 1, &o, &c, &ys),
        KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(calls, 5);
    cr_assert_eq(*(const int32_t *)kiln_tensor_data(c), 11);
    const int32_t *y = kiln_tensor_data(ys);
    for (int k = 0; k < 5; k++)
        cr_assert_eq(y[k], (1 + 2 * k) * 10);
    kiln_ctx_release(cx);
}

/* The loss of a scan: the sum of its ys[0]. */
static kiln_status scan_loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    kiln_tensor *r[3];
    kiln_status s = scanned(cx, in, r, u);
    if (s != KILN_OK) return s;
    out[0] = kiln_sum(cx, kiln_tanh(cx, r[1]), KILN_DIMS(0, 1), false);
    return kiln_ctx_status(cx);
}

Test(scan, differentiates_in_both_modes) {
    kiln_ctx *cx = test_ctx();
    int32_t unroll = 2;
    kiln_region f = {scan_loss, &unroll};
    kiln_tensor *init = f32s(cx, KILN_SHAPE(2), (float[]){0.3f, -0.2f});
    kiln_tensor *x = f32s(cx, KILN_SHAPE(5, 2), xs5);
    kiln_tensor *g[2];
    kiln_grad_options go = kiln_grad_options_default();
    go.argnums = (int32_t[]){0, 1};
    go.n_argnums = 2;
    cr_assert_eq(kiln_grad(cx, &f, 2, (kiln_tensor *[]){init, x}, &go, g), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    /* Against central differences, in double the float steps. */
    kiln_tensor *args[2] = {init, x};
    for (int a = 0; a < 2; a++) {
        int64_t n = kiln_tensor_numel(args[a]);
        const float *base = kiln_tensor_data(args[a]);
        const float *ga = kiln_tensor_data(g[a]);
        for (int64_t i = 0; i < n; i++) {
            float plus[10], minus[10];
            memcpy(plus, base, (size_t)n * sizeof(float));
            memcpy(minus, base, (size_t)n * sizeof(float));
            plus[i] += 1e-2f;
            minus[i] -= 1e-2f;
            kiln_tensor *ap[2] = {args[0], args[1]}, *am[2] = {args[0], args[1]}, *vp, *vm;
            ap[a] = f32s(cx, *kiln_tensor_shape(args[a]), plus);
            am[a] = f32s(cx, *kiln_tensor_shape(args[a]), minus);
            cr_assert_eq(kiln_call(cx, &f, ap, 2, 1, &vp), KILN_OK);
            cr_assert_eq(kiln_call(cx, &f, am, 2, 1, &vm), KILN_OK);
            float fd =
                (*(const float *)kiln_tensor_data(vp) - *(const float *)kiln_tensor_data(vm)) /
                2e-2f;
            cr_assert(fabsf(fd - ga[i]) < 2e-3f, "d/d arg %d [%lld]: %g vs %g", a, (long long)i,
                      (double)ga[i], (double)fd);
        }
    }
    /* Forward mode: the tangent along (1, 1) for init is the sum of the gradient. */
    kiln_tensor *value, *tangent;
    cr_assert_eq(kiln_jvp(cx, &f, 2, (kiln_tensor *[]){init, x},
                          (kiln_tensor *[]){kiln_ones(cx, KILN_F32, KILN_SHAPE(2)), NULL}, 1,
                          &value, &tangent),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    const float *g0 = kiln_tensor_data(g[0]);
    cr_assert_float_eq(*(const float *)kiln_tensor_data(tangent), g0[0] + g0[1], 1e-5);
    kiln_ctx_release(cx);
}

static kiln_status carry_becomes_f64(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r,
                                     void *u) {
    (void)u;
    r[0] = kiln_convert(cx, a[0], KILN_F64);
    return kiln_ctx_status(cx);
}

Test(scan, errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *init = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2)), *c = init, *ys[2] = {init, init};
    kiln_tensor *x5 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(5, 2)),
                *x4 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(4, 2));
    kiln_region body = {step, NULL};
    cr_assert_eq(kiln_scan(cx, &body, &init, 1, (kiln_tensor *[]){x5, x4}, 2, 2, NULL, &c, ys),
                 KILN_INVALID_ARGUMENT);
    cr_assert_null(c);
    cr_assert_null(ys[0]);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_scan: xs[1] has 4 rows; xs[0] has 5");
    kiln_scan_options o = kiln_scan_options_default();
    o.length = 3;
    kiln_scan(cx, &body, &init, 1, &x5, 1, 2, &o, &c, ys);
    expect_error(cx, KILN_INVALID_ARGUMENT, "xs[0] has 5 rows; options->length is 3");
    o = kiln_scan_options_default();
    o.unroll = 0;
    kiln_scan(cx, &body, &init, 1, &x5, 1, 2, &o, &c, ys);
    expect_error(cx, KILN_INVALID_ARGUMENT, "options->unroll is 0");
    kiln_scan(cx, &body, &init, 1, (kiln_tensor *[]){kiln_scalar(cx, 1, KILN_F32)}, 1, 2, NULL, &c,
              ys);
    expect_error(cx, KILN_INVALID_ARGUMENT, "xs[0] is rank 0");
    kiln_scan(cx, &(kiln_region){carry_becomes_f64, NULL}, &init, 1, NULL, 0, 0, NULL, &c, NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_scan: body result 0 (carry 0) has type f64[2]; expected f32[2] (the type "
                 "of init[0])");
    kiln_scan(cx, NULL, &init, 1, &x5, 1, 2, NULL, &c, ys);
    expect_error(cx, KILN_INVALID_ARGUMENT, "body");
    kiln_scan(cx, &body, (kiln_tensor *[]){NULL}, 1, &x5, 1, 2, NULL, &c, ys);
    expect_error(cx, KILN_INVALID_ARGUMENT, "init[0]");
    kiln_scan(cx, &body, &init, 1, &x5, 1, -1, NULL, &c, ys);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_ys is -1");
    kiln_scan(cx, &body, &init, 1, &x5, 1, 65, NULL, &c, (kiln_tensor *[65]){0});
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_ys 65: at most 64 each");
    o = kiln_scan_options_default();
    o.struct_size = 4;
    kiln_scan(cx, &body, &init, 1, &x5, 1, 2, &o, &c, ys);
    expect_error(cx, KILN_INVALID_ARGUMENT, "options->struct_size is 4");
    kiln_ctx_release(cx);
}

/* ---- cond and case with operands -------------------------------------------------------- */

static kiln_status br_scale(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u; /* a[0] f32[2], a[1] f32[] */
    r[0] = kiln_multiply(cx, a[0], a[1]);
    return kiln_ctx_status(cx);
}

static kiln_status br_shift(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, a[0], a[1]);
    return kiln_ctx_status(cx);
}

static kiln_status br_first(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_slice(cx, a[0], KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS_NONE); /* f32[1] */
    return kiln_ctx_status(cx);
}

static kiln_status cond_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *p =
        kiln_compare(cx, in[1], kiln_scalar_like(cx, in[1], 0), KILN_CMP_GT, KILN_CMP_DEFAULT);
    return kiln_cond(cx, p, &(kiln_region){br_scale, NULL}, &(kiln_region){br_shift, NULL}, in, 2,
                     1, out);
}

static kiln_status case_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region br[2] = {{br_scale, NULL}, {br_shift, NULL}};
    kiln_tensor *idx = kiln_convert(cx, in[1], KILN_I32);
    return kiln_case(cx, idx, br, 2, in, 2, 1, out);
}

Test(branches, cond_and_case_take_operands_eagerly_and_traced) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = f32s(cx, KILN_SHAPE(2), (float[]){1, 2});
    for (int traced = 0; traced < 2; traced++) {
        for (int which = 0; which < 2; which++) {
            kiln_region f = {which ? case_fn : cond_fn, NULL};
            kiln_jit *jit = NULL;
            if (traced) cr_assert_eq(kiln_jit_create(cx, &f, 2, 1, NULL, &jit), KILN_OK);
            const float ks[2] = {3, -1};
            for (int k = 0; k < 2; k++) {
                kiln_tensor *args[2] = {x, kiln_scalar(cx, ks[k], KILN_F32)}, *r;
                kiln_status s = traced ? kiln_jit_call_list(cx, jit, args, &r)
                                       : kiln_call(cx, &f, args, 2, 1, &r);
                cr_assert_eq(s, KILN_OK, "%s", kiln_ctx_error_message(cx));
                /* cond: k > 0 scales; case: index 3 is out of range (the last branch) and
                 * -1 too. */
                bool scales = which == 0 && ks[k] > 0;
                float want[2] = {scales ? 1 * ks[k] : 1 + ks[k], scales ? 2 * ks[k] : 2 + ks[k]};
                expect_f32(r, want, 2, 0);
            }
            kiln_jit_release(jit);
        }
    }
    kiln_ctx_release(cx);
}

static kiln_status mismatched(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    return kiln_cond(cx, kiln_scalar(cx, 1, KILN_BOOL), &(kiln_region){br_scale, NULL},
                     &(kiln_region){br_first, NULL}, in, 2, 1, out);
}

static kiln_status mismatched_case(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                   void *u) {
    return kiln_case(cx, kiln_scalar(cx, 0, KILN_I32), u, 3, in, 2, 1, out);
}

Test(branches, results_must_agree_in_type_when_traced) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *args[2] = {f32s(cx, KILN_SHAPE(2), (float[]){1, 2}), kiln_scalar(cx, 2, KILN_F32)};
    kiln_tensor *r = args[0];
    /* Eagerly only the branch taken runs, and its results are what they are. */
    cr_assert_eq(mismatched(cx, args, &r, NULL), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert(kiln_shape_equal(kiln_tensor_shape(r), &KILN_SHAPE(2)));
    /* Traced, both branches are regions of the op, and they must agree. */
    kiln_jit *jit;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){mismatched, NULL}, 2, 1, NULL, &jit), KILN_OK);
    cr_assert_eq(kiln_jit_call_list(cx, jit, args, &r), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_cond: the false branch returns f32[1] for result 1");
    kiln_jit_release(jit);
    kiln_region br[3] = {{br_scale, NULL}, {br_shift, NULL}, {br_first, NULL}};
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){mismatched_case, br}, 2, 1, NULL, &jit),
                 KILN_OK);
    kiln_jit_call_list(cx, jit, args, &r);
    expect_error(
        cx, KILN_INVALID_ARGUMENT,
        "kiln_case: the branch 2 returns f32[1] for result 1; the branch 0 returns f32[2]");
    kiln_jit_release(jit);
    /* Operands are checked. */
    kiln_cond(cx, kiln_scalar(cx, 1, KILN_BOOL), &br[0], &br[1], (kiln_tensor *[]){args[0], NULL},
              2, 1, &r);
    expect_error(cx, KILN_INVALID_ARGUMENT, "operands[1]");
    kiln_cond(cx, kiln_scalar(cx, 1, KILN_BOOL), &br[0], &br[1], NULL, 2, 1, &r);
    expect_error(cx, KILN_INVALID_ARGUMENT, "operands");
    kiln_cond(cx, kiln_scalar(cx, 1, KILN_BOOL), &br[0], &br[1], args, -1, 1, &r);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_operands is -1");
    kiln_case(cx, kiln_scalar(cx, 0, KILN_I32), br, 4097, args, 2, 1, &r);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_branches is 4097; at most 4096");
    kiln_ctx_release(cx);
}

static kiln_status running_tanh(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] =
        kiln_tanh(cx, kiln_add(cx, kiln_multiply(cx, a[0], kiln_scalar_like(cx, a[0], 0.9)), a[1]));
    r[1] = r[0];
    return kiln_ctx_status(cx);
}

/* A long scan's gradient keeps one copy of its ys' stack, not one per step: the reverse
 * pass never needs a stack's value (it is only written into). */
static kiln_status long_scan_loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *u) {
    (void)u; /* in[0] the carry f32[64], in[1] the rows f32[256, 64] */
    kiln_tensor *c, *ys;
    kiln_status s =
        kiln_scan(cx, &(kiln_region){running_tanh, NULL}, &in[0], 1, &in[1], 1, 1, NULL, &c, &ys);
    if (s != KILN_OK) return s;
    out[0] = kiln_sum(cx, ys, KILN_DIMS(0, 1), false);
    return kiln_ctx_status(cx);
}

static kiln_status long_scan_grad(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *u) {
    (void)u;
    return kiln_grad(cx, &(kiln_region){long_scan_loss, NULL}, 2, in, NULL, out);
}

Test(scan, a_long_scans_gradient_does_not_stack_its_stacks) {
    kiln_ctx *cx = test_ctx();
    kiln_jit *jit;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){long_scan_grad, NULL}, 2, 1, NULL, &jit),
                 KILN_OK);
    kiln_tensor *args[2] = {kiln_zeros(cx, KILN_F32, KILN_SHAPE(64)),
                            kiln_ones(cx, KILN_F32, KILN_SHAPE(256, 64))};
    kiln_tensor *g;
    cr_assert_eq(kiln_jit_call_list(cx, jit, args, &g), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_exe *exe = kiln_jit_last_exe(jit);
    kiln_exe_info info;
    cr_assert_eq(kiln_exe_info_get(cx, exe, &info), KILN_OK);
    /* The carries per step: 256 x 64 floats (64 KiB); the ys' stack once: 64 KiB. Stacked
     * per step it would be 256 x 64 KiB = 16 MiB. */
    cr_assert_lt(info.arena_bytes, (size_t)1 << 20, "arena %zu bytes", info.arena_bytes);
    kiln_exe_release(exe);
    kiln_jit_release(jit);
    kiln_ctx_release(cx);
}
