/* SPDX-License-Identifier: Apache-2.0 */
/* Literals of the StableHLO text: floats that read back to the same bits, written the way
 * MLIR writes them, and dense elements attributes. */
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/element.h"
#include "ir/print.h"

/* ---- floats ---------------------------------------------------------------------------- */

typedef struct float_format {
    int bits;           /* total width */
    int mantissa;       /* stored mantissa bits */
    int natural_digits; /* APFloat's default precision: 2 + precision * 59 / 196 */
    int exact_digits;   /* enough significant digits to write any value exactly */
} float_format;

static bool format_of(kiln_dtype dtype, float_format *f) {
    switch (dtype) {
    case KILN_F16: *f = (float_format){16, 10, 5, 30}; return true;
    case KILN_BF16: *f = (float_format){16, 7, 4, 130}; return true;
    case KILN_F32: *f = (float_format){32, 23, 9, 130}; return true;
    case KILN_F64: *f = (float_format){64, 52, 17, 780}; return true;
    default: return false;
    }
}

static double value_of(kiln_dtype dtype, uint64_t bits) {
    switch (dtype) {
    case KILN_F16: return kiln_f16_to_f32((uint16_t)bits);
    case KILN_BF16: return kiln_bf16_to_f32((uint16_t)bits);
    case KILN_F32: {
        uint32_t b = (uint32_t)bits;
        float v;
        memcpy(&v, &b, sizeof v);
        return v;
    }
    default: {
        double v;
        memcpy(&v, &bits, sizeof v);
        return v;
    }
    }
}

/* The bits the text reads back as in `dtype` (correctly rounded through double, which
 * holds every f16, bf16 and f32 value; an f32 is also read directly, so both ways of
 * reading agree). False when it does not read back to `bits`. */
static bool reads_back(kiln_dtype dtype, uint64_t bits, const char *text) {
    /* strtod reads the locale's radix character: write the text with it. */
    char local[KILN__FLOAT_TEXT + 8];
    const char *radix = localeconv()->decimal_point;
    size_t rlen = radix ? strlen(radix) : 0, n = 0;
    for (const char *c = text; *c && n + rlen + 1 < sizeof local; c++) {
        if (*c == '.' && rlen > 0 && strcmp(radix, ".") != 0) {
            memcpy(local + n, radix, rlen);
            n += rlen;
        } else {
            local[n++] = *c;
        }
    }
    local[n] = '\0';
    char *end;
    double d = strtod(local, &end);
    if (*end != '\0') return false;
    switch (dtype) {
    case KILN_F16: return kiln__f64_to_f16(d) == (uint16_t)bits;
    case KILN_BF16: return kiln__f64_to_bf16(d) == (uint16_t)bits;
    case KILN_F64: {
        uint64_t a;
        memcpy(&a, &d, sizeof a);
        return a == bits;
    }
    case KILN_F32: {
        float direct = strtof(local, &end), narrowed = (float)d;
        uint32_t a, b;
        memcpy(&a, &direct, sizeof a);
        memcpy(&b, &narrowed, sizeof b);
        return a == (uint32_t)bits && b == (uint32_t)bits;
    }
    default: return kiln_small_float_encode(dtype, d) == (uint8_t)bits; /* f8, f6, f4 */
    }
}

/* A decimal: value = digits (most significant first, no trailing zeros) * 10^exp. */
typedef struct decimal {
    char digits[800];
    int n;
    int exp;
} decimal;

/* The exact decimal expansion of |v| (finite, non-zero). */
static void exact_decimal(double v, int exact_digits, decimal *d) {
    char text[820];
    snprintf(text, sizeof text, "%.*e", exact_digits, fabs(v));
    const char *e = strchr(text, 'e');
    d->n = 0;
    for (const char *c = text; c < e; c++)
        if (*c >= '0' && *c <= '9' && d->n < (int)sizeof d->digits) d->digits[d->n++] = *c;
    int x = e ? atoi(e + 1) : 0;
    d->exp = x - (d->n - 1);
    while (d->n > 1 && d->digits[d->n - 1] == '0') {
        d->n--;
        d->exp++;
    }
}

/* LLVM's APFloat::toString on the decimal `in`: rounds half up to `precision`
 * significant digits, then writes scientific or positional notation. */
