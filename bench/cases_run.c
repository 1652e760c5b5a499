/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bench's run-time cases: compiled functions called through run_compiled (lower,
 * compile, first call, steady-state call, peak memory, rates and floors), each beside its
 * reference: the heat equation as one compiled loop against a plain C loop, EMLX and the
 * elementwise functions eager against compiled, reductions against a plain read of their
 * input, GEMM against OpenBLAS on the same data, the VGG forward passes, and a strided
 * convolution's input gradient. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "bench.h"

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

void case_heat_loop(bench *b) {
    int steps = 1000;
    const int64_t n = 4096;
    kiln_tensor *x =
        kiln_random_uniform(b->cx, kiln_key_from_seed(9), KILN_F32, KILN_SHAPE(n), 0, 1);
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
            emit_time(b->suite, b->name, "c", "call", c, 1,
                      "a plain C loop, f32, built with kiln-bench (-O3)");
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

/* ---- what the loop passes buy: each case compiled with and without one ---------------- */

/* The steady call of fn compiled with o, as `metric`; 0 when something failed. */
static int call_with_reps(bench *b, const kiln_region *fn, const kiln_arg_spec *args, int n_args,
                          kiln_tensor **in, const kiln_compile_options *o, const char *metric,
                          const char *note, reps_policy reps, int threads) {
    kiln_module *m = NULL;
    kiln_exe *exe = NULL;
    int ok = kiln_lower(b->cx, fn, args, n_args, 1, NULL, &m) == KILN_OK &&
             kiln_compile(b->cx, m, o, &exe) == KILN_OK;
    kiln_module_release(m);
    if (ok) {
        call_state cs = {b->cx, exe, in, 1};
        stats s = measure(call_exe_once, &cs, reps);
        ok = cs.ok;
        if (ok) emit_time(b->suite, b->name, "kiln", metric, s, threads, note);
    }
    kiln_exe_release(exe);
    return ok && check(b);
}

static int call_with(bench *b, const kiln_region *fn, const kiln_arg_spec *args, int n_args,
                     kiln_tensor **in, const kiln_compile_options *o, const char *metric,
                     const char *note) {
    return call_with_reps(b, fn, args, n_args, in, o, metric, note, policy_fast(), 1);
}

/* x = x * exp(-w * w) + 0.5, 1,000 times over f32[4096], w read from outside the loop:
 * licm computes exp(-w * w) once (disable_passes leaves it in the loop). */
static kiln_status invariant_body(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *u) {
    kiln_tensor *w = u;
    kiln_tensor *decay = kiln_exponential(cx, kiln_negate(cx, kiln_multiply(cx, w, w)));
    out[0] = kiln_add(cx, kiln_multiply(cx, in[1], decay), kiln_scalar(cx, 0.5, KILN_F32));
    return kiln_ctx_status(cx);
}

static kiln_status invariant_loop(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *u) {
    (void)u;
    kiln_region body = {invariant_body, in[1]};
    return kiln_fori_loop(cx, 0, 1000, in, 1, &body, out);
}

void case_loop_invariant(bench *b) {
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(4096)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(4096)}};
    kiln_tensor *in[2] = {
        kiln_random_uniform(b->cx, kiln_key_from_seed(1), KILN_F32, KILN_SHAPE(4096), 0, 1),
        kiln_random_uniform(b->cx, kiln_key_from_seed(2), KILN_F32, KILN_SHAPE(4096), 0, 1)};
    kiln_region fn = {invariant_loop, NULL};
    kiln_compile_options none = kiln_compile_options_default();
    none.disable_passes = true;
    if (call_with(b, &fn, a, 2, in, NULL, "call_licm", "x * exp(-w*w) + 0.5, w from outside"))
        call_with(b, &fn, a, 2, in, &none, "call_no_licm",
                  "the same with disable_passes: exp(-w*w) in every iteration");
    kiln_tensor_release(in[0]);
    kiln_tensor_release(in[1]);
}

/* acc = i * acc + y for i in [1, 11) on f32[10,10] as a kiln_fori_loop: unrolled (the
 * default) the ten steps are one kernel; disable_unrolling keeps the loop. */
static kiln_status short_body(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    kiln_tensor *i = kiln_convert(cx, in[0], KILN_F32);
    out[0] = kiln_add(cx, kiln_multiply(cx, i, in[1]), u);
    return kiln_ctx_status(cx);
}

static kiln_status short_loop(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region body = {short_body, in[1]};
    return kiln_fori_loop(cx, 1, 11, in, 1, &body, out);
}

