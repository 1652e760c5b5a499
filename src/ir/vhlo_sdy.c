/* SPDX-License-Identifier: Apache-2.0 */
/* Shardy's attributes in a portable artifact, written as their text forms (what the text
 * parser reads: text_sdy.c). Shardy encodes them itself (its BytecodeDialectInterface), one
 * code per kind, then its fields: a list is a varint count and its items, a nested
 * attribute a reference (varint index; an optional one with a flag), a string a string
 * index, a size a zigzag varint, a bool a byte, an optional number a varint with a flag.
 * The kinds kiln reads: manual axes (0), mesh axis (1), mesh (2), sub-axis (3), axis ref
 * (4), dimension sharding (5), tensor sharding v1 (6), v2 (15), v3 (17) and sharding per
 * value v1 (7), v2 (16). */
#include <inttypes.h>
#include <string.h>

#include "base/strbuf.h"
#include "ir/bytecode.h"
#include "ir/vhlo.h"

#define MAX_NEST 16

static bool is_sdy(const kiln__bc *bc, uint32_t index) {
    const kiln__bc_entry *e = &bc->attrs[index];
    return e->custom && e->dialect < bc->n_dialects &&
           kiln__bc_string_is(bc, bc->dialects[e->dialect].name, "sdy");
}

/* The entry's code and a cursor after it. */
static bool open_sdy(kiln__bc *bc, uint32_t index, uint64_t *code, kiln__bc_cursor *c) {
    if (index >= bc->n_attrs) return kiln__bc_fail(bc, 0, "attribute index %u out of range", index);
    if (!is_sdy(bc, index))
        return kiln__bc_fail(bc, bc->attrs[index].span.off, "expected a Shardy attribute");
    *c = kiln__bc_at(bc, bc->attrs[index].span);
    return kiln__bc_varint(c, code);
}

static void quoted(kiln__strbuf *sb, const char *s, size_t n) {
    kiln__strbuf_puts(sb, "\"");
    kiln__strbuf_append(sb, s, n);
    kiln__strbuf_puts(sb, "\"");
}

static bool string_field(kiln__bc_cursor *c, kiln__strbuf *sb) {
    uint32_t s;
    if (!kiln__bc_index(c, c->bc->n_strings, "string", &s)) return false;
    size_t n;
    const char *t = kiln__bc_string(c->bc, s, &n);
    quoted(sb, t, n);
    return true;
}

/* A builtin string attribute, by reference, quoted. */
static bool string_ref(kiln__bc_cursor *c, kiln__strbuf *sb) {
    uint32_t i;
    kiln__vattr a = {0};
    if (!kiln__bc_index(c, c->bc->n_attrs, "attribute", &i) || !kiln__vhlo_attr(c->bc, i, &a))
        return false;
    if (a.kind != KILN__VA_STRING) return kiln__bc_fail(c->bc, c->pos, "expected a string");
    quoted(sb, a.text, a.len);
    return true;
}

static bool count(kiln__bc_cursor *c, uint64_t *n) {
    if (!kiln__bc_varint(c, n)) return false;
    if (*n > c->end - c->pos) return kiln__bc_fail(c->bc, c->pos, "list too long");
    return true;
}

static bool attr_text(kiln__bc *bc, uint32_t index, kiln__strbuf *sb, bool bare, int depth);

/* A list of referenced attributes, separated by ", ". */
static bool ref_list(kiln__bc_cursor *c, kiln__strbuf *sb, bool bare, int depth) {
    uint64_t n;
    if (!count(c, &n)) return false;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t r;
        if (i) kiln__strbuf_puts(sb, ", ");
        if (!kiln__bc_index(c, c->bc->n_attrs, "attribute", &r) ||
            !attr_text(c->bc, r, sb, bare, depth + 1))
            return false;
    }
    return true;
}

/* #sdy.sharding<@mesh, [{"x"}, {"y", ?}p1], replicated={"z"}> (bare: without #sdy.sharding) */
static bool tensor_sharding(kiln__bc *bc, kiln__bc_cursor *c, uint64_t code, kiln__strbuf *sb,
                            bool bare, int depth) {
    kiln__strbuf_puts(sb, bare ? "<" : "#sdy.sharding<");
    uint32_t mesh;
    kiln__vattr m = {0};
    if (!kiln__bc_index(c, bc->n_attrs, "attribute", &mesh)) return false;
    if (is_sdy(bc, mesh)) {
        if (!attr_text(bc, mesh, sb, true, depth + 1)) return false;
    } else { /* a FlatSymbolRefAttr (builtin code 4): a reference to its name */
        const kiln__bc_entry *e = &bc->attrs[mesh];
        kiln__bc_cursor mc = kiln__bc_at(bc, e->span);
        uint64_t bcode;
        uint32_t name;
        if (!e->custom || !kiln__bc_varint(&mc, &bcode) || bcode != 4 ||
            !kiln__bc_index(&mc, bc->n_attrs, "attribute", &name) ||
            !kiln__vhlo_attr(bc, name, &m) || m.kind != KILN__VA_STRING)
            return kiln__bc_fail(bc, e->span.off, "a sharding's mesh is neither a mesh nor a name");
        kiln__strbuf_puts(sb, "@");
        kiln__strbuf_append(sb, m.text, m.len);
    }
    kiln__strbuf_puts(sb, ", [");
    if (!ref_list(c, sb, false, depth)) return false;
    kiln__strbuf_puts(sb, "]");
    const char *lists[2] = {"replicated", "unreduced"};
    for (int l = 0; l < (code == 6 ? 1 : 2); l++) {
        uint64_t n;
        kiln__bc_cursor peek = *c;
        if (!count(&peek, &n)) return false;
        if (n == 0) {
            *c = peek;
            continue;
        }
        kiln__strbuf_printf(sb, ", %s={", lists[l]);
        if (!ref_list(c, sb, false, depth)) return false;
        kiln__strbuf_puts(sb, "}");
    }
    if (code == 17) { /* the reduction of unreduced axes: not kiln's to keep */
        int64_t op;
        if (!kiln__bc_svarint(c, &op)) return false;
    }
    kiln__strbuf_puts(sb, ">");
    return true;
}

