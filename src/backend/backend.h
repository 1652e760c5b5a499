/* SPDX-License-Identifier: Apache-2.0 */
/* The backend interface, version 4: exactly what a backend implements for kiln, and all a
 * backend needs of kiln besides the op table (ops/), the IR (ir/) and the core objects
 * (core/). Every entry of the table below is called by the runtime; none is there for a
 * backend's own use.
 *
 * A backend must implement: its name and device type, device_count and device_info (its
 * devices, each with its memory spaces), supports_op (the ops it runs, by kind and element
 * type: kiln_compile names the first op of a module it cannot run before asking it to
 * compile), eval_op (one op on
 * tensors, for eager mode), and compile, execute and release (a verified, optimized module
 * turned into an executable of its own that it runs on one of its devices). It may add:
 * available (whether it can run in this process), buffer_alloc with the copies (devices
 * whose memory the host cannot read in place), info and print (what kiln_exe_info and
 * kiln_exe_print show of its plan) and native_status. tests/backend/toy_backend.c is a
 * backend of the required entries alone, built outside src/.
 *
 * The runtime (src/runtime/) calls backends only through this table, found in the
 * registry (backend/registry.h); no file above this folder includes a concrete backend.
 * eval_op, compile and execute are called with the device they run on as cx's current
 * device (kiln__ctx_use_device), so the tensors a backend makes with core's constructors
 * land on it.
 *
 * Growth: `struct_size` is the size of the table the backend was built with and `version`
 * the interface version it implements. A field past struct_size, or an optional entry left
 * NULL, is treated as absent; required entries are marked below. Every entry must be
 * thread-safe: one executable may run on several threads at once, each with its own ctx.
 *
 * Buffers are core's refcounted storage (core/tensor_internal.h), tagged with the device
 * they live on; tensors are views over them. Copies may complete asynchronously: each
 * returns an event (backend/event.h) that the caller waits on or queries. The CPU backend
 * completes them at once, but callers must not assume so.
 */
#ifndef KILN_BACKEND_BACKEND_H
#define KILN_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "backend/event.h"
#include "base/strbuf.h"
#include "core/tensor_internal.h"
#include "ir/ir.h"
#include "kiln/jit.h"
#include "kiln/tensor.h"
#include "ops/attrs.h"
#include "ops/infer.h"
#include "ops/op.h"
#include "ops/op_cost.h"

#define KILN_BACKEND_VERSION 4

/* Runs one op on concrete tensors. For ops without the CONTROL flag the results are
 * preallocated with the inferred types and the kernel fills them; CONTROL ops store new
 * tensors (owned by the innermost scope) in results. Errors are recorded in cx. */
typedef kiln_status (*kiln__eval_fn)(kiln_ctx *cx, const kiln__attrs *attrs,
                                     kiln_tensor *const *operands, int n_operands,
                                     kiln_tensor **results, int n_results);

/* Where a device keeps bytes (PJRT's memory kinds). */
typedef enum kiln__memory_kind {
    KILN__MEMORY_DEVICE,      /* the device's own memory */
    KILN__MEMORY_PINNED_HOST, /* host memory the device reads and writes directly */
    KILN__MEMORY_HOST,        /* ordinary host memory */
} kiln__memory_kind;

typedef struct kiln__memory_space {
    kiln__memory_kind kind;
    const char *name;  /* "device", "pinned_host", "unpinned_host" (static) */
    bool host_visible; /* the host reads its bytes in place (kiln_tensor_data works) */
} kiln__memory_space;

typedef struct kiln__device_info {
    kiln_device device;
    const char *kind; /* what the device is, for people: "cpu", "H200", ... (static) */
    int32_t n_memories;
    const kiln__memory_space *memories; /* memories[0] is the default (static) */
} kiln__device_info;

/* What the runtime asks a backend to compile: the module after verification and the
 * backend-neutral passes, the device, the options, and the calling convention the runtime
 * decided (per argument: donated; per result: the argument it returns unchanged or -1,
 * the donated argument whose buffer it may take or -1). The module is only lent: the
 * executable must keep copies of what it needs (it may share constants' storage). Like
 * kiln_compile's passes, a backend may rewrite it in place with rewrites that keep its
 * meaning and its calling convention (the CPU backend's layout assignment,
 * src/passes/layout.c), as kiln_compile_options says. */
typedef struct kiln__compile_request {
    kiln_module *module; /* lent for the call; values' scratch ids (kiln__value.id) may be set */
    kiln_device device;
    const kiln_compile_options *options;
    int32_t n_args, n_results;
    const bool *donated;
    const int32_t *preserved, *aliases;
} kiln__compile_request;

/* One execution: args[0..n_args-1] are alive, typed as compiled, on the executable's
 * device. reusable[i] says the runtime lets a result take donated argument i's buffer
 * (it holds the only reference, and the memory may be written); the backend may clear
 * entries it takes. The backend stores n_results new tensors, owned by cx's innermost
 * scope, in results (all NULL on error), and sets *started once it may have written into
 * an argument's buffer. The runtime kills donated arguments afterwards, unless the call
 * failed before it started (then the caller keeps them). */
typedef struct kiln__execute_args {
    kiln_tensor *const *args;
    int32_t n_args;
    bool *reusable;
    kiln_tensor **results;
    int32_t n_results;
    bool *started;
} kiln__execute_args;

/* A backend's executable (opaque to the runtime). */
typedef struct kiln__executable kiln__executable;

