/* kiln-bench: timings of the core operations, each beside the machine limit it should be
 * compared with. Medians over repetitions; nothing is asserted.
 * Usage: kiln-bench [--filter SUBSTRING] */
#define _POSIX_C_SOURCE 200809L
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define REPS 15

typedef struct {
    double median, p10, p90;
} stats;

static stats summarize(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return (stats){t[n / 2], t[n / 10], t[(9 * n) / 10]};
}

static const char *filter;
static int wanted(const char *name) { return !filter || strstr(name, filter); }

static void report(const char *name, stats s, const char *unit, double scale, const char *rate) {
    printf("%-34s %10.3f %10.3f %10.3f %-4s %s\n", name, s.median * scale, s.p10 * scale,
           s.p90 * scale, unit, rate ? rate : "");
}

/* STREAM-like triad a = b + s*c over arrays far larger than the last-level cache. */
static double triad_bandwidth(void) {
    size_t n = 16u << 20; /* 3 x 64 MiB */
    float *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        a[i] = 0, b[i] = 1, c[i] = 2;
    double t[5];
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        for (size_t i = 0; i < n; i++)
            a[i] = b[i] + 3.0f * c[i];
        t[r] = now() - t0;
    }
    volatile float sink = a[n / 2];
    (void)sink;
    free(a), free(b), free(c);
    return 3.0 * (double)n * 4 / summarize(t, 5).median;
}

/* The EMLX benchmark's function: acc = x; for i in 1..10: acc = i * acc + y. */
static kiln_status emlx_step(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *acc = in[0];
    for (int i = 1; i <= 10; i++)
        acc = kiln_add(cx, kiln_multiply(cx, kiln_scalar(cx, i, KILN_F32), acc), in[1]);
    out[0] = acc;
    return kiln_ctx_status(cx);
}

/* A 20-op elementwise function (for lower and compile times). */
static kiln_status twenty_ops(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *a = in[0], *b = in[1];
    for (int i = 0; i < 5; i++) {
        a = kiln_add(cx, a, b);
        b = kiln_multiply(cx, a, b);
        a = kiln_tanh(cx, a);
        b = kiln_subtract(cx, b, a);
    }
    out[0] = kiln_add(cx, a, b);
    return kiln_ctx_status(cx);
}

