/* Shared pieces of the contraction kernels (eval_dot.c, eval_conv.c).
 *
 * StableHLO converts dot_general and convolution operands to the result type before
 * multiplying. The kernels do that once per operand into the result's "compute
 * representation", then multiply there:
 *   - f32, f64: the same type (GEMM through OpenBLAS);
 *   - f16, bf16: f32 holding the operand values rounded to the result type (sgemm, one
 *     rounding of each result element at the end);
 *   - integers: the unsigned type of the result's width (wrapping arithmetic without UB;
 *     the bits are the result's);
 *   - bool (i1): uint8 0/1 with AND as multiply and OR as add.
 */
#ifndef KILN_BACKENDS_CPU_EVAL_LINALG_H
#define KILN_BACKENDS_CPU_EVAL_LINALG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/dtype.h"

typedef enum kiln__lk {
    KILN__LK_BOOL,
    KILN__LK_U8,
    KILN__LK_U16,
    KILN__LK_U32,
    KILN__LK_U64,
    KILN__LK_F32,
    KILN__LK_F64,
} kiln__lk;

/* The compute representation of a result dtype, and its element size. */
kiln__lk kiln__lk_of(kiln_dtype result);
size_t kiln__lk_size(kiln__lk k);

/* True when data of dtype `src` already is the compute representation of `result`. */
bool kiln__lk_same_repr(kiln_dtype src, kiln_dtype result);

/* dst[i] = src[i] (n elements of dtype src_dtype) converted to `result` (as StableHLO's
 * convert does: integers wrap, floats round to nearest even, float -> integer saturates
 * and maps NaN to 0, anything -> i1 is != 0), stored in the compute representation. */
void kiln__lk_convert(void *dst, kiln_dtype result, const void *src, kiln_dtype src_dtype,
                      int64_t n);

/* Writes n compute-representation elements as `result` elements (rounds f32 to f16/bf16;
 * a copy otherwise). dst and src may be the same pointer. */
void kiln__lk_store(void *dst, kiln_dtype result, const void *src, int64_t n);

/* dst (contiguous, row-major) = src transposed: dst dimension i is src dimension perm[i].
 * elem is 1, 2, 4 or 8 bytes. */
void kiln__lk_transpose(void *dst, const void *src, size_t elem, int32_t rank, const int64_t *shape,
                        const int32_t *perm);

/* True when permuting a tensor of `shape` by `perm` does not move any element (the
 * dimensions of size > 1 stay in order). */
bool kiln__lk_perm_is_trivial(int32_t rank, const int64_t *shape, const int32_t *perm);

/* C[m x n] = op(A) x op(B) in the compute representation `k`, row-major, where op(A) is
 * A [m x kk] (lda) or, with trans_a, the transpose of A [kk x m] (lda); likewise B.
 * f32/f64 go to OpenBLAS; the others (and sizes beyond BLAS's int) use typed loops. */
void kiln__lk_gemm(kiln__lk k, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t kk,
                   const void *a, int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc);

#endif
