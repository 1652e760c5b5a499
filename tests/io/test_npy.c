/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/npy.h: round trips for every dtype and rank, the header numpy expects, and the
 * headers other writers produce (versions 2.0 and 3.0, big-endian data, Python 2 longs,
 * double quotes, other key orders, extra whitespace). Error paths: test_npy_errors.c;
 * allocation failures: test_npy_alloc.c. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static const kiln_dtype all_dtypes[] = {KILN_BOOL, KILN_I8,  KILN_I16, KILN_I32, KILN_I64,
                                        KILN_U8,   KILN_U16, KILN_U32, KILN_U64, KILN_F16,
                                        KILN_BF16, KILN_F32, KILN_F64};
#define N_DTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

/* The descr kiln writes, exactly as numpy writes it. */
static const char *expected_descr(kiln_dtype dtype) {
    switch (dtype) {
    case KILN_BOOL: return "'|b1'";
    case KILN_I8: return "'|i1'";
    case KILN_I16: return "'<i2'";
    case KILN_I32: return "'<i4'";
    case KILN_I64: return "'<i8'";
    case KILN_U8: return "'|u1'";
    case KILN_U16: return "'<u2'";
    case KILN_U32: return "'<u4'";
    case KILN_U64: return "'<u8'";
    case KILN_F16: return "'<f2'";
    case KILN_BF16: return "[('bf16', '<u2')]";
    case KILN_F32: return "'<f4'";
    case KILN_F64: return "'<f8'";
    default: return "?";
    }
}

/* Deterministic bytes for a tensor of `dtype`: every bit pattern for numbers (NaN payloads
 * included, to prove the copy is bit-exact), 0 or 1 for bool. */
static void fill_bytes(kiln_dtype dtype, unsigned char *p, size_t n, uint32_t seed) {
    uint32_t x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = dtype == KILN_BOOL ? (unsigned char)(x & 1u) : (unsigned char)(x >> 11);
    }
}

static kiln_tensor *make_tensor(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape, uint32_t seed) {
    size_t nbytes = 0;
    cr_assert(kiln_shape_nbytes(&shape, dtype, &nbytes));
    unsigned char *bytes = malloc(nbytes ? nbytes : 1);
    cr_assert_not_null(bytes);
    fill_bytes(dtype, bytes, nbytes, seed);
    kiln_tensor *t = kiln_tensor_from_host(cx, dtype, shape, nbytes ? bytes : NULL, nbytes);
    free(bytes);
    expect_ok(cx);
    cr_assert_not_null(t);
    return t;
}

/* Asserts b has a's dtype, shape and bytes. */
static void expect_same_tensor(const kiln_tensor *a, const kiln_tensor *b, const char *what) {
    cr_assert_not_null(b, "%s: no tensor", what);
    cr_assert_eq(kiln_tensor_dtype(b), kiln_tensor_dtype(a), "%s: dtype %s, expected %s", what,
                 kiln_dtype_name(kiln_tensor_dtype(b)), kiln_dtype_name(kiln_tensor_dtype(a)));
    cr_assert(kiln_shape_equal(kiln_tensor_shape(a), kiln_tensor_shape(b)), "%s: shape differs",
              what);
    cr_assert_eq(kiln_tensor_nbytes(b), kiln_tensor_nbytes(a), "%s: size differs", what);
    size_t n = kiln_tensor_nbytes(a);
    if (n) {
        cr_assert_not_null(kiln_tensor_data(b), "%s", what);
        cr_assert(memcmp(kiln_tensor_data(a), kiln_tensor_data(b), n) == 0, "%s: data differs",
                  what);
    }
}

/* The shapes every dtype is tried with. */
static kiln_shape test_shape(int which) {
    switch (which) {
    case 0: return KILN_SHAPE_SCALAR;
    case 1: return KILN_SHAPE(5);
    case 2: return KILN_SHAPE(2, 3, 4);
    case 3: return KILN_SHAPE(3, 0, 2);
    case 4: return KILN_SHAPE(0);
    case 5:
        return KILN_SHAPE(2, 1, 1, 2, 1, 3, 1, 1, 2, 1, 1, 1, 1, 2, 1, 1); /* rank 16 */
    /* Rank 16 with the longest dimensions a shape may have (the byte size of its non-zero
     * dimensions must fit, as numpy requires): the longest header kiln writes. Empty. */
    default:
        return KILN_SHAPE(INT64_MAX / 16, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0);
    }
}
#define N_SHAPES 7

