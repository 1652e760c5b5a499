/* SPDX-License-Identifier: Apache-2.0 */
/* The benchmark harness that kiln-bench's cases share: the options, timing and statistics
 * over repetitions, the records (the stdout table and the JSON file), peak memory from the
 * counting allocator, the machine's limits (bandwidth, sgemm rate) that the cases' floors and
 * rates refer to, the state of the case being run, the inputs and results saved for the
 * peers' checks, and lowering, compiling and running a compiled function with all its
 * records. Also the programs that several case files run, and the cases themselves (for the
 * case table in kiln_bench.c). */
#ifndef KILN_BENCH_H
#define KILN_BENCH_H

#include <kiln/kiln.h>
#include <stddef.h>
#include <stdint.h>

/* ---- options, timing, statistics (harness.c) ------------------------------------------ */

typedef struct {
    int quick;
    const char *filter;
    const char *json_path;
    const char *check_dir; /* where results for the peers' checks go ("": nowhere) */
    int threads;           /* the "all threads" count of multi-thread cases */
    int cores;             /* online CPUs */
    double target;         /* seconds of steady-state calls per measurement */
    /* A --child-cold process: the first lower_compile compiles once, prints
     * "cold_compile <seconds>" and exits (emit_compile_cold reads it). */
    int cold_child;
} options;

extern options opt;

double now(void);

typedef struct {
    double median, p10, p90;
    int reps;
} stats;

/* Sorts t in place. */
stats summarize(double *t, int n);
stats single(double t);

/* Repetition policy: at least min_reps and opt.target seconds, at most max_reps. */
typedef struct {
    int warmup, min_reps, max_reps;
} reps_policy;

reps_policy policy_fast(void);
reps_policy policy_slow(int min_reps);

typedef void (*body_fn)(void *user);

stats measure(body_fn f, void *user, reps_policy p);

/* ---- records: the stdout table and the JSON file (harness.c) --------------------------- */

typedef struct {
    char suite[24], name[48], impl[16], metric[16], unit[10], note[200];
    double median, p10, p90;
    int reps, threads;
} record;

extern record *recs;
extern int n_recs;

void print_header(void);
void emit(const char *suite, const char *name, const char *impl, const char *metric, double median,
          double p10, double p90, const char *unit, int reps, int threads, const char *note);
/* A time, in the unit that suits its median. */
void emit_time(const char *suite, const char *name, const char *impl, const char *metric, stats s,
               int threads, const char *note);
/* work / time: a rate whose p10 comes from the p90 time and vice versa. */
void emit_rate(const char *suite, const char *name, const char *impl, const char *metric, stats s,
               double work, const char *unit, int threads, const char *note);
int write_json(const char *path);

/* ---- counting allocator (peak memory) (harness.c) --------------------------------------- */

void *count_alloc(void *user, size_t size, size_t alignment);
void count_free(void *user, void *ptr, size_t size);
size_t peak_begin(void);
double peak_mib(size_t base);
/* The process's peak resident set (what the training peers report too): rss_peak_reset
 * sets the kernel's high-water mark (VmHWM) to the resident set now, 0 where this kernel
 * cannot; rss_peak_mib reads it in MiB, -1 when it cannot. */
int rss_peak_reset(void);
double rss_peak_mib(void);

/* ---- the machine's limits (harness.c) ----------------------------------------------------- */

typedef struct {
    double triad1, triadN; /* bytes/s */
    double read1;          /* bytes/s, a read-only sum on one thread */
    double sgemm1, sgemmN; /* flop/s */
} machine_limits;

extern machine_limits machine;

double triad(int threads);
/* A sum of x with 16 partial sums: a plain read of n floats at the memory's speed. */
float read_sum(const float *x, size_t n);
double read_bandwidth(void);
double sgemm_peak(int threads);
const char *limits_bw(char *buf, size_t size);
const char *limits_flops(char *buf, size_t size, const char *extra);

/* ---- shared bench state (harness.c) ------------------------------------------------------- */

typedef struct {
    kiln_ctx *cx;
    const char *suite, *name;
    int threads;   /* kiln's thread count for this run of the case */
    int pending;   /* set by a case that cannot run yet (see mark_pending) */
    char why[200]; /* ... and why */
} bench;

/* Sets kiln's process-wide thread count (its kernels and OpenBLAS) through a ctx option. */
int set_threads(int n);
/* A case whose prerequisite is missing: listed as pending with the reason. */
void mark_pending(bench *b, const char *what);
/* 1 when the ctx has no error; else reports and clears it and returns 0. */
int check(bench *b);

/* ---- results for the peers' checks (harness.c) -------------------------------------------- */

/* Calls exe once on in and saves inputs and result for the peers. */
void call_and_save(bench *b, kiln_exe *exe, kiln_tensor **in, int n_in);

