/* SPDX-License-Identifier: Apache-2.0 */
/* The rules of the contractions, indexing, window and sort ops beyond what the
 * finite-difference cases (grad_cases_rules.c) check: which ops the derivatives are made
 * of (max pooling's vjp is a select_and_scatter), where ties send the derivative, dtypes
 * of mixed-precision cotangents, empty operands, and every UNIMPLEMENTED path. */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"

static double item(kiln_ctx *cx, kiln_tensor *t, int64_t i) { return kiln_tensor_item(cx, t, i); }

static kiln_tensor *f64_tensor(kiln_ctx *cx, kiln_shape shape, const double *v) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    return kiln_tensor_from_host(cx, KILN_F64, shape, v, (size_t)n * sizeof(double));
}

/* ---- max pooling ------------------------------------------------------------------------- */

typedef struct pool {
    kiln_window_params w;
    double init;
} pool;

static kiln_status pool_sum(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    const pool *p = user;
    kiln_tensor *init = kiln_scalar_like(cx, in[0], p->init), *r;
    if (kiln_reduce_window(cx, in, &init, 1, &p->w, kiln_region_maximum(), &r) != KILN_OK)
        return kiln_ctx_status(cx);
    out[0] = kiln_sum(cx, r, KILN_DIMS_NONE, false);
    return kiln_ctx_status(cx);
}

static pool pool_2x2 = {.w = {.window_dimensions = {2, {2, 2}}, .window_strides = {2, {2, 2}}},
                        .init = -INFINITY};

static kiln_status grad_of_pool(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                void *user) {
    kiln_region f = {pool_sum, user};
    return kiln_grad(cx, &f, 1, in, NULL, out);
}

Test(rules_hard, max_pool_vjp_is_select_and_scatter) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec spec = {.dtype = KILN_F32, .shape = KILN_SHAPE(1, 1, 4, 4)};
    pool p = {
        .w = {.window_dimensions = KILN_DIMS(1, 1, 2, 2), .window_strides = KILN_DIMS(1, 1, 2, 2)},
        .init = -INFINITY};
    kiln_region fn = {grad_of_pool, &p};
    kiln_module *m = NULL;
    kiln_lower(cx, &fn, &spec, 1, 1, NULL, &m);
    expect_ok(cx);
    char *text = kiln_module_to_string(cx, m);
    expect_ok(cx);
    cr_expect(strstr(text, "select_and_scatter") != NULL, "no select_and_scatter in:\n%s", text);
    kiln_string_free(cx, text);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* The gradient of the sum of 2x2 max pools: 1 at each window's maximum, checked against
 * positions found by scanning each window here. */
Test(rules_hard, max_pool_gradient_values) {
    kiln_ctx *cx = test_ctx();
    double v[24];
    for (int i = 0; i < 24; i++)
        v[i] = sin(1.7 * i + 0.3); /* distinct values */
    kiln_tensor *x = f64_tensor(cx, KILN_SHAPE(4, 6), v), *g = NULL;
    kiln_region f = {pool_sum, &pool_2x2};
    kiln_grad(cx, &f, 1, &x, NULL, &g);
    expect_ok(cx);
    double want[24] = {0};
    for (int r = 0; r < 4; r += 2)
        for (int c = 0; c < 6; c += 2) {
            int best = r * 6 + c;
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++)
                    if (v[(r + i) * 6 + c + j] > v[best]) best = (r + i) * 6 + c + j;
            want[best] = 1;
        }
    for (int i = 0; i < 24; i++)
        cr_expect_eq(item(cx, g, i), want[i], "element %d: %g, expected %g", i, item(cx, g, i),
                     want[i]);
    kiln_ctx_release(cx);
}

/* Ties: the first maximum of a window (row-major) gets the cotangent, in the plain
 * (select_and_scatter) and the dilated (position-carrying) vjp and in both jvps (pairs,
 * and disjoint windows) alike; an init value equal to the maximum keeps it. */
