/* The CUDA driver, opened at run time (dlopen of libcuda.so.1, never linked), so the same
 * libkiln runs where there is no driver: what the backend needs to know whether it can run
 * here and on what. */
#ifndef KILN_BACKENDS_CUDA_DRIVER_API_H
#define KILN_BACKENDS_CUDA_DRIVER_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KILN__CUDA_MAX_DEVICES 16

typedef struct kiln__cuda_device {
    char name[96];
    int major, minor; /* compute capability: 9.0 for sm_90 */
    size_t memory;    /* bytes */
} kiln__cuda_device;

typedef struct kiln__cuda_driver {
    bool loaded;
    int version; /* the driver's CUDA version, 13000 for 13.0 */
    int32_t n_devices;
    kiln__cuda_device devices[KILN__CUDA_MAX_DEVICES];
    char reason[256]; /* why not, when not loaded or without devices */
} kiln__cuda_driver;

/* Opens the driver once per process (KILN_CUDA_DRIVER names another library than
 * libcuda.so.1) and lists its devices. Thread-safe. Never NULL. */
const kiln__cuda_driver *kiln__cuda_driver_get(void);

#endif
