/* SPDX-License-Identifier: Apache-2.0 */
/* kiln conform: StableHLO interpreter test files (stablehlo/tests/interpret style).
 *
 * Each file is cut at lines that are exactly "// -----"; every chunk that defines a
 * function is one case: its entry function runs (no arguments) and its check.* ops (or
 * their stablehlo.custom_call @check.* spellings) are evaluated. Each case runs in a
 * child process, so a crash or a hang is that case's failure, not the run's. */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static const char conform_help[] =
    "usage: kiln conform PATH... [--mode eval|compiled] [--tier-file CASES.tsv]\n"
    "                    [--require-tier core|extended|exotic] [--timeout SECONDS]\n"
    "                    [--require-all] [--no-fork] [--quiet]\n"
    "\n"
    "Runs StableHLO interpreter test files (stablehlo/tests/interpret). PATH is a .mlir\n"
    "file, a portable artifact (.mlirbc or .mlir.bc, MLIR bytecode of VHLO: one case), or\n"
    "a folder (searched recursively for both). Each text file is split at lines\n"
    "'// -----'; each chunk defining a function is a case: its entry function (@main, or\n"
    "the only function) runs and its check ops are evaluated: check.expect_eq,\n"
    "expect_eq_const, expect_almost_eq, expect_almost_eq_const, expect_close and the\n"
    "stablehlo.custom_call @check.expect_eq / expect_close / expect_almost_eq spellings.\n"
    "interpreter.run_parallel runs its programs at once, one thread per process of its\n"
    "grid, their collectives on a local communicator (kiln/spmd.h).\n"
    "\n"
    "One line per case, then the totals:\n"
    "  PASS FILE#CHUNK\n"
    "  FAIL FILE#CHUNK: line L: CHECK: index I: got X, expected Y   (or the error)\n"
    "  SKIP FILE#CHUNK: unsupported: REASON\n"
    "  N passed, N failed, N skipped\n"
    "FILE is the path below the folder given (or the file's name), CHUNK the 1-based chunk\n"
    "number. Cases whose parse fails on an op or type kiln lacks (the parser reports it as\n"
    "unsupported or unknown, or UNIMPLEMENTED) are skipped, as are cases whose entry\n"
    "function takes arguments (tooling tests that need the interpreter's --args).\n"
    "\n"
    "options:\n"
    "  --mode eval|compiled    how cases run (default compiled): eval runs every op on its\n"
    "                          own with the interpreter backend (the evaluator's kernels);\n"
    "                          compiled runs the cpu backend's passes and fused kernels\n"
    "  --tier-file CASES.tsv   the case index (columns file, chunk, line, tier, ..., reasons):\n"
    "                          the totals are broken down by tier (every case runs; one\n"
    "                          kiln cannot read is skipped as unsupported)\n"
    "  --require-tier TIER     exit 1 only when a case of TIER or a lower tier (core <\n"
    "                          extended < exotic; cases missing from the index count as\n"
    "                          core) fails or is skipped as unsupported; failures above it\n"
    "                          are reported but do not fail the run. Needs --tier-file\n"
    "  --require-all           exit 1 when any case fails or is skipped (for files kiln must\n"
    "                          run completely)\n"
    "  --timeout SECONDS       per case (default 60; 0: none)\n"
    "  --no-fork               run cases in this process (debugging; a crash ends the run)\n"
    "  --quiet                 print only failures and the totals\n"
    "  -h, --help              this text\n"
    "\n"
    "exit status: 0 when nothing (required) failed, 1 otherwise, 2 usage error\n";

enum { TIER_CORE, TIER_EXTENDED, TIER_EXOTIC, TIER_COUNT };
static const char *const tier_names[TIER_COUNT] = {"core", "extended", "exotic"};

enum outcome { OUT_PASS, OUT_FAIL, OUT_SKIP, OUT_SKIP_TOOLING };

typedef struct tier_entry {
    char *file;
    int chunk;
    int tier;
    char *reasons;
} tier_entry;

typedef struct conform {
    cli_mode mode;
    int timeout;
    bool fork, quiet;
    bool require_all; /* --require-all: a skipped case fails the run too */
    int require_tier; /* -1: none */
    tier_entry *tiers;
    size_t n_tiers;
    bool have_tiers;
    int counts[TIER_COUNT][3]; /* pass, fail, skip */
    int total[3];
    int required_bad;
    const char *file_text; /* the file being run (for its RUN lines) */
} conform;

