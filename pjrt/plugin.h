/* SPDX-License-Identifier: Apache-2.0 */
/* The objects behind the PJRT handles kiln's plugin hands out, and what its files share.
 * The plugin is a client of kiln's public API only (include/kiln): a PJRT client is a
 * kiln ctx, its devices the ctx's logical CPU devices, a buffer a kiln tensor, a loaded
 * executable a kiln_exe compiled from the portable artifact the framework sends.
 *
 * Threads: the framework calls from several threads at once (it compiles on a worker
 * while Python executes). A kiln ctx is not thread-safe, so every use of the client's ctx
 * holds the client's lock; buffers and executables are only read outside it. */
#ifndef KILN_PJRT_PLUGIN_H
#define KILN_PJRT_PLUGIN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kiln/kiln.h"
#include "pjrt/pjrt_abi.h"

/* Errors are allocated by the plugin and freed by the caller (PJRT_Error_Destroy). The
 * first word is left NULL: newer API versions make it a function table. */
struct PJRT_Error {
    const void *reserved;
    PJRT_Error_Code code;
    size_t length;
    char message[]; /* NUL-terminated */
};

/* A new error with a printf-style message; never NULL (an out-of-memory fallback is
 * static and PJRT_Error_Destroy leaves it alone). */
PJRT_Error *kiln_pjrt_error(PJRT_Error_Code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Frees an error (NULL and the static out-of-memory error are left alone). */
void kiln_pjrt_error_free(PJRT_Error *e);
/* The ctx's error as a PJRT error (prefixed by `what`), the ctx's error cleared. */
PJRT_Error *kiln_pjrt_ctx_error(kiln_ctx *cx, const char *what);
/* UNIMPLEMENTED naming the function. */
PJRT_Error *kiln_pjrt_unimplemented(const char *function, const char *why);
/* INVALID_ARGUMENT for a NULL args struct or handle, or a struct_size too small. */
#define KILN_PJRT_CHECK_ARGS(args, T, last)                                                       \
    do {                                                                                          \
        if (!(args))                                                                              \
            return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: args is NULL",          \
                                   __func__);                                                     \
        if (!KILN_PJRT_HAS(args, T, last))                                                        \
            return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,                              \
                                   "%s: args->struct_size is %zu; at least %zu needed", __func__, \
                                   (args)->struct_size, KILN_PJRT_STRUCT_SIZE(T, last));          \
    } while (0)

/* Events: complete or not, with an error or none; callbacks run once, when it completes
 * (on the completing thread, or at once on the registering thread when complete).
 * Counted: a buffer's ready event is shared with the framework, each holder releases its
 * reference (PJRT_Event_Destroy is the framework's release). */
struct PJRT_Event {
    atomic_int refs;
    pthread_mutex_t lock;
    pthread_cond_t done;
    bool ready;
    PJRT_Error_Code code; /* PJRT_Error_Code_OK when it completed without error */
    char *message;        /* when code is not OK */
    struct kiln_pjrt_callback *callbacks;
};

/* A new event, complete (with the error's code and message, or none) or pending. */
PJRT_Event *kiln_pjrt_event_new(bool ready, const PJRT_Error *error);
/* Completes a pending event (error may be NULL), running its callbacks. */
void kiln_pjrt_event_complete(PJRT_Event *e, PJRT_Error_Code code, const char *message);
PJRT_Event *kiln_pjrt_event_retain(PJRT_Event *e);
void kiln_pjrt_event_release(PJRT_Event *e);
/* Waits until the event completes; its error (a new one), or NULL. */
PJRT_Error *kiln_pjrt_event_wait(PJRT_Event *e);

struct PJRT_DeviceDescription {
    int id;
    char kind[32], debug[48], text[64];
};

struct PJRT_Memory {
    const void *reserved; /* newer API versions read a function table here */
    PJRT_Client *client;
    int id;
    PJRT_Device *device; /* the one device that addresses it */
    char debug[48], text[80];
};

struct PJRT_Device {
    PJRT_Client *client;
    int index; /* the logical CPU device, also the PJRT id and local hardware id */
    PJRT_DeviceDescription description;
    PJRT_Memory memory;
    PJRT_Memory *memories[1];
};

/* The client's devices as a topology (owned by the client). */
struct PJRT_TopologyDescription {
    PJRT_Client *client;
    PJRT_DeviceDescription **descriptions;
};

/* A unit of work on the client's queue, held inside what it runs (queuing allocates nothing). */
typedef struct kiln_pjrt_task {
    struct kiln_pjrt_task *next;
    void (*run)(void *arg);
    void *arg;
} kiln_pjrt_task;

struct PJRT_Client {
    pthread_mutex_t lock; /* held for every use of cx */
    kiln_ctx *cx;
    int n_devices;
    PJRT_Device *devices;
    PJRT_Device **device_list;
    PJRT_Memory **memory_list;
    char version[96];
    PJRT_TopologyDescription topology;
    /* Where executions run (queue.c; the client option "execution" or
     * KILN_PJRT_EXECUTION): "inline", the default, on the calling thread before Execute
     * returns; "worker", in order on a worker thread of the client's, so that the
     * framework's thread goes on while kiln computes (pjrt/README.md has the figures). */
    pthread_mutex_t queue_lock;
    pthread_cond_t queue_wake;
    struct kiln_pjrt_task *queue_head, *queue_tail;
    pthread_t worker;
    enum { KILN_PJRT_INLINE, KILN_PJRT_WORKER } execution;
    bool worker_started, stopping;
};

/* Runs run(arg) (t, inside arg, holds its place in the queue): on the calling thread when
 * the client executes inline and the work would not block waiting for work still queued,
 * else in order on the client's worker thread (started on first use; the calling thread
 * again if it cannot start). run may free t. */
void kiln_pjrt_queue_submit(PJRT_Client *c, kiln_pjrt_task *t, void (*run)(void *), void *arg,
                            bool would_block);
/* Runs what is queued on the client's worker to its end and stops it. */
void kiln_pjrt_queue_stop(PJRT_Client *c);

/* The client's ctx, locked, in a scope of its own; kiln_pjrt_leave ends both. */
kiln_ctx *kiln_pjrt_enter(PJRT_Client *c);
void kiln_pjrt_leave(PJRT_Client *c);

/* A buffer: a kiln tensor on a device, there once `ready` completes (at once for buffers
 * made from host memory; when the execution that makes it finishes for its outputs), or
 * the error that event carries. Counted: the framework's handle holds a reference, and so
 * does each queued execution that uses it. */
struct PJRT_Buffer {
    atomic_int refs;
    PJRT_Client *client;
    PJRT_Device *device;
    PJRT_Buffer_Type type;
    int32_t rank;
    int64_t dims[KILN_MAX_RANK];
    int64_t minor_to_major[KILN_MAX_RANK];
    PJRT_Event *ready;
    pthread_mutex_t lock; /* guards tensor and deleted */
    kiln_tensor *tensor;  /* a reference of its own; NULL before ready, once deleted, donated */
    bool deleted;         /* deleted or donated: the framework can no longer use it */
    atomic_int external_refs;
};

/* A ready buffer over tensor t (the reference is the buffer's) on device d. */
PJRT_Buffer *kiln_pjrt_buffer_new(PJRT_Client *c, PJRT_Device *d, kiln_tensor *t);
/* A buffer whose tensor comes later (kiln_pjrt_buffer_fulfill). */
PJRT_Buffer *kiln_pjrt_buffer_pending(PJRT_Client *c, PJRT_Device *d, PJRT_Buffer_Type type,
                                      int32_t rank, const int64_t *dims);
/* Gives a pending buffer its tensor (the reference passes to it; NULL with an error code
 * and message when the execution failed), completing its ready event. */
void kiln_pjrt_buffer_fulfill(PJRT_Buffer *b, kiln_tensor *t, PJRT_Error_Code code,
                              const char *message);
PJRT_Buffer *kiln_pjrt_buffer_retain(PJRT_Buffer *b);
void kiln_pjrt_buffer_release(PJRT_Buffer *b);
/* How a buffer's tensor is taken: read by the framework (refused once deleted or donated),
 * used by a queued execution (a donation queued after it does not stop it), or consumed
 * by the execution it is donated to (the buffer's own reference is moved out). */
typedef enum kiln_pjrt_take { KILN_PJRT_READ, KILN_PJRT_USE, KILN_PJRT_CONSUME } kiln_pjrt_take;

/* Waits until b is ready and gives its tensor as `how` says (a new reference, or the
 * buffer's own when consumed); the error of a failed, deleted or donated buffer otherwise,
 * naming `fn`. */
PJRT_Error *kiln_pjrt_buffer_take(PJRT_Buffer *b, const char *fn, kiln_pjrt_take how,
                                  kiln_tensor **out);
/* Whether b's ready event has completed. */
bool kiln_pjrt_buffer_is_ready(PJRT_Buffer *b);
/* Marks b deleted (donated): the framework sees it so at once; a queued execution that
 * consumes it still takes its tensor. False when it already was. */
bool kiln_pjrt_buffer_mark_deleted(PJRT_Buffer *b);

/* The dtype of a PJRT element type, false when kiln has none; and back. */
bool kiln_pjrt_dtype(PJRT_Buffer_Type type, kiln_dtype *out);
PJRT_Buffer_Type kiln_pjrt_buffer_type(kiln_dtype dtype);
const char *kiln_pjrt_type_name(PJRT_Buffer_Type type);

enum { KILN_PJRT_COST_VALUES = 4 };

/* A compiled program: one per PJRT_LoadedExecutable, shared (counted) with the
 * PJRT_Executable views the framework asks for. */
typedef struct kiln_pjrt_program {
    atomic_int refs;
    PJRT_Client *client;
    PJRT_Device *device;
    kiln_exe *exe;
    char *name;
    int32_t n_args, n_outputs;
    PJRT_Buffer_Type *output_types;
    int64_t *output_dims; /* all outputs' dimensions, one after the other */
    size_t *output_ranks;
    const char **output_kinds; /* "device", per output */
    size_t *output_kind_sizes;
    bool *donated;        /* per argument */
    char fingerprint[40]; /* of the program's bytes, the device and kiln's version */
    int64_t argument_bytes, output_bytes, temp_bytes; /* its memory, from kiln_exe_info */
    char *options; /* the serialized compile options it was compiled with */
    size_t options_size;
    char *code; /* the program, as compiled (for PJRT_Executable_Serialize) */
    size_t code_size;
    PJRT_NamedValue cost[KILN_PJRT_COST_VALUES]; /* its cost analysis (analysis.c) */
    _Atomic(char *) optimized; /* its optimized program, once asked for (analysis.c) */
} kiln_pjrt_program;

/* Fills p->cost from the executable's cost of one call. */
void kiln_pjrt_cost_values(kiln_pjrt_program *p, const kiln_cost *c);

void kiln_pjrt_program_release(kiln_pjrt_program *p);

struct PJRT_Executable {
    kiln_pjrt_program *program;
};

struct PJRT_LoadedExecutable {
    kiln_pjrt_program *program;
    atomic_bool deleted;
};

/* The library's one exported symbol: the function table (a PJRT_Api). */
__attribute__((visibility("default"))) const void *GetPjrtApi(void);

/* The implementations, by file; plugin.c puts each in its slot of the function table. */
#define KILN_PJRT_DECLARE(name) PJRT_Error *kiln_pjrt_##name(PJRT_##name##_Args *args);
#include "pjrt/implemented.def"
#undef KILN_PJRT_DECLARE

#endif
