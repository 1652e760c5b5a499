/* SPDX-License-Identifier: Apache-2.0 */
/* StableHLO text for modules, as JAX's lower(...).as_text() and stablehlo-opt print it:
 * pretty forms where the dialect has one, the generic form otherwise, value names as MLIR
 * gives them (%arg0, %0, %5:2 and %5#1, %cst, %c_3, %iterArg, %output_state).
 *
 * A CALL op's region becomes a private function @callee_N after the others, called with
 * func.call; values the region uses from outside it are passed as extra arguments. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "base/strbuf.h"
#include "ir/ir.h"
#include "ir/print.h"
#include "ops/custom_call.h"
#include "ops/op_syntax.h"

/* Room for a callee's printed name (longer names are cut). */
#define KILN__CALLEE_NAME_MAX 160

/* ---- value names ----------------------------------------------------------------------- */

/* Names that ops ask for (MLIR's getAsmResultNames and getAsmBlockArgumentNames). */
typedef enum hint {
    HINT_CST,
    HINT_C,
    HINT_ITER_ARG,
    HINT_OUTPUT_STATE,
    HINT_OUTPUT,
    HINT_COUNT
} hint;
static const char *const hint_text[HINT_COUNT] = {"cst", "c", "iterArg", "output_state", "output"};

typedef enum name_kind { NAME_ARG, NAME_NUMBER, NAME_HINT } name_kind;

typedef struct name {
    const kiln__value *value; /* NULL: an empty slot */
    int64_t number;           /* %argN, %N, or a hint's suffix (-1: none) */
    int32_t result;           /* the result's index in a multi-result op (%N#i), else -1 */
    uint8_t kind, hint;
} name;

/* MLIR's SSA naming state (SSANameState): a region starts from the counters its parent
 * region ended with and sees its parent's names; sibling regions do not see each other.
 * Every suffix comes from next_conflict, which only grows along a chain of regions, so a
 * suffixed name is always new and only the bare names need remembering. */
typedef struct naming {
    int64_t next_value, next_arg, next_conflict;
    bool used[HINT_COUNT];
} naming;

typedef struct values {
    const kiln__value **items;
    int32_t count, cap;
} values;

typedef struct printer {
    kiln_ctx *cx;
    const kiln_module *m;
    kiln__strbuf sb;
    name *slots; /* value -> name, open addressing; cap a power of two */
    size_t cap, count;
    const kiln__ir_op **calls; /* CALL ops; calls[i]'s region is @callee_i */
    int32_t n_calls, cap_calls;
    bool failed; /* an error is recorded */
} printer;

static void fail_internal(printer *p, const char *what) {
    if (!p->failed)
        kiln_ctx_set_error(p->cx, KILN_INTERNAL, "kiln_module_to_string: internal: %s", what);
    p->failed = true;
}

static size_t slot_of(const void *key, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)key;
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

static bool names_grow(printer *p) {
    size_t cap = p->cap ? p->cap * 2 : 256;
    name *slots = kiln__calloc(p->cx, cap * sizeof *slots, _Alignof(name), "printer names");
    if (!slots) {
        p->failed = true;
        return false;
    }
    for (size_t i = 0; i < p->cap; i++) {
        if (!p->slots[i].value) continue;
        size_t j = slot_of(p->slots[i].value, cap);
        while (slots[j].value)
            j = (j + 1) & (cap - 1);
        slots[j] = p->slots[i];
    }
    kiln__free(p->cx, p->slots, p->cap * sizeof *p->slots);
    p->slots = slots;
    p->cap = cap;
    return true;
}

static void names_clear(printer *p) {
    if (p->slots) memset(p->slots, 0, p->cap * sizeof *p->slots);
    p->count = 0;
}

static void set_name(printer *p, const kiln__value *v, name n) {
    if (p->failed) return;
    if ((p->count + 1) * 2 > p->cap && !names_grow(p)) return;
    n.value = v;
    size_t j = slot_of(v, p->cap);
    while (p->slots[j].value && p->slots[j].value != v)
        j = (j + 1) & (p->cap - 1);
    if (!p->slots[j].value) p->count++;
    p->slots[j] = n;
}

static const name *get_name(const printer *p, const kiln__value *v) {
    if (!p->cap) return NULL;
    size_t j = slot_of(v, p->cap);
    while (p->slots[j].value) {
        if (p->slots[j].value == v) return &p->slots[j];
        j = (j + 1) & (p->cap - 1);
    }
    return NULL;
}

static void name_arg(printer *p, const kiln__value *v, naming *st) {
    set_name(p, v, (name){.kind = NAME_ARG, .number = st->next_arg++, .result = -1});
}

static void name_hint(printer *p, const kiln__value *v, hint h, naming *st) {
    int64_t suffix = -1;
    if (st->used[h])
        suffix = st->next_conflict++;
    else
        st->used[h] = true;
    set_name(p, v, (name){.kind = NAME_HINT, .hint = (uint8_t)h, .number = suffix, .result = -1});
}

static void name_results(printer *p, const kiln__ir_op *op, naming *st) {
    if (op->n_results == 0) return;
    if (op->kind == KILN_OP_CONSTANT) {
        kiln_dtype dt = op->results[0]->type->dtype; /* %c for integers, %cst otherwise */
        bool fp = kiln_dtype_is_float(dt) || kiln_dtype_is_complex(dt);
        name_hint(p, op->results[0], fp ? HINT_CST : HINT_C, st);
    } else if (op->kind == KILN_OP_RNG_BIT_GENERATOR && op->n_results == 2) {
        name_hint(p, op->results[0], HINT_OUTPUT_STATE, st);
        name_hint(p, op->results[1], HINT_OUTPUT, st);
    } else {
        int64_t id = st->next_value++;
        for (int32_t i = 0; i < op->n_results; i++)
            set_name(
                p, op->results[i],
                (name){.kind = NAME_NUMBER, .number = id, .result = op->n_results > 1 ? i : -1});
    }
}

/* Names a block (its arguments, then `extra` arguments, then its ops' results), then the
 * regions of its ops, each from the state the block ends with. A CALL's region is a
 * function of its own, named when that function is printed. */
static void number_block(printer *p, const kiln__block *b, naming st, bool iter_args,
                         const values *extra) {
    for (int32_t i = 0; i < b->n_args; i++) {
        if (iter_args)
            name_hint(p, b->args[i], HINT_ITER_ARG, &st);
        else
            name_arg(p, b->args[i], &st);
    }
    for (int32_t i = 0; extra && i < extra->count; i++)
        name_arg(p, extra->items[i], &st);
    for (const kiln__ir_op *op = b->first; op; op = op->next)
        name_results(p, op, &st);
    for (const kiln__ir_op *op = b->first; op && !p->failed; op = op->next) {
        if (op->kind == KILN_OP_CALL) continue;
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r])
                number_block(p, op->regions[r], st, op->kind == KILN_OP_WHILE, NULL);
    }
}

