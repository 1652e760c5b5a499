/* SPDX-License-Identifier: Apache-2.0 */
/* Shared helpers of the kiln tool: modes, usage errors, files, tensor summaries. */
#define _POSIX_C_SOURCE 200809L /* open flags, fdopen */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

bool cli_mode_parse(const char *text, cli_mode *out_mode) {
    if (strcmp(text, "eval") == 0) {
        *out_mode = CLI_MODE_EVAL;
        return true;
    }
    if (strcmp(text, "compiled") == 0) {
        *out_mode = CLI_MODE_COMPILED;
        return true;
    }
    return false;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "kiln %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'kiln %s --help'.\n", cmd);
    return CLI_USAGE;
}

char *cli_read_file(const char *path, size_t *out_size) {
    /* Regular files only (else EINVAL): a FIFO would block (O_NONBLOCK keeps the open from
     * waiting for a writer) and /dev/zero would never end. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat sb;
    int err = fstat(fd, &sb) != 0 ? errno : !S_ISREG(sb.st_mode) ? EINVAL : 0;
    if (err) {
        close(fd);
        errno = err;
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                errno = ENOMEM;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                free(buf);
                buf = NULL;
                errno = EIO;
            }
            break;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = '\0';
    if (out_size) *out_size = n;
    return buf;
}

const char *cli_file_error(int err) { return err == EINVAL ? "not a regular file" : strerror(err); }

static void print_value(double v, kiln_dtype dtype, FILE *stream) {
    if (dtype == KILN_BOOL)
        fputs(v != 0 ? "true" : "false", stream);
    else if (kiln_dtype_is_float(dtype)) {
        if (isnan(v))
            fputs("nan", stream);
        else if (isinf(v))
            fputs(v > 0 ? "inf" : "-inf", stream);
        else
            fprintf(stream, "%.8g", v);
    } else
        fprintf(stream, "%.0f", v);
}

void cli_tensor_summary(kiln_ctx *cx, const kiln_tensor *t, int max_values, FILE *stream) {
    kiln_dtype dtype = kiln_tensor_dtype(t);
    char shape[256];
    const kiln_shape *s = kiln_tensor_shape(t);
    if (!s || kiln_shape_format(s, shape, sizeof shape) < 0) strcpy(shape, "[?]");
    int64_t n = kiln_tensor_numel(t);
    fprintf(stream, "%s%s = ", kiln_dtype_name(dtype), shape);
    if (kiln_tensor_rank(t) > 0) fputc('[', stream);
    for (int64_t i = 0; i < n && i < max_values; i++) {
        if (i) fputs(", ", stream);
        print_value(kiln_tensor_item(cx, t, i), dtype, stream);
    }
    if (n > max_values) fprintf(stream, ", ... (%" PRId64 " values)", n);
    if (kiln_tensor_rank(t) > 0) fputc(']', stream);
    fputc('\n', stream);
}

kiln_status cli_compile(kiln_ctx *cx, kiln_module *m, cli_mode mode, kiln_exe **out_exe) {
    /* eval: every op as written, on its own, by the interpreter backend (the evaluator's
     * kernels; no passes); compiled: the CPU backend, with passes and fused kernels. */
    kiln_compile_options o = kiln_compile_options_default();
    if (mode == CLI_MODE_EVAL) {
        o.backend = "interpreter";
        o.disable_passes = true;
    }
    return kiln_compile(cx, m, &o, out_exe);
}

const char *cli_check_name(const kiln_check *k) {
    bool cst = k->expected != NULL;
    switch (k->kind) {
    case KILN_CHECK_EQ: return cst ? "expect_eq_const" : "expect_eq";
    case KILN_CHECK_ALMOST_EQ: return cst ? "expect_almost_eq_const" : "expect_almost_eq";
    case KILN_CHECK_CLOSE: return "expect_close";
    }
    return "check";
}

int32_t cli_checks_first_result(const kiln_check *checks, int32_t n_checks, int32_t n_results) {
    int32_t first = n_results;
    for (int32_t i = 0; i < n_checks; i++) {
        if (checks[i].result < first) first = checks[i].result;
        if (checks[i].expected_result >= 0 && checks[i].expected_result < first)
            first = checks[i].expected_result;
    }
    return first < 0 ? 0 : first;
}
