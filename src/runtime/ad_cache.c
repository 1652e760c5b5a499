/* SPDX-License-Identifier: Apache-2.0 */
#include "runtime/ad_cache.h"

#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/ctx_internal.h"
#include "base/scope.h"
#include "ir/fingerprint.h"
#include "kiln/autodiff.h"

typedef struct entry {
    kiln__fingerprint key;
    kiln_device device;
    char backend[sizeof((kiln_ctx *)0)->backend];
    kiln_exe *exe;
    uint64_t used; /* the tick of its last use */
} entry;

typedef struct ad_cache {
    kiln__owned owned; /* first: the root scope's node */
    kiln_ctx *cx;
    entry entries[KILN_AD_CACHE_ENTRIES];
    int32_t n;
    uint64_t tick;
    kiln_jit_stats stats;
} ad_cache;

static void drop_entry(ad_cache *c, entry *e) {
    c->stats.bytes -= e->key.bytes.length;
    kiln__fingerprint_free(&e->key);
    kiln_exe_release(e->exe);
    memset(e, 0, sizeof *e);
}

static void clear(ad_cache *c) {
    for (int32_t i = 0; i < c->n; i++)
        drop_entry(c, &c->entries[i]);
    c->n = 0;
    c->stats.entries = 0;
}

static void drop(kiln__owned *self) {
    ad_cache *c = (ad_cache *)(void *)self;
    kiln_ctx *cx = c->cx;
    clear(c);
    cx->ad_cache = NULL;
    kiln__raw_free(&cx->allocator, c, sizeof *c);
}

/* The ctx's cache, made on first use; NULL when out of memory (nothing recorded). */
static ad_cache *cache_of(kiln_ctx *cx) {
    if (cx->ad_cache) return cx->ad_cache;
    ad_cache *c = kiln__raw_alloc(&cx->allocator, sizeof *c, _Alignof(ad_cache));
    if (!c) return NULL;
    memset(c, 0, sizeof *c);
    c->cx = cx;
    c->owned.drop = drop;
    kiln__scope_adopt_root(cx, &c->owned);
    cx->ad_cache = c;
    return c;
}

static bool same_target(const entry *e, kiln_ctx *cx) {
    return e->device.type == cx->device.type && e->device.id == cx->device.id &&
           strcmp(e->backend, cx->backend) == 0;
}

kiln_status kiln__ad_compile(kiln_ctx *cx, kiln_module *m, kiln_exe **out_exe) {
    *out_exe = NULL;
    ad_cache *c = cache_of(cx);
    kiln__fingerprint key;
    if (!c || !kiln__module_fingerprint(cx, m, &key)) {
        if (c) kiln__fingerprint_free(&key);
        if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx); /* out of memory */
        if (c) c->stats.misses++;
        return kiln_compile(cx, m, NULL, out_exe);
    }
    c->tick++;
    for (int32_t i = 0; i < c->n; i++) {
        entry *e = &c->entries[i];
        if (kiln__fingerprint_equal(&e->key, &key) && same_target(e, cx)) {
            kiln__fingerprint_free(&key);
            e->used = c->tick;
            c->stats.hits++;
            *out_exe = kiln_exe_retain(e->exe);
            return KILN_OK;
        }
    }
    c->stats.misses++;
    int64_t t0 = kiln__now_ns();
    kiln_status s = kiln_compile(cx, m, NULL, out_exe);
    c->stats.compile_ns += kiln__now_ns() - t0;
    if (s != KILN_OK) {
        kiln__fingerprint_free(&key);
        return s;
    }
    c->stats.compiles++;
    entry *slot = NULL;
    if (c->n < KILN_AD_CACHE_ENTRIES) {
        slot = &c->entries[c->n++];
    } else {
        slot = &c->entries[0];
        for (int32_t i = 1; i < c->n; i++)
            if (c->entries[i].used < slot->used) slot = &c->entries[i];
        drop_entry(c, slot);
        c->stats.evictions++;
    }
    slot->key = key;
    slot->device = cx->device;
    memcpy(slot->backend, cx->backend, sizeof slot->backend);
    slot->exe = kiln_exe_retain(*out_exe);
    slot->used = c->tick;
    c->stats.bytes += key.bytes.length;
    c->stats.entries = c->n;
    return KILN_OK;
}

kiln_status kiln_ad_cache_stats(kiln_ctx *cx, kiln_jit_stats *out) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out) return kiln__null_argument(cx, "kiln_ad_cache_stats", "out");
    const ad_cache *c = cx->ad_cache;
    memset(out, 0, sizeof *out);
    if (c) *out = c->stats;
    return KILN_OK;
}

void kiln_ad_cache_clear(kiln_ctx *cx) {
    if (cx && cx->ad_cache) clear(cx->ad_cache);
}
