/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/vmap.h: batching (JAX's vmap): a function written for one example, run on a batch.
 *
 * kiln_vmap traces the function on one example's types (each mapped argument without its
 * batch axis) and transforms the traced module: every op gets the batch as one more
 * dimension (elementwise ops simply run over it, a matrix product gains a batch or free
 * dimension, a convolution folds the batch into its own batch, features or feature
 * groups), so the batched function is one program, compiled like any other, not a loop
 * over the examples (gather and scatter gain a batching dimension). An op without a
 * batching rule (random bits; a reduction's init that differs per example ...) runs in a
 * loop over the batch instead:
 * always right, and said by kiln_exe_print ("note: kiln_vmap: stablehlo.rng_bit_generator
 * has no batching rule here: it runs in a loop over the batch, once per example"). Control flow
 * batches too: a loop or branch whose condition is the same for every example stays one; a
 * condition that differs per example runs every branch and selects per example, and a loop runs
 * until no example's condition holds, each example's state kept as it was once its own condition
 * failed.
 *
 *     static kiln_status predict(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
 *                                void *u) {
 *         // in[0]: the weights f32[3,2] (shared), in[1]: one example f32[3]
 *         out[0] = kiln_tanh(cx, kiln_matmul(cx, in[1], in[0]));
 *         return kiln_ctx_status(cx);
 *     }
 *     kiln_vmap_options o = kiln_vmap_options_default();
 *     o.in_axes = (int32_t[]){KILN_VMAP_NONE, 0};      // weights shared, examples along 0
 *     kiln_tensor *y;                                   // f32[B,2]
 *     kiln_vmap(cx, &(kiln_region){predict}, 2, (kiln_tensor *[]){w, batch}, 1, &o, &y);
 *
 * Like the transformations of kiln/autodiff.h, it works eagerly (the batched function is
 * compiled, cached in the ctx's cache of eager transformations, and run) and inside a
 * trace (the batched computation is recorded: kiln_jit of kiln_vmap is one executable),
 * and composes with them and with itself: kiln_vmap of kiln_grad gives per-example
 * gradients, kiln_grad of kiln_vmap differentiates the batched function, a kiln_vmap
 * inside the function batches again (nested batches). Tensors the function uses without
 * receiving them (through `user`) are shared by every example. Results belong to the ctx's
 * current scope. Errors are sticky as for builders; each function returns the ctx's status
 * (a NULL cx is INVALID_ARGUMENT, recorded nowhere). None of these functions is
 * thread-safe on one ctx. */
#ifndef KILN_VMAP_H
#define KILN_VMAP_H

#include <stdint.h>

#include "kiln/jit.h"
#include "kiln/ops.h"
#include "kiln/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An in or out axis meaning "not batched": an argument every example shares, or a result
 * that does not depend on the batch (JAX's None). */
#define KILN_VMAP_NONE INT32_MIN

typedef struct kiln_vmap_options {
    size_t struct_size; /* sizeof(kiln_vmap_options); set by kiln_vmap_options_default */
    /* List mode: per argument, the axis along which it holds the batch (negative counts
     * from the end, as numpy's axes do), or KILN_VMAP_NONE. NULL: axis 0 of every
     * argument. */
    const int32_t *in_axes;
    /* Per result, the axis the batch takes in it (negative from the end of the batched
     * result), or KILN_VMAP_NONE for a result that must not depend on the batch. NULL:
     * axis 0 of every result (a result that does not depend on the batch is repeated). */
    const int32_t *out_axes;
    /* Tree mode (kiln_vmap_tree): the axis of the leaves under in_paths[k] (a leaf path
     * prefix: "x" covers "x", "x.w" and "x[1]") is in_path_axes[k], the first match
     * winning; other leaves take in_axis. */
    const char *const *in_paths;
    const int32_t *in_path_axes;
    int32_t n_in_paths;
    int32_t in_axis; /* tree mode: the axis of the other leaves; default 0 */
    /* The batch size. 0: from the mapped arguments; needed when none is mapped (and then
     * every result is repeated that many times); when given, mapped arguments must agree. */
    int64_t axis_size;
    /* The name of the batched function in messages and printed modules. Default "vmap". */
    const char *name;
} kiln_vmap_options;

/* Options with every field at its default (every argument and result along axis 0).
 * Thread-safe. */
KILN_API kiln_vmap_options kiln_vmap_options_default(void);

/* Runs f (n_in arguments, n_out results) on a batch: args[i] holds the examples along its
 * in axis (or is shared), and out[j] (n_out new tensors) holds f's result j of every
 * example along its out axis. `options` may be NULL. Errors: INVALID_ARGUMENT (NULL f,
 * args, an arg or out; counts outside 0..4096; an in axis outside the argument's rank or
 * an out axis outside the batched result's, naming it; mapped arguments of different
 * sizes along their axes, naming both; no mapped argument without axis_size; a result
 * depending on the batch whose out axis is KILN_VMAP_NONE), whatever f reports,
 * UNIMPLEMENTED (a value that would pass KILN_MAX_RANK dimensions with the batch),
 * RESOURCE_EXHAUSTED. */
KILN_API kiln_status kiln_vmap(kiln_ctx *cx, const kiln_region *f, int32_t n_in,
                               kiln_tensor *const *args, int32_t n_out,
                               const kiln_vmap_options *options, kiln_tensor **out);

/* Tree mode: fn is a function of structs (as for kiln_jit_create_tree) from `in`
 * (described by in_def; every tensor leaf holds a batch along its axis, per
 * options->in_paths and in_axis) to `out` (described by out_def; zero it first), whose
 * every tensor leaf gets the batch at axis 0 (options->out_axes, when given, per output
 * leaf in flatten order). Static members of `in` are passed as they are; those fn writes
 * into its output are copied to `out`. Errors as kiln_vmap's, and INVALID_ARGUMENT for a
 * NULL or invalid descriptor, or an in path matching no leaf. */
KILN_API kiln_status kiln_vmap_tree(kiln_ctx *cx, kiln_jit_fn fn, void *user,
                                    const kiln_tree_def *in_def, const void *in,
                                    const kiln_tree_def *out_def, void *out,
                                    const kiln_vmap_options *options);

#ifdef __cplusplus
}
#endif

#endif
