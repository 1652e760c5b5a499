/* SPDX-License-Identifier: Apache-2.0 */
/* numpy-like text for tensors: a "dtype[shape]" header, nested brackets, right-aligned
 * columns sharing one float format, "..." for elided middles of large tensors. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/ctx_internal.h"
#include "base/strbuf.h"
#include "core/element.h"
#include "core/tensor_internal.h"

kiln_print_options kiln_print_options_default(void) {
    return (kiln_print_options){.struct_size = sizeof(kiln_print_options),
                                .precision = 8,
                                .threshold = 1000,
                                .edge_items = 3,
                                .line_width = 75};
}

typedef enum { FMT_INT, FMT_UINT, FMT_BOOL, FMT_FLOAT_INTEGRAL, FMT_FIXED, FMT_EXP } fmt_kind;

typedef struct printer {
    const kiln_tensor *t;
    const void *data;
    kiln_print_options o;
    bool elide;
    /* format chosen by the survey */
    fmt_kind kind;
    int decimals;
    int width;
    /* survey state */
    bool all_integral;
    double max_abs, min_abs_nonzero;
    kiln__strbuf *sb;
} printer;

static int64_t stride_of(const kiln_shape *s, int32_t axis) {
    int64_t st = 1;
    for (int32_t a = axis + 1; a < s->rank; a++)
        st *= s->dims[a];
    return st;
}

/* Calls fn for every element that will be shown, in order. */
typedef void (*visit_fn)(printer *p, int64_t index);

static void visit(printer *p, int32_t axis, int64_t base, visit_fn fn) {
    const kiln_shape *s = &p->t->shape;
    if (axis == s->rank) {
        fn(p, base);
        return;
    }
    int64_t n = s->dims[axis], st = stride_of(s, axis);
    bool cut = p->elide && n > 2 * p->o.edge_items;
    for (int64_t i = 0; i < n; i++) {
        if (cut && i == p->o.edge_items) i = n - p->o.edge_items;
        visit(p, axis + 1, base + i * st, fn);
    }
}

static void survey(printer *p, int64_t index) {
    double v = kiln__element_load(p->data, p->t->dtype, index);
    if (!isfinite(v)) return;
    if (v != floor(v)) p->all_integral = false;
    double a = fabs(v);
    if (a > p->max_abs) p->max_abs = a;
    if (a > 0 && (p->min_abs_nonzero == 0 || a < p->min_abs_nonzero)) p->min_abs_nonzero = a;
}

/* Digits after the point that `v` needs at `precision`, trailing zeros dropped. */
static int needed_decimals(double v, int precision, bool exp) {
    char buf[64];
    snprintf(buf, sizeof buf, exp ? "%.*e" : "%.*f", precision, v);
    char *dot = strchr(buf, '.');
    if (!dot) return 0;
    char *end = exp ? strchr(buf, 'e') : buf + strlen(buf);
    while (end > dot + 1 && end[-1] == '0')
        end--;
    return (int)(end - dot - 1);
}

static void survey_decimals(printer *p, int64_t index) {
    double v = kiln__element_load(p->data, p->t->dtype, index);
    if (!isfinite(v)) return;
    int d = needed_decimals(v, p->o.precision, p->kind == FMT_EXP);
    if (d > p->decimals) p->decimals = d;
}

