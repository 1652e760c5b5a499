/* SPDX-License-Identifier: Apache-2.0 */
/* convolution on the CPU: operands converted to the result's compute representation and
 * laid out canonically (input [N, C, spatial...], kernel [O, I, spatial...]), then for
 * each group and output batch an im2col matrix [I * window, positions] multiplied by the
 * group's kernel rows (GEMM: OpenBLAS for f32/f64 and f16/bf16, typed loops otherwise). */
#include <stdatomic.h>
#include <string.h>

#include "backends/cpu/eval/eval.h"
#include "backends/cpu/eval/eval_linalg.h"
#include "base/alloc.h"
#include "base/threads.h"

#define MAXS KILN_MAX_RANK
/* The most bytes of im2col matrix made at once (more when one row of positions needs it). */
#define COLS_BUDGET ((int64_t)8 << 20)

typedef struct conv_geom {
    int32_t S;            /* spatial dimensions */
    int64_t N, C, O, I;   /* input batch, input features, output features, I = C / fgc */
    int64_t Nout, GG, Og; /* output batch, groups (fgc * bgc), output features per group */
    int64_t KS, P, K;     /* window size, output positions, I * KS */
    int64_t in_plane;     /* input positions (product of the input spatial sizes) */
    bool feature_groups;  /* groups split the input features (else the batch) */
    int64_t in_sz[MAXS], k_sz[MAXS], out_sz[MAXS], in_str[MAXS];
    int64_t stride[MAXS], pad[MAXS], ld[MAXS], rd[MAXS];
} conv_geom;

/* The input coordinate of window position (o, k) along spatial dimension d, or -1. */
static inline int64_t in_coord(const conv_geom *g, int32_t d, int64_t o, int64_t k) {
    int64_t x = o * g->stride[d] + k * g->rd[d] - g->pad[d];
    if (x < 0) return -1;
    int64_t ld = g->ld[d];
    if (ld != 1) {
        if (x % ld) return -1;
        x /= ld;
    }
    return x < g->in_sz[d] ? x : -1;
}

#define ELEMENT_SIZE_BODY "backends/cpu/eval/conv_row.inc"
#include "backends/cpu/eval/per_element_size.h"

typedef void fill_run_fn(const conv_geom *g, int32_t last, int64_t kx, void *row,
                         const void *plane, int64_t base, int64_t len, int64_t istr, int64_t st,
                         int64_t ld, int64_t c0, int64_t lo, int64_t hi);

/* Fills one im2col row (window offset kidx, one input feature plane) for the output
 * positions of rows [q0, q1) (a row: the positions along the last spatial dimension). */
static void im2col_row(const conv_geom *g, size_t es, const void *plane, const int64_t *kidx,
                       int64_t q0, int64_t q1, void *row_out) {
    int32_t S = g->S;
    if (S == 0) {
        memcpy(row_out, plane, es);
        return;
    }
    int32_t last = S - 1;
    int64_t len = g->out_sz[last], kx = kidx[last], istr = g->in_str[last];
    int64_t st = g->stride[last], ld = g->ld[last];
    /* With ld == 1 the valid output positions along the last dimension are [lo, hi):
     * x = o * st + c0 must lie in [0, in_sz). */
    int64_t c0 = kx * g->rd[last] - g->pad[last], lo = 0, hi = len;
    if (ld == 1) {
        if (c0 < 0) lo = (-c0 + st - 1) / st;
        int64_t top = g->in_sz[last] - 1 - c0; /* o * st <= top */
        hi = top < 0 ? 0 : top / st + 1;
        if (hi > len) hi = len;
        if (lo > len) lo = len;
    }
    int64_t oidx[MAXS] = {0};
    {
        int64_t rem = q0;
        for (int32_t d = last - 1; d >= 0; d--) {
            oidx[d] = rem % g->out_sz[d];
            rem /= g->out_sz[d];
        }
    }
    fill_run_fn *fill = es == 1   ? fill_run_1
                        : es == 2 ? fill_run_2
                        : es == 4 ? fill_run_4
                        : es == 8 ? fill_run_8
                                  : fill_run_16;
    unsigned char *row = row_out;
    for (int64_t q = q0; q < q1; q++) {
        int64_t base = 0;
        bool valid = true;
        for (int32_t d = 0; d < last && valid; d++) {
            int64_t x = in_coord(g, d, oidx[d], kidx[d]);
            if (x < 0)
                valid = false;
            else
                base += x * g->in_str[d];
        }
        if (!valid)
            memset(row, 0, (size_t)len * es);
        else
            fill(g, last, kx, row, plane, base, len, istr, st, ld, c0, lo, hi);
        row += (size_t)len * es;
        for (int32_t d = last - 1; d >= 0; d--) {
            if (++oidx[d] < g->out_sz[d]) break;
            oidx[d] = 0;
        }
    }
}

