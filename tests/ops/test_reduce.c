/* SPDX-License-Identifier: Apache-2.0 */
/* The reductions: reduce (builtin fast paths, custom and variadic regions), reduce_window,
 * select_and_scatter, and the numpy conveniences (sum, mean, prod, max, min, argmax,
 * argmin, logsumexp, softmax, log_softmax). Expected values are checked by hand or by a
 * straightforward reference written here from the spec's definitions. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/eval/eval_reduce.h"
#include "base/threads.h"
#include "core/element.h"
#include "failing_allocator.h"
#include "op_cases.h"
#include "test_util.h"

const kiln_op_coverage kiln_cover_reduce[] = {
    {KILN_OP_REDUCE, "reduce/reduce_conformance"},
    {KILN_OP_REDUCE_WINDOW, "reduce/reduce_window_conformance"},
    {KILN_OP_SELECT_AND_SCATTER, "reduce/select_and_scatter_conformance"},
    {KILN_OP_COUNT, NULL},
};

static const kiln_dtype ALL[] = {KILN_BOOL, KILN_I8,  KILN_I16, KILN_I32, KILN_I64,
                                 KILN_U8,   KILN_U16, KILN_U32, KILN_U64, KILN_F16,
                                 KILN_BF16, KILN_F32, KILN_F64};
#define N_ALL ((int)(sizeof ALL / sizeof ALL[0]))

/* ---- helpers --------------------------------------------------------------------------- */

static int64_t numel_of(kiln_shape s) {
    int64_t n = 1;
    for (int32_t d = 0; d < s.rank; d++)
        n *= s.dims[d];
    return n;
}

/* A tensor of dtype and shape holding v (converted as kiln__element_store does). */
static kiln_tensor *tensor(kiln_ctx *cx, kiln_dtype dt, kiln_shape shape, const double *v) {
    int64_t n = numel_of(shape);
    size_t nbytes = (size_t)n * kiln_dtype_size(dt);
    void *buf = malloc(nbytes ? nbytes : 1);
    cr_assert_not_null(buf);
    for (int64_t i = 0; i < n; i++)
        kiln__element_store(buf, dt, i, v[i]);
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, shape, buf, nbytes);
    free(buf);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

static kiln_tensor *scalar(kiln_ctx *cx, kiln_dtype dt, double v) {
    return tensor(cx, dt, KILN_SHAPE_SCALAR, &v);
}

/* v as the dtype stores it (rounded for f16/bf16, 0/1 for bool). */
static double as_dtype(kiln_dtype dt, double v) {
    unsigned char buf[8];
    kiln__element_store(buf, dt, 0, v);
    return kiln__element_load(buf, dt, 0);
}

/* Checks t's dtype, shape and values: exact (NaN matches NaN, the sign of zero counts)
 * when tol is 0, else within tol relative. */
static void expect_values(kiln_ctx *cx, const kiln_tensor *t, kiln_dtype dt, kiln_shape shape,
                          const double *want, double tol) {
    cr_assert_not_null(t, "no result: %s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_dtype(t), dt, "dtype %s, expected %s",
                 kiln_dtype_name(kiln_tensor_dtype(t)), kiln_dtype_name(dt));
    cr_assert(kiln_shape_equal(kiln_tensor_shape(t), &shape), "shape mismatch (%s)",
              kiln_dtype_name(dt));
    for (int64_t i = 0; i < numel_of(shape); i++) {
        double got = kiln_tensor_item(cx, t, i), w = want[i];
        if (isnan(w)) {
            cr_assert(isnan(got), "%s [%lld]: got %g, expected nan", kiln_dtype_name(dt),
                      (long long)i, got);
        } else if (tol == 0) {
            cr_assert(got == w && signbit(got) == signbit(w),
                      "%s [%lld]: got %.17g, expected %.17g", kiln_dtype_name(dt), (long long)i,
                      got, w);
        } else {
            cr_assert(fabs(got - w) <= tol * fmax(1.0, fabs(w)),
                      "%s [%lld]: got %.17g, expected %.17g", kiln_dtype_name(dt), (long long)i,
                      got, w);
        }
    }
}

/* One-input reduce returning the result (or NULL). */
static kiln_tensor *reduce1(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *init, kiln_dims dims,
                            const kiln_region *region) {
    kiln_tensor *out = NULL;
    kiln_status s = kiln_reduce(cx, &x, &init, 1, dims, region, &out);
    cr_assert_eq(s == KILN_OK, out != NULL);
    return out;
}

static kiln_tensor *window1(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *init,
                            const kiln_window_params *p, const kiln_region *region) {
    kiln_tensor *out = NULL;
    kiln_status s = kiln_reduce_window(cx, &x, &init, 1, p, region, &out);
    cr_assert_eq(s == KILN_OK, out != NULL);
    return out;
}

/* ---- test regions (built without other families' builders) ----------------------------- */

static double item(kiln_ctx *cx, kiln_tensor *t) { return kiln_tensor_item(cx, t, 0); }

/* acc * 10 + x on i64: the digits show the order of the fold. */
static kiln_status digits_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    int64_t acc, x;
    kiln_tensor_to_host(cx, a[0], &acc, sizeof acc);
    kiln_tensor_to_host(cx, a[1], &x, sizeof x);
    int64_t v = acc * 10 + x;
    r[0] = kiln_tensor_from_host(cx, KILN_I64, KILN_SHAPE_SCALAR, &v, sizeof v);
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}
static const kiln_region DIGITS = {digits_region, NULL};

/* a + 2 * b in a's dtype, computed in double. */
static kiln_status add2_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_scalar(cx, item(cx, a[0]) + 2 * item(cx, a[1]), kiln_tensor_dtype(a[0]));
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}
static const kiln_region ADD2 = {add2_region, NULL};

/* Plain add / max in double, rounded to the dtype: the generic path's cross-check of the
 * fast paths. */
static kiln_status slow_add_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    kiln_dtype dt = kiln_tensor_dtype(a[0]);
    double v = item(cx, a[0]) + item(cx, a[1]);
    if (dt == KILN_BOOL) v = v != 0;
    r[0] = kiln_scalar(cx, v, dt);
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}
static const kiln_region SLOW_ADD = {slow_add_region, NULL};

static kiln_status slow_max_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_scalar(cx, fmax(item(cx, a[0]), item(cx, a[1])), kiln_tensor_dtype(a[0]));
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}
static const kiln_region SLOW_MAX = {slow_max_region, NULL};

/* (value f32, index i32) pairs: keeps the larger value, the earlier index on ties. */
static kiln_status argmax_pair_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r,
                                      void *u) {
    (void)u;
    double av = item(cx, a[0]), ai = item(cx, a[1]), xv = item(cx, a[2]), xi = item(cx, a[3]);
    bool take = xv > av || (xv == av && xi < ai);
    r[0] = kiln_scalar(cx, take ? xv : av, KILN_F32);
    r[1] = kiln_scalar(cx, take ? xi : ai, KILN_I32);
    return r[0] && r[1] ? KILN_OK : kiln_ctx_status(cx);
}
static const kiln_region ARGMAX_PAIR = {argmax_pair_region, NULL};

/* Misbehaving regions. */
static kiln_status wrong_dtype_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r,
                                      void *u) {
    (void)a, (void)u;
    r[0] = kiln_scalar(cx, 1, KILN_F32);
    return KILN_OK;
}
static kiln_status wrong_rank_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r,
                                     void *u) {
    (void)u;
    r[0] = kiln_zeros(cx, kiln_tensor_dtype(a[0]), KILN_SHAPE(2));
    return KILN_OK;
}
static kiln_status no_result_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)cx, (void)a, (void)r, (void)u;
    return KILN_OK;
}
static kiln_status failing_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a, (void)r, (void)u;
    return kiln_ctx_set_error(cx, KILN_ABORTED, "the region gave up");
}
/* Returns its first argument after keeping a reference to it (released by the test). */
static kiln_status retaining_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    kiln_tensor **kept = u;
    if (!*kept) *kept = kiln_tensor_retain(a[0]);
    return slow_add_region(cx, a, r, NULL);
}

/* ---- reduce: conformance and hand-checked cases ---------------------------------------- */

