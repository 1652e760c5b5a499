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

#endif
