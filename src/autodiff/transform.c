/* SPDX-License-Identifier: Apache-2.0 */
/* The transform state that both modes (vjp.c, jvp.c) and the control-flow rules
 * (rules_control.c) share: setting a transform up and finding it from an emitter, the
 * markers, the free values of a block, and copying a block's forward ops. */
#include <string.h>

#include "autodiff/transform.h"
#include "base/alloc.h"

#define AD_MAGIC 0x61647631u

/* ---- the transform and its markers --------------------------------------------------- */

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

kiln_status kiln__ad_add_args(kiln__ad *ad, kiln__vmap *map, const kiln__value *const *src,
                              int32_t n, const bool *which) {
    for (int32_t i = 0; i < n; i++) {
        if (which && !which[i]) continue;
        kiln__value *a = kiln__block_add_arg(ad->e.m, ad->e.block, *src[i]->type);
        if (!a || !kiln__vmap_put(map, src[i], a))
            return kiln_ctx_set_error(ad->e.cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory",
                                      ad->e.fn);
    }
    return KILN_OK;
}

kiln_status kiln__ad_start(kiln__ad *ad, kiln_ctx *cx, const char *fn, const kiln__func *f,
                           const kiln__value *const *extra, int32_t n_extra, kiln_module *dst,
                           const kiln__ad_hooks *hooks, bool reverse, kiln__func **g) {
    *g = kiln__module_add_func(dst, f->name ? f->name : "main", true);
    if (!*g) return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    kiln__ad_init(ad, cx, fn, dst, (*g)->body, hooks);
    ad->reverse = reverse;
    const kiln__block *body = f->body;
    kiln_status s = kiln__ad_add_args(ad, &ad->primal, (const kiln__value *const *)body->args,
                                      body->n_args, NULL);
    if (s == KILN_OK) s = kiln__ad_add_args(ad, &ad->primal, extra, n_extra, NULL);
    return s;
}

static bool picked(const bool *pick, const kiln__value *const *vals, int32_t i) {
    return pick ? pick[i] : kiln_dtype_is_float(vals[i]->type->dtype);
}

kiln_status kiln__ad_finish(kiln__ad *ad, kiln_status s, kiln__func *g, const kiln__block *body,
                            const kiln__value *const *vals, int32_t n, const bool *pick,
                            kiln__func **out) {
    kiln_ctx *cx = ad->e.cx;
    kiln_module *dst = ad->e.m;
    const char *fn = ad->e.fn;
    size_t n_res = (size_t)body->n_results;
    for (int32_t i = 0; i < n; i++)
        n_res += picked(pick, vals, i);
    kiln__value **res = NULL;
    if (s == KILN_OK) {
        res = kiln__arena_alloc(&dst->arena, (n_res ? n_res : 1) * sizeof *res, _Alignof(void *));
        if (!res) {
            kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
            s = kiln_ctx_status(cx);
        }
    }
    for (int32_t j = 0; j < body->n_results && s == KILN_OK; j++)
        res[j] = kiln__vmap_get(&ad->primal, body->results[j]);
    for (int32_t i = 0, k = body->n_results; i < n && s == KILN_OK; i++) {
        if (!picked(pick, vals, i)) continue;
        kiln__value *d = kiln__vmap_get(&ad->deriv, vals[i]);
        if (!d && !(d = kiln__emit_zeros(&ad->e, vals[i]->type))) s = kiln_ctx_status(cx);
        res[k++] = d;
    }
    if (s == KILN_OK) s = kiln__block_set_results(dst, g->body, res, (int32_t)n_res);
    kiln__ad_fini(ad);
    if (s != KILN_OK) {
        if (kiln_ctx_status(cx) == KILN_OK) kiln_ctx_set_error(cx, s, "%s: failed", fn);
        return kiln_ctx_status(cx);
    }
    kiln__module_dce(dst);
    *out = g;
    return KILN_OK;
}

bool kiln__ad_is_stop_gradient(const kiln__ir_op *op) {
    return op->kind == KILN_OP_OPTIMIZATION_BARRIER && op->attrs->mark == KILN__MARK_STOP_GRADIENT;
}

bool kiln__ad_is_custom_vjp(const kiln__ir_op *op) {
    return op->kind == KILN_OP_CALL && op->attrs->mark == KILN__MARK_CUSTOM_VJP &&
           op->attrs->u.constant;
}

kiln__ad *kiln__ad_of(kiln__emitter *e) {
    kiln__ad *ad = (kiln__ad *)e;
    if (ad->magic != AD_MAGIC) {
        kiln__emit_error(e, KILN_INTERNAL, "internal: a control-flow rule outside a transform");
        return NULL;
    }
    return ad;
}

/* ---- around each op's rule ------------------------------------------------------------------ */

kiln_status kiln__ad_rule_status(kiln__ad *ad, const kiln__ir_op *op, const char *mode,
                                 kiln_status s) {
    kiln_ctx *cx = ad->e.cx;
    if (s == KILN_OK && kiln_ctx_status(cx) != KILN_OK) s = kiln_ctx_status(cx);
    if (s != KILN_OK && kiln_ctx_status(cx) == KILN_OK)
        kiln__emit_error(&ad->e, s, "the %s rule of stablehlo.%s failed", mode,
                         kiln__op_get_info(op->kind)->name);
    return s;
}

kiln_status kiln__ad_each_op(kiln__ad *ad, const kiln__block *src, bool backward, int32_t max,
                             kiln_status (*op_fn)(kiln__ad *ad, const kiln__ir_op *op)) {
    for (const kiln__ir_op *op = backward ? src->last : src->first; op;
         op = backward ? op->prev : op->next) {
        if (op->n_operands > max || op->n_results > max)
            return kiln__emit_error(&ad->e, KILN_UNIMPLEMENTED,
                                    "stablehlo.%s with more than %d operands or results",
                                    kiln__op_get_info(op->kind)->name, max);
        kiln_status s = op_fn(ad, op);
        if (s != KILN_OK) return s;
    }
    return kiln_ctx_status(ad->e.cx);
}

/* ---- the forward ops of a block ----------------------------------------------------------- */

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
