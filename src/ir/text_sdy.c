/* SPDX-License-Identifier: Apache-2.0 */
/* Shardy (the sdy dialect) in StableHLO text, as JAX exports SPMD programs: the meshes a
 * module declares (sdy.mesh), the sharding annotations of the entry's arguments and
 * results (kept as written and printed back), and sdy.manual_computation, shard_map's
 * form, which kiln expands where it stands into what it means on one device of the mesh:
 *
 *   - each operand sliced to this device's shard (dynamic_slice at offsets computed from
 *     partition_id and the device's coordinates in the mesh),
 *   - the body, on those shards (its collectives talk to the other devices),
 *   - each result all-gathered along its sharded dimensions over the devices that hold
 *     its other shards (in mesh order), so that every device ends with the whole value.
 *
 * Values outside manual computations are then whole on every device, and ops there run
 * on each device as they are: the program's results are every device's, and no op outside
 * a manual computation needs partitioning (which kiln does not do). Devices are the
 * module's partitions (mhlo.num_partitions; one replica), device d of a mesh having the
 * coordinates of d in row-major order. Not supported, with an error: explicit device_ids,
 * sub-axes ("x":(1)2), manual computations over only some of the mesh's axes. */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "ir/emit.h"
#include "ir/text.h"

/* ---- meshes -------------------------------------------------------------------------------- */

static const kiln__mesh *find_mesh(const parser *p, const char *name, size_t len) {
    for (int32_t i = 0; i < p->m->n_meshes; i++)
        if (strlen(p->m->meshes[i].name) == len && memcmp(p->m->meshes[i].name, name, len) == 0)
            return &p->m->meshes[i];
    return NULL;
}

static int64_t mesh_devices(const kiln__mesh *m) {
    int64_t n = 1;
    for (int32_t a = 0; a < m->n_axes; a++)
        n *= m->axis_sizes[a];
    return n;
}

/* <["x"=4, "y"=2]> (or #sdy.mesh<...>), into mesh. */
static bool mesh_body(parser *p, kiln__mesh *mesh) {
    kiln__text_skip(p);
    if (kiln__text_accept(p, '#')) {
        const char *id;
        size_t len = kiln__text_ident(p, &id);
        if (!(len == 8 && memcmp(id, "sdy.mesh", 8) == 0))
            return kiln__text_error(p, p->pos, "expected a mesh");
    }
    if (!kiln__text_expect(p, '<', "to open the mesh") ||
        !kiln__text_expect(p, '[', "before the mesh's axes"))
        return false;
    mesh->n_axes = 0;
    if (!kiln__text_accept(p, ']')) {
        do {
            const char *name;
            size_t len;
            int64_t size;
            kiln__text_skip(p);
            size_t at = p->pos;
            if (!kiln__text_string_lit(p, &name, &len) ||
                !kiln__text_expect(p, '=', "after a mesh axis") ||
                !kiln__text_int64_lit(p, &size, "an axis size"))
                return false;
            if (mesh->n_axes >= KILN__MESH_MAX_AXES)
                return kiln__text_error(p, at, "a mesh of more than %d axes", KILN__MESH_MAX_AXES);
            if (size < 1 || size > KILN_COMM_MAX_PROCESSES)
                return kiln__text_error(p, at, "mesh axis size %lld (1 to %d)", (long long)size,
                                        KILN_COMM_MAX_PROCESSES);
            char *n = kiln__text_unescape(p, name, len);
            if (!n) return kiln__text_oom(p);
            mesh->axis_names[mesh->n_axes] = n;
            mesh->axis_sizes[mesh->n_axes++] = size;
        } while (kiln__text_accept(p, ','));
        if (!kiln__text_expect(p, ']', "after the mesh's axes")) return false;
    }
    if (kiln__text_accept(p, ',')) {
        kiln__text_skip(p);
        return kiln__text_error(p, p->pos,
                                "meshes with device_ids are not supported (only the devices in "
                                "order)");
    }
    if (mesh_devices(mesh) > KILN_COMM_MAX_PROCESSES)
        return kiln__text_error(p, p->pos, "a mesh of more than %d devices",
                                KILN_COMM_MAX_PROCESSES);
    return kiln__text_expect(p, '>', "to close the mesh");
}

