/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/ops_control.h: control flow, constants, random bits, and numpy's where and cast.
 * Part of kiln/ops.h (read its overview first); include that header, not this one.
 *
 * Control flow takes its bodies as regions (kiln_region: a callback over tensors). Eagerly
 * the callbacks simply run, each call in a scope of its own (what it makes is released
 * when it returns; only its results survive); when traced they become regions. A callback
 * may use any builder, including nested control flow: traced regions nest up to 128 levels
 * (deeper is RESOURCE_EXHAUSTED naming the op, as is nesting deeper than the thread's
 * stack has room for).
 *
 *     static kiln_status less_than_10(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r,
 *                                     void *user) {
 *         r[0] = kiln_compare(cx, s[0], kiln_scalar_like(cx, s[0], 10), KILN_CMP_LT,
 *                             KILN_CMP_DEFAULT);
 *         return r[0] ? KILN_OK : kiln_ctx_status(cx);
 *     }
 *     static kiln_status step(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *user) {
 *         r[0] = kiln_add(cx, s[0], kiln_scalar_like(cx, s[0], 1));   // i += 1
 *         r[1] = kiln_add(cx, s[1], s[0]);                           // sum += i
 *         return r[0] && r[1] ? KILN_OK : kiln_ctx_status(cx);
 *     }
 *     kiln_tensor *out[2];
 *     kiln_while(cx, (kiln_tensor *[]){i0, sum0}, 2, &(kiln_region){less_than_10},
 *                &(kiln_region){step}, out);
 *
 * The functions that return kiln_status (the control flow) store their results in
 * out[0..n-1], each a tensor of its own owned by the innermost scope (a body that returns
 * its argument unchanged gives a copy, never an alias of an input). On error every out[i]
 * is NULL, the status is returned and the message is in the ctx; an error a callback
 * records (or returns) propagates unchanged. Builders that return a tensor follow
 * kiln/tensor.h's conventions. None of these functions is thread-safe on one ctx.
 */
#ifndef KILN_OPS_CONTROL_H
#define KILN_OPS_CONTROL_H

#include "kiln/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* StableHLO while: state = inits; while cond(state): state = body(state); out = state.
 * cond takes the n state values and returns one rank-0 i1 (KILN_BOOL) tensor; body takes
 * them and returns n new values of the inits' types (dtype and shape). The loop may run 0
 * times (out is then a copy of inits). Errors: INVALID_ARGUMENT for n < 0, a NULL init,
 * cond/body NULL or without fn, a cond result that is not a rank-0 i1 tensor, a body
 * result of the wrong type ("body result 2 has type f32[3]; expected i64[3]") or a
 * missing one; a callback's own error propagates. A loop whose cond never turns false
 * does not return. */
KILN_API kiln_status kiln_while(kiln_ctx *cx, kiln_tensor *const *inits, int32_t n,
                                const kiln_region *cond, const kiln_region *body,
                                kiln_tensor **out);

/* for i in [lower, upper): state = body(i, state), with i an i64 rank-0 tensor passed as
 * args[0] and the state as args[1..n]; body returns the n new state values (results
 * 0..n-1, of the inits' types). A StableHLO while over (i, state...); upper <= lower runs
 * the body 0 times. Errors as kiln_while's. */
KILN_API kiln_status kiln_fori_loop(kiln_ctx *cx, int64_t lower, int64_t upper,
                                    kiln_tensor *const *inits, int32_t n, const kiln_region *body,
                                    kiln_tensor **out);

typedef struct kiln_scan_options {
    size_t struct_size; /* sizeof(kiln_scan_options); set by kiln_scan_options_default */
    /* Runs from the last row of xs to the first; ys are still stacked by the row they came
     * from (JAX's reverse=True). */
    bool reverse;
    /* Steps per iteration of the loop that runs them (>= 1; default 1): larger values
     * trade program size for less loop bookkeeping; a remainder runs after the loop. */
    int32_t unroll;
    /* The number of steps: needed when there are no xs (0 otherwise, or xs' length). */
    int64_t length;
} kiln_scan_options;

/* Options with every field at its default (forward, unroll 1, length from xs).
 * Thread-safe. */
KILN_API kiln_scan_options kiln_scan_options_default(void);

/* JAX's lax.scan: carry = init; for each row t of the xs (in order, or reversed),
 * (carry, y_t) = body(carry, x_t); then out_carry = carry and out_ys[k] stacks y_t along a
 * new axis 0 (row t at position t). body takes the n_carry carries then one row of each of
 * the n_xs xs (xs[k] without its axis 0), and returns the n_carry new carries (of the
 * inits' types) then n_ys results of the same types at every step. The steps run as a
 * kiln_fori_loop (differentiable in both modes, batched by kiln_vmap like any loop); the
 * ys' types come from the first step (eagerly it runs before the loop) or, traced or with
 * no step, from tracing the body once. Results are new tensors of the innermost scope.
 * Errors: INVALID_ARGUMENT for negative counts (at most 64 each), NULL arrays or entries, a
 * NULL body, xs of rank 0 or of different lengths, no xs without options->length (or a
 * length that differs from theirs), unroll < 1, a carry result of the wrong type (naming
 * it); a body's own error propagates.
 *
 *     // running sums: carry s, y_t = s + x_t
 *     static kiln_status step(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
 *         r[0] = kiln_add(cx, a[0], a[1]);   // the new carry
 *         r[1] = r[0];                       // y_t
 *         return kiln_ctx_status(cx);
 *     }
 *     kiln_tensor *total, *sums;  // x f32[n, 3]: total f32[3], sums f32[n, 3]
 *     kiln_scan(cx, &(kiln_region){step}, &zero3, 1, &x, 1, 1, NULL, &total, &sums);
 */
