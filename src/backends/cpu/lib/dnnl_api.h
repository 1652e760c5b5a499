/* SPDX-License-Identifier: Apache-2.0 */
/* oneDNN's C API as kiln calls it: opened at run time (dlopen) on first use, never linked,
 * so that a process that never convolves never maps oneDNN (40 MB, with libstdc++ and
 * libOpenCL behind it: most of the dynamic loader's work at start-up when it was linked),
 * and libkiln runs where oneDNN is missing (convolution then takes im2col + GEMM). */
#ifndef KILN_BACKENDS_CPU_DNNL_API_H
#define KILN_BACKENDS_CPU_DNNL_API_H

#include <stdbool.h>

/* Why oneDNN could not be opened, once kiln__dnnl_conv_available (or a convolution) has
 * tried ("" otherwise; "built without oneDNN" in such a build). */
const char *kiln__dnnl_api_error(void);
/* Tests only: whether this process has oneDNN mapped (read from /proc/self/maps; false where
 * that cannot be read). */
bool kiln__dnnl_api_mapped(void);
/* Tests only: the library kiln__dnnl_api_get opens instead of oneDNN's soname; effective
 * before the first open only (a name that cannot be opened tests the fallback). */
void kiln__dnnl_api_use_library(const char *name);

/* The table of entry points: only where kiln is built with oneDNN (its header then exists). */
#ifdef KILN_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>

/* Every oneDNN function dnnl_conv.c calls. */
#define KILN_DNNL_FUNCTIONS(X)                             \
    X(dnnl_dilated_convolution_backward_data_desc_init)    \
    X(dnnl_dilated_convolution_backward_weights_desc_init) \
    X(dnnl_dilated_convolution_forward_desc_init)          \
    X(dnnl_engine_create)                                  \
    X(dnnl_memory_create)                                  \
    X(dnnl_memory_desc_equal)                              \
    X(dnnl_memory_desc_get_size)                           \
    X(dnnl_memory_desc_init_by_strides)                    \
    X(dnnl_memory_desc_init_by_tag)                        \
    X(dnnl_memory_destroy)                                 \
    X(dnnl_primitive_attr_create)                          \
    X(dnnl_primitive_attr_destroy)                         \
    X(dnnl_primitive_attr_set_scratchpad_mode)             \
    X(dnnl_primitive_create)                               \
    X(dnnl_primitive_desc_create)                          \
    X(dnnl_primitive_desc_destroy)                         \
    X(dnnl_primitive_desc_query)                           \
    X(dnnl_primitive_desc_query_md)                        \
    X(dnnl_primitive_destroy)                              \
    X(dnnl_primitive_execute)                              \
    X(dnnl_reorder_primitive_desc_create)                  \
    X(dnnl_stream_create)                                  \
    X(dnnl_stream_destroy)                                 \
    X(dnnl_stream_wait)

/* The entry points, each named as the function it points to. */
typedef struct kiln__dnnl_api {
#define KILN_DNNL_MEMBER(name) __typeof__(name) *name;
    KILN_DNNL_FUNCTIONS(KILN_DNNL_MEMBER)
#undef KILN_DNNL_MEMBER
} kiln__dnnl_api;

/* oneDNN, opened on the first call (thread-safe): a table kiln owns, valid for the life of
 * the process; or NULL when it cannot be opened (the library is missing or lacks an entry
 * point: kiln__dnnl_api_error says which). Later calls give the same
 * answer. */
const kiln__dnnl_api *kiln__dnnl_api_get(void);

#endif /* KILN_HAVE_DNNL */

#endif
