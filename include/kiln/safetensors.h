/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/safetensors.h: safetensors files, the weights format of the ML ecosystem.
 *
 * A safetensors file is an 8-byte little-endian header length N, N bytes of JSON naming
 * each tensor's dtype, shape and byte range, then the tensors' bytes, little-endian and
 * row-major. An optional "__metadata__" object maps strings to strings. Every kiln dtype
 * is supported, spelled BOOL, U8, I8, U16, I16, U32, I32, U64, I64, F16, BF16, F32, F64;
 * other safetensors dtypes (F8_*, C64, ...) are UNIMPLEMENTED.
 *
 *     kiln_safetensors *st;
 *     if (kiln_safetensors_load(cx, "model.safetensors", &st) != KILN_OK) {
 *         fprintf(stderr, "%s\n", kiln_ctx_error_message(cx));
 *         return;
 *     }
 *     for (int32_t i = 0; i < kiln_safetensors_count(st); i++)
 *         printf("%s\n", kiln_safetensors_name(st, i));
 *     kiln_tensor *w = kiln_safetensors_get(cx, st, "l1.w");   // owned by the scope
 *     kiln_safetensors_release(st);                             // w stays valid
 *
 *     const char *names[] = {"l1.b", "l1.w"};
 *     kiln_tensor *ts[] = {b, w};
 *     const char *meta[] = {"format", "pt"};
 *     kiln_safetensors_save(cx, "copy.safetensors", names, ts, 2, meta, 1);
 *
 * Loading checks the whole file before returning: the header length (at most 100 MB, as
 * the reference implementation allows), the JSON, each entry's dtype and shape, and that
 * the byte ranges are in order, contiguous, non-overlapping, of the size the dtype and
 * shape need, and cover the data exactly. A malformed, truncated or oversized file is an
 * error whose message names the file (or "<buffer>") and what is wrong; it never crashes
 * or reads out of bounds. Bool bytes load as 0 or 1. Offsets and dimensions of 2^53 or more
 * are refused, not rounded (the JSON numbers are read as doubles, exact only below 2^53); so
 * are strings holding \u0000 (a name would be cut there) and JSON nested deeper than 1000
 * levels, each with the byte where it happens.
 *
 * Saving writes what the reference writer writes: tensors ordered by dtype alignment
 * (largest first) and then by name, "__metadata__" first in the header, the header padded
 * with spaces to a multiple of 8 bytes.
 *
 * Errors: NOT_FOUND / PERMISSION_DENIED / UNAVAILABLE when a file cannot be opened, read
 * or written; INVALID_ARGUMENT for a NULL or bad argument or a malformed header (bad JSON,
 * a bad entry, byte ranges with a gap or overlap, a range whose size does not fit its dtype
 * and shape); UNIMPLEMENTED for a dtype kiln lacks; DATA_LOSS when the file is shorter or
 * longer than its header says; RESOURCE_EXHAUSTED when memory runs out. Each function records
 * its error in the ctx (kiln_ctx_error_message) and returns the status; a NULL cx is
 * INVALID_ARGUMENT, recorded nowhere.
 *
 * Thread-safety: a kiln_safetensors is immutable once loaded, so the functions that take
 * only a `const kiln_safetensors *` may be called from any thread at once; those that take
 * a ctx have the ctx's thread-safety. kiln_safetensors_release must not race with other
 * uses of the same object.
 */
#ifndef KILN_SAFETENSORS_H
#define KILN_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/ctx.h"
#include "kiln/dtype.h"
#include "kiln/export.h"
#include "kiln/npy.h" /* kiln_buffer_free */
#include "kiln/shape.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A loaded file: named tensors and metadata, held in host memory from the loading ctx's
 * allocator (which must outlive it, as kiln/alloc.h requires of every allocation). It does
 * not refer to the file or buffer it was loaded from. */
typedef struct kiln_safetensors kiln_safetensors;

/* Reads and checks a safetensors file. On success *out is a new object owned by the caller
 * (free with kiln_safetensors_release); on error *out is NULL. Errors as above, and
 * INVALID_ARGUMENT for a NULL path or out or a path that is not a regular file; messages
 * name `path`. */
KILN_API kiln_status kiln_safetensors_load(kiln_ctx *cx, const char *path, kiln_safetensors **out);

/* Like kiln_safetensors_load for `size` bytes in memory. `data` is only read and need not
 * outlive the call; it may be NULL when size is 0 (which is then a DATA_LOSS error, as
 * every file has at least an 8-byte length); NULL with size > 0 is INVALID_ARGUMENT. */
