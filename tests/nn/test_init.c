/* SPDX-License-Identifier: Apache-2.0 */
/* Initializer statistics: means, standard deviations and bounds of large draws. */
#include "nn_test.h"

static void moments(kiln_ctx *cx, kiln_tensor *t, double *mean, double *sd, double *lo,
                    double *hi) {
    expect_ok(cx);
    const float *v = kiln_tensor_data(t);
    int64_t n = kiln_tensor_numel(t);
    double s = 0, s2 = 0;
    *lo = INFINITY, *hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        s += v[i];
        s2 += (double)v[i] * v[i];
        *lo = fmin(*lo, v[i]);
        *hi = fmax(*hi, v[i]);
    }
    *mean = s / n;
    *sd = sqrt(s2 / n - *mean * *mean);
}

Test(nn_init, fan_based_and_plain_initializers) {
    kiln_ctx *cx = test_ctx();
    kiln_key key = kiln_key_from_seed(3);
    /* Conv kernel [O=64, I=32, 3, 3]: fan_in 288, fan_out 576. 18432 values: the sample
     * standard deviation is within 2% of the true one with overwhelming probability. */
    kiln_shape conv = KILN_SHAPE(64, 32, 3, 3);
    double fi = 288, fo = 576;
    struct {
        kiln_nn_init_kind kind;
        double scale, sd, bound; /* bound 0: normal */
    } cases[] = {
        {KILN_NN_INIT_HE_NORMAL, 0, sqrt(2 / fi), 0},
        {KILN_NN_INIT_HE_UNIFORM, 0, sqrt(6 / fi) / sqrt(3), sqrt(6 / fi)},
        {KILN_NN_INIT_GLOROT_NORMAL, 0, sqrt(2 / (fi + fo)), 0},
        {KILN_NN_INIT_GLOROT_UNIFORM, 0, sqrt(6 / (fi + fo)) / sqrt(3), sqrt(6 / (fi + fo))},
        {KILN_NN_INIT_NORMAL, 0.02, 0.02, 0},
        {KILN_NN_INIT_UNIFORM, 0.5, 0.5 / sqrt(3), 0.5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kiln_tensor *t = kiln_nn_init(cx, cases[i].kind, key, KILN_F32, conv, cases[i].scale);
        double m, sd, lo, hi;
        moments(cx, t, &m, &sd, &lo, &hi);
        cr_assert(fabs(m) < 0.05 * cases[i].sd, "case %zu: mean %g", i, m);
        cr_assert(fabs(sd / cases[i].sd - 1) < 0.02, "case %zu: sd %g, expected %g", i, sd,
                  cases[i].sd);
        if (cases[i].bound > 0)
            cr_assert(lo >= -cases[i].bound && hi < cases[i].bound, "case %zu: [%g, %g]", i, lo,
                      hi);
        else
            cr_assert(hi - lo > 6 * cases[i].sd, "case %zu: a normal draw spans several sd", i);
        /* The same key gives the same tensor. */
        kiln_tensor *again = kiln_nn_init(cx, cases[i].kind, key, KILN_F32, conv, cases[i].scale);
        cr_assert(memcmp(kiln_tensor_data(t), kiln_tensor_data(again), kiln_tensor_nbytes(t)) == 0);
    }
    /* Dense [in=200, out=100]: fan_in is the first dimension. */
    double m, sd, lo, hi;
    moments(cx, kiln_nn_init(cx, KILN_NN_INIT_HE_NORMAL, key, KILN_F32, KILN_SHAPE(200, 100), 0),
            &m, &sd, &lo, &hi);
    cr_assert(fabs(sd / sqrt(2.0 / 200) - 1) < 0.03, "dense sd %g", sd);
    kiln_tensor *z = kiln_nn_init(cx, KILN_NN_INIT_ZEROS, key, KILN_F64, KILN_SHAPE(4, 5), 0);
    expect_ok(cx);
    cr_assert_eq(kiln_tensor_dtype(z), KILN_F64);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(kiln_tensor_item(cx, z, i), 0);
    kiln_ctx_release(cx);
}
