/* SPDX-License-Identifier: Apache-2.0 */
#include "op_cases.h"
#include "test_util.h"

Test(coverage, every_op_in_the_table_has_a_test_case) {
    const kiln_op_coverage *tables[] = {
        kiln_cover_elementwise, kiln_cover_movement, kiln_cover_indexing,   kiln_cover_reduce,
        kiln_cover_linalg,      kiln_cover_control,  kiln_cover_collective, kiln_cover_dynamic,
        kiln_cover_token,       kiln_cover_tuple};
    bool covered[KILN_OP_COUNT] = {false};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (const kiln_op_coverage *c = tables[t]; c->op != KILN_OP_COUNT; c++)
            covered[c->op] = true;
    int missing = 0;
    for (int op = 0; op < KILN_OP_COUNT; op++) {
        if (!covered[op]) {
            cr_log_error("op '%s' has no test case", kiln__op_get_info((kiln_op)op)->name);
            missing++;
        }
    }
    cr_assert_eq(missing, 0, "%d ops of ops.def have no test case", missing);
}
