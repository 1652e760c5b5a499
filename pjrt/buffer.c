/* SPDX-License-Identifier: Apache-2.0 */
/* PJRT buffers: a kiln tensor on one of the client's devices, made from host memory (any
 * byte strides), read back to it, copied between devices, deleted or donated. Transfers
 * complete before the call returns, so every event handed out is already complete. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/plugin.h"

/* The buffer an args struct names (in `field`), or an INVALID_ARGUMENT error. */
#define BUFFER(args, field)         \
    PJRT_Buffer *b = (args)->field; \
    if (!b)                         \
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: buffer is NULL", __func__);

/* ---- element types ----------------------------------------------------------------------- */

static const struct {
    PJRT_Buffer_Type type;
    kiln_dtype dtype;
} dtype_map[] = {
    {PJRT_Buffer_Type_PRED, KILN_BOOL}, {PJRT_Buffer_Type_S8, KILN_I8},
    {PJRT_Buffer_Type_S16, KILN_I16},   {PJRT_Buffer_Type_S32, KILN_I32},
    {PJRT_Buffer_Type_S64, KILN_I64},   {PJRT_Buffer_Type_U8, KILN_U8},
    {PJRT_Buffer_Type_U16, KILN_U16},   {PJRT_Buffer_Type_U32, KILN_U32},
    {PJRT_Buffer_Type_U64, KILN_U64},   {PJRT_Buffer_Type_F16, KILN_F16},
    {PJRT_Buffer_Type_BF16, KILN_BF16}, {PJRT_Buffer_Type_F32, KILN_F32},
    {PJRT_Buffer_Type_F64, KILN_F64},   {PJRT_Buffer_Type_C64, KILN_C64},
    {PJRT_Buffer_Type_C128, KILN_C128},
    /* the narrow types, one element per byte (the bits low) */
    {PJRT_Buffer_Type_S2, KILN_I2},
    {PJRT_Buffer_Type_S4, KILN_I4},
    {PJRT_Buffer_Type_U2, KILN_U2},
    {PJRT_Buffer_Type_U4, KILN_U4},
    {PJRT_Buffer_Type_F8E4M3FN, KILN_F8E4M3FN},
    {PJRT_Buffer_Type_F8E5M2, KILN_F8E5M2},
    {PJRT_Buffer_Type_F8E4M3FNUZ, KILN_F8E4M3FNUZ},
    {PJRT_Buffer_Type_F8E5M2FNUZ, KILN_F8E5M2FNUZ},
    {PJRT_Buffer_Type_F8E4M3B11FNUZ, KILN_F8E4M3B11FNUZ},
    {PJRT_Buffer_Type_F8E4M3, KILN_F8E4M3},
    {PJRT_Buffer_Type_F8E3M4, KILN_F8E3M4},
    {PJRT_Buffer_Type_F8E8M0FNU, KILN_F8E8M0FNU},
    {PJRT_Buffer_Type_F4E2M1FN, KILN_F4E2M1FN},
};

bool kiln_pjrt_dtype(PJRT_Buffer_Type type, kiln_dtype *out) {
    for (size_t i = 0; i < sizeof dtype_map / sizeof dtype_map[0]; i++)
        if (dtype_map[i].type == type) {
            *out = dtype_map[i].dtype;
            return true;
        }
    return false;
}

PJRT_Buffer_Type kiln_pjrt_buffer_type(kiln_dtype dtype) {
    for (size_t i = 0; i < sizeof dtype_map / sizeof dtype_map[0]; i++)
        if (dtype_map[i].dtype == dtype) return dtype_map[i].type;
    return PJRT_Buffer_Type_INVALID;
}

const char *kiln_pjrt_type_name(PJRT_Buffer_Type type) {
    static const char *const names[] = {
        "invalid",    "pred",   "s8",       "s16",           "s32",
        "s64",        "u8",     "u16",      "u32",           "u64",
        "f16",        "f32",    "f64",      "bf16",          "c64",
        "c128",       "f8e5m2", "f8e4m3fn", "f8e4m3b11fnuz", "f8e5m2fnuz",
        "f8e4m3fnuz", "s4",     "u4",       "token",         "s2",
        "u2",         "f8e4m3", "f8e3m4",   "f8e8m0fnu",     "f4e2m1fn",
        "s1",         "u1"};
    return (unsigned)type < sizeof names / sizeof names[0] ? names[type] : "unknown";
}

