/* SPDX-License-Identifier: Apache-2.0 */
/* A complex value from its parts, for the kernels that compute in double complex
 * (eval_elementwise_complex.c, eval_triangular.c). Includes <complex.h>: include it only
 * where complex arithmetic is done (it defines I and complex as macros). */
#ifndef KILN_BACKENDS_CPU_EVAL_COMPLEX_VALUE_H
#define KILN_BACKENDS_CPU_EVAL_COMPLEX_VALUE_H

#include <complex.h>
#include <string.h>

typedef double _Complex kiln__cplx;

/* re + im i (CMPLX is not in every C library's <complex.h> for every compiler): C11 lays a
 * complex value out as an array of its two parts. */
static inline kiln__cplx kiln__cplx_of(double re, double im) {
    double parts[2] = {re, im};
    kiln__cplx z;
    memcpy(&z, parts, sizeof z);
    return z;
}

#endif
