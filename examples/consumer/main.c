/* SPDX-License-Identifier: Apache-2.0 */
/* Uses an installed kiln: builds a tensor, checks a value, round-trips it through .npy.
 * Prints "consumer ok" and exits 0 when everything worked. */
#include <kiln/kiln.h>
#include <stdio.h>

int main(void) {
    kiln_ctx *cx;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return 1;
    kiln_tensor *x = kiln_iota(cx, KILN_F32, KILN_SHAPE(10, 10), 1);
    void *bytes = NULL;
    size_t size = 0;
    kiln_tensor *back = NULL;
    if (kiln_npy_save_buffer(cx, x, &bytes, &size) == KILN_OK)
        kiln_npy_load_buffer(cx, bytes, size, &back);
    kiln_buffer_free(cx, bytes, size);
    int ok = kiln_ctx_status(cx) == KILN_OK && kiln_tensor_item(cx, back, 37) == 7.0;
    if (!ok)
        fprintf(stderr, "consumer: %s\n", kiln_ctx_error_message(cx));
    else
        printf("consumer ok (kiln %s)\n", kiln_version_string());
    kiln_ctx_release(cx);
    return ok ? 0 : 1;
}
