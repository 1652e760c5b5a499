/* SPDX-License-Identifier: Apache-2.0 */
#include "ir/fingerprint.h"

#include <stddef.h>
#include <string.h>

#include "ops/attrs.h"

typedef struct writer {
    kiln__strbuf *sb;
    int32_t next_id; /* the next value's number */
    bool ok;         /* false once the module proves unfit (nothing recorded) */
} writer;

static void put(writer *w, const void *p, size_t n) {
    if (!w->ok) return;
    if (w->sb->length + n > KILN__FINGERPRINT_MAX_BYTES) {
        w->ok = false;
        return;
    }
    kiln__strbuf_append(w->sb, p, n);
}

static void put_i64(writer *w, int64_t v) { put(w, &v, sizeof v); }

static void put_string(writer *w, const char *s) {
    size_t n = s ? strlen(s) : 0;
    put_i64(w, (int64_t)n);
    put(w, s, n);
}

static void put_shape(writer *w, const kiln_shape *s);

static void put_type(writer *w, const kiln__type *t) {
    put_i64(w, t->dtype);
    put_i64(w, t->kind);
    put_shape(w, &t->shape);
    if (kiln__is_tuple(t) && t->tuple) {
        put_i64(w, t->tuple->n);
        for (int32_t i = 0; i < t->tuple->n; i++)
            put_type(w, &t->tuple->elems[i]);
    }
}

/* A defined value gets the next number; a use writes the number. */
static void define(writer *w, kiln__value *v) {
    v->id = w->next_id++;
    put_type(w, v->type);
}

static void put_constant(writer *w, const kiln_tensor *t) {
    size_t n = kiln_tensor_nbytes(t);
    const void *data = kiln_tensor_data(t);
    if (n > KILN__FINGERPRINT_MAX_CONSTANT || (n && !data)) {
        w->ok = false;
        return;
    }
    kiln__type type = {.dtype = kiln_tensor_dtype(t), .shape = *kiln_tensor_shape(t)};
    put_type(w, &type);
    put(w, data, n);
}

static void put_dims(writer *w, const kiln_dims *d) {
    put_i64(w, d->count);
    put(w, d->v, (size_t)d->count * sizeof d->v[0]);
}

static void put_shape(writer *w, const kiln_shape *s) {
    put_i64(w, s->rank);
    put(w, s->dims, (size_t)s->rank * sizeof s->dims[0]);
}

/* The member of the op's kind, field by field: only the entries each list holds (the
 * slots past a count are whatever the builder left there). */