static int tier_parse(const char *s) {
    for (int t = 0; t < TIER_COUNT; t++)
        if (strcmp(s, tier_names[t]) == 0) return t;
    return -1;
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Reads the case index. Returns false (message printed) on error. */
static bool tiers_load(conform *c, const char *path) {
    char *text = cli_read_file(path, NULL);
    if (!text) {
        fprintf(stderr, "kiln conform: %s: %s\n", path, cli_file_error(errno));
        return false;
    }
    size_t cap = 0;
    char *line = text;
    int lineno = 0;
    bool ok = true;
    while (*line) {
        char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        lineno++;
        char *next = *end ? end + 1 : end;
        *end = '\0';
        if (end > line && end[-1] == '\r') end[-1] = '\0';
        if (line[0] != '#' && line[0] != '\0' && strncmp(line, "file\t", 5) != 0) {
            char *col[9] = {0};
            int n = 0;
            char *p = line;
            while (n < 9) {
                col[n++] = p;
                char *tab = strchr(p, '\t');
                if (!tab) break;
                *tab = '\0';
                p = tab + 1;
            }
            int tier = n >= 4 ? tier_parse(col[3]) : -1;
            char *stop = NULL;
            long chunk = n >= 2 ? strtol(col[1], &stop, 10) : 0;
            if (tier < 0 || !stop || *stop || chunk < 1 || chunk > 1000000) {
                fprintf(stderr, "kiln conform: %s:%d: expected file, chunk, line, tier, ...\n",
                        path, lineno);
                ok = false;
                break;
            }
            if (c->n_tiers == cap) {
                cap = cap ? cap * 2 : 256;
                tier_entry *bigger = realloc(c->tiers, cap * sizeof *bigger);
                if (!bigger) {
                    ok = false;
                    break;
                }
                c->tiers = bigger;
            }
            tier_entry *e = &c->tiers[c->n_tiers++];
            e->file = dup_n(col[0], strlen(col[0]));
            e->chunk = (int)chunk;
            e->tier = tier;
            e->reasons = dup_n(n >= 9 ? col[8] : "", strlen(n >= 9 ? col[8] : ""));
            if (!e->file || !e->reasons) {
                ok = false;
                break;
            }
        }
        line = next;
    }
    free(text);
    c->have_tiers = true;
    return ok;
}

static const tier_entry *tier_find(const conform *c, const char *file, int chunk) {
    for (size_t i = 0; i < c->n_tiers; i++)
        if (c->tiers[i].chunk == chunk && strcmp(c->tiers[i].file, file) == 0) return &c->tiers[i];
    return NULL;
}

/* ---- one case --------------------------------------------------------------------- */

static bool contains_ci(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n) return true;
    }
    return false;
}

/* Whether an error says kiln lacks a feature (an op, a type) rather than that kiln is
 * wrong. */
static bool is_unsupported(kiln_status s, const char *msg) {
    static const char *const words[] = {
        "unsupported",          "not supported",     "unimplemented",
        "unknown op",           "unknown operation", "unknown type",
        "unknown element type", "unknown dialect",   "unknown dtype"};
    if (s == KILN_UNIMPLEMENTED) return true;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (contains_ci(msg, words[i])) return true;
    return false;
}

/* ---- entry functions with arguments: the interpreter's --args ------------------------ */

/* The inside of --args="[...]" on a RUN line that is expected to succeed (not `not ...`),
 * or NULL. */
static const char *find_run_args(const char *text, size_t *out_len) {
    for (const char *p = text; (p = strstr(p, "// RUN:")) != NULL;) {
        const char *eol = strchr(p, '\n');
        if (!eol) eol = p + strlen(p);
        const char *q = p + 7;
        while (q < eol && *q == ' ')
            q++;
        bool negated = (size_t)(eol - q) >= 4 && memcmp(q, "not ", 4) == 0;
        for (; !negated && q + 9 <= eol; q++) {
            if (memcmp(q, "--args=\"[", 9) != 0) continue;
            const char *start = q + 9;
            const char *close = memchr(start, '"', (size_t)(eol - start));
            if (close && close > start && close[-1] == ']') {
                *out_len = (size_t)(close - 1 - start);
                return start;
            }
        }
        p = eol;
    }
    return NULL;
}

