/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/safetensors.h: round trips of every dtype and rank, files written by hand from the
 * format's description, the reference writer's exact bytes, metadata, and the accessors. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

/* A safetensors file: the 8-byte little-endian length of `header`, the header as given
 * (no padding added), then `ndata` bytes from `data`. Free with free(). */
static unsigned char *st_bytes(const char *header, const void *data, size_t ndata,
                               size_t *out_size) {
    size_t hlen = strlen(header);
    unsigned char *b = malloc(8 + hlen + ndata + 1);
    cr_assert_not_null(b);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    memcpy(b + 8, header, hlen);
    if (ndata) memcpy(b + 8 + hlen, data, ndata);
    *out_size = 8 + hlen + ndata;
    return b;
}

static kiln_safetensors *load_ok(kiln_ctx *cx, const void *data, size_t size) {
    kiln_safetensors *st = NULL;
    kiln_status s = kiln_safetensors_load_buffer(cx, data, size, &st);
    cr_assert_eq(s, KILN_OK, "load: %s: %s", kiln_status_name(s), kiln_ctx_error_message(cx));
    cr_assert_not_null(st);
    return st;
}

/* splitmix64: test data that does not depend on the code under test. */
static uint64_t rng_state;
static uint64_t rng(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A tensor of random bits (bools 0 or 1) of the given dtype and shape. */
static kiln_tensor *random_tensor(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape) {
    int64_t numel;
    cr_assert(kiln_shape_numel(&shape, &numel));
    size_t nbytes = (size_t)numel * kiln_dtype_size(dtype);
    unsigned char *bytes = malloc(nbytes ? nbytes : 1);
    cr_assert_not_null(bytes);
    for (size_t i = 0; i < nbytes; i++)
        bytes[i] = dtype == KILN_BOOL ? (unsigned char)(rng() & 1) : (unsigned char)rng();
    kiln_tensor *t = kiln_tensor_from_host(cx, dtype, shape, nbytes ? bytes : NULL, nbytes);
    free(bytes);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

static void expect_same_tensor(const kiln_tensor *got, const kiln_tensor *want, const char *what) {
    cr_assert_not_null(got, "%s: NULL", what);
    cr_assert_eq(kiln_tensor_dtype(got), kiln_tensor_dtype(want), "%s: dtype", what);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(got), kiln_tensor_shape(want)), "%s: shape", what);
    size_t n = kiln_tensor_nbytes(want);
    cr_assert_eq(kiln_tensor_nbytes(got), n, "%s: nbytes", what);
    if (n) cr_assert(memcmp(kiln_tensor_data(got), kiln_tensor_data(want), n) == 0, "%s", what);
}

static const kiln_dtype all_dtypes[] = {KILN_BOOL, KILN_I8,  KILN_I16, KILN_I32, KILN_I64,
                                        KILN_U8,   KILN_U16, KILN_U32, KILN_U64, KILN_F16,
                                        KILN_BF16, KILN_F32, KILN_F64};
#define N_DTYPES (int)(sizeof all_dtypes / sizeof all_dtypes[0])

#define N_SHAPES 8

/* Every dtype at every shape in one file, saved to a buffer and to a file, loaded back
 * from both: the same dtypes, shapes and bytes. */