static void put_member(writer *w, kiln_op kind, const kiln__attrs *a) {
    switch (kind) {
    case KILN_OP_COMPARE:
        put_i64(w, a->u.compare.direction);
        put_i64(w, a->u.compare.type);
        break;
    case KILN_OP_CONVERT:
    case KILN_OP_BITCAST_CONVERT: put_i64(w, a->u.convert_to); break;
    case KILN_OP_REDUCE_PRECISION:
        put_i64(w, a->u.precision.exponent_bits);
        put_i64(w, a->u.precision.mantissa_bits);
        break;
    case KILN_OP_CONSTANT:
    case KILN_OP_CALL:
    case KILN_OP_CUSTOM_CALL:
        if (a->u.constant)
            put_constant(w, a->u.constant);
        else
            put_i64(w, -1);
        break;
    case KILN_OP_IOTA:
    case KILN_OP_DYNAMIC_IOTA:
        put_i64(w, a->u.iota.dtype);
        put_shape(w, &a->u.iota.shape);
        put_i64(w, a->u.iota.dimension);
        break;
    case KILN_OP_RNG_BIT_GENERATOR:
        put_i64(w, a->u.rng.algorithm);
        put_i64(w, a->u.rng.dtype);
        put_shape(w, &a->u.rng.shape);
        break;
    case KILN_OP_BROADCAST_IN_DIM:
        put_shape(w, &a->u.broadcast.shape);
        put_dims(w, &a->u.broadcast.dims);
        break;
    case KILN_OP_RESHAPE:
    case KILN_OP_DYNAMIC_RESHAPE: put_shape(w, &a->u.reshape); break;
    case KILN_OP_DYNAMIC_PAD: put_shape(w, &a->u.result_shape); break;
    case KILN_OP_GET_DIMENSION_SIZE: put_i64(w, a->u.dimension); break;
    case KILN_OP_GET_TUPLE_ELEMENT: put_i64(w, a->u.tuple_index); break;
    case KILN_OP_TUPLE: break; /* its type is its result's, which is fingerprinted */
    case KILN_OP_DYNAMIC_BROADCAST_IN_DIM:
        put_shape(w, &a->u.dynamic_broadcast.shape);
        put_dims(w, &a->u.dynamic_broadcast.dims);
        put_dims(w, &a->u.dynamic_broadcast.expanding);
        put_dims(w, &a->u.dynamic_broadcast.nonexpanding);
        break;
    case KILN_OP_TRANSPOSE: put_dims(w, &a->u.permutation); break;
    case KILN_OP_TRIANGULAR_SOLVE:
    case KILN_OP_CHOLESKY:
        put_i64(w, a->u.triangular.left_side);
        put_i64(w, a->u.triangular.lower);
        put_i64(w, a->u.triangular.unit_diagonal);
        put_i64(w, a->u.triangular.transpose_a);
        break;
    case KILN_OP_FFT:
        put_i64(w, a->u.fft.type);
        put_dims(w, &a->u.fft.length);
        break;
    case KILN_OP_REVERSE: put_dims(w, &a->u.reverse_dims); break;
    case KILN_OP_SLICE:
        put_dims(w, &a->u.slice.start);
        put_dims(w, &a->u.slice.limit);
        put_dims(w, &a->u.slice.strides);
        break;
    case KILN_OP_DYNAMIC_SLICE: put_dims(w, &a->u.slice_sizes); break;
    case KILN_OP_PAD:
        put_dims(w, &a->u.pad.low);
        put_dims(w, &a->u.pad.high);
        put_dims(w, &a->u.pad.interior);
        break;
    case KILN_OP_CONCATENATE: put_i64(w, a->u.dimension); break;
    case KILN_OP_GATHER:
    case KILN_OP_DYNAMIC_GATHER: {
        const kiln_gather_params *g = &a->u.gather;
        put_dims(w, &g->offset_dims);
        put_dims(w, &g->collapsed_slice_dims);
        put_dims(w, &g->operand_batching_dims);
        put_dims(w, &g->start_indices_batching_dims);
        put_dims(w, &g->start_index_map);
        put_i64(w, g->index_vector_dim);
        put_dims(w, &g->slice_sizes);
        put_i64(w, g->indices_are_sorted);
        break;
    }
    case KILN_OP_SCATTER: {
        const kiln_scatter_params *p = &a->u.scatter;
        put_dims(w, &p->update_window_dims);
        put_dims(w, &p->inserted_window_dims);
        put_dims(w, &p->input_batching_dims);
        put_dims(w, &p->scatter_indices_batching_dims);
        put_dims(w, &p->scatter_dims_to_operand_dims);
        put_i64(w, p->index_vector_dim);
        put_i64(w, p->indices_are_sorted);
        put_i64(w, p->unique_indices);
        break;
    }
    case KILN_OP_SORT:
        put_i64(w, a->u.sort.dimension);
        put_i64(w, a->u.sort.stable);
        break;
    case KILN_OP_REDUCE: put_dims(w, &a->u.reduce_dims); break;
    case KILN_OP_MAP:
        put_dims(w, &a->u.map_dims);
        put_i64(w, a->result_dtype);
        break;
    case KILN_OP_REDUCE_WINDOW:
    case KILN_OP_SELECT_AND_SCATTER: {
        const kiln_window_params *p = &a->u.window;
        put_dims(w, &p->window_dimensions);
        put_dims(w, &p->window_strides);
        put_dims(w, &p->base_dilations);
        put_dims(w, &p->window_dilations);
        put_dims(w, &p->padding_low);
        put_dims(w, &p->padding_high);
        break;
    }
    case KILN_OP_DOT_GENERAL: {
        const kiln_dot_params *p = &a->u.dot;
        put_dims(w, &p->lhs_batching_dims);
        put_dims(w, &p->rhs_batching_dims);
        put_dims(w, &p->lhs_contracting_dims);
        put_dims(w, &p->rhs_contracting_dims);
        break;
    }
    case KILN_OP_DYNAMIC_CONV: put_shape(w, &a->u.dynamic_conv.shape); /* fall through */
    case KILN_OP_CONVOLUTION: {
        /* dynamic_conv's convolution attributes are u.conv's (attrs.h) */
        const kiln_conv_params *p = &a->u.conv;
        const int64_t ints[] = {p->input_batch_dimension,
                                p->input_feature_dimension,
                                p->kernel_input_feature_dimension,
                                p->kernel_output_feature_dimension,
                                p->output_batch_dimension,
                                p->output_feature_dimension,
                                p->feature_group_count,
                                p->batch_group_count};
        put(w, ints, sizeof ints);
        put_dims(w, &p->input_spatial_dimensions);
        put_dims(w, &p->kernel_spatial_dimensions);
        put_dims(w, &p->output_spatial_dimensions);
        put_dims(w, &p->window_strides);
        put_dims(w, &p->padding_low);
        put_dims(w, &p->padding_high);
        put_dims(w, &p->lhs_dilation);
        put_dims(w, &p->rhs_dilation);
        break;
    }
    case KILN_OP_WHILE:
        put_i64(w, a->u.loop.lower);
        put_i64(w, a->u.loop.upper);
        put_i64(w, a->u.loop.known);
        break;
    default:
        /* Kinds without a member of their own; a kind given one must be added above. */
        if (kiln__attrs_size(kind) != offsetof(kiln__attrs, u)) w->ok = false;
        break;
    }
}

