/* SPDX-License-Identifier: Apache-2.0 */
/* Tree descriptors: checking, walking, flatten and unflatten (kiln/tree.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "runtime/tree_internal.h"

/* Field visits allowed while checking one descriptor: a bound on the work a pathological
 * descriptor (a wide DAG of nested types) can cause. */
#define TREE_VISIT_BUDGET 1000000

static const char *kind_name(kiln_tree_kind k) {
    switch (k) {
    case KILN_TREE_TENSOR: return "tensor";
    case KILN_TREE_SUBTREE: return "subtree";
    case KILN_TREE_STATIC_BOOL: return "static bool";
    case KILN_TREE_STATIC_INT: return "static int";
    case KILN_TREE_STATIC_UINT: return "static uint";
    case KILN_TREE_STATIC_FLOAT: return "static float";
    }
    return "unknown";
}

typedef struct validation {
    char *err;
    size_t err_size;
    int64_t budget;
} validation;

static bool invalid(validation *v, const kiln_tree_def *def, int32_t i, const char *what) {
    const char *type = def->name ? def->name : "(unnamed type)";
    const char *field = def->fields[i].name ? def->fields[i].name : "";
    snprintf(v->err, v->err_size, "%s: field %d '%s': %s", type, (int)i, field, what);
    return false;
}

/* Checks def and counts its leaves and statics (each capped a little above the limit). */
static bool validate(validation *v, const kiln_tree_def *def, int depth, int64_t *leaves,
                     int64_t *statics) {
    *leaves = *statics = 0;
    if (!def) {
        snprintf(v->err, v->err_size, "the descriptor is NULL");
        return false;
    }
    const char *type = def->name ? def->name : "(unnamed type)";
    if (depth > KILN_TREE_MAX_DEPTH) {
        snprintf(v->err, v->err_size,
                 "%s: descriptors nest more than %d deep (does a type contain itself?)", type,
                 KILN_TREE_MAX_DEPTH);
        return false;
    }
    if (!def->name || !def->name[0]) {
        snprintf(v->err, v->err_size, "a descriptor has no type name");
        return false;
    }
    if (def->n_fields < 0 || (def->n_fields > 0 && !def->fields)) {
        snprintf(v->err, v->err_size, "%s: n_fields is %d with fields %s", type, (int)def->n_fields,
                 def->fields ? "set" : "NULL");
        return false;
    }
    for (int32_t i = 0; i < def->n_fields; i++) {
        const kiln_tree_field *f = &def->fields[i];
        if (--v->budget < 0) {
            snprintf(v->err, v->err_size, "%s: the descriptor is too large to walk", type);
            return false;
        }
        if (!f->name || !f->name[0]) return invalid(v, def, i, "the field has no name");
        if (f->count < 0 || f->count > KILN_TREE_MAX_LEAVES) {
            char what[96];
            snprintf(what, sizeof what, "count %d is outside 0..%d", (int)f->count,
                     KILN_TREE_MAX_LEAVES);
            return invalid(v, def, i, what);
        }
        size_t want = 0;
        switch (f->kind) {
        case KILN_TREE_TENSOR: want = sizeof(kiln_tensor *); break;
        case KILN_TREE_SUBTREE:
            if (!f->def) return invalid(v, def, i, "a subtree without a descriptor");
            want = f->def->size;
            break;
        case KILN_TREE_STATIC_BOOL: want = sizeof(_Bool); break;
        case KILN_TREE_STATIC_INT:
        case KILN_TREE_STATIC_UINT:
            if (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8) want = f->size;
            break;
        case KILN_TREE_STATIC_FLOAT:
            if (f->size == sizeof(float) || f->size == sizeof(double)) want = f->size;
            break;
        default: return invalid(v, def, i, "unknown kind");
        }
        if (want == 0 || f->size != want) {
            char what[128];
            snprintf(what, sizeof what, "size %zu does not fit a %s", f->size, kind_name(f->kind));
            return invalid(v, def, i, what);
        }
        size_t n = f->count > 0 ? (size_t)f->count : 1;
        if (f->offset > def->size || f->size > (def->size - f->offset) / n) {
            char what[160];
            snprintf(what, sizeof what,
                     "offset %zu + %zu x %zu bytes lies outside the %zu-byte struct", f->offset, n,
                     f->size, def->size);
            return invalid(v, def, i, what);
        }
        if (f->kind == KILN_TREE_TENSOR) {
            *leaves += (int64_t)n;
        } else if (f->kind == KILN_TREE_SUBTREE) {
            int64_t cl, cs;
            if (!validate(v, f->def, depth + 1, &cl, &cs)) return false;
            *leaves += (int64_t)n * cl;
            *statics += (int64_t)n * cs;
        } else {
            *statics += (int64_t)n;
        }
        if (*leaves > KILN_TREE_MAX_LEAVES || *statics > KILN_TREE_MAX_LEAVES) {
            snprintf(v->err, v->err_size, "%s: more than %d %s", type, KILN_TREE_MAX_LEAVES,
                     *leaves > KILN_TREE_MAX_LEAVES ? "tensor leaves" : "static scalars");
            return false;
        }
    }
    return true;
}

