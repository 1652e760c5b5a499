/* SPDX-License-Identifier: Apache-2.0 */
/* The collectives' kernels (kiln/spmd.h), replica_id and partition_id, and the
 * interpreter's run_parallel. Each collective finds this process's group in the ctx's grid
 * (backend/comm.h), moves bytes with the communicator's two primitives (all_gather,
 * permute) and does its arithmetic here: a reduction combines the group's values in group
 * order, one op at a time in the values' type (f16 and bf16 rounded after each), so every
 * process, communicator and thread count gives the same bits. */
#include <stdio.h>
#include <string.h>

#include "backend/comm.h"
#include "backends/cpu/eval/eval.h"
#include "backends/cpu/eval/eval_reduce.h"
#include "base/alloc.h"
#include "base/buffer_cache.h"
#include "base/ctx_internal.h"
#include "ops/infer.h"

#define MAX_MEMBERS KILN_COMM_MAX_PROCESSES

/* What every process of a collective agrees on, and its group. */
typedef struct coll {
    kiln__place place;
    int32_t members[MAX_MEMBERS];
    int32_t n, index;
    char what[200];
    uint64_t sig;
    const char *fn;
} coll;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* The op's description and signature: its kind, attributes and operand types. */
static void describe(coll *c, kiln_op op, const kiln__attrs *attrs, kiln_tensor *const *in,
                     int n_in) {
    c->fn = attrs->fn ? attrs->fn : kiln__op_get_info(op)->name;
    uint64_t h = fnv(1469598103934665603ull, &op, sizeof op);
    const kiln__groups *g = &attrs->u.collective.groups;
    h = fnv(h, &g->rows, sizeof g->rows);
    h = fnv(h, &g->cols, sizeof g->cols);
    h = fnv(h, g->ids, (size_t)g->rows * (size_t)g->cols * sizeof g->ids[0]);
    h = fnv(h, &attrs->u.collective.channel_handle, 4 * sizeof(int64_t));
    h = fnv(h, &attrs->u.collective.split_count, sizeof(int64_t));
    h = fnv(h, &attrs->u.collective.use_global_device_ids, sizeof(bool));
    int len = snprintf(c->what, sizeof c->what, "stablehlo.%s of", kiln__op_get_info(op)->name);
    for (int i = 0; i < n_in; i++) {
        kiln__type t = {.dtype = in[i]->dtype, .shape = in[i]->shape};
        char text[KILN__TYPE_TEXT];
        h = fnv(h, &t.dtype, sizeof t.dtype);
        h = fnv(h, &t.shape.rank, sizeof t.shape.rank);
        h = fnv(h, t.shape.dims, (size_t)t.shape.rank * sizeof t.shape.dims[0]);
        if (len > 0 && (size_t)len < sizeof c->what)
            len += snprintf(c->what + len, sizeof c->what - (size_t)len, "%s %s", i ? "," : "",
                            kiln__type_text(&t, text));
    }
    c->sig = h;
}

/* Describes the op and finds this process's group. in_group: whether a process in no
 * group is an error (all_reduce, all_gather, reduce_scatter, all_to_all) or gets zeros. */
static kiln_status begin(kiln_ctx *cx, coll *c, kiln_op op, const kiln__attrs *attrs,
                         kiln_tensor *const *in, int n_in, bool in_group) {
    describe(c, op, attrs, in, n_in);
    c->place = kiln__place_of(cx);
    kiln_status s =
        kiln__process_group(cx, c->fn, &attrs->u.collective.groups, kiln__group_mode_of(op, attrs),
                            &c->place, c->members, &c->n, &c->index);
    if (s != KILN_OK) return s;
    if (in_group && c->n == 0)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: process %d (replica %d, partition %d) is in no group of "
                                  "replica_groups",
                                  c->fn, (int)c->place.process, (int)c->place.replica,
                                  (int)c->place.partition);
    return KILN_OK;
}

/* Scratch memory from the ctx's buffer cache: warm pages again at the next call, not
 * fresh ones (a 32 MiB buffer from the system costs thousands of page faults). */
typedef struct scratch {
    unsigned char *p;
    size_t cap;
} scratch;

static unsigned char *scratch_get(kiln_ctx *cx, scratch *sc, size_t n, const char *fn) {
    sc->p = kiln__buffer_cache_alloc(cx->cache, n ? n : 1, 64, &sc->cap);
    if (!sc->p)
        kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory (%zu bytes)", fn, n);
    return sc->p;
}

