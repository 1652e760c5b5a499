/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_npy_tool: a small command-line bridge for the numpy interop test
 * (tests/scripts/npy_interop.sh).
 *
 *   kiln_npy_tool write DTYPE PATH   writes a [2,3] tensor of DTYPE (StableHLO name: i1, i8,
 *                                    i16, i32, i64, ui8, ui16, ui32, ui64, f16, bf16, f32,
 *                                    f64, complex<f32>, complex<f64>) holding the fixed
 *                                    values below
 *   kiln_npy_tool read PATH          prints "DTYPE [d0,d1,...]", then each element in
 *                                    row-major order, one per line, as %.17g (a complex
 *                                    element: its real part, then its imaginary part)
 *
 * Exits 0 on success, 1 on error (the ctx's message goes to stderr), 2 on bad usage.
 *
 * The values written, per dtype family (npy_interop.sh holds the same table):
 *   i1:           1, 0, 0, 1, 1, 0
 *   signed ints:  MIN, -1, 0, 1, 2, MAX
 *   unsigned:     0, 1, 2, 3, 100, MAX
 *   f16:          -1.5, -0.0, 0.25, 1, 2.5, 65504
 *   bf16:         -1.5, -0.0, 0.25, 1, 2.5, 3.140625
 *   f32:          -1.5, -0.0, 0.1f, 1, 2.5, FLT_MAX
 *   f64:          -1.5, -0.0, 0.1, 1, 2.5, 1e300
 *   complex:      the f32 (f64) values as real parts, -(value) * 2 as imaginary parts
 */
#include <float.h>
#include <kiln/kiln.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 6

static void put(unsigned char *buf, size_t index, const void *value, size_t size) {
    memcpy(buf + index * size, value, size);
}

/* Fills buf with the N elements of `dtype` listed above. */
static void fill_values(kiln_dtype dtype, unsigned char *buf) {
    for (size_t i = 0; i < N; i++) {
        switch (dtype) {
        case KILN_BOOL: {
            static const uint8_t v[N] = {1, 0, 0, 1, 1, 0};
            put(buf, i, &v[i], 1);
            break;
        }
        case KILN_I8: {
            static const int8_t v[N] = {INT8_MIN, -1, 0, 1, 2, INT8_MAX};
            put(buf, i, &v[i], sizeof v[i]);
            break;
        }
        case KILN_I16: {
            static const int16_t v[N] = {INT16_MIN, -1, 0, 1, 2, INT16_MAX};
            put(buf, i, &v[i], sizeof v[i]);
            break;
        }
        case KILN_I32: {
            static const int32_t v[N] = {INT32_MIN, -1, 0, 1, 2, INT32_MAX};
            put(buf, i, &v[i], sizeof v[i]);
            break;
        }
        case KILN_I64: {
            static const int64_t v[N] = {INT64_MIN, -1, 0, 1, 2, INT64_MAX};
            put(buf, i, &v[i], sizeof v[i]);
            break;
        }
        case KILN_U8: {
            static const uint8_t v[N] = {0, 1, 2, 3, 100, UINT8_MAX};
            put(buf, i, &v[i], sizeof v[i]);
            break;
        }
        case KILN_U16: {
            static const uint16_t v[N] = {0, 1, 2, 3, 100, UINT16_MAX};
            put(buf, i, &v[i], sizeof v[i]);
            break;
        }
        case KILN_U32: {
            static const uint32_t v[N] = {0, 1, 2, 3, 100, UINT32_MAX};
            put(buf, i, &v[i], sizeof v[i]);
            break;
        }
        case KILN_U64: {
            static const uint64_t v[N] = {0, 1, 2, 3, 100, UINT64_MAX};
            put(buf, i, &v[i], sizeof v[i]);
            break;
        }
        case KILN_F16: {
            static const float v[N] = {-1.5f, -0.0f, 0.25f, 1.0f, 2.5f, 65504.0f};
            uint16_t bits = kiln_f32_to_f16(v[i]);
            put(buf, i, &bits, sizeof bits);
            break;
        }
        case KILN_BF16: {
            static const float v[N] = {-1.5f, -0.0f, 0.25f, 1.0f, 2.5f, 3.140625f};
            uint16_t bits = kiln_f32_to_bf16(v[i]);
            put(buf, i, &bits, sizeof bits);
            break;
        }
        case KILN_F32: {
            static const float v[N] = {-1.5f, -0.0f, 0.1f, 1.0f, 2.5f, FLT_MAX};
            put(buf, i, &v[i], sizeof v[i]);
            break;
        }
        case KILN_F64: {
            static const double v[N] = {-1.5, -0.0, 0.1, 1.0, 2.5, 1e300};
            put(buf, i, &v[i], sizeof v[i]);
            break;
        }
        case KILN_C64: {
            static const float v[N] = {-1.5f, -0.0f, 0.1f, 1.0f, 2.5f, FLT_MAX / 4};
            const float c[2] = {v[i], -v[i] * 2};
            put(buf, i, c, sizeof c);
            break;
        }
        case KILN_C128: {
            static const double v[N] = {-1.5, -0.0, 0.1, 1.0, 2.5, 1e300};
            const double c[2] = {v[i], -v[i] * 2};
            put(buf, i, c, sizeof c);
            break;
        }
        default: break;
        }
    }
}

static int fail(kiln_ctx *cx) {
    fprintf(stderr, "kiln_npy_tool: %s\n", kiln_ctx_error_message(cx));
    kiln_ctx_release(cx);
    return 1;
}

static int write_tensor(kiln_ctx *cx, const char *dtype_name, const char *path) {
    kiln_dtype dtype;
    if (!kiln_dtype_parse(dtype_name, &dtype)) {
        fprintf(stderr, "kiln_npy_tool: unknown dtype '%s'\n", dtype_name);
        kiln_ctx_release(cx);
        return 2;
    }
    unsigned char buf[N * 16]; /* the widest: complex<f64> */
    size_t nbytes = N * kiln_dtype_size(dtype);
    fill_values(dtype, buf);
    kiln_tensor *t = kiln_tensor_from_host(cx, dtype, KILN_SHAPE(2, 3), buf, nbytes);
    if (!t || kiln_npy_save(cx, path, t) != KILN_OK) return fail(cx);
    kiln_ctx_release(cx);
    return 0;
}

static int read_tensor(kiln_ctx *cx, const char *path) {
    kiln_tensor *t = NULL;
    if (kiln_npy_load(cx, path, &t) != KILN_OK) return fail(cx);
    char shape[KILN_MAX_RANK * 21 + 3];
    kiln_shape_format(kiln_tensor_shape(t), shape, sizeof shape);
    printf("%s %s\n", kiln_dtype_name(kiln_tensor_dtype(t)), shape);
    int64_t n = kiln_tensor_numel(t);
    kiln_dtype dt = kiln_tensor_dtype(t);
    if (dt == KILN_C64 || dt == KILN_C128) { /* the parts, in memory order */
        for (int64_t i = 0; i < 2 * n; i++)
            printf("%.17g\n", dt == KILN_C64 ? (double)((const float *)kiln_tensor_data(t))[i]
                                              : ((const double *)kiln_tensor_data(t))[i]);
    } else {
        for (int64_t i = 0; i < n; i++)
            printf("%.17g\n", kiln_tensor_item(cx, t, i));
    }
    if (kiln_ctx_status(cx) != KILN_OK) return fail(cx);
    kiln_ctx_release(cx);
    if (fflush(stdout) != 0) {
        perror("kiln_npy_tool: stdout");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    bool is_write = argc == 4 && strcmp(argv[1], "write") == 0;
    bool is_read = argc == 3 && strcmp(argv[1], "read") == 0;
    if (!is_write && !is_read) {
        fprintf(stderr, "usage: kiln_npy_tool write DTYPE PATH\n"
                        "       kiln_npy_tool read PATH\n");
        return 2;
    }
    kiln_ctx *cx = NULL;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) {
        fprintf(stderr, "kiln_npy_tool: cannot create a kiln ctx\n");
        return 1;
    }
    return is_write ? write_tensor(cx, argv[2], argv[3]) : read_tensor(cx, argv[1 + 1]);
}
