/* SPDX-License-Identifier: Apache-2.0 */
/* Reverse mode: copy the forward ops, then run the vjp rules backwards, accumulating
 * cotangents per source value. */
#include <string.h>

#include "autodiff/transform.h"
#include "base/alloc.h"

#define MAX_VALUES 256

/* ---- backward over a block ------------------------------------------------------------ */

static kiln_status check_ct(kiln__ad *ad, const kiln__ir_op *op, int32_t i, const kiln__value *ct) {
    const kiln__type *want = op->operands[i]->type;
    if (ct->type->dtype == want->dtype && kiln_shape_equal(&ct->type->shape, &want->shape))
        return KILN_OK;
    char a[KILN__TYPE_TEXT], b[KILN__TYPE_TEXT];
    return kiln__emit_error(&ad->e, KILN_INTERNAL,
                            "internal: the vjp rule of stablehlo.%s gave operand %d a cotangent "
                            "of type %s; expected %s",
                            kiln__op_get_info(op->kind)->name, (int)i,
                            kiln__type_text(ct->type, a), kiln__type_text(want, b));
}

static kiln_status backward_op(kiln__ad *ad, const kiln__ir_op *op) {
    kiln_ctx *cx = ad->e.cx;
    kiln__value *cts[MAX_VALUES], *outs[MAX_VALUES], *prims[MAX_VALUES], *out_cts[MAX_VALUES];
    bool any = false;
    for (int32_t j = 0; j < op->n_results; j++) {
        cts[j] = kiln_dtype_is_float(op->results[j]->type->dtype)
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
        float_operand |= kiln_dtype_is_float(op->operands[i]->type->dtype);
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
        const int32_t *counts = kiln_tensor_data((kiln_tensor *)op->attrs->u.constant);
        int32_t n_out = counts ? counts[1] : 0;
        if (n_out < 0 || n_out > n_res)
            return kiln__emit_error(&ad->e, KILN_INTERNAL, "internal: a bad custom_vjp record");
        s = ad->hooks->custom_bwd(&ad->e, op, outs + n_out, n_res - n_out, cts, n_out, out_cts,
                                  op->n_operands);
    } else {
        kiln__ad_op view = {op, prims, op->n_operands, outs, op->n_results};
        s = kiln__vjp_rules[op->kind](&ad->e, &view, cts, out_cts);
    }
    if ((s = kiln__ad_rule_status(ad, op, "vjp", s)) != KILN_OK) return s;
    for (int32_t i = 0; i < op->n_operands; i++) {
        if (!out_cts[i] || !kiln_dtype_is_float(op->operands[i]->type->dtype)) continue;
        if ((s = check_ct(ad, op, i, out_cts[i])) != KILN_OK) return s;
        kiln__value *sum =
            kiln__emit_add_any(&ad->e, kiln__vmap_get(&ad->deriv, op->operands[i]), out_cts[i]);
        if (!sum || !kiln__vmap_put(&ad->deriv, op->operands[i], sum)) return kiln_ctx_status(cx);
    }
    return KILN_OK;
}

kiln_status kiln__ad_backward(kiln__ad *ad, const kiln__block *src) {
    return kiln__ad_each_op(ad, src, true, MAX_VALUES, backward_op);
}

/* ---- whole functions -------------------------------------------------------------------- */

kiln_status kiln__vjp_func(kiln_ctx *cx, const char *fn, const kiln__func *f,
                           const kiln__value *const *extra, int32_t n_extra, kiln_module *dst,
                           const bool *wrt, const bool *seed, const kiln__ad_hooks *hooks,
                           kiln__func **out) {
    *out = NULL;
    const kiln__block *body = f->body;
    kiln__ad ad;
    kiln__func *g;
    kiln_status s = kiln__ad_start(&ad, cx, fn, f, extra, n_extra, dst, hooks, true, &g);
    if (!g) return s;
    if (s == KILN_OK) s = kiln__ad_forward(&ad, body);
    for (int32_t j = 0; j < body->n_results && s == KILN_OK; j++) {
        if (!seed[j]) continue;
        kiln__value *ct = kiln__block_add_arg(dst, g->body, *body->results[j]->type);
        if (!ct) {
            s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
            break;
        }
        if (!kiln_dtype_is_float(ct->type->dtype)) continue;
        /* A result returned twice gets both cotangents. */
        kiln__value *sum =
            kiln__emit_add_any(&ad.e, kiln__vmap_get(&ad.deriv, body->results[j]), ct);
        if (!sum || !kiln__vmap_put(&ad.deriv, body->results[j], sum)) s = kiln_ctx_status(cx);
    }
    if (s == KILN_OK) s = kiln__ad_backward(&ad, body);
    return kiln__ad_finish(&ad, s, g, body, (const kiln__value *const *)body->args, body->n_args,
                           wrt, out);
}
