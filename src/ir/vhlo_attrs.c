/* SPDX-License-Identifier: Apache-2.0 */
/* VHLO and builtin attributes and types in MLIR bytecode (vhlo.h): decoding, and writing
 * them as StableHLO text. The codes are those of stablehlo/dialect/VhloBytecode.cpp
 * (enum AttributeCode, enum TypeCode) and of MLIR's BuiltinDialectBytecode. */
#include <inttypes.h>
#include <string.h>

#include "ir/vhlo.h"
#include "kiln/dtype.h"

/* Attributes and types refer to others by index: a chain deeper than this is refused (an
 * input whose entries refer to themselves would otherwise never end). */
#define MAX_NESTING 64

enum {
    ENUM_CMP_DIRECTION = 3,
    ENUM_CMP_TYPE = 4,
    ENUM_API = 5,
    ENUM_FFT = 7,
    ENUM_PRECISION = 11,
    ENUM_RNG_ALGORITHM = 12,
    ENUM_RNG_DISTRIBUTION = 13,
    ENUM_TRANSPOSE = 16,
    ENUM_ACCURACY_MODE = 19
};

static bool dialect_is(const kiln__bc *bc, uint32_t dialect, const char *name) {
    return dialect < bc->n_dialects && kiln__bc_string_is(bc, bc->dialects[dialect].name, name);
}

/* ---- types -------------------------------------------------------------------------------- */

static const char *const vhlo_type_names[] = {"bool_v1",
                                              "complex_v1",
                                              "bf16_v1",
                                              "f16_v1",
                                              "f32_v1",
                                              "f64_v1",
                                              "f8E4M3FN_v1",
                                              "f8E5M2_v1",
                                              "func_v1",
                                              "index_v1",
                                              "i4_v1",
                                              "i8_v1",
                                              "i16_v1",
                                              "i32_v1",
                                              "i64_v1",
                                              "ui4_v1",
                                              "ui8_v1",
                                              "ui16_v1",
                                              "ui32_v1",
                                              "ui64_v1",
                                              "tensor_v1",
                                              "tensor_v1 with an encoding",
                                              "token_v1",
                                              "tuple_v1",
                                              "quant_v1",
                                              "unranked_tensor_v1",
                                              "witness_v1",
                                              "f8E4M3FNUZ_v1",
                                              "f8E5M2FNUZ_v1",
                                              "f8E4M3B11FNUZ_v1",
                                              "quant_per_axis_v1",
                                              "i2_v1",
                                              "ui2_v1",
                                              "none_v1",
                                              "tf31_v1",
                                              "f8E4M3_v1",
                                              "f8E3M4_v1",
                                              "f4E2M1FN_v1",
                                              "f6E2M3FN_v1",
                                              "f6E3M2FN_v1",
                                              "f8E8M0FNU_v1",
                                              "buffer_v1",
                                              "future_v1"};

/* The kiln dtype of a VHLO element type code, or -1. */
static int vhlo_dtype(uint64_t code) {
    switch (code) {
    case 0: return KILN_BOOL;
    case 2: return KILN_BF16;
    case 3: return KILN_F16;
    case 4: return KILN_F32;
    case 5: return KILN_F64;
    case 6: return KILN_F8E4M3FN;
    case 7: return KILN_F8E5M2;
    case 10: return KILN_I4;
    case 11: return KILN_I8;
    case 12: return KILN_I16;
    case 13: return KILN_I32;
    case 14: return KILN_I64;
    case 15: return KILN_U4;
    case 16: return KILN_U8;
    case 17: return KILN_U16;
    case 18: return KILN_U32;
    case 19: return KILN_U64;
    case 27: return KILN_F8E4M3FNUZ;
    case 28: return KILN_F8E5M2FNUZ;
    case 29: return KILN_F8E4M3B11FNUZ;
    case 31: return KILN_I2;
    case 32: return KILN_U2;
    case 35: return KILN_F8E4M3;
    case 36: return KILN_F8E3M4;
    case 37: return KILN_F4E2M1FN;
    case 38: return KILN_F6E2M3FN;
    case 39: return KILN_F6E3M2FN;
    case 40: return KILN_F8E8M0FNU;
    default: return -1;
    }
}

