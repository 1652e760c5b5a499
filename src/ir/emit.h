/* SPDX-License-Identifier: Apache-2.0 */
/* The IR emitter: ops appended to a block with result types from the op table's
 * inference, builtin regions materialised as blocks exactly as tracing records them (so
 * printers, passes and backends see the same IR either way). What the transforms of the
 * IR (autodiff's rules, batching) build with. */
#ifndef KILN_IR_EMIT_H
#define KILN_IR_EMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"

/* Where emitted ops go. `fn` names the public call for messages. Errors are recorded in
 * cx (sticky); once one is, every emit helper returns NULL, so rules can chain calls and
 * check once at the end. */
typedef struct kiln__emitter {
    kiln_ctx *cx;
    kiln_module *m;
    kiln__block *block;
    const char *fn;
} kiln__emitter;

/* Appends an op of `kind` with `operands` to e->block, result types by the op's inference
 * (n_results from the op table, or attrs->n_results when variable). Regions: for each
 * region i of attrs (attrs->n_regions), a builtin region (kiln_region_add() ...) is built
 * as a block of its own; a non-builtin region must be supplied by the caller afterwards
 * (op->regions[i], through kiln__emit_region_block). NULL operand, earlier error or
 * failure: NULL. */
kiln__ir_op *kiln__emit_op(kiln__emitter *e, kiln_op kind, const kiln__attrs *attrs,
                           kiln__value *const *operands, int32_t n_operands);
/* kiln__emit_op that leaves every region to the caller (op->regions[i] NULL), builtin
 * ones included (their pointers kept in the attributes, as recorded): for a copy of an op
 * whose regions the caller copies (ir/clone.h's kiln__clone_region). */
kiln__ir_op *kiln__emit_op_bare(kiln__emitter *e, kiln_op kind, const kiln__attrs *attrs,
                                kiln__value *const *operands, int32_t n_operands);
/* kiln__emit_op's first result. */
kiln__value *kiln__emit(kiln__emitter *e, kiln_op kind, const kiln__attrs *attrs,
                        kiln__value *const *operands, int32_t n_operands);
/* A new empty block as region i of op, with arguments of the given types; the caller
 * fills it with an emitter whose block is the returned one and sets its results with
 * kiln__block_set_results. */
kiln__block *kiln__emit_region_block(kiln__emitter *e, kiln__ir_op *op, int32_t i,
                                     const kiln__type *arg_types, int32_t n_args);

/* kiln__emit_op for the control ops (while, if, case, call), whose result types come from
 * their regions and cannot be inferred: the results get `result_types`, the regions are
 * left empty (op->regions[i] NULL) for kiln__emit_region_block. Also accepted for any other
 * op, where the types are checked against inference. */
kiln__ir_op *kiln__emit_op_typed(kiln__emitter *e, kiln_op kind, const kiln__attrs *attrs,
                                 kiln__value *const *operands, int32_t n_operands,
                                 const kiln__type *result_types, int32_t n_results);

/* Conveniences (all NULL-propagating). Elementwise operands must have equal types, except
 * that kiln__emit_scalar's rank-0 results are broadcast by the binary helpers. */
kiln__value *kiln__emit_unary(kiln__emitter *e, kiln_op kind, kiln__value *x);
kiln__value *kiln__emit_binary(kiln__emitter *e, kiln_op kind, kiln__value *a, kiln__value *b);
kiln__value *kiln__emit_add(kiln__emitter *e, kiln__value *a, kiln__value *b);
kiln__value *kiln__emit_sub(kiln__emitter *e, kiln__value *a, kiln__value *b);
kiln__value *kiln__emit_mul(kiln__emitter *e, kiln__value *a, kiln__value *b);
kiln__value *kiln__emit_div(kiln__emitter *e, kiln__value *a, kiln__value *b);
kiln__value *kiln__emit_neg(kiln__emitter *e, kiln__value *x);
/* A rank-0 constant of dtype with value v (converted as kiln_scalar does). */
kiln__value *kiln__emit_scalar(kiln__emitter *e, kiln_dtype dtype, double v);
/* A value of `type` with every element v (a scalar constant broadcast). */
kiln__value *kiln__emit_full(kiln__emitter *e, const kiln__type *type, double v);
kiln__value *kiln__emit_zeros(kiln__emitter *e, const kiln__type *type);
kiln__value *kiln__emit_convert(kiln__emitter *e, kiln__value *x, kiln_dtype dtype);
kiln__value *kiln__emit_reshape(kiln__emitter *e, kiln__value *x, const kiln_shape *shape);
kiln__value *kiln__emit_transpose(kiln__emitter *e, kiln__value *x, const kiln_dims *perm);
/* broadcast_in_dim of x to shape, x's dimension i going to dims.v[i]. */
kiln__value *kiln__emit_broadcast(kiln__emitter *e, kiln__value *x, const kiln_shape *shape,
                                  const kiln_dims *dims);
/* reduce with the builtin add region over `dims` (sum; result keeps x's dtype). */
kiln__value *kiln__emit_reduce_sum(kiln__emitter *e, kiln__value *x, const kiln_dims *dims);
kiln__value *kiln__emit_compare(kiln__emitter *e, kiln_compare_direction dir, kiln__value *a,
                                kiln__value *b);
kiln__value *kiln__emit_select(kiln__emitter *e, kiln__value *pred, kiln__value *on_true,
                               kiln__value *on_false);
/* a + b where either may be NULL (zero): returns the other, or NULL when both are. */
kiln__value *kiln__emit_add_any(kiln__emitter *e, kiln__value *a, kiln__value *b);
/* A value of x's type with every element v. */
kiln__value *kiln__emit_full_like(kiln__emitter *e, kiln__value *x, double v);
/* slice of x from start to limit (count == rank) with `strides` (NULL: all 1). */
kiln__value *kiln__emit_slice(kiln__emitter *e, kiln__value *x, const kiln_dims *start,
                              const kiln_dims *limit, const kiln_dims *strides);
/* pad of x with the scalar `value` (low, high, interior each of count rank). */
kiln__value *kiln__emit_pad(kiln__emitter *e, kiln__value *x, kiln__value *value,
                            const kiln_dims *low, const kiln_dims *high, const kiln_dims *interior);
/* Records `code` with "<e->fn>: <message>", unless an error is recorded already. Returns
 * the ctx's status. */
kiln_status kiln__emit_error(kiln__emitter *e, kiln_status code, const char *fmt, ...)
    KILN_PRINTF_LIKE(3, 4);
#endif
