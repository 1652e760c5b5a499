/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/ops.h: the op builders.
 *
 * kiln's ops are StableHLO's, with StableHLO's semantics (its docs/spec.md), including its
 * edge cases: maximum/minimum propagate NaN and order -0 < +0, integer division by zero
 * gives -1, float->int convert saturates, gather clamps indices, scatter skips
 * out-of-bounds updates, and so on. Each builder validates shapes, dtypes and attributes
 * as the spec's constraints say and reports INVALID_ARGUMENT with a message naming the
 * builder and the operand (`kiln_add: operand 2 has shape [3,5]; expected [3,4] or a shape
 * that broadcasts with it`).
 *
 * Builders follow the tensor conventions (kiln/tensor.h): results belong to the innermost
 * scope; on error they return NULL and leave a sticky error in the ctx; a NULL operand
 * gives NULL without touching the first error. So math chains and is checked once:
 *
 *     kiln_tensor *y = kiln_add(cx, kiln_multiply(cx, a, x), b);     // a*x + b
 *     kiln_tensor *s = kiln_sum(cx, kiln_exponential(cx, y), KILN_DIMS(1), false);
 *     if (kiln_ctx_status(cx) != KILN_OK) fprintf(stderr, "%s\n", kiln_ctx_error_message(cx));
 *
 * With concrete operands a builder runs at once (eager mode). f16 and bf16 are storage
 * types: arithmetic is done in f32 and rounded to nearest even once per op.
 *
 * Ops with regions (reduce, sort, scatter, reduce_window, select_and_scatter, while, if,
 * case) take their region as a C callback over tensors (kiln_region). Eagerly the callback
 * runs on concrete tensors; the builtin regions (kiln_region_add() and friends) let the
 * evaluator use a fast path instead of calling back per element.
 *
 * The families of builders are declared in the headers included at the end of this one.
 */
#ifndef KILN_OPS_H
#define KILN_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln/ctx.h"
#include "kiln/export.h"
#include "kiln/shape.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A list of dimension numbers or sizes (at most KILN_MAX_RANK), by value. */
typedef struct kiln_dims {
    int32_t count;
    int64_t v[KILN_MAX_RANK];
} kiln_dims;

/* KILN_DIMS(0, 2): a list of one or more values. KILN_DIMS_NONE: the empty list. */
#define KILN_DIMS(...)                                                                   \
    ((kiln_dims){.count = (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                 .v = {__VA_ARGS__}})
#define KILN_DIMS_NONE ((kiln_dims){.count = 0})

/* A region: `fn` computes results from args with kiln builders (it may use any builder,
 * including nested regions) and stores them in results[0..n_results-1]; it returns KILN_OK
 * or an error status (after recording a message with kiln_ctx_set_error or through a failed
 * builder). The number and types of args and results are fixed by the op using the region
 * (each op's comment says). Tensors the callback makes are released by the caller. */
typedef kiln_status (*kiln_region_fn)(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                                      void *user);

typedef struct kiln_region {
    kiln_region_fn fn;
    void *user; /* passed to fn */
} kiln_region;

/* Builtin two-argument, one-result regions for reduce, reduce_window, scatter and
 * select_and_scatter, which the evaluator recognises and runs without calling back:
 * add (or on i1), multiply (and on i1), maximum, minimum, and, or; and for sort and
 * select_and_scatter's select, the comparisons (FLOAT/SIGNED/UNSIGNED by dtype).
 * "replace" returns its second argument (scatter that overwrites). Static; thread-safe. */
KILN_API const kiln_region *kiln_region_add(void);
KILN_API const kiln_region *kiln_region_multiply(void);
KILN_API const kiln_region *kiln_region_maximum(void);
KILN_API const kiln_region *kiln_region_minimum(void);
KILN_API const kiln_region *kiln_region_and(void);
KILN_API const kiln_region *kiln_region_or(void);
KILN_API const kiln_region *kiln_region_replace(void);
KILN_API const kiln_region *kiln_region_less(void);    /* a < b: ascending sort */
KILN_API const kiln_region *kiln_region_greater(void); /* a > b: descending sort */
KILN_API const kiln_region *kiln_region_greater_equal(void);
KILN_API const kiln_region *kiln_region_less_equal(void);

/* A tensor of x's dtype holding `value` (rank 0): a typed scalar to combine with x,
 * which binary builders broadcast: kiln_multiply(cx, kiln_scalar_like(cx, x, 2), x). */
KILN_API kiln_tensor *kiln_scalar_like(kiln_ctx *cx, kiln_tensor *x, double value);

#ifdef __cplusplus
}
#endif

#include "kiln/ops_control.h"
#include "kiln/ops_elementwise.h"
#include "kiln/ops_indexing.h"
#include "kiln/ops_linalg.h"
#include "kiln/ops_movement.h"
#include "kiln/ops_reduce.h"

#endif
