/* SPDX-License-Identifier: Apache-2.0 */
/* kiln run: the entry function of a program on .npy inputs. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char run_help[] =
    "usage: kiln run PROGRAM.mlir [--input FILE.npy]... [--output-dir DIR]\n"
    "                [--mode eval|compiled] [--entry NAME]\n"
    "\n"
    "Parses PROGRAM.mlir (StableHLO text, or a portable artifact: MLIR bytecode of VHLO as\n"
    "jax.export writes it, StableHLO 0.9.0 to 1.20.0, alone or in the file of\n"
    "Exported.serialize()), compiles its entry function and calls it on the\n"
    "inputs, in order. Prints one line per result: its dtype, shape and first values.\n"
    "\n"
    "options:\n"
    "  --input FILE.npy     the next argument of the entry function (repeat, in order)\n"
    "  --output-dir DIR     write result i to DIR/out<i>.npy (DIR must exist); without it\n"
    "                       results are only summarized\n"
    "  --mode eval|compiled how to run (default compiled): eval runs every op on its own\n"
    "                       with the interpreter backend (the evaluator's kernels);\n"
    "                       compiled runs the cpu backend's passes and fused kernels\n"
    "  --entry NAME         the function to run (default @main, or the only function)\n"
    "  --values N           values shown per result (default 8)\n"
    "  -h, --help           this text\n"
    "\n"
    "An SPMD program (mhlo.num_replicas x mhlo.num_partitions above 1, as JAX exports\n"
    "shard_map and sharded jit programs) runs on that many processes, threads of this one,\n"
    "each given the whole inputs; the results shown are process 0's.\n"
    "\n"
    "Check ops (check.expect_* or JAX's stablehlo.custom_call @check.expect_*) are\n"
    "evaluated after the run: 'checks: N of M passed', and a failed check exits 1 with its\n"
    "line and first mismatch. Their values are not written as results.\n"
    "\n"
    "exit status: 0 success; 1 a program or input error (a parse error with FILE:LINE:COL,\n"
    "a wrong input count, an input's dtype or shape, named by its position); 2 usage\n";

#define MAX_INPUTS 1024

/* The executable on every process of a local communicator of the module's grid, each
 * given the inputs (its own copies where the program donates them); process 0's results
 * into results. */
static kiln_status run_on_grid(kiln_ctx *cx, kiln_exe *exe, const kiln_module_info *info,
                               kiln_tensor **args, int n_inputs, kiln_tensor **results) {
    int32_t grid = info->num_replicas * info->num_partitions;
    kiln_comm_options o = kiln_comm_options_default();
    o.num_replicas = info->num_replicas;
    o.num_partitions = info->num_partitions;
    kiln_comm *comm = NULL;
    if (kiln_comm_create_local(cx, &o, &comm) != KILN_OK) return kiln_ctx_status(cx);
    kiln_tensor **all_args = calloc((size_t)grid * (size_t)n_inputs + 1, sizeof *all_args);
    kiln_tensor **all_results =
        calloc((size_t)grid * (size_t)info->n_results + 1, sizeof *all_results);
    kiln_status s = all_args && all_results ? KILN_OK
                                            : kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED,
                                                                 "kiln run: out of memory");
    for (int32_t p = 0; p < grid && s == KILN_OK; p++)
        for (int i = 0; i < n_inputs && s == KILN_OK; i++) {
            kiln_tensor *a = args[i];
            if (p > 0 && info->donated && info->donated[i]) { /* each donates its own */
                a = kiln_tensor_from_host(cx, kiln_tensor_dtype(a), *kiln_tensor_shape(a),
                                          kiln_tensor_data(a), kiln_tensor_nbytes(a));
                s = kiln_ctx_status(cx);
            }
            all_args[(size_t)p * (size_t)n_inputs + (size_t)i] = a;
        }
    if (s == KILN_OK) s = kiln_exe_call_spmd(cx, exe, comm, all_args, all_results);
    for (int32_t r = 0; r < info->n_results && s == KILN_OK; r++)
        results[r] = all_results[r];
    free(all_args);
    free(all_results);
    kiln_comm_release(comm);
    return s;
}

