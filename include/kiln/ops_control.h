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

/* StableHLO if: runs on_true or on_false (no args, n_results results each) depending on
 * the rank-0 i1 `pred`. Only the branch taken runs, so only its results are checked.
 * Errors: INVALID_ARGUMENT for a pred that is not a rank-0 i1 tensor, a NULL branch, a
 * missing result; a branch's own error propagates. */
KILN_API kiln_status kiln_cond(kiln_ctx *cx, kiln_tensor *pred, const kiln_region *on_true,
                               const kiln_region *on_false, int32_t n_results, kiln_tensor **out);

/* StableHLO case: runs branches[index] (no args, n_results results), index a rank-0 i32
 * tensor; an index out of [0, n_branches) (negative included) runs the last branch.
 * Errors: INVALID_ARGUMENT for an index that is not a rank-0 i32 tensor, n_branches < 1,
 * a branch without fn, a missing result; a branch's own error propagates. */
KILN_API kiln_status kiln_case(kiln_ctx *cx, kiln_tensor *index, const kiln_region *branches,
                               int32_t n_branches, int32_t n_results, kiln_tensor **out);

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