/* cols [I * KS, pn] for input batch n_in, features foff.. of the canonical input x, and
 * the output positions of rows [q0, q1) (pn positions). */
static void im2col(const conv_geom *g, size_t es, const unsigned char *x, int64_t n_in,
                   int64_t foff, int64_t q0, int64_t q1, int64_t pn, unsigned char *cols) {
    for (int64_t i = 0; i < g->I; i++) {
        const unsigned char *plane = x + (size_t)((n_in * g->C + foff + i) * g->in_plane) * es;
        int64_t kidx[MAXS] = {0};
        for (int64_t kp = 0; kp < g->KS; kp++) {
            im2col_row(g, es, plane, kidx, q0, q1, cols + (size_t)((i * g->KS + kp) * pn) * es);
            for (int32_t d = g->S - 1; d >= 0; d--) {
                if (++kidx[d] < g->k_sz[d]) break;
                kidx[d] = 0;
            }
        }
    }
}

/* True when the im2col matrix of a group is the input itself: a 1x1 window, stride 1, no
 * padding or dilation of the input. */
static bool cols_are_input(const conv_geom *g) {
    for (int32_t d = 0; d < g->S; d++)
        if (g->k_sz[d] != 1 || g->stride[d] != 1 || g->pad[d] != 0 || g->ld[d] != 1 ||
            g->out_sz[d] != g->in_sz[d])
            return false;
    return true;
}

static bool mul_ok(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_mul_overflow(a, b, out) && *out <= (int64_t)(SIZE_MAX / 16);
}

typedef struct bufs {
    void *p[6];
    size_t n[6];
} bufs;

static void *buf_get(kiln_ctx *cx, bufs *b, int i, int64_t elems, size_t es) {
    int64_t bytes;
    if (!mul_ok(elems, (int64_t)es, &bytes)) {
        kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED,
                           "convolution: a work buffer of %lld elements is too large",
                           (long long)elems);
        return NULL;
    }
    b->n[i] = (size_t)bytes;
    return b->p[i] = kiln__alloc(cx, (size_t)bytes, KILN_DATA_ALIGNMENT, "convolution");
}

/* Converts t to the compute representation and lays it out by perm; returns the data or
 * NULL (error recorded). Uses slots i and i + 1 of b. */
static const void *canonical(kiln_ctx *cx, const kiln_tensor *t, kiln_dtype rd, const int32_t *perm,
                             bufs *b, int i) {
    const kiln_shape *s = kiln_tensor_shape(t);
    int64_t n = kiln_tensor_numel(t);
    size_t es = kiln__lk_size(kiln__lk_of(rd));
    static const uint64_t empty = 0;
    if (n == 0) return &empty; /* never read: no window position reaches it */
    const void *data = kiln__in(t);
    if (!kiln__lk_same_repr(kiln_tensor_dtype(t), rd)) {
        void *c = buf_get(cx, b, i, n, es);
        if (!c) return NULL;
        kiln__lk_convert(c, rd, data, kiln_tensor_dtype(t), n);
        data = c;
    }
    if (kiln__lk_perm_is_trivial(s->rank, s->dims, perm)) return data;
    void *c = buf_get(cx, b, i + 1, n, es);
    if (!c) return NULL;
    kiln__lk_transpose(c, data, es, s->rank, s->dims, perm);
    return c;
}

typedef struct conv_job {
    const conv_geom *g;
    kiln__lk k;
    size_t es;
    const unsigned char *x, *w;
    unsigned char *c, *cols;
    int64_t slot_elems;
    bool share;
    int64_t chunk, len, rows;
    atomic_int next_slot;
} conv_job;

