/* SPDX-License-Identifier: Apache-2.0 */
/* A growable string built through the ctx's allocator (for printers, and the bytes of
 * module fingerprints: append takes any bytes). */
#ifndef KILN_BASE_STRBUF_H
#define KILN_BASE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

#include "kiln/ctx.h"
#include "kiln/export.h"

typedef struct kiln__strbuf {
    kiln_ctx *cx;
    char *data; /* NUL-terminated when capacity > 0 */
    size_t length;
    size_t capacity;
    bool failed; /* an allocation failed: further appends do nothing */
} kiln__strbuf;

void kiln__strbuf_init(kiln__strbuf *sb, kiln_ctx *cx);
void kiln__strbuf_append(kiln__strbuf *sb, const char *text, size_t length);
void kiln__strbuf_puts(kiln__strbuf *sb, const char *text);
void kiln__strbuf_printf(kiln__strbuf *sb, const char *fmt, ...) KILN_PRINTF_LIKE(2, 3);
void kiln__strbuf_repeat(kiln__strbuf *sb, char c, size_t count);
/* Hands the string over (to be freed with kiln__strbuf_free_string), or NULL if an
 * allocation failed (the error is in the ctx). The builder is left empty. */
char *kiln__strbuf_take(kiln__strbuf *sb);
void kiln__strbuf_free_string(kiln_ctx *cx, char *text);
void kiln__strbuf_destroy(kiln__strbuf *sb);

#endif
