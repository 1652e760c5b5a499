/* SPDX-License-Identifier: Apache-2.0 */
#include "frontend/trace.h"

#include <stdio.h>

#include "backend/region.h"
#include "base/ctx_internal.h"
#include "base/stack.h"
#include "core/tensor_internal.h"
#include "ir/clone.h"

#define MAX_TYPES 64

static kiln__trace *current(kiln_ctx *cx) { return cx->trace; }

void kiln__branch_name(kiln_op kind, int32_t r, char *buf, size_t size) {
    if (kind == KILN_OP_IF)
        snprintf(buf, size, "%s", r == 0 ? "true branch" : "false branch");
    else if (kind == KILN_OP_CASE)
        snprintf(buf, size, "branch %d", (int)r);
    else
        snprintf(buf, size, "region %d", (int)r + 1);
}

bool kiln__tracing(const kiln_ctx *cx) { return cx->trace != NULL; }

bool kiln__trace_wants(kiln_ctx *cx, kiln_op op, kiln_tensor *const *operands, int n_operands) {
    if (!cx->trace) return false;
    /* a collective communicates when the program runs, never while it is traced */
    if (kiln__op_has(op, KILN_OPF_REGIONS | KILN_OPF_CONTROL | KILN_OPF_COLLECTIVE)) return true;
    for (int i = 0; i < n_operands; i++)
        if (operands[i] && kiln__tensor_trace(operands[i])) return true;
    return false;
}

/* Is v defined in b or in a block that encloses b (so b may use it)? */
static bool visible(const kiln__value *v, const kiln__block *b) {
    const kiln__block *home = kiln__value_home(v);
    for (; b; b = b->parent ? b->parent->block : NULL)
        if (b == home) return true;
    return false;
}

kiln__value *kiln__trace_value_of(kiln_ctx *cx, const char *fn, kiln_tensor *t) {
    kiln__trace *tr = current(cx);
    kiln__value *v = kiln__tensor_trace(t);
    if (v) {
        if (!visible(v, tr->block)) {
            kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                               "%s: a traced tensor from another trace (or from a region that "
                               "has ended) was used; traced tensors live only inside their "
                               "kiln_lower call and region",
                               fn);
            return NULL;
        }
        return v;
    }
    /* A concrete tensor: captured as a constant. */
    if (kiln__module_keep_constant(tr->module, t) != KILN_OK) return NULL;
    kiln__attrs a = {.fn = fn};
    a.u.constant = t;
    kiln__type type = {.dtype = kiln_tensor_dtype(t), .shape = *kiln_tensor_shape(t)};
    kiln__ir_op *op =
        kiln__block_append(tr->module, tr->block, KILN_OP_CONSTANT, &a, NULL, 0, &type, 1, 0);
    if (!op) {
        kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory tracing", fn);
        return NULL;
    }
    return op->results[0];
}

kiln_tensor *kiln__trace_capture(kiln_ctx *cx, const char *fn, kiln_tensor *t) {
    if (kiln__tensor_trace(t)) return t;
    kiln__value *v = kiln__trace_value_of(cx, fn, t);
    if (!v) return NULL;
    return kiln__tensor_new_traced(cx, fn, v->type->dtype, v->type->shape, v);
}

kiln_status kiln__trace_nest(kiln_ctx *cx, const char *what, kiln__trace *inner, kiln__trace *outer,
                             kiln_module *m, kiln__block *b) {
    *inner = (kiln__trace){
        .module = m, .block = b, .outer = outer, .depth = outer ? outer->depth + 1 : 0};
    if (inner->depth > KILN__MAX_TRACE_DEPTH)
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED,
                                  "%s: regions and traces nested deeper than %d levels", what,
                                  KILN__MAX_TRACE_DEPTH);
    if (kiln__stack_low(KILN__STACK_RESERVE))
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED,
                                  "%s: regions and traces nested too deep for this thread's "
                                  "stack (%d levels)",
                                  what, inner->depth);
    return KILN_OK;
}

