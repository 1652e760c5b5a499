/* SPDX-License-Identifier: Apache-2.0 */
/* Random programs, eager against compiled (issue 7's correctness net).
 *
 * Each program comes from one 64-bit seed: a random DAG of 1..40 ops over random dtypes
 * (f32, f64, f16, bf16, i32, i64, i8, ui8, i1) and shapes (rank 0..4, small dimensions,
 * many of them 1 so that operands broadcast), built through the public builders inside a
 * kiln_region. The region runs eagerly on seeded random inputs (the evaluator: the
 * reference) and is lowered, compiled and called on the same inputs; every result must
 * agree. Variants of the same program (every third one): compiled without the
 * simplification passes and without constant folding, lowered with donate_all (donation
 * must not change any bit), and printed, parsed back and compiled. Constants that equal an
 * iota become stablehlo.iota ops again before compiling (tracing folds kiln_iota). One
 * program in ten has larger tensors (several tiles); random_programs/threads runs larger
 * programs at 1 to 4 threads (results must be bitwise the same for every count).
 *
 * Agreement. A value computed only by exact ops (integer and movement ops, float add,
 * subtract, multiply, divide, sqrt, convert, max/min, compare, select, ...) must match bit
 * for bit (all NaNs match each other: StableHLO leaves NaN payloads to the
 * implementation). Transcendentals (SLEEF or libm: a few ulps), float sums and
 * contractions (the order of the additions is the implementation's) may differ; for those
 * the generator carries a first-order forward error bound E through the DAG, using the
 * magnitudes of the eager values:
 *   transcendental result r:        E = E_x * L + 4 eps |r|max   (L: 1, or |r|max for exp)
 *   a + b, a - b:                   E = E_a + E_b + eps |r|max
 *   a * b:                          E = E_a |b|max + E_b |a|max + E_a E_b + eps |r|max
 *   sum of n terms:                 E = n E_x + (n + 1) eps n |x|max
 *   contraction over k terms:       E = k (E_a |b|max + E_b |a|max) + (k + 1) eps k |a|max |b|max
 *   movement, max/min, select:      the largest E of the operands
 * (eps: the result dtype's unit roundoff) and a result element passes when
 * |eager - compiled| <= 4 E. So that the bound holds, an inexact value never feeds an op
 * that is discontinuous or unboundedly sensitive: compare, floor/ceil/round/sign,
 * float->int convert, is_finite, divide, remainder, power, atan2, sqrt, rsqrt, cbrt, log,
 * log_plus_one, tan (the generator picks an exact operand for those).
 *
 * A failure prints the program (the generator's listing and the lowered module), the
 * seed and the first differing element, then a minimised program: only what the failing
 * result needs, with ops bypassed or replaced by fresh inputs while the mismatch stays
 * (KILN_RPG_NO_MINIMISE=1 skips that). KILN_RPG_SEED=<seed> KILN_RPG_COUNT=1 test_runtime
 * --filter 'random_programs/batch_0' (or 'random_programs/threads' when the report says
 * so) reruns the program. KILN_RPG_COUNT=N runs N programs per batch test (the default is
 * smaller under the sanitizers), KILN_RPG_SECONDS=S runs each batch for S seconds instead
 * (`make fuzz-programs`). A batch stops after 3 failures (KILN_RPG_MAX_FAILURES=N: N).
 * KILN_RPG_VERBOSE=1 prints every program.
 *
 * Regression tests at the end hold the minimised programs of bugs this generator found. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/threads.h"
#include "ir/ir.h"
#include "random_prog.h"
#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define RPG_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RPG_SANITIZED 1
#endif
#endif
#ifndef RPG_SANITIZED
#define RPG_SANITIZED 0
#endif

/* Programs per batch test (4 batches); the sanitizers make each one ~10x slower. */
#ifndef KILN_RPG_DEFAULT_COUNT
#define KILN_RPG_DEFAULT_COUNT (RPG_SANITIZED ? 300 : 1000)
#endif
#define N_BATCHES 4
/* Larger programs run at several thread counts. */
#define THREAD_PROGRAMS (RPG_SANITIZED ? 12 : 40)

/* ---- one program, every variant ---------------------------------------------------------- */

typedef struct variant {
    const char *name;
    bool donate, no_passes;
    int threads;         /* 0: leave the count alone */
    bool reparse;        /* compile the module read back from its printed text */
    const char *backend; /* NULL: the default ("cpu") */
} variant;

static bool verbose(void) {
    const char *v = getenv("KILN_RPG_VERBOSE");
    return v && *v && strcmp(v, "0") != 0;
}

/* While minimising, the failing candidates are not reported. */
static bool quiet;

