/* SPDX-License-Identifier: Apache-2.0 */
/* Differentiation rules: the contract between the transforms (vjp.c, jvp.c) and the rules
 * (rules_<family>.c), and the IR emitter the rules build with.
 *
 * The transforms copy the forward function into a new block and then call one rule per
 * op: vjp rules in reverse order, jvp rules forward. A rule sees the op as recorded (kind,
 * attrs, regions), the values of its operands and results *in the block being built*, and
 * emits new ops there through a kiln__emitter. Missing values mean zero: a NULL cotangent
 * or tangent is a zero of the value's type, and a rule writes NULL for an operand or
 * result that gets no contribution (integer operands, index operands, zero derivatives).
 * Rules only emit ops; they never evaluate.
 *
 * The tables are a column of the op table: every row of ops.def has a kiln__vjp_<NAME>
 * and a kiln__jvp_<NAME> (so the linker names a missing rule). Rows without the
 * DIFFERENTIABLE flag use rules that give NULL (no derivative) for float outputs of
 * integer-only ops, or UNIMPLEMENTED naming the op. */
#ifndef KILN_AUTODIFF_RULES_H
#define KILN_AUTODIFF_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/emit.h"

/* True when `type` has a floating-point dtype (the only ones with derivatives). */
bool kiln__ad_is_float(const kiln__type *type);
/* True when v has a derivative: a value (not NULL) of a floating-point dtype. */
bool kiln__ad_has_derivative(const kiln__value *v);
/* The binary op that region `region` of o computes: ADD, MAXIMUM, MINIMUM or MULTIPLY for
 * those builtin regions, else the kind of the lone op of its traced block (two arguments,
 * one result) when that op is applied to the two arguments, in either order, and returned;
 * else KILN_OP_COUNT. How the rules recognise a region that is an add, a maximum, ... */
kiln_op kiln__ad_region_op(const kiln__ir_op *o, int32_t region);
/* An i64 array of `shape` holding each element's row-major position (0, 1, 2, ...): how a
 * rule tells the elements apart. */
kiln__value *kiln__ad_positions(kiln__emitter *e, const kiln_shape *shape);
/* True when v is one of the entries of d. */
bool kiln__ad_dims_contain(const kiln_dims *d, int64_t v);
/* True when `type` has no elements (a dimension of size 0): its derivatives are zeros. */
bool kiln__ad_is_empty(const kiln__type *type);

/* A rule's view of one op. `primals[i]` is operand i's value, `outs[j]` result j's value,
 * both in e->block. */
typedef struct kiln__ad_op {
    const kiln__ir_op *op; /* the op as recorded (kind, attrs, regions, types) */
    kiln__value *const *primals;
    int32_t n_primals;
    kiln__value *const *outs;
    int32_t n_outs;
} kiln__ad_op;

/* vjp: from cts[j] (cotangent of result j, NULL = zero) emit the cotangents of the
 * operands into out_cts[i] (prefilled with NULL; leave NULL for no contribution). */
typedef kiln_status kiln__vjp_fn(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts,
                                 kiln__value **out_cts);
typedef kiln__vjp_fn *kiln__vjp_rule;
/* jvp: from tangents[i] (tangent of operand i, NULL = zero) emit the tangents of the
 * results into out_tangents[j] (prefilled with NULL; leave NULL for zero). */
typedef kiln_status kiln__jvp_fn(kiln__emitter *e, const kiln__ad_op *op,
                                 kiln__value *const *tangents, kiln__value **out_tangents);
typedef kiln__jvp_fn *kiln__jvp_rule;

/* Makes RULE (a function of this file, with the rule's signature) the rule of op NAME when
 * several ops share one: an alias, so NAME keeps its own symbol in the table. */
#define KILN__VJP_AS(NAME, RULE) kiln__vjp_fn kiln__vjp_##NAME __attribute__((alias(#RULE)))
#define KILN__JVP_AS(NAME, RULE) kiln__jvp_fn kiln__jvp_##NAME __attribute__((alias(#RULE)))

#define KILN_OP(name, text, nin, nout, flags)                                                      \
    kiln_status kiln__vjp_##name(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts, \
                                 kiln__value **out_cts);                                           \
    kiln_status kiln__jvp_##name(kiln__emitter *e, const kiln__ad_op *op,                          \
                                 kiln__value *const *tangents, kiln__value **out_tangents);
#include "ops/ops.def"
#undef KILN_OP

/* The tables (rules.c), indexed by kiln_op. */
extern const kiln__vjp_rule kiln__vjp_rules[KILN_OP_COUNT];
extern const kiln__jvp_rule kiln__jvp_rules[KILN_OP_COUNT];

/* Records UNIMPLEMENTED "<e->fn>: <what> has no <mode> rule" and returns it. */
kiln_status kiln__ad_unimplemented(kiln__emitter *e, const kiln__ad_op *op, const char *mode,
                                   const char *what);

/* True while `kind` still has the default rule of rules.c (no rule written) for reverse
 * (vjp) or forward (jvp) mode. */
bool kiln__ad_rule_is_default(kiln_op kind, bool reverse);

/* Defines the rules of an op through which nothing flows: a zero derivative (piecewise
 * constant ops) or none (integer and boolean results, constants, random bits). */
#define KILN__AD_NO_DERIVATIVE(NAME)                                                               \
    kiln_status kiln__vjp_##NAME(kiln__emitter *e, const kiln__ad_op *op, kiln__value *const *cts, \
                                 kiln__value **out_cts) {                                          \
        (void)op, (void)cts, (void)out_cts;                                                        \
        return kiln_ctx_status(e->cx);                                                             \
    }                                                                                              \
    kiln_status kiln__jvp_##NAME(kiln__emitter *e, const kiln__ad_op *op,                          \
                                 kiln__value *const *tangents, kiln__value **out_tangents) {       \
        (void)op, (void)tangents, (void)out_tangents;                                              \
        return kiln_ctx_status(e->cx);                                                             \
    }

#endif
