/* SPDX-License-Identifier: Apache-2.0 */
/* Builders for the elementwise ops: numpy broadcasting of the operands (through
 * broadcast_in_dim, so the recorded ops stay pure StableHLO), then the op. */
#include <stdio.h>

#include "base/ctx_internal.h"
#include "core/tensor_internal.h"
#include "frontend/op_run.h"
#include "frontend/trace.h"

/* kiln__broadcast_operands for operands numbered from `first` in messages. */
static kiln_status broadcast_from(kiln_ctx *cx, const char *fn, kiln_tensor **operands, int n,
                                  int first) {
    for (int i = 0; i < n; i++) {
        if (!operands[i]) {
            char what[32];
            snprintf(what, sizeof what, "operand %d", i + first);
            return kiln__null_argument(cx, fn, what);
        }
        if (kiln__tensor_dead(operands[i])) {
            char what[96];
            snprintf(what, sizeof what, "%s: operand %d", fn, i + first);
            return kiln__dead_error(cx, what, operands[i]);
        }
    }
    kiln_shape target = {.rank = 0};
    for (int i = 0; i < n; i++) {
        const kiln_shape *s = kiln_tensor_shape(operands[i]);
        if (s->rank > target.rank) {
            /* Shift the dimensions seen so far to the right. */
            int32_t shift = s->rank - target.rank;
            for (int32_t d = target.rank - 1; d >= 0; d--)
                target.dims[d + shift] = target.dims[d];
            for (int32_t d = 0; d < shift; d++)
                target.dims[d] = 1;
            target.rank = s->rank;
        }
        for (int32_t d = 0; d < s->rank; d++) {
            int64_t *t = &target.dims[target.rank - s->rank + d];
            int64_t v = s->dims[d];
            if (*t == v || v == 1) continue;
            if (*t == 1) {
                *t = v;
                continue;
            }
            char have[KILN__SHAPE_TEXT], want[KILN__SHAPE_TEXT];
            kiln_shape expected = target;
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: operand %d has shape %s; expected %s or a shape that "
                                      "broadcasts with it",
                                      fn, i + first, kiln__shape_text(s, have),
                                      kiln__shape_text(&expected, want));
        }
    }
    /* While tracing, a concrete operand broadcast against a traced one is captured as a
     * constant first, so the trace records a small constant and a broadcast_in_dim rather
     * than folding a full-size constant. */
    bool any_traced = false;
    for (int i = 0; i < n; i++)
        any_traced |= kiln_tensor_is_traced(operands[i]);
    for (int i = 0; i < n; i++) {
        const kiln_shape *s = kiln_tensor_shape(operands[i]);
        if (kiln_shape_equal(s, &target)) continue;
        if (any_traced && !kiln_tensor_is_traced(operands[i]) && kiln__tracing(cx)) {
            kiln_tensor *c = kiln__trace_capture(cx, fn, operands[i]);
            if (!c) return kiln_ctx_status(cx);
            operands[i] = c;
        }
        kiln__attrs a = {.fn = fn};
        a.u.broadcast.shape = target;
        a.u.broadcast.dims.count = s->rank;
        for (int32_t d = 0; d < s->rank; d++)
            a.u.broadcast.dims.v[d] = target.rank - s->rank + d;
        kiln_tensor *b = kiln__op_run1(cx, KILN_OP_BROADCAST_IN_DIM, &a, &operands[i], 1);
        if (!b) return kiln_ctx_status(cx) != KILN_OK ? kiln_ctx_status(cx) : KILN_INTERNAL;
        operands[i] = b;
    }
    return KILN_OK;
}

kiln_status kiln__broadcast_operands(kiln_ctx *cx, const char *fn, kiln_tensor **operands, int n) {
    return broadcast_from(cx, fn, operands, n, 1);
}

/* Runs the op on `operands`: the tensors the user gave (`given`), some replaced by the
 * broadcasts made of them here. Eagerly, the result may be written over one of the
 * operands that nothing else needs: a broadcast made here, or a tensor the user gave up
 * with kiln_move. Afterwards the broadcasts are dropped at once, and so are the moved
 * tensors (each once), unless the op failed: then the user's tensors stay as they were. */
