/* SPDX-License-Identifier: Apache-2.0 */
/* The backends built into the library, in order of preference per device type: the one
 * file that names concrete backends (backend/registry.h declares what it defines). */
#include "backend/registry.h"
#include "backends/cpu/engine/cpu_backend.h"
#include "backends/cuda/cuda.h"
#include "backends/interpreter/interpreter.h"

const kiln__backend *kiln__builtin_backend(int32_t index) {
    static const kiln__backend *(*const tables[])(void) = {
        kiln__cpu_backend, /* also starts the CPU's threads */
        kiln__interpreter_backend,
        kiln__cuda_backend, /* listed with the reason it cannot run here */
    };
    if (index < 0 || index >= (int32_t)(sizeof tables / sizeof tables[0])) return NULL;
    return tables[index]();
}
