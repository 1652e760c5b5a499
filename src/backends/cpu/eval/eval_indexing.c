/* SPDX-License-Identifier: Apache-2.0 */
/* Evaluator kernels for gather and scatter.
 *
 * Both split an index space into "batch" (scatter) points, which the index tensor
 * addresses, and a window, an affine walk through the operand. Each point's operand
 * offset is computed once; the window is walked with an odometer whose innermost dims are
 * merged into one contiguous run when the operand's strides allow (memcpy for gather, a
 * typed loop per region kind for scatter). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backends/cpu/eval/eval.h"
#include "base/alloc.h"
#include "core/element.h"
#include "core/tensor_internal.h"
#include "kiln/dtype.h"

/* ---- shared helpers ----------------------------------------------------------------- */

/* Element i of an integer index tensor, as int64 (u64 beyond INT64_MAX saturates, which
 * every consumer treats as "far out of range"). */
static int64_t load_index(const void *data, kiln_dtype dtype, int64_t i) {
    switch (dtype) {
    case KILN_I8: return ((const int8_t *)data)[i];
    case KILN_I16: return ((const int16_t *)data)[i];
    case KILN_I32: return ((const int32_t *)data)[i];
    case KILN_I64: return ((const int64_t *)data)[i];
    case KILN_U8: return ((const uint8_t *)data)[i];
    case KILN_U16: return ((const uint16_t *)data)[i];
    case KILN_U32: return ((const uint32_t *)data)[i];
    case KILN_U64: {
        uint64_t v = ((const uint64_t *)data)[i];
        return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
    }
    default: return 0; /* inference admits integer types only */
    }
}

static void row_major_strides(const kiln_shape *s, int64_t *strides) {
    int64_t st = 1;
    for (int32_t d = s->rank - 1; d >= 0; d--) {
        strides[d] = st;
        st *= s->dims[d];
    }
}

static bool dims_have(const kiln_dims *d, int64_t v) {
    for (int32_t i = 0; i < d->count; i++)
        if (d->v[i] == v) return true;
    return false;
}

/* Copies n bytes of elements of size es; n == es is the common single-element case. */
static inline void copy_elements(unsigned char *dst, const unsigned char *src, size_t n,
                                 size_t es) {
    if (n == es) {
        switch (es) {
        case 1: *dst = *src; return;
        case 2: memcpy(dst, src, 2); return;
        case 4: memcpy(dst, src, 4); return;
        case 8: memcpy(dst, src, 8); return;
        default: break;
        }
    }
    memcpy(dst, src, n);
}

/* The operand-side description of gather's and scatter's index computation. */
typedef struct index_plan {
    const kiln_tensor *indices;
    const void *idata;
    kiln_dtype idtype;
    int64_t istrides[KILN_MAX_RANK]; /* of the index tensor */
    int32_t n_bdims;                 /* batch dims: the index tensor's dims but ivd */
    int32_t bdims[KILN_MAX_RANK];
    int64_t bext[KILN_MAX_RANK];
    int64_t ivd;
    const kiln_dims *index_map;       /* start_index_map / scatter_dims_to_operand_dims */
    const kiln_dims *operand_batch;   /* operand/input batching dims */
    const kiln_dims *indices_batch;   /* their index tensor dims */
    int32_t batch_pos[KILN_MAX_RANK]; /* indices_batch[i]'s position among bdims */
} index_plan;

static void plan_init(index_plan *p, const kiln_tensor *indices, int64_t ivd,
                      const kiln_dims *index_map, const kiln_dims *operand_batch,
                      const kiln_dims *indices_batch) {
    const kiln_shape *is = kiln_tensor_shape(indices);
    p->indices = indices;
    p->idata = kiln__in(indices);
    p->idtype = kiln_tensor_dtype(indices);
    row_major_strides(is, p->istrides);
    p->n_bdims = 0;
    for (int32_t d = 0; d < is->rank; d++) {
        if (d == ivd) continue;
        p->bdims[p->n_bdims] = d;
        p->bext[p->n_bdims++] = is->dims[d];
    }
    p->ivd = ivd;
    p->index_map = index_map;
    p->operand_batch = operand_batch;
    p->indices_batch = indices_batch;
    for (int32_t i = 0; i < indices_batch->count; i++)
        for (int32_t k = 0; k < p->n_bdims; k++)
            if (p->bdims[k] == indices_batch->v[i]) p->batch_pos[i] = k;
}

