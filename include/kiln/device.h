/* kiln/device.h: devices, in DLPack's terms.
 *
 * Every tensor lives on a device. Device type codes are DLPack's (DLDeviceType), so a
 * tensor crosses to numpy, PyTorch or JAX without translation. Only the CPU exists today.
 *
 *     kiln_device d = KILN_DEVICE_CPU;
 *     printf("%s:%d\n", kiln_device_type_name(d.type), d.id);
 */
#ifndef KILN_DEVICE_H
#define KILN_DEVICE_H

#include <stdint.h>

#include "kiln/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DLPack's DLDeviceType codes. */
typedef enum kiln_device_type {
    KILN_DEVICE_TYPE_CPU = 1,
    KILN_DEVICE_TYPE_CUDA = 2,
    KILN_DEVICE_TYPE_CUDA_HOST = 3,
} kiln_device_type;

typedef struct kiln_device {
    kiln_device_type type;
    int32_t id; /* the device ordinal; 0 for the CPU */
} kiln_device;

#define KILN_DEVICE_CPU ((kiln_device){.type = KILN_DEVICE_TYPE_CPU, .id = 0})

/* "cpu", "cuda", "cuda_host", or "unknown". Returns a static string. Thread-safe. */
KILN_API const char *kiln_device_type_name(kiln_device_type type);

#ifdef __cplusplus
}
#endif

#endif