/* ---- making buffers ---------------------------------------------------------------------- */

/* A buffer of that type and shape, its ready event complete or not; NULL when out of
 * memory. */
static PJRT_Buffer *buffer_alloc(PJRT_Client *c, PJRT_Device *d, PJRT_Buffer_Type type,
                                 int32_t rank, const int64_t *dims, bool ready) {
    PJRT_Buffer *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->ready = kiln_pjrt_event_new(ready, NULL);
    if (!b->ready) {
        free(b);
        return NULL;
    }
    atomic_init(&b->refs, 1);
    pthread_mutex_init(&b->lock, NULL);
    b->client = c;
    b->device = d;
    b->type = type;
    b->rank = rank;
    for (int32_t i = 0; i < rank; i++) {
        b->dims[i] = dims[i];
        b->minor_to_major[i] = rank - 1 - i;
    }
    return b;
}

PJRT_Buffer *kiln_pjrt_buffer_new(PJRT_Client *c, PJRT_Device *d, kiln_tensor *t) {
    const kiln_shape *s = kiln_tensor_shape(t);
    PJRT_Buffer *b =
        buffer_alloc(c, d, kiln_pjrt_buffer_type(kiln_tensor_dtype(t)), s->rank, s->dims, true);
    if (b) b->tensor = t;
    return b;
}

PJRT_Buffer *kiln_pjrt_buffer_pending(PJRT_Client *c, PJRT_Device *d, PJRT_Buffer_Type type,
                                      int32_t rank, const int64_t *dims) {
    return buffer_alloc(c, d, type, rank, dims, false);
}

void kiln_pjrt_buffer_fulfill(PJRT_Buffer *b, kiln_tensor *t, PJRT_Error_Code code,
                              const char *message) {
    pthread_mutex_lock(&b->lock);
    if (b->deleted) { /* deleted while it was being made */
        kiln_tensor_release(t);
        t = NULL;
    }
    b->tensor = t;
    pthread_mutex_unlock(&b->lock);
    kiln_pjrt_event_complete(b->ready, code, message);
}

PJRT_Buffer *kiln_pjrt_buffer_retain(PJRT_Buffer *b) {
    atomic_fetch_add(&b->refs, 1);
    return b;
}

