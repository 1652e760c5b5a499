/* SPDX-License-Identifier: Apache-2.0 */
#define _POSIX_C_SOURCE 200809L /* sched_yield */

#include "base/buffer_cache.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"

/* Classes: 16 of 64-byte steps up to 1 KiB, then four per power of two up to LARGE_MIN. */
#define SMALL_STEP 64
#define SMALL_CLASSES 16
#define CLASSES (SMALL_CLASSES + 4 * 8)

/* Above LARGE_MIN a block has the request's size rounded up to a page, and a request
 * takes the smallest kept block at most 1/LARGE_SLACK larger: big tensors cost what they
 * hold (a class would add up to 25%), and the few big blocks kept are searched in one list. */
#define LARGE_MIN ((size_t)256 << 10)
#define LARGE_PAGE ((size_t)4096)
#define LARGE_SLACK 8

/* Every block has this alignment, whatever it was asked for, so any block of a class
 * serves any request of that class. */
#define BLOCK_ALIGNMENT 64

/* A kept block's first bytes link it into its class's list and hold its capacity (every
 * block has at least 64 bytes). */
typedef struct kept {
    struct kept *next;
} kept;
typedef struct kept_sized {
    kept link;
    size_t capacity;
} kept_sized;

struct kiln__buffer_cache {
    /* A spin lock: every eager tensor takes and gives back blocks, the critical sections
     * are a few loads and stores, and contention (a tensor released on another thread) is
     * rare; a mutex's lock and unlock cost a sixth of a small eager op here. */
    atomic_bool locked;
    kiln_allocator allocator;
    bool open;         /* the ctx is alive; the cache goes with its last block after */
    size_t blocks_out; /* blocks handed out and not given back */
    size_t limit;
    size_t kept_bytes, kept_blocks, peak_kept_bytes, live_bytes;
    uint64_t hits, misses, retries;
    kept *lists[CLASSES];
    kept *large; /* kept blocks above LARGE_MIN, of any size */
};

static void lock(kiln__buffer_cache *c) {
    while (atomic_exchange_explicit(&c->locked, true, memory_order_acquire))
        while (atomic_load_explicit(&c->locked, memory_order_relaxed))
            sched_yield();
}

static void unlock(kiln__buffer_cache *c) {
    atomic_store_explicit(&c->locked, false, memory_order_release);
}

/* The class of a request of at most LARGE_MIN bytes, and the capacity of its blocks. */
static int class_of(size_t n, size_t *capacity) {
    if (n <= (size_t)SMALL_STEP * SMALL_CLASSES) {
        size_t k = (n + SMALL_STEP - 1) / SMALL_STEP;
        *capacity = k * SMALL_STEP;
        return (int)k - 1;
    }
    /* 2^p < n <= 2^(p+1), p >= 10: classes 2^p * (1.25, 1.5, 1.75, 2). */
    int p = 63 - __builtin_clzll((unsigned long long)(n - 1));
    size_t quarter = (size_t)1 << (p - 2);
    size_t sub = ((n - 1) >> (p - 2)) & 3; /* 0..3: which quarter above 2^p */
    *capacity = ((size_t)1 << p) + (sub + 1) * quarter;
    return SMALL_CLASSES + (p - 10) * 4 + (int)sub;
}

size_t kiln__buffer_cache_capacity(size_t nbytes) {
    if (nbytes > LARGE_MIN) return (nbytes + LARGE_PAGE - 1) / LARGE_PAGE * LARGE_PAGE;
    size_t cap;
    (void)class_of(nbytes, &cap);
    return cap;
}

static size_t capacity_of(const kept *b) { return ((const kept_sized *)(const void *)b)->capacity; }

/* Unlinks the smallest large block of capacity in [cap, cap + cap / LARGE_SLACK] (under
 * the lock); NULL when none fits. */
static kept *take_large(kiln__buffer_cache *c, size_t cap) {
    kept **best = NULL;
    for (kept **at = &c->large; *at; at = &(*at)->next) {
        size_t have = capacity_of(*at);
        if (have >= cap && have - cap <= cap / LARGE_SLACK && (!best || have < capacity_of(*best)))
            best = at;
    }
    if (!best) return NULL;
    kept *b = *best;
    *best = b->next;
    return b;
}

/* The list a block of capacity `cap` is kept in. */
static kept **list_of(kiln__buffer_cache *c, size_t cap) {
    if (cap > LARGE_MIN) return &c->large;
    size_t ignored;
    return &c->lists[class_of(cap, &ignored)];
}

kiln__buffer_cache *kiln__buffer_cache_new(const kiln_allocator *allocator, size_t limit) {
    kiln__buffer_cache *c = kiln__raw_alloc(allocator, sizeof *c, _Alignof(kiln__buffer_cache));
    if (!c) return NULL;
    memset(c, 0, sizeof *c);
    atomic_init(&c->locked, false);
    c->allocator = *allocator;
    c->open = true;
    c->limit = limit;
    return c;
}

/* Frees the cache itself, once closed with no block out (decided under the lock). */
static void destroy(kiln__buffer_cache *c) {
    kiln_allocator a = c->allocator;
    kiln__raw_free(&a, c, sizeof *c);
}