/* ---- calls: their regions become private functions ------------------------------------- */

static bool values_add(printer *p, values *vs, const kiln__value *v) {
    for (int32_t i = 0; i < vs->count; i++)
        if (vs->items[i] == v) return true;
    if (vs->count == vs->cap) {
        int32_t cap = vs->cap ? vs->cap * 2 : 8;
        const kiln__value **items =
            kiln__alloc(p->cx, (size_t)cap * sizeof *items, _Alignof(void *), "printer values");
        if (!items) {
            p->failed = true;
            return false;
        }
        if (vs->count) memcpy(items, vs->items, (size_t)vs->count * sizeof *items);
        kiln__free(p->cx, (void *)vs->items, (size_t)vs->cap * sizeof *items);
        vs->items = items;
        vs->cap = cap;
    }
    vs->items[vs->count++] = v;
    return true;
}

static void values_free(printer *p, values *vs) {
    if (vs->items) kiln__free(p->cx, (void *)vs->items, (size_t)vs->cap * sizeof *vs->items);
    *vs = (values){0};
}

static void captures_in(printer *p, const kiln__block *root, const kiln__block *b, values *out) {
    for (const kiln__ir_op *op = b->first; op && !p->failed; op = op->next) {
        for (int32_t i = 0; i < op->n_operands; i++)
            if (!kiln__value_defined_in(op->operands[i], root)) values_add(p, out, op->operands[i]);
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) captures_in(p, root, op->regions[r], out);
    }
    for (int32_t i = 0; i < b->n_results; i++)
        if (!kiln__value_defined_in(b->results[i], root)) values_add(p, out, b->results[i]);
}

/* The values a callee uses from outside its region, in order of first use. */
static void captures_of(printer *p, const kiln__ir_op *call, values *out) {
    *out = (values){0};
    if (call->n_regions > 0 && call->regions[0])
        captures_in(p, call->regions[0], call->regions[0], out);
}

static void collect_calls(printer *p, const kiln__block *b) {
    for (const kiln__ir_op *op = b->first; op && !p->failed; op = op->next) {
        if (op->kind == KILN_OP_CALL) {
            if (p->n_calls == p->cap_calls) {
                int32_t cap = p->cap_calls ? p->cap_calls * 2 : 8;
                const kiln__ir_op **calls = kiln__alloc(p->cx, (size_t)cap * sizeof *calls,
                                                        _Alignof(void *), "printer calls");
                if (!calls) {
                    p->failed = true;
                    return;
                }
                if (p->n_calls) memcpy(calls, p->calls, (size_t)p->n_calls * sizeof *calls);
                kiln__free(p->cx, (void *)p->calls, (size_t)p->cap_calls * sizeof *calls);
                p->calls = calls;
                p->cap_calls = cap;
            }
            p->calls[p->n_calls++] = op;
        }
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) collect_calls(p, op->regions[r]);
    }
}

static int32_t callee_index(const printer *p, const kiln__ir_op *call) {
    for (int32_t i = 0; i < p->n_calls; i++)
        if (p->calls[i] == call) return i;
    return -1;
}

/* The printed name of call i's callee: the function it was parsed from (@relu), made
 * unique with a suffix when another call's callee or a function of the module has it
 * (@relu_1); @callee_<i> when it has no name. */
static void callee_name(const printer *p, int32_t i, char *buf, size_t size) {
    const char *base = i >= 0 && p->calls[i]->n_regions > 0 && p->calls[i]->regions[0]
                           ? p->calls[i]->regions[0]->name
                           : NULL;
    if (!base) {
        snprintf(buf, size, "callee_%d", (int)i);
        return;
    }
    int32_t earlier = 0;
    for (int32_t j = 0; j < i; j++) {
        const kiln__block *r = p->calls[j]->n_regions > 0 ? p->calls[j]->regions[0] : NULL;
        earlier += r && r->name && strcmp(r->name, base) == 0;
    }
    for (int32_t f = 0; f < p->m->n_funcs; f++)
        if (p->m->funcs[f]->name && strcmp(p->m->funcs[f]->name, base) == 0) earlier++;
    if (earlier == 0)
        snprintf(buf, size, "%s", base);
    else
        snprintf(buf, size, "%s_%d", base, (int)earlier);
}

/* ---- text pieces ----------------------------------------------------------------------- */

static void put(printer *p, const char *text) { kiln__strbuf_puts(&p->sb, text); }

static void indent(printer *p, int n) { kiln__strbuf_repeat(&p->sb, ' ', (size_t)n); }

static void put_value(printer *p, const kiln__value *v) {
    const name *n = get_name(p, v);
    if (!n) {
        fail_internal(p, "a value is used outside its scope");
        return;
    }
    switch (n->kind) {
    case NAME_ARG: kiln__strbuf_printf(&p->sb, "%%arg%" PRId64, n->number); break;
    case NAME_NUMBER:
        if (n->result >= 0)
            kiln__strbuf_printf(&p->sb, "%%%" PRId64 "#%d", n->number, (int)n->result);
        else
            kiln__strbuf_printf(&p->sb, "%%%" PRId64, n->number);
        break;
    default:
        kiln__strbuf_printf(&p->sb, "%%%s", hint_text[n->hint]);
        if (n->number >= 0) kiln__strbuf_printf(&p->sb, "_%" PRId64, n->number);
        break;
    }
}

static void put_values(printer *p, kiln__value *const *vs, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        if (i) put(p, ", ");
        put_value(p, vs[i]);
    }
}

static void put_type(printer *p, const kiln__type *t) {
    if (kiln__is_token(t)) {
        put(p, "!stablehlo.token");
        return;
    }
    if (kiln__is_tuple(t)) {
        put(p, "tuple<");
        for (int32_t i = 0; t->tuple && i < t->tuple->n; i++) {
            if (i) put(p, ", ");
            put_type(p, &t->tuple->elems[i]);
        }
        put(p, ">");
        return;
    }
    put(p, "tensor<");
    for (int32_t d = 0; d < t->shape.rank; d++)
        kiln__strbuf_printf(&p->sb, "%" PRId64 "x", t->shape.dims[d]);
    kiln__strbuf_printf(&p->sb, "%s>", kiln_dtype_name(t->dtype));
}

static void put_types(printer *p, kiln__value *const *vs, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        if (i) put(p, ", ");
        put_type(p, vs[i]->type);
    }
}

