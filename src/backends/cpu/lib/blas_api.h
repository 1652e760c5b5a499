/* SPDX-License-Identifier: Apache-2.0 */
/* OpenBLAS as kiln calls it: opened at run time (dlopen) when a product first needs it,
 * never linked, so that a process that multiplies no matrices never maps it (with
 * libgfortran behind it: a millisecond of start-up when it was linked). Without it, f32, f64
 * and complex products run as kiln's own loops (eval_dot.c), slower but the same semantics. */
#ifndef KILN_BACKENDS_CPU_BLAS_API_H
#define KILN_BACKENDS_CPU_BLAS_API_H

#include <cblas.h>
#include <stdbool.h>

/* OpenBLAS's own thread-count setter (every flavour has it; cblas.h may not declare it). */
void openblas_set_num_threads(int num_threads);

/* LAPACK's Cholesky factorization as OpenBLAS exports it (Fortran's: column-major, every
 * argument by address, the string's hidden length last). */
void spotrf_(const char *uplo, const int *n, float *a, const int *lda, int *info, size_t len);
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t len);
void cpotrf_(const char *uplo, const int *n, void *a, const int *lda, int *info, size_t len);
void zpotrf_(const char *uplo, const int *n, void *a, const int *lda, int *info, size_t len);

/* Every OpenBLAS function kiln calls. */
#define KILN_BLAS_FUNCTIONS(X) \
    X(cblas_sgemm)             \
    X(cblas_dgemm)             \
    X(cblas_cgemm)             \
    X(cblas_zgemm)             \
    X(cblas_sgemv)             \
    X(cblas_dgemv)             \
    X(cblas_strsm)             \
    X(cblas_dtrsm)             \
    X(cblas_ctrsm)             \
    X(cblas_ztrsm)             \
    X(spotrf_)                 \
    X(dpotrf_)                 \
    X(cpotrf_)                 \
    X(zpotrf_)                 \
    X(openblas_set_num_threads)

/* The entry points, each named as the function it points to. */
typedef struct kiln__blas_api {
#define KILN_BLAS_MEMBER(name) __typeof__(name) *name;
    KILN_BLAS_FUNCTIONS(KILN_BLAS_MEMBER)
#undef KILN_BLAS_MEMBER
} kiln__blas_api;

/* OpenBLAS, opened on the first call (thread-safe; its thread count set to kiln's): a table
 * kiln owns, valid for the life of the process; or NULL when it cannot be opened (the
 * library is missing or lacks an entry point: kiln__blas_api_error says which). Later calls
 * give the same answer. */
const kiln__blas_api *kiln__blas_api_get(void);

/* OpenBLAS if it has been opened already, else NULL; never opens it. */
const kiln__blas_api *kiln__blas_api_if_open(void);

/* Why kiln__blas_api_get returned NULL, once it has ("" otherwise). */
const char *kiln__blas_api_error(void);

/* Tests only: whether this process has OpenBLAS mapped (from /proc/self/maps). */
bool kiln__blas_api_mapped(void);

/* Tests only: the library kiln__blas_api_get opens instead of OpenBLAS; effective before
 * the first open only. */
void kiln__blas_api_use_library(const char *name);

/* Keeps OpenBLAS's own thread count in step with kiln's (registers the hook of
 * base/threads.h once per process). Thread-safe and cheap after the first call; called
 * before any BLAS use. */
void kiln__cpu_threads_init(void);

#endif
