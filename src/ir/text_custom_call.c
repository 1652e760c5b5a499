/* SPDX-License-Identifier: Apache-2.0 */
/* The ops whose attributes kiln keeps as written, in text. stablehlo.custom_call, in JAX's
 * pretty form
 *   stablehlo.custom_call @target(%a, %b) {has_side_effect = true, api_version = 2 : i32}
 *       : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
 * and the generic one, "stablehlo.custom_call"(%a) <{call_target_name = "target", ...}>
 * {discardable attributes} : (...) -> ... . Every attribute is kept as written (its value's
 * text, normalized) in the op's record (ops/custom_call.h); the known ones are checked.
 * And stablehlo.composite, a call of its decomposition with a name and attributes:
 *   stablehlo.composite "my.op" %a {composite_attributes = {n = 2 : i64},
 *       decomposition = @my.op.impl, version = 1 : i32} : (tensor<f32>) -> tensor<f32>
 * whose name, composite_attributes and version go into the same kind of record. */
#include "ir/text.h"
#include "ops/custom_call.h"

#define MAX_CC_ATTRS 64

typedef struct cc_attrs {
    kiln__cc_attr a[MAX_CC_ATTRS];
    int32_t n;
    const char *op; /* "stablehlo.custom_call", for messages */
} cc_attrs;

/* One attribute value's span, up to the ',' or '}' that ends it at its own depth
 * (strings, brackets and `->` respected). */
static bool value_span(parser *p, const char *op, const char *name, size_t name_len,
                       size_t *start, size_t *end) {
    kiln__text_skip(p);
    *start = p->pos;
    int depth = 0;
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c == '/' && ch_at(p, p->pos + 1) == '/') { /* a comment inside the value */
            kiln__text_skip(p);
            continue;
        }
        const char *lit;
        size_t lit_len;
        if (c == '"') { /* commas and brackets in a string are its own */
            if (!kiln__text_string_lit(p, &lit, &lit_len)) return false;
            continue;
        }
        if (c == '-' && ch_at(p, p->pos + 1) == '>') {
            p->pos += 2;
            continue;
        }
        if (depth == 0 && (c == ',' || c == '}')) break;
        if (c == '[' || c == '{' || c == '(' || c == '<') {
            if (++depth > MAX_DEPTH)
                return kiln__text_error(p, p->pos, "attribute '%.*s' nests too deeply",
                                        (int)name_len, name);
        } else if (c == ']' || c == '}' || c == ')' || c == '>') {
            depth--;
        }
        p->pos++;
    }
    *end = p->pos;
    if (p->pos >= p->n)
        return kiln__text_error(p, *start, "attribute '%.*s' of %s is not closed",
                                (int)name_len, name, op);
    if (*end == *start)
        return kiln__text_error(p, *start, "expected a value for attribute '%.*s'", (int)name_len,
                                name);
    return true;
}

/* `name = value, name, ...` up to '}' (the '{' taken), appended to out. */
static bool attr_entries(parser *p, cc_attrs *out) {
    if (kiln__text_accept(p, '}')) return true;
    do {
        size_t at;
        const char *name;
        size_t len;
        if (!kiln__text_attr_name(p, &name, &len, &at)) return false;
        if (p->s[at] == '"') { /* a quoted name: kept decoded, printed as MLIR would */
            if (!(name = kiln__text_unescape(p, name, len))) return kiln__text_oom(p);
            len = strlen(name);
        }
        for (int32_t i = 0; i < out->n; i++)
            if (out->a[i].name_len == len && !memcmp(out->a[i].name, name, len))
                return kiln__text_error(p, at, "attribute '%.*s' given twice", (int)len, name);
        if (out->n >= MAX_CC_ATTRS)
            return kiln__text_error(p, at, "%s with more than %d attributes", out->op,
                                    MAX_CC_ATTRS);
        kiln__cc_attr *a = &out->a[out->n++];
        *a = (kiln__cc_attr){.name = name, .name_len = len, .value = "", .pos = at};
        if (!kiln__text_accept(p, '=')) continue; /* a unit attribute */
        size_t start = 0, end = 0;
        if (!value_span(p, out->op, name, len, &start, &end)) return false;
        char *norm = kiln__text_aalloc(p, 3 * (end - start) + 1);
        if (!norm) return false;
        a->value = norm;
        a->value_len = kiln__custom_call_normalize(p->s + start, end - start, norm);
        a->pos = start;
        const char *expected = kiln__custom_call_check_attr(a);
        if (expected)
            return kiln__text_error(p, start, "%s: %.*s must be %s, found '%.*s'", out->op,
                                    (int)len, name, expected,
                                    (int)(a->value_len > 60 ? 60 : a->value_len), a->value);
    } while (kiln__text_accept(p, ','));
    return kiln__text_expect(p, '}', "to close the attributes");
}

