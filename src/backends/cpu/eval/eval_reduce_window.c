/* SPDX-License-Identifier: Apache-2.0 */
/* The reduce_window and select_and_scatter kernels.
 *
 * reduce_window follows the spec: the inputs are padded (low, high, and base_dilations - 1
 * between elements) with the init values, and each window of the padded inputs is
 * reduced, starting from the init value, in row-major order of the window. With a builtin
 * region on one input, the window offsets are the outer loop and whole output rows are
 * combined with (strided) input rows, which vectorizes; f16/bf16 accumulate in f32 and
 * round once. Max and sum pooling over two spatial dimensions of rank-4 f32/f64 tensors
 * (channels first or last) take direct kernels, split across threads, with the same
 * results bit for bit.
 *
 * select_and_scatter follows the reference interpreter: for each source element, in
 * row-major order, the window's in-bounds operand elements are visited in row-major order
 * (padding holds no candidates); the selected one starts as the first, and is replaced by
 * the current candidate whenever select(selected, current) is false. Then
 * result[selected] = scatter(result[selected], source element); the result starts as the
 * init value everywhere. A window without candidates scatters nothing. */
#include <immintrin.h>
#include <string.h>

#include "backends/cpu/lib/cpu_features.h"
#include "backends/cpu/eval/eval_reduce.h"
#include "backends/cpu/eval/float_keys.h"
#include "base/alloc.h"
#include "base/threads.h"
#include "core/tensor_internal.h"

/* The window geometry, with rank 0 seen as rank 1 of size 1. */
typedef struct geometry {
    int32_t rank;
    int64_t in[KILN_MAX_RANK], istride[KILN_MAX_RANK], out[KILN_MAX_RANK];
    int64_t win[KILN_MAX_RANK], stride[KILN_MAX_RANK], bdil[KILN_MAX_RANK], wdil[KILN_MAX_RANK],
        low[KILN_MAX_RANK];
} geometry;

static void geometry_init(geometry *g, const kiln_window_params *w, const kiln_shape *in,
                          const kiln_shape *out) {
    g->rank = in->rank > 0 ? in->rank : 1;
    for (int32_t d = 0; d < g->rank; d++) {
        bool real = in->rank > 0;
        g->in[d] = real ? in->dims[d] : 1;
        g->out[d] = real ? out->dims[d] : 1;
        g->win[d] = real ? w->window_dimensions.v[d] : 1;
        g->stride[d] = real ? w->window_strides.v[d] : 1;
        g->bdil[d] = real ? w->base_dilations.v[d] : 1;
        g->wdil[d] = real ? w->window_dilations.v[d] : 1;
        g->low[d] = real ? w->padding_low.v[d] : 0;
    }
    int64_t s = 1;
    for (int32_t d = g->rank - 1; d >= 0; d--) {
        g->istride[d] = s;
        s *= g->in[d];
    }
}

/* The input index along d of output index j and window index w, or -1 for padding. */
static inline int64_t input_index(const geometry *g, int32_t d, int64_t j, int64_t w) {
    int64_t p = j * g->stride[d] + w * g->wdil[d] - g->low[d];
    if (p < 0) return -1;
    if (g->bdil[d] != 1) {
        if (p % g->bdil[d] != 0) return -1;
        p /= g->bdil[d];
    }
    return p < g->in[d] ? p : -1;
}

/* The input element that window position w of output j reads (an offset in elements), or
 * -1 where it falls in the padding. */
static inline int64_t window_offset(const geometry *g, const int64_t *j, const int64_t *w) {
    int64_t off = 0;
    for (int32_t d = 0; d < g->rank; d++) {
        int64_t i = input_index(g, d, j[d], w[d]);
        if (i < 0) return -1;
        off += i * g->istride[d];
    }
    return off;
}

/* Advances a row-major multi-index over dims[0..rank); false after the last. */
static inline bool next_index(int64_t *idx, const int64_t *dims, int32_t rank) {
    for (int32_t d = rank - 1; d >= 0; d--) {
        if (++idx[d] < dims[d]) return true;
        idx[d] = 0;
    }
    return false;
}

/* ceil(a / b) for b > 0, and 0 for a <= 0. */
static int64_t ceil_div(int64_t a, int64_t b) { return a <= 0 ? 0 : a / b + (a % b != 0); }

/* ---- reduce_window --------------------------------------------------------------------- */

