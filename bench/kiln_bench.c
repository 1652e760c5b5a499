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
 * ru_maxrss of the whole process is printed at the end for reference. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <kiln/kiln.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

extern char **environ;

/* ---- options, timing, statistics ----------------------------------------------------- */

static struct {
    int quick;
    const char *filter;
    const char *json_path;
    const char *check_dir; /* where results for the peers' checks go ("": nowhere) */
    int threads;           /* the "all threads" count of multi-thread cases */
    int cores;             /* online CPUs */
    double target;         /* seconds of steady-state calls per measurement */
} opt = {.json_path = "bench/results/latest.json", .check_dir = "bench/results/check"};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    double median, p10, p90;
    int reps;
} stats;

static stats summarize(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return (stats){t[n / 2], t[n / 10], t[(9 * n) / 10], n};
}

static stats single(double t) { return (stats){t, t, t, 1}; }

/* Repetition policy: at least min_reps and opt.target seconds, at most max_reps. */
typedef struct {
    int warmup, min_reps, max_reps;
} reps_policy;

static reps_policy policy_fast(void) { return (reps_policy){3, 11, opt.quick ? 2001 : 20001}; }
static reps_policy policy_slow(int min_reps) {
    return (reps_policy){1, opt.quick ? 2 : min_reps, opt.quick ? 3 : min_reps * 3};
}

typedef void (*body_fn)(void *user);

