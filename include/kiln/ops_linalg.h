/* kiln/ops_linalg.h: dot_general, convolution and numpy's matmul.
 * Part of kiln/ops.h (read its overview first); include that header, not this one.
 * Inputs are converted to the result dtype before multiplying (StableHLO's rule), and
 * the products are accumulated in that dtype (f32 for f16/bf16 results, then rounded).
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

/* StableHLO dot_general. Result: batch dims, then lhs free dims, then rhs free dims.
 * `result_dtype` KILN_DTYPE_COUNT means the operands' dtype (they must then match). */
KILN_API kiln_tensor *kiln_dot_general(kiln_ctx *cx, kiln_tensor *lhs, kiln_tensor *rhs,
                                       const kiln_dot_params *params, kiln_dtype result_dtype);

/* numpy.matmul: 1-D operands are promoted (and the added dimension removed), leading
 * dimensions broadcast. Operands of one dtype. */
KILN_API kiln_tensor *kiln_matmul(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b);

/* StableHLO convolution. Dimension numbers name, for each operand, which dimension is the
 * batch/feature and which are spatial; lists of count 0 take the defaults (strides and
 * dilations 1, padding 0). */
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
 * spatial dimensions, stride/dilation 1 and no padding: fill in the rest. */
KILN_API kiln_conv_params kiln_conv_params_nchw(int32_t spatial);

KILN_API kiln_tensor *kiln_convolution(kiln_ctx *cx, kiln_tensor *lhs, kiln_tensor *rhs,
                                       const kiln_conv_params *params, kiln_dtype result_dtype);

#ifdef __cplusplus
}
#endif

#endif