bool kiln__text_sdy_mesh(parser *p, size_t pos) {
    kiln__mesh mesh;
    memset(&mesh, 0, sizeof mesh);
    const char *name;
    size_t len;
    if (!kiln__text_expect(p, '@', "before the mesh's name")) return false;
    if (!kiln__text_symbol_name(p, &name, &len, "the mesh's name")) return false;
    if (find_mesh(p, name, len))
        return kiln__text_error(p, pos, "mesh @%.*s is declared twice", (int)(len > 60 ? 60 : len),
                                name);
    if (!(mesh.name = kiln__text_unescape(p, name, len))) return kiln__text_oom(p);
    if (!kiln__text_expect(p, '=', "after the mesh's name") || !mesh_body(p, &mesh)) return false;
    if (kiln__text_peek(p, '{')) { /* {stablehlo.mesh = ...}: the same, for other readers */
        attr d = {0};
        p->pos++;
        if (!kiln__text_attr_entries(p, &d, '}')) return false;
    }
    kiln__mesh *grown = kiln__text_aalloc(p, (size_t)(p->m->n_meshes + 1) * sizeof *grown);
    if (!grown) return false;
    if (p->m->n_meshes) memcpy(grown, p->m->meshes, (size_t)p->m->n_meshes * sizeof *grown);
    grown[p->m->n_meshes] = mesh;
    p->m->meshes = grown;
    p->m->n_meshes++;
    return true;
}

/* ---- shardings ----------------------------------------------------------------------------- */

typedef struct sharding {
    const kiln__mesh *mesh;
    int32_t rank;
    int32_t n_axes[KILN_MAX_RANK];                    /* per dimension */
    int32_t axes[KILN_MAX_RANK][KILN__MESH_MAX_AXES]; /* mesh axis indices, major first */
} sharding;

/* <@mesh, [{"x"}, {}]> (after '<' was seen or not), with optional open dimensions (?),
 * priorities (p1) and replicated={...} / unreduced={...} lists, which say nothing here. */
