/* SPDX-License-Identifier: Apache-2.0 */
/* The public autodiff API (kiln/autodiff.h): trace the function into a module of its
 * own, transform it (src/autodiff), then either compile and run the result (eager) or
 * inline its body into the enclosing trace (inside kiln_lower / kiln_jit, or an outer
 * kiln_grad), so that transformations compose. */
#include <string.h>

#include "autodiff/transform.h"
#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "core/tensor_internal.h"
#include "kiln/autodiff.h"
#include "runtime/traced_fn.h"
#include "runtime/tree_internal.h"

#define MAX_ARGS KILN__TRACED_FN_MAX_VALUES

/* What a custom_vjp call records (the payload of its u8 record tensor). n_out first after
 * n_in: vjp.c reads it as the second int32. */
typedef struct custom_record {
    int32_t n_in, n_out, n_res, pad;
    kiln_region fwd, bwd;
} custom_record;

kiln_grad_options kiln_grad_options_default(void) {
    return (kiln_grad_options){.struct_size = sizeof(kiln_grad_options), .name = "grad"};
}

static kiln_status oom(kiln_ctx *cx, const char *fn) {
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
}

static kiln__trace *current_trace(kiln_ctx *cx) { return cx->trace; }

/* Traces f with arguments typed like the n_in tensors `like`. */
static kiln_status trace_like(kiln_ctx *cx, const char *fn, const kiln_region *f, int32_t n_in,
                              kiln_tensor *const *like, int32_t n_out, kiln__traced_fn *out) {
    memset(out, 0, sizeof *out);
    size_t bytes = (size_t)(n_in + 1) * sizeof(kiln__type);
    kiln__type *types = kiln__alloc(cx, bytes, _Alignof(kiln__type), fn);
    if (!types) return KILN_RESOURCE_EXHAUSTED;
    for (int32_t i = 0; i < n_in; i++)
        types[i] = (kiln__type){.dtype = kiln_tensor_dtype(like[i]), .shape = *kiln_tensor_shape(like[i])};
    kiln_status s = kiln__traced_fn_trace(cx, fn, f, n_in, types, n_out, out);
    kiln__free(cx, types, bytes);
    return s;
}

/* ---- custom_vjp: the backward function traced into the derivative --------------------- */

static kiln_status custom_bwd(kiln__emitter *e, const kiln__ir_op *call,
                              kiln__value *const *residuals, int32_t n_residuals,
                              kiln__value *const *cts, int32_t n_cts, kiln__value **out_cts,
                              int32_t n_in) {
    kiln_ctx *cx = e->cx;
    const custom_record *rec = kiln_tensor_data(call->attrs->u.constant);
    if (!rec || rec->n_in != n_in || rec->n_out != n_cts || rec->n_res != n_residuals)
        return kiln__emit_error(e, KILN_INTERNAL, "internal: a custom_vjp record does not match");
    kiln_status s = kiln_scope_begin(cx);
    if (s != KILN_OK) return s;
    int32_t n_args = n_residuals + n_cts;
    size_t bytes = (size_t)(n_args + n_in + 1) * sizeof(kiln_tensor *);
    kiln_tensor **args = kiln__calloc(cx, bytes, _Alignof(kiln_tensor *), e->fn);
    kiln_tensor **res = args ? args + n_args : NULL;
    if (!args) s = KILN_RESOURCE_EXHAUSTED;
    for (int32_t i = 0; i < n_args && s == KILN_OK; i++) {
        kiln__value *v = i < n_residuals ? residuals[i] : cts[i - n_residuals];
        if (!v) v = kiln__emit_zeros(e, call->results[i - n_residuals]->type);
        args[i] = v ? kiln__tensor_new_traced(cx, e->fn, v->type->dtype, v->type->shape, v) : NULL;
        if (!args[i]) s = oom(cx, e->fn);
    }
    if (s == KILN_OK) {
        kiln__trace tr;
        void *saved = cx->trace;
        s = kiln__trace_nest(cx, e->fn, &tr, current_trace(cx), e->m, e->block);
        if (s == KILN_OK) {
            cx->trace = &tr;
            s = rec->bwd.fn(cx, args, res, rec->bwd.user);
        }
        if (s == KILN_OK && kiln_ctx_status(cx) != KILN_OK) s = kiln_ctx_status(cx);
        if (s != KILN_OK && kiln_ctx_status(cx) == KILN_OK)
            kiln_ctx_set_error(cx, s, "%s: the custom_vjp backward function failed with %s", e->fn,
                               kiln_status_name(s));
        for (int32_t i = 0; i < n_in && s == KILN_OK; i++) {
            out_cts[i] = NULL;
            if (!res[i]) continue;
            out_cts[i] = kiln__trace_value_of(cx, e->fn, res[i]);
            if (!out_cts[i]) {
                s = kiln_ctx_status(cx);
                break;
            }
            const kiln__type *want = call->operands[i]->type;
            if (out_cts[i]->type->dtype != want->dtype ||
                !kiln_shape_equal(&out_cts[i]->type->shape, &want->shape)) {
                char a[KILN__TYPE_TEXT], b[KILN__TYPE_TEXT];
                s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                       "%s: the custom_vjp backward function returned %s for "
                                       "input %d; expected %s",
                                       e->fn, kiln__type_text(out_cts[i]->type, a), (int)i,
                                       kiln__type_text(want, b));
            }
        }
        cx->trace = saved;
    }
    if (args) kiln__free(cx, args, bytes);
    kiln_scope_end(cx);
    return s;
}

