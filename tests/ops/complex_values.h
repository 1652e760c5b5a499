/* SPDX-License-Identifier: Apache-2.0 */
/* Complex values in tests: tensors made from their parts, elements read back as double
 * complex, and values rounded to a dtype's parts as the kernels store them. */
#ifndef KILN_TESTS_COMPLEX_VALUES_H
#define KILN_TESTS_COMPLEX_VALUES_H
#include <complex.h>
#include <math.h>

#include "core/element.h"

/* glibc's <complex.h> defines CMPLX only for compilers with __builtin_complex; the values
 * here are finite where it matters. */
#ifndef CMPLX
#define CMPLX(x, y) ((double complex)((double)(x) + _Complex_I * (double)(y)))
#endif
#include "test_util.h"

static const kiln_dtype complex_types[2] = {KILN_C64, KILN_C128};

/* A tensor of n complex values (re[i], im[i]). */
static inline kiln_tensor *complex_tensor(kiln_ctx *cx, kiln_dtype dt, kiln_shape shape,
                                   const double *re, const double *im, int64_t n) {
    size_t es = kiln_dtype_size(dt);
    unsigned char buf[16 * 256];
    cr_assert_leq((size_t)n * es, sizeof buf);
    for (int64_t i = 0; i < n; i++)
        kiln__element_store_complex(buf, dt, i, re[i], im[i]);
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, shape, buf, (size_t)n * es);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

static inline double complex element(const kiln_tensor *t, int64_t i) {
    double re, im;
    kiln__element_load_complex(kiln_tensor_data(t), kiln_tensor_dtype(t), i, &re, &im);
    return CMPLX(re, im);
}

/* The value rounded to the dtype's parts, as the kernels store it. */
static inline double complex rounded(kiln_dtype dt, double complex z) {
    if (dt == KILN_C64) return CMPLX((float)creal(z), (float)cimag(z));
    return z;
}

#endif
