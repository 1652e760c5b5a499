/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/npy.h: every way a .npy file or a call can be wrong. Each case checks the status
 * and a fragment of the message; the sweeps (truncation at every byte, corrupted bytes,
 * random mutations) check that nothing crashes or reads out of bounds (run under ASan). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

/* A .npy file: magic, version major.minor, the header length (2 bytes for 1.x, else 4),
 * the header text (no padding), then `ndata` zero bytes. Free with free(). */
static unsigned char *npy_bytes_v(int major, int minor, const char *header, size_t ndata,
                                  size_t *out_size) {
    size_t hlen = strlen(header);
    size_t lenbytes = major == 1 ? 2 : 4;
    size_t size = 8 + lenbytes + hlen + ndata;
    unsigned char *b = calloc(1, size);
    cr_assert_not_null(b);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[7] = (unsigned char)minor;
    for (size_t i = 0; i < lenbytes; i++)
        b[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(b + 8 + lenbytes, header, hlen);
    *out_size = size;
    return b;
}

/* Loads `size` bytes from a copy of exactly that size, so ASan sees any over-read. */
static kiln_status load_exact(kiln_ctx *cx, const void *data, size_t size, kiln_tensor **out) {
    unsigned char *copy = malloc(size ? size : 1);
    cr_assert_not_null(copy);
    if (size) memcpy(copy, data, size);
    kiln_status s = kiln_npy_load_buffer(cx, copy, size, out);
    free(copy);
    return s;
}

static void expect_load_error(kiln_ctx *cx, const void *data, size_t size, kiln_status status,
                              const char *fragment, const char *what) {
    kiln_tensor *t = (kiln_tensor *)&t; /* anything but NULL */
    kiln_status s = load_exact(cx, data, size, &t);
    cr_assert_eq(s, status, "%s: status %s, expected %s; message: %s", what, kiln_status_name(s),
                 kiln_status_name(status), kiln_ctx_error_message(cx));
    cr_assert_null(t, "%s: *out_tensor not NULL on error", what);
    expect_error(cx, status, fragment);
}

/* A header with `ndata` bytes of data, expected to fail. */
static void expect_header_error(kiln_ctx *cx, const char *header, size_t ndata, kiln_status status,
                                const char *fragment) {
    size_t size;
    unsigned char *b = npy_bytes_v(1, 0, header, ndata, &size);
    expect_load_error(cx, b, size, status, fragment, header);
    free(b);
}

#define HDR(descr, order, shape) \
    "{'descr': " descr ", 'fortran_order': " order ", 'shape': " shape ", }"

static kiln_tensor *iota_f32(kiln_ctx *cx) {
    float v[12];
    for (int i = 0; i < 12; i++)
        v[i] = (float)i - 3.5f;
    kiln_tensor *t = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(3, 4), v, sizeof v);
    expect_ok(cx);
    return t;
}

static void *save_to_buffer(kiln_ctx *cx, const kiln_tensor *t, size_t *out_size) {
    void *data = NULL;
    cr_assert_eq(kiln_npy_save_buffer(cx, t, &data, out_size), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    return data;
}

static void write_file(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s", path);
    if (size) cr_assert_eq(fwrite(data, 1, size, f), size);
    cr_assert_eq(fclose(f), 0);
}

/* ---- preamble ------------------------------------------------------------------------ */

Test(npy_errors, not_npy) {
    kiln_ctx *cx = test_ctx();
    size_t size;
    unsigned char *b = npy_bytes_v(1, 0, HDR("'<f4'", "False", "()"), 4, &size);
    b[5] = 'Z';
    expect_load_error(cx, b, size, KILN_INVALID_ARGUMENT, "not a .npy file", "NUMPZ");
    b[5] = 'Y';
    b[0] = 0x92;
    expect_load_error(cx, b, size, KILN_INVALID_ARGUMENT, "not a .npy file", "\\x92");
    free(b);
    const char text[] = "col1,col2\n1,2\n3,4\n";
    expect_load_error(cx, text, sizeof text - 1, KILN_INVALID_ARGUMENT, "not a .npy file", "csv");
    expect_load_error(cx, "", 0, KILN_INVALID_ARGUMENT, "not a .npy file", "empty");
    kiln_tensor *t = (kiln_tensor *)&t;
    cr_assert_eq(kiln_npy_load_buffer(cx, NULL, 0, &t), KILN_INVALID_ARGUMENT);
    cr_assert_null(t);
    expect_error(cx, KILN_INVALID_ARGUMENT, "<buffer>: not a .npy file");
    kiln_ctx_release(cx);
}

Test(npy_errors, unsupported_versions) {
    kiln_ctx *cx = test_ctx();
    static const int versions[][2] = {{4, 0}, {0, 0}, {0, 9}, {255, 255}, {10, 1}};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        size_t size;
        unsigned char *b = npy_bytes_v(2, 0, HDR("'<f4'", "False", "()"), 4, &size);
        b[6] = (unsigned char)versions[i][0];
        b[7] = (unsigned char)versions[i][1];
        char fragment[64];
        snprintf(fragment, sizeof fragment, "version %d.%d is not supported", versions[i][0],
                 versions[i][1]);
        expect_load_error(cx, b, size, KILN_UNIMPLEMENTED, fragment, fragment);
        free(b);
    }
    kiln_ctx_release(cx);
}

