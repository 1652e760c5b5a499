/* SPDX-License-Identifier: Apache-2.0 */
/* f16 and bf16 to f32, exactly, inline so that loops over them vectorize. The public
 * kiln_f16_to_f32 / kiln_bf16_to_f32 are these; kernels include this header directly. */
#ifndef KILN_CORE_HALF_H
#define KILN_CORE_HALF_H

#include <stdint.h>
#include <string.h>

static inline float kiln__f16_to_f32_inline(uint16_t h) {
    uint32_t o = (uint32_t)(h & 0x7fffu) << 13, e = o & 0x0f800000u;
    uint32_t normal = o + (112u << 23), special = o + (224u << 23), sub = o + (113u << 23);
    float f;
    memcpy(&f, &sub, sizeof f);
    f -= 0x1p-14f; /* subnormals: (1 + m) * 2^-14 - 2^-14 */
    uint32_t sub_bits;
    memcpy(&sub_bits, &f, sizeof sub_bits);
    uint32_t bits = e == 0x0f800000u ? special : e == 0 ? sub_bits : normal;
    bits |= (uint32_t)(h & 0x8000u) << 16;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline float kiln__bf16_to_f32_inline(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

#endif
