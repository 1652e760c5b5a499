/* SPDX-License-Identifier: Apache-2.0 */
/* Building and owning IR. */
#include "ir/ir.h"

#include <string.h>

#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "ops/custom_call.h"

kiln_module *kiln__module_new(kiln_ctx *cx, const char *name) {
    kiln_module *m = kiln__calloc(cx, sizeof *m, _Alignof(kiln_module), "module");
    if (!m) return NULL;
    atomic_init(&m->refs, 1);
    m->cx = cx;
    kiln__arena_init(&m->arena, cx, 16384);
    kiln__arena_init(&m->node_arena, cx, 4096);
    kiln__type_set_init(&m->types, cx);
    kiln__attrs_set_init(&m->attrs, cx);
    const char *n = name ? name : "kiln";
    m->name = kiln__arena_strndup(&m->arena, n, strlen(n));
    if (!m->name) {
        kiln__arena_destroy(&m->arena);
        kiln__free(cx, m, sizeof *m);
        return NULL;
    }
    return m;
}

kiln_module *kiln_module_retain(kiln_module *m) {
    if (m) atomic_fetch_add(&m->refs, 1);
    return m;
}

void kiln_module_release(kiln_module *m) {
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1) return;
    kiln_ctx *cx = m->cx;
    for (int32_t i = 0; i < m->n_constants; i++)
        kiln_tensor_release(m->constants[i]);
    kiln__free(cx, m->constants, (size_t)m->cap_constants * sizeof *m->constants);
    kiln__free(cx, m->funcs, (size_t)m->cap_funcs * sizeof *m->funcs);
    kiln__type_set_free(&m->types);
    kiln__attrs_set_free(&m->attrs);
    kiln__arena_destroy(&m->arena);
    kiln__arena_destroy(&m->node_arena);
    kiln__free(cx, m, sizeof *m);
}

/* Grows an array allocated with the ctx's allocator to hold at least need items. */
static bool grow(kiln_ctx *cx, void **items, int32_t *cap, int32_t need, size_t item,
                 const char *what) {
    if (need <= *cap) return true;
    int32_t new_cap = *cap ? *cap * 2 : 8;
    while (new_cap < need)
        new_cap *= 2;
    void *p = kiln__alloc(cx, (size_t)new_cap * item, 16, what);
    if (!p) return false;
    if (*items) {
        memcpy(p, *items, (size_t)*cap * item);
        kiln__free(cx, *items, (size_t)*cap * item);
    }
    *items = p;
    *cap = new_cap;
    return true;
}

kiln__func *kiln__module_add_func(kiln_module *m, const char *name, bool is_public) {
    if (!grow(m->cx, (void **)&m->funcs, &m->cap_funcs, m->n_funcs + 1, sizeof *m->funcs,
              "module functions"))
        return NULL;
    kiln__func *f = kiln__arena_alloc(&m->arena, sizeof *f, _Alignof(kiln__func));
    if (!f) return NULL;
    memset(f, 0, sizeof *f);
    f->name = kiln__arena_strndup(&m->arena, name, strlen(name));
    f->is_public = is_public;
    f->body = kiln__block_new(m, NULL);
    if (!f->name || !f->body) return NULL;
    m->funcs[m->n_funcs++] = f;
    return f;
}

kiln__block *kiln__block_new(kiln_module *m, kiln__ir_op *parent) {
    kiln__block *b = kiln__arena_alloc(&m->arena, sizeof *b, _Alignof(kiln__block));
    if (!b) return NULL;
    memset(b, 0, sizeof *b);
    b->parent = parent;
    return b;
}

/* ---- interned types ------------------------------------------------------------------ */

static void *arena_alloc(void *arena, size_t size, size_t align) {
    return kiln__arena_alloc(arena, size, align);
}

const kiln__type *kiln__module_type(kiln_module *m, const kiln__type *t) {
    return kiln__type_set_intern(&m->types, t, arena_alloc, &m->arena);
}

bool kiln__value_set_type(kiln_module *m, kiln__value *v, const kiln__type *t) {
    const kiln__type *i = kiln__module_type(m, t);
    if (!i) return false;
    v->type = i;
    return true;
}

