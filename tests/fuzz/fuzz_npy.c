/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target for the .npy reader: any bytes must load or fail cleanly, never crash, read
 * out of bounds or leak. Built as a libFuzzer target with clang (-DKILN_FUZZ=ON), and run
 * by tests/fuzz/fuzz_driver.c on a corpus and mutations of it in every build. */
#include <kiln/kiln.h>
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kiln_ctx *cx;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return 0;
    kiln_tensor *t = NULL;
    if (kiln_npy_load_buffer(cx, data, size, &t) == KILN_OK) {
        /* A loaded tensor must be fully usable: print it and write it back. */
        char *s = kiln_tensor_to_string(cx, t, NULL);
        kiln_string_free(cx, s);
        void *out = NULL;
        size_t out_size = 0;
        if (kiln_npy_save_buffer(cx, t, &out, &out_size) == KILN_OK)
            kiln_buffer_free(cx, out, out_size);
    }
    kiln_ctx_release(cx);
    return 0;
}