/* Where the next top-level `sep` is in [p, end) (outside <>, [], (), {}), or end. */
static const char *top_level(const char *p, const char *end, char sep) {
    int depth = 0;
    for (; p < end; p++) {
        if (*p == '<' || *p == '[' || *p == '(' || *p == '{')
            depth++;
        else if ((*p == '>' || *p == ']' || *p == ')' || *p == '}') && depth > 0)
            depth--;
        else if (*p == sep && depth == 0)
            return p;
    }
    return end;
}

/* The values of an --args list ("dense<1> : tensor<2xi32>, ...") as tensors, made by
 * parsing and running a function returning them as constants. */
static kiln_status args_make(kiln_ctx *cx, const char *list, size_t len, cli_mode mode,
                             kiln_tensor ***out_args, int32_t *out_n) {
    char *text = NULL;
    size_t text_size = 0;
    FILE *f = open_memstream(&text, &text_size);
    if (!f) return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory");
    const char *end = list + len;
    int32_t n = 0;
    char types[4096] = "";
    size_t tlen = 0;
    fputs("func.func @main() -> (", f);
    for (const char *p = list; p < end; n++) {
        const char *comma = top_level(p, end, ',');
        const char *colon = top_level(p, comma, ':');
        if (colon == comma) {
            fclose(f);
            free(text);
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "--args: element %d has no ': type'", (int)n);
        }
        int written = snprintf(types + tlen, sizeof types - tlen, "%s%.*s", n ? ", " : "",
                               (int)(comma - colon - 1), colon + 1);
        if (written < 0 || (size_t)written >= sizeof types - tlen) {
            fclose(f);
            free(text);
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "--args: too long");
        }
        tlen += (size_t)written;
        p = comma < end ? comma + 1 : end;
    }
    fprintf(f, "%s) {\n", types);
    int32_t i = 0;
    for (const char *p = list; p < end; i++) {
        const char *comma = top_level(p, end, ',');
        fprintf(f, "  %%%d = stablehlo.constant %.*s\n", (int)i, (int)(comma - p), p);
        p = comma < end ? comma + 1 : end;
    }
    fputs("  func.return", f);
    for (i = 0; i < n; i++)
        fprintf(f, "%s %%%d", i ? "," : "", (int)i);
    fprintf(f, " : %s\n}\n", types);
    fclose(f);

    kiln_module *m = NULL;
    kiln_exe *exe = NULL;
    kiln_tensor **args = calloc((size_t)n + 1, sizeof *args);
    kiln_parse_options po = kiln_parse_options_default();
    po.filename = "--args";
    kiln_status s = args ? kiln_module_parse(cx, text, text_size, &po, &m)
                         : kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory");
    if (s == KILN_OK) s = cli_compile(cx, m, mode, &exe);
    if (s == KILN_OK) s = kiln_exe_call_n(cx, exe, NULL, 0, args, n);
    kiln_exe_release(exe);
    kiln_module_release(m);
    free(text);
    if (s != KILN_OK) {
        free(args);
        return s;
    }
    *out_args = args;
    *out_n = n;
    return KILN_OK;
}

static void put_values(kiln_ctx *cx, const kiln_tensor *t, int32_t axis, int64_t *index, FILE *f) {
    const kiln_shape *s = kiln_tensor_shape(t);
    kiln_dtype dt = kiln_tensor_dtype(t);
    if (axis == s->rank) {
        double v = kiln_tensor_item(cx, t, (*index)++);
        if (dt == KILN_BOOL)
            fputs(v != 0 ? "true" : "false", f);
        else if (kiln_dtype_is_float(dt))
            fprintf(f, "%.6e", v);
        else
            fprintf(f, "%.0f", v);
        return;
    }
    fputc('[', f);
    for (int64_t i = 0; i < s->dims[axis]; i++) {
        if (i) fputs(", ", f);
        put_values(cx, t, axis + 1, index, f);
    }
    fputc(']', f);
}