static void report(kiln_ctx *cx, const prog *p, const char *text, const char *what) {
    if (quiet) return;
    fprintf(stderr, "\n==== random program %s: %s\n",
            p->minimised ? "mismatch, minimised" : "mismatch", what);
    describe(p, stderr);
    fprintf(stderr, "lowered module:\n%s\n", text ? text : "(not lowered)");
    fprintf(stderr,
            "reproduce: KILN_RPG_SEED=%llu KILN_RPG_COUNT=1 ./tests/test_runtime --filter "
            "'random_programs/%s'\n",
            (unsigned long long)p->seed, p->threads_test ? "threads" : "batch_0");
    if (p->minimised)
        fprintf(stderr, "(the seed reruns the whole program; the module above is the cut-down "
                        "one, also runnable with `kiln run`)\n");
    (void)cx;
}

/* Tracing runs kiln_iota eagerly (it has no traced operand), so the module holds a
 * constant; turning every constant that equals an iota back into a stablehlo.iota op lets
 * compiled iotas (fused producers, kernels) run too. */
static void iotaize(kiln_ctx *cx, kiln_module *m) {
    for (kiln__ir_op *op = m->funcs[0]->body->first; op; op = op->next) {
        const kiln_tensor *c = op->kind == KILN_OP_CONSTANT ? op->attrs->u.constant : NULL;
        if (!c || kiln_tensor_rank(c) < 1 || kiln_tensor_dtype(c) == KILN_BOOL) continue;
        for (int32_t d = 0; d < kiln_tensor_rank(c); d++) {
            kiln_scope_begin(cx);
            kiln_tensor *t = kiln_iota(cx, kiln_tensor_dtype(c), *kiln_tensor_shape(c), d);
            bool eq =
                t && memcmp(kiln_tensor_data(t), kiln_tensor_data(c), kiln_tensor_nbytes(c)) == 0;
            kiln_scope_end(cx);
            if (!eq) continue;
            /* The tensor stays alive in the module's list of constants. */
            kiln_dtype dtype = kiln_tensor_dtype(c);
            kiln_shape shape = *kiln_tensor_shape(c);
            kiln__attrs *a = kiln__op_set_kind(m, op, KILN_OP_IOTA);
            if (!a) break; /* out of memory: keep it */
            a->u.iota.dtype = dtype;
            a->u.iota.shape = shape;
            a->u.iota.dimension = d;
            break;
        }
    }
}

/* Convolutions compiled with a fused bias/ReLU epilogue, in this test process (so that a
 * batch can tell that the generator's epilogue patterns reach that path). */
static long conv_epilogues_seen;

/* Lowers, compiles and calls p on copies of `in` (copies, because donation kills them). */
static bool run_compiled(kiln_ctx *cx, const prog *p, kiln_tensor *const *in, const variant *v,
                         kiln_tensor **out, char **text, char *why, size_t size) {
    run_env env = {p, NULL};
    kiln_region fn = {run_prog, &env};
    kiln_arg_spec specs[MAX_IN];
    for (int i = 0; i < p->n_in; i++) {
        const node *n = &p->nodes[p->in_node[i]];
        specs[i] = (kiln_arg_spec){.dtype = n->dtype, .shape = n->shape};
    }
    kiln_lower_options lo = kiln_lower_options_default();
    lo.donate_all = v->donate;
    kiln_module *m = NULL;
    if (kiln_lower(cx, &fn, specs, p->n_in, p->n_out, &lo, &m) != KILN_OK) {
        snprintf(why, size, "%s: lower: %s", v->name, kiln_ctx_error_message(cx));
        return false;
    }
    iotaize(cx, m);
    if (text && !*text) *text = kiln_module_to_string(cx, m);
    if (v->reparse) {
        kiln_module *back = NULL;
        kiln_status ps =
            *text ? kiln_module_parse(cx, *text, strlen(*text), NULL, &back) : kiln_ctx_status(cx);
        kiln_module_release(m);
        if (ps != KILN_OK) {
            snprintf(why, size, "%s: parse of the printed module: %s", v->name,
                     kiln_ctx_error_message(cx));
            return false;
        }
        m = back;
    }
    kiln_compile_options co = kiln_compile_options_default();
    co.backend = v->backend;
    co.disable_passes = v->no_passes;
    /* Without passes, also without folding: every op then runs at call time. */
    co.disable_constant_folding = v->no_passes;
    kiln_exe *exe = NULL;
    kiln_status s = kiln_compile(cx, m, &co, &exe);
    kiln_module_release(m);
    if (s != KILN_OK) {
        snprintf(why, size, "%s: compile: %s", v->name, kiln_ctx_error_message(cx));
        return false;
    }
    kiln_exe_info info;
    if (kiln_exe_info_get(cx, exe, &info) == KILN_OK) conv_epilogues_seen += info.n_conv_epilogues;
    kiln_tensor *args[MAX_IN];
    for (int i = 0; i < p->n_in; i++)
        args[i] = kiln_tensor_from_host(cx, kiln_tensor_dtype(in[i]), *kiln_tensor_shape(in[i]),
                                        kiln_tensor_data(in[i]), kiln_tensor_nbytes(in[i]));
    if (v->threads) kiln__threads_set_count(v->threads);
    s = kiln_exe_call(cx, exe, args, out);
    if (v->threads) kiln__threads_set_count(0);
    kiln_exe_release(exe);
    if (s != KILN_OK) {
        snprintf(why, size, "%s: call: %s", v->name, kiln_ctx_error_message(cx));
        return false;
    }
    return true;
}

