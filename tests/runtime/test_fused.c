/* SPDX-License-Identifier: Apache-2.0 */
/* The fused-kernel engine against the evaluator: every function here is lowered twice and
 * compiled with fusion on and off (off: every op runs through the evaluator's own kernel),
 * then both executables run on the same random bits and must agree bit for bit (float sums
 * of fused reductions: within a rounding bound, their order differs). Covers every
 * elementwise op and dtype, views (broadcast, transpose, slice, reverse, reshape, iota),
 * reductions over inner, outer, middle and all axes, multi-output kernels, f16/bf16,
 * in-place and donated buffers, and thread counts. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/threads.h"
#include "failing_allocator.h"
#include "test_util.h"

static uint64_t rng = 1;

static uint64_t next_bits(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Random bytes (every float bit pattern: NaN, infinities, -0, subnormals), with a share of
 * small values so that integer division, shifts and float math also see ordinary
 * operands; i1 is 0 or 1. */
static kiln_tensor *random_tensor(kiln_ctx *cx, kiln_dtype dt, kiln_shape shape) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    size_t es = kiln_dtype_size(dt);
    unsigned char *buf = calloc((size_t)(n ? n : 1), es);
    cr_assert_not_null(buf);
    for (int64_t i = 0; i < n; i++) {
        uint64_t b = next_bits();
        if (dt == KILN_BOOL) {
            b &= 1u;
        } else if (b % 3 == 0) {
            /* a small value: integers -4..4, floats -4..4 in steps of 1/4 */
            int64_t v = (int64_t)((b >> 8) % 33) - 16;
            if (dt == KILN_F32) {
                float f = (float)v / 4;
                memcpy(&b, &f, 4);
            } else if (dt == KILN_F64) {
                double f = (double)v / 4;
                memcpy(&b, &f, 8);
            } else if (dt == KILN_F16 || dt == KILN_BF16) {
                float f = (float)v / 4;
                uint16_t h = dt == KILN_F16 ? kiln_f32_to_f16(f) : kiln_f32_to_bf16(f);
                b = h;
            } else {
                b = (uint64_t)(v / 4);
            }
        }
        memcpy(buf + (size_t)i * es, &b, es);
    }
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, shape, buf, (size_t)n * es);
    free(buf);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

static kiln_exe *compile(kiln_ctx *cx, kiln_region_fn f, void *user, const kiln_arg_spec *args,
                         int32_t n_args, int32_t n_results, bool fuse) {
    kiln_region fn = {f, user};
    kiln_module *m = NULL;
    if (kiln_lower(cx, &fn, args, n_args, n_results, NULL, &m) != KILN_OK) return NULL;
    kiln_compile_options o = kiln_compile_options_default();
    o.disable_fusion = !fuse;
    kiln_exe *exe = NULL;
    kiln_status s = kiln_compile(cx, m, &o, &exe);
    kiln_module_release(m);
    cr_assert_eq(s, KILN_OK, "%s", kiln_ctx_error_message(cx));
    return exe;
}

/* Relative tolerance of a float comparison: 0 means bit for bit. */
static void expect_same(const kiln_tensor *want, const kiln_tensor *got, double tol,
                        const char *tag) {
    cr_assert_eq(kiln_tensor_dtype(want), kiln_tensor_dtype(got), "%s: dtype", tag);
    size_t n = kiln_tensor_nbytes(want);
    cr_assert_eq(n, kiln_tensor_nbytes(got), "%s: size", tag);
    if (n == 0) return;
    const unsigned char *a = kiln_tensor_data(want), *b = kiln_tensor_data(got);
    if (tol == 0) {
        /* native kernels (the suite's KILN_NATIVE=wait run): two NaNs added or multiplied
         * may give either one (codegen/kernel_source.h), so a NaN stands for any NaN */
        const char *native = getenv("KILN_NATIVE");
        bool any_nan = native && strcmp(native, "off") != 0;
        size_t es = kiln_dtype_size(kiln_tensor_dtype(want));
        for (size_t i = 0; i < n; i++) {
            if (a[i] == b[i]) continue;
            size_t e = i / es * es;
            if (any_nan && test_is_nan(kiln_tensor_dtype(want), a + e) &&
                test_is_nan(kiln_tensor_dtype(want), b + e)) {
                i = e + es - 1;
                continue;
            }
            cr_assert_eq(a[i], b[i], "%s: byte %zu differs (0x%02x vs 0x%02x)", tag, i, a[i], b[i]);
        }
        return;
    }
    kiln_dtype dt = kiln_tensor_dtype(want);
    int64_t m = kiln_tensor_numel(want);
    for (int64_t i = 0; i < m; i++) {
        double x = dt == KILN_F32 ? ((const float *)(const void *)a)[i]
                                  : ((const double *)(const void *)a)[i];
        double y = dt == KILN_F32 ? ((const float *)(const void *)b)[i]
                                  : ((const double *)(const void *)b)[i];
        if ((isnan(x) && isnan(y)) || x == y) continue;
        cr_assert(fabs(x - y) <= tol * (1 + fabs(x)), "%s: element %lld: %.9g vs %.9g", tag,
                  (long long)i, x, y);
    }
}

/* Runs f fused and unfused on the same inputs; returns the fused executable's info. */
static kiln_exe_info check_fn(kiln_ctx *cx, kiln_region_fn f, void *user, const kiln_arg_spec *args,
                              int32_t n_args, int32_t n_results, double tol, const char *tag) {
    kiln_scope_begin(cx);
    kiln_exe *ref = compile(cx, f, user, args, n_args, n_results, false);
    kiln_exe *fused = compile(cx, f, user, args, n_args, n_results, true);
    kiln_exe_info info;
    cr_assert_eq(kiln_exe_info_get(cx, fused, &info), KILN_OK);
    kiln_tensor *in[8], *want[8], *got[8];
    for (int32_t i = 0; i < n_args; i++)
        in[i] = random_tensor(cx, args[i].dtype, args[i].shape);
    cr_assert_eq(kiln_exe_call(cx, ref, in, want), KILN_OK, "%s: %s", tag,
                 kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_exe_call(cx, fused, in, got), KILN_OK, "%s: %s", tag,
                 kiln_ctx_error_message(cx));
    for (int32_t r = 0; r < n_results; r++)
        expect_same(want[r], got[r], tol, tag);
    kiln_exe_release(ref);
    kiln_exe_release(fused);
    kiln_scope_end(cx);
    expect_ok(cx);
    return info;
}

