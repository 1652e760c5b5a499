/* SPDX-License-Identifier: Apache-2.0 */
/* Eager equals traced-and-compiled, for every op of ops.def: each case is a small function
 * of builders, run eagerly on random concrete inputs and also lowered, compiled and called
 * on the same inputs. Results must match bit for bit, except for transcendental functions
 * (and BLAS contractions), which may differ by a few ulps. Each case names the ops its
 * lowered module must contain; the coverage test checks that the cases name every op. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "frontend/op_run.h"
#include "ir/ir.h"
#include "ops/op.h"
#include "test_util.h"

#define MAX_IN 6
#define MAX_OUT 6

/* ---- random inputs ------------------------------------------------------------------------- */

typedef enum gen_kind {
    GEN_ANY,   /* floats: mostly in [-4, 4], some specials; integers: random bits */
    GEN_INDEX, /* integers in [0, hi) */
    GEN_POS,   /* floats in [0.25, 4) */
    GEN_FILL,  /* integers: every element is hi */
} gen_kind;

typedef struct spec {
    kiln_dtype dtype;
    kiln_shape shape;
    gen_kind gen;
    int64_t hi;
} spec;

static uint64_t rng_state;

static uint64_t next_u64(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static double next_double(double lo, double hi) {
    return lo + (hi - lo) * (double)(next_u64() >> 11) * 0x1p-53;
}

static double random_float(gen_kind gen) {
    static const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e30, -1e-30, 0.5, 1.0};
    if (gen == GEN_POS) return next_double(0.25, 4.0);
    if (next_u64() % 8 == 0) return specials[next_u64() % (sizeof specials / sizeof specials[0])];
    return next_double(-4.0, 4.0);
}

static bool is_float(kiln_dtype d) {
    return d == KILN_F16 || d == KILN_BF16 || d == KILN_F32 || d == KILN_F64;
}

static kiln_tensor *random_tensor(kiln_ctx *cx, const spec *s) {
    int64_t n = 0;
    cr_assert(kiln_shape_numel(&s->shape, &n));
    if (is_float(s->dtype)) {
        /* f16/bf16: made in f64 and converted. */
        double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        for (int64_t i = 0; i < n; i++)
            v[i] = random_float(s->gen);
        kiln_tensor *t =
            kiln_tensor_from_host(cx, KILN_F64, s->shape, v, (size_t)n * sizeof(double));
        free(v);
        return s->dtype == KILN_F64 ? t : kiln_convert(cx, t, s->dtype);
    }
    size_t width = kiln_dtype_size(s->dtype), bytes = (size_t)n * width;
    unsigned char *p = malloc(bytes ? bytes : 1);
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = next_u64();
        if (s->dtype == KILN_BOOL) v &= 1;
        if (s->gen == GEN_INDEX) v %= (uint64_t)s->hi;
        if (s->gen == GEN_FILL) v = (uint64_t)s->hi;
        memcpy(p + (size_t)i * width, &v, width); /* little-endian: the low bytes */
    }
    kiln_tensor *t = kiln_tensor_from_host(cx, s->dtype, s->shape, p, bytes);
    free(p);
    return t;
}

/* ---- comparing ----------------------------------------------------------------------------- */

/* Distance in ulps between two floats of `width` bytes, given as bits (NaNs: 0 if both). */
static uint64_t ulps(uint64_t a, uint64_t b, size_t width, kiln_dtype d) {
    int bits = (int)width * 8;
    uint64_t sign = UINT64_C(1) << (bits - 1), mag = sign - 1;
    uint64_t exp_mask = d == KILN_F64   ? UINT64_C(0x7ff0000000000000)
                        : d == KILN_F32 ? 0x7f800000u
                        : d == KILN_F16 ? 0x7c00u
                                        : 0x7f80u;
    bool nan_a = (a & mag) > exp_mask, nan_b = (b & mag) > exp_mask;
    if (nan_a || nan_b) return nan_a && nan_b ? 0 : UINT64_MAX;
    /* Map to a monotonic unsigned scale. */
    uint64_t ka = a & sign ? sign - (a & mag) : sign + a,
             kb = b & sign ? sign - (b & mag) : sign + b;
    return ka > kb ? ka - kb : kb - ka;
}

static void expect_same(const char *name, int r, const kiln_tensor *eager, const kiln_tensor *comp,
                        bool approx) {
    cr_assert_eq(kiln_tensor_dtype(comp), kiln_tensor_dtype(eager), "%s: result %d dtype", name, r);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(comp), kiln_tensor_shape(eager)),
              "%s: result %d shape", name, r);
    size_t nbytes = kiln_tensor_nbytes(eager);
    if (nbytes == 0) return;
    const unsigned char *a = kiln_tensor_data(eager), *b = kiln_tensor_data(comp);
    if (!approx || !is_float(kiln_tensor_dtype(eager))) {
        cr_assert(memcmp(a, b, nbytes) == 0, "%s: result %d differs bitwise", name, r);
        return;
    }
    kiln_dtype d = kiln_tensor_dtype(eager);
    size_t w = kiln_dtype_size(d);
    for (size_t i = 0; i < nbytes / w; i++) {
        uint64_t x = 0, y = 0;
        memcpy(&x, a + i * w, w);
        memcpy(&y, b + i * w, w);
        cr_assert(ulps(x, y, w, d) <= 4, "%s: result %d element %zu differs by more than 4 ulps",
                  name, r, i);
    }
}

/* ---- walking a module ---------------------------------------------------------------------- */

static bool block_has(const kiln__block *b, kiln_op op) {
    for (const kiln__ir_op *o = b->first; o; o = o->next) {
        if (o->kind == op) return true;
        for (int32_t r = 0; r < o->n_regions; r++)
            if (o->regions[r] && block_has(o->regions[r], op)) return true;
    }
    return false;
}

/* ---- running a case ------------------------------------------------------------------------ */

typedef struct ev_case {
    const char *name;
    kiln_region fn;
    int32_t n_in, n_out;
    spec in[MAX_IN];
    kiln_op ops[4]; /* the ops its module must contain */
    int n_ops;
    bool approx;
} ev_case;

static uint64_t seed_of(const char *name) {
    uint64_t h = 1469598103934665603u;
    for (; *name; name++)
        h = (h ^ (uint8_t)*name) * 1099511628211u;
    return h;
}

/* Compiles m with `backend`, calls it `calls` times on `in`, and compares each call's
 * results with eager's. */
static void compile_and_compare(kiln_ctx *cx, const ev_case *c, const char *backend, kiln_module *m,
                                const char *what, int calls, kiln_tensor **in, kiln_tensor **eager,
                                bool approx) {
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = backend;
    kiln_exe *exe = NULL;
    kiln_status s = kiln_compile(cx, m, &o, &exe);
    cr_assert_eq(s, KILN_OK, "%s: %s: compile of %s: %s", c->name, backend, what,
                 kiln_ctx_error_message(cx));
    kiln_tensor *comp[MAX_OUT] = {0};
    for (int round = 0; round < calls; round++) {
        cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
        s = kiln_exe_call(cx, exe, in, comp);
        cr_assert_eq(s, KILN_OK, "%s: %s: call of %s: %s", c->name, backend, what,
                     kiln_ctx_error_message(cx));
        for (int32_t r = 0; r < c->n_out; r++)
            expect_same(c->name, r, eager[r], comp[r], approx);
        kiln_scope_end(cx);
    }
    kiln_exe_release(exe);
}

