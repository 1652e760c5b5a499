/* SPDX-License-Identifier: Apache-2.0 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "failing_allocator.h"
#include "ir/ir.h"
#include "test_util.h"

/* ---- helpers -------------------------------------------------------------------------- */

/* Log lines captured from a ctx. */
typedef struct log_capture {
    char lines[32][512];
    int n;
} log_capture;

static void capture(void *user, kiln_log_level level, const char *message) {
    log_capture *c = user;
    if (level > KILN_LOG_INFO || c->n >= 32) return;
    snprintf(c->lines[c->n++], sizeof c->lines[0], "%s", message);
}

static kiln_ctx *logging_ctx(log_capture *c) {
    kiln_ctx_options o = kiln_ctx_options_default();
    o.log_fn = capture;
    o.log_user = c;
    o.log_level = KILN_LOG_INFO;
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    return cx;
}

static const char *last_line(const log_capture *c) { return c->n ? c->lines[c->n - 1] : ""; }

#define expect_log(c, fragment)                                                              \
    cr_assert(strstr(last_line(c), (fragment)) != NULL, "last log line \"%s\" lacks \"%s\"", \
              last_line(c), (fragment))

static kiln_jit_stats stats_of(kiln_ctx *cx, kiln_jit *f) {
    kiln_jit_stats s;
    cr_assert_eq(kiln_jit_stats_get(cx, f, &s), KILN_OK);
    return s;
}

/* Asserts two tensors hold the same dtype, shape and (within tol) values. */
static void expect_close(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b, double tol) {
    cr_assert_not_null(a);
    cr_assert_not_null(b);
    cr_assert_eq(kiln_tensor_dtype(a), kiln_tensor_dtype(b));
    cr_assert(kiln_shape_equal(kiln_tensor_shape(a), kiln_tensor_shape(b)));
    for (int64_t i = 0; i < kiln_tensor_numel(a); i++) {
        double x = kiln_tensor_item(cx, a, i), y = kiln_tensor_item(cx, b, i);
        cr_assert(fabs(x - y) <= tol * (1 + fabs(y)), "element %lld: %g vs %g", (long long)i, x, y);
    }
    expect_ok(cx);
}

/* ---- list mode ------------------------------------------------------------------------ */

/* The EMLX benchmark: acc = x; for i in 1..10: acc = i*acc + y. Returns acc and y. */
static kiln_status emlx_step(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *acc = in[0];
    for (int i = 1; i <= 10; i++)
        acc = kiln_add(cx, kiln_multiply(cx, kiln_scalar_like(cx, in[0], i), acc), in[1]);
    out[0] = acc;
    out[1] = in[1];
    return kiln_ctx_status(cx);
}

static kiln_jit *make_emlx(kiln_ctx *cx, kiln_jit_options *o) {
    static const char *const names[] = {"x", "y"};
    kiln_jit_options d = kiln_jit_options_default();
    if (!o) o = &d;
    if (!o->arg_names) o->arg_names = names;
    if (!o->name || strcmp(o->name, "jit") == 0) o->name = "train_step";
    kiln_jit *f = NULL;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){emlx_step, NULL}, 2, 2, o, &f), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    return f;
}

