/* SPDX-License-Identifier: Apache-2.0 */
/* Arena: bump allocation for short-lived data (compile-time structures), freed at once.
 *
 * Blocks come from the ctx's allocator and are chained; a reset keeps the first block for
 * reuse. Not thread-safe. */
#ifndef KILN_BASE_ARENA_H
#define KILN_BASE_ARENA_H

#include <stddef.h>

#include "kiln/ctx.h"

typedef struct kiln__arena_block kiln__arena_block;

typedef struct kiln__arena {
    kiln_ctx *cx;              /* allocator and error sink */
    kiln__arena_block *blocks; /* newest first */
    size_t block_size;         /* default size of a new block */
    size_t used_total;         /* bytes handed out since the last reset */
} kiln__arena;

void kiln__arena_init(kiln__arena *arena, kiln_ctx *cx, size_t block_size);

/* The same, with the caller's `buffer` of `size` bytes (on its stack, say) as the first
 * block, so that a small use allocates nothing; it must outlive the arena and is never
 * freed. Too small a buffer (under about 200 bytes) is not used. */
void kiln__arena_init_buffer(kiln__arena *arena, kiln_ctx *cx, void *buffer, size_t size,
                             size_t block_size);

/* `size` bytes aligned to `alignment` (a power of two up to 4096), or NULL with
 * RESOURCE_EXHAUSTED recorded in the ctx. size 0 returns a valid unique pointer. */
void *kiln__arena_alloc(kiln__arena *arena, size_t size, size_t alignment);

/* Copies `length` bytes and a terminating NUL. */
char *kiln__arena_strndup(kiln__arena *arena, const char *text, size_t length);

/* Frees every block but the first, which becomes empty. */
void kiln__arena_reset(kiln__arena *arena);

/* Frees every block. The arena may be initialised again. */
void kiln__arena_destroy(kiln__arena *arena);

#endif
