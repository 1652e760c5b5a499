/* SPDX-License-Identifier: Apache-2.0 */
/* kiln print: a program's module as parsed, after kiln's passes, or the compiled
 * executable with its fused kernels and memory plan. */
#include <string.h>

#include "cli.h"

static const char print_help[] =
    "usage: kiln print PROGRAM.mlir [--stage parsed|optimized|fused] [--entry NAME]\n"
    "\n"
    "Parses PROGRAM.mlir (StableHLO text, or a portable artifact: MLIR bytecode of VHLO)\n"
    "and prints the module as StableHLO text (kiln's printer, JAX's\n"
    "form).\n"
    "\n"
    "options:\n"
    "  --stage parsed       the module as read (default)\n"
    "  --stage optimized    after kiln_compile's passes on the module (dead-code\n"
    "                       elimination)\n"
    "  --stage fused        the compiled executable: each op or fused kernel (its\n"
    "                       inputs and access patterns, instructions, outputs, cost),\n"
    "                       the memory plan and the total cost\n"
    "  --entry NAME         the entry function (default @main, or the only function)\n"
    "  -h, --help           this text\n"
    "\n"
    "Check ops (check.expect_*, custom_call @check.*) print as extra results of the entry\n"
    "function.\n"
    "\n"
    "exit status: 0 success, 1 a program error (FILE:LINE:COL: error: ...), 2 usage\n";

int cli_print_main(int argc, char **argv) {
    const char *program = NULL, *entry = NULL;
    bool optimized = false, fused = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(print_help, stdout);
            return CLI_OK;
        }
        if (strcmp(a, "--stage") == 0 || strcmp(a, "--entry") == 0) {
            if (i + 1 >= argc) return cli_usage_error("print", "option %s needs a value", a);
            const char *v = argv[++i];
            if (strcmp(a, "--entry") == 0)
                entry = v;
            else if (strcmp(v, "parsed") == 0)
                optimized = fused = false;
            else if (strcmp(v, "optimized") == 0)
                optimized = true, fused = false;
            else if (strcmp(v, "fused") == 0)
                optimized = fused = true;
            else
                return cli_usage_error("print",
                                       "--stage must be parsed, optimized or fused, not '%s'", v);
        } else if (a[0] == '-' && a[1] != '\0')
            return cli_usage_error("print", "unknown option '%s'", a);
        else if (program)
            return cli_usage_error("print", "more than one program ('%s' and '%s')", program, a);
        else
            program = a;
    }
    if (!program) return cli_usage_error("print", "no program given");

    kiln_ctx *cx;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) {
        fprintf(stderr, "kiln print: cannot create a context\n");
        return CLI_ERROR;
    }
    int rc = CLI_ERROR;
    kiln_module *m = NULL;
    kiln_exe *exe = NULL;
    kiln_parse_options po = kiln_parse_options_default();
    po.entry = entry;
    po.allow_checks = true; /* printed as extra results of the entry function */
    if (kiln_module_parse_file(cx, program, &po, &m) != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_ctx_error_message(cx));
        goto done;
    }
    /* kiln_compile runs its passes in place on the module. */
    if (optimized && cli_compile(cx, m, CLI_MODE_COMPILED, &exe) != KILN_OK) {
        fprintf(stderr, "kiln print: %s: %s\n", program, kiln_ctx_error_message(cx));
        goto done;
    }
    if (fused ? kiln_exe_print(cx, exe, stdout) != KILN_OK
              : kiln_module_print(cx, m, stdout) != KILN_OK) {
        fprintf(stderr, "kiln print: %s\n", kiln_ctx_error_message(cx));
        goto done;
    }
    rc = CLI_OK;
done:
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
    return rc;
}
