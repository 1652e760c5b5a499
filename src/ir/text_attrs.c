/* SPDX-License-Identifier: Apache-2.0 */
/* The text parser's attributes: values (integers, lists, arrays, dense, enums, structs,
 * convolution layouts, dictionaries), and an op's kiln__attrs from them through the op
 * schema (ops/op_syntax.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "core/tensor_internal.h"
#include "ir/text.h"

/* ---- attributes ------------------------------------------------------------------------ */

void *kiln__text_aalloc(parser *p, size_t size) {
    void *r = kiln__arena_alloc(&p->m->arena, size ? size : 1, 16);
    if (!r) kiln__text_oom(p);
    return r;
}

static bool grow_attrs(parser *p, attr **items, const char ***keys, size_t **lens, int32_t n,
                       int32_t *cap) {
    if (n < *cap) return true;
    int32_t nc = *cap ? *cap * 2 : 8;
    attr *ni = kiln__text_aalloc(p, (size_t)nc * sizeof *ni);
    if (!ni) return false;
    if (n) memcpy(ni, *items, (size_t)n * sizeof *ni);
    *items = ni;
    if (keys) {
        const char **nk = kiln__text_aalloc(p, (size_t)nc * sizeof *nk);
        size_t *nl = kiln__text_aalloc(p, (size_t)nc * sizeof *nl);
        if (!nk || !nl) return false;
        if (n) memcpy(nk, *keys, (size_t)n * sizeof *nk), memcpy(nl, *lens, (size_t)n * sizeof *nl);
        *keys = nk;
        *lens = nl;
    }
    *cap = nc;
    return true;
}

/* { key = value, key, ... } or (struct) key = value, ... up to `close`. */
static bool conv_raw(parser *p, kiln_conv_params *c);

bool kiln__text_attr_entries(parser *p, attr *a, char close) {
    int32_t cap = 0;
    a->n = 0;
    if (kiln__text_accept(p, close)) return true;
    do {
        size_t kpos;
        const char *key;
        size_t klen;
        if (!kiln__text_attr_name(p, &key, &klen, &kpos)) return false;
        if (!grow_attrs(p, &a->items, &a->keys, &a->key_lens, a->n, &cap)) return false;
        attr *v = &a->items[a->n];
        memset(v, 0, sizeof *v);
        a->keys[a->n] = key;
        a->key_lens[a->n] = klen;
        a->n++;
        v->pos = kpos;
        if (kiln__text_accept(p, '=')) {
            if (!kiln__text_attr_value(p, v)) return false;
        } else {
            v->kind = A_UNIT;
        }
    } while (kiln__text_accept(p, ','));
    char what[32];
    snprintf(what, sizeof what, "to close the attributes");
    return kiln__text_expect(p, close, what);
}

/* Skips a balanced <...> (strings respected). */
bool kiln__text_skip_angles(parser *p, size_t start) {
    int depth = 0;
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c == '"') {
            const char *s;
            size_t l;
            if (!kiln__text_string_lit(p, &s, &l)) return false;
            continue;
        }
        p->pos++;
        if (c == '<')
            depth++;
        else if (c == '>' && p->s[p->pos - 2] != '-') {
            if (--depth == 0) return true;
        }
    }
    return kiln__text_error(p, start, "unterminated attribute");
}

/* Appends v to an A_ARRAY's integers (cap: their capacity, in the module's arena). */
static bool push_int(parser *p, attr *a, int32_t *cap, int64_t v) {
    int64_t *ints = kiln__text_grow(p, a->ints, cap, a->n, sizeof *ints, 8, false);
    if (!ints) return false;
    a->ints = ints;
    a->ints[a->n++] = v;
    return true;
}

bool kiln__text_int_list_attr(parser *p, attr *a) {
    /* [1, 2] into ints (used by structs and lists of integers) */
    int32_t cap = 0;
    a->kind = A_ARRAY;
    a->n = 0;
    if (kiln__text_accept(p, ']')) return true;
    do {
        int64_t v;
        if (!kiln__text_int64_lit(p, &v, "in a list")) return false;
        if (!push_int(p, a, &cap, v)) return false;
    } while (kiln__text_accept(p, ','));
    return kiln__text_expect(p, ']', "to close the list");
}