static kiln_status window_fast(kiln_ctx *cx, const kiln__attrs *attrs, kiln__region_kind kind,
                               const kiln_tensor *x, const kiln_tensor *init, kiln_tensor *out) {
    const char *fn = attrs->fn ? attrs->fn : "reduce_window";
    const kiln_dtype dtype = x->dtype, adt = kiln__acc_dtype(dtype);
    const size_t asz = kiln_dtype_size(adt);
    const bool half = adt != dtype;
    const int64_t n_out = out->numel;
    if (n_out == 0) return KILN_OK;
    geometry g;
    geometry_init(&g, &attrs->u.window, &x->shape, &out->shape);

    _Alignas(8) unsigned char init_acc[8];
    kiln__to_acc(dtype, kiln__in(init), init_acc, 1);
    char *acc = kiln__out(out);
    const char *src = kiln__in(x);
    void *acc_buf = NULL, *src_buf = NULL;
    size_t acc_bytes = (size_t)n_out * asz, src_bytes = (size_t)x->numel * asz;
    if (half) {
        if (!(acc_buf = kiln__alloc(cx, acc_bytes, KILN_DATA_ALIGNMENT, fn)))
            return KILN_RESOURCE_EXHAUSTED;
        if (x->numel > 0 && !(src_buf = kiln__alloc(cx, src_bytes, KILN_DATA_ALIGNMENT, fn))) {
            kiln__free(cx, acc_buf, acc_bytes);
            return KILN_RESOURCE_EXHAUSTED;
        }
        if (src_buf) kiln__to_acc(dtype, src, src_buf, x->numel);
        acc = acc_buf;
        src = src_buf;
    }
    kiln__fill_elements(acc, init_acc, asz, n_out);

    const int32_t last = g.rank - 1;
    const int64_t row_len = g.out[last], n_rows = n_out / row_len;
    /* Output rows outside, window offsets inside: the input rows a window covers stay in
     * cache while they are used, and each result element still folds its window in
     * row-major order. */
    int64_t j[KILN_MAX_RANK] = {0};
    for (int64_t row = 0; row < n_rows; row++, next_index(j, g.out, last)) {
        char *acc_row = acc + (size_t)(row * row_len) * asz;
        int64_t w[KILN_MAX_RANK] = {0};
        do {
            int64_t off = 0;
            bool pad = false;
            for (int32_t d = 0; d < last && !pad; d++) {
                int64_t i = input_index(&g, d, j[d], w[d]);
                if (i < 0)
                    pad = true;
                else
                    off += i * g.istride[d];
            }
            if (pad) {
                kiln__combine(kind, dtype, acc_row, init_acc, row_len, 0);
            } else if (g.bdil[last] == 1) {
                /* Input position p = j * stride - a along the last dimension. */
                const int64_t a = g.low[last] - w[last] * g.wdil[last], s = g.stride[last];
                int64_t j0 = ceil_div(a, s), j1 = ceil_div(g.in[last] + a, s);
                j0 = j0 < row_len ? j0 : row_len;
                j1 = j1 < row_len ? j1 : row_len;
                j1 = j1 > j0 ? j1 : j0;
                kiln__combine(kind, dtype, acc_row, init_acc, j0, 0);
                if (j1 > j0)
                    kiln__combine(kind, dtype, acc_row + (size_t)j0 * asz,
                                  src + (size_t)(off + j0 * s - a) * asz, j1 - j0, s);
                kiln__combine(kind, dtype, acc_row + (size_t)j1 * asz, init_acc, row_len - j1, 0);
            } else {
                for (int64_t jj = 0; jj < row_len; jj++) {
                    int64_t i = input_index(&g, last, jj, w[last]);
                    kiln__combine(kind, dtype, acc_row + (size_t)jj * asz,
                                  i < 0 ? (const void *)init_acc : src + (size_t)(off + i) * asz, 1,
                                  0);
                }
            }
        } while (next_index(w, g.win, g.rank));
    }

    if (half) {
        kiln__from_acc(dtype, acc, kiln__out(out), n_out);
        kiln__free(cx, acc_buf, acc_bytes);
        if (src_buf) kiln__free(cx, src_buf, src_bytes);
    }
    return KILN_OK;
}

static kiln_status window_generic(kiln_ctx *cx, const kiln__attrs *attrs,
                                  kiln_tensor *const *operands, int n, kiln_tensor **results) {
    const char *fn = attrs->fn ? attrs->fn : "reduce_window";
    const int64_t n_out = results[0]->numel;
    if (n_out == 0) return KILN_OK;
    geometry g;
    geometry_init(&g, &attrs->u.window, &operands[0]->shape, &results[0]->shape);

    kiln__scalar_region sr;
    kiln_status st = kiln__reducer_region_init(&sr, cx, attrs, operands, n, fn);
    int64_t j[KILN_MAX_RANK] = {0};
    for (int64_t o = 0; o < n_out && st == KILN_OK; o++) {
        for (int k = 0; k < n; k++)
            memcpy(kiln__scalar_region_arg(&sr, k), kiln__in(operands[n + k]),
                   kiln_dtype_size(operands[k]->dtype));
        int64_t w[KILN_MAX_RANK] = {0};
        do {
            int64_t off = window_offset(&g, j, w);
            for (int k = 0; k < n; k++) {
                size_t es = kiln_dtype_size(operands[k]->dtype);
                const void *v = off < 0 ? kiln__in(operands[n + k])
                                        : (const char *)kiln__in(operands[k]) + (size_t)off * es;
                memcpy(kiln__scalar_region_arg(&sr, n + k), v, es);
            }
            st = kiln__scalar_region_call(&sr, NULL);
        } while (st == KILN_OK && next_index(w, g.win, g.rank));
        if (st != KILN_OK) break;
        for (int k = 0; k < n; k++) {
            size_t es = kiln_dtype_size(operands[k]->dtype);
            memcpy((char *)kiln__out(results[k]) + (size_t)o * es, kiln__scalar_region_arg(&sr, k),
                   es);
        }
        next_index(j, g.out, g.rank);
    }
    kiln__scalar_region_fini(&sr);
    return st;
}

