/* SPDX-License-Identifier: Apache-2.0 */
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
    kiln_allocator allocator; /* frees this struct, and data unless wrapped or cached */
    /* Data from the ctx's buffer cache (base/buffer_cache.h), a block of `capacity` bytes
     * given back to it at the end; NULL for data from the allocator or wrapped. */
    struct kiln__buffer_cache *cache;
    size_t capacity;
    /* Small data shares one block of the cache with this record (KILN__STORAGE_HEAD bytes
     * of record, then the data): one allocation per tensor, given back in one piece. */
    bool in_block;
    kiln_deleter_fn deleter; /* wrapped memory: the user's deleter (may be NULL) */
    void *deleter_user;
    bool wrapped;
    /* Memory kiln must not write (kiln_tensor_wrap_host): donating its tensor never lets a
     * result take it in place. */
    bool read_only;
    /* A pooled buffer (an executable's result pool): when set, the last release hands the
     * storage to recycle instead of freeing it; recycle then owns it (keeps it for reuse, or
     * frees it with kiln__storage_free). recycle_next links it while it waits in a pool. */
    void (*recycle)(struct kiln__storage *s);
    void *recycle_user;
    struct kiln__storage *recycle_next;
    /* What the data holds, as a number no other contents ever had: a fresh value of one
     * process-wide counter when the storage is made and again whenever kiln hands out its
     * data for writing (kiln__tensor_mutable_data: every kernel's result, a donated buffer
     * taken in place, a recycled result buffer, a kiln_move overwrite). So an unchanged
     * version means unchanged bytes, and a copy derived from them (a kernel's packed
     * weights) may be reused. 0: not tracked (memory of an executable's arena, a kernel's
     * scratch views): never the same contents twice. */
    atomic_uint_fast64_t version;
} kiln__storage;

/* A version no storage has had (see kiln__storage.version); never 0. Thread-safe. */
uint64_t kiln__storage_version_next(void);

/* The version of what t's data holds now (0: untracked, or no storage). */
static inline uint64_t kiln__tensor_version(const kiln_tensor *t);

/* Where a storage's data starts in its block when they share one (in_block), and the most
 * data stored that way: what fits a block of 1 KiB, where the cache's classes are 64-byte
 * steps, so sharing wastes no more than a separate block would. */
#define KILN__STORAGE_HEAD ((sizeof(kiln__storage) + 63) / 64 * 64)
#define KILN__STORAGE_IN_BLOCK_MAX ((size_t)1024 - KILN__STORAGE_HEAD)

struct kiln_tensor {
    kiln__owned owned; /* the scope's reference, if a scope holds one */
    atomic_long refs;  /* all references, the scope's included */
    kiln_dtype dtype;
    kiln_shape shape;
    int64_t numel;
    size_t nbytes;
    kiln__storage *storage; /* NULL for a traced tensor */
    size_t byte_offset;
    kiln_allocator allocator; /* frees the dead message (and this struct when cache is NULL) */
    /* The cache block this struct is (tensor_around), of `capacity` bytes; NULL for a
     * struct inside another object (an executable's call state). */
    struct kiln__buffer_cache *cache;
    size_t capacity;
    /* A traced tensor stands for an IR value while kiln_lower traces a function: `trace`
     * is that value (opaque here), and the tensor has no storage. */
    void *trace;
    /* A dead tensor was donated to an executable (kiln_exe_call): its storage is gone and
     * every use reports FAILED_PRECONDITION with this message ("tensor was donated to
     * 'step' as 'x'"), allocated with `allocator`. NULL while the tensor is alive. */
    char *dead;
    /* kiln_move: the caller gave up a reference to the next elementwise builder that takes
     * this tensor (frontend/builders_elementwise.c). */
    bool moved;
};

static inline uint64_t kiln__tensor_version(const kiln_tensor *t) {
    return t && t->storage ? atomic_load_explicit(&t->storage->version, memory_order_acquire) : 0;
}

/* Checks dtype and shape for `fn`, recording INVALID_ARGUMENT with a message naming the
 * function and argument on failure. Computes the element count and byte size. */
bool kiln__check_dtype_shape(kiln_ctx *cx, const char *fn, kiln_dtype dtype,
                             const kiln_shape *shape, int64_t *out_numel, size_t *out_nbytes);

/* New storage of nbytes uninitialised bytes (data NULL when 0) from cx's allocator, with
 * one reference; NULL with RESOURCE_EXHAUSTED recorded (naming fn) when out of memory. */