static bool shape(kiln__bc_cursor *c, kiln__vtype *t) {
    size_t at = c->pos;
    uint64_t rank;
    if (!kiln__bc_varint(c, &rank)) return false;
    if (rank > 16)
        return kiln__bc_fail(c->bc, at, "tensor of rank %llu (kiln allows 16)",
                             (unsigned long long)rank);
    t->rank = (int32_t)rank;
    for (int32_t i = 0; i < t->rank; i++) {
        at = c->pos;
        if (!kiln__bc_svarint(c, &t->dims[i])) return false;
        if (t->dims[i] < 0)
            return kiln__bc_fail(c->bc, at, "a dynamic dimension (kiln needs static shapes)");
    }
    /* Every stride and byte offset must fit, for elements of up to 16 bytes. */
    kiln_shape s = {.rank = t->rank};
    for (int32_t i = 0; i < t->rank; i++)
        s.dims[i] = t->dims[i];
    size_t bytes;
    if (!kiln_shape_nbytes(&s, KILN_C128, &bytes))
        return kiln__bc_fail(c->bc, at,
                             "tensor type too large: the product of its dimensions "
                             "overflows");
    return true;
}

static bool type_list(kiln__bc_cursor *c, kiln__bc_span *span, uint32_t *n) {
    uint64_t count;
    size_t start = c->pos;
    if (!kiln__bc_varint(c, &count)) return false;
    if (count > c->end - c->pos) return kiln__bc_fail(c->bc, start, "type list too long");
    for (uint64_t i = 0; i < count; i++) {
        uint64_t t;
        if (!kiln__bc_varint(c, &t)) return false;
    }
    *span = (kiln__bc_span){.off = start, .len = c->pos - start};
    *n = (uint32_t)count;
    return true;
}

static bool decode_type(kiln__bc *bc, uint32_t index, kiln__vtype *t, int depth);

/* complex<E> (VHLO's complex_v1 and the builtin ComplexType both hold E's type index): an
 * element type when E is f32 or f64, another type kiln does not read otherwise. */
static bool complex_type(kiln__bc *bc, kiln__bc_cursor *c, kiln__vtype *t, int depth) {
    uint64_t elem;
    if (!kiln__bc_varint(c, &elem)) return false;
    if (elem >= bc->n_types) return kiln__bc_fail(bc, c->pos, "element type out of range");
    kiln__vtype et = {0};
    if (!decode_type(bc, (uint32_t)elem, &et, depth + 1)) return false;
    t->dtype = -1;
    if (et.kind == KILN__VT_ELEMENT && et.dtype == KILN_F32) t->dtype = KILN_C64;
    if (et.kind == KILN__VT_ELEMENT && et.dtype == KILN_F64) t->dtype = KILN_C128;
    t->kind = t->dtype >= 0 ? KILN__VT_ELEMENT : KILN__VT_OTHER;
    return true;
}

/* Builtin types appear outside VHLO's ops: around Shardy's (its manual computations take
 * and give builtin tensors, cast from and to VHLO's). Codes in BuiltinDialectBytecode's
 * order: 0 integer (width << 2 | signedness), 3 bf16, 4 f16, 5 f32, 6 f64, 9 complex, 13
 * ranked tensor; any other is a type kiln does not read. */
static bool builtin_type(kiln__bc *bc, kiln__bc_cursor *c, uint64_t code, kiln__vtype *t,
                         int depth) {
    t->kind = KILN__VT_OTHER;
    t->name = "a builtin type";
    switch (code) {
    case 0: {
        uint64_t ws;
        if (!kiln__bc_varint(c, &ws)) return false;
        uint64_t width = ws >> 2, sign = ws & 3; /* 0 signless, 1 signed, 2 unsigned */
        bool u = sign == 2;
        int d = width == 1 && !u ? KILN_BOOL
                : width == 2     ? (u ? KILN_U2 : KILN_I2)
                : width == 4     ? (u ? KILN_U4 : KILN_I4)
                : width == 8     ? (u ? KILN_U8 : KILN_I8)
                : width == 16    ? (u ? KILN_U16 : KILN_I16)
                : width == 32    ? (u ? KILN_U32 : KILN_I32)
                : width == 64    ? (u ? KILN_U64 : KILN_I64)
                                 : -1;
        if (d >= 0) t->kind = KILN__VT_ELEMENT, t->dtype = d;
        return true;
    }
    case 3: t->kind = KILN__VT_ELEMENT, t->dtype = KILN_BF16; return true;
    case 4: t->kind = KILN__VT_ELEMENT, t->dtype = KILN_F16; return true;
    case 5: t->kind = KILN__VT_ELEMENT, t->dtype = KILN_F32; return true;
    case 6: t->kind = KILN__VT_ELEMENT, t->dtype = KILN_F64; return true;
    case 9: return complex_type(bc, c, t, depth);
    case 13: {
        uint64_t elem;
        if (!shape(c, t) || !kiln__bc_varint(c, &elem)) return false;
        if (elem >= bc->n_types) return kiln__bc_fail(bc, c->pos, "element type out of range");
        kiln__vtype et = {0};
        if (!decode_type(bc, (uint32_t)elem, &et, depth + 1)) return false;
        if (et.kind != KILN__VT_ELEMENT) return true;
        t->kind = KILN__VT_TENSOR;
        t->elem = (uint32_t)elem;
        t->dtype = et.dtype;
        return true;
    }
    default: return true;
    }
}

