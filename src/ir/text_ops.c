/* SPDX-License-Identifier: Apache-2.0 */
/* The text parser's ops: value names (hash buckets that regions push and pop), regions,
 * the generic form, the pretty forms (the op schema's and the few of their own), op lines
 * and block bodies. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "core/tensor_internal.h"
#include "ir/text.h"
#include "kiln/spmd.h"

/* A splat constant larger than this stays one element in the IR and through compile: a
 * scalar constant broadcast to its type (as JAX writes jnp.full), which fuses into its
 * users, so `dense<1.0> : tensor<65536x65536xf32>` costs four bytes, not 16 GiB. */
#define SPLAT_COMPACT_BYTES ((size_t)64 << 10)

/* ---- values ------------------------------------------------------------------------------ */

static uint32_t hash_name(const char *s, size_t len) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* %name: its span (without '%'). */
bool kiln__text_value_name(parser *p, const char **name, size_t *len) {
    kiln__text_skip(p);
    size_t start = p->pos;
    if (ch(p) != '%') {
        char buf[16];
        return kiln__text_error(p, start, "expected a value (%%name), found %s",
                                kiln__text_char_text(p, buf));
    }
    p->pos++;
    size_t s = p->pos;
    while (is_id_char(ch(p)) || ch(p) == '-')
        p->pos++;
    if (p->pos == s) return kiln__text_error(p, start, "expected a value name after '%%'");
    *name = p->s + s;
    *len = p->pos - s;
    return true;
}

bool kiln__text_typed_value(parser *p, const char **name, size_t *len, size_t *pos, kiln__type *t,
                            const char *after) {
    kiln__text_skip(p);
    if (pos) *pos = p->pos;
    return kiln__text_value_name(p, name, len) && kiln__text_expect(p, ':', after) &&
           kiln__text_tensor_type(p, t);
}

/* Names are found through hash buckets (each a chain from its newest entry back), so a
 * lookup costs the same in a program of a million values as in one of ten. */
static pname *find_name(parser *p, const char *name, size_t len) {
    if (!p->name_heads) return NULL;
    uint32_t h = hash_name(name, len);
    for (int32_t i = p->name_heads[h & (uint32_t)(p->cap_heads - 1)]; i >= 0; i = p->names[i].chain)
        if (p->names[i].hash == h && p->names[i].len == len &&
            memcmp(p->names[i].name, name, len) == 0)
            return &p->names[i];
    return NULL;
}

/* Rebuilds the buckets for cap of them (a power of two). */
static bool names_rehash(parser *p, int32_t cap) {
    int32_t *heads =
        kiln__alloc(p->cx, (size_t)cap * sizeof *heads, _Alignof(int32_t), "parser names");
    if (!heads) return kiln__text_oom(p);
    for (int32_t i = 0; i < cap; i++)
        heads[i] = -1;
    for (int32_t i = 0; i < p->n_names; i++) {
        int32_t *head = &heads[p->names[i].hash & (uint32_t)(cap - 1)];
        p->names[i].chain = *head;
        *head = i;
    }
    if (p->name_heads) kiln__free(p->cx, p->name_heads, (size_t)p->cap_heads * sizeof *heads);
    p->name_heads = heads;
    p->cap_heads = cap;
    return true;
}

/* Forgets the names defined after the first `mark` (a region's, at its end). */
void kiln__text_names_pop(parser *p, int32_t mark) {
    for (int32_t i = p->n_names - 1; i >= mark; i--)
        p->name_heads[p->names[i].hash & (uint32_t)(p->cap_heads - 1)] = p->names[i].chain;
    p->n_names = mark;
}

bool kiln__text_define(parser *p, size_t pos, const char *name, size_t len, kiln__value **vals,
                       int32_t n) {
    if (find_name(p, name, len))
        return kiln__text_error(p, pos, "redefinition of value '%%%.*s'",
                                (int)(len > 60 ? 60 : len), name);
    pname *names = kiln__text_grow(p, p->names, &p->cap_names, p->n_names, sizeof *names, 64, true);
    if (!names) return false;
    p->names = names;
    if (2 * (p->n_names + 1) > p->cap_heads &&
        !names_rehash(p, p->cap_heads ? 2 * p->cap_heads : 128))
        return false;
    uint32_t h = hash_name(name, len);
    int32_t *head = &p->name_heads[h & (uint32_t)(p->cap_heads - 1)];
    p->names[p->n_names] = (pname){name, len, h, vals, n, *head};
    *head = p->n_names++;
    return true;
}

/* %name or %name#i */
kiln__value *kiln__text_use_value(parser *p) {
    kiln__text_skip(p);
    size_t start = p->pos;
    const char *name;
    size_t len;
    if (!kiln__text_value_name(p, &name, &len)) return NULL;
    int64_t index = -1;
    if (ch(p) == '#') {
        p->pos++;
        if (!kiln__text_int64_lit(p, &index, "result number")) return NULL;
    }
    pname *n = find_name(p, name, len);
    if (!n) {
        kiln__text_error(p, start, "use of undefined value '%%%.*s'", (int)(len > 60 ? 60 : len),
                         name);
        return NULL;
    }
    if (index < 0) {
        if (n->n != 1) {
            kiln__text_error(p, start, "value '%%%.*s' has %d results: name one with #",
                             (int)(len > 60 ? 60 : len), name, (int)n->n);
            return NULL;
        }
        return n->vals[0];
    }
    if (index >= n->n) {
        kiln__text_error(p, start, "result #%" PRId64 " of '%%%.*s' does not exist (it has %d)",
                         index, (int)(len > 60 ? 60 : len), name, (int)n->n);
        return NULL;
    }
    return n->vals[index];
}

static bool operand_list(parser *p, kiln__value **out, int32_t *n, size_t *positions) {
    *n = 0;
    if (!kiln__text_peek(p, '%')) return true;
    do {
        if (*n >= MAX_VALUES) return kiln__text_error(p, p->pos, "too many operands");
        kiln__text_skip(p);
        if (positions) positions[*n] = p->pos;
        kiln__value *v = kiln__text_use_value(p);
        if (!v) return false;
        out[(*n)++] = v;
        size_t save = p->pos;
        if (!kiln__text_accept(p, ',')) break;
        if (!kiln__text_peek(p, '%')) {
            p->pos = save;
            break;
        }
    } while (true);
    return true;
}

/* ---- ops --------------------------------------------------------------------------------- */

typedef struct lhs {
    const char *names[MAX_VALUES];
    size_t lens[MAX_VALUES];
    size_t pos[MAX_VALUES];
    int32_t n_names;
    int32_t count; /* results declared */
    bool grouped;  /* %x:N */
} lhs;

/* Where a pretty constant's value is, once read. */
typedef enum constant_value {
    CONSTANT_VALUE_NONE,  /* not read (yet) */
    CONSTANT_VALUE_HELD,  /* held as the module's last constant */
    CONSTANT_VALUE_SPLAT, /* its one element held so: the op becomes a broadcast of it */
} constant_value;

typedef struct opdesc {
    kiln_op kind;
    size_t pos;
    kiln__value *operands[MAX_VALUES];
    int32_t n_operands;
    attr dict;
    constant_value value; /* a constant's */
    kiln__block *regions[MAX_VALUES];
    int32_t n_regions;
    sig s;
    bool have_sig;
    const char *callee;
    size_t callee_len, callee_pos;
    const kiln_tensor *record; /* a custom_call's or composite's (ops/custom_call.h) */
} opdesc;

typedef struct op_scratch {
    lhs l;
    opdesc o;
    struct op_scratch *next; /* in parser.free_scratch */
} op_scratch;

static bool dict_add(parser *p, attr *d, const char *key, attr v) {
    int32_t cap = d->n; /* grows by reallocating: few entries */
    attr *items = kiln__text_aalloc(p, (size_t)(cap + 1) * sizeof *items);
    const char **keys = kiln__text_aalloc(p, (size_t)(cap + 1) * sizeof *keys);
    size_t *lens = kiln__text_aalloc(p, (size_t)(cap + 1) * sizeof *lens);
    if (!items || !keys || !lens) return false;
    if (d->n) {
        memcpy(items, d->items, (size_t)d->n * sizeof *items);
        memcpy(keys, d->keys, (size_t)d->n * sizeof *keys);
        memcpy(lens, d->key_lens, (size_t)d->n * sizeof *lens);
    }
    items[d->n] = v;
    keys[d->n] = key;
    lens[d->n] = strlen(key);
    d->items = items;
    d->keys = keys;
    d->key_lens = lens;
    d->n++;
    return true;
}

static bool dict_merge(parser *p, attr *d, const attr *more) {
    for (int32_t i = 0; i < more->n; i++) {
        char *k = kiln__arena_strndup(&p->m->arena, more->keys[i], more->key_lens[i]);
        if (!k) return kiln__text_oom(p);
        if (!dict_add(p, d, k, more->items[i])) return false;
    }
    return true;
}