void kiln_pjrt_buffer_release(PJRT_Buffer *b) {
    if (!b || atomic_fetch_sub(&b->refs, 1) != 1) return;
    kiln_tensor_release(b->tensor);
    kiln_pjrt_event_release(b->ready);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

bool kiln_pjrt_buffer_mark_deleted(PJRT_Buffer *b) {
    pthread_mutex_lock(&b->lock);
    bool was = b->deleted;
    b->deleted = true;
    pthread_mutex_unlock(&b->lock);
    return !was;
}

PJRT_Error *kiln_pjrt_buffer_take(PJRT_Buffer *b, const char *fn, kiln_pjrt_take how,
                                  kiln_tensor **out) {
    *out = NULL;
    PJRT_Error *e = kiln_pjrt_event_wait(b->ready);
    if (e) return e;
    pthread_mutex_lock(&b->lock);
    if ((b->deleted && how == KILN_PJRT_READ) || !b->tensor) {
        pthread_mutex_unlock(&b->lock);
        return kiln_pjrt_error(PJRT_Error_Code_FAILED_PRECONDITION,
                               "%s: the buffer was deleted or donated", fn);
    }
    if (how == KILN_PJRT_CONSUME) {
        *out = b->tensor;
        b->tensor = NULL;
    } else {
        *out = kiln_tensor_retain(b->tensor);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

bool kiln_pjrt_buffer_is_ready(PJRT_Buffer *b) {
    pthread_mutex_lock(&b->ready->lock);
    bool ready = b->ready->ready;
    pthread_mutex_unlock(&b->ready->lock);
    return ready;
}

/* The device a transfer targets: the device named, else the memory's, else the first. */
static PJRT_Device *target(PJRT_Client *c, PJRT_Device *device, PJRT_Memory *memory) {
    if (device) return device;
    if (memory) return memory->device;
    return &c->devices[0];
}

static PJRT_Error *shape_of(const char *fn, const int64_t *dims, size_t rank, kiln_shape *out) {
    if (rank > KILN_MAX_RANK)
        return kiln_pjrt_error(PJRT_Error_Code_UNIMPLEMENTED, "%s: rank %zu is above kiln's %d", fn,
                               rank, KILN_MAX_RANK);
    if (rank && !dims)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: dims is NULL", fn);
    out->rank = (int32_t)rank;
    for (size_t i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: dimension %zu is %lld",
                                   fn, i, (long long)dims[i]);
        out->dims[i] = dims[i];
    }
    return NULL;
}

static PJRT_Error *dtype_of(const char *fn, PJRT_Buffer_Type type, kiln_dtype *out) {
    if (!kiln_pjrt_dtype(type, out))
        return kiln_pjrt_error(PJRT_Error_Code_UNIMPLEMENTED, "%s: kiln has no element type %s", fn,
                               kiln_pjrt_type_name(type));
    return NULL;
}

/* Copies the elements of an array with byte strides into dense row-major order. */
static void gather_strided(unsigned char *dst, const unsigned char *src, const kiln_shape *shape,
                           const int64_t *strides, size_t esize, int32_t dim) {
    if (dim == shape->rank) {
        memcpy(dst, src, esize);
        return;
    }
    size_t inner = esize;
    for (int32_t d = dim + 1; d < shape->rank; d++)
        inner *= (size_t)shape->dims[d];
    for (int64_t i = 0; i < shape->dims[dim]; i++)
        gather_strided(dst + (size_t)i * inner, src + i * strides[dim], shape, strides, esize,
                       dim + 1);
}

/* The tensor of `data` on device d, owned by the caller; NULL with an error in *err. */
static kiln_tensor *tensor_from_host(PJRT_Client *c, PJRT_Device *d, kiln_dtype dtype,
                                     const kiln_shape *shape, const void *data,
                                     const int64_t *strides, size_t n_strides, PJRT_Error **err) {
    static const char fn[] = "PJRT_Client_BufferFromHostBuffer";
    size_t esize = kiln_dtype_size(dtype), nbytes = esize;
    for (int32_t i = 0; i < shape->rank; i++)
        nbytes *= (size_t)shape->dims[i];
    bool dense = true;
    if (strides && n_strides) {
        if (n_strides != (size_t)shape->rank) {
            *err = kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                                   "%s: %zu byte strides for rank %d", fn, n_strides,
                                   (int)shape->rank);
            return NULL;
        }
        int64_t expect = (int64_t)esize;
        for (int32_t i = shape->rank - 1; i >= 0; i--) {
            if (shape->dims[i] != 1 && strides[i] != expect) dense = false;
            expect *= shape->dims[i];
        }
    }
    unsigned char *packed = NULL;
    if (!dense && nbytes) {
        packed = malloc(nbytes);
        if (!packed) {
            *err = kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
            return NULL;
        }
        gather_strided(packed, data, shape, strides, esize, 0);
    }
    kiln_ctx *cx = kiln_pjrt_enter(c);
    if (!cx) {
        free(packed);
        *err = kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
        return NULL;
    }
    kiln_tensor *t = kiln_tensor_from_host(cx, dtype, *shape, packed ? packed : data, nbytes);
    if (t && d->index != 0)
        t = kiln_tensor_to_device(cx, t, (kiln_device){KILN_DEVICE_TYPE_CPU, d->index});
    if (t)
        t = kiln_tensor_retain(t);
    else
        *err = kiln_pjrt_ctx_error(cx, fn);
    kiln_pjrt_leave(c);
    free(packed);
    return t;
}

PJRT_Error *kiln_pjrt_Client_BufferFromHostBuffer(PJRT_Client_BufferFromHostBuffer_Args *args) {
    static const char fn[] = "PJRT_Client_BufferFromHostBuffer";
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_BufferFromHostBuffer_Args, buffer);
    PJRT_Client *c = args->client;
    if (!c) return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: client is NULL", fn);
    kiln_dtype dtype = KILN_F32;
    kiln_shape shape = {0};
    PJRT_Error *e = dtype_of(fn, args->type, &dtype);
    if (!e) e = shape_of(fn, args->dims, args->num_dims, &shape);
    if (e) return e;
    if (args->device_layout && args->device_layout->type == PJRT_Buffer_MemoryLayout_Type_Tiled &&
        args->device_layout->tiled.num_tiles)
        return kiln_pjrt_unimplemented(fn, "tiled device layouts");
    PJRT_Device *d = target(c, args->device, args->memory);
    kiln_tensor *t = tensor_from_host(c, d, dtype, &shape, args->data, args->byte_strides,
                                      args->num_byte_strides, &e);
    if (!t) return e;
    PJRT_Buffer *b = kiln_pjrt_buffer_new(c, d, t);
    if (!b) {
        kiln_tensor_release(t);
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    /* the data was copied: the host buffer is free again */
    args->done_with_host_buffer = kiln_pjrt_event_new(true, NULL);
    if (!args->done_with_host_buffer) {
        PJRT_Buffer_Destroy_Args destroy = {.struct_size = sizeof destroy, .buffer = b};
        kiln_pjrt_Buffer_Destroy(&destroy);
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    args->buffer = b;
    return NULL;
}

PJRT_Error *
kiln_pjrt_Client_CreateUninitializedBuffer(PJRT_Client_CreateUninitializedBuffer_Args *args) {
    static const char fn[] = "PJRT_Client_CreateUninitializedBuffer";
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_CreateUninitializedBuffer_Args, buffer);
    PJRT_Client *c = args->client;
    if (!c) return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: client is NULL", fn);
    kiln_dtype dtype = KILN_F32;
    kiln_shape shape = {0};
    PJRT_Error *e = dtype_of(fn, args->shape_element_type, &dtype);
    if (!e) e = shape_of(fn, args->shape_dims, args->shape_num_dims, &shape);
    if (e) return e;
    PJRT_Device *d = target(c, args->device, args->memory);
    kiln_ctx *cx = kiln_pjrt_enter(c);
    if (!cx) return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    kiln_tensor *t = kiln_zeros(cx, dtype, shape);
    if (t && d->index != 0)
        t = kiln_tensor_to_device(cx, t, (kiln_device){KILN_DEVICE_TYPE_CPU, d->index});
    if (t) t = kiln_tensor_retain(t);
    if (!t) e = kiln_pjrt_ctx_error(cx, fn);
    kiln_pjrt_leave(c);
    if (!t) return e;
    args->buffer = kiln_pjrt_buffer_new(c, d, t);
    if (!args->buffer) {
        kiln_tensor_release(t);
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    return NULL;
}

PJRT_Error *kiln_pjrt_Client_CreateErrorBuffer(PJRT_Client_CreateErrorBuffer_Args *args) {
    static const char fn[] = "PJRT_Client_CreateErrorBuffer";
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_CreateErrorBuffer_Args, buffer);
    PJRT_Client *c = args->client;
    if (!c) return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: client is NULL", fn);
    kiln_shape shape = {0};
    PJRT_Error *e = shape_of(fn, args->shape_dims, args->shape_num_dims, &shape);
    if (e) return e;
    PJRT_Buffer *b = kiln_pjrt_buffer_pending(c, target(c, NULL, args->memory),
                                              args->shape_element_type, shape.rank, shape.dims);
    if (!b) return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    char message[1024];
    snprintf(message, sizeof message, "%.*s", (int)args->error_message_size,
             args->error_message ? args->error_message : "");
    kiln_pjrt_buffer_fulfill(b, NULL,
                             args->error_code == PJRT_Error_Code_OK ? PJRT_Error_Code_UNKNOWN
                                                                    : args->error_code,
                             message);
    args->buffer = b;
    return NULL;
}

/* ---- buffers that another makes: aliases and donations with a dependency ------------------ */

/* What fulfils an alias buffer: the buffer it will alias. */
struct PJRT_FulfillAliasBufferCallback {
    PJRT_Buffer *alias; /* a reference held until fulfilled */
};

PJRT_Error *kiln_pjrt_Client_CreateAliasBuffer(PJRT_Client_CreateAliasBuffer_Args *args) {
    static const char fn[] = "PJRT_Client_CreateAliasBuffer";
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_CreateAliasBuffer_Args, fulfill_alias_buffer_cb);
    PJRT_Client *c = args->client;
    if (!c) return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: client is NULL", fn);
    kiln_dtype dtype;
    kiln_shape shape = {0};
    PJRT_Error *e = dtype_of(fn, args->shape_element_type, &dtype);
    if (!e) e = shape_of(fn, args->shape_dims, args->shape_num_dims, &shape);
    if (e) return e;
    PJRT_FulfillAliasBufferCallback *cb = malloc(sizeof *cb);
    PJRT_Buffer *b = kiln_pjrt_buffer_pending(c, target(c, NULL, args->memory),
                                              args->shape_element_type, shape.rank, shape.dims);
    if (!cb || !b) {
        free(cb);
        kiln_pjrt_buffer_release(b);
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    cb->alias = kiln_pjrt_buffer_retain(b);
    args->alias_buffer = b;
    args->fulfill_alias_buffer_cb = cb;
    return NULL;
}

PJRT_Error *kiln_pjrt_Client_FulfillAliasBuffer(PJRT_Client_FulfillAliasBuffer_Args *args) {
    static const char fn[] = "PJRT_Client_FulfillAliasBuffer";
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_FulfillAliasBuffer_Args, fulfill_alias_buffer_cb);
    PJRT_FulfillAliasBufferCallback *cb = args->fulfill_alias_buffer_cb;
    if (!cb)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "%s: fulfill_alias_buffer_cb is NULL", fn);
    PJRT_Buffer *alias = cb->alias;
    PJRT_Error *e = NULL;
    kiln_tensor *t = NULL;
    if (args->status_code != PJRT_Error_Code_OK) {
        e = kiln_pjrt_error(args->status_code, "%.*s", (int)args->error_message_size,
                            args->error_message ? args->error_message : "");
    } else if (!args->buffer) {
        e = kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: buffer is NULL", fn);
    } else if (args->buffer->type != alias->type || args->buffer->rank != alias->rank ||
               memcmp(args->buffer->dims, alias->dims, (size_t)alias->rank * sizeof *alias->dims)) {
        e = kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                            "%s: the buffer's type or shape is not the alias buffer's", fn);
    } else {
        e = kiln_pjrt_buffer_take(args->buffer, fn, KILN_PJRT_READ, &t);
    }
    /* the alias gets the tensor, or carries the error to its readers */
    kiln_pjrt_buffer_fulfill(alias, t, e ? e->code : PJRT_Error_Code_OK, e ? e->message : NULL);
    kiln_pjrt_buffer_release(alias);
    free(cb);
    PJRT_Error *returned = e && args->status_code == PJRT_Error_Code_OK ? e : NULL;
    if (!returned) kiln_pjrt_error_free(e);
    return returned;
}

