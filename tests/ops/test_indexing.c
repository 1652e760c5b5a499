/* SPDX-License-Identifier: Apache-2.0 */
/* The indexing ops: gather, scatter, sort, and the conveniences take and one_hot.
 * Hand-checked values, the StableHLO interpreter's conformance cases (gather.mlir,
 * scatter.mlir, sort.mlir), every dtype, empty tensors, errors, allocation failures. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "failing_allocator.h"
#include "op_cases.h"
#include "test_util.h"

/* ---- helpers -------------------------------------------------------------------------- */

static const kiln_dtype all_dtypes[] = {KILN_BOOL, KILN_I8,  KILN_I16, KILN_I32, KILN_I64,
                                        KILN_U8,   KILN_U16, KILN_U32, KILN_U64, KILN_F16,
                                        KILN_BF16, KILN_F32, KILN_F64};
#define N_DTYPES ((int)(sizeof all_dtypes / sizeof all_dtypes[0]))
static const kiln_dtype index_dtypes[] = {KILN_I8, KILN_I16, KILN_I32, KILN_I64,
                                          KILN_U8, KILN_U16, KILN_U32, KILN_U64};
#define N_INDEX_DTYPES ((int)(sizeof index_dtypes / sizeof index_dtypes[0]))

static void put(void *buf, kiln_dtype dt, int64_t i, double v) {
    switch (dt) {
    case KILN_BOOL: ((uint8_t *)buf)[i] = v != 0; break;
    case KILN_I8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case KILN_I16: ((int16_t *)buf)[i] = (int16_t)v; break;
    case KILN_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case KILN_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case KILN_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case KILN_U16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case KILN_U32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case KILN_U64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case KILN_F16: ((uint16_t *)buf)[i] = kiln_f32_to_f16((float)v); break;
    case KILN_BF16: ((uint16_t *)buf)[i] = kiln_f32_to_bf16((float)v); break;
    case KILN_F32: ((float *)buf)[i] = (float)v; break;
    case KILN_F64: ((double *)buf)[i] = v; break;
    default: cr_assert_fail("bad dtype");
    }
}

/* A tensor of dtype from doubles (at most 512 elements). */
static kiln_tensor *make(kiln_ctx *cx, kiln_dtype dt, kiln_shape s, const double *v) {
    int64_t n = 0;
    cr_assert(kiln_shape_numel(&s, &n) && n <= 512);
    static _Alignas(8) unsigned char buf[512 * 8];
    for (int64_t i = 0; i < n; i++)
        put(buf, dt, i, v[i]);
    size_t nb = (size_t)n * kiln_dtype_size(dt);
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, s, nb ? buf : NULL, nb);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}
#define V(...) ((const double[]){__VA_ARGS__})

static kiln_tensor *make_i64(kiln_ctx *cx, kiln_shape s, const int64_t *v) {
    int64_t n = 0;
    cr_assert(kiln_shape_numel(&s, &n));
    kiln_tensor *t = kiln_tensor_from_host(cx, KILN_I64, s, n ? v : NULL, (size_t)n * 8);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}
#define I64S(...) ((const int64_t[]){__VA_ARGS__})

static void expect_shape(kiln_ctx *cx, const kiln_tensor *t, kiln_shape s) {
    cr_assert_not_null(t, "no result: %s", kiln_ctx_error_message(cx));
    char have[400], want[400];
    kiln_shape_format(kiln_tensor_shape(t), have, sizeof have);
    kiln_shape_format(&s, want, sizeof want);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(t), &s), "shape %s, expected %s", have, want);
}

/* Shape and every element (NaN matches NaN; zeros must match in sign). */
static void expect_values(kiln_ctx *cx, const kiln_tensor *t, kiln_shape s, const double *want) {
    expect_shape(cx, t, s);
    for (int64_t i = 0; i < kiln_tensor_numel(t); i++) {
        double got = kiln_tensor_item(cx, t, i);
        if (isnan(want[i])) {
            cr_assert(isnan(got), "element %lld is %g, expected NaN", (long long)i, got);
            continue;
        }
        cr_assert(got == want[i] && signbit(got) == signbit(want[i]),
                  "%s element %lld is %g, expected %g", kiln_dtype_name(kiln_tensor_dtype(t)),
                  (long long)i, got, want[i]);
    }
}

static void expect_i64(kiln_ctx *cx, const kiln_tensor *t, kiln_shape s, const int64_t *want) {
    expect_shape(cx, t, s);
    cr_assert_eq(kiln_tensor_dtype(t), KILN_I64);
    const int64_t *got = kiln_tensor_data(t);
    for (int64_t i = 0; i < kiln_tensor_numel(t); i++)
        cr_assert_eq(got[i], want[i], "element %lld is %lld, expected %lld", (long long)i,
                     (long long)got[i], (long long)want[i]);
}

/* 1, 2, ..., n as i64 of shape s. */
static kiln_tensor *counting(kiln_ctx *cx, kiln_shape s) {
    int64_t n = 0, v[256];
    cr_assert(kiln_shape_numel(&s, &n) && n <= 256);
    for (int64_t i = 0; i < n; i++)
        v[i] = i + 1;
    return make_i64(cx, s, v);
}

/* Custom regions written in plain C (no other op family needed). */
static double item0(kiln_ctx *cx, kiln_tensor *t) { return kiln_tensor_item(cx, t, 0); }

static kiln_status c_add(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    kiln_dtype dt = kiln_tensor_dtype(a[0]);
    if (dt == KILN_I64) {
        int64_t x = *(const int64_t *)kiln_tensor_data(a[0]);
        int64_t y = *(const int64_t *)kiln_tensor_data(a[1]);
        r[0] = kiln_full_int(cx, dt, KILN_SHAPE_SCALAR, (int64_t)((uint64_t)x + (uint64_t)y));
    } else {
        r[0] = kiln_full(cx, dt, KILN_SHAPE_SCALAR, item0(cx, a[0]) + item0(cx, a[1]));
    }
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}
static const kiln_region custom_add = {c_add, NULL};

/* a before b when (key(a) < key(b)), key = value / *(double *)user, truncated; or plain
 * a < b (user NULL). Uses args 0 and 1 (input 0's lhs and rhs). */
static kiln_status c_less(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    double x = item0(cx, a[0]), y = item0(cx, a[1]);
    if (u) {
        x = trunc(x / *(const double *)u);
        y = trunc(y / *(const double *)u);
    }
    r[0] = kiln_scalar(cx, x < y, KILN_BOOL);
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}
static kiln_status c_greater(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_scalar(cx, item0(cx, a[0]) > item0(cx, a[1]), KILN_BOOL);
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}

/* ---- gather --------------------------------------------------------------------------- */

