/* SPDX-License-Identifier: Apache-2.0 */
/* Any VHLO attribute as StableHLO text (vhlo.h, kiln__vhlo_attr_text): what an op whose
 * attributes kiln keeps as written (stablehlo.custom_call) carries, written as MLIR prints
 * it, so that an artifact and its text give the same module. */
#include <inttypes.h>
#include <string.h>

#include "ir/vhlo.h"
#include "kiln/dtype.h"

#define MAX_LIST 4096 /* integers of one dense attribute kept in text */

/* "text" with MLIR's escapes: \\, \", and \XX for anything not printable ASCII. */
void kiln__vhlo_string_text(kiln__strbuf *sb, const char *s, size_t len) {
    static const char hex[] = "0123456789ABCDEF";
    kiln__strbuf_puts(sb, "\"");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == '"') {
            char e[2] = {'\\', (char)c};
            kiln__strbuf_append(sb, e, 2);
        } else if (c >= 0x20 && c < 0x7F) {
            kiln__strbuf_append(sb, (const char *)&c, 1);
        } else {
            char e[3] = {'\\', hex[c >> 4], hex[c & 15]};
            kiln__strbuf_append(sb, e, 3);
        }
    }
    kiln__strbuf_puts(sb, "\"");
}

/* An identifier as it stands, anything else as a string. */
void kiln__vhlo_key_text(kiln__strbuf *sb, const char *s, size_t len) {
    bool bare =
        len > 0 && ((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_');
    for (size_t i = 1; i < len && bare; i++)
        bare = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
               (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '$' || s[i] == '.';
    if (bare)
        kiln__strbuf_append(sb, s, len);
    else
        kiln__vhlo_string_text(sb, s, len);
}

/* A type's first varint: its code in its dialect. */
static bool type_code(kiln__bc *bc, uint32_t index, uint64_t *code) {
    if (index >= bc->n_types) return kiln__bc_fail(bc, 0, "type index out of range");
    kiln__bc_cursor c = kiln__bc_at(bc, bc->types[index].span);
    return kiln__bc_varint(&c, code);
}

/* The integers of a dense attribute of rank 0 or 1, as MLIR prints them: `dense<>` for
 * none, `dense<v>` when all are one value, `dense<[a, b]>` otherwise; with its type. Index
 * tensors (layouts) hold 64-bit elements. */
static bool dense_ints(kiln__bc *bc, const kiln__vattr *a, kiln__strbuf *sb, uint32_t index) {
    kiln__vtype t = {0};
    if (!kiln__vhlo_type(bc, a->type, &t)) return false;
    bool is_index = t.name && !strcmp(t.name, "index_v1");
    uint64_t code = 0;
    if (is_index && (!type_code(bc, a->type, &code) || (code != 20 && code != 21)))
        return kiln__bc_fail(bc, bc->attrs[index].span.off,
                             "an index attribute that is not a tensor");
    if (!is_index &&
        (t.kind != KILN__VT_TENSOR || t.rank > 1 || t.dtype < KILN_I8 || t.dtype > KILN_U64))
        return kiln__vhlo_dense_text(bc, sb, a); /* a hex blob */
    if (t.rank > 1) return kiln__bc_fail(bc, a->blob.off, "an index tensor of rank %d", t.rank);
    int64_t n = t.rank ? t.dims[0] : 1;
    if (n > MAX_LIST) return kiln__bc_fail(bc, a->blob.off, "a dense attribute too long");
    int64_t v[MAX_LIST];
    if (is_index) {
        bool splat = a->blob.len == 8 && n > 1;
        if (!splat && a->blob.len != (size_t)n * 8)
            return kiln__bc_fail(bc, a->blob.off, "an index tensor of %" PRId64 " in %zu bytes", n,
                                 a->blob.len);
        for (int64_t k = 0; k < n; k++)
            memcpy(&v[k], bc->data + a->blob.off + (splat ? 0 : (size_t)k * 8), 8);
    } else {
        int32_t count = 0;
        if (!kiln__vhlo_tensor_ints(bc, a, v, MAX_LIST, &count, NULL)) return false;
        n = count;
    }
    bool same = n > 0;
    for (int64_t k = 1; k < n; k++)
        same &= v[k] == v[0];
    kiln__strbuf_puts(sb, "dense<");
    if (same) {
        kiln__strbuf_printf(sb, "%" PRId64, v[0]);
    } else if (n > 0) {
        for (int64_t k = 0; k < n; k++)
            kiln__strbuf_printf(sb, "%s%" PRId64, k ? ", " : "[", v[k]);
        kiln__strbuf_puts(sb, "]");
    }
    kiln__strbuf_puts(sb, "> : tensor<");
    if (t.rank) kiln__strbuf_printf(sb, "%" PRId64 "x", n);
    if (is_index) {
        kiln__strbuf_puts(sb, "index>");
        return true;
    }
    kiln__strbuf_printf(sb, "%s>", kiln_dtype_name((kiln_dtype)t.dtype));
    return true;
}

/* svarint[]: a count, then the values. */
static bool svarints(kiln__bc_cursor *c, kiln__strbuf *sb) {
    uint64_t n;
    if (!kiln__bc_varint(c, &n)) return false;
    kiln__strbuf_puts(sb, "[");
    for (uint64_t i = 0; i < n; i++) {
        int64_t v;
        if (!kiln__bc_svarint(c, &v)) return false;
        kiln__strbuf_printf(sb, "%s%" PRId64, i ? ", " : "", v);
    }
    kiln__strbuf_puts(sb, "]");
    return true;
}

/* OutputOperandAliasV1: outputTupleIndices svarint[], operandIndex svarint,
 * operandTupleIndices svarint[]. */
static bool output_operand_alias(kiln__bc *bc, uint32_t index, kiln__strbuf *sb) {
    kiln__bc_cursor c = kiln__bc_at(bc, bc->attrs[index].span);
    uint64_t code;
    int64_t operand;
    if (!kiln__bc_varint(&c, &code)) return false;
    kiln__strbuf_puts(sb, "#stablehlo.output_operand_alias<output_tuple_indices = ");
    if (!svarints(&c, sb) || !kiln__bc_svarint(&c, &operand)) return false;
    kiln__strbuf_printf(sb, ", operand_index = %" PRId64 ", operand_tuple_indices = ", operand);
    if (!svarints(&c, sb)) return false;
    kiln__strbuf_puts(sb, ">");
    return true;
}

bool kiln__vhlo_attr_text(kiln__bc *bc, uint32_t index, kiln__strbuf *sb) {
    kiln__vattr a = {0};
    if (!kiln__vhlo_attr(bc, index, &a)) return false;
    size_t at = index < bc->n_attrs ? bc->attrs[index].span.off : 0;
    switch (a.kind) {
    case KILN__VA_STRING: kiln__vhlo_string_text(sb, a.text, a.len); return true;
    case KILN__VA_BOOL: kiln__strbuf_puts(sb, a.value ? "true" : "false"); return true;
    case KILN__VA_UNIT: kiln__strbuf_puts(sb, "unit"); return true;
    case KILN__VA_INT: {
        kiln__vtype t = {0};
        if (!kiln__vhlo_type(bc, a.type, &t)) return false;
        if (t.name && !strcmp(t.name, "index_v1")) {
            kiln__strbuf_printf(sb, "%" PRId64 " : index", (int64_t)a.value);
            return true;
        }
        if (t.kind != KILN__VT_ELEMENT) return kiln__bc_fail(bc, at, "an integer of an odd type");
        size_t bits = kiln_dtype_size((kiln_dtype)t.dtype) * 8;
        int64_t v = (int64_t)a.value;
        bool is_signed = t.dtype >= KILN_I8 && t.dtype <= KILN_I64;
        if (is_signed && bits < 64 && (a.value >> (bits - 1)) & 1)
            v = (int64_t)(a.value | (~UINT64_C(0) << bits));
        if (is_signed)
            kiln__strbuf_printf(sb, "%" PRId64, v);
        else
            kiln__strbuf_printf(sb, "%" PRIu64, a.value);
        kiln__strbuf_puts(sb, " : ");
        return kiln__vhlo_type_text(bc, sb, a.type);
    }
    case KILN__VA_FLOAT: {
        kiln__vtype t = {0};
        if (!kiln__vhlo_type(bc, a.type, &t)) return false;
        unsigned digits = (unsigned)kiln_dtype_size((kiln_dtype)t.dtype) * 2;
        kiln__strbuf_printf(sb, "0x%0*" PRIX64 " : ", (int)digits, a.value);
        return kiln__vhlo_type_text(bc, sb, a.type);
    }
    case KILN__VA_ARRAY:
    case KILN__VA_DICT:
        kiln__strbuf_puts(sb, a.kind == KILN__VA_ARRAY ? "[" : "{");
        for (uint32_t i = 0; i < a.n; i++) {
            if (i) kiln__strbuf_puts(sb, ", ");
            uint32_t item, name;
            if (a.kind == KILN__VA_ARRAY) {
                if (!kiln__vhlo_array_item(bc, &a, i, &item)) return false;
            } else {
                kiln__vattr key = {0};
                if (!kiln__vhlo_dict_item(bc, &a, i, &name, &item) ||
                    !kiln__vhlo_attr(bc, name, &key))
                    return false;
                if (key.kind != KILN__VA_STRING)
                    return kiln__bc_fail(bc, at, "a dictionary key that is not a string");
                kiln__vhlo_key_text(sb, key.text, key.len);
                kiln__vattr value = {0};
                if (!kiln__vhlo_attr(bc, item, &value)) return false;
                if (value.kind == KILN__VA_UNIT) continue; /* written by its name alone */
                kiln__strbuf_puts(sb, " = ");
            }
            if (!kiln__vhlo_attr_text(bc, item, sb)) return false;
        }
        kiln__strbuf_puts(sb, a.kind == KILN__VA_ARRAY ? "]" : "}");
        return true;
    case KILN__VA_TENSOR: return dense_ints(bc, &a, sb, index);
    case KILN__VA_TYPE: return kiln__vhlo_type_text(bc, sb, a.type);
    case KILN__VA_ENUM:
        if (a.code == 5) { /* CustomCallApiVersion: StableHLO writes it as an i32 */
            kiln__strbuf_printf(sb, "%" PRIu64 " : i32", a.value);
            return true;
        }
        return kiln__bc_fail(bc, at, "an enum attribute (code %u) kiln does not write",
                             (unsigned)a.code);
    case KILN__VA_OTHER:
        if (a.name && !strcmp(a.name, "vhlo.output_operand_alias"))
            return output_operand_alias(bc, index, sb);
        if (index < bc->n_attrs && !bc->attrs[index].custom) { /* kept as its text */
            const kiln__bc_entry *e = &bc->attrs[index];
            size_t len = e->span.len;
            while (len && bc->data[e->span.off + len - 1] == 0)
                len--;
            kiln__strbuf_append(sb, (const char *)bc->data + e->span.off, len);
            return true;
        }
        return kiln__bc_fail(bc, at, "unsupported attribute %s", a.name ? a.name : "?");
    default: return kiln__bc_fail(bc, at, "unsupported attribute kind %d", (int)a.kind);
    }
}
