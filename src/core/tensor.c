/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor objects: creation from host memory, properties, reading back, lifetime. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buffer_cache.h"
#include "base/ctx_internal.h"
#include "core/element.h"
#include "core/tensor_internal.h"

bool kiln__check_dtype_shape(kiln_ctx *cx, const char *fn, kiln_dtype dtype,
                             const kiln_shape *shape, int64_t *out_numel, size_t *out_nbytes) {
    if (!kiln_dtype_is_valid(dtype)) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: dtype %d is not a valid kiln_dtype", fn,
                           (int)dtype);
        return false;
    }
    if (shape->rank < 0 || shape->rank > KILN_MAX_RANK) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: shape has rank %d; expected 0 to %d (KILN_MAX_RANK)", fn,
                           (int)shape->rank, KILN_MAX_RANK);
        return false;
    }
    char text[KILN_MAX_RANK * 21 + 3];
    /* One pass: the rules of kiln_shape_numel and kiln_shape_nbytes (the product of the
     * non-zero dimensions and its byte size must fit), checked once per tensor made. */
    int64_t extent = 1, bytes;
    bool empty = false, overflow = false;
    for (int32_t i = 0; i < shape->rank; i++) {
        int64_t d = shape->dims[i];
        if (d < 0) {
            kiln_shape_format(shape, text, sizeof text);
            kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "%s: shape %s has a negative dimension at axis %d", fn, text,
                               (int)i);
            return false;
        }
        if (d == 0)
            empty = true;
        else
            overflow |= __builtin_mul_overflow(extent, d, &extent);
    }
    overflow |= __builtin_mul_overflow(extent, (int64_t)kiln_dtype_size(dtype), &bytes) ||
                (uint64_t)bytes > (uint64_t)SIZE_MAX;
    if (!overflow) {
        *out_numel = empty ? 0 : extent;
        *out_nbytes = empty ? 0 : (size_t)bytes;
        return true;
    }
    kiln_shape_format(shape, text, sizeof text);
    kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                       "%s: shape %s of %s is too large: its byte size overflows", fn, text,
                       kiln_dtype_name(dtype));
    return false;
}

static void drop_scope_reference(kiln__owned *node) {
    kiln_tensor *t = (kiln_tensor *)(void *)((char *)node - offsetof(kiln_tensor, owned));
    kiln_tensor_release(t);
}

/* Frees or gives back the data of an unwrapped storage. */
static void free_data(kiln__storage *s) {
    if (s->in_block) return; /* it goes with the record */
    if (s->cache)
        kiln__buffer_cache_free(s->cache, s->data, s->capacity);
    else
        kiln__raw_free(&s->allocator, s->data, s->nbytes);
}

/* Frees the record (and the data sharing its block). */
static void free_record(kiln__storage *s) {
    if (s->in_block) {
        kiln__buffer_cache_free(s->cache, s, s->capacity);
        return;
    }
    kiln_allocator a = s->allocator;
    kiln__raw_free(&a, s, sizeof *s);
}

void kiln__storage_free(kiln__storage *s) {
    free_data(s);
    free_record(s);
}

void kiln__storage_release(kiln__storage *s) {
    if (!s) return; /* a traced tensor */
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
    if (s->recycle) {
        s->recycle(s);
        return;
    }
    if (s->wrapped) {
        if (s->deleter) s->deleter(s->data, s->deleter_user);
    } else {
        free_data(s);
    }
    free_record(s);
}

/* Makes the tensor object around `storage` (which it takes over) and hands it to the
 * innermost scope. On failure releases nothing but what it allocated itself. */
