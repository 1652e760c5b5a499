/* SPDX-License-Identifier: Apache-2.0 */
/* The executable the public API hands out (kiln_exe): the runtime's shell around a
 * backend's executable. The shell knows the calling convention (argument names and types,
 * donation, preserved results and aliases) and checks every call against it; the backend
 * (src/backend/backend.h) owns everything about how the program runs. */
#ifndef KILN_RUNTIME_EXE_H
#define KILN_RUNTIME_EXE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "kiln/jit.h"

struct kiln_exe {
    atomic_int refs;
    kiln_allocator allocator; /* of the compiling ctx: this shell's memory */
    size_t shell_size;        /* the one allocation holding the shell and its arrays */
    const kiln__backend *backend;
    kiln__executable *impl; /* the backend's */
    kiln_device device;
    char *name;       /* the module's */
    char *notes;      /* the module's notes as "note: ...\n" lines, or NULL */
    char **arg_names; /* per argument, or NULL entries */
    int32_t n_args, n_results;
    kiln__type *arg_types;
    kiln_arg_spec *arg_specs, *result_specs; /* the types as kiln_exe_info hands them out */
    bool *donated;
    int32_t *preserved, *aliases;
    int32_t n_donated;
    kiln__executable_info info; /* the backend's figures, asked once at compile time */
};

#endif