static const kiln__ad_hooks hooks = {.custom_bwd = custom_bwd};

static bool is_float(kiln_tensor *t) { return kiln_dtype_is_float(kiln_tensor_dtype(t)); }

/* Runs dst (kiln__traced_fn_run) on the n_in primals followed by extra[i] for each take[i] (n_extra
 * entries). Its n_results results go into *out_results, a new array of n_results + 1 slots (never
 * empty) that the caller frees, even on failure. */
static kiln_status run_derivative(kiln_ctx *cx, const char *fn, kiln_module *dst,
                                  const kiln__traced_fn *src, kiln_tensor *const *primals,
                                  int32_t n_in, kiln_tensor *const *extra, const bool *take,
                                  int32_t n_extra, int32_t n_results,
                                  kiln_tensor ***out_results) {
    kiln_tensor **results =
        kiln__calloc(cx, (size_t)(n_results + 1) * sizeof *results, _Alignof(void *), fn);
    *out_results = results;
    if (!results) return KILN_RESOURCE_EXHAUSTED;
    int32_t n_args = n_in;
    for (int32_t i = 0; i < n_extra; i++)
        n_args += take[i];
    size_t bytes = (size_t)(n_args + 1) * sizeof(kiln_tensor *);
    kiln_tensor **args = kiln__calloc(cx, bytes, _Alignof(void *), fn);
    if (!args) return KILN_RESOURCE_EXHAUSTED;
    int32_t k = 0;
    for (int32_t i = 0; i < n_in; i++)
        args[k++] = primals[i];
    for (int32_t i = 0; i < n_extra; i++)
        if (take[i]) args[k++] = extra[i];
    kiln_status s = kiln__traced_fn_run(cx, fn, dst, args, n_args, src, n_in, results, n_results);
    kiln__free(cx, args, bytes);
    return s;
}

/* The reverse-mode core: f at primals, cotangents cts (n_out entries, NULL = zero), the
 * cotangents of the inputs with wrt[i] into out_cts[i] (others NULL). */