/* Items are (group, output batch entry) pairs, group-major. */
static void conv_items(void *user, int64_t begin, int64_t end) {
    conv_job *j = user;
    const conv_geom *g = j->g;
    size_t es = j->es;
    unsigned char *cols = NULL;
    if (!j->share) {
        int slot = atomic_fetch_add(&j->next_slot, 1);
        cols = j->cols + (size_t)(slot * j->slot_elems) * es;
    }
    for (int64_t it = begin; it < end; it++) {
        int64_t gi = it / g->Nout, n = it % g->Nout;
        int64_t foff = g->feature_groups ? gi * g->I : 0;
        const unsigned char *wg = j->w + (size_t)(gi * g->Og * g->K) * es;
        int64_t n_in = g->feature_groups ? n : gi * g->Nout + n;
        unsigned char *cn = j->c + (size_t)((n * g->O + gi * g->Og) * g->P) * es;
        if (j->share) {
            const unsigned char *bm = j->x + (size_t)((n_in * g->C + foff) * g->in_plane) * es;
            kiln__lk_gemm(j->k, false, false, g->Og, g->P, g->K, wg, g->K, bm, g->P, cn, g->P);
            continue;
        }
        for (int64_t q0 = 0; q0 < j->rows; q0 += j->chunk) {
            int64_t q1 = q0 + j->chunk < j->rows ? q0 + j->chunk : j->rows, pn = (q1 - q0) * j->len;
            im2col(g, es, j->x, n_in, foff, q0, q1, pn, cols);
            kiln__lk_gemm(j->k, false, false, g->Og, pn, g->K, wg, g->K, cols, pn,
                          cn + (size_t)(q0 * j->len) * es, g->P);
        }
    }
}