/* A region: { [^bb0(%a: T, ...):] ops stablehlo.return ... } */
/* An optional attribute dictionary `{...}` into the op's: what the schema names is read
 * from it, the rest (discardable attributes) is not kept. */
static bool attr_dict(parser *p, opdesc *o) {
    if (!kiln__text_accept(p, '{')) return true;
    attr more = {0};
    return kiln__text_attr_entries(p, &more, '}') && dict_merge(p, &o->dict, &more);
}

static bool region(parser *p, kiln__block **out, const kiln__type *args, int32_t n_args,
                   const char *const *arg_names, const size_t *arg_lens) {
    kiln__text_skip(p);
    size_t open = p->pos;
    if (!kiln__text_expect(p, '{', "to open a region")) return false;
    if (!kiln__text_enter(p)) return false;
    kiln__block *b = kiln__block_new(p->m, NULL);
    if (!b) return kiln__text_oom(p);
    int32_t mark = p->n_names;
    bool saved_nested = p->nested;
    p->nested = true;
    for (int32_t i = 0; i < n_args; i++) {
        kiln__value *v = kiln__block_add_arg(p->m, b, args[i]);
        if (!v) return kiln__text_oom(p);
        if (arg_names && !kiln__text_define(p, open, arg_names[i], arg_lens[i], &b->args[i], 1))
            return false;
    }
    if (kiln__text_peek(p, '^')) {
        size_t at = p->pos;
        p->pos++;
        const char *id;
        if (!kiln__text_ident(p, &id)) return kiln__text_error(p, at, "expected a block name");
        if (kiln__text_accept(p, '(') && !kiln__text_accept(p, ')')) {
            do {
                const char *name;
                size_t len, vpos;
                kiln__type t;
                if (!kiln__text_typed_value(p, &name, &len, &vpos, &t, "after a block argument"))
                    return false;
                kiln__value *v = kiln__block_add_arg(p->m, b, t);
                if (!v) return kiln__text_oom(p);
                if (!kiln__text_define(p, vpos, name, len, &b->args[b->n_args - 1], 1))
                    return false;
            } while (kiln__text_accept(p, ','));
            if (!kiln__text_expect(p, ')', "to close the block arguments")) return false;
        }
        if (!kiln__text_expect(p, ':', "after the block header")) return false;
    }
    if (!kiln__text_block_body(p, b, false, open)) return false;
    kiln__text_names_pop(p, mark);
    p->nested = saved_nested;
    leave(p);
    *out = b;
    return true;
}

static bool regions_list(parser *p, opdesc *o) {
    /* ({...}, {...}) */
    if (!kiln__text_expect(p, '(', "to open the regions")) return false;
    do {
        if (o->n_regions >= MAX_VALUES) return kiln__text_error(p, p->pos, "too many regions");
        if (!region(p, &o->regions[o->n_regions++], NULL, 0, NULL, NULL)) return false;
    } while (kiln__text_accept(p, ','));
    return kiln__text_expect(p, ')', "to close the regions");
}

static bool generic_op(parser *p, opdesc *o) {
    /* after "name": (operands) <{props}>? (regions)? {attrs}? : functype */
    if (!kiln__text_expect(p, '(', "to open the operands")) return false;
    if (!operand_list(p, o->operands, &o->n_operands, NULL)) return false;
    if (!kiln__text_expect(p, ')', "to close the operands")) return false;
    kiln__text_skip(p);
    if (ch(p) == '<' && ch_at(p, p->pos + 1) == '{') {
        p->pos += 2;
        attr props = {0};
        if (!kiln__text_attr_entries(p, &props, '}') ||
            !kiln__text_expect(p, '>', "to close the properties"))
            return false;
        if (!dict_merge(p, &o->dict, &props)) return false;
    }
    if (kiln__text_peek(p, '(')) {
        if (!regions_list(p, o)) return false;
    }
    if (!attr_dict(p, o)) return false;
    if (!kiln__text_expect(p, ':', "before the op's type")) return false;
    if (!kiln__text_functional_type(p, &o->s)) return false;
    if (!o->s.functional)
        return kiln__text_error(p, o->s.pos, "expected a function type (operands) -> results");
    o->have_sig = true;
    return true;
}

/* The deprecated stablehlo.dot (operands of rank 1 or 2) is dot_general contracting the
 * lhs's last dimension with the rhs's first, as StableHLO's own legalization makes it; its
 * precision_config, like dot_general's, is read and not kept. */
static bool dot_as_dot_general(parser *p, opdesc *o) {
    int32_t r = o->s.n_in == 2 ? o->s.in[0].shape.rank : 0;
    if (r < 1 || r > 2 || o->s.in[1].shape.rank < 1 || o->s.in[1].shape.rank > 2)
        return kiln__text_error(p, o->pos, "stablehlo.dot takes two operands of rank 1 or 2");
    attr dims = {.kind = A_STRUCT, .pos = o->pos};
    attr lhs_dims = {.kind = A_ARRAY, .pos = o->pos, .n = 1}, rhs_dims = lhs_dims;
    lhs_dims.ints = kiln__text_aalloc(p, sizeof(int64_t));
    rhs_dims.ints = kiln__text_aalloc(p, sizeof(int64_t));
    if (!lhs_dims.ints || !rhs_dims.ints) return false;
    lhs_dims.ints[0] = r - 1;
    rhs_dims.ints[0] = 0;
    return dict_add(p, &dims, "lhs_contracting_dimensions", lhs_dims) &&
           dict_add(p, &dims, "rhs_contracting_dimensions", rhs_dims) &&
           dict_add(p, &o->dict, "dot_dimension_numbers", dims);
}

static bool enum_word(parser *p, opdesc *o, const char *key) {
    attr v = {0};
    kiln__text_skip(p);
    v.pos = p->pos;
    v.kind = A_ENUM;
    if (!(v.len = kiln__text_ident(p, &v.text))) {
        char buf[16];
        return kiln__text_error(p, v.pos, "expected %s, found %s", key,
                                kiln__text_char_text(p, buf));
    }
    return dict_add(p, &o->dict, key, v);
}

static bool int_attr(parser *p, opdesc *o, const char *key) {
    attr v = {0};
    kiln__text_skip(p);
    v.pos = p->pos;
    v.kind = A_INT;
    if (!kiln__text_int64_lit(p, &v.i, key)) return false;
    return dict_add(p, &o->dict, key, v);
}

/* "[1] x [0]" into two dict entries */
static bool dims_pair(parser *p, opdesc *o, const char *k1, const char *k2) {
    attr a = {0}, b = {0};
    kiln__text_skip(p);
    a.pos = p->pos;
    if (!kiln__text_expect(p, '[', "to open a list") || !kiln__text_int_list_attr(p, &a))
        return false;
    kiln__text_skip(p);
    if (ch(p) != 'x') return kiln__text_error(p, p->pos, "expected 'x' between dimension lists");
    p->pos++;
    kiln__text_skip(p);
    b.pos = p->pos;
    if (!kiln__text_expect(p, '[', "to open a list") || !kiln__text_int_list_attr(p, &b))
        return false;
    return dict_add(p, &o->dict, k1, a) && dict_add(p, &o->dict, k2, b);
}

static bool pretty_type(parser *p, opdesc *o) {
    if (!kiln__text_expect(p, ':', "before the op's type")) return false;
    if (!kiln__text_functional_type(p, &o->s)) return false;
    o->have_sig = true;
    return true;
}

/* Names and types of a region's arguments, kept on the heap: the regions they open nest
 * (a while in a while ...), and arrays of MAX_VALUES types in every level's stack frame
 * would overflow a thread's stack long before the nesting limit. */
typedef struct region_args {
    const char *names[MAX_VALUES];
    size_t lens[MAX_VALUES];
    kiln__type types[MAX_VALUES];
    const char *pair_names[MAX_VALUES];
    size_t pair_lens[MAX_VALUES];
    kiln__type pair_types[MAX_VALUES];
} region_args;

static bool with_region_args(parser *p, opdesc *o, bool (*fn)(parser *, opdesc *, region_args *)) {
    region_args *a = kiln__alloc(p->cx, sizeof *a, _Alignof(region_args), "parser region");
    if (!a) return kiln__text_oom(p);
    bool ok = fn(p, o, a);
    kiln__free(p->cx, a, sizeof *a);
    return ok;
}

/* After "reducer": one group per input, each its accumulator and its element:
 * reducer(%a: T, %c: T) (%b: U, %d: U) { ... } for two inputs (StableHLO's printer), or
 * two groups of one for one input (reducer(%a: T) (%c: T)). */
