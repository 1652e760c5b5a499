/* SPDX-License-Identifier: Apache-2.0 */
/* A set of distinct value types (dtype and the dimensions up to the rank): the same
 * pointer for equal types. A module interns its values' types in one (so a value holds a
 * pointer and types compare by address), a CPU executable its slots' types. The copies
 * come from the owner's memory (an arena), the table from the ctx's allocator. Not
 * thread-safe. */
#ifndef KILN_OPS_TYPE_SET_H
#define KILN_OPS_TYPE_SET_H

#include <stddef.h>

#include "kiln/ctx.h"
#include "ops/infer.h"

typedef struct kiln__type_set {
    kiln_ctx *cx;             /* the table's allocator */
    const kiln__type **slots; /* by hash; NULL while the table is `first` */
    size_t n, cap;
    const kiln__type *first[16]; /* the table while it is small: no allocation */
} kiln__type_set;

/* Where the copies of new types come from: `size` bytes aligned to `align`, or NULL. */
typedef void *(*kiln__type_alloc_fn)(void *user, size_t size, size_t align);

void kiln__type_set_init(kiln__type_set *s, kiln_ctx *cx);
/* The set's copy of t (the dimensions past its rank zeroed), made with alloc the first
 * time t is seen. NULL when out of memory (RESOURCE_EXHAUSTED in the ctx for the table;
 * alloc reports its own). */
const kiln__type *kiln__type_set_intern(kiln__type_set *s, const kiln__type *t,
                                        kiln__type_alloc_fn alloc, void *user);
/* Frees the table (not the copies, which belong to the owner's memory). */
void kiln__type_set_free(kiln__type_set *s);

#endif
