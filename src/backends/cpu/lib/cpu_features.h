/* SPDX-License-Identifier: Apache-2.0 */
/* What the CPU can run: kernels compiled for an instruction set (target attributes) are
 * called only when these say so. Each is asked of the CPU once per process; concurrent
 * first calls compute the same answer. Thread-safe. */
#ifndef KILN_BACKENDS_CPU_CPU_FEATURES_H
#define KILN_BACKENDS_CPU_CPU_FEATURES_H

#include <stdbool.h>

bool kiln__cpu_avx2(void);     /* AVX2 */
bool kiln__cpu_avx2_fma(void); /* AVX2 and FMA */
bool kiln__cpu_avx512(void);   /* AVX-512 F and DQ, with AVX2 and FMA */

/* The size of the last-level data cache in bytes, as the C library reports it (L3, else
 * L2), or 4 MiB when it reports neither. */
long kiln__cpu_llc_bytes(void);

#endif
