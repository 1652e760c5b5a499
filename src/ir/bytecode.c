/* SPDX-License-Identifier: Apache-2.0 */
/* The MLIR bytecode container (bytecode.h): header, sections, strings, dialects and op
 * names, attribute/type offsets, properties. The layouts follow MLIR's BytecodeFormat
 * (llvm-project mlir/docs/BytecodeFormat.md and its reader and writer). */
#include "ir/bytecode.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

bool kiln__bc_is_bytecode(const void *data, size_t size) {
    return data && size >= 4 && memcmp(data, KILN__BC_MAGIC, 4) == 0;
}

bool kiln__bc_fail(kiln__bc *bc, size_t at, const char *fmt, ...) {
    if (bc->failed) return false;
    bc->failed = true;
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(bc->error, sizeof bc->error, "%s at byte %zu", what, at);
    return false;
}

kiln__bc_cursor kiln__bc_at(kiln__bc *bc, kiln__bc_span span) {
    return (kiln__bc_cursor){.bc = bc, .pos = span.off, .end = span.off + span.len};
}

bool kiln__bc_done(const kiln__bc_cursor *c) { return c->pos >= c->end; }

bool kiln__bc_byte(kiln__bc_cursor *c, uint8_t *out) {
    *out = 0;
    if (c->bc->failed) return false;
    if (c->pos >= c->end) return kiln__bc_fail(c->bc, c->pos, "truncated input");
    *out = c->bc->data[c->pos++];
    return true;
}

bool kiln__bc_varint(kiln__bc_cursor *c, uint64_t *out) {
    *out = 0;
    size_t at = c->pos;
    uint8_t b0;
    if (!kiln__bc_byte(c, &b0)) return false;
    if (b0 & 1) {
        *out = b0 >> 1;
        return true;
    }
    /* k zero bits then a one: k more bytes; a zero first byte: 8 raw bytes. */
    int k = 8;
    if (b0) k = __builtin_ctz(b0);
    if (c->end - c->pos < (size_t)k) return kiln__bc_fail(c->bc, at, "truncated varint");
    uint64_t v = 0;
    for (int i = 0; i < k; i++)
        v |= (uint64_t)c->bc->data[c->pos + (size_t)i] << (8 * i);
    c->pos += (size_t)k;
    if (b0 == 0) {
        *out = v;
        return true;
    }
    v = (v << 8) | b0;
    *out = v >> (k + 1);
    return true;
}

bool kiln__bc_svarint(kiln__bc_cursor *c, int64_t *out) {
    uint64_t u = 0;
    *out = 0;
    if (!kiln__bc_varint(c, &u)) return false;
    *out = (int64_t)((u >> 1) ^ (~(u & 1) + 1));
    return true;
}

bool kiln__bc_varint_flag(kiln__bc_cursor *c, uint64_t *value, bool *flag) {
    uint64_t v = 0;
    *value = 0;
    *flag = false;
    if (!kiln__bc_varint(c, &v)) return false;
    *flag = v & 1;
    *value = v >> 1;
    return true;
}

bool kiln__bc_index(kiln__bc_cursor *c, uint64_t limit, const char *what, uint32_t *out) {
    size_t at = c->pos;
    uint64_t v = 0;
    *out = 0;
    if (!kiln__bc_varint(c, &v)) return false;
    if (v >= limit || v > UINT32_MAX)
        return kiln__bc_fail(c->bc, at, "%s %llu out of range (%llu)", what, (unsigned long long)v,
                             (unsigned long long)limit);
    *out = (uint32_t)v;
    return true;
}

bool kiln__bc_bytes(kiln__bc_cursor *c, size_t n, kiln__bc_span *out) {
    if (c->bc->failed) return false;
    if (n > c->end - c->pos)
        return kiln__bc_fail(c->bc, c->pos, "%zu bytes needed, %zu left", n, c->end - c->pos);
    *out = (kiln__bc_span){.off = c->pos, .len = n};
    c->pos += n;
    return true;
}

bool kiln__bc_blob(kiln__bc_cursor *c, kiln__bc_span *out) {
    uint64_t n = 0;
    *out = (kiln__bc_span){0};
    return kiln__bc_varint(c, &n) &&
           (n <= SIZE_MAX || kiln__bc_fail(c->bc, c->pos, "blob too large")) &&
           kiln__bc_bytes(c, (size_t)n, out);
}