/* The results as the interpreter prints them: "tensor<2xi32> {\n  [3, 3]\n}". */
static char *results_text(kiln_ctx *cx, kiln_tensor **results, int32_t n) {
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f) return NULL;
    for (int32_t r = 0; r < n; r++) {
        const kiln_shape *s = kiln_tensor_shape(results[r]);
        fputs("tensor<", f);
        for (int32_t d = 0; d < s->rank; d++)
            fprintf(f, "%lldx", (long long)s->dims[d]);
        fprintf(f, "%s> {\n  ", kiln_dtype_name(kiln_tensor_dtype(results[r])));
        int64_t index = 0;
        put_values(cx, results[r], 0, &index, f);
        fputs("\n}\n", f);
    }
    fclose(f);
    return text;
}

/* Whether `line` contains `pattern`, with runs of blanks equal to one (as FileCheck). */
static bool blank_insensitive_contains(const char *line, size_t line_len, const char *pat,
                                       size_t pat_len) {
    for (size_t start = 0; start < line_len; start++) {
        size_t i = start, j = 0;
        while (j < pat_len && i < line_len) {
            if (pat[j] == ' ' || pat[j] == '\t') {
                if (line[i] != ' ' && line[i] != '\t') break;
                while (j < pat_len && (pat[j] == ' ' || pat[j] == '\t'))
                    j++;
                while (i < line_len && (line[i] == ' ' || line[i] == '\t'))
                    i++;
            } else if (pat[j] == line[i]) {
                i++;
                j++;
            } else
                break;
        }
        if (j == pat_len) return true;
    }
    return pat_len == 0;
}

/* Checks `output` against the chunk's "// CHECK:" and "// CHECK-NEXT:" lines. */
static bool filecheck(const char *chunk, size_t length, const char *output, char *msg,
                      size_t msg_size) {
    const char *end = chunk + length, *out = output, *prev_line_end = NULL;
    for (const char *p = chunk; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *q = p;
        while (q < eol && (*q == ' ' || *q == '\t'))
            q++;
        bool next = false, is_check = false;
        if ((size_t)(eol - q) >= 9 && memcmp(q, "// CHECK:", 9) == 0) {
            q += 9;
            is_check = true;
        } else if ((size_t)(eol - q) >= 14 && memcmp(q, "// CHECK-NEXT:", 14) == 0) {
            q += 14;
            is_check = next = true;
        }
        if (is_check) {
            while (q < eol && (*q == ' ' || *q == '\t'))
                q++;
            const char *pe = eol;
            while (pe > q && (pe[-1] == ' ' || pe[-1] == '\t' || pe[-1] == '\r'))
                pe--;
            bool found = false;
            const char *o = next ? (prev_line_end ? prev_line_end : out) : out;
            while (*o) {
                const char *oe = strchr(o, '\n');
                if (!oe) oe = o + strlen(o);
                if (blank_insensitive_contains(o, (size_t)(oe - o), q, (size_t)(pe - q))) {
                    found = true;
                    prev_line_end = out = *oe ? oe + 1 : oe;
                    break;
                }
                if (next || !*oe) break;
                o = oe + 1;
            }
            if (!found) {
                snprintf(msg, msg_size, "output does not match '%.*s' (output: %s)", (int)(eol - p),
                         p, output);
                return false;
            }
        }
        p = eol < end ? eol + 1 : end;
    }
    return true;
}

/* Runs one function of a chunk (entry NULL: @main or the only one); writes the outcome's
 * message to msg. */