Test(indexing, gather_conformance) {
    /* gather.mlir @gather_op_test */
    kiln_ctx *cx = test_ctx();
    kiln_tensor *operand = counting(cx, KILN_SHAPE(3, 4, 2));
    kiln_tensor *idx = make_i64(cx, KILN_SHAPE(2, 3, 2), I64S(0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9));
    kiln_gather_params p = {.offset_dims = KILN_DIMS(2, 3),
                            .collapsed_slice_dims = KILN_DIMS(0),
                            .start_index_map = KILN_DIMS(1, 0),
                            .index_vector_dim = 2,
                            .slice_sizes = KILN_DIMS(1, 2, 2)};
    kiln_tensor *r = kiln_gather(cx, operand, idx, &p);
    expect_i64(cx, r, KILN_SHAPE(2, 3, 2, 2),
               I64S(1, 2, 3, 4, 3, 4, 5, 6, 13, 14, 15, 16, 9, 10, 11, 12, 11, 12, 13, 14, 17, 18,
                    19, 20));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, gather_conformance_batching_dims) {
    /* gather.mlir @gather_op_with_batching_dim_test (also the spec's example) */
    kiln_ctx *cx = test_ctx();
    kiln_tensor *operand = counting(cx, KILN_SHAPE(2, 3, 4, 2));
    kiln_tensor *idx =
        make_i64(cx, KILN_SHAPE(2, 2, 3, 2),
                 I64S(0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9, 0, 0, 2, 1, 2, 2, 1, 2, 0, 1, 1, 0));
    kiln_gather_params p = {.offset_dims = KILN_DIMS(3, 4),
                            .collapsed_slice_dims = KILN_DIMS(1),
                            .operand_batching_dims = KILN_DIMS(0),
                            .start_indices_batching_dims = KILN_DIMS(1),
                            .start_index_map = KILN_DIMS(2, 1),
                            .index_vector_dim = 3,
                            .slice_sizes = KILN_DIMS(1, 1, 2, 2)};
    kiln_tensor *r = kiln_gather(cx, operand, idx, &p);
    expect_i64(cx, r, KILN_SHAPE(2, 2, 3, 2, 2),
               I64S(1, 2, 3, 4, 3, 4, 5, 6, 13, 14, 15, 16,         /**/
                    33, 34, 35, 36, 35, 36, 37, 38, 41, 42, 43, 44, /**/
                    1, 2, 3, 4, 13, 14, 15, 16, 21, 22, 23, 24,     /**/
                    43, 44, 45, 46, 33, 34, 35, 36, 27, 28, 29, 30));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, gather_clamps_start_indices) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *operand = counting(cx, KILN_SHAPE(10)); /* 1..10 */
    kiln_tensor *idx = make_i64(cx, KILN_SHAPE(4, 1), I64S(-5, 8, 20, INT64_MIN));
    kiln_gather_params p = {.offset_dims = KILN_DIMS(1),
                            .start_index_map = KILN_DIMS(0),
                            .index_vector_dim = 1,
                            .slice_sizes = KILN_DIMS(3)};
    expect_i64(cx, kiln_gather(cx, operand, idx, &p), KILN_SHAPE(4, 3),
               I64S(1, 2, 3, 8, 9, 10, 8, 9, 10, 1, 2, 3));
    /* u64 indices beyond INT64_MAX clamp high. */
    uint64_t big[2] = {UINT64_MAX, 1};
    kiln_tensor *uidx = kiln_tensor_from_host(cx, KILN_U64, KILN_SHAPE(2, 1), big, sizeof big);
    expect_i64(cx, kiln_gather(cx, operand, uidx, &p), KILN_SHAPE(2, 3), I64S(8, 9, 10, 2, 3, 4));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, gather_index_vector_dim_is_rank) {
    /* An embedding lookup: index_vector_dim == rank(indices), each index one number. */
    kiln_ctx *cx = test_ctx();
    kiln_tensor *table = counting(cx, KILN_SHAPE(4, 3));
    kiln_tensor *idx = make_i64(cx, KILN_SHAPE(2, 2), I64S(3, 0, 1, 3));
    kiln_gather_params p = {.offset_dims = KILN_DIMS(2),
                            .collapsed_slice_dims = KILN_DIMS(0),
                            .start_index_map = KILN_DIMS(0),
                            .index_vector_dim = 2,
                            .slice_sizes = KILN_DIMS(1, 3)};
    expect_i64(cx, kiln_gather(cx, table, idx, &p), KILN_SHAPE(2, 2, 3),
               I64S(10, 11, 12, 1, 2, 3, 4, 5, 6, 10, 11, 12));
    /* index_vector_dim 0 of a [2,3] index tensor: columns are the index vectors. */
    kiln_tensor *pairs = make_i64(cx, KILN_SHAPE(2, 3), I64S(0, 3, 1, 2, 0, 1));
    kiln_gather_params q = {.collapsed_slice_dims = KILN_DIMS(0, 1),
                            .start_index_map = KILN_DIMS(0, 1),
                            .index_vector_dim = 0,
                            .slice_sizes = KILN_DIMS(1, 1)};
    expect_i64(cx, kiln_gather(cx, table, pairs, &q), KILN_SHAPE(3), I64S(3, 10, 5));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, gather_windows_in_any_layout) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = counting(cx, KILN_SHAPE(4, 5)); /* x[i][j] = 5i + j + 1 */
    kiln_tensor *starts = make_i64(cx, KILN_SHAPE(2, 1), I64S(1, 4));
    /* A [4,2] window of columns per index (start clamps 4 -> 3): runs of 2 elements. */
    kiln_gather_params p = {.offset_dims = KILN_DIMS(1, 2),
                            .start_index_map = KILN_DIMS(1),
                            .index_vector_dim = 1,
                            .slice_sizes = KILN_DIMS(4, 2)};
    expect_i64(cx, kiln_gather(cx, x, starts, &p), KILN_SHAPE(2, 4, 2),
               I64S(2, 3, 7, 8, 12, 13, 17, 18, 4, 5, 9, 10, 14, 15, 19, 20));
    /* Offset dim first, batch dim last: result[i][b] = x[i][idx[b]]. */
    kiln_tensor *cols = make_i64(cx, KILN_SHAPE(3), I64S(4, 0, 2));
    kiln_gather_params q = {.offset_dims = KILN_DIMS(0),
                            .collapsed_slice_dims = KILN_DIMS(1),
                            .start_index_map = KILN_DIMS(1),
                            .index_vector_dim = 1,
                            .slice_sizes = KILN_DIMS(4, 1)};
    expect_i64(cx, kiln_gather(cx, x, cols, &q), KILN_SHAPE(4, 3),
               I64S(5, 1, 3, 10, 6, 8, 15, 11, 13, 20, 16, 18));
    /* Batch dim between two offset dims of a 3-D operand. */
    kiln_tensor *y = counting(cx, KILN_SHAPE(2, 3, 2));
    kiln_tensor *mid = make_i64(cx, KILN_SHAPE(2), I64S(2, 0));
    kiln_gather_params m = {.offset_dims = KILN_DIMS(0, 2),
                            .collapsed_slice_dims = KILN_DIMS(1),
                            .start_index_map = KILN_DIMS(1),
                            .index_vector_dim = 1,
                            .slice_sizes = KILN_DIMS(2, 1, 2)};
    expect_i64(cx, kiln_gather(cx, y, mid, &m), KILN_SHAPE(2, 2, 2),
               I64S(5, 6, 1, 2, 11, 12, 7, 8));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, gather_every_dtype_and_index_dtype) {
    kiln_ctx *cx = test_ctx();
    double vals[15];
    for (int d = 0; d < N_DTYPES; d++) {
        kiln_dtype dt = all_dtypes[d];
        for (int i = 0; i < 15; i++)
            vals[i] = dt == KILN_BOOL ? (i % 3 == 1) : i;
        kiln_tensor *x = make(cx, dt, KILN_SHAPE(5, 3), vals);
        for (int k = 0; k < N_INDEX_DTYPES; k++) {
            kiln_dtype it = index_dtypes[k];
            kiln_tensor *idx = make(cx, it, KILN_SHAPE(4, 1), V(4, 0, 2, 100));
            kiln_gather_params p = {.offset_dims = KILN_DIMS(1),
                                    .collapsed_slice_dims = KILN_DIMS(0),
                                    .start_index_map = KILN_DIMS(0),
                                    .index_vector_dim = 1,
                                    .slice_sizes = KILN_DIMS(1, 3)};
            kiln_tensor *r = kiln_gather(cx, x, idx, &p);
            cr_assert_not_null(r, "%s by %s: %s", kiln_dtype_name(dt), kiln_dtype_name(it),
                               kiln_ctx_error_message(cx));
            cr_assert_eq(kiln_tensor_dtype(r), dt);
            const int rows[4] = {4, 0, 2, 4};
            size_t es = kiln_dtype_size(dt);
            const unsigned char *src = kiln_tensor_data(x), *got = kiln_tensor_data(r);
            for (int b = 0; b < 4; b++)
                cr_assert(
                    memcmp(got + (size_t)b * 3 * es, src + (size_t)rows[b] * 3 * es, 3 * es) == 0,
                    "%s by %s: row %d", kiln_dtype_name(dt), kiln_dtype_name(it), b);
        }
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, gather_empty_and_rank_0) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = counting(cx, KILN_SHAPE(4, 3));
    kiln_gather_params p = {.offset_dims = KILN_DIMS(1),
                            .collapsed_slice_dims = KILN_DIMS(0),
                            .start_index_map = KILN_DIMS(0),
                            .index_vector_dim = 1,
                            .slice_sizes = KILN_DIMS(1, 3)};
    kiln_tensor *none = make_i64(cx, KILN_SHAPE(0, 1), NULL);
    kiln_tensor *r = kiln_gather(cx, x, none, &p);
    expect_shape(cx, r, KILN_SHAPE(0, 3));
    /* Zero-size slices. */
    kiln_tensor *two = make_i64(cx, KILN_SHAPE(2, 1), I64S(1, 9));
    p.slice_sizes = KILN_DIMS(1, 0);
    expect_shape(cx, kiln_gather(cx, x, two, &p), KILN_SHAPE(2, 0));
    /* An empty operand with an empty window: indices clamp to [0, 0]. */
    kiln_tensor *empty = make_i64(cx, KILN_SHAPE(0, 3), NULL);
    kiln_gather_params e = {.offset_dims = KILN_DIMS(1, 2),
                            .start_index_map = KILN_DIMS(0),
                            .index_vector_dim = 1,
                            .slice_sizes = KILN_DIMS(0, 3)};
    expect_shape(cx, kiln_gather(cx, empty, two, &e), KILN_SHAPE(2, 0, 3));
    /* A rank-0 operand: empty index vectors, every result element is the scalar. */
    kiln_tensor *s = make(cx, KILN_F32, KILN_SHAPE_SCALAR, V(7.5));
    kiln_tensor *no_index = make_i64(cx, KILN_SHAPE(3, 0), NULL);
    kiln_gather_params z = {.index_vector_dim = 1};
    expect_values(cx, kiln_gather(cx, s, no_index, &z), KILN_SHAPE(3), V(7.5, 7.5, 7.5));
    /* A rank-0 index (index_vector_dim 0 == rank): one slice. */
    kiln_tensor *one = make_i64(cx, KILN_SHAPE_SCALAR, I64S(2));
    kiln_gather_params o = {.offset_dims = KILN_DIMS(0),
                            .collapsed_slice_dims = KILN_DIMS(0),
                            .start_index_map = KILN_DIMS(0),
                            .index_vector_dim = 0,
                            .slice_sizes = KILN_DIMS(1, 3)};
    expect_i64(cx, kiln_gather(cx, x, one, &o), KILN_SHAPE(3), I64S(7, 8, 9));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, gather_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = counting(cx, KILN_SHAPE(4, 3));
    kiln_tensor *idx = make_i64(cx, KILN_SHAPE(2, 1), I64S(0, 1));
    const kiln_gather_params good = {.offset_dims = KILN_DIMS(1),
                                     .collapsed_slice_dims = KILN_DIMS(0),
                                     .start_index_map = KILN_DIMS(0),
                                     .index_vector_dim = 1,
                                     .slice_sizes = KILN_DIMS(1, 3)};
    cr_assert_not_null(kiln_gather(cx, x, idx, &good));
    kiln_gather_params p;

    cr_assert_null(kiln_gather(cx, x, make(cx, KILN_F32, KILN_SHAPE(2, 1), V(0, 1)), &good));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_gather: operand 2 (start_indices) is f32[2,1]; expected an integer type");
    cr_assert_null(kiln_gather(cx, x, make(cx, KILN_BOOL, KILN_SHAPE(2, 1), V(0, 1)), &good));
    expect_error(cx, KILN_INVALID_ARGUMENT, "expected an integer type");
    cr_assert_null(kiln_gather(cx, x, idx, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_gather: params is NULL");
    cr_assert_null(kiln_gather(cx, NULL, idx, &good));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_gather: operand 1 is NULL");

    p = good, p.index_vector_dim = 3;
    cr_assert_null(kiln_gather(cx, x, idx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT, "index_vector_dim is 3; expected 0 to 2");
    p = good, p.slice_sizes = KILN_DIMS(1);
    cr_assert_null(kiln_gather(cx, x, idx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT, "slice_sizes has 1 entries; expected 2");
    p = good, p.slice_sizes = KILN_DIMS(1, 4);
    cr_assert_null(kiln_gather(cx, x, idx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT, "slice_sizes[1] is 4; expected 0 to 3");
    p = good, p.slice_sizes = KILN_DIMS(2, 3);
    cr_assert_null(kiln_gather(cx, x, idx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT, "collapsed slice dimension takes at most 1");
    p = good, p.collapsed_slice_dims = KILN_DIMS_NONE;
    cr_assert_null(kiln_gather(cx, x, idx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "operand has rank 2; expected size(offset_dims) + size(collapsed_slice_dims)");
    p = good, p.start_index_map = KILN_DIMS(0, 1);
    cr_assert_null(kiln_gather(cx, x, idx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT, "start_index_map has 2 entries; expected 1");
    p = good, p.start_index_map = KILN_DIMS(2);
    cr_assert_null(kiln_gather(cx, x, idx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT, "start_index_map[0] is 2; expected 0 to 1");
    p = good, p.offset_dims = KILN_DIMS(2);
    cr_assert_null(kiln_gather(cx, x, idx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT, "offset_dims[0] is 2; expected 0 to 1");
    p = good, p.collapsed_slice_dims = KILN_DIMS(1, 0), p.offset_dims = KILN_DIMS_NONE,
    p.slice_sizes = KILN_DIMS(1, 1);
    cr_assert_null(kiln_gather(cx, x, idx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT, "collapsed_slice_dims [1,0] is not sorted");
    p = good, p.collapsed_slice_dims = KILN_DIMS(0, 0), p.offset_dims = KILN_DIMS_NONE;
    cr_assert_null(kiln_gather(cx, x, idx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT, "collapsed_slice_dims repeats dimension 0");
    p = good, p.collapsed_slice_dims = KILN_DIMS_NONE, p.slice_sizes = KILN_DIMS(1, 3),
    p.offset_dims = KILN_DIMS(2, 1);
    cr_assert_null(kiln_gather(cx, x, idx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT, "offset_dims [2,1] is not sorted");
    p = good, p.slice_sizes = KILN_DIMS(0, 3);
    cr_assert_null(kiln_gather(cx, x, idx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT, "slice_sizes[0] is 0 for a collapsed dimension");
    p = good, p.offset_dims.count = 20;
    cr_assert_null(kiln_gather(cx, x, idx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT, "offset_dims has 20 entries");

    /* Batching dims. */
    kiln_tensor *y = counting(cx, KILN_SHAPE(2, 3));
    kiln_tensor *bidx = make_i64(cx, KILN_SHAPE(2, 1), I64S(0, 2));
    kiln_gather_params b = {.collapsed_slice_dims = KILN_DIMS(1),
                            .operand_batching_dims = KILN_DIMS(0),
                            .start_indices_batching_dims = KILN_DIMS(0),
                            .start_index_map = KILN_DIMS(1),
                            .index_vector_dim = 1,
                            .slice_sizes = KILN_DIMS(1, 1)};
    expect_i64(cx, kiln_gather(cx, y, bidx, &b), KILN_SHAPE(2), I64S(1, 6));
    p = b, p.start_indices_batching_dims = KILN_DIMS(1);
    cr_assert_null(kiln_gather(cx, y, bidx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT, "index_vector_dim 1 is in start_indices_batching_dims");
    p = b, p.start_index_map = KILN_DIMS(0), p.collapsed_slice_dims = KILN_DIMS(1);
    cr_assert_null(kiln_gather(cx, y, bidx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "dimension 0 is in both start_index_map and operand_batching_dims");
    p = b, p.collapsed_slice_dims = KILN_DIMS(0);
    cr_assert_null(kiln_gather(cx, y, bidx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "dimension 0 is in both collapsed_slice_dims and operand_batching_dims");
    p = b, p.start_indices_batching_dims = KILN_DIMS_NONE;
    cr_assert_null(kiln_gather(cx, y, bidx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "operand_batching_dims has 1 entries and "
                 "start_indices_batching_dims 0");
    kiln_tensor *bidx3 = make_i64(cx, KILN_SHAPE(3, 1), I64S(0, 2, 1));
    cr_assert_null(kiln_gather(cx, y, bidx3, &b));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "operand dimension 0 has size 2 but start_indices dimension 0 has size 3");
    p = b, p.slice_sizes = KILN_DIMS(2, 1);
    cr_assert_null(kiln_gather(cx, y, bidx, &p));
    expect_error(cx, KILN_INVALID_ARGUMENT, "an operand batching dimension takes at most 1");
    kiln_ctx_release(cx);
}

/* ---- scatter -------------------------------------------------------------------------- */

static kiln_tensor *scatter1(kiln_ctx *cx, kiln_tensor *input, kiln_tensor *idx, kiln_tensor *upd,
                             const kiln_scatter_params *p, const kiln_region *region) {
    kiln_tensor *out = (kiln_tensor *)1;
    kiln_status s = kiln_scatter(cx, &input, 1, idx, &upd, p, region, &out);
    cr_assert_eq(s, kiln_ctx_status(cx));
    if (s != KILN_OK) cr_assert_null(out);
    return out;
}

Test(indexing, scatter_conformance) {
    /* scatter.mlir @scatter_op_test, with the builtin add and with a called-back add. */
    kiln_ctx *cx = test_ctx();
    kiln_tensor *input = counting(cx, KILN_SHAPE(3, 4, 2));
    kiln_tensor *idx = make_i64(cx, KILN_SHAPE(2, 3, 2), I64S(0, 2, 1, 0, 2, 1, 0, 1, 1, 0, 0, 9));
    kiln_tensor *upd = kiln_ones(cx, KILN_I64, KILN_SHAPE(2, 3, 2, 2));
    kiln_scatter_params p = {.update_window_dims = KILN_DIMS(2, 3),
                             .inserted_window_dims = KILN_DIMS(0),
                             .scatter_dims_to_operand_dims = KILN_DIMS(1, 0),
                             .index_vector_dim = 2};
    const int64_t want[] = {1,  2,  5,  6,  7,  8,  7,  8,  10, 11, 12, 13,
                            14, 15, 16, 17, 18, 19, 20, 21, 21, 22, 23, 24};
    expect_i64(cx, scatter1(cx, input, idx, upd, &p, kiln_region_add()), KILN_SHAPE(3, 4, 2), want);
    expect_i64(cx, scatter1(cx, input, idx, upd, &p, &custom_add), KILN_SHAPE(3, 4, 2), want);
    /* The input is not modified. */
    const int64_t *in = kiln_tensor_data(input);
    for (int i = 0; i < 24; i++)
        cr_assert_eq(in[i], i + 1);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, scatter_conformance_batching_dims) {
    /* scatter.mlir @scatter_op_with_batching_dim_test (also the spec's example) */
    kiln_ctx *cx = test_ctx();
    kiln_tensor *input = counting(cx, KILN_SHAPE(2, 3, 4, 2));
    kiln_tensor *idx =
        make_i64(cx, KILN_SHAPE(2, 2, 3, 2),
                 I64S(0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9, 0, 0, 2, 1, 2, 2, 1, 2, 0, 1, 1, 0));
    kiln_tensor *upd = kiln_ones(cx, KILN_I64, KILN_SHAPE(2, 2, 3, 2, 2));
    kiln_scatter_params p = {.update_window_dims = KILN_DIMS(3, 4),
                             .inserted_window_dims = KILN_DIMS(1),
                             .input_batching_dims = KILN_DIMS(0),
                             .scatter_indices_batching_dims = KILN_DIMS(1),
                             .scatter_dims_to_operand_dims = KILN_DIMS(2, 1),
                             .index_vector_dim = 3};
    const int64_t want[] = {3,  4,  6,  7,  6,  7,  7,  8,  9,  10, 11, 12, 15, 16, 17, 18,
                            17, 18, 19, 20, 22, 23, 24, 25, 25, 26, 28, 29, 30, 31, 31, 32,
                            35, 36, 38, 39, 38, 39, 39, 40, 41, 42, 44, 45, 46, 47, 47, 48};
    expect_i64(cx, scatter1(cx, input, idx, upd, &p, kiln_region_add()), KILN_SHAPE(2, 3, 4, 2),
               want);
    expect_i64(cx, scatter1(cx, input, idx, upd, &p, &custom_add), KILN_SHAPE(2, 3, 4, 2), want);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, scatter_skips_out_of_bounds_elements) {
    /* Per the spec each update element's full index is checked: a window wholly outside is
     * skipped, one straddling the edge lands its in-bounds part. */
    kiln_ctx *cx = test_ctx();
    kiln_tensor *zeros = kiln_zeros(cx, KILN_I64, KILN_SHAPE(5));
    kiln_tensor *idx = make_i64(cx, KILN_SHAPE(5, 1), I64S(-1, 4, 2, 7, INT64_MIN));
    kiln_tensor *upd = make_i64(cx, KILN_SHAPE(5, 2), I64S(1, 2, 10, 20, 100, 200, 5, 5, 7, 7));
    kiln_scatter_params p = {.update_window_dims = KILN_DIMS(1),
                             .scatter_dims_to_operand_dims = KILN_DIMS(0),
                             .index_vector_dim = 1};
    const int64_t want[] = {2, 0, 100, 200, 10};
    expect_i64(cx, scatter1(cx, zeros, idx, upd, &p, kiln_region_add()), KILN_SHAPE(5), want);
    expect_i64(cx, scatter1(cx, zeros, idx, upd, &p, &custom_add), KILN_SHAPE(5), want);
    expect_i64(cx, scatter1(cx, zeros, idx, upd, &p, kiln_region_replace()), KILN_SHAPE(5), want);
    /* u64 indices past INT64_MAX are out of bounds too. */
    uint64_t big[2] = {UINT64_MAX, 3};
    kiln_tensor *uidx = kiln_tensor_from_host(cx, KILN_U64, KILN_SHAPE(2, 1), big, sizeof big);
    kiln_tensor *upd2 = make_i64(cx, KILN_SHAPE(2, 2), I64S(1, 1, 3, 4));
    expect_i64(cx, scatter1(cx, zeros, uidx, upd2, &p, kiln_region_add()), KILN_SHAPE(5),
               I64S(0, 0, 0, 3, 4));
    /* 2-D: a window straddling two edges. */
    kiln_tensor *grid = kiln_zeros(cx, KILN_I64, KILN_SHAPE(3, 3));
    kiln_tensor *corner = make_i64(cx, KILN_SHAPE(1, 2), I64S(2, -1));
    kiln_tensor *block = make_i64(cx, KILN_SHAPE(1, 2, 2), I64S(1, 2, 3, 4));
    kiln_scatter_params q = {.update_window_dims = KILN_DIMS(1, 2),
                             .scatter_dims_to_operand_dims = KILN_DIMS(0, 1),
                             .index_vector_dim = 1};
    expect_i64(cx, scatter1(cx, grid, corner, block, &q, kiln_region_add()), KILN_SHAPE(3, 3),
               I64S(0, 0, 0, 0, 0, 0, 2, 0, 0));
    expect_i64(cx, scatter1(cx, grid, corner, block, &q, &custom_add), KILN_SHAPE(3, 3),
               I64S(0, 0, 0, 0, 0, 0, 2, 0, 0));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, scatter_applies_updates_in_row_major_order) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = make(cx, KILN_F32, KILN_SHAPE(3), V(0, 0, 0));
    kiln_tensor *idx = make_i64(cx, KILN_SHAPE(4, 1), I64S(1, 1, 2, 1));
    kiln_tensor *upd = make(cx, KILN_F32, KILN_SHAPE(4), V(5, 6, 7, 8));
    kiln_scatter_params p = {.inserted_window_dims = KILN_DIMS(0),
                             .scatter_dims_to_operand_dims = KILN_DIMS(0),
                             .index_vector_dim = 1};
    expect_values(cx, scatter1(cx, x, idx, upd, &p, kiln_region_replace()), KILN_SHAPE(3),
                  V(0, 8, 7));
    /* Order shows in float sums: 1e8 + 1 + 1 - 1e8 is 0 in f32 when added in order. */
    kiln_tensor *big = make(cx, KILN_F32, KILN_SHAPE(4), V(1e8, 1, 1, -1e8));
    kiln_tensor *same = make_i64(cx, KILN_SHAPE(4, 1), I64S(0, 0, 0, 0));
    expect_values(cx, scatter1(cx, x, same, big, &p, kiln_region_add()), KILN_SHAPE(3), V(0, 0, 0));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, scatter_window_dims_in_any_layout) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = kiln_zeros(cx, KILN_I64, KILN_SHAPE(3, 4));
    /* updates [3,2]: dim 0 is the window (x's rows), dim 1 the scatter dim (columns). */
    kiln_tensor *cols = make_i64(cx, KILN_SHAPE(2, 1), I64S(3, 1));
    kiln_tensor *upd = make_i64(cx, KILN_SHAPE(3, 2), I64S(1, 2, 3, 4, 5, 6));
    kiln_scatter_params p = {.update_window_dims = KILN_DIMS(0),
                             .inserted_window_dims = KILN_DIMS(1),
                             .scatter_dims_to_operand_dims = KILN_DIMS(1),
                             .index_vector_dim = 1};
    expect_i64(cx, scatter1(cx, x, cols, upd, &p, kiln_region_add()), KILN_SHAPE(3, 4),
               I64S(0, 2, 0, 1, 0, 4, 0, 3, 0, 6, 0, 5));
    /* A window narrower than the input: [2,2] blocks of a [3,4] grid at (row, col). */
    kiln_tensor *at = make_i64(cx, KILN_SHAPE(2, 2), I64S(0, 0, 1, 2));
    kiln_tensor *blocks = make_i64(cx, KILN_SHAPE(2, 2, 2), I64S(1, 2, 3, 4, 5, 6, 7, 8));
    kiln_scatter_params q = {.update_window_dims = KILN_DIMS(1, 2),
                             .scatter_dims_to_operand_dims = KILN_DIMS(0, 1),
                             .index_vector_dim = 1};
    expect_i64(cx, scatter1(cx, x, at, blocks, &q, kiln_region_replace()), KILN_SHAPE(3, 4),
               I64S(1, 2, 0, 0, 3, 4, 5, 6, 0, 0, 7, 8));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Reference for the builtin regions on small values, as doubles. */
static double combine_ref(kiln_dtype dt, int kind, double a, double b) {
    if (dt == KILN_BOOL) {
        bool x = a != 0, y = b != 0;
        switch (kind) {
        case 0:
        case 2:
        case 5: return x || y; /* add, max, or */
        case 1:
        case 3:
        case 4: return x && y; /* mul, min, and */
        default: return y;     /* replace */
        }
    }
    switch (kind) {
    case 0: return a + b;
    case 1: return a * b;
    case 2: return a > b ? a : b;
    case 3: return a < b ? a : b;
    case 4: return (double)((int64_t)a & (int64_t)b);
    case 5: return (double)((int64_t)a | (int64_t)b);
    default: return b;
    }
}

Test(indexing, scatter_builtin_regions_every_dtype) {
    kiln_ctx *cx = test_ctx();
    const kiln_region *regions[7] = {
        kiln_region_add(), kiln_region_multiply(), kiln_region_maximum(), kiln_region_minimum(),
        kiln_region_and(), kiln_region_or(),       kiln_region_replace()};
    kiln_tensor *idx = make_i64(cx, KILN_SHAPE(3, 1), I64S(1, 3, 1));
    kiln_scatter_params p = {.inserted_window_dims = KILN_DIMS(0),
                             .scatter_dims_to_operand_dims = KILN_DIMS(0),
                             .index_vector_dim = 1};
    for (int d = 0; d < N_DTYPES; d++) {
        kiln_dtype dt = all_dtypes[d];
        bool is_bool = dt == KILN_BOOL, is_float = kiln_dtype_is_float(dt);
        double in[4], up[3];
        for (int i = 0; i < 4; i++)
            in[i] = is_bool ? i % 2 : i + 1;
        for (int i = 0; i < 3; i++)
            up[i] = is_bool ? (i != 1) : i + 5;
        kiln_tensor *x = make(cx, dt, KILN_SHAPE(4), in);
        kiln_tensor *u = make(cx, dt, KILN_SHAPE(3), up);
        for (int k = 0; k < 7; k++) {
            if (is_float && (k == 4 || k == 5)) continue; /* and/or: not for floats */
            double want[4] = {in[0], in[1], in[2], in[3]};
            const int at[3] = {1, 3, 1};
            for (int j = 0; j < 3; j++)
                want[at[j]] = combine_ref(dt, k, want[at[j]], up[j]);
            kiln_tensor *r = scatter1(cx, x, idx, u, &p, regions[k]);
            cr_assert_not_null(r, "%s region %d: %s", kiln_dtype_name(dt), k,
                               kiln_ctx_error_message(cx));
            cr_assert_eq(kiln_tensor_dtype(r), dt);
            expect_values(cx, r, KILN_SHAPE(4), want);
        }
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, scatter_builtin_edge_values) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *at0 = make_i64(cx, KILN_SHAPE(1, 1), I64S(0));
    kiln_tensor *at01 = make_i64(cx, KILN_SHAPE(2, 1), I64S(0, 1));
    kiln_scatter_params p = {.inserted_window_dims = KILN_DIMS(0),
                             .scatter_dims_to_operand_dims = KILN_DIMS(0),
                             .index_vector_dim = 1};
    /* Integers wrap. */
    expect_values(cx,
                  scatter1(cx, make(cx, KILN_I8, KILN_SHAPE(1), V(127)), at0,
                           make(cx, KILN_I8, KILN_SHAPE(1), V(1)), &p, kiln_region_add()),
                  KILN_SHAPE(1), V(-128));
    expect_values(cx,
                  scatter1(cx, make(cx, KILN_U16, KILN_SHAPE(1), V(65535)), at0,
                           make(cx, KILN_U16, KILN_SHAPE(1), V(65535)), &p, kiln_region_multiply()),
                  KILN_SHAPE(1), V(1));
    expect_values(cx,
                  scatter1(cx, make(cx, KILN_I32, KILN_SHAPE(1), V(-2147483648.0)), at0,
                           make(cx, KILN_I32, KILN_SHAPE(1), V(-1)), &p, kiln_region_multiply()),
                  KILN_SHAPE(1), V(-2147483648.0));
    kiln_tensor *imax = kiln_full_int(cx, KILN_I64, KILN_SHAPE(1), INT64_MAX);
    kiln_tensor *r =
        scatter1(cx, imax, at0, kiln_ones(cx, KILN_I64, KILN_SHAPE(1)), &p, kiln_region_add());
    expect_i64(cx, r, KILN_SHAPE(1), I64S(INT64_MIN));
    /* Floats: maximum/minimum propagate NaN and order -0 < +0. */
    for (int f = 0; f < 4; f++) {
        kiln_dtype dt = (kiln_dtype[]){KILN_F16, KILN_BF16, KILN_F32, KILN_F64}[f];
        kiln_tensor *x = make(cx, dt, KILN_SHAPE(2), V(1, -0.0));
        kiln_tensor *u = make(cx, dt, KILN_SHAPE(2), V(NAN, 0.0));
        expect_values(cx, scatter1(cx, x, at01, u, &p, kiln_region_maximum()), KILN_SHAPE(2),
                      V(NAN, 0.0));
        kiln_tensor *y = make(cx, dt, KILN_SHAPE(2), V(NAN, 0.0));
        kiln_tensor *v = make(cx, dt, KILN_SHAPE(2), V(1, -0.0));
        expect_values(cx, scatter1(cx, y, at01, v, &p, kiln_region_minimum()), KILN_SHAPE(2),
                      V(NAN, -0.0));
        expect_values(cx, scatter1(cx, x, at01, v, &p, kiln_region_minimum()), KILN_SHAPE(2),
                      V(1, -0.0));
    }
    /* f16 add rounds once from f32: 2048 + 1 is a tie and rounds to even (2048); 2048 + 3
     * is 2051 -> 2052. */
    kiln_tensor *h = make(cx, KILN_F16, KILN_SHAPE(2), V(2048, 2048));
    kiln_tensor *hu = make(cx, KILN_F16, KILN_SHAPE(2), V(1, 3));
    expect_values(cx, scatter1(cx, h, at01, hu, &p, kiln_region_add()), KILN_SHAPE(2),
                  V(2048, 2052));
    kiln_tensor *bf = make(cx, KILN_BF16, KILN_SHAPE(1), V(256));
    expect_values(
        cx, scatter1(cx, bf, at0, make(cx, KILN_BF16, KILN_SHAPE(1), V(3)), &p, kiln_region_add()),
        KILN_SHAPE(1), V(260));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* (value, index) pairs: keeps the larger value and its index; ties keep the smaller index. */
static kiln_status c_argmax(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    double v0 = item0(cx, a[0]), i0 = item0(cx, a[1]), v1 = item0(cx, a[2]), i1 = item0(cx, a[3]);
    bool take = v1 > v0 || (v1 == v0 && i1 < i0);
    r[0] = kiln_full(cx, kiln_tensor_dtype(a[0]), KILN_SHAPE_SCALAR, take ? v1 : v0);
    r[1] = kiln_full(cx, kiln_tensor_dtype(a[1]), KILN_SHAPE_SCALAR, take ? i1 : i0);
    return r[0] && r[1] ? KILN_OK : kiln_ctx_status(cx);
}

Test(indexing, scatter_multiple_inputs) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *vals = make(cx, KILN_F32, KILN_SHAPE(3), V(-INFINITY, -INFINITY, -INFINITY));
    kiln_tensor *args = make(cx, KILN_I32, KILN_SHAPE(3), V(-1, -1, -1));
    kiln_tensor *idx = make_i64(cx, KILN_SHAPE(5, 1), I64S(0, 2, 0, 2, 0));
    kiln_tensor *uv = make(cx, KILN_F32, KILN_SHAPE(5), V(1.5, 2, 3, 2, 0.5));
    kiln_tensor *ui = make(cx, KILN_I32, KILN_SHAPE(5), V(10, 11, 12, 13, 14));
    kiln_scatter_params p = {.inserted_window_dims = KILN_DIMS(0),
                             .scatter_dims_to_operand_dims = KILN_DIMS(0),
                             .index_vector_dim = 1};
    const kiln_region argmax = {c_argmax, NULL};
    kiln_tensor *out[2] = {NULL, NULL};
    cr_assert_eq(kiln_scatter(cx, (kiln_tensor *[]){vals, args}, 2, idx, (kiln_tensor *[]){uv, ui},
                              &p, &argmax, out),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_values(cx, out[0], KILN_SHAPE(3), V(3, -INFINITY, 2));
    expect_values(cx, out[1], KILN_SHAPE(3), V(12, -1, 11));
    cr_assert_eq(kiln_tensor_dtype(out[1]), KILN_I32);
    /* A builtin region combines one input. */
    cr_assert_eq(kiln_scatter(cx, (kiln_tensor *[]){vals, args}, 2, idx, (kiln_tensor *[]){uv, ui},
                              &p, kiln_region_add(), out),
                 KILN_INVALID_ARGUMENT);
    cr_assert(out[0] == NULL && out[1] == NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_scatter: a builtin region combines one input; 2 inputs need a custom "
                 "region");
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, scatter_empty_and_rank_0) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = counting(cx, KILN_SHAPE(4));
    kiln_scatter_params p = {.inserted_window_dims = KILN_DIMS(0),
                             .scatter_dims_to_operand_dims = KILN_DIMS(0),
                             .index_vector_dim = 1};
    kiln_tensor *none = make_i64(cx, KILN_SHAPE(0, 1), NULL);
    kiln_tensor *no_upd = make_i64(cx, KILN_SHAPE(0), NULL);
    expect_i64(cx, scatter1(cx, x, none, no_upd, &p, kiln_region_add()), KILN_SHAPE(4),
               I64S(1, 2, 3, 4));
    expect_i64(cx, scatter1(cx, x, none, no_upd, &p, &custom_add), KILN_SHAPE(4), I64S(1, 2, 3, 4));
    /* An empty input: every update is out of bounds. */
    kiln_tensor *e = make_i64(cx, KILN_SHAPE(0), NULL);
    kiln_tensor *one = make_i64(cx, KILN_SHAPE(1, 1), I64S(0));
    expect_shape(cx,
                 scatter1(cx, e, one, make_i64(cx, KILN_SHAPE(1), I64S(5)), &p, kiln_region_add()),
                 KILN_SHAPE(0));
    /* A rank-0 input: empty index vectors address the one element. */
    kiln_tensor *s = make(cx, KILN_F64, KILN_SHAPE_SCALAR, V(1.25));
    kiln_tensor *idx = make_i64(cx, KILN_SHAPE(3, 0), NULL);
    kiln_tensor *u = make(cx, KILN_F64, KILN_SHAPE(3), V(1, 2, 4));
    kiln_scatter_params z = {.index_vector_dim = 1};
    expect_values(cx, scatter1(cx, s, idx, u, &z, kiln_region_add()), KILN_SHAPE_SCALAR, V(8.25));
    expect_values(cx, scatter1(cx, s, idx, u, &z, &custom_add), KILN_SHAPE_SCALAR, V(8.25));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

static kiln_status c_wrong_dtype(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u, (void)a;
    r[0] = kiln_scalar(cx, 1, KILN_F64);
    return KILN_OK;
}
static kiln_status c_wrong_shape(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_zeros(cx, kiln_tensor_dtype(a[0]), KILN_SHAPE(2));
    return KILN_OK;
}
static kiln_status c_fails(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a, (void)r, (void)u;
    return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION, "the region said no");
}
static kiln_status c_no_result(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)cx, (void)a, (void)r, (void)u;
    return KILN_OK;
}

Test(indexing, scatter_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = counting(cx, KILN_SHAPE(4, 3));
    kiln_tensor *idx = make_i64(cx, KILN_SHAPE(2, 1), I64S(0, 2));
    kiln_tensor *upd = counting(cx, KILN_SHAPE(2, 3));
    const kiln_scatter_params good = {.update_window_dims = KILN_DIMS(1),
                                      .inserted_window_dims = KILN_DIMS(0),
                                      .scatter_dims_to_operand_dims = KILN_DIMS(0),
                                      .index_vector_dim = 1};
    cr_assert_not_null(scatter1(cx, x, idx, upd, &good, kiln_region_add()));
    kiln_scatter_params p;
    kiln_tensor *out = NULL;

    cr_assert_null(scatter1(cx, x, idx, make(cx, KILN_F32, KILN_SHAPE(2, 3), V(0, 0, 0, 0, 0, 0)),
                            &good, kiln_region_add()));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_scatter: update 1 is f32[2,3] but input 1 is i64[4,3]; expected the same "
                 "element type");
    cr_assert_null(scatter1(cx, x, idx, counting(cx, KILN_SHAPE(3, 3)), &good, kiln_region_add()));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "updates dimension 0 (a scatter dimension) has size 3; expected 2");
    cr_assert_null(scatter1(cx, x, idx, counting(cx, KILN_SHAPE(2, 4)), &good, kiln_region_add()));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "updates dimension 1 (a window dimension) has size 4; expected at most 3");
    cr_assert_null(scatter1(cx, x, idx, counting(cx, KILN_SHAPE(2)), &good, kiln_region_add()));
    expect_error(cx, KILN_INVALID_ARGUMENT, "updates have rank 1; expected 2");
    cr_assert_null(scatter1(cx, x, make(cx, KILN_F64, KILN_SHAPE(2, 1), V(0, 1)), upd, &good,
                            kiln_region_add()));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "operand 2 (scatter_indices) is f64[2,1]; expected an integer type");
    p = good, p.update_window_dims = KILN_DIMS(2);
    cr_assert_null(scatter1(cx, x, idx, upd, &p, kiln_region_add()));
    expect_error(cx, KILN_INVALID_ARGUMENT, "update_window_dims[0] is 2; expected 0 to 1");
    p = good, p.inserted_window_dims = KILN_DIMS_NONE;
    cr_assert_null(scatter1(cx, x, idx, upd, &p, kiln_region_add()));
    expect_error(cx, KILN_INVALID_ARGUMENT, "inputs has rank 2; expected size(update_window_dims)");
    p = good, p.scatter_dims_to_operand_dims = KILN_DIMS(0, 1);
    cr_assert_null(scatter1(cx, x, idx, upd, &p, kiln_region_add()));
    expect_error(cx, KILN_INVALID_ARGUMENT, "scatter_dims_to_operand_dims has 2 entries");
    p = good, p.index_vector_dim = -1;
    cr_assert_null(scatter1(cx, x, idx, upd, &p, kiln_region_add()));
    expect_error(cx, KILN_INVALID_ARGUMENT, "index_vector_dim is -1");
    p = good, p.input_batching_dims = KILN_DIMS(1), p.update_window_dims = KILN_DIMS_NONE;
    cr_assert_null(scatter1(cx, x, idx, upd, &p, kiln_region_add()));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "input_batching_dims has 1 entries and "
                 "scatter_indices_batching_dims 0");

    /* The builder's own arguments. */
    cr_assert_eq(kiln_scatter(cx, &x, 0, idx, &upd, &good, kiln_region_add(), &out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_scatter: n is 0");
    cr_assert_null(scatter1(cx, x, idx, upd, &good, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_scatter: region is NULL");
    cr_assert_null(scatter1(cx, x, idx, upd, NULL, kiln_region_add()));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_scatter: params is NULL");
    cr_assert_eq(kiln_scatter(cx, &x, 1, idx, &upd, &good, kiln_region_add(), NULL),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_scatter: out is NULL");
    cr_assert_null(scatter1(cx, x, NULL, upd, &good, kiln_region_add()));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_scatter: operand 2 is NULL");
    const kiln_region empty = {NULL, NULL};
    cr_assert_null(scatter1(cx, x, idx, upd, &good, &empty));
    expect_error(cx, KILN_INVALID_ARGUMENT, "the update region is NULL");
    /* Two inputs of different shapes. */
    kiln_tensor *outs[2];
    const kiln_region argmax = {c_argmax, NULL};
    cr_assert_eq(kiln_scatter(cx, (kiln_tensor *[]){x, counting(cx, KILN_SHAPE(3, 4))}, 2, idx,
                              (kiln_tensor *[]){upd, upd}, &good, &argmax, outs),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "input 2 is i64[3,4] but input 1 is i64[4,3]");

    /* Region failures. */
    const kiln_region wrong_dtype = {c_wrong_dtype, NULL}, wrong_shape = {c_wrong_shape, NULL},
                      fails = {c_fails, NULL}, no_result = {c_no_result, NULL};
    cr_assert_null(scatter1(cx, x, idx, upd, &good, &wrong_dtype));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_scatter: region result 1 is f64[]; expected i64[]");
    cr_assert_null(scatter1(cx, x, idx, upd, &good, &wrong_shape));
    expect_error(cx, KILN_INVALID_ARGUMENT, "region result 1 is i64[2]; expected i64[]");
    cr_assert_null(scatter1(cx, x, idx, upd, &good, &fails));
    expect_error(cx, KILN_FAILED_PRECONDITION, "the region said no");
    cr_assert_null(scatter1(cx, x, idx, upd, &good, &no_result));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_scatter: region returned no tensor for result 1");
    /* and/or on floats go through the region, which reports the dtype. */
    kiln_tensor *fx = make(cx, KILN_F32, KILN_SHAPE(2), V(1, 2));
    kiln_tensor *fu = make(cx, KILN_F32, KILN_SHAPE(1), V(1));
    kiln_tensor *one = make_i64(cx, KILN_SHAPE(1, 1), I64S(0));
    kiln_scatter_params q = {.inserted_window_dims = KILN_DIMS(0),
                             .scatter_dims_to_operand_dims = KILN_DIMS(0),
                             .index_vector_dim = 1};
    cr_assert_null(scatter1(cx, fx, one, fu, &q, kiln_region_and()));
    cr_assert_neq(kiln_ctx_status(cx), KILN_OK);
    kiln_ctx_clear_error(cx);
    kiln_ctx_release(cx);
}

/* ---- sort ----------------------------------------------------------------------------- */

static void sort_n(kiln_ctx *cx, kiln_tensor **in, int n, int64_t dim, bool stable,
                   const kiln_region *cmp, kiln_tensor **out) {
    kiln_status s = kiln_sort(cx, in, n, dim, stable, cmp, out);
    cr_assert_eq(s, KILN_OK, "%s", kiln_ctx_error_message(cx));
}

static kiln_tensor *sort1(kiln_ctx *cx, kiln_tensor *x, int64_t dim, const kiln_region *cmp) {
    kiln_tensor *out = NULL;
    sort_n(cx, &x, 1, dim, true, cmp, &out);
    return out;
}

/* Interleaved comparator args: (lhs0, rhs0, lhs1, rhs1); compares input 1. */
static kiln_status c_less_second(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_scalar(cx, item0(cx, a[2]) < item0(cx, a[3]), KILN_BOOL);
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}

Test(indexing, sort_conformance) {
    kiln_ctx *cx = test_ctx();
    /* sort.mlir @sort_stable: two inputs along dim 0, comparator GT on input 0. */
    kiln_tensor *in0 = make_i64(cx, KILN_SHAPE(2, 3), I64S(1, 2, 3, 3, 2, 1));
    kiln_tensor *in1 = make_i64(cx, KILN_SHAPE(2, 3), I64S(3, 2, 1, 1, 2, 3));
    const kiln_region gt = {c_greater, NULL};
    kiln_tensor *out[2];
    sort_n(cx, (kiln_tensor *[]){in0, in1}, 2, 0, true, &gt, out);
    expect_i64(cx, out[0], KILN_SHAPE(2, 3), I64S(3, 2, 3, 1, 2, 1));
    expect_i64(cx, out[1], KILN_SHAPE(2, 3), I64S(1, 2, 1, 3, 2, 3));
    sort_n(cx, (kiln_tensor *[]){in0, in1}, 2, 0, true, kiln_region_greater(), out);
    expect_i64(cx, out[0], KILN_SHAPE(2, 3), I64S(3, 2, 3, 1, 2, 1));
    expect_i64(cx, out[1], KILN_SHAPE(2, 3), I64S(1, 2, 1, 3, 2, 3));
    /* sort.mlir @sort_issue_2440: LT along dim 0 of a 5x7, not stable. */
    kiln_tensor *x = make_i64(cx, KILN_SHAPE(5, 7),
                              I64S(0, 1, 1, -3, -3, -2, 0, 4, -1, 3, 0, 4, 0, -3, 1, 0, 0, 0, 0, 2,
                                   3, -3, -4, -4, -2, 0, 3, 3, 0, 5, 2, -2, 0, -2, 0));
    const int64_t want[] = {-3, -4, -4, -3, -3, -2, -3, 0, -1, 0, -2, 0, -2, 0, 0, 0, 1, -2,
                            0,  0,  0,  1,  1,  2,  0,  0, 2,  3, 4,  5, 3,  0, 4, 3, 3};
    const kiln_region lt = {c_less, NULL};
    for (int k = 0; k < 2; k++) {
        kiln_tensor *r = NULL;
        cr_assert_eq(kiln_sort(cx, &x, 1, 0, false, k ? &lt : kiln_region_less(), &r), KILN_OK);
        expect_i64(cx, r, KILN_SHAPE(5, 7), want);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, sort_builtin_every_dtype) {
    kiln_ctx *cx = test_ctx();
    for (int d = 0; d < N_DTYPES; d++) {
        kiln_dtype dt = all_dtypes[d];
        static const double b_in[] = {1, 0, 1, 0, 0, 1}, b_up[] = {0, 0, 0, 1, 1, 1},
                            b_down[] = {1, 1, 1, 0, 0, 0};
        static const double u_in[] = {3, 200, 2, 0, 5, 2}, u_up[] = {0, 2, 2, 3, 5, 200},
                            u_down[] = {200, 5, 3, 2, 2, 0};
        static const double s_in[] = {3, -100, 2, 0, 5, -4}, s_up[] = {-100, -4, 0, 2, 3, 5},
                            s_down[] = {5, 3, 2, 0, -4, -100};
        bool is_bool = dt == KILN_BOOL, is_signed = kiln_dtype_is_signed(dt);
        const double *in = is_bool ? b_in : is_signed ? s_in : u_in;
        const double *up = is_bool ? b_up : is_signed ? s_up : u_up;
        const double *down = is_bool ? b_down : is_signed ? s_down : u_down;
        kiln_tensor *x = make(cx, dt, KILN_SHAPE(6), in);
        expect_values(cx, sort1(cx, x, 0, kiln_region_less()), KILN_SHAPE(6), up);
        expect_values(cx, sort1(cx, x, -1, kiln_region_greater()), KILN_SHAPE(6), down);
        const kiln_region lt = {c_less, NULL};
        expect_values(cx, sort1(cx, x, 0, &lt), KILN_SHAPE(6), up);
    }
    /* 64-bit extremes compare exactly. */
    kiln_tensor *big = make_i64(cx, KILN_SHAPE(4), I64S(INT64_MAX, -1, INT64_MIN, INT64_MAX - 1));
    expect_i64(cx, sort1(cx, big, 0, kiln_region_less()), KILN_SHAPE(4),
               I64S(INT64_MIN, -1, INT64_MAX - 1, INT64_MAX));
    uint64_t u[4] = {UINT64_MAX, 1, (uint64_t)1 << 63, UINT64_MAX - 1};
    kiln_tensor *ub = kiln_tensor_from_host(cx, KILN_U64, KILN_SHAPE(4), u, sizeof u);
    const uint64_t *got = kiln_tensor_data(sort1(cx, ub, 0, kiln_region_less()));
    cr_assert(got[0] == 1 && got[1] == (uint64_t)1 << 63 && got[2] == UINT64_MAX - 1 &&
              got[3] == UINT64_MAX);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, sort_float_nan_and_signed_zero_placement) {
    kiln_ctx *cx = test_ctx();
    for (int f = 0; f < 4; f++) {
        kiln_dtype dt = (kiln_dtype[]){KILN_F16, KILN_BF16, KILN_F32, KILN_F64}[f];
        kiln_tensor *x =
            make(cx, dt, KILN_SHAPE(8), V(3, NAN, -1, -0.0, 0.0, NAN, -INFINITY, INFINITY));
        /* Ascending: NaNs last; -0 and +0 are equal, so they keep their order (stable). */
        expect_values(cx, sort1(cx, x, 0, kiln_region_less()), KILN_SHAPE(8),
                      V(-INFINITY, -1, -0.0, 0.0, 3, INFINITY, NAN, NAN));
        /* Descending: NaNs first. */
        expect_values(cx, sort1(cx, x, 0, kiln_region_greater()), KILN_SHAPE(8),
                      V(NAN, NAN, INFINITY, 3, -0.0, 0.0, -1, -INFINITY));
        kiln_tensor *y = make(cx, dt, KILN_SHAPE(3), V(0.0, -0.0, 0.0));
        expect_values(cx, sort1(cx, y, 0, kiln_region_less()), KILN_SHAPE(3), V(0.0, -0.0, 0.0));
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, sort_along_first_middle_and_last_dims) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = make(cx, KILN_F32, KILN_SHAPE(2, 3), V(3, 1, 2, 0, 5, 4));
    expect_values(cx, sort1(cx, x, 1, kiln_region_less()), KILN_SHAPE(2, 3), V(1, 2, 3, 0, 4, 5));
    expect_values(cx, sort1(cx, x, -1, kiln_region_greater()), KILN_SHAPE(2, 3),
                  V(3, 2, 1, 5, 4, 0));
    expect_values(cx, sort1(cx, x, 0, kiln_region_less()), KILN_SHAPE(2, 3), V(0, 1, 2, 3, 5, 4));
    expect_values(cx, sort1(cx, x, -2, kiln_region_greater()), KILN_SHAPE(2, 3),
                  V(3, 5, 4, 0, 1, 2));
    /* The middle dim of a [2,3,2]. */
    kiln_tensor *y = make(cx, KILN_I32, KILN_SHAPE(2, 3, 2), V(5, 0, 3, 2, 4, 1, 0, 9, 2, 7, 1, 8));
    expect_values(cx, sort1(cx, y, 1, kiln_region_less()), KILN_SHAPE(2, 3, 2),
                  V(3, 0, 4, 1, 5, 2, 0, 7, 1, 8, 2, 9));
    const kiln_region lt = {c_less, NULL};
    expect_values(cx, sort1(cx, y, 1, &lt), KILN_SHAPE(2, 3, 2),
                  V(3, 0, 4, 1, 5, 2, 0, 7, 1, 8, 2, 9));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, sort_values_by_keys) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *keys = make(cx, KILN_I32, KILN_SHAPE(5), V(2, 1, 2, 1, 0));
    kiln_tensor *vals = make(cx, KILN_F64, KILN_SHAPE(5), V(10, 20, 30, 40, 50));
    kiln_tensor *flags = make(cx, KILN_BOOL, KILN_SHAPE(5), V(1, 0, 0, 1, 1));
    kiln_tensor *out[3];
    sort_n(cx, (kiln_tensor *[]){keys, vals, flags}, 3, 0, true, kiln_region_less(), out);
    expect_values(cx, out[0], KILN_SHAPE(5), V(0, 1, 1, 2, 2));
    expect_values(cx, out[1], KILN_SHAPE(5), V(50, 20, 40, 10, 30));
    expect_values(cx, out[2], KILN_SHAPE(5), V(1, 0, 1, 1, 0));
    sort_n(cx, (kiln_tensor *[]){keys, vals, flags}, 3, 0, true, kiln_region_greater(), out);
    expect_values(cx, out[0], KILN_SHAPE(5), V(2, 2, 1, 1, 0));
    expect_values(cx, out[1], KILN_SHAPE(5), V(10, 30, 20, 40, 50));
    /* A comparator on the second input: the args are interleaved (lhs0, rhs0, lhs1, rhs1). */
    const kiln_region by_second = {c_less_second, NULL};
    kiln_tensor *x = make(cx, KILN_I8, KILN_SHAPE(3), V(1, 2, 3));
    kiln_tensor *y = make(cx, KILN_U8, KILN_SHAPE(3), V(3, 1, 2));
    sort_n(cx, (kiln_tensor *[]){x, y}, 2, 0, false, &by_second, out);
    expect_values(cx, out[0], KILN_SHAPE(3), V(2, 3, 1));
    expect_values(cx, out[1], KILN_SHAPE(3), V(1, 2, 3));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, sort_is_stable_with_a_called_back_comparator) {
    kiln_ctx *cx = test_ctx();
    /* Sorted by tens only: equal tens keep their input order. 100 elements, many ties. */
    double v[100], want[100];
    uint32_t seed = 12345;
    for (int i = 0; i < 100; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (seed >> 16) % 60;
    }
    int k = 0;
    for (int tens = 0; tens < 6; tens++)
        for (int i = 0; i < 100; i++)
            if ((int)v[i] / 10 == tens) want[k++] = v[i];
    kiln_tensor *x = make(cx, KILN_F32, KILN_SHAPE(100), v);
    double ten = 10;
    const kiln_region by_tens = {c_less, &ten};
    expect_values(cx, sort1(cx, x, 0, &by_tens), KILN_SHAPE(100), want);
    /* And the builtin and the called-back comparator agree on the full order. */
    const kiln_region lt = {c_less, NULL};
    kiln_tensor *a = sort1(cx, x, 0, kiln_region_less()), *b = sort1(cx, x, 0, &lt);
    cr_assert(memcmp(kiln_tensor_data(a), kiln_tensor_data(b), 400) == 0);
    for (int i = 1; i < 100; i++)
        cr_assert_leq(kiln_tensor_item(cx, a, i - 1), kiln_tensor_item(cx, a, i));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(indexing, sort_empty_and_single) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *e = make(cx, KILN_F32, KILN_SHAPE(0), NULL);
    expect_shape(cx, sort1(cx, e, 0, kiln_region_less()), KILN_SHAPE(0));
    kiln_tensor *e2 = make(cx, KILN_I16, KILN_SHAPE(3, 0), NULL);
    expect_shape(cx, sort1(cx, e2, 0, kiln_region_less()), KILN_SHAPE(3, 0));
    const kiln_region lt = {c_less, NULL};
    expect_shape(cx, sort1(cx, e2, 1, &lt), KILN_SHAPE(3, 0));
    kiln_tensor *col = make(cx, KILN_I16, KILN_SHAPE(3, 1), V(3, 1, 2));
    expect_values(cx, sort1(cx, col, 1, &lt), KILN_SHAPE(3, 1), V(3, 1, 2));
    expect_values(cx, sort1(cx, col, 0, &lt), KILN_SHAPE(3, 1), V(1, 2, 3));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

static kiln_status c_not_bool(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a, (void)u;
    r[0] = kiln_scalar(cx, 1, KILN_F32);
    return KILN_OK;
}

Test(indexing, sort_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = make(cx, KILN_F32, KILN_SHAPE(2, 3), V(1, 2, 3, 4, 5, 6));
    kiln_tensor *out[2] = {(kiln_tensor *)1, (kiln_tensor *)1};
    cr_assert_eq(kiln_sort(cx, &x, 1, 2, true, kiln_region_less(), out), KILN_INVALID_ARGUMENT);
    cr_assert_null(out[0]);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_sort: dimension is 2; expected -2 to 1");
    cr_assert_eq(kiln_sort(cx, &x, 1, -3, true, kiln_region_less(), out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "dimension is -3");
    kiln_tensor *s = make(cx, KILN_F32, KILN_SHAPE_SCALAR, V(1));
    cr_assert_eq(kiln_sort(cx, &s, 1, 0, true, kiln_region_less(), out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "input 1 is f32[]; sort needs rank 1 or more");
    kiln_tensor *y = make(cx, KILN_F32, KILN_SHAPE(3, 2), V(1, 2, 3, 4, 5, 6));
    cr_assert_eq(kiln_sort(cx, (kiln_tensor *[]){x, y}, 2, 0, true, kiln_region_less(), out),
                 KILN_INVALID_ARGUMENT);
    cr_assert(out[0] == NULL && out[1] == NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "input 2 is f32[3,2] but input 1 is f32[2,3]");
    cr_assert_eq(kiln_sort(cx, &x, 1, 0, true, NULL, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_sort: comparator is NULL");
    cr_assert_eq(kiln_sort(cx, &x, 0, 0, true, kiln_region_less(), out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_sort: n is 0");
    cr_assert_eq(kiln_sort(cx, NULL, 1, 0, true, kiln_region_less(), out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_sort: inputs is NULL");
    cr_assert_eq(kiln_sort(cx, &x, 1, 0, true, kiln_region_less(), NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_sort: out is NULL");
    kiln_tensor *null_in = NULL;
    cr_assert_eq(kiln_sort(cx, &null_in, 1, 0, true, kiln_region_less(), out),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_sort: operand 1 is NULL");
    const kiln_region empty = {NULL, NULL};
    cr_assert_eq(kiln_sort(cx, &x, 1, 0, true, &empty, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "the comparator is NULL");
    const kiln_region not_bool = {c_not_bool, NULL}, fails = {c_fails, NULL},
                      no_result = {c_no_result, NULL};
    cr_assert_eq(kiln_sort(cx, &x, 1, 1, true, &not_bool, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_sort: the comparator returned f32[]; expected i1[]");
    cr_assert_eq(kiln_sort(cx, &x, 1, 1, true, &fails, out), KILN_FAILED_PRECONDITION);
    expect_error(cx, KILN_FAILED_PRECONDITION, "the region said no");
    cr_assert_eq(kiln_sort(cx, &x, 1, 1, true, &no_result, out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_sort: comparator returned no tensor for result 1");
    kiln_ctx_release(cx);
}

/* ---- allocation failures -------------------------------------------------------------- */

typedef kiln_status (*op_under_test)(kiln_ctx *cx, kiln_tensor **in);

static kiln_status run_gather(kiln_ctx *cx, kiln_tensor **in) {
    kiln_gather_params p = {.offset_dims = KILN_DIMS(1),
                            .collapsed_slice_dims = KILN_DIMS(0),
                            .start_index_map = KILN_DIMS(0),
                            .index_vector_dim = 1,
                            .slice_sizes = KILN_DIMS(1, 3)};
    return kiln_gather(cx, in[0], in[1], &p) ? KILN_OK : kiln_ctx_status(cx);
}
static kiln_status run_scatter(kiln_ctx *cx, kiln_tensor **in) {
    kiln_scatter_params p = {.update_window_dims = KILN_DIMS(1),
                             .inserted_window_dims = KILN_DIMS(0),
                             .scatter_dims_to_operand_dims = KILN_DIMS(0),
                             .index_vector_dim = 1};
    kiln_tensor *out;
    return kiln_scatter(cx, &in[0], 1, in[1], &in[2], &p, &custom_add, &out);
}
static kiln_status run_sort(kiln_ctx *cx, kiln_tensor **in) {
    kiln_tensor *out[2];
    kiln_status s =
        kiln_sort(cx, (kiln_tensor *[]){in[0], in[0]}, 2, 0, true, kiln_region_less(), out);
    if (s != KILN_OK) return s;
    const kiln_region lt = {c_less, NULL};
    return kiln_sort(cx, in, 1, 0, true, &lt, out);
}

static kiln_status run_take(kiln_ctx *cx, kiln_tensor **in) {
    return kiln_take(cx, in[0], in[1], -2) ? KILN_OK : kiln_ctx_status(cx);
}
static kiln_status run_one_hot(kiln_ctx *cx, kiln_tensor **in) {
    return kiln_one_hot(cx, in[1], 4, KILN_F32) ? KILN_OK : kiln_ctx_status(cx);
}

Test(indexing, allocation_failures_are_reported_without_leaks) {
    op_under_test ops[5] = {run_gather, run_scatter, run_sort, run_take, run_one_hot};
    for (int o = 0; o < 5; o++) {
        failing_allocator fa;
        kiln_ctx *cx = failing_allocator_ctx(&fa);
        cr_assert_not_null(cx);
        kiln_tensor *in[3] = {counting(cx, KILN_SHAPE(4, 3)),
                              make_i64(cx, KILN_SHAPE(2, 1), I64S(3, 1)),
                              counting(cx, KILN_SHAPE(2, 3))};
        bool done = false;
        for (int64_t k = 0; k < 400 && !done; k++) {
            kiln_ctx_trim(cx);
            int64_t live = fa.live_blocks;
            cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
            fa.fail_after = fa.allocations + k;
            kiln_status s = ops[o](cx, in);
            fa.fail_after = -1;
            if (s == KILN_OK) {
                done = true;
            } else {
                cr_assert_eq(s, KILN_RESOURCE_EXHAUSTED, "op %d, k %lld: %s", o, (long long)k,
                             kiln_ctx_error_message(cx));
                kiln_ctx_clear_error(cx);
            }
            kiln_scope_end(cx);
            kiln_ctx_trim(cx); /* what the buffer cache keeps is not a leak */
            cr_assert_eq(fa.live_blocks, live, "op %d leaks at k %lld", o, (long long)k);
        }
        cr_assert(done);
        kiln_ctx_release(cx);
        cr_assert_eq(fa.live_blocks, 0);
    }
}

/* ---- take and one_hot ----------------------------------------------------------------- */

Test(indexing, take) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = counting(cx, KILN_SHAPE(3, 4)); /* x[i][j] = 4i + j + 1 */
    kiln_tensor *rows = make_i64(cx, KILN_SHAPE(2), I64S(2, 0));
    expect_i64(cx, kiln_take(cx, x, rows, 0), KILN_SHAPE(2, 4), I64S(9, 10, 11, 12, 1, 2, 3, 4));
    /* A matrix of indices along the last axis; negative indices count from the end, the
     * rest clamp. */
    kiln_tensor *cols = make(cx, KILN_I32, KILN_SHAPE(2, 2), V(-1, 0, 9, -9));
    expect_i64(cx, kiln_take(cx, x, cols, -1), KILN_SHAPE(3, 2, 2),
               I64S(4, 1, 4, 1, 8, 5, 8, 5, 12, 9, 12, 9));
    /* Unsigned indices; a rank-0 index drops the axis. */
    kiln_tensor *u = make(cx, KILN_U8, KILN_SHAPE_SCALAR, V(1));
    expect_i64(cx, kiln_take(cx, x, u, 1), KILN_SHAPE(3), I64S(2, 6, 10));
    /* An i8 index into a dimension longer than i8 can count. */
    double big[300];
    for (int i = 0; i < 300; i++)
        big[i] = i;
    kiln_tensor *long_x = make(cx, KILN_F32, KILN_SHAPE(300), big);
    kiln_tensor *neg = make(cx, KILN_I8, KILN_SHAPE(2), V(-1, 100));
    expect_values(cx, kiln_take(cx, long_x, neg, 0), KILN_SHAPE(2), V(299, 100));
    /* Empty indices. */
    expect_shape(cx, kiln_take(cx, x, make_i64(cx, KILN_SHAPE(0), NULL), 1), KILN_SHAPE(3, 0));
    /* From an axis of size 0: empty indices (of rank 2) give an empty result; others have
     * nothing to take. */
    kiln_tensor *empty = counting(cx, KILN_SHAPE(2, 0, 3));
    expect_shape(cx, kiln_take(cx, empty, make_i64(cx, KILN_SHAPE(4, 0), NULL), 1),
                 KILN_SHAPE(2, 4, 0, 3));
    expect_ok(cx);
    cr_assert_null(kiln_take(cx, empty, rows, 1));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_take: axis 1 of x has size 0; there is nothing");
    /* Errors. */
    cr_assert_null(kiln_take(cx, x, rows, 2));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_take: axis is 2; expected -2 to 1");
    cr_assert_null(kiln_take(cx, x, make(cx, KILN_F32, KILN_SHAPE(1), V(0)), 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_take: indices are f32; expected an integer");
    cr_assert_null(kiln_take(cx, make(cx, KILN_F32, KILN_SHAPE_SCALAR, V(0)), rows, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_take: x is a scalar");
    cr_assert_null(kiln_take(cx, NULL, rows, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_take: x is NULL");
    kiln_ctx_release(cx);
}

Test(indexing, one_hot) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *idx = make(cx, KILN_I32, KILN_SHAPE(2, 2), V(0, 2, -1, 3));
    expect_values(cx, kiln_one_hot(cx, idx, 3, KILN_F32), KILN_SHAPE(2, 2, 3),
                  V(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0));
    kiln_tensor *b = kiln_one_hot(cx, make(cx, KILN_U8, KILN_SHAPE(2), V(1, 0)), 2, KILN_BOOL);
    expect_values(cx, b, KILN_SHAPE(2, 2), V(0, 1, 1, 0));
    cr_assert_eq(kiln_tensor_dtype(b), KILN_BOOL);
    /* A depth beyond the index dtype's range; rank-0 indices; depth 0. */
    kiln_tensor *h = kiln_one_hot(cx, make(cx, KILN_I8, KILN_SHAPE_SCALAR, V(127)), 300, KILN_I64);
    expect_shape(cx, h, KILN_SHAPE(300));
    for (int i = 0; i < 300; i++)
        cr_assert_eq(kiln_tensor_item(cx, h, i), i == 127 ? 1.0 : 0.0);
    expect_shape(cx, kiln_one_hot(cx, idx, 0, KILN_F16), KILN_SHAPE(2, 2, 0));
    expect_ok(cx);
    cr_assert_null(kiln_one_hot(cx, idx, -1, KILN_F32));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_one_hot: depth is -1");
    cr_assert_null(kiln_one_hot(cx, make(cx, KILN_F32, KILN_SHAPE(1), V(0)), 2, KILN_F32));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_one_hot: indices are f32; expected an integer");
    cr_assert_null(kiln_one_hot(cx, idx, 2, (kiln_dtype)99));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_one_hot: dtype 99");
    cr_assert_null(kiln_one_hot(cx, NULL, 2, KILN_F32));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_one_hot: indices is NULL");
    kiln_ctx_release(cx);
}

const kiln_op_coverage kiln_cover_indexing[] = {
    {KILN_OP_GATHER, "indexing/gather_conformance"},
    {KILN_OP_SCATTER, "indexing/scatter_conformance"},
    {KILN_OP_SORT, "indexing/sort_conformance"},
    {KILN_OP_COUNT, NULL},
};
