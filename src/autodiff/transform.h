/* SPDX-License-Identifier: Apache-2.0 */
/* The transforms (vjp.c, jvp.c, their shared state in transform.c): whole functions, and
 * the block-level steps the control flow rules (rules_control.c) recurse with. */
#ifndef KILN_AUTODIFF_TRANSFORM_H
#define KILN_AUTODIFF_TRANSFORM_H

#include "autodiff/rules.h"
#include "ir/clone.h"

/* The marked ops (attrs.mark, ops/attrs.h). */
bool kiln__ad_is_stop_gradient(const kiln__ir_op *op);
bool kiln__ad_is_custom_vjp(const kiln__ir_op *op);

typedef struct kiln__ad kiln__ad;

/* What the runtime supplies: tracing a custom_vjp's backward function into e->block, from
 * the residuals and result cotangents (NULL entries: zeros) to the cotangents of the
 * call's n_in operands (NULL for none). */
typedef struct kiln__ad_hooks {
    kiln_status (*custom_bwd)(kiln__emitter *e, const kiln__ir_op *call,
                              kiln__value *const *residuals, int32_t n_residuals,
                              kiln__value *const *cts, int32_t n_cts, kiln__value **out_cts,
                              int32_t n_in);
} kiln__ad_hooks;

struct kiln__ad {
    kiln__emitter e; /* first: rules get &ad->e and find the transform with kiln__ad_of */
    unsigned magic;
    kiln__vmap primal; /* source value -> its value in the block being built */
    kiln__vmap deriv;  /* source value -> its cotangent (vjp) or tangent (jvp); absent: zero */
    const kiln__ad_hooks *hooks;
    bool reverse;      /* vjp: kiln__ad_forward stacks the carries of fixed-count loops */
    kiln__vmap stacks; /* result j of such a loop -> the stack of carry j's values */
};

/* Sets up a transform emitting into `block` of dst (maps empty), and frees its maps. */
kiln_status kiln__ad_init(kiln__ad *ad, kiln_ctx *cx, const char *fn, kiln_module *dst,
                          kiln__block *block, const kiln__ad_hooks *hooks);
void kiln__ad_fini(kiln__ad *ad);

/* The steps both whole-function transforms share. Each returns or records the first error
 * in ad->e.cx ("<fn>: out of memory" where allocation fails). */
/* The head: a new public function *g of dst named like f, the transform (reverse mode or
 * not) emitting into its body, and f's arguments, then the n_extra values `extra`, mapped
 * to new arguments of *g as primals. *g is NULL (the error recorded and returned) when it
 * could not be made; else the status is the mapping's, for kiln__ad_finish. */
kiln_status kiln__ad_start(kiln__ad *ad, kiln_ctx *cx, const char *fn, const kiln__func *f,
                           const kiln__value *const *extra, int32_t n_extra, kiln_module *dst,
                           const kiln__ad_hooks *hooks, bool reverse, kiln__func **g);
/* Adds to ad->e.block an argument of src[i]'s type for each i < n with which[i] (all when
 * which is NULL), in order, and maps src[i] to it in *map. */
kiln_status kiln__ad_add_args(kiln__ad *ad, kiln__vmap *map, const kiln__value *const *src,
                              int32_t n, const bool *which);
/* The tail: when s is KILN_OK, g returns body's primal results and then the derivative
 * (zeros where none flowed) of each of the n values vals[i] with pick[i] (each float one
 * when pick is NULL); then ad ends, and on success dead code goes and *out = g. Returns the
 * context's status (a bare "<fn>: failed" when s failed and nothing was recorded). */
kiln_status kiln__ad_finish(kiln__ad *ad, kiln_status s, kiln__func *g, const kiln__block *body,
                            const kiln__value *const *vals, int32_t n, const bool *pick,
                            kiln__func **out);

/* The transform an emitter belongs to, or NULL (with INTERNAL recorded). */
kiln__ad *kiln__ad_of(kiln__emitter *e);

/* The steps jvp.c and vjp.c take around each op's rule. kiln__ad_each_op: op_fn on each op
 * of src, in order or (backward) in reverse, up to the first failure, then the context's
 * status; an op with more than max operands or results (op_fn's arrays hold max) is
 * UNIMPLEMENTED, naming it, before op_fn sees it. kiln__ad_rule_status: the status of op's
 * rule (mode "jvp" or "vjp") that returned s: s, or the error it recorded while returning
 * OK; a failure it did not describe is recorded as "the <mode> rule of stablehlo.<op>
 * failed". */
kiln_status kiln__ad_each_op(kiln__ad *ad, const kiln__block *src, bool backward, int32_t max,
                             kiln_status (*op_fn)(kiln__ad *ad, const kiln__ir_op *op));
kiln_status kiln__ad_rule_status(kiln__ad *ad, const kiln__ir_op *op, const char *mode,
                                 kiln_status s);

/* Clones src's ops into ad->e.block (src's arguments and free values mapped already). */
kiln_status kiln__ad_forward(kiln__ad *ad, const kiln__block *src);
/* In reverse mode, emits a fixed-count while loop (src op `w`) as a loop that also stacks
 * the carries each iteration starts with (recorded in ad->stacks for its vjp rule) and maps
 * w's results; *done false (nothing emitted) for other loops. rules_control.c. */
kiln_status kiln__ad_forward_loop(kiln__ad *ad, const kiln__ir_op *w, bool *done);
/* Runs the vjp rules of src's ops in reverse, from the cotangents in ad->deriv (src's
 * ops must have been cloned by kiln__ad_forward into the current block). */
kiln_status kiln__ad_backward(kiln__ad *ad, const kiln__block *src);
/* Clones src's ops and runs their jvp rules, in order. */
kiln_status kiln__ad_jvp_ops(kiln__ad *ad, const kiln__block *src);

/* Whole functions. The vjp of f is a new public function in dst taking f's arguments, then
 * the n_extra values `extra` (values f's body uses from outside, when it is a block nested
 * in another function: held constant), then one cotangent per result j with seed[j]; it
 * returns f's results and then one cotangent per argument i with wrt[i] (zeros where
 * nothing flows). The jvp takes f's arguments, the extra values and one tangent per
 * argument with wrt[i], and returns f's results and then one tangent per floating-point
 * result. The new function is dst->funcs[0] when dst is empty. */
kiln_status kiln__vjp_func(kiln_ctx *cx, const char *fn, const kiln__func *f,
                           const kiln__value *const *extra, int32_t n_extra, kiln_module *dst,
                           const bool *wrt, const bool *seed, const kiln__ad_hooks *hooks,
                           kiln__func **out);
kiln_status kiln__jvp_func(kiln_ctx *cx, const char *fn, const kiln__func *f,
                           const kiln__value *const *extra, int32_t n_extra, kiln_module *dst,
                           const bool *wrt, const kiln__ad_hooks *hooks, kiln__func **out);

#endif