bool kiln__text_attr_value(parser *p, attr *a) {
    if (!kiln__text_enter(p)) return false;
    kiln__text_skip(p);
    a->pos = p->pos;
    bool ok = true;
    int c = ch(p);
    if (c == '[') {
        p->pos++;
        /* A list of integers becomes an A_ARRAY; anything else an A_LIST. */
        size_t save = p->pos;
        kiln__text_skip(p);
        if (is_digit(ch(p)) || ch(p) == '-' || ch(p) == ']') {
            size_t save2 = p->pos;
            bool was_failed = p->failed;
            (void)save2;
            /* try integers */
            size_t q = p->pos;
            bool ints = true;
            while (q < p->n && p->s[q] != ']') {
                char d = p->s[q];
                if (!(is_digit((unsigned char)d) || d == '-' || d == ',' || d == ' ' || d == '\n' ||
                      d == '\t' || d == '\r')) {
                    ints = false;
                    break;
                }
                q++;
            }
            (void)was_failed;
            if (ints) {
                ok = kiln__text_int_list_attr(p, a);
                leave(p);
                return ok;
            }
        }
        p->pos = save;
        a->kind = A_LIST;
        int32_t cap = 0;
        a->n = 0;
        if (!kiln__text_accept(p, ']')) {
            do {
                if (!grow_attrs(p, &a->items, NULL, NULL, a->n, &cap)) return false;
                memset(&a->items[a->n], 0, sizeof(attr));
                if (!kiln__text_attr_value(p, &a->items[a->n++])) return false;
            } while (kiln__text_accept(p, ','));
            ok = kiln__text_expect(p, ']', "to close the list");
        }
    } else if (c == '{') {
        p->pos++;
        a->kind = A_DICT;
        ok = kiln__text_attr_entries(p, a, '}');
    } else if (c == '"') {
        a->kind = A_STR;
        ok = kiln__text_string_lit(p, &a->text, &a->len);
        if (ok && kiln__text_accept(p, ':')) { /* "text" : type, rare */
            kiln__type t;
            ok = kiln__text_tensor_type(p, &t);
        }
    } else if (c == '@') {
        p->pos++;
        a->kind = A_SYM;
        if (kiln__text_peek(p, '"'))
            ok = kiln__text_string_lit(p, &a->text, &a->len);
        else if (!(a->len = kiln__text_ident(p, &a->text)))
            ok = kiln__text_error(p, a->pos, "expected a symbol name");
    } else if (c == '#') {
        p->pos++;
        const char *id;
        size_t len = kiln__text_ident(p, &id);
        if (!len)
            ok = kiln__text_error(p, a->pos, "expected an attribute after '#'");
        else if (!kiln__text_accept(p, '<'))
            ok = kiln__text_error(p, p->pos, "expected '<' after #%.*s", (int)len, id);
        else if (span_is(id, len, "stablehlo.gather") || span_is(id, len, "stablehlo.scatter") ||
                 span_is(id, len, "stablehlo.dot") ||
                 span_is(id, len, "stablehlo.channel_handle")) {
            a->kind = A_STRUCT;
            ok = kiln__text_attr_entries(p, a, '>');
        } else if (span_is(id, len, "stablehlo.conv")) {
            a->kind = A_CONV;
            if (kiln__text_accept_kw(p, "raw"))
                ok = conv_raw(p, &a->conv);
            else
                ok = kiln__text_conv_layouts(p, &a->conv) &&
                     kiln__text_expect(p, '>', "to close #stablehlo.conv");
        } else if (span_is(id, len, "stablehlo")) {
            /* #stablehlo<comparison_direction LT> */
            const char *k;
            if (!kiln__text_ident(p, &k)) {
                ok = kiln__text_error(p, p->pos, "expected an enum kind");
            } else {
                a->kind = A_ENUM;
                kiln__text_skip(p);
                a->pos = p->pos;
                if (!(a->len = kiln__text_ident(p, &a->text)))
                    ok = kiln__text_error(p, p->pos, "expected an enum value");
                else
                    ok = kiln__text_expect(p, '>', "to close the enum");
            }
        } else {
            a->kind = A_OPAQUE;
            p->pos--;
            ok = kiln__text_skip_angles(p, a->pos);
            a->text = p->s + a->pos; /* the whole #dialect.name<...>, kept as written */
            a->len = p->pos - a->pos;
        }
    } else if (kiln__text_accept_kw(p, "array")) {
        a->kind = A_ARRAY;
        kiln_dtype dt;
        int32_t cap = 0;
        a->n = 0;
        ok = kiln__text_expect(p, '<', "after 'array'") && kiln__text_element_type(p, &dt);
        if (ok && kiln__text_accept(p, ':')) {
            do {
                int64_t v;
                kiln__text_skip(p);
                if (kiln__text_accept_kw(p, "true"))
                    v = 1;
                else if (kiln__text_accept_kw(p, "false"))
                    v = 0;
                else if (!kiln__text_int64_lit(p, &v, "in an array")) {
                    ok = false;
                    break;
                }
                if (!push_int(p, a, &cap, v)) return false;
            } while (kiln__text_accept(p, ','));
        }
        ok = ok && kiln__text_expect(p, '>', "to close the array");
    } else if (kiln__text_accept_kw(p, "dense")) {
        dense d;
        kiln__type t;
        memset(&d, 0, sizeof d);
        ok = kiln__text_expect(p, '<', "after 'dense'") && kiln__text_dense_body(p, &d);
        if (ok) {
            ok = kiln__text_expect(p, ':', "and a type after a dense attribute") &&
                 kiln__text_tensor_type(p, &t);
            if (ok && (kiln_dtype_is_float(t.dtype) || kiln_dtype_is_complex(t.dtype)))
                ok = kiln__text_error(p, a->pos, "%s dense attributes are not supported here",
                                      kiln_dtype_is_float(t.dtype) ? "float" : "complex");
            if (ok && t.shape.rank > 2)
                ok = kiln__text_error(p, a->pos, "dense attribute of rank above 2");
            if (ok) {
                t.dtype = KILN_I64;
                kiln_tensor *x = kiln__text_dense_tensor(p, &d, &t);
                if (!x) {
                    ok = false;
                } else {
                    int64_t numel = 1;
                    for (int32_t i = 0; i < t.shape.rank; i++)
                        numel *= t.shape.dims[i];
                    a->kind = A_DENSE;
                    a->rank = t.shape.rank;
                    a->dims[0] = t.shape.rank > 0 ? t.shape.dims[0] : 1;
                    a->dims[1] = t.shape.rank > 1 ? t.shape.dims[1] : 1;
                    a->n = (int32_t)numel;
                    a->ints = kiln__text_aalloc(p, (size_t)numel * sizeof(int64_t));
                    if (!a->ints || numel > 1 << 20)
                        ok = a->ints ? kiln__text_error(p, a->pos, "dense attribute too large")
                                     : false;
                    else if (numel)
                        memcpy(a->ints, kiln_tensor_data(x), (size_t)numel * sizeof(int64_t));
                    kiln_tensor_release(x);
                }
            }
        }
        kiln__text_dense_free(p, &d);
    } else if (kiln__text_accept_kw(p, "true") || kiln__text_accept_kw(p, "false")) {
        a->kind = A_BOOL;
        a->i = p->s[a->pos] == 't';
    } else if (kiln__text_accept_kw(p, "unit")) {
        a->kind = A_UNIT;
    } else if (is_digit(c) || c == '-') {
        elem e;
        ok = kiln__text_scalar_token(p, &e);
        if (ok) {
            if (e.kind == E_INT) {
                size_t save = p->pos;
                p->pos = e.pos;
                ok = kiln__text_int64_lit(p, &a->i, "attribute");
                p->pos = save;
                a->kind = A_INT;
            } else {
                a->kind = A_FLOAT;
            }
            size_t save = p->pos;
            if (ok && kiln__text_accept(p, ':')) {
                kiln_dtype dt;
                kiln__text_skip(p);
                if (kiln__text_accept_kw(p, "tensor"))
                    p->pos = save;
                else
                    ok = kiln__text_element_type(p, &dt);
            }
        }
    } else {
        char buf[16];
        ok = kiln__text_error(p, a->pos, "expected an attribute value, found %s",
                              kiln__text_char_text(p, buf));
    }
    leave(p);
    return ok;
}

