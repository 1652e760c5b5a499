/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/ctx.h: the context: error state, logging, allocator, scopes.
 *
 * A kiln_ctx is the handle every call takes first. It holds
 *  - the sticky error: the first failure since the last kiln_ctx_clear_error, with its
 *    status and message. Builders that return objects return NULL on error and leave the
 *    error here, so math code chains and checks once at the end;
 *  - the allocator every host allocation goes through (kiln/alloc.h), and a cache of the
 *    tensor memory released tensors gave back, reused by the next tensors of about their
 *    size (kiln_ctx_cache_stats, kiln_ctx_trim);
 *  - the log callback and level (KILN_LOG=error|warn|info|debug in the environment);
 *  - the scope stack that owns the tensors created by kiln calls.
 *
 * A ctx is not thread-safe: use one ctx per thread, or serialise calls on it.
 *
 *     kiln_ctx *cx;
 *     if (kiln_ctx_create(NULL, &cx) != KILN_OK) return 1;
 *     kiln_scope_begin(cx);
 *     kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2, 3));
 *     ...
 *     if (kiln_ctx_status(cx) != KILN_OK) fprintf(stderr, "%s\n", kiln_ctx_error_message(cx));
 *     kiln_scope_end(cx);          // releases x and every other tensor made in the scope
 *     kiln_ctx_release(cx);
 */
#ifndef KILN_CTX_H
#define KILN_CTX_H

#include <stdbool.h>
#include <stddef.h>

#include <stdint.h>

#include "kiln/alloc.h"
#include "kiln/device.h"
#include "kiln/export.h"
#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_ctx kiln_ctx;

typedef enum kiln_log_level {
    KILN_LOG_UNSET = -1, /* in options: take KILN_LOG from the environment */
    KILN_LOG_OFF = 0,
    KILN_LOG_ERROR = 1,
    KILN_LOG_WARN = 2,
    KILN_LOG_INFO = 3,
    KILN_LOG_DEBUG = 4,
} kiln_log_level;

/* Receives one log line (no trailing newline). `message` lives for the call only. Called
 * on the thread that logs. */
typedef void (*kiln_log_fn)(void *user, kiln_log_level level, const char *message);

/* The native tier of compiled fused kernels: each kernel's loop generated as C, compiled
 * by the system C compiler (KILN_CC, else cc on PATH) into a shared object, cached on
 * disk and swapped in for the tiled engine when ready. It gives the tiled engine's bits, so
 * results never depend on which one ran or when the swap happened. */
typedef enum kiln_native_mode {
    KILN_NATIVE_DEFAULT = 0, /* KILN_NATIVE from the environment (off|background|wait), else
                                background */
    KILN_NATIVE_OFF,         /* the tiled engine only */
    KILN_NATIVE_BACKGROUND,  /* compiled on a thread of the process: kiln_compile and calls
                                never wait, a kernel turns native when its code is there */
    KILN_NATIVE_WAIT,        /* compiled (or loaded from the cache) inside kiln_compile, for
                                benchmarks and tests */
} kiln_native_mode;

