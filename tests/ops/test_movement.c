/* SPDX-License-Identifier: Apache-2.0 */
/* The data-movement ops: broadcast_in_dim, reshape, transpose, reverse, slice,
 * dynamic_slice, dynamic_update_slice, pad, concatenate, and the numpy conveniences.
 * Hand-checked values (the StableHLO interpreter's conformance cases among them), every
 * dtype, empty and rank-0 tensors, error paths, and larger shapes against a naive
 * reference that maps each result element to its source element. */
#include <stdint.h>

#include "failing_allocator.h"
#include "op_cases.h"
#include "ops/infer.h"
#include "test_util.h"

const kiln_op_coverage kiln_cover_movement[] = {
    {KILN_OP_BROADCAST_IN_DIM, "movement/broadcast_in_dim_conformance"},
    {KILN_OP_RESHAPE, "movement/reshape_conformance"},
    {KILN_OP_TRANSPOSE, "movement/transpose_conformance"},
    {KILN_OP_REVERSE, "movement/reverse_conformance"},
    {KILN_OP_SLICE, "movement/slice_conformance"},
    {KILN_OP_DYNAMIC_SLICE, "movement/dynamic_slice_conformance"},
    {KILN_OP_DYNAMIC_UPDATE_SLICE, "movement/dynamic_update_slice_conformance"},
    {KILN_OP_PAD, "movement/pad_conformance"},
    {KILN_OP_CONCATENATE, "movement/concatenate_conformance"},
    {KILN_OP_COUNT, NULL},
};

/* ---- helpers ------------------------------------------------------------------------- */

static kiln_tensor *i64s(kiln_ctx *cx, kiln_shape shape, const int64_t *v) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    kiln_tensor *t = kiln_tensor_from_host(cx, KILN_I64, shape, v, (size_t)n * sizeof *v);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

static kiln_tensor *i32s(kiln_ctx *cx, kiln_shape shape, const int32_t *v) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    kiln_tensor *t = kiln_tensor_from_host(cx, KILN_I32, shape, v, (size_t)n * sizeof *v);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

/* A rank-0 integer tensor of dtype dt holding v (which must fit). */
static kiln_tensor *index_scalar(kiln_ctx *cx, kiln_dtype dt, int64_t v) {
    kiln_tensor *t = kiln_full_int(cx, dt, KILN_SHAPE_SCALAR, v);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

static void expect_shape(const kiln_tensor *t, kiln_shape want) {
    cr_assert_not_null(t);
    const kiln_shape *s = kiln_tensor_shape(t);
    char a[256], b[256];
    kiln_shape_format(s, a, sizeof a);
    kiln_shape_format(&want, b, sizeof b);
    cr_assert(kiln_shape_equal(s, &want), "shape %s, expected %s", a, b);
}

/* t has dtype i64, shape `shape` and the values v. */
static void expect_i64(kiln_ctx *cx, const kiln_tensor *t, kiln_shape shape, const int64_t *v) {
    expect_ok(cx);
    expect_shape(t, shape);
    cr_assert_eq(kiln_tensor_dtype(t), KILN_I64);
    const int64_t *d = kiln_tensor_data(t);
    for (int64_t i = 0; i < kiln_tensor_numel(t); i++)
        cr_assert_eq(d[i], v[i], "element %lld is %lld, expected %lld", (long long)i,
                     (long long)d[i], (long long)v[i]);
}

static void expect_i32(kiln_ctx *cx, const kiln_tensor *t, kiln_shape shape, const int32_t *v) {
    expect_ok(cx);
    expect_shape(t, shape);
    cr_assert_eq(kiln_tensor_dtype(t), KILN_I32);
    const int32_t *d = kiln_tensor_data(t);
    for (int64_t i = 0; i < kiln_tensor_numel(t); i++)
        cr_assert_eq(d[i], v[i], "element %lld is %d, expected %d", (long long)i, d[i], v[i]);
}

/* 0, 1, 2, ... as i64 in the given shape. */
static kiln_tensor *arange_i64(kiln_ctx *cx, kiln_shape shape) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    int64_t buf[4096];
    cr_assert(n <= 4096);
    for (int64_t i = 0; i < n; i++)
        buf[i] = i;
    return i64s(cx, shape, buf);
}

/* Byte b of element i of the pattern tensors: distinct across neighbouring elements for
 * every element size; 0/1 for bool. */
static uint8_t pattern_byte(kiln_dtype dt, int64_t i, size_t b) {
    if (dt == KILN_BOOL) return (uint8_t)((i * 7 + 3) % 5 % 2);
    uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ull + b * 0x632BE59BD9B4E019ull;
    return (uint8_t)(h >> 56 ^ (uint64_t)i);
}

/* A tensor of dtype dt whose element i has the bytes pattern_byte(dt, i, ...). */
static kiln_tensor *pattern(kiln_ctx *cx, kiln_dtype dt, kiln_shape shape) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    size_t es = kiln_dtype_size(dt);
    static uint8_t buf[1 << 17];
    cr_assert((size_t)n * es <= sizeof buf);
    for (int64_t i = 0; i < n; i++)
        for (size_t b = 0; b < es; b++)
            buf[(size_t)i * es + b] = pattern_byte(dt, i, b);
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, shape, buf, (size_t)n * es);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

static void unravel(const kiln_shape *s, int64_t flat, int64_t *idx) {
    for (int32_t d = s->rank - 1; d >= 0; d--) {
        idx[d] = flat % s->dims[d];
        flat /= s->dims[d];
    }
}

static int64_t ravel(const kiln_shape *s, const int64_t *idx) {
    int64_t flat = 0;
    for (int32_t d = 0; d < s->rank; d++)
        flat = flat * s->dims[d] + idx[d];
    return flat;
}

/* The naive reference: the flat index of the operand element that result element `out`
 * holds, or -1 for the padding value. */
typedef int64_t (*ref_fn)(const kiln_shape *xs, const kiln_shape *rs, const int64_t *out,
                          const void *ctx);

/* r (from a pattern operand x of dtype dt) matches the reference element by element, the
 * padding value being the bytes at pad (may be NULL when ref never returns -1). */
static void expect_ref(const kiln_tensor *r, const kiln_tensor *x, ref_fn ref, const void *ctx,
                       const void *pad, const char *what) {
    cr_assert_not_null(r, "%s", what);
    cr_assert_eq(kiln_tensor_dtype(r), kiln_tensor_dtype(x), "%s", what);
    size_t es = kiln_dtype_size(kiln_tensor_dtype(x));
    const uint8_t *rd = kiln_tensor_data(r), *xd = kiln_tensor_data(x);
    const kiln_shape *rs = kiln_tensor_shape(r), *xs = kiln_tensor_shape(x);
    int64_t idx[KILN_MAX_RANK];
    for (int64_t i = 0; i < kiln_tensor_numel(r); i++) {
        unravel(rs, i, idx);
        int64_t src = ref(xs, rs, idx, ctx);
        const uint8_t *want = src < 0 ? pad : xd + (size_t)src * es;
        cr_assert(memcmp(rd + (size_t)i * es, want, es) == 0,
                  "%s (%s): result element %lld differs (source %lld)", what,
                  kiln_dtype_name(kiln_tensor_dtype(x)), (long long)i, (long long)src);
    }
}

static int64_t ref_transpose(const kiln_shape *xs, const kiln_shape *rs, const int64_t *out,
                             const void *ctx) {
    const kiln_dims *perm = ctx;
    int64_t src[KILN_MAX_RANK];
    for (int32_t k = 0; k < rs->rank; k++)
        src[perm->v[k]] = out[k];
    return ravel(xs, src);
}

static int64_t ref_reverse(const kiln_shape *xs, const kiln_shape *rs, const int64_t *out,
                           const void *ctx) {
    const kiln_dims *dims = ctx;
    int64_t src[KILN_MAX_RANK];
    for (int32_t k = 0; k < rs->rank; k++)
        src[k] = out[k];
    for (int32_t i = 0; i < dims->count; i++)
        src[dims->v[i]] = xs->dims[dims->v[i]] - 1 - out[dims->v[i]];
    return ravel(xs, src);
}

static int64_t ref_broadcast(const kiln_shape *xs, const kiln_shape *rs, const int64_t *out,
                             const void *ctx) {
    (void)rs;
    const kiln_dims *dims = ctx;
    int64_t src[KILN_MAX_RANK];
    for (int32_t d = 0; d < xs->rank; d++)
        src[d] = xs->dims[d] == 1 ? 0 : out[dims->v[d]];
    return ravel(xs, src);
}

typedef struct slice_args {
    kiln_dims start, limit, strides;
} slice_args;

static int64_t ref_slice(const kiln_shape *xs, const kiln_shape *rs, const int64_t *out,
                         const void *ctx) {
    const slice_args *a = ctx;
    int64_t src[KILN_MAX_RANK];
    for (int32_t k = 0; k < rs->rank; k++)
        src[k] = a->start.v[k] + out[k] * (a->strides.count ? a->strides.v[k] : 1);
    return ravel(xs, src);
}

typedef struct pad_args {
    kiln_dims low, high, interior;
} pad_args;

static int64_t ref_pad(const kiln_shape *xs, const kiln_shape *rs, const int64_t *out,
                       const void *ctx) {
    const pad_args *a = ctx;
    int64_t src[KILN_MAX_RANK];
    for (int32_t k = 0; k < rs->rank; k++) {
        int64_t p = out[k] - a->low.v[k], step = a->interior.v[k] + 1;
        if (p < 0 || p % step != 0 || p / step >= xs->dims[k]) return -1;
        src[k] = p / step;
    }
    return ravel(xs, src);
}

