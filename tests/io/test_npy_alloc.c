/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/npy.h under memory pressure: every allocation of load, load_buffer, save and
 * save_buffer is made to fail in turn. Each failing run must report RESOURCE_EXHAUSTED and
 * leak nothing once the ctx is released. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "failing_allocator.h"
#include "test_util.h"

/* Enough for every call here; a loop that gets this far means the call never succeeds. */
#define MAX_ALLOCATIONS 64

/* A ctx whose allocator fails after `fail_after` allocations, or NULL when creating the
 * ctx is what failed (that failure is checked here). `fa` must outlive the ctx. */
static kiln_ctx *failing_ctx(failing_allocator *fa, int64_t fail_after) {
    failing_allocator_init(fa, fail_after);
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &fa->allocator;
    kiln_ctx *cx = (kiln_ctx *)&cx;
    kiln_status s = kiln_ctx_create(&o, &cx);
    if (s == KILN_OK) {
        cr_assert_not_null(cx);
        return cx;
    }
    cr_assert_eq(s, KILN_RESOURCE_EXHAUSTED, "kiln_ctx_create: %s", kiln_status_name(s));
    cr_assert_null(cx);
    cr_assert_gt(fa->failures, 0);
    cr_assert_eq(fa->live_blocks, 0);
    return NULL;
}

/* After a failed call: the status is RESOURCE_EXHAUSTED, recorded in the ctx with a
 * message, and an allocation really was refused. */
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
    cr_assert_eq(fa->live_bytes, 0, "%s, fail_after %lld: %lld bytes leaked", what, (long long)k,
                 (long long)fa->live_bytes);
    cr_assert_eq(fa->allocations, fa->frees, "%s, fail_after %lld", what, (long long)k);
}

/* The tensors tried: ordinary, a bool scalar, empty (no data block), bf16. */
static kiln_tensor *sample(kiln_ctx *cx, int which) {
    static const float f[6] = {1.5f, -2.0f, 0.25f, 8.0f, -0.0f, 3.0f};
    static const uint8_t one = 1;
    static const uint16_t bf[3] = {0x3f80u, 0xc000u, 0x7fc0u};
    switch (which) {
    case 0: return kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 3), f, sizeof f);
    case 1: return kiln_tensor_from_host(cx, KILN_BOOL, KILN_SHAPE_SCALAR, &one, 1);
    case 2: return kiln_tensor_from_host(cx, KILN_I16, KILN_SHAPE(0, 4), NULL, 0);
    default: return kiln_tensor_from_host(cx, KILN_BF16, KILN_SHAPE(3), bf, sizeof bf);
    }
}
#define N_SAMPLES 4

/* The .npy bytes of sample(which), made with an ordinary ctx. Free with free(). */
static unsigned char *sample_bytes(int which, size_t *out_size) {
    kiln_ctx *cx = test_ctx();
    void *data = NULL;
    size_t size = 0;
    cr_assert_eq(kiln_npy_save_buffer(cx, sample(cx, which), &data, &size), KILN_OK);
    unsigned char *copy = malloc(size);
    cr_assert_not_null(copy);
    memcpy(copy, data, size);
    kiln_buffer_free(cx, data, size);
    kiln_ctx_release(cx);
    *out_size = size;
    return copy;
}

static void expect_sample(kiln_ctx *cx, const kiln_tensor *t, int which) {
    kiln_ctx *ref_cx = test_ctx();
    const kiln_tensor *ref = sample(ref_cx, which);
    cr_assert_not_null(t);
    cr_assert_eq(kiln_tensor_dtype(t), kiln_tensor_dtype(ref));
    cr_assert(kiln_shape_equal(kiln_tensor_shape(t), kiln_tensor_shape(ref)));
    cr_assert_eq(kiln_tensor_nbytes(t), kiln_tensor_nbytes(ref));
    if (kiln_tensor_nbytes(t))
        cr_assert(memcmp(kiln_tensor_data(t), kiln_tensor_data(ref), kiln_tensor_nbytes(t)) == 0);
    kiln_ctx_release(ref_cx);
    expect_ok(cx);
}

Test(npy_alloc, load_buffer) {
    for (int which = 0; which < N_SAMPLES; which++) {
        size_t size;
        unsigned char *bytes = sample_bytes(which, &size);
        bool done = false;
        int64_t failing_runs = 0;
        for (int64_t k = 0; !done; k++) {
            cr_assert_lt(k, MAX_ALLOCATIONS, "sample %d never loads", which);
            failing_allocator fa;
            kiln_ctx *cx = failing_ctx(&fa, k);
            if (!cx) {
                failing_runs++;
                continue;
            }
            kiln_tensor *t = (kiln_tensor *)&t;
            kiln_status s = kiln_npy_load_buffer(cx, bytes, size, &t);
            if (s == KILN_OK) {
                expect_sample(cx, t, which);
                cr_assert_eq(fa.failures, 0);
                done = true;
            } else {
                cr_assert_null(t);
                expect_exhausted(cx, &fa, s, "kiln_npy_load_buffer", k);
                failing_runs++;
            }
            expect_no_leak(cx, &fa, "kiln_npy_load_buffer", k);
        }
        /* The ctx, the tensor and its storage at least; data too unless empty. */
        cr_assert_geq(failing_runs, which == 2 ? 3 : 4, "only %lld failing runs",
                      (long long)failing_runs);
        free(bytes);
    }
}