/* "(operand types) -> result type" or "-> (result types)". */
static void put_functional(printer *p, kiln__value *const *in, int32_t n_in,
                           kiln__value *const *extra, int32_t n_extra, kiln__value *const *out,
                           int32_t n_out) {
    put(p, "(");
    put_types(p, in, n_in);
    if (n_in && n_extra) put(p, ", ");
    put_types(p, extra, n_extra);
    put(p, ") -> ");
    if (n_out == 1) {
        put_type(p, out[0]->type);
    } else {
        put(p, "(");
        put_types(p, out, n_out);
        put(p, ")");
    }
}

static void put_op_functional(printer *p, const kiln__ir_op *op) {
    put_functional(p, op->operands, op->n_operands, NULL, 0, op->results, op->n_results);
}

/* StableHLO's SameOperandsAndResultType form: one type when all agree. */
static void put_same_or_functional(printer *p, const kiln__ir_op *op) {
    const kiln__type *first = op->n_results ? op->results[0]->type : NULL;
    bool same = first != NULL;
    for (int32_t i = 0; i < op->n_operands && same; i++)
        same = kiln__type_equal(op->operands[i]->type, first);
    for (int32_t i = 1; i < op->n_results && same; i++)
        same = kiln__type_equal(op->results[i]->type, first);
    if (same)
        put_type(p, first);
    else
        put_op_functional(p, op);
}

/* stablehlo.complex's type: the result's alone when every operand has its parts' type. */
static void put_parts_or_functional(printer *p, const kiln__ir_op *op) {
    bool parts = op->n_results == 1;
    kiln__type want = parts ? *op->results[0]->type : (kiln__type){0};
    want.dtype = kiln_dtype_component(want.dtype);
    for (int32_t i = 0; i < op->n_operands && parts; i++)
        parts = kiln__type_equal(op->operands[i]->type, &want);
    if (parts)
        put_type(p, op->results[0]->type);
    else
        put_op_functional(p, op);
}

/* [1, 2] */
static void put_list(printer *p, const int64_t *v, int32_t n) {
    put(p, "[");
    for (int32_t i = 0; i < n; i++)
        kiln__strbuf_printf(&p->sb, i ? ", %" PRId64 : "%" PRId64, v[i]);
    put(p, "]");
}

static void put_dims(printer *p, const kiln_dims *d) { put_list(p, d->v, d->count); }

/* array<i64: 1, 2> */
static void put_array(printer *p, const kiln_dims *d) {
    put(p, "array<i64");
    for (int32_t i = 0; i < d->count; i++)
        kiln__strbuf_printf(&p->sb, i ? ", %" PRId64 : ": %" PRId64, d->v[i]);
    put(p, ">");
}

/* dense<[[lo, hi], ...]> : tensor<Nx2xi64> */
static void put_padding(printer *p, const kiln_dims *low, const kiln_dims *high) {
    int64_t pairs[2 * KILN_MAX_RANK];
    int32_t n = low->count < high->count ? low->count : high->count;
    for (int32_t i = 0; i < n; i++) {
        pairs[2 * i] = low->v[i];
        pairs[2 * i + 1] = high->v[i];
    }
    kiln_shape shape = {.rank = 2, .dims = {n, 2}};
    kiln__print_dense(&p->sb, KILN_I64, &shape, pairs);
    kiln__strbuf_printf(&p->sb, " : tensor<%dx2xi64>", (int)n);
}

static bool bare_identifier(const char *s) {
    if (!s || !*s) return false;
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
    for (const char *c = s + 1; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '$' || *c == '.'))
            return false;
    return true;
}

/* "text" with MLIR's escapes: \\, \", and \XX for anything not printable ASCII. */
static void put_string(printer *p, const char *s) {
    static const char hex[] = "0123456789ABCDEF";
    put(p, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '\\' || *c == '"') {
            char e[2] = {'\\', (char)*c};
            kiln__strbuf_append(&p->sb, e, 2);
        } else if (*c >= 0x20 && *c < 0x7F) {
            kiln__strbuf_append(&p->sb, (const char *)c, 1);
        } else {
            char e[3] = {'\\', hex[*c >> 4], hex[*c & 15]};
            kiln__strbuf_append(&p->sb, e, 3);
        }
    }
    put(p, "\"");
}

static void put_symbol(printer *p, const char *s) {
    put(p, "@");
    if (bare_identifier(s))
        put(p, s);
    else
        put_string(p, s ? s : "");
}

/* ---- ops ------------------------------------------------------------------------------- */

static void print_block_body(printer *p, const kiln__block *b, int ind, bool function);

/* { ops } with the block's arguments as ^bb0(...) when it has some. */
static void print_region(printer *p, const kiln__block *b, int ind, bool header) {
    put(p, "{\n");
    if (b) {
        if (header && b->n_args) {
            indent(p, ind);
            put(p, "^bb0(");
            for (int32_t i = 0; i < b->n_args; i++) {
                if (i) put(p, ", ");
                put_value(p, b->args[i]);
                put(p, ": ");
                put_type(p, b->args[i]->type);
            }
            put(p, "):\n");
        }
        print_block_body(p, b, ind + 2, false);
    }
    indent(p, ind);
    put(p, "}");
}

/* ({ region }, { region }) */
static void print_regions(printer *p, const kiln__ir_op *op, int ind) {
    put(p, " (");
    for (int32_t r = 0; r < op->n_regions; r++) {
        if (r) put(p, ", ");
        print_region(p, op->regions[r], ind, true);
    }
    put(p, ")");
}

/* ---- forms from the op schema (ops/op_syntax.h) ---------------------------------------- */

static void put_type_form(printer *p, const kiln__ir_op *op, kiln__type_form form) {
    switch (form) {
    case KILN__TYPE_SAME: put_same_or_functional(p, op); return;
    case KILN__TYPE_PARTS: put_parts_or_functional(p, op); return;
    case KILN__TYPE_RESULT:
    case KILN__TYPE_TUPLE:
        if (op->n_results == 1)
            put_type(p, op->results[0]->type);
        else
            fail_internal(p, "a result-typed form with other than one result");
        return;
    default: put_op_functional(p, op); return;
    }
}

static const char *enum_text(printer *p, const kiln__attr_desc *d, const kiln__attrs *a) {
    int v = *(const int *)kiln__attr_at_const(a, d->offset);
    if (v < 0 || v >= d->n_enum) {
        fail_internal(p, "an enum attribute out of its range");
        return "?";
    }
    return d->enum_names[v];
}

static const kiln_dims *dims_at(const kiln__attrs *a, uint16_t offset) {
    return kiln__attr_at_const(a, offset);
}

static int64_t i64_at(const kiln__attrs *a, uint16_t offset) {
    return *(const int64_t *)kiln__attr_at_const(a, offset);
}

static void put_conv_layouts(printer *p, const kiln_conv_params *c);