/* ---- direct pooling kernels ----------------------------------------------------------- */

/* Maximum works on keys: a float's bits as a signed integer with the magnitude bits of
 * negatives flipped, which orders like the floats with -0 < +0; NaN gets the largest key,
 * which maps back to the quiet NaN with every payload bit set. That is StableHLO's
 * maximum bit for bit as the builtin region's combiner computes it, it does not depend on
 * the order of the operands (so the loops may run in any order), and integer compares and
 * selects vectorize. Sums keep each result's order: init, then the window in row-major
 * order, padding elements as init. */
static inline int32_t max_key_f32(float x) { return key_f32(x, INT32_MAX); }
static inline int64_t max_key_f64(double x) { return key_f64(x, INT64_MAX); }
#define MAX_OP(a, b) ((a) > (b) ? (a) : (b))
#define ADD_OP(a, b) ((a) + (b))
#define ID(x) (x)

/* Pooling over two spatial dimensions of a rank-4 tensor, either [N, C, H, W] (window
 * [1, 1, kh, kw]) or [N, H, W, C] (window [1, kh, kw, 1]); strides >= 1, padding >= 0, no
 * dilations. Results are bitwise those of the general kernel; the loops run over whole
 * output rows (channels first) or channel vectors (channels last), in parallel over images
 * x channels or image rows. */
typedef struct pool_job {
    int64_t N, C, H, W, OH, OW, kh, kw, sh, sw, ph, pw;
    const void *x;
    void *out;
    const void *init;
} pool_job;

/* The pooling loops of each type and op (reduce_window_pool.inc). */
#define NCHW_NAME pool_nchw_max_f32
#define NHWC_NAME pool_nhwc_max_f32
#define T float
#define ACC int32_t
#define KEY max_key_f32
#define UNKEY unkey_f32
#define OP MAX_OP
#include "backends/cpu/eval/reduce_window_pool.inc"
#define NCHW_NAME pool_nchw_max_f64
#define NHWC_NAME pool_nhwc_max_f64
#define T double
#define ACC int64_t
#define KEY max_key_f64
#define UNKEY unkey_f64
#define OP MAX_OP
#include "backends/cpu/eval/reduce_window_pool.inc"
#define NCHW_NAME pool_nchw_add_f32
#define NHWC_NAME pool_nhwc_add_f32
#define T float
#define ACC float
#define KEY ID
#define UNKEY ID
#define OP ADD_OP
#include "backends/cpu/eval/reduce_window_pool.inc"
#define NCHW_NAME pool_nchw_add_f64
#define NHWC_NAME pool_nhwc_add_f64
#define T double
#define ACC double
#define KEY ID
#define UNKEY ID
#define OP ADD_OP
#include "backends/cpu/eval/reduce_window_pool.inc"

/* The 2 x 2, stride 2, unpadded f32 max pooling of NCHW images (every VGG pooling layer):
 * eight outputs per step from two rows of sixteen inputs, on the same keys as the general
 * loops (init included), so the bits are theirs. */
#define AVX2_TARGET __attribute__((target("avx2")))

/* max_key_f32 of eight floats. */
AVX2_TARGET static inline __m256i keys8(const float *p) {
    const __m256i mag = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    __m256i u = _mm256_castps_si256(_mm256_loadu_ps(p));
    __m256i k = _mm256_xor_si256(u, _mm256_and_si256(_mm256_srai_epi32(u, 31), mag));
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, mag), inf);
    return _mm256_blendv_epi8(k, _mm256_set1_epi32(INT32_MAX), nan);
}

