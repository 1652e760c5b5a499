/* SPDX-License-Identifier: Apache-2.0 */
/* kiln: the command-line tool.
 *
 *     kiln run PROGRAM.mlir [--input FILE.npy]... [--output-dir DIR] [--mode M] [--entry NAME]
 *     kiln print PROGRAM.mlir [--stage parsed|optimized] [--entry NAME]
 *     kiln conform PATH... [--mode M] [--tier-file TSV] [--require-tier TIER] ...
 *
 * Exit status: 0 success, 1 a program, input or test failure, 2 a usage error. */
#include <string.h>

#include "cli.h"

static const char usage_text[] =
    "usage: kiln COMMAND [OPTIONS]\n"
    "\n"
    "Runs, prints and tests StableHLO programs (MLIR text, as JAX's lower().as_text() or\n"
    "kiln's printer writes them) with the kiln compiler.\n"
    "\n"
    "commands:\n"
    "  run PROGRAM.mlir     run the entry function on .npy inputs, write .npy results\n"
    "  print PROGRAM.mlir   print the module as parsed or after kiln's passes\n"
    "  conform PATH...      run StableHLO interpreter test files (check.* ops)\n"
    "\n"
    "options:\n"
    "  -h, --help           this text; 'kiln COMMAND --help' documents a command\n"
    "  --version            print kiln's version\n"
    "\n"
    "exit status: 0 success, 1 program, input or test failure, 2 usage error\n";

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(usage_text, stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return CLI_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("kiln %s\n", kiln_version_string());
        return CLI_OK;
    }
    if (strcmp(cmd, "run") == 0) return cli_run_main(argc - 1, argv + 1);
    if (strcmp(cmd, "print") == 0) return cli_print_main(argc - 1, argv + 1);
    if (strcmp(cmd, "conform") == 0) return cli_conform_main(argc - 1, argv + 1);
    fprintf(stderr, "kiln: unknown command '%s'\n\n%s", cmd, usage_text);
    return CLI_USAGE;
}
