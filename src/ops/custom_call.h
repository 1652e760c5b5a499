/* SPDX-License-Identifier: Apache-2.0 */
/* stablehlo.custom_call's attributes: a call of a target kiln does not know (a library
 * routine of XLA's, a host callback, a layout pin), kept whole so that the program prints
 * and reads back unchanged. Its attributes are not a fixed set (backend_config alone is a
 * string or a dictionary of anything; the frontends add discardable ones such as
 * mhlo.frontend_attributes and mhlo.sharding), so they are kept as written, each value's
 * text normalized (comments dropped, whitespace as MLIR prints it), in a record: a u8
 * tensor that the op holds in attrs.u.constant and its module retains (so a clone into
 * another module keeps it, as a constant's value). The record also holds the results'
 * types: custom_call has no inference, its types are the text's, and kiln__infer gives them
 * back from here (so the verifier and the transforms see the same types).
 *
 * The known attributes are checked when the record is made (custom_call.c's table):
 * call_target_name a string, has_side_effect a boolean, api_version an integer 0-4,
 * backend_config a string or a dictionary, called_computations a list of symbols, the
 * layouts and output_operand_aliases lists. */
#ifndef KILN_OPS_CUSTOM_CALL_H
#define KILN_OPS_CUSTOM_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/tensor.h"
#include "ops/attrs.h"
#include "ops/infer.h"

/* One attribute as written: its name and its value's text ("" for a unit attribute). */
typedef struct kiln__cc_attr {
    const char *name, *value;
    size_t name_len, value_len;
    size_t pos; /* where the value stands in the caller's text, for messages */
} kiln__cc_attr;

/* Checks a known attribute's value (a name kiln does not know passes): NULL when it is
 * well formed, else what it should be ("a string or a dictionary"). */
const char *kiln__custom_call_check_attr(const kiln__cc_attr *a);

/* Writes value's normalized text into out (room for 3 * len + 1 bytes) and returns its
 * length: `// comments` dropped, runs of whitespace outside strings made one space, none
 * after an opening or before a closing bracket or a comma, strings with MLIR's escapes
 * (\\, \", \XX for what is not printable ASCII). */
size_t kiln__custom_call_normalize(const char *value, size_t len, char *out);

/* A new record (a reference the caller releases) for a call of `target` (its decoded
 * name), with the attributes (values normalized; the call_target_name entry left out) in
 * MLIR's order, by name, those at their default value left out (api_version 1, an empty
 * backend_config, has_side_effect false, empty lists), and the result types; NULL with the
 * error recorded in cx. */
kiln_tensor *kiln__custom_call_record(kiln_ctx *cx, const char *target, size_t target_len,
                                      const kiln__cc_attr *attrs, int32_t n_attrs,
                                      const kiln__type *results, int32_t n_results);

/* What a record holds (NULL or 0 for attrs that hold none). */
const char *kiln__custom_call_target(const kiln__attrs *a);
bool kiln__custom_call_has_side_effect(const kiln__attrs *a);
int32_t kiln__custom_call_n_attrs(const kiln__attrs *a);
/* Attribute i (name and value NUL-terminated, in the record); false past the last. */
bool kiln__custom_call_attr(const kiln__attrs *a, int32_t i, const char **name, const char **value);
/* The result types into out (at most cap); the record's count, or -1 without a record. */
int32_t kiln__custom_call_results(const kiln__attrs *a, kiln__type *out, int32_t cap);

#endif
