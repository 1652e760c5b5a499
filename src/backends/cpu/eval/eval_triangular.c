/* SPDX-License-Identifier: Apache-2.0 */
/* triangular_solve and cholesky on the CPU, one matrix of the batch at a time. f32, f64 and
 * complex run OpenBLAS's trsm and LAPACK's potrf (as scipy and XLA do) in their own type;
 * without OpenBLAS, and for the other types, kiln's own loops run in double complex
 * arithmetic (a real value is (x, 0)), rounded once when stored: substitution and the
 * Cholesky-Banachiewicz order, the sums in index order. A matrix that is not positive
 * definite gives NaN from its first pivot that is not positive on, both ways (potrf's
 * failure is redone by the loops, which say where). */
#include <math.h>
#include <string.h>

#include "backends/cpu/eval/complex_value.h"
#include "backends/cpu/eval/eval.h"
#include "backends/cpu/lib/blas_api.h"
#include "base/alloc.h"
#include "core/element.h"

typedef kiln__cplx cplx;

static void load(const void *data, kiln_dtype dt, int64_t n, int64_t at, cplx *out) {
    for (int64_t i = 0; i < n; i++) {
        double re, im;
        kiln__element_load_complex(data, dt, at + i, &re, &im);
        out[i] = kiln__cplx_of(re, im);
    }
}

static void store(void *data, kiln_dtype dt, int64_t n, int64_t at, const cplx *in) {
    for (int64_t i = 0; i < n; i++)
        kiln__element_store_complex(data, dt, at + i, creal(in[i]), cimag(in[i]));
}

/* e = op(a) restricted to its triangle (ones on the diagonal with unit): lower-triangular
 * when the result says so. */
static bool effective(const cplx *a, cplx *e, int64_t m, bool lower, bool unit,
                      kiln_solve_transpose t) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < m; j++) {
            bool in = lower ? j <= i : j >= i;
            cplx v = i == j && unit ? 1 : in ? a[i * m + j] : 0;
            if (t == KILN_TRANSPOSE_NONE)
                e[i * m + j] = v;
            else
                e[j * m + i] = t == KILN_TRANSPOSE_ADJOINT ? conj(v) : v;
        }
    return t == KILN_TRANSPOSE_NONE ? lower : !lower;
}

/* x with e x = b (left, b [m, n]) or x e = b (b [n, m]), in place in b. */
static void substitute(const cplx *e, cplx *b, int64_t m, int64_t n, bool left, bool lower) {
    if (left) {
        for (int64_t c = 0; c < n; c++)
            for (int64_t s = 0; s < m; s++) {
                int64_t i = lower ? s : m - 1 - s;
                cplx acc = b[i * n + c];
                for (int64_t k = lower ? 0 : i + 1; k < (lower ? i : m); k++)
                    acc -= e[i * m + k] * b[k * n + c];
                b[i * n + c] = acc / e[i * m + i];
            }
    } else {
        /* sum_i x_i e[i][j] = b_j: a lower e is solved from the last column, an upper one
         * from the first */
        for (int64_t r = 0; r < n; r++) {
            cplx *x = b + r * m;
            for (int64_t s = 0; s < m; s++) {
                int64_t j = lower ? m - 1 - s : s;
                cplx acc = x[j];
                for (int64_t i = lower ? j + 1 : 0; i < (lower ? m : j); i++)
                    acc -= x[i] * e[i * m + j];
                x[j] = acc / e[j * m + j];
            }
        }
    }
}

/* The BLAS types: f32, f64, complex<f32>, complex<f64>. */
static bool blas_type(kiln_dtype dt) {
    return dt == KILN_F32 || dt == KILN_F64 || dt == KILN_C64 || dt == KILN_C128;
}