/* dense<[[0, 1], [2, -1]]> : tensor<2x2xi64> */
static void put_groups(printer *p, const kiln__groups *g) {
    if (g->rows * g->cols == 0) {
        kiln__strbuf_printf(&p->sb, "dense<> : tensor<%dx%dxi64>", (int)g->rows, (int)g->cols);
        return;
    }
    put(p, "dense<[");
    for (int32_t r = 0; r < g->rows; r++) {
        put(p, r ? ", [" : "[");
        for (int32_t c = 0; c < g->cols; c++)
            kiln__strbuf_printf(&p->sb, "%s%d", c ? ", " : "", (int)g->ids[r * g->cols + c]);
        put(p, "]");
    }
    kiln__strbuf_printf(&p->sb, "]> : tensor<%dx%dxi64>", (int)g->rows, (int)g->cols);
}

/* Whether the generic form leaves an attribute out: a unit attribute that is not set, a
 * channel handle of zeros (what StableHLO means when there is none). */
static bool attr_left_out(const kiln__attr_desc *d, const kiln__attrs *a) {
    if (d->kind == KILN__AK_NO_TRUE) return true;
    /* an optional list that is empty when left out (dynamic_broadcast_in_dim's known_...) */
    if (d->kind == KILN__AK_DIMS && !d->required && d->count == KILN__AC_NONE)
        return dims_at(a, d->offset)->count == 0;
    if (d->kind == KILN__AK_UNIT) return !*(const bool *)kiln__attr_at_const(a, d->offset);
    if (d->kind == KILN__AK_CHANNEL) {
        const int64_t *ht = kiln__attr_at_const(a, d->offset);
        return ht[0] == 0 && ht[1] == 0;
    }
    return false;
}

/* An attribute's value as the generic form writes it. */
static void put_attr_generic(printer *p, const kiln__attr_desc *d, const kiln__attrs *a) {
    switch (d->kind) {
    case KILN__AK_I64:
        kiln__strbuf_printf(&p->sb, "%" PRId64 " : %s", i64_at(a, d->offset),
                            d->int_type ? d->int_type : "i64");
        return;
    case KILN__AK_BOOL:
        put(p, *(const bool *)kiln__attr_at_const(a, d->offset) ? "true" : "false");
        return;
    case KILN__AK_DIMS: put_array(p, dims_at(a, d->offset)); return;
    case KILN__AK_PADDING: put_padding(p, dims_at(a, d->offset), dims_at(a, d->offset2)); return;
    case KILN__AK_ENUM:
        kiln__strbuf_printf(&p->sb, "#stablehlo<%s %s>", d->mnemonic, enum_text(p, d, a));
        return;
    case KILN__AK_STRUCT: {
        /* StableHLO's printStruct: empty lists and zero integers are left out */
        kiln__strbuf_printf(&p->sb, "#stablehlo.%s<", d->mnemonic);
        bool first = true;
        for (int32_t i = 0; i < d->n_fields; i++) {
            const kiln__attr_field *f = &d->fields[i];
            if (f->kind == KILN__AK_DIMS ? dims_at(a, f->offset)->count == 0
                                         : i64_at(a, f->offset) == 0)
                continue;
            kiln__strbuf_printf(&p->sb, "%s%s = ", first ? "" : ", ", f->name);
            if (f->kind == KILN__AK_DIMS)
                put_dims(p, dims_at(a, f->offset));
            else
                kiln__strbuf_printf(&p->sb, "%" PRId64, i64_at(a, f->offset));
            first = false;
        }
        put(p, ">");
        return;
    }
    case KILN__AK_CONV:
        put(p, "#stablehlo.conv<");
        put_conv_layouts(p, kiln__attr_at_const(a, d->offset));
        put(p, ">");
        return;
    case KILN__AK_GROUPS: put_groups(p, kiln__attr_at_const(a, d->offset)); return;
    case KILN__AK_CHANNEL: {
        const int64_t *ht = kiln__attr_at_const(a, d->offset);
        kiln__strbuf_printf(&p->sb,
                            "#stablehlo.channel_handle<handle = %" PRId64 ", type = %" PRId64 ">",
                            ht[0], ht[1]);
        return;
    }
    default: fail_internal(p, "an attribute kind without a generic form"); return;
    }
}

/* "stablehlo.op"(operands) <{attributes}> (regions) : (types) -> types */
static void print_generic(printer *p, const kiln__ir_op *op, int ind) {
    const kiln__op_syntax *syn = kiln__op_syntax_get(op->kind);
    kiln__strbuf_printf(&p->sb, "\"stablehlo.%s\"(", kiln__op_get_info(op->kind)->name);
    put_values(p, op->operands, op->n_operands);
    put(p, ")");
    int32_t written = 0;
    for (int32_t i = 0; i < syn->n_attrs; i++) {
        const kiln__attr_desc *d = &syn->attrs[i];
        if (attr_left_out(d, op->attrs)) continue;
        kiln__strbuf_printf(&p->sb, "%s%s", written++ ? ", " : " <{", d->name);
        if (d->kind == KILN__AK_UNIT) continue;
        put(p, " = ");
        put_attr_generic(p, d, op->attrs);
    }
    if (written) put(p, "}>");
    if (op->n_regions) print_regions(p, op, ind);
    put(p, " : ");
    put_op_functional(p, op);
}

/* An attribute's value in a pretty form: [1, 2], 3, or " NAME" for an enum (MLIR writes a
 * space before most enums' keyword; "NAME" for a tight one). */
static void put_attr_pretty(printer *p, const kiln__attr_desc *d, const kiln__attrs *a) {
    switch (d->kind) {
    case KILN__AK_I64: kiln__strbuf_printf(&p->sb, "%" PRId64, i64_at(a, d->offset)); return;
    case KILN__AK_DIMS: put_dims(p, dims_at(a, d->offset)); return;
    case KILN__AK_BOOL:
        put(p, *(const bool *)kiln__attr_at_const(a, d->offset) ? "true" : "false");
        return;
    case KILN__AK_ENUM:
        kiln__strbuf_printf(&p->sb, d->tight ? "%s" : " %s", enum_text(p, d, a));
        return;
    default: fail_internal(p, "an attribute kind without a pretty form"); return;
    }
}

