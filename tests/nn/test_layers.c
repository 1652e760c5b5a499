/* SPDX-License-Identifier: Apache-2.0 */
/* Layers against references computed here in double precision by the textbook formulas. */
#include "nn_test.h"

Test(nn_layers, dense_matches_the_matrix_product) {
    kiln_ctx *cx = test_ctx();
    float x[2 * 3], w[3 * 4], b[4];
    fill(x, 6, 1), fill(w, 12, 2), fill(b, 4, 3);
    double ref[8];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            double s = b[j];
            for (int k = 0; k < 3; k++)
                s += (double)x[i * 3 + k] * w[k * 4 + j];
            ref[i * 4 + j] = s;
        }
    kiln_tensor *y = kiln_nn_dense(cx, tf32(cx, KILN_SHAPE(2, 3), x), tf32(cx, KILN_SHAPE(3, 4), w),
                                   tf32(cx, KILN_SHAPE(4), b));
    expect_close(cx, y, KILN_SHAPE(2, 4), ref, 1e-6, 1e-6);
    /* Without bias. */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            ref[i * 4 + j] -= b[j];
    y = kiln_nn_dense(cx, tf32(cx, KILN_SHAPE(2, 3), x), tf32(cx, KILN_SHAPE(3, 4), w), NULL);
    expect_close(cx, y, KILN_SHAPE(2, 4), ref, 1e-6, 1e-6);
    kiln_ctx_release(cx);
}

/* Direct convolution: x [N,C,H,W], w [O,C/g,KH,KW]. */
static void conv_ref(const float *x, const float *w, const float *b, int N, int C, int H, int W,
                     int O, int KH, int KW, int s, int p, int d, int g, int OH, int OW, double *y) {
    int cg = C / g, og = O / g;
    for (int n = 0; n < N; n++)
        for (int o = 0; o < O; o++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double acc = b ? b[o] : 0;
                    int grp = o / og;
                    for (int c = 0; c < cg; c++)
                        for (int kh = 0; kh < KH; kh++)
                            for (int kw = 0; kw < KW; kw++) {
                                int ih = oh * s - p + kh * d, iw = ow * s - p + kw * d;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                acc += (double)x[((n * C + grp * cg + c) * H + ih) * W + iw] *
                                       w[((o * cg + c) * KH + kh) * KW + kw];
                            }
                    y[((n * O + o) * OH + oh) * OW + ow] = acc;
                }
}

Test(nn_layers, conv2d_with_stride_padding_dilation_and_groups) {
    kiln_ctx *cx = test_ctx();
    enum { N = 2, C = 4, H = 7, W = 6, O = 6, K = 3, G = 2 };
    float x[N * C * H * W], w[O * C * K * K], b[O];
    fill(x, N * C * H * W, 4), fill(w, O * C * K * K, 5), fill(b, O, 6);
    struct {
        int s, p, d, g;
    } cases[] = {{1, 0, 1, 1}, {2, 1, 1, 2}, {1, 2, 2, 2}, {2, 1, 2, 1}};
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        int s = cases[t].s, p = cases[t].p, d = cases[t].d, g = cases[t].g;
        int OH = (H + 2 * p - d * (K - 1) - 1) / s + 1, OW = (W + 2 * p - d * (K - 1) - 1) / s + 1;
        double ref[N * O * H * W];
        conv_ref(x, w, b, N, C, H, W, O, K, K, s, p, d, g, OH, OW, ref);
        kiln_nn_conv2d_params cp = {
            .stride = {s, s}, .padding = {p, p}, .dilation = {d, d}, .groups = g};
        kiln_tensor *y = kiln_nn_conv2d(cx, tf32(cx, KILN_SHAPE(N, C, H, W), x),
                                        tf32(cx, KILN_SHAPE(O, C / g, K, K), w),
                                        tf32(cx, KILN_SHAPE(O), b), &cp);
        expect_close(cx, y, KILN_SHAPE(N, O, OH, OW), ref, 1e-5, 1e-5);
    }
    kiln_ctx_release(cx);
}

