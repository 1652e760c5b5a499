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
    if (t->kind == KILN__KIND_TUPLE && t->tuple)
        for (int32_t i = 0; i < t->tuple->n; i++)
            h = (h ^ type_hash(&t->tuple->elems[i])) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

bool kiln__type_equal(const kiln__type *a, const kiln__type *b) {
    if (a == b) return true;
    if (a->dtype != b->dtype || a->kind != b->kind || a->shape.rank != b->shape.rank) return false;
    for (int32_t d = 0; d < a->shape.rank; d++)
        if (a->shape.dims[d] != b->shape.dims[d]) return false;
    if (a->kind != KILN__KIND_TUPLE) return true;
    int32_t na = a->tuple ? a->tuple->n : 0, nb = b->tuple ? b->tuple->n : 0;
    if (na != nb) return false;
    for (int32_t i = 0; i < na; i++)
        if (!kiln__type_equal(&a->tuple->elems[i], &b->tuple->elems[i])) return false;
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
        if (kiln__type_equal(slots[i], t)) return slots[i];
    kiln__type *copy = alloc(user, sizeof *copy, _Alignof(kiln__type));
    if (!copy) return NULL;
    memset(copy, 0, sizeof *copy);
    copy->dtype = t->dtype;
    copy->kind = t->kind;
    copy->shape.rank = t->shape.rank;
    for (int32_t d = 0; d < t->shape.rank; d++)
        copy->shape.dims[d] = t->shape.dims[d];
    if (t->kind == KILN__KIND_TUPLE && t->tuple) {
        /* the elements in the owner's memory too, each element interned (nested tuples) */
        int32_t n = t->tuple->n;
        kiln__tuple_type *elems =
            alloc(user, sizeof *elems + (size_t)n * sizeof elems->elems[0], _Alignof(kiln__type));
        if (!elems) return NULL;
        elems->n = n;
        for (int32_t k = 0; k < n; k++) {
            const kiln__type *e = kiln__type_set_intern(s, &t->tuple->elems[k], alloc, user);
            if (!e) return NULL;
            elems->elems[k] = *e;
        }
        copy->tuple = elems;
        /* the table may have grown while the elements went in: find the slot again */
        slots = table(s);
        i = (size_t)type_hash(t) & (s->cap - 1);
        while (slots[i])
            i = (i + 1) & (s->cap - 1);
    }
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