typedef struct kiln_ctx_options {
    size_t struct_size; /* sizeof(kiln_ctx_options); set by kiln_ctx_options_default */
    /* Host allocator, copied at creation. NULL: the C library's. */
    const kiln_allocator *allocator;
    /* Log sink. NULL: lines go to stderr, and only when logging was asked for. */
    kiln_log_fn log_fn;
    void *log_user;
    /* KILN_LOG_UNSET: the level named by the KILN_LOG environment variable
     * (error|warn|info|debug|off); without it, WARN when log_fn is set and OFF otherwise,
     * so kiln never prints unless asked to. */
    kiln_log_level log_level;
    /* The device new tensors are created on. */
    kiln_device device;
    /* Threads for kernels and BLAS, process-wide (one pool serves every ctx): a positive
     * count is applied when the ctx is created and stays in force for later calls of all
     * ctxs until another ctx sets one. 0: leave the count as it is (by default
     * KILN_NUM_THREADS from the environment, else the cores available). Negative:
     * INVALID_ARGUMENT. Results are bitwise the same for every count. */
    int num_threads;
    /* Logical CPU devices, cpu:0 .. cpu:(cpu_devices-1), like XLA's host platform device
     * count: they share the cores and host memory but are distinct devices for placement
     * (a tensor and an executable belong to one) and, later, collectives. 0: the count
     * KILN_CPU_DEVICES names in the environment (1 to 256; otherwise 1). Negative or above
     * 256: INVALID_ARGUMENT. `device` must be one of them. */
    int cpu_devices;
    /* The backend kiln_compile uses, for devices of its type, when its options name none
     * (kiln/device.h lists them): NULL takes KILN_BACKEND from the environment, and
     * without it the device's preferred backend ("cpu" on CPU devices). Copied; a name longer than
     * 63 bytes is INVALID_ARGUMENT. An unknown name is reported by kiln_compile (NOT_FOUND). */
    const char *backend;
    /* The most bytes of released tensor memory the ctx keeps for reuse (its buffer cache,
     * see kiln_ctx_cache_stats): an eager op's result then takes a block a released tensor
     * gave back (warm pages) instead of fresh memory from the allocator. 0 keeps nothing.
     * Default KILN_CACHE_BYTES_DEFAULT. */
    size_t cache_bytes;
    /* Whether and when executables compiled with this ctx get native kernels (above).
     * Outside the enum: INVALID_ARGUMENT. */
    kiln_native_mode native;
    /* Where compiled code is cached on disk (native kernels, GPU binaries): NULL takes
     * KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln. Used only when it is
     * a directory of this user's that nobody else may write (made with mode 0700 when
     * missing); otherwise nothing is cached, said once in the log. At most 1023 bytes, else
     * INVALID_ARGUMENT. Copied. */
    const char *cache_dir;
} kiln_ctx_options;

/* The default of kiln_ctx_options.cache_bytes: 1 GiB. */
#define KILN_CACHE_BYTES_DEFAULT ((size_t)1 << 30)

/* Options with every field at its default. Pure; thread-safe. */
KILN_API kiln_ctx_options kiln_ctx_options_default(void);

/* Creates a ctx. `options` may be NULL (all defaults); a struct from an older kiln with a
 * smaller struct_size is accepted, the missing fields taking their defaults.
 * On success stores the new ctx in *out_ctx (owned by the caller: kiln_ctx_release) and
 * returns KILN_OK. Errors: INVALID_ARGUMENT (out_ctx NULL, struct_size 0 or too small,
 * an allocator without alloc or free, a bad log level, a device that is not one of the
 * ctx's CPU devices, a negative num_threads, a bad cpu_devices, too long a backend or
 * cache_dir, a native mode outside its enum),
 * RESOURCE_EXHAUSTED. On error *out_ctx is set to NULL (when out_ctx is not NULL); there is no ctx
 * to hold a message. Thread-safe. */
KILN_API KILN_NODISCARD kiln_status kiln_ctx_create(const kiln_ctx_options *options,
                                                    kiln_ctx **out_ctx);

/* Ends every open scope (releasing what they own) and frees the ctx. Tensors the user
 * retained stay valid as long as the allocator does. NULL is a no-op. */
KILN_API void kiln_ctx_release(kiln_ctx *cx);

/* The first error since creation or the last kiln_ctx_clear_error, or KILN_OK.
 * INVALID_ARGUMENT for a NULL cx. */
KILN_API kiln_status kiln_ctx_status(const kiln_ctx *cx);

/* The message of that error ("" when there is none). Borrowed: valid until the error is
 * cleared or the ctx released. A NULL cx gives a static message saying so. */
KILN_API const char *kiln_ctx_error_message(const kiln_ctx *cx);

/* Forgets the sticky error, so that the ctx can be used again after a failure. NULL is a
 * no-op. */
KILN_API void kiln_ctx_clear_error(kiln_ctx *cx);

/* Records an error on behalf of user code (e.g. a callback that failed), with a printf
 * format (NULL: "(no message)"; the message is cut at 1023 bytes). Like every error it is
 * sticky: it is ignored when one is already recorded. Returns `status`; KILN_OK or a NULL
 * cx records nothing. */
KILN_API kiln_status kiln_ctx_set_error(kiln_ctx *cx, kiln_status status, const char *fmt, ...)
    KILN_PRINTF_LIKE(3, 4);

/* The ctx's allocator (borrowed, lives as long as the ctx) and default device. A NULL cx
 * gives the default allocator and the CPU. */
KILN_API const kiln_allocator *kiln_ctx_allocator(const kiln_ctx *cx);
KILN_API kiln_device kiln_ctx_device(const kiln_ctx *cx);