static stats measure(body_fn f, void *user, reps_policy p) {
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

typedef struct {
    char suite[24], name[48], impl[16], metric[16], unit[10], note[200];
    double median, p10, p90;
    int reps, threads;
} record;

static record *recs;
static int n_recs, cap_recs;

static void print_header(void) {
    printf("%-12s %-24s %-10s %-12s %10s %10s %10s %-7s %6s %3s  %s\n", "suite", "case", "impl",
           "metric", "median", "p10", "p90", "unit", "reps", "thr", "note");
}

static void emit(const char *suite, const char *name, const char *impl, const char *metric,
                 double median, double p10, double p90, const char *unit, int reps, int threads,
                 const char *note) {
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
static void emit_time(const char *suite, const char *name, const char *impl, const char *metric,
                      stats s, int threads, const char *note) {
    double scale = s.median < 1e-3 ? 1e6 : s.median < 1.0 ? 1e3 : 1.0;
    const char *unit = s.median < 1e-3 ? "us" : s.median < 1.0 ? "ms" : "s";
    emit(suite, name, impl, metric, s.median * scale, s.p10 * scale, s.p90 * scale, unit, s.reps,
         threads, note);
}

/* work / time: a rate whose p10 comes from the p90 time and vice versa. */
static void emit_rate(const char *suite, const char *name, const char *impl, const char *metric,
                      stats s, double work, const char *unit, int threads, const char *note) {
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

static int write_json(const char *path) {
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
static void *count_alloc(void *user, size_t size, size_t alignment) {
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

static void count_free(void *user, void *ptr, size_t size) {
    const kiln_allocator *a = kiln_allocator_default();
    (void)user;
    a->free(a->user, ptr, size);
    atomic_fetch_sub(&live_bytes, size);
}

static size_t peak_begin(void) {
    size_t live = atomic_load(&live_bytes);
    atomic_store(&peak_bytes, live);
    return live;
}

static double peak_mib(size_t base) {
    return (double)(atomic_load(&peak_bytes) - base) / (1024.0 * 1024.0);
}

/* ---- the machine's limits ---------------------------------------------------------------- */

static struct {
    double triad1, triadN; /* bytes/s */
    double read1;          /* bytes/s, a read-only sum on one thread */
    double sgemm1, sgemmN; /* flop/s */
} machine;

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
static double triad(int threads) {
    size_t n = 32u << 20;
    triad_part parts[64];
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
static float read_sum(const float *x, size_t n) {
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
static double read_bandwidth(void) {
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

static double sgemm_peak(int threads) {
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

typedef struct {
    kiln_ctx *cx;
    const char *suite, *name;
    int threads;   /* kiln's thread count for this run of the case */
    int pending;   /* set by a case that cannot run yet (see mark_pending) */
    char why[200]; /* ... and why */
} bench;

/* Sets kiln's process-wide thread count (its kernels and OpenBLAS) through a ctx option. */
static int set_threads(int n) {
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
static void mark_pending(bench *b, const char *what) {
    b->pending = 1;
    snprintf(b->why, sizeof b->why, "%s: %s", what,
             kiln_ctx_status(b->cx) != KILN_OK ? kiln_ctx_error_message(b->cx) : "not available");
    kiln_ctx_clear_error(b->cx);
}

static int check(bench *b) {
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
static void call_and_save(bench *b, kiln_exe *exe, kiln_tensor **in, int n_in) {
    if (!opt.check_dir || !*opt.check_dir || b->threads != 1) return;
    kiln_tensor *out = NULL;
    if (kiln_exe_call(b->cx, exe, in, &out) == KILN_OK) save_check(b, in, n_in, out);
    check(b);
    kiln_tensor_release(out);
}

static const char *limits_bw(char *buf, size_t size) {
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

static const char *limits_flops(char *buf, size_t size, const char *extra) {
    snprintf(buf, size, "sgemm %.1f GFLOP/s (1 thr), %.1f (%d thr)%s%s", machine.sgemm1 / 1e9,
             machine.sgemmN / 1e9, opt.threads, extra ? "; " : "", extra ? extra : "");
    return buf;
}

/* Lowers and compiles fn reps times, recording lower / compile / lower+compile. */
typedef struct {
    stats lower, compile, total;
    int32_t n_ops; /* in the lowered module's entry function, before the passes */
} comptime_stats;

static int lower_compile(bench *b, const kiln_region *fn, const kiln_arg_spec *args, int n_args,
                         int n_results, reps_policy p, comptime_stats *out, kiln_exe **keep) {
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
static void emit_per_op(bench *b, const comptime_stats *s) {
    if (s->n_ops <= 0) return;
    char note[64];
    snprintf(note, sizeof note, "kiln_compile / %d ops", (int)s->n_ops);
    double n = s->n_ops;
    emit(b->suite, b->name, "kiln", "compile per op", s->compile.median / n * 1e6,
         s->compile.p10 / n * 1e6, s->compile.p90 / n * 1e6, "us", s->compile.reps, 1, note);
}

/* ---- comptime: lower + compile (small cases run once more, for the peers' checks) ------ */

static kiln_status fn_sum(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] = kiln_sum(cx, in[0], KILN_DIMS(0, 1), false);
    return kiln_ctx_status(cx);
}

static kiln_status fn_cos(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] = kiln_cosine(cx, in[0]);
    return kiln_ctx_status(cx);
}

/* Runs one small compiled program before any case, so that "first_call" measures what an
 * executable's first call costs, not the process's one-time costs (mapping the engine's
 * code pages, resolving library symbols: about 20-30 us once per process), which
 * time_to_load measures. */
static void warm_up_engine(kiln_ctx *cx) {
    kiln_arg_spec spec = {.dtype = KILN_F32, .shape = KILN_SHAPE(8)};
    kiln_module *m = NULL;
    kiln_exe *exe = NULL;
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(8)), *r = NULL;
    if (kiln_lower(cx, &(kiln_region){fn_cos, NULL}, &spec, 1, 1, NULL, &m) == KILN_OK &&
        kiln_compile(cx, m, NULL, &exe) == KILN_OK && kiln_exe_call(cx, exe, &x, &r) == KILN_OK)
        kiln_tensor_release(r);
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_tensor_release(x);
    kiln_ctx_clear_error(cx);
}

/* The comptime cases' f64[2,10] argument for the peers' checks: uniform in [-3, 3). */
static void comptime_check(bench *b, kiln_exe *exe) {
    kiln_tensor *x =
        kiln_random_uniform(b->cx, kiln_key_from_seed(6), KILN_F64, KILN_SHAPE(2, 10), -3, 3);
    if (check(b)) call_and_save(b, exe, &x, 1);
    kiln_tensor_release(x);
}

static void comptime_small(bench *b, const kiln_region *fn) {
    kiln_arg_spec arg = {.dtype = KILN_F64, .shape = KILN_SHAPE(2, 10)};
    comptime_stats s;
    kiln_exe *exe = NULL;
    int ok = lower_compile(b, fn, &arg, 1, 1, policy_fast(), &s, &exe);
    if (ok) comptime_check(b, exe);
    kiln_exe_release(exe);
    if (!ok) return;
    emit_time(b->suite, b->name, "kiln", "lower", s.lower, 1, "kiln_lower");
    emit_time(b->suite, b->name, "kiln", "compile", s.compile, 1, "kiln_compile");
    emit_time(b->suite, b->name, "kiln", "total", s.total, 1, "lower + compile");
}

static void case_comptime_sum(bench *b) { comptime_small(b, &(kiln_region){fn_sum, NULL}); }
static void case_comptime_cos(bench *b) { comptime_small(b, &(kiln_region){fn_cos, NULL}); }

/* VGG: stages of (channels, convs); conv3x3 pad 1 + bias + ReLU, then a 2x2/2 max-pool;
 * then flatten and dense layers (ReLU between them). Arguments: the input, then per conv
 * (w [out,in,3,3], b [out]), then per dense layer (w [in,out], b [out]). */
typedef struct {
    int depth;
    int stages[5][2];
    int dense_in, hidden, classes; /* dense_in: 512 * (H/32) * (W/32) */
} vgg_config;

static vgg_config vgg_cfg(int depth) {
    vgg_config c = {depth, {{64, 1}, {128, 1}, {256, 2}, {512, 2}, {512, 2}}, 25088, 4096, 1000};
    int per[4][5] = {{1, 1, 2, 2, 2}, {2, 2, 2, 2, 2}, {2, 2, 3, 3, 3}, {2, 2, 4, 4, 4}};
    int k = depth == 11 ? 0 : depth == 13 ? 1 : depth == 16 ? 2 : 3;
    for (int s = 0; s < 5; s++)
        c.stages[s][1] = per[k][s];
    return c;
}

static int vgg_n_convs(const vgg_config *c) {
    int n = 0;
    for (int s = 0; s < 5; s++)
        n += c->stages[s][1];
    return n;
}

/* The forward pass is kiln/nn.h's VGG: the weights (arguments 1..) are its parameter
 * struct's leaves, in its descriptor's order. */
static kiln_status fn_vgg(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    const vgg_config *c = user;
    const kiln_tree_def *def = kiln_nn_vgg_def(c->depth, false);
    kiln_nn_vgg params = {.depth = c->depth, .batch_norm = false};
    kiln_status st = kiln_tree_unflatten(cx, def, in + 1, 2 * vgg_n_convs(c) + 6, NULL, 0, &params);
    if (st != KILN_OK) return st;
    out[0] = kiln_nn_vgg_forward(cx, &params, NULL, in[0], false, NULL, NULL);
    return kiln_ctx_status(cx);
}

/* Argument specs for a VGG at input [n,3,h,w]; returns the count. specs needs 64 entries. */
static int vgg_specs(const vgg_config *c, int64_t n, int64_t h, int64_t w, kiln_arg_spec *specs,
                     double *flops) {
    int a = 0, cin = 3;
    double f = 0;
    specs[a++] = (kiln_arg_spec){.dtype = KILN_F32, .shape = KILN_SHAPE(n, 3, h, w)};
    for (int s = 0; s < 5; s++) {
        for (int k = 0; k < c->stages[s][1]; k++) {
            int co = c->stages[s][0];
            specs[a++] = (kiln_arg_spec){.dtype = KILN_F32, .shape = KILN_SHAPE(co, cin, 3, 3)};
            specs[a++] = (kiln_arg_spec){.dtype = KILN_F32, .shape = KILN_SHAPE(co)};
            f += 2.0 * (double)n * cin * 9 * co * (double)h * (double)w;
            cin = co;
        }
        h /= 2, w /= 2;
    }
    int dims[4] = {c->dense_in, c->hidden, c->hidden, c->classes};
    for (int d = 0; d < 3; d++) {
        specs[a++] = (kiln_arg_spec){.dtype = KILN_F32, .shape = KILN_SHAPE(dims[d], dims[d + 1])};
        specs[a++] = (kiln_arg_spec){.dtype = KILN_F32, .shape = KILN_SHAPE(dims[d + 1])};
        f += 2.0 * (double)n * dims[d] * dims[d + 1];
    }
    if (flops) *flops = f;
    return a;
}

static void case_comptime_vgg(bench *b, int depth) {
    vgg_config c = vgg_cfg(depth);
    kiln_arg_spec specs[64];
    int n = vgg_specs(&c, 16, 224, 224, specs, NULL);
    comptime_stats s;
    kiln_region fn = {fn_vgg, &c};
    char note[160];
    snprintf(note, sizeof note, "f32[16,3,224,224], %d convs + 3 dense, weights as %d args",
             vgg_n_convs(&c), n - 1);
    reps_policy p = {1, opt.quick ? 3 : 11, opt.quick ? 51 : 2001};
    if (!lower_compile(b, &fn, specs, n, 1, p, &s, NULL)) return;
    emit_time(b->suite, b->name, "kiln", "lower", s.lower, 1, note);
    emit_time(b->suite, b->name, "kiln", "compile", s.compile, 1, NULL);
    emit_time(b->suite, b->name, "kiln", "total", s.total, 1, "lower + compile");
}

/* Lowers fn once: 1 when it lowers; else, when the failure is UNIMPLEMENTED (a feature
 * still missing), marks the case pending and returns 0; other errors are reported. */
static int lowers(bench *b, const kiln_region *fn, const kiln_arg_spec *args, int n_args,
                  int n_results, const char *what) {
    kiln_module *m = NULL;
    kiln_status st = kiln_lower(b->cx, fn, args, n_args, n_results, NULL, &m);
    kiln_module_release(m);
    if (st == KILN_OK) return 1;
    if (st == KILN_UNIMPLEMENTED)
        mark_pending(b, what);
    else
        check(b);
    return 0;
}

/* "Basic grad cos": lower + compile of the gradient of sum(cos x), kiln_grad traced inside
 * the lowered function (the backward pass becomes part of the module). */
static kiln_status fn_sum_cos(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] = kiln_sum(cx, kiln_cosine(cx, in[0]), KILN_DIMS_NONE, false);
    return kiln_ctx_status(cx);
}

static kiln_status fn_grad_cos(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *user) {
    (void)user;
    kiln_region f = {fn_sum_cos, NULL};
    return kiln_grad(cx, &f, 1, in, NULL, out);
}

static void case_comptime_grad_cos(bench *b) {
    kiln_arg_spec arg = {.dtype = KILN_F64, .shape = KILN_SHAPE(2, 10)};
    kiln_region fn = {fn_grad_cos, NULL};
    comptime_stats s;
    if (!lowers(b, &fn, &arg, 1, 1, "kiln_grad")) return;
    kiln_exe *exe = NULL;
    int ok = lower_compile(b, &fn, &arg, 1, 1, policy_fast(), &s, &exe);
    if (ok) comptime_check(b, exe);
    kiln_exe_release(exe);
    if (!ok) return;
    emit_time(b->suite, b->name, "kiln", "lower", s.lower, 1, "kiln_lower (with kiln_grad)");
    emit_time(b->suite, b->name, "kiln", "compile", s.compile, 1, "kiln_compile");
    emit_time(b->suite, b->name, "kiln", "total", s.total, 1, "lower + compile");
}

/* A VGG11 training step: loss = sum(logits^2) / batch, gradients of every weight by
 * kiln_grad, SGD (w - 0.01 g); the results are the updated weights. */
static kiln_status fn_vgg_loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *user) {
    kiln_tensor *logits;
    kiln_status st = fn_vgg(cx, in, &logits, user);
    if (st != KILN_OK) return st;
    out[0] = kiln_divide(cx, kiln_sum(cx, kiln_multiply(cx, logits, logits), KILN_DIMS_NONE, false),
                         kiln_scalar(cx, (double)kiln_tensor_dim(in[0], 0), KILN_F32));
    return kiln_ctx_status(cx);
}

typedef struct {
    vgg_config *c;
    int n_args;
} train_config;

static kiln_status fn_vgg_train(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                void *user) {
    const train_config *t = user;
    int32_t argnums[64];
    for (int i = 1; i < t->n_args; i++)
        argnums[i - 1] = i;
    kiln_grad_options go = kiln_grad_options_default();
    go.argnums = argnums;
    go.n_argnums = t->n_args - 1;
    kiln_region loss = {fn_vgg_loss, t->c};
    kiln_tensor *g[64];
    kiln_status st = kiln_grad(cx, &loss, t->n_args, in, &go, g);
    if (st != KILN_OK) return st;
    for (int i = 1; i < t->n_args; i++)
        out[i - 1] = kiln_subtract(
            cx, in[i], kiln_multiply(cx, kiln_scalar_like(cx, g[i - 1], 0.01), g[i - 1]));
    return kiln_ctx_status(cx);
}

static void case_comptime_vgg_train(bench *b, int depth) {
    vgg_config c = vgg_cfg(depth);
    kiln_arg_spec specs[64];
    int n = vgg_specs(&c, 16, 224, 224, specs, NULL);
    train_config t = {&c, n};
    kiln_region fn = {fn_vgg_train, &t};
    char what[48], note[96];
    snprintf(what, sizeof what, "kiln_grad of VGG%d", depth);
    if (!lowers(b, &fn, specs, n, n - 1, what)) return;
    comptime_stats s = {0};
    reps_policy p = {1, opt.quick ? 3 : 11, opt.quick ? 21 : 501};
    if (!lower_compile(b, &fn, specs, n, n - 1, p, &s, NULL)) return;
    snprintf(note, sizeof note, "f32[16,3,224,224]: forward, backward (kiln_grad), SGD on %d weights",
             n - 1);
    emit_time(b->suite, b->name, "kiln", "lower", s.lower, 1, note);
    emit_time(b->suite, b->name, "kiln", "compile", s.compile, 1, NULL);
    emit_time(b->suite, b->name, "kiln", "total", s.total, 1, "lower + compile");
    emit_per_op(b, &s);
}

static void case_comptime_vgg11_train(bench *b) { case_comptime_vgg_train(b, 11); }
static void case_comptime_vgg19_train(bench *b) { case_comptime_vgg_train(b, 19); }

static void case_vgg11_ct(bench *b) { case_comptime_vgg(b, 11); }
static void case_vgg13_ct(bench *b) { case_comptime_vgg(b, 13); }
static void case_vgg16_ct(bench *b) { case_comptime_vgg(b, 16); }
static void case_vgg19_ct(bench *b) { case_comptime_vgg(b, 19); }

/* One step of the 1-D heat equation: three slices, the stencil u + 0.1 (l - 2c + r) on the
 * interior and a concatenate with the two boundary values (13 ops). */
static kiln_tensor *heat_step(kiln_ctx *cx, kiln_tensor *x) {
    const int64_t n = kiln_tensor_dim(x, 0);
    kiln_tensor *l = kiln_slice(cx, x, KILN_DIMS(0), KILN_DIMS(n - 2), KILN_DIMS_NONE);
    kiln_tensor *c = kiln_slice(cx, x, KILN_DIMS(1), KILN_DIMS(n - 1), KILN_DIMS_NONE);
    kiln_tensor *r = kiln_slice(cx, x, KILN_DIMS(2), KILN_DIMS(n), KILN_DIMS_NONE);
    kiln_tensor *lap =
        kiln_add(cx, kiln_subtract(cx, l, kiln_multiply(cx, kiln_scalar(cx, 2, KILN_F32), c)), r);
    kiln_tensor *parts[3] = {kiln_slice(cx, x, KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS_NONE),
                             kiln_add(cx, c, kiln_multiply(cx, kiln_scalar(cx, 0.1, KILN_F32), lap)),
                             kiln_slice(cx, x, KILN_DIMS(n - 1), KILN_DIMS(n), KILN_DIMS_NONE)};
    return kiln_concatenate(cx, parts, 3, 0);
}

/* The heat equation on f32[4096] with its steps unrolled: what a user's Python loop over
 * steps traces to; compile time must stay linear in the program's size. */
static kiln_status fn_heat(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    const int steps = *(const int *)user;
    kiln_tensor *x = in[0];
    for (int s = 0; s < steps; s++)
        x = heat_step(cx, x);
    out[0] = x;
    return kiln_ctx_status(cx);
}

static void case_comptime_heat(bench *b, int steps) {
    kiln_arg_spec arg = {.dtype = KILN_F32, .shape = KILN_SHAPE(4096)};
    kiln_region fn = {fn_heat, &steps};
    comptime_stats s = {0};
    reps_policy p = {1, opt.quick ? 2 : 5, opt.quick ? 5 : 201};
    if (!lower_compile(b, &fn, &arg, 1, 1, p, &s, NULL)) return;
    char note[96];
    snprintf(note, sizeof note, "f32[4096], %d steps unrolled (%d ops)", steps, 13 * steps);
    emit_time(b->suite, b->name, "kiln", "lower", s.lower, 1, note);
    emit_time(b->suite, b->name, "kiln", "compile", s.compile, 1, NULL);
    emit_time(b->suite, b->name, "kiln", "total", s.total, 1, "lower + compile");
    emit_per_op(b, &s);
}

static void case_heat100_ct(bench *b) { case_comptime_heat(b, 100); }
static void case_heat1000_ct(bench *b) { case_comptime_heat(b, 1000); }
static void case_heat10000_ct(bench *b) { case_comptime_heat(b, 10000); }

/* ---- time_to_load: a fresh process ------------------------------------------------------- */

/* The child: load libkiln (dynamic linking), create a ctx, compile and run cos(f32[10]). */
static int child_load(void) {
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

typedef struct {
    char exe[4096];
    int failed;
} spawn_state;

static void spawn_child(void *user) {
    spawn_state *s = user;
    char *argv[] = {s->exe, "--child-load", NULL};
    pid_t pid;
    int status = 0;
    if (posix_spawn(&pid, s->exe, NULL, NULL, argv, environ) != 0 ||
        waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        s->failed = 1;
}

static void case_time_to_load(bench *b) {
    spawn_state s = {.failed = 0};
    ssize_t len = readlink("/proc/self/exe", s.exe, sizeof s.exe - 1);
    if (len <= 0) return;
    s.exe[len] = 0;
    stats t = measure(spawn_child, &s, (reps_policy){2, opt.quick ? 5 : 21, opt.quick ? 10 : 101});
    if (s.failed) {
        fprintf(stderr, "kiln-bench: time_to_load: the child failed\n");
        return;
    }
    emit_time(b->suite, b->name, "kiln", "wall", t, 1,
              "posix_spawn of kiln-bench --child-load to exit: load libkiln, ctx, lower+compile+"
              "call cos(f32[10])");
}

/* ---- running compiled functions ---------------------------------------------------------- */

typedef struct {
    kiln_ctx *cx;
    kiln_exe *exe;
    kiln_tensor **in;
    int ok;
} call_state;

static void call_once(void *user) {
    call_state *s = user;
    kiln_tensor *out = NULL;
    if (kiln_exe_call(s->cx, s->exe, s->in, &out) != KILN_OK) s->ok = 0;
    kiln_tensor_release(out);
}

typedef struct {
    double bytes, flops; /* per call, for the rates (0: none) */
    int pct_bw;          /* also report bandwidth as % of the limit */
    int threads;         /* what the records say */
    const char *note;
    reps_policy calls, compiles;
} run_spec;

/* Lowers, compiles, calls once (first call) and then steadily; records all of it. */
static int run_compiled(bench *b, const char *impl, const kiln_region *fn,
                        const kiln_arg_spec *args, int n_args, kiln_tensor **in, run_spec rs,
                        stats *steady_out) {
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
    call_once(&cs);
    double cold = now() - t0;
    call_once(&cs);
    call_once(&cs);
    kiln_exe_release(exe);
    exe = NULL;
    comptime_stats again;
    if (!lower_compile(b, fn, args, n_args, 1, (reps_policy){0, 1, 1}, &again, &exe)) return 0;
    cs.exe = exe;
    size_t base = peak_begin();
    t0 = now();
    call_once(&cs);
    double first = now() - t0;
    stats s = measure(call_once, &cs, rs.calls);
    double peak = peak_mib(base);
    call_and_save(b, exe, in, n_args);
    kiln_exe_release(exe);
    if (!cs.ok || !check(b)) return 0;
    emit_time(b->suite, b->name, impl, "first_call_cold", single(cold), rs.threads,
              "the executable compiled last, after ~1 s of compiling");
    emit_time(b->suite, b->name, impl, "first_call", single(first), rs.threads,
              "a fresh executable, compiled after another one ran 3 times");
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

static run_spec spec_fast(const bench *b) {
    return (run_spec){.threads = b->threads, .calls = policy_fast(), .compiles = policy_fast()};
}

/* ---- loop: the heat equation as one compiled loop, against a plain C loop ---------- */

/* The same as one loop (kiln_fori_loop), as a simulation is written to run. */
static kiln_status heat_body(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = heat_step(cx, in[1]);
    return kiln_ctx_status(cx);
}

static kiln_status fn_heat_loop(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                void *user) {
    kiln_region body = {heat_body, NULL};
    return kiln_fori_loop(cx, 0, *(const int *)user, in, 1, &body, out);
}

/* The peer every simulation is measured against: the same steps as a plain C loop (f32,
 * the same order of operations), two buffers taking turns. */
typedef struct {
    float *u, *v;
    int64_t n;
    int steps;
} heat_c;

static void heat_c_once(void *user) {
    heat_c *h = user;
    float *a = h->u, *b = h->v;
    for (int s = 0; s < h->steps; s++) {
        b[0] = a[0];
        b[h->n - 1] = a[h->n - 1];
        for (int64_t i = 1; i < h->n - 1; i++)
            b[i] = a[i] + 0.1f * ((a[i - 1] - 2.0f * a[i]) + a[i + 1]);
        float *t = a;
        a = b;
        b = t;
    }
}

static void case_heat_loop(bench *b) {
    int steps = 1000;
    const int64_t n = 4096;
    kiln_tensor *x = kiln_random_uniform(b->cx, kiln_key_from_seed(9), KILN_F32, KILN_SHAPE(n), 0, 1);
    kiln_arg_spec arg = {.dtype = KILN_F32, .shape = KILN_SHAPE(n)};
    run_spec rs = spec_fast(b); /* no byte floor: the 16 KB carry stays in the L1 cache */
    rs.note = "1000 steps of kiln_fori_loop, the carry f32[4096]";
    kiln_region fn = {fn_heat_loop, &steps};
    stats compiled;
    if (run_compiled(b, "kiln", &fn, &arg, 1, &x, rs, &compiled)) {
        heat_c h = {malloc((size_t)n * sizeof(float)), malloc((size_t)n * sizeof(float)), n, steps};
        if (h.u && h.v) {
            memcpy(h.u, kiln_tensor_data(x), (size_t)n * sizeof(float));
            stats c = measure(heat_c_once, &h, rs.calls);
            emit_time(b->suite, b->name, "c", "call", c, 1, "a plain C loop, f32, built with kiln-bench (-O3)");
            char note[96];
            snprintf(note, sizeof note, "kiln's compiled loop over the C loop (1 thread): %.2fx",
                     compiled.median / c.median);
            emit(b->suite, b->name, "kiln", "vs_c", compiled.median / c.median,
                 compiled.median / c.median, compiled.median / c.median, "x", compiled.reps,
                 b->threads, note);
        }
        free(h.u), free(h.v);
    }
    kiln_tensor_release(x);
}

/* ---- EMLX -------------------------------------------------------------------------------- */

/* acc = x; for i in 1..10: acc = i * acc + y */
static kiln_status fn_emlx(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *acc = in[0];
    for (int i = 1; i <= 10; i++)
        acc = kiln_add(cx, kiln_multiply(cx, kiln_scalar(cx, i, KILN_F32), acc), in[1]);
    out[0] = acc;
    return kiln_ctx_status(cx);
}

/* The matrix variant of EMLX: the scalar step's product becomes a matrix product,
 * acc = x; for i in 1..10: acc = i * (acc @ y) + y */
static kiln_status fn_emlx_matmul(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *user) {
    (void)user;
    kiln_tensor *acc = in[0];
    for (int i = 1; i <= 10; i++)
        acc = kiln_add(cx,
                       kiln_multiply(cx, kiln_scalar(cx, i, KILN_F32), kiln_matmul(cx, acc, in[1])),
                       in[1]);
    out[0] = acc;
    return kiln_ctx_status(cx);
}

/* acc = x; 10 times: acc = dot(x, acc) + y */
static kiln_status fn_emlx_dot(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *user) {
    (void)user;
    kiln_tensor *acc = in[0];
    for (int i = 1; i <= 10; i++)
        acc = kiln_add(cx, kiln_matmul(cx, in[0], acc), in[1]);
    out[0] = acc;
    return kiln_ctx_status(cx);
}

typedef struct {
    kiln_ctx *cx;
    kiln_region_fn fn;
    kiln_tensor **in;
} eager_state;

static void eager_once(void *user) {
    eager_state *s = user;
    kiln_scope_begin(s->cx);
    kiln_tensor *out[1];
    s->fn(s->cx, s->in, out, NULL);
    kiln_scope_end(s->cx);
}

static void emlx_case(bench *b, kiln_region_fn f, int64_t n, int dot) {
    /* iota / n^2: entries in [0, 1), so the matrix variants stay finite */
    kiln_tensor *x = kiln_divide(b->cx, kiln_iota(b->cx, KILN_F32, KILN_SHAPE(n, n), 1),
                                 kiln_scalar(b->cx, (double)(n * n), KILN_F32));
    kiln_tensor_retain(x);
    kiln_tensor *in[2] = {x, x};
    kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(n, n)},
                             {.dtype = KILN_F32, .shape = KILN_SHAPE(n, n)}};
    int threads = b->threads;
    double flops = dot ? 10.0 * 2.0 * (double)n * (double)n * (double)n : 0;
    reps_policy p = n >= 1000 ? policy_slow(5) : policy_fast();
    eager_state es = {b->cx, f, in};
    stats eager = measure(eager_once, &es, p);
    if (!check(b)) return;
    char note[200];
    emit_time(b->suite, b->name, "kiln-eager", "call", eager, threads, "op by op, no tracing");
    if (flops > 0)
        emit_rate(b->suite, b->name, "kiln-eager", "gflops", eager, flops / 1e9, "GFLOP/s", threads,
                  limits_flops(note, sizeof note, NULL));
    run_spec rs = spec_fast(b);
    rs.threads = threads, rs.flops = flops, rs.calls = p;
    stats compiled;
    kiln_region fn = {f, NULL};
    if (!run_compiled(b, "kiln", &fn, args, 2, in, rs, &compiled)) return;
    snprintf(note, sizeof note, "compiled call %.2fx faster than eager",
             eager.median / compiled.median);
    emit(b->suite, b->name, "kiln", "speedup", eager.median / compiled.median,
         eager.median / compiled.median, eager.median / compiled.median, "x", compiled.reps,
         threads, note);
    kiln_tensor_release(x);
}

static void case_emlx(bench *b) { emlx_case(b, fn_emlx, 10, 0); }
static void case_emlx_matmul10(bench *b) { emlx_case(b, fn_emlx_matmul, 10, 1); }
static void case_emlx_dot10(bench *b) { emlx_case(b, fn_emlx_dot, 10, 1); }
static void case_emlx_dot100(bench *b) { emlx_case(b, fn_emlx_dot, 100, 1); }
static void case_emlx_dot1000(bench *b) { emlx_case(b, fn_emlx_dot, 1000, 1); }

/* ---- elementwise and reductions ---------------------------------------------------------- */

static kiln_status fn_expsin(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *x = in[0];
    kiln_tensor *g = kiln_exponential(cx, kiln_negate(cx, kiln_multiply(cx, x, x)));
    out[0] = kiln_add(cx, kiln_multiply(cx, g, kiln_sine(cx, x)),
                      kiln_multiply(cx, kiln_scalar_like(cx, x, 0.5), x));
    return kiln_ctx_status(cx);
}

static void elementwise_case(bench *b, kiln_region_fn f, int64_t n) {
    kiln_tensor *x =
        kiln_random_uniform(b->cx, kiln_key_from_seed(7), KILN_F32, KILN_SHAPE(n), -3, 3);
    kiln_arg_spec arg = {.dtype = KILN_F32, .shape = KILN_SHAPE(n)};
    run_spec rs = spec_fast(b);
    rs.bytes = 8.0 * (double)n; /* read x, write the result */
    rs.note = "f32 in, f32 out; bytes counted: 8 per element";
    if (n >= 10000000) rs.calls = (reps_policy){1, opt.quick ? 5 : 15, opt.quick ? 11 : 201};
    kiln_region fn = {f, NULL};
    stats compiled;
    if (run_compiled(b, "kiln", &fn, &arg, 1, &x, rs, &compiled)) {
        /* eager: op by op through the evaluator, the same function */
        eager_state es = {b->cx, f, &x};
        stats eager = measure(eager_once, &es, rs.calls);
        if (check(b)) {
            emit_time(b->suite, b->name, "kiln-eager", "call", eager, b->threads,
                      "op by op, no tracing");
            char note[96];
            snprintf(note, sizeof note, "compiled call %.2fx faster than eager",
                     eager.median / compiled.median);
            emit(b->suite, b->name, "kiln", "speedup", eager.median / compiled.median,
                 eager.median / compiled.median, eager.median / compiled.median, "x", compiled.reps,
                 b->threads, note);
        }
    }
    kiln_tensor_release(x);
}

static void case_cos_1e6(bench *b) { elementwise_case(b, fn_cos, 1000000); }
static void case_cos_1e7(bench *b) { elementwise_case(b, fn_cos, 10000000); }
static void case_expsin_1e6(bench *b) { elementwise_case(b, fn_expsin, 1000000); }
static void case_expsin_1e7(bench *b) { elementwise_case(b, fn_expsin, 10000000); }

static kiln_status fn_sum_axes(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *user) {
    int which = *(const int *)user; /* 0 all, 1 rows (one sum per row), 2 columns */
    kiln_dims axes = which == 0 ? KILN_DIMS(0, 1) : which == 1 ? KILN_DIMS(1) : KILN_DIMS(0);
    out[0] = kiln_sum(cx, in[0], axes, false);
    return kiln_ctx_status(cx);
}

/* The reduction's time next to a plain read of the same bytes (read_sum over its input),
 * alternated call by call so that both see the same machine: pct_bw = read time / call
 * time, medians over the pairs. */
static void pct_of_read(bench *b, const kiln_region *fn, const kiln_arg_spec *arg, kiln_tensor **x,
                        double bytes) {
    comptime_stats ct;
    kiln_exe *exe = NULL;
    reps_policy once = {0, 1, 1};
    if (!lower_compile(b, fn, arg, 1, 1, once, &ct, &exe)) return;
    call_state cs = {b->cx, exe, x, 1};
    const float *data = kiln_tensor_data(*x);
    const size_t n = kiln_tensor_nbytes(*x) / sizeof(float);
    enum { PAIRS = 15 };
    double tr[PAIRS], tk[PAIRS], ratio[PAIRS];
    int pairs = opt.quick ? 5 : PAIRS;
    volatile float sink = read_sum(data, n);
    call_once(&cs);
    for (int i = 0; i < pairs; i++) {
        double t0 = now();
        sink += read_sum(data, n);
        double t1 = now();
        call_once(&cs);
        double t2 = now();
        tr[i] = t1 - t0, tk[i] = t2 - t1, ratio[i] = 100.0 * tr[i] / tk[i];
    }
    (void)sink;
    kiln_exe_release(exe);
    if (!cs.ok || !check(b)) return;
    stats sr = summarize(tr, pairs), sk = summarize(tk, pairs), sp = summarize(ratio, pairs);
    char note[160];
    snprintf(note, sizeof note,
             "of a plain read of the same %.0f MiB, alternated call by call (read %.1f GB/s, "
             "kiln %.1f GB/s)",
             bytes / 1048576.0, bytes / sr.median / 1e9, bytes / sk.median / 1e9);
    emit(b->suite, b->name, "kiln", "pct_bw", sp.median, sp.p10, sp.p90, "%", pairs, 1, note);
}

static void reduction_case(bench *b, int which) {
    const int64_t n = 4096;
    kiln_tensor *x =
        kiln_random_uniform(b->cx, kiln_key_from_seed(8), KILN_F32, KILN_SHAPE(n, n), 0, 1);
    kiln_arg_spec arg = {.dtype = KILN_F32, .shape = KILN_SHAPE(n, n)};
    run_spec rs = spec_fast(b);
    rs.bytes = 4.0 * (double)n * (double)n;
    rs.pct_bw = b->threads > 1; /* one thread: measured against interleaved reads below */
    rs.calls = (reps_policy){1, opt.quick ? 5 : 15, opt.quick ? 11 : 201};
    rs.note = which == 0   ? "sum over both axes -> f32[]"
              : which == 1 ? "sum over axis 1 -> f32[4096]"
                           : "sum over axis 0 -> f32[4096]";
    kiln_region fn = {fn_sum_axes, &which};
    if (run_compiled(b, "kiln", &fn, &arg, 1, &x, rs, NULL) && b->threads == 1)
        pct_of_read(b, &fn, &arg, &x, rs.bytes);
    kiln_tensor_release(x);
}

static void case_sum_all(bench *b) { reduction_case(b, 0); }
static void case_sum_rows(bench *b) { reduction_case(b, 1); }
static void case_sum_cols(bench *b) { reduction_case(b, 2); }

/* ---- GEMM ---------------------------------------------------------------------------------- */

static kiln_status fn_matmul(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] = kiln_matmul(cx, in[0], in[1]);
    return kiln_ctx_status(cx);
}

typedef struct {
    const float *a, *b;
    float *c;
    int n;
} sgemm_state;

static void sgemm_once(void *user) {
    sgemm_state *g = user;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->n, g->n, g->n, 1.0f, g->a, g->n, g->b,
                g->n, 0.0f, g->c, g->n);
}

static void gemm_case(bench *b, int64_t n) {
    kiln_tensor *x =
        kiln_random_uniform(b->cx, kiln_key_from_seed(9), KILN_F32, KILN_SHAPE(n, n), -1, 1);
    kiln_tensor *y =
        kiln_random_uniform(b->cx, kiln_key_from_seed(10), KILN_F32, KILN_SHAPE(n, n), -1, 1);
    kiln_tensor *in[2] = {x, y};
    kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(n, n)},
                             {.dtype = KILN_F32, .shape = KILN_SHAPE(n, n)}};
    run_spec rs = spec_fast(b);
    rs.flops = 2.0 * (double)n * (double)n * (double)n;
    rs.note = "matmul f32, dot_general on OpenBLAS";
    if (n >= 1024) rs.calls = (reps_policy){1, opt.quick ? 5 : 15, opt.quick ? 7 : 101};
    kiln_region fn = {fn_matmul, NULL};
    run_compiled(b, "kiln", &fn, args, 2, in, rs, NULL);
    /* OpenBLAS called directly on the same data: the GEMM-bound reference */
    sgemm_state g = {kiln_tensor_data(x), kiln_tensor_data(y), NULL, (int)n};
    g.c = malloc(sizeof(float) * (size_t)(n * n));
    if (g.c && g.a && g.b) {
        stats s = measure(sgemm_once, &g, rs.calls);
        emit_time(b->suite, b->name, "openblas", "call", s, b->threads, "cblas_sgemm, same data");
    }
    free(g.c);
    kiln_tensor_release(x), kiln_tensor_release(y);
}

static void case_gemm64(bench *b) { gemm_case(b, 64); }
static void case_gemm256(bench *b) { gemm_case(b, 256); }
static void case_gemm1024(bench *b) { gemm_case(b, 1024); }

/* ---- VGG11 forward, executed --------------------------------------------------------------- */

/* At 32x32 the five pools leave a 512x1x1 map, so the classifier takes 512 inputs:
 * 512 -> 4096 -> 4096 -> 1000 (the 224x224 model's widths, with dense_in = 512). */
static void vgg_run_case(bench *b, int64_t n, int64_t hw) {
    vgg_config c = vgg_cfg(11);
    c.dense_in = 512 * (int)(hw / 32) * (int)(hw / 32);
    kiln_arg_spec specs[64];
    double flops = 0;
    int n_args = vgg_specs(&c, n, hw, hw, specs, &flops);
    kiln_tensor *in[64];
    for (int i = 0; i < n_args; i++) {
        double scale = i == 0 ? 1.0 : 0.05;
        in[i] = kiln_random_uniform(b->cx, kiln_key_from_seed(100 + (uint64_t)i), KILN_F32,
                                    specs[i].shape, -scale, scale);
    }
    if (!check(b)) return;
    run_spec rs = spec_fast(b);
    rs.flops = flops;
    rs.note = hw == 32 ? "VGG11, classifier 512->4096->4096->1000 (1x1 map); convolutions on oneDNN"
                       : "VGG11, classifier 25088->4096->4096->1000; convolutions on oneDNN";
    rs.calls = policy_slow(hw == 32 ? 11 : 5);
    rs.compiles = (reps_policy){1, 3, 11};
    kiln_region fn = {fn_vgg, &c};
    run_compiled(b, "kiln", &fn, specs, n_args, in, rs, NULL);
    for (int i = 0; i < n_args; i++)
        kiln_tensor_release(in[i]);
}

static void case_vgg_224(bench *b) { vgg_run_case(b, 1, 224); }
static void case_vgg_32(bench *b) { vgg_run_case(b, 8, 32); }

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
    {"elementwise", "cos 1e6", case_cos_1e6, 0},
    {"elementwise", "cos 1e7", case_cos_1e7, 1},
    {"elementwise", "expsin 1e6", case_expsin_1e6, 0},
    {"elementwise", "expsin 1e7", case_expsin_1e7, 1},
    {"reduction", "sum all 4096x4096", case_sum_all, 1},
    {"reduction", "sum rows 4096x4096", case_sum_rows, 1},
    {"reduction", "sum cols 4096x4096", case_sum_cols, 1},
    {"loop", "heat 1000 steps f32[4096]", case_heat_loop, 0},
    {"gemm", "f32 64", case_gemm64, 0},
    {"gemm", "f32 256", case_gemm256, 0},
    {"gemm", "f32 1024", case_gemm1024, 1},
    {"vgg", "VGG11 1x3x224x224", case_vgg_224, 2},
    {"vgg", "VGG11 8x3x32x32", case_vgg_32, 2},
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

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--child-load") == 0) return child_load();
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