static bool reducer_region(parser *p, opdesc *o, region_args *a) {
    const char **names = a->names;
    size_t *lens = a->lens;
    kiln__type *types = a->types;
    int32_t na = 0;
    do {
        if (!kiln__text_expect(p, '(', "to open reducer arguments")) return false;
        do {
            if (na >= MAX_VALUES) return kiln__text_error(p, p->pos, "too many reducer arguments");
            if (!kiln__text_typed_value(p, &names[na], &lens[na], NULL, &types[na],
                                        "after a reducer argument"))
                return false;
            na++;
        } while (kiln__text_accept(p, ','));
        if (!kiln__text_expect(p, ')', "to close reducer arguments")) return false;
    } while (kiln__text_peek(p, '('));
    if (na % 2)
        return kiln__text_error(p, p->pos,
                                "%d reducer arguments; expected an accumulator and "
                                "an element per input",
                                (int)na);
    /* JAX prints (%acc, %x) pairs per input: the region takes the accumulators, then the
     * inputs. */
    const char **rn = a->pair_names;
    size_t *rl = a->pair_lens;
    kiln__type *rt = a->pair_types;
    int32_t half = na / 2;
    for (int32_t i = 0; i < half; i++) {
        rn[i] = names[2 * i];
        rl[i] = lens[2 * i];
        rt[i] = types[2 * i];
        rn[half + i] = names[2 * i + 1];
        rl[half + i] = lens[2 * i + 1];
        rt[half + i] = types[2 * i + 1];
    }
    return region(p, &o->regions[o->n_regions++], rt, na, rn, rl);
}

/* After "stablehlo.while": (%iterArg = %c, ...) : T, T cond { } do { } */
static bool while_regions(parser *p, opdesc *o, region_args *a) {
    if (!kiln__text_expect(p, '(', "to open the loop variables")) return false;
    const char **names = a->names;
    size_t *lens = a->lens;
    int32_t n = 0;
    if (!kiln__text_accept(p, ')')) {
        do {
            if (n >= MAX_VALUES) return kiln__text_error(p, p->pos, "too many loop variables");
            if (!kiln__text_value_name(p, &names[n], &lens[n]) ||
                !kiln__text_expect(p, '=', "after a loop variable"))
                return false;
            kiln__value *v = kiln__text_use_value(p);
            if (!v) return false;
            o->operands[n++] = v;
        } while (kiln__text_accept(p, ','));
        if (!kiln__text_expect(p, ')', "to close the loop variables")) return false;
    }
    o->n_operands = n;
    kiln__type *types = a->types;
    int32_t nt = 0;
    if (n > 0) {
        if (!kiln__text_expect(p, ':', "before the loop types")) return false;
        size_t tp = p->pos;
        if (!kiln__text_type_list(p, types, MAX_VALUES, &nt)) return false;
        if (nt != n)
            return kiln__text_error(p, tp, "%d loop variables but %d types", (int)n, (int)nt);
    }
    o->s.n_in = o->s.n_out = n;
    for (int32_t i = 0; i < n; i++)
        o->s.in[i] = o->s.out[i] = types[i];
    o->s.functional = true;
    o->have_sig = true;
    if (!kiln__text_expect_kw(p, "cond", "after the loop variables")) return false;
    if (!region(p, &o->regions[0], types, n, names, lens)) return false;
    if (!kiln__text_expect_kw(p, "do", "after the loop condition")) return false;
    if (!region(p, &o->regions[1], types, n, names, lens)) return false;
    o->n_regions = 2;
    return true;
}

/* An attribute's value in a pretty form ([1, 2], 3, or an enum's name) into the dict. */
static bool pretty_value(parser *p, opdesc *o, const kiln__attr_desc *d) {
    switch (d->kind) {
    case KILN__AK_I64: return int_attr(p, o, d->name);
    case KILN__AK_ENUM: return enum_word(p, o, d->name);
    case KILN__AK_BOOL: {
        attr v = {0};
        kiln__text_skip(p);
        v.pos = p->pos;
        v.kind = A_BOOL;
        if (kiln__text_accept_kw(p, "true"))
            v.i = 1;
        else if (!kiln__text_accept_kw(p, "false"))
            return kiln__text_error(p, v.pos, "expected true or false for %s", d->name);
        return dict_add(p, &o->dict, d->name, v);
    }
    case KILN__AK_DIMS: {
        attr v = {0};
        kiln__text_skip(p);
        v.pos = p->pos;
        return kiln__text_expect(p, '[', "to open the list") && kiln__text_int_list_attr(p, &v) &&
               dict_add(p, &o->dict, d->name, v);
    }
    default: return kiln__text_error(p, p->pos, "internal: %s has no pretty form", d->name);
    }
}

/* The pretty form of the op schema (KILN__FORM_INLINE), after the op name:
 * [enum, ]operands[, keyword = value ...] : type */
static bool pretty_inline(parser *p, opdesc *o) {
    const kiln__op_syntax *syn = kiln__op_syntax_get(o->kind);
    bool any = false;
    for (int32_t i = 0; i < syn->n_attrs; i++) {
        const kiln__attr_desc *d = kiln__op_pretty_attr(syn, i);
        if (!d->in_pretty || !d->before_operands) continue;
        if (any && !kiln__text_expect(p, ',', "between attributes")) return false;
        if (!pretty_value(p, o, d)) return false;
        any = true;
    }
    if (kiln__op_get_info(o->kind)->n_operands != 0) {
        if (any && !kiln__text_expect(p, ',', "before the operands")) return false;
        if (!operand_list(p, o->operands, &o->n_operands, NULL)) return false;
        any = true;
    }
    for (int32_t i = 0; i < syn->n_attrs; i++) {
        const kiln__attr_desc *d = kiln__op_pretty_attr(syn, i);
        if (!d->in_pretty || d->before_operands) continue;
        if (d->pretty_optional) {
            if (!kiln__text_accept(p, ',')) continue;
        } else if (any && !kiln__text_expect(p, ',', "before an attribute")) {
            return false;
        }
        if (d->pretty && (!kiln__text_expect_kw(p, d->pretty, "attribute") ||
                          !kiln__text_expect(p, '=', "after the attribute name")))
            return false;
        if (!pretty_value(p, o, d)) return false;
        any = true;
    }
    if (!attr_dict(p, o)) return false; /* the attributes the pretty form does not name */
    return pretty_type(p, o);
}

