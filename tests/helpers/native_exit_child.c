/* SPDX-License-Identifier: Apache-2.0 */
/* A program that compiles a kernel with the native tier in the background and exits while
 * the compiler runs (everything of its own released first, so that LeakSanitizer has
 * nothing to say) (tests/runtime/test_native.c checks that nothing is left behind: the
 * compiler is stopped and its build directory removed). Usage: native_exit_child DELAY_MS */
#define _DEFAULT_SOURCE /* usleep */
#include <stdlib.h>
#include <unistd.h>

#include "kiln/kiln.h"

static kiln_status fn(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_maximum(cx, kiln_multiply(cx, a[0], kiln_scalar_like(cx, a[0], 3)), a[0]);
    return kiln_ctx_status(cx);
}

int main(int argc, char **argv) {
    kiln_ctx_options o = kiln_ctx_options_default();
    o.native = KILN_NATIVE_BACKGROUND;
    kiln_ctx *cx = NULL;
    if (kiln_ctx_create(&o, &cx) != KILN_OK) return 2;
    kiln_region r = {fn, NULL};
    kiln_arg_spec s = {.dtype = KILN_F32, .shape = KILN_SHAPE(1000)};
    kiln_module *m = NULL;
    kiln_exe *exe = NULL;
    if (kiln_lower(cx, &r, &s, 1, 1, NULL, &m) != KILN_OK) return 3;
    if (kiln_compile(cx, m, NULL, &exe) != KILN_OK) return 4;
    usleep((useconds_t)(argc > 1 ? atoi(argv[1]) : 20) * 1000); /* the build has started */
    /* released: the build goes on (it holds the kernel), and exit() meets it */
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
    return 0;
}
