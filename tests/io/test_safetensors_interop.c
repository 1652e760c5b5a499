/* SPDX-License-Identifier: Apache-2.0 */
/* The C half of tests/io/test_safetensors_interop.py, which runs it with
 * KILN_ST_INTEROP_DIR set (CTest's safetensors_python_interop); skipped otherwise.
 *
 * The script writes, from the format's description with json and numpy only:
 *   manifest.txt       one line per tensor: NAME DTYPE DIMS (DIMS "-" for a scalar, else
 *                      comma-separated), in no particular order
 *   NAME.bin           the tensor's little-endian bytes, from numpy
 *   python.safetensors all of them, with metadata {"writer": "python", "n": "<count>"}
 * This test loads python.safetensors and compares every tensor with its .bin file, then
 * writes kiln.safetensors from the .bin files (metadata {"writer": "kiln"}) for the script
 * to check against the format and numpy. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define MAX_TENSORS 256

typedef struct manifest_entry {
    char name[128];
    char dtype[16];
    kiln_shape shape;
} manifest_entry;

static int read_manifest(const char *dir, manifest_entry *out) {
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.txt", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    int n = 0;
    char dims[256];
    while (n < MAX_TENSORS && fscanf(f, "%127s %15s %255s", out[n].name, out[n].dtype, dims) == 3) {
        kiln_shape s = {.rank = 0};
        if (strcmp(dims, "-") != 0)
            for (char *tok = strtok(dims, ","); tok; tok = strtok(NULL, ","))
                s.dims[s.rank++] = strtoll(tok, NULL, 10);
        out[n].shape = s;
        n++;
    }
    fclose(f);
    cr_assert_gt(n, 0, "empty manifest");
    return n;
}

static unsigned char *read_bin(const char *dir, const char *name, size_t *out_size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    size_t cap = 1 << 16, n = 0;
    unsigned char *b = malloc(cap);
    for (size_t got; (got = fread(b + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) b = realloc(b, cap *= 2);
    }
    fclose(f);
    *out_size = n;
    return b;
}

/* The StableHLO spelling of a safetensors dtype, for kiln_dtype_parse. */
static kiln_dtype dtype_of(const char *st_name) {
    static const char *const pairs[][2] = {
        {"BOOL", "i1"},   {"U8", "ui8"},  {"I8", "i8"},    {"U16", "ui16"}, {"I16", "i16"},
        {"U32", "ui32"},  {"I32", "i32"}, {"U64", "ui64"}, {"I64", "i64"},  {"F16", "f16"},
        {"BF16", "bf16"}, {"F32", "f32"}, {"F64", "f64"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (strcmp(pairs[i][0], st_name) == 0) {
            kiln_dtype d;
            cr_assert(kiln_dtype_parse(pairs[i][1], &d));
            return d;
        }
    cr_assert_fail("unknown dtype %s in the manifest", st_name);
    return KILN_DTYPE_COUNT;
}

Test(safetensors_interop, python_files) {
    const char *dir = getenv("KILN_ST_INTEROP_DIR");
    if (!dir) cr_skip_test("KILN_ST_INTEROP_DIR is not set (run by safetensors_python_interop)");
    kiln_ctx *cx = test_ctx();
    static manifest_entry m[MAX_TENSORS];
    int n = read_manifest(dir, m);

    char path[4096];
    snprintf(path, sizeof path, "%s/python.safetensors", dir);
    kiln_safetensors *st = NULL;
    cr_assert_eq(kiln_safetensors_load(cx, path, &st), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_safetensors_count(st), n);
    cr_assert_str_eq(kiln_safetensors_metadata(st, "writer"), "python");
    char count[16];
    snprintf(count, sizeof count, "%d", n);
    cr_assert_str_eq(kiln_safetensors_metadata(st, "n"), count);

    const char *names[MAX_TENSORS];
    kiln_tensor *ts[MAX_TENSORS];
    for (int i = 0; i < n; i++) {
        size_t size;
        unsigned char *want = read_bin(dir, m[i].name, &size);
        kiln_dtype dtype = dtype_of(m[i].dtype);
        kiln_tensor *got = kiln_safetensors_get(cx, st, m[i].name);
        cr_assert_not_null(got, "%s: %s", m[i].name, kiln_ctx_error_message(cx));
        cr_assert_eq(kiln_tensor_dtype(got), dtype, "%s: dtype", m[i].name);
        cr_assert(kiln_shape_equal(kiln_tensor_shape(got), &m[i].shape), "%s: shape", m[i].name);
        cr_assert_eq(kiln_tensor_nbytes(got), size, "%s: size", m[i].name);
        if (size) cr_assert(memcmp(kiln_tensor_data(got), want, size) == 0, "%s: bytes", m[i].name);
        names[i] = m[i].name;
        ts[i] = kiln_tensor_from_host(cx, dtype, m[i].shape, size ? want : NULL, size);
        cr_assert_not_null(ts[i]);
        free(want);
    }
    kiln_safetensors_release(st);

    snprintf(path, sizeof path, "%s/kiln.safetensors", dir);
    const char *meta[] = {"writer", "kiln"};
    cr_assert_eq(kiln_safetensors_save(cx, path, names, ts, n, meta, 1), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    expect_ok(cx);
    kiln_ctx_release(cx);
}
