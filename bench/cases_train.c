/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bench's training-step cases: VGG11's whole step (forward, backward by kiln_grad,
 * SGD with momentum) and the digits CNN's (kiln-demo's network, Adam), each as one compiled
 * function whose parameters and optimizer state are donated and fed back call after call,
 * as a training loop runs it; timed with its peak memory
 * (the process's peak resident set while it steps, as bench/peers/vgg_train_step.py
 * reports it for PyTorch and JAX). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* ---- the step -------------------------------------------------------------------------- */

typedef struct {
    vgg_config c;
    int n_params; /* the VGG's weights and biases: arguments 2.. and 2 + n_params.. */
} vgg_train;

/* loss(x, labels, params...) = mean softmax cross-entropy of the logits. */
static kiln_status fn_vgg_xent(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *user) {
    vgg_train *t = user;
    kiln_tensor *fwd_in[64], *logits = NULL;
    fwd_in[0] = in[0];
    for (int i = 0; i < t->n_params; i++)
        fwd_in[1 + i] = in[2 + i];
    kiln_status st = fn_vgg(cx, fwd_in, &logits, &t->c);
    if (st != KILN_OK) return st;
    out[0] = kiln_nn_softmax_cross_entropy(cx, logits, in[1]);
    return kiln_ctx_status(cx);
}

/* (x, labels, params, momentum) -> (loss, params', momentum'): torch.optim.SGD's update
 * with momentum 0.9 and lr 0.01 (kiln_nn_optimizer_update). */
static kiln_status fn_vgg_step(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *user) {
    vgg_train *t = user;
    const int P = t->n_params;
    int32_t argnums[64];
    for (int i = 0; i < P; i++)
        argnums[i] = 2 + i;
    kiln_grad_options go = kiln_grad_options_default();
    go.argnums = argnums;
    go.n_argnums = P;
    kiln_region loss = {fn_vgg_xent, t};
    kiln_tensor *g[64];
    kiln_status st = kiln_value_and_grad(cx, &loss, 2 + P, in, 1, &go, out, g);
    if (st != KILN_OK) return st;
    const kiln_tree_def *def = kiln_nn_vgg_def(t->c.depth, false);
    kiln_nn_vgg p = {.depth = t->c.depth}, gr = p, mu = p, p2 = p, mu2 = p;
    kiln_tree_unflatten(cx, def, in + 2, P, NULL, 0, &p);
    kiln_tree_unflatten(cx, def, g, P, NULL, 0, &gr);
    kiln_tree_unflatten(cx, def, in + 2 + P, P, NULL, 0, &mu);
    kiln_nn_optimizer sgd = kiln_nn_sgd(0.01, 0.9, 0);
    kiln_tensor *step = kiln_scalar(cx, 0, KILN_I32), *step2 = NULL;
    kiln_nn_optimizer_update(cx, &sgd, def, &p, &gr, step, &mu, NULL, &p2, &step2, &mu2, NULL);
    kiln_tree_flatten(cx, def, &p2, out + 1, P, NULL, 0);
    kiln_tree_flatten(cx, def, &mu2, out + 1 + P, P, NULL, 0);
    return kiln_ctx_status(cx);
}

/* ---- calling it as a training loop does ---------------------------------------------------- */

typedef struct {
    kiln_ctx *cx;
    kiln_exe *exe;
    kiln_tensor *in[130], *out[130];
    int n_in, n_state; /* arguments 2.. are the state (donated; results 1.. replace them) */
    float loss;
    int ok;
} step_state;

static void step_once(void *user) {
    step_state *s = user;
    if (!s->ok) return;
    if (kiln_exe_call(s->cx, s->exe, s->in, s->out) != KILN_OK) {
        s->ok = 0;
        return;
    }
    /* The donated state is dead now: the results take its place. */
    for (int i = 0; i < s->n_state; i++) {
        kiln_tensor_release(s->in[2 + i]);
        s->in[2 + i] = s->out[1 + i];
    }
    const float *l = kiln_tensor_data(s->out[0]);
    s->loss = l ? *l : -1.0f;
    kiln_tensor_release(s->out[0]);
}

/* ---- running a step case ------------------------------------------------------------------ */

/* What a step case hands the runner: its function, arguments (in[0..1]: the batch; then
 * n_state donated state tensors, which results 1.. replace), the flops of a step (0: no
 * floor) and what they count, the repetitions, the note. */
typedef struct {
    kiln_region fn;
    const kiln_arg_spec *specs;
    int n_args, n_state;
    double flops;
    const char *flops_are;
    reps_policy calls;
    const char *what;
} step_case;

/* Compiles the step, calls it once (first_call), then steadily with its state fed back;
 * records the times, the rate and floor, and the peak resident set. Takes over s->in. */