/* x in place of b (row-major [rows, cols]) with op(a) x = b or x op(a) = b, by trsm. */
static void trsm(const kiln__blas_api *blas, kiln_dtype dt, bool left, bool lower, bool unit,
                 kiln_solve_transpose t, int rows, int cols, const void *a, void *b) {
    enum CBLAS_SIDE side = left ? CblasLeft : CblasRight;
    enum CBLAS_UPLO uplo = lower ? CblasLower : CblasUpper;
    enum CBLAS_TRANSPOSE trans = t == KILN_TRANSPOSE_NONE ? CblasNoTrans
                                 : t == KILN_TRANSPOSE_T  ? CblasTrans
                                                          : CblasConjTrans;
    enum CBLAS_DIAG diag = unit ? CblasUnit : CblasNonUnit;
    int m = left ? rows : cols;
    static const float one_c[2] = {1, 0};
    static const double one_z[2] = {1, 0};
    switch (dt) {
    case KILN_F32:
        blas->cblas_strsm(CblasRowMajor, side, uplo, trans, diag, rows, cols, 1.0f, a, m, b, cols);
        return;
    case KILN_F64:
        blas->cblas_dtrsm(CblasRowMajor, side, uplo, trans, diag, rows, cols, 1.0, a, m, b, cols);
        return;
    case KILN_C64:
        blas->cblas_ctrsm(CblasRowMajor, side, uplo, trans, diag, rows, cols, one_c, a, m, b, cols);
        return;
    default:
        blas->cblas_ztrsm(CblasRowMajor, side, uplo, trans, diag, rows, cols, one_z, a, m, b, cols);
        return;
    }
}

KILN__EVAL(TRIANGULAR_SOLVE) {
    (void)n_operands, (void)n_results;
    kiln_dtype bdt = kiln_tensor_dtype(operands[1]);
    const kiln_shape *ashape = kiln_tensor_shape(operands[0]);
    const kiln_shape *bshape = kiln_tensor_shape(operands[1]);
    int32_t rank = bshape->rank;
    int64_t rows = bshape->dims[rank - 2], cols = bshape->dims[rank - 1];
    int64_t am = ashape->dims[rank - 1];
    const kiln__blas_api *blas =
        blas_type(bdt) && rows <= INT32_MAX && cols <= INT32_MAX ? kiln__blas_api_get() : NULL;
    if (blas && kiln_tensor_numel(results[0]) > 0) {
        size_t es = kiln_dtype_size(bdt);
        int64_t batch = kiln_tensor_numel(results[0]) / (rows * cols);
        memcpy(kiln__out(results[0]), kiln__in(operands[1]), kiln_tensor_nbytes(results[0]));
        for (int64_t k = 0; k < batch; k++)
            trsm(blas, bdt, attrs->u.triangular.left_side, attrs->u.triangular.lower,
                 attrs->u.triangular.unit_diagonal, attrs->u.triangular.transpose_a, (int)rows,
                 (int)cols, (const char *)kiln__in(operands[0]) + (size_t)(k * am * am) * es,
                 (char *)kiln__out(results[0]) + (size_t)(k * rows * cols) * es);
        return KILN_OK;
    }
    const kiln_tensor *at = operands[0], *bt = operands[1];
    kiln_tensor *rt = results[0];
    const kiln_shape *as = kiln_tensor_shape(at), *bs = kiln_tensor_shape(bt);
    int32_t r = as->rank;
    int64_t m = as->dims[r - 1], bn = bs->dims[r - 2] * bs->dims[r - 1];
    int64_t batch = m ? kiln_tensor_numel(at) / (m * m) : 0;
    if (kiln_tensor_numel(rt) == 0) return KILN_OK;
    bool left = attrs->u.triangular.left_side;
    int64_t n = bn / m; /* the other dimension of b */
    size_t bytes = (size_t)(2 * m * m + bn) * sizeof(cplx);
    cplx *a = kiln__alloc(cx, bytes, _Alignof(cplx), "triangular_solve");
    if (!a) return KILN_RESOURCE_EXHAUSTED;
    cplx *e = a + m * m, *b = e + m * m;
    kiln_dtype dt = kiln_tensor_dtype(bt);
    for (int64_t k = 0; k < batch; k++) {
        load(kiln__in(at), dt, m * m, k * m * m, a);
        load(kiln__in(bt), dt, bn, k * bn, b);
        bool lower = effective(a, e, m, attrs->u.triangular.lower,
                               attrs->u.triangular.unit_diagonal, attrs->u.triangular.transpose_a);
        substitute(e, b, m, n, left, lower);
        store(kiln__out(rt), dt, bn, k * bn, b);
    }
    kiln__free(cx, a, bytes);
    return KILN_OK;
}

/* Matrix k of a = L L^H by kiln's loops: L[i][j] = (a[i][j] - sum_k<j L[i][k]
 * conj(L[j][k])) / L[j][j] below the diagonal, L[j][j] = sqrt(a[j][j] - sum_k<j |L[j][k]|^2)
 * (NaN when not positive, and from there on). The upper factor is the adjoint of the lower
 * one of a^H. a and l: room for m * m values each. */
