/* SPDX-License-Identifier: Apache-2.0 */
/* Kiln's own f32 kernels for dense products and transposes, where a library call would pack
 * or stream its operands more often than needed (gemv_f32.c, gemm_rows_f32.c,
 * transpose_f32.c). Used by the evaluator's products and the oneDNN glue. */
#ifndef KILN_BACKENDS_CPU_LIB_DENSE_F32_H
#define KILN_BACKENDS_CPU_LIB_DENSE_F32_H

#include <stdbool.h>
#include <stdint.h>

/* y[0..n) = x M for f32 x (k elements, incx apart) and M row-major [k x n] (rows ld apart),
 * streaming M once (gemv_f32.c): y[j] = x[0] M[0][j], then fma(x[i], M[i][j], y[j]) for
 * i = 1 .. k-1, so the bits do not depend on the thread count. Split across kiln's threads
 * by columns. Only when kiln__gemv_f32_available() (AVX2 and FMA at run time). */
bool kiln__gemv_f32_available(void);
void kiln__gemv_f32(const float *x, int64_t incx, const float *m, int64_t ld, int64_t k, int64_t n,
                    float *y);

/* Y = X M for f32 with few rows, X [m x k] (rows ldx apart), M [k x n] (rows ldw apart),
 * Y [m x n] (rows ldy apart), streaming M without packing it: once for up to 16 rows of X
 * (a temporary of 64 bytes per row of M from malloc for 9 to 16; without it, once per 8
 * rows), once per 8 rows beyond (gemm_rows_f32.c). Each row of Y gets exactly kiln__gemv_f32's result for that row of X
 * (the same chain of fmas), whatever m, the split or the thread count. Only when
 * kiln__gemm_rows_f32_available() (AVX-512 at run time). */
bool kiln__gemm_rows_f32_available(void);
void kiln__gemm_rows_f32(const float *x, int64_t ldx, int64_t m, const float *w, int64_t ldw,
                         int64_t k, int64_t n, float *y, int64_t ldy);

/* For b < batch: dst + b * dst_stride (cols x rows, row-major) = the transpose of
 * src + b * src_stride (rows x cols, row-major), f32, split across kiln's threads
 * (transpose_f32.c). With group > 1 the columns are [cols / group][group] and the
 * destination's rows come in the order [group][cols / group] (OIHW weights to O-blocked
 * HWI: group = H * W). The matrices must not overlap; nothing is done unless group >= 1
 * divides cols. */
void kiln__transpose_f32(const float *src, float *dst, int64_t batch, int64_t rows, int64_t cols,
                         int64_t group, int64_t src_stride, int64_t dst_stride);

#endif
