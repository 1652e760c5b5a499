/* SPDX-License-Identifier: Apache-2.0 */
/* The f32 sin/cos kernels of src/backends/cpu/lib/vmath.c: a sample of the exhaustive check of
 * bench/vmath_check.c (error against libm's double functions, at most 0.5018 ulp), the same
 * bits from every instruction set, at every position and vector tail, in place or not;
 * -0, infinities, NaN and the arguments around the fast path's bound; and both executors
 * (eager and jitted) calling these kernels. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "backends/cpu/lib/vmath.h"
#include "test_util.h"

/* The largest error the exhaustive check measured, rounded up (ulps of the result). */
#define MAX_ULP 0.5018

static float f_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t u_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static double reference(kiln__vm_fn fn, float x) {
    return fn == KILN__VM_SIN ? sin((double)x) : cos((double)x);
}

/* The spacing of floats at y. */
static double ulp_at(double y) {
    int e;
    frexp(fabs(y), &e);
    return ldexp(1.0, (e - 1 < -126 ? -126 : e - 1) - 23);
}

/* Every 65537th bit pattern (all exponents, signs, NaN payloads) and a dense run over
 * [-8, 8], where the data of most programs lies. */
static float *sample_inputs(int64_t *out_n) {
    int64_t n_bits = ((int64_t)1 << 32) / 65537 + 1, n_dense = 20000;
    float *x = malloc((size_t)(n_bits + n_dense) * sizeof *x);
    cr_assert_not_null(x);
    int64_t n = 0;
    for (uint64_t b = 0; b <= UINT32_MAX; b += 65537)
        x[n++] = f_of((uint32_t)b);
    for (int64_t i = 0; i < n_dense; i++)
        x[n++] = (float)(-8.0 + 16.0 * (double)i / (double)n_dense);
    *out_n = n;
    return x;
}

static void check_accuracy(kiln__vm_fn fn) {
    int64_t n;
    float *x = sample_inputs(&n);
    float *r = malloc((size_t)n * sizeof *r);
    cr_assert_not_null(r);
    kiln__vm_get(fn, KILN__VM_BEST)(x, r, n);
    int64_t not_rounded = 0;
    for (int64_t i = 0; i < n; i++) {
        double want = reference(fn, x[i]);
        if (isnan(want)) {
            cr_assert(isnan(r[i]), "fn %d of %a: %a, want NaN", (int)fn, (double)x[i],
                      (double)r[i]);
            continue;
        }
        double err = fabs((double)r[i] - want) / ulp_at(want);
        cr_assert_leq(err, MAX_ULP, "fn %d of %a: %a is %.4f ulp from %a", (int)fn, (double)x[i],
                      (double)r[i], err, want);
        not_rounded += u_of(r[i]) != u_of((float)want);
    }
    /* Misrounding needs the exact value within 2^-33.5 of a midpoint: rare. */
    cr_assert_lt(not_rounded, n / 1000, "%lld of %lld results not correctly rounded",
                 (long long)not_rounded, (long long)n);
    free(x);
    free(r);
}

Test(vmath, sin_within_bound_of_libm_double) { check_accuracy(KILN__VM_SIN); }
Test(vmath, cos_within_bound_of_libm_double) { check_accuracy(KILN__VM_COS); }

Test(vmath, every_isa_gives_the_baseline_bits) {
    int64_t n;
    float *x = sample_inputs(&n);
    float *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
    cr_assert(want && got);
    for (int fn = 0; fn < KILN__VM_N_FN; fn++) {
        kiln__vm_get((kiln__vm_fn)fn, KILN__VM_BASELINE)(x, want, n);
        for (int i = 0; i < n; i++)
            cr_assert_eq(u_of(want[i]), u_of(kiln__vm_scalar((kiln__vm_fn)fn, x[i])));
        for (int isa = KILN__VM_AVX2; isa < KILN__VM_N_ISA; isa++) {
            kiln__vm_kernel k = kiln__vm_get((kiln__vm_fn)fn, (kiln__vm_isa)isa);
            if (!k) continue; /* this CPU lacks it */
            k(x, got, n);
            for (int64_t i = 0; i < n; i++)
                cr_assert_eq(u_of(got[i]), u_of(want[i]), "fn %d isa %d of %a: %a vs %a", fn, isa,
                             (double)x[i], (double)got[i], (double)want[i]);
        }
    }
    free(x);
    free(want);
    free(got);
}

/* Each length 0..40 at each offset 0..16: an element's bits depend on its value only. */
Test(vmath, tails_and_offsets_do_not_change_results) {
    float x[64], r[64], one;
    for (int i = 0; i < 64; i++)
        x[i] = (float)(i * 0.37 - 11.0) * (i % 5 == 0 ? 1e6f : 1.0f);
    for (int fn = 0; fn < KILN__VM_N_FN; fn++)
        for (int isa = 0; isa < KILN__VM_N_ISA; isa++) {
            kiln__vm_kernel k = kiln__vm_get((kiln__vm_fn)fn, (kiln__vm_isa)isa);
            if (!k) continue;
            for (int off = 0; off <= 16; off++)
                for (int len = 0; off + len <= 40; len++) {
                    for (int i = 0; i < 64; i++)
                        r[i] = -1.0f;
                    k(x + off, r + off, len);
                    for (int i = 0; i < 64; i++) {
                        bool inside = i >= off && i < off + len;
                        one = inside ? kiln__vm_scalar((kiln__vm_fn)fn, x[i]) : -1.0f;
                        cr_assert_eq(u_of(r[i]), u_of(one), "fn %d isa %d off %d len %d at %d", fn,
                                     isa, off, len, i);
                    }
                }
        }
}