static bool decode_type(kiln__bc *bc, uint32_t index, kiln__vtype *t, int depth) {
    memset(t, 0, sizeof *t);
    t->dtype = -1;
    if (index >= bc->n_types) return kiln__bc_fail(bc, 0, "type index %u out of range", index);
    const kiln__bc_entry *e = &bc->types[index];
    if (depth > MAX_NESTING) return kiln__bc_fail(bc, e->span.off, "types nest too deeply");
    if (!e->custom) {
        t->kind = KILN__VT_OTHER;
        t->name = "a type written as text";
        return true;
    }
    kiln__bc_cursor c = kiln__bc_at(bc, e->span);
    uint64_t code;
    if (!kiln__bc_varint(&c, &code)) return false;
    if (dialect_is(bc, e->dialect, "builtin")) return builtin_type(bc, &c, code, t, depth);
    if (!dialect_is(bc, e->dialect, "vhlo"))
        return kiln__bc_fail(bc, e->span.off, "a type of an unsupported dialect");
    if (code >= sizeof vhlo_type_names / sizeof vhlo_type_names[0])
        return kiln__bc_fail(bc, e->span.off, "unknown vhlo type code %llu",
                             (unsigned long long)code);
    t->name = vhlo_type_names[code];
    switch (code) {
    case 8:
        t->kind = KILN__VT_FUNCTION;
        return type_list(&c, &t->inputs, &t->n_inputs) && type_list(&c, &t->outputs, &t->n_outputs);
    case 20:
    case 21: {
        t->kind = KILN__VT_TENSOR;
        if (code == 21) {
            uint64_t encoding;
            if (!kiln__bc_varint(&c, &encoding)) return false;
            /* The only encoding StableHLO writes is type extensions (bounds of dynamic
             * dimensions), which a static shape does not need. */
        }
        uint64_t elem;
        if (!shape(&c, t) || !kiln__bc_varint(&c, &elem)) return false;
        if (elem >= bc->n_types) return kiln__bc_fail(bc, c.pos, "element type out of range");
        t->elem = (uint32_t)elem;
        kiln__vtype et = {0};
        if (!decode_type(bc, t->elem, &et, depth + 1)) return false;
        if (et.kind != KILN__VT_ELEMENT) {
            t->kind = KILN__VT_OTHER;
            t->name = et.name;
            return true;
        }
        t->dtype = et.dtype;
        return true;
    }
    case 1: return complex_type(bc, &c, t, depth);
    case 22: t->kind = KILN__VT_TOKEN; return true;
    case 23: t->kind = KILN__VT_TUPLE; return type_list(&c, &t->inputs, &t->n_inputs);
    default:
        t->dtype = vhlo_dtype(code);
        t->kind = t->dtype >= 0 ? KILN__VT_ELEMENT : KILN__VT_OTHER;
        return true;
    }
}

bool kiln__vhlo_type(kiln__bc *bc, uint32_t index, kiln__vtype *out) {
    return decode_type(bc, index, out, 0);
}

bool kiln__vhlo_function_type(kiln__bc *bc, const kiln__vtype *f, bool outputs, uint32_t i,
                              uint32_t *out) {
    kiln__bc_cursor c = kiln__bc_at(bc, outputs ? f->outputs : f->inputs);
    uint64_t n, t = 0;
    if (!kiln__bc_varint(&c, &n)) return false;
    for (uint32_t k = 0; k <= i; k++)
        if (!kiln__bc_varint(&c, &t)) return false;
    if (t >= bc->n_types) return kiln__bc_fail(bc, c.pos, "type index out of range");
    *out = (uint32_t)t;
    return true;
}