/* Runs one case; with allow_unsupported, an eager INVALID_ARGUMENT (a dtype the op does not
 * take) skips it and returns false. */
static bool run_case(const ev_case *c, bool allow_unsupported) {
    kiln_ctx *cx = test_ctx();
    rng_state = seed_of(c->name);
    kiln_tensor *in[MAX_IN], *eager[MAX_OUT] = {0};
    kiln_arg_spec specs[MAX_IN];
    for (int32_t i = 0; i < c->n_in; i++) {
        in[i] = random_tensor(cx, &c->in[i]);
        cr_assert_not_null(in[i], "%s: input %d: %s", c->name, (int)i, kiln_ctx_error_message(cx));
        specs[i] = (kiln_arg_spec){.dtype = c->in[i].dtype, .shape = c->in[i].shape};
    }
    cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
    kiln_status s = c->fn.fn(cx, in, eager, c->fn.user);
    if (s == KILN_OK) s = kiln_ctx_status(cx);
    if (s != KILN_OK && allow_unsupported && s == KILN_INVALID_ARGUMENT) {
        kiln_ctx_clear_error(cx);
        kiln_scope_end(cx);
        kiln_ctx_release(cx);
        return false;
    }
    cr_assert_eq(s, KILN_OK, "%s: eager: %s", c->name, kiln_ctx_error_message(cx));
    for (int32_t r = 0; r < c->n_out; r++)
        eager[r] = kiln_tensor_retain(eager[r]);
    kiln_scope_end(cx);

    kiln_module *m = NULL;
    s = kiln_lower(cx, &c->fn, specs, c->n_in, c->n_out, NULL, &m);
    cr_assert_eq(s, KILN_OK, "%s: lower: %s", c->name, kiln_ctx_error_message(cx));
    for (int i = 0; i < c->n_ops; i++)
        cr_assert(block_has(m->funcs[0]->body, c->ops[i]), "%s: the module has no %s op", c->name,
                  kiln__op_get_info(c->ops[i])->name);
    /* The printed module reads back to the same text (print(parse(print(m))) == print(m)),
     * and the parsed module runs too: it is compiled and called below in place of m. */
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text, "%s: print: %s", c->name, kiln_ctx_error_message(cx));
    kiln_module *parsed = NULL;
    s = kiln_module_parse(cx, text, strlen(text), NULL, &parsed);
    cr_assert_eq(s, KILN_OK, "%s: parse of the printed module: %s\n%s", c->name,
                 kiln_ctx_error_message(cx), text);
    char *again = kiln_module_to_string(cx, parsed);
    cr_assert_not_null(again);
    cr_assert_str_eq(again, text, "%s: the printed module does not round-trip", c->name);
    kiln_string_free(cx, again);
    kiln_string_free(cx, text);
    /* Every registered backend (the interpreter, the reference, among them) agrees with
     * eager mode, on the module as traced and as read back from its text. */
    const char *backends[TEST_MAX_BACKENDS];
    int n_backends = test_backends(backends, TEST_MAX_BACKENDS);
    for (int b = 0; b < n_backends; b++) {
        /* The interpreter runs the evaluator's kernels, as eager mode does: bit for bit.
         * The traced module is called twice: the second call runs on a pooled call state. */
        bool approx = c->approx && strcmp(backends[b], "interpreter") != 0;
        compile_and_compare(cx, c, backends[b], parsed, "the parsed module", 1, in, eager, approx);
        compile_and_compare(cx, c, backends[b], m, "the module", 2, in, eager, approx);
    }
    kiln_module_release(m);
    kiln_module_release(parsed);
    for (int32_t r = 0; r < c->n_out; r++)
        kiln_tensor_release(eager[r]);
    expect_ok(cx);
    kiln_ctx_release(cx);
    return true;
}

static void run_table(const ev_case *cases, size_t n) {
    for (size_t i = 0; i < n; i++)
        run_case(&cases[i], false);
}

/* Shapes as brace initializers, for the static tables. */
#define SH(...)                                                                          \
    {                                                                                    \
        .rank = (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), .dims = { \
            __VA_ARGS__                                                                  \
        }                                                                                \
    }
#define SCALAR \
    { .rank = 0 }
#define S(...) KILN_SHAPE(__VA_ARGS__)
#define ANY(d, sh) \
    { .dtype = (d), .shape = sh, .gen = GEN_ANY }
#define IDX(d, sh, h) \
    { .dtype = (d), .shape = sh, .gen = GEN_INDEX, .hi = (h) }
#define POS(d, sh) \
    { .dtype = (d), .shape = sh, .gen = GEN_POS }
#define FILL(d, sh, v) \
    { .dtype = (d), .shape = sh, .gen = GEN_FILL, .hi = (v) }
#define OPS(...) \
    .ops = {__VA_ARGS__}, .n_ops = (int)(sizeof((kiln_op[]){__VA_ARGS__}) / sizeof(kiln_op))

/* A sum through kiln_reduce with a builtin region. */
static kiln_tensor *reduce_sum(kiln_ctx *cx, kiln_tensor *x, kiln_dims dims) {
    kiln_tensor *zero = kiln_scalar_like(cx, x, 0), *r = NULL;
    kiln_reduce(cx, &x, &zero, 1, dims, kiln_region_add(), &r);
    return r;
}

/* ---- unary and binary elementwise ops, over dtypes --------------------------------------- */

typedef kiln_tensor *(*unary_fn)(kiln_ctx *, kiln_tensor *);
typedef kiln_tensor *(*binary_fn)(kiln_ctx *, kiln_tensor *, kiln_tensor *);

typedef struct unary_op {
    kiln_op op;
    unary_fn f;
    bool approx;
} unary_op;

typedef struct binary_op {
    kiln_op op;
    binary_fn f;
    bool approx;
} binary_op;

static const unary_op unary_ops[] = {
    {KILN_OP_ABS, kiln_abs, false},
    {KILN_OP_NEGATE, kiln_negate, false},
    {KILN_OP_SIGN, kiln_sign, false},
    {KILN_OP_NOT, kiln_not, false},
    {KILN_OP_FLOOR, kiln_floor, false},
    {KILN_OP_CEIL, kiln_ceil, false},
    {KILN_OP_ROUND_NEAREST_AFZ, kiln_round_nearest_afz, false},
    {KILN_OP_ROUND_NEAREST_EVEN, kiln_round_nearest_even, false},
    {KILN_OP_SQRT, kiln_sqrt, false},
    {KILN_OP_RSQRT, kiln_rsqrt, true},
    {KILN_OP_CBRT, kiln_cbrt, true},
    {KILN_OP_EXPONENTIAL, kiln_exponential, true},
    {KILN_OP_EXPONENTIAL_MINUS_ONE, kiln_exponential_minus_one, true},
    {KILN_OP_LOG, kiln_log, true},
    {KILN_OP_LOG_PLUS_ONE, kiln_log_plus_one, true},
    {KILN_OP_LOGISTIC, kiln_logistic, true},
    {KILN_OP_SINE, kiln_sine, true},
    {KILN_OP_COSINE, kiln_cosine, true},
    {KILN_OP_TAN, kiln_tan, true},
    {KILN_OP_TANH, kiln_tanh, true},
    {KILN_OP_IS_FINITE, kiln_is_finite, false},
    {KILN_OP_POPCNT, kiln_popcnt, false},
    {KILN_OP_COUNT_LEADING_ZEROS, kiln_count_leading_zeros, false},
};

