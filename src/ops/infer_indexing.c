/* SPDX-License-Identifier: Apache-2.0 */
/* Inference for the indexing ops: gather, scatter, sort (the spec's constraints, by
 * number, in the order the spec lists them). */
#include <stdio.h>

#include "ops/infer.h"

/* "[0,2]" into buf. */
static const char *dims_text(const kiln_dims *d, char *buf, size_t size) {
    size_t used = 0;
    used += (size_t)snprintf(buf, size, "[");
    for (int32_t i = 0; i < d->count && used < size; i++)
        used +=
            (size_t)snprintf(buf + used, size - used, "%s%lld", i ? "," : "", (long long)d->v[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

static bool dims_contain(const kiln_dims *d, int64_t v) {
    for (int32_t i = 0; i < d->count; i++)
        if (d->v[i] == v) return true;
    return false;
}

static kiln_status check_sorted(kiln_ctx *cx, const kiln__attrs *attrs, const char *what,
                                const kiln_dims *d) {
    for (int32_t i = 1; i < d->count; i++) {
        if (d->v[i] < d->v[i - 1]) {
            char t[KILN_MAX_RANK * 21 + 3];
            return kiln__infer_error(cx, attrs, "%s %s is not sorted", what,
                                     dims_text(d, t, sizeof t));
        }
    }
    return KILN_OK;
}

/* No value of a in b. */
static kiln_status check_disjoint(kiln_ctx *cx, const kiln__attrs *attrs, const char *what_a,
                                  const kiln_dims *a, const char *what_b, const kiln_dims *b) {
    for (int32_t i = 0; i < a->count; i++)
        if (dims_contain(b, a->v[i]))
            return kiln__infer_error(cx, attrs, "dimension %lld is in both %s and %s",
                                     (long long)a->v[i], what_a, what_b);
    return KILN_OK;
}

static kiln_status check_count(kiln_ctx *cx, const kiln__attrs *attrs, const char *what,
                               const kiln_dims *d) {
    if (d->count < 0 || d->count > KILN_MAX_RANK)
        return kiln__infer_error(cx, attrs, "%s has %d entries; expected at most %d", what,
                                 (int)d->count, KILN_MAX_RANK);
    return KILN_OK;
}

#define TRY(expr)                     \
    do {                              \
        kiln_status s_ = (expr);      \
        if (s_ != KILN_OK) return s_; \
    } while (0)

/* The checks gather and scatter share (their names differ, their rules do not). */
typedef struct index_names {
    const char *operand;       /* "operand" / "inputs" */
    const char *indices;       /* "start_indices" / "scatter_indices" */
    const char *window_dims;   /* offset_dims / update_window_dims */
    const char *collapsed;     /* collapsed_slice_dims / inserted_window_dims */
    const char *operand_batch; /* operand_batching_dims / input_batching_dims */
    const char *indices_batch; /* start_indices_batching_dims / ..._batching_dims */
    const char *index_map;     /* start_index_map / scatter_dims_to_operand_dims */
    int indices_operand;       /* the operand number of the indices, for messages */
} index_names;

typedef struct index_dims {
    const kiln_dims *window_dims, *collapsed, *operand_batch, *indices_batch, *index_map;
    int64_t index_vector_dim;
} index_dims;

/* Checks everything about the dimension numbers that does not depend on the result (or
 * updates) shape: the spec's C1-C3, C6-C21 for gather (C2, C5, C9-C22 for scatter). */
static kiln_status check_index_dims(kiln_ctx *cx, const kiln__attrs *attrs, const index_names *nm,
                                    const index_dims *dn, const kiln__type *operand,
                                    const kiln__type *indices) {
    char t[KILN__TYPE_TEXT];
    if (!kiln_dtype_is_integer(indices->dtype))
        return kiln__infer_error(cx, attrs, "operand %d (%s) is %s; expected an integer type",
                                 nm->indices_operand, nm->indices, kiln__type_text(indices, t));
    int32_t r = operand->shape.rank, q = indices->shape.rank;
    TRY(check_count(cx, attrs, nm->window_dims, dn->window_dims));
    TRY(check_count(cx, attrs, nm->collapsed, dn->collapsed));
    TRY(check_count(cx, attrs, nm->operand_batch, dn->operand_batch));
    TRY(check_count(cx, attrs, nm->indices_batch, dn->indices_batch));
    TRY(check_count(cx, attrs, nm->index_map, dn->index_map));
    int64_t ivd = dn->index_vector_dim;
    if (ivd < 0 || ivd > q)
        return kiln__infer_error(cx, attrs,
                                 "index_vector_dim is %lld; expected 0 to %d (the rank "
                                 "of %s)",
                                 (long long)ivd, (int)q, nm->indices);
    if (r != dn->window_dims->count + dn->collapsed->count + dn->operand_batch->count)
        return kiln__infer_error(
            cx, attrs, "%s has rank %d; expected size(%s) + size(%s) + size(%s) = %d", nm->operand,
            (int)r, nm->window_dims, nm->collapsed, nm->operand_batch,
            (int)(dn->window_dims->count + dn->collapsed->count + dn->operand_batch->count));
    TRY(kiln__check_dims(cx, attrs, nm->collapsed, dn->collapsed, r));
    TRY(check_sorted(cx, attrs, nm->collapsed, dn->collapsed));
    TRY(kiln__check_dims(cx, attrs, nm->operand_batch, dn->operand_batch, r));
    TRY(check_sorted(cx, attrs, nm->operand_batch, dn->operand_batch));
    TRY(check_disjoint(cx, attrs, nm->collapsed, dn->collapsed, nm->operand_batch,
                       dn->operand_batch));
    TRY(kiln__check_dims(cx, attrs, nm->indices_batch, dn->indices_batch, q));
    if (dims_contain(dn->indices_batch, ivd))
        return kiln__infer_error(cx, attrs, "index_vector_dim %lld is in %s", (long long)ivd,
                                 nm->indices_batch);
    if (dn->operand_batch->count != dn->indices_batch->count)
        return kiln__infer_error(cx, attrs, "%s has %d entries and %s %d; expected as many",
                                 nm->operand_batch, (int)dn->operand_batch->count,
                                 nm->indices_batch, (int)dn->indices_batch->count);
    for (int32_t i = 0; i < dn->operand_batch->count; i++) {
        int64_t od = operand->shape.dims[dn->operand_batch->v[i]];
        int64_t id = indices->shape.dims[dn->indices_batch->v[i]];
        if (od != id)
            return kiln__infer_error(
                cx, attrs, "%s dimension %lld has size %lld but %s dimension %lld has size %lld",
                nm->operand, (long long)dn->operand_batch->v[i], (long long)od, nm->indices,
                (long long)dn->indices_batch->v[i], (long long)id);
    }
    TRY(kiln__check_dims(cx, attrs, nm->index_map, dn->index_map, r));
    TRY(check_disjoint(cx, attrs, nm->index_map, dn->index_map, nm->operand_batch,
                       dn->operand_batch));
    int64_t want = ivd < q ? indices->shape.dims[ivd] : 1;
    if (dn->index_map->count != want)
        return kiln__infer_error(cx, attrs,
                                 "%s has %d entries; expected %lld (the size of the "
                                 "index vector of %s)",
                                 nm->index_map, (int)dn->index_map->count, (long long)want,
                                 nm->indices);
    return KILN_OK;
}

/* The sizes of the batch (scatter) dimensions: indices' shape without index_vector_dim. */
static int32_t batch_sizes(const kiln__type *indices, int64_t ivd, int64_t *out) {
    int32_t n = 0;
    for (int32_t d = 0; d < indices->shape.rank; d++)
        if (d != ivd) out[n++] = indices->shape.dims[d];
    return n;
}

KILN__INFER(GATHER) {
    (void)n_operands, (void)n_results;
    static const index_names nm = {"operand",
                                   "start_indices",
                                   "offset_dims",
                                   "collapsed_slice_dims",
                                   "operand_batching_dims",
                                   "start_indices_batching_dims",
                                   "start_index_map",
                                   2};
    const kiln_gather_params *p = &attrs->u.gather;
    const kiln__type *operand = &operands[0], *indices = &operands[1];
    index_dims dn = {&p->offset_dims,           &p->collapsed_slice_dims,
                     &p->operand_batching_dims, &p->start_indices_batching_dims,
                     &p->start_index_map,       p->index_vector_dim};
    TRY(check_index_dims(cx, attrs, &nm, &dn, operand, indices));
    int32_t r = operand->shape.rank;
    int64_t batch[KILN_MAX_RANK];
    int32_t n_batch = batch_sizes(indices, p->index_vector_dim, batch);
    int32_t result_rank = n_batch + p->offset_dims.count;
    if (result_rank > KILN_MAX_RANK)
        return kiln__infer_error(cx, attrs,
                                 "the result would have rank %d; at most %d is supported",
                                 (int)result_rank, KILN_MAX_RANK);
    TRY(kiln__check_dims(cx, attrs, "offset_dims", &p->offset_dims, result_rank));
    TRY(check_sorted(cx, attrs, "offset_dims", &p->offset_dims));
    if (p->slice_sizes.count != r)
        return kiln__infer_error(cx, attrs,
                                 "slice_sizes has %d entries; expected %d (the rank of "
                                 "operand)",
                                 (int)p->slice_sizes.count, (int)r);
    for (int32_t d = 0; d < r; d++) {
        int64_t s = p->slice_sizes.v[d];
        if (s < 0 || s > operand->shape.dims[d])
            return kiln__infer_error(cx, attrs, "slice_sizes[%d] is %lld; expected 0 to %lld",
                                     (int)d, (long long)s, (long long)operand->shape.dims[d]);
        if (s > 1 && dims_contain(&p->collapsed_slice_dims, d))
            return kiln__infer_error(cx, attrs,
                                     "slice_sizes[%d] is %lld; a collapsed slice "
                                     "dimension takes at most 1",
                                     (int)d, (long long)s);
        if (s > 1 && dims_contain(&p->operand_batching_dims, d))
            return kiln__infer_error(cx, attrs,
                                     "slice_sizes[%d] is %lld; an operand batching "
                                     "dimension takes at most 1",
                                     (int)d, (long long)s);
    }
    /* The result: batch sizes at the batch dims, the kept slice sizes at offset_dims. */
    kiln__type *res = &results[0];
    res->dtype = operand->dtype;
    res->shape.rank = result_rank;
    int32_t bi = 0, oi = 0, od = 0;
    bool empty = false;
    for (int32_t d = 0; d < result_rank; d++) {
        if (oi < p->offset_dims.count && p->offset_dims.v[oi] == d) {
            while (dims_contain(&p->collapsed_slice_dims, od) ||
                   dims_contain(&p->operand_batching_dims, od))
                od++;
            res->shape.dims[d] = p->slice_sizes.v[od++];
            oi++;
        } else {
            res->shape.dims[d] = batch[bi++];
        }
        if (res->shape.dims[d] == 0) empty = true;
    }
    /* A collapsed (or batching) dimension of slice size 0 would make a non-empty result read
     * an empty slice: the spec leaves it undefined, kiln rejects it. */
    for (int32_t d = 0; d < r && !empty; d++)
        if (p->slice_sizes.v[d] == 0)
            return kiln__infer_error(cx, attrs,
                                     "slice_sizes[%d] is 0 for a collapsed dimension "
                                     "but the result is not empty",
                                     (int)d);
    return KILN_OK;
}

/* Scatter's and sort's n inputs share one shape. */
static kiln_status check_one_shape(kiln_ctx *cx, const kiln__attrs *attrs,
                                   const kiln__type *inputs, int n) {
    char t1[KILN__TYPE_TEXT], t2[KILN__TYPE_TEXT];
    for (int i = 1; i < n; i++)
        if (!kiln_shape_equal(&inputs[i].shape, &inputs[0].shape))
            return kiln__infer_error(cx, attrs,
                                     "input %d is %s but input 1 is %s; expected one shape", i + 1,
                                     kiln__type_text(&inputs[i], t1),
                                     kiln__type_text(&inputs[0], t2));
    return KILN_OK;
}

KILN__INFER(SCATTER) {
    if (n_operands < 3 || n_operands % 2 == 0)
        return kiln__infer_error(cx, attrs, "scatter takes 2n+1 operands (n >= 1), not %d",
                                 n_operands);
    int n = (n_operands - 1) / 2;
    if (n_results != n)
        return kiln__infer_error(cx, attrs, "scatter of %d inputs has %d results, not %d", n, n,
                                 n_results);
    const kiln_region *region = kiln__attrs_region(attrs, 0);
    if (!region || !region->fn) return kiln__infer_error(cx, attrs, "the update region is NULL");
    const kiln__type *inputs = operands, *indices = &operands[n], *updates = &operands[n + 1];
    kiln_status s = check_one_shape(cx, attrs, inputs, n);
    if (s != KILN_OK) return s;
    char t1[KILN__TYPE_TEXT], t2[KILN__TYPE_TEXT];
    for (int i = 0; i < n; i++) {
        if (!kiln_shape_equal(&updates[i].shape, &updates[0].shape))
            return kiln__infer_error(cx, attrs,
                                     "update %d is %s but update 1 is %s; expected "
                                     "one shape",
                                     i + 1, kiln__type_text(&updates[i], t1),
                                     kiln__type_text(&updates[0], t2));
        if (updates[i].dtype != inputs[i].dtype)
            return kiln__infer_error(cx, attrs,
                                     "update %d is %s but input %d is %s; expected "
                                     "the same element type",
                                     i + 1, kiln__type_text(&updates[i], t1), i + 1,
                                     kiln__type_text(&inputs[i], t2));
    }
    const kiln_scatter_params *p = &attrs->u.scatter;
    static const index_names nm = {"inputs",
                                   "scatter_indices",
                                   "update_window_dims",
                                   "inserted_window_dims",
                                   "input_batching_dims",
                                   "scatter_indices_batching_dims",
                                   "scatter_dims_to_operand_dims",
                                   0};
    index_names names = nm;
    names.indices_operand = n + 1;
    index_dims dn = {&p->update_window_dims,           &p->inserted_window_dims,
                     &p->input_batching_dims,          &p->scatter_indices_batching_dims,
                     &p->scatter_dims_to_operand_dims, p->index_vector_dim};
    TRY(check_index_dims(cx, attrs, &names, &dn, &inputs[0], indices));
    /* C4, C7, C8: the updates' shape. */
    int64_t batch[KILN_MAX_RANK];
    int32_t n_batch = batch_sizes(indices, p->index_vector_dim, batch);
    int32_t urank = updates[0].shape.rank;
    if (urank != n_batch + p->update_window_dims.count)
        return kiln__infer_error(cx, attrs,
                                 "updates have rank %d; expected %d (%d scatter "
                                 "dimensions and %d update_window_dims)",
                                 (int)urank, (int)(n_batch + p->update_window_dims.count),
                                 (int)n_batch, (int)p->update_window_dims.count);
    TRY(kiln__check_dims(cx, attrs, "update_window_dims", &p->update_window_dims, urank));
    TRY(check_sorted(cx, attrs, "update_window_dims", &p->update_window_dims));
    int32_t bi = 0, wi = 0, id = 0;
    for (int32_t d = 0; d < urank; d++) {
        int64_t have = updates[0].shape.dims[d];
        if (wi < p->update_window_dims.count && p->update_window_dims.v[wi] == d) {
            while (dims_contain(&p->inserted_window_dims, id) ||
                   dims_contain(&p->input_batching_dims, id))
                id++;
            int64_t limit = inputs[0].shape.dims[id];
            if (have > limit)
                return kiln__infer_error(cx, attrs,
                                         "updates dimension %d (a window dimension) has "
                                         "size %lld; expected at most %lld (inputs dimension %d)",
                                         (int)d, (long long)have, (long long)limit, (int)id);
            id++;
            wi++;
        } else {
            int64_t want = batch[bi++];
            if (have != want)
                return kiln__infer_error(cx, attrs,
                                         "updates dimension %d (a scatter dimension) "
                                         "has size %lld; expected %lld (from scatter_indices)",
                                         (int)d, (long long)have, (long long)want);
        }
    }
    for (int i = 0; i < n; i++)
        results[i] = inputs[i];
    return KILN_OK;
}

KILN__INFER(SORT) {
    if (n_operands < 1) return kiln__infer_error(cx, attrs, "sort takes at least one input");
    if (n_results != n_operands)
        return kiln__infer_error(cx, attrs, "sort of %d inputs has %d results, not %d", n_operands,
                                 n_operands, n_results);
    const kiln_region *comparator = kiln__attrs_region(attrs, 0);
    if (!comparator || !comparator->fn)
        return kiln__infer_error(cx, attrs, "the comparator is NULL");
    kiln_status s = check_one_shape(cx, attrs, operands, n_operands);
    if (s != KILN_OK) return s;
    int32_t r = operands[0].shape.rank;
    int64_t dim = attrs->u.sort.dimension;
    if (r == 0) {
        char t1[KILN__TYPE_TEXT];
        return kiln__infer_error(cx, attrs, "input 1 is %s; sort needs rank 1 or more",
                                 kiln__type_text(&operands[0], t1));
    }
    if (dim < -r || dim >= r)
        return kiln__infer_error(cx, attrs, "dimension is %lld; expected %d to %d", (long long)dim,
                                 (int)-r, (int)r - 1);
    for (int i = 0; i < n_operands; i++)
        results[i] = operands[i];
    return KILN_OK;
}
