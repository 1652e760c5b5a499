/* SPDX-License-Identifier: Apache-2.0 */
/* Threaded scenarios of the runtime (threads_scenarios.c), without a test framework, so
 * that the ThreadSanitizer build runs them too. */
#ifndef KILN_TESTS_THREADS_SCENARIOS_H
#define KILN_TESTS_THREADS_SCENARIOS_H

#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <stdbool.h>
#include <stddef.h>

#define KILN_TEST_N_THREAD_SCENARIOS 7
extern const char *const kiln_test_thread_scenarios[KILN_TEST_N_THREAD_SCENARIOS];

/* Runs scenario `which`; false with a message in err (cap bytes) when it fails. */
bool kiln_test_thread_scenario(int which, char *err, size_t cap);

#endif
