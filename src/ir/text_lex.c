/* SPDX-License-Identifier: Apache-2.0 */
/* The text parser's lexer (ir/text.h): errors with line and column, whitespace, comments
 * and locations skipped, identifiers, keywords, integers and strings, the nesting bound. */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/stack.h"
#include "ir/text.h"

/* ---- errors and characters --------------------------------------------------------------- */

bool kiln__text_error(parser *p, size_t pos, const char *fmt, ...) {
    if (p->failed) return false;
    p->failed = true;
    if (pos > p->n) pos = p->n;
    int64_t line = p->first_line, col = 1;
    for (size_t i = 0; i < pos; i++) {
        if (p->s[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kiln_ctx_clear_error(p->cx);
    kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT, "%s:%" PRId64 ":%" PRId64 ": error: %s",
                       p->filename, line, col, msg);
    return false;
}

bool kiln__text_oom(parser *p) { return kiln__text_error(p, p->pos, "out of memory"); }

/* If a location starts at `at` ("loc(" as a token of its own, or an alias definition
 * "#loc12 = loc("), the position after its closing parenthesis; else `at`. Locations are
 * debug information (JAX keeps them, with their aliases before and after the module):
 * they are skipped as whitespace is. An unbalanced one is left for the parser to refuse. */
static size_t after_location(const parser *p, size_t at) {
    const char *s = p->s;
    size_t n = p->n, q = at;
    if (s[q] == '#') {
        if (n - q < 4 || memcmp(s + q, "#loc", 4) != 0) return at;
        for (q += 4; q < n && (isalnum((unsigned char)s[q]) || s[q] == '_'); q++) {
        }
        while (q < n && (s[q] == ' ' || s[q] == '\t'))
            q++;
        if (q >= n || s[q] != '=') return at;
        for (q++; q < n && (s[q] == ' ' || s[q] == '\t'); q++) {
        }
    } else if (q > 0) {
        char prev = s[q - 1];
        if (isalnum((unsigned char)prev) || strchr("_.$%@#^!-\"", prev)) return at;
    }
    if (n - q < 4 || memcmp(s + q, "loc(", 4) != 0) return at;
    int depth = 0;
    for (q += 3; q < n; q++) {
        char c = s[q];
        if (c == '"') {
            for (q++; q < n && s[q] != '"'; q++)
                if (s[q] == '\\') q++;
        } else if (c == '(') {
            depth++;
        } else if (c == ')' && --depth == 0) {
            return q + 1;
        }
    }
    return at;
}

void kiln__text_skip(parser *p) {
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            p->pos++;
        } else if (c == '/' && ch_at(p, p->pos + 1) == '/') {
            while (p->pos < p->n && p->s[p->pos] != '\n')
                p->pos++;
        } else if ((c == 'l' || c == '#') && after_location(p, p->pos) != p->pos) {
            p->pos = after_location(p, p->pos);
        } else {
            break;
        }
    }
}

bool kiln__text_peek(parser *p, char c) {
    kiln__text_skip(p);
    return ch(p) == (unsigned char)c;
}

bool kiln__text_accept(parser *p, char c) {
    if (!kiln__text_peek(p, c)) return false;
    p->pos++;
    return true;
}

const char *kiln__text_char_text(parser *p, char *buf) {
    kiln__text_skip(p);
    int c = ch(p);
    if (c < 0) return "end of input";
    if (c < 0x20 || c >= 0x7F) {
        snprintf(buf, 16, "\\x%02X", (unsigned)c & 0xFFu);
        return buf;
    }
    snprintf(buf, 16, "'%c'", c);
    return buf;
}

bool kiln__text_expect(parser *p, char c, const char *what) {
    if (p->failed) return false;
    if (kiln__text_accept(p, c)) return true;
    char buf[16];
    return kiln__text_error(p, p->pos, "expected '%c' %s, found %s", c, what,
                            kiln__text_char_text(p, buf));
}

size_t kiln__text_ident(parser *p, const char **out) {
    kiln__text_skip(p);
    size_t start = p->pos;
    if (!is_id_start(ch(p))) return 0;
    while (is_id_char(ch(p)))
        p->pos++;
    *out = p->s + start;
    return p->pos - start;
}

size_t kiln__text_attr_key(parser *p, const char **name, size_t *at, const char *after,
                           const char *missing) {
    kiln__text_skip(p);
    *at = p->pos;
    size_t len = kiln__text_ident(p, name);
    if (!len || !kiln__text_expect(p, '=', after)) {
        kiln__text_error(p, *at, "%s", missing);
        return 0;
    }
    return len;
}

bool kiln__text_attr_name(parser *p, const char **name, size_t *len, size_t *at) {
    kiln__text_skip(p);
    *at = p->pos;
    if (kiln__text_peek(p, '"')) return kiln__text_string_lit(p, name, len);
    if ((*len = kiln__text_ident(p, name))) return true;
    char buf[16];
    return kiln__text_error(p, *at, "expected an attribute name, found %s",
                            kiln__text_char_text(p, buf));
}