/* A donation that waits for a dependency: the donated tensor goes to a new buffer, ready
 * when the caller's callback says the dependency is met (or carrying its error). */
typedef struct donation {
    PJRT_Buffer *out; /* a reference held until the callback */
    kiln_tensor *tensor;
} donation;

static void dependency_ready(PJRT_Buffer_DonateWithControlDependency_Callback_Args *args) {
    donation *d = args->callback_data;
    if (args->error_code != PJRT_Error_Code_OK) {
        char message[512];
        snprintf(message, sizeof message, "%.*s", (int)args->error_message_size,
                 args->error_message ? args->error_message : "");
        kiln_tensor_release(d->tensor);
        kiln_pjrt_buffer_fulfill(d->out, NULL, args->error_code, message);
    } else {
        kiln_pjrt_buffer_fulfill(d->out, d->tensor, PJRT_Error_Code_OK, NULL);
    }
    kiln_pjrt_buffer_release(d->out);
    free(d);
}

PJRT_Error *
kiln_pjrt_Buffer_DonateWithControlDependency(PJRT_Buffer_DonateWithControlDependency_Args *args) {
    static const char fn[] = "PJRT_Buffer_DonateWithControlDependency";
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_DonateWithControlDependency_Args, out_buffer);
    BUFFER(args, buffer);
    pthread_mutex_lock(&b->lock);
    bool gone = b->deleted;
    pthread_mutex_unlock(&b->lock);
    if (gone)
        return kiln_pjrt_error(PJRT_Error_Code_FAILED_PRECONDITION,
                               "%s: the buffer was deleted or donated", fn);
    donation *d = malloc(sizeof *d);
    PJRT_Buffer *out = kiln_pjrt_buffer_pending(b->client, b->device, b->type, b->rank, b->dims);
    if (!d || !out) {
        free(d);
        kiln_pjrt_buffer_release(out);
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    kiln_pjrt_buffer_mark_deleted(b);
    PJRT_Error *e = kiln_pjrt_buffer_take(b, fn, KILN_PJRT_CONSUME, &d->tensor);
    if (e) {
        free(d);
        kiln_pjrt_buffer_release(out);
        return e;
    }
    d->out = kiln_pjrt_buffer_retain(out);
    args->callback_data = d;
    args->dependency_ready_callback = dependency_ready;
    args->out_buffer = out;
    return NULL;
}

