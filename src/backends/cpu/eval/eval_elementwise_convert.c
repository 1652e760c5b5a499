/* SPDX-License-Identifier: Apache-2.0 */
/* Evaluator kernels for convert, bitcast_convert and reduce_precision.
 *
 * convert: one typed loop per (source, target) dtype pair. Values go through an
 * intermediate of the source's kind (int64_t, uint64_t, float for f16/bf16/f32, double)
 * and are rounded once: int->int wraps, anything->i1 is x != 0, float->int truncates toward
 * zero and saturates with NaN -> 0, and conversions to floats round to nearest even. */
#include <math.h>
#include <string.h>

#include "backends/cpu/eval/eval_elementwise.h"
#include "base/alloc.h"
#include "core/element.h"

#define KERNEL(NAME) KILN__EW_KERNEL(NAME)

/* ---- value conversions -------------------------------------------------------------------- */

/* m rounded to 24 significant bits with round-to-odd: exact in f32, and rounding that to
 * bf16 (8 bits) then gives the correctly rounded result. */
static inline float u64_to_f32_odd(uint64_t m) {
    if (m < (1u << 24)) return (float)m;
    int shift = 64 - __builtin_clzll(m) - 24;
    uint64_t t = m >> shift;
    if (m & ((UINT64_C(1) << shift) - 1)) t |= 1u;
    return ldexpf((float)t, shift);
}
static inline uint16_t u64_to_bf16(uint64_t v) { return kiln_f32_to_bf16(u64_to_f32_odd(v)); }
static inline uint16_t i64_to_bf16(int64_t v) {
    float f = u64_to_f32_odd(v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
    return kiln_f32_to_bf16(v < 0 ? -f : f);
}

/* To an integer dtype (cvt_<kind>_<dtype>): from integers by wrapping, from floats by
 * truncation with saturation. */
#define T int8_t
#define LO -128.0
#define HI 128.0
#define TMIN INT8_MIN
#define TMAX INT8_MAX
#define SIGNED 1
#define FN(kind) cvt_##kind##_i8
#include "backends/cpu/eval/convert_int_target.inc"

#define T int16_t
#define LO -32768.0
#define HI 32768.0
#define TMIN INT16_MIN
#define TMAX INT16_MAX
#define SIGNED 1
#define FN(kind) cvt_##kind##_i16
#include "backends/cpu/eval/convert_int_target.inc"

#define T int32_t
#define LO -2147483648.0
#define HI 2147483648.0
#define TMIN INT32_MIN
#define TMAX INT32_MAX
#define SIGNED 1
#define FN(kind) cvt_##kind##_i32
#include "backends/cpu/eval/convert_int_target.inc"

#define T int64_t
#define LO -9223372036854775808.0
#define HI 9223372036854775808.0
#define TMIN INT64_MIN
#define TMAX INT64_MAX
#define SIGNED 1
#define FN(kind) cvt_##kind##_i64
#include "backends/cpu/eval/convert_int_target.inc"

#define T uint8_t
#define LO 0.0
#define HI 256.0
#define TMIN 0
#define TMAX UINT8_MAX
#define SIGNED 0
#define FN(kind) cvt_##kind##_u8
#include "backends/cpu/eval/convert_int_target.inc"

#define T uint16_t
#define LO 0.0
#define HI 65536.0
#define TMIN 0
#define TMAX UINT16_MAX
#define SIGNED 0
#define FN(kind) cvt_##kind##_u16
#include "backends/cpu/eval/convert_int_target.inc"

#define T uint32_t
#define LO 0.0
#define HI 4294967296.0
#define TMIN 0
#define TMAX UINT32_MAX
#define SIGNED 0
#define FN(kind) cvt_##kind##_u32
#include "backends/cpu/eval/convert_int_target.inc"

#define T uint64_t
#define LO 0.0
#define HI 18446744073709551616.0
#define TMIN 0
#define TMAX UINT64_MAX
#define SIGNED 0
#define FN(kind) cvt_##kind##_u64
#include "backends/cpu/eval/convert_int_target.inc"

static inline uint8_t cvt_s_bool(int64_t v) { return v != 0; }
static inline uint8_t cvt_u_bool(uint64_t v) { return v != 0; }
static inline uint8_t cvt_f_bool(float v) { return v != 0.0f; }
static inline uint8_t cvt_d_bool(double v) { return v != 0.0; }

static inline float cvt_s_f32(int64_t v) { return (float)v; }
static inline float cvt_u_f32(uint64_t v) { return (float)v; }
static inline float cvt_f_f32(float v) { return v; }
static inline float cvt_d_f32(double v) { return (float)v; }

static inline double cvt_s_f64(int64_t v) { return (double)v; }
static inline double cvt_u_f64(uint64_t v) { return (double)v; }
static inline double cvt_f_f64(float v) { return (double)v; }
static inline double cvt_d_f64(double v) { return v; }

/* Integers to f16 through f32: exact below 2^24, and anything larger is inf in f16 either
 * way. */
static inline uint16_t cvt_s_f16(int64_t v) { return kiln_f32_to_f16((float)v); }
static inline uint16_t cvt_u_f16(uint64_t v) { return kiln_f32_to_f16((float)v); }
static inline uint16_t cvt_f_f16(float v) { return kiln_f32_to_f16(v); }
static inline uint16_t cvt_d_f16(double v) { return kiln__f64_to_f16(v); }

static inline uint16_t cvt_s_bf16(int64_t v) { return i64_to_bf16(v); }
static inline uint16_t cvt_u_bf16(uint64_t v) { return u64_to_bf16(v); }
static inline uint16_t cvt_f_bf16(float v) { return kiln_f32_to_bf16(v); }
static inline uint16_t cvt_d_bf16(double v) { return kiln__f64_to_bf16(v); }

/* ---- the (source, target) loops ----------------------------------------------------------- */

#define LOAD_PLAIN(v) (v)
#define LOAD_F16(v) kiln_f16_to_f32(v)
#define LOAD_BF16(v) kiln_bf16_to_f32(v)

/* convert_from_<dtype>: one per source dtype, of kind s, u, f or d, read with LOAD. */
#define ST uint8_t
#define LOAD LOAD_PLAIN
#define CVT(to) cvt_u_##to
#define FN(name) name##_bool
#include "backends/cpu/eval/convert_from.inc"

#define ST int8_t
#define LOAD LOAD_PLAIN
#define CVT(to) cvt_s_##to
#define FN(name) name##_i8
#include "backends/cpu/eval/convert_from.inc"

#define ST int16_t
#define LOAD LOAD_PLAIN
#define CVT(to) cvt_s_##to
#define FN(name) name##_i16
#include "backends/cpu/eval/convert_from.inc"

#define ST int32_t
#define LOAD LOAD_PLAIN
#define CVT(to) cvt_s_##to
#define FN(name) name##_i32
#include "backends/cpu/eval/convert_from.inc"

#define ST int64_t
#define LOAD LOAD_PLAIN
#define CVT(to) cvt_s_##to
#define FN(name) name##_i64
#include "backends/cpu/eval/convert_from.inc"

#define ST uint8_t
#define LOAD LOAD_PLAIN
#define CVT(to) cvt_u_##to
#define FN(name) name##_u8
#include "backends/cpu/eval/convert_from.inc"

#define ST uint16_t
#define LOAD LOAD_PLAIN
#define CVT(to) cvt_u_##to
#define FN(name) name##_u16
#include "backends/cpu/eval/convert_from.inc"

#define ST uint32_t
#define LOAD LOAD_PLAIN
#define CVT(to) cvt_u_##to
#define FN(name) name##_u32
#include "backends/cpu/eval/convert_from.inc"

#define ST uint64_t
#define LOAD LOAD_PLAIN
#define CVT(to) cvt_u_##to
#define FN(name) name##_u64
#include "backends/cpu/eval/convert_from.inc"

#define ST uint16_t
#define LOAD LOAD_F16
#define CVT(to) cvt_f_##to
#define FN(name) name##_f16
#include "backends/cpu/eval/convert_from.inc"

#define ST uint16_t
#define LOAD LOAD_BF16
#define CVT(to) cvt_f_##to
#define FN(name) name##_bf16
#include "backends/cpu/eval/convert_from.inc"

#define ST float
#define LOAD LOAD_PLAIN
#define CVT(to) cvt_f_##to
#define FN(name) name##_f32
#include "backends/cpu/eval/convert_from.inc"

#define ST double
#define LOAD LOAD_PLAIN
#define CVT(to) cvt_d_##to
#define FN(name) name##_f64
#include "backends/cpu/eval/convert_from.inc"

/* n elements of real dtype `from` at x converted to real dtype `to` at r (false for a pair
 * without a loop). */
static bool convert_narrow(kiln_dtype from, kiln_dtype to, const void *x_, void *r_, int64_t n);

static bool convert_real(kiln_dtype from, kiln_dtype to, const void *x_, void *r_, int64_t n) {
    if (kiln_dtype_is_narrow(from) || kiln_dtype_is_narrow(to))
        return convert_narrow(from, to, x_, r_, n);
    switch (from) {
    case KILN_BOOL: return convert_from_bool(to, x_, r_, n);
    case KILN_I8: return convert_from_i8(to, x_, r_, n);
    case KILN_I16: return convert_from_i16(to, x_, r_, n);
    case KILN_I32: return convert_from_i32(to, x_, r_, n);
    case KILN_I64: return convert_from_i64(to, x_, r_, n);
    case KILN_U8: return convert_from_u8(to, x_, r_, n);
    case KILN_U16: return convert_from_u16(to, x_, r_, n);
    case KILN_U32: return convert_from_u32(to, x_, r_, n);
    case KILN_U64: return convert_from_u64(to, x_, r_, n);
    case KILN_F16: return convert_from_f16(to, x_, r_, n);
    case KILN_BF16: return convert_from_bf16(to, x_, r_, n);
    case KILN_F32: return convert_from_f32(to, x_, r_, n);
    case KILN_F64: return convert_from_f64(to, x_, r_, n);
    default: return false;
    }
}

/* A conversion with a narrow type on either side (kiln_dtype_is_narrow), a block at a time
 * through i64 (from integers and bool) or f64 (from floats, exact for every one), so that
 * each side follows the rules of the wide types: integers wrap (to the sub-byte width
 * too), floats to integers truncate, saturate and take NaN to 0, and a value becomes a
 * small float with one rounding. */
static bool convert_narrow(kiln_dtype from, kiln_dtype to, const void *x_, void *r_, int64_t n) {
    enum { BLOCK = 256 };
    bool via_int = !kiln_dtype_is_float(from);
    kiln_dtype mid = via_int ? KILN_I64 : KILN_F64;
    if (kiln_dtype_is_complex(from) || kiln_dtype_is_complex(to) || !kiln_dtype_is_valid(from) ||
        !kiln_dtype_is_valid(to))
        return false;
    const unsigned char *x = x_;
    unsigned char *r = r_;
    size_t fs = kiln_dtype_size(from), ts = kiln_dtype_size(to);
    int64_t iv[BLOCK];
    double dv[BLOCK];
    void *v = via_int ? (void *)iv : (void *)dv;
    for (int64_t b = 0; b < n; b += BLOCK) {
        int64_t m = n - b < BLOCK ? n - b : BLOCK;
        const unsigned char *xb = x + (size_t)b * fs;
        unsigned char *rb = r + (size_t)b * ts;
        if (!kiln_dtype_is_narrow(from)) {
            if (!convert_real(from, mid, xb, v, m)) return false;
        } else {
            for (int64_t i = 0; i < m; i++) {
                if (via_int)
                    iv[i] = kiln__narrow_value(from, xb[i]);
                else
                    dv[i] = kiln_small_float_decode(from, xb[i]);
            }
        }
        if (!kiln_dtype_is_narrow(to)) {
            if (!convert_real(mid, to, v, rb, m)) return false;
        } else if (kiln_dtype_is_float(to)) {
            for (int64_t i = 0; i < m; i++)
                rb[i] = kiln_small_float_encode(to, via_int ? (double)iv[i] : dv[i]);
        } else if (via_int) {
            for (int64_t i = 0; i < m; i++)
                rb[i] = kiln__wrap_narrow(to, iv[i]);
        } else { /* float to a sub-byte integer: truncated, saturated, NaN to 0 */
            double lo = kiln_dtype_is_signed(to) ? -ldexp(1.0, (int)kiln_dtype_bits(to) - 1) : 0;
            double hi = (kiln_dtype_is_signed(to) ? -lo : ldexp(1.0, (int)kiln_dtype_bits(to))) - 1;
            for (int64_t i = 0; i < m; i++) {
                double t = dv[i] != dv[i] ? 0.0 : trunc(dv[i]);
                rb[i] = kiln__wrap_narrow(to, (int64_t)(t < lo ? lo : t > hi ? hi : t));
            }
        }
    }
    return true;
}

/* A conversion to or from complex, through the real loops: complex to complex part by part;
 * a real value becomes (x, 0) (x converted to the parts' type once); a complex value becomes
 * its real part converted (as XLA's convert does). The parts pass through a scratch buffer,
 * since x and r may be one buffer. */
static kiln_status convert_complex(kiln_ctx *cx, kiln_dtype from, kiln_dtype to, const void *x_,
                                   void *r_, int64_t n) {
    kiln_dtype pf = kiln_dtype_component(from), pt = kiln_dtype_component(to);
    if (kiln_dtype_is_complex(from) && kiln_dtype_is_complex(to))
        return convert_real(pf, pt, x_, r_, 2 * n) ? KILN_OK
                                                   : kiln__ew_bad_dtype(cx, "convert", to);
    size_t bytes = (size_t)n * kiln_dtype_size(kiln_dtype_is_complex(to) ? pt : pf);
    unsigned char *tmp = kiln__alloc(cx, bytes, KILN_DATA_ALIGNMENT, "convert");
    if (!tmp) return KILN_RESOURCE_EXHAUSTED;
    bool ok = true;
    if (kiln_dtype_is_complex(to)) { /* real -> complex */
        ok = convert_real(from, pt, x_, tmp, n);
        size_t ps = kiln_dtype_size(pt);
        unsigned char *r = r_;
        for (int64_t i = 0; ok && i < n; i++) {
            memcpy(r + (size_t)(2 * i) * ps, tmp + (size_t)i * ps, ps);
            memset(r + (size_t)(2 * i + 1) * ps, 0, ps);
        }
    } else { /* complex -> real: the real part */
        size_t ps = kiln_dtype_size(pf);
        const unsigned char *x = x_;
        for (int64_t i = 0; i < n; i++)
            memcpy(tmp + (size_t)i * ps, x + (size_t)(2 * i) * ps, ps);
        ok = pf == to ? (memcpy(r_, tmp, bytes), true) : convert_real(pf, to, tmp, r_, n);
    }
    kiln__free(cx, tmp, bytes);
    return ok ? KILN_OK : kiln__ew_bad_dtype(cx, "convert", to);
}

KERNEL(CONVERT) {
    (void)n_operands, (void)n_results;
    kiln_dtype from = kiln_tensor_dtype(operands[0]), to = attrs->u.convert_to;
    int64_t n = kiln_tensor_numel(results[0]);
    if (n == 0) return KILN_OK;
    const void *x_ = kiln__in(operands[0]);
    void *r_ = kiln__out(results[0]);
    if (from == to) {
        memmove(r_, x_, kiln_tensor_nbytes(results[0]));
        return KILN_OK;
    }
    if (kiln_dtype_is_complex(from) || kiln_dtype_is_complex(to))
        return convert_complex(cx, from, to, x_, r_, n);
    if (!kiln_dtype_is_valid(from)) return kiln__ew_bad_dtype(cx, "convert", from);
    return convert_real(from, to, x_, r_, n) ? KILN_OK : kiln__ew_bad_dtype(cx, "convert", to);
}

/* ---- bitcast_convert ---------------------------------------------------------------------- */

/* Bits of an element for bitcast_convert: i1 counts as one bit (as in StableHLO, where
 * 64 i1 values make one i64, the first the least significant bit), a sub-byte type as its
 * own width (its bits are the low bits of its byte). */
static int bit_width(kiln_dtype d) { return (int)kiln_dtype_bits(d); }

static uint64_t load_bits(const void *p, int bits, int64_t i) {
    switch (bits) {
    case 1: return ((const uint8_t *)p)[i] != 0;
    case 2:
    case 4:
    case 6: return ((const uint8_t *)p)[i] & ((1u << bits) - 1u);
    case 8: return ((const uint8_t *)p)[i];
    case 16: return ((const uint16_t *)p)[i];
    case 32: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
    }
}

static void store_bits(void *p, int bits, int64_t i, uint64_t v) {
    switch (bits) {
    case 1: ((uint8_t *)p)[i] = (uint8_t)(v & 1u); break;
    case 2:
    case 4:
    case 6: ((uint8_t *)p)[i] = (uint8_t)(v & ((1u << bits) - 1u)); break;
    case 8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case 16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case 32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((uint64_t *)p)[i] = v; break;
    }
}

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "bitcast_convert takes an element's bytes in memory order as its pieces");

