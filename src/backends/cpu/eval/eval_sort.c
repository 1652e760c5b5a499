/* SPDX-License-Identifier: Apache-2.0 */
/* Evaluator kernel for sort.
 *
 * Every 1-D slice along the sort dimension is sorted as a permutation of its positions,
 * which is then applied to all inputs. The sort is a stable merge sort (used for
 * is_stable = false too: a stable order is one of the orders that allows).
 *
 * Builtin comparators (kiln_region_less / kiln_region_greater) compare the first input's
 * elements without calling back: each element becomes a 64-bit key whose unsigned order is
 * the compare's order (SIGNED/UNSIGNED by dtype; FLOAT for floats, with -0 equal to +0 and
 * every NaN equal to the others and greater than +inf, so NaNs go last in an ascending
 * sort and first in a descending one). Any other comparator is called per comparison with
 * 2n rank-0 tensors (lhs and rhs of input 0, then of input 1, ...), as the spec orders
 * them. */
#include <stdio.h>
#include <string.h>

#include "backends/cpu/eval/eval.h"
#include "base/alloc.h"
#include "core/tensor_internal.h"
#include "kiln/dtype.h"

typedef struct key_pair {
    uint64_t key;
    int64_t pos;
} key_pair;

static inline uint64_t f32_key(float v) {
    if (v != v) return UINT64_MAX;
    if (v == 0) v = 0.0f; /* -0 and +0 compare equal */
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    uint32_t k = (b >> 31) ? ~b : b | 0x80000000u;
    return (uint64_t)k << 32; /* NaN's key stays above every number's */
}

static inline uint64_t f64_key(double v) {
    if (v != v) return UINT64_MAX;
    if (v == 0) v = 0.0;
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    uint64_t k = (b >> 63) ? ~b : b | 0x8000000000000000u;
    return k == UINT64_MAX ? UINT64_MAX - 1 : k; /* keep NaN alone at the top */
}

/* Keys of the slice data[base + j*stride], j < len. */
static void make_keys(const void *data, kiln_dtype dtype, int64_t base, int64_t stride, int64_t len,
                      bool descending, key_pair *out) {
#define KEYS(T, EXPR)                        \
    do {                                     \
        const T *p = (const T *)data + base; \
        for (int64_t j = 0; j < len; j++) {  \
            T v = p[j * stride];             \
            out[j].key = (EXPR);             \
            out[j].pos = j;                  \
        }                                    \
    } while (0)
#define SIGNED_KEY(v) ((uint64_t)(int64_t)(v) ^ 0x8000000000000000u)
    switch (dtype) {
    case KILN_BOOL: KEYS(uint8_t, (uint64_t)(v != 0)); break;
    case KILN_I8: KEYS(int8_t, SIGNED_KEY(v)); break;
    case KILN_I16: KEYS(int16_t, SIGNED_KEY(v)); break;
    case KILN_I32: KEYS(int32_t, SIGNED_KEY(v)); break;
    case KILN_I64: KEYS(int64_t, SIGNED_KEY(v)); break;
    case KILN_U8: KEYS(uint8_t, (uint64_t)v); break;
    case KILN_U16: KEYS(uint16_t, (uint64_t)v); break;
    case KILN_U32: KEYS(uint32_t, (uint64_t)v); break;
    case KILN_U64: KEYS(uint64_t, (uint64_t)v); break;
    case KILN_F16: KEYS(uint16_t, f32_key(kiln_f16_to_f32(v))); break;
    case KILN_BF16: KEYS(uint16_t, f32_key(kiln_bf16_to_f32(v))); break;
    case KILN_F32: KEYS(float, f32_key(v)); break;
    case KILN_F64: KEYS(double, f64_key(v)); break;
    default: break;
    }
#undef KEYS
#undef SIGNED_KEY
    if (descending)
        for (int64_t j = 0; j < len; j++)
            out[j].key = ~out[j].key;
}

