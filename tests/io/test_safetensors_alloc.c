/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/safetensors.h under memory pressure: every allocation of load, load_buffer, get,
 * save and save_buffer is made to fail in turn. Each failing run must report
 * RESOURCE_EXHAUSTED and leak nothing once the object and the ctx are released. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "failing_allocator.h"
#include "test_util.h"

#define MAX_ALLOCATIONS 64

static kiln_ctx *failing_ctx(failing_allocator *fa, int64_t fail_after) {
    failing_allocator_init(fa, fail_after);
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &fa->allocator;
    kiln_ctx *cx = NULL;
    kiln_status s = kiln_ctx_create(&o, &cx);
    if (s == KILN_OK) return cx;
    cr_assert_eq(s, KILN_RESOURCE_EXHAUSTED);
    cr_assert_eq(fa->live_blocks, 0);
    return NULL;
}

static void expect_exhausted(kiln_ctx *cx, const failing_allocator *fa, kiln_status s,
                             const char *what, int64_t k) {
    cr_assert_eq(s, KILN_RESOURCE_EXHAUSTED, "%s, fail_after %lld: status %s: %s", what,
                 (long long)k, kiln_status_name(s), kiln_ctx_error_message(cx));
    cr_assert_gt(fa->failures, 0, "%s, fail_after %lld: failed without a refused allocation", what,
                 (long long)k);
    expect_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory");
}

static void expect_no_leak(kiln_ctx *cx, const failing_allocator *fa, const char *what, int64_t k) {
    kiln_ctx_release(cx);
    cr_assert_eq(fa->live_blocks, 0, "%s, fail_after %lld: %lld blocks leaked", what, (long long)k,
                 (long long)fa->live_blocks);
    cr_assert_eq(fa->allocations, fa->frees, "%s, fail_after %lld", what, (long long)k);
}

/* Three tensors (one empty) and metadata. */
static const float f_vals[6] = {1.5f, -2.0f, 0.25f, 8.0f, -0.0f, 3.0f};
static const int16_t i_vals[2] = {-7, 300};
static const char *const names[3] = {"w", "b", "empty"};
static const char *const meta[2] = {"format", "pt"};

static bool make_tensors(kiln_ctx *cx, kiln_tensor **ts) {
    ts[0] = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 3), f_vals, sizeof f_vals);
    ts[1] = kiln_tensor_from_host(cx, KILN_I16, KILN_SHAPE(2), i_vals, sizeof i_vals);
    ts[2] = kiln_tensor_from_host(cx, KILN_U8, KILN_SHAPE(0, 4), NULL, 0);
    return ts[0] && ts[1] && ts[2];
}

/* The file's bytes, made with an ordinary ctx. Free with free(). */
static unsigned char *file_bytes(size_t *out_size) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *ts[3];
    cr_assert(make_tensors(cx, ts));
    void *data;
    size_t size;
    cr_assert_eq(kiln_safetensors_save_buffer(cx, names, ts, 3, meta, 1, &data, &size), KILN_OK);
    unsigned char *copy = malloc(size);
    memcpy(copy, data, size);
    kiln_buffer_free(cx, data, size);
    kiln_ctx_release(cx);
    *out_size = size;
    return copy;
}

/* Loads (from the buffer or the file) and gets every tensor, failing each allocation in
 * turn. */
