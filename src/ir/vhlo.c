/* SPDX-License-Identifier: Apache-2.0 */
/* VHLO ops to StableHLO text (vhlo.h): the IR section's walk, the value scopes, and one
 * table row per VHLO op kiln runs, naming the StableHLO op, the op's attributes in the
 * order its properties store them (sorted by name, as MLIR's generated writers emit them)
 * and how they are written back as StableHLO attributes. Regions nest in the text as they
 * nest in the bytecode; value ids become names unique to their scope (%vS_I). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ir/vhlo.h"
#include "kiln/dtype.h"
#include "kiln/parse.h"
#include "ops/op.h"
#include "ops/op_syntax.h"

#define MAX_ATTRS 32
#define MAX_DIMS 64
#define MAX_IO (MAX_ATTRS * 4) /* operands or results of one op */
/* Regions nest at most this deep (the text parser's own bound is lower). */
#define MAX_DEPTH 200

typedef struct named {
    const char *name;
    uint32_t index;
} named;

typedef struct xlator xlator;

/* F_COMPOSITE: stablehlo.composite, a named op given by its decomposition function, which
 * kiln calls (what the op computes is the decomposition's). */
typedef enum op_form {
    F_GENERIC,
    F_CONSTANT,
    F_FUNC,
    F_RETURN,
    F_CALL,
    F_COMPOSITE,
    F_SDY_MANUAL, /* Shardy's ops, and the casts between VHLO's types and builtin ones */
    F_SDY_RETURN,
    F_CAST,
    F_CUSTOM_CALL, /* every attribute written as text (ops/custom_call.h keeps them) */
    F_DOT,         /* the deprecated dot: dot_general contracting lhs's last with rhs's first */
} op_form;

typedef struct vop {
    const char *vhlo;      /* without "vhlo." */
    const char *stablehlo; /* the op written */
    op_form form;
    bool accuracy;                /* has result_accuracy (checked, not kept) */
    const char *names[MAX_ATTRS]; /* sorted: the properties' order */
} vop;

/* One value scope: an isolated region's values, numbered from 0. */
typedef struct scope {
    uint32_t serial;   /* in the names: %v<serial>_<id> */
    uint32_t reserved; /* ids taken by the open regions */
    uint32_t *types;   /* per id: its type index, or UINT32_MAX before it is defined */
    uint32_t *aliases; /* per id: the id written for it (a cast's result is its operand) */
    uint32_t cap;      /* of both (one block of 2 x cap) */
} scope;

struct xlator {
    kiln__bc *bc;
    kiln__strbuf *sb;
    const char *only_func;
    uint32_t builtin, vhlo; /* dialect indices (UINT32_MAX if absent) */
    scope *sc;
    uint32_t next_serial;
    int depth;
    bool skip;            /* inside a function only_func excludes: nothing is written */
    size_t at;            /* the op being written, for errors */
    kiln__strbuf scratch; /* a Shardy attribute's text (attr_text) */
    int64_t expect_args;  /* a function body's argument count, or -1 */
};

/* ---- writing ------------------------------------------------------------------------------ */

static void put(xlator *x, const char *s) {
    if (!x->skip) kiln__strbuf_puts(x->sb, s);
}

static void putf(xlator *x, const char *fmt, ...) KILN_PRINTF_LIKE(2, 3);
static void putf(xlator *x, const char *fmt, ...) {
    if (x->skip) return;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof buf)
        kiln__strbuf_append(x->sb, buf, (size_t)n);
    else
        kiln__strbuf_puts(x->sb, "?");
}

static void indent(xlator *x) {
    for (int i = 0; i < x->depth && i < 40; i++)
        put(x, "  ");
}

static bool type_text(xlator *x, uint32_t type) {
    if (x->skip) return true;
    return kiln__vhlo_type_text(x->bc, x->sb, type);
}

/* A symbol (after its '@'): bare when it is an identifier, else quoted ("<lambda>"). */
static void symbol(xlator *x, const char *s, size_t len) {
    bool bare = len > 0 && !(s[0] >= '0' && s[0] <= '9');
    for (size_t i = 0; i < len && bare; i++) {
        char c = s[i];
        bare = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '.' || c == '$';
    }
    if (bare) {
        if (!x->skip) kiln__strbuf_append(x->sb, s, len);
        return;
    }
    put(x, "\"");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f)
            putf(x, "\\%02X", c);
        else if (!x->skip)
            kiln__strbuf_append(x->sb, (const char *)&s[i], 1);
    }
    put(x, "\"");
}

static void value_name(xlator *x, uint32_t id) {
    putf(x, "%%v%u_%u", x->sc->serial, x->sc->aliases ? x->sc->aliases[id] : id);
}

/* ---- attributes --------------------------------------------------------------------------- */

static const named *find(const named *a, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(a[i].name, name) == 0) return &a[i];
    return NULL;
}

static bool get(xlator *x, const named *a, int n, const char *name, kiln__vattr *out) {
    const named *e = find(a, n, name);
    if (!e) return kiln__bc_fail(x->bc, x->at, "missing attribute '%s'", name);
    return kiln__vhlo_attr(x->bc, e->index, out);
}

static bool get_int(xlator *x, const named *a, int n, const char *name, int64_t *out) {
    kiln__vattr v = {0};
    if (!get(x, a, n, name, &v)) return false;
    if (v.kind != KILN__VA_INT)
        return kiln__bc_fail(x->bc, x->at, "attribute '%s' is not an integer", name);
    kiln__vtype t = {0};
    if (!kiln__vhlo_type(x->bc, v.type, &t)) return false;
    unsigned w =
        t.kind == KILN__VT_ELEMENT ? (unsigned)kiln_dtype_size((kiln_dtype)t.dtype) * 8 : 64;
    uint64_t bits = v.value;
    bool is_signed = t.kind == KILN__VT_ELEMENT && t.dtype >= KILN_I8 && t.dtype <= KILN_I64;
    if (is_signed && w < 64 && (bits >> (w - 1)) & 1) bits |= ~UINT64_C(0) << w;
    *out = (int64_t)bits;
    return true;
}

static bool get_bool(xlator *x, const named *a, int n, const char *name, bool *out) {
    kiln__vattr v = {0};
    if (!get(x, a, n, name, &v)) return false;
    if (v.kind != KILN__VA_BOOL)
        return kiln__bc_fail(x->bc, x->at, "attribute '%s' is not a boolean", name);
    *out = v.value;
    return true;
}

static bool get_ints(xlator *x, const named *a, int n, const char *name, int64_t *out,
                     int32_t *count, kiln__vtype *type) {
    kiln__vattr v = {0};
    return get(x, a, n, name, &v) && kiln__vhlo_tensor_ints(x->bc, &v, out, MAX_DIMS, count, type);
}

static void sep(xlator *x, bool *first) {
    if (!*first) put(x, ", ");
    *first = false;
}

static void int_list(xlator *x, const int64_t *v, int32_t n) {
    put(x, "[");
    for (int32_t i = 0; i < n; i++)
        putf(x, "%s%" PRId64, i ? ", " : "", v[i]);
    put(x, "]");
}

/* name = array<i64: ...> */
static bool array_attr(xlator *x, const named *a, int n, const char *name, bool *first) {
    int64_t v[MAX_DIMS];
    int32_t count;
    if (!get_ints(x, a, n, name, v, &count, NULL)) return false;
    sep(x, first);
    putf(x, "%s = array<i64", name);
    for (int32_t i = 0; i < count; i++)
        putf(x, "%s%" PRId64, i ? ", " : ": ", v[i]);
    put(x, ">");
    return true;
}

/* name = dense<[[lo, hi], ...]> : tensor<Nx2xi64> */
static bool padding_attr(xlator *x, const named *a, int n, const char *name, bool *first) {
    int64_t v[MAX_DIMS];
    int32_t count;
    kiln__vtype t = {0};
    if (!get_ints(x, a, n, name, v, &count, &t)) return false;
    if (t.rank != 2 || t.dims[1] != 2)
        return kiln__bc_fail(x->bc, x->at, "'%s' is not an N x 2 list", name);
    sep(x, first);
    putf(x, "%s = dense<", name);
    if (count == 0) {
        put(x, "");
    } else {
        put(x, "[");
        for (int32_t i = 0; i < count / 2; i++)
            putf(x, "%s[%" PRId64 ", %" PRId64 "]", i ? ", " : "", v[2 * i], v[2 * i + 1]);
        put(x, "]");
    }
    putf(x, "> : tensor<%" PRId64 "x2xi64>", t.dims[0]);
    return true;
}

