/* kiln_tensor_to_device: moving a tensor's bytes to another device through the backends'
 * buffer entries (backend/backend.h), or with memcpy between host-visible memories. */
#include <string.h>

#include "backend/registry.h"
#include "base/ctx_internal.h"
#include "core/tensor_internal.h"

static const char fn[] = "kiln_tensor_to_device";

/* Storage of nbytes on `device`, from its backend when that allocates device memory. */
static kiln__storage *storage_on(kiln_ctx *cx, const kiln__backend *b, kiln_device device,
                                 size_t nbytes) {
    if (KILN__BACKEND_HAS(b, buffer_alloc)) {
        kiln__storage *s = NULL;
        return b->buffer_alloc(cx, device, nbytes, &s) == KILN_OK ? s : NULL;
    }
    kiln_device saved = cx->device;
    cx->device = device;
    kiln__storage *s = kiln__storage_new(cx, fn, nbytes);
    cx->device = saved;
    return s;
}

/* Copies nbytes from src's tensor bytes into dst (fresh storage), and waits for them. */
static kiln_status copy(kiln_ctx *cx, const kiln__backend *from, const kiln__backend *to,
                        const kiln_tensor *t, kiln__storage *dst) {
    kiln__event *done = NULL;
    kiln_status s;
    if (from == to && KILN__BACKEND_HAS(from, copy_buffer))
        s = from->copy_buffer(cx, t->storage, t->byte_offset, dst, 0, t->nbytes, &done);
    else if (KILN__BACKEND_HAS(to, copy_from_host) && !KILN__BACKEND_HAS(from, copy_to_host))
        s = to->copy_from_host(cx, (const char *)t->storage->data + t->byte_offset, dst, 0,
                               t->nbytes, &done);
    else if (KILN__BACKEND_HAS(from, copy_to_host) && !KILN__BACKEND_HAS(to, copy_from_host))
        s = from->copy_to_host(cx, t->storage, t->byte_offset, dst->data, t->nbytes, &done);
    else if (!KILN__BACKEND_HAS(from, copy_to_host) && !KILN__BACKEND_HAS(to, copy_from_host)) {
        memcpy(dst->data, (const char *)t->storage->data + t->byte_offset, t->nbytes);
        s = KILN_OK;
    } else {
        return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                  "%s: no copy from a '%s' device to a '%s' device yet", fn,
                                  from->name, to->name);
    }
    kiln_status w = kiln__event_finish(cx, done);
    return s != KILN_OK ? s : w;
}

kiln_tensor *kiln_tensor_to_device(kiln_ctx *cx, kiln_tensor *t, kiln_device device) {
    if (!cx) return NULL;
    if (!t) {
        kiln__null_argument(cx, fn, "tensor");
        return NULL;
    }
    if (t->trace) {
        kiln__traced_error(cx, fn);
        return NULL;
    }
    if (t->dead) {
        kiln__dead_error(cx, fn, t);
        return NULL;
    }
    const kiln__backend *to = kiln__backend_eager(cx, fn, device);
    if (!to) return NULL;
    kiln_device here = t->storage->device;
    if (here.type == device.type && here.id == device.id)
        return kiln__tensor_view(cx, fn, t, t->dtype, t->shape);
    const kiln__backend *from = kiln__backend_eager(cx, fn, here);
    if (!from) return NULL;
    kiln__storage *s = storage_on(cx, to, device, t->nbytes);
    if (!s) return NULL;
    if (t->nbytes && copy(cx, from, to, t, s) != KILN_OK) {
        kiln__storage_release(s);
        return NULL;
    }
    return kiln__tensor_new_on(cx, fn, t->dtype, t->shape, s);
}
