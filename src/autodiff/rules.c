/* SPDX-License-Identifier: Apache-2.0 */
/* The rule tables (a column of the op table) and the defaults that keep partial work
 * linking: every rule is defined here weakly as "no rule yet" (UNIMPLEMENTED naming the
 * op), and the rules_<family>.c files override them with strong definitions. The
 * coverage test (tests/autodiff/test_grad_check.c) fails while a differentiable op still
 * has its default. */
#include "autodiff/rules.h"

bool kiln__ad_is_float(const kiln__type *type) { return kiln_dtype_is_float(type->dtype); }

bool kiln__ad_has_derivative(const kiln__value *v) { return v && kiln__ad_is_float(v->type); }

/* The kind of the lone op of block b (a region of two arguments and one result) when it is
 * applied to the two arguments, in either order, and returned; else KILN_OP_COUNT. */
static kiln_op lone_binary_op(const kiln__block *b) {
    if (!b || b->n_args != 2 || b->n_results != 1) return KILN_OP_COUNT;
    const kiln__ir_op *x = b->first;
    if (!x || x != b->last || x->n_operands != 2 || x->results[0] != b->results[0])
        return KILN_OP_COUNT;
    if (!((x->operands[0] == b->args[0] && x->operands[1] == b->args[1]) ||
          (x->operands[0] == b->args[1] && x->operands[1] == b->args[0])))
        return KILN_OP_COUNT;
    return x->kind;
}

kiln_op kiln__ad_region_op(const kiln__ir_op *o, int32_t region) {
    const kiln_region *r = region < 2 ? o->attrs->region[region] : NULL;
    if (r == kiln_region_add()) return KILN_OP_ADD;
    if (r == kiln_region_maximum()) return KILN_OP_MAXIMUM;
    if (r == kiln_region_minimum()) return KILN_OP_MINIMUM;
    if (r == kiln_region_multiply()) return KILN_OP_MULTIPLY;
    return lone_binary_op(region < o->n_regions ? o->regions[region] : NULL);
}

kiln__value *kiln__ad_positions(kiln__emitter *e, const kiln_shape *shape) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape->rank; d++)
        n *= shape->dims[d];
    kiln__attrs a = {.fn = e->fn};
    a.u.iota.dtype = KILN_I64;
    a.u.iota.shape = (kiln_shape){.rank = 1, .dims = {n}};
    a.u.iota.dimension = 0;
    return kiln__emit_reshape(e, kiln__emit(e, KILN_OP_IOTA, &a, NULL, 0), shape);
}

bool kiln__ad_dims_contain(const kiln_dims *d, int64_t v) {
    for (int32_t i = 0; i < d->count; i++)
        if (d->v[i] == v) return true;
    return false;
}

bool kiln__ad_is_empty(const kiln__type *type) {
    for (int32_t d = 0; d < type->shape.rank; d++)
        if (type->shape.dims[d] == 0) return true;
    return false;
}

kiln_status kiln__ad_unimplemented(kiln__emitter *e, const kiln__ad_op *op, const char *mode,
                                   const char *what) {
    if (kiln_ctx_status(e->cx) != KILN_OK) return kiln_ctx_status(e->cx);
    const char *name = what;
    if (!name && op && op->op) name = kiln__op_get_info(op->op->kind)->name;
    return kiln_ctx_set_error(e->cx, KILN_UNIMPLEMENTED, "%s: stablehlo.%s has no %s rule",
                              e->fn ? e->fn : "autodiff", name ? name : "?", mode);
}

/* The defaults are aliases of these two, so a table entry equal to one of them is a
 * rule not written yet (kiln__ad_rule_is_default). */
kiln_status kiln__vjp_default(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                              kiln__value **out_cts);
kiln_status kiln__jvp_default(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *tangents,
                              kiln__value **out_tangents);
kiln_status kiln__vjp_default(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                              kiln__value **out_cts) {
    (void)cts, (void)out_cts;
    return kiln__ad_unimplemented(e, op, "vjp", NULL);
}
kiln_status kiln__jvp_default(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *tangents,
                              kiln__value **out_tangents) {
    (void)tangents, (void)out_tangents;
    return kiln__ad_unimplemented(e, op, "jvp", NULL);
}

#define KILN_OP(name, text, nin, nout, flags)                                                     \
    __attribute__((weak, alias("kiln__vjp_default"))) kiln_status kiln__vjp_##name(               \
        kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts, kiln__value **out_cts); \
    __attribute__((weak, alias("kiln__jvp_default")))                                             \
    kiln_status kiln__jvp_##name(kiln__emitter *e, const kiln__ad_op *op,                         \
                                 kiln__value *const *tangents, kiln__value **out_tangents);
#include "ops/ops.def"
#undef KILN_OP

const kiln__vjp_rule kiln__vjp_rules[KILN_OP_COUNT] = {
#define KILN_OP(name, text, nin, nout, flags) [KILN_OP_##name] = kiln__vjp_##name,
#include "ops/ops.def"
#undef KILN_OP
};

const kiln__jvp_rule kiln__jvp_rules[KILN_OP_COUNT] = {
#define KILN_OP(name, text, nin, nout, flags) [KILN_OP_##name] = kiln__jvp_##name,
#include "ops/ops.def"
#undef KILN_OP
};

/* The families defined here are linked from a static library too: a weak default is
 * already a definition, so without a strong reference an archive member holding only
 * rules would never be extracted. */
extern const char kiln__rules_elementwise_linked, kiln__rules_movement_linked,
    kiln__rules_reduce_linked, kiln__rules_control_linked, kiln__rules_linalg_linked,
    kiln__rules_indexing_linked, kiln__rules_window_linked, kiln__rules_sort_linked,
    kiln__rules_collective_linked, kiln__rules_solve_linked;
extern const char *const kiln__rules_linked[];
const char *const kiln__rules_linked[] = {
    &kiln__rules_elementwise_linked, &kiln__rules_movement_linked, &kiln__rules_reduce_linked,
    &kiln__rules_control_linked,     &kiln__rules_linalg_linked,   &kiln__rules_indexing_linked,
    &kiln__rules_window_linked,      &kiln__rules_sort_linked,     &kiln__rules_collective_linked,
    &kiln__rules_solve_linked};

bool kiln__ad_rule_is_default(kiln_op kind, bool reverse) {
    if (kind < 0 || kind >= KILN_OP_COUNT) return true;
    return reverse ? kiln__vjp_rules[kind] == kiln__vjp_default
                   : kiln__jvp_rules[kind] == kiln__jvp_default;
}