kiln_status kiln__trace_region(kiln_ctx *cx, const char *what, const kiln_region *region,
                               kiln__ir_op *parent, int32_t index, const kiln__type *arg_types,
                               int32_t n_args, int32_t n_results) {
    kiln__trace *outer = current(cx);
    kiln_module *m = outer->module;
    if (!region || !region->fn)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s is NULL", what);
    kiln__trace inner;
    kiln_status nested = kiln__trace_nest(cx, what, &inner, outer, m, NULL);
    if (nested != KILN_OK) return nested;
    kiln__block *b = kiln__block_new(m, parent);
    if (!b) return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory tracing");
    parent->regions[index] = b;
    kiln_status s = kiln_scope_begin(cx);
    if (s != KILN_OK) return s;
    kiln_tensor *args[MAX_TYPES], *results[MAX_TYPES];
    kiln__value *values[MAX_TYPES];
    if (n_args > MAX_TYPES || n_results > MAX_TYPES) {
        kiln_scope_end(cx);
        return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED, "%s: more than %d arguments or results",
                                  what, MAX_TYPES);
    }
    for (int32_t i = 0; i < n_args && s == KILN_OK; i++) {
        kiln__value *v = kiln__block_add_arg(m, b, arg_types[i]);
        args[i] =
            v ? kiln__tensor_new_traced(cx, what, arg_types[i].dtype, arg_types[i].shape, v) : NULL;
        if (!args[i])
            s = kiln_ctx_status(cx) != KILN_OK ? kiln_ctx_status(cx) : KILN_RESOURCE_EXHAUSTED;
    }
    inner.block = b;
    if (s == KILN_OK) {
        for (int32_t i = 0; i < n_results; i++)
            results[i] = NULL;
        cx->trace = &inner;
        s = region->fn(cx, args, results, region->user);
        if (s == KILN_OK && kiln_ctx_status(cx) != KILN_OK) s = kiln_ctx_status(cx);
        if (s != KILN_OK && kiln_ctx_status(cx) == KILN_OK)
            kiln_ctx_set_error(cx, s, "%s failed with %s", what, kiln_status_name(s));
        for (int32_t i = 0; i < n_results && s == KILN_OK; i++) {
            if (!results[i]) {
                s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                       "%s returned no tensor for result %d", what, (int)i + 1);
                break;
            }
            values[i] = kiln__trace_value_of(cx, what, results[i]);
            if (!values[i]) s = kiln_ctx_status(cx);
        }
        if (s == KILN_OK) s = kiln__block_set_results(m, b, values, n_results);
        cx->trace = outer;
    }
    kiln_scope_end(cx);
    return s;
}

/* The result types of a control op come from its traced regions. */
static kiln_status control_result_types(kiln_ctx *cx, const kiln__attrs *attrs,
                                        const kiln__ir_op *op, kiln__type *out, int n_results) {
    const char *fn = attrs->fn;
    int32_t from = op->kind == KILN_OP_WHILE ? 1 : 0; /* while: the body */
    const kiln__block *b = op->regions[from];
    for (int i = 0; i < n_results; i++)
        out[i] = *b->results[i]->type;
    for (int32_t r = from + 1; r < op->n_regions; r++) {
        const kiln__block *other = op->regions[r];
        for (int i = 0; i < n_results; i++) {
            const kiln__type *x = other->results[i]->type;
            if (x->dtype != out[i].dtype || !kiln_shape_equal(&x->shape, &out[i].shape)) {
                char a[KILN__TYPE_TEXT], c[KILN__TYPE_TEXT], name[32], first[32];
                kiln__branch_name(op->kind, r, name, sizeof name);
                kiln__branch_name(op->kind, from, first, sizeof first);
                return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                          "%s: the %s returns %s for result %d; the %s returns %s",
                                          fn, name, kiln__type_text(x, a), i + 1, first,
                                          kiln__type_text(&out[i], c));
            }
        }
    }
    if (op->kind == KILN_OP_WHILE) {
        const kiln__block *cond = op->regions[0];
        const kiln__type *c = cond->results[0]->type;
        if (c->dtype != KILN_BOOL || c->shape.rank != 0)
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: cond returns %s; expected a rank-0 i1", fn,
                                      kiln_dtype_name(c->dtype));
        for (int i = 0; i < n_results; i++) {
            const kiln__type *init = op->operands[i]->type;
            if (init->dtype != out[i].dtype || !kiln_shape_equal(&init->shape, &out[i].shape)) {
                char a[KILN__TYPE_TEXT], c2[KILN__TYPE_TEXT];
                return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                          "%s: body result %d has type %s; expected %s (the "
                                          "type of init %d)",
                                          fn, i + 1, kiln__type_text(&out[i], a),
                                          kiln__type_text(init, c2), i + 1);
            }
        }
    }
    return KILN_OK;
}

