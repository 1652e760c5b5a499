/* SPDX-License-Identifier: Apache-2.0 */
#include "ops/widen.h"

#include "ops/op.h"

kiln_dtype kiln__widened(kiln_dtype dtype) {
    switch (dtype) {
    case KILN_I2:
    case KILN_I4: return KILN_I8;
    case KILN_U2:
    case KILN_U4: return KILN_U8;
    default: return kiln_dtype_is_narrow(dtype) ? KILN_F32 : dtype;
    }
}

/* The ops that compute values from their operands' values. */
static bool computes(kiln_op op) {
    switch (op) {
    case KILN_OP_SELECT:
    case KILN_OP_CONVERT:
    case KILN_OP_POPCNT:
    case KILN_OP_COUNT_LEADING_ZEROS:
    case KILN_OP_SHIFT_RIGHT_LOGICAL:
    case KILN_OP_SHIFT_RIGHT_ARITHMETIC: return false;
    case KILN_OP_DOT_GENERAL:
    case KILN_OP_CONVOLUTION:
    case KILN_OP_DYNAMIC_CONV:
    case KILN_OP_TRIANGULAR_SOLVE:
    case KILN_OP_CHOLESKY: return true;
    default: return kiln__op_has(op, KILN_OPF_ELEMENTWISE);
    }
}

bool kiln__op_widens(kiln_op op, const kiln__type *operands, int n_operands,
                     const kiln__type *results, int n_results) {
    if ((int)op < 0 || op >= KILN_OP_COUNT || !computes(op)) return false;
    for (int i = 0; i < n_operands; i++)
        if (kiln_dtype_is_narrow(operands[i].dtype)) return true;
    for (int i = 0; i < n_results; i++)
        if (kiln_dtype_is_narrow(results[i].dtype)) return true;
    return false;
}

void kiln__attrs_widen(kiln_op op, kiln__attrs *attrs) {
    if (op == KILN_OP_DOT_GENERAL || op == KILN_OP_CONVOLUTION || op == KILN_OP_DYNAMIC_CONV)
        attrs->result_dtype = kiln__widened(attrs->result_dtype);
}
