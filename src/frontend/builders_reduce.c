/* SPDX-License-Identifier: Apache-2.0 */
/* Builders for the reductions: reduce, reduce_window, select_and_scatter, and the numpy
 * conveniences built on them (sum, mean, prod, max, min, argmax, argmin, logsumexp,
 * softmax, log_softmax). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/region.h"
#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "core/tensor_internal.h"
#include "frontend/op_run.h"

#define MAX_VARIADIC (1 << 20)

/* ---- reduce, reduce_window, select_and_scatter ----------------------------------------- */

/* Gathers inputs then inits into one operand array (fixed, or allocated into *heap). */
static kiln_status gather_operands(kiln_ctx *cx, const char *fn, kiln_tensor *const *inputs,
                                   kiln_tensor *const *inits, int32_t n, kiln_tensor **fixed,
                                   int32_t n_fixed, kiln_tensor ***ops, size_t *heap_bytes) {
    *heap_bytes = 0;
    *ops = fixed;
    if (n < 1 || n > MAX_VARIADIC)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: n is %d; expected 1 to %d", fn,
                                  (int)n, MAX_VARIADIC);
    if (!inputs) return kiln__null_argument(cx, fn, "inputs");
    if (!inits) return kiln__null_argument(cx, fn, "inits");
    for (int32_t i = 0; i < n; i++) {
        char what[40];
        if (!inputs[i]) {
            snprintf(what, sizeof what, "inputs[%d]", (int)i);
            return kiln__null_argument(cx, fn, what);
        }
        if (!inits[i]) {
            snprintf(what, sizeof what, "inits[%d]", (int)i);
            return kiln__null_argument(cx, fn, what);
        }
    }
    if (2 * n > n_fixed) {
        *heap_bytes = (size_t)(2 * n) * sizeof(kiln_tensor *);
        if (!(*ops = kiln__alloc(cx, *heap_bytes, _Alignof(kiln_tensor *), fn))) {
            *heap_bytes = 0;
            return KILN_RESOURCE_EXHAUSTED;
        }
    }
    for (int32_t i = 0; i < n; i++) {
        (*ops)[i] = inputs[i];
        (*ops)[n + i] = inits[i];
    }
    return KILN_OK;
}

/* Runs a variadic reduction (reduce or reduce_window) with attrs. */
static kiln_status run_variadic(kiln_ctx *cx, kiln_op op, kiln__attrs *attrs,
                                kiln_tensor *const *inputs, kiln_tensor *const *inits, int32_t n,
                                kiln_tensor **out) {
    kiln_tensor *fixed[16];
    kiln_tensor **ops;
    size_t heap_bytes;
    kiln_status s = gather_operands(cx, attrs->fn, inputs, inits, n, fixed, 16, &ops, &heap_bytes);
    if (s == KILN_OK) s = kiln__op_run(cx, op, attrs, ops, 2 * n, out, n);
    if (heap_bytes) kiln__free(cx, ops, heap_bytes);
    return s;
}

/* The first checks of reduce and reduce_window: a context, and `out` (n entries, up to
 * MAX_VARIADIC of them cleared so that an error leaves no stale results). */
static kiln_status begin_variadic(kiln_ctx *cx, const char *fn, kiln_tensor **out, int32_t n) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out) return kiln__null_argument(cx, fn, "out");
    for (int32_t i = 0; i < n && i < MAX_VARIADIC; i++)
        out[i] = NULL;
    return KILN_OK;
}

kiln_status kiln_reduce(kiln_ctx *cx, kiln_tensor *const *inputs, kiln_tensor *const *inits,
                        int32_t n, kiln_dims dims, const kiln_region *region, kiln_tensor **out) {
    static const char fn[] = "kiln_reduce";
    kiln_status s = begin_variadic(cx, fn, out, n);
    if (s != KILN_OK) return s;
    if (!region) return kiln__null_argument(cx, fn, "region");
    kiln__attrs attrs = {.fn = fn, .n_regions = 1, .n_results = n};
    attrs.u.reduce_dims = dims;
    attrs.region[0] = region;
    return run_variadic(cx, KILN_OP_REDUCE, &attrs, inputs, inits, n, out);
}

