/* SPDX-License-Identifier: Apache-2.0 */
#include "ops/infer.h"

#include <stdarg.h>
#include <stdio.h>

static const kiln__infer_fn table[] = {
#define KILN_OP(name, text, nin, nout, flags) kiln__infer_##name,
#include "ops/ops.def"
#undef KILN_OP
};
_Static_assert(sizeof table / sizeof table[0] == KILN_OP_COUNT, "one inference per op");

/* Tokens go only where StableHLO takes them: after_all, and the ops that pass values on
 * whatever they are (calls, control flow, optimization_barrier, custom_call). */
static kiln_status check_tokens(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                                const kiln__type *operands, int n_operands) {
    switch (op) {
    case KILN_OP_AFTER_ALL:
    case KILN_OP_TUPLE:
    case KILN_OP_CALL:
    case KILN_OP_WHILE:
    case KILN_OP_OPTIMIZATION_BARRIER:
    case KILN_OP_CUSTOM_CALL: return KILN_OK;
    default: break;
    }
    for (int i = 0; i < n_operands; i++)
        if (kiln__is_token(&operands[i]))
            return kiln__infer_error(cx, attrs, "operand %d is a !stablehlo.token; stablehlo.%s "
                                                "takes tensors",
                                     i + 1, kiln__op_get_info(op)->name);
        else if (kiln__is_tuple(&operands[i]) && op != KILN_OP_GET_TUPLE_ELEMENT)
            return kiln__infer_error(cx, attrs, "operand %d is a tuple; stablehlo.%s takes "
                                                "tensors",
                                     i + 1, kiln__op_get_info(op)->name);
    return KILN_OK;
}

kiln_status kiln__infer(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                        const kiln__type *operands, int n_operands, kiln__type *results,
                        int n_results) {
    if ((int)op < 0 || op >= KILN_OP_COUNT)
        return kiln_ctx_set_error(cx, KILN_INTERNAL, "internal: op %d is not in the table",
                                  (int)op);
    /* The counts ops.def fixes are checked here once for all ops (-1 there: variable, left
     * to the op's function, but never negative). Too few result slots leaves nowhere to
     * write a result; too many asks for results the op does not give. */
    const kiln__op_info *info = kiln__op_get_info(op);
    if (info->n_operands >= 0 && n_operands != info->n_operands)
        return kiln__infer_error(cx, attrs, "got %d operands; expected %d", n_operands,
                                 info->n_operands);
    if (info->n_results >= 0 && n_results < info->n_results)
        return kiln__infer_error(cx, attrs, "got %d result slots; expected %d", n_results,
                                 info->n_results);
    if (info->n_results >= 0 && n_results > info->n_results)
        return kiln__infer_error(cx, attrs, "got %d results; expected %d", n_results,
                                 info->n_results);
    if (n_results < 0)
        return kiln__infer_error(cx, attrs, "n_results is %d; expected >= 0", n_results);
    kiln_status s = check_tokens(cx, op, attrs, operands, n_operands);
    if (s != KILN_OK) return s;
    /* Results are tensors unless the op's function says otherwise (most set the dtype and
     * shape alone). */
    for (int i = 0; i < n_results; i++)
        results[i].kind = KILN__KIND_TENSOR;
    s = table[op](cx, attrs, operands, n_operands, results, n_results);
    if (s != KILN_OK || kiln__op_has(op, KILN_OPF_CONTROL)) return s;
    /* Result shapes are made here (from operands and attributes: a broadcast's shape, a
     * pad's or a concatenation's sums), so here their size is checked once for all: every
     * later product of dimensions, stride or byte offset of a value then fits. (Control
     * ops' results are their regions' values, checked where those are made.) */
    for (int i = 0; i < n_results; i++) {
        size_t bytes;
        if (kiln_shape_nbytes(&results[i].shape, results[i].dtype, &bytes)) continue;
        char t[KILN__TYPE_TEXT];
        return kiln__infer_error(cx, attrs, "result %d of type %s is too large: its size overflows",
                                 i, kiln__type_text(&results[i], t));
    }
    return KILN_OK;
}

const char *kiln__shape_text(const kiln_shape *shape, char *buf) {
    kiln_shape_format(shape, buf, KILN__SHAPE_TEXT);
    return buf;
}

const char *kiln__type_text(const kiln__type *type, char *buf) {
    if (kiln__is_token(type)) {
        snprintf(buf, KILN__TYPE_TEXT, "!stablehlo.token");
        return buf;
    }
    if (kiln__is_tuple(type)) {
        snprintf(buf, KILN__TYPE_TEXT, "tuple of %d", type->tuple ? (int)type->tuple->n : 0);
        return buf;
    }
    char shape[KILN__SHAPE_TEXT];
    snprintf(buf, KILN__TYPE_TEXT, "%s%s", kiln_dtype_name(type->dtype),
             kiln__shape_text(&type->shape, shape));
    return buf;
}

kiln_status kiln__infer_error(kiln_ctx *cx, const kiln__attrs *attrs, const char *fmt, ...) {
    char message[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: %s",
                              attrs && attrs->fn ? attrs->fn : "kiln", message);
}

kiln_status kiln__check_result_slots(kiln_ctx *cx, const kiln__attrs *attrs, int n_results,
                                     int expected) {
    if (n_results != expected)
        return kiln_ctx_set_error(cx, KILN_INTERNAL,
                                  "%s: internal: %d result slots; the op has %d results",
                                  attrs && attrs->fn ? attrs->fn : "kiln", n_results, expected);
    return KILN_OK;
}

kiln_status kiln__check_region(kiln_ctx *cx, const kiln__attrs *attrs, int32_t i,
                               const char *what) {
    const kiln_region *r = kiln__attrs_region(attrs, i);
    if (!r) return kiln__infer_error(cx, attrs, "%s is NULL", what);
    if (!r->fn) return kiln__infer_error(cx, attrs, "%s has no function (fn is NULL)", what);
    return KILN_OK;
}

kiln_status kiln__check_dims(kiln_ctx *cx, const kiln__attrs *attrs, const char *what,
                             const kiln_dims *dims, int32_t rank) {
    if (dims->count < 0 || dims->count > KILN_MAX_RANK)
        return kiln__infer_error(cx, attrs, "%s has %d entries; expected at most %d", what,
                                 (int)dims->count, KILN_MAX_RANK);
    for (int32_t i = 0; i < dims->count; i++) {
        if (dims->v[i] < 0 || dims->v[i] >= rank)
            return kiln__infer_error(cx, attrs, "%s[%d] is %lld; expected 0 to %d", what, (int)i,
                                     (long long)dims->v[i], (int)rank - 1);
        for (int32_t j = 0; j < i; j++)
            if (dims->v[j] == dims->v[i])
                return kiln__infer_error(cx, attrs, "%s repeats dimension %lld", what,
                                         (long long)dims->v[i]);
    }
    return KILN_OK;
}
