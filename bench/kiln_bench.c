/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bench: kiln's benchmark suite (issue #6). Every case is one row of the `cases` table
 * below; each reports what applies to it: lower time, compile time, first call, steady-state
 * call (median, p10, p90 over repetitions after warm-up), peak memory and derived rates
 * (GB/s, GFLOP/s), beside the machine's limits measured in the same run (a STREAM-like
 * triad and OpenBLAS sgemm at 2048^3, on 1 thread and on all threads).
 * Nothing is asserted. Output: a table on stdout and one JSON record per
 * case x implementation x metric (suite, case, impl, metric, median, p10, p90, unit, reps,
 * threads, optional note) in bench/results/latest.json (or --json PATH).
 *
 * Usage: kiln-bench [--quick] [--filter PATTERN] [--json PATH] [--check-dir DIR] [--threads N]
 *   --filter PATTERN  runs the cases whose "suite/case" contains PATTERN (case-insensitive)
 *   --quick           fewer repetitions, the largest sizes trimmed (make bench-quick)
 *   --check-dir DIR   where each case's inputs and kiln's result go as .npy files, for the
 *                     peers to compute from the same data and compare (default
 *                     bench/results/check; "" writes none)
 *   --threads N       the thread count of the cases measured on "all threads" (default: all
 *                     cores). kiln's pool (its kernels and OpenBLAS) is set through
 *                     kiln_ctx_options.num_threads before each case: most cases run on 1
 *                     thread; elementwise, reductions, GEMM and VGG run on 1 and on N (the
 *                     records' `threads` field says which). The machine limits are
 *                     measured on 1 and on N threads.
 *
 * Machine limits: a STREAM triad (1 and N threads), a read-only sum over 128 MiB (1 thread:
 * the limit of a reduction), OpenBLAS sgemm 2048^3 (1 and all threads). Each case that moves
 * many bytes or flops also reports "floor": bytes over the bandwidth limit, or flops over the
 * sgemm rate, at its thread count (the time no implementation can beat), and reductions
 * report "pct_bw": their bandwidth as a percentage of the read limit.
 *
 * Peak memory ("peak_mem", MiB): every kiln allocation goes through a counting allocator
 * (kiln_ctx_options.allocator); the metric is the highest number of live kiln bytes during
 * the case's calls minus the live bytes before them (inputs excluded; the executable's
 * pooled arena and the results included). OpenBLAS's own work buffers are not counted.
 * ru_maxrss of the whole process is printed at the end for reference.
 *
 * Files: bench.h declares the harness (harness.c: options, timing, statistics, records,
 * peak memory, the machine's limits, the peers' checks, running compiled functions) and the
 * cases (cases_comptime.c: lower + compile and time_to_load; cases_run.c: loop, EMLX,
 * elementwise, reductions, GEMM, VGG11 forward); this file holds the case table and main. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cblas.h>

#include "bench.h"

/* ---- the case table ------------------------------------------------------------------------ */

typedef struct {
    const char *suite, *name;
    void (*run)(bench *b);
    int multi; /* 1: also measured on opt.threads threads (full runs only for 2) */
} bench_case;

