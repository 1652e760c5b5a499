/* SPDX-License-Identifier: Apache-2.0 */
/* Calling libkiln_pjrt as a PJRT framework does, for the plugin's tests (tests/pjrt and
 * tests/tsan/pjrt_tsan.c): the library dlopen'ed, its function table, and macros that call
 * a slot with an args struct of the API's size. */
#ifndef KILN_TESTS_PJRT_CALLER_H
#define KILN_TESTS_PJRT_CALLER_H

#include <dlfcn.h>
#include <string.h>

#include "pjrt/pjrt_abi.h"

/* The function table as the framework sees it. */
typedef struct pjrt_api {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Api_Version version;
    void (*slots[129])(void);
} pjrt_api;

enum {
#define PJRT_SLOT(index, name) S_##name = index,
#include "pjrt/slots.def"
#undef PJRT_SLOT
};

/* The table of the library at `path`, or NULL (dlerror() says why). */
static inline const pjrt_api *pjrt_load(const char *path) {
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void *symbol = library ? dlsym(library, "GetPjrtApi") : NULL;
    if (!symbol) return NULL;
    const void *(*get)(void);
    memcpy(&get, &symbol, sizeof get); /* POSIX: dlsym's pointer is the function's */
    return get();
}

/* Calls slot `name` of the table `api` (a variable in scope) with args. */
#define CALL(name, args) ((PJRT_Error * (*)(PJRT_##name##_Args *)) api->slots[S_##name])(args)
/* An args struct named `name`, of the API's size, with the fields given. */
#define ARGS(name, ...) \
    PJRT_##name##_Args name = {.struct_size = PJRT_##name##_Args_STRUCT_SIZE, __VA_ARGS__}
#define ARGS0(name) PJRT_##name##_Args name = {.struct_size = PJRT_##name##_Args_STRUCT_SIZE}

#endif
