/* SPDX-License-Identifier: Apache-2.0 */
/* The per-ctx list of backends (registry.h) and the public listing (kiln/device.h). */
#include "backend/registry.h"

#include <stdio.h>
#include <string.h>

#include "base/ctx_internal.h"

/* The list lives in the ctx itself (cx->backends, KILN__MAX_BACKENDS entries): listing
 * allocates nothing. */
typedef kiln__backend_entry entry;

const char *kiln__device_text(kiln_device device, char *buf, size_t cap) {
    snprintf(buf, cap, "%s:%d", kiln_device_type_name(device.type), (int)device.id);
    return buf;
}

/* Why backend b cannot be listed, or NULL when it can. */
static const char *invalid(const kiln__backend *b) {
    if (b->struct_size < offsetof(kiln__backend, native_status))
        return "its table is smaller than interface version 3's";
    if (b->version != KILN_BACKEND_VERSION) return "it implements another interface version";
    if (!b->name || !b->name[0]) return "it has no name";
    if (!b->device_count || !b->device_info || !b->supports_op || !b->eval_op || !b->compile ||
        !b->execute || !b->release)
        return "a required entry is NULL";
    if (KILN__BACKEND_HAS(b, buffer_alloc) &&
        (!KILN__BACKEND_HAS(b, copy_to_host) || !KILN__BACKEND_HAS(b, copy_from_host)))
        return "it allocates device memory (buffer_alloc) but cannot copy to and from the host";
    return NULL;
}

static void add(kiln_ctx *cx, const kiln__backend *b) {
    entry *e = &cx->backends[cx->n_backends++];
    e->backend = b;
    e->reason[0] = '\0';
    e->status =
        KILN__BACKEND_HAS(b, available) ? b->available(e->reason, sizeof e->reason) : KILN_OK;
    if (e->status != KILN_OK && !e->reason[0])
        snprintf(e->reason, sizeof e->reason, "%s", kiln_status_name(e->status));
}

/* Fills cx's list with the builtins on first use. */
static void list(kiln_ctx *cx) {
    if (cx->backends_listed) return;
    cx->backends_listed = true;
    const kiln__backend *b;
    for (int32_t i = 0; (b = kiln__builtin_backend(i)) && cx->n_backends < KILN__MAX_BACKENDS; i++)
        if (!invalid(b)) add(cx, b);
}

static const entry *find(const kiln_ctx *cx, const char *name) {
    for (int32_t i = 0; i < cx->n_backends; i++)
        if (strcmp(cx->backends[i].backend->name, name) == 0) return &cx->backends[i];
    return NULL;
}

kiln_status kiln__backend_register(kiln_ctx *cx, const kiln__backend *b) {
    static const char fn[] = "kiln__backend_register";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!b) return kiln__null_argument(cx, fn, "backend");
    const char *why = invalid(b);
    if (why)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: backend '%s' is refused: %s", fn,
                                  b->name ? b->name : "(unnamed)", why);
    list(cx);
    if (find(cx, b->name))
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: a backend named '%s' is already listed", fn, b->name);
    if (cx->n_backends == KILN__MAX_BACKENDS)
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: %d backends are listed already",
                                  fn, KILN__MAX_BACKENDS);
    add(cx, b);
    return KILN_OK;
}

/* "cpu, interpreter" */
static void names(const kiln_ctx *cx, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < cx->n_backends && used < cap; i++) {
        int w =
            snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", cx->backends[i].backend->name);
        if (w < 0) break;
        used += (size_t)w;
    }
}

const kiln__backend *kiln__backend_for(kiln_ctx *cx, const char *fn, kiln_device device,
                                       const char *name) {
    list(cx);
    char dev[48];
    kiln__device_text(device, dev, sizeof dev);
    const entry *e = NULL;
    if (name) {
        if (!(e = find(cx, name))) {
            char known[256];
            names(cx, known, sizeof known);
            kiln_ctx_set_error(cx, KILN_NOT_FOUND, "%s: no backend named '%s' (known: %s)", fn,
                               name, known);
            return NULL;
        }
    } else {
        const entry *unavailable = NULL;
        for (int32_t i = 0; i < cx->n_backends && !e; i++) {
            const entry *c = &cx->backends[i];
            if (c->backend->device_type != device.type) continue;
            if (c->status == KILN_OK)
                e = c;
            else if (!unavailable)
                unavailable = c;
        }
        if (!e) {
            if (unavailable)
                kiln_ctx_set_error(cx, unavailable->status,
                                   "%s: device %s: backend '%s' is unavailable: %s", fn, dev,
                                   unavailable->backend->name, unavailable->reason);
            else
                kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                   "%s: device %s: no backend runs on %s devices", fn, dev,
                                   kiln_device_type_name(device.type));
            return NULL;
        }
    }
    const kiln__backend *b = e->backend;
    if (e->status != KILN_OK) {
        kiln_ctx_set_error(cx, e->status, "%s: backend '%s' is unavailable: %s", fn, b->name,
                           e->reason);
        return NULL;
    }
    if (b->device_type != device.type) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: backend '%s' runs on %s devices, not on %s", fn, b->name,
                           kiln_device_type_name(b->device_type), dev);
        return NULL;
    }
    int32_t count = b->device_count(cx);
    if (device.id < 0 || device.id >= count) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: no device %s (backend '%s' offers %s:0 to %s:%d)", fn, dev, b->name,
                           kiln_device_type_name(device.type), kiln_device_type_name(device.type),
                           (int)count - 1);
        return NULL;
    }
    return b;
}

const kiln__backend *kiln__backend_named(kiln_ctx *cx, const char *name) {
    list(cx);
    const entry *e = find(cx, name);
    return e ? e->backend : NULL;
}

const kiln__backend *kiln__backend_eager_lookup(kiln_ctx *cx, const char *fn, kiln_device device) {
    const kiln__backend *b = kiln__backend_for(cx, fn, device, NULL);
    if (b && device.type == KILN_DEVICE_TYPE_CPU) cx->cpu_eager = b;
    return b;
}

int32_t kiln_backend_count(kiln_ctx *cx) {
    if (!cx) return 0;
    list(cx);
    return cx->n_backends;
}

kiln_status kiln_backend_info_get(kiln_ctx *cx, int32_t index, kiln_backend_info *out_info) {
    static const char fn[] = "kiln_backend_info_get";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_info) return kiln__null_argument(cx, fn, "out_info");
    list(cx);
    if (index < 0 || index >= cx->n_backends)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: index %d is out of range (%d backends)", fn, (int)index,
                                  (int)cx->n_backends);
    const entry *e = &cx->backends[index];
    *out_info =
        (kiln_backend_info){.name = e->backend->name,
                            .device_type = e->backend->device_type,
                            .available = e->status == KILN_OK,
                            .reason = e->reason,
                            .n_devices = e->status == KILN_OK ? e->backend->device_count(cx) : 0};
    return KILN_OK;
}

int32_t kiln_device_count(kiln_ctx *cx, kiln_device_type type) {
    if (!cx) return 0;
    list(cx);
    for (int32_t i = 0; i < cx->n_backends; i++) {
        const entry *e = &cx->backends[i];
        if (e->backend->device_type == type && e->status == KILN_OK)
            return e->backend->device_count(cx);
    }
    return 0;
}
