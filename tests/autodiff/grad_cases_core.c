/* SPDX-License-Identifier: Apache-2.0 */
/* Finite-difference cases for the core rules (src/autodiff/rules_{elementwise,movement,
 * reduce,control}.c), in the format of grad_cases.h. Ranges keep clear of kinks and poles:
 * the check steps 1e-3 to either side of each input. */
#include "grad_cases.h"

#define NUM(...) (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define SHAPE(...)                                        \
    {                                                     \
        .rank = NUM(__VA_ARGS__), .dims = { __VA_ARGS__ } \
    }
#define F64(lo_, hi_, ...) \
    { .dtype = KILN_F64, .shape = SHAPE(__VA_ARGS__), .lo = (lo_), .hi = (hi_) }
#define F64_SCALAR(lo_, hi_) \
    { .dtype = KILN_F64, .shape = {.rank = 0}, .lo = (lo_), .hi = (hi_) }
#define FIXED_INTS(dt, vals, ...)                                                  \
    {                                                                              \
        .dtype = (dt), .shape = SHAPE(__VA_ARGS__), .fixed = true, .ints = (vals), \
        .n_ints = (int32_t)(sizeof(vals) / sizeof((vals)[0]))                      \
    }
#define FIXED_SCALAR_INT(dt, vals) \
    { .dtype = (dt), .shape = {.rank = 0}, .fixed = true, .ints = (vals), .n_ints = 1 }

static kiln_status done(kiln_ctx *cx) { return kiln_ctx_status(cx); }

/* ---- elementwise --------------------------------------------------------------------------- */

typedef kiln_tensor *(*unary_fn)(kiln_ctx *, kiln_tensor *);
typedef kiln_tensor *(*binary_fn)(kiln_ctx *, kiln_tensor *, kiln_tensor *);
typedef struct unary_box {
    unary_fn f;
} unary_box;
typedef struct binary_box {
    binary_fn f;
} binary_box;

static kiln_status unary(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    out[0] = ((const unary_box *)u)->f(cx, in[0]);
    return done(cx);
}
/* f(x) * x: gives piecewise-constant ops (floor, sign, ...) a derivative to check. */
static kiln_status unary_times_x(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    out[0] = kiln_multiply(cx, ((const unary_box *)u)->f(cx, in[0]), in[0]);
    return done(cx);
}
static kiln_status binary(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    out[0] = ((const binary_box *)u)->f(cx, in[0], in[1]);
    return done(cx);
}

#define U(name) static unary_box b_##name = {kiln_##name};
#define B(name) static binary_box b_##name = {kiln_##name};
U(abs)
U(negate)
U(sign)
U(floor)
U(ceil)
U(round_nearest_afz)
U(round_nearest_even)
U(sqrt)
U(rsqrt)
U(cbrt)
U(exponential)
U(exponential_minus_one)
U(log)
U(log_plus_one)
U(logistic)
U(sine)
U(cosine)
U(tan)
U(tanh)
B(add)
B(subtract)
B(multiply)
B(divide)
B(remainder)
B(power)
B(maximum)
B(minimum)
B(atan2)

#define UNARY_CASE(OP, nm, lo, hi)                                                             \
    {                                                                                          \
        .name = #nm, .op = KILN_OP_##OP, .n_args = 1, .args = {F64(lo, hi, 3, 4)}, .n_out = 1, \
        .fn = {                                                                                \
            unary,                                                                             \
            &b_##nm                                                                            \
        }                                                                                      \
    }
#define TIMES_X_CASE(OP, nm, lo, hi)                                                          \
    {                                                                                         \
        .name = #nm " times x", .op = KILN_OP_##OP, .n_args = 1, .args = {F64(lo, hi, 3, 4)}, \
        .n_out = 1, .fn = {                                                                   \
            unary_times_x,                                                                    \
            &b_##nm                                                                           \
        }                                                                                     \
    }
#define BINARY_CASE(OP, nm, alo, ahi, blo, bhi)                                 \
    {                                                                           \
        .name = #nm, .op = KILN_OP_##OP, .n_args = 2,                           \
        .args = {F64(alo, ahi, 3, 4), F64(blo, bhi, 3, 4)}, .n_out = 1, .fn = { \
            binary,                                                             \
            &b_##nm                                                             \
        }                                                                       \
    }

static kiln_status select_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_select(cx, in[2], in[0], kiln_multiply(cx, in[1], in[0]));
    return done(cx);
}
static const int64_t select_mask[] = {1, 0, 0, 1, 1, 0, 1, 1, 0, 0, 1, 0};

