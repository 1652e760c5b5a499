/* SPDX-License-Identifier: Apache-2.0 */
/* Events: the completion of work a backend may finish later (a copy, an execution).
 *
 * A backend makes an event pending (kiln__event_new), hands it to the caller, and completes
 * it once, from any thread, with the work's status and message. The caller waits
 * (kiln__event_wait, which also copies a failure into the caller's ctx) or polls
 * (kiln__event_ready). Events are refcounted: the backend keeps a reference until it has
 * completed the event, the caller one until it is done with it. */
#ifndef KILN_BACKEND_EVENT_H
#define KILN_BACKEND_EVENT_H

#include <stdbool.h>

#include "kiln/ctx.h"

typedef struct kiln__event kiln__event;

/* A pending event with one reference, allocated with cx's allocator; NULL with
 * RESOURCE_EXHAUSTED recorded (naming fn) when out of memory. */
kiln__event *kiln__event_new(kiln_ctx *cx, const char *fn);

kiln__event *kiln__event_retain(kiln__event *e);
/* NULL is a no-op. */
void kiln__event_release(kiln__event *e);

/* Completes e with status s (and, for a failure, a message; NULL for none). Completing
 * twice keeps the first. Wakes every waiter. */
void kiln__event_complete(kiln__event *e, kiln_status s, const char *message);

/* Has e completed? A NULL event is complete. */
bool kiln__event_ready(const kiln__event *e);

/* Blocks until e completes and returns its status; a failure is recorded in cx with the
 * event's message. A NULL event is complete with KILN_OK. */
kiln_status kiln__event_wait(kiln_ctx *cx, kiln__event *e);

/* Waits for e (see kiln__event_wait), then releases the caller's reference. */
kiln_status kiln__event_finish(kiln_ctx *cx, kiln__event *e);

#endif