static int format_element(const printer *p, int64_t index, char *buf, size_t size) {
    const void *d = p->data;
    switch (p->kind) {
    case FMT_BOOL: return snprintf(buf, size, "%s", ((const uint8_t *)d)[index] ? "true" : "false");
    case FMT_INT: {
        long long v;
        switch (p->t->dtype) {
        case KILN_I8: v = ((const int8_t *)d)[index]; break;
        case KILN_I16: v = ((const int16_t *)d)[index]; break;
        case KILN_I32: v = ((const int32_t *)d)[index]; break;
        default: v = ((const int64_t *)d)[index]; break;
        }
        return snprintf(buf, size, "%lld", v);
    }
    case FMT_UINT: {
        unsigned long long v;
        switch (p->t->dtype) {
        case KILN_U8: v = ((const uint8_t *)d)[index]; break;
        case KILN_U16: v = ((const uint16_t *)d)[index]; break;
        case KILN_U32: v = ((const uint32_t *)d)[index]; break;
        default: v = ((const uint64_t *)d)[index]; break;
        }
        return snprintf(buf, size, "%llu", v);
    }
    default: break;
    }
    double v = kiln__element_load(d, p->t->dtype, index);
    if (isnan(v)) return snprintf(buf, size, "nan");
    if (isinf(v)) return snprintf(buf, size, v > 0 ? "inf" : "-inf");
    if (p->kind == FMT_FLOAT_INTEGRAL) return snprintf(buf, size, "%.0f.", v);
    if (p->kind == FMT_EXP) return snprintf(buf, size, "%.*e", p->decimals, v);
    return snprintf(buf, size, "%.*f", p->decimals, v);
}

static void survey_width(printer *p, int64_t index) {
    char buf[64];
    int n = format_element(p, index, buf, sizeof buf);
    if (n > p->width) p->width = n;
}

static void choose_format(printer *p) {
    kiln_dtype dt = p->t->dtype;
    if (dt == KILN_BOOL)
        p->kind = FMT_BOOL;
    else if (dt >= KILN_I8 && dt <= KILN_I64)
        p->kind = FMT_INT;
    else if (dt >= KILN_U8 && dt <= KILN_U64)
        p->kind = FMT_UINT;
    else {
        p->all_integral = true;
        visit(p, 0, 0, survey);
        if (p->all_integral && p->max_abs < 1e16)
            p->kind = FMT_FLOAT_INTEGRAL;
        else if (p->max_abs >= 1e8 || (p->min_abs_nonzero > 0 && p->min_abs_nonzero < 1e-4) ||
                 (p->min_abs_nonzero > 0 && p->max_abs / p->min_abs_nonzero > 1e3))
            p->kind = FMT_EXP;
        else
            p->kind = FMT_FIXED;
        if (p->kind == FMT_FIXED || p->kind == FMT_EXP) visit(p, 0, 0, survey_decimals);
    }
    visit(p, 0, 0, survey_width);
}

/* Writes the ", " between two elements of the last axis, wrapping to a new line indented by
 * `indent` when the next element would pass the line width; returns the new column. */
static int separate_elements(const printer *p, int column, int indent) {
    kiln__strbuf_puts(p->sb, ",");
    if (column + 2 + p->width + 1 > p->o.line_width) {
        kiln__strbuf_puts(p->sb, "\n");
        kiln__strbuf_repeat(p->sb, ' ', (size_t)indent);
        return indent;
    }
    kiln__strbuf_puts(p->sb, " ");
    return column + 2;
}

/* Writes `sep` between two sub-blocks of `axis`, then one blank line per extra level between
 * them, as numpy does, and the indent of the next sub-block. */
static void separate_blocks(const printer *p, const char *sep, int32_t axis, int indent) {
    kiln__strbuf_puts(p->sb, sep);
    for (int32_t k = axis; k < p->t->shape.rank - 1; k++)
        kiln__strbuf_puts(p->sb, "\n");
    kiln__strbuf_repeat(p->sb, ' ', (size_t)indent);
}