static void scratch_put(kiln_ctx *cx, scratch *sc) {
    if (sc->p) kiln__buffer_cache_free(cx->cache, sc->p, sc->cap);
    sc->p = NULL;
}

/* Every member's bytes of t, in group order, in scratch of n * nbytes. */
static kiln_status gather(kiln_ctx *cx, const coll *c, const kiln_tensor *t, scratch *out) {
    size_t nbytes = t->nbytes, total = (size_t)(c->n ? c->n : 1) * nbytes;
    if (!scratch_get(cx, out, total, c->fn)) return KILN_RESOURCE_EXHAUSTED;
    kiln_status s = kiln__comm_all_gather(cx, &c->place, c->members, c->n, kiln__in(t), nbytes,
                                          out->p, c->what, c->sig);
    if (s != KILN_OK) scratch_put(cx, out);
    return s;
}

/* Copies the box of extents `box` at offset `src_at` of a row-major array of shape src
 * into the one at dst_at of dst (elements of es bytes). */
static void copy_box(unsigned char *dst, const kiln_shape *dst_shape, const int64_t *dst_at,
                     const unsigned char *src, const kiln_shape *src_shape, const int64_t *src_at,
                     const int64_t *box, size_t es) {
    int32_t rank = src_shape->rank;
    for (int32_t d = 0; d < rank; d++)
        if (box[d] == 0) return;
    int64_t ds[KILN_MAX_RANK + 1], ss[KILN_MAX_RANK + 1];
    ds[rank] = ss[rank] = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        ds[d] = ds[d + 1] * dst_shape->dims[d];
        ss[d] = ss[d + 1] * src_shape->dims[d];
    }
    /* the innermost dimension is a contiguous run */
    size_t run = (size_t)(rank ? box[rank - 1] : 1) * es;
    int64_t idx[KILN_MAX_RANK] = {0};
    for (;;) {
        int64_t so = 0, doff = 0;
        for (int32_t d = 0; d < rank; d++) {
            so += (src_at[d] + idx[d]) * ss[d + 1];
            doff += (dst_at[d] + idx[d]) * ds[d + 1];
        }
        memcpy(dst + (size_t)doff * es, src + (size_t)so * es, run);
        int32_t d = rank - 2;
        for (; d >= 0; d--) {
            if (++idx[d] < box[d]) break;
            idx[d] = 0;
        }
        if (d < 0) return;
    }
}

/* ---- ids ------------------------------------------------------------------------------------ */

KILN__EVAL(REPLICA_ID) {
    (void)attrs, (void)operands, (void)n_operands, (void)n_results;
    uint32_t v = (uint32_t)kiln__place_of(cx).replica;
    memcpy(kiln__out(results[0]), &v, sizeof v);
    return KILN_OK;
}

KILN__EVAL(PARTITION_ID) {
    (void)attrs, (void)operands, (void)n_operands, (void)n_results;
    uint32_t v = (uint32_t)kiln__place_of(cx).partition;
    memcpy(kiln__out(results[0]), &v, sizeof v);
    return KILN_OK;
}

/* ---- reductions -------------------------------------------------------------------------- */

/* out = computation(...computation(v[0], v[1])..., v[n-1]) elementwise, v[k] at
 * vals + k * nbytes. */
