/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bench's harness (declared in bench.h): options, timing and statistics over
 * repetitions; the records, printed as a table on stdout and written as JSON; the counting
 * allocator behind peak memory; the machine's limits (STREAM triad, read bandwidth, OpenBLAS
 * sgemm) and the notes and floors derived from them; the state of the case being run; the
 * inputs and results saved for the peers' checks; and lowering, compiling and running a
 * compiled function with all of its records. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "bench.h"

/* ---- options, timing, statistics ----------------------------------------------------- */

options opt = {.json_path = "bench/results/latest.json", .check_dir = "bench/results/check"};

double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

stats summarize(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return (stats){t[n / 2], t[n / 10], t[(9 * n) / 10], n};
}

stats single(double t) { return (stats){t, t, t, 1}; }

reps_policy policy_fast(void) { return (reps_policy){3, 11, opt.quick ? 2001 : 20001}; }
reps_policy policy_slow(int min_reps) {
    return (reps_policy){1, opt.quick ? 2 : min_reps, opt.quick ? 3 : min_reps * 3};
}

stats measure(body_fn f, void *user, reps_policy p) {
    for (int i = 0; i < p.warmup; i++)
        f(user);
    double *t = malloc((size_t)p.max_reps * sizeof *t);
    int n = 0;
    double start = now();
    while (n < p.max_reps && (n < p.min_reps || now() - start < opt.target)) {
        double t0 = now();
        f(user);
        t[n++] = now() - t0;
    }
    stats s = summarize(t, n);
    free(t);
    return s;
}

/* ---- records: the stdout table and the JSON file ---------------------------------------- */

record *recs;
int n_recs;
static int cap_recs;

void print_header(void) {
    printf("%-12s %-24s %-10s %-12s %10s %10s %10s %-7s %6s %3s  %s\n", "suite", "case", "impl",
           "metric", "median", "p10", "p90", "unit", "reps", "thr", "note");
}

void emit(const char *suite, const char *name, const char *impl, const char *metric, double median,
          double p10, double p90, const char *unit, int reps, int threads, const char *note) {
    if (n_recs == cap_recs) {
        cap_recs = cap_recs ? cap_recs * 2 : 64;
        recs = realloc(recs, (size_t)cap_recs * sizeof *recs);
        if (!recs) abort();
    }
    record *r = &recs[n_recs++];
    memset(r, 0, sizeof *r);
    snprintf(r->suite, sizeof r->suite, "%s", suite);
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->impl, sizeof r->impl, "%s", impl);
    snprintf(r->metric, sizeof r->metric, "%s", metric);
    snprintf(r->unit, sizeof r->unit, "%s", unit);
    snprintf(r->note, sizeof r->note, "%s", note ? note : "");
    r->median = median, r->p10 = p10, r->p90 = p90, r->reps = reps, r->threads = threads;
    printf("%-12s %-24s %-10s %-12s %10.4g %10.4g %10.4g %-7s %6d %3d  %s\n", suite, name, impl,
           metric, median, p10, p90, unit, reps, threads, r->note);
    fflush(stdout);
}

/* A time, in the unit that suits its median. */
void emit_time(const char *suite, const char *name, const char *impl, const char *metric, stats s,
               int threads, const char *note) {
    double scale = s.median < 1e-3 ? 1e6 : s.median < 1.0 ? 1e3 : 1.0;
    const char *unit = s.median < 1e-3 ? "us" : s.median < 1.0 ? "ms" : "s";
    emit(suite, name, impl, metric, s.median * scale, s.p10 * scale, s.p90 * scale, unit, s.reps,
         threads, note);
}

/* work / time: a rate whose p10 comes from the p90 time and vice versa. */
void emit_rate(const char *suite, const char *name, const char *impl, const char *metric, stats s,
               double work, const char *unit, int threads, const char *note) {
    emit(suite, name, impl, metric, work / s.median, work / s.p90, work / s.p10, unit, s.reps,
         threads, note);
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", (unsigned)(unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, double v) {
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

int write_json(const char *path) {
    /* Create the parent directory (one level, as bench/results). */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = 0;
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "kiln-bench: cannot create %s: %s\n", dir, strerror(errno));
            return 1;
        }
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "kiln-bench: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    fputs("[\n", f);
    for (int i = 0; i < n_recs; i++) {
        record *r = &recs[i];
        fputs("  {\"suite\": ", f), json_string(f, r->suite);
        fputs(", \"case\": ", f), json_string(f, r->name);
        fputs(", \"impl\": ", f), json_string(f, r->impl);
        fputs(", \"metric\": ", f), json_string(f, r->metric);
        fputs(", \"median\": ", f), json_number(f, r->median);
        fputs(", \"p10\": ", f), json_number(f, r->p10);
        fputs(", \"p90\": ", f), json_number(f, r->p90);
        fputs(", \"unit\": ", f), json_string(f, r->unit);
        fprintf(f, ", \"reps\": %d, \"threads\": %d", r->reps, r->threads);
        if (r->note[0]) fputs(", \"note\": ", f), json_string(f, r->note);
        fputs(i + 1 < n_recs ? "},\n" : "}\n", f);
    }
    fputs("]\n", f);
    return fclose(f) != 0;
}

