/* SPDX-License-Identifier: Apache-2.0 */
#include "ops/op.h"

#include <string.h>

#define ELEMENTWISE KILN_OPF_ELEMENTWISE
#define REDUCTION KILN_OPF_REDUCTION
#define MOVEMENT KILN_OPF_MOVEMENT
#define LIBRARY KILN_OPF_LIBRARY
#define CONTROL KILN_OPF_CONTROL
#define REGIONS KILN_OPF_REGIONS
#define DIFFERENTIABLE KILN_OPF_DIFFERENTIABLE
#define COLLECTIVE KILN_OPF_COLLECTIVE

static const kiln__op_info infos[] = {
#define KILN_OP(name, text, nin, nout, flags) {text, nin, nout, flags},
#include "ops/ops.def"
#undef KILN_OP
};
_Static_assert(sizeof infos / sizeof infos[0] == KILN_OP_COUNT, "one info row per op");

const kiln__op_info *kiln__op_get_info(kiln_op op) {
    if ((int)op < 0 || op >= KILN_OP_COUNT) return NULL;
    return &infos[op];
}

kiln_op kiln__op_from_name(const char *name, unsigned long length) {
    for (int i = 0; i < KILN_OP_COUNT; i++)
        if (!strchr(infos[i].name, '.') && strlen(infos[i].name) == length &&
            memcmp(infos[i].name, name, length) == 0)
            return (kiln_op)i;
    return KILN_OP_COUNT;
}
