/* SPDX-License-Identifier: Apache-2.0 */
/* The file jax.export's Exported.serialize() writes: a FlatBuffer (schema
 * jax/_src/export/serialization.fbs, root table Exported) whose field 13,
 * mlir_module_serialized, holds the portable artifact. Only that field is read; the
 * module inside carries the calling convention kiln needs (donation as argument
 * attributes), and its arguments are the kept ones (module_kept_var_idx). */
#include <string.h>

#include "ir/bytecode.h"
#include "ir/vhlo.h"

/* The Exported table's field holding the artifact. */
#define MLIR_MODULE_SERIALIZED 13

static uint32_t u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t u16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

bool kiln__jax_export_artifact(const void *data, size_t size, size_t *out_off, size_t *out_len) {
    const unsigned char *b = data;
    if (!b || size < 12 || size > UINT32_MAX) return false;
    uint32_t table = u32(b);
    if (table > size - 4) return false;
    int64_t vtable = (int64_t)table - (int32_t)u32(b + table);
    if (vtable < 0 || (uint64_t)vtable > size - 4) return false;
    uint16_t vt_size = u16(b + vtable), table_size = u16(b + vtable + 2);
    size_t entry = 4 + 2 * MLIR_MODULE_SERIALIZED;
    if (vt_size < entry + 2 || (uint64_t)vtable + vt_size > size) return false;
    uint16_t field = u16(b + vtable + entry);
    if (field == 0 || field + 4u > table_size || (uint64_t)table + field + 4 > size) return false;
    uint64_t vec = (uint64_t)table + field + u32(b + table + field);
    if (vec > size - 4) return false;
    uint64_t len = u32(b + vec);
    if (len > size - vec - 4) return false;
    if (!kiln__bc_is_bytecode(b + vec + 4, (size_t)len)) return false;
    *out_off = (size_t)vec + 4;
    *out_len = (size_t)len;
    return true;
}