/* The record of a call of `target` with these attributes and the signature's results, kept
 * by the module. */
static bool keep_record(parser *p, const char *target, size_t target_len, const cc_attrs *attrs,
                        const sig *s, const kiln_tensor **record) {
    kiln_tensor *r =
        kiln__custom_call_record(p->cx, target, target_len, attrs->a, attrs->n, s->out, s->n_out);
    if (!r) return kiln__text_oom(p);
    bool kept = kiln__module_keep_constant(p->m, r) == KILN_OK;
    kiln_tensor_release(r);
    if (!kept) return kiln__text_oom(p);
    *record = r;
    return true;
}

bool kiln__text_custom_call(parser *p, size_t op_pos, bool generic, const char *target,
                            size_t target_len, kiln__value **operands, int32_t *n_operands, sig *s,
                            const kiln_tensor **record) {
    cc_attrs *attrs = kiln__text_aalloc(p, sizeof *attrs);
    if (!attrs) return false;
    attrs->n = 0;
    attrs->op = "stablehlo.custom_call";
    if (!kiln__text_expect(p, '(', "to open the operands of stablehlo.custom_call") ||
        !kiln__text_operands(p, operands, n_operands, MAX_VALUES) ||
        !kiln__text_expect(p, ')', "to close the operands of stablehlo.custom_call"))
        return false;
    kiln__text_skip(p);
    if (generic && ch(p) == '<' && ch_at(p, p->pos + 1) == '{') {
        p->pos += 2;
        if (!attr_entries(p, attrs) || !kiln__text_expect(p, '>', "to close the properties"))
            return false;
    }
    if (kiln__text_accept(p, '{') && !attr_entries(p, attrs)) return false;
    /* The target: the pretty form's @name, or the generic form's call_target_name. */
    int32_t named = -1;
    for (int32_t i = 0; i < attrs->n; i++)
        if (span_is(attrs->a[i].name, attrs->a[i].name_len, "call_target_name")) named = i;
    const char *decoded = NULL;
    size_t decoded_len = 0;
    if (named >= 0 && !generic)
        return kiln__text_error(p, attrs->a[named].pos,
                                "stablehlo.custom_call: the target is given twice (@%.*s and "
                                "call_target_name)",
                                (int)(target_len > 60 ? 60 : target_len), target);
    if (named >= 0) {
        const kiln__cc_attr *t = &attrs->a[named];
        decoded = kiln__text_unescape(p, t->value + 1, t->value_len - 2); /* checked: a string */
        /* kept as the target, not as an entry; the others in their written order */
        for (int32_t i = named; i < attrs->n - 1; i++)
            attrs->a[i] = attrs->a[i + 1];
        attrs->n--;
    } else if (generic) {
        return kiln__text_error(p, op_pos,
                                "stablehlo.custom_call needs a target: call_target_name = "
                                "\"name\"");
    } else {
        decoded = kiln__text_unescape(p, target, target_len);
    }
    if (!decoded) return kiln__text_oom(p);
    decoded_len = strlen(decoded);
    if (!kiln__text_expect(p, ':', "before the type of stablehlo.custom_call") ||
        !kiln__text_functional_type(p, s))
        return false;
    if (!s->functional)
        return kiln__text_error(p, s->pos,
                                "stablehlo.custom_call needs a function type (operands) -> "
                                "results");
    return keep_record(p, decoded, decoded_len, attrs, s, record);
}

/* The index of attribute `name` in attrs, or -1. */
static int32_t find_attr(const cc_attrs *attrs, const char *name) {
    for (int32_t i = 0; i < attrs->n; i++)
        if (span_is(attrs->a[i].name, attrs->a[i].name_len, name)) return i;
    return -1;
}

