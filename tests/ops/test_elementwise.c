/* SPDX-License-Identifier: Apache-2.0 */
/* The elementwise family: unary and binary elementwise ops, compare, select, clamp,
 * convert and bitcast_convert. Hand-checked values, the core cases of the StableHLO
 * interpreter's conformance files (abs.mlir, add.mlir, ...), the semantic traps of
 * docs/ARCHITECTURE.md section 4, every dtype each op allows, empty and rank-0 tensors, and the errors
 * inference reports. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "failing_allocator.h"
#include "op_cases.h"
#include "ops/infer.h"
#include "test_util.h"

/* ---- helpers ------------------------------------------------------------------------------ */

/* A rank-1 tensor over a copy of nbytes of data. */
static kiln_tensor *make(kiln_ctx *cx, kiln_dtype dt, const void *data, size_t nbytes) {
    int64_t n = (int64_t)(nbytes / kiln_dtype_size(dt));
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, KILN_SHAPE(n), data, nbytes);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

/* A tensor of any shape over a copy of data. */
static kiln_tensor *make_shaped(kiln_ctx *cx, kiln_dtype dt, kiln_shape shape, const void *data) {
    size_t nbytes = 0;
    cr_assert(kiln_shape_nbytes(&shape, dt, &nbytes));
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, shape, data, nbytes);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

