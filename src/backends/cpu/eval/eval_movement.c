/* SPDX-License-Identifier: Apache-2.0 */
/* CPU kernels for the data-movement ops. They move bytes: every op is a copy between two
 * strided views of the same shape (a "plan"), dispatched on the element size (1, 2, 4 or
 * 8 bytes), so every dtype is covered. A plan is simplified first (size-1 dimensions
 * dropped, dimensions that are contiguous in both views merged), then run as an index walk
 * over the outer dimensions with an inner loop that is a memcpy (contiguous runs), a fill
 * (a broadcast value), a tiled transposition (when the source is contiguous along another
 * dimension), or a typed strided loop. */
#include <string.h>

#include "backends/cpu/eval/eval.h"

/* dst[i] = src[i] for every index i of n, at element offsets sum(i[k] * stride[k]). The
 * source strides may be 0 (broadcast) or negative (reverse); destination strides are
 * positive. */
typedef struct plan {
    int32_t rank;
    int64_t n[KILN_MAX_RANK];
    int64_t ds[KILN_MAX_RANK]; /* destination strides, in elements */
    int64_t ss[KILN_MAX_RANK]; /* source strides, in elements */
} plan;

/* Transpositions: TILE x TILE tiles that stay in cache, moved as BLOCK x BLOCK blocks
 * (registers); used when both dimensions have at least TILE_MIN elements. */
enum { TILE = 128, BLOCK = 8, TILE_MIN = 8 };

/* Row-major strides of a shape, in elements. Unsigned arithmetic: the strides of an empty
 * shape can exceed int64_t, and are never used then. */
static void row_strides(const kiln_shape *s, int64_t *st) {
    uint64_t acc = 1;
    for (int32_t d = s->rank - 1; d >= 0; d--) {
        st[d] = (int64_t)acc;
        acc *= (uint64_t)s->dims[d];
    }
}

static bool plan_empty(const plan *p) {
    for (int32_t k = 0; k < p->rank; k++)
        if (p->n[k] == 0) return true;
    return false;
}

/* Drops size-1 dimensions and merges a dimension into the one outside it when both views
 * are contiguous across them. Only for non-empty plans. */
static void plan_simplify(plan *p) {
    int32_t r = 0;
    for (int32_t k = 0; k < p->rank; k++) {
        if (p->n[k] == 1) continue;
        if (r > 0 && p->ss[r - 1] == p->ss[k] * p->n[k] && p->ds[r - 1] == p->ds[k] * p->n[k]) {
            p->n[r - 1] *= p->n[k];
            p->ss[r - 1] = p->ss[k];
            p->ds[r - 1] = p->ds[k];
            continue;
        }
        p->n[r] = p->n[k];
        p->ss[r] = p->ss[k];
        p->ds[r] = p->ds[k];
        r++;
    }
    p->rank = r;
}

/* Typed inner loops, one set per element size: strided_N, tile_N and fill_N. */
#define ELEMENT_SIZE_BODY "backends/cpu/eval/movement_typed.inc"
#include "backends/cpu/eval/per_element_size.h"

static void run_strided(size_t es, char *d, const char *s, int64_t n, int64_t ds, int64_t ss) {
    switch (es) {
    case 1: strided_1(d, s, n, ds, ss); break;
    case 2: strided_2(d, s, n, ds, ss); break;
    case 4: strided_4(d, s, n, ds, ss); break;
    case 8: strided_8(d, s, n, ds, ss); break;
    default: strided_16(d, s, n, ds, ss); break;
    }
}

static void run_tile(size_t es, char *d, const char *s, int64_t na, int64_t dsa, int64_t nb,
                     int64_t ssb) {
    switch (es) {
    case 1: tile_1(d, s, na, dsa, nb, ssb); break;
    case 2: tile_2(d, s, na, dsa, nb, ssb); break;
    case 4: tile_4(d, s, na, dsa, nb, ssb); break;
    case 8: tile_8(d, s, na, dsa, nb, ssb); break;
    default: tile_16(d, s, na, dsa, nb, ssb); break;
    }
}

/* n elements of size es at dst, each a copy of the one at value. */
static void fill(size_t es, void *dst, const void *value, int64_t n) {
    switch (es) {
    case 1: fill_1(dst, value, n); break;
    case 2: fill_2(dst, value, n); break;
    case 4: fill_4(dst, value, n); break;
    case 8: fill_8(dst, value, n); break;
    default: fill_16(dst, value, n); break;
    }
}

