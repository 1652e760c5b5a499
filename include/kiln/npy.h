/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/npy.h: numpy .npy files.
 *
 * Reads and writes the .npy format (versions 1.0, 2.0 and 3.0 on read; 1.0 on write, as
 * kiln's headers always fit it) for bool, the signed and unsigned integers of 8 to 64 bits,
 * f16, f32, f64, complex<f32> ('<c8') and complex<f64> ('<c16'), little- or big-endian on
 * read (always little-endian on write). Bool
 * bytes load as 0 or 1. C order only: a Fortran-order file is UNIMPLEMENTED, unless at most
 * one dimension exceeds 1 (then both orders are the same bytes).
 *
 * bf16, which numpy lacks, is stored as a structured dtype with one field:
 *     'descr': [('bf16', '<u2')]
 * numpy loads such a file as a structured array (the raw bits are arr['bf16'], a uint16
 * array; `(arr['bf16'].astype(np.uint32) << 16).view(np.float32)` gives the values), and
 * kiln reads it back as bf16, so bf16 tensors round-trip through kiln exactly.
 *
 *     kiln_tensor *x;
 *     if (kiln_npy_load(cx, "weights.npy", &x) != KILN_OK)
 *         fprintf(stderr, "%s\n", kiln_ctx_error_message(cx));
 *     kiln_npy_save(cx, "copy.npy", x);
 *
 * Errors: NOT_FOUND / PERMISSION_DENIED / UNAVAILABLE when the file cannot be opened or
 * read; INVALID_ARGUMENT for a malformed header; UNIMPLEMENTED for Fortran order or a dtype
 * kiln lacks (object, strings, structured types but bf16's); DATA_LOSS when the data
 * is shorter or longer than the header's shape says; RESOURCE_EXHAUSTED. Messages name the
 * file and the field at fault. A malformed file never crashes or reads out of bounds.
 */
#ifndef KILN_NPY_H
#define KILN_NPY_H

#include <stddef.h>

#include "kiln/export.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads a .npy file into a new tensor owned by the innermost scope (*out_tensor; NULL on
 * error). */
KILN_API kiln_status kiln_npy_load(kiln_ctx *cx, const char *path, kiln_tensor **out_tensor);

/* Parses .npy bytes held in memory (`data` is only read, and need not outlive the call). */
KILN_API kiln_status kiln_npy_load_buffer(kiln_ctx *cx, const void *data, size_t size,
                                          kiln_tensor **out_tensor);

/* Writes a tensor to a .npy file, replacing it. The file is written under a temporary
 * name and renamed, so a failed save leaves no partial file. */
KILN_API kiln_status kiln_npy_save(kiln_ctx *cx, const char *path, const kiln_tensor *t);

/* The .npy bytes of a tensor, allocated with the ctx's allocator: free with
 * kiln_buffer_free(cx, *out_data, *out_size). */
KILN_API kiln_status kiln_npy_save_buffer(kiln_ctx *cx, const kiln_tensor *t, void **out_data,
                                          size_t *out_size);
KILN_API void kiln_buffer_free(kiln_ctx *cx, void *data, size_t size);

#ifdef __cplusplus
}
#endif

#endif
