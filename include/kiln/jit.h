/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/jit.h: tracing, the staged pipeline (lower -> compile -> call) and the jit cache.
 *
 * A kiln function is a kiln_region (kiln/ops.h): a C callback that builds its results from
 * its arguments with kiln builders. Called with concrete tensors it runs eagerly; lowered,
 * it runs once with traced tensors (placeholders with a dtype and shape, see
 * kiln_tensor_is_traced) and every builder records an op instead of computing: the result
 * is a module of StableHLO ops. The module is compiled into an executable for a device and
 * called with concrete tensors, as often as needed.
 *
 *     static kiln_status step(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
 *                             void *user) {
 *         kiln_tensor *acc = in[0];
 *         for (int i = 1; i <= 10; i++)
 *             acc = kiln_add(cx, kiln_multiply(cx, kiln_scalar(cx, i, KILN_F32), acc), in[1]);
 *         out[0] = acc;
 *         return kiln_ctx_status(cx);
 *     }
 *
 *     kiln_region fn = {step, NULL};
 *     kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10)},
 *                              {.dtype = KILN_F32, .shape = KILN_SHAPE(10, 10)}};
 *     kiln_module *m;
 *     kiln_lower(cx, &fn, args, 2, 1, NULL, &m);
 *     kiln_module_print(cx, m, stdout);                    // StableHLO text
 *     kiln_exe *exe;
 *     kiln_compile(cx, m, NULL, &exe);
 *     kiln_tensor *r;
 *     kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, &r);
 *
 * Concrete tensors a traced function uses (captured, or made inside it) become constants.
 * Ops whose operands are all concrete still run eagerly while tracing (constant folding),
 * except ops with regions, which are always recorded.
 */
#ifndef KILN_JIT_H
#define KILN_JIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln/ops.h"
#include "kiln/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_module kiln_module;

/* The type of one argument of a function to lower. */
typedef struct kiln_arg_spec {
    kiln_dtype dtype;
    kiln_shape shape;
    const char *name; /* optional: the argument's path ("params.w1"), printed and logged */
    bool donate;      /* the caller gives up the argument's buffer (see kiln_module_info) */
} kiln_arg_spec;

typedef struct kiln_lower_options {
    size_t struct_size; /* sizeof(kiln_lower_options) */
    const char *name;   /* module name (default "kiln"); printed as module @name */
    bool donate_all;    /* Reactant's :auto: donate every argument that is not preserved */
    /* Per result, optional (NULL, or NULL entries): its name, printed as JAX prints result
     * names (jax.result_info) and given back by kiln_module_info_get and kiln_exe_info_get.
     * Tree functions get their output leaf paths here. */
    const char *const *result_names;
} kiln_lower_options;

/* Options with every field at its default (name "kiln", nothing donated). */
KILN_API kiln_lower_options kiln_lower_options_default(void);

/* KILN_LOWER_INFER_RESULTS as kiln_lower's n_results: as many results as fn stores. */
#define KILN_LOWER_INFER_RESULTS (-1)

/* Traces fn over n_args arguments of the given types into a module returning n_results
 * results (fn must store that many tensors; with KILN_LOWER_INFER_RESULTS, fn stores
 * results 0..k-1 for any k up to 4096, and the module has k: a NULL before the last one
 * stored is INVALID_ARGUMENT naming it). `options` may be NULL. On success
 * *out_module is a new module (kiln_module_release). Errors: INVALID_ARGUMENT (bad specs,
 * a NULL result, a result not made by the trace), whatever fn reports (its error is kept),
 * RESOURCE_EXHAUSTED (out of memory; regions and traces, kiln_grad's included, nested more
 * than 128 levels deep or deeper than the calling thread's stack has room for). */
KILN_API kiln_status kiln_lower(kiln_ctx *cx, const kiln_region *fn, const kiln_arg_spec *args,
                                int32_t n_args, int32_t n_results,
                                const kiln_lower_options *options, kiln_module **out_module);