static kiln_status vjp_core(kiln_ctx *cx, const char *fn, const kiln_region *f, int32_t n_in,
                            kiln_tensor *const *primals, int32_t n_out, kiln_tensor *const *cts,
                            const bool *wrt, kiln__traced_fn *traced, const char *module_name,
                            kiln_tensor **out_results, kiln_tensor **out_cts) {
    /* `traced`: f already traced (taken over), or NULL. */
    kiln__traced_fn src;
    kiln_module *dst = NULL;
    kiln_status s = KILN_OK;
    if (traced)
        src = *traced;
    else
        s = trace_like(cx, fn, f, n_in, primals, n_out, &src);
    if (s != KILN_OK) return s;
    const kiln__block *body = src.func.body;
    bool *flags = kiln__calloc(cx, (size_t)(n_in + n_out + 1), 1, fn);
    int32_t n_wrt = 0;
    if (!flags) s = KILN_RESOURCE_EXHAUSTED;
    bool *seed = flags ? flags + n_in : NULL;
    for (int32_t j = 0; j < n_out && s == KILN_OK; j++) {
        if (!cts || !cts[j]) continue;
        const kiln__type *t = body->results[j]->type;
        if (kiln_tensor_dtype(cts[j]) != t->dtype ||
            !kiln_shape_equal(kiln_tensor_shape(cts[j]), &t->shape)) {
            char a[KILN__TYPE_TEXT], b[KILN__TYPE_TEXT];
            kiln__type have = {.dtype = kiln_tensor_dtype(cts[j]), .shape = *kiln_tensor_shape(cts[j])};
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                   "%s: cotangents[%d] is %s; expected %s (the type of result %d)",
                                   fn, (int)j, kiln__type_text(&have, a), kiln__type_text(t, b),
                                   (int)j);
            break;
        }
        seed[j] = kiln_dtype_is_float(t->dtype);
    }
    for (int32_t i = 0; i < n_in && s == KILN_OK; i++) {
        flags[i] = wrt[i];
        n_wrt += wrt[i];
    }
    if (s == KILN_OK) {
        dst = kiln__module_new(cx, module_name ? module_name : fn);
        kiln__func *g = NULL;
        if (!dst) s = oom(cx, fn);
        if (s == KILN_OK)
            s = kiln__vjp_func(cx, fn, &src.func, src.fv, src.n_fv, dst, flags, seed, &hooks, &g);
    }
    kiln_tensor **res = NULL;
    size_t rbytes = (size_t)(n_out + n_wrt + 1) * sizeof *res;
    if (s == KILN_OK)
        s = run_derivative(cx, fn, dst, &src, primals, n_in, cts, seed, n_out, n_out + n_wrt,
                           &res);
    if (s == KILN_OK) {
        for (int32_t j = 0; j < n_out; j++)
            if (out_results) out_results[j] = res[j];
        for (int32_t i = 0, k = n_out; i < n_in; i++)
            out_cts[i] = wrt[i] ? res[k++] : NULL;
    }
    if (res) kiln__free(cx, res, rbytes);
    if (flags) kiln__free(cx, flags, (size_t)(n_in + n_out + 1));
    kiln__traced_fn_fini(&src);
    kiln_module_release(dst);
    return s;
}

kiln_status kiln_vjp(kiln_ctx *cx, const kiln_region *f, int32_t n_in, kiln_tensor *const *primals,
                     int32_t n_out, kiln_tensor *const *cotangents, kiln_tensor **out_results,
                     kiln_tensor **out_cotangents) {
    static const char fn[] = "kiln_vjp";
    kiln_status s =
        kiln__traced_fn_begin(cx, fn, n_in, n_out, "out_cotangents", out_cotangents, n_in);
    if (s != KILN_OK) return s;
    if (out_results)
        for (int32_t j = 0; j < n_out; j++)
            out_results[j] = NULL;
    if ((s = kiln__traced_fn_check_args(cx, fn, f, "primals", primals, n_in)) != KILN_OK) return s;
    if (n_out > 0 && !cotangents) return kiln__null_argument(cx, fn, "cotangents");
    bool *wrt = kiln__calloc(cx, (size_t)n_in + 1, 1, fn);
    if (!wrt) return KILN_RESOURCE_EXHAUSTED;
    for (int32_t i = 0; i < n_in; i++)
        wrt[i] = is_float(primals[i]);
    s = vjp_core(cx, fn, f, n_in, primals, n_out, cotangents, wrt, NULL, NULL, out_results,
                 out_cotangents);
    kiln__free(cx, wrt, (size_t)n_in + 1);
    return s;
}

