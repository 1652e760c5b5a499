/* SPDX-License-Identifier: Apache-2.0 */
/* The ctx's logical CPU devices, which share host memory: the CPU backend and the
 * interpreter backend both list them (eval.h). */
#include "backends/cpu/eval/eval.h"
#include "base/ctx_internal.h"

int32_t kiln__cpu_device_count(const kiln_ctx *cx) { return cx->cpu_devices; }

static const kiln__memory_space host_memory[] = {
    {.kind = KILN__MEMORY_HOST, .name = "unpinned_host", .host_visible = true},
};

kiln_status kiln__cpu_device_info(const kiln_ctx *cx, int32_t id, kiln__device_info *out) {
    if (id < 0 || id >= cx->cpu_devices) return KILN_INVALID_ARGUMENT;
    *out = (kiln__device_info){.device = {.type = KILN_DEVICE_TYPE_CPU, .id = id},
                               .kind = "cpu",
                               .n_memories = 1,
                               .memories = host_memory};
    return KILN_OK;
}