Test(jit, list_mode_matches_eager_evaluation_and_caches) {
    kiln_ctx *cx = test_ctx();
    kiln_jit *f = make_emlx(cx, NULL);
    kiln_tensor *x = kiln_iota(cx, KILN_F32, KILN_SHAPE(10, 10), 1);
    kiln_tensor *y = kiln_full(cx, KILN_F32, KILN_SHAPE(10, 10), 0.5);
    kiln_tensor *eager[2], *r[2];
    cr_assert_eq(emlx_step(cx, (kiln_tensor *[]){x, y}, eager, NULL), KILN_OK);
    for (int call = 0; call < 3; call++) {
        cr_assert_eq(kiln_jit_call_list(cx, f, (kiln_tensor *[]){x, y}, r), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        expect_close(cx, r[0], eager[0], 1e-6);
        expect_close(cx, r[1], y, 0);
    }
    kiln_jit_stats s = stats_of(cx, f);
    cr_assert_eq(s.misses, 1);
    cr_assert_eq(s.hits, 2);
    cr_assert_eq(s.compiles, 1);
    cr_assert_eq(s.entries, 1);
    cr_assert_eq(s.evictions, 0);
    cr_assert_gt(s.compile_ns, 0);

    /* kiln_jit_call takes the list as well. */
    kiln_tensor *r2[2];
    cr_assert_eq(kiln_jit_call(cx, f, (kiln_tensor *[]){x, y}, r2), KILN_OK);
    expect_close(cx, r2[0], eager[0], 1e-6);
    cr_assert_eq(stats_of(cx, f).hits, 3);
    kiln_jit_release(f);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Each result depends on one argument, so any dtypes and shapes go. */
static kiln_status negate_both(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *user) {
    (void)user;
    out[0] = kiln_negate(cx, in[0]);
    out[1] = kiln_negate(cx, in[1]);
    return kiln_ctx_status(cx);
}

Test(jit, misses_are_logged_with_their_reason) {
    log_capture c = {0};
    kiln_ctx *cx = logging_ctx(&c);
    kiln_jit_options o = kiln_jit_options_default();
    o.name = "train_step";
    o.arg_names = (const char *[]){"x", "y"};
    kiln_jit *f = NULL;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){negate_both, NULL}, 2, 2, &o, &f), KILN_OK);
    kiln_tensor *r[2];
    kiln_tensor *a = kiln_zeros(cx, KILN_F32, KILN_SHAPE(10, 10));
    kiln_tensor *b = kiln_zeros(cx, KILN_F32, KILN_SHAPE(20, 10));
    kiln_tensor *a64 = kiln_zeros(cx, KILN_F64, KILN_SHAPE(10, 10));
    kiln_tensor *b64 = kiln_zeros(cx, KILN_F64, KILN_SHAPE(20, 10));

    cr_assert_eq(kiln_jit_call_list(cx, f, (kiln_tensor *[]){a, a}, r), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    expect_log(&c, "train_step: first call; compiled specialization 1 in ");
    int lines = c.n;
    cr_assert_eq(kiln_jit_call_list(cx, f, (kiln_tensor *[]){a, a}, r), KILN_OK);
    cr_assert_eq(c.n, lines, "a hit logs nothing at info level");

    kiln_jit_call_list(cx, f, (kiln_tensor *[]){a, b}, r);
    expect_ok(cx);
    expect_log(&c, "train_step: arg 1 'y': shape [10,10] -> [20,10]; compiled specialization 2");
    kiln_jit_call_list(cx, f, (kiln_tensor *[]){a64, b}, r);
    expect_ok(cx);
    expect_log(&c, "train_step: arg 0 'x': dtype f32 -> f64; compiled");
    kiln_jit_call_list(cx, f, (kiln_tensor *[]){a, b64}, r);
    expect_ok(cx);
    /* Compared with the closest cached signature, (a, b): one change. */
    expect_log(&c, "train_step: arg 1 'y': dtype f32 -> f64; compiled");
    kiln_jit_call_list(cx, f, (kiln_tensor *[]){b, a64}, r);
    expect_ok(cx);
    expect_log(&c, "arg 0 'x': shape [10,10] -> [20,10] (and 1 more change)");
    kiln_jit_call_list(cx, f, (kiln_tensor *[]){a64, a64}, r);
    expect_ok(cx);
    expect_log(&c, "arg 0 'x': dtype f32 -> f64, shape [20,10] -> [10,10]; compiled");

    /* After kiln_jit_clear the same signature misses for that reason. */
    kiln_jit_clear(f);
    cr_assert_eq(stats_of(cx, f).entries, 0);
    kiln_jit_call_list(cx, f, (kiln_tensor *[]){a64, a64}, r);
    expect_ok(cx);
    expect_log(&c, "train_step: compiled before, and kiln_jit_clear emptied the cache since");
    kiln_jit_stats s = stats_of(cx, f);
    cr_assert_eq(s.misses, 7);
    cr_assert_eq(s.compiles, 7);
    cr_assert_eq(s.hits, 1);
    cr_assert_eq(s.evictions, 0);
    kiln_jit_release(f);
    kiln_ctx_release(cx);
}

static kiln_status negate_one(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_negate(cx, in[0]);
    return kiln_ctx_status(cx);
}

Test(jit, a_miss_is_explained_against_the_closest_entry_and_evictions_are_named) {
    log_capture c = {0};
    kiln_ctx *cx = logging_ctx(&c);
    kiln_jit *f = NULL;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){negate_one, NULL}, 1, 1, NULL, &f), KILN_OK);
    kiln_tensor *r, *f4 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(4)),
                    *f8 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(8)),
                    *d4 = kiln_zeros(cx, KILN_F64, KILN_SHAPE(4));
    kiln_jit_call_list(cx, f, &f4, &r);
    kiln_jit_call_list(cx, f, &f8, &r);
    /* After f32[8], f64[4] differs from the cached f32[4] in its dtype alone. */
    kiln_jit_call_list(cx, f, &d4, &r);
    expect_ok(cx);
    expect_log(&c, "jit: arg 0: dtype f32 -> f64; compiled specialization 3");
    kiln_jit_release(f);
    /* With room for one entry, a signature that comes back was evicted. */
    kiln_jit_options o = kiln_jit_options_default();
    o.max_entries = 1;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){negate_one, NULL}, 1, 1, &o, &f), KILN_OK);
    kiln_jit_call_list(cx, f, &f4, &r);
    kiln_jit_call_list(cx, f, &f8, &r);
    expect_log(&c, "jit: arg 0: shape [4] -> [8]");
    kiln_jit_call_list(cx, f, &f4, &r);
    expect_ok(cx);
    expect_log(&c, "jit: compiled before, and evicted since (the cache holds at most 1 entries: "
                   "max_entries); compiled specialization 3");
    kiln_jit_release(f);
    kiln_ctx_release(cx);
}

Test(jit, arguments_without_names_are_numbered) {
    log_capture c = {0};
    kiln_ctx *cx = logging_ctx(&c);
    kiln_jit *f = NULL;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){negate_both, NULL}, 2, 2, NULL, &f), KILN_OK);
    kiln_tensor *r[2], *a = kiln_zeros(cx, KILN_F32, KILN_SHAPE(3)),
                       *b = kiln_zeros(cx, KILN_F32, KILN_SHAPE(4));
    kiln_jit_call_list(cx, f, (kiln_tensor *[]){a, a}, r);
    expect_log(&c, "jit: first call");
    kiln_jit_call_list(cx, f, (kiln_tensor *[]){a, b}, r);
    expect_ok(cx);
    expect_log(&c, "jit: arg 1: shape [3] -> [4]");
    kiln_jit_call_list(cx, f, (kiln_tensor *[]){a, NULL}, r);
    expect_error(cx, KILN_INVALID_ARGUMENT, "jit: arg 1 is NULL");
    kiln_jit_release(f);
    kiln_ctx_release(cx);
}

/* out = x + a constant of x's shape (so the entry's size grows with the shape). */
static kiln_status add_ones(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] =
        kiln_add(cx, in[0], kiln_ones(cx, kiln_tensor_dtype(in[0]), *kiln_tensor_shape(in[0])));
    return kiln_ctx_status(cx);
}