/* Runs a plan: dst and src point at the elements of index 0 of each view. */
static void copy_plan(size_t es, void *dst, const void *src, plan p) {
    if (plan_empty(&p)) return;
    plan_simplify(&p);
    char *d0 = dst;
    const char *s0 = src;
    ptrdiff_t e = (ptrdiff_t)es;
    if (p.rank == 0) {
        memcpy(d0, s0, es);
        return;
    }
    int32_t m = p.rank - 1, j = -1;
    /* A transposition: the destination is contiguous along m, the source along j. */
    if (p.ds[m] == 1 && p.ss[m] != 1 && p.ss[m] != 0 && p.n[m] >= TILE_MIN)
        for (int32_t k = 0; k < m; k++)
            if (p.ss[k] == 1 && p.n[k] >= TILE_MIN) j = k;
    int32_t outer[KILN_MAX_RANK], n_outer = 0;
    for (int32_t k = 0; k < m; k++)
        if (k != j) outer[n_outer++] = k;
    int64_t idx[KILN_MAX_RANK] = {0};
    int64_t doff = 0, soff = 0;
    bool contiguous = p.ds[m] == 1 && p.ss[m] == 1;
    for (;;) {
        char *d = d0 + doff * e;
        const char *s = s0 + soff * e;
        if (j >= 0)
            run_tile(es, d, s, p.n[j], p.ds[j], p.n[m], p.ss[m]);
        else if (contiguous)
            memcpy(d, s, (size_t)p.n[m] * es);
        else
            run_strided(es, d, s, p.n[m], p.ds[m], p.ss[m]);
        int32_t q = n_outer - 1;
        for (; q >= 0; q--) {
            int32_t k = outer[q];
            doff += p.ds[k];
            soff += p.ss[k];
            if (++idx[q] < p.n[k]) break;
            doff -= p.ds[k] * p.n[k];
            soff -= p.ss[k] * p.n[k];
            idx[q] = 0;
        }
        if (q < 0) break;
    }
}

static size_t elem_size(const kiln_tensor *t) { return kiln_dtype_size(kiln_tensor_dtype(t)); }

/* A plan over a result shape written contiguously. */
static plan plan_for_result(const kiln_shape *shape) {
    plan p = {.rank = shape->rank};
    row_strides(shape, p.ds);
    for (int32_t k = 0; k < shape->rank; k++)
        p.n[k] = shape->dims[k];
    return p;
}

KILN__EVAL(BROADCAST_IN_DIM) {
    (void)cx, (void)n_operands, (void)n_results;
    const kiln_tensor *x = operands[0];
    kiln_tensor *r = results[0];
    int64_t n = kiln_tensor_numel(r);
    if (n == 0) return KILN_OK;
    if (kiln_tensor_numel(x) == 1) {
        /* A scalar (how the builders broadcast numbers): a fill, which vectorizes. */
        const void *v = kiln__in(x);
        void *out = kiln__out(r);
        switch (elem_size(x)) {
        case 1: memset(out, *(const uint8_t *)v, (size_t)n); return KILN_OK;
        case 2: fill_2(out, v, n); return KILN_OK;
        case 4: fill_4(out, v, n); return KILN_OK;
        case 8: fill_8(out, v, n); return KILN_OK;
        case 16: fill_16(out, v, n); return KILN_OK;
        default: break;
        }
    }
    const kiln_shape *xs = kiln_tensor_shape(x);
    int64_t xst[KILN_MAX_RANK];
    row_strides(xs, xst);
    plan p = plan_for_result(kiln_tensor_shape(r));
    for (int32_t k = 0; k < p.rank; k++)
        p.ss[k] = 0;
    for (int32_t d = 0; d < xs->rank; d++)
        if (xs->dims[d] != 1) p.ss[attrs->u.broadcast.dims.v[d]] = xst[d];
    copy_plan(elem_size(x), kiln__out(r), kiln__in(x), p);
    return KILN_OK;
}

KILN__EVAL(RESHAPE) {
    (void)cx, (void)attrs, (void)n_operands, (void)n_results;
    size_t nbytes = kiln_tensor_nbytes(results[0]);
    if (nbytes) memcpy(kiln__out(results[0]), kiln__in(operands[0]), nbytes);
    return KILN_OK;
}

KILN__EVAL(TRANSPOSE) {
    (void)cx, (void)n_operands, (void)n_results;
    const kiln_tensor *x = operands[0];
    kiln_tensor *r = results[0];
    if (kiln_tensor_numel(r) == 0) return KILN_OK;
    int64_t xst[KILN_MAX_RANK];
    row_strides(kiln_tensor_shape(x), xst);
    plan p = plan_for_result(kiln_tensor_shape(r));
    for (int32_t k = 0; k < p.rank; k++)
        p.ss[k] = xst[attrs->u.permutation.v[k]];
    copy_plan(elem_size(x), kiln__out(r), kiln__in(x), p);
    return KILN_OK;
}