static pool tie_plain = {.w = {.window_dimensions = {2, {2, 2}}}, .init = -INFINITY};
static pool tie_dilated = {.w = {.window_dimensions = {2, {2, 2}}, .window_dilations = {2, {1, 2}}},
                           .init = -INFINITY};
static pool tie_init = {.w = {.window_dimensions = {2, {2, 2}}}, .init = 1.0};
static pool tie_disjoint = {.w = {.window_dimensions = {2, {2, 2}}, .window_strides = {2, {2, 2}}},
                            .init = -INFINITY};
static pool tie_disjoint_init = {
    .w = {.window_dimensions = {2, {2, 2}}, .window_strides = {2, {2, 2}}}, .init = 1.0};

static void check_ties(kiln_ctx *cx, pool *p, kiln_shape shape, int first) {
    double v[6] = {1, 1, 1, 1, 1, 1};
    kiln_tensor *x = f64_tensor(cx, shape, v), *g = NULL;
    kiln_region f = {pool_sum, p};
    kiln_grad(cx, &f, 1, &x, NULL, &g);
    expect_ok(cx);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(item(cx, g, i), i == first ? 1.0 : 0.0, "vjp element %d", i);
    for (int i = 0; i < 4; i++) {
        double t[6] = {0};
        t[i] = 1;
        kiln_tensor *tan = f64_tensor(cx, shape, t), *out = NULL, *dout = NULL;
        kiln_jvp(cx, &f, 1, &x, &tan, 1, &out, &dout);
        expect_ok(cx);
        cr_expect_eq(item(cx, dout, 0), i == first ? 1.0 : 0.0, "jvp along element %d", i);
    }
}

Test(rules_hard, max_ties_go_to_the_first_maximum) {
    kiln_ctx *cx = test_ctx();
    check_ties(cx, &tie_plain, KILN_SHAPE(2, 2), 0);
    check_ties(cx, &tie_dilated, KILN_SHAPE(2, 3), 0);
    check_ties(cx, &tie_init, KILN_SHAPE(2, 2), -1);
    check_ties(cx, &tie_disjoint, KILN_SHAPE(2, 2), 0);
    check_ties(cx, &tie_disjoint_init, KILN_SHAPE(2, 2), -1);
    kiln_ctx_release(cx);
}

/* ---- dot_general and convolution ----------------------------------------------------- */

static const kiln_dot_params matmul = {.lhs_contracting_dims = {1, {1}},
                                       .rhs_contracting_dims = {1, {0}}};

static kiln_status dot_to_f64(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_dot_general(cx, in[0], in[1], &matmul, KILN_F64);
    return kiln_ctx_status(cx);
}

/* f32 x f32 -> f64: each cotangent has its operand's dtype, and is ct @ b^T and a^T @ ct. */
Test(rules_hard, dot_general_mixed_dtype_cotangents) {
    kiln_ctx *cx = test_ctx();
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {0.5f, -1, 2, 0.25f, -3, 1};
    double ct[4] = {1, -2, 0.5, 3};
    kiln_tensor *in[2] = {kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 3), a, sizeof a),
                          kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(3, 2), b, sizeof b)};
    kiln_tensor *cts = f64_tensor(cx, KILN_SHAPE(2, 2), ct), *g[2] = {NULL, NULL};
    kiln_region f = {dot_to_f64, NULL};
    kiln_vjp(cx, &f, 2, in, 1, &cts, NULL, g);
    expect_ok(cx);
    cr_assert_eq(kiln_tensor_dtype(g[0]), KILN_F32);
    cr_assert_eq(kiln_tensor_dtype(g[1]), KILN_F32);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++) {
            double want = ct[i * 2] * b[k * 2] + ct[i * 2 + 1] * b[k * 2 + 1];
            cr_expect_float_eq(item(cx, g[0], i * 3 + k), want, 1e-6, "d lhs [%d,%d]", i, k);
        }
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 2; j++) {
            double want = a[k] * ct[j] + a[3 + k] * ct[2 + j];
            cr_expect_float_eq(item(cx, g[1], k * 2 + j), want, 1e-6, "d rhs [%d,%d]", k, j);
        }
    kiln_ctx_release(cx);
}

