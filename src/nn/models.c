/* SPDX-License-Identifier: Apache-2.0 */
/* Models: MLP, the small CNN, VGG11/13/16/19 with and without batch norm. */
#include <stddef.h>
#include <string.h>

#include "nn_internal.h"

/* ---- descriptors of the variable-size models, built by hand (kiln/tree.h allows it): an
 * array member whose descriptor lists only its used prefix. */

/* The field of member S.m; a subtree array member of n elements of type T; a static int. */
#define FIELD(S, m, kind, size, n, def) {#m, kind, offsetof(S, m), size, (n), def}
#define SUBTREES(S, m, T, n) FIELD(S, m, KILN_TREE_SUBTREE, sizeof(T), n, &kiln_tree_def_##T)
#define STATIC_INT(S, m) FIELD(S, m, KILN_TREE_STATIC_INT, sizeof(int32_t), 0, NULL)
#define MLP_LAYERS(n) SUBTREES(kiln_nn_mlp, layers, kiln_nn_dense_params, n)
#define MLP_FIELDS(n) {MLP_LAYERS(n), STATIC_INT(kiln_nn_mlp, n_layers)}
static const kiln_tree_field mlp_fields[KILN_NN_MLP_MAX_LAYERS][2] = {
    MLP_FIELDS(1), MLP_FIELDS(2), MLP_FIELDS(3), MLP_FIELDS(4),
    MLP_FIELDS(5), MLP_FIELDS(6), MLP_FIELDS(7), MLP_FIELDS(8)};
_Static_assert(KILN_NN_MLP_MAX_LAYERS == 8, "mlp_fields lists one entry per layer count");
#define MLP_DEF(n) {"kiln_nn_mlp", sizeof(kiln_nn_mlp), mlp_fields[(n)-1], 2}
static const kiln_tree_def mlp_defs[KILN_NN_MLP_MAX_LAYERS] = {
    MLP_DEF(1), MLP_DEF(2), MLP_DEF(3), MLP_DEF(4), MLP_DEF(5), MLP_DEF(6), MLP_DEF(7), MLP_DEF(8)};

const kiln_tree_def *kiln_nn_mlp_def(int32_t n_layers) {
    return n_layers >= 1 && n_layers <= KILN_NN_MLP_MAX_LAYERS ? &mlp_defs[n_layers - 1] : NULL;
}

#define VGG_CONVS(n) SUBTREES(kiln_nn_vgg, convs, kiln_nn_conv2d_layer, n)
#define VGG_BNS(n) SUBTREES(kiln_nn_vgg, bns, kiln_nn_batch_norm_params, n)
#define VGG_FCS SUBTREES(kiln_nn_vgg, fcs, kiln_nn_dense_params, 3)
#define VGG_BATCH_NORM FIELD(kiln_nn_vgg, batch_norm, KILN_TREE_STATIC_BOOL, sizeof(bool), 0, NULL)
#define VGG_TAIL VGG_FCS, STATIC_INT(kiln_nn_vgg, depth), VGG_BATCH_NORM
#define VGG_STATE(n) SUBTREES(kiln_nn_vgg_state, bns, kiln_nn_batch_norm_state, n)

static const int32_t vgg_depths[4] = {11, 13, 16, 19};
static const int32_t vgg_convs[4] = {8, 10, 13, 16};
static const int vgg_per_stage[4][5] = {
    {1, 1, 2, 2, 2}, {2, 2, 2, 2, 2}, {2, 2, 3, 3, 3}, {2, 2, 4, 4, 4}};
static const int64_t vgg_channels[5] = {64, 128, 256, 512, 512};

static const kiln_tree_field vgg_plain_fields[4][4] = {{VGG_CONVS(8), VGG_TAIL},
                                                       {VGG_CONVS(10), VGG_TAIL},
                                                       {VGG_CONVS(13), VGG_TAIL},
                                                       {VGG_CONVS(16), VGG_TAIL}};
static const kiln_tree_field vgg_bn_fields[4][5] = {{VGG_CONVS(8), VGG_BNS(8), VGG_TAIL},
                                                    {VGG_CONVS(10), VGG_BNS(10), VGG_TAIL},
                                                    {VGG_CONVS(13), VGG_BNS(13), VGG_TAIL},
                                                    {VGG_CONVS(16), VGG_BNS(16), VGG_TAIL}};