static void apfloat_text(const decimal *in, bool negative, int precision, int max_padding,
                         bool truncate_zero, char *out, size_t cap) {
    char dig[800];
    int n = in->n, exp = in->exp;
    memcpy(dig, in->digits, (size_t)n);
    if (n > precision) {
        int dropped = n - precision;
        if (dig[precision] >= '5') {
            int i = precision - 1;
            while (i >= 0 && dig[i] == '9')
                i--;
            if (i < 0) { /* carried through: one digit */
                dig[0] = '1';
                n = 1;
                exp += dropped + precision;
            } else {
                dig[i]++;
                n = i + 1;
                exp += dropped + (precision - n);
            }
        } else {
            n = precision;
            exp += dropped;
        }
        while (n > 1 && dig[n - 1] == '0') {
            n--;
            exp++;
        }
    }
    bool scientific;
    if (max_padding == 0) {
        scientific = true;
    } else if (exp >= 0) {
        scientific = exp > max_padding || n + exp > precision;
    } else {
        int msd = exp + n - 1;
        scientific = msd < 0 && -msd > max_padding;
    }
    size_t k = 0;
#define PUT(c)                           \
    do {                                 \
        if (k + 1 < cap) out[k++] = (c); \
    } while (0)
    if (negative) PUT('-');
    if (scientific) {
        int e10 = exp + n - 1;
        PUT(dig[0]);
        PUT('.');
        if (n == 1 && truncate_zero) PUT('0');
        for (int i = 1; i < n; i++)
            PUT(dig[i]);
        if (!truncate_zero)
            for (int i = n - 1; i < precision; i++)
                PUT('0');
        PUT(truncate_zero ? 'E' : 'e');
        PUT(e10 >= 0 ? '+' : '-');
        char eb[8];
        int len = snprintf(eb, sizeof eb, truncate_zero ? "%d" : "%02d", abs(e10));
        for (int i = 0; i < len; i++)
            PUT(eb[i]);
    } else if (exp >= 0) {
        for (int i = 0; i < n; i++)
            PUT(dig[i]);
        for (int i = 0; i < exp; i++)
            PUT('0');
    } else {
        int whole = exp + n, i = 0;
        if (whole > 0) {
            for (; i < whole; i++)
                PUT(dig[i]);
            PUT('.');
        } else {
            PUT('0');
            PUT('.');
            for (int z = 0; z < -whole; z++)
                PUT('0');
        }
        for (; i < n; i++)
            PUT(dig[i]);
    }
#undef PUT
    out[k] = '\0';
}

/* A small float (f8, f6, f4): its value as the others are written, NaN and infinities as
 * their bits. */
static size_t format_small_float(kiln_dtype dtype, uint8_t bits, char *out) {
    int exponent_bits, mantissa_bits;
    if (!kiln__small_float_params(dtype, &exponent_bits, &mantissa_bits)) return 0;
    double v = kiln_small_float_decode(dtype, bits);
    if (isfinite(v) && v == 0)
        return (size_t)snprintf(out, KILN__FLOAT_TEXT, "%s0.000000e+00", signbit(v) ? "-" : "");
    if (isfinite(v)) {
        decimal d;
        exact_decimal(v, 130, &d); /* 2^-127, the smallest, has 89 significant digits */
        apfloat_text(&d, v < 0, 6, 0, false, out, KILN__FLOAT_TEXT);
        if (reads_back(dtype, bits, out)) return strlen(out);
        apfloat_text(&d, v < 0, 2 + (mantissa_bits + 1) * 59 / 196, 3, true, out,
                     KILN__FLOAT_TEXT);
        if (strchr(out, '.') && reads_back(dtype, bits, out)) return strlen(out);
    }
    return (size_t)snprintf(out, KILN__FLOAT_TEXT, "0x%02X", (unsigned)bits);
}

size_t kiln__format_float(kiln_dtype dtype, uint64_t bits, char *out) {
    float_format f;
    out[0] = '\0';
    if (kiln_dtype_is_narrow(dtype)) return format_small_float(dtype, (uint8_t)bits, out);
    if (!format_of(dtype, &f)) return 0;
    uint64_t width_mask = f.bits == 64 ? UINT64_MAX : ((uint64_t)1 << f.bits) - 1;
    bits &= width_mask;
    int exp_bits = f.bits - 1 - f.mantissa;
    uint64_t exp_field = (bits >> f.mantissa) & (((uint64_t)1 << exp_bits) - 1);
    bool negative = (bits >> (f.bits - 1)) & 1;
    if (exp_field != ((uint64_t)1 << exp_bits) - 1) {
        double v = value_of(dtype, bits);
        if (v == 0) {
            return (size_t)snprintf(out, KILN__FLOAT_TEXT, "%s0.000000e+00", negative ? "-" : "");
        }
        decimal d;
        exact_decimal(v, f.exact_digits, &d);
        apfloat_text(&d, negative, 6, 0, false, out, KILN__FLOAT_TEXT);
        if (reads_back(dtype, bits, out)) return strlen(out);
        apfloat_text(&d, negative, f.natural_digits, 3, true, out, KILN__FLOAT_TEXT);
        if (strchr(out, '.') && reads_back(dtype, bits, out)) return strlen(out);
    }
    /* NaN, infinities, and what has no exact decimal form here: the bits. */
    return (size_t)snprintf(out, KILN__FLOAT_TEXT, "0x%0*" PRIX64, f.bits / 4, bits);
}

/* ---- dense elements -------------------------------------------------------------------- */

/* The raw bits of element i (little-endian value of its bytes) of `size` <= 8 bytes (the
 * callers read a complex element as its two parts). */