#define FN(name) \
    static kiln_status name(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user)

/* ---- every elementwise op and dtype ------------------------------------------------------- */

typedef kiln_tensor *(*unary_fn)(kiln_ctx *, kiln_tensor *);
typedef kiln_tensor *(*binary_fn)(kiln_ctx *, kiln_tensor *, kiln_tensor *);

static const struct {
    const char *name;
    unary_fn f;
} unary_ops[] = {
    {"abs", kiln_abs},
    {"negate", kiln_negate},
    {"sign", kiln_sign},
    {"not", kiln_not},
    {"floor", kiln_floor},
    {"ceil", kiln_ceil},
    {"round_nearest_afz", kiln_round_nearest_afz},
    {"round_nearest_even", kiln_round_nearest_even},
    {"sqrt", kiln_sqrt},
    {"rsqrt", kiln_rsqrt},
    {"cbrt", kiln_cbrt},
    {"exponential", kiln_exponential},
    {"exponential_minus_one", kiln_exponential_minus_one},
    {"log", kiln_log},
    {"log_plus_one", kiln_log_plus_one},
    {"logistic", kiln_logistic},
    {"sine", kiln_sine},
    {"cosine", kiln_cosine},
    {"tan", kiln_tan},
    {"tanh", kiln_tanh},
    {"is_finite", kiln_is_finite},
    {"popcnt", kiln_popcnt},
    {"count_leading_zeros", kiln_count_leading_zeros},
};

static const struct {
    const char *name;
    binary_fn f;
} binary_ops[] = {
    {"add", kiln_add},
    {"subtract", kiln_subtract},
    {"multiply", kiln_multiply},
    {"divide", kiln_divide},
    {"remainder", kiln_remainder},
    {"power", kiln_power},
    {"maximum", kiln_maximum},
    {"minimum", kiln_minimum},
    {"atan2", kiln_atan2},
    {"and", kiln_and},
    {"or", kiln_or},
    {"xor", kiln_xor},
    {"shift_left", kiln_shift_left},
    {"shift_right_arithmetic", kiln_shift_right_arithmetic},
    {"shift_right_logical", kiln_shift_right_logical},
};

static const kiln_dtype all_dtypes[] = {KILN_BOOL, KILN_I8,  KILN_I16, KILN_I32, KILN_I64,
                                        KILN_U8,   KILN_U16, KILN_U32, KILN_U64, KILN_F16,
                                        KILN_BF16, KILN_F32, KILN_F64};
#define N_DTYPES ((int)(sizeof all_dtypes / sizeof all_dtypes[0]))

/* Two instructions per kernel, so that registers feed registers: op(op(x)) or
 * op(op(x, y), y). */
FN(unary_twice) {
    unary_fn f = *(const unary_fn *)user;
    out[0] = f(cx, f(cx, in[0]));
    return kiln_ctx_status(cx);
}

FN(binary_twice) {
    binary_fn f = *(const binary_fn *)user;
    out[0] = f(cx, f(cx, in[0], in[1]), in[1]);
    return kiln_ctx_status(cx);
}

/* Whether the op takes the dtype (asked of the builder on a small eager tensor). */
static bool accepts(kiln_ctx *cx, unary_fn u, binary_fn b, kiln_dtype dt) {
    kiln_scope_begin(cx);
    kiln_tensor *x = kiln_zeros(cx, dt, KILN_SHAPE(1));
    kiln_tensor *r = u ? u(cx, x) : b(cx, x, x);
    kiln_scope_end(cx);
    kiln_ctx_clear_error(cx);
    return r != NULL;
}

Test(fused, every_unary_op_and_dtype_matches_the_evaluator) {
    kiln_ctx *cx = test_ctx();
    kiln_shape shape = KILN_SHAPE(3, 1100); /* several tiles and a partial one */
    int checked = 0;
    for (size_t k = 0; k < sizeof unary_ops / sizeof unary_ops[0]; k++) {
        for (int d = 0; d < N_DTYPES; d++) {
            kiln_dtype dt = all_dtypes[d];
            if (!accepts(cx, unary_ops[k].f, NULL, dt)) continue;
            /* is_finite returns i1, which it does not take: one application. */
            bool once = strcmp(unary_ops[k].name, "is_finite") == 0;
            if (once) continue;
            char tag[96];
            snprintf(tag, sizeof tag, "%s %s", unary_ops[k].name, kiln_dtype_name(dt));
            kiln_arg_spec a = {.dtype = dt, .shape = shape};
            kiln_exe_info info =
                check_fn(cx, unary_twice, (void *)&unary_ops[k].f, &a, 1, 1, 0, tag);
            /* not(not(x)) and negate(negate(x)) cancel before fusion */
            cr_assert_leq(info.n_kernels, 1, "%s: %d kernels", tag, info.n_kernels);
            checked += info.n_kernels;
        }
    }
    cr_assert_gt(checked, 70);
    kiln_ctx_release(cx);
}

FN(is_finite_fn) {
    (void)user;
    out[0] = kiln_and(cx, kiln_is_finite(cx, in[0]), kiln_is_finite(cx, kiln_negate(cx, in[0])));
    return kiln_ctx_status(cx);
}

Test(fused, is_finite_on_every_float_dtype) {
    kiln_ctx *cx = test_ctx();
    const kiln_dtype dts[] = {KILN_F16, KILN_BF16, KILN_F32, KILN_F64};
    for (int d = 0; d < 4; d++) {
        kiln_arg_spec a = {.dtype = dts[d], .shape = KILN_SHAPE(2000)};
        kiln_exe_info info = check_fn(cx, is_finite_fn, NULL, &a, 1, 1, 0, "is_finite");
        cr_assert_eq(info.n_kernels, 1);
    }
    kiln_ctx_release(cx);
}