static void factor_by_loops(const kiln_tensor *at, kiln_tensor *rt, int64_t k, bool lower, cplx *a,
                            cplx *l) {
    int64_t m = kiln_tensor_shape(at)->dims[kiln_tensor_shape(at)->rank - 1];
    kiln_dtype dt = kiln_tensor_dtype(at);
    load(kiln__in(at), dt, m * m, k * m * m, a);
    /* read the lower triangle as it is, the upper one as the lower one of a^H */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < m; j++)
            l[i * m + j] = 0;
    for (int64_t j = 0; j < m; j++) {
        cplx ajj = lower ? a[j * m + j] : conj(a[j * m + j]);
        double d = creal(ajj);
        for (int64_t q = 0; q < j; q++)
            d -= creal(l[j * m + q] * conj(l[j * m + q]));
        double ljj = d > 0 ? sqrt(d) : NAN;
        l[j * m + j] = ljj;
        for (int64_t i = j + 1; i < m; i++) {
            cplx acc = lower ? a[i * m + j] : conj(a[j * m + i]);
            for (int64_t q = 0; q < j; q++)
                acc -= l[i * m + q] * conj(l[j * m + q]);
            l[i * m + j] = acc / ljj;
        }
    }
    if (!lower) /* U = L^H */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < i; j++) {
                l[j * m + i] = conj(l[i * m + j]);
                l[i * m + j] = 0;
            }
    store(kiln__out(rt), dt, m * m, k * m * m, l);
}

/* potrf on one row-major matrix in place: a row-major matrix is the column-major view of
 * its transpose, so its lower factor is LAPACK's upper one of the same bytes (and the
 * upper, the lower); the other triangle is then zeroed. False when potrf finds the matrix
 * not positive definite (the matrix is then left for the loops). */
static bool potrf(const kiln__blas_api *blas, kiln_dtype dt, bool lower, int m, void *a) {
    const char uplo = lower ? 'U' : 'L';
    int info = 0;
    switch (dt) {
    case KILN_F32: blas->spotrf_(&uplo, &m, a, &m, &info, 1); break;
    case KILN_F64: blas->dpotrf_(&uplo, &m, a, &m, &info, 1); break;
    case KILN_C64: blas->cpotrf_(&uplo, &m, a, &m, &info, 1); break;
    default: blas->zpotrf_(&uplo, &m, a, &m, &info, 1); break;
    }
    if (info != 0) return false;
    size_t es = kiln_dtype_size(dt);
    for (int64_t i = 0; i < m; i++) /* the other triangle: zero */
        for (int64_t j = lower ? i + 1 : 0; j < (lower ? m : i); j++)
            memset((char *)a + (size_t)(i * m + j) * es, 0, es);
    return true;
}

KILN__EVAL(CHOLESKY) {
    (void)n_operands, (void)n_results;
    const kiln_tensor *at = operands[0];
    kiln_tensor *rt = results[0];
    const kiln_shape *as = kiln_tensor_shape(at);
    int64_t m = as->dims[as->rank - 1];
    if (kiln_tensor_numel(rt) == 0) return KILN_OK;
    int64_t batch = kiln_tensor_numel(at) / (m * m);
    bool lower = attrs->u.triangular.lower;
    kiln_dtype dt = kiln_tensor_dtype(at);
    const kiln__blas_api *blas = blas_type(dt) && m <= INT32_MAX ? kiln__blas_api_get() : NULL;
    size_t es = kiln_dtype_size(dt), one = (size_t)(m * m) * es;
    if (blas) memcpy(kiln__out(rt), kiln__in(at), kiln_tensor_nbytes(rt));
    size_t bytes = (size_t)(2 * m * m) * sizeof(cplx);
    cplx *a = NULL;
    for (int64_t k = 0; k < batch; k++) {
        if (blas && potrf(blas, dt, lower, (int)m, (char *)kiln__out(rt) + (size_t)k * one))
            continue;
        /* no OpenBLAS, or not positive definite: the loops, which say where with NaN */
        if (!a && !(a = kiln__alloc(cx, bytes, _Alignof(cplx), "cholesky")))
            return KILN_RESOURCE_EXHAUSTED;
        factor_by_loops(at, rt, k, lower, a, a + m * m);
    }
    if (a) kiln__free(cx, a, bytes);
    return KILN_OK;
}