static kiln_status conv_sum(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const kiln_conv_params *p = u;
    out[0] = kiln_sum(cx, kiln_convolution(cx, in[0], in[1], p, KILN_DTYPE_COUNT), KILN_DIMS_NONE,
                      false);
    return kiln_ctx_status(cx);
}

/* An empty batch: nothing flows, the kernel's gradient is zeros of its shape. */
Test(rules_hard, convolution_empty_batch) {
    kiln_ctx *cx = test_ctx();
    kiln_conv_params p = kiln_conv_params_nchw(2);
    kiln_tensor *in[2] = {kiln_zeros(cx, KILN_F64, KILN_SHAPE(0, 2, 4, 4)),
                          kiln_ones(cx, KILN_F64, KILN_SHAPE(3, 2, 3, 3))};
    kiln_region f = {conv_sum, &p};
    kiln_tensor *g[2] = {NULL, NULL};
    int32_t both[2] = {0, 1};
    kiln_grad_options o = kiln_grad_options_default();
    o.argnums = both;
    o.n_argnums = 2;
    kiln_grad(cx, &f, 2, in, &o, g);
    expect_ok(cx);
    cr_assert_eq(kiln_tensor_numel(g[0]), 0);
    cr_assert_eq(kiln_tensor_numel(g[1]), 54);
    for (int i = 0; i < 54; i++)
        cr_expect_eq(item(cx, g[1], i), 0.0);
    kiln_ctx_release(cx);
}

/* Feature groups need one more dimension to regroup the kernel: at rank 16 there is none. */
Test(rules_hard, convolution_groups_at_max_rank_unimplemented) {
    kiln_ctx *cx = test_ctx();
    kiln_conv_params p = {.input_batch_dimension = 0,
                          .input_feature_dimension = 1,
                          .kernel_input_feature_dimension = 1,
                          .kernel_output_feature_dimension = 0,
                          .output_batch_dimension = 0,
                          .output_feature_dimension = 1,
                          .feature_group_count = 2};
    kiln_shape xs = {.rank = KILN_MAX_RANK}, ks = {.rank = KILN_MAX_RANK};
    p.input_spatial_dimensions.count = p.kernel_spatial_dimensions.count =
        p.output_spatial_dimensions.count = KILN_MAX_RANK - 2;
    for (int32_t d = 0; d < KILN_MAX_RANK; d++) {
        xs.dims[d] = ks.dims[d] = 1;
        if (d >= 2)
            p.input_spatial_dimensions.v[d - 2] = p.kernel_spatial_dimensions.v[d - 2] =
                p.output_spatial_dimensions.v[d - 2] = d;
    }
    xs.dims[1] = 2;
    ks.dims[0] = 2;
    kiln_tensor *in[2] = {kiln_ones(cx, KILN_F64, xs), kiln_ones(cx, KILN_F64, ks)};
    kiln_region f = {conv_sum, &p};
    kiln_tensor *g = NULL;
    kiln_grad(cx, &f, 2, in, NULL, &g);
    expect_error(cx, KILN_UNIMPLEMENTED, "needs rank 17");
    kiln_ctx_release(cx);
}

/* ---- second order through convolutions ------------------------------------------------ */

typedef struct conv_hvp {
    kiln_conv_params p;
    kiln_shape x, w;
} conv_hvp;

/* 0.5 * sum(conv(x, w)^2): its gradient holds transposed convolutions (feature groups become
 * batch groups and back), whose own derivatives the Hessian-vector product takes. */
