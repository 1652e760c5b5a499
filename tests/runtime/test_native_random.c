/* SPDX-License-Identifier: Apache-2.0 */
/* The native tier against the tiled engine on the random-program generator's programs
 * (tests/support/random_prog.h): each program is compiled twice, by a ctx without native
 * kernels and by one that builds them before kiln_compile returns, called on the same
 * inputs, and every result compared bit for bit (a NaN may stand for any NaN: which one
 * two NaNs give is not specified). Transcendentals included: the native code calls the
 * tiled engine's vector math. Small programs and big ones (several tiles and threads). */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/engine/native.h"
#include "kiln/kiln.h"
#include "random_prog.h"
#include "test_util.h"

static kiln_ctx *ctx_with(kiln_native_mode mode, const char *cache_dir) {
    kiln_ctx_options o = kiln_ctx_options_default();
    o.native = mode;
    o.cache_dir = cache_dir;
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    return cx;
}

/* p compiled for the CPU by cx and called on its inputs; false when it does not lower
 * (the generator's few programs that are errors by design are skipped alike). */
static bool run(kiln_ctx *cx, const prog *p, kiln_tensor **out) {
    run_env env = {p, NULL};
    kiln_region fn = {run_prog, &env};
    kiln_arg_spec specs[MAX_IN];
    kiln_tensor *in[MAX_IN];
    for (int i = 0; i < p->n_in; i++) {
        const node *n = &p->nodes[p->in_node[i]];
        specs[i] = (kiln_arg_spec){.dtype = n->dtype, .shape = n->shape};
        in[i] = random_tensor(cx, n->seed, n->dtype, n->shape);
    }
    kiln_module *m = NULL;
    if (kiln_lower(cx, &fn, specs, p->n_in, p->n_out, NULL, &m) != KILN_OK) {
        kiln_ctx_clear_error(cx);
        return false;
    }
    kiln_compile_options co = kiln_compile_options_default();
    co.backend = "cpu";
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &co, &exe), KILN_OK, "seed %llu: %s",
                 (unsigned long long)p->seed, kiln_ctx_error_message(cx));
    kiln_module_release(m);
    cr_assert_eq(kiln_exe_call(cx, exe, in, out), KILN_OK, "seed %llu: %s",
                 (unsigned long long)p->seed, kiln_ctx_error_message(cx));
    kiln_exe_release(exe);
    return true;
}

static void compare(const prog *p, int r, const kiln_tensor *want, const kiln_tensor *got) {
    kiln_dtype d = kiln_tensor_dtype(want);
    cr_assert_eq(kiln_tensor_nbytes(got), kiln_tensor_nbytes(want));
    size_t es = kiln_dtype_size(d), n = kiln_tensor_nbytes(want) / es;
    const unsigned char *w = kiln_tensor_data(want), *g = kiln_tensor_data(got);
    for (size_t e = 0; e < n; e++)
        if (memcmp(w + e * es, g + e * es, es) &&
            !(test_is_nan(d, w + e * es) && test_is_nan(d, g + e * es)))
            cr_assert_fail("seed %llu: result %d element %zu: native and tiled differ",
                           (unsigned long long)p->seed, r, e);
}

static void check_programs(uint64_t first_seed, int count, bool big) {
    static char dir[256];
    snprintf(dir, sizeof dir, "%s/nativerandXXXXXX", KILN_TEST_TMP_DIR);
    cr_assert_not_null(mkdtemp(dir));
    kiln_ctx *tiled = ctx_with(KILN_NATIVE_OFF, NULL), *native = ctx_with(KILN_NATIVE_WAIT, dir);
    const char *why;
    cr_assert(kiln__native_compiler(&why), "%s", why);
    static prog p;
    int compared = 0;
    for (int i = 0; i < count; i++) {
        gen_program(&p, first_seed + (uint64_t)i, big);
        kiln_tensor *want[MAX_OUT] = {0}, *got[MAX_OUT] = {0};
        kiln_scope_begin(tiled);
        kiln_scope_begin(native);
        if (run(tiled, &p, want) && run(native, &p, got)) {
            for (int r = 0; r < p.n_out; r++)
                compare(&p, r, want[r], got[r]);
            compared++;
        }
        kiln_scope_end(native);
        kiln_scope_end(tiled);
    }
    kiln__native_stats s = kiln__native_stats_get();
    cr_assert_geq(compared, count * 9 / 10, "%d of %d programs ran", compared, count);
    cr_assert_geq(s.ready, count / 4, "only %lld native kernels", (long long)s.ready);
    cr_assert_eq(s.failed, 0, "%lld native kernels failed to build", (long long)s.failed);
    cr_assert_geq(s.runs, count / 4, "only %lld native runs", (long long)s.runs);
    kiln_ctx_release(native);
    kiln_ctx_release(tiled);
}

Test(native_random, small_programs_give_the_tiled_engines_bits) {
    check_programs(UINT64_C(0x6e617469766531), 48, false);
}

Test(native_random, big_programs_give_the_tiled_engines_bits) {
    check_programs(UINT64_C(0x6e617469766532), 8, true);
}
