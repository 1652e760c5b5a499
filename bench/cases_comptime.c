/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bench's compile-time cases: lower and compile times (and compile time per op) of
 * small programs, VGG forward passes and training steps and the unrolled heat equation; and
 * time_to_load, the wall time of a fresh process that loads libkiln and compiles and calls
 * one op (kiln-load-child, bench/load_child.c, beside kiln-bench). Also
 * the programs that the run-time cases share: fn_cos, the VGG forward pass and its argument
 * specs, and one step of the heat equation. */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

extern char **environ;

/* ---- comptime: lower + compile (small cases run once more, for the peers' checks) ------ */

/* A comptime case's lower, compile and total records (notes may be NULL). */
static void emit_comptime(bench *b, const comptime_stats *s, const char *lower_note,
                          const char *compile_note) {
    emit_time(b->suite, b->name, "kiln", "lower", s->lower, 1, lower_note);
    emit_time(b->suite, b->name, "kiln", "compile", s->compile, 1, compile_note);
    emit_time(b->suite, b->name, "kiln", "total", s->total, 1, "lower + compile");
}

static kiln_status fn_sum(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] = kiln_sum(cx, in[0], KILN_DIMS(0, 1), false);
    return kiln_ctx_status(cx);
}

kiln_status fn_cos(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] = kiln_cosine(cx, in[0]);
    return kiln_ctx_status(cx);
}

/* Runs one small compiled program before any case, so that "first_call" measures what an
 * executable's first call costs, not the process's one-time costs (mapping the engine's
 * code pages, resolving library symbols: about 20-30 us once per process), which
 * time_to_load measures. */
void warm_up_engine(kiln_ctx *cx) {
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
    emit_comptime(b, &s, "kiln_lower", "kiln_compile");
}

void case_comptime_sum(bench *b) { comptime_small(b, &(kiln_region){fn_sum, NULL}); }
void case_comptime_cos(bench *b) { comptime_small(b, &(kiln_region){fn_cos, NULL}); }