static void emit(printer *p, int32_t axis, int64_t base) {
    const kiln_shape *s = &p->t->shape;
    kiln__strbuf *sb = p->sb;
    if (axis == s->rank) {
        char buf[64];
        int n = format_element(p, base, buf, sizeof buf);
        kiln__strbuf_repeat(sb, ' ', (size_t)(p->width - n));
        kiln__strbuf_append(sb, buf, (size_t)n);
        return;
    }
    int64_t n = s->dims[axis], st = stride_of(s, axis);
    bool cut = p->elide && n > 2 * p->o.edge_items;
    bool last_axis = axis == s->rank - 1;
    int indent = axis + 1;
    kiln__strbuf_puts(sb, "[");
    size_t line_start = sb->length; /* approximate column tracking for wrapping */
    int column = indent;
    for (int64_t i = 0; i < n; i++) {
        if (i > 0) {
            if (last_axis) {
                column = separate_elements(p, column, indent);
            } else {
                separate_blocks(p, ",", axis, indent);
            }
        }
        if (cut && i == p->o.edge_items) {
            if (last_axis) {
                kiln__strbuf_repeat(sb, ' ', (size_t)(p->width > 3 ? p->width - 3 : 0));
                kiln__strbuf_puts(sb, "...");
                column += p->width > 3 ? p->width : 3;
                column = separate_elements(p, column, indent);
            } else {
                separate_blocks(p, "...,", axis, indent);
            }
            i = n - p->o.edge_items;
        }
        emit(p, axis + 1, base + i * st);
        if (last_axis) column += p->width;
    }
    (void)line_start;
    kiln__strbuf_puts(sb, "]");
}

static bool options_from(kiln_ctx *cx, const kiln_print_options *in, kiln_print_options *out) {
    *out = kiln_print_options_default();
    if (!in) return true;
    if (in->struct_size < sizeof(kiln_print_options)) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "kiln_tensor_to_string: options->struct_size is %zu; expected %zu "
                           "(use kiln_print_options_default)",
                           in->struct_size, sizeof(kiln_print_options));
        return false;
    }
    if (in->precision < 0 || in->precision > 17 || in->threshold < 0 || in->edge_items < 1 ||
        in->line_width < 10) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "kiln_tensor_to_string: options out of range (precision 0..17, "
                           "threshold >= 0, edge_items >= 1, line_width >= 10)");
        return false;
    }
    *out = *in;
    return true;
}

char *kiln_tensor_to_string(kiln_ctx *cx, const kiln_tensor *t, const kiln_print_options *options) {
    if (!cx) return NULL;
    if (!t) {
        kiln__null_argument(cx, "kiln_tensor_to_string", "tensor");
        return NULL;
    }
    if (t->dead) {
        kiln__dead_error(cx, "kiln_tensor_to_string", t);
        return NULL;
    }
    if (!t->trace && kiln__host_check(cx, "kiln_tensor_to_string", t) != KILN_OK) return NULL;
    printer p = {.t = t, .data = kiln_tensor_data(t)};
    if (!options_from(cx, options, &p.o)) return NULL;
    p.elide = t->numel > p.o.threshold;
    kiln__strbuf sb;
    kiln__strbuf_init(&sb, cx);
    p.sb = &sb;
    char shape[KILN_MAX_RANK * 21 + 3];
    kiln_shape_format(&t->shape, shape, sizeof shape);
    kiln__strbuf_printf(&sb, "%s%s\n", kiln_dtype_name(t->dtype), shape);
    if (t->trace) {
        kiln__strbuf_puts(&sb, "<traced>");
    } else if (t->numel == 0) {
        kiln__strbuf_puts(&sb, "[]"); /* as numpy; the header line gives the shape */
    } else {
        choose_format(&p);
        emit(&p, 0, 0);
    }
    return kiln__strbuf_take(&sb);
}

void kiln_string_free(kiln_ctx *cx, char *text) {
    if (cx) kiln__strbuf_free_string(cx, text);
}

kiln_status kiln_tensor_print(kiln_ctx *cx, const kiln_tensor *t, FILE *stream) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!stream) return kiln__null_argument(cx, "kiln_tensor_print", "stream");
    char *s = kiln_tensor_to_string(cx, t, NULL);
    if (!s) return kiln_ctx_status(cx) != KILN_OK ? kiln_ctx_status(cx) : KILN_INVALID_ARGUMENT;
    int rc = fprintf(stream, "%s\n", s);
    kiln_string_free(cx, s);
    if (rc < 0)
        return kiln_ctx_set_error(cx, KILN_UNAVAILABLE, "kiln_tensor_print: writing failed");
    return KILN_OK;
}