static const binary_op binary_ops[] = {
    {KILN_OP_ADD, kiln_add, false},
    {KILN_OP_SUBTRACT, kiln_subtract, false},
    {KILN_OP_MULTIPLY, kiln_multiply, false},
    {KILN_OP_DIVIDE, kiln_divide, false},
    {KILN_OP_REMAINDER, kiln_remainder, false},
    {KILN_OP_POWER, kiln_power, true},
    {KILN_OP_MAXIMUM, kiln_maximum, false},
    {KILN_OP_MINIMUM, kiln_minimum, false},
    {KILN_OP_ATAN2, kiln_atan2, true},
    {KILN_OP_AND, kiln_and, false},
    {KILN_OP_OR, kiln_or, false},
    {KILN_OP_XOR, kiln_xor, false},
    {KILN_OP_SHIFT_LEFT, kiln_shift_left, false},
    {KILN_OP_SHIFT_RIGHT_ARITHMETIC, kiln_shift_right_arithmetic, false},
    {KILN_OP_SHIFT_RIGHT_LOGICAL, kiln_shift_right_logical, false},
};

static const kiln_dtype all_dtypes[] = {KILN_BOOL, KILN_I8,  KILN_I16, KILN_I32, KILN_I64,
                                        KILN_U8,   KILN_U16, KILN_U32, KILN_U64, KILN_F16,
                                        KILN_BF16, KILN_F32, KILN_F64};

static kiln_status run_unary(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const unary_op *op = u;
    out[0] = op->f(cx, in[0]);
    return kiln_ctx_status(cx);
}

/* Two ops chained, so the second one may work in place over the first one's result. */
static kiln_status run_binary(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const binary_op *op = u;
    kiln_tensor *t = op->f(cx, in[0], in[1]);
    out[0] = op->f(cx, t, in[1]);
    out[1] = op->f(cx, in[1], in[0]);
    return kiln_ctx_status(cx);
}

Test(eager_vs_compiled, unary_ops_every_dtype) {
    for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++) {
        const unary_op *op = &unary_ops[i];
        int ran = 0;
        for (size_t d = 0; d < sizeof all_dtypes / sizeof all_dtypes[0]; d++) {
            char name[96];
            snprintf(name, sizeof name, "%s/%s", kiln__op_get_info(op->op)->name,
                     kiln_dtype_name(all_dtypes[d]));
            ev_case c = {.name = name,
                         .fn = {run_unary, (void *)op},
                         .n_in = 1,
                         .n_out = 1,
                         .in = {ANY(all_dtypes[d], SH(7, 9))},
                         .ops = {op->op},
                         .n_ops = 1,
                         .approx = op->approx};
            ran += run_case(&c, true);
        }
        cr_assert(ran > 0, "%s ran for no dtype", kiln__op_get_info(op->op)->name);
    }
}

Test(eager_vs_compiled, binary_ops_every_dtype) {
    for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++) {
        const binary_op *op = &binary_ops[i];
        int ran = 0;
        for (size_t d = 0; d < sizeof all_dtypes / sizeof all_dtypes[0]; d++) {
            char name[96];
            snprintf(name, sizeof name, "%s/%s", kiln__op_get_info(op->op)->name,
                     kiln_dtype_name(all_dtypes[d]));
            ev_case c = {.name = name,
                         .fn = {run_binary, (void *)op},
                         .n_in = 2,
                         .n_out = 2,
                         .in = {ANY(all_dtypes[d], SH(6, 5)), ANY(all_dtypes[d], SH(6, 5))},
                         .ops = {op->op},
                         .n_ops = 1,
                         .approx = op->approx};
            ran += run_case(&c, true);
        }
        cr_assert(ran > 0, "%s ran for no dtype", kiln__op_get_info(op->op)->name);
    }
}

/* ---- compare, select, clamp, conversions, constants ---------------------------------------- */

