/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_lower: trace a function into a module and record its calling convention. */
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "core/tensor_internal.h"
#include "frontend/trace.h"
#include "runtime/traced_fn.h"
#include "runtime/tree_internal.h"

kiln_lower_options kiln_lower_options_default(void) {
    return (kiln_lower_options){.struct_size = sizeof(kiln_lower_options), .name = "kiln"};
}

static kiln_status check_specs(kiln_ctx *cx, const kiln_arg_spec *args, int32_t n_args) {
    for (int32_t i = 0; i < n_args; i++) {
        int64_t numel;
        size_t nbytes;
        char fn[64];
        snprintf(fn, sizeof fn, "kiln_lower: args[%d]", (int)i);
        if (!kiln__check_dtype_shape(cx, fn, args[i].dtype, &args[i].shape, &numel, &nbytes))
            return KILN_INVALID_ARGUMENT;
    }
    return KILN_OK;
}

/* Preserved results, donation and aliases, checked right after lowering (the compile
 * path of docs/ARCHITECTURE.md, section 2). A result may alias a donated argument of the
 * same dtype and byte size that no other result aliases and that is not returned
 * unchanged. */
static kiln_status calling_convention(kiln_module *m, const kiln_arg_spec *args, bool donate_all) {
    kiln__block *body = m->funcs[0]->body;
    int32_t n_args = body->n_args, n_results = body->n_results;
    m->donated = kiln__arena_alloc(&m->arena, (size_t)(n_args ? n_args : 1) * sizeof(bool), 1);
    m->preserved =
        kiln__arena_alloc(&m->arena, (size_t)(n_results ? n_results : 1) * sizeof(int32_t), 4);
    m->aliases =
        kiln__arena_alloc(&m->arena, (size_t)(n_results ? n_results : 1) * sizeof(int32_t), 4);
    if (!m->donated || !m->preserved || !m->aliases) return KILN_RESOURCE_EXHAUSTED;
    bool *taken = kiln__arena_alloc(&m->arena, (size_t)(n_args ? n_args : 1) * sizeof(bool), 1);
    if (!taken) return KILN_RESOURCE_EXHAUSTED;
    memset(taken, 0, (size_t)(n_args ? n_args : 1));
    for (int32_t r = 0; r < n_results; r++) {
        const kiln__value *v = body->results[r];
        m->preserved[r] = v->block == body ? v->index : -1;
        m->aliases[r] = -1;
    }
    for (int32_t a = 0; a < n_args; a++) {
        bool preserved = false;
        for (int32_t r = 0; r < n_results; r++)
            preserved |= m->preserved[r] == a;
        m->donated[a] = args[a].donate || (donate_all && !preserved);
    }
    for (int32_t r = 0; r < n_results; r++) {
        if (m->preserved[r] >= 0) continue;
        const kiln__type *t = body->results[r]->type;
        size_t bytes;
        kiln_shape_nbytes(&t->shape, t->dtype, &bytes);
        for (int32_t a = 0; a < n_args; a++) {
            const kiln__type *at = body->args[a]->type;
            size_t abytes;
            kiln_shape_nbytes(&at->shape, at->dtype, &abytes);
            bool preserved = false;
            for (int32_t q = 0; q < n_results; q++)
                preserved |= m->preserved[q] == a;
            if (m->donated[a] && !taken[a] && !preserved && at->dtype == t->dtype &&
                abytes == bytes) {
                m->aliases[r] = a;
                taken[a] = true;
                break;
            }
        }
    }
    return KILN_OK;
}

