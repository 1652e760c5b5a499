/* Interned op attributes (attrs_set.h). */
#include "ops/attrs_set.h"

#include <string.h>

#include "base/alloc.h"

struct kiln__attrs_set_slot {
    uint64_t hash; /* of kind and bytes; 0 only for an empty slot */
    const kiln__attrs *attrs;
    kiln_op kind;
};

static uint64_t attrs_hash(kiln_op kind, const kiln__attrs *a, size_t size) {
    const unsigned char *p = (const unsigned char *)a;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)kind;
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    for (; i < size; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    h ^= h >> 29;
    return h ? h : 1;
}

void kiln__attrs_set_init(kiln__attrs_set *s, kiln_ctx *cx) {
    memset(s, 0, sizeof *s);
    s->cx = cx;
}

static bool grow(kiln__attrs_set *s) {
    size_t cap = s->cap ? 2 * s->cap : 64;
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
    if (s->slots) kiln__free(s->cx, s->slots, s->cap * sizeof *s->slots);
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
    if (s->slots) kiln__free(s->cx, s->slots, s->cap * sizeof *s->slots);
    s->slots = NULL;
    s->n = s->cap = 0;
}