static kiln_status f_compare(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_compare(cx, in[0], in[1], KILN_CMP_LT, KILN_CMP_DEFAULT);
    out[1] = kiln_compare(cx, in[0], in[1], KILN_CMP_NE, KILN_CMP_TOTALORDER);
    out[2] = kiln_compare(cx, in[2], in[3], KILN_CMP_GE, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}

/* complex values built from parts, multiplied, compared and taken apart again */
static kiln_status f_complex(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *z = kiln_complex(cx, in[0], in[1]);
    kiln_tensor *w = kiln_subtract(cx, kiln_multiply(cx, z, z), kiln_negate(cx, z));
    out[0] = w;
    out[1] = kiln_real(cx, w);
    out[2] = kiln_imag(cx, kiln_add(cx, w, z));
    out[3] = kiln_compare(cx, w, z, KILN_CMP_NE, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}

static kiln_status f_select_clamp(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *u) {
    (void)u;
    out[0] = kiln_select(cx, in[0], in[1], in[2]);
    out[1] = kiln_clamp(cx, in[3], in[1], in[4]); /* rank-0 bounds */
    out[2] = kiln_clamp(cx, in[2], in[1], kiln_add(cx, in[2], in[2]));
    return kiln_ctx_status(cx);
}

static kiln_status f_convert(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_convert(cx, in[0], KILN_I32);
    out[1] = kiln_convert(cx, kiln_convert(cx, in[0], KILN_F16), KILN_BF16);
    out[2] = kiln_convert(cx, in[1], KILN_F64);
    out[3] = kiln_convert(cx, in[1], KILN_BOOL);
    out[4] = kiln_convert(cx, in[0], KILN_F32); /* the same dtype */
    return kiln_ctx_status(cx);
}

static kiln_status f_bitcast(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_bitcast_convert(cx, in[0], KILN_I32);
    out[1] = kiln_bitcast_convert(cx, in[0], KILN_U16); /* a new minor dimension */
    out[2] = kiln_bitcast_convert(cx, in[1], KILN_F32); /* u8[...,4] -> f32 */
    return kiln_ctx_status(cx);
}

static kiln_status f_reduce_precision(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                      void *u) {
    (void)u;
    out[0] = kiln_reduce_precision(cx, kiln_multiply(cx, in[0], in[0]), 5, 10);
    out[1] = kiln_reduce_precision(cx, in[1], 3, 1);
    return kiln_ctx_status(cx);
}

static kiln_status scalar_fma(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_add(cx, kiln_multiply(cx, in[0], in[1]), kiln_sine(cx, in[1]));
    return kiln_ctx_status(cx);
}

static kiln_status f_map(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_map(cx, &(kiln_region){scalar_fma, NULL}, in, 2, KILN_F32);
    return kiln_ctx_status(cx);
}

static const float table_data[4][4] = {
    {1, -2, 3.5f, 0}, {0.25f, 9, -1, 2}, {7, 7, -7, 1e-3f}, {1e20f, -0.0f, 3, 2}};

/* A constant made inside the function (recorded as a constant op), and a scalar broadcast
 * (a constant and a broadcast_in_dim the compiler folds). */
static kiln_status f_constants(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *table = kiln_constant(cx, KILN_F32, S(4, 4), table_data, sizeof table_data);
    out[0] = kiln_add(cx, kiln_matmul(cx, in[0], table), in[0]);
    out[1] = kiln_multiply(cx, kiln_scalar(cx, 3, KILN_F32), in[0]);
    out[2] = table; /* a constant returned as a result */
    return kiln_ctx_status(cx);
}

static kiln_status f_rng(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[1] = kiln_rng_bit_generator(cx, in[0], KILN_RNG_THREE_FRY, KILN_U32, S(4, 5), &out[0]);
    kiln_tensor *st;
    out[2] = kiln_rng_bit_generator(cx, out[0], KILN_RNG_PHILOX, KILN_F64, S(3), &st);
    return kiln_ctx_status(cx);
}

static const ev_case misc_cases[] = {
    {.name = "compare",
     .fn = {f_compare, NULL},
     .n_in = 4,
     .n_out = 3,
     .in = {ANY(KILN_F32, SH(5, 4)), ANY(KILN_F32, SH(5, 4)), ANY(KILN_I16, SH(3)),
            ANY(KILN_I16, SH(3))},
     OPS(KILN_OP_COMPARE)},
    {.name = "complex",
     .fn = {f_complex, NULL},
     .n_in = 2,
     .n_out = 4,
     .in = {ANY(KILN_F32, SH(5, 4)), ANY(KILN_F32, SH(5, 4))},
     OPS(KILN_OP_COMPLEX, KILN_OP_REAL, KILN_OP_IMAG)},
    {.name = "select_clamp",
     .fn = {f_select_clamp, NULL},
     .n_in = 5,
     .n_out = 3,
     .in = {ANY(KILN_BOOL, SH(4, 6)), ANY(KILN_F64, SH(4, 6)), ANY(KILN_F64, SH(4, 6)),
            ANY(KILN_F64, SCALAR), ANY(KILN_F64, SCALAR)},
     OPS(KILN_OP_SELECT, KILN_OP_CLAMP)},
    {.name = "convert",
     .fn = {f_convert, NULL},
     .n_in = 2,
     .n_out = 5,
     .in = {ANY(KILN_F32, SH(8, 3)), ANY(KILN_I64, SH(5))},
     OPS(KILN_OP_CONVERT)},
    {.name = "bitcast_convert",
     .fn = {f_bitcast, NULL},
     .n_in = 2,
     .n_out = 3,
     .in = {ANY(KILN_F32, SH(3, 5)), ANY(KILN_U8, SH(2, 4))},
     OPS(KILN_OP_BITCAST_CONVERT)},
    {.name = "reduce_precision",
     .fn = {f_reduce_precision, NULL},
     .n_in = 2,
     .n_out = 2,
     .in = {ANY(KILN_F32, SH(3, 5)), ANY(KILN_F64, SH(7))},
     OPS(KILN_OP_REDUCE_PRECISION)},
    {.name = "map",
     .fn = {f_map, NULL},
     .n_in = 2,
     .n_out = 1,
     .in = {ANY(KILN_F32, SH(3, 4)), ANY(KILN_F32, SH(3, 4))},
     OPS(KILN_OP_MAP)},
    {.name = "constants",
     .fn = {f_constants, NULL},
     .n_in = 1,
     .n_out = 3,
     .in = {ANY(KILN_F32, SH(3, 4))},
     OPS(KILN_OP_CONSTANT, KILN_OP_BROADCAST_IN_DIM, KILN_OP_DOT_GENERAL),
     .approx = true},
    {.name = "rng_bit_generator",
     .fn = {f_rng, NULL},
     .n_in = 1,
     .n_out = 3,
     .in = {ANY(KILN_U64, SH(2))},
     OPS(KILN_OP_RNG_BIT_GENERATOR)},
};

Test(eager_vs_compiled, compare_select_convert_constants) {
    run_table(misc_cases, sizeof misc_cases / sizeof misc_cases[0]);
}

/* iota has no builder that records it (kiln_iota makes a concrete tensor): the module is
 * built by hand. A small iota is folded at compile time; a large one runs per call. */
static kiln_module *iota_module(kiln_ctx *cx, kiln_shape shape) {
    kiln_module *m = kiln__module_new(cx, "iota");
    cr_assert_not_null(m);
    kiln__func *f = kiln__module_add_func(m, "main", true);
    cr_assert_not_null(f);
    kiln__type t = {.dtype = KILN_F32, .shape = shape};
    kiln__value *x = kiln__block_add_arg(m, f->body, t);
    kiln__attrs a = {.fn = "iota"};
    a.u.iota.dtype = KILN_F32;
    a.u.iota.shape = shape;
    a.u.iota.dimension = shape.rank - 1;
    kiln__ir_op *iota = kiln__block_append(m, f->body, KILN_OP_IOTA, &a, NULL, 0, &t, 1, 0);
    kiln__attrs add_a = {.fn = "add"};
    kiln__value *operands[2] = {x, iota->results[0]};
    kiln__ir_op *add = kiln__block_append(m, f->body, KILN_OP_ADD, &add_a, operands, 2, &t, 1, 0);
    kiln__value *results[2] = {add->results[0], iota->results[0]};
    cr_assert_eq(kiln__block_set_results(m, f->body, results, 2), KILN_OK);
    m->donated = kiln__arena_alloc(&m->arena, 1, 1);
    m->preserved = kiln__arena_alloc(&m->arena, 2 * sizeof(int32_t), 4);
    m->aliases = kiln__arena_alloc(&m->arena, 2 * sizeof(int32_t), 4);
    m->donated[0] = false;
    m->preserved[0] = m->preserved[1] = m->aliases[0] = m->aliases[1] = -1;
    return m;
}

Test(eager_vs_compiled, iota_folded_and_run) {
    kiln_ctx *cx = test_ctx();
    const kiln_shape shapes[2] = {KILN_SHAPE(4, 5), KILN_SHAPE(40, 64)};
    const int32_t ops_run[2] = {1, 2};
    for (int k = 0; k < 2; k++) {
        kiln_module *m = iota_module(cx, shapes[k]);
        kiln_exe *exe = NULL;
        cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
        kiln_module_release(m);
        kiln_exe_info info;
        kiln_exe_info_get(cx, exe, &info);
        /* The CPU backend folds the small iota; the interpreter (KILN_BACKEND=interpreter)
         * runs the iota and the add as written. */
        cr_assert_eq(info.n_ops, strcmp(info.backend, "cpu") == 0 ? ops_run[k] : 2);
        spec sp = {.dtype = KILN_F32, .shape = shapes[k], .gen = GEN_ANY};
        rng_state = 7;
        kiln_tensor *x = random_tensor(cx, &sp), *r[2];
        cr_assert_eq(kiln_exe_call(cx, exe, &x, r), KILN_OK, "%s", kiln_ctx_error_message(cx));
        /* eagerly, through the op itself */
        kiln__attrs a = {.fn = "iota"};
        a.u.iota.dtype = KILN_F32;
        a.u.iota.shape = shapes[k];
        a.u.iota.dimension = shapes[k].rank - 1;
        kiln_tensor *iota = kiln__op_run1(cx, KILN_OP_IOTA, &a, NULL, 0);
        expect_same("iota", 1, iota, r[1], false);
        expect_same("iota+x", 0, kiln_add(cx, x, iota), r[0], false);
        kiln_exe_release(exe);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- data movement ------------------------------------------------------------------------- */

static kiln_status f_movement(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = in[0];
    out[0] = kiln_broadcast_in_dim(cx, in[1], S(3, 4, 5), KILN_DIMS(1));
    out[1] = kiln_reshape(cx, kiln_transpose(cx, x, KILN_DIMS(1, 0)), S(5, 2, 2));
    out[2] = kiln_reverse(cx, x, KILN_DIMS(0, 1));
    out[3] = kiln_slice(cx, x, KILN_DIMS(1, 0), KILN_DIMS(4, 5), KILN_DIMS(2, 2));
    out[4] = kiln_pad(cx, x, kiln_scalar(cx, -1.5, KILN_F32), KILN_DIMS(1, -1), KILN_DIMS(0, 2),
                      KILN_DIMS(1, 0));
    out[5] = kiln_concatenate(cx, (kiln_tensor *[]){x, out[2], x}, 3, 0);
    return kiln_ctx_status(cx);
}

static kiln_status f_dynamic(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *starts[2] = {in[1], in[2]};
    out[0] = kiln_dynamic_slice(cx, in[0], starts, KILN_DIMS(2, 3));
    out[1] = kiln_dynamic_update_slice(cx, in[0], kiln_negate(cx, out[0]), starts);
    return kiln_ctx_status(cx);
}

static kiln_status f_gather(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_take(cx, in[0], in[1], 0);
    kiln_gather_params p = {.offset_dims = KILN_DIMS(1),
                            .collapsed_slice_dims = KILN_DIMS(0),
                            .start_index_map = KILN_DIMS(0, 1),
                            .index_vector_dim = 1,
                            .slice_sizes = KILN_DIMS(1, 2)};
    out[1] = kiln_gather(cx, in[0], in[2], &p);
    return kiln_ctx_status(cx);
}

/* A custom scatter region: current * update + 1, in the current's dtype. */
static kiln_status scatter_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, kiln_multiply(cx, a[0], a[1]), kiln_scalar_like(cx, a[0], 1));
    return kiln_ctx_status(cx);
}

/* Two inputs: the first takes the update, the second the sum. */
static kiln_status scatter_region2(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = a[2];
    r[1] = kiln_add(cx, a[1], a[3]);
    return kiln_ctx_status(cx);
}

static kiln_status f_scatter(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_scatter_params p = {.update_window_dims = KILN_DIMS(1),
                             .inserted_window_dims = KILN_DIMS(0),
                             .scatter_dims_to_operand_dims = KILN_DIMS(0),
                             .index_vector_dim = 1};
    kiln_scatter(cx, &in[0], 1, in[1], &in[2], &p, kiln_region_add(), &out[0]);
    kiln_region custom = {scatter_region, NULL}, custom2 = {scatter_region2, NULL};
    kiln_scatter(cx, &in[0], 1, in[1], &in[2], &p, &custom, &out[1]);
    kiln_scatter(cx, (kiln_tensor *[]){in[0], in[0]}, 2, in[1], (kiln_tensor *[]){in[2], in[2]}, &p,
                 &custom2, &out[2]);
    return kiln_ctx_status(cx);
}

/* Descending by the second key, ties by the first ascending. */
static kiln_status sort_by_second(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *gt = kiln_compare(cx, a[2], a[3], KILN_CMP_GT, KILN_CMP_DEFAULT);
    kiln_tensor *eq = kiln_compare(cx, a[2], a[3], KILN_CMP_EQ, KILN_CMP_DEFAULT);
    kiln_tensor *lt0 = kiln_compare(cx, a[0], a[1], KILN_CMP_LT, KILN_CMP_TOTALORDER);
    r[0] = kiln_or(cx, gt, kiln_and(cx, eq, lt0));
    return kiln_ctx_status(cx);
}

static kiln_status f_sort(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_sort(cx, &in[0], 1, 1, true, kiln_region_less(), &out[0]);
    kiln_region custom = {sort_by_second, NULL};
    kiln_sort(cx, (kiln_tensor *[]){in[0], in[1]}, 2, 0, true, &custom, &out[1]);
    return kiln_ctx_status(cx);
}

static const ev_case movement_cases[] = {
    {.name = "movement",
     .fn = {f_movement, NULL},
     .n_in = 2,
     .n_out = 6,
     .in = {ANY(KILN_F32, SH(4, 5)), ANY(KILN_F32, SH(4))},
     OPS(KILN_OP_BROADCAST_IN_DIM, KILN_OP_RESHAPE, KILN_OP_TRANSPOSE, KILN_OP_REVERSE)},
    {.name = "slice_pad_concatenate",
     .fn = {f_movement, NULL},
     .n_in = 2,
     .n_out = 6,
     .in = {ANY(KILN_F32, SH(4, 5)), ANY(KILN_F32, SH(4))},
     OPS(KILN_OP_SLICE, KILN_OP_PAD, KILN_OP_CONCATENATE)},
    {.name = "dynamic_slices",
     .fn = {f_dynamic, NULL},
     .n_in = 3,
     .n_out = 2,
     .in = {ANY(KILN_I32, SH(5, 6)), IDX(KILN_I32, SCALAR, 8), IDX(KILN_I32, SCALAR, 8)},
     OPS(KILN_OP_DYNAMIC_SLICE, KILN_OP_DYNAMIC_UPDATE_SLICE)},
    {.name = "gather",
     .fn = {f_gather, NULL},
     .n_in = 3,
     .n_out = 2,
     .in = {ANY(KILN_F64, SH(6, 4)), IDX(KILN_I32, SH(2, 3), 6), IDX(KILN_I64, SH(5, 2), 7)},
     OPS(KILN_OP_GATHER)},
    {.name = "scatter_builtin_and_custom",
     .fn = {f_scatter, NULL},
     .n_in = 3,
     .n_out = 3,
     .in = {ANY(KILN_I32, SH(6, 3)), IDX(KILN_I32, SH(4, 1), 7), ANY(KILN_I32, SH(4, 3))},
     OPS(KILN_OP_SCATTER)},
    {.name = "sort_builtin_and_custom",
     .fn = {f_sort, NULL},
     .n_in = 2,
     .n_out = 3,
     .in = {ANY(KILN_F32, SH(5, 7)), IDX(KILN_I32, SH(5, 7), 3)},
     OPS(KILN_OP_SORT)},
};

Test(eager_vs_compiled, data_movement) {
    run_table(movement_cases, sizeof movement_cases / sizeof movement_cases[0]);
}

/* ---- reductions ---------------------------------------------------------------------------- */

/* acc * 0.5 + x * scale, with scale captured from the enclosing function. */
static kiln_status reduce_scaled(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    kiln_tensor *scale = *(kiln_tensor **)u;
    r[0] = kiln_add(cx, kiln_multiply(cx, a[0], kiln_scalar_like(cx, a[0], 0.5)),
                    kiln_multiply(cx, a[1], scale));
    return kiln_ctx_status(cx);
}

/* Over (value, count) pairs: the sum of values, the count of values above 0. */
static kiln_status reduce_pair(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, a[0], a[2]);
    kiln_tensor *pos =
        kiln_compare(cx, a[2], kiln_scalar_like(cx, a[2], 0), KILN_CMP_GT, KILN_CMP_DEFAULT);
    r[1] = kiln_add(cx, a[1], kiln_convert(cx, pos, KILN_I32));
    return kiln_ctx_status(cx);
}

static kiln_status f_reduce(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = in[0], *scale = in[1];
    out[0] = kiln_sum(cx, x, KILN_DIMS(1), false);
    kiln_region custom = {reduce_scaled, &scale};
    kiln_tensor *zero = kiln_scalar(cx, 0, KILN_F32);
    kiln_reduce(cx, &x, &zero, 1, KILN_DIMS(0), &custom, &out[1]);
    out[2] = kiln_argmax(cx, x, 1, false);
    kiln_region pair = {reduce_pair, NULL};
    kiln_tensor *ones =
        kiln_convert(cx, kiln_compare(cx, x, x, KILN_CMP_EQ, KILN_CMP_DEFAULT), KILN_I32);
    kiln_reduce(cx, (kiln_tensor *[]){x, ones},
                (kiln_tensor *[]){zero, kiln_scalar(cx, 0, KILN_I32)}, 2, KILN_DIMS(1), &pair,
                &out[3]);
    return kiln_ctx_status(cx);
}

static kiln_status add_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, a[0], a[1]);
    return kiln_ctx_status(cx);
}