static void load_and_get(bool via_file) {
    size_t size;
    unsigned char *bytes = file_bytes(&size);
    char path[4096];
    snprintf(path, sizeof path, "%s", test_tmp_path("alloc.safetensors"));
    if (via_file) {
        FILE *f = fopen(path, "wb");
        cr_assert_eq(fwrite(bytes, 1, size, f), size);
        cr_assert_eq(fclose(f), 0);
    }
    const char *what = via_file ? "kiln_safetensors_load" : "kiln_safetensors_load_buffer";
    int64_t failing_runs = 0;
    bool done = false;
    for (int64_t k = 0; !done; k++) {
        cr_assert_lt(k, MAX_ALLOCATIONS, "never succeeds");
        failing_allocator fa;
        kiln_ctx *cx = failing_ctx(&fa, k);
        if (!cx) continue;
        kiln_safetensors *st = (kiln_safetensors *)&st;
        kiln_status s = via_file ? kiln_safetensors_load(cx, path, &st)
                                 : kiln_safetensors_load_buffer(cx, bytes, size, &st);
        if (s != KILN_OK) {
            cr_assert_null(st);
            expect_exhausted(cx, &fa, s, what, k);
            failing_runs++;
            expect_no_leak(cx, &fa, what, k);
            continue;
        }
        kiln_tensor *got[3] = {NULL, NULL, NULL};
        for (int i = 0; i < 3 && kiln_ctx_status(cx) == KILN_OK; i++)
            got[i] = kiln_safetensors_get(cx, st, names[i]);
        kiln_safetensors_release(st);
        if (kiln_ctx_status(cx) != KILN_OK) {
            expect_exhausted(cx, &fa, kiln_ctx_status(cx), "kiln_safetensors_get", k);
            failing_runs++;
        } else {
            cr_assert_eq(fa.failures, 0);
            cr_assert(memcmp(kiln_tensor_data(got[0]), f_vals, sizeof f_vals) == 0);
            cr_assert(memcmp(kiln_tensor_data(got[1]), i_vals, sizeof i_vals) == 0);
            cr_assert(kiln_shape_equal(kiln_tensor_shape(got[2]), &KILN_SHAPE(0, 4)));
            done = true;
        }
        expect_no_leak(cx, &fa, what, k);
    }
    /* Load: header copy, table, data; get: a tensor and its storage, twice, and one more. */
    cr_assert_geq(failing_runs, 7, "only %lld failing runs", (long long)failing_runs);
    free(bytes);
    if (via_file) unlink(path);
}

Test(safetensors_alloc, load_buffer_and_get) { load_and_get(false); }
Test(safetensors_alloc, load_file_and_get) { load_and_get(true); }

static void save(bool to_file) {
    size_t ref_size;
    unsigned char *ref = file_bytes(&ref_size);
    char path[4096];
    snprintf(path, sizeof path, "%s", test_tmp_path("alloc_save.safetensors"));
    const char *what = to_file ? "kiln_safetensors_save" : "kiln_safetensors_save_buffer";
    int64_t failing_saves = 0;
    bool done = false;
    for (int64_t k = 0; !done; k++) {
        cr_assert_lt(k, MAX_ALLOCATIONS, "never succeeds");
        unlink(path);
        failing_allocator fa;
        kiln_ctx *cx = failing_ctx(&fa, k);
        if (!cx) continue;
        kiln_tensor *ts[3];
        if (!make_tensors(cx, ts)) {
            kiln_ctx_clear_error(cx);
            expect_no_leak(cx, &fa, "kiln_tensor_from_host", k);
            continue;
        }
        void *data = &data;
        size_t size = 99;
        kiln_status s = to_file
                            ? kiln_safetensors_save(cx, path, names, ts, 3, meta, 1)
                            : kiln_safetensors_save_buffer(cx, names, ts, 3, meta, 1, &data, &size);
        if (s == KILN_OK) {
            cr_assert_eq(fa.failures, 0);
            if (!to_file) {
                cr_assert_eq(size, ref_size);
                cr_assert(memcmp(data, ref, size) == 0);
                kiln_buffer_free(cx, data, size);
            }
            done = true;
        } else {
            if (!to_file) {
                cr_assert_null(data);
                cr_assert_eq(size, 0);
            } else {
                cr_assert_neq(access(path, F_OK), 0, "a failed save left %s", path);
            }
            expect_exhausted(cx, &fa, s, what, k);
            failing_saves++;
        }
        expect_no_leak(cx, &fa, what, k);
    }
    /* The sorted item list, the header, then the output or the temporary name. */
    cr_assert_geq(failing_saves, 3, "only %lld failing saves", (long long)failing_saves);
    if (to_file) {
        FILE *f = fopen(path, "rb");
        cr_assert_not_null(f);
        unsigned char *got = malloc(ref_size + 1);
        cr_assert_eq(fread(got, 1, ref_size + 1, f), ref_size);
        fclose(f);
        cr_assert(memcmp(got, ref, ref_size) == 0);
        free(got);
        unlink(path);
    }
    free(ref);
}

Test(safetensors_alloc, save_buffer) { save(false); }
Test(safetensors_alloc, save_file) { save(true); }
