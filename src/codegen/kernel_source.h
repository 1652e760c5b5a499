/* SPDX-License-Identifier: Apache-2.0 */
/* C and CUDA C for fused kernels (kernel_source.c) and the prelude they are compiled with
 * (prelude.cu, built into the library as text). */
#ifndef KILN_CODEGEN_KERNEL_SOURCE_H
#define KILN_CODEGEN_KERNEL_SOURCE_H

#include "base/strbuf.h"
#include "ir/kernel.h"

/* The prelude's source: compiled before every generated kernel, by NVRTC for a device or
 * by the host's C compiler (the same source, one thread walking the grid). */
const char *kiln__kernel_prelude(void);

/* Appends `KILN_KERNEL name(kiln_args a) { ... }` for kernel k: its inputs a.in[operand],
 * its outputs a.out[0..n_outputs), then its reduction's result a.out[n_outputs]; a.n the
 * iteration space's element count. A kernel without a reduction runs as any grid (a
 * grid-stride loop); one with a reduction as blocks of KILN_REDUCE_THREADS threads (256),
 * one block per result element at a time. Errors: UNIMPLEMENTED
 * (a reduction, an op or conversion not generated yet: the caller runs the kernel another
 * way), RESOURCE_EXHAUSTED. */
kiln_status kiln__kernel_source(kiln_ctx *cx, const kiln__kernel *k, const char *name,
                                kiln__strbuf *sb);
/* The bits are the CPU evaluator's, with one exception: when both operands of an add or a
 * multiply are NaN, the result is one of them quieted, and which one is the compiler's
 * choice (they commute, so it may swap them; the CPU engine gives the first). Keeping the
 * first measured 25% slower on the heat loop's kernel; StableHLO does not say which. f16 and
 * bf16 abs and negate act on the bits (a NaN keeps its payload), as in the evaluator. */

/* The host's form of an elementwise kernel whose instructions j with call[j] set are
 * computed by functions of arrays instead of inline: `void f(void *r, const void *x,
 * const void *, const void *, long n)` (the CPU engine's vector math, whose bits C's libm
 * would not give), the k-th such instruction (in order) through the source's
 * `kiln_native_prims[k]`, which the loader sets. The elements run in tiles of 512: each
 * stretch of inline instructions as one loop over the tile, each call over the tile's
 * arrays. Host C only (one thread walks the part [a.first, a.last)). A kernel with a
 * reduction does not reduce in this form: it stores the reduced register's value of each
 * element i of the part into a.out[n_outputs][i - a.first] (the caller folds them, in
 * its own order), besides its outputs. Errors as kiln__kernel_source's (a reduction of
 * f16/bf16 is UNIMPLEMENTED). */
kiln_status kiln__kernel_source_tiled(kiln_ctx *cx, const kiln__kernel *k, const char *name,
                                      const bool *call, kiln__strbuf *sb);

#endif