/* The window attributes with count-0 lists given their defaults for `rank`. */
static kiln_window_params window_defaults(const kiln_window_params *p, int32_t rank) {
    kiln_window_params w = *p;
    kiln_dims *lists[] = {&w.window_strides, &w.base_dilations, &w.window_dilations, &w.padding_low,
                          &w.padding_high};
    const int64_t values[] = {1, 1, 1, 0, 0};
    for (int i = 0; i < 5; i++) {
        if (lists[i]->count != 0) continue;
        lists[i]->count = rank;
        for (int32_t d = 0; d < rank; d++)
            lists[i]->v[d] = values[i];
    }
    return w;
}

kiln_status kiln_reduce_window(kiln_ctx *cx, kiln_tensor *const *inputs, kiln_tensor *const *inits,
                               int32_t n, const kiln_window_params *params,
                               const kiln_region *region, kiln_tensor **out) {
    static const char fn[] = "kiln_reduce_window";
    kiln_status s = begin_variadic(cx, fn, out, n);
    if (s != KILN_OK) return s;
    if (!params) return kiln__null_argument(cx, fn, "params");
    if (!region) return kiln__null_argument(cx, fn, "region");
    if (n >= 1 && inputs && !inputs[0]) return kiln__null_argument(cx, fn, "inputs[0]");
    int32_t rank = n >= 1 && inputs ? kiln_tensor_rank(inputs[0]) : 0;
    kiln__attrs attrs = {.fn = fn, .n_regions = 1, .n_results = n};
    attrs.u.window = window_defaults(params, rank);
    attrs.region[0] = region;
    return run_variadic(cx, KILN_OP_REDUCE_WINDOW, &attrs, inputs, inits, n, out);
}

kiln_tensor *kiln_select_and_scatter(kiln_ctx *cx, kiln_tensor *operand, kiln_tensor *source,
                                     kiln_tensor *init, const kiln_window_params *params,
                                     const kiln_region *select, const kiln_region *scatter) {
    static const char fn[] = "kiln_select_and_scatter";
    if (!cx) return NULL;
    const char *missing = !operand   ? "operand"
                          : !source  ? "source"
                          : !init    ? "init"
                          : !params  ? "params"
                          : !select  ? "select"
                          : !scatter ? "scatter"
                                     : NULL;
    if (missing) return kiln__null_argument_ptr(cx, fn, missing);
    kiln__attrs attrs = {.fn = fn, .n_regions = 2};
    attrs.u.window = window_defaults(params, kiln_tensor_rank(operand));
    attrs.region[0] = select;
    attrs.region[1] = scatter;
    kiln_tensor *operands[3] = {operand, source, init};
    return kiln__op_run1(cx, KILN_OP_SELECT_AND_SCATTER, &attrs, operands, 3);
}

/* ---- numpy conveniences ---------------------------------------------------------------- */

/* numpy axes: count 0 is every axis; negative ones count from the end. Sorted out. */
static kiln_status normalize_axes(kiln_ctx *cx, const char *fn, kiln_dims axes, int32_t rank,
                                  kiln_dims *out) {
    if (axes.count < 0 || axes.count > KILN_MAX_RANK)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: axes has %d entries", fn,
                                  (int)axes.count);
    bool seen[KILN_MAX_RANK] = {false};
    if (axes.count == 0) {
        for (int32_t d = 0; d < rank; d++)
            seen[d] = true;
    }
    for (int32_t i = 0; i < axes.count; i++) {
        int64_t a = axes.v[i];
        if (a < -(int64_t)rank || a >= rank)
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: axis %lld is out of range for rank %d", fn, (long long)a,
                                      (int)rank);
        if (a < 0) a += rank;
        if (seen[a])
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: axis %lld is repeated", fn,
                                      (long long)axes.v[i]);
        seen[a] = true;
    }
    out->count = 0;
    for (int32_t d = 0; d < rank; d++)
        if (seen[d]) out->v[out->count++] = d;
    return KILN_OK;
}