static kiln_tensor *tensor_around(kiln_ctx *cx, const char *fn, kiln_dtype dtype,
                                  const kiln_shape *shape, int64_t numel, size_t nbytes,
                                  kiln__storage *storage) {
    size_t capacity;
    kiln_tensor *t =
        kiln__buffer_cache_alloc(cx->cache, sizeof *t, _Alignof(kiln_tensor), &capacity);
    if (!t) {
        kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory allocating %zu bytes for %s",
                           sizeof *t, fn);
        return NULL;
    }
    memset(t, 0, sizeof *t);
    t->cache = cx->cache;
    t->capacity = capacity;
    atomic_init(&t->refs, 1);
    t->dtype = dtype;
    t->shape.rank = shape->rank;
    memcpy(t->shape.dims, shape->dims, (size_t)shape->rank * sizeof shape->dims[0]);
    t->numel = numel;
    t->nbytes = nbytes;
    t->storage = storage;
    t->byte_offset = 0;
    t->allocator = cx->allocator;
    t->owned.drop = drop_scope_reference;
    kiln__scope_adopt(cx, &t->owned);
    return t;
}

kiln__storage *kiln__storage_new(kiln_ctx *cx, const char *fn, size_t nbytes) {
    return kiln__storage_new_on(cx, fn, nbytes, cx->device);
}

/* Versions come from one counter in blocks of VERSION_BLOCK per thread, so that taking one
 * (every kernel's result does) is a thread-local increment, not a shared atomic. */
#define VERSION_BLOCK ((uint64_t)1 << 16)

uint64_t kiln__storage_version_next(void) {
    static atomic_uint_fast64_t counter;
    static _Thread_local uint64_t next, end;
    if (next == end) {
        next = (uint64_t)atomic_fetch_add_explicit(&counter, VERSION_BLOCK, memory_order_relaxed) +
               1;
        end = next + VERSION_BLOCK;
    }
    return next++;
}

static kiln__storage *storage_init(kiln__storage *s, kiln_ctx *cx, size_t nbytes,
                                   kiln_device device) {
    memset(s, 0, sizeof *s);
    atomic_init(&s->refs, 1);
    atomic_init(&s->version, kiln__storage_version_next());
    s->device = device;
    s->nbytes = nbytes;
    s->allocator = cx->allocator;
    return s;
}

/* A storage whose record and data are one block of the cache. */
static kiln__storage *storage_in_block(kiln_ctx *cx, const char *fn, size_t nbytes,
                                       kiln_device device) {
    size_t capacity;
    void *block = kiln__buffer_cache_alloc(cx->cache, KILN__STORAGE_HEAD + nbytes,
                                           KILN_DATA_ALIGNMENT, &capacity);
    if (!block) {
        kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory allocating %zu bytes for %s",
                           nbytes, fn);
        return NULL;
    }
    kiln__storage *s = storage_init(block, cx, nbytes, device);
    s->data = (char *)block + KILN__STORAGE_HEAD;
    s->cache = cx->cache;
    s->capacity = capacity;
    s->in_block = true;
    return s;
}

kiln__storage *kiln__storage_new_on(kiln_ctx *cx, const char *fn, size_t nbytes,
                                    kiln_device device) {
    if (nbytes > 0 && nbytes <= KILN__STORAGE_IN_BLOCK_MAX)
        return storage_in_block(cx, fn, nbytes, device);
    kiln__storage *s = kiln__alloc(cx, sizeof *s, _Alignof(kiln__storage), fn);
    if (!s) return NULL;
    storage_init(s, cx, nbytes, device);
    if (nbytes > 0) {
        s->data = kiln__buffer_cache_alloc(cx->cache, nbytes, KILN_DATA_ALIGNMENT, &s->capacity);
        if (s->data) {
            s->cache = cx->cache;
        } else {
            kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED,
                               "out of memory allocating %zu bytes for %s", nbytes, fn);
            kiln__free(cx, s, sizeof *s);
            return NULL;
        }
    }
    return s;
}

kiln_tensor *kiln__tensor_new(kiln_ctx *cx, const char *fn, kiln_dtype dtype, kiln_shape shape) {
    int64_t numel;
    size_t nbytes;
    if (!kiln__check_dtype_shape(cx, fn, dtype, &shape, &numel, &nbytes)) return NULL;
    kiln__storage *s = kiln__storage_new(cx, fn, nbytes);
    if (!s) return NULL;
    kiln_tensor *t = tensor_around(cx, fn, dtype, &shape, numel, nbytes, s);
    if (!t) kiln__storage_release(s);
    return t;
}

