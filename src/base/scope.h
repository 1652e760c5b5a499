/* SPDX-License-Identifier: Apache-2.0 */
/* Scopes: intrusive lists of objects a ctx scope owns one reference to.
 *
 * Base knows nothing of tensors: an owned object embeds a kiln__owned node whose `drop`
 * releases the scope's reference. Core's tensors use this. */
#ifndef KILN_BASE_SCOPE_H
#define KILN_BASE_SCOPE_H

#include "kiln/ctx.h"

typedef struct kiln__owned kiln__owned;
typedef struct kiln__scope kiln__scope;

struct kiln__owned {
    kiln__owned *prev, *next;
    kiln__scope *scope; /* NULL when no scope owns the object */
    void (*drop)(kiln__owned *self);
};

struct kiln__scope {
    kiln__owned head; /* sentinel of a circular list */
    kiln__scope *outer;
};

void kiln__scope_init(kiln__scope *s, kiln__scope *outer);

/* Hands the scope reference of `node` to the innermost scope of cx. */
void kiln__scope_adopt(kiln_ctx *cx, kiln__owned *node);
/* Links node into the ctx's root scope, which drops it when the ctx is released: for
 * state that lives as long as the ctx. */
void kiln__scope_adopt_root(kiln_ctx *cx, kiln__owned *node);

/* Removes node from its scope (if any) without dropping it. */
void kiln__owned_unlink(kiln__owned *node);

/* True when the innermost scope of cx owns node. */
_Bool kiln__scope_owns_innermost(const kiln_ctx *cx, const kiln__owned *node);

/* Moves node to the scope around the innermost one; at the outermost scope it is only
 * unlinked (the reference passes to the caller). */
void kiln__scope_move_outer(kiln_ctx *cx, kiln__owned *node);

/* Drops everything a scope owns and leaves it empty. */
void kiln__scope_drain(kiln__scope *s);

#endif