/* Element i as its raw bits, zero-extended. */
static uint64_t raw_bits(const void *data, size_t size, int64_t i) {
    const unsigned char *p = (const unsigned char *)data + (size_t)i * size;
    switch (size) {
    case 1: return *p;
    case 2: {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    default: {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

/* t has dtype dt and exactly the bytes of want (nbytes). */
static void expect_data(kiln_ctx *cx, const kiln_tensor *t, kiln_dtype dt, const void *want,
                        size_t nbytes, const char *what, int line) {
    cr_assert_not_null(t, "line %d: %s is NULL: %s", line, what, kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_dtype(t), dt, "line %d: %s has dtype %s, expected %s", line, what,
                 kiln_dtype_name(kiln_tensor_dtype(t)), kiln_dtype_name(dt));
    cr_assert_eq(kiln_tensor_nbytes(t), nbytes, "line %d: %s has %zu bytes, expected %zu", line,
                 what, kiln_tensor_nbytes(t), nbytes);
    size_t size = kiln_dtype_size(dt);
    const void *got = kiln_tensor_data(t);
    for (int64_t i = 0; i < (int64_t)(nbytes / size); i++) {
        uint64_t g = raw_bits(got, size, i), w = raw_bits(want, size, i);
        cr_assert_eq(g, w, "line %d: %s[%lld] is 0x%llx, expected 0x%llx", line, what, (long long)i,
                     (unsigned long long)g, (unsigned long long)w);
    }
}

/* Element values of t (read as double) against want: NaN matches any NaN, zeros must
 * have the expected sign, others must be within tol relative (0: exact). */
static void expect_values(kiln_ctx *cx, const kiln_tensor *t, kiln_dtype dt, double tol,
                          const double *want, int64_t n, const char *what, int line) {
    cr_assert_not_null(t, "line %d: %s is NULL: %s", line, what, kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_dtype(t), dt, "line %d: %s has dtype %s, expected %s", line, what,
                 kiln_dtype_name(kiln_tensor_dtype(t)), kiln_dtype_name(dt));
    cr_assert_eq(kiln_tensor_numel(t), n, "line %d: %s has %lld elements, expected %lld", line,
                 what, (long long)kiln_tensor_numel(t), (long long)n);
    for (int64_t i = 0; i < n; i++) {
        double g = kiln_tensor_item(cx, t, i), w = want[i];
        if (isnan(w)) {
            cr_assert(isnan(g), "line %d: %s[%lld] is %.17g, expected NaN", line, what,
                      (long long)i, g);
        } else if (w == 0 || isinf(w) || tol == 0) {
            cr_assert(g == w && signbit(g) == signbit(w),
                      "line %d: %s[%lld] is %.17g, expected %.17g", line, what, (long long)i, g, w);
        } else {
            cr_assert(fabs(g - w) <= tol * fabs(w), "line %d: %s[%lld] is %.17g, expected %.17g",
                      line, what, (long long)i, g, w);
        }
    }
    expect_ok(cx);
}

/* A rank-1 tensor of dtype dt from double values (floats rounded, integers truncated). */
static kiln_tensor *from_doubles(kiln_ctx *cx, kiln_dtype dt, const double *v, int64_t n) {
    unsigned char buf[64 * 8];
    cr_assert_leq(n, 64);
    size_t size = kiln_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
        unsigned char *p = buf + (size_t)i * size;
        switch (dt) {
        case KILN_BOOL: *p = v[i] != 0; break;
        case KILN_I8: *(int8_t *)p = (int8_t)v[i]; break;
        case KILN_I16: memcpy(p, &(int16_t){(int16_t)v[i]}, 2); break;
        case KILN_I32: memcpy(p, &(int32_t){(int32_t)v[i]}, 4); break;
        case KILN_I64: memcpy(p, &(int64_t){(int64_t)v[i]}, 8); break;
        case KILN_U8: *p = (uint8_t)v[i]; break;
        case KILN_U16: memcpy(p, &(uint16_t){(uint16_t)v[i]}, 2); break;
        case KILN_U32: memcpy(p, &(uint32_t){(uint32_t)v[i]}, 4); break;
        case KILN_U64: memcpy(p, &(uint64_t){(uint64_t)v[i]}, 8); break;
        case KILN_F16: memcpy(p, &(uint16_t){kiln_f32_to_f16((float)v[i])}, 2); break;
        case KILN_BF16: memcpy(p, &(uint16_t){kiln_f32_to_bf16((float)v[i])}, 2); break;
        case KILN_F32: memcpy(p, &(float){(float)v[i]}, 4); break;
        default: memcpy(p, &v[i], 8); break;
        }
    }
    return make(cx, dt, buf, (size_t)n * size);
}

#define ARR(T, ...) (const T[]){__VA_ARGS__}, sizeof((T[]){__VA_ARGS__})
#define NARGS(T, ...) ((int64_t)(sizeof((T[]){__VA_ARGS__}) / sizeof(T)))
/* A rank-1 tensor from literal elements of C type T. */
#define VEC(dt, T, ...) make(cx, dt, ARR(T, __VA_ARGS__))
/* A rank-1 tensor from double literals, converted to dt. */
#define DVEC(dt, ...) \
    from_doubles(cx, dt, (const double[]){__VA_ARGS__}, NARGS(double, __VA_ARGS__))
/* t holds exactly these elements of C type T. */
#define EXPECT(t, dt, T, ...) expect_data(cx, t, dt, ARR(T, __VA_ARGS__), #t, __LINE__)
/* t's elements are these values (within tol relative). */
#define EXPECT_NEAR(t, dt, tol, ...)                                                             \
    expect_values(cx, t, dt, tol, (const double[]){__VA_ARGS__}, NARGS(double, __VA_ARGS__), #t, \
                  __LINE__)

#define I1(...) VEC(KILN_BOOL, uint8_t, __VA_ARGS__)
#define I8(...) VEC(KILN_I8, int8_t, __VA_ARGS__)
#define I16(...) VEC(KILN_I16, int16_t, __VA_ARGS__)
#define I32(...) VEC(KILN_I32, int32_t, __VA_ARGS__)
#define I64(...) VEC(KILN_I64, int64_t, __VA_ARGS__)
#define U8(...) VEC(KILN_U8, uint8_t, __VA_ARGS__)
#define U16(...) VEC(KILN_U16, uint16_t, __VA_ARGS__)
#define U32(...) VEC(KILN_U32, uint32_t, __VA_ARGS__)
#define U64(...) VEC(KILN_U64, uint64_t, __VA_ARGS__)
#define F32(...) VEC(KILN_F32, float, __VA_ARGS__)
#define F64(...) VEC(KILN_F64, double, __VA_ARGS__)
#define F16B(...) VEC(KILN_F16, uint16_t, __VA_ARGS__)   /* from bit patterns */
#define BF16B(...) VEC(KILN_BF16, uint16_t, __VA_ARGS__) /* from bit patterns */
#define F32B(...) VEC(KILN_F32, uint32_t, __VA_ARGS__)
#define F64B(...) VEC(KILN_F64, uint64_t, __VA_ARGS__)

#define EXPECT_I1(t, ...) EXPECT(t, KILN_BOOL, uint8_t, __VA_ARGS__)
#define EXPECT_I8(t, ...) EXPECT(t, KILN_I8, int8_t, __VA_ARGS__)
#define EXPECT_I16(t, ...) EXPECT(t, KILN_I16, int16_t, __VA_ARGS__)
#define EXPECT_I32(t, ...) EXPECT(t, KILN_I32, int32_t, __VA_ARGS__)
#define EXPECT_I64(t, ...) EXPECT(t, KILN_I64, int64_t, __VA_ARGS__)
#define EXPECT_U8(t, ...) EXPECT(t, KILN_U8, uint8_t, __VA_ARGS__)
#define EXPECT_U16(t, ...) EXPECT(t, KILN_U16, uint16_t, __VA_ARGS__)
#define EXPECT_U32(t, ...) EXPECT(t, KILN_U32, uint32_t, __VA_ARGS__)
#define EXPECT_U64(t, ...) EXPECT(t, KILN_U64, uint64_t, __VA_ARGS__)
#define EXPECT_F16B(t, ...) EXPECT(t, KILN_F16, uint16_t, __VA_ARGS__)
#define EXPECT_BF16B(t, ...) EXPECT(t, KILN_BF16, uint16_t, __VA_ARGS__)
#define EXPECT_F32B(t, ...) EXPECT(t, KILN_F32, uint32_t, __VA_ARGS__)
#define EXPECT_F64B(t, ...) EXPECT(t, KILN_F64, uint64_t, __VA_ARGS__)

/* Tolerances for results rounded in the format (a few units in the last place). */
#define TOL_F64 1e-15
#define TOL_F32 4e-7
#define TOL_F16 2e-3
#define TOL_BF16 1e-2

static const kiln_dtype FLOATS[] = {KILN_F16, KILN_BF16, KILN_F32, KILN_F64};
static double tol_of(kiln_dtype dt) {
    return dt == KILN_F64   ? TOL_F64
           : dt == KILN_F32 ? TOL_F32
           : dt == KILN_F16 ? TOL_F16
                            : TOL_BF16;
}

/* ---- unary -------------------------------------------------------------------------------- */

Test(elementwise, abs) {
    kiln_ctx *cx = test_ctx();
    /* abs.mlir, plus abs(INT_MIN) = INT_MIN (wraps) for every signed width. */
    EXPECT_I64(kiln_abs(cx, I64(-2, 0, 2, INT64_MIN)), 2, 0, 2, INT64_MIN);
    EXPECT_I8(kiln_abs(cx, I8(-128, -1, 0, 127)), -128, 1, 0, 127);
    EXPECT_I16(kiln_abs(cx, I16(-32768, -300, 5)), -32768, 300, 5);
    EXPECT_I32(kiln_abs(cx, I32(INT32_MIN, -7, 7)), INT32_MIN, 7, 7);
    EXPECT_NEAR(kiln_abs(cx, F64(23.1, -23.1, -0.0)), KILN_F64, 0, 23.1, 23.1, 0.0);
    /* Signs are cleared bitwise, NaN included. */
    EXPECT_F32B(kiln_abs(cx, F32B(0xff800000u, 0x80000000u, 0xffc00001u, 0xbf800000u)), 0x7f800000u,
                0, 0x7fc00001u, 0x3f800000u);
    EXPECT_F16B(kiln_abs(cx, F16B(0xbc00, 0x8000, 0xfc00, 0xfe01, 0x8001)), 0x3c00, 0, 0x7c00,
                0x7e01, 0x0001);
    EXPECT_BF16B(kiln_abs(cx, BF16B(0xbf80, 0x8000, 0xff80, 0xffc1)), 0x3f80, 0, 0x7f80, 0x7fc1);
    kiln_ctx_release(cx);
}

Test(elementwise, negate) {
    kiln_ctx *cx = test_ctx();
    /* negate.mlir: signed wraps at INT_MIN, unsigned wraps modulo 2^bits. */
    EXPECT_I8(kiln_negate(cx, I8(-128, -9, 0, 8, 127)), -128, 9, 0, -8, -127);
    EXPECT_U8(kiln_negate(cx, U8(0, 16, 255)), 0, 240, 1);
    EXPECT_I16(kiln_negate(cx, I16(-32768, -129, 0, 128, 32767)), -32768, 129, 0, -128, -32767);
    EXPECT_U16(kiln_negate(cx, U16(0, 256, 65535)), 0, 65280, 1);
    EXPECT_I32(kiln_negate(cx, I32(INT32_MIN, -65537, 0, 65536, INT32_MAX)), INT32_MIN, 65537, 0,
               -65536, -INT32_MAX);
    EXPECT_U32(kiln_negate(cx, U32(0, 65536, 4294967295u)), 0, 4294901760u, 1);
    EXPECT_I64(kiln_negate(cx, I64(INT64_MIN, -2147483649LL, 0, 2147483648LL, INT64_MAX)),
               INT64_MIN, 2147483649LL, 0, -2147483648LL, -INT64_MAX);
    EXPECT_U64(kiln_negate(cx, U64(0, 4294967296ull, UINT64_MAX)), 0, 18446744069414584320ull, 1);
    /* Floats flip the sign bit: zeros, infinities, NaN and subnormals. */
    EXPECT_BF16B(
        kiln_negate(cx, BF16B(0x0000, 0x8000, 0x3f80, 0x7f80, 0xff80, 0x7fff, 0x0001, 0x8001)),
        0x8000, 0x0000, 0xbf80, 0xff80, 0x7f80, 0xffff, 0x8001, 0x0001);
    EXPECT_F16B(kiln_negate(cx, F16B(0x0000, 0x8000, 0x3c00, 0x7c00, 0xfc00, 0x7fff, 0x0001)),
                0x8000, 0x0000, 0xbc00, 0xfc00, 0x7c00, 0xffff, 0x8001);
    EXPECT_F32B(kiln_negate(cx, F32B(0, 0x80000000u, 0x3f800000u, 0x7f800000u, 0x00000001u)),
                0x80000000u, 0, 0xbf800000u, 0xff800000u, 0x80000001u);
    EXPECT_F64B(kiln_negate(cx, F64B(0, 0x7ff0000000000000ull, 0x0000000000000001ull)),
                0x8000000000000000ull, 0xfff0000000000000ull, 0x8000000000000001ull);
    kiln_ctx_release(cx);
}

Test(elementwise, sign) {
    kiln_ctx *cx = test_ctx();
    EXPECT_I64(kiln_sign(cx, I64(-1, 0, 1, INT64_MIN, INT64_MAX)), -1, 0, 1, -1, 1);
    EXPECT_I8(kiln_sign(cx, I8(-128, -3, 0, 5)), -1, -1, 0, 1);
    EXPECT_I16(kiln_sign(cx, I16(-2, 0, 2)), -1, 0, 1);
    EXPECT_I32(kiln_sign(cx, I32(-2, 0, 2)), -1, 0, 1);
    /* sign.mlir: NaN stays NaN, zeros keep their sign. */
    for (size_t k = 0; k < 4; k++) {
        kiln_dtype dt = FLOATS[k];
        EXPECT_NEAR(kiln_sign(cx, DVEC(dt, NAN, -1.0, -0.0, 0.0, 1.0, -INFINITY, 1e-3, -250)), dt,
                    0, NAN, -1.0, -0.0, 0.0, 1.0, -1.0, 1.0, -1.0);
    }
    kiln_ctx_release(cx);
}

Test(elementwise, not ) {
    kiln_ctx *cx = test_ctx();
    /* not.mlir */
    EXPECT_I8(kiln_not(cx, I8(127, -128, 0)), -128, 127, -1);
    EXPECT_U8(kiln_not(cx, U8(0, 127, 255)), 255, 128, 0);
    EXPECT_I16(kiln_not(cx, I16(32767, -32768, 0)), -32768, 32767, -1);
    EXPECT_U16(kiln_not(cx, U16(0, 32767, 65535)), 65535, 32768, 0);
    EXPECT_I32(kiln_not(cx, I32(INT32_MAX, INT32_MIN, 0)), INT32_MIN, INT32_MAX, -1);
    EXPECT_U32(kiln_not(cx, U32(0, 2147483647u, 4294967295u)), 4294967295u, 2147483648u, 0);
    EXPECT_I64(kiln_not(cx, I64(INT64_MAX, INT64_MIN, 0)), INT64_MIN, INT64_MAX, -1);
    EXPECT_U64(kiln_not(cx, U64(0, 9223372036854775807ull, UINT64_MAX)), UINT64_MAX,
               9223372036854775808ull, 0);
    EXPECT_I1(kiln_not(cx, I1(0, 1)), 1, 0);
    uint8_t f = 0;
    EXPECT_I1(kiln_not(cx, make_shaped(cx, KILN_BOOL, KILN_SHAPE_SCALAR, &f)), 1);
    kiln_ctx_release(cx);
}

Test(elementwise, floor_and_ceil) {
    kiln_ctx *cx = test_ctx();
    /* floor.mlir / ceil.mlir: -inf, -2.5, -tiny, -0, 0, +tiny, 2.5, inf, NaN. */
    EXPECT_BF16B(
        kiln_floor(cx, BF16B(0xff80, 0xc020, 0x8001, 0x8000, 0, 0x0001, 0x4020, 0x7f80, 0x7fc0)),
        0xff80, 0xc040, 0xbf80, 0x8000, 0, 0, 0x4000, 0x7f80, 0x7fc0);
    EXPECT_BF16B(
        kiln_ceil(cx, BF16B(0xff80, 0xc020, 0x8001, 0x8000, 0, 0x0001, 0x4020, 0x7f80, 0x7fc0)),
        0xff80, 0xc000, 0x8000, 0x8000, 0, 0x3f80, 0x4040, 0x7f80, 0x7fc0);
    EXPECT_F16B(
        kiln_floor(cx, F16B(0xfc00, 0xc100, 0x8001, 0x8000, 0, 0x0001, 0x4100, 0x7c00, 0x7e00)),
        0xfc00, 0xc200, 0xbc00, 0x8000, 0, 0, 0x4000, 0x7c00, 0x7e00);
    EXPECT_F16B(
        kiln_ceil(cx, F16B(0xfc00, 0xc100, 0x8001, 0x8000, 0, 0x0001, 0x4100, 0x7c00, 0x7e00)),
        0xfc00, 0xc000, 0x8000, 0x8000, 0, 0x3c00, 0x4200, 0x7c00, 0x7e00);
    EXPECT_NEAR(
        kiln_floor(cx, F32(-INFINITY, -2.5f, -1e-45f, -0.0f, 0.0f, 1e-45f, 2.5f, INFINITY, NAN)),
        KILN_F32, 0, -INFINITY, -3.0, -1.0, -0.0, 0.0, 0.0, 2.0, INFINITY, NAN);
    EXPECT_NEAR(
        kiln_ceil(cx, F32(-INFINITY, -2.5f, -1e-45f, -0.0f, 0.0f, 1e-45f, 2.5f, INFINITY, NAN)),
        KILN_F32, 0, -INFINITY, -2.0, -0.0, -0.0, 0.0, 1.0, 3.0, INFINITY, NAN);
    EXPECT_NEAR(
        kiln_floor(cx, F64(-INFINITY, -2.5, -4.9e-324, -0.0, 0.0, 4.9e-324, 2.5, INFINITY, NAN)),
        KILN_F64, 0, -INFINITY, -3.0, -1.0, -0.0, 0.0, 0.0, 2.0, INFINITY, NAN);
    EXPECT_NEAR(
        kiln_ceil(cx, F64(-INFINITY, -2.5, -4.9e-324, -0.0, 0.0, 4.9e-324, 2.5, INFINITY, NAN)),
        KILN_F64, 0, -INFINITY, -2.0, -0.0, -0.0, 0.0, 1.0, 3.0, INFINITY, NAN);
    kiln_ctx_release(cx);
}

Test(elementwise, rounding) {
    kiln_ctx *cx = test_ctx();
    /* round_nearest_afz.mlir / round_nearest_even.mlir, plus -0.5 and large values, in every
     * float dtype. */
    for (size_t k = 0; k < 4; k++) {
        kiln_dtype dt = FLOATS[k];
        EXPECT_NEAR(kiln_round_nearest_afz(
                        cx, DVEC(dt, -2.5, 0.4, 0.5, 0.6, 2.5, -0.5, 3.5, -0.0, INFINITY, NAN)),
                    dt, 0, -3.0, 0.0, 1.0, 1.0, 3.0, -1.0, 4.0, -0.0, INFINITY, NAN);
        EXPECT_NEAR(kiln_round_nearest_even(
                        cx, DVEC(dt, -2.5, 0.4, 0.5, 0.6, 2.5, -0.5, 3.5, -0.0, INFINITY, NAN)),
                    dt, 0, -2.0, 0.0, 0.0, 1.0, 2.0, -0.0, 4.0, -0.0, INFINITY, NAN);
    }
    /* Beyond 2^52 every double is an integer already. */
    EXPECT_NEAR(kiln_round_nearest_even(cx, F64(4503599627370497.0)), KILN_F64, 0,
                4503599627370497.0);
    kiln_ctx_release(cx);
}

Test(elementwise, roots) {
    kiln_ctx *cx = test_ctx();
    for (size_t k = 0; k < 4; k++) {
        kiln_dtype dt = FLOATS[k];
        double tol = tol_of(dt);
        /* sqrt.mlir, rsqrt.mlir, cbrt.mlir, and the IEEE special cases. */
        EXPECT_NEAR(kiln_sqrt(cx, DVEC(dt, 0.0, 1.0, 4.0, 9.0, -0.0, -1.0, INFINITY, 2.0)), dt, tol,
                    0.0, 1.0, 2.0, 3.0, -0.0, NAN, INFINITY, 1.4142135623730951);
        EXPECT_NEAR(kiln_rsqrt(cx, DVEC(dt, 1.0, 4.0, 9.0, 25.0, 0.0, -0.0, INFINITY, -4.0)), dt,
                    tol, 1.0, 0.5, 0.33333333333333331, 0.2, INFINITY, -INFINITY, 0.0, NAN);
        EXPECT_NEAR(kiln_cbrt(cx, DVEC(dt, 0.0, 1.0, 8.0, 27.0, -27.0, -0.0, -INFINITY, 2.0)), dt,
                    tol, 0.0, 1.0, 2.0, 3.0, -3.0, -0.0, -INFINITY, 1.2599210498948732);
    }
    kiln_ctx_release(cx);
}

Test(elementwise, exponentials_and_logarithms) {
    kiln_ctx *cx = test_ctx();
    for (size_t k = 0; k < 4; k++) {
        kiln_dtype dt = FLOATS[k];
        double tol = tol_of(dt);
        /* exponential.mlir, exponential_minus_one.mlir, log.mlir, log_plus_one.mlir,
         * logistic.mlir, with the special values. */
        EXPECT_NEAR(kiln_exponential(cx, DVEC(dt, 0.0, 1.0, 2.0, 3.0, -INFINITY, INFINITY, NAN)),
                    dt, tol, 1.0, 2.7182818284590451, 7.3890560989306504, 20.085536923187668, 0.0,
                    INFINITY, NAN);
        EXPECT_NEAR(kiln_exponential_minus_one(cx, DVEC(dt, 0.0, 1.0, -0.0, -INFINITY, 1e-3)), dt,
                    tol, 0.0, 1.7182818284590451, -0.0, -1.0, 1.0005001667083417e-3);
        EXPECT_NEAR(kiln_log(cx, DVEC(dt, 1.0, 2.0, 3.0, 4.0, 0.0, -1.0, INFINITY)), dt, tol, 0.0,
                    0.69314718055994529, 1.0986122886681098, 1.3862943611198906, -INFINITY, NAN,
                    INFINITY);
        EXPECT_NEAR(kiln_log_plus_one(cx, DVEC(dt, 0.0, 7.0, 15.0, -1.0, -2.0, -0.0, 1e-3)), dt,
                    tol, 0.0, 2.0794415416798357, 2.7725887222397811, -INFINITY, NAN, -0.0,
                    9.9950033308353317e-4);
        EXPECT_NEAR(
            kiln_logistic(cx, DVEC(dt, 1.0, 2.0, 3.0, 4.0, 0.0, -INFINITY, INFINITY, -200.0, NAN)),
            dt, tol, 0.73105857863000488, 0.88079707797788244, 0.95257412682243322,
            0.98201379003790844, 0.5, 0.0, 1.0, dt == KILN_F64 ? 1.3838965267367376e-87 : 0.0, NAN);
    }
    /* log_plus_one.mlir's f64 row, near -1. */
    EXPECT_NEAR(kiln_log_plus_one(cx, F64(-0.999, 6.38905621)), KILN_F64, 1e-8, -6.9077552789821368,
                2.0);
    kiln_ctx_release(cx);
}

Test(elementwise, trigonometry) {
    kiln_ctx *cx = test_ctx();
    /* sine.mlir / cosine.mlir / tanh.mlir: 0, -0, 1, 0.125, 0.1, inf, -inf, NaN, and
     * subnormals (which are not flushed to zero). */
    EXPECT_NEAR(kiln_sine(cx, F64(0.0, -0.0, 1.0, 0.125, 0.1, 3.1415926535897931, INFINITY,
                                  -INFINITY, NAN, 4.9406564584124654e-324)),
                KILN_F64, TOL_F64, 0.0, -0.0, 0.8414709848078965, 0.12467473338522769,
                0.099833416646828154, 1.2246467991473532e-16, NAN, NAN, NAN,
                4.9406564584124654e-324);
    EXPECT_NEAR(kiln_cosine(cx, F64(0.0, -0.0, 1.0, 0.125, 0.1, 3.1415926535897931, INFINITY, NAN,
                                    4.9406564584124654e-324)),
                KILN_F64, TOL_F64, 1.0, 1.0, 0.54030230586813977, 0.992197667229329,
                0.99500416527802582, -1.0, NAN, NAN, 1.0);
    EXPECT_NEAR(kiln_tanh(cx, F64(0.0, -0.0, 1.0, 0.125, 0.1, 3.1415926535897931, INFINITY,
                                  -INFINITY, NAN)),
                KILN_F64, TOL_F64, 0.0, -0.0, 0.76159415595576485, 0.12435300177159619,
                0.099667994624955819, 0.99627207622074998, 1.0, -1.0, NAN);
    /* tan.mlir */
    EXPECT_NEAR(kiln_tan(cx, F64(0.0, 1.57079632, 3.14159265, 4.71238898)), KILN_F64, 1e-9, 0.0,
                147169271.76124874, -3.5897930298416118e-9, 2599497068.2695704);
    EXPECT_NEAR(kiln_sine(cx, F32B(0, 0x80000000u, 0x3f800000u, 0x40490fdbu, 0x7f800000u,
                                   0x00000001u, 0x80000001u)),
                KILN_F32, TOL_F32, 0.0, -0.0, 0.841470957, -8.74227765e-8, NAN, 1.4012984643e-45,
                -1.4012984643e-45);
    EXPECT_NEAR(kiln_cosine(cx, F32(0.0f, 1.0f, 0.125f, 0.1f)), KILN_F32, TOL_F32, 1.0, 0.540302277,
                0.992197692, 0.995004177);
    EXPECT_NEAR(kiln_tanh(cx, F32(1.0f, 0.125f, 0.1f, -INFINITY)), KILN_F32, TOL_F32, 0.761594176,
                0.124353, 0.0996679961, -1.0);
    EXPECT_NEAR(kiln_tan(cx, F32(0.0f, 1.0f, -0.5f)), KILN_F32, TOL_F32, 0.0, 1.5574077246549023,
                -0.54630248984379048);
    /* The 16-bit floats: computed in f32, rounded once; subnormals survive. */
    EXPECT_NEAR(kiln_sine(cx, F16B(0, 0x8000, 0x3c00, 0x3000, 0x7c00, 0x0001, 0x8001)), KILN_F16,
                TOL_F16, 0.0, -0.0, 8.413080e-01, 1.246950e-01, NAN, 5.9604644775390625e-08,
                -5.9604644775390625e-08);
    EXPECT_NEAR(kiln_cosine(cx, F16B(0, 0x3c00, 0x3000, 0xfc00)), KILN_F16, TOL_F16, 1.0,
                5.405270e-01, 9.921870e-01, NAN);
    EXPECT_NEAR(kiln_tanh(cx, F16B(0x3c00, 0x7c00, 0xfc00, 0x0001)), KILN_F16, TOL_F16,
                7.617180e-01, 1.0, -1.0, 5.9604644775390625e-08);
    EXPECT_NEAR(kiln_tan(cx, DVEC(KILN_F16, 0.0, 1.0)), KILN_F16, TOL_F16, 0.0, 1.5574077246549023);
    EXPECT_NEAR(kiln_sine(cx, BF16B(0, 0x3f80, 0x3e00, 0x7f80, 0x0001, 0x8001)), KILN_BF16,
                TOL_BF16, 0.0, 8.398430e-01, 1.245120e-01, NAN, 9.1835496157991212e-41,
                -9.1835496157991212e-41);
    EXPECT_NEAR(kiln_cosine(cx, BF16B(0x3f80, 0x3e00)), KILN_BF16, TOL_BF16, 5.390630e-01,
                9.921870e-01);
    EXPECT_NEAR(kiln_tanh(cx, BF16B(0x3f80, 0xff80)), KILN_BF16, TOL_BF16, 7.617180e-01, -1.0);
    EXPECT_NEAR(kiln_tan(cx, DVEC(KILN_BF16, 1.0)), KILN_BF16, TOL_BF16, 1.5574077246549023);
    kiln_ctx_release(cx);
}

Test(elementwise, is_finite) {
    kiln_ctx *cx = test_ctx();
    /* is_finite.mlir: -inf, inf, NaN, -10, -0, 0, 10 -> i1, in every float dtype. */
    for (size_t k = 0; k < 4; k++) {
        kiln_dtype dt = FLOATS[k];
        EXPECT_I1(kiln_is_finite(cx, DVEC(dt, -INFINITY, INFINITY, NAN, -10.0, -0.0, 0.0, 10.0)), 0,
                  0, 0, 1, 1, 1, 1);
    }
    EXPECT_I1(kiln_is_finite(cx, F16B(0x7bff, 0xfe00, 0x0001)), 1, 0, 1);
    EXPECT_I1(kiln_is_finite(cx, BF16B(0x7f7f, 0xffc0, 0x0001)), 1, 0, 1);
    kiln_ctx_release(cx);
}

Test(elementwise, popcnt_and_count_leading_zeros) {
    kiln_ctx *cx = test_ctx();
    /* popcnt.mlir and count_leading_zeros.mlir, and every width: negative values count
     * their bits in the dtype's width, clz(0) is the width. */
    EXPECT_I64(kiln_popcnt(cx, I64(0, 1, 2, 127, -1)), 0, 1, 1, 7, 64);
    EXPECT_I64(kiln_count_leading_zeros(cx, I64(0, 1, 128, -1)), 64, 63, 56, 0);
    EXPECT_I8(kiln_popcnt(cx, I8(0, -1, -128, 85)), 0, 8, 1, 4);
    EXPECT_I8(kiln_count_leading_zeros(cx, I8(0, -1, 1, 64)), 8, 0, 7, 1);
    EXPECT_I16(kiln_popcnt(cx, I16(-1, 255)), 16, 8);
    EXPECT_I16(kiln_count_leading_zeros(cx, I16(0, 1, -32768)), 16, 15, 0);
    EXPECT_I32(kiln_popcnt(cx, I32(-1, 0x0f0f0f0f)), 32, 16);
    EXPECT_I32(kiln_count_leading_zeros(cx, I32(0, 1, 65536)), 32, 31, 15);
    EXPECT_U8(kiln_popcnt(cx, U8(255, 0, 16)), 8, 0, 1);
    EXPECT_U8(kiln_count_leading_zeros(cx, U8(0, 255, 1)), 8, 0, 7);
    EXPECT_U16(kiln_popcnt(cx, U16(65535)), 16);
    EXPECT_U16(kiln_count_leading_zeros(cx, U16(0, 256)), 16, 7);
    EXPECT_U32(kiln_popcnt(cx, U32(4294967295u)), 32);
    EXPECT_U32(kiln_count_leading_zeros(cx, U32(0, 1)), 32, 31);
    EXPECT_U64(kiln_popcnt(cx, U64(UINT64_MAX, 0)), 64, 0);
    EXPECT_U64(kiln_count_leading_zeros(cx, U64(0, 1, UINT64_MAX)), 64, 63, 0);
    kiln_ctx_release(cx);
}

/* ---- binary arithmetic -------------------------------------------------------------------- */

Test(elementwise, add) {
    kiln_ctx *cx = test_ctx();
    /* add.mlir: integers wrap; i1 add is or. */
    EXPECT_I8(kiln_add(cx, I8(0, 1, 8, -9, 0, 127), I8(-128, -1, 8, -9, 127, 1)), -128, 0, 16, -18,
              127, -128);
    EXPECT_U8(kiln_add(cx, U8(0, 16, 255), U8(255, 16, 1)), 255, 32, 0);
    EXPECT_I16(kiln_add(cx, I16(0, 1, 128, -129, 0), I16(-32768, -1, 128, -129, 32767)), -32768, 0,
               256, -258, 32767);
    EXPECT_U16(kiln_add(cx, U16(0, 256), U16(65535, 256)), 65535, 512);
    EXPECT_I32(
        kiln_add(cx, I32(0, 1, 32768, -32769, INT32_MAX), I32(INT32_MIN, -1, 32768, -32769, 1)),
        INT32_MIN, 0, 65536, -65538, INT32_MIN);
    EXPECT_U32(kiln_add(cx, U32(0, 65536), U32(4294967295u, 65536)), 4294967295u, 131072);
    EXPECT_I64(kiln_add(cx, I64(0, 1, 2147483648LL, -2147483649LL, INT64_MAX),
                        I64(INT64_MIN, -1, 2147483648LL, -2147483649LL, 1)),
               INT64_MIN, 0, 4294967296LL, -4294967298LL, INT64_MIN);
    EXPECT_U64(kiln_add(cx, U64(0, 4294967296ull, UINT64_MAX), U64(UINT64_MAX, 4294967296ull, 2)),
               UINT64_MAX, 8589934592ull, 1);
    EXPECT_I1(kiln_add(cx, I1(0, 0, 1, 1), I1(0, 1, 0, 1)), 0, 1, 1, 1);
    /* Floats: 0, -0, 1+7, 0.125+0.75, 0.1+0.3, pi+pi, inf+0, inf+inf, -inf-inf, inf-inf,
     * subnormal + its negation. */
    EXPECT_F32B(kiln_add(cx,
                         F32B(0, 0x80000000u, 0x3f800000u, 0x7f800000u, 0x7f800000u, 0xff800000u,
                              0x7f800000u, 0x00000001u),
                         F32B(0, 0x80000000u, 0x40e00000u, 0, 0x7f800000u, 0xff800000u, 0xff800000u,
                              0x80000001u)),
                0, 0x80000000u, 0x41000000u, 0x7f800000u, 0x7f800000u, 0xff800000u, 0xffc00000u, 0);
    float s = 0.1f + 0.3f;
    EXPECT_NEAR(kiln_add(cx, F32(0.125f, 0.1f, 3.14159265f), F32(0.75f, 0.3f, 3.14159265f)),
                KILN_F32, 0, 0.875, (double)s, (double)(3.14159265f + 3.14159265f));
    EXPECT_NEAR(kiln_add(cx,
                         F64(0.0, -0.0, 1.0, 0.125, 0.1, 3.14159265358979323846, INFINITY, INFINITY,
                             4.9406564584124654e-324),
                         F64(0.0, -0.0, 7.0, 0.75, 0.3, 3.14159265358979323846, 0.0, -INFINITY,
                             -4.9406564584124654e-324)),
                KILN_F64, 0, 0.0, -0.0, 8.0, 0.875, 0.1 + 0.3, 6.2831853071795862, INFINITY, NAN,
                0.0);
    EXPECT_NEAR(kiln_add(cx, DVEC(KILN_F16, 0.0, -0.0, 1.0, 0.125, 0.1, 3.141, INFINITY, INFINITY),
                         DVEC(KILN_F16, 0.0, -0.0, 7.0, 0.75, 0.3, 3.141, 0.0, -INFINITY)),
                KILN_F16, 0.001, 0.0, -0.0, 8.0, 0.875, 3.999020e-01, 6.281250e+00, INFINITY, NAN);
    EXPECT_F16B(kiln_add(cx, F16B(0x0001, 0x7bff), F16B(0x8001, 0x7bff)), 0x0000, 0x7c00);
    EXPECT_NEAR(kiln_add(cx, DVEC(KILN_BF16, 0.0, -0.0, 1.0, 0.125, 0.1, 3.140625, -INFINITY),
                         DVEC(KILN_BF16, 0.0, -0.0, 7.0, 0.75, 0.3, 3.140625, -INFINITY)),
                KILN_BF16, 0.001, 0.0, -0.0, 8.0, 0.875, 4.003910e-01, 6.281250e+00, -INFINITY);
    EXPECT_BF16B(kiln_add(cx, BF16B(0x0001), BF16B(0x8001)), 0x0000);
    kiln_ctx_release(cx);
}

Test(elementwise, subtract) {
    kiln_ctx *cx = test_ctx();
    /* subtract.mlir */
    EXPECT_I8(kiln_subtract(cx, I8(0, 1, 8, -9, 0), I8(-128, -1, 8, -9, 127)), -128, 2, 0, 0, -127);
    EXPECT_U8(kiln_subtract(cx, U8(0, 16), U8(255, 16)), 1, 0);
    EXPECT_I16(kiln_subtract(cx, I16(0, 1, 128, -129, 0), I16(-32768, -1, 128, -129, 32767)),
               -32768, 2, 0, 0, -32767);
    EXPECT_U16(kiln_subtract(cx, U16(0, 256), U16(65535, 256)), 1, 0);
    EXPECT_I32(kiln_subtract(cx, I32(0, 1, 32768, -32769, 0),
                             I32(INT32_MIN, -1, 32768, -32769, INT32_MAX)),
               INT32_MIN, 2, 0, 0, -INT32_MAX);
    EXPECT_U32(kiln_subtract(cx, U32(0, 65536), U32(4294967295u, 65536)), 1, 0);
    EXPECT_I64(kiln_subtract(cx, I64(0, 1, 2147483648LL, -2147483649LL, 0),
                             I64(INT64_MIN, -1, 2147483648LL, -2147483649LL, INT64_MAX)),
               INT64_MIN, 2, 0, 0, -INT64_MAX);
    EXPECT_U64(kiln_subtract(cx, U64(0, 4294967296ull), U64(UINT64_MAX, 4294967296ull)), 1, 0);
    EXPECT_NEAR(kiln_subtract(cx,
                              F64(0.0, -0.0, 1.0, 0.125, 0.1, INFINITY, INFINITY, -INFINITY,
                                  INFINITY, 4.9406564584124654e-324),
                              F64(0.0, -0.0, 7.0, 0.75, 0.3, 0.0, INFINITY, -INFINITY, -INFINITY,
                                  -4.9406564584124654e-324)),
                KILN_F64, 0, 0.0, 0.0, -6.0, -0.625, -0.19999999999999998, INFINITY, NAN, NAN,
                INFINITY, 9.8813129168249309e-324);
    EXPECT_F32B(kiln_subtract(cx, F32B(0x00000001u, 0x3f800000u, 0x80000000u),
                              F32B(0x80000001u, 0x40e00000u, 0x80000000u)),
                0x00000002u, 0xc0c00000u, 0);
    EXPECT_NEAR(kiln_subtract(cx, DVEC(KILN_F16, 1.0, 0.125, 0.1, INFINITY),
                              DVEC(KILN_F16, 7.0, 0.75, 0.3, INFINITY)),
                KILN_F16, 0.001, -6.0, -0.625, -2.000730e-01, NAN);
    EXPECT_F16B(kiln_subtract(cx, F16B(0x0001), F16B(0x8001)), 0x0002);
    EXPECT_NEAR(kiln_subtract(cx, DVEC(KILN_BF16, 1.0, 0.125, 0.1, -INFINITY),
                              DVEC(KILN_BF16, 7.0, 0.75, 0.3, -INFINITY)),
                KILN_BF16, 0.001, -6.0, -0.625, -2.011720e-01, NAN);
    kiln_ctx_release(cx);
}

Test(elementwise, multiply) {
    kiln_ctx *cx = test_ctx();
    /* multiply.mlir: integers wrap (u16 65535*65535 would overflow int in C); i1 is and. */
    EXPECT_I8(kiln_multiply(cx, I8(0, 1, 8, -9, 0, -128), I8(-128, -1, 8, -9, 127, -1)), 0, -1, 64,
              81, 0, -128);
    EXPECT_U8(kiln_multiply(cx, U8(0, 16, 16), U8(255, 16, 17)), 0, 0, 16);
    EXPECT_I16(kiln_multiply(cx, I16(0, 1, 128, -129, 0), I16(-32768, -1, 128, -129, 32767)), 0, -1,
               16384, 16641, 0);
    EXPECT_U16(kiln_multiply(cx, U16(0, 256, 65535), U16(65535, 256, 65535)), 0, 0, 1);
    EXPECT_I32(kiln_multiply(cx, I32(0, 1, 32768, -32769, INT32_MIN),
                             I32(INT32_MIN, -1, 32768, -32769, -1)),
               0, -1, 1073741824, 1073807361, INT32_MIN);
    EXPECT_U32(kiln_multiply(cx, U32(0, 65536), U32(4294967295u, 65536)), 0, 0);
    EXPECT_I64(kiln_multiply(cx, I64(0, 1, 2147483648LL, -2147483649LL, 0),
                             I64(INT64_MIN, -1, 2147483648LL, -2147483649LL, INT64_MAX)),
               0, -1, 4611686018427387904LL, 4611686022722355201LL, 0);
    EXPECT_U64(kiln_multiply(cx, U64(0, 4294967296ull), U64(UINT64_MAX, 4294967296ull)), 0, 0);
    EXPECT_I1(kiln_multiply(cx, I1(0, 0, 1, 1), I1(0, 1, 0, 1)), 0, 0, 0, 1);
    EXPECT_NEAR(kiln_multiply(cx,
                              F64(0.0, -0.0, 1.0, 0.125, 0.1, INFINITY, INFINITY, -INFINITY,
                                  INFINITY, 4.9406564584124654e-324),
                              F64(0.0, -0.0, 7.0, 0.75, 0.3, 0.0, INFINITY, -INFINITY, -INFINITY,
                                  -4.9406564584124654e-324)),
                KILN_F64, 0, 0.0, 0.0, 7.0, 9.375e-02, 0.1 * 0.3, NAN, INFINITY, INFINITY,
                -INFINITY, -0.0);
    EXPECT_NEAR(kiln_multiply(cx, F32B(0x3f800000u, 0x7f800000u, 0x00000001u),
                              F32B(0x40e00000u, 0, 0x80000001u)),
                KILN_F32, 0, 7.0, NAN, -0.0);
    EXPECT_NEAR(kiln_multiply(cx, F32(0.1f, 3.14159265f), F32(0.3f, 3.14159265f)), KILN_F32, 0,
                (double)(0.1f * 0.3f), (double)(3.14159265f * 3.14159265f));
    EXPECT_NEAR(kiln_multiply(cx, DVEC(KILN_F16, 1.0, 0.125, 0.1, 3.141, INFINITY),
                              DVEC(KILN_F16, 7.0, 0.75, 0.3, 3.141, 0.0)),
                KILN_F16, 0.001, 7.0, 9.375e-02, 2.999880e-02, 9.867180e+00, NAN);
    EXPECT_NEAR(kiln_multiply(cx, BF16B(0x3f80, 0x3e00, 0x7c00, 0x7c00, 0x0001),
                              BF16B(0x40e0, 0x3f40, 0x0000, 0xfc00, 0x8001)),
                KILN_BF16, 0, 7.0, 9.375e-02, 0.0, -INFINITY, -0.0);
    kiln_ctx_release(cx);
}

Test(elementwise, divide) {
    kiln_ctx *cx = test_ctx();
    /* divide.mlir: truncation toward zero. */
    EXPECT_I64(kiln_divide(cx, I64(17, -17, 17, -17), I64(3, 3, -3, -3)), 5, -5, -5, 5);
    EXPECT_U64(kiln_divide(cx, U64(17, 18, 19, 20), U64(3, 4, 5, 7)), 5, 4, 3, 2);
    EXPECT_NEAR(kiln_divide(cx, F64(17.1, -17.1, 17.1, -17.1), F64(3.0, 3.0, -3.0, -3.0)), KILN_F64,
                TOL_F64, 5.7, -5.7, -5.7, 5.7);
    /* The traps: x/0 = -1 (all ones unsigned), INT_MIN/-1 = INT_MIN, in every width. */
    EXPECT_I8(kiln_divide(cx, I8(7, -7, 0, -128, -128, 127), I8(0, 0, 0, -1, 1, -1)), -1, -1, -1,
              -128, -128, -127);
    EXPECT_I16(kiln_divide(cx, I16(7, -32768, -7), I16(0, -1, 2)), -1, -32768, -3);
    EXPECT_I32(kiln_divide(cx, I32(7, INT32_MIN, -7), I32(0, -1, 2)), -1, INT32_MIN, -3);
    EXPECT_I64(kiln_divide(cx, I64(7, INT64_MIN, INT64_MIN), I64(0, -1, 2)), -1, INT64_MIN,
               INT64_MIN / 2);
    EXPECT_U8(kiln_divide(cx, U8(7, 255, 255), U8(0, 2, 255)), 255, 127, 1);
    EXPECT_U16(kiln_divide(cx, U16(7, 65535), U16(0, 256)), 65535, 255);
    EXPECT_U32(kiln_divide(cx, U32(7, 4294967295u), U32(0, 65536)), 4294967295u, 65535);
    EXPECT_U64(kiln_divide(cx, U64(7, UINT64_MAX), U64(0, 3)), UINT64_MAX, 6148914691236517205ull);
    /* IEEE: x/0 is a signed infinity, 0/0 NaN. */
    for (size_t k = 0; k < 4; k++) {
        kiln_dtype dt = FLOATS[k];
        EXPECT_NEAR(kiln_divide(cx, DVEC(dt, 1.0, -1.0, 0.0, 1.0, 6.0, INFINITY),
                                DVEC(dt, 0.0, 0.0, 0.0, -0.0, 4.0, INFINITY)),
                    dt, 0, INFINITY, -INFINITY, NAN, -INFINITY, 1.5, NAN);
    }
    kiln_ctx_release(cx);
}

Test(elementwise, remainder) {
    kiln_ctx *cx = test_ctx();
    /* remainder.mlir: the sign of the dividend. */
    EXPECT_I64(kiln_remainder(cx, I64(17, -17, 17, -17), I64(3, 3, -3, -3)), 2, -2, 2, -2);
    EXPECT_U64(kiln_remainder(cx, U64(17, 18, 19, 20), U64(3, 4, 5, 7)), 2, 2, 4, 6);
    EXPECT_NEAR(kiln_remainder(cx, F64(17.1, -17.1, 17.1, -17.1), F64(3.0, 3.0, -3.0, -3.0)),
                KILN_F64, 0, 2.1000000000000014, -2.1000000000000014, 2.1000000000000014,
                -2.1000000000000014);
    /* The traps: x%0 = x, INT_MIN%-1 = 0. */
    EXPECT_I8(kiln_remainder(cx, I8(7, -7, -128, -128, 5), I8(0, 0, -1, 3, -1)), 7, -7, 0, -2, 0);
    EXPECT_I16(kiln_remainder(cx, I16(7, -32768, -7), I16(0, -1, 2)), 7, 0, -1);
    EXPECT_I32(kiln_remainder(cx, I32(7, INT32_MIN, -7), I32(0, -1, 2)), 7, 0, -1);
    EXPECT_I64(kiln_remainder(cx, I64(7, INT64_MIN, -7), I64(0, -1, 2)), 7, 0, -1);
    EXPECT_U8(kiln_remainder(cx, U8(7, 255), U8(0, 7)), 7, 3);
    EXPECT_U16(kiln_remainder(cx, U16(7, 65535), U16(0, 7)), 7, 1);
    EXPECT_U32(kiln_remainder(cx, U32(7, 4294967295u), U32(0, 7)), 7, 3);
    EXPECT_U64(kiln_remainder(cx, U64(7, UINT64_MAX), U64(0, 10)), 7, 5);
    for (size_t k = 0; k < 4; k++) {
        kiln_dtype dt = FLOATS[k];
        EXPECT_NEAR(kiln_remainder(cx, DVEC(dt, 5.5, -5.5, 5.5, -0.0, 1.0, INFINITY, 3.0),
                                   DVEC(dt, 2.0, 2.0, -2.0, 1.0, 0.0, 1.0, INFINITY)),
                    dt, 0, 1.5, -1.5, 1.5, -0.0, NAN, NAN, 3.0);
    }
    kiln_ctx_release(cx);
}

Test(elementwise, power) {
    kiln_ctx *cx = test_ctx();
    /* power.mlir: negative exponents give 0 except for bases 1 and -1. */
    EXPECT_I64(kiln_power(cx, I64(-1, -1, -3, 1, -3, 0), I64(1, 0, -3, -3, 3, 2)), -1, 1, 0, 1, -27,
               0);
    EXPECT_U64(kiln_power(cx, U64(0, 0, 1, 1, 5), U64(0, 1, 0, 2, 5)), 1, 0, 1, 1, 3125);
    EXPECT_NEAR(kiln_power(cx, F64(-2.0, -0.0, -36.0, 5.0, 3.0, 10000.0),
                           F64(2.0, 2.0, 1.1, 2.0, -1.0, 10.0)),
                KILN_F64, TOL_F64, 4.0, 0.0, NAN, 25.0, 0.33333333333333331, 1.0e40);
    /* -1 to negative odd and even powers; 0 to a negative power; wrapping by squaring. */
    EXPECT_I8(kiln_power(cx, I8(-1, -1, 0, 2, 3, 2, -2), I8(-3, -4, -1, 7, 5, 8, 7)), -1, 1, 0,
              -128, -13, 0, -128);
    EXPECT_I16(kiln_power(cx, I16(3, 2, -1), I16(10, 15, -32768)), (int16_t)59049, -32768, 1);
    EXPECT_I32(kiln_power(cx, I32(3, 2, 7), I32(20, 31, 0)), (int32_t)3486784401u, INT32_MIN, 1);
    EXPECT_I64(kiln_power(cx, I64(3, 2, -1, 2), I64(40, 63, INT64_MIN, 64)),
               (int64_t)12157665459056928801ull, INT64_MIN, 1, 0);
    EXPECT_U8(kiln_power(cx, U8(2, 3, 255), U8(8, 5, 2)), 0, 243, 1);
    EXPECT_U16(kiln_power(cx, U16(2, 3), U16(16, 10)), 0, 59049);
    EXPECT_U32(kiln_power(cx, U32(2, 3), U32(31, 20)), 2147483648u, 3486784401u);
    EXPECT_U64(kiln_power(cx, U64(2, 3, 1), U64(63, 40, UINT64_MAX)), 9223372036854775808ull,
               12157665459056928801ull, 1);
    for (size_t k = 0; k < 4; k++) {
        kiln_dtype dt = FLOATS[k];
        EXPECT_NEAR(kiln_power(cx, DVEC(dt, 2.0, 4.0, 0.0, NAN, 1.0, -8.0),
                               DVEC(dt, 10.0, 0.5, -1.0, 0.0, NAN, 1.0 / 3.0)),
                    dt, tol_of(dt), 1024.0, 2.0, INFINITY, 1.0, 1.0, NAN);
    }
    kiln_ctx_release(cx);
}

Test(elementwise, maximum_and_minimum) {
    kiln_ctx *cx = test_ctx();
    /* maximum.mlir / minimum.mlir: NaN propagates, -0 < +0. */
    EXPECT_I8(kiln_maximum(cx, I8(0, 1, 8, -9, 0), I8(-128, -1, 8, -9, 127)), 0, 1, 8, -9, 127);
    EXPECT_I8(kiln_minimum(cx, I8(0, 1, 8, -9, 0), I8(-128, -1, 8, -9, 127)), -128, -1, 8, -9, 0);
    EXPECT_U8(kiln_maximum(cx, U8(0, 16), U8(255, 16)), 255, 16);
    EXPECT_U8(kiln_minimum(cx, U8(0, 16), U8(255, 16)), 0, 16);
    EXPECT_I16(kiln_maximum(cx, I16(0, 1, 128, -129, 0), I16(-32768, -1, 128, -129, 32767)), 0, 1,
               128, -129, 32767);
    EXPECT_I16(kiln_minimum(cx, I16(0, 1, 128, -129, 0), I16(-32768, -1, 128, -129, 32767)), -32768,
               -1, 128, -129, 0);
    EXPECT_U16(kiln_maximum(cx, U16(0, 256), U16(65535, 256)), 65535, 256);
    EXPECT_U16(kiln_minimum(cx, U16(0, 256), U16(65535, 256)), 0, 256);
    EXPECT_I32(kiln_maximum(cx, I32(0, 1, INT32_MAX), I32(INT32_MIN, -1, 0)), 0, 1, INT32_MAX);
    EXPECT_I32(kiln_minimum(cx, I32(0, 1, INT32_MAX), I32(INT32_MIN, -1, 0)), INT32_MIN, -1, 0);
    EXPECT_U32(kiln_maximum(cx, U32(0, 65536), U32(4294967295u, 65536)), 4294967295u, 65536);
    EXPECT_U32(kiln_minimum(cx, U32(0, 65536), U32(4294967295u, 65536)), 0, 65536);
    EXPECT_I64(kiln_maximum(cx, I64(0, 1, 0), I64(INT64_MIN, -1, INT64_MAX)), 0, 1, INT64_MAX);
    EXPECT_I64(kiln_minimum(cx, I64(0, 1, 0), I64(INT64_MIN, -1, INT64_MAX)), INT64_MIN, -1, 0);
    EXPECT_U64(kiln_maximum(cx, U64(0, 4294967296ull), U64(UINT64_MAX, 4294967296ull)), UINT64_MAX,
               4294967296ull);
    EXPECT_U64(kiln_minimum(cx, U64(0, 4294967296ull), U64(UINT64_MAX, 4294967296ull)), 0,
               4294967296ull);
    EXPECT_I1(kiln_maximum(cx, I1(0, 0, 1, 1), I1(0, 1, 0, 1)), 0, 1, 1, 1);
    EXPECT_I1(kiln_minimum(cx, I1(0, 0, 1, 1), I1(0, 1, 0, 1)), 0, 0, 0, 1);
    /* -inf/-inf, -inf/-1, -1/-tiny, -tiny/-0, 0/-0, 0/tiny, tiny/1, 1/inf, inf/inf, inf/-inf,
     * NaN/inf; and the operands swapped. */
    for (size_t k = 0; k < 4; k++) {
        kiln_dtype dt = FLOATS[k];
        double tiny = ldexp(1, dt == KILN_F64   ? -1074
                               : dt == KILN_F32 ? -149
                               : dt == KILN_F16 ? -24
                                                : -133);
        kiln_tensor *a = DVEC(dt, -INFINITY, -INFINITY, -1.0, -tiny, 0.0, 0.0, tiny, 1.0, INFINITY,
                              INFINITY, NAN, -0.0, 1.0);
        kiln_tensor *b = DVEC(dt, -INFINITY, -1.0, -tiny, -0.0, -0.0, tiny, 1.0, INFINITY, INFINITY,
                              -INFINITY, INFINITY, -0.0, NAN);
        double max_want[] = {-INFINITY, -1.0,     -tiny,    -0.0, 0.0,  tiny, 1.0,
                             INFINITY,  INFINITY, INFINITY, NAN,  -0.0, NAN};
        double min_want[] = {-INFINITY, -INFINITY, -1.0,      -tiny, -0.0, 0.0, tiny,
                             1.0,       INFINITY,  -INFINITY, NAN,   -0.0, NAN};
        expect_values(cx, kiln_maximum(cx, a, b), dt, 0, max_want, 13, "maximum", __LINE__);
        expect_values(cx, kiln_maximum(cx, b, a), dt, 0, max_want, 13, "maximum swapped", __LINE__);
        expect_values(cx, kiln_minimum(cx, a, b), dt, 0, min_want, 13, "minimum", __LINE__);
        expect_values(cx, kiln_minimum(cx, b, a), dt, 0, min_want, 13, "minimum swapped", __LINE__);
    }
    kiln_ctx_release(cx);
}

Test(elementwise, atan2) {
    kiln_ctx *cx = test_ctx();
    /* atan2.mlir, and the quadrants and signed zeros. */
    for (size_t k = 0; k < 4; k++) {
        kiln_dtype dt = FLOATS[k];
        EXPECT_NEAR(kiln_atan2(cx, DVEC(dt, 0.0, 1.0, -1.0, 1.0, -1.0, 0.0, -0.0, NAN),
                               DVEC(dt, 0.0, 0.0, 0.0, -1.0, -1.0, -1.0, -1.0, 1.0)),
                    dt, tol_of(dt), 0.0, 1.5707963267948966, -1.5707963267948966,
                    2.3561944901923448, -2.3561944901923448, 3.1415926535897931,
                    -3.1415926535897931, NAN);
    }
    kiln_ctx_release(cx);
}

/* ---- bitwise and shifts ------------------------------------------------------------------- */

Test(elementwise, and_or_xor) {
    kiln_ctx *cx = test_ctx();
    /* and.mlir / or.mlir / xor.mlir */
    EXPECT_I8(kiln_and(cx, I8(127, -128, -128), I8(0, 127, -128)), 0, 0, -128);
    EXPECT_I8(kiln_or(cx, I8(127, -128, -128), I8(0, 127, -128)), 127, -1, -128);
    EXPECT_I8(kiln_xor(cx, I8(127, -128, -128), I8(0, 127, -128)), 127, -1, 0);
    EXPECT_U8(kiln_and(cx, U8(0, 127, 255), U8(255, 255, 255)), 0, 127, 255);
    EXPECT_U8(kiln_or(cx, U8(0, 127, 255), U8(255, 255, 255)), 255, 255, 255);
    EXPECT_U8(kiln_xor(cx, U8(0, 127, 255), U8(255, 255, 255)), 255, 128, 0);
    EXPECT_I16(kiln_and(cx, I16(32767, -32768, -32768), I16(0, 32767, -32768)), 0, 0, -32768);
    EXPECT_I16(kiln_or(cx, I16(32767, -32768, -32768), I16(0, 32767, -32768)), 32767, -1, -32768);
    EXPECT_I16(kiln_xor(cx, I16(32767, -32768, -32768), I16(0, 32767, -32768)), 32767, -1, 0);
    EXPECT_U16(kiln_xor(cx, U16(0, 32767, 65535), U16(65535, 65535, 65535)), 65535, 32768, 0);
    EXPECT_I32(kiln_and(cx, I32(INT32_MAX, INT32_MIN, INT32_MIN), I32(0, INT32_MAX, INT32_MIN)), 0,
               0, INT32_MIN);
    EXPECT_I32(kiln_or(cx, I32(INT32_MAX, INT32_MIN), I32(0, INT32_MAX)), INT32_MAX, -1);
    EXPECT_U32(
        kiln_xor(cx, U32(0, 2147483647u, 4294967295u), U32(4294967295u, 4294967295u, 4294967295u)),
        4294967295u, 2147483648u, 0);
    EXPECT_I64(kiln_and(cx, I64(INT64_MAX, INT64_MIN, INT64_MIN), I64(0, INT64_MAX, INT64_MIN)), 0,
               0, INT64_MIN);
    EXPECT_I64(kiln_xor(cx, I64(INT64_MAX, INT64_MIN), I64(0, INT64_MAX)), INT64_MAX, -1);
    EXPECT_U64(kiln_or(cx, U64(0, 9223372036854775807ull), U64(UINT64_MAX, 0)), UINT64_MAX,
               9223372036854775807ull);
    EXPECT_I1(kiln_and(cx, I1(0, 0, 1, 1), I1(0, 1, 0, 1)), 0, 0, 0, 1);
    EXPECT_I1(kiln_or(cx, I1(0, 0, 1, 1), I1(0, 1, 0, 1)), 0, 1, 1, 1);
    EXPECT_I1(kiln_xor(cx, I1(0, 0, 1, 1), I1(0, 1, 0, 1)), 0, 1, 1, 0);
    kiln_ctx_release(cx);
}

Test(elementwise, shifts) {
    kiln_ctx *cx = test_ctx();
    /* shift_left.mlir, shift_right_arithmetic.mlir, shift_right_logical.mlir */
    EXPECT_I64(kiln_shift_left(cx, I64(-1, 0, 1), I64(1, 2, 3)), -2, 0, 8);
    EXPECT_I64(kiln_shift_right_arithmetic(cx, I64(-1, 0, 8), I64(1, 2, 3)), -1, 0, 1);
    EXPECT_I64(kiln_shift_right_logical(cx, I64(-1, 0, 8), I64(1, 2, 3)), INT64_MAX, 0, 1);
    /* Amounts of the width or more (and negative ones, read as unsigned) give 0, or the sign
     * for arithmetic right shifts. */
    EXPECT_I64(kiln_shift_left(cx, I64(1, 1, 1, 3), I64(63, 64, -1, 62)), INT64_MIN, 0, 0,
               INT64_MIN + 0x4000000000000000LL);
    EXPECT_I64(kiln_shift_right_arithmetic(cx, I64(INT64_MIN, -5, 5, -1), I64(63, 64, 100, -3)), -1,
               -1, 0, -1);
    EXPECT_I64(kiln_shift_right_logical(cx, I64(INT64_MIN, -1, -1), I64(63, 64, -1)), 1, 0, 0);
    EXPECT_I8(kiln_shift_left(cx, I8(1, 1, 3, -1), I8(7, 8, 6, -1)), -128, 0, -64, 0);
    EXPECT_I8(kiln_shift_right_arithmetic(cx, I8(-128, -128, 64, -1), I8(7, 8, 9, -128)), -1, -1, 0,
              -1);
    EXPECT_I8(kiln_shift_right_logical(cx, I8(-128, -1, -1), I8(7, 8, 1)), 1, 0, 127);
    EXPECT_I16(kiln_shift_left(cx, I16(1, 1), I16(15, 16)), -32768, 0);
    EXPECT_I16(kiln_shift_right_arithmetic(cx, I16(-32768, -32768), I16(1, 16)), -16384, -1);
    EXPECT_I16(kiln_shift_right_logical(cx, I16(-32768, -1), I16(15, 16)), 1, 0);
    EXPECT_I32(kiln_shift_left(cx, I32(1, 1, 5), I32(31, 32, 1)), INT32_MIN, 0, 10);
    EXPECT_I32(kiln_shift_right_arithmetic(cx, I32(INT32_MIN, INT32_MIN, 100), I32(31, 40, 2)), -1,
               -1, 25);
    EXPECT_I32(kiln_shift_right_logical(cx, I32(INT32_MIN, -1), I32(31, 32)), 1, 0);
    /* Unsigned: the arithmetic right shift still fills with the top bit. */
    EXPECT_U8(kiln_shift_left(cx, U8(255, 1, 1), U8(1, 7, 8)), 254, 128, 0);
    EXPECT_U8(kiln_shift_right_logical(cx, U8(128, 255, 255), U8(7, 8, 255)), 1, 0, 0);
    EXPECT_U8(kiln_shift_right_arithmetic(cx, U8(128, 128, 64, 255), U8(1, 8, 1, 3)), 192, 255, 32,
              255);
    EXPECT_U16(kiln_shift_left(cx, U16(1, 1), U16(15, 16)), 32768, 0);
    EXPECT_U16(kiln_shift_right_arithmetic(cx, U16(32768, 32768), U16(15, 16)), 65535, 65535);
    EXPECT_U16(kiln_shift_right_logical(cx, U16(32768), U16(15)), 1);
    EXPECT_U32(kiln_shift_left(cx, U32(1, 1), U32(31, 32)), 2147483648u, 0);
    EXPECT_U32(kiln_shift_right_arithmetic(cx, U32(2147483648u, 1073741824u), U32(31, 1)),
               4294967295u, 536870912u);
    EXPECT_U32(kiln_shift_right_logical(cx, U32(2147483648u, 7), U32(31, 4294967295u)), 1, 0);
    EXPECT_U64(kiln_shift_left(cx, U64(1, 1), U64(63, 64)), 9223372036854775808ull, 0);
    EXPECT_U64(kiln_shift_right_arithmetic(cx, U64(9223372036854775808ull, 8), U64(63, 3)),
               UINT64_MAX, 1);
    EXPECT_U64(kiln_shift_right_logical(cx, U64(UINT64_MAX, UINT64_MAX), U64(63, 64)), 1, 0);
    kiln_ctx_release(cx);
}

/* ---- compare, select, clamp --------------------------------------------------------------- */

/* compare.mlir's f64 operands: -NaN, -NaN, -inf, -inf, -2, -2, -0, -0, +0, 1, 2, inf, NaN,
 * NaN against -NaN, +NaN, -inf, +inf, -2, -1, -0, +0, +0, 2, 2, inf, NaN, max NaN. */
static kiln_tensor *cmp_lhs(kiln_ctx *cx) {
    return F64B(0xfff0000000000001ull, 0xfff0000000000001ull, 0xfff0000000000000ull,
                0xfff0000000000000ull, 0xc000000000000000ull, 0xc000000000000000ull,
                0x8000000000000000ull, 0x8000000000000000ull, 0, 0x3ff0000000000000ull,
                0x4000000000000000ull, 0x7ff0000000000000ull, 0x7ff0000000000001ull,
                0x7ff0000000000001ull);
}
static kiln_tensor *cmp_rhs(kiln_ctx *cx) {
    return F64B(0xfff0000000000001ull, 0x7ff0000000000001ull, 0xfff0000000000000ull,
                0x7ff0000000000000ull, 0xc000000000000000ull, 0xbff0000000000000ull,
                0x8000000000000000ull, 0, 0, 0x4000000000000000ull, 0x4000000000000000ull,
                0x7ff0000000000000ull, 0x7ff0000000000001ull, 0x7fffffffffffffffull);
}

Test(elementwise, compare_floats) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *l = cmp_lhs(cx), *r = cmp_rhs(cx);
    /* FLOAT: compare.mlir's expected results. */
    EXPECT_I1(kiln_compare(cx, l, r, KILN_CMP_EQ, KILN_CMP_FLOAT), 0, 0, 1, 0, 1, 0, 1, 1, 1, 0, 1,
              1, 0, 0);
    EXPECT_I1(kiln_compare(cx, l, r, KILN_CMP_NE, KILN_CMP_FLOAT), 1, 1, 0, 1, 0, 1, 0, 0, 0, 1, 0,
              0, 1, 1);
    EXPECT_I1(kiln_compare(cx, l, r, KILN_CMP_GE, KILN_CMP_FLOAT), 0, 0, 1, 0, 1, 0, 1, 1, 1, 0, 1,
              1, 0, 0);
    EXPECT_I1(kiln_compare(cx, l, r, KILN_CMP_GT, KILN_CMP_FLOAT), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
              0, 0, 0);
    EXPECT_I1(kiln_compare(cx, l, r, KILN_CMP_LE, KILN_CMP_FLOAT), 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1,
              1, 0, 0);
    EXPECT_I1(kiln_compare(cx, l, r, KILN_CMP_LT, KILN_CMP_FLOAT), 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0,
              0, 0, 0);
    /* DEFAULT is FLOAT for floats: -NaN == -NaN is false. */
    EXPECT_I1(kiln_compare(cx, l, l, KILN_CMP_EQ, KILN_CMP_DEFAULT), 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
              1, 1, 0, 0);
    /* TOTALORDER: by bit pattern, -NaN < -inf < ... < -0 < +0 < ... < inf < NaN; equal bit
     * patterns are equal (NaN included), -0 != +0. */
    EXPECT_I1(kiln_compare(cx, l, r, KILN_CMP_EQ, KILN_CMP_TOTALORDER), 1, 0, 1, 0, 1, 0, 1, 0, 1,
              0, 1, 1, 1, 0);
    EXPECT_I1(kiln_compare(cx, l, r, KILN_CMP_NE, KILN_CMP_TOTALORDER), 0, 1, 0, 1, 0, 1, 0, 1, 0,
              1, 0, 0, 0, 1);
    EXPECT_I1(kiln_compare(cx, l, r, KILN_CMP_LT, KILN_CMP_TOTALORDER), 0, 1, 0, 1, 0, 1, 0, 1, 0,
              1, 0, 0, 0, 1);
    EXPECT_I1(kiln_compare(cx, l, r, KILN_CMP_LE, KILN_CMP_TOTALORDER), 1, 1, 1, 1, 1, 1, 1, 1, 1,
              1, 1, 1, 1, 1);
    EXPECT_I1(kiln_compare(cx, l, r, KILN_CMP_GT, KILN_CMP_TOTALORDER), 0, 0, 0, 0, 0, 0, 0, 0, 0,
              0, 0, 0, 0, 0);
    EXPECT_I1(kiln_compare(cx, r, l, KILN_CMP_GT, KILN_CMP_TOTALORDER), 0, 1, 0, 1, 0, 1, 0, 1, 0,
              1, 0, 0, 0, 1);
    EXPECT_I1(kiln_compare(cx, r, l, KILN_CMP_GE, KILN_CMP_TOTALORDER), 1, 1, 1, 1, 1, 1, 1, 1, 1,
              1, 1, 1, 1, 1);
    /* The same orders in f32, f16 and bf16: -NaN, -inf, -1, -0, +0, 1, inf, NaN. */
    kiln_tensor *f32 = F32B(0xffc00000u, 0xff800000u, 0xbf800000u, 0x80000000u, 0, 0x3f800000u,
                            0x7f800000u, 0x7fc00000u);
    kiln_tensor *f16 = F16B(0xfe00, 0xfc00, 0xbc00, 0x8000, 0, 0x3c00, 0x7c00, 0x7e00);
    kiln_tensor *bf16 = BF16B(0xffc0, 0xff80, 0xbf80, 0x8000, 0, 0x3f80, 0x7f80, 0x7fc0);
    kiln_tensor *sets[] = {f32, f16, bf16};
    for (int k = 0; k < 3; k++) {
        kiln_tensor *a = sets[k];
        /* a against itself shifted by one: each element below the next. */
        kiln_tensor *lo = kiln_slice(cx, a, KILN_DIMS(0), KILN_DIMS(7), KILN_DIMS(1));
        kiln_tensor *hi = kiln_slice(cx, a, KILN_DIMS(1), KILN_DIMS(8), KILN_DIMS(1));
        EXPECT_I1(kiln_compare(cx, lo, hi, KILN_CMP_LT, KILN_CMP_TOTALORDER), 1, 1, 1, 1, 1, 1, 1);
        EXPECT_I1(kiln_compare(cx, lo, hi, KILN_CMP_LT, KILN_CMP_FLOAT), 0, 1, 1, 0, 1, 1, 0);
        EXPECT_I1(kiln_compare(cx, lo, hi, KILN_CMP_EQ, KILN_CMP_FLOAT), 0, 0, 0, 1, 0, 0, 0);
        EXPECT_I1(kiln_compare(cx, a, a, KILN_CMP_EQ, KILN_CMP_TOTALORDER), 1, 1, 1, 1, 1, 1, 1, 1);
        EXPECT_I1(kiln_compare(cx, a, a, KILN_CMP_NE, KILN_CMP_FLOAT), 1, 0, 0, 0, 0, 0, 0, 1);
        EXPECT_I1(kiln_compare(cx, hi, lo, KILN_CMP_GE, KILN_CMP_DEFAULT), 0, 1, 1, 1, 1, 1, 0);
    }
    kiln_ctx_release(cx);
}

Test(elementwise, compare_integers) {
    kiln_ctx *cx = test_ctx();
    /* compare.mlir: si64, ui64, i1, each direction. */
    kiln_tensor *a = I64(-2, -1, 0, 2, 2), *b = I64(-2, -2, 0, 1, 2);
    EXPECT_I1(kiln_compare(cx, a, b, KILN_CMP_EQ, KILN_CMP_SIGNED), 1, 0, 1, 0, 1);
    EXPECT_I1(kiln_compare(cx, a, b, KILN_CMP_NE, KILN_CMP_SIGNED), 0, 1, 0, 1, 0);
    EXPECT_I1(kiln_compare(cx, a, b, KILN_CMP_GE, KILN_CMP_SIGNED), 1, 1, 1, 1, 1);
    EXPECT_I1(kiln_compare(cx, a, b, KILN_CMP_GT, KILN_CMP_SIGNED), 0, 1, 0, 1, 0);
    EXPECT_I1(kiln_compare(cx, a, b, KILN_CMP_LE, KILN_CMP_SIGNED), 1, 0, 1, 0, 1);
    EXPECT_I1(kiln_compare(cx, a, b, KILN_CMP_LT, KILN_CMP_DEFAULT), 0, 0, 0, 0, 0);
    kiln_tensor *u = U64(0, 1, UINT64_MAX), *v = U64(0, 0, 1);
    EXPECT_I1(kiln_compare(cx, u, v, KILN_CMP_EQ, KILN_CMP_UNSIGNED), 1, 0, 0);
    EXPECT_I1(kiln_compare(cx, u, v, KILN_CMP_NE, KILN_CMP_UNSIGNED), 0, 1, 1);
    EXPECT_I1(kiln_compare(cx, u, v, KILN_CMP_GE, KILN_CMP_UNSIGNED), 1, 1, 1);
    EXPECT_I1(kiln_compare(cx, u, v, KILN_CMP_GT, KILN_CMP_DEFAULT), 0, 1, 1);
    EXPECT_I1(kiln_compare(cx, u, v, KILN_CMP_LE, KILN_CMP_UNSIGNED), 1, 0, 0);
    EXPECT_I1(kiln_compare(cx, u, v, KILN_CMP_LT, KILN_CMP_UNSIGNED), 0, 0, 0);
    kiln_tensor *p = I1(1, 1, 0, 0), *q = I1(1, 0, 1, 0);
    EXPECT_I1(kiln_compare(cx, p, q, KILN_CMP_EQ, KILN_CMP_UNSIGNED), 1, 0, 0, 1);
    EXPECT_I1(kiln_compare(cx, p, q, KILN_CMP_NE, KILN_CMP_UNSIGNED), 0, 1, 1, 0);
    EXPECT_I1(kiln_compare(cx, p, q, KILN_CMP_GE, KILN_CMP_UNSIGNED), 1, 1, 0, 1);
    EXPECT_I1(kiln_compare(cx, p, q, KILN_CMP_GT, KILN_CMP_UNSIGNED), 0, 1, 0, 0);
    EXPECT_I1(kiln_compare(cx, p, q, KILN_CMP_LE, KILN_CMP_DEFAULT), 1, 0, 1, 1);
    EXPECT_I1(kiln_compare(cx, p, q, KILN_CMP_LT, KILN_CMP_UNSIGNED), 0, 0, 1, 0);
    /* Every other integer dtype orders by its signedness. */
    EXPECT_I1(kiln_compare(cx, I8(-128, 127), I8(127, -128), KILN_CMP_LT, KILN_CMP_SIGNED), 1, 0);
    EXPECT_I1(kiln_compare(cx, I16(-1, 5), I16(0, 5), KILN_CMP_LT, KILN_CMP_DEFAULT), 1, 0);
    EXPECT_I1(kiln_compare(cx, I32(INT32_MIN, 0), I32(0, 0), KILN_CMP_GE, KILN_CMP_SIGNED), 0, 1);
    EXPECT_I1(kiln_compare(cx, U8(255, 0), U8(0, 0), KILN_CMP_GT, KILN_CMP_UNSIGNED), 1, 0);
    EXPECT_I1(kiln_compare(cx, U16(65535, 1), U16(1, 1), KILN_CMP_LE, KILN_CMP_DEFAULT), 0, 1);
    EXPECT_I1(kiln_compare(cx, U32(4294967295u, 3), U32(0, 3), KILN_CMP_NE, KILN_CMP_UNSIGNED), 1,
              0);
    /* A rank-0 compare (compare.mlir's *_default cases). */
    int64_t m2 = -2;
    kiln_tensor *s = make_shaped(cx, KILN_I64, KILN_SHAPE_SCALAR, &m2);
    kiln_tensor *c = kiln_compare(cx, s, s, KILN_CMP_EQ, KILN_CMP_DEFAULT);
    EXPECT_I1(c, 1);
    cr_assert_eq(kiln_tensor_rank(c), 0);
    kiln_ctx_release(cx);
}

Test(elementwise, select) {
    kiln_ctx *cx = test_ctx();
    /* select.mlir: elementwise and rank-0 pred. */
    EXPECT_I64(kiln_select(cx, I1(1, 0, 1), I64(2, 3, -1), I64(3, 7, -3)), 2, 7, -1);
    uint8_t f = 0, t = 1;
    kiln_tensor *pf = make_shaped(cx, KILN_BOOL, KILN_SHAPE_SCALAR, &f);
    kiln_tensor *pt = make_shaped(cx, KILN_BOOL, KILN_SHAPE_SCALAR, &t);
    EXPECT_I64(kiln_select(cx, pf, I64(2, 3, -1), I64(3, 7, -3)), 3, 7, -3);
    EXPECT_I64(kiln_select(cx, pt, I64(2, 3, -1), I64(3, 7, -3)), 2, 3, -1);
    /* Every element size, and bit patterns kept (NaN payloads, -0). */
    EXPECT_I1(kiln_select(cx, I1(1, 0), I1(0, 0), I1(1, 1)), 0, 1);
    EXPECT_U8(kiln_select(cx, I1(0, 1), U8(1, 2), U8(3, 4)), 3, 2);
    EXPECT_I16(kiln_select(cx, I1(0, 1), I16(1, 2), I16(3, 4)), 3, 2);
    EXPECT_F16B(kiln_select(cx, I1(0, 1), F16B(0x7e01, 0x8000), F16B(0xfe02, 0)), 0xfe02, 0x8000);
    EXPECT_BF16B(kiln_select(cx, I1(1, 0), BF16B(0x7fc1, 1), BF16B(2, 3)), 0x7fc1, 3);
    EXPECT_F32B(kiln_select(cx, I1(1, 0), F32B(0x7fc00001u, 1), F32B(2, 0x80000000u)), 0x7fc00001u,
                0x80000000u);
    EXPECT_F64B(kiln_select(cx, I1(0, 1), F64B(1, 2), F64B(0xfff8000000000001ull, 4)),
                0xfff8000000000001ull, 2);
    EXPECT_U32(kiln_select(cx, I1(1), U32(7), U32(8)), 7);
    /* All three broadcast together, as numpy's where. */
    int32_t seven = 7;
    kiln_tensor *r = kiln_select(cx, I1(1, 0, 1), I32(1, 2, 3),
                                 make_shaped(cx, KILN_I32, KILN_SHAPE_SCALAR, &seven));
    EXPECT_I32(r, 1, 7, 3);
    kiln_tensor *col = make_shaped(cx, KILN_BOOL, KILN_SHAPE(2, 1), (const uint8_t[]){1, 0});
    r = kiln_select(cx, col, I32(1, 2, 3), make_shaped(cx, KILN_I32, KILN_SHAPE_SCALAR, &seven));
    cr_assert(kiln_shape_equal(kiln_tensor_shape(r), &KILN_SHAPE(2, 3)));
    EXPECT_I32(r, 1, 2, 3, 7, 7, 7);
    kiln_ctx_release(cx);
}

Test(elementwise, clamp) {
    kiln_ctx *cx = test_ctx();
    /* clamp.mlir: min/max of the operand's shape or rank 0. */
    int64_t zero = 0, one = 1;
    kiln_tensor *s0 = make_shaped(cx, KILN_I64, KILN_SHAPE_SCALAR, &zero);
    kiln_tensor *s1 = make_shaped(cx, KILN_I64, KILN_SHAPE_SCALAR, &one);
    EXPECT_I64(kiln_clamp(cx, I64(1, 5, -5), I64(2, 3, -1), I64(3, 7, -3)), 2, 5, -3);
    EXPECT_I64(kiln_clamp(cx, I64(0, 0, -2), I64(2, 3, -1), s1), 1, 1, -1);
    EXPECT_I64(kiln_clamp(cx, s0, I64(2, 3, -1), I64(1, 1, 4)), 1, 1, 0);
    EXPECT_I64(kiln_clamp(cx, s0, I64(2, 3, -1), s1), 1, 1, 0);
    /* Every dtype: min(max(x, lo), hi), with maximum/minimum's NaN and signed-zero rules. */
    EXPECT_I8(kiln_clamp(cx, I8(-128, 0), I8(-100, 100), I8(-50, 50)), -100, 50);
    EXPECT_I16(kiln_clamp(cx, I16(-5, 0), I16(-100, 100), I16(5, 50)), -5, 50);
    EXPECT_I32(kiln_clamp(cx, I32(-5, 0), I32(-100, 100), I32(5, 50)), -5, 50);
    EXPECT_U8(kiln_clamp(cx, U8(10, 10), U8(5, 255), U8(20, 20)), 10, 20);
    EXPECT_U16(kiln_clamp(cx, U16(10, 10), U16(5, 65535), U16(20, 20)), 10, 20);
    EXPECT_U32(kiln_clamp(cx, U32(10, 10), U32(5, 4294967295u), U32(20, 20)), 10, 20);
    EXPECT_U64(kiln_clamp(cx, U64(10, 10), U64(5, UINT64_MAX), U64(20, 20)), 10, 20);
    EXPECT_I1(kiln_clamp(cx, I1(1, 0, 0), I1(0, 1, 0), I1(1, 0, 1)), 1, 0, 0);
    for (size_t k = 0; k < 4; k++) {
        kiln_dtype dt = FLOATS[k];
        EXPECT_NEAR(kiln_clamp(cx, DVEC(dt, -1.0, -1.0, -1.0, -0.0, NAN, -1.0, 2.0),
                               DVEC(dt, -5.0, 0.5, 5.0, 0.0, 0.5, NAN, 0.0),
                               DVEC(dt, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)),
                    dt, 0, -1.0, 0.5, 1.0, 0.0, NAN, NAN, 1.0);
        double lo = -0.0, hi = 0.0;
        (void)lo, (void)hi;
        kiln_tensor *slo = kiln_convert(cx, make_shaped(cx, KILN_F64, KILN_SHAPE_SCALAR, &lo), dt);
        kiln_tensor *shi = kiln_convert(cx, make_shaped(cx, KILN_F64, KILN_SHAPE_SCALAR, &hi), dt);
        EXPECT_NEAR(kiln_clamp(cx, slo, DVEC(dt, -3.0, -0.0, 0.0, 3.0, NAN), shi), dt, 0, -0.0,
                    -0.0, 0.0, 0.0, NAN);
    }
    kiln_ctx_release(cx);
}

/* ---- conversions -------------------------------------------------------------------------- */

static const kiln_dtype ALL[] = {KILN_BOOL, KILN_I8,  KILN_I16, KILN_I32, KILN_I64,
                                 KILN_U8,   KILN_U16, KILN_U32, KILN_U64, KILN_F16,
                                 KILN_BF16, KILN_F32, KILN_F64};

Test(elementwise, convert_every_pair) {
    kiln_ctx *cx = test_ctx();
    /* convert.mlir's cases generalised: 0, 1 and 5 are exact in every dtype but i1 (where
     * non-zero is true), in every (source, target) pair, and i1 converts to 0 and 1. */
    for (size_t i = 0; i < 13; i++) {
        for (size_t j = 0; j < 13; j++) {
            kiln_dtype from = ALL[i], to = ALL[j];
            kiln_tensor *x = DVEC(from, 0.0, 1.0, 5.0);
            kiln_tensor *y = kiln_convert(cx, x, to);
            cr_assert_not_null(y, "%s -> %s: %s", kiln_dtype_name(from), kiln_dtype_name(to),
                               kiln_ctx_error_message(cx));
            double want = from == KILN_BOOL || to == KILN_BOOL ? 1.0 : 5.0;
            expect_values(cx, y, to, 0, (const double[]){0.0, 1.0, want}, 3, kiln_dtype_name(to),
                          __LINE__);
        }
    }
    /* Signed values to every signed and float dtype; -1 to i1 is true. */
    for (size_t j = 0; j < 13; j++) {
        kiln_dtype to = ALL[j];
        if (to == KILN_BOOL) {
            EXPECT_I1(kiln_convert(cx, I64(-1, 0, 1), to), 1, 0, 1);
        } else if (kiln_dtype_is_signed(to)) {
            expect_values(cx, kiln_convert(cx, I8(-1, -100, 100), to), to, 0,
                          (const double[]){-1.0, -100.0, 100.0}, 3, kiln_dtype_name(to), __LINE__);
            expect_values(cx, kiln_convert(cx, F64(-1.0, -100.0, 100.0), to), to, 0,
                          (const double[]){-1.0, -100.0, 100.0}, 3, kiln_dtype_name(to), __LINE__);
        }
    }
    kiln_ctx_release(cx);
}

Test(elementwise, convert_float_to_int_saturates) {
    kiln_ctx *cx = test_ctx();
    /* Truncation toward zero; out of range saturates; NaN -> 0; to i1, non-zero (NaN
     * included) is true. */
    kiln_tensor *x = F64(1.9, -1.9, 1e30, -1e30, NAN, INFINITY, -INFINITY, -0.5, 127.9, -128.9);
    EXPECT_I8(kiln_convert(cx, x, KILN_I8), 1, -1, 127, -128, 0, 127, -128, 0, 127, -128);
    EXPECT_U8(kiln_convert(cx, x, KILN_U8), 1, 0, 255, 0, 0, 255, 0, 0, 127, 0);
    EXPECT_I16(kiln_convert(cx, x, KILN_I16), 1, -1, 32767, -32768, 0, 32767, -32768, 0, 127, -128);
    EXPECT_U16(kiln_convert(cx, x, KILN_U16), 1, 0, 65535, 0, 0, 65535, 0, 0, 127, 0);
    EXPECT_I32(kiln_convert(cx, x, KILN_I32), 1, -1, INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN,
               0, 127, -128);
    EXPECT_U32(kiln_convert(cx, x, KILN_U32), 1, 0, UINT32_MAX, 0, 0, UINT32_MAX, 0, 0, 127, 0);
    EXPECT_I64(kiln_convert(cx, x, KILN_I64), 1, -1, INT64_MAX, INT64_MIN, 0, INT64_MAX, INT64_MIN,
               0, 127, -128);
    EXPECT_U64(kiln_convert(cx, x, KILN_U64), 1, 0, UINT64_MAX, 0, 0, UINT64_MAX, 0, 0, 127, 0);
    EXPECT_I1(kiln_convert(cx, x, KILN_BOOL), 1, 1, 1, 1, 1, 1, 1, 1, 1, 1);
    EXPECT_I1(kiln_convert(cx, F64(0.0, -0.0), KILN_BOOL), 0, 0);
    /* The edges of the 32- and 64-bit ranges. */
    EXPECT_I32(
        kiln_convert(cx, F64(2147483647.9, 2147483648.0, -2147483648.9, -2147483649.0), KILN_I32),
        INT32_MAX, INT32_MAX, INT32_MIN, INT32_MIN);
    EXPECT_U32(kiln_convert(cx, F64(4294967295.5, 4294967296.0), KILN_U32), UINT32_MAX, UINT32_MAX);
    EXPECT_I64(kiln_convert(cx, F64(9223372036854774784.0, 9223372036854775808.0), KILN_I64),
               9223372036854774784LL, INT64_MAX);
    EXPECT_U64(kiln_convert(cx, F64(18446744073709549568.0, 18446744073709551616.0), KILN_U64),
               18446744073709549568ull, UINT64_MAX);
    /* From f32, f16 and bf16 too. */
    EXPECT_I32(kiln_convert(cx, F32(2147483648.0f, -3.99f, NAN, 2147483520.0f), KILN_I32),
               INT32_MAX, -3, 0, 2147483520);
    EXPECT_I64(kiln_convert(cx, F32(9223372036854775808.0f, -9223372036854775808.0f), KILN_I64),
               INT64_MAX, INT64_MIN);
    EXPECT_U8(kiln_convert(cx, F16B(0x7c00, 0xfe00, 0x5bf8, 0x4d00), KILN_U8), 255, 0, 255, 20);
    EXPECT_I8(kiln_convert(cx, BF16B(0xff80, 0x7fc0, 0xc2fe, 0xc080), KILN_I8), -128, 0, -127, -4);
    kiln_ctx_release(cx);
}

Test(elementwise, convert_integers_and_rounding) {
    kiln_ctx *cx = test_ctx();
    /* int -> int wraps modulo 2^bits. */
    EXPECT_I8(kiln_convert(cx, I32(128, 255, 256, -129), KILN_I8), -128, -1, 0, 127);
    EXPECT_U8(kiln_convert(cx, I64(-1, 256, 257), KILN_U8), 255, 0, 1);
    EXPECT_I64(kiln_convert(cx, U64(UINT64_MAX), KILN_I64), -1);
    EXPECT_U64(kiln_convert(cx, I8(-1), KILN_U64), UINT64_MAX);
    EXPECT_U32(kiln_convert(cx, I16(-2), KILN_U32), 4294967294u);
    EXPECT_I16(kiln_convert(cx, U16(65535), KILN_I16), -1);
    EXPECT_U16(kiln_convert(cx, I1(1, 0), KILN_U16), 1, 0);
    EXPECT_I1(kiln_convert(cx, U64(0, 1, 256), KILN_BOOL), 0, 1, 1);
    /* int -> float rounds to nearest even, once. */
    EXPECT_NEAR(kiln_convert(cx, I32(16777217, 16777219), KILN_F32), KILN_F32, 0, 16777216.0,
                16777220.0);
    EXPECT_NEAR(kiln_convert(cx, I64(9007199254740993LL), KILN_F64), KILN_F64, 0,
                9007199254740992.0);
    EXPECT_NEAR(kiln_convert(cx, U64(UINT64_MAX), KILN_F32), KILN_F32, 0, 18446744073709551616.0);
    EXPECT_NEAR(kiln_convert(cx, I32(2049, 2051, 65504, 65519, 65520, -70000), KILN_F16), KILN_F16,
                0, 2048.0, 2052.0, 65504.0, 65504.0, INFINITY, -INFINITY);
    /* bf16 (8 bits) from a 64-bit integer: 2^60 + 2^52 + 1 is just above the halfway point
     * between 2^60 and 2^60 + 2^53; going through f32 first would round it to the tie and
     * then to even (2^60). */
    int64_t v = (1LL << 60) + (1LL << 52) + 1;
    EXPECT_NEAR(kiln_convert(cx, I64(v, -v, 257, 259), KILN_BF16), KILN_BF16, 0,
                1152921504606846976.0 + 9007199254740992.0,
                -(1152921504606846976.0 + 9007199254740992.0), 256.0, 260.0);
    EXPECT_NEAR(kiln_convert(cx, U64((uint64_t)v), KILN_BF16), KILN_BF16, 0,
                1152921504606846976.0 + 9007199254740992.0);
    /* 2^24 + 2^16 + 1 is above the bf16 halfway point 2^24 + 2^16 (through f32 it would be
     * rounded to that tie first). */
    EXPECT_NEAR(kiln_convert(cx, U32(16842753u, 16843009u), KILN_BF16), KILN_BF16, 0, 16908288.0,
                16908288.0);
    EXPECT_NEAR(kiln_convert(cx, I32(16842753), KILN_BF16), KILN_BF16, 0, 16908288.0);
    /* f64 -> f16 rounds once: 1 + 2^-11 + 2^-40 rounds up (through f32 it would tie to even). */
    EXPECT_NEAR(kiln_convert(cx, F64(1.0 + ldexp(1, -11) + ldexp(1, -40), 1e6, 1e-9), KILN_F16),
                KILN_F16, 0, 1.0 + ldexp(1, -10), INFINITY, 0.0);
    EXPECT_NEAR(kiln_convert(cx, F64(1.0 + ldexp(1, -8) + ldexp(1, -40)), KILN_BF16), KILN_BF16, 0,
                1.0 + ldexp(1, -7));
    /* Floats widen exactly and narrow to nearest even; NaN, infinities and signed zeros are
     * kept. */
    EXPECT_NEAR(kiln_convert(cx, F16B(0x3555, 0x7c00, 0x8000, 0x7e00, 0x0001), KILN_F64), KILN_F64,
                0, 0.333251953125, INFINITY, -0.0, NAN, 5.9604644775390625e-08);
    EXPECT_NEAR(kiln_convert(cx, F32(0.1f, -0.0f, INFINITY, NAN), KILN_F64), KILN_F64, 0,
                (double)0.1f, -0.0, INFINITY, NAN);
    EXPECT_F32B(kiln_convert(cx, F64(0.1, 1e300, -1e-300), KILN_F32), 0x3dcccccdu, 0x7f800000u,
                0x80000000u);
    EXPECT_BF16B(kiln_convert(cx, F16B(0x3c00, 0x7c00, 0x0001), KILN_BF16), 0x3f80, 0x7f80, 0x3380);
    EXPECT_F16B(kiln_convert(cx, BF16B(0x3f80, 0x4780, 0x3380), KILN_F16), 0x3c00, 0x7c00, 0x0001);
    EXPECT_F16B(kiln_convert(cx, F32(1.0f, 65520.0f, -0.0f), KILN_F16), 0x3c00, 0x7c00, 0x8000);
    kiln_ctx_release(cx);
}

Test(elementwise, bitcast_convert) {
    kiln_ctx *cx = test_ctx();
    /* bitcast_convert.mlir: 64 i1 <-> i64 (first element least significant) and i64 -> f64. */
    uint8_t bits[64];
    uint64_t word = 0x0123456789ABCDEFull;
    for (int i = 0; i < 64; i++)
        bits[i] = (uint8_t)((word >> i) & 1u);
    kiln_tensor *b = make(cx, KILN_BOOL, bits, sizeof bits);
    kiln_tensor *w = kiln_bitcast_convert(cx, b, KILN_I64);
    EXPECT_I64(w, 0x0123456789ABCDEFLL);
    cr_assert_eq(kiln_tensor_rank(w), 0);
    kiln_tensor *d = kiln_bitcast_convert(cx, w, KILN_F64);
    cr_assert_eq(kiln_tensor_rank(d), 0);
    EXPECT_F64B(d, 0x0123456789ABCDEFull);
    kiln_tensor *back = kiln_bitcast_convert(cx, d, KILN_BOOL);
    cr_assert_eq(kiln_tensor_rank(back), 1);
    expect_data(cx, back, KILN_BOOL, bits, sizeof bits, "back", __LINE__);
    /* The spec's example: f64 -> 4 x f16, least significant first. */
    EXPECT_F16B(kiln_bitcast_convert(cx, d, KILN_F16), 0xCDEF, 0x89AB, 0x4567, 0x0123);
    /* Same width: same shape, bits kept (NaN payloads too). */
    kiln_tensor *f = F32B(0x3f800000u, 0xffc00001u, 0x80000000u);
    kiln_tensor *i = kiln_bitcast_convert(cx, f, KILN_I32);
    EXPECT_I32(i, 0x3f800000, (int32_t)0xffc00001u, INT32_MIN);
    EXPECT_F32B(kiln_bitcast_convert(cx, i, KILN_F32), 0x3f800000u, 0xffc00001u, 0x80000000u);
    EXPECT_BF16B(kiln_bitcast_convert(cx, I16(-1, 0x3f80), KILN_BF16), 0xffff, 0x3f80);
    EXPECT_I1(kiln_bitcast_convert(cx, I1(1, 0), KILN_BOOL), 1, 0);
    /* Narrower: a new minor dimension. Wider: the minor dimension goes. */
    uint32_t m[2][2] = {{0x04030201u, 0x08070605u}, {0xdeadbeefu, 0}};
    kiln_tensor *x = make_shaped(cx, KILN_U32, KILN_SHAPE(2, 2), m);
    kiln_tensor *bytes = kiln_bitcast_convert(cx, x, KILN_U8);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(bytes), &KILN_SHAPE(2, 2, 4)));
    EXPECT_U8(bytes, 1, 2, 3, 4, 5, 6, 7, 8, 0xef, 0xbe, 0xad, 0xde, 0, 0, 0, 0);
    kiln_tensor *words = kiln_bitcast_convert(cx, bytes, KILN_I32);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(words), &KILN_SHAPE(2, 2)));
    EXPECT_I32(words, 0x04030201, 0x08070605, (int32_t)0xdeadbeefu, 0);
    kiln_tensor *wide = kiln_bitcast_convert(cx, kiln_bitcast_convert(cx, x, KILN_U16), KILN_U32);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(wide), &KILN_SHAPE(2, 2)));
    EXPECT_U32(wide, 0x04030201u, 0x08070605u, 0xdeadbeefu, 0);
    kiln_tensor *halves = kiln_bitcast_convert(cx, x, KILN_BF16);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(halves), &KILN_SHAPE(2, 2, 2)));
    EXPECT_BF16B(halves, 0x0201, 0x0403, 0x0605, 0x0807, 0xbeef, 0xdead, 0, 0);
    EXPECT_U64(kiln_bitcast_convert(cx, x, KILN_U64), 0x0807060504030201ull, 0xdeadbeefull);
    EXPECT_I8(kiln_bitcast_convert(cx, I1(1, 0, 0, 0, 0, 0, 0, 1), KILN_I8), -127);
    EXPECT_I1(kiln_bitcast_convert(cx, U8(0x81), KILN_BOOL), 1, 0, 0, 0, 0, 0, 0, 1);
    kiln_ctx_release(cx);
}

