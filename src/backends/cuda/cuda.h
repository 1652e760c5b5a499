/* SPDX-License-Identifier: Apache-2.0 */
/* The cuda backend (cuda_backend.c): listed, and unavailable with its reason, until it
 * runs programs. */
#ifndef KILN_BACKENDS_CUDA_H
#define KILN_BACKENDS_CUDA_H

#include "backend/backend.h"

const kiln__backend *kiln__cuda_backend(void);

#endif
