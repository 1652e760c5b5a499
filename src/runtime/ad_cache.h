/* SPDX-License-Identifier: Apache-2.0 */
/* The executables the eager transformations compile: kiln_grad and its friends on
 * concrete tensors trace and differentiate the function at every call, then look the
 * derivative up here before compiling it. Entries are keyed by the module's fingerprint
 * (ir/fingerprint.h: every op, type, attribute and small constant) and the device and
 * backend kiln_compile would choose, so a hit runs exactly what a fresh compile would.
 * At most KILN_AD_CACHE_ENTRIES per ctx, the least recently used evicted; modules
 * without a fingerprint (a large captured constant) are compiled each time. */
#ifndef KILN_RUNTIME_AD_CACHE_H
#define KILN_RUNTIME_AD_CACHE_H

#include "kiln/jit.h"

/* *out_exe: a new reference to an executable of m, from the cache or compiled (and then
 * cached). Errors as kiln_compile's. */
kiln_status kiln__ad_compile(kiln_ctx *cx, kiln_module *m, kiln_exe **out_exe);

#endif
