/* SPDX-License-Identifier: Apache-2.0 */
/* Interned types (type_set.h). */
#include "ops/type_set.h"

#include <string.h>

#include "base/alloc.h"

static uint64_t type_hash(const kiln__type *t) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)t->dtype ^ ((uint64_t)t->kind << 32);
    h = (h ^ (uint64_t)t->shape.rank) * 0xff51afd7ed558ccdull;
    for (int32_t d = 0; d < t->shape.rank; d++)
        h = (h ^ (uint64_t)t->shape.dims[d]) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

static bool type_same(const kiln__type *a, const kiln__type *b) {
    if (a->dtype != b->dtype || a->kind != b->kind || a->shape.rank != b->shape.rank)
        return false;
    for (int32_t d = 0; d < a->shape.rank; d++)
        if (a->shape.dims[d] != b->shape.dims[d]) return false;
    return true;
}

void kiln__type_set_init(kiln__type_set *s, kiln_ctx *cx) {
    memset(s, 0, sizeof *s);
    s->cx = cx;
    s->cap = sizeof s->first / sizeof s->first[0];
}

static const kiln__type **table(kiln__type_set *s) { return s->slots ? s->slots : s->first; }

static bool grow(kiln__type_set *s) {
    size_t cap = s->cap * 2;
    const kiln__type **t = kiln__calloc(s->cx, cap * sizeof *t, _Alignof(void *), "types");
    if (!t) return false;
    const kiln__type **old = table(s);
    for (size_t i = 0; i < s->cap; i++) {
        if (!old[i]) continue;
        size_t j = (size_t)type_hash(old[i]) & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = old[i];
    }
    if (s->slots) kiln__free(s->cx, s->slots, s->cap * sizeof *s->slots);
    s->slots = t;
    s->cap = cap;
    return true;
}

const kiln__type *kiln__type_set_intern(kiln__type_set *s, const kiln__type *t,
                                        kiln__type_alloc_fn alloc, void *user) {
    if ((s->n + 1) * 2 > s->cap && !grow(s)) return NULL;
    const kiln__type **slots = table(s);
    size_t i = (size_t)type_hash(t) & (s->cap - 1);
    for (; slots[i]; i = (i + 1) & (s->cap - 1))
        if (type_same(slots[i], t)) return slots[i];
    kiln__type *copy = alloc(user, sizeof *copy, _Alignof(kiln__type));
    if (!copy) return NULL;
    memset(copy, 0, sizeof *copy);
    copy->dtype = t->dtype;
    copy->kind = t->kind;
    copy->shape.rank = t->shape.rank;
    for (int32_t d = 0; d < t->shape.rank; d++)
        copy->shape.dims[d] = t->shape.dims[d];
    slots[i] = copy;
    s->n++;
    return copy;
}

void kiln__type_set_free(kiln__type_set *s) {
    if (s->slots) kiln__free(s->cx, s->slots, s->cap * sizeof *s->slots);
    s->slots = NULL;
    s->n = 0;
    s->cap = sizeof s->first / sizeof s->first[0];
}
