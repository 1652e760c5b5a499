/* SPDX-License-Identifier: Apache-2.0 */
/* dot_general on the CPU, and the helpers it shares with convolution (eval_linalg.h):
 * conversion into the result's compute representation, transposing copies, GEMM.
 *
 * f32/f64 products go to OpenBLAS (opened on first use, blas_api.h; kiln's loops when it
 * cannot be) with transposes folded into its flags; the exceptions, measured on the
 * reference machine: tiny products run as loops, small transposed operands are copied
 * untransposed first (OpenBLAS's small-matrix kernels take only that layout), a vector
 * times a matrix runs as blocks of GEMV (or, f32 against a matrix with contiguous output
 * columns, as kiln__gemv_f32's single stream), larger products as chunks of rows or
 * columns, and batches of small products are split across kiln's threads. BLAS itself
 * always runs single-threaded, kiln's threads spreading the blocks and chunks. Which path runs, and
 * how a product is cut, depends on the shapes only, so every path gives the same bits on any thread
 * count. */
#include <complex.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "backends/cpu/lib/blas_api.h"
#include "backends/cpu/eval/eval.h"
#include "backends/cpu/eval/eval_linalg.h"
#include "backends/cpu/lib/dense_f32.h"
#include "base/alloc.h"
#include "base/threads.h"
#include "core/element.h"

_Static_assert(sizeof(unsigned) == 4, "32-bit unsigned int");

/* ---- compute representation ---------------------------------------------------------- */

kiln__lk kiln__lk_of(kiln_dtype result) {
    switch (result) {
    case KILN_BOOL: return KILN__LK_BOOL;
    case KILN_I8:
    case KILN_U8: return KILN__LK_U8;
    case KILN_I16:
    case KILN_U16: return KILN__LK_U16;
    case KILN_I32:
    case KILN_U32: return KILN__LK_U32;
    case KILN_I64:
    case KILN_U64: return KILN__LK_U64;
    case KILN_F64: return KILN__LK_F64;
    case KILN_C64: return KILN__LK_C64;
    case KILN_C128: return KILN__LK_C128;
    default: return KILN__LK_F32; /* f16, bf16, f32 */
    }
}

size_t kiln__lk_size(kiln__lk k) {
    switch (k) {
    case KILN__LK_BOOL:
    case KILN__LK_U8: return 1;
    case KILN__LK_U16: return 2;
    case KILN__LK_U32:
    case KILN__LK_F32: return 4;
    case KILN__LK_C128: return 16;
    default: return 8;
    }
}

bool kiln__lk_same_repr(kiln_dtype src, kiln_dtype result) {
    if (result == KILN_F16 || result == KILN_BF16) return false;
    if (src == result) return true;
    /* Same-width integers convert by keeping the bits. */
    return kiln_dtype_is_integer(src) && kiln_dtype_is_integer(result) &&
           kiln_dtype_size(src) == kiln_dtype_size(result);
}

/* The bits of a float converted to integer dtype r: truncated, saturated, NaN -> 0. */
static uint64_t saturate_bits(double x, kiln_dtype r) {
    if (isnan(x)) return 0;
    switch (r) {
    case KILN_U64:
        if (x <= 0) return 0;
        if (x >= 18446744073709551616.0) return UINT64_MAX;
        return (uint64_t)x;
    case KILN_I64:
        if (x <= -9223372036854775808.0) return (uint64_t)INT64_MIN;
        if (x >= 9223372036854775808.0) return (uint64_t)INT64_MAX;
        return (uint64_t)(int64_t)x;
    default: break;
    }
    double lo, hi;
    switch (r) {
    case KILN_I8: lo = INT8_MIN, hi = INT8_MAX; break;
    case KILN_I16: lo = INT16_MIN, hi = INT16_MAX; break;
    case KILN_I32: lo = INT32_MIN, hi = INT32_MAX; break;
    case KILN_U8: lo = 0, hi = UINT8_MAX; break;
    case KILN_U16: lo = 0, hi = UINT16_MAX; break;
    default: lo = 0, hi = UINT32_MAX; break;
    }
    if (x <= lo) x = lo;
    if (x >= hi) x = hi;
    return (uint64_t)(int64_t)x;
}

/* One function per destination representation; f16 and bf16 compute as float, and double
 * holds every value exactly (but i64 beyond 2^53, which is inf). */
#define DT float
#define FN(name) name##_to_f32
#define FROM_INT(v) (float)v
#define FROM_FLOAT(v) (float)v
#include "backends/cpu/eval/convert_typed.inc"

#define DT double
#define FN(name) name##_to_f64
#define FROM_INT(v) (double)v
#define FROM_FLOAT(v) (double)v
#include "backends/cpu/eval/convert_typed.inc"

