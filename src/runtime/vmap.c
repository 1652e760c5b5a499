/* SPDX-License-Identifier: Apache-2.0 */
/* The public batching API (kiln/vmap.h): trace the function on one example's types,
 * batch the traced module (src/batching), then compile and run it (eager) or inline it
 * into the enclosing trace, as the autodiff API does. */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "batching/batch.h"
#include "core/tensor_internal.h"
#include "kiln/vmap.h"
#include "runtime/traced_fn.h"
#include "runtime/tree_internal.h"

kiln_vmap_options kiln_vmap_options_default(void) {
    return (kiln_vmap_options){.struct_size = sizeof(kiln_vmap_options), .name = "vmap"};
}

static kiln_status read_options(kiln_ctx *cx, const char *fn, const kiln_vmap_options *options,
                                kiln_vmap_options *o) {
    *o = kiln_vmap_options_default();
    kiln_status s = kiln__options_read(cx, fn, options, o, sizeof *o, "kiln_vmap_options_default");
    if (s != KILN_OK) return s;
    if (!o->name) o->name = "vmap";
    if (o->axis_size < 0)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: options->axis_size is %lld; expected >= 0", fn,
                                  (long long)o->axis_size);
    return KILN_OK;
}

/* How messages name argument i: "argument 2", or in tree mode "leaf 'm.w'". */
static void arg_name(const kiln_tree_def *def, int32_t i, char *buf, size_t size) {
    char path[KILN_TREE_PATH_MAX];
    if (def && kiln_tree_leaf_path(def, i, path, sizeof path) >= 0)
        snprintf(buf, size, "leaf '%s'", path);
    else
        snprintf(buf, size, "argument %d", (int)i);
}

/* The core: `axes` holds each argument's in axis (KILN_VMAP_NONE or any in-range value,
 * normalized here); `def` (tree mode) names the arguments in messages. */
static kiln_status vmap_core(kiln_ctx *cx, const char *fn, const kiln_region *f, int32_t n_in,
                             kiln_tensor *const *args, int32_t n_out, const kiln_vmap_options *o,
                             int32_t *axes, const kiln_tree_def *def, kiln_tensor **out) {
    kiln_status s = KILN_OK;
    int64_t size = o->axis_size;
    int32_t sized_by = -1; /* the argument that fixed the size */
    size_t tbytes = (size_t)(n_in + 1) * sizeof(kiln__type);
    size_t obytes = (size_t)(n_out + 1) * sizeof(int32_t);
    kiln__type *types = kiln__alloc(cx, tbytes, _Alignof(kiln__type), fn);
    int32_t *out_axes = types ? kiln__alloc(cx, obytes, _Alignof(int32_t), fn) : NULL;
    if (!out_axes) {
        if (types) kiln__free(cx, types, tbytes);
        return KILN_RESOURCE_EXHAUSTED;
    }
    char have[KILN__TYPE_TEXT];
    for (int32_t i = 0; i < n_in && s == KILN_OK; i++) {
        const kiln_shape *shape = kiln_tensor_shape(args[i]);
        types[i] = (kiln__type){.dtype = kiln_tensor_dtype(args[i]), .shape = *shape};
        if (axes[i] == KILN_VMAP_NONE) continue;
        int32_t rank = shape->rank, a = axes[i] < 0 ? axes[i] + rank : axes[i];
        char who[KILN_TREE_PATH_MAX + 16], other[KILN_TREE_PATH_MAX + 16];
        arg_name(def, i, who, sizeof who);
        if (a < 0 || a >= rank) {
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                   "%s: the in axis of %s is %d; it is %s (rank %d), so the axis "
                                   "must be within %d..%d",
                                   fn, who, (int)axes[i], kiln__type_text(&types[i], have),
                                   (int)rank, -(int)rank, (int)rank - 1);
            break;
        }
        axes[i] = a;
        int64_t n = shape->dims[a];
        if (sized_by < 0 && !o->axis_size) {
            size = n;
            sized_by = i;
        } else if (n != size) {
            if (sized_by >= 0) {
                arg_name(def, sized_by, other, sizeof other);
                s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                       "%s: %s has %lld examples along its axis %d; %s has %lld "
                                       "along its axis %d (every mapped argument holds the "
                                       "same batch)",
                                       fn, who, (long long)n, (int)a, other, (long long)size,
                                       (int)axes[sized_by]);
            } else {
                s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                       "%s: %s has %lld examples along its axis %d; "
                                       "options->axis_size is %lld",
                                       fn, who, (long long)n, (int)a, (long long)size);
            }
            break;
        }
        /* The example's type: the axis removed. */
        for (int32_t d = a; d + 1 < rank; d++)
            types[i].shape.dims[d] = shape->dims[d + 1];
        types[i].shape.rank = rank - 1;
    }
    if (s == KILN_OK && sized_by < 0 && !o->axis_size)
        s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "%s: no argument is mapped (every in axis is KILN_VMAP_NONE), so "
                               "the batch size is unknown: give options->axis_size",
                               fn);
    kiln__traced_fn src;
    memset(&src, 0, sizeof src);
    kiln_module *dst = NULL;
    if (s == KILN_OK) s = kiln__traced_fn_trace(cx, fn, f, n_in, types, n_out, &src);
    if (s == KILN_OK) {
        const kiln__block *body = src.func.body;
        for (int32_t j = 0; j < n_out && s == KILN_OK; j++) {
            int32_t a = o->out_axes ? o->out_axes[j] : 0;
            int32_t rank = body->results[j]->type->shape.rank + 1;
            if (a != KILN_VMAP_NONE && a < 0) a += rank;
            if (a != KILN_VMAP_NONE && (a < 0 || a >= rank))
                s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                       "%s: out_axes[%d] is %d; result %d is %s for one example, "
                                       "so with the batch it has rank %d: the axis must be "
                                       "within %d..%d",
                                       fn, (int)j, (int)o->out_axes[j], (int)j,
                                       kiln__type_text(body->results[j]->type, have), (int)rank,
                                       -(int)rank, (int)rank - 1);
            out_axes[j] = a;
        }
    }
    if (s == KILN_OK) {
        dst = kiln__module_new(cx, o->name);
        kiln__func *g = NULL;
        s = dst ? kiln__batch_func(cx, fn, &src.func, src.fv, src.n_fv, dst, axes, out_axes, size,
                                   &g)
                : kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    if (s == KILN_OK) s = kiln__traced_fn_run(cx, fn, dst, args, n_in, &src, n_in, out, n_out);
    kiln__traced_fn_fini(&src);
    kiln_module_release(dst);
    kiln__free(cx, out_axes, obytes);
    kiln__free(cx, types, tbytes);
    return s;
}