/* ---- shapes: broadcasting, empty, rank 0, large ------------------------------------------ */

Test(elementwise, broadcasting_and_rank_0) {
    kiln_ctx *cx = test_ctx();
    /* numpy broadcasting: [2,1] with [3] -> [2,3]; rank 0 with anything. */
    kiln_tensor *col = make_shaped(cx, KILN_I32, KILN_SHAPE(2, 1), (const int32_t[]){10, 20});
    kiln_tensor *row = I32(1, 2, 3);
    kiln_tensor *s = kiln_add(cx, col, row);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(s), &KILN_SHAPE(2, 3)));
    EXPECT_I32(s, 11, 12, 13, 21, 22, 23);
    float two = 2.0f;
    kiln_tensor *sc = make_shaped(cx, KILN_F32, KILN_SHAPE_SCALAR, &two);
    EXPECT_NEAR(kiln_multiply(cx, sc, F32(1.0f, -3.0f)), KILN_F32, 0, 2.0, -6.0);
    EXPECT_I1(kiln_compare(cx, F32(1.0f, 3.0f), sc, KILN_CMP_LT, KILN_CMP_DEFAULT), 1, 0);
    /* Rank 0 with rank 0 stays rank 0. */
    kiln_tensor *r = kiln_subtract(cx, sc, sc);
    cr_assert_eq(kiln_tensor_rank(r), 0);
    EXPECT_NEAR(r, KILN_F32, 0, 0.0);
    kiln_tensor *u = kiln_sqrt(cx, kiln_scalar(cx, 16.0, KILN_F64));
    cr_assert_eq(kiln_tensor_rank(u), 0);
    EXPECT_NEAR(u, KILN_F64, 0, 4.0);
    EXPECT_I32(kiln_shift_left(cx, kiln_scalar(cx, 3, KILN_I32), kiln_scalar(cx, 2, KILN_I32)), 12);
    EXPECT_I64(kiln_convert(cx, kiln_scalar(cx, -2.5, KILN_F32), KILN_I64), -2);
    /* kiln_scalar_like combines a typed scalar with x. */
    kiln_tensor *h = F16B(0x3c00, 0x4000);
    EXPECT_F16B(kiln_multiply(cx, kiln_scalar_like(cx, h, 3.0), h), 0x4200, 0x4600);
    kiln_ctx_release(cx);
}