bool kiln__tree_validate(const kiln_tree_def *def, int32_t *out_leaves, int32_t *out_statics,
                         char *err, size_t err_size) {
    char scratch[8];
    validation v = {.err = err && err_size ? err : scratch,
                    .err_size = err && err_size ? err_size : sizeof scratch,
                    .budget = TREE_VISIT_BUDGET};
    int64_t leaves, statics;
    if (!validate(&v, def, 0, &leaves, &statics)) return false;
    if (out_leaves) *out_leaves = (int32_t)leaves;
    if (out_statics) *out_statics = (int32_t)statics;
    return true;
}

/* ---- the walk --------------------------------------------------------------------------- */

typedef struct walker {
    bool paths;
    kiln__tree_visit_fn visit;
    void *user;
    int32_t n_leaves, n_statics;
    char path[KILN_TREE_PATH_MAX];
} walker;

/* Appends a component to w->path at length `at`, returning the new length. Paths that do
 * not fit end in "...". */
static size_t path_append(walker *w, size_t at, const char *name, int32_t index) {
    if (!w->paths) return 0;
    char part[KILN_TREE_PATH_MAX];
    int len;
    if (name)
        len = snprintf(part, sizeof part, "%s%s", at > 0 ? "." : "", name);
    else
        len = snprintf(part, sizeof part, "[%d]", (int)index);
    size_t room = sizeof w->path - at;
    if (len < 0) len = 0;
    if ((size_t)len < room) {
        memcpy(w->path + at, part, (size_t)len + 1);
        return at + (size_t)len;
    }
    /* Cut short: keep what fits and end with "...". */
    size_t end = sizeof w->path - 1;
    if (at < end) memcpy(w->path + at, part, end - at);
    memcpy(w->path + end - 3, "...", 4);
    return end;
}

static bool walk(walker *w, const kiln_tree_def *def, size_t base, size_t path_len) {
    for (int32_t i = 0; i < def->n_fields; i++) {
        const kiln_tree_field *f = &def->fields[i];
        size_t named = path_append(w, path_len, f->name, 0);
        int32_t n = f->count > 0 ? f->count : 1;
        for (int32_t e = 0; e < n; e++) {
            size_t len = f->count > 0 ? path_append(w, named, NULL, e) : named;
            size_t offset = base + f->offset + (size_t)e * f->size;
            if (f->kind == KILN_TREE_SUBTREE) {
                if (!walk(w, f->def, offset, len)) return false;
                continue;
            }
            bool tensor = f->kind == KILN_TREE_TENSOR;
            kiln__tree_item item = {.kind = f->kind,
                                    .offset = offset,
                                    .size = f->size,
                                    .index = tensor ? w->n_leaves++ : w->n_statics++,
                                    .path = w->paths ? w->path : ""};
            if (!w->visit(w->user, &item)) return false;
            if (w->paths) w->path[named] = '\0';
        }
        if (w->paths) w->path[path_len] = '\0';
    }
    return true;
}

bool kiln__tree_walk(const kiln_tree_def *def, bool paths, kiln__tree_visit_fn visit, void *user) {
    walker w = {.paths = paths, .visit = visit, .user = user};
    w.path[0] = '\0';
    return walk(&w, def, 0, 0);
}