/* The full start index (start index in index_map dims plus batching coordinates; 0
 * elsewhere) of the batch point at coordinates bcoord, into start[0..rank-1]. */
static void plan_start(const index_plan *p, const int64_t *bcoord, int32_t rank, int64_t *start) {
    int64_t off = 0;
    for (int32_t k = 0; k < p->n_bdims; k++)
        off += bcoord[k] * p->istrides[p->bdims[k]];
    for (int32_t d = 0; d < rank; d++)
        start[d] = 0;
    int32_t is_rank = kiln_tensor_rank(p->indices);
    int64_t vstride = p->ivd < is_rank ? p->istrides[p->ivd] : 0;
    for (int32_t k = 0; k < p->index_map->count; k++)
        start[p->index_map->v[k]] = load_index(p->idata, p->idtype, off + k * vstride);
    for (int32_t i = 0; i < p->operand_batch->count; i++)
        start[p->operand_batch->v[i]] = bcoord[p->batch_pos[i]];
}

/* Advances the odometer coord[0..n-1] over ext; false once it wraps around. */
static inline bool odometer_next(int64_t *coord, const int64_t *ext, int32_t n) {
    for (int32_t k = n - 1; k >= 0; k--) {
        if (++coord[k] < ext[k]) return true;
        coord[k] = 0;
    }
    return false;
}

/* Splits the dims [0, rank) of a gather result or of scatter updates: along[d] for those
 * in `window` (gather's offset dims, scatter's update window dims), each walking operand
 * dim operand_dim[d] (in order, skipping the dims in skip_a and skip_b: collapsed or
 * inserted, and batching); the others step the index point, pstride[d] points each (the
 * points row-major over the plan's bext). */
static void split_dims(int32_t rank, const kiln_dims *window, const kiln_dims *skip_a,
                       const kiln_dims *skip_b, const index_plan *plan, bool *along,
                       int64_t *pstride, int32_t *operand_dim) {
    int64_t ps = 1;
    for (int32_t d = rank - 1, k = plan->n_bdims - 1; d >= 0; d--) {
        along[d] = dims_have(window, d);
        if (!along[d]) {
            pstride[d] = ps;
            ps *= plan->bext[k--];
        }
    }
    for (int32_t d = 0, od = 0; d < rank; d++) {
        if (!along[d]) continue;
        while (dims_have(skip_a, od) || dims_have(skip_b, od))
            od++;
        operand_dim[d] = od++;
    }
}

/* The walks of gather's result and scatter's updates: dims with along[d] (gather's offset
 * dims, scatter's window dims) move through the operand by step[d] elements; the others
 * move to another index point, by pstep[d] points. */

/* How many innermost dims of dims[0..rank) form one contiguous run of the operand (extent
 * 1, or along with the step that continues the run): sets *n_outer to the dims left
 * outside and returns the run's length. */
static int64_t contiguous_run(const int64_t *dims, int32_t rank, const bool *along,
                              const int64_t *step, int32_t *n_outer) {
    int64_t run = 1;
    int32_t n = rank;
    while (n > 0 && (dims[n - 1] == 1 || (along[n - 1] && step[n - 1] == run)))
        run *= dims[--n];
    *n_outer = n;
    return run;
}

/* Advances coord over dims[0..n) in row-major order, moving *off (along) or *point (the
 * others) with it; false after the last. */
static bool walk_next(int64_t *coord, const int64_t *dims, int32_t n, const bool *along,
                      const int64_t *step, const int64_t *pstep, int64_t *off, int64_t *point) {
    for (int32_t d = n - 1; d >= 0; d--) {
        int64_t *at = along[d] ? off : point;
        int64_t delta = along[d] ? step[d] : pstep[d];
        if (++coord[d] < dims[d]) {
            *at += delta;
            return true;
        }
        *at -= delta * (dims[d] - 1);
        coord[d] = 0;
    }
    return false;
}

/* ---- gather ------------------------------------------------------------------------- */

