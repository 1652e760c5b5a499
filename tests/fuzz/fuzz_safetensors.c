/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target for the safetensors reader: any bytes must load or fail cleanly, never crash,
 * read out of bounds or leak. What loads must be fully usable, and saving it again must
 * give a file that loads to the same tensors (a broken invariant aborts, so the fuzzer
 * reports it). Built as a libFuzzer target with clang (-DKILN_FUZZ=ON), and run by
 * tests/fuzz/fuzz_driver.c on a corpus and mutations of it in every build. */
#include <kiln/kiln.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok) {
    if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kiln_ctx *cx;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return 0;
    kiln_safetensors *st = NULL;
    if (kiln_safetensors_load_buffer(cx, data, size, &st) != KILN_OK) {
        check(st == NULL && kiln_ctx_status(cx) != KILN_OK);
        kiln_ctx_release(cx);
        return 0;
    }
    int32_t n = kiln_safetensors_count(st);
    /* Cap the copies: a valid header may describe many tensors. */
    enum { MAX_TENSORS = 256 };
    if (n > MAX_TENSORS) n = MAX_TENSORS;
    const char *names[MAX_TENSORS];
    kiln_tensor *ts[MAX_TENSORS];
    for (int32_t i = 0; i < n; i++) {
        names[i] = kiln_safetensors_name(st, i);
        ts[i] = kiln_safetensors_get(cx, st, names[i]);
        check(names[i] != NULL && ts[i] != NULL);
        char *s = kiln_tensor_to_string(cx, ts[i], NULL);
        kiln_string_free(cx, s);
    }
    int32_t n_meta = kiln_safetensors_metadata_count(st);
    enum { MAX_META = 64 };
    if (n_meta > MAX_META) n_meta = MAX_META;
    const char *meta[2 * MAX_META];
    for (int32_t i = 0; i < n_meta; i++) {
        meta[2 * i] = kiln_safetensors_metadata_key(st, i);
        meta[2 * i + 1] = kiln_safetensors_metadata(st, meta[2 * i]);
        check(meta[2 * i] != NULL && meta[2 * i + 1] != NULL);
    }
    void *out = NULL;
    size_t out_size = 0;
    check(kiln_safetensors_save_buffer(cx, names, ts, n, meta, n_meta, &out, &out_size) == KILN_OK);
    kiln_safetensors *again = NULL;
    check(kiln_safetensors_load_buffer(cx, out, out_size, &again) == KILN_OK);
    check(kiln_safetensors_count(again) == n);
    check(kiln_safetensors_metadata_count(again) == n_meta);
    for (int32_t i = 0; i < n; i++) {
        kiln_tensor *t = kiln_safetensors_get(cx, again, names[i]);
        check(t && kiln_tensor_dtype(t) == kiln_tensor_dtype(ts[i]) &&
              kiln_shape_equal(kiln_tensor_shape(t), kiln_tensor_shape(ts[i])) &&
              kiln_tensor_nbytes(t) == kiln_tensor_nbytes(ts[i]));
        size_t nb = kiln_tensor_nbytes(t);
        check(nb == 0 || memcmp(kiln_tensor_data(t), kiln_tensor_data(ts[i]), nb) == 0);
    }
    for (int32_t i = 0; i < n_meta; i++) {
        const char *v = kiln_safetensors_metadata(again, meta[2 * i]);
        check(v && strcmp(v, meta[2 * i + 1]) == 0);
    }
    kiln_safetensors_release(again);
    kiln_buffer_free(cx, out, out_size);
    kiln_safetensors_release(st);
    check(kiln_ctx_status(cx) == KILN_OK);
    kiln_ctx_release(cx);
    return 0;
}