Test(fused, every_binary_op_and_dtype_matches_the_evaluator) {
    kiln_ctx *cx = test_ctx();
    kiln_shape shape = KILN_SHAPE(2100);
    int checked = 0;
    for (size_t k = 0; k < sizeof binary_ops / sizeof binary_ops[0]; k++) {
        for (int d = 0; d < N_DTYPES; d++) {
            kiln_dtype dt = all_dtypes[d];
            if (!accepts(cx, NULL, binary_ops[k].f, dt)) continue;
            char tag[96];
            snprintf(tag, sizeof tag, "%s %s", binary_ops[k].name, kiln_dtype_name(dt));
            kiln_arg_spec a[2] = {{.dtype = dt, .shape = shape}, {.dtype = dt, .shape = shape}};
            kiln_exe_info info =
                check_fn(cx, binary_twice, (void *)&binary_ops[k].f, a, 2, 1, 0, tag);
            cr_assert_eq(info.n_kernels, 1, "%s: %d kernels", tag, info.n_kernels);
            checked++;
        }
    }
    cr_assert_gt(checked, 100);
    kiln_ctx_release(cx);
}

/* compare (every direction), select, clamp and convert between every pair of dtypes. */
FN(compare_select_clamp) {
    kiln_dtype dt = kiln_tensor_dtype(in[0]);
    (void)user;
    kiln_tensor *acc = in[0];
    for (int dir = 0; dir < 6; dir++) {
        kiln_tensor *p =
            kiln_compare(cx, in[0], in[1], (kiln_compare_direction)dir, KILN_CMP_DEFAULT);
        acc = kiln_select(cx, p, acc, in[1]);
    }
    out[0] = kiln_clamp(cx, in[1], acc, kiln_maximum(cx, in[0], in[1]));
    (void)dt;
    return kiln_ctx_status(cx);
}

Test(fused, compare_select_clamp_on_every_dtype) {
    kiln_ctx *cx = test_ctx();
    for (int d = 0; d < N_DTYPES; d++) {
        kiln_dtype dt = all_dtypes[d];
        kiln_arg_spec a[2] = {{.dtype = dt, .shape = KILN_SHAPE(1500)},
                              {.dtype = dt, .shape = KILN_SHAPE(1500)}};
        kiln_exe_info info =
            check_fn(cx, compare_select_clamp, NULL, a, 2, 1, 0, kiln_dtype_name(dt));
        cr_assert_eq(info.n_kernels, 1, "%s", kiln_dtype_name(dt));
    }
    kiln_ctx_release(cx);
}

/* clamp between two scalar bounds (user: the pair, as doubles): the fused engine reads them
 * as one value each (a primitive of its own), never spread over a tile. */
FN(clamp_scalar_bounds) {
    const double *b = user;
    kiln_dtype dt = kiln_tensor_dtype(in[0]);
    out[0] = kiln_clamp(cx, kiln_scalar(cx, b[0], dt), in[0], kiln_scalar(cx, b[1], dt));
    return kiln_ctx_status(cx);
}

Test(fused, clamp_between_scalar_bounds_runs_a_primitive_and_matches_the_evaluator) {
    kiln_ctx *cx = test_ctx();
    /* ordinary, signed zeros, infinite, NaN and crossed (lo > hi) bounds */
    const double bounds[][2] = {{-0.5, 2.0}, {-0.0, 0.0}, {0.0, -0.0}, {-INFINITY, 1.0},
                                {NAN, 1.0},  {-1.0, NAN}, {3.0, -3.0}};
    const kiln_dtype dts[] = {KILN_F32, KILN_F64, KILN_F16, KILN_BF16};
    for (int t = 0; t < 4; t++) {
        for (size_t k = 0; k < sizeof bounds / sizeof bounds[0]; k++) {
            char tag[64];
            snprintf(tag, sizeof tag, "%s [%g, %g]", kiln_dtype_name(dts[t]), bounds[k][0],
                     bounds[k][1]);
            kiln_arg_spec a = {.dtype = dts[t], .shape = KILN_SHAPE(3000)};
            kiln_exe_info info =
                check_fn(cx, clamp_scalar_bounds, (void *)bounds[k], &a, 1, 1, 0, tag);
            cr_assert_eq(info.n_kernels, 1, "%s", tag);
        }
    }
    /* The kernel runs no instruction through the evaluator. */
    kiln_region fn = {clamp_scalar_bounds, (void *)bounds[0]};
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(3000)};
    kiln_module *m = NULL;
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &a, 1, 1, NULL, &m), KILN_OK);
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK);
    char *text = kiln_exe_to_string(cx, exe);
    cr_assert_not_null(text);
    cr_assert(strstr(text, "0 instructions on the evaluator") != NULL, "%s", text);
    kiln_string_free(cx, text);
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

FN(convert_pair) {
    kiln_dtype to = *(const kiln_dtype *)user;
    /* convert there, compute there, convert back: saturation, NaN to 0, rounding */
    kiln_tensor *c = kiln_convert(cx, in[0], to);
    out[0] = kiln_convert(cx, kiln_add(cx, c, c), kiln_tensor_dtype(in[0]));
    return kiln_ctx_status(cx);
}

Test(fused, convert_between_every_pair_of_dtypes) {
    kiln_ctx *cx = test_ctx();
    for (int a = 0; a < N_DTYPES; a++) {
        for (int b = 0; b < N_DTYPES; b++) {
            char tag[64];
            snprintf(tag, sizeof tag, "%s -> %s", kiln_dtype_name(all_dtypes[a]),
                     kiln_dtype_name(all_dtypes[b]));
            kiln_arg_spec s = {.dtype = all_dtypes[a], .shape = KILN_SHAPE(600)};
            check_fn(cx, convert_pair, (void *)&all_dtypes[b], &s, 1, 1, 0, tag);
        }
    }
    kiln_ctx_release(cx);
}

