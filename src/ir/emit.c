/* SPDX-License-Identifier: Apache-2.0 */
/* The IR emitter (ir/emit.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/tensor_internal.h"
#include "ir/emit.h"

#define MAX_TYPES 64

kiln_status kiln__emit_error(kiln__emitter *e, kiln_status code, const char *fmt, ...) {
    if (kiln_ctx_status(e->cx) != KILN_OK) return kiln_ctx_status(e->cx);
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return kiln_ctx_set_error(e->cx, code, "%s: %s", e->fn ? e->fn : "kiln", msg);
}

static bool failed(kiln__emitter *e) { return kiln_ctx_status(e->cx) != KILN_OK; }

static void *oom(kiln__emitter *e) {
    kiln__emit_error(e, KILN_RESOURCE_EXHAUSTED, "out of memory building the transformed function");
    return NULL;
}

/* Builtin regions: what op their block holds. */
typedef struct builtin {
    const kiln_region *(*get)(void);
    kiln_op op; /* KILN_OP_COUNT: replace (returns its second argument) */
    kiln_compare_direction dir;
} builtin;

static const builtin builtins[] = {
    {kiln_region_add, KILN_OP_ADD, KILN_CMP_EQ},
    {kiln_region_multiply, KILN_OP_MULTIPLY, KILN_CMP_EQ},
    {kiln_region_maximum, KILN_OP_MAXIMUM, KILN_CMP_EQ},
    {kiln_region_minimum, KILN_OP_MINIMUM, KILN_CMP_EQ},
    {kiln_region_and, KILN_OP_AND, KILN_CMP_EQ},
    {kiln_region_or, KILN_OP_OR, KILN_CMP_EQ},
    {kiln_region_replace, KILN_OP_COUNT, KILN_CMP_EQ},
    {kiln_region_less, KILN_OP_COMPARE, KILN_CMP_LT},
    {kiln_region_greater, KILN_OP_COMPARE, KILN_CMP_GT},
    {kiln_region_greater_equal, KILN_OP_COMPARE, KILN_CMP_GE},
    {kiln_region_less_equal, KILN_OP_COMPARE, KILN_CMP_LE},
};

static const builtin *builtin_of(const kiln_region *r) {
    if (!r) return NULL;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (builtins[i].get() == r) return &builtins[i];
    return NULL;
}

/* Inference never calls regions; it only checks that they exist. */
static kiln_status never_called(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                                void *user) {
    (void)args, (void)results, (void)user;
    return kiln_ctx_set_error(cx, KILN_INTERNAL, "internal: a transform called a region");
}

/* Fills a builtin region's block: its two scalar arguments combined by the builtin op. */
static bool fill_builtin(kiln__emitter *e, kiln__block *b, const builtin *bi,
                         const kiln__type *args, int32_t n_args) {
    if (n_args != 2) {
        kiln__emit_error(e, KILN_INTERNAL, "internal: a builtin region with %d arguments",
                         (int)n_args);
        return false;
    }
    kiln__value *a0 = kiln__block_add_arg(e->m, b, args[0]);
    kiln__value *a1 = a0 ? kiln__block_add_arg(e->m, b, args[1]) : NULL;
    if (!a1) return oom(e), false;
    kiln__value *r;
    if (bi->op == KILN_OP_COUNT) {
        r = a1;
    } else {
        kiln__emitter inner = *e;
        inner.block = b;
        if (bi->op == KILN_OP_COMPARE)
            r = kiln__emit_compare(&inner, bi->dir, a0, a1);
        else
            r = kiln__emit_binary(&inner, bi->op, a0, a1);
        if (!r) return false;
    }
    if (kiln__block_set_results(e->m, b, &r, 1) != KILN_OK) return oom(e), false;
    return true;
}

