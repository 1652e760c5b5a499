/* SPDX-License-Identifier: Apache-2.0 */
/* The batching transform: the walk over a function's ops, what the rules share, and whole
 * functions (batch.h). */
#include <string.h>

#include "base/alloc.h"
#include "base/stack.h"
#include "batching/batch.h"

#define MAX_VALUES 256

/* ---- values ------------------------------------------------------------------------------ */

bool kiln__batch_is(const kiln__batch *b, const kiln__value *v) {
    return kiln__vmap_get(&b->bat, v) != NULL;
}

kiln__value *kiln__batch_val(const kiln__batch *b, const kiln__value *v) {
    return kiln__vmap_get(&b->val, v);
}

bool kiln__batch_map(kiln__batch *b, const kiln__value *v, kiln__value *to, bool batched) {
    return kiln__vmap_put(&b->val, v, to) && kiln__vmap_put(&b->bat, v, batched ? to : NULL);
}

kiln__type kiln__batch_type(const kiln__batch *b, const kiln__type *type) {
    kiln__type t = {.dtype = type->dtype, .shape = {.rank = type->shape.rank + 1}};
    t.shape.dims[0] = b->size;
    for (int32_t d = 0; d < type->shape.rank; d++)
        t.shape.dims[d + 1] = type->shape.dims[d];
    return t;
}

kiln__value *kiln__batch_broadcast(kiln__batch *b, kiln__value *x, bool batched) {
    if (!x || batched) return x;
    if (x->type->shape.rank >= KILN_MAX_RANK) {
        kiln__emit_error(&b->e, KILN_UNIMPLEMENTED,
                         "a value of rank %d cannot gain a batch dimension (at most %d)",
                         (int)x->type->shape.rank, KILN_MAX_RANK);
        return NULL;
    }
    kiln__type t = kiln__batch_type(b, x->type);
    kiln_dims dims = {.count = x->type->shape.rank};
    for (int32_t d = 0; d < dims.count; d++)
        dims.v[d] = d + 1;
    return kiln__emit_broadcast(&b->e, x, &t.shape, &dims);
}

kiln_dims kiln__batch_dims(const kiln_dims *dims, int64_t lead, int64_t shift) {
    kiln_dims r = {.count = 0};
    if (lead >= 0) r.v[r.count++] = lead;
    for (int32_t i = 0; i < dims->count && r.count < KILN_MAX_RANK; i++)
        r.v[r.count++] = dims->v[i] + shift;
    return r;
}

kiln__attrs kiln__batch_attrs(const kiln__ir_op *op) {
    kiln__attrs a;
    memset(&a, 0, sizeof a);
    kiln__attrs_copy(&a, op->attrs, op->kind);
    return a;
}

kiln__ir_op *kiln__batch_emit_like(kiln__batch *b, const kiln__ir_op *op, const kiln__attrs *attrs,
                                   kiln__value *const *operands, int32_t n_operands) {
    kiln__ir_op *n = kiln__emit_op_bare(&b->e, op->kind, attrs, operands, n_operands);
    for (int32_t r = 0; n && r < op->n_regions; r++)
        if (kiln__clone_region(b->e.m, n, r, op->regions[r], &b->val) != KILN_OK) return NULL;
    return n;
}

/* ---- which values are batched -------------------------------------------------------------- */

/* Does a value used inside `region` (any depth) but defined outside it satisfy `is`? */
typedef bool (*value_test)(const void *ctx, const kiln__value *v);

static bool region_uses(const kiln__block *root, const kiln__block *b, value_test is,
                        const void *ctx) {
    for (const kiln__ir_op *op = b->first; op; op = op->next) {
        for (int32_t i = 0; i < op->n_operands; i++)
            if (!kiln__value_defined_in(op->operands[i], root) && is(ctx, op->operands[i]))
                return true;
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r] && region_uses(root, op->regions[r], is, ctx)) return true;
    }
    for (int32_t i = 0; i < b->n_results; i++)
        if (!kiln__value_defined_in(b->results[i], root) && is(ctx, b->results[i])) return true;
    return false;
}

static bool op_regions_use(const kiln__ir_op *op, value_test is, const void *ctx) {
    for (int32_t r = 0; r < op->n_regions; r++)
        if (op->regions[r] && region_uses(op->regions[r], op->regions[r], is, ctx)) return true;
    return false;
}

static bool batched_test(const void *ctx, const kiln__value *v) { return kiln__batch_is(ctx, v); }

bool kiln__batch_regions_batched(const kiln__batch *b, const kiln__ir_op *op) {
    return op_regions_use(op, batched_test, b);
}

typedef struct analysis {
    const kiln__batch *b;
    const kiln__block *src;
    kiln__vmap marks; /* values of src found batched */
} analysis;

static bool analysed_test(const void *ctx, const kiln__value *v) {
    const analysis *a = ctx;
    if (kiln__value_defined_in(v, a->src)) return kiln__vmap_get(&a->marks, v) != NULL;
    return kiln__batch_is(a->b, v);
}