/* ---- static scalars --------------------------------------------------------------------- */

/* The unsigned integer of `size` bytes (1, 2, 4, else 8) at p, in native byte order. */
static uint64_t read_unsigned(size_t size, const void *p) {
    if (size == 1) {
        uint8_t v;
        memcpy(&v, p, 1);
        return v;
    }
    if (size == 2) {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    if (size == 4) {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The bits of a signed integer of `size` bytes as its value (two's complement, as the
 * compilers kiln supports convert). */
static int64_t sign_extend(uint64_t bits, size_t size) {
    if (size == 1) return (int8_t)bits;
    if (size == 2) return (int16_t)bits;
    if (size == 4) return (int32_t)bits;
    return (int64_t)bits;
}

kiln_tree_static kiln__tree_static_read(kiln_tree_kind kind, size_t size, const void *p) {
    kiln_tree_static s = {.kind = kind};
    switch (kind) {
    case KILN_TREE_STATIC_BOOL: {
        _Bool b;
        memcpy(&b, p, sizeof b);
        s.value.u = b ? 1 : 0;
        break;
    }
    case KILN_TREE_STATIC_INT: s.value.i = sign_extend(read_unsigned(size, p), size); break;
    case KILN_TREE_STATIC_UINT: s.value.u = read_unsigned(size, p); break;
    case KILN_TREE_STATIC_FLOAT:
        if (size == sizeof(float)) {
            float v;
            memcpy(&v, p, sizeof v);
            s.value.f = v;
        } else {
            double v;
            memcpy(&v, p, sizeof v);
            s.value.f = v;
        }
        break;
    default: break;
    }
    return s;
}

void kiln__tree_static_write(const kiln_tree_static *value, size_t size, void *p) {
    switch (value->kind) {
    case KILN_TREE_STATIC_BOOL: {
        _Bool b = value->value.u != 0;
        memcpy(p, &b, sizeof b);
        break;
    }
    case KILN_TREE_STATIC_INT:
    case KILN_TREE_STATIC_UINT: {
        /* Two's complement truncation, the same for signed and unsigned members. */
        uint64_t u =
            value->kind == KILN_TREE_STATIC_INT ? (uint64_t)value->value.i : value->value.u;
        if (size == 1) {
            uint8_t v = (uint8_t)u;
            memcpy(p, &v, 1);
        } else if (size == 2) {
            uint16_t v = (uint16_t)u;
            memcpy(p, &v, 2);
        } else if (size == 4) {
            uint32_t v = (uint32_t)u;
            memcpy(p, &v, 4);
        } else {
            memcpy(p, &u, 8);
        }
        break;
    }
    case KILN_TREE_STATIC_FLOAT:
        if (size == sizeof(float)) {
            float v = (float)value->value.f;
            memcpy(p, &v, sizeof v);
        } else {
            memcpy(p, &value->value.f, sizeof(double));
        }
        break;
    default: break;
    }
}

bool kiln__tree_static_equal(const kiln_tree_static *a, const kiln_tree_static *b) {
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case KILN_TREE_STATIC_INT: return a->value.i == b->value.i;
    case KILN_TREE_STATIC_FLOAT: return memcmp(&a->value.f, &b->value.f, sizeof(double)) == 0;
    default: return a->value.u == b->value.u;
    }
}

void kiln__tree_static_format(const kiln_tree_static *value, char *buf, size_t size) {
    switch (value->kind) {
    case KILN_TREE_STATIC_BOOL: snprintf(buf, size, "%s", value->value.u ? "true" : "false"); break;
    case KILN_TREE_STATIC_INT: snprintf(buf, size, "%lld", (long long)value->value.i); break;
    case KILN_TREE_STATIC_UINT:
        snprintf(buf, size, "%llu", (unsigned long long)value->value.u);
        break;
    case KILN_TREE_STATIC_FLOAT:
        /* The shortest text that reads back as the same double. */
        for (int digits = 1; digits <= 17; digits++) {
            snprintf(buf, size, "%.*g", digits, value->value.f);
            if (strtod(buf, NULL) == value->value.f) break;
        }
        break;
    default: snprintf(buf, size, "?"); break;
    }
}

bool kiln__tree_path_has_prefix(const char *path, const char *prefix) {
    if (!path || !prefix) return false;
    size_t n = strlen(prefix);
    if (n == 0 || strncmp(path, prefix, n) != 0) return false;
    return path[n] == '\0' || path[n] == '.' || path[n] == '[';
}

/* ---- public functions ------------------------------------------------------------------- */

static kiln_status check_def(kiln_ctx *cx, const char *fn, const kiln_tree_def *def,
                             int32_t *leaves, int32_t *statics) {
    if (!def) return kiln__null_argument(cx, fn, "def");
    char err[512];
    if (!kiln__tree_validate(def, leaves, statics, err, sizeof err))
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: invalid descriptor: %s", fn, err);
    return KILN_OK;
}

kiln_status kiln_tree_check(kiln_ctx *cx, const kiln_tree_def *def) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    return check_def(cx, "kiln_tree_check", def, NULL, NULL);
}

int32_t kiln_tree_leaf_count(const kiln_tree_def *def) {
    int32_t leaves = 0;
    return kiln__tree_validate(def, &leaves, NULL, NULL, 0) ? leaves : -1;
}

int32_t kiln_tree_static_count(const kiln_tree_def *def) {
    int32_t statics = 0;
    return kiln__tree_validate(def, NULL, &statics, NULL, 0) ? statics : -1;
}

typedef struct path_query {
    bool tensor;
    int32_t index;
    char *buf;
    size_t size;
    int length;
} path_query;

static bool find_path(void *user, const kiln__tree_item *item) {
    path_query *q = user;
    if ((item->kind == KILN_TREE_TENSOR) != q->tensor || item->index != q->index) return true;
    q->length = snprintf(q->buf, q->size, "%s", item->path);
    return false;
}

static int item_path(const kiln_tree_def *def, bool tensor, int32_t index, char *buf, size_t size) {
    if (buf && size > 0) buf[0] = '\0';
    int32_t leaves = 0, statics = 0;
    if (!kiln__tree_validate(def, &leaves, &statics, NULL, 0)) return -1;
    if (index < 0 || index >= (tensor ? leaves : statics)) return -1;
    char dummy[1];
    path_query q = {.tensor = tensor,
                    .index = index,
                    .buf = buf && size > 0 ? buf : dummy,
                    .size = buf && size > 0 ? size : sizeof dummy,
                    .length = -1};
    kiln__tree_walk(def, true, find_path, &q);
    return q.length;
}

int kiln_tree_leaf_path(const kiln_tree_def *def, int32_t index, char *buf, size_t size) {
    return item_path(def, true, index, buf, size);
}

int kiln_tree_static_path(const kiln_tree_def *def, int32_t index, char *buf, size_t size) {
    return item_path(def, false, index, buf, size);
}

typedef struct flatten_state {
    kiln_ctx *cx;
    const kiln_tree_def *def;
    const unsigned char *tree;
    kiln_tensor **leaves;
    kiln_tree_static *statics;
    kiln_status status;
} flatten_state;

static bool flatten_item(void *user, const kiln__tree_item *item) {
    flatten_state *st = user;
    if (item->kind == KILN_TREE_TENSOR) {
        kiln_tensor *t;
        memcpy(&t, st->tree + item->offset, sizeof t);
        if (!t) {
            st->status = kiln_ctx_set_error(st->cx, KILN_INVALID_ARGUMENT,
                                            "kiln_tree_flatten: %s leaf %d '%s' is NULL",
                                            st->def->name, (int)item->index, item->path);
            return false;
        }
        st->leaves[item->index] = t;
    } else if (st->statics) {
        st->statics[item->index] =
            kiln__tree_static_read(item->kind, item->size, st->tree + item->offset);
    }
    return true;
}

/* The argument checks flatten and unflatten share, in this order: def is valid, the tree
 * (the argument named tree_arg) is given, so is the leaves array (leaves_arg) where there
 * are leaves, and the counts are def's (n_statics only where with_statics). */
static kiln_status check_args(kiln_ctx *cx, const char *fn, const kiln_tree_def *def,
                              const void *tree, const char *tree_arg, const void *leaves,
                              const char *leaves_arg, int32_t n_leaves, int32_t n_statics,
                              bool with_statics) {
    int32_t def_leaves = 0, def_statics = 0;
    kiln_status s = check_def(cx, fn, def, &def_leaves, &def_statics);
    if (s != KILN_OK) return s;
    if (!tree) return kiln__null_argument(cx, fn, tree_arg);
    if (!leaves && n_leaves > 0) return kiln__null_argument(cx, fn, leaves_arg);
    if (n_leaves != def_leaves)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: n_leaves is %d; %s has %d tensor leaves", fn, (int)n_leaves,
                                  def->name, (int)def_leaves);
    if (with_statics && n_statics != def_statics)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: n_statics is %d; %s has %d static scalars", fn,
                                  (int)n_statics, def->name, (int)def_statics);
    return KILN_OK;
}

