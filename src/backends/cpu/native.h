/* The native tier of fused kernels, first part (issue #23): a kernel's C (src/codegen)
 * compiled by the system C compiler into a shared object, cached on disk
 * (base/disk_cache.h), loaded and swapped in for the tiled engine when it is ready.
 *
 * Which kernels: elementwise ones (no reduction) whose every instruction gives the same bits
 * in C as in the tiled engine: everything but the transcendentals (exp, log, sin, tanh, ...,
 * power and atan2 on floats), which keep the tiled engine's vector math. So a call gives
 * the same results whichever ran it.
 *
 * When: KILN_NATIVE=background compiles on a thread of its own and never blocks a call (the
 * tiled engine runs until the native function is there); KILN_NATIVE=wait compiles while
 * kiln_compile runs (for tests and benchmarks); off (the default, and without a compiler:
 * KILN_CC, else cc on PATH) builds nothing. The compiler runs with -O2 -march=native
 * -ffp-contract=off (no fused multiply-add: the tiled engine does not contract either).
 * Results are the same for every thread count (each element is computed on its own). */
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

/* What the tier has done in this process, for tests and kiln_exe_print. */
typedef struct kiln__native_stats {
    int64_t requested, compiled, from_cache, failed, ready;
    int64_t runs; /* calls that ran native code */
} kiln__native_stats;
kiln__native_stats kiln__native_stats_get(void);

/* The policy in force ("off", "background", "wait") and, when off for lack of a compiler,
 * why. */
const char *kiln__native_policy(const char **why);

#endif
