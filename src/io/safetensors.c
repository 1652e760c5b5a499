/* SPDX-License-Identifier: Apache-2.0 */
/* safetensors: an 8-byte little-endian header length N, N bytes of UTF-8 JSON describing
 * each tensor (dtype, shape, [begin, end) within the data), then the data. The reference
 * implementation (huggingface/safetensors, safetensors/src/tensor.rs) defines the rules
 * followed here: the header is at most 100,000,000 bytes; sorted by offset, the byte ranges
 * start at 0, follow each other without gap or overlap, each as long as its dtype and shape
 * need, and the last ends where the file ends. Nothing from the file is used before it is
 * checked. */
#define _POSIX_C_SOURCE 200809L

#include "kiln/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "base/file.h"
#include "core/tensor_internal.h"

#define ST_MAX_HEADER 100000000u
#define ST_METADATA_KEY "__metadata__"
/* Offsets and dimensions travel through cJSON as doubles: integers up to 2^53 are exact,
 * and no real file comes near (2^53 bytes is 8 PiB). */
#define ST_MAX_INTEGER 9007199254740992.0

/* The names kiln reads and writes, with their rank in the reference's Dtype enum (which
 * orders dtypes by alignment): saving sorts by that rank, largest first. */
static const struct {
    const char *name;
    kiln_dtype dtype;
    int rank;
} st_dtypes[] = {
    {"BOOL", KILN_BOOL, 0}, {"U8", KILN_U8, 4},    {"I8", KILN_I8, 5},      {"I16", KILN_I16, 11},
    {"U16", KILN_U16, 12},  {"F16", KILN_F16, 13}, {"BF16", KILN_BF16, 14}, {"I32", KILN_I32, 15},
    {"U32", KILN_U32, 16},  {"F32", KILN_F32, 17}, {"F64", KILN_F64, 19},   {"I64", KILN_I64, 20},
    {"U64", KILN_U64, 21},
};
#define ST_N_DTYPES (sizeof st_dtypes / sizeof st_dtypes[0])

/* Valid safetensors dtypes that kiln has no type for. */
static const char *const st_foreign_dtypes[] = {"F4",          "F6_E2M3",     "F6_E3M2",
                                                "F8_E5M2",     "F8_E4M3",     "F8_E8M0",
                                                "F8_E4M3FNUZ", "F8_E5M2FNUZ", "C64"};

static const char *st_dtype_name(kiln_dtype dtype) {
    for (size_t i = 0; i < ST_N_DTYPES; i++)
        if (st_dtypes[i].dtype == dtype) return st_dtypes[i].name;
    return NULL;
}

static int st_dtype_rank(kiln_dtype dtype) {
    for (size_t i = 0; i < ST_N_DTYPES; i++)
        if (st_dtypes[i].dtype == dtype) return st_dtypes[i].rank;
    return -1;
}

typedef struct st_entry {
    const char *name;
    kiln_dtype dtype;
    kiln_shape shape;
    uint64_t begin, end; /* within the data */
} st_entry;

/* One block holds the struct, the entries, the metadata pointers, the name index and every
 * string; the data is a second block. */
struct kiln_safetensors {
    kiln_allocator allocator;
    size_t block_size;
    int32_t count;
    st_entry *entries; /* in data order */
    int32_t *by_name;  /* entry indices sorted by name, for lookup */
    int32_t n_metadata;
    const char **metadata_keys; /* file order */
    int32_t *metadata_by_key;   /* metadata indices sorted by key, for lookup */
    const char **metadata_values;
    unsigned char *data;
    size_t data_size;
};

/* ---- small helpers -------------------------------------------------------------------- */

static uint64_t read_le64(const unsigned char *b) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

/* Strict UTF-8, as Rust's str::from_utf8 checks it: no overlong forms, no surrogates,
 * nothing above U+10FFFF. Returns the offset of the first bad byte, or len. */
static size_t utf8_valid_prefix(const unsigned char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t n;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1fu;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0fu;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07u;
        } else {
            return i;
        }
        if (len - i <= n) return i;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return i;
            cp = cp << 6 | (s[i + k] & 0x3fu);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += n + 1;
    }
    return len;
}

static bool utf8_valid(const char *s) {
    size_t len = strlen(s);
    return utf8_valid_prefix((const unsigned char *)s, len) == len;
}

/* A name for messages: at most 64 bytes of it, so a hostile name cannot fill the message. */
#define NAME_FMT "'%.64s%s'"
#define NAME_ARG(s) (s), strlen(s) > 64 ? "..." : ""

/* ---- header parsing -------------------------------------------------------------------- */

typedef struct parser {
    kiln_ctx *cx;
    const char *source;
} parser;

static kiln_status bad_header(parser *p, const char *fmt_what, const char *name) {
    if (name)
        return kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT,
                                  "%s: malformed safetensors header: tensor " NAME_FMT ": %s",
                                  p->source, NAME_ARG(name), fmt_what);
    return kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT, "%s: malformed safetensors header: %s",
                              p->source, fmt_what);
}

/* A non-negative integer below 2^53, where every integer the JSON text can hold is read
 * exactly (the JSON reader keeps numbers as doubles: 2^53 + 1 would arrive as 2^53). */
