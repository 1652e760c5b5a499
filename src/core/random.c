/* SPDX-License-Identifier: Apache-2.0 */
/* Philox-4x32-10 and the random tensors built on it. The bits-to-values mapping is part
 * of the public contract (kiln/random.h): changing it changes every seeded result. */
#include "kiln/random.h"

#include <math.h>
#include <string.h>

#include "base/ctx_internal.h"
#include "core/element.h"
#include "core/tensor_internal.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static inline void philox_round(uint32_t c[4], const uint32_t k[2]) {
    uint64_t p0 = (uint64_t)PHILOX_M0 * c[0];
    uint64_t p1 = (uint64_t)PHILOX_M1 * c[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t n0 = hi1 ^ c[1] ^ k[0];
    uint32_t n2 = hi0 ^ c[3] ^ k[1];
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
}

void kiln_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c[4] = {counter[0], counter[1], counter[2], counter[3]};
    uint32_t k[2] = {key[0], key[1]};
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k[0] += PHILOX_W0;
            k[1] += PHILOX_W1;
        }
        philox_round(c, k);
    }
    memcpy(out, c, sizeof c);
}

/* Counter word 2 separates the uses of a key: 0 for tensor elements, 1 for split, 2 for
 * fold_in. */
static void block(kiln_key key, uint32_t c0, uint32_t c1, uint32_t domain, uint32_t out[4]) {
    const uint32_t counter[4] = {c0, c1, domain, 0};
    kiln_philox4x32_10(counter, key.words, out);
}

kiln_key kiln_key_from_seed(uint64_t seed) {
    return (kiln_key){{(uint32_t)seed, (uint32_t)(seed >> 32)}};
}

void kiln_key_split(kiln_key key, kiln_key *out_a, kiln_key *out_b) {
    uint32_t r[4];
    block(key, 0, 0, 1, r);
    if (out_a) *out_a = (kiln_key){{r[0], r[1]}};
    if (out_b) *out_b = (kiln_key){{r[2], r[3]}};
}

kiln_key kiln_key_fold_in(kiln_key key, uint32_t data) {
    uint32_t r[4];
    block(key, data, 0, 2, r);
    return (kiln_key){{r[0], r[1]}};
}

static void element_bits(kiln_key key, int64_t i, uint32_t out[4]) {
    block(key, (uint32_t)(uint64_t)i, (uint32_t)((uint64_t)i >> 32), 0, out);
}

/* 53 random bits as a double in [0, 1). */
static double unit_f64(uint32_t a, uint32_t b) {
    return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) * 0x1p-53;
}

/* The largest value of a float dtype below hi (as stored), for values that rounded up. */
static void store_below(void *d, kiln_dtype dtype, int64_t i, double hi) {
    switch (dtype) {
    case KILN_F64: ((double *)d)[i] = nextafter(hi, -INFINITY); return;
    case KILN_F32: ((float *)d)[i] = nextafterf((float)hi, -INFINITY); return;
    default: {
        /* 16-bit: step the stored bits of hi one place toward -inf. */
        kiln__element_store(d, dtype, i, hi);
        uint16_t *h = (uint16_t *)d + i;
        if (*h & 0x7fffu)
            *h = (*h & 0x8000u) ? (uint16_t)(*h + 1) : (uint16_t)(*h - 1);
        else
            *h = 0x8001u; /* below +-0: the smallest negative subnormal */
        return;
    }
    }
}

static bool check_float_dtype(kiln_ctx *cx, const char *fn, kiln_dtype dtype) {
    if (kiln_dtype_is_float(dtype)) return true;
    kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: dtype is %s; expected a float type", fn,
                       kiln_dtype_name(dtype));
    return false;
}

