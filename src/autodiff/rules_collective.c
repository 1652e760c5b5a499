/* SPDX-License-Identifier: Apache-2.0 */
/* Differentiation rules of the collectives, as JAX's: a sum over the group (all_reduce,
 * and reduce_scatter and collective_reduce with an add region) is its own transpose, in
 * the other direction where it moves data: all_gather <-> reduce_scatter, all_to_all with
 * its dimensions swapped, collective_permute with its pairs reversed, collective_broadcast
 * <-> collective_reduce to the root. Forward mode is the same collective over the
 * tangents. Reductions by other regions (max, min, product) have no rule. */
#include "autodiff/rules.h"
#include "kiln/ops.h"

const char kiln__rules_collective_linked = 1;

/* Is region 0 of op x + y of its two arguments? */
static bool sums(const kiln__ir_op *op) {
    const kiln__block *b = op->n_regions > 0 ? op->regions[0] : NULL;
    if (!b || b->n_args != 2 || b->n_results != 1 || !b->first || b->first != b->last) return false;
    const kiln__ir_op *add = b->first;
    return add->kind == KILN_OP_ADD && b->results[0] == add->results[0] &&
           ((add->operands[0] == b->args[0] && add->operands[1] == b->args[1]) ||
            (add->operands[0] == b->args[1] && add->operands[1] == b->args[0]));
}

/* One op of `kind` on x with op's collective attributes changed as given. */
static kiln__value *collective(kiln__emitter *e, const kiln__ir_op *op, kiln_op kind,
                               kiln__value *x, bool sum_region, bool swap_dims) {
    kiln__attrs a = {.fn = e->fn, .n_results = 1};
    a.u.collective = op->attrs->u.collective;
    a.u.collective.has_dynamic_root = false;
    if (sum_region) {
        a.n_regions = 1;
        a.region[0] = kiln_region_add();
    }
    if (swap_dims) {
        int64_t d = a.u.collective.dimension;
        a.u.collective.dimension = a.u.collective.concat_dimension;
        a.u.collective.concat_dimension = d;
    }
    if (kind == KILN_OP_COLLECTIVE_PERMUTE) { /* (source, target) -> (target, source) */
        kiln__groups *g = &a.u.collective.groups;
        for (int32_t r = 0; r < g->rows; r++) {
            int32_t s = g->ids[2 * r];
            g->ids[2 * r] = g->ids[2 * r + 1];
            g->ids[2 * r + 1] = s;
        }
    }
    return kiln__emit(e, kind, &a, &x, 1);
}

/* out[j] = the collective of `kind` over in[j], for each data operand with a value. */
static kiln_status each(kiln__emitter *e, const kiln__ad_op *op, kiln_op kind, bool sum_region,
                        bool swap_dims, kiln__value *const *in, kiln__value **out, int32_t n) {
    for (int32_t j = 0; j < n; j++)
        if (in[j]) out[j] = collective(e, op->op, kind, in[j], sum_region, swap_dims);
    return kiln_ctx_status(e->cx);
}

static kiln_status needs_sum(kiln__emitter *e, const kiln__ad_op *op, const char *mode) {
    return kiln__ad_unimplemented(e, op, mode, "a reduction by a region other than add");
}

static int32_t n_data(const kiln__ad_op *op) { return op->op->n_results; }

KILN__AD_NO_DERIVATIVE(REPLICA_ID)
KILN__AD_NO_DERIVATIVE(PARTITION_ID)

kiln_status kiln__vjp_ALL_REDUCE(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                                 kiln__value **out_cts) {
    if (!sums(op->op)) return needs_sum(e, op, "vjp");
    return each(e, op, KILN_OP_ALL_REDUCE, true, false, cts, out_cts, n_data(op));
}
kiln_status kiln__jvp_ALL_REDUCE(kiln__emitter *e, const kiln__ad_op *op,
                                 kiln__value *const *tangents, kiln__value **out_tangents) {
    if (!sums(op->op)) return needs_sum(e, op, "jvp");
    return each(e, op, KILN_OP_ALL_REDUCE, true, false, tangents, out_tangents, n_data(op));
}

kiln_status kiln__vjp_ALL_GATHER(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                                 kiln__value **out_cts) {
    return each(e, op, KILN_OP_REDUCE_SCATTER, true, false, cts, out_cts, n_data(op));
}
kiln_status kiln__jvp_ALL_GATHER(kiln__emitter *e, const kiln__ad_op *op,
                                 kiln__value *const *tangents, kiln__value **out_tangents) {
    return each(e, op, KILN_OP_ALL_GATHER, false, false, tangents, out_tangents, n_data(op));
}