typedef enum scalar_kind { ZERO, ONE, LOWEST, HIGHEST } scalar_kind;

/* A rank-0 tensor: 0, 1, or the lowest / highest value of dtype (-inf / +inf for floats,
 * 0 / 1 for bool). */
static kiln_tensor *make_scalar(kiln_ctx *cx, kiln_dtype dtype, scalar_kind kind) {
    union {
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        float f32;
        double f64;
        float c64[2];
        double c128[2];
    } v;
    memset(&v, 0, sizeof v);
    const bool lo = kind == LOWEST, one = kind == ONE;
    switch (dtype) {
    case KILN_BOOL: v.u8 = one || kind == HIGHEST; break;
    case KILN_I8: v.i8 = one ? 1 : lo ? INT8_MIN : kind == HIGHEST ? INT8_MAX : 0; break;
    case KILN_I16: v.i16 = one ? 1 : lo ? INT16_MIN : kind == HIGHEST ? INT16_MAX : 0; break;
    case KILN_I32: v.i32 = one ? 1 : lo ? INT32_MIN : kind == HIGHEST ? INT32_MAX : 0; break;
    case KILN_I64: v.i64 = one ? 1 : lo ? INT64_MIN : kind == HIGHEST ? INT64_MAX : 0; break;
    case KILN_U8: v.u8 = one ? 1 : kind == HIGHEST ? UINT8_MAX : 0; break;
    case KILN_U16: v.u16 = one ? 1 : kind == HIGHEST ? UINT16_MAX : 0; break;
    case KILN_U32: v.u32 = one ? 1 : kind == HIGHEST ? UINT32_MAX : 0; break;
    case KILN_U64: v.u64 = one ? 1 : kind == HIGHEST ? UINT64_MAX : 0; break;
    case KILN_F16: v.u16 = one ? 0x3C00 : lo ? 0xFC00 : kind == HIGHEST ? 0x7C00 : 0; break;
    case KILN_BF16: v.u16 = one ? 0x3F80 : lo ? 0xFF80 : kind == HIGHEST ? 0x7F80 : 0; break;
    case KILN_F32: v.f32 = one ? 1.0f : lo ? -INFINITY : kind == HIGHEST ? INFINITY : 0.0f; break;
    case KILN_F64: v.f64 = one ? 1.0 : lo ? -INFINITY : kind == HIGHEST ? INFINITY : 0.0; break;
    /* complex: (1, 0), and the lowest and highest in the spec's lexicographic order */
    case KILN_C64:
        v.c64[0] = one ? 1.0f : lo ? -INFINITY : kind == HIGHEST ? INFINITY : 0.0f;
        v.c64[1] = lo ? -INFINITY : kind == HIGHEST ? INFINITY : 0.0f;
        break;
    case KILN_C128:
        v.c128[0] = one ? 1.0 : lo ? -INFINITY : kind == HIGHEST ? INFINITY : 0.0;
        v.c128[1] = lo ? -INFINITY : kind == HIGHEST ? INFINITY : 0.0;
        break;
    default: break;
    }
    return kiln_tensor_from_host(cx, dtype, KILN_SHAPE_SCALAR, &v, kiln_dtype_size(dtype));
}

