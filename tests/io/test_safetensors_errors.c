/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/safetensors.h: every way a safetensors file or a call can be wrong. Each case checks
 * the status and a fragment of the message; the sweeps (truncation at every length, every
 * byte corrupted) check that nothing crashes or reads out of bounds (run under ASan). */
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

/* The 8-byte little-endian `hlen`, `header` (strlen bytes, whatever hlen says), then
 * `ndata` bytes of 0x11. Free with free(). */
static unsigned char *st_raw(uint64_t hlen, const char *header, size_t ndata, size_t *out_size) {
    size_t n = strlen(header);
    unsigned char *b = malloc(8 + n + ndata + 1);
    cr_assert_not_null(b);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(hlen >> (8 * i));
    memcpy(b + 8, header, n);
    memset(b + 8 + n, 0x11, ndata);
    *out_size = 8 + n + ndata;
    return b;
}

/* Loads `size` bytes from a copy of exactly that size, so ASan sees any over-read. */
static kiln_status load_exact(kiln_ctx *cx, const void *data, size_t size, kiln_safetensors **out) {
    unsigned char *copy = malloc(size ? size : 1);
    cr_assert_not_null(copy);
    if (size) memcpy(copy, data, size);
    kiln_status s = kiln_safetensors_load_buffer(cx, copy, size, out);
    free(copy);
    return s;
}

static void expect_load_error(kiln_ctx *cx, const void *data, size_t size, kiln_status status,
                              const char *fragment, const char *what) {
    kiln_safetensors *st = (kiln_safetensors *)&st; /* anything but NULL */
    kiln_status s = load_exact(cx, data, size, &st);
    cr_assert_eq(s, status, "%s: status %s, expected %s; message: %s", what, kiln_status_name(s),
                 kiln_status_name(status), kiln_ctx_error_message(cx));
    cr_assert_null(st, "%s: *out not NULL on error", what);
    cr_assert(strstr(kiln_ctx_error_message(cx), "<buffer>") != NULL, "%s: message %s", what,
              kiln_ctx_error_message(cx));
    expect_error(cx, status, fragment);
}

/* A header (its true length) with `ndata` bytes of data, expected to fail. */
static void expect_header_error(kiln_ctx *cx, const char *header, size_t ndata, kiln_status status,
                                const char *fragment) {
    size_t size;
    unsigned char *b = st_raw(strlen(header), header, ndata, &size);
    expect_load_error(cx, b, size, status, fragment, header);
    free(b);
}

static void expect_header_ok(kiln_ctx *cx, const char *header, size_t ndata) {
    size_t size;
    unsigned char *b = st_raw(strlen(header), header, ndata, &size);
    kiln_safetensors *st = NULL;
    kiln_status s = load_exact(cx, b, size, &st);
    cr_assert_eq(s, KILN_OK, "%s: %s", header, kiln_ctx_error_message(cx));
    kiln_safetensors_release(st);
    free(b);
}

#define ONE(dtype, shape, offsets) \
    "{\"t\":{\"dtype\":" dtype ",\"shape\":" shape ",\"data_offsets\":" offsets "}}"

Test(safetensors_errors, header_length) {
    kiln_ctx *cx = test_ctx();
    for (size_t n = 0; n < 8; n++) {
        unsigned char zeros[8] = {0};
        expect_load_error(cx, zeros, n, KILN_DATA_LOSS, "less than the 8-byte header length",
                          "short");
    }
    size_t size;
    unsigned char *b = st_raw(100000001, "{}", 0, &size);
    expect_load_error(cx, b, size, KILN_INVALID_ARGUMENT, "exceeds the limit of 100000000",
                      "over the limit");
    free(b);
    b = st_raw(UINT64_MAX, "{}", 0, &size);
    expect_load_error(cx, b, size, KILN_INVALID_ARGUMENT, "header length 18446744073709551615",
                      "2^64-1");
    free(b);
    /* At the limit but not present: a truncation, found before any allocation. */
    b = st_raw(100000000, "{}", 0, &size);
    expect_load_error(cx, b, size, KILN_DATA_LOSS, "100000000 bytes announced, 2 present",
                      "at the limit");
    free(b);
    b = st_raw(3, "{}", 0, &size);
    expect_load_error(cx, b, size, KILN_DATA_LOSS, "3 bytes announced, 2 present", "one short");
    free(b);
    b = st_raw(0, "", 0, &size);
    expect_load_error(cx, b, size, KILN_INVALID_ARGUMENT, "invalid JSON", "empty header");
    free(b);
    kiln_ctx_release(cx);
}

