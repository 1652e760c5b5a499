/* SPDX-License-Identifier: Apache-2.0 */
/* Instantiates a template body once per element size, for kernels that only move bytes
 * (copies, transposes, gathers): the body named by ELEMENT_SIZE_BODY (a quoted include path)
 * is included with T = uint8_t, uint16_t, uint32_t, uint64_t, kiln__u128 (complex<f64>) and
 * FN(name) = name##_1, _2, _4, _8, _16, so that a kernel of one size is FN(name) and a caller
 * switches on the element size.
 * Usage:
 *     #define ELEMENT_SIZE_BODY "backends/cpu/eval/movement_typed.inc"
 *     #include "backends/cpu/eval/per_element_size.h"
 * The body #undefs T and FN; this file #undefs ELEMENT_SIZE_BODY. No include guard: it is
 * meant to be included once per body. */

#define T uint8_t
#define FN(name) name##_1
#include ELEMENT_SIZE_BODY

#define T uint16_t
#define FN(name) name##_2
#include ELEMENT_SIZE_BODY

#define T uint32_t
#define FN(name) name##_4
#include ELEMENT_SIZE_BODY

#define T uint64_t
#define FN(name) name##_8
#include ELEMENT_SIZE_BODY

#ifndef KILN__U128
#define KILN__U128
/* A 16-byte element moved as one integer, aligned as the doubles it holds (8), so that an
 * element at any multiple of 8 bytes is read with unaligned-safe moves. */
__extension__ typedef unsigned __int128 kiln__u128 __attribute__((aligned(8)));
#endif
#define T kiln__u128
#define FN(name) name##_16
#include ELEMENT_SIZE_BODY

#undef ELEMENT_SIZE_BODY