static kiln_status greater_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_compare(cx, a[0], a[1], KILN_CMP_GT, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}

static kiln_status f_windows(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = in[0];
    kiln_window_params w = {.window_dimensions = KILN_DIMS(2, 3),
                            .window_strides = KILN_DIMS(1, 2),
                            .padding_low = KILN_DIMS(1, 0),
                            .padding_high = KILN_DIMS(0, 1)};
    kiln_tensor *lowest = kiln_scalar(cx, -INFINITY, KILN_F32),
                *zero = kiln_scalar(cx, 0, KILN_F32);
    kiln_reduce_window(cx, &x, &lowest, 1, &w, kiln_region_maximum(), &out[0]);
    kiln_region add = {add_region, NULL}, greater = {greater_region, NULL};
    kiln_reduce_window(cx, &x, &zero, 1, &w, &add, &out[1]);
    kiln_window_params sw = {.window_dimensions = KILN_DIMS(2, 2),
                             .window_strides = KILN_DIMS(2, 2)};
    out[2] = kiln_select_and_scatter(cx, x, in[1], zero, &sw, kiln_region_greater_equal(),
                                     kiln_region_add());
    out[3] = kiln_select_and_scatter(cx, x, in[1], zero, &sw, &greater, &add);
    return kiln_ctx_status(cx);
}