/* The pretty forms, after the op name: the schema's, and those of their own. */
static bool pretty_op(parser *p, opdesc *o, kiln__value **result_hint) {
    (void)result_hint;
    switch (o->kind) {
    case KILN_OP_CONSTANT: {
        kiln__text_skip(p);
        size_t at = p->pos;
        if (!kiln__text_accept_kw(p, "dense")) {
            char buf[16];
            return kiln__text_error(p, at, "expected dense<...> after stablehlo.constant, found %s",
                                    kiln__text_char_text(p, buf));
        }
        if (!kiln__text_expect(p, '<', "after 'dense'")) return false;
        dense d;
        bool ok = kiln__text_dense_body(p, &d) && pretty_type(p, o);
        if (ok && (o->s.functional || o->s.n_out != 1))
            ok = kiln__text_error(p, o->s.pos, "a constant has one result type");
        /* a large splat: its one element (the literal still checked against the type) */
        kiln__type scalar = {.dtype = o->s.out[0].dtype, .shape = {.rank = 0}};
        int64_t numel = 0;
        bool compact = ok && !d.list && !d.empty && kiln_shape_numel(&o->s.out[0].shape, &numel) &&
                       (size_t)numel * kiln_dtype_size(scalar.dtype) > SPLAT_COMPACT_BYTES &&
                       (!d.blob || d.blob_len == kiln_dtype_size(scalar.dtype));
        if (ok) {
            kiln_tensor *t = kiln__text_dense_tensor(p, &d, compact ? &scalar : &o->s.out[0]);
            if (!t)
                ok = false;
            else {
                ok = kiln__module_keep_constant(p->m, t) == KILN_OK;
                kiln_tensor_release(t);
                if (!ok)
                    kiln__text_oom(p);
                else
                    o->value = compact ? CONSTANT_VALUE_SPLAT : CONSTANT_VALUE_HELD;
            }
        }
        kiln__text_dense_free(p, &d);
        return ok;
    }
    case KILN_OP_REDUCE_PRECISION: {
        /* %x, format = e5m10 : type */
        if (!operand_list(p, o->operands, &o->n_operands, NULL) ||
            !kiln__text_expect(p, ',', "before the format") ||
            !kiln__text_expect_kw(p, "format", "attribute") ||
            !kiln__text_expect(p, '=', "after 'format'"))
            return false;
        kiln__text_skip(p);
        attr e = {.kind = A_INT, .pos = p->pos}, m = {.kind = A_INT, .pos = p->pos};
        const char *w;
        size_t len = kiln__text_ident(p, &w), i = 1;
        bool ok = len > 3 && w[0] == 'e';
        for (; ok && i < len && w[i] >= '0' && w[i] <= '9' && e.i < 1000; i++)
            e.i = e.i * 10 + (w[i] - '0');
        ok = ok && i > 1 && i < len && w[i++] == 'm';
        size_t m_at = i;
        for (; ok && i < len && w[i] >= '0' && w[i] <= '9' && m.i < 1000; i++)
            m.i = m.i * 10 + (w[i] - '0');
        if (!ok || i != len || i == m_at)
            return kiln__text_error(p, e.pos,
                                    "expected the format as e<exponent bits>m<mantissa bits> "
                                    "(e5m10)");
        return dict_add(p, &o->dict, "exponent_bits", e) &&
               dict_add(p, &o->dict, "mantissa_bits", m) && pretty_type(p, o);
    }
    case KILN_OP_GET_TUPLE_ELEMENT: { /* %t[0] : (tuple<...>) -> T */
        kiln__value *v = kiln__text_use_value(p);
        if (!v) return false;
        o->operands[o->n_operands++] = v;
        attr index = {.kind = A_INT};
        if (!kiln__text_expect(p, '[', "before the tuple index")) return false;
        kiln__text_skip(p);
        index.pos = p->pos;
        return kiln__text_int64_lit(p, &index.i, "tuple index") &&
               kiln__text_expect(p, ']', "after the tuple index") &&
               dict_add(p, &o->dict, "index", index) && pretty_type(p, o);
    }
    case KILN_OP_SLICE: {
        kiln__value *v = kiln__text_use_value(p);
        if (!v) return false;
        o->operands[o->n_operands++] = v;
        attr st = {.kind = A_ARRAY}, li = {.kind = A_ARRAY}, sd = {.kind = A_ARRAY};
        kiln__text_skip(p);
        st.pos = li.pos = sd.pos = p->pos;
        st.ints = kiln__text_aalloc(p, KILN_MAX_RANK * sizeof(int64_t));
        li.ints = kiln__text_aalloc(p, KILN_MAX_RANK * sizeof(int64_t));
        sd.ints = kiln__text_aalloc(p, KILN_MAX_RANK * sizeof(int64_t));
        if (!st.ints || !li.ints || !sd.ints) return false;
        if (!kiln__text_expect(p, '[', "to open the slice")) return false;
        if (!kiln__text_accept(p, ']')) {
            do {
                if (st.n >= KILN_MAX_RANK)
                    return kiln__text_error(p, p->pos, "too many slice dimensions");
                int64_t a, b, c = 1;
                if (!kiln__text_int64_lit(p, &a, "slice start") ||
                    !kiln__text_expect(p, ':', "in a slice") ||
                    !kiln__text_int64_lit(p, &b, "slice limit"))
                    return false;
                if (kiln__text_accept(p, ':') && !kiln__text_int64_lit(p, &c, "slice stride"))
                    return false;
                st.ints[st.n++] = a;
                li.ints[li.n++] = b;
                sd.ints[sd.n++] = c;
            } while (kiln__text_accept(p, ','));
            if (!kiln__text_expect(p, ']', "to close the slice")) return false;
        }
        if (!dict_add(p, &o->dict, "start_indices", st) ||
            !dict_add(p, &o->dict, "limit_indices", li) || !dict_add(p, &o->dict, "strides", sd))
            return false;
        return pretty_type(p, o);
    }
    case KILN_OP_DOT_GENERAL: {
        if (!operand_list(p, o->operands, &o->n_operands, NULL)) return false;
        attr s = {0};
        s.kind = A_STRUCT;
        s.pos = p->pos;
        attr save = o->dict;
        o->dict = (attr){0};
        if (!kiln__text_expect(p, ',', "before the dimension numbers")) return false;
        if (kiln__text_accept_kw(p, "batching_dims")) {
            if (!kiln__text_expect(p, '=', "after batching_dims") ||
                !dims_pair(p, o, "lhs_batching_dimensions", "rhs_batching_dimensions") ||
                !kiln__text_expect(p, ',', "after batching_dims"))
                return false;
        }
        if (!kiln__text_expect_kw(p, "contracting_dims", "attribute") ||
            !kiln__text_expect(p, '=', "after contracting_dims") ||
            !dims_pair(p, o, "lhs_contracting_dimensions", "rhs_contracting_dimensions"))
            return false;
        s.items = o->dict.items;
        s.keys = o->dict.keys;
        s.key_lens = o->dict.key_lens;
        s.n = o->dict.n;
        o->dict = save;
        if (!dict_add(p, &o->dict, "dot_dimension_numbers", s)) return false;
        while (kiln__text_accept(p, ',')) {
            const char *id;
            size_t at;
            size_t len = kiln__text_attr_key(p, &id, &at, "after an attribute name",
                                             "expected an attribute");
            if (!len) return false;
            attr junk = {0};
            kiln__text_skip(p);
            if (ch(p) == '[') {
                /* precision = [DEFAULT, DEFAULT] */
                int depth = 0;
                do {
                    if (ch(p) == '[') depth++;
                    if (ch(p) == ']') depth--;
                    p->pos++;
                } while (depth > 0 && p->pos < p->n);
                if (depth) return kiln__text_error(p, at, "unterminated list");
            } else if (ch(p) == '<') {
                if (!kiln__text_skip_angles(p, at)) return false;
            } else if (!kiln__text_attr_value(p, &junk)) {
                return false;
            }
        }
        return attr_dict(p, o) && pretty_type(p, o);
    }
    case KILN_OP_CONVOLUTION: {
        if (!kiln__text_expect(p, '(', "to open the operands") ||
            !operand_list(p, o->operands, &o->n_operands, NULL) ||
            !kiln__text_expect(p, ')', "to close the operands"))
            return false;
        attr dn = {0};
        dn.kind = A_CONV;
        kiln__text_skip(p);
        dn.pos = p->pos;
        if (!kiln__text_expect_kw(p, "dim_numbers", "after the operands") ||
            !kiln__text_expect(p, '=', "after dim_numbers") ||
            !kiln__text_conv_layouts(p, &dn.conv))
            return false;
        if (!dict_add(p, &o->dict, "dimension_numbers", dn)) return false;
        if (!kiln__text_expect(p, ',', "before window") ||
            !kiln__text_expect_kw(p, "window", "attribute") ||
            !kiln__text_expect(p, '=', "after window") ||
            !kiln__text_expect(p, '{', "to open the window"))
            return false;
        if (!kiln__text_accept(p, '}')) {
            do {
                const char *id;
                kiln__text_skip(p);
                size_t at = p->pos;
                size_t len = kiln__text_ident(p, &id);
                if (!len) return kiln__text_error(p, at, "expected a window attribute");
                if (!kiln__text_expect(p, '=', "after a window attribute")) return false;
                attr v = {0};
                if (!kiln__text_attr_value(p, &v)) return false;
                const char *key = span_is(id, len, "stride")       ? "window_strides"
                                  : span_is(id, len, "pad")        ? "padding"
                                  : span_is(id, len, "lhs_dilate") ? "lhs_dilation"
                                  : span_is(id, len, "rhs_dilate") ? "rhs_dilation"
                                  : span_is(id, len, "reverse")    ? "window_reversal"
                                                                   : NULL;
                if (!key)
                    return kiln__text_error(p, at, "unknown window attribute '%.*s'",
                                            (int)(len > 40 ? 40 : len), id);
                if (v.kind == A_LIST && v.n == 0) v.kind = A_ARRAY;
                if (span_is(id, len, "reverse") && v.kind == A_LIST) {
                    /* [false, true] */
                    for (int32_t i = 0; i < v.n; i++)
                        if (v.items[i].kind == A_BOOL && v.items[i].i)
                            return kiln__text_error(p, at, "window reversal is not supported");
                    continue;
                }
                if (!dict_add(p, &o->dict, key, v)) return false;
            } while (kiln__text_accept(p, ','));
            if (!kiln__text_expect(p, '}', "to close the window")) return false;
        }
        return attr_dict(p, o) && pretty_type(p, o);
    }
    case KILN_OP_REDUCE: {
        /* (%a init: %b), ... applies stablehlo.add across dimensions = [1] : type
           or ... across dimensions = [..] : type reducer(%a: T, %b: T) (...) { ... } */
        /* The inputs go to operands[0..k-1], the inits first to the upper half, then right
         * after the inputs (no arrays on the stack of a frame that regions nest in). */
        int32_t k = 0;
        kiln__value **ins = o->operands, **inits = o->operands + MAX_VALUES / 2;
        do {
            if (k >= MAX_VALUES / 2) return kiln__text_error(p, p->pos, "too many operands");
            if (!kiln__text_expect(p, '(', "to open a reduce operand")) return false;
            if (!(ins[k] = kiln__text_use_value(p))) return false;
            if (!kiln__text_expect_kw(p, "init", "in a reduce operand") ||
                !kiln__text_expect(p, ':', "after 'init'"))
                return false;
            if (!(inits[k] = kiln__text_use_value(p))) return false;
            if (!kiln__text_expect(p, ')', "to close a reduce operand")) return false;
            k++;
        } while (kiln__text_accept(p, ','));
        for (int32_t i = 0; i < k; i++)
            o->operands[k + i] = inits[i];
        o->n_operands = 2 * k;
        kiln_op body = KILN_OP_COUNT;
        size_t body_pos = 0;
        if (kiln__text_accept_kw(p, "applies")) {
            kiln__text_skip(p);
            body_pos = p->pos;
            const char *id;
            size_t len = kiln__text_ident(p, &id);
            if (len < 11 || memcmp(id, "stablehlo.", 10) != 0)
                return kiln__text_error(p, body_pos, "expected stablehlo.<op> after 'applies'");
            body = kiln__op_from_name(id + 10, len - 10);
            if (body == KILN_OP_COUNT || kiln__op_get_info(body)->n_operands != 2 ||
                !kiln__op_has(body, KILN_OPF_ELEMENTWISE))
                return kiln__text_error(p, body_pos, "unsupported reducer '%.*s'",
                                        (int)(len > 40 ? 40 : len), id);
        }
        if (!kiln__text_expect_kw(p, "across", "in a reduce") ||
            !kiln__text_expect_kw(p, "dimensions", "in a reduce") ||
            !kiln__text_expect(p, '=', "after dimensions"))
            return false;
        attr v = {0};
        kiln__text_skip(p);
        v.pos = p->pos;
        if (!kiln__text_expect(p, '[', "to open the list") || !kiln__text_int_list_attr(p, &v) ||
            !dict_add(p, &o->dict, "dimensions", v))
            return false;
        if (!attr_dict(p, o)) return false;
        if (!pretty_type(p, o)) return false;
        if (body != KILN_OP_COUNT) {
            /* build the region: ^bb0(acc.., x..): op per pair */
            if (k != 1) return kiln__text_error(p, body_pos, "'applies' needs one input");
            kiln__block *b = kiln__block_new(p->m, NULL);
            if (!b) return kiln__text_oom(p);
            kiln__type et = {.dtype = ins[0]->type->dtype, .shape = {.rank = 0}};
            kiln__value *x = kiln__block_add_arg(p->m, b, et),
                        *y = kiln__block_add_arg(p->m, b, et);
            if (!x || !y) return kiln__text_oom(p);
            kiln__value *xy[2] = {x, y};
            kiln__attrs ia = {0};
            ia.fn = "stablehlo.reduce";
            kiln__ir_op *op = kiln__block_append(p->m, b, body, &ia, xy, 2, &et, 1, 0);
            if (!op || kiln__block_set_results(p->m, b, op->results, 1) != KILN_OK)
                return kiln__text_oom(p);
            o->regions[o->n_regions++] = b;
        } else {
            /* reducer(%a: T, %c: T) (%b: T, %d: T) { ... } */
            if (!kiln__text_expect_kw(p, "reducer", "after the reduce's type")) return false;
            if (!with_region_args(p, o, reducer_region)) return false;
        }
        return true;
    }
    case KILN_OP_WHILE: return with_region_args(p, o, while_regions);
    case KILN_OP_OPTIMIZATION_BARRIER:
        if (kiln__text_accept(p, '(')) {
            if (!kiln__text_expect(p, ')', "after stablehlo.optimization_barrier(")) return false;
            o->s.n_in = o->s.n_out = 0;
            o->s.functional = true;
            o->have_sig = true;
            return true;
        }
        if (!operand_list(p, o->operands, &o->n_operands, NULL)) return false;
        if (!kiln__text_expect(p, ':', "before the op's types")) return false;
        if (!kiln__text_type_list(p, o->s.in, MAX_VALUES, &o->s.n_in)) return false;
        o->s.n_out = o->s.n_in;
        memcpy(o->s.out, o->s.in, (size_t)o->s.n_in * sizeof o->s.in[0]);
        o->s.functional = true;
        o->have_sig = true;
        return true;
    case KILN_OP_SELECT: {
        if (!operand_list(p, o->operands, &o->n_operands, NULL)) return false;
        if (!kiln__text_expect(p, ':', "before the op's type")) return false;
        kiln__text_skip(p);
        o->s.pos = p->pos;
        if (kiln__text_peek(p, '(')) {
            if (!kiln__text_functional_type(p, &o->s)) return false;
        } else {
            kiln__type t[2];
            int32_t nt;
            if (!kiln__text_type_list(p, t, 2, &nt)) return false;
            if (nt != 2)
                return kiln__text_error(p, o->s.pos, "select takes 'pred type, result type'");
            o->s.functional = true;
            o->s.n_in = 3;
            o->s.in[0] = t[0];
            o->s.in[1] = o->s.in[2] = o->s.out[0] = t[1];
            o->s.n_out = 1;
        }
        o->have_sig = true;
        return true;
    }
    default: break;
    }
    switch (kiln__op_syntax_get(o->kind)->form) {
    case KILN__FORM_PLAIN:
        return operand_list(p, o->operands, &o->n_operands, NULL) && pretty_type(p, o);
    case KILN__FORM_INLINE: return pretty_inline(p, o);
    default:
        return kiln__text_error(p, o->pos,
                                "stablehlo.%s has no pretty form here: use the generic form",
                                kiln__op_get_info(o->kind)->name);
    }
}

