/* SPDX-License-Identifier: Apache-2.0 */
/* Compiling generated CUDA C to a cubin for one architecture, cached on disk
 * (base/disk_cache.h): NVRTC when its library opens (libnvrtc.so.13, by dlopen), else the
 * toolkit's nvcc (KILN_NVCC, or /usr/local/cuda/bin/nvcc); never fast math, no fused
 * multiply-add, exact division and square root. The cache key covers the source, the
 * architecture, the flags and the compiler (NVRTC's version, or nvcc's). */
#ifndef KILN_BACKENDS_CUDA_COMPILER_H
#define KILN_BACKENDS_CUDA_COMPILER_H

#include <stdbool.h>
#include <stddef.h>

#include "base/disk_cache.h"
#include "kiln/ctx.h"

typedef struct kiln__cubin {
    void *data; /* free() */
    size_t size;
    bool cached;       /* taken from the cache, not compiled now */
    char compiler[64]; /* "nvrtc 13.0", "nvcc 13.0.88" */
    char log[2048];    /* the compiler's messages (register and spill counts among them) */
} kiln__cubin;

/* Which compiler this process would use, and why not when none: false with a reason. */
bool kiln__cuda_compiler_available(char *reason, size_t cap);

/* The cubin of `source` (the prelude is prepended) for sm_<arch> (90 for an H200), from
 * cache when it holds one (cache may be NULL), else compiled and stored. Errors:
 * UNAVAILABLE (no compiler: the reason), INVALID_ARGUMENT (the source does not compile: the
 * log), RESOURCE_EXHAUSTED. */
kiln_status kiln__cuda_compile(kiln_ctx *cx, const char *source, int arch, kiln__disk_cache *cache,
                               kiln__cubin *out);

#endif
