/* SPDX-License-Identifier: Apache-2.0 */
/* The native tier of fused kernels (issue #23): a kernel's loop as C (src/codegen),
 * compiled by the system C compiler into a shared object, cached on disk
 * (base/disk_cache.h: the ctx's cache_dir, else the environment's), loaded and swapped in
 * for the tiled engine when it is ready.
 *
 * Which kernels: elementwise ones of any number of outputs, and the elementwise part of
 * kernels with a reduction (their values, folded by the tiled engine). Instructions
 * with the same bits in C as in the tiled engine (everything but the transcendentals) are
 * inline; the f32/f64 transcendentals (exp, log, sin, tanh, ...) call the tiled engine's own
 * vector math on tiles of 512 elements (kiln__kernel_source_tiled), so a call gives the same
 * bits whichever engine ran it. Kernels with a transcendental of f16/bf16, a float power or
 * atan2, or an f16/bf16 reduction stay on the tiled engine.
 *
 * When (kiln_ctx_options.native, else KILN_NATIVE=off|background|wait, else background):
 * background compiles on one thread of the process and never blocks kiln_compile or a call
 * (the tiled engine runs until the native function is there; a job whose executable is gone
 * is dropped); wait compiles inside kiln_compile (benchmarks, tests); off builds nothing.
 * Without a compiler (KILN_CC, else cc on PATH; probed once, on the compiling thread) the
 * tiled engine runs everything and kiln_exe_print says why. The compiler runs with -O3
 * -march=native -ffp-contract=off (no contraction: the tiled engine contracts nothing);
 * the cache key covers the source, the compiler's version, the flags and the CPU's model and
 * features. Results are the same for every thread count (each element on its own). */
#ifndef KILN_BACKENDS_CPU_NATIVE_H
#define KILN_BACKENDS_CPU_NATIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/kernel.h"
#include "kiln/ctx.h"

typedef struct kiln__native kiln__native;

/* A native version of kernel k, compiled now or in the background by the policy; NULL when
 * the policy is off, the kernel does not qualify or no compiler is there. The caller holds
 * the reference (kiln__native_release). */
kiln__native *kiln__native_request(kiln_ctx *cx, const kiln__kernel *k);
void kiln__native_release(kiln__native *n);

/* Runs it when it is ready: in[operand] the operands' data, out[o] the outputs', n the
 * iteration space's element count (split over the thread pool). False when not ready (the
 * caller runs the tiled engine). Thread-safe. */
bool kiln__native_run(const kiln__native *n, const unsigned char *const *in, int32_t n_in,
                      unsigned char *const *out, int32_t n_out, int64_t count);

/* The generated kernels' argument block (codegen/prelude.cu's kiln_args) and entry. */
typedef struct kiln__native_args {
    const void *in[24];
    void *out[8];
    long long n, first, last;
} kiln__native_args;
typedef void (*kiln__native_fn)(kiln__native_args);

/* A kernel with a reduction, run part by part: kiln__native_part_begin binds the buffers
 * (false when the native code is not ready), then each kiln__native_part_run computes
 * elements [first, last) of the iteration space: its outputs, and the reduced register's
 * values into values[i - first], which the caller folds as the tiled engine does (so the
 * same bits). Thread-safe (a part per thread). */
typedef struct kiln__native_part {
    kiln__native_fn fn;
    kiln__native_args a;
} kiln__native_part;
bool kiln__native_part_begin(const kiln__native *n, const unsigned char *const *in, int32_t n_in,
                             unsigned char *const *out, int32_t n_out, void *values,
                             kiln__native_part *p);
static inline void kiln__native_part_run(kiln__native_part *p, int64_t first, int64_t last) {
    p->a.first = first, p->a.last = last;
    p->fn(p->a);
}

/* What the tier has done in this process, for tests and kiln_exe_print. */
typedef struct kiln__native_stats {
    int64_t requested, compiled, from_cache, failed, ready;
    int64_t runs; /* calls that ran native code */
} kiln__native_stats;
kiln__native_stats kiln__native_stats_get(void);

/* 1: its function is there (calls run it); 0: still compiling; -1: it failed to compile or
 * load (it stays tiled). */
int kiln__native_state(const kiln__native *n);

/* The mode in force for cx (never KILN_NATIVE_DEFAULT). Cheap. */
kiln_native_mode kiln__native_mode(const kiln_ctx *cx);

/* Whether a compiler is there; when not, *why (may be NULL) says so. Probes it the first
 * time (a process start: not for the compile path in the background mode). */
bool kiln__native_compiler(const char **why);

#endif
