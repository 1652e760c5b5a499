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
} kiln_lower_options;

KILN_API kiln_lower_options kiln_lower_options_default(void);

/* Traces fn over n_args arguments of the given types into a module returning n_results
 * results (fn must store that many tensors). `options` may be NULL. On success
 * *out_module is a new module (kiln_module_release). Errors: INVALID_ARGUMENT (bad specs,
 * a NULL result, a result not made by the trace), whatever fn reports (its error is kept),
 * RESOURCE_EXHAUSTED. */
KILN_API kiln_status kiln_lower(kiln_ctx *cx, const kiln_region *fn, const kiln_arg_spec *args,
                                int32_t n_args, int32_t n_results,
                                const kiln_lower_options *options, kiln_module **out_module);

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
} kiln_module_info;

KILN_API kiln_status kiln_module_info_get(kiln_ctx *cx, const kiln_module *m,
                                          kiln_module_info *out_info);

/* StableHLO text, in the form JAX prints (module @name { func.func public @main(...) }),
 * with the calling convention as comments. kiln_module_to_string returns a string to free
 * with kiln_string_free. */
KILN_API char *kiln_module_to_string(kiln_ctx *cx, const kiln_module *m);
KILN_API kiln_status kiln_module_print(kiln_ctx *cx, const kiln_module *m, FILE *stream);

/* ---- compile and call ------------------------------------------------------------------ */

typedef struct kiln_exe kiln_exe;

typedef struct kiln_compile_options {
    size_t struct_size;        /* sizeof(kiln_compile_options) */
    kiln_device device;        /* default: the ctx's device */
    bool assert_nonallocating; /* fail unless every result reuses a donated or preserved buffer */
} kiln_compile_options;

KILN_API kiln_compile_options kiln_compile_options_default(void);

/* Verifies the module, runs the passes (dead-code elimination for now), plans buffers
 * and builds an executable (kiln_exe_release). `options` may be NULL. The module may be
 * released afterwards: the executable keeps what it needs. */
KILN_API kiln_status kiln_compile(kiln_ctx *cx, kiln_module *m, const kiln_compile_options *options,
                                  kiln_exe **out_exe);

KILN_API kiln_exe *kiln_exe_retain(kiln_exe *exe);
KILN_API void kiln_exe_release(kiln_exe *exe);

/* Runs the executable on args[0..n_args-1] (concrete tensors matching the lowered types),
 * storing n_results new tensors, owned by cx's innermost scope, in out_results. Donated
 * arguments are dead afterwards: any later use reports FAILED_PRECONDITION naming the
 * function and the argument. Thread-safe for one exe across threads, each with its own
 * ctx. Errors: INVALID_ARGUMENT naming the argument position (count, dtype, shape, a traced
 * or dead tensor, a tensor donated twice), RESOURCE_EXHAUSTED. */
KILN_API kiln_status kiln_exe_call(kiln_ctx *cx, kiln_exe *exe, kiln_tensor *const *args,
                                   kiln_tensor **out_results);

/* What the compiler decided. Arrays are borrowed from the executable. */
typedef struct kiln_exe_info {
    int32_t n_args, n_results;
    const int32_t *aliases;   /* per result: the donated argument whose buffer it reuses, or -1 */
    const int32_t *preserved; /* per result: the argument returned unchanged, or -1 */
    int32_t n_ops;            /* ops executed per call (after the passes) */
    size_t arena_bytes;       /* peak size of the buffer plan for intermediates */
    int32_t n_buffers;        /* intermediate buffers in the plan */
} kiln_exe_info;

KILN_API kiln_status kiln_exe_info_get(kiln_ctx *cx, const kiln_exe *exe, kiln_exe_info *out_info);

#ifdef __cplusplus
}
#endif

#endif
