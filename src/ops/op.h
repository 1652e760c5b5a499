/* SPDX-License-Identifier: Apache-2.0 */
/* The op enum and its static facts, expanded from ops.def. */
#ifndef KILN_OPS_OP_H
#define KILN_OPS_OP_H

#include <stdbool.h>

enum {
    KILN_OPF_ELEMENTWISE = 1u << 0,
    KILN_OPF_REDUCTION = 1u << 1,
    KILN_OPF_MOVEMENT = 1u << 2,
    KILN_OPF_LIBRARY = 1u << 3,
    KILN_OPF_CONTROL = 1u << 4,
    KILN_OPF_REGIONS = 1u << 5,
    KILN_OPF_DIFFERENTIABLE = 1u << 6,
    KILN_OPF_COLLECTIVE = 1u << 7,
};

typedef enum kiln_op {
#define KILN_OP(name, text, nin, nout, flags) KILN_OP_##name,
#include "ops/ops.def"
#undef KILN_OP
    KILN_OP_COUNT
} kiln_op;

typedef struct kiln__op_info {
    const char *name; /* StableHLO name, without "stablehlo." */
    int n_operands;   /* -1: variable */
    int n_results;    /* -1: variable */
    unsigned flags;
} kiln__op_info;

/* Facts about an op; NULL for a value outside the enum. */
const kiln__op_info *kiln__op_get_info(kiln_op op);

/* The op with StableHLO name `name` (without the "stablehlo." prefix), or KILN_OP_COUNT.
 * Ops of other dialects (a name with a dot: "interpreter.run_parallel") are not found. */
kiln_op kiln__op_from_name(const char *name, unsigned long length);

static inline bool kiln__op_has(kiln_op op, unsigned flag) {
    const kiln__op_info *info = kiln__op_get_info(op);
    return info && (info->flags & flag);
}

#endif
