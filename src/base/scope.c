/* SPDX-License-Identifier: Apache-2.0 */
#include "base/scope.h"

#include "base/alloc.h"
#include "base/ctx_internal.h"

void kiln__scope_init(kiln__scope *s, kiln__scope *outer) {
    s->head.prev = s->head.next = &s->head;
    s->head.scope = s;
    s->head.drop = NULL;
    s->outer = outer;
}

static void link_into(kiln__scope *s, kiln__owned *node) {
    node->scope = s;
    node->prev = s->head.prev;
    node->next = &s->head;
    s->head.prev->next = node;
    s->head.prev = node;
}

void kiln__owned_unlink(kiln__owned *node) {
    if (!node->scope) return;
    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->prev = node->next = NULL;
    node->scope = NULL;
}

void kiln__scope_adopt(kiln_ctx *cx, kiln__owned *node) {
    kiln__owned_unlink(node);
    link_into(cx->scope, node);
}

void kiln__scope_adopt_root(kiln_ctx *cx, kiln__owned *node) {
    kiln__owned_unlink(node);
    link_into(&cx->root_scope, node);
}

_Bool kiln__scope_owns_innermost(const kiln_ctx *cx, const kiln__owned *node) {
    return node->scope == cx->scope;
}

void kiln__scope_move_outer(kiln_ctx *cx, kiln__owned *node) {
    kiln__scope *outer = cx->scope->outer;
    kiln__owned_unlink(node);
    if (outer) link_into(outer, node);
}

void kiln__scope_drain(kiln__scope *s) {
    /* Take from the front until empty: a drop frees only its own object. */
    while (s->head.next != &s->head) {
        kiln__owned *node = s->head.next;
        kiln__owned_unlink(node);
        node->drop(node);
    }
}

kiln_status kiln_scope_begin(kiln_ctx *cx) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln__scope *s = kiln__alloc(cx, sizeof *s, _Alignof(kiln__scope), "kiln_scope_begin: scope");
    if (!s) return KILN_RESOURCE_EXHAUSTED;
    kiln__scope_init(s, cx->scope);
    cx->scope = s;
    cx->scope_depth++;
    return KILN_OK;
}

kiln_status kiln_scope_end(kiln_ctx *cx) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (cx->scope_depth == 0)
        return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                                  "kiln_scope_end: no open scope (every kiln_scope_end needs a "
                                  "kiln_scope_begin)");
    kiln__scope *s = cx->scope;
    kiln__scope_drain(s);
    cx->scope = s->outer;
    cx->scope_depth--;
    kiln__free(cx, s, sizeof *s);
    return KILN_OK;
}

int kiln_scope_depth(const kiln_ctx *cx) { return cx ? cx->scope_depth : 0; }
