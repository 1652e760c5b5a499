/* SPDX-License-Identifier: Apache-2.0 */
/* The ctx's fields, for the library's own use. */
#ifndef KILN_BASE_CTX_INTERNAL_H
#define KILN_BASE_CTX_INTERNAL_H

#include "base/scope.h"
#include "kiln/ctx.h"

/* Error messages live in the ctx, so that recording one never allocates. */
#define KILN_ERROR_MESSAGE_MAX 1024

/* The most logical CPU devices a ctx may ask for (kiln_ctx_options.cpu_devices). */
#define KILN__MAX_CPU_DEVICES 256

/* The most backends one ctx lists (src/backend/registry.h). */
#define KILN__MAX_BACKENDS 16

struct kiln__backend;

/* A backend as the ctx lists it: its table (opaque here) and whether it can run. */
typedef struct kiln__backend_entry {
    const struct kiln__backend *backend;
    kiln_status status; /* of its availability check */
    char reason[160];   /* why it cannot run ("" when it can) */
} kiln__backend_entry;

struct kiln__buffer_cache;

struct kiln_ctx {
    kiln_allocator allocator;
    struct kiln__buffer_cache *cache; /* tensor data (base/buffer_cache.h) */
    kiln_log_fn log_fn;
    void *log_user;
    kiln_log_level log_level;
    kiln_device device;      /* where new tensors go; an eager op sets it to its operands' */
    int32_t cpu_devices;     /* logical CPU devices 0..cpu_devices-1 */
    char backend[64];        /* kiln_compile's default backend by name; "" for the device's */
    kiln_native_mode native; /* kiln_ctx_options.native */
    char cache_dir[1024];    /* kiln_ctx_options.cache_dir; "" for the environment's */

    /* The backends this ctx sees (backend/registry.c fills the list on first use), and
     * the one eager ops on CPU devices run on, once looked up. */
    kiln__backend_entry backends[KILN__MAX_BACKENDS];
    int32_t n_backends;
    bool backends_listed;
    const struct kiln__backend *cpu_eager;

    kiln_status status;
    char message[KILN_ERROR_MESSAGE_MAX];

    /* The active trace (runtime's kiln__trace) while kiln_lower runs a function; NULL when
     * ops run eagerly. */
    void *trace;

    /* The executables the eager transformations compiled (runtime/ad_cache.c), owned by
     * the root scope; NULL until the first. */
    void *ad_cache;

    /* The communicator collectives run through (backend/comm.h, kiln/spmd.h), and this
     * ctx's process in it; NULL for a ctx that is a grid of one process. The ctx holds a
     * reference, dropped through comm_release (base cannot name the backend layer). */
    void *comm;
    int32_t comm_process;
    void (*comm_release)(void *comm);

    kiln__scope root_scope; /* owns what is made outside any user scope */
    kiln__scope *scope;     /* innermost */
    int scope_depth;
};

/* Records INVALID_ARGUMENT "<fn>: <arg> is NULL" unless an error is already recorded,
 * so that a NULL produced by an earlier failed call does not hide its cause. */
kiln_status kiln__null_argument(kiln_ctx *cx, const char *fn, const char *arg);
/* The same for functions that return a pointer: records it and returns NULL. */
void *kiln__null_argument_ptr(kiln_ctx *cx, const char *fn, const char *arg);
/* A caller's versioned options struct older (smaller) than this build's: records and
 * returns INVALID_ARGUMENT "<fn>: <what>->struct_size is <size>; expected <expected> (use
 * <defaults>)", `defaults` naming the function that fills a current one. */
kiln_status kiln__struct_too_small(kiln_ctx *cx, const char *fn, const char *what, size_t size,
                                   size_t expected, const char *defaults);

/* Copies a caller's versioned options struct (every one starts with its size_t struct_size)
 * over the defaults in *o, of this build's `size`; NULL options keep the defaults. A
 * smaller struct_size is refused through kiln__struct_too_small, naming "options". */
kiln_status kiln__options_read(kiln_ctx *cx, const char *fn, const void *options, void *o,
                               size_t size, const char *defaults);

#endif
