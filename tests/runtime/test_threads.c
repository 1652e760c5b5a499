/* One executable called from several threads at once (tests/support/threads_scenarios.c,
 * which the ThreadSanitizer build also runs). */
#include "test_util.h"
#include "threads_scenarios.h"

static void scenario(int which) {
    char err[512];
    cr_assert(kiln_test_thread_scenario(which, err, sizeof err), "%s: %s",
              kiln_test_thread_scenarios[which], err);
}

Test(threads, one_executable_from_many_threads) { scenario(0); }

Test(threads, regions_interpreted_on_many_threads) { scenario(1); }

Test(threads, donation_on_many_threads) { scenario(2); }

Test(threads, executables_on_two_devices_at_once) { scenario(3); }

Test(threads, interpreter_backend_on_many_threads) { scenario(4); }

Test(threads, tensors_released_on_other_threads_as_the_ctx_goes) { scenario(5); }
