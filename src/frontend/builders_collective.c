/* SPDX-License-Identifier: Apache-2.0 */
/* The collectives' builders (kiln/spmd.h). The groups' sizes that a result type depends on
 * (all_gather's and reduce_scatter's) come from the groups and the grid of the ctx's
 * communicator; the kernels check them against the group each process is in. */
#include <string.h>

#include "backend/comm.h"
#include "frontend/op_run.h"

/* The groups into attrs (INVALID_ARGUMENT naming fn for bad ones; NULL: one of all). */
static bool set_groups(kiln_ctx *cx, const char *fn, const kiln_replica_groups *g, kiln__attrs *a) {
    if (!g) return true;
    a->u.collective.channel_handle = g->channel_id;
    a->u.collective.channel_type = g->channel_id > 0 ? 1 : 0; /* device to device */
    a->u.collective.use_global_device_ids = g->use_global_device_ids;
    if (!g->ids || g->n_groups == 0) return true;
    if (g->n_groups < 0 || g->group_size < 1 ||
        (int64_t)g->n_groups * g->group_size > KILN__MAX_GROUP_IDS) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: groups->n_groups (%d) x group_size (%d) must be 1 to %d ids", fn,
                           (int)g->n_groups, (int)g->group_size, KILN__MAX_GROUP_IDS);
        return false;
    }
    kiln__groups *dst = &a->u.collective.groups;
    dst->rows = g->n_groups;
    dst->cols = g->group_size;
    for (int32_t i = 0; i < g->n_groups * g->group_size; i++) {
        if (g->ids[i] < -1 || g->ids[i] >= KILN_COMM_MAX_PROCESSES) {
            kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: groups->ids[%d] is %lld", fn, (int)i,
                               (long long)g->ids[i]);
            return false;
        }
        dst->ids[i] = (int32_t)g->ids[i];
    }
    return true;
}

/* The size of each group the op will see: the groups' width (the whole range when they
 * are empty), times the partitions for cross_replica_and_partition. */
static int64_t group_size(kiln_ctx *cx, kiln_op op, const kiln__attrs *a) {
    kiln__place pl = kiln__place_of(cx);
    kiln__group_mode mode = kiln__group_mode_of(op, a);
    int64_t width = a->u.collective.groups.cols;
    if (a->u.collective.groups.rows == 0 || width == 0)
        width = mode == KILN__CROSS_PARTITION ? pl.num_partitions
                : mode == KILN__FLATTENED_IDS ? (int64_t)pl.num_replicas * pl.num_partitions
                                              : pl.num_replicas;
    return mode == KILN__CROSS_REPLICA_AND_PARTITION ? width * pl.num_partitions : width;
}

kiln_tensor *kiln_replica_id(kiln_ctx *cx) {
    kiln__attrs a = {.fn = "kiln_replica_id"};
    return kiln__op_run1(cx, KILN_OP_REPLICA_ID, &a, NULL, 0);
}

kiln_tensor *kiln_partition_id(kiln_ctx *cx) {
    kiln__attrs a = {.fn = "kiln_partition_id"};
    return kiln__op_run1(cx, KILN_OP_PARTITION_ID, &a, NULL, 0);
}

kiln_tensor *kiln_all_reduce(kiln_ctx *cx, kiln_tensor *x, const kiln_region *computation,
                             const kiln_replica_groups *groups) {
    kiln__attrs a = {.fn = "kiln_all_reduce", .n_regions = 1, .region = {computation}};
    if (!set_groups(cx, a.fn, groups, &a)) return NULL;
    a.n_results = 1;
    return kiln__op_run1(cx, KILN_OP_ALL_REDUCE, &a, &x, 1);
}

kiln_tensor *kiln_all_gather(kiln_ctx *cx, kiln_tensor *x, int64_t dim,
                             const kiln_replica_groups *groups) {
    kiln__attrs a = {.fn = "kiln_all_gather", .n_results = 1};
    if (!set_groups(cx, a.fn, groups, &a)) return NULL;
    a.u.collective.dimension = dim;
    a.u.collective.split_count = group_size(cx, KILN_OP_ALL_GATHER, &a);
    return kiln__op_run1(cx, KILN_OP_ALL_GATHER, &a, &x, 1);
}

kiln_tensor *kiln_reduce_scatter(kiln_ctx *cx, kiln_tensor *x, int64_t dim,
                                 const kiln_region *computation,
                                 const kiln_replica_groups *groups) {
    kiln__attrs a = {.fn = "kiln_reduce_scatter", .n_regions = 1, .region = {computation}};
    if (!set_groups(cx, a.fn, groups, &a)) return NULL;
    a.u.collective.dimension = dim;
    a.u.collective.split_count = group_size(cx, KILN_OP_REDUCE_SCATTER, &a);
    return kiln__op_run1(cx, KILN_OP_REDUCE_SCATTER, &a, &x, 1);
}

kiln_tensor *kiln_all_to_all(kiln_ctx *cx, kiln_tensor *x, int64_t split_dim, int64_t concat_dim,
                             int64_t split_count, const kiln_replica_groups *groups) {
    kiln__attrs a = {.fn = "kiln_all_to_all", .n_results = 1};
    if (!set_groups(cx, a.fn, groups, &a)) return NULL;
    a.u.collective.use_global_device_ids = false; /* not an attribute of all_to_all */
    a.u.collective.dimension = split_dim;
    a.u.collective.concat_dimension = concat_dim;
    a.u.collective.split_count = split_count;
    return kiln__op_run1(cx, KILN_OP_ALL_TO_ALL, &a, &x, 1);
}

kiln_tensor *kiln_collective_permute(kiln_ctx *cx, kiln_tensor *x, const int64_t *pairs,
                                     int32_t n_pairs, int64_t channel_id) {
    kiln__attrs a = {.fn = "kiln_collective_permute"};
    if (n_pairs < 0 || n_pairs > KILN__MAX_GROUP_IDS / 2 || (n_pairs > 0 && !pairs)) {
        if (cx)
            kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "kiln_collective_permute: n_pairs is %d (0 to %d, with pairs)",
                               (int)n_pairs, KILN__MAX_GROUP_IDS / 2);
        return NULL;
    }
    kiln_replica_groups g = {
        .ids = pairs, .n_groups = n_pairs, .group_size = 2, .channel_id = channel_id};
    if (!set_groups(cx, a.fn, &g, &a)) return NULL;
    a.u.collective.groups.cols = 2;
    return kiln__op_run1(cx, KILN_OP_COLLECTIVE_PERMUTE, &a, &x, 1);
}

kiln_tensor *kiln_collective_reduce(kiln_ctx *cx, kiln_tensor *x, const kiln_region *computation,
                                    const kiln_replica_groups *groups) {
    kiln__attrs a = {
        .fn = "kiln_collective_reduce", .n_results = 1, .n_regions = 1, .region = {computation}};
    if (!set_groups(cx, a.fn, groups, &a)) return NULL;
    a.u.collective.use_global_device_ids = false;
    return kiln__op_run1(cx, KILN_OP_COLLECTIVE_REDUCE, &a, &x, 1);
}

kiln_tensor *kiln_collective_broadcast(kiln_ctx *cx, kiln_tensor *x,
                                       const kiln_replica_groups *groups) {
    kiln__attrs a = {.fn = "kiln_collective_broadcast", .n_results = 1};
    if (!set_groups(cx, a.fn, groups, &a)) return NULL;
    a.u.collective.use_global_device_ids = false;
    return kiln__op_run1(cx, KILN_OP_COLLECTIVE_BROADCAST, &a, &x, 1);
}
