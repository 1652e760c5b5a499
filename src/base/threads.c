/* Serial placeholder for the thread pool (see threads.h); the OpenMP pool replaces it. */
#include "base/threads.h"

void kiln__parallel_for(int64_t n, int64_t grain, kiln__range_fn fn, void *user) {
    (void)grain;
    if (n > 0) fn(user, 0, n);
}

int kiln__threads_count(void) { return 1; }

void kiln__threads_set_count(int n) { (void)n; }