AVX2_TARGET static void pool2_max_f32_avx2(void *user, int64_t begin, int64_t end) {
    const pool_job *j = user;
    const int64_t W = j->W, OW = j->OW;
    const int32_t init = max_key_f32(*(const float *)j->init);
    const __m256i mag = _mm256_set1_epi32(0x7fffffff), vinit = _mm256_set1_epi32(init);
    for (int64_t plane = begin; plane < end; plane++) {
        const float *x = (const float *)j->x + plane * j->H * W;
        float *o = (float *)j->out + plane * j->OH * OW;
        for (int64_t oh = 0; oh < j->OH; oh++, o += OW) {
            const float *r0 = x + 2 * oh * W, *r1 = r0 + W;
            int64_t q = 0;
            for (; q + 8 <= OW; q += 8) {
                __m256i m0 = _mm256_max_epi32(keys8(r0 + 2 * q), keys8(r1 + 2 * q));
                __m256i m1 = _mm256_max_epi32(keys8(r0 + 2 * q + 8), keys8(r1 + 2 * q + 8));
                __m256 f0 = _mm256_castsi256_ps(m0), f1 = _mm256_castsi256_ps(m1);
                /* Even and odd columns; lanes come out as outputs 0 1 4 5 | 2 3 6 7. */
                __m256i ev = _mm256_castps_si256(_mm256_shuffle_ps(f0, f1, 0x88));
                __m256i od = _mm256_castps_si256(_mm256_shuffle_ps(f0, f1, 0xDD));
                __m256i k = _mm256_permute4x64_epi64(_mm256_max_epi32(ev, od), 0xD8);
                k = _mm256_max_epi32(k, vinit);
                k = _mm256_xor_si256(k, _mm256_and_si256(_mm256_srai_epi32(k, 31), mag));
                _mm256_storeu_ps(o + q, _mm256_castsi256_ps(k));
            }
            for (; q < OW; q++) {
                int32_t a = max_key_f32(r0[2 * q]), b = max_key_f32(r0[2 * q + 1]);
                int32_t c = max_key_f32(r1[2 * q]), d = max_key_f32(r1[2 * q + 1]);
                o[q] = unkey_f32(MAX_OP(MAX_OP(MAX_OP(a, b), MAX_OP(c, d)), init));
            }
        }
    }
}

/* True for the pooling pool2_max_f32_avx2 computes: windows of 2 x 2 at stride 2 that all
 * lie inside the image. */
static bool is_pool2(const pool_job *j) {
    return j->kh == 2 && j->kw == 2 && j->sh == 2 && j->sw == 2 && j->ph == 0 && j->pw == 0 &&
           2 * j->OH <= j->H && 2 * j->OW <= j->W && kiln__cpu_avx2();
}

/* Runs the direct kernel when the call is one it covers; false otherwise. */
static bool window_pool(const kiln__attrs *attrs, kiln__region_kind kind, const kiln_tensor *x,
                        const kiln_tensor *init, kiln_tensor *out) {
    const kiln_window_params *p = &attrs->u.window;
    kiln_dtype dt = x->dtype;
    if (x->shape.rank != 4 || (dt != KILN_F32 && dt != KILN_F64)) return false;
    if (kind != KILN_REGION_MAXIMUM && kind != KILN_REGION_ADD) return false;
    if (p->window_dimensions.count != 4 || p->window_strides.count != 4 ||
        p->base_dilations.count != 4 || p->window_dilations.count != 4 ||
        p->padding_low.count != 4 || p->padding_high.count != 4)
        return false;
    for (int32_t d = 0; d < 4; d++)
        if (p->base_dilations.v[d] != 1 || p->window_dilations.v[d] != 1 ||
            p->padding_low.v[d] < 0 || p->padding_high.v[d] < 0 || p->window_strides.v[d] < 1)
            return false;
    /* The two pooled dimensions: 2, 3 (channels first) or 1, 2 (channels last); the others
     * must be untouched (window 1, stride 1, no padding). */
    bool last;
    if (p->window_dimensions.v[1] == 1 && p->window_strides.v[1] == 1 && p->padding_low.v[1] == 0 &&
        p->padding_high.v[1] == 0)
        last = false;
    else if (p->window_dimensions.v[3] == 1 && p->window_strides.v[3] == 1 &&
             p->padding_low.v[3] == 0 && p->padding_high.v[3] == 0)
        last = true;
    else
        return false;
    int32_t c = last ? 3 : 1, h = last ? 1 : 2, w = h + 1;
    if (p->window_dimensions.v[0] != 1 || p->window_strides.v[0] != 1 || p->padding_low.v[0] ||
        p->padding_high.v[0] || p->window_dimensions.v[c] != 1 || p->window_strides.v[c] != 1 ||
        p->padding_low.v[c] || p->padding_high.v[c])
        return false;
    const kiln_shape *is = &x->shape, *os = &out->shape;
    pool_job j = {
        .N = is->dims[0],
        .C = is->dims[c],
        .H = is->dims[h],
        .W = is->dims[w],
        .OH = os->dims[h],
        .OW = os->dims[w],
        .kh = p->window_dimensions.v[h],
        .kw = p->window_dimensions.v[w],
        .sh = p->window_strides.v[h],
        .sw = p->window_strides.v[w],
        .ph = p->padding_low.v[h],
        .pw = p->padding_low.v[w],
        .x = kiln__in(x),
        .out = kiln__out(out),
        .init = kiln__in(init),
    };
    if (out->numel == 0) return true;
    bool mx = kind == KILN_REGION_MAXIMUM, f32 = dt == KILN_F32;
    kiln__range_fn fn;
    int64_t items, per_item;
    if (!last) {
        fn = mx ? (f32 ? pool_nchw_max_f32 : pool_nchw_max_f64)
                : (f32 ? pool_nchw_add_f32 : pool_nchw_add_f64);
        if (mx && f32 && is_pool2(&j)) fn = pool2_max_f32_avx2;
        items = j.N * j.C;
        per_item = j.OH * j.OW * j.kh * j.kw;
    } else {
        fn = mx ? (f32 ? pool_nhwc_max_f32 : pool_nhwc_max_f64)
                : (f32 ? pool_nhwc_add_f32 : pool_nhwc_add_f64);
        items = j.N * j.OH;
        per_item = j.OW * j.C * j.kh * j.kw;
    }
    /* About 64k window elements per thread at least, so small pools stay on one thread. */
    int64_t grain = per_item >= 65536 ? 1 : 65536 / (per_item > 0 ? per_item : 1);
    kiln__parallel_for(items, grain, fn, &j);
    return true;
}

