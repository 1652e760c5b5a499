/* SPDX-License-Identifier: Apache-2.0 */
/* Evaluator kernels that take complex values apart and put them together: real, imag
 * (of a float: the value and 0, as the spec defines them) and complex. Byte moves, so NaN
 * payloads and signed zeros pass unchanged. */
#include <string.h>

#include "backends/cpu/eval/eval.h"

/* Part `which` (0 real, 1 imaginary) of n complex values of parts of es bytes. */
static void take_part(const unsigned char *x, unsigned char *r, size_t es, int which,
                      int64_t n) {
    if (es == 4) {
        const float *px = (const float *)(const void *)x;
        float *pr = (float *)(void *)r;
        for (int64_t i = 0; i < n; i++)
            pr[i] = px[2 * i + which];
    } else {
        const double *px = (const double *)(const void *)x;
        double *pr = (double *)(void *)r;
        for (int64_t i = 0; i < n; i++)
            pr[i] = px[2 * i + which];
    }
}

static kiln_status run_part(kiln_tensor *const *operands, kiln_tensor **results, int which) {
    const kiln_tensor *x = operands[0];
    kiln_tensor *r = results[0];
    int64_t n = kiln_tensor_numel(r);
    if (n == 0) return KILN_OK;
    size_t es = kiln_dtype_size(kiln_tensor_dtype(r));
    if (kiln_dtype_is_complex(kiln_tensor_dtype(x)))
        take_part(kiln__in(x), kiln__out(r), es, which, n);
    else if (which == 0)
        memmove(kiln__out(r), kiln__in(x), (size_t)n * es); /* r may be x (kiln_move) */
    else
        memset(kiln__out(r), 0, (size_t)n * es); /* +0: the spec's imag of a real value */
    return KILN_OK;
}

KILN__EVAL(REAL) {
    (void)cx, (void)attrs, (void)n_operands, (void)n_results;
    return run_part(operands, results, 0);
}

KILN__EVAL(IMAG) {
    (void)cx, (void)attrs, (void)n_operands, (void)n_results;
    return run_part(operands, results, 1);
}

KILN__EVAL(COMPLEX) {
    (void)cx, (void)attrs, (void)n_operands, (void)n_results;
    kiln_tensor *r = results[0];
    int64_t n = kiln_tensor_numel(r);
    if (n == 0) return KILN_OK;
    if (kiln_tensor_dtype(r) == KILN_C64) {
        const float *re = kiln__in(operands[0]), *im = kiln__in(operands[1]);
        float *pr = kiln__out(r);
        for (int64_t i = 0; i < n; i++)
            pr[2 * i] = re[i], pr[2 * i + 1] = im[i];
    } else {
        const double *re = kiln__in(operands[0]), *im = kiln__in(operands[1]);
        double *pr = kiln__out(r);
        for (int64_t i = 0; i < n; i++)
            pr[2 * i] = re[i], pr[2 * i + 1] = im[i];
    }
    return KILN_OK;
}
