/* SPDX-License-Identifier: Apache-2.0 */
/* The threaded scenarios under ThreadSanitizer (make test-tsan): the same as the runtime
 * suite's threads tests, as a plain program, since Criterion's runner cannot start under
 * TSan. ThreadSanitizer itself reports any data race (and the test fails on its report);
 * this program reports the results. */
#include <stdio.h>

#include "threads_scenarios.h"

int main(void) {
    int passed = 0, failed = 0;
    for (int i = 0; i < KILN_TEST_N_THREAD_SCENARIOS; i++) {
        char err[512];
        if (kiln_test_thread_scenario(i, err, sizeof err)) {
            printf("PASS %s\n", kiln_test_thread_scenarios[i]);
            passed++;
        } else {
            printf("FAIL %s: %s\n", kiln_test_thread_scenarios[i], err);
            failed++;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
