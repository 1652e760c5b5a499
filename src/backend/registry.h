/* SPDX-License-Identifier: Apache-2.0 */
/* The registry: the backends a ctx sees, by name and by device type.
 *
 * On first use in a ctx the registry lists the builtin backends (kiln__builtin_backend,
 * defined by src/backends/builtin.c, the only file that names concrete backends) and asks
 * each whether it can run here; one that cannot (CUDA without a driver) stays listed as
 * unavailable, with its reason, and every lookup of it reports that reason. Backends
 * built outside the library register with kiln__backend_register. Lookups are cheap
 * (a short array scan); eager ops on CPU devices use a cached pointer. */
#ifndef KILN_BACKEND_REGISTRY_H
#define KILN_BACKEND_REGISTRY_H

#include <stdint.h>

#include "backend/backend.h"
#include "base/ctx_internal.h"

/* Builtin backend `index` (0, 1, ...; NULL past the last), in order of preference for
 * their device type: the first available one of a type runs eager ops and is the default
 * compile target. Thread-safe. */
const kiln__backend *kiln__builtin_backend(int32_t index);

/* The available backend called `name`, or (name NULL) the preferred available backend for
 * device.type; checks that device.id is one of its devices. NULL with an error naming
 * `fn` recorded: no such backend (listing the known ones), the backend is unavailable (its
 * reason), it runs on another kind of device, or no such device. */
const kiln__backend *kiln__backend_for(kiln_ctx *cx, const char *fn, kiln_device device,
                                       const char *name);

/* The listed backend called `name` (available or not), or NULL. Records nothing. */
const kiln__backend *kiln__backend_named(kiln_ctx *cx, const char *name);

/* kiln__backend_eager's lookup when the ctx's cache does not answer. */
const kiln__backend *kiln__backend_eager_lookup(kiln_ctx *cx, const char *fn, kiln_device device);

/* The backend that runs eager ops on `device` (cached in the ctx for CPU devices: this is
 * on every eager op's path); NULL with an error recorded as kiln__backend_for does. */
static inline const kiln__backend *kiln__backend_eager(kiln_ctx *cx, const char *fn,
                                                       kiln_device device) {
    if (device.type == KILN_DEVICE_TYPE_CPU && cx->cpu_eager &&
        (uint32_t)device.id < (uint32_t)cx->cpu_devices)
        return cx->cpu_eager;
    return kiln__backend_eager_lookup(cx, fn, device);
}

/* Makes `device` cx's current device and returns the one it replaces (pass that back to
 * restore it). The runtime calls a backend's eval_op, compile and execute with the device
 * they run on current, so that the tensors made there with core's constructors (results,
 * folded constants) land on it; kiln_ctx_device says the ctx's own device the rest of the
 * time. */
static inline kiln_device kiln__ctx_use_device(kiln_ctx *cx, kiln_device device) {
    kiln_device before = cx->device;
    cx->device = device;
    return before;
}

/* "cpu:1" into buf (at least 32 bytes); returns buf. */
const char *kiln__device_text(kiln_device device, char *buf, size_t cap);

#endif