static kiln_status clamp_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_clamp(cx, in[0], in[1], in[2]);
    return done(cx);
}

/* x * convert(n) (integer operand: no cotangent) and a round trip through f32. */
static kiln_status convert_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *n = kiln_convert(cx, in[1], KILN_F64);
    kiln_tensor *f = kiln_convert(cx, kiln_convert(cx, in[0], KILN_F32), KILN_F64);
    out[0] = kiln_multiply(cx, f, kiln_multiply(cx, n, in[0]));
    return done(cx);
}
static const int64_t small_ints[] = {3, -1, 2, 0, 5, -4};

/* ---- movement ---------------------------------------------------------------------------- */

typedef struct move_box {
    kiln_shape shape;
    kiln_dims a, b, c;
} move_box;

static kiln_status broadcast_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const move_box *m = u;
    kiln_tensor *y = kiln_broadcast_in_dim(cx, in[0], m->shape, m->a);
    out[0] = kiln_multiply(cx, y, y); /* non-linear, so each copy's cotangent differs */
    return done(cx);
}
static move_box bc_middle = {.shape = SHAPE(2, 3, 4), .a = {.count = 1, .v = {1}}};
static move_box bc_stretch = {.shape = SHAPE(3, 4), .a = {.count = 2, .v = {0, 1}}};
static move_box bc_unsorted = {.shape = SHAPE(3, 2, 4), .a = {.count = 2, .v = {2, 0}}};

static kiln_status reshape_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const move_box *m = u;
    out[0] = kiln_sine(cx, kiln_reshape(cx, in[0], m->shape));
    return done(cx);
}
static move_box rs = {.shape = SHAPE(2, 6)};

static kiln_status transpose_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const move_box *m = u;
    out[0] = kiln_sine(cx, kiln_transpose(cx, in[0], m->a));
    return done(cx);
}
static move_box tp = {.a = {.count = 3, .v = {2, 0, 1}}};

static kiln_status reverse_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const move_box *m = u;
    out[0] = kiln_multiply(cx, kiln_reverse(cx, in[0], m->a), in[0]);
    return done(cx);
}
static move_box rv = {.a = {.count = 2, .v = {0, 1}}};

/* Its own widths (e11m52 on f64): the identity, so finite differences see its rules
 * (which round the tangent and the cotangent) pass the derivative through. */
static kiln_status reduce_precision_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                       void *u) {
    (void)u;
    out[0] = kiln_sine(cx, kiln_multiply(cx, kiln_reduce_precision(cx, in[0], 11, 52), in[0]));
    return done(cx);
}

static kiln_status slice_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const move_box *m = u;
    out[0] = kiln_sine(cx, kiln_slice(cx, in[0], m->a, m->b, m->c));
    return done(cx);
}
static move_box sl = {
    .a = {.count = 2, .v = {1, 0}}, .b = {.count = 2, .v = {5, 6}}, .c = {.count = 2, .v = {2, 3}}};

static kiln_status pad_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const move_box *m = u;
    out[0] = kiln_sine(cx, kiln_pad(cx, in[0], in[1], m->a, m->b, m->c));
    return done(cx);
}
static move_box pd = {.a = {.count = 2, .v = {1, -1}},
                      .b = {.count = 2, .v = {-1, 2}},
                      .c = {.count = 2, .v = {1, 0}}};

static kiln_status concat_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_sine(cx, kiln_concatenate(cx, in, 3, 1));
    return done(cx);
}

/* ---- reduce ------------------------------------------------------------------------------ */

typedef struct reduce_box {
    const kiln_region *(*region)(void);
    kiln_dims dims;
} reduce_box;

/* reduce(x, init) over dims, then a non-linear map so that every output matters. */
static kiln_status reduce_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const reduce_box *r = u;
    kiln_tensor *y = NULL;
    kiln_reduce(cx, &in[0], &in[1], 1, r->dims, r->region(), &y);
    out[0] = kiln_sine(cx, y);
    return done(cx);
}
static reduce_box red_add = {kiln_region_add, {.count = 2, .v = {0, 2}}};
static reduce_box red_max = {kiln_region_maximum, {.count = 1, .v = {1}}};
static reduce_box red_min = {kiln_region_minimum, {.count = 1, .v = {0}}};
static reduce_box red_mul = {kiln_region_multiply, {.count = 1, .v = {1}}};