static kiln_status conv_energy(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const conv_hvp *c = u;
    kiln_tensor *y = kiln_convolution(cx, in[0], in[1], &c->p, KILN_DTYPE_COUNT);
    out[0] = kiln_multiply(cx, kiln_scalar(cx, 0.5, KILN_F64),
                           kiln_sum(cx, kiln_multiply(cx, y, y), KILN_DIMS_NONE, false));
    return kiln_ctx_status(cx);
}

static kiln_status conv_energy_grad(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                    void *u) {
    kiln_region f = {conv_energy, u};
    int32_t both[2] = {0, 1};
    kiln_grad_options o = kiln_grad_options_default();
    o.argnums = both;
    o.n_argnums = 2;
    return kiln_grad(cx, &f, 2, in, &o, out);
}

/* <v, H t> by the jvp of the gradient against central differences of the gradient. */
static void check_conv_hvp(conv_hvp *c) {
    kiln_ctx *cx = test_ctx();
    kiln_shape shapes[2] = {c->x, c->w};
    double *x[2], *t[2], *v[2];
    int64_t n[2];
    kiln_tensor *in[2], *tan[2];
    for (int a = 0; a < 2; a++) {
        n[a] = 1;
        for (int32_t d = 0; d < shapes[a].rank; d++)
            n[a] *= shapes[a].dims[d];
        x[a] = malloc((size_t)n[a] * sizeof(double));
        t[a] = malloc((size_t)n[a] * sizeof(double));
        v[a] = malloc((size_t)n[a] * sizeof(double));
        for (int64_t i = 0; i < n[a]; i++) {
            x[a][i] = sin(0.37 * (double)i + a);
            t[a][i] = cos(1.3 * (double)i - a);
            v[a][i] = sin(2.9 * (double)i + 0.5 * a);
        }
        in[a] = f64_tensor(cx, shapes[a], x[a]);
        tan[a] = f64_tensor(cx, shapes[a], t[a]);
    }
    kiln_region g = {conv_energy_grad, c};
    kiln_tensor *grads[2] = {NULL, NULL}, *hvp[2] = {NULL, NULL};
    kiln_jvp(cx, &g, 2, in, tan, 2, grads, hvp);
    expect_ok(cx);
    double jv = 0, fd = 0, h = 1e-4;
    for (int a = 0; a < 2; a++)
        for (int64_t i = 0; i < n[a]; i++)
            jv += v[a][i] * item(cx, hvp[a], i);
    for (int side = -1; side <= 1; side += 2) {
        kiln_tensor *moved[2], *gm[2] = {NULL, NULL};
        for (int a = 0; a < 2; a++) {
            double *p = malloc((size_t)n[a] * sizeof(double));
            for (int64_t i = 0; i < n[a]; i++)
                p[i] = x[a][i] + side * h * t[a][i];
            moved[a] = f64_tensor(cx, shapes[a], p);
            free(p);
        }
        conv_energy_grad(cx, moved, gm, c);
        expect_ok(cx);
        for (int a = 0; a < 2; a++)
            for (int64_t i = 0; i < n[a]; i++)
                fd += side * v[a][i] * item(cx, gm[a], i) / (2 * h);
    }
    /* The energy is quadratic in each argument and quartic overall: central differences
     * are exact up to h^2 times the third derivative. */
    cr_expect(fabs(jv - fd) <= 1e-6 * (1 + fabs(fd)), "hvp %.12g, finite differences %.12g", jv,
              fd);
    for (int a = 0; a < 2; a++) {
        free(x[a]);
        free(t[a]);
        free(v[a]);
    }
    kiln_ctx_release(cx);
}

