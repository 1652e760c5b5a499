/* SPDX-License-Identifier: Apache-2.0 */
/* Layers: dense, conv2d, pooling, activations, normalization, dropout, flatten, embedding. */
#include <math.h>
#include <stdio.h>

#include "nn_internal.h"

static bool is_float(const kiln_tensor *t) { return kiln_dtype_is_float(kiln_tensor_dtype(t)); }

/* x must be a float tensor of the given rank (-1: any rank >= min_rank). */
static bool check_float(kiln_ctx *cx, const char *fn, const char *arg, const kiln_tensor *x,
                        int32_t rank) {
    char s[96];
    if (!is_float(x)) {
        kiln__nn_fail(cx, fn, "%s has dtype %s; expected a float dtype", arg,
                      kiln_dtype_name(kiln_tensor_dtype(x)));
        return false;
    }
    if (rank >= 0 && kiln_tensor_rank(x) != rank) {
        kiln__nn_fail(cx, fn, "%s has shape %s; expected rank %d", arg,
                      kiln__nn_shape_str(x, s, sizeof s), (int)rank);
        return false;
    }
    return true;
}

static bool check_same_dtype(kiln_ctx *cx, const char *fn, const char *arg, const kiln_tensor *t,
                             const kiln_tensor *x) {
    if (kiln_tensor_dtype(t) == kiln_tensor_dtype(x)) return true;
    kiln__nn_fail(cx, fn, "%s has dtype %s; expected %s (x's)", arg,
                  kiln_dtype_name(kiln_tensor_dtype(t)), kiln_dtype_name(kiln_tensor_dtype(x)));
    return false;
}

/* t must be [n] of x's dtype. */
static bool check_vector(kiln_ctx *cx, const char *fn, const char *arg, const kiln_tensor *t,
                         const kiln_tensor *x, int64_t n, const char *what) {
    char s[96];
    if (!check_same_dtype(cx, fn, arg, t, x)) return false;
    if (kiln_tensor_rank(t) != 1 || kiln_tensor_dim(t, 0) != n) {
        kiln__nn_fail(cx, fn, "%s has shape %s; expected [%lld] (%s)", arg,
                      kiln__nn_shape_str(t, s, sizeof s), (long long)n, what);
        return false;
    }
    return true;
}

kiln_tensor *kiln_nn_dense(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *w, kiln_tensor *b) {
    static const char fn[] = "kiln_nn_dense";
    if (!cx || !kiln__nn_arg(cx, fn, "x", x) || !kiln__nn_arg(cx, fn, "w", w)) return NULL;
    char s1[96], s2[96];
    if (!check_float(cx, fn, "x", x, -1) || !check_same_dtype(cx, fn, "w", w, x)) return NULL;
    if (kiln_tensor_rank(x) < 1) return kiln__nn_fail(cx, fn, "x is rank 0; expected rank >= 1");
    int64_t in = kiln_tensor_dim(x, -1);
    if (kiln_tensor_rank(w) != 2 || kiln_tensor_dim(w, 0) != in)
        return kiln__nn_fail(cx, fn,
                             "w has shape %s; expected [%lld,N] (x %s has last dimension %lld)",
                             kiln__nn_shape_str(w, s1, sizeof s1), (long long)in,
                             kiln__nn_shape_str(x, s2, sizeof s2), (long long)in);
    if (b && !check_vector(cx, fn, "b", b, x, kiln_tensor_dim(w, 1), "w's output dimension"))
        return NULL;
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_tensor *y = kiln_matmul(cx, x, w);
    if (b) y = kiln_add(cx, y, b);
    return kiln__nn_end(cx, y);
}

static int64_t or1(int64_t v) { return v == 0 ? 1 : v; }

