/* The backend interface: what a device offers kiln. Versioned, so that later backends
 * (the compiled engine, CUDA) plug in behind the same calls. */
#ifndef KILN_BACKEND_BACKEND_H
#define KILN_BACKEND_BACKEND_H

#include <stdbool.h>

#include "kiln/tensor.h"
#include "ops/attrs.h"
#include "ops/infer.h"
#include "ops/op.h"

#define KILN_BACKEND_VERSION 1

/* Runs one op on concrete tensors. For ops without the CONTROL flag the results are
 * preallocated with the inferred types and the kernel fills them; CONTROL ops store new
 * tensors (owned by the innermost scope) in results. Errors are recorded in cx. */
typedef kiln_status (*kiln__eval_fn)(kiln_ctx *cx, const kiln__attrs *attrs,
                                     kiln_tensor *const *operands, int n_operands,
                                     kiln_tensor **results, int n_results);

typedef struct kiln__backend {
    int version; /* KILN_BACKEND_VERSION */
    const char *name;
    kiln_device_type device;
    bool (*supports_op)(kiln_op op);
    kiln_status (*eval_op)(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                           kiln_tensor *const *operands, int n_operands, kiln_tensor **results,
                           int n_results);
    /* Optional (NULL: nothing to prepare). Called by kiln_compile once per op of an
     * executable, with the op's operand and result types, so that a kernel can build and
     * cache what it needs (library primitives, packed constants) before the first call.
     * May fail (the compile fails with its error). Thread-safe. */
    kiln_status (*prepare_op)(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                              const kiln__type *operands, int n_operands,
                              const kiln__type *results, int n_results);
} kiln__backend;

#endif