kiln_status kiln_tree_flatten(kiln_ctx *cx, const kiln_tree_def *def, const void *tree,
                              kiln_tensor **out_leaves, int32_t n_leaves,
                              kiln_tree_static *out_statics, int32_t n_statics) {
    static const char fn[] = "kiln_tree_flatten";
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s = check_args(cx, fn, def, tree, "tree", out_leaves, "out_leaves", n_leaves,
                               n_statics, out_statics != NULL);
    if (s != KILN_OK) return s;
    flatten_state st = {.cx = cx,
                        .def = def,
                        .tree = tree,
                        .leaves = out_leaves,
                        .statics = out_statics,
                        .status = KILN_OK};
    kiln__tree_walk(def, true, flatten_item, &st);
    return st.status;
}

typedef struct unflatten_state {
    kiln_ctx *cx;
    const kiln_tree_def *def;
    unsigned char *tree;
    kiln_tensor *const *leaves;
    const kiln_tree_static *statics;
    kiln_status status;
} unflatten_state;

/* Checks the kinds of the statics (the first pass, with paths for the message). */
static bool check_static_item(void *user, const kiln__tree_item *item) {
    unflatten_state *st = user;
    if (item->kind == KILN_TREE_TENSOR || st->statics[item->index].kind == item->kind) return true;
    st->status = kiln_ctx_set_error(
        st->cx, KILN_INVALID_ARGUMENT,
        "kiln_tree_unflatten: statics[%d] is a %s; %s static '%s' is a %s", (int)item->index,
        kind_name(st->statics[item->index].kind), st->def->name, item->path, kind_name(item->kind));
    return false;
}