kiln_status kiln_jvp(kiln_ctx *cx, const kiln_region *f, int32_t n_in, kiln_tensor *const *primals,
                     kiln_tensor *const *tangents, int32_t n_out, kiln_tensor **out_results,
                     kiln_tensor **out_tangents) {
    static const char fn[] = "kiln_jvp";
    kiln_status s = kiln__traced_fn_begin(cx, fn, n_in, n_out, "out_tangents", out_tangents, n_out);
    if (s != KILN_OK) return s;
    if (out_results)
        for (int32_t j = 0; j < n_out; j++)
            out_results[j] = NULL;
    if ((s = kiln__traced_fn_check_args(cx, fn, f, "primals", primals, n_in)) != KILN_OK) return s;
    if (n_in > 0 && !tangents) return kiln__null_argument(cx, fn, "tangents");
    for (int32_t i = 0; i < n_in; i++) {
        if (!tangents[i]) continue;
        if (kiln_tensor_dtype(tangents[i]) != kiln_tensor_dtype(primals[i]) ||
            !kiln_shape_equal(kiln_tensor_shape(tangents[i]), kiln_tensor_shape(primals[i]))) {
            char a[KILN__TYPE_TEXT], b[KILN__TYPE_TEXT];
            kiln__type have = {.dtype = kiln_tensor_dtype(tangents[i]), .shape = *kiln_tensor_shape(tangents[i])};
            kiln__type want = {.dtype = kiln_tensor_dtype(primals[i]), .shape = *kiln_tensor_shape(primals[i])};
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: tangents[%d] is %s; expected %s (the type of "
                                      "primals[%d])",
                                      fn, (int)i, kiln__type_text(&have, a),
                                      kiln__type_text(&want, b), (int)i);
        }
    }
    kiln__traced_fn src;
    kiln_module *dst = NULL;
    if ((s = trace_like(cx, fn, f, n_in, primals, n_out, &src)) != KILN_OK) return s;
    const kiln__block *body = src.func.body;
    bool *wrt = kiln__calloc(cx, (size_t)n_in + 1, 1, fn);
    int32_t n_float = 0;
    if (!wrt) s = KILN_RESOURCE_EXHAUSTED;
    for (int32_t i = 0; i < n_in && s == KILN_OK; i++)
        wrt[i] = tangents[i] && is_float(primals[i]);
    for (int32_t j = 0; j < n_out; j++)
        n_float += kiln_dtype_is_float(body->results[j]->type->dtype);
    if (s == KILN_OK) {
        dst = kiln__module_new(cx, fn);
        kiln__func *g;
        s = dst ? kiln__jvp_func(cx, fn, &src.func, src.fv, src.n_fv, dst, wrt, &hooks, &g)
                : oom(cx, fn);
    }
    kiln_tensor **res = NULL;
    size_t rbytes = (size_t)(n_out + n_float + 1) * sizeof *res;
    if (s == KILN_OK)
        s = run_derivative(cx, fn, dst, &src, primals, n_in, tangents, wrt, n_in,
                           n_out + n_float, &res);
    if (s == KILN_OK) {
        for (int32_t j = 0, k = n_out; j < n_out; j++) {
            if (out_results) out_results[j] = res[j];
            if (kiln_dtype_is_float(body->results[j]->type->dtype)) out_tangents[j] = res[k++];
        }
    }
    if (res) kiln__free(cx, res, rbytes);
    if (wrt) kiln__free(cx, wrt, (size_t)n_in + 1);
    kiln__traced_fn_fini(&src);
    kiln_module_release(dst);
    return s;
}

/* ---- grad ------------------------------------------------------------------------------ */

/* The caller's options, or the defaults where it gave none, into *o. */
static kiln_status grad_options(kiln_ctx *cx, const char *fn, const kiln_grad_options *options,
                                kiln_grad_options *o) {
    *o = kiln_grad_options_default();
    return kiln__options_read(cx, fn, options, o, sizeof *o, "kiln_grad_options_default");
}

