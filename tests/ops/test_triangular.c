/* SPDX-License-Identifier: Apache-2.0 */
/* triangular_solve and cholesky: every side, triangle, transpose and diagonal, checked by
 * multiplying back (op(a) x = b, L L^H = a) in double complex, batched, for real and
 * complex dtypes; NaN for a matrix that is not positive-definite; errors of inference. */
#include <string.h>

#include "complex_values.h"

static uint64_t rng = 0x853c49e6748fea9bULL;
static double uniform(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
}

enum { M = 4, N = 3, BATCH = 2 };

/* op(a)[i][j] of the triangle of a (ones on the diagonal with unit). */
static double complex op_at(const double complex *a, int64_t i, int64_t j, bool lower, bool unit,
                            kiln_solve_transpose t) {
    int64_t r = t == KILN_TRANSPOSE_NONE ? i : j, c = t == KILN_TRANSPOSE_NONE ? j : i;
    bool in = lower ? c <= r : c >= r;
    double complex v = r == c && unit ? 1 : in ? a[r * M + c] : 0;
    return t == KILN_TRANSPOSE_ADJOINT ? conj(v) : v;
}

Test(triangular, solve_every_form_and_multiply_back) {
    kiln_ctx *cx = test_ctx();
    const kiln_dtype types[4] = {KILN_F32, KILN_F64, KILN_C64, KILN_C128};
    const kiln_solve_transpose ts[3] = {KILN_TRANSPOSE_NONE, KILN_TRANSPOSE_T,
                                        KILN_TRANSPOSE_ADJOINT};
    double are[BATCH * M * M], aim[BATCH * M * M], bre[BATCH * M * N], bim[BATCH * M * N];
    for (int i = 0; i < BATCH * M * M; i++) {
        are[i] = uniform(), aim[i] = uniform();
        if (i % (M * M) % (M + 1) == 0) are[i] += 4; /* a strong diagonal */
    }
    for (int i = 0; i < BATCH * M * N; i++)
        bre[i] = uniform(), bim[i] = uniform();
    for (int k = 0; k < 4; k++) {
        kiln_dtype dt = types[k];
        bool cplx = kiln_dtype_is_complex(dt);
        double tol = kiln_dtype_component(dt) == KILN_F32 ? 1e-5 : 1e-13;
        kiln_scope_begin(cx);
        kiln_tensor *a =
            complex_tensor(cx, KILN_C128, KILN_SHAPE(BATCH, M, M), are, aim, BATCH * M * M);
        kiln_tensor *bl =
            complex_tensor(cx, KILN_C128, KILN_SHAPE(BATCH, M, N), bre, bim, BATCH * M * N);
        kiln_tensor *br = kiln_reshape(cx, bl, KILN_SHAPE(BATCH, N, M));
        a = cplx ? kiln_convert(cx, a, dt) : kiln_convert(cx, kiln_real(cx, a), dt);
        bl = cplx ? kiln_convert(cx, bl, dt) : kiln_convert(cx, kiln_real(cx, bl), dt);
        br = cplx ? kiln_convert(cx, br, dt) : kiln_convert(cx, kiln_real(cx, br), dt);
        for (int form = 0; form < 2 * 2 * 2 * 3; form++) {
            bool left = form & 1, lower = form & 2, unit = form & 4;
            kiln_solve_transpose t = ts[form / 8];
            kiln_tensor *b = left ? bl : br;
            kiln_tensor *x = kiln_triangular_solve(cx, a, b, left, lower, unit, t);
            cr_assert_not_null(x, "%s", kiln_ctx_error_message(cx));
            cr_assert_eq(kiln_tensor_dtype(x), dt);
            for (int64_t bt = 0; bt < BATCH; bt++) {
                double complex av[M * M], xv[M * N], bv[M * N];
                for (int64_t i = 0; i < M * M; i++)
                    av[i] = element(a, bt * M * M + i);
                for (int64_t i = 0; i < M * N; i++)
                    xv[i] = element(x, bt * M * N + i), bv[i] = element(b, bt * M * N + i);
                /* left: sum_k op(a)[i][k] x[k][c]; right: sum_k x[r][k] op(a)[k][j] */
                for (int64_t i = 0; i < (left ? M : N); i++)
                    for (int64_t j = 0; j < (left ? N : M); j++) {
                        double complex acc = 0;
                        for (int64_t q = 0; q < M; q++)
                            acc += left ? op_at(av, i, q, lower, unit, t) * xv[q * N + j]
                                        : xv[i * M + q] * op_at(av, q, j, lower, unit, t);
                        double complex want = bv[i * (left ? N : M) + j];
                        cr_assert(cabs(acc - want) <= tol * 10,
                                  "%s left %d lower %d unit %d transpose %d: [%lld, %lld] "
                                  "gives %g%+gi for %g%+gi",
                                  kiln_dtype_name(dt), left, lower, unit, (int)t, (long long)i,
                                  (long long)j, creal(acc), cimag(acc), creal(want), cimag(want));
                    }
            }
        }
        kiln_scope_end(cx);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(triangular, cholesky_factors_multiply_back) {
    kiln_ctx *cx = test_ctx();
    /* a = g g^H + M I: Hermitian positive-definite */
    double complex g[M * M], h[M * M];
    for (int i = 0; i < M * M; i++)
        g[i] = uniform() + uniform() * I;
    double re[M * M], im[M * M];
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < M; j++) {
            double complex acc = i == j ? M : 0;
            for (int64_t q = 0; q < M; q++)
                acc += g[i * M + q] * conj(g[j * M + q]);
            h[i * M + j] = acc;
            re[i * M + j] = creal(acc), im[i * M + j] = cimag(acc);
        }
    for (int k = 0; k < 2; k++) {
        kiln_dtype dt = complex_types[k];
        double tol = dt == KILN_C64 ? 2e-5 : 1e-13;
        kiln_tensor *a = complex_tensor(cx, dt, KILN_SHAPE(M, M), re, im, M * M);
        for (int lower = 0; lower < 2; lower++) {
            kiln_tensor *f = kiln_cholesky(cx, a, lower);
            cr_assert_not_null(f, "%s", kiln_ctx_error_message(cx));
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < M; j++) {
                    bool other = lower ? j > i : j < i;
                    if (other) cr_assert(element(f, i * M + j) == 0, "the other triangle is 0");
                    /* lower: (L L^H)[i][j]; upper: (U^H U)[i][j] */
                    double complex acc = 0;
                    for (int64_t q = 0; q < M; q++)
                        acc += lower ? element(f, i * M + q) * conj(element(f, j * M + q))
                                     : conj(element(f, q * M + i)) * element(f, q * M + j);
                    cr_assert(cabs(acc - h[i * M + j]) <= tol * 10, "%s lower %d [%lld, %lld]",
                              kiln_dtype_name(dt), lower, (long long)i, (long long)j);
                }
            kiln_tensor_release(f);
        }
        kiln_tensor_release(a);
    }
    /* real, batched, and a matrix that is not positive-definite: NaN */
    const double v[2 * 4] = {4, 2, 2, 3, 1, 2, 2, 1};
    kiln_tensor *r = kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(2, 2, 2), v, sizeof v);
    kiln_tensor *l = kiln_cholesky(cx, r, true);
    cr_assert_not_null(l, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_item(cx, l, 0), 2.0);
    cr_assert_eq(kiln_tensor_item(cx, l, 2), 1.0);
    cr_assert(fabs(kiln_tensor_item(cx, l, 3) - sqrt(2.0)) < 1e-15);
    cr_assert(isnan(kiln_tensor_item(cx, l, 7)), "[[1, 2], [2, 1]] is not positive-definite");
    /* potrf refuses it, the loops say where: its first pivot is 1, the second 1 - 4 < 0 */
    cr_assert_eq(kiln_tensor_item(cx, l, 4), 1.0);
    cr_assert_eq(kiln_tensor_item(cx, l, 5), 0.0);
    cr_assert_eq(kiln_tensor_item(cx, l, 6), 2.0);
    kiln_tensor_release(r);
    kiln_tensor_release(l);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

