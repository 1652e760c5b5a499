/* SPDX-License-Identifier: Apache-2.0 */
/* Training: gradients of nn models (through kiln_value_and_grad_tree) against central
 * finite differences in f64, and a jitted training step against the same step run eagerly. */
#include "nn_test.h"

/* A tiny CNN in f64: conv 3x3 (padding 1) -> relu -> 2x2 max-pool -> dense; CE loss. */
typedef struct tiny {
    kiln_nn_conv2d_layer conv;
    kiln_nn_dense_params fc;
} tiny;
typedef struct tiny_in {
    tiny params;
    kiln_tensor *x, *y;
} tiny_in;
typedef struct tiny_out {
    kiln_tensor *loss;
} tiny_out;
KILN_TREE_DEF(tiny, KILN_SUBTREE(tiny, conv, kiln_nn_conv2d_layer),
              KILN_SUBTREE(tiny, fc, kiln_nn_dense_params));
KILN_TREE_DEF(tiny_in, KILN_SUBTREE(tiny_in, params, tiny), KILN_FIELD(tiny_in, x),
              KILN_FIELD(tiny_in, y));
KILN_TREE_DEF(tiny_out, KILN_FIELD(tiny_out, loss));

static kiln_status tiny_loss(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    (void)user;
    const tiny_in *in = in_;
    tiny_out *out = out_;
    kiln_nn_conv2d_params same = {.padding = {1, 1}};
    kiln_nn_pool2d_params pool = {.window = {2, 2}};
    kiln_tensor *h = kiln_nn_conv2d(cx, in->x, in->params.conv.w, in->params.conv.b, &same);
    h = kiln_nn_max_pool2d(cx, kiln_nn_gelu(cx, h, false), &pool);
    h = kiln_nn_dense(cx, kiln_nn_flatten(cx, h), in->params.fc.w, in->params.fc.b);
    out->loss = kiln_nn_softmax_cross_entropy(cx, h, in->y);
    return kiln_ctx_status(cx);
}

static double loss_at(kiln_ctx *cx, const tiny_in *in) {
    kiln_scope_begin(cx);
    tiny_out o;
    tiny_loss(cx, in, &o, NULL);
    double v = kiln_tensor_item(cx, o.loss, 0);
    kiln_scope_end(cx);
    return v;
}

/* t with element i changed by d (a new f64 tensor). */
static kiln_tensor *nudge(kiln_ctx *cx, kiln_tensor *t, int64_t i, double d) {
    int64_t n = kiln_tensor_numel(t);
    double *v = malloc((size_t)n * sizeof *v);
    kiln_tensor_to_host(cx, t, v, (size_t)n * sizeof *v);
    v[i] += d;
    kiln_tensor *r =
        kiln_tensor_from_host(cx, KILN_F64, *kiln_tensor_shape(t), v, (size_t)n * sizeof *v);
    free(v);
    return r;
}

