/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the elementwise kernels (see eval_elementwise.h). */
#include "backends/cpu/eval/eval_elementwise.h"
#include "core/half.h"

static KILN__EW_VECTOR void load_half(kiln_dtype dtype, const uint16_t *src, float *dst,
                                      int64_t n) {
    if (dtype == KILN_F16) {
        for (int64_t i = 0; i < n; i++)
            dst[i] = kiln__f16_to_f32_inline(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++)
            dst[i] = kiln__bf16_to_f32_inline(src[i]);
    }
}

static KILN__EW_VECTOR void store_half(kiln_dtype dtype, const float *src, uint16_t *dst,
                                       int64_t n) {
    if (dtype == KILN_F16) {
        for (int64_t i = 0; i < n; i++)
            dst[i] = kiln_f32_to_f16(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++)
            dst[i] = kiln_f32_to_bf16(src[i]);
    }
}

void kiln__ew_load_half(kiln_dtype dtype, const uint16_t *src, float *dst, int64_t n) {
    load_half(dtype, src, dst, n);
}

void kiln__ew_store_half(kiln_dtype dtype, const float *src, uint16_t *dst, int64_t n) {
    store_half(dtype, src, dst, n);
}

bool kiln__ew_float_unary(kiln_dtype dtype, const void *x, void *r, int64_t n,
                          kiln__ew_unary_f32 f32, kiln__ew_unary_f64 f64) {
    switch (dtype) {
    case KILN_F32: f32(x, r, n); return true;
    case KILN_F64: f64(x, r, n); return true;
    case KILN_F16:
    case KILN_BF16: {
        float bx[KILN__EW_CHUNK], br[KILN__EW_CHUNK];
        const uint16_t *hx = x;
        uint16_t *hr = r;
        for (int64_t at = 0; at < n; at += KILN__EW_CHUNK) {
            int64_t m = n - at < KILN__EW_CHUNK ? n - at : KILN__EW_CHUNK;
            kiln__ew_load_half(dtype, hx + at, bx, m);
            f32(bx, br, m);
            kiln__ew_store_half(dtype, br, hr + at, m);
        }
        return true;
    }
    default: return false;
    }
}

bool kiln__ew_float_binary(kiln_dtype dtype, const void *a, const void *b, void *r, int64_t n,
                           kiln__ew_binary_f32 f32, kiln__ew_binary_f64 f64) {
    switch (dtype) {
    case KILN_F32: f32(a, b, r, n); return true;
    case KILN_F64: f64(a, b, r, n); return true;
    case KILN_F16:
    case KILN_BF16: {
        float ba[KILN__EW_CHUNK], bb[KILN__EW_CHUNK], br[KILN__EW_CHUNK];
        const uint16_t *ha = a, *hb = b;
        uint16_t *hr = r;
        for (int64_t at = 0; at < n; at += KILN__EW_CHUNK) {
            int64_t m = n - at < KILN__EW_CHUNK ? n - at : KILN__EW_CHUNK;
            kiln__ew_load_half(dtype, ha + at, ba, m);
            kiln__ew_load_half(dtype, hb + at, bb, m);
            f32(ba, bb, br, m);
            kiln__ew_store_half(dtype, br, hr + at, m);
        }
        return true;
    }
    default: return false;
    }
}

kiln_status kiln__ew_bad_dtype(kiln_ctx *cx, const char *op, kiln_dtype dtype) {
    return kiln_ctx_set_error(cx, KILN_INTERNAL, "cpu: %s does not support dtype %s", op,
                              kiln_dtype_name(dtype));
}
