/* SPDX-License-Identifier: Apache-2.0 */
/* Builders for the indexing ops (gather, scatter, sort) and the numpy conveniences built
 * on them (take, one_hot). */
#include <stdio.h>

#include "backend/region.h"
#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "core/element.h"
#include "frontend/op_run.h"

kiln_tensor *kiln_gather(kiln_ctx *cx, kiln_tensor *operand, kiln_tensor *indices,
                         const kiln_gather_params *params) {
    static const char fn[] = "kiln_gather";
    if (!cx) return NULL;
    if (!params) return kiln__null_argument_ptr(cx, fn, "params");
    kiln__attrs a = {.fn = fn};
    a.u.gather = *params;
    kiln_tensor *operands[2] = {operand, indices};
    return kiln__op_run1(cx, KILN_OP_GATHER, &a, operands, 2);
}

/* The operand list [inputs..., indices, updates...] of a variadic op, in `fixed` when it
 * fits. */
#define FIXED_OPERANDS 9

static void clear_out(kiln_tensor **out, int32_t n) {
    if (out)
        for (int32_t i = 0; i < n; i++)
            out[i] = NULL;
}

/* The checks scatter and sort begin with: a context (else INVALID_ARGUMENT), out, n inputs
 * (1 to 1024), and inputs; out is cleared once it is known to hold n. */
static kiln_status check_inputs_out(kiln_ctx *cx, const char *fn, kiln_tensor *const *inputs,
                                    int32_t n, kiln_tensor **out) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out) return kiln__null_argument(cx, fn, "out");
    if (n < 1 || n > 1024) {
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: n is %d; expected 1 to 1024", fn,
                                  (int)n);
    }
    clear_out(out, n);
    if (!inputs) return kiln__null_argument(cx, fn, "inputs");
    return KILN_OK;
}

kiln_status kiln_scatter(kiln_ctx *cx, kiln_tensor *const *inputs, int32_t n, kiln_tensor *indices,
                         kiln_tensor *const *updates, const kiln_scatter_params *params,
                         const kiln_region *region, kiln_tensor **out) {
    static const char fn[] = "kiln_scatter";
    kiln_status s = check_inputs_out(cx, fn, inputs, n, out);
    if (s != KILN_OK) return s;
    if (!updates) return kiln__null_argument(cx, fn, "updates");
    if (!params) return kiln__null_argument(cx, fn, "params");
    if (!region) return kiln__null_argument(cx, fn, "region");
    if (n > 1 && kiln__region_kind_of(region) != KILN_REGION_CUSTOM)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: a builtin region combines one input; %d inputs need a "
                                  "custom region",
                                  fn, (int)n);
    int count = 2 * n + 1;
    kiln_tensor *fixed[FIXED_OPERANDS], **operands = fixed;
    size_t bytes = (size_t)count * sizeof *operands;
    if (count > FIXED_OPERANDS && !(operands = kiln__alloc(cx, bytes, _Alignof(kiln_tensor *), fn)))
        return KILN_RESOURCE_EXHAUSTED;
    for (int32_t i = 0; i < n; i++) {
        operands[i] = inputs[i];
        operands[n + 1 + i] = updates[i];
    }
    operands[n] = indices;
    kiln__attrs a = {.fn = fn, .n_regions = 1, .n_results = n};
    a.u.scatter = *params;
    a.region[0] = region;
    s = kiln__op_run(cx, KILN_OP_SCATTER, &a, operands, count, out, n);
    if (operands != fixed) kiln__free(cx, operands, bytes);
    return s;
}

kiln_status kiln_sort(kiln_ctx *cx, kiln_tensor *const *inputs, int32_t n, int64_t dim, bool stable,
                      const kiln_region *comparator, kiln_tensor **out) {
    static const char fn[] = "kiln_sort";
    kiln_status s = check_inputs_out(cx, fn, inputs, n, out);
    if (s != KILN_OK) return s;
    if (!comparator) return kiln__null_argument(cx, fn, "comparator");
    kiln__attrs a = {.fn = fn, .n_regions = 1, .n_results = n};
    a.u.sort.dimension = dim;
    a.u.sort.stable = stable;
    a.region[0] = comparator;
    return kiln__op_run(cx, KILN_OP_SORT, &a, inputs, n, out, n);
}

/* ---- numpy conveniences --------------------------------------------------------------- */