Test(safetensors_errors, bad_json) {
    kiln_ctx *cx = test_ctx();
    expect_header_error(cx, "{\"t\":", 0, KILN_INVALID_ARGUMENT, "invalid JSON");
    expect_header_error(cx, "{'t': 1}", 0, KILN_INVALID_ARGUMENT, "invalid JSON");
    expect_header_error(cx, "[]", 0, KILN_INVALID_ARGUMENT, "not a JSON object");
    expect_header_error(cx, "\"x\"", 0, KILN_INVALID_ARGUMENT, "not a JSON object");
    expect_header_error(cx, "{} {}", 0, KILN_INVALID_ARGUMENT, "unexpected text after");
    expect_header_error(cx, "{}x", 0, KILN_INVALID_ARGUMENT, "at byte 2");
    expect_header_error(cx, "{\"\xff\":1}", 0, KILN_INVALID_ARGUMENT, "invalid UTF-8 at byte 2");
    expect_header_error(cx, "{\"\xc0\x80\":1}", 0, KILN_INVALID_ARGUMENT, "invalid UTF-8");
    expect_header_error(cx, "{\"\xed\xa0\x80\":1}", 0, KILN_INVALID_ARGUMENT, "invalid UTF-8");
    expect_header_error(cx, "{\"\xf4\x90\x80\x80\":1}", 0, KILN_INVALID_ARGUMENT, "invalid UTF-8");
    expect_header_error(cx, "{\"\xe2\x82\":1}", 0, KILN_INVALID_ARGUMENT, "invalid UTF-8");
    /* A NUL inside the header is not JSON whitespace. */
    size_t size;
    unsigned char *b = st_raw(4, "{}", 0, &size);
    unsigned char padded[12];
    memcpy(padded, b, 10);
    padded[10] = '\0';
    padded[11] = ' ';
    free(b);
    expect_load_error(cx, padded, 12, KILN_INVALID_ARGUMENT, "unexpected text after",
                      "NUL padding");
    /* Deep nesting is refused by the parser, not by the stack. */
    char deep[4200];
    size_t at = 0;
    deep[at++] = '{';
    memcpy(deep + at, "\"t\":", 4);
    at += 4;
    for (int i = 0; i < 2000; i++)
        deep[at++] = '[';
    for (int i = 0; i < 2000; i++)
        deep[at++] = ']';
    deep[at++] = '}';
    deep[at] = '\0';
    expect_header_error(cx, deep, 0, KILN_INVALID_ARGUMENT,
                        "nested deeper than 1000 levels at byte 1004");
    /* 1000 levels are within the limit (and then merely not a tensor's fields). */
    at = 5;
    for (int i = 0; i < 999; i++)
        deep[at++] = '[';
    for (int i = 0; i < 999; i++)
        deep[at++] = ']';
    deep[at++] = '}';
    deep[at] = '\0';
    expect_header_error(cx, deep, 0, KILN_INVALID_ARGUMENT, "its value is not an object");
    /* A \u0000 escape would cut a name short: refused, where it is. An escaped backslash
     * before "u0000" is no such escape. */
    expect_header_error(cx, "{\"a\\u0000b\":{}}", 0, KILN_INVALID_ARGUMENT,
                        "a string holds \\u0000 (NUL) at byte 3");
    expect_header_error(cx, "{\"__metadata__\":{\"k\":\"v\\u0000\"}}", 0, KILN_INVALID_ARGUMENT,
                        "\\u0000 (NUL) at byte 23");
    expect_header_ok(cx, "{\"__metadata__\":{\"k\":\"a\\\\u0000\"}}", 0);
    /* Whitespace padding, the writer's, is fine, and so is an empty object. */
    expect_header_ok(cx, "{}        ", 0);
    expect_header_ok(cx, " \n{ }\t\r\n", 0);
    kiln_ctx_release(cx);
}