#define DT float
#define FN(name) name##_to_f16
#define FROM_INT(v) kiln_f16_to_f32(kiln__f64_to_f16((double)v))
#define FROM_FLOAT(v) kiln_f16_to_f32(kiln__f64_to_f16((double)v))
#include "backends/cpu/eval/convert_typed.inc"

#define DT float
#define FN(name) name##_to_bf16
#define FROM_INT(v) kiln_bf16_to_f32(kiln__f64_to_bf16((double)v))
#define FROM_FLOAT(v) kiln_bf16_to_f32(kiln__f64_to_bf16((double)v))
#include "backends/cpu/eval/convert_typed.inc"

#define DT uint8_t
#define FN(name) name##_to_bool
#define FROM_INT(v) (uint8_t)(v != 0)
#define FROM_FLOAT(v) (uint8_t)(v != 0)
#include "backends/cpu/eval/convert_typed.inc"

#define DT uint8_t
#define FN(name) name##_to_8
#define FROM_INT(v) (uint8_t)v
#define FROM_FLOAT(v) (uint8_t)saturate_bits((double)v, result)
#include "backends/cpu/eval/convert_typed.inc"

#define DT uint16_t
#define FN(name) name##_to_16
#define FROM_INT(v) (uint16_t)v
#define FROM_FLOAT(v) (uint16_t)saturate_bits((double)v, result)
#include "backends/cpu/eval/convert_typed.inc"

#define DT uint32_t
#define FN(name) name##_to_32
#define FROM_INT(v) (uint32_t)v
#define FROM_FLOAT(v) (uint32_t)saturate_bits((double)v, result)
#include "backends/cpu/eval/convert_typed.inc"

#define DT uint64_t
#define FN(name) name##_to_64
#define FROM_INT(v) (uint64_t)v
#define FROM_FLOAT(v) saturate_bits((double)v, result)
#include "backends/cpu/eval/convert_typed.inc"

/* To complex: a complex value part by part; a real value as (x, 0), x converted to the
 * parts' type into the upper half of dst and then spread out from the front (element i's
 * parts land at 2i and 2i + 1, below n + i + 1, so no value is overwritten before it is
 * read). */
static void convert_to_complex(void *dst, kiln_dtype result, const void *src,
                               kiln_dtype src_dtype, int64_t n) {
    kiln_dtype part = kiln_dtype_component(result);
    if (kiln_dtype_is_complex(src_dtype)) {
        kiln__lk_convert(dst, part, src, kiln_dtype_component(src_dtype), 2 * n);
        return;
    }
    kiln__lk_convert((unsigned char *)dst + (size_t)n * kiln_dtype_size(part), part, src,
                     src_dtype, n);
    if (part == KILN_F32) {
        float *d = dst;
        for (int64_t i = 0; i < n; i++) {
            float v = d[n + i];
            d[2 * i] = v, d[2 * i + 1] = 0;
        }
    } else {
        double *d = dst;
        for (int64_t i = 0; i < n; i++) {
            double v = d[n + i];
            d[2 * i] = v, d[2 * i + 1] = 0;
        }
    }
}

void kiln__lk_convert(void *dst, kiln_dtype result, const void *src, kiln_dtype src_dtype,
                      int64_t n) {
    if (src_dtype == result && (result == KILN_F16 || result == KILN_BF16)) {
        float *d_ = (float *)dst;
        const uint16_t *s_ = (const uint16_t *)src;
        if (result == KILN_F16)
            for (int64_t i_ = 0; i_ < n; i_++)
                d_[i_] = kiln_f16_to_f32(s_[i_]);
        else
            for (int64_t i_ = 0; i_ < n; i_++)
                d_[i_] = kiln_bf16_to_f32(s_[i_]);
        return;
    }
    switch (result) {
    case KILN_F32: convert_to_f32(dst, result, src, src_dtype, n); break;
    case KILN_F64: convert_to_f64(dst, result, src, src_dtype, n); break;
    case KILN_F16: convert_to_f16(dst, result, src, src_dtype, n); break;
    case KILN_BF16: convert_to_bf16(dst, result, src, src_dtype, n); break;
    case KILN_BOOL: convert_to_bool(dst, result, src, src_dtype, n); break;
    case KILN_I8:
    case KILN_U8: convert_to_8(dst, result, src, src_dtype, n); break;
    case KILN_I16:
    case KILN_U16: convert_to_16(dst, result, src, src_dtype, n); break;
    case KILN_I32:
    case KILN_U32: convert_to_32(dst, result, src, src_dtype, n); break;
    case KILN_I64:
    case KILN_U64: convert_to_64(dst, result, src, src_dtype, n); break;
    case KILN_C64:
    case KILN_C128: convert_to_complex(dst, result, src, src_dtype, n); break;
    default: break;
    }
}

