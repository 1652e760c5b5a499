/* SPDX-License-Identifier: Apache-2.0 */
/* CPU kernels for control flow (while, if, case, call, optimization_barrier), map (a
 * region per element) and sources (constant, iota, rng_bit_generator).
 *
 * Control ops run their regions eagerly through kiln__region_call, which returns new
 * references. Results are handed to the innermost scope: a tensor only the region made and
 * returned is adopted as is; one also held elsewhere (a region returned its argument, a
 * tensor from outside, or one tensor for two results) is copied, so every result is a
 * tensor of its own that the caller may release early. */
#include <stdio.h>
#include <string.h>

#include "backend/custom_calls.h"
#include "backends/cpu/eval/eval.h"
#include "base/alloc.h"
#include "core/element.h"
#include "core/tensor_internal.h"
#include "kiln/random.h"
#include "ops/custom_call.h"
#include "ops/infer.h"

#define MAX_FIXED 8

/* An array of n tensor pointers: `fixed` when it fits, else allocated. */
static kiln_tensor **tensor_array(kiln_ctx *cx, const char *fn, kiln_tensor **fixed, int n) {
    if (n <= MAX_FIXED) return fixed;
    return kiln__alloc(cx, (size_t)n * sizeof(kiln_tensor *), _Alignof(kiln_tensor *), fn);
}

static void tensor_array_free(kiln_ctx *cx, kiln_tensor **array, kiln_tensor **fixed, int n) {
    if (array && array != fixed) kiln__free(cx, array, (size_t)n * sizeof(kiln_tensor *));
}

static void release_all(kiln_tensor **ts, int n) {
    for (int i = 0; i < n; i++) {
        kiln_tensor_release(ts[i]);
        ts[i] = NULL;
    }
}

/* Hands the reference the caller holds on `t` to the innermost scope and returns the
 * result tensor (NULL, with t released, when a copy cannot be made). Only a tensor nobody
 * else holds is adopted as is: a result must be a tensor of its own, whose early release
 * (kiln_tensor_release of a scope-owned tensor) cannot take a reference someone else
 * holds. */
static kiln_tensor *to_scope(kiln_ctx *cx, const char *fn, kiln_tensor *t) {
    if (!t->owned.scope && atomic_load_explicit(&t->refs, memory_order_acquire) == 1) {
        kiln__scope_adopt(cx, &t->owned);
        return t;
    }
    kiln_tensor *copy = kiln__tensor_new(cx, fn, t->dtype, t->shape);
    if (copy && t->nbytes > 0) memcpy(kiln__out(copy), kiln__in(t), t->nbytes);
    kiln_tensor_release(t);
    return copy;
}

/* Moves refs[0..n-1] (references the caller holds) into results, owned by the innermost
 * scope. On failure releases everything and leaves results NULL. */
static kiln_status hand_results(kiln_ctx *cx, const char *fn, kiln_tensor **refs,
                                kiln_tensor **results, int n) {
    for (int i = 0; i < n; i++) {
        results[i] = to_scope(cx, fn, refs[i]);
        refs[i] = NULL;
        if (!results[i]) {
            release_all(refs + i + 1, n - i - 1);
            release_all(results, i);
            return KILN_RESOURCE_EXHAUSTED;
        }
    }
    return KILN_OK;
}

static const char *fn_of(const kiln__attrs *attrs, const char *fallback) {
    return attrs && attrs->fn ? attrs->fn : fallback;
}

/* Runs `region` on args and hands its n_results results to the innermost scope. */
static kiln_status run_region(kiln_ctx *cx, const char *fn, const kiln_region *region,
                              const char *what, kiln_tensor *const *args, int n_args,
                              kiln_tensor **results, int n_results) {
    kiln_tensor *fixed[MAX_FIXED];
    kiln_tensor **refs = tensor_array(cx, fn, fixed, n_results);
    if (!refs) return KILN_RESOURCE_EXHAUSTED;
    char label[160];
    snprintf(label, sizeof label, "%s: %s", fn, what);
    kiln_status s = kiln__region_call(cx, region, label, args, n_args, refs, n_results);
    if (s == KILN_OK) s = hand_results(cx, fn, refs, results, n_results);
    tensor_array_free(cx, refs, fixed, n_results);
    return s;
}

/* ---- while ---------------------------------------------------------------------------- */