Test(npy_alloc, load_file) {
    char path[4096];
    snprintf(path, sizeof path, "%s", test_tmp_path("alloc_load.npy"));
    for (int which = 0; which < N_SAMPLES; which++) {
        size_t size;
        unsigned char *bytes = sample_bytes(which, &size);
        FILE *f = fopen(path, "wb");
        cr_assert_not_null(f);
        cr_assert_eq(fwrite(bytes, 1, size, f), size);
        cr_assert_eq(fclose(f), 0);
        bool done = false;
        int64_t failing_runs = 0;
        for (int64_t k = 0; !done; k++) {
            cr_assert_lt(k, MAX_ALLOCATIONS, "sample %d never loads", which);
            failing_allocator fa;
            kiln_ctx *cx = failing_ctx(&fa, k);
            if (!cx) {
                failing_runs++;
                continue;
            }
            kiln_tensor *t = (kiln_tensor *)&t;
            kiln_status s = kiln_npy_load(cx, path, &t);
            if (s == KILN_OK) {
                expect_sample(cx, t, which);
                cr_assert_eq(fa.failures, 0);
                done = true;
            } else {
                cr_assert_null(t);
                expect_exhausted(cx, &fa, s, "kiln_npy_load", k);
                failing_runs++;
            }
            expect_no_leak(cx, &fa, "kiln_npy_load", k);
        }
        /* The header buffer comes on top of what load_buffer needs. */
        cr_assert_geq(failing_runs, which == 2 ? 4 : 5, "only %lld failing runs",
                      (long long)failing_runs);
        free(bytes);
    }
    unlink(path);
}

Test(npy_alloc, save_buffer) {
    for (int which = 0; which < N_SAMPLES; which++) {
        size_t ref_size;
        unsigned char *ref = sample_bytes(which, &ref_size);
        bool done = false;
        int64_t failing_saves = 0;
        for (int64_t k = 0; !done; k++) {
            cr_assert_lt(k, MAX_ALLOCATIONS, "sample %d never saves", which);
            failing_allocator fa;
            kiln_ctx *cx = failing_ctx(&fa, k);
            if (!cx) continue;
            kiln_tensor *t = sample(cx, which);
            if (!t) {
                expect_exhausted(cx, &fa, kiln_ctx_status(cx), "kiln_tensor_from_host", k);
                expect_no_leak(cx, &fa, "kiln_tensor_from_host", k);
                continue;
            }
            void *data = &data;
            size_t size = 99;
            kiln_status s = kiln_npy_save_buffer(cx, t, &data, &size);
            if (s == KILN_OK) {
                cr_assert_eq(size, ref_size);
                cr_assert(memcmp(data, ref, size) == 0);
                cr_assert_eq(fa.failures, 0);
                kiln_buffer_free(cx, data, size);
                done = true;
            } else {
                cr_assert_null(data);
                cr_assert_eq(size, 0);
                expect_exhausted(cx, &fa, s, "kiln_npy_save_buffer", k);
                failing_saves++;
            }
            expect_no_leak(cx, &fa, "kiln_npy_save_buffer", k);
        }
        cr_assert_geq(failing_saves, 1, "kiln_npy_save_buffer never failed");
        free(ref);
    }
}

Test(npy_alloc, save_file) {
    char path[4096];
    snprintf(path, sizeof path, "%s", test_tmp_path("alloc_save.npy"));
    for (int which = 0; which < N_SAMPLES; which++) {
        size_t ref_size;
        unsigned char *ref = sample_bytes(which, &ref_size);
        bool done = false;
        int64_t failing_saves = 0;
        for (int64_t k = 0; !done; k++) {
            cr_assert_lt(k, MAX_ALLOCATIONS, "sample %d never saves", which);
            unlink(path);
            failing_allocator fa;
            kiln_ctx *cx = failing_ctx(&fa, k);
            if (!cx) continue;
            kiln_tensor *t = sample(cx, which);
            if (!t) {
                expect_exhausted(cx, &fa, kiln_ctx_status(cx), "kiln_tensor_from_host", k);
                expect_no_leak(cx, &fa, "kiln_tensor_from_host", k);
                continue;
            }
            kiln_status s = kiln_npy_save(cx, path, t);
            if (s == KILN_OK) {
                cr_assert_eq(fa.failures, 0);
                done = true;
            } else {
                expect_exhausted(cx, &fa, s, "kiln_npy_save", k);
                cr_assert_neq(access(path, F_OK), 0, "a failed save left %s", path);
                failing_saves++;
            }
            expect_no_leak(cx, &fa, "kiln_npy_save", k);
        }
        cr_assert_geq(failing_saves, 1, "kiln_npy_save never failed");
        /* The file holds exactly the expected bytes. */
        FILE *f = fopen(path, "rb");
        cr_assert_not_null(f);
        unsigned char *got = malloc(ref_size + 1);
        cr_assert_not_null(got);
        cr_assert_eq(fread(got, 1, ref_size + 1, f), ref_size);
        fclose(f);
        cr_assert(memcmp(got, ref, ref_size) == 0);
        free(got);
        free(ref);
    }
    unlink(path);
}