KILN__EVAL(CONVOLUTION) {
    (void)n_operands, (void)n_results;
    const kiln_conv_params *p = &attrs->u.conv;
    const kiln_tensor *lhs = operands[0], *rhs = operands[1];
    kiln_tensor *res = results[0];
    kiln_dtype rd = kiln_tensor_dtype(res);
    const kiln_shape *ls = kiln_tensor_shape(lhs), *ks = kiln_tensor_shape(rhs),
                     *os = kiln_tensor_shape(res);
    if (kiln_tensor_numel(res) == 0) return KILN_OK;
    kiln_status dnnl_status;
    if (kiln__dnnl_conv(cx, attrs, lhs, rhs, NULL, res, &dnnl_status)) return dnnl_status;
    void *out = kiln__out(res);

    conv_geom g = {.S = ls->rank - 2};
    int64_t fgc = p->feature_group_count > 0 ? p->feature_group_count : 1;
    int64_t bgc = p->batch_group_count > 0 ? p->batch_group_count : 1;
    g.N = ls->dims[p->input_batch_dimension];
    g.C = ls->dims[p->input_feature_dimension];
    g.O = ks->dims[p->kernel_output_feature_dimension];
    g.I = ks->dims[p->kernel_input_feature_dimension];
    g.Nout = os->dims[p->output_batch_dimension];
    g.GG = fgc * bgc;
    g.Og = g.O / g.GG;
    g.feature_groups = fgc > 1;
    g.KS = g.P = g.in_plane = 1;
    int32_t in_perm[KILN_MAX_RANK], k_perm[KILN_MAX_RANK], out_perm[KILN_MAX_RANK];
    int64_t canon_out[KILN_MAX_RANK];
    in_perm[0] = (int32_t)p->input_batch_dimension;
    in_perm[1] = (int32_t)p->input_feature_dimension;
    k_perm[0] = (int32_t)p->kernel_output_feature_dimension;
    k_perm[1] = (int32_t)p->kernel_input_feature_dimension;
    out_perm[p->output_batch_dimension] = 0;
    out_perm[p->output_feature_dimension] = 1;
    canon_out[0] = g.Nout;
    canon_out[1] = g.O;
    for (int32_t d = 0; d < g.S; d++) {
        in_perm[2 + d] = (int32_t)p->input_spatial_dimensions.v[d];
        k_perm[2 + d] = (int32_t)p->kernel_spatial_dimensions.v[d];
        out_perm[p->output_spatial_dimensions.v[d]] = 2 + d;
        g.in_sz[d] = ls->dims[p->input_spatial_dimensions.v[d]];
        g.k_sz[d] = ks->dims[p->kernel_spatial_dimensions.v[d]];
        g.out_sz[d] = canon_out[2 + d] = os->dims[p->output_spatial_dimensions.v[d]];
        g.stride[d] = p->window_strides.count ? p->window_strides.v[d] : 1;
        g.pad[d] = p->padding_low.count ? p->padding_low.v[d] : 0;
        g.ld[d] = p->lhs_dilation.count ? p->lhs_dilation.v[d] : 1;
        g.rd[d] = p->rhs_dilation.count ? p->rhs_dilation.v[d] : 1;
        g.KS *= g.k_sz[d];
        g.P *= g.out_sz[d];
        g.in_plane *= g.in_sz[d];
    }
    {
        int64_t acc = 1;
        for (int32_t d = g.S - 1; d >= 0; d--) {
            g.in_str[d] = acc;
            acc *= g.in_sz[d];
        }
    }
    g.K = g.I * g.KS;
    if (g.K == 0) {
        memset(out, 0, kiln_tensor_nbytes(res));
        return KILN_OK;
    }

    kiln__lk k = kiln__lk_of(rd);
    size_t es = kiln__lk_size(k);
    int64_t out_n = kiln_tensor_numel(res);
    bool out_trivial = kiln__lk_perm_is_trivial(ls->rank, canon_out, out_perm);
    bufs b = {0};
    kiln_status s = KILN_OK;
    const unsigned char *x = canonical(cx, lhs, rd, in_perm, &b, 0);
    const unsigned char *w = x ? canonical(cx, rhs, rd, k_perm, &b, 2) : NULL;
    bool direct = out_trivial && kiln__lk_same_repr(rd, rd);
    unsigned char *c = direct ? out : (w ? buf_get(cx, &b, 4, out_n, es) : NULL);
    bool share = cols_are_input(&g);
    /* im2col in chunks of whole rows of output positions, at most COLS_BUDGET bytes (but
     * one row at least). */
    int64_t len = g.S ? g.out_sz[g.S - 1] : 1, rows = g.P / len;
    int64_t chunk = COLS_BUDGET / ((int64_t)es * g.K * len);
    if (chunk < 1) chunk = 1;
    if (chunk > rows) chunk = rows;
    /* One im2col buffer per thread: the (group, batch entry) products are split across
     * threads, each writing its own rows of c, and each product runs the same calls
     * whatever the split, so the bits do not depend on the thread count. */
    int64_t items = g.GG * g.Nout, slots = kiln__threads_count();
    if (slots > items) slots = items;
    int64_t slot_elems = g.K * chunk * len;
    unsigned char *cols = NULL;
    bufs cb = {0};
    int64_t all_elems = 0;
    if (w && c && !share) {
        if (mul_ok(slot_elems, slots, &all_elems))
            cols = buf_get(cx, &cb, 0, all_elems, es);
        else
            kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED,
                               "convolution: im2col buffers of %lld x %lld elements are too large",
                               (long long)slots, (long long)slot_elems);
    }
    if (!x || !w || !c || (!share && !cols)) {
        s = KILN_RESOURCE_EXHAUSTED; /* recorded by buf_get */
    } else {
        conv_job j = {&g, k, es, x, w, c, cols, slot_elems, share, chunk, len, rows, 0};
        double work = (double)g.Og * (double)g.P * (double)g.K;
        int64_t grain = work >= 65536.0 ? 1 : (int64_t)(65536.0 / (work > 1 ? work : 1));
        /* At most `slots` ranges (items / grain <= slots), even if the thread count changes
         * meanwhile. */
        int64_t per_slot = items / (slots + 1) + 1;
        if (grain < per_slot) grain = per_slot;
        kiln__parallel_for(items, grain, conv_items, &j);
        if (!direct) {
            /* c is canonical [Nout, O, spatial...] in the compute representation. */
            if (out_trivial) {
                kiln__lk_store(out, rd, c, out_n);
            } else if (kiln__lk_same_repr(rd, rd)) {
                kiln__lk_transpose(out, c, es, ls->rank, canon_out, out_perm);
            } else {
                /* Transpose in f32, then round to the 16-bit result. */
                unsigned char *t = buf_get(cx, &b, 5, out_n, es);
                if (t) {
                    kiln__lk_transpose(t, c, es, ls->rank, canon_out, out_perm);
                    kiln__lk_store(out, rd, t, out_n);
                } else {
                    s = KILN_RESOURCE_EXHAUSTED;
                }
            }
        }
    }
    if (cols) kiln__free(cx, cols, cb.n[0]);
    for (int i = 0; i < 6; i++)
        if (b.p[i]) kiln__free(cx, b.p[i], b.n[i]);
    return s;
}

