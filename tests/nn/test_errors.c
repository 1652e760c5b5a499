/* SPDX-License-Identifier: Apache-2.0 */
/* Every argument check: the canonical status and a message naming the function and the
 * argument, never a crash. */
#include "nn_test.h"

#define BAD(call, fragment)                                  \
    do {                                                     \
        (void)(call);                                        \
        expect_error(cx, KILN_INVALID_ARGUMENT, (fragment)); \
    } while (0)

Test(nn_errors, layers) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x4 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(1, 4, 5, 5));
    kiln_tensor *x2 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2, 3));
    kiln_tensor *xi = kiln_zeros(cx, KILN_I32, KILN_SHAPE(2, 3));
    kiln_tensor *s = kiln_scalar(cx, 1, KILN_F32);
    kiln_tensor *w34 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(3, 4));
    kiln_tensor *v3 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(3)),
                *v4 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(4));
    kiln_tensor *k = kiln_zeros(cx, KILN_F32, KILN_SHAPE(6, 2, 3, 3));
    expect_ok(cx);

    BAD(kiln_nn_dense(cx, NULL, w34, NULL), "kiln_nn_dense: x is NULL");
    BAD(kiln_nn_dense(cx, xi, w34, NULL), "kiln_nn_dense: x has dtype i32");
    BAD(kiln_nn_dense(cx, x2, kiln_zeros(cx, KILN_F64, KILN_SHAPE(3, 4)), NULL), "w has dtype f64");
    BAD(kiln_nn_dense(cx, s, w34, NULL), "x is rank 0");
    BAD(kiln_nn_dense(cx, x2, kiln_zeros(cx, KILN_F32, KILN_SHAPE(2, 4)), NULL),
        "w has shape [2,4]; expected [3,N]");
    BAD(kiln_nn_dense(cx, x2, w34, v3), "b has shape [3]; expected [4]");
    /* An error already recorded is kept; NULL propagates. */
    kiln_ctx_set_error(cx, KILN_CANCELLED, "first");
    cr_assert_null(kiln_nn_dense(cx, NULL, w34, NULL));
    expect_error(cx, KILN_CANCELLED, "first");

    kiln_nn_conv2d_params g2 = {.groups = 2};
    BAD(kiln_nn_conv2d(cx, x2, k, NULL, &g2), "kiln_nn_conv2d: x has shape [2,3]; expected rank 4");
    BAD(kiln_nn_conv2d(cx, x4, w34, NULL, &g2), "w has shape [3,4]; expected rank 4");
    BAD(kiln_nn_conv2d(cx, x4, k, NULL, &(kiln_nn_conv2d_params){.groups = 2, .padding = {-1, 0}}),
        "padding[0] = -1");
    BAD(kiln_nn_conv2d(cx, x4, k, NULL, &(kiln_nn_conv2d_params){.groups = -2}), "groups = -2");
    BAD(kiln_nn_conv2d(cx, x4, k, NULL, NULL), "expected [C_out, 4 / 1 groups, KH, KW]");
    BAD(kiln_nn_conv2d(cx, x4, k, NULL, &(kiln_nn_conv2d_params){.groups = 2, .dilation = {3, 1}}),
        "the kernel spans 7 elements along spatial dimension 0 but the padded input has 5");
    BAD(kiln_nn_conv2d(cx, x4, k, v4, &g2), "b has shape [4]; expected [6] (w's C_out)");

    kiln_nn_pool2d_params p2 = {.window = {2, 2}};
    BAD(kiln_nn_max_pool2d(cx, NULL, &p2), "kiln_nn_max_pool2d: x is NULL");
    BAD(kiln_nn_max_pool2d(cx, x4, NULL), "kiln_nn_max_pool2d: params is NULL");
    BAD(kiln_nn_avg_pool2d(cx, x2, &p2), "kiln_nn_avg_pool2d: x has shape [2,3]; expected rank 4");
    BAD(kiln_nn_avg_pool2d(cx, kiln_zeros(cx, KILN_I32, KILN_SHAPE(1, 1, 2, 2)), &p2),
        "x has dtype i32");
    BAD(kiln_nn_max_pool2d(cx, x4, &(kiln_nn_pool2d_params){.window = {0, 2}}), "window[0] = 0");
    BAD(kiln_nn_max_pool2d(cx, x4, &(kiln_nn_pool2d_params){.window = {2, 2}, .padding = {0, 2}}),
        "padding[1] = 2");
    BAD(kiln_nn_max_pool2d(cx, x4, &(kiln_nn_pool2d_params){.window = {2, 2}, .stride = {1, -1}}),
        "stride[1] = -1");
    BAD(kiln_nn_max_pool2d(cx, x4, &(kiln_nn_pool2d_params){.window = {6, 2}}),
        "the window (6) is larger than padded spatial dimension 0");

    BAD(kiln_nn_relu(cx, xi), "kiln_nn_relu: x has dtype i32");
    BAD(kiln_nn_silu(cx, NULL), "kiln_nn_silu: x is NULL");
    BAD(kiln_nn_tanh(cx, xi), "kiln_nn_tanh: x has dtype i32");
    BAD(kiln_nn_sigmoid(cx, xi), "kiln_nn_sigmoid: x has dtype i32");
    BAD(kiln_nn_gelu(cx, xi, true), "kiln_nn_gelu: x has dtype i32");
    BAD(kiln_nn_softmax(cx, xi, 0), "kiln_nn_softmax: x has dtype i32");
    BAD(kiln_nn_log_softmax(cx, xi, 0), "kiln_nn_log_softmax: x has dtype i32");

    BAD(kiln_nn_layer_norm(cx, s, NULL, NULL, 1e-5), "kiln_nn_layer_norm: x is rank 0");
    BAD(kiln_nn_layer_norm(cx, x2, v4, NULL, 1e-5), "gamma has shape [4]; expected [3]");
    BAD(kiln_nn_layer_norm(cx, x2, NULL, v4, 1e-5), "beta has shape [4]; expected [3]");
    BAD(kiln_nn_layer_norm(cx, x2, NULL, NULL, 0), "eps = 0");

    kiln_tensor *m3 = v3, *o1 = x2, *o2 = x2;
    BAD(kiln_nn_batch_norm(cx, v3, NULL, NULL, m3, m3, true, 0.1, 1e-5, &o1, &o2),
        "kiln_nn_batch_norm: x has shape [3]; expected [N, C, ...]");
    cr_assert(o1 == NULL && o2 == NULL, "outputs are cleared on error");
    BAD(kiln_nn_batch_norm(cx, x2, v4, NULL, m3, m3, true, 0.1, 1e-5, NULL, NULL),
        "gamma has shape [4]; expected [3]");
    BAD(kiln_nn_batch_norm(cx, x2, NULL, v4, m3, m3, true, 0.1, 1e-5, NULL, NULL),
        "beta has shape");
    BAD(kiln_nn_batch_norm(cx, x2, NULL, NULL, NULL, m3, true, 0.1, 1e-5, NULL, NULL),
        "running_mean is NULL");
    BAD(kiln_nn_batch_norm(cx, x2, NULL, NULL, m3, v4, true, 0.1, 1e-5, NULL, NULL),
        "running_var has shape [4]");
    BAD(kiln_nn_batch_norm(cx, x2, NULL, NULL, m3, m3, true, 1.5, 1e-5, NULL, NULL),
        "momentum = 1.5");
    BAD(kiln_nn_batch_norm(cx, x2, NULL, NULL, m3, m3, true, 0.1, -1, NULL, NULL), "eps = -1");

    kiln_tensor *key = kiln_nn_key_tensor(cx, kiln_key_from_seed(0));
    BAD(kiln_nn_dropout(cx, x2, 0.5, NULL, NULL), "kiln_nn_dropout: key is NULL");
    BAD(kiln_nn_dropout(cx, x2, 0.5, v3, NULL), "key is f32[3]; expected ui64[2]");
    BAD(kiln_nn_dropout(cx, x2, 1.0, key, NULL), "rate = 1");
    BAD(kiln_nn_dropout(cx, xi, 0.5, key, NULL), "x has dtype i32");
    BAD(kiln_nn_flatten(cx, s), "kiln_nn_flatten: x is rank 0");
    BAD(kiln_nn_embedding(cx, v3, xi), "kiln_nn_embedding: table has shape [3]");
    BAD(kiln_nn_embedding(cx, x2, x2), "ids has dtype f32");
    BAD(kiln_nn_embedding(cx, x2, NULL), "ids is NULL");
    kiln_ctx_release(cx);
}

