/* SPDX-License-Identifier: Apache-2.0 */
/* kiln's own thread pool behind kiln__parallel_for (threads.h): threads.c decides how
 * many threads a job gets, the pool runs it. */
#ifndef KILN_BASE_THREADS_POOL_H
#define KILN_BASE_THREADS_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/threads.h"

/* Runs fn over [0, n) in t ranges (range i by number: the same split for a given t), range
 * 0 on the calling thread, the others on workers started as needed (up to 1023), and
 * returns when all are done. While another thread's job runs, runs fn(user, 0, n) inline
 * instead. Thread-safe; fork-safe (a child starts workers of its own). */
void kiln__pool_run(int64_t n, int64_t t, kiln__range_fn fn, void *user);

/* Whether the calling thread runs inside a range of the pool (a worker, or a caller in
 * its own range). */
bool kiln__pool_in_range(void);

/* The CPUs this process may run on. */
int kiln__pool_cores(void);

#endif
