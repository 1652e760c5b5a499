/* OpenBLAS opened on first use (blas_api.h). KILN_OPENBLAS_LIBRARY is the library found at
 * build time: the OpenMP flavour by its full path, else the soname. */
#define _POSIX_C_SOURCE 200809L
#include "backends/cpu/blas_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

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
    void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(error, sizeof error, "OpenBLAS (%s) could not be opened: %s", library,
                 why ? why : "unknown reason");
        return;
    }
    /* ISO C cannot convert void * to a function pointer; POSIX guarantees the
     * representation, so the bytes are copied. */
#define KILN_BLAS_RESOLVE(name)                                                       \
    {                                                                                 \
        void *sym = dlsym(lib, #name);                                                \
        if (!sym) {                                                                   \
            snprintf(error, sizeof error, "OpenBLAS (%s) has no %s", library, #name); \
            dlclose(lib);                                                             \
            return;                                                                   \
        }                                                                             \
        memcpy(&api.name, &sym, sizeof sym);                                          \
    }
    KILN_BLAS_FUNCTIONS(KILN_BLAS_RESOLVE)
#undef KILN_BLAS_RESOLVE
    /* The library stays open for the life of the process. From here the thread-count hook
     * (blas_threads.c) keeps the count in step; this sets the count it missed. */
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

bool kiln__blas_api_mapped(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return false;
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, "/libopenblas") != NULL;
    fclose(f);
    return found;
}
