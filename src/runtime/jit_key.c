/* SPDX-License-Identifier: Apache-2.0 */
/* The jit cache's layouts (where leaves live) and keys (call signatures). */
#include "runtime/jit_key.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "runtime/tree_internal.h"

/* Words before the leaves: device type, device id, and the counts (tree structure). */
#define KEY_HEADER 3

static void *key_alloc(const kiln_allocator *a, size_t size) {
    void *p = kiln__raw_alloc(a, size ? size : 1, 16);
    if (p) memset(p, 0, size ? size : 1);
    return p;
}

static void key_free(const kiln_allocator *a, void *p, size_t size) {
    kiln__raw_free(a, p, size ? size : 1);
}

static kiln_status out_of_memory(kiln_ctx *cx, const char *what) {
    return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory for %s", what);
}

/* ---- layouts ------------------------------------------------------------------------------ */

static void free_slots(const kiln_allocator *a, kiln__jit_slot *slots, int32_t n) {
    if (!slots) return;
    for (int32_t i = 0; i < n; i++)
        if (slots[i].path) key_free(a, slots[i].path, strlen(slots[i].path) + 1);
    key_free(a, slots, (size_t)n * sizeof *slots);
}

void kiln__jit_layout_free(const kiln_allocator *a, kiln__jit_layout *l) {
    free_slots(a, l->in_leaves, l->n_in);
    free_slots(a, l->out_leaves, l->n_out);
    free_slots(a, l->in_statics, l->n_in_statics);
    free_slots(a, l->out_statics, l->n_out_statics);
    *l = (kiln__jit_layout){0};
}

static char *copy_path(const kiln_allocator *a, const char *path) {
    size_t n = strlen(path);
    char *p = key_alloc(a, n + 1);
    if (p) memcpy(p, path, n + 1);
    return p;
}

kiln_status kiln__jit_layout_list(kiln_ctx *cx, const kiln_allocator *a, int32_t n_in,
                                  int32_t n_out, const char *const *arg_names,
                                  const bool *is_static, kiln__jit_layout *out) {
    kiln__jit_layout l = {.in_size = (size_t)n_in * sizeof(kiln_tensor *),
                          .out_size = (size_t)n_out * sizeof(kiln_tensor *),
                          .n_in = n_in,
                          .n_out = n_out};
    l.in_leaves = key_alloc(a, (size_t)n_in * sizeof *l.in_leaves);
    l.out_leaves = key_alloc(a, (size_t)n_out * sizeof *l.out_leaves);
    bool ok = l.in_leaves && l.out_leaves;
    for (int32_t i = 0; ok && i < n_in; i++) {
        l.in_leaves[i] = (kiln__jit_slot){.kind = KILN_TREE_TENSOR,
                                          .offset = (size_t)i * sizeof(kiln_tensor *),
                                          .size = sizeof(kiln_tensor *),
                                          .is_static = is_static && is_static[i]};
        l.n_static_leaves += l.in_leaves[i].is_static;
        if (arg_names && arg_names[i] && arg_names[i][0]) {
            l.in_leaves[i].path = copy_path(a, arg_names[i]);
            ok = l.in_leaves[i].path != NULL;
        }
    }
    for (int32_t i = 0; ok && i < n_out; i++)
        l.out_leaves[i] = (kiln__jit_slot){.kind = KILN_TREE_TENSOR,
                                           .offset = (size_t)i * sizeof(kiln_tensor *),
                                           .size = sizeof(kiln_tensor *)};
    if (!ok) {
        kiln__jit_layout_free(a, &l);
        return out_of_memory(cx, "a jit's argument list");
    }
    *out = l;
    return KILN_OK;
}

typedef struct collect {
    const kiln_allocator *a;
    kiln__jit_slot *leaves, *statics;
    bool failed;
} collect;