static uint64_t element_bits(const void *data, size_t size, int64_t i) {
    const uint8_t *p = (const uint8_t *)data + (size_t)i * size;
    const uint16_t one = 1;
    bool little = *(const uint8_t *)&one == 1;
    uint64_t bits = 0;
    for (size_t b = 0; b < size; b++)
        bits |= (uint64_t)p[little ? b : size - 1 - b] << (8 * b);
    return bits;
}

static void print_scalar(kiln__strbuf *sb, kiln_dtype dtype, const void *data, int64_t i) {
    size_t size = kiln_dtype_size(dtype);
    uint64_t bits = element_bits(data, size, i);
    if (dtype == KILN_BOOL) {
        kiln__strbuf_puts(sb, bits ? "true" : "false");
    } else if (kiln_dtype_is_float(dtype)) {
        char text[KILN__FLOAT_TEXT];
        size_t n = kiln__format_float(dtype, bits, text);
        kiln__strbuf_append(sb, text, n);
    } else if (kiln_dtype_is_narrow(dtype)) {
        kiln__strbuf_printf(sb, "%" PRId64, kiln__narrow_value(dtype, (uint8_t)bits));
    } else if (kiln_dtype_is_signed(dtype)) {
        uint64_t sign = (uint64_t)1 << (8 * size - 1);
        int64_t v;
        if (size == 8)
            v = bits < sign ? (int64_t)bits : -(int64_t)~bits - 1;
        else
            v = (bits & sign) ? (int64_t)bits - (int64_t)(sign << 1) : (int64_t)bits;
        kiln__strbuf_printf(sb, "%" PRId64, v);
    } else {
        kiln__strbuf_printf(sb, "%" PRIu64, bits);
    }
}

/* A complex element the way MLIR writes it, "(re,im)" with no space; other elements as
 * themselves. */
static void print_element(kiln__strbuf *sb, kiln_dtype dtype, const void *data, int64_t i) {
    if (!kiln_dtype_is_complex(dtype)) {
        print_scalar(sb, dtype, data, i);
        return;
    }
    kiln_dtype part = kiln_dtype_component(dtype);
    kiln__strbuf_puts(sb, "(");
    print_scalar(sb, part, data, 2 * i);
    kiln__strbuf_puts(sb, ",");
    print_scalar(sb, part, data, 2 * i + 1);
    kiln__strbuf_puts(sb, ")");
}

static void print_list(kiln__strbuf *sb, kiln_dtype dtype, const kiln_shape *shape,
                       const void *data, int32_t axis, int64_t base) {
    int64_t stride = 1;
    for (int32_t a = axis + 1; a < shape->rank; a++)
        stride *= shape->dims[a];
    kiln__strbuf_puts(sb, "[");
    for (int64_t i = 0; i < shape->dims[axis] && !sb->failed; i++) {
        if (i > 0) kiln__strbuf_puts(sb, ", ");
        if (axis == shape->rank - 1)
            print_element(sb, dtype, data, base + i);
        else
            print_list(sb, dtype, shape, data, axis + 1, base + i * stride);
    }
    kiln__strbuf_puts(sb, "]");
}

/* The raw bytes, little-endian per scalar (a complex element is its two parts, real
 * first, as MLIR stores them). */
static void print_hex_blob(kiln__strbuf *sb, kiln_dtype dtype, const void *data, int64_t numel) {
    static const char hex[] = "0123456789ABCDEF";
    if (kiln_dtype_is_complex(dtype)) {
        dtype = kiln_dtype_component(dtype);
        numel *= 2;
    }
    size_t size = kiln_dtype_size(dtype);
    char chunk[512];
    size_t k = 0;
    kiln__strbuf_puts(sb, "\"0x");
    for (int64_t i = 0; i < numel && !sb->failed; i++) {
        uint64_t bits = element_bits(data, size, i);
        for (size_t b = 0; b < size; b++) {
            uint8_t byte = (uint8_t)(bits >> (8 * b));
            chunk[k++] = hex[byte >> 4];
            chunk[k++] = hex[byte & 15];
        }
        if (k + 16 > sizeof chunk) {
            kiln__strbuf_append(sb, chunk, k);
            k = 0;
        }
    }
    kiln__strbuf_append(sb, chunk, k);
    kiln__strbuf_puts(sb, "\"");
}

void kiln__print_dense(kiln__strbuf *sb, kiln_dtype dtype, const kiln_shape *shape,
                       const void *data) {
    int64_t numel = 1;
    for (int32_t a = 0; a < shape->rank; a++)
        numel *= shape->dims[a];
    size_t size = kiln_dtype_size(dtype);
    kiln__strbuf_puts(sb, "dense<");
    if (numel > 0) {
        bool splat = true;
        for (int64_t i = 1; i < numel && splat; i++)
            splat = memcmp(data, (const uint8_t *)data + (size_t)i * size, size) == 0;
        if (splat)
            print_element(sb, dtype, data, 0);
        else if (numel > 100 && dtype != KILN_BOOL)
            print_hex_blob(sb, dtype, data, numel);
        else
            print_list(sb, dtype, shape, data, 0, 0);
    }
    kiln__strbuf_puts(sb, ">");
}