static const char *dtype_text(int dtype) {
    return dtype == KILN_BOOL ? "i1" : kiln_dtype_name((kiln_dtype)dtype);
}

bool kiln__vhlo_type_text(kiln__bc *bc, kiln__strbuf *sb, uint32_t index) {
    kiln__vtype t = {0};
    if (!kiln__vhlo_type(bc, index, &t)) return false;
    switch (t.kind) {
    case KILN__VT_TENSOR:
        kiln__strbuf_puts(sb, "tensor<");
        for (int32_t i = 0; i < t.rank; i++)
            kiln__strbuf_printf(sb, "%" PRId64 "x", t.dims[i]);
        kiln__strbuf_printf(sb, "%s>", dtype_text(t.dtype));
        return true;
    case KILN__VT_ELEMENT: kiln__strbuf_puts(sb, dtype_text(t.dtype)); return true;
    case KILN__VT_TOKEN: kiln__strbuf_puts(sb, "!stablehlo.token"); return true;
    case KILN__VT_TUPLE: {
        if (bc->depth > MAX_NESTING)
            return kiln__bc_fail(bc, bc->types[index].span.off, "tuple types nested too deep");
        kiln__strbuf_puts(sb, "tuple<");
        bc->depth++;
        for (uint32_t i = 0; i < t.n_inputs; i++) {
            uint32_t e = 0;
            if (i) kiln__strbuf_puts(sb, ", ");
            if (!kiln__vhlo_function_type(bc, &t, false, i, &e) ||
                !kiln__vhlo_type_text(bc, sb, e)) {
                bc->depth--;
                return false;
            }
        }
        bc->depth--;
        kiln__strbuf_puts(sb, ">");
        return true;
    }
    default:
        return kiln__bc_fail(bc, bc->types[index].span.off, "unsupported type %s",
                             t.name ? t.name : "(unknown)");
    }
}

/* ---- attributes --------------------------------------------------------------------------- */

static bool list_span(kiln__bc_cursor *c, uint32_t per_item, kiln__bc_span *span, uint32_t *n) {
    uint64_t count;
    size_t at = c->pos;
    if (!kiln__bc_varint(c, &count)) return false;
    if (count > (c->end - c->pos) / per_item) return kiln__bc_fail(c->bc, at, "list too long");
    *span = (kiln__bc_span){.off = c->pos, .len = c->end - c->pos};
    *n = (uint32_t)count;
    for (uint64_t i = 0; i < count * per_item; i++) {
        uint64_t v;
        if (!kiln__bc_varint(c, &v)) return false;
    }
    span->len = c->pos - span->off;
    return true;
}

static bool builtin_attr(kiln__bc *bc, kiln__bc_cursor *c, uint64_t code, kiln__vattr *a) {
    switch (code) {
    case 0: a->kind = KILN__VA_ARRAY; return list_span(c, 1, &a->items, &a->n);
    case 1: a->kind = KILN__VA_DICT; return list_span(c, 2, &a->items, &a->n);
    case 2:
    case 3: {
        uint32_t s;
        a->kind = KILN__VA_STRING;
        if (!kiln__bc_index(c, bc->n_strings, "string", &s)) return false;
        a->text = kiln__bc_string(bc, s, &a->len);
        return true;
    }
    case 7: a->kind = KILN__VA_UNIT; return true;
    case 8: { /* IntegerAttr: its type, then the value (a byte up to 8 bits, else zigzag) */
        uint32_t t;
        kiln__vtype et = {0};
        if (!kiln__bc_index(c, bc->n_types, "type", &t) || !decode_type(bc, t, &et, 1))
            return false;
        int64_t v = 0;
        size_t es = et.kind == KILN__VT_ELEMENT ? kiln_dtype_size((kiln_dtype)et.dtype) : 0;
        if (es == 1) {
            uint8_t b;
            if (!kiln__bc_byte(c, &b)) return false;
            v = (int8_t)b;
        } else if (es >= 2 && es <= 8) {
            if (!kiln__bc_svarint(c, &v)) return false;
        } else {
            a->kind = KILN__VA_OTHER;
            a->name = "a wide builtin integer";
            return true;
        }
        a->kind = KILN__VA_INT;
        a->type = t;
        a->value = (uint64_t)v;
        return true;
    }
    case 10:
    case 11:
    case 12:
    case 13:
    case 14:
    case 15:
    case 22: a->kind = KILN__VA_LOC; return true;
    default:
        a->kind = KILN__VA_OTHER;
        a->name = "a builtin attribute";
        return true;
    }
}

