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
 * (on the completing thread, or at once on the registering thread when complete). */
struct PJRT_Event {
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

struct PJRT_Client {
    pthread_mutex_t lock; /* held for every use of cx */
    kiln_ctx *cx;
    int n_devices;
    PJRT_Device *devices;
    PJRT_Device **device_list;
    PJRT_Memory **memory_list;
    char version[96];
    PJRT_TopologyDescription topology;
};

/* The client's ctx, locked, in a scope of its own; kiln_pjrt_leave ends both. */
kiln_ctx *kiln_pjrt_enter(PJRT_Client *c);
void kiln_pjrt_leave(PJRT_Client *c);

struct PJRT_Buffer {
    PJRT_Client *client;
    PJRT_Device *device;
    kiln_tensor *tensor; /* a reference of its own; NULL once deleted or donated */
    PJRT_Buffer_Type type;
    int32_t rank;
    int64_t dims[KILN_MAX_RANK];
    int64_t minor_to_major[KILN_MAX_RANK];
    PJRT_Error *error; /* an error buffer's (PJRT_Client_CreateErrorBuffer) */
    atomic_int external_refs;
    atomic_bool deleted;
};

/* A buffer over tensor t (the reference is the buffer's) on device d. */
PJRT_Buffer *kiln_pjrt_buffer_new(PJRT_Client *c, PJRT_Device *d, kiln_tensor *t);

/* The dtype of a PJRT element type, false when kiln has none; and back. */
bool kiln_pjrt_dtype(PJRT_Buffer_Type type, kiln_dtype *out);
PJRT_Buffer_Type kiln_pjrt_buffer_type(kiln_dtype dtype);
const char *kiln_pjrt_type_name(PJRT_Buffer_Type type);

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
    char *options;        /* the serialized compile options it was compiled with */
    size_t options_size;
} kiln_pjrt_program;

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