Test(elementwise, empty_tensors) {
    kiln_ctx *cx = test_ctx();
    /* add.mlir's zero-size case, and every kind of op on empty tensors. */
    kiln_tensor *e = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2, 0, 3));
    kiln_tensor *ei = kiln_zeros(cx, KILN_I8, KILN_SHAPE(2, 0, 3));
    kiln_tensor *eb = kiln_zeros(cx, KILN_BOOL, KILN_SHAPE(2, 0, 3));
    kiln_tensor *eh = kiln_zeros(cx, KILN_F16, KILN_SHAPE(0));
    kiln_tensor *outs[] = {
        kiln_add(cx, e, e),
        kiln_add(cx, ei, ei),
        kiln_divide(cx, ei, ei),
        kiln_exponential(cx, e),
        kiln_negate(cx, ei),
        kiln_sine(cx, eh),
        kiln_add(cx, eh, eh),
        kiln_is_finite(cx, e),
        kiln_compare(cx, e, e, KILN_CMP_LT, KILN_CMP_TOTALORDER),
        kiln_select(cx, eb, e, e),
        kiln_clamp(cx, e, e, e),
        kiln_convert(cx, e, KILN_BF16),
        kiln_convert(cx, e, KILN_F32),
        kiln_bitcast_convert(cx, e, KILN_U8),
        kiln_not(cx, eb),
        kiln_shift_left(cx, ei, ei),
        kiln_popcnt(cx, ei),
    };
    expect_ok(cx);
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        cr_assert_not_null(outs[i], "op %zu", i);
        cr_assert_eq(kiln_tensor_numel(outs[i]), 0, "op %zu", i);
    }
    cr_assert(kiln_shape_equal(kiln_tensor_shape(outs[0]), &KILN_SHAPE(2, 0, 3)));
    cr_assert(kiln_shape_equal(kiln_tensor_shape(outs[13]), &KILN_SHAPE(2, 0, 3, 4)));
    /* Broadcasting with an empty dimension. */
    kiln_tensor *b = kiln_add(cx, e, kiln_scalar(cx, 1.0, KILN_F32));
    cr_assert(kiln_shape_equal(kiln_tensor_shape(b), &KILN_SHAPE(2, 0, 3)));
    kiln_ctx_release(cx);
}