kiln_tensor *kiln_nn_conv2d(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *w, kiln_tensor *b,
                            const kiln_nn_conv2d_params *params) {
    static const char fn[] = "kiln_nn_conv2d";
    if (!cx || !kiln__nn_arg(cx, fn, "x", x) || !kiln__nn_arg(cx, fn, "w", w)) return NULL;
    kiln_nn_conv2d_params p = params ? *params : (kiln_nn_conv2d_params){0};
    char s1[96], s2[96];
    if (!check_float(cx, fn, "x", x, 4) || !check_same_dtype(cx, fn, "w", w, x)) return NULL;
    if (kiln_tensor_rank(w) != 4)
        return kiln__nn_fail(cx, fn, "w has shape %s; expected rank 4 [C_out, C_in/groups, KH, KW]",
                             kiln__nn_shape_str(w, s1, sizeof s1));
    int64_t groups = or1(p.groups);
    for (int i = 0; i < 2; i++) {
        if (p.stride[i] < 0 || p.dilation[i] < 0 || p.padding[i] < 0)
            return kiln__nn_fail(
                cx, fn,
                "params: stride[%d] = %lld, dilation[%d] = %lld, padding[%d] = "
                "%lld; expected stride and dilation >= 0 (0 means 1), padding >= 0",
                i, (long long)p.stride[i], i, (long long)p.dilation[i], i, (long long)p.padding[i]);
    }
    if (groups < 0)
        return kiln__nn_fail(cx, fn, "params: groups = %lld; expected >= 0", (long long)groups);
    int64_t c_in = kiln_tensor_dim(x, 1), c_out = kiln_tensor_dim(w, 0);
    if (c_in % groups != 0 || c_out % groups != 0 || kiln_tensor_dim(w, 1) * groups != c_in)
        return kiln__nn_fail(cx, fn,
                             "w has shape %s; expected [C_out, %lld / %lld groups, KH, KW] with "
                             "C_out divisible by the groups (x has shape %s)",
                             kiln__nn_shape_str(w, s1, sizeof s1), (long long)c_in,
                             (long long)groups, kiln__nn_shape_str(x, s2, sizeof s2));
    for (int i = 0; i < 2; i++) {
        int64_t padded = kiln_tensor_dim(x, 2 + i) + 2 * p.padding[i];
        int64_t span = or1(p.dilation[i]) * (kiln_tensor_dim(w, 2 + i) - 1) + 1;
        if (span > padded)
            return kiln__nn_fail(cx, fn,
                                 "the kernel spans %lld elements along spatial dimension %d but "
                                 "the padded input has %lld (x %s, w %s)",
                                 (long long)span, i, (long long)padded,
                                 kiln__nn_shape_str(x, s1, sizeof s1),
                                 kiln__nn_shape_str(w, s2, sizeof s2));
    }
    if (b && !check_vector(cx, fn, "b", b, x, c_out, "w's C_out")) return NULL;
    kiln_conv_params cp = kiln_conv_params_nchw(2);
    cp.window_strides = KILN_DIMS(or1(p.stride[0]), or1(p.stride[1]));
    cp.padding_low = cp.padding_high = KILN_DIMS(p.padding[0], p.padding[1]);
    cp.rhs_dilation = KILN_DIMS(or1(p.dilation[0]), or1(p.dilation[1]));
    cp.feature_group_count = groups;
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_tensor *y = kiln_convolution(cx, x, w, &cp, KILN_DTYPE_COUNT);
    if (b) y = kiln_add(cx, y, kiln_reshape(cx, b, KILN_SHAPE(c_out, 1, 1)));
    return kiln__nn_end(cx, y);
}

/* Validates pooling parameters and fills the reduce_window geometry. */
static bool pool_params(kiln_ctx *cx, const char *fn, kiln_tensor *x,
                        const kiln_nn_pool2d_params *p, kiln_window_params *wp) {
    char s[96];
    if (!kiln__nn_arg(cx, fn, "x", x)) return false;
    if (!p) {
        kiln__nn_fail(cx, fn, "params is NULL");
        return false;
    }
    if (!check_float(cx, fn, "x", x, 4)) return false;
    int64_t st[2];
    for (int i = 0; i < 2; i++) {
        st[i] = p->stride[i] == 0 ? p->window[i] : p->stride[i];
        if (p->window[i] < 1 || st[i] < 1 || p->padding[i] < 0 || p->padding[i] >= p->window[i]) {
            kiln__nn_fail(
                cx, fn,
                "params: window[%d] = %lld, stride[%d] = %lld, padding[%d] = %lld; "
                "expected window >= 1, stride >= 0 (0: the window), 0 <= padding < window",
                i, (long long)p->window[i], i, (long long)p->stride[i], i,
                (long long)p->padding[i]);
            return false;
        }
        if (kiln_tensor_dim(x, 2 + i) + 2 * p->padding[i] < p->window[i]) {
            kiln__nn_fail(cx, fn,
                          "the window (%lld) is larger than padded spatial dimension %d of x %s",
                          (long long)p->window[i], i, kiln__nn_shape_str(x, s, sizeof s));
            return false;
        }
    }
    *wp = (kiln_window_params){
        .window_dimensions = KILN_DIMS(1, 1, p->window[0], p->window[1]),
        .window_strides = KILN_DIMS(1, 1, st[0], st[1]),
        .padding_low = KILN_DIMS(0, 0, p->padding[0], p->padding[1]),
        .padding_high = KILN_DIMS(0, 0, p->padding[0], p->padding[1]),
    };
    return true;
}

