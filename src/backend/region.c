/* SPDX-License-Identifier: Apache-2.0 */
#include "backend/region.h"

#include "base/ctx_internal.h"

const kiln__region_tag kiln__region_tags[KILN_REGION_KIND_COUNT] = {
    {KILN_REGION_CUSTOM},  {KILN_REGION_ADD},           {KILN_REGION_MULTIPLY},
    {KILN_REGION_MAXIMUM}, {KILN_REGION_MINIMUM},       {KILN_REGION_AND},
    {KILN_REGION_OR},      {KILN_REGION_REPLACE},       {KILN_REGION_LESS},
    {KILN_REGION_GREATER}, {KILN_REGION_GREATER_EQUAL}, {KILN_REGION_LESS_EQUAL},
};

const int kiln__argmax_tag = 1;
const int kiln__argmin_tag = 2;

kiln__region_kind kiln__region_kind_of(const kiln_region *region) {
    if (!region) return KILN_REGION_CUSTOM;
    const kiln__region_tag *tag = region->user;
    if (tag >= &kiln__region_tags[0] && tag < &kiln__region_tags[KILN_REGION_KIND_COUNT])
        return tag->kind;
    return KILN_REGION_CUSTOM;
}

kiln_status kiln__region_call(kiln_ctx *cx, const kiln_region *region, const char *what,
                              kiln_tensor *const *args, int n_args, kiln_tensor **results,
                              int n_results) {
    (void)n_args;
    for (int i = 0; i < n_results; i++)
        results[i] = NULL;
    if (!region || !region->fn)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s has no function", what);
    kiln_status s = kiln_scope_begin(cx);
    if (s != KILN_OK) return s;
    s = region->fn(cx, args, results, region->user);
    if (s == KILN_OK) {
        for (int i = 0; i < n_results; i++) {
            if (!results[i]) {
                s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                       "%s returned no tensor for result %d", what, i + 1);
                break;
            }
        }
    } else if (kiln_ctx_status(cx) == KILN_OK) {
        kiln_ctx_set_error(cx, s, "%s failed with %s", what, kiln_status_name(s));
    }
    if (s == KILN_OK)
        for (int i = 0; i < n_results; i++)
            kiln_tensor_retain(results[i]);
    else
        for (int i = 0; i < n_results; i++)
            results[i] = NULL;
    kiln_scope_end(cx);
    return s;
}
