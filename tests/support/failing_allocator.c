/* SPDX-License-Identifier: Apache-2.0 */
#define _POSIX_C_SOURCE 200809L
#include "failing_allocator.h"

#include <stdlib.h>
#include <string.h>

/* A header before each block records its size, so a free with the wrong size is caught. */
#define HEADER 64

static void *fa_alloc(void *user, size_t size, size_t alignment) {
    failing_allocator *fa = user;
    if (fa->fail_after >= 0 && fa->allocations >= fa->fail_after) {
        fa->failures++;
        if (fa->fail_once) fa->fail_after = -1;
        return NULL;
    }
    if (alignment > HEADER) abort(); /* kiln never asks for more than this here */
    void *p = NULL;
    if (posix_memalign(&p, HEADER, size + HEADER) != 0) return NULL;
    memcpy(p, &size, sizeof size);
    fa->allocations++;
    fa->live_blocks++;
    fa->live_bytes += (int64_t)size;
    return (char *)p + HEADER;
}

static void fa_free(void *user, void *ptr, size_t size) {
    failing_allocator *fa = user;
    char *base = (char *)ptr - HEADER;
    size_t recorded;
    memcpy(&recorded, base, sizeof recorded);
    if (recorded != size) abort(); /* a free with the wrong size is a kiln bug */
    fa->frees++;
    fa->live_blocks--;
    fa->live_bytes -= (int64_t)size;
    free(base);
}

void failing_allocator_init(failing_allocator *fa, int64_t fail_after) {
    memset(fa, 0, sizeof *fa);
    fa->fail_after = fail_after;
    fa->allocator = (kiln_allocator){.alloc = fa_alloc, .free = fa_free, .user = fa};
}

kiln_ctx *failing_allocator_ctx(failing_allocator *fa) {
    failing_allocator_init(fa, -1);
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &fa->allocator;
    kiln_ctx *cx = NULL;
    return kiln_ctx_create(&o, &cx) == KILN_OK ? cx : NULL;
}
