/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU backend (cpu_backend.c): the evaluator for eager ops and the compiled engine for
 * executables, behind the table of backend/backend.h. The registry's builtins
 * (backends/builtin.c) are its only caller. */
#ifndef KILN_BACKENDS_CPU_ENGINE_CPU_BACKEND_H
#define KILN_BACKENDS_CPU_ENGINE_CPU_BACKEND_H

#include "backend/backend.h"

/* The CPU backend's table (static; valid for the life of the process). */
const kiln__backend *kiln__cpu_backend(void);

#endif
