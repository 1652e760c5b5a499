/* SPDX-License-Identifier: Apache-2.0 */
/* OpenBLAS opened on first use (blas_api.h). KILN_OPENBLAS_LIBRARY is the library found at
 * build time: the OpenMP flavour by its full path, else the soname. */
#define _POSIX_C_SOURCE 200809L
#include "backends/cpu/lib/blas_api.h"

#include <pthread.h>
#include <stdatomic.h>

#include "base/dynlib.h"
#include "base/threads.h"

#ifndef KILN_OPENBLAS_LIBRARY
#define KILN_OPENBLAS_LIBRARY "libopenblas.so.0"
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *library = KILN_OPENBLAS_LIBRARY;
static kiln__blas_api api;
static atomic_bool loaded;
static char error[512];

void kiln__blas_api_use_library(const char *name) { library = name; }

static void load(void) {
#define KILN_BLAS_NAME(name) #name,
#define KILN_BLAS_SLOT(name) (void *)&api.name,
    static const char *const names[] = {KILN_BLAS_FUNCTIONS(KILN_BLAS_NAME)};
    void *const slots[] = {KILN_BLAS_FUNCTIONS(KILN_BLAS_SLOT)};
#undef KILN_BLAS_NAME
#undef KILN_BLAS_SLOT
    kiln__threads_before_openmp(); /* its OpenMP team, if it has one, then parks */
    if (!kiln__dynlib_open(library, "OpenBLAS", names, slots, sizeof names / sizeof names[0], error,
                           sizeof error))
        return;
    /* From here the thread-count hook (blas_threads.c) keeps the count in step; this sets
     * the count it missed. */
    atomic_store(&loaded, true);
    api.openblas_set_num_threads(kiln__threads_count());
}

const kiln__blas_api *kiln__blas_api_get(void) {
    pthread_once(&once, load);
    return atomic_load_explicit(&loaded, memory_order_acquire) ? &api : NULL;
}

const kiln__blas_api *kiln__blas_api_if_open(void) {
    return atomic_load_explicit(&loaded, memory_order_acquire) ? &api : NULL;
}

const char *kiln__blas_api_error(void) { return error; }

bool kiln__blas_api_mapped(void) { return kiln__dynlib_mapped("/libopenblas"); }