/* A function over structs: `in` points to a struct of the input type whose tensor
 * members are traced tensors and whose static members hold the caller's values (other
 * members are copied from the caller's struct as they are, but are not part of the cache
 * key); the function stores tensors into every tensor member of the zero-filled struct
 * `out` (and may set its static members: the values stored while tracing are returned by
 * every call that uses that trace). Returns KILN_OK or an error, as a kiln_region. */
typedef kiln_status (*kiln_jit_fn)(kiln_ctx *cx, const void *in, void *out, void *user);

/* kiln_lower for a function of structs (a kiln_jit_fn, as kiln_jit_create_tree takes),
 * without a jit: traces fn on the leaves of `in` (a struct described by in_def; its
 * tensors give the argument types, its static members their values) into a module whose
 * arguments are in's leaves and whose results are the leaves of the out_def struct fn
 * fills, named by their paths ("params.w" ...; options->result_names, when set, instead).
 * On success *out_module is a new module (kiln_module_release); on error it is NULL.
 * Errors as kiln_lower's, and INVALID_ARGUMENT for a NULL or invalid descriptor or a NULL
 * leaf of `in` (naming its path). */
KILN_API kiln_status kiln_lower_tree(kiln_ctx *cx, kiln_jit_fn fn, void *user,
                                     const kiln_tree_def *in_def, const void *in,
                                     const kiln_tree_def *out_def,
                                     const kiln_lower_options *options, kiln_module **out_module);

/* Modules are refcounted: retain adds a reference (returns m; NULL for NULL), release drops
 * one and frees the module with the last (NULL is a no-op). Thread-safe counts; a module
 * must be released while its ctx's allocator is alive. */
KILN_API kiln_module *kiln_module_retain(kiln_module *m);
KILN_API void kiln_module_release(kiln_module *m);

/* The calling convention recorded by kiln_lower. Arrays are borrowed from the module. */
typedef struct kiln_module_info {
    int32_t n_args;
    int32_t n_results;
    const bool *donated;      /* per argument */
    const int32_t *preserved; /* per result: the argument returned unchanged, or -1 */
    const int32_t *aliases;   /* per result: the donated argument it may reuse, or -1 */
    int32_t n_ops;            /* ops in the entry function body (not counting regions) */
    /* The signature (JAX's in_avals and out_info): per argument its dtype, shape, name (its
     * leaf path, or kiln.path as parsed; NULL when it has none) and donation; per result
     * its dtype, shape and name (a tree function's output path, or jax.result_info as
     * parsed; NULL when none), donate false. */
    const kiln_arg_spec *args, *results;
    /* The grid of processes it was written for (mhlo.num_replicas, mhlo.num_partitions, as
     * JAX exports SPMD programs; 1 when not given): run it on a communicator of that grid
     * (kiln/spmd.h). */
    int32_t num_replicas, num_partitions;
} kiln_module_info;

/* Fills *out_info; its arrays are borrowed and live as long as the module (kiln_compile may
 * simplify the module in place, which changes n_ops). Errors: INVALID_ARGUMENT for a NULL
 * module or out_info. */
KILN_API kiln_status kiln_module_info_get(kiln_ctx *cx, const kiln_module *m,
                                          kiln_module_info *out_info);