kiln_status kiln__batch_analyse(kiln__batch *b, const kiln__block *src, const bool *arg_batched,
                                bool *out_batched) {
    analysis a = {.b = b, .src = src};
    kiln__vmap_init(&a.marks, b->e.cx);
    bool ok = true;
    for (int32_t i = 0; i < src->n_args && ok; i++)
        if (arg_batched[i]) ok = kiln__vmap_put(&a.marks, src->args[i], src->args[i]);
    for (const kiln__ir_op *op = src->first; op && ok; op = op->next) {
        bool any = op_regions_use(op, analysed_test, &a);
        for (int32_t i = 0; i < op->n_operands && !any; i++)
            any = analysed_test(&a, op->operands[i]);
        for (int32_t j = 0; j < op->n_results && any && ok; j++)
            ok = kiln__vmap_put(&a.marks, op->results[j], op->results[j]);
    }
    for (int32_t j = 0; j < src->n_results && ok; j++)
        out_batched[j] = analysed_test(&a, src->results[j]);
    kiln__vmap_free(&a.marks);
    return kiln_ctx_status(b->e.cx); /* a failed put recorded RESOURCE_EXHAUSTED */
}

/* ---- the walk ------------------------------------------------------------------------------ */

static kiln_status batch_op(kiln__batch *b, const kiln__ir_op *op) {
    kiln_ctx *cx = b->e.cx;
    const char *name = kiln__op_get_info(op->kind)->name;
    if (op->n_operands > MAX_VALUES || op->n_results > MAX_VALUES)
        return kiln__emit_error(&b->e, KILN_UNIMPLEMENTED,
                                "stablehlo.%s with more than %d operands or results", name,
                                MAX_VALUES);
    kiln__value *in[MAX_VALUES], *out[MAX_VALUES];
    bool batched[MAX_VALUES], out_batched[MAX_VALUES];
    bool any = false;
    for (int32_t i = 0; i < op->n_operands; i++) {
        in[i] = kiln__batch_val(b, op->operands[i]);
        batched[i] = kiln__batch_is(b, op->operands[i]);
        any |= batched[i];
        if (!in[i])
            return kiln__emit_error(&b->e, KILN_INTERNAL,
                                    "internal: operand %d of stablehlo.%s has no value", (int)i,
                                    name);
    }
    bool control = kiln__op_has(op->kind, KILN_OPF_CONTROL);
    bool regions = !control && kiln__batch_regions_batched(b, op);
    if (!any && (control ? !kiln__batch_regions_batched(b, op) : !regions)) {
        kiln__ir_op *copy = kiln__clone_op(b->e.m, b->e.block, op, &b->val);
        return copy ? KILN_OK : kiln_ctx_status(cx);
    }
    if (kiln__stack_low(KILN__STACK_RESERVE))
        return kiln__emit_error(&b->e, KILN_RESOURCE_EXHAUSTED,
                                "regions nested too deep for this thread's stack");
    for (int32_t j = 0; j < op->n_results; j++) {
        out[j] = NULL;
        out_batched[j] = false;
        if (op->results[j]->type->shape.rank >= KILN_MAX_RANK)
            return kiln__emit_error(&b->e, KILN_UNIMPLEMENTED,
                                    "stablehlo.%s: a value of rank %d cannot gain a batch "
                                    "dimension (at most %d)",
                                    name, (int)op->results[j]->type->shape.rank, KILN_MAX_RANK);
    }
    /* A region that computes with a batched value from outside cannot stay scalar: only
     * control flow (whose rules batch their regions) or the loop handles that. */
    kiln__batch_rule rule = regions ? kiln__batch_by_loop : kiln__batch_rules[op->kind];
    kiln__batch_op view = {op, in, batched, op->n_operands};
    kiln_status s = rule(b, &view, out, out_batched);
    if (s == KILN_OK && kiln_ctx_status(cx) != KILN_OK) s = kiln_ctx_status(cx);
    if (s != KILN_OK) {
        if (kiln_ctx_status(cx) == KILN_OK)
            kiln__emit_error(&b->e, s, "the batching rule of stablehlo.%s failed", name);
        return kiln_ctx_status(cx);
    }
    for (int32_t j = 0; j < op->n_results; j++) {
        const kiln__type *want = op->results[j]->type;
        kiln__type bt = kiln__batch_type(b, want);
        const kiln__type *expect = out_batched[j] ? &bt : want;
        if (!out[j] || out[j]->type->dtype != expect->dtype ||
            !kiln_shape_equal(&out[j]->type->shape, &expect->shape)) {
            char have[KILN__TYPE_TEXT], t[KILN__TYPE_TEXT];
            return kiln__emit_error(&b->e, KILN_INTERNAL,
                                    "internal: the batching rule of stablehlo.%s gave result %d "
                                    "%s; expected %s",
                                    name, (int)j,
                                    out[j] ? kiln__type_text(out[j]->type, have) : "nothing",
                                    kiln__type_text(expect, t));
        }
        if (!kiln__batch_map(b, op->results[j], out[j], out_batched[j])) return kiln_ctx_status(cx);
    }
    return KILN_OK;
}