/* x reduced over the (normalized) dims with a builtin region from init_kind. */
static kiln_tensor *reduce_builtin(kiln_ctx *cx, const char *fn, kiln_tensor *x,
                                   const kiln_dims *dims, const kiln_region *region,
                                   scalar_kind init_kind) {
    kiln_tensor *init = make_scalar(cx, kiln_tensor_dtype(x), init_kind);
    if (!init) return NULL;
    kiln__attrs attrs = {.fn = fn, .n_regions = 1, .n_results = 1};
    attrs.u.reduce_dims = *dims;
    attrs.region[0] = region;
    kiln_tensor *operands[2] = {x, init}, *r = NULL;
    kiln__op_run(cx, KILN_OP_REDUCE, &attrs, operands, 2, &r, 1);
    kiln__tensor_discard(init);
    return r;
}

/* The shape of x with the dims set to 1 (numpy's keepdims). */
static kiln_shape kept_shape(const kiln_shape *x, const kiln_dims *dims) {
    kiln_shape s = *x;
    for (int32_t i = 0; i < dims->count; i++)
        s.dims[dims->v[i]] = 1;
    return s;
}

static kiln_tensor *reshape(kiln_ctx *cx, const char *fn, kiln_tensor *x, kiln_shape shape) {
    if (!x) return NULL;
    if (kiln_shape_equal(kiln_tensor_shape(x), &shape)) return x;
    kiln__attrs attrs = {.fn = fn};
    attrs.u.reshape = shape;
    return kiln__op_run1(cx, KILN_OP_RESHAPE, &attrs, &x, 1);
}

/* The conveniences run in a scope of their own, so that their temporaries go at the end;
 * the result escapes to the caller's scope. */
static kiln_tensor *finish(kiln_ctx *cx, kiln_tensor *r) {
    if (r) r = kiln_scope_escape(cx, r);
    kiln_scope_end(cx);
    return r;
}

/* The start of every convenience: x present, axes normalized. */
static bool begin(kiln_ctx *cx, const char *fn, kiln_tensor *x, kiln_dims axes, kiln_dims *dims) {
    if (!cx) return false;
    if (!x) {
        kiln__null_argument(cx, fn, "x");
        return false;
    }
    return normalize_axes(cx, fn, axes, kiln_tensor_rank(x), dims) == KILN_OK;
}

static bool require_float(kiln_ctx *cx, const char *fn, kiln_tensor *x) {
    kiln_dtype d = kiln_tensor_dtype(x);
    if (kiln_dtype_is_float(d)) return true;
    kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                       "%s: x has dtype %s; expected a float dtype (convert it first)", fn,
                       kiln_dtype_name(d));
    return false;
}

/* numpy refuses to reduce an empty axis with an op that has no identity (max, argmax),
 * unless the result is empty too. */
static bool require_nonempty(kiln_ctx *cx, const char *fn, kiln_tensor *x, const kiln_dims *dims,
                             const char *op) {
    const kiln_shape *s = kiln_tensor_shape(x);
    bool reduced[KILN_MAX_RANK] = {false};
    int64_t out = 1;
    for (int32_t i = 0; i < dims->count; i++)
        reduced[dims->v[i]] = true;
    for (int32_t d = 0; d < s->rank; d++)
        if (!reduced[d]) out *= s->dims[d];
    if (out == 0) return true;
    for (int32_t i = 0; i < dims->count; i++) {
        if (s->dims[dims->v[i]] == 0) {
            kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "%s: axis %lld has size 0, and %s of an empty axis is undefined", fn,
                               (long long)dims->v[i], op);
            return false;
        }
    }
    return true;
}

/* sum / prod / max / min: a builtin reduce, then keepdims. */
static kiln_tensor *numpy_reduce(kiln_ctx *cx, const char *fn, kiln_tensor *x, kiln_dims axes,
                                 bool keepdims, const kiln_region *region, scalar_kind init) {
    kiln_dims dims;
    if (!begin(cx, fn, x, axes, &dims)) return NULL;
    if (kiln_scope_begin(cx) != KILN_OK) return NULL;
    kiln_tensor *in = x, *r = NULL;
    if (kiln_tensor_dtype(x) == KILN_BOOL && (init == ZERO || init == ONE))
        in = kiln_convert(cx, x, KILN_I64); /* numpy counts: sum and prod of bool are ints */
    if (in) r = reduce_builtin(cx, fn, in, &dims, region, init);
    if (keepdims) r = reshape(cx, fn, r, kept_shape(kiln_tensor_shape(x), &dims));
    return finish(cx, r);
}

