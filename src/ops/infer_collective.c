/* SPDX-License-Identifier: Apache-2.0 */
/* Inference for the collectives (all_reduce, all_gather, reduce_scatter, all_to_all,
 * collective_permute, collective_broadcast), replica_id and partition_id, and the
 * interpreter's run_parallel: the spec's constraints that hold without knowing the process
 * grid. What needs the grid (ids below num_replicas, a group size that matches the result
 * type) the kernels check when they run, where the communicator is known. */
#include <stdio.h>

#include "ops/infer.h"

/* Groups: ids from 0, each at most once, -1 only after a group's ids (padding). */
static kiln_status check_groups(kiln_ctx *cx, const kiln__attrs *attrs, const char *what) {
    const kiln__groups *g = &attrs->u.collective.groups;
    if (g->rows < 0 || g->cols < 0 || (int64_t)g->rows * g->cols > KILN__MAX_GROUP_IDS)
        return kiln__infer_error(cx, attrs, "%s is %dx%d; at most %d ids", what, (int)g->rows,
                                 (int)g->cols, KILN__MAX_GROUP_IDS);
    bool seen[KILN__MAX_GROUP_IDS] = {false};
    for (int32_t r = 0; r < g->rows; r++) {
        bool padding = false;
        for (int32_t c = 0; c < g->cols; c++) {
            int32_t id = g->ids[r * g->cols + c];
            if (id == -1) {
                padding = true;
                continue;
            }
            if (id < 0 || id >= KILN__MAX_GROUP_IDS || padding)
                return kiln__infer_error(cx, attrs, "%s: group %d holds %s id %d", what, (int)r,
                                         padding ? "an id after -1 padding:" : "the invalid",
                                         (int)id);
            if (seen[id])
                return kiln__infer_error(cx, attrs, "%s: id %d appears twice", what, (int)id);
            seen[id] = true;
        }
    }
    return KILN_OK;
}

static kiln_status check_channel(kiln_ctx *cx, const kiln__attrs *attrs) {
    if (attrs->u.collective.use_global_device_ids && attrs->u.collective.channel_handle <= 0)
        return kiln__infer_error(cx, attrs, "use_global_device_ids needs a channel_handle > 0");
    return KILN_OK;
}

static kiln_status check_dim(kiln_ctx *cx, const kiln__attrs *attrs, const char *what, int64_t d,
                             const kiln__type *t, int32_t operand) {
    if (d < 0 || d >= t->shape.rank)
        return kiln__infer_error(cx, attrs, "%s %lld is out of range for operand %d of rank %d",
                                 what, (long long)d, (int)operand, (int)t->shape.rank);
    return KILN_OK;
}

/* all_gather's and reduce_scatter's group size f (from the types): the groups' width, or
 * a multiple of it when the groups span the partitions too (cross_replica_and_partition). */
static kiln_status check_factor(kiln_ctx *cx, const kiln__attrs *attrs, int64_t f) {
    if (f < 1)
        return kiln__infer_error(cx, attrs, "the group size %lld is not positive", (long long)f);
    int64_t w = attrs->u.collective.groups.rows ? attrs->u.collective.groups.cols : 0;
    bool spans =
        attrs->u.collective.channel_handle > 0 && !attrs->u.collective.use_global_device_ids;
    if (w > 0 && (spans ? f % w != 0 : f != w))
        return kiln__infer_error(cx, attrs,
                                 "the types make groups of %lld processes; replica_groups has "
                                 "groups of %lld",
                                 (long long)f, (long long)w);
    return KILN_OK;
}

/* replica_id, partition_id: a ui32 scalar (kiln__infer checked there are no operands). */
static kiln_status id_result(kiln__type *results) {
    results[0] = (kiln__type){.dtype = KILN_U32, .shape = {.rank = 0}};
    return KILN_OK;
}

KILN__INFER(REPLICA_ID) {
    (void)cx, (void)attrs, (void)operands, (void)n_operands, (void)n_results;
    return id_result(results);
}