KERNEL(BITCAST_CONVERT) {
    (void)cx, (void)n_operands, (void)n_results;
    kiln_dtype from = kiln_tensor_dtype(operands[0]), to = attrs->u.convert_to;
    int from_bits = bit_width(from), to_bits = bit_width(to);
    int64_t n_in = kiln_tensor_numel(operands[0]), n_out = kiln_tensor_numel(results[0]);
    if (n_in == 0 || n_out == 0) return KILN_OK;
    const void *x = kiln__in(operands[0]);
    void *r = kiln__out(results[0]);
    if (from_bits >= 8 && to_bits >= 8) {
        /* Whole bytes: the pieces of an element, least significant first, are its bytes in
         * memory order (little-endian; a complex value's real part is its low half, as the
         * spec's reference packs it). In place it is already done. */
        if (r != x) memcpy(r, x, kiln_tensor_nbytes(results[0]));
    } else if (to_bits < from_bits) {
        /* Each element splits into k pieces, least significant first. */
        int k = from_bits / to_bits;
        uint64_t mask = to_bits == 64 ? ~UINT64_C(0) : (UINT64_C(1) << to_bits) - 1;
        for (int64_t i = 0; i < n_in; i++) {
            uint64_t v = load_bits(x, from_bits, i);
            for (int j = 0; j < k; j++)
                store_bits(r, to_bits, i * k + j, (v >> (j * to_bits)) & mask);
        }
    } else {
        /* k elements, least significant first, join into one. */
        int k = to_bits / from_bits;
        for (int64_t i = 0; i < n_out; i++) {
            uint64_t v = 0;
            for (int j = 0; j < k; j++)
                v |= load_bits(x, from_bits, i * k + j) << (j * from_bits);
            store_bits(r, to_bits, i, v);
        }
    }
    return KILN_OK;
}

