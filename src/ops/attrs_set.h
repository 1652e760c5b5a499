/* SPDX-License-Identifier: Apache-2.0 */
/* A set of distinct op attributes: the same pointer for attributes of the same kind whose
 * bytes (the part of a kiln__attrs the kind uses, kiln__attrs_size) are equal. A module
 * keeps one copy of its ops' equal attributes (an unrolled loop's slices, broadcasts and
 * constants: one each instead of one per step), a CPU executable one of its ops'. Shared
 * attributes are immutable: whoever changes an op's attributes takes a copy of its own
 * first (kiln__op_attrs_mut). The copies come from the owner's memory (an arena), the
 * table from the ctx's allocator. Bytes that differ only in padding or in dimensions past
 * a count make two entries, never a wrong match. Not thread-safe. */
#ifndef KILN_OPS_ATTRS_SET_H
#define KILN_OPS_ATTRS_SET_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/ctx.h"
#include "ops/attrs.h"

typedef struct kiln__attrs_set_slot {
    uint64_t hash; /* of kind and bytes; 0 only for an empty slot */
    const kiln__attrs *attrs;
    kiln_op kind;
} kiln__attrs_set_slot;

typedef struct kiln__attrs_set {
    kiln_ctx *cx;                /* the table's allocator */
    kiln__attrs_set_slot *slots; /* by hash: `first` while the set is small */
    size_t n, cap;
    kiln__attrs_set_slot first[16]; /* no allocation for a small program */
} kiln__attrs_set;

/* Where the copies of new attributes come from: `size` bytes aligned to `align`, or NULL. */
typedef void *(*kiln__attrs_alloc_fn)(void *user, size_t size, size_t align);

/* An empty set whose table (past its first 16 entries) comes from cx's allocator. */
void kiln__attrs_set_init(kiln__attrs_set *s, kiln_ctx *cx);
/* The set's copy of the attributes `a` of an op of `kind`, made with alloc the first time
 * they are seen. NULL when out of memory (RESOURCE_EXHAUSTED in the ctx for the table;
 * alloc reports its own). */
const kiln__attrs *kiln__attrs_set_intern(kiln__attrs_set *s, kiln_op kind, const kiln__attrs *a,
                                          kiln__attrs_alloc_fn alloc, void *user);
/* Frees the table (not the copies, which belong to the owner's memory). */
void kiln__attrs_set_free(kiln__attrs_set *s);

#endif