const attr *kiln__text_dict_get(const attr *d, const char *key) {
    if (!d) return NULL;
    for (int32_t i = 0; i < d->n; i++)
        if (span_is(d->keys[i], d->key_lens[i], key)) return &d->items[i];
    return NULL;
}

/* ---- conv dim numbers ------------------------------------------------------------------ */

/* [b, 0, 1, f] */
static bool conv_layout(parser *p, char c1, char c2, int64_t *d1, int64_t *d2, kiln_dims *spatial) {
    if (!kiln__text_expect(p, '[', "to open a convolution layout")) return false;
    int64_t pos = 0;
    *d1 = *d2 = -1;
    int64_t sp[KILN_MAX_RANK];
    bool seen[KILN_MAX_RANK] = {0};
    int32_t nsp = 0;
    do {
        kiln__text_skip(p);
        size_t at = p->pos;
        if (pos >= KILN_MAX_RANK) return kiln__text_error(p, at, "convolution layout too long");
        if (is_digit(ch(p))) {
            int64_t s;
            if (!kiln__text_int64_lit(p, &s, "spatial dimension")) return false;
            if (s < 0 || s >= KILN_MAX_RANK || seen[s])
                return kiln__text_error(p, at, "bad spatial dimension %" PRId64, s);
            seen[s] = true;
            sp[s] = pos;
            nsp++;
        } else if (ch(p) == c1 && !is_id_char(ch_at(p, p->pos + 1))) {
            p->pos++;
            *d1 = pos;
        } else if (ch(p) == c2 && !is_id_char(ch_at(p, p->pos + 1))) {
            p->pos++;
            *d2 = pos;
        } else {
            return kiln__text_error(
                p, at, "expected '%c', '%c' or a spatial dimension in a convolution layout", c1,
                c2);
        }
        pos++;
    } while (kiln__text_accept(p, ','));
    if (!kiln__text_expect(p, ']', "to close a convolution layout")) return false;
    if (*d1 < 0 || *d2 < 0)
        return kiln__text_error(p, p->pos, "convolution layout lacks '%c' or '%c'", c1, c2);
    for (int32_t i = 0; i < nsp; i++)
        if (!seen[i])
            return kiln__text_error(p, p->pos, "convolution layout skips spatial dimension %d",
                                    (int)i);
    spatial->count = nsp;
    for (int32_t i = 0; i < nsp; i++)
        spatial->v[i] = sp[i];
    return true;
}