void kiln__lk_store(void *dst, kiln_dtype result, const void *src, int64_t n) {
    if (result == KILN_F16 || result == KILN_BF16) {
        const float *s = src;
        uint16_t *d = dst;
        if (result == KILN_F16)
            for (int64_t i = 0; i < n; i++)
                d[i] = kiln_f32_to_f16(s[i]);
        else
            for (int64_t i = 0; i < n; i++)
                d[i] = kiln_f32_to_bf16(s[i]);
        return;
    }
    if (dst != src && n > 0) memmove(dst, src, (size_t)n * kiln__lk_size(kiln__lk_of(result)));
}

/* ---- transposing copies ------------------------------------------------------------- */

bool kiln__lk_perm_is_trivial(int32_t rank, const int64_t *shape, const int32_t *perm) {
    int32_t last = -1;
    for (int32_t i = 0; i < rank; i++) {
        if (shape[perm[i]] == 1) continue;
        if (perm[i] < last) return false;
        last = perm[i];
    }
    return true;
}

#define ELEMENT_SIZE_BODY "backends/cpu/eval/strided_copy.inc"
#include "backends/cpu/eval/per_element_size.h"

void kiln__lk_transpose(void *dst, const void *src, size_t elem, int32_t rank, const int64_t *shape,
                        const int32_t *perm) {
    int64_t sstride[KILN_MAX_RANK], dshape[KILN_MAX_RANK], dstride[KILN_MAX_RANK];
    int64_t total = 1, acc = 1;
    for (int32_t i = rank - 1; i >= 0; i--) {
        sstride[i] = acc;
        acc *= shape[i];
    }
    /* Drop dimensions of size 1; they do not move anything. */
    int32_t r = 0;
    for (int32_t i = 0; i < rank; i++) {
        int64_t size = shape[perm[i]];
        total *= size;
        if (size == 1) continue;
        dshape[r] = size;
        dstride[r] = sstride[perm[i]];
        r++;
    }
    if (total == 0) return;
    if (r == 0) {
        memcpy(dst, src, elem);
        return;
    }
    int64_t inner = dshape[r - 1], istride = dstride[r - 1], outer = total / inner;
    int64_t idx[KILN_MAX_RANK] = {0};
    int64_t off = 0;
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (int64_t o = 0; o < outer; o++) {
        if (istride == 1) {
            memcpy(d, s + (size_t)off * elem, (size_t)inner * elem);
        } else {
            switch (elem) {
            case 1: copy_run_1(d, s, off, inner, istride); break;
            case 2: copy_run_2(d, s, off, inner, istride); break;
            case 4: copy_run_4(d, s, off, inner, istride); break;
            case 8: copy_run_8(d, s, off, inner, istride); break;
            default: copy_run_16(d, s, off, inner, istride); break;
            }
        }
        d += (size_t)inner * elem;
        for (int32_t i = r - 2; i >= 0; i--) {
            off += dstride[i];
            if (++idx[i] < dshape[i]) break;
            off -= dstride[i] * dshape[i];
            idx[i] = 0;
        }
    }
}

/* ---- GEMM ------------------------------------------------------------------------- */

enum { GEMM_JB = 512, GEMM_KB = 128 };

#define T float
#define FN(name) name##_f32
#define MULADD(c, a, b) ((c) + (a) * (b))
#define SKIP0 0
#define SMALL 1
#include "backends/cpu/eval/gemm_typed.inc"

#define T double
#define FN(name) name##_f64
#define MULADD(c, a, b) ((c) + (a) * (b))
#define SKIP0 0
#define SMALL 1
#include "backends/cpu/eval/gemm_typed.inc"

/* Complex products part by part, (ac - bd) + (ad + bc)i, as the elementwise multiply. */
static inline float _Complex muladd_c64(float _Complex c, float _Complex a, float _Complex b) {
    float ar = crealf(a), ai = cimagf(a), br = crealf(b), bi = cimagf(b);
    float parts[2] = {crealf(c) + (ar * br - ai * bi), cimagf(c) + (ar * bi + ai * br)};
    float _Complex r;
    memcpy(&r, parts, sizeof r);
    return r;
}
static inline double _Complex muladd_c128(double _Complex c, double _Complex a,
                                          double _Complex b) {
    double ar = creal(a), ai = cimag(a), br = creal(b), bi = cimag(b);
    double parts[2] = {creal(c) + (ar * br - ai * bi), cimag(c) + (ar * bi + ai * br)};
    double _Complex r;
    memcpy(&r, parts, sizeof r);
    return r;
}

#define T float _Complex
#define FN(name) name##_c64
#define MULADD(c, a, b) muladd_c64(c, a, b)
#define SKIP0 0
#define SMALL 0
#include "backends/cpu/eval/gemm_typed.inc"