kiln_status kiln__batch_block(kiln__batch *b, const kiln__block *src) {
    for (const kiln__ir_op *op = src->first; op; op = op->next) {
        kiln_status s = batch_op(b, op);
        if (s != KILN_OK) return s;
    }
    return kiln_ctx_status(b->e.cx);
}

/* ---- whole functions --------------------------------------------------------------------- */

kiln__value *kiln__batch_move_axis(kiln__emitter *e, kiln__value *x, int32_t from, int32_t to) {
    if (!x || from == to) return x;
    int32_t rank = x->type->shape.rank;
    kiln_dims rest = {.count = 0}, perm = {.count = rank};
    for (int32_t d = 0; d < rank; d++)
        if (d != from) rest.v[rest.count++] = d;
    for (int32_t d = 0, k = 0; d < rank; d++)
        perm.v[d] = d == to ? from : rest.v[k++];
    return kiln__emit_transpose(e, x, &perm);
}

kiln_status kiln__batch_func(kiln_ctx *cx, const char *fn, const kiln__func *f,
                             const kiln__value *const *extra, int32_t n_extra, kiln_module *dst,
                             const int32_t *in_axes, const int32_t *out_axes, int64_t size,
                             kiln__func **out) {
    *out = NULL;
    const kiln__block *body = f->body;
    kiln__func *g = kiln__module_add_func(dst, f->name ? f->name : "main", true);
    if (!g) return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    kiln__batch b = {.e = {.cx = cx, .m = dst, .block = g->body, .fn = fn}, .size = size};
    kiln__vmap_init(&b.val, cx);
    kiln__vmap_init(&b.bat, cx);
    kiln_status s = KILN_OK;
    /* The arguments, with the batch where the caller has it, moved to axis 0. */
    for (int32_t i = 0; i < body->n_args && s == KILN_OK; i++) {
        const kiln__type *t = body->args[i]->type;
        bool mapped = in_axes[i] != KILN__BATCH_NONE;
        kiln__type at = *t;
        if (mapped) {
            kiln__type bt = kiln__batch_type(&b, t);
            at = bt;
            at.shape.dims[in_axes[i]] = size;
            for (int32_t d = 0, k = 1; d < bt.shape.rank; d++)
                if (d != in_axes[i]) at.shape.dims[d] = bt.shape.dims[k++];
        }
        kiln__value *a = kiln__block_add_arg(dst, g->body, at);
        kiln__value *v = mapped ? kiln__batch_move_axis(&b.e, a, in_axes[i], 0) : a;
        if (!v || !kiln__batch_map(&b, body->args[i], v, mapped))
            s = kiln_ctx_status(cx) != KILN_OK
                    ? kiln_ctx_status(cx)
                    : kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    for (int32_t i = 0; i < n_extra && s == KILN_OK; i++) {
        kiln__value *a = kiln__block_add_arg(dst, g->body, *extra[i]->type);
        if (!a || !kiln__batch_map(&b, extra[i], a, false))
            s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    if (s == KILN_OK) s = kiln__batch_block(&b, body);
    kiln__value **res = NULL;
    if (s == KILN_OK) {
        size_t n = (size_t)(body->n_results ? body->n_results : 1);
        res = kiln__arena_alloc(&dst->arena, n * sizeof *res, _Alignof(void *));
        if (!res) s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    for (int32_t j = 0; j < body->n_results && s == KILN_OK; j++) {
        const kiln__value *r = body->results[j];
        bool batched = kiln__batch_is(&b, r);
        if (out_axes[j] == KILN__BATCH_NONE) {
            if (batched)
                s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                       "%s: result %d depends on a mapped argument, so it has a "
                                       "batch dimension; its out axis is none",
                                       fn, (int)j);
            res[j] = kiln__batch_val(&b, r);
            continue;
        }
        res[j] = kiln__batch_move_axis(
            &b.e, kiln__batch_broadcast(&b, kiln__batch_val(&b, r), batched), 0, out_axes[j]);
        if (!res[j]) s = kiln_ctx_status(cx);
    }
    if (s == KILN_OK) s = kiln__block_set_results(dst, g->body, res, body->n_results);
    kiln__vmap_free(&b.val);
    kiln__vmap_free(&b.bat);
    if (s != KILN_OK) {
        if (kiln_ctx_status(cx) == KILN_OK) kiln_ctx_set_error(cx, s, "%s: failed", fn);
        return kiln_ctx_status(cx);
    }
    kiln__module_dce(dst);
    *out = g;
    return KILN_OK;
}