bool kiln__text_conv_layouts(parser *p, kiln_conv_params *c) {
    if (!conv_layout(p, 'b', 'f', &c->input_batch_dimension, &c->input_feature_dimension,
                     &c->input_spatial_dimensions))
        return false;
    kiln__text_skip(p);
    if (ch(p) != 'x')
        return kiln__text_error(p, p->pos, "expected 'x' between convolution layouts");
    p->pos++;
    if (!conv_layout(p, 'i', 'o', &c->kernel_input_feature_dimension,
                     &c->kernel_output_feature_dimension, &c->kernel_spatial_dimensions))
        return false;
    kiln__text_skip(p);
    if (!(ch(p) == '-' && ch_at(p, p->pos + 1) == '>'))
        return kiln__text_error(p, p->pos, "expected '->' between convolution layouts");
    p->pos += 2;
    return conv_layout(p, 'b', 'f', &c->output_batch_dimension, &c->output_feature_dimension,
                       &c->output_spatial_dimensions);
}

/* ---- attributes into kiln__attrs --------------------------------------------------------- */

static bool to_dims(parser *p, const attr *a, const char *name, kiln_dims *out) {
    out->count = 0;
    if (!a) return true;
    if (a->kind != A_ARRAY && !(a->kind == A_DENSE && a->rank <= 1))
        return kiln__text_error(p, a->pos, "attribute '%s' must be a list of integers", name);
    if (a->n > KILN_MAX_RANK)
        return kiln__text_error(p, a->pos, "attribute '%s' has more than %d entries", name,
                                KILN_MAX_RANK);
    out->count = a->n;
    for (int32_t i = 0; i < a->n; i++)
        out->v[i] = a->ints[i];
    return true;
}