kiln_tensor *kiln__tensor_new_on(kiln_ctx *cx, const char *fn, kiln_dtype dtype, kiln_shape shape,
                                 kiln__storage *storage) {
    int64_t numel;
    size_t nbytes;
    kiln_tensor *t = NULL;
    if (kiln__check_dtype_shape(cx, fn, dtype, &shape, &numel, &nbytes)) {
        if (nbytes <= storage->nbytes)
            t = tensor_around(cx, fn, dtype, &shape, numel, nbytes, storage);
        else
            kiln_ctx_set_error(cx, KILN_INTERNAL, "%s: a tensor of %zu bytes over storage of %zu",
                               fn, nbytes, storage->nbytes);
    }
    if (!t) kiln__storage_release(storage);
    return t;
}

kiln_tensor *kiln__tensor_new_traced(kiln_ctx *cx, const char *fn, kiln_dtype dtype,
                                     kiln_shape shape, void *trace) {
    int64_t numel;
    size_t nbytes;
    if (!kiln__check_dtype_shape(cx, fn, dtype, &shape, &numel, &nbytes)) return NULL;
    kiln_tensor *t = tensor_around(cx, fn, dtype, &shape, numel, nbytes, NULL);
    if (t) t->trace = trace;
    return t;
}

kiln_status kiln__traced_error(kiln_ctx *cx, const char *fn) {
    return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                              "%s: the tensor is traced (a placeholder inside kiln_lower): it "
                              "has no values to read until the compiled function runs",
                              fn);
}

bool kiln_tensor_is_traced(const kiln_tensor *t) { return t && t->trace; }

kiln_status kiln__dead_error(kiln_ctx *cx, const char *fn, const kiln_tensor *t) {
    return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION, "%s: %s", fn, t->dead);
}

kiln_status kiln__host_check(kiln_ctx *cx, const char *fn, const kiln_tensor *t) {
    if (t->nbytes == 0 || kiln_tensor_data(t)) return KILN_OK;
    kiln_device d = t->storage ? t->storage->device : KILN_DEVICE_CPU;
    return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                              "%s: the tensor is on device %s:%d, whose memory the host cannot "
                              "read (copy it with kiln_tensor_to_host or kiln_tensor_to_device)",
                              fn, kiln_device_type_name(d.type), (int)d.id);
}

char *kiln__dead_message_new(kiln_ctx *cx, const kiln_tensor *t, const char *text) {
    size_t n = strlen(text) + 1;
    char *m = kiln__raw_alloc(&t->allocator, n, 1);
    if (!m) {
        kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory marking a tensor donated");
        return NULL;
    }
    memcpy(m, text, n);
    return m;
}

void kiln__dead_message_free(const kiln_tensor *t, char *message) {
    if (message) kiln__raw_free(&t->allocator, message, strlen(message) + 1);
}

void kiln__tensor_kill(kiln_tensor *t, char *message) {
    t->dead = message;
    kiln__storage_release(t->storage);
    t->storage = NULL;
    t->byte_offset = 0;
}

kiln_tensor *kiln__tensor_view(kiln_ctx *cx, const char *fn, kiln_tensor *t, kiln_dtype dtype,
                               kiln_shape shape) {
    int64_t numel;
    size_t nbytes;
    if (!kiln__check_dtype_shape(cx, fn, dtype, &shape, &numel, &nbytes)) return NULL;
    if (!t->storage || nbytes > t->nbytes) {
        kiln_ctx_set_error(cx, KILN_INTERNAL, "%s: internal: a view of %zu bytes over %zu", fn,
                           nbytes, t->nbytes);
        return NULL;
    }
    kiln_tensor *v = tensor_around(cx, fn, dtype, &shape, numel, nbytes, t->storage);
    if (!v) return NULL;
    atomic_fetch_add_explicit(&t->storage->refs, 1, memory_order_relaxed);
    v->byte_offset = t->byte_offset;
    return v;
}

