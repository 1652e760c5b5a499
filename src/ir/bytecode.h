/* SPDX-License-Identifier: Apache-2.0 */
/* The MLIR bytecode container (versions 0 to 6): the framing that StableHLO portable
 * artifacts (VHLO bytecode) come in. This layer knows no dialect: it finds the sections,
 * reads the string table, the dialects and op names, the attribute and type tables (their
 * entries are decoded by the dialect layer, vhlo.c, on demand), the properties entries, and
 * offers the primitive readers every section and dialect payload is written with.
 *
 * Every read is bounds-checked; the first failure is kept with the byte offset it happened
 * at ("at byte N"), and later reads fail at once, so callers check once per step. Nothing
 * is allocated in proportion to a count the input states without the input also holding
 * that many bytes. */
#ifndef KILN_IR_BYTECODE_H
#define KILN_IR_BYTECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/ctx.h"

/* "ML\xefR" */
#define KILN__BC_MAGIC "\x4d\x4c\xef\x52"

/* The newest container version the reader knows. */
#define KILN__BC_MAX_VERSION 6

enum {
    KILN__BC_STRING = 0,
    KILN__BC_DIALECT = 1,
    KILN__BC_ATTR_TYPE = 2,
    KILN__BC_ATTR_TYPE_OFFSET = 3,
    KILN__BC_IR = 4,
    KILN__BC_RESOURCE = 5,
    KILN__BC_RESOURCE_OFFSET = 6,
    KILN__BC_DIALECT_VERSIONS = 7,
    KILN__BC_PROPERTIES = 8,
    KILN__BC_SECTIONS = 9,
};

/* A span of the input: [off, off + len). */
typedef struct kiln__bc_span {
    size_t off, len;
} kiln__bc_span;

typedef struct kiln__bc_entry {
    kiln__bc_span span;
    uint32_t dialect; /* index into the dialects */
    bool custom;      /* the dialect's binary encoding; else assembly text, NUL-ended */
} kiln__bc_entry;

typedef struct kiln__bc_dialect {
    uint32_t name;         /* string index */
    bool has_version;      /* a version payload follows in `version` */
    kiln__bc_span version; /* the payload's bytes */
} kiln__bc_dialect;

typedef struct kiln__bc_opname {
    uint32_t dialect; /* index into the dialects */
    uint32_t name;    /* string index, without the dialect prefix */
} kiln__bc_opname;

typedef struct kiln__bc {
    kiln_ctx *cx;
    const unsigned char *data;
    size_t size;
    uint64_t version;
    const char *producer; /* NUL-terminated inside data */
    bool present[KILN__BC_SECTIONS];
    kiln__bc_span section[KILN__BC_SECTIONS];

    uint32_t n_strings;
    kiln__bc_span *strings;
    uint32_t n_dialects;
    kiln__bc_dialect *dialects;
    uint32_t n_opnames;
    size_t opnames_cap;
    kiln__bc_opname *opnames;
    uint32_t n_attrs, n_types;
    kiln__bc_entry *attrs, *types;
    uint32_t n_props;
    kiln__bc_span *props;

    int depth; /* of the attribute being decoded inside another (vhlo_attrs.c) */
    bool failed;
    char error[256]; /* "what at byte N" */
} kiln__bc;

/* A cursor over a span of the input. */
typedef struct kiln__bc_cursor {
    kiln__bc *bc;
    size_t pos, end;
} kiln__bc_cursor;

/* Reads the header and every section's framing, the string table, the dialects and op
 * names, the attribute/type offsets and the properties entries. False with bc->error set
 * (and nothing left allocated) on any failure; kiln__bc_close frees what it made. */
bool kiln__bc_open(kiln__bc *bc, kiln_ctx *cx, const void *data, size_t size);
void kiln__bc_close(kiln__bc *bc);

/* Is this the bytecode magic? */
bool kiln__bc_is_bytecode(const void *data, size_t size);

/* Records the first failure, with the byte offset, and returns false. */
bool kiln__bc_fail(kiln__bc *bc, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

kiln__bc_cursor kiln__bc_at(kiln__bc *bc, kiln__bc_span span);
bool kiln__bc_done(const kiln__bc_cursor *c); /* at the end of its span */

/* Primitive reads (false on a failure, recorded). */
bool kiln__bc_byte(kiln__bc_cursor *c, uint8_t *out);
bool kiln__bc_varint(kiln__bc_cursor *c, uint64_t *out);
bool kiln__bc_svarint(kiln__bc_cursor *c, int64_t *out);
/* A section's framing (an id byte whose top bit says an alignment follows, the length, the
 * alignment and its 0xCB padding) at the cursor: the id (without the flag) and the span
 * of the data, which the cursor moves past. Top-level and nested sections alike. */
bool kiln__bc_section(kiln__bc_cursor *c, unsigned *id, kiln__bc_span *data);
/* A varint `(value << 1) | flag`. */
bool kiln__bc_varint_flag(kiln__bc_cursor *c, uint64_t *value, bool *flag);
/* A varint that must be below `limit` (an index or a count the input must hold), named
 * `what` in the error. */
bool kiln__bc_index(kiln__bc_cursor *c, uint64_t limit, const char *what, uint32_t *out);
bool kiln__bc_bytes(kiln__bc_cursor *c, size_t n, kiln__bc_span *out);
/* size:varint then the bytes. */
bool kiln__bc_blob(kiln__bc_cursor *c, kiln__bc_span *out);
/* An integer of `width` bits as the dialect reader's readAPIntWithKnownWidth writes it;
 * widths above 64 keep the low 64 bits in *out and must have no other bits set. */
bool kiln__bc_apint(kiln__bc_cursor *c, unsigned width, uint64_t *out);

/* String i as a pointer and length (not NUL-terminated in general); NULL out of range. */
const char *kiln__bc_string(const kiln__bc *bc, uint32_t i, size_t *len);
/* Does string i equal `text`? */
bool kiln__bc_string_is(const kiln__bc *bc, uint32_t i, const char *text);

#endif