/* padding = dense<[[lo, hi], ...]> : tensor<Nx2xi64> */
static bool get_padding(parser *p, const attr *a, const char *name, int32_t rank, kiln_dims *lo,
                        kiln_dims *hi) {
    lo->count = hi->count = rank;
    for (int32_t i = 0; i < rank; i++)
        lo->v[i] = hi->v[i] = 0;
    if (!a) return true;
    if (a->kind == A_LIST) { /* [[1, 1], [0, 2]] */
        if (a->n != rank)
            return kiln__text_error(p, a->pos, "attribute '%s' needs %d pairs", name, (int)rank);
        for (int32_t i = 0; i < rank; i++) {
            const attr *pr = &a->items[i];
            if (pr->kind != A_ARRAY || pr->n != 2)
                return kiln__text_error(p, pr->pos, "attribute '%s' needs [low, high] pairs", name);
            lo->v[i] = pr->ints[0];
            hi->v[i] = pr->ints[1];
        }
        return true;
    }
    if (a->kind == A_ARRAY && a->n == 0 && rank == 0) return true;
    if (a->kind != A_DENSE || (a->n != 2 * rank && !(a->n == 1 && a->rank == 0)))
        return kiln__text_error(p, a->pos, "attribute '%s' must be dense<...> : tensor<%dx2xi64>",
                                name, (int)rank);
    for (int32_t i = 0; i < rank; i++) {
        lo->v[i] = a->n == 1 ? a->ints[0] : a->ints[2 * i];
        hi->v[i] = a->n == 1 ? a->ints[0] : a->ints[2 * i + 1];
    }
    return true;
}

static bool enum_value(parser *p, const attr *a, const char *name, const char *const *names, int n,
                       int *out) {
    if (a->kind != A_ENUM)
        return kiln__text_error(p, a->pos, "attribute '%s' must be an enum", name);
    for (int i = 0; i < n; i++)
        if (span_is(a->text, a->len, names[i])) {
            *out = i;
            return true;
        }
    return kiln__text_error(p, a->pos, "unknown %s '%.*s'", name, (int)(a->len > 40 ? 40 : a->len),
                            a->text);
}

static bool int_value(parser *p, const attr *a, const char *name, int64_t *out) {
    if (a->kind != A_INT)
        return kiln__text_error(p, a->pos, "attribute '%s' must be an integer", name);
    *out = a->i;
    return true;
}

/* A struct attribute's fields (#stablehlo.gather<...>): lists and integers, each may be
 * left out (empty, 0). */
/* #stablehlo.conv<raw input_batch_dimension = 0, ..., output_spatial_dimensions = [1, 2]>
 * after "raw": the nine dimension numbers by name, as StableHLO prints them when the
 * layouts' letters cannot say them. */