static kiln_status grad_common(kiln_ctx *cx, const char *fn, const kiln_region *f, int32_t n_in,
                               kiln_tensor *const *args, int32_t n_out,
                               const kiln_grad_options *options, kiln_tensor **out_results,
                               kiln_tensor **out_grads) {
    kiln_grad_options o;
    kiln_status os = grad_options(cx, fn, options, &o);
    if (os != KILN_OK) return os;
    if (!f || !f->fn) return kiln__null_argument(cx, fn, "f");
    kiln_status s;
    if ((s = kiln__traced_fn_check_counts(cx, fn, n_in, n_out)) != KILN_OK) return s;
    if ((s = kiln__traced_fn_check_tensors(cx, fn, "args", args, n_in)) != KILN_OK) return s;
    if (n_out < 1)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: n_out is %d; expected >= 1", fn,
                                  (int)n_out);
    if (!o.has_aux && n_out != 1)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: n_out is %d; a function without has_aux returns exactly "
                                  "one result (its value)",
                                  fn, (int)n_out);
    if (o.has_aux && n_out < 2)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: has_aux needs the value and at least one auxiliary result "
                                  "(n_out is %d)",
                                  fn, (int)n_out);
    static const int32_t first = 0;
    const int32_t *argnums = o.argnums ? o.argnums : &first;
    int32_t n_argnums = o.argnums ? o.n_argnums : 1;
    if (o.argnums && (n_argnums < 1 || n_argnums > n_in))
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: n_argnums is %d; expected 1 to %d (n_in)", fn,
                                  (int)n_argnums, (int)n_in);
    if (n_in < 1)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: n_in is 0; there is no argument to differentiate", fn);
    bool *wrt = kiln__calloc(cx, (size_t)n_in + 1, 1, fn);
    if (!wrt) return KILN_RESOURCE_EXHAUSTED;
    for (int32_t k = 0; k < n_argnums && s == KILN_OK; k++) {
        int32_t a = argnums[k];
        if (a < 0 || a >= n_in)
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                   "%s: argnums[%d] is %d; expected 0 to %d", fn, (int)k, (int)a,
                                   (int)n_in - 1);
        else if (wrt[a])
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: argnums[%d] repeats argument %d",
                                   fn, (int)k, (int)a);
        else if (!is_float(args[a]))
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                   "%s: argument %d (argnums[%d]) has dtype %s; only "
                                   "floating-point arguments have gradients",
                                   fn, (int)a, (int)k, kiln_dtype_name(kiln_tensor_dtype(args[a])));
        else
            wrt[a] = true;
    }
    kiln__traced_fn probe;
    bool have_probe = false;
    kiln_tensor *seed = NULL;
    kiln_tensor **cts = NULL, **all = NULL;
    size_t cbytes = (size_t)(n_out + 1) * sizeof *cts, abytes = (size_t)(n_in + 1) * sizeof *all;
    if (s == KILN_OK) {
        /* The value's type decides the seed (a rank-0 float 1). */
        s = trace_like(cx, fn, f, n_in, args, n_out, &probe);
        have_probe = s == KILN_OK;
    }
    if (s == KILN_OK) {
        const kiln__type *t = probe.func.body->results[0]->type;
        if (t->shape.rank != 0 || !kiln_dtype_is_float(t->dtype)) {
            char a[KILN__TYPE_TEXT];
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                   "%s: the function's value (result 0) is %s; expected a rank-0 "
                                   "floating-point tensor",
                                   fn, kiln__type_text(t, a));
        } else {
            seed = kiln_scalar(cx, 1.0, t->dtype);
            if (!seed) s = kiln_ctx_status(cx);
        }
    }
    if (s == KILN_OK) {
        cts = kiln__calloc(cx, cbytes, _Alignof(void *), fn);
        all = cts ? kiln__calloc(cx, abytes, _Alignof(void *), fn) : NULL;
        if (!all) s = KILN_RESOURCE_EXHAUSTED;
    }
    if (s == KILN_OK) {
        cts[0] = seed;
        s = vjp_core(cx, fn, f, n_in, args, n_out, cts, wrt, &probe, o.name, out_results, all);
        have_probe = false;
    }
    if (have_probe) kiln__traced_fn_fini(&probe);
    if (s == KILN_OK)
        for (int32_t k = 0; k < n_argnums; k++)
            out_grads[k] = all[argnums[k]];
    if (cts) kiln__free(cx, cts, cbytes);
    if (all) kiln__free(cx, all, abytes);
    kiln__free(cx, wrt, (size_t)n_in + 1);
    return s;
}

kiln_status kiln_grad(kiln_ctx *cx, const kiln_region *f, int32_t n_in, kiln_tensor *const *args,
                      const kiln_grad_options *options, kiln_tensor **out_grads) {
    static const char fn[] = "kiln_grad";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    if (!out_grads) return kiln__null_argument(cx, fn, "out_grads");
    bool sized = options && options->struct_size >= sizeof(kiln_grad_options);
    int32_t n = sized && options->argnums && options->n_argnums > 0 ? options->n_argnums : 1;
    for (int32_t k = 0; k < n && k < MAX_ARGS; k++)
        out_grads[k] = NULL;
    if (sized && options->has_aux)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: has_aux needs the auxiliary results returned: use "
                                  "kiln_value_and_grad",
                                  fn);
    return grad_common(cx, fn, f, n_in, args, 1, options, NULL, out_grads);
}