typedef enum { INDEX_OK, INDEX_NOT_INTEGER, INDEX_TOO_LARGE } index_result;

static index_result json_index(const cJSON *item, uint64_t *out) {
    if (!cJSON_IsNumber(item)) return INDEX_NOT_INTEGER;
    double d = item->valuedouble;
    if (!(d >= 0)) return INDEX_NOT_INTEGER;
    if (d >= ST_MAX_INTEGER) return INDEX_TOO_LARGE; /* (every double this large is whole) */
    if (d != (double)(uint64_t)d) return INDEX_NOT_INTEGER;
    *out = (uint64_t)d;
    return INDEX_OK;
}

static kiln_status parse_dtype(parser *p, const char *name, const cJSON *item, kiln_dtype *out) {
    if (!cJSON_IsString(item)) return bad_header(p, "\"dtype\" is not a string", name);
    const char *s = item->valuestring;
    for (size_t i = 0; i < ST_N_DTYPES; i++)
        if (strcmp(s, st_dtypes[i].name) == 0) {
            *out = st_dtypes[i].dtype;
            return KILN_OK;
        }
    for (size_t i = 0; i < sizeof st_foreign_dtypes / sizeof st_foreign_dtypes[0]; i++)
        if (strcmp(s, st_foreign_dtypes[i]) == 0)
            return kiln_ctx_set_error(p->cx, KILN_UNIMPLEMENTED,
                                      "%s: tensor " NAME_FMT " has dtype %s, which kiln does not "
                                      "support (it reads BOOL, U8, I8, U16, I16, U32, I32, U64, "
                                      "I64, F16, BF16, F32, F64)",
                                      p->source, NAME_ARG(name), s);
    return kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT,
                              "%s: malformed safetensors header: tensor " NAME_FMT
                              " has unknown dtype " NAME_FMT,
                              p->source, NAME_ARG(name), NAME_ARG(s));
}

static kiln_status parse_shape(parser *p, const char *name, const cJSON *item, kiln_shape *out) {
    if (!cJSON_IsArray(item)) return bad_header(p, "\"shape\" is not an array", name);
    kiln_shape shape = {.rank = 0};
    for (const cJSON *d = item->child; d; d = d->next) {
        uint64_t v;
        index_result r = json_index(d, &v);
        if (r == INDEX_TOO_LARGE)
            return bad_header(p, "a dimension of \"shape\" is 2^53 or more", name);
        if (r != INDEX_OK)
            return bad_header(p, "a dimension of \"shape\" is not a non-negative integer", name);
        if (shape.rank == KILN_MAX_RANK)
            return kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT,
                                      "%s: tensor " NAME_FMT
                                      " has more than %d dimensions (KILN_MAX_RANK)",
                                      p->source, NAME_ARG(name), KILN_MAX_RANK);
        shape.dims[shape.rank++] = (int64_t)v;
    }
    *out = shape;
    return KILN_OK;
}

static kiln_status parse_offsets(parser *p, const char *name, const cJSON *item, st_entry *e) {
    const cJSON *b = cJSON_IsArray(item) ? item->child : NULL;
    const cJSON *end = b ? b->next : NULL;
    if (!b || !end || end->next)
        return bad_header(p, "\"data_offsets\" is not an array of two non-negative integers", name);
    index_result rb = json_index(b, &e->begin), re = json_index(end, &e->end);
    if (rb == INDEX_TOO_LARGE || re == INDEX_TOO_LARGE)
        return bad_header(p,
                          "an offset of \"data_offsets\" is 2^53 or more (no file is that large, "
                          "and JSON numbers are not exact there)",
                          name);
    if (rb != INDEX_OK || re != INDEX_OK)
        return bad_header(p, "\"data_offsets\" is not an array of two non-negative integers", name);
    return KILN_OK;
}

/* Fills *e from the tensor's object; `name` already points into the block. */
static kiln_status parse_entry(parser *p, const char *name, const cJSON *obj, st_entry *e) {
    if (!cJSON_IsObject(obj)) return bad_header(p, "its value is not an object", name);
    const cJSON *fields[3] = {NULL, NULL, NULL};
    static const char *const field_names[3] = {"dtype", "shape", "data_offsets"};
    for (const cJSON *f = obj->child; f; f = f->next) {
        /* Other keys are ignored, as the reference reader ignores them. */
        for (int k = 0; k < 3; k++) {
            if (f->string && strcmp(f->string, field_names[k]) == 0) {
                if (fields[k]) {
                    char what[64];
                    snprintf(what, sizeof what, "\"%s\" appears twice", field_names[k]);
                    return bad_header(p, what, name);
                }
                fields[k] = f;
            }
        }
    }
    for (int k = 0; k < 3; k++)
        if (!fields[k]) {
            char what[64];
            snprintf(what, sizeof what, "\"%s\" is missing", field_names[k]);
            return bad_header(p, what, name);
        }
    e->name = name;
    kiln_status s = parse_dtype(p, name, fields[0], &e->dtype);
    if (s == KILN_OK) s = parse_shape(p, name, fields[1], &e->shape);
    if (s == KILN_OK) s = parse_offsets(p, name, fields[2], e);
    return s;
}