/* prod over rows of x * mask: rows with no zero, one zero and two zeros. */
static kiln_status prod_zeros_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = kiln_multiply(cx, in[0], kiln_convert(cx, in[1], KILN_F64));
    out[0] = kiln_prod(cx, x, (kiln_dims){.count = 1, .v = {1}}, false);
    return done(cx);
}
static const int64_t zero_mask[] = {1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 0, 1};

/* ---- control flow ---------------------------------------------------------------------- */

static kiln_status fori_body(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    /* a[0] = i, a[1] = c, a[2] = w (carried unchanged) */
    kiln_tensor *i = kiln_convert(cx, a[0], KILN_F64);
    r[0] = kiln_add(cx, kiln_multiply(cx, kiln_sine(cx, a[1]), a[2]),
                    kiln_multiply(cx, a[1], kiln_scalar_like(cx, i, 0.5)));
    r[0] = kiln_add(cx, r[0], kiln_multiply(cx, i, kiln_scalar_like(cx, i, 0.1)));
    r[1] = a[2];
    return done(cx);
}
static kiln_status fori_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *inits[2] = {in[0], in[1]}, *res[2];
    kiln_region body = {fori_body, NULL};
    kiln_fori_loop(cx, 0, 4, inits, 2, &body, res);
    out[0] = res[0];
    return done(cx);
}

/* A loop whose body also uses a value from outside (w): its cotangent comes out of the
 * reverse loop. */
static kiln_status fori_free_body(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    kiln_tensor *w = u;
    r[0] = kiln_add(cx, kiln_multiply(cx, kiln_tanh(cx, a[1]), w), a[1]);
    return done(cx);
}
static kiln_status fori_free_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region body = {fori_free_body, in[1]};
    kiln_fori_loop(cx, 2, 5, &in[0], 1, &body, out);
    return done(cx);
}

typedef struct cond_box {
    kiln_tensor *x, *y;
} cond_box;
static kiln_status branch_a(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a;
    const cond_box *b = u;
    r[0] = kiln_multiply(cx, b->x, b->y);
    r[1] = kiln_sine(cx, b->y);
    return done(cx);
}
static kiln_status branch_b(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a;
    const cond_box *b = u;
    r[0] = kiln_cosine(cx, b->x);
    r[1] = b->x;
    return done(cx);
}
static kiln_status branch_c(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a;
    const cond_box *b = u;
    r[0] = kiln_exponential(cx, b->y);
    r[1] = kiln_multiply(cx, b->y, b->y);
    return done(cx);
}
static kiln_status if_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    cond_box b = {in[0], in[1]};
    kiln_region t = {branch_a, &b}, f = {branch_b, &b};
    return kiln_cond(cx, kiln_convert(cx, in[2], KILN_BOOL), &t, &f, NULL, 0, 2, out);
}
static const int64_t one[] = {1}, zero[] = {0}, seven[] = {7};
static kiln_status case_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    cond_box b = {in[0], in[1]};
    kiln_region br[3] = {{branch_a, &b}, {branch_b, &b}, {branch_c, &b}};
    return kiln_case(cx, in[2], br, 3, NULL, 0, 2, out);
}

static kiln_status callee(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_multiply(cx, kiln_sine(cx, a[0]), a[1]);
    r[1] = kiln_exponential(cx, a[1]);
    return done(cx);
}
static kiln_status call_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region c = {callee, NULL};
    return kiln_call(cx, &c, in, 2, 2, out);
}
static kiln_status barrier_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *b[2];
    if (kiln_optimization_barrier(cx, in, 2, b) != KILN_OK) return done(cx);
    out[0] = kiln_multiply(cx, kiln_sine(cx, b[0]), b[1]);
    return done(cx);
}

