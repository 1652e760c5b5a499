/* SPDX-License-Identifier: Apache-2.0 */
/* Each element's result depends on that element alone, bit for bit, eager and compiled:
 * the vectorized transcendental kernels run 4, 8 or 16 elements at a time, and a kernel
 * that chose its method per vector (SLEEF's plain sin, cos, tan and f64 exp pick one range
 * reduction for the whole vector) would make cos(0.1) depend on whether a neighbouring
 * element holds 1e300, inf or NaN. The random-program tests compare transcendentals with a
 * tolerance and could not see that; these compare bits. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "test_util.h"

typedef kiln_tensor *(*unary_builder)(kiln_ctx *, kiln_tensor *);

static const struct {
    const char *name;
    unary_builder f;
} functions[] = {
    {"sine", kiln_sine},
    {"cosine", kiln_cosine},
    {"tan", kiln_tan},
    {"exponential", kiln_exponential},
    {"exponential_minus_one", kiln_exponential_minus_one},
    {"log", kiln_log},
    {"log_plus_one", kiln_log_plus_one},
    {"tanh", kiln_tanh},
    {"cbrt", kiln_cbrt},
    {"logistic", kiln_logistic},
};

/* Lanes per group: the widest vector (16 floats) and a multiple of every narrower one. */
#define GROUP 16
#define GROUPS 2048
#define N (GROUP * GROUPS)

static uint64_t rng_state = 42;

static double next_unit(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

/* Mostly ordinary values, with values that send a whole vector down another path (large
 * arguments of the trigonometric functions, exp's overflow and underflow, inf, NaN)
 * planted among them. */
static double mixed_value(kiln_dtype dt) {
    static const double f64_odd[] = {1e300, -1e300, INFINITY, -INFINITY, NAN,   20.0,
                                     -1e6,  1e15,   800.0,    -800.0,    1e-310};
    static const double f32_odd[] = {1e30, -1e30, INFINITY, -INFINITY, NAN,  200.0,
                                     -5e4, 1e7,   100.0,    -110.0,    1e-40};
    const double *odd = dt == KILN_F64 ? f64_odd : f32_odd;
    size_t n_odd =
        dt == KILN_F64 ? sizeof f64_odd / sizeof *f64_odd : sizeof f32_odd / sizeof *f32_odd;
    if (next_unit() < 0.25) return odd[(size_t)(next_unit() * (double)n_odd) % n_odd];
    /* magnitudes from 1e-3 to 1e5, either sign */
    double v = pow(10.0, next_unit() * 8.0 - 3.0);
    return next_unit() < 0.5 ? -v : v;
}

static kiln_tensor *tensor_of(kiln_ctx *cx, kiln_dtype dt, const double *v, int64_t n) {
    kiln_tensor *t = kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(n), v, (size_t)n * 8);
    return dt == KILN_F64 ? t : kiln_convert(cx, t, dt);
}

/* Element i of t as f64 bits (f32 widened exactly); every NaN as one pattern. */
static uint64_t bits_at(kiln_ctx *cx, kiln_tensor *t, int64_t i) {
    (void)cx;
    double v = kiln_tensor_dtype(t) == KILN_F64 ? ((const double *)kiln_tensor_data(t))[i]
                                                : ((const float *)kiln_tensor_data(t))[i];
    if (isnan(v)) v = NAN;
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static unary_builder current;

static kiln_status apply(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] = current(cx, in[0]);
    return kiln_ctx_status(cx);
}

static kiln_tensor *compiled(kiln_ctx *cx, kiln_tensor *x) {
    kiln_arg_spec arg = {.dtype = kiln_tensor_dtype(x), .shape = *kiln_tensor_shape(x)};
    kiln_region fn = {apply, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &arg, 1, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    kiln_tensor *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &r), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_exe_release(exe);
    return r;
}

static void check(kiln_dtype dt, size_t k) {
    kiln_ctx *cx = test_ctx();
    kiln_scope_begin(cx);
    double *mixed = malloc(N * sizeof *mixed), *alone = malloc(N * GROUP * sizeof *alone);
    for (int64_t i = 0; i < N; i++)
        mixed[i] = mixed_value(dt);
    /* Element i alone: a whole group of copies, so every vector holding it holds only it. */
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < GROUP; j++)
            alone[i * GROUP + j] = mixed[i];
    current = functions[k].f;
    kiln_tensor *x = tensor_of(cx, dt, mixed, N);
    kiln_tensor *eager = current(cx, x);
    kiln_tensor *reference = current(cx, tensor_of(cx, dt, alone, N * GROUP));
    kiln_tensor *comp = compiled(cx, x);
    expect_ok(cx);
    int64_t neighbours = 0, engines = 0, first = -1;
    for (int64_t i = 0; i < N; i++) {
        uint64_t want = bits_at(cx, reference, i * GROUP);
        if (bits_at(cx, eager, i) != want) {
            neighbours++;
            if (first < 0) first = i;
        }
        if (bits_at(cx, comp, i) != bits_at(cx, eager, i)) engines++;
    }
    cr_expect_eq(neighbours, 0,
                 "%s %s: %lld of %d eager results depend on their neighbours (first at %lld, "
                 "x = %.17g)",
                 functions[k].name, kiln_dtype_name(dt), (long long)neighbours, N, (long long)first,
                 first >= 0 ? mixed[first] : 0.0);
    cr_expect_eq(engines, 0, "%s %s: eager and compiled differ on %lld of %d elements",
                 functions[k].name, kiln_dtype_name(dt), (long long)engines, N);
    free(mixed);
    free(alone);
    kiln_tensor_release(comp);
    kiln_scope_end(cx);
    kiln_ctx_release(cx);
}

Test(lane_independence, f64_transcendentals) {
    for (size_t k = 0; k < sizeof functions / sizeof *functions; k++)
        check(KILN_F64, k);
}

Test(lane_independence, f32_transcendentals) {
    for (size_t k = 0; k < sizeof functions / sizeof *functions; k++)
        check(KILN_F32, k);
}