/* Bits of a FloatV1's type. */
static unsigned float_width(const kiln__vtype *t) {
    if (t->kind != KILN__VT_ELEMENT) return 0;
    switch (t->dtype) {
    case KILN_F16:
    case KILN_BF16: return 16;
    case KILN_F32: return 32;
    case KILN_F64: return 64;
    default: { /* the small floats */
        kiln_dtype d = (kiln_dtype)t->dtype;
        return kiln_dtype_is_float(d) ? kiln_dtype_bits(d) : 0;
    }
    }
}

static unsigned int_width(const kiln__vtype *t) {
    if (t->kind == KILN__VT_ELEMENT && kiln_dtype_is_integer((kiln_dtype)t->dtype))
        return kiln_dtype_bits((kiln_dtype)t->dtype);
    if (t->name && strcmp(t->name, "index_v1") == 0) return 64;
    return 0;
}

static bool vhlo_attr(kiln__bc *bc, kiln__bc_cursor *c, uint64_t code, kiln__vattr *a, size_t at) {
    a->code = (uint32_t)code;
    switch (code) {
    case 1: a->kind = KILN__VA_ARRAY; return list_span(c, 1, &a->items, &a->n);
    case 2: {
        uint64_t v;
        if (!kiln__bc_varint(c, &v)) return false;
        if (v > 1) return kiln__bc_fail(bc, at, "a boolean of value %llu", (unsigned long long)v);
        a->kind = KILN__VA_BOOL;
        a->value = v;
        return true;
    }
    case ENUM_CMP_DIRECTION:
    case ENUM_CMP_TYPE:
    case ENUM_API:
    case ENUM_FFT:
    case ENUM_PRECISION:
    case ENUM_RNG_ALGORITHM:
    case ENUM_RNG_DISTRIBUTION:
    case ENUM_TRANSPOSE:
    case ENUM_ACCURACY_MODE: a->kind = KILN__VA_ENUM; return kiln__bc_varint(c, &a->value);
    case 6: a->kind = KILN__VA_DICT; return list_span(c, 2, &a->items, &a->n);
    case 8:
    case 9: {
        uint64_t type;
        kiln__vtype t = {0};
        if (!kiln__bc_varint(c, &type)) return false;
        if (type >= bc->n_types) return kiln__bc_fail(bc, at, "type index out of range");
        a->type = (uint32_t)type;
        if (!kiln__vhlo_type(bc, a->type, &t)) return false;
        unsigned w = code == 8 ? float_width(&t) : int_width(&t);
        if (!w)
            return kiln__bc_fail(bc, at, "unsupported %s of type %s",
                                 code == 8 ? "float attribute" : "integer attribute",
                                 t.name ? t.name : "?");
        a->kind = code == 8 ? KILN__VA_FLOAT : KILN__VA_INT;
        return kiln__bc_apint(c, w, &a->value);
    }
    case 14: {
        uint32_t s;
        a->kind = KILN__VA_STRING;
        if (!kiln__bc_index(c, bc->n_strings, "string", &s)) return false;
        a->text = kiln__bc_string(bc, s, &a->len);
        return true;
    }
    case 15: {
        uint64_t type;
        a->kind = KILN__VA_TENSOR;
        if (!kiln__bc_varint(c, &type)) return false;
        if (type >= bc->n_types) return kiln__bc_fail(bc, at, "type index out of range");
        a->type = (uint32_t)type;
        return kiln__bc_blob(c, &a->blob);
    }
    case 17: {
        uint64_t type;
        a->kind = KILN__VA_TYPE;
        if (!kiln__bc_varint(c, &type)) return false;
        if (type >= bc->n_types) return kiln__bc_fail(bc, at, "type index out of range");
        a->type = (uint32_t)type;
        return true;
    }
    case 20: {
        /* atol, rtol (f64 bits), ulps, mode (an attribute). */
        uint64_t atol, rtol, mode;
        int64_t ulps;
        if (!kiln__bc_apint(c, 64, &atol) || !kiln__bc_apint(c, 64, &rtol) ||
            !kiln__bc_svarint(c, &ulps) || !kiln__bc_varint(c, &mode))
            return false;
        kiln__vattr m = {0};
        if (mode >= bc->n_attrs || !kiln__vhlo_attr(bc, (uint32_t)mode, &m)) return false;
        a->kind = KILN__VA_RESULT_ACCURACY;
        a->value = atol == 0 && rtol == 0 && ulps == 0 && m.kind == KILN__VA_ENUM && m.value == 0;
        return true;
    }
    case 10:
        a->kind = KILN__VA_OTHER;
        a->name = "vhlo.output_operand_alias";
        return true;
    case 18:
        a->kind = KILN__VA_OTHER;
        a->name = "vhlo.type_extensions";
        return true;
    case 21:
    case 22:
    case 23:
    case 24:
    case 25:
        a->kind = KILN__VA_OTHER;
        a->name = "a vhlo mesh attribute";
        return true;
    default:
        return kiln__bc_fail(bc, at, "unknown vhlo attribute code %llu", (unsigned long long)code);
    }
}