static int cmp_by_offset(const void *a, const void *b) {
    const st_entry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* qsort has no context argument: the entries being indexed by name, set by the caller on
 * this thread only. */
static _Thread_local const st_entry *sort_entries;
static int cmp_index_by_name(const void *a, const void *b) {
    return strcmp(sort_entries[*(const int32_t *)a].name, sort_entries[*(const int32_t *)b].name);
}
static _Thread_local const char *const *sort_keys;
static int cmp_index_by_key(const void *a, const void *b) {
    return strcmp(sort_keys[*(const int32_t *)a], sort_keys[*(const int32_t *)b]);
}

/* The ranges, in data order, must tile [0, data_size) exactly. */
static kiln_status check_layout(parser *p, const kiln_safetensors *st, size_t data_size) {
    uint64_t at = 0;
    for (int32_t i = 0; i < st->count; i++) {
        const st_entry *e = &st->entries[i];
        if (e->end < e->begin)
            return kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT,
                                      "%s: malformed safetensors header: tensor " NAME_FMT
                                      " has data_offsets [%llu, %llu], which end before they "
                                      "begin",
                                      p->source, NAME_ARG(e->name), (unsigned long long)e->begin,
                                      (unsigned long long)e->end);
        if (e->begin != at)
            return kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT,
                                      "%s: malformed safetensors header: tensor " NAME_FMT
                                      " has data_offsets [%llu, %llu], but %s %llu (%s)",
                                      p->source, NAME_ARG(e->name), (unsigned long long)e->begin,
                                      (unsigned long long)e->end,
                                      i == 0 ? "the data starts at" : "the previous tensor ends at",
                                      (unsigned long long)at,
                                      e->begin > at ? "a gap" : "the ranges overlap");
        size_t nbytes = 0;
        bool fits = kiln_shape_nbytes(&e->shape, e->dtype, &nbytes) && nbytes <= ST_MAX_INTEGER;
        if (fits && e->end - e->begin == nbytes) {
            at = e->end;
            continue;
        }
        char shape[KILN_MAX_RANK * 21 + 3];
        kiln_shape_format(&e->shape, shape, sizeof shape);
        if (!fits)
            return kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT,
                                      "%s: malformed safetensors header: tensor " NAME_FMT
                                      " of shape %s is too large: its byte size overflows",
                                      p->source, NAME_ARG(e->name), shape);
        return kiln_ctx_set_error(
            p->cx, KILN_INVALID_ARGUMENT,
            "%s: malformed safetensors header: tensor " NAME_FMT
            " has data_offsets [%llu, %llu] (%llu bytes), but %s%s "
            "needs %zu",
            p->source, NAME_ARG(e->name), (unsigned long long)e->begin, (unsigned long long)e->end,
            (unsigned long long)(e->end - e->begin), st_dtype_name(e->dtype), shape, nbytes);
    }
    if (at > data_size)
        return kiln_ctx_set_error(p->cx, KILN_DATA_LOSS,
                                  "%s: truncated safetensors data: the header describes %llu "
                                  "bytes, the file has %zu",
                                  p->source, (unsigned long long)at, data_size);
    if (at < data_size)
        return kiln_ctx_set_error(p->cx, KILN_DATA_LOSS,
                                  "%s: safetensors data has %llu bytes after the %llu that the "
                                  "header describes",
                                  p->source, (unsigned long long)(data_size - at),
                                  (unsigned long long)at);
    return KILN_OK;
}

static size_t round8(size_t n) { return (n + 7) & ~(size_t)7; }

static void st_free(kiln_safetensors *st) {
    if (!st) return;
    kiln_allocator a = st->allocator;
    if (st->data) kiln__raw_free(&a, st->data, st->data_size);
    kiln__raw_free(&a, st, st->block_size);
}

static char *copy_string(char **pool, const char *s) {
    size_t n = strlen(s) + 1;
    char *dst = *pool;
    memcpy(dst, s, n);
    *pool += n;
    return dst;
}

/* Builds the object from the parsed JSON (no data yet) and checks it against a data
 * section of `data_size` bytes. */