/* Runs program p eagerly and in every variant; false (after printing a report) on a
 * mismatch. */
static bool check_program(const prog *p, const variant *variants, int n_variants,
                          bool threads_bitwise, int *bad_variant, int *bad_out) {
    kiln_ctx *cx = test_ctx();
    bool ok = true;
    char why[512] = "";
    char *text = NULL;
    kiln_tensor *in[MAX_IN] = {0}, *keep[MAX_NODES] = {0}, *eager[MAX_OUT] = {0};
    for (int i = 0; i < p->n_in; i++) {
        const node *n = &p->nodes[p->in_node[i]];
        in[i] = kiln_tensor_retain(random_tensor(cx, n->seed, n->dtype, n->shape));
    }
    /* Eager: the reference. */
    run_env env = {p, keep};
    kiln_scope_begin(cx);
    kiln_status s = run_prog(cx, in, eager, &env);
    kiln_scope_end(cx);
    if (s != KILN_OK) {
        snprintf(why, sizeof why, "eager run failed: %s", kiln_ctx_error_message(cx));
        report(cx, p, NULL, why);
        ok = false;
    }
    double mag[MAX_NODES], err[MAX_NODES];
    if (ok) {
        magnitudes(p, keep, mag);
        error_bounds(p, mag, err);
    }
    kiln_tensor *first[MAX_OUT] = {0};
    *bad_variant = *bad_out = -1;
    for (int vi = 0; ok && vi < n_variants; vi++) {
        const variant *v = &variants[vi];
        kiln_tensor *got[MAX_OUT] = {0};
        if (text) kiln_string_free(cx, text);
        text = NULL;
        kiln_scope_begin(cx);
        if (!run_compiled(cx, p, in, v, got, &text, why, sizeof why)) {
            report(cx, p, text, why);
            ok = false;
        }
        for (int r = 0; ok && r < p->n_out; r++) {
            int o = p->out_node[r];
            char detail[400];
            if (!same(keep[o], got[r], 4 * err[o], detail, sizeof detail)) {
                snprintf(why, sizeof why, "%s: result %d (v%d) against eager: %s", v->name, r, o,
                         detail);
                report(cx, p, text, why);
                ok = false;
                *bad_variant = vi;
                *bad_out = r;
            } else if (threads_bitwise && first[r] &&
                       !same(first[r], got[r], 0, detail, sizeof detail)) {
                snprintf(why, sizeof why, "%s: result %d (v%d) against %s: %s", v->name, r, o,
                         variants[0].name, detail);
                report(cx, p, text, why);
                ok = false;
                *bad_variant = vi;
                *bad_out = r;
            }
        }
        for (int r = 0; r < p->n_out; r++)
            if (vi == 0 && threads_bitwise && got[r]) first[r] = kiln_tensor_retain(got[r]);
        kiln_scope_end(cx);
        kiln_ctx_clear_error(cx);
    }
    if (ok && verbose()) {
        describe(p, stderr);
        fprintf(stderr, "%s\n", text ? text : "");
    }
    for (int r = 0; r < MAX_OUT; r++)
        kiln_tensor_release(first[r]);
    if (text) kiln_string_free(cx, text);
    for (int i = 0; i < p->n; i++)
        kiln_tensor_release(keep[i]);
    for (int i = 0; i < p->n_in; i++)
        kiln_tensor_release(in[i]);
    kiln_ctx_release(cx);
    return ok;
}

/* ---- minimising a failing program ------------------------------------------------------ */

/* Recomputes what the generator tracked per node after an edit: approximation and
 * dependence on inputs flow from the operands. */
