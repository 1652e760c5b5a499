/* SPDX-License-Identifier: Apache-2.0 */
/* Inference for the reductions: reduce, reduce_window, select_and_scatter (the spec's
 * constraints C1..C16 of each). */
#include "ops/infer.h"

/* Checks that the operands are n inputs of one shape then n rank-0 init values of the
 * same dtypes (reduce C1-C3, reduce_window C1-C3), and that the op has its region. */
static kiln_status check_inputs_inits(kiln_ctx *cx, const kiln__attrs *attrs,
                                      const kiln__type *operands, int n_operands, int n_results) {
    if (n_operands < 2 || n_operands % 2 != 0)
        return kiln__infer_error(
            cx, attrs, "has %d operands; expected n >= 1 inputs then n init values", n_operands);
    const int n = n_operands / 2;
    if (n_results != n)
        return kiln__infer_error(cx, attrs, "has %d results for %d inputs; expected %d", n_results,
                                 n, n);
    char have[KILN__TYPE_TEXT], want[KILN__TYPE_TEXT];
    for (int i = 1; i < n; i++) {
        if (!kiln_shape_equal(&operands[i].shape, &operands[0].shape)) {
            kiln__type_text(&operands[i], have);
            kiln__type_text(&operands[0], want);
            return kiln__infer_error(cx, attrs,
                                     "input %d has type %s; expected the shape of input 1 (%s)",
                                     i + 1, have, want);
        }
    }
    for (int i = 0; i < n; i++) {
        const kiln__type *init = &operands[n + i];
        if (init->shape.rank != 0)
            return kiln__infer_error(cx, attrs,
                                     "init value %d has type %s; expected a rank-0 tensor", i + 1,
                                     kiln__type_text(init, have));
        if (init->dtype != operands[i].dtype)
            return kiln__infer_error(cx, attrs,
                                     "init value %d has dtype %s; expected %s, the dtype of "
                                     "input %d",
                                     i + 1, kiln_dtype_name(init->dtype),
                                     kiln_dtype_name(operands[i].dtype), i + 1);
    }
    return KILN_OK;
}

KILN__INFER(REDUCE) {
    kiln_status s = check_inputs_inits(cx, attrs, operands, n_operands, n_results);
    if (s != KILN_OK) return s;
    const kiln_shape *in = &operands[0].shape;
    const kiln_dims *dims = &attrs->u.reduce_dims;
    if ((s = kiln__check_dims(cx, attrs, "dimensions", dims, in->rank)) != KILN_OK) return s;
    if ((s = kiln__check_region(cx, attrs, 0, "region")) != KILN_OK) return s;
    bool reduced[KILN_MAX_RANK] = {false};
    for (int32_t i = 0; i < dims->count; i++)
        reduced[dims->v[i]] = true;
    kiln_shape shape = {.rank = 0};
    for (int32_t d = 0; d < in->rank; d++)
        if (!reduced[d]) shape.dims[shape.rank++] = in->dims[d];
    for (int i = 0; i < n_results; i++)
        results[i] = (kiln__type){.dtype = operands[i].dtype, .shape = shape};
    return KILN_OK;
}

/* Checks a window attribute's length (the rank) and, when min_value is 0 or 1, its
 * values' lower bound. */
static kiln_status check_window_list(kiln_ctx *cx, const kiln__attrs *attrs, const char *what,
                                     const kiln_dims *list, int32_t rank, int min_value) {
    if (list->count != rank)
        return kiln__infer_error(cx, attrs, "%s has %d entries; expected %d (the rank)", what,
                                 (int)list->count, (int)rank);
    if (min_value < 0) return KILN_OK;
    for (int32_t i = 0; i < rank; i++)
        if (list->v[i] < min_value)
            return kiln__infer_error(cx, attrs, "%s[%d] is %lld; expected at least %d", what,
                                     (int)i, (long long)list->v[i], min_value);
    return KILN_OK;
}

/* The spec's num_windows along one dimension (reduce_window C15), with overflow checks. */
static bool num_windows(int64_t size, int64_t window, int64_t stride, int64_t base_dilation,
                        int64_t window_dilation, int64_t low, int64_t high, int64_t *out) {
    int64_t dilated = 0, padded, dilated_window;
    if (size > 0) {
        if (__builtin_mul_overflow(size - 1, base_dilation, &dilated) ||
            __builtin_add_overflow(dilated, 1, &dilated))
            return false;
    }
    if (__builtin_add_overflow(dilated, low, &padded) ||
        __builtin_add_overflow(padded, high, &padded))
        return false;
    if (__builtin_mul_overflow(window - 1, window_dilation, &dilated_window) ||
        __builtin_add_overflow(dilated_window, 1, &dilated_window))
        return false;
    /* Kernels compute positions up to dilated + high, and low - dilated_window. */
    int64_t scratch;
    if (__builtin_add_overflow(dilated, high, &scratch) ||
        __builtin_sub_overflow(low, dilated_window, &scratch))
        return false;
    if (padded <= 0 || dilated_window > padded)
        *out = 0;
    else
        *out = (padded - dilated_window) / stride + 1;
    return true;
}

