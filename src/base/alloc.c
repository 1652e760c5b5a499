/* SPDX-License-Identifier: Apache-2.0 */
#define _DEFAULT_SOURCE /* posix_memalign, madvise advice values */

#include "base/alloc.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/ctx_internal.h"

/* Blocks of at least KILN_HUGE_BLOCK bytes start on a 2 MiB boundary (a transparent huge
 * page), so that a huge-page advice on the block (the runtime gives one to executables'
 * large results) covers all of it but the tail: a 40 MB result at any 64-byte boundary
 * keeps ~550 4 KiB page faults at its two ends besides its 19 huge ones, ~1.3 ms on these
 * machines. The cost is at most 2 MiB of address space per block: glibc leaves the skipped
 * head untouched (or returns it to its free lists), so it takes no memory. */
static size_t block_alignment(size_t size, size_t alignment) {
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    if (size >= KILN_HUGE_BLOCK && alignment < KILN_HUGE_PAGE) alignment = KILN_HUGE_PAGE;
    return alignment;
}

static void *libc_alloc(void *user, size_t size, size_t alignment) {
    (void)user;
    alignment = block_alignment(size, alignment);
    /* malloc's own alignment suffices for most records, and it is glibc's fast path (its
     * per-thread cache), which posix_memalign bypasses. */
    if (alignment <= _Alignof(max_align_t)) return malloc(size);
    void *p = NULL;
    if (posix_memalign(&p, alignment, size) != 0) return NULL;
    return p;
}

static void libc_free(void *user, void *ptr, size_t size) {
    (void)user;
    (void)size;
    free(ptr);
}

static const kiln_allocator default_allocator = {
    .alloc = libc_alloc, .free = libc_free, .user = NULL};

void kiln__advise_huge(void *data, size_t nbytes) {
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = KILN_HUGE_PAGE;
    if (!data || nbytes < KILN_HUGE_BLOCK) return;
    uintptr_t begin = ((uintptr_t)data + huge - 1) & ~(huge - 1);
    uintptr_t end = ((uintptr_t)data + nbytes) & ~(huge - 1);
    if (end > begin) (void)madvise((void *)begin, end - begin, MADV_HUGEPAGE);
#else
    (void)data, (void)nbytes;
#endif
}

const kiln_allocator *kiln_allocator_default(void) { return &default_allocator; }

void *kiln__raw_alloc(const kiln_allocator *a, size_t size, size_t alignment) {
    if (size == 0) return NULL;
    return a->alloc(a->user, size, alignment);
}

void kiln__raw_free(const kiln_allocator *a, void *ptr, size_t size) {
    if (ptr) a->free(a->user, ptr, size);
}

void *kiln__alloc(kiln_ctx *cx, size_t size, size_t alignment, const char *what) {
    if (size == 0) {
        kiln_ctx_set_error(cx, KILN_INTERNAL, "internal: zero-byte allocation for %s", what);
        return NULL;
    }
    void *p = kiln__raw_alloc(&cx->allocator, size, alignment);
    if (!p)
        kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory allocating %zu bytes for %s",
                           size, what);
    return p;
}

void *kiln__calloc(kiln_ctx *cx, size_t size, size_t alignment, const char *what) {
    void *p = kiln__alloc(cx, size, alignment, what);
    if (p) memset(p, 0, size);
    return p;
}

void kiln__free(kiln_ctx *cx, void *ptr, size_t size) { kiln__raw_free(&cx->allocator, ptr, size); }
