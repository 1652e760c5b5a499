/* SPDX-License-Identifier: Apache-2.0 */
/* OpenBLAS's thread count kept in step with kiln's pool (kiln__cpu_threads_init,
 * eval_linalg.h): the BLAS callers and the backend's vtable both call it, so it lives apart
 * from either. */
#include <pthread.h>

#include "backends/cpu/lib/blas_api.h"
#include "base/threads.h"

/* Never opens OpenBLAS: opening it sets the count then (blas_api.c). */
static void blas_count(int n) {
    const kiln__blas_api *blas = kiln__blas_api_if_open();
    if (blas) blas->openblas_set_num_threads(n);
}

static void threads_hook(void) { kiln__threads_on_count_change(blas_count); }

void kiln__cpu_threads_init(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, threads_hook);
}