static kiln_status check_window(kiln_ctx *cx, const kiln__attrs *attrs, int32_t rank,
                                kiln_shape *windows_shape, const kiln_shape *in) {
    const kiln_window_params *w = &attrs->u.window;
    kiln_status s;
    if ((s = check_window_list(cx, attrs, "window_dimensions", &w->window_dimensions, rank, 1)) ||
        (s = check_window_list(cx, attrs, "window_strides", &w->window_strides, rank, 1)) ||
        (s = check_window_list(cx, attrs, "base_dilations", &w->base_dilations, rank, 1)) ||
        (s = check_window_list(cx, attrs, "window_dilations", &w->window_dilations, rank, 1)) ||
        (s = check_window_list(cx, attrs, "padding_low", &w->padding_low, rank, -1)) ||
        (s = check_window_list(cx, attrs, "padding_high", &w->padding_high, rank, -1)))
        return s;
    windows_shape->rank = rank;
    for (int32_t d = 0; d < rank; d++) {
        if (!num_windows(in->dims[d], w->window_dimensions.v[d], w->window_strides.v[d],
                         w->base_dilations.v[d], w->window_dilations.v[d], w->padding_low.v[d],
                         w->padding_high.v[d], &windows_shape->dims[d]))
            return kiln__infer_error(
                cx, attrs,
                "the window of dimension %d overflows 64-bit sizes (size "
                "%lld, window %lld, dilations %lld and %lld, padding %lld "
                "and %lld)",
                (int)d, (long long)in->dims[d], (long long)w->window_dimensions.v[d],
                (long long)w->base_dilations.v[d], (long long)w->window_dilations.v[d],
                (long long)w->padding_low.v[d], (long long)w->padding_high.v[d]);
    }
    return KILN_OK;
}

KILN__INFER(REDUCE_WINDOW) {
    kiln_status s = check_inputs_inits(cx, attrs, operands, n_operands, n_results);
    if (s != KILN_OK) return s;
    kiln_shape shape;
    if ((s = check_window(cx, attrs, operands[0].shape.rank, &shape, &operands[0].shape))) return s;
    if ((s = kiln__check_region(cx, attrs, 0, "region")) != KILN_OK) return s;
    for (int i = 0; i < n_results; i++)
        results[i] = (kiln__type){.dtype = operands[i].dtype, .shape = shape};
    return KILN_OK;
}

KILN__INFER(SELECT_AND_SCATTER) {
    (void)n_operands, (void)n_results;
    const kiln__type *operand = &operands[0], *source = &operands[1], *init = &operands[2];
    char have[KILN__TYPE_TEXT], want[KILN__SHAPE_TEXT];
    if (source->dtype != operand->dtype)
        return kiln__infer_error(cx, attrs, "source has dtype %s; expected %s, the operand's",
                                 kiln_dtype_name(source->dtype), kiln_dtype_name(operand->dtype));
    if (init->shape.rank != 0)
        return kiln__infer_error(cx, attrs, "init value has type %s; expected a rank-0 tensor",
                                 kiln__type_text(init, have));
    if (init->dtype != operand->dtype)
        return kiln__infer_error(cx, attrs, "init value has dtype %s; expected %s, the operand's",
                                 kiln_dtype_name(init->dtype), kiln_dtype_name(operand->dtype));
    const int32_t rank = operand->shape.rank;
    const kiln_window_params *w = &attrs->u.window;
    kiln_shape shape;
    kiln_status s = check_window(cx, attrs, rank, &shape, &operand->shape);
    if (s != KILN_OK) return s;
    for (int32_t d = 0; d < rank; d++) {
        if (w->base_dilations.v[d] != 1)
            return kiln__infer_error(cx, attrs,
                                     "base_dilations[%d] is %lld; select_and_scatter takes no "
                                     "dilations",
                                     (int)d, (long long)w->base_dilations.v[d]);
        if (w->window_dilations.v[d] != 1)
            return kiln__infer_error(cx, attrs,
                                     "window_dilations[%d] is %lld; select_and_scatter takes no "
                                     "dilations",
                                     (int)d, (long long)w->window_dilations.v[d]);
    }
    if (!kiln_shape_equal(&source->shape, &shape))
        return kiln__infer_error(cx, attrs,
                                 "source has type %s; expected shape %s, the number of windows",
                                 kiln__type_text(source, have), kiln__shape_text(&shape, want));
    if ((s = kiln__check_region(cx, attrs, 0, "select region")) != KILN_OK ||
        (s = kiln__check_region(cx, attrs, 1, "scatter region")) != KILN_OK)
        return s;
    results[0] = *operand;
    return KILN_OK;
}
