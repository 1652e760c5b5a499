/* SPDX-License-Identifier: Apache-2.0 */
/* Evaluator kernels for compare, select and clamp. */
#include <string.h>

#include "backends/cpu/eval/eval_elementwise.h"

#define KERNEL(NAME) KILN__EW_KERNEL(NAME)

/* ---- compare ------------------------------------------------------------------------------ */

/* Keys whose signed integer order is the IEEE totalOrder of the floats they come from:
 * -NaN < -inf < ... < -0 < +0 < ... < inf < +NaN. Negative values have their magnitude bits
 * flipped. */
static inline int16_t total_key16(uint16_t bits) {
    int16_t k = (int16_t)bits;
    return k < 0 ? (int16_t)(k ^ INT16_MAX) : k;
}
static inline int32_t total_key32(float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    int32_t k = (int32_t)bits;
    return k < 0 ? k ^ INT32_MAX : k;
}
static inline int64_t total_key64(double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    int64_t k = (int64_t)bits;
    return k < 0 ? k ^ INT64_MAX : k;
}

#define KEY_ID(v) (v)

/* compare_<key>: one per element type and the key it compares by. */
#define T uint8_t
#define KEY KEY_ID
#define FN(name) name##_u8
#include "backends/cpu/eval/elementwise_compare.inc"

#define T uint16_t
#define KEY KEY_ID
#define FN(name) name##_u16
#include "backends/cpu/eval/elementwise_compare.inc"

#define T uint32_t
#define KEY KEY_ID
#define FN(name) name##_u32
#include "backends/cpu/eval/elementwise_compare.inc"

#define T uint64_t
#define KEY KEY_ID
#define FN(name) name##_u64
#include "backends/cpu/eval/elementwise_compare.inc"

#define T int8_t
#define KEY KEY_ID
#define FN(name) name##_i8
#include "backends/cpu/eval/elementwise_compare.inc"

#define T int16_t
#define KEY KEY_ID
#define FN(name) name##_i16
#include "backends/cpu/eval/elementwise_compare.inc"

#define T int32_t
#define KEY KEY_ID
#define FN(name) name##_i32
#include "backends/cpu/eval/elementwise_compare.inc"

#define T int64_t
#define KEY KEY_ID
#define FN(name) name##_i64
#include "backends/cpu/eval/elementwise_compare.inc"

#define T uint16_t
#define KEY total_key16
#define FN(name) name##_total16
#include "backends/cpu/eval/elementwise_compare.inc"

#define T uint16_t
#define KEY kiln_f16_to_f32
#define FN(name) name##_f16
#include "backends/cpu/eval/elementwise_compare.inc"

#define T uint16_t
#define KEY kiln_bf16_to_f32
#define FN(name) name##_bf16
#include "backends/cpu/eval/elementwise_compare.inc"

#define T float
#define KEY total_key32
#define FN(name) name##_total32
#include "backends/cpu/eval/elementwise_compare.inc"

#define T float
#define KEY KEY_ID
#define FN(name) name##_f32
#include "backends/cpu/eval/elementwise_compare.inc"

#define T double
#define KEY total_key64
#define FN(name) name##_total64
#include "backends/cpu/eval/elementwise_compare.inc"

#define T double
#define KEY KEY_ID
#define FN(name) name##_f64
#include "backends/cpu/eval/elementwise_compare.inc"

/* EQ and NE of complex values: both parts equal as floats (NaN equals nothing), and not. */
static void compare_complex(kiln_dtype dt, bool eq, const void *a_, const void *b_, uint8_t *r,
                            int64_t n) {
    if (dt == KILN_C64) {
        const float *a = a_, *b = b_;
        for (int64_t i = 0; i < n; i++)
            r[i] = (uint8_t)(((a[2 * i] == b[2 * i]) & (a[2 * i + 1] == b[2 * i + 1])) == eq);
    } else {
        const double *a = a_, *b = b_;
        for (int64_t i = 0; i < n; i++)
            r[i] = (uint8_t)(((a[2 * i] == b[2 * i]) & (a[2 * i + 1] == b[2 * i + 1])) == eq);
    }
}