static void pool_ref(const float *x, int N, int C, int H, int W, int k, int s, int p, bool max,
                     bool include_pad, int OH, int OW, double *y) {
    for (int nc = 0; nc < N * C; nc++)
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++) {
                double acc = max ? -INFINITY : 0;
                int count = 0;
                for (int i = 0; i < k; i++)
                    for (int j = 0; j < k; j++) {
                        int ih = oh * s - p + i, iw = ow * s - p + j;
                        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                        double v = x[(nc * H + ih) * W + iw];
                        acc = max ? fmax(acc, v) : acc + v;
                        count++;
                    }
                y[(nc * OH + oh) * OW + ow] = max ? acc : acc / (include_pad ? k * k : count);
            }
}

Test(nn_layers, max_and_avg_pooling_with_padding) {
    kiln_ctx *cx = test_ctx();
    enum { N = 2, C = 3, H = 5, W = 6 };
    float x[N * C * H * W];
    fill(x, N * C * H * W, 7);
    struct {
        int k, s, p;
    } cases[] = {{2, 2, 0}, {3, 2, 1}, {3, 1, 1}, {2, 1, 1}};
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        int k = cases[t].k, s = cases[t].s, p = cases[t].p;
        int OH = (H + 2 * p - k) / s + 1, OW = (W + 2 * p - k) / s + 1;
        double ref[N * C * (H + 2) * (W + 2)];
        kiln_tensor *xt = tf32(cx, KILN_SHAPE(N, C, H, W), x);
        kiln_nn_pool2d_params pp = {.window = {k, k}, .stride = {s, s}, .padding = {p, p}};
        pool_ref(x, N, C, H, W, k, s, p, true, false, OH, OW, ref);
        expect_close(cx, kiln_nn_max_pool2d(cx, xt, &pp), KILN_SHAPE(N, C, OH, OW), ref, 0, 0);
        pool_ref(x, N, C, H, W, k, s, p, false, false, OH, OW, ref);
        expect_close(cx, kiln_nn_avg_pool2d(cx, xt, &pp), KILN_SHAPE(N, C, OH, OW), ref, 1e-6,
                     1e-6);
        pp.count_include_pad = true;
        pool_ref(x, N, C, H, W, k, s, p, false, true, OH, OW, ref);
        expect_close(cx, kiln_nn_avg_pool2d(cx, xt, &pp), KILN_SHAPE(N, C, OH, OW), ref, 1e-6,
                     1e-6);
    }
    kiln_ctx_release(cx);
}

Test(nn_layers, activations_match_their_formulas) {
    kiln_ctx *cx = test_ctx();
    enum { n = 41 };
    float x[n];
    for (int i = 0; i < n; i++)
        x[i] = (float)(-6.0 + 0.3 * i);
    kiln_tensor *xt = tf32(cx, KILN_SHAPE(n), x);
    double relu[n], gelu_t[n], gelu_e[n], silu[n], th[n], sig[n];
    for (int i = 0; i < n; i++) {
        double v = x[i];
        relu[i] = v > 0 ? v : 0;
        gelu_t[i] = 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        gelu_e[i] = 0.5 * v * (1 + erf(v / sqrt(2)));
        sig[i] = 1 / (1 + exp(-v));
        silu[i] = v * sig[i];
        th[i] = tanh(v);
    }
    expect_close(cx, kiln_nn_relu(cx, xt), KILN_SHAPE(n), relu, 0, 0);
    expect_close(cx, kiln_nn_gelu(cx, xt, true), KILN_SHAPE(n), gelu_t, 1e-6, 1e-5);
    expect_close(cx, kiln_nn_gelu(cx, xt, false), KILN_SHAPE(n), gelu_e, 2e-6, 1e-5);
    expect_close(cx, kiln_nn_silu(cx, xt), KILN_SHAPE(n), silu, 1e-6, 1e-5);
    expect_close(cx, kiln_nn_tanh(cx, xt), KILN_SHAPE(n), th, 1e-6, 1e-5);
    expect_close(cx, kiln_nn_sigmoid(cx, xt), KILN_SHAPE(n), sig, 1e-6, 1e-5);
    kiln_ctx_release(cx);
}