kiln_tensor *kiln_nn_max_pool2d(kiln_ctx *cx, kiln_tensor *x, const kiln_nn_pool2d_params *params) {
    static const char fn[] = "kiln_nn_max_pool2d";
    kiln_window_params wp;
    if (!cx || !pool_params(cx, fn, x, params, &wp)) return NULL;
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_tensor *init = kiln__nn_s(cx, x, -INFINITY), *y = NULL;
    kiln_reduce_window(cx, &x, &init, 1, &wp, kiln_region_maximum(), &y);
    return kiln__nn_end(cx, y);
}

kiln_tensor *kiln_nn_avg_pool2d(kiln_ctx *cx, kiln_tensor *x, const kiln_nn_pool2d_params *params) {
    static const char fn[] = "kiln_nn_avg_pool2d";
    kiln_window_params wp;
    if (!cx || !pool_params(cx, fn, x, params, &wp)) return NULL;
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_tensor *init = kiln__nn_s(cx, x, 0), *sum = NULL, *y = NULL;
    kiln_reduce_window(cx, &x, &init, 1, &wp, kiln_region_add(), &sum);
    bool padded = params->padding[0] > 0 || params->padding[1] > 0;
    if (params->count_include_pad || !padded) {
        y = kiln_divide(cx, sum,
                        kiln__nn_s(cx, x, (double)(params->window[0] * params->window[1])));
    } else {
        /* The number of real elements per window: the same pooling over ones. */
        kiln_tensor *ones =
            kiln_ones(cx, kiln_tensor_dtype(x),
                      KILN_SHAPE(1, 1, kiln_tensor_dim(x, 2), kiln_tensor_dim(x, 3)));
        kiln_tensor *count = NULL;
        kiln_reduce_window(cx, &ones, &init, 1, &wp, kiln_region_add(), &count);
        y = kiln_divide(cx, sum, count);
    }
    return kiln__nn_end(cx, y);
}

/* The unary activations share their checks. */
static kiln_tensor *unary(kiln_ctx *cx, const char *fn, kiln_tensor *x,
                          kiln_tensor *(*op)(kiln_ctx *, kiln_tensor *)) {
    if (!cx || !kiln__nn_arg(cx, fn, "x", x) || !check_float(cx, fn, "x", x, -1)) return NULL;
    return op(cx, x);
}

static kiln_tensor *relu_op(kiln_ctx *cx, kiln_tensor *x) {
    if (!kiln__nn_begin(cx)) return NULL;
    return kiln__nn_end(cx, kiln_maximum(cx, x, kiln__nn_s(cx, x, 0)));
}

static kiln_tensor *silu_op(kiln_ctx *cx, kiln_tensor *x) {
    if (!kiln__nn_begin(cx)) return NULL;
    return kiln__nn_end(cx, kiln_multiply(cx, x, kiln_logistic(cx, x)));
}

kiln_tensor *kiln_nn_relu(kiln_ctx *cx, kiln_tensor *x) {
    return unary(cx, "kiln_nn_relu", x, relu_op);
}
kiln_tensor *kiln_nn_silu(kiln_ctx *cx, kiln_tensor *x) {
    return unary(cx, "kiln_nn_silu", x, silu_op);
}
kiln_tensor *kiln_nn_tanh(kiln_ctx *cx, kiln_tensor *x) {
    return unary(cx, "kiln_nn_tanh", x, kiln_tanh);
}
kiln_tensor *kiln_nn_sigmoid(kiln_ctx *cx, kiln_tensor *x) {
    return unary(cx, "kiln_nn_sigmoid", x, kiln_logistic);
}