Test(nn_train, cnn_gradients_match_finite_differences) {
    kiln_ctx *cx = test_ctx();
    kiln_key k = kiln_key_from_seed(21);
    tiny_in in = {
        .params = {.conv = {kiln_nn_init(cx, KILN_NN_INIT_HE_NORMAL, kiln_key_fold_in(k, 0),
                                         KILN_F64, KILN_SHAPE(2, 1, 3, 3), 0),
                            kiln_nn_init(cx, KILN_NN_INIT_NORMAL, kiln_key_fold_in(k, 1), KILN_F64,
                                         KILN_SHAPE(2), 0.1)},
                   .fc = {kiln_nn_init(cx, KILN_NN_INIT_GLOROT_NORMAL, kiln_key_fold_in(k, 2),
                                       KILN_F64, KILN_SHAPE(8, 3), 0),
                          kiln_nn_init(cx, KILN_NN_INIT_NORMAL, kiln_key_fold_in(k, 3), KILN_F64,
                                       KILN_SHAPE(3), 0.1)}},
        .x = kiln_random_normal(cx, kiln_key_fold_in(k, 4), KILN_F64, KILN_SHAPE(2, 1, 4, 4)),
        .y = ti32(cx, KILN_SHAPE(2), (const int32_t[]){2, 0})};
    expect_ok(cx);
    tiny_out out = {0};
    tiny_in grads;
    memset(&grads, 0, sizeof grads);
    kiln_grad_options o = kiln_grad_options_default();
    o.wrt_paths = (const char *[]){"params"};
    o.n_wrt_paths = 1;
    cr_assert_eq(kiln_value_and_grad_tree(cx, tiny_loss, NULL, &kiln_tree_def_tiny_in, &in,
                                          &kiln_tree_def_tiny_out, &out, &o, &grads),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_null(grads.x);
    cr_assert(fabs(kiln_tensor_item(cx, out.loss, 0) - loss_at(cx, &in)) < 1e-12);
    kiln_tensor **leaf[4] = {&in.params.conv.w, &in.params.conv.b, &in.params.fc.w,
                             &in.params.fc.b};
    kiln_tensor *g[4] = {grads.params.conv.w, grads.params.conv.b, grads.params.fc.w,
                         grads.params.fc.b};
    const double h = 1e-6;
    for (int l = 0; l < 4; l++) {
        kiln_tensor *orig = *leaf[l];
        for (int64_t i = 0; i < kiln_tensor_numel(orig); i++) {
            *leaf[l] = nudge(cx, orig, i, h);
            double up = loss_at(cx, &in);
            *leaf[l] = nudge(cx, orig, i, -h);
            double down = loss_at(cx, &in);
            *leaf[l] = orig;
            double fd = (up - down) / (2 * h), ad = kiln_tensor_item(cx, g[l], i);
            cr_assert(fabs(fd - ad) < 1e-6 + 1e-5 * fabs(fd), "leaf %d element %lld: %g vs %g", l,
                      (long long)i, ad, fd);
        }
    }
    kiln_ctx_release(cx);
}

/* A jitted step (MLP, SGD with momentum) against the same function called eagerly. */
typedef struct state {
    kiln_nn_mlp params, mu;
    kiln_tensor *step;
} state;
typedef struct step_in {
    state s;
    kiln_tensor *x, *y;
} step_in;
typedef struct step_out {
    state s;
    kiln_tensor *loss;
} step_out;
typedef struct loss_in {
    kiln_nn_mlp params;
    kiln_tensor *x, *y;
} loss_in;

static kiln_tree_def state_def, step_in_def, step_out_def, loss_in_def;
static kiln_tree_field state_f[3], step_in_f[3], step_out_f[2], loss_in_f[3];

/* The MLP's descriptor comes from the library at run time, so these are built by hand. */
static void make_defs(void) {
    const kiln_tree_def *mlp = kiln_nn_mlp_def(2);
#define SUB(T, m, d)              \
    {.name = #m,                  \
     .kind = KILN_TREE_SUBTREE,   \
     .offset = offsetof(T, m),    \
     .size = sizeof(((T *)0)->m), \
     .def = (d)}
#define TEN(T, m)                                                       \
    {                                                                   \
        .name = #m, .kind = KILN_TREE_TENSOR, .offset = offsetof(T, m), \
        .size = sizeof(kiln_tensor *)                                   \
    }
    state_f[0] = (kiln_tree_field)SUB(state, params, mlp);
    state_f[1] = (kiln_tree_field)SUB(state, mu, mlp);
    state_f[2] = (kiln_tree_field)TEN(state, step);
    state_def = (kiln_tree_def){"state", sizeof(state), state_f, 3};
    step_in_f[0] = (kiln_tree_field)SUB(step_in, s, &state_def);
    step_in_f[1] = (kiln_tree_field)TEN(step_in, x);
    step_in_f[2] = (kiln_tree_field)TEN(step_in, y);
    step_in_def = (kiln_tree_def){"step_in", sizeof(step_in), step_in_f, 3};
    step_out_f[0] = (kiln_tree_field)SUB(step_out, s, &state_def);
    step_out_f[1] = (kiln_tree_field)TEN(step_out, loss);
    step_out_def = (kiln_tree_def){"step_out", sizeof(step_out), step_out_f, 2};
    loss_in_f[0] = (kiln_tree_field)SUB(loss_in, params, mlp);
    loss_in_f[1] = (kiln_tree_field)TEN(loss_in, x);
    loss_in_f[2] = (kiln_tree_field)TEN(loss_in, y);
    loss_in_def = (kiln_tree_def){"loss_in", sizeof(loss_in), loss_in_f, 3};
#undef SUB
#undef TEN
}

static kiln_status mlp_loss(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    (void)user;
    const loss_in *in = in_;
    tiny_out *out = out_;
    out->loss = kiln_nn_mse(cx, kiln_nn_mlp_forward(cx, &in->params, in->x), in->y);
    return kiln_ctx_status(cx);
}

static kiln_status train_step(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    const step_in *in = in_;
    step_out *out = out_;
    loss_in li = {in->s.params, in->x, in->y}, g;
    memset(&g, 0, sizeof g);
    tiny_out lo = {0};
    kiln_grad_options o = kiln_grad_options_default();
    o.wrt_paths = (const char *[]){"params"};
    o.n_wrt_paths = 1;
    if (kiln_value_and_grad_tree(cx, mlp_loss, NULL, &loss_in_def, &li, &kiln_tree_def_tiny_out,
                                 &lo, &o, &g) != KILN_OK)
        return kiln_ctx_status(cx);
    out->loss = lo.loss;
    return kiln_nn_optimizer_update(cx, user, kiln_nn_mlp_def(2), &in->s.params, &g.params,
                                    in->s.step, &in->s.mu, NULL, &out->s.params, &out->s.step,
                                    &out->s.mu, NULL);
}

Test(nn_train, a_jitted_step_equals_the_eager_step_and_learns) {
    make_defs();
    kiln_ctx *cx = test_ctx();
    kiln_nn_optimizer opt = kiln_nn_sgd(0.05, 0.9, 0);
    step_in in;
    memset(&in, 0, sizeof in);
    kiln_nn_mlp_create(cx, (const int64_t[]){4, 16, 1}, 3, kiln_key_from_seed(30), &in.s.params);
    kiln_nn_optimizer_init(cx, &opt, kiln_nn_mlp_def(2), &in.s.params, &in.s.step, &in.s.mu, NULL);
    /* y = sum of x's squares: something an MLP fits quickly. */
    in.x = kiln_random_normal(cx, kiln_key_from_seed(31), KILN_F32, KILN_SHAPE(32, 4));
    in.y = kiln_sum(cx, kiln_multiply(cx, in.x, in.x), KILN_DIMS(1), true);
    expect_ok(cx);
    step_out eager, compiled;
    train_step(cx, &in, &eager, &opt);
    expect_ok(cx);
    kiln_jit_options jo = kiln_jit_options_default();
    jo.donate_paths = (const char *[]){"s"};
    jo.n_donate_paths = 1;
    kiln_jit *f;
    cr_assert_eq(kiln_jit_create_tree(cx, train_step, &opt, &step_in_def, &step_out_def, &jo, &f),
                 KILN_OK);
    kiln_jit_call(cx, f, &in, &compiled);
    expect_ok(cx);
    double ref[64];
    for (int i = 0; i < 64; i++)
        ref[i] = kiln_tensor_item(cx, eager.s.params.layers[0].w, i);
    expect_close(cx, compiled.s.params.layers[0].w, KILN_SHAPE(4, 16), ref, 1e-6, 1e-5);
    double first = kiln_tensor_item(cx, compiled.loss, 0), last = first;
    for (int i = 0; i < 60; i++) {
        in.s = compiled.s;
        kiln_jit_call(cx, f, &in, &compiled);
        last = kiln_tensor_item(cx, compiled.loss, 0);
    }
    expect_ok(cx);
    cr_assert(last < 0.5 * first, "loss %g -> %g", first, last);
    kiln_jit_stats stats;
    kiln_jit_stats_get(cx, f, &stats);
    cr_assert_eq(stats.compiles, 1, "every step reuses one executable");
    kiln_jit_release(f);
    kiln_ctx_release(cx);
}

/* Every other layer in one f64 loss, differentiated and checked by finite differences. */
typedef struct mix {
    kiln_tensor *x, *gamma, *beta, *table, *w;
} mix;
KILN_TREE_DEF(mix, KILN_FIELD(mix, x), KILN_FIELD(mix, gamma), KILN_FIELD(mix, beta),
              KILN_FIELD(mix, table), KILN_FIELD(mix, w));

static kiln_status mix_loss(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    kiln_tensor *const *aux = user; /* running mean, running var, ids, onehot targets, key */
    const mix *in = in_;
    tiny_out *out = out_;
    kiln_nn_pool2d_params avg = {.window = {3, 3}, .stride = {1, 1}, .padding = {1, 1}};
    kiln_tensor *h = kiln_nn_batch_norm(cx, in->x, in->gamma, in->beta, aux[0], aux[1], true, 0.1,
                                        1e-5, NULL, NULL);
    h = kiln_nn_avg_pool2d(cx, kiln_nn_silu(cx, h), &avg);
    h = kiln_nn_layer_norm(cx, kiln_nn_flatten(cx, h), NULL, NULL, 1e-5);
    h = kiln_nn_dropout(cx, kiln_nn_gelu(cx, h, true), 0.25, aux[4], NULL);
    kiln_tensor *logits = kiln_nn_dense(cx, kiln_nn_tanh(cx, h), in->w, NULL);
    kiln_tensor *e = kiln_nn_sigmoid(cx, kiln_nn_embedding(cx, in->table, aux[2]));
    out->loss = kiln_add(cx, kiln_nn_softmax_cross_entropy_onehot(cx, logits, aux[3]),
                         kiln_nn_mse(cx, e, kiln_full(cx, KILN_F64, *kiln_tensor_shape(e), 0.5)));
    return kiln_ctx_status(cx);
}

static double mix_at(kiln_ctx *cx, const mix *m, kiln_tensor *const *aux) {
    kiln_scope_begin(cx);
    tiny_out o;
    mix_loss(cx, m, &o, (void *)aux);
    double v = kiln_tensor_item(cx, o.loss, 0);
    kiln_scope_end(cx);
    return v;
}

Test(nn_train, every_layer_is_differentiable) {
    kiln_ctx *cx = test_ctx();
    kiln_key k = kiln_key_from_seed(40);
    mix m = {kiln_random_normal(cx, kiln_key_fold_in(k, 0), KILN_F64, KILN_SHAPE(2, 2, 4, 4)),
             kiln_random_normal(cx, kiln_key_fold_in(k, 1), KILN_F64, KILN_SHAPE(2)),
             kiln_random_normal(cx, kiln_key_fold_in(k, 2), KILN_F64, KILN_SHAPE(2)),
             kiln_random_normal(cx, kiln_key_fold_in(k, 3), KILN_F64, KILN_SHAPE(5, 3)),
             kiln_random_normal(cx, kiln_key_fold_in(k, 4), KILN_F64, KILN_SHAPE(32, 3))};
    kiln_tensor *aux[5] = {
        kiln_zeros(cx, KILN_F64, KILN_SHAPE(2)), kiln_ones(cx, KILN_F64, KILN_SHAPE(2)),
        ti32(cx, KILN_SHAPE(3), (const int32_t[]){4, 0, 4}),
        kiln_one_hot(cx, ti32(cx, KILN_SHAPE(2), (const int32_t[]){1, 2}), 3, KILN_F64),
        kiln_nn_key_tensor(cx, kiln_key_fold_in(k, 5))};
    expect_ok(cx);
    tiny_out out = {0};
    mix g;
    memset(&g, 0, sizeof g);
    cr_assert_eq(kiln_value_and_grad_tree(cx, mix_loss, aux, &kiln_tree_def_mix, &m,
                                          &kiln_tree_def_tiny_out, &out, NULL, &g),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor **leaf[5] = {&m.x, &m.gamma, &m.beta, &m.table, &m.w};
    kiln_tensor *gl[5] = {g.x, g.gamma, g.beta, g.table, g.w};
    const double h = 1e-6;
    for (int l = 0; l < 5; l++) {
        kiln_tensor *orig = *leaf[l];
        cr_assert_not_null(gl[l]);
        for (int64_t i = 0; i < kiln_tensor_numel(orig); i++) {
            *leaf[l] = nudge(cx, orig, i, h);
            double up = mix_at(cx, &m, aux);
            *leaf[l] = nudge(cx, orig, i, -h);
            double down = mix_at(cx, &m, aux);
            *leaf[l] = orig;
            double fd = (up - down) / (2 * h), ad = kiln_tensor_item(cx, gl[l], i);
            cr_assert(fabs(fd - ad) < 1e-6 + 1e-5 * fabs(fd), "leaf %d element %lld: %g vs %g", l,
                      (long long)i, ad, fd);
        }
    }
    kiln_ctx_release(cx);
}