static bool int_attr(xlator *x, const named *a, int n, const char *name, bool *first) {
    int64_t v;
    if (!get_int(x, a, n, name, &v)) return false;
    sep(x, first);
    putf(x, "%s = %" PRId64 " : i64", name, v);
    return true;
}

static bool bool_attr(xlator *x, const named *a, int n, const char *name, bool *first) {
    bool v = false;
    if (!get_bool(x, a, n, name, &v)) return false;
    sep(x, first);
    putf(x, "%s = %s", name, v ? "true" : "false");
    return true;
}

/* replica_groups = dense<[[0, 1]]> : tensor<1x2xi64> from a VHLO tensor */
static bool groups_attr(xlator *x, const named *a, int n, const char *name, bool *first) {
    int64_t v[KILN__MAX_GROUP_IDS];
    int32_t count;
    kiln__vattr t = {0};
    kiln__vtype type = {0};
    if (!get(x, a, n, name, &t) ||
        !kiln__vhlo_tensor_ints(x->bc, &t, v, KILN__MAX_GROUP_IDS, &count, &type))
        return false;
    if (type.rank != 2) return kiln__bc_fail(x->bc, x->at, "'%s' is not a 2-d tensor", name);
    sep(x, first);
    putf(x, "%s = dense<", name);
    for (int64_t r = 0; r < type.dims[0] && count > 0; r++) {
        put(x, r ? ", [" : "[[");
        for (int64_t c = 0; c < type.dims[1]; c++)
            putf(x, "%s%" PRId64, c ? ", " : "", v[r * type.dims[1] + c]);
        put(x, "]");
    }
    if (count > 0) put(x, "]");
    putf(x, "> : tensor<%" PRId64 "x%" PRId64 "xi64>", type.dims[0], type.dims[1]);
    return true;
}

/* VHLO's channel_id as StableHLO's channel handle (left out when 0). */
static bool channel_attr(xlator *x, const named *a, int n, bool *first) {
    int64_t id = 0;
    if (find(a, n, "channel_id") && !get_int(x, a, n, "channel_id", &id)) return false;
    if (id == 0) return true;
    sep(x, first);
    putf(x, "channel_handle = #stablehlo.channel_handle<handle = %" PRId64 ", type = %d>", id,
         id > 0 ? 1 : 0);
    return true;
}

/* A VHLO boolean as a unit attribute (written only when true). */
static bool unit_attr(xlator *x, const named *a, int n, const char *name, bool *first) {
    bool v = false;
    if (find(a, n, name) && !get_bool(x, a, n, name, &v)) return false;
    if (v) {
        sep(x, first);
        put(x, name);
    }
    return true;
}

/* Ops whose only attribute says how accurate a transcendental must be. kiln has one
 * implementation of each (within about an ulp, SLEEF's u10 and kiln's own sin and cos),
 * which is the most accurate it has: the attribute is read and, as the text parser does,
 * not kept. */
static bool check_accuracy(xlator *x, const named *a, int n) {
    kiln__vattr v = {0};
    if (!get(x, a, n, "result_accuracy", &v)) return false;
    if (v.kind != KILN__VA_RESULT_ACCURACY)
        return kiln__bc_fail(x->bc, x->at, "result_accuracy is not a ResultAccuracy attribute");
    return true;
}

static bool enum_attr(xlator *x, const named *a, int n, const kiln__attr_desc *d, bool *first) {
    kiln__vattr v = {0};
    if (!get(x, a, n, d->name, &v)) return false;
    if (v.kind != KILN__VA_ENUM || v.value >= (uint64_t)d->n_enum)
        return kiln__bc_fail(x->bc, x->at, "bad %s", d->name);
    sep(x, first);
    putf(x, "%s = #stablehlo<%s %s>", d->name, d->mnemonic, d->enum_names[v.value]);
    return true;
}

/* A struct attribute's field: name = [..] (empty when VHLO leaves it out) */
static bool field(xlator *x, const named *a, int n, const char *name, bool *first) {
    int64_t v[MAX_DIMS];
    int32_t count = 0;
    if (find(a, n, name) && !get_ints(x, a, n, name, v, &count, NULL)) return false;
    sep(x, first);
    putf(x, "%s = ", name);
    int_list(x, v, count);
    return true;
}

/* A struct attribute (#stablehlo.gather<...>) from the fields VHLO keeps as attributes of
 * their own; a field left out is empty (0). */
static bool struct_attr(xlator *x, const named *a, int n, const kiln__attr_desc *d, bool *first) {
    sep(x, first);
    putf(x, "%s = #stablehlo.%s<", d->name, d->mnemonic);
    bool inner = true;
    for (int32_t i = 0; i < d->n_fields; i++) {
        const kiln__attr_field *f = &d->fields[i];
        if (f->kind == KILN__AK_DIMS) {
            if (!field(x, a, n, f->name, &inner)) return false;
        } else if (find(a, n, f->name)) {
            int64_t v;
            if (!get_int(x, a, n, f->name, &v)) return false;
            sep(x, &inner);
            putf(x, "%s = %" PRId64, f->name, v);
        }
    }
    put(x, ">");
    return true;
}

/* One operand's layout in #stablehlo.conv<[b, 0, 1, f]x...>: letters a, b at the given
 * positions, spatial dimension k at position spatial[k]. */
static bool conv_layout(xlator *x, int64_t pa, char ca, int64_t pb, char cb, const int64_t *sp,
                        int32_t ns) {
    int32_t rank = ns + 2;
    char slot[MAX_DIMS + 2][12];
    for (int32_t i = 0; i < rank; i++)
        slot[i][0] = 0;
    if (pa < 0 || pa >= rank || pb < 0 || pb >= rank || pa == pb)
        return kiln__bc_fail(x->bc, x->at, "bad convolution dimension numbers");
    snprintf(slot[pa], sizeof slot[pa], "%c", ca);
    snprintf(slot[pb], sizeof slot[pb], "%c", cb);
    for (int32_t k = 0; k < ns; k++) {
        if (sp[k] < 0 || sp[k] >= rank || slot[sp[k]][0])
            return kiln__bc_fail(x->bc, x->at, "bad convolution dimension numbers");
        snprintf(slot[sp[k]], sizeof slot[sp[k]], "%d", (int)k);
    }
    put(x, "[");
    for (int32_t i = 0; i < rank; i++)
        putf(x, "%s%s", i ? ", " : "", slot[i]);
    put(x, "]");
    return true;
}

/* #stablehlo.conv<[b, 0, 1, f]x[o, i, 0, 1]->[b, 0, 1, f]> from its nine attributes. */
static bool conv_attr(xlator *x, const named *a, int n, const kiln__attr_desc *d, bool *first) {
    int64_t ib, ifd, kif, kof, ob, of, is[MAX_DIMS], ks[MAX_DIMS], os[MAX_DIMS];
    int32_t nis, nks, nos;
    if (!get_int(x, a, n, "input_batch_dimension", &ib) ||
        !get_int(x, a, n, "input_feature_dimension", &ifd) ||
        !get_int(x, a, n, "kernel_input_feature_dimension", &kif) ||
        !get_int(x, a, n, "kernel_output_feature_dimension", &kof) ||
        !get_int(x, a, n, "output_batch_dimension", &ob) ||
        !get_int(x, a, n, "output_feature_dimension", &of) ||
        !get_ints(x, a, n, "input_spatial_dimensions", is, &nis, NULL) ||
        !get_ints(x, a, n, "kernel_spatial_dimensions", ks, &nks, NULL) ||
        !get_ints(x, a, n, "output_spatial_dimensions", os, &nos, NULL))
        return false;
    if (nks != nis || nos != nis)
        return kiln__bc_fail(x->bc, x->at, "bad convolution dimension numbers");
    sep(x, first);
    putf(x, "%s = #stablehlo.conv<", d->name);
    if (!conv_layout(x, ib, 'b', ifd, 'f', is, nis)) return false;
    put(x, "x");
    if (!conv_layout(x, kif, 'i', kof, 'o', ks, nks)) return false;
    put(x, "->");
    if (!conv_layout(x, ob, 'b', of, 'f', os, nos)) return false;
    put(x, ">");
    return true;
}

