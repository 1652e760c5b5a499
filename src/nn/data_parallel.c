/* SPDX-License-Identifier: Apache-2.0 */
/* Data-parallel gradients (kiln_nn_data_parallel_grads) and the check that replicas hold
 * the same parameters (kiln_nn_check_replicated).
 *
 * Bitwise reproducibility rests on doing the same float operations in the same order
 * whatever the split: the shards' gradients are summed left to right (this process's
 * shards in sequence, then the replicas' sums by an all_reduce, which folds in replica
 * order), then multiplied by one constant, 1 / (replicas * shards). So R replicas of one
 * shard each and one process of R shards compute ((g0 + g1) + g2) + ... alike. The
 * leaves of a dtype travel as one vector (one collective per dtype, not per leaf). */
#include <stdio.h>
#include <string.h>

#include "nn_internal.h"

kiln_nn_data_parallel kiln_nn_data_parallel_default(void) {
    return (kiln_nn_data_parallel){.struct_size = sizeof(kiln_nn_data_parallel), .n_shards = 1};
}

/* A tree buffer of def's type: a copy of `like` (statics) with every tensor leaf NULL. */
static void *blank_tree(kiln_ctx *cx, const char *fn, const kiln_tree_def *def, const void *like) {
    void *t = kiln__nn_alloc(cx, fn, def->size);
    if (!t) return NULL;
    memcpy(t, like, def->size);
    kiln_tensor ***slots;
    int32_t n;
    if (!kiln__nn_leaf_slots(cx, fn, def, t, &slots, &n)) {
        kiln__nn_free(cx, t, def->size);
        return NULL;
    }
    for (int32_t i = 0; i < n; i++)
        *slots[i] = NULL;
    kiln__nn_free(cx, slots, (size_t)n * sizeof *slots);
    return t;
}

/* Shard s of S of every leaf of batch (along dimension 0), into shard (a copy of batch). */
static bool slice_shard(kiln_ctx *cx, const char *fn, const kiln_tree_def *def, kiln_tensor ***src,
                        kiln_tensor ***dst, int32_t n, int32_t s, int32_t S) {
    for (int32_t i = 0; i < n; i++) {
        kiln_tensor *x = *src[i];
        char path[128];
        kiln_tree_leaf_path(def, i, path, sizeof path);
        if (!x) {
            kiln__nn_fail(cx, fn, "batch.%s is NULL", path);
            return false;
        }
        int32_t rank = kiln_tensor_rank(x);
        int64_t d0 = rank > 0 ? kiln_tensor_dim(x, 0) : 0;
        if (rank == 0 || d0 % S) {
            char shape[96];
            kiln__nn_fail(cx, fn,
                          "batch.%s has shape %s; %d shards need a first dimension they divide",
                          path, kiln__nn_shape_str(x, shape, sizeof shape), (int)S);
            return false;
        }
        kiln_dims start = {.count = rank}, limit = {.count = rank};
        for (int32_t a = 0; a < rank; a++)
            limit.v[a] = kiln_tensor_dim(x, a);
        start.v[0] = d0 / S * s;
        limit.v[0] = d0 / S * (s + 1);
        *dst[i] = kiln_slice(cx, x, start, limit, KILN_DIMS_NONE);
    }
    return kiln_ctx_status(cx) == KILN_OK;
}

