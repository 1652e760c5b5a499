/* SPDX-License-Identifier: Apache-2.0 */
/* Out of memory at every allocation of an nn call: RESOURCE_EXHAUSTED (or success), never a
 * crash, and nothing leaked once the ctx is released. */
#include <zlib.h>

#include "failing_allocator.h"
#include "nn_test.h"

typedef struct two {
    kiln_tensor *a, *b;
} two;
KILN_TREE_DEF(two, KILN_FIELD(two, a), KILN_FIELD(two, b));

typedef struct fixture {
    two p, g, mu, nu, out, out_mu, out_nu;
    kiln_tensor *step, *out_step, *x, *rm, *rv;
    kiln_nn_cnn cnn;
    char path[512], gz[512];
} fixture;

static void setup(kiln_ctx *cx, fixture *f) {
    f->p = (two){kiln_ones(cx, KILN_F32, KILN_SHAPE(3, 2)), kiln_ones(cx, KILN_F32, KILN_SHAPE(2))};
    f->g = (two){kiln_ones(cx, KILN_F32, KILN_SHAPE(3, 2)), kiln_ones(cx, KILN_F32, KILN_SHAPE(2))};
    kiln_nn_optimizer o = kiln_nn_adam(0.1);
    kiln_nn_optimizer_init(cx, &o, &kiln_tree_def_two, &f->p, &f->step, &f->mu, &f->nu);
    kiln_nn_cnn_config c = {1, 4, 4, 2, 3, 5, 2};
    kiln_nn_cnn_create(cx, &c, kiln_key_from_seed(1), &f->cnn);
    f->x = kiln_ones(cx, KILN_F32, KILN_SHAPE(2, 1, 4, 4));
    f->rm = kiln_zeros(cx, KILN_F32, KILN_SHAPE(1));
    f->rv = kiln_ones(cx, KILN_F32, KILN_SHAPE(1));
    snprintf(f->path, sizeof f->path, "%s", test_tmp_path("alloc.safetensors"));
    kiln_nn_save(cx, f->path, &kiln_tree_def_two, &f->p, NULL, 0);
    snprintf(f->gz, sizeof f->gz, "%s", test_tmp_path("alloc_digits.csv.gz"));
    gzFile g = gzopen(f->gz, "wb");
    cr_assert_not_null(g);
    for (int r = 0; r < 4; r++) {
        for (int i = 0; i < 64; i++)
            gzprintf(g, "%d,", (i + r) % 17);
        gzprintf(g, "%d\n", r);
    }
    gzclose(g);
    expect_ok(cx);
}

static kiln_status op_update(kiln_ctx *cx, fixture *f) {
    kiln_nn_optimizer o = kiln_nn_adamw(0.1, 0.01);
    return kiln_nn_optimizer_update(cx, &o, &kiln_tree_def_two, &f->p, &f->g, f->step, &f->mu,
                                    &f->nu, &f->out, &f->out_step, &f->out_mu, &f->out_nu);
}
static kiln_status op_save(kiln_ctx *cx, fixture *f) {
    return kiln_nn_save(cx, test_tmp_path("alloc2.safetensors"), &kiln_tree_def_two, &f->p,
                        (const char *[]){"k", "v"}, 1);
}
static kiln_status op_load(kiln_ctx *cx, fixture *f) {
    return kiln_nn_load(cx, f->path, &kiln_tree_def_two, &f->p, &f->out);
}
static kiln_status op_digits(kiln_ctx *cx, fixture *f) {
    kiln_nn_digits d;
    return kiln_nn_digits_load(cx, f->gz, 3, 0.25, &d);
}
static kiln_status op_cnn(kiln_ctx *cx, fixture *f) {
    kiln_nn_cnn_forward(cx, &f->cnn, f->x);
    return kiln_ctx_status(cx);
}
static kiln_status op_bn(kiln_ctx *cx, fixture *f) {
    kiln_tensor *m, *v;
    kiln_nn_batch_norm(cx, f->x, NULL, NULL, f->rm, f->rv, true, 0.1, 1e-5, &m, &v);
    return kiln_ctx_status(cx);
}

Test(nn_alloc, every_allocation_may_fail) {
    struct {
        const char *name;
        kiln_status (*op)(kiln_ctx *, fixture *);
    } ops[] = {{"optimizer_update", op_update}, {"save", op_save},       {"load", op_load},
               {"digits", op_digits},           {"cnn_forward", op_cnn}, {"batch_norm", op_bn}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        int failing_runs = 0;
        for (int64_t k = 0;; k++) {
            cr_assert_lt(k, 5000, "%s never succeeded", ops[i].name);
            failing_allocator fa;
            failing_allocator_init(&fa, -1);
            kiln_ctx_options o = kiln_ctx_options_default();
            o.allocator = &fa.allocator;
            kiln_ctx *cx;
            cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
            fixture f;
            memset(&f, 0, sizeof f);
            setup(cx, &f);
            fa.fail_after = fa.allocations + k;
            kiln_status s = ops[i].op(cx, &f);
            fa.fail_after = -1;
            bool refused = fa.failures > 0;
            if (s != KILN_OK) {
                cr_assert_eq(s, KILN_RESOURCE_EXHAUSTED, "%s, fail_after +%lld: %s: %s",
                             ops[i].name, (long long)k, kiln_status_name(s),
                             kiln_ctx_error_message(cx));
                cr_assert(refused);
                failing_runs++;
            }
            kiln_ctx_release(cx);
            cr_assert_eq(fa.live_blocks, 0, "%s, fail_after +%lld: %lld blocks leaked", ops[i].name,
                         (long long)k, (long long)fa.live_blocks);
            if (s == KILN_OK) break;
        }
        cr_assert_gt(failing_runs, 0, "%s", ops[i].name);
    }
}