/* StableHLO text, in the form JAX's lower(...).as_text() prints and stablehlo-opt reads:
 *
 *     module @kiln {
 *       // calling convention of @main: 2 arguments, 2 results
 *       //   donated arguments: %arg0
 *       //   preserved results (returned unchanged): result 1 = %arg1
 *       //   aliased results (may reuse a donated buffer): result 0 -> %arg0
 *       func.func public @main(%arg0: tensor<10x10xf32> {kiln.path = "x",
 *           tf.aliasing_output = 0 : i32}, %arg1: tensor<10x10xf32>) -> (...) {
 *         %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
 *         %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<10x10xf32>
 *         ...
 *         return %8, %arg1 : tensor<10x10xf32>, tensor<10x10xf32>
 *       }
 *     }
 *
 * (the signature is one line). Ops print in their pretty form where StableHLO has one and
 * in the generic form ("stablehlo.gather"(...) <{...}> : ...) otherwise; values are named
 * as MLIR names them (%argN, %N, %N:2 and %N#1, %cst and %c_N for constants). Arguments
 * carry their path (kiln.path) and donation as JAX marks it: tf.aliasing_output = r when
 * result r may reuse the buffer, jax.buffer_donor = true when none does. Constants print
 * exactly (floats read back to the same bits, NaN and infinities as hex bit patterns,
 * more than 100 elements as a hex blob). The region of a call becomes a private function
 * @callee_N after @main, called with func.call; values it uses from outside are passed as
 * extra arguments.
 *
 * kiln_module_to_string returns a NUL-terminated string, allocated through the ctx, to
 * free with kiln_string_free; NULL on error. kiln_module_print writes the same text to
 * `stream`. Errors: INVALID_ARGUMENT for a NULL module or stream (a NULL ctx returns
 * NULL / INVALID_ARGUMENT without recording), RESOURCE_EXHAUSTED (nothing is written),
 * UNAVAILABLE when writing fails. The module is only read: printing one module from
 * several threads, each with its own ctx, is safe. */
KILN_API char *kiln_module_to_string(kiln_ctx *cx, const kiln_module *m);
KILN_API kiln_status kiln_module_print(kiln_ctx *cx, const kiln_module *m, FILE *stream);

/* ---- compile and call ------------------------------------------------------------------ */

typedef struct kiln_exe kiln_exe;

typedef struct kiln_compile_options {
    size_t struct_size; /* sizeof(kiln_compile_options) */
    /* The device to compile for; type 0 (the default) means the compiling ctx's device.
     * One of the ctx's devices (kiln_device_count); a device type no backend runs on is
     * UNIMPLEMENTED, an id the ctx does not have INVALID_ARGUMENT. The executable runs
     * only on tensors of this device. */
    kiln_device device;
    /* Fail the compile (FAILED_PRECONDITION naming the result) unless every result reuses
     * a donated or preserved buffer, so that calls allocate no result memory. */
    bool assert_nonallocating;
    /* Do not evaluate small all-constant subexpressions at compile time: every op then runs
     * at call time through the buffer plan (the conformance runner's compiled mode). */
    bool disable_constant_folding;
    /* Skip the simplification passes (canonicalize, cse, unrolling, loop-invariant code
     * motion; dead code is still removed), so the executable runs exactly the traced ops. */
    bool disable_passes;
    /* Run every op on its own through the evaluator's kernels instead of grouping
     * elementwise ops, their broadcasts, transposes, slices and iotas, and reductions of
     * them into fused kernels (for comparisons and tests). */
    bool disable_fusion;
    /* The backend to compile with, by name (kiln/device.h lists them): NULL, the default,
     * means the preferred available backend for the device's type ("cpu" on CPU devices);
     * "interpreter" runs every op on its own through the evaluator, the reference for the
     * compiled backends. An unknown name is NOT_FOUND; an unavailable backend reports its
     * reason. A struct from an older kiln, without this field, takes the default. */
    const char *backend;
    /* Keep every while a loop. By default a loop that counts from a constant to a
     * constant (kiln_fori_loop, JAX's fori_loop) in at most 16 iterations, and whose copies
     * take at most 512 ops, becomes that many copies of its body, which fuse with each
     * other. Like the other passes, unrolling rewrites the module in place. A struct from an
     * older kiln, without this field, takes the default. */
    bool disable_unrolling;
    /* Keep every convolution's activations in their logical layout. By default the CPU
     * backend computes chains of convolutions, their bias and activation epilogues,
     * pooling and their gradients channels last ([N, H, W, C], what its convolution
     * library runs fastest), changing layout only at a chain's ends; the values the
     * program shows keep their logical layout and the results their bits. It rewrites the
     * module in place, as the passes do (and is skipped with them: disable_passes). A
     * struct from an older kiln, without this field, takes the default. */
    bool disable_layout_assignment;
} kiln_compile_options;