static void drop_attr(cc_attrs *attrs, int32_t i) {
    for (; i < attrs->n - 1; i++)
        attrs->a[i] = attrs->a[i + 1];
    attrs->n--;
}

/* A string attribute's decoded value (checked to be a string), or NULL. */
static const char *string_value(parser *p, const cc_attrs *attrs, int32_t i, const char *what) {
    const kiln__cc_attr *a = &attrs->a[i];
    if (a->value_len < 2 || a->value[0] != '"' || a->value[a->value_len - 1] != '"') {
        kiln__text_error(p, a->pos, "stablehlo.composite: %s must be a string", what);
        return NULL;
    }
    const char *d = kiln__text_unescape(p, a->value + 1, a->value_len - 2);
    if (!d) kiln__text_oom(p);
    return d;
}

bool kiln__text_composite(parser *p, size_t op_pos, bool generic, kiln__value **operands,
                          int32_t *n_operands, sig *s, const kiln_tensor **record,
                          const char **callee, size_t *callee_len, size_t *callee_pos) {
    cc_attrs *attrs = kiln__text_aalloc(p, sizeof *attrs);
    if (!attrs) return false;
    attrs->n = 0;
    attrs->op = "stablehlo.composite";
    const char *name = NULL;
    size_t name_len = 0;
    if (generic) {
        if (!kiln__text_expect(p, '(', "to open the operands of stablehlo.composite") ||
            !kiln__text_operands(p, operands, n_operands, MAX_VALUES) ||
            !kiln__text_expect(p, ')', "to close the operands of stablehlo.composite"))
            return false;
        kiln__text_skip(p);
        if (ch(p) == '<' && ch_at(p, p->pos + 1) == '{') {
            p->pos += 2;
            if (!attr_entries(p, attrs) || !kiln__text_expect(p, '>', "to close the properties"))
                return false;
        }
    } else {
        kiln__text_skip(p);
        if (ch(p) != '"')
            return kiln__text_error(p, p->pos,
                                    "expected the composite's name (a string) after "
                                    "stablehlo.composite");
        if (!kiln__text_string_lit(p, &name, &name_len) ||
            !(name = kiln__text_unescape(p, name, name_len)) ||
            !kiln__text_operands(p, operands, n_operands, MAX_VALUES))
            return false;
    }
    if (kiln__text_accept(p, '{') && !attr_entries(p, attrs)) return false;
    int32_t n = find_attr(attrs, "name");
    if (n >= 0 && !generic)
        return kiln__text_error(p, attrs->a[n].pos, "stablehlo.composite: the name is given twice");
    if (n >= 0) {
        if (!(name = string_value(p, attrs, n, "name"))) return false;
        drop_attr(attrs, n);
    } else if (generic) {
        return kiln__text_error(p, op_pos, "stablehlo.composite needs a name = \"...\"");
    }
    int32_t d = find_attr(attrs, "decomposition");
    if (d < 0)
        return kiln__text_error(p, op_pos,
                                "stablehlo.composite needs a decomposition = @function");
    const kiln__cc_attr *da = &attrs->a[d];
    if (da->value_len < 2 || da->value[0] != '@')
        return kiln__text_error(p, da->pos, "stablehlo.composite: decomposition must be a symbol "
                                            "(@function)");
    *callee_pos = da->pos;
    if (da->value[1] == '"') {
        if (da->value_len < 3 || da->value[da->value_len - 1] != '"' ||
            !(*callee = kiln__text_unescape(p, da->value + 2, da->value_len - 3)))
            return kiln__text_error(p, da->pos, "stablehlo.composite: a bad decomposition name");
        *callee_len = strlen(*callee);
    } else {
        *callee = da->value + 1;
        *callee_len = da->value_len - 1;
    }
    drop_attr(attrs, d);
    if (!kiln__text_expect(p, ':', "before the type of stablehlo.composite") ||
        !kiln__text_functional_type(p, s))
        return false;
    if (!s->functional)
        return kiln__text_error(p, s->pos,
                                "stablehlo.composite needs a function type (operands) -> results");
    return keep_record(p, name, strlen(name), attrs, s, record);
}