/* Frees a chain of blocks unlinked from the lists (outside the lock, with a copy of the
 * cache's allocator: a closed cache may go at any moment once unlocked). */
static void free_chain(const kiln_allocator *a, kept *chain) {
    while (chain) {
        kept *next = chain->next;
        kiln__raw_free(a, chain, capacity_of(chain));
        chain = next;
    }
}

/* Frees kept blocks, large ones first, then the largest classes, until at most `target` bytes are
 * kept (unlinked under the lock, freed outside it); under the same lock, *limit (when not NULL)
 * becomes the new limit, `retry` counts an allocator failure and `close` stops keeping (and
 * frees the cache when no block is out: it must not be touched after). Returns the bytes
 * freed. */
static size_t shrink(kiln__buffer_cache *c, size_t target, const size_t *limit, bool retry,
                     bool close) {
    lock(c);
    if (limit) c->limit = *limit;
    if (retry) c->retries++;
    if (close) c->open = false;
    bool last = close && c->blocks_out == 0;
    size_t before = c->kept_bytes;
    kept *chain = NULL;
    for (int k = CLASSES; k >= 0 && c->kept_bytes > target; k--) {
        kept **list = k == CLASSES ? &c->large : &c->lists[k];
        while (*list && c->kept_bytes > target) {
            kept *b = *list;
            *list = b->next;
            c->kept_bytes -= capacity_of(b);
            c->kept_blocks--;
            b->next = chain;
            chain = b;
        }
    }
    size_t freed = before - c->kept_bytes;
    kiln_allocator a = c->allocator;
    unlock(c);
    free_chain(&a, chain);
    if (last) destroy(c);
    return freed;
}

void *kiln__buffer_cache_alloc(kiln__buffer_cache *c, size_t nbytes, size_t alignment,
                               size_t *capacity) {
    if (nbytes == 0 || alignment > BLOCK_ALIGNMENT) return NULL;
    size_t cap = kiln__buffer_cache_capacity(nbytes);
    lock(c);
    kept *b = NULL;
    if (cap > LARGE_MIN) {
        b = take_large(c, cap);
        if (b) cap = capacity_of(b);
    } else {
        kept **list = list_of(c, cap);
        if ((b = *list)) *list = b->next;
    }
    if (b) {
        c->kept_bytes -= cap;
        c->kept_blocks--;
        c->hits++;
    } else {
        c->misses++;
    }
    c->live_bytes += cap; /* taken back below if the allocator fails */
    c->blocks_out++;
    unlock(c);
    if (!b) {
        b = kiln__raw_alloc(&c->allocator, cap, BLOCK_ALIGNMENT);
        if (!b) {
            /* Out of memory: what the cache keeps goes back first, then one more try. */
            shrink(c, 0, NULL, true, false);
            b = kiln__raw_alloc(&c->allocator, cap, BLOCK_ALIGNMENT);
        }
        if (!b) {
            lock(c);
            c->live_bytes -= cap;
            c->blocks_out--; /* the ctx holds the cache open while it allocates */
            unlock(c);
            return NULL;
        }
        kiln__advise_huge(b, cap);
    }
    *capacity = cap;
    return b;
}

void kiln__buffer_cache_free(kiln__buffer_cache *c, void *block, size_t capacity) {
    if (!block) return;
    size_t cap = capacity;
    lock(c);
    c->live_bytes -= cap;
    bool keep = c->open && cap <= c->limit && c->kept_bytes <= c->limit - cap;
    if (keep) {
        kept_sized *b = block;
        kept **list = list_of(c, cap);
        b->capacity = cap;
        b->link.next = *list;
        *list = &b->link;
        c->kept_bytes += cap;
        c->kept_blocks++;
        if (c->kept_bytes > c->peak_kept_bytes) c->peak_kept_bytes = c->kept_bytes;
    }
    bool last = --c->blocks_out == 0 && !c->open;
    /* Once unlocked, a closing ctx on another thread may free the cache when this was
     * its last block out: copy what is needed first. */
    kiln_allocator a = c->allocator;
    unlock(c);
    if (!keep) kiln__raw_free(&a, block, cap);
    if (last) destroy(c);
}

size_t kiln__buffer_cache_trim(kiln__buffer_cache *c) { return shrink(c, 0, NULL, false, false); }

void kiln__buffer_cache_stats(kiln__buffer_cache *c, kiln_cache_stats *out) {
    lock(c);
    out->kept_bytes = c->kept_bytes;
    out->kept_blocks = c->kept_blocks;
    out->peak_kept_bytes = c->peak_kept_bytes;
    out->live_bytes = c->live_bytes;
    out->limit_bytes = c->limit;
    out->hits = c->hits;
    out->misses = c->misses;
    out->retries = c->retries;
    unlock(c);
}

void kiln__buffer_cache_set_limit(kiln__buffer_cache *c, size_t limit) {
    shrink(c, limit, &limit, false, false);
}

void kiln__buffer_cache_close(kiln__buffer_cache *c) {
    if (!c) return;
    shrink(c, 0, NULL, false, true);
}
