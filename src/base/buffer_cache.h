/* SPDX-License-Identifier: Apache-2.0 */
/* The caching allocator of tensor data: a ctx keeps the blocks its tensors release in
 * size-classed free lists and hands them out again, so that an eager chain of ops reuses
 * warm memory instead of asking the system for fresh pages at every op (a 40 MB result
 * from fresh pages costs ~10,000 page faults, about as long as a pass over it).
 *
 * Blocks up to 256 KiB are rounded up to their size class: 64-byte steps up to 1 KiB, then
 * four classes per power of two (at most 25% over the request), so that a block released
 * by one tensor fits the next of about its size. Bigger blocks have the request's size
 * rounded up to a page (what the system would give), and a request reuses the smallest
 * kept block at most 1/8 larger: a chain of big tensors holds what numpy's would. The
 * cache keeps at most `limit`
 * bytes; a block that would exceed it goes back to the allocator. A block of
 * KILN_HUGE_BLOCK bytes or more is advised to use transparent huge pages when first made.
 *
 * The cache is shared by the ctx and every block it handed out: storages may be released
 * on any thread and after kiln_ctx_release, so it is locked (a spin lock: its critical
 * sections are a few stores) and counts the blocks out; a closed cache (its ctx released)
 * frees every block given back to it, and itself with the last. */
#ifndef KILN_BASE_BUFFER_CACHE_H
#define KILN_BASE_BUFFER_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "kiln/alloc.h"
#include "kiln/ctx.h"

typedef struct kiln__buffer_cache kiln__buffer_cache;

/* A new open cache over `allocator` (copied) keeping at most `limit` bytes, with one
 * reference (the ctx's); NULL when out of memory. */
kiln__buffer_cache *kiln__buffer_cache_new(const kiln_allocator *allocator, size_t limit);

/* The capacity of a new block for `nbytes` (> 0): its size class, or above 256 KiB the
 * size rounded up to 4 KiB. */
size_t kiln__buffer_cache_capacity(size_t nbytes);

/* A block of at least nbytes aligned to `alignment` (at most 64), its capacity in
 * *capacity: a kept one when one fits, else kiln__buffer_cache_capacity(nbytes) bytes from
 * the allocator; when the allocator fails, every kept block is freed and the allocation
 * tried once more. Takes a reference to the cache for the block. NULL when out of memory,
 * for nbytes 0 or an alignment above 64 (nothing recorded). */
void *kiln__buffer_cache_alloc(kiln__buffer_cache *c, size_t nbytes, size_t alignment,
                               size_t *capacity);

/* Gives back a block from kiln__buffer_cache_alloc with the capacity it reported: kept for reuse
 * while the cache is open and under its limit, else freed; drops the block's reference.
 * Thread-safe. */
void kiln__buffer_cache_free(kiln__buffer_cache *c, void *block, size_t capacity);

/* Frees every kept block; returns the bytes freed. Thread-safe. */
size_t kiln__buffer_cache_trim(kiln__buffer_cache *c);

/* The figures of kiln_ctx_cache_stats. Thread-safe. */
void kiln__buffer_cache_stats(kiln__buffer_cache *c, kiln_cache_stats *out);

/* Sets the limit, freeing kept blocks above it. Thread-safe. */
void kiln__buffer_cache_set_limit(kiln__buffer_cache *c, size_t limit);

/* The ctx's end: frees the kept blocks, keeps none from now on, and drops the ctx's
 * reference (the cache itself goes when the last block handed out comes back). */
void kiln__buffer_cache_close(kiln__buffer_cache *c);

#endif
