/* SPDX-License-Identifier: Apache-2.0 */
/* Random programs with control flow, eager against compiled: loops whose bodies fuse,
 * carries of several dtypes, branches and loops nested in bodies, bodies reading values of
 * the function around them.
 *
 * Each program comes from one seed: 1..3 loop carries of random dtypes (f32, f64, f16,
 * bf16, i32, i64, i8) over one random shape (rank 0..3), a few values computed before the
 * loop that the body reads, a trip count of 0..6, and a body that updates each carry by a
 * random chain of exact ops (add, subtract, multiply, maximum, minimum, select of a compare,
 * reverse, a max-reduction broadcast back, conversions to the carry's dtype from integers
 * and floats, a sort, a max over windows, a gather reversing an axis, a scatter-add of
 * rows in reverse order, a select_and_scatter adding at windows' maxima), sometimes with a
 * branch (kiln_cond on a reduced value) or an inner loop; one program in ten has empty
 * carries.
 * The region runs eagerly (the evaluator: the reference) and is lowered, compiled twice
 * (fusion on, bodies fused; short loops unrolled, and kept as loops) and called on the
 * same inputs; every result must agree bit for bit
 * (any NaN matches any NaN: StableHLO leaves payloads to the implementation). Only exact
 * ops are generated, so there is no tolerance. A failure prints the seed:
 * KILN_RPC_SEED=<seed> KILN_RPC_COUNT=1 test_runtime --filter 'random_control/<name>' reruns it;
 * KILN_RPC_COUNT=N runs N programs (default 1,000, 150 under the sanitizers). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define RPC_COUNT 150
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RPC_COUNT 150
#endif
#endif
#ifndef RPC_COUNT
#define RPC_COUNT 1000
#endif

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

static int pick(rng *r, int n) { return (int)(next(r) % (uint64_t)n); }

static const kiln_dtype dtypes[] = {KILN_F32, KILN_F64, KILN_F16, KILN_BF16,
                                    KILN_I32, KILN_I64, KILN_I8};

typedef struct program {
    uint64_t seed;
    int n_carries, n_outer;
    kiln_dtype carry_dtype[3];
    kiln_shape shape;
    int trip, inner_trip;
    bool branch, inner_loop;
    kiln_tensor *outer[2]; /* values of the function the body reads (set while tracing) */
} program;

static void make_program(program *p, uint64_t seed) {
    rng r = {seed * 0x9e3779b97f4a7c15ull + 1};
    memset(p, 0, sizeof *p);
    p->seed = seed;
    p->n_carries = 1 + pick(&r, 3);
    for (int i = 0; i < p->n_carries; i++)
        p->carry_dtype[i] = dtypes[pick(&r, (int)(sizeof dtypes / sizeof dtypes[0]))];
    p->shape.rank = pick(&r, 4);
    bool empty = pick(&r, 10) == 0; /* one program in ten has an empty carry */
    for (int d = 0; d < p->shape.rank; d++)
        p->shape.dims[d] = empty && d == 0 ? 0 : 1 + pick(&r, 5);
    p->n_outer = pick(&r, 3);
    p->trip = pick(&r, 7);
    p->branch = pick(&r, 3) == 0;
    p->inner_loop = pick(&r, 4) == 0;
    p->inner_trip = pick(&r, 3);
}

static bool is_float(kiln_dtype d) {
    return d == KILN_F32 || d == KILN_F64 || d == KILN_F16 || d == KILN_BF16;
}

/* A value of dtype dt from x: integers convert to anything, floats only to floats (a float
 * out of an integer's range converts as the implementation likes). */
static kiln_tensor *as_dtype(kiln_ctx *cx, kiln_tensor *x, kiln_dtype dt) {
    kiln_dtype from = kiln_tensor_dtype(x);
    if (from == dt) return x;
    if (is_float(from) && !is_float(dt)) return kiln_scalar(cx, 3, dt);
    return kiln_convert(cx, x, dt);
}

/* The maximum of all of x's elements, starting from -100 (so an empty x has one too). */
static kiln_tensor *max_all(kiln_ctx *cx, kiln_tensor *x) {
    kiln_tensor *init = kiln_scalar(cx, -100, kiln_tensor_dtype(x)), *m = NULL;
    kiln_dims all = {.count = kiln_tensor_rank(x)};
    for (int d = 0; d < all.count; d++)
        all.v[d] = d;
    kiln_reduce(cx, &x, &init, 1, all, kiln_region_maximum(), &m);
    return m;
}