/* ---- counting allocator (peak memory) -------------------------------------------------- */

static _Atomic size_t live_bytes, peak_bytes;

/* Counts around kiln's default allocator, so that the cases allocate as a program that
 * passes no allocator does. */
void *count_alloc(void *user, size_t size, size_t alignment) {
    const kiln_allocator *a = kiln_allocator_default();
    (void)user;
    void *p = a->alloc(a->user, size, alignment);
    if (!p) return NULL;
    size_t live = atomic_fetch_add(&live_bytes, size) + size;
    size_t peak = atomic_load(&peak_bytes);
    while (live > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, live)) {
    }
    return p;
}

void count_free(void *user, void *ptr, size_t size) {
    const kiln_allocator *a = kiln_allocator_default();
    (void)user;
    a->free(a->user, ptr, size);
    atomic_fetch_sub(&live_bytes, size);
}

size_t peak_begin(void) {
    size_t live = atomic_load(&live_bytes);
    atomic_store(&peak_bytes, live);
    return live;
}

double peak_mib(size_t base) {
    return (double)(atomic_load(&peak_bytes) - base) / (1024.0 * 1024.0);
}

/* ---- the process's peak resident set ---------------------------------------------------- */

int rss_peak_reset(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return 0;
    int ok = fputs("5", f) >= 0;
    return (fclose(f) == 0) && ok;
}

double rss_peak_mib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    double kib = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kib = strtod(line + 6, NULL);
    fclose(f);
    return kib < 0 ? -1 : kib / 1024.0;
}

/* ---- the machine's limits ---------------------------------------------------------------- */

machine_limits machine;

typedef struct {
    float *a, *b, *c;
    size_t lo, hi;
} triad_part;

static void *triad_init(void *p_) {
    triad_part *p = p_;
    for (size_t i = p->lo; i < p->hi; i++)
        p->a[i] = 0, p->b[i] = 1, p->c[i] = 2;
    return NULL;
}

static void *triad_run(void *p_) {
    triad_part *p = p_;
    float *restrict a = p->a;
    const float *restrict b = p->b, *restrict c = p->c;
    for (size_t i = p->lo; i < p->hi; i++)
        a[i] = b[i] + 3.0f * c[i];
    return NULL;
}

static void run_parts(void *(*fn)(void *), triad_part *parts, int n) {
    pthread_t th[64];
    for (int i = 1; i < n; i++)
        pthread_create(&th[i], NULL, fn, &parts[i]);
    fn(&parts[0]);
    for (int i = 1; i < n; i++)
        pthread_join(th[i], NULL);
}

/* STREAM triad a = b + 3c over 3 x 128 MiB (far beyond any last-level cache here), each
 * thread touching its own slice first. Bytes counted: 3 streams (no write-allocate). */
double triad(int threads) {
    size_t n = 32u << 20;
    triad_part parts[64] = {0};
    float *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4);
    if (!a || !b || !c) abort();
    for (int i = 0; i < threads; i++)
        parts[i] = (triad_part){a, b, c, n * (size_t)i / (size_t)threads,
                                n * (size_t)(i + 1) / (size_t)threads};
    run_parts(triad_init, parts, threads);
    int reps = opt.quick ? 4 : 10;
    double t[10];
    run_parts(triad_run, parts, threads); /* warm-up */
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        run_parts(triad_run, parts, threads);
        t[r] = now() - t0;
    }
    volatile float sink = a[n / 2];
    (void)sink;
    free(a), free(b), free(c);
    stats s = summarize(t, reps);
    double bytes = 3.0 * (double)n * 4;
    char note[128];
    snprintf(note, sizeof note, "STREAM triad a=b+3c, 3 x %zu MiB f32", n * 4 >> 20);
    emit_rate("machine", "triad", "c", "bandwidth", s, bytes / 1e9, "GB/s", threads, note);
    return bytes / s.median;
}