KILN__INFER(PARTITION_ID) {
    (void)cx, (void)attrs, (void)operands, (void)n_operands, (void)n_results;
    return id_result(results);
}

/* Variadic ops: at least one operand, one result each. */
static kiln_status check_variadic(kiln_ctx *cx, const kiln__attrs *attrs, int n_operands,
                                  int n_results) {
    if (n_operands < 1) return kiln__infer_error(cx, attrs, "needs at least one operand");
    return kiln__check_result_slots(cx, attrs, n_results, n_operands);
}

KILN__INFER(ALL_REDUCE) {
    kiln_status s = check_variadic(cx, attrs, n_operands, n_results);
    if (s == KILN_OK) s = check_groups(cx, attrs, "replica_groups");
    if (s == KILN_OK) s = check_channel(cx, attrs);
    if (s == KILN_OK) s = kiln__check_region(cx, attrs, 0, "the computation region");
    if (s != KILN_OK) return s;
    for (int i = 0; i < n_operands; i++)
        results[i] = operands[i];
    return KILN_OK;
}

KILN__INFER(ALL_GATHER) {
    kiln_status s = check_variadic(cx, attrs, n_operands, n_results);
    if (s == KILN_OK) s = check_groups(cx, attrs, "replica_groups");
    if (s == KILN_OK) s = check_channel(cx, attrs);
    if (s != KILN_OK) return s;
    int64_t d = attrs->u.collective.dimension, f = attrs->u.collective.split_count;
    if ((s = check_factor(cx, attrs, f)) != KILN_OK) return s;
    for (int i = 0; i < n_operands; i++) {
        if ((s = check_dim(cx, attrs, "all_gather_dim", d, &operands[i], i)) != KILN_OK) return s;
        results[i] = operands[i];
        if (__builtin_mul_overflow(operands[i].shape.dims[d], f, &results[i].shape.dims[d]))
            return kiln__infer_error(cx, attrs, "the gathered dimension overflows");
    }
    return KILN_OK;
}

KILN__INFER(REDUCE_SCATTER) {
    (void)n_operands, (void)n_results;
    kiln_status s = check_groups(cx, attrs, "replica_groups");
    if (s == KILN_OK) s = check_channel(cx, attrs);
    if (s == KILN_OK) s = kiln__check_region(cx, attrs, 0, "the computation region");
    if (s != KILN_OK) return s;
    int64_t d = attrs->u.collective.dimension, f = attrs->u.collective.split_count;
    if ((s = check_dim(cx, attrs, "scatter_dimension", d, &operands[0], 0)) != KILN_OK ||
        (s = check_factor(cx, attrs, f)) != KILN_OK)
        return s;
    if (operands[0].shape.dims[d] % f != 0)
        return kiln__infer_error(cx, attrs,
                                 "dimension %lld of the operand (%lld) does not split into %lld "
                                 "equal parts, one per process of the group",
                                 (long long)d, (long long)operands[0].shape.dims[d], (long long)f);
    results[0] = operands[0];
    results[0].shape.dims[d] /= f;
    return KILN_OK;
}

KILN__INFER(ALL_TO_ALL) {
    kiln_status s = check_variadic(cx, attrs, n_operands, n_results);
    if (s == KILN_OK) s = check_groups(cx, attrs, "replica_groups");
    if (s != KILN_OK) return s;
    int64_t sd = attrs->u.collective.dimension, cd = attrs->u.collective.concat_dimension;
    int64_t n = attrs->u.collective.split_count;
    if (n < 1)
        return kiln__infer_error(cx, attrs, "split_count %lld is not positive", (long long)n);
    if (attrs->u.collective.groups.rows > 0 && attrs->u.collective.groups.cols != n)
        return kiln__infer_error(cx, attrs, "replica_groups has groups of %d; split_count is %lld",
                                 (int)attrs->u.collective.groups.cols, (long long)n);
    for (int i = 0; i < n_operands; i++) {
        if ((s = check_dim(cx, attrs, "split_dimension", sd, &operands[i], i)) != KILN_OK ||
            (s = check_dim(cx, attrs, "concat_dimension", cd, &operands[i], i)) != KILN_OK)
            return s;
        if (operands[i].shape.dims[sd] % n != 0)
            return kiln__infer_error(cx, attrs,
                                     "dimension %lld of operand %d (%lld) does not split into "
                                     "split_count = %lld parts",
                                     (long long)sd, i, (long long)operands[i].shape.dims[sd],
                                     (long long)n);
        results[i] = operands[i];
        if (sd != cd) {
            results[i].shape.dims[sd] /= n;
            if (__builtin_mul_overflow(operands[i].shape.dims[cd], n, &results[i].shape.dims[cd]))
                return kiln__infer_error(cx, attrs, "the concatenated dimension overflows");
        }
    }
    return KILN_OK;
}