kiln_status kiln_value_and_grad(kiln_ctx *cx, const kiln_region *f, int32_t n_in,
                                kiln_tensor *const *args, int32_t n_out,
                                const kiln_grad_options *options, kiln_tensor **out_results,
                                kiln_tensor **out_grads) {
    static const char fn[] = "kiln_value_and_grad";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    if (!out_grads) return kiln__null_argument(cx, fn, "out_grads");
    if (!out_results) return kiln__null_argument(cx, fn, "out_results");
    bool sized = options && options->struct_size >= sizeof(kiln_grad_options);
    int32_t n = sized && options->argnums && options->n_argnums > 0 ? options->n_argnums : 1;
    for (int32_t k = 0; k < n && k < MAX_ARGS; k++)
        out_grads[k] = NULL;
    for (int32_t j = 0; j < n_out && j < MAX_ARGS; j++)
        out_results[j] = NULL;
    return grad_common(cx, fn, f, n_in, args, n_out, options, out_results, out_grads);
}

/* ---- tree mode ---------------------------------------------------------------------------- */

kiln_status kiln_value_and_grad_tree(kiln_ctx *cx, kiln_jit_fn fn, void *user,
                                     const kiln_tree_def *in_def, const void *in,
                                     const kiln_tree_def *out_def, void *out,
                                     const kiln_grad_options *options, void *out_grads) {
    static const char name[] = "kiln_value_and_grad_tree";
    kiln_status s = kiln__tree_fn_begin(cx, name, fn, in_def, in, out_def, out);
    if (s != KILN_OK) return s;
    if (!out_grads) return kiln__null_argument(cx, name, "out_grads");
    kiln_grad_options o;
    kiln_status os = grad_options(cx, name, options, &o);
    if (os != KILN_OK) return os;
    kiln__tree_call t;
    kiln__tree_call_init(&t, fn, user, in_def, out_def);
    if (t.n_out < 1)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: %s has no tensor leaf for the value", name,
                                  out_def->name ? out_def->name : "out_def");
    /* One block for every scratch array: leaves, grads, gleaves, results; argnums. */
    char *mem;
    size_t bytes;
    int32_t *argnums, n_argnums = 0;
    s = kiln__tree_call_scratch(cx, name, &t, in, (size_t)t.n_in * 3 + (size_t)t.n_out + 4,
                                (size_t)t.n_in, &mem, &bytes, &argnums);
    if (!mem) return s;
    kiln_tensor **leaves = (kiln_tensor **)mem;
    kiln_tensor **grads = leaves + t.n_in;
    kiln_tensor **gleaves = grads + t.n_in;
    kiln_tensor **results = gleaves + t.n_in;
    char path[KILN_TREE_PATH_MAX];
    for (int32_t i = 0; i < t.n_in && s == KILN_OK; i++) {
        bool want;
        if (o.wrt_paths) {
            kiln_tree_leaf_path(in_def, i, path, sizeof path);
            want = false;
            for (int32_t k = 0; k < o.n_wrt_paths; k++)
                want |= o.wrt_paths[k] && kiln__tree_path_has_prefix(path, o.wrt_paths[k]);
            if (want && !is_float(leaves[i]))
                s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                       "%s: leaf '%s' has dtype %s; only floating-point leaves "
                                       "have gradients",
                                       name, path, kiln_dtype_name(kiln_tensor_dtype(leaves[i])));
        } else {
            want = is_float(leaves[i]);
        }
        if (want) argnums[n_argnums++] = i;
    }
    if (s == KILN_OK && o.wrt_paths)
        s = kiln__tree_check_prefixes(cx, name, "wrt_paths", in_def, o.wrt_paths, o.n_wrt_paths);
    if (s == KILN_OK && n_argnums == 0)
        s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "%s: no floating-point leaf to differentiate", name);
    if (s == KILN_OK) {
        kiln_grad_options lo = o;
        lo.argnums = argnums;
        lo.n_argnums = n_argnums;
        lo.wrt_paths = NULL;
        lo.has_aux = t.n_out > 1;
        kiln_region region = {kiln__tree_call_region, &t};
        s = grad_common(cx, name, &region, t.n_in, leaves, t.n_out, &lo, results, grads);
    }
    if (s == KILN_OK) {
        for (int32_t i = 0; i < t.n_in; i++)
            gleaves[i] = NULL;
        for (int32_t k = 0; k < n_argnums; k++)
            gleaves[argnums[k]] = grads[k];
        s = kiln_tree_unflatten(cx, out_def, results, t.n_out, t.out_statics, t.n_out_statics, out);
        if (s == KILN_OK)
            s = kiln_tree_unflatten(cx, in_def, gleaves, t.n_in, t.statics, t.n_statics, out_grads);
    }
    kiln__free(cx, mem, bytes);
    return s;
}