/* ---- what a buffer says of itself -------------------------------------------------------- */

PJRT_Error *kiln_pjrt_Buffer_Destroy(PJRT_Buffer_Destroy_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_Destroy_Args, buffer);
    kiln_pjrt_buffer_release(args->buffer);
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_ElementType(PJRT_Buffer_ElementType_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_ElementType_Args, type);
    BUFFER(args, buffer);
    args->type = b->type;
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_Dimensions(PJRT_Buffer_Dimensions_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_Dimensions_Args, num_dims);
    BUFFER(args, buffer);
    args->dims = b->dims;
    args->num_dims = (size_t)b->rank;
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_UnpaddedDimensions(PJRT_Buffer_UnpaddedDimensions_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_UnpaddedDimensions_Args, num_dims);
    BUFFER(args, buffer);
    args->unpadded_dims = b->dims;
    args->num_dims = (size_t)b->rank;
    return NULL;
}

PJRT_Error *
kiln_pjrt_Buffer_DynamicDimensionIndices(PJRT_Buffer_DynamicDimensionIndices_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_DynamicDimensionIndices_Args, num_dynamic_dims);
    BUFFER(args, buffer);
    args->dynamic_dim_indices = NULL;
    args->num_dynamic_dims = 0;
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_GetMemoryLayout(PJRT_Buffer_GetMemoryLayout_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_GetMemoryLayout_Args, layout);
    BUFFER(args, buffer);
    memset(&args->layout, 0, sizeof args->layout);
    args->layout.struct_size = KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_MemoryLayout, type);
    args->layout.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
    args->layout.tiled.minor_to_major = b->minor_to_major;
    args->layout.tiled.minor_to_major_size = (size_t)b->rank;
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_OnDeviceSizeInBytes(PJRT_Buffer_OnDeviceSizeInBytes_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_OnDeviceSizeInBytes_Args, on_device_size_in_bytes);
    BUFFER(args, buffer);
    kiln_dtype dtype;
    size_t n = kiln_pjrt_dtype(b->type, &dtype) ? kiln_dtype_size(dtype) : 0;
    for (int32_t i = 0; i < b->rank; i++)
        n *= (size_t)b->dims[i];
    args->on_device_size_in_bytes = n;
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_Device(PJRT_Buffer_Device_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_Device_Args, device);
    BUFFER(args, buffer);
    args->device = b->device;
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_Memory(PJRT_Buffer_Memory_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_Memory_Args, memory);
    BUFFER(args, buffer);
    args->memory = &b->device->memory;
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_Delete(PJRT_Buffer_Delete_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_Delete_Args, buffer);
    BUFFER(args, buffer);
    pthread_mutex_lock(&b->lock);
    b->deleted = true;
    kiln_tensor *t = b->tensor;
    b->tensor = NULL;
    pthread_mutex_unlock(&b->lock);
    kiln_tensor_release(t);
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_IsDeleted(PJRT_Buffer_IsDeleted_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_IsDeleted_Args, is_deleted);
    BUFFER(args, buffer);
    pthread_mutex_lock(&b->lock);
    args->is_deleted = b->deleted;
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_IsOnCpu(PJRT_Buffer_IsOnCpu_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_IsOnCpu_Args, is_on_cpu);
    BUFFER(args, buffer);
    /* host memory, but a device of its own platform: the framework copies out */
    args->is_on_cpu = false;
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_ReadyEvent(PJRT_Buffer_ReadyEvent_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_ReadyEvent_Args, event);
    BUFFER(args, buffer);
    args->event = kiln_pjrt_event_retain(b->ready);
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_UnsafePointer(PJRT_Buffer_UnsafePointer_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_UnsafePointer_Args, buffer_pointer);
    BUFFER(args, buffer);
    kiln_tensor *t;
    PJRT_Error *e = kiln_pjrt_buffer_take(b, __func__, KILN_PJRT_READ, &t);
    if (e) return e;
    args->buffer_pointer = (uintptr_t)kiln_tensor_data(t); /* lives as long as the buffer */
    kiln_tensor_release(t);
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_OpaqueDeviceMemoryDataPointer(
    PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args, device_memory_ptr);
    BUFFER(args, buffer);
    kiln_tensor *t;
    PJRT_Error *e = kiln_pjrt_buffer_take(b, __func__, KILN_PJRT_READ, &t);
    if (e) return e;
    args->device_memory_ptr = (void *)kiln_tensor_data(t); /* lives as long as the buffer */
    kiln_tensor_release(t);
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_IncreaseExternalReferenceCount(
    PJRT_Buffer_IncreaseExternalReferenceCount_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_IncreaseExternalReferenceCount_Args, buffer);
    BUFFER(args, buffer);
    atomic_fetch_add(&b->external_refs, 1);
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_DecreaseExternalReferenceCount(
    PJRT_Buffer_DecreaseExternalReferenceCount_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_DecreaseExternalReferenceCount_Args, buffer);
    BUFFER(args, buffer);
    if (atomic_fetch_sub(&b->external_refs, 1) <= 0) {
        atomic_fetch_add(&b->external_refs, 1);
        return kiln_pjrt_error(PJRT_Error_Code_FAILED_PRECONDITION,
                               "%s: no external reference to drop", __func__);
    }
    return NULL;
}