KILN_API kiln_status kiln_safetensors_load_buffer(kiln_ctx *cx, const void *data, size_t size,
                                                  kiln_safetensors **out);

/* The number of tensors; 0 for NULL. */
KILN_API int32_t kiln_safetensors_count(const kiln_safetensors *st);

/* The name of tensor i (0 <= i < count), in the order of their data in the file. Borrowed:
 * lives as long as st. NULL when st is NULL or i is out of range. */
KILN_API const char *kiln_safetensors_name(const kiln_safetensors *st, int32_t i);

/* The index of the tensor called `name`, or -1 when there is none (or an argument is
 * NULL). */
KILN_API int32_t kiln_safetensors_find(const kiln_safetensors *st, const char *name);

/* The dtype and shape of tensor i without copying its data. Returns false (leaving the
 * outputs alone) when st is NULL or i is out of range; either output may be NULL. */
KILN_API bool kiln_safetensors_info(const kiln_safetensors *st, int32_t i, kiln_dtype *out_dtype,
                                    kiln_shape *out_shape);

/* A new tensor holding a copy of the tensor called `name`, owned by the ctx's innermost
 * scope (it stays valid after st is released). Returns NULL and records NOT_FOUND naming
 * the tensor when there is none, INVALID_ARGUMENT for a NULL st or name, or
 * RESOURCE_EXHAUSTED (errors are sticky: an error already in the ctx is kept); NULL for a
 * NULL cx. */
KILN_API kiln_tensor *kiln_safetensors_get(kiln_ctx *cx, const kiln_safetensors *st,
                                           const char *name);

/* The string value of `key` in the file's "__metadata__", or NULL when the file has no such
 * key (or an argument is NULL; a null "__metadata__" counts as none). Borrowed: lives as
 * long as st. */
KILN_API const char *kiln_safetensors_metadata(const kiln_safetensors *st, const char *key);

/* The number of metadata entries (0 for NULL), and the key of entry i (0 <= i < count, in
 * file order; NULL when out of range; borrowed, lives as long as st). */
KILN_API int32_t kiln_safetensors_metadata_count(const kiln_safetensors *st);
KILN_API const char *kiln_safetensors_metadata_key(const kiln_safetensors *st, int32_t i);

/* Frees st and everything it holds; tensors returned by kiln_safetensors_get stay valid.
 * NULL is a no-op. */
KILN_API void kiln_safetensors_release(kiln_safetensors *st);

/* Writes n tensors (n >= 0) under the given names, with n_metadata key/value pairs
 * (metadata_kv = {key0, value0, key1, value1, ...}; may be NULL when n_metadata is 0), to
 * `path`, replacing it. The file is written under a temporary name beside `path` and
 * renamed, so a failed save leaves no partial file. Names must be distinct, valid UTF-8
 * and not "__metadata__"; metadata keys must be distinct, and keys and values valid UTF-8;
 * tensors must be eager (not traced), alive and in host memory. Metadata is written in the
 * order given; the caller's arrays are only read. Errors: INVALID_ARGUMENT naming the function and
 * the argument at fault (a NULL path, NULL arrays or entries, a negative count, a bad or repeated
 * name, a header over 100 MB); FAILED_PRECONDITION for a traced or donated tensor; UNIMPLEMENTED
 * for a tensor on another device; the file errors above. */
KILN_API kiln_status kiln_safetensors_save(kiln_ctx *cx, const char *path, const char *const *names,
                                           kiln_tensor *const *tensors, int32_t n,
                                           const char *const *metadata_kv, int32_t n_metadata);

/* Like kiln_safetensors_save, but returns the file's bytes: *out_data is allocated with the
 * ctx's allocator and owned by the caller, who frees it with
 * kiln_buffer_free(cx, *out_data, *out_size) (kiln/npy.h). On error *out_data is NULL and
 * *out_size 0. Errors as for kiln_safetensors_save without the file errors, and
 * INVALID_ARGUMENT for a NULL out_data or out_size. */
KILN_API kiln_status kiln_safetensors_save_buffer(kiln_ctx *cx, const char *const *names,
                                                  kiln_tensor *const *tensors, int32_t n,
                                                  const char *const *metadata_kv,
                                                  int32_t n_metadata, void **out_data,
                                                  size_t *out_size);

#ifdef __cplusplus
}
#endif

#endif
