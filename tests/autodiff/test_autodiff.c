/* SPDX-License-Identifier: Apache-2.0 */
/* The public autodiff API: closed-form gradients, eager against traced, higher order,
 * has_aux, tree mode, stop_gradient, custom_vjp, the errors, the simplified gradient
 * module, and an MLP and a small CNN against finite differences. */
#include <math.h>
#include <stdio.h>

#include "failing_allocator.h"
#include "test_util.h"

static kiln_tensor *f64(kiln_ctx *cx, kiln_shape shape, const double *data) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    return kiln_tensor_from_host(cx, KILN_F64, shape, data, (size_t)n * sizeof(double));
}

static void expect_close(const kiln_tensor *t, const double *want, int64_t n, double tol) {
    cr_assert_not_null(t);
    cr_assert_eq(kiln_tensor_numel(t), n);
    const double *d = kiln_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(d[i] - want[i]) <= tol * (1 + fabs(want[i])), "element %lld: %.17g vs %.17g",
                  (long long)i, d[i], want[i]);
}

static double scalar_of(const kiln_tensor *t) { return ((const double *)kiln_tensor_data(t))[0]; }

/* ---- the seed case --------------------------------------------------------------------- */

static kiln_status sum_cos(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_sum(cx, kiln_cosine(cx, in[0]), (kiln_dims){0}, false);
    return kiln_ctx_status(cx);
}

static const double xs6[6] = {0.3, -1.2, 2.5, 0.0, -0.7, 1.9};

Test(autodiff, grad_of_sum_cos_is_minus_sin) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = f64(cx, KILN_SHAPE(3, 2), xs6), *g = NULL;
    kiln_region f = {sum_cos, NULL};
    cr_assert_eq(kiln_grad(cx, &f, 1, &x, NULL, &g), KILN_OK, "%s", kiln_ctx_error_message(cx));
    double want[6];
    for (int i = 0; i < 6; i++)
        want[i] = -sin(xs6[i]);
    expect_close(g, want, 6, 1e-15);
    cr_assert_eq(kiln_tensor_dtype(g), KILN_F64);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(g), kiln_tensor_shape(x)));
    /* f32: the gradient keeps the argument's dtype. */
    float xf[6];
    for (int i = 0; i < 6; i++)
        xf[i] = (float)xs6[i];
    kiln_tensor *x32 = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(3, 2), xf, sizeof xf);
    cr_assert_eq(kiln_grad(cx, &f, 1, &x32, NULL, &g), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_dtype(g), KILN_F32);
    const float *g32 = kiln_tensor_data(g);
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(g32[i], -sinf(xf[i]), 1e-6);
    kiln_ctx_release(cx);
}

/* ---- eager against traced -------------------------------------------------------------------- */

static kiln_status poly(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    /* sum(x^2 * y + sin(x * y)) */
    kiln_tensor *xy = kiln_multiply(cx, in[0], in[1]);
    kiln_tensor *t =
        kiln_add(cx, kiln_multiply(cx, kiln_multiply(cx, in[0], in[0]), in[1]), kiln_sine(cx, xy));
    out[0] = kiln_sum(cx, t, (kiln_dims){0}, false);
    return kiln_ctx_status(cx);
}

static kiln_status grad_both(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region f = {poly, NULL};
    kiln_grad_options o = kiln_grad_options_default();
    o.argnums = (const int32_t[]){1, 0};
    o.n_argnums = 2;
    return kiln_grad(cx, &f, 2, in, &o, out);
}

Test(autodiff, jit_of_grad_equals_eager_grad_and_the_closed_form) {
    kiln_ctx *cx = test_ctx();
    static const double ys[6] = {1.1, 0.4, -0.3, 2.0, 0.9, -1.5};
    kiln_tensor *args[2] = {f64(cx, KILN_SHAPE(6), xs6), f64(cx, KILN_SHAPE(6), ys)};
    kiln_tensor *eager[2] = {0}, *jitted[2] = {0};
    cr_assert_eq(grad_both(cx, args, eager, NULL), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_jit *j = NULL;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){grad_both, NULL}, 2, 2, NULL, &j), KILN_OK);
    cr_assert_eq(kiln_jit_call_list(cx, j, args, jitted), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    double gx[6], gy[6];
    for (int i = 0; i < 6; i++) {
        double x = xs6[i], y = ys[i];
        gx[i] = 2 * x * y + y * cos(x * y);
        gy[i] = x * x + x * cos(x * y);
    }
    /* argnums {1, 0}: gradients in that order. */
    expect_close(eager[0], gy, 6, 1e-14);
    expect_close(eager[1], gx, 6, 1e-14);
    expect_close(jitted[0], gy, 6, 1e-14);
    expect_close(jitted[1], gx, 6, 1e-14);
    kiln_jit_release(j);
    kiln_ctx_release(cx);
}

/* ---- higher order ---------------------------------------------------------------------------- */

static kiln_status cube(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_multiply(cx, kiln_multiply(cx, in[0], in[0]), in[0]);
    return kiln_ctx_status(cx);
}
static kiln_status sine(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_sine(cx, in[0]);
    return kiln_ctx_status(cx);
}
/* The derivative of the scalar function `user` (a kiln_region), itself a scalar function. */
static kiln_status derivative(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    return kiln_grad(cx, u, 1, in, NULL, out);
}

