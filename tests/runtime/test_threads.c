/* SPDX-License-Identifier: Apache-2.0 */
/* One executable called from several threads at once (tests/support/threads_scenarios.c,
 * which the ThreadSanitizer build also runs). */
#include <kiln/nn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"
#include "threads_scenarios.h"

static void scenario(int which) {
    char err[512];
    cr_assert(kiln_test_thread_scenario(which, err, sizeof err), "%s: %s",
              kiln_test_thread_scenarios[which], err);
}

Test(threads, one_executable_from_many_threads) { scenario(0); }

Test(threads, regions_interpreted_on_many_threads) { scenario(1); }

Test(threads, donation_on_many_threads) { scenario(2); }

Test(threads, executables_on_two_devices_at_once) { scenario(3); }

Test(threads, interpreter_backend_on_many_threads) { scenario(4); }

Test(threads, tensors_released_on_other_threads_as_the_ctx_goes) { scenario(5); }

Test(threads, convolutions_compiled_and_called_on_many_threads) { scenario(6); }

/* A process forked while the convolution builder thread may be building: the child has no
 * builder, and still gets its convolutions (what was queued or half built is built again
 * there), with the same results as eagerly. On one thread: GNU OpenMP cannot run parallel
 * regions in a child forked after its thread pool started, whatever kiln does. */
static kiln_status conv_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_nn_conv2d_params p = {.padding = {1, 1}};
    out[0] = kiln_nn_conv2d(cx, in[0], in[1], NULL, &p);
    return kiln_ctx_status(cx);
}

static bool conv_matches(kiln_ctx *cx, kiln_exe *exe, kiln_tensor *x, kiln_tensor *w) {
    kiln_tensor *want = NULL, *got = NULL;
    conv_fn(cx, (kiln_tensor *[]){x, w}, &want, NULL);
    return kiln_exe_call(cx, exe, (kiln_tensor *[]){x, w}, &got) == KILN_OK && want &&
           kiln_tensor_nbytes(got) == kiln_tensor_nbytes(want) &&
           memcmp(kiln_tensor_data(got), kiln_tensor_data(want), kiln_tensor_nbytes(got)) == 0;
}

Test(threads, a_process_forked_while_convolutions_build_still_runs_them) {
    kiln_ctx_options o = kiln_ctx_options_default();
    o.num_threads = 1;
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    for (int geometry = 0; geometry < 4; geometry++) {
        int64_t hw = 24 + 2 * geometry; /* not the scenarios' sizes: fresh primitives */
        kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(2, 8, hw, hw)},
                                 {.dtype = KILN_F32, .shape = KILN_SHAPE(16, 8, 3, 3)}};
        kiln_region fn = {conv_fn, NULL};
        kiln_module *m = NULL;
        kiln_exe *exe = NULL;
        cr_assert_eq(kiln_lower(cx, &fn, args, 2, 1, NULL, &m), KILN_OK);
        cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
        kiln_module_release(m);
        kiln_tensor *x =
            kiln_random_uniform(cx, kiln_key_from_seed(1), KILN_F32, args[0].shape, -1, 1);
        kiln_tensor *w =
            kiln_random_uniform(cx, kiln_key_from_seed(2), KILN_F32, args[1].shape, -1, 1);
        pid_t pid = fork(); /* right after compiling: the builder is likely on it */
        cr_assert_geq(pid, 0);
        if (pid == 0) _exit(conv_matches(cx, exe, x, w) ? 0 : 3);
        int status = 0;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the child's convolution failed (status %d)", status);
        cr_assert(conv_matches(cx, exe, x, w), "the parent's convolution failed");
        kiln_exe_release(exe);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}