static const kiln_tree_field vgg_state_fields[4][1] = {
    {VGG_STATE(8)}, {VGG_STATE(10)}, {VGG_STATE(13)}, {VGG_STATE(16)}};
#define VGG_DEF(list, n) {"kiln_nn_vgg", sizeof(kiln_nn_vgg), (list), (n)}
static const kiln_tree_def vgg_defs[2][4] = {
    {VGG_DEF(vgg_plain_fields[0], 4), VGG_DEF(vgg_plain_fields[1], 4),
     VGG_DEF(vgg_plain_fields[2], 4), VGG_DEF(vgg_plain_fields[3], 4)},
    {VGG_DEF(vgg_bn_fields[0], 5), VGG_DEF(vgg_bn_fields[1], 5), VGG_DEF(vgg_bn_fields[2], 5),
     VGG_DEF(vgg_bn_fields[3], 5)}};
#define VGG_STATE_DEF(i) {"kiln_nn_vgg_state", sizeof(kiln_nn_vgg_state), vgg_state_fields[i], 1}
static const kiln_tree_def vgg_state_defs[4] = {VGG_STATE_DEF(0), VGG_STATE_DEF(1),
                                                VGG_STATE_DEF(2), VGG_STATE_DEF(3)};

static int vgg_index(int32_t depth) {
    for (int i = 0; i < 4; i++)
        if (vgg_depths[i] == depth) return i;
    return -1;
}

int32_t kiln_nn_vgg_n_convs(int32_t depth) {
    int i = vgg_index(depth);
    return i < 0 ? -1 : vgg_convs[i];
}

const kiln_tree_def *kiln_nn_vgg_def(int32_t depth, bool batch_norm) {
    int i = vgg_index(depth);
    return i < 0 ? NULL : &vgg_defs[batch_norm ? 1 : 0][i];
}

const kiln_tree_def *kiln_nn_vgg_state_def(int32_t depth) {
    int i = vgg_index(depth);
    return i < 0 ? NULL : &vgg_state_defs[i];
}

/* ---- building blocks ---------------------------------------------------------------- */

/* A weight for a layer followed by ReLU (He normal) or the output layer (Glorot uniform),
 * and a zero bias. */
static void make_dense(kiln_ctx *cx, kiln_key key, int64_t in, int64_t out, bool relu,
                       kiln_nn_dense_params *d) {
    d->w = kiln_nn_init(cx, relu ? KILN_NN_INIT_HE_NORMAL : KILN_NN_INIT_GLOROT_UNIFORM, key,
                        KILN_F32, KILN_SHAPE(in, out), 0);
    d->b = kiln_zeros(cx, KILN_F32, KILN_SHAPE(out));
}

static void make_conv(kiln_ctx *cx, kiln_key key, int64_t in, int64_t out,
                      kiln_nn_conv2d_layer *c) {
    c->w = kiln_nn_init(cx, KILN_NN_INIT_HE_NORMAL, key, KILN_F32, KILN_SHAPE(out, in, 3, 3), 0);
    c->b = kiln_zeros(cx, KILN_F32, KILN_SHAPE(out));
}

/* In eager mode, frees an intermediate activation as soon as the next one exists, so a
 * deep forward pass holds two activations at a time, not all of them. */
static void drop(kiln_tensor *prev, kiln_tensor *input) {
    if (prev && prev != input && !kiln_tensor_is_traced(prev)) kiln_tensor_release(prev);
}

/* The first checks of a model's create: a context (else INVALID_ARGUMENT) with no error
 * recorded, and its config (named config_name in messages) and out_params not NULL; then
 * clears out_params (out_size bytes). KILN_OK to go on, else the status to return. */
static kiln_status create_begin(kiln_ctx *cx, const char *fn, const void *config,
                                const char *config_name, void *out_params, size_t out_size) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    if (!config || !out_params)
        return kiln__nn_fail(cx, fn, "%s is NULL", config ? "out_params" : config_name),
               kiln_ctx_status(cx);
    memset(out_params, 0, out_size);
    return KILN_OK;
}

/* ---- MLP ------------------------------------------------------------------------------ */

