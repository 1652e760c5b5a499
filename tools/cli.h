/* SPDX-License-Identifier: Apache-2.0 */
/* The kiln command-line tool: shared helpers of its commands (run, print, conform). */
#ifndef KILN_TOOLS_CLI_H
#define KILN_TOOLS_CLI_H

#include <kiln/kiln.h>
#include <kiln/parse.h>
#include <stdbool.h>
#include <stdio.h>

/* Exit statuses of every command. */
enum { CLI_OK = 0, CLI_ERROR = 1, CLI_USAGE = 2 };

/* How a module runs: "eval" compiles it without being asked for anything beyond
 * correctness, "compiled" is the normal pipeline (see kiln --help). */
typedef enum cli_mode { CLI_MODE_COMPILED, CLI_MODE_EVAL } cli_mode;

/* Parses a --mode value; false for anything else. */
bool cli_mode_parse(const char *text, cli_mode *out_mode);

/* Reports a usage error ("kiln CMD: message", then a hint) and returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reads a whole regular file into a NUL-terminated malloc'ed buffer; NULL (errno set) on
 * error, EINVAL for anything but a regular file (a FIFO is not waited on). */
char *cli_read_file(const char *path, size_t *out_size);
/* What a failed cli_read_file left in errno, as text ("not a regular file" for EINVAL). */
const char *cli_file_error(int err);

/* One summary line of a tensor: "f32[2,3] = [0, 1, 2, 3, 4, 5]" (at most `max_values`
 * values, then "..."). Writes to `stream`. */
void cli_tensor_summary(kiln_ctx *cx, const kiln_tensor *t, int max_values, FILE *stream);

/* Compiles `m` for `mode` into *out_exe. */
kiln_status cli_compile(kiln_ctx *cx, kiln_module *m, cli_mode mode, kiln_exe **out_exe);

/* "expect_eq", "expect_eq_const", ... for messages. */
const char *cli_check_name(const kiln_check *check);

/* The entry function's results that a module parsed with allow_checks appended for its
 * checks start here (n_results when there are no checks): the program's own results are
 * the ones before. */
int32_t cli_checks_first_result(const kiln_check *checks, int32_t n_checks, int32_t n_results);

int cli_run_main(int argc, char **argv);
int cli_print_main(int argc, char **argv);
int cli_conform_main(int argc, char **argv);

#endif