/* Checks that body results have the types of the inits (spec C2). */
static kiln_status check_body_results(kiln_ctx *cx, const char *fn, kiln_tensor *const *inits,
                                      kiln_tensor *const *next, int n) {
    for (int i = 0; i < n; i++) {
        if (next[i]->dtype == inits[i]->dtype &&
            kiln_shape_equal(&next[i]->shape, &inits[i]->shape))
            continue;
        char have[KILN__TYPE_TEXT], want[KILN__TYPE_TEXT];
        kiln__type h = {.dtype = next[i]->dtype, .shape = next[i]->shape},
                   w = {.dtype = inits[i]->dtype, .shape = inits[i]->shape};
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: body result %d has type %s; expected %s (the type of "
                                  "init %d)",
                                  fn, i + 1, kiln__type_text(&h, have), kiln__type_text(&w, want),
                                  i + 1);
    }
    return KILN_OK;
}

KILN__EVAL(WHILE) {
    const char *fn = fn_of(attrs, "while");
    const int n = n_operands;
    if (n_results != n)
        return kiln_ctx_set_error(cx, KILN_INTERNAL, "%s: internal: %d result slots for %d inits",
                                  fn, n_results, n);
    const kiln_region *cond = kiln__attrs_region(attrs, 0), *body = kiln__attrs_region(attrs, 1);
    char cond_what[160], body_what[160];
    snprintf(cond_what, sizeof cond_what, "%s: cond", fn);
    snprintf(body_what, sizeof body_what, "%s: body", fn);

    kiln_tensor *fixed_state[MAX_FIXED], *fixed_next[MAX_FIXED];
    kiln_tensor **state = tensor_array(cx, fn, fixed_state, n);
    kiln_tensor **next = state ? tensor_array(cx, fn, fixed_next, n) : NULL;
    if (!state || !next) {
        tensor_array_free(cx, state, fixed_state, n);
        return KILN_RESOURCE_EXHAUSTED;
    }
    for (int i = 0; i < n; i++)
        state[i] = kiln_tensor_retain(operands[i]);

    kiln_status s;
    for (;;) {
        kiln_tensor *c;
        s = kiln__region_call(cx, cond, cond_what, state, n, &c, 1);
        if (s != KILN_OK) break;
        if (c->dtype != KILN_BOOL || c->shape.rank != 0) {
            char have[KILN__TYPE_TEXT];
            kiln__type t = {.dtype = c->dtype, .shape = c->shape};
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                   "%s: cond returned %s; expected a rank-0 i1 (bool) tensor", fn,
                                   kiln__type_text(&t, have));
            kiln_tensor_release(c);
            break;
        }
        bool go = *(const uint8_t *)kiln__in(c) != 0;
        kiln_tensor_release(c);
        if (!go) break;
        s = kiln__region_call(cx, body, body_what, state, n, next, n);
        if (s != KILN_OK) break;
        s = check_body_results(cx, fn, operands, next, n);
        if (s != KILN_OK) {
            release_all(next, n);
            break;
        }
        for (int i = 0; i < n; i++) {
            kiln_tensor_release(state[i]);
            state[i] = next[i];
            next[i] = NULL;
        }
    }
    if (s == KILN_OK)
        s = hand_results(cx, fn, state, results, n);
    else
        release_all(state, n);
    tensor_array_free(cx, next, fixed_next, n);
    tensor_array_free(cx, state, fixed_state, n);
    return s;
}

/* ---- if, case, call ------------------------------------------------------------------- */

KILN__EVAL(IF) {
    (void)n_operands;
    const char *fn = fn_of(attrs, "if");
    bool pred = *(const uint8_t *)kiln__in(operands[0]) != 0;
    return run_region(cx, fn, kiln__attrs_region(attrs, pred ? 0 : 1),
                      pred ? "true branch" : "false branch", NULL, 0, results, n_results);
}

KILN__EVAL(CASE) {
    (void)n_operands;
    const char *fn = fn_of(attrs, "case");
    int32_t index;
    memcpy(&index, kiln__in(operands[0]), sizeof index);
    int32_t n = attrs->n_regions;
    if (index < 0 || index >= n) index = n - 1; /* out of range: the last branch */
    char what[32];
    snprintf(what, sizeof what, "branch %d", (int)index);
    return run_region(cx, fn, kiln__attrs_region(attrs, index), what, NULL, 0, results, n_results);
}

