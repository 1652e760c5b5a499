/* SPDX-License-Identifier: Apache-2.0 */
/* Packed weights (packed_weights.h): one list, most recently used first, of copies and of
 * candidates (operands seen once, with no copy yet). A lookup is a walk of the list: a
 * process holds a copy per weight tensor of its networks (tens), and candidates are capped. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise advice values */
#include "backends/cpu/lib/packed_weights.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "core/tensor_internal.h"

#define MAX_CANDIDATES 256
#define HUGE_BYTES ((size_t)2 << 20)

struct kiln__packed {
    const void *layout, *data;
    uint64_t version;
    size_t bytes;
    void *buf; /* NULL: a candidate */
    int users;
    struct kiln__packed *prev, *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static kiln__packed *head, *tail;
static size_t held;
static int n_candidates;
static uint64_t n_packed, n_reused;
static atomic_bool forced_off;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void) { pthread_mutex_lock(&lock); }
static void fork_release(void) { pthread_mutex_unlock(&lock); }
static void fork_hooks(void) { (void)pthread_atfork(fork_prepare, fork_release, fork_release); }

void kiln__packed_force_off(bool on) { atomic_store(&forced_off, on); }

/* ---- the list, under lock ---------------------------------------------------------------- */

static void unlink_entry(kiln__packed *p) {
    if (p->prev) p->prev->next = p->next;
    else head = p->next;
    if (p->next) p->next->prev = p->prev;
    else tail = p->prev;
    p->prev = p->next = NULL;
}

static void push_front(kiln__packed *p) {
    p->prev = NULL;
    p->next = head;
    if (head) head->prev = p;
    else tail = p;
    head = p;
}

static void drop(kiln__packed *p) {
    unlink_entry(p);
    if (p->buf) held -= p->bytes;
    else n_candidates--;
    free(p->buf);
    free(p);
}

/* Frees unused copies, oldest first, until `need` more bytes fit the budget, and the
 * oldest candidates beyond the cap. */
static void evict(size_t need) {
    for (kiln__packed *p = tail, *prev; p && held + need > KILN__PACKED_BUDGET; p = prev) {
        prev = p->prev;
        if (p->buf && p->users == 0) drop(p);
    }
    for (kiln__packed *p = tail, *prev; p && n_candidates > MAX_CANDIDATES; p = prev) {
        prev = p->prev;
        if (!p->buf) drop(p);
    }
}

/* The entry for these bytes; entries of the same operand memory and layout with another
 * version are stale (those bytes are gone) and freed on the way when unused. */
static kiln__packed *find(const void *layout, const void *data, uint64_t version, size_t bytes) {
    kiln__packed *found = NULL;
    for (kiln__packed *p = head, *next; p; p = next) {
        next = p->next;
        if (p->layout != layout || p->data != data) continue;
        if (p->version == version && p->bytes == bytes)
            found = p;
        else if (p->users == 0)
            drop(p);
    }
    return found;
}

/* ---- the entry points -------------------------------------------------------------------- */

static void *alloc_copy(size_t bytes) {
    size_t align = bytes >= HUGE_BYTES ? HUGE_BYTES : 64;
    void *buf = NULL;
    if (posix_memalign(&buf, align, (bytes + align - 1) / align * align) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    if (bytes >= HUGE_BYTES) (void)madvise(buf, (bytes + align - 1) / align * align, MADV_HUGEPAGE);
#endif
    return buf;
}

const void *kiln__packed_get(const void *layout, const kiln_tensor *t, size_t bytes,
                             kiln__pack_fn pack, void *user, kiln__packed **handle) {
    *handle = NULL;
    uint64_t version = kiln__tensor_version(t);
    const void *data = kiln_tensor_data(t);
    if (!layout || version == 0 || !data || bytes == 0 || bytes > KILN__PACKED_BUDGET ||
        atomic_load_explicit(&forced_off, memory_order_relaxed))
        return NULL;
    pthread_once(&fork_once, fork_hooks);
    pthread_mutex_lock(&lock);
    kiln__packed *p = find(layout, data, version, bytes);
    if (p && p->buf) {
        p->users++;
        n_reused++;
        unlink_entry(p);
        push_front(p);
        pthread_mutex_unlock(&lock);
        *handle = p;
        return p->buf;
    }
    if (!p) { /* first seen: a candidate, no copy */
        p = calloc(1, sizeof *p);
        if (p) {
            *p = (kiln__packed){.layout = layout, .data = data, .version = version,
                                .bytes = bytes};
            push_front(p);
            n_candidates++;
            evict(0);
        }
        pthread_mutex_unlock(&lock);
        return NULL;
    }
    /* seen before with these bytes: make the copy (outside the lock; the candidate is
     * pinned meanwhile so that nothing frees it) */
    p->users++;
    pthread_mutex_unlock(&lock);
    void *buf = alloc_copy(bytes);
    bool ok = buf && pack(user, buf);
    pthread_mutex_lock(&lock);
    p->users--;
    if (ok && !p->buf && kiln__tensor_version(t) == version) {
        evict(bytes);
        if (held + bytes <= KILN__PACKED_BUDGET) {
            p->buf = buf, buf = NULL;
            held += bytes;
            n_candidates--;
            n_packed++;
        }
    }
    const void *result = NULL;
    if (p->buf) { /* ours, or another caller's made meanwhile */
        p->users++;
        unlink_entry(p);
        push_front(p);
        result = p->buf;
        *handle = p;
    }
    pthread_mutex_unlock(&lock);
    free(buf);
    return result;
}

void kiln__packed_release(kiln__packed *handle) {
    if (!handle) return;
    pthread_mutex_lock(&lock);
    handle->users--;
    pthread_mutex_unlock(&lock);
}

kiln__packed_stats kiln__packed_stats_get(void) {
    pthread_mutex_lock(&lock);
    kiln__packed_stats s = {n_packed, n_reused, held};
    pthread_mutex_unlock(&lock);
    return s;
}