/* Block arguments are few: grow by reallocating in the arena. */
kiln__value *kiln__block_add_arg(kiln_module *m, kiln__block *block, kiln__type type) {
    kiln__value *v = kiln__arena_alloc(&m->node_arena, sizeof *v, _Alignof(kiln__value));
    kiln__value **args =
        kiln__arena_alloc(&m->arena, (size_t)(block->n_args + 1) * sizeof *args, _Alignof(void *));
    if (!v || !args) return NULL;
    memset(v, 0, sizeof *v);
    if (!(v->type = kiln__module_type(m, &type))) return NULL;
    v->block = block;
    v->index = block->n_args;
    if (block->n_args) memcpy(args, block->args, (size_t)block->n_args * sizeof *args);
    args[block->n_args++] = v;
    block->args = args;
    return v;
}

/* Links op into b's list of ops before `at`, or last when at is NULL. */
static void link_before(kiln__block *b, kiln__ir_op *op, kiln__ir_op *at) {
    op->block = b;
    op->next = at;
    op->prev = at ? at->prev : b->last;
    if (op->prev)
        op->prev->next = op;
    else
        b->first = op;
    if (at)
        at->prev = op;
    else
        b->last = op;
    b->n_ops++;
}

kiln__ir_op *kiln__block_append(kiln_module *m, kiln__block *block, kiln_op kind,
                                const kiln__attrs *attrs, kiln__value *const *operands,
                                int32_t n_operands, const kiln__type *result_types,
                                int32_t n_results, int32_t n_regions) {
    kiln__arena *a = &m->arena;
    kiln__ir_op *op = kiln__arena_alloc(&m->node_arena, sizeof *op, _Alignof(kiln__ir_op));
    if (!op) return NULL;
    memset(op, 0, sizeof *op);
    op->kind = kind;
    /* Attributes the op cannot change are interned (one copy of equal ones); those of ops
     * with regions or of calls (records that transforms attach) are its own. */
    kiln__attrs local;
    const kiln__attrs *from = attrs;
    if (!attrs || attrs->regions) { /* never keep a caller's array */
        if (attrs)
            kiln__attrs_copy(&local, attrs, kind);
        else
            memset(&local, 0, kiln__attrs_size(kind));
        local.regions = NULL;
        from = &local;
    }
    if (n_regions == 0 && kind != KILN_OP_CALL) {
        op->attrs = kiln__attrs_set_intern(&m->attrs, kind, from, arena_alloc, a);
        op->attrs_shared = true;
    } else {
        kiln__attrs *own = kiln__arena_alloc(a, kiln__attrs_size(kind), _Alignof(kiln__attrs));
        if (own) kiln__attrs_copy(own, from, kind);
        op->attrs = own;
    }
    if (!op->attrs) return NULL;
    op->block = block;
    op->n_operands = n_operands;
    op->n_results = n_results;
    op->n_regions = n_regions;
    op->operands = kiln__arena_alloc(a, (size_t)(n_operands ? n_operands : 1) * sizeof(void *),
                                     _Alignof(void *));
    op->results = kiln__arena_alloc(a, (size_t)(n_results ? n_results : 1) * sizeof(void *),
                                    _Alignof(void *));
    op->regions = kiln__arena_alloc(a, (size_t)(n_regions ? n_regions : 1) * sizeof(void *),
                                    _Alignof(void *));
    if (!op->operands || !op->results || !op->regions) return NULL;
    memset(op->regions, 0, (size_t)(n_regions ? n_regions : 1) * sizeof(void *));
    for (int32_t i = 0; i < n_operands; i++) {
        op->operands[i] = operands[i];
        operands[i]->uses++;
    }
    for (int32_t i = 0; i < n_results; i++) {
        kiln__value *v = kiln__arena_alloc(&m->node_arena, sizeof *v, _Alignof(kiln__value));
        if (!v) return NULL;
        memset(v, 0, sizeof *v);
        if (!(v->type = kiln__module_type(m, &result_types[i]))) return NULL;
        v->def = op;
        v->index = i;
        op->results[i] = v;
    }
    link_before(block, op, NULL);
    return op;
}

void kiln__op_unlink(kiln__ir_op *op) {
    kiln__block *b = op->block;
    if (op->prev)
        op->prev->next = op->next;
    else
        b->first = op->next;
    if (op->next)
        op->next->prev = op->prev;
    else
        b->last = op->prev;
    b->n_ops--;
    op->prev = op->next = NULL;
}

bool kiln__value_defined_in(const kiln__value *v, const kiln__block *root) {
    for (const kiln__block *b = kiln__value_home(v); b; b = b->parent ? b->parent->block : NULL)
        if (b == root) return true;
    return false;
}