/* sort_keys(NULL, a, tmp, n): stable, by key. */
#define T key_pair
#define STATE const void *
#define LESS(st, x, y) ((x).key < (y).key)
#define GOOD(st) true
#define SORT sort_keys
#define RUN 32
#include "backends/cpu/eval/stable_sort.inc"

/* A comparator called back on rank-0 tensors of the slice's elements. */
typedef struct cmp_state {
    kiln_ctx *cx;
    const kiln_region *region;
    const char *what; /* "<fn>: comparator" */
    const char *fn;
    int n;
    int64_t len;
    kiln_tensor **scalars; /* scalars[i * len + j]: input i, position j */
    kiln_tensor **args;    /* 2n */
    kiln_status status;
} cmp_state;

/* comparator(x, y): true when position x goes before position y. False after an error. */
static bool before(cmp_state *c, int64_t x, int64_t y) {
    if (c->status != KILN_OK) return false;
    for (int i = 0; i < c->n; i++) {
        c->args[2 * i] = c->scalars[i * c->len + x];
        c->args[2 * i + 1] = c->scalars[i * c->len + y];
    }
    kiln_tensor *r = NULL;
    kiln_status s = kiln__region_call(c->cx, c->region, c->what, c->args, 2 * c->n, &r, 1);
    if (s != KILN_OK) {
        c->status = s;
        return false;
    }
    bool result = false;
    if (kiln_tensor_dtype(r) != KILN_BOOL || kiln_tensor_rank(r) != 0) {
        char have[KILN_MAX_RANK * 21 + 3];
        kiln_shape_format(kiln_tensor_shape(r), have, sizeof have);
        c->status = kiln_ctx_set_error(c->cx, KILN_INVALID_ARGUMENT,
                                       "%s: the comparator returned %s%s; expected i1[]", c->fn,
                                       kiln_dtype_name(kiln_tensor_dtype(r)), have);
    } else {
        result = *(const uint8_t *)kiln_tensor_data(r) != 0;
    }
    kiln_tensor_release(r);
    return result;
}

/* sort_called(c, a, tmp, n): stable merge sort of the positions a[0..n) with the
 * called-back comparator, stopping at its first error. */
#define T int64_t
#define STATE cmp_state *
#define LESS(st, x, y) before(st, x, y)
#define GOOD(st) ((st)->status == KILN_OK)
#define SORT sort_called
#define RUN 8
#include "backends/cpu/eval/stable_sort.inc"

/* out[base + j*stride] = in[base + perm[j]*stride] for j < len. */
#define ELEMENT_SIZE_BODY "backends/cpu/eval/sort_permute.inc"
#include "backends/cpu/eval/per_element_size.h"

static void permute(const void *in, void *out, size_t es, int64_t base, int64_t stride, int64_t len,
                    const int64_t *perm) {
    switch (es) {
    case 1: permute_1(in, out, base, stride, len, perm); break;
    case 2: permute_2(in, out, base, stride, len, perm); break;
    case 4: permute_4(in, out, base, stride, len, perm); break;
    case 8: permute_8(in, out, base, stride, len, perm); break;
    case 16: permute_16(in, out, base, stride, len, perm); break;
    default:
        for (int64_t j = 0; j < len; j++)
            memcpy((unsigned char *)out + (size_t)(base + j * stride) * es,
                   (const unsigned char *)in + (size_t)(base + perm[j] * stride) * es, es);
        break;
    }
}