static void describe(char *buf, size_t size, kiln_dtype dtype, kiln_shape shape) {
    char text[KILN_MAX_RANK * 21 + 3];
    kiln_shape_format(&shape, text, sizeof text);
    snprintf(buf, size, "%s%s", kiln_dtype_name(dtype), text);
}

/* ---- round trips -------------------------------------------------------------------- */

Test(npy_roundtrip, buffer_every_dtype_and_rank) {
    kiln_ctx *cx = test_ctx();
    for (size_t d = 0; d < N_DTYPES; d++)
        for (int s = 0; s < N_SHAPES; s++) {
            kiln_scope_begin(cx);
            char what[512];
            describe(what, sizeof what, all_dtypes[d], test_shape(s));
            kiln_tensor *t =
                make_tensor(cx, all_dtypes[d], test_shape(s), (uint32_t)(d * 31 + (size_t)s));
            void *data = NULL;
            size_t size = 0;
            cr_assert_eq(kiln_npy_save_buffer(cx, t, &data, &size), KILN_OK, "%s: %s", what,
                         kiln_ctx_error_message(cx));
            cr_assert_not_null(data);
            cr_assert_eq(size % 64, kiln_tensor_nbytes(t) % 64, "%s: header not 64-aligned", what);
            kiln_tensor *back = NULL;
            cr_assert_eq(kiln_npy_load_buffer(cx, data, size, &back), KILN_OK, "%s: %s", what,
                         kiln_ctx_error_message(cx));
            expect_same_tensor(t, back, what);
            kiln_buffer_free(cx, data, size);
            kiln_scope_end(cx);
            expect_ok(cx);
        }
    kiln_ctx_release(cx);
}

static unsigned char *read_whole_file(const char *path, size_t *out_size) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    size_t cap = 4096, n = 0;
    unsigned char *buf = malloc(cap);
    cr_assert_not_null(buf);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            cr_assert_not_null(buf);
        }
    }
    fclose(f);
    *out_size = n;
    return buf;
}

Test(npy_roundtrip, file_every_dtype_and_rank) {
    kiln_ctx *cx = test_ctx();
    char path[4096];
    snprintf(path, sizeof path, "%s", test_tmp_path("roundtrip.npy"));
    for (size_t d = 0; d < N_DTYPES; d++)
        for (int s = 0; s < N_SHAPES; s++) {
            kiln_scope_begin(cx);
            char what[512];
            describe(what, sizeof what, all_dtypes[d], test_shape(s));
            kiln_tensor *t =
                make_tensor(cx, all_dtypes[d], test_shape(s), (uint32_t)(d * 7 + (size_t)s + 1));
            cr_assert_eq(kiln_npy_save(cx, path, t), KILN_OK, "%s: %s", what,
                         kiln_ctx_error_message(cx));
            kiln_tensor *back = NULL;
            cr_assert_eq(kiln_npy_load(cx, path, &back), KILN_OK, "%s: %s", what,
                         kiln_ctx_error_message(cx));
            expect_same_tensor(t, back, what);
            /* The file holds exactly the bytes kiln_npy_save_buffer makes. */
            void *data = NULL;
            size_t size = 0;
            cr_assert_eq(kiln_npy_save_buffer(cx, t, &data, &size), KILN_OK);
            size_t file_size = 0;
            unsigned char *file = read_whole_file(path, &file_size);
            cr_assert_eq(file_size, size, "%s: file has %zu bytes, buffer %zu", what, file_size,
                         size);
            cr_assert(memcmp(file, data, size) == 0, "%s: file and buffer differ", what);
            free(file);
            kiln_buffer_free(cx, data, size);
            kiln_scope_end(cx);
            expect_ok(cx);
        }
    unlink(path);
    kiln_ctx_release(cx);
}