/* What kiln_exe_info reports of the plan (a backend without a plan reports n_ops only)
 * and the summed cost of one call (ops/op_cost.h: its ops', or its fused kernels'). */
typedef struct kiln__executable_info {
    int32_t n_ops;
    size_t arena_bytes;
    int32_t n_buffers, n_kernels, n_fused_ops, n_conv_epilogues;
    kiln__cost cost;
} kiln__executable_info;

typedef struct kiln__backend {
    size_t struct_size;           /* sizeof(kiln__backend) as the backend was built (required) */
    int version;                  /* KILN_BACKEND_VERSION (required) */
    const char *name;             /* "cpu", "interpreter", ... (required, static) */
    kiln_device_type device_type; /* the kind of device it runs on (required) */

    /* Optional (NULL: always available). KILN_OK when the backend can run in this
     * process; otherwise a status (UNAVAILABLE, typically) and a reason written into
     * reason[0..cap-1] ("libcuda.so.1 not found"). Called once per ctx by the registry. */
    kiln_status (*available)(char *reason, size_t cap);

    /* The number of devices it offers to cx (required). Device ids are 0..count-1. */
    int32_t (*device_count)(const kiln_ctx *cx);
    /* Describes device `id` (required). */
    kiln_status (*device_info)(const kiln_ctx *cx, int32_t id, kiln__device_info *out);

    /* Ops (required). supports_op says whether the backend runs ops of kind `op` at all
     * (dtype KILN_DTYPE_COUNT), and whether it runs those with an operand or a result of
     * element type `dtype`; it is asked for the kind, then once per dtype an op has, and an
     * op runs when every answer is yes. kiln_compile refuses a module with an
     * op it does not run (UNIMPLEMENTED, naming the op, the dtype, where it is and the
     * backend) before calling compile, which may still refuse what it cannot run for other
     * reasons (a region, an attribute). eval_op runs one op on tensors of one of its
     * devices (eager mode). */
    bool (*supports_op)(kiln_op op, kiln_dtype dtype);
    kiln_status (*eval_op)(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                           kiln_tensor *const *operands, int n_operands, kiln_tensor **results,
                           int n_results);

    /* Buffers (optional: NULL for a backend whose devices keep host-visible memory, which
     * core allocates from the ctx's allocator and copies with memcpy).
     * buffer_alloc makes nbytes uninitialised bytes on a device, as storage with one
     * reference whose last release frees it. The copies move bytes between a buffer and
     * the host, or between two buffers (possibly of two devices of the backend), and store
     * an event that completes when the bytes have arrived (or NULL when they already
     * have). */
    kiln_status (*buffer_alloc)(kiln_ctx *cx, kiln_device device, size_t nbytes,
                                kiln__storage **out_storage);
    kiln_status (*copy_to_host)(kiln_ctx *cx, const kiln__storage *src, size_t offset, void *dst,
                                size_t nbytes, kiln__event **out_event);
    kiln_status (*copy_from_host)(kiln_ctx *cx, const void *src, kiln__storage *dst, size_t offset,
                                  size_t nbytes, kiln__event **out_event);
    kiln_status (*copy_buffer)(kiln_ctx *cx, const kiln__storage *src, size_t src_offset,
                               kiln__storage *dst, size_t dst_offset, size_t nbytes,
                               kiln__event **out_event);

    /* Executables (required). compile builds one for req->device, every op of the module
     * one that supports_op accepts; the backend may still refuse (UNIMPLEMENTED naming the
     * op it cannot run), and it may refine the backend-neutral plans
     * (fusion, buffers) it is offered in src/passes/. execute runs it (see
     * kiln__execute_args) and stores an event that completes with the run, or NULL when
     * the run is over. release frees it (NULL is a no-op). All but compile are called
     * with the executable's memory still valid, from any thread. */
    kiln_status (*compile)(kiln_ctx *cx, const kiln__compile_request *req,
                           kiln__executable **out_exe);
    kiln_status (*execute)(kiln_ctx *cx, const kiln__executable *exe,
                           const kiln__execute_args *args, kiln__event **out_event);
    void (*release)(kiln__executable *exe);

    /* Optional: the plan's figures, and the text kiln_exe_print shows after the
     * runtime's header line (every op, kernels, the memory plan). */
    void (*info)(const kiln__executable *exe, kiln__executable_info *out);
    void (*print)(kiln__strbuf *sb, const kiln__executable *exe);

    /* Optional: distinct kernels getting native code, and those whose code is there now
     * (this changes while a background compiler works: asked by every kiln_exe_info_get).
     * Thread-safe. */
    void (*native_status)(const kiln__executable *exe, int32_t *n_native, int32_t *n_ready);
} kiln__backend;

/* Adds a backend to cx's list, after the builtins (backend/registry.c): a backend built
 * outside the library registers itself this way, and is then found by name
 * (kiln_compile_options.backend) and listed by kiln_backend_info_get. INVALID_ARGUMENT for
 * a table of another interface version, too small a struct_size, a missing required
 * entry or a name already listed; RESOURCE_EXHAUSTED when the list is full; an
 * `available` check that fails leaves it listed as unavailable. The table must outlive
 * cx. */
kiln_status kiln__backend_register(kiln_ctx *cx, const kiln__backend *b);

/* Is entry `field` present in backend b (inside its struct_size, and not NULL)? */
#define KILN__BACKEND_HAS(b, field) \
    ((b)->struct_size >= offsetof(kiln__backend, field) + sizeof((b)->field) && (b)->field)

#endif