Test(autodiff, second_and_third_derivatives_match_closed_forms) {
    kiln_ctx *cx = test_ctx();
    kiln_region f_cube = {cube, NULL}, f_sin = {sine, NULL};
    kiln_region d_cube = {derivative, &f_cube}, d_sin = {derivative, &f_sin};
    kiln_region dd_sin = {derivative, &d_sin};
    for (int k = 0; k < 4; k++) {
        double x0 = -1.3 + 0.9 * k;
        kiln_tensor *x = kiln_scalar(cx, x0, KILN_F64), *g = NULL;
        cr_assert_eq(kiln_grad(cx, &d_cube, 1, &x, NULL, &g), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        cr_assert_float_eq(scalar_of(g), 6 * x0, 1e-12);
        cr_assert_eq(kiln_grad(cx, &d_sin, 1, &x, NULL, &g), KILN_OK);
        cr_assert_float_eq(scalar_of(g), -sin(x0), 1e-14);
        cr_assert_eq(kiln_grad(cx, &dd_sin, 1, &x, NULL, &g), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        cr_assert_float_eq(scalar_of(g), -cos(x0), 1e-14);
    }
    kiln_ctx_release(cx);
}

/* f(x) = sum(x^3) + (sum x)^2: H = diag(6x) + 2 * ones. */
static kiln_status hess_f(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = in[0];
    kiln_tensor *s = kiln_sum(cx, x, (kiln_dims){0}, false);
    out[0] = kiln_add(
        cx, kiln_sum(cx, kiln_multiply(cx, kiln_multiply(cx, x, x), x), (kiln_dims){0}, false),
        kiln_multiply(cx, s, s));
    return kiln_ctx_status(cx);
}
static kiln_status grad_f(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    return kiln_grad(cx, &(kiln_region){hess_f, NULL}, 1, in, NULL, out);
}

Test(autodiff, jvp_of_grad_is_a_hessian_vector_product) {
    kiln_ctx *cx = test_ctx();
    static const double v[6] = {0.5, -1.0, 0.25, 2.0, -0.75, 1.5};
    kiln_tensor *x = f64(cx, KILN_SHAPE(6), xs6), *t = f64(cx, KILN_SHAPE(6), v);
    kiln_tensor *g = NULL, *hv = NULL;
    cr_assert_eq(kiln_jvp(cx, &(kiln_region){grad_f, NULL}, 1, &x, &t, 1, &g, &hv), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    double sx = 0, sv = 0, want_g[6], want_hv[6];
    for (int i = 0; i < 6; i++) {
        sx += xs6[i];
        sv += v[i];
    }
    for (int i = 0; i < 6; i++) {
        want_g[i] = 3 * xs6[i] * xs6[i] + 2 * sx;
        want_hv[i] = 6 * xs6[i] * v[i] + 2 * sv;
    }
    expect_close(g, want_g, 6, 1e-13);
    expect_close(hv, want_hv, 6, 1e-13);
    kiln_ctx_release(cx);
}

/* ---- has_aux, tree mode -----------------------------------------------------------------------
 */

static kiln_status with_aux(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *sq = kiln_multiply(cx, in[0], in[0]);
    out[0] = kiln_sum(cx, kiln_multiply(cx, sq, in[1]), (kiln_dims){0}, false);
    out[1] = sq; /* auxiliary: returned, not differentiated */
    out[2] = kiln_argmax(cx, in[0], 0, false);
    return kiln_ctx_status(cx);
}

Test(autodiff, value_and_grad_with_aux) {
    kiln_ctx *cx = test_ctx();
    static const double w[6] = {1, 2, 3, 4, 5, 6};
    kiln_tensor *args[2] = {f64(cx, KILN_SHAPE(6), xs6), f64(cx, KILN_SHAPE(6), w)};
    kiln_tensor *res[3] = {0}, *g = NULL;
    kiln_grad_options o = kiln_grad_options_default();
    o.has_aux = true;
    cr_assert_eq(kiln_value_and_grad(cx, &(kiln_region){with_aux, NULL}, 2, args, 3, &o, res, &g),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    double value = 0, sq[6], gx[6];
    for (int i = 0; i < 6; i++) {
        sq[i] = xs6[i] * xs6[i];
        value += sq[i] * w[i];
        gx[i] = 2 * xs6[i] * w[i];
    }
    cr_assert_float_eq(scalar_of(res[0]), value, 1e-13);
    expect_close(res[1], sq, 6, 0);
    cr_assert_eq(((const int64_t *)kiln_tensor_data(res[2]))[0], 2); /* argmax of xs6 */
    expect_close(g, gx, 6, 1e-14);
    kiln_ctx_release(cx);
}

typedef struct dense {
    kiln_tensor *w, *b;
} dense;
typedef struct model {
    dense layer;
    kiln_tensor *x;
    int32_t steps; /* a static member: copied to the gradient */
} model;
typedef struct loss_out {
    kiln_tensor *loss, *pred;
} loss_out;
KILN_TREE_DEF(dense, KILN_FIELD(dense, w), KILN_FIELD(dense, b));
KILN_TREE_DEF(model, KILN_SUBTREE(model, layer, dense), KILN_FIELD(model, x),
              KILN_STATIC(model, steps));
KILN_TREE_DEF(loss_out, KILN_FIELD(loss_out, loss), KILN_FIELD(loss_out, pred));

/* loss = sum((x @ w + b)^2) * steps */
static kiln_status model_loss(kiln_ctx *cx, const void *in, void *out, void *u) {
    (void)u;
    const model *m = in;
    loss_out *o = out;
    kiln_tensor *p = kiln_add(cx, kiln_matmul(cx, m->x, m->layer.w), m->layer.b);
    o->pred = p;
    o->loss = kiln_multiply(cx, kiln_sum(cx, kiln_multiply(cx, p, p), (kiln_dims){0}, false),
                            kiln_scalar(cx, m->steps, KILN_F64));
    return kiln_ctx_status(cx);
}

Test(autodiff, tree_mode_gradient_has_the_structure_of_the_params) {
    kiln_ctx *cx = test_ctx();
    static const double w[6] = {0.5, -1, 2, 0.25, 1.5, -0.5}; /* [3, 2] */
    static const double b[2] = {0.1, -0.2};
    static const double x[6] = {1, 2, -1, 0.5, 0, 3}; /* [2, 3] */
    model m = {
        {f64(cx, KILN_SHAPE(3, 2), w), f64(cx, KILN_SHAPE(2), b)}, f64(cx, KILN_SHAPE(2, 3), x), 3};
    loss_out out = {0};
    model grads = {0};
    kiln_grad_options o = kiln_grad_options_default();
    o.wrt_paths = (const char *const[]){"layer"};
    o.n_wrt_paths = 1;
    cr_assert_eq(kiln_value_and_grad_tree(cx, model_loss, NULL, &kiln_tree_def_model, &m,
                                          &kiln_tree_def_loss_out, &out, &o, &grads),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    /* By hand: p = x w + b; dL/dp = 2 p steps; dL/dw = x^T dL/dp; dL/db = colsum. */
    double p[4], dp[4], gw[6] = {0}, gb[2] = {0}, loss = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            double s = b[j];
            for (int k = 0; k < 3; k++)
                s += x[i * 3 + k] * w[k * 2 + j];
            p[i * 2 + j] = s;
            loss += 3 * s * s;
            dp[i * 2 + j] = 6 * s;
        }
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 2; j++)
            for (int i = 0; i < 2; i++)
                gw[k * 2 + j] += x[i * 3 + k] * dp[i * 2 + j];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            gb[j] += dp[i * 2 + j];
    cr_assert_float_eq(scalar_of(out.loss), loss, 1e-12);
    expect_close(out.pred, p, 4, 1e-14);
    expect_close(grads.layer.w, gw, 6, 1e-13);
    expect_close(grads.layer.b, gb, 2, 1e-13);
    cr_assert_null(grads.x); /* not selected */
    cr_assert_eq(grads.steps, 3);

    /* A path that matches nothing. */
    o.wrt_paths = (const char *const[]){"layers"};
    cr_assert_eq(kiln_value_and_grad_tree(cx, model_loss, NULL, &kiln_tree_def_model, &m,
                                          &kiln_tree_def_loss_out, &out, &o, &grads),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "wrt_paths[0] 'layers' matches no leaf");
    kiln_ctx_release(cx);
}

/* ---- stop_gradient and custom_vjp ---------------------------------------------------------- */

static kiln_status stopped(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    /* x * sg(x): the gradient is sg(x) = x, not 2x. */
    out[0] = kiln_sum(cx, kiln_multiply(cx, in[0], kiln_stop_gradient(cx, in[0])), (kiln_dims){0},
                      false);
    return kiln_ctx_status(cx);
}

Test(autodiff, stop_gradient_blocks_the_flow) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = f64(cx, KILN_SHAPE(6), xs6), *g = NULL;
    cr_assert_eq(kiln_grad(cx, &(kiln_region){stopped, NULL}, 1, &x, NULL, &g), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    expect_close(g, xs6, 6, 0);
    /* Eagerly it is the identity. */
    kiln_tensor *y = kiln_stop_gradient(cx, x);
    expect_close(y, xs6, 6, 0);
    cr_assert_null(kiln_stop_gradient(cx, NULL));
    kiln_ctx_release(cx);
}

static kiln_status barrier_and_stopped(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                       void *u) {
    (void)u;
    /* barrier(x) * sg(x): both barriers of the same type (equal attributes, one copy in the
     * module until stop_gradient marks its own); the gradient is sg(x) = x. */
    kiln_tensor *b = NULL;
    if (kiln_optimization_barrier(cx, (kiln_tensor *[]){in[0]}, 1, &b) != KILN_OK)
        return kiln_ctx_status(cx);
    out[0] =
        kiln_sum(cx, kiln_multiply(cx, b, kiln_stop_gradient(cx, in[0])), (kiln_dims){0}, false);
    return kiln_ctx_status(cx);
}

Test(autodiff, stop_gradient_leaves_a_plain_barrier_of_the_same_type_alone) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = f64(cx, KILN_SHAPE(6), xs6), *g = NULL;
    cr_assert_eq(kiln_grad(cx, &(kiln_region){barrier_and_stopped, NULL}, 1, &x, NULL, &g), KILN_OK,
                 "%s", kiln_ctx_error_message(cx));
    expect_close(g, xs6, 6, 0);
    kiln_ctx_release(cx);
}

/* log(1 + e^x), stable for large x, with derivative logistic(x). */
static kiln_status log1pexp_fwd(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = in[0];
    kiln_tensor *zero = kiln_scalar_like(cx, x, 0);
    kiln_tensor *pos = kiln_maximum(cx, x, kiln_broadcast_to(cx, zero, *kiln_tensor_shape(x)));
    kiln_tensor *negabs = kiln_negate(cx, kiln_abs(cx, x));
    out[0] = kiln_add(cx, pos, kiln_log_plus_one(cx, kiln_exponential(cx, negabs)));
    out[1] = x; /* the residual */
    return kiln_ctx_status(cx);
}
static kiln_status log1pexp_bwd(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    double scale = *(const double *)u;
    /* in[0]: the residual x, in[1]: the cotangent */
    out[0] = kiln_multiply(cx, kiln_multiply(cx, in[1], kiln_logistic(cx, in[0])),
                           kiln_scalar_like(cx, in[0], scale));
    return kiln_ctx_status(cx);
}
static kiln_status log1pexp(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    kiln_custom_vjp def = {.fwd = {log1pexp_fwd, NULL},
                           .bwd = {log1pexp_bwd, u},
                           .n_in = 1,
                           .n_out = 1,
                           .n_residuals = 1,
                           .name = "log1pexp"};
    kiln_tensor *y = NULL;
    if (kiln_custom_vjp_call(cx, &def, in, &y) != KILN_OK) return kiln_ctx_status(cx);
    out[0] = kiln_sum(cx, y, (kiln_dims){0}, false);
    return kiln_ctx_status(cx);
}

Test(autodiff, custom_vjp_uses_the_given_backward_function) {
    kiln_ctx *cx = test_ctx();
    static const double x[4] = {-800, -1, 2, 800};
    static const double one = 1, two = 2;
    kiln_tensor *t = f64(cx, KILN_SHAPE(4), x), *g = NULL, *y = NULL;
    kiln_region f = {log1pexp, (void *)&one};
    cr_assert_eq(kiln_grad(cx, &f, 1, &t, NULL, &g), KILN_OK, "%s", kiln_ctx_error_message(cx));
    double want[4];
    for (int i = 0; i < 4; i++)
        want[i] = 1 / (1 + exp(-x[i]));
    expect_close(g, want, 4, 1e-15); /* finite where e^x overflows */
    /* The backward function decides: a doubled one doubles the gradient. */
    kiln_region f2 = {log1pexp, (void *)&two};
    cr_assert_eq(kiln_grad(cx, &f2, 1, &t, NULL, &g), KILN_OK);
    for (int i = 0; i < 4; i++)
        want[i] *= 2;
    expect_close(g, want, 4, 1e-15);
    /* Eagerly the forward function runs. */
    cr_assert_eq(log1pexp(cx, &t, &y, (void *)&one), KILN_OK);
    cr_assert_float_eq(scalar_of(y), 0 + log1p(exp(-1.0)) + 2 + log1p(exp(-2.0)) + 800, 1e-12);
    /* Inside a jit, the backward function is traced into the compiled gradient. */
    kiln_jit *j = NULL;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){derivative, &f}, 1, 1, NULL, &j), KILN_OK);
    cr_assert_eq(kiln_jit_call_list(cx, j, &t, &g), KILN_OK, "%s", kiln_ctx_error_message(cx));
    for (int i = 0; i < 4; i++)
        want[i] = 1 / (1 + exp(-x[i]));
    expect_close(g, want, 4, 1e-15);
    kiln_jit_release(j);
    /* Forward mode is not supported. */
    kiln_tensor *tan = f64(cx, KILN_SHAPE(4), x), *ty = NULL;
    cr_assert_eq(kiln_jvp(cx, &f, 1, &t, &tan, 1, NULL, &ty), KILN_UNIMPLEMENTED);
    expect_error(cx, KILN_UNIMPLEMENTED, "kiln_custom_vjp_call");
    /* Bad definitions. */
    kiln_custom_vjp bad = {.fwd = {log1pexp_fwd, NULL}, .n_in = 1, .n_out = 1, .n_residuals = 1};
    cr_assert_eq(kiln_custom_vjp_call(cx, &bad, &t, &y), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "def->bwd.fn");
    bad.bwd = (kiln_region){log1pexp_bwd, (void *)&one};
    bad.n_out = 0;
    cr_assert_eq(kiln_custom_vjp_call(cx, &bad, &t, &y), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_out 0");
    cr_assert_eq(kiln_custom_vjp_call(cx, NULL, &t, &y), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "def");
    kiln_ctx_release(cx);
}

