/* SPDX-License-Identifier: Apache-2.0 */
/* Internals shared by the reduction kernels (reduce, reduce_window, select_and_scatter)
 * and their builders: the tags of kiln_argmax's internal regions, calling a region on
 * rank-0 values, the typed combiners behind the builtin regions' fast paths, and the
 * vectorized, multi-threaded f32/f64 reductions of contiguous buffers (kiln__reduce_f32/f64)
 * that the reduce kernel and the fused-kernel engine share. */
#ifndef KILN_BACKENDS_CPU_EVAL_REDUCE_H
#define KILN_BACKENDS_CPU_EVAL_REDUCE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backends/cpu/eval/eval.h"
#include "core/half.h"

/* ---- calling a region on rank-0 values ------------------------------------------------ */

/* A region called over and over with rank-0 arguments, each call checked: every result
 * must be a rank-0 tensor of the expected dtype. */
typedef struct kiln__scalar_region {
    kiln_ctx *cx;
    const kiln_region *region;
    char what[96]; /* "kiln_reduce: region", for messages */
    int n_args, n_results;
    kiln_tensor **args;    /* n_args rank-0 tensors, filled by the caller */
    kiln_tensor **results; /* scratch */
    kiln_dtype *result_dtypes;
    size_t *result_sizes;
    unsigned char *values; /* the results' values, 16 bytes each, between call and copy */
    void *block;           /* the allocation behind the arrays */
    size_t block_bytes;
} kiln__scalar_region;

/* Prepares the arguments (rank-0 tensors of arg_dtypes) of `region`; `fn` and `role`
 * name it in messages ("kiln_reduce", "region"). Records RESOURCE_EXHAUSTED on failure.
 * kiln__scalar_region_fini must follow either way. */
kiln_status kiln__scalar_region_init(kiln__scalar_region *s, kiln_ctx *cx,
                                     const kiln_region *region, const char *fn, const char *role,
                                     const kiln_dtype *arg_dtypes, int n_args,
                                     const kiln_dtype *result_dtypes, int n_results);

/* The element of argument i (writable; valid until the next call). */
void *kiln__scalar_region_arg(kiln__scalar_region *s, int i);

/* Calls the region on the arguments. Result i is copied to dst[i], or to argument i when
 * dst is NULL (the accumulators come first). Errors are recorded in cx. */
kiln_status kiln__scalar_region_call(kiln__scalar_region *s, void *const *dst);

void kiln__scalar_region_fini(kiln__scalar_region *s);

/* The region of a reduction of n operands (reduce, reduce_window): 2n arguments, the n
 * accumulators then the n elements, and n results, all of the operands' dtypes. */
kiln_status kiln__reducer_region_init(kiln__scalar_region *s, kiln_ctx *cx,
                                      const kiln__attrs *attrs, kiln_tensor *const *operands,
                                      int n, const char *fn);

/* ---- typed combiners ------------------------------------------------------------------ */

/* The dtype a builtin region's fast path computes in: f32 for f16 and bf16, the dtype
 * itself otherwise. */
static inline kiln_dtype kiln__acc_dtype(kiln_dtype dtype) {
    return dtype == KILN_F16 || dtype == KILN_BF16 ? KILN_F32 : dtype;
}

/* The region kinds with a typed fast path on `dtype` (and, or: not on floats). On bool,
 * add is or, multiply is and, maximum is or and minimum is and. */
bool kiln__fast_kind(kiln__region_kind kind, kiln_dtype dtype);

/* Rejects a builtin region (two arguments, one result) for a reduction of n > 1 inputs,
 * recording INVALID_ARGUMENT naming `fn`. */
kiln_status kiln__check_builtin_arity(kiln_ctx *cx, const char *fn, const kiln_region *region,
                                      int n);

/* dst[0..n) = op(dst, src) elementwise, both of kiln__acc_dtype(dtype), for a kind that
 * kiln__fast_kind accepts. With src_stride 0, src is one value combined into every dst. */
