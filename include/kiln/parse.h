/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/parse.h: reading StableHLO text into a module.
 *
 * Programs exported from JAX (`jax.jit(f).lower(...).as_text()`), from Reactant.jl or from
 * kiln's own printer load, verify, compile and run:
 *
 *     kiln_module *m;
 *     if (kiln_module_parse_file(cx, "model.mlir", NULL, &m) != KILN_OK) {
 *         fprintf(stderr, "%s\n", kiln_ctx_error_message(cx));   // model.mlir:3:7: error: ...
 *         return 1;
 *     }
 *     kiln_exe *exe;
 *     kiln_compile(cx, m, NULL, &exe);
 *
 * Both the pretty forms of the ops and MLIR's generic form are read, with `stablehlo.` and
 * `func.` spellings, `module @name attributes {...}` wrappers, argument and result
 * attributes (kept: kiln.path, jax.buffer_donor, tf.aliasing_output; others ignored),
 * `func.call`, regions, `//` comments. Errors read as MLIR prints them:
 * `FILE:LINE:COL: error: message`, recorded in the ctx as INVALID_ARGUMENT. Malformed text
 * is an error, never a crash, a hang or an out-of-bounds read.
 *
 * The entry function is @main, or the only function; kiln_parse_options.entry picks
 * another. Other functions are reachable through func.call.
 */
#ifndef KILN_PARSE_H
#define KILN_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/jit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_parse_options {
    size_t struct_size;   /* sizeof(kiln_parse_options) */
    const char *filename; /* for messages (default "<text>") */
    int32_t first_line;   /* line number of the text's first line (default 1), for chunks */
    const char *entry;    /* entry function name (default: main, or the only function) */
    /* Accept the StableHLO interpreter's check dialect (check.expect_eq, ...): each check
     * becomes an extra result of the entry function and an entry of kiln_module_checks. */
    bool allow_checks;
} kiln_parse_options;

/* Options with every field at its default (filename "<text>", first line 1, entry @main
 * or the only function, no checks). */
KILN_API kiln_parse_options kiln_parse_options_default(void);

/* Parses `length` bytes of text (need not be NUL-terminated) into a new module
 * (kiln_module_release). `options` may be NULL. Regions, lists and attributes nest at most
 * 160 levels deep, above tracing's 128, so every module kiln prints reads back (deeper is
 * INVALID_ARGUMENT, "nesting too deep"); parsing uses a few KiB of stack per level and runs
 * on small thread stacks (a 128 KiB one), where nesting that does not fit is the same error
 * ("for this thread's stack"), not a crash. A literal is checked against its type before
 * memory for it is taken. */
KILN_API kiln_status kiln_module_parse(kiln_ctx *cx, const char *text, size_t length,
                                       const kiln_parse_options *options, kiln_module **out_module);

/* Reads and parses a file; options->filename defaults to the path. Only a regular file is
 * read (a FIFO or a device is INVALID_ARGUMENT, "<path>: not a regular file"). Errors
 * besides kiln_module_parse's: NOT_FOUND (no such file), PERMISSION_DENIED, UNAVAILABLE
 * (a read error), each naming the path; RESOURCE_EXHAUSTED. */
KILN_API kiln_status kiln_module_parse_file(kiln_ctx *cx, const char *path,
                                            const kiln_parse_options *options,
                                            kiln_module **out_module);

/* ---- the check dialect (allow_checks) ------------------------------------------------- */

typedef enum kiln_check_kind {
    KILN_CHECK_EQ,        /* exact: floats with IEEE ==, so -0 == +0 and NaN never equal */
    KILN_CHECK_ALMOST_EQ, /* |a - b| <= tolerance (default 1e-4), NaN matches NaN, inf exact */
    KILN_CHECK_CLOSE,     /* ULP distance within [min_ulp, max_ulp] (default max 1) */
} kiln_check_kind;

typedef struct kiln_check {
    kiln_check_kind kind;
    int32_t result;              /* the entry function's result holding the checked value */
    int32_t expected_result;     /* the result holding the expected value (check.expect_eq),
                                    or -1 when `expected` is a constant */
    const kiln_tensor *expected; /* the constant (borrowed from the module), or NULL */
    double tolerance;
    int64_t max_ulp, min_ulp;
    int32_t line; /* source line of the check, for reports */
} kiln_check;

/* The checks a module parsed with allow_checks holds (borrowed; n 0 when none). */
KILN_API kiln_status kiln_module_checks(kiln_ctx *cx, const kiln_module *m,
                                        const kiln_check **out_checks, int32_t *out_n);

/* Compares one check's values (the exe's results) as the StableHLO interpreter does.
 * Returns KILN_OK when it holds; otherwise FAILED_PRECONDITION with "index i: got x,
 * expected y" (the first mismatch) in the ctx. */
KILN_API kiln_status kiln_check_evaluate(kiln_ctx *cx, const kiln_check *check,
                                         const kiln_tensor *value, const kiln_tensor *expected);

#ifdef __cplusplus
}
#endif

#endif