static const kiln_region *builtin_region(const kiln__block *b, kiln_op owner) {
    if (!b || b->n_args != 2 || b->n_results != 1 || !b->first || b->first != b->last) return NULL;
    const kiln__ir_op *op = b->first;
    if (op->n_operands != 2 || op->n_results != 1 || b->results[0] != op->results[0]) return NULL;
    bool same = op->operands[0] == b->args[0] && op->operands[1] == b->args[1];
    if (!same) return NULL;
    if (owner == KILN_OP_SORT || owner == KILN_OP_SELECT_AND_SCATTER) {
        if (op->kind != KILN_OP_COMPARE) return NULL;
        kiln_compare_type ct = op->attrs->u.compare.type;
        if (ct == KILN_CMP_TOTALORDER) return NULL;
        kiln_dtype key = op->operands[0]->type->dtype; /* complex: no builtin order */
        if (owner == KILN_OP_SORT && (kiln_dtype_is_float(key) || kiln_dtype_is_complex(key)))
            return NULL;
        switch (op->attrs->u.compare.direction) {
        case KILN_CMP_LT: return kiln_region_less();
        case KILN_CMP_GT: return kiln_region_greater();
        case KILN_CMP_GE: return kiln_region_greater_equal();
        case KILN_CMP_LE: return kiln_region_less_equal();
        default: return NULL;
        }
    }
    if (owner == KILN_OP_SORT) return NULL;
    switch (op->kind) {
    case KILN_OP_ADD: return kiln_region_add();
    case KILN_OP_MULTIPLY: return kiln_region_multiply();
    case KILN_OP_MAXIMUM: return kiln_region_maximum();
    case KILN_OP_MINIMUM: return kiln_region_minimum();
    case KILN_OP_AND: return kiln_region_and();
    case KILN_OP_OR: return kiln_region_or();
    default: return NULL;
    }
}

static kiln_status never_called(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                                void *user) {
    (void)args, (void)results, (void)user;
    return kiln_ctx_set_error(cx, KILN_INTERNAL, "internal: the parser called a region");
}

/* The check dialect */

/* Not inlined: its arrays live only while an op is appended, not while regions nest. */
/* The splat constant o (its scalar held as the module's last constant) as that scalar's
 * constant op in b, and o turned into the broadcast of it to o's type. */
static bool compact_splat(parser *p, kiln__block *b, opdesc *o) {
    kiln__attrs a;
    memset(&a, 0, sizeof a);
    a.fn = "stablehlo parser";
    a.u.constant = p->m->constants[p->m->n_constants - 1];
    kiln__type scalar = {.dtype = o->s.out[0].dtype, .shape = {.rank = 0}};
    kiln__ir_op *c = kiln__block_append(p->m, b, KILN_OP_CONSTANT, &a, NULL, 0, &scalar, 1, 0);
    if (!c) return kiln__text_oom(p);
    attr none = {.kind = A_ARRAY, .pos = o->pos};
    o->dict = (attr){0};
    o->value = CONSTANT_VALUE_NONE;
    o->kind = KILN_OP_BROADCAST_IN_DIM;
    o->operands[0] = c->results[0];
    o->n_operands = 1;
    o->s.in[0] = scalar;
    o->s.n_in = 1;
    o->s.functional = true;
    return dict_add(p, &o->dict, "broadcast_dimensions", none);
}