static const bench_case cases[] = {
    {"comptime", "2D sum", case_comptime_sum, 0},
    {"comptime", "Basic cos", case_comptime_cos, 0},
    {"comptime", "Basic grad cos", case_comptime_grad_cos, 0},
    {"comptime", "VGG11", case_vgg11_ct, 0},
    {"comptime", "VGG13", case_vgg13_ct, 0},
    {"comptime", "VGG16", case_vgg16_ct, 0},
    {"comptime", "VGG19", case_vgg19_ct, 0},
    {"comptime", "VGG11 8x3x32x32", case_vgg11_small_ct, 0},
    {"comptime", "heat 100 steps", case_heat100_ct, 0},
    {"comptime", "heat 1000 steps", case_heat1000_ct, 0},
    {"comptime", "heat 10000 steps", case_heat10000_ct, 0},
    {"comptime", "VGG11 train step", case_comptime_vgg11_train, 0},
    {"comptime", "VGG19 train step", case_comptime_vgg19_train, 0},
    {"time_to_load", "one-op process", case_time_to_load, 0},
    {"emlx", "scalar f32[10,10]", case_emlx, 0},
    {"emlx", "matmul f32[10,10]", case_emlx_matmul10, 0},
    {"emlx", "dot f32[10,10]", case_emlx_dot10, 0},
    {"emlx", "dot f32[100,100]", case_emlx_dot100, 0},
    {"emlx", "dot f32[1000,1000]", case_emlx_dot1000, 1},
    {"autodiff", "eager grad MLP", case_eager_grad, 0},
    {"autodiff", "per-example grads MLP", case_per_example_grads, 0},
    {"elementwise", "cos 1e6", case_cos_1e6, 0},
    {"elementwise", "cos 1e7", case_cos_1e7, 1},
    {"elementwise", "expsin 1e6", case_expsin_1e6, 0},
    {"elementwise", "expsin 1e7", case_expsin_1e7, 1},
    {"reduction", "sum all 4096x4096", case_sum_all, 1},
    {"reduction", "sum rows 4096x4096", case_sum_rows, 1},
    {"reduction", "sum rows 256x1024", case_sum_rows_small, 0},
    {"reduction", "sum cols 4096x4096", case_sum_cols, 1},
    {"loop", "heat 1000 steps f32[4096]", case_heat_loop, 0},
    {"loop", "invariant exp 1000 steps", case_loop_invariant, 0},
    {"loop", "EMLX fori 10 steps", case_loop_short, 0},
    {"gemm", "f32 64", case_gemm64, 0},
    {"gemm", "f32 256", case_gemm256, 0},
    {"gemm", "f32 1024", case_gemm1024, 1},
    {"linalg", "cgemm complex<f32> 512", case_cgemm512, 1},
    {"linalg", "fft complex<f32> 2^20", case_fft_1m, 1},
    {"linalg", "triangular_solve f32 1024", case_trsm1024, 1},
    {"linalg", "cholesky f32 1024", case_cholesky1024, 1},
    {"vgg", "VGG11 1x3x224x224", case_vgg_224, 2},
    {"vgg", "VGG11 8x3x32x32", case_vgg_32, 2},
    {"vgg", "VGG11 16x3x224x224", case_vgg_224_b16, 2},
    {"vgg", "VGG13 1x3x224x224", case_vgg13_224, 2},
    {"vgg", "VGG16 1x3x224x224", case_vgg16_224, 2},
    {"vgg", "VGG19 1x3x224x224", case_vgg19_224, 2},
    {"conv", "grad stride 2 16x64x56x56", case_conv_s2_grad, 2},
    {"train", "digits CNN 32x1x8x8", case_digits_train, 2},
    {"train", "VGG11 16x3x224x224", case_vgg11_train_b16, 2},
};

static int contains_ci(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n) return 1;
    }
    return n == 0;
}

static int wanted(const char *suite, const char *name) {
    if (!opt.filter) return 1;
    char full[128];
    snprintf(full, sizeof full, "%s/%s", suite, name);
    return contains_ci(full, opt.filter);
}

static int usage(const char *argv0) {
    fprintf(
        stderr,
        "usage: %s [--quick] [--filter PATTERN] [--json PATH] [--check-dir DIR] [--threads N]\n",
        argv0);
    return 2;
}

/* A --child-cold process: only the tiny warm-up program, then the named case's first
 * compile (lower_compile prints its time and exits). */
static int child_cold(const char *which) {
    opt.cold_child = 1;
    opt.quick = 1;
    kiln_ctx *cx;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return 1;
    warm_up_engine(cx);
    set_threads(1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char full[128];
        snprintf(full, sizeof full, "%s/%s", cases[i].suite, cases[i].name);
        if (strcmp(full, which) != 0) continue;
        bench b = {cx, cases[i].suite, cases[i].name, 1, 0, ""};
        cases[i].run(&b);
    }
    return 1; /* lower_compile exits: reaching here means the case compiled nothing */
}

