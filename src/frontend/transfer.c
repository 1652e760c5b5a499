/* SPDX-License-Identifier: Apache-2.0 */
/* Moving bytes between devices and the host: kiln_tensor_to_device and
 * kiln_tensor_to_host, through the backends' buffer entries (backend/backend.h) for
 * device memory, with memcpy between host-visible memories. Every copy a backend makes is
 * waited on through its event before the call returns. */
#include <string.h>

#include "backend/registry.h"
#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "core/tensor_internal.h"
#include "frontend/transfer.h"

static const char to_device_fn[] = "kiln_tensor_to_device";

/* Does backend b keep its devices' bytes where the host cannot read them in place? Such a
 * backend allocates and copies them itself (the registry checks it has the entries). */
static bool device_memory(const kiln__backend *b) { return KILN__BACKEND_HAS(b, buffer_alloc); }

kiln__storage *kiln__storage_on(kiln_ctx *cx, const kiln__backend *b, const char *fn,
                                kiln_device device, size_t nbytes) {
    if (device_memory(b)) {
        kiln__storage *s = NULL;
        if (b->buffer_alloc(cx, device, nbytes, &s) != KILN_OK) {
            if (kiln_ctx_status(cx) == KILN_OK)
                kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED,
                                   "%s: backend '%s' could not allocate %zu bytes", fn, b->name,
                                   nbytes);
            return NULL;
        }
        return s;
    }
    return kiln__storage_new_on(cx, fn, nbytes, device);
}

/* Copies t's bytes into dst (storage of at least as many bytes, on the destination device)
 * and waits for them. */
static kiln_status copy(kiln_ctx *cx, const kiln__backend *from, const kiln__backend *to,
                        const kiln_tensor *t, kiln__storage *dst) {
    const char *src_host = (const char *)t->storage->data + t->byte_offset;
    kiln__event *done = NULL;
    kiln_status s = KILN_OK;
    if (!device_memory(from) && !device_memory(to)) {
        memcpy(dst->data, src_host, t->nbytes);
    } else if (!device_memory(from)) {
        s = to->copy_from_host(cx, src_host, dst, 0, t->nbytes, &done);
    } else if (!device_memory(to)) {
        s = from->copy_to_host(cx, t->storage, t->byte_offset, dst->data, t->nbytes, &done);
    } else if (from == to && KILN__BACKEND_HAS(from, copy_buffer)) {
        s = from->copy_buffer(cx, t->storage, t->byte_offset, dst, 0, t->nbytes, &done);
    } else {
        /* Two backends' device memories (or no direct copy): through a host buffer. */
        void *stage = kiln__alloc(cx, t->nbytes, KILN_DATA_ALIGNMENT, to_device_fn);
        if (!stage) return KILN_RESOURCE_EXHAUSTED;
        s = from->copy_to_host(cx, t->storage, t->byte_offset, stage, t->nbytes, &done);
        kiln_status w = kiln__event_finish(cx, done);
        done = NULL;
        if (s == KILN_OK) s = w;
        if (s == KILN_OK) s = to->copy_from_host(cx, stage, dst, 0, t->nbytes, &done);
        kiln_status w2 = kiln__event_finish(cx, done);
        kiln__free(cx, stage, t->nbytes);
        return s != KILN_OK ? s : w2;
    }
    kiln_status w = kiln__event_finish(cx, done);
    return s != KILN_OK ? s : w;
}

/* NULL (with the error recorded) unless t is a live concrete tensor. */
static bool usable(kiln_ctx *cx, const char *fn, const kiln_tensor *t) {
    if (!t) return kiln__null_argument(cx, fn, "tensor"), false;
    if (t->trace) return kiln__traced_error(cx, fn), false;
    if (t->dead) return kiln__dead_error(cx, fn, t), false;
    return true;
}

kiln_tensor *kiln_tensor_to_device(kiln_ctx *cx, kiln_tensor *t, kiln_device device) {
    if (!cx || !usable(cx, to_device_fn, t)) return NULL;
    const kiln__backend *to = kiln__backend_eager(cx, to_device_fn, device);
    if (!to) return NULL;
    kiln_device here = t->storage->device;
    if (here.type == device.type && here.id == device.id)
        return kiln__tensor_view(cx, to_device_fn, t, t->dtype, t->shape);
    const kiln__backend *from = kiln__backend_eager(cx, to_device_fn, here);
    if (!from) return NULL;
    kiln__storage *s = kiln__storage_on(cx, to, to_device_fn, device, t->nbytes);
    if (!s) return NULL;
    if (t->nbytes && copy(cx, from, to, t, s) != KILN_OK) {
        kiln__storage_release(s);
        return NULL;
    }
    return kiln__tensor_new_on(cx, to_device_fn, t->dtype, t->shape, s);
}

kiln_status kiln_tensor_to_host(kiln_ctx *cx, const kiln_tensor *t, void *dst, size_t nbytes) {
    static const char fn[] = "kiln_tensor_to_host";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!usable(cx, fn, t)) return kiln_ctx_status(cx);
    if (nbytes != t->nbytes)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: nbytes is %zu; the %s tensor has %zu bytes", fn, nbytes,
                                  kiln_dtype_name(t->dtype), t->nbytes);
    if (nbytes == 0) return KILN_OK;
    if (!dst) return kiln__null_argument(cx, fn, "dst");
    const void *host = kiln_tensor_data(t);
    if (host) {
        memcpy(dst, host, nbytes);
        return KILN_OK;
    }
    const kiln__backend *b = kiln__backend_eager(cx, fn, t->storage->device);
    if (!b) return kiln_ctx_status(cx);
    if (!device_memory(b)) {
        memcpy(dst, (const char *)t->storage->data + t->byte_offset, nbytes);
        return KILN_OK;
    }
    kiln__event *done = NULL;
    kiln_status s = b->copy_to_host(cx, t->storage, t->byte_offset, dst, nbytes, &done);
    kiln_status w = kiln__event_finish(cx, done);
    return s != KILN_OK ? s : w;
}
