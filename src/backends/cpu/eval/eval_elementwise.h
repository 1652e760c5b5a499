/* SPDX-License-Identifier: Apache-2.0 */
/* Shared pieces of the elementwise evaluator kernels (eval_elementwise_unary.c, _binary.c,
 * _compare.c, _convert.c): the kernel wrapper, and the f16/bf16 staging through f32
 * chunks (the integer dtypes' template parameters: elementwise_int_types.inc). Internal to
 * backends/cpu. */
#ifndef KILN_BACKENDS_CPU_EVAL_ELEMENTWISE_H
#define KILN_BACKENDS_CPU_EVAL_ELEMENTWISE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backends/cpu/eval/eval.h"
#include "backends/cpu/lib/float_minmax.h"

/* Kernels whose loops vectorize: compiled twice, for the baseline ISA and for AVX2, the
 * dynamic loader picking one for the CPU once (an ifunc, as glibc's memcpy). The AVX2 copy
 * is the same C, so its results are the same bits (no FMA: floating-point expressions are
 * not contracted). GCC only: clang 14 gives the resolver of a static clone set a global
 * symbol, which two libraries could both define. Not under ThreadSanitizer or
 * AddressSanitizer: the loader runs a resolver while relocating, before the sanitizer's
 * runtime is up, and an instrumented resolver crashes there. Elsewhere the baseline alone. */
#if defined(__x86_64__) && defined(__ELF__) && defined(__linux__) && !defined(__clang__) && \
    __GNUC__ >= 8 && !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define KILN__EW_VECTOR __attribute__((target_clones("avx2", "default")))
#else
#define KILN__EW_VECTOR
#endif

/* One evaluator kernel (kiln__eval_NAME, the signature of kiln__eval_fn), vectorized as
 * above: the clones are static and the kernel calls them, because the dispatcher of a
 * clone set with external linkage is exported whatever the visibility (GCC 12). Followed
 * by the kernel's body. */
#define KILN__EW_KERNEL(NAME)                                                      \
    static KILN__EW_VECTOR kiln_status NAME##_kernel(KILN__EVAL_PARAMS);           \
    KILN__EVAL(NAME) {                                                             \
        return NAME##_kernel(cx, attrs, operands, n_operands, results, n_results); \
    }                                                                              \
    static KILN__EW_VECTOR kiln_status NAME##_kernel(KILN__EVAL_PARAMS)

/* Elements staged at a time when f16/bf16 are computed in f32. */
#define KILN__EW_CHUNK 256

/* Array kernels over contiguous f32 / f64 data. */
typedef void (*kiln__ew_unary_f32)(const float *x, float *r, int64_t n);
typedef void (*kiln__ew_unary_f64)(const double *x, double *r, int64_t n);
typedef void (*kiln__ew_binary_f32)(const float *a, const float *b, float *r, int64_t n);
typedef void (*kiln__ew_binary_f64)(const double *a, const double *b, double *r, int64_t n);

/* Converts n 16-bit floats (f16 or bf16) to f32, and back rounding to nearest even. */
void kiln__ew_load_half(kiln_dtype dtype, const uint16_t *src, float *dst, int64_t n);
void kiln__ew_store_half(kiln_dtype dtype, const float *src, uint16_t *dst, int64_t n);

/* Runs an f32/f64 array kernel on floating-point data of any float dtype: f16 and bf16
 * go through f32 in chunks and are rounded once. Returns false for a non-float dtype. */
bool kiln__ew_float_unary(kiln_dtype dtype, const void *x, void *r, int64_t n,
                          kiln__ew_unary_f32 f32, kiln__ew_unary_f64 f64);
bool kiln__ew_float_binary(kiln_dtype dtype, const void *a, const void *b, void *r, int64_t n,
                           kiln__ew_binary_f32 f32, kiln__ew_binary_f64 f64);

/* Complex kernels (eval_elementwise_complex.c), on n values of the complex dtype dt (x, a, b
 * and r all of it): op's function of one or two values, false for an op without a complex
 * kernel. kiln__ew_complex_runs says which ops have one (abs and negate too). */
bool kiln__ew_complex_runs(kiln_op op);
bool kiln__ew_complex_unary(kiln_op op, kiln_dtype dt, const void *x, void *r, int64_t n);
bool kiln__ew_complex_binary(kiln_op op, kiln_dtype dt, const void *a, const void *b, void *r,
                             int64_t n);
/* |x| of n complex values of dtype dt, into their parts' dtype. */
void kiln__ew_complex_abs(kiln_dtype dt, const void *x, void *r, int64_t n);

/* Records "cpu: <op> does not support dtype <d>" (an internal error: inference rejects
 * these first) and returns it. */
kiln_status kiln__ew_bad_dtype(kiln_ctx *cx, const char *op, kiln_dtype dtype);

#endif
