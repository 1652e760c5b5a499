/* SPDX-License-Identifier: Apache-2.0 */
/* Optimizer steps against their formulas (torch.optim's), computed here in double. */
#include "nn_test.h"

typedef struct two {
    kiln_tensor *a, *b;
} two;
KILN_TREE_DEF(two, KILN_FIELD(two, a), KILN_FIELD(two, b));

enum { NA = 3, NB = 2 };
static const float P0[NA + NB] = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f};
static const float G[2][NA + NB] = {{0.1f, -0.2f, 0.3f, -0.4f, 0.5f},
                                    {-0.3f, 0.05f, 0.2f, 0.1f, -0.6f}};

static two make(kiln_ctx *cx, const float *v) {
    return (two){tf32(cx, KILN_SHAPE(NA), v), tf32(cx, KILN_SHAPE(NB), v + NA)};
}

/* Runs two steps of `opt` and compares the parameters with ref (NA + NB values). */
static void run(kiln_ctx *cx, const kiln_nn_optimizer *opt, const double *ref, int steps) {
    two p = make(cx, P0), mu = {0}, nu = {0};
    kiln_tensor *step;
    cr_assert_eq(kiln_nn_optimizer_init(cx, opt, &kiln_tree_def_two, &p, &step, &mu, &nu), KILN_OK,
                 "%s", kiln_ctx_error_message(cx));
    for (int s = 0; s < steps; s++) {
        two g = make(cx, G[s]);
        /* Outputs alias the inputs: allowed. */
        kiln_nn_optimizer_update(cx, opt, &kiln_tree_def_two, &p, &g, step, &mu, &nu, &p, &step,
                                 &mu, &nu);
        expect_ok(cx);
    }
    expect_close(cx, p.a, KILN_SHAPE(NA), ref, 1e-6, 1e-5);
    expect_close(cx, p.b, KILN_SHAPE(NB), ref + NA, 1e-6, 1e-5);
    cr_assert_eq(kiln_tensor_item(cx, step, 0), steps);
}

Test(nn_optim, sgd_plain_momentum_nesterov_and_weight_decay) {
    kiln_ctx *cx = test_ctx();
    const double lr = 0.1, mom = 0.9, wd = 0.01;
    for (int variant = 0; variant < 3; variant++) {
        double ref[NA + NB];
        for (int i = 0; i < NA + NB; i++) {
            double p = P0[i], buf = 0;
            for (int s = 0; s < 2; s++) {
                double g = G[s][i] + (variant ? wd * p : 0);
                double d = g;
                if (variant) {
                    buf = mom * buf + g;
                    d = variant == 2 ? g + mom * buf : buf;
                }
                p -= lr * d;
            }
            ref[i] = p;
        }
        kiln_nn_optimizer o = kiln_nn_sgd(lr, variant ? mom : 0, variant ? wd : 0);
        o.nesterov = variant == 2;
        run(cx, &o, ref, 2);
    }
    kiln_ctx_release(cx);
}

Test(nn_optim, adam_and_adamw) {
    kiln_ctx *cx = test_ctx();
    const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
    for (int variant = 0; variant < 3; variant++) { /* Adam, Adam + L2, AdamW */
        double ref[NA + NB];
        for (int i = 0; i < NA + NB; i++) {
            double p = P0[i], m = 0, v = 0;
            for (int s = 0; s < 2; s++) {
                int t = s + 1;
                double g = G[s][i];
                if (variant == 1) g += wd * p;
                if (variant == 2) p *= 1 - lr * wd;
                m = b1 * m + (1 - b1) * g;
                v = b2 * v + (1 - b2) * g * g;
                double mh = m / (1 - pow(b1, t)), vh = v / (1 - pow(b2, t));
                p -= lr * mh / (sqrt(vh) + eps);
            }
            ref[i] = p;
        }
        kiln_nn_optimizer o = variant == 2 ? kiln_nn_adamw(lr, wd) : kiln_nn_adam(lr);
        if (variant == 1) o.weight_decay = wd;
        run(cx, &o, ref, 2);
    }
    kiln_ctx_release(cx);
}