kiln_status kiln_vmap(kiln_ctx *cx, const kiln_region *f, int32_t n_in, kiln_tensor *const *args,
                      int32_t n_out, const kiln_vmap_options *options, kiln_tensor **out) {
    static const char fn[] = "kiln_vmap";
    kiln_status s = kiln__traced_fn_begin(cx, fn, n_in, n_out, "out", out, n_out);
    if (s != KILN_OK) return s;
    if ((s = kiln__traced_fn_check_args(cx, fn, f, "args", args, n_in)) != KILN_OK) return s;
    kiln_vmap_options o;
    if ((s = read_options(cx, fn, options, &o)) != KILN_OK) return s;
    size_t bytes = (size_t)(n_in + 1) * sizeof(int32_t);
    int32_t *axes = kiln__alloc(cx, bytes, _Alignof(int32_t), fn);
    if (!axes) return KILN_RESOURCE_EXHAUSTED;
    for (int32_t i = 0; i < n_in; i++)
        axes[i] = o.in_axes ? o.in_axes[i] : 0;
    s = vmap_core(cx, fn, f, n_in, args, n_out, &o, axes, NULL, out);
    kiln__free(cx, axes, bytes);
    return s;
}

kiln_status kiln_vmap_tree(kiln_ctx *cx, kiln_jit_fn fn, void *user, const kiln_tree_def *in_def,
                           const void *in, const kiln_tree_def *out_def, void *out,
                           const kiln_vmap_options *options) {
    static const char name[] = "kiln_vmap_tree";
    kiln_status s = kiln__tree_fn_begin(cx, name, fn, in_def, in, out_def, out);
    if (s != KILN_OK) return s;
    kiln_vmap_options o;
    if ((s = read_options(cx, name, options, &o)) != KILN_OK) return s;
    if (o.n_in_paths < 0 || (o.n_in_paths > 0 && (!o.in_paths || !o.in_path_axes)))
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: options->n_in_paths is %d; in_paths and in_path_axes must "
                                  "hold that many entries",
                                  name, (int)o.n_in_paths);
    kiln__tree_call t;
    kiln__tree_call_init(&t, fn, user, in_def, out_def);
    /* One block for every scratch array: leaves, results; axes. */
    char *mem;
    size_t bytes;
    int32_t *axes;
    s = kiln__tree_call_scratch(cx, name, &t, in, (size_t)t.n_in + (size_t)t.n_out + 2,
                                (size_t)t.n_in + 1, &mem, &bytes, &axes);
    if (!mem) return s;
    kiln_tensor **leaves = (kiln_tensor **)mem;
    kiln_tensor **results = leaves + t.n_in;
    char path[KILN_TREE_PATH_MAX];
    for (int32_t i = 0; i < t.n_in && s == KILN_OK; i++) {
        kiln_tree_leaf_path(in_def, i, path, sizeof path);
        axes[i] = o.in_axis;
        for (int32_t k = 0; k < o.n_in_paths; k++)
            if (o.in_paths[k] && kiln__tree_path_has_prefix(path, o.in_paths[k])) {
                axes[i] = o.in_path_axes[k];
                break;
            }
    }
    if (s == KILN_OK)
        s = kiln__tree_check_prefixes(cx, name, "in_paths", in_def, o.in_paths, o.n_in_paths);
    if (s == KILN_OK) {
        kiln_region region = {kiln__tree_call_region, &t};
        s = vmap_core(cx, name, &region, t.n_in, leaves, t.n_out, &o, axes, in_def, results);
    }
    if (s == KILN_OK)
        s = kiln_tree_unflatten(cx, out_def, results, t.n_out, t.out_statics, t.n_out_statics, out);
    kiln__free(cx, mem, bytes);
    return s;
}
