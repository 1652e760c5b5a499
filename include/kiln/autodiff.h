/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/autodiff.h: reverse- and forward-mode differentiation of kiln functions.
 *
 * A kiln function (a kiln_region, or a kiln_jit_fn over structs) is traced into a module,
 * and the module is transformed: vjp appends the backward pass (one rule per op, run in
 * reverse), jvp the tangent computation (one rule per op, run forward). The transformed
 * function goes through the same passes as any other (canonicalize, cse, dce, fusion).
 *
 * Every call works in both modes:
 * - eagerly (all inputs concrete): the function is traced, differentiated, compiled and
 *   run; the results are concrete tensors;
 * - inside a trace (some input traced, e.g. within kiln_lower or a kiln_jit): the
 *   differentiated computation is recorded into the current trace, so a jitted training
 *   step contains its backward pass and compiles into one executable.
 * Calls nest: the function differentiated may itself call kiln_grad (grad of grad) or
 * kiln_vjp inside kiln_jvp (Hessian-vector products).
 *
 *     static kiln_status f(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
 *         out[0] = kiln_sum(cx, kiln_cosine(cx, in[0]), KILN_DIMS_NONE, false);
 *         return kiln_ctx_status(cx);
 *     }
 *     kiln_region fn = {f, NULL};
 *     kiln_tensor *g;
 *     kiln_grad(cx, &fn, 1, &x, NULL, &g);                    // g = -sin(x)
 *
 * The differentiated function receives its inputs as arguments; the other tensors it uses
 * are held constant (nothing flows back to them): concrete tensors, and inside a trace the
 * enclosing trace's tensors too (a batch a jitted training step received, say). Only floating-point
 * inputs (f16, bf16, f32, f64) have gradients; integer and boolean inputs get no gradient (NULL in
 * list mode) unless asked for by argnums, which is INVALID_ARGUMENT naming the argument. Results
 * belong to the ctx's current scope. Errors are sticky as for builders; each function returns the
 * ctx's status (a ctx already holding an error returns it at once; a NULL cx is INVALID_ARGUMENT,
 * recorded nowhere). Eagerly every call traces and transforms afresh, and compiles only what
 * it has not compiled before: the ctx caches the executables (kiln_ad_cache_stats below), so
 * an eager training loop compiles on its first step. Differentiating inside a kiln_jit
 * function saves the tracing too. None of these
 * functions is thread-safe on one ctx; different ctxs may be used from different threads.
 */
#ifndef KILN_AUTODIFF_H
#define KILN_AUTODIFF_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln/jit.h"
#include "kiln/ops.h"
#include "kiln/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_grad_options {
    size_t struct_size; /* sizeof(kiln_grad_options); set by kiln_grad_options_default */
    /* List mode: the arguments to differentiate with respect to, in the order their
     * gradients are returned. NULL: argument 0 only (JAX's default argnums=0). */
    const int32_t *argnums;
    int32_t n_argnums;
    /* Tree mode: leaf path prefixes to differentiate with respect to ("params" selects
     * "params.w1", "params.b1", ...); each must match some leaf. NULL: every
     * floating-point leaf. */
    const char *const *wrt_paths;
    int32_t n_wrt_paths;
    /* The function returns its (scalar) value first and auxiliary results after it; the
     * auxiliary results are returned as they are and not differentiated. Without has_aux
     * the function must return exactly one result. */
    bool has_aux;
    /* The name of the function in messages and printed modules. Default "grad". */
    const char *name;
} kiln_grad_options;

/* Options with every field at its default (argnums NULL: argument 0; name "grad").
 * Thread-safe. */
KILN_API kiln_grad_options kiln_grad_options_default(void);

/* Reverse mode. Runs f (n_in arguments, n_out results) at `primals` and pulls
 * `cotangents` (one per result, same dtype and shape; a NULL entry means zeros) back to
 * the inputs. Writes the n_out results into out_results (may be NULL) and one cotangent
 * per input into out_cotangents (NULL for an input that has none: integer or boolean).
 * Errors: INVALID_ARGUMENT (NULL f or arrays: out_cotangents when n_in > 0, cotangents
 * when n_out > 0; counts outside 0..4096; a cotangent of the wrong type), whatever f
 * reports, UNIMPLEMENTED for an op with no rule (naming it), RESOURCE_EXHAUSTED. */
KILN_API kiln_status kiln_vjp(kiln_ctx *cx, const kiln_region *f, int32_t n_in,
                              kiln_tensor *const *primals, int32_t n_out,
                              kiln_tensor *const *cotangents, kiln_tensor **out_results,
                              kiln_tensor **out_cotangents);

/* Forward mode. Runs f at `primals` and pushes `tangents` (one per input; NULL means
 * zeros) forward. Writes the n_out results into out_results (may be NULL) and their
 * tangents into out_tangents (which must not be NULL when n_out > 0). Errors as for
 * kiln_vjp (here a NULL tangents array with n_in > 0 or a tangent of the wrong type). */
KILN_API kiln_status kiln_jvp(kiln_ctx *cx, const kiln_region *f, int32_t n_in,
                              kiln_tensor *const *primals, kiln_tensor *const *tangents,
                              int32_t n_out, kiln_tensor **out_results, kiln_tensor **out_tangents);

/* The gradient of a scalar-valued f (a rank-0 floating-point first result) with respect
 * to the arguments options->argnums (default: argument 0). out_grads has one entry per
 * selected argument, each with that argument's dtype and shape. `options` may be NULL.
 * Errors: INVALID_ARGUMENT (a non-scalar or non-float value, argnums out of range or
 * repeated or naming an integer argument, has_aux without n_out > 1 ...). kiln_grad
 * itself takes f with one result: has_aux is INVALID_ARGUMENT here (the auxiliary
 * results need somewhere to go: use kiln_value_and_grad). */