Test(npy_errors, header_length_limits) {
    kiln_ctx *cx = test_ctx();
    /* Version 2.0 and 3.0 lengths far beyond the 1 MiB limit: refused before any
     * allocation or read. */
    static const uint32_t lengths[] = {0xffffffffu, 0x80000000u, (1u << 20) + 1};
    for (int major = 2; major <= 3; major++)
        for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
            size_t size;
            unsigned char *b = npy_bytes_v(major, 0, HDR("'<f4'", "False", "()"), 4, &size);
            for (int k = 0; k < 4; k++)
                b[8 + k] = (unsigned char)(lengths[i] >> (8 * k));
            expect_load_error(cx, b, size, KILN_INVALID_ARGUMENT, "exceeds the limit",
                              "long header");
            free(b);
        }
    /* Within the limit but longer than the file. */
    size_t size;
    unsigned char *b = npy_bytes_v(1, 0, HDR("'<f4'", "False", "()"), 4, &size);
    b[8] = 0xff;
    b[9] = 0xff;
    expect_load_error(cx, b, size, KILN_DATA_LOSS, "truncated .npy header: 65535 bytes announced",
                      "65535");
    b[8] = 0;
    b[9] = 0;
    expect_load_error(cx, b, size, KILN_INVALID_ARGUMENT, "does not start with '{'",
                      "empty header");
    free(b);
    kiln_ctx_release(cx);
}

/* ---- truncation and trailing data ------------------------------------------------------ */

static void truncation_sweep(kiln_ctx *cx, const unsigned char *data, size_t size,
                             const char *path) {
    for (size_t n = 0; n < size; n++) {
        kiln_tensor *t = (kiln_tensor *)&t;
        kiln_status s = load_exact(cx, data, n, &t);
        cr_assert(s == KILN_DATA_LOSS || s == KILN_INVALID_ARGUMENT,
                  "prefix of %zu/%zu bytes: status %s: %s", n, size, kiln_status_name(s),
                  kiln_ctx_error_message(cx));
        cr_assert_eq(kiln_ctx_status(cx), s);
        cr_assert_null(t);
        cr_assert_neq(kiln_ctx_error_message(cx)[0], '\0');
        cr_assert_not_null(strstr(kiln_ctx_error_message(cx), "<buffer>"), "%s",
                           kiln_ctx_error_message(cx));
        kiln_ctx_clear_error(cx);

        /* The same through a file. */
        write_file(path, data, n);
        t = (kiln_tensor *)&t;
        s = kiln_npy_load(cx, path, &t);
        cr_assert(s == KILN_DATA_LOSS || s == KILN_INVALID_ARGUMENT,
                  "file of %zu/%zu bytes: status %s: %s", n, size, kiln_status_name(s),
                  kiln_ctx_error_message(cx));
        cr_assert_null(t);
        cr_assert_not_null(strstr(kiln_ctx_error_message(cx), path), "%s",
                           kiln_ctx_error_message(cx));
        kiln_ctx_clear_error(cx);
    }
    kiln_tensor *t = NULL;
    cr_assert_eq(load_exact(cx, data, size, &t), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor_release(t);
    unlink(path);
}

Test(npy_errors, truncated_at_every_byte) {
    kiln_ctx *cx = test_ctx();
    char path[4096];
    snprintf(path, sizeof path, "%s", test_tmp_path("truncated.npy"));
    size_t size;
    unsigned char *data = save_to_buffer(cx, iota_f32(cx), &size);
    cr_assert_eq(size, 128 + 48);
    truncation_sweep(cx, data, size, path);
    kiln_buffer_free(cx, data, size);

    kiln_tensor *b = kiln_full(cx, KILN_BOOL, KILN_SHAPE_SCALAR, 1);
    data = save_to_buffer(cx, b, &size);
    cr_assert_eq(size, 128 + 1);
    truncation_sweep(cx, data, size, path);
    kiln_buffer_free(cx, data, size);

    /* Version 2.0 preamble: the length field itself can be cut. */
    size_t s2;
    unsigned char *v2 = npy_bytes_v(2, 0, HDR("'<i2'", "False", "(2,)"), 4, &s2);
    truncation_sweep(cx, v2, s2, path);
    free(v2);
    kiln_ctx_release(cx);
}

Test(npy_errors, messages_for_truncation) {
    kiln_ctx *cx = test_ctx();
    size_t size;
    unsigned char *data = save_to_buffer(cx, iota_f32(cx), &size);
    expect_load_error(cx, data, 9, KILN_DATA_LOSS, "truncated .npy file", "9 bytes");
    expect_load_error(cx, data, 100, KILN_DATA_LOSS, "truncated .npy header", "100 bytes");
    expect_load_error(cx, data, size - 1, KILN_DATA_LOSS,
                      "truncated .npy data: f32[3,4] needs 48 bytes, the file has 47", "data");
    expect_load_error(cx, data, 128, KILN_DATA_LOSS, "needs 48 bytes, the file has 0", "no data");

    char path[4096];
    snprintf(path, sizeof path, "%s", test_tmp_path("short.npy"));
    write_file(path, data, size - 5);
    kiln_tensor *t = (kiln_tensor *)&t;
    cr_assert_eq(kiln_npy_load(cx, path, &t), KILN_DATA_LOSS);
    cr_assert_null(t);
    expect_error(cx, KILN_DATA_LOSS, "needs 48 bytes, the file has 43");
    unlink(path);
    kiln_buffer_free(cx, data, size);
    kiln_ctx_release(cx);
}

Test(npy_errors, trailing_bytes) {
    kiln_ctx *cx = test_ctx();
    size_t size;
    unsigned char *data = save_to_buffer(cx, iota_f32(cx), &size);
    unsigned char *longer = calloc(1, size + 3);
    cr_assert_not_null(longer);
    memcpy(longer, data, size);
    expect_load_error(cx, longer, size + 1, KILN_DATA_LOSS,
                      ".npy data has 1 bytes after the 48 that f32[3,4] needs", "+1");
    expect_load_error(cx, longer, size + 3, KILN_DATA_LOSS, "has 3 bytes after", "+3");

    char path[4096];
    snprintf(path, sizeof path, "%s", test_tmp_path("long.npy"));
    write_file(path, longer, size + 2);
    kiln_tensor *t = (kiln_tensor *)&t;
    cr_assert_eq(kiln_npy_load(cx, path, &t), KILN_DATA_LOSS);
    cr_assert_null(t);
    cr_assert_not_null(strstr(kiln_ctx_error_message(cx), path));
    expect_error(cx, KILN_DATA_LOSS, "has 2 bytes after");
    unlink(path);

    /* An empty array followed by stray bytes. */
    expect_header_error(cx, HDR("'<f4'", "False", "(0,)"), 1, KILN_DATA_LOSS,
                        "has 1 bytes after the 0");
    free(longer);
    kiln_buffer_free(cx, data, size);
    kiln_ctx_release(cx);
}

/* ---- header contents ----------------------------------------------------------------- */

Test(npy_errors, unsupported_dtypes_and_order) {
    kiln_ctx *cx = test_ctx();
    expect_header_error(cx, HDR("'<f4'", "True", "(3, 4)"), 48, KILN_UNIMPLEMENTED,
                        "Fortran-order .npy files are not supported");
    expect_header_error(cx, HDR("'<f4'", "True", "(2, 1, 3)"), 24, KILN_UNIMPLEMENTED,
                        "Fortran-order");
    static const char *const types[] = {"<c32",   "<f16", "|O",   "<U5", "|S3", "|V4", "<M8[ns]",
                                        "<m8[s]", "<f16", "<i16", "|i4", "|f8", "f4",  "<f3",
                                        "<b2",    "<x4",  "",     "<",   "<f4 "};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char header[128], fragment[64];
        snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (1,)}",
                 types[i]);
        snprintf(fragment, sizeof fragment, ".npy dtype '%s' is not supported", types[i]);
        expect_header_error(cx, header, 16, KILN_UNIMPLEMENTED, fragment);
    }
    static const char *const structured[] = {
        "[('a', '<f4')]",     "[('bf16', '<u2'), ('x', '<u2')]",
        "[('bf16', '<f2')]",  "[('bf16', '<i2')]",
        "[('bf16', '|u1')]",  "[('bf16', '<u2', (2,))]",
        "[('BF16', '<u2')]",  "[]",
        "[('bf16')]",         "[('bf16', '<u2')",
        "[(b'bf16', '<u2')]", "[('bf\\x316', '<u2')]",
    };
    for (size_t i = 0; i < sizeof structured / sizeof structured[0]; i++) {
        char header[128];
        snprintf(header, sizeof header, "{'descr': %s, 'fortran_order': False, 'shape': (1,)}",
                 structured[i]);
        expect_header_error(cx, header, 2, KILN_UNIMPLEMENTED,
                            ".npy structured dtype is not supported");
    }
    kiln_ctx_release(cx);
}