Test(npy_roundtrip, special_float_values_bit_exact) {
    kiln_ctx *cx = test_ctx();
    /* NaNs with payloads, both infinities, signed zeros, subnormals. */
    const uint32_t f32_bits[] = {0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7f800000u, 0xff800000u,
                                 0x80000000u, 0x00000000u, 0x00000001u, 0x807fffffu};
    const uint16_t f16_bits[] = {0x7e00u, 0xfe01u, 0x7c01u, 0x7c00u, 0xfc00u,
                                 0x8000u, 0x0000u, 0x0001u, 0x83ffu};
    const uint16_t bf16_bits[] = {0x7fc0u, 0xffc1u, 0x7f81u, 0x7f80u, 0xff80u,
                                  0x8000u, 0x0000u, 0x0001u, 0x807fu};
    struct {
        kiln_dtype dtype;
        const void *data;
        size_t nbytes;
    } cases[] = {{KILN_F32, f32_bits, sizeof f32_bits},
                 {KILN_F16, f16_bits, sizeof f16_bits},
                 {KILN_BF16, bf16_bits, sizeof bf16_bits}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kiln_tensor *t = kiln_tensor_from_host(cx, cases[i].dtype, KILN_SHAPE(9), cases[i].data,
                                               cases[i].nbytes);
        expect_ok(cx);
        void *data = NULL;
        size_t size = 0;
        cr_assert_eq(kiln_npy_save_buffer(cx, t, &data, &size), KILN_OK);
        kiln_tensor *back = NULL;
        cr_assert_eq(kiln_npy_load_buffer(cx, data, size, &back), KILN_OK);
        expect_same_tensor(t, back, kiln_dtype_name(cases[i].dtype));
        kiln_buffer_free(cx, data, size);
    }
    kiln_ctx_release(cx);
}

/* ---- the header numpy expects --------------------------------------------------------- */

/* Checks the preamble and header of `data` and returns the header text (a copy). */
static char *check_preamble(const unsigned char *data, size_t size, size_t data_nbytes,
                            const char *what) {
    cr_assert_geq(size, 10, "%s", what);
    cr_assert(memcmp(data, "\x93NUMPY", 6) == 0, "%s: magic", what);
    cr_assert_eq(data[6], 1, "%s: major version %d", what, data[6]);
    cr_assert_eq(data[7], 0, "%s: minor version %d", what, data[7]);
    size_t hlen = (size_t)data[8] | (size_t)data[9] << 8;
    cr_assert_eq((10 + hlen) % 64, 0, "%s: preamble of %zu bytes", what, 10 + hlen);
    cr_assert_eq(size, 10 + hlen + data_nbytes, "%s: file size", what);
    cr_assert_eq(data[10 + hlen - 1], '\n', "%s: header does not end with a newline", what);
    char *header = malloc(hlen + 1);
    cr_assert_not_null(header);
    memcpy(header, data + 10, hlen);
    header[hlen] = '\0';
    cr_assert_eq(strlen(header), hlen, "%s: NUL in the header", what);
    return header;
}

static void check_header(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape, const char *shape_text) {
    char what[512];
    describe(what, sizeof what, dtype, shape);
    kiln_scope_begin(cx);
    kiln_tensor *t = make_tensor(cx, dtype, shape, 3);
    void *data = NULL;
    size_t size = 0;
    cr_assert_eq(kiln_npy_save_buffer(cx, t, &data, &size), KILN_OK);
    char *header = check_preamble(data, size, kiln_tensor_nbytes(t), what);
    /* Exactly numpy's layout: the dict, then spaces, then '\n'. */
    char expected[1024];
    snprintf(expected, sizeof expected, "{'descr': %s, 'fortran_order': False, 'shape': %s, }",
             expected_descr(dtype), shape_text);
    size_t elen = strlen(expected);
    cr_assert(strncmp(header, expected, elen) == 0, "%s: header \"%s\", expected \"%s\"", what,
              header, expected);
    for (size_t i = elen; header[i + 1] != '\0'; i++)
        cr_assert_eq(header[i], ' ', "%s: padding byte %zu is %d", what, i, header[i]);
    if (kiln_tensor_nbytes(t))
        cr_assert(memcmp((char *)data + size - kiln_tensor_nbytes(t), kiln_tensor_data(t),
                         kiln_tensor_nbytes(t)) == 0,
                  "%s: data", what);
    free(header);
    kiln_buffer_free(cx, data, size);
    kiln_scope_end(cx);
}