kiln_status kiln_lower(kiln_ctx *cx, const kiln_region *fn, const kiln_arg_spec *args,
                       int32_t n_args, int32_t n_results, const kiln_lower_options *options,
                       kiln_module **out_module) {
    static const char name[] = "kiln_lower";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_module) return kiln__null_argument(cx, name, "out_module");
    *out_module = NULL;
    if (!fn || !fn->fn) return kiln__null_argument(cx, name, "fn");
    if (n_args < 0 || n_results < KILN_LOWER_INFER_RESULTS || n_args > 4096 || n_results > 4096)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: n_args %d and n_results %d must be within 0..4096 "
                                  "(n_results may be KILN_LOWER_INFER_RESULTS)",
                                  name, (int)n_args, (int)n_results);
    bool infer = n_results == KILN_LOWER_INFER_RESULTS;
    if (infer) n_results = 4096; /* room; the count is what fn stores */
    if (n_args > 0 && !args) return kiln__null_argument(cx, name, "args");
    kiln_lower_options o = kiln_lower_options_default();
    kiln_status s =
        kiln__options_read(cx, name, options, &o, sizeof o, "kiln_lower_options_default");
    if (s != KILN_OK) return s;
    if (cx->trace)
        return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                                  "%s: called while tracing (lower the outer function instead, "
                                  "or call the inner one directly)",
                                  name);
    if ((s = check_specs(cx, args, n_args)) != KILN_OK) return s;

    kiln_module *m = kiln__module_new(cx, o.name ? o.name : "kiln");
    if (!m) return KILN_RESOURCE_EXHAUSTED;
    kiln__func *main_fn = kiln__module_add_func(m, "main", true);
    if (!main_fn) {
        kiln_module_release(m);
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", name);
    }
    main_fn->arg_names = kiln__arena_alloc(
        &m->arena, (size_t)(n_args ? n_args : 1) * sizeof(char *), _Alignof(char *));
    kiln__type *types = kiln__arena_alloc(&m->arena, (size_t)(n_args ? n_args : 1) * sizeof *types,
                                          _Alignof(kiln__type));
    if (!main_fn->arg_names || !types) {
        kiln_module_release(m);
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", name);
    }
    for (int32_t i = 0; i < n_args; i++) {
        types[i] = (kiln__type){.dtype = args[i].dtype, .shape = args[i].shape};
        main_fn->arg_names[i] =
            args[i].name ? kiln__arena_strndup(&m->arena, args[i].name, strlen(args[i].name))
                         : NULL;
    }

    /* Trace the function body as a region of no op. */
    kiln__trace top = {.module = m, .block = main_fn->body, .outer = NULL};
    kiln__block *body = main_fn->body;
    s = kiln_scope_begin(cx);
    if (s == KILN_OK) {
        size_t in_bytes = (size_t)(n_args + n_results + 1) * sizeof(kiln_tensor *);
        kiln_tensor **in = kiln__calloc(cx, in_bytes, _Alignof(kiln_tensor *), name);
        if (!in) s = KILN_RESOURCE_EXHAUSTED;
        kiln_tensor **outs = in ? in + n_args : NULL;
        for (int32_t i = 0; i < n_args && s == KILN_OK; i++) {
            kiln__value *v = kiln__block_add_arg(m, body, types[i]);
            in[i] = v ? kiln__tensor_new_traced(cx, name, types[i].dtype, types[i].shape, v) : NULL;
            if (!in[i]) s = KILN_RESOURCE_EXHAUSTED;
        }
        if (s == KILN_OK) {
            cx->trace = &top;
            s = fn->fn(cx, in, outs, fn->user);
            if (s == KILN_OK && kiln_ctx_status(cx) != KILN_OK) s = kiln_ctx_status(cx);
            if (s != KILN_OK && kiln_ctx_status(cx) == KILN_OK)
                kiln_ctx_set_error(cx, s, "%s: the function failed with %s", name,
                                   kiln_status_name(s));
            kiln__value **values = NULL;
            if (s == KILN_OK && infer) {
                int32_t stored = 0;
                for (int32_t r = 0; r < n_results; r++)
                    if (outs[r]) stored = r + 1;
                n_results = stored;
            }
            if (s == KILN_OK) {
                values = kiln__arena_alloc(&m->arena,
                                           (size_t)(n_results ? n_results : 1) * sizeof *values,
                                           _Alignof(void *));
                if (!values) s = KILN_RESOURCE_EXHAUSTED;
            }
            if (s == KILN_OK)
                s = kiln__traced_fn_results(cx, name, m, body, outs, values, n_results);
            cx->trace = NULL;
        }
        if (in) kiln__free(cx, in, in_bytes);
        kiln_scope_end(cx);
    }
    if (s == KILN_OK) s = calling_convention(m, args, o.donate_all);
    if (s == KILN_OK && o.result_names) {
        int32_t n = main_fn->body->n_results;
        main_fn->result_names =
            kiln__arena_alloc(&m->arena, (size_t)(n ? n : 1) * sizeof(char *), _Alignof(char *));
        if (!main_fn->result_names) s = KILN_RESOURCE_EXHAUSTED;
        for (int32_t r = 0; r < n && s == KILN_OK; r++) {
            const char *rn = o.result_names[r];
            main_fn->result_names[r] = rn ? kiln__arena_strndup(&m->arena, rn, strlen(rn)) : NULL;
            if (rn && !main_fn->result_names[r]) s = KILN_RESOURCE_EXHAUSTED;
        }
    }
    if (s != KILN_OK) {
        if (kiln_ctx_status(cx) == KILN_OK) kiln_ctx_set_error(cx, s, "%s: out of memory", name);
        kiln_module_release(m);
        return s;
    }
    *out_module = m;
    return KILN_OK;
}