static kiln__ir_op *emit_impl(kiln__emitter *e, kiln_op kind, const kiln__attrs *attrs,
                              kiln__value *const *operands, int32_t n_operands,
                              const kiln__type *given, int32_t n_given, bool fill_builtins) {
    if (failed(e)) return NULL;
    const kiln__op_info *info = kiln__op_get_info(kind);
    if (!info)
        return kiln__emit_error(e, KILN_INTERNAL, "internal: unknown op %d", (int)kind), NULL;
    if (n_operands < 0 || n_operands > MAX_TYPES) {
        kiln__emit_error(e, KILN_INTERNAL, "internal: %d operands for %s", (int)n_operands,
                         info->name);
        return NULL;
    }
    for (int32_t i = 0; i < n_operands; i++)
        if (!operands[i]) {
            kiln__emit_error(e, KILN_INTERNAL, "internal: operand %d of %s is missing", (int)i,
                             info->name);
            return NULL;
        }
    kiln__attrs a;
    if (attrs)
        kiln__attrs_copy(&a, attrs, kind);
    else
        memset(&a, 0, sizeof a);
    if (!a.fn) a.fn = e->fn;
    int32_t n_results = info->n_results >= 0 ? info->n_results : a.n_results;
    if (given) n_results = n_given;
    if (n_results < 0 || n_results > MAX_TYPES) {
        kiln__emit_error(e, KILN_INTERNAL, "internal: %d results for %s", (int)n_results,
                         info->name);
        return NULL;
    }
    int32_t n_regions = a.n_regions;
    if (n_regions < 0 || n_regions > MAX_TYPES) {
        kiln__emit_error(e, KILN_INTERNAL, "internal: %d regions for %s", (int)n_regions,
                         info->name);
        return NULL;
    }
    kiln__type in[MAX_TYPES], out[MAX_TYPES];
    for (int32_t i = 0; i < n_operands; i++)
        in[i] = *operands[i]->type;
    /* Inference sees stand-in regions (builtins stay themselves). */
    kiln_region stand_in[MAX_TYPES];
    const builtin *bis[MAX_TYPES];
    for (int32_t r = 0; r < n_regions; r++) {
        const kiln_region *orig = a.regions || r < 2 ? kiln__attrs_region(&a, r) : NULL;
        bis[r] = builtin_of(orig);
        stand_in[r] = bis[r] ? *orig : (kiln_region){never_called, NULL};
    }
    kiln__attrs infer_attrs = a;
    infer_attrs.regions = n_regions ? stand_in : NULL;
    bool control = kiln__op_has(kind, KILN_OPF_CONTROL);
    if (!control || kind == KILN_OP_WHILE) {
        if (kiln__infer(e->cx, kind, &infer_attrs, in, n_operands, out, n_results) != KILN_OK)
            return NULL;
        if (given)
            for (int32_t i = 0; i < n_results; i++)
                if (given[i].dtype != out[i].dtype ||
                    !kiln_shape_equal(&given[i].shape, &out[i].shape)) {
                    kiln__emit_error(e, KILN_INTERNAL,
                                     "internal: result %d of %s has a type other than inferred",
                                     (int)i, info->name);
                    return NULL;
                }
    } else if (!given) {
        kiln__emit_error(e, KILN_INTERNAL, "internal: %s needs its result types (emit_op_typed)",
                         info->name);
        return NULL;
    } else if (kiln__infer(e->cx, kind, &infer_attrs, in, n_operands, out, n_results) != KILN_OK) {
        return NULL;
    }
    if (given)
        for (int32_t i = 0; i < n_results; i++)
            out[i] = given[i];
    /* As recorded by tracing: builtin region pointers kept, no caller arrays. */
    kiln__attrs recorded = a;
    recorded.regions = NULL;
    for (int32_t r = 0; r < 2; r++)
        recorded.region[r] = r < n_regions && bis[r] ? bis[r]->get() : NULL;
    kiln__ir_op *op = kiln__block_append(e->m, e->block, kind, &recorded, operands, n_operands, out,
                                         n_results, n_regions);
    if (!op) return oom(e);
    for (int32_t r = 0; r < n_regions && fill_builtins; r++) {
        if (!bis[r]) continue;
        kiln__type args[MAX_TYPES];
        int32_t nres = 0;
        int32_t n = kiln__region_signature(e->cx, kind, &infer_attrs, in, n_operands, r, args,
                                           MAX_TYPES, &nres);
        if (n < 0) return NULL;
        kiln__block *b = kiln__block_new(e->m, op);
        if (!b) return oom(e);
        op->regions[r] = b;
        if (!fill_builtin(e, b, bis[r], args, n)) return NULL;
    }
    return op;
}

kiln__ir_op *kiln__emit_op(kiln__emitter *e, kiln_op kind, const kiln__attrs *attrs,
                           kiln__value *const *operands, int32_t n_operands) {
    return emit_impl(e, kind, attrs, operands, n_operands, NULL, 0, true);
}

kiln__ir_op *kiln__emit_op_bare(kiln__emitter *e, kiln_op kind, const kiln__attrs *attrs,
                                kiln__value *const *operands, int32_t n_operands) {
    return emit_impl(e, kind, attrs, operands, n_operands, NULL, 0, false);
}

kiln__ir_op *kiln__emit_op_typed(kiln__emitter *e, kiln_op kind, const kiln__attrs *attrs,
                                 kiln__value *const *operands, int32_t n_operands,
                                 const kiln__type *result_types, int32_t n_results) {
    if (!result_types && n_results > 0) {
        kiln__emit_error(e, KILN_INTERNAL, "internal: emit_op_typed without types");
        return NULL;
    }
    static const kiln__type none = {0};
    return emit_impl(e, kind, attrs, operands, n_operands, n_results ? result_types : &none,
                     n_results, true);
}