static const ev_case reduce_cases[] = {
    {.name = "reduce_builtin_custom_variadic",
     .fn = {f_reduce, NULL},
     .n_in = 2,
     .n_out = 5,
     .in = {ANY(KILN_F32, SH(6, 7)), ANY(KILN_F32, SCALAR)},
     OPS(KILN_OP_REDUCE)},
    {.name = "reduce_window_select_and_scatter",
     .fn = {f_windows, NULL},
     .n_in = 2,
     .n_out = 4,
     .in = {POS(KILN_F32, SH(6, 8)), ANY(KILN_F32, SH(3, 4))},
     OPS(KILN_OP_REDUCE_WINDOW, KILN_OP_SELECT_AND_SCATTER)},
};

Test(eager_vs_compiled, reductions) {
    run_table(reduce_cases, sizeof reduce_cases / sizeof reduce_cases[0]);
}

/* ---- contractions -------------------------------------------------------------------------- */

static kiln_status f_linalg(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_matmul(cx, in[0], in[1]);
    kiln_dot_params p = {.lhs_contracting_dims = KILN_DIMS(1),
                         .rhs_contracting_dims = KILN_DIMS(0)};
    out[1] = kiln_dot_general(cx, in[2], in[3], &p, KILN_I32);
    kiln_conv_params cp = kiln_conv_params_nchw(2);
    cp.padding_low = cp.padding_high = KILN_DIMS(1, 1);
    cp.window_strides = KILN_DIMS(2, 1);
    out[2] = kiln_convolution(cx, in[4], in[5], &cp, KILN_DTYPE_COUNT);
    return kiln_ctx_status(cx);
}

/* every fft type, of a length Bluestein runs (37) and a mixed-radix one (4 x 6) */
static kiln_status f_fft(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *z = kiln_complex(cx, in[0], in[1]);
    out[0] = kiln_fft(cx, z, KILN_FFT_FORWARD, KILN_DIMS(37));
    out[1] = kiln_fft(cx, out[0], KILN_FFT_INVERSE, KILN_DIMS(37));
    out[2] = kiln_fft(cx, in[2], KILN_FFT_REAL, KILN_DIMS(4, 6));
    out[3] = kiln_fft(cx, out[2], KILN_FFT_INVERSE_REAL, KILN_DIMS(4, 6));
    return kiln_ctx_status(cx);
}

/* a factor, and solves with it from both sides */
static kiln_status f_triangular(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *spd =
        kiln_add(cx, kiln_matmul(cx, in[0], kiln_transpose(cx, in[0], KILN_DIMS(0, 2, 1))),
                 kiln_full(cx, KILN_F64, KILN_SHAPE(2, 3, 3), 3.0));
    out[0] = kiln_cholesky(cx, spd, true);
    out[1] = kiln_triangular_solve(cx, out[0], in[1], true, true, false, KILN_TRANSPOSE_NONE);
    out[2] = kiln_triangular_solve(cx, spd, kiln_transpose(cx, in[1], KILN_DIMS(0, 2, 1)), false,
                                   false, true, KILN_TRANSPOSE_ADJOINT);
    return kiln_ctx_status(cx);
}

static const ev_case linalg_cases[] = {
    {.name = "triangular",
     .fn = {f_triangular, NULL},
     .n_in = 2,
     .n_out = 3,
     .in = {ANY(KILN_F64, SH(2, 3, 3)), ANY(KILN_F64, SH(2, 3, 4))},
     OPS(KILN_OP_CHOLESKY, KILN_OP_TRIANGULAR_SOLVE),
     .approx = true},
    {.name = "fft",
     .fn = {f_fft, NULL},
     .n_in = 3,
     .n_out = 4,
     .in = {ANY(KILN_F64, SH(3, 37)), ANY(KILN_F64, SH(3, 37)), ANY(KILN_F32, SH(2, 4, 6))},
     OPS(KILN_OP_FFT)},
    {.name = "dot_general_convolution",
     .fn = {f_linalg, NULL},
     .n_in = 6,
     .n_out = 3,
     .in = {ANY(KILN_F32, SH(4, 5)), ANY(KILN_F32, SH(5, 3)), ANY(KILN_I8, SH(3, 4)),
            ANY(KILN_I8, SH(4, 2)), ANY(KILN_F32, SH(2, 3, 6, 6)), ANY(KILN_F32, SH(4, 3, 3, 3))},
     OPS(KILN_OP_DOT_GENERAL, KILN_OP_CONVOLUTION),
     .approx = true},
};