static kiln_tensor *run_elementwise(kiln_ctx *cx, kiln_op op, kiln__attrs *a,
                                    kiln_tensor *const *operands, kiln_tensor *const *given,
                                    int n) {
    if (!cx) return NULL;
    kiln_tensor *reuse = NULL;
    bool any = false;
    for (int i = 0; i < n; i++) {
        bool made_here = operands[i] != given[i], moved = given[i] && given[i]->moved;
        any |= made_here || moved;
        if (!reuse && (made_here || moved) && kiln__tensor_exclusive(operands[i]))
            reuse = operands[i];
    }
    if (!any || kiln__tracing(cx)) return kiln__op_run1(cx, op, a, operands, n);
    kiln_tensor *r = kiln__op_run1_over(cx, op, a, operands, n, reuse);
    for (int i = 0; i < n; i++) {
        if (operands[i] != given[i]) kiln__tensor_discard(operands[i]);
        bool first = true;
        for (int j = 0; j < i; j++)
            first &= given[j] != given[i];
        if (!first || !given[i] || !given[i]->moved) continue;
        given[i]->moved = false;
        if (r) kiln_tensor_release(given[i]);
    }
    return r;
}

/* A builder that fails before its op runs leaves the moved tensors as they were, unmarked. */
static kiln_tensor *unmove(kiln_tensor *const *given, int n) {
    for (int i = 0; i < n; i++)
        if (given[i]) given[i]->moved = false;
    return NULL;
}

static kiln_tensor *unary(kiln_ctx *cx, kiln_op op, const char *fn, kiln_tensor *x) {
    kiln__attrs a = {.fn = fn};
    return run_elementwise(cx, op, &a, &x, &x, 1);
}

static kiln_tensor *binary(kiln_ctx *cx, kiln_op op, kiln__attrs *a, kiln_tensor *x,
                           kiln_tensor *y) {
    if (!cx) return NULL;
    kiln_tensor *given[2] = {x, y}, *operands[2] = {x, y};
    if (kiln__broadcast_operands(cx, a->fn, operands, 2) != KILN_OK) return unmove(given, 2);
    return run_elementwise(cx, op, a, operands, given, 2);
}

#define UNARY(name, OP)                                      \
    kiln_tensor *kiln_##name(kiln_ctx *cx, kiln_tensor *x) { \
        return unary(cx, KILN_OP_##OP, "kiln_" #name, x);    \
    }
