/* SPDX-License-Identifier: Apache-2.0 */
/* Copying IR: ops (with their regions) from one block into another, possibly in another
 * module, through a map from old values to new ones. Used by the autodiff transforms and
 * to inline a function's body into a trace. */
#ifndef KILN_IR_CLONE_H
#define KILN_IR_CLONE_H

#include "ir/ir.h"

/* A map from values to values (open addressing on the key's address). Memory from the
 * ctx's allocator; errors recorded in cx. */
typedef struct kiln__vmap {
    kiln_ctx *cx;
    const kiln__value **keys;
    kiln__value **vals;
    size_t cap, n;
} kiln__vmap;

void kiln__vmap_init(kiln__vmap *map, kiln_ctx *cx);
void kiln__vmap_free(kiln__vmap *map);
/* Sets map[k] = v (v may be NULL, which reads back as absent). False on out of memory,
 * with RESOURCE_EXHAUSTED recorded. */
bool kiln__vmap_put(kiln__vmap *map, const kiln__value *k, kiln__value *v);
/* map[k], or NULL. */
kiln__value *kiln__vmap_get(const kiln__vmap *map, const kiln__value *k);

/* Appends a copy of op to `into` (in module dst): operands through map (an operand
 * missing from the map is an INTERNAL error), regions copied recursively, constants kept
 * by dst; the copy's results are added to the map. Returns the copy, or NULL with an
 * error recorded in dst->cx. */
kiln__ir_op *kiln__clone_op(kiln_module *dst, kiln__block *into, const kiln__ir_op *op,
                            kiln__vmap *map);

/* Makes region r of `parent` (in dst) a copy of block src: its arguments (added to the map)
 * and ops through map, its results set. For a transform that builds an op of its own and
 * keeps an original op's regions. */
kiln_status kiln__clone_region(kiln_module *dst, kiln__ir_op *parent, int32_t r,
                               const kiln__block *src, kiln__vmap *map);

/* Clones every op of src into `into` (src's arguments must be mapped already). Does not
 * set into's results; the caller reads src's results through the map. */
kiln_status kiln__clone_ops(kiln_module *dst, kiln__block *into, const kiln__block *src,
                            kiln__vmap *map);

/* Inlines a function body: maps src's arguments to `args`, clones its ops into `into`,
 * and writes the values of its results into out_results (src->n_results of them). */
kiln_status kiln__inline_block(kiln_module *dst, kiln__block *into, const kiln__block *src,
                               kiln__value *const *args, kiln__value **out_results);

/* The values a block (its nested regions included) uses but does not define, in first-use
 * order, at most cap (returns the count, or -1 past cap). Only floating-point ones when
 * float_only. */
int32_t kiln__block_free_values(kiln_ctx *cx, const kiln__block *b, bool float_only,
                                const kiln__value **out, int32_t cap);

/* Unlinks op from its block and drops the uses it (its regions included) holds on values;
 * the op's memory stays in the arena. For scaffolding that must not reach the module. */
void kiln__op_remove(kiln__ir_op *op);

#endif
