/* SPDX-License-Identifier: Apache-2.0 */
/* A tour of kiln's core API: a ctx, tensors made several ways, printing, reading values
 * back, .npy files, scopes, and what an error looks like. */
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(kiln_ctx *cx) {
    fprintf(stderr, "error: %s: %s\n", kiln_status_name(kiln_ctx_status(cx)),
            kiln_ctx_error_message(cx));
    kiln_ctx_release(cx);
    return 1;
}

int main(void) {
    kiln_ctx *cx;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return 1;
    printf("kiln %s\n\n", kiln_version_string());

    kiln_scope_begin(cx);
    kiln_tensor *grid = kiln_iota(cx, KILN_I32, KILN_SHAPE(3, 4), 1);
    kiln_tensor *ramp = kiln_linspace(cx, KILN_F32, 0.0, 1.0, 5);
    kiln_tensor *half = kiln_full(cx, KILN_BF16, KILN_SHAPE(2, 2), 0.1);
    kiln_key key = kiln_key_from_seed(42);
    kiln_tensor *noise = kiln_random_normal(cx, key, KILN_F64, KILN_SHAPE(2, 3));
    kiln_tensor *big = kiln_arange(cx, KILN_F32, 0, 2000, 1);
    if (kiln_ctx_status(cx) != KILN_OK) return fail(cx);

    puts("iota along axis 1:");
    kiln_tensor_print(cx, grid, stdout);
    puts("linspace(0, 1, 5):");
    kiln_tensor_print(cx, ramp, stdout);
    puts("0.1 rounded to bf16:");
    kiln_tensor_print(cx, half, stdout);
    puts("normal(key 42):");
    kiln_tensor_print(cx, noise, stdout);
    puts("arange(2000), elided:");
    kiln_tensor_print(cx, big, stdout);

    /* Round trip through a .npy file that numpy can read. */
    const char *path = "kiln_demo.npy";
    kiln_tensor *back = NULL;
    if (kiln_npy_save(cx, path, noise) != KILN_OK || kiln_npy_load(cx, path, &back) != KILN_OK)
        return fail(cx);
    printf("\nsaved and loaded %s: %s, first value %.17g\n", path,
           kiln_dtype_name(kiln_tensor_dtype(back)), kiln_tensor_item(cx, back, 0));
    remove(path);

    /* Errors are values in the ctx, never crashes. */
    kiln_tensor *bad = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 2), (float[]){1, 2, 3},
                                             3 * sizeof(float));
    printf("\nfrom_host with 3 floats for a 2x2 tensor -> %s\n  %s: %s\n",
           bad ? "a tensor?" : "NULL", kiln_status_name(kiln_ctx_status(cx)),
           kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);

    kiln_scope_end(cx); /* frees every tensor above */
    kiln_ctx_release(cx);
    return 0;
}