Test(nn_layers, softmax_and_log_softmax_along_an_axis) {
    kiln_ctx *cx = test_ctx();
    float x[2 * 3] = {1, 2, 3, -1000, 0, 1000};
    double sm[6], lsm[6];
    for (int r = 0; r < 2; r++) {
        double m = fmax(fmax(x[r * 3], x[r * 3 + 1]), x[r * 3 + 2]), z = 0;
        for (int k = 0; k < 3; k++)
            z += exp(x[r * 3 + k] - m);
        for (int k = 0; k < 3; k++) {
            lsm[r * 3 + k] = x[r * 3 + k] - m - log(z);
            sm[r * 3 + k] = exp(lsm[r * 3 + k]);
        }
    }
    kiln_tensor *xt = tf32(cx, KILN_SHAPE(2, 3), x);
    expect_close(cx, kiln_nn_softmax(cx, xt, -1), KILN_SHAPE(2, 3), sm, 1e-7, 1e-6);
    expect_close(cx, kiln_nn_log_softmax(cx, xt, 1), KILN_SHAPE(2, 3), lsm, 1e-5, 1e-6);
    kiln_ctx_release(cx);
}

Test(nn_layers, layer_norm_normalizes_the_last_dimension) {
    kiln_ctx *cx = test_ctx();
    enum { R = 3, D = 5 };
    float x[R * D], g[D], b[D];
    fill(x, R * D, 8), fill(g, D, 9), fill(b, D, 10);
    double ref[R * D];
    for (int r = 0; r < R; r++) {
        double m = 0, v = 0;
        for (int k = 0; k < D; k++)
            m += x[r * D + k] / (double)D;
        for (int k = 0; k < D; k++)
            v += (x[r * D + k] - m) * (x[r * D + k] - m) / D;
        for (int k = 0; k < D; k++)
            ref[r * D + k] = (x[r * D + k] - m) / sqrt(v + 1e-5) * g[k] + b[k];
    }
    kiln_tensor *y =
        kiln_nn_layer_norm(cx, tf32(cx, KILN_SHAPE(R, D), x), tf32(cx, KILN_SHAPE(D), g),
                           tf32(cx, KILN_SHAPE(D), b), 1e-5);
    expect_close(cx, y, KILN_SHAPE(R, D), ref, 1e-5, 1e-5);
    kiln_ctx_release(cx);
}

Test(nn_layers, batch_norm_training_and_inference) {
    kiln_ctx *cx = test_ctx();
    enum { N = 2, C = 3, H = 2, W = 2, M = N * H * W };
    float x[N * C * H * W], g[C], b[C], rm[C] = {0.5f, -0.25f, 0}, rv[C] = {1, 2, 0.5f};
    fill(x, N * C * H * W, 11), fill(g, C, 12), fill(b, C, 13);
    double ref[N * C * H * W], new_m[C], new_v[C], inf[N * C * H * W];
    for (int c = 0; c < C; c++) {
        double m = 0, v = 0;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < H * W; i++)
                m += x[(n * C + c) * H * W + i] / (double)M;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < H * W; i++) {
                double dlt = x[(n * C + c) * H * W + i] - m;
                v += dlt * dlt / M;
            }
        for (int n = 0; n < N; n++)
            for (int i = 0; i < H * W; i++) {
                int k = (n * C + c) * H * W + i;
                ref[k] = (x[k] - m) / sqrt(v + 1e-5) * g[c] + b[c];
                inf[k] = (x[k] - rm[c]) / sqrt(rv[c] + 1e-5) * g[c] + b[c];
            }
        new_m[c] = 0.9 * rm[c] + 0.1 * m;
        new_v[c] = 0.9 * rv[c] + 0.1 * v * M / (M - 1);
    }
    kiln_tensor *xt = tf32(cx, KILN_SHAPE(N, C, H, W), x), *gt = tf32(cx, KILN_SHAPE(C), g),
                *bt = tf32(cx, KILN_SHAPE(C), b), *rmt = tf32(cx, KILN_SHAPE(C), rm),
                *rvt = tf32(cx, KILN_SHAPE(C), rv), *om, *ov;
    kiln_tensor *y = kiln_nn_batch_norm(cx, xt, gt, bt, rmt, rvt, true, 0.1, 1e-5, &om, &ov);
    expect_close(cx, y, KILN_SHAPE(N, C, H, W), ref, 1e-5, 1e-5);
    expect_close(cx, om, KILN_SHAPE(C), new_m, 1e-6, 1e-6);
    expect_close(cx, ov, KILN_SHAPE(C), new_v, 1e-6, 1e-6);
    y = kiln_nn_batch_norm(cx, xt, gt, bt, rmt, rvt, false, 0.1, 1e-5, &om, &ov);
    expect_close(cx, y, KILN_SHAPE(N, C, H, W), inf, 1e-5, 1e-5);
    cr_assert_null(om);
    cr_assert_null(ov);
    /* [N, C] input: statistics over the batch only. */
    float x2[4 * 2] = {1, 10, 2, 20, 3, 30, 4, 40};
    double r2[8];
    for (int c = 0; c < 2; c++) {
        double m = (x2[c] + x2[2 + c] + x2[4 + c] + x2[6 + c]) / 4, v = 0;
        for (int n = 0; n < 4; n++)
            v += (x2[n * 2 + c] - m) * (x2[n * 2 + c] - m) / 4;
        for (int n = 0; n < 4; n++)
            r2[n * 2 + c] = (x2[n * 2 + c] - m) / sqrt(v + 1e-5);
    }
    float z2[2] = {0, 0}, o2[2] = {1, 1};
    y = kiln_nn_batch_norm(cx, tf32(cx, KILN_SHAPE(4, 2), x2), NULL, NULL,
                           tf32(cx, KILN_SHAPE(2), z2), tf32(cx, KILN_SHAPE(2), o2), true, 0.1,
                           1e-5, NULL, NULL);
    expect_close(cx, y, KILN_SHAPE(4, 2), r2, 1e-5, 1e-5);
    kiln_ctx_release(cx);
}