static void refresh(prog *p) {
    for (int i = 0; i < p->n; i++) {
        node *n = &p->nodes[i];
        n->approx = n->own_approx;
        n->dep = n->kind == N_INPUT;
        n->users = 0;
        for (int k = 0; k < n->n_a; k++) {
            n->approx |= p->nodes[n->a[k]].approx;
            n->dep |= p->nodes[n->a[k]].dep;
        }
        if (n->kind == N_UNARY && unary_ops[n->op].to_bool) n->approx = false;
    }
    for (int i = 0; i < p->n; i++)
        for (int k = 0; k < p->nodes[i].n_a; k++)
            p->nodes[p->nodes[i].a[k]].users++;
}

/* q = the nodes of p that result `root` needs, renumbered, with that one result. */
static void cone(const prog *p, int root, prog *q) {
    bool need[MAX_NODES] = {false};
    need[root] = true;
    for (int i = root; i >= 0; i--)
        if (need[i])
            for (int k = 0; k < p->nodes[i].n_a; k++)
                need[p->nodes[i].a[k]] = true;
    int map[MAX_NODES] = {0};
    *q = *p;
    q->n = q->n_in = 0;
    for (int i = 0; i < p->n; i++) {
        if (!need[i]) continue;
        map[i] = q->n;
        node *n = &q->nodes[q->n++];
        *n = p->nodes[i];
        for (int k = 0; k < n->n_a; k++)
            n->a[k] = map[n->a[k]];
        if (n->kind == N_INPUT) {
            n->i1 = q->n_in;
            q->in_node[q->n_in++] = q->n - 1;
        }
    }
    q->n_out = 1;
    q->out_node[0] = map[root];
    q->minimised = true;
    refresh(q);
}

static bool still_fails(const prog *q, const variant *variants, int n_variants,
                        bool threads_bitwise) {
    if (!q->nodes[q->out_node[0]].dep || q->n_in > MAX_IN) return false;
    int bv, bo;
    return !check_program(q, variants, n_variants, threads_bitwise, &bv, &bo);
}

/* Cuts a failing program down and reports the smaller one: keep only what the failing
 * result needs; then, while the mismatch stays, bypass ops whose operand has their type,
 * and turn ops into fresh inputs. */
static void minimise(const prog *p, const variant *variants, int bad_variant, int bad_out,
                     bool threads_bitwise) {
    variant vs[2];
    int nv = 0;
    if (threads_bitwise && bad_variant > 0) vs[nv++] = variants[0];
    vs[nv++] = variants[bad_variant];
    prog *q = malloc(sizeof *q), *t = malloc(sizeof *t), *c = malloc(sizeof *c);
    if (!q || !t || !c) goto done;
    quiet = true;
    cone(p, p->out_node[bad_out], q);
    if (!still_fails(q, vs, nv, threads_bitwise)) goto done;
    for (int budget = 0, progress = 1; progress && budget < 300;) {
        progress = 0;
        int root = q->out_node[0];
        for (int k = q->n - 1; k >= 0 && !progress && budget < 300; k--) {
            const node *n = &q->nodes[k];
            if (n->kind == N_INPUT) continue;
            /* Bypass: users of k read one of k's operands instead. */
            for (int j = 0; j < n->n_a && !progress && k != root; j++) {
                const node *a = &q->nodes[n->a[j]];
                if (a->dtype != n->dtype || !kiln_shape_equal(&a->shape, &n->shape)) continue;
                *t = *q;
                for (int i = k + 1; i < t->n; i++)
                    for (int m = 0; m < t->nodes[i].n_a; m++)
                        if (t->nodes[i].a[m] == k) t->nodes[i].a[m] = n->a[j];
                cone(t, root, c);
                budget++;
                if (still_fails(c, vs, nv, threads_bitwise)) {
                    *q = *c;
                    progress = 1;
                }
            }
            if (progress || k == root || n->n_a == 0) continue;
            /* Cut: k becomes an input of its own type (its value random, not computed). */
            *t = *q;
            node *cut = &t->nodes[k];
            cut->kind = N_INPUT;
            cut->n_a = 0;
            cut->own_approx = false;
            cut->seed = p->seed ^ ((uint64_t)k << 32);
            cone(t, root, c);
            budget++;
            if (still_fails(c, vs, nv, threads_bitwise)) {
                *q = *c;
                progress = 1;
            }
        }
    }
    quiet = false;
    int bv, bo;
    check_program(q, vs, nv, threads_bitwise, &bv, &bo); /* reports it */
done:
    quiet = false;
    free(q);
    free(t);
    free(c);
}