kiln__value *kiln__emit(kiln__emitter *e, kiln_op kind, const kiln__attrs *attrs,
                        kiln__value *const *operands, int32_t n_operands) {
    kiln__ir_op *op = kiln__emit_op(e, kind, attrs, operands, n_operands);
    if (!op) return NULL;
    if (op->n_results < 1) {
        kiln__emit_error(e, KILN_INTERNAL, "internal: %s has no result",
                         kiln__op_get_info(kind)->name);
        return NULL;
    }
    return op->results[0];
}

kiln__block *kiln__emit_region_block(kiln__emitter *e, kiln__ir_op *op, int32_t i,
                                     const kiln__type *arg_types, int32_t n_args) {
    if (failed(e) || !op) return NULL;
    if (i < 0 || i >= op->n_regions) {
        kiln__emit_error(e, KILN_INTERNAL, "internal: region %d of an op with %d", (int)i,
                         (int)op->n_regions);
        return NULL;
    }
    kiln__block *b = kiln__block_new(e->m, op);
    if (!b) return oom(e);
    for (int32_t k = 0; k < n_args; k++)
        if (!kiln__block_add_arg(e->m, b, arg_types[k])) return oom(e);
    op->regions[i] = b;
    return b;
}

/* ---- conveniences ---------------------------------------------------------------------- */

kiln__value *kiln__emit_scalar(kiln__emitter *e, kiln_dtype dtype, double v) {
    if (failed(e)) return NULL;
    kiln_tensor *t = kiln_scalar(e->cx, v, dtype);
    if (!t) return NULL;
    kiln_status s = kiln__module_keep_constant(e->m, t);
    kiln__tensor_discard(t);
    if (s != KILN_OK) return oom(e);
    kiln__attrs a = {.fn = e->fn};
    a.u.constant = t; /* kept alive by the module */
    return kiln__emit(e, KILN_OP_CONSTANT, &a, NULL, 0);
}

kiln__value *kiln__emit_broadcast(kiln__emitter *e, kiln__value *x, const kiln_shape *shape,
                                  const kiln_dims *dims) {
    if (!x || failed(e)) return NULL;
    kiln__attrs a = {.fn = e->fn};
    a.u.broadcast.shape = *shape;
    a.u.broadcast.dims = *dims;
    return kiln__emit(e, KILN_OP_BROADCAST_IN_DIM, &a, &x, 1);
}

kiln__value *kiln__emit_full(kiln__emitter *e, const kiln__type *type, double v) {
    kiln__value *s = kiln__emit_scalar(e, type->dtype, v);
    if (!s || type->shape.rank == 0) return s;
    kiln_dims none = {0};
    return kiln__emit_broadcast(e, s, &type->shape, &none);
}

kiln__value *kiln__emit_zeros(kiln__emitter *e, const kiln__type *type) {
    return kiln__emit_full(e, type, 0.0);
}

kiln__value *kiln__emit_full_like(kiln__emitter *e, kiln__value *x, double v) {
    if (!x) return NULL;
    return kiln__emit_full(e, x->type, v);
}

/* Rank-0 operands of a binary op meet a ranked one by broadcasting. */
static kiln__value *match_rank(kiln__emitter *e, kiln__value *x, const kiln__value *other) {
    if (!x || !other) return x;
    if (x->type->shape.rank == 0 && other->type->shape.rank > 0) {
        kiln_dims none = {0};
        return kiln__emit_broadcast(e, x, &other->type->shape, &none);
    }
    return x;
}

kiln__value *kiln__emit_unary(kiln__emitter *e, kiln_op kind, kiln__value *x) {
    if (!x) return NULL;
    return kiln__emit(e, kind, NULL, &x, 1);
}

kiln__value *kiln__emit_binary(kiln__emitter *e, kiln_op kind, kiln__value *a, kiln__value *b) {
    if (!a || !b || failed(e)) return NULL;
    a = match_rank(e, a, b);
    b = match_rank(e, b, a);
    kiln__value *ops[2] = {a, b};
    return kiln__emit(e, kind, NULL, ops, 2);
}

kiln__value *kiln__emit_add(kiln__emitter *e, kiln__value *a, kiln__value *b) {
    return kiln__emit_binary(e, KILN_OP_ADD, a, b);
}
kiln__value *kiln__emit_sub(kiln__emitter *e, kiln__value *a, kiln__value *b) {
    return kiln__emit_binary(e, KILN_OP_SUBTRACT, a, b);
}
kiln__value *kiln__emit_mul(kiln__emitter *e, kiln__value *a, kiln__value *b) {
    return kiln__emit_binary(e, KILN_OP_MULTIPLY, a, b);
}
kiln__value *kiln__emit_div(kiln__emitter *e, kiln__value *a, kiln__value *b) {
    return kiln__emit_binary(e, KILN_OP_DIVIDE, a, b);
}
kiln__value *kiln__emit_neg(kiln__emitter *e, kiln__value *x) {
    return kiln__emit_unary(e, KILN_OP_NEGATE, x);
}

