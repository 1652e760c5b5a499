/* SPDX-License-Identifier: Apache-2.0 */
/* The native tier of fused kernels (src/backends/cpu/engine/native.c): with KILN_NATIVE=wait the
 * elementwise kernels are compiled by the C compiler while kiln_compile runs, and a call
 * gives the evaluator's bits (which the tiled engine gives too), split over the thread
 * pool, transcendentals included (they call the tiled engine's vector math); a second
 * compile loads from the disk cache; in the background a call never waits and the native
 * code takes over when ready; without a compiler everything still runs; the ctx's options
 * override the environment. Each test is a process of its own, so each sets the
 * environment it wants (the suite runs with KILN_NATIVE=off). Random programs compiled
 * with and without the tier agree bit for bit: test_native_random.c. */
#define _DEFAULT_SOURCE /* mkdtemp, setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/cpu/engine/native.h"
#include "kiln/kiln.h"
#include "test_util.h"

#define ROWS 700
#define COLS 301 /* 210,700 elements: several chunks of the pool */

static void use_fresh_cache(const char *policy) {
    static char dir[256];
    snprintf(dir, sizeof dir, "%s/nativeXXXXXX", KILN_TEST_TMP_DIR);
    cr_assert_not_null(mkdtemp(dir));
    setenv("KILN_CACHE_DIR", dir, 1);
    setenv("KILN_NATIVE", policy, 1);
}

/* exact ops over f32, i32 and f16, a broadcast row, a transposed read */
static kiln_status exact_fn(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *x = a[0], *row = a[1];
    kiln_tensor *t = kiln_add(cx, kiln_multiply(cx, x, kiln_scalar_like(cx, x, 1.5)), row);
    kiln_tensor *p = kiln_compare(cx, t, kiln_scalar_like(cx, t, 0), KILN_CMP_GT, KILN_CMP_DEFAULT);
    kiln_tensor *s = kiln_select(cx, p, kiln_sqrt(cx, t), kiln_negate(cx, t));
    r[0] = kiln_maximum(cx, kiln_divide(cx, s, row), kiln_minimum(cx, x, t));
    kiln_tensor *i =
        kiln_convert(cx, kiln_multiply(cx, x, kiln_scalar_like(cx, x, 1000)), KILN_I32);
    r[1] = kiln_add(cx, kiln_divide(cx, i, kiln_scalar_like(cx, i, 7)),
                    kiln_shift_left(cx, i, kiln_scalar_like(cx, i, 3)));
    kiln_tensor *h = kiln_convert(cx, x, KILN_F16);
    r[2] = kiln_multiply(cx, h, kiln_add(cx, h, kiln_scalar_like(cx, h, 0.25)));
    return kiln_ctx_status(cx);
}

/* transcendentals of f32 and f64 between exact ops: a call's argument an input, a
 * broadcast row or a computed value; a call of a call; a result that is a call's */
static kiln_status transcendental_fn(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r,
                                     void *u) {
    (void)u;
    kiln_tensor *x = a[0], *row = a[1];
    kiln_tensor *small = kiln_multiply(cx, x, kiln_scalar_like(cx, x, 0.01));
    r[0] = kiln_add(
        cx,
        kiln_multiply(cx, kiln_exponential(cx, kiln_negate(cx, kiln_multiply(cx, small, small))),
                      kiln_sine(cx, x)),
        kiln_multiply(cx, x, kiln_scalar_like(cx, x, 0.5)));
    r[1] = kiln_exponential(cx, kiln_cosine(cx, kiln_add(cx, x, row)));
    kiln_tensor *d = kiln_convert(cx, small, KILN_F64);
    r[2] = kiln_add(cx, kiln_tanh(cx, d), kiln_log(cx, kiln_abs(cx, d)));
    r[3] = kiln_logistic(cx, kiln_subtract(cx, row, x));
    return kiln_ctx_status(cx);
}

/* a transcendental of f16 keeps its kernel on the tiled engine */
static kiln_status half_fn(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *h = kiln_convert(cx, a[0], KILN_F16);
    r[0] = kiln_exponential(cx, kiln_multiply(cx, h, kiln_scalar_like(cx, h, 0.001)));
    return kiln_ctx_status(cx);
}

/* kiln_exe_print of m compiled for the CPU contains `fragment` */
static void printed_has(kiln_ctx *cx, kiln_module *m, const char *fragment) {
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = "cpu";
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    char *text = kiln_exe_to_string(cx, exe);
    cr_assert_not_null(text, "%s", kiln_ctx_error_message(cx));
    cr_assert(strstr(text, fragment), "no \"%s\" in:\n%s", fragment, text);
    kiln_string_free(cx, text);
    kiln_exe_release(exe);
}

