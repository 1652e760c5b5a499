/* SPDX-License-Identifier: Apache-2.0 */
/* Libraries opened at run time (dlopen) instead of linked, so that a process maps them only
 * when it uses them: the CPU backend's OpenBLAS and oneDNN (backends/cpu/lib/blas_api.h,
 * dnnl_api.h). */
#ifndef KILN_BASE_DYNLIB_H
#define KILN_BASE_DYNLIB_H

#include <stdbool.h>
#include <stddef.h>

/* Opens `library` (a soname or a path) and resolves names[0..n) into the function pointers
 * slots[0..n) point to. On success the library stays open for the life of the process. On
 * failure (the library cannot be opened, or lacks a name) nothing stays open, no slot is
 * trusted, and error (cap bytes) says why, naming `what` (e.g. "OpenBLAS") and the library.
 * Not thread-safe by itself: callers run it once (pthread_once). */
bool kiln__dynlib_open(const char *library, const char *what, const char *const *names,
                       void *const *slots, size_t n, char *error, size_t cap);

/* Whether a library whose path contains `needle` (e.g. "/libopenblas") is mapped in this
 * process, from /proc/self/maps (false where that cannot be read). For tests. */
bool kiln__dynlib_mapped(const char *needle);

#endif