static kiln_status reduce_in_order(kiln_ctx *cx, const coll *c, const kiln_region *region,
                                   kiln_dtype dtype, int64_t numel, const unsigned char *vals,
                                   void *out) {
    size_t es = kiln_dtype_size(dtype), nbytes = (size_t)numel * es;
    memcpy(out, vals, nbytes);
    if (c->n <= 1 || numel == 0) return KILN_OK;
    kiln__region_kind kind = kiln__region_kind_of(region);
    if (kiln__fast_kind(kind, dtype)) {
        kiln_dtype acc = kiln__acc_dtype(dtype);
        if (acc == dtype) {
            for (int32_t k = 1; k < c->n; k++)
                kiln__combine(kind, dtype, out, vals + (size_t)k * nbytes, numel, 1);
            return KILN_OK;
        }
        /* f16, bf16: each combination computed in f32 and rounded, as one op of the type */
        size_t ab = (size_t)numel * kiln_dtype_size(acc);
        unsigned char *a = kiln__alloc(cx, 2 * ab, 64, c->fn);
        if (!a) return KILN_RESOURCE_EXHAUSTED;
        for (int32_t k = 1; k < c->n; k++) {
            kiln__to_acc(dtype, out, a, numel);
            kiln__to_acc(dtype, vals + (size_t)k * nbytes, a + ab, numel);
            kiln__combine(kind, dtype, a, a + ab, numel, 1);
            kiln__from_acc(dtype, a, out, numel);
        }
        kiln__free(cx, a, 2 * ab);
        return KILN_OK;
    }
    kiln_dtype types[2] = {dtype, dtype};
    kiln__scalar_region sr;
    kiln_status s =
        kiln__scalar_region_init(&sr, cx, region, c->fn, "computation", types, 2, types, 1);
    for (int64_t e = 0; e < numel && s == KILN_OK; e++) {
        memcpy(kiln__scalar_region_arg(&sr, 0), vals + (size_t)e * es, es);
        for (int32_t k = 1; k < c->n && s == KILN_OK; k++) {
            memcpy(kiln__scalar_region_arg(&sr, 1), vals + (size_t)k * nbytes + (size_t)e * es, es);
            s = kiln__scalar_region_call(&sr, NULL);
        }
        if (s == KILN_OK)
            memcpy((unsigned char *)out + (size_t)e * es, kiln__scalar_region_arg(&sr, 0), es);
    }
    kiln__scalar_region_fini(&sr);
    return s;
}

/* Above this many bytes an all_reduce moves chunks (all_to_all, each member reducing one,
 * then an all_gather of the reduced chunks: 2 (n-1)/n of the bytes per process, as MPI's
 * own algorithms do) instead of gathering every member's whole operand (n - 1 times the
 * bytes); the result is the same bits, each element folded in group order either way. */
#define SCATTER_MIN_BYTES (256u << 10)

static kiln_status all_reduce_chunked(kiln_ctx *cx, const coll *c, const kiln_region *region,
                                      const kiln_tensor *x, void *out) {
    size_t es = kiln_dtype_size(x->dtype);
    int64_t n = c->n, chunk = (x->numel + n - 1) / n;
    size_t chunk_bytes = (size_t)chunk * es, padded = (size_t)n * chunk_bytes;
    scratch send = {0}, recv = {0}, mine = {0}, all = {0};
    const unsigned char *src = kiln__in(x);
    kiln_status s = KILN_OK;
    if (padded != x->nbytes) { /* the last chunk is short: pad a copy (zeros, dropped) */
        if (!scratch_get(cx, &send, padded, c->fn)) return KILN_RESOURCE_EXHAUSTED;
        memcpy(send.p, src, x->nbytes);
        memset(send.p + x->nbytes, 0, padded - x->nbytes);
        src = send.p;
    }
    if (!scratch_get(cx, &recv, padded, c->fn) || !scratch_get(cx, &mine, chunk_bytes, c->fn))
        s = KILN_RESOURCE_EXHAUSTED;
    if (s == KILN_OK)
        s = kiln__comm_all_to_all(cx, &c->place, c->members, c->n, src, chunk_bytes, recv.p,
                                  c->what, c->sig);
    if (s == KILN_OK) s = reduce_in_order(cx, c, region, x->dtype, chunk, recv.p, mine.p);
    /* the reduced chunks, gathered straight into the result when no padding is in the way */
    unsigned char *dst = out;
    if (s == KILN_OK && padded != x->nbytes) {
        dst = scratch_get(cx, &all, padded, c->fn);
        if (!dst) s = KILN_RESOURCE_EXHAUSTED;
    }
    if (s == KILN_OK)
        s = kiln__comm_all_gather(cx, &c->place, c->members, c->n, mine.p, chunk_bytes, dst,
                                  c->what, c->sig);
    if (s == KILN_OK && dst != out) memcpy(out, dst, x->nbytes);
    scratch_put(cx, &send);
    scratch_put(cx, &recv);
    scratch_put(cx, &mine);
    scratch_put(cx, &all);
    return s;
}

KILN__EVAL(ALL_REDUCE) {
    (void)n_results;
    coll c;
    kiln_status s = begin(cx, &c, KILN_OP_ALL_REDUCE, attrs, operands, n_operands, true);
    const kiln_region *region = kiln__attrs_region(attrs, 0);
    for (int i = 0; i < n_operands && s == KILN_OK; i++) {
        const kiln_tensor *x = operands[i];
        if (c.n > 1 && x->nbytes >= SCATTER_MIN_BYTES && x->numel >= c.n) {
            s = all_reduce_chunked(cx, &c, region, x, kiln__out(results[i]));
            continue;
        }
        scratch buf = {0};
        if ((s = gather(cx, &c, x, &buf)) != KILN_OK) break;
        s = reduce_in_order(cx, &c, region, x->dtype, x->numel, buf.p, kiln__out(results[i]));
        scratch_put(cx, &buf);
    }
    return s;
}

