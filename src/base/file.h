/* SPDX-License-Identifier: Apache-2.0 */
/* The file handling that every reader and writer of files shares (the formats of src/io,
 * the StableHLO text reader of src/ir): errors naming the path, opening a regular file for
 * reading, and saving through a temporary file that then replaces the target (so a reader
 * never sees half a file, and a failed save leaves the old one). */
#ifndef KILN_BASE_FILE_H
#define KILN_BASE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kiln/ctx.h"

/* Records "<path>: cannot <what>: <strerror(err)>" in cx and returns its status: NOT_FOUND
 * for ENOENT, PERMISSION_DENIED for EACCES, EPERM and EROFS, UNAVAILABLE otherwise. */
kiln_status kiln__file_error(kiln_ctx *cx, const char *path, const char *what, int err);

/* Opens path for reading; *out_f (the caller fcloses it) and *out_size on KILN_OK. Only a
 * regular file (a FIFO is refused, never waited on). Errors, recorded in cx: those of
 * kiln__file_error, INVALID_ARGUMENT (not a regular file), RESOURCE_EXHAUSTED (larger than
 * memory can address). */
kiln_status kiln__file_open_read(kiln_ctx *cx, const char *path, FILE **out_f, size_t *out_size);

/* Reads exactly n bytes of f into dst (nothing when n is 0). A read error is recorded as
 * kiln__file_error's "read"; a short file as DATA_LOSS "<path>: truncated <what>: <got> of
 * <n> bytes<why>" (why: "" or a parenthesised reason, with its leading space). */
kiln_status kiln__file_read_exact(kiln_ctx *cx, const char *path, FILE *f, void *dst, size_t n,
                                  const char *what, const char *why);

/* Saves path: write(user, f) writes the whole content into a new file beside it, which then
 * replaces path; write returns false on a write error (errno set). On any failure the
 * temporary file is removed and path is untouched. `fn` names the caller in messages.
 * Errors, recorded in cx: those of kiln__file_error, RESOURCE_EXHAUSTED. */
kiln_status kiln__file_save_atomic(kiln_ctx *cx, const char *fn, const char *path,
                                   bool (*write)(void *user, FILE *f), void *user);

#endif
