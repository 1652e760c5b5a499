/* SPDX-License-Identifier: Apache-2.0 */
/* The tiled fused-kernel engine: runs a kernel description (ir/kernel.h) on the CPU.
 *
 * The iteration space is cut into tiles of a few thousand elements (cache-sized). For each
 * tile every input is loaded (contiguous inputs are read in place; broadcast, strided and
 * iota inputs are gathered; scalars are filled once), each instruction runs as one
 * precompiled vectorized primitive over the tile (f32/f64 with AVX2/FMA when the CPU has
 * it; SLEEF's 1-ulp functions for exp, log, tanh and the rest, vmath.c's f32 sin and cos
 * (at most 0.502 ulp), exactly the evaluator's), and the outputs are stored. f16/bf16 registers
 * hold f32 values rounded to their dtype after every instruction, as the evaluator computes them.
 * Instructions without a fast primitive (every integer and bool op, compare, convert, floor, ...)
 * run the evaluator's own kernel on the tile, so results equal the evaluator's bit for bit.
 *
 * Tiles are split across threads (kiln__parallel_for) when a kernel is large enough;
 * each tile writes its own outputs, so results do not depend on the thread count. A
 * kernel ending in a reduction over its inner axes splits whole rows across threads (each
 * row reduced by one thread, in tiles cut the same way for every thread count); any other
 * reduction runs on one thread in row-major order. Float sums and products differ from the
 * evaluator's pairwise order by rounding only.
 *
 * Building allocates through a caller's allocator; running allocates nothing (the tile
 * registers live on the stack). */
#ifndef KILN_BACKENDS_CPU_FUSED_H
#define KILN_BACKENDS_CPU_FUSED_H

#include <stdbool.h>
#include <stddef.h>

#include "backends/cpu/eval/eval.h"
#include "ir/kernel.h"

typedef struct kiln__fused kiln__fused;

/* Makes the executable form of kernel k (which it does not keep: everything needed is
 * copied), allocating with alloc(user, size, align). NULL on failure, with the error in cx
 * (RESOURCE_EXHAUSTED, or what alloc recorded). */
kiln__fused *kiln__fused_build(kiln_ctx *cx, const kiln__kernel *k,
                               void *(*alloc)(void *user, size_t size, size_t align), void *user);

/* Runs the kernel: operands[i] is the tensor of k->operands[i]; results holds the outputs
 * (k->outputs order) and then, if the kernel reduces, the reduction's result. Results may
 * share memory with an operand only where kiln__fused_inplace_ok allows it. Errors are
 * recorded in cx. Thread-safe (a kernel is immutable). */
kiln_status kiln__fused_run(kiln_ctx *cx, const kiln__fused *f, kiln_tensor *const *operands,
                            kiln_tensor **results);

/* Can an output be written over operand `operand`'s buffer (of the same byte size)? True
 * when every read of it is the element at the same position, read before that position is
 * stored. */
bool kiln__fused_inplace_ok(const kiln__fused *f, int32_t operand);

/* The tile length (elements) the kernel runs with, for printing. */
int64_t kiln__fused_tile(const kiln__fused *f);

/* The number of instructions that run the evaluator's kernel on tiles (no fast primitive). */
int32_t kiln__fused_n_fallback(const kiln__fused *f);

/* The kernel's native version (backends/cpu/engine/native.h), or NULL: a reference the kernel
 * holds, for its executable to release with it. kiln__fused_run runs it once it is ready. */
struct kiln__native *kiln__fused_native(const kiln__fused *f);

#endif