kiln_tensor *kiln_sum(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims) {
    return numpy_reduce(cx, "kiln_sum", x, axes, keepdims, kiln_region_add(), ZERO);
}

kiln_tensor *kiln_prod(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims) {
    return numpy_reduce(cx, "kiln_prod", x, axes, keepdims, kiln_region_multiply(), ONE);
}

/* max and min: `what` (the maximum or minimum) of no elements is an error, not the init. */
static kiln_tensor *numpy_extreme(kiln_ctx *cx, const char *fn, kiln_tensor *x, kiln_dims axes,
                                  bool keepdims, const char *what, const kiln_region *region,
                                  scalar_kind init) {
    kiln_dims dims;
    if (!begin(cx, fn, x, axes, &dims)) return NULL;
    if (!require_nonempty(cx, fn, x, &dims, what)) return NULL;
    return numpy_reduce(cx, fn, x, axes, keepdims, region, init);
}

kiln_tensor *kiln_max(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims) {
    return numpy_extreme(cx, "kiln_max", x, axes, keepdims, "the maximum", kiln_region_maximum(),
                         LOWEST);
}

kiln_tensor *kiln_min(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims) {
    return numpy_extreme(cx, "kiln_min", x, axes, keepdims, "the minimum", kiln_region_minimum(),
                         HIGHEST);
}

/* The f32 working copy of an f16/bf16 tensor (x itself otherwise). */
static kiln_tensor *widen(kiln_ctx *cx, kiln_tensor *x) {
    kiln_dtype d = kiln_tensor_dtype(x);
    return d == KILN_F16 || d == KILN_BF16 ? kiln_convert(cx, x, KILN_F32) : x;
}

static kiln_tensor *narrow(kiln_ctx *cx, kiln_tensor *r, kiln_dtype dtype) {
    if (!r || kiln_tensor_dtype(r) == dtype) return r;
    return kiln_convert(cx, r, dtype);
}

kiln_tensor *kiln_mean(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims) {
    static const char fn[] = "kiln_mean";
    kiln_dims dims;
    if (!begin(cx, fn, x, axes, &dims) || !require_float(cx, fn, x)) return NULL;
    int64_t count = 1;
    for (int32_t i = 0; i < dims.count; i++)
        count *= kiln_tensor_dim(x, (int32_t)dims.v[i]);
    if (kiln_scope_begin(cx) != KILN_OK) return NULL;
    kiln_tensor *xf = widen(cx, x), *r = NULL;
    kiln_tensor *s = xf ? reduce_builtin(cx, fn, xf, &dims, kiln_region_add(), ZERO) : NULL;
    if (s) r = kiln_divide(cx, s, kiln_scalar_like(cx, s, (double)count));
    r = narrow(cx, r, kiln_tensor_dtype(x));
    if (keepdims) r = reshape(cx, fn, r, kept_shape(kiln_tensor_shape(x), &dims));
    return finish(cx, r);
}

/* ---- argmax, argmin -------------------------------------------------------------------- */

/* The region of argmax (is_max) and argmin over (value, index) pairs: the candidate wins
 * when better (NaN beats any number), or tied (NaN ties NaN) with a smaller index. */