static enum outcome run_entry(const conform *c, const char *path, const char *text,
                              size_t length, int first_line, const char *entry, char *msg,
                              size_t msg_size) {
    kiln_ctx *cx;
    msg[0] = '\0';
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) {
        snprintf(msg, msg_size, "cannot create a context");
        return OUT_FAIL;
    }
    enum outcome out = OUT_FAIL;
    kiln_module *m = NULL;
    kiln_exe *exe = NULL;
    kiln_tensor **results = NULL, **args = NULL;
    int32_t n_args = 0;
    kiln_parse_options po = kiln_parse_options_default();
    po.filename = path;
    po.first_line = first_line;
    po.allow_checks = true;
    po.entry = entry;
    kiln_status s = kiln_module_parse(cx, text, length, &po, &m);
    if (s != KILN_OK) {
        const char *e = kiln_ctx_error_message(cx);
        if (is_unsupported(s, e)) {
            snprintf(msg, msg_size, "unsupported: %s", e);
            out = OUT_SKIP;
        } else
            snprintf(msg, msg_size, "parse error: %s", e);
        goto done;
    }
    kiln_module_info info;
    const kiln_check *checks = NULL;
    int32_t n_checks = 0;
    if (kiln_module_info_get(cx, m, &info) != KILN_OK ||
        kiln_module_checks(cx, m, &checks, &n_checks) != KILN_OK) {
        snprintf(msg, msg_size, "%s", kiln_ctx_error_message(cx));
        goto done;
    }
    /* An entry function with arguments takes them from the RUN line's --args, and its
     * results are checked against the CHECK lines (api_input_arguments.mlir). */
    if (info.n_args > 0) {
        size_t len = 0;
        const char *list = c->file_text ? find_run_args(c->file_text, &len) : NULL;
        if (!list) {
            snprintf(msg, msg_size,
                     "unsupported: the entry function takes %d argument%s and no RUN line "
                     "gives --args",
                     info.n_args, info.n_args == 1 ? "" : "s");
            out = OUT_SKIP_TOOLING;
            goto done;
        }
        if (args_make(cx, list, len, c->mode, &args, &n_args) != KILN_OK) {
            snprintf(msg, msg_size, "--args: %s", kiln_ctx_error_message(cx));
            goto done;
        }
    }
    s = cli_compile(cx, m, c->mode, &exe);
    if (s != KILN_OK) {
        const char *e = kiln_ctx_error_message(cx);
        if (is_unsupported(s, e)) {
            snprintf(msg, msg_size, "unsupported: %s", e);
            out = OUT_SKIP;
        } else
            snprintf(msg, msg_size, "compile: %s", e);
        goto done;
    }
    results = calloc((size_t)info.n_results + 1, sizeof *results);
    if (!results) {
        snprintf(msg, msg_size, "out of memory");
        goto done;
    }
    s = kiln_exe_call_n(cx, exe, args, n_args, results, info.n_results);
    free(args);
    args = NULL;
    if (s != KILN_OK) {
        const char *e = kiln_ctx_error_message(cx);
        if (is_unsupported(s, e)) {
            snprintf(msg, msg_size, "unsupported: %s", e);
            out = OUT_SKIP;
        } else
            snprintf(msg, msg_size, "run: %s", e);
        goto done;
    }
    for (int32_t i = 0; i < n_checks; i++) {
        const kiln_check *k = &checks[i];
        if (k->result < 0 || k->result >= info.n_results ||
            (!k->expected && (k->expected_result < 0 || k->expected_result >= info.n_results))) {
            snprintf(msg, msg_size, "line %d: %s: bad result index", k->line, cli_check_name(k));
            goto done;
        }
        const kiln_tensor *expected = k->expected ? k->expected : results[k->expected_result];
        if (kiln_check_evaluate(cx, k, results[k->result], expected) != KILN_OK) {
            snprintf(msg, msg_size, "line %d: %s: %s", k->line, cli_check_name(k),
                     kiln_ctx_error_message(cx));
            goto done;
        }
    }
    if (n_args > 0) {
        char *text_out = results_text(cx, results, info.n_results);
        bool ok = text_out && filecheck(text, length, text_out, msg, msg_size);
        free(text_out);
        if (!ok) goto done;
    }
    out = OUT_PASS;
done:
    free(args);
    free(results);
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
    return out;
}

/* Runs one chunk: its entry function, or, in a chunk of several functions and no @main
 * (a separator commented out in the file), each function's text in turn, as the
 * reference interpreter runs them all: the first failure, else the first skip, else a
 * pass. */