Test(rules_hard, convolution_hessian_vector_products) {
    conv_hvp groups = {
        .p = kiln_conv_params_nchw(2), .x = KILN_SHAPE(2, 4, 5, 5), .w = KILN_SHAPE(4, 2, 3, 2)};
    groups.p.feature_group_count = 2;
    groups.p.window_strides = KILN_DIMS(2, 1);
    groups.p.padding_low = groups.p.padding_high = KILN_DIMS(1, 1);
    check_conv_hvp(&groups);
    conv_hvp batch = {
        .p = kiln_conv_params_nchw(2), .x = KILN_SHAPE(4, 2, 4, 4), .w = KILN_SHAPE(4, 2, 2, 2)};
    batch.p.batch_group_count = 2;
    batch.p.lhs_dilation = KILN_DIMS(2, 1);
    batch.p.rhs_dilation = KILN_DIMS(1, 2);
    check_conv_hvp(&batch);
}

/* ---- unsupported regions -------------------------------------------------------------- */

static kiln_status scatter_multiply(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                    void *u) {
    (void)u;
    kiln_scatter_params sp = {.update_window_dims = KILN_DIMS(1),
                              .inserted_window_dims = KILN_DIMS(0),
                              .scatter_dims_to_operand_dims = KILN_DIMS(0),
                              .index_vector_dim = 1};
    int64_t rows[2] = {1, 0};
    kiln_tensor *idx = kiln_tensor_from_host(cx, KILN_I64, KILN_SHAPE(2, 1), rows, sizeof rows);
    return kiln_scatter(cx, &in[0], 1, idx, &in[1], &sp, kiln_region_multiply(), out);
}

static kiln_status add_pairs(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, a[0], a[2]);
    r[1] = kiln_add(cx, a[1], a[3]);
    return kiln_ctx_status(cx);
}

static kiln_status scatter_two(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_scatter_params sp = {.update_window_dims = KILN_DIMS(1),
                              .inserted_window_dims = KILN_DIMS(0),
                              .scatter_dims_to_operand_dims = KILN_DIMS(0),
                              .index_vector_dim = 1};
    int64_t rows[2] = {1, 0};
    kiln_tensor *idx = kiln_tensor_from_host(cx, KILN_I64, KILN_SHAPE(2, 1), rows, sizeof rows);
    kiln_tensor *inputs[2] = {in[0], in[0]}, *updates[2] = {in[1], in[1]}, *r[2];
    kiln_region region = {add_pairs, NULL};
    if (kiln_scatter(cx, inputs, 2, idx, updates, &sp, &region, r) != KILN_OK)
        return kiln_ctx_status(cx);
    out[0] = kiln_add(cx, r[0], r[1]);
    return kiln_ctx_status(cx);
}

static kiln_status window_multiply(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                   void *u) {
    (void)u;
    kiln_window_params w = {.window_dimensions = KILN_DIMS(2, 2)};
    kiln_tensor *one = kiln_scalar(cx, 1, KILN_F64);
    return kiln_reduce_window(cx, in, &one, 1, &w, kiln_region_multiply(), out);
}

static kiln_status window_two(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_window_params w = {.window_dimensions = KILN_DIMS(2, 2)};
    kiln_tensor *inits[2] = {kiln_scalar(cx, 0, KILN_F64), kiln_scalar(cx, 0, KILN_F64)};
    kiln_tensor *inputs[2] = {in[0], in[1]}, *r[2];
    kiln_region region = {add_pairs, NULL};
    if (kiln_reduce_window(cx, inputs, inits, 2, &w, &region, r) != KILN_OK)
        return kiln_ctx_status(cx);
    out[0] = kiln_add(cx, r[0], r[1]);
    return kiln_ctx_status(cx);
}

static kiln_status sas_maximum(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_window_params w = {.window_dimensions = KILN_DIMS(2, 2),
                            .window_strides = KILN_DIMS(2, 2)};
    kiln_tensor *zero = kiln_scalar(cx, 0, KILN_F64);
    out[0] = kiln_select_and_scatter(cx, in[0], in[1], zero, &w, kiln_region_greater_equal(),
                                     kiln_region_maximum());
    return kiln_ctx_status(cx);
}

typedef struct unsupported {
    kiln_region_fn fn;
    kiln_shape shapes[2];
    int32_t n_in;
    const char *fragments[2];
} unsupported;