static kiln_module *lower(kiln_ctx *cx, kiln_region_fn fn, int n_results) {
    kiln_region r = {.fn = fn};
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(ROWS, COLS)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(COLS)}};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &r, a, 2, n_results, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    return m;
}

static void inputs(kiln_ctx *cx, kiln_tensor **args) {
    static float x[ROWS * COLS], row[COLS];
    uint32_t h = 12345;
    for (int i = 0; i < ROWS * COLS; i++) {
        h ^= h << 13, h ^= h >> 17, h ^= h << 5;
        x[i] = i % 97 == 0 ? NAN : i % 89 == 0 ? -0.0f : ((float)(h % 20001) - 10000) / 77.0f;
    }
    for (int i = 0; i < COLS; i++)
        row[i] = (float)(i % 13) - 6.5f;
    args[0] = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(ROWS, COLS), x, sizeof x);
    args[1] = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(COLS), row, sizeof row);
}

/* m compiled by `backend` and called: results against the evaluator's, bit for bit (any NaN
 * for any NaN: which one two NaNs give is not specified). */
static void same_as_evaluator(kiln_ctx *cx, kiln_module *m, int n_results, const char *tag) {
    kiln_tensor *args[2];
    inputs(cx, args);
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = "cpu"; /* also when the suite runs with the interpreter as the default */
    kiln_exe *cpu = NULL, *ref = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &cpu), KILN_OK, "%s", kiln_ctx_error_message(cx));
    o.backend = "interpreter";
    cr_assert_eq(kiln_compile(cx, m, &o, &ref), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *got[6], *want[6];
    cr_assert_eq(kiln_exe_call(cx, cpu, args, got), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_exe_call(cx, ref, args, want), KILN_OK, "%s", kiln_ctx_error_message(cx));
    for (int r = 0; r < n_results; r++) {
        kiln_dtype d = kiln_tensor_dtype(want[r]);
        size_t es = kiln_dtype_size(d), n = kiln_tensor_nbytes(want[r]) / es;
        const unsigned char *g = kiln_tensor_data(got[r]), *w = kiln_tensor_data(want[r]);
        for (size_t e = 0; e < n; e++)
            if (memcmp(g + e * es, w + e * es, es) != 0 &&
                !(test_is_nan(d, g + e * es) && test_is_nan(d, w + e * es)))
                cr_assert_fail("%s: result %d, element %zu differs from the evaluator's", tag, r,
                               e);
    }
    kiln_exe_release(cpu);
    kiln_exe_release(ref);
}

