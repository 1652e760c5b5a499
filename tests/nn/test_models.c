/* SPDX-License-Identifier: Apache-2.0 */
/* Models: descriptors, shapes, MLP against a hand computation, VGG eager vs compiled. */
#include <stddef.h>

#include "nn_test.h"

Test(nn_models, descriptors_list_the_used_layers) {
    kiln_ctx *cx = test_ctx();
    const int32_t convs[4] = {8, 10, 13, 16}, depths[4] = {11, 13, 16, 19};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(kiln_nn_vgg_n_convs(depths[i]), convs[i]);
        const kiln_tree_def *d = kiln_nn_vgg_def(depths[i], false);
        cr_assert_eq(kiln_tree_check(cx, d), KILN_OK, "%s", kiln_ctx_error_message(cx));
        cr_assert_eq(kiln_tree_leaf_count(d), 2 * convs[i] + 6);
        cr_assert_eq(kiln_tree_static_count(d), 2);
        d = kiln_nn_vgg_def(depths[i], true);
        cr_assert_eq(kiln_tree_check(cx, d), KILN_OK);
        cr_assert_eq(kiln_tree_leaf_count(d), 4 * convs[i] + 6);
        cr_assert_eq(kiln_tree_leaf_count(kiln_nn_vgg_state_def(depths[i])), 2 * convs[i]);
    }
    char path[64];
    kiln_tree_leaf_path(kiln_nn_vgg_def(11, true), 16, path, sizeof path);
    cr_assert_str_eq(path, "bns[0].scale");
    cr_assert_null(kiln_nn_vgg_def(12, false));
    cr_assert_eq(kiln_nn_vgg_n_convs(12), -1);
    cr_assert_null(kiln_nn_mlp_def(0));
    cr_assert_null(kiln_nn_mlp_def(KILN_NN_MLP_MAX_LAYERS + 1));
    cr_assert_eq(kiln_tree_leaf_count(kiln_nn_mlp_def(3)), 6);
    kiln_tree_leaf_path(kiln_nn_mlp_def(3), 5, path, sizeof path);
    cr_assert_str_eq(path, "layers[2].b");
    cr_assert_eq(kiln_tree_leaf_count(&kiln_tree_def_kiln_nn_cnn), 8);
    kiln_ctx_release(cx);
}

Test(nn_models, mlp_forward_is_dense_relu_dense) {
    kiln_ctx *cx = test_ctx();
    kiln_nn_mlp m;
    cr_assert_eq(kiln_nn_mlp_create(cx, (const int64_t[]){3, 4, 2}, 3, kiln_key_from_seed(1), &m),
                 KILN_OK);
    cr_assert_eq(m.n_layers, 2);
    float x[2 * 3];
    fill(x, 6, 20);
    double ref[4];
    for (int r = 0; r < 2; r++) {
        double h[4];
        for (int j = 0; j < 4; j++) {
            h[j] = kiln_tensor_item(cx, m.layers[0].b, j);
            for (int k = 0; k < 3; k++)
                h[j] += x[r * 3 + k] * kiln_tensor_item(cx, m.layers[0].w, k * 4 + j);
            h[j] = fmax(h[j], 0);
        }
        for (int j = 0; j < 2; j++) {
            ref[r * 2 + j] = kiln_tensor_item(cx, m.layers[1].b, j);
            for (int k = 0; k < 4; k++)
                ref[r * 2 + j] += h[k] * kiln_tensor_item(cx, m.layers[1].w, k * 2 + j);
        }
    }
    expect_close(cx, kiln_nn_mlp_forward(cx, &m, tf32(cx, KILN_SHAPE(2, 3), x)), KILN_SHAPE(2, 2),
                 ref, 1e-6, 1e-5);
    kiln_ctx_release(cx);
}

Test(nn_models, cnn_shapes) {
    kiln_ctx *cx = test_ctx();
    kiln_nn_cnn_config c = kiln_nn_cnn_config_digits();
    kiln_nn_cnn p;
    cr_assert_eq(kiln_nn_cnn_create(cx, &c, kiln_key_from_seed(2), &p), KILN_OK);
    cr_assert_eq(kiln_tensor_dim(p.fc1.w, 0), c.channels2 * 16);
    kiln_tensor *y = kiln_nn_cnn_forward(cx, &p, kiln_ones(cx, KILN_F32, KILN_SHAPE(5, 1, 8, 8)));
    expect_ok(cx);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(y), &KILN_SHAPE(5, 10)));
    kiln_ctx_release(cx);
}

typedef struct vgg_in {
    kiln_nn_vgg params;
    kiln_tensor *x;
} vgg_in;
typedef struct vgg_out {
    kiln_tensor *logits;
} vgg_out;
KILN_TREE_DEF(vgg_out, KILN_FIELD(vgg_out, logits));

static kiln_status vgg_fn(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    (void)user;
    const vgg_in *in = in_;
    vgg_out *out = out_;
    out->logits = kiln_nn_vgg_forward(cx, &in->params, NULL, in->x, false, NULL, NULL);
    return kiln_ctx_status(cx);
}

