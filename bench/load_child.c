/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-load-child: what the time_to_load case times (kiln-bench spawns it to its exit). A
 * user's smallest program: load libkiln (dynamically, and nothing else of kiln-bench's:
 * kiln-bench itself links OpenBLAS), create a ctx, lower, compile and call cos(f32[10]).
 * Exit status 0 when the result is right. */
#include <kiln/kiln.h>

static kiln_status fn_cos(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] = kiln_cosine(cx, in[0]);
    return kiln_ctx_status(cx);
}

int main(void) {
    kiln_ctx *cx;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return 1;
    kiln_region fn = {fn_cos, NULL};
    kiln_arg_spec arg = {.dtype = KILN_F32, .shape = KILN_SHAPE(10)};
    kiln_module *m = NULL;
    kiln_exe *exe = NULL;
    kiln_tensor *x = kiln_iota(cx, KILN_F32, KILN_SHAPE(10), 0), *r = NULL;
    int ok = kiln_lower(cx, &fn, &arg, 1, 1, NULL, &m) == KILN_OK &&
             kiln_compile(cx, m, NULL, &exe) == KILN_OK &&
             kiln_exe_call(cx, exe, &x, &r) == KILN_OK && kiln_tensor_item(cx, r, 0) == 1.0;
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
    return ok ? 0 : 1;
}
