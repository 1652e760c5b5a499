/* SPDX-License-Identifier: Apache-2.0 */
/* A function traced for a transformation (kiln__traced_fn.h), and running what the
 * transformation made of it. */
#include <string.h>

#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "core/tensor_internal.h"
#include "ir/clone.h"
#include "runtime/ad_cache.h"
#include "runtime/traced_fn.h"

static kiln_status oom(kiln_ctx *cx, const char *fn) {
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
}

static kiln__trace *current_trace(kiln_ctx *cx) { return cx->trace; }

/* ---- tracing the function --------------------------------------------------------------- */

void kiln__traced_fn_fini(kiln__traced_fn *src) {
    if (src->holder) kiln__op_remove(src->holder);
    if (src->fv)
        kiln__free(src->cx, (void *)src->fv, (size_t)KILN__TRACED_FN_MAX_VALUES * sizeof *src->fv);
    kiln_module_release(src->own);
    memset(src, 0, sizeof *src);
}

/* Traces f (n_in arguments of the given types, n_out results) into m's block `body`. */
static kiln_status trace_into(kiln_ctx *cx, const char *fn, const kiln_region *f, int32_t n_in,
                              const kiln__type *types, int32_t n_out, kiln_module *m,
                              kiln__block *body) {
    kiln_status s = kiln_scope_begin(cx);
    if (s != KILN_OK) return s;
    size_t bytes = (size_t)(n_in + n_out + 1) * sizeof(kiln_tensor *);
    kiln_tensor **in = kiln__calloc(cx, bytes, _Alignof(kiln_tensor *), fn);
    if (!in) s = KILN_RESOURCE_EXHAUSTED;
    kiln_tensor **outs = in ? in + n_in : NULL;
    for (int32_t i = 0; i < n_in && s == KILN_OK; i++) {
        kiln__type t = types[i];
        kiln__value *v = kiln__block_add_arg(m, body, t);
        in[i] = v ? kiln__tensor_new_traced(cx, fn, t.dtype, t.shape, v) : NULL;
        if (!in[i]) s = oom(cx, fn);
    }
    if (s == KILN_OK) {
        kiln__trace tr;
        void *saved = cx->trace;
        s = kiln__trace_nest(cx, fn, &tr, current_trace(cx), m, body);
        if (s == KILN_OK) {
            cx->trace = &tr;
            s = f->fn(cx, in, outs, f->user);
        }
        if (s == KILN_OK && kiln_ctx_status(cx) != KILN_OK) s = kiln_ctx_status(cx);
        if (s != KILN_OK && kiln_ctx_status(cx) == KILN_OK)
            kiln_ctx_set_error(cx, s, "%s: the function failed with %s", fn, kiln_status_name(s));
        kiln__value **values = NULL;
        if (s == KILN_OK) {
            values = kiln__arena_alloc(&m->arena, (size_t)(n_out ? n_out : 1) * sizeof *values,
                                       _Alignof(void *));
            if (!values) s = oom(cx, fn);
        }
        if (s == KILN_OK) s = kiln__traced_fn_results(cx, fn, m, body, outs, values, n_out);
        cx->trace = saved;
    }
    if (in) kiln__free(cx, in, bytes);
    kiln_scope_end(cx);
    if (s != KILN_OK && kiln_ctx_status(cx) != KILN_OK) s = kiln_ctx_status(cx);
    return s;
}

kiln_status kiln__traced_fn_trace(kiln_ctx *cx, const char *fn, const kiln_region *f, int32_t n_in,
                                  const kiln__type *types, int32_t n_out, kiln__traced_fn *out) {
    memset(out, 0, sizeof *out);
    out->cx = cx;
    out->func.name = "main";
    out->func.is_public = true;
    kiln__trace *tr = current_trace(cx);
    if (!tr) {
        out->own = kiln__module_new(cx, fn);
        kiln__func *main_fn = out->own ? kiln__module_add_func(out->own, "main", true) : NULL;
        if (!main_fn) {
            kiln__traced_fn_fini(out);
            return oom(cx, fn);
        }
        out->func = *main_fn;
        kiln_status s = trace_into(cx, fn, f, n_in, types, n_out, out->own, main_fn->body);
        if (s != KILN_OK) kiln__traced_fn_fini(out);
        return s;
    }
    kiln__attrs a = {.fn = fn, .n_regions = 1};
    out->holder = kiln__block_append(tr->module, tr->block, KILN_OP_CALL, &a, NULL, 0, NULL, 0, 1);
    kiln__block *body = out->holder ? kiln__block_new(tr->module, out->holder) : NULL;
    out->fv =
        kiln__alloc(cx, (size_t)KILN__TRACED_FN_MAX_VALUES * sizeof *out->fv, _Alignof(void *), fn);
    if (!body || !out->fv) {
        kiln__traced_fn_fini(out);
        return oom(cx, fn);
    }
    out->holder->regions[0] = body;
    out->func.body = body;
    kiln_status s = trace_into(cx, fn, f, n_in, types, n_out, tr->module, body);
    if (s == KILN_OK) {
        out->n_fv = kiln__block_free_values(cx, body, false, out->fv, KILN__TRACED_FN_MAX_VALUES);
        if (out->n_fv < 0)
            s = kiln_ctx_status(cx) != KILN_OK
                    ? kiln_ctx_status(cx)
                    : kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                         "%s: the function uses more than %d tensors of the "
                                         "enclosing trace",
                                         fn, KILN__TRACED_FN_MAX_VALUES);
    }
    if (s != KILN_OK) kiln__traced_fn_fini(out);
    return s;
}

