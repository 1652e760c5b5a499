/* SPDX-License-Identifier: Apache-2.0 */
/* The toy backend of tests/backend/toy_backend.c, and one that reports itself unavailable
 * (as CUDA does on a machine without a GPU). */
#ifndef KILN_TESTS_TOY_BACKEND_H
#define KILN_TESTS_TOY_BACKEND_H

#include <stdatomic.h>

#include "backend/backend.h"

extern const kiln__backend toy_backend;
extern const kiln__backend toy_missing_backend;

/* On two devices of its own (ext:0, ext:1) with memory the host may not read in place:
 * allocations it holds now, and copies it has made, counted. */
extern const kiln__backend toy_device_backend;
extern atomic_int toy_live_buffers;
extern atomic_int toy_copies;

#endif