kiln_tensor *kiln_random_uniform(kiln_ctx *cx, kiln_key key, kiln_dtype dtype, kiln_shape shape,
                                 double lo, double hi) {
    static const char fn[] = "kiln_random_uniform";
    if (!cx) return NULL;
    if (!check_float_dtype(cx, fn, dtype)) return NULL;
    if (!isfinite(lo) || !isfinite(hi) || !(lo < hi)) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: lo %g and hi %g must be finite with lo < hi", fn, lo, hi);
        return NULL;
    }
    kiln_tensor *t = kiln__tensor_new(cx, fn, dtype, shape);
    if (!t) return NULL;
    void *d = kiln__tensor_mutable_data(t);
    float lo_f = (float)lo, span_f = (float)hi - (float)lo;
    for (int64_t i = 0; i < t->numel; i++) {
        uint32_t r[4];
        element_bits(key, i, r);
        if (dtype == KILN_F64) {
            kiln__element_store(d, dtype, i, lo + unit_f64(r[0], r[1]) * (hi - lo));
        } else {
            float u = (float)(r[0] >> 8) * 0x1p-24f;
            kiln__element_store(d, dtype, i, (double)(lo_f + u * span_f));
        }
        double v = kiln__element_load(d, dtype, i);
        if (v >= hi)
            store_below(d, dtype, i, hi);
        else if (v < lo)
            kiln__element_store(d, dtype, i, lo);
    }
    return t;
}

kiln_tensor *kiln_random_normal(kiln_ctx *cx, kiln_key key, kiln_dtype dtype, kiln_shape shape) {
    static const char fn[] = "kiln_random_normal";
    if (!cx) return NULL;
    if (!check_float_dtype(cx, fn, dtype)) return NULL;
    kiln_tensor *t = kiln__tensor_new(cx, fn, dtype, shape);
    if (!t) return NULL;
    void *d = kiln__tensor_mutable_data(t);
    const double two_pi = 6.283185307179586476925286766559;
    for (int64_t i = 0; i < t->numel; i++) {
        uint32_t r[4];
        element_bits(key, i, r);
        double u1 = 1.0 - unit_f64(r[0], r[1]); /* (0, 1]: log is finite */
        double u2 = unit_f64(r[2], r[3]);
        kiln__element_store(d, dtype, i, sqrt(-2.0 * log(u1)) * cos(two_pi * u2));
    }
    return t;
}

kiln_tensor *kiln_random_bernoulli(kiln_ctx *cx, kiln_key key, kiln_shape shape, double p) {
    static const char fn[] = "kiln_random_bernoulli";
    if (!cx) return NULL;
    if (!(p >= 0.0 && p <= 1.0)) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: p is %g; expected 0 <= p <= 1", fn, p);
        return NULL;
    }
    kiln_tensor *t = kiln__tensor_new(cx, fn, KILN_BOOL, shape);
    if (!t) return NULL;
    uint8_t *d = kiln__tensor_mutable_data(t);
    uint64_t threshold = (uint64_t)(p * 4294967296.0);
    for (int64_t i = 0; i < t->numel; i++) {
        uint32_t r[4];
        element_bits(key, i, r);
        d[i] = (uint64_t)r[0] < threshold;
    }
    return t;
}

kiln_tensor *kiln_random_int(kiln_ctx *cx, kiln_key key, kiln_dtype dtype, kiln_shape shape,
                             int64_t lo, int64_t hi) {
    static const char fn[] = "kiln_random_int";
    if (!cx) return NULL;
    if (!kiln_dtype_is_integer(dtype)) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: dtype is %s; expected an integer type",
                           fn, kiln_dtype_name(dtype));
        return NULL;
    }
    if (!(lo < hi) || !kiln__element_fits_int(dtype, lo) ||
        !kiln__element_fits_int(dtype, hi - 1)) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: the range [%lld, %lld) must be non-empty and within %s", fn,
                           (long long)lo, (long long)hi, kiln_dtype_name(dtype));
        return NULL;
    }
    kiln_tensor *t = kiln__tensor_new(cx, fn, dtype, shape);
    if (!t) return NULL;
    void *d = kiln__tensor_mutable_data(t);
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    for (int64_t i = 0; i < t->numel; i++) {
        uint32_t r[4];
        element_bits(key, i, r);
        uint64_t bits = (uint64_t)r[0] | ((uint64_t)r[1] << 32);
        kiln__element_store_int(d, dtype, i, (int64_t)((uint64_t)lo + bits % span));
    }
    return t;
}