static kiln_status build(parser *p, const cJSON *root, size_t data_size, kiln_safetensors **out) {
    kiln_ctx *cx = p->cx;
    if (!cJSON_IsObject(root)) return bad_header(p, "it is not a JSON object", NULL);
    /* Sizes first, so that everything but the data fits in one block. */
    size_t count = 0, n_meta = 0, strings = 0;
    const cJSON *meta = NULL;
    for (const cJSON *c = root->child; c; c = c->next) {
        if (!c->string) return bad_header(p, "a key is missing", NULL);
        if (strcmp(c->string, ST_METADATA_KEY) == 0) {
            if (meta) return bad_header(p, "\"__metadata__\" appears twice", NULL);
            meta = c;
            if (cJSON_IsNull(c)) continue;
            if (!cJSON_IsObject(c)) return bad_header(p, "\"__metadata__\" is not an object", NULL);
            for (const cJSON *m = c->child; m; m = m->next) {
                if (!m->string) return bad_header(p, "a metadata key is missing", NULL);
                if (!cJSON_IsString(m))
                    return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                              "%s: malformed safetensors header: the value of "
                                              "metadata key " NAME_FMT " is not a string",
                                              p->source, NAME_ARG(m->string));
                n_meta++;
                strings += strlen(m->string) + strlen(m->valuestring) + 2;
            }
            continue;
        }
        count++;
        strings += strlen(c->string) + 1;
    }
    if (count > INT32_MAX || n_meta > INT32_MAX) return bad_header(p, "too many entries", NULL);
    size_t off_entries = round8(sizeof(kiln_safetensors));
    size_t off_meta = off_entries + round8(count * sizeof(st_entry));
    size_t off_index = off_meta + round8(2 * n_meta * sizeof(const char *));
    size_t off_meta_index = off_index + round8(count * sizeof(int32_t));
    size_t off_strings = off_meta_index + round8(n_meta * sizeof(int32_t));
    size_t block_size = off_strings + strings;
    char *block = kiln__calloc(cx, block_size, 8, "safetensors: tensor table");
    if (!block) return KILN_RESOURCE_EXHAUSTED;
    kiln_safetensors *st = (kiln_safetensors *)(void *)block;
    st->allocator = cx->allocator;
    st->block_size = block_size;
    st->count = (int32_t)count;
    st->entries = (st_entry *)(void *)(block + off_entries);
    st->metadata_keys = (const char **)(void *)(block + off_meta);
    st->metadata_values = st->metadata_keys + n_meta;
    st->n_metadata = (int32_t)n_meta;
    st->by_name = (int32_t *)(void *)(block + off_index);
    st->metadata_by_key = (int32_t *)(void *)(block + off_meta_index);
    char *pool = block + off_strings;

    kiln_status s = KILN_OK;
    size_t i = 0;
    for (const cJSON *c = root->child; c && s == KILN_OK; c = c->next) {
        if (c == meta) continue;
        s = parse_entry(p, copy_string(&pool, c->string), c, &st->entries[i++]);
    }
    if (s == KILN_OK && n_meta > 0) {
        size_t k = 0;
        for (const cJSON *m = meta->child; m; m = m->next, k++) {
            st->metadata_keys[k] = copy_string(&pool, m->string);
            st->metadata_values[k] = copy_string(&pool, m->valuestring);
            st->metadata_by_key[k] = (int32_t)k;
        }
        /* Sorting finds repeated keys in n log n: a hostile header may hold millions. */
        sort_keys = st->metadata_keys;
        qsort(st->metadata_by_key, n_meta, sizeof(int32_t), cmp_index_by_key);
        sort_keys = NULL;
        for (k = 1; k < n_meta && s == KILN_OK; k++) {
            const char *key = st->metadata_keys[st->metadata_by_key[k]];
            if (strcmp(st->metadata_keys[st->metadata_by_key[k - 1]], key) == 0)
                s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                       "%s: malformed safetensors header: metadata key " NAME_FMT
                                       " appears twice",
                                       p->source, NAME_ARG(key));
        }
    }
    if (s == KILN_OK && count > 0) {
        qsort(st->entries, count, sizeof(st_entry), cmp_by_offset);
        for (size_t k = 0; k < count; k++)
            st->by_name[k] = (int32_t)k;
        sort_entries = st->entries;
        qsort(st->by_name, count, sizeof(int32_t), cmp_index_by_name);
        sort_entries = NULL;
        for (size_t k = 1; k < count && s == KILN_OK; k++) {
            const char *name = st->entries[st->by_name[k]].name;
            if (strcmp(st->entries[st->by_name[k - 1]].name, name) == 0)
                s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                       "%s: malformed safetensors header: tensor " NAME_FMT
                                       " appears twice",
                                       p->source, NAME_ARG(name));
        }
    }
    if (s == KILN_OK) s = check_layout(p, st, data_size);
    if (s != KILN_OK) {
        st_free(st);
        return s;
    }
    *out = st;
    return KILN_OK;
}

/* What the JSON reader cannot say well, found before it runs: nesting deeper than its limit
 * (it would only report invalid JSON) and a \u0000 escape in a string (it would cut the
 * string there, so that two names could read as one). Returns KILN_OK or the error. */
static kiln_status prescan_json(parser *p, const char *text, size_t len) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        if (in_string) {
            if (ch == '"') {
                in_string = false;
            } else if (ch == '\\' && i + 1 < len) {
                if (text[i + 1] == 'u' && i + 5 < len && memcmp(text + i + 2, "0000", 4) == 0)
                    return kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT,
                                              "%s: malformed safetensors header: a string holds "
                                              "\\u0000 (NUL) at byte %zu; names and metadata "
                                              "cannot",
                                              p->source, i);
                i++; /* the escaped character */
            }
        } else if (ch == '"') {
            in_string = true;
        } else if (ch == '{' || ch == '[') {
            if (++depth > CJSON_NESTING_LIMIT)
                return kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT,
                                          "%s: malformed safetensors header: nested deeper than "
                                          "%d levels at byte %zu",
                                          p->source, CJSON_NESTING_LIMIT, i);
        } else if (ch == '}' || ch == ']') {
            depth--;
        }
    }
    return KILN_OK;
}

/* Parses `len` header bytes at `text` (which must be followed by a readable NUL: cJSON is
 * then safe even where it would peek one byte ahead). */
