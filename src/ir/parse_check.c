/* SPDX-License-Identifier: Apache-2.0 */
/* The check dialect's records and their comparison, as the StableHLO interpreter does it. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/ctx_internal.h"
#include "ir/ir.h"
#include "kiln/parse.h"

kiln_status kiln_module_checks(kiln_ctx *cx, const kiln_module *m, const kiln_check **out_checks,
                               int32_t *out_n) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!m) return kiln__null_argument(cx, "kiln_module_checks", "module");
    if (!out_checks) return kiln__null_argument(cx, "kiln_module_checks", "out_checks");
    if (!out_n) return kiln__null_argument(cx, "kiln_module_checks", "out_n");
    *out_checks = m->checks;
    *out_n = m->n_checks;
    return KILN_OK;
}

/* Element i as a double (floats and integers), and its raw bits. */
static double element(kiln_dtype dt, const unsigned char *data, int64_t i, uint64_t *bits) {
    size_t size = kiln_dtype_size(dt);
    const unsigned char *e = data + (size_t)i * size;
    uint64_t b = 0;
    switch (size) {
    case 1: {
        uint8_t v;
        memcpy(&v, e, 1);
        b = v;
        break;
    }
    case 2: {
        uint16_t v;
        memcpy(&v, e, 2);
        b = v;
        break;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, e, 4);
        b = v;
        break;
    }
    default: memcpy(&b, e, 8); break;
    }
    *bits = b;
    switch (dt) {
    case KILN_BOOL: return (double)(b & 1);
    case KILN_I8: return (double)(int8_t)b;
    case KILN_I16: return (double)(int16_t)b;
    case KILN_I32: return (double)(int32_t)b;
    case KILN_I64: return (double)(int64_t)b;
    case KILN_U8:
    case KILN_U16:
    case KILN_U32:
    case KILN_U64: return (double)b;
    case KILN_F16: return kiln_f16_to_f32((uint16_t)b);
    case KILN_BF16: return kiln_bf16_to_f32((uint16_t)b);
    case KILN_F32: {
        float f;
        uint32_t v = (uint32_t)b;
        memcpy(&f, &v, 4);
        return f;
    }
    default: {
        double d;
        memcpy(&d, &b, 8);
        return d;
    }
    }
}

static void element_text(kiln_dtype dt, double v, uint64_t bits, char *buf, size_t cap) {
    if (dt == KILN_BOOL)
        snprintf(buf, cap, "%s", bits & 1 ? "true" : "false");
    else if (dt == KILN_I64)
        snprintf(buf, cap, "%" PRId64, (int64_t)bits);
    else if (dt == KILN_U64)
        snprintf(buf, cap, "%" PRIu64, bits);
    else if (!kiln_dtype_is_float(dt))
        snprintf(buf, cap, "%.0f", v);
    else
        snprintf(buf, cap, "%.9g", v);
}

/* Monotonic integer order of a float's bits (for ULP distances). */
static int64_t ordered(kiln_dtype dt, uint64_t bits) {
    int width = (int)kiln_dtype_size(dt) * 8;
    uint64_t sign = UINT64_C(1) << (width - 1);
    uint64_t mag = bits & (sign - 1);
    return (bits & sign) ? -(int64_t)mag : (int64_t)mag;
}

kiln_status kiln_check_evaluate(kiln_ctx *cx, const kiln_check *check, const kiln_tensor *value,
                                const kiln_tensor *expected) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!check) return kiln__null_argument(cx, "kiln_check_evaluate", "check");
    if (!value) return kiln__null_argument(cx, "kiln_check_evaluate", "value");
    if (!expected) expected = check->expected;
    if (!expected) return kiln__null_argument(cx, "kiln_check_evaluate", "expected");
    kiln_dtype dt = kiln_tensor_dtype(value);
    if (kiln_tensor_dtype(expected) != dt ||
        !kiln_shape_equal(kiln_tensor_shape(value), kiln_tensor_shape(expected)))
        return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                                  "check at line %d: the value and the expected tensor differ "
                                  "in dtype or shape",
                                  (int)check->line);
    const unsigned char *a = kiln_tensor_data(value), *b = kiln_tensor_data(expected);
    int64_t n = kiln_tensor_numel(value);
    if (n > 0 && (!a || !b))
        return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                                  "check at line %d: the tensors are not readable on the host",
                                  (int)check->line);
    /* A complex tensor is compared as its real and imaginary parts, each as the component
     * type, as the StableHLO interpreter does. */
    bool cplx = kiln_dtype_is_complex(dt);
    if (cplx) {
        dt = kiln_dtype_component(dt);
        n *= 2;
    }
    bool fp = kiln_dtype_is_float(dt);
    for (int64_t i = 0; i < n; i++) {
        uint64_t xb, yb;
        double x = element(dt, a, i, &xb), y = element(dt, b, i, &yb);
        /* Integers and i1 match bit for bit and other checks compare exactly; almost_eq
         * and close let any NaN match any NaN, then differ in what else is near. */
        bool ok;
        if (!fp) {
            ok = xb == yb;
        } else if (check->kind != KILN_CHECK_ALMOST_EQ && check->kind != KILN_CHECK_CLOSE) {
            ok = x == y;
        } else if (isnan(x) || isnan(y)) {
            ok = isnan(x) && isnan(y);
        } else if (check->kind == KILN_CHECK_ALMOST_EQ) {
            ok = isinf(x) || isinf(y) ? x == y : x == y || fabs(x - y) <= check->tolerance;
        } else if (isinf(x) || isinf(y)) {
            ok = xb == yb;
        } else {
            int64_t ox = ordered(dt, xb), oy = ordered(dt, yb);
            uint64_t d = ox > oy ? (uint64_t)ox - (uint64_t)oy : (uint64_t)oy - (uint64_t)ox;
            ok = d <= (uint64_t)(check->max_ulp < 0 ? 0 : check->max_ulp) &&
                 d >= (uint64_t)(check->min_ulp < 0 ? 0 : check->min_ulp);
        }
        if (!ok) {
            char got[48], want[48];
            element_text(dt, x, xb, got, sizeof got);
            element_text(dt, y, yb, want, sizeof want);
            if (cplx)
                return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                                          "index %" PRId64 " (%s part): got %s, expected %s",
                                          i / 2, i % 2 ? "imaginary" : "real", got, want);
            return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                                      "index %" PRId64 ": got %s, expected %s", i, got, want);
        }
    }
    return KILN_OK;
}
