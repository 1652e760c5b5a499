/* SPDX-License-Identifier: Apache-2.0 */
/* A cache of compiled code on disk (kernels built by a compiler: CUDA cubins, native shared
 * objects), safe to share between processes of one user:
 *
 *  - the directory is the caller's, KILN_CACHE_DIR, $XDG_CACHE_HOME/kiln or
 *    $HOME/.cache/kiln, in that order; made with mode 0700 when missing, and used only when
 *    it is a directory (not a link) owned by this user with no group or other write
 *    permission: a cache in a world-writable place could be replaced under us;
 *  - an entry is one file named by its key (hex), written to a temporary file and renamed,
 *    so readers never see half of one; it holds a header (magic, payload size, a hash of
 *    the payload) that is checked before the payload is handed out: a truncated or
 *    corrupted entry is a miss (and removed);
 *  - the directory is kept under a size bound: after a write, the least recently used
 *    entries go until it fits;
 *  - nothing fails hard: an unusable directory, a full disk or a read-only home make the
 *    cache a pass-through (every get misses, every put is dropped), said once in the log.
 */
#ifndef KILN_BASE_DISK_CACHE_H
#define KILN_BASE_DISK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/ctx.h"

typedef struct kiln__disk_cache kiln__disk_cache;

/* Keys: 32 hex digits, from the bytes that determine an entry (source, compiler and its
 * version, flags, target). */
#define KILN__CACHE_KEY_HEX 33
void kiln__cache_key(const void *data, size_t n, char out[KILN__CACHE_KEY_HEX]);
/* A key from several parts (each its bytes and length), as if concatenated with lengths. */
void kiln__cache_key_parts(const void *const *parts, const size_t *sizes, int n,
                           char out[KILN__CACHE_KEY_HEX]);

/* Opens the cache in `dir` (NULL: the environment's choice) holding at most max_bytes (0:
 * 256 MiB). Always gives a cache (*out); when the directory cannot be used it is a
 * pass-through and kiln__disk_cache_usable says why. Errors: RESOURCE_EXHAUSTED only. */
kiln_status kiln__disk_cache_open(kiln_ctx *cx, const char *dir, size_t max_bytes,
                                  kiln__disk_cache **out);
void kiln__disk_cache_close(kiln__disk_cache *c);

/* Whether entries are kept; when not, *why (may be NULL) says why. */
bool kiln__disk_cache_usable(const kiln__disk_cache *c, const char **why);
/* The directory in use (or that would have been). */
const char *kiln__disk_cache_dir(const kiln__disk_cache *c);

/* The entry for key, verified: a new buffer of *size bytes (free with free()), or NULL on a
 * miss. Marks the entry used. Thread-safe. */
void *kiln__disk_cache_get(kiln__disk_cache *c, const char *key, size_t *size);

/* Stores data under key (replacing any entry), then evicts down to the bound. False when
 * it could not be written (the cache stays usable; a write error that says the disk is
 * full or read-only turns it into a pass-through, said once). Thread-safe. */
bool kiln__disk_cache_put(kiln__disk_cache *c, const char *key, const void *data, size_t size);

/* The bytes its entries take now (0 for a pass-through). */
uint64_t kiln__disk_cache_bytes(kiln__disk_cache *c);

#endif