/* erf(z) by Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7), from differentiable ops. */
static kiln_tensor *erf_as(kiln_ctx *cx, kiln_tensor *z) {
    static const double a[5] = {0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429};
    kiln_tensor *az = kiln_abs(cx, z);
    kiln_tensor *t = kiln_divide(
        cx, kiln__nn_s(cx, z, 1),
        kiln_add(cx, kiln__nn_s(cx, z, 1), kiln_multiply(cx, kiln__nn_s(cx, z, 0.3275911), az)));
    kiln_tensor *poly = kiln__nn_s(cx, z, a[4]);
    for (int i = 3; i >= 0; i--)
        poly = kiln_add(cx, kiln_multiply(cx, poly, t), kiln__nn_s(cx, z, a[i]));
    poly = kiln_multiply(cx, poly, t);
    kiln_tensor *e = kiln_exponential(cx, kiln_negate(cx, kiln_multiply(cx, z, z)));
    kiln_tensor *y = kiln_subtract(cx, kiln__nn_s(cx, z, 1), kiln_multiply(cx, poly, e));
    return kiln_multiply(cx, kiln_sign(cx, z), y);
}

kiln_tensor *kiln_nn_gelu(kiln_ctx *cx, kiln_tensor *x, bool approximate) {
    static const char fn[] = "kiln_nn_gelu";
    if (!cx || !kiln__nn_arg(cx, fn, "x", x) || !check_float(cx, fn, "x", x, -1)) return NULL;
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_tensor *inner;
    if (approximate) {
        kiln_tensor *x3 = kiln_multiply(cx, x, kiln_multiply(cx, x, x));
        kiln_tensor *u =
            kiln_multiply(cx, kiln__nn_s(cx, x, 0.7978845608028654),
                          kiln_add(cx, x, kiln_multiply(cx, kiln__nn_s(cx, x, 0.044715), x3)));
        inner = kiln_tanh(cx, u);
    } else {
        inner = erf_as(cx, kiln_multiply(cx, x, kiln__nn_s(cx, x, 0.7071067811865476)));
    }
    kiln_tensor *y = kiln_multiply(cx, kiln_multiply(cx, kiln__nn_s(cx, x, 0.5), x),
                                   kiln_add(cx, kiln__nn_s(cx, x, 1), inner));
    return kiln__nn_end(cx, y);
}

kiln_tensor *kiln_nn_softmax(kiln_ctx *cx, kiln_tensor *x, int64_t axis) {
    static const char fn[] = "kiln_nn_softmax";
    if (!cx || !kiln__nn_arg(cx, fn, "x", x) || !check_float(cx, fn, "x", x, -1)) return NULL;
    return kiln_softmax(cx, x, axis);
}

kiln_tensor *kiln_nn_log_softmax(kiln_ctx *cx, kiln_tensor *x, int64_t axis) {
    static const char fn[] = "kiln_nn_log_softmax";
    if (!cx || !kiln__nn_arg(cx, fn, "x", x) || !check_float(cx, fn, "x", x, -1)) return NULL;
    return kiln_log_softmax(cx, x, axis);
}

kiln_tensor *kiln_nn_layer_norm(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *gamma, kiln_tensor *beta,
                                double eps) {
    static const char fn[] = "kiln_nn_layer_norm";
    if (!cx || !kiln__nn_arg(cx, fn, "x", x) || !check_float(cx, fn, "x", x, -1)) return NULL;
    if (kiln_tensor_rank(x) < 1) return kiln__nn_fail(cx, fn, "x is rank 0; expected rank >= 1");
    int64_t d = kiln_tensor_dim(x, -1);
    if (gamma && !check_vector(cx, fn, "gamma", gamma, x, d, "x's last dimension")) return NULL;
    if (beta && !check_vector(cx, fn, "beta", beta, x, d, "x's last dimension")) return NULL;
    if (!(eps > 0) || !isfinite(eps))
        return kiln__nn_fail(cx, fn, "eps = %g; expected a finite value > 0", eps);
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_tensor *mean = kiln_mean(cx, x, KILN_DIMS(-1), true);
    kiln_tensor *xc = kiln_subtract(cx, x, mean);
    kiln_tensor *var = kiln_mean(cx, kiln_multiply(cx, xc, xc), KILN_DIMS(-1), true);
    kiln_tensor *y =
        kiln_multiply(cx, xc, kiln_rsqrt(cx, kiln_add(cx, var, kiln__nn_s(cx, x, eps))));
    if (gamma) y = kiln_multiply(cx, y, gamma);
    if (beta) y = kiln_add(cx, y, beta);
    return kiln__nn_end(cx, y);
}

/* [C] -> a shape that broadcasts along dimension 1 of a rank-r tensor. */
static kiln_tensor *per_channel(kiln_ctx *cx, kiln_tensor *v, int32_t rank) {
    kiln_shape s = {.rank = rank - 1};
    s.dims[0] = kiln_tensor_dim(v, 0);
    for (int32_t i = 1; i < rank - 1; i++)
        s.dims[i] = 1;
    return kiln_reshape(cx, v, s);
}