static bool unflatten_item(void *user, const kiln__tree_item *item) {
    unflatten_state *st = user;
    if (item->kind == KILN_TREE_TENSOR)
        memcpy(st->tree + item->offset, &st->leaves[item->index], sizeof(kiln_tensor *));
    else if (st->statics)
        kiln__tree_static_write(&st->statics[item->index], item->size, st->tree + item->offset);
    return true;
}

kiln_status kiln_tree_unflatten(kiln_ctx *cx, const kiln_tree_def *def, kiln_tensor *const *leaves,
                                int32_t n_leaves, const kiln_tree_static *statics,
                                int32_t n_statics, void *out_tree) {
    static const char fn[] = "kiln_tree_unflatten";
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s = check_args(cx, fn, def, out_tree, "out_tree", leaves, "leaves", n_leaves,
                               n_statics, statics != NULL);
    if (s != KILN_OK) return s;
    /* Check the statics' kinds first, so that a failure leaves out_tree as it was. */
    unflatten_state st = {.cx = cx,
                          .def = def,
                          .tree = out_tree,
                          .leaves = leaves,
                          .statics = statics,
                          .status = KILN_OK};
    if (statics && !kiln__tree_walk(def, true, check_static_item, &st)) return st.status;
    kiln__tree_walk(def, false, unflatten_item, &st);
    return st.status;
}

kiln_status kiln__tree_call_region(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                   void *user) {
    kiln__tree_call *t = user;
    memset(t->in_buf, 0, t->in_def->size);
    memset(t->out_buf, 0, t->out_def->size);
    kiln_status s =
        kiln_tree_unflatten(cx, t->in_def, in, t->n_in, t->statics, t->n_statics, t->in_buf);
    if (s == KILN_OK) s = t->fn(cx, t->in_buf, t->out_buf, t->user);
    if (s == KILN_OK && kiln_ctx_status(cx) != KILN_OK) s = kiln_ctx_status(cx);
    if (s == KILN_OK)
        s = kiln_tree_flatten(cx, t->out_def, t->out_buf, out, t->n_out, t->out_statics,
                              t->n_out_statics);
    return s;
}