bool kiln__vhlo_attr(kiln__bc *bc, uint32_t index, kiln__vattr *out) {
    memset(out, 0, sizeof *out);
    if (index >= bc->n_attrs) return kiln__bc_fail(bc, 0, "attribute index %u out of range", index);
    const kiln__bc_entry *e = &bc->attrs[index];
    if (!e->custom) {
        out->kind = KILN__VA_OTHER;
        out->name = "an attribute written as text";
        return true;
    }
    kiln__bc_cursor c = kiln__bc_at(bc, e->span);
    uint64_t code;
    if (!kiln__bc_varint(&c, &code)) return false;
    if (bc->depth > MAX_NESTING)
        return kiln__bc_fail(bc, e->span.off, "attributes nest too deeply");
    bc->depth++;
    bool ok = dialect_is(bc, e->dialect, "builtin") ? builtin_attr(bc, &c, code, out)
              : dialect_is(bc, e->dialect, "vhlo")
                  ? vhlo_attr(bc, &c, code, out, e->span.off)
                  : kiln__bc_fail(bc, e->span.off, "an attribute of an unsupported dialect");
    bc->depth--;
    return ok;
}

static bool nth_varint(kiln__bc *bc, kiln__bc_span items, uint32_t i, uint64_t *out) {
    kiln__bc_cursor c = kiln__bc_at(bc, items);
    for (uint32_t k = 0; k <= i; k++)
        if (!kiln__bc_varint(&c, out)) return false;
    return true;
}

bool kiln__vhlo_array_item(kiln__bc *bc, const kiln__vattr *a, uint32_t i, uint32_t *out) {
    uint64_t v;
    if (i >= a->n || !nth_varint(bc, a->items, i, &v)) return false;
    if (v >= bc->n_attrs) return kiln__bc_fail(bc, a->items.off, "attribute index out of range");
    *out = (uint32_t)v;
    return true;
}

bool kiln__vhlo_dict_item(kiln__bc *bc, const kiln__vattr *d, uint32_t i, uint32_t *name,
                          uint32_t *value) {
    uint64_t k, v;
    if (i >= d->n || !nth_varint(bc, d->items, 2 * i, &k) ||
        !nth_varint(bc, d->items, 2 * i + 1, &v))
        return false;
    if (k >= bc->n_attrs || v >= bc->n_attrs)
        return kiln__bc_fail(bc, d->items.off, "attribute index out of range");
    *name = (uint32_t)k;
    *value = (uint32_t)v;
    return true;
}

/* ---- tensors ------------------------------------------------------------------------------ */

/* A tensor attribute's type, element count and whether its blob is one element for all. */
static bool tensor_layout(kiln__bc *bc, const kiln__vattr *a, kiln__vtype *t, int64_t *numel,
                          size_t *esize, bool *splat, bool *packed) {
    if (!kiln__vhlo_type(bc, a->type, t)) return false;
    if (t->kind != KILN__VT_TENSOR)
        return kiln__bc_fail(bc, a->blob.off, "unsupported tensor attribute of %s",
                             t->name ? t->name : "?");
    int64_t n = 1;
    for (int32_t i = 0; i < t->rank; i++) {
        if (t->dims[i] != 0 && n > INT64_MAX / t->dims[i])
            return kiln__bc_fail(bc, a->blob.off, "tensor attribute too large");
        n *= t->dims[i];
    }
    *numel = n;
    *esize = kiln_dtype_size((kiln_dtype)t->dtype);
    size_t len = a->blob.len;
    *packed = false;
    if (t->dtype == KILN_BOOL) {
        /* Booleans are bit-packed (least significant first); a splat is one byte, 0xff for
         * true; older files hold one byte per element. */
        size_t packed_len = (size_t)((n + 7) / 8);
        *splat = (len == 1 && n > 1 && (bc->data[a->blob.off] == 0xff || n > 8));
        *packed = !*splat && len == packed_len && (size_t)n != len;
        if (!*splat && !*packed && len != (size_t)n)
            return kiln__bc_fail(bc, a->blob.off,
                                 "boolean tensor of %" PRId64 " elements in %zu bytes", n, len);
        return true;
    }
    *splat = len == *esize && n > 1;
    if (!*splat && (n == 0 ? len != 0 : (uint64_t)len / *esize != (uint64_t)n || len % *esize))
        return kiln__bc_fail(bc, a->blob.off, "tensor of %" PRId64 " elements in %zu bytes", n,
                             len);
    return true;
}