/* The op's attributes as the op schema (ops/op_syntax.h) names them, written in the
 * generic form's syntax; VHLO's attributes kiln does not keep are not written. */
static bool schema_attrs(xlator *x, kiln_op op, const named *a, int n) {
    const kiln__op_syntax *syn = kiln__op_syntax_get(op);
    bool first = true;
    for (int32_t i = 0; i < syn->n_attrs; i++) {
        const kiln__attr_desc *d = &syn->attrs[i];
        if (d->kind == KILN__AK_STRUCT) {
            if (!struct_attr(x, a, n, d, &first)) return false;
            continue;
        }
        if (d->kind == KILN__AK_CONV) {
            if (!conv_attr(x, a, n, d, &first)) return false;
            continue;
        }
        if (d->kind == KILN__AK_CHANNEL) {
            if (!channel_attr(x, a, n, &first)) return false;
            continue;
        }
        if (d->kind == KILN__AK_UNIT) {
            if (!unit_attr(x, a, n, d->name, &first)) return false;
            continue;
        }
        if (!find(a, n, d->name)) {
            if (d->required) return kiln__bc_fail(x->bc, x->at, "missing attribute '%s'", d->name);
            continue;
        }
        bool ok = true;
        switch (d->kind) {
        case KILN__AK_I64: ok = int_attr(x, a, n, d->name, &first); break;
        case KILN__AK_BOOL: ok = bool_attr(x, a, n, d->name, &first); break;
        case KILN__AK_DIMS: ok = array_attr(x, a, n, d->name, &first); break;
        case KILN__AK_PADDING: ok = padding_attr(x, a, n, d->name, &first); break;
        case KILN__AK_ENUM: ok = enum_attr(x, a, n, d, &first); break;
        case KILN__AK_NO_TRUE: {
            int64_t v[MAX_DIMS];
            int32_t count;
            if (!get_ints(x, a, n, d->name, v, &count, NULL)) return false;
            for (int32_t k = 0; k < count; k++)
                if (v[k])
                    return kiln__bc_fail(x->bc, x->at, "unsupported %s (kiln has none)", d->name);
            break;
        }
        case KILN__AK_GROUPS: ok = groups_attr(x, a, n, d->name, &first); break;
        default: ok = kiln__bc_fail(x->bc, x->at, "internal: attribute kind %d", (int)d->kind);
        }
        if (!ok) return false;
    }
    return true;
}

#define ACC \
    { "result_accuracy" }

/* The collectives' properties (VHLO keeps a channel_id where StableHLO has a handle). */
#define GATHER_PROPS \
    { "all_gather_dim", "channel_id", "replica_groups", "use_global_device_ids" }
#define REDUCE_PROPS \
    { "channel_id", "replica_groups", "use_global_device_ids" }
#define ALL_TO_ALL_PROPS \
    { "channel_id", "concat_dimension", "replica_groups", "split_count", "split_dimension" }

/* Every VHLO op kiln runs, by name (sorted, for bsearch). */
static const vop ops[] = {
#include "ir/vhlo_ops.inc"
};

static int cmp_vop(const void *key, const void *item) {
    return strcmp(key, ((const vop *)item)->vhlo);
}

static int n_names(const vop *o) {
    int n = 0;
    while (n < MAX_ATTRS && o->names[n])
        n++;
    return n;
}

/* What an op of a function that is not written stands for: nothing of it is read but its
 * structure. */
static const vop skipped_op = {"(skipped)", "(skipped)", F_GENERIC, false, {0}};
/* Shardy's mesh declarations (sdy.mesh, at the top of the module JAX serializes): they name
 * device meshes for sharded programs; a program kiln runs on one device needs none. */
static const vop mesh_op = {"(sdy.mesh)", "(sdy.mesh)", F_GENERIC, false, {0}};
/* Shardy's manual computations (shard_map) and their terminator, and the casts between
 * VHLO's tensor types and the builtin ones around them (written as nothing: a cast's
 * result is its operand). Their attributes are read by name (other_attr). */
static const vop manual_op = {
    "(sdy.manual_computation)", "sdy.manual_computation", F_SDY_MANUAL, false, {0}};
static const vop sdy_return_op = {"(sdy.return)", "sdy.return", F_SDY_RETURN, false, {0}};
static const vop cast_op = {"(unrealized_conversion_cast)", "", F_CAST, false, {0}};

/* ---- the op header ------------------------------------------------------------------------ */

typedef struct header {
    size_t at;
    const vop *op;
    bool module; /* builtin.module */
    uint8_t mask;
    bool has_dict, has_props;
    uint32_t dict, props;
    uint32_t n_results, n_operands;
    uint32_t results[MAX_IO], operands[MAX_IO];
    named attrs[MAX_ATTRS];
    int n_attrs;
} header;

/* The named attributes of an op: its properties in table order, or its dictionary. */
static bool op_attrs(xlator *x, header *h, const char *opname) {
    kiln__bc *bc = x->bc;
    h->n_attrs = 0;
    if (h->module) return true; /* sym_name and visibility only: kiln names modules itself */
    int want = n_names(h->op);
    if (h->has_props) {
        if (h->props >= bc->n_props)
            return kiln__bc_fail(bc, h->at, "properties index out of range");
        kiln__bc_cursor c = kiln__bc_at(bc, bc->props[h->props]);
        for (int i = 0; i < want; i++) {
            uint32_t idx;
            if (!kiln__bc_index(&c, bc->n_attrs, "attribute", &idx)) return false;
            h->attrs[h->n_attrs++] = (named){.name = h->op->names[i], .index = idx};
        }
        if (!kiln__bc_done(&c))
            return kiln__bc_fail(
                bc, c.pos, "properties of vhlo.%s hold more than its %d attributes", opname, want);
        return true;
    }
    if (!h->has_dict) {
        if (want) return kiln__bc_fail(bc, h->at, "vhlo.%s without its attributes", opname);
        return true;
    }
    kiln__vattr d = {0};
    if (!kiln__vhlo_attr(bc, h->dict, &d)) return false;
    if (d.kind != KILN__VA_DICT)
        return kiln__bc_fail(bc, h->at, "an op's attributes are not a dictionary");
    for (uint32_t i = 0; i < d.n; i++) {
        uint32_t k, v;
        kiln__vattr key = {0};
        if (!kiln__vhlo_dict_item(bc, &d, i, &k, &v) || !kiln__vhlo_attr(bc, k, &key)) return false;
        if (key.kind != KILN__VA_STRING)
            return kiln__bc_fail(bc, h->at, "an attribute name is not a string");
        for (int j = 0; j < want; j++)
            if (strlen(h->op->names[j]) == key.len &&
                memcmp(h->op->names[j], key.text, key.len) == 0 && h->n_attrs < MAX_ATTRS)
                h->attrs[h->n_attrs++] = (named){.name = h->op->names[j], .index = v};
        /* Any other (discardable) attribute is not kiln's to read. */
    }
    return true;
}

static bool skip_use_lists(kiln__bc_cursor *c, uint64_t range) {
    uint64_t entries = 1;
    if (range > 1 && !kiln__bc_varint(c, &entries)) return false;
    if (entries > c->end - c->pos) return kiln__bc_fail(c->bc, c->pos, "use-list too long");
    for (uint64_t e = 0; e < entries; e++) {
        uint64_t v, n;
        bool pair;
        if (range > 1 && !kiln__bc_varint(c, &v)) return false;
        if (!kiln__bc_varint_flag(c, &n, &pair)) return false;
        if (n > c->end - c->pos) return kiln__bc_fail(c->bc, c->pos, "use-list too long");
        for (uint64_t i = 0; i < n; i++)
            if (!kiln__bc_varint(c, &v)) return false;
    }
    return true;
}

/* An op's results (their types) or operands (values): a count up to MAX_IO, then that
 * many indices below `limit`. */
static bool index_list(kiln__bc_cursor *c, const header *h, const char *list, uint64_t limit,
                       const char *what, uint32_t *n_out, uint32_t *out) {
    uint64_t n;
    if (!kiln__bc_varint(c, &n)) return false;
    if (n > MAX_IO)
        return kiln__bc_fail(c->bc, h->at, "an op with %llu %s", (unsigned long long)n, list);
    *n_out = (uint32_t)n;
    for (uint32_t i = 0; i < *n_out; i++)
        if (!kiln__bc_index(c, limit, what, &out[i])) return false;
    return true;
}

