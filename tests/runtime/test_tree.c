/* SPDX-License-Identifier: Apache-2.0 */
#include <stdbool.h>

#include "test_util.h"

typedef struct dense {
    kiln_tensor *w, *b;
} dense;

typedef enum mode { MODE_FAST, MODE_SLOW } mode;

typedef struct config {
    int n;
    double rate;
    bool training;
    uint8_t small;
    mode m;
    float f;
    int16_t neg;
} config;

typedef struct model {
    dense layers[2];
    kiln_tensor *scale;
    config cfg;
    kiln_tensor *extra[3];
    int64_t sizes[2];
} model;

KILN_TREE_DEF(dense, KILN_FIELD(dense, w), KILN_FIELD(dense, b));
KILN_TREE_DEF(config, KILN_STATIC(config, n), KILN_STATIC(config, rate),
              KILN_STATIC(config, training), KILN_STATIC(config, small), KILN_STATIC(config, m),
              KILN_STATIC(config, f), KILN_STATIC(config, neg));
KILN_TREE_DEF(model, KILN_SUBTREE_ARRAY(model, layers, 2, dense), KILN_FIELD(model, scale),
              KILN_SUBTREE(model, cfg, config), KILN_ARRAY(model, extra, 3),
              KILN_STATIC_ARRAY(model, sizes, 2));

static const char *const leaf_paths[] = {"layers[0].w", "layers[0].b", "layers[1].w", "layers[1].b",
                                         "scale",       "extra[0]",    "extra[1]",    "extra[2]"};
static const char *const static_paths[] = {"cfg.n",     "cfg.rate", "cfg.training",
                                           "cfg.small", "cfg.m",    "cfg.f",
                                           "cfg.neg",   "sizes[0]", "sizes[1]"};

/* A model whose leaves are distinct scalars 0..7 (owned by the current scope). */
static model make_model(kiln_ctx *cx) {
    kiln_tensor *t[8];
    for (int i = 0; i < 8; i++)
        t[i] = kiln_scalar(cx, i, KILN_F32);
    return (model){.layers = {{t[0], t[1]}, {t[2], t[3]}},
                   .scale = t[4],
                   .cfg = {.n = -3,
                           .rate = 0.25,
                           .training = true,
                           .small = 200,
                           .m = MODE_SLOW,
                           .f = 1.5f,
                           .neg = -7},
                   .extra = {t[5], t[6], t[7]},
                   .sizes = {INT64_MIN, 42}};
}

Test(tree, macros_record_kinds_sizes_and_offsets) {
    const kiln_tree_def *d = &kiln_tree_def_config;
    cr_assert_str_eq(d->name, "config");
    cr_assert_eq(d->size, sizeof(config));
    cr_assert_eq(d->n_fields, 7);
    cr_assert_eq(d->fields[0].kind, KILN_TREE_STATIC_INT);
    cr_assert_eq(d->fields[0].size, sizeof(int));
    cr_assert_eq(d->fields[1].kind, KILN_TREE_STATIC_FLOAT);
    cr_assert_eq(d->fields[1].size, sizeof(double));
    cr_assert_eq(d->fields[2].kind, KILN_TREE_STATIC_BOOL);
    cr_assert_eq(d->fields[3].kind, KILN_TREE_STATIC_UINT);
    cr_assert_eq(d->fields[3].size, 1);
    cr_assert(d->fields[4].kind == KILN_TREE_STATIC_UINT ||
              d->fields[4].kind == KILN_TREE_STATIC_INT);
    cr_assert_eq(d->fields[5].kind, KILN_TREE_STATIC_FLOAT);
    cr_assert_eq(d->fields[5].size, sizeof(float));
    cr_assert_eq(d->fields[6].kind, KILN_TREE_STATIC_INT);
    cr_assert_eq(d->fields[6].size, 2);
    cr_assert_eq(d->fields[6].offset, offsetof(config, neg));

    const kiln_tree_def *m = &kiln_tree_def_model;
    cr_assert_eq(m->n_fields, 5);
    cr_assert_eq(m->fields[0].kind, KILN_TREE_SUBTREE);
    cr_assert_eq(m->fields[0].count, 2);
    cr_assert_eq(m->fields[0].def, &kiln_tree_def_dense);
    cr_assert_eq(m->fields[0].size, sizeof(dense));
    cr_assert_eq(m->fields[1].kind, KILN_TREE_TENSOR);
    cr_assert_eq(m->fields[1].count, 0);
    cr_assert_eq(m->fields[1].offset, offsetof(model, scale));
    cr_assert_eq(m->fields[3].count, 3);
    cr_assert_eq(m->fields[4].kind, KILN_TREE_STATIC_INT);
    cr_assert_eq(m->fields[4].count, 2);
    cr_assert_eq(m->fields[4].size, sizeof(int64_t));
}