/* ---- copies ------------------------------------------------------------------------------ */

/* Whether a host layout asks for the dense row-major bytes kiln holds. */
static bool row_major(const PJRT_Buffer_MemoryLayout *l, int32_t rank) {
    if (!l) return true;
    if (l->type != PJRT_Buffer_MemoryLayout_Type_Tiled || l->tiled.num_tiles) return false;
    if (l->tiled.minor_to_major_size != (size_t)rank) return false;
    for (int32_t i = 0; i < rank; i++)
        if (l->tiled.minor_to_major[i] != rank - 1 - i) return false;
    return true;
}

PJRT_Error *kiln_pjrt_Buffer_ToHostBuffer(PJRT_Buffer_ToHostBuffer_Args *args) {
    static const char fn[] = "PJRT_Buffer_ToHostBuffer";
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_ToHostBuffer_Args, event);
    BUFFER(args, src);
    if (!args->dst) { /* the size, known before the buffer is ready */
        PJRT_Buffer_OnDeviceSizeInBytes_Args size = {.struct_size = sizeof size, .buffer = b};
        kiln_pjrt_Buffer_OnDeviceSizeInBytes(&size);
        args->dst_size = size.on_device_size_in_bytes;
        return NULL;
    }
    if (!row_major(args->host_layout, b->rank))
        return kiln_pjrt_unimplemented(fn, "host layouts other than row-major");
    kiln_tensor *t;
    PJRT_Error *e = kiln_pjrt_buffer_take(b, fn, KILN_PJRT_READ, &t);
    if (e) return e;
    size_t nbytes = kiln_tensor_nbytes(t);
    if (args->dst_size < nbytes) {
        kiln_tensor_release(t);
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "%s: dst holds %zu bytes; the buffer has %zu", fn, args->dst_size,
                               nbytes);
    }
    kiln_ctx *cx = kiln_pjrt_enter(b->client);
    if (!cx) e = kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    if (cx && kiln_tensor_to_host(cx, t, args->dst, nbytes) != KILN_OK)
        e = kiln_pjrt_ctx_error(cx, fn);
    if (cx) kiln_pjrt_leave(b->client);
    kiln_tensor_release(t);
    if (e) return e;
    args->event = kiln_pjrt_event_new(true, NULL);
    if (!args->event)
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_CopyRawToHost(PJRT_Buffer_CopyRawToHost_Args *args) {
    static const char fn[] = "PJRT_Buffer_CopyRawToHost";
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_CopyRawToHost_Args, event);
    BUFFER(args, buffer);
    kiln_tensor *t;
    PJRT_Error *e = kiln_pjrt_buffer_take(b, fn, KILN_PJRT_READ, &t);
    if (e) return e;
    size_t nbytes = kiln_tensor_nbytes(t);
    if (args->offset < 0 || args->transfer_size < 0 || (size_t)args->offset > nbytes ||
        (size_t)args->transfer_size > nbytes - (size_t)args->offset)
        e = kiln_pjrt_error(PJRT_Error_Code_OUT_OF_RANGE,
                            "%s: bytes [%lld, +%lld) of a buffer of %zu", fn,
                            (long long)args->offset, (long long)args->transfer_size, nbytes);
    else if (args->transfer_size && !args->dst)
        e = kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: dst is NULL", fn);
    else if (args->transfer_size)
        memcpy(args->dst, (const unsigned char *)kiln_tensor_data(t) + args->offset,
               (size_t)args->transfer_size);
    kiln_tensor_release(t);
    if (e) return e;
    args->event = kiln_pjrt_event_new(true, NULL);
    if (!args->event)
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    return NULL;
}