/* ---- views -------------------------------------------------------------------------------- */

/* x: [40, 70], y: [70], z: [70, 40] */
FN(views) {
    (void)user;
    kiln_tensor *x = in[0], *y = in[1], *z = in[2];
    kiln_tensor *bt = kiln_broadcast_in_dim(cx, y, KILN_SHAPE(40, 70), KILN_DIMS(1));
    kiln_tensor *tz = kiln_transpose(cx, z, KILN_DIMS(1, 0));
    kiln_tensor *rv = kiln_reverse(cx, x, KILN_DIMS(0, 1));
    kiln_tensor *io = kiln_convert(cx, kiln_iota(cx, KILN_I32, KILN_SHAPE(40, 70), 1), KILN_F32);
    kiln_tensor *a = kiln_add(cx, kiln_multiply(cx, x, bt), kiln_subtract(cx, tz, rv));
    kiln_tensor *sl = kiln_slice(cx, kiln_reshape(cx, z, KILN_SHAPE(40, 70)), KILN_DIMS(0, 1),
                                 KILN_DIMS(40, 70), KILN_DIMS(1, 1));
    kiln_tensor *b = kiln_maximum(
        cx, sl, kiln_slice(cx, io, KILN_DIMS(0, 0), KILN_DIMS(40, 69), KILN_DIMS(1, 1)));
    out[0] =
        kiln_add(cx, kiln_slice(cx, a, KILN_DIMS(0, 0), KILN_DIMS(40, 69), KILN_DIMS(1, 1)), b);
    /* a strided slice of a transposed argument, with a stride of 3 */
    out[1] = kiln_exponential(
        cx, kiln_slice(cx, tz, KILN_DIMS(1, 2), KILN_DIMS(40, 70), KILN_DIMS(3, 3)));
    return kiln_ctx_status(cx);
}

Test(fused, broadcast_transpose_slice_reverse_reshape_and_iota_are_read_in_place) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[3] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(40, 70)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(70)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(70, 40)}};
    kiln_exe_info info = check_fn(cx, views, NULL, a, 3, 2, 0, "views");
    cr_assert_geq(info.n_kernels, 2);
    kiln_ctx_release(cx);
}

/* ---- reductions --------------------------------------------------------------------------- */

typedef struct red_case {
    const kiln_region *(*region)(void);
    kiln_dims dims;
} red_case;

FN(reduce_of_product) {
    const red_case *rc = user;
    kiln_tensor *p = kiln_multiply(cx, in[0], in[1]);
    kiln_dtype dt = kiln_tensor_dtype(in[0]);
    /* Bounded floats: which of 0 * inf and overflow-then-0 a reordered product meets first
     * would decide between NaN and 0. */
    if (dt == KILN_F32 || dt == KILN_F64)
        p = kiln_clamp(cx, kiln_scalar(cx, -2, dt), p, kiln_scalar(cx, 2, dt));
    kiln_tensor *init = kiln_zeros(cx, kiln_tensor_dtype(in[0]), KILN_SHAPE_SCALAR);
    if (rc->region == kiln_region_multiply)
        init = kiln_ones(cx, kiln_tensor_dtype(in[0]), KILN_SHAPE_SCALAR);
    kiln_reduce(cx, &p, &init, 1, rc->dims, rc->region(), &out[0]);
    return kiln_ctx_status(cx);
}

Test(fused, reductions_over_inner_outer_middle_and_all_axes) {
    kiln_ctx *cx = test_ctx();
    const kiln_dims dims[] = {KILN_DIMS(2),    KILN_DIMS(0),       KILN_DIMS(1),
                              KILN_DIMS(0, 2), KILN_DIMS(0, 1, 2), KILN_DIMS(1, 2)};
    const kiln_region *(*regions[])(void) = {kiln_region_add, kiln_region_maximum,
                                             kiln_region_minimum, kiln_region_multiply};
    const kiln_dtype dts[] = {KILN_F32, KILN_F64, KILN_I32, KILN_U8, KILN_I64};
    for (int t = 0; t < 5; t++) {
        for (int g = 0; g < 4; g++) {
            for (int d = 0; d < 6; d++) {
                red_case rc = {regions[g], dims[d]};
                kiln_arg_spec a[2] = {{.dtype = dts[t], .shape = KILN_SHAPE(9, 13, 21)},
                                      {.dtype = dts[t], .shape = KILN_SHAPE(9, 13, 21)}};
                char tag[64];
                snprintf(tag, sizeof tag, "%s region %d dims %d", kiln_dtype_name(dts[t]), g, d);
                bool is_float = dts[t] == KILN_F32 || dts[t] == KILN_F64;
                /* float sums and products are reordered: a bound on rounding; which NaN
                 * a maximum or minimum keeps depends on the order too (any NaN is right) */
                double tol = is_float && (g == 0 || g == 3) ? 1e-4 : is_float ? 1e-300 : 0;
                kiln_exe_info info = check_fn(cx, reduce_of_product, &rc, a, 2, 1, tol, tag);
                cr_assert_eq(info.n_kernels, 1, "%s", tag);
                cr_assert_geq(info.n_fused_ops, 2, "%s", tag);
            }
        }
    }
    kiln_ctx_release(cx);
}

FN(bool_reductions) {
    (void)user;
    kiln_tensor *p = kiln_xor(cx, in[0], in[1]);
    kiln_tensor *f = kiln_full_int(cx, KILN_BOOL, KILN_SHAPE_SCALAR, 0);
    kiln_tensor *t = kiln_full_int(cx, KILN_BOOL, KILN_SHAPE_SCALAR, 1);
    kiln_reduce(cx, &p, &f, 1, KILN_DIMS(1), kiln_region_or(), &out[0]);
    kiln_tensor *q = kiln_or(cx, in[0], in[1]);
    kiln_reduce(cx, &q, &t, 1, KILN_DIMS(0), kiln_region_and(), &out[1]);
    return kiln_ctx_status(cx);
}