static bool collect_item(void *user, const kiln__tree_item *item) {
    collect *c = user;
    kiln__jit_slot *slot =
        item->kind == KILN_TREE_TENSOR ? &c->leaves[item->index] : &c->statics[item->index];
    *slot = (kiln__jit_slot){.kind = item->kind, .offset = item->offset, .size = item->size};
    slot->path = copy_path(c->a, item->path);
    if (!slot->path) c->failed = true;
    return !c->failed;
}

/* The slots of one descriptor. */
static kiln_status tree_slots(kiln_ctx *cx, const char *api, const char *which,
                              const kiln_allocator *a, const kiln_tree_def *def,
                              kiln__jit_slot **leaves, int32_t *n_leaves, kiln__jit_slot **statics,
                              int32_t *n_statics) {
    char err[512];
    if (!kiln__tree_validate(def, n_leaves, n_statics, err, sizeof err))
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: %s: invalid descriptor: %s", api,
                                  which, err);
    collect c = {.a = a};
    c.leaves = key_alloc(a, (size_t)*n_leaves * sizeof *c.leaves);
    c.statics = key_alloc(a, (size_t)*n_statics * sizeof *c.statics);
    *leaves = c.leaves;
    *statics = c.statics;
    if (!c.leaves || !c.statics) return out_of_memory(cx, "a jit's argument layout");
    kiln__tree_walk(def, true, collect_item, &c);
    if (c.failed) return out_of_memory(cx, "a jit's argument layout");
    return KILN_OK;
}

kiln_status kiln__jit_layout_tree(kiln_ctx *cx, const char *api, const kiln_allocator *a,
                                  const kiln_tree_def *in_def, const kiln_tree_def *out_def,
                                  kiln__jit_layout *out) {
    kiln__jit_layout l = {.in_size = in_def->size, .out_size = out_def->size};
    kiln_status s = tree_slots(cx, api, "in_def", a, in_def, &l.in_leaves, &l.n_in, &l.in_statics,
                               &l.n_in_statics);
    if (s == KILN_OK)
        s = tree_slots(cx, api, "out_def", a, out_def, &l.out_leaves, &l.n_out, &l.out_statics,
                       &l.n_out_statics);
    if (s != KILN_OK) {
        kiln__jit_layout_free(a, &l);
        return s;
    }
    *out = l;
    return KILN_OK;
}

void kiln__jit_arg_name(const kiln__jit_layout *l, int32_t i, char *buf, size_t size) {
    const char *path = l->in_leaves[i].path;
    const char *kind = l->in_leaves[i].is_static ? "static arg" : "arg";
    if (path)
        snprintf(buf, size, "%s %d '%s'", kind, (int)i, path);
    else
        snprintf(buf, size, "%s %d", kind, (int)i);
}

/* ---- keys --------------------------------------------------------------------------------- */

static uint64_t static_bits(const kiln_tree_static *v) {
    switch (v->kind) {
    case KILN_TREE_STATIC_INT: return (uint64_t)v->value.i;
    case KILN_TREE_STATIC_FLOAT: {
        uint64_t u;
        memcpy(&u, &v->value.f, sizeof u);
        return u;
    }
    default: return v->value.u;
    }
}

static kiln_tree_static static_from_bits(kiln_tree_kind kind, uint64_t bits) {
    kiln_tree_static v = {.kind = kind};
    if (kind == KILN_TREE_STATIC_INT)
        v.value.i = (int64_t)bits;
    else if (kind == KILN_TREE_STATIC_FLOAT)
        memcpy(&v.value.f, &bits, sizeof bits);
    else
        v.value.u = bits;
    return v;
}