static bool sharding_body(parser *p, sharding *s) {
    memset(s, 0, sizeof *s);
    kiln__text_skip(p);
    size_t at = p->pos;
    const char *name;
    size_t len;
    if (!kiln__text_expect(p, '<', "to open a sharding") ||
        !kiln__text_expect(p, '@', "before a sharding's mesh"))
        return false;
    if (!kiln__text_symbol_name(p, &name, &len, "a mesh's name")) return false;
    if (!(s->mesh = find_mesh(p, name, len)))
        return kiln__text_error(p, at, "sharding over undeclared mesh @%.*s",
                                (int)(len > 60 ? 60 : len), name);
    if (!kiln__text_expect(p, ',', "after the sharding's mesh") ||
        !kiln__text_expect(p, '[', "before the sharding's dimensions"))
        return false;
    if (!kiln__text_accept(p, ']')) {
        do {
            if (s->rank >= KILN_MAX_RANK)
                return kiln__text_error(p, p->pos, "a sharding of more than %d dimensions",
                                        KILN_MAX_RANK);
            int32_t d = s->rank++;
            if (!kiln__text_expect(p, '{', "to open a dimension's axes")) return false;
            while (!kiln__text_accept(p, '}')) {
                if (s->n_axes[d] > 0 || kiln__text_peek(p, '?'))
                    if (!kiln__text_accept(p, ',') && !kiln__text_peek(p, '?'))
                        return kiln__text_expect(p, '}', "after a dimension's axes");
                if (kiln__text_accept(p, '?')) continue;
                kiln__text_skip(p);
                size_t apos = p->pos;
                const char *an;
                size_t al;
                if (!kiln__text_string_lit(p, &an, &al)) return false;
                if (kiln__text_peek(p, ':'))
                    return kiln__text_error(p, apos, "sub-axes (\"%.*s\":(...)) are not supported",
                                            (int)(al > 40 ? 40 : al), an);
                int32_t found = -1;
                for (int32_t a = 0; a < s->mesh->n_axes; a++)
                    if (strlen(s->mesh->axis_names[a]) == al &&
                        memcmp(s->mesh->axis_names[a], an, al) == 0)
                        found = a;
                if (found < 0)
                    return kiln__text_error(p, apos, "mesh @%s has no axis \"%.*s\"", s->mesh->name,
                                            (int)(al > 40 ? 40 : al), an);
                if (s->n_axes[d] >= KILN__MESH_MAX_AXES)
                    return kiln__text_error(p, apos, "too many axes on one dimension");
                s->axes[d][s->n_axes[d]++] = found;
            }
            kiln__text_skip(p);
            if (ch(p) == 'p') { /* a priority: p0, p1, ... */
                const char *id;
                kiln__text_ident(p, &id);
            }
        } while (kiln__text_accept(p, ','));
        if (!kiln__text_expect(p, ']', "after the sharding's dimensions")) return false;
    }
    while (kiln__text_accept(p, ',')) { /* replicated={...}, unreduced={...} */
        const char *id;
        if (!kiln__text_ident(p, &id) || !kiln__text_expect(p, '=', "in a sharding") ||
            !kiln__text_expect(p, '{', "in a sharding"))
            return false;
        while (!kiln__text_accept(p, '}')) {
            const char *an;
            size_t al;
            kiln__text_accept(p, ',');
            if (!kiln__text_string_lit(p, &an, &al)) return false;
        }
    }
    return kiln__text_expect(p, '>', "to close a sharding");
}

/* [<...>, <...>] */
static bool sharding_list(parser *p, sharding *out, int32_t cap, int32_t *n) {
    *n = 0;
    if (!kiln__text_expect(p, '[', "to open a list of shardings")) return false;
    if (kiln__text_accept(p, ']')) return true;
    do {
        if (*n >= cap) return kiln__text_error(p, p->pos, "too many shardings");
        if (!sharding_body(p, &out[(*n)++])) return false;
    } while (kiln__text_accept(p, ','));
    return kiln__text_expect(p, ']', "to close a list of shardings");
}

bool kiln__text_sharding_attrs(parser *p, const attr *d, const char **out) {
    *out = NULL;
    const attr *mhlo = kiln__text_dict_get(d, "mhlo.sharding");
    const attr *sdy = kiln__text_dict_get(d, "sdy.sharding");
    if (mhlo && mhlo->kind != A_STR)
        return kiln__text_error(p, mhlo->pos, "mhlo.sharding must be a string");
    if (sdy && sdy->kind != A_OPAQUE)
        return kiln__text_error(p, sdy->pos, "sdy.sharding must be #sdy.sharding<...>");
    if (!mhlo && !sdy) return true;
    size_t cap = (mhlo ? mhlo->len + 24 : 0) + (sdy ? sdy->len + 24 : 0);
    char *text = kiln__text_aalloc(p, cap);
    if (!text) return false;
    int n = 0;
    if (mhlo)
        n += snprintf(text + n, cap - (size_t)n, "mhlo.sharding = \"%.*s\"", (int)mhlo->len,
                      mhlo->text);
    if (sdy)
        n += snprintf(text + n, cap - (size_t)n, "%ssdy.sharding = %.*s", mhlo ? ", " : "",
                      (int)sdy->len, sdy->text);
    *out = text;
    return true;
}

/* ---- manual computations ------------------------------------------------------------------- */

#define MAX_IO 64

