/* SPDX-License-Identifier: Apache-2.0 */
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

/* Running a cubin's kernels on device 0 (for the checks of generated code, until the
 * backend has its memory pools and streams): a context, a module, device buffers, launches
 * that are waited for. Each returns false with the driver's error in err (cap bytes).
 * Only after kiln__cuda_driver_get() reports loaded. Not thread-safe. */
typedef struct kiln__cuda_session kiln__cuda_session;
bool kiln__cuda_session_open(const void *cubin, size_t size, kiln__cuda_session **out, char *err,
                             size_t cap);
void kiln__cuda_session_close(kiln__cuda_session *s);
bool kiln__cuda_alloc(kiln__cuda_session *s, size_t nbytes, uint64_t *out_ptr, char *err,
                      size_t cap);
bool kiln__cuda_copy_in(kiln__cuda_session *s, uint64_t dst, const void *src, size_t nbytes,
                        char *err, size_t cap);
bool kiln__cuda_copy_out(kiln__cuda_session *s, void *dst, uint64_t src, size_t nbytes, char *err,
                         size_t cap);
/* Launches `name` on grid x block threads with one by-value argument of `arg_size` bytes
 * (the kernels' kiln_args), and waits for it. */
bool kiln__cuda_launch(kiln__cuda_session *s, const char *name, unsigned grid, unsigned block,
                       const void *arg, size_t arg_size, char *err, size_t cap);

#endif