/* out[.., f, ..] = act(out[.., f, ..] + bias[f]) over `outer` blocks of F features of
 * `inner` elements each. Integers add with wrapping (through the unsigned type); relu is
 * StableHLO's maximum(x, 0): NaN stays NaN and -0 becomes +0. */
#define T int8_t
#define UT uint8_t
#define FN(name) name##_i8
#include "backends/cpu/eval/bias_act.inc"

#define T int16_t
#define UT uint16_t
#define FN(name) name##_i16
#include "backends/cpu/eval/bias_act.inc"

#define T int32_t
#define UT uint32_t
#define FN(name) name##_i32
#include "backends/cpu/eval/bias_act.inc"

#define T int64_t
#define UT uint64_t
#define FN(name) name##_i64
#include "backends/cpu/eval/bias_act.inc"

#define T uint8_t
#define UT uint8_t
#define FN(name) name##_u8
#include "backends/cpu/eval/bias_act.inc"

#define T uint16_t
#define UT uint16_t
#define FN(name) name##_u16
#include "backends/cpu/eval/bias_act.inc"

#define T uint32_t
#define UT uint32_t
#define FN(name) name##_u32
#include "backends/cpu/eval/bias_act.inc"

#define T uint64_t
#define UT uint64_t
#define FN(name) name##_u64
#include "backends/cpu/eval/bias_act.inc"

#define T float
#define UT float
#define FN(name) name##_f32
#include "backends/cpu/eval/bias_act.inc"

#define T double
#define UT double
#define FN(name) name##_f64
#include "backends/cpu/eval/bias_act.inc"

static void bias_act_loops(kiln_dtype dt, void *out, const void *bias, int64_t outer, int64_t F,
                           int64_t inner, bool relu) {
    switch (dt) {
    case KILN_BOOL: /* add is OR; max(x, 0) is x */
        if (bias) {
            uint8_t *o_ = out;
            const uint8_t *b_ = bias;
            for (int64_t a = 0; a < outer; a++)
                for (int64_t f = 0; f < F; f++)
                    for (int64_t i = 0; i < inner; i++)
                        o_[(a * F + f) * inner + i] |= b_[f];
        }
        break;
    case KILN_I8: bias_act_i8(out, bias, outer, F, inner, relu); break;
    case KILN_I16: bias_act_i16(out, bias, outer, F, inner, relu); break;
    case KILN_I32: bias_act_i32(out, bias, outer, F, inner, relu); break;
    case KILN_I64: bias_act_i64(out, bias, outer, F, inner, relu); break;
    case KILN_U8: bias_act_u8(out, bias, outer, F, inner, relu); break;
    case KILN_U16: bias_act_u16(out, bias, outer, F, inner, relu); break;
    case KILN_U32: bias_act_u32(out, bias, outer, F, inner, relu); break;
    case KILN_U64: bias_act_u64(out, bias, outer, F, inner, relu); break;
    case KILN_F32: bias_act_f32(out, bias, outer, F, inner, relu); break;
    case KILN_F64: bias_act_f64(out, bias, outer, F, inner, relu); break;
    default: break; /* f16/bf16 go through f32 in the caller */
    }
}

static void relu_range(void *user, int64_t begin, int64_t end) {
    float *o = user;
    for (int64_t i = begin; i < end; i++)
        o[i] = o[i] <= 0.0f ? 0.0f : o[i];
}