/* ---- errors ------------------------------------------------------------------------------- */

static kiln_status vector_valued(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_sine(cx, in[0]);
    return kiln_ctx_status(cx);
}
static kiln_status mixed(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_sum(cx, kiln_multiply(cx, in[0], kiln_convert(cx, in[1], KILN_F64)),
                      (kiln_dims){0}, false);
    return kiln_ctx_status(cx);
}
static kiln_status add_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, a[0], a[1]);
    return kiln_ctx_status(cx);
}
static kiln_status custom_reduce(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    /* A reduce whose region is a callback (not a builtin) has no rule. */
    kiln_tensor *init = kiln_scalar(cx, 0, KILN_F64);
    kiln_reduce(cx, in, &init, 1, (kiln_dims){.count = 1, .v = {0}},
                &(kiln_region){add_region, NULL}, out);
    return kiln_ctx_status(cx);
}
static kiln_status less_than(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_compare(cx, kiln_sum(cx, s[0], (kiln_dims){0}, false),
                        kiln_scalar(cx, 10, KILN_F64), KILN_CMP_LT, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}
static kiln_status doubling(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_multiply(cx, s[0], kiln_scalar_like(cx, s[0], 2));
    return kiln_ctx_status(cx);
}
static kiln_status open_loop(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *r = NULL;
    kiln_while(cx, in, 1, &(kiln_region){less_than, NULL}, &(kiln_region){doubling, NULL}, &r);
    out[0] = kiln_sum(cx, r, (kiln_dims){0}, false);
    return kiln_ctx_status(cx);
}

Test(autodiff, errors_name_the_function_and_argument) {
    kiln_ctx *cx = test_ctx();
    static const int32_t ints[3] = {1, 2, 3};
    kiln_tensor *x = f64(cx, KILN_SHAPE(3), xs6);
    kiln_tensor *n = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(3), ints, sizeof ints);
    kiln_tensor *g[2] = {0};
    kiln_region f_mixed = {mixed, NULL};
    kiln_grad_options o = kiln_grad_options_default();

    o.argnums = (const int32_t[]){2};
    o.n_argnums = 1;
    cr_assert_eq(kiln_grad(cx, &f_mixed, 2, (kiln_tensor *[]){x, n}, &o, g), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_grad: argnums[0] is 2; expected 0 to 1");
    o.argnums = (const int32_t[]){1};
    cr_assert_eq(kiln_grad(cx, &f_mixed, 2, (kiln_tensor *[]){x, n}, &o, g), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "argument 1 (argnums[0]) has dtype i32");
    o.argnums = (const int32_t[]){0, 0};
    o.n_argnums = 2;
    cr_assert_eq(kiln_grad(cx, &f_mixed, 2, (kiln_tensor *[]){x, n}, &o, g), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "repeats argument 0");
    o = kiln_grad_options_default();
    o.struct_size = 3;
    cr_assert_eq(kiln_grad(cx, &f_mixed, 2, (kiln_tensor *[]){x, n}, &o, g), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "struct_size");

    /* The integer argument has no gradient in list mode. */
    kiln_tensor *cts = kiln_scalar(cx, 1, KILN_F64), *ct_in[2] = {0};
    cr_assert_eq(kiln_vjp(cx, &f_mixed, 2, (kiln_tensor *[]){x, n}, 1, &cts, NULL, ct_in), KILN_OK);
    cr_assert_not_null(ct_in[0]);
    cr_assert_null(ct_in[1]);

    kiln_region f_vec = {vector_valued, NULL};
    cr_assert_eq(kiln_grad(cx, &f_vec, 1, &x, NULL, g), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "the function's value (result 0) is f64[3]");

    kiln_tensor *bad_ct = kiln_scalar(cx, 1, KILN_F64);
    cr_assert_eq(kiln_vjp(cx, &f_vec, 1, &x, 1, &bad_ct, NULL, g), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_vjp: cotangents[0] is f64[]; expected f64[3]");
    kiln_tensor *bad_t = kiln_scalar(cx, 1, KILN_F64), *ty = NULL;
    cr_assert_eq(kiln_jvp(cx, &f_vec, 1, &x, &bad_t, 1, NULL, &ty), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_jvp: tangents[0] is f64[]");

    cr_assert_eq(kiln_grad(cx, NULL, 1, &x, NULL, g), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "f");
    cr_assert_eq(kiln_grad(cx, &f_vec, 1, (kiln_tensor *[]){NULL}, NULL, g), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_grad: args[0] is NULL");
    cr_assert_eq(kiln_grad(cx, &f_vec, 1, &x, NULL, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_grads");
    cr_assert_eq(kiln_vjp(cx, &f_vec, 1, &x, 1, NULL, NULL, g), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "cotangents");
    cr_assert_eq(kiln_vjp(cx, &f_vec, -1, &x, 1, &bad_ct, NULL, g), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_in -1");
    cr_assert_eq(kiln_jvp(cx, &f_vec, 1, &x, NULL, 1, NULL, &ty), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "tangents");
    kiln_grad_options aux = kiln_grad_options_default();
    aux.has_aux = true;
    cr_assert_eq(kiln_grad(cx, &f_vec, 1, &x, &aux, g), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_value_and_grad");
    kiln_tensor *res[1];
    cr_assert_eq(kiln_value_and_grad(cx, &f_vec, 1, &x, 1, &aux, res, g), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "has_aux needs the value and at least one");

    /* No rule: the message names the op. */
    cr_assert_eq(kiln_grad(cx, &(kiln_region){custom_reduce, NULL}, 1, &x, NULL, g),
                 KILN_UNIMPLEMENTED);
    expect_error(cx, KILN_UNIMPLEMENTED, "kiln_grad: stablehlo.reduce");
    /* A while without a fixed trip count: reverse mode refuses, forward mode works. */
    cr_assert_eq(kiln_grad(cx, &(kiln_region){open_loop, NULL}, 1, &x, NULL, g),
                 KILN_UNIMPLEMENTED);
    expect_error(cx, KILN_UNIMPLEMENTED, "fixed trip count");
    kiln_tensor *ones = f64(cx, KILN_SHAPE(3), (const double[]){1, 1, 1}), *val = NULL;
    kiln_tensor *small = f64(cx, KILN_SHAPE(3), (const double[]){0.5, 0.25, 1});
    cr_assert_eq(kiln_jvp(cx, &(kiln_region){open_loop, NULL}, 1, &small, &ones, 1, &val, &ty),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    /* 1.75 doubles 3 times to 14: the loop is linear, so the tangent is 8 * 3. */
    cr_assert_float_eq(scalar_of(val), 14, 1e-12);
    cr_assert_float_eq(scalar_of(ty), 24, 1e-12);
    kiln_ctx_release(cx);
}

/* ---- the gradient module is simplified ----------------------------------------------------------
 */

static kiln_status grad_sum_cos(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    return kiln_grad(cx, &(kiln_region){sum_cos, NULL}, 1, in, NULL, out);
}

static int count(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

Test(autodiff, compiled_gradient_of_sum_cos_is_just_minus_sin) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F64, .shape = KILN_SHAPE(3, 2)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &(kiln_region){grad_sum_cos, NULL}, &a, 1, 1, NULL, &m), KILN_OK,
                 "%s", kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    /* kiln_compile simplified the module in place. */
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text);
    cr_assert_eq(count(text, "stablehlo.cosine"), 0, "a forward cosine is left:\n%s", text);
    cr_assert_eq(count(text, "stablehlo.reduce"), 0, "the forward sum is left:\n%s", text);
    cr_assert_eq(count(text, "stablehlo.sine"), 1, "%s", text);
    int ops = count(text, "stablehlo.");
    cr_assert_leq(ops, 3, "more ops than sine, negate and a constant:\n%s", text);
    kiln_string_free(cx, text);
    /* ... and the CPU backend runs it as one fused kernel (the interpreter, under
     * KILN_BACKEND=interpreter, runs the two ops as they are). */
    kiln_exe_info info;
    cr_assert_eq(kiln_exe_info_get(cx, exe, &info), KILN_OK);
    if (strcmp(info.backend, "cpu") == 0) {
        cr_assert_eq(info.n_ops, 1, "%d ops", (int)info.n_ops);
        cr_assert_eq(info.n_kernels, 1, "%d fused kernels", (int)info.n_kernels);
    } else {
        cr_assert_str_eq(info.backend, "interpreter");
        cr_assert_eq(info.n_ops, 2, "%d ops", (int)info.n_ops);
    }
    kiln_tensor *x = f64(cx, KILN_SHAPE(3, 2), xs6), *g = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &g), KILN_OK);
    double want[6];
    for (int i = 0; i < 6; i++)
        want[i] = -sin(xs6[i]);
    expect_close(g, want, 6, 1e-15);
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* ---- models against finite differences ---------------------------------------------------- */

typedef struct lcg {
    uint64_t s;
} lcg;
static double next_uniform(lcg *r) {
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(r->s >> 11) * (1.0 / 9007199254740992.0);
}

static kiln_tensor *random_f64(kiln_ctx *cx, lcg *r, kiln_shape shape, double scale, double *keep) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    double *v = keep ? keep : malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = scale * (2 * next_uniform(r) - 1);
    kiln_tensor *t = f64(cx, shape, v);
    if (!keep) free(v);
    return t;
}

/* Checks kiln_grad of f with respect to every argument against a fourth-order central
 * difference along a random direction. */
static void check_model_gradient(kiln_ctx *cx, const kiln_region *f, int32_t n,
                                 kiln_tensor *const *args, uint64_t seed) {
    lcg r = {seed};
    kiln_grad_options o = kiln_grad_options_default();
    int32_t argnums[8];
    for (int32_t i = 0; i < n; i++)
        argnums[i] = i;
    o.argnums = argnums;
    o.n_argnums = n;
    kiln_tensor *g[8] = {0};
    cr_assert_eq(kiln_grad(cx, f, n, args, &o, g), KILN_OK, "%s", kiln_ctx_error_message(cx));
    double *x[8], *u[8];
    double gu = 0;
    for (int32_t i = 0; i < n; i++) {
        int64_t m = kiln_tensor_numel(args[i]);
        x[i] = malloc((size_t)m * sizeof(double));
        u[i] = malloc((size_t)m * sizeof(double));
        memcpy(x[i], kiln_tensor_data(args[i]), (size_t)m * sizeof(double));
        const double *gd = kiln_tensor_data(g[i]);
        for (int64_t k = 0; k < m; k++) {
            u[i][k] = 2 * next_uniform(&r) - 1;
            gu += gd[k] * u[i][k];
        }
    }
    const double h = 1e-4, steps[4] = {h, -h, 2 * h, -2 * h};
    double val[4];
    for (int s = 0; s < 4; s++) {
        kiln_scope_begin(cx);
        kiln_tensor *moved[8], *out = NULL;
        for (int32_t i = 0; i < n; i++) {
            int64_t m = kiln_tensor_numel(args[i]);
            double *p = malloc((size_t)m * sizeof(double));
            for (int64_t k = 0; k < m; k++)
                p[k] = x[i][k] + steps[s] * u[i][k];
            moved[i] = f64(cx, *kiln_tensor_shape(args[i]), p);
            free(p);
        }
        cr_assert_eq(f->fn(cx, moved, &out, f->user), KILN_OK, "%s", kiln_ctx_error_message(cx));
        val[s] = scalar_of(out);
        kiln_scope_end(cx);
    }
    double fd = (8 * (val[0] - val[1]) - (val[2] - val[3])) / (12 * h);
    cr_assert(fabs(gu - fd) <= 1e-7 * (1 + fabs(fd)), "<grad, u> = %.12g; finite differences %.12g",
              gu, fd);
    for (int32_t i = 0; i < n; i++) {
        free(x[i]);
        free(u[i]);
    }
}

static kiln_tensor *one_hot_labels(kiln_ctx *cx, int64_t batch, int64_t classes) {
    double *v = calloc((size_t)(batch * classes), sizeof(double));
    for (int64_t b = 0; b < batch; b++)
        v[b * classes + (b * 7 + 3) % classes] = 1;
    kiln_tensor *t = f64(cx, KILN_SHAPE(batch, classes), v);
    free(v);
    return t;
}

/* mean over the batch of -sum(labels * log_softmax(logits)) */
static kiln_tensor *cross_entropy(kiln_ctx *cx, kiln_tensor *logits, kiln_tensor *labels) {
    kiln_tensor *ll = kiln_multiply(cx, labels, kiln_log_softmax(cx, logits, -1));
    return kiln_negate(cx, kiln_mean(cx, kiln_sum(cx, ll, (kiln_dims){.count = 1, .v = {1}}, false),
                                     (kiln_dims){0}, false));
}

static kiln_tensor *relu(kiln_ctx *cx, kiln_tensor *x) {
    return kiln_maximum(cx, x,
                        kiln_broadcast_to(cx, kiln_scalar_like(cx, x, 0), *kiln_tensor_shape(x)));
}

typedef struct model_data {
    kiln_tensor *x, *labels;
} model_data;

/* args: w1 [5,8], b1 [8], w2 [8,3], b2 [3] */
static kiln_status mlp_loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const model_data *d = u;
    kiln_tensor *h = relu(cx, kiln_add(cx, kiln_matmul(cx, d->x, in[0]),
                                       kiln_broadcast_to(cx, in[1], KILN_SHAPE(4, 8))));
    kiln_tensor *logits =
        kiln_add(cx, kiln_matmul(cx, h, in[2]), kiln_broadcast_to(cx, in[3], KILN_SHAPE(4, 3)));
    out[0] = cross_entropy(cx, logits, d->labels);
    return kiln_ctx_status(cx);
}

Test(autodiff, mlp_gradient_matches_finite_differences) {
    kiln_ctx *cx = test_ctx();
    lcg r = {42};
    model_data d = {random_f64(cx, &r, KILN_SHAPE(4, 5), 1, NULL), one_hot_labels(cx, 4, 3)};
    kiln_tensor *params[4] = {random_f64(cx, &r, KILN_SHAPE(5, 8), 0.7, NULL),
                              random_f64(cx, &r, KILN_SHAPE(8), 0.3, NULL),
                              random_f64(cx, &r, KILN_SHAPE(8, 3), 0.7, NULL),
                              random_f64(cx, &r, KILN_SHAPE(3), 0.3, NULL)};
    check_model_gradient(cx, &(kiln_region){mlp_loss, &d}, 4, params, 7);
    kiln_ctx_release(cx);
}

/* args: conv kernel [4,1,3,3] (OIHW), dense w [36,3], dense b [3]. x [2,1,8,8] -> conv 3x3
 * (padding 1) -> relu -> max-pool 2x2 stride 2 -> [2,4,4,4] -> the top-left 3x3 of each
 * map -> flatten [2,36] -> dense -> softmax cross-entropy. */
static kiln_status cnn_loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const model_data *d = u;
    kiln_conv_params p = kiln_conv_params_nchw(2);
    p.padding_low = (kiln_dims){.count = 2, .v = {1, 1}};
    p.padding_high = (kiln_dims){.count = 2, .v = {1, 1}};
    kiln_tensor *c = relu(cx, kiln_convolution(cx, d->x, in[0], &p, KILN_DTYPE_COUNT));
    kiln_window_params w = {.window_dimensions = {.count = 4, .v = {1, 1, 2, 2}},
                            .window_strides = {.count = 4, .v = {1, 1, 2, 2}}};
    kiln_tensor *pooled = NULL, *init = kiln_scalar(cx, -INFINITY, KILN_F64);
    kiln_reduce_window(cx, &c, &init, 1, &w, kiln_region_maximum(), &pooled);
    kiln_tensor *cut = kiln_slice(cx, pooled, (kiln_dims){.count = 4, .v = {0, 0, 0, 0}},
                                  (kiln_dims){.count = 4, .v = {2, 4, 3, 3}}, (kiln_dims){0});
    kiln_tensor *flat = kiln_reshape(cx, cut, KILN_SHAPE(2, 36));
    kiln_tensor *logits =
        kiln_add(cx, kiln_matmul(cx, flat, in[1]), kiln_broadcast_to(cx, in[2], KILN_SHAPE(2, 3)));
    out[0] = cross_entropy(cx, logits, d->labels);
    return kiln_ctx_status(cx);
}

Test(autodiff, cnn_gradient_matches_finite_differences) {
    kiln_ctx *cx = test_ctx();
    lcg r = {99};
    model_data d = {random_f64(cx, &r, KILN_SHAPE(2, 1, 8, 8), 1, NULL), one_hot_labels(cx, 2, 3)};
    kiln_tensor *params[3] = {random_f64(cx, &r, KILN_SHAPE(4, 1, 3, 3), 0.5, NULL),
                              random_f64(cx, &r, KILN_SHAPE(36, 3), 0.3, NULL),
                              random_f64(cx, &r, KILN_SHAPE(3), 0.3, NULL)};
    check_model_gradient(cx, &(kiln_region){cnn_loss, &d}, 3, params, 11);
    kiln_ctx_release(cx);
}

/* ---- more errors ------------------------------------------------------------------------- */

static kiln_status no_result(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)cx, (void)in, (void)out, (void)u;
    return KILN_OK;
}
static kiln_status wrong_bwd(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_sum(cx, in[1], (kiln_dims){0}, false); /* rank 0, not the input's [4] */
    return kiln_ctx_status(cx);
}
static kiln_status wrong_custom(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_custom_vjp def = {.fwd = {log1pexp_fwd, NULL},
                           .bwd = {wrong_bwd, NULL},
                           .n_in = 1,
                           .n_out = 1,
                           .n_residuals = 1};
    kiln_tensor *y = NULL;
    if (kiln_custom_vjp_call(cx, &def, in, &y) != KILN_OK) return kiln_ctx_status(cx);
    out[0] = kiln_sum(cx, y, (kiln_dims){0}, false);
    return kiln_ctx_status(cx);
}
/* Differentiates a function that uses the enclosing trace's tensor from outside. */
static kiln_status closes_over(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    kiln_tensor *outer = u;
    out[0] = kiln_sum(cx, kiln_multiply(cx, in[0], outer), (kiln_dims){0}, false);
    return kiln_ctx_status(cx);
}
static kiln_status grad_closure(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    return kiln_grad(cx, &(kiln_region){closes_over, in[1]}, 1, in, NULL, out);
}

Test(autodiff, inside_a_trace_the_function_may_use_the_enclosing_traces_tensors) {
    kiln_ctx *cx = test_ctx();
    /* grad of sum(x * w) in x, with w a tensor of the jitted function: w, held constant. */
    static const double w[4] = {0.5, -2, 3, 0.25};
    kiln_tensor *args[2] = {f64(cx, KILN_SHAPE(4), xs6), f64(cx, KILN_SHAPE(4), w)}, *g = NULL;
    kiln_jit *j = NULL;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){grad_closure, NULL}, 2, 1, NULL, &j), KILN_OK);
    cr_assert_eq(kiln_jit_call_list(cx, j, args, &g), KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_close(g, w, 4, 0);
    kiln_jit_release(j);
    /* The lowered module holds no trace of the scaffolding: it verifies and prints. */
    kiln_arg_spec specs[2] = {{.dtype = KILN_F64, .shape = KILN_SHAPE(4)},
                              {.dtype = KILN_F64, .shape = KILN_SHAPE(4)}};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &(kiln_region){grad_closure, NULL}, specs, 2, 1, NULL, &m), KILN_OK,
                 "%s", kiln_ctx_error_message(cx));
    char *text = kiln_module_to_string(cx, m);
    cr_assert_eq(count(text, "func.call"), 0, "%s", text);
    kiln_string_free(cx, text);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(autodiff, more_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = f64(cx, KILN_SHAPE(4), xs6), *g[2] = {0}, *t = NULL, *res[2] = {0};
    kiln_region f_vec = {vector_valued, NULL}, f_none = {no_result, NULL};

    cr_assert_eq(kiln_grad(cx, &f_none, 1, &x, NULL, g), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_grad: the function stored no tensor for result 1");
    cr_assert_eq(kiln_vjp(cx, &f_vec, 1, &x, 1, &x, NULL, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_cotangents");
    cr_assert_eq(kiln_vjp(cx, &f_vec, 1, (kiln_tensor *[]){NULL}, 1, &x, NULL, g),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_vjp: primals[0] is NULL");
    cr_assert_eq(kiln_jvp(cx, &f_vec, 1, &x, &x, 1, NULL, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_tangents");
    cr_assert_eq(kiln_jvp(cx, &f_vec, 1, &x, &x, 5000, NULL, &t), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_out 5000");
    cr_assert_eq(kiln_jvp(cx, NULL, 1, &x, &x, 1, NULL, &t), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "f");

    kiln_grad_options o = kiln_grad_options_default();
    kiln_tensor *g3[3];
    o.argnums = (const int32_t[]){0, 0, 0};
    o.n_argnums = 3;
    cr_assert_eq(kiln_grad(cx, &(kiln_region){sum_cos, NULL}, 1, &x, &o, g3),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_argnums is 3; expected 1 to 1");
    cr_assert_eq(kiln_value_and_grad(cx, &(kiln_region){sum_cos, NULL}, 1, &x, 1, NULL, NULL, g),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_results");
    cr_assert_eq(kiln_value_and_grad(cx, &(kiln_region){sum_cos, NULL}, 1, &x, 2, NULL, res, g),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_out is 2");
    cr_assert_eq(kiln_grad(cx, &(kiln_region){sum_cos, NULL}, 0, &x, NULL, g),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_in is 0");

    /* A custom backward function returning the wrong type. */
    cr_assert_eq(kiln_grad(cx, &(kiln_region){wrong_custom, NULL}, 1, &x, NULL, g),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "backward function returned f64[] for input 0");

    /* A sticky error is returned at once. */
    kiln_ctx_set_error(cx, KILN_CANCELLED, "earlier");
    cr_assert_eq(kiln_grad(cx, &(kiln_region){sum_cos, NULL}, 1, &x, NULL, g), KILN_CANCELLED);
    expect_error(cx, KILN_CANCELLED, "earlier");
    kiln_ctx_release(cx);
}

static kiln_status bad_tree_fn(kiln_ctx *cx, const void *in, void *out, void *u) {
    (void)in, (void)out, (void)u;
    return kiln_ctx_status(cx);
}

typedef struct int_leaf {
    kiln_tensor *n;
} int_leaf;
KILN_TREE_DEF(int_leaf, KILN_FIELD(int_leaf, n));

Test(autodiff, tree_mode_errors) {
    kiln_ctx *cx = test_ctx();
    model m = {{f64(cx, KILN_SHAPE(3, 2), xs6), f64(cx, KILN_SHAPE(2), xs6)},
               f64(cx, KILN_SHAPE(2, 3), xs6),
               1};
    loss_out out = {0};
    model grads = {0};
    const kiln_tree_def *md = &kiln_tree_def_model, *od = &kiln_tree_def_loss_out;
    cr_assert_eq(kiln_value_and_grad_tree(cx, NULL, NULL, md, &m, od, &out, NULL, &grads),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "fn");
    cr_assert_eq(kiln_value_and_grad_tree(cx, model_loss, NULL, NULL, &m, od, &out, NULL, &grads),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "in_def");
    cr_assert_eq(kiln_value_and_grad_tree(cx, model_loss, NULL, md, &m, od, &out, NULL, NULL),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_grads");
    kiln_grad_options o = kiln_grad_options_default();
    o.wrt_paths = (const char *const[]){NULL};
    o.n_wrt_paths = 1;
    cr_assert_eq(kiln_value_and_grad_tree(cx, model_loss, NULL, md, &m, od, &out, &o, &grads),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "wrt_paths[0] is NULL");
    /* A function that fills nothing. */
    cr_assert_eq(kiln_value_and_grad_tree(cx, bad_tree_fn, NULL, md, &m, od, &out, NULL, &grads),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "is NULL");
    /* Only integer leaves. */
    static const int32_t ints[2] = {1, 2};
    int_leaf il = {kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(2), ints, sizeof ints)}, ig;
    cr_assert_eq(kiln_value_and_grad_tree(cx, model_loss, NULL, &kiln_tree_def_int_leaf, &il, od,
                                          &out, NULL, &ig),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "no floating-point leaf");
    o.wrt_paths = (const char *const[]){"n"};
    cr_assert_eq(kiln_value_and_grad_tree(cx, model_loss, NULL, &kiln_tree_def_int_leaf, &il, od,
                                          &out, &o, &ig),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "leaf 'n' has dtype i32");
    kiln_ctx_release(cx);
}

/* jvp inside a jit: the tangent computation is part of the compiled function. */
static kiln_status jvp_inside(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    return kiln_jvp(cx, &(kiln_region){grad_f, NULL}, 1, in, &in[1], 1, &out[0], &out[1]);
}

Test(autodiff, jit_of_jvp_of_grad) {
    kiln_ctx *cx = test_ctx();
    static const double v[6] = {0.5, -1.0, 0.25, 2.0, -0.75, 1.5};
    kiln_tensor *args[2] = {f64(cx, KILN_SHAPE(6), xs6), f64(cx, KILN_SHAPE(6), v)}, *r[2] = {0};
    kiln_jit *j = NULL;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){jvp_inside, NULL}, 2, 2, NULL, &j), KILN_OK);
    cr_assert_eq(kiln_jit_call_list(cx, j, args, r), KILN_OK, "%s", kiln_ctx_error_message(cx));
    double sx = 0, sv = 0, want_hv[6];
    for (int i = 0; i < 6; i++) {
        sx += xs6[i];
        sv += v[i];
    }
    for (int i = 0; i < 6; i++)
        want_hv[i] = 6 * xs6[i] * v[i] + 2 * sv;
    expect_close(r[1], want_hv, 6, 1e-13);
    kiln_jit_release(j);
    kiln_ctx_release(cx);
}

/* ---- loops in reverse mode -------------------------------------------------------------- */

static kiln_status loop_body(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_multiply(cx, kiln_sine(cx, a[1]), a[1]); /* c = sin(c) * c */
    return kiln_ctx_status(cx);
}
static kiln_status loop_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *r = NULL;
    kiln_fori_loop(cx, 0, 5, in, 1, &(kiln_region){loop_body, NULL}, &r);
    out[0] = kiln_sum(cx, r, (kiln_dims){0}, false);
    return kiln_ctx_status(cx);
}
static kiln_status loop_value_and_grad(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                       void *u) {
    (void)u;
    return kiln_value_and_grad(cx, &(kiln_region){loop_fn, NULL}, 1, in, 1, NULL, &out[0], &out[1]);
}

Test(autodiff, a_loop_in_reverse_mode_runs_forward_once_and_backward_once) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F64, .shape = KILN_SHAPE(3)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &(kiln_region){loop_value_and_grad, NULL}, &a, 1, 2, NULL, &m),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_compile_options o = kiln_compile_options_default();
    o.disable_unrolling = true; /* the loops are what is counted */
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    char *text = kiln_module_to_string(cx, m);
    /* The forward loop (stacking its carries) and the reverse loop; no second forward. */
    cr_assert_eq(count(text, "stablehlo.while"), 2, "%s", text);
    kiln_string_free(cx, text);
    static const double x0[3] = {0.4, -1.1, 2.0};
    kiln_tensor *x = f64(cx, KILN_SHAPE(3), x0), *r[2] = {0};
    cr_assert_eq(kiln_exe_call(cx, exe, &x, r), KILN_OK);
    /* By hand: c_{k+1} = sin(c_k) c_k, dc_{k+1}/dc_k = cos(c_k) c_k + sin(c_k). */
    double value = 0, want[3];
    for (int i = 0; i < 3; i++) {
        double c = x0[i], d = 1;
        for (int k = 0; k < 5; k++) {
            d *= cos(c) * c + sin(c);
            c = sin(c) * c;
        }
        value += c;
        want[i] = d;
    }
    cr_assert_float_eq(scalar_of(r[0]), value, 1e-14);
    expect_close(r[1], want, 3, 1e-13);
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status loop_grad(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    return kiln_grad(cx, &(kiln_region){loop_fn, NULL}, 1, in, NULL, out);
}
static kiln_status loop_grad_sum(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    kiln_tensor *g = NULL;
    if (loop_grad(cx, in, &g, u) != KILN_OK) return kiln_ctx_status(cx);
    out[0] = kiln_sum(cx, g, (kiln_dims){0}, false);
    return kiln_ctx_status(cx);
}

/* d/dc of the closed-form derivative of five steps of c = sin(c) c. */
static double loop_derivative(double c) {
    double d = 1;
    for (int k = 0; k < 5; k++) {
        d *= cos(c) * c + sin(c);
        c = sin(c) * c;
    }
    return d;
}

Test(autodiff, second_derivative_through_a_loop) {
    kiln_ctx *cx = test_ctx();
    static const double x0[3] = {0.4, -1.1, 2.0};
    kiln_tensor *x = f64(cx, KILN_SHAPE(3), x0), *h = NULL;
    cr_assert_eq(kiln_grad(cx, &(kiln_region){loop_grad_sum, NULL}, 1, &x, NULL, &h), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    double want[3];
    for (int i = 0; i < 3; i++) {
        const double e = 1e-4;
        want[i] = (8 * (loop_derivative(x0[i] + e) - loop_derivative(x0[i] - e)) -
                   (loop_derivative(x0[i] + 2 * e) - loop_derivative(x0[i] - 2 * e))) /
                  (12 * e);
    }
    expect_close(h, want, 3, 1e-8);
    kiln_ctx_release(cx);
}

/* ---- allocation failure -------------------------------------------------------------------- */

/* A bit of everything the transforms handle: a loop, a branch, stop_gradient, custom_vjp. */
static kiln_status branch_sin(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a;
    r[0] = kiln_sine(cx, u);
    return kiln_ctx_status(cx);
}
static kiln_status branch_cos(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a;
    r[0] = kiln_cosine(cx, u);
    return kiln_ctx_status(cx);
}
static kiln_status everything(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    static const double one = 1;
    kiln_tensor *l = NULL, *b = NULL, *c = NULL;
    kiln_fori_loop(cx, 0, 2, in, 1, &(kiln_region){loop_body, NULL}, &l);
    kiln_tensor *pred = kiln_compare(cx, kiln_sum(cx, in[0], (kiln_dims){0}, false),
                                     kiln_scalar(cx, 0, KILN_F64), KILN_CMP_GT, KILN_CMP_DEFAULT);
    kiln_cond(cx, pred, &(kiln_region){branch_sin, l}, &(kiln_region){branch_cos, l}, NULL, 0, 1,
              &b);
    log1pexp(cx, &b, &c, (void *)&one);
    (void)u;
    out[0] = kiln_add(cx, c, kiln_sum(cx, kiln_stop_gradient(cx, in[0]), (kiln_dims){0}, false));
    return kiln_ctx_status(cx);
}
static kiln_status grad_everything(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                   void *u) {
    return kiln_grad(cx, &(kiln_region){everything, u}, 1, in, NULL, out);
}

Test(autodiff, allocation_failure_at_every_point_leaks_nothing) {
    for (int traced = 0; traced < 2; traced++) {
        failing_allocator fa;
        kiln_ctx *cx = failing_allocator_ctx(&fa);
        cr_assert_not_null(cx);
        kiln_arg_spec a = {.dtype = KILN_F64, .shape = KILN_SHAPE(3)};
        /* The ctx's cache of eager derivatives exists (emptied) before counting. */
        kiln_tensor *warm = NULL;
        cr_assert_eq(
            grad_everything(cx, (kiln_tensor *[]){f64(cx, KILN_SHAPE(3), xs6)}, &warm, NULL),
            KILN_OK, "%s", kiln_ctx_error_message(cx));
        kiln_tensor_release(warm);
        kiln_ad_cache_clear(cx);
        kiln_ctx_trim(cx);
        int64_t base = fa.live_blocks, k = 0;
        for (;; k++) {
            cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
            kiln_tensor *x = traced ? NULL : f64(cx, KILN_SHAPE(3), xs6), *g = NULL;
            kiln_module *m = NULL;
            fa.fail_after = fa.allocations + k;
            kiln_status s =
                traced ? kiln_lower(cx, &(kiln_region){grad_everything, NULL}, &a, 1, 1, NULL, &m)
                       : grad_everything(cx, &x, &g, NULL);
            fa.fail_after = -1;
            kiln_module_release(m);
            cr_assert_eq(kiln_scope_end(cx), KILN_OK);
            if (s == KILN_OK) break;
            cr_assert_eq(s, KILN_RESOURCE_EXHAUSTED, "failure %d: %s", (int)k,
                         kiln_ctx_error_message(cx));
            kiln_ad_cache_clear(cx); /* the derivatives cached are not a leak */
            kiln_ctx_trim(cx);       /* nor is what the buffer cache keeps */
            cr_assert_eq(fa.live_blocks, base, "failure %d leaks", (int)k);
            kiln_ctx_clear_error(cx);
        }
        cr_log_info("%s: %lld failure points", traced ? "traced" : "eager", (long long)k);
        cr_assert_gt(k, 10);
        kiln_ad_cache_clear(cx);
        kiln_ctx_trim(cx);
        cr_assert_eq(fa.live_blocks, base);
        kiln_ctx_release(cx);
        cr_assert_eq(fa.live_blocks, 0);
    }
}
