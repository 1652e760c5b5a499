/* SPDX-License-Identifier: Apache-2.0 */
/* Parameter structs as safetensors files, named by their tree paths. */
#include <string.h>

#include "nn_internal.h"

/* Leaves and their paths; names point into one block of n * KILN_TREE_PATH_MAX bytes. */
typedef struct leaves {
    kiln_tensor **t;
    const char **names;
    char *paths;
    int32_t n;
} leaves;

static void leaves_free(kiln_ctx *cx, leaves *l) {
    size_t n = (size_t)l->n;
    kiln__nn_free(cx, l->t, n * sizeof *l->t);
    kiln__nn_free(cx, (void *)l->names, n * sizeof *l->names);
    kiln__nn_free(cx, l->paths, n * KILN_TREE_PATH_MAX);
}

static bool leaves_get(kiln_ctx *cx, const char *fn, const kiln_tree_def *def, const void *tree,
                       leaves *l) {
    memset(l, 0, sizeof *l);
    if (kiln_tree_check(cx, def) != KILN_OK) return false;
    int32_t n = kiln_tree_leaf_count(def);
    l->n = n;
    l->t = kiln__nn_alloc(cx, fn, (size_t)n * sizeof *l->t);
    l->names = kiln__nn_alloc(cx, fn, (size_t)n * sizeof *l->names);
    l->paths = kiln__nn_alloc(cx, fn, (size_t)n * KILN_TREE_PATH_MAX);
    if (!l->t || !l->names || !l->paths ||
        kiln_tree_flatten(cx, def, tree, l->t, n, NULL, 0) != KILN_OK) {
        leaves_free(cx, l);
        return false;
    }
    for (int32_t i = 0; i < n; i++) {
        char *p = l->paths + (size_t)i * KILN_TREE_PATH_MAX;
        kiln_tree_leaf_path(def, i, p, KILN_TREE_PATH_MAX);
        l->names[i] = p;
    }
    return true;
}

kiln_status kiln_nn_save(kiln_ctx *cx, const char *path, const kiln_tree_def *def, const void *tree,
                         const char *const *metadata_kv, int32_t n_metadata) {
    static const char fn[] = "kiln_nn_save";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    if (!kiln__nn_not_null(cx, fn, 3, (const void *[]){path, def, tree},
                           (const char *[]){"path", "def", "tree"}))
        return kiln_ctx_status(cx);
    if (n_metadata < 0 || (n_metadata > 0 && !metadata_kv))
        return kiln__nn_fail(cx, fn, "n_metadata = %d with metadata_kv %s", (int)n_metadata,
                             metadata_kv ? "set" : "NULL"),
               kiln_ctx_status(cx);
    leaves l;
    if (!leaves_get(cx, fn, def, tree, &l)) return kiln_ctx_status(cx);
    size_t meta_bytes = (size_t)(2 * n_metadata + 2) * sizeof(char *);
    const char **meta = kiln__nn_alloc(cx, fn, meta_bytes);
    if (meta) {
        for (int32_t i = 0; i < 2 * n_metadata; i++)
            meta[i] = metadata_kv[i];
        meta[2 * n_metadata] = "kiln.tree";
        meta[2 * n_metadata + 1] = def->name;
        kiln_safetensors_save(cx, path, l.names, l.t, l.n, meta, n_metadata + 1);
        kiln__nn_free(cx, meta, meta_bytes);
    }
    leaves_free(cx, &l);
    return kiln_ctx_status(cx);
}

kiln_status kiln_nn_load(kiln_ctx *cx, const char *path, const kiln_tree_def *def, const void *like,
                         void *out_tree) {
    static const char fn[] = "kiln_nn_load";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    if (!kiln__nn_not_null(cx, fn, 4, (const void *[]){path, def, like, out_tree},
                           (const char *[]){"path", "def", "like", "out_tree"}))
        return kiln_ctx_status(cx);
    leaves l;
    if (!leaves_get(cx, fn, def, like, &l)) return kiln_ctx_status(cx);
    kiln_safetensors *st = NULL;
    if (kiln_safetensors_load(cx, path, &st) == KILN_OK && kiln__nn_begin(cx)) {
        char want[96], got[96];
        for (int32_t i = 0; i < l.n && kiln_ctx_status(cx) == KILN_OK; i++) {
            kiln_shape_format(kiln_tensor_shape(l.t[i]), want, sizeof want);
            const char *want_dt = kiln_dtype_name(kiln_tensor_dtype(l.t[i]));
            int32_t k = kiln_safetensors_find(st, l.names[i]);
            if (k < 0) {
                kiln_ctx_set_error(cx, KILN_NOT_FOUND,
                                   "%s: '%s' has no tensor '%s' (expected %s%s for %s)", fn, path,
                                   l.names[i], want_dt, want, def->name);
                break;
            }
            kiln_dtype dt;
            kiln_shape sh;
            kiln_safetensors_info(st, k, &dt, &sh);
            if (dt != kiln_tensor_dtype(l.t[i]) ||
                !kiln_shape_equal(&sh, kiln_tensor_shape(l.t[i]))) {
                kiln_shape_format(&sh, got, sizeof got);
                kiln__nn_fail(cx, fn, "'%s': tensor '%s' is %s%s; expected %s%s", path, l.names[i],
                              kiln_dtype_name(dt), got, want_dt, want);
                break;
            }
            l.t[i] = kiln_safetensors_get(cx, st, l.names[i]);
        }
        if (kiln_ctx_status(cx) == KILN_OK)
            for (int32_t i = 0; i < l.n; i++)
                l.t[i] = kiln_scope_escape(cx, l.t[i]);
        kiln_scope_end(cx);
        if (kiln_ctx_status(cx) == KILN_OK) {
            memmove(out_tree, like, def->size);
            kiln_tree_unflatten(cx, def, l.t, l.n, NULL, 0, out_tree);
        }
    }
    kiln_safetensors_release(st);
    leaves_free(cx, &l);
    return kiln_ctx_status(cx);
}
