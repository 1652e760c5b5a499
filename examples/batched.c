/* SPDX-License-Identifier: Apache-2.0 */
/* Batching and scans: kiln_vmap and kiln_scan.
 *
 * 1. Per-example gradients of a logistic regression: kiln_vmap of kiln_grad over the
 *    examples (weights shared), what differentially private SGD clips. Their mean is the
 *    gradient of the mean loss, which the program checks.
 * 2. A batch of damped oscillators integrated with kiln_scan (semi-implicit Euler), one
 *    damping per oscillator, batched by kiln_vmap and compiled by kiln_jit into one
 *    program: the whole batch steps together inside one loop. The program checks the
 *    trajectories against a plain C loop and prints the executable.
 *
 * Exits non-zero if a check fails. */
#include <kiln/kiln.h>
#include <math.h>
#include <stdio.h>

#define EXAMPLES 6
#define FEATURES 3
#define OSCILLATORS 4
#define STEPS 200
#define DT 0.05

/* ---- 1. per-example gradients ---------------------------------------------------------- */

/* The loss of one example: in[0] weights f32[3], in[1] features f32[3], in[2] label f32[]. */
static kiln_status example_loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                void *user) {
    (void)user;
    kiln_tensor *z = kiln_sum(cx, kiln_multiply(cx, in[0], in[1]), KILN_DIMS(0), false);
    /* log(1 + exp(-y z)), the logistic loss with labels -1 / +1 */
    out[0] =
        kiln_log_plus_one(cx, kiln_exponential(cx, kiln_negate(cx, kiln_multiply(cx, in[2], z))));
    return kiln_ctx_status(cx);
}

static kiln_status example_grad(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                void *user) {
    (void)user;
    return kiln_grad(cx, &(kiln_region){example_loss, NULL}, 3, in, NULL, out);
}

static kiln_status mean_loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_vmap_options o = kiln_vmap_options_default();
    o.in_axes = (int32_t[]){KILN_VMAP_NONE, 0, 0};
    kiln_tensor *each;
    if (kiln_vmap(cx, &(kiln_region){example_loss, NULL}, 3, in, 1, &o, &each) != KILN_OK)
        return kiln_ctx_status(cx);
    out[0] = kiln_mean(cx, each, KILN_DIMS(0), false);
    return kiln_ctx_status(cx);
}

static int per_example_gradients(kiln_ctx *cx) {
    const float w[FEATURES] = {0.5f, -0.25f, 1.0f};
    const float x[EXAMPLES][FEATURES] = {{1, 2, 0},  {0, 1, -1},         {2, 0, 1},
                                         {-1, 1, 1}, {0.5f, 0.5f, 0.5f}, {3, -1, 0}};
    const float y[EXAMPLES] = {1, -1, 1, -1, 1, -1};
    kiln_tensor *args[3] = {
        kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(FEATURES), w, sizeof w),
        kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(EXAMPLES, FEATURES), x, sizeof x),
        kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(EXAMPLES), y, sizeof y)};
    kiln_vmap_options o = kiln_vmap_options_default();
    o.in_axes = (int32_t[]){KILN_VMAP_NONE, 0, 0};
    kiln_tensor *grads = NULL, *mean_grad = NULL;
    kiln_vmap(cx, &(kiln_region){example_grad, NULL}, 3, args, 1, &o, &grads);
    kiln_grad(cx, &(kiln_region){mean_loss, NULL}, 3, args, NULL, &mean_grad);
    if (kiln_ctx_status(cx) != KILN_OK) return 1;
    printf("per-example gradients (one row per example):\n");
    kiln_tensor_print(cx, grads, stdout);
    kiln_tensor *norms =
        kiln_sqrt(cx, kiln_sum(cx, kiln_multiply(cx, grads, grads), KILN_DIMS(1), false));
    printf("their norms (what DP-SGD clips):\n");
    kiln_tensor_print(cx, norms, stdout);
    kiln_tensor *diff = kiln_max(
        cx, kiln_abs(cx, kiln_subtract(cx, kiln_mean(cx, grads, KILN_DIMS(0), false), mean_grad)),
        KILN_DIMS(0), false);
    if (kiln_ctx_status(cx) != KILN_OK) return 1;
    float d = *(const float *)kiln_tensor_data(diff);
    printf("mean of the per-example gradients vs the gradient of the mean loss: %.2g apart\n",
           (double)d);
    return d < 1e-6f ? 0 : 1;
}