/* 16 independent partial sums: the compiler vectorizes them, and the loop is bound by
 * reading memory, not by the adds' latency. */
float read_sum(const float *x, size_t n) {
    float acc[16] = {0};
    for (size_t i = 0; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++)
            acc[l] += x[i + l];
    float s = 0;
    for (int l = 0; l < 16; l++)
        s += acc[l];
    return s;
}

/* Read bandwidth on one thread: a sum over 128 MiB of f32 (the traffic of a reduction). */
double read_bandwidth(void) {
    size_t n = 32u << 20;
    float *a = malloc(n * 4);
    if (!a) abort();
    for (size_t i = 0; i < n; i++)
        a[i] = (float)(i & 7);
    int reps = opt.quick ? 4 : 10;
    double t[10];
    volatile float sink = read_sum(a, n); /* warm-up */
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        sink += read_sum(a, n);
        t[r] = now() - t0;
    }
    (void)sink;
    free(a);
    stats s = summarize(t, reps);
    double bytes = (double)n * 4;
    emit_rate("machine", "read", "c", "bandwidth", s, bytes / 1e9, "GB/s", 1,
              "sum of 128 MiB f32, 16 partial sums");
    return bytes / s.median;
}

double sgemm_peak(int threads) {
    const int n = 2048;
    openblas_set_num_threads(threads);
    float *a = malloc((size_t)n * n * 4), *b = malloc((size_t)n * n * 4),
          *c = malloc((size_t)n * n * 4);
    if (!a || !b || !c) abort();
    for (size_t i = 0; i < (size_t)n * n; i++)
        a[i] = (float)(i % 7) * 0.25f, b[i] = (float)(i % 5) * 0.5f, c[i] = 0;
    int reps = opt.quick ? 2 : 5;
    double t[5];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c,
                n); /* warm-up */
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c,
                    n);
        t[r] = now() - t0;
    }
    free(a), free(b), free(c);
    stats s = summarize(t, reps);
    double flops = 2.0 * n * n * n;
    emit_rate("machine", "sgemm 2048", "openblas", "gflops", s, flops / 1e9, "GFLOP/s", threads,
              "cblas_sgemm f32 2048^3");
    openblas_set_num_threads(opt.threads);
    return flops / s.median;
}

/* ---- shared bench state ------------------------------------------------------------------ */

/* Sets kiln's process-wide thread count (its kernels and OpenBLAS) through a ctx option. */
int set_threads(int n) {
    kiln_ctx_options o = kiln_ctx_options_default();
    o.num_threads = n;
    kiln_ctx *cx;
    if (kiln_ctx_create(&o, &cx) != KILN_OK) return 0;
    kiln_ctx_release(cx);
    openblas_set_num_threads(n);
    return 1;
}

/* A case whose prerequisite is missing (an API that is not implemented yet): listed as
 * pending with the reason, not as a failure. Clears the ctx's error. */
void mark_pending(bench *b, const char *what) {
    b->pending = 1;
    snprintf(b->why, sizeof b->why, "%s: %s", what,
             kiln_ctx_status(b->cx) != KILN_OK ? kiln_ctx_error_message(b->cx) : "not available");
    kiln_ctx_clear_error(b->cx);
}

int check(bench *b) {
    if (kiln_ctx_status(b->cx) == KILN_OK) return 1;
    fprintf(stderr, "kiln-bench: %s/%s: %s\n", b->suite, b->name, kiln_ctx_error_message(b->cx));
    kiln_ctx_clear_error(b->cx);
    return 0;
}

/* ---- results for the peers' checks -------------------------------------------------------- */

/* A case's file stem: "suite case" with every run of other characters than letters and digits
 * turned into one '_' ("emlx scalar f32[10,10]" -> "emlx_scalar_f32_10_10"); the peers
 * (bench/peers/common.py, case_stem) make the same. */
static void case_stem(const bench *b, char *out, size_t size) {
    char full[128];
    snprintf(full, sizeof full, "%s %s", b->suite, b->name);
    size_t n = 0;
    for (const char *p = full; *p && n + 1 < size; p++) {
        if (isalnum((unsigned char)*p))
            out[n++] = (char)tolower((unsigned char)*p);
        else if (n > 0 && out[n - 1] != '_')
            out[n++] = '_';
    }
    while (n > 0 && out[n - 1] == '_')
        n--;
    out[n] = 0;
}

