/* SPDX-License-Identifier: Apache-2.0 */
/* Every op in ops.def must have at least one hand-checked test case. Each family's test
 * file defines a table of the ops it covers; test_coverage.c fails for any op that no
 * table names. */
#ifndef KILN_TEST_OP_CASES_H
#define KILN_TEST_OP_CASES_H

#include "ops/op.h"

typedef struct kiln_op_coverage {
    kiln_op op;
    const char *test; /* the Criterion test ("suite/name") that checks it */
} kiln_op_coverage;

/* One table per family, terminated by {KILN_OP_COUNT, NULL}. */
extern const kiln_op_coverage kiln_cover_elementwise[];
extern const kiln_op_coverage kiln_cover_movement[];
extern const kiln_op_coverage kiln_cover_indexing[];
extern const kiln_op_coverage kiln_cover_reduce[];
extern const kiln_op_coverage kiln_cover_linalg[];
extern const kiln_op_coverage kiln_cover_control[];
extern const kiln_op_coverage kiln_cover_collective[];
extern const kiln_op_coverage kiln_cover_dynamic[];
extern const kiln_op_coverage kiln_cover_token[];
extern const kiln_op_coverage kiln_cover_tuple[];

#endif