/* Checks p; on a mismatch (reported) also reports a minimised program. */
static bool check_and_minimise(const prog *p, const variant *variants, int n_variants,
                               bool threads_bitwise) {
    int bv = -1, bo = -1;
    if (check_program(p, variants, n_variants, threads_bitwise, &bv, &bo)) return true;
    if (bv >= 0 && bo >= 0 && !getenv("KILN_RPG_NO_MINIMISE"))
        minimise(p, variants, bv, bo, threads_bitwise);
    return false;
}

/* ---- the tests ---------------------------------------------------------------------------- */

static long env_long(const char *name, long fallback) {
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    char *end;
    long x = strtol(v, &end, 10);
    return *end ? fallback : x;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Programs base+0 .. base+count-1 of batch `batch` (seeds spread so that batches differ);
 * KILN_RPG_SEED replaces the seeds (batch 0 only), KILN_RPG_SECONDS runs until the time
 * is up. */
static void run_batch(int batch) {
    const char *fixed = getenv("KILN_RPG_SEED");
    long count = env_long("KILN_RPG_COUNT", KILN_RPG_DEFAULT_COUNT);
    double seconds = (double)env_long("KILN_RPG_SECONDS", 0);
    uint64_t base;
    if (fixed && *fixed) {
        if (batch != 0) return;
        base = strtoull(fixed, NULL, 10);
    } else {
        base = (uint64_t)batch << 40;
    }
    /* The same four variants on every registered backend; the first of each backend's on
     * every program, all of them on some. */
    static const variant kinds[] = {
        {"compiled", false, false, 0, false, NULL},
        {"compiled without passes or folding", false, true, 0, false, NULL},
        {"compiled with donate_all", true, false, 0, false, NULL},
        {"printed, parsed back and compiled", false, false, 0, true, NULL},
    };
    enum { N_KINDS = sizeof kinds / sizeof kinds[0] };
    const char *backends[TEST_MAX_BACKENDS];
    int n_backends = test_backends(backends, TEST_MAX_BACKENDS);
    variant variants[TEST_MAX_BACKENDS * N_KINDS], cheap[TEST_MAX_BACKENDS];
    char names[TEST_MAX_BACKENDS * N_KINDS][96];
    for (int b = 0; b < n_backends; b++) {
        for (int k = 0; k < N_KINDS; k++) {
            variant *v = &variants[b * N_KINDS + k];
            *v = kinds[k];
            snprintf(names[b * N_KINDS + k], sizeof names[0], "%s: %s", backends[b], kinds[k].name);
            v->name = names[b * N_KINDS + k];
            v->backend = backends[b];
        }
        cheap[b] = variants[b * N_KINDS];
    }
    prog *p = malloc(sizeof *p);
    cr_assert_not_null(p);
    double start = now_seconds();
    long failures = 0, done = 0;
    for (long i = 0; seconds > 0 ? now_seconds() - start < seconds : i < count; i++) {
        uint64_t seed = base + (uint64_t)i;
        gen_program(p, seed, false);
        bool all = i % 3 == 0;
        if (!check_and_minimise(p, all ? variants : cheap, all ? n_backends * N_KINDS : n_backends,
                                false))
            failures++;
        done++;
        if (failures >= env_long("KILN_RPG_MAX_FAILURES", 3)) break;
    }
    free(p);
    if (getenv("KILN_RPG_SECONDS"))
        fprintf(stderr, "random_programs batch %d: %ld programs, %ld convolution epilogues\n",
                batch, done, conv_epilogues_seen);
    /* About one program in 25 has one (a bias add after a convolution of a float dtype). */
    cr_assert(done < 250 || failures > 0 || conv_epilogues_seen > 0,
              "%ld programs compiled no convolution epilogue", done);
    cr_assert_eq(failures, 0, "%ld of %ld random programs differ (the reports above)", failures,
                 done);
}

Test(random_programs, batch_0) { run_batch(0); }
Test(random_programs, batch_1) { run_batch(1); }
Test(random_programs, batch_2) { run_batch(2); }
Test(random_programs, batch_3) { run_batch(3); }

/* Larger tensors, so that kernels split their work across threads: every thread count
 * gives the same bits (NaNs alike: BLAS makes NaNs of either sign depending on how it
 * splits the work), and agrees with eager. */
Test(random_programs, threads) {
    const variant v[] = {
        {"compiled, 1 thread", false, false, 1, false, NULL},
        {"compiled, 2 threads", false, false, 2, false, NULL},
        {"compiled, 3 threads, donate_all", true, false, 3, false, NULL},
        {"compiled, 4 threads", false, false, 4, false, NULL},
    };
    const char *fixed = getenv("KILN_RPG_SEED");
    uint64_t base = fixed && *fixed ? strtoull(fixed, NULL, 10) : (uint64_t)7 << 40;
    long count = fixed && *fixed ? env_long("KILN_RPG_COUNT", 1) : THREAD_PROGRAMS;
    prog *p = malloc(sizeof *p);
    cr_assert_not_null(p);
    long failures = 0;
    double seconds = (double)env_long("KILN_RPG_SECONDS", 0), start = now_seconds();
    for (long i = 0; (seconds > 0 ? now_seconds() - start < seconds : i < count) &&
                     failures < env_long("KILN_RPG_MAX_FAILURES", 3);
         i++) {
        gen_program(p, base + (uint64_t)i, true);
        p->threads_test = true;
        if (!check_and_minimise(p, v, 4, true)) failures++;
    }
    free(p);
    cr_assert_eq(failures, 0, "%ld larger random programs differ (the reports above)", failures);
}

/* The generator itself: every program is valid (the eager run succeeded above), and over a
 * few hundred seeds every node kind and every unary and binary op appears, with results of
 * every dtype, so that a change to the weights cannot silently drop coverage. */
Test(random_programs, generator_covers_every_op) {
    prog *p = malloc(sizeof *p);
    cr_assert_not_null(p);
    int kinds[N_CONV + 1] = {0}, un[N_UNARY_OPS] = {0}, bin[N_BINARY_OPS] = {0};
    int dtypes[KILN_DTYPE_COUNT] = {0}, max_ops = 0, min_ops = MAX_NODES;
    for (uint64_t s = 0; s < 600; s++) {
        gen_program(p, s, false);
        int ops = 0;
        for (int i = 0; i < p->n; i++) {
            const node *n = &p->nodes[i];
            kinds[n->kind]++;
            if (n->kind == N_UNARY) un[n->op]++;
            if (n->kind == N_BINARY) bin[n->op]++;
            if (n->kind > N_IOTA) ops++;
            dtypes[n->dtype]++;
        }
        if (ops > max_ops) max_ops = ops;
        if (ops < min_ops) min_ops = ops;
        cr_assert_gt(p->n_out, 0, "seed %llu has no result", (unsigned long long)s);
    }
    free(p);
    for (int k = 0; k <= N_CONV; k++)
        cr_expect_gt(kinds[k], 0, "no %s node in 600 programs", kind_names[k]);
    for (int k = 0; k < N_UNARY_OPS; k++)
        cr_expect_gt(un[k], 0, "no %s in 600 programs", unary_ops[k].name);
    for (int k = 0; k < N_BINARY_OPS; k++)
        cr_expect_gt(bin[k], 0, "no %s in 600 programs", binary_ops[k].name);
    static const kiln_dtype all[] = {KILN_F32, KILN_F64, KILN_F16, KILN_BF16, KILN_I32,
                                     KILN_I64, KILN_I8,  KILN_U8,  KILN_BOOL};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        cr_expect_gt(dtypes[all[k]], 0, "no %s value in 600 programs", kiln_dtype_name(all[k]));
    cr_expect_leq(min_ops, 2);
    cr_expect_geq(max_ops, 30);
}

/* The comparison can fail: one flipped bit of an exact result, a NaN against a number, and
 * an error just past the bound are all mismatches; a NaN with another payload is not. */
Test(random_programs, comparison_detects_differences) {
    kiln_ctx *cx = test_ctx();
    float a[4] = {1.0f, -0.0f, NAN, 3.0f}, b[4];
    memcpy(b, a, sizeof a);
    kiln_tensor *ta = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), a, sizeof a);
    char why[512];
    uint32_t bits;
    memcpy(&bits, &b[2], 4);
    bits ^= 0x80000001u; /* another NaN */
    memcpy(&b[2], &bits, 4);
    kiln_tensor *tb = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), b, sizeof b);
    cr_assert(same(ta, tb, 0, why, sizeof why), "%s", why);
    b[1] = 0.0f; /* +0 against -0 */
    kiln_tensor *tc = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), b, sizeof b);
    cr_assert_not(same(ta, tc, 0, why, sizeof why));
    cr_assert(strstr(why, "element [1]") != NULL, "%s", why);
    b[1] = -0.0f;
    b[3] = nextafterf(3.0f, 4.0f);
    kiln_tensor *td = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), b, sizeof b);
    cr_assert_not(same(ta, td, 0, why, sizeof why));
    cr_assert(same(ta, td, 1e-6, why, sizeof why), "%s", why);
    cr_assert_not(same(ta, td, 1e-7, why, sizeof why));
    b[2] = 0.0f;
    kiln_tensor *te = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), b, sizeof b);
    cr_assert_not(same(ta, te, 1.0, why, sizeof why));
    kiln_tensor *tf = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 2), a, sizeof a);
    cr_assert_not(same(ta, tf, 0, why, sizeof why));
    cr_assert(strstr(why, "type") != NULL, "%s", why);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- regressions: programs this generator found, minimised ---------------------------- */