/* The group size the result type was made for must be the group's. */
static kiln_status check_group_size(kiln_ctx *cx, const coll *c, int64_t want) {
    if (c->n == want) return KILN_OK;
    return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                              "%s: the group of process %d has %d processes; the result type "
                              "was made for groups of %lld",
                              c->fn, (int)c->place.process, (int)c->n, (long long)want);
}

/* begin, for the ops that split or concatenate along a dimension into split_count parts:
 * reduce_scatter, all_gather, all_to_all. */
static kiln_status begin_split(kiln_ctx *cx, coll *c, kiln_op op, const kiln__attrs *attrs,
                               kiln_tensor *const *operands, int n_operands) {
    kiln_status s = begin(cx, c, op, attrs, operands, n_operands, true);
    return s == KILN_OK ? check_group_size(cx, c, attrs->u.collective.split_count) : s;
}

/* The n equal parts of x along dimension d, one after the other in dst (each part
 * row-major in its own shape, `box`). */
static void pack_parts(unsigned char *dst, const kiln_tensor *x, int64_t d, int32_t n,
                       int64_t *box) {
    memcpy(box, x->shape.dims, sizeof(int64_t) * KILN_MAX_RANK);
    box[d] = x->shape.dims[d] / n;
    kiln_shape part = x->shape;
    part.dims[d] = box[d];
    size_t es = kiln_dtype_size(x->dtype), part_bytes = (size_t)(x->numel / n) * es;
    int64_t zero[KILN_MAX_RANK] = {0}, at[KILN_MAX_RANK] = {0};
    for (int32_t k = 0; k < n; k++) {
        at[d] = (int64_t)k * box[d];
        copy_box(dst + (size_t)k * part_bytes, &part, zero, kiln__in(x), &x->shape, at, box, es);
    }
}

KILN__EVAL(REDUCE_SCATTER) {
    (void)n_results;
    coll c;
    kiln_status s = begin_split(cx, &c, KILN_OP_REDUCE_SCATTER, attrs, operands, n_operands);
    if (s != KILN_OK) return s;
    /* part k of every member's x comes to member k, which reduces them in group order */
    const kiln_tensor *x = operands[0];
    int64_t box[KILN_MAX_RANK];
    size_t part_bytes = x->nbytes / (size_t)c.n;
    scratch send = {0}, recv = {0};
    if (!scratch_get(cx, &send, x->nbytes, c.fn) || !scratch_get(cx, &recv, x->nbytes, c.fn))
        s = KILN_RESOURCE_EXHAUSTED;
    if (s == KILN_OK) {
        pack_parts(send.p, x, attrs->u.collective.dimension, c.n, box);
        s = kiln__comm_all_to_all(cx, &c.place, c.members, c.n, send.p, part_bytes, recv.p, c.what,
                                  c.sig);
    }
    if (s == KILN_OK)
        s = reduce_in_order(cx, &c, kiln__attrs_region(attrs, 0), x->dtype, results[0]->numel,
                            recv.p, kiln__out(results[0]));
    scratch_put(cx, &send);
    scratch_put(cx, &recv);
    return s;
}

/* ---- data movement ------------------------------------------------------------------------ */

KILN__EVAL(ALL_GATHER) {
    (void)n_results;
    coll c;
    kiln_status s = begin_split(cx, &c, KILN_OP_ALL_GATHER, attrs, operands, n_operands);
    int64_t d = attrs->u.collective.dimension;
    for (int i = 0; i < n_operands && s == KILN_OK; i++) {
        const kiln_tensor *x = operands[i];
        /* along dimension 0 the members' parts are the result's consecutive blocks */
        bool leading = true;
        for (int64_t a = 0; a < d; a++)
            leading &= x->shape.dims[a] == 1;
        if (leading) {
            s = kiln__comm_all_gather(cx, &c.place, c.members, c.n, kiln__in(x), x->nbytes,
                                      kiln__out(results[i]), c.what, c.sig);
            continue;
        }
        scratch buf = {0};
        if ((s = gather(cx, &c, x, &buf)) != KILN_OK) break;
        int64_t zero[KILN_MAX_RANK] = {0}, at[KILN_MAX_RANK] = {0};
        for (int32_t k = 0; k < c.n; k++) {
            at[d] = (int64_t)k * x->shape.dims[d];
            copy_box(kiln__out(results[i]), &results[i]->shape, at, buf.p + (size_t)k * x->nbytes,
                     &x->shape, zero, x->shape.dims, kiln_dtype_size(x->dtype));
        }
        scratch_put(cx, &buf);
    }
    return s;
}