KILN__EVAL(CALL) {
    return run_region(cx, fn_of(attrs, "call"), kiln__attrs_region(attrs, 0), "callee", operands,
                      n_operands, results, n_results);
}

/* ---- optimization_barrier, constant ---------------------------------------------------- */

KILN__EVAL(OPTIMIZATION_BARRIER) {
    (void)cx, (void)attrs, (void)n_results;
    for (int i = 0; i < n_operands; i++)
        if (operands[i]->nbytes > 0)
            memcpy(kiln__out(results[i]), kiln__in(operands[i]), operands[i]->nbytes);
    return KILN_OK;
}

KILN__EVAL(CONSTANT) {
    (void)cx, (void)operands, (void)n_operands, (void)n_results;
    const kiln_tensor *value = attrs->u.constant;
    if (value->nbytes > 0) memcpy(kiln__out(results[0]), kiln__in(value), value->nbytes);
    return KILN_OK;
}

/* ---- iota ----------------------------------------------------------------------------- */

#define ELEMENT_SIZE_BODY "backends/cpu/eval/fill_value.inc"
#include "backends/cpu/eval/per_element_size.h"

/* One element's bits, of any dtype. */
typedef union iota_element {
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
    float c64[2];
    double c128[2];
} iota_element;

/* iota's value j in `dtype` (false for a dtype iota has not): integers wrap (through the
 * unsigned type of their width), floats round once, complex values are (j, 0). */
static bool iota_value(kiln_dtype dtype, int64_t j, iota_element *out) {
    switch (dtype) {
    case KILN_BOOL: out->u8 = (uint8_t)(j != 0); return true;
    case KILN_I8:
    case KILN_U8: out->u8 = (uint8_t)(uint64_t)j; return true;
    case KILN_I16:
    case KILN_U16: out->u16 = (uint16_t)(uint64_t)j; return true;
    case KILN_I32:
    case KILN_U32: out->u32 = (uint32_t)(uint64_t)j; return true;
    case KILN_I64:
    case KILN_U64: out->u64 = (uint64_t)j; return true;
    case KILN_F16: out->u16 = kiln__f64_to_f16((double)j); return true;
    case KILN_BF16: out->u16 = kiln__f64_to_bf16((double)j); return true;
    case KILN_F32: out->f32 = (float)j; return true;
    case KILN_F64: out->f64 = (double)j; return true;
    case KILN_C64: out->c64[0] = (float)j, out->c64[1] = 0.0f; return true;
    case KILN_C128: out->c128[0] = (double)j, out->c128[1] = 0.0; return true;
    default: /* a sub-byte integer wraps, a small float rounds once */
        if (!kiln_dtype_is_narrow(dtype)) return false;
        kiln__element_store_int(&out->u8, dtype, 0, j);
        return true;
    }
}

KILN__EVAL(IOTA) {
    (void)cx, (void)operands, (void)n_operands, (void)n_results;
    kiln_tensor *out = results[0];
    if (out->numel == 0) return KILN_OK;
    const kiln_shape *shape = &out->shape;
    int32_t dim = (int32_t)attrs->u.iota.dimension;
    int64_t outer = 1, inner = 1, extent = shape->dims[dim];
    for (int32_t a = 0; a < dim; a++)
        outer *= shape->dims[a];
    for (int32_t a = dim + 1; a < shape->rank; a++)
        inner *= shape->dims[a];
    void *dst = kiln__out(out);
    /* The first block (extent x inner elements): value j repeated inner times. */
    size_t es = kiln_dtype_size(out->dtype);
    void (*fill)(void *, const void *, int64_t) = es == 1   ? fill_value_1
                                                  : es == 2 ? fill_value_2
                                                  : es == 4 ? fill_value_4
                                                  : es == 8 ? fill_value_8
                                                            : fill_value_16;
    for (int64_t j = 0; j < extent; j++) {
        iota_element v;
        if (!iota_value(out->dtype, j, &v))
            return kiln_ctx_set_error(cx, KILN_INTERNAL, "%s: internal: iota of dtype %d",
                                      fn_of(attrs, "iota"), (int)out->dtype);
        fill((unsigned char *)dst + (size_t)(j * inner) * es, &v, inner);
    }
    /* The other outer blocks repeat the first. */
    size_t block = (size_t)(extent * inner) * kiln_dtype_size(out->dtype);
    unsigned char *bytes = dst;
    for (int64_t o = 1; o < outer; o++)
        memcpy(bytes + (size_t)o * block, bytes, block);
    return KILN_OK;
}