/* Lowers fn over args (lower options lo, may be NULL) and compiles it. */
static kiln_exe *lower_and_compile(kiln_ctx *cx, kiln_region_fn fn, const kiln_arg_spec *args,
                                   int32_t n_args, int32_t n_results,
                                   const kiln_lower_options *lo) {
    kiln_region r = {fn, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &r, args, n_args, n_results, lo, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    return exe;
}

/* Calls exe (two f32[4] arguments x, y; results x + y and x) and checks both results. */
static void expect_sum_and_x(kiln_ctx *cx, kiln_exe *exe) {
    float xv[4] = {1, 2, 3, 4}, yv[4] = {10, 20, 30, 40};
    kiln_tensor *x = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), xv, sizeof xv);
    kiln_tensor *y = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), yv, sizeof yv);
    kiln_tensor *out[2];
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, out), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    const float *sum = kiln_tensor_data(out[0]), *same_x = kiln_tensor_data(out[1]);
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(sum[i], xv[i] + yv[i], "sum[%d] = %g", i, (double)sum[i]);
        cr_expect_eq(same_x[i], xv[i], "result 1 [%d] = %g, expected %g", i, (double)same_x[i],
                     (double)xv[i]);
    }
}

/* Calls exe on args with 1 and with 2 threads: result 0 must be the same bits. */
static void expect_same_bits_on_1_and_2_threads(kiln_ctx *cx, kiln_exe *exe,
                                                kiln_tensor *const *args) {
    kiln_tensor *r1[1], *r2[1];
    kiln__threads_set_count(1);
    cr_assert_eq(kiln_exe_call(cx, exe, args, r1), KILN_OK);
    kiln__threads_set_count(2);
    cr_assert_eq(kiln_exe_call(cx, exe, args, r2), KILN_OK);
    kiln__threads_set_count(0);
    char why[512];
    cr_expect(same(r1[0], r2[0], 0, why, sizeof why), "2 threads against 1: %s", why);
}