kiln_status kiln__jit_key_build(kiln_ctx *cx, const kiln_allocator *a, const kiln__jit_layout *l,
                                kiln_device device, const void *in, kiln_tensor *const *args,
                                kiln__jit_key *out) {
    size_t n = KEY_HEADER + (size_t)l->n_in_statics;
    for (int32_t i = 0; i < l->n_in; i++) {
        n += 2 + (size_t)kiln_tensor_rank(args[i]);
        if (!l->in_leaves[i].is_static) continue;
        size_t bytes =
            (size_t)kiln_tensor_numel(args[i]) * kiln_dtype_size(kiln_tensor_dtype(args[i]));
        if (bytes > KILN__JIT_STATIC_MAX_BYTES) {
            char who[KILN_TREE_PATH_MAX + 32];
            kiln__jit_arg_name(l, i, who, sizeof who);
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s holds %zu bytes; a static argument holds at most %d "
                                      "(its value is part of the cache key: pass large "
                                      "tensors as traced arguments)",
                                      who, bytes, KILN__JIT_STATIC_MAX_BYTES);
        }
        n += 1 + (bytes + 7) / 8; /* the byte count, then the bytes */
    }
    uint64_t *w = key_alloc(a, n * sizeof *w);
    if (!w) return out_of_memory(cx, "a jit cache key");
    size_t k = 0;
    w[k++] = (uint64_t)device.type;
    w[k++] = (uint64_t)(uint32_t)device.id;
    w[k++] = (uint64_t)(uint32_t)l->n_in << 32 | (uint32_t)l->n_in_statics;
    for (int32_t i = 0; i < l->n_in; i++) {
        const kiln_shape *shape = kiln_tensor_shape(args[i]);
        w[k++] = (uint64_t)kiln_tensor_dtype(args[i]);
        w[k++] = (uint64_t)shape->rank;
        for (int32_t d = 0; d < shape->rank; d++)
            w[k++] = (uint64_t)shape->dims[d];
        if (!l->in_leaves[i].is_static) continue;
        size_t bytes =
            (size_t)kiln_tensor_numel(args[i]) * kiln_dtype_size(kiln_tensor_dtype(args[i]));
        w[k++] = bytes;
        memset(&w[k], 0, (bytes + 7) / 8 * sizeof *w);
        if (bytes) memcpy(&w[k], kiln_tensor_data(args[i]), bytes);
        k += (bytes + 7) / 8;
    }
    for (int32_t j = 0; j < l->n_in_statics; j++) {
        kiln_tree_static v =
            kiln__tree_static_read(l->in_statics[j].kind, l->in_statics[j].size,
                                   (const unsigned char *)in + l->in_statics[j].offset);
        w[k++] = static_bits(&v);
    }
    /* FNV-1a over the words, a byte at a time. */
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 64; b += 8) {
            h ^= (w[i] >> b) & 0xff;
            h *= 0x100000001b3u;
        }
    *out = (kiln__jit_key){.words = w, .n = n, .hash = h};
    return KILN_OK;
}

bool kiln__jit_key_equal(const kiln__jit_key *x, const kiln__jit_key *y) {
    return x->hash == y->hash && x->n == y->n && x->words && y->words &&
           memcmp(x->words, y->words, x->n * sizeof *x->words) == 0;
}

void kiln__jit_key_assign(const kiln_allocator *a, kiln__jit_key *dst, const kiln__jit_key *src) {
    if (dst == src) return;
    if (!dst->words || dst->n != src->n) {
        kiln__jit_key_free(a, dst);
        dst->words = key_alloc(a, src->n * sizeof *dst->words);
        if (!dst->words) return;
    }
    memcpy(dst->words, src->words, src->n * sizeof *src->words);
    dst->n = src->n;
    dst->hash = src->hash;
}

void kiln__jit_key_free(const kiln_allocator *a, kiln__jit_key *k) {
    if (k->words) key_free(a, k->words, k->n * sizeof *k->words);
    *k = (kiln__jit_key){0};
}

/* ---- explaining a miss -------------------------------------------------------------------- */

typedef struct explanation {
    char *buf;
    size_t size;
    int changes;  /* leaves (statics, the device) that differ */
    int distance; /* their differences: a leaf's dtype and shape count apart */
} explanation;

static void change(explanation *x, const char *fmt, ...) KILN_PRINTF_LIKE(2, 3);
static void change(explanation *x, const char *fmt, ...) {
    x->distance++;
    if (x->changes++ > 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->buf, x->size, fmt, ap);
    va_end(ap);
}

