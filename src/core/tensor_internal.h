/* Tensor and storage internals, for the library's own use. */
#ifndef KILN_CORE_TENSOR_INTERNAL_H
#define KILN_CORE_TENSOR_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "base/scope.h"
#include "kiln/tensor.h"

/* Refcounted memory on a device, shared by the tensors that view it. */
typedef struct kiln__storage {
    atomic_long refs;
    kiln_device device;
    void *data;
    size_t nbytes;
    kiln_allocator allocator; /* frees this struct, and data unless wrapped */
    kiln_deleter_fn deleter;  /* wrapped memory: the user's deleter (may be NULL) */
    void *deleter_user;
    bool wrapped;
} kiln__storage;

struct kiln_tensor {
    kiln__owned owned; /* the scope's reference, if a scope holds one */
    atomic_long refs;  /* all references, the scope's included */
    kiln_dtype dtype;
    kiln_shape shape;
    int64_t numel;
    size_t nbytes;
    kiln__storage *storage;
    size_t byte_offset;
    kiln_allocator allocator; /* frees this struct */
};

/* Checks dtype and shape for `fn`, recording INVALID_ARGUMENT with a message naming the
 * function and argument on failure. Computes the element count and byte size. */
bool kiln__check_dtype_shape(kiln_ctx *cx, const char *fn, kiln_dtype dtype,
                             const kiln_shape *shape, int64_t *out_numel, size_t *out_nbytes);

/* A new tensor with fresh, uninitialised storage, adopted by the innermost scope. */
kiln_tensor *kiln__tensor_new(kiln_ctx *cx, const char *fn, kiln_dtype dtype, kiln_shape shape);

/* Writable data of a tensor the caller just made (NULL when empty). */
void *kiln__tensor_mutable_data(kiln_tensor *t);

#endif