static kiln_status parse_header(parser *p, const char *text, size_t len, size_t data_size,
                                kiln_safetensors **out) {
    size_t good = utf8_valid_prefix((const unsigned char *)text, len);
    if (good != len)
        return kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT,
                                  "%s: malformed safetensors header: invalid UTF-8 at byte %zu",
                                  p->source, good);
    kiln_status pre = prescan_json(p, text, len);
    if (pre != KILN_OK) return pre;
    /* cJSON records the last parse error in a process-wide variable on every parse, so
     * loads on different ctxs and threads take turns parsing. */
    static pthread_mutex_t cjson_lock = PTHREAD_MUTEX_INITIALIZER;
    const char *end = NULL;
    pthread_mutex_lock(&cjson_lock);
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    pthread_mutex_unlock(&cjson_lock);
    if (!root) {
        size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
        return kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT,
                                  "%s: malformed safetensors header: invalid JSON near byte %zu",
                                  p->source, at);
    }
    /* Trailing spaces are the writer's padding; anything else is not JSON. */
    for (const char *q = end; q < text + len; q++)
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') {
            cJSON_Delete(root);
            return kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT,
                                      "%s: malformed safetensors header: unexpected text after "
                                      "the JSON object at byte %zu",
                                      p->source, (size_t)(q - text));
        }
    kiln_status s = build(p, root, data_size, out);
    cJSON_Delete(root);
    return s;
}

/* Checks the 8-byte length against the limit and the bytes present after it. */
static kiln_status parse_length(parser *p, const unsigned char *first8, size_t avail, size_t total,
                                size_t *out_len) {
    if (avail < 8)
        return kiln_ctx_set_error(p->cx, KILN_DATA_LOSS,
                                  "%s: truncated safetensors file: %zu bytes, less than the "
                                  "8-byte header length",
                                  p->source, avail);
    uint64_t n = read_le64(first8);
    if (n > ST_MAX_HEADER)
        return kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT,
                                  "%s: safetensors header length %llu exceeds the limit of %u "
                                  "bytes",
                                  p->source, (unsigned long long)n, ST_MAX_HEADER);
    if (n > total - 8)
        return kiln_ctx_set_error(p->cx, KILN_DATA_LOSS,
                                  "%s: truncated safetensors header: %llu bytes announced, %zu "
                                  "present",
                                  p->source, (unsigned long long)n, total - 8);
    *out_len = (size_t)n;
    return KILN_OK;
}

/* Copies the header into a NUL-terminated block and parses it. */
static kiln_status parse_header_copy(parser *p, const void *src, size_t len, size_t data_size,
                                     kiln_safetensors **out) {
    char *text = kiln__alloc(p->cx, len + 1, 1, "safetensors: header");
    if (!text) return KILN_RESOURCE_EXHAUSTED;
    if (len) memcpy(text, src, len);
    text[len] = '\0';
    kiln_status s = parse_header(p, text, len, data_size, out);
    kiln__free(p->cx, text, len + 1);
    return s;
}

/* kiln keeps bools as 0 or 1. */
static void fix_bools(kiln_safetensors *st) {
    for (int32_t i = 0; i < st->count; i++) {
        const st_entry *e = &st->entries[i];
        if (e->dtype != KILN_BOOL) continue;
        for (uint64_t k = e->begin; k < e->end; k++)
            st->data[k] = st->data[k] != 0;
    }
}

/* ---- loading ------------------------------------------------------------------------------ */

/* Gives st its data buffer of data_size bytes (`what` names it in messages); frees st when
 * there is no memory for it. */
static kiln_status alloc_data(kiln_ctx *cx, kiln_safetensors *st, size_t data_size,
                              const char *what) {
    st->data = kiln__alloc(cx, data_size, KILN_DATA_ALIGNMENT, what);
    if (!st->data) {
        st_free(st);
        return KILN_RESOURCE_EXHAUSTED;
    }
    st->data_size = data_size;
    return KILN_OK;
}

kiln_status kiln_safetensors_load_buffer(kiln_ctx *cx, const void *data, size_t size,
                                         kiln_safetensors **out) {
    static const char fn[] = "kiln_safetensors_load_buffer";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out) return kiln__null_argument(cx, fn, "out");
    *out = NULL;
    if (!data && size > 0) return kiln__null_argument(cx, fn, "data");
    parser p = {.cx = cx, .source = "<buffer>"};
    const unsigned char *bytes = data;
    size_t hlen = 0;
    kiln_status s = parse_length(&p, bytes, size, size, &hlen);
    if (s != KILN_OK) return s;
    size_t data_size = size - 8 - hlen;
    kiln_safetensors *st = NULL;
    s = parse_header_copy(&p, bytes + 8, hlen, data_size, &st);
    if (s != KILN_OK) return s;
    if (data_size) {
        if ((s = alloc_data(cx, st, data_size, "safetensors: data")) != KILN_OK) return s;
        memcpy(st->data, bytes + 8 + hlen, data_size);
        fix_bools(st);
    }
    *out = st;
    return KILN_OK;
}

/* Why a file whose size was checked first can still be short. */
static const char SHRANK[] = " (the file shrank while it was read)";