/* Windows of two elements along `axis` (1 along the others), padded at the end so that
 * there are as many windows as elements. */
static kiln_window_params windows_of_two(int rank, int axis) {
    kiln_window_params wp = {.window_dimensions = {.count = rank},
                             .padding_low = {.count = rank},
                             .padding_high = {.count = rank}};
    for (int d = 0; d < rank; d++)
        wp.window_dimensions.v[d] = d == axis ? 2 : 1;
    wp.padding_high.v[axis] = 1;
    return wp;
}

/* One exact step on v (dtype dt) with another value w of the same dtype and shape. */
static kiln_tensor *step(kiln_ctx *cx, rng *r, kiln_tensor *v, kiln_tensor *w, kiln_dtype dt) {
    if (!v || !w) return NULL; /* an earlier step failed: its error is in the ctx */
    int rank = kiln_tensor_rank(v);
    switch (pick(r, 14)) {
    case 0: return kiln_add(cx, v, w);
    case 1: return kiln_subtract(cx, v, w);
    case 2: return kiln_multiply(cx, v, kiln_scalar(cx, pick(r, 2) ? -1 : 2, dt));
    case 3: return kiln_maximum(cx, v, w);
    case 4: return kiln_minimum(cx, v, w);
    case 5:
        return kiln_select(
            cx, kiln_compare(cx, v, w, pick(r, 2) ? KILN_CMP_LT : KILN_CMP_GE, KILN_CMP_DEFAULT), v,
            w);
    case 6: return rank ? kiln_reverse(cx, v, KILN_DIMS(pick(r, rank))) : kiln_negate(cx, v);
    case 7: {
        kiln_tensor *m = max_all(cx, w);
        return m ? kiln_add(cx, v, kiln_broadcast_to(cx, m, *kiln_tensor_shape(v))) : NULL;
    }
    case 8: { /* sort along an axis (stable, ascending) */
        if (!rank) return kiln_maximum(cx, v, w);
        kiln_tensor *sorted = NULL;
        kiln_sort(cx, &v, 1, pick(r, rank), true, kiln_region_less(), &sorted);
        return sorted;
    }
    case 9: { /* a max over windows of two along an axis, padded to keep the shape */
        if (!rank) return kiln_minimum(cx, v, w);
        kiln_window_params wp = windows_of_two(rank, pick(r, rank));
        kiln_tensor *init = kiln_scalar(cx, -100, dt), *pooled = NULL;
        kiln_reduce_window(cx, &v, &init, 1, &wp, kiln_region_maximum(), &pooled);
        return pooled;
    }
    case 10: { /* a gather: the elements along an axis in reverse order */
        if (!rank) return kiln_subtract(cx, w, v);
        int axis = pick(r, rank);
        int64_t n = kiln_tensor_dim(v, axis);
        kiln_tensor *idx = kiln_subtract(cx, kiln_scalar(cx, (double)(n - 1), KILN_I64),
                                         kiln_iota(cx, KILN_I64, KILN_SHAPE(n), 0));
        return kiln_take(cx, v, idx, axis);
    }
    case 11: { /* a scatter adding w's rows into v's in reverse order (unique indices) */
        if (!rank) return kiln_maximum(cx, w, v);
        int64_t n = kiln_tensor_dim(v, 0);
        kiln_tensor *idx =
            kiln_reshape(cx,
                         kiln_subtract(cx, kiln_scalar(cx, (double)(n - 1), KILN_I64),
                                       kiln_iota(cx, KILN_I64, KILN_SHAPE(n), 0)),
                         KILN_SHAPE(n, 1));
        kiln_scatter_params sp = {.update_window_dims = {.count = rank - 1},
                                  .inserted_window_dims = KILN_DIMS(0),
                                  .scatter_dims_to_operand_dims = KILN_DIMS(0),
                                  .index_vector_dim = 1};
        for (int d = 1; d < rank; d++)
            sp.update_window_dims.v[d - 1] = d;
        kiln_tensor *out = NULL, *u = kiln_broadcast_to(cx, w, *kiln_tensor_shape(v));
        kiln_scatter(cx, &v, 1, idx, &u, &sp, kiln_region_add(), &out);
        return out;
    }
    case 12: { /* select_and_scatter: w's values added at each window's first maximum */
        if (!rank) return kiln_minimum(cx, w, v);
        kiln_window_params wp = windows_of_two(rank, pick(r, rank));
        kiln_tensor *u = kiln_broadcast_to(cx, w, *kiln_tensor_shape(v));
        return kiln_select_and_scatter(cx, v, u, kiln_scalar(cx, 0, dt), &wp,
                                       kiln_region_greater_equal(), kiln_region_add());
    }
    default: return kiln_add(cx, v, kiln_scalar(cx, 1 + pick(r, 3), dt));
    }
}

