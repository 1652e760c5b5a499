/* SPDX-License-Identifier: Apache-2.0 */
/* The registry of custom-call functions (kiln/custom_call.h) as backends use it: finding a
 * target's function, and calling it on an op's buffers. */
#ifndef KILN_BACKEND_CUSTOM_CALLS_H
#define KILN_BACKEND_CUSTOM_CALLS_H

#include "kiln/custom_call.h"
#include "ops/attrs.h"

/* What kiln_custom_call_frame.site points at: the op's attributes (its record, ops/custom_call.h). */
struct kiln__custom_call_site {
    const kiln__attrs *attrs;
};

/* The function registered under target, and its user pointer; false when there is none. */
bool kiln__custom_call_find(const char *target, kiln_custom_call_fn *fn, void **user);

/* Calls the function registered for the custom_call whose attributes are `attrs` on the
 * buffers: UNIMPLEMENTED naming the target when none is registered; the function's own
 * status otherwise, its message prefixed with the target. */
kiln_status kiln__custom_call_run(kiln_ctx *cx, const kiln__attrs *attrs,
                                  const kiln_custom_call_buffer *operands, int32_t n_operands,
                                  const kiln_custom_call_buffer *results, int32_t n_results);

#endif