Test(safetensors, round_trip_every_dtype_and_rank) {
    kiln_ctx *cx = test_ctx();
    const kiln_shape shapes[N_SHAPES] = {
        KILN_SHAPE_SCALAR,      KILN_SHAPE(5), KILN_SHAPE(2, 3),    KILN_SHAPE(3, 1, 2),
        KILN_SHAPE(2, 2, 1, 3), KILN_SHAPE(0), KILN_SHAPE(4, 0, 2), KILN_SHAPE(1, 1, 1, 1)};
    rng_state = 1;
    enum { N = N_DTYPES * N_SHAPES };
    char names[N][32];
    const char *name_ptrs[N];
    kiln_tensor *ts[N];
    for (int d = 0; d < N_DTYPES; d++)
        for (int s = 0; s < N_SHAPES; s++) {
            int i = d * N_SHAPES + s;
            snprintf(names[i], sizeof names[i], "%s.shape%d", kiln_dtype_name(all_dtypes[d]), s);
            name_ptrs[i] = names[i];
            ts[i] = random_tensor(cx, all_dtypes[d], shapes[s]);
        }
    void *buf = NULL;
    size_t size = 0;
    cr_assert_eq(kiln_safetensors_save_buffer(cx, name_ptrs, ts, N, NULL, 0, &buf, &size), KILN_OK,
                 "%s", kiln_ctx_error_message(cx));
    const char *path = test_tmp_path("round_trip.safetensors");
    cr_assert_eq(kiln_safetensors_save(cx, path, name_ptrs, ts, N, NULL, 0), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));

    /* The file holds exactly the buffer's bytes. */
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    unsigned char *file_bytes = malloc(size + 1);
    cr_assert_eq(fread(file_bytes, 1, size + 1, f), size);
    fclose(f);
    cr_assert(memcmp(file_bytes, buf, size) == 0);
    free(file_bytes);

    kiln_safetensors *from_buf = load_ok(cx, buf, size);
    kiln_safetensors *from_file = NULL;
    cr_assert_eq(kiln_safetensors_load(cx, path, &from_file), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_buffer_free(cx, buf, size);
    unlink(path);
    kiln_safetensors *loaded[2] = {from_buf, from_file};
    for (int l = 0; l < 2; l++) {
        cr_assert_eq(kiln_safetensors_count(loaded[l]), N);
        cr_assert_eq(kiln_safetensors_metadata_count(loaded[l]), 0);
        for (int i = 0; i < N; i++) {
            kiln_tensor *t = kiln_safetensors_get(cx, loaded[l], names[i]);
            expect_same_tensor(t, ts[i], names[i]);
            int32_t k = kiln_safetensors_find(loaded[l], names[i]);
            cr_assert_geq(k, 0);
            cr_assert_str_eq(kiln_safetensors_name(loaded[l], k), names[i]);
            kiln_dtype dt;
            kiln_shape sh;
            cr_assert(kiln_safetensors_info(loaded[l], k, &dt, &sh));
            cr_assert_eq(dt, kiln_tensor_dtype(ts[i]));
            cr_assert(kiln_shape_equal(&sh, kiln_tensor_shape(ts[i])));
        }
    }
    kiln_safetensors_release(from_buf);
    kiln_safetensors_release(from_file);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Tensors from kiln_safetensors_get outlive the loaded file and the scope's end works. */
Test(safetensors, tensors_outlive_the_file) {
    kiln_ctx *cx = test_ctx();
    static const int32_t v[3] = {7, -8, 9};
    size_t size;
    unsigned char *b =
        st_bytes("{\"v\":{\"dtype\":\"I32\",\"shape\":[3],\"data_offsets\":[0,12]}}", v, 12, &size);
    kiln_safetensors *st = load_ok(cx, b, size);
    free(b);
    kiln_scope_begin(cx);
    kiln_tensor *t = kiln_tensor_retain(kiln_safetensors_get(cx, st, "v"));
    kiln_scope_end(cx);
    kiln_safetensors_release(st);
    cr_assert_not_null(t);
    int32_t back[3];
    cr_assert_eq(kiln_tensor_to_host(cx, t, back, sizeof back), KILN_OK);
    cr_assert(memcmp(back, v, sizeof v) == 0);
    kiln_tensor_release(t);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* A file written by hand from the format's description: entries out of offset order in
 * the JSON, whitespace, metadata last, an unknown field, a scalar, an empty tensor. */
Test(safetensors, hand_written_file) {
    kiln_ctx *cx = test_ctx();
    const char *header =
        "{ \"b\" : {\"shape\": [2, 2], \"dtype\": \"I16\",\n"
        "          \"data_offsets\": [8, 16], \"note\": [1, {\"x\": null}]},\n"
        "  \"a\": {\"dtype\": \"F64\", \"shape\": [], \"data_offsets\": [0, 8]},\n"
        "  \"e\": {\"dtype\": \"U8\", \"shape\": [0, 3], \"data_offsets\": [16, 16]},"
        "  \"h\": {\"dtype\": \"BF16\", \"shape\": [2], \"data_offsets\": [16, 20]},"
        "  \"__metadata__\": {\"format\": \"pt\", \"who\": \"caf\\u00e9 \\\"q\\\"\"}"
        "}    ";
    unsigned char data[20] = {
        0,    0,    0,    0,    0,    0,    0xf8, 0x3f, /* 1.5 as f64 */
        0xfe, 0xff, 0x2c, 0x01, 0x00, 0x80, 0xff, 0x7f, /* -2, 300, -32768, 32767 */
        0x80, 0x3f, 0x20, 0xc0,                         /* bf16 1.0, -2.5 */
    };
    size_t size;
    unsigned char *b = st_bytes(header, data, sizeof data, &size);
    kiln_safetensors *st = load_ok(cx, b, size);
    free(b);
    cr_assert_eq(kiln_safetensors_count(st), 4);
    /* Data order, the empty tensor before "h" at the same offset. */
    cr_assert_str_eq(kiln_safetensors_name(st, 0), "a");
    cr_assert_str_eq(kiln_safetensors_name(st, 1), "b");
    cr_assert_str_eq(kiln_safetensors_name(st, 2), "e");
    cr_assert_str_eq(kiln_safetensors_name(st, 3), "h");
    cr_assert_null(kiln_safetensors_name(st, 4));
    cr_assert_null(kiln_safetensors_name(st, -1));

    kiln_tensor *a = kiln_safetensors_get(cx, st, "a");
    cr_assert_eq(kiln_tensor_dtype(a), KILN_F64);
    cr_assert_eq(kiln_tensor_rank(a), 0);
    cr_assert_eq(kiln_tensor_item(cx, a, 0), 1.5);
    kiln_tensor *bt = kiln_safetensors_get(cx, st, "b");
    cr_assert_eq(kiln_tensor_dtype(bt), KILN_I16);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(bt), &KILN_SHAPE(2, 2)));
    const double want_b[4] = {-2, 300, -32768, 32767};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(kiln_tensor_item(cx, bt, i), want_b[i]);
    kiln_tensor *e = kiln_safetensors_get(cx, st, "e");
    cr_assert_eq(kiln_tensor_dtype(e), KILN_U8);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(e), &KILN_SHAPE(0, 3)));
    kiln_tensor *h = kiln_safetensors_get(cx, st, "h");
    cr_assert_eq(kiln_tensor_item(cx, h, 0), 1.0);
    cr_assert_eq(kiln_tensor_item(cx, h, 1), -2.5);

    cr_assert_eq(kiln_safetensors_metadata_count(st), 2);
    cr_assert_str_eq(kiln_safetensors_metadata_key(st, 0), "format");
    cr_assert_str_eq(kiln_safetensors_metadata_key(st, 1), "who");
    cr_assert_null(kiln_safetensors_metadata_key(st, 2));
    cr_assert_str_eq(kiln_safetensors_metadata(st, "format"), "pt");
    cr_assert_str_eq(kiln_safetensors_metadata(st, "who"), "caf\xc3\xa9 \"q\"");
    cr_assert_null(kiln_safetensors_metadata(st, "missing"));
    kiln_safetensors_release(st);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Bool bytes other than 0 and 1 load as 0 or 1. */