/* interpreter.run_parallel's programs = [[@f, @g], [@h, @i]]: replicas (outer) by
 * partitions (inner), every program taking an equal share of the operands and results. */
static bool run_parallel_grid(parser *p, const opdesc *o, kiln__attrs *a) {
    const attr *progs = kiln__text_dict_get(&o->dict, "programs");
    if (!progs || progs->kind != A_LIST || progs->n == 0)
        return kiln__text_error(p, o->pos, "interpreter.run_parallel needs programs = [[@f, ...]]");
    int32_t R = progs->n, P = -1;
    for (int32_t r = 0; r < R; r++) {
        const attr *row = &progs->items[r];
        if (row->kind != A_LIST || row->n == 0)
            return kiln__text_error(p, row->pos,
                                    "programs: each replica needs a list of functions");
        if (P >= 0 && row->n != P)
            return kiln__text_error(p, row->pos, "programs: every replica needs %d partitions",
                                    (int)P);
        P = row->n;
        for (int32_t k = 0; k < P; k++)
            if (row->items[k].kind != A_SYM)
                return kiln__text_error(p, row->items[k].pos, "programs: expected @function");
    }
    if ((int64_t)R * P > KILN_COMM_MAX_PROCESSES)
        return kiln__text_error(p, o->pos, "interpreter.run_parallel: at most %d processes",
                                KILN_COMM_MAX_PROCESSES);
    int32_t n = R * P;
    if (o->n_operands % n || o->s.n_out % n)
        return kiln__text_error(p, o->pos,
                                "interpreter.run_parallel: %d operands and %d results do not split "
                                "evenly over %d programs (kiln needs programs of one arity)",
                                (int)o->n_operands, (int)o->s.n_out, (int)n);
    a->u.grid.num_replicas = R;
    a->u.grid.num_partitions = P;
    a->u.grid.n_args = o->n_operands / n;
    a->u.grid.n_results = o->s.n_out / n;
    a->n_results = o->s.n_out;
    return true;
}

/* One late-bound call per program: region r gets a copy of program r. */
static bool run_parallel_calls(parser *p, const opdesc *o, kiln__ir_op *op) {
    const attr *progs = kiln__text_dict_get(&o->dict, "programs");
    int32_t r = 0;
    for (int32_t i = 0; i < progs->n; i++)
        for (int32_t k = 0; k < progs->items[i].n; k++, r++) {
            const attr *f = &progs->items[i].items[k];
            pcall *calls =
                kiln__text_grow(p, p->calls, &p->cap_calls, p->n_calls, sizeof *calls, 8, true);
            if (!calls) return false;
            p->calls = calls;
            p->calls[p->n_calls++] = (pcall){op, f->text, f->len, f->pos, r};
        }
    return true;
}

static __attribute__((noinline)) bool append_op(parser *p, kiln__block *b, opdesc *o, lhs *l) {
    if (o->kind == KILN_OP_CONSTANT && o->value == CONSTANT_VALUE_SPLAT && !compact_splat(p, b, o))
        return false;
    const kiln__op_info *info = kiln__op_get_info(o->kind);
    char tb[80], tb2[80];
    if (!o->have_sig) return kiln__text_error(p, o->pos, "missing type");
    /* operand types */
    if (o->s.functional) {
        if (o->s.n_in != o->n_operands)
            return kiln__text_error(p, o->s.pos, "%d operands but %d operand types",
                                    (int)o->n_operands, (int)o->s.n_in);
    } else {
        /* one type: the operands', or their parts' (stablehlo.complex) */
        kiln__type in = o->s.out[0];
        kiln__type_form form = kiln__op_syntax_get(o->kind)->type;
        if (form == KILN__TYPE_PARTS) in.dtype = kiln_dtype_component(in.dtype);
        const kiln__tuple_type *tt = kiln__is_tuple(&in) ? in.tuple : NULL;
        if (form == KILN__TYPE_TUPLE && (!tt || tt->n != o->n_operands))
            return kiln__text_error(p, o->s.pos,
                                    "stablehlo.%s of %d operands needs a tuple type "
                                    "of as many elements",
                                    info->name, (int)o->n_operands);
        o->s.n_in = o->n_operands;
        for (int32_t i = 0; i < o->n_operands; i++)
            o->s.in[i] = form == KILN__TYPE_TUPLE ? tt->elems[i] : in;
        if (info->n_results >= 0 && info->n_results != 1)
            return kiln__text_error(p, o->s.pos, "stablehlo.%s needs a function type", info->name);
    }
    for (int32_t i = 0; i < o->n_operands; i++)
        if (!kiln__text_same_type(o->operands[i]->type, &o->s.in[i]))
            return kiln__text_error(
                p, o->s.pos, "type mismatch: operand %d is %s, the op's type says %s", (int)i,
                kiln__text_type_str(o->operands[i]->type, tb, sizeof tb),
                kiln__text_type_str(&o->s.in[i], tb2, sizeof tb2));
    if (info->n_operands >= 0 && o->n_operands != info->n_operands)
        return kiln__text_error(p, o->pos, "stablehlo.%s takes %d operands, got %d", info->name,
                                info->n_operands, (int)o->n_operands);
    if (info->n_results >= 0 && o->s.n_out != info->n_results)
        return kiln__text_error(p, o->s.pos, "stablehlo.%s has %d results, the type gives %d",
                                info->name, info->n_results, (int)o->s.n_out);
    if (l->count >= 0 && l->count != o->s.n_out)
        return kiln__text_error(p, o->pos, "%d results named but the op has %d", (int)l->count,
                                (int)o->s.n_out);
    kiln__attrs a;
    memset(&a, 0, sizeof a);
    a.fn = "stablehlo parser";
    if (!kiln__text_build_attrs(p, o->kind, &o->dict, o->pos, o->s.in, o->s.n_in, o->s.out,
                                o->s.n_out, &a))
        return false;
    if (o->kind == KILN_OP_CUSTOM_CALL) a.u.constant = o->record;
    if (o->kind == KILN_OP_TUPLE && o->s.n_out == 1 &&
        !(a.u.tuple_type = kiln__module_type(p->m, &o->s.out[0])))
        return kiln__text_oom(p);
    if (o->kind == KILN_OP_CALL && o->record) { /* a composite */
        a.u.constant = o->record;
        a.mark = KILN__MARK_COMPOSITE;
    }
    if (o->kind == KILN_OP_CONSTANT) {
        if (o->value != CONSTANT_VALUE_HELD)
            return kiln__text_error(p, o->pos, "a constant needs a value");
        a.u.constant = p->m->constants[p->m->n_constants - 1];
    }
    /* calls and run_parallel get their regions (copies of functions) once all are read */
    bool late = o->kind == KILN_OP_CALL || o->kind == KILN_OP_RUN_PARALLEL;
    bool regions_op = kiln__op_has(o->kind, KILN_OPF_REGIONS) || late;
    if (!regions_op && o->n_regions)
        return kiln__text_error(p, o->pos, "stablehlo.%s has no regions", info->name);
    int32_t want_regions = o->n_regions;
    switch (o->kind) {
    case KILN_OP_SORT:
    case KILN_OP_REDUCE:
    case KILN_OP_REDUCE_WINDOW:
    case KILN_OP_SCATTER:
    case KILN_OP_MAP: want_regions = 1; break;
    case KILN_OP_SELECT_AND_SCATTER:
    case KILN_OP_WHILE:
    case KILN_OP_IF: want_regions = 2; break;
    case KILN_OP_CALL: want_regions = 1; break;
    case KILN_OP_ALL_REDUCE:
    case KILN_OP_REDUCE_SCATTER:
    case KILN_OP_COLLECTIVE_REDUCE: want_regions = 1; break;
    case KILN_OP_RUN_PARALLEL:
        if (!run_parallel_grid(p, o, &a)) return false;
        want_regions = a.u.grid.num_replicas * a.u.grid.num_partitions;
        break;
    case KILN_OP_CASE:
        if (o->n_regions < 1)
            return kiln__text_error(p, o->pos, "stablehlo.case needs at least one branch");
        break;
    default: break;
    }
    if (!late && o->n_regions != want_regions)
        return kiln__text_error(p, o->pos, "stablehlo.%s needs %d regions, got %d", info->name,
                                (int)want_regions, (int)o->n_regions);
    a.n_regions = want_regions;
    for (int32_t r = 0; r < want_regions && r < 2 && !late; r++)
        a.region[r] = builtin_region(o->regions[r], o->kind);
    kiln__ir_op *op = kiln__block_append(p->m, b, o->kind, &a, o->operands, o->n_operands, o->s.out,
                                         o->s.n_out, want_regions);
    if (!op) return kiln__text_oom(p);
    for (int32_t r = 0; r < o->n_regions && !late; r++) {
        op->regions[r] = o->regions[r];
        o->regions[r]->parent = op;
    }
    /* region signatures */
    for (int32_t r = 0; r < o->n_regions && !late; r++) {
        kiln__type *args = kiln__text_leaf_types(p);
        if (!args) return false;
        int32_t n_res = 0;
        int32_t n = kiln__region_signature(p->cx, o->kind, op->attrs, o->s.in, o->n_operands, r,
                                           args, MAX_VALUES, &n_res);
        if (n < 0) return kiln__text_error(p, o->pos, "%s", kiln_ctx_error_message(p->cx));
        const kiln__block *rb = o->regions[r];
        if (rb->n_args != n)
            return kiln__text_error(p, o->pos,
                                    "region %d of stablehlo.%s takes %d arguments, got %d",
                                    (int)r + 1, info->name, (int)n, (int)rb->n_args);
        for (int32_t i = 0; i < n; i++)
            if (!kiln__text_same_type(rb->args[i]->type, &args[i]))
                return kiln__text_error(p, o->pos,
                                        "region %d argument %d of stablehlo.%s is %s; expected %s",
                                        (int)r + 1, (int)i, info->name,
                                        kiln__text_type_str(rb->args[i]->type, tb, sizeof tb),
                                        kiln__text_type_str(&args[i], tb2, sizeof tb2));
        if (rb->n_results != n_res)
            return kiln__text_error(p, o->pos,
                                    "region %d of stablehlo.%s returns %d values; expected %d",
                                    (int)r + 1, info->name, (int)rb->n_results, (int)n_res);
        if (o->kind == KILN_OP_IF || o->kind == KILN_OP_CASE ||
            (o->kind == KILN_OP_WHILE && r == 1)) {
            for (int32_t i = 0; i < n_res; i++)
                if (!kiln__text_same_type(rb->results[i]->type, &o->s.out[i]))
                    return kiln__text_error(
                        p, o->pos,
                        "region %d of stablehlo.%s returns %s as result %d; the op's type says %s",
                        (int)r + 1, info->name,
                        kiln__text_type_str(rb->results[i]->type, tb, sizeof tb), (int)i,
                        kiln__text_type_str(&o->s.out[i], tb2, sizeof tb2));
        }
        if (o->kind == KILN_OP_WHILE && r == 0 &&
            (rb->results[0]->type->dtype != KILN_BOOL || rb->results[0]->type->shape.rank != 0))
            return kiln__text_error(p, o->pos,
                                    "the condition of stablehlo.while must return tensor<i1>");
    }
    if (o->kind == KILN_OP_WHILE)
        for (int32_t i = 0; i < o->n_operands; i++)
            if (!kiln__text_same_type(&o->s.in[i], &o->s.out[i]))
                return kiln__text_error(p, o->s.pos,
                                        "stablehlo.while results must match its operands");
    /* inference */
    if (!kiln__op_has(o->kind, KILN_OPF_CONTROL) && !late) {
        kiln__attrs bound;
        kiln_region storage[MAX_VALUES];
        kiln__ir_bind_regions(op, &bound, storage, never_called);
        kiln__type *out = kiln__text_leaf_types(p);
        if (!out) return false;
        if (kiln__infer(p->cx, o->kind, &bound, o->s.in, o->n_operands, out, o->s.n_out) !=
            KILN_OK) {
            char msg[400];
            snprintf(msg, sizeof msg, "%s", kiln_ctx_error_message(p->cx));
            return kiln__text_error(p, o->pos, "%s", msg);
        }
        for (int32_t i = 0; i < o->s.n_out; i++)
            if (!kiln__text_same_type(&out[i], &o->s.out[i]))
                return kiln__text_error(
                    p, o->s.pos,
                    "type mismatch: stablehlo.%s result %d is %s, the op's type says %s",
                    info->name, (int)i, kiln__text_type_str(&out[i], tb, sizeof tb),
                    kiln__text_type_str(&o->s.out[i], tb2, sizeof tb2));
    }
    if (o->kind == KILN_OP_CALL) {
        pcall *calls =
            kiln__text_grow(p, p->calls, &p->cap_calls, p->n_calls, sizeof *calls, 8, true);
        if (!calls) return false;
        p->calls = calls;
        p->calls[p->n_calls++] = (pcall){op, o->callee, o->callee_len, o->callee_pos, 0};
    }
    if (o->kind == KILN_OP_RUN_PARALLEL && !run_parallel_calls(p, o, op)) return false;
    /* names */
    if (l->grouped) {
        if (!kiln__text_define(p, l->pos[0], l->names[0], l->lens[0], op->results, op->n_results))
            return false;
    } else {
        for (int32_t i = 0; i < l->n_names; i++)
            if (!kiln__text_define(p, l->pos[i], l->names[i], l->lens[i], &op->results[i], 1))
                return false;
    }
    return true;
}