bool kiln__bc_apint(kiln__bc_cursor *c, unsigned width, uint64_t *out) {
    *out = 0;
    if (width <= 8) {
        uint8_t b = 0;
        if (!kiln__bc_byte(c, &b)) return false;
        *out = width == 8 ? b : b & ((1u << width) - 1);
        return true;
    }
    if (width <= 64) {
        int64_t v;
        if (!kiln__bc_svarint(c, &v)) return false;
        *out = width == 64 ? (uint64_t)v : (uint64_t)v & ((UINT64_C(1) << width) - 1);
        return true;
    }
    size_t at = c->pos;
    uint64_t words;
    if (!kiln__bc_varint(c, &words)) return false;
    if (words > (width + 63) / 64) return kiln__bc_fail(c->bc, at, "too many integer words");
    *out = 0;
    for (uint64_t w = 0; w < words; w++) {
        int64_t v;
        if (!kiln__bc_svarint(c, &v)) return false;
        if (w == 0)
            *out = (uint64_t)v;
        else if (v != 0)
            return kiln__bc_fail(c->bc, at, "an integer wider than 64 bits");
    }
    return true;
}

const char *kiln__bc_string(const kiln__bc *bc, uint32_t i, size_t *len) {
    if (i >= bc->n_strings) return NULL;
    *len = bc->strings[i].len;
    return (const char *)bc->data + bc->strings[i].off;
}

bool kiln__bc_string_is(const kiln__bc *bc, uint32_t i, const char *text) {
    size_t len;
    const char *s = kiln__bc_string(bc, i, &len);
    return s && len == strlen(text) && memcmp(s, text, len) == 0;
}

bool kiln__bc_section(kiln__bc_cursor *c, unsigned *id, kiln__bc_span *data) {
    size_t start = c->pos;
    uint8_t id_align;
    uint64_t len;
    *id = 0;
    *data = (kiln__bc_span){0};
    if (!kiln__bc_byte(c, &id_align) || !kiln__bc_varint(c, &len)) return false;
    *id = id_align & 0x7f;
    if (id_align & 0x80) {
        size_t at = c->pos;
        uint64_t align;
        if (!kiln__bc_varint(c, &align)) return false;
        if (align == 0 || (align & (align - 1)) || align > 4096)
            return kiln__bc_fail(c->bc, at, "bad section alignment %llu",
                                 (unsigned long long)align);
        /* Padding aligns the data to its offset in the file. */
        while (c->pos % align) {
            uint8_t pad;
            if (!kiln__bc_byte(c, &pad)) return false;
            if (pad != 0xcb) return kiln__bc_fail(c->bc, c->pos - 1, "bad alignment padding");
        }
    }
    if (len > c->end - c->pos)
        return kiln__bc_fail(c->bc, start, "section %u of %llu bytes runs past the end", *id,
                             (unsigned long long)len);
    *data = (kiln__bc_span){.off = c->pos, .len = (size_t)len};
    c->pos += (size_t)len;
    return true;
}

/* ---- opening ----------------------------------------------------------------------------- */

/* An array of n items of `size` bytes, where the input guarantees at least n bytes for
 * them (each item takes at least one byte of `span`). */
static void *table(kiln__bc *bc, uint64_t n, size_t size, kiln__bc_span span, size_t at,
                   const char *what) {
    if (n > span.len) {
        kiln__bc_fail(bc, at, "%s count %llu larger than its section", what, (unsigned long long)n);
        return NULL;
    }
    void *p = kiln__calloc(bc->cx, (size_t)n * size + 1, 16, "bytecode");
    if (!p) kiln__bc_fail(bc, at, "out of memory");
    return p;
}

static bool header_and_sections(kiln__bc *bc) {
    kiln__bc_cursor c = kiln__bc_at(bc, (kiln__bc_span){.off = 0, .len = bc->size});
    kiln__bc_span magic;
    if (!kiln__bc_bytes(&c, 4, &magic)) return false;
    if (memcmp(bc->data, KILN__BC_MAGIC, 4) != 0)
        return kiln__bc_fail(bc, 0, "not MLIR bytecode (no \"ML\\xefR\" magic)");
    size_t at = c.pos;
    if (!kiln__bc_varint(&c, &bc->version)) return false;
    if (bc->version > KILN__BC_MAX_VERSION)
        return kiln__bc_fail(bc, at, "bytecode version %llu is newer than this reader's (%d)",
                             (unsigned long long)bc->version, KILN__BC_MAX_VERSION);
    const unsigned char *nul = memchr(bc->data + c.pos, 0, c.end - c.pos);
    if (!nul) return kiln__bc_fail(bc, c.pos, "unterminated producer string");
    bc->producer = (const char *)bc->data + c.pos;
    c.pos = (size_t)(nul - bc->data) + 1;
    while (!kiln__bc_done(&c)) {
        size_t start = c.pos;
        unsigned id;
        kiln__bc_span data;
        if (!kiln__bc_section(&c, &id, &data)) return false;
        if (id >= KILN__BC_SECTIONS) return kiln__bc_fail(bc, start, "invalid section id %u", id);
        if (bc->present[id]) return kiln__bc_fail(bc, start, "duplicate section %u", id);
        bc->present[id] = true;
        bc->section[id] = data;
    }
    static const int required[] = {KILN__BC_STRING, KILN__BC_DIALECT, KILN__BC_ATTR_TYPE,
                                   KILN__BC_ATTR_TYPE_OFFSET, KILN__BC_IR};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!bc->present[required[i]])
            return kiln__bc_fail(bc, bc->size, "section %d is missing", required[i]);
    if (bc->version >= 5 && !bc->present[KILN__BC_PROPERTIES])
        return kiln__bc_fail(bc, bc->size, "the properties section is missing");
    return true;
}