Test(safetensors, bool_bytes_normalized) {
    kiln_ctx *cx = test_ctx();
    const unsigned char raw[4] = {0, 1, 2, 0xff};
    size_t size;
    unsigned char *b = st_bytes("{\"m\":{\"dtype\":\"BOOL\",\"shape\":[4],\"data_offsets\":[0,4]}}",
                                raw, 4, &size);
    kiln_safetensors *st = load_ok(cx, b, size);
    free(b);
    const unsigned char *d = kiln_tensor_data(kiln_safetensors_get(cx, st, "m"));
    cr_assert_not_null(d);
    cr_assert(d[0] == 0 && d[1] == 1 && d[2] == 1 && d[3] == 1);
    kiln_safetensors_release(st);
    kiln_ctx_release(cx);
}

/* The bytes the reference writer (huggingface/safetensors, its serialization tests)
 * produces for the same tensors. */
static const unsigned char ref_attn_0[] = {
    64,  0,   0,   0,   0,   0,  0,  0,  123, 34, 97,  116, 116, 110, 46,  48,  34,  58,  123, 34,
    100, 116, 121, 112, 101, 34, 58, 34, 70,  51, 50,  34,  44,  34,  115, 104, 97,  112, 101, 34,
    58,  91,  49,  44,  50,  44, 51, 93, 44,  34, 100, 97,  116, 97,  95,  111, 102, 102, 115, 101,
    116, 115, 34,  58,  91,  48, 44, 50, 52,  93, 125, 125, 0,   0,   0,   0,   0,   0,   128, 63,
    0,   0,   0,   64,  0,   0,  64, 64, 0,   0,  128, 64,  0,   0,   160, 64};