/* A copy out to memory the caller names later: the caller calls future_ready_callback with
 * the destination (or an error), which copies and completes the event. The bytes are kept
 * (a reference to the tensor) until then. */
typedef struct raw_copy {
    kiln_tensor *tensor;
    int64_t offset, size;
    PJRT_Event *event;
} raw_copy;

static void raw_copy_ready(PJRT_Buffer_CopyRawToHostFuture_Callback_Args *args) {
    raw_copy *r = args->callback_data;
    if (args->error_code != PJRT_Error_Code_OK) {
        char message[512];
        snprintf(message, sizeof message, "%.*s", (int)args->error_message_size,
                 args->error_message ? args->error_message : "");
        kiln_pjrt_event_complete(r->event, args->error_code, message);
    } else {
        if (r->size)
            memcpy(args->dst, (const unsigned char *)kiln_tensor_data(r->tensor) + r->offset,
                   (size_t)r->size);
        kiln_pjrt_event_complete(r->event, PJRT_Error_Code_OK, NULL);
    }
    kiln_tensor_release(r->tensor);
    free(r);
}

PJRT_Error *kiln_pjrt_Buffer_CopyRawToHostFuture(PJRT_Buffer_CopyRawToHostFuture_Args *args) {
    static const char fn[] = "PJRT_Buffer_CopyRawToHostFuture";
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_CopyRawToHostFuture_Args, future_ready_callback);
    BUFFER(args, buffer);
    kiln_tensor *t;
    PJRT_Error *e = kiln_pjrt_buffer_take(b, fn, KILN_PJRT_READ, &t);
    if (e) return e;
    size_t nbytes = kiln_tensor_nbytes(t);
    if (args->offset < 0 || args->transfer_size < 0 || (size_t)args->offset > nbytes ||
        (size_t)args->transfer_size > nbytes - (size_t)args->offset) {
        kiln_tensor_release(t);
        return kiln_pjrt_error(PJRT_Error_Code_OUT_OF_RANGE,
                               "%s: bytes [%lld, +%lld) of a buffer of %zu", fn,
                               (long long)args->offset, (long long)args->transfer_size, nbytes);
    }
    raw_copy *r = malloc(sizeof *r);
    PJRT_Event *event = kiln_pjrt_event_new(false, NULL);
    if (!r || !event) {
        free(r);
        kiln_pjrt_event_release(event);
        kiln_tensor_release(t);
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    *r = (raw_copy){t, args->offset, args->transfer_size, event};
    args->event = event;
    args->callback_data = r;
    args->future_ready_callback = raw_copy_ready;
    return NULL;
}