static kiln_status arg_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, bool is_max) {
    kiln_tensor *av = a[0], *ai = a[1], *xv = a[2], *xi = a[3];
    kiln_tensor *better =
        kiln_compare(cx, xv, av, is_max ? KILN_CMP_GT : KILN_CMP_LT, KILN_CMP_DEFAULT);
    kiln_tensor *tie = kiln_compare(cx, xv, av, KILN_CMP_EQ, KILN_CMP_DEFAULT);
    if (kiln_dtype_is_float(kiln_tensor_dtype(xv))) {
        kiln_tensor *xn = kiln_compare(cx, xv, xv, KILN_CMP_NE, KILN_CMP_DEFAULT);
        kiln_tensor *an = kiln_compare(cx, av, av, KILN_CMP_NE, KILN_CMP_DEFAULT);
        better = kiln_or(cx, better, kiln_and(cx, xn, kiln_not(cx, an)));
        tie = kiln_or(cx, tie, kiln_and(cx, xn, an));
    }
    kiln_tensor *earlier = kiln_compare(cx, xi, ai, KILN_CMP_LT, KILN_CMP_DEFAULT);
    kiln_tensor *take = kiln_or(cx, better, kiln_and(cx, tie, earlier));
    r[0] = kiln_select(cx, take, xv, av);
    r[1] = kiln_select(cx, take, xi, ai);
    return r[0] && r[1] ? KILN_OK : kiln_ctx_status(cx);
}

static kiln_status argmax_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    return arg_region(cx, a, r, true);
}

static kiln_status argmin_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    return arg_region(cx, a, r, false);
}

static kiln_tensor *arg_extreme(kiln_ctx *cx, const char *fn, kiln_tensor *x, int64_t axis,
                                bool keepdims, bool is_max) {
    kiln_dims dims;
    if (!begin(cx, fn, x, KILN_DIMS(axis), &dims)) return NULL;
    if (!require_nonempty(cx, fn, x, &dims, is_max ? "argmax" : "argmin")) return NULL;
    static const kiln_region regions[2] = {
        {argmax_region, (void *)&kiln__argmax_tag},
        {argmin_region, (void *)&kiln__argmin_tag},
    };
    if (kiln_scope_begin(cx) != KILN_OK) return NULL;
    const kiln_shape *shape = kiln_tensor_shape(x);
    kiln_tensor *ops[4] = {
        x,
        kiln_iota(cx, KILN_I64, *shape, (int32_t)dims.v[0]),
        make_scalar(cx, kiln_tensor_dtype(x), is_max ? LOWEST : HIGHEST),
        make_scalar(cx, KILN_I64, ZERO),
    };
    kiln_tensor *res[2] = {NULL, NULL};
    if (ops[1] && ops[2] && ops[3]) {
        kiln__attrs attrs = {.fn = fn, .n_regions = 1, .n_results = 2};
        attrs.u.reduce_dims = dims;
        attrs.region[0] = &regions[is_max ? 0 : 1];
        kiln__op_run(cx, KILN_OP_REDUCE, &attrs, ops, 4, res, 2);
    }
    kiln_tensor *r = res[1];
    if (keepdims) r = reshape(cx, fn, r, kept_shape(shape, &dims));
    return finish(cx, r);
}

kiln_tensor *kiln_argmax(kiln_ctx *cx, kiln_tensor *x, int64_t axis, bool keepdims) {
    return arg_extreme(cx, "kiln_argmax", x, axis, keepdims, true);
}

kiln_tensor *kiln_argmin(kiln_ctx *cx, kiln_tensor *x, int64_t axis, bool keepdims) {
    return arg_extreme(cx, "kiln_argmin", x, axis, keepdims, false);
}

/* ---- logsumexp, softmax, log_softmax --------------------------------------------------- */

/* The maximum of xf over dims, keepdims-shaped, with non-finite maxima replaced by 0 (so
 * that rows of -inf, or with +inf, do not make inf - inf). */