/* Both modes report UNIMPLEMENTED naming the op and what is supported. The cotangents
 * and tangents are ones: zeros would let the transforms skip the rule. */
static void expect_unimplemented(const unsupported *c) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *in[2], *tan[2], *g[2] = {NULL, NULL}, *out = NULL, *dout = NULL, *r = NULL;
    for (int32_t i = 0; i < c->n_in; i++) {
        in[i] = kiln_full(cx, KILN_F64, c->shapes[i], 0.5 + i);
        tan[i] = kiln_ones(cx, KILN_F64, c->shapes[i]);
    }
    c->fn(cx, in, &r, NULL);
    expect_ok(cx);
    kiln_tensor *ct = kiln_ones(cx, KILN_F64, *kiln_tensor_shape(r));
    kiln_region f = {c->fn, NULL};
    for (int mode = 0; mode < 2; mode++) {
        if (mode == 0)
            kiln_vjp(cx, &f, c->n_in, in, 1, &ct, NULL, g);
        else
            kiln_jvp(cx, &f, c->n_in, in, tan, 1, &out, &dout);
        const char *msg = kiln_ctx_error_message(cx);
        cr_assert_eq(kiln_ctx_status(cx), KILN_UNIMPLEMENTED, "mode %d: %s", mode, msg);
        for (int k = 0; k < 2; k++)
            cr_expect(strstr(msg, c->fragments[k]) != NULL, "\"%s\" lacks \"%s\"", msg,
                      c->fragments[k]);
        cr_expect(strstr(msg, mode ? "jvp" : "vjp") != NULL, "\"%s\" names no mode", msg);
        kiln_ctx_clear_error(cx);
    }
    kiln_ctx_release(cx);
}

Test(rules_hard, scatter_multiply_without_unique_indices_unimplemented) {
    expect_unimplemented(&(unsupported){scatter_multiply,
                                        {KILN_SHAPE(3, 2), KILN_SHAPE(2, 2)},
                                        2,
                                        {"stablehlo.scatter with a multiply", "unique_indices"}});
}

static kiln_status subtract_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_subtract(cx, a[0], a[1]);
    return kiln_ctx_status(cx);
}

static kiln_status scatter_subtract(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                    void *u) {
    (void)u;
    kiln_scatter_params sp = {.update_window_dims = KILN_DIMS(1),
                              .inserted_window_dims = KILN_DIMS(0),
                              .scatter_dims_to_operand_dims = KILN_DIMS(0),
                              .index_vector_dim = 1};
    int64_t rows[2] = {1, 0};
    kiln_tensor *idx = kiln_tensor_from_host(cx, KILN_I64, KILN_SHAPE(2, 1), rows, sizeof rows);
    kiln_region region = {subtract_region, NULL};
    return kiln_scatter(cx, &in[0], 1, idx, &in[1], &sp, &region, out);
}

Test(rules_hard, scatter_other_region_unimplemented) {
    expect_unimplemented(&(unsupported){scatter_subtract,
                                        {KILN_SHAPE(3, 2), KILN_SHAPE(2, 2)},
                                        2,
                                        {"stablehlo.scatter", "combines otherwise"}});
}

Test(rules_hard, scatter_two_inputs_unimplemented) {
    expect_unimplemented(&(unsupported){scatter_two,
                                        {KILN_SHAPE(3, 2), KILN_SHAPE(2, 2)},
                                        2,
                                        {"stablehlo.scatter", "of 2 inputs"}});
}

Test(rules_hard, reduce_window_multiply_unimplemented) {
    expect_unimplemented(&(unsupported){window_multiply,
                                        {KILN_SHAPE(3, 3)},
                                        1,
                                        {"stablehlo.reduce_window", "add, maximum and minimum"}});
}