static void run_step_case(bench *b, const step_case *c, step_state *s) {
    comptime_stats ct;
    if (!check(b)) goto done;
    if (!lower_compile(b, &c->fn, c->specs, c->n_args, 1 + c->n_state,
                       (reps_policy){0, 1, opt.quick ? 1 : 3}, &ct, &s->exe))
        goto done;
    emit_time(b->suite, b->name, "kiln", "lower", ct.lower, 1, NULL);
    emit_time(b->suite, b->name, "kiln", "compile", ct.compile, 1, NULL);
    kiln_ctx_trim(b->cx);
    double t0 = now();
    step_once(s);
    double first = now() - t0;
    float first_loss = s->loss;
    int have_rss = rss_peak_reset();
    stats st = measure(step_once, s, c->calls);
    double rss_peak = have_rss ? rss_peak_mib() : -1;
    if (!s->ok || !check(b)) goto done;
    char note[200];
    snprintf(note, sizeof note, "%s; %d state tensors donated; loss %.4f -> %.4g", c->what,
             c->n_state, (double)first_loss, (double)s->loss);
    emit_time(b->suite, b->name, "kiln", "first_call", single(first), b->threads, NULL);
    emit_time(b->suite, b->name, "kiln", "call", st, b->threads, note);
    if (c->flops > 0) {
        char lim[200];
        emit_rate(b->suite, b->name, "kiln", "gflops", st, c->flops / 1e9, "GFLOP/s", b->threads,
                  limits_flops(lim, sizeof lim, c->flops_are));
        double sgemm = b->threads > 1 ? machine.sgemmN : machine.sgemm1;
        emit_time(b->suite, b->name, "kiln", "floor", single(c->flops / sgemm), b->threads,
                  "flops / sgemm rate");
    }
    if (rss_peak >= 0)
        emit(b->suite, b->name, "kiln", "peak_rss", rss_peak, rss_peak, rss_peak, "MiB", st.reps,
             b->threads, "the process's peak resident set during the steps");
done:
    kiln_exe_release(s->exe);
    for (int i = 0; i < s->n_in; i++)
        kiln_tensor_release(s->in[i]);
}

/* ---- the cases ------------------------------------------------------------------------------ */

static void vgg_train_case(bench *b, int depth, int64_t n, int64_t hw) {
    vgg_train t = {vgg_cfg(depth), 0};
    t.c.dense_in = 512 * (int)(hw / 32) * (int)(hw / 32);
    kiln_arg_spec fwd[64], specs[130];
    double fwd_flops = 0;
    int n_fwd = vgg_specs(&t.c, n, hw, hw, fwd, &fwd_flops);
    const int P = n_fwd - 1;
    t.n_params = P;
    specs[0] = fwd[0];
    specs[1] = (kiln_arg_spec){.dtype = KILN_I32, .shape = KILN_SHAPE(n)};
    for (int i = 0; i < P; i++) {
        specs[2 + i] = fwd[1 + i], specs[2 + i].donate = true;
        specs[2 + P + i] = specs[2 + i];
    }
    step_state s = {.cx = b->cx, .n_in = 2 + 2 * P, .n_state = 2 * P, .ok = 1};
    s.in[0] = kiln_random_uniform(b->cx, kiln_key_from_seed(100), KILN_F32, specs[0].shape, -1, 1);
    s.in[1] =
        kiln_random_int(b->cx, kiln_key_from_seed(99), KILN_I32, specs[1].shape, 0, t.c.classes);
    for (int i = 0; i < P; i++) {
        s.in[2 + i] = kiln_random_uniform(b->cx, kiln_key_from_seed(101 + (uint64_t)i), KILN_F32,
                                          specs[2 + i].shape, -0.05, 0.05);
        s.in[2 + P + i] = kiln_zeros(b->cx, KILN_F32, specs[2 + i].shape);
    }
    char what[96];
    snprintf(what, sizeof what, "VGG%d, softmax cross-entropy, SGD momentum 0.9", depth);
    /* Forward, then the gradients by the activations and by the weights: about three
     * forward passes of multiply-adds (the first layer's input gradient is not needed). */
    step_case c = {{fn_vgg_step, &t},        specs,          2 + 2 * P, 2 * P, 3.0 * fwd_flops,
                   "3x the forward's flops", policy_slow(3), what};
    run_step_case(b, &c, &s);
}

/* The digits CNN's step of kiln-demo (examples/train_digits.c) on a batch of 32: the loss
 * alone (as bench/peers/digits_step.py), Adam at 1e-3. Arguments: images, labels, then the
 * parameters, Adam's two moments and its step count (donated). */
#define DIGITS_P 8

static kiln_status fn_digits_loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *user) {
    (void)user;
    kiln_nn_cnn p;
    kiln_status st =
        kiln_tree_unflatten(cx, &kiln_tree_def_kiln_nn_cnn, in + 2, DIGITS_P, NULL, 0, &p);
    if (st != KILN_OK) return st;
    out[0] = kiln_nn_softmax_cross_entropy(cx, kiln_nn_cnn_forward(cx, &p, in[0]), in[1]);
    return kiln_ctx_status(cx);
}