/* A new buffer holding b's values on device d. */
static PJRT_Error *copy_to(PJRT_Buffer *b, PJRT_Device *d, PJRT_Buffer **out, const char *fn) {
    if (!d) return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: no destination", fn);
    kiln_tensor *src;
    PJRT_Error *e = kiln_pjrt_buffer_take(b, fn, KILN_PJRT_READ, &src);
    if (e) return e;
    kiln_ctx *cx = kiln_pjrt_enter(b->client);
    if (!cx) {
        kiln_tensor_release(src);
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    kiln_tensor *t = kiln_tensor_to_device(cx, src, (kiln_device){KILN_DEVICE_TYPE_CPU, d->index});
    kiln_tensor_release(src);
    /* the same device: still a buffer of its own (deleting one keeps the other) */
    if (t) t = kiln_tensor_retain(t);
    if (!t) e = kiln_pjrt_ctx_error(cx, fn);
    kiln_pjrt_leave(b->client);
    if (!t) return e;
    *out = kiln_pjrt_buffer_new(b->client, d, t);
    if (!*out) {
        kiln_tensor_release(t);
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    return NULL;
}

PJRT_Error *kiln_pjrt_Buffer_CopyToDevice(PJRT_Buffer_CopyToDevice_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_CopyToDevice_Args, dst_buffer);
    BUFFER(args, buffer);
    return copy_to(b, args->dst_device, &args->dst_buffer, "PJRT_Buffer_CopyToDevice");
}

PJRT_Error *kiln_pjrt_Buffer_CopyToMemory(PJRT_Buffer_CopyToMemory_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Buffer_CopyToMemory_Args, dst_buffer);
    BUFFER(args, buffer);
    return copy_to(b, args->dst_memory ? args->dst_memory->device : NULL, &args->dst_buffer,
                   "PJRT_Buffer_CopyToMemory");
}
