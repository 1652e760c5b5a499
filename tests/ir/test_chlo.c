/* SPDX-License-Identifier: Apache-2.0 */
/* chlo.mulhi, read as StableHLO's decomposition: the high half of each product for every
 * integer type (64-bit ones through 32-bit halves), against 128-bit products, in every
 * backend; and what is refused. */
#include <string.h>

#include "test_util.h"

/* 128-bit products, the reference (a GCC and Clang extension) */
__extension__ typedef __int128 int128;
__extension__ typedef unsigned __int128 uint128;

static uint64_t state = 0x243f6a8885a308d3ULL;
static uint64_t next(void) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
}

typedef struct {
    kiln_dtype dtype;
    const char *name;
    int bits;
    bool is_signed;
} int_type;

static const int_type types[] = {
    {KILN_I8, "i8", 8, true},      {KILN_I16, "i16", 16, true},   {KILN_I32, "i32", 32, true},
    {KILN_I64, "i64", 64, true},   {KILN_U8, "ui8", 8, false},    {KILN_U16, "ui16", 16, false},
    {KILN_U32, "ui32", 32, false}, {KILN_U64, "ui64", 64, false},
};

/* Element i of a buffer of the type, as a 128-bit integer. */
static int128 get(const int_type *t, const void *p, int i) {
    switch (t->dtype) {
    case KILN_I8: return ((const int8_t *)p)[i];
    case KILN_I16: return ((const int16_t *)p)[i];
    case KILN_I32: return ((const int32_t *)p)[i];
    case KILN_I64: return ((const int64_t *)p)[i];
    case KILN_U8: return ((const uint8_t *)p)[i];
    case KILN_U16: return ((const uint16_t *)p)[i];
    case KILN_U32: return ((const uint32_t *)p)[i];
    default: return (int128)((const uint64_t *)p)[i];
    }
}

enum { N = 64 };

Test(chlo, mulhi_is_the_high_half_of_each_product_for_every_integer_type) {
    const char *backends[TEST_MAX_BACKENDS];
    int nb = test_backends(backends, TEST_MAX_BACKENDS);
    kiln_ctx *cx = test_ctx();
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const int_type *t = &types[k];
        size_t es = kiln_dtype_size(t->dtype);
        unsigned char a[N * 8], b[N * 8];
        for (int i = 0; i < N; i++) { /* random bits, and the extremes first */
            uint64_t x = i == 0 ? ~0ULL : i == 1 ? 1ULL << (t->bits - 1) : next();
            uint64_t y = i == 0 ? ~0ULL : i == 1 ? 1ULL << (t->bits - 1) : next();
            memcpy(a + (size_t)i * es, &x, es);
            memcpy(b + (size_t)i * es, &y, es);
        }
        char text[512];
        snprintf(text, sizeof text,
                 "func.func @main(%%a: tensor<%dx%s>, %%b: tensor<%dx%s>) -> tensor<%dx%s> {\n"
                 "  %%r = \"chlo.mulhi\"(%%a, %%b) : (tensor<%dx%s>, tensor<%dx%s>) -> "
                 "tensor<%dx%s>\n  return %%r : tensor<%dx%s>\n}\n",
                 N, t->name, N, t->name, N, t->name, N, t->name, N, t->name, N, t->name, N,
                 t->name);
        for (int be = 0; be < nb; be++) {
            kiln_exe *exe = NULL;
            cr_assert_eq(test_compile_text(cx, text, backends[be], true, &exe), KILN_OK, "%s: %s",
                         t->name, kiln_ctx_error_message(cx));
            kiln_tensor *args[2] = {kiln_tensor_from_host(cx, t->dtype, KILN_SHAPE(N), a, N * es),
                                    kiln_tensor_from_host(cx, t->dtype, KILN_SHAPE(N), b, N * es)};
            kiln_tensor *r = NULL;
            cr_assert_eq(kiln_exe_call(cx, exe, args, &r), KILN_OK, "%s",
                         kiln_ctx_error_message(cx));
            for (int i = 0; i < N; i++) {
                int128 x = get(t, a, i), y = get(t, b, i);
                int128 want;
                if (t->bits == 64 && !t->is_signed) {
                    uint128 u = (uint128)x * (uint128)y;
                    want = (int128)(uint64_t)(u >> 64);
                } else {
                    want = (x * y) >> t->bits; /* arithmetic: the sign's floor */
                    if (!t->is_signed) want &= (((int128)1) << t->bits) - 1;
                }
                int128 got = get(t, kiln_tensor_data(r), i);
                if (t->bits == 64 && !t->is_signed) got = (int128)(uint64_t)got;
                cr_assert(got == want, "%s %s: element %d (%llx * %llx): got %llx, want %llx",
                          backends[be], t->name, i, (unsigned long long)x, (unsigned long long)y,
                          (unsigned long long)got, (unsigned long long)want);
            }
            kiln_tensor_release(args[0]), kiln_tensor_release(args[1]), kiln_tensor_release(r);
            kiln_exe_release(exe);
        }
    }
    kiln_ctx_release(cx);
}

static void expect_refused(kiln_ctx *cx, const char *line, const char *fragment) {
    test_expect_op_refused(cx, "%a: tensor<4xi32>, %f: tensor<4xf32>", line, fragment);
}

Test(chlo, what_is_refused_is_named) {
    kiln_ctx *cx = test_ctx();
    expect_refused(cx,
                   "%r = \"chlo.mulhi\"(%f, %f) : (tensor<4xf32>, tensor<4xf32>) -> "
                   "tensor<4xf32>",
                   "chlo.mulhi takes integers; the type is tensor<4xf32>");
    expect_refused(cx, "%r = \"chlo.mulhi\"(%a) : (tensor<4xi32>) -> tensor<4xi32>",
                   "chlo.mulhi takes 2 operands, got 1");
    expect_refused(cx,
                   "%r = \"chlo.mulhi\"(%a, %f) : (tensor<4xi32>, tensor<4xf32>) -> "
                   "tensor<4xi32>",
                   "chlo.mulhi's operands and result are one type");
    expect_refused(cx, "%r = \"chlo.scan\"(%a) : (tensor<4xi32>) -> tensor<4xi32>",
                   "unknown op 'chlo.scan' (of chlo, kiln reads chlo.mulhi)");
    kiln_ctx_release(cx);
}