/* ---- stop_gradient and custom_vjp ------------------------------------------------------------ */

kiln_tensor *kiln_stop_gradient(kiln_ctx *cx, kiln_tensor *x) {
    if (!cx || !x) return NULL;
    kiln_tensor *r = NULL;
    if (kiln_optimization_barrier(cx, &x, 1, &r) != KILN_OK) return NULL;
    kiln__value *v = kiln__tensor_trace(r);
    /* The mark: a barrier that means stop_gradient (printed as an identity barrier), in
     * attributes of its own (a plain barrier's are shared with its equals). */
    if (v && v->def) {
        kiln__attrs *own = kiln__op_attrs_mut(current_trace(cx)->module, v->def);
        if (!own) return NULL; /* out of memory: recorded by the module's arena */
        own->fn = "kiln_stop_gradient";
        own->mark = KILN__MARK_STOP_GRADIENT;
    }
    return r;
}

kiln_status kiln_custom_vjp_call(kiln_ctx *cx, const kiln_custom_vjp *def, kiln_tensor *const *args,
                                 kiln_tensor **out_results) {
    static const char fn[] = "kiln_custom_vjp_call";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!def) return kiln__null_argument(cx, fn, "def");
    if (!out_results && def->n_out > 0) return kiln__null_argument(cx, fn, "out_results");
    if (def->n_in < 0 || def->n_out < 1 || def->n_residuals < 0 || def->n_in > MAX_ARGS ||
        def->n_out > MAX_ARGS || def->n_residuals > MAX_ARGS)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: def->n_in %d, n_out %d and n_residuals %d: expected n_in "
                                  ">= 0, n_out >= 1, n_residuals >= 0",
                                  fn, (int)def->n_in, (int)def->n_out, (int)def->n_residuals);
    for (int32_t j = 0; j < def->n_out; j++)
        out_results[j] = NULL;
    if (!def->fwd.fn) return kiln__null_argument(cx, fn, "def->fwd.fn");
    if (!def->bwd.fn) return kiln__null_argument(cx, fn, "def->bwd.fn");
    kiln_status s = kiln__traced_fn_check_tensors(cx, fn, "args", args, def->n_in);
    if (s != KILN_OK) return s;
    int32_t n_all = def->n_out + def->n_residuals;
    size_t bytes = (size_t)(n_all + 1) * sizeof(kiln_tensor *);
    kiln_tensor **all = kiln__calloc(cx, bytes, _Alignof(void *), fn);
    if (!all) return KILN_RESOURCE_EXHAUSTED;
    s = kiln_call(cx, &def->fwd, args, def->n_in, n_all, all);
    kiln__value *v = s == KILN_OK ? kiln__tensor_trace(all[0]) : NULL;
    if (v && v->def && v->def->kind == KILN_OP_CALL && current_trace(cx)) {
        custom_record rec = {.n_in = def->n_in,
                             .n_out = def->n_out,
                             .n_res = def->n_residuals,
                             .fwd = def->fwd,
                             .bwd = def->bwd};
        kiln_tensor *t =
            kiln_tensor_from_host(cx, KILN_U8, KILN_SHAPE((int64_t)sizeof rec), &rec, sizeof rec);
        if (!t || kiln__module_keep_constant(current_trace(cx)->module, t) != KILN_OK) {
            s = oom(cx, fn);
        } else {
            kiln__attrs *own = kiln__op_attrs_mut(current_trace(cx)->module, v->def);
            if (!own) {
                s = oom(cx, fn);
            } else {
                own->fn = fn;
                own->mark = KILN__MARK_CUSTOM_VJP;
                own->u.constant = t;
            }
        }
        if (t) kiln__tensor_discard(t);
    }
    if (s == KILN_OK)
        for (int32_t j = 0; j < def->n_out; j++)
            out_results[j] = all[j];
    kiln__free(cx, all, bytes);
    return s;
}