/* Options with every field at its default (the ctx's device; constant folding, passes and
 * fusion on). Pure; thread-safe. */
KILN_API kiln_compile_options kiln_compile_options_default(void);

/* Verifies the module, runs the passes (canonicalize, cse and dead-code elimination, in place
 * on the module; small ops whose operands are all constants are evaluated at compile time),
 * groups elementwise ops, their broadcasts, transposes, slices and iotas, and reductions of
 * them into fused kernels, in the entry function and in the bodies of loops and branches
 * alike (kiln_exe_print shows them), plans buffers and builds an executable. `options` may be NULL.
 * On success *out_exe is a new executable (kiln_exe_release) whose memory comes from cx's
 * allocator; the module may be released at once: the executable keeps copies of what it needs (it
 * shares the storage of the module's constants). The backend (options->backend, else the device's
 * preferred one) builds the executable; the description above is the "cpu" backend's, while
 * "interpreter" keeps the ops as they are and runs them one at a time.
 * Errors: INVALID_ARGUMENT (NULL arguments, options->struct_size, a device the ctx does not
 * have), UNIMPLEMENTED (a device type no backend runs on), NOT_FOUND (an unknown backend
 * name), UNAVAILABLE (a backend that cannot run here), INTERNAL (a module the verifier rejects),
 * FAILED_PRECONDITION (assert_nonallocating; a constant that was donated),
 * RESOURCE_EXHAUSTED. */
KILN_API kiln_status kiln_compile(kiln_ctx *cx, kiln_module *m, const kiln_compile_options *options,
                                  kiln_exe **out_exe);

/* Reference counting (atomic: thread-safe). The last release frees the executable; any
 * ctx may be gone by then, but the allocator of the ctx that compiled it must still work.
 * NULL is a no-op. */
KILN_API kiln_exe *kiln_exe_retain(kiln_exe *exe);
KILN_API void kiln_exe_release(kiln_exe *exe);

/* Runs the executable on args[0..n_args-1] (concrete tensors of the lowered dtypes and
 * shapes, on its device), storing n_results new tensors, owned by cx's innermost scope, in
 * out_results (all NULL on error). A result that returns an argument unchanged is a new
 * tensor sharing the argument's buffer (no copy).
 *
 * Donation: a donated argument's buffer receives the result aliased to it (no allocation)
 * when no other tensor shares that buffer; either way the argument is dead once the run
 * has begun (also when it then fails): any later use reports FAILED_PRECONDITION with
 * "tensor was donated to '<module name>' as '<argument name>'" (or "as args[i]").
 *
 * Results are on the executable's device; so are the tensors control flow and regions
 * make while it runs.
 *
 * Thread-safe for one exe across threads, each with its own ctx. Intermediates live in a
 * per-call arena planned at compile time and pooled in the executable: once it has served
 * as many concurrent calls before, a call allocates nothing but its results (and what
 * control flow and regions that are not builtins make as they run).
 * Errors: INVALID_ARGUMENT naming the argument position (args[i]: NULL, dtype, shape,
 * device; a tensor donated twice, or donated and also passed as another argument),
 * FAILED_PRECONDITION (args[i] is traced or dead), what a region or kernel reports,
 * RESOURCE_EXHAUSTED. */
KILN_API kiln_status kiln_exe_call(kiln_ctx *cx, kiln_exe *exe, kiln_tensor *const *args,
                                   kiln_tensor **out_results);