Test(npy_header, layout_numpy_expects) {
    kiln_ctx *cx = test_ctx();
    for (size_t d = 0; d < N_DTYPES; d++) {
        check_header(cx, all_dtypes[d], KILN_SHAPE(5), "(5,)");
        check_header(cx, all_dtypes[d], KILN_SHAPE_SCALAR, "()");
        check_header(cx, all_dtypes[d], KILN_SHAPE(2, 3, 4), "(2, 3, 4)");
    }
    check_header(cx, KILN_F32, KILN_SHAPE(0), "(0,)");
    check_header(cx, KILN_U8, KILN_SHAPE(3, 0), "(3, 0)");
    check_header(cx, KILN_F64, KILN_SHAPE(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2),
                 "(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2)");
    check_header(cx, KILN_I64, KILN_SHAPE(INT64_MAX / 8, 0), "(1152921504606846975, 0)");
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(npy_header, longest_header_still_aligned) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *t = make_tensor(cx, KILN_BF16, test_shape(6), 0);
    void *data = NULL;
    size_t size = 0;
    cr_assert_eq(kiln_npy_save_buffer(cx, t, &data, &size), KILN_OK);
    char *header = check_preamble(data, size, 0, "bf16 rank 16");
    cr_assert_not_null(strstr(header, "'shape': (576460752303423487, 1, "));
    cr_assert_not_null(strstr(header, ", 0), }"));
    free(header);
    kiln_buffer_free(cx, data, size);
    kiln_ctx_release(cx);
}

/* ---- headers written by others ------------------------------------------------------ */

/* A .npy file: magic, version major.0, the header length (2 bytes for 1.0, else 4), the
 * header text as given (no padding), then `ndata` bytes. Free with free(). */
static unsigned char *npy_bytes(int major, const char *header, const void *data, size_t ndata,
                                size_t *out_size) {
    size_t hlen = strlen(header);
    size_t lenbytes = major == 1 ? 2 : 4;
    size_t size = 8 + lenbytes + hlen + ndata;
    unsigned char *b = malloc(size);
    cr_assert_not_null(b);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[7] = 0;
    for (size_t i = 0; i < lenbytes; i++)
        b[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(b + 8 + lenbytes, header, hlen);
    if (ndata) memcpy(b + 8 + lenbytes + hlen, data, ndata);
    *out_size = size;
    return b;
}

static kiln_tensor *load_text(kiln_ctx *cx, int major, const char *header, const void *data,
                              size_t ndata) {
    size_t size;
    unsigned char *b = npy_bytes(major, header, data, ndata, &size);
    kiln_tensor *t = NULL;
    kiln_status s = kiln_npy_load_buffer(cx, b, size, &t);
    free(b);
    cr_assert_eq(s, KILN_OK, "header %s: %s", header, kiln_ctx_error_message(cx));
    cr_assert_not_null(t);
    return t;
}

static void expect_dtype_shape(const kiln_tensor *t, kiln_dtype dtype, kiln_shape shape) {
    cr_assert_eq(kiln_tensor_dtype(t), dtype, "dtype %s, expected %s",
                 kiln_dtype_name(kiln_tensor_dtype(t)), kiln_dtype_name(dtype));
    char got[400], want[400];
    kiln_shape_format(kiln_tensor_shape(t), got, sizeof got);
    kiln_shape_format(&shape, want, sizeof want);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(t), &shape), "shape %s, expected %s", got, want);
}