static kiln_status load_file(kiln_ctx *cx, const char *path, FILE *f, size_t file_size,
                             kiln_safetensors **out) {
    parser p = {.cx = cx, .source = path};
    unsigned char first8[8];
    size_t pre = file_size < 8 ? file_size : 8;
    kiln_status s =
        kiln__file_read_exact(cx, path, f, first8, pre, "safetensors header length", SHRANK);
    if (s != KILN_OK) return s;
    size_t hlen = 0;
    s = parse_length(&p, first8, pre, file_size, &hlen);
    if (s != KILN_OK) return s;
    size_t data_size = file_size - 8 - hlen;
    char *text = kiln__alloc(cx, hlen + 1, 1, "kiln_safetensors_load: header");
    if (!text) return KILN_RESOURCE_EXHAUSTED;
    s = kiln__file_read_exact(cx, path, f, text, hlen, "safetensors header", SHRANK);
    kiln_safetensors *st = NULL;
    if (s == KILN_OK) {
        text[hlen] = '\0';
        s = parse_header(&p, text, hlen, data_size, &st);
    }
    kiln__free(cx, text, hlen + 1);
    if (s != KILN_OK) return s;
    if (data_size) {
        if ((s = alloc_data(cx, st, data_size, "kiln_safetensors_load: data")) != KILN_OK) return s;
        s = kiln__file_read_exact(cx, path, f, st->data, data_size, "safetensors data", SHRANK);
        if (s != KILN_OK) {
            st_free(st);
            return s;
        }
        fix_bools(st);
    }
    *out = st;
    return KILN_OK;
}

kiln_status kiln_safetensors_load(kiln_ctx *cx, const char *path, kiln_safetensors **out) {
    static const char fn[] = "kiln_safetensors_load";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out) return kiln__null_argument(cx, fn, "out");
    *out = NULL;
    if (!path) return kiln__null_argument(cx, fn, "path");
    FILE *f;
    size_t size;
    kiln_status s = kiln__file_open_read(cx, path, &f, &size);
    if (s != KILN_OK) return s;
    s = load_file(cx, path, f, size, out);
    fclose(f);
    return s;
}

/* ---- accessors ---------------------------------------------------------------------------- */

int32_t kiln_safetensors_count(const kiln_safetensors *st) { return st ? st->count : 0; }

const char *kiln_safetensors_name(const kiln_safetensors *st, int32_t i) {
    if (!st || i < 0 || i >= st->count) return NULL;
    return st->entries[i].name;
}

int32_t kiln_safetensors_find(const kiln_safetensors *st, const char *name) {
    if (!st || !name) return -1;
    int32_t lo = 0, hi = st->count;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->entries[st->by_name[mid]].name, name);
        if (c == 0) return st->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

bool kiln_safetensors_info(const kiln_safetensors *st, int32_t i, kiln_dtype *out_dtype,
                           kiln_shape *out_shape) {
    if (!st || i < 0 || i >= st->count) return false;
    if (out_dtype) *out_dtype = st->entries[i].dtype;
    if (out_shape) *out_shape = st->entries[i].shape;
    return true;
}

kiln_tensor *kiln_safetensors_get(kiln_ctx *cx, const kiln_safetensors *st, const char *name) {
    static const char fn[] = "kiln_safetensors_get";
    if (!cx) return NULL;
    if (!st) {
        kiln__null_argument(cx, fn, "st");
        return NULL;
    }
    if (!name) {
        kiln__null_argument(cx, fn, "name");
        return NULL;
    }
    int32_t i = kiln_safetensors_find(st, name);
    if (i < 0) {
        kiln_ctx_set_error(cx, KILN_NOT_FOUND, "%s: no tensor named " NAME_FMT " (the file has %d)",
                           fn, NAME_ARG(name), st->count);
        return NULL;
    }
    const st_entry *e = &st->entries[i];
    kiln_tensor *t = kiln__tensor_new(cx, fn, e->dtype, e->shape);
    if (!t) return NULL;
    size_t nbytes = (size_t)(e->end - e->begin);
    if (nbytes) memcpy(kiln__tensor_mutable_data(t), st->data + e->begin, nbytes);
    return t;
}