vgg_config vgg_cfg(int depth) {
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
kiln_status fn_vgg(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    const vgg_config *c = user;
    const kiln_tree_def *def = kiln_nn_vgg_def(c->depth, false);
    kiln_nn_vgg params = {.depth = c->depth, .batch_norm = false};
    kiln_status st = kiln_tree_unflatten(cx, def, in + 1, 2 * vgg_n_convs(c) + 6, NULL, 0, &params);
    if (st != KILN_OK) return st;
    out[0] = kiln_nn_vgg_forward(cx, &params, NULL, in[0], false, NULL, NULL);
    return kiln_ctx_status(cx);
}

/* Argument specs for a VGG at input [n,3,h,w]; returns the count. specs needs 64 entries. */
int vgg_specs(const vgg_config *c, int64_t n, int64_t h, int64_t w, kiln_arg_spec *specs,
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

static void case_comptime_vgg_at(bench *b, int depth, int64_t batch, int64_t hw) {
    vgg_config c = vgg_cfg(depth);
    c.dense_in = 512 * (int)(hw / 32) * (int)(hw / 32); /* what the five pools leave */
    kiln_arg_spec specs[64];
    int n = vgg_specs(&c, batch, hw, hw, specs, NULL);
    comptime_stats s;
    kiln_region fn = {fn_vgg, &c};
    char note[160];
    snprintf(note, sizeof note, "f32[%lld,3,%lld,%lld], %d convs + 3 dense, weights as %d args",
             (long long)batch, (long long)hw, (long long)hw, vgg_n_convs(&c), n - 1);
    reps_policy p = {1, opt.quick ? 3 : 11, opt.quick ? 51 : 2001};
    if (!lower_compile(b, &fn, specs, n, 1, p, &s, NULL)) return;
    emit_comptime(b, &s, note, NULL);
}

static void case_comptime_vgg(bench *b, int depth) { case_comptime_vgg_at(b, depth, 16, 224); }

/* VGG11 at CIFAR's size: small enough that compile_cold's child also times the first call
 * (first_call_cold), where the convolution primitives a compile left to the builder thread
 * are waited for. */
void case_vgg11_small_ct(bench *b) { case_comptime_vgg_at(b, 11, 8, 32); }

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

void case_comptime_grad_cos(bench *b) {
    kiln_arg_spec arg = {.dtype = KILN_F64, .shape = KILN_SHAPE(2, 10)};
    kiln_region fn = {fn_grad_cos, NULL};
    comptime_stats s;
    if (!lowers(b, &fn, &arg, 1, 1, "kiln_grad")) return;
    kiln_exe *exe = NULL;
    int ok = lower_compile(b, &fn, &arg, 1, 1, policy_fast(), &s, &exe);
    if (ok) comptime_check(b, exe);
    kiln_exe_release(exe);
    if (!ok) return;
    emit_comptime(b, &s, "kiln_lower (with kiln_grad)", "kiln_compile");
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
    snprintf(note, sizeof note,
             "f32[16,3,224,224]: forward, backward (kiln_grad), SGD on %d weights", n - 1);
    emit_comptime(b, &s, note, NULL);
    emit_per_op(b, &s);
}

void case_comptime_vgg11_train(bench *b) { case_comptime_vgg_train(b, 11); }
void case_comptime_vgg19_train(bench *b) { case_comptime_vgg_train(b, 19); }

void case_vgg11_ct(bench *b) { case_comptime_vgg(b, 11); }
void case_vgg13_ct(bench *b) { case_comptime_vgg(b, 13); }
void case_vgg16_ct(bench *b) { case_comptime_vgg(b, 16); }
void case_vgg19_ct(bench *b) { case_comptime_vgg(b, 19); }

/* One step of the 1-D heat equation: three slices, the stencil u + 0.1 (l - 2c + r) on the
 * interior and a concatenate with the two boundary values (13 ops). */
kiln_tensor *heat_step(kiln_ctx *cx, kiln_tensor *x) {
    const int64_t n = kiln_tensor_dim(x, 0);
    kiln_tensor *l = kiln_slice(cx, x, KILN_DIMS(0), KILN_DIMS(n - 2), KILN_DIMS_NONE);
    kiln_tensor *c = kiln_slice(cx, x, KILN_DIMS(1), KILN_DIMS(n - 1), KILN_DIMS_NONE);
    kiln_tensor *r = kiln_slice(cx, x, KILN_DIMS(2), KILN_DIMS(n), KILN_DIMS_NONE);
    kiln_tensor *lap =
        kiln_add(cx, kiln_subtract(cx, l, kiln_multiply(cx, kiln_scalar(cx, 2, KILN_F32), c)), r);
    kiln_tensor *parts[3] = {
        kiln_slice(cx, x, KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS_NONE),
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
    emit_comptime(b, &s, note, NULL);
    emit_per_op(b, &s);
}

void case_heat100_ct(bench *b) { case_comptime_heat(b, 100); }
void case_heat1000_ct(bench *b) { case_comptime_heat(b, 1000); }
void case_heat10000_ct(bench *b) { case_comptime_heat(b, 10000); }

/* ---- time_to_load: a fresh process ------------------------------------------------------- */

typedef struct {
    char exe[4096];
    int failed;
} spawn_state;

/* Runs exe with argv to its exit (its stdout into out_fd unless that is -1): true when it
 * exits with status 0. */
static bool run_child_env(const char *exe, char *const *argv, int out_fd, char *const *envp) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out_fd >= 0) posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    pid_t pid;
    int status = 0;
    bool ok = posix_spawn(&pid, exe, &fa, NULL, argv, envp) == 0;
    posix_spawn_file_actions_destroy(&fa);
    if (out_fd >= 0) close(out_fd);
    return ok && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static bool run_child(const char *exe, char *const *argv, int out_fd) {
    return run_child_env(exe, argv, out_fd, environ);
}

static void spawn_child(void *user) {
    spawn_state *s = user;
    char *argv[] = {s->exe, NULL};
    if (!run_child(s->exe, argv, -1)) s->failed = 1;
}

/* ---- compile_cold: the first compile in a fresh process ---------------------------------- */

/* What a cold child says of its native kernels (seconds < 0: nothing). */
typedef struct {
    double seconds;
    int ready, kernels;
} native_cold;

/* Runs kiln-bench --child-cold SUITE/NAME and reads the compile time and first call it
 * prints (*first_call < 0 when it printed none); < 0 when it failed. cache_dir: the
 * child's KILN_CACHE_DIR (NULL: the environment's). */
static double cold_once(const char *exe, const char *which, double *first_call,
                        const char *cache_dir, native_cold *nat) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    char *argv[] = {(char *)exe, "--child-cold", (char *)which, NULL};
    /* the environment, with KILN_CACHE_DIR replaced when asked */
    size_t n_env = 0;
    while (environ[n_env])
        n_env++;
    char **envp = calloc(n_env + 2, sizeof *envp);
    char cache_var[1200];
    if (!envp) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++)
        if (!cache_dir || strncmp(environ[i], "KILN_CACHE_DIR=", 15) != 0) envp[k++] = environ[i];
    if (cache_dir) {
        snprintf(cache_var, sizeof cache_var, "KILN_CACHE_DIR=%s", cache_dir);
        envp[k++] = cache_var;
    }
    /* The child's output is small (a few lines): it fits the pipe while the parent waits. */
    bool ok = run_child_env(exe, argv, fd[1], envp);
    free(envp);
    char out[4096];
    ssize_t n = ok ? read(fd[0], out, sizeof out - 1) : -1;
    close(fd[0]);
    if (n <= 0) return -1;
    out[n] = 0;
    const char *call = strstr(out, "cold_first_call ");
    *first_call = -1;
    if (call && sscanf(call, "cold_first_call %lf", first_call) != 1) *first_call = -1;
    const char *native = strstr(out, "cold_native ");
    nat->seconds = -1;
    if (native &&
        sscanf(native, "cold_native %lf %d %d", &nat->seconds, &nat->ready, &nat->kernels) != 3)
        nat->seconds = -1;
    const char *line = strstr(out, "cold_compile ");
    double t;
    return line && sscanf(line, "cold_compile %lf", &t) == 1 ? t : -1;
}

