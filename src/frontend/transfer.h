/* SPDX-License-Identifier: Apache-2.0 */
/* Moving tensors between devices and the host (transfer.c), and the storage a device's
 * tensors live in. */
#ifndef KILN_FRONTEND_TRANSFER_H
#define KILN_FRONTEND_TRANSFER_H

#include "backend/backend.h"

/* Storage of nbytes on `device`, whose backend is b: from the backend when it keeps device
 * memory (buffer_alloc), else host memory from cx's allocator. NULL with the error
 * recorded (naming fn). */
kiln__storage *kiln__storage_on(kiln_ctx *cx, const kiln__backend *b, const char *fn,
                                kiln_device device, size_t nbytes);

#endif