KILN__EVAL(GATHER) {
    (void)n_operands, (void)n_results;
    const kiln_gather_params *gp = &attrs->u.gather;
    const kiln_tensor *operand = operands[0];
    kiln_tensor *result = results[0];
    if (kiln_tensor_numel(result) == 0) return KILN_OK;
    const kiln_shape *os = kiln_tensor_shape(operand), *rs = kiln_tensor_shape(result);
    size_t es = kiln_dtype_size(kiln_tensor_dtype(operand));
    int32_t r = os->rank;
    int64_t ostride[KILN_MAX_RANK];
    row_major_strides(os, ostride);

    index_plan plan;
    plan_init(&plan, operands[1], gp->index_vector_dim, &gp->start_index_map,
              &gp->operand_batching_dims, &gp->start_indices_batching_dims);
    int64_t n_points = 1;
    for (int32_t k = 0; k < plan.n_bdims; k++)
        n_points *= plan.bext[k];

    /* Each batch point's operand offset: clamped start plus batching coordinates. */
    const char *fn = attrs->fn ? attrs->fn : "gather";
    if ((uint64_t)n_points > SIZE_MAX / sizeof(int64_t))
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: too many indices", fn);
    int64_t *base = kiln__alloc(cx, (size_t)n_points * sizeof *base, _Alignof(int64_t), fn);
    if (!base) return KILN_RESOURCE_EXHAUSTED;
    int64_t bcoord[KILN_MAX_RANK] = {0};
    for (int64_t b = 0; b < n_points; b++) {
        int64_t start[KILN_MAX_RANK];
        plan_start(&plan, bcoord, r, start);
        int64_t off = 0;
        for (int32_t k = 0; k < gp->start_index_map.count; k++) {
            int64_t d = gp->start_index_map.v[k];
            int64_t hi = os->dims[d] - gp->slice_sizes.v[d], v = start[d];
            start[d] = v < 0 ? 0 : v > hi ? hi : v;
        }
        for (int32_t d = 0; d < r; d++)
            off += start[d] * ostride[d];
        base[b] = off;
        odometer_next(bcoord, plan.bext, plan.n_bdims);
    }

    /* The result's dims: batch dims step the point, offset dims step the operand. */
    int32_t rr = rs->rank;
    int64_t bstride[KILN_MAX_RANK], step[KILN_MAX_RANK];
    bool is_offset[KILN_MAX_RANK];
    int32_t od[KILN_MAX_RANK];
    split_dims(rr, &gp->offset_dims, &gp->collapsed_slice_dims, &gp->operand_batching_dims, &plan,
               is_offset, bstride, od);
    for (int32_t d = 0; d < rr; d++)
        if (is_offset[d]) step[d] = ostride[od[d]];
    /* Merge the innermost result dims into one contiguous run of the operand. */
    int32_t n_outer;
    int64_t run = contiguous_run(rs->dims, rr, is_offset, step, &n_outer);
    const unsigned char *src = kiln__in(operand);
    unsigned char *dst = kiln__out(result);
    size_t run_bytes = (size_t)run * es;
    int64_t coord[KILN_MAX_RANK] = {0};
    int64_t b = 0, off = 0;
    for (;;) {
        copy_elements(dst, src + (size_t)(base[b] + off) * es, run_bytes, es);
        dst += run_bytes;
        if (!walk_next(coord, rs->dims, n_outer, is_offset, step, bstride, &off, &b)) break;
    }
    kiln__free(cx, base, (size_t)n_points * sizeof *base);
    return KILN_OK;
}

/* ---- scatter: the combining kernels ------------------------------------------------- */

/* dst[k] = op(dst[k], src[k]) for k < n. */
typedef void (*combine_fn)(void *dst, const void *src, int64_t n);

#define T int8_t
#define U uint32_t
#define FN(name) name##_i8
#include "backends/cpu/eval/combine_int.inc"

#define T int16_t
#define U uint32_t
#define FN(name) name##_i16
#include "backends/cpu/eval/combine_int.inc"

#define T int32_t
#define U uint32_t
#define FN(name) name##_i32
#include "backends/cpu/eval/combine_int.inc"

#define T int64_t
#define U uint64_t
#define FN(name) name##_i64
#include "backends/cpu/eval/combine_int.inc"

#define T uint8_t
#define U uint32_t
#define FN(name) name##_u8
#include "backends/cpu/eval/combine_int.inc"

#define T uint16_t
#define U uint32_t
#define FN(name) name##_u16
#include "backends/cpu/eval/combine_int.inc"