kiln__storage *kiln__storage_new(kiln_ctx *cx, const char *fn, size_t nbytes);
/* The same, tagged with `device` (host-visible memory; a device with memory of its own
 * allocates through its backend). */
kiln__storage *kiln__storage_new_on(kiln_ctx *cx, const char *fn, size_t nbytes,
                                    kiln_device device);

/* Drops one reference; the last frees the storage (or hands it to its recycle hook, or to
 * the deleter of wrapped memory). NULL is a no-op. */
void kiln__storage_release(kiln__storage *s);

/* Frees an unwrapped storage and its data with its allocator, whatever its count (for a
 * recycle hook that does not keep it). */
void kiln__storage_free(kiln__storage *s);

/* A new tensor over all of `storage` (the tensor takes over the caller's reference, and
 * releases it on failure), adopted by the innermost scope. NULL with INVALID_ARGUMENT for
 * a bad dtype or shape, INTERNAL when the storage holds fewer bytes than the tensor. */
kiln_tensor *kiln__tensor_new_on(kiln_ctx *cx, const char *fn, kiln_dtype dtype, kiln_shape shape,
                                 kiln__storage *storage);

/* A new tensor with fresh, uninitialised storage, adopted by the innermost scope. */
kiln_tensor *kiln__tensor_new(kiln_ctx *cx, const char *fn, kiln_dtype dtype, kiln_shape shape);

/* A traced tensor (no storage) standing for the IR value `trace`, adopted by the
 * innermost scope. */
kiln_tensor *kiln__tensor_new_traced(kiln_ctx *cx, const char *fn, kiln_dtype dtype,
                                     kiln_shape shape, void *trace);

/* The IR value of a traced tensor, or NULL for a concrete one. */
static inline void *kiln__tensor_trace(const kiln_tensor *t) { return t ? t->trace : NULL; }

/* Records FAILED_PRECONDITION "<fn>: the tensor is traced ..." and returns it. */
kiln_status kiln__traced_error(kiln_ctx *cx, const char *fn);

/* The message of a dead (donated) tensor, or NULL for a live one. */
static inline const char *kiln__tensor_dead(const kiln_tensor *t) { return t ? t->dead : NULL; }

/* Records FAILED_PRECONDITION "<fn>: <t's death message>" and returns it. */
kiln_status kiln__dead_error(kiln_ctx *cx, const char *fn, const kiln_tensor *t);

/* KILN_OK when the host can read t's bytes in place (kiln_tensor_data), or t has none;
 * else records FAILED_PRECONDITION "<fn>: the tensor is on device <d>, whose memory the
 * host cannot read ..." and returns it. */
kiln_status kiln__host_check(kiln_ctx *cx, const char *fn, const kiln_tensor *t);

/* A copy of `text` allocated with t's allocator, to kill t with later; NULL with
 * RESOURCE_EXHAUSTED recorded in cx. Free an unused one with kiln__dead_message_free. */
char *kiln__dead_message_new(kiln_ctx *cx, const kiln_tensor *t, const char *text);
void kiln__dead_message_free(const kiln_tensor *t, char *message);

/* Marks a live concrete tensor dead with `message` (from kiln__dead_message_new, taken
 * over) and drops its reference to its storage. Its dtype and shape stay readable. */
void kiln__tensor_kill(kiln_tensor *t, char *message);

/* A new tensor of `dtype` and `shape` over t's storage at t's offset (no copy: the
 * storage is shared), adopted by the innermost scope. Its byte size must not exceed t's;
 * t must be concrete and alive. */
kiln_tensor *kiln__tensor_view(kiln_ctx *cx, const char *fn, kiln_tensor *t, kiln_dtype dtype,
                               kiln_shape shape);

/* Writable data of a tensor the caller just made, or a result a kernel writes (NULL when
 * empty). Gives a tracked storage a new version: call it only to write. */
void *kiln__tensor_mutable_data(kiln_tensor *t);

/* Drops the scope's reference to a temporary that library code made (and so the scope
 * owns), unlinking it first: unlike kiln_tensor_release, this is right even when someone
 * else (a module holding it as a constant) also holds a reference. */
void kiln__tensor_discard(kiln_tensor *t);

/* Whether t is the only holder of memory kiln may overwrite: one reference to t, no other
 * tensor on its storage, host-visible data, neither wrapped user memory nor read-only. An
 * op may then write its result over t's data once it has read it. */
bool kiln__tensor_exclusive(const kiln_tensor *t);

#endif