Test(elementwise, long_arrays_every_dtype) {
    kiln_ctx *cx = test_ctx();
    /* Longer than the f16/bf16 staging chunk and the vector width, with a ragged tail:
     * x + x == 2 * x and x - x == 0 for the iota in every dtype where it is exact. */
    enum { N = 1037 };
    for (size_t k = 0; k < 13; k++) {
        kiln_dtype dt = ALL[k];
        if (dt == KILN_BOOL || dt == KILN_I8 || dt == KILN_U8) continue;
        kiln_tensor *x = kiln_iota(cx, dt, KILN_SHAPE(N), 0);
        kiln_tensor *two = kiln_scalar_like(cx, x, 2);
        kiln_tensor *sum = kiln_add(cx, x, x), *prod = kiln_multiply(cx, two, x);
        kiln_tensor *same = kiln_compare(cx, sum, prod, KILN_CMP_EQ, KILN_CMP_DEFAULT);
        kiln_tensor *diff = kiln_subtract(cx, x, x);
        kiln_tensor *mx = kiln_maximum(cx, x, diff);
        expect_ok(cx);
        for (int64_t i = 0; i < N; i++) {
            cr_assert_eq(kiln_tensor_item(cx, same, i), 1.0, "%s [%lld]", kiln_dtype_name(dt),
                         (long long)i);
            cr_assert_eq(kiln_tensor_item(cx, diff, i), 0.0);
            cr_assert_eq(kiln_tensor_item(cx, mx, i), kiln_tensor_item(cx, x, i));
        }
    }
    kiln_ctx_release(cx);
}