static bool conv_raw(parser *p, kiln_conv_params *c) {
    attr d = {.kind = A_STRUCT, .pos = p->pos};
    if (!kiln__text_attr_entries(p, &d, '>')) return false;
    static const char *const ints[] = {
        "input_batch_dimension",          "input_feature_dimension",
        "kernel_input_feature_dimension", "kernel_output_feature_dimension",
        "output_batch_dimension",         "output_feature_dimension"};
    int64_t *int_at[] = {&c->input_batch_dimension,          &c->input_feature_dimension,
                         &c->kernel_input_feature_dimension, &c->kernel_output_feature_dimension,
                         &c->output_batch_dimension,         &c->output_feature_dimension};
    static const char *const lists[] = {"input_spatial_dimensions", "kernel_spatial_dimensions",
                                        "output_spatial_dimensions"};
    kiln_dims *list_at[] = {&c->input_spatial_dimensions, &c->kernel_spatial_dimensions,
                            &c->output_spatial_dimensions};
    for (int i = 0; i < 6; i++) {
        const attr *v = kiln__text_dict_get(&d, ints[i]);
        if (!v) return kiln__text_error(p, d.pos, "#stablehlo.conv<raw ...> needs %s", ints[i]);
        if (!int_value(p, v, ints[i], int_at[i])) return false;
    }
    for (int i = 0; i < 3; i++) {
        const attr *v = kiln__text_dict_get(&d, lists[i]);
        if (!v) return kiln__text_error(p, d.pos, "#stablehlo.conv<raw ...> needs %s", lists[i]);
        if (!to_dims(p, v, lists[i], list_at[i])) return false;
    }
    return true;
}

static bool struct_fields(parser *p, const kiln__attr_desc *d, const attr *s, kiln__attrs *a) {
    for (int32_t i = 0; i < d->n_fields; i++) {
        const kiln__attr_field *f = &d->fields[i];
        const attr *v = kiln__text_dict_get(s, f->name);
        void *at = kiln__attr_at(a, f->offset);
        if (f->kind == KILN__AK_DIMS) {
            if (!to_dims(p, v, f->name, at)) return false;
        } else if (v && !int_value(p, v, f->name, at)) {
            return false;
        }
    }
    return true;
}

/* replica_groups = dense<[[0, 1], [2, -1]]> : tensor<2x2xi64> (ids from -1, as int32). */
static bool groups_value(parser *p, const attr *a, const char *name, kiln__groups *g) {
    memset(g, 0, sizeof *g);
    if (a->kind != A_DENSE || a->rank != 2)
        return kiln__text_error(p, a->pos, "attribute '%s' must be dense<...> : tensor<NxMxi64>",
                                name);
    if (a->n > KILN__MAX_GROUP_IDS)
        return kiln__text_error(p, a->pos, "attribute '%s' holds %d ids; kiln supports at most %d",
                                name, (int)a->n, KILN__MAX_GROUP_IDS);
    g->rows = (int32_t)a->dims[0];
    g->cols = (int32_t)a->dims[1];
    for (int32_t i = 0; i < a->n; i++) {
        if (a->ints[i] < -1 || a->ints[i] >= KILN__MAX_GROUP_IDS)
            return kiln__text_error(p, a->pos, "attribute '%s': id %" PRId64 " is out of range",
                                    name, a->ints[i]);
        g->ids[i] = (int32_t)a->ints[i];
    }
    return true;
}

/* channel_handle = #stablehlo.channel_handle<handle = 1, type = 0> */
static bool channel_value(parser *p, const attr *a, const char *name, int64_t *handle_type) {
    if (a->kind != A_STRUCT)
        return kiln__text_error(p, a->pos, "attribute '%s' must be #stablehlo.channel_handle<...>",
                                name);
    const attr *h = kiln__text_dict_get(a, "handle"), *t = kiln__text_dict_get(a, "type");
    handle_type[0] = handle_type[1] = 0;
    if ((h && !int_value(p, h, "handle", &handle_type[0])) ||
        (t && !int_value(p, t, "type", &handle_type[1])))
        return false;
    /* Only the handle means something to a collective (positive: cross-partition); the type
     * is kept as the handle implies it (DEVICE_TO_DEVICE, 1, for a positive one), as a
     * portable artifact, which stores the handle alone, gives it back. */
    handle_type[1] = handle_type[0] > 0 ? 1 : 0;
    return true;
}

