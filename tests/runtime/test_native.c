/* The native tier of fused kernels (src/backends/cpu/native.c): with KILN_NATIVE=wait the
 * elementwise kernels of exact ops are compiled by the C compiler while kiln_compile runs,
 * and a call gives the evaluator's bits (which the tiled engine gives too), split over the
 * thread pool; transcendental kernels stay tiled; a second compile loads from the disk
 * cache; in the background a call never waits and the native code takes over when ready;
 * without a compiler everything still runs. Each test is a process of its own, so each
 * sets the environment the tier reads once. */
#define _DEFAULT_SOURCE /* mkdtemp, setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/cpu/native.h"
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

static kiln_status transcendental_fn(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r,
                                     void *u) {
    (void)u;
    r[0] = kiln_multiply(cx, kiln_exponential(cx, kiln_negate(cx, a[0])), kiln_sine(cx, a[0]));
    return kiln_ctx_status(cx);
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

static bool is_nan_bits(kiln_dtype d, const unsigned char *p) {
    uint64_t b = 0;
    memcpy(&b, p, kiln_dtype_size(d));
    return d == KILN_F32   ? (b & 0x7fffffffu) > 0x7f800000u
           : d == KILN_F16 ? (b & 0x7fffu) > 0x7c00u
                           : false;
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
    kiln_tensor *got[4], *want[4];
    cr_assert_eq(kiln_exe_call(cx, cpu, args, got), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_exe_call(cx, ref, args, want), KILN_OK, "%s", kiln_ctx_error_message(cx));
    for (int r = 0; r < n_results; r++) {
        kiln_dtype d = kiln_tensor_dtype(want[r]);
        size_t es = kiln_dtype_size(d), n = kiln_tensor_nbytes(want[r]) / es;
        const unsigned char *g = kiln_tensor_data(got[r]), *w = kiln_tensor_data(want[r]);
        for (size_t e = 0; e < n; e++)
            if (memcmp(g + e * es, w + e * es, es) != 0 &&
                !(is_nan_bits(d, g + e * es) && is_nan_bits(d, w + e * es)))
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
    cr_assert_str_eq(kiln__native_policy(&why), "wait", "%s", why);
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
    kiln_module_release(m);
    /* kernels of transcendentals keep the tiled engine's vector math */
    m = lower(cx, transcendental_fn, 1);
    kiln_exe *exe = NULL;
    kiln_compile_options cpu = kiln_compile_options_default();
    cpu.backend = "cpu";
    cr_assert_eq(kiln_compile(cx, m, &cpu, &exe), KILN_OK);
    cr_assert_eq(kiln__native_stats_get().requested, s2.requested, "no native exp or sin");
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
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
    cr_assert_str_eq(kiln__native_policy(&why), "off");
    cr_assert(strstr(why, "no C compiler") && strstr(why, "cc-for-kiln-tests"), "%s", why);
    kiln_module *m = lower(cx, exact_fn, 3);
    same_as_evaluator(cx, m, 3, "tiled");
    cr_assert_eq(kiln__native_stats_get().requested, 0);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}