static bool read_header(xlator *x, kiln__bc_cursor *c, header *h) {
    kiln__bc *bc = x->bc;
    memset(h, 0, sizeof *h);
    h->at = c->pos;
    uint32_t name;
    uint64_t loc;
    if (!kiln__bc_index(c, bc->n_opnames, "op name", &name) || !kiln__bc_byte(c, &h->mask) ||
        !kiln__bc_varint(c, &loc))
        return false;
    const kiln__bc_opname *on = &bc->opnames[name];
    size_t len;
    const char *s = kiln__bc_string(bc, on->name, &len);
    char opname[96];
    snprintf(opname, sizeof opname, "%.*s", (int)(len > 80 ? 80 : len), s);
    if (on->dialect == x->builtin && strcmp(opname, "module") == 0) {
        h->module = true;
    } else if (on->dialect == x->builtin && strcmp(opname, "unrealized_conversion_cast") == 0) {
        h->op = &cast_op;
    } else if (on->dialect == x->vhlo) {
        h->op = bsearch(opname, ops, sizeof ops / sizeof ops[0], sizeof ops[0], cmp_vop);
        if (!h->op && x->skip) h->op = &skipped_op;
        if (!h->op) return kiln__bc_fail(bc, h->at, "unsupported op vhlo.%s", opname);
    } else if (x->skip) {
        h->op = &skipped_op;
    } else {
        size_t dl;
        const char *d = kiln__bc_string(bc, bc->dialects[on->dialect].name, &dl);
        bool sdy = dl == 3 && memcmp(d, "sdy", 3) == 0;
        if (sdy && strcmp(opname, "mesh") == 0)
            h->op = &mesh_op;
        else if (sdy && strcmp(opname, "manual_computation") == 0)
            h->op = &manual_op;
        else if (sdy && strcmp(opname, "return") == 0)
            h->op = &sdy_return_op;
        else
            return kiln__bc_fail(bc, h->at, "unsupported op %.*s.%s (not VHLO)", (int)dl, d,
                                 opname);
    }
    if (h->mask & 0x01) {
        h->has_dict = true;
        if (!kiln__bc_index(c, bc->n_attrs, "attribute", &h->dict)) return false;
    }
    if (h->mask & 0x40) {
        if (bc->version < 5)
            return kiln__bc_fail(bc, h->at, "properties in bytecode version %llu",
                                 (unsigned long long)bc->version);
        h->has_props = true;
        if (!kiln__bc_index(c, bc->n_props, "properties", &h->props)) return false;
    }
    if ((h->mask & 0x02) &&
        !index_list(c, h, "results", bc->n_types, "type", &h->n_results, h->results))
        return false;
    if ((h->mask & 0x04) && !index_list(c, h, "operands", x->sc ? x->sc->reserved : 0, "value",
                                        &h->n_operands, h->operands))
        return false;
    if (h->mask & 0x08)
        return kiln__bc_fail(bc, h->at, "an op with successors (kiln's regions have one block)");
    if (bc->version >= 3 && (h->mask & 0x20) && !skip_use_lists(c, h->n_results)) return false;
    x->at = h->at;
    if (h->op == &mesh_op || h->op == &manual_op || h->op == &sdy_return_op || h->op == &cast_op)
        return true;
    return x->skip && h->op != NULL && h->op->form != F_FUNC ? true : op_attrs(x, h, opname);
}

/* ---- scopes and regions ------------------------------------------------------------------- */

static bool define(xlator *x, uint32_t id, uint32_t type) {
    scope *s = x->sc;
    if (id >= s->reserved) return kiln__bc_fail(x->bc, x->at, "value %u outside its region", id);
    s->types[id] = type;
    return true;
}

static bool operand_type(xlator *x, uint32_t id, uint32_t *type) {
    if (x->sc->types[id] == UINT32_MAX)
        return kiln__bc_fail(x->bc, x->at, "value %u used before it is defined", id);
    *type = x->sc->types[id];
    return true;
}

static bool reserve(xlator *x, kiln__bc_cursor *c, uint64_t n, uint32_t *base) {
    scope *s = x->sc;
    if (n > c->end - c->pos || s->reserved + n > UINT32_MAX / 2)
        return kiln__bc_fail(x->bc, c->pos, "a region of %llu values", (unsigned long long)n);
    uint32_t need = s->reserved + (uint32_t)n;
    if (need > s->cap) {
        uint32_t cap = s->cap ? s->cap : 16;
        while (cap < need)
            cap *= 2;
        uint32_t *t = kiln__alloc(x->bc->cx, 2 * (size_t)cap * sizeof *t, 16, "bytecode values");
        if (!t) return kiln__bc_fail(x->bc, c->pos, "out of memory");
        if (s->types) {
            memcpy(t, s->types, (size_t)s->cap * sizeof *t);
            memcpy(t + cap, s->aliases, (size_t)s->cap * sizeof *t);
            kiln__free(x->bc->cx, s->types, 2 * (size_t)s->cap * sizeof *t);
        }
        s->types = t;
        s->aliases = t + cap;
        s->cap = cap;
    }
    *base = s->reserved;
    for (uint32_t i = s->reserved; i < need; i++)
        s->types[i] = UINT32_MAX, s->aliases[i] = i;
    s->reserved = need;
    return true;
}

static bool op(xlator *x, kiln__bc_cursor *c, const header *parent, uint32_t *next_id);

/* A block's arguments; with a signature already written (a function's), only defined;
 * `bare`: as a manual computation's, "(%a: T, ...) {" (no block name). */
static bool block_args_as(xlator *x, kiln__bc_cursor *c, uint32_t *next_id, bool write, bool bare) {
    uint64_t n;
    if (!kiln__bc_varint(c, &n)) return false;
    if (n > c->end - c->pos) return kiln__bc_fail(x->bc, c->pos, "too many block arguments");
    if (write && !bare) {
        indent(x);
        put(x, "^bb0(");
    } else if (write) {
        put(x, "(");
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t type, loc;
        bool has_loc = true;
        if (x->bc->version >= 4) {
            if (!kiln__bc_varint_flag(c, &type, &has_loc)) return false;
        } else if (!kiln__bc_varint(c, &type)) {
            return false;
        }
        if (has_loc && !kiln__bc_varint(c, &loc)) return false;
        if (type >= x->bc->n_types) return kiln__bc_fail(x->bc, c->pos, "type index out of range");
        uint32_t id = (*next_id)++;
        if (!define(x, id, (uint32_t)type)) return false;
        if (write) {
            if (i) put(x, ", ");
            value_name(x, id);
            put(x, ": ");
            if (!type_text(x, (uint32_t)type)) return false;
        }
    }
    if (write) put(x, bare ? ") {\n" : "):\n");
    if (x->bc->version >= 3) {
        uint8_t mask;
        if (!kiln__bc_byte(c, &mask)) return false;
        if (mask && !skip_use_lists(c, n)) return false;
    }
    return true;
}

/* One region of `owner`; a function's body writes no block header (its signature did). */
static bool region(xlator *x, kiln__bc_cursor *c, const header *owner, bool function_body) {
    uint64_t n_blocks, n_values;
    if (!kiln__bc_varint(c, &n_blocks)) return false;
    if (n_blocks == 0) return true;
    if (n_blocks > 1)
        return kiln__bc_fail(x->bc, c->pos, "a region of %llu blocks (kiln's have one)",
                             (unsigned long long)n_blocks);
    uint32_t base = 0;
    if (!kiln__bc_varint(c, &n_values) || !reserve(x, c, n_values, &base)) return false;
    uint32_t next_id = base;
    uint64_t n_ops;
    bool has_args;
    if (!kiln__bc_varint_flag(c, &n_ops, &has_args)) return false;
    bool manual = owner->op == &manual_op;
    if (manual && !has_args) put(x, "() {\n");
    if (has_args && !block_args_as(x, c, &next_id, !function_body, manual)) return false;
    if (function_body && (int64_t)(next_id - base) != x->expect_args)
        return kiln__bc_fail(x->bc, c->pos, "a function body with %u arguments for %lld inputs",
                             next_id - base, (long long)x->expect_args);
    if (n_ops > c->end - c->pos) return kiln__bc_fail(x->bc, c->pos, "too many ops");
    for (uint64_t i = 0; i < n_ops; i++)
        if (!op(x, c, owner, &next_id)) return false;
    if (next_id - base > n_values)
        return kiln__bc_fail(x->bc, c->pos, "a region with more values than it declares");
    x->sc->reserved = base;
    return true;
}