/* stablehlo.op [enum, ]operands[, keyword = value ...] : type */
static void print_inline(printer *p, const kiln__ir_op *op) {
    const kiln__op_syntax *syn = kiln__op_syntax_get(op->kind);
    kiln__strbuf_printf(&p->sb, "stablehlo.%s ", kiln__op_get_info(op->kind)->name);
    bool any = false;
    for (int32_t i = 0; i < syn->n_attrs; i++) {
        const kiln__attr_desc *d = kiln__op_pretty_attr(syn, i);
        if (!d->in_pretty || !d->before_operands) continue;
        if (any) put(p, ", ");
        put_attr_pretty(p, d, op->attrs);
        any = true;
    }
    if (op->n_operands) {
        if (any) put(p, ", ");
        put_values(p, op->operands, op->n_operands);
        any = true;
    }
    for (int32_t i = 0; i < syn->n_attrs; i++) {
        const kiln__attr_desc *d = kiln__op_pretty_attr(syn, i);
        if (!d->in_pretty || d->before_operands) continue;
        /* an optional flag at its default (false) is left out, as MLIR does */
        if (d->pretty_optional && d->kind == KILN__AK_BOOL &&
            !*(const bool *)kiln__attr_at_const(op->attrs, d->offset))
            continue;
        if (any) put(p, ", ");
        if (d->pretty) kiln__strbuf_printf(&p->sb, "%s = ", d->pretty);
        put_attr_pretty(p, d, op->attrs);
        any = true;
    }
    /* the attributes the pretty form does not name: in a dictionary after it */
    bool dict = false;
    for (int32_t i = 0; i < syn->n_attrs; i++) {
        const kiln__attr_desc *d = &syn->attrs[i];
        if (d->in_pretty || attr_left_out(d, op->attrs)) continue;
        kiln__strbuf_printf(&p->sb, "%s%s = ", dict ? ", " : " {", d->name);
        put_attr_generic(p, d, op->attrs);
        dict = true;
    }
    if (dict) put(p, "}");
    put(p, any ? " : " : ": "); /* stablehlo.replica_id : tensor<ui32> */
    put_type_form(p, op, syn->type);
}

/* stablehlo.op operands : type */
static void print_plain(printer *p, const kiln__ir_op *op) {
    kiln__strbuf_printf(&p->sb, "stablehlo.%s ", kiln__op_get_info(op->kind)->name);
    put_values(p, op->operands, op->n_operands);
    put(p, " : ");
    put_type_form(p, op, kiln__op_syntax_get(op->kind)->type);
}

/* The reduce's region is one commutative binary op on its two arguments, returned:
 * stablehlo prints it as `applies stablehlo.add`. */
static bool reduce_is_compact(const kiln__ir_op *op) {
    const kiln__block *b = op->n_regions == 1 ? op->regions[0] : NULL;
    if (!b || !b->first || b->first != b->last || b->n_args != 2 || b->n_results != 1) return false;
    const kiln__ir_op *inner = b->first;
    switch (inner->kind) {
    case KILN_OP_ADD:
    case KILN_OP_MULTIPLY:
    case KILN_OP_MAXIMUM:
    case KILN_OP_MINIMUM:
    case KILN_OP_AND:
    case KILN_OP_OR:
    case KILN_OP_XOR: break;
    default: return false;
    }
    if (inner->n_operands != 2 || inner->n_results != 1 || inner->n_regions != 0) return false;
    if (inner->operands[0] != b->args[0] || inner->operands[1] != b->args[1]) return false;
    if (b->results[0] != inner->results[0]) return false;
    const kiln__type *t = inner->results[0]->type;
    if (!kiln__type_equal(inner->operands[0]->type, t) ||
        !kiln__type_equal(inner->operands[1]->type, t))
        return false;
    return op->n_operands >= 1 && t->shape.rank == 0 && t->dtype == op->operands[0]->type->dtype;
}

static void print_reduce(printer *p, const kiln__ir_op *op, int ind) {
    if (!reduce_is_compact(op)) {
        print_generic(p, op, ind);
        return;
    }
    int32_t k = op->n_operands / 2;
    put(p, "stablehlo.reduce");
    for (int32_t i = 0; i < k; i++) {
        put(p, i ? ", (" : "(");
        put_value(p, op->operands[i]);
        put(p, " init: ");
        put_value(p, op->operands[k + i]);
        put(p, ")");
    }
    kiln__strbuf_printf(&p->sb, " applies stablehlo.%s across dimensions = ",
                        kiln__op_get_info(op->regions[0]->first->kind)->name);
    put_dims(p, &op->attrs->u.reduce_dims);
    put(p, " : ");
    put_op_functional(p, op);
}

/* [b, 0, 1, f] */
static void put_conv_layout(printer *p, int64_t first, char first_c, int64_t second, char second_c,
                            const kiln_dims *spatial) {
    int32_t rank = spatial->count + 2;
    put(p, "[");
    for (int64_t d = 0; d < rank; d++) {
        if (d) put(p, ", ");
        if (d == first) {
            kiln__strbuf_printf(&p->sb, "%c", first_c);
        } else if (d == second) {
            kiln__strbuf_printf(&p->sb, "%c", second_c);
        } else {
            int32_t s = 0;
            while (s < spatial->count && spatial->v[s] != d)
                s++;
            if (s < spatial->count)
                kiln__strbuf_printf(&p->sb, "%d", (int)s);
            else
                put(p, "?");
        }
    }
    put(p, "]");
}

/* [b, 0, 1, f]x[o, i, 0, 1]->[b, 0, 1, f] */
static void put_conv_layouts(printer *p, const kiln_conv_params *c) {
    put_conv_layout(p, c->input_batch_dimension, 'b', c->input_feature_dimension, 'f',
                    &c->input_spatial_dimensions);
    put(p, "x");
    put_conv_layout(p, c->kernel_input_feature_dimension, 'i', c->kernel_output_feature_dimension,
                    'o', &c->kernel_spatial_dimensions);
    put(p, "->");
    put_conv_layout(p, c->output_batch_dimension, 'b', c->output_feature_dimension, 'f',
                    &c->output_spatial_dimensions);
}

static void print_convolution(printer *p, const kiln__ir_op *op) {
    const kiln_conv_params *c = &op->attrs->u.conv;
    put(p, "stablehlo.convolution(");
    put_values(p, op->operands, op->n_operands);
    put(p, ") dim_numbers = ");
    put_conv_layouts(p, c);
    put(p, ", window = {");
    if (c->input_spatial_dimensions.count > 0) {
        put(p, "stride = ");
        put_dims(p, &c->window_strides);
        put(p, ", pad = [");
        int32_t n = c->padding_low.count < c->padding_high.count ? c->padding_low.count
                                                                 : c->padding_high.count;
        for (int32_t i = 0; i < n; i++)
            kiln__strbuf_printf(&p->sb, "%s[%" PRId64 ", %" PRId64 "]", i ? ", " : "",
                                c->padding_low.v[i], c->padding_high.v[i]);
        put(p, "], lhs_dilate = ");
        put_dims(p, &c->lhs_dilation);
        put(p, ", rhs_dilate = ");
        put_dims(p, &c->rhs_dilation);
    }
    kiln__strbuf_printf(&p->sb,
                        "} {batch_group_count = %" PRId64 " : i64, feature_group_count = %" PRId64
                        " : i64} : ",
                        c->batch_group_count > 0 ? c->batch_group_count : 1,
                        c->feature_group_count > 0 ? c->feature_group_count : 1);
    put_op_functional(p, op);
}

