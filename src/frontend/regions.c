/* SPDX-License-Identifier: Apache-2.0 */
/* The builtin regions: real callbacks (so they also work wherever a region is simply
 * called), tagged so that evaluators can take a fast path instead. */
#include "backend/region.h"
#include "kiln/ops.h"

static kiln_status region_add(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, a[0], a[1]);
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}
static kiln_status region_multiply(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_multiply(cx, a[0], a[1]);
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}
static kiln_status region_maximum(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_maximum(cx, a[0], a[1]);
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}
static kiln_status region_minimum(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_minimum(cx, a[0], a[1]);
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}
static kiln_status region_and(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_and(cx, a[0], a[1]);
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}
static kiln_status region_or(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_or(cx, a[0], a[1]);
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}
static kiln_status region_replace(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)cx, (void)u;
    r[0] = a[1];
    return KILN_OK;
}
static kiln_status compare(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r,
                           kiln_compare_direction d) {
    r[0] = kiln_compare(cx, a[0], a[1], d, KILN_CMP_DEFAULT);
    return r[0] ? KILN_OK : kiln_ctx_status(cx);
}
static kiln_status region_less(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    return compare(cx, a, r, KILN_CMP_LT);
}
static kiln_status region_greater(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    return compare(cx, a, r, KILN_CMP_GT);
}
static kiln_status region_greater_equal(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r,
                                        void *u) {
    (void)u;
    return compare(cx, a, r, KILN_CMP_GE);
}
static kiln_status region_less_equal(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r,
                                     void *u) {
    (void)u;
    return compare(cx, a, r, KILN_CMP_LE);
}

#define TAG(kind) ((void *)&kiln__region_tags[kind])

#define BUILTIN(name, fn, kind)                            \
    const kiln_region *kiln_region_##name(void) {          \
        static const kiln_region region = {fn, TAG(kind)}; \
        return &region;                                    \
    }

BUILTIN(add, region_add, KILN_REGION_ADD)
BUILTIN(multiply, region_multiply, KILN_REGION_MULTIPLY)
BUILTIN(maximum, region_maximum, KILN_REGION_MAXIMUM)
BUILTIN(minimum, region_minimum, KILN_REGION_MINIMUM)
BUILTIN(and, region_and, KILN_REGION_AND)
BUILTIN(or, region_or, KILN_REGION_OR)
BUILTIN(replace, region_replace, KILN_REGION_REPLACE)
BUILTIN(less, region_less, KILN_REGION_LESS)
BUILTIN(greater, region_greater, KILN_REGION_GREATER)
BUILTIN(greater_equal, region_greater_equal, KILN_REGION_GREATER_EQUAL)
BUILTIN(less_equal, region_less_equal, KILN_REGION_LESS_EQUAL)

kiln_tensor *kiln_scalar_like(kiln_ctx *cx, kiln_tensor *x, double value) {
    if (!cx) return NULL;
    if (!x) {
        if (kiln_ctx_status(cx) == KILN_OK)
            kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "kiln_scalar_like: x is NULL");
        return NULL;
    }
    return kiln_scalar(cx, value, kiln_tensor_dtype(x));
}