/* kiln_exe_call with the caller's counts checked against the executable's: a mismatch is
 * INVALID_ARGUMENT naming both counts. */
KILN_API kiln_status kiln_exe_call_n(kiln_ctx *cx, kiln_exe *exe, kiln_tensor *const *args,
                                     int32_t n_args, kiln_tensor **out_results, int32_t n_results);

/* What the compiler decided. Arrays are borrowed from the executable and live as long as
 * it does. */
/* What one call of an executable computes, summed over the ops it runs (as XLA's cost
 * analysis counts: a multiply-accumulate of dot_general or convolution is 2 flops, each
 * reduced element 1, each arithmetic element 1; exp, log, sin, tanh and the like count
 * as transcendentals instead; data movement costs bytes only). Bytes are what each op
 * or fused kernel reads and writes, so values kept inside a kernel cost nothing. A loop
 * kiln_fori_loop made counts its condition and body as many times as it iterates; the
 * bodies of other while loops and the branches of if and case are not counted (their trip
 * counts and branches are known only at run time). Sums saturate at INT64_MAX. */
typedef struct kiln_cost {
    int64_t flops;
    int64_t transcendentals;
    int64_t bytes_read;
    int64_t bytes_written;
} kiln_cost;

typedef struct kiln_exe_info {
    int32_t n_args, n_results;
    const int32_t *aliases;   /* per result: the donated argument whose buffer it reuses, or -1 */
    const int32_t *preserved; /* per result: the argument returned unchanged, or -1 */
    int32_t n_ops;            /* ops executed per call (after the passes; constants excluded) */
    /* The call's one arena: the intermediates of the function and of the bodies of its
     * loops, branches and calls (each body above the block around it), and the loops'
     * carry buffers. */
    size_t arena_bytes;
    int32_t n_buffers;        /* values and carry buffers placed in the arena */
    int32_t n_kernels;        /* fused kernels among the n_ops */
    int32_t n_fused_ops;      /* module ops those kernels replace */
    int32_t n_conv_epilogues; /* convolutions that add their bias and apply ReLU inside the
                                 convolution library call (counted in n_ops once) */
    const char *backend;      /* the backend that compiled it ("cpu", "interpreter", ...) */
    kiln_device device;       /* the device it runs on */
    /* Per argument: its dtype, shape, name and whether it is donated; per result: its
     * dtype, shape and name (as kiln_module_info has them; donate false). */
    const kiln_arg_spec *args, *results;
    kiln_cost cost; /* of one call */
    /* The native tier (kiln_ctx_options.native): distinct kernels getting native code, and
     * those whose code is there now, so that calls run it (with a background compiler
     * this grows after kiln_compile returns; results are the same either way). */
    int32_t n_native_kernels, n_native_ready;
} kiln_exe_info;

/* Fills *out_info (the native counts as they are now). Errors: INVALID_ARGUMENT for a NULL
 * argument (a NULL ctx returns it without recording). Thread-safe. */
KILN_API kiln_status kiln_exe_info_get(kiln_ctx *cx, const kiln_exe *exe, kiln_exe_info *out_info);

/* What the compiler built, as text: every op in call order (a fused kernel with its
 * inputs and their access patterns, its instructions, outputs, reduction, tile length and
 * cost; a loop's or branch's body under its op, indented, with its buffers and, for a
 * loop, how each carry is kept: updated in place, in two buffers, or passed through), the
 * memory plan (each intermediate's arena offset and size, the peak), how each result is
 * made, and the summed kernel cost (flops, transcendental calls, bytes read and written
 * per call; a loop's body as often as it runs when its trip count is known):
 *
 *     executable @kiln: 2 args, 1 results, 1 ops (1 fused kernels replacing 19 ops; ...)
 *     op 0: fused, tile 1024 elements, 0 instructions on the evaluator
 *       kernel #0 f32[10,10] (19 ops: add multiply add ...)
 *         in0 = contiguous %0 f32[10,10]
 *         in1 = scalar %3 f32[] = 2.000000e+00
 *         r2 = add in0, in1 : f32
 *     ...
 *
 * Values are numbered as in the executable (%<n>: arguments first, then op results in
 * order). The format is for people and goldens, not a stable interface.
 * kiln_exe_to_string returns a NUL-terminated string allocated through the ctx (free it
 * with kiln_string_free); NULL on error. kiln_exe_print writes the same text to `stream`.
 * Errors: INVALID_ARGUMENT for a NULL exe or stream (a NULL ctx returns NULL /
 * INVALID_ARGUMENT without recording), RESOURCE_EXHAUSTED (nothing is written), UNAVAILABLE
 * when writing fails. Thread-safe: the executable is only read. */