kiln_status kiln_nn_mlp_create(kiln_ctx *cx, const int64_t *sizes, int32_t n_sizes, kiln_key key,
                               kiln_nn_mlp *out_params) {
    static const char fn[] = "kiln_nn_mlp_create";
    kiln_status status = create_begin(cx, fn, sizes, "sizes", out_params, sizeof *out_params);
    if (status != KILN_OK) return status;
    if (n_sizes < 2 || n_sizes > KILN_NN_MLP_MAX_LAYERS + 1)
        return kiln__nn_fail(cx, fn, "n_sizes = %d; expected 2..%d", (int)n_sizes,
                             KILN_NN_MLP_MAX_LAYERS + 1),
               kiln_ctx_status(cx);
    for (int32_t i = 0; i < n_sizes; i++)
        if (sizes[i] < 1)
            return kiln__nn_fail(cx, fn, "sizes[%d] = %lld; expected >= 1", (int)i,
                                 (long long)sizes[i]),
                   kiln_ctx_status(cx);
    kiln_nn_mlp p;
    memset(&p, 0, sizeof p);
    p.n_layers = n_sizes - 1;
    for (int32_t i = 0; i < p.n_layers; i++)
        make_dense(cx, kiln_key_fold_in(key, (uint32_t)i), sizes[i], sizes[i + 1],
                   i + 1 < p.n_layers, &p.layers[i]);
    if (kiln_ctx_status(cx) == KILN_OK) *out_params = p;
    return kiln_ctx_status(cx);
}

kiln_tensor *kiln_nn_mlp_forward(kiln_ctx *cx, const kiln_nn_mlp *params, kiln_tensor *x) {
    static const char fn[] = "kiln_nn_mlp_forward";
    if (!cx || !kiln__nn_arg(cx, fn, "x", x)) return NULL;
    if (!params) return kiln__nn_fail(cx, fn, "params is NULL");
    if (params->n_layers < 1 || params->n_layers > KILN_NN_MLP_MAX_LAYERS)
        return kiln__nn_fail(cx, fn, "params->n_layers = %d; expected 1..%d", (int)params->n_layers,
                             KILN_NN_MLP_MAX_LAYERS);
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_tensor *h = x;
    for (int32_t i = 0; i < params->n_layers; i++) {
        kiln_tensor *next = kiln_nn_dense(cx, h, params->layers[i].w, params->layers[i].b);
        if (i + 1 < params->n_layers) next = kiln_nn_relu(cx, next);
        h = next;
    }
    return kiln__nn_end(cx, h);
}

/* ---- the small CNN --------------------------------------------------------------------- */

kiln_nn_cnn_config kiln_nn_cnn_config_digits(void) {
    return (kiln_nn_cnn_config){.in_channels = 1,
                                .height = 8,
                                .width = 8,
                                .channels1 = 32,
                                .channels2 = 64,
                                .hidden = 128,
                                .classes = 10};
}

kiln_status kiln_nn_cnn_create(kiln_ctx *cx, const kiln_nn_cnn_config *c, kiln_key key,
                               kiln_nn_cnn *out_params) {
    static const char fn[] = "kiln_nn_cnn_create";
    kiln_status status = create_begin(cx, fn, c, "config", out_params, sizeof *out_params);
    if (status != KILN_OK) return status;
    if (c->in_channels < 1 || c->channels1 < 1 || c->channels2 < 1 || c->hidden < 1 ||
        c->classes < 1 || c->height < 2 || c->width < 2 || c->height % 2 || c->width % 2)
        return kiln__nn_fail(
                   cx, fn,
                   "config {in_channels %lld, height %lld, width %lld, channels %lld/%lld, "
                   "hidden %lld, classes %lld}: sizes must be >= 1, height and width "
                   "even and >= 2",
                   (long long)c->in_channels, (long long)c->height, (long long)c->width,
                   (long long)c->channels1, (long long)c->channels2, (long long)c->hidden,
                   (long long)c->classes),
               kiln_ctx_status(cx);
    kiln_nn_cnn p;
    make_conv(cx, kiln_key_fold_in(key, 0), c->in_channels, c->channels1, &p.conv1);
    make_conv(cx, kiln_key_fold_in(key, 1), c->channels1, c->channels2, &p.conv2);
    make_dense(cx, kiln_key_fold_in(key, 2), c->channels2 * (c->height / 2) * (c->width / 2),
               c->hidden, true, &p.fc1);
    make_dense(cx, kiln_key_fold_in(key, 3), c->hidden, c->classes, false, &p.fc2);
    if (kiln_ctx_status(cx) == KILN_OK) *out_params = p;
    return kiln_ctx_status(cx);
}