/* ---- errors ------------------------------------------------------------------------------- */

Test(elementwise, dtype_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *i = I32(1, 2), *u = U8(1, 2), *f = F32(1, 2), *b = I1(0, 1);
    cr_assert_null(kiln_sqrt(cx, i));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_sqrt: operand 1 has dtype i32; expected a floating-point or complex dtype");
    cr_assert_null(kiln_exponential(cx, b));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_exponential: operand 1 has dtype i1");
    cr_assert_null(kiln_abs(cx, u));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_abs: operand 1 has dtype ui8; expected a signed integer, floating-point or "
                 "complex");
    cr_assert_null(kiln_sign(cx, b));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_sign: operand 1 has dtype i1");
    cr_assert_null(kiln_negate(cx, b));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_negate: operand 1 has dtype i1");
    cr_assert_null(kiln_not(cx, f));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_not: operand 1 has dtype f32; expected i1 or an "
                 "integer dtype");
    cr_assert_null(kiln_popcnt(cx, b));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_popcnt: operand 1 has dtype i1; expected an "
                 "integer dtype");
    cr_assert_null(kiln_count_leading_zeros(cx, f));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_count_leading_zeros: operand 1 has dtype f32");
    cr_assert_null(kiln_is_finite(cx, i));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_is_finite: operand 1 has dtype i32");
    cr_assert_null(kiln_floor(cx, i));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_floor");
    cr_assert_null(kiln_subtract(cx, b, b));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_subtract: operand 1 has dtype i1; expected an "
                 "integer, floating-point or complex dtype");
    cr_assert_null(kiln_divide(cx, b, b));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_divide: operand 1 has dtype i1");
    cr_assert_null(kiln_remainder(cx, b, b));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_remainder");
    cr_assert_null(kiln_power(cx, b, b));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_power");
    cr_assert_null(kiln_atan2(cx, i, i));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_atan2: operand 1 has dtype i32");
    cr_assert_null(kiln_and(cx, f, f));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_and: operand 1 has dtype f32");
    cr_assert_null(kiln_or(cx, f, f));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_or");
    cr_assert_null(kiln_xor(cx, f, f));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_xor");
    cr_assert_null(kiln_shift_left(cx, b, b));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_shift_left: operand 1 has dtype i1");
    cr_assert_null(kiln_shift_right_logical(cx, f, f));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_shift_right_logical");
    cr_assert_null(kiln_shift_right_arithmetic(cx, f, f));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_shift_right_arithmetic");
    /* complex: what the spec rules out, with its rule */
    kiln_tensor *c = kiln_zeros(cx, KILN_C64, KILN_SHAPE(2));
    cr_assert_null(kiln_floor(cx, c));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_floor: operand 1 has dtype complex<f32>");
    cr_assert_null(kiln_compare(cx, c, c, KILN_CMP_LT, KILN_CMP_DEFAULT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "complex compare supports only EQ and NE");
    cr_assert_null(kiln_and(cx, c, c));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_and: operand 1 has dtype complex<f32>");
    kiln_tensor *m = kiln_remainder(cx, c, c);
    cr_assert_null(m, "remainder of complex is read but not run");
    expect_error(cx, KILN_UNIMPLEMENTED, "stablehlo.remainder on complex<f32> is not implemented");
    kiln_tensor_release(c);
    /* Binary operands of different dtypes (no promotion). */
    cr_assert_null(kiln_add(cx, i, f));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_add: operand 2 has type f32[2]; expected i32[2] (the type of operand 1)");
    cr_assert_null(kiln_maximum(cx, u, i));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_maximum: operand 2 has type i32[2]");
    kiln_ctx_release(cx);
}