static kiln_status fn_digits_step(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *user) {
    (void)user;
    int32_t argnums[DIGITS_P];
    for (int i = 0; i < DIGITS_P; i++)
        argnums[i] = 2 + i;
    kiln_grad_options go = kiln_grad_options_default();
    go.argnums = argnums;
    go.n_argnums = DIGITS_P;
    kiln_region loss = {fn_digits_loss, NULL};
    kiln_tensor *g[DIGITS_P];
    kiln_status st = kiln_value_and_grad(cx, &loss, 2 + DIGITS_P, in, 1, &go, out, g);
    if (st != KILN_OK) return st;
    const kiln_tree_def *def = &kiln_tree_def_kiln_nn_cnn;
    kiln_nn_cnn p, gr, mu, nu, p2, mu2, nu2;
    kiln_tree_unflatten(cx, def, in + 2, DIGITS_P, NULL, 0, &p);
    kiln_tree_unflatten(cx, def, g, DIGITS_P, NULL, 0, &gr);
    kiln_tree_unflatten(cx, def, in + 2 + DIGITS_P, DIGITS_P, NULL, 0, &mu);
    kiln_tree_unflatten(cx, def, in + 2 + 2 * DIGITS_P, DIGITS_P, NULL, 0, &nu);
    kiln_nn_optimizer adam = kiln_nn_adam(1e-3);
    kiln_nn_optimizer_update(cx, &adam, def, &p, &gr, in[2 + 3 * DIGITS_P], &mu, &nu, &p2,
                             &out[1 + 3 * DIGITS_P], &mu2, &nu2);
    kiln_tree_flatten(cx, def, &p2, out + 1, DIGITS_P, NULL, 0);
    kiln_tree_flatten(cx, def, &mu2, out + 1 + DIGITS_P, DIGITS_P, NULL, 0);
    kiln_tree_flatten(cx, def, &nu2, out + 1 + 2 * DIGITS_P, DIGITS_P, NULL, 0);
    return kiln_ctx_status(cx);
}

void case_digits_train(bench *b) {
    const int64_t n = 32;
    kiln_nn_cnn_config cfg = kiln_nn_cnn_config_digits();
    kiln_nn_cnn params;
    kiln_tensor *leaves[DIGITS_P];
    if (kiln_nn_cnn_create(b->cx, &cfg, kiln_key_from_seed(7), &params) != KILN_OK ||
        kiln_tree_flatten(b->cx, &kiln_tree_def_kiln_nn_cnn, &params, leaves, DIGITS_P, NULL, 0) !=
            KILN_OK) {
        check(b);
        return;
    }
    kiln_arg_spec specs[3 + 3 * DIGITS_P];
    step_state s = {.cx = b->cx, .n_in = 3 + 3 * DIGITS_P, .n_state = 1 + 3 * DIGITS_P, .ok = 1};
    specs[0] = (kiln_arg_spec){.dtype = KILN_F32, .shape = KILN_SHAPE(n, 1, 8, 8)};
    specs[1] = (kiln_arg_spec){.dtype = KILN_I32, .shape = KILN_SHAPE(n)};
    s.in[0] = kiln_random_uniform(b->cx, kiln_key_from_seed(8), KILN_F32, specs[0].shape, 0, 1);
    s.in[1] = kiln_random_int(b->cx, kiln_key_from_seed(9), KILN_I32, specs[1].shape, 0, 10);
    for (int i = 0; i < DIGITS_P; i++) {
        const kiln_shape *sh = kiln_tensor_shape(leaves[i]);
        for (int k = 0; k < 3; k++)
            specs[2 + k * DIGITS_P + i] =
                (kiln_arg_spec){.dtype = KILN_F32, .shape = *sh, .donate = true};
        s.in[2 + i] = kiln_tensor_retain(leaves[i]);
        s.in[2 + DIGITS_P + i] = kiln_zeros(b->cx, KILN_F32, *sh);
        s.in[2 + 2 * DIGITS_P + i] = kiln_zeros(b->cx, KILN_F32, *sh);
    }
    specs[2 + 3 * DIGITS_P] = (kiln_arg_spec){.dtype = KILN_I32, .shape = {0}, .donate = true};
    s.in[2 + 3 * DIGITS_P] = kiln_scalar(b->cx, 0, KILN_I32);
    step_case c = {{fn_digits_step, NULL},
                   specs,
                   3 + 3 * DIGITS_P,
                   1 + 3 * DIGITS_P,
                   0,
                   NULL,
                   policy_fast(),
                   "the digits CNN (kiln-demo's), softmax cross-entropy, Adam"};
    run_step_case(b, &c, &s);
}

void case_vgg11_train_b16(bench *b) { vgg_train_case(b, 11, 16, 224); }