/* The regions of op h (after its header), in a new scope when they are isolated. */
static bool regions(xlator *x, kiln__bc_cursor *c, const header *h, bool function_body) {
    if (!(h->mask & 0x10)) return true;
    uint64_t n;
    bool isolated;
    if (!kiln__bc_varint_flag(c, &n, &isolated)) return false;
    if (n > c->end - c->pos) return kiln__bc_fail(x->bc, c->pos, "too many regions");
    kiln__bc_cursor inner = *c, *rc = c;
    if (isolated && x->bc->version >= 2) {
        unsigned id;
        kiln__bc_span data;
        size_t at = c->pos;
        if (!kiln__bc_section(c, &id, &data)) return false;
        if (id != KILN__BC_IR)
            return kiln__bc_fail(x->bc, at, "expected an IR section for a region");
        inner = kiln__bc_at(x->bc, data);
        rc = &inner;
    }
    scope fresh = {.serial = x->next_serial++}, *outer = x->sc;
    /* Top-level regions get a scope even when not marked isolated: nothing is above them. */
    bool new_scope = isolated || !x->sc;
    if (new_scope) x->sc = &fresh;
    bool ok = ++x->depth <= MAX_DEPTH || kiln__bc_fail(x->bc, c->pos, "regions nest too deeply");
    bool generic = !h->module && h->op->form == F_GENERIC;
    for (uint64_t r = 0; r < n && ok; r++) {
        if (generic) put(x, r ? ", {\n" : "{\n");
        ok = region(x, rc, h, function_body);
        if (generic && ok) {
            x->depth--;
            indent(x);
            x->depth++;
            put(x, "}");
        }
    }
    x->depth--;
    if (new_scope) {
        if (fresh.types)
            kiln__free(x->bc->cx, fresh.types, 2 * (size_t)fresh.cap * sizeof *fresh.types);
        x->sc = outer;
    }
    if (ok && rc == &inner && !kiln__bc_done(&inner))
        return kiln__bc_fail(x->bc, inner.pos, "trailing bytes in a region section");
    return ok;
}

/* ---- ops ---------------------------------------------------------------------------------- */

static void result_names(xlator *x, const header *h, uint32_t first) {
    for (uint32_t i = 0; i < h->n_results; i++) {
        if (i) put(x, ", ");
        value_name(x, first + i);
    }
    if (h->n_results) put(x, " = ");
}

static bool operand_types(xlator *x, const header *h) {
    for (uint32_t i = 0; i < h->n_operands; i++) {
        uint32_t t = 0;
        if (i) put(x, ", ");
        if (!operand_type(x, h->operands[i], &t) || !type_text(x, t)) return false;
    }
    return true;
}

static bool result_types(xlator *x, const header *h) {
    for (uint32_t i = 0; i < h->n_results; i++) {
        if (i) put(x, ", ");
        if (!type_text(x, h->results[i])) return false;
    }
    return true;
}

static void operands(xlator *x, const header *h) {
    for (uint32_t i = 0; i < h->n_operands; i++) {
        if (i) put(x, ", ");
        value_name(x, h->operands[i]);
    }
}

static bool string_attr(xlator *x, const header *h, const char *name, kiln__vattr *out) {
    return get(x, h->attrs, h->n_attrs, name, out) &&
           (out->kind == KILN__VA_STRING ||
            kiln__bc_fail(x->bc, h->at, "attribute '%s' is not a string", name));
}

/* Argument i's calling convention, as JAX writes it in arg_attrs: the result a donated
 * argument's buffer takes (tf.aliasing_output) or a donation without one
 * (jax.buffer_donor). Other argument attributes (shardings, layouts) are not kiln's. */
/* Entry i of a function's per-argument or per-result dictionaries (`list`: "arg_attrs",
 * "res_attrs") into *dict; dict->kind is not KILN__VA_DICT when it has none. */
static bool attr_dict_at(xlator *x, const header *h, const char *list, uint32_t i,
                         kiln__vattr *dict) {
    kiln__vattr all = {0};
    uint32_t di = 0;
    dict->kind = KILN__VA_OTHER;
    if (!find(h->attrs, h->n_attrs, list)) return true;
    if (!get(x, h->attrs, h->n_attrs, list, &all)) return false;
    if (all.kind != KILN__VA_ARRAY || i >= all.n) return true;
    return kiln__vhlo_array_item(x->bc, &all, i, &di) && kiln__vhlo_attr(x->bc, di, dict);
}

static bool attr_text(xlator *x, uint32_t index, const char **text, size_t *len);

/* A string as a text literal, with escapes for what the parser reads as such. */
static void string_lit(xlator *x, const char *s, size_t len) {
    put(x, "\"");
    for (size_t j = 0; j < len; j++) {
        unsigned char ch = (unsigned char)s[j];
        if (ch == '"' || ch == '\\' || ch < 0x20 || ch >= 0x7f)
            putf(x, "\\%02X", ch);
        else
            putf(x, "%c", ch);
    }
    put(x, "\"");
}

/* Entry i of an argument's (`list` "arg_attrs") or result's ("res_attrs") dictionary, as
 * a text dictionary of what kiln reads: the calling convention JAX writes
 * (tf.aliasing_output, jax.buffer_donor), the result's name (jax.result_info) and the
 * shardings (mhlo.sharding, sdy.sharding), kept. Other entries (layouts, ...) are not
 * kiln's. */
static bool io_attrs(xlator *x, const header *h, const char *list, uint32_t i) {
    kiln__vattr dict = {0};
    if (!attr_dict_at(x, h, list, i, &dict)) return false;
    if (dict.kind != KILN__VA_DICT) return true;
    const char *sep = " {";
    for (uint32_t k = 0; k < dict.n; k++) {
        uint32_t ki = 0, vi = 0;
        kiln__vattr key = {0}, value = {0};
        if (!kiln__vhlo_dict_item(x->bc, &dict, k, &ki, &vi) || !kiln__vhlo_attr(x->bc, ki, &key))
            return false;
        if (key.kind != KILN__VA_STRING) continue;
#define KEY_IS(s) (key.len == sizeof(s) - 1 && memcmp(key.text, s, key.len) == 0)
        if (KEY_IS("sdy.sharding")) { /* Shardy's, written as text */
            const char *t;
            size_t n;
            if (!attr_text(x, vi, &t, &n)) return false;
            putf(x, "%ssdy.sharding = %.*s", sep, (int)n, t);
            sep = ", ";
            continue;
        }
        bool known = KEY_IS("tf.aliasing_output") || KEY_IS("jax.buffer_donor") ||
                     KEY_IS("jax.result_info") || KEY_IS("mhlo.sharding");
        if (!known) continue; /* maybe of a dialect kiln does not decode */
        if (!kiln__vhlo_attr(x->bc, vi, &value)) return false;
        if (KEY_IS("tf.aliasing_output") && value.kind == KILN__VA_INT) {
            putf(x, "%stf.aliasing_output = %d : i32", sep, (int)(int32_t)value.value);
        } else if (KEY_IS("jax.buffer_donor") && value.kind == KILN__VA_BOOL && value.value) {
            putf(x, "%sjax.buffer_donor = true", sep);
        } else if ((KEY_IS("jax.result_info") || KEY_IS("mhlo.sharding")) &&
                   value.kind == KILN__VA_STRING) {
            putf(x, "%s%.*s = ", sep, (int)key.len, key.text);
            string_lit(x, value.text, value.len);
        } else {
            continue;
        }
#undef KEY_IS
        sep = ", ";
    }
    if (sep[0] == ',') put(x, "}");
    return true;
}