/* One attribute of the op's schema from the dict (v: its entry, or NULL). */
static bool decode_attr(parser *p, kiln_op kind, const kiln__attr_desc *d, const attr *v,
                        size_t pos, int32_t rank0, kiln__attrs *a) {
    const char *op_name = kiln__op_get_info(kind)->name;
    void *at = kiln__attr_at(a, d->offset);
    if (!v && d->required) {
        if (d->kind == KILN__AK_STRUCT)
            return kiln__text_error(p, pos, "%s needs %s = #stablehlo.%s<...>", op_name, d->name,
                                    d->mnemonic);
        if (d->kind == KILN__AK_CONV)
            return kiln__text_error(p, pos, "%s needs %s", op_name, d->name);
        return kiln__text_error(p, pos, "missing attribute '%s'", d->name);
    }
    switch (d->kind) {
    case KILN__AK_I64: *(int64_t *)at = d->fill; return !v || int_value(p, v, d->name, at);
    case KILN__AK_BOOL:
        if (v && v->kind != A_BOOL && v->kind != A_UNIT)
            return kiln__text_error(p, v->pos, "attribute '%s' must be true or false", d->name);
        *(bool *)at = v && (v->kind == A_UNIT || v->i);
        return true;
    case KILN__AK_DIMS: return to_dims(p, v, d->name, at);
    case KILN__AK_PADDING:
        return get_padding(p, v, d->name, kiln__attr_count_of(d, a, rank0), at,
                           kiln__attr_at(a, d->offset2));
    case KILN__AK_ENUM: {
        int e = (int)d->fill;
        if (v && !enum_value(p, v, d->name, d->enum_names, d->n_enum, &e)) return false;
        *(int *)at = e;
        return true;
    }
    case KILN__AK_STRUCT:
        if (v->kind != A_STRUCT)
            return kiln__text_error(p, v->pos, "%s needs %s = #stablehlo.%s<...>", op_name, d->name,
                                    d->mnemonic);
        return struct_fields(p, d, v, a);
    case KILN__AK_CONV:
        if (v->kind != A_CONV) return kiln__text_error(p, v->pos, "%s needs %s", op_name, d->name);
        *(kiln_conv_params *)at = v->conv;
        return true;
    case KILN__AK_GROUPS: return groups_value(p, v, d->name, at);
    case KILN__AK_UNIT:
        if (v && v->kind != A_UNIT && v->kind != A_BOOL)
            return kiln__text_error(p, v->pos, "attribute '%s' takes no value", d->name);
        *(bool *)at = v && (v->kind == A_UNIT || v->i);
        return true;
    case KILN__AK_CHANNEL:
        if (!v) {
            ((int64_t *)at)[0] = ((int64_t *)at)[1] = 0;
            return true;
        }
        return channel_value(p, v, d->name, at);
    case KILN__AK_NO_TRUE:
        if (v && v->kind == A_ARRAY)
            for (int32_t i = 0; i < v->n; i++)
                if (v->ints[i]) return kiln__text_error(p, v->pos, "%s is not supported", d->name);
        return true;
    }
    return kiln__text_error(p, pos, "internal: attribute kind %d", (int)d->kind);
}

/* Fills op attributes from the dict through the op's schema, then what its operand and
 * result types say. */
bool kiln__text_build_attrs(parser *p, kiln_op kind, const attr *d, size_t pos,
                            const kiln__type *in, int32_t n_in, const kiln__type *out,
                            int32_t n_out, kiln__attrs *a) {
    const kiln__op_syntax *syn = kiln__op_syntax_get(kind);
    int32_t rank0 = n_in > 0 ? in[0].shape.rank : 0;
    for (int32_t i = 0; i < syn->n_attrs; i++)
        if (!decode_attr(p, kind, &syn->attrs[i], kiln__text_dict_get(d, syn->attrs[i].name), pos,
                         rank0, a))
            return false;
    kiln__op_types t = {.n_in = n_in, .n_out = n_out};
    if (n_in > 0) {
        t.in0_dtype = in[0].dtype;
        t.in0_rank = in[0].shape.rank;
        t.in0_shape = in[0].shape;
    }
    for (int32_t i = 0; i < n_out && i < 2; i++) {
        t.out_dtype[i] = out[i].dtype;
        t.out_shape[i] = out[i].shape;
    }
    kiln__attrs_complete(kind, a, &t);
    return true;
}