void emit_compile_cold(bench *b) {
    char exe[4096], which[160];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return;
    exe[len] = 0;
    snprintf(which, sizeof which, "%s/%s", b->suite, b->name);
    enum { MAX_RUNS = 7 };
    int runs = opt.quick ? 3 : MAX_RUNS;
    double t[MAX_RUNS], call[MAX_RUNS], both[MAX_RUNS];
    bool calls = true;
    /* The first child starts with an empty cache of its own: its native kernels are all
     * compiled (in the background) */
    char fresh[] = "/tmp/kiln-bench-cacheXXXXXX";
    bool have_fresh = mkdtemp(fresh) != NULL;
    native_cold first_native = {-1, 0, 0}, later_native = {-1, 0, 0};
    for (int i = 0; i < runs; i++) {
        native_cold nat;
        t[i] = cold_once(exe, which, &call[i], i == 0 && have_fresh ? fresh : NULL, &nat);
        if (i == 0) first_native = nat;
        if (i == runs - 1) later_native = nat;
        if (t[i] < 0) {
            fprintf(stderr, "kiln-bench: compile_cold: the child for %s failed\n", which);
            return;
        }
        calls = calls && call[i] >= 0;
        both[i] = t[i] + call[i];
    }
    if (have_fresh) {
        char cmd[200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", fresh);
        if (system(cmd) != 0) fprintf(stderr, "kiln-bench: could not remove %s\n", fresh);
    }
    char note[160];
    if (first_native.seconds >= 0 && first_native.kernels > 0) {
        snprintf(note, sizeof note,
                 "fresh process, empty cache: compile until %d of %d native kernels built "
                 "(%.1f ms per kernel)",
                 first_native.ready, first_native.kernels,
                 first_native.seconds / first_native.kernels * 1e3);
        emit_time(b->suite, b->name, "kiln", "native_cold", single(first_native.seconds), 1, note);
    }
    if (later_native.seconds >= 0 && later_native.kernels > 0) {
        snprintf(note, sizeof note,
                 "fresh process, kernels in the disk cache: compile until %d of %d loaded",
                 later_native.ready, later_native.kernels);
        emit_time(b->suite, b->name, "kiln", "native_cached", single(later_native.seconds), 1,
                  note);
    }
    snprintf(note, sizeof note,
             "the first kiln_compile in a fresh process after one tiny warm-up (%d processes)",
             runs);
    emit_time(b->suite, b->name, "kiln", "compile_cold", summarize(t, runs), 1, note);
    if (!calls) return;
    emit_time(b->suite, b->name, "kiln", "first_call_cold", summarize(call, runs), 1,
              "the first call after compile_cold's compile, on zeros");
    emit_time(b->suite, b->name, "kiln", "compile_and_call_cold", summarize(both, runs), 1,
              "compile_cold + first_call_cold: what a program that compiles once and calls "
              "once waits");
}

void case_time_to_load(bench *b) {
    spawn_state s = {.failed = 0};
    ssize_t len = readlink("/proc/self/exe", s.exe, sizeof s.exe - 1);
    if (len <= 0) return;
    s.exe[len] = 0;
    char *slash = strrchr(s.exe, '/');
    const char child[] = "kiln-load-child";
    if (!slash || (size_t)(slash + 1 - s.exe) + sizeof child > sizeof s.exe) return;
    memcpy(slash + 1, child, sizeof child);
    stats t = measure(spawn_child, &s, (reps_policy){2, opt.quick ? 5 : 21, opt.quick ? 10 : 101});
    if (s.failed) {
        fprintf(stderr, "kiln-bench: time_to_load: the child failed\n");
        return;
    }
    emit_time(b->suite, b->name, "kiln", "wall", t, 1,
              "posix_spawn of kiln-load-child to exit: load libkiln, ctx, lower+compile+"
              "call cos(f32[10])");
}