Test(eager_vs_compiled, contractions) {
    run_table(linalg_cases, sizeof linalg_cases / sizeof linalg_cases[0]);
}

/* ---- control flow -------------------------------------------------------------------------- */

typedef struct loop_env {
    kiln_tensor *scale; /* a tensor of the enclosing function, used inside regions */
} loop_env;

static kiln_status while_cond(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_compare(cx, a[0], kiln_scalar(cx, 5, KILN_I32), KILN_CMP_LT, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}

/* Nested: a custom reduce inside the loop body whose region uses the enclosing function's
 * `scale` (two blocks out). */
static kiln_status while_body(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    loop_env *env = u;
    kiln_region custom = {reduce_scaled, &env->scale};
    kiln_tensor *zero = kiln_scalar(cx, 0, KILN_F32), *s = NULL;
    kiln_reduce(cx, &a[1], &zero, 1, KILN_DIMS(0, 1), &custom, &s);
    r[0] = kiln_add(cx, a[0], kiln_scalar(cx, 1, KILN_I32));
    r[1] = kiln_add(cx, kiln_multiply(cx, a[1], env->scale), kiln_tanh(cx, s));
    return kiln_ctx_status(cx);
}

static kiln_status f_while(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    loop_env env = {.scale = in[1]};
    kiln_region cond = {while_cond, NULL}, body = {while_body, &env};
    kiln_tensor *init[2] = {kiln_scalar(cx, 0, KILN_I32), in[0]};
    kiln_status s = kiln_while(cx, init, 2, &cond, &body, out);
    if (s != KILN_OK) return s;
    out[2] = kiln_add(cx, out[1], in[0]);
    return kiln_ctx_status(cx);
}

static kiln_status fori_body(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    loop_env *env = u;
    kiln_tensor *i = kiln_convert(cx, a[0], kiln_tensor_dtype(a[1]));
    r[0] = kiln_add(cx, kiln_multiply(cx, a[1], env->scale), i);
    return kiln_ctx_status(cx);
}

static kiln_status f_fori(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    loop_env env = {.scale = in[1]};
    kiln_region body = {fori_body, &env};
    kiln_status s = kiln_fori_loop(cx, 1, 4, &in[0], 1, &body, &out[0]);
    if (s != KILN_OK) return s;
    /* A loop that runs 0 times returns its init. */
    return kiln_fori_loop(cx, 3, 3, &in[0], 1, &body, &out[1]);
}

/* A counted loop whose cond never runs the body: the results are the inits. */
static kiln_status never(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_compare(cx, a[0], a[0], KILN_CMP_LT, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}

static kiln_status f_while_zero_trips(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                      void *u) {
    (void)u;
    loop_env env = {.scale = in[1]};
    kiln_region cond = {never, NULL}, body = {while_body, &env};
    kiln_tensor *init[2] = {kiln_scalar(cx, 0, KILN_I32), in[0]};
    return kiln_while(cx, init, 2, &cond, &body, out);
}

typedef struct branch_env {
    kiln_tensor *x, *y;
} branch_env;

static kiln_status on_true(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a;
    branch_env *e = u;
    r[0] = kiln_add(cx, e->x, e->y);
    r[1] = e->y; /* an outer value returned unchanged */
    return kiln_ctx_status(cx);
}

static kiln_status on_false(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a;
    branch_env *e = u;
    r[0] = kiln_multiply(cx, e->x, e->x);
    r[1] = kiln_negate(cx, e->y);
    return kiln_ctx_status(cx);
}

static kiln_status branch_const(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a;
    branch_env *e = u;
    r[0] = kiln_subtract(cx, e->x, kiln_scalar(cx, 10, KILN_F32));
    r[1] = kiln_full(cx, KILN_F32, S(3), 2.5); /* a constant */
    return kiln_ctx_status(cx);
}

static kiln_status f_if(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    branch_env e = {.x = in[0], .y = in[1]};
    kiln_region t = {on_true, &e}, f = {on_false, &e};
    kiln_tensor *pred = kiln_compare(cx, reduce_sum(cx, in[0], KILN_DIMS(0)),
                                     kiln_scalar(cx, 0, KILN_F32), KILN_CMP_GT, KILN_CMP_DEFAULT);
    kiln_status s = kiln_cond(cx, pred, &t, &f, NULL, 0, 2, out);
    if (s != KILN_OK) return s;
    return kiln_cond(cx, in[2], &t, &f, NULL, 0, 2, out + 2);
}

static kiln_status f_case(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    branch_env e = {.x = in[0], .y = in[1]};
    kiln_region branches[3] = {{on_true, &e}, {on_false, &e}, {branch_const, &e}};
    kiln_status s = kiln_case(cx, in[2], branches, 3, NULL, 0, 2, out);
    if (s != KILN_OK) return s;
    return kiln_case(cx, in[3], branches, 3, NULL, 0, 2, out + 2);
}

/* More branches than run_op binds without allocating. */
static kiln_status f_case6(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    branch_env e = {.x = in[0], .y = in[1]};
    kiln_region branches[6] = {{on_true, &e},      {on_false, &e}, {branch_const, &e},
                               {branch_const, &e}, {on_true, &e},  {on_false, &e}};
    return kiln_case(cx, in[2], branches, 6, NULL, 0, 2, out);
}

static kiln_status callee(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, a[0], a[1]);
    r[1] = reduce_sum(cx, kiln_multiply(cx, a[0], a[1]), KILN_DIMS(0));
    return kiln_ctx_status(cx);
}

static kiln_status f_call_barrier(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *u) {
    (void)u;
    kiln_region c = {callee, NULL};
    kiln_status s = kiln_call(cx, &c, in, 2, 2, out);
    if (s != KILN_OK) return s;
    return kiln_optimization_barrier(cx, (kiln_tensor *[]){out[0], in[1]}, 2, out + 2);
}

static const ev_case control_cases[] = {
    {.name = "while_nested_regions_captures",
     .fn = {f_while, NULL},
     .n_in = 2,
     .n_out = 3,
     .in = {ANY(KILN_F32, SH(3, 4)), POS(KILN_F32, SCALAR)},
     OPS(KILN_OP_WHILE, KILN_OP_REDUCE),
     .approx = true},
    {.name = "while_zero_trips",
     .fn = {f_while_zero_trips, NULL},
     .n_in = 2,
     .n_out = 2,
     .in = {ANY(KILN_F32, SH(2, 3)), ANY(KILN_F32, SCALAR)},
     OPS(KILN_OP_WHILE)},
    {.name = "if",
     .fn = {f_if, NULL},
     .n_in = 3,
     .n_out = 4,
     .in = {ANY(KILN_F32, SH(3)), ANY(KILN_F32, SH(3)), ANY(KILN_BOOL, SCALAR)},
     OPS(KILN_OP_IF)},
    {.name = "case",
     .fn = {f_case, NULL},
     .n_in = 4,
     .n_out = 4,
     .in = {ANY(KILN_F32, SH(3)), ANY(KILN_F32, SH(3)), IDX(KILN_I32, SCALAR, 3),
            IDX(KILN_I32, SCALAR, 5)},
     OPS(KILN_OP_CASE)},
    {.name = "case_six_branches",
     .fn = {f_case6, NULL},
     .n_in = 3,
     .n_out = 2,
     .in = {ANY(KILN_F32, SH(3)), ANY(KILN_F32, SH(3)), IDX(KILN_I32, SCALAR, 7)},
     OPS(KILN_OP_CASE)},
    {.name = "call_optimization_barrier",
     .fn = {f_call_barrier, NULL},
     .n_in = 2,
     .n_out = 4,
     .in = {ANY(KILN_I64, SH(4, 2)), ANY(KILN_I64, SH(4, 2))},
     OPS(KILN_OP_CALL, KILN_OP_OPTIMIZATION_BARRIER)},
};

Test(eager_vs_compiled, control_flow) {
    run_table(control_cases, sizeof control_cases / sizeof control_cases[0]);
}

/* Every branch of if and case, out-of-range case indices included (the last branch). */
Test(eager_vs_compiled, every_branch) {
    for (int64_t v = -1; v < 5; v++) {
        char name[32];
        snprintf(name, sizeof name, "case_%d", (int)v);
        ev_case c = control_cases[3];
        c.name = name;
        c.in[2] = (spec)FILL(KILN_I32, SCALAR, v);
        c.in[3] = (spec)FILL(KILN_I32, SCALAR, 4 - v);
        run_case(&c, false);
    }
    for (int64_t v = 0; v < 7; v++) {
        char name[32];
        snprintf(name, sizeof name, "case6_%d", (int)v);
        ev_case c = control_cases[4];
        c.name = name;
        c.in[2] = (spec)FILL(KILN_I32, SCALAR, v);
        run_case(&c, false);
    }
    for (int64_t v = 0; v < 2; v++) {
        ev_case c = control_cases[2];
        c.name = v ? "if_true" : "if_false";
        c.in[2] = (spec)FILL(KILN_BOOL, SCALAR, v);
        run_case(&c, false);
    }
}

/* ---- coverage ------------------------------------------------------------------------------ */

Test(eager_vs_compiled, every_op_has_a_case) {
    bool covered[KILN_OP_COUNT] = {false};
    for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
        covered[unary_ops[i].op] = true;
    for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++)
        covered[binary_ops[i].op] = true;
    const struct {
        const ev_case *cases;
        size_t n;
    } tables[] = {{misc_cases, sizeof misc_cases / sizeof misc_cases[0]},
                  {movement_cases, sizeof movement_cases / sizeof movement_cases[0]},
                  {reduce_cases, sizeof reduce_cases / sizeof reduce_cases[0]},
                  {linalg_cases, sizeof linalg_cases / sizeof linalg_cases[0]},
                  {control_cases, sizeof control_cases / sizeof control_cases[0]}};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (size_t i = 0; i < tables[t].n; i++)
            for (int k = 0; k < tables[t].cases[i].n_ops; k++)
                covered[tables[t].cases[i].ops[k]] = true;
    covered[KILN_OP_IOTA] = true; /* iota_folded_and_run */
    /* The collectives need several processes: spmd/eager_equals_compiled_on_a_grid; those
     * without builders (collective_reduce, run_parallel) are the conformance cases, run in
     * both modes (conformance_parallel_eval, _compiled). */
    const kiln_op spmd[] = {KILN_OP_REPLICA_ID,         KILN_OP_PARTITION_ID,
                            KILN_OP_ALL_REDUCE,         KILN_OP_ALL_GATHER,
                            KILN_OP_REDUCE_SCATTER,     KILN_OP_ALL_TO_ALL,
                            KILN_OP_COLLECTIVE_PERMUTE, KILN_OP_COLLECTIVE_BROADCAST,
                            KILN_OP_COLLECTIVE_REDUCE,  KILN_OP_RUN_PARALLEL};
    for (size_t i = 0; i < sizeof spmd / sizeof spmd[0]; i++)
        covered[spmd[i]] = true;
    /* No backend runs a custom_call: both modes refuse it (tests/ir/test_custom_call.c). */
    covered[KILN_OP_CUSTOM_CALL] = true;
    /* No builder makes the dynamic-shape ops (their result types are declared in text) or
     * the token and tuple ops: tests/ops/test_dynamic.c, test_token.c and test_tuple.c run
     * them in every backend, and the interpreter's conformance cases in both modes. */
    const kiln_op text_only[] = {KILN_OP_DYNAMIC_IOTA,       KILN_OP_DYNAMIC_BROADCAST_IN_DIM,
                                 KILN_OP_DYNAMIC_RESHAPE,    KILN_OP_DYNAMIC_PAD,
                                 KILN_OP_DYNAMIC_GATHER,     KILN_OP_DYNAMIC_CONV,
                                 KILN_OP_GET_DIMENSION_SIZE, KILN_OP_AFTER_ALL,
                                 KILN_OP_CREATE_TOKEN,       KILN_OP_TUPLE,
                                 KILN_OP_GET_TUPLE_ELEMENT};
    for (size_t i = 0; i < sizeof text_only / sizeof text_only[0]; i++)
        covered[text_only[i]] = true;
    int missing = 0;
    for (int op = 0; op < KILN_OP_COUNT; op++) {
        if (!covered[op]) {
            cr_log_error("op '%s' has no eager-vs-compiled case",
                         kiln__op_get_info((kiln_op)op)->name);
            missing++;
        }
    }
    cr_assert_eq(missing, 0, "%d ops of ops.def have no eager-vs-compiled case", missing);
}

/* kiln_sum (and the other numpy reductions) and kiln_fori_loop make concrete scalars (the
 * init, the loop counter) that the trace captures as constants of the module. */
static kiln_status f_numpy_sum(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_sum(cx, in[0], KILN_DIMS(0), false);
    return kiln_ctx_status(cx);
}

static const ev_case numpy_cases[] = {
    {.name = "kiln_sum",
     .fn = {f_numpy_sum, NULL},
     .n_in = 1,
     .n_out = 1,
     .in = {ANY(KILN_F32, SH(4, 3))},
     OPS(KILN_OP_REDUCE)},
    {.name = "fori_loop",
     .fn = {f_fori, NULL},
     .n_in = 2,
     .n_out = 2,
     .in = {ANY(KILN_F64, SH(5)), ANY(KILN_F64, SCALAR)},
     OPS(KILN_OP_WHILE)},
};

Test(eager_vs_compiled, numpy_reductions_and_fori_loop) {
    run_table(numpy_cases, sizeof numpy_cases / sizeof numpy_cases[0]);
}
