/* SPDX-License-Identifier: Apache-2.0 */
/* A monotonic clock for the statistics caches keep (compile times). */
#ifndef KILN_BASE_CLOCK_H
#define KILN_BASE_CLOCK_H

#include <stdint.h>

/* Nanoseconds of CLOCK_MONOTONIC. */
int64_t kiln__now_ns(void);

#endif