Test(fused, bool_and_or_reductions) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {{.dtype = KILN_BOOL, .shape = KILN_SHAPE(40, 3)},
                          {.dtype = KILN_BOOL, .shape = KILN_SHAPE(40, 3)}};
    kiln_exe_info info = check_fn(cx, bool_reductions, NULL, a, 2, 2, 0, "bool");
    cr_assert_eq(info.n_kernels, 2);
    kiln_ctx_release(cx);
}

/* The reduced value is also a result: one kernel stores it and reduces it. */
FN(reduce_and_keep) {
    (void)user;
    kiln_tensor *p = kiln_exponential(cx, in[0]);
    out[0] = kiln_sum(cx, p, KILN_DIMS(1), false);
    out[1] = p;
    return kiln_ctx_status(cx);
}

Test(fused, a_reduced_value_can_also_be_an_output) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(30, 50)};
    kiln_exe_info info = check_fn(cx, reduce_and_keep, NULL, &a, 1, 2, 1e-5, "keep");
    cr_assert_eq(info.n_kernels, 1);
    kiln_ctx_release(cx);
}

/* ---- multi-output, f16/bf16, in place, donation, threads ---------------------------------- */

FN(two_outputs) {
    (void)user;
    kiln_tensor *p = kiln_multiply(cx, in[0], in[1]);
    out[0] = p;
    out[1] = kiln_tanh(cx, kiln_add(cx, p, in[0]));
    out[2] = kiln_negate(cx, in[1]); /* a sibling: no producer in the kernel */
    return kiln_ctx_status(cx);
}

Test(fused, several_results_leave_one_kernel) {
    kiln_ctx *cx = test_ctx();
    const kiln_dtype dts[] = {KILN_F32, KILN_F16, KILN_BF16, KILN_F64, KILN_I16};
    for (int d = 0; d < 5; d++) {
        kiln_arg_spec a[2] = {{.dtype = dts[d], .shape = KILN_SHAPE(50, 41)},
                              {.dtype = dts[d], .shape = KILN_SHAPE(50, 41)}};
        if (dts[d] == KILN_I16) continue; /* tanh is float-only */
        kiln_exe_info info = check_fn(cx, two_outputs, NULL, a, 2, 3, 0, kiln_dtype_name(dts[d]));
        cr_assert_eq(info.n_kernels, 1, "%s", kiln_dtype_name(dts[d]));
        cr_assert_eq(info.n_ops, 1);
    }
    kiln_ctx_release(cx);
}

FN(chain_then_dot) {
    (void)user;
    kiln_tensor *a = kiln_exponential(cx, kiln_multiply(cx, in[0], in[0]));
    kiln_tensor *d = kiln_matmul(cx, a, in[1]);
    out[0] = kiln_add(cx, kiln_sine(cx, d), d);
    return kiln_ctx_status(cx);
}

Test(fused, kernels_around_a_dot_run_in_order_and_reuse_buffers) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(64, 64)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(64, 64)}};
    kiln_exe_info info = check_fn(cx, chain_then_dot, NULL, a, 2, 1, 1e-5, "dot");
    cr_assert_eq(info.n_kernels, 2);
    cr_assert_eq(info.n_ops, 3);
    /* the first kernel's result dies at the dot; the second kernel writes the result */
    cr_assert_eq(info.n_buffers, 2);
    kiln_ctx_release(cx);
}

FN(step) {
    (void)user;
    out[0] = kiln_add(cx, kiln_multiply(cx, in[0], kiln_scalar(cx, 0.5, KILN_F32)), in[1]);
    return kiln_ctx_status(cx);
}

Test(fused, a_donated_argument_receives_the_kernel_result) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(300), .donate = true},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(300)}};
    kiln_exe *exe = compile(cx, step, NULL, a, 2, 1, true);
    kiln_exe_info info;
    kiln_exe_info_get(cx, exe, &info);
    cr_assert_eq(info.aliases[0], 0);
    cr_assert_eq(info.n_kernels, 1);
    kiln_tensor *x = random_tensor(cx, KILN_F32, KILN_SHAPE(300));
    kiln_tensor *y = random_tensor(cx, KILN_F32, KILN_SHAPE(300));
    float want[300];
    const float *px = kiln_tensor_data(x), *py = kiln_tensor_data(y);
    for (int i = 0; i < 300; i++)
        want[i] = px[i] * 0.5f + py[i];
    const void *buffer = kiln_tensor_data(x);
    kiln_tensor *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, &r), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert(kiln_tensor_data(r) == buffer, "the result reuses the donated buffer");
    cr_assert(memcmp(kiln_tensor_data(r), want, sizeof want) == 0);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

FN(expsin) {
    (void)user;
    kiln_tensor *x = in[0];
    kiln_tensor *g = kiln_exponential(cx, kiln_negate(cx, kiln_multiply(cx, x, x)));
    out[0] = kiln_add(cx, kiln_multiply(cx, g, kiln_sine(cx, x)),
                      kiln_multiply(cx, kiln_scalar_like(cx, x, 0.5), x));
    return kiln_ctx_status(cx);
}

Test(fused, results_are_the_same_for_every_thread_count) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(300000)};
    kiln_exe *exe = compile(cx, expsin, NULL, &a, 1, 1, true);
    kiln_exe *ref = compile(cx, expsin, NULL, &a, 1, 1, false);
    kiln_tensor *x = random_tensor(cx, KILN_F32, KILN_SHAPE(300000)), *want = NULL;
    cr_assert_eq(kiln_exe_call(cx, ref, &x, &want), KILN_OK);
    for (int t = 1; t <= 3; t++) {
        kiln__threads_set_count(t);
        kiln_tensor *r = NULL;
        cr_assert_eq(kiln_exe_call(cx, exe, &x, &r), KILN_OK);
        expect_same(want, r, 0, "threads");
    }
    kiln__threads_set_count(0);
    kiln_exe_release(exe);
    kiln_exe_release(ref);
    kiln_ctx_release(cx);
}

FN(emlx) {
    (void)user;
    kiln_tensor *acc = in[0];
    for (int i = 1; i <= 10; i++)
        acc = kiln_add(cx, kiln_multiply(cx, kiln_scalar(cx, i, KILN_F32), acc), in[1]);
    out[0] = acc;
    return kiln_ctx_status(cx);
}