#define T double _Complex
#define FN(name) name##_c128
#define MULADD(c, a, b) muladd_c128(c, a, b)
#define SKIP0 0
#define SMALL 0
#include "backends/cpu/eval/gemm_typed.inc"

#define T uint8_t
#define FN(name) name##_bool
#define MULADD(c, a, b) ((uint8_t)((c) | ((a) & (b))))
#define SKIP0 1
#define SMALL 0
#include "backends/cpu/eval/gemm_typed.inc"

#define T uint8_t
#define FN(name) name##_u8
#define MULADD(c, a, b) ((uint8_t)((c) + (unsigned)(a) * (unsigned)(b)))
#define SKIP0 1
#define SMALL 0
#include "backends/cpu/eval/gemm_typed.inc"

#define T uint16_t
#define FN(name) name##_u16
#define MULADD(c, a, b) ((uint16_t)((c) + (unsigned)(a) * (unsigned)(b)))
#define SKIP0 1
#define SMALL 0
#include "backends/cpu/eval/gemm_typed.inc"

#define T uint32_t
#define FN(name) name##_u32
#define MULADD(c, a, b) ((uint32_t)((c) + (unsigned)(a) * (unsigned)(b)))
#define SKIP0 1
#define SMALL 0
#include "backends/cpu/eval/gemm_typed.inc"

#define T uint64_t
#define FN(name) name##_u64
#define MULADD(c, a, b) ((c) + (a) * (b))
#define SKIP0 1
#define SMALL 0
#include "backends/cpu/eval/gemm_typed.inc"

static bool fits_blas(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* Where a BLAS call costs more than the math (measured on the 2-core reference machine,
 * OpenBLAS 0.3.21 with its small-matrix kernels: sgemm takes ~20 ns at 2x2x2 and ~50 ns
 * at 10x10x10, while plain loops take 7-9 ns at 1x1x1 and 1x1x8 but already 27 ns at
 * 3x3x3 and 420 ns at 10x10x10): up to this many multiply-adds, loops. */
#define SMALL_MNK 16
/* Up to this many elements, a transposed operand is copied into the untransposed layout
 * (on the stack) before the call: OpenBLAS's small-matrix kernels take only that layout,
 * and a transposed 10x10 sgemm costs 2.5x the untransposed one, far more than the copy. */
#define SMALL_TRANSPOSE 1024
/* From this many outputs, a vector times a matrix runs as GEMV. */
#define GEMV_MIN 64

/* dst [rows x cols] (ld cols) = the transpose of src [cols x rows] (ld lds). */
static void small_transpose(void *dst, const void *src, int64_t rows, int64_t cols, int64_t lds,
                            size_t es) {
    if (es == 4) {
        float *d = dst;
        const float *sv = src;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t q = 0; q < cols; q++)
                d[r * cols + q] = sv[q * lds + r];
    } else {
        double *d = dst;
        const double *sv = src;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t q = 0; q < cols; q++)
                d[r * cols + q] = sv[q * lds + r];
    }
}

/* y = op(M) x for M row-major [rows x cols] (op the transpose when trans), in blocks of
 * GEMV_BLOCK outputs, each one single-threaded GEMV. OpenBLAS's threaded GEMV splits an
 * output's sum across threads, so the blocks are the unit of parallel work instead: they
 * do not depend on the thread count, and an output's sum runs the same way in every block
 * split. */
#define GEMV_BLOCK 1024

typedef struct gemv_job {
    bool f64, trans;
    const void *m, *x;
    void *y;
    int64_t rows, cols, ld, incx, incy;
} gemv_job;

static void gemv_blocks(void *user, int64_t begin, int64_t end) {
    const gemv_job *j = user;
    kiln__threads_blas_one();
    int64_t outs = j->trans ? j->cols : j->rows;
    for (int64_t blk = begin; blk < end; blk++) {
        int64_t o0 = blk * GEMV_BLOCK, w = outs - o0 < GEMV_BLOCK ? outs - o0 : GEMV_BLOCK;
        /* The block's first element of M: column o0 (trans) or row o0. */
        int64_t off = j->trans ? o0 : o0 * j->ld;
        blasint r = (blasint)(j->trans ? j->rows : w), c = (blasint)(j->trans ? w : j->cols);
        enum CBLAS_TRANSPOSE t = j->trans ? CblasTrans : CblasNoTrans;
        if (j->f64)
            kiln__blas_api_if_open()->cblas_dgemv(
                CblasRowMajor, t, r, c, 1.0, (const double *)j->m + off, (blasint)j->ld, j->x,
                (blasint)j->incx, 0.0, (double *)j->y + o0 * j->incy, (blasint)j->incy);
        else
            kiln__blas_api_if_open()->cblas_sgemv(
                CblasRowMajor, t, r, c, 1.0f, (const float *)j->m + off, (blasint)j->ld, j->x,
                (blasint)j->incx, 0.0f, (float *)j->y + o0 * j->incy, (blasint)j->incy);
    }
}