#define BINARY(name, OP)                                                     \
    kiln_tensor *kiln_##name(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b) { \
        kiln__attrs attrs = {.fn = "kiln_" #name};                           \
        return binary(cx, KILN_OP_##OP, &attrs, a, b);                       \
    }

UNARY(real, REAL)
UNARY(imag, IMAG)
BINARY(complex, COMPLEX)
UNARY(abs, ABS)
UNARY(negate, NEGATE)
UNARY(sign, SIGN)
UNARY(not, NOT)
UNARY(floor, FLOOR)
UNARY(ceil, CEIL)
UNARY(round_nearest_afz, ROUND_NEAREST_AFZ)
UNARY(round_nearest_even, ROUND_NEAREST_EVEN)
UNARY(sqrt, SQRT)
UNARY(rsqrt, RSQRT)
UNARY(cbrt, CBRT)
UNARY(exponential, EXPONENTIAL)
UNARY(exponential_minus_one, EXPONENTIAL_MINUS_ONE)
UNARY(log, LOG)
UNARY(log_plus_one, LOG_PLUS_ONE)
UNARY(logistic, LOGISTIC)
UNARY(sine, SINE)
UNARY(cosine, COSINE)
UNARY(tan, TAN)
UNARY(tanh, TANH)
UNARY(is_finite, IS_FINITE)
UNARY(popcnt, POPCNT)
UNARY(count_leading_zeros, COUNT_LEADING_ZEROS)

BINARY(add, ADD)
BINARY(subtract, SUBTRACT)
BINARY(multiply, MULTIPLY)
BINARY(divide, DIVIDE)
BINARY(remainder, REMAINDER)
BINARY(power, POWER)
BINARY(maximum, MAXIMUM)
BINARY(minimum, MINIMUM)
BINARY(atan2, ATAN2)
BINARY(and, AND)
BINARY(or, OR)
BINARY(xor, XOR)
BINARY(shift_left, SHIFT_LEFT)
BINARY(shift_right_arithmetic, SHIFT_RIGHT_ARITHMETIC)
BINARY(shift_right_logical, SHIFT_RIGHT_LOGICAL)

kiln_tensor *kiln_compare(kiln_ctx *cx, kiln_tensor *a, kiln_tensor *b,
                          kiln_compare_direction direction, kiln_compare_type type) {
    kiln__attrs attrs = {.fn = "kiln_compare"};
    attrs.u.compare.direction = direction;
    /* DEFAULT is resolved here from the dtype, so recorded ops always name their type;
     * kiln__infer_COMPARE checks that an explicit type suits the dtype. */
    if (type == KILN_CMP_DEFAULT && a) type = kiln__compare_type_of(kiln_tensor_dtype(a));
    attrs.u.compare.type = type;
    return binary(cx, KILN_OP_COMPARE, &attrs, a, b);
}

kiln_tensor *kiln_select(kiln_ctx *cx, kiln_tensor *pred, kiln_tensor *on_true,
                         kiln_tensor *on_false) {
    static const char fn[] = "kiln_select";
    if (!cx) return NULL;
    kiln_tensor *given[3] = {pred, on_true, on_false}, *operands[3] = {pred, on_true, on_false};
    /* All three broadcast together (numpy's where), except a rank-0 pred, which the op
     * takes as it is and which selects a whole operand. */
    bool scalar_pred = pred && kiln_tensor_rank(pred) == 0;
    kiln_status s = scalar_pred ? broadcast_from(cx, fn, operands + 1, 2, 2)
                                : broadcast_from(cx, fn, operands, 3, 1);
    if (s != KILN_OK) return unmove(given, 3);
    kiln__attrs attrs = {.fn = fn};
    return run_elementwise(cx, KILN_OP_SELECT, &attrs, operands, given, 3);
}

kiln_tensor *kiln_clamp(kiln_ctx *cx, kiln_tensor *lo, kiln_tensor *x, kiln_tensor *hi) {
    kiln__attrs attrs = {.fn = "kiln_clamp"};
    kiln_tensor *operands[3] = {lo, x, hi};
    return run_elementwise(cx, KILN_OP_CLAMP, &attrs, operands, operands, 3);
}

kiln_tensor *kiln_convert(kiln_ctx *cx, kiln_tensor *x, kiln_dtype dtype) {
    kiln__attrs attrs = {.fn = "kiln_convert"};
    attrs.u.convert_to = dtype;
    return run_elementwise(cx, KILN_OP_CONVERT, &attrs, &x, &x, 1);
}

kiln_tensor *kiln_bitcast_convert(kiln_ctx *cx, kiln_tensor *x, kiln_dtype dtype) {
    kiln__attrs attrs = {.fn = "kiln_bitcast_convert"};
    attrs.u.convert_to = dtype;
    return run_elementwise(cx, KILN_OP_BITCAST_CONVERT, &attrs, &x, &x, 1);
}

kiln_tensor *kiln_reduce_precision(kiln_ctx *cx, kiln_tensor *x, int exponent_bits,
                                   int mantissa_bits) {
    kiln__attrs attrs = {.fn = "kiln_reduce_precision"};
    attrs.u.precision.exponent_bits = exponent_bits;
    attrs.u.precision.mantissa_bits = mantissa_bits;
    return run_elementwise(cx, KILN_OP_REDUCE_PRECISION, &attrs, &x, &x, 1);
}

kiln_tensor *kiln_map(kiln_ctx *cx, const kiln_region *computation, kiln_tensor *const *inputs,
                      int32_t n_inputs, kiln_dtype result_dtype) {
    static const char fn[] = "kiln_map";
    if (!cx) return NULL;
    if (!computation) return kiln__null_argument_ptr(cx, fn, "computation");
    if (!inputs) return kiln__null_argument_ptr(cx, fn, "inputs");
    if (n_inputs < 1 || n_inputs > 1024) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: n_inputs is %d; expected 1 to 1024",
                           fn, (int)n_inputs);
        return NULL;
    }
    for (int32_t i = 0; i < n_inputs; i++)
        if (!inputs[i]) {
            kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: inputs[%d] is NULL", fn, (int)i);
            return NULL;
        }
    kiln__attrs a = {.fn = fn, .n_regions = 1, .result_dtype = result_dtype};
    a.region[0] = computation;
    a.u.map_dims.count = kiln_tensor_rank(inputs[0]);
    for (int32_t d = 0; d < a.u.map_dims.count; d++)
        a.u.map_dims.v[d] = d;
    return kiln__op_run1(cx, KILN_OP_MAP, &a, inputs, n_inputs);
}
