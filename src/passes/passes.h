/* Module-to-module rewrites (DESIGN.md section 2): a small pass manager and the passes.
 * Every pass rewrites a module in place, keeps SSA and the `uses` counters right, never
 * allocates (so it cannot fail), and returns how many changes it made. */
#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include <stdint.h>

#include "ir/ir.h"

/* A pass: returns the number of changes it made to m (0: nothing to do). */
typedef int32_t (*kiln__pass_fn)(kiln_module *m);

typedef struct kiln__pass {
    const char *name;
    kiln__pass_fn run;
} kiln__pass;

/* Runs the passes in order, again and again, until a round changes nothing or
 * `max_rounds` rounds have run. Returns the total number of changes. */
int32_t kiln__passes_run(kiln_module *m, const kiln__pass *passes, int32_t n_passes,
                         int32_t max_rounds);

/* canonicalize, cse, dce (bounded). Returns the total number of changes. */
int32_t kiln__passes_simplify(kiln_module *m);

/* Algebraic identities (see README.md); constant folding is kiln_compile's. */
int32_t kiln__pass_canonicalize(kiln_module *m);
/* Common-subexpression elimination within each block. */
int32_t kiln__pass_cse(kiln_module *m);
/* kiln__module_dce as a pass. */
int32_t kiln__pass_dce(kiln_module *m);

/* Makes every use of `from` (an op result or argument defined in `b`) after `after` (NULL:
 * from the block's start) use `to` instead: operands of the later ops of b and of their
 * regions, and b's results. Keeps the uses counters right. Returns the uses replaced. */
int32_t kiln__replace_uses(kiln__block *b, const kiln__ir_op *after, kiln__value *from,
                           kiln__value *to);

#endif