static bool func(xlator *x, kiln__bc_cursor *c, header *h) {
    kiln__vattr name = {0}, vis = {0}, ft = {0};
    kiln__vtype fty = {0};
    if (!string_attr(x, h, "sym_name", &name) || !string_attr(x, h, "sym_visibility", &vis) ||
        !get(x, h->attrs, h->n_attrs, "function_type", &ft))
        return false;
    if (ft.kind != KILN__VA_TYPE || !kiln__vhlo_type(x->bc, ft.type, &fty) ||
        fty.kind != KILN__VT_FUNCTION)
        return kiln__bc_fail(x->bc, h->at, "a function without a function type");
    bool skipped = x->skip;
    if (x->only_func &&
        (strlen(x->only_func) != name.len || memcmp(x->only_func, name.text, name.len) != 0))
        x->skip = true;
    /* A declaration (no body) is not written: kiln calls only functions it has. */
    bool body = false;
    if (h->mask & 0x10) {
        kiln__bc_cursor peek = *c;
        uint64_t n;
        bool iso;
        body = kiln__bc_varint_flag(&peek, &n, &iso) && n > 0;
    }
    if (!body) x->skip = true;
    if (body) {
        kiln__bc_cursor peek = *c;
        uint64_t n;
        bool iso;
        if (!kiln__bc_varint_flag(&peek, &n, &iso)) return false;
        if (!iso) return kiln__bc_fail(x->bc, h->at, "a function whose body is not isolated");
    }
    x->expect_args = fty.n_inputs;
    /* The body's scope is numbered before it opens: its arguments are %v<serial>_<i>. */
    uint32_t serial = x->next_serial;
    put(x, "  func.func ");
    if (vis.len == 7 && memcmp(vis.text, "private", 7) == 0) put(x, "private ");
    put(x, "@");
    symbol(x, name.text, name.len);
    put(x, "(");
    for (uint32_t i = 0; i < fty.n_inputs; i++) {
        uint32_t t = 0;
        if (!kiln__vhlo_function_type(x->bc, &fty, false, i, &t)) return false;
        putf(x, "%s%%v%u_%u: ", i ? ", " : "", serial, i);
        if (!type_text(x, t) || !io_attrs(x, h, "arg_attrs", i)) return false;
    }
    put(x, ") -> (");
    for (uint32_t i = 0; i < fty.n_outputs; i++) {
        uint32_t t = 0;
        if (!kiln__vhlo_function_type(x->bc, &fty, true, i, &t)) return false;
        if (i) put(x, ", ");
        if (!type_text(x, t) || !io_attrs(x, h, "res_attrs", i)) return false;
    }
    put(x, ") {\n");
    x->depth++;
    bool ok = regions(x, c, h, true);
    x->depth--;
    put(x, "  }\n");
    x->skip = skipped;
    return ok;
}

/* The module's sym_name (a builtin string), if it has one: the first of its two optional
 * properties (v >= 5), or an entry of its attribute dictionary. */
static bool module_name(xlator *x, const header *h, kiln__vattr *out) {
    kiln__bc *bc = x->bc;
    out->kind = KILN__VA_OTHER;
    if (h->has_props) {
        kiln__bc_cursor c = kiln__bc_at(bc, bc->props[h->props]);
        uint64_t v = 0;
        if (!kiln__bc_varint(&c, &v)) return false;
        if (!(v & 1)) return true;
        if ((v >> 1) >= bc->n_attrs)
            return kiln__bc_fail(bc, h->at, "attribute index out of range");
        return kiln__vhlo_attr(bc, (uint32_t)(v >> 1), out);
    }
    if (!h->has_dict) return true;
    kiln__vattr d = {0};
    if (!kiln__vhlo_attr(bc, h->dict, &d)) return false;
    if (d.kind != KILN__VA_DICT) return true;
    for (uint32_t i = 0; i < d.n; i++) {
        uint32_t k = 0, v = 0;
        kiln__vattr key = {0};
        if (!kiln__vhlo_dict_item(bc, &d, i, &k, &v) || !kiln__vhlo_attr(bc, k, &key)) return false;
        if (key.kind == KILN__VA_STRING && key.len == 8 && memcmp(key.text, "sym_name", 8) == 0)
            return kiln__vhlo_attr(bc, v, out);
    }
    return true;
}

/* ---- Shardy ------------------------------------------------------------------------------- */

/* The kind of a Shardy op's property: which of its attributes it is. */
static bool property_is(xlator *x, uint32_t index, const char *name, int *seen) {
    kiln__bc *bc = x->bc;
    kiln__bc_cursor c = kiln__bc_at(bc, bc->attrs[index].span);
    uint64_t code = UINT64_MAX;
    if (kiln__vhlo_is_sdy(bc, index) && !kiln__bc_varint(&c, &code)) return false;
    if (!strcmp(name, "sym_name")) {
        kiln__vattr a = {0};
        return !kiln__vhlo_is_sdy(bc, index) && kiln__vhlo_attr(bc, index, &a) &&
               a.kind == KILN__VA_STRING;
    }
    if (!strcmp(name, "mesh")) return code == 2;
    if (!strcmp(name, "manual_axes")) return code == 0;
    /* in_shardings, then out_shardings: the first and second shardings per value */
    if (code != 7 && code != 16) return false;
    return (*seen)++ == (strcmp(name, "in_shardings") ? 1 : 0);
}

/* Attribute `name` of an op of another dialect: among its properties (a list of attribute
 * references, as ODS writes them; told apart by kind, so their order does not matter) or
 * in its attribute dictionary; *out is UINT32_MAX when it has none. */
static bool other_attr(xlator *x, const header *h, const char *name, uint32_t *out) {
    kiln__bc *bc = x->bc;
    *out = UINT32_MAX;
    if (h->has_props && !h->module) {
        kiln__bc_cursor c = kiln__bc_at(bc, bc->props[h->props]);
        int seen = 0;
        while (!kiln__bc_done(&c) && *out == UINT32_MAX) {
            uint32_t i;
            if (!kiln__bc_index(&c, bc->n_attrs, "attribute", &i)) return false;
            if (property_is(x, i, name, &seen)) *out = i;
        }
    }
    if (*out != UINT32_MAX || !h->has_dict) return true;
    kiln__vattr d = {0};
    if (!kiln__vhlo_attr(bc, h->dict, &d)) return false;
    if (d.kind != KILN__VA_DICT) return true;
    for (uint32_t i = 0; i < d.n; i++) {
        uint32_t k, v;
        kiln__vattr key = {0};
        if (!kiln__vhlo_dict_item(bc, &d, i, &k, &v) || !kiln__vhlo_attr(bc, k, &key)) return false;
        if (key.kind == KILN__VA_STRING && key.len == strlen(name) &&
            memcmp(key.text, name, key.len) == 0)
            *out = v;
    }
    return true;
}

/* A Shardy attribute (or one of a dialect without a binary encoding, kept as its assembly
 * text) as text: into scratch (the caller's; reset here), *text pointing at it. */
static bool attr_text(xlator *x, uint32_t index, const char **text, size_t *len) {
    kiln__bc *bc = x->bc;
    if (index >= bc->n_attrs) return kiln__bc_fail(bc, x->at, "attribute index out of range");
    const kiln__bc_entry *e = &bc->attrs[index];
    if (kiln__vhlo_is_sdy(bc, index)) {
        kiln__strbuf_destroy(&x->scratch);
        kiln__strbuf_init(&x->scratch, bc->cx);
        if (!kiln__vhlo_sdy_text(bc, index, &x->scratch)) return false;
        if (x->scratch.failed) return kiln__bc_fail(bc, e->span.off, "out of memory");
        *text = x->scratch.data;
        *len = x->scratch.length;
        return true;
    }
    if (e->custom) return kiln__bc_fail(bc, e->span.off, "expected a Shardy attribute");
    *text = (const char *)bc->data + e->span.off;
    *len = e->span.len;
    while (*len && (*text)[*len - 1] == 0)
        (*len)--;
    return true;
}

/* Writes attribute `name` of h as text, `prefix` and a closing '>' taken off. */
static bool sdy_attr(xlator *x, const header *h, const char *name, const char *prefix) {
    uint32_t i;
    const char *t;
    size_t n, pl = strlen(prefix);
    if (!other_attr(x, h, name, &i)) return false;
    if (i == UINT32_MAX) return kiln__bc_fail(x->bc, h->at, "sdy op without its %s", name);
    if (!attr_text(x, i, &t, &n)) return false;
    if (n < pl + 1 || memcmp(t, prefix, pl) != 0 || t[n - 1] != '>')
        return kiln__bc_fail(x->bc, h->at, "%s is not %s...>", name, prefix);
    putf(x, "%.*s", (int)(n - pl - 1), t + pl);
    return true;
}