/* Loading and saving again in one ctx whose memory runs out part way. */
Test(npy_alloc, load_then_save_buffer) {
    size_t size;
    unsigned char *bytes = sample_bytes(0, &size);
    bool done = false;
    for (int64_t k = 0; !done; k++) {
        cr_assert_lt(k, MAX_ALLOCATIONS);
        failing_allocator fa;
        kiln_ctx *cx = failing_ctx(&fa, k);
        if (!cx) continue;
        bool scoped = kiln_scope_begin(cx) == KILN_OK;
        kiln_status s = kiln_ctx_status(cx);
        kiln_tensor *t = NULL;
        if (s == KILN_OK) s = kiln_npy_load_buffer(cx, bytes, size, &t);
        void *out = NULL;
        size_t out_size = 0;
        if (s == KILN_OK) s = kiln_npy_save_buffer(cx, t, &out, &out_size);
        if (s == KILN_OK) {
            cr_assert_eq(out_size, size);
            cr_assert(memcmp(out, bytes, size) == 0);
            kiln_buffer_free(cx, out, out_size);
            done = true;
        } else {
            expect_exhausted(cx, &fa, s, "load then save", k);
        }
        if (scoped) cr_assert_eq(kiln_scope_end(cx), KILN_OK);
        expect_no_leak(cx, &fa, "load then save", k);
    }
    free(bytes);
}

/* Failed loads free what they allocated (the header buffer of a file load, the tensor of a
 * load whose data read fails): every prefix and a few corruptions of a valid file, through
 * a buffer and through a file, with an allocator that counts. */
static void expect_failed_load_frees(const unsigned char *bytes, size_t size, const char *path,
                                     const char *what) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    if (size) cr_assert_eq(fwrite(bytes, 1, size, f), size);
    cr_assert_eq(fclose(f), 0);
    for (int via_file = 0; via_file < 2; via_file++) {
        failing_allocator fa;
        kiln_ctx *cx = failing_ctx(&fa, -1);
        cr_assert_not_null(cx);
        kiln_tensor *t = (kiln_tensor *)&t;
        kiln_status s =
            via_file ? kiln_npy_load(cx, path, &t) : kiln_npy_load_buffer(cx, bytes, size, &t);
        cr_assert_neq(s, KILN_OK, "%s (%s) loaded", what, via_file ? "file" : "buffer");
        cr_assert_null(t);
        kiln_ctx_trim(cx); /* what the buffer cache keeps is not a leak */
        cr_assert_eq(fa.live_blocks, 2, "%s (%s): %lld blocks live besides the ctx and its cache",
                     what, via_file ? "file" : "buffer", (long long)fa.live_blocks - 2);
        expect_no_leak(cx, &fa, what, -1);
    }
}

Test(npy_alloc, failed_loads_free_everything) {
    char path[4096];
    snprintf(path, sizeof path, "%s", test_tmp_path("alloc_bad.npy"));
    size_t size;
    unsigned char *bytes = sample_bytes(0, &size);
    unsigned char *m = malloc(size + 1);
    cr_assert_not_null(m);
    char what[64];
    for (size_t n = 0; n < size; n++) {
        snprintf(what, sizeof what, "prefix of %zu bytes", n);
        expect_failed_load_frees(bytes, n, path, what);
    }
    memcpy(m, bytes, size);
    m[size] = 0;
    expect_failed_load_frees(m, size + 1, path, "a trailing byte");
    static const struct {
        size_t offset;
        char value;
    } edits[] = {{10, '['}, {20, 'c'}, {21, '8'}, {30, 'x'}, {60, '-'}, {62, 'a'}, {66, '}'}};
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        memcpy(m, bytes, size);
        m[edits[i].offset] = (unsigned char)edits[i].value;
        snprintf(what, sizeof what, "byte %zu set to '%c'", edits[i].offset, edits[i].value);
        expect_failed_load_frees(m, size, path, what);
    }
    free(m);
    free(bytes);
    unlink(path);
}