/* The next `bytes` of a block sized for them (16-byte aligned pieces). */
static void *carve(char **at, size_t bytes) {
    char *p = (char *)(((uintptr_t)*at + 15) & ~(uintptr_t)15);
    *at = p + bytes;
    return p;
}

kiln_status kiln_lower_tree(kiln_ctx *cx, kiln_jit_fn fn, void *user, const kiln_tree_def *in_def,
                            const void *in, const kiln_tree_def *out_def,
                            const kiln_lower_options *options, kiln_module **out_module) {
    static const char name[] = "kiln_lower_tree";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_module) return kiln__null_argument(cx, name, "out_module");
    *out_module = NULL;
    kiln_status s = kiln__tree_fn_args(cx, name, fn, in_def, in, out_def);
    if (s != KILN_OK) return s;
    kiln_lower_options o = kiln_lower_options_default();
    if ((s = kiln__options_read(cx, name, options, &o, sizeof o, "kiln_lower_options_default")) !=
        KILN_OK)
        return s;
    kiln__tree_call t;
    kiln__tree_call_init(&t, fn, user, in_def, out_def);
    /* One block: leaves, statics, the specs, both structs, and every leaf's path (each
     * piece padded to 16 bytes: 7 pieces). */
    size_t n_paths = (size_t)t.n_in + (size_t)t.n_out;
    size_t bytes = (size_t)(t.n_in + 1) * sizeof(kiln_tensor *) +
                   (size_t)(t.n_statics + t.n_out_statics + 2) * sizeof(kiln_tree_static) +
                   (size_t)(t.n_in + 1) * sizeof(kiln_arg_spec) + (n_paths + 1) * sizeof(char *) +
                   in_def->size + out_def->size + 2 + n_paths * KILN_TREE_PATH_MAX + 7 * 16;
    char *mem = kiln__calloc(cx, bytes, 16, name);
    if (!mem) return KILN_RESOURCE_EXHAUSTED;
    char *at = mem;
    kiln_tensor **leaves = carve(&at, (size_t)(t.n_in + 1) * sizeof *leaves);
    kiln_tree_static *statics =
        carve(&at, (size_t)(t.n_statics + t.n_out_statics + 2) * sizeof *statics);
    kiln_arg_spec *specs = carve(&at, (size_t)(t.n_in + 1) * sizeof *specs);
    const char **paths = carve(&at, (n_paths + 1) * sizeof *paths);
    t.in_buf = carve(&at, in_def->size + 1);
    t.out_buf = carve(&at, out_def->size + 1);
    char *text = carve(&at, n_paths * KILN_TREE_PATH_MAX);
    t.statics = statics;
    t.out_statics = statics + t.n_statics + 1;
    s = kiln_tree_flatten(cx, in_def, in, leaves, t.n_in, statics, t.n_statics);
    for (int32_t i = 0; i < t.n_in && s == KILN_OK; i++) {
        char *p = text + (size_t)i * KILN_TREE_PATH_MAX;
        kiln_tree_leaf_path(in_def, i, p, KILN_TREE_PATH_MAX);
        specs[i] = (kiln_arg_spec){.dtype = kiln_tensor_dtype(leaves[i]),
                                   .shape = *kiln_tensor_shape(leaves[i]),
                                   .name = p};
    }
    for (int32_t j = 0; j < t.n_out; j++) {
        char *p = text + (size_t)(t.n_in + j) * KILN_TREE_PATH_MAX;
        kiln_tree_leaf_path(out_def, j, p, KILN_TREE_PATH_MAX);
        paths[j] = p;
    }
    if (!o.result_names) o.result_names = paths;
    if (s == KILN_OK)
        s = kiln_lower(cx, &(kiln_region){kiln__tree_call_region, &t}, specs, t.n_in, t.n_out, &o,
                       out_module);
    kiln__free(cx, mem, bytes);
    return s;
}