KILN__EVAL(REDUCE_WINDOW) {
    (void)n_results;
    const int n = n_operands / 2;
    const kiln_region *region = kiln__attrs_region(attrs, 0);
    kiln_status st =
        kiln__check_builtin_arity(cx, attrs->fn ? attrs->fn : "reduce_window", region, n);
    if (st != KILN_OK) return st;
    kiln__region_kind kind = kiln__region_kind_of(region);
    if (n == 1 && window_pool(attrs, kind, operands[0], operands[1], results[0])) return KILN_OK;
    if (n == 1 && kiln__fast_kind(kind, operands[0]->dtype))
        return window_fast(cx, attrs, kind, operands[0], operands[1], results[0]);
    return window_generic(cx, attrs, operands, n, results);
}

/* ---- select_and_scatter ---------------------------------------------------------------- */

/* select(a, b) for the builtin comparisons, on elements of one dtype. */
typedef bool (*select_fn)(kiln__region_kind kind, const void *a, const void *b);

#define SEL_ID(v) (v)
#define NAME select_u8
#define T uint8_t
#define LOAD SEL_ID
#include "backends/cpu/eval/reduce_window_select.inc"
#define NAME select_u16
#define T uint16_t
#define LOAD SEL_ID
#include "backends/cpu/eval/reduce_window_select.inc"
#define NAME select_u32
#define T uint32_t
#define LOAD SEL_ID
#include "backends/cpu/eval/reduce_window_select.inc"
#define NAME select_u64
#define T uint64_t
#define LOAD SEL_ID
#include "backends/cpu/eval/reduce_window_select.inc"
#define NAME select_i8
#define T int8_t
#define LOAD SEL_ID
#include "backends/cpu/eval/reduce_window_select.inc"
#define NAME select_i16
#define T int16_t
#define LOAD SEL_ID
#include "backends/cpu/eval/reduce_window_select.inc"
#define NAME select_i32
#define T int32_t
#define LOAD SEL_ID
#include "backends/cpu/eval/reduce_window_select.inc"
#define NAME select_i64
#define T int64_t
#define LOAD SEL_ID
#include "backends/cpu/eval/reduce_window_select.inc"
#define NAME select_f16
#define T uint16_t
#define LOAD kiln__f16_to_f32_inline
#include "backends/cpu/eval/reduce_window_select.inc"
#define NAME select_bf16
#define T uint16_t
#define LOAD kiln__bf16_to_f32_inline
#include "backends/cpu/eval/reduce_window_select.inc"
#define NAME select_f32
#define T float
#define LOAD SEL_ID
#include "backends/cpu/eval/reduce_window_select.inc"
#define NAME select_f64
#define T double
#define LOAD SEL_ID
#include "backends/cpu/eval/reduce_window_select.inc"
#undef SEL_ID

static select_fn select_for(kiln_dtype dtype) {
    switch (dtype) {
    case KILN_BOOL:
    case KILN_U8: return select_u8;
    case KILN_U16: return select_u16;
    case KILN_U32: return select_u32;
    case KILN_U64: return select_u64;
    case KILN_I8: return select_i8;
    case KILN_I16: return select_i16;
    case KILN_I32: return select_i32;
    case KILN_I64: return select_i64;
    case KILN_F16: return select_f16;
    case KILN_BF16: return select_bf16;
    case KILN_F32: return select_f32;
    case KILN_F64: return select_f64;
    default: return NULL;
    }
}

/* One element of dtype as adt (dtype itself, or f32 for f16/bf16). */
static void load_as(kiln_dtype dtype, kiln_dtype adt, const void *src, void *dst) {
    if (adt == dtype)
        memcpy(dst, src, kiln_dtype_size(dtype));
    else
        kiln__to_acc(dtype, src, dst, 1);
}