static kiln_status donated_forwarded(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                     void *user) {
    (void)user;
    out[0] = kiln_add(cx, in[0], in[1]);             /* may reuse x's donated buffer */
    out[1] = kiln_reshape(cx, in[0], KILN_SHAPE(4)); /* x itself once canonicalized */
    return kiln_ctx_status(cx);
}

/* Seed 1099511627857 and others: with donate_all, result 0 may reuse x's buffer; the
 * passes then turn result 1 into x, which the call must not overwrite (the pass manager
 * now marks such a result preserved and drops the other result's alias). */
Test(random_programs, regression_donated_argument_forwarded_by_passes) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(4)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(4)}};
    kiln_lower_options lo = kiln_lower_options_default();
    lo.donate_all = true;
    kiln_exe *exe = lower_and_compile(cx, donated_forwarded, a, 2, 2, &lo);
    expect_sum_and_x(cx, exe);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

static kiln_status i8_sum(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *init = kiln_scalar(cx, 4, KILN_I8), *x = kiln_negate(cx, in[0]);
    kiln_reduce(cx, &x, &init, 1, KILN_DIMS(0), kiln_region_add(), &out[0]);
    kiln_reduce(cx, &in[0], &init, 1, KILN_DIMS(0), kiln_region_add(), &out[1]);
    return kiln_ctx_status(cx);
}

/* Seeds 3298534884092 and 2199023257025: a full add-reduction of i8 that fuses its
 * producer summed only part of the elements once there were 16 or more (i8[32] of -1:
 * 4 - 12 instead of 4 - 32). */