/* The position along dimension d's sharded axes of the device with coordinates `coord`
 * (mixed radix, the first axis major), and the number of positions. */
static int64_t shard_index(const sharding *s, int32_t d, const int64_t *coord, int64_t *count) {
    int64_t idx = 0, n = 1;
    for (int32_t j = 0; j < s->n_axes[d]; j++) {
        int64_t size = s->mesh->axis_sizes[s->axes[d][j]];
        idx = idx * size + coord[s->axes[d][j]];
        n *= size;
    }
    *count = n;
    return idx;
}

static void coords_of(const kiln__mesh *m, int64_t device, int64_t *coord) {
    for (int32_t a = m->n_axes - 1; a >= 0; a--) {
        coord[a] = device % m->axis_sizes[a];
        device /= m->axis_sizes[a];
    }
}

/* The offset of this device's shard along dimension d: (its position among the axes'
 * shards) x the local size, computed from partition_id at run time. */
static kiln__value *shard_offset(kiln__emitter *e, kiln__value *pid, const sharding *s, int32_t d,
                                 int64_t local) {
    const kiln__mesh *m = s->mesh;
    if (s->n_axes[d] == 0) return kiln__emit_scalar(e, KILN_I64, 0);
    kiln__value *idx = NULL;
    for (int32_t j = 0; j < s->n_axes[d]; j++) {
        int32_t a = s->axes[d][j];
        int64_t stride = 1;
        for (int32_t b = a + 1; b < m->n_axes; b++)
            stride *= m->axis_sizes[b];
        kiln__value *c = kiln__emit_div(e, pid, kiln__emit_scalar(e, KILN_I64, (double)stride));
        c = kiln__emit_binary(e, KILN_OP_REMAINDER, c,
                              kiln__emit_scalar(e, KILN_I64, (double)m->axis_sizes[a]));
        idx = idx ? kiln__emit_add(
                        e,
                        kiln__emit_mul(e, idx,
                                       kiln__emit_scalar(e, KILN_I64, (double)m->axis_sizes[a])),
                        c)
                  : c;
    }
    return kiln__emit_mul(e, idx, kiln__emit_scalar(e, KILN_I64, (double)local));
}

/* The all_gather along dimension d of the shards of `s`: groups of the devices that differ
 * only in d's axes, each ordered by the position of its shard. */
static kiln__value *gather_dim(kiln__emitter *e, kiln__value *v, const sharding *s, int32_t d) {
    const kiln__mesh *m = s->mesh;
    int64_t D = mesh_devices(m), count = 1;
    kiln__attrs a;
    memset(&a, 0, sizeof a);
    a.fn = "sdy.manual_computation";
    a.n_results = 1;
    kiln__groups *g = &a.u.collective.groups;
    int64_t row_key[KILN_COMM_MAX_PROCESSES];
    int32_t rows = 0;
    for (int64_t dev = 0; dev < D; dev++) {
        int64_t coord[KILN__MESH_MAX_AXES], key = 0;
        coords_of(m, dev, coord);
        int64_t pos = shard_index(s, d, coord, &count);
        for (int32_t ax = 0; ax < m->n_axes; ax++) { /* the coordinates outside d's axes */
            bool in_d = false;
            for (int32_t j = 0; j < s->n_axes[d]; j++)
                in_d |= s->axes[d][j] == ax;
            key = key * m->axis_sizes[ax] + (in_d ? 0 : coord[ax]);
        }
        int32_t r = 0;
        while (r < rows && row_key[r] != key)
            r++;
        if (r == rows) row_key[rows++] = key;
        g->ids[r * count + pos] = (int32_t)dev;
    }
    g->rows = rows;
    g->cols = (int32_t)count;
    a.u.collective.channel_handle = 1;
    a.u.collective.channel_type = 1;
    a.u.collective.use_global_device_ids = true;
    a.u.collective.dimension = d;
    a.u.collective.split_count = count;
    return kiln__emit(e, KILN_OP_ALL_GATHER, &a, &v, 1);
}