const grad_case kiln_test_cases_core[] = {
    UNARY_CASE(ABS, abs, -2, 2),
    UNARY_CASE(NEGATE, negate, -2, 2),
    TIMES_X_CASE(SIGN, sign, -2, 2),
    TIMES_X_CASE(FLOOR, floor, -3, 3),
    TIMES_X_CASE(CEIL, ceil, -3, 3),
    TIMES_X_CASE(ROUND_NEAREST_AFZ, round_nearest_afz, -3, 3),
    TIMES_X_CASE(ROUND_NEAREST_EVEN, round_nearest_even, -3, 3),
    UNARY_CASE(SQRT, sqrt, 0.5, 2),
    UNARY_CASE(RSQRT, rsqrt, 0.5, 2),
    UNARY_CASE(CBRT, cbrt, -2, -0.5),
    UNARY_CASE(EXPONENTIAL, exponential, -1, 1),
    UNARY_CASE(EXPONENTIAL_MINUS_ONE, exponential_minus_one, -1, 1),
    UNARY_CASE(LOG, log, 0.5, 2),
    UNARY_CASE(LOG_PLUS_ONE, log_plus_one, -0.5, 1),
    UNARY_CASE(LOGISTIC, logistic, -3, 3),
    UNARY_CASE(SINE, sine, -3, 3),
    UNARY_CASE(COSINE, cosine, -3, 3),
    UNARY_CASE(TAN, tan, -1, 1),
    UNARY_CASE(TANH, tanh, -2, 2),
    BINARY_CASE(ADD, add, -2, 2, -2, 2),
    BINARY_CASE(SUBTRACT, subtract, -2, 2, -2, 2),
    BINARY_CASE(MULTIPLY, multiply, -2, 2, -2, 2),
    BINARY_CASE(DIVIDE, divide, -2, 2, 0.5, 2),
    BINARY_CASE(REMAINDER, remainder, -3, 3, 0.7, 1.3),
    BINARY_CASE(POWER, power, 0.5, 2, -1.5, 1.5),
    BINARY_CASE(MAXIMUM, maximum, -2, 2, -2, 2),
    BINARY_CASE(MINIMUM, minimum, -2, 2, -2, 2),
    BINARY_CASE(ATAN2, atan2, -2, 2, -2, 2),
    {.name = "select",
     .op = KILN_OP_SELECT,
     .n_args = 3,
     .args = {F64(-2, 2, 3, 4), F64(-2, 2, 3, 4), FIXED_INTS(KILN_BOOL, select_mask, 3, 4)},
     .n_out = 1,
     .fn = {select_fn, NULL}},
    {.name = "clamp scalar bounds",
     .op = KILN_OP_CLAMP,
     .n_args = 3,
     .args = {F64_SCALAR(-1, -0.5), F64(-2, 2, 3, 4), F64_SCALAR(0.5, 1)},
     .n_out = 1,
     .fn = {clamp_fn, NULL}},
    {.name = "clamp tensor bounds",
     .op = KILN_OP_CLAMP,
     .n_args = 3,
     .args = {F64(-1, -0.2, 3, 4), F64(-2, 2, 3, 4), F64(0.2, 1, 3, 4)},
     .n_out = 1,
     .fn = {clamp_fn, NULL}},
    {.name = "convert",
     .op = KILN_OP_CONVERT,
     .n_args = 2,
     .args = {F64(-2, 2, 2, 3), FIXED_INTS(KILN_I32, small_ints, 2, 3)},
     .n_out = 1,
     .fn = {convert_fn, NULL},
     .tol = 1e-3},
    {.name = "broadcast_in_dim to the middle",
     .op = KILN_OP_BROADCAST_IN_DIM,
     .n_args = 1,
     .args = {F64(-2, 2, 3)},
     .n_out = 1,
     .fn = {broadcast_fn, &bc_middle}},
    {.name = "broadcast_in_dim stretching size 1",
     .op = KILN_OP_BROADCAST_IN_DIM,
     .n_args = 1,
     .args = {F64(-2, 2, 3, 1)},
     .n_out = 1,
     .fn = {broadcast_fn, &bc_stretch}},
    {.name = "broadcast_in_dim unsorted dims",
     .op = KILN_OP_BROADCAST_IN_DIM,
     .n_args = 1,
     .args = {F64(-2, 2, 4, 3)},
     .n_out = 1,
     .fn = {broadcast_fn, &bc_unsorted}},
    {.name = "reshape",
     .op = KILN_OP_RESHAPE,
     .n_args = 1,
     .args = {F64(-2, 2, 3, 4)},
     .n_out = 1,
     .fn = {reshape_fn, &rs}},
    {.name = "transpose",
     .op = KILN_OP_TRANSPOSE,
     .n_args = 1,
     .args = {F64(-2, 2, 2, 3, 4)},
     .n_out = 1,
     .fn = {transpose_fn, &tp}},
    {.name = "reverse",
     .op = KILN_OP_REVERSE,
     .n_args = 1,
     .args = {F64(-2, 2, 3, 4)},
     .n_out = 1,
     .fn = {reverse_fn, &rv}},
    {.name = "reduce_precision",
     .op = KILN_OP_REDUCE_PRECISION,
     .n_args = 1,
     .args = {F64(-2, 2, 3, 4)},
     .n_out = 1,
     .fn = {reduce_precision_fn, NULL}},
    {.name = "slice with strides",
     .op = KILN_OP_SLICE,
     .n_args = 1,
     .args = {F64(-2, 2, 6, 7)},
     .n_out = 1,
     .fn = {slice_fn, &sl}},
    {.name = "pad negative and interior",
     .op = KILN_OP_PAD,
     .n_args = 2,
     .args = {F64(-2, 2, 4, 5), F64_SCALAR(-1, 1)},
     .n_out = 1,
     .fn = {pad_fn, &pd}},
    {.name = "concatenate",
     .op = KILN_OP_CONCATENATE,
     .n_args = 3,
     .args = {F64(-2, 2, 2, 3), F64(-2, 2, 2, 1), F64(-2, 2, 2, 2)},
     .n_out = 1,
     .fn = {concat_fn, NULL}},
    {.name = "reduce add with an init argument",
     .op = KILN_OP_REDUCE,
     .n_args = 2,
     .args = {F64(-1, 1, 2, 3, 4), F64_SCALAR(-1, 1)},
     .n_out = 1,
     .fn = {reduce_fn, &red_add}},
    {.name = "reduce max, the init winning some rows",
     .op = KILN_OP_REDUCE,
     .n_args = 2,
     .args = {F64(-1, 1, 3, 4), F64_SCALAR(0.3, 0.6)},
     .n_out = 1,
     .fn = {reduce_fn, &red_max}},
    {.name = "reduce min",
     .op = KILN_OP_REDUCE,
     .n_args = 2,
     .args = {F64(-1, 1, 3, 4), F64_SCALAR(-0.6, -0.3)},
     .n_out = 1,
     .fn = {reduce_fn, &red_min}},
    {.name = "reduce multiply",
     .op = KILN_OP_REDUCE,
     .n_args = 2,
     .args = {F64(0.5, 1.5, 3, 4), F64_SCALAR(0.5, 2)},
     .n_out = 1,
     .fn = {reduce_fn, &red_mul}},
    {.name = "reduce multiply with zeros",
     .op = KILN_OP_REDUCE,
     .n_args = 2,
     .args = {F64(0.5, 1.5, 3, 4), FIXED_INTS(KILN_I32, zero_mask, 3, 4)},
     .n_out = 1,
     .fn = {prod_zeros_fn, NULL}},
    {.name = "fori_loop (while with a fixed trip count)",
     .op = KILN_OP_WHILE,
     .n_args = 2,
     .args = {F64(-1, 1, 3), F64(-1, 1, 3)},
     .n_out = 1,
     .fn = {fori_fn, NULL}},
    {.name = "fori_loop using an outer value",
     .op = KILN_OP_WHILE,
     .n_args = 2,
     .args = {F64(-1, 1, 2, 2), F64(-1, 1, 2, 2)},
     .n_out = 1,
     .fn = {fori_free_fn, NULL}},
    {.name = "if, true branch",
     .op = KILN_OP_IF,
     .n_args = 3,
     .args = {F64(-1, 1, 3), F64(-1, 1, 3), FIXED_SCALAR_INT(KILN_I32, one)},
     .n_out = 2,
     .fn = {if_fn, NULL}},
    {.name = "if, false branch",
     .op = KILN_OP_IF,
     .n_args = 3,
     .args = {F64(-1, 1, 3), F64(-1, 1, 3), FIXED_SCALAR_INT(KILN_I32, zero)},
     .n_out = 2,
     .fn = {if_fn, NULL}},
    {.name = "case, branch 1",
     .op = KILN_OP_CASE,
     .n_args = 3,
     .args = {F64(-1, 1, 3), F64(-1, 1, 3), FIXED_SCALAR_INT(KILN_I32, one)},
     .n_out = 2,
     .fn = {case_fn, NULL}},
    {.name = "case, out of range runs the last branch",
     .op = KILN_OP_CASE,
     .n_args = 3,
     .args = {F64(-1, 1, 3), F64(-1, 1, 3), FIXED_SCALAR_INT(KILN_I32, seven)},
     .n_out = 2,
     .fn = {case_fn, NULL}},
    {.name = "call",
     .op = KILN_OP_CALL,
     .n_args = 2,
     .args = {F64(-1, 1, 3), F64(-1, 1, 3)},
     .n_out = 2,
     .fn = {call_fn, NULL}},
    {.name = "optimization_barrier",
     .op = KILN_OP_OPTIMIZATION_BARRIER,
     .n_args = 2,
     .args = {F64(-1, 1, 3), F64(-1, 1, 3)},
     .n_out = 1,
     .fn = {barrier_fn, NULL}},
};
const int kiln_test_n_cases_core =
    (int)(sizeof kiln_test_cases_core / sizeof kiln_test_cases_core[0]);