Test(fused, the_emlx_step_is_one_kernel_without_intermediates) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10)}};
    kiln_exe_info info = check_fn(cx, emlx, NULL, a, 2, 1, 0, "emlx");
    cr_assert_eq(info.n_ops, 1);
    cr_assert_eq(info.n_kernels, 1);
    cr_assert_eq(info.n_fused_ops, 19); /* canonicalize drops the multiply by 1 */
    cr_assert_eq(info.arena_bytes, 0);
    kiln_ctx_release(cx);
}

/* Steps of the heat equation (a stencil of slices, one kernel per step, and a concatenate
 * with the boundary values); *user steps, the last one with another coefficient when
 * user[1] is set. */
FN(heat_steps) {
    const int *steps = user;
    kiln_tensor *x = in[0];
    for (int s = 0; s < steps[0]; s++)
        x = test_heat_step(cx, x, steps[1] && s == steps[0] - 1 ? 0.2 : 0.1);
    out[0] = x;
    return kiln_ctx_status(cx);
}

Test(fused, kernels_that_are_the_same_code_share_it_and_print_their_own_values) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(64)};
    int same[2] = {3, 0}, last_differs[2] = {3, 1};
    kiln_exe_info info = check_fn(cx, heat_steps, same, &a, 1, 1, 0, "3 equal steps");
    cr_assert_eq(info.n_kernels, 3);
    check_fn(cx, heat_steps, last_differs, &a, 1, 1, 0, "the last step differs");
    const struct {
        int *steps;
        const char *header;
    } cases[] = {{same, "(3 fused kernels replacing 15 ops, 1 distinct;"},
                 {last_differs, "(3 fused kernels replacing 15 ops, 2 distinct;"}};
    for (int c = 0; c < 2; c++) {
        kiln_exe *exe = compile(cx, heat_steps, cases[c].steps, &a, 1, 1, true);
        char *text = kiln_exe_to_string(cx, exe);
        cr_assert_not_null(text, "%s", kiln_ctx_error_message(cx));
        cr_assert(strstr(text, cases[c].header), "missing \"%s\" in\n%s", cases[c].header, text);
        /* Each kernel names its own operands and result, and its own number. */
        const char *at = text;
        int kernels = 0, prev_in = -1, prev_out = -1;
        while ((at = strstr(at, "in2 = contiguous %"))) {
            int v_in = atoi(at + strlen("in2 = contiguous %"));
            const char *o = strstr(at, "-> %");
            cr_assert_not_null(o);
            int v_out = atoi(o + 4);
            cr_assert_gt(v_in, prev_in, "kernel %d reads %%%d after %%%d\n%s", kernels, v_in,
                         prev_in, text);
            cr_assert_gt(v_out, prev_out, "%s", text);
            prev_in = v_in;
            prev_out = v_out;
            kernels++;
            at = o;
        }
        cr_assert_eq(kernels, 3, "%s", text);
        cr_assert(strstr(text, "kernel #0 ") && !strstr(text, "kernel #3 "), "%s", text);
        kiln_string_free(cx, text);
        kiln_exe_release(exe);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* What an executable of an unrolled loop holds: its kernels are one code, its equal
 * attributes one copy, and its call state one tensor header per arena place, not one per
 * value; about the size of its op list, however many steps. */
Test(fused, an_unrolled_loop_compiles_to_an_executable_of_its_op_list_size) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    cr_assert_not_null(cx);
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(64)};
    int steps[2] = {1000, 0};
    int64_t before = fa.live_bytes;
    kiln_exe *exe = compile(cx, heat_steps, steps, &a, 1, 1, true);
    kiln_ctx_trim(cx); /* what tracing left in the ctx's caches */
    int64_t held = fa.live_bytes - before;
    kiln_exe_info info;
    cr_assert_eq(kiln_exe_info_get(cx, exe, &info), KILN_OK);
    cr_assert_eq(info.n_kernels, 1000);
    cr_log_info("1,000 steps: %d ops, %lld bytes held", (int)info.n_ops, (long long)held);
    cr_assert_lt(held, (int64_t)info.n_ops * 400, "%lld bytes for %d ops", (long long)held,
                 (int)info.n_ops);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

Test(fused, the_executable_prints_its_kernels_memory_plan_and_cost) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10)}};
    kiln_exe *exe = compile(cx, emlx, NULL, a, 2, 1, true);
    char *text = kiln_exe_to_string(cx, exe);
    cr_assert_not_null(text, "%s", kiln_ctx_error_message(cx));
    const char *want[] = {
        "1 ops (1 fused kernels replacing 19 ops, 1 distinct; 9 views read in place; 0 "
        "convolution epilogues)",
        "kernel #0 f32[10,10] (19 ops: add multiply add",
        "in0 = contiguous %0 f32[10,10]",
        "= scalar %",
        "f32[] = 2.000000e+00",
        "out r",
        /* 19 instructions over 100 elements: 19 * 100 flops; x and y read, one result */
        "cost: 1900 flops, 0 transcendentals, 836 bytes read, 400 bytes written",
        "memory plan: arena peak 0 bytes, 0 buffers",
        "result 0: %",
        "written in place",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(text, want[i]), "missing \"%s\" in\n%s", want[i], text);
    kiln_string_free(cx, text);
    FILE *sink = tmpfile();
    cr_assert_not_null(sink);
    cr_assert_eq(kiln_exe_print(cx, exe, sink), KILN_OK);
    cr_assert_gt(ftell(sink), 100);
    fclose(sink);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

