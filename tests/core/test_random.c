/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <stdint.h>

#include "failing_allocator.h"
#include "test_util.h"

/* Random123's published known-answer vectors for Philox-4x32-10 (kat_vectors). */
Test(philox, random123_known_answers) {
    static const struct {
        uint32_t ctr[4], key[2], out[4];
    } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint32_t out[4];
        kiln_philox4x32_10(kat[i].ctr, kat[i].key, out);
        for (int w = 0; w < 4; w++)
            cr_assert_eq(out[w], kat[i].out[w], "vector %zu word %d: %08x", i, w, out[w]);
    }
}

Test(random, the_bits_to_values_mapping_is_fixed) {
    /* Seed 0 is key {0, 0}; element 0 uses counter {0, 0, 0, 0}, whose first output word
     * is 0x6627e8d5 (above): uniform f32 is its top 24 bits over 2^24. */
    kiln_ctx *cx = test_ctx();
    kiln_tensor *u = kiln_random_uniform(cx, kiln_key_from_seed(0), KILN_F32, KILN_SHAPE(1), 0, 1);
    cr_assert_eq(kiln_tensor_item(cx, u, 0), (double)0x6627e8 / 16777216.0);
    kiln_tensor *b = kiln_random_bernoulli(cx, kiln_key_from_seed(0), KILN_SHAPE(1), 0.4);
    cr_assert_eq(kiln_tensor_item(cx, b, 0), 1.0); /* 0x6627e8d5 < 0.4 * 2^32 */
    kiln_tensor *i = kiln_random_int(cx, kiln_key_from_seed(0), KILN_I64, KILN_SHAPE(1), 0, 1000);
    uint64_t bits = 0x6627e8d5ull | (0xe169c58dull << 32);
    cr_assert_eq(kiln_tensor_item(cx, i, 0), (double)(bits % 1000));
    kiln_key k = kiln_key_from_seed(0x123456789abcdefull);
    cr_assert_eq(k.words[0], 0x89abcdefu);
    cr_assert_eq(k.words[1], 0x01234567u);
    kiln_ctx_release(cx);
}

static void to_f64(kiln_ctx *cx, kiln_tensor *t, double *out, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        out[i] = kiln_tensor_item(cx, t, i);
}

