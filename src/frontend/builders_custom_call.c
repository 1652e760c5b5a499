/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_custom_call (kiln/custom_call.h): a call of a registered C function from C, run now
 * or recorded in a trace, its attributes held in a custom_call record (ops/custom_call.h). */
#include <string.h>

#include "base/alloc.h"
#include "core/tensor_internal.h"
#include "frontend/op_run.h"
#include "kiln/custom_call.h"
#include "ops/custom_call.h"

#define MAX_RESULTS 64

kiln_status kiln_custom_call(kiln_ctx *cx, const char *target, kiln_tensor *const *operands,
                             int32_t n_operands, const kiln_dtype *result_dtypes,
                             const kiln_shape *result_shapes, int32_t n_results,
                             const char *backend_config, bool has_side_effect,
                             kiln_tensor **results) {
    static const char fn[] = "kiln_custom_call";
    if (!target || !target[0])
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: target is %s", fn,
                                  target ? "empty" : "NULL");
    if (n_operands < 0 || (n_operands > 0 && !operands))
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: operands is NULL or "
                                  "n_operands (%d) negative",
                                  fn, (int)n_operands);
    if (n_results < 0 || n_results > MAX_RESULTS ||
        (n_results > 0 && (!result_dtypes || !result_shapes || !results)))
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: n_results is %d (0 to %d, with result_dtypes, "
                                  "result_shapes and results)",
                                  fn, (int)n_results, MAX_RESULTS);
    size_t config_len = backend_config ? strlen(backend_config) : 0;
    if (backend_config &&
        (config_len < 2 || backend_config[0] != '{' || backend_config[config_len - 1] != '}'))
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: backend_config is not an attribute dictionary {...}", fn);
    kiln__type types[MAX_RESULTS];
    for (int32_t i = 0; i < n_results; i++) {
        types[i] = (kiln__type){.dtype = result_dtypes[i], .shape = result_shapes[i]};
        size_t bytes;
        if (!kiln_dtype_is_valid(result_dtypes[i]) ||
            !kiln_shape_nbytes(&result_shapes[i], result_dtypes[i], &bytes))
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: result %d has an invalid dtype or shape", fn, (int)i);
    }
    kiln__cc_attr attrs[3];
    int32_t n_attrs = 0;
    attrs[n_attrs++] = (kiln__cc_attr){"api_version", "4 : i32", 11, 7, 0};
    if (has_side_effect) attrs[n_attrs++] = (kiln__cc_attr){"has_side_effect", "true", 15, 4, 0};
    char *normalized = NULL;
    if (backend_config) {
        normalized = kiln__calloc(cx, 3 * config_len + 1, 1, fn);
        if (!normalized) return kiln_ctx_status(cx);
        size_t len = kiln__custom_call_normalize(backend_config, config_len, normalized);
        attrs[n_attrs++] = (kiln__cc_attr){"mhlo.backend_config", normalized, 19, len, 0};
    }
    kiln_tensor *record =
        kiln__custom_call_record(cx, target, strlen(target), attrs, n_attrs, types, n_results);
    if (normalized) kiln__free(cx, normalized, 3 * config_len + 1);
    if (!record) return kiln_ctx_status(cx);
    kiln__attrs a = {.fn = fn, .n_results = n_results};
    a.u.constant = record;
    kiln_status s =
        kiln__op_run(cx, KILN_OP_CUSTOM_CALL, &a, operands, n_operands, results, n_results);
    kiln__tensor_discard(record); /* a trace keeps its own reference */
    return s;
}
