/* kiln-bench's training-step cases: VGG11's whole step (forward, backward by kiln_grad,
 * SGD with momentum) as one compiled function whose parameters and momentum are donated
 * and fed back call after call, as a training loop runs it; timed with its peak memory
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

/* ---- the process's peak resident set ----------------------------------------------------- */

/* Resets the kernel's high-water mark of the resident set (VmHWM) to the current RSS;
 * 0 when this kernel cannot. */
static int rss_peak_reset(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return 0;
    int ok = fputs("5", f) >= 0;
    return (fclose(f) == 0) && ok;
}

/* VmHWM or VmRSS of /proc/self/status in MiB, or -1. */
static double rss_mib(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    double kib = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':') kib = strtod(line + n + 1, NULL);
    fclose(f);
    return kib < 0 ? -1 : kib / 1024.0;
}

/* ---- the case --------------------------------------------------------------------------- */

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
    const int n_args = 2 + 2 * P;
    step_state s = {.cx = b->cx, .n_in = n_args, .n_state = 2 * P, .ok = 1};
    s.in[0] = kiln_random_uniform(b->cx, kiln_key_from_seed(100), KILN_F32, specs[0].shape, -1, 1);
    s.in[1] =
        kiln_random_int(b->cx, kiln_key_from_seed(99), KILN_I32, specs[1].shape, 0, t.c.classes);
    for (int i = 0; i < P; i++) {
        s.in[2 + i] = kiln_random_uniform(b->cx, kiln_key_from_seed(101 + (uint64_t)i), KILN_F32,
                                          specs[2 + i].shape, -0.05, 0.05);
        s.in[2 + P + i] = kiln_zeros(b->cx, KILN_F32, specs[2 + i].shape);
    }
    if (!check(b)) goto done;
    kiln_region fn = {fn_vgg_step, &t};
    comptime_stats ct;
    if (!lower_compile(b, &fn, specs, n_args, 1 + 2 * P, (reps_policy){0, 1, opt.quick ? 1 : 3},
                       &ct, &s.exe))
        goto done;
    emit_time(b->suite, b->name, "kiln", "lower", ct.lower, 1, NULL);
    emit_time(b->suite, b->name, "kiln", "compile", ct.compile, 1, NULL);
    kiln_ctx_trim(b->cx);
    double t0 = now();
    step_once(&s);
    double first = now() - t0;
    /* Forward, then the gradients by the activations and by the weights: about three
     * forward passes of multiply-adds (the first layer's input gradient is not needed). */
    double flops = 3.0 * fwd_flops;
    int have_rss = rss_peak_reset();
    stats st = measure(step_once, &s, policy_slow(opt.quick ? 2 : 3));
    double rss_peak = have_rss ? rss_mib("VmHWM") : -1;
    if (!s.ok || !check(b)) goto done;
    char note[200];
    snprintf(note, sizeof note,
             "VGG%d, softmax cross-entropy, SGD momentum 0.9; weights and momentum donated "
             "(%d tensors); loss %.4f",
             depth, 2 * P, (double)s.loss);
    emit_time(b->suite, b->name, "kiln", "first_call", single(first), b->threads, NULL);
    emit_time(b->suite, b->name, "kiln", "call", st, b->threads, note);
    char lim[200];
    emit_rate(b->suite, b->name, "kiln", "gflops", st, flops / 1e9, "GFLOP/s", b->threads,
              limits_flops(lim, sizeof lim, "3x the forward's multiply-adds"));
    double sgemm = b->threads > 1 ? machine.sgemmN : machine.sgemm1;
    emit_time(b->suite, b->name, "kiln", "floor", single(flops / sgemm), b->threads,
              "flops / sgemm rate");
    if (rss_peak >= 0)
        emit(b->suite, b->name, "kiln", "peak_rss", rss_peak, rss_peak, rss_peak, "MiB", st.reps,
             b->threads, "the process's peak resident set during the steps");
done:
    kiln_exe_release(s.exe);
    for (int i = 0; i < n_args; i++)
        kiln_tensor_release(s.in[i]);
}

void case_vgg11_train_b16(bench *b) { vgg_train_case(b, 11, 16, 224); }