/* ---- reduce_precision --------------------------------------------------------------------- */

/* x's bits rounded to `e` exponent and `m` mantissa bits, as the spec's reference
 * (stablehlo/reference/Element.cpp reducePrecision) does for a float of `width` bits with
 * `src_m` mantissa and `src_e` exponent bits: round to nearest even into the kept mantissa
 * bits, then overflow to a signed infinity's bits and underflow (subnormals included) to a
 * signed zero. A NaN stays itself, or becomes +inf's bits when no mantissa bit is kept. */
static uint64_t reduce_bits(uint64_t x, int width, int src_e, int src_m, bool has_sign,
                            int64_t e, int64_t m, bool is_nan) {
    uint64_t in = x;
    uint64_t all = width == 64 ? ~UINT64_C(0) : (UINT64_C(1) << width) - 1;
    if (m < src_m) {
        uint64_t last = UINT64_C(1) << (src_m - m);
        uint64_t bias = (last >> 1) - 1 + ((x & last) >> (src_m - m));
        x = (x + bias) & ~(last - 1) & all;
    }
    uint64_t exp_mask = ((UINT64_C(1) << src_e) - 1) << src_m;
    if (e < src_e) {
        uint64_t sign = has_sign ? x & (UINT64_C(1) << (width - 1)) : 0;
        uint64_t src_bias = (UINT64_C(1) << (src_e - 1)) - 1;
        uint64_t reduced_bias = (UINT64_C(1) << (e - 1)) - 1;
        uint64_t xe = x & exp_mask;
        if (xe > (src_bias + reduced_bias) << src_m) x = sign | exp_mask;
        if (xe <= (src_bias - reduced_bias) << src_m) x = sign;
    }
    if (is_nan) x = m > 0 ? in : exp_mask;
    return x;
}

