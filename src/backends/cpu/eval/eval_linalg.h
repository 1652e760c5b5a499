/* SPDX-License-Identifier: Apache-2.0 */
/* Shared pieces of the contraction kernels (eval_dot.c, eval_conv.c).
 *
 * StableHLO converts dot_general and convolution operands to the result type before
 * multiplying. The kernels do that once per operand into the result's "compute
 * representation", then multiply there:
 *   - f32, f64, complex<f32>, complex<f64>: the same type (GEMM through OpenBLAS; complex
 *     products never conjugate);
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
#include "kiln/tensor.h"
#include "ops/attrs.h"
#include "ops/infer.h"

typedef enum kiln__lk {
    KILN__LK_BOOL,
    KILN__LK_U8,
    KILN__LK_U16,
    KILN__LK_U32,
    KILN__LK_U64,
    KILN__LK_F32,
    KILN__LK_F64,
    KILN__LK_C64,
    KILN__LK_C128,
} kiln__lk;

/* The compute representation of a result dtype, and its element size. */
kiln__lk kiln__lk_of(kiln_dtype result);
size_t kiln__lk_size(kiln__lk k);

/* True when data of dtype `src` already is the compute representation of `result`. */
bool kiln__lk_same_repr(kiln_dtype src, kiln_dtype result);

/* dst[i] = src[i] (n elements of dtype src_dtype) converted to `result` (as StableHLO's
 * convert does: integers wrap, floats round to nearest even, float -> integer saturates
 * and maps NaN to 0, anything -> i1 is != 0; to complex: part by part, a real value as
 * (x, 0)), stored in the compute representation. */
void kiln__lk_convert(void *dst, kiln_dtype result, const void *src, kiln_dtype src_dtype,
                      int64_t n);

/* Writes n compute-representation elements as `result` elements (rounds f32 to f16/bf16;
 * a copy otherwise). dst and src may be the same pointer. */
void kiln__lk_store(void *dst, kiln_dtype result, const void *src, int64_t n);

/* dst (contiguous, row-major) = src transposed: dst dimension i is src dimension perm[i].
 * elem is 1, 2, 4, 8 or 16 bytes. */
void kiln__lk_transpose(void *dst, const void *src, size_t elem, int32_t rank, const int64_t *shape,
                        const int32_t *perm);

/* True when permuting a tensor of `shape` by `perm` does not move any element (the
 * dimensions of size > 1 stay in order). */
bool kiln__lk_perm_is_trivial(int32_t rank, const int64_t *shape, const int32_t *perm);

/* C[m x n] = op(A) x op(B) in the compute representation `k`, row-major, where op(A) is
 * A [m x kk] (lda) or, with trans_a, the transpose of A [kk x m] (lda); likewise B.
 * f32/f64 and complex go to OpenBLAS; the others (and sizes beyond BLAS's int) use typed
 * loops. */
void kiln__lk_gemm(kiln__lk k, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t kk,
                   const void *a, int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc);

/* oneDNN convolution (dnnl_conv.c; without oneDNN these do nothing). kiln__dnnl_conv
 * returns false when oneDNN does not take this convolution (dtypes other than f32, input
 * dilation, batch groups, negative padding, empty tensors, no implementation) and the
 * caller must compute it; true when it ran, with the outcome in *status (errors recorded
 * in cx). `bias` is NULL or f32[output features], added by oneDNN.
 * kiln__dnnl_conv_prepare queues the primitives for these types for the process's builder
 * thread, ahead of the first call, and returns at once (a call that reaches them first
 * builds them itself, or waits for the builder already on them); KILN_OK always (also when
 * oneDNN does not take them or memory runs out: the call then builds or falls back). Both
 * are thread-safe; a fork waits for builds in progress. */
bool kiln__dnnl_conv(kiln_ctx *cx, const kiln__attrs *a, const kiln_tensor *lhs,
                     const kiln_tensor *rhs, const kiln_tensor *bias, kiln_tensor *out,
                     kiln_status *status);
kiln_status kiln__dnnl_conv_prepare(kiln_ctx *cx, const kiln__attrs *a, const kiln__type *lhs,
                                    const kiln__type *rhs, const kiln__type *out, bool bias);

/* Tests only: with true, kiln__dnnl_conv declines every call, so convolution takes the
 * im2col path (to compare the two). Process-wide, thread-safe; false restores oneDNN.
 * kiln__dnnl_conv_available says whether kiln was built with oneDNN and this process can
 * open it (which opens it: dnnl_api.h). */
void kiln__dnnl_conv_force_off(bool on);
/* Tests only: with true, oneDNN also takes convolutions below its size threshold (which
 * otherwise go to im2col + GEMM), so that small cases exercise it. */
void kiln__dnnl_conv_any_size(bool on);
/* Tests only: how many convolutions oneDNN has run as a forward convolution's weight
 * gradient (dnnl_conv.c, is_kernel_gradient) in this process. */
int64_t kiln__dnnl_conv_kernel_gradients_run(void);
/* Tests only: how many convolutions with input dilation oneDNN has run as a forward
 * convolution's input gradient (dnnl_conv.c, has_input_dilation) in this process. */
int64_t kiln__dnnl_conv_input_gradients_run(void);
bool kiln__dnnl_conv_available(void);
/* Tests only: with true, every oneDNN call allocates its reorder and scratchpad memory
 * through the ctx (as when the thread's workspace is busy or would be too large), so that
 * path and its out-of-memory error can be tested. */
void kiln__dnnl_conv_no_workspace(bool on);

/* Activations that kiln__cpu_conv_bias_act can apply after the bias. */
enum { KILN__ACT_NONE = 0, KILN__ACT_RELU = 1 };

/* out = activation(convolution(lhs, rhs) + bias), one fused kernel: `conv` holds the
 * convolution's attributes (u.conv and result_dtype, as kiln__eval_convolution reads them);
 * `bias` is NULL or the output features' values in order, of out's dtype: shape [F], or any
 * shape whose dimensions are all 1 but one of size F;
 * `activation` is KILN__ACT_NONE or KILN__ACT_RELU (max(x, 0), NaN propagates). `out` is
 * preallocated with the convolution's inferred type. Uses oneDNN post-ops where available
 * (f32, the layouts oneDNN takes), else the convolution followed by loops; results agree
 * with convolution, add and maximum run one by one up to f32 summation order.
 * Returns KILN_OK, or INVALID_ARGUMENT (bias of the wrong rank, size or dtype, or an unknown
 * activation), RESOURCE_EXHAUSTED, recorded in cx. Thread-safe for distinct outputs. */
kiln_status kiln__cpu_conv_bias_act(kiln_ctx *cx, const kiln__attrs *conv, kiln_tensor *lhs,
                                    kiln_tensor *rhs, kiln_tensor *bias, int activation,
                                    kiln_tensor *out);

#endif