static kiln_tensor *safe_max(kiln_ctx *cx, const char *fn, kiln_tensor *xf, const kiln_dims *dims) {
    kiln_tensor *m = reduce_builtin(cx, fn, xf, dims, kiln_region_maximum(), LOWEST);
    m = reshape(cx, fn, m, kept_shape(kiln_tensor_shape(xf), dims));
    if (!m) return NULL;
    return kiln_select(cx, kiln_is_finite(cx, m), m, kiln_scalar_like(cx, m, 0));
}

/* sum(exp(t)) over dims, keepdims-shaped. */
static kiln_tensor *sum_exp(kiln_ctx *cx, const char *fn, kiln_tensor *t, const kiln_dims *dims) {
    kiln_tensor *e = kiln_exponential(cx, t);
    if (!e) return NULL;
    kiln_tensor *s = reduce_builtin(cx, fn, e, dims, kiln_region_add(), ZERO);
    return reshape(cx, fn, s, kept_shape(kiln_tensor_shape(t), dims));
}

kiln_tensor *kiln_logsumexp(kiln_ctx *cx, kiln_tensor *x, kiln_dims axes, bool keepdims) {
    static const char fn[] = "kiln_logsumexp";
    kiln_dims dims;
    if (!begin(cx, fn, x, axes, &dims) || !require_float(cx, fn, x)) return NULL;
    if (kiln_scope_begin(cx) != KILN_OK) return NULL;
    kiln_tensor *xf = widen(cx, x), *r = NULL;
    kiln_tensor *m = xf ? safe_max(cx, fn, xf, &dims) : NULL;
    kiln_tensor *s = m ? sum_exp(cx, fn, kiln_subtract(cx, xf, m), &dims) : NULL;
    if (s) r = kiln_add(cx, kiln_log(cx, s), m);
    if (!keepdims && r) {
        kiln_shape out = {.rank = 0};
        const kiln_shape *xs = kiln_tensor_shape(x);
        bool reduced[KILN_MAX_RANK] = {false};
        for (int32_t i = 0; i < dims.count; i++)
            reduced[dims.v[i]] = true;
        for (int32_t d = 0; d < xs->rank; d++)
            if (!reduced[d]) out.dims[out.rank++] = xs->dims[d];
        r = reshape(cx, fn, r, out);
    }
    r = narrow(cx, r, kiln_tensor_dtype(x));
    return finish(cx, r);
}

/* softmax (log_softmax when is_log) along one axis. */
static kiln_tensor *softmax(kiln_ctx *cx, const char *fn, kiln_tensor *x, int64_t axis,
                            bool is_log) {
    kiln_dims dims;
    if (!begin(cx, fn, x, KILN_DIMS(axis), &dims) || !require_float(cx, fn, x)) return NULL;
    if (kiln_scope_begin(cx) != KILN_OK) return NULL;
    kiln_tensor *xf = widen(cx, x), *r = NULL;
    kiln_tensor *m = xf ? safe_max(cx, fn, xf, &dims) : NULL;
    kiln_tensor *t = m ? kiln_subtract(cx, xf, m) : NULL;
    if (t && is_log) {
        r = kiln_subtract(cx, t, kiln_log(cx, sum_exp(cx, fn, t, &dims)));
    } else if (t) {
        kiln_tensor *e = kiln_exponential(cx, t);
        kiln_tensor *s = e ? reduce_builtin(cx, fn, e, &dims, kiln_region_add(), ZERO) : NULL;
        s = reshape(cx, fn, s, kept_shape(kiln_tensor_shape(x), &dims));
        if (s) r = kiln_divide(cx, e, s);
    }
    r = narrow(cx, r, kiln_tensor_dtype(x));
    return finish(cx, r);
}

kiln_tensor *kiln_softmax(kiln_ctx *cx, kiln_tensor *x, int64_t axis) {
    return softmax(cx, "kiln_softmax", x, axis, false);
}

kiln_tensor *kiln_log_softmax(kiln_ctx *cx, kiln_tensor *x, int64_t axis) {
    return softmax(cx, "kiln_log_softmax", x, axis, true);
}