Test(reduce, reduce_conformance) {
    /* stablehlo/tests/interpret/reduce.mlir */
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = tensor(cx, KILN_I64, KILN_SHAPE(1, 6), (double[]){0, 1, 2, 3, 4, 5});
    kiln_tensor *r = reduce1(cx, x, scalar(cx, KILN_I64, 0), KILN_DIMS(1), kiln_region_add());
    expect_values(cx, r, KILN_I64, KILN_SHAPE(1), (double[]){15}, 0);
    /* The same through a custom region (called per element). */
    r = reduce1(cx, x, scalar(cx, KILN_I64, 0), KILN_DIMS(1), &SLOW_ADD);
    expect_values(cx, r, KILN_I64, KILN_SHAPE(1), (double[]){15}, 0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

typedef struct kind_case {
    const kiln_region *(*region)(void);
    const char *name;
    double init, bool_init;
    bool ints_only;
} kind_case;

static double apply(const char *name, kiln_dtype dt, double a, double b) {
    bool is_bool = dt == KILN_BOOL;
    if (!strcmp(name, "add")) return is_bool ? (a != 0 || b != 0) : a + b;
    if (!strcmp(name, "multiply")) return is_bool ? (a != 0 && b != 0) : a * b;
    if (!strcmp(name, "maximum")) return fmax(a, b);
    if (!strcmp(name, "minimum")) return fmin(a, b);
    if (!strcmp(name, "and")) return (double)((int64_t)a & (int64_t)b);
    return (double)((int64_t)a | (int64_t)b);
}

static const kind_case KINDS[] = {
    {kiln_region_add, "add", 1, 0, false},         {kiln_region_multiply, "multiply", 2, 1, false},
    {kiln_region_maximum, "maximum", 2, 0, false}, {kiln_region_minimum, "minimum", 2, 1, false},
    {kiln_region_and, "and", 3, 1, true},          {kiln_region_or, "or", 4, 0, true},
};

/* A reference reduce over a row-major shape: folds in row-major order from init. */
static void ref_reduce(const kiln_shape *s, const double *x, const kiln_dims *dims, double init,
                       const char *kind, kiln_dtype dt, double *out, int64_t n_out) {
    bool red[KILN_MAX_RANK] = {false};
    for (int32_t i = 0; i < dims->count; i++)
        red[dims->v[i]] = true;
    for (int64_t o = 0; o < n_out; o++)
        out[o] = init;
    int64_t idx[KILN_MAX_RANK] = {0};
    for (int64_t i = 0; i < numel_of(*s); i++) {
        int64_t o = 0;
        for (int32_t d = 0; d < s->rank; d++)
            if (!red[d]) o = o * s->dims[d] + idx[d];
        out[o] = apply(kind, dt, out[o], x[i]);
        for (int32_t d = s->rank - 1; d >= 0; d--) {
            if (++idx[d] < s->dims[d]) break;
            idx[d] = 0;
        }
    }
}

static kiln_shape reduced_shape(kiln_shape s, const kiln_dims *dims) {
    bool red[KILN_MAX_RANK] = {false};
    for (int32_t i = 0; i < dims->count; i++)
        red[dims->v[i]] = true;
    kiln_shape r = {.rank = 0};
    for (int32_t d = 0; d < s.rank; d++)
        if (!red[d]) r.dims[r.rank++] = s.dims[d];
    return r;
}

/* Every builtin region on every dtype it allows, over several dims of a small tensor and a
 * larger one that exercises the lanes, pairwise sums and whole-row accumulation. */
static void check_builtin(kiln_ctx *cx, kiln_dtype dt, const kind_case *k, kiln_shape shape,
                          const double *v, kiln_dims dims, bool also_slow) {
    double init = dt == KILN_BOOL ? k->bool_init : k->init;
    kiln_tensor *x = tensor(cx, dt, shape, v);
    kiln_tensor *r = reduce1(cx, x, scalar(cx, dt, init), dims, k->region());
    kiln_shape rs = reduced_shape(shape, &dims);
    int64_t n_out = numel_of(rs);
    double *want = malloc((size_t)(n_out ? n_out : 1) * sizeof *want);
    ref_reduce(&shape, v, &dims, init, k->name, dt, want, n_out);
    for (int64_t i = 0; i < n_out; i++)
        want[i] = as_dtype(dt, want[i]);
    cr_log_info("%s on %s", k->name, kiln_dtype_name(dt));
    expect_values(cx, r, dt, rs, want, 0);
    if (also_slow && !strcmp(k->name, "add")) {
        r = reduce1(cx, x, scalar(cx, dt, init), dims, &SLOW_ADD);
        expect_values(cx, r, dt, rs, want, 0);
    }
    free(want);
}

Test(reduce, builtin_regions_on_every_dtype) {
    kiln_ctx *cx = test_ctx();
    const double small[6] = {1, 2, 1, 3, 1, 2}, bools[6] = {1, 0, 1, 1, 1, 0};
    const kiln_dims dims[] = {KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS(0, 1), KILN_DIMS(1, 0),
                              KILN_DIMS_NONE};
    for (int d = 0; d < N_ALL; d++) {
        kiln_dtype dt = ALL[d];
        for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
            if (KINDS[k].ints_only && kiln_dtype_is_float(dt)) continue;
            for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
                check_builtin(cx, dt, &KINDS[k], KILN_SHAPE(2, 3), dt == KILN_BOOL ? bools : small,
                              dims[i], true);
        }
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, builtin_regions_on_longer_runs) {
    kiln_ctx *cx = test_ctx();
    enum { R = 5, C = 137 };
    double *v = malloc(sizeof(double) * R * C), *b = malloc(sizeof(double) * R * C);
    for (int i = 0; i < R * C; i++) {
        v[i] = (i * 7) % 5;
        b[i] = (i % 3) != 0;
    }
    /* i32, i64, u16, u32, u64 and the floats hold these sums exactly; max/min/and/or are
     * exact everywhere. */
    for (int d = 0; d < N_ALL; d++) {
        kiln_dtype dt = ALL[d];
        bool wide = dt == KILN_I32 || dt == KILN_I64 || dt == KILN_U16 || dt == KILN_U32 ||
                    dt == KILN_U64 || kiln_dtype_is_float(dt) || dt == KILN_BOOL;
        for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
            if (KINDS[k].ints_only && kiln_dtype_is_float(dt)) continue;
            if (!strcmp(KINDS[k].name, "multiply") && dt != KILN_BOOL) continue;
            if (!strcmp(KINDS[k].name, "add") && !wide) continue;
            const double *x = dt == KILN_BOOL ? b : v;
            check_builtin(cx, dt, &KINDS[k], KILN_SHAPE(R, C), x, KILN_DIMS(0), false);
            check_builtin(cx, dt, &KINDS[k], KILN_SHAPE(R, C), x, KILN_DIMS(1), false);
            check_builtin(cx, dt, &KINDS[k], KILN_SHAPE(R * C), x, KILN_DIMS(0), false);
        }
    }
    free(v);
    free(b);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, wide_rows_and_many_rows) {
    /* 37 rows (blocks of 16 and a partial one in the pairwise tree) of 16500 columns (more
     * than one tile). */
    kiln_ctx *cx = test_ctx();
    enum { R = 37, C = 16500 };
    double *v = malloc(sizeof(double) * R * C);
    for (int i = 0; i < R * C; i++)
        v[i] = (i * 13) % 9 - 4;
    const kiln_dtype dts[] = {KILN_F32, KILN_F64, KILN_I32, KILN_BF16};
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
        for (int k = 0; k < 4; k++)
            if (k != 1)
                check_builtin(cx, dts[t], &KINDS[k], KILN_SHAPE(R, C), v, KILN_DIMS(0), false);
    free(v);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, f16_subnormals_and_extremes) {
    kiln_ctx *cx = test_ctx();
    /* 2^-24 is f16's smallest subnormal; 65504 its largest finite value. */
    double v[8] = {ldexp(1, -24), 3 * ldexp(1, -24),
                   ldexp(1, -15), -ldexp(1, -24),
                   ldexp(1, -14), 65504,
                   -65504,        -0.0};
    kiln_tensor *x = tensor(cx, KILN_F16, KILN_SHAPE(2, 4), v);
    expect_values(cx, reduce1(cx, x, scalar(cx, KILN_F16, 0), KILN_DIMS(1), kiln_region_add()),
                  KILN_F16, KILN_SHAPE(2),
                  /* in f32, 65504 absorbs 2^-14 */
                  (double[]){as_dtype(KILN_F16, 3 * ldexp(1, -24) + ldexp(1, -15)), 0}, 0);
    expect_values(
        cx, reduce1(cx, x, scalar(cx, KILN_F16, -INFINITY), KILN_DIMS(0), kiln_region_maximum()),
        KILN_F16, KILN_SHAPE(4), (double[]){ldexp(1, -14), 65504, ldexp(1, -15), -0.0}, 0);
    expect_values(
        cx, reduce1(cx, x, scalar(cx, KILN_F16, INFINITY), KILN_DIMS(0, 1), kiln_region_minimum()),
        KILN_F16, KILN_SHAPE_SCALAR, (double[]){-65504}, 0);
    /* 65504 + 65504 overflows f16 once rounded: inf. */
    kiln_tensor *big = tensor(cx, KILN_F16, KILN_SHAPE(2), (double[]){65504, 65504});
    expect_values(cx, reduce1(cx, big, scalar(cx, KILN_F16, 0), KILN_DIMS(0), kiln_region_add()),
                  KILN_F16, KILN_SHAPE_SCALAR, (double[]){INFINITY}, 0);
    expect_values(cx, kiln_argmin(cx, x, 1, false), KILN_I64, KILN_SHAPE(2), (double[]){3, 2}, 0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, any_set_of_dimensions) {
    kiln_ctx *cx = test_ctx();
    const kiln_shape shapes[] = {KILN_SHAPE(2, 3, 4), KILN_SHAPE(2, 1, 3, 1),
                                 KILN_SHAPE(3, 2, 2, 5)};
    const kiln_dims dims[][8] = {
        {KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS(2), KILN_DIMS(0, 2), KILN_DIMS(1, 2),
         KILN_DIMS(0, 1, 2), KILN_DIMS_NONE, KILN_DIMS(2, 0)},
        {KILN_DIMS(1), KILN_DIMS(1, 3), KILN_DIMS(1, 2), KILN_DIMS(0, 3), KILN_DIMS(0, 1, 2, 3),
         KILN_DIMS(2), KILN_DIMS(3), KILN_DIMS_NONE},
        {KILN_DIMS(0, 2), KILN_DIMS(1, 3), KILN_DIMS(0, 3), KILN_DIMS(0, 1, 3), KILN_DIMS(3),
         KILN_DIMS(2), KILN_DIMS(1), KILN_DIMS(0, 1, 2, 3)},
    };
    double v[60];
    for (int i = 0; i < 60; i++)
        v[i] = (i * 11) % 7 - 3;
    const kiln_dtype dts[] = {KILN_F32, KILN_I32, KILN_F16, KILN_I64, KILN_F64};
    for (size_t s = 0; s < 3; s++)
        for (int i = 0; i < 8; i++)
            for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
                for (int k = 0; k < 4; k++)
                    if (k != 1) /* multiply: see builtin_regions_on_every_dtype */
                        check_builtin(cx, dts[t], &KINDS[k], shapes[s], v, dims[s][i], k == 0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, float_sums_are_pairwise) {
    kiln_ctx *cx = test_ctx();
    enum { N = 1 << 20 };
    float *f = malloc(sizeof(float) * N);
    double exact = 0;
    for (int i = 0; i < N; i++) {
        f[i] = 0.1f + (float)(i % 10) * 1e-3f;
        exact += f[i];
    }
    /* A naive f32 loop is off by about 1e-3 relative here. */
    kiln_tensor *x = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(N), f, sizeof(float) * N);
    kiln_tensor *r = reduce1(cx, x, scalar(cx, KILN_F32, 0), KILN_DIMS(0), kiln_region_add());
    cr_assert_lt(fabs(item(cx, r) - exact) / exact, 1e-6, "got %.9g, want %.9g", item(cx, r),
                 exact);
    /* Over an outer axis: rows are summed pairwise too. */
    kiln_tensor *x2 =
        kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(N / 4, 4), f, sizeof(float) * N);
    r = reduce1(cx, x2, scalar(cx, KILN_F32, 0), KILN_DIMS(0), kiln_region_add());
    for (int c = 0; c < 4; c++) {
        double want = 0;
        for (int i = c; i < N; i += 4)
            want += f[i];
        cr_assert_lt(fabs(kiln_tensor_item(cx, r, c) - want) / want, 1e-6);
    }
    /* f64 too. */
    double *g = malloc(sizeof(double) * N);
    for (int i = 0; i < N; i++)
        g[i] = f[i];
    kiln_tensor *x3 = kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(N), g, sizeof(double) * N);
    r = reduce1(cx, x3, scalar(cx, KILN_F64, 0), KILN_DIMS(0), kiln_region_add());
    cr_assert_lt(fabs(item(cx, r) - exact) / exact, 1e-14);
    free(g);
    free(f);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, half_floats_accumulate_in_f32) {
    kiln_ctx *cx = test_ctx();
    enum { N = 4096 };
    /* f16 stops counting at 2048 (2048 + 1 rounds back), bf16 at 256. */
    kiln_tensor *h = kiln_ones(cx, KILN_F16, KILN_SHAPE(N));
    kiln_tensor *r = reduce1(cx, h, scalar(cx, KILN_F16, 0), KILN_DIMS(0), kiln_region_add());
    expect_values(cx, r, KILN_F16, KILN_SHAPE_SCALAR, (double[]){N}, 0);
    kiln_tensor *b = kiln_ones(cx, KILN_BF16, KILN_SHAPE(4, 1000));
    r = reduce1(cx, b, scalar(cx, KILN_BF16, 0), KILN_DIMS(1), kiln_region_add());
    expect_values(cx, r, KILN_BF16, KILN_SHAPE(4), (double[]){1000, 1000, 1000, 1000}, 0);
    r = reduce1(cx, b, scalar(cx, KILN_BF16, 0), KILN_DIMS(0, 1), kiln_region_add());
    expect_values(cx, r, KILN_BF16, KILN_SHAPE_SCALAR, (double[]){4000}, 0);
    /* Rounded once: f16's ulp at 1 is 2^-10, so adding 2^-11 (a tie) in f16 stays at 1;
     * 1 + 3 * 2^-11 in f32 rounds once to 1 + 2^-9. */
    double v[4] = {1, ldexp(1, -11), ldexp(1, -11), ldexp(1, -11)};
    kiln_tensor *t = tensor(cx, KILN_F16, KILN_SHAPE(4), v);
    r = reduce1(cx, t, scalar(cx, KILN_F16, 0), KILN_DIMS(0), kiln_region_add());
    expect_values(cx, r, KILN_F16, KILN_SHAPE_SCALAR, (double[]){1 + ldexp(1, -9)}, 0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, maximum_and_minimum_propagate_nan_and_order_zeros) {
    kiln_ctx *cx = test_ctx();
    const kiln_dtype floats[] = {KILN_F16, KILN_BF16, KILN_F32, KILN_F64};
    for (int i = 0; i < 4; i++) {
        kiln_dtype dt = floats[i];
        double v[12] = {1, NAN, 3, -INFINITY, -0.0, 0.0, 0.0, -0.0, 5, 4, 3, NAN};
        kiln_tensor *x = tensor(cx, dt, KILN_SHAPE(4, 3), v);
        kiln_tensor *mx =
            reduce1(cx, x, scalar(cx, dt, -INFINITY), KILN_DIMS(1), kiln_region_maximum());
        expect_values(cx, mx, dt, KILN_SHAPE(4), (double[]){NAN, 0.0, 5, NAN}, 0);
        kiln_tensor *mn =
            reduce1(cx, x, scalar(cx, dt, INFINITY), KILN_DIMS(1), kiln_region_minimum());
        expect_values(cx, mn, dt, KILN_SHAPE(4), (double[]){NAN, -INFINITY, -0.0, NAN}, 0);
        /* Over the outer axis (whole rows) too. */
        mx = reduce1(cx, x, scalar(cx, dt, -INFINITY), KILN_DIMS(0), kiln_region_maximum());
        expect_values(cx, mx, dt, KILN_SHAPE(3), (double[]){4, NAN, NAN}, 0);
        /* The init value takes part: a NaN init gives NaN; -0 and +0 are ordered. */
        mx = reduce1(cx, tensor(cx, dt, KILN_SHAPE(2), (double[]){-0.0, -0.0}), scalar(cx, dt, 0.0),
                     KILN_DIMS(0), kiln_region_maximum());
        expect_values(cx, mx, dt, KILN_SHAPE_SCALAR, (double[]){0.0}, 0);
        mn = reduce1(cx, tensor(cx, dt, KILN_SHAPE(2), (double[]){1, 2}), scalar(cx, dt, NAN),
                     KILN_DIMS(0), kiln_region_minimum());
        expect_values(cx, mn, dt, KILN_SHAPE_SCALAR, (double[]){NAN}, 0);
        /* A sum of -0s is -0. */
        kiln_tensor *s = reduce1(cx, tensor(cx, dt, KILN_SHAPE(3), (double[]){-0.0, -0.0, -0.0}),
                                 scalar(cx, dt, -0.0), KILN_DIMS(0), kiln_region_add());
        expect_values(cx, s, dt, KILN_SHAPE_SCALAR, (double[]){-0.0}, 0);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, integers_wrap) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *r = reduce1(cx, tensor(cx, KILN_I8, KILN_SHAPE(3), (double[]){100, 100, 100}),
                             scalar(cx, KILN_I8, 0), KILN_DIMS(0), kiln_region_add());
    expect_values(cx, r, KILN_I8, KILN_SHAPE_SCALAR, (double[]){44}, 0); /* 300 - 256 */
    r = reduce1(cx, tensor(cx, KILN_U16, KILN_SHAPE(2), (double[]){65535, 65535}),
                scalar(cx, KILN_U16, 1), KILN_DIMS(0), kiln_region_multiply());
    expect_values(cx, r, KILN_U16, KILN_SHAPE_SCALAR, (double[]){1}, 0); /* (2^16-1)^2 */
    int32_t big[2] = {INT32_MIN, -1};
    kiln_tensor *b = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(2), big, sizeof big);
    r = reduce1(cx, b, scalar(cx, KILN_I32, 1), KILN_DIMS(0), kiln_region_multiply());
    expect_values(cx, r, KILN_I32, KILN_SHAPE_SCALAR, (double[]){INT32_MIN}, 0);
    r = reduce1(cx, b, scalar(cx, KILN_I32, 0), KILN_DIMS(0), kiln_region_add());
    expect_values(cx, r, KILN_I32, KILN_SHAPE_SCALAR, (double[]){INT32_MAX}, 0);
    uint64_t u[3] = {UINT64_MAX, 7, UINT64_MAX - 1};
    kiln_tensor *ut = kiln_tensor_from_host(cx, KILN_U64, KILN_SHAPE(3), u, sizeof u);
    uint64_t got;
    r = reduce1(cx, ut, kiln_full_int(cx, KILN_U64, KILN_SHAPE_SCALAR, 0), KILN_DIMS(0),
                kiln_region_maximum());
    kiln_tensor_to_host(cx, r, &got, sizeof got);
    cr_assert_eq(got, UINT64_MAX);
    r = reduce1(cx, ut, kiln_full_int(cx, KILN_U64, KILN_SHAPE_SCALAR, 0), KILN_DIMS(0),
                kiln_region_add());
    kiln_tensor_to_host(cx, r, &got, sizeof got);
    cr_assert_eq(got, (uint64_t)4); /* 2^64 - 1 + 7 + 2^64 - 2 */
    int64_t s64[2] = {INT64_MIN, INT64_MAX};
    kiln_tensor *st = kiln_tensor_from_host(cx, KILN_I64, KILN_SHAPE(2), s64, sizeof s64);
    int64_t g64;
    r = reduce1(cx, st, kiln_full_int(cx, KILN_I64, KILN_SHAPE_SCALAR, 0), KILN_DIMS(0),
                kiln_region_minimum());
    kiln_tensor_to_host(cx, r, &g64, sizeof g64);
    cr_assert_eq(g64, INT64_MIN);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, empty_reductions_give_the_init_value) {
    kiln_ctx *cx = test_ctx();
    for (int d = 0; d < N_ALL; d++) {
        kiln_dtype dt = ALL[d];
        kiln_tensor *x = kiln_zeros(cx, dt, KILN_SHAPE(0, 3));
        kiln_tensor *init = scalar(cx, dt, 1);
        kiln_tensor *r = reduce1(cx, x, init, KILN_DIMS(0), kiln_region_add());
        expect_values(cx, r, dt, KILN_SHAPE(3), (double[]){1, 1, 1}, 0);
        r = reduce1(cx, x, init, KILN_DIMS(0), kiln_region_maximum());
        expect_values(cx, r, dt, KILN_SHAPE(3), (double[]){1, 1, 1}, 0);
        r = reduce1(cx, x, init, KILN_DIMS(0), &ADD2);
        expect_values(cx, r, dt, KILN_SHAPE(3), (double[]){1, 1, 1}, 0);
        /* An empty result. */
        r = reduce1(cx, x, init, KILN_DIMS(1), kiln_region_add());
        expect_values(cx, r, dt, KILN_SHAPE(0), NULL, 0);
        r = reduce1(cx, x, init, KILN_DIMS(1), &ADD2);
        expect_values(cx, r, dt, KILN_SHAPE(0), NULL, 0);
        r = reduce1(cx, x, init, KILN_DIMS(0, 1), kiln_region_multiply());
        expect_values(cx, r, dt, KILN_SHAPE_SCALAR, (double[]){1}, 0);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, rank_0_and_no_dimensions) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = scalar(cx, KILN_F32, 2.5);
    kiln_tensor *r = reduce1(cx, x, scalar(cx, KILN_F32, 1), KILN_DIMS_NONE, kiln_region_add());
    expect_values(cx, r, KILN_F32, KILN_SHAPE_SCALAR, (double[]){3.5}, 0);
    /* No dims: the region still combines each element with the init value. */
    kiln_tensor *y = tensor(cx, KILN_I64, KILN_SHAPE(3), (double[]){1, 2, 3});
    r = reduce1(cx, y, scalar(cx, KILN_I64, 4), KILN_DIMS_NONE, &DIGITS);
    expect_values(cx, r, KILN_I64, KILN_SHAPE(3), (double[]){41, 42, 43}, 0);
    r = reduce1(cx, y, scalar(cx, KILN_I64, 4), KILN_DIMS_NONE, kiln_region_multiply());
    expect_values(cx, r, KILN_I64, KILN_SHAPE(3), (double[]){4, 8, 12}, 0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, custom_regions_fold_in_row_major_order) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x =
        tensor(cx, KILN_I64, KILN_SHAPE(2, 2, 3), (double[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3});
    kiln_tensor *z = scalar(cx, KILN_I64, 0);
    expect_values(cx, reduce1(cx, x, z, KILN_DIMS(2), &DIGITS), KILN_I64, KILN_SHAPE(2, 2),
                  (double[]){123, 456, 789, 123}, 0);
    expect_values(cx, reduce1(cx, x, z, KILN_DIMS(0, 2), &DIGITS), KILN_I64, KILN_SHAPE(2),
                  (double[]){123789, 456123}, 0);
    expect_values(cx, reduce1(cx, x, z, KILN_DIMS(2, 0), &DIGITS), KILN_I64, KILN_SHAPE(2),
                  (double[]){123789, 456123}, 0);
    expect_values(cx, reduce1(cx, x, z, KILN_DIMS(0), &DIGITS), KILN_I64, KILN_SHAPE(2, 3),
                  (double[]){17, 28, 39, 41, 52, 63}, 0);
    expect_values(cx, reduce1(cx, x, scalar(cx, KILN_I64, 5), KILN_DIMS(1), &DIGITS), KILN_I64,
                  KILN_SHAPE(2, 3), (double[]){514, 525, 536, 571, 582, 593}, 0);
    /* a + 2b on every dtype: 1 + 2*(1 + 2 + 3) = 13 from init 1. */
    for (int d = 0; d < N_ALL; d++) {
        kiln_dtype dt = ALL[d];
        kiln_tensor *y = tensor(cx, dt, KILN_SHAPE(3), (double[]){1, 2, 3});
        double want = dt == KILN_BOOL ? 1 : 13;
        expect_values(cx, reduce1(cx, y, scalar(cx, dt, 1), KILN_DIMS(0), &ADD2), dt,
                      KILN_SHAPE_SCALAR, &want, 0);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, variadic_reduce) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *v = tensor(cx, KILN_F32, KILN_SHAPE(2, 4), (double[]){1, 7, 3, 7, -1, -2, -3, -4});
    kiln_tensor *i = kiln_iota(cx, KILN_I32, KILN_SHAPE(2, 4), 1);
    kiln_tensor *inputs[2] = {v, i};
    kiln_tensor *inits[2] = {scalar(cx, KILN_F32, -INFINITY), scalar(cx, KILN_I32, 0)};
    kiln_tensor *out[2];
    cr_assert_eq(kiln_reduce(cx, inputs, inits, 2, KILN_DIMS(1), &ARGMAX_PAIR, out), KILN_OK);
    expect_values(cx, out[0], KILN_F32, KILN_SHAPE(2), (double[]){7, -1}, 0);
    expect_values(cx, out[1], KILN_I32, KILN_SHAPE(2), (double[]){1, 0}, 0);
    cr_assert_eq(kiln_reduce(cx, inputs, inits, 2, KILN_DIMS(0), &ARGMAX_PAIR, out), KILN_OK);
    expect_values(cx, out[0], KILN_F32, KILN_SHAPE(4), (double[]){1, 7, 3, 7}, 0);
    expect_values(cx, out[1], KILN_I32, KILN_SHAPE(4), (double[]){0, 1, 2, 3}, 0);
    /* A builtin region cannot make two results. */
    cr_assert_neq(kiln_reduce(cx, inputs, inits, 2, KILN_DIMS(1), kiln_region_add(), out), KILN_OK);
    cr_assert_null(out[0]);
    cr_assert_null(out[1]);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_reduce: the builtin region 'add' combines 2 values into 1; reducing 2 "
                 "inputs needs a region of 4 arguments and 2 results");
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, region_failures_are_reported) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = tensor(cx, KILN_I64, KILN_SHAPE(3), (double[]){1, 2, 3});
    kiln_tensor *z = scalar(cx, KILN_I64, 0);
    const kiln_region wrong_dtype = {wrong_dtype_region, NULL},
                      wrong_rank = {wrong_rank_region, NULL}, none = {no_result_region, NULL},
                      failing = {failing_region, NULL}, no_fn = {NULL, NULL};
    cr_assert_null(reduce1(cx, x, z, KILN_DIMS(0), &wrong_dtype));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_reduce: region result 1 has type f32[]; "
                 "expected i64[]");
    cr_assert_null(reduce1(cx, x, z, KILN_DIMS(0), &wrong_rank));
    expect_error(cx, KILN_INVALID_ARGUMENT, "result 1 has type i64[2]; expected i64[]");
    cr_assert_null(reduce1(cx, x, z, KILN_DIMS(0), &none));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reduce: region returned no tensor for result 1");
    cr_assert_null(reduce1(cx, x, z, KILN_DIMS(0), &failing));
    expect_error(cx, KILN_ABORTED, "the region gave up");
    cr_assert_null(reduce1(cx, x, z, KILN_DIMS(0), &no_fn));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reduce: region has no function");
    /* A region that keeps an argument sees it unchanged afterwards. */
    kiln_tensor *kept = NULL;
    const kiln_region retaining = {retaining_region, &kept};
    expect_values(cx, reduce1(cx, x, z, KILN_DIMS(0), &retaining), KILN_I64, KILN_SHAPE_SCALAR,
                  (double[]){6}, 0);
    cr_assert_not_null(kept);
    cr_assert_eq(item(cx, kept), 0);
    kiln_tensor_release(kept);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, reduce_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2, 3));
    kiln_tensor *y = kiln_zeros(cx, KILN_F32, KILN_SHAPE(3, 2));
    kiln_tensor *z = scalar(cx, KILN_F32, 0);
    const kiln_region *add = kiln_region_add();
    cr_assert_null(reduce1(cx, x, z, KILN_DIMS(0, 0), add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reduce: dimensions repeats dimension 0");
    cr_assert_null(reduce1(cx, x, z, KILN_DIMS(2), add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reduce: dimensions[0] is 2; expected 0 to 1");
    cr_assert_null(reduce1(cx, x, z, KILN_DIMS(-1), add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "dimensions[0] is -1");
    cr_assert_null(reduce1(cx, x, kiln_zeros(cx, KILN_F32, KILN_SHAPE(1)), KILN_DIMS(0), add));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_reduce: init value 1 has type f32[1]; expected a rank-0 tensor");
    cr_assert_null(reduce1(cx, x, scalar(cx, KILN_F64, 0), KILN_DIMS(0), add));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_reduce: init value 1 has dtype f64; expected f32, the dtype of input 1");
    kiln_tensor *in2[2] = {x, y}, *init2[2] = {z, z}, *out[2] = {x, x};
    cr_assert_eq(kiln_reduce(cx, in2, init2, 2, KILN_DIMS(0), &ARGMAX_PAIR, out),
                 KILN_INVALID_ARGUMENT);
    cr_assert(out[0] == NULL && out[1] == NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_reduce: input 2 has type f32[3,2]; expected the shape of input 1");
    cr_assert_eq(kiln_reduce(cx, in2, init2, 0, KILN_DIMS(0), add, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reduce: n is 0");
    cr_assert_eq(kiln_reduce(cx, in2, init2, 1, KILN_DIMS(0), NULL, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reduce: region is NULL");
    cr_assert_eq(kiln_reduce(cx, NULL, init2, 1, KILN_DIMS(0), add, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reduce: inputs is NULL");
    kiln_tensor *nulls[2] = {x, NULL};
    cr_assert_eq(kiln_reduce(cx, nulls, init2, 2, KILN_DIMS(0), add, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reduce: inputs[1] is NULL");
    cr_assert_eq(kiln_reduce(cx, in2, nulls, 2, KILN_DIMS(0), add, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reduce: inits[1] is NULL");
    cr_assert_eq(kiln_reduce(cx, in2, init2, 1, KILN_DIMS(0), add, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reduce: out is NULL");
    kiln_dims too_many = {.count = KILN_MAX_RANK + 1};
    cr_assert_null(reduce1(cx, x, z, too_many, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "dimensions has 17 entries");
    /* The first error sticks; a NULL operand after it changes nothing. */
    cr_assert_null(reduce1(cx, x, z, KILN_DIMS(5), add));
    cr_assert_eq(kiln_reduce(cx, nulls, init2, 2, KILN_DIMS(0), add, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "dimensions[0] is 5");
    cr_assert_eq(kiln_reduce(NULL, in2, init2, 1, KILN_DIMS(0), add, out), KILN_INVALID_ARGUMENT);
    kiln_ctx_release(cx);
}

/* ---- reduce_window --------------------------------------------------------------------- */

Test(reduce, reduce_window_conformance) {
    /* stablehlo/tests/interpret/reduce_window.mlir */
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = tensor(cx, KILN_I64, KILN_SHAPE(3, 2), (double[]){1, 2, 3, 4, 5, 6});
    kiln_tensor *z = scalar(cx, KILN_I64, 0);
    kiln_window_params p = {
        .window_dimensions = KILN_DIMS(2, 1),
        .window_strides = KILN_DIMS(4, 1),
        .base_dilations = KILN_DIMS(2, 1),
        .window_dilations = KILN_DIMS(3, 1),
        .padding_low = KILN_DIMS(2, 0),
        .padding_high = KILN_DIMS(1, 0),
    };
    expect_values(cx, window1(cx, x, z, &p, kiln_region_add()), KILN_I64, KILN_SHAPE(2, 2),
                  (double[]){0, 0, 3, 4}, 0);
    expect_values(cx, window1(cx, x, z, &p, &SLOW_ADD), KILN_I64, KILN_SHAPE(2, 2),
                  (double[]){0, 0, 3, 4}, 0);
    p.window_dimensions = KILN_DIMS(3, 1); /* reduce_window_issue_1662 */
    expect_values(cx, window1(cx, x, z, &p, kiln_region_add()), KILN_I64, KILN_SHAPE(1, 2),
                  (double[]){5, 6}, 0);
    expect_values(cx, window1(cx, x, z, &p, &SLOW_ADD), KILN_I64, KILN_SHAPE(1, 2),
                  (double[]){5, 6}, 0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* The spec's reduce_window, directly: pad with init, slice each window, fold row-major. */
static void ref_window(const kiln_shape *s, const double *x, const kiln_window_params *p,
                       double init, const char *kind, kiln_dtype dt, const kiln_shape *out_shape,
                       double *out) {
    int32_t r = s->rank;
    int64_t n_out = numel_of(*out_shape), wn = 1;
    for (int32_t d = 0; d < r; d++)
        wn *= p->window_dimensions.v[d];
    int64_t j[KILN_MAX_RANK] = {0};
    for (int64_t o = 0; o < n_out; o++) {
        double acc = init;
        int64_t w[KILN_MAX_RANK] = {0};
        for (int64_t k = 0; k < wn; k++) {
            int64_t off = 0;
            bool pad = false;
            for (int32_t d = 0; d < r; d++) {
                int64_t q = j[d] * p->window_strides.v[d] + w[d] * p->window_dilations.v[d] -
                            p->padding_low.v[d];
                if (q < 0 || q % p->base_dilations.v[d] != 0 ||
                    q / p->base_dilations.v[d] >= s->dims[d])
                    pad = true;
                else
                    off = off * s->dims[d] + q / p->base_dilations.v[d];
            }
            acc = apply(kind, dt, acc, pad ? init : x[off]);
            for (int32_t d = r - 1; d >= 0; d--) {
                if (++w[d] < p->window_dimensions.v[d]) break;
                w[d] = 0;
            }
        }
        out[o] = as_dtype(dt, acc);
        for (int32_t d = r - 1; d >= 0; d--) {
            if (++j[d] < out_shape->dims[d]) break;
            j[d] = 0;
        }
    }
}

Test(reduce, reduce_window_every_dtype_and_geometry) {
    kiln_ctx *cx = test_ctx();
    const double v[12] = {1, 2, 0, 3, 1, 2, 2, 1, 3, 0, 1, 2};
    const double b[12] = {1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0};
    typedef struct {
        kiln_window_params p;
        kiln_shape out;
    } geo;
    const geo geos[] = {
        {{.window_dimensions = KILN_DIMS(2, 2)}, KILN_SHAPE(2, 3)},
        {{.window_dimensions = KILN_DIMS(2, 3), .window_strides = KILN_DIMS(1, 2)},
         KILN_SHAPE(2, 1)},
        {{.window_dimensions = KILN_DIMS(2, 2),
          .padding_low = KILN_DIMS(1, 0),
          .padding_high = KILN_DIMS(0, 2)},
         KILN_SHAPE(3, 5)},
        {{.window_dimensions = KILN_DIMS(1, 2), .padding_low = KILN_DIMS(-1, -1)},
         KILN_SHAPE(2, 2)},
        {{.window_dimensions = KILN_DIMS(2, 2),
          .base_dilations = KILN_DIMS(2, 1),
          .window_dilations = KILN_DIMS(1, 2),
          .padding_high = KILN_DIMS(1, 1)},
         KILN_SHAPE(5, 3)},
        {{.window_dimensions = KILN_DIMS(3, 1),
          .window_strides = KILN_DIMS(2, 3),
          .base_dilations = KILN_DIMS(1, 3),
          .padding_low = KILN_DIMS(2, 1),
          .padding_high = KILN_DIMS(2, 1)},
         KILN_SHAPE(3, 4)},
        {{.window_dimensions = KILN_DIMS(4, 1)}, KILN_SHAPE(0, 4)},
    };
    const kiln_shape shape = KILN_SHAPE(3, 4);
    for (int d = 0; d < N_ALL; d++) {
        kiln_dtype dt = ALL[d];
        const double *x = dt == KILN_BOOL ? b : v;
        kiln_tensor *t = tensor(cx, dt, shape, x);
        for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
            if (KINDS[k].ints_only && kiln_dtype_is_float(dt)) continue;
            if (!strcmp(KINDS[k].name, "multiply") && (dt == KILN_I8 || dt == KILN_U8)) continue;
            double init = dt == KILN_BOOL ? KINDS[k].bool_init : KINDS[k].init;
            for (size_t g = 0; g < sizeof geos / sizeof geos[0]; g++) {
                kiln_window_params p = geos[g].p;
                kiln_window_params full = p;
                kiln_dims *lists[] = {&full.window_strides, &full.base_dilations,
                                      &full.window_dilations, &full.padding_low,
                                      &full.padding_high};
                for (int l = 0; l < 5; l++)
                    if (lists[l]->count == 0) *lists[l] = l < 3 ? KILN_DIMS(1, 1) : KILN_DIMS(0, 0);
                double want[64];
                ref_window(&shape, x, &full, init, KINDS[k].name, dt, &geos[g].out, want);
                cr_log_info("%s %s geometry %zu", KINDS[k].name, kiln_dtype_name(dt), g);
                kiln_tensor *r = window1(cx, t, scalar(cx, dt, init), &p, KINDS[k].region());
                expect_values(cx, r, dt, geos[g].out, want, 0);
                if (k == 0) {
                    r = window1(cx, t, scalar(cx, dt, init), &full, &SLOW_ADD);
                    expect_values(cx, r, dt, geos[g].out, want, 0);
                }
            }
        }
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, reduce_window_cases) {
    kiln_ctx *cx = test_ctx();
    /* Max pooling 2x2 stride 2 on f32 with NaN and -0. */
    kiln_tensor *x =
        tensor(cx, KILN_F32, KILN_SHAPE(2, 4), (double[]){1, NAN, -0.0, -0.0, 3, 2, -0.0, 0.0});
    kiln_window_params pool = {.window_dimensions = KILN_DIMS(2, 2),
                               .window_strides = KILN_DIMS(2, 2)};
    expect_values(cx, window1(cx, x, scalar(cx, KILN_F32, -INFINITY), &pool, kiln_region_maximum()),
                  KILN_F32, KILN_SHAPE(1, 2), (double[]){NAN, 0.0}, 0);
    /* Padding elements take part as the init value: a sum with init 10. */
    kiln_tensor *y = tensor(cx, KILN_I32, KILN_SHAPE(3), (double[]){1, 2, 3});
    kiln_window_params padded = {.window_dimensions = KILN_DIMS(2),
                                 .padding_low = KILN_DIMS(1),
                                 .padding_high = KILN_DIMS(1)};
    expect_values(cx, window1(cx, y, scalar(cx, KILN_I32, 10), &padded, kiln_region_add()),
                  KILN_I32, KILN_SHAPE(4), (double[]){21, 13, 15, 23}, 0);
    /* Custom non-commutative region: the window folds in row-major order. */
    kiln_tensor *w = tensor(cx, KILN_I64, KILN_SHAPE(2, 3), (double[]){1, 2, 3, 4, 5, 6});
    kiln_window_params two = {.window_dimensions = KILN_DIMS(2, 2)};
    expect_values(cx, window1(cx, w, scalar(cx, KILN_I64, 0), &two, &DIGITS), KILN_I64,
                  KILN_SHAPE(1, 2), (double[]){1245, 2356}, 0);
    /* Rank 0: one window of one element. */
    kiln_window_params none = {.window_dimensions = KILN_DIMS_NONE};
    expect_values(cx,
                  window1(cx, scalar(cx, KILN_F16, 1.5), scalar(cx, KILN_F16, 2), &none,
                          kiln_region_multiply()),
                  KILN_F16, KILN_SHAPE_SCALAR, (double[]){3}, 0);
    /* An empty input with padding: every window is padding, whose elements are the init
     * value, reduced from the init value: 7 + 7. */
    kiln_window_params pad1 = {.window_dimensions = KILN_DIMS(1),
                               .padding_low = KILN_DIMS(1),
                               .padding_high = KILN_DIMS(1)};
    expect_values(cx,
                  window1(cx, kiln_zeros(cx, KILN_U8, KILN_SHAPE(0)), scalar(cx, KILN_U8, 7), &pad1,
                          kiln_region_add()),
                  KILN_U8, KILN_SHAPE(2), (double[]){14, 14}, 0);
    expect_values(cx,
                  window1(cx, kiln_zeros(cx, KILN_U8, KILN_SHAPE(0)), scalar(cx, KILN_U8, 7), &pad1,
                          &SLOW_MAX),
                  KILN_U8, KILN_SHAPE(2), (double[]){7, 7}, 0);
    /* A window larger than the padded input: no windows. */
    kiln_window_params big = {.window_dimensions = KILN_DIMS(4)};
    expect_values(cx, window1(cx, y, scalar(cx, KILN_I32, 0), &big, kiln_region_add()), KILN_I32,
                  KILN_SHAPE(0), NULL, 0);
    /* f16 sums round once. */
    kiln_tensor *h = tensor(cx, KILN_F16, KILN_SHAPE(4),
                            (double[]){1, ldexp(1, -11), ldexp(1, -11), ldexp(1, -11)});
    expect_values(cx, window1(cx, h, scalar(cx, KILN_F16, 0), &big, kiln_region_add()), KILN_F16,
                  KILN_SHAPE(1), (double[]){1 + ldexp(1, -9)}, 0);
    /* Variadic: (value, index) pairs. */
    kiln_tensor *vals = tensor(cx, KILN_F32, KILN_SHAPE(5), (double[]){3, 1, 4, 1, 5});
    kiln_tensor *idx = tensor(cx, KILN_I32, KILN_SHAPE(5), (double[]){0, 1, 2, 3, 4});
    kiln_tensor *in[2] = {vals, idx};
    kiln_tensor *inits[2] = {scalar(cx, KILN_F32, -INFINITY), scalar(cx, KILN_I32, 0)};
    kiln_tensor *out[2];
    kiln_window_params three = {.window_dimensions = KILN_DIMS(3)};
    cr_assert_eq(kiln_reduce_window(cx, in, inits, 2, &three, &ARGMAX_PAIR, out), KILN_OK);
    expect_values(cx, out[0], KILN_F32, KILN_SHAPE(3), (double[]){4, 4, 5}, 0);
    expect_values(cx, out[1], KILN_I32, KILN_SHAPE(3), (double[]){2, 2, 4}, 0);
    /* A region error stops it. */
    const kiln_region wrong = {wrong_dtype_region, NULL};
    cr_assert_null(window1(cx, y, scalar(cx, KILN_I32, 0), &padded, &wrong));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_reduce_window: region result 1 has type f32[]; expected i32[]");
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, reduce_window_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(3, 4));
    kiln_tensor *z = scalar(cx, KILN_F32, 0);
    const kiln_region *add = kiln_region_add();
    kiln_window_params p = {.window_dimensions = KILN_DIMS(2)};
    cr_assert_null(window1(cx, x, z, &p, add));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_reduce_window: window_dimensions has 1 entries; expected 2 (the rank)");
    p = (kiln_window_params){.window_dimensions = KILN_DIMS(2, 0)};
    cr_assert_null(window1(cx, x, z, &p, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "window_dimensions[1] is 0; expected at least 1");
    p = (kiln_window_params){.window_dimensions = KILN_DIMS(2, 2),
                             .window_strides = KILN_DIMS(1, 0)};
    cr_assert_null(window1(cx, x, z, &p, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "window_strides[1] is 0");
    p = (kiln_window_params){.window_dimensions = KILN_DIMS(2, 2),
                             .base_dilations = KILN_DIMS(0, 1)};
    cr_assert_null(window1(cx, x, z, &p, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "base_dilations[0] is 0");
    p = (kiln_window_params){.window_dimensions = KILN_DIMS(2, 2),
                             .window_dilations = KILN_DIMS(1, -2)};
    cr_assert_null(window1(cx, x, z, &p, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "window_dilations[1] is -2");
    p = (kiln_window_params){.window_dimensions = KILN_DIMS(2, 2), .padding_low = KILN_DIMS(1)};
    cr_assert_null(window1(cx, x, z, &p, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "padding_low has 1 entries; expected 2");
    p = (kiln_window_params){.window_dimensions = KILN_DIMS(2, 2),
                             .padding_high = KILN_DIMS(INT64_MAX, 0)};
    cr_assert_null(window1(cx, x, z, &p, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "the window of dimension 0 overflows");
    p = (kiln_window_params){.window_dimensions = KILN_DIMS(2, 2)};
    cr_assert_null(window1(cx, x, kiln_zeros(cx, KILN_F32, KILN_SHAPE(1)), &p, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "init value 1 has type f32[1]; expected a rank-0");
    cr_assert_null(window1(cx, x, scalar(cx, KILN_I32, 0), &p, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "init value 1 has dtype i32; expected f32");
    kiln_tensor *in[2] = {x, kiln_zeros(cx, KILN_F32, KILN_SHAPE(4, 3))}, *inits[2] = {z, z};
    kiln_tensor *out[2];
    cr_assert_eq(kiln_reduce_window(cx, in, inits, 2, &p, &ARGMAX_PAIR, out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "input 2 has type f32[4,3]; expected the shape");
    cr_assert_eq(kiln_reduce_window(cx, in, inits, 1, NULL, add, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reduce_window: params is NULL");
    cr_assert_eq(kiln_reduce_window(cx, in, inits, 1, &p, NULL, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reduce_window: region is NULL");
    cr_assert_eq(kiln_reduce_window(cx, in, inits, -1, &p, add, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reduce_window: n is -1");
    kiln_ctx_release(cx);
}

/* ---- select_and_scatter ---------------------------------------------------------------- */

Test(reduce, select_and_scatter_conformance) {
    /* stablehlo/tests/interpret/select_and_scatter.mlir */
    kiln_ctx *cx = test_ctx();
    kiln_tensor *op = tensor(cx, KILN_I64, KILN_SHAPE(4, 2), (double[]){1, 5, 2, 5, 3, 6, 4, 4});
    kiln_tensor *src = tensor(cx, KILN_I64, KILN_SHAPE(2, 2), (double[]){5, 6, 7, 8});
    kiln_window_params p = {.window_dimensions = KILN_DIMS(3, 1),
                            .window_strides = KILN_DIMS(2, 1),
                            .padding_low = KILN_DIMS(0, 0),
                            .padding_high = KILN_DIMS(1, 0)};
    kiln_tensor *r = kiln_select_and_scatter(cx, op, src, scalar(cx, KILN_I64, 0), &p,
                                             kiln_region_greater_equal(), kiln_region_add());
    const double want[8] = {0, 0, 0, 0, 5, 14, 7, 0};
    expect_values(cx, r, KILN_I64, KILN_SHAPE(4, 2), want, 0);
    r = kiln_select_and_scatter(cx, op, src, scalar(cx, KILN_I64, 0), &p,
                                kiln_region_greater_equal(), &SLOW_ADD);
    expect_values(cx, r, KILN_I64, KILN_SHAPE(4, 2), want, 0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* a <= b in double (a custom select: keeps the first minimum). */
static kiln_status le_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_scalar(cx, item(cx, a[0]) <= item(cx, a[1]), KILN_BOOL);
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}
static const kiln_region LE = {le_region, NULL};

Test(reduce, select_and_scatter_every_dtype) {
    kiln_ctx *cx = test_ctx();
    kiln_window_params p = {.window_dimensions = KILN_DIMS(2), .window_strides = KILN_DIMS(2)};
    for (int d = 0; d < N_ALL; d++) {
        kiln_dtype dt = ALL[d];
        bool is_bool = dt == KILN_BOOL;
        kiln_tensor *op =
            tensor(cx, dt, KILN_SHAPE(6),
                   is_bool ? (double[]){0, 1, 1, 1, 0, 0} : (double[]){1, 3, 3, 2, 2, 2});
        kiln_tensor *src = tensor(cx, dt, KILN_SHAPE(3), (double[]){1, 1, 1});
        kiln_tensor *init = scalar(cx, dt, 1);
        cr_log_info("%s", kiln_dtype_name(dt));
        const double ones[6] = {1, 1, 1, 1, 1, 1};
        /* >=: the first maximum of each window. */
        const double ge[6] = {1, 2, 2, 1, 2, 1};
        kiln_tensor *r = kiln_select_and_scatter(cx, op, src, init, &p, kiln_region_greater_equal(),
                                                 kiln_region_add());
        expect_values(cx, r, dt, KILN_SHAPE(6), is_bool ? ones : ge, 0);
        /* >: ties move on to the later element. */
        const double gt[6] = {1, 2, 2, 1, 1, 2};
        r = kiln_select_and_scatter(cx, op, src, init, &p, kiln_region_greater(),
                                    kiln_region_add());
        expect_values(cx, r, dt, KILN_SHAPE(6), is_bool ? ones : gt, 0);
        /* Custom select (<=: the first minimum) and scatter (a + 2b). */
        const double le[6] = {3, 1, 1, 3, 3, 1};
        r = kiln_select_and_scatter(cx, op, src, init, &p, &LE, &ADD2);
        expect_values(cx, r, dt, KILN_SHAPE(6), is_bool ? ones : le, 0);
        const double le_add[6] = {2, 1, 1, 2, 2, 1};
        r = kiln_select_and_scatter(cx, op, src, init, &p, kiln_region_less_equal(),
                                    kiln_region_add());
        expect_values(cx, r, dt, KILN_SHAPE(6), is_bool ? ones : le_add, 0);
        /* < with replace, from 0: the last minimum gets the source value. */
        const double lt_rep[6] = {1, 0, 0, 1, 0, 1};
        r = kiln_select_and_scatter(cx, op, src, scalar(cx, dt, 0), &p, kiln_region_less(),
                                    kiln_region_replace());
        expect_values(cx, r, dt, KILN_SHAPE(6), lt_rep, 0);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, select_and_scatter_cases) {
    kiln_ctx *cx = test_ctx();
    /* Overlapping windows selecting one element accumulate there, in source order:
     * digits shows scatter(result, source). */
    kiln_tensor *op = tensor(cx, KILN_I64, KILN_SHAPE(3), (double[]){1, 5, 2});
    kiln_tensor *src = tensor(cx, KILN_I64, KILN_SHAPE(2), (double[]){7, 8});
    kiln_window_params w2 = {.window_dimensions = KILN_DIMS(2)};
    expect_values(cx,
                  kiln_select_and_scatter(cx, op, src, scalar(cx, KILN_I64, 4), &w2,
                                          kiln_region_greater_equal(), &DIGITS),
                  KILN_I64, KILN_SHAPE(3), (double[]){4, 478, 4}, 0);
    expect_values(cx,
                  kiln_select_and_scatter(cx, op, src, scalar(cx, KILN_I64, 4), &w2,
                                          kiln_region_greater_equal(), kiln_region_multiply()),
                  KILN_I64, KILN_SHAPE(3), (double[]){4, 224, 4}, 0);
    /* Padding holds no candidates; a window of padding only scatters nothing. */
    kiln_window_params padded = {.window_dimensions = KILN_DIMS(2),
                                 .window_strides = KILN_DIMS(2),
                                 .padding_low = KILN_DIMS(3),
                                 .padding_high = KILN_DIMS(0)};
    kiln_tensor *src3 = tensor(cx, KILN_F32, KILN_SHAPE(3), (double[]){10, 20, 30});
    kiln_tensor *opf = tensor(cx, KILN_F32, KILN_SHAPE(3), (double[]){-1, -5, -2});
    expect_values(cx,
                  kiln_select_and_scatter(cx, opf, src3, scalar(cx, KILN_F32, 0), &padded,
                                          kiln_region_greater_equal(), kiln_region_add()),
                  KILN_F32, KILN_SHAPE(3), (double[]){20, 0, 30}, 0);
    /* NaN: select(NaN, x) is false, so the later element is taken. */
    kiln_tensor *nan_op = tensor(cx, KILN_F64, KILN_SHAPE(4), (double[]){NAN, 1, 2, NAN});
    kiln_tensor *src2 = tensor(cx, KILN_F64, KILN_SHAPE(2), (double[]){1, 2});
    kiln_window_params s2 = {.window_dimensions = KILN_DIMS(2), .window_strides = KILN_DIMS(2)};
    expect_values(cx,
                  kiln_select_and_scatter(cx, nan_op, src2, scalar(cx, KILN_F64, 0), &s2,
                                          kiln_region_greater_equal(), kiln_region_add()),
                  KILN_F64, KILN_SHAPE(4), (double[]){0, 1, 0, 2}, 0);
    /* f16 scatter-add rounds once. */
    kiln_tensor *h = tensor(cx, KILN_F16, KILN_SHAPE(3),
                            (double[]){ldexp(1, -11), ldexp(1, -11), ldexp(1, -11)});
    kiln_tensor *hop = tensor(cx, KILN_F16, KILN_SHAPE(3), (double[]){0, 9, 0});
    kiln_window_params all3 = {.window_dimensions = KILN_DIMS(3),
                               .padding_low = KILN_DIMS(1),
                               .padding_high = KILN_DIMS(1)};
    expect_values(cx,
                  kiln_select_and_scatter(cx, hop, h, scalar(cx, KILN_F16, 1), &all3,
                                          kiln_region_greater_equal(), kiln_region_add()),
                  KILN_F16, KILN_SHAPE(3), (double[]){1, 1 + ldexp(1, -9), 1}, 0);
    /* 2-D, and rank 0. */
    kiln_tensor *op2 = tensor(cx, KILN_I32, KILN_SHAPE(2, 4), (double[]){1, 2, 8, 3, 4, 0, 5, 6});
    kiln_tensor *src22 = tensor(cx, KILN_I32, KILN_SHAPE(1, 2), (double[]){10, 20});
    kiln_window_params pool = {.window_dimensions = KILN_DIMS(2, 2),
                               .window_strides = KILN_DIMS(2, 2)};
    expect_values(cx,
                  kiln_select_and_scatter(cx, op2, src22, scalar(cx, KILN_I32, 0), &pool,
                                          kiln_region_greater_equal(), kiln_region_add()),
                  KILN_I32, KILN_SHAPE(2, 4), (double[]){0, 0, 20, 0, 10, 0, 0, 0}, 0);
    kiln_window_params none = {.window_dimensions = KILN_DIMS_NONE};
    expect_values(cx,
                  kiln_select_and_scatter(cx, scalar(cx, KILN_U8, 3), scalar(cx, KILN_U8, 4),
                                          scalar(cx, KILN_U8, 5), &none, &LE, kiln_region_add()),
                  KILN_U8, KILN_SHAPE_SCALAR, (double[]){9}, 0);
    /* Empty operand. */
    expect_values(cx,
                  kiln_select_and_scatter(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(0)),
                                          kiln_zeros(cx, KILN_F32, KILN_SHAPE(0)),
                                          scalar(cx, KILN_F32, 0), &w2, kiln_region_greater_equal(),
                                          kiln_region_add()),
                  KILN_F32, KILN_SHAPE(0), NULL, 0);
    /* Region errors. */
    const kiln_region wrong = {wrong_dtype_region, NULL};
    cr_assert_null(kiln_select_and_scatter(cx, op, src, scalar(cx, KILN_I64, 0), &w2, &wrong,
                                           kiln_region_add()));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_select_and_scatter: select region result 1 has type f32[]; expected i1[]");
    cr_assert_null(kiln_select_and_scatter(cx, op, src, scalar(cx, KILN_I64, 0), &w2,
                                           kiln_region_greater_equal(), &wrong));
    expect_error(cx, KILN_INVALID_ARGUMENT, "scatter region result 1 has type f32[]");
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, select_and_scatter_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *op = kiln_zeros(cx, KILN_F32, KILN_SHAPE(4));
    kiln_tensor *src = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2));
    kiln_tensor *z = scalar(cx, KILN_F32, 0);
    const kiln_region *ge = kiln_region_greater_equal(), *add = kiln_region_add();
    kiln_window_params p = {.window_dimensions = KILN_DIMS(2), .window_strides = KILN_DIMS(2)};
    cr_assert_not_null(kiln_select_and_scatter(cx, op, src, z, &p, ge, add));
    kiln_window_params bad = p;
    bad.window_dilations = KILN_DIMS(2);
    cr_assert_null(kiln_select_and_scatter(cx, op, src, z, &bad, ge, add));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_select_and_scatter: window_dilations[0] is 2; select_and_scatter takes "
                 "no dilations");
    bad = p;
    bad.base_dilations = KILN_DIMS(3);
    cr_assert_null(kiln_select_and_scatter(cx, op, src, z, &bad, ge, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "base_dilations[0] is 3");
    bad = p;
    bad.window_strides = KILN_DIMS(1);
    cr_assert_null(kiln_select_and_scatter(cx, op, src, z, &bad, ge, add));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "source has type f32[2]; expected shape [3], the number of windows");
    cr_assert_null(
        kiln_select_and_scatter(cx, op, kiln_zeros(cx, KILN_F64, KILN_SHAPE(2)), z, &p, ge, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "source has dtype f64; expected f32");
    cr_assert_null(
        kiln_select_and_scatter(cx, op, src, kiln_zeros(cx, KILN_F32, KILN_SHAPE(1)), &p, ge, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "init value has type f32[1]; expected a rank-0");
    cr_assert_null(kiln_select_and_scatter(cx, op, src, scalar(cx, KILN_I8, 0), &p, ge, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "init value has dtype i8; expected f32");
    bad = (kiln_window_params){.window_dimensions = KILN_DIMS(0)};
    cr_assert_null(kiln_select_and_scatter(cx, op, src, z, &bad, ge, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "window_dimensions[0] is 0");
    cr_assert_null(kiln_select_and_scatter(cx, op, src, z, &p, NULL, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_select_and_scatter: select is NULL");
    cr_assert_null(kiln_select_and_scatter(cx, op, NULL, z, &p, ge, add));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_select_and_scatter: source is NULL");
    const kiln_region no_fn = {NULL, NULL};
    cr_assert_null(kiln_select_and_scatter(cx, op, src, z, &p, ge, &no_fn));
    expect_error(cx, KILN_INVALID_ARGUMENT, "scatter region has no function");
    kiln_ctx_release(cx);
}

/* ---- allocation failures --------------------------------------------------------------- */

typedef kiln_status (*alloc_case)(kiln_ctx *cx, kiln_tensor *const *in);

static kiln_status case_f16_two_passes(kiln_ctx *cx, kiln_tensor *const *in) {
    return kiln_reduce(cx, &in[0], &in[1], 1, KILN_DIMS(0, 2), kiln_region_add(),
                       &(kiln_tensor *){NULL});
}
static kiln_status case_custom(kiln_ctx *cx, kiln_tensor *const *in) {
    kiln_tensor *out;
    return kiln_reduce(cx, &in[0], &in[1], 1, KILN_DIMS(1), &SLOW_ADD, &out);
}
static kiln_status case_window(kiln_ctx *cx, kiln_tensor *const *in) {
    kiln_window_params p = {.window_dimensions = KILN_DIMS(2, 1, 2)};
    kiln_tensor *out;
    kiln_status s = kiln_reduce_window(cx, &in[0], &in[1], 1, &p, kiln_region_maximum(), &out);
    if (s != KILN_OK) return s;
    return kiln_reduce_window(cx, &in[0], &in[1], 1, &p, &SLOW_MAX, &out);
}
static kiln_status case_select_and_scatter(kiln_ctx *cx, kiln_tensor *const *in) {
    kiln_window_params p = {.window_dimensions = KILN_DIMS(1, 3, 1)};
    kiln_tensor *src = kiln_ones(cx, KILN_F16, KILN_SHAPE(2, 1, 4));
    if (!src) return kiln_ctx_status(cx);
    kiln_tensor *r = kiln_select_and_scatter(cx, in[0], src, in[1], &p, kiln_region_greater_equal(),
                                             kiln_region_add());
    if (!r) return kiln_ctx_status(cx);
    r = kiln_select_and_scatter(cx, in[0], src, in[1], &p, &LE, &SLOW_ADD);
    return r ? KILN_OK : kiln_ctx_status(cx);
}

Test(reduce, allocation_failures_leak_nothing) {
    const alloc_case cases[] = {case_f16_two_passes, case_custom, case_window,
                                case_select_and_scatter};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int64_t k = 0;; k++) {
            cr_assert_lt(k, 200, "case %zu never succeeds", c);
            failing_allocator fa;
            kiln_ctx *cx = failing_allocator_ctx(&fa);
            cr_assert_not_null(cx);
            double v[24];
            for (int i = 0; i < 24; i++)
                v[i] = i % 5;
            kiln_tensor *in[2] = {tensor(cx, KILN_F16, KILN_SHAPE(2, 3, 4), v),
                                  scalar(cx, KILN_F16, 0)};
            fa.fail_after = fa.allocations + k;
            kiln_status s = cases[c](cx, in);
            if (s != KILN_OK) {
                cr_assert_eq(s, KILN_RESOURCE_EXHAUSTED, "case %zu, k %lld: %s", c, (long long)k,
                             kiln_ctx_error_message(cx));
                cr_assert_gt(fa.failures, 0);
            }
            kiln_ctx_release(cx);
            cr_assert_eq(fa.live_blocks, 0, "case %zu, k %lld: %lld blocks leaked", c, (long long)k,
                         (long long)fa.live_blocks);
            if (s == KILN_OK) {
                cr_assert_gt(k, 2, "case %zu: no allocation failure was tried", c);
                break;
            }
        }
    }
}

/* ---- numpy conveniences ---------------------------------------------------------------- */

Test(reduce, sum_prod_max_min) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = tensor(cx, KILN_F32, KILN_SHAPE(2, 3), (double[]){1, 2, 3, 4, 5, 6});
    expect_values(cx, kiln_sum(cx, x, KILN_DIMS_NONE, false), KILN_F32, KILN_SHAPE_SCALAR,
                  (double[]){21}, 0);
    expect_values(cx, kiln_sum(cx, x, KILN_DIMS(-1), false), KILN_F32, KILN_SHAPE(2),
                  (double[]){6, 15}, 0);
    expect_values(cx, kiln_sum(cx, x, KILN_DIMS(0), true), KILN_F32, KILN_SHAPE(1, 3),
                  (double[]){5, 7, 9}, 0);
    expect_values(cx, kiln_sum(cx, x, KILN_DIMS_NONE, true), KILN_F32, KILN_SHAPE(1, 1),
                  (double[]){21}, 0);
    expect_values(cx, kiln_prod(cx, x, KILN_DIMS(1), false), KILN_F32, KILN_SHAPE(2),
                  (double[]){6, 120}, 0);
    expect_values(cx, kiln_max(cx, x, KILN_DIMS(0, -1), false), KILN_F32, KILN_SHAPE_SCALAR,
                  (double[]){6}, 0);
    expect_values(cx, kiln_min(cx, x, KILN_DIMS(-2), true), KILN_F32, KILN_SHAPE(1, 3),
                  (double[]){1, 2, 3}, 0);
    /* Every dtype keeps its dtype (bool sums count, as i64). */
    for (int d = 0; d < N_ALL; d++) {
        kiln_dtype dt = ALL[d];
        kiln_tensor *t = tensor(cx, dt, KILN_SHAPE(4), (double[]){1, 0, 1, 1});
        kiln_dtype sum_dt = dt == KILN_BOOL ? KILN_I64 : dt;
        expect_values(cx, kiln_sum(cx, t, KILN_DIMS_NONE, false), sum_dt, KILN_SHAPE_SCALAR,
                      (double[]){3}, 0);
        expect_values(cx, kiln_prod(cx, t, KILN_DIMS_NONE, false), sum_dt, KILN_SHAPE_SCALAR,
                      (double[]){0}, 0);
        expect_values(cx, kiln_max(cx, t, KILN_DIMS(0), false), dt, KILN_SHAPE_SCALAR,
                      (double[]){1}, 0);
        expect_values(cx, kiln_min(cx, t, KILN_DIMS(0), true), dt, KILN_SHAPE(1), (double[]){0}, 0);
    }
    /* Empty axes: sum 0, prod 1; max and min refuse unless the result is empty. */
    kiln_tensor *e = kiln_zeros(cx, KILN_I32, KILN_SHAPE(0, 2));
    expect_values(cx, kiln_sum(cx, e, KILN_DIMS(0), false), KILN_I32, KILN_SHAPE(2),
                  (double[]){0, 0}, 0);
    expect_values(cx, kiln_prod(cx, e, KILN_DIMS(0), false), KILN_I32, KILN_SHAPE(2),
                  (double[]){1, 1}, 0);
    expect_values(cx, kiln_max(cx, e, KILN_DIMS(1), false), KILN_I32, KILN_SHAPE(0), NULL, 0);
    cr_assert_null(kiln_max(cx, e, KILN_DIMS(0), false));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_max: axis 0 has size 0, and the maximum of an empty axis is undefined");
    cr_assert_null(kiln_min(cx, e, KILN_DIMS_NONE, false));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_min: axis 0 has size 0");
    /* Axis errors. */
    cr_assert_null(kiln_sum(cx, x, KILN_DIMS(2), false));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_sum: axis 2 is out of range for rank 2");
    cr_assert_null(kiln_prod(cx, x, KILN_DIMS(-3), false));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_prod: axis -3 is out of range for rank 2");
    cr_assert_null(kiln_max(cx, x, KILN_DIMS(1, -1), false));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_max: axis -1 is repeated");
    cr_assert_null(kiln_sum(cx, NULL, KILN_DIMS(0), false));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_sum: x is NULL");
    cr_assert_null(kiln_sum(NULL, x, KILN_DIMS(0), false));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, mean) {
    kiln_ctx *cx = test_ctx();
    const kiln_dtype floats[] = {KILN_F16, KILN_BF16, KILN_F32, KILN_F64};
    for (int i = 0; i < 4; i++) {
        kiln_tensor *x =
            tensor(cx, floats[i], KILN_SHAPE(2, 4), (double[]){1, 2, 3, 4, 5, 6, 7, 9});
        expect_values(cx, kiln_mean(cx, x, KILN_DIMS(1), false), floats[i], KILN_SHAPE(2),
                      (double[]){2.5, 6.75}, 0);
        expect_values(cx, kiln_mean(cx, x, KILN_DIMS_NONE, true), floats[i], KILN_SHAPE(1, 1),
                      (double[]){4.625}, 0);
        expect_values(cx, kiln_mean(cx, x, KILN_DIMS(0), false), floats[i], KILN_SHAPE(4),
                      (double[]){3, 4, 5, 6.5}, 0);
    }
    /* f16 means are summed in f32: 4096 ones would stop at 2048 in f16. */
    expect_values(cx,
                  kiln_mean(cx, kiln_ones(cx, KILN_F16, KILN_SHAPE(4096)), KILN_DIMS_NONE, false),
                  KILN_F16, KILN_SHAPE_SCALAR, (double[]){1}, 0);
    expect_values(cx, kiln_mean(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(0)), KILN_DIMS_NONE, false),
                  KILN_F32, KILN_SHAPE_SCALAR, (double[]){NAN}, 0);
    cr_assert_null(kiln_mean(cx, kiln_zeros(cx, KILN_I32, KILN_SHAPE(2)), KILN_DIMS_NONE, false));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_mean: x has dtype i32; expected a float dtype (convert it first)");
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, argmax_argmin) {
    kiln_ctx *cx = test_ctx();
    for (int d = 0; d < N_ALL; d++) {
        kiln_dtype dt = ALL[d];
        bool is_bool = dt == KILN_BOOL;
        kiln_tensor *x = tensor(cx, dt, KILN_SHAPE(2, 4),
                                is_bool ? (double[]){0, 1, 1, 0, 1, 1, 0, 0}
                                        : (double[]){1, 3, 3, 0, 2, 0, 0, 2});
        cr_log_info("%s", kiln_dtype_name(dt));
        expect_values(cx, kiln_argmax(cx, x, 1, false), KILN_I64, KILN_SHAPE(2),
                      is_bool ? (double[]){1, 0} : (double[]){1, 0}, 0);
        expect_values(cx, kiln_argmin(cx, x, -1, false), KILN_I64, KILN_SHAPE(2),
                      is_bool ? (double[]){0, 2} : (double[]){3, 1}, 0);
        expect_values(cx, kiln_argmax(cx, x, 0, true), KILN_I64, KILN_SHAPE(1, 4),
                      is_bool ? (double[]){1, 0, 0, 0} : (double[]){1, 0, 0, 1}, 0);
        expect_values(cx, kiln_argmin(cx, x, -2, false), KILN_I64, KILN_SHAPE(4),
                      is_bool ? (double[]){0, 0, 1, 0} : (double[]){0, 1, 1, 0}, 0);
    }
    /* Extremes of the dtype, and NaN (the first NaN wins, for both). */
    int8_t lo[3] = {INT8_MIN, INT8_MIN, 5};
    kiln_tensor *l = kiln_tensor_from_host(cx, KILN_I8, KILN_SHAPE(3), lo, sizeof lo);
    expect_values(cx, kiln_argmin(cx, l, 0, false), KILN_I64, KILN_SHAPE_SCALAR, (double[]){0}, 0);
    const kiln_dtype floats[] = {KILN_F16, KILN_BF16, KILN_F32, KILN_F64};
    for (int i = 0; i < 4; i++) {
        kiln_tensor *f = tensor(cx, floats[i], KILN_SHAPE(2, 4),
                                (double[]){-INFINITY, -INFINITY, 2, NAN, 1, -0.0, 0.0, -1});
        expect_values(cx, kiln_argmax(cx, f, 1, false), KILN_I64, KILN_SHAPE(2), (double[]){3, 0},
                      0);
        expect_values(cx, kiln_argmin(cx, f, 1, false), KILN_I64, KILN_SHAPE(2), (double[]){3, 3},
                      0);
        expect_values(cx, kiln_argmax(cx, f, 0, false), KILN_I64, KILN_SHAPE(4),
                      (double[]){1, 1, 0, 0}, 0);
    }
    kiln_tensor *neg = tensor(cx, KILN_F32, KILN_SHAPE(3), (double[]){-0.0, 0.0, -0.0});
    expect_values(cx, kiln_argmax(cx, neg, 0, false), KILN_I64, KILN_SHAPE_SCALAR, (double[]){0},
                  0);
    kiln_tensor *inf = tensor(cx, KILN_F32, KILN_SHAPE(2), (double[]){INFINITY, INFINITY});
    expect_values(cx, kiln_argmin(cx, inf, 0, false), KILN_I64, KILN_SHAPE_SCALAR, (double[]){0},
                  0);
    /* Errors. */
    kiln_tensor *e = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2, 0));
    expect_values(cx, kiln_argmax(cx, e, 0, false), KILN_I64, KILN_SHAPE(0), NULL, 0);
    cr_assert_null(kiln_argmax(cx, e, 1, false));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_argmax: axis 1 has size 0");
    cr_assert_null(kiln_argmin(cx, scalar(cx, KILN_F32, 1), 0, false));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_argmin: axis 0 is out of range for rank 0");
    cr_assert_null(kiln_argmax(cx, e, 2, false));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_argmax: axis 2 is out of range for rank 2");
    cr_assert_null(kiln_argmax(cx, NULL, 0, false));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_argmax: x is NULL");
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, logsumexp_softmax_log_softmax) {
    kiln_ctx *cx = test_ctx();
    const double v[6] = {1, 2, 3, 1000, 1001, 1002};
    const kiln_dtype floats[] = {KILN_F32, KILN_F64, KILN_F16, KILN_BF16};
    const double tols[] = {1e-6, 1e-12, 1e-3, 1e-2};
    for (int i = 0; i < 4; i++) {
        kiln_dtype dt = floats[i];
        double tol = tols[i];
        /* The reference, in double from the stored values. */
        double lse[2], sm[6], lsm[6];
        for (int row = 0; row < 2; row++) {
            double x[3], m = -INFINITY, s = 0;
            for (int j = 0; j < 3; j++) {
                x[j] = as_dtype(dt, v[3 * row + j]);
                m = fmax(m, x[j]);
            }
            for (int j = 0; j < 3; j++)
                s += exp(x[j] - m);
            lse[row] = m + log(s);
            for (int j = 0; j < 3; j++) {
                sm[3 * row + j] = exp(x[j] - lse[row]);
                lsm[3 * row + j] = x[j] - lse[row];
            }
        }
        cr_log_info("%s", kiln_dtype_name(dt));
        kiln_tensor *x = tensor(cx, dt, KILN_SHAPE(2, 3), v);
        expect_values(cx, kiln_logsumexp(cx, x, KILN_DIMS(1), false), dt, KILN_SHAPE(2), lse, tol);
        expect_values(cx, kiln_logsumexp(cx, x, KILN_DIMS(-1), true), dt, KILN_SHAPE(2, 1), lse,
                      tol);
        expect_values(cx, kiln_softmax(cx, x, 1), dt, KILN_SHAPE(2, 3), sm, tol);
        expect_values(cx, kiln_log_softmax(cx, x, -1), dt, KILN_SHAPE(2, 3), lsm, tol);
    }
    const double lse3 = log(exp(-2.0) + exp(-1.0) + 1.0);
    /* Rows of -inf: logsumexp -inf; a single +inf: logsumexp inf. */
    kiln_tensor *inf =
        tensor(cx, KILN_F32, KILN_SHAPE(2, 2), (double[]){-INFINITY, -INFINITY, INFINITY, 1});
    expect_values(cx, kiln_logsumexp(cx, inf, KILN_DIMS(1), false), KILN_F32, KILN_SHAPE(2),
                  (double[]){-INFINITY, INFINITY}, 0);
    /* All axes; an empty axis gives -inf. */
    kiln_tensor *x = tensor(cx, KILN_F64, KILN_SHAPE(2, 3), v);
    expect_values(cx, kiln_logsumexp(cx, x, KILN_DIMS_NONE, false), KILN_F64, KILN_SHAPE_SCALAR,
                  (double[]){1002 + lse3}, 1e-14);
    expect_values(
        cx, kiln_logsumexp(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(0)), KILN_DIMS_NONE, false),
        KILN_F32, KILN_SHAPE_SCALAR, (double[]){-INFINITY}, 0);
    cr_assert_null(kiln_softmax(cx, kiln_zeros(cx, KILN_I32, KILN_SHAPE(2)), 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_softmax: x has dtype i32; expected a float");
    cr_assert_null(kiln_log_softmax(cx, x, 2));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_log_softmax: axis 2 is out of range for rank 2");
    cr_assert_null(kiln_logsumexp(cx, NULL, KILN_DIMS_NONE, false));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_logsumexp: x is NULL");
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- the contiguous f32/f64 kernels (kiln__reduce_f32/f64) ------------------------------- */

typedef struct {
    int64_t O, R, I;
} ori;

/* Deterministic values in [-1, 1) (a multiplicative hash), or near 1 for products so that
 * long products stay finite. */
static double hashed(int64_t i, bool for_product) {
    uint64_t h = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15u;
    double u = (double)(h >> 11) / 9007199254740992.0 * 2 - 1;
    return for_product ? 1 + u / 64 : u;
}

static const kiln__region_kind KERNEL_KINDS[4] = {KILN_REGION_ADD, KILN_REGION_MULTIPLY,
                                                  KILN_REGION_MAXIMUM, KILN_REGION_MINIMUM};

/* Runs kind over [O, R, I] of f32 (f64 when wide) values; out gets O*I results as doubles. */
static void run_kernel(kiln__region_kind kind, bool wide, ori s, const double *v, double *out,
                       bool parallel) {
    const int64_t n = s.O * s.R * s.I, m = s.O * s.I;
    if (wide) {
        double *r = malloc(sizeof(double) * (size_t)(m ? m : 1));
        cr_assert(kiln__reduce_f64(kind, v, s.O, s.R, s.I, r, parallel));
        for (int64_t i = 0; i < m; i++)
            out[i] = r[i];
        free(r);
    } else {
        float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
        float *r = malloc(sizeof(float) * (size_t)(m ? m : 1));
        for (int64_t i = 0; i < n; i++)
            x[i] = (float)v[i];
        cr_assert(kiln__reduce_f32(kind, x, s.O, s.R, s.I, r, parallel));
        for (int64_t i = 0; i < m; i++)
            out[i] = r[i];
        free(x);
        free(r);
    }
}

/* The reference: the straightforward fold of the spec, in long double for sums and
 * products; maximum/minimum by comparison (NaN wins; -0 < +0). */
static double ref_kernel(kiln__region_kind kind, bool wide, ori s, const double *v, int64_t o,
                         int64_t i) {
    long double acc = kind == KILN_REGION_MULTIPLY ? 1.0L : -0.0L; /* -0: the sum's identity */
    double ext = kind == KILN_REGION_MAXIMUM ? -INFINITY : INFINITY;
    for (int64_t r = 0; r < s.R; r++) {
        double x = v[(o * s.R + r) * s.I + i];
        if (!wide) x = (float)x;
        switch (kind) {
        case KILN_REGION_ADD: acc += x; break;
        case KILN_REGION_MULTIPLY: acc *= x; break;
        case KILN_REGION_MAXIMUM:
            if (isnan(x) || isnan(ext))
                ext = NAN;
            else if (x > ext || (x == 0 && ext == 0 && !signbit(x)))
                ext = x;
            break;
        default:
            if (isnan(x) || isnan(ext))
                ext = NAN;
            else if (x < ext || (x == 0 && ext == 0 && signbit(x)))
                ext = x;
        }
    }
    if (kind == KILN_REGION_ADD || kind == KILN_REGION_MULTIPLY) {
        return (double)acc;
    }
    return ext;
}

Test(reduce, kernels_match_a_reference) {
    /* All (odd lengths around the pairwise tree's leaves), rows, columns (with more rows than
     * one block of 16, and a partial one), a middle axis, and empty cases. */
    const ori shapes[] = {{1, 1, 1},     {1, 7, 1},     {1, 129, 1}, {1, 100003, 1},
                          {37, 1029, 1}, {1, 1029, 67}, {1, 16, 40}, {3, 70, 45},
                          {2, 33, 1},    {1, 0, 5},     {4, 0, 1},   {2, 5, 0}};
    for (int wide = 0; wide < 2; wide++)
        for (int k = 0; k < 4; k++)
            for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
                const kiln__region_kind kind = KERNEL_KINDS[k];
                const ori s = shapes[c];
                const int64_t n = s.O * s.R * s.I, m = s.O * s.I;
                double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
                double *got = malloc(sizeof(double) * (size_t)(m ? m : 1));
                for (int64_t i = 0; i < n; i++)
                    v[i] = hashed(i, kind == KILN_REGION_MULTIPLY);
                run_kernel(kind, wide, s, v, got, true);
                for (int64_t o = 0; o < s.O; o++)
                    for (int64_t i = 0; i < s.I; i++) {
                        const double want = ref_kernel(kind, wide, s, v, o, i);
                        const double g = got[o * s.I + i];
                        /* Sums and products: the error of a pairwise/blocked fold is far
                         * below these bounds; extremes are exact. */
                        const double tol =
                            kind == KILN_REGION_MAXIMUM || kind == KILN_REGION_MINIMUM ? 0
                            : wide ? 1e-12 * (fabs(want) + 1)
                                   : 1e-4 * (fabs(want) + 1);
                        cr_assert((g == want || fabs(g - want) <= tol) &&
                                      signbit(g) == signbit(want),
                                  "kind %d, %s, [%lld,%lld,%lld] at (%lld,%lld): got %.17g, want "
                                  "%.17g",
                                  (int)kind, wide ? "f64" : "f32", (long long)s.O, (long long)s.R,
                                  (long long)s.I, (long long)o, (long long)i, g, want);
                    }
                free(v);
                free(got);
            }
}

Test(reduce, kernels_propagate_nan_and_order_signed_zeros) {
    /* Rows of a [4, 40] block: a NaN in row 0, -0/+0 only in row 1, -0 only in row 2. Over
     * the rows (I == 1) and, transposed, over the columns (I > 1). */
    enum { O = 4, R = 40 };
    double v[O * R], t[R * O];
    for (int o = 0; o < O; o++)
        for (int r = 0; r < R; r++)
            v[o * R + r] = o == 1 ? (r % 2 ? 0.0 : -0.0) : o == 2 ? -0.0 : hashed(o * R + r, 0);
    v[0 * R + 17] = NAN;
    for (int o = 0; o < O; o++)
        for (int r = 0; r < R; r++)
            t[r * O + o] = v[o * R + r];
    for (int wide = 0; wide < 2; wide++)
        for (int k = 0; k < 4; k++) {
            double a[O], b[O];
            run_kernel(KERNEL_KINDS[k], wide, (ori){O, R, 1}, v, a, false);
            run_kernel(KERNEL_KINDS[k], wide, (ori){1, R, O}, t, b, false);
            for (int o = 0; o < 3; o++) { /* rows 0-2: NaN and zeros, exact for every kind */
                const double want = ref_kernel(KERNEL_KINDS[k], wide, (ori){O, R, 1}, v, o, 0);
                cr_assert(isnan(want)
                              ? isnan(a[o]) && isnan(b[o])
                              : a[o] == want && b[o] == want && signbit(a[o]) == signbit(want) &&
                                    signbit(b[o]) == signbit(want),
                          "kind %d row %d: got %g / %g, want %g", (int)KERNEL_KINDS[k], o, a[o],
                          b[o], want);
            }
        }
}

/* Every kind on f32 and f64, over shapes big enough to be split across threads: the
 * results with 1, 2 and 3 threads, without splitting, and with the baseline-ISA kernels
 * are bitwise the same. */
Test(reduce, kernels_are_bitwise_the_same_for_every_thread_count_and_isa) {
    const ori shapes[] = {{1, 300007, 1}, {129, 1031, 1}, {1, 700, 517}, {5, 100, 301}};
    for (int wide = 0; wide < 2; wide++)
        for (int k = 0; k < 4; k++)
            for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
                const ori s = shapes[c];
                const int64_t n = s.O * s.R * s.I, m = s.O * s.I;
                double *v = malloc(sizeof(double) * (size_t)n);
                double *first = malloc(sizeof(double) * (size_t)m);
                double *again = malloc(sizeof(double) * (size_t)m);
                for (int64_t i = 0; i < n; i++)
                    v[i] = hashed(i, KERNEL_KINDS[k] == KILN_REGION_MULTIPLY);
                kiln__threads_set_count(1);
                run_kernel(KERNEL_KINDS[k], wide, s, v, first, true);
                for (int variant = 0; variant < 4; variant++) {
                    /* 2 and 3 threads; unsplit (parallel = false) on 2 threads; baseline */
                    kiln__threads_set_count(variant == 1 ? 3 : 2);
                    kiln__reduce_force_baseline(variant == 3);
                    run_kernel(KERNEL_KINDS[k], wide, s, v, again, variant != 2);
                    kiln__reduce_force_baseline(false);
                    cr_assert(memcmp(first, again, sizeof(double) * (size_t)m) == 0,
                              "kind %d, %s, [%lld,%lld,%lld], variant %d differs",
                              (int)KERNEL_KINDS[k], wide ? "f64" : "f32", (long long)s.O,
                              (long long)s.R, (long long)s.I, variant);
                }
                kiln__threads_set_count(0);
                free(v);
                free(first);
                free(again);
            }
}

/* The same through kiln_reduce (and kiln_sum), with the init value combined once. */
Test(reduce, reduce_is_bitwise_the_same_for_every_thread_count) {
    kiln_ctx *cx = test_ctx();
    enum { R = 300, C = 700 };
    float *f = malloc(sizeof(float) * R * C);
    for (int i = 0; i < R * C; i++)
        f[i] = (float)hashed(i, false);
    kiln_tensor *x =
        kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(R, C), f, sizeof(float) * R * C);
    const kiln_dims dims[3] = {KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS(0, 1)};
    for (int d = 0; d < 3; d++) {
        float want[C];
        int64_t m = d == 0 ? C : d == 1 ? R : 1;
        for (int threads = 1; threads <= 3; threads++) {
            kiln__threads_set_count(threads);
            kiln_tensor *r = reduce1(cx, x, scalar(cx, KILN_F32, 0.5), dims[d], kiln_region_add());
            cr_assert_not_null(r, "%s", kiln_ctx_error_message(cx));
            if (threads == 1)
                memcpy(want, kiln_tensor_data(r), sizeof(float) * (size_t)m);
            else
                cr_assert(memcmp(want, kiln_tensor_data(r), sizeof(float) * (size_t)m) == 0,
                          "dims %d, %d threads", d, threads);
        }
        /* And the init value took part once: compare with a double reference. */
        double ref[C];
        for (int64_t j = 0; j < m; j++)
            ref[j] = 0.5;
        for (int i = 0; i < R * C; i++)
            ref[d == 0 ? i % C : d == 1 ? i / C : 0] += f[i];
        for (int64_t j = 0; j < m; j++)
            cr_assert(fabs(want[j] - ref[j]) <= 1e-4 * (fabs(ref[j]) + 1),
                      "dims %d [%lld]: %g vs %g", d, (long long)j, want[j], ref[j]);
    }
    kiln__threads_set_count(0);
    free(f);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(reduce, kernels_reject_other_kinds_and_negative_sizes) {
    float x[4] = {1, 2, 3, 4}, out[2] = {7, 7};
    double xd[4] = {1, 2, 3, 4}, outd[2] = {7, 7};
    const kiln__region_kind others[] = {KILN_REGION_AND, KILN_REGION_OR, KILN_REGION_CUSTOM,
                                        KILN_REGION_REPLACE, KILN_REGION_LESS};
    for (size_t k = 0; k < sizeof others / sizeof others[0]; k++) {
        cr_assert_not(kiln__reduce_f32(others[k], x, 1, 4, 1, out, true));
        cr_assert_not(kiln__reduce_f64(others[k], xd, 1, 4, 1, outd, false));
    }
    cr_assert_not(kiln__reduce_f32(KILN_REGION_ADD, x, -1, 4, 1, out, true));
    cr_assert_not(kiln__reduce_f32(KILN_REGION_ADD, x, 1, -4, 1, out, true));
    cr_assert_not(kiln__reduce_f64(KILN_REGION_MAXIMUM, xd, 1, 4, -1, outd, true));
    cr_assert(out[0] == 7 && out[1] == 7 && outd[0] == 7 && outd[1] == 7, "output was written");
    /* The three shapes: columns of [2, 2], rows of [2, 2], all of [4]. */
    cr_assert(kiln__reduce_f32(KILN_REGION_ADD, x, 1, 2, 2, out, true));
    cr_assert(out[0] == 4 && out[1] == 6);
    cr_assert(kiln__reduce_f64(KILN_REGION_MINIMUM, xd, 2, 2, 1, outd, true));
    cr_assert(outd[0] == 1 && outd[1] == 3);
    cr_assert(kiln__reduce_f32(KILN_REGION_MULTIPLY, x, 1, 4, 1, out, false) && out[0] == 24);
}

/* Integer reductions split across threads too; they are exact, so every count must give
 * the reference's answer (wrapping for i32 sums). */
Test(reduce, integer_reductions_with_threads_are_exact) {
    kiln_ctx *cx = test_ctx();
    enum { R = 400, C = 700 };
    int32_t *v = malloc(sizeof(int32_t) * R * C);
    for (int i = 0; i < R * C; i++)
        v[i] = (int32_t)((uint32_t)(i + 1) * 2654435761u); /* spans the whole i32 range */
    kiln_tensor *x =
        kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(R, C), v, sizeof(int32_t) * R * C);
    const kiln_dims dims[3] = {KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS(0, 1)};
    for (int threads = 1; threads <= 3; threads++) {
        kiln__threads_set_count(threads);
        for (int d = 0; d < 3; d++)
            for (int k = 0; k < 2; k++) { /* add (wrapping), maximum */
                kiln_tensor *r =
                    reduce1(cx, x, scalar(cx, KILN_I32, k == 0 ? 0 : INT32_MIN), dims[d],
                            k == 0 ? kiln_region_add() : kiln_region_maximum());
                cr_assert_not_null(r, "%s", kiln_ctx_error_message(cx));
                const int64_t m = d == 0 ? C : d == 1 ? R : 1;
                uint32_t want[C];
                for (int64_t j = 0; j < m; j++)
                    want[j] = k == 0 ? 0u : (uint32_t)INT32_MIN;
                for (int i = 0; i < R * C; i++) {
                    uint32_t *w = &want[d == 0 ? i % C : d == 1 ? i / C : 0];
                    if (k == 0)
                        *w += (uint32_t)v[i];
                    else if (v[i] > (int32_t)*w)
                        *w = (uint32_t)v[i];
                }
                const int32_t *got = kiln_tensor_data(r);
                for (int64_t j = 0; j < m; j++)
                    cr_assert_eq((uint32_t)got[j], want[j], "%d threads, dims %d, kind %d, [%lld]",
                                 threads, d, k, (long long)j);
            }
    }
    kiln__threads_set_count(0);
    free(v);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* f16 and bf16: converted to f32 (split across threads), reduced, rounded once; the same
 * bits for every thread count, within one rounding of the exact answer. */
Test(reduce, half_reductions_with_threads) {
    kiln_ctx *cx = test_ctx();
    enum { R = 300, C = 700 };
    double *v = malloc(sizeof(double) * R * C);
    for (int i = 0; i < R * C; i++)
        v[i] = hashed(i, false) / 64;
    const kiln_dtype dts[2] = {KILN_F16, KILN_BF16};
    for (int t = 0; t < 2; t++) {
        kiln_tensor *x = tensor(cx, dts[t], KILN_SHAPE(R, C), v);
        double exact = 0;
        for (int i = 0; i < R * C; i++)
            exact += as_dtype(dts[t], v[i]);
        uint16_t first = 0;
        for (int threads = 1; threads <= 3; threads++) {
            kiln__threads_set_count(threads);
            kiln_tensor *r =
                reduce1(cx, x, scalar(cx, dts[t], 0), KILN_DIMS(0, 1), kiln_region_add());
            cr_assert_not_null(r, "%s", kiln_ctx_error_message(cx));
            const uint16_t bits = *(const uint16_t *)kiln_tensor_data(r);
            if (threads == 1) first = bits;
            cr_assert_eq(bits, first, "%s, %d threads", kiln_dtype_name(dts[t]), threads);
            /* one rounding to the dtype: within half an ulp of it, plus f32's tiny error */
            const double got = item(cx, r), ulp = dts[t] == KILN_F16 ? ldexp(1, -10) : ldexp(1, -7);
            cr_assert_leq(fabs(got - exact), ulp * fabs(exact) + 1e-6, "%s: %g vs %g",
                          kiln_dtype_name(dts[t]), got, exact);
        }
    }
    kiln__threads_set_count(0);
    free(v);
    expect_ok(cx);
    kiln_ctx_release(cx);
}