static int64_t ref_identity(const kiln_shape *xs, const kiln_shape *rs, const int64_t *out,
                            const void *ctx) {
    (void)xs, (void)ctx;
    return ravel(rs, out);
}

/* ---- broadcast_in_dim ---------------------------------------------------------------- */

Test(movement, broadcast_in_dim_conformance) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = i64s(cx, KILN_SHAPE(3, 1), (int64_t[]){1, 2, 3});
    kiln_tensor *r = kiln_broadcast_in_dim(cx, x, KILN_SHAPE(3, 2, 2), KILN_DIMS(0, 2));
    expect_i64(cx, r, KILN_SHAPE(3, 2, 2), (int64_t[]){1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
    kiln_ctx_release(cx);
}

Test(movement, broadcast_in_dim_cases) {
    kiln_ctx *cx = test_ctx();
    /* dims need not be sorted: x's dimension 0 becomes dimension 1 (a transposition) */
    kiln_tensor *x = i64s(cx, KILN_SHAPE(3, 2), (int64_t[]){1, 2, 3, 4, 5, 6});
    kiln_tensor *r = kiln_broadcast_in_dim(cx, x, KILN_SHAPE(2, 3), KILN_DIMS(1, 0));
    expect_i64(cx, r, KILN_SHAPE(2, 3), (int64_t[]){1, 3, 5, 2, 4, 6});
    /* a row along a new outer dimension, a column along a new inner one */
    kiln_tensor *row = i64s(cx, KILN_SHAPE(3), (int64_t[]){7, 8, 9});
    r = kiln_broadcast_in_dim(cx, row, KILN_SHAPE(2, 3), KILN_DIMS(1));
    expect_i64(cx, r, KILN_SHAPE(2, 3), (int64_t[]){7, 8, 9, 7, 8, 9});
    r = kiln_broadcast_in_dim(cx, row, KILN_SHAPE(3, 2), KILN_DIMS(0));
    expect_i64(cx, r, KILN_SHAPE(3, 2), (int64_t[]){7, 7, 8, 8, 9, 9});
    /* rank 0 to rank 0, to rank 2, and to an empty shape */
    kiln_tensor *s = index_scalar(cx, KILN_I64, -4);
    expect_i64(cx, kiln_broadcast_in_dim(cx, s, KILN_SHAPE_SCALAR, KILN_DIMS_NONE),
               KILN_SHAPE_SCALAR, (int64_t[]){-4});
    expect_i64(cx, kiln_broadcast_in_dim(cx, s, KILN_SHAPE(2, 2), KILN_DIMS_NONE), KILN_SHAPE(2, 2),
               (int64_t[]){-4, -4, -4, -4});
    r = kiln_broadcast_in_dim(cx, row, KILN_SHAPE(0, 3), KILN_DIMS(1));
    expect_ok(cx);
    expect_shape(r, KILN_SHAPE(0, 3));
    /* an empty operand broadcast along a new dimension */
    kiln_tensor *e = kiln_zeros(cx, KILN_F32, KILN_SHAPE(0));
    expect_shape(kiln_broadcast_in_dim(cx, e, KILN_SHAPE(5, 0), KILN_DIMS(1)), KILN_SHAPE(5, 0));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(movement, broadcast_in_dim_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = arange_i64(cx, KILN_SHAPE(3, 1));
    cr_assert_null(kiln_broadcast_in_dim(cx, x, KILN_SHAPE(3, 2), KILN_DIMS(0)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_broadcast_in_dim: dims has 1 entries; expected 2 (the rank of operand 1)");
    cr_assert_null(kiln_broadcast_in_dim(cx, x, KILN_SHAPE(3, 2), KILN_DIMS(0, 2)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "dims[1] is 2; expected 0 to 1");
    cr_assert_null(kiln_broadcast_in_dim(cx, x, KILN_SHAPE(3, 3), KILN_DIMS(0, 0)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "dims repeats dimension 0");
    cr_assert_null(kiln_broadcast_in_dim(cx, x, KILN_SHAPE(4, 2), KILN_DIMS(0, 1)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "operand 1 dimension 0 has size 3; expected 1 or 4 (dimension 0 of shape [4,2])");
    cr_assert_null(kiln_broadcast_in_dim(cx, x, KILN_SHAPE(3, -2), KILN_DIMS(0, 1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "shape [3,-2] has a negative dimension");
    cr_assert_null(kiln_broadcast_in_dim(cx, x, (kiln_shape){.rank = 17}, KILN_DIMS(0, 1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "shape has rank 17");
    /* a NULL operand: reported once, the first error kept */
    cr_assert_null(kiln_broadcast_in_dim(cx, NULL, KILN_SHAPE(3), KILN_DIMS(0)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_broadcast_in_dim: operand 1 is NULL");
    kiln_ctx_release(cx);
}

Test(movement, broadcast_to_is_numpy_broadcasting) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *row = i64s(cx, KILN_SHAPE(3), (int64_t[]){1, 2, 3});
    expect_i64(cx, kiln_broadcast_to(cx, row, KILN_SHAPE(2, 3)), KILN_SHAPE(2, 3),
               (int64_t[]){1, 2, 3, 1, 2, 3});
    kiln_tensor *col = i64s(cx, KILN_SHAPE(2, 1), (int64_t[]){4, 5});
    expect_i64(cx, kiln_broadcast_to(cx, col, KILN_SHAPE(2, 2, 3)), KILN_SHAPE(2, 2, 3),
               (int64_t[]){4, 4, 4, 5, 5, 5, 4, 4, 4, 5, 5, 5});
    expect_i64(cx, kiln_broadcast_to(cx, index_scalar(cx, KILN_I64, 9), KILN_SHAPE(2)),
               KILN_SHAPE(2), (int64_t[]){9, 9});
    cr_assert_null(kiln_broadcast_to(cx, col, KILN_SHAPE(3)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_broadcast_to: operand 1 has shape [2,1], of higher rank than shape [3]");
    cr_assert_null(kiln_broadcast_to(cx, row, KILN_SHAPE(2, 4)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_broadcast_to: operand 1 dimension 0 has size 3; expected 1 or 4");
    cr_assert_null(kiln_broadcast_to(cx, NULL, KILN_SHAPE(2, 4)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_broadcast_to: operand 1 is NULL");
    kiln_ctx_release(cx);
}

/* ---- reshape --------------------------------------------------------------------------- */

Test(movement, reshape_conformance) {
    kiln_ctx *cx = test_ctx();
    const int32_t v[] = {1, 2, 3, 4, 5, 6};
    expect_i32(cx, kiln_reshape(cx, i32s(cx, KILN_SHAPE(1, 6), v), KILN_SHAPE(6)), KILN_SHAPE(6),
               v);
    expect_i32(cx, kiln_reshape(cx, i32s(cx, KILN_SHAPE(6), v), KILN_SHAPE(2, 3)), KILN_SHAPE(2, 3),
               v);
    expect_i32(cx, kiln_reshape(cx, i32s(cx, KILN_SHAPE(2, 3), v), KILN_SHAPE(3, 2)),
               KILN_SHAPE(3, 2), v);
    expect_i32(cx, kiln_reshape(cx, i32s(cx, KILN_SHAPE(3, 2), v), KILN_SHAPE(6)), KILN_SHAPE(6),
               v);
    kiln_ctx_release(cx);
}

Test(movement, reshape_infers_one_minus_one_dimension) {
    kiln_ctx *cx = test_ctx();
    const int32_t v[] = {1, 2, 3, 4, 5, 6};
    kiln_tensor *x = i32s(cx, KILN_SHAPE(2, 3), v);
    expect_i32(cx, kiln_reshape(cx, x, KILN_SHAPE(-1)), KILN_SHAPE(6), v);
    expect_i32(cx, kiln_reshape(cx, x, KILN_SHAPE(3, -1)), KILN_SHAPE(3, 2), v);
    expect_i32(cx, kiln_reshape(cx, x, KILN_SHAPE(1, -1, 1, 2)), KILN_SHAPE(1, 3, 1, 2), v);
    /* rank 0 <-> [1] */
    kiln_tensor *s = kiln_reshape(cx, i32s(cx, KILN_SHAPE(1), v), KILN_SHAPE_SCALAR);
    expect_i32(cx, s, KILN_SHAPE_SCALAR, v);
    expect_i32(cx, kiln_reshape(cx, s, KILN_SHAPE(-1, 1)), KILN_SHAPE(1, 1), v);
    /* empty: -1 resolves against the known non-zero sizes */
    kiln_tensor *e = kiln_zeros(cx, KILN_F16, KILN_SHAPE(0, 3));
    expect_shape(kiln_reshape(cx, e, KILN_SHAPE(3, -1)), KILN_SHAPE(3, 0));
    expect_shape(kiln_reshape(cx, e, KILN_SHAPE(2, 0, 5)), KILN_SHAPE(2, 0, 5));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(movement, reshape_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = arange_i64(cx, KILN_SHAPE(2, 3));
    cr_assert_null(kiln_reshape(cx, x, KILN_SHAPE(4, 2)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_reshape: operand 1 has shape [2,3] (6 elements); shape [4,2] has 8");
    cr_assert_null(kiln_reshape(cx, x, KILN_SHAPE(-1, -1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reshape: shape has more than one -1");
    cr_assert_null(kiln_reshape(cx, x, KILN_SHAPE(4, -1)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_reshape: cannot reshape operand 1 of shape [2,3] (6 elements) into shape "
                 "[4,-1]");
    cr_assert_null(kiln_reshape(cx, kiln_zeros(cx, KILN_U8, KILN_SHAPE(0)), KILN_SHAPE(0, -1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "into shape [0,-1]");
    cr_assert_null(kiln_reshape(cx, x, KILN_SHAPE(-2, -3)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "shape [-2,-3] has a negative dimension");
    cr_assert_null(kiln_reshape(cx, x, KILN_SHAPE(-1, -3)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "negative dimension");
    cr_assert_null(kiln_reshape(cx, x, KILN_SHAPE(INT64_MAX, 4, 0, -1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "cannot reshape");
    cr_assert_null(kiln_reshape(cx, x, KILN_SHAPE(INT64_MAX, 4)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "has too many elements");
    cr_assert_null(kiln_reshape(NULL, x, KILN_SHAPE(6)));
    cr_assert_null(kiln_reshape(cx, NULL, KILN_SHAPE(6)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reshape: operand 1 is NULL");
    kiln_ctx_release(cx);
}

/* ---- transpose ------------------------------------------------------------------------- */

Test(movement, transpose_conformance) {
    kiln_ctx *cx = test_ctx();
    const int32_t v[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    kiln_tensor *x = i32s(cx, KILN_SHAPE(2, 3, 2), v);
    expect_i32(cx, kiln_transpose(cx, x, KILN_DIMS(1, 0, 2)), KILN_SHAPE(3, 2, 2),
               (int32_t[]){1, 2, 7, 8, 3, 4, 9, 10, 5, 6, 11, 12});
    kiln_tensor *t = kiln_transpose(cx, x, KILN_DIMS(2, 1, 0));
    expect_i32(cx, t, KILN_SHAPE(2, 3, 2), (int32_t[]){1, 7, 3, 9, 5, 11, 2, 8, 4, 10, 6, 12});
    expect_i32(cx, kiln_transpose(cx, t, KILN_DIMS(2, 1, 0)), KILN_SHAPE(2, 3, 2), v);
    kiln_ctx_release(cx);
}

Test(movement, transpose_ranks_0_and_1_and_empty) {
    kiln_ctx *cx = test_ctx();
    expect_i64(cx, kiln_transpose(cx, index_scalar(cx, KILN_I64, 5), KILN_DIMS_NONE),
               KILN_SHAPE_SCALAR, (int64_t[]){5});
    expect_i64(cx, kiln_transpose(cx, arange_i64(cx, KILN_SHAPE(4)), KILN_DIMS(0)), KILN_SHAPE(4),
               (int64_t[]){0, 1, 2, 3});
    expect_i64(cx, kiln_transpose(cx, arange_i64(cx, KILN_SHAPE(2, 3)), KILN_DIMS(1, 0)),
               KILN_SHAPE(3, 2), (int64_t[]){0, 3, 1, 4, 2, 5});
    expect_shape(
        kiln_transpose(cx, kiln_zeros(cx, KILN_BF16, KILN_SHAPE(0, 4, 2)), KILN_DIMS(2, 0, 1)),
        KILN_SHAPE(2, 0, 4));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(movement, transpose_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = arange_i64(cx, KILN_SHAPE(2, 3));
    cr_assert_null(kiln_transpose(cx, x, KILN_DIMS(0)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_transpose: perm has 1 entries; expected 2 (the rank of operand 1)");
    cr_assert_null(kiln_transpose(cx, x, KILN_DIMS(1, 1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_transpose: perm repeats dimension 1");
    cr_assert_null(kiln_transpose(cx, x, KILN_DIMS(0, 2)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "perm[1] is 2; expected 0 to 1");
    cr_assert_null(kiln_transpose(cx, x, KILN_DIMS(-1, 0)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "perm[0] is -1");
    cr_assert_null(kiln_transpose(cx, x, (kiln_dims){.count = 40}));
    expect_error(cx, KILN_INVALID_ARGUMENT, "perm has 40 entries");
    kiln_ctx_release(cx);
}

/* ---- reverse --------------------------------------------------------------------------- */

Test(movement, reverse_conformance) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = i64s(cx, KILN_SHAPE(3, 2), (int64_t[]){1, 2, 3, 4, 5, 6});
    expect_i64(cx, kiln_reverse(cx, x, KILN_DIMS(1, 0)), KILN_SHAPE(3, 2),
               (int64_t[]){6, 5, 4, 3, 2, 1});
    expect_i64(cx, kiln_reverse(cx, x, KILN_DIMS(0)), KILN_SHAPE(3, 2),
               (int64_t[]){5, 6, 3, 4, 1, 2});
    expect_i64(cx, kiln_reverse(cx, x, KILN_DIMS(1)), KILN_SHAPE(3, 2),
               (int64_t[]){2, 1, 4, 3, 6, 5});
    kiln_ctx_release(cx);
}

Test(movement, reverse_cases_and_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = arange_i64(cx, KILN_SHAPE(2, 3));
    expect_i64(cx, kiln_reverse(cx, x, KILN_DIMS_NONE), KILN_SHAPE(2, 3),
               (int64_t[]){0, 1, 2, 3, 4, 5});
    expect_i64(cx, kiln_reverse(cx, index_scalar(cx, KILN_I64, 3), KILN_DIMS_NONE),
               KILN_SHAPE_SCALAR, (int64_t[]){3});
    expect_shape(kiln_reverse(cx, kiln_zeros(cx, KILN_I8, KILN_SHAPE(3, 0)), KILN_DIMS(0, 1)),
                 KILN_SHAPE(3, 0));
    expect_ok(cx);
    cr_assert_null(kiln_reverse(cx, x, KILN_DIMS(0, 0)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reverse: dims repeats dimension 0");
    cr_assert_null(kiln_reverse(cx, x, KILN_DIMS(2)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_reverse: dims[0] is 2; expected 0 to 1");
    kiln_ctx_release(cx);
}

/* ---- slice ----------------------------------------------------------------------------- */

Test(movement, slice_conformance) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = i64s(cx, KILN_SHAPE(3, 6),
                          (int64_t[]){0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1});
    expect_i64(cx, kiln_slice(cx, x, KILN_DIMS(0, 2), KILN_DIMS(3, 6), KILN_DIMS(2, 3)),
               KILN_SHAPE(2, 2), (int64_t[]){1, 1, 1, 1});
    kiln_ctx_release(cx);
}

Test(movement, slice_cases) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = arange_i64(cx, KILN_SHAPE(3, 4));
    /* strides omitted, or 0 entries: 1 */
    expect_i64(cx, kiln_slice(cx, x, KILN_DIMS(1, 1), KILN_DIMS(3, 3), KILN_DIMS_NONE),
               KILN_SHAPE(2, 2), (int64_t[]){5, 6, 9, 10});
    expect_i64(cx, kiln_slice(cx, x, KILN_DIMS(0, 1), KILN_DIMS(3, 4), KILN_DIMS(0, 2)),
               KILN_SHAPE(3, 2), (int64_t[]){1, 3, 5, 7, 9, 11});
    /* a stride that does not divide the extent rounds the size up */
    expect_i64(cx, kiln_slice(cx, x, KILN_DIMS(0, 0), KILN_DIMS(3, 4), KILN_DIMS(2, 3)),
               KILN_SHAPE(2, 2), (int64_t[]){0, 3, 8, 11});
    /* empty results, whole tensor, rank 0 */
    expect_shape(kiln_slice(cx, x, KILN_DIMS(1, 4), KILN_DIMS(3, 4), KILN_DIMS_NONE),
                 KILN_SHAPE(2, 0));
    expect_shape(kiln_slice(cx, x, KILN_DIMS(2, 0), KILN_DIMS(2, 4), KILN_DIMS(5, 5)),
                 KILN_SHAPE(0, 1));
    expect_i64(cx, kiln_slice(cx, x, KILN_DIMS(0, 0), KILN_DIMS(3, 4), KILN_DIMS_NONE),
               KILN_SHAPE(3, 4), (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    expect_i64(cx,
               kiln_slice(cx, index_scalar(cx, KILN_I64, 8), KILN_DIMS_NONE, KILN_DIMS_NONE,
                          KILN_DIMS_NONE),
               KILN_SHAPE_SCALAR, (int64_t[]){8});
    kiln_ctx_release(cx);
}

Test(movement, slice_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = arange_i64(cx, KILN_SHAPE(3, 4));
    cr_assert_null(kiln_slice(cx, x, KILN_DIMS(0), KILN_DIMS(3, 4), KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_slice: start has 1 entries; expected 2 (the rank of operand 1)");
    cr_assert_null(kiln_slice(cx, x, KILN_DIMS(0, 0), KILN_DIMS(3), KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT, "limit has 1 entries");
    cr_assert_null(kiln_slice(cx, x, KILN_DIMS(0, 0), KILN_DIMS(3, 4), KILN_DIMS(1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "strides has 1 entries");
    cr_assert_null(kiln_slice(cx, x, KILN_DIMS(0, -1), KILN_DIMS(3, 4), KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_slice: start[1] is -1; expected 0 to 4");
    cr_assert_null(kiln_slice(cx, x, KILN_DIMS(0, 5), KILN_DIMS(3, 4), KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT, "start[1] is 5; expected 0 to 4");
    cr_assert_null(kiln_slice(cx, x, KILN_DIMS(2, 0), KILN_DIMS(1, 4), KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT, "limit[0] is 1; expected 2 to 3");
    cr_assert_null(kiln_slice(cx, x, KILN_DIMS(0, 0), KILN_DIMS(3, 5), KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT, "limit[1] is 5; expected 0 to 4");
    cr_assert_null(kiln_slice(cx, x, KILN_DIMS(0, 0), KILN_DIMS(3, 4), KILN_DIMS(1, -2)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "strides[1] is -2; expected a positive value");
    cr_assert_null(kiln_slice(cx, NULL, KILN_DIMS(0, 0), KILN_DIMS(3, 4), KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_slice: operand 1 is NULL");
    kiln_ctx_release(cx);
}

/* ---- dynamic_slice ---------------------------------------------------------------------- */

Test(movement, dynamic_slice_conformance) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = i64s(cx, KILN_SHAPE(3, 3), (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1});
    kiln_tensor *starts[] = {index_scalar(cx, KILN_I64, 3), index_scalar(cx, KILN_I64, 3)};
    expect_i64(cx, kiln_dynamic_slice(cx, x, starts, KILN_DIMS(3, 3)), KILN_SHAPE(3, 3),
               (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1});
    kiln_ctx_release(cx);
}

Test(movement, dynamic_slice_clamps_start_indices_of_every_integer_dtype) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = arange_i64(cx, KILN_SHAPE(4, 5));
    const kiln_dtype dts[] = {KILN_I8, KILN_I16, KILN_I32, KILN_I64,
                              KILN_U8, KILN_U16, KILN_U32, KILN_U64};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        kiln_dtype dt = dts[i];
        kiln_tensor *s[2] = {index_scalar(cx, dt, 1), index_scalar(cx, dt, 2)};
        expect_i64(cx, kiln_dynamic_slice(cx, x, s, KILN_DIMS(2, 3)), KILN_SHAPE(2, 3),
                   (int64_t[]){7, 8, 9, 12, 13, 14});
        /* past the end: clamped to dim - size */
        s[0] = index_scalar(cx, dt, 100), s[1] = index_scalar(cx, dt, 4);
        expect_i64(cx, kiln_dynamic_slice(cx, x, s, KILN_DIMS(2, 3)), KILN_SHAPE(2, 3),
                   (int64_t[]){12, 13, 14, 17, 18, 19});
        /* the largest value of the dtype (little-endian bytes) */
        size_t es = kiln_dtype_size(dt);
        uint64_t bits = kiln_dtype_is_signed(dt) ? (UINT64_C(1) << (8 * es - 1)) - 1 : UINT64_MAX;
        kiln_tensor *b = kiln_tensor_from_host(cx, dt, KILN_SHAPE_SCALAR, &bits, es);
        cr_assert_not_null(b, "%s", kiln_ctx_error_message(cx));
        s[0] = b, s[1] = b;
        expect_i64(cx, kiln_dynamic_slice(cx, x, s, KILN_DIMS(1, 1)), KILN_SHAPE(1, 1),
                   (int64_t[]){19});
        if (kiln_dtype_is_signed(dt)) { /* negative: clamped to 0, the smallest value too */
            s[0] = index_scalar(cx, dt, -1);
            s[1] = index_scalar(cx, dt, dt == KILN_I8 ? INT8_MIN : -1000);
            expect_i64(cx, kiln_dynamic_slice(cx, x, s, KILN_DIMS(2, 2)), KILN_SHAPE(2, 2),
                       (int64_t[]){0, 1, 5, 6});
        }
    }
    kiln_tensor *s64[2] = {index_scalar(cx, KILN_I64, INT64_MIN),
                           index_scalar(cx, KILN_I64, INT64_MAX)};
    expect_i64(cx, kiln_dynamic_slice(cx, x, s64, KILN_DIMS(1, 2)), KILN_SHAPE(1, 2),
               (int64_t[]){3, 4});
    /* size 0 and full size; rank 0 needs no starts */
    expect_shape(kiln_dynamic_slice(cx, x, s64, KILN_DIMS(0, 2)), KILN_SHAPE(0, 2));
    expect_i64(cx, kiln_dynamic_slice(cx, x, s64, KILN_DIMS(4, 5)), KILN_SHAPE(4, 5),
               kiln_tensor_data(x));
    expect_i64(cx, kiln_dynamic_slice(cx, index_scalar(cx, KILN_I64, 6), NULL, KILN_DIMS_NONE),
               KILN_SHAPE_SCALAR, (int64_t[]){6});
    kiln_ctx_release(cx);
}

Test(movement, dynamic_slice_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = arange_i64(cx, KILN_SHAPE(4, 5));
    kiln_tensor *i0 = index_scalar(cx, KILN_I32, 0);
    kiln_tensor *s[2] = {i0, kiln_scalar(cx, 1, KILN_F32)};
    cr_assert_null(kiln_dynamic_slice(cx, x, s, KILN_DIMS(1, 1)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_dynamic_slice: start index 1 (operand 3) is f32[]; expected a rank-0 "
                 "integer tensor");
    s[1] = kiln_scalar(cx, 1, KILN_BOOL);
    cr_assert_null(kiln_dynamic_slice(cx, x, s, KILN_DIMS(1, 1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "start index 1 (operand 3) is i1[]");
    s[1] = kiln_zeros(cx, KILN_I32, KILN_SHAPE(1));
    cr_assert_null(kiln_dynamic_slice(cx, x, s, KILN_DIMS(1, 1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "start index 1 (operand 3) is i32[1]");
    s[1] = index_scalar(cx, KILN_I64, 0);
    cr_assert_null(kiln_dynamic_slice(cx, x, s, KILN_DIMS(1, 1)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "start index 1 (operand 3) has dtype i64; expected i32, the dtype of start "
                 "index 0");
    s[1] = i0;
    cr_assert_null(kiln_dynamic_slice(cx, x, s, KILN_DIMS(1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "sizes has 1 entries; expected 2");
    cr_assert_null(kiln_dynamic_slice(cx, x, s, KILN_DIMS(5, 1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_dynamic_slice: sizes[0] is 5; expected 0 to 4");
    cr_assert_null(kiln_dynamic_slice(cx, x, s, KILN_DIMS(1, -1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "sizes[1] is -1");
    cr_assert_null(kiln_dynamic_slice(cx, x, NULL, KILN_DIMS(1, 1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_dynamic_slice: starts is NULL");
    s[1] = NULL;
    cr_assert_null(kiln_dynamic_slice(cx, x, s, KILN_DIMS(1, 1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_dynamic_slice: operand 3 is NULL");
    cr_assert_null(kiln_dynamic_slice(cx, NULL, s, KILN_DIMS(1, 1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_dynamic_slice: operand 1 is NULL");
    cr_assert_null(kiln_dynamic_slice(NULL, x, s, KILN_DIMS(1, 1)));
    kiln_ctx_release(cx);
}

/* ---- dynamic_update_slice -------------------------------------------------------------- */

Test(movement, dynamic_update_slice_conformance) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x =
        i64s(cx, KILN_SHAPE(4, 4), (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 2, 2, 2});
    kiln_tensor *u = i64s(cx, KILN_SHAPE(2, 3), (int64_t[]){1, 1, 1, 1, 1, 1});
    kiln_tensor *s[] = {index_scalar(cx, KILN_I64, 4), index_scalar(cx, KILN_I64, 4)};
    expect_i64(cx, kiln_dynamic_update_slice(cx, x, u, s), KILN_SHAPE(4, 4),
               (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
    kiln_ctx_release(cx);
}

Test(movement, dynamic_update_slice_cases) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = arange_i64(cx, KILN_SHAPE(3, 4));
    kiln_tensor *u = i64s(cx, KILN_SHAPE(2, 2), (int64_t[]){-1, -2, -3, -4});
    kiln_tensor *s[] = {index_scalar(cx, KILN_U8, 1), index_scalar(cx, KILN_U8, 1)};
    expect_i64(cx, kiln_dynamic_update_slice(cx, x, u, s), KILN_SHAPE(3, 4),
               (int64_t[]){0, 1, 2, 3, 4, -1, -2, 7, 8, -3, -4, 11});
    /* negative starts clamp to 0; the operand is unchanged */
    kiln_tensor *n[] = {index_scalar(cx, KILN_I16, -7), index_scalar(cx, KILN_I16, 3)};
    expect_i64(cx, kiln_dynamic_update_slice(cx, x, u, n), KILN_SHAPE(3, 4),
               (int64_t[]){0, 1, -1, -2, 4, 5, -3, -4, 8, 9, 10, 11});
    expect_i64(cx, x, KILN_SHAPE(3, 4), (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    /* an empty update, a full update, rank 0 */
    expect_i64(cx, kiln_dynamic_update_slice(cx, x, kiln_zeros(cx, KILN_I64, KILN_SHAPE(0, 4)), n),
               KILN_SHAPE(3, 4), kiln_tensor_data(x));
    kiln_tensor *full = arange_i64(cx, KILN_SHAPE(3, 4));
    expect_i64(cx,
               kiln_dynamic_update_slice(cx, kiln_zeros(cx, KILN_I64, KILN_SHAPE(3, 4)), full, n),
               KILN_SHAPE(3, 4), kiln_tensor_data(full));
    expect_i64(cx,
               kiln_dynamic_update_slice(cx, index_scalar(cx, KILN_I64, 1),
                                         index_scalar(cx, KILN_I64, 2), NULL),
               KILN_SHAPE_SCALAR, (int64_t[]){2});
    expect_shape(kiln_dynamic_update_slice(cx, kiln_zeros(cx, KILN_I64, KILN_SHAPE(0, 4)),
                                           kiln_zeros(cx, KILN_I64, KILN_SHAPE(0, 2)), n),
                 KILN_SHAPE(0, 4));
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(movement, dynamic_update_slice_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = arange_i64(cx, KILN_SHAPE(3, 4));
    kiln_tensor *s[] = {index_scalar(cx, KILN_I32, 0), index_scalar(cx, KILN_I32, 0)};
    cr_assert_null(kiln_dynamic_update_slice(cx, x, kiln_zeros(cx, KILN_I32, KILN_SHAPE(1, 1)), s));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_dynamic_update_slice: operand 2 (the update) is i32[1,1]; expected the "
                 "dtype and rank of operand 1, i64[3,4]");
    cr_assert_null(kiln_dynamic_update_slice(cx, x, kiln_zeros(cx, KILN_I64, KILN_SHAPE(1)), s));
    expect_error(cx, KILN_INVALID_ARGUMENT, "operand 2 (the update) is i64[1]");
    cr_assert_null(kiln_dynamic_update_slice(cx, x, kiln_zeros(cx, KILN_I64, KILN_SHAPE(1, 5)), s));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "operand 2 (the update) is i64[1,5]; larger than operand 1, i64[3,4], in "
                 "dimension 1");
    kiln_tensor *u = kiln_zeros(cx, KILN_I64, KILN_SHAPE(1, 1));
    s[1] = index_scalar(cx, KILN_U32, 0);
    cr_assert_null(kiln_dynamic_update_slice(cx, x, u, s));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "start index 1 (operand 4) has dtype ui32; expected i32");
    s[1] = kiln_scalar(cx, 0, KILN_F64);
    cr_assert_null(kiln_dynamic_update_slice(cx, x, u, s));
    expect_error(cx, KILN_INVALID_ARGUMENT, "start index 1 (operand 4) is f64[]");
    cr_assert_null(kiln_dynamic_update_slice(cx, x, u, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_dynamic_update_slice: starts is NULL");
    cr_assert_null(kiln_dynamic_update_slice(cx, x, NULL, s));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_dynamic_update_slice: operand 2 is NULL");
    kiln_ctx_release(cx);
}

/* ---- pad ------------------------------------------------------------------------------- */

Test(movement, pad_conformance) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = i64s(cx, KILN_SHAPE(5, 4),
                          (int64_t[]){0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 0, 0, 0, 0, 0});
    kiln_tensor *v = index_scalar(cx, KILN_I64, -1);
    kiln_tensor *r = kiln_pad(cx, x, v, KILN_DIMS(1, -1), KILN_DIMS(1, -1), KILN_DIMS(0, 1));
    expect_i64(cx, r, KILN_SHAPE(7, 5),
               (int64_t[]){-1, -1, -1, -1, -1, -1, 0,  -1, 0, -1, -1, 1,  -1, 2,  -1, -1, 3, -1,
                           4,  -1, -1, 5,  -1, 6,  -1, -1, 0, -1, 0,  -1, -1, -1, -1, -1, -1});
    kiln_ctx_release(cx);
}

Test(movement, pad_cases) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = i64s(cx, KILN_SHAPE(3), (int64_t[]){1, 2, 3});
    kiln_tensor *v = index_scalar(cx, KILN_I64, 0);
    /* edges only, interior only, lists omitted (all zeros) */
    expect_i64(cx, kiln_pad(cx, x, v, KILN_DIMS(2), KILN_DIMS(1), KILN_DIMS_NONE), KILN_SHAPE(6),
               (int64_t[]){0, 0, 1, 2, 3, 0});
    expect_i64(cx, kiln_pad(cx, x, v, KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(2)), KILN_SHAPE(7),
               (int64_t[]){1, 0, 0, 2, 0, 0, 3});
    expect_i64(cx, kiln_pad(cx, x, v, KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS_NONE),
               KILN_SHAPE(3), (int64_t[]){1, 2, 3});
    /* negative edges cut, also into the interior padding */
    expect_i64(cx, kiln_pad(cx, x, v, KILN_DIMS(-1), KILN_DIMS(-2), KILN_DIMS_NONE), KILN_SHAPE(0),
               NULL);
    expect_i64(cx, kiln_pad(cx, x, v, KILN_DIMS(-2), KILN_DIMS(-1), KILN_DIMS(1)), KILN_SHAPE(2),
               (int64_t[]){2, 0});
    expect_i64(cx, kiln_pad(cx, x, v, KILN_DIMS(-1), KILN_DIMS(0), KILN_DIMS(2)), KILN_SHAPE(6),
               (int64_t[]){0, 0, 2, 0, 0, 3});
    /* cut past the whole operand, and pad back with values */
    expect_i64(cx, kiln_pad(cx, x, v, KILN_DIMS(-5), KILN_DIMS(4), KILN_DIMS(0)), KILN_SHAPE(2),
               (int64_t[]){0, 0});
    expect_i64(cx, kiln_pad(cx, x, v, KILN_DIMS(4), KILN_DIMS(-6), KILN_DIMS(0)), KILN_SHAPE(1),
               (int64_t[]){0});
    /* an empty operand: all padding; interior padding does not count for size 0 */
    kiln_tensor *e = kiln_zeros(cx, KILN_I64, KILN_SHAPE(0, 2));
    expect_i64(cx,
               kiln_pad(cx, e, index_scalar(cx, KILN_I64, 7), KILN_DIMS(1, 0), KILN_DIMS(1, 0),
                        KILN_DIMS(5, 0)),
               KILN_SHAPE(2, 2), (int64_t[]){7, 7, 7, 7});
    /* rank 0: a copy */
    expect_i64(cx,
               kiln_pad(cx, index_scalar(cx, KILN_I64, 4), v, KILN_DIMS_NONE, KILN_DIMS_NONE,
                        KILN_DIMS_NONE),
               KILN_SHAPE_SCALAR, (int64_t[]){4});
    /* 2-D: an f32 value, rows of padding above and below */
    float fx[] = {1, 2, 3, 4};
    kiln_tensor *f = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 2), fx, sizeof fx);
    kiln_tensor *pf = kiln_pad(cx, f, kiln_scalar(cx, 0.5, KILN_F32), KILN_DIMS(1, 0),
                               KILN_DIMS(0, 1), KILN_DIMS(0, 0));
    expect_shape(pf, KILN_SHAPE(3, 3));
    const float want[] = {0.5f, 0.5f, 0.5f, 1, 2, 0.5f, 3, 4, 0.5f};
    cr_assert(memcmp(kiln_tensor_data(pf), want, sizeof want) == 0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(movement, pad_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = arange_i64(cx, KILN_SHAPE(2, 3));
    kiln_tensor *v = index_scalar(cx, KILN_I64, 0);
    cr_assert_null(kiln_pad(cx, x, kiln_scalar(cx, 0, KILN_F32), KILN_DIMS_NONE, KILN_DIMS_NONE,
                            KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_pad: operand 2 (the padding value) is f32[]; expected a rank-0 i64 tensor");
    cr_assert_null(kiln_pad(cx, x, kiln_zeros(cx, KILN_I64, KILN_SHAPE(1)), KILN_DIMS_NONE,
                            KILN_DIMS_NONE, KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT, "operand 2 (the padding value) is i64[1]");
    cr_assert_null(kiln_pad(cx, x, v, KILN_DIMS(1), KILN_DIMS_NONE, KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_pad: low has 1 entries; expected 2 (the rank of operand 1)");
    cr_assert_null(kiln_pad(cx, x, v, KILN_DIMS_NONE, KILN_DIMS(1, 2, 3), KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT, "high has 3 entries");
    cr_assert_null(kiln_pad(cx, x, v, KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(0, -1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_pad: interior[1] is -1; expected 0 or more");
    cr_assert_null(kiln_pad(cx, x, v, KILN_DIMS(0, -2), KILN_DIMS(0, -2), KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_pad: dimension 1 of the result would have size -1 (low -2, high -2, "
                 "interior 0, operand size 3)");
    cr_assert_null(kiln_pad(cx, x, v, KILN_DIMS(0, INT64_MAX), KILN_DIMS(0, 1), KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT, "the padded size of dimension 1 overflows");
    cr_assert_null(kiln_pad(cx, x, v, KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS(0, INT64_MAX)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "the padded size of dimension 1 overflows");
    cr_assert_null(kiln_pad(cx, x, NULL, KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_pad: operand 2 is NULL");
    kiln_ctx_release(cx);
}

/* ---- concatenate ----------------------------------------------------------------------- */

Test(movement, concatenate_conformance) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *xs[] = {i64s(cx, KILN_SHAPE(3, 2), (int64_t[]){1, 2, 3, 4, 5, 6}),
                         i64s(cx, KILN_SHAPE(1, 2), (int64_t[]){7, 8})};
    expect_i64(cx, kiln_concatenate(cx, xs, 2, 0), KILN_SHAPE(4, 2),
               (int64_t[]){1, 2, 3, 4, 5, 6, 7, 8});
    kiln_ctx_release(cx);
}

Test(movement, concatenate_cases) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *a = arange_i64(cx, KILN_SHAPE(2, 2));
    kiln_tensor *b = i64s(cx, KILN_SHAPE(2, 1), (int64_t[]){8, 9});
    kiln_tensor *e = kiln_zeros(cx, KILN_I64, KILN_SHAPE(2, 0));
    kiln_tensor *xs[] = {a, e, b, e, a};
    expect_i64(cx, kiln_concatenate(cx, xs, 5, 1), KILN_SHAPE(2, 5),
               (int64_t[]){0, 1, 8, 0, 1, 2, 3, 9, 2, 3});
    expect_i64(cx, kiln_concatenate(cx, xs, 1, 1), KILN_SHAPE(2, 2), (int64_t[]){0, 1, 2, 3});
    kiln_tensor *es[] = {e, e};
    expect_shape(kiln_concatenate(cx, es, 2, 1), KILN_SHAPE(2, 0));
    kiln_tensor *z[] = {kiln_zeros(cx, KILN_I64, KILN_SHAPE(0, 3)),
                        kiln_zeros(cx, KILN_I64, KILN_SHAPE(0, 2))};
    expect_shape(kiln_concatenate(cx, z, 2, 1), KILN_SHAPE(0, 5));
    /* more inputs than op_run keeps on its stack */
    kiln_tensor *many[12];
    int64_t want[12];
    for (int i = 0; i < 12; i++) {
        many[i] = index_scalar(cx, KILN_I64, 10 * i);
        many[i] = kiln_reshape(cx, many[i], KILN_SHAPE(1));
        want[i] = 10 * i;
    }
    expect_i64(cx, kiln_concatenate(cx, many, 12, 0), KILN_SHAPE(12), want);
    kiln_ctx_release(cx);
}

Test(movement, concatenate_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *a = arange_i64(cx, KILN_SHAPE(2, 2));
    kiln_tensor *xs[] = {a, kiln_zeros(cx, KILN_I64, KILN_SHAPE(3, 3))};
    cr_assert_null(kiln_concatenate(cx, xs, 2, 1));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_concatenate: operand 2 is i64[3,3]; expected operand 1's dtype and "
                 "shape, i64[2,2], except in dimension 1");
    xs[1] = kiln_zeros(cx, KILN_I32, KILN_SHAPE(2, 2));
    cr_assert_null(kiln_concatenate(cx, xs, 2, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "operand 2 is i32[2,2]");
    xs[1] = kiln_zeros(cx, KILN_I64, KILN_SHAPE(2));
    cr_assert_null(kiln_concatenate(cx, xs, 2, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "operand 2 is i64[2]");
    cr_assert_null(kiln_concatenate(cx, xs, 1, 2));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_concatenate: dim is 2; expected 0 to 1");
    cr_assert_null(kiln_concatenate(cx, xs, 1, -1));
    expect_error(cx, KILN_INVALID_ARGUMENT, "dim is -1; expected 0 to 1");
    cr_assert_null(kiln_concatenate(cx, xs, 0, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_concatenate: n is 0; expected at least 1");
    cr_assert_null(kiln_concatenate(cx, NULL, 2, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_concatenate: xs is NULL");
    kiln_tensor *s[] = {index_scalar(cx, KILN_I64, 1)};
    cr_assert_null(kiln_concatenate(cx, s, 1, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "operand 1 has rank 0; expected rank 1 or more");
    xs[1] = NULL;
    cr_assert_null(kiln_concatenate(cx, xs, 2, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_concatenate: operand 2 is NULL");
    kiln_ctx_release(cx);
}

/* ---- every dtype ----------------------------------------------------------------------- */

Test(movement, every_op_moves_every_dtype_bit_exactly) {
    kiln_ctx *cx = test_ctx();
    for (int d = 0; d < KILN_DTYPE_COUNT; d++) {
        kiln_dtype dt = (kiln_dtype)d;
        kiln_tensor *x = pattern(cx, dt, KILN_SHAPE(3, 4, 5));
        const kiln_shape *xs = kiln_tensor_shape(x);
        kiln_dims perm = KILN_DIMS(2, 0, 1);
        expect_ref(kiln_transpose(cx, x, perm), x, ref_transpose, &perm, NULL, "transpose");
        kiln_dims rev = KILN_DIMS(0, 2);
        expect_ref(kiln_reverse(cx, x, rev), x, ref_reverse, &rev, NULL, "reverse");
        expect_ref(kiln_reshape(cx, x, KILN_SHAPE(-1)), x, ref_identity, NULL, NULL, "reshape");
        kiln_tensor *col = pattern(cx, dt, KILN_SHAPE(3, 1));
        kiln_dims bd = KILN_DIMS(0, 2);
        expect_ref(kiln_broadcast_in_dim(cx, col, KILN_SHAPE(3, 2, 4), bd), col, ref_broadcast, &bd,
                   NULL, "broadcast_in_dim");
        slice_args sa = {KILN_DIMS(1, 0, 1), KILN_DIMS(3, 4, 5), KILN_DIMS(1, 2, 3)};
        expect_ref(kiln_slice(cx, x, sa.start, sa.limit, sa.strides), x, ref_slice, &sa, NULL,
                   "slice");
        kiln_tensor *st[3] = {index_scalar(cx, KILN_I32, 1), index_scalar(cx, KILN_I32, 0),
                              index_scalar(cx, KILN_I32, 9)};
        slice_args ds = {KILN_DIMS(1, 0, 3), KILN_DIMS(3, 4, 5), KILN_DIMS_NONE};
        expect_ref(kiln_dynamic_slice(cx, x, st, KILN_DIMS(2, 4, 2)), x, ref_slice, &ds, NULL,
                   "dynamic_slice");
        /* pad with the first element of another pattern as the value */
        kiln_tensor *pv = pattern(cx, dt, KILN_SHAPE_SCALAR);
        if (dt == KILN_BOOL) pv = kiln_scalar(cx, 1, KILN_BOOL);
        pad_args pa = {KILN_DIMS(1, -1, 2), KILN_DIMS(0, 2, -1), KILN_DIMS(1, 0, 2)};
        expect_ref(kiln_pad(cx, x, pv, pa.low, pa.high, pa.interior), x, ref_pad, &pa,
                   kiln_tensor_data(pv), "pad");
        /* dynamic_update_slice: x with its block [0:2, 0:3, 0:3] written at the clamped
         * starts [1, 0, 2] */
        kiln_tensor *blk =
            kiln_slice(cx, x, KILN_DIMS(0, 0, 0), KILN_DIMS(2, 3, 3), KILN_DIMS_NONE);
        kiln_tensor *dus = kiln_dynamic_update_slice(cx, x, blk, st);
        cr_assert_not_null(dus, "%s", kiln_ctx_error_message(cx));
        size_t es = kiln_dtype_size(dt);
        const uint8_t *dd = kiln_tensor_data(dus), *xd = kiln_tensor_data(x);
        int64_t idx[3];
        for (int64_t i = 0; i < kiln_tensor_numel(x); i++) {
            unravel(xs, i, idx);
            bool in = idx[0] >= 1 && idx[0] < 3 && idx[1] < 3 && idx[2] >= 2;
            int64_t src = in ? ravel(xs, (int64_t[]){idx[0] - 1, idx[1], idx[2] - 2}) : i;
            cr_assert(memcmp(dd + i * (int64_t)es, xd + src * (int64_t)es, es) == 0,
                      "dynamic_update_slice %s element %lld", kiln_dtype_name(dt), (long long)i);
        }
        /* concatenate: x with its reverse along dimension 1 */
        kiln_tensor *parts[2] = {x, kiln_reverse(cx, x, KILN_DIMS(1))};
        kiln_tensor *c = kiln_concatenate(cx, parts, 2, 1);
        expect_shape(c, KILN_SHAPE(3, 8, 5));
        const uint8_t *cd = kiln_tensor_data(c);
        for (int64_t i = 0; i < kiln_tensor_numel(c); i++) {
            unravel(kiln_tensor_shape(c), i, idx);
            int64_t j = idx[1] < 4 ? idx[1] : 7 - idx[1];
            int64_t src = ravel(xs, (int64_t[]){idx[0], j, idx[2]});
            cr_assert(memcmp(cd + i * (int64_t)es, xd + src * (int64_t)es, es) == 0,
                      "concatenate %s element %lld", kiln_dtype_name(dt), (long long)i);
        }
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- larger shapes against the reference (the tiled and coalesced paths) -------------- */

Test(movement, transposes_match_the_reference) {
    kiln_ctx *cx = test_ctx();
    const kiln_dtype dts[] = {KILN_U8, KILN_F16, KILN_F32, KILN_F64};
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        kiln_dtype dt = dts[t];
        kiln_tensor *m = pattern(cx, dt, KILN_SHAPE(67, 45));
        kiln_dims p2 = KILN_DIMS(1, 0);
        expect_ref(kiln_transpose(cx, m, p2), m, ref_transpose, &p2, NULL, "transpose 67x45");
        kiln_tensor *b = pattern(cx, dt, KILN_SHAPE(3, 40, 33));
        kiln_dims pb = KILN_DIMS(0, 2, 1);
        expect_ref(kiln_transpose(cx, b, pb), b, ref_transpose, &pb, NULL, "batched transpose");
        kiln_tensor *x = pattern(cx, dt, KILN_SHAPE(5, 9, 2, 11));
        const kiln_dims perms[] = {KILN_DIMS(3, 2, 1, 0), KILN_DIMS(1, 3, 0, 2),
                                   KILN_DIMS(0, 1, 3, 2), KILN_DIMS(2, 3, 0, 1),
                                   KILN_DIMS(0, 1, 2, 3), KILN_DIMS(3, 0, 1, 2)};
        for (size_t i = 0; i < sizeof perms / sizeof perms[0]; i++)
            expect_ref(kiln_transpose(cx, x, perms[i]), x, ref_transpose, &perms[i], NULL,
                       "transpose rank 4");
        /* size-1 dimensions in the middle */
        kiln_tensor *y = pattern(cx, dt, KILN_SHAPE(16, 1, 24, 1));
        kiln_dims py = KILN_DIMS(3, 2, 1, 0);
        expect_ref(kiln_transpose(cx, y, py), y, ref_transpose, &py, NULL, "transpose size 1");
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(movement, larger_shapes_match_the_reference) {
    kiln_ctx *cx = test_ctx();
    const kiln_dtype dts[] = {KILN_I8, KILN_BF16, KILN_U32, KILN_I64};
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        kiln_dtype dt = dts[t];
        kiln_tensor *x = pattern(cx, dt, KILN_SHAPE(6, 7, 10));
        const kiln_dims revs[] = {KILN_DIMS(2), KILN_DIMS(0), KILN_DIMS(1, 2), KILN_DIMS(0, 1, 2),
                                  KILN_DIMS(2, 0)};
        for (size_t i = 0; i < sizeof revs / sizeof revs[0]; i++)
            expect_ref(kiln_reverse(cx, x, revs[i]), x, ref_reverse, &revs[i], NULL, "reverse");
        const slice_args slices[] = {
            {KILN_DIMS(0, 0, 0), KILN_DIMS(6, 7, 10), KILN_DIMS(1, 1, 2)},
            {KILN_DIMS(1, 2, 3), KILN_DIMS(5, 7, 9), KILN_DIMS(2, 1, 1)},
            {KILN_DIMS(0, 0, 9), KILN_DIMS(6, 7, 10), KILN_DIMS(1, 1, 1)},
            {KILN_DIMS(5, 6, 0), KILN_DIMS(6, 7, 10), KILN_DIMS(3, 3, 4)},
        };
        for (size_t i = 0; i < sizeof slices / sizeof slices[0]; i++)
            expect_ref(kiln_slice(cx, x, slices[i].start, slices[i].limit, slices[i].strides), x,
                       ref_slice, &slices[i], NULL, "slice");
        kiln_tensor *pv = pattern(cx, dt, KILN_SHAPE_SCALAR);
        const pad_args pads[] = {
            {KILN_DIMS(1, 2, 3), KILN_DIMS(3, 2, 1), KILN_DIMS(0, 0, 0)},
            {KILN_DIMS(0, 0, 0), KILN_DIMS(0, 0, 0), KILN_DIMS(1, 2, 3)},
            {KILN_DIMS(-2, -3, -9), KILN_DIMS(-1, 1, -10), KILN_DIMS(0, 1, 2)},
            {KILN_DIMS(-1, 0, 0), KILN_DIMS(-1, 0, 0), KILN_DIMS(0, 0, 0)},
            {KILN_DIMS(-13, 1, 0), KILN_DIMS(4, 1, 0), KILN_DIMS(2, 0, 0)},
        };
        for (size_t i = 0; i < sizeof pads / sizeof pads[0]; i++)
            expect_ref(kiln_pad(cx, x, pv, pads[i].low, pads[i].high, pads[i].interior), x, ref_pad,
                       &pads[i], kiln_tensor_data(pv), "pad");
        kiln_tensor *row = pattern(cx, dt, KILN_SHAPE(1, 7, 1));
        const kiln_dims bds[] = {KILN_DIMS(0, 1, 3), KILN_DIMS(1, 2, 3), KILN_DIMS(3, 1, 0)};
        for (size_t i = 0; i < sizeof bds / sizeof bds[0]; i++)
            expect_ref(kiln_broadcast_in_dim(cx, row, KILN_SHAPE(5, 7, 7, 9), bds[i]), row,
                       ref_broadcast, &bds[i], NULL, "broadcast_in_dim");
        kiln_dims bx = KILN_DIMS(1, 2, 3);
        expect_ref(kiln_broadcast_in_dim(cx, x, KILN_SHAPE(3, 6, 7, 10), bx), x, ref_broadcast, &bx,
                   NULL, "broadcast_in_dim outer");
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- numpy conveniences ---------------------------------------------------------------- */

Test(movement, expand_dims_and_squeeze) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = arange_i64(cx, KILN_SHAPE(2, 3));
    const int64_t v[] = {0, 1, 2, 3, 4, 5};
    expect_i64(cx, kiln_expand_dims(cx, x, 0), KILN_SHAPE(1, 2, 3), v);
    expect_i64(cx, kiln_expand_dims(cx, x, 1), KILN_SHAPE(2, 1, 3), v);
    expect_i64(cx, kiln_expand_dims(cx, x, 2), KILN_SHAPE(2, 3, 1), v);
    expect_i64(cx, kiln_expand_dims(cx, x, -1), KILN_SHAPE(2, 3, 1), v);
    expect_i64(cx, kiln_expand_dims(cx, x, -3), KILN_SHAPE(1, 2, 3), v);
    expect_i64(cx, kiln_expand_dims(cx, index_scalar(cx, KILN_I64, 0), 0), KILN_SHAPE(1), v);
    cr_assert_null(kiln_expand_dims(cx, x, 3));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_expand_dims: axis 3 is out of range [-3, 2]");
    cr_assert_null(kiln_expand_dims(cx, x, -4));
    expect_error(cx, KILN_INVALID_ARGUMENT, "axis -4 is out of range");
    kiln_tensor *big = kiln_zeros(
        cx, KILN_U8,
        (kiln_shape){.rank = 16, .dims = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}});
    cr_assert_null(kiln_expand_dims(cx, big, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_expand_dims: operand has rank 16");
    cr_assert_null(kiln_expand_dims(cx, NULL, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_expand_dims: operand 1 is NULL");

    kiln_tensor *y = arange_i64(cx, KILN_SHAPE(1, 2, 1, 3, 1));
    expect_i64(cx, kiln_squeeze(cx, y, KILN_DIMS_NONE), KILN_SHAPE(2, 3), v);
    expect_i64(cx, kiln_squeeze(cx, y, KILN_DIMS(0, -1)), KILN_SHAPE(2, 1, 3), v);
    expect_i64(cx, kiln_squeeze(cx, y, KILN_DIMS(2)), KILN_SHAPE(1, 2, 3, 1), v);
    expect_i64(cx, kiln_squeeze(cx, kiln_reshape(cx, x, KILN_SHAPE(1, 1, 6)), KILN_DIMS_NONE),
               KILN_SHAPE(6), v);
    expect_i64(cx, kiln_squeeze(cx, kiln_reshape(cx, x, KILN_SHAPE(6)), KILN_DIMS_NONE),
               KILN_SHAPE(6), v);
    expect_i64(cx, kiln_squeeze(cx, kiln_zeros(cx, KILN_I64, KILN_SHAPE(1, 1)), KILN_DIMS_NONE),
               KILN_SHAPE_SCALAR, (int64_t[]){0});
    cr_assert_null(kiln_squeeze(cx, y, KILN_DIMS(1)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_squeeze: axis 1 has size 2; only size-1 axes can be squeezed");
    cr_assert_null(kiln_squeeze(cx, y, KILN_DIMS(0, -5)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_squeeze: axes repeats axis 0");
    cr_assert_null(kiln_squeeze(cx, y, KILN_DIMS(5)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_squeeze: axis 5 is out of range [-5, 4]");
    cr_assert_null(kiln_squeeze(cx, y, (kiln_dims){.count = -1}));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_squeeze: axes has -1 entries");
    cr_assert_null(kiln_squeeze(cx, NULL, KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_squeeze: operand 1 is NULL");
    kiln_ctx_release(cx);
}

Test(movement, concat_and_stack) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *a = arange_i64(cx, KILN_SHAPE(2, 2));
    kiln_tensor *b = i64s(cx, KILN_SHAPE(2, 2), (int64_t[]){4, 5, 6, 7});
    kiln_tensor *ab[] = {a, b};
    expect_i64(cx, kiln_concat(cx, ab, 2, -1), KILN_SHAPE(2, 4),
               (int64_t[]){0, 1, 4, 5, 2, 3, 6, 7});
    expect_i64(cx, kiln_concat(cx, ab, 2, -2), KILN_SHAPE(4, 2),
               (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7});
    cr_assert_null(kiln_concat(cx, ab, 2, 2));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_concat: axis 2 is out of range [-2, 1]");
    cr_assert_null(kiln_concat(cx, ab, 0, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_concat: n is 0");

    expect_i64(cx, kiln_stack(cx, ab, 2, 0), KILN_SHAPE(2, 2, 2),
               (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7});
    expect_i64(cx, kiln_stack(cx, ab, 2, 1), KILN_SHAPE(2, 2, 2),
               (int64_t[]){0, 1, 4, 5, 2, 3, 6, 7});
    expect_i64(cx, kiln_stack(cx, ab, 2, -1), KILN_SHAPE(2, 2, 2),
               (int64_t[]){0, 4, 1, 5, 2, 6, 3, 7});
    kiln_tensor *sc[10];
    int64_t want[10];
    for (int i = 0; i < 10; i++) {
        sc[i] = index_scalar(cx, KILN_I64, i * i);
        want[i] = i * i;
    }
    expect_i64(cx, kiln_stack(cx, sc, 10, 0), KILN_SHAPE(10), want);
    kiln_tensor *bad[] = {a, kiln_zeros(cx, KILN_I64, KILN_SHAPE(2, 3))};
    cr_assert_null(kiln_stack(cx, bad, 2, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_stack: operand 2 has shape [2,3]; expected [2,2], the shape of operand 1");
    bad[1] = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2, 2));
    cr_assert_null(kiln_stack(cx, bad, 2, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_stack: operand 2 is f32[1,2,2]");
    cr_assert_null(kiln_stack(cx, ab, 2, 3));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_stack: axis 3 is out of range [-3, 2]");
    bad[1] = NULL;
    cr_assert_null(kiln_stack(cx, bad, 2, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_stack: operand 2 is NULL");
    cr_assert_null(kiln_stack(cx, NULL, 2, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_stack: xs is NULL");
    kiln_ctx_release(cx);
}

/* ---- errors are sticky; allocation failure leaks nothing -------------------------------- */

Test(movement, a_null_operand_keeps_the_first_error) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = arange_i64(cx, KILN_SHAPE(2, 3));
    kiln_tensor *bad = kiln_transpose(cx, x, KILN_DIMS(0, 0));
    cr_assert_null(bad);
    kiln_tensor *r = kiln_reverse(cx,
                                  kiln_slice(cx, kiln_reshape(cx, bad, KILN_SHAPE(6)), KILN_DIMS(0),
                                             KILN_DIMS(2), KILN_DIMS_NONE),
                                  KILN_DIMS(0));
    cr_assert_null(r);
    kiln_tensor *xs[] = {bad, x};
    cr_assert_null(kiln_stack(cx, xs, 2, 0));
    cr_assert_null(kiln_expand_dims(cx, bad, 0));
    cr_assert_null(kiln_pad(cx, bad, x, KILN_DIMS_NONE, KILN_DIMS_NONE, KILN_DIMS_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_transpose: perm repeats dimension 0");
    kiln_ctx_release(cx);
}

Test(movement, allocation_failure_is_reported_without_leaks) {
    for (int64_t k = 0; k < 40; k++) {
        failing_allocator fa;
        kiln_ctx *cx = failing_allocator_ctx(&fa);
        cr_assert_not_null(cx);
        kiln_tensor *xs[10];
        for (int i = 0; i < 10; i++)
            xs[i] = kiln_zeros(cx, KILN_F32, KILN_SHAPE(3, 2));
        kiln_tensor *v = kiln_scalar(cx, 1, KILN_F32);
        fa.fail_after = fa.allocations + k;
        kiln_tensor *s = kiln_stack(cx, xs, 10, 1);
        kiln_tensor *p = kiln_pad(cx, xs[0], v, KILN_DIMS(1, 1), KILN_DIMS_NONE, KILN_DIMS_NONE);
        kiln_tensor *t = kiln_transpose(cx, xs[1], KILN_DIMS(1, 0));
        if (!s || !p || !t)
            cr_assert_eq(kiln_ctx_status(cx), KILN_RESOURCE_EXHAUSTED, "%s",
                         kiln_ctx_error_message(cx));
        else
            expect_ok(cx);
        kiln_ctx_release(cx);
        cr_assert_eq(fa.live_blocks, 0, "k = %lld", (long long)k);
    }
}

/* The parser and tracer call inference with operand lists no builder makes. */
Test(movement, inference_checks_operand_and_result_counts) {
    kiln_ctx *cx = test_ctx();
    kiln__attrs a = {.fn = "f"};
    kiln__type in[3] = {
        {.dtype = KILN_F32, .shape = KILN_SHAPE(2, 3)},
        {.dtype = KILN_F32, .shape = KILN_SHAPE(2, 3)},
        {.dtype = KILN_I32, .shape = KILN_SHAPE_SCALAR}};
    kiln__type out[1];
    a.u.reshape = KILN_SHAPE(6);
    cr_assert_eq(kiln__infer(cx, KILN_OP_RESHAPE, &a, in, 2, out, 1), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "f: got 2 operands; expected 1");
    cr_assert_eq(kiln__infer(cx, KILN_OP_RESHAPE, &a, in, 1, out, 0), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "f: got 0 result slots; expected 1");
    const kiln_op variadic[] = {KILN_OP_DYNAMIC_SLICE, KILN_OP_CONCATENATE};
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(kiln__infer(cx, variadic[i], &a, in, 0, out, 1), KILN_INVALID_ARGUMENT);
        expect_error(cx, KILN_INVALID_ARGUMENT, "f: got 0 operands; expected at least 1");
        cr_assert_eq(kiln__infer(cx, variadic[i], &a, in, 1, out, 0), KILN_INVALID_ARGUMENT);
        expect_error(cx, KILN_INVALID_ARGUMENT, "f: got 0 result slots");
    }
    cr_assert_eq(kiln__infer(cx, KILN_OP_DYNAMIC_UPDATE_SLICE, &a, in, 1, out, 1),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "f: got 1 operands; expected at least 2");
    cr_assert_eq(kiln__infer(cx, KILN_OP_DYNAMIC_UPDATE_SLICE, &a, in, 2, out, 0),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "f: got 0 result slots");
    /* too few start indices */
    a.u.slice_sizes = KILN_DIMS(1, 1);
    kiln__type ds[2] = {in[0], in[2]};
    cr_assert_eq(kiln__infer(cx, KILN_OP_DYNAMIC_SLICE, &a, ds, 2, out, 1), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "f: got 1 start indices; expected 2 (the rank of operand 1)");
    /* the result types */
    a.u.permutation = KILN_DIMS(1, 0);
    cr_assert_eq(kiln__infer(cx, KILN_OP_TRANSPOSE, &a, in, 1, out, 1), KILN_OK);
    cr_assert_eq(out[0].dtype, KILN_F32);
    cr_assert(kiln_shape_equal(&out[0].shape, &KILN_SHAPE(3, 2)));
    kiln_ctx_release(cx);
}

Test(movement, sizes_that_overflow_are_errors) {
    kiln_ctx *cx = test_ctx();
    /* An empty tensor's non-zero dimensions must still have strides and byte offsets that
     * fit: [2^62, 0] of f32 (2^64 bytes of positions) is refused where it is made. */
    cr_assert_null(kiln_zeros(cx, KILN_F32, KILN_SHAPE(INT64_MAX / 2 + 1, 0)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_zeros: shape [4611686018427387904,0] of f32 is too large");
    const int64_t big = INT64_C(1) << 60; /* 2^62 bytes of f32 positions: the most that fit */
    kiln_tensor *h = kiln_zeros(cx, KILN_F32, KILN_SHAPE(big, 0));
    cr_assert_not_null(h, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *hh[] = {h, h};
    cr_assert_null(kiln_concatenate(cx, hh, 2, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_concatenate: result 0 of type f32[2305843009213693952,0] is too large");
    expect_shape(kiln_concatenate(cx, hh, 2, 1), KILN_SHAPE(big, 0));
    kiln_tensor *huge_dims[] = {kiln_zeros(cx, KILN_I8, KILN_SHAPE(INT64_MAX / 2 + 1, 0)),
                                kiln_zeros(cx, KILN_I8, KILN_SHAPE(INT64_MAX / 2 + 1, 0))};
    cr_assert_not_null(huge_dims[0], "%s", kiln_ctx_error_message(cx));
    cr_assert_null(kiln_concatenate(cx, huge_dims, 2, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_concatenate: the size of dimension 0 overflows");
    cr_assert_null(kiln_pad(cx, h, kiln_scalar(cx, 0, KILN_F32), KILN_DIMS(0, 0), KILN_DIMS(0, 0),
                            KILN_DIMS(2, 0)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_pad: result 0 of type f32[");
    cr_assert_null(kiln_pad(cx, huge_dims[0], kiln_scalar(cx, 0, KILN_I8), KILN_DIMS(0, 0),
                            KILN_DIMS(0, 0), KILN_DIMS(2, 0)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_pad: the padded size of dimension 0 overflows");
    cr_assert_null(kiln_pad(cx, h, kiln_scalar(cx, 0, KILN_F32), KILN_DIMS_NONE, KILN_DIMS_NONE,
                            KILN_DIMS(1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_pad: interior has 1 entries; expected 2");
    /* an empty operand with a huge dimension pads and slices without touching memory */
    expect_shape(kiln_pad(cx, h, kiln_scalar(cx, 0, KILN_F32), KILN_DIMS(-(big - 1), 0),
                          KILN_DIMS(-1, 3), KILN_DIMS_NONE),
                 KILN_SHAPE(0, 3));
    expect_shape(kiln_transpose(cx, h, KILN_DIMS(1, 0)), KILN_SHAPE(0, big));
    /* huge strides and interior padding where only one element is involved */
    kiln_tensor *x = arange_i64(cx, KILN_SHAPE(1, 3));
    expect_i64(cx,
               kiln_slice(cx, x, KILN_DIMS(0, 1), KILN_DIMS(1, 3), KILN_DIMS(INT64_MAX, INT64_MAX)),
               KILN_SHAPE(1, 1), (int64_t[]){1});
    expect_i64(cx,
               kiln_pad(cx, x, index_scalar(cx, KILN_I64, 9), KILN_DIMS(0, 0), KILN_DIMS(1, 0),
                        KILN_DIMS(INT64_MAX, 0)),
               KILN_SHAPE(2, 3), (int64_t[]){0, 1, 2, 9, 9, 9});
    cr_assert_null(kiln_pad(cx, kiln_zeros(cx, KILN_I64, KILN_SHAPE(0, 3)),
                            index_scalar(cx, KILN_I64, 9), KILN_DIMS(0, -1), KILN_DIMS(0, 0),
                            KILN_DIMS(0, INT64_MAX / 2 - 1)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "too large");
    expect_shape(kiln_reverse(cx, h, KILN_DIMS(0, 1)), KILN_SHAPE(big, 0));
    expect_ok(cx);
    kiln_ctx_release(cx);
}