/* Products of at least this many multiply-adds are split into chunks that run in
 * parallel; smaller ones are one call on the calling thread (waking a second thread costs
 * more than it saves, and opens no parallel region whose spinning threads would steal the
 * cores). */
#define GEMM_PAR_MNK 262144.0
/* Chunk widths along the split dimension: a chunk repacks the other operand, so chunks stay
 * wide (at 1024^3 sgemm, 512-wide chunks cost about 1% over one call). They depend on the
 * shape only, never on the thread count. */
#define GEMM_CHUNK 512
#define GEMM_CHUNK_MIN 128
/* Products of at most this many rows with a matrix of at least this many elements stream
 * the matrix (kiln__gemm_rows_f32, once per 8 rows) instead of packing it: at 16 rows
 * still 0.8x OpenBLAS's time for 16 x 4096 x 4096, level with it at 24. */
#define GEMM_ROWS_MAX 16
#define GEMM_ROWS_MIN_MATRIX 65536.0

/* C = op(A) op(B) as fixed chunks of rows (split_m) or columns of C, each one
 * single-threaded BLAS call: OpenBLAS's threaded GEMM partitions the sum differently per
 * thread count, so the chunks are the unit of parallel work instead, and every output
 * element is computed by the same call whatever the thread count. */
typedef struct gemm_job {
    kiln__lk k;
    bool ta, tb, split_m;
    int64_t m, n, kk, lda, ldb, ldc, chunk;
    const void *a, *b;
    void *c;
} gemm_job;

static void gemm_chunks(void *user, int64_t begin, int64_t end) {
    const gemm_job *j = user;
    kiln__threads_blas_one();
    const kiln__blas_api *blas = kiln__blas_api_if_open();
    size_t es = kiln__lk_size(j->k);
    enum CBLAS_TRANSPOSE ta = j->ta ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = j->tb ? CblasTrans : CblasNoTrans;
    int64_t extent = j->split_m ? j->m : j->n;
    for (int64_t ch = begin; ch < end; ch++) {
        int64_t o0 = ch * j->chunk, w = extent - o0 < j->chunk ? extent - o0 : j->chunk;
        const unsigned char *a = j->a, *b = j->b;
        unsigned char *c = j->c;
        int64_t m = j->m, n = j->n;
        if (j->split_m) {
            /* Rows o0.. of op(A): row o0 of A, or column o0 when transposed. */
            a += (size_t)(j->ta ? o0 : o0 * j->lda) * es;
            c += (size_t)(o0 * j->ldc) * es;
            m = w;
        } else {
            b += (size_t)(j->tb ? o0 * j->ldb : o0) * es;
            c += (size_t)o0 * es;
            n = w;
        }
        blasint bm = (blasint)m, bn = (blasint)n, bk = (blasint)j->kk, lda = (blasint)j->lda,
                ldb = (blasint)j->ldb, ldc = (blasint)j->ldc;
        /* alpha 1 and beta 0 for the complex calls: {1, 0} and {0, 0} as doubles or floats */
        static const double one_d[2] = {1, 0}, zero_d[2] = {0, 0};
        static const float one_f[2] = {1, 0}, zero_f[2] = {0, 0};
        switch (j->k) {
        case KILN__LK_F64:
            blas->cblas_dgemm(CblasRowMajor, ta, tb, bm, bn, bk, 1.0,
                              (const double *)(const void *)a, lda,
                              (const double *)(const void *)b, ldb, 0.0, (double *)(void *)c, ldc);
            break;
        case KILN__LK_C64:
            blas->cblas_cgemm(CblasRowMajor, ta, tb, bm, bn, bk, one_f, a, lda, b, ldb, zero_f, c,
                              ldc);
            break;
        case KILN__LK_C128:
            blas->cblas_zgemm(CblasRowMajor, ta, tb, bm, bn, bk, one_d, a, lda, b, ldb, zero_d, c,
                              ldc);
            break;
        default:
            blas->cblas_sgemm(CblasRowMajor, ta, tb, bm, bn, bk, 1.0f,
                              (const float *)(const void *)a, lda, (const float *)(const void *)b,
                              ldb, 0.0f, (float *)(void *)c, ldc);
            break;
        }
    }
}

