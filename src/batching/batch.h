/* SPDX-License-Identifier: Apache-2.0 */
/* Batching (kiln_vmap) as a transformation of the IR: a function written for one example
 * becomes the function of a batch of them.
 *
 * The transform walks the function's ops in order. Every value of the source has a value
 * in the block being built and a flag: batched (it gained a leading dimension of the batch
 * size, always at axis 0 inside the transform) or not (the same for every example: a
 * constant, or computed from unbatched values only). An op none of whose operands (nor the
 * values its regions use from outside) is batched is copied as it is; otherwise its
 * batching rule emits the batched computation. Rules are a column of the op table (one
 * kiln__batch_<NAME> per row of ops/ops.def); an op without one is batched by a loop over
 * the batch (kiln__batch_by_loop), which is always right and says so in kiln_exe_print.
 *
 * A rule's output is batched only when one of its inputs is: the dependence analysis the
 * control-flow rules run first (which carries of a loop become batched) relies on it. */
#ifndef KILN_BATCHING_BATCH_H
#define KILN_BATCHING_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/clone.h"
#include "ir/emit.h"

typedef struct kiln__batch {
    kiln__emitter e; /* where ops go (e.block changes as rules build regions) */
    int64_t size;    /* the batch size */
    kiln__vmap val;  /* source value -> its value in the blocks being built */
    kiln__vmap bat;  /* source value -> non-NULL when batched */
} kiln__batch;

/* A rule's view of one op: the op as recorded and its operands' values in e.block, with
 * batched[i] saying whether operand i is batched (then its axis 0 is the batch). */
typedef struct kiln__batch_op {
    const kiln__ir_op *op;
    kiln__value *const *in;
    const bool *batched;
    int32_t n_in;
} kiln__batch_op;

/* Emits the batched op: out[j] (the value of result j) and out_batched[j] (prefilled with
 * false; set for a batched result). */
typedef kiln_status kiln__batch_fn(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                   bool *out_batched);
typedef kiln__batch_fn *kiln__batch_rule;

/* Makes RULE (a function of this file, with the rule's signature) the rule of op NAME when
 * several ops share one: an alias, so NAME keeps its own symbol in the table. */
#define KILN__BATCH_AS(NAME, RULE) kiln__batch_fn kiln__batch_##NAME __attribute__((alias(#RULE)))

#define KILN_OP(name, text, nin, nout, flags)                                                   \
    kiln_status kiln__batch_##name(kiln__batch *b, const kiln__batch_op *op, kiln__value **out, \
                                   bool *out_batched);
#include "ops/ops.def"
#undef KILN_OP

/* The table (rules.c), indexed by kiln_op. */
extern const kiln__batch_rule kiln__batch_rules[KILN_OP_COUNT];

/* True while `kind` has no rule of its own (it is batched by a loop). */
bool kiln__batch_rule_is_loop(kiln_op kind);

/* The rule of every op without one: a fixed-count while loop over the batch (the form
 * kiln_fori_loop traces, so reverse-mode differentiation goes through it) that slices
 * each batched operand, and each batched value the op's regions use, at the counter,
 * runs the op on the slices and writes its results into stacks of the batch. */
kiln_status kiln__batch_by_loop(kiln__batch *b, const kiln__batch_op *op, kiln__value **out,
                                bool *out_batched);

/* ---- what the rules share (transform.c) ------------------------------------------------ */

/* Batches the ops of src into b->e.block (src's arguments, and the values it uses from
 * outside, mapped already). */
kiln_status kiln__batch_block(kiln__batch *b, const kiln__block *src);
/* Whether v (a source value) is batched, and its value in the block being built. */
bool kiln__batch_is(const kiln__batch *b, const kiln__value *v);
kiln__value *kiln__batch_val(const kiln__batch *b, const kiln__value *v);
/* Records the value (and batchedness) of source value v. False on out of memory. */
bool kiln__batch_map(kiln__batch *b, const kiln__value *v, kiln__value *to, bool batched);
/* True when a value the op's regions use from outside is batched. */
bool kiln__batch_regions_batched(const kiln__batch *b, const kiln__ir_op *op);
/* Which results of block src would be batched, given which of its arguments are
 * (arg_batched, src->n_args entries), by dependence: a value is batched when any operand
 * of its op, or any value the op's regions use from outside, is (rules promise no less).
 * Writes src->n_results flags. Uses b->bat for the values outside src; leaves no marks
 * in it. */
kiln_status kiln__batch_analyse(kiln__batch *b, const kiln__block *src, const bool *arg_batched,
                                bool *out_batched);

/* `type` with the batch as a new leading dimension. */
kiln__type kiln__batch_type(const kiln__batch *b, const kiln__type *type);
/* x (of source type `type`) as a batched value: x itself when batched, else broadcast
 * along a new leading dimension. */
kiln__value *kiln__batch_broadcast(kiln__batch *b, kiln__value *x, bool batched);
/* dims with every entry + shift and `lead` in front when lead >= 0: attributes that list
 * dimensions shift past the batch (shift 1; the batch's own entry as lead), lists of sizes
 * or offsets gain the batch's entry (shift 0). */
kiln_dims kiln__batch_dims(const kiln_dims *dims, int64_t lead, int64_t shift);
/* x with its axis `from` moved to `to` (a transpose; x itself when they are equal). */
kiln__value *kiln__batch_move_axis(kiln__emitter *e, kiln__value *x, int32_t from, int32_t to);
/* The op's attributes, whole, to change for the batched op. */
kiln__attrs kiln__batch_attrs(const kiln__ir_op *op);
/* Appends an op of op's kind with the given attributes and operands (result types by
 * inference), and copies of op's regions. NULL on error. */
kiln__ir_op *kiln__batch_emit_like(kiln__batch *b, const kiln__ir_op *op, const kiln__attrs *attrs,
                                   kiln__value *const *operands, int32_t n_operands);

/* Whole functions: the batched f, a new public function in dst taking f's arguments (those
 * with in_axes[i] >= 0 with the batch of `size` inserted at that axis; KILN__BATCH_NONE:
 * unchanged), then the n_extra values `extra` (values f's body uses from outside, when it is
 * a block nested in another function: unbatched), and returning f's results with the batch
 * at out_axes[j] (an unbatched result is broadcast; KILN__BATCH_NONE: the result must be
 * unbatched, else INVALID_ARGUMENT naming it). `fn` names the public call in messages. */
#define KILN__BATCH_NONE INT32_MIN
kiln_status kiln__batch_func(kiln_ctx *cx, const char *fn, const kiln__func *f,
                             const kiln__value *const *extra, int32_t n_extra, kiln_module *dst,
                             const int32_t *in_axes, const int32_t *out_axes, int64_t size,
                             kiln__func **out);

#endif