KILN__EVAL(REVERSE) {
    (void)cx, (void)n_operands, (void)n_results;
    const kiln_tensor *x = operands[0];
    kiln_tensor *r = results[0];
    if (kiln_tensor_numel(r) == 0) return KILN_OK;
    size_t es = elem_size(x);
    plan p = plan_for_result(kiln_tensor_shape(r));
    int64_t base = 0;
    for (int32_t k = 0; k < p.rank; k++)
        p.ss[k] = p.ds[k];
    for (int32_t i = 0; i < attrs->u.reverse_dims.count; i++) {
        int64_t k = attrs->u.reverse_dims.v[i];
        base += (p.n[k] - 1) * p.ss[k];
        p.ss[k] = -p.ss[k];
    }
    copy_plan(es, kiln__out(r), (const char *)kiln__in(x) + base * (ptrdiff_t)es, p);
    return KILN_OK;
}

KILN__EVAL(SLICE) {
    (void)cx, (void)n_operands, (void)n_results;
    const kiln_tensor *x = operands[0];
    kiln_tensor *r = results[0];
    if (kiln_tensor_numel(r) == 0) return KILN_OK;
    size_t es = elem_size(x);
    int64_t xst[KILN_MAX_RANK], base = 0;
    const kiln_shape *xs = kiln_tensor_shape(x), *rs = kiln_tensor_shape(r);
    row_strides(xs, xst);
    /* one contiguous run of the source (a range of rows, a piece of a vector: the common
     * case, and often a few elements inside a loop): a copy, without a plan */
    bool run = true, inner = false; /* inner: past the dimension the range is in */
    for (int32_t k = 0; k < rs->rank && run; k++) {
        run = attrs->u.slice.strides.v[k] == 1 || rs->dims[k] == 1;
        if (inner) run = run && rs->dims[k] == xs->dims[k];
        if (rs->dims[k] != 1) inner = true;
        base += attrs->u.slice.start.v[k] * xst[k];
    }
    if (run) {
        memcpy(kiln__out(r), (const char *)kiln__in(x) + base * (ptrdiff_t)es,
               (size_t)kiln_tensor_numel(r) * es);
        return KILN_OK;
    }
    base = 0;
    plan p = plan_for_result(rs);
    for (int32_t k = 0; k < p.rank; k++) {
        base += attrs->u.slice.start.v[k] * xst[k];
        /* a stride only matters (and only fits when multiplied) for sizes over 1 */
        p.ss[k] = p.n[k] > 1 ? attrs->u.slice.strides.v[k] * xst[k] : 0;
    }
    copy_plan(es, kiln__out(r), (const char *)kiln__in(x) + base * (ptrdiff_t)es, p);
    return KILN_OK;
}

/* A start index operand, clamped to [0, limit] (limit >= 0). */
static int64_t clamped_start(const kiln_tensor *t, int64_t limit) {
    const void *p = kiln__in(t);
    int64_t v;
    switch (kiln_tensor_dtype(t)) {
    case KILN_I8: v = *(const int8_t *)p; break;
    case KILN_I16: v = *(const int16_t *)p; break;
    case KILN_I32: v = *(const int32_t *)p; break;
    case KILN_I64: v = *(const int64_t *)p; break;
    case KILN_U8: v = *(const uint8_t *)p; break;
    case KILN_U16: v = *(const uint16_t *)p; break;
    case KILN_U32: v = *(const uint32_t *)p; break;
    default: {
        uint64_t u = *(const uint64_t *)p;
        v = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
        break;
    }
    }
    return v < 0 ? 0 : v > limit ? limit : v;
}

KILN__EVAL(DYNAMIC_SLICE) {
    (void)cx, (void)attrs, (void)n_operands, (void)n_results;
    const kiln_tensor *x = operands[0];
    kiln_tensor *r = results[0];
    if (kiln_tensor_numel(r) == 0) return KILN_OK;
    const kiln_shape *xs = kiln_tensor_shape(x);
    size_t es = elem_size(x);
    int64_t xst[KILN_MAX_RANK], base = 0;
    row_strides(xs, xst);
    plan p = plan_for_result(kiln_tensor_shape(r));
    for (int32_t k = 0; k < p.rank; k++) {
        base += clamped_start(operands[1 + k], xs->dims[k] - p.n[k]) * xst[k];
        p.ss[k] = xst[k];
    }
    copy_plan(es, kiln__out(r), (const char *)kiln__in(x) + base * (ptrdiff_t)es, p);
    return KILN_OK;
}