static void blas_gemm(kiln__lk k, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t kk,
                      const void *a, int64_t lda, const void *b, int64_t ldb, void *c,
                      int64_t ldc) {
    double abuf[SMALL_TRANSPOSE], bbuf[SMALL_TRANSPOSE];
    size_t es = kiln__lk_size(k);
    /* The layout and GEMV shortcuts below are measured for real products; complex ones go
     * to GEMM as they are. */
    bool real = k == KILN__LK_F32 || k == KILN__LK_F64;
    kiln__cpu_threads_init();
    if (real && trans_a && m * kk <= SMALL_TRANSPOSE && (double)m * n * kk <= 262144.0) {
        small_transpose(abuf, a, m, kk, lda, es);
        a = abuf, lda = kk, trans_a = false;
    }
    if (real && trans_b && n * kk <= SMALL_TRANSPOSE && (double)m * n * kk <= 262144.0) {
        small_transpose(bbuf, b, kk, n, ldb, es);
        b = bbuf, ldb = n, trans_b = false;
    }
    /* A vector times a matrix: GEMV streams the matrix once, where GEMM packs it first
     * (3.5x slower for VGG's 1 x 25088 x 4096 layer). */
    if (real && ((m == 1 && n >= GEMV_MIN) || (n == 1 && m >= GEMV_MIN))) {
        /* y = op(M) x, with M row-major [rows x cols] (ld), op the transpose when tm. */
        bool row = m == 1;
        gemv_job j = {.f64 = k == KILN__LK_F64,
                      .trans = row ? !trans_b : trans_a,
                      .m = row ? b : a,
                      .x = row ? a : b,
                      .y = c,
                      .ld = row ? ldb : lda,
                      .incx = row ? (trans_a ? lda : 1) : (trans_b ? 1 : ldb),
                      .incy = row ? 1 : ldc};
        int64_t outs = row ? n : m;
        j.rows = j.trans ? kk : outs;
        j.cols = j.trans ? outs : kk;
        if (!j.f64 && j.trans && j.incy == 1 && kiln__gemv_f32_available()) {
            kiln__gemv_f32(j.x, j.incx, j.m, j.ld, kk, outs, j.y);
            return;
        }
        /* Below ~64k multiply-adds per block the wake-up costs more than the block. */
        int64_t per_block = kk * (outs < GEMV_BLOCK ? outs : GEMV_BLOCK);
        int64_t grain = per_block >= 65536 ? 1 : 65536 / per_block;
        bool serial = kiln__threads_in_parallel();
        kiln__parallel_for((outs + GEMV_BLOCK - 1) / GEMV_BLOCK, grain, gemv_blocks, &j);
        if (!serial) kiln__threads_sync_blas();
        return;
    }
    /* A few rows times a large matrix: streamed once, where GEMM packs it first (2.5x
     * slower for VGG's classifier at batch 8). */
    if (k == KILN__LK_F32 && !trans_a && !trans_b && m <= GEMM_ROWS_MAX &&
        (double)kk * (double)n >= GEMM_ROWS_MIN_MATRIX && kiln__gemm_rows_f32_available()) {
        kiln__gemm_rows_f32(a, lda, m, b, ldb, kk, n, c, ldc);
        return;
    }
    gemm_job j = {.k = k,
                  .ta = trans_a,
                  .tb = trans_b,
                  .split_m = m > n,
                  .m = m,
                  .n = n,
                  .kk = kk,
                  .lda = lda,
                  .ldb = ldb,
                  .ldc = ldc,
                  .a = a,
                  .b = b,
                  .c = c};
    int64_t extent = j.split_m ? m : n;
    bool big = (double)m * (double)n * (double)kk >= GEMM_PAR_MNK;
    /* Mid-sized products split narrower, so that two threads have two chunks. The chunks
     * depend on the sizes alone, never on the thread count: GEMM's bits depend on the shape
     * of each call (its edge kernels), so one product split in two chunks and the same
     * product whole differ in the last bit (a 1-thread split taken whole measured 5% faster
     * on cgemm 512, and broke threads_count's bitwise check). */
    j.chunk = !big ? extent : extent >= 2 * GEMM_CHUNK ? GEMM_CHUNK : GEMM_CHUNK_MIN;
    bool serial = kiln__threads_in_parallel();
    kiln__parallel_for((extent + j.chunk - 1) / j.chunk, 1, gemm_chunks, &j);
    if (!serial) kiln__threads_sync_blas();
}

