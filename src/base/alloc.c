#define _POSIX_C_SOURCE 200809L

#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "base/ctx_internal.h"

static void *libc_alloc(void *user, size_t size, size_t alignment) {
    (void)user;
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
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