kiln_tensor *kiln_nn_cnn_forward(kiln_ctx *cx, const kiln_nn_cnn *p, kiln_tensor *images) {
    static const char fn[] = "kiln_nn_cnn_forward";
    if (!cx || !kiln__nn_arg(cx, fn, "images", images)) return NULL;
    if (!p) return kiln__nn_fail(cx, fn, "params is NULL");
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_nn_conv2d_params same = {.padding = {1, 1}};
    kiln_nn_pool2d_params pool = {.window = {2, 2}};
    kiln_tensor *h = kiln_nn_relu(cx, kiln_nn_conv2d(cx, images, p->conv1.w, p->conv1.b, &same));
    h = kiln_nn_max_pool2d(cx, h, &pool);
    h = kiln_nn_relu(cx, kiln_nn_conv2d(cx, h, p->conv2.w, p->conv2.b, &same));
    h = kiln_nn_relu(cx, kiln_nn_dense(cx, kiln_nn_flatten(cx, h), p->fc1.w, p->fc1.b));
    return kiln__nn_end(cx, kiln_nn_dense(cx, h, p->fc2.w, p->fc2.b));
}

/* ---- VGG ------------------------------------------------------------------------------- */

kiln_nn_vgg_config kiln_nn_vgg_config_imagenet(int32_t depth, bool batch_norm) {
    return (kiln_nn_vgg_config){.depth = depth,
                                .batch_norm = batch_norm,
                                .in_channels = 3,
                                .height = 224,
                                .width = 224,
                                .hidden = 4096,
                                .classes = 1000,
                                .width_divisor = 1};
}

kiln_status kiln_nn_vgg_create(kiln_ctx *cx, const kiln_nn_vgg_config *c, kiln_key key,
                               kiln_nn_vgg *out_params, kiln_nn_vgg_state *out_state) {
    static const char fn[] = "kiln_nn_vgg_create";
    kiln_status status = create_begin(cx, fn, c, "config", out_params, sizeof *out_params);
    if (status != KILN_OK) return status;
    if (out_state) memset(out_state, 0, sizeof *out_state);
    int vi = vgg_index(c->depth);
    if (vi < 0)
        return kiln__nn_fail(cx, fn, "config->depth = %d; expected 11, 13, 16 or 19",
                             (int)c->depth),
               kiln_ctx_status(cx);
    if (c->batch_norm && !out_state)
        return kiln__nn_fail(cx, fn,
                             "out_state is NULL; a VGG with batch_norm has running statistics"),
               kiln_ctx_status(cx);
    int64_t div = c->width_divisor <= 1 ? 1 : c->width_divisor;
    if (c->in_channels < 1 || c->hidden < 1 || c->classes < 1 || c->height < 32 || c->width < 32 ||
        c->height % 32 || c->width % 32 || c->width_divisor < 0 || 64 % div)
        return kiln__nn_fail(cx, fn,
                             "config {in_channels %lld, height %lld, width %lld, hidden %lld, "
                             "classes %lld, width_divisor %d}: sizes must be >= 1, height and "
                             "width multiples of 32, width_divisor 0 or a divisor of 64",
                             (long long)c->in_channels, (long long)c->height, (long long)c->width,
                             (long long)c->hidden, (long long)c->classes, (int)c->width_divisor),
               kiln_ctx_status(cx);
    kiln_nn_vgg p;
    kiln_nn_vgg_state st;
    memset(&p, 0, sizeof p);
    memset(&st, 0, sizeof st);
    p.depth = c->depth;
    p.batch_norm = c->batch_norm;
    int64_t in = c->in_channels;
    int k = 0;
    for (int s = 0; s < 5; s++) {
        int64_t out = vgg_channels[s] / div;
        for (int j = 0; j < vgg_per_stage[vi][s]; j++, k++) {
            make_conv(cx, kiln_key_fold_in(key, (uint32_t)k), in, out, &p.convs[k]);
            if (c->batch_norm) {
                p.bns[k].scale = kiln_ones(cx, KILN_F32, KILN_SHAPE(out));
                p.bns[k].bias = kiln_zeros(cx, KILN_F32, KILN_SHAPE(out));
                st.bns[k].mean = kiln_zeros(cx, KILN_F32, KILN_SHAPE(out));
                st.bns[k].var = kiln_ones(cx, KILN_F32, KILN_SHAPE(out));
            }
            in = out;
        }
    }
    int64_t flat = in * (c->height / 32) * (c->width / 32);
    make_dense(cx, kiln_key_fold_in(key, 100), flat, c->hidden, true, &p.fcs[0]);
    make_dense(cx, kiln_key_fold_in(key, 101), c->hidden, c->hidden, true, &p.fcs[1]);
    make_dense(cx, kiln_key_fold_in(key, 102), c->hidden, c->classes, false, &p.fcs[2]);
    if (kiln_ctx_status(cx) == KILN_OK) {
        *out_params = p;
        if (out_state) *out_state = st;
    }
    return kiln_ctx_status(cx);
}