Test(native, wait_compiles_exact_kernels_and_gives_the_evaluators_bits) {
    use_fresh_cache("wait");
    kiln_ctx *cx = test_ctx();
    const char *why;
    cr_assert_eq(kiln__native_mode(cx), KILN_NATIVE_WAIT);
    cr_assert(kiln__native_compiler(&why), "%s", why);
    kiln_module *m = lower(cx, exact_fn, 3);
    same_as_evaluator(cx, m, 3, "native");
    kiln__native_stats s = kiln__native_stats_get();
    cr_assert_geq(s.requested, 1);
    cr_assert_eq(s.failed, 0);
    cr_assert_eq(s.ready, s.requested, "every requested kernel was built");
    cr_assert_eq(s.compiled, s.requested);
    cr_assert_geq(s.runs, 1, "the call ran native code");
    /* a second compile of the same program: from the disk cache */
    same_as_evaluator(cx, m, 3, "native from the cache");
    kiln__native_stats s2 = kiln__native_stats_get();
    cr_assert_eq(s2.from_cache, s.requested, "%lld from the cache", (long long)s2.from_cache);
    cr_assert_eq(s2.compiled, s.compiled, "nothing compiled again");
    printed_has(cx, m, "native kernels (wait): 1 of 1 distinct ready\n");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(native, transcendentals_call_the_tiled_engines_vector_math) {
    use_fresh_cache("wait");
    kiln_ctx *cx = test_ctx();
    kiln_module *m = lower(cx, transcendental_fn, 4);
    same_as_evaluator(cx, m, 4, "native transcendentals");
    kiln__native_stats s = kiln__native_stats_get();
    cr_assert_geq(s.requested, 1);
    cr_assert_eq(s.failed, 0);
    cr_assert_eq(s.ready, s.requested);
    cr_assert_geq(s.runs, 1);
    kiln_module_release(m);
    /* f16: stays tiled, and the print says so */
    m = lower(cx, half_fn, 1);
    int64_t before = kiln__native_stats_get().requested;
    same_as_evaluator(cx, m, 1, "f16 exp");
    cr_assert_eq(kiln__native_stats_get().requested, before, "no native f16 exp");
    printed_has(cx, m, "0 of 1 distinct ready, 1 on the tiled engine");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* reductions fed by instructions: along rows (calls inside), down columns (NaNs), over
 * everything in f64, an integer sum, and a kernel with an output beside its reduction */
static kiln_status reduce_fn(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *x = a[0], *row = a[1];
    kiln_tensor *small = kiln_multiply(cx, x, kiln_scalar_like(cx, x, 0.01));
    r[0] = kiln_sum(cx, kiln_multiply(cx, kiln_exponential(cx, small), row), KILN_DIMS(1), false);
    r[1] = kiln_max(cx, kiln_multiply(cx, x, x), KILN_DIMS(0), false);
    kiln_tensor *d = kiln_convert(cx, small, KILN_F64);
    r[2] = kiln_sum(cx, kiln_multiply(cx, d, d), KILN_DIMS_NONE, false);
    kiln_tensor *i = kiln_convert(cx, kiln_multiply(cx, x, kiln_scalar_like(cx, x, 100)), KILN_I32);
    r[3] = kiln_sum(cx, kiln_add(cx, i, kiln_scalar_like(cx, i, 3)), KILN_DIMS(0), false);
    r[4] = kiln_add(cx, kiln_multiply(cx, x, kiln_scalar_like(cx, x, 3)), row);
    r[5] = kiln_sum(cx, r[4], KILN_DIMS(1), false);
    return kiln_ctx_status(cx);
}

/* m compiled by a ctx of `mode` and called on the test's inputs */
static void call_with_mode(kiln_native_mode mode, kiln_region_fn fn, int n, kiln_tensor **out,
                           kiln_ctx **cx_out) {
    kiln_ctx_options o = kiln_ctx_options_default();
    o.native = mode;
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    kiln_module *m = lower(cx, fn, n);
    kiln_compile_options co = kiln_compile_options_default();
    co.backend = "cpu";
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &co, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *args[2];
    inputs(cx, args);
    cr_assert_eq(kiln_exe_call(cx, exe, args, out), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_exe_release(exe);
    kiln_module_release(m);
    *cx_out = cx;
}

Test(native, reductions_fold_native_values_as_the_tiled_engine_does) {
    use_fresh_cache("off");
    kiln_tensor *want[6], *got[6];
    kiln_ctx *a = NULL, *b = NULL;
    call_with_mode(KILN_NATIVE_OFF, reduce_fn, 6, want, &a);
    call_with_mode(KILN_NATIVE_WAIT, reduce_fn, 6, got, &b);
    kiln__native_stats s = kiln__native_stats_get();
    cr_assert_geq(s.ready, 4, "%lld native kernels", (long long)s.ready);
    cr_assert_eq(s.failed, 0);
    cr_assert_geq(s.runs, 4, "the reductions' parts ran native code");
    for (int r = 0; r < 6; r++) {
        kiln_dtype d = kiln_tensor_dtype(want[r]);
        size_t es = kiln_dtype_size(d), n = kiln_tensor_nbytes(want[r]) / es;
        cr_assert_eq(kiln_tensor_nbytes(got[r]), kiln_tensor_nbytes(want[r]));
        const unsigned char *w = kiln_tensor_data(want[r]), *g = kiln_tensor_data(got[r]);
        for (size_t e = 0; e < n; e++)
            if (memcmp(w + e * es, g + e * es, es) &&
                !(test_is_nan(d, w + e * es) && test_is_nan(d, g + e * es)))
                cr_assert_fail("result %d, element %zu: native and tiled differ", r, e);
    }
    kiln_ctx_release(b);
    kiln_ctx_release(a);
}

Test(native, the_ctx_option_overrides_the_environment) {
    use_fresh_cache("wait");
    kiln_ctx_options o = kiln_ctx_options_default();
    o.native = KILN_NATIVE_OFF;
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    kiln_module *m = lower(cx, exact_fn, 3);
    same_as_evaluator(cx, m, 3, "off");
    cr_assert_eq(kiln__native_stats_get().requested, 0);
    printed_has(cx, m, "native kernels: off: the tiled engine runs all 1\n");
    kiln_module_release(m);
    kiln_ctx_release(cx);
    /* and the other way: wait by option, off in the environment; its own cache directory */
    setenv("KILN_NATIVE", "off", 1);
    char dir[256];
    snprintf(dir, sizeof dir, "%s/ctxcacheXXXXXX", KILN_TEST_TMP_DIR);
    cr_assert_not_null(mkdtemp(dir));
    o.native = KILN_NATIVE_WAIT;
    o.cache_dir = dir;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    m = lower(cx, exact_fn, 3);
    same_as_evaluator(cx, m, 3, "wait by option");
    cr_assert_eq(kiln__native_stats_get().ready, 1);
    cr_assert_eq(kiln__native_stats_get().compiled, 1);
    kiln_module_release(m);
    kiln_ctx_release(cx);
    /* the entry went to the option's directory, not KILN_CACHE_DIR's */
    char cmd[600];
    snprintf(cmd, sizeof cmd,
             "test \"$(ls -A '%s' | wc -l)\" -ge 1 && test -z \"$(ls -A \"$KILN_CACHE_DIR\")\"",
             dir);
    cr_assert_eq(system(cmd), 0, "the cache entry is in %s only", dir);
}

Test(native, bad_options_are_refused) {
    kiln_ctx_options o = kiln_ctx_options_default();
    kiln_ctx *cx = NULL;
    o.native = (kiln_native_mode)7;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_INVALID_ARGUMENT);
    cr_assert_null(cx);
    o.native = (kiln_native_mode)-1;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_INVALID_ARGUMENT);
    o = kiln_ctx_options_default();
    static char longdir[1100];
    memset(longdir, 'd', sizeof longdir - 1);
    o.cache_dir = longdir;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_INVALID_ARGUMENT);
    cr_assert_null(cx);
}