static const unsigned char ref_attn0_aligned[] = {
    72,  0,   0,   0,   0,   0,   0,   0,   123, 34, 97, 116, 116, 110, 48,  34,  58,  123,
    34,  100, 116, 121, 112, 101, 34,  58,  34,  70, 51, 50,  34,  44,  34,  115, 104, 97,
    112, 101, 34,  58,  91,  49,  44,  49,  44,  50, 44, 51,  93,  44,  34,  100, 97,  116,
    97,  95,  111, 102, 102, 115, 101, 116, 115, 34, 58, 91,  48,  44,  50,  52,  93,  125,
    125, 32,  32,  32,  32,  32,  32,  32,  0,   0,  0,  0,   0,   0,   128, 63,  0,   0,
    0,   64,  0,   0,   64,  64,  0,   0,   128, 64, 0,  0,   160, 64};
static const unsigned char ref_empty[] = {8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32};
static const unsigned char ref_empty_meta[] = {
    40,  0,   0,   0,  0,  0,  0,   0,   123, 34,  95,  95,  109, 101, 116, 97,
    100, 97,  116, 97, 95, 95, 34,  58,  123, 34,  102, 114, 97,  109, 101, 119,
    111, 114, 107, 34, 58, 34, 112, 116, 34,  125, 125, 32,  32,  32,  32,  32};

static void expect_save_bytes(kiln_ctx *cx, const char *name, kiln_tensor *t,
                              const char *const *meta, int32_t n_meta, const unsigned char *want,
                              size_t want_size) {
    void *buf = NULL;
    size_t size = 0;
    kiln_status s =
        kiln_safetensors_save_buffer(cx, &name, &t, t ? 1 : 0, meta, n_meta, &buf, &size);
    cr_assert_eq(s, KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(size, want_size, "%zu bytes, the reference writes %zu", size, want_size);
    cr_assert(memcmp(buf, want, size) == 0, "bytes differ from the reference writer's");
    kiln_buffer_free(cx, buf, size);
    /* And the reference's bytes load back to the same tensor. */
    kiln_safetensors *st = load_ok(cx, want, want_size);
    cr_assert_eq(kiln_safetensors_count(st), t ? 1 : 0);
    if (t) expect_same_tensor(kiln_safetensors_get(cx, st, name), t, name);
    kiln_safetensors_release(st);
}

Test(safetensors, reference_writer_bytes) {
    kiln_ctx *cx = test_ctx();
    const float v[6] = {0, 1, 2, 3, 4, 5};
    expect_save_bytes(cx, "attn.0", kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(1, 2, 3), v, 24),
                      NULL, 0, ref_attn_0, sizeof ref_attn_0);
    expect_save_bytes(cx, "attn0",
                      kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(1, 1, 2, 3), v, 24), NULL, 0,
                      ref_attn0_aligned, sizeof ref_attn0_aligned);
    expect_save_bytes(cx, NULL, NULL, NULL, 0, ref_empty, sizeof ref_empty);
    const char *meta[] = {"framework", "pt"};
    expect_save_bytes(cx, NULL, NULL, meta, 1, ref_empty_meta, sizeof ref_empty_meta);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* The reference writer orders tensors by its dtype enum, largest alignment first (U64,
 * I64, F64, F32, U32, I32, BF16, F16, U16, I16, I8, U8, BOOL), then by name (bytewise). */