Test(npy_read, versions_2_and_3) {
    kiln_ctx *cx = test_ctx();
    const int32_t values[] = {7, -8, 9};
    for (int major = 1; major <= 3; major++) {
        kiln_tensor *t = load_text(
            cx, major, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }          \n",
            values, sizeof values);
        expect_dtype_shape(t, KILN_I32, KILN_SHAPE(3));
        cr_assert(memcmp(kiln_tensor_data(t), values, sizeof values) == 0, "version %d", major);
    }
    /* A header longer than version 1.0's 64 KiB limit, as numpy writes it in 2.0. */
    char header[70000];
    int n =
        snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }");
    memset(header + n, ' ', sizeof header - (size_t)n - 2);
    header[sizeof header - 2] = '\n';
    header[sizeof header - 1] = '\0';
    const float x = 2.5f;
    kiln_tensor *t = load_text(cx, 2, header, &x, sizeof x);
    expect_dtype_shape(t, KILN_F32, KILN_SHAPE_SCALAR);
    cr_assert_eq(kiln_tensor_item(cx, t, 0), 2.5);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(npy_read, big_endian_values) {
    kiln_ctx *cx = test_ctx();
    const unsigned char i4[] = {0x00, 0x00, 0x00, 0x01, 0xff, 0xff,
                                0xff, 0xfe, 0x12, 0x34, 0x56, 0x78};
    kiln_tensor *t = load_text(cx, 1, "{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }",
                               i4, sizeof i4);
    expect_dtype_shape(t, KILN_I32, KILN_SHAPE(3));
    const int32_t *iv = kiln_tensor_data(t);
    cr_assert_eq(iv[0], 1);
    cr_assert_eq(iv[1], -2);
    cr_assert_eq(iv[2], 0x12345678);

    /* 1.5 = 0x3FF8000000000000, -2.25 = 0xC002000000000000 */
    const unsigned char f8[] = {0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xc0, 0x02, 0, 0, 0, 0, 0, 0};
    t = load_text(cx, 1, "{'descr': '>f8', 'fortran_order': False, 'shape': (2, 1), }", f8,
                  sizeof f8);
    expect_dtype_shape(t, KILN_F64, KILN_SHAPE(2, 1));
    const double *dv = kiln_tensor_data(t);
    cr_assert_eq(dv[0], 1.5);
    cr_assert_eq(dv[1], -2.25);

    /* bf16 stored big-endian: 1.0 is 0x3F80. */
    const unsigned char bf[] = {0x3f, 0x80, 0xc0, 0x20};
    t = load_text(cx, 1, "{'descr': [('bf16', '>u2')], 'fortran_order': False, 'shape': (2,), }",
                  bf, sizeof bf);
    expect_dtype_shape(t, KILN_BF16, KILN_SHAPE(2));
    cr_assert_eq(kiln_tensor_item(cx, t, 0), 1.0);
    cr_assert_eq(kiln_tensor_item(cx, t, 1), -2.5);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Every multi-byte dtype written big-endian loads as the same values as little-endian. */
Test(npy_read, big_endian_every_dtype) {
    kiln_ctx *cx = test_ctx();
    static const struct {
        kiln_dtype dtype;
        const char *be, *le;
    } cases[] = {
        {KILN_I16, "'>i2'", "'<i2'"}, {KILN_I32, "'>i4'", "'<i4'"},
        {KILN_I64, "'>i8'", "'<i8'"}, {KILN_U16, "'>u2'", "'<u2'"},
        {KILN_U32, "'>u4'", "'<u4'"}, {KILN_U64, "'>u8'", "'<u8'"},
        {KILN_F16, "'>f2'", "'<f2'"}, {KILN_F32, "'>f4'", "'<f4'"},
        {KILN_F64, "'>f8'", "'<f8'"}, {KILN_BF16, "[('bf16', '>u2')]", "[('bf16', '<u2')]"},
        {KILN_I8, "'>i1'", "'|i1'"},  {KILN_U8, "'<u1'", "'|u1'"},
        {KILN_BOOL, "'>b1'", "'|b1'"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t esize = kiln_dtype_size(cases[i].dtype);
        unsigned char le[7 * 8], be[7 * 8];
        fill_bytes(cases[i].dtype, le, 7 * esize, (uint32_t)i);
        for (size_t e = 0; e < 7; e++)
            for (size_t k = 0; k < esize; k++)
                be[e * esize + k] = le[e * esize + esize - 1 - k];
        char hbe[200], hle[200];
        snprintf(hbe, sizeof hbe, "{'descr': %s, 'fortran_order': False, 'shape': (7,), }",
                 cases[i].be);
        snprintf(hle, sizeof hle, "{'descr': %s, 'fortran_order': False, 'shape': (7,), }",
                 cases[i].le);
        kiln_tensor *a = load_text(cx, 1, hle, le, 7 * esize);
        kiln_tensor *b = load_text(cx, 1, hbe, be, 7 * esize);
        expect_dtype_shape(a, cases[i].dtype, KILN_SHAPE(7));
        expect_same_tensor(a, b, cases[i].be);
        cr_assert(memcmp(kiln_tensor_data(a), le, 7 * esize) == 0, "%s", cases[i].le);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(npy_read, python2_quotes_order_whitespace) {
    kiln_ctx *cx = test_ctx();
    int16_t v12[12];
    for (int i = 0; i < 12; i++)
        v12[i] = (int16_t)(i * 1000 - 5000);
    kiln_tensor *t = load_text(
        cx, 1, "{'descr': '<i2', 'fortran_order': False, 'shape': (3L, 4L), }", v12, sizeof v12);
    expect_dtype_shape(t, KILN_I16, KILN_SHAPE(3, 4));
    cr_assert(memcmp(kiln_tensor_data(t), v12, sizeof v12) == 0);

    t = load_text(cx, 1, "{'descr': '<i2', 'fortran_order': False, 'shape': (12L,), }", v12,
                  sizeof v12);
    expect_dtype_shape(t, KILN_I16, KILN_SHAPE(12));

    const float f2[] = {0.5f, -1.0f};
    t = load_text(cx, 1, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,)}", f2,
                  sizeof f2);
    expect_dtype_shape(t, KILN_F32, KILN_SHAPE(2));
    cr_assert(memcmp(kiln_tensor_data(t), f2, sizeof f2) == 0);

    t = load_text(cx, 1,
                  "{\"descr\": [(\"bf16\", \"<u2\")], 'fortran_order': False, "
                  "'shape': (1,)}",
                  "\x80\x3f", 2);
    expect_dtype_shape(t, KILN_BF16, KILN_SHAPE(1));
    cr_assert_eq(kiln_tensor_item(cx, t, 0), 1.0);

    const uint32_t u4[] = {1, 2, 3, 0xffffffffu};
    t = load_text(cx, 1, "{'shape': (2, 2), 'fortran_order': False, 'descr': '<u4'}", u4,
                  sizeof u4);
    expect_dtype_shape(t, KILN_U32, KILN_SHAPE(2, 2));
    cr_assert(memcmp(kiln_tensor_data(t), u4, sizeof u4) == 0);

    t = load_text(cx, 1, "{'fortran_order': False, 'descr': '<u4', 'shape': (4,)}", u4, sizeof u4);
    expect_dtype_shape(t, KILN_U32, KILN_SHAPE(4));

    const double d2[] = {3.25, -0.0};
    t = load_text(cx, 1,
                  "  {\n 'descr' :\t'<f8' ,'fortran_order':False,'shape':( 2 , 1 , ) ,\r\n}  "
                  "\t\n",
                  d2, sizeof d2);
    expect_dtype_shape(t, KILN_F64, KILN_SHAPE(2, 1));
    cr_assert(memcmp(kiln_tensor_data(t), d2, sizeof d2) == 0);

    /* No trailing comma in the dict, no padding. */
    const unsigned char b[] = {1};
    t = load_text(cx, 1, "{'descr':'|b1','fortran_order':False,'shape':()}", b, 1);
    expect_dtype_shape(t, KILN_BOOL, KILN_SHAPE_SCALAR);
    cr_assert_eq(kiln_tensor_item(cx, t, 0), 1.0);

    /* Empty arrays carry no data at all. */
    t = load_text(cx, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 5), }", NULL, 0);
    expect_dtype_shape(t, KILN_F64, KILN_SHAPE(0, 5));
    cr_assert_eq(kiln_tensor_nbytes(t), 0);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(npy_read, loaded_tensor_belongs_to_scope) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *t = make_tensor(cx, KILN_I32, KILN_SHAPE(4), 9);
    void *data = NULL;
    size_t size = 0;
    cr_assert_eq(kiln_npy_save_buffer(cx, t, &data, &size), KILN_OK);
    kiln_scope_begin(cx);
    kiln_tensor *back = NULL;
    cr_assert_eq(kiln_npy_load_buffer(cx, data, size, &back), KILN_OK);
    kiln_tensor *kept = kiln_tensor_retain(back);
    kiln_scope_end(cx);
    /* The buffer need not outlive the call. */
    kiln_buffer_free(cx, data, size);
    expect_same_tensor(t, kept, "retained past its scope");
    kiln_tensor_release(kept);
    expect_ok(cx);
    kiln_ctx_release(cx);
}
