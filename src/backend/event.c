/* SPDX-License-Identifier: Apache-2.0 */
#include "backend/event.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "base/alloc.h"
#include "base/ctx_internal.h"

struct kiln__event {
    atomic_int refs;
    atomic_bool done; /* set (release) after status and message */
    kiln_status status;
    char message[256];
    pthread_mutex_t lock; /* with `cond`: waiters sleep until done */
    pthread_cond_t cond;
    kiln_allocator allocator;
};

kiln__event *kiln__event_new(kiln_ctx *cx, const char *fn) {
    kiln__event *e = kiln__alloc(cx, sizeof *e, _Alignof(kiln__event), fn);
    if (!e) return NULL;
    memset(e, 0, sizeof *e);
    atomic_init(&e->refs, 1);
    atomic_init(&e->done, false);
    e->allocator = cx->allocator;
    if (pthread_mutex_init(&e->lock, NULL) != 0) {
        kiln__free(cx, e, sizeof *e);
        kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: no mutex for an event", fn);
        return NULL;
    }
    if (pthread_cond_init(&e->cond, NULL) != 0) {
        pthread_mutex_destroy(&e->lock);
        kiln__free(cx, e, sizeof *e);
        kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: no condition for an event", fn);
        return NULL;
    }
    return e;
}

kiln__event *kiln__event_retain(kiln__event *e) {
    if (e) atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    return e;
}

void kiln__event_release(kiln__event *e) {
    if (!e || atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) != 1) return;
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->lock);
    kiln_allocator a = e->allocator;
    kiln__raw_free(&a, e, sizeof *e);
}

void kiln__event_complete(kiln__event *e, kiln_status s, const char *message) {
    pthread_mutex_lock(&e->lock);
    if (!atomic_load_explicit(&e->done, memory_order_relaxed)) {
        e->status = s;
        if (message) {
            strncpy(e->message, message, sizeof e->message - 1);
            e->message[sizeof e->message - 1] = '\0';
        }
        atomic_store_explicit(&e->done, true, memory_order_release);
        pthread_cond_broadcast(&e->cond);
    }
    pthread_mutex_unlock(&e->lock);
}

bool kiln__event_ready(const kiln__event *e) {
    return !e || atomic_load_explicit(&e->done, memory_order_acquire);
}

kiln_status kiln__event_wait(kiln_ctx *cx, kiln__event *e) {
    if (!e) return KILN_OK;
    if (!atomic_load_explicit(&e->done, memory_order_acquire)) {
        pthread_mutex_lock(&e->lock);
        while (!atomic_load_explicit(&e->done, memory_order_acquire))
            pthread_cond_wait(&e->cond, &e->lock);
        pthread_mutex_unlock(&e->lock);
    }
    if (e->status != KILN_OK)
        kiln_ctx_set_error(cx, e->status, "%s", e->message[0] ? e->message : "device work failed");
    return e->status;
}

kiln_status kiln__event_finish(kiln_ctx *cx, kiln__event *e) {
    kiln_status s = kiln__event_wait(cx, e);
    kiln__event_release(e);
    return s;
}