static bool strings(kiln__bc *bc) {
    kiln__bc_cursor c = kiln__bc_at(bc, bc->section[KILN__BC_STRING]);
    uint64_t n;
    size_t at = c.pos;
    if (!kiln__bc_varint(&c, &n)) return false;
    if (!(bc->strings =
              table(bc, n, sizeof *bc->strings, bc->section[KILN__BC_STRING], at, "string")))
        return false;
    bc->n_strings = (uint32_t)n;
    /* Sizes (each with its NUL) come last string first. */
    uint64_t total = 0;
    for (uint64_t i = n; i-- > 0;) {
        uint64_t size;
        if (!kiln__bc_varint(&c, &size)) return false;
        if (size == 0 || size > c.end) return kiln__bc_fail(bc, c.pos, "bad string size");
        bc->strings[i].len = (size_t)size;
        total += size;
    }
    if (total != c.end - c.pos)
        return kiln__bc_fail(bc, c.pos, "string sizes (%llu bytes) do not match the data (%zu)",
                             (unsigned long long)total, c.end - c.pos);
    size_t p = c.pos;
    for (uint32_t i = 0; i < bc->n_strings; i++) {
        size_t size = bc->strings[i].len;
        if (bc->data[p + size - 1] != 0) return kiln__bc_fail(bc, p, "unterminated string");
        bc->strings[i] = (kiln__bc_span){.off = p, .len = size - 1};
        p += size;
    }
    return true;
}

static bool dialects(kiln__bc *bc) {
    kiln__bc_span sec = bc->section[KILN__BC_DIALECT];
    kiln__bc_cursor c = kiln__bc_at(bc, sec);
    uint64_t n;
    size_t at = c.pos;
    if (!kiln__bc_varint(&c, &n)) return false;
    if (!(bc->dialects = table(bc, n, sizeof *bc->dialects, sec, at, "dialect"))) return false;
    bc->n_dialects = (uint32_t)n;
    for (uint32_t i = 0; i < bc->n_dialects; i++) {
        kiln__bc_dialect *d = &bc->dialects[i];
        if (bc->version >= 1) {
            uint64_t name;
            at = c.pos;
            if (!kiln__bc_varint_flag(&c, &name, &d->has_version)) return false;
            if (name >= bc->n_strings) return kiln__bc_fail(bc, at, "dialect name out of range");
            d->name = (uint32_t)name;
            if (d->has_version) {
                unsigned id;
                at = c.pos;
                if (!kiln__bc_section(&c, &id, &d->version)) return false;
                if (id != KILN__BC_DIALECT_VERSIONS)
                    return kiln__bc_fail(bc, at, "expected a dialect version section");
            }
        } else if (!kiln__bc_index(&c, bc->n_strings, "dialect name", &d->name)) {
            return false;
        }
    }
    if (bc->version >= 4) {
        uint64_t total;
        if (!kiln__bc_varint(&c, &total)) return false; /* a capacity hint only */
    }
    /* Op names: groups until the section ends; each name takes at least a byte. */
    bc->opnames_cap = c.end - c.pos;
    if (!(bc->opnames = table(bc, bc->opnames_cap, sizeof *bc->opnames, sec, c.pos, "op name")))
        return false;
    while (!kiln__bc_done(&c)) {
        uint32_t dialect;
        uint64_t count;
        if (!kiln__bc_index(&c, bc->n_dialects, "dialect", &dialect) ||
            !kiln__bc_varint(&c, &count))
            return false;
        if (count > c.end - c.pos) return kiln__bc_fail(bc, c.pos, "op name count too large");
        for (uint64_t k = 0; k < count; k++) {
            uint64_t name;
            bool registered;
            at = c.pos;
            if (bc->version >= 5) {
                if (!kiln__bc_varint_flag(&c, &name, &registered)) return false;
            } else if (!kiln__bc_varint(&c, &name)) {
                return false;
            }
            if (name >= bc->n_strings) return kiln__bc_fail(bc, at, "op name out of range");
            bc->opnames[bc->n_opnames++] =
                (kiln__bc_opname){.dialect = dialect, .name = (uint32_t)name};
        }
    }
    return true;
}