static int mkdir_p(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(path, 0777) != 0 && errno != EEXIST) return 0;
        *p = '/';
    }
    return mkdir(path, 0777) == 0 || errno == EEXIST;
}

/* Writes the inputs and kiln's result of a case (its 1-thread run only) as
 * <check_dir>/<stem>.in<i>.npy and <stem>.out.npy, so that each peer computes from the same
 * data and compares its result with kiln's. A write that fails is reported, not fatal. */
static void save_check(bench *b, kiln_tensor *const *in, int n_in, const kiln_tensor *out) {
    if (!opt.check_dir || !*opt.check_dir || b->threads != 1 || !out) return;
    if (!mkdir_p(opt.check_dir)) {
        fprintf(stderr, "kiln-bench: cannot create %s: %s\n", opt.check_dir, strerror(errno));
        return;
    }
    char stem[96], path[4096];
    case_stem(b, stem, sizeof stem);
    for (int i = 0; i < n_in; i++) {
        snprintf(path, sizeof path, "%s/%s.in%d.npy", opt.check_dir, stem, i);
        kiln_npy_save(b->cx, path, in[i]);
    }
    snprintf(path, sizeof path, "%s/%s.out.npy", opt.check_dir, stem);
    kiln_npy_save(b->cx, path, out);
    check(b);
}

/* Calls exe once on in and saves inputs and result for the peers (save_check). */
void call_and_save(bench *b, kiln_exe *exe, kiln_tensor **in, int n_in) {
    if (!opt.check_dir || !*opt.check_dir || b->threads != 1) return;
    kiln_tensor *out = NULL;
    if (kiln_exe_call(b->cx, exe, in, &out) == KILN_OK) save_check(b, in, n_in, out);
    check(b);
    kiln_tensor_release(out);
}

const char *limits_bw(char *buf, size_t size) {
    snprintf(buf, size, "read %.1f GB/s (1 thr); triad %.1f GB/s (1 thr), %.1f (%d thr)",
             machine.read1 / 1e9, machine.triad1 / 1e9, machine.triadN / 1e9, opt.threads);
    return buf;
}

/* The bandwidth limit at a thread count: one thread reads at read1 (or triad1 if higher),
 * more threads at the all-core triad. */
static double bw_limit(int threads) {
    double one = machine.read1 > machine.triad1 ? machine.read1 : machine.triad1;
    return threads > 1 && machine.triadN > one ? machine.triadN : one;
}

static double flops_limit(int threads) { return threads > 1 ? machine.sgemmN : machine.sgemm1; }

const char *limits_flops(char *buf, size_t size, const char *extra) {
    snprintf(buf, size, "sgemm %.1f GFLOP/s (1 thr), %.1f (%d thr)%s%s", machine.sgemm1 / 1e9,
             machine.sgemmN / 1e9, opt.threads, extra ? "; " : "", extra ? extra : "");
    return buf;
}