Test(elementwise, shape_and_attribute_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *a = I32(1, 2, 3), *b = I32(1, 2), *f = F32(1, 2, 3), *p = I1(1, 0);
    /* Shapes that do not broadcast. */
    cr_assert_null(kiln_add(cx, a, b));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_add: operand 2 has shape [2]; expected [3] or a shape that broadcasts");
    cr_assert_null(kiln_compare(cx, a, b, KILN_CMP_EQ, KILN_CMP_DEFAULT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_compare: operand 2 has shape [2]");
    /* compare: the type must suit the dtype; direction and type must be valid. */
    cr_assert_null(kiln_compare(cx, a, a, KILN_CMP_LT, KILN_CMP_FLOAT));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_compare: compare type FLOAT does not suit dtype i32; expected SIGNED");
    cr_assert_null(kiln_compare(cx, a, a, KILN_CMP_LT, KILN_CMP_UNSIGNED));
    expect_error(cx, KILN_INVALID_ARGUMENT, "compare type UNSIGNED does not suit dtype i32");
    cr_assert_null(kiln_compare(cx, f, f, KILN_CMP_LT, KILN_CMP_SIGNED));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "compare type SIGNED does not suit dtype f32; expected FLOAT or TOTALORDER");
    cr_assert_null(kiln_compare(cx, U8(1), U8(1), KILN_CMP_LT, KILN_CMP_SIGNED));
    expect_error(cx, KILN_INVALID_ARGUMENT, "does not suit dtype ui8; expected UNSIGNED");
    cr_assert_null(kiln_compare(cx, p, p, KILN_CMP_LT, KILN_CMP_TOTALORDER));
    expect_error(cx, KILN_INVALID_ARGUMENT, "does not suit dtype i1; expected UNSIGNED");
    cr_assert_null(kiln_compare(cx, a, a, (kiln_compare_direction)9, KILN_CMP_SIGNED));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_compare: comparison direction 9 is not one of");
    cr_assert_null(kiln_compare(cx, a, a, KILN_CMP_EQ, (kiln_compare_type)-4));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_compare: compare type -4 is not one of");
    /* select: pred i1 of the result's shape or rank 0. */
    cr_assert_null(kiln_select(cx, a, a, a));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_select: operand 1 (pred) has dtype i32; "
                 "expected i1");
    cr_assert_null(kiln_select(cx, p, a, a));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_select: operand 2 has shape [3]; expected [2] or a shape that broadcasts");
    cr_assert_null(kiln_select(cx, p, b, F32(1, 2)));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_select: operand 3 has type f32[2]; expected "
                 "i32[2]");
    uint8_t t = 1;
    cr_assert_null(kiln_select(cx, make_shaped(cx, KILN_BOOL, KILN_SHAPE_SCALAR, &t), a, b));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_select: operand 3 has shape [2]; expected [3]");
    /* clamp: min and max of x's shape or rank 0, one dtype. */
    cr_assert_null(kiln_clamp(cx, b, a, a));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_clamp: operand 1 (min) has shape [2]; expected rank 0 or [3]");
    cr_assert_null(kiln_clamp(cx, a, a, b));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_clamp: operand 3 (max) has shape [2]");
    cr_assert_null(kiln_clamp(cx, f, a, a));
    expect_error(
        cx, KILN_INVALID_ARGUMENT,
        "kiln_clamp: operand 1 (min) has dtype f32; expected i32 (the dtype of operand 2)");
    /* convert / bitcast_convert: a valid target; bitcast's shape rules. */
    cr_assert_null(kiln_convert(cx, a, (kiln_dtype)77));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_convert: target dtype 77 is not a dtype");
    cr_assert_null(kiln_bitcast_convert(cx, a, KILN_DTYPE_COUNT));
    char past_last[64];
    snprintf(past_last, sizeof past_last, "kiln_bitcast_convert: target dtype %d",
             (int)KILN_DTYPE_COUNT);
    expect_error(cx, KILN_INVALID_ARGUMENT, past_last);
    cr_assert_null(kiln_bitcast_convert(cx, a, KILN_I64));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_bitcast_convert: operand 1 has type i32[3]; converting to i64 needs a last "
                 "dimension of 2");
    cr_assert_null(kiln_bitcast_convert(cx, kiln_scalar(cx, 1, KILN_I8), KILN_I16));
    expect_error(cx, KILN_INVALID_ARGUMENT, "needs a last dimension of 2");
    kiln_tensor *deep1 =
        kiln_ones(cx, KILN_I16,
                  (kiln_shape){.rank = KILN_MAX_RANK,
                               .dims = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}});
    cr_assert_null(kiln_bitcast_convert(cx, deep1, KILN_U8));
    expect_error(cx, KILN_INVALID_ARGUMENT, "the rank would exceed 16");
    kiln_ctx_release(cx);
}