void kiln__tree_call_init(kiln__tree_call *t, kiln_jit_fn fn, void *user,
                          const kiln_tree_def *in_def, const kiln_tree_def *out_def) {
    *t = (kiln__tree_call){.fn = fn, .user = user, .in_def = in_def, .out_def = out_def};
    t->n_in = kiln_tree_leaf_count(in_def);
    t->n_statics = kiln_tree_static_count(in_def);
    t->n_out = kiln_tree_leaf_count(out_def);
    t->n_out_statics = kiln_tree_static_count(out_def);
}

kiln_status kiln__tree_call_scratch(kiln_ctx *cx, const char *name, kiln__tree_call *t,
                                    const void *in, size_t n_ptr, size_t n_ints, char **mem,
                                    size_t *bytes, int32_t **ints) {
    size_t n_st = (size_t)t->n_statics + (size_t)t->n_out_statics + 2;
    size_t in_size = t->in_def->size, out_size = t->out_def->size;
    *bytes = n_ptr * sizeof(void *) + n_st * sizeof(kiln_tree_static) + in_size + out_size +
             n_ints * sizeof(int32_t) + 64;
    *mem = kiln__calloc(cx, *bytes, 16, name);
    if (!*mem) return KILN_RESOURCE_EXHAUSTED;
    kiln_tensor **leaves = (kiln_tensor **)*mem;
    kiln_tree_static *statics = (kiln_tree_static *)(*mem + n_ptr * sizeof(void *));
    t->out_statics = statics + t->n_statics + 1;
    char *bufs = (char *)(statics + n_st);
    t->in_buf = bufs;
    t->out_buf = bufs + ((in_size + 15) & ~(size_t)15);
    *ints = (int32_t *)((char *)t->out_buf + ((out_size + 15) & ~(size_t)15));
    kiln_status s = kiln_tree_flatten(cx, t->in_def, in, leaves, t->n_in, statics, t->n_statics);
    t->statics = statics;
    return s;
}

kiln_status kiln__tree_check_prefixes(kiln_ctx *cx, const char *fn, const char *what,
                                      const kiln_tree_def *def, const char *const *prefixes,
                                      int32_t n) {
    char path[KILN_TREE_PATH_MAX];
    int32_t n_leaves = kiln_tree_leaf_count(def);
    for (int32_t k = 0; k < n; k++) {
        if (!prefixes[k])
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: %s[%d] is NULL", fn, what,
                                      (int)k);
        bool any = false;
        for (int32_t i = 0; i < n_leaves && !any; i++) {
            kiln_tree_leaf_path(def, i, path, sizeof path);
            any = kiln__tree_path_has_prefix(path, prefixes[k]);
        }
        if (!any)
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: %s[%d] '%s' matches no leaf of %s", fn, what, (int)k,
                                      prefixes[k], def->name ? def->name : "in_def");
    }
    return KILN_OK;
}

kiln_status kiln__tree_fn_args(kiln_ctx *cx, const char *name, kiln_jit_fn fn,
                               const kiln_tree_def *in_def, const void *in,
                               const kiln_tree_def *out_def) {
    if (!fn) return kiln__null_argument(cx, name, "fn");
    if (!in_def) return kiln__null_argument(cx, name, "in_def");
    if (!in) return kiln__null_argument(cx, name, "in");
    if (!out_def) return kiln__null_argument(cx, name, "out_def");
    kiln_status s = kiln_tree_check(cx, in_def);
    return s == KILN_OK ? kiln_tree_check(cx, out_def) : s;
}

kiln_status kiln__tree_fn_begin(kiln_ctx *cx, const char *name, kiln_jit_fn fn,
                                const kiln_tree_def *in_def, const void *in,
                                const kiln_tree_def *out_def, const void *out) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    kiln_status s = kiln__tree_fn_args(cx, name, fn, in_def, in, out_def);
    if (s != KILN_OK) return s;
    return out ? KILN_OK : kiln__null_argument(cx, name, "out");
}