kiln_status kiln__cpu_conv_bias_act(kiln_ctx *cx, const kiln__attrs *conv, kiln_tensor *lhs,
                                    kiln_tensor *rhs, kiln_tensor *bias, int activation,
                                    kiln_tensor *out) {
    if (!conv || !lhs || !rhs || !out)
        return kiln_ctx_set_error(
            cx, KILN_INVALID_ARGUMENT,
            "kiln__cpu_conv_bias_act: conv, lhs, rhs and out must not be NULL");
    if (activation != KILN__ACT_NONE && activation != KILN__ACT_RELU)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "kiln__cpu_conv_bias_act: unknown activation %d", activation);
    kiln_dtype dt = kiln_tensor_dtype(out);
    const kiln_shape *os = kiln_tensor_shape(out);
    int64_t fdim = conv->u.conv.output_feature_dimension;
    if (fdim < 0 || fdim >= os->rank)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "kiln__cpu_conv_bias_act: output feature dimension %lld is "
                                  "outside the result's rank %d",
                                  (long long)fdim, (int)os->rank);
    int64_t F = os->dims[fdim];
    if (bias) {
        /* F values in order: [F], or [1, F, 1, 1] as a broadcast's source often is. */
        const kiln_shape *bs = kiln_tensor_shape(bias);
        int32_t big = 0;
        for (int32_t d = 0; d < bs->rank; d++)
            big += bs->dims[d] != 1;
        if (kiln_tensor_numel(bias) != F || big > 1 || kiln_tensor_dtype(bias) != dt)
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "kiln__cpu_conv_bias_act: bias must be %s[%lld] (one "
                                      "value per output feature), got %s of rank %d",
                                      kiln_dtype_name(dt), (long long)F,
                                      kiln_dtype_name(kiln_tensor_dtype(bias)), (int)bs->rank);
    }
    bool relu = activation == KILN__ACT_RELU;
    int64_t n = kiln_tensor_numel(out);
    kiln_status s;
    if (n > 0 && kiln__dnnl_conv(cx, conv, lhs, rhs, bias, out, &s)) {
        /* The activation runs here, not as a oneDNN post-op: oneDNN's relu maps NaN to 0
         * and keeps -0, where StableHLO's maximum(x, 0) keeps NaN and gives +0. */
        if (s == KILN_OK && relu) {
            float *o = kiln__out(out);
            kiln__parallel_for(n, (int64_t)1 << 16, relu_range, o);
        }
        return s;
    }
    kiln_tensor *ops[2] = {lhs, rhs};
    s = kiln__eval_CONVOLUTION(cx, conv, ops, 2, &out, 1);
    if (s != KILN_OK) return s;
    if (n == 0 || (!bias && activation == KILN__ACT_NONE)) return KILN_OK;
    int64_t outer = 1, inner = 1;
    for (int32_t d = 0; d < os->rank; d++) {
        if (d < fdim) outer *= os->dims[d];
        if (d > fdim) inner *= os->dims[d];
    }
    if (dt != KILN_F16 && dt != KILN_BF16) {
        bias_act_loops(dt, kiln__out(out), bias ? kiln__in(bias) : NULL, outer, F, inner, relu);
        return KILN_OK;
    }
    /* 16-bit floats: in f32. f32 has more than twice their precision plus two bits, so
     * rounding the f32 sum again to 16 bits gives the correctly rounded 16-bit sum. */
    size_t nb = (size_t)n * sizeof(float), bb = (size_t)F * sizeof(float);
    float *t = kiln__alloc(cx, nb, KILN_DATA_ALIGNMENT, "convolution");
    float *tb = bias ? kiln__alloc(cx, bb, KILN_DATA_ALIGNMENT, "convolution") : NULL;
    if (!t || (bias && !tb)) {
        if (t) kiln__free(cx, t, nb);
        return KILN_RESOURCE_EXHAUSTED;
    }
    kiln__lk_convert(t, KILN_F32, kiln__in(out), dt, n);
    if (tb) kiln__lk_convert(tb, KILN_F32, kiln__in(bias), dt, F);
    bias_act_loops(KILN_F32, t, tb, outer, F, inner, relu);
    kiln__lk_store(kiln__out(out), dt, t, n);
    kiln__free(cx, t, nb);
    if (tb) kiln__free(cx, tb, bb);
    return KILN_OK;
}