/* ---- 2. a batch of oscillators --------------------------------------------------------- */

/* One Euler step: carry (x, v), no xs; y_t = x. */
static kiln_status euler_step(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *user) {
    kiln_tensor *damping = user; /* one oscillator's: a traced f32[] under vmap */
    kiln_tensor *dt = kiln_scalar(cx, DT, KILN_F32);
    kiln_tensor *accel = kiln_subtract(cx, kiln_negate(cx, s[0]), kiln_multiply(cx, damping, s[1]));
    r[1] = kiln_add(cx, s[1], kiln_multiply(cx, dt, accel)); /* v += dt * (-x - c v) */
    r[0] = kiln_add(cx, s[0], kiln_multiply(cx, dt, r[1]));  /* x += dt * v */
    r[2] = r[0];
    return kiln_ctx_status(cx);
}

/* One oscillator: in[0] its damping f32[], out[0] its positions f32[STEPS]. */
static kiln_status trajectory(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *init[2] = {kiln_scalar(cx, 1, KILN_F32), kiln_scalar(cx, 0, KILN_F32)};
    kiln_scan_options o = kiln_scan_options_default();
    o.length = STEPS;
    o.unroll = 4;
    kiln_tensor *final[2];
    return kiln_scan(cx, &(kiln_region){euler_step, in[0]}, init, 2, NULL, 0, 1, &o, final, out);
}

static kiln_status batch_of_trajectories(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                         void *user) {
    (void)user;
    return kiln_vmap(cx, &(kiln_region){trajectory, NULL}, 1, in, 1, NULL, out);
}

static int oscillators(kiln_ctx *cx) {
    const float damping[OSCILLATORS] = {0, 0.1f, 0.5f, 2};
    kiln_tensor *c =
        kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(OSCILLATORS), damping, sizeof damping);
    kiln_jit *jit = NULL;
    kiln_tensor *xs = NULL;
    if (kiln_jit_create(cx, &(kiln_region){batch_of_trajectories, NULL}, 1, 1, NULL, &jit) !=
            KILN_OK ||
        kiln_jit_call_list(cx, jit, &c, &xs) != KILN_OK)
        return 1;
    printf("\nthe batched integration, compiled:\n");
    kiln_exe *exe = kiln_jit_last_exe(jit);
    kiln_exe_print(cx, exe, stdout);
    kiln_exe_release(exe);
    /* The same in plain C. */
    const float *got = kiln_tensor_data(xs);
    double worst = 0;
    for (int k = 0; k < OSCILLATORS; k++) {
        float x = 1, v = 0, dt = (float)DT;
        for (int t = 0; t < STEPS; t++) {
            v = v + dt * (-x - damping[k] * v);
            x = x + dt * v;
            double e = fabs((double)got[k * STEPS + t] - (double)x);
            if (e > worst) worst = e;
        }
        printf("oscillator %d (damping %.1f): x(%g) = %+.5f\n", k, (double)damping[k], STEPS * DT,
               (double)got[k * STEPS + STEPS - 1]);
    }
    printf("largest difference from the plain C loop: %.2g\n", worst);
    kiln_jit_release(jit);
    return worst < 1e-5 ? 0 : 1;
}

int main(void) {
    kiln_ctx *cx;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return 1;
    int failed = per_example_gradients(cx);
    if (!failed) failed = oscillators(cx);
    if (kiln_ctx_status(cx) != KILN_OK) {
        fprintf(stderr, "error: %s\n", kiln_ctx_error_message(cx));
        failed = 1;
    }
    kiln_ctx_release(cx);
    return failed;
}