KILN__EVAL(DYNAMIC_UPDATE_SLICE) {
    (void)cx, (void)attrs, (void)n_operands, (void)n_results;
    const kiln_tensor *x = operands[0], *u = operands[1];
    kiln_tensor *r = results[0];
    size_t nbytes = kiln_tensor_nbytes(r);
    if (nbytes == 0) return KILN_OK;
    memcpy(kiln__out(r), kiln__in(x), nbytes);
    if (kiln_tensor_numel(u) == 0) return KILN_OK;
    const kiln_shape *xs = kiln_tensor_shape(x);
    size_t es = elem_size(x);
    int64_t xst[KILN_MAX_RANK], base = 0;
    row_strides(xs, xst);
    plan p = plan_for_result(kiln_tensor_shape(u)); /* the update, read contiguously */
    for (int32_t k = 0; k < p.rank; k++) {
        p.ss[k] = p.ds[k];
        p.ds[k] = xst[k];
        base += clamped_start(operands[2 + k], xs->dims[k] - p.n[k]) * xst[k];
    }
    copy_plan(es, (char *)kiln__out(r) + base * (ptrdiff_t)es, kiln__in(u), p);
    return KILN_OK;
}

KILN__EVAL(PAD) {
    (void)cx, (void)n_operands, (void)n_results;
    const kiln_tensor *x = operands[0];
    kiln_tensor *r = results[0];
    int64_t numel = kiln_tensor_numel(r);
    if (numel == 0) return KILN_OK;
    const kiln_shape *xs = kiln_tensor_shape(x), *rs = kiln_tensor_shape(r);
    size_t es = elem_size(x);
    int64_t xst[KILN_MAX_RANK], rst[KILN_MAX_RANK], sbase = 0, dbase = 0;
    row_strides(xs, xst);
    row_strides(rs, rst);
    plan p = {.rank = xs->rank};
    bool covers = true; /* the operand's elements fill the whole result */
    for (int32_t k = 0; k < xs->rank; k++) {
        int64_t n = xs->dims[k], out = rs->dims[k], low = attrs->u.pad.low.v[k];
        /* interior padding only matters (and step only fits) for sizes over 1 */
        int64_t step = n > 1 ? attrs->u.pad.interior.v[k] + 1 : 1;
        /* Operand element i lands at result index low + i*step; keep those in [0, out). */
        int64_t first, last;
        if (low >= 0) {
            first = 0;
            last = out > low ? (out - 1 - low) / step : -1;
        } else {
            /* extent of the interior-padded operand: n + (n-1)*interior, which fits */
            int64_t extent = n > 0 ? n + (n - 1) * (step - 1) : 0;
            if (low + extent <= 0 || out == 0) {
                first = 0, last = -1;
            } else {
                first = -low / step + (-low % step != 0);
                uint64_t reach = (uint64_t)(out - 1) + (uint64_t)(-low);
                uint64_t l = reach / (uint64_t)step;
                last = l > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)l;
            }
        }
        if (last > n - 1) last = n - 1;
        p.n[k] = last >= first ? last - first + 1 : 0;
        if (p.n[k] != out || step != 1) covers = false;
        if (p.n[k] == 0) continue;
        sbase += first * xst[k];
        dbase += (low + first * step) * rst[k];
        p.ss[k] = xst[k];
        p.ds[k] = p.n[k] > 1 ? rst[k] * step : 0;
    }
    if (!covers) fill(es, kiln__out(r), kiln__in(operands[1]), numel);
    if (plan_empty(&p)) return KILN_OK;
    copy_plan(es, (char *)kiln__out(r) + dbase * (ptrdiff_t)es,
              (const char *)kiln__in(x) + sbase * (ptrdiff_t)es, p);
    return KILN_OK;
}

KILN__EVAL(CONCATENATE) {
    (void)cx, (void)n_results;
    kiln_tensor *r = results[0];
    if (kiln_tensor_numel(r) == 0) return KILN_OK;
    const kiln_shape *rs = kiln_tensor_shape(r);
    size_t es = elem_size(r);
    int64_t dim = attrs->u.dimension, rst[KILN_MAX_RANK], offset = 0;
    row_strides(rs, rst);
    char *out = kiln__out(r);
    for (int i = 0; i < n_operands; i++) {
        const kiln_tensor *x = operands[i];
        const kiln_shape *xs = kiln_tensor_shape(x);
        if (kiln_tensor_numel(x) > 0) {
            plan p = {.rank = xs->rank};
            row_strides(xs, p.ss);
            for (int32_t k = 0; k < xs->rank; k++) {
                p.n[k] = xs->dims[k];
                p.ds[k] = rst[k];
            }
            copy_plan(es, out + offset * rst[dim] * (ptrdiff_t)es, kiln__in(x), p);
        }
        offset += xs->dims[dim];
    }
    return KILN_OK;
}