void case_loop_short(bench *b) {
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10)}};
    kiln_tensor *in[2] = {kiln_ones(b->cx, KILN_F32, KILN_SHAPE(10, 10)),
                          kiln_ones(b->cx, KILN_F32, KILN_SHAPE(10, 10))};
    kiln_region fn = {short_loop, NULL};
    kiln_compile_options keep = kiln_compile_options_default();
    keep.disable_unrolling = true;
    if (call_with(b, &fn, a, 2, in, NULL, "call_unrolled", "the ten steps unrolled"))
        call_with(b, &fn, a, 2, in, &keep, "call_loop", "disable_unrolling: a loop");
    kiln_tensor_release(in[0]);
    kiln_tensor_release(in[1]);
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
    void *user;
} eager_state;

static void eager_once(void *user) {
    eager_state *s = user;
    kiln_scope_begin(s->cx);
    kiln_tensor *out[1];
    s->fn(s->cx, s->in, out, s->user);
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
    eager_state es = {b->cx, f, in, NULL};
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

void case_emlx(bench *b) { emlx_case(b, fn_emlx, 10, 0); }
void case_emlx_matmul10(bench *b) { emlx_case(b, fn_emlx_matmul, 10, 1); }
void case_emlx_dot10(bench *b) { emlx_case(b, fn_emlx_dot, 10, 1); }
void case_emlx_dot100(bench *b) { emlx_case(b, fn_emlx_dot, 100, 1); }
void case_emlx_dot1000(bench *b) { emlx_case(b, fn_emlx_dot, 1000, 1); }

/* ---- eager autodiff ------------------------------------------------------------------------ */

/* loss = sum(h^2), h = tanh(tanh(x @ w1) @ w2); kiln_grad by w1 on concrete tensors. */
static kiln_status fn_mlp_loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *user) {
    (void)user;
    kiln_tensor *h = kiln_tanh(cx, kiln_matmul(cx, in[1], in[0]));
    h = kiln_tanh(cx, kiln_matmul(cx, h, in[2]));
    out[0] = kiln_sum(cx, kiln_multiply(cx, h, h), KILN_DIMS(0, 1), false);
    return kiln_ctx_status(cx);
}

typedef struct {
    kiln_ctx *cx;
    kiln_tensor **args;
    bool clear; /* empty the ctx's derivative cache first: a compile every call */
} grad_state;

static void grad_once(void *user) {
    grad_state *g = user;
    if (g->clear) kiln_ad_cache_clear(g->cx);
    kiln_scope_begin(g->cx);
    kiln_tensor *grad = NULL;
    kiln_grad(g->cx, &(kiln_region){fn_mlp_loss, NULL}, 3, g->args, NULL, &grad);
    kiln_scope_end(g->cx);
}

void case_eager_grad(bench *b) {
    kiln_ctx *cx = b->cx;
    kiln_tensor *args[3] = {
        kiln_random_uniform(cx, kiln_key_from_seed(1), KILN_F32, KILN_SHAPE(64, 64), -0.1, 0.1),
        kiln_random_uniform(cx, kiln_key_from_seed(2), KILN_F32, KILN_SHAPE(32, 64), -1, 1),
        kiln_random_uniform(cx, kiln_key_from_seed(3), KILN_F32, KILN_SHAPE(64, 16), -0.1, 0.1)};
    grad_state cached = {cx, args, false}, fresh = {cx, args, true};
    stats c = measure(grad_once, &cached, policy_fast());
    stats f = measure(grad_once, &fresh, policy_fast());
    if (check(b)) {
        emit_time(b->suite, b->name, "kiln-eager", "call", c, b->threads,
                  "kiln_grad by w1 of sum(tanh(tanh(x@w1)@w2)^2), x f32[32,64], w1 f32[64,64], "
                  "w2 f32[64,16]; the derivative's executable cached by the ctx");
        emit_time(b->suite, b->name, "kiln-eager", "call_compiling", f, b->threads,
                  "the same with the cache emptied before each call: trace, differentiate, "
                  "compile, run");
    }
    for (int i = 0; i < 3; i++)
        kiln_tensor_release(args[i]);
}

/* ---- per-example gradients (kiln_vmap of kiln_grad) ------------------------------------- */

#define PEG_BATCH 32