KERNEL(COMPARE) {
    (void)n_operands, (void)n_results;
    kiln_dtype dt = kiln_tensor_dtype(operands[0]);
    int64_t n = kiln_tensor_numel(results[0]);
    if (n == 0) return KILN_OK;
    const void *a_ = kiln__in(operands[0]), *b_ = kiln__in(operands[1]);
    void *r_ = kiln__out(results[0]);
    kiln_compare_direction dir = attrs->u.compare.direction;
    /* Integer and i1 comparisons follow the dtype (inference checked the type suits it);
     * floats compare as IEEE (FLOAT, the default) or by total order. */
    bool total = attrs->u.compare.type == KILN_CMP_TOTALORDER;
    bool ok;
    switch (dt) {
    case KILN_BOOL:
    case KILN_U8: ok = compare_u8(dir, a_, b_, r_, n); break;
    case KILN_U16: ok = compare_u16(dir, a_, b_, r_, n); break;
    case KILN_U32: ok = compare_u32(dir, a_, b_, r_, n); break;
    case KILN_U64: ok = compare_u64(dir, a_, b_, r_, n); break;
    case KILN_I8: ok = compare_i8(dir, a_, b_, r_, n); break;
    case KILN_I16: ok = compare_i16(dir, a_, b_, r_, n); break;
    case KILN_I32: ok = compare_i32(dir, a_, b_, r_, n); break;
    case KILN_I64: ok = compare_i64(dir, a_, b_, r_, n); break;
    case KILN_F16:
        ok = total ? compare_total16(dir, a_, b_, r_, n) : compare_f16(dir, a_, b_, r_, n);
        break;
    case KILN_BF16:
        ok = total ? compare_total16(dir, a_, b_, r_, n) : compare_bf16(dir, a_, b_, r_, n);
        break;
    case KILN_F32:
        ok = total ? compare_total32(dir, a_, b_, r_, n) : compare_f32(dir, a_, b_, r_, n);
        break;
    case KILN_F64:
        ok = total ? compare_total64(dir, a_, b_, r_, n) : compare_f64(dir, a_, b_, r_, n);
        break;
    case KILN_C64:
    case KILN_C128: /* inference allows EQ and NE alone */
        ok = dir == KILN_CMP_EQ || dir == KILN_CMP_NE;
        if (ok) compare_complex(dt, dir == KILN_CMP_EQ, a_, b_, r_, n);
        break;
    default: return kiln__ew_bad_dtype(cx, "compare", dt);
    }
    if (!ok) return kiln_ctx_set_error(cx, KILN_INTERNAL, "cpu: compare direction %d", (int)dir);
    return KILN_OK;
}

/* ---- select ------------------------------------------------------------------------------- */

#define ELEMENT_SIZE_BODY "backends/cpu/eval/elementwise_select.inc"
#include "backends/cpu/eval/per_element_size.h"

KERNEL(SELECT) {
    (void)attrs, (void)n_operands, (void)n_results;
    kiln_tensor *r = results[0];
    int64_t n = kiln_tensor_numel(r);
    if (n == 0) return KILN_OK;
    const uint8_t *p_ = kiln__in(operands[0]);
    const void *t_ = kiln__in(operands[1]), *f_ = kiln__in(operands[2]);
    void *r_ = kiln__out(r);
    if (kiln_tensor_rank(operands[0]) == 0) {
        memmove(r_, p_[0] ? t_ : f_, kiln_tensor_nbytes(r)); /* r may be t or f */
        return KILN_OK;
    }
    switch (kiln_dtype_size(kiln_tensor_dtype(r))) {
    case 1: select_1(p_, t_, f_, r_, n); break;
    case 2: select_2(p_, t_, f_, r_, n); break;
    case 4: select_4(p_, t_, f_, r_, n); break;
    case 8: select_8(p_, t_, f_, r_, n); break;
    case 16: select_16(p_, t_, f_, r_, n); break;
    default: return kiln__ew_bad_dtype(cx, "select", kiln_tensor_dtype(r));
    }
    return KILN_OK;
}

/* ---- clamp -------------------------------------------------------------------------------- */

/* i1's maximum and minimum (OR, AND), as functions so that each argument is evaluated once;
 * the other integers take the body's own. */
static inline uint8_t or_u8(uint8_t a, uint8_t b) { return (uint8_t)(a | b); }
static inline uint8_t and_u8(uint8_t a, uint8_t b) { return (uint8_t)(a & b); }

/* clamp_<dtype>: one per dtype. */
#define T uint8_t
#define MAX or_u8
#define MIN and_u8
#define FN(name) name##_bool
#include "backends/cpu/eval/elementwise_clamp.inc"

