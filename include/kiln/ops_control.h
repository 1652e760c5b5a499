/* kiln/ops_control.h: control flow, constants, random bits, and numpy's where and cast.
 * Part of kiln/ops.h (read its overview first); include that header, not this one.
 * Eagerly the callbacks simply run; when traced they become regions.
 */
#ifndef KILN_OPS_CONTROL_H
#define KILN_OPS_CONTROL_H

#include "kiln/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* StableHLO while: state = inits; while cond(state) (one rank-0 i1 result): state =
 * body(state) (n results of the inits' types). The final state goes to out[0..n-1]. */
KILN_API kiln_status kiln_while(kiln_ctx *cx, kiln_tensor *const *inits, int32_t n,
                                const kiln_region *cond, const kiln_region *body,
                                kiln_tensor **out);

/* for i in [lower, upper): state = body(i, state), with i an i64 rank-0 tensor passed as
 * args[0] and the state as args[1..n]; body returns the n new state values. */
KILN_API kiln_status kiln_fori_loop(kiln_ctx *cx, int64_t lower, int64_t upper,
                                    kiln_tensor *const *inits, int32_t n, const kiln_region *body,
                                    kiln_tensor **out);

/* StableHLO if: runs on_true or on_false (no args, n_results results each, of matching
 * types) depending on the rank-0 i1 `pred`. */
KILN_API kiln_status kiln_cond(kiln_ctx *cx, kiln_tensor *pred, const kiln_region *on_true,
                               const kiln_region *on_false, int32_t n_results, kiln_tensor **out);

/* StableHLO case: runs branches[index] (index a rank-0 i32; out of range runs the last
 * branch). */
KILN_API kiln_status kiln_case(kiln_ctx *cx, kiln_tensor *index, const kiln_region *branches,
                               int32_t n_branches, int32_t n_results, kiln_tensor **out);

/* Returns its inputs unchanged; a barrier for optimizations when traced. */
KILN_API kiln_status kiln_optimization_barrier(kiln_ctx *cx, kiln_tensor *const *inputs, int32_t n,
                                               kiln_tensor **out);

/* A constant tensor (stablehlo.constant): a copy of host data, as kiln_tensor_from_host. */
KILN_API kiln_tensor *kiln_constant(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape,
                                    const void *data, size_t nbytes);

typedef enum kiln_rng_algorithm {
    KILN_RNG_DEFAULT,   /* kiln's choice: PHILOX */
    KILN_RNG_THREE_FRY, /* Threefry-2x32-20; state: ui64[2] (key, counter) */
    KILN_RNG_PHILOX,    /* Philox-4x32-10; state: ui64[2] or ui64[3] */
} kiln_rng_algorithm;

/* StableHLO rng_bit_generator: random bits of `dtype` (an integer or float type; the
 * bits are raw) and `shape` from `state` (ui64 vector), and the next state in
 * *out_state. */
KILN_API kiln_tensor *kiln_rng_bit_generator(kiln_ctx *cx, kiln_tensor *state,
                                             kiln_rng_algorithm algorithm, kiln_dtype dtype,
                                             kiln_shape shape, kiln_tensor **out_state);

/* numpy.where(pred, a, b) with numpy broadcasting of all three. */
KILN_API kiln_tensor *kiln_where(kiln_ctx *cx, kiln_tensor *pred, kiln_tensor *a, kiln_tensor *b);

/* kiln_convert under numpy's name. */
KILN_API kiln_tensor *kiln_cast(kiln_ctx *cx, kiln_tensor *x, kiln_dtype dtype);

#ifdef __cplusplus
}
#endif

#endif
