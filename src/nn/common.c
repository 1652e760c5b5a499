/* SPDX-License-Identifier: Apache-2.0 */
/* Argument checks, messages and scope handling shared by the nn files. */
#include <stdarg.h>
#include <stdio.h>

#include "nn_internal.h"

bool kiln__nn_arg(kiln_ctx *cx, const char *fn, const char *arg, const kiln_tensor *t) {
    if (t) return kiln_ctx_status(cx) == KILN_OK;
    if (kiln_ctx_status(cx) == KILN_OK)
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: %s is NULL", fn, arg);
    return false;
}

kiln_tensor *kiln__nn_fail(kiln_ctx *cx, const char *fn, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: %s", fn, msg);
    return NULL;
}

bool kiln__nn_not_null(kiln_ctx *cx, const char *fn, int n, const void *const *ptrs,
                       const char *const *names) {
    for (int i = 0; i < n; i++)
        if (!ptrs[i]) {
            kiln__nn_fail(cx, fn, "%s is NULL", names[i]);
            return false;
        }
    return true;
}

const char *kiln__nn_shape_str(const kiln_tensor *t, char *buf, size_t size) {
    const kiln_shape *s = kiln_tensor_shape(t);
    if (!s) {
        snprintf(buf, size, "?");
        return buf;
    }
    kiln_shape_format(s, buf, size);
    return buf;
}

bool kiln__nn_begin(kiln_ctx *cx) { return kiln_scope_begin(cx) == KILN_OK; }

kiln_tensor *kiln__nn_end(kiln_ctx *cx, kiln_tensor *r) {
    if (kiln_ctx_status(cx) != KILN_OK) r = NULL;
    if (r) r = kiln_scope_escape(cx, r);
    kiln_scope_end(cx);
    return kiln_ctx_status(cx) == KILN_OK ? r : NULL;
}

kiln_status kiln__nn_end_n(kiln_ctx *cx, kiln_tensor **const *outs, int n) {
    for (int i = 0; i < n; i++) {
        if (!outs[i] || !*outs[i]) continue;
        if (kiln_ctx_status(cx) == KILN_OK)
            *outs[i] = kiln_scope_escape(cx, *outs[i]);
        else
            *outs[i] = NULL;
    }
    kiln_scope_end(cx);
    if (kiln_ctx_status(cx) != KILN_OK)
        for (int i = 0; i < n; i++)
            if (outs[i]) *outs[i] = NULL;
    return kiln_ctx_status(cx);
}

void *kiln__nn_alloc(kiln_ctx *cx, const char *fn, size_t size) {
    const kiln_allocator *a = kiln_ctx_allocator(cx);
    void *p = a->alloc(a->user, size ? size : 1, 16);
    if (!p)
        kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory (%zu bytes)", fn, size);
    return p;
}

void kiln__nn_free(kiln_ctx *cx, void *p, size_t size) {
    if (!p) return;
    const kiln_allocator *a = kiln_ctx_allocator(cx);
    a->free(a->user, p, size ? size : 1);
}

static int32_t walk(const kiln_tree_def *def, char *base, kiln_tensor **slots[], int32_t n) {
    for (int32_t i = 0; i < def->n_fields; i++) {
        const kiln_tree_field *f = &def->fields[i];
        int32_t count = f->count > 0 ? f->count : 1;
        for (int32_t e = 0; e < count; e++) {
            char *p = base + f->offset + (size_t)e * f->size;
            if (f->kind == KILN_TREE_TENSOR) {
                if (slots) slots[n] = (kiln_tensor **)(void *)p;
                n++;
            } else if (f->kind == KILN_TREE_SUBTREE) {
                n = walk(f->def, p, slots, n);
            }
        }
    }
    return n;
}

bool kiln__nn_leaf_slots(kiln_ctx *cx, const char *fn, const kiln_tree_def *def, void *tree,
                         kiln_tensor ****out_slots, int32_t *out_n) {
    *out_slots = NULL;
    *out_n = 0;
    int32_t n = walk(def, tree, NULL, 0);
    kiln_tensor ***slots = kiln__nn_alloc(cx, fn, (size_t)n * sizeof *slots);
    if (!slots) return false;
    walk(def, tree, slots, 0);
    *out_slots = slots;
    *out_n = n;
    return true;
}