#define T int8_t
#define FN(name) name##_i8
#include "backends/cpu/eval/elementwise_clamp.inc"

#define T int16_t
#define FN(name) name##_i16
#include "backends/cpu/eval/elementwise_clamp.inc"

#define T int32_t
#define FN(name) name##_i32
#include "backends/cpu/eval/elementwise_clamp.inc"

#define T int64_t
#define FN(name) name##_i64
#include "backends/cpu/eval/elementwise_clamp.inc"

#define T uint8_t
#define FN(name) name##_u8
#include "backends/cpu/eval/elementwise_clamp.inc"

#define T uint16_t
#define FN(name) name##_u16
#include "backends/cpu/eval/elementwise_clamp.inc"

#define T uint32_t
#define FN(name) name##_u32
#include "backends/cpu/eval/elementwise_clamp.inc"

#define T uint64_t
#define FN(name) name##_u64
#include "backends/cpu/eval/elementwise_clamp.inc"

#define T uint16_t
#define C float
#define LOAD kiln_f16_to_f32
#define STORE kiln_f32_to_f16
#define MAX kiln__nanmaxf
#define MIN kiln__nanminf
#define FN(name) name##_f16
#include "backends/cpu/eval/elementwise_clamp.inc"

#define T uint16_t
#define C float
#define LOAD kiln_bf16_to_f32
#define STORE kiln_f32_to_bf16
#define MAX kiln__nanmaxf
#define MIN kiln__nanminf
#define FN(name) name##_bf16
#include "backends/cpu/eval/elementwise_clamp.inc"

#define T float
#define MAX kiln__nanmaxf
#define MIN kiln__nanminf
#define FN(name) name##_f32
#include "backends/cpu/eval/elementwise_clamp.inc"

#define T double
#define MAX kiln__nanmax
#define MIN kiln__nanmin
#define FN(name) name##_f64
#include "backends/cpu/eval/elementwise_clamp.inc"

KERNEL(CLAMP) {
    (void)attrs, (void)n_operands, (void)n_results;
    kiln_tensor *r = results[0];
    kiln_dtype dt = kiln_tensor_dtype(r);
    int64_t n = kiln_tensor_numel(r);
    if (n == 0) return KILN_OK;
    const void *lo_ = kiln__in(operands[0]), *x_ = kiln__in(operands[1]),
               *hi_ = kiln__in(operands[2]);
    void *r_ = kiln__out(r);
    int64_t lo_step = kiln_tensor_rank(operands[0]) == 0 ? 0 : 1;
    int64_t hi_step = kiln_tensor_rank(operands[2]) == 0 ? 0 : 1;
    switch (dt) {
    case KILN_BOOL: clamp_bool(lo_, x_, hi_, r_, n, lo_step, hi_step); break;
    case KILN_I8: clamp_i8(lo_, x_, hi_, r_, n, lo_step, hi_step); break;
    case KILN_I16: clamp_i16(lo_, x_, hi_, r_, n, lo_step, hi_step); break;
    case KILN_I32: clamp_i32(lo_, x_, hi_, r_, n, lo_step, hi_step); break;
    case KILN_I64: clamp_i64(lo_, x_, hi_, r_, n, lo_step, hi_step); break;
    case KILN_U8: clamp_u8(lo_, x_, hi_, r_, n, lo_step, hi_step); break;
    case KILN_U16: clamp_u16(lo_, x_, hi_, r_, n, lo_step, hi_step); break;
    case KILN_U32: clamp_u32(lo_, x_, hi_, r_, n, lo_step, hi_step); break;
    case KILN_U64: clamp_u64(lo_, x_, hi_, r_, n, lo_step, hi_step); break;
    case KILN_F16: clamp_f16(lo_, x_, hi_, r_, n, lo_step, hi_step); break;
    case KILN_BF16: clamp_bf16(lo_, x_, hi_, r_, n, lo_step, hi_step); break;
    case KILN_F32: clamp_f32(lo_, x_, hi_, r_, n, lo_step, hi_step); break;
    case KILN_F64: clamp_f64(lo_, x_, hi_, r_, n, lo_step, hi_step); break;
    default: return kiln__ew_bad_dtype(cx, "clamp", dt);
    }
    return KILN_OK;
}