void kiln__op_move_before(kiln__ir_op *op, kiln__ir_op *at) {
    kiln__op_unlink(op);
    link_before(at->block, op, at);
}

kiln__attrs *kiln__op_attrs_mut(kiln_module *m, kiln__ir_op *op) {
    if (!op->attrs_shared) return (kiln__attrs *)op->attrs;
    kiln__attrs *a =
        kiln__arena_alloc(&m->arena, kiln__attrs_size(op->kind), _Alignof(kiln__attrs));
    if (!a) return NULL;
    kiln__attrs_copy(a, op->attrs, op->kind);
    op->attrs = a;
    op->attrs_shared = false;
    return a;
}

kiln__attrs *kiln__op_set_kind(kiln_module *m, kiln__ir_op *op, kiln_op kind) {
    size_t have = kiln__attrs_size(op->kind), need = kiln__attrs_size(kind);
    kiln__attrs *a = op->attrs_shared ? NULL : (kiln__attrs *)op->attrs;
    if (!a || need > have) {
        a = kiln__arena_alloc(&m->arena, need, _Alignof(kiln__attrs));
        if (!a) return NULL;
        memcpy(a, op->attrs, offsetof(kiln__attrs, u));
    }
    memset(&a->u, 0, need - offsetof(kiln__attrs, u));
    op->attrs = a;
    op->attrs_shared = false;
    op->kind = kind;
    return a;
}

kiln_status kiln__block_set_results(kiln_module *m, kiln__block *block, kiln__value *const *values,
                                    int32_t n) {
    kiln__value **r =
        kiln__arena_alloc(&m->arena, (size_t)(n ? n : 1) * sizeof *r, _Alignof(void *));
    if (!r) return KILN_RESOURCE_EXHAUSTED;
    for (int32_t i = 0; i < n; i++) {
        r[i] = values[i];
        values[i]->uses++;
    }
    block->results = r;
    block->n_results = n;
    return KILN_OK;
}

kiln_status kiln__module_note(kiln_module *m, const char *text) {
    for (int32_t i = 0; i < m->n_notes; i++)
        if (strcmp(m->notes[i], text) == 0) return KILN_OK;
    if (m->n_notes == m->cap_notes) {
        int32_t cap = m->cap_notes ? 2 * m->cap_notes : 4;
        const char **grown =
            kiln__arena_alloc(&m->arena, (size_t)cap * sizeof *grown, _Alignof(char *));
        if (!grown)
            return kiln_ctx_set_error(m->cx, KILN_RESOURCE_EXHAUSTED, "out of memory (a note)");
        if (m->n_notes) memcpy(grown, m->notes, (size_t)m->n_notes * sizeof *grown);
        m->notes = grown;
        m->cap_notes = cap;
    }
    size_t n = strlen(text) + 1;
    char *copy = kiln__arena_alloc(&m->arena, n, 1);
    if (!copy) return kiln_ctx_set_error(m->cx, KILN_RESOURCE_EXHAUSTED, "out of memory (a note)");
    memcpy(copy, text, n);
    m->notes[m->n_notes++] = copy;
    return KILN_OK;
}

kiln_status kiln__module_copy_notes(kiln_module *dst, const kiln_module *src) {
    if (!src || dst == src) return KILN_OK;
    for (int32_t i = 0; i < src->n_notes; i++) {
        kiln_status s = kiln__module_note(dst, src->notes[i]);
        if (s != KILN_OK) return s;
    }
    return KILN_OK;
}

kiln_status kiln__module_keep_constant(kiln_module *m, kiln_tensor *t) {
    if (!grow(m->cx, (void **)&m->constants, &m->cap_constants, m->n_constants + 1,
              sizeof *m->constants, "module constants"))
        return KILN_RESOURCE_EXHAUSTED;
    m->constants[m->n_constants++] = kiln_tensor_retain(t);
    return KILN_OK;
}

/* ---- dead-code elimination ------------------------------------------------------------- */

static void unuse_block(kiln__block *b);

static void unuse_op(kiln__ir_op *op) {
    for (int32_t i = 0; i < op->n_operands; i++)
        op->operands[i]->uses--;
    for (int32_t r = 0; r < op->n_regions; r++)
        if (op->regions[r]) unuse_block(op->regions[r]);
}

static void unuse_block(kiln__block *b) {
    for (kiln__ir_op *op = b->first; op; op = op->next)
        unuse_op(op);
    for (int32_t i = 0; i < b->n_results; i++)
        b->results[i]->uses--;
}