Test(elementwise, inference_rules) {
    /* The rules inference checks where the builders cannot reach them (they broadcast and
     * resolve defaults first), and the result types it computes. */
    kiln_ctx *cx = test_ctx();
    kiln__attrs a = {.fn = "op"};
    kiln__type out[2];
    kiln__type f34 = {.dtype = KILN_F32, .shape = KILN_SHAPE(3, 4)}, f35 = {.dtype = KILN_F32, .shape = KILN_SHAPE(3, 5)};
    kiln__type two[2] = {f34, f35};
    cr_assert_eq(kiln__infer(cx, KILN_OP_ADD, &a, two, 2, out, 1), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "op: operand 2 has type f32[3,5]; expected f32[3,4] (the type of operand 1)");
    cr_assert_eq(kiln__infer(cx, KILN_OP_ADD, &a, two, 1, out, 1), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "op: got 1 operands; expected 2");
    cr_assert_eq(kiln__infer(cx, KILN_OP_SQRT, &a, two, 1, out, 2), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "op: got 2 results; expected 1");
    kiln__type bad = {.dtype = (kiln_dtype)99, .shape = KILN_SHAPE(1)};
    cr_assert_eq(kiln__infer(cx, KILN_OP_NEGATE, &a, &bad, 1, out, 1), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "op: operand 1 has invalid dtype 99");
    /* select: pred rank 0 or the values' shape. */
    kiln__type sel[3] = {{.dtype = KILN_BOOL, .shape = KILN_SHAPE(3)}, f34, f34};
    cr_assert_eq(kiln__infer(cx, KILN_OP_SELECT, &a, sel, 3, out, 1), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "op: operand 1 (pred) has shape [3]; expected rank 0 or [3,4]");
    sel[0].shape = KILN_SHAPE_SCALAR;
    cr_assert_eq(kiln__infer(cx, KILN_OP_SELECT, &a, sel, 3, out, 1), KILN_OK);
    cr_assert(out[0].dtype == KILN_F32 && kiln_shape_equal(&out[0].shape, &f34.shape));
    /* compare and is_finite give i1; DEFAULT is accepted. */
    kiln__type same[2] = {f34, f34};
    a.u.compare.direction = KILN_CMP_GE;
    a.u.compare.type = KILN_CMP_DEFAULT;
    cr_assert_eq(kiln__infer(cx, KILN_OP_COMPARE, &a, same, 2, out, 1), KILN_OK);
    cr_assert(out[0].dtype == KILN_BOOL && kiln_shape_equal(&out[0].shape, &f34.shape));
    cr_assert_eq(kiln__infer(cx, KILN_OP_IS_FINITE, &a, same, 1, out, 1), KILN_OK);
    cr_assert(out[0].dtype == KILN_BOOL && kiln_shape_equal(&out[0].shape, &f34.shape));
    /* convert and bitcast_convert result types; i1 is one bit for bitcasts. */
    a.u.convert_to = KILN_U8;
    cr_assert_eq(kiln__infer(cx, KILN_OP_CONVERT, &a, same, 1, out, 1), KILN_OK);
    cr_assert(out[0].dtype == KILN_U8 && kiln_shape_equal(&out[0].shape, &f34.shape));
    cr_assert_eq(kiln__infer(cx, KILN_OP_BITCAST_CONVERT, &a, same, 1, out, 1), KILN_OK);
    cr_assert(out[0].dtype == KILN_U8 && kiln_shape_equal(&out[0].shape, &KILN_SHAPE(3, 4, 4)));
    kiln__type bits = {.dtype = KILN_BOOL, .shape = KILN_SHAPE(5, 16)};
    a.u.convert_to = KILN_F16;
    cr_assert_eq(kiln__infer(cx, KILN_OP_BITCAST_CONVERT, &a, &bits, 1, out, 1), KILN_OK);
    cr_assert(out[0].dtype == KILN_F16 && kiln_shape_equal(&out[0].shape, &KILN_SHAPE(5)));
    a.u.convert_to = KILN_I8;
    cr_assert_eq(kiln__infer(cx, KILN_OP_BITCAST_CONVERT, &a, &bits, 1, out, 1),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "op: operand 1 has type i1[5,16]; converting to i8 needs a last dimension of 8");
    kiln_ctx_release(cx);
}

Test(elementwise, null_operands) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *a = F32(1, 2), *p = I1(1, 0);
    cr_assert_null(kiln_exponential(cx, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_exponential: operand 1 is NULL");
    cr_assert_null(kiln_add(cx, a, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_add: operand 2 is NULL");
    cr_assert_null(kiln_compare(cx, NULL, a, KILN_CMP_EQ, KILN_CMP_DEFAULT));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_compare: operand 1 is NULL");
    cr_assert_null(kiln_select(cx, NULL, a, a));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_select: operand 1 is NULL");
    cr_assert_null(kiln_select(cx, p, a, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_select: operand 3 is NULL");
    uint8_t t = 1;
    cr_assert_null(kiln_select(cx, make_shaped(cx, KILN_BOOL, KILN_SHAPE_SCALAR, &t), NULL, a));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_select: operand 2 is NULL");
    cr_assert_null(kiln_clamp(cx, a, a, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_clamp: operand 3 is NULL");
    cr_assert_null(kiln_convert(cx, NULL, KILN_F64));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_convert: operand 1 is NULL");
    cr_assert_null(kiln_bitcast_convert(cx, NULL, KILN_I32));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_bitcast_convert: operand 1 is NULL");
    /* A NULL ctx gives NULL; a failed operand keeps the first error. */
    cr_assert_null(kiln_add(NULL, a, a));
    cr_assert_null(kiln_sqrt(NULL, a));
    kiln_tensor *bad = kiln_sqrt(cx, I32(4));
    cr_assert_null(kiln_add(cx, kiln_negate(cx, bad), a));
    cr_assert_null(kiln_convert(cx, bad, KILN_F32));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_sqrt: operand 1 has dtype i32");
    kiln_ctx_release(cx);
}

Test(elementwise, allocation_failure) {
    /* Each allocation an op makes is refused in turn: the op reports RESOURCE_EXHAUSTED and
     * nothing leaks. */
    for (int which = 0; which < 3; which++) {
        int64_t failing_runs = 0;
        for (int64_t k = 0; k < 64; k++) {
            failing_allocator fa;
            kiln_ctx *cx = failing_allocator_ctx(&fa);
            cr_assert_not_null(cx);
            kiln_tensor *a =
                make_shaped(cx, KILN_F32, KILN_SHAPE(2, 3), (const float[]){1, 2, 3, 4, 5, 6});
            kiln_tensor *b = make_shaped(cx, KILN_F32, KILN_SHAPE(3), (const float[]){1, 2, 3});
            fa.fail_after = fa.allocations + k;
            kiln_tensor *r = which == 0   ? kiln_add(cx, a, b)
                             : which == 1 ? kiln_convert(cx, a, KILN_F16)
                                          : kiln_compare(cx, a, b, KILN_CMP_LT, KILN_CMP_DEFAULT);
            if (r) {
                expect_ok(cx);
                cr_assert_eq(fa.failures, 0);
            } else {
                failing_runs++;
                cr_assert_gt(fa.failures, 0);
                expect_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory");
            }
            kiln_ctx_release(cx);
            cr_assert_eq(fa.live_blocks, 0, "op %d, fail_after %lld: %lld blocks leaked", which,
                         (long long)k, (long long)fa.live_blocks);
            cr_assert_eq(fa.live_bytes, 0);
            if (r) break;
        }
        cr_assert_geq(failing_runs, 1, "op %d never failed", which);
    }
}

const kiln_op_coverage kiln_cover_elementwise[] = {
    {KILN_OP_ABS, "elementwise/abs"},
    {KILN_OP_NEGATE, "elementwise/negate"},
    {KILN_OP_SIGN, "elementwise/sign"},
    {KILN_OP_NOT, "elementwise/not"},
    {KILN_OP_FLOOR, "elementwise/floor_and_ceil"},
    {KILN_OP_CEIL, "elementwise/floor_and_ceil"},
    {KILN_OP_ROUND_NEAREST_AFZ, "elementwise/rounding"},
    {KILN_OP_ROUND_NEAREST_EVEN, "elementwise/rounding"},
    {KILN_OP_SQRT, "elementwise/roots"},
    {KILN_OP_RSQRT, "elementwise/roots"},
    {KILN_OP_CBRT, "elementwise/roots"},
    {KILN_OP_EXPONENTIAL, "elementwise/exponentials_and_logarithms"},
    {KILN_OP_EXPONENTIAL_MINUS_ONE, "elementwise/exponentials_and_logarithms"},
    {KILN_OP_LOG, "elementwise/exponentials_and_logarithms"},
    {KILN_OP_LOG_PLUS_ONE, "elementwise/exponentials_and_logarithms"},
    {KILN_OP_LOGISTIC, "elementwise/exponentials_and_logarithms"},
    {KILN_OP_SINE, "elementwise/trigonometry"},
    {KILN_OP_COSINE, "elementwise/trigonometry"},
    {KILN_OP_TAN, "elementwise/trigonometry"},
    {KILN_OP_TANH, "elementwise/trigonometry"},
    {KILN_OP_IS_FINITE, "elementwise/is_finite"},
    {KILN_OP_POPCNT, "elementwise/popcnt_and_count_leading_zeros"},
    {KILN_OP_COUNT_LEADING_ZEROS, "elementwise/popcnt_and_count_leading_zeros"},
    {KILN_OP_ADD, "elementwise/add"},
    {KILN_OP_SUBTRACT, "elementwise/subtract"},
    {KILN_OP_MULTIPLY, "elementwise/multiply"},
    {KILN_OP_DIVIDE, "elementwise/divide"},
    {KILN_OP_REMAINDER, "elementwise/remainder"},
    {KILN_OP_POWER, "elementwise/power"},
    {KILN_OP_MAXIMUM, "elementwise/maximum_and_minimum"},
    {KILN_OP_MINIMUM, "elementwise/maximum_and_minimum"},
    {KILN_OP_ATAN2, "elementwise/atan2"},
    {KILN_OP_REAL, "complex_types/parts_and_complex"},
    {KILN_OP_IMAG, "complex_types/parts_and_complex"},
    {KILN_OP_COMPLEX, "complex_types/parts_and_complex"},
    {KILN_OP_AND, "elementwise/and_or_xor"},
    {KILN_OP_OR, "elementwise/and_or_xor"},
    {KILN_OP_XOR, "elementwise/and_or_xor"},
    {KILN_OP_SHIFT_LEFT, "elementwise/shifts"},
    {KILN_OP_SHIFT_RIGHT_ARITHMETIC, "elementwise/shifts"},
    {KILN_OP_SHIFT_RIGHT_LOGICAL, "elementwise/shifts"},
    {KILN_OP_COMPARE, "elementwise/compare_floats"},
    {KILN_OP_SELECT, "elementwise/select"},
    {KILN_OP_CLAMP, "elementwise/clamp"},
    {KILN_OP_CONVERT, "elementwise/convert_every_pair"},
    {KILN_OP_BITCAST_CONVERT, "elementwise/bitcast_convert"},
    {KILN_OP_REDUCE_PRECISION, "reduce_precision/matches_bf16_and_f16_rounding"},
    {KILN_OP_COUNT, NULL},
};
