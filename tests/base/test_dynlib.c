/* SPDX-License-Identifier: Apache-2.0 */
/* base/dynlib.h: a library opened at run time, its entry points resolved, and the errors
 * naming what is missing. libc stands in for the libraries the CPU backend opens. */
#include <string.h>

#include "base/dynlib.h"
#include "test_util.h"

typedef size_t (*strlen_fn)(const char *);

Test(dynlib, resolves_every_name_into_its_slot) {
    strlen_fn f = NULL;
    void *const slots[] = {(void *)&f};
    static const char *const names[] = {"strlen"};
    char error[256] = "";
    cr_assert(kiln__dynlib_open("libc.so.6", "libc", names, slots, 1, error, sizeof error), "%s",
              error);
    cr_assert_not_null(f);
    cr_assert_eq(f("kiln"), 4);
    cr_assert(kiln__dynlib_mapped("/libc.so"));
    cr_assert(!kiln__dynlib_mapped("/libkiln-no-such-library"));
}

Test(dynlib, a_missing_library_is_an_error_naming_it) {
    strlen_fn f = NULL;
    void *const slots[] = {(void *)&f};
    static const char *const names[] = {"strlen"};
    char error[256] = "";
    cr_assert(!kiln__dynlib_open("libkiln-no-such-library.so.7", "Thing", names, slots, 1, error,
                                 sizeof error));
    cr_assert(strstr(error, "Thing (libkiln-no-such-library.so.7) could not be opened: "), "%s",
              error);
}

Test(dynlib, a_missing_entry_point_is_an_error_naming_it) {
    strlen_fn f = NULL, g = NULL;
    void *const slots[] = {(void *)&f, (void *)&g};
    static const char *const names[] = {"strlen", "kiln_no_such_entry_point"};
    char error[256] = "";
    cr_assert(!kiln__dynlib_open("libc.so.6", "libc", names, slots, 2, error, sizeof error));
    cr_assert_str_eq(error, "libc (libc.so.6) has no kiln_no_such_entry_point");
    cr_assert_null(g);
}