/* An op's scratch (its left-hand side and description, some 160 KB of arrays) comes from
 * the parser's free list: one per nesting level is made for the whole parse, instead of an
 * allocation per op, and only the fields before the arrays are cleared. */
static op_scratch *scratch_get(parser *p) {
    op_scratch *s = p->free_scratch;
    if (s)
        p->free_scratch = s->next;
    else if (!(s = kiln__alloc(p->cx, sizeof *s, _Alignof(op_scratch), "parser op")))
        return NULL;
    lhs *l = &s->l;
    l->n_names = 0, l->count = -1, l->grouped = false;
    opdesc *o = &s->o;
    o->kind = (kiln_op)0, o->pos = 0, o->n_operands = 0, o->n_regions = 0;
    memset(&o->dict, 0, sizeof o->dict);
    o->value = CONSTANT_VALUE_NONE;
    o->s.n_in = o->s.n_out = 0, o->s.functional = false, o->s.pos = 0;
    o->have_sig = false, o->callee = NULL, o->callee_len = 0, o->callee_pos = 0;
    o->record = NULL;
    return s;
}

static void scratch_put(parser *p, op_scratch *s) {
    s->next = p->free_scratch;
    p->free_scratch = s;
}

/* One op line (not a terminator). */
bool kiln__text_operands(parser *p, kiln__value **out, int32_t *n, int32_t cap) {
    kiln__value *vals[MAX_VALUES];
    if (!operand_list(p, vals, n, NULL)) return false;
    if (*n > cap) return kiln__text_error(p, p->pos, "too many operands (at most %d)", (int)cap);
    memcpy(out, vals, (size_t)*n * sizeof *out);
    return true;
}