KILN_API char *kiln_exe_to_string(kiln_ctx *cx, const kiln_exe *exe);
KILN_API kiln_status kiln_exe_print(kiln_ctx *cx, const kiln_exe *exe, FILE *stream);

/* ---- jit cache ------------------------------------------------------------------------
 *
 * A kiln_jit wraps a function with a cache of executables keyed by the signature of its
 * arguments: every leaf's dtype and shape, the static scalars (kiln/tree.h), the tree
 * structure, and the device compiled for. A call whose signature is cached runs the cached
 * executable; any other call traces the function again (kiln_lower), compiles it
 * (kiln_compile), caches the result and runs it. With KILN_LOG=info (or a log callback at
 * that level) every compile is logged with the reason the cache missed:
 *
 *     train_step: arg 1 'y': shape [10,10] -> [20,10]; compiled specialization 2 in 0.31 ms
 *
 * The reason compares the call with the closest cached signature (the fewest differences;
 * with an empty cache, the last call's), and says when the signature was compiled before
 * and has left the cache since ("compiled before, and evicted since (... max_entries)",
 * "... kiln_jit_clear emptied the cache since").
 *
 * The function takes either a list of tensors (a kiln_region, as for kiln_lower) or C
 * structs described by tree descriptors:
 *
 *     typedef struct { kiln_tensor *w, *b; } dense;
 *     typedef struct { dense params; kiln_tensor *x; int n_steps; } step_in;
 *     typedef struct { dense params; kiln_tensor *loss; } step_out;
 *     KILN_TREE_DEF(dense, KILN_FIELD(dense, w), KILN_FIELD(dense, b));
 *     KILN_TREE_DEF(step_in, KILN_SUBTREE(step_in, params, dense), KILN_FIELD(step_in, x),
 *                   KILN_STATIC(step_in, n_steps));
 *     KILN_TREE_DEF(step_out, KILN_SUBTREE(step_out, params, dense),
 *                   KILN_FIELD(step_out, loss));
 *
 *     static kiln_status train_step(kiln_ctx *cx, const void *in_, void *out_, void *user) {
 *         const step_in *in = in_;    // traced tensors; n_steps is the caller's value
 *         step_out *out = out_;
 *         ...
 *         return kiln_ctx_status(cx);
 *     }
 *
 *     kiln_jit_options o = kiln_jit_options_default();
 *     o.name = "train_step";
 *     o.donate_paths = (const char *[]){"params"};    // reuse the parameters' buffers
 *     o.n_donate_paths = 1;
 *     kiln_jit *f;
 *     kiln_jit_create_tree(cx, train_step, NULL, &kiln_tree_def_step_in,
 *                          &kiln_tree_def_step_out, &o, &f);
 *     step_in in = {.params = p, .x = x, .n_steps = 3};
 *     step_out out;
 *     kiln_jit_call(cx, f, &in, &out);            // traces and compiles
 *     in.params = out.params;
 *     kiln_jit_call(cx, f, &in, &out);            // cached
 *     kiln_jit_release(f);
 *
 * With a list of tensors: kiln_jit_create(cx, &(kiln_region){step, NULL}, 2, 1, NULL, &f)
 * then kiln_jit_call_list(cx, f, (kiln_tensor *[]){x, y}, &r).
 *
 * The cache is bounded: least recently used entries are evicted beyond max_entries
 * executables or max_bytes bytes. An entry's size is an estimate: the executable's
 * intermediate arena (kiln_exe_info.arena_bytes) plus the bytes of the module's constants.
 * The entry a call just made or used is never evicted by that call, so a single entry
 * larger than max_bytes stays until the next one replaces it.
 *
 * Thread-safety: one kiln_jit may be called from several threads at once, each with its
 * own ctx (a mutex guards the cache; tracing and compiling run outside it, so two threads
 * missing on the same signature may both compile it, and one result is kept). The jit's
 * own memory comes from the allocator of the ctx that created it, and each executable's
 * from the allocator of the ctx whose call compiled it: those allocators must keep working
 * until the jit is released (the ctxs themselves may go), and be thread-safe when the jit
 * is shared.
 */