Test(npy_errors, malformed_dict) {
    kiln_ctx *cx = test_ctx();
    static const struct {
        const char *header;
        const char *fragment;
    } cases[] = {
        {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
        {"{'descr': '<f4', 'shape': (1,)}", "missing key 'fortran_order'"},
        {"{'fortran_order': False, 'shape': (1,)}", "missing key 'descr'"},
        {"{}", "missing key 'descr'"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
         "repeated key 'descr'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (1,)}",
         "repeated key 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'fortran_order': False, 'shape': (1,)}",
         "repeated key 'fortran_order'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'foo': 1}",
         "unexpected or repeated key 'foo'"},
        {"{'Descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "key 'Descr'"},
        {"{'': '<f4'}", "unexpected or repeated key ''"},
        {HDR("'<f4'", "0", "(1,)"), "'fortran_order' is not True or False"},
        {HDR("'<f4'", "false", "(1,)"), "'fortran_order' is not True or False"},
        {HDR("'<f4'", "'False'", "(1,)"), "'fortran_order' is not True or False"},
        {HDR("'<f4'", "Falsey", "(1,)"), "expected ',' or '}' after a value"},
        {HDR("5", "False", "(1,)"), "'descr' is not a string"},
        {HDR("<f4", "False", "(1,)"), "'descr' is not a string"},
        /* unterminated strings */
        {"{'descr': '<f4", "'descr' is not a string"},
        {"{'descr': \"<f4', 'fortran_order': False, 'shape': (1,)}", "'descr' is not a string"},
        {"{'descr", "expected a quoted key"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), '", "expected a quoted key"},
        /* escapes */
        {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (1,)}", "'descr' is not a string"},
        {"{'de\\x73cr': '<f4', 'fortran_order': False, 'shape': (1,)}", "expected a quoted key"},
        /* structure */
        {"", "it does not start with '{'"},
        {"   \n", "it does not start with '{'"},
        {"['descr', '<f4']", "it does not start with '{'"},
        {"dict(descr='<f4')", "it does not start with '{'"},
        {"{descr: '<f4'}", "expected a quoted key"},
        {"{5: '<f4'}", "expected a quoted key"},
        {"{'descr' '<f4'}", "expected ':' after a key"},
        {"{'descr'= '<f4'}", "expected ':' after a key"},
        {"{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}",
         "expected ',' or '}' after a value"},
        {"{'descr': '<f4',, 'fortran_order': False, 'shape': (1,)}", "expected a quoted key"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", "expected ',' or '}'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,),", "expected a quoted key"},
        {HDR("'<f4'", "False", "(1,)") " x", "unexpected text after the dictionary"},
        {HDR("'<f4'", "False", "(1,)") "}", "unexpected text after the dictionary"},
        {HDR("'<f4'", "False", "(1,)") "\n{}", "unexpected text after the dictionary"},
        /* shapes */
        {HDR("'<f4'", "False", "(-3,)"), "a dimension of 'shape' is not a non-negative integer"},
        {HDR("'<f4'", "False", "(3,,4)"), "a dimension of 'shape' is not a non-negative integer"},
        {HDR("'<f4'", "False", "(,)"), "a dimension of 'shape' is not a non-negative integer"},
        {HDR("'<f4'", "False", "(a,)"), "a dimension of 'shape' is not a non-negative integer"},
        {HDR("'<f4'", "False", "(3, x)"), "a dimension of 'shape' is not a non-negative integer"},
        {HDR("'<f4'", "False", "(+3,)"), "a dimension of 'shape' is not a non-negative integer"},
        {HDR("'<f4'", "False", "(3.0,)"), "expected ',' or ')' in 'shape'"},
        {HDR("'<f4'", "False", "(3e2,)"), "expected ',' or ')' in 'shape'"},
        {HDR("'<f4'", "False", "(0x10,)"), "expected ',' or ')' in 'shape'"},
        {HDR("'<f4'", "False", "(3LL,)"), "expected ',' or ')' in 'shape'"},
        {HDR("'<f4'", "False", "(3 4)"), "expected ',' or ')' in 'shape'"},
        {HDR("'<f4'", "False", "(3; 4)"), "expected ',' or ')' in 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3", "expected ',' or ')' in 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,",
         "a dimension of 'shape' is not a non-negative integer"},
        {HDR("'<f4'", "False", "[3]"), "'shape' is not a tuple"},
        {HDR("'<f4'", "False", "3"), "'shape' is not a tuple"},
        {HDR("'<f4'", "False", "None"), "'shape' is not a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': ", "'shape' is not a tuple"},
        {HDR("'<f4'", "False", "(99999999999999999999,)"),
         "a dimension of 'shape' overflows int64"},
        {HDR("'<f4'", "False", "(9223372036854775808,)"), "a dimension of 'shape' overflows int64"},
        {HDR("'<f4'", "False", "(2, 18446744073709551617)"),
         "a dimension of 'shape' overflows int64"},
        {HDR("'<f4'", "False", "(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)"),
         "'shape' has more than 16 dimensions"},
        {HDR("'<f4'", "False", "(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0)"),
         "'shape' has more than 16 dimensions"},
        /* byte sizes that overflow */
        {HDR("'<f4'", "False", "(9223372036854775807,)"),
         ".npy shape [9223372036854775807] of f32 is too large"},
        {HDR("'|u1'", "False", "(4294967296, 4294967296)"),
         "is too large: its byte size overflows"},
        {HDR("'<f8'", "False", "(4611686018427387904, 2)"),
         "is too large: its byte size overflows"},
        {HDR("'<f8'", "False", "(2305843009213693952,)"), "is too large: its byte size overflows"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_header_error(cx, cases[i].header, 4, KILN_INVALID_ARGUMENT, cases[i].fragment);
    /* A NUL byte inside the header, and one in place of its final newline. */
    static const char with_nul[] = HDR("'<f4'", "False", "(1,)") "\n\0";
    static const char nul_in_key[] = "{'de\0scr': '<f4', 'fortran_order': False, 'shape': (1,)}";
    static const char nul_in_dtype[] = "{'descr': '<f\0', 'fortran_order': False, 'shape': (1,)}";
    const struct {
        const char *text;
        size_t len;
        const char *fragment;
    } binary[] = {{with_nul, sizeof with_nul - 1, "unexpected text after the dictionary"},
                  /* the NUL is shown, not an invisible end of the message */
                  {nul_in_key, sizeof nul_in_key - 1, "unexpected or repeated key 'de\\x00scr'"},
                  {nul_in_dtype, sizeof nul_in_dtype - 1, ".npy dtype '<f\\x00' is not supported"}};
    for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++) {
        size_t hlen = binary[i].len, size = 10 + hlen + 4;
        unsigned char *b = calloc(1, size);
        cr_assert_not_null(b);
        memcpy(b, "\x93NUMPY\x01\x00", 8);
        b[8] = (unsigned char)hlen;
        b[9] = 0;
        memcpy(b + 10, binary[i].text, hlen);
        expect_load_error(cx, b, size, i == 2 ? KILN_UNIMPLEMENTED : KILN_INVALID_ARGUMENT,
                          binary[i].fragment, "NUL");
        free(b);
    }
    /* Messages name the source and say it is a malformed header. */
    expect_header_error(cx, HDR("'<f4'", "False", "(3,,4)"), 0, KILN_INVALID_ARGUMENT,
                        "<buffer>: malformed .npy header: a dimension of 'shape'");
    kiln_ctx_release(cx);
}

Test(npy_errors, header_errors_name_the_file) {
    kiln_ctx *cx = test_ctx();
    char path[4096];
    snprintf(path, sizeof path, "%s", test_tmp_path("bad_header.npy"));
    size_t size;
    unsigned char *b = npy_bytes_v(1, 0, HDR("'<c32'", "False", "(1,)"), 8, &size);
    write_file(path, b, size);
    free(b);
    kiln_tensor *t = (kiln_tensor *)&t;
    cr_assert_eq(kiln_npy_load(cx, path, &t), KILN_UNIMPLEMENTED);
    cr_assert_null(t);
    char fragment[4200];
    snprintf(fragment, sizeof fragment, "%s: .npy dtype '<c32' is not supported", path);
    expect_error(cx, KILN_UNIMPLEMENTED, fragment);

    b = npy_bytes_v(3, 0, HDR("'<f4'", "False", "(-1,)"), 8, &size);
    write_file(path, b, size);
    free(b);
    cr_assert_eq(kiln_npy_load(cx, path, &t), KILN_INVALID_ARGUMENT);
    snprintf(fragment, sizeof fragment, "%s: malformed .npy header", path);
    expect_error(cx, KILN_INVALID_ARGUMENT, fragment);

    b = npy_bytes_v(1, 0, HDR("'<f4'", "True", "(2, 2)"), 16, &size);
    write_file(path, b, size);
    free(b);
    cr_assert_eq(kiln_npy_load(cx, path, &t), KILN_UNIMPLEMENTED);
    expect_error(cx, KILN_UNIMPLEMENTED, "Fortran-order");

    write_file(path, "\x93NUMPY\x04\x00\x10\x00", 10);
    cr_assert_eq(kiln_npy_load(cx, path, &t), KILN_UNIMPLEMENTED);
    expect_error(cx, KILN_UNIMPLEMENTED, "version 4.0 is not supported");

    write_file(path, "\x93NUMPY\x02\x00\xff\xff\xff\xff", 12);
    cr_assert_eq(kiln_npy_load(cx, path, &t), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "exceeds the limit");

    static const char zip[] = "PK\x03\x04 a zip file, perhaps an .npz";
    write_file(path, zip, sizeof zip - 1);
    cr_assert_eq(kiln_npy_load(cx, path, &t), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "not a .npy file");
    unlink(path);
    kiln_ctx_release(cx);
}

/* ---- sweeps -------------------------------------------------------------------------- */

/* Loads a mutated file: it either loads (a tensor consistent with its own header) or
 * fails with a status and message. Returns true when it loaded. */
static bool load_mutant(kiln_ctx *cx, const unsigned char *data, size_t size, const char *what) {
    kiln_tensor *t = (kiln_tensor *)&t;
    kiln_status s = load_exact(cx, data, size, &t);
    if (s == KILN_OK) {
        expect_ok(cx);
        cr_assert_not_null(t, "%s", what);
        int64_t numel = 0;
        size_t nbytes = 0;
        cr_assert(kiln_dtype_is_valid(kiln_tensor_dtype(t)), "%s", what);
        cr_assert(kiln_shape_numel(kiln_tensor_shape(t), &numel), "%s", what);
        cr_assert(kiln_shape_nbytes(kiln_tensor_shape(t), kiln_tensor_dtype(t), &nbytes), "%s",
                  what);
        cr_assert_eq(kiln_tensor_numel(t), numel, "%s", what);
        cr_assert_eq(kiln_tensor_nbytes(t), nbytes, "%s", what);
        cr_assert_lt(nbytes, size, "%s", what);
        kiln_tensor_release(t);
        return true;
    }
    cr_assert(s == KILN_INVALID_ARGUMENT || s == KILN_UNIMPLEMENTED || s == KILN_DATA_LOSS,
              "%s: status %s: %s", what, kiln_status_name(s), kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_ctx_status(cx), s, "%s", what);
    cr_assert_null(t, "%s", what);
    cr_assert_neq(kiln_ctx_error_message(cx)[0], '\0', "%s", what);
    kiln_ctx_clear_error(cx);
    return false;
}

static void corrupt_sweep(kiln_ctx *cx, const kiln_tensor *t, int *out_loaded, int *out_failed) {
    size_t size;
    unsigned char *data = save_to_buffer(cx, t, &size);
    size_t hlen = (size_t)data[8] | (size_t)data[9] << 8;
    unsigned char *m = malloc(size);
    cr_assert_not_null(m);
    static const unsigned char values[] = {0x00, 0x01, 0x02, 0x03, '\t', ' ',  '\'', '"', '(',
                                           ')',  ',',  '-',  '0',  '1',  '9',  ':',  'L', '[',
                                           '\\', ']',  '{',  '}',  0x7f, 0x80, 0xff};
    for (size_t i = 0; i < 10 + hlen; i++)
        for (size_t v = 0; v <= sizeof values; v++) {
            memcpy(m, data, size);
            m[i] = v < sizeof values ? values[v] : (unsigned char)(data[i] ^ 0x20);
            if (m[i] == data[i]) continue;
            char what[64];
            snprintf(what, sizeof what, "byte %zu set to 0x%02x", i, m[i]);
            if (load_mutant(cx, m, size, what))
                (*out_loaded)++;
            else
                (*out_failed)++;
        }
    free(m);
    kiln_buffer_free(cx, data, size);
}

Test(npy_errors, corrupted_byte_sweep) {
    kiln_ctx *cx = test_ctx();
    int loaded = 0, failed = 0;
    corrupt_sweep(cx, iota_f32(cx), &loaded, &failed);
    corrupt_sweep(cx, kiln_zeros(cx, KILN_BF16, KILN_SHAPE(2, 1)), &loaded, &failed);
    corrupt_sweep(cx, kiln_zeros(cx, KILN_BOOL, KILN_SHAPE_SCALAR), &loaded, &failed);
    expect_ok(cx);
    /* Padding bytes may change freely, so some mutants load; most are errors. */
    cr_assert_gt(loaded, 0);
    cr_assert_gt(failed, loaded);
    kiln_ctx_release(cx);
}

Test(npy_errors, random_mutations) {
    kiln_ctx *cx = test_ctx();
    size_t size;
    unsigned char *data = save_to_buffer(cx, iota_f32(cx), &size);
    unsigned char *m = malloc(size + 16);
    cr_assert_not_null(m);
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(m, data, size);
        size_t msize = size;
        int edits = 1 + (int)(iter % 4);
        for (int e = 0; e < edits; e++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            size_t pos = (size_t)(x >> 8) % 128; /* in the preamble or header */
            unsigned char val = (unsigned char)(x >> 40);
            if ((x & 0xf) == 0) val = (unsigned char)" ,()0123456789L'"[(x >> 4) & 0xf];
            m[pos] = val;
        }
        if ((x >> 60) == 0) msize = (size_t)(x >> 20) % (size + 16); /* and a truncation */
        if (msize > size) memset(m + size, 0, msize - size);
        char what[64];
        snprintf(what, sizeof what, "mutation %d", iter);
        load_mutant(cx, m, msize, what);
    }
    free(m);
    kiln_buffer_free(cx, data, size);
    kiln_ctx_release(cx);
}

/* ---- arguments ---------------------------------------------------------------------- */

Test(npy_errors, null_arguments) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *t = iota_f32(cx);
    size_t size;
    unsigned char *data = save_to_buffer(cx, t, &size);
    kiln_tensor *out = (kiln_tensor *)&out;

    cr_assert_eq(kiln_npy_load_buffer(cx, data, size, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_npy_load_buffer: out_tensor is NULL");
    cr_assert_eq(kiln_npy_load_buffer(cx, NULL, size, &out), KILN_INVALID_ARGUMENT);
    cr_assert_null(out);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_npy_load_buffer: data is NULL");

    out = (kiln_tensor *)&out;
    cr_assert_eq(kiln_npy_load(cx, NULL, &out), KILN_INVALID_ARGUMENT);
    cr_assert_null(out);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_npy_load: path is NULL");
    cr_assert_eq(kiln_npy_load(cx, "whatever.npy", NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_npy_load: out_tensor is NULL");

    cr_assert_eq(kiln_npy_save(cx, NULL, t), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_npy_save: path is NULL");
    const char *path = test_tmp_path("null_tensor.npy");
    cr_assert_eq(kiln_npy_save(cx, path, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_npy_save: tensor is NULL");
    cr_assert_neq(access(path, F_OK), 0, "a file was left behind");

    void *buf = &buf;
    size_t bsize = 99;
    cr_assert_eq(kiln_npy_save_buffer(cx, NULL, &buf, &bsize), KILN_INVALID_ARGUMENT);
    cr_assert_null(buf);
    cr_assert_eq(bsize, 0);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_npy_save_buffer: tensor is NULL");
    cr_assert_eq(kiln_npy_save_buffer(cx, t, NULL, &bsize), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_npy_save_buffer: out_data is NULL");
    buf = &buf;
    cr_assert_eq(kiln_npy_save_buffer(cx, t, &buf, NULL), KILN_INVALID_ARGUMENT);
    cr_assert_null(buf);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_npy_save_buffer: out_size is NULL");

    /* Without a ctx there is nowhere to put a message, but nothing crashes. */
    out = (kiln_tensor *)&out;
    cr_assert_eq(kiln_npy_load_buffer(NULL, data, size, &out), KILN_INVALID_ARGUMENT);
    cr_assert_eq(kiln_npy_load(NULL, path, &out), KILN_INVALID_ARGUMENT);
    cr_assert_eq(kiln_npy_save(NULL, path, t), KILN_INVALID_ARGUMENT);
    cr_assert_eq(kiln_npy_save_buffer(NULL, t, &buf, &bsize), KILN_INVALID_ARGUMENT);
    kiln_buffer_free(NULL, data, size); /* no-op without a ctx */
    kiln_buffer_free(cx, NULL, 0);
    cr_assert_neq(access(path, F_OK), 0, "a file was left behind");

    /* A NULL-argument error does not replace an earlier one. */
    kiln_ctx_set_error(cx, KILN_CANCELLED, "first");
    cr_assert_eq(kiln_npy_load(cx, NULL, &out), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_CANCELLED, "first");
    expect_ok(cx);
    kiln_buffer_free(cx, data, size);
    kiln_ctx_release(cx);
}

/* ---- files -------------------------------------------------------------------------- */

/* The names in `dir` other than . and .., sorted into one comma-separated string. */
static void list_dir(const char *dir, char *out, size_t cap) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "opendir %s: %s", dir, strerror(errno));
    char names[16][256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        cr_assert_lt(n, 16, "too many files in %s", dir);
        snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    for (int i = 1; i < n; i++) /* insertion sort */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char tmp[256];
            memcpy(tmp, names[j], sizeof tmp);
            memcpy(names[j], names[j - 1], sizeof tmp);
            memcpy(names[j - 1], tmp, sizeof tmp);
        }
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? "," : "", names[i]);
}

static void make_fresh_dir(char *dir, size_t cap, const char *name) {
    snprintf(dir, cap, "%s", test_tmp_path(name));
    cr_assert_eq(mkdir(dir, 0755), 0, "mkdir %s: %s", dir, strerror(errno));
}

Test(npy_files, missing_file_and_directory) {
    kiln_ctx *cx = test_ctx();
    char path[4096];
    snprintf(path, sizeof path, "%s", test_tmp_path("does_not_exist.npy"));
    kiln_tensor *t = (kiln_tensor *)&t;
    cr_assert_eq(kiln_npy_load(cx, path, &t), KILN_NOT_FOUND);
    cr_assert_null(t);
    char fragment[4200];
    snprintf(fragment, sizeof fragment, "%s: cannot open for reading", path);
    expect_error(cx, KILN_NOT_FOUND, fragment);

    char dir[4096];
    make_fresh_dir(dir, sizeof dir, "a_directory.npy");
    t = (kiln_tensor *)&t;
    kiln_status s = kiln_npy_load(cx, dir, &t);
    cr_assert_neq(s, KILN_OK);
    cr_assert_null(t);
    cr_assert_not_null(strstr(kiln_ctx_error_message(cx), dir), "%s", kiln_ctx_error_message(cx));
    /* On Linux fopen succeeds on a directory and kiln's own check catches it. */
    expect_error(cx, KILN_INVALID_ARGUMENT, "not a regular file");

    /* The empty path. */
    t = (kiln_tensor *)&t;
    cr_assert_eq(kiln_npy_load(cx, "", &t), KILN_NOT_FOUND);
    cr_assert_null(t);
    expect_error(cx, KILN_NOT_FOUND, ": cannot open for reading");

    /* A path through a regular file. */
    write_file(path, "x", 1);
    char through[4200];
    snprintf(through, sizeof through, "%s/inner.npy", path);
    s = kiln_npy_load(cx, through, &t);
    cr_assert_neq(s, KILN_OK);
    cr_assert_not_null(strstr(kiln_ctx_error_message(cx), through));
    kiln_ctx_clear_error(cx);
    unlink(path);
    rmdir(dir);
    kiln_ctx_release(cx);
}

Test(npy_files, save_into_missing_directory) {
    kiln_ctx *cx = test_ctx();
    char dir[4096], path[4200], listing[4096];
    make_fresh_dir(dir, sizeof dir, "save_missing");
    snprintf(path, sizeof path, "%s/no/such/dir/x.npy", dir);
    kiln_tensor *t = iota_f32(cx);
    cr_assert_eq(kiln_npy_save(cx, path, t), KILN_NOT_FOUND);
    cr_assert_not_null(strstr(kiln_ctx_error_message(cx), path));
    expect_error(cx, KILN_NOT_FOUND, "cannot create a file beside");
    cr_assert_neq(access(path, F_OK), 0);
    list_dir(dir, listing, sizeof listing);
    cr_assert_str_eq(listing, "", "left behind: %s", listing);

    /* A directory that is really a file. */
    char file[4200];
    snprintf(file, sizeof file, "%s/plain", dir);
    write_file(file, "x", 1);
    snprintf(path, sizeof path, "%s/plain/x.npy", dir);
    cr_assert_neq(kiln_npy_save(cx, path, t), KILN_OK);
    cr_assert_not_null(strstr(kiln_ctx_error_message(cx), path));
    kiln_ctx_clear_error(cx);
    list_dir(dir, listing, sizeof listing);
    cr_assert_str_eq(listing, "plain", "left behind: %s", listing);
    unlink(file);
    rmdir(dir);
    kiln_ctx_release(cx);
}

Test(npy_files, save_replaces_atomically) {
    kiln_ctx *cx = test_ctx();
    char dir[4096], path[4200], listing[4096];
    make_fresh_dir(dir, sizeof dir, "save_replace");
    snprintf(path, sizeof path, "%s/x.npy", dir);
    static const char junk[] = "not numpy at all, and longer than the new file will be ........";
    write_file(path, junk, sizeof junk - 1);

    kiln_tensor *a = kiln_full(cx, KILN_I64, KILN_SHAPE(2), -7);
    cr_assert_eq(kiln_npy_save(cx, path, a), KILN_OK, "%s", kiln_ctx_error_message(cx));
    list_dir(dir, listing, sizeof listing);
    cr_assert_str_eq(listing, "x.npy", "directory holds: %s", listing);
    kiln_tensor *back = NULL;
    cr_assert_eq(kiln_npy_load(cx, path, &back), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_dtype(back), KILN_I64);
    cr_assert_eq(kiln_tensor_item(cx, back, 1), -7.0);

    /* Replacing again with something smaller: no tail of the old file remains. */
    kiln_tensor *b = kiln_scalar(cx, 1.0, KILN_U8);
    cr_assert_eq(kiln_npy_save(cx, path, b), KILN_OK);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, 129);
    cr_assert_eq(kiln_npy_load(cx, path, &back), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_dtype(back), KILN_U8);
    cr_assert_eq(kiln_tensor_rank(back), 0);
    list_dir(dir, listing, sizeof listing);
    cr_assert_str_eq(listing, "x.npy", "directory holds: %s", listing);

    /* Many saves over the same name leave one file. */
    for (int i = 0; i < 20; i++)
        cr_assert_eq(kiln_npy_save(cx, path, a), KILN_OK);
    list_dir(dir, listing, sizeof listing);
    cr_assert_str_eq(listing, "x.npy", "directory holds: %s", listing);

    /* A failed save (the target is a directory, so the final rename fails) leaves the
     * directory as it was: no temporary file. */
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    cr_assert_neq(kiln_npy_save(cx, sub, a), KILN_OK);
    cr_assert_not_null(strstr(kiln_ctx_error_message(cx), sub));
    expect_error(cx, kiln_ctx_status(cx), "cannot replace");
    list_dir(dir, listing, sizeof listing);
    cr_assert_str_eq(listing, "sub,x.npy", "directory holds: %s", listing);
    expect_ok(cx);
    rmdir(sub);
    unlink(path);
    rmdir(dir);
    kiln_ctx_release(cx);
}

Test(npy_files, save_to_empty_path) {
    kiln_ctx *cx = test_ctx();
    /* Each test runs in its own process, so changing directory stays local to it. */
    char dir[4096], listing[4096];
    make_fresh_dir(dir, sizeof dir, "empty_path");
    cr_assert_eq(chdir(dir), 0);
    kiln_tensor *t = iota_f32(cx);
    cr_assert_neq(kiln_npy_save(cx, "", t), KILN_OK);
    cr_assert_neq(kiln_ctx_error_message(cx)[0], '\0');
    kiln_ctx_clear_error(cx);
    list_dir(".", listing, sizeof listing);
    cr_assert_str_eq(listing, "", "left behind: %s", listing);
    cr_assert_eq(chdir("/"), 0);
    rmdir(dir);
    kiln_ctx_release(cx);
}

/* ---- forgiving where numpy's meaning is unambiguous ---------------------------------- */

Test(npy_errors, fortran_order_loads_when_it_is_the_same_bytes) {
    kiln_ctx *cx = test_ctx();
    const char *shapes[] = {"()", "(3,)", "(1, 3)", "(3, 1, 1)", "(0, 5)"};
    const size_t ndata[] = {4, 12, 12, 12, 0};
    for (size_t i = 0; i < 5; i++) {
        char header[128];
        snprintf(header, sizeof header, HDR("'<f4'", "True", "%s"), shapes[i]);
        size_t size;
        unsigned char *b = npy_bytes_v(1, 0, header, ndata[i], &size);
        kiln_tensor *t = NULL;
        cr_assert_eq(load_exact(cx, b, size, &t), KILN_OK, "%s: %s", header,
                     kiln_ctx_error_message(cx));
        cr_assert_eq((size_t)kiln_tensor_nbytes(t), ndata[i]);
        free(b);
    }
    kiln_ctx_release(cx);
}

Test(npy_errors, bool_bytes_load_as_zero_or_one) {
    kiln_ctx *cx = test_ctx();
    size_t size;
    unsigned char *b = npy_bytes_v(1, 0, HDR("'|b1'", "False", "(4,)"), 4, &size);
    memcpy(b + size - 4, "\x00\x01\x02\xff", 4);
    kiln_tensor *t = NULL;
    cr_assert_eq(load_exact(cx, b, size, &t), KILN_OK);
    const unsigned char *v = kiln_tensor_data(t);
    cr_assert(v[0] == 0 && v[1] == 1 && v[2] == 1 && v[3] == 1);
    free(b);
    kiln_ctx_release(cx);
}

Test(npy_errors, a_one_dimensional_shape_needs_its_comma) {
    kiln_ctx *cx = test_ctx();
    expect_header_error(cx, HDR("'<f4'", "False", "(3)"), 12, KILN_INVALID_ARGUMENT,
                        "needs a comma, as in (3,)");
    kiln_ctx_release(cx);
}

Test(npy_errors, a_prefix_of_the_magic_is_truncation) {
    kiln_ctx *cx = test_ctx();
    expect_load_error(cx, "\x93NUM", 4, KILN_DATA_LOSS, "truncated .npy file (4 bytes)", "prefix");
    expect_load_error(cx, "\x93NUMPY\x01", 7, KILN_DATA_LOSS, "truncated", "prefix");
    expect_load_error(cx, "\x93NUMPX\x01\x00", 8, KILN_INVALID_ARGUMENT, "not a .npy file",
                      "bad magic");
    kiln_ctx_release(cx);
}

Test(npy_errors, a_fifo_is_refused_without_waiting_for_a_writer, .timeout = 10) {
    kiln_ctx *cx = test_ctx();
    const char *path = test_tmp_path("fifo.npy");
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0, "mkfifo: %s", strerror(errno));
    kiln_tensor *t = NULL;
    cr_assert_eq(kiln_npy_load(cx, path, &t), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "not a regular file");
    unlink(path);
    kiln_ctx_release(cx);
}

Test(npy_errors, a_failure_after_an_earlier_error_returns_its_own_status) {
    kiln_ctx *cx = test_ctx();
    kiln_ctx_set_error(cx, KILN_CANCELLED, "an earlier error");
    kiln_tensor *t = NULL;
    cr_assert_eq(kiln_npy_load_buffer(cx, "nope", 4, &t), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_CANCELLED, "an earlier error"); /* sticky: the first message stays */
    kiln_ctx_release(cx);
}
