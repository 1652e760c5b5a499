/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/device.h: devices, in DLPack's terms, and the backends that run on them.
 *
 * Every tensor lives on a device. Device type codes are DLPack's (DLDeviceType), so a
 * tensor crosses to numpy, PyTorch or JAX without translation. A ctx sees every backend
 * built into the library (kiln_backend_info_get lists them, available or not, with the
 * reason): "cpu", the optimizing compiler and the eager kernels, and "interpreter", the
 * evaluator alone, op by op (the reference the compiled backends are tested against).
 * Both run on the ctx's logical CPU devices (kiln_ctx_options.cpu_devices).
 *
 *     kiln_backend_info info;
 *     for (int32_t i = 0; i < kiln_backend_count(cx); i++)
 *         if (kiln_backend_info_get(cx, i, &info) == KILN_OK)
 *             printf("%s: %d devices%s%s\n", info.name, (int)info.n_devices,
 *                    info.available ? "" : ", unavailable: ", info.available ? "" : info.reason);
 *     kiln_device d = {KILN_DEVICE_TYPE_CPU, 1};   // with cpu_devices >= 2
 *     printf("%s:%d\n", kiln_device_type_name(d.type), d.id);
 */
#ifndef KILN_DEVICE_H
#define KILN_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln/export.h"
#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DLPack's DLDeviceType codes. */
typedef enum kiln_device_type {
    KILN_DEVICE_TYPE_CPU = 1,
    KILN_DEVICE_TYPE_CUDA = 2,
    KILN_DEVICE_TYPE_CUDA_HOST = 3,
    /* DLPack's kDLExtDev: the devices of a backend registered from outside the library. */
    KILN_DEVICE_TYPE_EXT = 12,
} kiln_device_type;

typedef struct kiln_device {
    kiln_device_type type;
    int32_t id; /* the device ordinal; 0 for the CPU */
} kiln_device;

#define KILN_DEVICE_CPU ((kiln_device){.type = KILN_DEVICE_TYPE_CPU, .id = 0})

/* "cpu", "cuda", "cuda_host", "ext", or "unknown". Returns a static string. Thread-safe. */
KILN_API const char *kiln_device_type_name(kiln_device_type type);

typedef struct kiln_ctx kiln_ctx;

typedef struct kiln_backend_info {
    const char *name;             /* "cpu", "interpreter", ... */
    kiln_device_type device_type; /* the kind of device it runs on */
    bool available;               /* false: it cannot run in this process */
    const char *reason;           /* why not ("" when available) */
    int32_t n_devices;            /* devices it offers (0 when unavailable) */
} kiln_backend_info;

/* The number of backends cx lists (0 for a NULL cx). Not thread-safe (the ctx's). */
KILN_API int32_t kiln_backend_count(kiln_ctx *cx);

/* Fills *out_info for backend `index` (0 .. kiln_backend_count - 1) and returns KILN_OK.
 * Strings are borrowed: valid as long as cx. Errors: INVALID_ARGUMENT (a NULL argument, an
 * index out of range; a NULL ctx returns it without recording). Not thread-safe (the
 * ctx's). */
KILN_API kiln_status kiln_backend_info_get(kiln_ctx *cx, int32_t index,
                                           kiln_backend_info *out_info);

/* The number of devices of `type` that cx offers: those of the first available backend of
 * that type (0 when none, or for a NULL cx). Records no error. Not thread-safe (the
 * ctx's). */
KILN_API int32_t kiln_device_count(kiln_ctx *cx, kiln_device_type type);

#ifdef __cplusplus
}
#endif

#endif