typedef struct kiln_jit kiln_jit;

typedef struct kiln_jit_options {
    size_t struct_size; /* sizeof(kiln_jit_options); set by kiln_jit_options_default */
    /* The function's name in logs, errors and the module (module @name). Copied.
     * Default "jit". */
    const char *name;
    /* List mode: n_in argument names (NULL, or NULL entries, for none), used like tree
     * paths in logs, errors, donate_paths and the printed module. Copied. */
    const char *const *arg_names;
    /* List mode (JAX's static_argnums): the arguments passed to the function as they are,
     * concrete, instead of traced, so that it may read their values (a step count, a
     * flag, a table of sizes); each one's dtype, shape and contents (at most 4096 bytes)
     * are part of the cache key, so another value compiles anew. They are not arguments
     * of the compiled program and cannot be donated. Copied; tree functions have
     * KILN_STATIC members instead. */
    const int32_t *static_argnums;
    int32_t n_static_argnums;
    /* Cache bounds; 0 means no bound. Defaults: 64 entries, no byte bound. */
    int32_t max_entries;
    size_t max_bytes;
    /* The most compiles over the jit's life (recompiles after eviction count too); one
     * more is FAILED_PRECONDITION naming the function, the limit and the miss reason.
     * 0 (the default): no limit. */
    int32_t max_specializations;
    /* Donation (kiln_arg_spec.donate): a donated argument's buffer may be reused for a
     * result, and the caller's tensor is dead after the call. `donate`: one flag per
     * argument of the lowered function (n_in in list mode, the leaf count of the input
     * descriptor in tree mode), or NULL; copied. `donate_paths`: leaf path prefixes
     * ("params" donates "params.w" and "params.b"; in list mode the arg_names), each of
     * which must match some argument; copied. `donate_all`: Reactant's :auto, donate every
     * argument that the function does not return unchanged. */
    const bool *donate;
    const char *const *donate_paths;
    int32_t n_donate_paths;
    bool donate_all;
    /* Passed to kiln_compile (copied); NULL for its defaults. The device compiled for
     * (this one's, or the calling ctx's when it has none) is part of the cache key. Every
     * entry compiles with one backend: the one named here, else the default backend of the
     * ctx that creates the jit (kiln_ctx_options.backend, KILN_BACKEND). */
    const kiln_compile_options *compile;
} kiln_jit_options;

/* Options with every field at its default (see the fields). */
KILN_API kiln_jit_options kiln_jit_options_default(void);

/* Creates a jit over a list-of-tensors function taking n_in arguments and returning n_out
 * results (0..4096 each). `fn` is copied; `options` may be NULL. *out_jit is a new jit
 * (kiln_jit_release). Errors: INVALID_ARGUMENT (NULL fn or out_jit, counts, options:
 * struct_size, negative bounds, a donate path matching no argument), RESOURCE_EXHAUSTED. */