static kiln_status dropout_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_nn_dropout(cx, in[0], 0.25, in[1], &out[1]);
    return kiln_ctx_status(cx);
}

Test(nn_layers, dropout_is_reproducible_eager_and_compiled) {
    kiln_ctx *cx = test_ctx();
    enum { n = 20000 };
    kiln_tensor *x = kiln_ones(cx, KILN_F32, KILN_SHAPE(n));
    kiln_tensor *key = kiln_nn_key_tensor(cx, kiln_key_from_seed(7)), *next;
    kiln_tensor *y = kiln_nn_dropout(cx, x, 0.25, key, &next);
    expect_ok(cx);
    const float *v = kiln_tensor_data(y);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        cr_assert(v[i] == 0 || fabsf(v[i] - 1 / 0.75f) < 1e-6f, "element %d = %g", i, v[i]);
        kept += v[i] != 0;
    }
    /* 15000 expected; 6 standard deviations (~61) either way. */
    cr_assert(abs(kept - 15000) < 370, "kept %d of %d", kept, n);
    /* The next key gives a different mask; the same key the same one, also compiled. */
    kiln_tensor *y2 = kiln_nn_dropout(cx, x, 0.25, next, NULL);
    cr_assert(memcmp(kiln_tensor_data(y2), v, n * sizeof(float)) != 0);
    kiln_jit *f;
    cr_assert_eq(kiln_jit_create(cx, &(kiln_region){dropout_fn, NULL}, 2, 2, NULL, &f), KILN_OK);
    kiln_tensor *out[2];
    kiln_jit_call_list(cx, f, (kiln_tensor *[]){x, key}, out);
    expect_ok(cx);
    cr_assert(memcmp(kiln_tensor_data(out[0]), v, n * sizeof(float)) == 0);
    cr_assert(memcmp(kiln_tensor_data(out[1]), kiln_tensor_data(next), 2 * sizeof(uint64_t)) == 0);
    kiln_jit_release(f);
    /* Rate 0 is the identity. */
    double ones[4] = {1, 1, 1, 1};
    expect_close(cx, kiln_nn_dropout(cx, kiln_ones(cx, KILN_F32, KILN_SHAPE(4)), 0, key, NULL),
                 KILN_SHAPE(4), ones, 0, 0);
    kiln_ctx_release(cx);
}

Test(nn_layers, flatten_and_embedding) {
    kiln_ctx *cx = test_ctx();
    float x[2 * 3 * 2];
    double ref[12];
    for (int i = 0; i < 12; i++)
        x[i] = (float)i, ref[i] = i;
    expect_close(cx, kiln_nn_flatten(cx, tf32(cx, KILN_SHAPE(2, 3, 2), x)), KILN_SHAPE(2, 6), ref,
                 0, 0);
    float table[4 * 3];
    for (int i = 0; i < 12; i++)
        table[i] = (float)(10 * (i / 3) + i % 3);
    int32_t ids[2 * 2] = {3, 0, 1, 3};
    double er[12];
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 3; k++)
            er[i * 3 + k] = 10 * ids[i] + k;
    kiln_tensor *e =
        kiln_nn_embedding(cx, tf32(cx, KILN_SHAPE(4, 3), table), ti32(cx, KILN_SHAPE(2, 2), ids));
    expect_close(cx, e, KILN_SHAPE(2, 2, 3), er, 0, 0);
    kiln_ctx_release(cx);
}