/* ---- rng_bit_generator ------------------------------------------------------------------
 *
 * Bit for bit the scheme of XLA's RngBitGeneratorExpander (xla/hlo/builder/lib/prng.cc), so
 * that a state gives the same bits here as under XLA (and the spec's THREE_FRY example
 * holds). The key is state[0] split into two 32-bit words (low first).
 *
 * THREE_FRY (Threefry-2x32, 20 rounds), state {key, counter}:
 *  - 64-bit outputs: element k (row-major) is threefry(counter + k) as low | high << 32;
 *    the counter advances by the element count;
 *  - 8/16/32-bit outputs: the shape is halved along its first even dimension (or else its
 *    largest, rounding up); each counter of the half shape gives two words that land at
 *    positions 2h and 2h + 1 of that dimension (truncated to the width); the counter
 *    advances by the half shape's element count. A rank-0 output uses word 0 of one call.
 * PHILOX (Philox-4x32-10; DEFAULT is PHILOX): a 128-bit counter, {state[1], state[2]} for
 * ui64[3], {state[1], state[0]} for ui64[2] (low, high); block b is philox(counter + b):
 *  - 8/16/32-bit outputs: element k is word k % 4 of block k / 4 (truncated); the counter
 *    advances by ceil(n / 4);
 *  - 64-bit outputs: element k is words {0,1} (k even) or {2,3} (k odd) of block k / 2; the
 *    counter advances by ceil(n / 2).
 * The new state has the same key and the advanced counter (for ui64[2] PHILOX, its low 64
 * bits). Output bits are raw: floats get whatever pattern the words make. */

static inline uint32_t rotl32(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }

static inline void threefry2x32_20(const uint32_t key[2], uint64_t counter, uint32_t out[2]) {
    static const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
    const uint32_t ks[3] = {key[0], key[1], 0x1BD11BDAu ^ key[0] ^ key[1]};
    uint32_t x0 = (uint32_t)counter + ks[0], x1 = (uint32_t)(counter >> 32) + ks[1];
    for (int b = 0; b < 5; b++) {
        const int *r = rot + (b % 2) * 4;
        for (int j = 0; j < 4; j++) {
            x0 += x1;
            x1 = rotl32(x1, r[j]);
            x1 ^= x0;
        }
        x0 += ks[(b + 1) % 3];
        x1 += ks[(b + 2) % 3] + (uint32_t)(b + 1);
    }
    out[0] = x0;
    out[1] = x1;
}

/* Stores the low `width` bytes of word w as element k. */
static inline void store_word(unsigned char *dst, size_t width, int64_t k, uint64_t w) {
    switch (width) {
    case 1: dst[k] = (uint8_t)w; break;
    case 2: {
        uint16_t v = (uint16_t)w;
        memcpy(dst + (size_t)k * 2, &v, 2);
        break;
    }
    case 4: {
        uint32_t v = (uint32_t)w;
        memcpy(dst + (size_t)k * 4, &v, 4);
        break;
    }
    default: memcpy(dst + (size_t)k * 8, &w, 8); break;
    }
}