#define T uint32_t
#define U uint32_t
#define FN(name) name##_u32
#include "backends/cpu/eval/combine_int.inc"

#define T uint64_t
#define U uint64_t
#define FN(name) name##_u64
#include "backends/cpu/eval/combine_int.inc"

#define T float
#define FN(name) name##_f32
#include "backends/cpu/eval/combine_float.inc"

#define T double
#define FN(name) name##_f64
#include "backends/cpu/eval/combine_float.inc"

#define TO_F32 kiln_f16_to_f32
#define FROM_F32 kiln_f32_to_f16
#define FN(name) name##_f16
#include "backends/cpu/eval/combine_half.inc"

#define TO_F32 kiln_bf16_to_f32
#define FROM_F32 kiln_f32_to_bf16
#define FN(name) name##_bf16
#include "backends/cpu/eval/combine_half.inc"

/* The typed kernel for a builtin region on a dtype; NULL when there is none (the region is
 * then called back, which also reports a region that does not apply to the dtype). */
static combine_fn combine_for(kiln__region_kind kind, kiln_dtype dtype) {
    switch (dtype) {
    case KILN_BOOL: /* add and maximum are or; multiply and minimum are and */
        switch (kind) {
        case KILN_REGION_ADD:
        case KILN_REGION_MAXIMUM:
        case KILN_REGION_OR: return or_u8;
        case KILN_REGION_MULTIPLY:
        case KILN_REGION_MINIMUM:
        case KILN_REGION_AND: return and_u8;
        default: return NULL;
        }
    case KILN_I8: return combine_for_i8(kind);
    case KILN_I16: return combine_for_i16(kind);
    case KILN_I32: return combine_for_i32(kind);
    case KILN_I64: return combine_for_i64(kind);
    case KILN_U8: return combine_for_u8(kind);
    case KILN_U16: return combine_for_u16(kind);
    case KILN_U32: return combine_for_u32(kind);
    case KILN_U64: return combine_for_u64(kind);
    case KILN_F16: return combine_for_f16(kind);
    case KILN_BF16: return combine_for_bf16(kind);
    case KILN_F32: return combine_for_f32(kind);
    case KILN_F64: return combine_for_f64(kind);
    default: return NULL;
    }
}

/* ---- scatter: the walk -------------------------------------------------------------- */

typedef struct scatter_state {
    kiln_ctx *cx;
    const char *fn;
    const char *what; /* "<fn>: region", for region errors */
    int n;
    kiln_tensor *const *updates;
    kiln_tensor **results;
    /* fast path */
    combine_fn combine;
    bool replace;
    /* custom region */
    const kiln_region *region;
    kiln_tensor **args;   /* 2n */
    kiln_tensor **values; /* n */
} scatter_state;

/* Combines count contiguous update elements (from update offset uoff) into the results
 * (from result offset roff). */
static kiln_status scatter_segment(scatter_state *st, int64_t roff, int64_t uoff, int64_t count) {
    if (st->combine || st->replace) {
        size_t es = kiln_dtype_size(kiln_tensor_dtype(st->results[0]));
        unsigned char *dst = (unsigned char *)kiln__out(st->results[0]) + (size_t)roff * es;
        const unsigned char *src =
            (const unsigned char *)kiln__in(st->updates[0]) + (size_t)uoff * es;
        if (st->replace)
            copy_elements(dst, src, (size_t)count * es, es);
        else
            st->combine(dst, src, count);
        return KILN_OK;
    }
    int n = st->n;
    for (int64_t k = 0; k < count; k++) {
        kiln_status s = KILN_OK;
        for (int i = 0; i < 2 * n; i++)
            st->args[i] = NULL;
        for (int i = 0; i < 2 * n && s == KILN_OK; i++) {
            kiln_tensor *from = i < n ? st->results[i] : st->updates[i - n];
            kiln_dtype dt = kiln_tensor_dtype(from);
            size_t es = kiln_dtype_size(dt);
            kiln_tensor *a = kiln__tensor_new(st->cx, st->fn, dt, KILN_SHAPE_SCALAR);
            if (!a) {
                s = KILN_RESOURCE_EXHAUSTED;
                break;
            }
            int64_t at = (i < n ? roff : uoff) + k;
            memcpy(kiln__tensor_mutable_data(a),
                   (const unsigned char *)kiln_tensor_data(from) + (size_t)at * es, es);
            st->args[i] = a;
        }
        if (s == KILN_OK)
            s = kiln__region_call(st->cx, st->region, st->what, st->args, 2 * n, st->values, n);
        for (int i = 0; i < 2 * n; i++)
            kiln_tensor_release(st->args[i]);
        if (s != KILN_OK) return s;
        for (int i = 0; i < n && s == KILN_OK; i++) {
            kiln_tensor *v = st->values[i];
            kiln_dtype want = kiln_tensor_dtype(st->results[i]);
            if (kiln_tensor_dtype(v) != want || kiln_tensor_rank(v) != 0) {
                char have[KILN_MAX_RANK * 21 + 3];
                kiln_shape_format(kiln_tensor_shape(v), have, sizeof have);
                s = kiln_ctx_set_error(st->cx, KILN_INVALID_ARGUMENT,
                                       "%s: region result %d is %s%s; expected %s[]", st->fn, i + 1,
                                       kiln_dtype_name(kiln_tensor_dtype(v)), have,
                                       kiln_dtype_name(want));
                break;
            }
            size_t es = kiln_dtype_size(want);
            memcpy((unsigned char *)kiln__out(st->results[i]) + (size_t)(roff + k) * es,
                   kiln_tensor_data(v), es);
        }
        for (int i = 0; i < n; i++) {
            kiln_tensor_release(st->values[i]);
            st->values[i] = NULL;
        }
        if (s != KILN_OK) return s;
    }
    return KILN_OK;
}

