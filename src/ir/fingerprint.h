/* SPDX-License-Identifier: Apache-2.0 */
/* A module's fingerprint: bytes that describe everything its compilation depends on (the
 * calling convention, the functions, every block's argument types, every op's kind, operands,
 * result types, attributes and regions, small constants by value), so that two modules with equal
 * fingerprints compile to executables that compute the same thing. A cache of compiled
 * modules keys on it (runtime/ad_cache.c). */
#ifndef KILN_IR_FINGERPRINT_H
#define KILN_IR_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "ir/ir.h"

/* Constants of more bytes than this make a module unfit for a fingerprint: comparing
 * them would cost as much as what a cache saves. */
#define KILN__FINGERPRINT_MAX_CONSTANT 256
/* Nor is a module whose fingerprint would be longer. */
#define KILN__FINGERPRINT_MAX_BYTES ((size_t)256 << 10)

typedef struct kiln__fingerprint {
    kiln__strbuf bytes; /* bytes.data[0..bytes.length) */
    uint64_t hash;      /* of those bytes */
} kiln__fingerprint;

/* Writes m's fingerprint into *out, which the caller frees with kiln__fingerprint_free
 * (also after a failure). False when m cannot have one (a large constant, checks, a
 * fingerprint over the bound: nothing recorded) or memory runs out (RESOURCE_EXHAUSTED
 * recorded in cx). Numbers the values' scratch ids. */
bool kiln__module_fingerprint(kiln_ctx *cx, kiln_module *m, kiln__fingerprint *out);

/* Whether two fingerprints are the same bytes. */
bool kiln__fingerprint_equal(const kiln__fingerprint *a, const kiln__fingerprint *b);

void kiln__fingerprint_free(kiln__fingerprint *f);

#endif
