/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/random.h: reproducible random tensors from a counter-based generator.
 *
 * Values come from Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as
 * 1, 2, 3", the Random123 generator). Element i of a tensor depends only on the key and
 * on i, so the same key gives the same tensor on every machine, at any thread count.
 * Keys are values: split a key to get independent streams, as in JAX.
 *
 *     kiln_key key = kiln_key_from_seed(42);
 *     kiln_key k1, k2;
 *     kiln_key_split(key, &k1, &k2);
 *     kiln_tensor *w = kiln_random_normal(cx, k1, KILN_F32, KILN_SHAPE(128, 64));
 *     kiln_tensor *u = kiln_random_uniform(cx, k2, KILN_F32, KILN_SHAPE(10), -1.0, 1.0);
 *
 * How bits become values (fixed, so results never change between versions):
 *  - element i uses counter {i_lo, i_hi, 0, 0} (i as 64 bits) and the key's two words,
 *    and takes the first one or two 32-bit outputs;
 *  - uniform f32/f16/bf16: (bits >> 8) * 2^-24 in [0, 1), then lo + u * (hi - lo) in f32,
 *    rounded once to the dtype; f64: 53 bits from two outputs;
 *  - normal: Box-Muller in double over two uniforms from the same counter;
 *  - bernoulli(p): the 32-bit output < p * 2^32 (as a 64-bit threshold);
 *  - integers in [lo, hi): lo + (64-bit output mod (hi - lo)); the bias is below
 *    (hi - lo) / 2^64.
 */
#ifndef KILN_RANDOM_H
#define KILN_RANDOM_H

#include <stdint.h>

#include "kiln/export.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_key {
    uint32_t words[2];
} kiln_key;

/* A key from a 64-bit seed: {low 32 bits, high 32 bits}. Thread-safe. */
KILN_API kiln_key kiln_key_from_seed(uint64_t seed);

/* Two new keys, independent of each other and of `key`. Thread-safe. */
KILN_API void kiln_key_split(kiln_key key, kiln_key *out_a, kiln_key *out_b);

/* A new key derived from `key` and `data` (e.g. a step number). Thread-safe. */
KILN_API kiln_key kiln_key_fold_in(kiln_key key, uint32_t data);

/* The raw Philox-4x32-10 block function: out = philox(counter, key). Thread-safe. */
KILN_API void kiln_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

/* Uniform floats in [lo, hi). dtype must be a float type; lo < hi, both finite. */
KILN_API kiln_tensor *kiln_random_uniform(kiln_ctx *cx, kiln_key key, kiln_dtype dtype,
                                          kiln_shape shape, double lo, double hi);

/* Standard normal floats. dtype must be a float type. */
KILN_API kiln_tensor *kiln_random_normal(kiln_ctx *cx, kiln_key key, kiln_dtype dtype,
                                         kiln_shape shape);

/* Booleans (KILN_BOOL) that are true with probability p, 0 <= p <= 1. */
KILN_API kiln_tensor *kiln_random_bernoulli(kiln_ctx *cx, kiln_key key, kiln_shape shape, double p);

/* Integers uniform in [lo, hi) of an integer dtype; lo < hi and both within the dtype. */
KILN_API kiln_tensor *kiln_random_int(kiln_ctx *cx, kiln_key key, kiln_dtype dtype,
                                      kiln_shape shape, int64_t lo, int64_t hi);

#ifdef __cplusplus
}
#endif

#endif