Test(tree, counts_and_paths_follow_declaration_order) {
    cr_assert_eq(kiln_tree_leaf_count(&kiln_tree_def_model), 8);
    cr_assert_eq(kiln_tree_static_count(&kiln_tree_def_model), 9);
    cr_assert_eq(kiln_tree_leaf_count(&kiln_tree_def_config), 0);
    char path[64];
    for (int i = 0; i < 8; i++) {
        int n = kiln_tree_leaf_path(&kiln_tree_def_model, i, path, sizeof path);
        cr_assert_str_eq(path, leaf_paths[i]);
        cr_assert_eq(n, (int)strlen(leaf_paths[i]));
    }
    for (int i = 0; i < 9; i++) {
        kiln_tree_static_path(&kiln_tree_def_model, i, path, sizeof path);
        cr_assert_str_eq(path, static_paths[i]);
    }
    cr_assert_eq(kiln_tree_leaf_path(&kiln_tree_def_model, 8, path, sizeof path), -1);
    cr_assert_eq(kiln_tree_leaf_path(&kiln_tree_def_model, -1, path, sizeof path), -1);
    cr_assert_eq(kiln_tree_static_path(&kiln_tree_def_model, 9, path, sizeof path), -1);
    cr_assert_eq(kiln_tree_leaf_path(NULL, 0, path, sizeof path), -1);
    /* Like snprintf: cut to fit, the full length returned. */
    char small[5];
    cr_assert_eq(kiln_tree_leaf_path(&kiln_tree_def_model, 0, small, sizeof small), 11);
    cr_assert_str_eq(small, "laye");
    cr_assert_eq(kiln_tree_leaf_path(&kiln_tree_def_model, 4, NULL, 0), 5);
}