/* One example's loss: x f32[64]; the MLP of fn_mlp_loss. */
static kiln_status fn_example_loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                   void *user) {
    (void)user;
    kiln_tensor *h = kiln_tanh(cx, kiln_matmul(cx, in[1], in[0]));
    h = kiln_tanh(cx, kiln_matmul(cx, h, in[2]));
    out[0] = kiln_sum(cx, kiln_multiply(cx, h, h), KILN_DIMS(0), false);
    return kiln_ctx_status(cx);
}

static kiln_status fn_example_grad(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                   void *user) {
    (void)user;
    return kiln_grad(cx, &(kiln_region){fn_example_loss, NULL}, 3, in, NULL, out);
}

static kiln_status fn_per_example_grads(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                        void *user) {
    (void)user;
    kiln_vmap_options o = kiln_vmap_options_default();
    o.in_axes = (const int32_t[]){KILN_VMAP_NONE, 0, KILN_VMAP_NONE};
    return kiln_vmap(cx, &(kiln_region){fn_example_grad, NULL}, 3, in, 1, &o, out);
}

typedef struct {
    kiln_ctx *cx;
    kiln_exe *exe;
    kiln_tensor *args[PEG_BATCH][3];
    int ok;
} grad_loop_state;

/* The same gradients one example at a time: a compiled single-example gradient called
 * PEG_BATCH times. */
static void grad_loop_once(void *user) {
    grad_loop_state *g = user;
    for (int i = 0; i < PEG_BATCH; i++) {
        kiln_tensor *r = NULL;
        if (kiln_exe_call(g->cx, g->exe, g->args[i], &r) != KILN_OK) g->ok = 0;
        kiln_tensor_release(r);
    }
}

void case_per_example_grads(bench *b) {
    kiln_ctx *cx = b->cx;
    kiln_tensor *args[3] = {
        kiln_random_uniform(cx, kiln_key_from_seed(1), KILN_F32, KILN_SHAPE(64, 64), -0.1, 0.1),
        kiln_random_uniform(cx, kiln_key_from_seed(2), KILN_F32, KILN_SHAPE(PEG_BATCH, 64), -1, 1),
        kiln_random_uniform(cx, kiln_key_from_seed(3), KILN_F32, KILN_SHAPE(64, 16), -0.1, 0.1)};
    kiln_arg_spec specs[3] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(64, 64)},
                              {.dtype = KILN_F32, .shape = KILN_SHAPE(PEG_BATCH, 64)},
                              {.dtype = KILN_F32, .shape = KILN_SHAPE(64, 16)}};
    run_spec rs = spec_fast(b);
    rs.note = "jit(vmap(grad(loss), in_axes=(None, 0, None))): loss = sum(tanh(tanh(x@w1)@w2)^2) "
              "of one example x f32[64], by w1 f32[64,64] (w2 f32[64,16]); 32 examples";
    stats batched;
    kiln_region fn = {fn_per_example_grads, NULL};
    if (run_compiled(b, "kiln", &fn, specs, 3, args, rs, &batched)) {
        grad_loop_state g = {.cx = cx, .ok = 1};
        kiln_arg_spec one[3] = {specs[0], {.dtype = KILN_F32, .shape = KILN_SHAPE(64)}, specs[2]};
        comptime_stats ct;
        if (lower_compile(b, &(kiln_region){fn_example_grad, NULL}, one, 3, 1,
                          (reps_policy){0, 1, 1}, &ct, &g.exe)) {
            for (int i = 0; i < PEG_BATCH; i++) {
                g.args[i][0] = args[0];
                g.args[i][1] = kiln_reshape(
                    cx,
                    kiln_slice(cx, args[1], KILN_DIMS(i, 0), KILN_DIMS(i + 1, 64), KILN_DIMS_NONE),
                    KILN_SHAPE(64));
                g.args[i][2] = args[2];
            }
            stats loop = measure(grad_loop_once, &g, rs.calls);
            if (g.ok && check(b)) {
                emit_time(b->suite, b->name, "kiln-loop", "call", loop, b->threads,
                          "the single-example gradient compiled once and called for each of "
                          "the 32 examples");
                double x = loop.median / batched.median;
                emit(b->suite, b->name, "kiln", "speedup", x, x, x, "x", batched.reps, b->threads,
                     "the batched program against the loop over the examples");
            }
            for (int i = 0; i < PEG_BATCH; i++)
                kiln_tensor_release(g.args[i][1]);
            kiln_exe_release(g.exe);
        }
    }
    for (int i = 0; i < 3; i++)
        kiln_tensor_release(args[i]);
}