static kiln_status solve_and_factor(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                    void *u) {
    (void)u;
    out[0] = kiln_cholesky(cx, in[0], true);
    out[1] = kiln_triangular_solve(cx, out[0], in[1], true, true, false, KILN_TRANSPOSE_T);
    return kiln_ctx_status(cx);
}

/* Printed in StableHLO's forms, read back, compiled: the same bits as eager. */
Test(triangular, prints_reads_back_and_compiles) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec spec[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(3, 3)},
                             {.dtype = KILN_F32, .shape = KILN_SHAPE(3, 2)}};
    kiln_region fn = {solve_and_factor, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, spec, 2, 2, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *text = kiln_module_to_string(cx, m);
    cr_assert(strstr(text, "stablehlo.cholesky %arg0, lower = true : tensor<3x3xf32>"), "%s", text);
    cr_assert(strstr(text, "\"stablehlo.triangular_solve\"(%0, %arg1) <{left_side = true, "
                           "lower = true, transpose_a = #stablehlo<transpose TRANSPOSE>, "
                           "unit_diagonal = false}>"),
              "%s", text);
    kiln_module *again = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &again), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *text2 = kiln_module_to_string(cx, again);
    cr_assert_str_eq(text2, text);
    const char *upper = "func.func @main(%a: tensor<2x2xf64>) -> tensor<2x2xf64> {\n"
                        "  %0 = stablehlo.cholesky %a : tensor<2x2xf64>\n"
                        "  return %0 : tensor<2x2xf64>\n}\n";
    kiln_module *u = NULL;
    cr_assert_eq(kiln_module_parse(cx, upper, strlen(upper), NULL, &u), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *utext = kiln_module_to_string(cx, u);
    cr_assert(strstr(utext, "stablehlo.cholesky %arg0 : tensor<2x2xf64>"),
              "lower = false is "
              "left out: %s",
              utext);
    const float av[9] = {4, 1, 0, 1, 5, 1, 0, 1, 6}, bv[6] = {1, 2, 3, 4, 5, 6};
    kiln_tensor *in[2] = {kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(3, 3), av, sizeof av),
                          kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(3, 2), bv, sizeof bv)};
    kiln_tensor *eager[2], *compiled[2];
    cr_assert_eq(solve_and_factor(cx, in, eager, NULL), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, again, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_exe_call_n(cx, exe, in, 2, compiled, 2), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    for (int r = 0; r < 2; r++)
        cr_assert(memcmp(kiln_tensor_data(compiled[r]), kiln_tensor_data(eager[r]),
                         kiln_tensor_nbytes(eager[r])) == 0,
                  "result %d compiled equals eager", r);
    kiln_exe_release(exe);
    kiln_string_free(cx, text);
    kiln_string_free(cx, text2);
    kiln_string_free(cx, utext);
    kiln_module_release(m);
    kiln_module_release(again);
    kiln_module_release(u);
    kiln_ctx_release(cx);
}

