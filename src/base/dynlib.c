/* SPDX-License-Identifier: Apache-2.0 */
/* Libraries opened at run time (dynlib.h). */
#define _POSIX_C_SOURCE 200809L
#include "base/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

bool kiln__dynlib_open(const char *library, const char *what, const char *const *names,
                       void *const *slots, size_t n, char *error, size_t cap) {
    void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(error, cap, "%s (%s) could not be opened: %s", what, library,
                 why ? why : "unknown reason");
        return false;
    }
    for (size_t k = 0; k < n; k++) {
        void *sym = dlsym(lib, names[k]);
        if (!sym) {
            snprintf(error, cap, "%s (%s) has no %s", what, library, names[k]);
            dlclose(lib);
            return false;
        }
        /* ISO C cannot convert void * to a function pointer; POSIX guarantees the
         * representation, so the bytes are copied. */
        memcpy(slots[k], &sym, sizeof sym);
    }
    return true;
}

bool kiln__dynlib_mapped(const char *needle) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return false;
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}