/* Lowers and compiles fn reps times, recording lower / compile / lower+compile. */
int lower_compile(bench *b, const kiln_region *fn, const kiln_arg_spec *args, int n_args,
                  int n_results, reps_policy p, comptime_stats *out, kiln_exe **keep) {
    if (opt.cold_child) { /* one compile and its first call, everything process-wide cold */
        kiln_module *m = NULL;
        kiln_exe *exe = NULL;
        int ok = kiln_lower(b->cx, fn, args, n_args, n_results, NULL, &m) == KILN_OK;
        double t0 = now();
        ok = ok && kiln_compile(b->cx, m, NULL, &exe) == KILN_OK;
        double t1 = now();
        if (ok) printf("cold_compile %.9f\n", t1 - t0);
        fflush(stdout);
        /* The first call on zeros (what a program that compiles and calls once waits for
         * next: work a compile leaves to the background shows up here), for programs
         * whose arguments take at most 128 MiB (a VGG at 224x224 calls for seconds, which
         * would hide a compile's milliseconds and slow the suite down). */
        kiln_tensor *in[64], *res[64];
        size_t bytes = 0;
        for (int i = 0; i < n_args; i++) {
            size_t nb = 0;
            kiln_shape_nbytes(&args[i].shape, args[i].dtype, &nb);
            bytes += nb;
        }
        bool call = ok && n_args <= 64 && n_results <= 64 && bytes <= ((size_t)128 << 20);
        for (int i = 0; i < n_args && call && ok; i++)
            ok = (in[i] = kiln_zeros(b->cx, args[i].dtype, args[i].shape)) != NULL;
        if (ok && call) {
            double t2 = now();
            ok = kiln_exe_call(b->cx, exe, in, res) == KILN_OK;
            double t3 = now();
            if (ok) printf("cold_first_call %.9f\n", t3 - t2);
        }
        /* The native kernels: until they are all there (the background compiler, or the
         * disk cache), from the compile's start. */
        kiln_exe_info xi;
        while (ok && kiln_exe_info_get(b->cx, exe, &xi) == KILN_OK &&
               xi.n_native_ready < xi.n_native_kernels && now() - t0 < 120) {
            struct timespec nap = {0, 1000000};
            nanosleep(&nap, NULL);
        }
        if (ok && kiln_exe_info_get(b->cx, exe, &xi) == KILN_OK && xi.n_native_kernels > 0)
            printf("cold_native %.9f %d %d\n", now() - t0, (int)xi.n_native_ready,
                   (int)xi.n_native_kernels);
        fflush(stdout);
        _exit(ok ? 0 : 1);
    }
    double *tl = malloc((size_t)p.max_reps * sizeof(double));
    double *tc = malloc((size_t)p.max_reps * sizeof(double));
    double *tt = malloc((size_t)p.max_reps * sizeof(double));
    int n = 0, ok = 1;
    double start = now();
    for (int w = 0; ok; w++) {
        if (w >= p.warmup && !(n < p.max_reps && (n < p.min_reps || now() - start < opt.target)))
            break;
        kiln_module *m = NULL;
        kiln_exe *exe = NULL;
        double t0 = now();
        ok = kiln_lower(b->cx, fn, args, n_args, n_results, NULL, &m) == KILN_OK;
        double t1 = now();
        kiln_module_info mi;
        if (ok && kiln_module_info_get(b->cx, m, &mi) == KILN_OK) out->n_ops = mi.n_ops;
        ok = ok && kiln_compile(b->cx, m, NULL, &exe) == KILN_OK;
        double t2 = now();
        if (w >= p.warmup) tl[n] = t1 - t0, tc[n] = t2 - t1, tt[n] = t2 - t0, n++;
        kiln_module_release(m);
        /* The executable kept is the last one compiled: its first call then follows its
         * compile, as in a program that compiles and calls. */
        if (keep && ok) {
            kiln_exe_release(*keep);
            *keep = exe;
        } else {
            kiln_exe_release(exe);
        }
    }
    if (ok && n > 0) {
        out->lower = summarize(tl, n);
        out->compile = summarize(tc, n);
        out->total = summarize(tt, n);
    }
    free(tl), free(tc), free(tt);
    return check(b) && ok && n > 0;
}

/* Compile time per op of the lowered module: flat from small programs to large ones when
 * every pass is linear. */
void emit_per_op(bench *b, const comptime_stats *s) {
    if (s->n_ops <= 0) return;
    char note[64];
    snprintf(note, sizeof note, "kiln_compile / %d ops", (int)s->n_ops);
    double n = s->n_ops;
    emit(b->suite, b->name, "kiln", "compile per op", s->compile.median / n * 1e6,
         s->compile.p10 / n * 1e6, s->compile.p90 / n * 1e6, "us", s->compile.reps, 1, note);
}

/* ---- running compiled functions ---------------------------------------------------------- */

void call_exe_once(void *user) {
    call_state *s = user;
    kiln_tensor *out = NULL;
    if (kiln_exe_call(s->cx, s->exe, s->in, &out) != KILN_OK) s->ok = 0;
    kiln_tensor_release(out);
}