int main(int argc, char **argv) {
    /* kiln-bench links OpenBLAS (the GEMM reference), which loads OpenMP's runtime before
     * main: set the wait policy libkiln sets before it opens its OpenMP libraries in a
     * process of its own (base/threads.h), and start again, so that kiln is measured as a
     * program that links it alone runs it. */
    if (!getenv("OMP_WAIT_POLICY") && setenv("OMP_WAIT_POLICY", "passive", 1) == 0)
        execv("/proc/self/exe", argv); /* on failure, carry on with the default */
    if (argc == 3 && strcmp(argv[1], "--child-cold") == 0) return child_cold(argv[2]);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    opt.cores = cores > 0 ? (int)(cores > 64 ? 64 : cores) : 1;
    opt.threads = opt.cores;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            opt.quick = 1;
        else if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc)
            opt.filter = argv[++i];
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            opt.json_path = argv[++i];
        else if (strcmp(argv[i], "--check-dir") == 0 && i + 1 < argc)
            opt.check_dir = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            opt.threads = atoi(argv[++i]);
            if (opt.threads < 1 || opt.threads > 64) return usage(argv[0]);
        } else
            return usage(argv[0]);
    }
    opt.target = opt.quick ? 0.05 : 1.0;
    openblas_set_num_threads(opt.threads);
    double t_start = now();

    printf("kiln-bench %s: %d cores, threads 1 and %d%s\n\n", kiln_version_string(), opt.cores,
           opt.threads, opt.quick ? ", quick" : "");
    print_header();
    machine.triad1 = triad(1);
    machine.triadN = opt.threads > 1 ? triad(opt.threads) : machine.triad1;
    machine.read1 = read_bandwidth();
    machine.sgemm1 = sgemm_peak(1);
    machine.sgemmN = opt.threads > 1 ? sgemm_peak(opt.threads) : machine.sgemm1;

    kiln_allocator counting = {count_alloc, count_free, NULL};
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &counting;
    kiln_ctx *cx;
    if (kiln_ctx_create(&o, &cx) != KILN_OK) return 1;
    warm_up_engine(cx);

    const char *pending[32];
    int n_pending = 0, failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bench_case *c = &cases[i];
        if (!wanted(c->suite, c->name)) continue;
        /* 1 thread, then (multi cases) all threads; VGG's multi-thread runs: full runs only */
        for (int pass = 0; pass < 2; pass++) {
            int threads = pass == 0 ? 1 : opt.threads;
            if (pass == 1 && (!c->multi || opt.threads == 1 || (c->multi == 2 && opt.quick))) break;
            set_threads(threads);
            bench b = {cx, c->suite, c->name, threads, 0, ""};
            int before = n_recs;
            kiln_scope_begin(cx);
            c->run(&b);
            kiln_scope_end(cx);
            if (b.pending) {
                /* a record, so that the report can say why the case is missing */
                emit(c->suite, c->name, "kiln", "pending", 0, 0, 0, "-", 0, threads, b.why);
                if (n_pending < 32) pending[n_pending++] = c->name;
                break;
            }
            if (n_recs == before || !check(&b)) failed++;
            if (pass == 0 && strcmp(c->suite, "comptime") == 0) emit_compile_cold(&b);
        }
    }
    set_threads(opt.threads);
    kiln_ctx_release(cx);

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("\n%d records, %d pending", n_recs, n_pending);
    for (int i = 0; i < n_pending; i++)
        printf("%s%s", i ? ", " : " (", pending[i]);
    printf("%s; process ru_maxrss %.0f MiB; %.1f s\n", n_pending ? ")" : "",
           (double)ru.ru_maxrss / 1024.0, now() - t_start);
    if (write_json(opt.json_path)) return 1;
    printf("wrote %s\n", opt.json_path);
    free(recs);
    return failed ? 1 : 0;
}