static void put_block(writer *w, kiln__block *b);

static void put_op(writer *w, kiln__ir_op *op) {
    const kiln__attrs *a = op->attrs;
    put_i64(w, op->kind);
    put_i64(w, op->n_operands);
    for (int32_t i = 0; i < op->n_operands; i++)
        put_i64(w, op->operands[i]->id);
    /* The common attributes: builtin regions are static functions that backends recognise,
     * so their addresses are what they mean. fn only names a builder for messages; mark (as
     * fn, which held it before) is left out: a marked op compiles and runs as its kind. */
    put_i64(w, a->result_dtype);
    put_i64(w, a->n_regions);
    put_i64(w, a->n_results);
    put(w, &a->regions, sizeof a->regions);
    put(w, a->region, sizeof a->region);
    put_member(w, op->kind, a);
    put_i64(w, op->n_results);
    for (int32_t i = 0; i < op->n_results; i++)
        define(w, op->results[i]);
    put_i64(w, op->n_regions);
    for (int32_t i = 0; i < op->n_regions; i++)
        put_block(w, op->regions[i]);
}

static void put_block(writer *w, kiln__block *b) {
    if (!b) {
        put_i64(w, -1);
        return;
    }
    put_i64(w, b->n_args);
    for (int32_t i = 0; i < b->n_args; i++)
        define(w, b->args[i]);
    put_i64(w, b->n_ops);
    for (kiln__ir_op *op = b->first; op && w->ok; op = op->next)
        put_op(w, op);
    put_i64(w, b->n_results);
    for (int32_t i = 0; i < b->n_results; i++)
        put_i64(w, b->results[i]->id);
}

/* FNV-1a over 8-byte words (then the tail): fast, and only a first filter; equal hashes
 * are confirmed by comparing the bytes. */
static uint64_t hash_bytes(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325u;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, sizeof v);
        h = (h ^ v) * 0x100000001b3u;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

bool kiln__module_fingerprint(kiln_ctx *cx, kiln_module *m, kiln__fingerprint *out) {
    memset(out, 0, sizeof *out);
    kiln__strbuf_init(&out->bytes, cx);
    /* Checks would need an encoding of their own; modules with them come from the parser
     * for conformance tests, not from the transformations this serves. */
    if (m->n_checks) return false;
    writer w = {.sb = &out->bytes, .ok = true};
    /* The calling convention: what the entry donates, preserves and aliases. */
    const kiln__block *entry = m->n_funcs ? m->funcs[0]->body : NULL;
    int32_t n_args = entry ? entry->n_args : 0, n_results = entry ? entry->n_results : 0;
    put_i64(&w, m->donated != NULL);
    for (int32_t i = 0; m->donated && i < n_args; i++)
        put_i64(&w, m->donated[i]);
    put_i64(&w, m->preserved != NULL);
    for (int32_t i = 0; m->preserved && i < n_results; i++)
        put_i64(&w, m->preserved[i]);
    put_i64(&w, m->aliases != NULL);
    for (int32_t i = 0; m->aliases && i < n_results; i++)
        put_i64(&w, m->aliases[i]);
    put_i64(&w, m->n_funcs);
    for (int32_t i = 0; i < m->n_funcs && w.ok; i++) {
        const kiln__func *fn = m->funcs[i];
        put_string(&w, fn->name);
        put_i64(&w, fn->is_public);
        put_block(&w, fn->body);
    }
    if (!w.ok || out->bytes.failed) return false;
    out->hash = hash_bytes((const uint8_t *)out->bytes.data, out->bytes.length);
    return true;
}

bool kiln__fingerprint_equal(const kiln__fingerprint *a, const kiln__fingerprint *b) {
    return a->hash == b->hash && a->bytes.length == b->bytes.length &&
           memcmp(a->bytes.data, b->bytes.data, a->bytes.length) == 0;
}

void kiln__fingerprint_free(kiln__fingerprint *f) { kiln__strbuf_destroy(&f->bytes); }