const char *kiln_safetensors_metadata(const kiln_safetensors *st, const char *key) {
    if (!st || !key) return NULL;
    int32_t lo = 0, hi = st->n_metadata;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int32_t k = st->metadata_by_key[mid];
        int c = strcmp(st->metadata_keys[k], key);
        if (c == 0) return st->metadata_values[k];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int32_t kiln_safetensors_metadata_count(const kiln_safetensors *st) {
    return st ? st->n_metadata : 0;
}

const char *kiln_safetensors_metadata_key(const kiln_safetensors *st, int32_t i) {
    if (!st || i < 0 || i >= st->n_metadata) return NULL;
    return st->metadata_keys[i];
}

void kiln_safetensors_release(kiln_safetensors *st) { st_free(st); }

/* ---- saving ------------------------------------------------------------------------------- */

/* Appends to a buffer, or only counts when buf is NULL: the header is formatted twice,
 * once to size it and once to fill it. */
typedef struct writer {
    char *buf;
    size_t len;
} writer;

static void put(writer *w, const char *s, size_t n) {
    if (w->buf) memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void puts_(writer *w, const char *s) { put(w, s, strlen(s)); }

/* A JSON string as serde_json writes it: '"' and '\\' escaped, the short escapes for
 * \b \f \n \r \t, \u00xx for other control characters, everything else as is. */
static void put_json_string(writer *w, const char *s) {
    put(w, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        char esc[8];
        switch (*c) {
        case '"': put(w, "\\\"", 2); break;
        case '\\': put(w, "\\\\", 2); break;
        case '\b': put(w, "\\b", 2); break;
        case '\f': put(w, "\\f", 2); break;
        case '\n': put(w, "\\n", 2); break;
        case '\r': put(w, "\\r", 2); break;
        case '\t': put(w, "\\t", 2); break;
        default:
            if (*c < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *c);
                put(w, esc, 6);
            } else {
                put(w, (const char *)c, 1);
            }
        }
    }
    put(w, "\"", 1);
}

static void put_u64(writer *w, uint64_t v) {
    char num[24];
    int n = snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    put(w, num, (size_t)n);
}

typedef struct save_item {
    const char *name;
    const kiln_tensor *t;
    int rank;
} save_item;

static int cmp_save(const void *a, const void *b) {
    const save_item *x = a, *y = b;
    if (x->rank != y->rank) return x->rank > y->rank ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_save_name(const void *a, const void *b) {
    return strcmp(((const save_item *)a)->name, ((const save_item *)b)->name);
}

static void format_header(writer *w, const save_item *items, int32_t n,
                          const char *const *metadata_kv, int32_t n_metadata) {
    put(w, "{", 1);
    if (n_metadata > 0) {
        put_json_string(w, ST_METADATA_KEY);
        put(w, ":{", 2);
        for (int32_t i = 0; i < n_metadata; i++) {
            if (i) put(w, ",", 1);
            put_json_string(w, metadata_kv[2 * i]);
            put(w, ":", 1);
            put_json_string(w, metadata_kv[2 * i + 1]);
        }
        put(w, "}", 1);
    }
    uint64_t offset = 0;
    for (int32_t i = 0; i < n; i++) {
        const kiln_tensor *t = items[i].t;
        if (i || n_metadata > 0) put(w, ",", 1);
        put_json_string(w, items[i].name);
        puts_(w, ":{\"dtype\":\"");
        puts_(w, st_dtype_name(t->dtype));
        puts_(w, "\",\"shape\":[");
        for (int32_t d = 0; d < t->shape.rank; d++) {
            if (d) put(w, ",", 1);
            put_u64(w, (uint64_t)t->shape.dims[d]);
        }
        puts_(w, "],\"data_offsets\":[");
        put_u64(w, offset);
        put(w, ",", 1);
        offset += t->nbytes;
        put_u64(w, offset);
        puts_(w, "]}");
    }
    put(w, "}", 1);
    while (w->len % 8)
        put(w, " ", 1);
}

/* A checked, sorted save: the items, the header (8-byte length included) and the data
 * size. The caller frees items and header with the ctx's allocator. */
typedef struct save_plan {
    save_item *items;
    size_t items_size;
    char *header;
    size_t header_size;
    size_t data_size;
} save_plan;

static void plan_free(kiln_ctx *cx, save_plan *plan) {
    if (plan->items) kiln__free(cx, plan->items, plan->items_size);
    if (plan->header) kiln__free(cx, plan->header, plan->header_size);
    plan->items = NULL;
    plan->header = NULL;
}

static kiln_status plan_save(kiln_ctx *cx, const char *fn, const char *const *names,
                             kiln_tensor *const *tensors, int32_t n, const char *const *metadata_kv,
                             int32_t n_metadata, save_plan *plan) {
    memset(plan, 0, sizeof *plan);
    if (n < 0)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: n is negative (%d)", fn, n);
    if (n_metadata < 0)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: n_metadata is negative (%d)", fn,
                                  n_metadata);
    if (n > 0 && !names) return kiln__null_argument(cx, fn, "names");
    if (n > 0 && !tensors) return kiln__null_argument(cx, fn, "tensors");
    if (n_metadata > 0 && !metadata_kv) return kiln__null_argument(cx, fn, "metadata_kv");
    for (int32_t i = 0; i < 2 * n_metadata; i++) {
        const char *s = metadata_kv[i];
        if (!s)
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: metadata_kv[%d] is NULL", fn,
                                      i);
        if (!utf8_valid(s))
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: metadata_kv[%d] is not valid UTF-8", fn, i);
        if (i % 2 == 0)
            for (int32_t j = 0; j < i; j += 2)
                if (strcmp(metadata_kv[j], s) == 0)
                    return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                              "%s: metadata key " NAME_FMT
                                              " appears twice (metadata_kv[%d] and [%d])",
                                              fn, NAME_ARG(s), j, i);
    }
    size_t data_size = 0;
    for (int32_t i = 0; i < n; i++) {
        const char *name = names[i];
        const kiln_tensor *t = tensors[i];
        if (!name)
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: names[%d] is NULL", fn, i);
        if (!utf8_valid(name))
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: names[%d] is not valid UTF-8",
                                      fn, i);
        if (strcmp(name, ST_METADATA_KEY) == 0)
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: names[%d] is \"__metadata__\", which the format "
                                      "reserves",
                                      fn, i);
        if (!t)
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: tensors[%d] (" NAME_FMT ") is NULL", fn, i,
                                      NAME_ARG(name));
        if (kiln__tensor_trace(t)) return kiln__traced_error(cx, fn);
        if (kiln__tensor_dead(t)) return kiln__dead_error(cx, fn, t);
        if (t->nbytes && !kiln_tensor_data(t))
            return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                      "%s: tensors[%d] (" NAME_FMT ") is not in host memory", fn, i,
                                      NAME_ARG(name));
        if (__builtin_add_overflow(data_size, t->nbytes, &data_size))
            return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: the tensors are too large",
                                      fn);
    }
    if (n > 0) {
        plan->items_size = (size_t)n * sizeof(save_item);
        plan->items = kiln__alloc(cx, plan->items_size, 8, fn);
        if (!plan->items) return KILN_RESOURCE_EXHAUSTED;
        for (int32_t i = 0; i < n; i++)
            plan->items[i] = (save_item){names[i], tensors[i], st_dtype_rank(tensors[i]->dtype)};
        /* By name first, to find repeated names whatever their dtypes; then in file order. */
        qsort(plan->items, (size_t)n, sizeof(save_item), cmp_save_name);
        for (int32_t i = 1; i < n; i++)
            if (strcmp(plan->items[i - 1].name, plan->items[i].name) == 0) {
                const char *name = plan->items[i].name;
                plan_free(cx, plan);
                return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                          "%s: the name " NAME_FMT " appears twice in names", fn,
                                          NAME_ARG(name));
            }
        qsort(plan->items, (size_t)n, sizeof(save_item), cmp_save);
    }
    writer w = {NULL, 0};
    format_header(&w, plan->items, n, metadata_kv, n_metadata);
    if (w.len > ST_MAX_HEADER) {
        plan_free(cx, plan);
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: the safetensors header would be %zu bytes, over the limit "
                                  "of %u",
                                  fn, w.len, ST_MAX_HEADER);
    }
    plan->header_size = 8 + w.len;
    plan->header = kiln__alloc(cx, plan->header_size, 8, fn);
    if (!plan->header) {
        plan_free(cx, plan);
        return KILN_RESOURCE_EXHAUSTED;
    }
    uint64_t hlen = w.len;
    for (int b = 0; b < 8; b++)
        plan->header[b] = (char)(unsigned char)(hlen >> (8 * b));
    w = (writer){plan->header + 8, 0};
    format_header(&w, plan->items, n, metadata_kv, n_metadata);
    plan->data_size = data_size;
    return KILN_OK;
}