Test(tree, flatten_and_unflatten_round_trip) {
    kiln_ctx *cx = test_ctx();
    model net = make_model(cx);
    kiln_tensor *leaves[8];
    kiln_tree_static statics[9];
    cr_assert_eq(kiln_tree_flatten(cx, &kiln_tree_def_model, &net, leaves, 8, statics, 9), KILN_OK,
                 "%s", kiln_ctx_error_message(cx));
    for (int i = 0; i < 8; i++)
        cr_assert_eq(kiln_tensor_item(cx, leaves[i], 0), i, "leaf %d", i);
    cr_assert_eq(statics[0].kind, KILN_TREE_STATIC_INT);
    cr_assert_eq(statics[0].value.i, -3);
    cr_assert_eq(statics[1].value.f, 0.25);
    cr_assert_eq(statics[2].kind, KILN_TREE_STATIC_BOOL);
    cr_assert_eq(statics[2].value.u, 1);
    cr_assert_eq(statics[3].value.u, 200);
    cr_assert_eq(statics[4].value.u, MODE_SLOW);
    cr_assert_eq(statics[5].value.f, 1.5);
    cr_assert_eq(statics[6].value.i, -7);
    cr_assert_eq(statics[7].value.i, INT64_MIN);
    cr_assert_eq(statics[8].value.i, 42);

    model back;
    memset(&back, 0, sizeof back);
    cr_assert_eq(kiln_tree_unflatten(cx, &kiln_tree_def_model, leaves, 8, statics, 9, &back),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(back.layers[0].w, net.layers[0].w);
    cr_assert_eq(back.layers[0].b, net.layers[0].b);
    cr_assert_eq(back.layers[1].w, net.layers[1].w);
    cr_assert_eq(back.layers[1].b, net.layers[1].b);
    cr_assert_eq(back.scale, net.scale);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(back.extra[i], net.extra[i]);
    cr_assert_eq(back.cfg.n, -3);
    cr_assert_eq(back.cfg.rate, 0.25);
    cr_assert(back.cfg.training);
    cr_assert_eq(back.cfg.small, 200);
    cr_assert_eq(back.cfg.m, MODE_SLOW);
    cr_assert_eq(back.cfg.f, 1.5f);
    cr_assert_eq(back.cfg.neg, -7);
    cr_assert_eq(back.sizes[0], INT64_MIN);
    cr_assert_eq(back.sizes[1], 42);

    /* Without statics: flatten skips them, unflatten leaves them alone. */
    model other = {.cfg = {.n = 99}, .sizes = {5, 6}};
    cr_assert_eq(kiln_tree_flatten(cx, &kiln_tree_def_model, &net, leaves, 8, NULL, 0), KILN_OK);
    cr_assert_eq(kiln_tree_unflatten(cx, &kiln_tree_def_model, leaves, 8, NULL, 0, &other),
                 KILN_OK);
    cr_assert_eq(other.scale, net.scale);
    cr_assert_eq(other.cfg.n, 99);
    cr_assert_eq(other.sizes[1], 6);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Members a descriptor does not name are neither read nor written. */
typedef struct tagged {
    const char *label;
    kiln_tensor *x;
    double unused;
    short k;
} tagged;
KILN_TREE_DEF(tagged, KILN_FIELD(tagged, x), KILN_STATIC(tagged, k));

Test(tree, undescribed_members_are_left_alone) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2));
    tagged t = {.label = "hello", .x = NULL, .unused = 2.5, .k = 1};
    kiln_tree_static k = {.kind = KILN_TREE_STATIC_INT, .value.i = -70000};
    cr_assert_eq(kiln_tree_unflatten(cx, &kiln_tree_def_tagged, &x, 1, &k, 1, &t), KILN_OK);
    cr_assert_eq(t.x, x);
    cr_assert_str_eq(t.label, "hello");
    cr_assert_eq(t.unused, 2.5);
    cr_assert_eq(t.k, (short)(uint16_t)(-70000 & 0xffff)); /* truncated like a C conversion */
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(tree, a_null_leaf_is_named_by_its_path) {
    kiln_ctx *cx = test_ctx();
    model net = make_model(cx);
    net.layers[1].b = NULL;
    kiln_tensor *leaves[8];
    cr_assert_eq(kiln_tree_flatten(cx, &kiln_tree_def_model, &net, leaves, 8, NULL, 0),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "model leaf 3 'layers[1].b' is NULL");
    net = make_model(cx);
    net.extra[2] = NULL;
    kiln_tree_flatten(cx, &kiln_tree_def_model, &net, leaves, 8, NULL, 0);
    expect_error(cx, KILN_INVALID_ARGUMENT, "'extra[2]'");
    kiln_ctx_release(cx);
}