/* The carries' next values: a chain of 1..4 steps each, reading the other carries and the
 * function's values, seeded so that every call (eager: every iteration) makes the same. */
static kiln_status update(kiln_ctx *cx, const program *p, uint64_t salt, kiln_tensor *const *c,
                          kiln_tensor **out) {
    rng r = {p->seed ^ salt};
    next(&r);
    for (int j = 0; j < p->n_carries; j++) {
        kiln_dtype dt = p->carry_dtype[j];
        kiln_tensor *v = c[j];
        int n = 1 + pick(&r, 4);
        for (int k = 0; k < n; k++) {
            int src = pick(&r, p->n_carries + p->n_outer);
            kiln_tensor *w = src < p->n_carries ? c[src] : p->outer[src - p->n_carries];
            v = step(cx, &r, v, as_dtype(cx, w, dt), dt);
        }
        out[j] = v;
    }
    return kiln_ctx_status(cx);
}

typedef struct branch_env {
    const program *p;
    kiln_tensor *const *carries;
    uint64_t salt;
} branch_env;

static kiln_status branch(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)in;
    const branch_env *b = user;
    return update(cx, b->p, b->salt, b->carries, out);
}

static kiln_status inner_body(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    return update(cx, user, 0x1234, in + 1, out);
}

static kiln_status body(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    const program *p = user;
    kiln_tensor *next_c[3];
    kiln_status s = update(cx, p, 0xb0d7, in + 1, next_c);
    if (s != KILN_OK) return s;
    if (p->branch) {
        kiln_tensor *m = max_all(cx, next_c[0]);
        kiln_tensor *pred = kiln_compare(cx, m, kiln_scalar(cx, 2, p->carry_dtype[0]), KILN_CMP_GT,
                                         KILN_CMP_DEFAULT);
        branch_env t = {p, next_c, 0x7777}, f = {p, next_c, 0x8888};
        kiln_region rt = {branch, &t}, rf = {branch, &f};
        kiln_tensor *picked[3];
        if ((s = kiln_cond(cx, pred, &rt, &rf, NULL, 0, p->n_carries, picked)) != KILN_OK) return s;
        memcpy(next_c, picked, sizeof picked);
    }
    if (p->inner_loop) {
        kiln_region inner = {inner_body, (void *)p};
        kiln_tensor *looped[3];
        if ((s = kiln_fori_loop(cx, 0, p->inner_trip, next_c, p->n_carries, &inner, looped)) !=
            KILN_OK)
            return s;
        memcpy(next_c, looped, sizeof looped);
    }
    memcpy(out, next_c, (size_t)p->n_carries * sizeof *out);
    return kiln_ctx_status(cx);
}

/* The function: values for the body from the inputs, then the loop. */
static kiln_status program_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    program *p = user;
    for (int i = 0; i < p->n_outer; i++)
        p->outer[i] = kiln_add(cx, kiln_multiply(cx, in[i % p->n_carries], in[i % p->n_carries]),
                               kiln_scalar(cx, i + 1, p->carry_dtype[i % p->n_carries]));
    kiln_region b = {body, p};
    return kiln_fori_loop(cx, 0, p->trip, in, p->n_carries, &b, out);
}

static kiln_tensor *random_input(kiln_ctx *cx, rng *r, kiln_dtype dt, kiln_shape shape) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    double *v = malloc((size_t)n * sizeof *v);
    cr_assert(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)(pick(r, 17) - 8) / (is_float(dt) ? 4 : 1);
    kiln_tensor *t =
        kiln_convert(cx, kiln_tensor_from_host(cx, KILN_F64, shape, v, (size_t)n * sizeof *v), dt);
    free(v);
    return t;
}