/* One run of entries (attributes, then types) of the offset section. */
static bool entries(kiln__bc *bc, kiln__bc_cursor *c, uint64_t n, kiln__bc_entry *out,
                    uint64_t *offset) {
    uint64_t done = 0;
    size_t limit = bc->section[KILN__BC_ATTR_TYPE].len;
    while (done < n) {
        uint32_t dialect;
        uint64_t count;
        if (!kiln__bc_index(c, bc->n_dialects, "dialect", &dialect) || !kiln__bc_varint(c, &count))
            return false;
        if (count > n - done) return kiln__bc_fail(bc, c->pos, "attribute/type group too large");
        for (uint64_t k = 0; k < count; k++, done++) {
            uint64_t size;
            bool custom;
            size_t at = c->pos;
            if (!kiln__bc_varint_flag(c, &size, &custom)) return false;
            if (size > limit - *offset)
                return kiln__bc_fail(bc, at, "attribute/type entry runs past its section");
            out[done] = (kiln__bc_entry){
                .span = {.off = bc->section[KILN__BC_ATTR_TYPE].off + (size_t)*offset,
                         .len = (size_t)size},
                .dialect = dialect,
                .custom = custom};
            *offset += size;
        }
    }
    return true;
}

static bool attr_type_offsets(kiln__bc *bc) {
    kiln__bc_span sec = bc->section[KILN__BC_ATTR_TYPE_OFFSET];
    kiln__bc_cursor c = kiln__bc_at(bc, sec);
    uint64_t na, nt;
    size_t at = c.pos;
    if (!kiln__bc_varint(&c, &na) || !kiln__bc_varint(&c, &nt)) return false;
    if (na + nt > sec.len) return kiln__bc_fail(bc, at, "attribute/type counts too large");
    if (!(bc->attrs = table(bc, na, sizeof *bc->attrs, sec, at, "attribute"))) return false;
    bc->n_attrs = (uint32_t)na;
    if (!(bc->types = table(bc, nt, sizeof *bc->types, sec, at, "type"))) return false;
    bc->n_types = (uint32_t)nt;
    uint64_t offset = 0;
    if (!entries(bc, &c, na, bc->attrs, &offset) || !entries(bc, &c, nt, bc->types, &offset))
        return false;
    if (!kiln__bc_done(&c)) return kiln__bc_fail(bc, c.pos, "trailing bytes in the offsets");
    return true;
}

static bool properties(kiln__bc *bc) {
    if (!bc->present[KILN__BC_PROPERTIES]) return true;
    kiln__bc_span sec = bc->section[KILN__BC_PROPERTIES];
    kiln__bc_cursor c = kiln__bc_at(bc, sec);
    if (sec.len == 0) return true;
    uint64_t n;
    size_t at = c.pos;
    if (!kiln__bc_varint(&c, &n)) return false;
    if (!(bc->props = table(bc, n, sizeof *bc->props, sec, at, "properties"))) return false;
    bc->n_props = (uint32_t)n;
    for (uint32_t i = 0; i < bc->n_props; i++)
        if (!kiln__bc_blob(&c, &bc->props[i])) return false;
    if (!kiln__bc_done(&c)) return kiln__bc_fail(bc, c.pos, "trailing bytes in the properties");
    return true;
}

bool kiln__bc_open(kiln__bc *bc, kiln_ctx *cx, const void *data, size_t size) {
    memset(bc, 0, sizeof *bc);
    bc->cx = cx;
    bc->data = data;
    bc->size = size;
    bool ok = header_and_sections(bc) && strings(bc) && dialects(bc) && attr_type_offsets(bc) &&
              properties(bc);
    if (!ok) kiln__bc_close(bc);
    return ok;
}

void kiln__bc_close(kiln__bc *bc) {
    kiln_ctx *cx = bc->cx;
    /* table() allocated n * size + 1 bytes. */
    if (bc->strings) kiln__free(cx, bc->strings, (size_t)bc->n_strings * sizeof *bc->strings + 1);
    if (bc->dialects)
        kiln__free(cx, bc->dialects, (size_t)bc->n_dialects * sizeof *bc->dialects + 1);
    if (bc->attrs) kiln__free(cx, bc->attrs, (size_t)bc->n_attrs * sizeof *bc->attrs + 1);
    if (bc->types) kiln__free(cx, bc->types, (size_t)bc->n_types * sizeof *bc->types + 1);
    if (bc->props) kiln__free(cx, bc->props, (size_t)bc->n_props * sizeof *bc->props + 1);
    bc->strings = NULL;
    bc->dialects = NULL;
    bc->attrs = bc->types = NULL;
    bc->props = NULL;
    if (bc->opnames) kiln__free(cx, bc->opnames, bc->opnames_cap * sizeof *bc->opnames + 1);
    bc->opnames = NULL;
}