kiln_tensor *kiln_nn_vgg_forward(kiln_ctx *cx, const kiln_nn_vgg *p, const kiln_nn_vgg_state *state,
                                 kiln_tensor *images, bool training, kiln_tensor *dropout_key,
                                 kiln_nn_vgg_state *out_state) {
    static const char fn[] = "kiln_nn_vgg_forward";
    if (!cx || !kiln__nn_arg(cx, fn, "images", images)) return NULL;
    if (!p) return kiln__nn_fail(cx, fn, "params is NULL");
    int vi = vgg_index(p->depth);
    if (vi < 0)
        return kiln__nn_fail(cx, fn, "params->depth = %d; expected 11, 13, 16 or 19",
                             (int)p->depth);
    if (p->batch_norm && !state)
        return kiln__nn_fail(cx, fn,
                             "state is NULL; a VGG with batch_norm needs running statistics");
    kiln_nn_vgg_state ns;
    memset(&ns, 0, sizeof ns);
    bool write_state = training && p->batch_norm && out_state;
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_nn_conv2d_params same = {.padding = {1, 1}};
    kiln_nn_pool2d_params pool = {.window = {2, 2}};
    kiln_tensor *h = images;
    int k = 0;
    for (int s = 0; s < 5; s++) {
        for (int j = 0; j < vgg_per_stage[vi][s]; j++, k++) {
            kiln_tensor *y = kiln_nn_conv2d(cx, h, p->convs[k].w, p->convs[k].b, &same);
            drop(h, images);
            if (p->batch_norm) {
                kiln_tensor *z = kiln_nn_batch_norm(cx, y, p->bns[k].scale, p->bns[k].bias,
                                                    state->bns[k].mean, state->bns[k].var, training,
                                                    0.1, 1e-5, write_state ? &ns.bns[k].mean : NULL,
                                                    write_state ? &ns.bns[k].var : NULL);
                drop(y, images);
                y = z;
            }
            h = kiln_nn_relu(cx, y);
            drop(y, images);
        }
        kiln_tensor *pooled = kiln_nn_max_pool2d(cx, h, &pool);
        drop(h, images);
        h = pooled;
    }
    h = kiln_nn_flatten(cx, h);
    kiln_tensor *key = training ? dropout_key : NULL;
    for (int d = 0; d < 3; d++) {
        h = kiln_nn_dense(cx, h, p->fcs[d].w, p->fcs[d].b);
        if (d < 2) {
            h = kiln_nn_relu(cx, h);
            if (key) h = kiln_nn_dropout(cx, h, 0.5, key, &key);
        }
    }
    kiln_tensor **outs[1 + 2 * KILN_NN_VGG_MAX_CONVS];
    int n_outs = 0;
    outs[n_outs++] = &h;
    if (write_state)
        for (int i = 0; i < vgg_convs[vi]; i++) {
            outs[n_outs++] = &ns.bns[i].mean;
            outs[n_outs++] = &ns.bns[i].var;
        }
    kiln__nn_end_n(cx, (kiln_tensor * *const *)outs, n_outs);
    if (write_state && kiln_ctx_status(cx) == KILN_OK) *out_state = ns;
    return h;
}
