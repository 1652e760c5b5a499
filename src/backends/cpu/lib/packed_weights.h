/* SPDX-License-Identifier: Apache-2.0 */
/* Packed weights: copies of an operand in a kernel's preferred layout (a convolution's
 * blocked weights), kept between calls and reused while the operand's bytes are provably
 * unchanged, so that a network's weights are re-laid out once, not on every call.
 *
 * "Unchanged" is the storage's version (core/tensor_internal.h): a fresh number whenever
 * kiln hands the bytes out for writing, so donation, a recycled result buffer, kiln_move
 * and a new tensor at a recycled address all miss. A copy is made only for an operand seen
 * unchanged a second time: weights that change every call (a training step) are never
 * copied, and cost one lookup. The copies live in one process-wide table bounded by
 * KILN__PACKED_BUDGET bytes, least recently used evicted first; a copy in use is never
 * evicted. Thread-safe (one mutex; fork-safe). */
#ifndef KILN_BACKENDS_CPU_PACKED_WEIGHTS_H
#define KILN_BACKENDS_CPU_PACKED_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/tensor.h"

#define KILN__PACKED_BUDGET ((size_t)512 << 20)

/* Writes the packed form of the operand (`bytes` bytes) to dst; false on failure. */
typedef bool (*kiln__pack_fn)(void *user, void *dst);

typedef struct kiln__packed kiln__packed;

/* The packed copy of t for `layout` (an address naming the kernel and its layout, valid
 * for the life of the process, such as a cached primitive), made with pack(user, dst) when
 * there is none for t's current bytes. NULL when t is untracked, seen for the first time
 * in this version, too large for the budget, or out of memory: the caller packs into
 * scratch of its own as before. A non-NULL result stays valid until
 * kiln__packed_release(*handle). */
const void *kiln__packed_get(const void *layout, const kiln_tensor *t, size_t bytes,
                             kiln__pack_fn pack, void *user, kiln__packed **handle);

/* Ends the use of a copy kiln__packed_get returned; NULL is a no-op. */
void kiln__packed_release(kiln__packed *handle);

/* Tests and benchmarks: copies made and reused since the process started, and the bytes
 * held now. */
typedef struct kiln__packed_stats {
    uint64_t packed, reused;
    size_t bytes;
} kiln__packed_stats;
kiln__packed_stats kiln__packed_stats_get(void);

/* Tests only: with true, no copy is made or reused (every call packs into its scratch, as
 * before this cache). Process-wide; false restores the default. */
void kiln__packed_force_off(bool on);

#endif