/* acc[i] += g[i] (acc[i] = g[i] at first), checking g against `like` (the params). */
static bool accumulate(kiln_ctx *cx, const char *fn, const char *what, const kiln_tree_def *def,
                       kiln_tensor ***acc, kiln_tensor ***g, kiln_tensor ***like, int32_t n,
                       bool first) {
    for (int32_t i = 0; i < n; i++) {
        kiln_tensor *x = *g[i];
        char path[128];
        kiln_tree_leaf_path(def, i, path, sizeof path);
        if (!first && (!x) != (!*acc[i])) {
            kiln__nn_fail(cx, fn, "%s.%s is NULL for some shards only", what, path);
            return false;
        }
        if (!x) continue;
        if (!kiln_dtype_is_float(kiln_tensor_dtype(x))) {
            kiln__nn_fail(cx, fn, "%s.%s is %s; only float leaves can be averaged", what, path,
                          kiln_dtype_name(kiln_tensor_dtype(x)));
            return false;
        }
        const kiln_tensor *ref = like ? *like[i] : first ? NULL : *acc[i];
        if (ref) {
            const kiln_shape *a = kiln_tensor_shape(x), *b = kiln_tensor_shape(ref);
            bool same = kiln_tensor_dtype(x) == kiln_tensor_dtype(ref) && a->rank == b->rank;
            for (int32_t d = 0; same && d < a->rank; d++)
                same = a->dims[d] == b->dims[d];
            if (!same) {
                char s1[96], s2[96];
                kiln__nn_fail(
                    cx, fn, "%s.%s is %s%s; expected %s%s (%s)", what, path,
                    kiln_dtype_name(kiln_tensor_dtype(x)), kiln__nn_shape_str(x, s1, sizeof s1),
                    kiln_dtype_name(kiln_tensor_dtype(ref)), kiln__nn_shape_str(ref, s2, sizeof s2),
                    like ? "the parameter's" : "the first shard's");
                return false;
            }
        }
        *acc[i] = first ? x : kiln_add(cx, *acc[i], x);
    }
    return kiln_ctx_status(cx) == KILN_OK;
}

/* The leaves' sums over the replicas, then times `scale`: the leaves of each dtype
 * flattened into one vector for one all_reduce (R > 1), then split again. */
static bool reduce_and_scale(kiln_ctx *cx, kiln_tensor ***leaves, int32_t n, int32_t replicas,
                             double scale) {
    bool done[512] = {false};
    if (n > 512) {
        kiln__nn_fail(cx, "kiln_nn_data_parallel_grads", "more than 512 leaves");
        return false;
    }
    for (int32_t i = 0; i < n; i++) {
        if (!*leaves[i] || done[i]) continue;
        kiln_dtype dt = kiln_tensor_dtype(*leaves[i]);
        kiln_tensor *parts[512];
        int32_t idx[512], k = 0;
        for (int32_t j = i; j < n; j++)
            if (*leaves[j] && !done[j] && kiln_tensor_dtype(*leaves[j]) == dt) {
                idx[k] = j;
                parts[k++] = kiln_reshape(cx, *leaves[j], KILN_SHAPE(-1));
                done[j] = true;
            }
        kiln_tensor *flat = k == 1 ? parts[0] : kiln_concatenate(cx, parts, k, 0);
        if (replicas > 1) flat = kiln_all_reduce(cx, flat, kiln_region_add(), NULL);
        if (scale != 1.0) flat = kiln_multiply(cx, flat, kiln_scalar_like(cx, flat, scale));
        int64_t at = 0;
        for (int32_t m = 0; m < k && kiln_ctx_status(cx) == KILN_OK; m++) {
            kiln_tensor *leaf = *leaves[idx[m]];
            int64_t count = kiln_tensor_dim(parts[m], 0);
            kiln_tensor *piece =
                kiln_slice(cx, flat, KILN_DIMS(at), KILN_DIMS(at + count), KILN_DIMS_NONE);
            *leaves[idx[m]] = kiln_reshape(cx, piece, *kiln_tensor_shape(leaf));
            at += count;
        }
    }
    return kiln_ctx_status(cx) == KILN_OK;
}