kiln_status kiln_safetensors_save_buffer(kiln_ctx *cx, const char *const *names,
                                         kiln_tensor *const *tensors, int32_t n,
                                         const char *const *metadata_kv, int32_t n_metadata,
                                         void **out_data, size_t *out_size) {
    static const char fn[] = "kiln_safetensors_save_buffer";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_data) return kiln__null_argument(cx, fn, "out_data");
    *out_data = NULL;
    if (!out_size) return kiln__null_argument(cx, fn, "out_size");
    *out_size = 0;
    save_plan plan;
    kiln_status s = plan_save(cx, fn, names, tensors, n, metadata_kv, n_metadata, &plan);
    if (s != KILN_OK) return s;
    if (plan.data_size > SIZE_MAX - plan.header_size) {
        plan_free(cx, &plan);
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: the tensors are too large", fn);
    }
    size_t total = plan.header_size + plan.data_size;
    unsigned char *out = kiln__alloc(cx, total, KILN_DATA_ALIGNMENT, fn);
    if (!out) {
        plan_free(cx, &plan);
        return KILN_RESOURCE_EXHAUSTED;
    }
    memcpy(out, plan.header, plan.header_size);
    size_t at = plan.header_size;
    for (int32_t i = 0; i < n; i++) {
        const kiln_tensor *t = plan.items[i].t;
        if (t->nbytes) memcpy(out + at, kiln_tensor_data(t), t->nbytes);
        at += t->nbytes;
    }
    plan_free(cx, &plan);
    *out_data = out;
    *out_size = total;
    return KILN_OK;
}

/* What kiln_safetensors_save writes: the header, then every tensor's bytes in order. */
typedef struct save_write {
    const save_plan *plan;
    int32_t n;
} save_write;

static bool write_safetensors(void *user, FILE *f) {
    const save_write *w = user;
    bool ok = fwrite(w->plan->header, 1, w->plan->header_size, f) == w->plan->header_size;
    for (int32_t i = 0; ok && i < w->n; i++) {
        const kiln_tensor *t = w->plan->items[i].t;
        ok = !t->nbytes || fwrite(kiln_tensor_data(t), 1, t->nbytes, f) == t->nbytes;
    }
    return ok;
}

kiln_status kiln_safetensors_save(kiln_ctx *cx, const char *path, const char *const *names,
                                  kiln_tensor *const *tensors, int32_t n,
                                  const char *const *metadata_kv, int32_t n_metadata) {
    static const char fn[] = "kiln_safetensors_save";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!path) return kiln__null_argument(cx, fn, "path");
    save_plan plan;
    kiln_status s = plan_save(cx, fn, names, tensors, n, metadata_kv, n_metadata, &plan);
    if (s != KILN_OK) return s;

    save_write w = {&plan, n};
    s = kiln__file_save_atomic(cx, fn, path, write_safetensors, &w);
    plan_free(cx, &plan);
    return s;
}