/* One depth: the forward pass run eagerly, then through a jit, at [1,3,32,32]. */
static void vgg_eager_vs_compiled(int32_t depth) {
    kiln_ctx *cx = test_ctx();
    kiln_nn_vgg_config c = kiln_nn_vgg_config_imagenet(depth, false);
    c.height = c.width = 32;
    c.hidden = 32;
    c.classes = 10;
    c.width_divisor = 8;
    vgg_in in;
    cr_assert_eq(kiln_nn_vgg_create(cx, &c, kiln_key_from_seed(4), &in.params, NULL), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_dim(in.params.fcs[0].w, 0), 512 / 8);
    cr_assert_not_null(in.params.convs[kiln_nn_vgg_n_convs(depth) - 1].w);
    if (kiln_nn_vgg_n_convs(depth) < KILN_NN_VGG_MAX_CONVS)
        cr_assert_null(in.params.convs[kiln_nn_vgg_n_convs(depth)].w);
    in.x = kiln_random_normal(cx, kiln_key_from_seed(5), KILN_F32, KILN_SHAPE(1, 3, 32, 32));
    vgg_out eager;
    vgg_fn(cx, &in, &eager, NULL);
    expect_ok(cx);
    /* A descriptor for vgg_in around the library's runtime VGG descriptor. */
    const kiln_tree_field fields[2] = {{.name = "params",
                                        .kind = KILN_TREE_SUBTREE,
                                        .offset = offsetof(vgg_in, params),
                                        .size = sizeof(kiln_nn_vgg),
                                        .def = kiln_nn_vgg_def(depth, false)},
                                       {.name = "x",
                                        .kind = KILN_TREE_TENSOR,
                                        .offset = offsetof(vgg_in, x),
                                        .size = sizeof(kiln_tensor *)}};
    const kiln_tree_def in_def = {
        .name = "vgg_in", .size = sizeof(vgg_in), .fields = fields, .n_fields = 2};
    kiln_jit *f;
    cr_assert_eq(kiln_jit_create_tree(cx, vgg_fn, NULL, &in_def, &kiln_tree_def_vgg_out, NULL, &f),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    vgg_out compiled;
    kiln_jit_call(cx, f, &in, &compiled);
    expect_ok(cx);
    double ref[10], scale = 0;
    for (int i = 0; i < 10; i++) {
        ref[i] = kiln_tensor_item(cx, eager.logits, i);
        scale = fmax(scale, fabs(ref[i]));
    }
    cr_assert(scale > 0);
    expect_close(cx, compiled.logits, KILN_SHAPE(1, 10), ref, 1e-4 * scale, 1e-4);
    kiln_jit_release(f);
    kiln_ctx_release(cx);
}

Test(nn_models, vgg11_forward_eager_equals_compiled) { vgg_eager_vs_compiled(11); }
Test(nn_models, vgg13_16_19_forward_eager_equals_compiled) {
    vgg_eager_vs_compiled(13);
    vgg_eager_vs_compiled(16);
    vgg_eager_vs_compiled(19);
}

Test(nn_models, vgg_with_batch_norm_updates_its_running_statistics) {
    kiln_ctx *cx = test_ctx();
    kiln_nn_vgg_config c = kiln_nn_vgg_config_imagenet(11, true);
    c.height = c.width = 32;
    c.hidden = 16;
    c.classes = 3;
    c.width_divisor = 16;
    kiln_nn_vgg p;
    kiln_nn_vgg_state st, ns;
    cr_assert_eq(kiln_nn_vgg_create(cx, &c, kiln_key_from_seed(6), &p, &st), KILN_OK);
    kiln_tensor *x =
        kiln_random_normal(cx, kiln_key_from_seed(7), KILN_F32, KILN_SHAPE(2, 3, 32, 32));
    kiln_tensor *key = kiln_nn_key_tensor(cx, kiln_key_from_seed(8));
    kiln_tensor *y = kiln_nn_vgg_forward(cx, &p, &st, x, true, key, &ns);
    expect_ok(cx);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(y), &KILN_SHAPE(2, 3)));
    /* The first layer's new running mean: 0.9 * 0 + 0.1 * the batch mean of conv0(x). */
    kiln_nn_conv2d_params same = {.padding = {1, 1}};
    kiln_tensor *c0 = kiln_nn_conv2d(cx, x, p.convs[0].w, p.convs[0].b, &same);
    kiln_tensor *bm = kiln_mean(cx, c0, KILN_DIMS(0, 2, 3), false);
    int64_t ch = kiln_tensor_dim(c0, 1);
    double ref[64];
    for (int64_t i = 0; i < ch; i++)
        ref[i] = 0.1 * kiln_tensor_item(cx, bm, i);
    expect_close(cx, ns.bns[0].mean, KILN_SHAPE(ch), ref, 1e-6, 1e-5);
    /* Inference uses the running statistics and leaves out_state alone. */
    kiln_tensor *yi = kiln_nn_vgg_forward(cx, &p, &ns, x, false, NULL, NULL);
    expect_ok(cx);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(yi), &KILN_SHAPE(2, 3)));
    kiln_ctx_release(cx);
}