kiln_status kiln_nn_data_parallel_grads(kiln_ctx *cx, const kiln_nn_data_parallel *dp,
                                        kiln_nn_shard_grad_fn fn, void *user,
                                        const kiln_tree_def *params_def, const void *params,
                                        const kiln_tree_def *batch_def, const void *batch,
                                        const kiln_tree_def *aux_def, void *out_grads,
                                        void *out_aux) {
    static const char name[] = "kiln_nn_data_parallel_grads";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    kiln_nn_data_parallel o = kiln_nn_data_parallel_default();
    const char *null = !fn                        ? "fn"
                       : !params_def              ? "params_def"
                       : !params                  ? "params"
                       : !batch_def               ? "batch_def"
                       : !batch                   ? "batch"
                       : !out_grads               ? "out_grads"
                       : (!aux_def) != (!out_aux) ? (aux_def ? "out_aux" : "aux_def")
                                                  : NULL;
    if (null) {
        kiln__nn_fail(cx, name, "%s is NULL%s", null,
                      !strncmp(null, "aux", 3) || !strncmp(null, "out_aux", 7)
                          ? " (aux_def and out_aux go together)"
                          : "");
        return kiln_ctx_status(cx);
    }
    if (dp) {
        if (dp->struct_size < sizeof o) {
            kiln__nn_fail(cx, name, "dp->struct_size is %zu; expected %zu", dp->struct_size,
                          sizeof o);
            return kiln_ctx_status(cx);
        }
        o = *dp;
    }
    if (o.n_shards < 1) {
        kiln__nn_fail(cx, name, "dp->n_shards is %d; expected at least 1", (int)o.n_shards);
        return kiln_ctx_status(cx);
    }
    if (kiln_tree_check(cx, params_def) != KILN_OK || kiln_tree_check(cx, batch_def) != KILN_OK ||
        (aux_def && kiln_tree_check(cx, aux_def) != KILN_OK))
        return kiln_ctx_status(cx);
    int32_t S = o.n_shards;
    int32_t R = kiln_ctx_comm(cx, NULL) ? kiln_comm_num_replicas(kiln_ctx_comm(cx, NULL)) : 1;

    /* Working trees: a shard, one shard's gradients and aux, and the sums. */
    void *shard = blank_tree(cx, name, batch_def, batch);
    void *g = blank_tree(cx, name, params_def, params);
    void *acc = blank_tree(cx, name, params_def, params);
    void *aux = aux_def ? blank_tree(cx, name, aux_def, out_aux) : NULL;
    void *aux_acc = aux_def ? blank_tree(cx, name, aux_def, out_aux) : NULL;
    kiln_tensor ***s_batch = NULL, ***s_shard = NULL, ***s_params = NULL, ***s_g = NULL,
                ***s_acc = NULL, ***s_aux = NULL, ***s_aux_acc = NULL;
    int32_t nb = 0, np = 0, na = 0;
    bool ok = shard && g && acc && (!aux_def || (aux && aux_acc)) &&
              kiln__nn_leaf_slots(cx, name, batch_def, (void *)batch, &s_batch, &nb) &&
              kiln__nn_leaf_slots(cx, name, batch_def, shard, &s_shard, &nb) &&
              kiln__nn_leaf_slots(cx, name, params_def, (void *)params, &s_params, &np) &&
              kiln__nn_leaf_slots(cx, name, params_def, g, &s_g, &np) &&
              kiln__nn_leaf_slots(cx, name, params_def, acc, &s_acc, &np) &&
              (!aux_def || (kiln__nn_leaf_slots(cx, name, aux_def, aux, &s_aux, &na) &&
                            kiln__nn_leaf_slots(cx, name, aux_def, aux_acc, &s_aux_acc, &na)));
    ok = ok && kiln__nn_begin(cx);
    bool scoped = ok;
    for (int32_t s = 0; ok && s < S; s++) {
        const void *this_shard = batch;
        if (S > 1) {
            ok = slice_shard(cx, name, batch_def, s_batch, s_shard, nb, s, S);
            this_shard = shard;
        }
        for (int32_t i = 0; ok && i < np; i++)
            *s_g[i] = NULL;
        for (int32_t i = 0; ok && i < na; i++)
            *s_aux[i] = NULL;
        kiln_status fs = ok ? fn(cx, params, this_shard, g, aux, user) : KILN_OK;
        if (fs != KILN_OK && kiln_ctx_status(cx) == KILN_OK)
            kiln_ctx_set_error(cx, fs, "%s: fn returned %s for shard %d", name,
                               kiln_status_name(fs), (int)s);
        ok = ok && kiln_ctx_status(cx) == KILN_OK;
        ok = ok && accumulate(cx, name, "grads", params_def, s_acc, s_g, s_params, np, s == 0);
        ok = ok &&
             (!aux_def || accumulate(cx, name, "aux", aux_def, s_aux_acc, s_aux, NULL, na, s == 0));
    }
    /* One vector of every leaf, gradients and aux alike. */
    kiln_tensor **all_slots[1024];
    int32_t n_all = 0;
    if (ok && np + na > 512) {
        kiln__nn_fail(cx, name, "more than 512 gradient and aux leaves");
        ok = false;
    }
    for (int32_t i = 0; ok && i < np; i++)
        all_slots[n_all++] = s_acc[i];
    for (int32_t i = 0; ok && i < na; i++)
        all_slots[n_all++] = s_aux_acc[i];
    ok = ok && reduce_and_scale(cx, all_slots, n_all, R, 1.0 / ((double)R * S));
    if (scoped) kiln__nn_end_n(cx, all_slots, ok ? n_all : 0);
    if (ok && kiln_ctx_status(cx) == KILN_OK) {
        memcpy(out_grads, acc, params_def->size);
        if (aux_def) memcpy(out_aux, aux_acc, aux_def->size);
    }
    kiln__nn_free(cx, s_batch, (size_t)nb * sizeof *s_batch);
    kiln__nn_free(cx, s_shard, (size_t)nb * sizeof *s_shard);
    kiln__nn_free(cx, s_params, (size_t)np * sizeof *s_params);
    kiln__nn_free(cx, s_g, (size_t)np * sizeof *s_g);
    kiln__nn_free(cx, s_acc, (size_t)np * sizeof *s_acc);
    kiln__nn_free(cx, s_aux, (size_t)na * sizeof *s_aux);
    kiln__nn_free(cx, s_aux_acc, (size_t)na * sizeof *s_aux_acc);
    kiln__nn_free(cx, shard, batch_def->size);
    kiln__nn_free(cx, g, params_def->size);
    kiln__nn_free(cx, acc, params_def->size);
    if (aux_def) {
        kiln__nn_free(cx, aux, aux_def->size);
        kiln__nn_free(cx, aux_acc, aux_def->size);
    }
    return kiln_ctx_status(cx);
}

