/* oneDNN opened on first use (dnnl_api.h). The library's name is its soname as found at
 * build time (KILN_DNNL_SONAME), so the run-time package alone (no -dev symlink) is enough. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "backends/cpu/eval_linalg.h"

#ifdef KILN_HAVE_DNNL
#include <dlfcn.h>
#include <pthread.h>

#include "backends/cpu/dnnl_api.h"

#ifndef KILN_DNNL_SONAME
#define KILN_DNNL_SONAME "libdnnl.so"
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *soname = KILN_DNNL_SONAME;
static kiln__dnnl_api api;
static bool loaded;
static char error[512];

void kiln__dnnl_api_use_library(const char *name) { soname = name; }

static void load(void) {
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(error, sizeof error, "oneDNN (%s) could not be opened: %s", soname,
                 why ? why : "unknown reason");
        return;
    }
    /* ISO C cannot convert void * to a function pointer; POSIX guarantees the
     * representation, so the bytes are copied. */
#define KILN_DNNL_RESOLVE(name)                                                    \
    {                                                                              \
        void *sym = dlsym(lib, #name);                                             \
        if (!sym) {                                                                \
            snprintf(error, sizeof error, "oneDNN (%s) has no %s", soname, #name); \
            dlclose(lib);                                                          \
            return;                                                                \
        }                                                                          \
        memcpy(&api.name, &sym, sizeof sym);                                       \
    }
    KILN_DNNL_FUNCTIONS(KILN_DNNL_RESOLVE)
#undef KILN_DNNL_RESOLVE
    loaded = true; /* the library stays open for the life of the process */
}

const kiln__dnnl_api *kiln__dnnl_api_get(void) {
    pthread_once(&once, load);
    return loaded ? &api : NULL;
}

const char *kiln__dnnl_api_error(void) { return error; }

#else
void kiln__dnnl_api_use_library(const char *name) { (void)name; }

const char *kiln__dnnl_api_error(void) { return "built without oneDNN"; }
#endif

bool kiln__dnnl_api_mapped(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return false;
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, "/libdnnl.so") != NULL;
    fclose(f);
    return found;
}