static void print_while(printer *p, const kiln__ir_op *op, int ind) {
    const kiln__block *body = op->n_regions == 2 ? op->regions[1] : NULL;
    put(p, "stablehlo.while(");
    for (int32_t i = 0; i < op->n_operands; i++) {
        if (i) put(p, ", ");
        if (body && i < body->n_args)
            put_value(p, body->args[i]);
        else
            fail_internal(p, "a while loop without its body's arguments");
        put(p, " = ");
        put_value(p, op->operands[i]);
    }
    put(p, ")");
    if (op->n_operands) {
        put(p, " : ");
        put_types(p, op->operands, op->n_operands);
    }
    put(p, "\n");
    indent(p, ind);
    put(p, "cond ");
    print_region(p, op->n_regions == 2 ? op->regions[0] : NULL, ind, false);
    put(p, " do ");
    print_region(p, body, ind, false);
}

/* stablehlo.composite "name" %a {composite_attributes = ..., decomposition = @f, ...} : type
 * (the attribute dictionary in MLIR's order, by name). */
static void print_composite(printer *p, const kiln__ir_op *op, const char *callee) {
    put(p, "stablehlo.composite ");
    put_string(p, kiln__custom_call_target(op->attrs));
    put(p, " ");
    put_values(p, op->operands, op->n_operands);
    put(p, " {");
    const char *key, *value;
    bool placed = false;
    int32_t i = 0;
    for (; kiln__custom_call_attr(op->attrs, i, &key, &value); i++) {
        if (!placed && strcmp(key, "decomposition") > 0) {
            put(p, i ? ", decomposition = " : "decomposition = ");
            put_symbol(p, callee);
            placed = true;
        }
        put(p, i || placed ? ", " : "");
        put(p, key);
        if (*value) kiln__strbuf_printf(&p->sb, " = %s", value);
    }
    if (!placed) {
        put(p, i ? ", decomposition = " : "decomposition = ");
        put_symbol(p, callee);
    }
    put(p, "} : ");
    put_op_functional(p, op);
}

static void print_call(printer *p, const kiln__ir_op *op) {
    values captured;
    captures_of(p, op, &captured);
    int32_t index = callee_index(p, op);
    if (index < 0) fail_internal(p, "a call without its callee");
    char fname[KILN__CALLEE_NAME_MAX];
    callee_name(p, index, fname, sizeof fname);
    if (op->attrs->mark == KILN__MARK_COMPOSITE && kiln__custom_call_target(op->attrs) &&
        captured.count == 0) {
        print_composite(p, op, fname);
        values_free(p, &captured);
        return;
    }
    put(p, "func.call ");
    put_symbol(p, fname);
    put(p, "(");
    put_values(p, op->operands, op->n_operands);
    for (int32_t i = 0; i < captured.count; i++) {
        if (i || op->n_operands) put(p, ", ");
        put_value(p, captured.items[i]);
    }
    put(p, ") : ");
    put_functional(p, op->operands, op->n_operands, (kiln__value *const *)captured.items,
                   captured.count, op->results, op->n_results);
    values_free(p, &captured);
}

/* JAX's pretty form: stablehlo.custom_call @target(%a) {attributes as written} : type. */
static void print_custom_call(printer *p, const kiln__ir_op *op) {
    const char *target = kiln__custom_call_target(op->attrs);
    if (!target) {
        fail_internal(p, "a custom_call without its record");
        return;
    }
    put(p, "stablehlo.custom_call ");
    put_symbol(p, target);
    put(p, "(");
    put_values(p, op->operands, op->n_operands);
    put(p, ")");
    const char *key, *value;
    for (int32_t i = 0; kiln__custom_call_attr(op->attrs, i, &key, &value); i++) {
        put(p, i ? ", " : " {");
        if (bare_identifier(key))
            put(p, key);
        else
            put_string(p, key);
        if (*value) kiln__strbuf_printf(&p->sb, " = %s", value);
    }
    if (kiln__custom_call_n_attrs(op->attrs)) put(p, "}");
    put(p, " : ");
    put_op_functional(p, op);
}

/* "%0 = ", "%0:2 = ", "%cst = ", "%output_state, %output = " or nothing. */
static void print_results(printer *p, const kiln__ir_op *op) {
    if (op->n_results == 0) return;
    const name *n = get_name(p, op->results[0]);
    if (n && n->kind == NAME_NUMBER && n->result >= 0) {
        kiln__strbuf_printf(&p->sb, "%%%" PRId64 ":%d = ", n->number, (int)op->n_results);
        return;
    }
    put_values(p, op->results, op->n_results);
    put(p, " = ");
}