void kiln__combine(kiln__region_kind kind, kiln_dtype dtype, void *dst, const void *src, int64_t n,
                   int64_t src_stride);

/* Converts n elements of `dtype` to kiln__acc_dtype(dtype) (a copy unless f16/bf16). */
void kiln__to_acc(kiln_dtype dtype, const void *src, void *dst, int64_t n);
/* Converts back, rounding once for f16 and bf16. */
void kiln__from_acc(kiln_dtype dtype, const void *src, void *dst, int64_t n);

/* dst[i] = value for i < n, elements of `size` bytes. */
void kiln__fill_elements(void *dst, const void *value, size_t size, int64_t n);

/* How a reduce walks a row-major operand of shape x over `dims`: the kept dimensions
 * (kdim, kstride: the outputs in row-major order) and the reduced ones (rdim, rstride: each
 * output's elements in row-major order), and the count of reduced elements. */
typedef struct kiln__reduce_walk {
    int nk, nr;
    int64_t kdim[KILN_MAX_RANK], kstride[KILN_MAX_RANK];
    int64_t rdim[KILN_MAX_RANK], rstride[KILN_MAX_RANK];
    int64_t n_red;
} kiln__reduce_walk;
void kiln__reduce_walk_init(kiln__reduce_walk *w, const kiln_shape *x, const kiln_dims *dims);

/* ---- contiguous f32/f64 reductions (the evaluator's and the fused-kernel engine's) ----- */

/* Reduces a contiguous row-major buffer viewed as [outer, n_reduced, inner] over its middle
 * axis into out, [outer, inner]:
 *     out[o * inner + i] = op over r < n_reduced of x[(o * n_reduced + r) * inner + i]
 * inner == 1 reduces along the innermost axis, outer == 1 along the outer axes, and
 * outer == inner == 1 over everything (out is then one element). `kind` is one of
 * KILN_REGION_ADD, _MULTIPLY, _MAXIMUM, _MINIMUM; no init value is combined (the caller
 * combines one, once, if it has one): n_reduced == 0 gives the identity (-0 for add, 1,
 * -inf for maximum, +inf for minimum). Semantics are the reduce kernel's, bit for bit:
 * sums are pairwise (along a run: numpy's blocks of 128 with 8 accumulators, halves above
 * that; across rows: blocks of 16 rows combined as a binary counter), products in 8 lanes
 * over blocks of 65536 elements (the blocks' products multiplied in order; rows in order),
 * maximum/minimum propagate NaN and order -0 < +0. With `parallel`, the work is
 * split with kiln__parallel_for; partial results are combined in a fixed order, so the
 * result is bitwise the same for every thread count (and the same as with !parallel); pass
 * false when already running inside a parallel range. out must not overlap x. Returns
 * false, doing nothing, for another kind or a negative size; true otherwise. Allocates
 * nothing (scratch lives on the stack: up to 256 KiB); thread-safe. */
bool kiln__reduce_f32(kiln__region_kind kind, const float *x, int64_t outer, int64_t n_reduced,
                      int64_t inner, float *out, bool parallel);
bool kiln__reduce_f64(kiln__region_kind kind, const double *x, int64_t outer, int64_t n_reduced,
                      int64_t inner, double *out, bool parallel);

/* Tests only: with true, the kernels above take their baseline-ISA variant even where AVX2
 * is available (both give bitwise the same results; this lets a test check it). Process-wide,
 * thread-safe; false restores the default. */
void kiln__reduce_force_baseline(bool on);

/* Tests only: sums along runs of inputs over `bytes` read their tree's leaves one at a time
 * instead of four at once (the default limit is the last-level cache's size; both ways
 * give bitwise the same results). Process-wide, thread-safe; 0 restores the default. */
void kiln__reduce_set_interleave_limit(int64_t bytes);

#endif