kiln_status kiln__trace_op(kiln_ctx *cx, kiln_op op, kiln__attrs *attrs,
                           kiln_tensor *const *operands, int n_operands, kiln_tensor **results,
                           int n_results) {
    kiln__trace *tr = current(cx);
    const char *fn = attrs->fn ? attrs->fn : kiln__op_get_info(op)->name;
    if (n_operands > MAX_TYPES || n_results > MAX_TYPES)
        return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                  "%s: more than %d operands or results cannot be traced", fn,
                                  MAX_TYPES);
    kiln__type in[MAX_TYPES], out[MAX_TYPES];
    kiln__value *values[MAX_TYPES];
    for (int i = 0; i < n_operands; i++)
        in[i] = (kiln__type){.dtype = kiln_tensor_dtype(operands[i]),
                             .shape = *kiln_tensor_shape(operands[i])};
    kiln_status s = kiln__infer(cx, op, attrs, in, n_operands, out, n_results);
    if (s != KILN_OK) return s;
    for (int i = 0; i < n_operands; i++) {
        values[i] = kiln__trace_value_of(cx, fn, operands[i]);
        if (!values[i]) return kiln_ctx_status(cx);
    }
    bool control = kiln__op_has(op, KILN_OPF_CONTROL);
    int32_t n_regions = attrs->n_regions;
    /* Control ops get their result types from their regions: record with placeholders,
     * then fix them up. */
    kiln__attrs recorded;
    kiln__attrs_copy(&recorded, attrs, op);
    for (int i = 0; i < 2; i++) {
        const kiln_region *r = kiln__attrs_region(attrs, i);
        recorded.region[i] = r && kiln__region_kind_of(r) != KILN_REGION_CUSTOM ? r : NULL;
    }
    recorded.regions = NULL;
    if (control)
        for (int i = 0; i < n_results; i++)
            out[i] = (kiln__type){.dtype = KILN_BOOL, .shape = {.rank = 0}};
    /* a custom_call's record (ops/custom_call.h) lives as long as the module */
    if (op == KILN_OP_CUSTOM_CALL && recorded.u.constant &&
        kiln__module_keep_constant(tr->module, (kiln_tensor *)recorded.u.constant) != KILN_OK)
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory tracing", fn);
    kiln__ir_op *irop = kiln__block_append(tr->module, tr->block, op, &recorded, values, n_operands,
                                           out, n_results, n_regions);
    if (!irop)
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory tracing", fn);
    for (int32_t r = 0; r < n_regions; r++) {
        kiln__type args[MAX_TYPES];
        int32_t region_results = 0;
        int32_t n_args = kiln__region_signature(cx, op, attrs, in, n_operands, r, args, MAX_TYPES,
                                                &region_results);
        if (n_args < 0) return kiln_ctx_status(cx);
        char what[96];
        snprintf(what, sizeof what, "%s: region %d", fn, (int)r + 1);
        s = kiln__trace_region(cx, what, kiln__attrs_region(attrs, r), irop, r, args, n_args,
                               region_results);
        if (s != KILN_OK) return s;
    }
    if (control) {
        s = control_result_types(cx, attrs, irop, out, n_results);
        if (s != KILN_OK) return s;
        for (int i = 0; i < n_results; i++)
            if (!kiln__value_set_type(tr->module, irop->results[i], &out[i]))
                return kiln_ctx_status(cx);
    }
    for (int i = 0; i < n_results; i++) {
        results[i] = kiln__tensor_new_traced(cx, fn, out[i].dtype, out[i].shape, irop->results[i]);
        if (!results[i]) {
            for (int j = 0; j < i; j++) {
                kiln_tensor_release(results[j]);
                results[j] = NULL;
            }
            return kiln_ctx_status(cx) != KILN_OK ? kiln_ctx_status(cx) : KILN_RESOURCE_EXHAUSTED;
        }
    }
    return KILN_OK;
}

kiln_status kiln__trace_result_types(kiln_ctx *cx, const char *what, const kiln_region *region,
                                     const kiln__type *arg_types, int32_t n_args, int32_t n_results,
                                     kiln__type *out) {
    kiln__trace *saved = current(cx), top;
    kiln_module *own = NULL;
    kiln__block *block;
    if (saved) {
        block = saved->block;
    } else {
        /* Not tracing: a module of its own, dropped afterwards. */
        own = kiln__module_new(cx, what);
        kiln__func *f = own ? kiln__module_add_func(own, "main", true) : NULL;
        if (!f) {
            kiln_module_release(own);
            return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", what);
        }
        kiln_status s = kiln__trace_nest(cx, what, &top, NULL, own, f->body);
        if (s != KILN_OK) {
            kiln_module_release(own);
            return s;
        }
        block = f->body;
        cx->trace = &top;
    }
    kiln__trace *tr = current(cx);
    kiln__attrs a = {.fn = what, .n_regions = 1};
    kiln__ir_op *holder =
        kiln__block_append(tr->module, block, KILN_OP_CALL, &a, NULL, 0, NULL, 0, 1);
    kiln_status s =
        holder ? kiln__trace_region(cx, what, region, holder, 0, arg_types, n_args, n_results)
               : kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", what);
    for (int32_t i = 0; i < n_results && s == KILN_OK; i++)
        out[i] = *holder->regions[0]->results[i]->type;
    if (holder) kiln__op_remove(holder);
    cx->trace = saved;
    kiln_module_release(own);
    return s;
}