/* ---- running a transformed module ---------------------------------------------------- */

kiln_status kiln__traced_fn_run(kiln_ctx *cx, const char *fn, kiln_module *dst,
                                kiln_tensor *const *args, int32_t n_args,
                                const kiln__traced_fn *src, int32_t n_lead, kiln_tensor **results,
                                int32_t n_results) {
    /* dst's arguments: args[0..n_lead), then src's extra values, then the other args. */
    const kiln__block *body = dst->funcs[0]->body;
    int32_t n_fv = src->n_fv;
    if (body->n_args != n_args + n_fv || body->n_results != n_results)
        return kiln_ctx_set_error(cx, KILN_INTERNAL,
                                  "%s: internal: the transformed function takes %d "
                                  "arguments and gives %d results; expected "
                                  "%d and %d",
                                  fn, (int)body->n_args, (int)body->n_results, (int)(n_args + n_fv),
                                  (int)n_results);
    /* The notes of the function traced go with what was made of it. */
    kiln_status ns = kiln__module_copy_notes(dst, src->own ? src->own : current_trace(cx)->module);
    if (ns != KILN_OK) return ns;
    if (!current_trace(cx)) {
        kiln_exe *exe = NULL;
        kiln_status s = kiln__ad_compile(cx, dst, &exe);
        if (s == KILN_OK) s = kiln_exe_call(cx, exe, args, results);
        kiln_exe_release(exe);
        return s;
    }
    kiln__trace *tr = current_trace(cx);
    size_t bytes = (size_t)(n_args + n_fv + n_results + 1) * sizeof(kiln__value *);
    kiln__value **vals = kiln__calloc(cx, bytes, _Alignof(void *), fn);
    if (!vals) return KILN_RESOURCE_EXHAUSTED;
    kiln__value **outs = vals + n_args + n_fv;
    kiln_status s = KILN_OK;
    for (int32_t i = 0, k = 0; i < n_args + n_fv && s == KILN_OK; i++) {
        if (i >= n_lead && i < n_lead + n_fv) {
            vals[i] = (kiln__value *)src->fv[i - n_lead];
            continue;
        }
        vals[i] = kiln__trace_value_of(cx, fn, args[k++]);
        if (!vals[i]) s = kiln_ctx_status(cx);
    }
    if (s == KILN_OK) s = kiln__inline_block(tr->module, tr->block, body, vals, outs);
    if (s == KILN_OK) s = kiln__module_copy_notes(tr->module, dst);
    for (int32_t r = 0; r < n_results && s == KILN_OK; r++) {
        results[r] =
            kiln__tensor_new_traced(cx, fn, outs[r]->type->dtype, outs[r]->type->shape, outs[r]);
        if (!results[r]) s = oom(cx, fn);
    }
    kiln__free(cx, vals, bytes);
    return s;
}

kiln_status kiln__traced_fn_check_counts(kiln_ctx *cx, const char *fn, int32_t n_in,
                                         int32_t n_out) {
    if (n_in < 0 || n_in > KILN__TRACED_FN_MAX_VALUES || n_out < 0 ||
        n_out > KILN__TRACED_FN_MAX_VALUES)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: n_in %d and n_out %d must be within 0..%d", fn, (int)n_in,
                                  (int)n_out, KILN__TRACED_FN_MAX_VALUES);
    return KILN_OK;
}

kiln_status kiln__traced_fn_results(kiln_ctx *cx, const char *fn, kiln_module *m,
                                    kiln__block *body, kiln_tensor *const *outs,
                                    kiln__value **values, int32_t n) {
    for (int32_t r = 0; r < n; r++) {
        if (!outs[r])
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: the function stored no tensor for result %d", fn,
                                      (int)r + 1);
        values[r] = kiln__trace_value_of(cx, fn, outs[r]);
        if (!values[r]) return kiln_ctx_status(cx);
    }
    return kiln__block_set_results(m, body, values, n);
}

kiln_status kiln__traced_fn_check_tensors(kiln_ctx *cx, const char *fn, const char *what,
                                          kiln_tensor *const *ts, int32_t n) {
    if (n > 0 && !ts) return kiln__null_argument(cx, fn, what);
    for (int32_t i = 0; i < n; i++)
        if (!ts[i])
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: %s[%d] is NULL", fn, what,
                                      (int)i);
    return KILN_OK;
}

kiln_status kiln__traced_fn_check_args(kiln_ctx *cx, const char *fn, const kiln_region *f,
                                       const char *what, kiln_tensor *const *args, int32_t n) {
    if (!f || !f->fn) return kiln__null_argument(cx, fn, "f");
    return kiln__traced_fn_check_tensors(cx, fn, what, args, n);
}

kiln_status kiln__traced_fn_begin(kiln_ctx *cx, const char *fn, int32_t n_in, int32_t n_out,
                                  const char *out_name, kiln_tensor **out, int32_t n) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    kiln_status s = kiln__traced_fn_check_counts(cx, fn, n_in, n_out);
    if (s != KILN_OK) return s;
    if (!out && n > 0) return kiln__null_argument(cx, fn, out_name);
    for (int32_t i = 0; i < n; i++)
        out[i] = NULL;
    return KILN_OK;
}