typedef struct {
    stats lower, compile, total;
    int32_t n_ops; /* in the lowered module's entry function, before the passes */
} comptime_stats;

/* Lowers and compiles fn reps times, recording lower / compile / lower+compile; with keep,
 * *keep is the executable compiled last. */
int lower_compile(bench *b, const kiln_region *fn, const kiln_arg_spec *args, int n_args,
                  int n_results, reps_policy p, comptime_stats *out, kiln_exe **keep);
/* Compile time per op of the lowered module. */
void emit_per_op(bench *b, const comptime_stats *s);

/* ---- running compiled functions (harness.c) ----------------------------------------------- */

typedef struct {
    kiln_ctx *cx;
    kiln_exe *exe;
    kiln_tensor **in;
    int ok;
} call_state;

/* One call of the executable (a body_fn for measure); a failure clears ok. */
void call_exe_once(void *user);

typedef struct {
    double bytes, flops; /* per call, for the rates (0: none) */
    int pct_bw;          /* also report bandwidth as % of the limit */
    int threads;         /* what the records say */
    const char *note;
    reps_policy calls, compiles;
} run_spec;

/* Lowers, compiles, calls once (first call) and then steadily; records all of it. */
int run_compiled(bench *b, const char *impl, const kiln_region *fn, const kiln_arg_spec *args,
                 int n_args, kiln_tensor **in, run_spec rs, stats *steady_out);
run_spec spec_fast(const bench *b);

/* ---- programs that several case files run (cases_comptime.c) ------------------------------ */

kiln_status fn_cos(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user);

/* VGG: stages of (channels, convs); conv3x3 pad 1 + bias + ReLU, then a 2x2/2 max-pool;
 * then flatten and dense layers (ReLU between them). Arguments: the input, then per conv
 * (w [out,in,3,3], b [out]), then per dense layer (w [in,out], b [out]). */
typedef struct {
    int depth;
    int stages[5][2];
    int dense_in, hidden, classes; /* dense_in: 512 * (H/32) * (W/32) */
} vgg_config;

vgg_config vgg_cfg(int depth);
kiln_status fn_vgg(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user);
int vgg_specs(const vgg_config *c, int64_t n, int64_t h, int64_t w, kiln_arg_spec *specs,
              double *flops);
kiln_tensor *heat_step(kiln_ctx *cx, kiln_tensor *x);

/* ---- the cases (cases_comptime.c, cases_run.c) -------------------------------------------- */

/* One small compiled program run before any case (see first_call). */
void warm_up_engine(kiln_ctx *cx);
/* compile_cold of a comptime case: its first compile in fresh processes (kiln-bench
 * --child-cold SUITE/NAME, after only warm_up_engine), the median of several. */
void emit_compile_cold(bench *b);

void case_cgemm512(bench *b);
void case_fft_1m(bench *b);
void case_trsm1024(bench *b);
void case_cholesky1024(bench *b);
void case_comptime_sum(bench *b);
void case_comptime_cos(bench *b);
void case_comptime_grad_cos(bench *b);
void case_vgg11_ct(bench *b);
void case_vgg11_small_ct(bench *b);
void case_vgg13_ct(bench *b);
void case_vgg16_ct(bench *b);
void case_vgg19_ct(bench *b);
void case_heat100_ct(bench *b);
void case_heat1000_ct(bench *b);
void case_heat10000_ct(bench *b);
void case_comptime_vgg11_train(bench *b);
void case_comptime_vgg19_train(bench *b);
void case_time_to_load(bench *b);

void case_heat_loop(bench *b);
void case_loop_invariant(bench *b);
void case_loop_short(bench *b);
void case_emlx(bench *b);
void case_eager_grad(bench *b);
void case_per_example_grads(bench *b);
void case_emlx_matmul10(bench *b);
void case_emlx_dot10(bench *b);
void case_emlx_dot100(bench *b);
void case_emlx_dot1000(bench *b);
void case_cos_1e6(bench *b);
void case_cos_1e7(bench *b);
void case_expsin_1e6(bench *b);
void case_expsin_1e7(bench *b);
void case_sum_all(bench *b);
void case_sum_rows(bench *b);
void case_sum_rows_small(bench *b);
void case_sum_cols(bench *b);
void case_gemm64(bench *b);
void case_gemm256(bench *b);
void case_gemm1024(bench *b);
void case_vgg_224(bench *b);
void case_vgg_32(bench *b);
void case_vgg_224_b16(bench *b);
void case_vgg13_224(bench *b);
void case_vgg16_224(bench *b);
void case_vgg19_224(bench *b);
void case_vgg11_train_b16(bench *b);
void case_digits_train(bench *b);
void case_conv_s2_grad(bench *b);

#endif