int cli_run_main(int argc, char **argv) {
    const char *program = NULL, *outdir = NULL, *entry = NULL;
    const char *inputs[MAX_INPUTS];
    int n_inputs = 0, max_values = 8;
    cli_mode mode = CLI_MODE_COMPILED;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(run_help, stdout);
            return CLI_OK;
        }
        bool takes_value = strcmp(a, "--input") == 0 || strcmp(a, "--output-dir") == 0 ||
                           strcmp(a, "--mode") == 0 || strcmp(a, "--entry") == 0 ||
                           strcmp(a, "--values") == 0;
        if (takes_value) {
            if (i + 1 >= argc) return cli_usage_error("run", "option %s needs a value", a);
            const char *v = argv[++i];
            if (strcmp(a, "--input") == 0) {
                if (n_inputs == MAX_INPUTS)
                    return cli_usage_error("run", "more than %d inputs", MAX_INPUTS);
                inputs[n_inputs++] = v;
            } else if (strcmp(a, "--output-dir") == 0)
                outdir = v;
            else if (strcmp(a, "--entry") == 0)
                entry = v;
            else if (strcmp(a, "--values") == 0) {
                char *end;
                long n = strtol(v, &end, 10);
                if (*end || n < 0 || n > 1000000)
                    return cli_usage_error("run", "--values: '%s' is not a count", v);
                max_values = (int)n;
            } else if (!cli_mode_parse(v, &mode))
                return cli_usage_error("run", "--mode must be eval or compiled, not '%s'", v);
        } else if (a[0] == '-' && a[1] != '\0')
            return cli_usage_error("run", "unknown option '%s'", a);
        else if (program)
            return cli_usage_error("run", "more than one program ('%s' and '%s')", program, a);
        else
            program = a;
    }
    if (!program) return cli_usage_error("run", "no program given");

    kiln_ctx *cx;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) {
        fprintf(stderr, "kiln run: cannot create a context\n");
        return CLI_ERROR;
    }
    int rc = CLI_ERROR;
    kiln_module *m = NULL;
    kiln_exe *exe = NULL;
    kiln_tensor **args = NULL, **results = NULL;
    kiln_parse_options po = kiln_parse_options_default();
    po.entry = entry;
    po.allow_checks = true; /* JAX test data checks with custom_call @check.* */
    if (kiln_module_parse_file(cx, program, &po, &m) != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_ctx_error_message(cx));
        goto done;
    }
    kiln_module_info info;
    const kiln_check *checks = NULL;
    int32_t n_checks = 0;
    if (kiln_module_info_get(cx, m, &info) != KILN_OK ||
        kiln_module_checks(cx, m, &checks, &n_checks) != KILN_OK) {
        fprintf(stderr, "kiln run: %s: %s\n", program, kiln_ctx_error_message(cx));
        goto done;
    }
    if (info.n_args != n_inputs) {
        fprintf(stderr, "kiln run: %s: the entry function takes %d argument%s, %d input%s given\n",
                program, info.n_args, info.n_args == 1 ? "" : "s", n_inputs,
                n_inputs == 1 ? "" : "s");
        goto done;
    }
    args = calloc((size_t)n_inputs + 1, sizeof *args);
    results = calloc((size_t)info.n_results + 1, sizeof *results);
    if (!args || !results) {
        fprintf(stderr, "kiln run: out of memory\n");
        goto done;
    }
    for (int i = 0; i < n_inputs; i++) {
        if (kiln_npy_load(cx, inputs[i], &args[i]) != KILN_OK) {
            fprintf(stderr, "kiln run: input %d (%s): %s\n", i, inputs[i],
                    kiln_ctx_error_message(cx));
            goto done;
        }
    }
    if (cli_compile(cx, m, mode, &exe) != KILN_OK) {
        fprintf(stderr, "kiln run: %s: %s\n", program, kiln_ctx_error_message(cx));
        goto done;
    }
    int32_t grid = info.num_replicas * info.num_partitions;
    kiln_status called;
    if (grid > 1) {
        printf("grid: %d replica%s x %d partition%s, run as threads; the results are process "
               "0's\n",
               (int)info.num_replicas, info.num_replicas == 1 ? "" : "s", (int)info.num_partitions,
               info.num_partitions == 1 ? "" : "s");
        called = run_on_grid(cx, exe, &info, args, n_inputs, results);
    } else {
        called = kiln_exe_call_n(cx, exe, args, n_inputs, results, info.n_results);
    }
    if (called != KILN_OK) {
        /* kiln_exe_call names the position as args[i]; say which file that was. */
        const char *msg = kiln_ctx_error_message(cx);
        const char *at = strstr(msg, "args[");
        long pos = at ? strtol(at + 5, NULL, 10) : -1;
        if (pos >= 0 && pos < n_inputs)
            fprintf(stderr, "kiln run: input %ld (%s): %s\n", pos, inputs[pos], msg);
        else
            fprintf(stderr, "kiln run: %s: %s\n", program, msg);
        goto done;
    }
    rc = CLI_OK;
    int32_t n_own = cli_checks_first_result(checks, n_checks, info.n_results);
    for (int r = 0; r < n_own; r++) {
        printf("out%d: ", r);
        cli_tensor_summary(cx, results[r], max_values, stdout);
        if (outdir) {
            size_t len = strlen(outdir) + 32;
            char *path = malloc(len);
            if (!path) {
                fprintf(stderr, "kiln run: out of memory\n");
                rc = CLI_ERROR;
                break;
            }
            snprintf(path, len, "%s/out%d.npy", outdir, r);
            if (kiln_npy_save(cx, path, results[r]) != KILN_OK) {
                fprintf(stderr, "kiln run: %s\n", kiln_ctx_error_message(cx));
                rc = CLI_ERROR;
                free(path);
                break;
            }
            free(path);
        }
    }
    int32_t n_failed = 0;
    for (int32_t i = 0; i < n_checks && rc == CLI_OK; i++) {
        const kiln_check *k = &checks[i];
        const kiln_tensor *expected = k->expected ? k->expected : results[k->expected_result];
        if (kiln_check_evaluate(cx, k, results[k->result], expected) != KILN_OK) {
            fprintf(stderr, "kiln run: %s:%d: %s failed: %s\n", program, k->line, cli_check_name(k),
                    kiln_ctx_error_message(cx));
            kiln_ctx_clear_error(cx);
            n_failed++;
        }
    }
    if (n_checks && rc == CLI_OK) {
        printf("checks: %d of %d passed\n", n_checks - n_failed, n_checks);
        if (n_failed) rc = CLI_ERROR;
    }
done:
    free(args);
    free(results);
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
    return rc;
}