/* One walk from the last op back suffices: an op's operands are defined before it (or
 * outside the block), so removing it can only make earlier ops dead, and those are still
 * ahead of the walk. */
static int32_t dce_block(kiln__block *b) {
    int32_t removed = 0;
    for (kiln__ir_op *op = b->last; op;) {
        kiln__ir_op *prev = op->prev;
        bool used = false;
        for (int32_t i = 0; i < op->n_results; i++)
            used |= op->results[i]->uses > 0;
        /* Every kiln op but the collectives is free of side effects (a collective must run
         * on every process), and custom_calls that say they have some; a while loop that
         * never ends is not an effect kiln keeps. */
        bool effects =
            kiln__op_has(op->kind, KILN_OPF_COLLECTIVE) ||
            (op->kind == KILN_OP_CUSTOM_CALL && kiln__custom_call_has_side_effect(op->attrs));
        if (!used && !effects) {
            unuse_op(op);
            kiln__op_unlink(op);
            removed++;
        } else {
            for (int32_t r = 0; r < op->n_regions; r++)
                if (op->regions[r]) removed += dce_block(op->regions[r]);
        }
        op = prev;
    }
    return removed;
}

int32_t kiln__module_dce(kiln_module *m) {
    int32_t removed = 0;
    for (int32_t f = 0; f < m->n_funcs; f++)
        removed += dce_block(m->funcs[f]->body);
    return removed;
}

kiln_status kiln_module_info_get(kiln_ctx *cx, const kiln_module *m, kiln_module_info *out) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!m) return kiln__null_argument(cx, "kiln_module_info_get", "module");
    if (!out) return kiln__null_argument(cx, "kiln_module_info_get", "out_info");
    const kiln__block *body = m->funcs[0]->body;
    int32_t n_ops = 0;
    for (const kiln__ir_op *op = body->first; op; op = op->next)
        n_ops++;
    const kiln__func *f = m->funcs[0];
    kiln_module *mm = (kiln_module *)m; /* the arrays are made once, into the arena */
    if (!mm->info_args || mm->info_n_args != body->n_args ||
        mm->info_n_results != body->n_results) {
        size_t na = (size_t)(body->n_args ? body->n_args : 1),
               nr = (size_t)(body->n_results ? body->n_results : 1);
        kiln_arg_spec *args =
            kiln__arena_alloc(&mm->arena, na * sizeof *args, _Alignof(kiln_arg_spec));
        kiln_arg_spec *results =
            kiln__arena_alloc(&mm->arena, nr * sizeof *results, _Alignof(kiln_arg_spec));
        if (!args || !results)
            return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED,
                                      "kiln_module_info_get: out of memory");
        for (int32_t i = 0; i < body->n_args; i++)
            args[i] = (kiln_arg_spec){.dtype = body->args[i]->type->dtype,
                                      .shape = body->args[i]->type->shape,
                                      .name = f->arg_names ? f->arg_names[i] : NULL,
                                      .donate = m->donated && m->donated[i]};
        for (int32_t r = 0; r < body->n_results; r++)
            results[r] = (kiln_arg_spec){.dtype = body->results[r]->type->dtype,
                                         .shape = body->results[r]->type->shape,
                                         .name = f->result_names ? f->result_names[r] : NULL};
        mm->info_args = args;
        mm->info_results = results;
        mm->info_n_args = body->n_args;
        mm->info_n_results = body->n_results;
    }
    *out = (kiln_module_info){.n_args = body->n_args,
                              .n_results = body->n_results,
                              .donated = m->donated,
                              .preserved = m->preserved,
                              .aliases = m->aliases,
                              .n_ops = n_ops,
                              .args = mm->info_args,
                              .results = mm->info_results,
                              .num_replicas = m->num_replicas > 0 ? m->num_replicas : 1,
                              .num_partitions = m->num_partitions > 0 ? m->num_partitions : 1};
    return KILN_OK;
}

void kiln__ir_bind_regions(const kiln__ir_op *op, kiln__attrs *attrs, kiln_region *storage,
                           kiln_region_fn fn) {
    kiln__attrs_copy(attrs, op->attrs, op->kind);
    for (int32_t i = 0; i < op->n_regions; i++) {
        const kiln_region *builtin = i < 2 ? op->attrs->region[i] : NULL;
        storage[i] = builtin ? *builtin : (kiln_region){fn, op->regions[i]};
    }
    attrs->regions = op->n_regions ? storage : NULL;
    attrs->n_regions = op->n_regions;
}