KILN__EVAL(SORT) {
    (void)n_results;
    const char *fn = attrs->fn ? attrs->fn : "sort";
    int n = n_operands;
    const kiln_shape *shape = kiln_tensor_shape(operands[0]);
    int64_t numel = kiln_tensor_numel(operands[0]);
    if (numel == 0) return KILN_OK;
    int32_t dim = (int32_t)(attrs->u.sort.dimension < 0 ? attrs->u.sort.dimension + shape->rank
                                                        : attrs->u.sort.dimension);
    int64_t len = shape->dims[dim], outer = 1, inner = 1;
    for (int32_t d = 0; d < dim; d++)
        outer *= shape->dims[d];
    for (int32_t d = dim + 1; d < shape->rank; d++)
        inner *= shape->dims[d];
    if (len <= 1) {
        for (int i = 0; i < n; i++)
            memcpy(kiln__out(results[i]), kiln__in(operands[i]), kiln_tensor_nbytes(operands[i]));
        return KILN_OK;
    }

    const kiln_region *comparator = kiln__attrs_region(attrs, 0);
    kiln__region_kind kind = kiln__region_kind_of(comparator);
    bool keyed = kind == KILN_REGION_LESS || kind == KILN_REGION_GREATER;
    /* One block: the permutation and its merge buffer, then the keys or the scalars. */
    size_t perm_bytes = 2 * (size_t)len * sizeof(int64_t);
    size_t extra = keyed ? 2 * (size_t)len * sizeof(key_pair)
                         : ((size_t)n * (size_t)len + 2 * (size_t)n) * sizeof(kiln_tensor *);
    size_t bytes = perm_bytes + extra;
    if ((uint64_t)len > SIZE_MAX / 64 / (size_t)(n + 1))
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: dimension too long", fn);
    unsigned char *block = kiln__alloc(cx, bytes, _Alignof(key_pair), fn);
    if (!block) return KILN_RESOURCE_EXHAUSTED;
    int64_t *perm = (int64_t *)(void *)block, *perm_tmp = perm + len;
    key_pair *keys = (key_pair *)(void *)(block + perm_bytes), *keys_tmp = keys + len;
    char what[96];
    snprintf(what, sizeof what, "%s: comparator", fn);
    cmp_state c = {.cx = cx,
                   .region = comparator,
                   .what = what,
                   .fn = fn,
                   .n = n,
                   .len = len,
                   .status = KILN_OK};
    if (!keyed) {
        c.scalars = (kiln_tensor **)(void *)(block + perm_bytes);
        c.args = c.scalars + (size_t)n * (size_t)len;
    }

    kiln_status s = KILN_OK;
    for (int64_t o = 0; o < outer && s == KILN_OK; o++) {
        for (int64_t in = 0; in < inner && s == KILN_OK; in++) {
            int64_t base = o * len * inner + in;
            if (keyed) {
                make_keys(kiln__in(operands[0]), kiln_tensor_dtype(operands[0]), base, inner, len,
                          kind == KILN_REGION_GREATER, keys);
                sort_keys(NULL, keys, keys_tmp, len);
                for (int64_t j = 0; j < len; j++)
                    perm[j] = keys[j].pos;
            } else {
                int64_t made = 0;
                for (int i = 0; i < n && s == KILN_OK; i++) {
                    kiln_dtype dt = kiln_tensor_dtype(operands[i]);
                    size_t es = kiln_dtype_size(dt);
                    const unsigned char *src = kiln__in(operands[i]);
                    for (int64_t j = 0; j < len; j++) {
                        kiln_tensor *t = kiln__tensor_new(cx, fn, dt, KILN_SHAPE_SCALAR);
                        if (!t) {
                            s = KILN_RESOURCE_EXHAUSTED;
                            break;
                        }
                        memcpy(kiln__tensor_mutable_data(t), src + (size_t)(base + j * inner) * es,
                               es);
                        c.scalars[made++] = t;
                    }
                }
                if (s == KILN_OK) {
                    for (int64_t j = 0; j < len; j++)
                        perm[j] = j;
                    sort_called(&c, perm, perm_tmp, len);
                    s = c.status;
                }
                for (int64_t k = 0; k < made; k++)
                    kiln_tensor_release(c.scalars[k]);
            }
            if (s != KILN_OK) break;
            for (int i = 0; i < n; i++)
                permute(kiln__in(operands[i]), kiln__out(results[i]),
                        kiln_dtype_size(kiln_tensor_dtype(operands[i])), base, inner, len, perm);
        }
    }
    kiln__free(cx, block, bytes);
    return s;
}
