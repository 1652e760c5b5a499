/* SPDX-License-Identifier: Apache-2.0 */
/* Programs of 10^5 ops, as a user's Python-style loop over time steps traces them: the
 * 1-D heat equation unrolled 10,000 times (130,000 ops before the passes) lowers,
 * compiles and computes what the same steps compute in C. Nothing about time is asserted
 * here (kiln-bench's comptime/heat cases measure it); what is checked is that the linear-
 * time passes, the fusion plan and the buffer plan stay right at this size. */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"

#define POINTS 256
#define STEPS 10000

/* u <- u + 0.1 (l - 2c + r) on the interior; the two boundary values stay. */
static kiln_status heat(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    const int steps = *(const int *)user;
    kiln_tensor *x = in[0];
    for (int s = 0; s < steps; s++)
        x = test_heat_step(cx, x, 0.1);
    out[0] = x;
    return kiln_ctx_status(cx);
}

Test(large_programs, ten_thousand_unrolled_steps_compile_and_compute_right) {
    kiln_ctx *cx = test_ctx();
    int steps = STEPS;
    kiln_region fn = {heat, &steps};
    kiln_arg_spec arg = {.dtype = KILN_F32, .shape = KILN_SHAPE(POINTS)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &arg, 1, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_module_info mi;
    cr_assert_eq(kiln_module_info_get(cx, m, &mi), KILN_OK);
    cr_assert_geq(mi.n_ops, 13 * STEPS, "%d ops", (int)mi.n_ops);
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);

    /* A hot spot in the middle; the ends held at 1 and 0. */
    float *u = malloc(POINTS * sizeof *u), *next = malloc(POINTS * sizeof *next);
    cr_assert(u && next);
    for (int i = 0; i < POINTS; i++)
        u[i] = i == 0 ? 1.0f : (i > POINTS / 3 && i < POINTS / 2) ? 4.0f : 0.0f;
    kiln_tensor *x = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(POINTS), u, POINTS * sizeof *u);
    cr_assert(x);
    kiln_tensor *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &r), KILN_OK, "%s", kiln_ctx_error_message(cx));

    /* The same steps in C, in double: f32 rounding over 10^4 steps of a stable scheme stays
     * within 1e-4 of it. */
    double *want = malloc(POINTS * sizeof *want), *tmp = malloc(POINTS * sizeof *tmp);
    cr_assert(want && tmp);
    for (int i = 0; i < POINTS; i++)
        want[i] = u[i];
    for (int s = 0; s < STEPS; s++) {
        for (int i = 1; i < POINTS - 1; i++)
            tmp[i] = want[i] + 0.1 * (want[i - 1] - 2 * want[i] + want[i + 1]);
        for (int i = 1; i < POINTS - 1; i++)
            want[i] = tmp[i];
    }
    const float *got = kiln_tensor_data(r);
    double worst = 0;
    for (int i = 0; i < POINTS; i++)
        worst = fmax(worst, fabs(got[i] - want[i]));
    cr_assert_lt(worst, 1e-4, "largest difference %g", worst);
    cr_assert_eq(got[0], 1.0f);
    cr_assert_eq(got[POINTS - 1], 0.0f);
    free(u), free(next), free(want), free(tmp);
    kiln_exe_release(exe);
    expect_ok(cx);
    kiln_ctx_release(cx);
}
