/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the nn files. src/nn sees only the public API (src/LAYERS),
 * so these are small conveniences over it, not access to internals. */
#ifndef KILN_NN_INTERNAL_H
#define KILN_NN_INTERNAL_H

#include <kiln/kiln.h>
#include <kiln/nn.h>

/* Checks a tensor argument: true when it may be used. A NULL tensor with no error yet
 * recorded is INVALID_ARGUMENT naming fn and arg; with one recorded it stays. */
bool kiln__nn_arg(kiln_ctx *cx, const char *fn, const char *arg, const kiln_tensor *t);

/* Records INVALID_ARGUMENT "fn: <message>" and returns NULL (for one-line error returns). */
kiln_tensor *kiln__nn_fail(kiln_ctx *cx, const char *fn, const char *fmt, ...)
    KILN_PRINTF_LIKE(3, 4);

/* Checks pointer arguments: true when none of the n pointers ptrs is NULL, else false with
 * INVALID_ARGUMENT "fn: <name> is NULL" recorded for the first that is (names[i] names
 * ptrs[i]). */
bool kiln__nn_not_null(kiln_ctx *cx, const char *fn, int n, const void *const *ptrs,
                       const char *const *names);

/* Formats a tensor's shape as "[2,3]" into buf. */
const char *kiln__nn_shape_str(const kiln_tensor *t, char *buf, size_t size);

/* Each layer runs in a scope of its own so intermediates are freed on return:
 *   if (!kiln__nn_begin(cx)) return NULL;  ... return kiln__nn_end(cx, result); */
bool kiln__nn_begin(kiln_ctx *cx);
/* Moves r (may be NULL) out of the innermost scope and ends it; NULL when an error is
 * recorded. */
kiln_tensor *kiln__nn_end(kiln_ctx *cx, kiln_tensor *r);
/* Ends the scope, moving the n tensors *outs[i] (NULL entries allowed) out of it; on a
 * recorded error every *outs[i] becomes NULL. Returns the status. */
kiln_status kiln__nn_end_n(kiln_ctx *cx, kiln_tensor **const *outs, int n);

/* A rank-0 tensor of x's dtype (kiln_scalar_like). */
static inline kiln_tensor *kiln__nn_s(kiln_ctx *cx, kiln_tensor *x, double v) {
    return kiln_scalar_like(cx, x, v);
}

#endif

/* Allocation through the ctx's allocator; NULL with RESOURCE_EXHAUSTED naming fn. */
void *kiln__nn_alloc(kiln_ctx *cx, const char *fn, size_t size);
void kiln__nn_free(kiln_ctx *cx, void *p, size_t size);

/* The addresses of the tensor members of `tree` (described by def, which must be valid:
 * kiln_tree_check first), in flatten order, into a new array of *out_n entries
 * (kiln__nn_free(cx, *out_slots, *out_n * sizeof **out_slots)). NULL members are listed
 * too (kiln_tree_flatten rejects them; gradient trees have them). Returns false with an
 * error recorded. */
bool kiln__nn_leaf_slots(kiln_ctx *cx, const char *fn, const kiln_tree_def *def, void *tree,
                         kiln_tensor ****out_slots, int32_t *out_n);