/* sdy.mesh @name = #sdy.mesh<...> at the module's top level. */
static bool mesh_decl(xlator *x, const header *h) {
    uint32_t ni, mi;
    const char *t;
    size_t n;
    kiln__vattr name = {0};
    if (!other_attr(x, h, "sym_name", &ni) || !other_attr(x, h, "mesh", &mi)) return false;
    if (ni == UINT32_MAX || mi == UINT32_MAX)
        return kiln__bc_fail(x->bc, h->at, "sdy.mesh without its name or mesh");
    if (!kiln__vhlo_attr(x->bc, ni, &name) || name.kind != KILN__VA_STRING)
        return kiln__bc_fail(x->bc, h->at, "sdy.mesh's name is not a string");
    if (!attr_text(x, mi, &t, &n)) return false;
    put(x, "  sdy.mesh @");
    symbol(x, name.text, name.len);
    putf(x, " = %.*s\n", (int)n, t);
    return true;
}

/* %r = sdy.manual_computation(%a) in_shardings=[...] out_shardings=[...] manual_axes={...}
 *      (%x: T) { ... sdy.return %y : T } : (A) -> (R) */
static bool manual_computation(xlator *x, kiln__bc_cursor *c, const header *h, uint32_t first) {
    indent(x);
    result_names(x, h, first);
    put(x, "sdy.manual_computation(");
    operands(x, h);
    put(x, ") in_shardings=");
    if (!sdy_attr(x, h, "in_shardings", "#sdy.sharding_per_value<")) return false;
    put(x, " out_shardings=");
    if (!sdy_attr(x, h, "out_shardings", "#sdy.sharding_per_value<")) return false;
    put(x, " manual_axes=");
    if (!sdy_attr(x, h, "manual_axes", "#sdy<manual_axes")) return false;
    put(x, " ");
    if (!(h->mask & 0x10)) return kiln__bc_fail(x->bc, h->at, "a manual computation without body");
    if (!regions(x, c, h, false)) return false;
    indent(x);
    put(x, "} : (");
    if (!operand_types(x, h)) return false;
    put(x, ") -> (");
    if (!result_types(x, h)) return false;
    put(x, ")\n");
    return true;
}

/* The grid of an SPMD program: the module's mhlo.num_partitions and mhlo.num_replicas. */
static bool module_grid(xlator *x, const header *h) {
    const char *keys[2] = {"mhlo.num_partitions", "mhlo.num_replicas"};
    const char *sep = "attributes {";
    for (int k = 0; k < 2; k++) {
        uint32_t i;
        kiln__vattr v = {0};
        if (!other_attr(x, h, keys[k], &i)) return false;
        if (i == UINT32_MAX) continue;
        if (!kiln__vhlo_attr(x->bc, i, &v)) return false;
        if (v.kind != KILN__VA_INT)
            return kiln__bc_fail(x->bc, h->at, "%s is not an integer", keys[k]);
        putf(x, "%s%s = %lld : i32", sep, keys[k], (long long)(int64_t)v.value);
        sep = ", ";
    }
    if (sep[0] == ',') put(x, "} ");
    return true;
}

/* `keyword %a, %b : A, B` on a line of its own (func.return, sdy.return). */
static bool terminator(xlator *x, const header *h, const char *keyword) {
    indent(x);
    put(x, keyword);
    if (h->n_operands) {
        put(x, " ");
        operands(x, h);
        put(x, " : ");
        if (!operand_types(x, h)) return false;
    }
    put(x, "\n");
    return true;
}

/* stablehlo.custom_call in the generic form: its properties, then the discardable
 * attributes of its dictionary (mhlo.frontend_attributes, mhlo.sharding, ...), each
 * written as text; called_computations' names as symbols. */
static bool custom_call(xlator *x, kiln__bc_cursor *c, const header *h, uint32_t first) {
    kiln__bc *bc = x->bc;
    indent(x);
    result_names(x, h, first);
    put(x, "\"stablehlo.custom_call\"(");
    operands(x, h);
    put(x, ") {");
    bool none = true;
    for (int i = 0; i < h->n_attrs; i++) {
        sep(x, &none);
        putf(x, "%s = ", h->attrs[i].name);
        kiln__vattr v = {0};
        if (strcmp(h->attrs[i].name, "called_computations") != 0) {
            if (!kiln__vhlo_attr_text(bc, h->attrs[i].index, x->sb)) return false;
            continue;
        }
        if (!kiln__vhlo_attr(bc, h->attrs[i].index, &v) || v.kind != KILN__VA_ARRAY)
            return kiln__bc_fail(bc, h->at, "called_computations is not a list");
        put(x, "[");
        for (uint32_t k = 0; k < v.n; k++) {
            uint32_t item;
            kiln__vattr name = {0};
            if (!kiln__vhlo_array_item(bc, &v, k, &item) || !kiln__vhlo_attr(bc, item, &name))
                return false;
            if (name.kind != KILN__VA_STRING)
                return kiln__bc_fail(bc, h->at, "called_computations holds a non-name");
            put(x, k ? ", @" : "@");
            symbol(x, name.text, name.len);
        }
        put(x, "]");
    }
    kiln__vattr d = {0};
    if (h->has_dict && !kiln__vhlo_attr(bc, h->dict, &d)) return false;
    for (uint32_t i = 0; h->has_dict && d.kind == KILN__VA_DICT && i < d.n; i++) {
        uint32_t k, v;
        kiln__vattr key = {0};
        if (!kiln__vhlo_dict_item(bc, &d, i, &k, &v) || !kiln__vhlo_attr(bc, k, &key)) return false;
        if (key.kind != KILN__VA_STRING) return kiln__bc_fail(bc, h->at, "a non-string name");
        bool known = false;
        for (int j = 0; j < n_names(h->op); j++)
            known |=
                strlen(h->op->names[j]) == key.len && !memcmp(h->op->names[j], key.text, key.len);
        if (known) continue; /* read among its properties */
        sep(x, &none);
        kiln__vhlo_key_text(x->sb, key.text, key.len);
        put(x, " = ");
        if (!kiln__vhlo_attr_text(bc, v, x->sb)) return false;
    }
    put(x, "} : (");
    if (!operand_types(x, h)) return false;
    put(x, ") -> (");
    if (!result_types(x, h)) return false;
    put(x, ")\n");
    return regions(x, c, h, false);
}