/* kiln_take after its checks, axis in [0, rank). */
static kiln_tensor *take_in_scope(kiln_ctx *cx, const char *fn, kiln_tensor *x,
                                  kiln_tensor *indices, int64_t axis) {
    int32_t r = kiln_tensor_rank(x), q = kiln_tensor_rank(indices);
    kiln_dtype it = kiln_tensor_dtype(indices);
    if (kiln_tensor_dim(x, (int32_t)axis) == 0) {
        /* Nothing to gather from (a gather's slice of 1 would not fit): empty indices give
         * an empty result, others have no element to take, as numpy says. */
        if (kiln_tensor_numel(indices) != 0) {
            kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "%s: axis %lld of x has size 0; there is nothing to take", fn,
                               (long long)axis);
            return NULL;
        }
        kiln_shape out = {.rank = r + q - 1};
        for (int32_t d = 0; d < out.rank; d++)
            out.dims[d] = d < axis            ? kiln_tensor_dim(x, d)
                          : d < axis + q      ? kiln_tensor_dim(indices, (int32_t)(d - axis))
                                              : kiln_tensor_dim(x, (int32_t)(d - q + 1));
        return kiln_zeros(cx, kiln_tensor_dtype(x), out);
    }
    /* Negative indices count from the end (numpy's convention): i + dim where i < 0,
     * computed in i64 when dim does not fit the indices' dtype. */
    kiln_tensor *idx = indices;
    if (kiln_dtype_is_signed(it)) {
        int64_t size = kiln_tensor_dim(x, (int32_t)axis);
        if (!kiln__element_fits_int(it, size)) {
            idx = kiln_convert(cx, indices, KILN_I64);
            it = KILN_I64;
        }
        kiln_tensor *zero = kiln_scalar(cx, 0, it);
        kiln_tensor *dim = kiln_full_int(cx, it, KILN_SHAPE_SCALAR, size);
        kiln_tensor *neg = kiln_compare(cx, idx, zero, KILN_CMP_LT, KILN_CMP_DEFAULT);
        idx = kiln_select(cx, neg, kiln_add(cx, idx, dim), idx);
        if (!idx) return NULL;
    }
    kiln_gather_params p = {0};
    p.index_vector_dim = q;
    p.start_index_map = (kiln_dims){.count = 1, .v = {axis}};
    p.collapsed_slice_dims = (kiln_dims){.count = 1, .v = {axis}};
    p.slice_sizes.count = r;
    for (int32_t d = 0; d < r; d++)
        p.slice_sizes.v[d] = d == axis ? 1 : kiln_tensor_dim(x, d);
    /* x's dims before axis, then the indices' dims, then x's dims after axis. */
    for (int32_t d = 0; d < r + q - 1; d++)
        if (d < axis || d >= axis + q) p.offset_dims.v[p.offset_dims.count++] = d;
    kiln__attrs a = {.fn = fn};
    a.u.gather = p;
    kiln_tensor *operands[2] = {x, idx};
    return kiln__op_run1(cx, KILN_OP_GATHER, &a, operands, 2);
}

kiln_tensor *kiln_take(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *indices, int64_t axis) {
    static const char fn[] = "kiln_take";
    if (!cx) return NULL;
    if (!x) return kiln__null_argument_ptr(cx, fn, "x");
    if (!indices) return kiln__null_argument_ptr(cx, fn, "indices");
    int32_t r = kiln_tensor_rank(x), q = kiln_tensor_rank(indices);
    if (r == 0) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: x is a scalar; expected rank 1 or more",
                           fn);
        return NULL;
    }
    if (axis < -r || axis >= r) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: axis is %lld; expected %d to %d for x of rank %d", fn,
                           (long long)axis, (int)-r, (int)r - 1, (int)r);
        return NULL;
    }
    if (axis < 0) axis += r;
    kiln_dtype it = kiln_tensor_dtype(indices);
    if (!kiln_dtype_is_integer(it)) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: indices are %s; expected an integer type", fn, kiln_dtype_name(it));
        return NULL;
    }
    if (q + r - 1 > KILN_MAX_RANK) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: the result would have rank %d; at most %d is supported", fn,
                           (int)(q + r - 1), KILN_MAX_RANK);
        return NULL;
    }
    /* The intermediates live in a scope of their own; only the result leaves it. */
    if (kiln_scope_begin(cx) != KILN_OK) return NULL;
    kiln_tensor *result = take_in_scope(cx, fn, x, indices, axis);
    if (result) kiln_scope_escape(cx, result);
    kiln_scope_end(cx);
    return result;
}

/* kiln_one_hot after its checks. */
static kiln_tensor *one_hot_in_scope(kiln_ctx *cx, kiln_tensor *indices, int64_t depth,
                                     kiln_dtype dtype) {
    const kiln_shape *is = kiln_tensor_shape(indices);
    kiln_dtype it = kiln_tensor_dtype(indices);
    kiln_shape shape = *is;
    shape.dims[shape.rank++] = depth;
    kiln_dims dims = {.count = is->rank};
    for (int32_t d = 0; d < is->rank; d++)
        dims.v[d] = d;
    /* Compared as i64, so a depth beyond the indices' dtype still counts correctly; u64
     * indices past INT64_MAX wrap to negatives, which match nothing, as they should not. */
    kiln_tensor *idx = it == KILN_I64 ? indices : kiln_convert(cx, indices, KILN_I64);
    kiln_tensor *wide = kiln_broadcast_in_dim(cx, idx, shape, dims);
    kiln_tensor *positions = kiln_iota(cx, KILN_I64, shape, shape.rank - 1);
    kiln_tensor *hot = kiln_compare(cx, wide, positions, KILN_CMP_EQ, KILN_CMP_DEFAULT);
    if (!hot || dtype == KILN_BOOL) return hot;
    return kiln_convert(cx, hot, dtype);
}

kiln_tensor *kiln_one_hot(kiln_ctx *cx, kiln_tensor *indices, int64_t depth, kiln_dtype dtype) {
    static const char fn[] = "kiln_one_hot";
    if (!cx) return NULL;
    if (!indices) return kiln__null_argument_ptr(cx, fn, "indices");
    kiln_dtype it = kiln_tensor_dtype(indices);
    if (!kiln_dtype_is_integer(it)) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: indices are %s; expected an integer type", fn, kiln_dtype_name(it));
        return NULL;
    }
    if (depth < 0) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: depth is %lld; expected 0 or more", fn,
                           (long long)depth);
        return NULL;
    }
    if (!kiln_dtype_is_valid(dtype)) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: dtype %d is not a valid dtype", fn,
                           (int)dtype);
        return NULL;
    }
    const kiln_shape *is = kiln_tensor_shape(indices);
    if (is->rank >= KILN_MAX_RANK) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: indices have rank %d; at most %d is supported", fn, (int)is->rank,
                           KILN_MAX_RANK - 1);
        return NULL;
    }
    if (kiln_scope_begin(cx) != KILN_OK) return NULL;
    kiln_tensor *result = one_hot_in_scope(cx, indices, depth, dtype);
    if (result) kiln_scope_escape(cx, result);
    kiln_scope_end(cx);
    return result;
}