static void print_op(printer *p, const kiln__ir_op *op, int ind) {
    if (!kiln__op_get_info(op->kind)) {
        fail_internal(p, "an op outside the op table");
        return;
    }
    const kiln__attrs *a = op->attrs;
    print_results(p, op);
    /* the ops with a form of their own (KILN__FORM_CUSTOM) */
    switch (op->kind) {
    case KILN_OP_SELECT: {
        put(p, "stablehlo.select ");
        put_values(p, op->operands, op->n_operands);
        put(p, " : ");
        const kiln__type *r = op->results[0]->type;
        if (op->n_operands == 3 && kiln__type_equal(op->operands[1]->type, r) &&
            kiln__type_equal(op->operands[2]->type, r)) {
            put_type(p, op->operands[0]->type);
            put(p, ", ");
            put_type(p, r);
        } else {
            put_op_functional(p, op);
        }
        return;
    }
    case KILN_OP_CONSTANT:
        put(p, "stablehlo.constant ");
        if (!a->u.constant ||
            (!kiln_tensor_data(a->u.constant) && kiln_tensor_numel(a->u.constant) > 0)) {
            fail_internal(p, "a constant whose value is not readable on the host");
            return;
        }
        kiln__print_dense(&p->sb, kiln_tensor_dtype(a->u.constant),
                          kiln_tensor_shape(a->u.constant), kiln_tensor_data(a->u.constant));
        put(p, " : ");
        put_type(p, op->results[0]->type);
        return;
    case KILN_OP_SLICE: {
        put(p, "stablehlo.slice ");
        put_values(p, op->operands, op->n_operands);
        put(p, " [");
        const kiln_dims *s = &a->u.slice.start, *l = &a->u.slice.limit, *st = &a->u.slice.strides;
        for (int32_t i = 0; i < s->count && i < l->count; i++) {
            kiln__strbuf_printf(&p->sb, "%s%" PRId64 ":%" PRId64, i ? ", " : "", s->v[i], l->v[i]);
            int64_t stride = i < st->count ? st->v[i] : 1;
            if (stride != 1) kiln__strbuf_printf(&p->sb, ":%" PRId64, stride);
        }
        put(p, "] : ");
        put_op_functional(p, op);
        return;
    }
    case KILN_OP_REDUCE: print_reduce(p, op, ind); return;
    case KILN_OP_GET_TUPLE_ELEMENT:
        put(p, "stablehlo.get_tuple_element ");
        put_values(p, op->operands, op->n_operands);
        kiln__strbuf_printf(&p->sb, "[%" PRId64 "] : ", a->u.tuple_index);
        put_op_functional(p, op);
        return;
    case KILN_OP_REDUCE_PRECISION:
        put(p, "stablehlo.reduce_precision ");
        put_values(p, op->operands, op->n_operands);
        kiln__strbuf_printf(&p->sb, ", format = e%" PRId64 "m%" PRId64 " : ",
                            a->u.precision.exponent_bits, a->u.precision.mantissa_bits);
        put_same_or_functional(p, op);
        return;
    case KILN_OP_DOT_GENERAL: {
        const kiln_dot_params *d = &a->u.dot;
        put(p, "stablehlo.dot_general ");
        put_values(p, op->operands, op->n_operands);
        put(p, ", ");
        if (d->lhs_batching_dims.count || d->rhs_batching_dims.count) {
            put(p, "batching_dims = ");
            put_dims(p, &d->lhs_batching_dims);
            put(p, " x ");
            put_dims(p, &d->rhs_batching_dims);
            put(p, ", ");
        }
        put(p, "contracting_dims = ");
        put_dims(p, &d->lhs_contracting_dims);
        put(p, " x ");
        put_dims(p, &d->rhs_contracting_dims);
        put(p, " : ");
        put_op_functional(p, op);
        return;
    }
    case KILN_OP_CONVOLUTION: print_convolution(p, op); return;
    case KILN_OP_WHILE: print_while(p, op, ind); return;
    case KILN_OP_CALL: print_call(p, op); return;
    case KILN_OP_CUSTOM_CALL: print_custom_call(p, op); return;
    case KILN_OP_OPTIMIZATION_BARRIER:
        if (op->n_operands == 0) {
            put(p, "stablehlo.optimization_barrier()");
            return;
        }
        put(p, "stablehlo.optimization_barrier ");
        put_values(p, op->operands, op->n_operands);
        put(p, " : ");
        put_types(p, op->operands, op->n_operands);
        return;
    case KILN_OP_RUN_PARALLEL:
        /* the programs inline, one region per process (for reading, not for parsing back:
         * the interpreter's own form names functions) */
        put(p, "\"interpreter.run_parallel\"(");
        put_values(p, op->operands, op->n_operands);
        put(p, ")");
        print_regions(p, op, ind);
        kiln__strbuf_printf(&p->sb, " {num_partitions = %d : i32, num_replicas = %d : i32} : ",
                            (int)op->attrs->u.grid.num_partitions,
                            (int)op->attrs->u.grid.num_replicas);
        put_op_functional(p, op);
        return;
    default: break;
    }
    const kiln__op_syntax *syn = kiln__op_syntax_get(op->kind);
    switch (syn->form) {
    case KILN__FORM_PLAIN: print_plain(p, op); return;
    case KILN__FORM_INLINE:
        if (op->n_operands < syn->min_pretty_operands)
            print_generic(p, op, ind);
        else
            print_inline(p, op);
        return;
    case KILN__FORM_GENERIC: print_generic(p, op, ind); return;
    default: fail_internal(p, "an op without a text form"); return;
    }
}

static void print_block_body(printer *p, const kiln__block *b, int ind, bool function) {
    for (const kiln__ir_op *op = b->first; op && !p->failed && !p->sb.failed; op = op->next) {
        indent(p, ind);
        print_op(p, op, ind);
        put(p, "\n");
    }
    indent(p, ind);
    put(p, function ? "return" : "stablehlo.return");
    if (b->n_results) {
        put(p, " ");
        put_values(p, b->results, b->n_results);
        put(p, " : ");
        put_types(p, b->results, b->n_results);
    }
    put(p, "\n");
}

/* ---- functions and the module ---------------------------------------------------------- */

/* "result 0 -> %arg0, result 2 -> %arg1" for the results r with items[r] >= 0. */
static void put_result_list(printer *p, const int32_t *items, int32_t n, const char *arrow) {
    bool any = false;
    for (int32_t r = 0; r < n; r++) {
        if (items[r] < 0) continue;
        kiln__strbuf_printf(&p->sb, "%sresult %d %s %%arg%d", any ? ", " : "", (int)r, arrow,
                            (int)items[r]);
        any = true;
    }
    if (!any) put(p, "none");
}

/* The calling convention kiln_lower recorded, as comments. */
static void print_convention(printer *p, const kiln__func *f) {
    const kiln_module *m = p->m;
    const kiln__block *body = f->body;
    if (!m->donated || !m->preserved || !m->aliases) return;
    kiln__strbuf_printf(&p->sb, "  // calling convention of @%s: %d arguments, %d results\n",
                        f->name, (int)body->n_args, (int)body->n_results);
    put(p, "  //   donated arguments:");
    bool any = false;
    for (int32_t i = 0; i < body->n_args; i++) {
        if (!m->donated[i]) continue;
        kiln__strbuf_printf(&p->sb, "%s %%arg%d", any ? "," : "", (int)i);
        any = true;
    }
    put(p, any ? "\n" : " none\n");
    put(p, "  //   preserved results (returned unchanged): ");
    put_result_list(p, m->preserved, body->n_results, "=");
    put(p, "\n  //   aliased results (may reuse a donated buffer): ");
    put_result_list(p, m->aliases, body->n_results, "->");
    put(p, "\n");
}

/* Prints `body` as func.func @name; `extra` are captured values, arguments after the
 * block's own. */
