/* SPDX-License-Identifier: Apache-2.0 */
/* Forward mode: copy each op and run its jvp rule right after it. */
#include "autodiff/transform.h"
#include "base/alloc.h"

#define MAX_VALUES 256

static kiln_status jvp_op(kiln__ad *ad, const kiln__ir_op *op) {
    kiln_ctx *cx = ad->e.cx;
    /* Control ops are rebuilt by their rules (forward and tangents together) when some
     * tangent reaches them; otherwise copied. */
    kiln__value *ts[MAX_VALUES], *prims[MAX_VALUES], *outs[MAX_VALUES], *out_ts[MAX_VALUES];
    bool any = false;
    for (int32_t i = 0; i < op->n_operands; i++) {
        prims[i] = kiln__vmap_get(&ad->primal, op->operands[i]);
        ts[i] = kiln_dtype_is_float(op->operands[i]->type->dtype)
                    ? kiln__vmap_get(&ad->deriv, op->operands[i])
                    : NULL;
        any |= ts[i] != NULL;
    }
    bool float_result = false;
    for (int32_t j = 0; j < op->n_results; j++)
        float_result |= kiln_dtype_is_float(op->results[j]->type->dtype);
    bool regions = op->n_regions > 0;
    if (regions && float_result && !any) {
        /* Tangents may enter through values the regions use from outside. */
        const kiln__value *fv[MAX_VALUES];
        int32_t n = 0;
        for (int32_t r = 0; r < op->n_regions && n >= 0; r++) {
            n = kiln__block_free_values(cx, op->regions[r], true, fv, MAX_VALUES);
            for (int32_t k = 0; k < n; k++)
                any |= kiln__vmap_get(&ad->deriv, fv[k]) != NULL;
        }
        if (n < 0) any = true;
    }
    bool control = kiln__op_has(op->kind, KILN_OPF_CONTROL);
    if (!any || !float_result || kiln__ad_is_stop_gradient(op) || !control) {
        if (!kiln__clone_op(ad->e.m, ad->e.block, op, &ad->primal)) return kiln_ctx_status(cx);
        if (!any || !float_result || kiln__ad_is_stop_gradient(op)) return KILN_OK;
    }
    if (kiln__ad_is_custom_vjp(op))
        return kiln__emit_error(&ad->e, KILN_UNIMPLEMENTED,
                                "forward mode (jvp) through kiln_custom_vjp_call is not "
                                "supported: the function has only a reverse-mode rule");
    for (int32_t j = 0; j < op->n_results; j++) {
        outs[j] = control ? NULL : kiln__vmap_get(&ad->primal, op->results[j]);
        out_ts[j] = NULL;
    }
    kiln__ad_op view = {op, prims, op->n_operands, outs, op->n_results};
    kiln_status s = kiln__jvp_rules[op->kind](&ad->e, &view, ts, out_ts);
    if ((s = kiln__ad_rule_status(ad, op, "jvp", s)) != KILN_OK) return s;
    if (control)
        for (int32_t j = 0; j < op->n_results; j++)
            if (!kiln__vmap_get(&ad->primal, op->results[j]))
                return kiln__emit_error(&ad->e, KILN_INTERNAL,
                                        "internal: the jvp rule of stablehlo.%s gave no result %d",
                                        kiln__op_get_info(op->kind)->name, (int)j);
    for (int32_t j = 0; j < op->n_results; j++) {
        if (!out_ts[j] || !kiln_dtype_is_float(op->results[j]->type->dtype)) continue;
        const kiln__type *want = op->results[j]->type;
        if (out_ts[j]->type->dtype != want->dtype ||
            !kiln_shape_equal(&out_ts[j]->type->shape, &want->shape)) {
            char a[KILN__TYPE_TEXT], b[KILN__TYPE_TEXT];
            return kiln__emit_error(&ad->e, KILN_INTERNAL,
                                    "internal: the jvp rule of stablehlo.%s gave result %d a "
                                    "tangent of type %s; expected %s",
                                    kiln__op_get_info(op->kind)->name, (int)j,
                                    kiln__type_text(out_ts[j]->type, a), kiln__type_text(want, b));
        }
        if (!kiln__vmap_put(&ad->deriv, op->results[j], out_ts[j])) return kiln_ctx_status(cx);
    }
    return KILN_OK;
}

kiln_status kiln__ad_jvp_ops(kiln__ad *ad, const kiln__block *src) {
    return kiln__ad_each_op(ad, src, false, MAX_VALUES, jvp_op);
}

kiln_status kiln__jvp_func(kiln_ctx *cx, const char *fn, const kiln__func *f,
                           const kiln__value *const *extra, int32_t n_extra, kiln_module *dst,
                           const bool *wrt, const kiln__ad_hooks *hooks, kiln__func **out) {
    *out = NULL;
    const kiln__block *body = f->body;
    kiln__ad ad;
    kiln__func *g;
    kiln_status s = kiln__ad_start(&ad, cx, fn, f, extra, n_extra, dst, hooks, false, &g);
    if (!g) return s;
    const kiln__value *const *args = (const kiln__value *const *)body->args;
    if (s == KILN_OK) s = kiln__ad_add_args(&ad, &ad.deriv, args, body->n_args, wrt);
    if (s == KILN_OK) s = kiln__ad_jvp_ops(&ad, body);
    return kiln__ad_finish(&ad, s, g, body, (const kiln__value *const *)body->results,
                           body->n_results, NULL, out);
}