/* Byte i of element k of a boolean tensor's blob. */
static unsigned bool_at(const kiln__bc *bc, const kiln__vattr *a, bool splat, bool packed,
                        int64_t k) {
    const unsigned char *b = bc->data + a->blob.off;
    if (splat) return b[0] ? 1 : 0;
    if (packed) return (b[k / 8] >> (k % 8)) & 1;
    return b[k] ? 1 : 0;
}

bool kiln__vhlo_dense_text(kiln__bc *bc, kiln__strbuf *sb, const kiln__vattr *a) {
    kiln__vtype t = {0};
    int64_t n;
    size_t esize;
    bool splat, packed;
    if (!tensor_layout(bc, a, &t, &n, &esize, &splat, &packed)) return false;
    static const char hex[] = "0123456789ABCDEF";
    if (n == 0) {
        kiln__strbuf_puts(sb, "dense<>");
    } else if (t.dtype == KILN_BOOL) {
        kiln__strbuf_puts(sb, "dense<\"0x");
        int64_t count = splat ? 1 : n;
        for (int64_t k = 0; k < count; k++)
            kiln__strbuf_puts(sb, bool_at(bc, a, splat, packed, k) ? "01" : "00");
        kiln__strbuf_puts(sb, "\">");
    } else {
        kiln__strbuf_puts(sb, "dense<\"0x");
        const unsigned char *b = bc->data + a->blob.off;
        char pair[2];
        for (size_t i = 0; i < a->blob.len && !sb->failed; i++) {
            pair[0] = hex[b[i] >> 4];
            pair[1] = hex[b[i] & 15];
            kiln__strbuf_append(sb, pair, 2);
        }
        kiln__strbuf_puts(sb, "\">");
    }
    kiln__strbuf_puts(sb, " : ");
    return kiln__vhlo_type_text(bc, sb, a->type);
}

bool kiln__vhlo_tensor_ints(kiln__bc *bc, const kiln__vattr *a, int64_t *out, int32_t cap,
                            int32_t *count, kiln__vtype *type) {
    kiln__vtype t = {0};
    int64_t n;
    size_t esize;
    bool splat, packed;
    if (a->kind != KILN__VA_TENSOR) return kiln__bc_fail(bc, 0, "expected a tensor attribute");
    if (!tensor_layout(bc, a, &t, &n, &esize, &splat, &packed)) return false;
    if (n > cap) return kiln__bc_fail(bc, a->blob.off, "an integer list of %" PRId64 " items", n);
    const unsigned char *b = bc->data + a->blob.off;
    for (int64_t k = 0; k < n; k++) {
        if (t.dtype == KILN_BOOL) {
            out[k] = bool_at(bc, a, splat, packed, k);
            continue;
        }
        /* checked before the copy: a complex element is wider than v */
        if (!(t.dtype >= KILN_I8 && t.dtype <= KILN_U64))
            return kiln__bc_fail(bc, a->blob.off, "expected an integer tensor");
        const unsigned char *p = b + (splat ? 0 : (size_t)k * esize);
        uint64_t v = 0;
        memcpy(&v, p, esize); /* little-endian */
        bool is_signed = t.dtype >= KILN_I8 && t.dtype <= KILN_I64;
        if (is_signed && esize < 8 && (v >> (esize * 8 - 1)) & 1) v |= ~UINT64_C(0) << (esize * 8);
        out[k] = (int64_t)v;
    }
    *count = (int32_t)n;
    if (type) *type = t;
    return true;
}