/* Fills dst (n elements of `width` bytes, shape `shape`) and returns the counter advance. */
static uint64_t three_fry(const uint32_t key[2], uint64_t counter, const kiln_shape *shape,
                          int64_t n, size_t width, unsigned char *dst) {
    uint32_t w[2];
    if (width == 8) {
        for (int64_t k = 0; k < n; k++) {
            threefry2x32_20(key, counter + (uint64_t)k, w);
            uint64_t v = (uint64_t)w[0] | (uint64_t)w[1] << 32;
            memcpy(dst + (size_t)k * 8, &v, 8);
        }
        return (uint64_t)n;
    }
    if (shape->rank == 0) {
        threefry2x32_20(key, counter, w);
        store_word(dst, width, 0, w[0]);
        return 1;
    }
    int32_t split = -1;
    for (int32_t a = 0; a < shape->rank && split < 0; a++)
        if (shape->dims[a] % 2 == 0) split = a;
    if (split < 0) {
        split = 0;
        for (int32_t a = 1; a < shape->rank; a++)
            if (shape->dims[a] > shape->dims[split]) split = a;
    }
    int64_t outer = 1, inner = 1, d = shape->dims[split], hd = (d + 1) / 2;
    for (int32_t a = 0; a < split; a++)
        outer *= shape->dims[a];
    for (int32_t a = split + 1; a < shape->rank; a++)
        inner *= shape->dims[a];
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t h = 0; h < hd; h++) {
            uint64_t base = counter + (uint64_t)((o * hd + h) * inner);
            int64_t k0 = (o * d + 2 * h) * inner;
            bool second = 2 * h + 1 < d;
            for (int64_t i = 0; i < inner; i++) {
                threefry2x32_20(key, base + (uint64_t)i, w);
                store_word(dst, width, k0 + i, w[0]);
                if (second) store_word(dst, width, k0 + inner + i, w[1]);
            }
        }
    }
    return (uint64_t)(outer * hd * inner);
}

/* Fills dst and returns the number of 128-bit blocks used. */
static uint64_t philox(const uint32_t key[2], uint64_t lo, uint64_t hi, int64_t n, size_t width,
                       unsigned char *dst) {
    const int per_block = width == 8 ? 2 : 4;
    const uint64_t blocks = (uint64_t)(n + per_block - 1) / (uint64_t)per_block;
    for (uint64_t b = 0; b < blocks; b++) {
        uint64_t c_lo = lo + b, c_hi = hi + (c_lo < lo);
        const uint32_t ctr[4] = {(uint32_t)c_lo, (uint32_t)(c_lo >> 32), (uint32_t)c_hi,
                                 (uint32_t)(c_hi >> 32)};
        uint32_t w[4];
        kiln_philox4x32_10(ctr, key, w);
        int64_t k = (int64_t)b * per_block;
        if (width == 8) {
            store_word(dst, 8, k, (uint64_t)w[0] | (uint64_t)w[1] << 32);
            if (k + 1 < n) store_word(dst, 8, k + 1, (uint64_t)w[2] | (uint64_t)w[3] << 32);
        } else {
            for (int j = 0; j < 4 && k + j < n; j++)
                store_word(dst, width, k + j, w[j]);
        }
    }
    return blocks;
}

KILN__EVAL(RNG_BIT_GENERATOR) {
    (void)cx, (void)n_operands, (void)n_results;
    const kiln_tensor *state_t = operands[0];
    const int64_t m = state_t->numel;
    uint64_t state[3] = {0, 0, 0};
    memcpy(state, kiln__in(state_t), (size_t)m * sizeof state[0]);
    kiln_tensor *out = results[1];
    const size_t width = kiln_dtype_size(out->dtype);
    unsigned char *dst = kiln__out(out);
    const uint32_t key[2] = {(uint32_t)state[0], (uint32_t)(state[0] >> 32)};
    uint64_t next[3] = {state[0], state[1], state[2]};
    if (attrs->u.rng.algorithm == KILN_RNG_THREE_FRY) {
        next[1] = state[1] + three_fry(key, state[1], &out->shape, out->numel, width, dst);
    } else {
        uint64_t lo = state[1], hi = m == 3 ? state[2] : state[0];
        uint64_t used = philox(key, lo, hi, out->numel, width, dst);
        next[1] = lo + used;
        if (m == 3) next[2] = hi + (next[1] < lo);
    }
    if (kiln_dtype_is_narrow(out->dtype)) { /* random bits: the type's, zero above them */
        uint8_t mask = (uint8_t)((1u << kiln_dtype_bits(out->dtype)) - 1u);
        for (int64_t i = 0; i < out->numel; i++)
            dst[i] &= mask;
    }
    memcpy(kiln__out(results[0]), next, (size_t)m * sizeof next[0]);
    return KILN_OK;
}

/* custom_call: kiln has no registry of targets yet, so none runs (kiln__cpu_supports_op
 * says so, and kiln_compile refuses the program by name before any kernel is asked). */
/* The function registered for the target (kiln/custom_call.h), on the tensors' host
 * buffers; the results are made with the declared types. */
