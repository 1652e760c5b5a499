/* SPDX-License-Identifier: Apache-2.0 */
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

/* Strings handed out carry their capacity in a header, so they can be freed by size. */
typedef struct {
    size_t capacity;
    _Alignas(16) char text[];
} string_block;

void kiln__strbuf_init(kiln__strbuf *sb, kiln_ctx *cx) {
    memset(sb, 0, sizeof *sb);
    sb->cx = cx;
}

static bool reserve(kiln__strbuf *sb, size_t extra) {
    if (sb->failed) return false;
    if (sb->length + extra + 1 <= sb->capacity && sb->capacity > 0) return true;
    if (extra > SIZE_MAX / 2 - sb->length - 64) {
        sb->failed = true;
        kiln_ctx_set_error(sb->cx, KILN_RESOURCE_EXHAUSTED, "string of %zu bytes is too large",
                           extra);
        return false;
    }
    size_t cap = sb->capacity ? sb->capacity : 256;
    while (cap < sb->length + extra + 1)
        cap *= 2;
    string_block *b = kiln__alloc(sb->cx, sizeof(string_block) + cap, 16, "string");
    if (!b) {
        sb->failed = true;
        return false;
    }
    b->capacity = cap;
    if (sb->data) {
        memcpy(b->text, sb->data, sb->length);
        string_block *old = (string_block *)(void *)(sb->data - offsetof(string_block, text));
        kiln__free(sb->cx, old, sizeof(string_block) + old->capacity);
    }
    b->text[sb->length] = '\0';
    sb->data = b->text;
    sb->capacity = cap;
    return true;
}

void kiln__strbuf_append(kiln__strbuf *sb, const char *text, size_t length) {
    if (!reserve(sb, length)) return;
    memcpy(sb->data + sb->length, text, length);
    sb->length += length;
    sb->data[sb->length] = '\0';
}

void kiln__strbuf_puts(kiln__strbuf *sb, const char *text) {
    kiln__strbuf_append(sb, text, strlen(text));
}

void kiln__strbuf_repeat(kiln__strbuf *sb, char c, size_t count) {
    if (!reserve(sb, count)) return;
    memset(sb->data + sb->length, c, count);
    sb->length += count;
    sb->data[sb->length] = '\0';
}

void kiln__strbuf_printf(kiln__strbuf *sb, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        kiln__strbuf_append(sb, small, (size_t)n);
        return;
    }
    if (!reserve(sb, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->length, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->length += (size_t)n;
}

char *kiln__strbuf_take(kiln__strbuf *sb) {
    if (sb->failed) {
        kiln__strbuf_destroy(sb);
        return NULL;
    }
    if (!reserve(sb, 0)) return NULL;
    char *s = sb->data;
    sb->data = NULL;
    sb->length = sb->capacity = 0;
    return s;
}

void kiln__strbuf_free_string(kiln_ctx *cx, char *text) {
    if (!text) return;
    string_block *b = (string_block *)(void *)(text - offsetof(string_block, text));
    kiln__free(cx, b, sizeof(string_block) + b->capacity);
}

void kiln__strbuf_destroy(kiln__strbuf *sb) {
    kiln__strbuf_free_string(sb->cx, sb->data);
    sb->data = NULL;
    sb->length = sb->capacity = 0;
}