Test(fused, printing_rejects_null_arguments) {
    kiln_ctx *cx = test_ctx();
    cr_assert_null(kiln_exe_to_string(cx, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_exe_to_string");
    cr_assert_eq(kiln_exe_print(cx, NULL, stdout), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_exe_print");
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(3)};
    kiln_exe *exe = compile(cx, expsin, NULL, &a, 1, 1, true);
    cr_assert_eq(kiln_exe_print(cx, exe, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "stream");
    cr_assert_null(kiln_exe_to_string(NULL, exe));
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

Test(fused, printing_reports_an_allocation_failure) {
    failing_allocator fa;
    kiln_ctx *cx = failing_allocator_ctx(&fa);
    cr_assert_not_null(cx);
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(3)};
    kiln_exe *exe = compile(cx, expsin, NULL, &a, 1, 1, true);
    fa.fail_after = fa.allocations;
    cr_assert_null(kiln_exe_to_string(cx, exe));
    expect_error(cx, KILN_RESOURCE_EXHAUSTED, "");
    cr_assert_eq(kiln_exe_print(cx, exe, stdout), KILN_RESOURCE_EXHAUSTED);
    expect_error(cx, KILN_RESOURCE_EXHAUSTED, "");
    fa.fail_after = -1;
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
    cr_assert_eq(fa.live_blocks, 0);
}

FN(edge_shapes) {
    (void)user;
    kiln_tensor *e = kiln_exponential(cx, kiln_add(cx, in[0], in[0]));
    out[0] = e;
    out[1] = kiln_sum(cx, e, KILN_DIMS(0), false);
    out[2] = kiln_max(cx, kiln_negate(cx, in[1]), KILN_DIMS(0, 1), false);
    out[3] = kiln_tanh(cx, kiln_multiply(cx, in[2], in[2])); /* rank 0 */
    return kiln_ctx_status(cx);
}

Test(fused, empty_and_rank_0_kernels) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[3] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(0, 5)},
                          {.dtype = KILN_F64, .shape = KILN_SHAPE(1, 1, 7)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE_SCALAR}};
    kiln_exe_info info = check_fn(cx, edge_shapes, NULL, a, 3, 4, 1e-300, "edges");
    /* The empty and the [1,1,7] kernels; the rank-0 chain runs as single ops (a kernel over
     * one element costs more than the evaluator's kernels), with the same bits. */
    cr_assert_eq(info.n_kernels, 2);
    kiln_ctx_release(cx);
}

FN(row_sums) {
    (void)user;
    kiln_tensor *e =
        kiln_exponential(cx, kiln_multiply(cx, in[0], kiln_scalar(cx, 0.01, KILN_F32)));
    out[0] = kiln_sum(cx, e, KILN_DIMS(1), false);
    out[1] = kiln_max(cx, e, KILN_DIMS(1), false);
    return kiln_ctx_status(cx);
}

/* Rows of a reduction are split across threads; short rows (many per tile) and long rows
 * (several tiles each). */
Test(fused, row_reductions_are_the_same_for_every_thread_count) {
    kiln_ctx *cx = test_ctx();
    const kiln_shape shapes[2] = {KILN_SHAPE(3000, 37), KILN_SHAPE(40, 5000)};
    for (int k = 0; k < 2; k++) {
        kiln_arg_spec a = {.dtype = KILN_F32, .shape = shapes[k]};
        kiln_exe *exe = compile(cx, row_sums, NULL, &a, 1, 2, true);
        kiln_exe *ref = compile(cx, row_sums, NULL, &a, 1, 2, false);
        kiln_tensor *x =
            kiln_random_uniform(cx, kiln_key_from_seed(3), KILN_F32, shapes[k], -50, 50);
        kiln_tensor *want[2], *first[2];
        cr_assert_eq(kiln_exe_call(cx, ref, &x, want), KILN_OK);
        kiln__threads_set_count(1);
        cr_assert_eq(kiln_exe_call(cx, exe, &x, first), KILN_OK);
        expect_same(want[0], first[0], 1e-5, "row sums");
        expect_same(want[1], first[1], 0, "row maxima");
        for (int t = 2; t <= 3; t++) {
            kiln__threads_set_count(t);
            kiln_tensor *r[2];
            cr_assert_eq(kiln_exe_call(cx, exe, &x, r), KILN_OK);
            expect_same(first[0], r[0], 0, "row sums, threads");
            expect_same(first[1], r[1], 0, "row maxima, threads");
        }
        kiln__threads_set_count(0);
        kiln_exe_release(exe);
        kiln_exe_release(ref);
    }
    kiln_ctx_release(cx);
}

/* ---- convolution epilogues ---------------------------------------------------------------- */

/* Inputs in [-1, 1) (the sums stay far from overflow, so fused and unfused agree up to the
 * order of f32 additions), with a NaN and an infinity planted in the image. */
static kiln_tensor *smooth_tensor(kiln_ctx *cx, kiln_dtype dt, kiln_shape shape, bool plant) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    double *v = calloc((size_t)n, sizeof *v);
    cr_assert_not_null(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)(next_bits() % 2048) / 1024.0 - 1.0;
    if (plant && n > 40) v[7] = NAN, v[40] = INFINITY;
    kiln_tensor *t64 = kiln_tensor_from_host(cx, KILN_F64, shape, v, (size_t)n * sizeof *v);
    free(v);
    kiln_tensor *t = kiln_convert(cx, t64, dt);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

/* conv2d (3x3, padding 1) + bias + relu as kiln/nn.h writes them; user: with relu. */
FN(conv_bias_relu) {
    kiln_nn_conv2d_params p = {.padding = {1, 1}};
    kiln_tensor *y = kiln_nn_conv2d(cx, in[0], in[1], in[2], &p);
    out[0] = user ? kiln_nn_relu(cx, y) : y;
    return kiln_ctx_status(cx);
}

/* The call with the epilogue agrees with the ops one by one: f32 through oneDNN up to the
 * order of additions; f64 and f16 through the loops bit for bit. NaN stays NaN, ReLU gives
 * +0, never -0. */