void kiln__lk_gemm(kiln__lk k, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t kk,
                   const void *a, int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc) {
    if (m <= 0 || n <= 0) return;
    size_t es = kiln__lk_size(k);
    if (kk <= 0) {
        for (int64_t i = 0; i < m; i++)
            memset((unsigned char *)c + (size_t)(i * ldc) * es, 0, (size_t)n * es);
        return;
    }
    /* BLAS when the sizes fit its int and OpenBLAS can be opened; else the loops below. */
    bool fits = fits_blas(m) && fits_blas(n) && fits_blas(kk) && fits_blas(lda) && fits_blas(ldb) &&
                fits_blas(ldc);
    bool tiny = (double)m * (double)n * (double)kk <= SMALL_MNK;
    bool blas = k == KILN__LK_F32 || k == KILN__LK_F64 || k == KILN__LK_C64 || k == KILN__LK_C128;
    if (!tiny && fits && blas && kiln__blas_api_get()) {
        blas_gemm(k, trans_a, trans_b, m, n, kk, a, lda, b, ldb, c, ldc);
        return;
    }
    switch (k) {
    case KILN__LK_F32:
        (tiny ? small_loop_f32 : gemm_loop_f32)(trans_a, trans_b, m, n, kk, a, lda, b, ldb, c, ldc);
        break;
    case KILN__LK_F64:
        (tiny ? small_loop_f64 : gemm_loop_f64)(trans_a, trans_b, m, n, kk, a, lda, b, ldb, c, ldc);
        break;
    case KILN__LK_C64: gemm_loop_c64(trans_a, trans_b, m, n, kk, a, lda, b, ldb, c, ldc); break;
    case KILN__LK_C128: gemm_loop_c128(trans_a, trans_b, m, n, kk, a, lda, b, ldb, c, ldc); break;
    case KILN__LK_BOOL: gemm_loop_bool(trans_a, trans_b, m, n, kk, a, lda, b, ldb, c, ldc); break;
    case KILN__LK_U8: gemm_loop_u8(trans_a, trans_b, m, n, kk, a, lda, b, ldb, c, ldc); break;
    case KILN__LK_U16: gemm_loop_u16(trans_a, trans_b, m, n, kk, a, lda, b, ldb, c, ldc); break;
    case KILN__LK_U32: gemm_loop_u32(trans_a, trans_b, m, n, kk, a, lda, b, ldb, c, ldc); break;
    case KILN__LK_U64: gemm_loop_u64(trans_a, trans_b, m, n, kk, a, lda, b, ldb, c, ldc); break;
    }
}

/* ---- dot_general ------------------------------------------------------------------ */

/* An operand in the compute representation, laid out as [batch, rows, K] (or, with
 * trans, [batch, K, rows]). */
typedef struct operand {
    const void *data;
    bool trans;
    void *buf[2];
    size_t bytes[2];
} operand;

static void operand_free(kiln_ctx *cx, operand *o) {
    for (int i = 0; i < 2; i++)
        if (o->buf[i]) kiln__free(cx, o->buf[i], o->bytes[i]);
}

/* Converts t to the compute representation of `result` if needed, then lays it out by
 * `perm` (or by `alt` with trans, when alt is not NULL and costs no copy). */
static kiln_status operand_prepare(kiln_ctx *cx, const kiln_tensor *t, kiln_dtype result,
                                   const int32_t *perm, const int32_t *alt, operand *o) {
    const kiln_shape *s = kiln_tensor_shape(t);
    int64_t n = kiln_tensor_numel(t);
    size_t es = kiln__lk_size(kiln__lk_of(result));
    size_t bytes = (size_t)n * es;
    const void *data = kiln__in(t);
    if (!kiln__lk_same_repr(kiln_tensor_dtype(t), result)) {
        if (!(o->buf[0] = kiln__alloc(cx, bytes, KILN_DATA_ALIGNMENT, "dot_general")))
            return KILN_RESOURCE_EXHAUSTED;
        o->bytes[0] = bytes;
        kiln__lk_convert(o->buf[0], result, data, kiln_tensor_dtype(t), n);
        data = o->buf[0];
    }
    o->trans = false;
    if (kiln__lk_perm_is_trivial(s->rank, s->dims, perm)) {
        o->data = data;
    } else if (alt && kiln__lk_perm_is_trivial(s->rank, s->dims, alt)) {
        o->data = data;
        o->trans = true;
    } else {
        if (!(o->buf[1] = kiln__alloc(cx, bytes, KILN_DATA_ALIGNMENT, "dot_general")))
            return KILN_RESOURCE_EXHAUSTED;
        o->bytes[1] = bytes;
        kiln__lk_transpose(o->buf[1], data, es, s->rank, s->dims, perm);
        o->data = o->buf[1];
    }
    return KILN_OK;
}

/* perm_bfc = batch + free + contracting, perm_bcf = batch + contracting + free; the
 * product of the free sizes in *free_size. */
static void dot_layout(const kiln_shape *s, const kiln_dims *batch, const kiln_dims *contract,
                       int32_t *perm_bfc, int32_t *perm_bcf, int64_t *free_size) {
    bool used[KILN_MAX_RANK] = {false};
    int32_t nb = batch->count, nc = contract->count, nf = s->rank - nb - nc;
    for (int32_t i = 0; i < nb; i++) {
        perm_bfc[i] = perm_bcf[i] = (int32_t)batch->v[i];
        used[batch->v[i]] = true;
    }
    for (int32_t i = 0; i < nc; i++) {
        perm_bfc[nb + nf + i] = perm_bcf[nb + i] = (int32_t)contract->v[i];
        used[contract->v[i]] = true;
    }
    int64_t f = 1;
    int32_t j = 0;
    for (int32_t d = 0; d < s->rank; d++) {
        if (used[d]) continue;
        perm_bfc[nb + j] = perm_bcf[nb + nc + j] = d;
        f *= s->dims[d];
        j++;
    }
    *free_size = f;
}

