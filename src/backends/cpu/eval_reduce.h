/* Internals shared by the reduction kernels (reduce, reduce_window, select_and_scatter)
 * and their builders: the tags of kiln_argmax's internal regions, calling a region on
 * rank-0 values, and the typed combiners behind the builtin regions' fast paths. */
#ifndef KILN_BACKENDS_CPU_EVAL_REDUCE_H
#define KILN_BACKENDS_CPU_EVAL_REDUCE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backends/cpu/eval.h"
#include "core/half.h"

/* The `user` of the regions that kiln_argmax and kiln_argmin reduce with: a two-input
 * reduce of (values, i64 indices along the one reduced dimension) keeping the first
 * maximum (minimum); NaN counts as the extreme. The reduce kernel recognises these tags
 * and runs without calling back; the index operand must then be the iota along the
 * reduced dimension (the builders make it so). */
extern const int kiln__argmax_tag;
extern const int kiln__argmin_tag;

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
    unsigned char *values; /* the results' values, 8 bytes each, between call and copy */
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

#endif