static void bench_jit(kiln_ctx *cx, char *rate, size_t rate_size) {
    static double t[20001];
    const int calls = 20001;
    kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10)},
                             {.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10)}};
    kiln_tensor *x = kiln_iota(cx, KILN_F32, KILN_SHAPE(10, 10), 1);
    kiln_tensor *in[2] = {x, x};
    kiln_region emlx = {emlx_step, NULL}, twenty = {twenty_ops, NULL};
    if (wanted("emlx")) {
        for (int r = 0; r < 2001; r++) {
            kiln_scope_begin(cx);
            kiln_tensor *out[1];
            double t0 = now();
            emlx_step(cx, in, out, NULL);
            t[r] = now() - t0;
            kiln_scope_end(cx);
        }
        stats eager = summarize(t, 2001);
        report("emlx f32[10,10] eager call", eager, "us", 1e6, NULL);
        kiln_module *m = NULL;
        kiln_exe *exe = NULL;
        if (kiln_lower(cx, &emlx, args, 2, 1, NULL, &m) != KILN_OK ||
            kiln_compile(cx, m, NULL, &exe) != KILN_OK)
            return;
        for (int r = 0; r < calls; r++) {
            kiln_tensor *out;
            double t0 = now();
            kiln_exe_call(cx, exe, in, &out);
            t[r] = now() - t0;
            kiln_tensor_release(out);
        }
        stats compiled = summarize(t, calls);
        snprintf(rate, rate_size, "%.1fx faster than eager", eager.median / compiled.median);
        report("emlx f32[10,10] compiled call", compiled, "us", 1e6, rate);
        kiln_exe_release(exe);
        kiln_module_release(m);
    }
    if (wanted("lower_compile")) {
        for (int r = 0; r < 2001; r++) {
            kiln_module *m = NULL;
            double t0 = now();
            kiln_lower(cx, &twenty, args, 2, 1, NULL, &m);
            t[r] = now() - t0;
            kiln_module_release(m);
        }
        report("lower 20-op function", summarize(t, 2001), "us", 1e6, NULL);
        for (int r = 0; r < 2001; r++) {
            kiln_module *m = NULL;
            kiln_exe *exe = NULL;
            kiln_lower(cx, &twenty, args, 2, 1, NULL, &m);
            double t0 = now();
            kiln_compile(cx, m, NULL, &exe);
            t[r] = now() - t0;
            kiln_exe_release(exe);
            kiln_module_release(m);
        }
        report("compile 20-op function", summarize(t, 2001), "us", 1e6, NULL);
    }
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc)
            filter = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--filter SUBSTRING]\n", argv[0]);
            return 2;
        }
    }
    double bw = triad_bandwidth();
    printf("machine: triad bandwidth %.1f GB/s (1 thread)\n\n", bw / 1e9);
    printf("%-34s %10s %10s %10s\n", "case", "median", "p10", "p90");

    double t[REPS * 100];
    char rate[128];
    if (wanted("ctx_create")) {
        for (int r = 0; r < REPS * 100; r++) {
            double t0 = now();
            kiln_ctx *cx;
            if (kiln_ctx_create(NULL, &cx) != KILN_OK) return 1;
            kiln_ctx_release(cx);
            t[r] = now() - t0;
        }
        report("ctx_create+release", summarize(t, REPS * 100), "us", 1e6, NULL);
    }
    kiln_ctx *cx;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return 1;
    if (wanted("zeros_10x10")) {
        for (int r = 0; r < REPS * 100; r++) {
            double t0 = now();
            kiln_tensor_release(kiln_zeros(cx, KILN_F32, KILN_SHAPE(10, 10)));
            t[r] = now() - t0;
        }
        report("zeros f32[10,10] make+free", summarize(t, REPS * 100), "us", 1e6, NULL);
    }
    const int64_t n = 1 << 22;
    if (wanted("random_normal")) {
        for (int r = 0; r < REPS; r++) {
            double t0 = now();
            kiln_tensor_release(
                kiln_random_normal(cx, kiln_key_from_seed(1), KILN_F32, KILN_SHAPE(n)));
            t[r] = now() - t0;
        }
        stats s = summarize(t, REPS);
        snprintf(rate, sizeof rate, "%.1f M values/s", (double)n / s.median / 1e6);
        report("random_normal f32[4M]", s, "ms", 1e3, rate);
    }
    if (wanted("npy")) {
        kiln_tensor *x =
            kiln_random_uniform(cx, kiln_key_from_seed(2), KILN_F32, KILN_SHAPE(n), 0, 1);
        double bytes = (double)n * 4;
        void *buf = NULL;
        size_t size = 0;
        for (int r = 0; r < REPS; r++) {
            double t0 = now();
            kiln_npy_save_buffer(cx, x, &buf, &size);
            t[r] = now() - t0;
            if (r + 1 < REPS) kiln_buffer_free(cx, buf, size);
        }
        stats s = summarize(t, REPS);
        snprintf(rate, sizeof rate, "%.2f GB/s (triad %.2f)", bytes / s.median / 1e9, bw / 1e9);
        report("npy_save_buffer f32[4M]", s, "ms", 1e3, rate);
        for (int r = 0; r < REPS; r++) {
            kiln_tensor *back;
            double t0 = now();
            kiln_npy_load_buffer(cx, buf, size, &back);
            t[r] = now() - t0;
            kiln_tensor_release(back);
        }
        s = summarize(t, REPS);
        snprintf(rate, sizeof rate, "%.2f GB/s (triad %.2f)", bytes / s.median / 1e9, bw / 1e9);
        report("npy_load_buffer f32[4M]", s, "ms", 1e3, rate);
        kiln_buffer_free(cx, buf, size);
        kiln_tensor_release(x);
    }
    bench_jit(cx, rate, sizeof rate);
    if (kiln_ctx_status(cx) != KILN_OK) {
        fprintf(stderr, "kiln-bench: %s\n", kiln_ctx_error_message(cx));
        return 1;
    }
    kiln_ctx_release(cx);
    return 0;
}