KILN_API kiln_status kiln_jit_create(kiln_ctx *cx, const kiln_region *fn, int32_t n_in,
                                     int32_t n_out, const kiln_jit_options *options,
                                     kiln_jit **out_jit);

/* Creates a jit over a function of structs described by in_def and out_def (checked, and
 * borrowed: they must outlive the jit; KILN_TREE_DEF's are static). Errors as for
 * kiln_jit_create, and INVALID_ARGUMENT for a NULL or invalid descriptor. */
KILN_API kiln_status kiln_jit_create_tree(kiln_ctx *cx, kiln_jit_fn fn, void *user,
                                          const kiln_tree_def *in_def, const kiln_tree_def *out_def,
                                          const kiln_jit_options *options, kiln_jit **out_jit);

/* Reference counting (atomic: thread-safe). kiln_jit_retain returns f. The last release
 * frees the cache and its executables. NULL is a no-op for both. */
KILN_API kiln_jit *kiln_jit_retain(kiln_jit *f);
KILN_API void kiln_jit_release(kiln_jit *f);

/* Calls the function: `in` points to the input struct (tree mode) or to an array of n_in
 * tensors (list mode), of concrete tensors; `out` to the output struct or an array of
 * n_out tensor pointers, whose tensor members receive new tensors owned by cx's innermost
 * scope (NULL on error). `out` may be `in` (a step whose input and output types agree:
 * the leaves are read first). Donated arguments are dead afterwards. Errors name the leaf:
 * INVALID_ARGUMENT (`train_step: arg 1 'params.b' is NULL`, what kiln_exe_call reports),
 * FAILED_PRECONDITION (a traced or dead leaf, a call while tracing, the specialization
 * limit), what the function or kiln_lower / kiln_compile report, RESOURCE_EXHAUSTED.
 * Thread-safe for one jit across threads, each with its own ctx. */
KILN_API kiln_status kiln_jit_call(kiln_ctx *cx, kiln_jit *f, const void *in, void *out);

/* kiln_jit_call for a jit made by kiln_jit_create, with the list typed. */
KILN_API kiln_status kiln_jit_call_list(kiln_ctx *cx, kiln_jit *f, kiln_tensor *const *args,
                                        kiln_tensor **out_results);

/* Traces the function for the signature of `in` (as for kiln_jit_call; the tensors'
 * values are not read) into a new module, with the jit's names, argument paths and
 * donation, without compiling or touching the cache: to print it or read its calling
 * convention. Errors as for kiln_jit_call. */
KILN_API kiln_status kiln_jit_lower(kiln_ctx *cx, kiln_jit *f, const void *in,
                                    kiln_module **out_module);

/* The executable the most recent call (on any thread) found in the cache or compiled, as
 * a new reference (kiln_exe_release), or NULL before the first one: to read its
 * kiln_exe_info (which results reuse donated buffers). Thread-safe. */
KILN_API kiln_exe *kiln_jit_last_exe(kiln_jit *f);

typedef struct kiln_jit_stats {
    int64_t hits;       /* calls that found their signature cached */
    int64_t misses;     /* calls that did not (a failed trace or compile counts) */
    int64_t compiles;   /* executables made and cached */
    int64_t evictions;  /* entries evicted by the bounds (not by kiln_jit_clear) */
    int64_t compile_ns; /* time spent tracing and compiling, summed */
    int32_t entries;    /* cached executables now */
    size_t bytes;       /* their estimated size now */
} kiln_jit_stats;

/* The jit's counters. Errors: INVALID_ARGUMENT for a NULL argument. Thread-safe. */
KILN_API kiln_status kiln_jit_stats_get(kiln_ctx *cx, kiln_jit *f, kiln_jit_stats *out_stats);

/* Empties the cache (the counters stay). NULL is a no-op. Thread-safe. */
KILN_API void kiln_jit_clear(kiln_jit *f);

#ifdef __cplusplus
}
#endif

#endif
