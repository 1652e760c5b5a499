/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the nn tests: tensors from arrays, element access, comparisons. */
#ifndef KILN_NN_TEST_H
#define KILN_NN_TEST_H

#include <math.h>
#include <stdlib.h>

#include "test_util.h"

/* An f32 tensor with the given values (owned by the ctx's scope). */
static inline kiln_tensor *tf32(kiln_ctx *cx, kiln_shape s, const float *v) {
    int64_t n = 1;
    for (int32_t i = 0; i < s.rank; i++)
        n *= s.dims[i];
    return kiln_tensor_from_host(cx, KILN_F32, s, v, (size_t)n * sizeof(float));
}

static inline kiln_tensor *ti32(kiln_ctx *cx, kiln_shape s, const int32_t *v) {
    int64_t n = 1;
    for (int32_t i = 0; i < s.rank; i++)
        n *= s.dims[i];
    return kiln_tensor_from_host(cx, KILN_I32, s, v, (size_t)n * sizeof(int32_t));
}

/* Deterministic pseudo-random values in [-1, 1) (a tiny LCG, independent of kiln). */
static inline void fill(float *v, int64_t n, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = (float)((s >> 8) * (1.0 / 16777216.0) * 2 - 1);
    }
}

/* Asserts t is f32 with shape s and elements within atol + rtol*|ref| of ref. */
#define expect_close(cx, t, s, ref, atol, rtol)                                             \
    do {                                                                                    \
        expect_ok(cx);                                                                      \
        kiln_shape es_ = (s);                                                               \
        cr_assert_not_null((t));                                                            \
        cr_assert(kiln_shape_equal(kiln_tensor_shape(t), &es_), "shape differs");           \
        int64_t n_ = kiln_tensor_numel(t);                                                  \
        for (int64_t i_ = 0; i_ < n_; i_++) {                                               \
            double got_ = kiln_tensor_item(cx, (t), i_), want_ = (ref)[i_];                 \
            cr_assert(fabs(got_ - want_) <= (atol) + (rtol)*fabs(want_),                    \
                      "element %lld: got %.9g, expected %.9g", (long long)i_, got_, want_); \
        }                                                                                   \
    } while (0)

#endif