Test(safetensors, save_order_and_layout) {
    kiln_ctx *cx = test_ctx();
    rng_state = 7;
    struct {
        const char *name;
        kiln_dtype dtype;
    } in[] = {{"z", KILN_BOOL}, {"y", KILN_U8},   {"x", KILN_I8},   {"w", KILN_I16},
              {"v", KILN_U16},  {"u", KILN_F16},  {"t", KILN_BF16}, {"s", KILN_I32},
              {"r", KILN_U32},  {"q2", KILN_F32}, {"Q", KILN_F32},  {"q", KILN_F32},
              {"p", KILN_F64},  {"o", KILN_I64},  {"n", KILN_U64}};
    enum { N = sizeof in / sizeof in[0] };
    /* Expected by hand from the reference's enum order, then strcmp order ('Q' < 'q'). */
    const char *want[N] = {"n", "o", "p", "Q", "q", "q2", "r", "s",
                           "t", "u", "v", "w", "x", "y",  "z"};
    const char *names[N];
    kiln_tensor *ts[N];
    for (int i = 0; i < N; i++) {
        names[i] = in[i].name;
        ts[i] = random_tensor(cx, in[i].dtype, KILN_SHAPE(3));
    }
    void *buf;
    size_t size;
    cr_assert_eq(kiln_safetensors_save_buffer(cx, names, ts, N, NULL, 0, &buf, &size), KILN_OK);
    kiln_safetensors *st = load_ok(cx, buf, size);
    for (int i = 0; i < N; i++)
        cr_assert_str_eq(kiln_safetensors_name(st, i), want[i], "position %d", i);
    /* Header: a multiple of 8, spaces after the closing brace, data right after. */
    const unsigned char *b = buf;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | b[i];
    cr_assert_eq(hlen % 8, 0);
    size_t close = 8 + (size_t)hlen - 1;
    while (b[close] == ' ')
        close--;
    cr_assert_eq(b[close], '}');
    cr_assert_lt(8 + (size_t)hlen - 1 - close, 8);
    cr_assert_eq(b[8], '{');
    /* Data: the tensors' bytes in the order above, little-endian as kiln holds them. */
    size_t at = 8 + (size_t)hlen;
    for (int i = 0; i < N; i++) {
        int k = 0;
        while (strcmp(names[k], want[i]) != 0)
            k++;
        size_t n = kiln_tensor_nbytes(ts[k]);
        cr_assert(memcmp(b + at, kiln_tensor_data(ts[k]), n) == 0, "data of %s", want[i]);
        at += n;
    }
    cr_assert_eq(at, size);
    kiln_buffer_free(cx, buf, size);
    kiln_safetensors_release(st);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

static bool contains(const void *hay, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp((const char *)hay + i, needle, k) == 0) return true;
    return false;
}

/* Metadata survives a round trip in order, with characters JSON must escape; names too. */
Test(safetensors, metadata_and_names_escaped) {
    kiln_ctx *cx = test_ctx();
    const char *meta[] = {
        "format", "pt",        "quote\"back\\slash", "tab\there\nnl \x01 \xc3\xa9",
        "",       "empty key", "empty value",        ""};
    const char *names[] = {"layer/0.w\"", "\xe2\x82\xac", ""};
    kiln_tensor *ts[3] = {kiln_ones(cx, KILN_F32, KILN_SHAPE(2)),
                          kiln_zeros(cx, KILN_I8, KILN_SHAPE(1)),
                          kiln_full(cx, KILN_F64, KILN_SHAPE_SCALAR, -3.25)};
    void *buf;
    size_t size;
    cr_assert_eq(kiln_safetensors_save_buffer(cx, names, ts, 3, meta, 4, &buf, &size), KILN_OK,
                 "%s", kiln_ctx_error_message(cx));
    /* The control character is escaped the way serde_json does. */
    cr_assert(contains(buf, size, "\\u0001"));
    cr_assert(contains(buf, size, "tab\\there\\nnl"));
    kiln_safetensors *st = load_ok(cx, buf, size);
    kiln_buffer_free(cx, buf, size);
    cr_assert_eq(kiln_safetensors_metadata_count(st), 4);
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(kiln_safetensors_metadata_key(st, i), meta[2 * i]);
        cr_assert_str_eq(kiln_safetensors_metadata(st, meta[2 * i]), meta[2 * i + 1]);
    }
    for (int i = 0; i < 3; i++)
        expect_same_tensor(kiln_safetensors_get(cx, st, names[i]), ts[i], names[i]);
    kiln_safetensors_release(st);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* Saving replaces an existing file and leaves no temporary file behind. */