KILN__EVAL(CUSTOM_CALL) {
    enum { INLINE = 16 };
    kiln_custom_call_buffer inline_bufs[INLINE] = {{0}}, *bufs = inline_bufs;
    int n = n_operands + n_results;
    if (n > INLINE &&
        !(bufs = kiln__alloc(cx, (size_t)n * sizeof *bufs, _Alignof(kiln_custom_call_buffer),
                             "custom_call buffers")))
        return kiln_ctx_status(cx);
    for (int i = 0; i < n; i++) {
        kiln_tensor *t = i < n_operands ? operands[i] : results[i - n_operands];
        bufs[i] =
            (kiln_custom_call_buffer){.dtype = kiln_tensor_dtype(t),
                                      .shape = *kiln_tensor_shape(t),
                                      .data = i < n_operands ? (void *)kiln__in(t) : kiln__out(t),
                                      .nbytes = kiln_tensor_nbytes(t)};
    }
    kiln_status s =
        kiln__custom_call_run(cx, attrs, bufs, n_operands, bufs + n_operands, n_results);
    if (bufs != inline_bufs) kiln__free(cx, bufs, (size_t)n * sizeof *bufs);
    return s;
}

/* map: the computation called on rank-0 tensors of each position's elements, its result
 * checked to be a scalar of the result's dtype. */
KILN__EVAL(MAP) {
    (void)n_results;
    const char *fn = attrs->fn ? attrs->fn : "stablehlo.map";
    const kiln_region *computation = kiln__attrs_region(attrs, 0);
    kiln_dtype rt = kiln_tensor_dtype(results[0]);
    size_t rs = kiln_dtype_size(rt);
    int64_t n = kiln_tensor_numel(results[0]);
    kiln_tensor *fixed[MAX_FIXED];
    kiln_tensor **args = tensor_array(cx, fn, fixed, n_operands);
    if (!args) return KILN_RESOURCE_EXHAUSTED;
    kiln_status s = KILN_OK;
    int made = 0;
    for (; made < n_operands; made++) {
        args[made] = kiln__tensor_new(cx, fn, kiln_tensor_dtype(operands[made]), KILN_SHAPE_SCALAR);
        if (!args[made]) {
            s = KILN_RESOURCE_EXHAUSTED;
            break;
        }
    }
    char what[96];
    snprintf(what, sizeof what, "%s: computation", fn);
    unsigned char *out = kiln__out(results[0]);
    for (int64_t i = 0; i < n && s == KILN_OK; i++) {
        for (int k = 0; k < n_operands; k++) {
            size_t es = kiln_dtype_size(kiln_tensor_dtype(operands[k]));
            memcpy(kiln__tensor_mutable_data(args[k]),
                   (const unsigned char *)kiln__in(operands[k]) + (size_t)i * es, es);
        }
        kiln_tensor *r = NULL;
        s = kiln__region_call(cx, computation, what, args, n_operands, &r, 1);
        if (s != KILN_OK) break;
        if (kiln_tensor_dtype(r) != rt || kiln_tensor_rank(r) != 0)
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                   "%s: the computation returned %s of rank %d; expected a "
                                   "scalar %s",
                                   fn, kiln_dtype_name(kiln_tensor_dtype(r)),
                                   (int)kiln_tensor_rank(r), kiln_dtype_name(rt));
        else
            memcpy(out + (size_t)i * rs, kiln_tensor_data(r), rs);
        kiln_tensor_release(r);
    }
    release_all(args, made);
    tensor_array_free(cx, args, fixed, n_operands);
    return s;
}

/* A token carries no data: its empty tensor is already made. */
KILN__EVAL(AFTER_ALL) {
    (void)cx, (void)attrs, (void)operands, (void)n_operands, (void)results, (void)n_results;
    return KILN_OK;
}

KILN__EVAL(CREATE_TOKEN) {
    (void)cx, (void)attrs, (void)operands, (void)n_operands, (void)results, (void)n_results;
    return KILN_OK;
}

/* Tuples have no run-time form (ops/infer.h): kiln_compile refuses what canonicalize left. */
KILN__EVAL(TUPLE) {
    (void)attrs, (void)operands, (void)n_operands, (void)results, (void)n_results;
    return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED, "cpu: a tuple has no run-time form");
}

KILN__EVAL(GET_TUPLE_ELEMENT) {
    (void)attrs, (void)operands, (void)n_operands, (void)results, (void)n_results;
    return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED, "cpu: a tuple has no run-time form");
}
