/* SPDX-License-Identifier: Apache-2.0 */
/* The dynamic-shape ops (dynamic_iota, dynamic_broadcast_in_dim, dynamic_reshape,
 * dynamic_pad, dynamic_gather, dynamic_conv): each is a static op some of whose attributes
 * are operands, the shape operands, which follow its data operands. kiln holds them with
 * the static result types they are declared with. Once the shape operands' values are
 * known (at run time, or at compile time when they are constants) the op is its static
 * form: the evaluator runs that form's kernel, and canonicalize rewrites the op into it,
 * so the one function below is what both mean by the op. */
#ifndef KILN_OPS_DYNAMIC_H
#define KILN_OPS_DYNAMIC_H

#include "ops/infer.h"

/* How many of a dynamic op's operands are data (the rest are its shape operands); -1 for
 * an op of another kind. */
int32_t kiln__dynamic_data_operands(kiln_op kind);

/* A dynamic op's static form: the kind, its attributes, and how many of the dynamic op's
 * operands it takes (the data operands). */
typedef struct kiln__static_form {
    kiln_op kind;
    int32_t n_operands;
    kiln__attrs attrs;
} kiln__static_form;

/* The static form of a dynamic op whose operand types are `operands` (all of them) and
 * whose declared result type is `result`, given its shape operands' values: values[i]
 * holds the elements of shape operand i (as many as the operand has). Checks the values
 * as the static op checks its attributes, and that the static op's result type is the
 * declared one; INVALID_ARGUMENT naming the op and the operand otherwise (recorded in cx,
 * which may be NULL: a pass asks without reporting). */
kiln_status kiln__dynamic_static_form(kiln_ctx *cx, kiln_op kind, const kiln__attrs *a,
                                      const kiln__type *operands, int32_t n_operands,
                                      const kiln__type *result, const int64_t *const *values,
                                      kiln__static_form *out);

/* The elements of an integer tensor t (of at most `cap` elements) into out, as int64_t
 * (an unsigned value above INT64_MAX becomes INT64_MAX, out of range for every use).
 * Returns false when t is not an integer tensor or has more elements. */
bool kiln__dynamic_values(const kiln_tensor *t, int64_t *out, int64_t cap);

/* dynamic_gather's slice sizes as its result type gives them (read from text, where they
 * are an operand): 1 for the collapsed and batching dimensions of the operand, the result's
 * offset dimensions, in order, for the others. The operand's values must agree when it
 * runs. */
void kiln__gather_sizes_from_type(kiln_gather_params *g, int32_t operand_rank,
                                  const kiln_shape *result);

#endif