static kiln_shape shape_at(const uint64_t *w, size_t *k) {
    kiln_shape s = {.rank = (int32_t)w[*k]};
    (*k)++;
    for (int32_t d = 0; d < s.rank; d++)
        s.dims[d] = (int64_t)w[(*k)++];
    return s;
}

static const char *dtype_name(uint64_t code) { return kiln_dtype_name((kiln_dtype)code); }

int kiln__jit_key_explain(const kiln__jit_layout *l, const kiln__jit_key *before,
                          const kiln__jit_key *now, char *buf, size_t size) {
    if (!before || !before->words) {
        snprintf(buf, size, "first call");
        return -1;
    }
    explanation x = {.buf = buf, .size = size};
    const uint64_t *o = before->words, *w = now->words;
    if (o[0] != w[0] || o[1] != w[1])
        change(&x, "device %s:%d -> %s:%d", kiln_device_type_name((kiln_device_type)o[0]),
               (int)o[1], kiln_device_type_name((kiln_device_type)w[0]), (int)w[1]);
    size_t ko = KEY_HEADER, kn = KEY_HEADER;
    for (int32_t i = 0; i < l->n_in; i++) {
        uint64_t dt_o = o[ko++], dt_n = w[kn++];
        kiln_shape so = shape_at(o, &ko), sn = shape_at(w, &kn);
        bool dtype_changed = dt_o != dt_n, shape_changed = !kiln_shape_equal(&so, &sn);
        if (l->in_leaves[i].is_static) {
            size_t bo = o[ko++], bn = w[kn++];
            bool value_changed = bo != bn || memcmp(&o[ko], &w[kn], (bo + 7) / 8 * 8) != 0;
            ko += (bo + 7) / 8;
            kn += (bn + 7) / 8;
            if (value_changed && !dtype_changed && !shape_changed) {
                char who[KILN_TREE_PATH_MAX + 32];
                kiln__jit_arg_name(l, i, who, sizeof who);
                change(&x, "%s: its value changed", who);
                continue;
            }
        }
        if (!dtype_changed && !shape_changed) continue;
        x.distance += dtype_changed + shape_changed - 1; /* change() counts one */
        char who[KILN_TREE_PATH_MAX + 32], a[160] = "", b[160] = "";
        kiln__jit_arg_name(l, i, who, sizeof who);
        kiln_shape_format(&so, a, sizeof a);
        kiln_shape_format(&sn, b, sizeof b);
        if (dtype_changed && shape_changed)
            change(&x, "%s: dtype %s -> %s, shape %s -> %s", who, dtype_name(dt_o),
                   dtype_name(dt_n), a, b);
        else if (dtype_changed)
            change(&x, "%s: dtype %s -> %s", who, dtype_name(dt_o), dtype_name(dt_n));
        else
            change(&x, "%s: shape %s -> %s", who, a, b);
    }
    for (int32_t j = 0; j < l->n_in_statics; j++, ko++, kn++) {
        if (o[ko] == w[kn]) continue;
        kiln_tree_static vo = static_from_bits(l->in_statics[j].kind, o[ko]);
        kiln_tree_static vn = static_from_bits(l->in_statics[j].kind, w[kn]);
        char a[64], b[64];
        kiln__tree_static_format(&vo, a, sizeof a);
        kiln__tree_static_format(&vn, b, sizeof b);
        change(&x, "static '%s': %s -> %s", l->in_statics[j].path, a, b);
    }
    if (x.changes == 0) {
        snprintf(buf, size, "the signature is no longer cached (evicted or cleared)");
    } else if (x.changes > 1) {
        size_t len = strlen(buf);
        if (len < size)
            snprintf(buf + len, size - len, " (and %d more change%s)", x.changes - 1,
                     x.changes > 2 ? "s" : "");
    }
    return x.distance;
}
