/* Reverse mode: copy the forward ops, then run the vjp rules backwards, accumulating
 * cotangents per source value. */
#include <string.h>

#include "autodiff/transform.h"
#include "base/alloc.h"

#define MAX_VALUES 256
#define AD_MAGIC 0x61647631u

bool kiln__ad_is_stop_gradient(const kiln__ir_op *op) {
    return op->kind == KILN_OP_OPTIMIZATION_BARRIER && op->attrs.fn &&
           strcmp(op->attrs.fn, KILN__STOP_GRADIENT_FN) == 0;
}

bool kiln__ad_is_custom_vjp(const kiln__ir_op *op) {
    return op->kind == KILN_OP_CALL && op->attrs.fn &&
           strcmp(op->attrs.fn, KILN__CUSTOM_VJP_FN) == 0 && op->attrs.u.constant;
}

kiln__ad *kiln__ad_of(kiln__emitter *e) {
    kiln__ad *ad = (kiln__ad *)e;
    if (ad->magic != AD_MAGIC) {
        kiln__emit_error(e, KILN_INTERNAL, "internal: a control-flow rule outside a transform");
        return NULL;
    }
    return ad;
}

/* ---- free values ----------------------------------------------------------------------- */

static bool defined_within(const kiln__value *v, const kiln__block *b) {
    const kiln__block *home = v->def ? v->def->block : v->block;
    for (; home; home = home->parent ? home->parent->block : NULL)
        if (home == b) return true;
    return false;
}

typedef struct free_walk {
    const kiln__block *root;
    bool float_only;
    const kiln__value **out;
    int32_t cap, n;
    kiln__vmap seen;
    bool failed;
} free_walk;

static void free_use(free_walk *w, const kiln__value *v) {
    if (w->failed || defined_within(v, w->root)) return;
    if (w->float_only && !kiln_dtype_is_float(v->type.dtype)) return;
    if (kiln__vmap_get(&w->seen, v)) return;
    if (w->n >= w->cap || !kiln__vmap_put(&w->seen, v, (kiln__value *)v)) {
        w->failed = true;
        return;
    }
    w->out[w->n++] = v;
}

static void free_block(free_walk *w, const kiln__block *b) {
    for (const kiln__ir_op *op = b->first; op; op = op->next) {
        for (int32_t i = 0; i < op->n_operands; i++)
            free_use(w, op->operands[i]);
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) free_block(w, op->regions[r]);
    }
    for (int32_t i = 0; i < b->n_results; i++)
        free_use(w, b->results[i]);
}

int32_t kiln__ad_free_values(kiln_ctx *cx, const kiln__block *b, bool float_only,
                             const kiln__value **out, int32_t cap) {
    free_walk w = {.root = b, .float_only = float_only, .out = out, .cap = cap};
    kiln__vmap_init(&w.seen, cx);
    free_block(&w, b);
    kiln__vmap_free(&w.seen);
    return w.failed ? -1 : w.n;
}

/* ---- forward and backward over a block ------------------------------------------------- */

kiln_status kiln__ad_forward(kiln__ad *ad, const kiln__block *src) {
    if (kiln_ctx_status(ad->e.cx) != KILN_OK) return kiln_ctx_status(ad->e.cx);
    for (const kiln__ir_op *op = src->first; op; op = op->next) {
        bool done = false;
        if (ad->reverse && op->kind == KILN_OP_WHILE) {
            kiln_status s = kiln__ad_forward_loop(ad, op, &done);
            if (s != KILN_OK) return s;
        }
        if (!done && !kiln__clone_op(ad->e.m, ad->e.block, op, &ad->primal))
            return kiln_ctx_status(ad->e.cx);
    }
    return KILN_OK;
}

static kiln_status check_ct(kiln__ad *ad, const kiln__ir_op *op, int32_t i, const kiln__value *ct) {
    const kiln__type *want = &op->operands[i]->type;
    if (ct->type.dtype == want->dtype && kiln_shape_equal(&ct->type.shape, &want->shape))
        return KILN_OK;
    char a[KILN__TYPE_TEXT], b[KILN__TYPE_TEXT];
    return kiln__emit_error(&ad->e, KILN_INTERNAL,
                            "internal: the vjp rule of stablehlo.%s gave operand %d a cotangent "
                            "of type %s; expected %s",
                            kiln__op_get_info(op->kind)->name, (int)i,
                            kiln__type_text(&ct->type, a), kiln__type_text(want, b));
}