/* The gradient of max (or min) pooling with windows that do not overlap: rank-4 f32/f64
 * channels first or last, windows of kh x kw at strides kh, kw over the two spatial dimensions,
 * inside the image (no padding, no dilation), a builtin comparison selecting and add
 * scattering. Each result element then takes at most one source element, so the result is
 * init everywhere and init + source at each window's selected element: the general loop's
 * values, bit for bit (the same comparisons in the same order, the same one addition),
 * at a few nanoseconds a window instead of its index arithmetic per candidate. */
typedef struct scatter_pool_job {
    const void *x, *src, *init;
    void *out;
    int64_t H, W, OH, OW, kh, kw, C; /* C: channels last only */
} scatter_pool_job;

/* One kernel per dtype and comparison (reduce_window_scatter.inc); KEEP(u, v) is select(u, v)
 * as the general loop reads it. Channels last ([N, H, W, C], windows over H and W): per
 * output row n * OH + oh, the windows' C channels at a time, 64 per block, selected without
 * branches (the loops over channels vectorize). Each row writes its own kh input rows, the
 * last one of an image also the rows below its windows, so rows split across threads write
 * disjoint memory. */
#define KEEP_GE(u, v) ((u) >= (v))
#define KEEP_GT(u, v) ((u) > (v))
#define KEEP_LE(u, v) ((u) <= (v))
#define KEEP_LT(u, v) ((u) < (v))
#define T float
#define SEL int32_t
#define FILL nhwc_fill_f32
#define POOL(cmp) scatter_pool_##cmp##_f32
#define WINDOW(cmp) scatter_pool_##cmp##_f32_window
#define NHWC(cmp) scatter_nhwc_##cmp##_f32
#include "backends/cpu/eval/reduce_window_scatter.inc"
#define T double
#define SEL int64_t
#define FILL nhwc_fill_f64
#define POOL(cmp) scatter_pool_##cmp##_f64
#define WINDOW(cmp) scatter_pool_##cmp##_f64_window
#define NHWC(cmp) scatter_nhwc_##cmp##_f64
#include "backends/cpu/eval/reduce_window_scatter.inc"

/* 2 x 2 windows of f32 with AVX2, eight windows per step: the same comparisons in the same
 * order as the channels-first kernels (PRED is the ordered comparison, false with a NaN, as
 * C's), chosen with blends instead of branches (which the data mispredicts: 11 ns a window). */
AVX2_TARGET static inline __m256 deinterleave(__m256 lo, __m256 hi, int odd) {
    __m256 v = odd ? _mm256_shuffle_ps(lo, hi, 0xDD) : _mm256_shuffle_ps(lo, hi, 0x88);
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8));
}