void *kiln__tensor_mutable_data(kiln_tensor *t) {
    kiln__storage *s = t->storage;
    if (!s) return NULL;
    /* about to change: whatever was derived from the old bytes no longer matches */
    if (atomic_load_explicit(&s->version, memory_order_relaxed) != 0)
        atomic_store_explicit(&s->version, kiln__storage_version_next(), memory_order_release);
    return s->data ? (char *)s->data + t->byte_offset : NULL;
}

/* Checks host data offered for a tensor of dtype and *shape: a valid pair (of *numel
 * elements), nbytes exactly its size (*need), data not NULL unless that is 0. False with
 * the error recorded in cx. */
static bool check_host_data(kiln_ctx *cx, const char *fn, kiln_dtype dtype,
                            const kiln_shape *shape, const void *data, size_t nbytes,
                            int64_t *numel, size_t *need) {
    if (!kiln__check_dtype_shape(cx, fn, dtype, shape, numel, need)) return false;
    if (nbytes != *need) {
        char text[KILN_MAX_RANK * 21 + 3];
        kiln_shape_format(shape, text, sizeof text);
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: nbytes is %zu; a %s%s tensor needs %zu",
                           fn, nbytes, kiln_dtype_name(dtype), text, *need);
        return false;
    }
    if (!data && *need > 0) {
        kiln__null_argument(cx, fn, "data");
        return false;
    }
    return true;
}

kiln_tensor *kiln_tensor_from_host(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape,
                                   const void *data, size_t nbytes) {
    static const char fn[] = "kiln_tensor_from_host";
    if (!cx) return NULL;
    int64_t numel;
    size_t need;
    if (!check_host_data(cx, fn, dtype, &shape, data, nbytes, &numel, &need)) return NULL;
    kiln_tensor *t = kiln__tensor_new(cx, fn, dtype, shape);
    if (t && need > 0) memcpy(kiln__tensor_mutable_data(t), data, need);
    return t;
}

static kiln_tensor *wrap_host(kiln_ctx *cx, const char *fn, kiln_dtype dtype, kiln_shape shape,
                              void *data, size_t nbytes, kiln_deleter_fn deleter, void *user,
                              bool writable) {
    if (!cx) return NULL;
    int64_t numel;
    size_t need;
    if (!check_host_data(cx, fn, dtype, &shape, data, nbytes, &numel, &need)) return NULL;
    if ((uintptr_t)data % kiln_dtype_size(dtype) != 0) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: data %p is not aligned to %zu bytes, the size of %s", fn, data,
                           kiln_dtype_size(dtype), kiln_dtype_name(dtype));
        return NULL;
    }
    kiln__storage *s = kiln__alloc(cx, sizeof *s, _Alignof(kiln__storage), fn);
    if (!s) return NULL;
    memset(s, 0, sizeof *s);
    atomic_init(&s->refs, 1);
    atomic_init(&s->version, kiln__storage_version_next());
    s->device = cx->device;
    s->data = data;
    s->nbytes = nbytes;
    s->allocator = cx->allocator;
    s->wrapped = true;
    s->read_only = !writable;
    kiln_tensor *t = tensor_around(cx, fn, dtype, &shape, numel, need, s);
    if (!t) {
        /* The memory stays the caller's: free our record without calling the deleter. */
        kiln__free(cx, s, sizeof *s);
        return NULL;
    }
    s->deleter = deleter;
    s->deleter_user = user;
    return t;
}

kiln_tensor *kiln_tensor_wrap_host(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape, void *data,
                                   size_t nbytes, kiln_deleter_fn deleter, void *user) {
    return wrap_host(cx, "kiln_tensor_wrap_host", dtype, shape, data, nbytes, deleter, user, false);
}

kiln_tensor *kiln_tensor_wrap_host_writable(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape,
                                            void *data, size_t nbytes, kiln_deleter_fn deleter,
                                            void *user) {
    return wrap_host(cx, "kiln_tensor_wrap_host_writable", dtype, shape, data, nbytes, deleter,
                     user, true);
}

kiln_dtype kiln_tensor_dtype(const kiln_tensor *t) { return t ? t->dtype : KILN_DTYPE_COUNT; }