Test(nn_layers, losses_and_accuracy) {
    kiln_ctx *cx = test_ctx();
    float logits[3 * 4];
    fill(logits, 12, 14);
    logits[1 * 4 + 2] = 5; /* row 1 predicts class 2 */
    int32_t labels[3] = {1, 2, 3};
    double ce = 0;
    for (int r = 0; r < 3; r++) {
        double m = -INFINITY, z = 0;
        for (int k = 0; k < 4; k++)
            m = fmax(m, logits[r * 4 + k]);
        for (int k = 0; k < 4; k++)
            z += exp(logits[r * 4 + k] - m);
        ce += -(logits[r * 4 + labels[r]] - m - log(z)) / 3;
    }
    kiln_tensor *lt = tf32(cx, KILN_SHAPE(3, 4), logits), *yt = ti32(cx, KILN_SHAPE(3), labels);
    expect_close(cx, kiln_nn_softmax_cross_entropy(cx, lt, yt), KILN_SHAPE_SCALAR, &ce, 1e-6, 1e-6);
    float onehot[12] = {0};
    for (int r = 0; r < 3; r++)
        onehot[r * 4 + labels[r]] = 1;
    expect_close(cx,
                 kiln_nn_softmax_cross_entropy_onehot(cx, lt, tf32(cx, KILN_SHAPE(3, 4), onehot)),
                 KILN_SHAPE_SCALAR, &ce, 1e-6, 1e-6);
    double hits = 0;
    for (int r = 0; r < 3; r++) {
        int best = 0;
        for (int k = 1; k < 4; k++)
            if (logits[r * 4 + k] > logits[r * 4 + best]) best = k;
        hits += best == labels[r];
    }
    double acc = hits / 3;
    cr_assert(hits >= 1); /* row 1 */
    expect_close(cx, kiln_nn_accuracy(cx, lt, yt), KILN_SHAPE_SCALAR, &acc, 0, 1e-7);
    float p[4] = {1, 2, 3, 4}, t[4] = {1.5f, 2, 2, 0};
    double mse = (0.25 + 0 + 1 + 16) / 4;
    expect_close(cx, kiln_nn_mse(cx, tf32(cx, KILN_SHAPE(2, 2), p), tf32(cx, KILN_SHAPE(2, 2), t)),
                 KILN_SHAPE_SCALAR, &mse, 1e-7, 1e-7);
    kiln_ctx_release(cx);
}

static kiln_status ln_gelu(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_nn_gelu(cx, kiln_nn_layer_norm(cx, in[0], NULL, NULL, 1e-5), false);
    return kiln_ctx_status(cx);
}

Test(nn_layers, layers_trace_into_one_module) {
    /* The same layer code, lowered and compiled, gives the eager answer. */
    kiln_ctx *cx = test_ctx();
    float x[2 * 6];
    fill(x, 12, 15);
    kiln_tensor *xt = tf32(cx, KILN_SHAPE(2, 6), x), *eager;
    kiln_region fn = {ln_gelu, NULL};
    ln_gelu(cx, &xt, &eager, NULL);
    expect_ok(cx);
    double ref[12];
    for (int i = 0; i < 12; i++)
        ref[i] = kiln_tensor_item(cx, eager, i);
    kiln_arg_spec spec = {.dtype = KILN_F32, .shape = KILN_SHAPE(2, 6)};
    kiln_module *m = NULL;
    kiln_exe *exe = NULL;
    kiln_tensor *r = NULL;
    kiln_lower(cx, &fn, &spec, 1, 1, NULL, &m);
    kiln_compile(cx, m, NULL, &exe);
    kiln_exe_call(cx, exe, &xt, &r);
    expect_close(cx, r, KILN_SHAPE(2, 6), ref, 1e-6, 1e-6);
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}
