/* SPDX-License-Identifier: Apache-2.0 */
/* Op costs (op_cost.h). */
#include "ops/op_cost.h"

#include <stdbool.h>

bool kiln__op_transcendental(kiln_op op) {
    switch (op) {
    case KILN_OP_CBRT:
    case KILN_OP_EXPONENTIAL:
    case KILN_OP_EXPONENTIAL_MINUS_ONE:
    case KILN_OP_LOG:
    case KILN_OP_LOG_PLUS_ONE:
    case KILN_OP_LOGISTIC:
    case KILN_OP_SINE:
    case KILN_OP_COSINE:
    case KILN_OP_TAN:
    case KILN_OP_TANH:
    case KILN_OP_POWER:
    case KILN_OP_ATAN2: return true;
    default: return false;
    }
}

/* a * b, saturating: shapes of zero size and huge dimensions must not overflow. */
static int64_t mul_sat(int64_t a, int64_t b) {
    if (a <= 0 || b <= 0) return 0;
    return a > INT64_MAX / b ? INT64_MAX : a * b;
}

static int64_t add_sat(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

static int64_t numel(const kiln__type *t) {
    int64_t n = 1;
    for (int32_t d = 0; d < t->shape.rank; d++)
        n = mul_sat(n, t->shape.dims[d]);
    return n;
}

static int64_t bytes(const kiln__type *t) {
    return mul_sat(numel(t), (int64_t)kiln_dtype_size(t->dtype));
}

void kiln__cost_add(kiln__cost *total, const kiln__cost *c) {
    total->flops = add_sat(total->flops, c->flops);
    total->transcendentals = add_sat(total->transcendentals, c->transcendentals);
    total->bytes_read = add_sat(total->bytes_read, c->bytes_read);
    total->bytes_written = add_sat(total->bytes_written, c->bytes_written);
}

void kiln__cost_add_times(kiln__cost *total, const kiln__cost *c, int64_t times) {
    kiln__cost scaled = {mul_sat(c->flops, times), mul_sat(c->transcendentals, times),
                         mul_sat(c->bytes_read, times), mul_sat(c->bytes_written, times)};
    kiln__cost_add(total, &scaled);
}

int64_t kiln__loop_trip_count(const kiln__attrs *attrs) {
    if (!attrs || !attrs->u.loop.known) return -1;
    if (attrs->u.loop.upper <= attrs->u.loop.lower) return 0;
    int64_t n;
    return __builtin_sub_overflow(attrs->u.loop.upper, attrs->u.loop.lower, &n) ? INT64_MAX : n;
}

/* The product of the sizes of `dims` of t (each checked against its rank). */
static int64_t dims_product(const kiln__type *t, const kiln_dims *dims) {
    int64_t n = 1;
    for (int32_t i = 0; i < dims->count; i++)
        if (dims->v[i] >= 0 && dims->v[i] < t->shape.rank) n = mul_sat(n, t->shape.dims[dims->v[i]]);
    return n;
}

static int64_t window_size(const kiln_window_params *w) {
    int64_t n = 1;
    for (int32_t i = 0; i < w->window_dimensions.count; i++)
        n = mul_sat(n, w->window_dimensions.v[i]);
    return n;
}

/* How many (output position, kernel tap) pairs of one spatial dimension of a convolution
 * read a real input element: not padding, not a hole of lhs dilation. XLA counts those
 * multiply-accumulates only, so a padded border costs less than the full window. Per
 * tap, the output positions whose input position lands in range form an interval; with
 * lhs dilation, those of them on a multiple of the dilation recur with a period. */
static int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

static int64_t valid_taps(int64_t in, int64_t window, int64_t out, int64_t stride, int64_t pad_lo,
                          int64_t lhs_dil, int64_t rhs_dil) {
    if (in <= 0 || window <= 0 || out <= 0 || stride <= 0 || lhs_dil <= 0 || rhs_dil <= 0)
        return 0;
    int64_t last = (in - 1) * lhs_dil; /* the dilated input spans positions 0..last */
    int64_t period = lhs_dil, g = stride, r = lhs_dil;
    while (r) { /* gcd */
        int64_t t = g % r;
        g = r;
        r = t;
    }
    period = lhs_dil / g;
    int64_t total = 0;
    for (int64_t k = 0; k < window; k++) {
        int64_t c = k * rhs_dil - pad_lo; /* input position = o * stride + c */
        int64_t lo = c >= 0 ? 0 : floor_div(-c + stride - 1, stride);
        int64_t hi = floor_div(last - c, stride);
        if (hi > out - 1) hi = out - 1;
        if (lo > hi) continue;
        if (lhs_dil == 1) {
            total = add_sat(total, hi - lo + 1);
            continue;
        }
        for (int64_t o = lo; o < lo + period && o <= hi; o++)
            if ((o * stride + c) % lhs_dil == 0) total = add_sat(total, (hi - o) / period + 1);
    }
    return total;
}

kiln__cost kiln__op_cost(kiln_op op, const kiln__attrs *attrs, int32_t n_operands,
                         int32_t n_results, kiln__cost_type_fn type, const void *holder) {
    kiln__cost c = {0};
    for (int32_t i = 0; i < n_operands; i++)
        c.bytes_read = add_sat(c.bytes_read, bytes(type(holder, i)));
    for (int32_t i = 0; i < n_results; i++)
        c.bytes_written = add_sat(c.bytes_written, bytes(type(holder, n_operands + i)));
    int64_t out = n_results > 0 ? numel(type(holder, n_operands)) : 0;
    switch (op) {
    case KILN_OP_DOT_GENERAL:
        /* Each result element accumulates over the contracting dimensions. */
        if (n_operands == 2 && attrs)
            c.flops = mul_sat(2, mul_sat(out, dims_product(type(holder, 0),
                                                           &attrs->u.dot.lhs_contracting_dims)));
        return c;
    case KILN_OP_CONVOLUTION: {
        /* Each result element accumulates over the kernel's input features (per group, as
         * the kernel holds them) and the taps of its window that read input, not padding. */
        if (n_operands != 2 || !attrs) return c;
        const kiln_conv_params *p = &attrs->u.conv;
        const kiln__type *x = type(holder, 0), *k = type(holder, 1), *y = type(holder, 2);
        int64_t per = 1;
        if (p->kernel_input_feature_dimension >= 0 &&
            p->kernel_input_feature_dimension < k->shape.rank)
            per = k->shape.dims[p->kernel_input_feature_dimension];
        int64_t positions = 1; /* output batch and feature positions */
        if (p->output_batch_dimension >= 0 && p->output_batch_dimension < y->shape.rank)
            positions = mul_sat(positions, y->shape.dims[p->output_batch_dimension]);
        if (p->output_feature_dimension >= 0 && p->output_feature_dimension < y->shape.rank)
            positions = mul_sat(positions, y->shape.dims[p->output_feature_dimension]);
        int32_t n = p->input_spatial_dimensions.count;
        if (p->kernel_spatial_dimensions.count != n || p->output_spatial_dimensions.count != n)
            return c;
        for (int32_t d = 0; d < n; d++) {
            int64_t xd = p->input_spatial_dimensions.v[d], kd = p->kernel_spatial_dimensions.v[d],
                    yd = p->output_spatial_dimensions.v[d];
            if (xd < 0 || xd >= x->shape.rank || kd < 0 || kd >= k->shape.rank || yd < 0 ||
                yd >= y->shape.rank)
                return c;
            int64_t stride = d < p->window_strides.count ? p->window_strides.v[d] : 1;
            int64_t pad_lo = d < p->padding_low.count ? p->padding_low.v[d] : 0;
            int64_t ld = d < p->lhs_dilation.count ? p->lhs_dilation.v[d] : 1;
            int64_t rd = d < p->rhs_dilation.count ? p->rhs_dilation.v[d] : 1;
            positions = mul_sat(positions, valid_taps(x->shape.dims[xd], k->shape.dims[kd],
                                                      y->shape.dims[yd], stride, pad_lo, ld, rd));
        }
        c.flops = mul_sat(2, mul_sat(positions, per));
        return c;
    }
    case KILN_OP_REDUCE:
        /* One combine per input element and input. */
        for (int32_t i = 0; i < n_operands / 2; i++)
            c.flops = add_sat(c.flops, numel(type(holder, i)));
        return c;
    case KILN_OP_REDUCE_WINDOW:
        if (attrs)
            c.flops = mul_sat(mul_sat(out, window_size(&attrs->u.window)), n_results);
        return c;
    case KILN_OP_SELECT_AND_SCATTER:
        /* A selection over each window of the operand, then a scatter of each source. */
        if (attrs && n_operands >= 2)
            c.flops = add_sat(mul_sat(numel(type(holder, 1)), window_size(&attrs->u.window)),
                              numel(type(holder, 1)));
        return c;
    case KILN_OP_SCATTER:
        /* One update combine per update element. */
        if (n_operands >= 3) c.flops = numel(type(holder, n_operands - 1));
        return c;
    case KILN_OP_SORT: {
        /* Comparisons of a comparison sort: n log2 n per sorted row. */
        if (n_operands < 1) return c;
        const kiln__type *t = type(holder, 0);
        int64_t n = numel(t), row = 1;
        if (attrs && attrs->u.sort.dimension >= 0 && attrs->u.sort.dimension < t->shape.rank)
            row = t->shape.dims[attrs->u.sort.dimension];
        int64_t lg = 0;
        while (lg < 63 && ((int64_t)1 << lg) < row)
            lg++;
        c.flops = mul_sat(n, lg);
        return c;
    }
    default: break;
    }
    if (kiln__op_has(op, KILN_OPF_ELEMENTWISE)) {
        if (kiln__op_transcendental(op))
            c.transcendentals = out;
        else if (op != KILN_OP_CONVERT && op != KILN_OP_SELECT)
            c.flops = out;
    }
    return c;
}
