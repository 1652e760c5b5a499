/* SPDX-License-Identifier: Apache-2.0 */
/* Calling regions, and recognising the builtin ones. */
#ifndef KILN_BACKEND_REGION_H
#define KILN_BACKEND_REGION_H

#include "kiln/ops.h"

/* What a builtin region computes (kiln_region_add() and friends). */
typedef enum kiln__region_kind {
    KILN_REGION_CUSTOM = 0,
    KILN_REGION_ADD,
    KILN_REGION_MULTIPLY,
    KILN_REGION_MAXIMUM,
    KILN_REGION_MINIMUM,
    KILN_REGION_AND,
    KILN_REGION_OR,
    KILN_REGION_REPLACE,
    KILN_REGION_LESS,
    KILN_REGION_GREATER,
    KILN_REGION_GREATER_EQUAL,
    KILN_REGION_LESS_EQUAL,
    KILN_REGION_KIND_COUNT
} kiln__region_kind;

/* Builtin regions carry a pointer to their tag as `user`. */
typedef struct kiln__region_tag {
    kiln__region_kind kind;
} kiln__region_tag;
extern const kiln__region_tag kiln__region_tags[KILN_REGION_KIND_COUNT];

/* The `user` of the regions that kiln_argmax and kiln_argmin reduce with: a two-input
 * reduce of (values, i64 indices along the one reduced dimension) keeping the first
 * maximum (minimum); NaN counts as the extreme. A backend's reduce may recognise these tags
 * and run without calling back; the index operand is then the iota along the reduced
 * dimension (the builders make it so). */
extern const int kiln__argmax_tag;
extern const int kiln__argmin_tag;

/* The kind of a region: KILN_REGION_CUSTOM unless it is one of the builtins. */
kiln__region_kind kiln__region_kind_of(const kiln_region *region);

/* Calls a region: fn(args) in a scope of its own; on success results[0..n_results-1] are
 * new references owned by the caller (kiln_tensor_release each). A NULL result, or a
 * failing fn, is an error recorded in cx naming `what` (e.g. "kiln_reduce: region"). */
kiln_status kiln__region_call(kiln_ctx *cx, const kiln_region *region, const char *what,
                              kiln_tensor *const *args, int n_args, kiln_tensor **results,
                              int n_results);

#endif