Test(safetensors_errors, entries) {
    kiln_ctx *cx = test_ctx();
    expect_header_error(cx, "{\"t\":1}", 0, KILN_INVALID_ARGUMENT,
                        "tensor 't': its value is not an object");
    expect_header_error(cx, "{\"t\":{\"shape\":[],\"data_offsets\":[0,4]}}", 4,
                        KILN_INVALID_ARGUMENT, "tensor 't': \"dtype\" is missing");
    expect_header_error(cx, "{\"t\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4,
                        KILN_INVALID_ARGUMENT, "\"shape\" is missing");
    expect_header_error(cx, "{\"t\":{\"dtype\":\"F32\",\"shape\":[]}}", 4, KILN_INVALID_ARGUMENT,
                        "\"data_offsets\" is missing");
    expect_header_error(cx,
                        "{\"t\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[],"
                        "\"data_offsets\":[0,4]}}",
                        4, KILN_INVALID_ARGUMENT, "\"dtype\" appears twice");
    expect_header_error(cx, ONE("1", "[]", "[0,4]"), 4, KILN_INVALID_ARGUMENT,
                        "\"dtype\" is not a string");
    expect_header_error(cx, ONE("\"F32\"", "3", "[0,4]"), 4, KILN_INVALID_ARGUMENT,
                        "\"shape\" is not an array");
    expect_header_error(cx, ONE("\"F32\"", "[-1]", "[0,4]"), 4, KILN_INVALID_ARGUMENT,
                        "a dimension of \"shape\" is not a non-negative integer");
    expect_header_error(cx, ONE("\"F32\"", "[1.5]", "[0,4]"), 4, KILN_INVALID_ARGUMENT,
                        "not a non-negative integer");
    expect_header_error(cx, ONE("\"F32\"", "[\"1\"]", "[0,4]"), 4, KILN_INVALID_ARGUMENT,
                        "not a non-negative integer");
    expect_header_error(cx, ONE("\"F32\"", "[18014398509481984]", "[0,4]"), 4,
                        KILN_INVALID_ARGUMENT, "a dimension of \"shape\" is 2^53 or more");
    expect_header_error(cx, ONE("\"F32\"", "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", "[0,4]"), 4,
                        KILN_INVALID_ARGUMENT, "more than 16 dimensions");
    expect_header_ok(cx, ONE("\"F32\"", "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", "[0,4]"), 4);
    expect_header_error(cx, ONE("\"F32\"", "[]", "[0]"), 4, KILN_INVALID_ARGUMENT,
                        "\"data_offsets\" is not an array of two non-negative integers");
    expect_header_error(cx, ONE("\"F32\"", "[]", "[0,4,4]"), 4, KILN_INVALID_ARGUMENT,
                        "\"data_offsets\" is not an array");
    expect_header_error(cx, ONE("\"F32\"", "[]", "[-4,0]"), 4, KILN_INVALID_ARGUMENT,
                        "\"data_offsets\" is not an array");
    expect_header_error(cx, ONE("\"F32\"", "[]", "{\"a\":0,\"b\":4}"), 4, KILN_INVALID_ARGUMENT,
                        "\"data_offsets\" is not an array");
    expect_header_error(cx, ONE("\"F32\"", "[]", "[0,18014398509481984]"), 4, KILN_INVALID_ARGUMENT,
                        "an offset of \"data_offsets\" is 2^53 or more");
    /* Byte sizes that overflow: 2^52 elements of 8 bytes twice over. */
    expect_header_error(cx, ONE("\"F64\"", "[4503599627370496,4503599627370496]", "[0,8]"), 8,
                        KILN_INVALID_ARGUMENT, "its byte size overflows");
    /* A zero dimension makes any other dimension fine. */
    expect_header_ok(cx, ONE("\"F64\"", "[4503599627370496,0]", "[0,0]"), 0);
    kiln_ctx_release(cx);
}

Test(safetensors_errors, dtypes) {
    kiln_ctx *cx = test_ctx();
    const char *foreign[] = {"F8_E4M3", "F8_E5M2", "C64", "F4", "F6_E2M3", "F8_E8M0"};
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        char header[200], fragment[100];
        snprintf(header, sizeof header,
                 "{\"w.q\":{\"dtype\":\"%s\",\"shape\":[1],\"data_offsets\":[0,1]}}", foreign[i]);
        snprintf(fragment, sizeof fragment, "tensor 'w.q' has dtype %s, which kiln does not",
                 foreign[i]);
        expect_header_error(cx, header, 1, KILN_UNIMPLEMENTED, fragment);
    }
    expect_header_error(cx, ONE("\"f32\"", "[1]", "[0,4]"), 4, KILN_INVALID_ARGUMENT,
                        "tensor 't' has unknown dtype 'f32'");
    expect_header_error(cx, ONE("\"\"", "[1]", "[0,4]"), 4, KILN_INVALID_ARGUMENT,
                        "unknown dtype ''");
    kiln_ctx_release(cx);
}