static bool op_line(parser *p, kiln__block *b) {
    op_scratch *scratch = scratch_get(p);
    if (!scratch) return kiln__text_oom(p);
    lhs *l = &scratch->l;
    opdesc *o = &scratch->o;
    bool ok = true;
    kiln__text_skip(p);
    if (ch(p) == '%') {
        l->count = 0;
        do {
            if (l->n_names >= MAX_VALUES) {
                ok = kiln__text_error(p, p->pos, "too many results");
                break;
            }
            kiln__text_skip(p);
            l->pos[l->n_names] = p->pos;
            if (!kiln__text_value_name(p, &l->names[l->n_names], &l->lens[l->n_names])) {
                ok = false;
                break;
            }
            l->n_names++;
            if (ch(p) == ':') {
                p->pos++;
                int64_t c;
                if (!kiln__text_int64_lit(p, &c, "result count") || c < 1 || c > MAX_VALUES) {
                    ok = kiln__text_error(p, p->pos, "bad result count");
                    break;
                }
                if (l->n_names != 1 || kiln__text_peek(p, ',')) {
                    ok = kiln__text_error(p, p->pos, "%%name:N names all of an op's results");
                    break;
                }
                l->grouped = true;
                l->count = (int32_t)c;
            } else {
                l->count++;
            }
        } while (kiln__text_accept(p, ','));
        if (ok) ok = kiln__text_expect(p, '=', "after the result names");
    }
    if (ok) {
        kiln__text_skip(p);
        o->pos = p->pos;
        const char *id;
        size_t len;
        bool generic = false;
        if (ch(p) == '"') {
            generic = true;
            ok = kiln__text_string_lit(p, &id, &len);
        } else {
            len = kiln__text_ident(p, &id);
            if (!len) {
                char buf[16];
                ok = kiln__text_error(p, o->pos, "expected an operation, found %s",
                                      kiln__text_char_text(p, buf));
            }
        }
        if (ok) {
            if (span_is(id, len, "func.call") || span_is(id, len, "call")) {
                kiln__text_skip(p);
                o->callee_pos = p->pos;
                o->kind = KILN_OP_CALL;
                if (!kiln__text_expect(p, '@', "before the callee"))
                    ok = false;
                else if (kiln__text_peek(p, '"'))
                    ok = kiln__text_string_lit(p, &o->callee, &o->callee_len);
                else if (!(o->callee_len = kiln__text_ident(p, &o->callee)))
                    ok = kiln__text_error(p, o->callee_pos, "expected the callee's name");
                ok = ok && kiln__text_expect(p, '(', "to open the call's operands") &&
                     operand_list(p, o->operands, &o->n_operands, NULL) &&
                     kiln__text_expect(p, ')', "to close the call's operands") &&
                     kiln__text_expect(p, ':', "before the call's type") &&
                     kiln__text_functional_type(p, &o->s);
                if (ok && !o->s.functional)
                    ok = kiln__text_error(p, o->s.pos, "a call needs a function type");
                o->have_sig = ok;
                if (ok) ok = append_op(p, b, o, l);
            } else if (span_is(id, len, "stablehlo.composite")) {
                o->kind = KILN_OP_CALL;
                ok = kiln__text_composite(p, o->pos, generic, o->operands, &o->n_operands, &o->s,
                                          &o->record, &o->callee, &o->callee_len, &o->callee_pos);
                o->have_sig = ok;
                if (ok) ok = append_op(p, b, o, l);
            } else if (span_is(id, len, "interpreter.run_parallel")) {
                o->kind = KILN_OP_RUN_PARALLEL;
                ok = generic ? generic_op(p, o)
                             : kiln__text_error(p, o->pos,
                                                "write interpreter.run_parallel in "
                                                "the generic form (\"...\"(...))");
                if (ok) ok = append_op(p, b, o, l);
            } else if (span_is(id, len, "sdy.manual_computation")) {
                ok = generic ? kiln__text_error(p, o->pos,
                                                "write sdy.manual_computation in its "
                                                "pretty form")
                             : kiln__text_sdy_manual(p, b, o->pos, l->names, l->lens, l->pos,
                                                     l->n_names, l->count, l->grouped);
            } else if (generic && span_is(id, len, "stablehlo.dot")) {
                o->kind = KILN_OP_DOT_GENERAL;
                ok = generic_op(p, o) && dot_as_dot_general(p, o) && append_op(p, b, o, l);
            } else if (len > 5 && memcmp(id, "chlo.", 5) == 0) {
                ok = kiln__text_chlo(p, b, o->pos, generic, id, len, l->names, l->lens, l->pos,
                                     l->n_names);
            } else if (len > 6 && memcmp(id, "check.", 6) == 0) {
                if (l->count >= 0)
                    ok = kiln__text_error(p, o->pos, "check ops have no results");
                else
                    ok = kiln__text_check_op(p, o->pos, id, len, false);
            } else if (span_is(id, len, "stablehlo.custom_call")) {
                kiln__text_skip(p);
                size_t at = p->pos;
                const char *target = NULL;
                size_t tlen = 0;
                if (!generic && !kiln__text_accept(p, '@'))
                    ok = kiln__text_error(p, at,
                                          "expected '@' and the target after "
                                          "stablehlo.custom_call");
                else if (!generic && !kiln__text_symbol_name(p, &target, &tlen, "the target"))
                    ok = false;
                if (ok && tlen > 6 && memcmp(target, "check.", 6) == 0) {
                    if (l->count > 0)
                        ok = kiln__text_error(p, o->pos, "check ops have no results");
                    else
                        ok = kiln__text_check_op(p, at, target, tlen, true);
                } else if (ok) {
                    o->kind = KILN_OP_CUSTOM_CALL;
                    o->record = NULL;
                    ok = kiln__text_custom_call(p, o->pos, generic, target, tlen, o->operands,
                                                &o->n_operands, &o->s, &o->record);
                    o->have_sig = ok;
                    if (ok) ok = append_op(p, b, o, l);
                }
            } else {
                kiln_op kind = KILN_OP_COUNT;
                if (len > 10 && memcmp(id, "stablehlo.", 10) == 0)
                    kind = kiln__op_from_name(id + 10, len - 10);
                if (kind == KILN_OP_COUNT || kind == KILN_OP_CALL) {
                    ok = kiln__text_error(p, o->pos, "unknown op '%.*s'",
                                          (int)(len > 60 ? 60 : len), id);
                } else {
                    o->kind = kind;
                    ok = generic ? generic_op(p, o) : pretty_op(p, o, NULL);
                    if (ok && generic && kind == KILN_OP_CONSTANT) {
                        const attr *v = kiln__text_dict_get(&o->dict, "value");
                        ok = kiln__text_error(
                            p, o->pos,
                            v ? "generic stablehlo.constant is not supported: use the pretty form"
                              : "a constant needs a value");
                    }
                    if (ok) ok = append_op(p, b, o, l);
                }
            }
        }
    }
    scratch_put(p, scratch);
    return ok;
}

/* A block's terminator after its keyword (or, generic, at its quoted name): the returned
 * values, their types, and the closing brace. Not inlined: its arrays (some 80 KB) then
 * live only while a terminator is read, not in every nesting level of block_body. */
static __attribute__((noinline)) bool block_terminator(parser *p, kiln__block *b, bool generic) {
    if (generic) {
        const char *s;
        size_t l;
        kiln__text_string_lit(p, &s, &l);
        kiln__value *vals[MAX_VALUES];
        int32_t n = 0;
        if (!kiln__text_expect(p, '(', "to open the operands") ||
            !operand_list(p, vals, &n, NULL) || !kiln__text_expect(p, ')', "to close the operands"))
            return false;
        if (!kiln__text_expect(p, ':', "before the type") || !kiln__text_skip_functional_type(p))
            return false;
        if (kiln__block_set_results(p->m, b, vals, n) != KILN_OK) return kiln__text_oom(p);
        return kiln__text_expect(p, '}', "after the terminator");
    }
    kiln__value *vals[MAX_VALUES];
    int32_t n = 0;
    kiln__text_skip(p);
    if (!operand_list(p, vals, &n, NULL)) return false;
    if (n > 0) {
        if (!kiln__text_expect(p, ':', "before the returned types")) return false;
        kiln__type *ts = kiln__text_leaf_types(p);
        int32_t nt;
        size_t tp = p->pos;
        if (!ts || !kiln__text_type_list(p, ts, MAX_VALUES, &nt)) return false;
        if (nt != n)
            return kiln__text_error(p, tp, "%d values returned but %d types", (int)n, (int)nt);
        char tb[80], tb2[80];
        for (int32_t i = 0; i < n; i++)
            if (!kiln__text_same_type(vals[i]->type, &ts[i]))
                return kiln__text_error(p, tp,
                                        "type mismatch: returned value %d is %s, declared %s",
                                        (int)i, kiln__text_type_str(vals[i]->type, tb, sizeof tb),
                                        kiln__text_type_str(&ts[i], tb2, sizeof tb2));
    }
    if (kiln__block_set_results(p->m, b, vals, n) != KILN_OK) return kiln__text_oom(p);
    return kiln__text_expect(p, '}', "after the terminator");
}

/* Ops up to the terminator, then '}'. */
bool kiln__text_block_body(parser *p, kiln__block *b, bool function, size_t open_pos) {
    for (;;) {
        kiln__text_skip(p);
        if (p->pos >= p->n)
            return kiln__text_error(p, open_pos, "unterminated region: expected '}'");
        if (ch(p) == '}')
            return kiln__text_error(p, p->pos, "missing terminator (%s) before '}'",
                                    function ? "return" : "stablehlo.return");
        size_t at = p->pos;
        bool term = false;
        if (kiln__text_accept_kw(p, "stablehlo.return")) {
            if (function)
                return kiln__text_error(
                    p, at, "stablehlo.return ends a region, not a function: use return");
            term = true;
        } else if (kiln__text_accept_kw(p, "func.return") || kiln__text_accept_kw(p, "return")) {
            if (!function)
                return kiln__text_error(
                    p, at, "return ends a function; a region ends with stablehlo.return");
            term = true;
        } else if (ch(p) == '"' && (p->n - p->pos > 18) &&
                   (memcmp(p->s + p->pos, "\"stablehlo.return\"", 18) == 0 ||
                    memcmp(p->s + p->pos, "\"func.return\"", 13) == 0)) {
            return block_terminator(p, b, true);
        }
        if (term) return block_terminator(p, b, false);
        if (!op_line(p, b)) return false;
    }
}

void kiln__text_ops_free(parser *p) {
    if (p->names) kiln__free(p->cx, p->names, (size_t)p->cap_names * sizeof *p->names);
    if (p->name_heads)
        kiln__free(p->cx, p->name_heads, (size_t)p->cap_heads * sizeof *p->name_heads);
    while (p->free_scratch) {
        op_scratch *next = p->free_scratch->next;
        kiln__free(p->cx, p->free_scratch, sizeof *p->free_scratch);
        p->free_scratch = next;
    }
    p->names = NULL;
    p->name_heads = NULL;
}

bool kiln__text_op_line(parser *p, kiln__block *b) { return op_line(p, b); }