Test(rules_hard, reduce_window_two_inputs_unimplemented) {
    expect_unimplemented(&(unsupported){window_two,
                                        {KILN_SHAPE(3, 3), KILN_SHAPE(3, 3)},
                                        2,
                                        {"stablehlo.reduce_window", "of 2 inputs"}});
}

Test(rules_hard, select_and_scatter_maximum_unimplemented) {
    expect_unimplemented(&(unsupported){sas_maximum,
                                        {KILN_SHAPE(4, 4), KILN_SHAPE(2, 2)},
                                        2,
                                        {"stablehlo.select_and_scatter", "add scatter region"}});
}

/* ---- scatter max ties ------------------------------------------------------------------- */

static kiln_status scatter_max_one(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                   void *u) {
    (void)u;
    kiln_scatter_params sp = {.inserted_window_dims = KILN_DIMS(0),
                              .scatter_dims_to_operand_dims = KILN_DIMS(0),
                              .index_vector_dim = 1};
    int64_t at[3] = {0, 0, 1};
    kiln_tensor *idx = kiln_tensor_from_host(cx, KILN_I64, KILN_SHAPE(3, 1), at, sizeof at);
    return kiln_scatter(cx, &in[0], 1, idx, &in[1], &sp, kiln_region_maximum(), out);
}

/* x[0] and two updates tie at position 0: each gets a third; position 1's update loses. */
Test(rules_hard, scatter_max_ties_share_evenly) {
    kiln_ctx *cx = test_ctx();
    double xv[2] = {1, 5}, uv[3] = {1, 1, 2};
    kiln_tensor *in[2] = {f64_tensor(cx, KILN_SHAPE(2), xv), f64_tensor(cx, KILN_SHAPE(3), uv)};
    double ctv[2] = {3, 7};
    kiln_tensor *ct = f64_tensor(cx, KILN_SHAPE(2), ctv), *g[2] = {NULL, NULL};
    kiln_region f = {scatter_max_one, NULL};
    kiln_vjp(cx, &f, 2, in, 1, &ct, NULL, g);
    expect_ok(cx);
    double want_x[2] = {1, 7}, want_u[3] = {1, 1, 0};
    for (int i = 0; i < 2; i++)
        cr_expect_float_eq(item(cx, g[0], i), want_x[i], 1e-15, "d x[%d]", i);
    for (int i = 0; i < 3; i++)
        cr_expect_float_eq(item(cx, g[1], i), want_u[i], 1e-15, "d updates[%d]", i);
    double tx[2] = {3, 1}, tu[3] = {0, 6, 4};
    kiln_tensor *tan[2] = {f64_tensor(cx, KILN_SHAPE(2), tx), f64_tensor(cx, KILN_SHAPE(3), tu)};
    kiln_tensor *y = NULL, *ty = NULL;
    kiln_jvp(cx, &f, 2, in, tan, 1, &y, &ty);
    expect_ok(cx);
    cr_expect_float_eq(item(cx, ty, 0), 3.0, 1e-15, "(3 + 0 + 6) / 3");
    cr_expect_float_eq(item(cx, ty, 1), 1.0, 1e-15, "x[1] wins");
    kiln_ctx_release(cx);
}

/* ---- select_and_scatter with a traced select region ------------------------------------ */

static kiln_status ge_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_compare(cx, a[0], a[1], KILN_CMP_GE, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}

static kiln_status sas_select(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    kiln_window_params w = {.window_dimensions = KILN_DIMS(2, 3),
                            .window_strides = KILN_DIMS(1, 2),
                            .padding_low = KILN_DIMS(1, 0),
                            .padding_high = KILN_DIMS(0, 1)};
    kiln_region traced = {ge_region, NULL};
    out[0] = kiln_select_and_scatter(cx, in[0], in[1], in[2], &w,
                                     u ? &traced : kiln_region_greater_equal(), kiln_region_add());
    return kiln_ctx_status(cx);
}