Test(nn_errors, losses_and_initializers) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *logits = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2, 3));
    kiln_tensor *labels = kiln_zeros(cx, KILN_I32, KILN_SHAPE(2));
    BAD(kiln_nn_softmax_cross_entropy(cx, NULL, labels),
        "kiln_nn_softmax_cross_entropy: logits is NULL");
    BAD(kiln_nn_softmax_cross_entropy(cx, labels, labels),
        "logits is i32[2]; expected a float [N, K]");
    BAD(kiln_nn_softmax_cross_entropy(cx, logits, kiln_zeros(cx, KILN_I32, KILN_SHAPE(3))),
        "labels is i32[3]; expected an integer [2]");
    BAD(kiln_nn_softmax_cross_entropy(cx, logits, kiln_zeros(cx, KILN_F32, KILN_SHAPE(2))),
        "labels is f32[2]");
    BAD(kiln_nn_softmax_cross_entropy_onehot(cx, logits, labels),
        "targets is i32[2]; expected logits' f32[2,3]");
    BAD(kiln_nn_softmax_cross_entropy_onehot(cx, labels, logits), "logits is i32[2]");
    BAD(kiln_nn_softmax_cross_entropy_onehot(cx, logits, NULL), "targets is NULL");
    BAD(kiln_nn_mse(cx, labels, labels), "kiln_nn_mse: pred has dtype i32");
    BAD(kiln_nn_mse(cx, logits, kiln_zeros(cx, KILN_F32, KILN_SHAPE(3, 2))),
        "target is f32[3,2]; expected pred's f32[2,3]");
    BAD(kiln_nn_mse(cx, NULL, logits), "kiln_nn_mse: pred is NULL");
    BAD(kiln_nn_accuracy(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(0, 3)),
                         kiln_zeros(cx, KILN_I32, KILN_SHAPE(0))),
        "logits has no rows or no classes");
    BAD(kiln_nn_accuracy(cx, logits, NULL), "kiln_nn_accuracy: labels is NULL");

    kiln_key key = kiln_key_from_seed(1);
    BAD(kiln_nn_init(cx, KILN_NN_INIT_HE_NORMAL, key, KILN_I32, KILN_SHAPE(2, 2), 0),
        "kiln_nn_init: dtype i32 is not a float dtype");
    BAD(kiln_nn_init(cx, KILN_NN_INIT_HE_NORMAL, key, KILN_DTYPE_COUNT, KILN_SHAPE(2, 2), 0),
        "(invalid)");
    BAD(kiln_nn_init(cx, KILN_NN_INIT_GLOROT_UNIFORM, key, KILN_F32, KILN_SHAPE(0, 4), 0),
        "shape [0,4] has a zero fan");
    BAD(kiln_nn_init(cx, KILN_NN_INIT_HE_UNIFORM, key, KILN_F32, KILN_SHAPE_SCALAR, 0), "zero fan");
    BAD(kiln_nn_init(cx, KILN_NN_INIT_NORMAL, key, KILN_F32, KILN_SHAPE(2), 0), "scale = 0");
    BAD(kiln_nn_init(cx, KILN_NN_INIT_UNIFORM, key, KILN_F32, KILN_SHAPE(2), INFINITY),
        "scale = inf");
    BAD(kiln_nn_init(cx, (kiln_nn_init_kind)99, key, KILN_F32, KILN_SHAPE(2), 1), "kind 99");
    BAD(kiln_nn_init(cx, KILN_NN_INIT_ZEROS, key, KILN_F32, (kiln_shape){.rank = -1}, 1),
        "shape is invalid");
    kiln_ctx_release(cx);
}