Test(vmath, in_place) {
    float x[37], y[37];
    for (int i = 0; i < 37; i++)
        x[i] = y[i] = (float)i * 0.9f - 15.0f;
    kiln__vm_kernel k = kiln__vm_get(KILN__VM_COS, KILN__VM_BEST);
    k(x, x, 37);
    for (int i = 0; i < 37; i++)
        cr_assert_eq(u_of(x[i]), u_of(kiln__vm_scalar(KILN__VM_COS, y[i])));
}

/* -0 keeps its sign through sin; infinities give NaN, NaN stays NaN; arguments beyond the
 * fast path's bound (and on both sides of it) give libm's double result rounded. */
Test(vmath, special_values) {
    float bound = (float)KILN__VM_TRIG_MAX;
    float x[] = {0.0f,
                 -0.0f,
                 INFINITY,
                 -INFINITY,
                 NAN,
                 -NAN,
                 1e-45f,
                 -1e-45f,
                 1e-30f,
                 FLT_MAX,
                 -FLT_MAX,
                 1e30f,
                 nextafterf(bound, 0),
                 bound,
                 nextafterf(bound, 2 * bound),
                 -bound,
                 3e7f,
                 -1.2345678e9f,
                 8388608.5f,
                 0x1.921fb6p+0f};
    int n = (int)(sizeof x / sizeof x[0]);
    float r[sizeof x / sizeof x[0]];
    for (int fn = 0; fn < KILN__VM_N_FN; fn++)
        for (int isa = 0; isa < KILN__VM_N_ISA; isa++) {
            kiln__vm_kernel k = kiln__vm_get((kiln__vm_fn)fn, (kiln__vm_isa)isa);
            if (!k) continue;
            k(x, r, n);
            cr_assert_eq(u_of(r[0]), u_of(fn == KILN__VM_SIN ? 0.0f : 1.0f));
            cr_assert_eq(u_of(r[1]), u_of(fn == KILN__VM_SIN ? -0.0f : 1.0f));
            for (int i = 2; i < 6; i++)
                cr_assert(isnan(r[i]), "fn %d of %a: %a", fn, (double)x[i], (double)r[i]);
            for (int i = 6; i < n; i++) {
                double want = reference((kiln__vm_fn)fn, x[i]);
                double err = fabs((double)r[i] - want) / ulp_at(want);
                cr_assert_leq(err, MAX_ULP, "fn %d isa %d of %a: %a vs %a", fn, isa, (double)x[i],
                              (double)r[i], want);
            }
            /* beyond the bound: exactly the rounded double function */
            for (int i = 9; i < n; i++)
                if (!(fabsf(x[i]) <= bound))
                    cr_assert_eq(u_of(r[i]), u_of((float)reference((kiln__vm_fn)fn, x[i])));
        }
}

Test(vmath, bad_function_or_isa_gives_null) {
    cr_assert_null(kiln__vm_get(KILN__VM_N_FN, KILN__VM_BEST));
    cr_assert_null(kiln__vm_get((kiln__vm_fn)-1, KILN__VM_BEST));
    cr_assert_null(kiln__vm_get(KILN__VM_SIN, KILN__VM_N_ISA));
    cr_assert_null(kiln__vm_get(KILN__VM_SIN, (kiln__vm_isa)-2));
    cr_assert_not_null(kiln__vm_get(KILN__VM_SIN, KILN__VM_BASELINE));
}

static kiln_status fn_trig(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] = kiln_sine(cx, in[0]);
    out[1] = kiln_cosine(cx, in[0]);
    return kiln_ctx_status(cx);
}

/* Eager (the evaluator), jitted (the fused engine) and f16 (computed in f32, then rounded)
 * all go through these kernels. */
Test(vmath, both_executors_use_these_kernels) {
    kiln_ctx *cx = test_ctx();
    enum { N = 3001 };
    static float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(i - N / 2) * 0.0123f + (i % 7 == 0 ? 1e6f : 0.0f);
    kiln_tensor *t = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(N), x, sizeof x);
    kiln_tensor *eager[2];
    fn_trig(cx, &t, eager, NULL);
    expect_ok(cx);
    kiln_jit *f;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){fn_trig, NULL}, 1, 2, NULL, &f), KILN_OK);
    kiln_tensor *jitted[2];
    cr_assert_eq(kiln_jit_call_list(cx, f, &t, jitted), KILN_OK, "%s", kiln_ctx_error_message(cx));
    for (int k = 0; k < 2; k++) {
        const float *e = kiln_tensor_data(eager[k]), *j = kiln_tensor_data(jitted[k]);
        for (int i = 0; i < N; i++) {
            uint32_t want = u_of(kiln__vm_scalar(k ? KILN__VM_COS : KILN__VM_SIN, x[i]));
            cr_assert_eq(u_of(e[i]), want, "eager %d at %d", k, i);
            cr_assert_eq(u_of(j[i]), want, "jitted %d at %d", k, i);
        }
    }
    kiln_tensor *h = kiln_convert(cx, t, KILN_F16);
    kiln_tensor *hs = kiln_sine(cx, h);
    expect_ok(cx);
    const uint16_t *hd = kiln_tensor_data(hs);
    for (int i = 0; i < N; i++) {
        float xi = kiln_f16_to_f32(((const uint16_t *)kiln_tensor_data(h))[i]);
        cr_assert_eq(hd[i], kiln_f32_to_f16(kiln__vm_scalar(KILN__VM_SIN, xi)), "f16 at %d", i);
    }
    kiln_jit_release(f);
    kiln_ctx_release(cx);
}