Test(native, in_the_background_a_call_never_waits_and_the_native_code_takes_over) {
    use_fresh_cache("background");
    kiln_ctx *cx = test_ctx();
    kiln_module *m = lower(cx, exact_fn, 3);
    /* the first call runs at once (the tiled engine, most likely), the same bits */
    same_as_evaluator(cx, m, 3, "before");
    for (int i = 0; i < 600 && kiln__native_stats_get().ready < kiln__native_stats_get().requested;
         i++)
        usleep(50000);
    kiln__native_stats s = kiln__native_stats_get();
    cr_assert_geq(s.requested, 1);
    cr_assert_eq(s.failed, 0);
    /* an executable compiled now finds them in the cache (in the background too): once they
     * are loaded, its calls run them */
    kiln_tensor *args[2];
    inputs(cx, args);
    kiln_exe *exe = NULL;
    kiln_compile_options cpu = kiln_compile_options_default();
    cpu.backend = "cpu";
    cr_assert_eq(kiln_compile(cx, m, &cpu, &exe), KILN_OK);
    for (int i = 0; i < 600 && kiln__native_stats_get().ready < kiln__native_stats_get().requested;
         i++)
        usleep(50000);
    cr_assert_geq(kiln__native_stats_get().from_cache, 1);
    int64_t runs = kiln__native_stats_get().runs;
    kiln_tensor *out[3];
    cr_assert_eq(kiln_exe_call(cx, exe, args, out), KILN_OK);
    cr_assert_gt(kiln__native_stats_get().runs, runs, "the call ran the native code");
    kiln_exe_release(exe);
    same_as_evaluator(cx, m, 3, "after");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(native, without_a_compiler_the_tiled_engine_runs) {
    use_fresh_cache("wait");
    setenv("KILN_CC", "/nonexistent/cc-for-kiln-tests", 1);
    kiln_ctx *cx = test_ctx();
    const char *why;
    cr_assert(!kiln__native_compiler(&why));
    cr_assert(strstr(why, "no C compiler") && strstr(why, "cc-for-kiln-tests"), "%s", why);
    kiln_module *m = lower(cx, exact_fn, 3);
    same_as_evaluator(cx, m, 3, "tiled");
    cr_assert_eq(kiln__native_stats_get().ready, 0);
    cr_assert_eq(kiln__native_stats_get().runs, 0);
    printed_has(cx, m,
                "native kernels: none, no C compiler (/nonexistent/cc-for-kiln-tests --version "
                "failed): the tiled engine runs all 1\n");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* A process that exits while its background compiler runs leaves no compiler running and
 * no build directory behind (in its TMPDIR), and caches nothing half-made. */
Test(native, exiting_while_compiling_leaves_nothing_behind) {
    char tmp[256], cache[256];
    snprintf(tmp, sizeof tmp, "%s/exittmpXXXXXX", KILN_TEST_TMP_DIR);
    snprintf(cache, sizeof cache, "%s/exitcacheXXXXXX", KILN_TEST_TMP_DIR);
    cr_assert_not_null(mkdtemp(tmp));
    cr_assert_not_null(mkdtemp(cache));
    for (int delay = 5; delay <= 45; delay += 20) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "TMPDIR='%s' KILN_CACHE_DIR='%s' '%s' %d", tmp, cache,
                 KILN_NATIVE_EXIT_CHILD, delay);
        int rc = system(cmd);
        cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s: %d", cmd, rc);
        usleep(300000); /* a compiler left running would write its object by now */
        snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", tmp);
        cr_assert_eq(system(cmd), 0, "the build directory was left in %s (delay %d ms)", tmp,
                     delay);
    }
}