kiln_status kiln__vjp_REDUCE_SCATTER(kiln__emitter *e, const kiln__ad_op *op,
                                     kiln__value *const *cts, kiln__value **out_cts) {
    if (!sums(op->op)) return needs_sum(e, op, "vjp");
    return each(e, op, KILN_OP_ALL_GATHER, false, false, cts, out_cts, 1);
}
kiln_status kiln__jvp_REDUCE_SCATTER(kiln__emitter *e, const kiln__ad_op *op,
                                     kiln__value *const *tangents, kiln__value **out_tangents) {
    if (!sums(op->op)) return needs_sum(e, op, "jvp");
    return each(e, op, KILN_OP_REDUCE_SCATTER, true, false, tangents, out_tangents, 1);
}

kiln_status kiln__vjp_ALL_TO_ALL(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                                 kiln__value **out_cts) {
    return each(e, op, KILN_OP_ALL_TO_ALL, false, true, cts, out_cts, n_data(op));
}
kiln_status kiln__jvp_ALL_TO_ALL(kiln__emitter *e, const kiln__ad_op *op,
                                 kiln__value *const *tangents, kiln__value **out_tangents) {
    return each(e, op, KILN_OP_ALL_TO_ALL, false, false, tangents, out_tangents, n_data(op));
}

kiln_status kiln__vjp_COLLECTIVE_PERMUTE(kiln__emitter *e, const kiln__ad_op *op,
                                         kiln__value *const *cts, kiln__value **out_cts) {
    return each(e, op, KILN_OP_COLLECTIVE_PERMUTE, false, false, cts, out_cts, 1);
}
kiln_status kiln__jvp_COLLECTIVE_PERMUTE(kiln__emitter *e, const kiln__ad_op *op,
                                         kiln__value *const *tangents, kiln__value **out_tangents) {
    /* the pairs reversed twice: the same permutation */
    kiln__value *t = tangents[0];
    if (!t) return KILN_OK;
    kiln__attrs a = {.fn = e->fn};
    a.u.collective = op->op->attrs->u.collective;
    out_tangents[0] = kiln__emit(e, KILN_OP_COLLECTIVE_PERMUTE, &a, &t, 1);
    return kiln_ctx_status(e->cx);
}

static kiln_status fixed_root(kiln__emitter *e, const kiln__ad_op *op, const char *mode) {
    if (!op->op->attrs->u.collective.has_dynamic_root) return KILN_OK;
    return kiln__ad_unimplemented(e, op, mode, "a dynamic root");
}

kiln_status kiln__vjp_COLLECTIVE_BROADCAST(kiln__emitter *e, const kiln__ad_op *op,
                                           kiln__value *const *cts, kiln__value **out_cts) {
    kiln_status s = fixed_root(e, op, "vjp");
    return s != KILN_OK
               ? s
               : each(e, op, KILN_OP_COLLECTIVE_REDUCE, true, false, cts, out_cts, n_data(op));
}
kiln_status kiln__jvp_COLLECTIVE_BROADCAST(kiln__emitter *e, const kiln__ad_op *op,
                                           kiln__value *const *tangents,
                                           kiln__value **out_tangents) {
    kiln_status s = fixed_root(e, op, "jvp");
    return s != KILN_OK ? s
                        : each(e, op, KILN_OP_COLLECTIVE_BROADCAST, false, false, tangents,
                               out_tangents, n_data(op));
}

kiln_status kiln__vjp_COLLECTIVE_REDUCE(kiln__emitter *e, const kiln__ad_op *op,
                                        kiln__value *const *cts, kiln__value **out_cts) {
    kiln_status s = fixed_root(e, op, "vjp");
    if (s == KILN_OK && !sums(op->op)) s = needs_sum(e, op, "vjp");
    return s != KILN_OK
               ? s
               : each(e, op, KILN_OP_COLLECTIVE_BROADCAST, false, false, cts, out_cts, n_data(op));
}
kiln_status kiln__jvp_COLLECTIVE_REDUCE(kiln__emitter *e, const kiln__ad_op *op,
                                        kiln__value *const *tangents, kiln__value **out_tangents) {
    kiln_status s = fixed_root(e, op, "jvp");
    if (s == KILN_OK && !sums(op->op)) s = needs_sum(e, op, "jvp");
    return s != KILN_OK ? s
                        : each(e, op, KILN_OP_COLLECTIVE_REDUCE, true, false, tangents,
                               out_tangents, n_data(op));
}
