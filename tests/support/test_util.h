/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the test suites. */
#ifndef KILN_TEST_UTIL_H
#define KILN_TEST_UTIL_H

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <kiln/kiln.h>
#include <string.h>

/* Runs fn(arg) on a new thread with a stack of stack_kib KiB (musl's default is 128) and
 * waits for it; fails the test if the thread cannot be made. */
void test_run_with_stack(void *(*fn)(void *), void *arg, size_t stack_kib);

/* A ctx with default options, failing the test if it cannot be made. */
kiln_ctx *test_ctx(void);

/* Whether the element of float dtype d at p is a NaN (false for other dtypes). Which NaN an
 * op with two NaN operands gives is not specified (IEEE-754, StableHLO), so comparisons
 * across engines let any NaN match any NaN. */
bool test_is_nan(kiln_dtype d, const void *p);

/* Asserts the ctx holds `status` and a message containing `fragment`, then clears it. */
#define expect_error(cx, status, fragment)                                                 \
    do {                                                                                   \
        cr_assert_eq(kiln_ctx_status(cx), (status), "status %s, expected %s; message: %s", \
                     kiln_status_name(kiln_ctx_status(cx)), kiln_status_name(status),      \
                     kiln_ctx_error_message(cx));                                          \
        cr_assert(strstr(kiln_ctx_error_message(cx), (fragment)) != NULL,                  \
                  "message \"%s\" lacks \"%s\"", kiln_ctx_error_message(cx), (fragment));  \
        kiln_ctx_clear_error(cx);                                                          \
    } while (0)

#define expect_ok(cx)                                                     \
    cr_assert_eq(kiln_ctx_status(cx), KILN_OK, "unexpected error %s: %s", \
                 kiln_status_name(kiln_ctx_status(cx)), kiln_ctx_error_message(cx))

/* The most backends the tests expect a ctx to list. */
#define TEST_MAX_BACKENDS 16

/* The names of the backends a default ctx lists as available, in registry order (the
 * names are the backends' static strings), at most cap of them; fails the test when there
 * is none. A listed backend that is unavailable is reported on stderr, loudly, with its
 * reason. */
int test_backends(const char **names, int cap);

/* A path under the build's test scratch folder, unique to the process. */
const char *test_tmp_path(const char *name);

/* The whole file at path, NUL-terminated after its n bytes (free it), or NULL when it
 * cannot be opened. */
unsigned char *test_read_file(const char *path, size_t *n);

/* Compiles and runs module m (no arguments) and evaluates its check ops, logging each
 * failure: the number that failed, or -1 when m has none. m stays the caller's. */
int test_run_checks(kiln_ctx *cx, kiln_module *m);

/* One step of the 1-D heat equation on x [n]: u + k (l - 2c + r) on the interior, the two
 * boundary values kept (three slices, the stencil, a concatenate: 13 ops when traced). */
kiln_tensor *test_heat_step(kiln_ctx *cx, kiln_tensor *x, double k);

/* An f32 tensor of `shape` whose elements are gen() in row-major order (fails the test when
 * it cannot be made). */
kiln_tensor *test_f32_generated(kiln_ctx *cx, kiln_shape shape, float (*gen)(void));

/* The module of StableHLO text (fails the test with the parser's message when it does not
 * read). */
kiln_module *test_parse(kiln_ctx *cx, const char *text);

/* Asserts that `func.func @main(ARGS) { OP_LINE return }` does not read: no module, the
 * message names line 2 (the op's) and contains fragment; then clears the error. */
void test_expect_op_refused(kiln_ctx *cx, const char *args, const char *op_line,
                            const char *fragment);

/* Parses text (which must read) and compiles it with `backend` (NULL: the default), the
 * passes off when !passes: the compile's status, the executable in *exe on success. */
kiln_status test_compile_text(kiln_ctx *cx, const char *text, const char *backend, bool passes,
                              kiln_exe **exe);

/* Lowers fn for `spec` (n_in arguments), compiles it, calls it on `in` and asserts that
 * each of its n_out results has the dtype and the bytes of eager[r], the same function
 * run eagerly: a compiled program runs the kernels eager mode runs. Releases what it
 * made (the module, the executable, the compiled results), not `in` or `eager`; fails the
 * test, naming `what`, on any error. */
void test_expect_compiled_equals_eager(kiln_ctx *cx, kiln_region fn, const kiln_arg_spec *spec,
                                       kiln_tensor **in, int n_in, kiln_tensor *const *eager,
                                       int n_out, const char *what);

#endif