static kiln_status backward_op(kiln__ad *ad, const kiln__ir_op *op) {
    kiln_ctx *cx = ad->e.cx;
    if (op->n_operands > MAX_VALUES || op->n_results > MAX_VALUES)
        return kiln__emit_error(&ad->e, KILN_UNIMPLEMENTED,
                                "stablehlo.%s with more than %d operands or results",
                                kiln__op_get_info(op->kind)->name, MAX_VALUES);
    kiln__value *cts[MAX_VALUES], *outs[MAX_VALUES], *prims[MAX_VALUES], *out_cts[MAX_VALUES];
    bool any = false;
    for (int32_t j = 0; j < op->n_results; j++) {
        cts[j] = kiln_dtype_is_float(op->results[j]->type.dtype)
                     ? kiln__vmap_get(&ad->deriv, op->results[j])
                     : NULL;
        any |= cts[j] != NULL;
        outs[j] = kiln__vmap_get(&ad->primal, op->results[j]);
    }
    if (!any || kiln__ad_is_stop_gradient(op)) return KILN_OK;
    bool float_operand = false;
    for (int32_t i = 0; i < op->n_operands; i++) {
        prims[i] = kiln__vmap_get(&ad->primal, op->operands[i]);
        out_cts[i] = NULL;
        float_operand |= kiln_dtype_is_float(op->operands[i]->type.dtype);
    }
    /* Nothing can flow into non-float operands, so ops like convert-from-int stop here;
     * control ops still run: their regions may use float values from outside. */
    if (!float_operand && !kiln__op_has(op->kind, KILN_OPF_CONTROL) &&
        !kiln__op_has(op->kind, KILN_OPF_REGIONS))
        return KILN_OK;
    kiln_status s;
    if (kiln__ad_is_custom_vjp(op)) {
        if (!ad->hooks || !ad->hooks->custom_bwd)
            return kiln__emit_error(&ad->e, KILN_INTERNAL, "internal: no custom_vjp support");
        int32_t n_res = op->n_results; /* outputs then residuals; the record says where */
        const int32_t *counts = kiln_tensor_data((kiln_tensor *)op->attrs.u.constant);
        int32_t n_out = counts ? counts[1] : 0;
        if (n_out < 0 || n_out > n_res)
            return kiln__emit_error(&ad->e, KILN_INTERNAL, "internal: a bad custom_vjp record");
        s = ad->hooks->custom_bwd(&ad->e, op, outs + n_out, n_res - n_out, cts, n_out, out_cts,
                                  op->n_operands);
    } else {
        kiln__ad_op view = {op, prims, op->n_operands, outs, op->n_results};
        s = kiln__vjp_rules[op->kind](&ad->e, &view, cts, out_cts);
    }
    if (s == KILN_OK && kiln_ctx_status(cx) != KILN_OK) s = kiln_ctx_status(cx);
    if (s != KILN_OK) {
        if (kiln_ctx_status(cx) == KILN_OK)
            kiln__emit_error(&ad->e, s, "the vjp rule of stablehlo.%s failed",
                             kiln__op_get_info(op->kind)->name);
        return s;
    }
    for (int32_t i = 0; i < op->n_operands; i++) {
        if (!out_cts[i] || !kiln_dtype_is_float(op->operands[i]->type.dtype)) continue;
        if ((s = check_ct(ad, op, i, out_cts[i])) != KILN_OK) return s;
        kiln__value *sum =
            kiln__emit_add_any(&ad->e, kiln__vmap_get(&ad->deriv, op->operands[i]), out_cts[i]);
        if (!sum || !kiln__vmap_put(&ad->deriv, op->operands[i], sum)) return kiln_ctx_status(cx);
    }
    return KILN_OK;
}

kiln_status kiln__ad_backward(kiln__ad *ad, const kiln__block *src) {
    for (const kiln__ir_op *op = src->last; op; op = op->prev) {
        kiln_status s = backward_op(ad, op);
        if (s != KILN_OK) return s;
    }
    return kiln_ctx_status(ad->e.cx);
}

/* ---- whole functions -------------------------------------------------------------------- */