typedef struct one {
    kiln_tensor *w;
} one;
KILN_TREE_DEF(one, KILN_FIELD(one, w));

Test(nn_errors, optimizers) {
    kiln_ctx *cx = test_ctx();
    one p = {kiln_zeros(cx, KILN_F32, KILN_SHAPE(2))},
        g = {kiln_zeros(cx, KILN_F32, KILN_SHAPE(2))};
    one mu, nu, np;
    kiln_tensor *step = kiln_zeros(cx, KILN_I32, KILN_SHAPE_SCALAR), *ns;
    kiln_nn_optimizer adam = kiln_nn_adam(0.1), o;
#define OPT(field, value, fragment)                                                     \
    o = adam;                                                                           \
    o.field = value;                                                                    \
    cr_assert_eq(kiln_nn_optimizer_init(cx, &o, &kiln_tree_def_one, &p, &ns, &mu, &nu), \
                 KILN_INVALID_ARGUMENT);                                                \
    expect_error(cx, KILN_INVALID_ARGUMENT, fragment)
    OPT(kind, (kiln_nn_optimizer_kind)0, "opt->kind = 0");
    OPT(learning_rate, 0, "opt->learning_rate = 0");
    OPT(weight_decay, -1, "opt->weight_decay = -1");
    OPT(beta1, 1, "opt->beta1 = 1");
    OPT(beta2, -0.5, "opt->beta2 = -0.5");
    OPT(eps, 0, "opt->eps = 0");
    OPT(learning_rate_tensor, step, "opt->learning_rate_tensor is i32 with rank 0");
    o = kiln_nn_sgd(0.1, 1.0, 0);
    kiln_nn_optimizer_init(cx, &o, &kiln_tree_def_one, &p, &ns, &mu, &nu);
    expect_error(cx, KILN_INVALID_ARGUMENT, "opt->momentum = 1");
    kiln_nn_optimizer_init(cx, NULL, &kiln_tree_def_one, &p, &ns, &mu, &nu);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_nn_optimizer_init: opt is NULL");
    kiln_nn_optimizer_init(cx, &adam, NULL, &p, &ns, &mu, &nu);
    expect_error(cx, KILN_INVALID_ARGUMENT, "params_def is NULL");
    kiln_nn_optimizer_init(cx, &adam, &kiln_tree_def_one, &p, &ns, &mu, NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_nu is NULL");
    o = kiln_nn_sgd(0.1, 0.5, 0);
    kiln_nn_optimizer_init(cx, &o, &kiln_tree_def_one, &p, &ns, NULL, NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_mu is NULL");
    kiln_nn_optimizer_init(cx, &adam, &kiln_tree_def_one, &p, NULL, &mu, &nu);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_step is NULL");
    one holey = {NULL};
    kiln_nn_optimizer_init(cx, &adam, &kiln_tree_def_one, &holey, &ns, &mu, &nu);
    expect_error(cx, KILN_INVALID_ARGUMENT, "'w' is NULL");

    cr_assert_eq(kiln_nn_optimizer_init(cx, &adam, &kiln_tree_def_one, &p, &ns, &mu, &nu), KILN_OK);
    kiln_nn_optimizer_update(cx, &adam, &kiln_tree_def_one, &p, NULL, step, &mu, &nu, &np, &ns, &mu,
                             &nu);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_nn_optimizer_update: grads is NULL");
    kiln_nn_optimizer_update(cx, &adam, &kiln_tree_def_one, &p, &g, step, &mu, &nu, NULL, &ns, &mu,
                             &nu);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_params is NULL");
    kiln_nn_optimizer_update(cx, &adam, &kiln_tree_def_one, &p, &g, NULL, &mu, &nu, &np, &ns, &mu,
                             &nu);
    expect_error(cx, KILN_INVALID_ARGUMENT, "step is NULL");
    kiln_nn_optimizer_update(cx, &adam, &kiln_tree_def_one, &p, &g, g.w, &mu, &nu, &np, &ns, &mu,
                             &nu);
    expect_error(cx, KILN_INVALID_ARGUMENT, "step is f32[2]; expected a rank-0 integer");
    kiln_nn_optimizer_update(cx, &adam, &kiln_tree_def_one, &p, &g, step, NULL, &nu, &np, &ns, &mu,
                             &nu);
    expect_error(cx, KILN_INVALID_ARGUMENT, "mu is NULL");
    kiln_nn_optimizer_update(cx, &adam, &kiln_tree_def_one, &p, &g, step, &mu, &nu, &np, &ns, &mu,
                             NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_nu is NULL");
    one g3 = {kiln_zeros(cx, KILN_F32, KILN_SHAPE(3))};
    kiln_nn_optimizer_update(cx, &adam, &kiln_tree_def_one, &p, &g3, step, &mu, &nu, &np, &ns, &mu,
                             &nu);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "grads leaf 'w' is f32[3]; expected the parameter's f32[2]");
    one pi = {kiln_zeros(cx, KILN_I32, KILN_SHAPE(2))},
        gi = {kiln_zeros(cx, KILN_I32, KILN_SHAPE(2))};
    o = kiln_nn_sgd(0.1, 0, 0);
    kiln_nn_optimizer_update(cx, &o, &kiln_tree_def_one, &pi, &gi, step, NULL, NULL, &np, &ns, NULL,
                             NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "params leaf 'w' has dtype i32; expected a float dtype");
    kiln_ctx_release(cx);
}

Test(nn_errors, models) {
    kiln_ctx *cx = test_ctx();
    kiln_key key = kiln_key_from_seed(0);
    kiln_nn_mlp m;
    kiln_nn_mlp_create(cx, NULL, 2, key, &m);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_nn_mlp_create: sizes is NULL");
    kiln_nn_mlp_create(cx, (const int64_t[]){3}, 1, key, &m);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_sizes = 1; expected 2..9");
    kiln_nn_mlp_create(cx, (const int64_t[]){3, 0}, 2, key, &m);
    expect_error(cx, KILN_INVALID_ARGUMENT, "sizes[1] = 0");
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(1, 3));
    BAD(kiln_nn_mlp_forward(cx, NULL, x), "kiln_nn_mlp_forward: params is NULL");
    m.n_layers = 0;
    BAD(kiln_nn_mlp_forward(cx, &m, x), "params->n_layers = 0");

    kiln_nn_cnn c;
    kiln_nn_cnn_config cfg = kiln_nn_cnn_config_digits();
    kiln_nn_cnn_create(cx, NULL, key, &c);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_nn_cnn_create: config is NULL");
    cfg.height = 7;
    kiln_nn_cnn_create(cx, &cfg, key, &c);
    expect_error(cx, KILN_INVALID_ARGUMENT, "height 7");
    BAD(kiln_nn_cnn_forward(cx, NULL, x), "kiln_nn_cnn_forward: params is NULL");

    kiln_nn_vgg v;
    kiln_nn_vgg_state st;
    kiln_nn_vgg_config vc = kiln_nn_vgg_config_imagenet(12, false);
    kiln_nn_vgg_create(cx, &vc, key, &v, NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "config->depth = 12");
    vc = kiln_nn_vgg_config_imagenet(11, true);
    kiln_nn_vgg_create(cx, &vc, key, &v, NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_state is NULL");
    vc.height = 40;
    kiln_nn_vgg_create(cx, &vc, key, &v, &st);
    expect_error(cx, KILN_INVALID_ARGUMENT, "height 40");
    vc.height = 224;
    vc.width_divisor = 3;
    kiln_nn_vgg_create(cx, &vc, key, &v, &st);
    expect_error(cx, KILN_INVALID_ARGUMENT, "width_divisor 3");
    BAD(kiln_nn_vgg_forward(cx, NULL, NULL, x, false, NULL, NULL),
        "kiln_nn_vgg_forward: params is NULL");
    memset(&v, 0, sizeof v);
    v.depth = 13;
    v.batch_norm = true;
    BAD(kiln_nn_vgg_forward(cx, &v, NULL, x, false, NULL, NULL), "state is NULL");
    v.depth = 7;
    BAD(kiln_nn_vgg_forward(cx, &v, NULL, x, false, NULL, NULL), "params->depth = 7");
    kiln_ctx_release(cx);
}