static void print_function(printer *p, const char *fname, bool is_public, bool entry,
                           const char *const *arg_names, const char *const *result_names,
                           const kiln__block *body, const values *extra) {
    names_clear(p);
    number_block(p, body, (naming){0}, false, extra);
    if (p->failed) return;
    const kiln_module *m = p->m;
    put(p, is_public ? "  func.func public " : "  func.func private ");
    put_symbol(p, fname);
    put(p, "(");
    int32_t n_extra = extra ? extra->count : 0;
    for (int32_t i = 0; i < body->n_args + n_extra; i++) {
        const kiln__value *v = i < body->n_args ? body->args[i] : extra->items[i - body->n_args];
        if (i) put(p, ", ");
        put_value(p, v);
        put(p, ": ");
        put_type(p, v->type);
        if (i >= body->n_args) continue;
        /* Attributes in name order, as MLIR sorts them. */
        bool donated = entry && m->donated && m->donated[i];
        int32_t alias = -1;
        for (int32_t r = 0; donated && m->aliases && r < body->n_results; r++)
            if (m->aliases[r] == i) alias = r;
        const char *path = arg_names ? arg_names[i] : NULL;
        const char *sharding =
            entry && p->m->funcs[0]->arg_shardings ? p->m->funcs[0]->arg_shardings[i] : NULL;
        if (!donated && !path && !sharding) continue;
        const char *sep = " {";
        if (donated && alias < 0) {
            put(p, " {jax.buffer_donor = true");
            sep = ", ";
        }
        if (path) {
            put(p, sep);
            put(p, "kiln.path = ");
            put_string(p, path);
            sep = ", ";
        }
        if (sharding) { /* mhlo.sharding, sdy.sharding: as written */
            put(p, sep);
            put(p, sharding);
            sep = ", ";
        }
        if (alias >= 0) kiln__strbuf_printf(&p->sb, "%stf.aliasing_output = %d : i32", sep, alias);
        put(p, "}");
    }
    put(p, ")");
    bool named = false;
    const char **shardings = entry ? p->m->funcs[0]->result_shardings : NULL;
    for (int32_t r = 0; (result_names || shardings) && r < body->n_results; r++)
        named |= (result_names && result_names[r]) || (shardings && shardings[r]);
    if (named) {
        /* Named results, as JAX writes them: -> (tensor<f32> {jax.result_info = "loss"}). */
        put(p, " -> (");
        for (int32_t r = 0; r < body->n_results; r++) {
            if (r) put(p, ", ");
            put_type(p, body->results[r]->type);
            const char *rname = result_names ? result_names[r] : NULL;
            const char *sharding = shardings ? shardings[r] : NULL;
            if (!rname && !sharding) continue;
            put(p, " {");
            if (rname) {
                put(p, "jax.result_info = ");
                put_string(p, rname);
            }
            if (sharding) {
                put(p, rname ? ", " : "");
                put(p, sharding);
            }
            put(p, "}");
        }
        put(p, ")");
    } else if (body->n_results == 1) {
        put(p, " -> ");
        put_type(p, body->results[0]->type);
    } else if (body->n_results > 1) {
        put(p, " -> (");
        put_types(p, body->results, body->n_results);
        put(p, ")");
    }
    put(p, " {\n");
    print_block_body(p, body, 4, true);
    put(p, "  }\n");
}

static char *module_text(kiln_ctx *cx, const kiln_module *m) {
    printer p = {.cx = cx, .m = m};
    kiln__strbuf_init(&p.sb, cx);
    put(&p, "module ");
    put_symbol(&p, m->name ? m->name : "kiln");
    if (m->num_replicas > 1 || m->num_partitions > 1) { /* the grid of an SPMD program */
        const char *sep = " attributes {";
        if (m->num_partitions) {
            kiln__strbuf_printf(&p.sb, "%smhlo.num_partitions = %d : i32", sep,
                                (int)m->num_partitions);
            sep = ", ";
        }
        if (m->num_replicas)
            kiln__strbuf_printf(&p.sb, "%smhlo.num_replicas = %d : i32", sep, (int)m->num_replicas);
        put(&p, "}");
    }
    put(&p, " {\n");
    for (int32_t i = 0; i < m->n_meshes; i++) {
        const kiln__mesh *mesh = &m->meshes[i];
        put(&p, "  sdy.mesh ");
        put_symbol(&p, mesh->name);
        put(&p, " = <[");
        for (int32_t a = 0; a < mesh->n_axes; a++) {
            put(&p, a ? ", " : "");
            put_string(&p, mesh->axis_names[a]);
            kiln__strbuf_printf(&p.sb, "=%lld", (long long)mesh->axis_sizes[a]);
        }
        put(&p, "]>\n");
    }
    for (int32_t f = 0; f < m->n_funcs && !p.failed; f++)
        collect_calls(&p, m->funcs[f]->body);
    for (int32_t f = 0; f < m->n_funcs && !p.failed && !p.sb.failed; f++) {
        const kiln__func *fn = m->funcs[f];
        if (f == 0) print_convention(&p, fn);
        for (int32_t k = 0; f == 0 && k < m->n_notes; k++) {
            put(&p, "  // note: ");
            put(&p, m->notes[k]);
            put(&p, "\n");
        }
        print_function(&p, fn->name, fn->is_public, f == 0, fn->arg_names, fn->result_names,
                       fn->body, NULL);
    }
    for (int32_t c = 0; c < p.n_calls && !p.failed && !p.sb.failed; c++) {
        const kiln__ir_op *call = p.calls[c];
        if (call->n_regions < 1 || !call->regions[0]) {
            fail_internal(&p, "a call without its callee");
            break;
        }
        values captured;
        captures_of(&p, call, &captured);
        char fname[KILN__CALLEE_NAME_MAX];
        callee_name(&p, c, fname, sizeof fname);
        if (!p.failed)
            print_function(&p, fname, false, false, NULL, NULL, call->regions[0], &captured);
        values_free(&p, &captured);
    }
    put(&p, "}\n");
    if (p.slots) kiln__free(cx, p.slots, p.cap * sizeof *p.slots);
    if (p.calls) kiln__free(cx, (void *)p.calls, (size_t)p.cap_calls * sizeof *p.calls);
    if (p.failed) {
        kiln__strbuf_destroy(&p.sb);
        return NULL;
    }
    return kiln__strbuf_take(&p.sb);
}

char *kiln_module_to_string(kiln_ctx *cx, const kiln_module *m) {
    if (!cx) return NULL;
    if (!m) {
        kiln__null_argument(cx, "kiln_module_to_string", "module");
        return NULL;
    }
    return module_text(cx, m);
}

kiln_status kiln_module_print(kiln_ctx *cx, const kiln_module *m, FILE *stream) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!m) return kiln__null_argument(cx, "kiln_module_print", "module");
    if (!stream) return kiln__null_argument(cx, "kiln_module_print", "stream");
    char *text = module_text(cx, m);
    if (!text)
        return kiln_ctx_status(cx) != KILN_OK ? kiln_ctx_status(cx) : KILN_RESOURCE_EXHAUSTED;
    int rc = fputs(text, stream);
    kiln__strbuf_free_string(cx, text);
    if (rc < 0 || ferror(stream))
        return kiln_ctx_set_error(cx, KILN_UNAVAILABLE, "kiln_module_print: writing failed");
    return KILN_OK;
}