Test(fused, a_convolution_runs_its_bias_and_relu_in_one_call) {
    kiln_ctx *cx = test_ctx();
    const kiln_dtype dts[] = {KILN_F32, KILN_F64, KILN_F16};
    const kiln_shape shapes[][3] = {
        {KILN_SHAPE(2, 3, 9, 9), KILN_SHAPE(4, 3, 3, 3), KILN_SHAPE(4)},
        /* big enough for oneDNN (f32) */
        {KILN_SHAPE(2, 16, 24, 24), KILN_SHAPE(32, 16, 3, 3), KILN_SHAPE(32)},
    };
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int relu = 0; relu < 2; relu++) {
                kiln_scope_begin(cx);
                kiln_arg_spec a[3];
                kiln_tensor *in[3];
                for (int i = 0; i < 3; i++) {
                    a[i] = (kiln_arg_spec){.dtype = dts[d], .shape = shapes[s][i]};
                    in[i] = smooth_tensor(cx, dts[d], shapes[s][i], i == 0);
                }
                void *user = relu ? (void *)1 : NULL;
                kiln_exe *ref = compile(cx, conv_bias_relu, user, a, 3, 1, false);
                kiln_exe *fused = compile(cx, conv_bias_relu, user, a, 3, 1, true);
                kiln_exe_info info;
                cr_assert_eq(kiln_exe_info_get(cx, fused, &info), KILN_OK);
                cr_assert_eq(info.n_conv_epilogues, 1, "%s relu %d", kiln_dtype_name(dts[d]), relu);
                cr_assert_eq(info.n_ops, 1, "the convolution call is the only op");
                cr_assert_eq(info.n_buffers, 0, "nothing goes through the arena");
                kiln_exe_info ref_info;
                cr_assert_eq(kiln_exe_info_get(cx, ref, &ref_info), KILN_OK);
                cr_assert_eq(ref_info.n_conv_epilogues, 0, "disable_fusion keeps the ops");
                kiln_tensor *want, *got;
                cr_assert_eq(kiln_exe_call(cx, ref, in, &want), KILN_OK, "%s",
                             kiln_ctx_error_message(cx));
                cr_assert_eq(kiln_exe_call(cx, fused, in, &got), KILN_OK, "%s",
                             kiln_ctx_error_message(cx));
                char tag[64];
                snprintf(tag, sizeof tag, "%s shape %zu relu %d", kiln_dtype_name(dts[d]), s, relu);
                expect_same(want, got, dts[d] == KILN_F32 ? 1e-5 : 0, tag);
                kiln_tensor *g64 = kiln_convert(cx, got, KILN_F64);
                const double *g = kiln_tensor_data(g64);
                int64_t nans = 0;
                for (int64_t i = 0; i < kiln_tensor_numel(g64); i++) {
                    nans += isnan(g[i]);
                    if (relu) cr_assert(!signbit(g[i]) || isnan(g[i]), "%s: -0 or < 0", tag);
                }
                cr_assert_gt(nans, 0, "%s: the planted NaN reaches the result", tag);
                kiln_exe_release(ref);
                kiln_exe_release(fused);
                kiln_scope_end(cx);
            }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* A bias computed from an argument after the convolution, a donated image, the result
 * written over nothing it still reads, and the same bits on 1 and 2 threads. */
FN(conv_bias_after) {
    (void)user;
    kiln_conv_params cp = kiln_conv_params_nchw(2);
    cp.padding_low = cp.padding_high = KILN_DIMS(1, 1);
    kiln_tensor *c = kiln_convolution(cx, in[0], in[1], &cp, KILN_DTYPE_COUNT);
    kiln_tensor *b = kiln_multiply(cx, in[2], in[2]);
    kiln_tensor *y =
        kiln_add(cx, kiln_broadcast_in_dim(cx, b, *kiln_tensor_shape(c), KILN_DIMS(1)), c);
    out[0] = kiln_nn_relu(cx, y);
    out[1] = kiln_negate(cx, b);
    return kiln_ctx_status(cx);
}

Test(fused, a_convolution_epilogue_with_a_computed_bias_and_a_donated_image) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[3] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(2, 16, 20, 20), .donate = true},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(16, 16, 3, 3)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(16)}};
    kiln_region fn = {conv_bias_after, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, a, 3, 2, NULL, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_compile_options o = kiln_compile_options_default();
    kiln_exe *fused = NULL, *ref = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &fused), KILN_OK, "%s", kiln_ctx_error_message(cx));
    o.disable_fusion = true;
    cr_assert_eq(kiln_compile(cx, m, &o, &ref), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    kiln_exe_info info;
    cr_assert_eq(kiln_exe_info_get(cx, fused, &info), KILN_OK);
    cr_assert_eq(info.n_conv_epilogues, 1);
    char *text = kiln_exe_to_string(cx, fused);
    cr_assert_not_null(text);
    cr_assert(strstr(text, "convolution with epilogue bias relu"), "%s", text);
    cr_assert(strstr(text, "1 convolution epilogues"), "%s", text);
    kiln_string_free(cx, text);
    kiln_tensor *first[2] = {NULL, NULL};
    for (int threads = 1; threads <= 2; threads++) {
        kiln__threads_set_count(threads);
        rng = 5; /* the same inputs on each count, and an image for each executable */
        kiln_tensor *x = smooth_tensor(cx, KILN_F32, a[0].shape, false);
        rng = 5;
        kiln_tensor *x_ref = smooth_tensor(cx, KILN_F32, a[0].shape, false);
        kiln_tensor *w = smooth_tensor(cx, KILN_F32, a[1].shape, false);
        kiln_tensor *b = smooth_tensor(cx, KILN_F32, a[2].shape, false);
        kiln_tensor *want[2], *got[2];
        cr_assert_eq(kiln_exe_call(cx, ref, (kiln_tensor *[]){x_ref, w, b}, want), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        cr_assert_eq(kiln_exe_call(cx, fused, (kiln_tensor *[]){x, w, b}, got), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        for (int r = 0; r < 2; r++) {
            expect_same(want[r], got[r], 1e-5, "computed bias");
            if (!first[r])
                first[r] = got[r];
            else
                expect_same(first[r], got[r], 0, "threads");
        }
    }
    kiln__threads_set_count(0);
    kiln_exe_release(fused);
    kiln_exe_release(ref);
    expect_ok(cx);
    kiln_ctx_release(cx);
}