/* ---- the replicas' parameters are the same bits ------------------------------------------ */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

kiln_status kiln_nn_check_replicated(kiln_ctx *cx, const kiln_tree_def *def, const void *tree) {
    static const char name[] = "kiln_nn_check_replicated";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    if (!def || !tree) {
        kiln__nn_fail(cx, name, "%s is NULL", def ? "tree" : "def");
        return kiln_ctx_status(cx);
    }
    if (kiln_tree_check(cx, def) != KILN_OK) return kiln_ctx_status(cx);
    kiln_tensor ***slots;
    int32_t n;
    if (!kiln__nn_leaf_slots(cx, name, def, (void *)tree, &slots, &n)) return kiln_ctx_status(cx);
    uint64_t h = 0xcbf29ce484222325ull;
    for (int32_t i = 0; i < n && kiln_ctx_status(cx) == KILN_OK; i++) {
        kiln_tensor *x = *slots[i];
        char path[128];
        kiln_tree_leaf_path(def, i, path, sizeof path);
        if (!x) continue;
        if (kiln_tensor_is_traced(x)) {
            kiln__nn_fail(cx, name, "%s is traced; the check needs concrete tensors", path);
            break;
        }
        kiln_dtype dt = kiln_tensor_dtype(x);
        h = fnv1a(h, &dt, sizeof dt);
        h = fnv1a(h, kiln_tensor_shape(x), sizeof(kiln_shape));
        h = fnv1a(h, kiln_tensor_data(x), kiln_tensor_nbytes(x));
    }
    kiln__nn_free(cx, slots, (size_t)n * sizeof *slots);
    kiln_comm *comm = kiln_ctx_comm(cx, NULL);
    int32_t R = comm ? kiln_comm_num_replicas(comm) : 1;
    if (kiln_ctx_status(cx) != KILN_OK || R == 1) return kiln_ctx_status(cx);
    if (!kiln__nn_begin(cx)) return kiln_ctx_status(cx);
    uint32_t words[2] = {(uint32_t)h, (uint32_t)(h >> 32)};
    kiln_tensor *mine = kiln_tensor_from_host(cx, KILN_U32, KILN_SHAPE(2), words, sizeof words);
    kiln_tensor *all = kiln_all_gather(cx, mine, 0, NULL);
    if (all) {
        const uint32_t *w = kiln_tensor_data(all);
        for (int32_t r = 1; r < R; r++)
            if (w[2 * r] != w[0] || w[2 * r + 1] != w[1]) {
                kiln_ctx_set_error(cx, KILN_DATA_LOSS,
                                   "%s: the replicas hold different %s: replica 0's hash is "
                                   "%08x%08x, replica %d's %08x%08x",
                                   name, def->name, w[1], w[0], (int)r, w[2 * r + 1], w[2 * r]);
                break;
            }
    }
    kiln_scope_end(cx);
    return kiln_ctx_status(cx);
}