static enum outcome run_case(const conform *c, const char *path, const char *text, size_t length,
                             int first_line, char *msg, size_t msg_size) {
    enum outcome out = run_entry(c, path, text, length, first_line, NULL, msg, msg_size);
    if (out == OUT_PASS || !strstr(msg, "several functions and none is @main")) return out;
    enum outcome worst = OUT_PASS;
    int worst_rank = 0; /* pass 0, skip 1, fail 2 */
    char one[512];
    msg[0] = '\0';
    /* the functions' texts: from each line that opens one to the next */
    const char *end = text + length, *at = text;
    int line = first_line;
    while (at < end) {
        /* the piece ends before the second line opening a function (the first is its own) */
        const char *next = at;
        int opened = strncmp(at, "func.func ", 10) == 0;
        while (next < end) {
            next = memchr(next, '\n', (size_t)(end - next));
            next = next ? next + 1 : end;
            if (next < end && strncmp(next, "func.func ", 10) == 0 && opened++) break;
        }
        enum outcome o = run_entry(c, path, at, (size_t)(next - at), line, NULL, one, sizeof one);
        int rank = o == OUT_FAIL ? 2 : o == OUT_PASS ? 0 : 1;
        if (rank > worst_rank) {
            worst = o, worst_rank = rank;
            snprintf(msg, msg_size, "line %d: %s", line, one);
        }
        for (const char *q = at; q < next; q++)
            line += *q == '\n';
        at = next;
        if (worst == OUT_FAIL) break;
    }
    return worst;
}

/* run_case in a child process, with a timeout. */
static enum outcome run_case_isolated(const conform *c, const char *path, const char *text,
                                      size_t length, int first_line, char *msg, size_t msg_size) {
    if (!c->fork) return run_case(c, path, text, length, first_line, msg, msg_size);
    fflush(stdout);
    fflush(stderr);
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(msg, msg_size, "pipe: %s", strerror(errno));
        return OUT_FAIL;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        snprintf(msg, msg_size, "fork: %s", strerror(errno));
        return OUT_FAIL;
    }
    if (pid == 0) {
        close(fds[0]);
        if (c->timeout > 0) alarm((unsigned)c->timeout);
        char buf[4096];
        enum outcome o = run_case(c, path, text, length, first_line, buf + 1, sizeof buf - 1);
        buf[0] = (char)('0' + (int)o);
        size_t n = 1 + strlen(buf + 1), done = 0;
        while (done < n) {
            ssize_t w = write(fds[1], buf + done, n - done);
            if (w <= 0) break;
            done += (size_t)w;
        }
        close(fds[1]);
        exit(0); /* exit, not _exit: LeakSanitizer checks the child too */
    }
    close(fds[1]);
    char buf[4096];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fds[0], buf + n, sizeof buf - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
        if (n == sizeof buf - 1) break;
    }
    buf[n] = '\0';
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (sig == SIGALRM)
            snprintf(msg, msg_size, "timed out after %d s", c->timeout);
        else
            snprintf(msg, msg_size, "crashed (signal %d%s)", sig,
                     sig == SIGSEGV   ? ", SIGSEGV"
                     : sig == SIGABRT ? ", SIGABRT"
                     : sig == SIGFPE  ? ", SIGFPE"
                                      : "");
        return OUT_FAIL;
    }
    if (n == 0 || buf[0] < '0' || buf[0] > '3') {
        snprintf(msg, msg_size, "the case's process exited with status %d and no result",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return OUT_FAIL;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        /* A sanitizer report at exit (a leak): the case fails. */
        snprintf(msg, msg_size, "the case's process exited with status %d (a sanitizer report?)",
                 WEXITSTATUS(status));
        return OUT_FAIL;
    }
    snprintf(msg, msg_size, "%s", buf + 1);
    return (enum outcome)(buf[0] - '0');
}

/* ---- files -------------------------------------------------------------------------- */