Test(nn_optim, a_learning_rate_tensor_and_missing_gradients) {
    kiln_ctx *cx = test_ctx();
    kiln_nn_optimizer o = kiln_nn_sgd(123, 0, 0); /* overridden by the tensor */
    o.learning_rate_tensor = kiln_scalar(cx, 0.5, KILN_F32);
    two p = make(cx, P0), g = make(cx, G[0]), np;
    g.b = NULL; /* as kiln_value_and_grad_tree gives for leaves it does not differentiate */
    kiln_tensor *step = kiln_zeros(cx, KILN_I32, KILN_SHAPE_SCALAR), *nstep;
    kiln_nn_optimizer_update(cx, &o, &kiln_tree_def_two, &p, &g, step, NULL, NULL, &np, &nstep,
                             NULL, NULL);
    double ref[NA];
    for (int i = 0; i < NA; i++)
        ref[i] = P0[i] - 0.5 * G[0][i];
    expect_close(cx, np.a, KILN_SHAPE(NA), ref, 1e-7, 1e-6);
    cr_assert_eq(np.b, p.b, "a parameter without gradient is returned as it is");
    kiln_ctx_release(cx);
}

typedef struct opt_in {
    two params, grads, mu, nu;
    kiln_tensor *step;
} opt_in;
typedef struct opt_out {
    two params, mu, nu;
    kiln_tensor *step;
} opt_out;
KILN_TREE_DEF(opt_in, KILN_SUBTREE(opt_in, params, two), KILN_SUBTREE(opt_in, grads, two),
              KILN_SUBTREE(opt_in, mu, two), KILN_SUBTREE(opt_in, nu, two),
              KILN_FIELD(opt_in, step));
KILN_TREE_DEF(opt_out, KILN_SUBTREE(opt_out, params, two), KILN_SUBTREE(opt_out, mu, two),
              KILN_SUBTREE(opt_out, nu, two), KILN_FIELD(opt_out, step));

static kiln_status adam_step(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    const opt_in *in = in_;
    opt_out *out = out_;
    return kiln_nn_optimizer_update(cx, user, &kiln_tree_def_two, &in->params, &in->grads, in->step,
                                    &in->mu, &in->nu, &out->params, &out->step, &out->mu, &out->nu);
}

Test(nn_optim, a_jitted_update_with_donated_state_equals_the_eager_one) {
    kiln_ctx *cx = test_ctx();
    kiln_nn_optimizer o = kiln_nn_adamw(0.01, 0.05);
    opt_in in = {.params = make(cx, P0), .grads = make(cx, G[0])};
    kiln_nn_optimizer_init(cx, &o, &kiln_tree_def_two, &in.params, &in.step, &in.mu, &in.nu);
    opt_out eager, compiled;
    adam_step(cx, &in, &eager, &o);
    expect_ok(cx);
    kiln_jit_options jo = kiln_jit_options_default();
    jo.donate_paths = (const char *[]){"params", "mu", "nu", "step"};
    jo.n_donate_paths = 4;
    kiln_jit *f;
    cr_assert_eq(kiln_jit_create_tree(cx, adam_step, &o, &kiln_tree_def_opt_in,
                                      &kiln_tree_def_opt_out, &jo, &f),
                 KILN_OK);
    kiln_jit_call(cx, f, &in, &compiled);
    expect_ok(cx);
    kiln_tensor *e[2] = {eager.params.a, eager.nu.b}, *c[2] = {compiled.params.a, compiled.nu.b};
    for (int k = 0; k < 2; k++) {
        double ref[NA];
        for (int i = 0; i < kiln_tensor_numel(e[k]); i++)
            ref[i] = kiln_tensor_item(cx, e[k], i);
        expect_close(cx, c[k], *kiln_tensor_shape(e[k]), ref, 1e-7, 1e-6);
    }
    /* The donated inputs are dead now. */
    kiln_tensor_item(cx, in.params.a, 0);
    expect_error(cx, KILN_FAILED_PRECONDITION, "donated");
    kiln_jit_release(f);
    kiln_ctx_release(cx);
}