KILN__EVAL(SCATTER) {
    (void)n_results;
    const char *fn = attrs->fn ? attrs->fn : "scatter";
    const kiln_scatter_params *sp = &attrs->u.scatter;
    int n = (n_operands - 1) / 2;
    kiln_tensor *const *inputs = operands, *const *updates = operands + n + 1;
    const kiln_region *region = kiln__attrs_region(attrs, 0);
    for (int i = 0; i < n; i++) {
        size_t nb = kiln_tensor_nbytes(inputs[i]);
        if (nb) memcpy(kiln__out(results[i]), kiln__in(inputs[i]), nb);
    }
    if (kiln_tensor_numel(updates[0]) == 0 || kiln_tensor_numel(results[0]) == 0) return KILN_OK;
    kiln__region_kind kind = kiln__region_kind_of(region);
    if (kind != KILN_REGION_CUSTOM && n > 1)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: a builtin region combines one input; %d inputs need a "
                                  "custom region",
                                  fn, n);

    const kiln_shape *is = kiln_tensor_shape(inputs[0]), *us = kiln_tensor_shape(updates[0]);
    int32_t r = is->rank, ur = us->rank;
    int64_t istride[KILN_MAX_RANK];
    row_major_strides(is, istride);
    index_plan plan;
    plan_init(&plan, operands[n], sp->index_vector_dim, &sp->scatter_dims_to_operand_dims,
              &sp->input_batching_dims, &sp->scatter_indices_batching_dims);

    /* The updates' dims: scatter dims step the point, window dims step the result. */
    bool is_window[KILN_MAX_RANK];
    int32_t maps[KILN_MAX_RANK]; /* window dim -> input dim */
    int64_t wext[KILN_MAX_RANK]; /* window extent per input dim (1 if inserted/batching) */
    int64_t pstride[KILN_MAX_RANK];
    for (int32_t d = 0; d < r; d++)
        wext[d] = 1;
    split_dims(ur, &sp->update_window_dims, &sp->inserted_window_dims, &sp->input_batching_dims,
               &plan, is_window, pstride, maps);
    for (int32_t d = 0; d < ur; d++)
        if (is_window[d]) wext[maps[d]] = us->dims[d];
    int64_t n_points = 1;
    for (int32_t k = 0; k < plan.n_bdims; k++)
        n_points *= plan.bext[k];

    /* Per point: the result offset of its window origin, and whether the window is wholly
     * in bounds (1), wholly out (0) or straddles the edge (2: checked per element, as the
     * spec checks each element's full index). */
    size_t bytes = (size_t)n_points * (sizeof(int64_t) + 1);
    if ((uint64_t)n_points > SIZE_MAX / 16)
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: too many indices", fn);
    int64_t *base = kiln__alloc(cx, bytes, _Alignof(int64_t), fn);
    if (!base) return KILN_RESOURCE_EXHAUSTED;
    unsigned char *where = (unsigned char *)(base + n_points);
    {
        int64_t bcoord[KILN_MAX_RANK] = {0};
        for (int64_t p = 0; p < n_points; p++) {
            int64_t start[KILN_MAX_RANK];
            plan_start(&plan, bcoord, r, start);
            bool all_in = true, all_out = false;
            int64_t off = 0;
            for (int32_t d = 0; d < r; d++) {
                int64_t s = start[d], dim = is->dims[d], w = wext[d];
                if (s < 0 || s > dim - w) all_in = false;
                if (s >= dim || s <= -w) all_out = true;
                if (all_in) off += s * istride[d];
            }
            base[p] = all_in ? off : 0;
            where[p] = all_out ? 0 : all_in ? 1 : 2;
            odometer_next(bcoord, plan.bext, plan.n_bdims);
        }
    }

    /* Merge the innermost update dims into one contiguous run of the result. */
    int64_t wstep[KILN_MAX_RANK]; /* a window dim's step through the result */
    for (int32_t d = 0; d < ur; d++)
        wstep[d] = is_window[d] ? istride[maps[d]] : 0;
    int32_t n_outer;
    int64_t run = contiguous_run(us->dims, ur, is_window, wstep, &n_outer);

    char what[96];
    snprintf(what, sizeof what, "%s: region", fn);
    scatter_state st = {.cx = cx,
                        .fn = fn,
                        .what = what,
                        .n = n,
                        .updates = updates,
                        .results = results,
                        .region = region};
    kiln_tensor *fixed[3 * 4];
    kiln_tensor **scratch = fixed;
    size_t scratch_bytes = (size_t)(3 * n) * sizeof *scratch;
    if (kind == KILN_REGION_REPLACE)
        st.replace = true;
    else if (kind != KILN_REGION_CUSTOM)
        st.combine = combine_for(kind, kiln_tensor_dtype(inputs[0]));
    kiln_status s = KILN_OK;
    if (!st.replace && !st.combine) {
        if (3 * n > (int)(sizeof fixed / sizeof fixed[0])) {
            scratch = kiln__alloc(cx, scratch_bytes, _Alignof(kiln_tensor *), fn);
            if (!scratch) s = KILN_RESOURCE_EXHAUSTED;
        }
        if (scratch) {
            st.args = scratch;
            st.values = scratch + 2 * n;
            for (int i = 0; i < n; i++)
                st.values[i] = NULL;
        }
    }

    int64_t coord[KILN_MAX_RANK] = {0};
    int64_t p = 0, off = 0, uoff = 0;
    while (s == KILN_OK) {
        if (where[p] == 1) {
            s = scatter_segment(&st, base[p] + off, uoff, run);
        } else if (where[p] == 2) {
            /* Rebuild this point's start, then check each element of the run. */
            int64_t bcoord[KILN_MAX_RANK], start[KILN_MAX_RANK], rest = p;
            for (int32_t k = plan.n_bdims - 1; k >= 0; k--) {
                bcoord[k] = rest % plan.bext[k];
                rest /= plan.bext[k];
            }
            plan_start(&plan, bcoord, r, start);
            int64_t widx[KILN_MAX_RANK] = {0};
            for (int32_t d = 0; d < n_outer; d++)
                if (is_window[d]) widx[maps[d]] = coord[d];
            for (int64_t k = 0; k < run && s == KILN_OK; k++) {
                int64_t q = k;
                for (int32_t d = ur - 1; d >= n_outer; d--) {
                    if (is_window[d]) widx[maps[d]] = q % us->dims[d];
                    q /= us->dims[d];
                }
                int64_t at = 0;
                bool in = true;
                for (int32_t d = 0; d < r && in; d++) {
                    int64_t s0 = start[d], w = widx[d];
                    if (s0 < -w || s0 >= is->dims[d] - w)
                        in = false;
                    else
                        at += (s0 + w) * istride[d];
                }
                if (in) s = scatter_segment(&st, at, uoff + k, 1);
            }
        }
        uoff += run;
        if (!walk_next(coord, us->dims, n_outer, is_window, wstep, pstride, &off, &p)) break;
    }
    if (scratch && scratch != fixed) kiln__free(cx, scratch, scratch_bytes);
    kiln__free(cx, base, bytes);
    return s;
}