static kiln_jit *make_add_ones(kiln_ctx *cx, kiln_jit_options *o) {
    kiln_jit *f = NULL;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){add_ones, NULL}, 1, 1, o, &f), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    return f;
}

static void call_add_ones(kiln_ctx *cx, kiln_jit *f, int64_t n) {
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(n)), *r = NULL;
    cr_assert_eq(kiln_jit_call_list(cx, f, &x, &r), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_numel(r), n);
    cr_assert_eq(kiln_tensor_item(cx, r, n - 1), 1.0);
}

Test(jit, the_cache_evicts_the_least_recently_used_entry_by_count) {
    kiln_ctx *cx = test_ctx();
    kiln_jit_options o = kiln_jit_options_default();
    o.max_entries = 2;
    kiln_jit *f = make_add_ones(cx, &o);
    call_add_ones(cx, f, 1);
    call_add_ones(cx, f, 2);
    call_add_ones(cx, f, 1); /* hit: 1 becomes the most recently used */
    call_add_ones(cx, f, 3); /* evicts 2 */
    kiln_jit_stats s = stats_of(cx, f);
    cr_assert_eq(s.entries, 2);
    cr_assert_eq(s.evictions, 1);
    cr_assert_eq(s.hits, 1);
    call_add_ones(cx, f, 1); /* still cached */
    cr_assert_eq(stats_of(cx, f).hits, 2);
    call_add_ones(cx, f, 2); /* evicted: compiled again, evicting 3 */
    s = stats_of(cx, f);
    cr_assert_eq(s.misses, 4);
    cr_assert_eq(s.compiles, 4);
    cr_assert_eq(s.evictions, 2);
    call_add_ones(cx, f, 1);
    cr_assert_eq(stats_of(cx, f).hits, 3);
    kiln_jit_release(f);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(jit, the_cache_evicts_by_bytes) {
    kiln_ctx *cx = test_ctx();
    kiln_jit_options o = kiln_jit_options_default();
    o.max_entries = 0; /* no count bound */
    o.max_bytes = 4000;
    kiln_jit *f = make_add_ones(cx, &o);
    call_add_ones(cx, f, 100); /* a 400-byte constant */
    kiln_jit_stats s = stats_of(cx, f);
    cr_assert_geq(s.bytes, 400);
    size_t first = s.bytes;
    call_add_ones(cx, f, 101);
    cr_assert_geq(stats_of(cx, f).bytes, first + 404);
    call_add_ones(cx, f, 1000); /* 4000 bytes more: over the bound */
    s = stats_of(cx, f);
    cr_assert_geq(s.evictions, 1);
    cr_assert(s.bytes <= o.max_bytes || s.entries == 1, "%zu bytes in %d entries", s.bytes,
              (int)s.entries);
    /* An entry larger than the bound stays until the next one replaces it. */
    call_add_ones(cx, f, 2000);
    s = stats_of(cx, f);
    cr_assert_eq(s.entries, 1);
    cr_assert_geq(s.bytes, 8000);
    call_add_ones(cx, f, 2000);
    cr_assert_eq(stats_of(cx, f).hits, 1);
    call_add_ones(cx, f, 10);
    s = stats_of(cx, f);
    cr_assert_eq(s.entries, 1);
    cr_assert_lt(s.bytes, 4000);
    kiln_jit_release(f);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(jit, the_specialization_limit_names_the_function_the_limit_and_the_reason) {
    kiln_ctx *cx = test_ctx();
    kiln_jit_options o = kiln_jit_options_default();
    o.name = "grow";
    o.max_specializations = 2;
    o.arg_names = (const char *[]){"x"};
    kiln_jit *f = make_add_ones(cx, &o);
    call_add_ones(cx, f, 2);
    call_add_ones(cx, f, 3);
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(4)), *r = x;
    cr_assert_eq(kiln_jit_call_list(cx, f, &x, &r), KILN_FAILED_PRECONDITION);
    cr_assert_null(r);
    expect_error(cx, KILN_FAILED_PRECONDITION,
                 "grow: a new specialization would exceed max_specializations (2); the cache "
                 "missed because arg 0 'x': shape [3] -> [4]");
    /* Cached signatures still run. */
    call_add_ones(cx, f, 2);
    kiln_jit_stats s = stats_of(cx, f);
    cr_assert_eq(s.compiles, 2);
    cr_assert_eq(s.misses, 3);
    cr_assert_eq(s.hits, 1);
    kiln_jit_release(f);
    kiln_ctx_release(cx);
}

/* ---- tree mode ------------------------------------------------------------------------ */

typedef struct dense {
    kiln_tensor *w, *b;
} dense;

typedef struct config {
    int n;
    double rate;
} config;

typedef struct step_in {
    dense params;
    kiln_tensor *x;
    config cfg;
} step_in;

typedef struct step_out {
    dense params;
    kiln_tensor *loss;
    bool converged;
    int steps;
} step_out;

KILN_TREE_DEF(dense, KILN_FIELD(dense, w), KILN_FIELD(dense, b));
KILN_TREE_DEF(config, KILN_STATIC(config, n), KILN_STATIC(config, rate));
KILN_TREE_DEF(step_in, KILN_SUBTREE(step_in, params, dense), KILN_FIELD(step_in, x),
              KILN_SUBTREE(step_in, cfg, config));
KILN_TREE_DEF(step_out, KILN_SUBTREE(step_out, params, dense), KILN_FIELD(step_out, loss),
              KILN_STATIC(step_out, converged), KILN_STATIC(step_out, steps));

/* cfg.n steps of gradient descent on sum((x*w + b)^2), by hand (the sum as a dot product). */
static kiln_status train_step(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    const step_in *in = in_;
    step_out *out = out_;
    int *traces = user;
    if (traces) (*traces)++;
    kiln_tensor *w = in->params.w, *b = in->params.b, *loss = NULL;
    for (int i = 0; i < in->cfg.n; i++) {
        kiln_tensor *pred = kiln_add(cx, kiln_multiply(cx, in->x, w), b);
        loss = kiln_matmul(cx, pred, pred);
        kiln_tensor *g = kiln_multiply(cx, kiln_scalar_like(cx, pred, 2.0), pred);
        kiln_tensor *lr = kiln_scalar_like(cx, pred, in->cfg.rate);
        w = kiln_subtract(cx, w, kiln_multiply(cx, lr, kiln_multiply(cx, g, in->x)));
        b = kiln_subtract(cx, b, kiln_multiply(cx, lr, g));
    }
    out->params = (dense){w, b};
    out->loss = loss;
    out->converged = in->cfg.n > 2;
    out->steps = in->cfg.n;
    return kiln_ctx_status(cx);
}

static kiln_jit *make_train(kiln_ctx *cx, kiln_jit_options *o, int *traces) {
    kiln_jit_options d = kiln_jit_options_default();
    if (!o) o = &d;
    if (!o->name || strcmp(o->name, "jit") == 0) o->name = "train_step";
    kiln_jit *f = NULL;
    cr_assert_eq(kiln_jit_create_tree(cx, train_step, traces, &kiln_tree_def_step_in,
                                      &kiln_tree_def_step_out, o, &f),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    return f;
}

static step_in make_input(kiln_ctx *cx, int64_t n, int steps) {
    return (step_in){.params = {kiln_linspace(cx, KILN_F32, 0.1, 0.5, n),
                                kiln_full(cx, KILN_F32, KILN_SHAPE(n), 0.01)},
                     .x = kiln_linspace(cx, KILN_F32, -1, 1, n),
                     .cfg = {.n = steps, .rate = 0.05}};
}

Test(jit, tree_mode_matches_eager_evaluation_and_returns_statics) {
    kiln_ctx *cx = test_ctx();
    int traces = 0;
    kiln_jit *f = make_train(cx, NULL, &traces);
    step_in in = make_input(cx, 8, 3);
    step_out eager = {0}, out = {0};
    cr_assert_eq(train_step(cx, &in, &eager, NULL), KILN_OK);
    cr_assert_eq(kiln_jit_call(cx, f, &in, &out), KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_close(cx, out.params.w, eager.params.w, 1e-5);
    expect_close(cx, out.params.b, eager.params.b, 1e-5);
    expect_close(cx, out.loss, eager.loss, 1e-5);
    cr_assert(out.converged);
    cr_assert_eq(out.steps, 3);
    cr_assert_eq(traces, 1);

    /* A hit writes the statics recorded while tracing. */
    step_out again = {.converged = false, .steps = -1};
    cr_assert_eq(kiln_jit_call(cx, f, &in, &again), KILN_OK);
    cr_assert(again.converged);
    cr_assert_eq(again.steps, 3);
    cr_assert_eq(traces, 1);
    cr_assert_eq(stats_of(cx, f).hits, 1);

    /* A new static value is a new specialization, seen by the traced function. */
    in.cfg.n = 1;
    cr_assert_eq(train_step(cx, &in, &eager, NULL), KILN_OK);
    cr_assert_eq(kiln_jit_call(cx, f, &in, &out), KILN_OK);
    expect_close(cx, out.loss, eager.loss, 1e-5);
    cr_assert_not(out.converged);
    cr_assert_eq(out.steps, 1);
    cr_assert_eq(traces, 2);
    kiln_jit_release(f);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(jit, tree_misses_name_leaf_paths_and_statics) {
    log_capture c = {0};
    kiln_ctx *cx = logging_ctx(&c);
    kiln_jit *f = make_train(cx, NULL, NULL);
    step_in in = make_input(cx, 4, 2);
    step_out out;
    cr_assert_eq(kiln_jit_call(cx, f, &in, &out), KILN_OK, "%s", kiln_ctx_error_message(cx));
    in.cfg.n = 3;
    kiln_jit_call(cx, f, &in, &out);
    expect_log(&c, "train_step: static 'cfg.n': 2 -> 3; compiled specialization 2");
    in.cfg.rate = 0.1;
    kiln_jit_call(cx, f, &in, &out);
    expect_log(&c, "train_step: static 'cfg.rate': 0.05 -> 0.1;");
    step_in wide = make_input(cx, 6, 3);
    wide.cfg.rate = 0.1;
    kiln_jit_call(cx, f, &wide, &out);
    expect_ok(cx);
    expect_log(&c, "train_step: arg 0 'params.w': shape [4] -> [6] (and 2 more changes)");
    kiln_jit_release(f);
    kiln_ctx_release(cx);
}

Test(jit, leaves_are_checked_and_named) {
    kiln_ctx *cx = test_ctx();
    kiln_jit *f = make_train(cx, NULL, NULL);
    step_in in = make_input(cx, 4, 1);
    step_out out = {.loss = in.x};
    in.params.b = NULL;
    cr_assert_eq(kiln_jit_call(cx, f, &in, &out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "train_step: arg 1 'params.b' is NULL");
    cr_assert_null(out.loss, "results are NULL after an error");
    kiln_jit_call(cx, f, NULL, &out);
    expect_error(cx, KILN_INVALID_ARGUMENT, "in is NULL");
    kiln_jit_call(cx, f, &in, NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out is NULL");
    kiln_jit_call(cx, NULL, &in, &out);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_jit_call: f is NULL");
    cr_assert_eq(kiln_jit_call(NULL, f, &in, &out), KILN_INVALID_ARGUMENT);
    kiln_tensor *r;
    kiln_jit_call_list(cx, f, &in.x, &r);
    expect_error(cx, KILN_INVALID_ARGUMENT, "train_step takes structs");
    kiln_jit_stats s = stats_of(cx, f);
    cr_assert_eq(s.misses + s.hits, 0);
    kiln_jit_stats_get(cx, f, NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_stats is NULL");
    kiln_jit_stats_get(cx, NULL, &s);
    expect_error(cx, KILN_INVALID_ARGUMENT, "f is NULL");
    kiln_jit_release(f);
    kiln_ctx_release(cx);
}

/* Calls a jit from inside a traced function. */
static kiln_status calls_jit(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    kiln_status s = kiln_jit_call_list(cx, user, in, out);
    return s;
}

static kiln_status keep_traced(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *user) {
    *(kiln_tensor **)user = kiln_tensor_retain(in[0]);
    out[0] = kiln_negate(cx, in[0]);
    return kiln_ctx_status(cx);
}

Test(jit, traced_tensors_and_calls_while_tracing_are_rejected) {
    kiln_ctx *cx = test_ctx();
    kiln_jit *f = make_add_ones(cx, NULL);
    kiln_arg_spec spec = {.dtype = KILN_F32, .shape = KILN_SHAPE(3)};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &(kiln_region){calls_jit, f}, &spec, 1, 1, NULL, &m),
                 KILN_FAILED_PRECONDITION);
    expect_error(cx, KILN_FAILED_PRECONDITION, "jit: kiln_jit_call_list called while tracing");
    kiln_tensor *kept = NULL;
    cr_assert_eq(kiln_lower(cx, &(kiln_region){keep_traced, &kept}, &spec, 1, 1, NULL, &m),
                 KILN_OK);
    kiln_tensor *r;
    cr_assert_eq(kiln_jit_call_list(cx, f, &kept, &r), KILN_FAILED_PRECONDITION);
    expect_error(cx, KILN_FAILED_PRECONDITION, "jit: arg 0 is a traced tensor");
    kiln_tensor_release(kept);
    kiln_module_release(m);
    kiln_jit_release(f);
    kiln_ctx_release(cx);
}

static kiln_status forgets_loss(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    (void)user;
    const step_in *in = in_;
    step_out *out = out_;
    out->params = in->params;
    out->loss = in->cfg.n > 0 ? kiln_matmul(cx, in->x, in->x) : NULL;
    return kiln_ctx_status(cx);
}

static kiln_status fails(kiln_ctx *cx, const void *in, void *out, void *user) {
    (void)in, (void)out, (void)user;
    return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED, "fails: not today");
}

Test(jit, function_errors_are_reported_and_not_cached) {
    kiln_ctx *cx = test_ctx();
    kiln_jit *f = NULL;
    cr_assert_eq(kiln_jit_create_tree(cx, forgets_loss, NULL, &kiln_tree_def_step_in,
                                      &kiln_tree_def_step_out, NULL, &f),
                 KILN_OK);
    step_in in = make_input(cx, 4, 0);
    step_out out;
    cr_assert_eq(kiln_jit_call(cx, f, &in, &out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "jit: the function stored no tensor for result 2 'loss'");
    in.cfg.n = 1;
    cr_assert_eq(kiln_jit_call(cx, f, &in, &out), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_jit_stats s = stats_of(cx, f);
    cr_assert_eq(s.misses, 2);
    cr_assert_eq(s.compiles, 1);
    cr_assert_eq(s.entries, 1);
    kiln_jit_release(f);

    cr_assert_eq(kiln_jit_create_tree(cx, fails, NULL, &kiln_tree_def_step_in,
                                      &kiln_tree_def_step_out, NULL, &f),
                 KILN_OK);
    cr_assert_eq(kiln_jit_call(cx, f, &in, &out), KILN_UNIMPLEMENTED);
    expect_error(cx, KILN_UNIMPLEMENTED, "fails: not today");
    cr_assert_eq(stats_of(cx, f).compiles, 0);
    kiln_jit_release(f);
    kiln_ctx_release(cx);
}

Test(jit, creation_checks_its_arguments) {
    kiln_ctx *cx = test_ctx();
    kiln_jit *f = (kiln_jit *)1;
    kiln_region fn = {add_ones, NULL};
    cr_assert_eq(kiln_jit_create(NULL, &fn, 1, 1, NULL, &f), KILN_INVALID_ARGUMENT);
    kiln_jit_create(cx, &fn, 1, 1, NULL, NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_jit_create: out_jit is NULL");
    kiln_jit_create(cx, NULL, 1, 1, NULL, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_jit_create: fn is NULL");
    cr_assert_null(f);
    kiln_jit_create(cx, &(kiln_region){NULL, NULL}, 1, 1, NULL, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "fn is NULL");
    kiln_jit_create(cx, &fn, -1, 1, NULL, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_in -1 and n_out 1 must be within 0..4096");
    kiln_jit_create(cx, &fn, 1, 5000, NULL, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "must be within");

    kiln_jit_options o = kiln_jit_options_default();
    o.struct_size = 8;
    kiln_jit_create(cx, &fn, 1, 1, &o, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "options->struct_size is 8");
    o = kiln_jit_options_default();
    o.max_entries = -1;
    kiln_jit_create(cx, &fn, 1, 1, &o, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "must not be negative");
    o = kiln_jit_options_default();
    o.n_donate_paths = 1;
    kiln_jit_create(cx, &fn, 1, 1, &o, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_donate_paths is 1 with donate_paths NULL");
    o.donate_paths = (const char *[]){""};
    kiln_jit_create(cx, &fn, 1, 1, &o, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "donate_paths[0] is NULL or empty");
    o.donate_paths = (const char *[]){"x"};
    kiln_jit_create(cx, &fn, 1, 1, &o, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "donate path 'x' matches no argument of jit");
    o = kiln_jit_options_default();
    kiln_compile_options co = kiln_compile_options_default();
    co.struct_size = 1;
    o.compile = &co;
    kiln_jit_create(cx, &fn, 1, 1, &o, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "options->compile->struct_size is 1");

    kiln_jit_create_tree(cx, NULL, NULL, &kiln_tree_def_step_in, &kiln_tree_def_step_out, NULL, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_jit_create_tree: fn is NULL");
    kiln_jit_create_tree(cx, train_step, NULL, NULL, &kiln_tree_def_step_out, NULL, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "in_def is NULL");
    kiln_jit_create_tree(cx, train_step, NULL, &kiln_tree_def_step_in, NULL, NULL, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_def is NULL");
    kiln_tree_def bad = {"bad", 8, NULL, 1};
    kiln_jit_create_tree(cx, train_step, NULL, &kiln_tree_def_step_in, &bad, NULL, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_jit_create_tree: out_def: invalid descriptor: bad");
    cr_assert_null(f);

    kiln_jit_release(NULL);
    cr_assert_null(kiln_jit_retain(NULL));
    kiln_jit_clear(NULL);
    cr_assert_null(kiln_jit_last_exe(NULL));
    kiln_ctx_release(cx);
}

/* A state updated in place: the same struct is the input and the output. */
typedef struct counter {
    kiln_tensor *w;
    int factor;
} counter;
KILN_TREE_DEF(counter, KILN_FIELD(counter, w), KILN_STATIC(counter, factor));

static kiln_status scale(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    (void)user;
    const counter *in = in_;
    counter *out = out_;
    out->w = kiln_multiply(cx, in->w, kiln_scalar_like(cx, in->w, in->factor));
    out->factor = in->factor + 1; /* recorded while tracing, returned by every call */
    return kiln_ctx_status(cx);
}

Test(jit, the_output_struct_may_be_the_input) {
    kiln_ctx *cx = test_ctx();
    kiln_jit_options o = kiln_jit_options_default();
    o.donate_all = true;
    kiln_jit *f = NULL;
    cr_assert_eq(kiln_jit_create_tree(cx, scale, NULL, &kiln_tree_def_counter,
                                      &kiln_tree_def_counter, &o, &f),
                 KILN_OK);
    counter st = {.w = kiln_ones(cx, KILN_F32, KILN_SHAPE(3)), .factor = 2};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(kiln_jit_call(cx, f, &st, &st), KILN_OK, "%s", kiln_ctx_error_message(cx));
    /* factor 2, then 3, then 4: each a specialization of its own */
    cr_assert_eq(kiln_tensor_item(cx, st.w, 2), 24.0);
    cr_assert_eq(st.factor, 5);
    kiln_jit_stats s = stats_of(cx, f);
    cr_assert_eq(s.compiles, 3);
    st.factor = 3;
    cr_assert_eq(kiln_jit_call(cx, f, &st, &st), KILN_OK);
    cr_assert_eq(kiln_tensor_item(cx, st.w, 0), 72.0);
    cr_assert_eq(st.factor, 4);
    cr_assert_eq(stats_of(cx, f).hits, 1);
    kiln_jit_release(f);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- donation ------------------------------------------------------------------------- */

static void expect_donated(kiln_ctx *cx, kiln_jit *f, const step_in *in, const bool want[3]) {
    kiln_module *m = NULL;
    cr_assert_eq(kiln_jit_lower(cx, f, in, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_info info;
    cr_assert_eq(kiln_module_info_get(cx, m, &info), KILN_OK);
    cr_assert_eq(info.n_args, 3);
    cr_assert_eq(info.n_results, 3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(info.donated[i], want[i], "argument %d", i);
    kiln_module_release(m);
}

Test(jit, donation_options_reach_the_lowered_module) {
    kiln_ctx *cx = test_ctx();
    step_in in = make_input(cx, 4, 2);
    kiln_jit *f = make_train(cx, NULL, NULL);
    expect_donated(cx, f, &in, (bool[]){false, false, false});
    kiln_jit_release(f);

    kiln_jit_options o = kiln_jit_options_default();
    o.donate_paths = (const char *[]){"params"};
    o.n_donate_paths = 1;
    f = make_train(cx, &o, NULL);
    expect_donated(cx, f, &in, (bool[]){true, true, false});
    kiln_jit_release(f);

    o = kiln_jit_options_default();
    o.donate_paths = (const char *[]){"params.b", "x"};
    o.n_donate_paths = 2;
    f = make_train(cx, &o, NULL);
    expect_donated(cx, f, &in, (bool[]){false, true, true});
    kiln_jit_release(f);

    o = kiln_jit_options_default();
    o.donate = (bool[]){true, false, false};
    f = make_train(cx, &o, NULL);
    expect_donated(cx, f, &in, (bool[]){true, false, false});
    kiln_jit_release(f);

    o = kiln_jit_options_default();
    o.donate_paths = (const char *[]){"param"}; /* a prefix of a name is not a path prefix */
    o.n_donate_paths = 1;
    kiln_jit_create_tree(cx, train_step, NULL, &kiln_tree_def_step_in, &kiln_tree_def_step_out, &o,
                         &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "donate path 'param' matches no argument of jit");

    /* :auto donates what is not returned unchanged. */
    o = kiln_jit_options_default();
    o.donate_all = true;
    f = make_train(cx, &o, NULL);
    expect_donated(cx, f, &in, (bool[]){true, true, true});
    kiln_jit_release(f);
    kiln_jit *g = NULL;
    cr_assert_eq(kiln_jit_create_tree(cx, forgets_loss, NULL, &kiln_tree_def_step_in,
                                      &kiln_tree_def_step_out, &o, &g),
                 KILN_OK);
    in.cfg.n = 1;
    expect_donated(cx, g, &in, (bool[]){false, false, true}); /* params are returned as is */
    kiln_jit_release(g);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(jit, lowered_modules_carry_leaf_paths_and_the_name) {
    kiln_ctx *cx = test_ctx();
    kiln_jit *f = make_train(cx, NULL, NULL);
    step_in in = make_input(cx, 4, 2);
    kiln_module *m = NULL;
    cr_assert_eq(kiln_jit_lower(cx, f, &in, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_str_eq(m->name, "train_step");
    const char **names = m->funcs[0]->arg_names;
    cr_assert_str_eq(names[0], "params.w");
    cr_assert_str_eq(names[1], "params.b");
    cr_assert_str_eq(names[2], "x");
    kiln_module_release(m);
    cr_assert_eq(stats_of(cx, f).misses, 0, "kiln_jit_lower does not touch the cache");
    kiln_jit_lower(cx, f, &in, NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_module is NULL");
    in.x = NULL;
    kiln_jit_lower(cx, f, &in, &m);
    expect_error(cx, KILN_INVALID_ARGUMENT, "train_step: arg 2 'x' is NULL");
    cr_assert_null(m);
    kiln_jit_release(f);
    kiln_ctx_release(cx);
}

Test(jit, calls_with_donation_reuse_buffers) {
    kiln_ctx *cx = test_ctx();
    kiln_jit_options o = kiln_jit_options_default();
    o.donate_paths = (const char *[]){"params"};
    o.n_donate_paths = 1;
    kiln_jit *f = make_train(cx, &o, NULL);
    cr_assert_null(kiln_jit_last_exe(f));
    step_in in = make_input(cx, 16, 2);  /* for the jit, whose params are donated */
    step_in ref = make_input(cx, 16, 2); /* for eager evaluation */
    step_out out, eager;
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(kiln_jit_call(cx, f, &in, &out), KILN_OK, "%s", kiln_ctx_error_message(cx));
        cr_assert_eq(train_step(cx, &ref, &eager, NULL), KILN_OK);
        in.params = out.params; /* the donated inputs are dead: carry the results */
        ref.params = eager.params;
    }
    expect_close(cx, out.params.w, eager.params.w, 1e-5);
    expect_close(cx, out.params.b, eager.params.b, 1e-5);
    expect_close(cx, out.loss, eager.loss, 1e-5);
    kiln_exe *exe = kiln_jit_last_exe(f);
    cr_assert_not_null(exe);
    kiln_exe_info info;
    cr_assert_eq(kiln_exe_info_get(cx, exe, &info), KILN_OK);
    cr_assert_eq(info.n_args, 3);
    cr_assert_eq(info.aliases[0], 0, "params.w reuses its buffer");
    cr_assert_eq(info.aliases[1], 1, "params.b reuses its buffer");
    kiln_exe_release(exe);
    cr_assert_eq(stats_of(cx, f).hits, 2);

    /* A donated (dead) input is named by its path, before anything is compiled. */
    step_in stale = in;
    cr_assert_eq(kiln_jit_call(cx, f, &in, &out), KILN_OK);
    stale.cfg.n = 7;
    cr_assert_eq(kiln_jit_call(cx, f, &stale, &out), KILN_FAILED_PRECONDITION);
    expect_error(cx, KILN_FAILED_PRECONDITION,
                 "train_step: arg 0 'params.w' is dead: tensor was donated to 'train_step' as "
                 "'params.w'");
    kiln_jit_stats s = stats_of(cx, f);
    cr_assert_eq(s.misses, 1);
    cr_assert_eq(s.compiles, 1);
    kiln_jit_release(f);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- threads and memory --------------------------------------------------------------- */

typedef struct worker {
    kiln_jit *f;
    kiln_ctx *cx; /* made by the main thread: it must outlive the jit */
    int id;
    bool ok;
    char message[256];
} worker;

static void *work(void *arg) {
    worker *w = arg;
    kiln_ctx *cx = w->cx;
    w->ok = true;
    for (int i = 0; i < 40 && w->ok; i++) {
        kiln_scope_begin(cx);
        int64_t n = 1 + (i + w->id) % 4;
        kiln_tensor *x = kiln_full(cx, KILN_F32, KILN_SHAPE(n), w->id), *r = NULL;
        if (kiln_jit_call_list(cx, w->f, &x, &r) != KILN_OK ||
            kiln_tensor_item(cx, r, n - 1) != w->id + 1.0) {
            w->ok = false;
            snprintf(w->message, sizeof w->message, "%s", kiln_ctx_error_message(cx));
        }
        kiln_scope_end(cx);
    }
    return NULL;
}

Test(jit, one_jit_serves_several_threads) {
    kiln_ctx *cx = test_ctx();
    kiln_jit_options o = kiln_jit_options_default();
    o.max_entries = 3; /* four shapes: evictions while other threads run */
    kiln_jit *f = make_add_ones(cx, &o);
    call_add_ones(cx, f, 1);
    worker w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){.f = f, .cx = test_ctx(), .id = i};
        cr_assert_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        cr_assert(w[i].ok, "thread %d: %s", i, w[i].message);
    }
    kiln_jit_stats s = stats_of(cx, f);
    cr_assert_eq(s.hits + s.misses, 161);
    cr_assert_leq(s.entries, 3);
    cr_assert_geq(s.evictions, 1);
    kiln_jit_release(f);
    for (int i = 0; i < 4; i++)
        kiln_ctx_release(w[i].cx);
    kiln_ctx_release(cx);
}

Test(jit, running_out_of_memory_is_reported_cleanly) {
    failing_allocator fa;
    failing_allocator_init(&fa, -1);
    kiln_ctx_options co = kiln_ctx_options_default();
    co.allocator = &fa.allocator;
    bool succeeded = false;
    for (int64_t k = 0; k < 20000 && !succeeded; k++) {
        kiln_ctx *cx = NULL;
        fa.fail_after = -1;
        cr_assert_eq(kiln_ctx_create(&co, &cx), KILN_OK);
        step_in in = make_input(cx, 4, 2);
        step_out out;
        fa.fail_after = fa.allocations + k;
        kiln_jit *f = NULL;
        kiln_status s = kiln_jit_create_tree(cx, train_step, NULL, &kiln_tree_def_step_in,
                                             &kiln_tree_def_step_out, NULL, &f);
        if (s == KILN_OK) s = kiln_jit_call(cx, f, &in, &out);
        if (s == KILN_OK) s = kiln_jit_call(cx, f, &in, &out);
        if (s == KILN_OK) {
            succeeded = true;
            cr_assert_eq(stats_of(cx, f).hits, 1);
        } else {
            cr_assert_eq(s, KILN_RESOURCE_EXHAUSTED, "after %lld allocations: %s: %s", (long long)k,
                         kiln_status_name(s), kiln_ctx_error_message(cx));
        }
        fa.fail_after = -1;
        kiln_jit_release(f);
        kiln_ctx_release(cx);
        cr_assert_eq(fa.live_blocks, 0, "after %lld allocations: %lld blocks leaked", (long long)k,
                     (long long)fa.live_blocks);
    }
    cr_assert(succeeded);
}

/* ---- static arguments in list mode ------------------------------------------------------ */

/* x * n, with n read on the host: it must be concrete (static). */
static kiln_status scale_by_static(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                   void *u) {
    (void)u;
    cr_assert(!kiln_tensor_is_traced(in[1]), "a static argument arrives concrete");
    cr_assert(kiln_tensor_is_traced(in[0]));
    int32_t n = *(const int32_t *)kiln_tensor_data(in[1]);
    out[0] = kiln_multiply(cx, in[0], kiln_scalar_like(cx, in[0], n));
    return kiln_ctx_status(cx);
}

Test(jit, static_arguments_in_list_mode_are_keyed_by_value) {
    log_capture c = {0};
    kiln_ctx *cx = logging_ctx(&c);
    kiln_jit_options o = kiln_jit_options_default();
    o.name = "scale";
    o.arg_names = (const char *[]){"x", "n"};
    o.static_argnums = (int32_t[]){1};
    o.n_static_argnums = 1;
    kiln_jit *f = NULL;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){scale_by_static, NULL}, 2, 1, &o, &f), KILN_OK,
                 "%s", kiln_ctx_error_message(cx));
    kiln_tensor *x = kiln_ones(cx, KILN_F32, KILN_SHAPE(3)), *r;
    kiln_tensor *two = kiln_scalar(cx, 2, KILN_I32), *three = kiln_scalar(cx, 3, KILN_I32);
    cr_assert_eq(kiln_jit_call_list(cx, f, (kiln_tensor *[]){x, two}, &r), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_float_eq(((const float *)kiln_tensor_data(r))[2], 2.0f, 0);
    cr_assert_eq(kiln_jit_call_list(cx, f, (kiln_tensor *[]){x, kiln_scalar(cx, 2, KILN_I32)}, &r),
                 KILN_OK);
    cr_assert_eq(stats_of(cx, f).compiles, 1, "the same value hits");
    cr_assert_eq(kiln_jit_call_list(cx, f, (kiln_tensor *[]){x, three}, &r), KILN_OK);
    cr_assert_float_eq(((const float *)kiln_tensor_data(r))[0], 3.0f, 0);
    expect_log(&c, "scale: static arg 1 'n': its value changed; compiled specialization 2");
    /* The program takes x alone. */
    kiln_exe_info info;
    kiln_exe *exe = kiln_jit_last_exe(f);
    cr_assert_eq(kiln_exe_info_get(cx, exe, &info), KILN_OK);
    cr_assert_eq(info.n_args, 1);
    kiln_exe_release(exe);
    kiln_jit_release(f);
    /* Errors. */
    o.static_argnums = (int32_t[]){2};
    kiln_jit_create(cx, &(kiln_region){scale_by_static, NULL}, 2, 1, &o, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "static_argnums[0] is 2; expected 0 to 1");
    o.static_argnums = (int32_t[]){1, 1};
    o.n_static_argnums = 2;
    kiln_jit_create(cx, &(kiln_region){scale_by_static, NULL}, 2, 1, &o, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "static_argnums[1] repeats argument 1");
    o.n_static_argnums = -1;
    kiln_jit_create(cx, &(kiln_region){scale_by_static, NULL}, 2, 1, &o, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_static_argnums is -1");
    o.n_static_argnums = 1;
    o.donate = (const bool[]){false, true};
    kiln_jit_create(cx, &(kiln_region){scale_by_static, NULL}, 2, 1, &o, &f);
    expect_error(cx, KILN_INVALID_ARGUMENT, "argument 1 is static (static_argnums)");
    o.donate = NULL;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){scale_by_static, NULL}, 2, 1, &o, &f), KILN_OK);
    kiln_jit_call_list(cx, f, (kiln_tensor *[]){x, kiln_zeros(cx, KILN_I32, KILN_SHAPE(2000))}, &r);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "static arg 1 'n' holds 8000 bytes; a static argument holds at most 4096");
    kiln_jit_release(f);
    kiln_ctx_release(cx);
}
