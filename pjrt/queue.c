/* SPDX-License-Identifier: Apache-2.0 */
/* The client's work queue: what the framework hands over runs in order on one worker thread
 * of the client's, started on first use, or on the calling thread when the client executes
 * inline. It knows nothing of what it runs: executable.c submits its executions here. */
#include <stdlib.h>

#include "pjrt/plugin.h"

static void *worker(void *arg) {
    PJRT_Client *c = arg;
    pthread_mutex_lock(&c->queue_lock);
    for (;;) {
        while (!c->queue_head && !c->stopping)
            pthread_cond_wait(&c->queue_wake, &c->queue_lock);
        kiln_pjrt_task *t = c->queue_head;
        if (!t) break; /* stopping, and nothing is left to run */
        c->queue_head = t->next;
        if (!c->queue_head) c->queue_tail = NULL;
        pthread_mutex_unlock(&c->queue_lock);
        t->run(t->arg); /* may free t: it is not touched again */
        pthread_mutex_lock(&c->queue_lock);
    }
    pthread_mutex_unlock(&c->queue_lock);
    return NULL;
}

/* Running on the calling thread is the default: a blocking call then costs no hand-over
 * (some 5 us for the smallest programs), and kiln's compute threads serve one caller; the
 * worker lets the framework go on while kiln computes. */
void kiln_pjrt_queue_submit(PJRT_Client *c, kiln_pjrt_task *t, void (*run)(void *), void *arg,
                            bool would_block) {
    t->next = NULL;
    t->run = run;
    t->arg = arg;
    pthread_mutex_lock(&c->queue_lock);
    /* work that would block the caller (waiting on work still to run) waits on the worker
     * even in inline mode */
    bool here = c->execution == KILN_PJRT_INLINE && !would_block;
    if (!here && !c->worker_started)
        c->worker_started = pthread_create(&c->worker, NULL, worker, c) == 0;
    if (!c->worker_started) here = true;
    if (here) {
        pthread_mutex_unlock(&c->queue_lock);
        run(arg);
        return;
    }
    if (c->queue_tail)
        c->queue_tail->next = t;
    else
        c->queue_head = t;
    c->queue_tail = t;
    pthread_cond_signal(&c->queue_wake);
    pthread_mutex_unlock(&c->queue_lock);
}

void kiln_pjrt_queue_stop(PJRT_Client *c) {
    pthread_mutex_lock(&c->queue_lock);
    c->stopping = true;
    bool started = c->worker_started;
    pthread_cond_signal(&c->queue_wake);
    pthread_mutex_unlock(&c->queue_lock);
    if (started) pthread_join(c->worker, NULL); /* the queue is run to its end first */
}