/* Bit for bit, any NaN matching any NaN. */
static bool same(const kiln_tensor *a, const kiln_tensor *b, int64_t *where) {
    kiln_dtype dt = kiln_tensor_dtype(a);
    size_t es = kiln_dtype_size(dt), n = kiln_tensor_nbytes(a) / es;
    const unsigned char *x = kiln_tensor_data(a), *y = kiln_tensor_data(b);
    for (size_t i = 0; i < n; i++) {
        if (memcmp(x + i * es, y + i * es, es) == 0) continue;
        if (is_float(dt)) {
            double u = 0, w = 0;
            if (dt == KILN_F32) {
                float f, g;
                memcpy(&f, x + i * es, 4), memcpy(&g, y + i * es, 4);
                u = f, w = g;
            } else if (dt == KILN_F64) {
                memcpy(&u, x + i * es, 8), memcpy(&w, y + i * es, 8);
            } else {
                uint16_t f, g;
                memcpy(&f, x + i * es, 2), memcpy(&g, y + i * es, 2);
                u = dt == KILN_F16 ? kiln_f16_to_f32(f) : kiln_bf16_to_f32(f);
                w = dt == KILN_F16 ? kiln_f16_to_f32(g) : kiln_bf16_to_f32(g);
            }
            if (isnan(u) && isnan(w)) continue;
        }
        *where = (int64_t)i;
        return false;
    }
    return true;
}

static void run_one(kiln_ctx *cx, uint64_t seed) {
    program p;
    make_program(&p, seed);
    rng r = {seed + 99};
    kiln_scope_begin(cx);
    kiln_tensor *in[3];
    kiln_arg_spec specs[3];
    for (int i = 0; i < p.n_carries; i++) {
        in[i] = random_input(cx, &r, p.carry_dtype[i], p.shape);
        cr_assert(in[i], "seed %llu: %s", (unsigned long long)seed, kiln_ctx_error_message(cx));
        specs[i] = (kiln_arg_spec){.dtype = p.carry_dtype[i], .shape = p.shape};
    }
    kiln_tensor *want[3];
    kiln_status s = program_fn(cx, in, want, &p);
    cr_assert_eq(s, KILN_OK, "seed %llu: eager: %s", (unsigned long long)seed,
                 kiln_ctx_error_message(cx));
    kiln_region fn = {program_fn, &p};
    /* Compiled twice: with short loops unrolled (the default) and kept as loops. */
    for (int keep = 0; keep < 2; keep++) {
        kiln_module *m = NULL;
        kiln_exe *exe = NULL;
        cr_assert_eq(kiln_lower(cx, &fn, specs, p.n_carries, p.n_carries, NULL, &m), KILN_OK,
                     "seed %llu: lower: %s", (unsigned long long)seed, kiln_ctx_error_message(cx));
        kiln_compile_options o = kiln_compile_options_default();
        o.disable_unrolling = keep;
        cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "seed %llu: compile: %s",
                     (unsigned long long)seed, kiln_ctx_error_message(cx));
        kiln_tensor *got[3];
        cr_assert_eq(kiln_exe_call(cx, exe, in, got), KILN_OK, "seed %llu: call: %s",
                     (unsigned long long)seed, kiln_ctx_error_message(cx));
        for (int i = 0; i < p.n_carries; i++) {
            int64_t at = -1;
            if (same(want[i], got[i], &at)) continue;
            char *text = kiln_module_to_string(cx, m);
            fprintf(stderr,
                    "random_control: seed %llu (%s), result %d differs at element %lld\n%s\n",
                    (unsigned long long)seed, keep ? "loops kept" : "unrolled", i, (long long)at,
                    text ? text : "");
            kiln_string_free(cx, text);
            cr_assert_fail("seed %llu: compiled result %d differs from eager (rerun with "
                           "KILN_RPC_SEED=%llu KILN_RPC_COUNT=1)",
                           (unsigned long long)seed, i, (unsigned long long)seed);
        }
        kiln_exe_release(exe);
        kiln_module_release(m);
    }
    cr_assert_eq(kiln_scope_end(cx), KILN_OK);
}

Test(random_control, loops_branches_and_nested_bodies_match_eager) {
    kiln_ctx *cx = test_ctx();
    const char *seed_env = getenv("KILN_RPC_SEED"), *count_env = getenv("KILN_RPC_COUNT");
    uint64_t first = seed_env ? strtoull(seed_env, NULL, 10) : 1;
    long count = count_env ? strtol(count_env, NULL, 10) : RPC_COUNT;
    for (long i = 0; i < count; i++)
        run_one(cx, first + (uint64_t)i);
    expect_ok(cx);
    kiln_ctx_release(cx);
}
