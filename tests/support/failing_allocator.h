/* SPDX-License-Identifier: Apache-2.0 */
/* An allocator for tests: counts allocations and bytes, checks frees against sizes, and
 * fails every allocation after the first `fail_after` (negative: never fails). */
#ifndef KILN_TEST_FAILING_ALLOCATOR_H
#define KILN_TEST_FAILING_ALLOCATOR_H

#include <kiln/kiln.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct failing_allocator {
    int64_t fail_after; /* allocations allowed before failures start; -1 = unlimited */
    int64_t allocations;
    int64_t frees;
    int64_t live_blocks;
    int64_t live_bytes;
    int64_t failures;
    bool fail_once; /* fail one allocation (the first after fail_after), then none */
    kiln_allocator allocator;
} failing_allocator;

void failing_allocator_init(failing_allocator *fa, int64_t fail_after);

/* Initialises fa (never failing until fail_after is set) and returns a new ctx allocating
 * through it (the caller releases it), or NULL when the ctx cannot be made. */
kiln_ctx *failing_allocator_ctx(failing_allocator *fa);

#endif
