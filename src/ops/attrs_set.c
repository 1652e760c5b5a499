/* SPDX-License-Identifier: Apache-2.0 */
/* Interned op attributes (attrs_set.h). */
#include "ops/attrs_set.h"

#include <string.h>

#include "base/alloc.h"

/* Four independent lanes of 8 bytes (a slice's 464 bytes hash in about a quarter of the
 * time one dependent chain takes: this runs for every op a trace appends). */
static uint64_t attrs_hash(kiln_op kind, const kiln__attrs *a, size_t size) {
    const unsigned char *p = (const unsigned char *)a;
    uint64_t h[4] = {0x9e3779b97f4a7c15ull ^ (uint64_t)kind, 0xc2b2ae3d27d4eb4full,
                     0x165667b19e3779f9ull, 0x27d4eb2f165667c5ull};
    size_t i = 0;
    for (; i + 32 <= size; i += 32)
        for (int l = 0; l < 4; l++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * (size_t)l, 8);
            h[l] = (h[l] ^ w) * 0xff51afd7ed558ccdull;
            h[l] ^= h[l] >> 32;
        }
    for (; i + 8 <= size; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h[0] = (h[0] ^ w) * 0xff51afd7ed558ccdull;
        h[0] ^= h[0] >> 32;
    }
    for (; i < size; i++)
        h[1] = (h[1] ^ p[i]) * 0x100000001b3ull;
    uint64_t r = (h[0] ^ (h[1] * 31) ^ (h[2] * 131) ^ (h[3] * 1031)) * 0x9e3779b97f4a7c15ull;
    r ^= r >> 29;
    return r ? r : 1;
}

void kiln__attrs_set_init(kiln__attrs_set *s, kiln_ctx *cx) {
    memset(s, 0, sizeof *s);
    s->cx = cx;
    s->slots = s->first;
    s->cap = sizeof s->first / sizeof s->first[0];
}

static bool grow(kiln__attrs_set *s) {
    size_t cap = 2 * s->cap;
    kiln__attrs_set_slot *t =
        kiln__calloc(s->cx, cap * sizeof *t, _Alignof(kiln__attrs_set_slot), "attributes");
    if (!t) return false;
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slots[i].hash) continue;
        size_t j = (size_t)s->slots[i].hash & (cap - 1);
        while (t[j].hash)
            j = (j + 1) & (cap - 1);
        t[j] = s->slots[i];
    }
    if (s->slots != s->first) kiln__free(s->cx, s->slots, s->cap * sizeof *s->slots);
    s->slots = t;
    s->cap = cap;
    return true;
}

const kiln__attrs *kiln__attrs_set_intern(kiln__attrs_set *s, kiln_op kind, const kiln__attrs *a,
                                          kiln__attrs_alloc_fn alloc, void *user) {
    if ((s->n + 1) * 2 > s->cap && !grow(s)) return NULL;
    size_t size = kiln__attrs_size(kind);
    uint64_t h = attrs_hash(kind, a, size);
    size_t i = (size_t)h & (s->cap - 1);
    for (; s->slots[i].hash; i = (i + 1) & (s->cap - 1)) {
        const kiln__attrs_set_slot *e = &s->slots[i];
        if (e->hash == h && e->kind == kind && memcmp(e->attrs, a, size) == 0) return e->attrs;
    }
    kiln__attrs *copy = alloc(user, size, _Alignof(kiln__attrs));
    if (!copy) return NULL;
    kiln__attrs_copy(copy, a, kind);
    s->slots[i] = (kiln__attrs_set_slot){.hash = h, .attrs = copy, .kind = kind};
    s->n++;
    return copy;
}

void kiln__attrs_set_free(kiln__attrs_set *s) {
    if (s->slots != s->first) kiln__free(s->cx, s->slots, s->cap * sizeof *s->slots);
    memset(s->first, 0, sizeof s->first);
    s->slots = s->first;
    s->n = 0;
    s->cap = sizeof s->first / sizeof s->first[0];
}