static bool attr_text(kiln__bc *bc, uint32_t index, kiln__strbuf *sb, bool bare, int depth) {
    if (depth > MAX_NEST) return kiln__bc_fail(bc, 0, "Shardy attributes nest too deeply");
    uint64_t code;
    kiln__bc_cursor c;
    if (!open_sdy(bc, index, &code, &c)) return false;
    switch (code) {
    case 0: /* manual axes: #sdy<manual_axes{"x", "y"}> */
        kiln__strbuf_puts(sb, "#sdy<manual_axes{");
        {
            uint64_t n;
            if (!count(&c, &n)) return false;
            for (uint64_t i = 0; i < n; i++) {
                if (i) kiln__strbuf_puts(sb, ", ");
                if (!string_ref(&c, sb)) return false;
            }
        }
        kiln__strbuf_puts(sb, "}>");
        break;
    case 1: { /* mesh axis: "x"=4 */
        int64_t size;
        if (!string_field(&c, sb) || !kiln__bc_svarint(&c, &size)) return false;
        kiln__strbuf_printf(sb, "=%" PRId64, size);
        break;
    }
    case 2: { /* mesh: #sdy.mesh<["x"=4], device_ids=[...]> */
        kiln__strbuf_puts(sb, bare ? "<[" : "#sdy.mesh<[");
        if (!ref_list(&c, sb, true, depth)) return false;
        kiln__strbuf_puts(sb, "]");
        uint64_t n;
        if (!count(&c, &n)) return false;
        for (uint64_t i = 0; i < n; i++) {
            int64_t d;
            if (!kiln__bc_svarint(&c, &d)) return false;
            kiln__strbuf_printf(sb, "%s%" PRId64, i ? ", " : ", device_ids=[", d);
        }
        if (n) kiln__strbuf_puts(sb, "]");
        kiln__strbuf_puts(sb, ">");
        break;
    }
    case 3: { /* sub-axis: ":(pre)size" after its axis */
        int64_t pre, size;
        if (!kiln__bc_svarint(&c, &pre) || !kiln__bc_svarint(&c, &size)) return false;
        kiln__strbuf_printf(sb, ":(%" PRId64 ")%" PRId64, pre, size);
        break;
    }
    case 4: { /* axis ref: "x" or "x":(1)2 */
        if (!string_field(&c, sb)) return false;
        uint64_t sub;
        bool present;
        if (!kiln__bc_varint_flag(&c, &sub, &present)) return false;
        if (present) {
            if (sub >= bc->n_attrs) return kiln__bc_fail(bc, c.pos, "attribute index out of range");
            if (!attr_text(bc, (uint32_t)sub, sb, true, depth + 1)) return false;
        }
        break;
    }
    case 5: { /* dimension sharding: {"x", "y"}, {"x", ?}, then p<priority> */
        kiln__strbuf_puts(sb, "{");
        uint64_t n;
        kiln__bc_cursor peek = c;
        if (!count(&peek, &n)) return false;
        if (!ref_list(&c, sb, true, depth)) return false;
        uint8_t closed;
        uint64_t priority;
        bool has_priority;
        if (!kiln__bc_byte(&c, &closed) || !kiln__bc_varint_flag(&c, &priority, &has_priority))
            return false;
        if (!closed) kiln__strbuf_puts(sb, n ? ", ?" : "?");
        kiln__strbuf_puts(sb, "}");
        if (has_priority) kiln__strbuf_printf(sb, "p%" PRIu64, priority);
        break;
    }
    case 6:
    case 15:
    case 17:
        if (!tensor_sharding(bc, &c, code, sb, bare, depth)) return false;
        break;
    case 7:
    case 16: /* per value: #sdy.sharding_per_value<[<@mesh, [...]>, ...]> */
        kiln__strbuf_puts(sb, "#sdy.sharding_per_value<[");
        if (!ref_list(&c, sb, true, depth)) return false;
        kiln__strbuf_puts(sb, "]>");
        break;
    default:
        return kiln__bc_fail(bc, bc->attrs[index].span.off,
                             "a Shardy attribute of kind %llu, which kiln does not read",
                             (unsigned long long)code);
    }
    if (!kiln__bc_done(&c))
        return kiln__bc_fail(bc, c.pos, "trailing bytes in a Shardy attribute of kind %llu",
                             (unsigned long long)code);
    return true;
}

bool kiln__vhlo_is_sdy(const kiln__bc *bc, uint32_t index) {
    return index < bc->n_attrs && is_sdy(bc, index);
}

bool kiln__vhlo_sdy_text(kiln__bc *bc, uint32_t index, kiln__strbuf *sb) {
    return attr_text(bc, index, sb, false, 0);
}
