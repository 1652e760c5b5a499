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