/* The shardings and the declared type, on the heap (the parser's stack is deep already). */
typedef struct manual_scratch {
    sharding ins[MAX_IO], outs[MAX_IO];
    kiln__value *locals[MAX_IO]; /* what the body's argument names stand for */
    sig s;
} manual_scratch;

static bool manual(parser *p, kiln__block *b, size_t pos, const char *const *names,
                   const size_t *lens, const size_t *name_pos, int32_t n_names, int32_t count,
                   bool grouped, manual_scratch *sc) {
    kiln__value *operands[MAX_IO];
    int32_t n_in = 0;
    if (!kiln__text_expect(p, '(', "to open the operands") ||
        !kiln__text_operands(p, operands, &n_in, MAX_IO) ||
        !kiln__text_expect(p, ')', "to close the operands"))
        return false;
    sharding *ins = sc->ins, *outs = sc->outs;
    int32_t n_ins = 0, n_outs = 0;
    if (!kiln__text_expect_kw(p, "in_shardings", "after the operands") ||
        !kiln__text_expect(p, '=', "after in_shardings") ||
        !sharding_list(p, ins, MAX_IO, &n_ins) ||
        !kiln__text_expect_kw(p, "out_shardings", "after in_shardings") ||
        !kiln__text_expect(p, '=', "after out_shardings") ||
        !sharding_list(p, outs, MAX_IO, &n_outs) ||
        !kiln__text_expect_kw(p, "manual_axes", "after out_shardings") ||
        !kiln__text_expect(p, '=', "after manual_axes") ||
        !kiln__text_expect(p, '{', "to open manual_axes"))
        return false;
    int32_t n_manual = 0;
    const char *manual[KILN__MESH_MAX_AXES];
    size_t manual_len[KILN__MESH_MAX_AXES];
    while (!kiln__text_accept(p, '}')) {
        if (n_manual) kiln__text_expect(p, ',', "between manual axes");
        if (n_manual >= KILN__MESH_MAX_AXES) return kiln__text_error(p, p->pos, "too many axes");
        if (!kiln__text_string_lit(p, &manual[n_manual], &manual_len[n_manual])) return false;
        n_manual++;
    }
    if (n_ins != n_in)
        return kiln__text_error(p, pos, "%d operands but %d in_shardings", (int)n_in, (int)n_ins);
    const kiln__mesh *mesh = n_ins ? ins[0].mesh : n_outs ? outs[0].mesh : NULL;
    for (int32_t i = 0; i < n_ins + n_outs; i++)
        if ((i < n_ins ? ins[i] : outs[i - n_ins]).mesh != mesh)
            return kiln__text_error(p, pos, "shardings over different meshes");
    if (!mesh) return kiln__text_error(p, pos, "a manual computation without a mesh");
    /* every axis of size > 1 is manual: partial manual computations need partitioning */
    for (int32_t a = 0; a < mesh->n_axes; a++) {
        bool is_manual = false;
        for (int32_t k = 0; k < n_manual; k++)
            is_manual |= strlen(mesh->axis_names[a]) == manual_len[k] &&
                         memcmp(mesh->axis_names[a], manual[k], manual_len[k]) == 0;
        if (!is_manual && mesh->axis_sizes[a] > 1)
            return kiln__text_error(p, pos,
                                    "mesh axis \"%s\" is not manual: manual computations over "
                                    "part of a mesh need automatic partitioning, which kiln "
                                    "does not do",
                                    mesh->axis_names[a]);
    }
    int64_t D = mesh_devices(mesh);
    int32_t P = p->m->num_partitions ? p->m->num_partitions : 1;
    int32_t R = p->m->num_replicas ? p->m->num_replicas : 1;
    if (R != 1 || P != D)
        return kiln__text_error(p, pos,
                                "mesh @%s has %lld devices; the module has %d replicas x %d "
                                "partitions (kiln runs a mesh's devices as the partitions of "
                                "one replica: set mhlo.num_partitions)",
                                mesh->name, (long long)D, (int)R, (int)P);

    /* The body's arguments: this device's shards of the operands. */
    kiln__type arg_types[MAX_IO];
    const char *arg_names[MAX_IO];
    size_t arg_lens[MAX_IO], arg_pos[MAX_IO];
    int32_t n_args = 0;
    if (!kiln__text_expect(p, '(', "to open the body's arguments")) return false;
    if (!kiln__text_accept(p, ')')) {
        do {
            if (n_args >= MAX_IO) return kiln__text_error(p, p->pos, "too many arguments");
            if (!kiln__text_typed_value(p, &arg_names[n_args], &arg_lens[n_args], &arg_pos[n_args],
                                        &arg_types[n_args], "after an argument"))
                return false;
            n_args++;
        } while (kiln__text_accept(p, ','));
        if (!kiln__text_expect(p, ')', "to close the body's arguments")) return false;
    }
    if (n_args != n_in)
        return kiln__text_error(p, pos, "%d operands but %d body arguments", (int)n_in,
                                (int)n_args);
    kiln__emitter e = {.cx = p->cx, .m = p->m, .block = b, .fn = "sdy.manual_computation"};
    kiln__attrs none;
    memset(&none, 0, sizeof none);
    none.fn = e.fn;
    kiln__value *pid = NULL;
    int32_t mark = p->n_names;
    for (int32_t i = 0; i < n_in; i++) {
        const kiln__type *g = operands[i]->type;
        const kiln__type *l = &arg_types[i];
        char t1[80], t2[80];
        bool ok =
            g->dtype == l->dtype && g->shape.rank == l->shape.rank && ins[i].rank == g->shape.rank;
        bool sliced = false;
        for (int32_t d = 0; ok && d < g->shape.rank; d++) {
            int64_t n;
            shard_index(&ins[i], d, (int64_t[KILN__MESH_MAX_AXES]){0}, &n);
            ok = g->shape.dims[d] == l->shape.dims[d] * n;
            sliced |= n > 1;
        }
        if (!ok)
            return kiln__text_error(p, arg_pos[i],
                                    "operand %d is %s; sharded by in_shardings[%d] its shards "
                                    "are not the body's %s",
                                    (int)i, kiln__text_type_str(g, t1, sizeof t1), (int)i,
                                    kiln__text_type_str(l, t2, sizeof t2));
        kiln__value *local = operands[i];
        if (sliced) {
            if (!pid)
                pid = kiln__emit_convert(&e, kiln__emit(&e, KILN_OP_PARTITION_ID, &none, NULL, 0),
                                         KILN_I64);
            kiln__value *ops[1 + KILN_MAX_RANK] = {operands[i]};
            for (int32_t d = 0; d < g->shape.rank; d++)
                ops[1 + d] = shard_offset(&e, pid, &ins[i], d, l->shape.dims[d]);
            kiln__attrs a = none;
            a.u.slice_sizes.count = l->shape.rank;
            for (int32_t d = 0; d < l->shape.rank; d++)
                a.u.slice_sizes.v[d] = l->shape.dims[d];
            local = kiln__emit(&e, KILN_OP_DYNAMIC_SLICE, &a, ops, 1 + g->shape.rank);
        }
        if (!local) return kiln_ctx_status(p->cx) == KILN_OK ? kiln__text_oom(p) : false;
        sc->locals[i] = local;
        if (!kiln__text_define(p, arg_pos[i], arg_names[i], arg_lens[i], &sc->locals[i], 1))
            return false;
    }

    /* The body, op by op into b, up to sdy.return. */
    kiln__text_skip(p);
    size_t open = p->pos;
    if (!kiln__text_expect(p, '{', "to open the body") || !kiln__text_enter(p)) return false;
    kiln__value *returned[MAX_IO];
    int32_t n_ret = 0;
    for (;;) {
        kiln__text_skip(p);
        if (p->pos >= p->n) return kiln__text_error(p, open, "unterminated body: expected '}'");
        if (kiln__text_accept_kw(p, "sdy.return")) {
            if (!kiln__text_operands(p, returned, &n_ret, MAX_IO)) return false;
            int32_t nt;
            kiln__type *ts = n_ret ? kiln__text_leaf_types(p) : NULL;
            if (n_ret && (!ts || !kiln__text_expect(p, ':', "before the returned types") ||
                          !kiln__text_type_list(p, ts, MAX_VALUES, &nt)))
                return false;
            if (!kiln__text_expect(p, '}', "after sdy.return")) return false;
            break;
        }
        if (ch(p) == '}') return kiln__text_error(p, p->pos, "missing sdy.return before '}'");
        if (!kiln__text_op_line(p, b)) return false;
    }
    leave(p);
    kiln__text_names_pop(p, mark);

    /* The results, whole again. */
    if (n_ret != n_outs)
        return kiln__text_error(p, pos, "%d values returned but %d out_shardings", (int)n_ret,
                                (int)n_outs);
    /* the names keep pointing here: in the module's arena */
    kiln__value **results = kiln__text_aalloc(p, (size_t)(n_ret ? n_ret : 1) * sizeof *results);
    if (!results) return false;
    for (int32_t r = 0; r < n_ret; r++) {
        kiln__value *v = returned[r];
        if (outs[r].rank != v->type->shape.rank)
            return kiln__text_error(p, pos, "out_shardings[%d] has %d dimensions; result %d has %d",
                                    (int)r, (int)outs[r].rank, (int)r, (int)v->type->shape.rank);
        for (int32_t d = 0; d < outs[r].rank && v; d++)
            if (outs[r].n_axes[d] > 0) v = gather_dim(&e, v, &outs[r], d);
        if (!v) return kiln_ctx_status(p->cx) == KILN_OK ? kiln__text_oom(p) : false;
        results[r] = v;
    }
    sig *s = &sc->s;
    if (!kiln__text_expect(p, ':', "before the manual computation's type") ||
        !kiln__text_functional_type(p, s))
        return false;
    if (s->n_out != n_ret)
        return kiln__text_error(p, s->pos, "%d results declared but %d returned", (int)s->n_out,
                                (int)n_ret);
    for (int32_t r = 0; r < n_ret; r++) {
        char t1[80], t2[80];
        if (!kiln__text_same_type(results[r]->type, &s->out[r]))
            return kiln__text_error(p, s->pos, "result %d: its shards make %s; declared %s", (int)r,
                                    kiln__text_type_str(results[r]->type, t1, sizeof t1),
                                    kiln__text_type_str(&s->out[r], t2, sizeof t2));
    }
    /* names */
    if (count >= 0) {
        if (count != n_ret)
            return kiln__text_error(p, pos, "%d result names for %d results", (int)count,
                                    (int)n_ret);
        if (grouped) {
            if (!kiln__text_define(p, name_pos[0], names[0], lens[0], results, n_ret)) return false;
        } else {
            for (int32_t i = 0; i < n_names; i++)
                if (!kiln__text_define(p, name_pos[i], names[i], lens[i], &results[i], 1))
                    return false;
        }
    }
    return true;
}

bool kiln__text_sdy_manual(parser *p, kiln__block *b, size_t pos, const char *const *names,
                           const size_t *lens, const size_t *name_pos, int32_t n_names,
                           int32_t count, bool grouped) {
    manual_scratch *sc = kiln__alloc(p->cx, sizeof *sc, _Alignof(manual_scratch), "parser");
    if (!sc) return kiln__text_oom(p);
    bool ok = manual(p, b, pos, names, lens, name_pos, n_names, count, grouped, sc);
    kiln__free(p->cx, sc, sizeof *sc);
    return ok;
}