KILN__EVAL(ALL_TO_ALL) {
    (void)n_results;
    coll c;
    kiln_status s = begin_split(cx, &c, KILN_OP_ALL_TO_ALL, attrs, operands, n_operands);
    int64_t sd = attrs->u.collective.dimension, cd = attrs->u.collective.concat_dimension;
    for (int i = 0; i < n_operands && s == KILN_OK; i++) {
        const kiln_tensor *x = operands[i];
        scratch send = {0}, recv = {0};
        if (!scratch_get(cx, &send, x->nbytes, c.fn) || !scratch_get(cx, &recv, x->nbytes, c.fn)) {
            scratch_put(cx, &send);
            s = KILN_RESOURCE_EXHAUSTED;
            break;
        }
        /* part k of x goes to member k; member k's part for this process lands at the k-th
         * place along cd */
        int64_t box[KILN_MAX_RANK];
        pack_parts(send.p, x, sd, c.n, box);
        size_t part_bytes = x->nbytes / (size_t)c.n;
        s = kiln__comm_all_to_all(cx, &c.place, c.members, c.n, send.p, part_bytes, recv.p, c.what,
                                  c.sig);
        kiln_shape part = x->shape;
        part.dims[sd] = box[sd];
        int64_t zero[KILN_MAX_RANK] = {0}, dst_at[KILN_MAX_RANK] = {0};
        for (int32_t k = 0; k < c.n && s == KILN_OK; k++) {
            dst_at[cd] = (int64_t)k * box[cd];
            copy_box(kiln__out(results[i]), &results[i]->shape, dst_at,
                     recv.p + (size_t)k * part_bytes, &part, zero, box, kiln_dtype_size(x->dtype));
        }
        scratch_put(cx, &send);
        scratch_put(cx, &recv);
    }
    return s;
}

/* The group index data operand j comes from (collective_broadcast) or goes to
 * (collective_reduce): the first member, or the roots operand's entry. */
static kiln_status root_of(kiln_ctx *cx, const coll *c, const kiln__attrs *attrs,
                           kiln_tensor *const *operands, int n_data, int j, int32_t *out) {
    *out = 0;
    if (!attrs->u.collective.has_dynamic_root) return KILN_OK;
    int32_t r = ((const int32_t *)kiln__in(operands[n_data]))[j];
    if (c->n > 0 && (r < 0 || r >= c->n))
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: root %d of data operand %d is outside the group of %d",
                                  c->fn, (int)r, j, (int)c->n);
    *out = r;
    return KILN_OK;
}

/* collective_broadcast (every member gets the root's data) and collective_reduce (the
 * root gets the group's reduction); everyone else gets zeros. */
static kiln_status rooted(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                          kiln_tensor *const *operands, int n_operands, kiln_tensor **results,
                          int n_results) {
    coll c;
    kiln_status s = begin(cx, &c, op, attrs, operands, n_operands, false);
    for (int j = 0; j < n_results && s == KILN_OK; j++) {
        int32_t root;
        scratch buf = {0};
        if ((s = root_of(cx, &c, attrs, operands, n_results, j, &root)) != KILN_OK ||
            (s = gather(cx, &c, operands[j], &buf)) != KILN_OK)
            break;
        const kiln_tensor *x = operands[j];
        if (c.n > 0 && op == KILN_OP_COLLECTIVE_BROADCAST)
            memcpy(kiln__out(results[j]), buf.p + (size_t)root * x->nbytes, x->nbytes);
        else if (c.n > 0 && c.index == root)
            s = reduce_in_order(cx, &c, kiln__attrs_region(attrs, 0), x->dtype, x->numel, buf.p,
                                kiln__out(results[j]));
        else
            memset(kiln__out(results[j]), 0, results[j]->nbytes);
        scratch_put(cx, &buf);
    }
    return s;
}

KILN__EVAL(COLLECTIVE_BROADCAST) {
    return rooted(cx, KILN_OP_COLLECTIVE_BROADCAST, attrs, operands, n_operands, results,
                  n_results);
}