/* The layout of a float dtype: its width and its exponent and mantissa bits. */
static bool float_layout(kiln_dtype d, int *width, int *e, int *m) {
    switch (d) {
    case KILN_F16: *width = 16, *e = 5, *m = 10; return true;
    case KILN_BF16: *width = 16, *e = 8, *m = 7; return true;
    case KILN_F32: *width = 32, *e = 8, *m = 23; return true;
    case KILN_F64: *width = 64, *e = 11, *m = 52; return true;
    default: *width = (int)kiln_dtype_bits(d); return kiln__small_float_params(d, e, m);
    }
}

KERNEL(REDUCE_PRECISION) {
    (void)n_operands, (void)n_results;
    kiln_dtype dt = kiln_tensor_dtype(operands[0]);
    int width, src_e, src_m;
    if (!float_layout(dt, &width, &src_e, &src_m))
        return kiln__ew_bad_dtype(cx, "reduce_precision", dt);
    int64_t n = kiln_tensor_numel(operands[0]);
    if (n == 0) return KILN_OK;
    /* Past the source's own widths nothing changes (and the shifts stay in range). */
    int64_t e = attrs->u.precision.exponent_bits, m = attrs->u.precision.mantissa_bits;
    if (e > src_e) e = src_e;
    if (m > src_m) m = src_m;
    bool has_sign = width > src_e + src_m, small = width <= 8;
    uint64_t exp_mask = ((UINT64_C(1) << src_e) - 1) << src_m;
    uint64_t man_mask = (UINT64_C(1) << src_m) - 1;
    const void *x = kiln__in(operands[0]);
    void *r = kiln__out(results[0]);
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = load_bits(x, small ? 8 : width, i);
        if (small) v &= (UINT64_C(1) << width) - 1;
        bool nan = small ? isnan(kiln_small_float_decode(dt, (uint8_t)v))
                         : (v & exp_mask) == exp_mask && (v & man_mask) != 0;
        store_bits(r, small ? 8 : width, i,
                   reduce_bits(v, width, src_e, src_m, has_sign, e, m, nan));
    }
    return KILN_OK;
}
