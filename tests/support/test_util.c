/* SPDX-License-Identifier: Apache-2.0 */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void test_run_with_stack(void *(*fn)(void *), void *arg, size_t stack_kib) {
    pthread_attr_t a;
    cr_assert_eq(pthread_attr_init(&a), 0);
    cr_assert_eq(pthread_attr_setstacksize(&a, stack_kib * 1024), 0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, &a, fn, arg), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&a);
}

kiln_ctx *test_ctx(void) {
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(NULL, &cx), KILN_OK);
    cr_assert_not_null(cx);
    return cx;
}

const char *test_tmp_path(const char *name) {
    static char buf[4096];
#ifdef KILN_TEST_TMP_DIR
    snprintf(buf, sizeof buf, "%s/%ld_%s", KILN_TEST_TMP_DIR, (long)getpid(), name);
#else
    snprintf(buf, sizeof buf, "/tmp/kiln_test_%ld_%s", (long)getpid(), name);
#endif
    return buf;
}

int test_backends(const char **names, int cap) {
    kiln_ctx *cx = test_ctx();
    int n = 0;
    for (int32_t i = 0; i < kiln_backend_count(cx); i++) {
        kiln_backend_info info;
        cr_assert_eq(kiln_backend_info_get(cx, i, &info), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        if (!info.available) {
            fprintf(stderr, "note: backend '%s' is unavailable here, not tested: %s\n", info.name,
                    info.reason);
            continue;
        }
        if (n < cap) names[n++] = info.name;
    }
    kiln_ctx_release(cx);
    cr_assert_gt(n, 0, "no backend is available");
    return n;
}

kiln_tensor *test_heat_step(kiln_ctx *cx, kiln_tensor *x, double k) {
    const int64_t n = kiln_tensor_dim(x, 0);
    kiln_tensor *l = kiln_slice(cx, x, KILN_DIMS(0), KILN_DIMS(n - 2), KILN_DIMS_NONE);
    kiln_tensor *c = kiln_slice(cx, x, KILN_DIMS(1), KILN_DIMS(n - 1), KILN_DIMS_NONE);
    kiln_tensor *r = kiln_slice(cx, x, KILN_DIMS(2), KILN_DIMS(n), KILN_DIMS_NONE);
    kiln_tensor *lap =
        kiln_add(cx, kiln_subtract(cx, l, kiln_multiply(cx, kiln_scalar(cx, 2, KILN_F32), c)), r);
    kiln_tensor *parts[3] = {kiln_slice(cx, x, KILN_DIMS(0), KILN_DIMS(1), KILN_DIMS_NONE),
                             kiln_add(cx, c, kiln_multiply(cx, kiln_scalar(cx, k, KILN_F32), lap)),
                             kiln_slice(cx, x, KILN_DIMS(n - 1), KILN_DIMS(n), KILN_DIMS_NONE)};
    return kiln_concatenate(cx, parts, 3, 0);
}

bool test_is_nan(kiln_dtype d, const void *p) {
    uint64_t b = 0;
    memcpy(&b, p, kiln_dtype_size(d) <= 8 ? kiln_dtype_size(d) : 8);
    switch (d) {
    case KILN_F16: return (b & 0x7fffu) > 0x7c00u;
    case KILN_BF16: return (b & 0x7fffu) > 0x7f80u;
    case KILN_F32: return (b & 0x7fffffffu) > 0x7f800000u;
    case KILN_F64: return (b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    default: return false;
    }
}

kiln_tensor *test_f32_generated(kiln_ctx *cx, kiln_shape shape, float (*gen)(void)) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    float *v = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    cr_assert_not_null(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = gen();
    kiln_tensor *t = kiln_tensor_from_host(cx, KILN_F32, shape, v, sizeof(float) * (size_t)n);
    free(v);
    cr_assert_not_null(t, "%s", kiln_ctx_error_message(cx));
    return t;
}

unsigned char *test_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    unsigned char *b = malloc((size_t)size + 1);
    cr_assert_not_null(b);
    *n = fread(b, 1, (size_t)size, f);
    b[*n] = 0;
    fclose(f);
    return b;
}

int test_run_checks(kiln_ctx *cx, kiln_module *m) {
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_info info;
    cr_assert_eq(kiln_module_info_get(cx, m, &info), KILN_OK);
    kiln_tensor *res[64];
    cr_assert(info.n_results <= 64);
    cr_assert_eq(kiln_exe_call_n(cx, exe, NULL, 0, res, info.n_results), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    const kiln_check *c;
    int32_t n;
    cr_assert_eq(kiln_module_checks(cx, m, &c, &n), KILN_OK);
    int bad = 0;
    for (int32_t i = 0; i < n; i++) {
        const kiln_tensor *want = c[i].expected_result >= 0 ? res[c[i].expected_result] : NULL;
        if (kiln_check_evaluate(cx, &c[i], res[c[i].result], want) != KILN_OK) {
            cr_log_info("check %d (line %d): %s", (int)i, (int)c[i].line,
                        kiln_ctx_error_message(cx));
            kiln_ctx_clear_error(cx);
            bad++;
        }
    }
    for (int32_t i = 0; i < info.n_results; i++)
        kiln_tensor_release(res[i]);
    kiln_exe_release(exe);
    return n ? bad : -1;
}

void test_expect_compiled_equals_eager(kiln_ctx *cx, kiln_region fn, const kiln_arg_spec *spec,
                                       kiln_tensor **in, int n_in, kiln_tensor *const *eager,
                                       int n_out, const char *what) {
    enum { MAX_OUT = 8 };
    cr_assert_leq(n_out, MAX_OUT);
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, spec, n_in, n_out, NULL, &m), KILN_OK, "%s: %s", what,
                 kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s: %s", what,
                 kiln_ctx_error_message(cx));
    kiln_tensor *compiled[MAX_OUT];
    cr_assert_eq(kiln_exe_call_n(cx, exe, in, n_in, compiled, n_out), KILN_OK, "%s: %s", what,
                 kiln_ctx_error_message(cx));
    for (int r = 0; r < n_out; r++) {
        cr_assert_eq(kiln_tensor_dtype(compiled[r]), kiln_tensor_dtype(eager[r]), "%s", what);
        cr_assert(memcmp(kiln_tensor_data(compiled[r]), kiln_tensor_data(eager[r]),
                         kiln_tensor_nbytes(eager[r])) == 0,
                  "%s: result %d compiled equals eager", what, r);
        kiln_tensor_release(compiled[r]);
    }
    kiln_exe_release(exe);
    kiln_module_release(m);
}

kiln_module *test_parse(kiln_ctx *cx, const char *text) {
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    return m;
}

kiln_status test_compile_text(kiln_ctx *cx, const char *text, const char *backend, bool passes,
                              kiln_exe **exe) {
    kiln_module *m = test_parse(cx, text);
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = backend;
    o.disable_passes = !passes;
    kiln_status s = kiln_compile(cx, m, &o, exe);
    kiln_module_release(m);
    return s;
}

void test_expect_op_refused(kiln_ctx *cx, const char *args, const char *op_line,
                            const char *fragment) {
    char text[4096];
    snprintf(text, sizeof text, "func.func @main(%s) {\n  %s\n  return\n}\n", args, op_line);
    kiln_module *m = NULL;
    cr_assert_neq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "read: %s",
                  op_line);
    cr_assert_null(m);
    const char *msg = kiln_ctx_error_message(cx);
    cr_assert(strstr(msg, fragment), "message \"%s\" lacks \"%s\" (for %s)", msg, fragment,
              op_line);
    cr_assert(strstr(msg, ":2:"), "no line in \"%s\"", msg);
    kiln_ctx_clear_error(cx);
}
