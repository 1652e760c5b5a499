/* SPDX-License-Identifier: Apache-2.0 */
/* stablehlo.custom_call's record (custom_call.h).
 *
 * The record's bytes: a header, the result types (kiln__type each), then NUL-terminated
 * text: the target's name, then each attribute's name and value. */
#include "ops/custom_call.h"

#include <string.h>

#include "base/alloc.h"
#include "base/ctx_internal.h"

#define RECORD_MAGIC 0x31434b4bu /* "KKC1" */

typedef struct record_header {
    uint32_t magic;
    uint32_t side_effect;
    int32_t n_results, n_attrs;
    uint64_t text_offset, text_size;
} record_header;

/* ---- checking and normalizing values ------------------------------------------------------ */

/* The index just past the string literal that opens at s[i] ('"'), or len when unclosed. */
static size_t string_end(const char *s, size_t len, size_t i) {
    for (i++; i < len; i++) {
        if (s[i] == '\\' && i + 1 < len)
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return len;
}

static bool is_string(const char *s, size_t len) {
    return len >= 2 && s[0] == '"' && string_end(s, len, 0) == len && s[len - 1] == '"';
}

static bool is_bracketed(const char *s, size_t len, char open, char close) {
    return len >= 2 && s[0] == open && s[len - 1] == close;
}

/* An integer 0..4, alone or with its type (": i32"). */
static bool is_api_version(const char *s, size_t len) {
    if (len < 1 || s[0] < '0' || s[0] > '4') return false;
    if (len == 1) return true;
    return len > 4 && memcmp(s + 1, " : i", 4) == 0;
}

/* Every item of a list begins with '@' (a symbol). */
static bool is_symbol_list(const char *s, size_t len) {
    if (!is_bracketed(s, len, '[', ']')) return false;
    bool item_start = true;
    int depth = 0;
    for (size_t i = 1; i + 1 < len; i++) {
        char c = s[i];
        if (c == ' ') continue;
        if (item_start && c != '@') return false;
        item_start = false;
        if (c == '"') {
            i = string_end(s, len, i) - 1;
        } else if (c == '[' || c == '{' || c == '(' || c == '<') {
            depth++;
        } else if (c == ']' || c == '}' || c == ')' || c == '>') {
            depth--;
        } else if (c == ',' && depth == 0) {
            item_start = true;
        }
    }
    return !item_start || len == 2;
}

typedef struct known_attr {
    const char *name;
    const char *expected; /* for the message */
    bool (*ok)(const char *s, size_t len);
} known_attr;

static bool is_bool(const char *s, size_t len) {
    return (len == 4 && !memcmp(s, "true", 4)) || (len == 5 && !memcmp(s, "false", 5));
}
static bool is_config(const char *s, size_t len) {
    return is_string(s, len) || is_bracketed(s, len, '{', '}');
}
static bool is_list(const char *s, size_t len) { return is_bracketed(s, len, '[', ']'); }

/* StableHLO's attributes of the op (its properties); any other is discardable, kept as
 * written whatever its value. */
static const known_attr known[] = {
    {"api_version", "an integer 0 to 4 (api_version = 2 : i32)", is_api_version},
    {"backend_config", "a string or a dictionary", is_config},
    {"call_target_name", "a string", is_string},
    {"called_computations", "a list of symbols ([@f, @g])", is_symbol_list},
    {"has_side_effect", "true or false", is_bool},
    {"operand_layouts", "a list of layouts ([dense<[1, 0]> : tensor<2xindex>])", is_list},
    {"output_operand_aliases", "a list of #stablehlo.output_operand_alias<...>", is_list},
    {"result_layouts", "a list of layouts ([dense<[1, 0]> : tensor<2xindex>])", is_list},
    {"result_tilings", "a list of lists of tilings", is_list},
};

const char *kiln__custom_call_check_attr(const kiln__cc_attr *a) {
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strlen(known[i].name) == a->name_len && !memcmp(known[i].name, a->name, a->name_len))
            return known[i].ok(a->value, a->value_len) ? NULL : known[i].expected;
    return NULL;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The string literal s[0..len) ('"' to '"') as MLIR prints it: its escapes decoded (\\,
 * \", \n, \t, \XX) and written again as \\, \" and \XX for what is not printable ASCII.
 * Returns the length written (at most 3 bytes per byte read). */
static size_t canonical_string(const char *s, size_t len, char *out) {
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    out[n++] = '"';
    for (size_t i = 1; i + 1 < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' && i + 2 < len) {
            char e = s[++i];
            if (e == 'n')
                c = '\n';
            else if (e == 't')
                c = '\t';
            else if (hex_digit(e) >= 0 && i + 2 < len && hex_digit(s[i + 1]) >= 0)
                c = (unsigned char)(hex_digit(e) * 16 + hex_digit(s[++i]));
            else
                c = (unsigned char)e;
        }
        if (c == '\\' || c == '"') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c >= 0x20 && c < 0x7F) {
            out[n++] = (char)c;
        } else {
            out[n++] = '\\';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
        }
    }
    out[n++] = '"';
    return n;
}