KILN__INFER(COLLECTIVE_PERMUTE) {
    (void)n_operands, (void)n_results;
    const kiln__groups *g = &attrs->u.collective.groups;
    if (g->cols != 2 && g->rows > 0)
        return kiln__infer_error(cx, attrs, "source_target_pairs must be Nx2; it is %dx%d",
                                 (int)g->rows, (int)g->cols);
    bool src[KILN__MAX_GROUP_IDS] = {false}, dst[KILN__MAX_GROUP_IDS] = {false};
    for (int32_t r = 0; r < g->rows; r++) {
        int32_t a = g->ids[2 * r], b = g->ids[2 * r + 1];
        if (a < 0 || b < 0)
            return kiln__infer_error(cx, attrs, "source_target_pairs: pair %d holds a negative id",
                                     (int)r);
        if (src[a] || dst[b])
            return kiln__infer_error(cx, attrs, "source_target_pairs: %s %d appears twice",
                                     src[a] ? "source" : "target", (int)(src[a] ? a : b));
        src[a] = dst[b] = true;
    }
    results[0] = operands[0];
    return KILN_OK;
}

/* collective_broadcast, collective_reduce: data operands, then (has_dynamic_root) an i32
 * vector of their roots. */
static kiln_status rooted(kiln_ctx *cx, const kiln__attrs *attrs, const kiln__type *operands,
                          int n_operands, kiln__type *results, int n_results) {
    bool dyn = attrs->u.collective.has_dynamic_root;
    int n_data = n_operands - (dyn ? 1 : 0);
    if (n_data < 1)
        return kiln__infer_error(cx, attrs, "needs at least one data operand%s",
                                 dyn ? " and the roots" : "");
    kiln_status s = kiln__check_result_slots(cx, attrs, n_results, n_data);
    if (s == KILN_OK) s = check_groups(cx, attrs, "replica_groups");
    if (s != KILN_OK) return s;
    if (dyn) {
        const kiln__type *r = &operands[n_data];
        if (r->dtype != KILN_I32 || r->shape.rank != 1 || r->shape.dims[0] != n_data) {
            char have[KILN__TYPE_TEXT];
            return kiln__infer_error(cx, attrs, "the roots operand is %s; expected i32[%d]",
                                     kiln__type_text(r, have), n_data);
        }
    }
    for (int i = 0; i < n_data; i++)
        results[i] = operands[i];
    return KILN_OK;
}

KILN__INFER(COLLECTIVE_BROADCAST) {
    return rooted(cx, attrs, operands, n_operands, results, n_results);
}

KILN__INFER(COLLECTIVE_REDUCE) {
    kiln_status s = kiln__check_region(cx, attrs, 0, "the computation region");
    return s != KILN_OK ? s : rooted(cx, attrs, operands, n_operands, results, n_results);
}

/* run_parallel's result types are its programs': the parser, which builds it, checks them
 * against the functions it names; nothing else makes one. */
KILN__INFER(RUN_PARALLEL) {
    (void)operands, (void)n_operands, (void)results, (void)n_results;
    return kiln__infer_error(cx, attrs, "interpreter.run_parallel is only read from text");
}