/* ---- elementwise and reductions ---------------------------------------------------------- */

static kiln_status fn_expsin(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *x = in[0];
    /* Each temporary is moved into the op that uses it last (kiln_move), so eagerly the
     * chain writes over its temporaries as numpy does; tracing ignores the marks. C leaves
     * the order of a call's arguments open, so g * sin(x) gets a statement of its own: two
     * buffers are alive at most. */
    kiln_tensor *g =
        kiln_exponential(cx, kiln_move(kiln_negate(cx, kiln_move(kiln_multiply(cx, x, x)))));
    kiln_tensor *gs = kiln_multiply(cx, kiln_move(g), kiln_move(kiln_sine(cx, x)));
    out[0] =
        kiln_add(cx, kiln_move(gs), kiln_move(kiln_multiply(cx, kiln_scalar_like(cx, x, 0.5), x)));
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
        eager_state es = {b->cx, f, &x, NULL};
        kiln_ctx_trim(b->cx); /* every block the chain uses counted at the allocator */
        size_t base = peak_begin();
        stats eager = measure(eager_once, &es, rs.calls);
        double peak = peak_mib(base);
        if (check(b)) {
            emit_time(b->suite, b->name, "kiln-eager", "call", eager, b->threads,
                      "op by op, no tracing");
            emit(b->suite, b->name, "kiln-eager", "peak_mem", peak, peak, peak, "MiB", eager.reps,
                 b->threads,
                 "live kiln bytes during the calls (the buffer cache's included), above those "
                 "before");
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

void case_cos_1e6(bench *b) { elementwise_case(b, fn_cos, 1000000); }
void case_cos_1e7(bench *b) { elementwise_case(b, fn_cos, 10000000); }
void case_expsin_1e6(bench *b) { elementwise_case(b, fn_expsin, 1000000); }
void case_expsin_1e7(bench *b) { elementwise_case(b, fn_expsin, 10000000); }

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
    call_exe_once(&cs);
    for (int i = 0; i < pairs; i++) {
        double t0 = now();
        sink += read_sum(data, n);
        double t1 = now();
        call_exe_once(&cs);
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

static void reduction_case(bench *b, int which, int64_t rows, int64_t cols) {
    const bool big = rows * cols * 4 > (32 << 20); /* past the caches */
    kiln_tensor *x =
        kiln_random_uniform(b->cx, kiln_key_from_seed(8), KILN_F32, KILN_SHAPE(rows, cols), 0, 1);
    kiln_arg_spec arg = {.dtype = KILN_F32, .shape = KILN_SHAPE(rows, cols)};
    run_spec rs = spec_fast(b);
    rs.bytes = 4.0 * (double)rows * (double)cols;
    rs.pct_bw = b->threads > 1 && big; /* one thread: measured against interleaved reads below */
    if (big) rs.calls = (reps_policy){1, opt.quick ? 5 : 15, opt.quick ? 11 : 201};
    rs.note = which == 0   ? "sum over both axes -> f32[]"
              : which == 1 ? (big ? "sum over axis 1 -> f32[4096]"
                                  : "sum over axis 1 -> f32[256], 1 MiB: in cache")
                           : "sum over axis 0 -> f32[4096]";
    kiln_region fn = {fn_sum_axes, &which};
    stats compiled;
    if (run_compiled(b, "kiln", &fn, &arg, 1, &x, rs, &compiled)) {
        /* eager: the same function through the evaluator */
        eager_state es = {b->cx, fn_sum_axes, &x, &which};
        stats eager = measure(eager_once, &es, rs.calls);
        if (check(b))
            emit_time(b->suite, b->name, "kiln-eager", "call", eager, b->threads,
                      "op by op, no tracing");
        if (b->threads == 1 && big) pct_of_read(b, &fn, &arg, &x, rs.bytes);
    }
    kiln_tensor_release(x);
}

void case_sum_all(bench *b) { reduction_case(b, 0, 4096, 4096); }
void case_sum_rows(bench *b) { reduction_case(b, 1, 4096, 4096); }
/* Rows that fit the caches: a batch of softmax or layer-norm rows. */
void case_sum_rows_small(bench *b) { reduction_case(b, 1, 256, 1024); }
void case_sum_cols(bench *b) { reduction_case(b, 2, 4096, 4096); }

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

void case_gemm64(bench *b) { gemm_case(b, 64); }
void case_gemm256(bench *b) { gemm_case(b, 256); }
void case_gemm1024(bench *b) { gemm_case(b, 1024); }

/* ---- VGG forward, executed ---------------------------------------------------------------- */

/* At 32x32 the five pools leave a 512x1x1 map, so the classifier takes 512 inputs:
 * 512 -> 4096 -> 4096 -> 1000 (the 224x224 model's widths, with dense_in = 512). */
static void vgg_run_case(bench *b, int depth, int64_t n, int64_t hw) {
    vgg_config c = vgg_cfg(depth);
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
    char note[128];
    snprintf(note, sizeof note, "VGG%d, classifier %d->4096->4096->1000%s; convolutions on oneDNN",
             depth, c.dense_in, hw == 32 ? " (1x1 map)" : "");
    rs.note = note;
    rs.calls = policy_slow(hw == 32 ? 11 : depth == 11 && n == 1 ? 5 : 3);
    rs.compiles = (reps_policy){1, 3, 11};
    kiln_region fn = {fn_vgg, &c};
    /* The same program without layout assignment, right after: what keeping the
     * activations channels last between convolutions saves. */
    kiln_compile_options keep = kiln_compile_options_default();
    keep.disable_layout_assignment = true;
    if (run_compiled(b, "kiln", &fn, specs, n_args, in, rs, NULL))
        call_with_reps(b, &fn, specs, n_args, in, &keep, "call_no_layout",
                       "disable_layout_assignment: NCHW around every convolution", rs.calls,
                       b->threads);
    for (int i = 0; i < n_args; i++)
        kiln_tensor_release(in[i]);
}

void case_vgg_224(bench *b) { vgg_run_case(b, 11, 1, 224); }
void case_vgg_32(bench *b) { vgg_run_case(b, 11, 8, 32); }
void case_vgg_224_b16(bench *b) { vgg_run_case(b, 11, 16, 224); }
void case_vgg13_224(bench *b) { vgg_run_case(b, 13, 1, 224); }
void case_vgg16_224(bench *b) { vgg_run_case(b, 16, 1, 224); }
void case_vgg19_224(bench *b) { vgg_run_case(b, 19, 1, 224); }

/* ---- a strided convolution's input gradient --------------------------------------------- */

/* sum(conv(x, w)^2) for x [16, 64, 56, 56], w [128, 64, 3, 3], stride 2, padding 1: a
 * ResNet stage's downsampling convolution. */
static kiln_status fn_conv_s2_loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                   void *user) {
    (void)user;
    kiln_conv_params p = kiln_conv_params_nchw(2);
    p.window_strides = KILN_DIMS(2, 2);
    p.padding_low = KILN_DIMS(1, 1);
    p.padding_high = KILN_DIMS(1, 1);
    kiln_tensor *y = kiln_convolution(cx, in[0], in[1], &p, KILN_DTYPE_COUNT);
    out[0] = kiln_sum(cx, kiln_multiply(cx, y, y), KILN_DIMS_NONE, false);
    return kiln_ctx_status(cx);
}

/* Its gradient by x: the forward convolution, then the cotangent dilated by the stride and
 * convolved with the reversed kernel (oneDNN's input gradient). */
static kiln_status fn_conv_s2_grad(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                   void *user) {
    (void)user;
    kiln_region loss = {fn_conv_s2_loss, NULL};
    return kiln_grad(cx, &loss, 2, in, NULL, out);
}

void case_conv_s2_grad(bench *b) {
    kiln_arg_spec specs[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(16, 64, 56, 56)},
                              {.dtype = KILN_F32, .shape = KILN_SHAPE(128, 64, 3, 3)}};
    kiln_tensor *in[2];
    for (int i = 0; i < 2; i++)
        in[i] = kiln_random_uniform(b->cx, kiln_key_from_seed(60 + (uint64_t)i), KILN_F32,
                                    specs[i].shape, -1, 1);
    if (check(b)) {
        run_spec rs = spec_fast(b);
        /* the forward and the input gradient: 2 x 0.92 G multiply-adds */
        rs.flops = 2.0 * 2.0 * 16 * 64 * 128 * 9 * 28 * 28;
        rs.note = "grad by x of sum(conv(x, w)^2), stride 2: forward + input gradient";
        rs.calls = policy_slow(5);
        kiln_region fn = {fn_conv_s2_grad, NULL};
        run_compiled(b, "kiln", &fn, specs, 2, in, rs, NULL);
    }
    for (int i = 0; i < 2; i++)
        kiln_tensor_release(in[i]);
}