static bool opens(char c) { return c == '[' || c == '(' || c == '{' || c == '<'; }
static bool closes(char c) { return c == ']' || c == ')' || c == '}' || c == '>' || c == ','; }

size_t kiln__custom_call_normalize(const char *s, size_t len, char *out) {
    size_t n = 0;
    bool space = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            space = true;
            continue;
        }
        if (c == '/' && i + 1 < len && s[i + 1] == '/') {
            while (i < len && s[i] != '\n')
                i++;
            space = true;
            continue;
        }
        /* `->` is an arrow, not a closing '>' */
        bool closing = closes(c) && !(c == '>' && n && out[n - 1] == '-');
        if (space && n && !opens(out[n - 1]) && !closing) out[n++] = ' ';
        space = false;
        if (c == '"') {
            size_t end = string_end(s, len, i);
            if (end - i >= 2 && s[end - 1] == '"') {
                n += canonical_string(s + i, end - i, out + n);
            } else { /* unclosed: as it stands (the parser has refused it already) */
                memcpy(out + n, s + i, end - i);
                n += end - i;
            }
            i = end - 1;
            continue;
        }
        out[n++] = c;
    }
    out[n] = '\0';
    return n;
}

/* ---- the record ----------------------------------------------------------------------------- */

static bool named(const kiln__cc_attr *a, const char *name) {
    return strlen(name) == a->name_len && !memcmp(a->name, name, a->name_len);
}

static bool value_is(const kiln__cc_attr *a, const char *text) {
    return strlen(text) == a->value_len && !memcmp(a->value, text, a->value_len);
}

/* A known attribute at the value that leaving it out means (StableHLO's defaults, which
 * VHLO writes out and its legalization back to StableHLO leaves out again). */
static bool is_default(const kiln__cc_attr *a) {
    if (named(a, "api_version"))
        return a->value_len >= 1 && a->value[0] == '1' && (a->value_len == 1 || a->value[1] == ' ');
    if (named(a, "backend_config")) return value_is(a, "\"\"") || value_is(a, "{}");
    if (named(a, "has_side_effect")) return value_is(a, "false");
    return (named(a, "called_computations") || named(a, "operand_layouts") ||
            named(a, "result_layouts") || named(a, "output_operand_aliases") ||
            named(a, "result_tilings")) &&
           value_is(a, "[]");
}

static int by_name(const kiln__cc_attr *a, const kiln__cc_attr *b) {
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = memcmp(a->name, b->name, n);
    return c ? c : (a->name_len > b->name_len) - (a->name_len < b->name_len);
}