Test(safetensors_errors, offsets) {
    kiln_ctx *cx = test_ctx();
    /* Past the data: a truncation. */
    expect_header_error(cx, ONE("\"F32\"", "[2]", "[0,8]"), 4, KILN_DATA_LOSS,
                        "the header describes 8 bytes, the file has 4");
    /* Data beyond the last tensor. */
    expect_header_error(cx, ONE("\"F32\"", "[1]", "[0,4]"), 5, KILN_DATA_LOSS,
                        "1 bytes after the 4 that the header describes");
    expect_header_error(cx, "{}", 1, KILN_DATA_LOSS, "1 bytes after the 0");
    /* Not starting at 0: a gap. */
    expect_header_error(cx, ONE("\"F32\"", "[1]", "[4,8]"), 8, KILN_INVALID_ARGUMENT,
                        "data_offsets [4, 8], but the data starts at 0 (a gap)");
    /* Ending before beginning. */
    expect_header_error(cx, ONE("\"F32\"", "[0]", "[4,0]"), 4, KILN_INVALID_ARGUMENT,
                        "which end before they begin");
    /* Size not that of dtype and shape. */
    expect_header_error(cx, ONE("\"F32\"", "[2]", "[0,4]"), 4, KILN_INVALID_ARGUMENT,
                        "[0, 4] (4 bytes), but F32[2] needs 8");
    expect_header_error(cx, ONE("\"U8\"", "[]", "[0,0]"), 0, KILN_INVALID_ARGUMENT,
                        "but U8[] needs 1");
    /* Two tensors: overlap, gap, same range. */
    expect_header_error(cx,
                        "{\"a\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                        "\"b\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                        12, KILN_INVALID_ARGUMENT,
                        "tensor 'b' has data_offsets [4, 12], but the previous tensor ends at 8 "
                        "(the ranges overlap)");
    expect_header_error(cx,
                        "{\"a\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                        "\"b\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[12,16]}}",
                        16, KILN_INVALID_ARGUMENT, "previous tensor ends at 8 (a gap)");
    expect_header_error(cx,
                        "{\"a\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                        "\"b\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                        8, KILN_INVALID_ARGUMENT, "the ranges overlap");
    /* Offsets of 2^53 or more are refused, not rounded (2^53 + 1 would read as 2^53), and
     * so are dimensions; a fraction or a negative number is no integer. */
    expect_header_error(cx, ONE("\"U8\"", "[1]", "[0,9007199254740993]"), 1, KILN_INVALID_ARGUMENT,
                        "an offset of \"data_offsets\" is 2^53 or more");
    expect_header_error(cx, ONE("\"U8\"", "[1]", "[4611686018427387904,0]"), 1,
                        KILN_INVALID_ARGUMENT, "an offset of \"data_offsets\" is 2^53 or more");
    expect_header_error(cx, ONE("\"U8\"", "[4611686018427387904]", "[0,1]"), 1,
                        KILN_INVALID_ARGUMENT, "a dimension of \"shape\" is 2^53 or more");
    expect_header_error(cx, ONE("\"U8\"", "[1]", "[0,0.5]"), 1, KILN_INVALID_ARGUMENT,
                        "is not an array of two non-negative integers");
    expect_header_error(cx, ONE("\"U8\"", "[1]", "[-1,0]"), 1, KILN_INVALID_ARGUMENT,
                        "is not an array of two non-negative integers");
    /* In any JSON order, contiguous ranges are fine. */
    expect_header_ok(cx,
                     "{\"b\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[8,12]},"
                     "\"a\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                     12);
    kiln_ctx_release(cx);
}

Test(safetensors_errors, repeated_names_and_metadata) {
    kiln_ctx *cx = test_ctx();
    expect_header_error(cx,
                        "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                        "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
                        2, KILN_INVALID_ARGUMENT, "tensor 'a' appears twice");
    expect_header_error(cx, "{\"__metadata__\":{},\"__metadata__\":{}}", 0, KILN_INVALID_ARGUMENT,
                        "\"__metadata__\" appears twice");
    expect_header_error(cx, "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0,
                        KILN_INVALID_ARGUMENT, "metadata key 'k' appears twice");
    expect_header_error(cx, "{\"__metadata__\":{\"k\":1}}", 0, KILN_INVALID_ARGUMENT,
                        "the value of metadata key 'k' is not a string");
    expect_header_error(cx, "{\"__metadata__\":{\"k\":null}}", 0, KILN_INVALID_ARGUMENT,
                        "is not a string");
    expect_header_error(cx, "{\"__metadata__\":[]}", 0, KILN_INVALID_ARGUMENT,
                        "\"__metadata__\" is not an object");
    expect_header_error(cx, "{\"__metadata__\":\"pt\"}", 0, KILN_INVALID_ARGUMENT,
                        "\"__metadata__\" is not an object");
    /* null metadata is the reference's None. */
    expect_header_ok(cx, "{\"__metadata__\":null}", 0);
    /* A long name is cut in messages. */
    char header[600];
    char name[301];
    memset(name, 'n', 300);
    name[300] = '\0';
    snprintf(header, sizeof header,
             "{\"%s\":{\"dtype\":\"X\",\"shape\":[],\"data_offsets\":[0,0]}}", name);
    expect_header_error(cx, header, 0, KILN_INVALID_ARGUMENT, "nnnn...'");
    kiln_ctx_release(cx);
}

/* Many metadata keys: each found, and a repeat among them found too (in n log n, so a
 * hostile header cannot make loading quadratic). */
Test(safetensors_errors, many_metadata_keys) {
    kiln_ctx *cx = test_ctx();
    enum { N = 50000 };
    size_t cap = 64 + (size_t)N * 32;
    char *header = malloc(cap);
    cr_assert_not_null(header);
    for (int dup = 0; dup < 2; dup++) {
        size_t at = (size_t)snprintf(header, cap, "{\"__metadata__\":{");
        for (int i = 0; i < N; i++)
            at += (size_t)snprintf(header + at, cap - at, "%s\"k%d\":\"v%d\"", i ? "," : "",
                                   (i * 7919) % N, i);
        if (dup) at += (size_t)snprintf(header + at, cap - at, ",\"k%d\":\"again\"", N / 3);
        snprintf(header + at, cap - at, "}}");
        size_t size;
        unsigned char *b = st_raw(strlen(header), header, 0, &size);
        if (dup) {
            char fragment[64];
            snprintf(fragment, sizeof fragment, "metadata key 'k%d' appears twice", N / 3);
            expect_load_error(cx, b, size, KILN_INVALID_ARGUMENT, fragment, "repeated key");
        } else {
            kiln_safetensors *st = NULL;
            cr_assert_eq(kiln_safetensors_load_buffer(cx, b, size, &st), KILN_OK);
            cr_assert_eq(kiln_safetensors_metadata_count(st), N);
            for (int i = 0; i < N; i += 997) {
                char key[16], value[16];
                snprintf(key, sizeof key, "k%d", (i * 7919) % N);
                snprintf(value, sizeof value, "v%d", i);
                cr_assert_str_eq(kiln_safetensors_metadata(st, key), value);
                cr_assert_str_eq(kiln_safetensors_metadata_key(st, i), key);
            }
            cr_assert_null(kiln_safetensors_metadata(st, "k-1"));
            kiln_safetensors_release(st);
        }
        free(b);
    }
    free(header);
    kiln_ctx_release(cx);
}

/* A valid file with three tensors and metadata, for the sweeps. */
static unsigned char *small_file(kiln_ctx *cx, size_t *out_size) {
    const char *names[] = {"a", "b", "c"};
    kiln_tensor *ts[] = {kiln_iota(cx, KILN_F32, KILN_SHAPE(2, 3), 1),
                         kiln_full(cx, KILN_BOOL, KILN_SHAPE(3), 1),
                         kiln_full(cx, KILN_I64, KILN_SHAPE_SCALAR, -9)};
    const char *meta[] = {"format", "pt"};
    void *buf;
    size_t size;
    cr_assert_eq(kiln_safetensors_save_buffer(cx, names, ts, 3, meta, 1, &buf, &size), KILN_OK);
    unsigned char *copy = malloc(size);
    memcpy(copy, buf, size);
    kiln_buffer_free(cx, buf, size);
    *out_size = size;
    return copy;
}

/* Every proper prefix of a valid file is a DATA_LOSS error naming the buffer. */
Test(safetensors_errors, every_truncation) {
    kiln_ctx *cx = test_ctx();
    size_t size;
    unsigned char *b = small_file(cx, &size);
    for (size_t n = 0; n < size; n++) {
        char what[64];
        snprintf(what, sizeof what, "prefix of %zu bytes", n);
        expect_load_error(cx, b, n, KILN_DATA_LOSS, "truncated", what);
    }
    free(b);
    kiln_ctx_release(cx);
}

/* Every byte set to a few values: loads or fails cleanly; a load still has 3 tensors. */
Test(safetensors_errors, every_byte_corrupted) {
    kiln_ctx *cx = test_ctx();
    size_t size;
    unsigned char *b = small_file(cx, &size);
    static const unsigned char values[] = {0, '"', '}', ']', '9', 0xff, ' ', ','};
    for (size_t i = 0; i < size; i++)
        for (size_t v = 0; v < sizeof values; v++) {
            unsigned char *m = malloc(size);
            memcpy(m, b, size);
            m[i] = values[v];
            kiln_safetensors *st = NULL;
            kiln_status s = kiln_safetensors_load_buffer(cx, m, size, &st);
            if (s == KILN_OK) {
                int32_t n = kiln_safetensors_count(st);
                for (int32_t k = 0; k < n; k++)
                    cr_assert_not_null(kiln_safetensors_get(cx, st, kiln_safetensors_name(st, k)));
                kiln_safetensors_release(st);
                expect_ok(cx);
            } else {
                cr_assert_null(st);
                cr_assert_eq(kiln_ctx_status(cx), s);
                cr_assert_neq(kiln_ctx_error_message(cx)[0], '\0');
                kiln_ctx_clear_error(cx);
            }
            free(m);
        }
    free(b);
    kiln_ctx_release(cx);
}

Test(safetensors_errors, null_arguments) {
    kiln_ctx *cx = test_ctx();
    kiln_safetensors *st = (kiln_safetensors *)&st;
    cr_assert_eq(kiln_safetensors_load_buffer(NULL, "x", 1, &st), KILN_INVALID_ARGUMENT);
    cr_assert_eq(kiln_safetensors_load_buffer(cx, "x", 1, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_safetensors_load_buffer: out is NULL");
    cr_assert_eq(kiln_safetensors_load_buffer(cx, NULL, 1, &st), KILN_INVALID_ARGUMENT);
    cr_assert_null(st);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_safetensors_load_buffer: data is NULL");
    st = (kiln_safetensors *)&st;
    cr_assert_eq(kiln_safetensors_load_buffer(cx, NULL, 0, &st), KILN_DATA_LOSS);
    cr_assert_null(st);
    expect_error(cx, KILN_DATA_LOSS, "0 bytes");
    cr_assert_eq(kiln_safetensors_load(NULL, "x", &st), KILN_INVALID_ARGUMENT);
    cr_assert_eq(kiln_safetensors_load(cx, "x", NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_safetensors_load: out is NULL");
    st = (kiln_safetensors *)&st;
    cr_assert_eq(kiln_safetensors_load(cx, NULL, &st), KILN_INVALID_ARGUMENT);
    cr_assert_null(st);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_safetensors_load: path is NULL");

    size_t size;
    unsigned char *b = small_file(cx, &size);
    cr_assert_eq(kiln_safetensors_load_buffer(cx, b, size, &st), KILN_OK);
    free(b);
    cr_assert_null(kiln_safetensors_get(NULL, st, "a"));
    cr_assert_null(kiln_safetensors_get(cx, NULL, "a"));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_safetensors_get: st is NULL");
    cr_assert_null(kiln_safetensors_get(cx, st, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_safetensors_get: name is NULL");
    cr_assert_null(kiln_safetensors_get(cx, st, "missing.weight"));
    expect_error(cx, KILN_NOT_FOUND, "kiln_safetensors_get: no tensor named 'missing.weight'");
    cr_assert_null(kiln_safetensors_get(cx, st, ""));
    expect_error(cx, KILN_NOT_FOUND, "no tensor named ''");
    kiln_safetensors_release(st);
    kiln_ctx_release(cx);
}

Test(safetensors_errors, save_arguments) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *t = kiln_ones(cx, KILN_F32, KILN_SHAPE(2));
    kiln_tensor *u = kiln_ones(cx, KILN_I8, KILN_SHAPE(2));
    const char *one[] = {"a"};
    kiln_tensor *ts[] = {t, u};
    void *buf = &buf;
    size_t size = 9;
#define SAVE_BUF(names, tensors, n, meta, nmeta) \
    kiln_safetensors_save_buffer(cx, names, tensors, n, meta, nmeta, &buf, &size)
    cr_assert_eq(kiln_safetensors_save_buffer(NULL, one, ts, 1, NULL, 0, &buf, &size),
                 KILN_INVALID_ARGUMENT);
    cr_assert_eq(kiln_safetensors_save_buffer(cx, one, ts, 1, NULL, 0, NULL, &size),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_safetensors_save_buffer: out_data is NULL");
    cr_assert_eq(kiln_safetensors_save_buffer(cx, one, ts, 1, NULL, 0, &buf, NULL),
                 KILN_INVALID_ARGUMENT);
    cr_assert_null(buf);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_size is NULL");
    cr_assert_eq(SAVE_BUF(NULL, ts, 1, NULL, 0), KILN_INVALID_ARGUMENT);
    cr_assert_null(buf);
    cr_assert_eq(size, 0);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_safetensors_save_buffer: names is NULL");
    cr_assert_eq(SAVE_BUF(one, NULL, 1, NULL, 0), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "tensors is NULL");
    cr_assert_eq(SAVE_BUF(one, ts, -1, NULL, 0), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n is negative (-1)");
    cr_assert_eq(SAVE_BUF(one, ts, 1, NULL, -2), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_metadata is negative (-2)");
    cr_assert_eq(SAVE_BUF(one, ts, 1, NULL, 1), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "metadata_kv is NULL");
    const char *half_meta[] = {"k", NULL};
    cr_assert_eq(SAVE_BUF(one, ts, 1, half_meta, 1), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "metadata_kv[1] is NULL");
    const char *dup_meta[] = {"k", "1", "j", "2", "k", "3"};
    cr_assert_eq(SAVE_BUF(one, ts, 1, dup_meta, 3), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "metadata key 'k' appears twice (metadata_kv[0] and [4])");
    const char *bad_utf8_meta[] = {"k", "\xc3"};
    cr_assert_eq(SAVE_BUF(one, ts, 1, bad_utf8_meta, 1), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "metadata_kv[1] is not valid UTF-8");
    const char *null_name[] = {"a", NULL};
    cr_assert_eq(SAVE_BUF(null_name, ts, 2, NULL, 0), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "names[1] is NULL");
    kiln_tensor *null_t[] = {t, NULL};
    const char *two[] = {"a", "b"};
    cr_assert_eq(SAVE_BUF(two, null_t, 2, NULL, 0), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "tensors[1] ('b') is NULL");
    /* The same name twice, with the same dtype and with different dtypes. */
    const char *same[] = {"w", "w"};
    kiln_tensor *tt[] = {t, t};
    cr_assert_eq(SAVE_BUF(same, tt, 2, NULL, 0), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "the name 'w' appears twice in names");
    cr_assert_eq(SAVE_BUF(same, ts, 2, NULL, 0), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "the name 'w' appears twice");
    const char *reserved[] = {"__metadata__"};
    cr_assert_eq(SAVE_BUF(reserved, ts, 1, NULL, 0), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "names[0] is \"__metadata__\"");
    const char *bad_utf8[] = {"a\xff"};
    cr_assert_eq(SAVE_BUF(bad_utf8, ts, 1, NULL, 0), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "names[0] is not valid UTF-8");
    cr_assert_null(buf);
#undef SAVE_BUF

    /* kiln_safetensors_save: the same checks, and nothing written on error. */
    const char *path = test_tmp_path("save_args.safetensors");
    unlink(path);
    cr_assert_eq(kiln_safetensors_save(NULL, path, one, ts, 1, NULL, 0), KILN_INVALID_ARGUMENT);
    cr_assert_eq(kiln_safetensors_save(cx, NULL, one, ts, 1, NULL, 0), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_safetensors_save: path is NULL");
    cr_assert_eq(kiln_safetensors_save(cx, path, same, tt, 2, NULL, 0), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_safetensors_save: the name 'w' appears twice");
    struct stat sb;
    cr_assert_neq(stat(path, &sb), 0);
    kiln_ctx_release(cx);
}

/* No "<path>.tmp..." file is left beside path. */
static void expect_no_temp_file(const char *path) {
    char dir[4096], prefix[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    cr_assert_not_null(slash);
    *slash = '\0';
    snprintf(prefix, sizeof prefix, "%s.tmp", slash + 1);
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    for (struct dirent *ent; (ent = readdir(d));)
        cr_assert_neq(strncmp(ent->d_name, prefix, strlen(prefix)), 0, "temporary file left: %s",
                      ent->d_name);
    closedir(d);
}

Test(safetensors_errors, files) {
    kiln_ctx *cx = test_ctx();
    kiln_safetensors *st = (kiln_safetensors *)&st;
    cr_assert_eq(kiln_safetensors_load(cx, "/nonexistent/dir/x.safetensors", &st), KILN_NOT_FOUND);
    cr_assert_null(st);
    expect_error(cx, KILN_NOT_FOUND, "/nonexistent/dir/x.safetensors: cannot open for reading");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", test_tmp_path("st_dir"));
    cr_assert_eq(mkdir(dir, 0700), 0, "%s", strerror(errno));
    cr_assert_eq(kiln_safetensors_load(cx, dir, &st), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "not a regular file");
    const char *one[] = {"a"};
    kiln_tensor *t = kiln_ones(cx, KILN_F32, KILN_SHAPE(2));
    /* Renaming over a directory fails, and the temporary file is removed. */
    cr_assert_neq(kiln_safetensors_save(cx, dir, one, &t, 1, NULL, 0), KILN_OK);
    cr_assert(strstr(kiln_ctx_error_message(cx), "cannot replace") != NULL, "%s",
              kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);
    cr_assert_eq(rmdir(dir), 0, "%s", strerror(errno));
    expect_no_temp_file(dir);
    cr_assert_eq(kiln_safetensors_save(cx, "/nonexistent/dir/x.safetensors", one, &t, 1, NULL, 0),
                 KILN_NOT_FOUND);
    expect_error(cx, KILN_NOT_FOUND, "cannot create a file beside");
    /* A truncated file names the file. */
    const char *path = test_tmp_path("truncated.safetensors");
    cr_assert_eq(kiln_safetensors_save(cx, path, one, &t, 1, NULL, 0), KILN_OK);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(truncate(path, sb.st_size - 1), 0);
    cr_assert_eq(kiln_safetensors_load(cx, path, &st), KILN_DATA_LOSS);
    cr_assert(strstr(kiln_ctx_error_message(cx), path) != NULL);
    expect_error(cx, KILN_DATA_LOSS, "the header describes 8 bytes, the file has 7");
    cr_assert_eq(truncate(path, 20), 0);
    cr_assert_eq(kiln_safetensors_load(cx, path, &st), KILN_DATA_LOSS);
    expect_error(cx, KILN_DATA_LOSS, "truncated safetensors header");
    cr_assert_eq(truncate(path, 5), 0);
    cr_assert_eq(kiln_safetensors_load(cx, path, &st), KILN_DATA_LOSS);
    expect_error(cx, KILN_DATA_LOSS, "5 bytes, less than the 8-byte header length");
    unlink(path);
    kiln_ctx_release(cx);
}

/* Saving a traced tensor (inside kiln_lower) or a donated one is FAILED_PRECONDITION. */
static kiln_status save_inside_trace(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                     void *user) {
    const char *name = "x";
    void *buf = &buf;
    size_t size = 1;
    kiln_status *s = user;
    *s = kiln_safetensors_save_buffer(cx, &name, (kiln_tensor *const *)in, 1, NULL, 0, &buf, &size);
    out[0] = kiln_negate(cx, in[0]);
    return kiln_ctx_status(cx);
}

static kiln_status negate_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] = kiln_negate(cx, in[0]);
    return kiln_ctx_status(cx);
}

Test(safetensors_errors, traced_and_donated_tensors) {
    kiln_ctx *cx = test_ctx();
    kiln_status inside = KILN_OK;
    kiln_region traced = {save_inside_trace, &inside};
    kiln_arg_spec arg = {.dtype = KILN_F32, .shape = KILN_SHAPE(3)};
    kiln_module *m = NULL;
    cr_assert_neq(kiln_lower(cx, &traced, &arg, 1, 1, NULL, &m), KILN_OK);
    cr_assert_null(m);
    cr_assert_eq(inside, KILN_FAILED_PRECONDITION);
    expect_error(cx, KILN_FAILED_PRECONDITION,
                 "kiln_safetensors_save_buffer: the tensor is traced");

    arg.donate = true;
    kiln_region neg = {negate_fn, NULL};
    cr_assert_eq(kiln_lower(cx, &neg, &arg, 1, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    kiln_tensor *x = kiln_ones(cx, KILN_F32, KILN_SHAPE(3));
    kiln_tensor *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, &x, &r), KILN_OK, "%s", kiln_ctx_error_message(cx));
    const char *name = "x";
    const char *path = test_tmp_path("donated.safetensors");
    cr_assert_eq(kiln_safetensors_save(cx, path, &name, &x, 1, NULL, 0), KILN_FAILED_PRECONDITION);
    expect_error(cx, KILN_FAILED_PRECONDITION, "kiln_safetensors_save: tensor was donated");
    cr_assert_neq(access(path, F_OK), 0);
    /* The result is fine to save. */
    cr_assert_eq(kiln_safetensors_save(cx, path, &name, &r, 1, NULL, 0), KILN_OK);
    unlink(path);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

/* A header over the reference's 100,000,000-byte limit is refused on save too. */
Test(safetensors_errors, save_header_over_limit) {
    kiln_ctx *cx = test_ctx();
    size_t n = 100000000;
    char *value = malloc(n + 1);
    cr_assert_not_null(value);
    memset(value, 'v', n);
    value[n] = '\0';
    const char *meta[] = {"k", value};
    void *buf = &buf;
    size_t size = 1;
    cr_assert_eq(kiln_safetensors_save_buffer(cx, NULL, NULL, 0, meta, 1, &buf, &size),
                 KILN_INVALID_ARGUMENT);
    cr_assert_null(buf);
    expect_error(cx, KILN_INVALID_ARGUMENT, "header would be 100000032 bytes, over the limit");
    free(value);
    kiln_ctx_release(cx);
}