kiln_tensor *kiln_nn_batch_norm(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *gamma, kiln_tensor *beta,
                                kiln_tensor *running_mean, kiln_tensor *running_var, bool training,
                                double momentum, double eps, kiln_tensor **out_running_mean,
                                kiln_tensor **out_running_var) {
    static const char fn[] = "kiln_nn_batch_norm";
    if (out_running_mean) *out_running_mean = NULL;
    if (out_running_var) *out_running_var = NULL;
    if (!cx || !kiln__nn_arg(cx, fn, "x", x) || !check_float(cx, fn, "x", x, -1)) return NULL;
    char s[96];
    int32_t r = kiln_tensor_rank(x);
    if (r < 2)
        return kiln__nn_fail(cx, fn, "x has shape %s; expected [N, C, ...] (rank >= 2)",
                             kiln__nn_shape_str(x, s, sizeof s));
    int64_t c = kiln_tensor_dim(x, 1);
    if (gamma && !check_vector(cx, fn, "gamma", gamma, x, c, "x's channels")) return NULL;
    if (beta && !check_vector(cx, fn, "beta", beta, x, c, "x's channels")) return NULL;
    if (!kiln__nn_arg(cx, fn, "running_mean", running_mean) ||
        !kiln__nn_arg(cx, fn, "running_var", running_var))
        return NULL;
    if (!check_vector(cx, fn, "running_mean", running_mean, x, c, "x's channels") ||
        !check_vector(cx, fn, "running_var", running_var, x, c, "x's channels"))
        return NULL;
    if (!(momentum >= 0 && momentum <= 1))
        return kiln__nn_fail(cx, fn, "momentum = %g; expected 0 <= momentum <= 1", momentum);
    if (!(eps > 0) || !isfinite(eps))
        return kiln__nn_fail(cx, fn, "eps = %g; expected a finite value > 0", eps);
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_tensor *mean, *var, *new_mean = NULL, *new_var = NULL;
    if (training) {
        kiln_dims axes = {.count = r - 1};
        axes.v[0] = 0;
        for (int32_t i = 2; i < r; i++)
            axes.v[i - 1] = i;
        int64_t n = kiln_tensor_numel(x) / (c > 0 ? c : 1);
        kiln_tensor *m = kiln_mean(cx, x, axes, true);
        kiln_tensor *xc = kiln_subtract(cx, x, m);
        kiln_tensor *v = kiln_mean(cx, kiln_multiply(cx, xc, xc), axes, true);
        mean = m;
        var = v;
        kiln_tensor *m_c = kiln_reshape(cx, m, KILN_SHAPE(c));
        kiln_tensor *v_c = kiln_reshape(cx, v, KILN_SHAPE(c));
        if (n > 1) v_c = kiln_multiply(cx, v_c, kiln__nn_s(cx, x, (double)n / (double)(n - 1)));
        kiln_tensor *keep = kiln__nn_s(cx, x, 1 - momentum), *mom = kiln__nn_s(cx, x, momentum);
        new_mean = kiln_add(cx, kiln_multiply(cx, keep, running_mean), kiln_multiply(cx, mom, m_c));
        new_var = kiln_add(cx, kiln_multiply(cx, keep, running_var), kiln_multiply(cx, mom, v_c));
    } else {
        mean = per_channel(cx, running_mean, r);
        var = per_channel(cx, running_var, r);
    }
    kiln_tensor *y = kiln_multiply(cx, kiln_subtract(cx, x, mean),
                                   kiln_rsqrt(cx, kiln_add(cx, var, kiln__nn_s(cx, x, eps))));
    if (gamma) y = kiln_multiply(cx, y, per_channel(cx, gamma, r));
    if (beta) y = kiln_add(cx, y, per_channel(cx, beta, r));
    if (!out_running_mean) new_mean = NULL;
    if (!out_running_var) new_var = NULL;
    kiln__nn_end_n(cx, (kiln_tensor * *const[]){&y, &new_mean, &new_var}, 3);
    if (out_running_mean) *out_running_mean = new_mean;
    if (out_running_var) *out_running_var = new_var;
    return y;
}

kiln_tensor *kiln_nn_key_tensor(kiln_ctx *cx, kiln_key key) {
    if (!cx) return NULL;
    uint64_t state[2] = {(uint64_t)key.words[0] | ((uint64_t)key.words[1] << 32), 0};
    return kiln_tensor_from_host(cx, KILN_U64, KILN_SHAPE(2), state, sizeof state);
}

