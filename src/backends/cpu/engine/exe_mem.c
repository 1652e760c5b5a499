/* SPDX-License-Identifier: Apache-2.0 */
/* A CPU executable's memory (exe.h): blocks from the compiling ctx's allocator that live
 * as long as the executable, filled front to back, for everything compiling makes (the
 * blocks, the kernels, the plan). */
#include <string.h>

#include "backends/cpu/engine/exe.h"
#include "base/alloc.h"

#define XMEM_BLOCK 16384

struct kiln__xmem_block {
    kiln__xmem_block *next;
    size_t size, used;
    _Alignas(64) unsigned char data[];
};

static size_t align_up(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }

void *kiln__cpu_exe_alloc_raw(kiln_ctx *cx, kiln__cpu_exe *exe, size_t size, size_t align) {
    if (size == 0) size = 1;
    kiln__xmem_block *b = exe->mem;
    if (b) {
        size_t off = align_up(b->used, align);
        if (off <= b->size && size <= b->size - off) {
            b->used = off + size;
            return b->data + off;
        }
    }
    size_t data = size + align > XMEM_BLOCK ? size + align : XMEM_BLOCK;
    kiln__xmem_block *nb = kiln__raw_alloc(&exe->allocator, sizeof *nb + data, 64);
    if (!nb) {
        kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "kiln_compile: out of memory");
        return NULL;
    }
    nb->next = exe->mem;
    nb->size = data;
    nb->used = size;
    exe->mem = nb;
    return nb->data;
}

void *kiln__cpu_exe_alloc(kiln_ctx *cx, kiln__cpu_exe *exe, size_t size, size_t align) {
    void *p = kiln__cpu_exe_alloc_raw(cx, exe, size, align);
    if (p) memset(p, 0, size ? size : 1);
    return p;
}

void kiln__cpu_exe_free_mem(kiln__cpu_exe *exe) {
    for (kiln__xmem_block *b = exe->mem; b;) {
        kiln__xmem_block *next = b->next;
        kiln__raw_free(&exe->allocator, b, sizeof *b + b->size);
        b = next;
    }
    exe->mem = NULL;
}