typedef struct batch_job {
    kiln__lk k;
    bool ta, tb;
    int64_t M, N, K;
    size_t es;
    const unsigned char *a, *b;
    unsigned char *c;
} batch_job;

static void batch_range(void *user, int64_t begin, int64_t end) {
    const batch_job *j = user;
    int64_t M = j->M, N = j->N, K = j->K;
    for (int64_t i = begin; i < end; i++)
        kiln__lk_gemm(j->k, j->ta, j->tb, M, N, K, j->a + (size_t)(i * M * K) * j->es,
                      j->ta ? M : K, j->b + (size_t)(i * K * N) * j->es, j->tb ? K : N,
                      j->c + (size_t)(i * M * N) * j->es, N);
}

/* Batch entries per thread at least: about 32k multiply-adds, so that a thread's share
 * outweighs waking it (a few microseconds). */
static int64_t batch_grain(int64_t M, int64_t N, int64_t K) {
    double work = (double)M * (double)N * (double)K;
    return work >= 32768.0 ? 1 : (int64_t)(32768.0 / (work > 1 ? work : 1));
}

KILN__EVAL(DOT_GENERAL) {
    (void)n_operands, (void)n_results;
    const kiln_dot_params *p = &attrs->u.dot;
    const kiln_tensor *lhs = operands[0], *rhs = operands[1];
    kiln_tensor *res = results[0];
    kiln_dtype rd = kiln_tensor_dtype(res);
    const kiln_shape *ls = kiln_tensor_shape(lhs), *rs = kiln_tensor_shape(rhs);

    int32_t l_bfc[KILN_MAX_RANK], l_bcf[KILN_MAX_RANK], r_bfc[KILN_MAX_RANK], r_bcf[KILN_MAX_RANK];
    int64_t M, N, B = 1, K = 1;
    dot_layout(ls, &p->lhs_batching_dims, &p->lhs_contracting_dims, l_bfc, l_bcf, &M);
    dot_layout(rs, &p->rhs_batching_dims, &p->rhs_contracting_dims, r_bfc, r_bcf, &N);
    for (int32_t i = 0; i < p->lhs_batching_dims.count; i++)
        B *= ls->dims[p->lhs_batching_dims.v[i]];
    for (int32_t i = 0; i < p->lhs_contracting_dims.count; i++)
        K *= ls->dims[p->lhs_contracting_dims.v[i]];

    if (kiln_tensor_numel(res) == 0) return KILN_OK;
    void *out = kiln__out(res);
    if (K == 0) {
        memset(out, 0, kiln_tensor_nbytes(res));
        return KILN_OK;
    }
    kiln__lk k = kiln__lk_of(rd);
    size_t es = kiln__lk_size(k);
    bool blas = k == KILN__LK_F32 || k == KILN__LK_F64 || k == KILN__LK_C64 || k == KILN__LK_C128;
    operand lo = {0}, ro = {0};
    void *cbuf = NULL;
    size_t cbytes = (size_t)(B * M * N) * es;
    kiln_status s = operand_prepare(cx, lhs, rd, l_bfc, blas ? l_bcf : NULL, &lo);
    if (s == KILN_OK) s = operand_prepare(cx, rhs, rd, r_bcf, blas ? r_bfc : NULL, &ro);
    if (s == KILN_OK && !kiln__lk_same_repr(rd, rd) &&
        !(cbuf = kiln__alloc(cx, cbytes, KILN_DATA_ALIGNMENT, "dot_general")))
        s = KILN_RESOURCE_EXHAUSTED;
    if (s == KILN_OK) {
        batch_job j = {k, lo.trans, ro.trans, M, N, K, es, lo.data, ro.data, cbuf ? cbuf : out};
        /* Below OpenBLAS's own threading threshold (m * n * k of 64^3) each product runs on
         * one thread anyway, so the batch is split across threads instead; a product runs
         * the same code either way, so the bits do not depend on the thread count. */
        if (B > 1 && (double)M * (double)N * (double)K < 262144.0)
            kiln__parallel_for(B, batch_grain(M, N, K), batch_range, &j);
        else
            batch_range(&j, 0, B);
        if (cbuf) kiln__lk_store(out, rd, cbuf, B * M * N);
    }
    if (cbuf) kiln__free(cx, cbuf, cbytes);
    operand_free(cx, &lo);
    operand_free(cx, &ro);
    return s;
}
