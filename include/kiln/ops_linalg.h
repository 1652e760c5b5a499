/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/ops_linalg.h: dot_general, convolution, numpy's matmul, the FFT, triangular_solve
 * and cholesky.
 * Part of kiln/ops.h (read its overview first); include that header, not this one.
 * Inputs are converted to the result dtype before multiplying (StableHLO's rule), and
 * the products are accumulated in that dtype (f32 for f16/bf16 results, then rounded):
 * integers wrap, i1 multiplies with AND and adds with OR. Every dtype is allowed.
 *
 *     // y[b, i, j] = sum_k x[b, i, k] * w[b, k, j]
 *     kiln_dot_params dp = {.lhs_batching_dims = KILN_DIMS(0), .rhs_batching_dims = KILN_DIMS(0),
 *                           .lhs_contracting_dims = KILN_DIMS(2),
 *                           .rhs_contracting_dims = KILN_DIMS(1)};
 *     kiln_tensor *y = kiln_dot_general(cx, x, w, &dp, KILN_DTYPE_COUNT);
 *     kiln_tensor *z = kiln_matmul(cx, a, b);                     // numpy's a @ b
 *     // A 3x3 convolution of NCHW images with OIHW filters, stride 2, padding 1:
 *     kiln_conv_params cp = kiln_conv_params_nchw(2);
 *     cp.window_strides = KILN_DIMS(2, 2);
 *     cp.padding_low = cp.padding_high = KILN_DIMS(1, 1);
 *     kiln_tensor *c = kiln_convolution(cx, images, filters, &cp, KILN_DTYPE_COUNT);
 *
 * Errors (INVALID_ARGUMENT, naming the builder): dimension numbers out of range or
 * repeated, batching or contracting sizes that differ, feature and group counts that do
 * not divide, a spatial size below 0 after padding, operands of different dtypes without a
 * result dtype; RESOURCE_EXHAUSTED when memory runs out. Thread-safety: the ctx's.
 */
#ifndef KILN_OPS_LINALG_H
#define KILN_OPS_LINALG_H

#include "kiln/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_dot_params {
    kiln_dims lhs_batching_dims;
    kiln_dims rhs_batching_dims;
    kiln_dims lhs_contracting_dims;
    kiln_dims rhs_contracting_dims;
} kiln_dot_params;

/* StableHLO dot_general. Result: batch dims, then lhs free dims (in order), then rhs free
 * dims. `result_dtype` KILN_DTYPE_COUNT means the operands' dtype (they must then match);
 * another dtype converts both operands to it first (i8 x i8 -> i32, f32 x f32 -> f64).
 * A contraction over zero elements gives zeros. */
KILN_API kiln_tensor *kiln_dot_general(kiln_ctx *cx, kiln_tensor *lhs, kiln_tensor *rhs,
                                       const kiln_dot_params *params, kiln_dtype result_dtype);

/* numpy.matmul: 1-D operands are promoted (and the added dimension removed), leading
 * dimensions broadcast. Operands of one dtype, which is the result's; rank >= 1. */
KILN_API kiln_tensor *kiln_matmul(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);

/* StableHLO convolution. Dimension numbers name, for each operand, which dimension is the
 * batch/feature and which are spatial; lists of count 0 take the defaults (strides and
 * dilations 1, padding 0); padding may be negative (it crops). lhs_dilation > 1 is a
 * transposed convolution, rhs_dilation > 1 an atrous one. feature_group_count splits the
 * input features (and the kernel's output features) into groups; batch_group_count splits
 * the input batch instead (the output features again). At most one of them is > 1. Spatial
 * output size: floor((pad_lo + (in - 1) * lhs_dilation + 1 + pad_hi - ((k - 1) *
 * rhs_dilation + 1)) / stride) + 1, or 0 when the window does not fit. */
typedef struct kiln_conv_params {
    int64_t input_batch_dimension;
    int64_t input_feature_dimension;
    kiln_dims input_spatial_dimensions;
    int64_t kernel_input_feature_dimension;
    int64_t kernel_output_feature_dimension;
    kiln_dims kernel_spatial_dimensions;
    int64_t output_batch_dimension;
    int64_t output_feature_dimension;
    kiln_dims output_spatial_dimensions;
    kiln_dims window_strides;
    kiln_dims padding_low;
    kiln_dims padding_high;
    kiln_dims lhs_dilation;
    kiln_dims rhs_dilation;
    int64_t feature_group_count; /* 0 means 1 */
    int64_t batch_group_count;   /* 0 means 1 */
} kiln_conv_params;

