/* SPDX-License-Identifier: Apache-2.0 */
/* The builtin regions: real callbacks (so they also work wherever a region is simply
 * called), tagged so that evaluators can take a fast path instead. */
#include "backend/region.h"
#include "kiln/ops.h"

static kiln_tensor *compare(kiln_ctx *cx, kiln_tensor *const *a, kiln_compare_direction d) {
    return kiln_compare(cx, a[0], a[1], d, KILN_CMP_DEFAULT);
}

/* The callback of every builtin: the op its tag names, on the two arguments. */
static kiln_status builtin(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    r[0] = NULL;
    switch (((const kiln__region_tag *)u)->kind) {
    case KILN_REGION_ADD: r[0] = kiln_add(cx, a[0], a[1]); break;
    case KILN_REGION_MULTIPLY: r[0] = kiln_multiply(cx, a[0], a[1]); break;
    case KILN_REGION_MAXIMUM: r[0] = kiln_maximum(cx, a[0], a[1]); break;
    case KILN_REGION_MINIMUM: r[0] = kiln_minimum(cx, a[0], a[1]); break;
    case KILN_REGION_AND: r[0] = kiln_and(cx, a[0], a[1]); break;
    case KILN_REGION_OR: r[0] = kiln_or(cx, a[0], a[1]); break;
    case KILN_REGION_REPLACE: r[0] = a[1]; return KILN_OK;
    case KILN_REGION_LESS: r[0] = compare(cx, a, KILN_CMP_LT); break;
    case KILN_REGION_GREATER: r[0] = compare(cx, a, KILN_CMP_GT); break;
    case KILN_REGION_GREATER_EQUAL: r[0] = compare(cx, a, KILN_CMP_GE); break;
    case KILN_REGION_LESS_EQUAL: r[0] = compare(cx, a, KILN_CMP_LE); break;
    case KILN_REGION_CUSTOM:
    case KILN_REGION_KIND_COUNT: break; /* not builtins */
    }
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}

#define TAG(kind) ((void *)&kiln__region_tags[kind])

#define BUILTIN(name, kind)                                     \
    const kiln_region *kiln_region_##name(void) {               \
        static const kiln_region region = {builtin, TAG(kind)}; \
        return &region;                                         \
    }

BUILTIN(add, KILN_REGION_ADD)
BUILTIN(multiply, KILN_REGION_MULTIPLY)
BUILTIN(maximum, KILN_REGION_MAXIMUM)
BUILTIN(minimum, KILN_REGION_MINIMUM)
BUILTIN(and, KILN_REGION_AND)
BUILTIN(or, KILN_REGION_OR)
BUILTIN(replace, KILN_REGION_REPLACE)
BUILTIN(less, KILN_REGION_LESS)
BUILTIN(greater, KILN_REGION_GREATER)
BUILTIN(greater_equal, KILN_REGION_GREATER_EQUAL)
BUILTIN(less_equal, KILN_REGION_LESS_EQUAL)

kiln_tensor *kiln_scalar_like(kiln_ctx *cx, kiln_tensor *x, double value) {
    if (!cx) return NULL;
    if (!x) {
        if (kiln_ctx_status(cx) == KILN_OK)
            kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "kiln_scalar_like: x is NULL");
        return NULL;
    }
    return kiln_scalar(cx, value, kiln_tensor_dtype(x));
}