Test(random_programs, regression_i8_sum_of_fused_producer) {
    kiln_ctx *cx = test_ctx();
    static const int64_t sizes[] = {15, 16, 17, 32, 33, 100};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int64_t n = sizes[k];
        kiln_arg_spec a = {.dtype = KILN_I8, .shape = KILN_SHAPE(n)};
        kiln_exe *exe = lower_and_compile(cx, i8_sum, &a, 1, 2, NULL);
        int8_t v[100];
        for (int64_t i = 0; i < n; i++)
            v[i] = (int8_t)(i % 3 - 1); /* -1, 0, 1, ... */
        int64_t sum = 0;
        for (int64_t i = 0; i < n; i++)
            sum += v[i];
        kiln_scope_begin(cx);
        kiln_tensor *x = kiln_tensor_from_host(cx, KILN_I8, KILN_SHAPE(n), v, (size_t)n);
        kiln_tensor *out[2];
        cr_assert_eq(kiln_exe_call(cx, exe, &x, out), KILN_OK, "%s", kiln_ctx_error_message(cx));
        /* Small sums: no wrapping. */
        cr_expect_eq(*(const int8_t *)kiln_tensor_data(out[0]), (int8_t)(4 - sum),
                     "i8[%lld]: sum of -x + 4 is %d, expected %d", (long long)n,
                     *(const int8_t *)kiln_tensor_data(out[0]), (int)(4 - sum));
        cr_expect_eq(*(const int8_t *)kiln_tensor_data(out[1]), (int8_t)(4 + sum),
                     "i8[%lld]: sum of x + 4 is %d, expected %d", (long long)n,
                     *(const int8_t *)kiln_tensor_data(out[1]), (int)(4 + sum));
        kiln_scope_end(cx);
        kiln_exe_release(exe);
    }
    kiln_ctx_release(cx);
}

static kiln_status big_dot(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_dot_params d = {.lhs_contracting_dims = KILN_DIMS(0, 2),
                         .rhs_contracting_dims = KILN_DIMS(2, 1)};
    out[0] = kiln_dot_general(cx, in[0], in[1], &d, KILN_DTYPE_COUNT);
    return kiln_ctx_status(cx);
}

/* Seed 7696581395531 of random_programs/threads (open): an f64 dot_general large enough for
 * BLAS (61 x 323 x 120) gives other last bits on 2 threads than on 1 (40.580101968675081
 * against ...116 at [39, 9, 7]); results must not depend on the thread count. */
Test(random_programs, regression_dot_f64_bits_per_thread_count) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {{.dtype = KILN_F64, .shape = KILN_SHAPE(60, 61, 2)},
                          {.dtype = KILN_F64, .shape = KILN_SHAPE(19, 2, 60, 17)}};
    kiln_exe *exe = lower_and_compile(cx, big_dot, a, 2, 1, NULL);
    /* The data of the minimised program (its inputs' seeds). */
    kiln_tensor *x = random_tensor(cx, UINT64_C(3942478486504282552), KILN_F64, a[0].shape);
    kiln_tensor *y = random_tensor(cx, UINT64_C(4708212403713858285), KILN_F64, a[1].shape);
    expect_same_bits_on_1_and_2_threads(cx, exe, (kiln_tensor *[]){x, y});
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

static kiln_status grouped_conv(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                void *user) {
    (void)user;
    kiln_conv_params cp = kiln_conv_params_nchw(1);
    cp.window_strides = KILN_DIMS(2);
    cp.padding_low = KILN_DIMS(0);
    cp.padding_high = KILN_DIMS(1);
    cp.feature_group_count = 3;
    out[0] = kiln_convolution(cx, in[0], in[1], &cp, KILN_DTYPE_COUNT);
    return kiln_ctx_status(cx);
}

/* Seed 7696581413430 of random_programs/threads (open), and four more like it, all with
 * feature_group_count > 1: a grouped f32 convolution, here of f32[1,3,2] with f32[6,1,3]
 * (3 groups, stride 2, padding [0, 1]: three products per result), gives another last bit
 * on 2 threads than on 1 (2.6070058345794678 against 2.6070055961608887 at [0, 0, 0]). */
Test(random_programs, regression_grouped_conv_bits_per_thread_count) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(1, 3, 2)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(6, 1, 3)}};
    kiln_exe *exe = lower_and_compile(cx, grouped_conv, a, 2, 1, NULL);
    kiln_tensor *args[2] = {random_tensor(cx, UINT64_C(7700876380726), KILN_F32, a[0].shape),
                            random_tensor(cx, UINT64_C(5003933868078492007), KILN_F32, a[1].shape)};
    expect_same_bits_on_1_and_2_threads(cx, exe, args);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

/* The root of regression_donated_argument_forwarded_by_passes, without the passes: a
 * module whose convention lets result 0 reuse donated %arg0 while result 1 returns %arg0
 * (the text says so, or a rewrite made it so) computed result 1 as result 0's values;
 * kiln_compile drops such an alias. */
Test(random_programs, regression_returned_argument_also_aliased) {
    static const char *const text =
        "func.func public @main(%arg0: tensor<4xf32> {tf.aliasing_output = 0 : i32}, %arg1: "
        "tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {\n"
        "  %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>\n"
        "  return %0, %arg0 : tensor<4xf32>, tensor<4xf32>\n"
        "}\n";
    kiln_ctx *cx = test_ctx();
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_compile_options o = kiln_compile_options_default();
    o.disable_passes = true;
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    expect_sum_and_x(cx, exe);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}