/* The ctx's buffer cache. Host tensors take their memory from the cache: the tensor's
 * record, and its data (up to 896 bytes in one block with the data's own record). Blocks
 * come in size classes up to 256 KiB (64-byte steps up to 1 KiB, then four per power of
 * two: at most 25% above the request) and, above that, in the request rounded up to a
 * page, which a later request at most 1/8 smaller may take. The cache keeps the blocks
 * released tensors give back, up to its limit, and hands them out again; blocks of 8 MiB
 * and more are advised to use transparent huge pages. When the allocator
 * fails, the cache frees what it keeps and tries once more before reporting
 * RESOURCE_EXHAUSTED. Tensors may outlive the ctx: their memory then goes straight back
 * to the allocator. */
typedef struct kiln_cache_stats {
    size_t kept_bytes;      /* bytes waiting for reuse */
    size_t kept_blocks;     /* blocks waiting for reuse */
    size_t peak_kept_bytes; /* the most kept_bytes has been */
    size_t live_bytes;      /* bytes of blocks handed out and not given back */
    size_t limit_bytes;     /* the limit (kiln_ctx_options.cache_bytes) */
    uint64_t hits;          /* allocations served by a kept block */
    uint64_t misses;        /* allocations that went to the allocator */
    uint64_t retries;       /* allocator failures answered by freeing the kept blocks */
} kiln_cache_stats;

/* Fills *out with the cache's figures. INVALID_ARGUMENT for a NULL cx or out (recorded in
 * cx when there is one). Thread-safe. */
KILN_API kiln_status kiln_ctx_cache_stats(kiln_ctx *cx, kiln_cache_stats *out);

/* Frees every block the cache keeps (memory in use by tensors stays); returns the bytes
 * freed (0 for a NULL cx). Thread-safe. */
KILN_API size_t kiln_ctx_trim(kiln_ctx *cx);

/* Changes the cache's limit, freeing kept blocks above it (largest first); 0 keeps
 * nothing from now on. A NULL cx is a no-op. Thread-safe. */
KILN_API void kiln_ctx_set_cache_limit(kiln_ctx *cx, size_t bytes);

/* The effective log level (KILN_LOG_OFF for a NULL cx), and a way to change it: a NULL
 * cx, or a level outside KILN_LOG_OFF..KILN_LOG_DEBUG (KILN_LOG_UNSET included), is
 * ignored. */
KILN_API kiln_log_level kiln_ctx_log_level(const kiln_ctx *cx);
KILN_API void kiln_ctx_set_log_level(kiln_ctx *cx, kiln_log_level level);

/* Logs a line through the ctx's sink if `level` is enabled; the line is cut at 1023
 * bytes. A NULL cx or fmt, or a level outside KILN_LOG_ERROR..KILN_LOG_DEBUG, logs
 * nothing. Records no error. */
KILN_API void kiln_ctx_log(kiln_ctx *cx, kiln_log_level level, const char *fmt, ...)
    KILN_PRINTF_LIKE(3, 4);

/* Parses "error", "warn" or "warning", "info", "debug", "off" or "none" (any case). Returns
 * false and leaves *out_level alone for anything else, or when an argument is NULL. Pure;
 * thread-safe. */
KILN_API bool kiln_log_level_parse(const char *text, kiln_log_level *out_level);

/* Scopes own the tensors made while they are the innermost open scope. kiln_scope_end
 * releases the scope's reference to each of them: a tensor survives only if someone
 * retained it (kiln_tensor_retain) or it was moved out (kiln_scope_escape). Scopes nest;
 * the ctx has an outermost scope of its own that kiln_ctx_release ends.
 * kiln_scope_begin fails only with RESOURCE_EXHAUSTED; kiln_scope_end without a matching
 * begin is FAILED_PRECONDITION. Both return the status and record errors in the ctx; a
 * NULL cx is INVALID_ARGUMENT (nothing recorded). */
KILN_API kiln_status kiln_scope_begin(kiln_ctx *cx);
KILN_API kiln_status kiln_scope_end(kiln_ctx *cx);

/* The number of open scopes, not counting the ctx's own: 0 right after creation (and
 * for a NULL cx). */
KILN_API int kiln_scope_depth(const kiln_ctx *cx);

#ifdef __cplusplus
}
#endif

#endif