static bool line_is_split(const char *p, const char *end) {
    static const char mark[] = "// -----";
    size_t n = sizeof mark - 1;
    if ((size_t)(end - p) < n || memcmp(p, mark, n) != 0) return false;
    for (p += n; p < end; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r') return false;
    return true;
}

static bool chunk_has_func(const char *p, const char *end) {
    static const char w[] = "func.func";
    size_t n = sizeof w - 1;
    for (; p + n <= end; p++)
        if (memcmp(p, w, n) == 0) return true;
    return false;
}

/* Prints `msg` on one line: newlines as "\n". */
static void put_one_line(const char *msg) {
    for (; *msg; msg++) {
        if (*msg == '\n')
            fputs("\\n", stdout);
        else if (*msg != '\r')
            putchar(*msg);
    }
}

static void record(conform *c, const char *name, int chunk, enum outcome o, const char *msg) {
    const tier_entry *e = c->have_tiers ? tier_find(c, name, chunk) : NULL;
    int tier = e ? e->tier : TIER_CORE;
    int kind = o == OUT_PASS ? 0 : o == OUT_FAIL ? 1 : 2;
    c->counts[tier][kind]++;
    c->total[kind]++;
    if (c->require_tier >= 0 && tier <= c->require_tier && (o == OUT_FAIL || o == OUT_SKIP))
        c->required_bad++;
    if (o == OUT_PASS) {
        if (!c->quiet) printf("PASS %s#%d\n", name, chunk);
    } else if (o == OUT_FAIL || !c->quiet) {
        printf("%s %s#%d: ", o == OUT_FAIL ? "FAIL" : "SKIP", name, chunk);
        put_one_line(msg);
        putchar('\n');
    }
    fflush(stdout);
}

/* Runs one chunk (if it defines a function) and records it. */
static void conform_chunk(conform *c, const char *path, const char *name, int chunk, int first_line,
                          const char *start, const char *end) {
    if (!chunk_has_func(start, end)) return;
    char msg[4096];
    enum outcome o =
        run_case_isolated(c, path, start, (size_t)(end - start), first_line, msg, sizeof msg);
    record(c, name, chunk, o, msg);
}

/* Runs the cases of one file; `name` is how lines name it, `path` where it is. */
static bool conform_file(conform *c, const char *path, const char *name) {
    size_t size;
    char *text = cli_read_file(path, &size);
    if (!text) {
        fprintf(stderr, "kiln conform: %s: %s\n", path, cli_file_error(errno));
        return false;
    }
    c->file_text = text;
    /* A portable artifact (MLIR bytecode) is one case, whole. */
    if (size >= 4 && memcmp(text, "ML\xefR", 4) == 0) {
        char msg[4096];
        enum outcome o = run_case_isolated(c, path, text, size, 1, msg, sizeof msg);
        record(c, name, 1, o, msg);
        c->file_text = NULL;
        free(text);
        return true;
    }
    const char *end = text + size, *chunk_start = text, *p = text;
    int chunk = 1, line = 1, chunk_line = 1;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = eol ? eol : end;
        if (line_is_split(p, line_end)) {
            conform_chunk(c, path, name, chunk, chunk_line, chunk_start, p);
            chunk++;
            chunk_start = eol ? eol + 1 : end;
            chunk_line = line + 1;
        }
        if (!eol) break;
        p = eol + 1;
        line++;
    }
    conform_chunk(c, path, name, chunk, chunk_line, chunk_start, end);
    c->file_text = NULL;
    free(text);
    return true;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every .mlir file below `dir` (sorted), naming each by its path below `root`. */
static bool conform_dir(conform *c, const char *dir, const char *rel) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "kiln conform: %s: %s\n", dir, strerror(errno));
        return false;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    bool ok = true;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **bigger = realloc(names, cap * sizeof *bigger);
            if (!bigger) {
                ok = false;
                break;
            }
            names = bigger;
        }
        names[n] = dup_n(de->d_name, strlen(de->d_name));
        if (!names[n]) {
            ok = false;
            break;
        }
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n && ok; i++) {
        size_t len = strlen(dir) + strlen(names[i]) + 2;
        size_t rlen = strlen(rel) + strlen(names[i]) + 2;
        char *path = malloc(len), *rpath = malloc(rlen);
        if (!path || !rpath) {
            free(path);
            free(rpath);
            ok = false;
            break;
        }
        snprintf(path, len, "%s/%s", dir, names[i]);
        snprintf(rpath, rlen, "%s%s%s", rel, rel[0] ? "/" : "", names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            ok = conform_dir(c, path, rpath);
        else {
            size_t nl = strlen(names[i]);
            if ((nl > 5 && strcmp(names[i] + nl - 5, ".mlir") == 0) ||
                (nl > 7 && strcmp(names[i] + nl - 7, ".mlirbc") == 0) ||
                (nl > 3 && strcmp(names[i] + nl - 3, ".bc") == 0))
                ok = conform_file(c, path, rpath);
        }
        free(path);
        free(rpath);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return ok;
}

int cli_conform_main(int argc, char **argv) {
    conform c = {.mode = CLI_MODE_COMPILED, .timeout = 60, .fork = true, .require_tier = -1};
    const char *tier_file = NULL;
    const char **paths = calloc((size_t)argc + 1, sizeof *paths);
    int n_paths = 0;
    int rc = CLI_USAGE;
    if (!paths) return CLI_ERROR;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(conform_help, stdout);
            free(paths);
            return CLI_OK;
        }
        if (strcmp(a, "--no-fork") == 0)
            c.fork = false;
        else if (strcmp(a, "--quiet") == 0)
            c.quiet = true;
        else if (strcmp(a, "--require-all") == 0)
            c.require_all = true;
        else if (strcmp(a, "--mode") == 0 || strcmp(a, "--tier-file") == 0 ||
                 strcmp(a, "--require-tier") == 0 || strcmp(a, "--timeout") == 0) {
            if (i + 1 >= argc) {
                cli_usage_error("conform", "option %s needs a value", a);
                goto out;
            }
            const char *v = argv[++i];
            if (strcmp(a, "--mode") == 0) {
                if (!cli_mode_parse(v, &c.mode)) {
                    cli_usage_error("conform", "--mode must be eval or compiled, not '%s'", v);
                    goto out;
                }
            } else if (strcmp(a, "--tier-file") == 0)
                tier_file = v;
            else if (strcmp(a, "--require-tier") == 0) {
                c.require_tier = tier_parse(v);
                if (c.require_tier < 0) {
                    cli_usage_error("conform",
                                    "--require-tier must be core, extended or exotic, not '%s'", v);
                    goto out;
                }
            } else {
                char *stop;
                long t = strtol(v, &stop, 10);
                if (*stop || t < 0 || t > 86400) {
                    cli_usage_error("conform", "--timeout: '%s' is not a number of seconds", v);
                    goto out;
                }
                c.timeout = (int)t;
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            cli_usage_error("conform", "unknown option '%s'", a);
            goto out;
        } else
            paths[n_paths++] = a;
    }
    if (n_paths == 0) {
        cli_usage_error("conform", "no test file or folder given");
        goto out;
    }
    if (c.require_tier >= 0 && !tier_file) {
        cli_usage_error("conform", "--require-tier needs --tier-file");
        goto out;
    }
    rc = CLI_ERROR;
    if (tier_file && !tiers_load(&c, tier_file)) goto out;
    bool ok = true;
    for (int i = 0; i < n_paths && ok; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            fprintf(stderr, "kiln conform: %s: %s\n", paths[i], strerror(errno));
            ok = false;
        } else if (S_ISDIR(st.st_mode))
            ok = conform_dir(&c, paths[i], "");
        else {
            const char *slash = strrchr(paths[i], '/');
            ok = conform_file(&c, paths[i], slash ? slash + 1 : paths[i]);
        }
    }
    if (!ok) goto out;
    if (c.have_tiers)
        for (int t = 0; t < TIER_COUNT; t++)
            printf("%s: %d passed, %d failed, %d skipped%s\n", tier_names[t], c.counts[t][0],
                   c.counts[t][1], c.counts[t][2],
                   c.require_tier < 0    ? ""
                   : t <= c.require_tier ? " (required)"
                                         : " (not required)");
    if (c.require_tier >= 0 && c.required_bad)
        printf("required tier %s: %d case%s failed or skipped as unsupported\n",
               tier_names[c.require_tier], c.required_bad, c.required_bad == 1 ? "" : "s");
    printf("%d passed, %d failed, %d skipped\n", c.total[0], c.total[1], c.total[2]);
    if (c.require_all)
        rc = c.total[1] || c.total[2] ? CLI_ERROR : CLI_OK;
    else if (c.require_tier >= 0)
        rc = c.required_bad ? CLI_ERROR : CLI_OK;
    else
        rc = c.total[1] ? CLI_ERROR : CLI_OK;
out:
    for (size_t i = 0; i < c.n_tiers; i++) {
        free(c.tiers[i].file);
        free(c.tiers[i].reasons);
    }
    free(c.tiers);
    free(paths);
    return rc;
}