kiln_tensor *kiln__custom_call_record(kiln_ctx *cx, const char *target, size_t target_len,
                                      const kiln__cc_attr *given, int32_t n_given,
                                      const kiln__type *results, int32_t n_results) {
    static const char fn[] = "stablehlo.custom_call";
    /* MLIR's order (an attribute dictionary is sorted by name), defaults left out */
    kiln__cc_attr *attrs = kiln__calloc(cx, (size_t)(n_given ? n_given : 1) * sizeof *attrs,
                                        _Alignof(kiln__cc_attr), fn);
    if (!attrs) return NULL;
    int32_t n_attrs = 0;
    for (int32_t i = 0; i < n_given; i++) {
        if (is_default(&given[i])) continue;
        int32_t at = n_attrs++;
        while (at > 0 && by_name(&attrs[at - 1], &given[i]) > 0) {
            attrs[at] = attrs[at - 1];
            at--;
        }
        attrs[at] = given[i];
    }
    size_t text = target_len + 1;
    for (int32_t i = 0; i < n_attrs; i++)
        text += attrs[i].name_len + 1 + attrs[i].value_len + 1;
    size_t types = (size_t)n_results * sizeof(kiln__type);
    size_t size = sizeof(record_header) + types + text;
    unsigned char *bytes = kiln__calloc(cx, size, _Alignof(kiln__type), fn);
    if (!bytes) {
        kiln__free(cx, attrs, (size_t)(n_given ? n_given : 1) * sizeof *attrs);
        return NULL;
    }
    record_header h = {.magic = RECORD_MAGIC,
                       .n_results = n_results,
                       .n_attrs = n_attrs,
                       .text_offset = sizeof h + types,
                       .text_size = text};
    if (types) memcpy(bytes + sizeof h, results, types);
    char *t = (char *)bytes + h.text_offset;
    memcpy(t, target, target_len);
    t += target_len + 1;
    for (int32_t i = 0; i < n_attrs; i++) {
        const kiln__cc_attr *a = &attrs[i];
        memcpy(t, a->name, a->name_len);
        t += a->name_len + 1;
        memcpy(t, a->value, a->value_len);
        if (named(a, "has_side_effect") && value_is(a, "true")) h.side_effect = 1;
        t += a->value_len + 1;
    }
    kiln__free(cx, attrs, (size_t)(n_given ? n_given : 1) * sizeof *attrs);
    memcpy(bytes, &h, sizeof h);
    kiln_tensor *r = kiln_tensor_from_host(cx, KILN_U8, KILN_SHAPE((int64_t)size), bytes, size);
    kiln__free(cx, bytes, size);
    return r;
}

/* The record's header, or false when attrs hold none (or not one of these). */
static bool header_of(const kiln__attrs *a, record_header *h, const unsigned char **bytes) {
    if (!a || !a->u.constant) return false;
    const kiln_tensor *t = a->u.constant;
    size_t size = kiln_tensor_nbytes(t);
    *bytes = kiln_tensor_data(t);
    if (!*bytes || size < sizeof *h) return false;
    memcpy(h, *bytes, sizeof *h);
    return h->magic == RECORD_MAGIC && h->text_offset + h->text_size <= size;
}

const char *kiln__custom_call_target(const kiln__attrs *a) {
    record_header h;
    const unsigned char *b;
    return header_of(a, &h, &b) ? (const char *)b + h.text_offset : NULL;
}

bool kiln__custom_call_has_side_effect(const kiln__attrs *a) {
    record_header h;
    const unsigned char *b;
    return header_of(a, &h, &b) && h.side_effect;
}

int32_t kiln__custom_call_n_attrs(const kiln__attrs *a) {
    record_header h;
    const unsigned char *b;
    return header_of(a, &h, &b) ? h.n_attrs : 0;
}

bool kiln__custom_call_attr(const kiln__attrs *a, int32_t i, const char **name,
                            const char **value) {
    record_header h;
    const unsigned char *b;
    if (!header_of(a, &h, &b) || i < 0 || i >= h.n_attrs) return false;
    const char *t = (const char *)b + h.text_offset;
    t += strlen(t) + 1; /* the target */
    for (int32_t k = 0; k < i; k++) {
        t += strlen(t) + 1;
        t += strlen(t) + 1;
    }
    *name = t;
    *value = t + strlen(t) + 1;
    return true;
}

int32_t kiln__custom_call_results(const kiln__attrs *a, kiln__type *out, int32_t cap) {
    record_header h;
    const unsigned char *b;
    if (!header_of(a, &h, &b)) return -1;
    for (int32_t i = 0; i < h.n_results && i < cap; i++)
        memcpy(&out[i], b + sizeof h + (size_t)i * sizeof(kiln__type), sizeof(kiln__type));
    return h.n_results;
}