AVX2_TARGET static inline void interleave_store(float *dst, __m256 e, __m256 o) {
    __m256 lo = _mm256_unpacklo_ps(e, o), hi = _mm256_unpackhi_ps(e, o);
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_storeu_ps(dst + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}


/* Channels last, f32, with AVX2: eight channels of a window at a time, the same comparisons
 * in the same order as the channels-last kernels above, chosen with blends
 * (reduce_window_scatter_avx2.inc, also the 2 x 2 kernels just described). */
#define PRED _CMP_GE_OQ
#define KEEP KEEP_GE
#define WINDOW scatter_pool_ge_f32_window
#define POOL2_NAME scatter_pool2_ge_f32
#define NHWC_NAME scatter_nhwc_ge_f32_avx2
#include "backends/cpu/eval/reduce_window_scatter_avx2.inc"
#define PRED _CMP_GT_OQ
#define KEEP KEEP_GT
#define WINDOW scatter_pool_gt_f32_window
#define POOL2_NAME scatter_pool2_gt_f32
#define NHWC_NAME scatter_nhwc_gt_f32_avx2
#include "backends/cpu/eval/reduce_window_scatter_avx2.inc"
#define PRED _CMP_LE_OQ
#define KEEP KEEP_LE
#define WINDOW scatter_pool_le_f32_window
#define POOL2_NAME scatter_pool2_le_f32
#define NHWC_NAME scatter_nhwc_le_f32_avx2
#include "backends/cpu/eval/reduce_window_scatter_avx2.inc"
#define PRED _CMP_LT_OQ
#define KEEP KEEP_LT
#define WINDOW scatter_pool_lt_f32_window
#define POOL2_NAME scatter_pool2_lt_f32
#define NHWC_NAME scatter_nhwc_lt_f32_avx2
#include "backends/cpu/eval/reduce_window_scatter_avx2.inc"
#undef KEEP_GE
#undef KEEP_GT
#undef KEEP_LE
#undef KEEP_LT

/* Runs the direct kernel when the call is one it covers; false otherwise. */
static bool scatter_pool(const kiln__attrs *attrs, kiln__region_kind sel, kiln__region_kind sc,
                         const kiln_tensor *operand, const kiln_tensor *source,
                         const kiln_tensor *init, kiln_tensor *result) {
    const kiln_window_params *p = &attrs->u.window;
    const kiln_dtype dt = operand->dtype;
    if (operand->shape.rank != 4 || (dt != KILN_F32 && dt != KILN_F64) || sc != KILN_REGION_ADD)
        return false;
    if (sel != KILN_REGION_GREATER_EQUAL && sel != KILN_REGION_GREATER &&
        sel != KILN_REGION_LESS_EQUAL && sel != KILN_REGION_LESS)
        return false;
    if (p->window_dimensions.count != 4 || p->window_strides.count != 4) return false;
    /* Pooled dimensions 2 and 3 (channels first) or 1 and 2 (channels last, when the
     * window leaves dimension 1 alone but not 3). */
    const bool last = p->window_dimensions.v[3] == 1 && p->window_dimensions.v[1] != 1;
    const int32_t ph = last ? 1 : 2, pw = ph + 1, pc = last ? 3 : 1;
    for (int32_t d = 0; d < 4; d++) {
        bool pooled = d == ph || d == pw;
        if ((p->padding_low.count == 4 && p->padding_low.v[d] != 0) ||
            (p->padding_high.count == 4 && p->padding_high.v[d] != 0) ||
            (p->base_dilations.count == 4 && p->base_dilations.v[d] != 1) ||
            (p->window_dilations.count == 4 && p->window_dilations.v[d] != 1) ||
            p->window_strides.v[d] != p->window_dimensions.v[d] || p->window_dimensions.v[d] < 1 ||
            (!pooled && p->window_dimensions.v[d] != 1))
            return false;
    }
    const kiln_shape *is = &operand->shape, *ss = &source->shape;
    scatter_pool_job j = {.x = kiln__in(operand), .src = kiln__in(source), .init = kiln__in(init),
                          .H = is->dims[ph], .W = is->dims[pw], .C = is->dims[pc],
                          .OH = ss->dims[ph], .OW = ss->dims[pw], .kh = p->window_dimensions.v[ph],
                          .kw = p->window_dimensions.v[pw]};
    if (j.OH * j.kh > j.H || j.OW * j.kw > j.W || ss->dims[0] != is->dims[0] ||
        ss->dims[pc] != is->dims[pc])
        return false;
    j.out = kiln__out(result);
    const bool f32 = dt == KILN_F32;
    kiln__range_fn fn;
    if (last) {
        if (j.OH == 0) return false; /* no row to write the image from */
        static const kiln__range_fn fns[3][4] = {
            {scatter_nhwc_ge_f64, scatter_nhwc_gt_f64, scatter_nhwc_le_f64, scatter_nhwc_lt_f64},
            {scatter_nhwc_ge_f32, scatter_nhwc_gt_f32, scatter_nhwc_le_f32, scatter_nhwc_lt_f32},
            {scatter_nhwc_ge_f32_avx2, scatter_nhwc_gt_f32_avx2, scatter_nhwc_le_f32_avx2,
             scatter_nhwc_lt_f32_avx2}};
        int which = sel == KILN_REGION_GREATER_EQUAL ? 0
                    : sel == KILN_REGION_GREATER     ? 1
                    : sel == KILN_REGION_LESS_EQUAL  ? 2
                                                     : 3;
        fn = fns[f32 ? 1 + kiln__cpu_avx2() : 0][which];
        int64_t rows = is->dims[0] * j.OH, per_row = j.kh * j.W * j.C;
        kiln__parallel_for(rows, per_row >= 65536 ? 1 : 65536 / (per_row > 0 ? per_row : 1), fn,
                           &j);
        return true;
    }
    int64_t planes = is->dims[0] * is->dims[1], per = j.H * j.W;
    switch (sel) {
    case KILN_REGION_GREATER_EQUAL: fn = f32 ? scatter_pool_ge_f32 : scatter_pool_ge_f64; break;
    case KILN_REGION_GREATER: fn = f32 ? scatter_pool_gt_f32 : scatter_pool_gt_f64; break;
    case KILN_REGION_LESS_EQUAL: fn = f32 ? scatter_pool_le_f32 : scatter_pool_le_f64; break;
    default: fn = f32 ? scatter_pool_lt_f32 : scatter_pool_lt_f64; break;
    }
    if (f32 && j.kh == 2 && j.kw == 2 && kiln__cpu_avx2()) {
        switch (sel) {
        case KILN_REGION_GREATER_EQUAL: fn = scatter_pool2_ge_f32; break;
        case KILN_REGION_GREATER: fn = scatter_pool2_gt_f32; break;
        case KILN_REGION_LESS_EQUAL: fn = scatter_pool2_le_f32; break;
        default: fn = scatter_pool2_lt_f32; break;
        }
    }
    kiln__parallel_for(planes, per >= 65536 ? 1 : 65536 / (per > 0 ? per : 1), fn, &j);
    return true;
}

KILN__EVAL(SELECT_AND_SCATTER) {
    (void)n_operands, (void)n_results;
    const char *fn = attrs->fn ? attrs->fn : "select_and_scatter";
    const kiln_tensor *operand = operands[0], *source = operands[1], *init = operands[2];
    kiln_tensor *result = results[0];
    const int64_t n_res = result->numel;
    if (n_res == 0) return KILN_OK;
    const kiln_dtype dtype = operand->dtype;
    const size_t es = kiln_dtype_size(dtype);
    const kiln_region *select = kiln__attrs_region(attrs, 0);
    const kiln_region *scatter = kiln__attrs_region(attrs, 1);
    const kiln__region_kind sel_kind = kiln__region_kind_of(select);
    const kiln__region_kind sc_kind = kiln__region_kind_of(scatter);
    const select_fn sel_fast =
        sel_kind == KILN_REGION_GREATER_EQUAL || sel_kind == KILN_REGION_GREATER ||
                sel_kind == KILN_REGION_LESS_EQUAL || sel_kind == KILN_REGION_LESS
            ? select_for(dtype)
            : NULL;
    const bool sc_fast = kiln__fast_kind(sc_kind, dtype) || sc_kind == KILN_REGION_REPLACE;
    if (scatter_pool(attrs, sel_kind, sc_kind, operand, source, init, result)) return KILN_OK;

    /* The result accumulates in the fast path's dtype (f32 for f16/bf16) when scatter is a
     * builtin, in place otherwise. */
    const kiln_dtype adt = sc_fast ? kiln__acc_dtype(dtype) : dtype;
    const size_t asz = kiln_dtype_size(adt);
    char *acc = kiln__out(result);
    void *acc_buf = NULL;
    const size_t acc_bytes = (size_t)n_res * asz;
    if (adt != dtype) {
        if (!(acc_buf = kiln__alloc(cx, acc_bytes, KILN_DATA_ALIGNMENT, fn)))
            return KILN_RESOURCE_EXHAUSTED;
        acc = acc_buf;
    }
    _Alignas(8) unsigned char init_acc[8];
    load_as(dtype, adt, kiln__in(init), init_acc);
    kiln__fill_elements(acc, init_acc, asz, n_res);

    kiln_status st = KILN_OK;
    kiln__scalar_region sel_sr = {0}, sc_sr = {0};
    const kiln_dtype pair[2] = {dtype, dtype}, pred = KILN_BOOL;
    if (!sel_fast)
        st = kiln__scalar_region_init(&sel_sr, cx, select, fn, "select region", pair, 2, &pred, 1);
    if (st == KILN_OK && !sc_fast)
        st = kiln__scalar_region_init(&sc_sr, cx, scatter, fn, "scatter region", pair, 2, pair, 1);

    geometry g;
    geometry_init(&g, &attrs->u.window, &operand->shape, &source->shape);
    const char *op = kiln__in(operand), *src = kiln__in(source);
    const int64_t n_src = source->numel;
    int64_t s_idx[KILN_MAX_RANK] = {0};
    for (int64_t s = 0; s < n_src && st == KILN_OK; s++, next_index(s_idx, g.out, g.rank)) {
        int64_t selected = -1;
        int64_t w[KILN_MAX_RANK] = {0};
        do {
            int64_t off = window_offset(&g, s_idx, w);
            if (off < 0) continue;
            if (selected < 0) {
                selected = off;
                continue;
            }
            const void *a = op + (size_t)selected * es, *b = op + (size_t)off * es;
            bool keep;
            if (sel_fast) {
                keep = sel_fast(sel_kind, a, b);
            } else {
                uint8_t flag = 0;
                void *dst[1] = {&flag};
                memcpy(kiln__scalar_region_arg(&sel_sr, 0), a, es);
                memcpy(kiln__scalar_region_arg(&sel_sr, 1), b, es);
                if ((st = kiln__scalar_region_call(&sel_sr, dst)) != KILN_OK) break;
                keep = flag != 0;
            }
            if (!keep) selected = off;
        } while (next_index(w, g.win, g.rank));
        if (st != KILN_OK || selected < 0) continue;
        char *target = acc + (size_t)selected * asz;
        const char *value = src + (size_t)s * es;
        if (sc_fast) {
            _Alignas(8) unsigned char v[8];
            load_as(dtype, adt, value, v);
            if (sc_kind == KILN_REGION_REPLACE)
                memcpy(target, v, asz);
            else
                kiln__combine(sc_kind, dtype, target, v, 1, 0);
        } else {
            void *dst[1] = {target};
            memcpy(kiln__scalar_region_arg(&sc_sr, 0), target, es);
            memcpy(kiln__scalar_region_arg(&sc_sr, 1), value, es);
            st = kiln__scalar_region_call(&sc_sr, dst);
        }
    }
    kiln__scalar_region_fini(&sel_sr);
    kiln__scalar_region_fini(&sc_sr);
    if (acc_buf) {
        if (st == KILN_OK) kiln__from_acc(dtype, acc, kiln__out(result), n_res);
        kiln__free(cx, acc_buf, acc_bytes);
    }
    return st;
}
