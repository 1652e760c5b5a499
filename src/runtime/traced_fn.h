/* SPDX-License-Identifier: Apache-2.0 */
/* A user's function traced for a transformation (kiln_vjp, kiln_jvp, kiln_grad,
 * kiln_vmap), and running what the transformation made of it.
 *
 * Eagerly the function is the entry of a module of its own. Inside a trace it is a block
 * nested in the current one (under a placeholder op, removed again by
 * kiln__traced_fn_fini), so that the function may use tensors of the enclosing trace:
 * those values (`fv`) become extra arguments of the transformed function, and the inlined
 * result uses them directly. */
#ifndef KILN_RUNTIME_TRACED_FN_H
#define KILN_RUNTIME_TRACED_FN_H

#include "frontend/trace.h"
#include "ir/ir.h"

/* The most values of an enclosing trace a traced function may use. */
#define KILN__TRACED_FN_MAX_VALUES 4096

typedef struct kiln__traced_fn {
    kiln_ctx *cx;
    kiln_module *own;       /* eager: the module (released by kiln__traced_fn_fini) */
    kiln__func func;        /* the function traced */
    kiln__ir_op *holder;    /* traced: the placeholder in the enclosing block */
    const kiln__value **fv; /* traced: the enclosing trace's values the function uses */
    int32_t n_fv;
} kiln__traced_fn;

/* INVALID_ARGUMENT naming fn unless 0 <= n_in, n_out <= KILN__TRACED_FN_MAX_VALUES. */
kiln_status kiln__traced_fn_check_counts(kiln_ctx *cx, const char *fn, int32_t n_in, int32_t n_out);
/* Sets body's results to the traced values of the function's outputs outs[0..n), through
 * values (n entries): INVALID_ARGUMENT naming the first output it left NULL. */
kiln_status kiln__traced_fn_results(kiln_ctx *cx, const char *fn, kiln_module *m,
                                    kiln__block *body, kiln_tensor *const *outs,
                                    kiln__value **values, int32_t n);
/* The function f (a region with a callback) and its n arguments `args` (named `what` in
 * messages), none NULL; else INVALID_ARGUMENT naming the first missing. */
kiln_status kiln__traced_fn_check_args(kiln_ctx *cx, const char *fn, const kiln_region *f,
                                       const char *what, kiln_tensor *const *args, int32_t n);
/* The tensors ts[0..n) (named `what` in messages), none NULL. */
kiln_status kiln__traced_fn_check_tensors(kiln_ctx *cx, const char *fn, const char *what,
                                          kiln_tensor *const *ts, int32_t n);
/* The first checks of a transform's entry point, in order: a context (else
 * INVALID_ARGUMENT) with no error recorded, the counts (check_counts), and its output array
 * `out` (n entries, named out_name in messages) not NULL, then cleared. */
kiln_status kiln__traced_fn_begin(kiln_ctx *cx, const char *fn, int32_t n_in, int32_t n_out,
                                  const char *out_name, kiln_tensor **out, int32_t n);

/* Traces f (n_in arguments of the given types, n_out results) into *out: a module of its
 * own when cx is not tracing, else a block nested in the current trace. On error *out is
 * empty (safe to fini) and the error is recorded. */
kiln_status kiln__traced_fn_trace(kiln_ctx *cx, const char *fn, const kiln_region *f, int32_t n_in,
                                  const kiln__type *types, int32_t n_out, kiln__traced_fn *out);
void kiln__traced_fn_fini(kiln__traced_fn *src);

/* Runs dst's entry (a transformation of src) on args, writing its n_results results (new
 * tensors in the current scope): eagerly compiled (through the ctx's cache of eager
 * transformations) and called, inside a trace inlined into the current block. dst's
 * arguments are args[0..n_lead), then src's fv, then the rest of args. */
kiln_status kiln__traced_fn_run(kiln_ctx *cx, const char *fn, kiln_module *dst,
                                kiln_tensor *const *args, int32_t n_args,
                                const kiln__traced_fn *src, int32_t n_lead, kiln_tensor **results,
                                int32_t n_results);

#endif