static bool op(xlator *x, kiln__bc_cursor *c, const header *parent, uint32_t *next_id) {
    header h;
    if (!read_header(x, c, &h)) return false;
    kiln__bc *bc = x->bc;
    uint32_t first = *next_id;
    /* Operands were defined before the op; its results are values of this region (the
     * top level's are not referable). */
    for (uint32_t i = 0; i < h.n_operands; i++) {
        uint32_t t = 0;
        if (!operand_type(x, h.operands[i], &t)) return false;
    }
    if (x->sc) {
        for (uint32_t i = 0; i < h.n_results; i++)
            if (!define(x, (*next_id)++, h.results[i])) return false;
    }
    if (x->skip && !h.module && h.op->form != F_FUNC) return regions(x, c, &h, false);
    if (h.op == &mesh_op) {
        if (!parent || !parent->module || h.n_results || h.n_operands || (h.mask & 0x10))
            return kiln__bc_fail(bc, h.at, "sdy.mesh outside a module's top level");
        return mesh_decl(x, &h);
    }
    if (h.op == &cast_op) { /* written as nothing: its result is its operand */
        if (h.n_operands != 1 || h.n_results != 1 || (h.mask & 0x10) || !x->sc)
            return kiln__bc_fail(bc, h.at, "a cast of %u values to %u", h.n_operands, h.n_results);
        x->sc->aliases[first] = x->sc->aliases[h.operands[0]];
        return true;
    }
    if (h.op == &manual_op) {
        if (!parent || parent->module) return kiln__bc_fail(bc, h.at, "sdy op outside a function");
        return manual_computation(x, c, &h, first);
    }
    if (h.op == &sdy_return_op) {
        if (!parent || parent->op != &manual_op)
            return kiln__bc_fail(bc, h.at, "sdy.return outside a manual computation");
        return terminator(x, &h, "sdy.return");
    }
    if (h.module) {
        if (parent) return kiln__bc_fail(bc, h.at, "a module inside an op");
        kiln__vattr name = {0};
        if (!module_name(x, &h, &name)) return false;
        put(x, "module ");
        if (name.kind == KILN__VA_STRING && name.len) {
            put(x, "@");
            symbol(x, name.text, name.len);
            put(x, " ");
        }
        if (!module_grid(x, &h)) return false;
        put(x, "{\n");
        bool ok = regions(x, c, &h, false);
        put(x, "}\n");
        return ok;
    }
    if (!parent || !parent->module) {
        if (h.op->form == F_FUNC) return kiln__bc_fail(bc, h.at, "a function inside an op");
    } else if (h.op->form != F_FUNC) {
        return kiln__bc_fail(bc, h.at, "vhlo.%s at the top of a module (only functions may be)",
                             h.op->vhlo);
    }
    if (!parent && h.op->form != F_FUNC)
        return kiln__bc_fail(bc, h.at, "vhlo.%s outside a function", h.op->vhlo);
    switch (h.op->form) {
    case F_FUNC: return func(x, c, &h);
    case F_RETURN:
        if (parent->op && parent->op->form == F_FUNC) {
            if (!terminator(x, &h, "func.return")) return false;
        } else {
            indent(x);
            put(x, "\"stablehlo.return\"(");
            operands(x, &h);
            put(x, ") : (");
            if (!operand_types(x, &h)) return false;
            put(x, ") -> ()\n");
        }
        return regions(x, c, &h, false);
    case F_CONSTANT: {
        kiln__vattr v = {0};
        if (h.n_results != 1 || !get(x, h.attrs, h.n_attrs, "value", &v)) return false;
        if (v.kind != KILN__VA_TENSOR)
            return kiln__bc_fail(bc, h.at, "a constant without a tensor");
        indent(x);
        result_names(x, &h, first);
        put(x, "stablehlo.constant ");
        if (!kiln__vhlo_dense_text(bc, x->sb, &v)) return false;
        put(x, "\n");
        return regions(x, c, &h, false);
    }
    case F_CALL:
    case F_COMPOSITE: {
        kiln__vattr callee = {0};
        if (!string_attr(x, &h, h.op->form == F_CALL ? "callee" : "decomposition", &callee))
            return false;
        indent(x);
        result_names(x, &h, first);
        put(x, "func.call @");
        symbol(x, callee.text, callee.len);
        put(x, "(");
        operands(x, &h);
        put(x, ") : (");
        if (!operand_types(x, &h)) return false;
        put(x, ") -> (");
        if (!result_types(x, &h)) return false;
        put(x, ")\n");
        return regions(x, c, &h, false);
    }
    case F_CUSTOM_CALL: return custom_call(x, c, &h, first);
    case F_DOT: {
        uint32_t t = 0;
        kiln__vtype lhs = {0};
        if (h.n_operands != 2 || h.n_results != 1 || !operand_type(x, h.operands[0], &t) ||
            !kiln__vhlo_type(bc, t, &lhs) || lhs.kind != KILN__VT_TENSOR || lhs.rank < 1)
            return kiln__bc_fail(bc, h.at, "vhlo.dot_v1 takes two tensors of rank 1 or 2");
        indent(x);
        result_names(x, &h, first);
        put(x, "\"stablehlo.dot_general\"(");
        operands(x, &h);
        putf(x,
             ") {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [%d], "
             "rhs_contracting_dimensions = [0]>} : (",
             (int)lhs.rank - 1);
        if (!operand_types(x, &h)) return false;
        put(x, ") -> ");
        if (!result_types(x, &h)) return false;
        put(x, "\n");
        return regions(x, c, &h, false);
    }
    case F_GENERIC: break;
    case F_SDY_MANUAL: /* written above */
    case F_SDY_RETURN:
    case F_CAST: return kiln__bc_fail(bc, h.at, "internal: a Shardy op at the wrong place");
    }
    indent(x);
    result_names(x, &h, first);
    putf(x, "\"stablehlo.%s\"(", h.op->stablehlo);
    operands(x, &h);
    put(x, ")");
    if (h.mask & 0x10) {
        put(x, " (");
        if (!regions(x, c, &h, false)) return false;
        put(x, ")");
    }
    if (h.op->accuracy && !check_accuracy(x, h.attrs, h.n_attrs)) return false;
    kiln_op kind = kiln__op_from_name(h.op->stablehlo, strlen(h.op->stablehlo));
    if (kiln__op_syntax_get(kind)->n_attrs) {
        put(x, " {");
        if (!schema_attrs(x, kind, h.attrs, h.n_attrs)) return false;
        put(x, "}");
    }
    put(x, " : (");
    if (!operand_types(x, &h)) return false;
    put(x, ") -> ");
    if (h.n_results != 1) put(x, "(");
    if (!result_types(x, &h)) return false;
    if (h.n_results != 1) put(x, ")");
    put(x, "\n");
    return true;
}

/* "StableHLO_v1.2.3" -> 1, 2; false when the producer is not StableHLO's. */
static bool producer_version(const char *p, unsigned *major, unsigned *minor) {
    const char *prefix = "StableHLO_v";
    if (strncmp(p, prefix, strlen(prefix)) != 0) return false;
    char *end;
    unsigned long a = strtoul(p + strlen(prefix), &end, 10);
    if (*end != '.') return false;
    unsigned long b = strtoul(end + 1, &end, 10);
    *major = (unsigned)a;
    *minor = (unsigned)b;
    return true;
}

bool kiln__vhlo_to_text(kiln__bc *bc, kiln__strbuf *sb, const char *only_func) {
    xlator x = {
        .bc = bc, .sb = sb, .only_func = only_func, .builtin = UINT32_MAX, .vhlo = UINT32_MAX};
    unsigned major, minor;
    if (producer_version(bc->producer, &major, &minor) &&
        (major > KILN__VHLO_MAX_MAJOR ||
         (major == KILN__VHLO_MAX_MAJOR && minor > KILN__VHLO_MAX_MINOR)))
        return kiln__bc_fail(bc, 4, "newer than this reader (StableHLO %d.%d)",
                             KILN__VHLO_MAX_MAJOR, KILN__VHLO_MAX_MINOR);
    for (uint32_t i = 0; i < bc->n_dialects; i++) {
        if (kiln__bc_string_is(bc, bc->dialects[i].name, "builtin")) x.builtin = i;
        if (kiln__bc_string_is(bc, bc->dialects[i].name, "vhlo")) x.vhlo = i;
    }
    kiln__bc_cursor c = kiln__bc_at(bc, bc->section[KILN__BC_IR]);
    uint64_t n_ops;
    bool has_args;
    if (!kiln__bc_varint_flag(&c, &n_ops, &has_args)) return false;
    if (has_args || n_ops != 1) return kiln__bc_fail(bc, c.pos, "expected one module at the top");
    uint32_t next = 0;
    kiln__strbuf_init(&x.scratch, bc->cx);
    bool ok = op(&x, &c, NULL, &next);
    kiln__strbuf_destroy(&x.scratch);
    if (!ok) return false;
    if (!kiln__bc_done(&c)) return kiln__bc_fail(bc, c.pos, "trailing bytes after the module");
    if (sb->failed) return kiln__bc_fail(bc, 0, "out of memory");
    return true;
}

kiln_status kiln__vhlo_translate(kiln_ctx *cx, const void *data, size_t size, const char *file,
                                 char **out_text) {
    *out_text = NULL;
    kiln__bc bc;
    if (!kiln__bc_open(&bc, cx, data, size)) {
        if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: portable artifact: %s", file,
                                  bc.error);
    }
    kiln__strbuf sb;
    kiln__strbuf_init(&sb, cx);
    bool ok = kiln__vhlo_to_text(&bc, &sb, NULL);
    char error[sizeof bc.error];
    memcpy(error, bc.error, sizeof error);
    char producer[64];
    snprintf(producer, sizeof producer, "%s", bc.producer);
    kiln__bc_close(&bc);
    char *text = kiln__strbuf_take(&sb);
    if (!ok || !text) {
        if (text) kiln__strbuf_free_string(cx, text);
        if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
        return kiln_ctx_set_error(cx, ok ? KILN_RESOURCE_EXHAUSTED : KILN_INVALID_ARGUMENT,
                                  "%s: portable artifact (%s): %s", file, producer,
                                  ok ? "out of memory" : error);
    }
    *out_text = text;
    return KILN_OK;
}
