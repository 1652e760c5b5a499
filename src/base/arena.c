/* SPDX-License-Identifier: Apache-2.0 */
#include "base/arena.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"

/* Under AddressSanitizer each allocation is followed by a poisoned redzone and the unused
 * rest of a block stays poisoned, so that reading past an allocation (an op's attributes
 * read as another kind's, say) is reported instead of reading a neighbour. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN__ARENA_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KILN__ARENA_ASAN 1
#endif
#ifdef KILN__ARENA_ASAN
#include <sanitizer/asan_interface.h>
enum { REDZONE = 16, MIN_ALIGN = 8 };
#define ROOM_FOR_REDZONE(left) ((left) >= REDZONE)
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
enum { REDZONE = 0, MIN_ALIGN = 1 };
#define ROOM_FOR_REDZONE(left) ((void)(left), 1)
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

struct kiln__arena_block {
    kiln__arena_block *next;
    size_t size; /* bytes in data[] */
    size_t used;
    bool borrowed; /* the caller's buffer (kiln__arena_init_buffer): never freed */
    _Alignas(64) unsigned char data[];
};

void kiln__arena_init(kiln__arena *arena, kiln_ctx *cx, size_t block_size) {
    arena->cx = cx;
    arena->blocks = NULL;
    arena->block_size = block_size ? block_size : 16384;
    arena->used_total = 0;
}

static size_t align_up(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }

void kiln__arena_init_buffer(kiln__arena *arena, kiln_ctx *cx, void *buffer, size_t size,
                             size_t block_size) {
    kiln__arena_init(arena, cx, block_size);
    uintptr_t at = align_up((uintptr_t)buffer, 64);
    size_t lost = (size_t)(at - (uintptr_t)buffer);
    if (!buffer || size < lost + sizeof(kiln__arena_block) + 64) return;
    kiln__arena_block *b = (kiln__arena_block *)at;
    b->next = NULL;
    b->size = size - lost - sizeof *b;
    b->used = 0;
    b->borrowed = true;
    POISON(b->data, b->size);
    arena->blocks = b;
}

void *kiln__arena_alloc(kiln__arena *arena, size_t size, size_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) || alignment > 4096) {
        kiln_ctx_set_error(arena->cx, KILN_INTERNAL, "internal: arena alignment %zu", alignment);
        return NULL;
    }
    if (size == 0) size = 1;
    if (alignment < MIN_ALIGN) alignment = MIN_ALIGN;
    kiln__arena_block *b = arena->blocks;
    if (b) {
        size_t offset = align_up(b->used, alignment);
        if (offset <= b->size && size <= b->size - offset && ROOM_FOR_REDZONE(b->size - offset - size)) {
            b->used = offset + size + REDZONE;
            arena->used_total += size;
            UNPOISON(b->data + offset, size);
            return b->data + offset;
        }
    }
    /* A new block big enough for this request even at the worst alignment. */
    size_t need = size + alignment + REDZONE;
    if (need < size || need > SIZE_MAX - sizeof(kiln__arena_block)) {
        kiln_ctx_set_error(arena->cx, KILN_RESOURCE_EXHAUSTED,
                           "arena: request of %zu bytes is too large", size);
        return NULL;
    }
    size_t data_size = need > arena->block_size ? need : arena->block_size;
    /* Each new block is twice the last, up to 1 MiB: a large arena (a module of 10^5 ops)
     * takes few blocks and lies in long runs of memory; a small one stays small. */
    if (arena->block_size < ((size_t)1 << 20)) arena->block_size *= 2;
    kiln__arena_block *nb = kiln__alloc(arena->cx, sizeof *nb + data_size, 64, "arena block");
    if (!nb) return NULL;
    nb->size = data_size;
    nb->borrowed = false;
    nb->next = arena->blocks;
    arena->blocks = nb;
    POISON(nb->data, data_size);
    size_t offset = align_up(0, alignment);
    nb->used = offset + size + REDZONE;
    arena->used_total += size;
    UNPOISON(nb->data + offset, size);
    return nb->data + offset;
}

char *kiln__arena_strndup(kiln__arena *arena, const char *text, size_t length) {
    if (length == SIZE_MAX) return NULL;
    char *s = kiln__arena_alloc(arena, length + 1, 1);
    if (!s) return NULL;
    memcpy(s, text, length);
    s[length] = '\0';
    return s;
}

static void free_chain(kiln__arena *arena, kiln__arena_block *b) {
    while (b) {
        kiln__arena_block *next = b->next;
        UNPOISON(b->data, b->size);
        if (!b->borrowed) kiln__free(arena->cx, b, sizeof *b + b->size);
        b = next;
    }
}

void kiln__arena_reset(kiln__arena *arena) {
    kiln__arena_block *b = arena->blocks;
    if (!b) return;
    /* Keep the oldest block (the list is newest first). */
    kiln__arena_block *keep = b, *prev = NULL;
    while (keep->next) {
        prev = keep;
        keep = keep->next;
    }
    if (prev) {
        prev->next = NULL;
        free_chain(arena, b);
    }
    keep->used = 0;
    POISON(keep->data, keep->size);
    arena->blocks = keep;
    arena->used_total = 0;
}

void kiln__arena_destroy(kiln__arena *arena) {
    free_chain(arena, arena->blocks);
    arena->blocks = NULL;
    arena->used_total = 0;
}