kiln_tensor *kiln_nn_dropout(kiln_ctx *cx, kiln_tensor *x, double rate, kiln_tensor *key,
                             kiln_tensor **out_next_key) {
    static const char fn[] = "kiln_nn_dropout";
    if (out_next_key) *out_next_key = NULL;
    if (!cx || !kiln__nn_arg(cx, fn, "x", x) || !kiln__nn_arg(cx, fn, "key", key)) return NULL;
    if (!check_float(cx, fn, "x", x, -1)) return NULL;
    char s[96];
    if (kiln_tensor_dtype(key) != KILN_U64 || kiln_tensor_rank(key) != 1 ||
        (kiln_tensor_dim(key, 0) != 2 && kiln_tensor_dim(key, 0) != 3))
        return kiln__nn_fail(cx, fn, "key is %s%s; expected ui64[2] (from kiln_nn_key_tensor)",
                             kiln_dtype_name(kiln_tensor_dtype(key)),
                             kiln__nn_shape_str(key, s, sizeof s));
    if (!(rate >= 0 && rate < 1))
        return kiln__nn_fail(cx, fn, "rate = %g; expected 0 <= rate < 1", rate);
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_tensor *y, *next = NULL;
    if (rate == 0) {
        /* x * 1 and key + 0 copy the values exactly (x + 0 would turn -0 into +0). */
        y = kiln_multiply(cx, x, kiln__nn_s(cx, x, 1));
        next = kiln_add(cx, key, kiln_scalar_like(cx, key, 0));
    } else {
        kiln_tensor *bits = kiln_rng_bit_generator(cx, key, KILN_RNG_PHILOX, KILN_U32,
                                                   *kiln_tensor_shape(x), &next);
        double thr = floor((1 - rate) * 4294967296.0);
        if (thr > 4294967295.0) thr = 4294967295.0;
        kiln_tensor *keep =
            kiln_compare(cx, bits, kiln_scalar(cx, thr, KILN_U32), KILN_CMP_LT, KILN_CMP_UNSIGNED);
        y = kiln_select(cx, keep, kiln_multiply(cx, x, kiln__nn_s(cx, x, 1 / (1 - rate))),
                        kiln__nn_s(cx, x, 0));
    }
    if (!out_next_key) next = NULL;
    kiln__nn_end_n(cx, (kiln_tensor * *const[]){&y, &next}, 2);
    if (out_next_key) *out_next_key = next;
    return y;
}

kiln_tensor *kiln_nn_flatten(kiln_ctx *cx, kiln_tensor *x) {
    static const char fn[] = "kiln_nn_flatten";
    if (!cx || !kiln__nn_arg(cx, fn, "x", x)) return NULL;
    int32_t r = kiln_tensor_rank(x);
    if (r < 1) return kiln__nn_fail(cx, fn, "x is rank 0; expected rank >= 1");
    int64_t rest = 1;
    for (int32_t i = 1; i < r; i++)
        rest *= kiln_tensor_dim(x, i);
    return kiln_reshape(cx, x, KILN_SHAPE(kiln_tensor_dim(x, 0), rest));
}

kiln_tensor *kiln_nn_embedding(kiln_ctx *cx, kiln_tensor *table, kiln_tensor *ids) {
    static const char fn[] = "kiln_nn_embedding";
    if (!cx || !kiln__nn_arg(cx, fn, "table", table) || !kiln__nn_arg(cx, fn, "ids", ids))
        return NULL;
    char s[96];
    if (kiln_tensor_rank(table) != 2)
        return kiln__nn_fail(cx, fn, "table has shape %s; expected [V, D]",
                             kiln__nn_shape_str(table, s, sizeof s));
    if (!kiln_dtype_is_integer(kiln_tensor_dtype(ids)) || kiln_tensor_dtype(ids) == KILN_BOOL)
        return kiln__nn_fail(cx, fn, "ids has dtype %s; expected an integer dtype",
                             kiln_dtype_name(kiln_tensor_dtype(ids)));
    /* kiln_take counts negative ids from the end; an embedding clamps them to row 0. */
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_tensor *y = NULL;
    if (kiln_dtype_is_signed(kiln_tensor_dtype(ids)))
        ids = kiln_maximum(cx, ids, kiln_scalar_like(cx, ids, 0));
    y = kiln_take(cx, table, ids, 0);
    return kiln__nn_end(cx, y);
}