KILN__EVAL(COLLECTIVE_REDUCE) {
    return rooted(cx, KILN_OP_COLLECTIVE_REDUCE, attrs, operands, n_operands, results, n_results);
}

KILN__EVAL(COLLECTIVE_PERMUTE) {
    (void)n_results;
    coll c;
    describe(&c, KILN_OP_COLLECTIVE_PERMUTE, attrs, operands, n_operands);
    c.place = kiln__place_of(cx);
    bool cross_partition =
        kiln__group_mode_of(KILN_OP_COLLECTIVE_PERMUTE, attrs) == KILN__CROSS_PARTITION;
    int32_t P = c.place.num_partitions;
    int32_t range = cross_partition ? P : c.place.num_replicas;
    int32_t mine = cross_partition ? c.place.partition : c.place.replica;
    const kiln__groups *g = &attrs->u.collective.groups;
    int32_t to = -1, from = -1;
    for (int32_t r = 0; r < g->rows; r++) {
        int32_t a = g->ids[2 * r], b = g->ids[2 * r + 1];
        if (a >= range || b >= range)
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: source_target_pairs names %s %d; the grid has %d", c.fn,
                                      cross_partition ? "partition" : "replica",
                                      (int)(a >= range ? a : b), (int)range);
        int32_t pa = cross_partition ? c.place.replica * P + a : a * P + c.place.partition;
        int32_t pb = cross_partition ? c.place.replica * P + b : b * P + c.place.partition;
        if (a == mine) to = pb;
        if (b == mine) from = pa;
    }
    if (from < 0) memset(kiln__out(results[0]), 0, results[0]->nbytes);
    return kiln__comm_permute(cx, &c.place, to, from, kiln__in(operands[0]), operands[0]->nbytes,
                              kiln__out(results[0]), c.what, c.sig);
}

/* ---- run_parallel ------------------------------------------------------------------------ */

typedef struct parallel {
    const kiln__attrs *attrs;
    kiln_tensor *const *operands;
    kiln_tensor **results;
} parallel;

static kiln_status run_program(kiln_ctx *cx, int32_t process, void *user) {
    const parallel *par = user;
    int32_t na = par->attrs->u.grid.n_args, nr = par->attrs->u.grid.n_results;
    char what[96];
    snprintf(what, sizeof what, "interpreter.run_parallel: the program of process %d",
             (int)process);
    kiln_tensor *fixed[16], **out = fixed;
    size_t ob = (size_t)(nr ? nr : 1) * sizeof *out;
    if (nr > 16 && !(out = kiln__alloc(cx, ob, _Alignof(kiln_tensor *), what)))
        return KILN_RESOURCE_EXHAUSTED;
    kiln_status called =
        kiln__region_call(cx, kiln__attrs_region(par->attrs, process), what,
                          par->operands + (size_t)process * (size_t)na, na, out, nr);
    kiln_status s = called;
    for (int32_t j = 0; j < nr && s == KILN_OK; j++) {
        kiln_tensor *dst = par->results[(size_t)process * (size_t)nr + (size_t)j];
        if (out[j]->dtype != dst->dtype || !kiln_shape_equal(&out[j]->shape, &dst->shape))
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s returned a value of another type",
                                   what);
        else if ((s = kiln__host_check(cx, what, out[j])) == KILN_OK && dst->nbytes)
            memcpy(kiln__out(dst), kiln__in(out[j]), dst->nbytes);
    }
    if (called == KILN_OK)
        for (int32_t j = 0; j < nr; j++)
            kiln_tensor_release(out[j]);
    if (out != fixed) kiln__free(cx, out, ob);
    return s;
}

KILN__EVAL(RUN_PARALLEL) {
    int32_t R = attrs->u.grid.num_replicas, P = attrs->u.grid.num_partitions;
    if (attrs->n_regions != R * P || n_operands != R * P * attrs->u.grid.n_args ||
        n_results != R * P * attrs->u.grid.n_results)
        return kiln_ctx_set_error(cx, KILN_INTERNAL, "interpreter.run_parallel: internal: counts");
    kiln_comm_options o = kiln_comm_options_default();
    o.num_replicas = R;
    o.num_partitions = P;
    kiln_comm *comm;
    kiln_status s = kiln_comm_create_local(cx, &o, &comm);
    if (s != KILN_OK) return s;
    parallel par = {.attrs = attrs, .operands = operands, .results = results};
    s = kiln_spmd_run(cx, comm, run_program, &par);
    kiln_comm_release(comm);
    return s;
}