KILN_API kiln_status kiln_grad(kiln_ctx *cx, const kiln_region *f, int32_t n_in,
                               kiln_tensor *const *args, const kiln_grad_options *options,
                               kiln_tensor **out_grads);

/* kiln_grad that also returns f's results (the value first, then the auxiliary results
 * with has_aux): n_out of them into out_results (not NULL). Errors as for kiln_grad. */
KILN_API kiln_status kiln_value_and_grad(kiln_ctx *cx, const kiln_region *f, int32_t n_in,
                                         kiln_tensor *const *args, int32_t n_out,
                                         const kiln_grad_options *options,
                                         kiln_tensor **out_results, kiln_tensor **out_grads);

/* Tree mode: fn is a function of structs (as for kiln_jit_create_tree): `in` is a struct
 * described by in_def, fn fills `out`, a struct described by out_def whose first leaf is
 * the scalar value (its other leaves are auxiliary results, returned as they are).
 * Writes fn's results into out (zero it first) and the gradient into out_grads, a struct
 * of in_def's type: the selected leaves (options->wrt_paths; default every
 * floating-point leaf) hold gradients with the leaf's dtype and shape, every other
 * tensor member is NULL and static members are copied from `in`. Errors as above, and
 * INVALID_ARGUMENT for a NULL or invalid descriptor or a wrt path matching no leaf. */
KILN_API kiln_status kiln_value_and_grad_tree(kiln_ctx *cx, kiln_jit_fn fn, void *user,
                                              const kiln_tree_def *in_def, const void *in,
                                              const kiln_tree_def *out_def, void *out,
                                              const kiln_grad_options *options, void *out_grads);

/* The identity on values whose derivative is zero: nothing flows back through the result
 * to x. Eagerly it returns a tensor equal to x (a new reference in the current scope); in
 * a trace it records a marker that differentiation treats as a constant: an
 * optimization_barrier tagged in memory, so a printed module shows a plain barrier (the
 * identity) and a module parsed back from text no longer stops gradients. NULL cx or x:
 * NULL (without a new error). Otherwise NULL on error, with the errors of
 * kiln_optimization_barrier (RESOURCE_EXHAUSTED ...). */
KILN_API kiln_tensor *kiln_stop_gradient(kiln_ctx *cx, kiln_tensor *x);

/* A function with a user-supplied derivative (JAX's custom_vjp): differentiating through
 * kiln_custom_vjp_call uses `bwd` instead of differentiating `fwd`'s ops.
 * - fwd: n_in arguments -> n_out results followed by n_residuals residuals (tensors bwd
 *   needs, e.g. the inputs or an intermediate);
 * - bwd: n_residuals residuals followed by n_out cotangents -> n_in cotangents (NULL for
 *   an input with no gradient).
 * Forward mode through a custom_vjp function is UNIMPLEMENTED (as in JAX). */
typedef struct kiln_custom_vjp {
    kiln_region fwd;
    kiln_region bwd;
    int32_t n_in, n_out, n_residuals;
    const char *name; /* for messages and printed modules; default "custom_vjp" */
} kiln_custom_vjp;

/* Calls def->fwd on args and writes its n_out results (the residuals are kept for
 * differentiation, not returned). Eagerly the results are fwd's; inside a trace the call
 * is recorded with its custom rule. `def` is copied, but not what its regions' `user`
 * pointers point to: that must stay valid while a module holding the call may still be
 * differentiated (bwd is traced when the derivative is built); a module printed and
 * parsed back keeps the call but not its rule. Results are new tensors in the ctx's
 * current scope. Errors: INVALID_ARGUMENT (NULL def, regions, args or out_results; counts:
 * n_out >= 1, each count at most 4096), whatever fwd reports, RESOURCE_EXHAUSTED; when
 * differentiated,
 * whatever bwd reports, and INVALID_ARGUMENT for a bwd result of the wrong type. */
KILN_API kiln_status kiln_custom_vjp_call(kiln_ctx *cx, const kiln_custom_vjp *def,
                                          kiln_tensor *const *args, kiln_tensor **out_results);

/* ---- the eager cache ------------------------------------------------------------------- */

/* The most executables a ctx keeps for its eager transformations. */
#define KILN_AD_CACHE_ENTRIES 32

/* The ctx's cache of compiled derivatives: an eager call looks its transformed module up
 * by the module's whole content (every op, type and attribute; constants by value) and
 * the device and backend it compiles for, so a hit runs exactly what a fresh compile
 * would, and a change anywhere (another shape, a different captured value, a new
 * function) compiles anew. A function that captures a concrete tensor of more than 256
 * bytes (weights reached through `user`, say) is compiled at every call: pass such
 * tensors as arguments. At most KILN_AD_CACHE_ENTRIES executables are kept, the least
 * recently used evicted; they go with the ctx.
 *
 * kiln_ad_cache_stats fills *out with the counters (hits, misses, compiles, evictions,
 * compile_ns, entries; bytes is the size of the keys). INVALID_ARGUMENT for a NULL cx or
 * out (recorded in cx when there is one). kiln_ad_cache_clear empties the cache (the
 * counters stay); a NULL cx is a no-op. */
KILN_API kiln_status kiln_ad_cache_stats(kiln_ctx *cx, kiln_jit_stats *out);
KILN_API void kiln_ad_cache_clear(kiln_ctx *cx);

#ifdef __cplusplus
}
#endif

#endif