Test(safetensors, save_replaces) {
    kiln_ctx *cx = test_ctx();
    const char *path = test_tmp_path("replace.safetensors");
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fputs("old contents, longer than what replaces them ............................", f);
    fclose(f);
    const char *name = "x";
    kiln_tensor *t = kiln_full(cx, KILN_I32, KILN_SHAPE(2), 5);
    cr_assert_eq(kiln_safetensors_save(cx, path, &name, &t, 1, NULL, 0), KILN_OK);
    kiln_safetensors *st = NULL;
    cr_assert_eq(kiln_safetensors_load(cx, path, &st), KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_same_tensor(kiln_safetensors_get(cx, st, "x"), t, "x");
    kiln_safetensors_release(st);
    unlink(path);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    char pattern[64];
    snprintf(pattern, sizeof pattern, "%ld_replace.safetensors.tmp", (long)getpid());
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    for (struct dirent *ent; (ent = readdir(d));)
        cr_assert_null(strstr(ent->d_name, pattern), "temporary file left: %s", ent->d_name);
    closedir(d);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* The accessors on NULL and out-of-range arguments. */
Test(safetensors, accessors_on_null) {
    cr_assert_eq(kiln_safetensors_count(NULL), 0);
    cr_assert_null(kiln_safetensors_name(NULL, 0));
    cr_assert_eq(kiln_safetensors_find(NULL, "a"), -1);
    cr_assert(!kiln_safetensors_info(NULL, 0, NULL, NULL));
    cr_assert_null(kiln_safetensors_metadata(NULL, "a"));
    cr_assert_eq(kiln_safetensors_metadata_count(NULL), 0);
    cr_assert_null(kiln_safetensors_metadata_key(NULL, 0));
    kiln_safetensors_release(NULL);
    kiln_ctx *cx = test_ctx();
    kiln_safetensors *st = load_ok(cx, ref_attn_0, sizeof ref_attn_0);
    cr_assert_eq(kiln_safetensors_find(st, NULL), -1);
    cr_assert_eq(kiln_safetensors_find(st, "attn"), -1);
    cr_assert_eq(kiln_safetensors_find(st, "attn.0"), 0);
    cr_assert(!kiln_safetensors_info(st, 1, NULL, NULL));
    cr_assert(!kiln_safetensors_info(st, -1, NULL, NULL));
    cr_assert(kiln_safetensors_info(st, 0, NULL, NULL));
    cr_assert_null(kiln_safetensors_metadata(st, NULL));
    cr_assert_null(kiln_safetensors_metadata(st, "format"));
    kiln_safetensors_release(st);
    kiln_ctx_release(cx);
}

/* Loads on separate ctxs may run on several threads at once, and one loaded object may be
 * read from several threads at once. */
typedef struct thread_job {
    const kiln_safetensors *shared;
    int failures;
} thread_job;

static void *load_many(void *arg) {
    thread_job *job = arg;
    kiln_ctx *cx = NULL;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) {
        job->failures++;
        return NULL;
    }
    static const char bad[] = "\x05\0\0\0\0\0\0\0{\"a\":";
    for (int i = 0; i < 200; i++) {
        kiln_safetensors *st = NULL;
        if (kiln_safetensors_load_buffer(cx, ref_attn_0, sizeof ref_attn_0, &st) != KILN_OK)
            job->failures++;
        kiln_safetensors_release(st);
        if (kiln_safetensors_load_buffer(cx, bad, sizeof bad - 1, &st) != KILN_INVALID_ARGUMENT)
            job->failures++;
        kiln_ctx_clear_error(cx);
        kiln_scope_begin(cx);
        kiln_tensor *t = kiln_safetensors_get(cx, job->shared, "attn.0");
        if (!t || kiln_tensor_item(cx, t, 5) != 5.0) job->failures++;
        if (kiln_safetensors_find(job->shared, "attn.0") != 0) job->failures++;
        kiln_scope_end(cx);
    }
    kiln_ctx_release(cx);
    return NULL;
}

Test(safetensors, threads) {
    kiln_ctx *cx = test_ctx();
    kiln_safetensors *shared = load_ok(cx, ref_attn_0, sizeof ref_attn_0);
    enum { T = 4 };
    pthread_t threads[T];
    thread_job jobs[T];
    for (int i = 0; i < T; i++) {
        jobs[i] = (thread_job){shared, 0};
        cr_assert_eq(pthread_create(&threads[i], NULL, load_many, &jobs[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        cr_assert_eq(pthread_join(threads[i], NULL), 0);
        cr_assert_eq(jobs[i].failures, 0, "thread %d: %d failures", i, jobs[i].failures);
    }
    kiln_safetensors_release(shared);
    kiln_ctx_release(cx);
}