Test(random, same_key_same_values_different_keys_differ) {
    kiln_ctx *cx = test_ctx();
    kiln_key key = kiln_key_from_seed(7), a, b;
    kiln_key_split(key, &a, &b);
    cr_assert(a.words[0] != b.words[0] || a.words[1] != b.words[1]);
    cr_assert(a.words[0] != key.words[0] || a.words[1] != key.words[1]);
    kiln_key f1 = kiln_key_fold_in(key, 1), f2 = kiln_key_fold_in(key, 2);
    cr_assert(f1.words[0] != f2.words[0] || f1.words[1] != f2.words[1]);
    kiln_key_split(key, NULL, NULL);

    double x[64], y[64], z[64];
    to_f64(cx, kiln_random_normal(cx, a, KILN_F32, KILN_SHAPE(8, 8)), x, 64);
    to_f64(cx, kiln_random_normal(cx, a, KILN_F32, KILN_SHAPE(8, 8)), y, 64);
    to_f64(cx, kiln_random_normal(cx, b, KILN_F32, KILN_SHAPE(8, 8)), z, 64);
    int same = 0;
    for (int i = 0; i < 64; i++) {
        cr_assert_eq(x[i], y[i]);
        same += x[i] == z[i];
    }
    cr_assert_lt(same, 2);
    /* Element i depends only on (key, i): a prefix of a bigger tensor is the same. */
    kiln_tensor *big = kiln_random_normal(cx, a, KILN_F32, KILN_SHAPE(1000));
    for (int i = 0; i < 64; i++)
        cr_assert_eq(kiln_tensor_item(cx, big, i), x[i]);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(random, uniform_stays_in_range_for_every_float_dtype) {
    kiln_ctx *cx = test_ctx();
    kiln_dtype types[] = {KILN_F16, KILN_BF16, KILN_F32, KILN_F64};
    for (size_t d = 0; d < 4; d++) {
        kiln_tensor *t =
            kiln_random_uniform(cx, kiln_key_from_seed(d), types[d], KILN_SHAPE(20000), -2.0, 3.0);
        cr_assert_not_null(t);
        double sum = 0, lo = 1e9, hi = -1e9;
        for (int64_t i = 0; i < 20000; i++) {
            double v = kiln_tensor_item(cx, t, i);
            cr_assert(v >= -2.0 && v < 3.0, "%s: %g", kiln_dtype_name(types[d]), v);
            sum += v;
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
        cr_assert_lt(fabs(sum / 20000 - 0.5), 0.05, "mean %g", sum / 20000);
        cr_assert_lt(lo, -1.9);
        cr_assert_gt(hi, 2.9);
    }
    /* bf16 has 8 bits of precision: many draws would round up to hi; none may equal it. */
    kiln_tensor *b =
        kiln_random_uniform(cx, kiln_key_from_seed(3), KILN_BF16, KILN_SHAPE(5000), 0, 1);
    for (int64_t i = 0; i < 5000; i++)
        cr_assert_lt(kiln_tensor_item(cx, b, i), 1.0);
    kiln_ctx_release(cx);
}

Test(random, normal_moments) {
    kiln_ctx *cx = test_ctx();
    const int n = 50000;
    kiln_tensor *t = kiln_random_normal(cx, kiln_key_from_seed(11), KILN_F64, KILN_SHAPE(n));
    double sum = 0, sq = 0;
    int beyond3 = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = kiln_tensor_item(cx, t, i);
        cr_assert(isfinite(v));
        sum += v;
        sq += v * v;
        beyond3 += fabs(v) > 3;
    }
    double mean = sum / n, var = sq / n - mean * mean;
    cr_assert_lt(fabs(mean), 0.02, "mean %g", mean);
    cr_assert_lt(fabs(var - 1), 0.03, "var %g", var);
    cr_assert(beyond3 > 50 && beyond3 < 220, "%d beyond 3 sigma", beyond3); /* ~135 */
    kiln_ctx_release(cx);
}

Test(random, bernoulli_and_integers) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *b = kiln_random_bernoulli(cx, kiln_key_from_seed(5), KILN_SHAPE(20000), 0.3);
    cr_assert_eq(kiln_tensor_dtype(b), KILN_BOOL);
    int64_t ones = 0;
    for (int64_t i = 0; i < 20000; i++)
        ones += kiln_tensor_item(cx, b, i) != 0;
    cr_assert_lt(fabs(ones / 20000.0 - 0.3), 0.015);
    kiln_tensor *never = kiln_random_bernoulli(cx, kiln_key_from_seed(5), KILN_SHAPE(1000), 0.0);
    kiln_tensor *always = kiln_random_bernoulli(cx, kiln_key_from_seed(5), KILN_SHAPE(1000), 1.0);
    for (int64_t i = 0; i < 1000; i++) {
        cr_assert_eq(kiln_tensor_item(cx, never, i), 0.0);
        cr_assert_eq(kiln_tensor_item(cx, always, i), 1.0);
    }
    int seen[7] = {0};
    kiln_tensor *r = kiln_random_int(cx, kiln_key_from_seed(9), KILN_I8, KILN_SHAPE(7000), -3, 4);
    for (int64_t i = 0; i < 7000; i++) {
        double v = kiln_tensor_item(cx, r, i);
        cr_assert(v >= -3 && v < 4);
        seen[(int)v + 3]++;
    }
    for (int k = 0; k < 7; k++)
        cr_assert_gt(seen[k], 800);
    kiln_tensor *full =
        kiln_random_int(cx, kiln_key_from_seed(9), KILN_U8, KILN_SHAPE(100), 0, 256);
    cr_assert_not_null(full);
    kiln_tensor *wide =
        kiln_random_int(cx, kiln_key_from_seed(9), KILN_I64, KILN_SHAPE(100), INT64_MIN, INT64_MAX);
    cr_assert_not_null(wide);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(random, bad_arguments) {
    kiln_ctx *cx = test_ctx();
    kiln_key k = kiln_key_from_seed(1);
    cr_assert_null(kiln_random_uniform(cx, k, KILN_I32, KILN_SHAPE(2), 0, 1));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_random_uniform: dtype is i32; expected a float type");
    cr_assert_null(kiln_random_uniform(cx, k, KILN_F32, KILN_SHAPE(2), 1, 1));
    expect_error(cx, KILN_INVALID_ARGUMENT, "lo < hi");
    cr_assert_null(kiln_random_uniform(cx, k, KILN_F32, KILN_SHAPE(2), 0, INFINITY));
    expect_error(cx, KILN_INVALID_ARGUMENT, "finite");
    cr_assert_null(kiln_random_normal(cx, k, KILN_BOOL, KILN_SHAPE(2)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_random_normal: dtype is i1");
    cr_assert_null(kiln_random_normal(cx, k, KILN_F32, KILN_SHAPE(-2)));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_random_normal: shape [-2]");
    cr_assert_null(kiln_random_bernoulli(cx, k, KILN_SHAPE(2), 1.5));
    expect_error(cx, KILN_INVALID_ARGUMENT, "p is 1.5");
    cr_assert_null(kiln_random_bernoulli(cx, k, KILN_SHAPE(2), NAN));
    expect_error(cx, KILN_INVALID_ARGUMENT, "p is nan");
    cr_assert_null(kiln_random_int(cx, k, KILN_F32, KILN_SHAPE(2), 0, 5));
    expect_error(cx, KILN_INVALID_ARGUMENT, "expected an integer type");
    cr_assert_null(kiln_random_int(cx, k, KILN_I32, KILN_SHAPE(2), 5, 5));
    expect_error(cx, KILN_INVALID_ARGUMENT, "[5, 5)");
    cr_assert_null(kiln_random_int(cx, k, KILN_U8, KILN_SHAPE(2), -1, 5));
    expect_error(cx, KILN_INVALID_ARGUMENT, "within ui8");
    cr_assert_null(kiln_random_int(cx, k, KILN_I8, KILN_SHAPE(2), 0, 130));
    expect_error(cx, KILN_INVALID_ARGUMENT, "within i8");
    kiln_ctx_release(cx);
}

/* Runs a workload of every tensor maker; returns the ctx's status at the end. */
static kiln_status workload(kiln_ctx *cx) {
    kiln_scope_begin(cx);
    kiln_key key = kiln_key_from_seed(1);
    kiln_tensor *ts[] = {
        kiln_zeros(cx, KILN_F32, KILN_SHAPE(4)),
        kiln_ones(cx, KILN_I8, KILN_SHAPE(2, 2)),
        kiln_full(cx, KILN_BF16, KILN_SHAPE(3), 0.5),
        kiln_full_int(cx, KILN_I64, KILN_SHAPE(3), 5),
        kiln_scalar(cx, 1, KILN_F64),
        kiln_iota(cx, KILN_I32, KILN_SHAPE(2, 3), 1),
        kiln_arange(cx, KILN_F32, 0, 10, 1),
        kiln_linspace(cx, KILN_F64, 0, 1, 5),
        kiln_random_uniform(cx, key, KILN_F32, KILN_SHAPE(5), 0, 1),
        kiln_random_normal(cx, key, KILN_F16, KILN_SHAPE(5)),
        kiln_random_bernoulli(cx, key, KILN_SHAPE(5), 0.5),
        kiln_random_int(cx, key, KILN_U16, KILN_SHAPE(5), 0, 9),
        kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2), (float[]){1, 2}, 8),
    };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        char *s = kiln_tensor_to_string(cx, ts[i], NULL);
        kiln_string_free(cx, s);
    }
    kiln_tensor *kept = kiln_tensor_retain(ts[5]);
    kiln_scope_end(cx);
    kiln_tensor_release(kept);
    return kiln_ctx_status(cx);
}

Test(alloc_failure, every_maker_fails_cleanly_at_every_allocation) {
    bool succeeded = false;
    for (int64_t n = 0; n < 400 && !succeeded; n++) {
        failing_allocator fa;
        failing_allocator_init(&fa, n);
        kiln_ctx_options o = kiln_ctx_options_default();
        o.allocator = &fa.allocator;
        kiln_ctx *cx = NULL;
        kiln_status s = kiln_ctx_create(&o, &cx);
        if (s == KILN_OK) {
            s = workload(cx);
            cr_assert(s == KILN_OK || s == KILN_RESOURCE_EXHAUSTED, "n=%lld: %s", (long long)n,
                      kiln_ctx_error_message(cx));
            succeeded = s == KILN_OK;
            kiln_ctx_release(cx);
        } else {
            cr_assert_eq(s, KILN_RESOURCE_EXHAUSTED);
        }
        cr_assert_eq(fa.live_blocks, 0, "n=%lld leaked %lld blocks", (long long)n,
                     (long long)fa.live_blocks);
    }
    cr_assert(succeeded, "the workload never completed");
}