bool kiln__text_accept_kw(parser *p, const char *kw) {
    kiln__text_skip(p);
    size_t len = strlen(kw);
    if (p->n - p->pos < len || memcmp(p->s + p->pos, kw, len) != 0) return false;
    if (is_id_start((unsigned char)kw[len - 1]) || is_digit((unsigned char)kw[len - 1]))
        if (is_id_char(ch_at(p, p->pos + len))) return false;
    p->pos += len;
    return true;
}

bool kiln__text_expect_kw(parser *p, const char *kw, const char *what) {
    if (p->failed) return false;
    if (kiln__text_accept_kw(p, kw)) return true;
    char buf[16];
    return kiln__text_error(p, p->pos, "expected '%s' %s, found %s", kw, what,
                            kiln__text_char_text(p, buf));
}

bool kiln__text_int64_lit(parser *p, int64_t *out, const char *what) {
    kiln__text_skip(p);
    size_t start = p->pos;
    bool neg = false;
    if (ch(p) == '-') {
        neg = true;
        p->pos++;
    }
    if (!is_digit(ch(p))) {
        p->pos = start;
        char buf[16];
        return kiln__text_error(p, start, "expected an integer %s, found %s", what,
                                kiln__text_char_text(p, buf));
    }
    uint64_t v = 0;
    while (is_digit(ch(p))) {
        unsigned d = (unsigned)(ch(p) - '0');
        if (v > (UINT64_MAX - d) / 10)
            return kiln__text_error(p, start, "integer %s out of range", what);
        v = v * 10 + d;
        p->pos++;
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
        return kiln__text_error(p, start, "integer %s out of range", what);
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

void *kiln__text_grow(parser *p, void *items, int32_t *cap, int32_t n, size_t size, int32_t first,
                      bool heap) {
    if (n < *cap) return items;
    int32_t nc = *cap ? *cap * 2 : first;
    void *fresh = heap ? kiln__alloc(p->cx, (size_t)nc * size, _Alignof(max_align_t), "parser")
                       : kiln__arena_alloc(&p->m->arena, (size_t)nc * size, 16);
    if (!fresh) {
        kiln__text_oom(p);
        return NULL;
    }
    if (n) memcpy(fresh, items, (size_t)n * size);
    if (heap && items) kiln__free(p->cx, items, (size_t)*cap * size);
    *cap = nc;
    return fresh;
}

bool kiln__text_enter(parser *p) {
    if (++p->depth > MAX_DEPTH)
        return kiln__text_error(p, p->pos, "nesting too deep (more than %d levels)", MAX_DEPTH);
    if (kiln__stack_low(KILN__STACK_RESERVE))
        return kiln__text_error(p, p->pos, "nesting too deep for this thread's stack (%d levels)",
                                p->depth);
    return true;
}

/* A string literal "..." (escapes kept as written); returns its content's span. */
bool kiln__text_string_lit(parser *p, const char **out, size_t *len) {
    kiln__text_skip(p);
    size_t start = p->pos;
    if (ch(p) != '"') return kiln__text_error(p, start, "expected a string");
    p->pos++;
    while (p->pos < p->n && p->s[p->pos] != '"') {
        if (p->s[p->pos] == '\\') p->pos++;
        if (p->pos < p->n && p->s[p->pos] == '\n')
            return kiln__text_error(p, start, "unterminated string");
        p->pos++;
    }
    if (p->pos >= p->n) return kiln__text_error(p, start, "unterminated string");
    *out = p->s + start + 1;
    *len = p->pos - start - 1;
    p->pos++;
    return true;
}

bool kiln__text_symbol_name(parser *p, const char **name, size_t *len, const char *what) {
    kiln__text_skip(p);
    if (kiln__text_peek(p, '"')) return kiln__text_string_lit(p, name, len);
    if (!(*len = kiln__text_ident(p, name)))
        return kiln__text_error(p, p->pos, "expected %s", what);
    return true;
}

/* Decodes MLIR's string escapes (\\, \", \n, \t, \XX) into the arena. */
char *kiln__text_unescape(parser *p, const char *s, size_t len) {
    char *out = kiln__arena_alloc(&p->m->arena, len + 1, 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\' || i + 1 >= len) {
            out[o++] = s[i];
            continue;
        }
        char c = s[++i];
        if (c == 'n')
            out[o++] = '\n';
        else if (c == 't')
            out[o++] = '\t';
        else if (i + 1 < len && hexval((unsigned char)c) >= 0 &&
                 hexval((unsigned char)s[i + 1]) >= 0) {
            out[o++] = (char)(hexval((unsigned char)c) * 16 + hexval((unsigned char)s[i + 1]));
            i++;
        } else
            out[o++] = c;
    }
    out[o] = '\0';
    return out;
}
