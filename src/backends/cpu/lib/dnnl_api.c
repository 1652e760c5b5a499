/* SPDX-License-Identifier: Apache-2.0 */
/* oneDNN opened on first use (dnnl_api.h). The library's name is its soname as found at
 * build time (KILN_DNNL_SONAME), so the run-time package alone (no -dev symlink) is enough. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>

#include "backends/cpu/lib/dnnl_api.h"
#include "base/dynlib.h"
#include "base/threads.h"

#ifdef KILN_HAVE_DNNL
#include <pthread.h>

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
#define KILN_DNNL_NAME(name) #name,
#define KILN_DNNL_SLOT(name) (void *)&api.name,
    static const char *const names[] = {KILN_DNNL_FUNCTIONS(KILN_DNNL_NAME)};
    void *const slots[] = {KILN_DNNL_FUNCTIONS(KILN_DNNL_SLOT)};
#undef KILN_DNNL_NAME
#undef KILN_DNNL_SLOT
    kiln__threads_before_openmp(); /* its OpenMP team, if it has one, then parks */
    loaded = kiln__dynlib_open(soname, "oneDNN", names, slots, sizeof names / sizeof names[0],
                               error, sizeof error);
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

bool kiln__dnnl_api_mapped(void) { return kiln__dynlib_mapped("/libdnnl.so"); }