Test(triangular, inference_names_what_is_wrong) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *a = kiln_zeros(cx, KILN_F32, KILN_SHAPE(3, 3));
    kiln_tensor *r = kiln_zeros(cx, KILN_F32, KILN_SHAPE(3, 2));
    kiln_tensor *i = kiln_zeros(cx, KILN_I32, KILN_SHAPE(3, 3));
    kiln_tensor *d = kiln_zeros(cx, KILN_F64, KILN_SHAPE(3, 2));
    cr_assert_null(kiln_triangular_solve(cx, r, a, true, true, false, KILN_TRANSPOSE_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_triangular_solve: operand 1 has type f32[3,2]; expected a batch of square "
                 "matrices [..., M, M]");
    cr_assert_null(kiln_triangular_solve(cx, a, r, false, true, false, KILN_TRANSPOSE_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "operand 2 has type f32[3,2]; with operand 1 of type f32[3,3] and left_side = "
                 "false it must be [..., N, M]");
    cr_assert_null(kiln_triangular_solve(cx, a, d, true, true, false, KILN_TRANSPOSE_NONE));
    expect_error(cx, KILN_INVALID_ARGUMENT, "operand 2 has dtype f64; expected f32");
    cr_assert_null(kiln_triangular_solve(cx, a, r, true, true, false, (kiln_solve_transpose)0));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "transpose_a 0 is not NO_TRANSPOSE, TRANSPOSE or ADJOINT");
    cr_assert_null(kiln_cholesky(cx, i, true));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_cholesky: operand 1 has dtype i32; expected a floating-point or complex "
                 "dtype");
    cr_assert_null(kiln_cholesky(cx, NULL, true));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_cholesky");
    kiln_ctx_release(cx);
}

/* Orders where potrf blocks (300, 600), both triangles, both real types: the factor
 * multiplies back to the matrix, its other triangle zero. */
Test(triangular, large_cholesky_factors_multiply_back) {
    kiln_ctx *cx = test_ctx();
    const int64_t sizes[] = {300, 600};
    for (size_t si = 0; si < 2; si++) {
        int64_t n = sizes[si];
        double *h = malloc(sizeof(double) * (size_t)(n * n));
        cr_assert_not_null(h);
        uint64_t r = 12345;
        for (int64_t i = 0; i < n; i++) /* symmetric, diagonally dominant */
            for (int64_t j = 0; j <= i; j++) {
                r = r * 6364136223846793005ull + 1442695040888963407ull;
                double v = (double)(r >> 11) / 9007199254740992.0 - 0.5;
                h[i * n + j] = h[j * n + i] = i == j ? (double)n : v;
            }
        const kiln_dtype dts[] = {KILN_F32, KILN_F64};
        for (int d = 0; d < 2; d++)
            for (int lower = 0; lower < 2; lower++) {
                kiln_tensor *a =
                    kiln_convert(cx,
                                 kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(n, n), h,
                                                       sizeof(double) * (size_t)(n * n)),
                                 dts[d]);
                kiln_tensor *f = kiln_convert(cx, kiln_cholesky(cx, a, lower), KILN_F64);
                cr_assert_not_null(f, "%s", kiln_ctx_error_message(cx));
                const double *l = kiln_tensor_data(f);
                double worst = 0;
                for (int64_t i = 0; i < n; i++)
                    for (int64_t j = 0; j < n; j++) {
                        if (lower ? j > i : j < i)
                            cr_assert(l[i * n + j] == 0, "n %lld: the other triangle is 0",
                                      (long long)n);
                        double acc = 0; /* (L L^T)[i][j] or (U^T U)[i][j] */
                        for (int64_t q = 0; q < n; q++)
                            acc +=
                                lower ? l[i * n + q] * l[j * n + q] : l[q * n + i] * l[q * n + j];
                        double err = fabs(acc - h[i * n + j]);
                        worst = err > worst ? err : worst;
                    }
                double tol = (dts[d] == KILN_F32 ? 1e-5 : 1e-12) * (double)n;
                cr_assert(worst <= tol, "%s n %lld lower %d: |LL^T - A| = %g",
                          kiln_dtype_name(dts[d]), (long long)n, lower, worst);
            }
        free(h);
    }
    expect_ok(cx);
    kiln_ctx_release(cx);
}