/* Lowers, compiles, calls once (first call) and then steadily; records all of it. */
int run_compiled(bench *b, const char *impl, const kiln_region *fn, const kiln_arg_spec *args,
                 int n_args, kiln_tensor **in, run_spec rs, stats *steady_out) {
    comptime_stats ct;
    kiln_exe *exe = NULL;
    if (!lower_compile(b, fn, args, n_args, 1, rs.compiles, &ct, &exe)) return 0;
    emit_time(b->suite, b->name, impl, "lower", ct.lower, 1, NULL);
    emit_time(b->suite, b->name, impl, "compile", ct.compile, 1, NULL);
    /* The executable kept above is called after about a second of compiling, when the call
     * path's code and data have left every cache (and the engine's deeper stack pages may
     * be untouched): 20-40 us that a second of sleeping adds as well, costs of the process
     * and not of an executable. That call is reported as first_call_cold; first_call is
     * the first call of another executable compiled after two more calls of it, as in a
     * program that compiles and calls while it runs. */
    call_state cs = {b->cx, exe, in, 1};
    double t0 = now();
    call_exe_once(&cs);
    double cold = now() - t0;
    call_exe_once(&cs);
    call_exe_once(&cs);
    kiln_exe_release(exe);
    exe = NULL;
    comptime_stats again;
    if (!lower_compile(b, fn, args, n_args, 1, (reps_policy){0, 1, 1}, &again, &exe)) return 0;
    cs.exe = exe;
    /* The buffer cache gives back what it keeps, so that every block the calls use is
     * counted at the allocator. */
    kiln_ctx_trim(b->cx);
    size_t base = peak_begin();
    t0 = now();
    call_exe_once(&cs);
    double first = now() - t0;
    /* The native tier compiles in the background (unless KILN_NATIVE says otherwise): the
     * steady state is what calls get once its kernels are there. */
    double native_wait = 0;
    kiln_exe_info xi;
    int native_total = 0, native_ready = 0;
    for (;;) {
        if (kiln_exe_info_get(b->cx, exe, &xi) != KILN_OK) break;
        native_total = xi.n_native_kernels, native_ready = xi.n_native_ready;
        if (native_ready >= native_total || now() - t0 > 120) break;
        struct timespec nap = {0, 2000000};
        nanosleep(&nap, NULL);
    }
    native_wait = now() - t0;
    stats s = measure(call_exe_once, &cs, rs.calls);
    double peak = peak_mib(base);
    call_and_save(b, exe, in, n_args);
    kiln_exe_release(exe);
    if (!cs.ok || !check(b)) return 0;
    emit_time(b->suite, b->name, impl, "first_call_cold", single(cold), rs.threads,
              "the executable compiled last, after ~1 s of compiling");
    emit_time(b->suite, b->name, impl, "first_call", single(first), rs.threads,
              "a fresh executable, compiled after another one ran 3 times");
    if (native_total > 0) {
        char nn[160];
        snprintf(nn, sizeof nn,
                 "from compile to %d of %d distinct kernels native (background compile or disk "
                 "cache)",
                 native_ready, native_total);
        emit_time(b->suite, b->name, impl, "native_ready", single(native_wait), rs.threads, nn);
    }
    emit_time(b->suite, b->name, impl, "call", s, rs.threads, rs.note);
    emit(b->suite, b->name, impl, "peak_mem", peak, peak, peak, "MiB", s.reps + 1, rs.threads,
         "live kiln bytes during the calls, above those before");
    char lim[200];
    if (rs.bytes > 0)
        emit_rate(b->suite, b->name, impl, "bandwidth", s, rs.bytes / 1e9, "GB/s", rs.threads,
                  limits_bw(lim, sizeof lim));
    if (rs.flops > 0)
        emit_rate(b->suite, b->name, impl, "gflops", s, rs.flops / 1e9, "GFLOP/s", rs.threads,
                  limits_flops(lim, sizeof lim, NULL));
    if (rs.bytes > 0 || rs.flops > 0) {
        const double fb = rs.bytes / bw_limit(rs.threads), ff = rs.flops / flops_limit(rs.threads);
        snprintf(lim, sizeof lim, "%s",
                 fb >= ff ? "bytes / bandwidth limit" : "flops / sgemm rate");
        emit_time(b->suite, b->name, impl, "floor", single(fb >= ff ? fb : ff), rs.threads, lim);
    }
    if (rs.pct_bw) {
        const double pct = 100.0 * rs.bytes / s.median / bw_limit(rs.threads);
        emit(b->suite, b->name, impl, "pct_bw", pct,
             100.0 * rs.bytes / s.p90 / bw_limit(rs.threads),
             100.0 * rs.bytes / s.p10 / bw_limit(rs.threads), "%", s.reps, rs.threads,
             rs.threads > 1 ? "of the all-core triad bandwidth" : "of the 1-thread read bandwidth");
    }
    if (steady_out) *steady_out = s;
    return 1;
}

run_spec spec_fast(const bench *b) {
    return (run_spec){.threads = b->threads, .calls = policy_fast(), .compiles = policy_fast()};
}