/* A traced ge select region differentiates as the builtin one does. */
Test(rules_hard, select_and_scatter_traced_select) {
    kiln_ctx *cx = test_ctx();
    double xv[20], sv[8];
    for (int i = 0; i < 20; i++)
        xv[i] = cos(2.1 * i);
    for (int i = 0; i < 8; i++)
        sv[i] = 0.5 + i;
    double init = 0.25;
    kiln_tensor *in[3] = {f64_tensor(cx, KILN_SHAPE(4, 5), xv),
                          f64_tensor(cx, KILN_SHAPE(4, 2), sv),
                          f64_tensor(cx, KILN_SHAPE_SCALAR, &init)};
    kiln_tensor *ct = kiln_iota(cx, KILN_F64, KILN_SHAPE(4, 5), 1);
    kiln_tensor *gb[3] = {0}, *gt[3] = {0};
    kiln_region builtin = {sas_select, NULL}, traced = {sas_select, &builtin};
    kiln_vjp(cx, &builtin, 3, in, 1, &ct, NULL, gb);
    kiln_vjp(cx, &traced, 3, in, 1, &ct, NULL, gt);
    expect_ok(cx);
    for (int k = 1; k < 3; k++)
        for (int64_t i = 0; i < kiln_tensor_numel(gb[k]); i++)
            cr_expect_eq(item(cx, gt[k], i), item(cx, gb[k], i), "argument %d element %d", k,
                         (int)i);
    kiln_ctx_release(cx);
}

/* ---- sort limits -------------------------------------------------------------------------- */

/* A long traced comparator (600 adds before the compare, ordering as less does) is copied
 * whole: the cotangents go back where the values came from. */
static kiln_status long_comparator(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *x = a[0], *y = a[1];
    for (int i = 0; i < 300; i++) {
        x = kiln_add(cx, x, a[0]);
        y = kiln_add(cx, y, a[1]);
    }
    r[0] = kiln_compare(cx, x, y, KILN_CMP_LT, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}

static kiln_status sort_long(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region cmp = {long_comparator, NULL};
    return kiln_sort(cx, in, 1, 0, true, &cmp, out);
}

Test(rules_hard, sort_long_traced_comparator) {
    kiln_ctx *cx = test_ctx();
    double v[3] = {3, 1, 2}, c[3] = {10, 20, 30};
    kiln_tensor *x = f64_tensor(cx, KILN_SHAPE(3), v), *g = NULL;
    kiln_tensor *ct = f64_tensor(cx, KILN_SHAPE(3), c);
    kiln_region f = {sort_long, NULL};
    kiln_vjp(cx, &f, 1, &x, 1, &ct, NULL, &g);
    expect_ok(cx);
    /* sorted = [1, 2, 3] = x[1], x[2], x[0] */
    double want[3] = {30, 10, 20};
    for (int i = 0; i < 3; i++)
        cr_expect_eq(item(cx, g, i), want[i], "element %d", i);
    kiln_ctx_release(cx);
}

static kiln_status sort_many(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *inputs[64], *r[64];
    for (int i = 0; i < 64; i++)
        inputs[i] = in[0];
    if (kiln_sort(cx, inputs, 64, 0, true, kiln_region_less(), r) != KILN_OK)
        return kiln_ctx_status(cx);
    out[0] = r[63];
    return kiln_ctx_status(cx);
}

Test(rules_hard, sort_of_64_inputs_unimplemented) {
    kiln_ctx *cx = test_ctx();
    double v[3] = {3, 1, 2};
    kiln_tensor *x = f64_tensor(cx, KILN_SHAPE(3), v), *g = NULL,
                *ct = kiln_ones(cx, KILN_F64, KILN_SHAPE(3));
    kiln_region f = {sort_many, NULL};
    kiln_vjp(cx, &f, 1, &x, 1, &ct, NULL, &g);
    expect_error(cx, KILN_UNIMPLEMENTED, "at most 63 inputs");
    kiln_ctx_release(cx);
}