KILN_API kiln_status kiln_scan(kiln_ctx *cx, const kiln_region *body, kiln_tensor *const *init,
                               int32_t n_carry, kiln_tensor *const *xs, int32_t n_xs, int32_t n_ys,
                               const kiln_scan_options *options, kiln_tensor **out_carry,
                               kiln_tensor **out_ys);

/* StableHLO if (JAX's lax.cond(pred, on_true, on_false, *operands)): runs on_true or
 * on_false, depending on the rank-0 i1 `pred`, on the n_operands `operands` (its args; may
 * be none) and stores its n_results results in out. Both branches must return the same
 * types: when traced both become regions and are compared ("kiln_cond: the false branch
 * returns f32[3] for result 1; the true branch returns f32[2]"); eagerly only the branch
 * taken runs (a branch may read its operands' values, as eager code does), so only its
 * results are checked. Errors: INVALID_ARGUMENT for a pred that is not a rank-0 i1
 * tensor, a NULL branch, NULL operands or operands[i], results that differ in type, a
 * missing result; a branch's own error propagates.
 *
 *     static kiln_status neg(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
 *         r[0] = kiln_negate(cx, a[0]);
 *         return kiln_ctx_status(cx);
 *     }
 *     static kiln_status same(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
 *         r[0] = a[0];
 *         return KILN_OK;
 *     }
 *     kiln_tensor *y;   // y = x < 0 ? -x : x
 *     kiln_cond(cx, kiln_compare(cx, x, kiln_scalar_like(cx, x, 0), KILN_CMP_LT,
 *                                KILN_CMP_DEFAULT),
 *               &(kiln_region){neg}, &(kiln_region){same}, &x, 1, 1, &y);
 */
KILN_API kiln_status kiln_cond(kiln_ctx *cx, kiln_tensor *pred, const kiln_region *on_true,
                               const kiln_region *on_false, kiln_tensor *const *operands,
                               int32_t n_operands, int32_t n_results, kiln_tensor **out);

/* StableHLO case (JAX's lax.switch(index, branches, *operands)): runs branches[index] on
 * the n_operands `operands` (n_results results), index a rank-0 i32 tensor; an index out
 * of [0, n_branches) (negative included) runs the last branch. Every branch must return the
 * same types, checked as kiln_cond checks them ("the branch 2 returns ..."). Errors:
 * INVALID_ARGUMENT for an index that is not a rank-0 i32 tensor, n_branches < 1 (or over
 * 4096), a branch without fn, NULL operands, results that differ in type, a missing
 * result; a branch's own error propagates. */
KILN_API kiln_status kiln_case(kiln_ctx *cx, kiln_tensor *index, const kiln_region *branches,
                               int32_t n_branches, kiln_tensor *const *operands, int32_t n_operands,
                               int32_t n_results, kiln_tensor **out);

/* func.call: runs `callee` on args[0..n_args-1] and stores its n_results results in out.
 * Errors: INVALID_ARGUMENT for a NULL callee or arg, a missing result; the callee's own
 * error propagates. */
KILN_API kiln_status kiln_call(kiln_ctx *cx, const kiln_region *callee, kiln_tensor *const *args,
                               int32_t n_args, int32_t n_results, kiln_tensor **out);

/* Returns its n inputs unchanged (as new tensors); a barrier for optimizations when
 * traced. */
KILN_API kiln_status kiln_optimization_barrier(kiln_ctx *cx, kiln_tensor *const *inputs, int32_t n,
                                               kiln_tensor **out);

/* A constant tensor (stablehlo.constant): a copy of `nbytes` of host data, as
 * kiln_tensor_from_host (same checks and messages, naming kiln_constant). */
KILN_API kiln_tensor *kiln_constant(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape,
                                    const void *data, size_t nbytes);

typedef enum kiln_rng_algorithm {
    KILN_RNG_DEFAULT,   /* kiln's choice: PHILOX */
    KILN_RNG_THREE_FRY, /* Threefry-2x32-20; state: ui64[2] (key, counter) */
    KILN_RNG_PHILOX,    /* Philox-4x32-10; state: ui64[2] or ui64[3] */
} kiln_rng_algorithm;

/* StableHLO rng_bit_generator: random bits of `dtype` (any integer or float type, not
 * KILN_BOOL; the bits are raw, so floats may be NaN or infinite) and `shape` from `state`
 * (a ui64 vector: [2] for THREE_FRY, [2] or [3] for PHILOX and DEFAULT), and the next
 * state in *out_state (may be NULL; owned by the innermost scope). The bits are a
 * deterministic function of the state and the requested type, the same as XLA's
 * (RngBitGeneratorExpander): state[0] is the key and the rest a counter that the new
 * state advances past the blocks used, so chaining states gives fresh bits. Errors:
 * INVALID_ARGUMENT for a state of the wrong type or size, an unknown algorithm, a bad
 * dtype or shape. */
KILN_API kiln_tensor *kiln_rng_bit_generator(kiln_ctx *cx, kiln_tensor *state,
                                             kiln_rng_algorithm algorithm, kiln_dtype dtype,
                                             kiln_shape shape, kiln_tensor **out_state);

/* numpy.where(pred, a, b): elements of a where pred is true (non-zero), else of b, with
 * numpy broadcasting of all three. a and b must have the same dtype (no promotion). */
KILN_API kiln_tensor *kiln_where(kiln_ctx *cx, kiln_tensor *pred, kiln_tensor *a, kiln_tensor *b);

/* kiln_convert under numpy's name (messages name kiln_cast). */
KILN_API kiln_tensor *kiln_cast(kiln_ctx *cx, kiln_tensor *x, kiln_dtype dtype);

#ifdef __cplusplus
}
#endif

#endif
