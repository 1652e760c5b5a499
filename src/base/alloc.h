/* SPDX-License-Identifier: Apache-2.0 */
/* Internal allocation helpers: every host allocation goes through a kiln_allocator. */
#ifndef KILN_BASE_ALLOC_H
#define KILN_BASE_ALLOC_H

#include <stddef.h>

#include "kiln/alloc.h"
#include "kiln/ctx.h"

/* The alignment of tensor data: a cache line, and enough for any vector unit. */
#define KILN_DATA_ALIGNMENT 64

/* A transparent huge page, and the size from which the default allocator starts blocks on
 * one (and the runtime advises huge pages for results): below four huge pages the advice
 * saves little. */
#define KILN_HUGE_PAGE ((size_t)2 << 20)
#define KILN_HUGE_BLOCK (4 * KILN_HUGE_PAGE)

/* Asks for transparent huge pages over the whole 2 MiB pages inside a buffer of at least
 * KILN_HUGE_BLOCK bytes (a no-op for smaller ones, for NULL, and where the system has no
 * such advice): a fresh buffer then faults in 2 MiB at a time instead of 4 KiB (a 40 MB
 * result: 20 faults, not 10,000). */
void kiln__advise_huge(void *data, size_t nbytes);

/* Allocates through `a`; NULL when out of memory or size is 0. Records nothing. */
void *kiln__raw_alloc(const kiln_allocator *a, size_t size, size_t alignment);
void kiln__raw_free(const kiln_allocator *a, void *ptr, size_t size);

/* Allocates through the ctx's allocator; on failure records RESOURCE_EXHAUSTED in the
 * ctx naming `what` and returns NULL. `size` 0 is an INTERNAL error. */
void *kiln__alloc(kiln_ctx *cx, size_t size, size_t alignment, const char *what);
/* Like kiln__alloc, zero-filled. */
void *kiln__calloc(kiln_ctx *cx, size_t size, size_t alignment, const char *what);
void kiln__free(kiln_ctx *cx, void *ptr, size_t size);

#endif