Test(tree, arguments_are_checked) {
    kiln_ctx *cx = test_ctx();
    model net = make_model(cx);
    kiln_tensor *leaves[8];
    kiln_tree_static statics[9];
    cr_assert_eq(kiln_tree_flatten(NULL, &kiln_tree_def_model, &net, leaves, 8, NULL, 0),
                 KILN_INVALID_ARGUMENT);
    kiln_tree_flatten(cx, NULL, &net, leaves, 8, NULL, 0);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_tree_flatten: def is NULL");
    kiln_tree_flatten(cx, &kiln_tree_def_model, NULL, leaves, 8, NULL, 0);
    expect_error(cx, KILN_INVALID_ARGUMENT, "tree is NULL");
    kiln_tree_flatten(cx, &kiln_tree_def_model, &net, NULL, 8, NULL, 0);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_leaves is NULL");
    kiln_tree_flatten(cx, &kiln_tree_def_model, &net, leaves, 7, NULL, 0);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_leaves is 7; model has 8 tensor leaves");
    kiln_tree_flatten(cx, &kiln_tree_def_model, &net, leaves, 8, statics, 3);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_statics is 3; model has 9 static scalars");

    model back = {0};
    kiln_tree_unflatten(cx, &kiln_tree_def_model, leaves, 8, NULL, 0, NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_tree is NULL");
    kiln_tree_unflatten(cx, &kiln_tree_def_model, NULL, 8, NULL, 0, &back);
    expect_error(cx, KILN_INVALID_ARGUMENT, "leaves is NULL");
    kiln_tree_unflatten(cx, &kiln_tree_def_model, leaves, 9, NULL, 0, &back);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_leaves is 9");

    /* A static of the wrong kind: nothing is written. */
    cr_assert_eq(kiln_tree_flatten(cx, &kiln_tree_def_model, &net, leaves, 8, statics, 9), KILN_OK);
    statics[8].kind = KILN_TREE_STATIC_FLOAT;
    cr_assert_eq(kiln_tree_unflatten(cx, &kiln_tree_def_model, leaves, 8, statics, 9, &back),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "statics[8] is a static float; model static 'sizes[1]' is a static int");
    cr_assert_null(back.scale);
    cr_assert_eq(back.cfg.n, 0);
    kiln_ctx_release(cx);
}

/* Descriptors written by hand, wrong in one way each. */
typedef struct pair {
    kiln_tensor *a;
    int n;
} pair;

static void expect_invalid(const kiln_tree_def *def, const char *fragment) {
    kiln_ctx *cx = test_ctx();
    cr_assert_eq(kiln_tree_check(cx, def), KILN_INVALID_ARGUMENT, "%s accepted", fragment);
    expect_error(cx, KILN_INVALID_ARGUMENT, fragment);
    cr_assert_eq(kiln_tree_leaf_count(def), -1);
    cr_assert_eq(kiln_tree_static_count(def), -1);
    kiln_tensor *leaf;
    kiln_tree_flatten(cx, def, &(pair){0}, &leaf, 1, NULL, 0);
    expect_error(cx, KILN_INVALID_ARGUMENT, "invalid descriptor");
    kiln_ctx_release(cx);
}

static const kiln_tree_def self_def;
static const kiln_tree_field self_fields[] = {
    {.name = "me", .kind = KILN_TREE_SUBTREE, .offset = 0, .size = sizeof(pair), .def = &self_def}};
static const kiln_tree_def self_def = {"pair", sizeof(pair), self_fields, 1};

Test(tree, invalid_descriptors_are_rejected_with_the_field_named) {
    kiln_ctx *cx = test_ctx();
    cr_assert_eq(kiln_tree_check(cx, &kiln_tree_def_model), KILN_OK);
    kiln_tree_check(cx, NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "def is NULL");
    cr_assert_eq(kiln_tree_check(NULL, &kiln_tree_def_model), KILN_INVALID_ARGUMENT);
    kiln_ctx_release(cx);

    kiln_tree_field f[2] = {{.name = "a",
                             .kind = KILN_TREE_TENSOR,
                             .offset = offsetof(pair, a),
                             .size = sizeof(kiln_tensor *)},
                            {.name = "n",
                             .kind = KILN_TREE_STATIC_INT,
                             .offset = offsetof(pair, n),
                             .size = sizeof(int)}};
    kiln_tree_def d = {"pair", sizeof(pair), f, 2};
    cr_assert_eq(kiln_tree_leaf_count(&d), 1);
    cr_assert_eq(kiln_tree_static_count(&d), 1);

    f[0].kind = (kiln_tree_kind)0;
    expect_invalid(&d, "pair: field 0 'a': unknown kind");
    f[0].kind = KILN_TREE_TENSOR;
    f[1].size = 3;
    expect_invalid(&d, "pair: field 1 'n': size 3 does not fit a static int");
    f[1].size = sizeof(int);
    f[1].kind = KILN_TREE_STATIC_FLOAT;
    f[1].size = 2;
    expect_invalid(&d, "size 2 does not fit a static float");
    f[1].kind = KILN_TREE_STATIC_INT;
    f[1].size = sizeof(int);
    f[1].offset = sizeof(pair);
    expect_invalid(&d, "field 1 'n': offset");
    f[1].offset = offsetof(pair, n);
    f[1].count = 3; /* the array would run past the end of the struct */
    expect_invalid(&d, "lies outside");
    f[1].count = -1;
    expect_invalid(&d, "count -1");
    f[1].count = 0;
    f[0].name = "";
    expect_invalid(&d, "field 0 '': the field has no name");
    f[0].name = "a";
    f[0].kind = KILN_TREE_SUBTREE;
    expect_invalid(&d, "a subtree without a descriptor");
    f[0].kind = KILN_TREE_TENSOR;
    f[0].size = 4;
    expect_invalid(&d, "does not fit a tensor");
    f[0].size = sizeof(kiln_tensor *);
    d.n_fields = -1;
    expect_invalid(&d, "n_fields is -1");
    d.n_fields = 2;
    d.name = NULL;
    expect_invalid(&d, "no type name");
    expect_invalid(&self_def, "nest more than 32 deep");
}

Test(tree, the_leaf_limit_is_enforced) {
    typedef struct big {
        kiln_tensor *t[KILN_TREE_MAX_LEAVES + 1];
    } big;
    kiln_tree_field f = {.name = "t",
                         .kind = KILN_TREE_TENSOR,
                         .offset = 0,
                         .size = sizeof(kiln_tensor *),
                         .count = KILN_TREE_MAX_LEAVES};
    kiln_tree_def d = {"big", sizeof(big), &f, 1};
    cr_assert_eq(kiln_tree_leaf_count(&d), KILN_TREE_MAX_LEAVES);
    kiln_tree_field two[2] = {f, f};
    two[1].count = 1;
    two[1].offset = KILN_TREE_MAX_LEAVES * sizeof(kiln_tensor *);
    d.fields = two;
    d.n_fields = 2;
    expect_invalid(&d, "more than 4096 tensor leaves");
}

Test(tree, long_paths_are_cut_short) {
    char name[400];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    kiln_tree_field f = {.name = name, .kind = KILN_TREE_TENSOR, .size = sizeof(kiln_tensor *)};
    kiln_tree_def d = {"long", sizeof(kiln_tensor *), &f, 1};
    char path[KILN_TREE_PATH_MAX + 10];
    int n = kiln_tree_leaf_path(&d, 0, path, sizeof path);
    cr_assert_eq(n, KILN_TREE_PATH_MAX - 1);
    cr_assert(strcmp(path + n - 3, "...") == 0, "%s", path);
}

Test(tree, an_empty_descriptor_has_no_leaves) {
    kiln_ctx *cx = test_ctx();
    kiln_tree_def d = {"empty", 8, NULL, 0};
    cr_assert_eq(kiln_tree_leaf_count(&d), 0);
    int64_t dummy = 5;
    cr_assert_eq(kiln_tree_flatten(cx, &d, &dummy, NULL, 0, NULL, 0), KILN_OK);
    cr_assert_eq(kiln_tree_unflatten(cx, &d, NULL, 0, NULL, 0, &dummy), KILN_OK);
    cr_assert_eq(dummy, 5);
    expect_ok(cx);
    kiln_ctx_release(cx);
}
