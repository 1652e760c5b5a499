/* SPDX-License-Identifier: Apache-2.0 */
/* CPU feature checks (cpu_features.h), one cached bit mask for the process. */
#include "backends/cpu/lib/cpu_features.h"

#include <stdatomic.h>
#include <unistd.h>

enum { F_KNOWN = 1, F_AVX2 = 2, F_FMA = 4, F_AVX512 = 8 };

static int features(void) {
    static atomic_int cached;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v) return v;
    v = F_KNOWN;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) v |= F_AVX2;
    if (__builtin_cpu_supports("fma")) v |= F_FMA;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) v |= F_AVX512;
#endif
    atomic_store_explicit(&cached, v, memory_order_relaxed);
    return v;
}

bool kiln__cpu_avx2(void) { return features() & F_AVX2; }

bool kiln__cpu_avx2_fma(void) { return (features() & (F_AVX2 | F_FMA)) == (F_AVX2 | F_FMA); }

bool kiln__cpu_avx512(void) { return kiln__cpu_avx2_fma() && (features() & F_AVX512); }

long kiln__cpu_llc_bytes(void) {
    static atomic_long cached;
    long v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v) return v;
    v = 0;
#if defined(_SC_LEVEL3_CACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (v <= 0) v = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    if (v <= 0) v = 4L << 20;
    atomic_store_explicit(&cached, v, memory_order_relaxed);
    return v;
}