/* Parameters for the usual NCHW input, OIHW kernel, NCHW output layout with `spatial`
 * spatial dimensions (0 to KILN_MAX_RANK - 2; others give parameters kiln_convolution
 * rejects), stride/dilation lists of `spatial` ones, padding lists of zeros and group
 * counts 1: change what differs. */
KILN_API kiln_conv_params kiln_conv_params_nchw(int32_t spatial);

/* `lhs` is the input, `rhs` the kernel; result_dtype as for kiln_dot_general. */
KILN_API kiln_tensor *kiln_convolution(kiln_ctx *cx, kiln_tensor *lhs, kiln_tensor *rhs,
                                       const kiln_conv_params *params, kiln_dtype result_dtype);

/* StableHLO fft over the last fft_length.count (1 to 3) dimensions, whose sizes are
 * fft_length:
 *   KILN_FFT_FORWARD  complex -> complex, sum_n x[n] e^(-2 pi i kn/N);
 *   KILN_FFT_INVERSE  complex -> complex, the inverse, divided by the product of the lengths;
 *   KILN_FFT_REAL     f32/f64 -> complex<f32|f64>, the forward transform of real values,
 *                     its last dimension cut to N/2 + 1 (the rest is conjugate-symmetric);
 *   KILN_FFT_INVERSE_REAL  complex -> f32/f64, the inverse of KILN_FFT_REAL: the operand's
 *                     last dimension is N/2 + 1, the result's N.
 * Any lengths, not only powers of two; computed in double and rounded once for complex<f32>
 * (the numbers in StableHLO's order: FFT, IFFT, RFFT, IRFFT). */
typedef enum kiln_fft_type {
    KILN_FFT_FORWARD,
    KILN_FFT_INVERSE,
    KILN_FFT_REAL,
    KILN_FFT_INVERSE_REAL,
} kiln_fft_type;

KILN_API kiln_tensor *kiln_fft(kiln_ctx *cx, kiln_tensor *x, kiln_fft_type type,
                               kiln_dims fft_length);

/* How triangular_solve applies its matrix: as it is, transposed, or conjugate-transposed
 * (StableHLO's NO_TRANSPOSE, TRANSPOSE, ADJOINT, with its numbers: 0 is invalid). */
typedef enum kiln_solve_transpose {
    KILN_TRANSPOSE_NONE = 1,
    KILN_TRANSPOSE_T = 2,
    KILN_TRANSPOSE_ADJOINT = 3,
} kiln_solve_transpose;

/* StableHLO triangular_solve: x with op(a) x = b (left_side) or x op(a) = b, for a
 * [..., M, M] of which only the lower (or upper) triangle is read, its diagonal taken as
 * ones with unit_diagonal; b is [..., M, N] (left) or [..., N, M], the leading dimensions
 * a batch shared with a. f32, f64, complex: OpenBLAS's trsm in the operand's type (as
 * scipy and XLA compute it); without OpenBLAS, kiln's substitution in double, rounded once.
 * A singular matrix gives infinities or NaN, as the division does. Differentiable (real
 * floats): kiln_grad and kiln_jvp reach a and b. */
KILN_API kiln_tensor *kiln_triangular_solve(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b,
                                            bool left_side, bool lower, bool unit_diagonal,
                                            kiln_solve_transpose transpose_a);

/* StableHLO cholesky: the factor L of a = L L^H (lower) or U of a = U^H U, of a [..., N, N]
 * Hermitian positive-definite (only that triangle of a is read); the other triangle of the
 * result is zero. A matrix that is not positive-definite gives NaN from the first pivot
 * that is not positive on. f32, f64, complex: LAPACK's potrf (OpenBLAS's) in the operand's
 * type; without OpenBLAS, and for a matrix potrf refuses, kiln's loops in double, rounded
 * once. Differentiable (real floats), as JAX differentiates it: the gradient reaches the
 * triangle that is read. */
KILN_API kiln_tensor *kiln_cholesky(kiln_ctx *cx, kiln_tensor *a, bool lower);

#ifdef __cplusplus
}
#endif

#endif