kiln_status kiln__ad_init(kiln__ad *ad, kiln_ctx *cx, const char *fn, kiln_module *dst,
                          kiln__block *block, const kiln__ad_hooks *hooks) {
    memset(ad, 0, sizeof *ad);
    ad->e = (kiln__emitter){.cx = cx, .m = dst, .block = block, .fn = fn};
    ad->magic = AD_MAGIC;
    ad->hooks = hooks;
    kiln__vmap_init(&ad->primal, cx);
    kiln__vmap_init(&ad->deriv, cx);
    kiln__vmap_init(&ad->stacks, cx);
    return KILN_OK;
}

void kiln__ad_fini(kiln__ad *ad) {
    kiln__vmap_free(&ad->primal);
    kiln__vmap_free(&ad->deriv);
    kiln__vmap_free(&ad->stacks);
    ad->magic = 0;
}

kiln_status kiln__vjp_func(kiln_ctx *cx, const char *fn, const kiln__func *f,
                           const kiln__value *const *extra, int32_t n_extra, kiln_module *dst,
                           const bool *wrt, const bool *seed, const kiln__ad_hooks *hooks,
                           kiln__func **out) {
    *out = NULL;
    const kiln__block *body = f->body;
    kiln__func *g = kiln__module_add_func(dst, f->name ? f->name : "main", true);
    if (!g) return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    kiln__ad ad;
    kiln__ad_init(&ad, cx, fn, dst, g->body, hooks);
    ad.reverse = true;
    kiln_status s = KILN_OK;
    int32_t n_wrt = 0;
    for (int32_t i = 0; i < body->n_args && s == KILN_OK; i++) {
        kiln__value *a = kiln__block_add_arg(dst, g->body, body->args[i]->type);
        if (!a || !kiln__vmap_put(&ad.primal, body->args[i], a))
            s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
        n_wrt += wrt[i];
    }
    for (int32_t i = 0; i < n_extra && s == KILN_OK; i++) {
        kiln__value *a = kiln__block_add_arg(dst, g->body, extra[i]->type);
        if (!a || !kiln__vmap_put(&ad.primal, extra[i], a))
            s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    if (s == KILN_OK) s = kiln__ad_forward(&ad, body);
    for (int32_t j = 0; j < body->n_results && s == KILN_OK; j++) {
        if (!seed[j]) continue;
        kiln__value *ct = kiln__block_add_arg(dst, g->body, body->results[j]->type);
        if (!ct) {
            s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
            break;
        }
        if (!kiln_dtype_is_float(ct->type.dtype)) continue;
        /* A result returned twice gets both cotangents. */
        kiln__value *sum =
            kiln__emit_add_any(&ad.e, kiln__vmap_get(&ad.deriv, body->results[j]), ct);
        if (!sum || !kiln__vmap_put(&ad.deriv, body->results[j], sum)) s = kiln_ctx_status(cx);
    }
    if (s == KILN_OK) s = kiln__ad_backward(&ad, body);
    size_t n = (size_t)body->n_results + (size_t)n_wrt;
    kiln__value **res = NULL;
    if (s == KILN_OK) {
        res = kiln__arena_alloc(&dst->arena, (n ? n : 1) * sizeof *res, _Alignof(void *));
        if (!res) s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    for (int32_t j = 0; j < body->n_results && s == KILN_OK; j++)
        res[j] = kiln__vmap_get(&ad.primal, body->results[j]);
    for (int32_t i = 0, k = body->n_results; i < body->n_args && s == KILN_OK; i++) {
        if (!wrt[i]) continue;
        kiln__value *ct = kiln__vmap_get(&ad.deriv, body->args[i]);
        if (!ct) ct = kiln__emit_zeros(&ad.e, &body->args[i]->type);
        if (!ct) s = kiln_ctx_status(cx);
        res[k++] = ct;
    }
    if (s == KILN_OK) s = kiln__block_set_results(dst, g->body, res, (int32_t)n);
    kiln__ad_fini(&ad);
    if (s != KILN_OK) {
        if (kiln_ctx_status(cx) == KILN_OK) kiln_ctx_set_error(cx, s, "%s: failed", fn);
        return kiln_ctx_status(cx);
    }
    kiln__module_dce(dst);
    *out = g;
    return KILN_OK;
}