int32_t kiln_tensor_rank(const kiln_tensor *t) { return t ? t->shape.rank : -1; }

int64_t kiln_tensor_dim(const kiln_tensor *t, int32_t axis) {
    if (!t) return -1;
    if (axis < 0) axis += t->shape.rank;
    if (axis < 0 || axis >= t->shape.rank) return -1;
    return t->shape.dims[axis];
}

const kiln_shape *kiln_tensor_shape(const kiln_tensor *t) { return t ? &t->shape : NULL; }

int64_t kiln_tensor_numel(const kiln_tensor *t) { return t ? t->numel : 0; }

size_t kiln_tensor_nbytes(const kiln_tensor *t) { return t ? t->nbytes : 0; }

kiln_device kiln_tensor_device(const kiln_tensor *t) {
    return t && t->storage ? t->storage->device : KILN_DEVICE_CPU;
}

const void *kiln_tensor_data(const kiln_tensor *t) {
    if (!t || t->dead || t->nbytes == 0 || !t->storage ||
        t->storage->device.type != KILN_DEVICE_TYPE_CPU)
        return NULL;
    return (const char *)t->storage->data + t->byte_offset;
}

double kiln_tensor_item(kiln_ctx *cx, const kiln_tensor *t, int64_t index) {
    if (!cx) return NAN;
    if (!t) {
        kiln__null_argument(cx, "kiln_tensor_item", "tensor");
        return NAN;
    }
    if (t->trace) {
        kiln__traced_error(cx, "kiln_tensor_item");
        return NAN;
    }
    if (t->dead) {
        kiln__dead_error(cx, "kiln_tensor_item", t);
        return NAN;
    }
    if (index < 0 || index >= t->numel) {
        kiln_ctx_set_error(cx, KILN_OUT_OF_RANGE,
                           "kiln_tensor_item: index %lld is out of range for %lld elements",
                           (long long)index, (long long)t->numel);
        return NAN;
    }
    if (kiln__host_check(cx, "kiln_tensor_item", t) != KILN_OK) return NAN;
    return kiln__element_load(kiln_tensor_data(t), t->dtype, index);
}

kiln_tensor *kiln_tensor_retain(kiln_tensor *t) {
    if (t) atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

kiln_tensor *kiln_move(kiln_tensor *t) {
    if (t && t->storage && !t->dead) t->moved = true; /* a traced tensor has no memory */
    return t;
}

bool kiln__tensor_exclusive(const kiln_tensor *t) {
    const kiln__storage *s = t->storage;
    return s && s->data && !s->wrapped && !s->read_only && !t->dead &&
           atomic_load_explicit(&t->refs, memory_order_acquire) == 1 &&
           atomic_load_explicit(&s->refs, memory_order_acquire) == 1;
}

void kiln_tensor_release(kiln_tensor *t) {
    if (!t) return;
    if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1) return;
    kiln__owned_unlink(&t->owned); /* an early release of a scope-owned tensor */
    kiln__storage_release(t->storage);
    kiln_allocator a = t->allocator;
    if (t->dead) kiln__raw_free(&a, t->dead, strlen(t->dead) + 1);
    if (t->cache)
        kiln__buffer_cache_free(t->cache, t, t->capacity);
    else
        kiln__raw_free(&a, t, sizeof *t);
}

kiln_tensor *kiln_scope_escape(kiln_ctx *cx, kiln_tensor *t) {
    if (!cx) return NULL;
    if (!t) {
        kiln__null_argument(cx, "kiln_scope_escape", "tensor");
        return NULL;
    }
    if (!kiln__scope_owns_innermost(cx, &t->owned)) {
        kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                           "kiln_scope_escape: the tensor is not owned by the innermost scope");
        return NULL;
    }
    kiln__scope_move_outer(cx, &t->owned);
    return t;
}

void kiln__tensor_discard(kiln_tensor *t) {
    if (!t) return;
    kiln__owned_unlink(&t->owned); /* the reference being dropped is the scope's */
    kiln_tensor_release(t);
}
