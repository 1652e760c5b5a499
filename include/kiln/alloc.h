/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/alloc.h: the host allocator a user can inject.
 *
 * Every host allocation kiln makes (the ctx itself, tensor objects, tensor data, internal
 * compile data) goes through the allocator of the ctx that made it. Leave it NULL in the
 * options to use the C library (posix_memalign/free). Tensor data is asked for in size
 * classes (whole pages above 256 KiB) and kept by the ctx's buffer cache when released
 * (kiln/ctx.h), so the allocator sees fewer, rounded-up requests, and memory it handed out
 * comes back at kiln_ctx_trim, at kiln_ctx_release, or when it fails an allocation (the
 * cache then frees what it keeps and asks once more).
 *
 *     static void *my_alloc(void *user, size_t size, size_t align) { ... }
 *     static void my_free(void *user, void *ptr, size_t size) { ... }
 *     kiln_allocator a = { .alloc = my_alloc, .free = my_free, .user = &my_pool };
 *     kiln_ctx_options o = kiln_ctx_options_default();
 *     o.allocator = &a;            // copied: it need not outlive kiln_ctx_create
 */
#ifndef KILN_ALLOC_H
#define KILN_ALLOC_H

#include <stddef.h>

#include "kiln/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_allocator {
    /* Returns `size` bytes aligned to `alignment` (a power of two, at most 4096), or NULL
     * when out of memory. `size` is never 0. May be called from any thread that uses the
     * ctx's objects, so it must be thread-safe if they are shared across threads. */
    void *(*alloc)(void *user, size_t size, size_t alignment);
    /* Frees a block from `alloc`; `size` is the size it was allocated with. Never NULL. */
    void (*free)(void *user, void *ptr, size_t size);
    /* Passed back to both functions. The memory it points to must outlive every object
     * allocated through this allocator. */
    void *user;
} kiln_allocator;

/* The default allocator (posix_memalign/free). Returns a pointer to a static object. */
KILN_API const kiln_allocator *kiln_allocator_default(void);

#ifdef __cplusplus
}
#endif

#endif