kiln__value *kiln__emit_convert(kiln__emitter *e, kiln__value *x, kiln_dtype dtype) {
    if (!x) return NULL;
    if (x->type->dtype == dtype) return x;
    kiln__attrs a = {.fn = e->fn};
    a.u.convert_to = dtype;
    return kiln__emit(e, KILN_OP_CONVERT, &a, &x, 1);
}

kiln__value *kiln__emit_reshape(kiln__emitter *e, kiln__value *x, const kiln_shape *shape) {
    if (!x) return NULL;
    if (kiln_shape_equal(&x->type->shape, shape)) return x;
    kiln__attrs a = {.fn = e->fn};
    a.u.reshape = *shape;
    return kiln__emit(e, KILN_OP_RESHAPE, &a, &x, 1);
}

kiln__value *kiln__emit_transpose(kiln__emitter *e, kiln__value *x, const kiln_dims *perm) {
    if (!x) return NULL;
    bool identity = true;
    for (int32_t i = 0; i < perm->count; i++)
        identity &= perm->v[i] == i;
    if (identity) return x;
    kiln__attrs a = {.fn = e->fn};
    a.u.permutation = *perm;
    return kiln__emit(e, KILN_OP_TRANSPOSE, &a, &x, 1);
}

kiln__value *kiln__emit_reduce_sum(kiln__emitter *e, kiln__value *x, const kiln_dims *dims) {
    if (!x || failed(e)) return NULL;
    if (dims->count == 0) return x;
    kiln__value *zero = kiln__emit_scalar(e, x->type->dtype, 0.0);
    if (!zero) return NULL;
    kiln__attrs a = {.fn = e->fn, .n_results = 1, .n_regions = 1};
    a.region[0] = kiln_region_add();
    a.u.reduce_dims = *dims;
    kiln__value *ops[2] = {x, zero};
    return kiln__emit(e, KILN_OP_REDUCE, &a, ops, 2);
}

kiln__value *kiln__emit_compare(kiln__emitter *e, kiln_compare_direction dir, kiln__value *a,
                                kiln__value *b) {
    if (!a || !b || failed(e)) return NULL;
    a = match_rank(e, a, b);
    b = match_rank(e, b, a);
    kiln__attrs at = {.fn = e->fn};
    at.u.compare.direction = dir;
    at.u.compare.type = kiln__compare_type_of(a->type->dtype);
    kiln__value *ops[2] = {a, b};
    return kiln__emit(e, KILN_OP_COMPARE, &at, ops, 2);
}

kiln__value *kiln__emit_select(kiln__emitter *e, kiln__value *pred, kiln__value *on_true,
                               kiln__value *on_false) {
    if (!pred || !on_true || !on_false || failed(e)) return NULL;
    on_true = match_rank(e, on_true, on_false);
    on_false = match_rank(e, on_false, on_true);
    kiln__value *ops[3] = {pred, on_true, on_false};
    return kiln__emit(e, KILN_OP_SELECT, NULL, ops, 3);
}

kiln__value *kiln__emit_add_any(kiln__emitter *e, kiln__value *a, kiln__value *b) {
    if (!a) return b;
    if (!b) return a;
    return kiln__emit_add(e, a, b);
}

kiln__value *kiln__emit_slice(kiln__emitter *e, kiln__value *x, const kiln_dims *start,
                              const kiln_dims *limit, const kiln_dims *strides) {
    if (!x || failed(e)) return NULL;
    kiln__attrs a = {.fn = e->fn};
    a.u.slice.start = *start;
    a.u.slice.limit = *limit;
    if (strides) {
        a.u.slice.strides = *strides;
    } else {
        a.u.slice.strides.count = start->count;
        for (int32_t i = 0; i < start->count; i++)
            a.u.slice.strides.v[i] = 1;
    }
    return kiln__emit(e, KILN_OP_SLICE, &a, &x, 1);
}

kiln__value *kiln__emit_pad(kiln__emitter *e, kiln__value *x, kiln__value *value,
                            const kiln_dims *low, const kiln_dims *high,
                            const kiln_dims *interior) {
    if (!x || !value || failed(e)) return NULL;
    kiln__attrs a = {.fn = e->fn};
    a.u.pad.low = *low;
    a.u.pad.high = *high;
    a.u.pad.interior = *interior;
    kiln__value *ops[2] = {x, value};
    return kiln__emit(e, KILN_OP_PAD, &a, ops, 2);
}
