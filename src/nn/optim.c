/* SPDX-License-Identifier: Apache-2.0 */
/* Optimizers over trees: SGD (momentum, Nesterov, weight decay), Adam, AdamW. */
#include <math.h>
#include <string.h>

#include "nn_internal.h"

kiln_nn_optimizer kiln_nn_sgd(double learning_rate, double momentum, double weight_decay) {
    return (kiln_nn_optimizer){.kind = KILN_NN_SGD,
                               .learning_rate = learning_rate,
                               .momentum = momentum,
                               .weight_decay = weight_decay};
}

kiln_nn_optimizer kiln_nn_adam(double learning_rate) {
    return (kiln_nn_optimizer){.kind = KILN_NN_ADAM,
                               .learning_rate = learning_rate,
                               .beta1 = 0.9,
                               .beta2 = 0.999,
                               .eps = 1e-8};
}

kiln_nn_optimizer kiln_nn_adamw(double learning_rate, double weight_decay) {
    kiln_nn_optimizer o = kiln_nn_adam(learning_rate);
    o.kind = KILN_NN_ADAMW;
    o.weight_decay = weight_decay;
    return o;
}

static bool check_opt(kiln_ctx *cx, const char *fn, const kiln_nn_optimizer *o) {
    if (!o) {
        kiln__nn_fail(cx, fn, "opt is NULL");
        return false;
    }
    const char *bad = NULL;
    double v = 0;
    if (o->kind != KILN_NN_SGD && o->kind != KILN_NN_ADAM && o->kind != KILN_NN_ADAMW) {
        kiln__nn_fail(cx, fn, "opt->kind = %d is not a kiln_nn_optimizer_kind", (int)o->kind);
        return false;
    }
    if (o->learning_rate_tensor) {
        kiln_tensor *t = o->learning_rate_tensor;
        if (!kiln_dtype_is_float(kiln_tensor_dtype(t)) || kiln_tensor_rank(t) != 0) {
            kiln__nn_fail(cx, fn,
                          "opt->learning_rate_tensor is %s with rank %d; expected a "
                          "rank-0 float tensor",
                          kiln_dtype_name(kiln_tensor_dtype(t)), (int)kiln_tensor_rank(t));
            return false;
        }
    }
    if (!o->learning_rate_tensor && !(o->learning_rate > 0 && isfinite(o->learning_rate)))
        bad = "learning_rate", v = o->learning_rate;
    else if (!(o->weight_decay >= 0 && isfinite(o->weight_decay)))
        bad = "weight_decay", v = o->weight_decay;
    else if (o->kind == KILN_NN_SGD && !(o->momentum >= 0 && o->momentum < 1))
        bad = "momentum", v = o->momentum;
    else if (o->kind != KILN_NN_SGD && !(o->beta1 >= 0 && o->beta1 < 1))
        bad = "beta1", v = o->beta1;
    else if (o->kind != KILN_NN_SGD && !(o->beta2 >= 0 && o->beta2 < 1))
        bad = "beta2", v = o->beta2;
    else if (o->kind != KILN_NN_SGD && !(o->eps > 0 && isfinite(o->eps)))
        bad = "eps", v = o->eps;
    if (bad) {
        kiln__nn_fail(cx, fn, "opt->%s = %g is out of range (see kiln_nn_optimizer)", bad, v);
        return false;
    }
    return true;
}

static bool uses_mu(const kiln_nn_optimizer *o) {
    return o->kind != KILN_NN_SGD || o->momentum > 0;
}
static bool uses_nu(const kiln_nn_optimizer *o) { return o->kind != KILN_NN_SGD; }

/* Checks def and the slot pointers the optimizer needs. */
static bool check_tree(kiln_ctx *cx, const char *fn, const kiln_nn_optimizer *o,
                       const kiln_tree_def *def, const void *params, const void *mu, const void *nu,
                       const char *mu_name, const char *nu_name) {
    if (!def || !params) {
        kiln__nn_fail(cx, fn, "%s is NULL", def ? "params" : "params_def");
        return false;
    }
    if (kiln_tree_check(cx, def) != KILN_OK) return false;
    if (uses_mu(o) && !mu) {
        kiln__nn_fail(cx, fn, "%s is NULL; this optimizer keeps a first-moment/momentum slot",
                      mu_name);
        return false;
    }
    if (uses_nu(o) && !nu) {
        kiln__nn_fail(cx, fn, "%s is NULL; Adam and AdamW keep a second-moment slot", nu_name);
        return false;
    }
    return true;
}

kiln_status kiln_nn_optimizer_init(kiln_ctx *cx, const kiln_nn_optimizer *opt,
                                   const kiln_tree_def *params_def, const void *params,
                                   kiln_tensor **out_step, void *out_mu, void *out_nu) {
    static const char fn[] = "kiln_nn_optimizer_init";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    if (!check_opt(cx, fn, opt) ||
        !check_tree(cx, fn, opt, params_def, params, out_mu, out_nu, "out_mu", "out_nu"))
        return kiln_ctx_status(cx);
    if (!out_step) return kiln__nn_fail(cx, fn, "out_step is NULL"), kiln_ctx_status(cx);
    int32_t n = kiln_tree_leaf_count(params_def);
    size_t bytes = (size_t)n * sizeof(kiln_tensor *);
    kiln_tensor **leaves = kiln__nn_alloc(cx, fn, bytes);
    if (!leaves) return kiln_ctx_status(cx);
    if (kiln_tree_flatten(cx, params_def, params, leaves, n, NULL, 0) == KILN_OK) {
        kiln_tensor *step = kiln_zeros(cx, KILN_I32, KILN_SHAPE_SCALAR);
        for (int32_t i = 0; i < n; i++)
            leaves[i] = kiln_zeros(cx, kiln_tensor_dtype(leaves[i]), *kiln_tensor_shape(leaves[i]));
        if (kiln_ctx_status(cx) == KILN_OK) {
            *out_step = step;
            if (uses_mu(opt)) {
                memcpy(out_mu, params, params_def->size);
                kiln_tree_unflatten(cx, params_def, leaves, n, NULL, 0, out_mu);
            }
            if (uses_nu(opt)) {
                for (int32_t i = 0; i < n; i++)
                    leaves[i] =
                        kiln_zeros(cx, kiln_tensor_dtype(leaves[i]), *kiln_tensor_shape(leaves[i]));
                memcpy(out_nu, params, params_def->size);
                kiln_tree_unflatten(cx, params_def, leaves, n, NULL, 0, out_nu);
            }
        }
    }
    kiln__nn_free(cx, leaves, bytes);
    return kiln_ctx_status(cx);
}

/* Adam's bias corrections 1 - b1^t and 1 - b2^t, made once per dtype rather than per leaf. */
typedef struct bias_corr {
    kiln_dtype dtype;
    kiln_tensor *bc1, *bc2;
} bias_corr;

/* The update of one leaf; writes p', mu', nu' (those used). */
static void update_leaf(kiln_ctx *cx, const kiln_nn_optimizer *o, kiln_tensor *p, kiln_tensor *g,
                        kiln_tensor *mu, kiln_tensor *nu, kiln_tensor *t, bias_corr *bc,
                        kiln_tensor **np, kiln_tensor **nmu, kiln_tensor **nnu) {
#define S(v) kiln_scalar_like(cx, p, (v))
    kiln_tensor *lr = o->learning_rate_tensor
                          ? kiln_convert(cx, o->learning_rate_tensor, kiln_tensor_dtype(p))
                          : S(o->learning_rate);
    if (o->weight_decay > 0 && o->kind != KILN_NN_ADAMW)
        g = kiln_add(cx, g, kiln_multiply(cx, S(o->weight_decay), p));
    if (o->kind == KILN_NN_SGD) {
        kiln_tensor *d = g;
        if (o->momentum > 0) {
            *nmu = kiln_add(cx, kiln_multiply(cx, S(o->momentum), mu), g);
            d = o->nesterov ? kiln_add(cx, g, kiln_multiply(cx, S(o->momentum), *nmu)) : *nmu;
        }
        *np = kiln_subtract(cx, p, kiln_multiply(cx, lr, d));
        return;
    }
    if (o->kind == KILN_NN_ADAMW && o->weight_decay > 0)
        p = kiln_multiply(cx, p,
                          kiln_subtract(cx, S(1), kiln_multiply(cx, lr, S(o->weight_decay))));
    *nmu = kiln_add(cx, kiln_multiply(cx, S(o->beta1), mu), kiln_multiply(cx, S(1 - o->beta1), g));
    *nnu = kiln_add(cx, kiln_multiply(cx, S(o->beta2), nu),
                    kiln_multiply(cx, S(1 - o->beta2), kiln_multiply(cx, g, g)));
    if (bc->dtype != kiln_tensor_dtype(p) || !bc->bc1) {
        kiln_tensor *tf = kiln_convert(cx, t, kiln_tensor_dtype(p));
        bc->dtype = kiln_tensor_dtype(p);
        bc->bc1 = kiln_subtract(cx, S(1), kiln_power(cx, S(o->beta1), tf));
        bc->bc2 = kiln_subtract(cx, S(1), kiln_power(cx, S(o->beta2), tf));
    }
    kiln_tensor *mhat = kiln_divide(cx, *nmu, bc->bc1);
    kiln_tensor *vhat = kiln_divide(cx, *nnu, bc->bc2);
    kiln_tensor *upd = kiln_divide(cx, mhat, kiln_add(cx, kiln_sqrt(cx, vhat), S(o->eps)));
    *np = kiln_subtract(cx, p, kiln_multiply(cx, lr, upd));
#undef S
}

kiln_status kiln_nn_optimizer_update(kiln_ctx *cx, const kiln_nn_optimizer *opt,
                                     const kiln_tree_def *params_def, const void *params,
                                     const void *grads, kiln_tensor *step, const void *mu,
                                     const void *nu, void *out_params, kiln_tensor **out_step,
                                     void *out_mu, void *out_nu) {
    static const char fn[] = "kiln_nn_optimizer_update";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    if (!check_opt(cx, fn, opt) ||
        !check_tree(cx, fn, opt, params_def, params, mu, nu, "mu", "nu") ||
        !check_tree(cx, fn, opt, params_def, params, out_mu, out_nu, "out_mu", "out_nu"))
        return kiln_ctx_status(cx);
    if (!kiln__nn_not_null(cx, fn, 3, (const void *[]){grads, out_params, out_step},
                           (const char *[]){"grads", "out_params", "out_step"}))
        return kiln_ctx_status(cx);
    if (!kiln__nn_arg(cx, fn, "step", step)) return kiln_ctx_status(cx);
    char s1[96], s2[96], path[KILN_TREE_PATH_MAX];
    if (!kiln_dtype_is_integer(kiln_tensor_dtype(step)) || kiln_tensor_rank(step) != 0)
        return kiln__nn_fail(cx, fn, "step is %s%s; expected a rank-0 integer (i32)",
                             kiln_dtype_name(kiln_tensor_dtype(step)),
                             kiln__nn_shape_str(step, s1, sizeof s1)),
               kiln_ctx_status(cx);
    int32_t n = kiln_tree_leaf_count(params_def);
    size_t bytes = (size_t)n * sizeof(kiln_tensor *);
    /* Inputs: p, g, mu, nu; outputs: p', mu', nu'. Everything is read before anything is
     * written, so outputs may alias inputs. */
    kiln_tensor **buf = kiln__nn_alloc(cx, fn, 7 * bytes);
    if (!buf) return kiln_ctx_status(cx);
    memset(buf, 0, 7 * bytes);
    kiln_tensor **p = buf, **g = buf + n, **m = buf + 2 * n, **v = buf + 3 * n, **np = buf + 4 * n,
                **nm = buf + 5 * n, **nv = buf + 6 * n;
    kiln_tensor ***gs = NULL;
    int32_t ng = 0;
    bool ok = kiln_tree_flatten(cx, params_def, params, p, n, NULL, 0) == KILN_OK &&
              (!uses_mu(opt) || kiln_tree_flatten(cx, params_def, mu, m, n, NULL, 0) == KILN_OK) &&
              (!uses_nu(opt) || kiln_tree_flatten(cx, params_def, nu, v, n, NULL, 0) == KILN_OK) &&
              kiln__nn_leaf_slots(cx, fn, params_def, (void *)(uintptr_t)grads, &gs, &ng);
    for (int32_t i = 0; ok && i < n; i++) {
        g[i] = *gs[i];
        kiln_tensor *const checks[3] = {g[i], uses_mu(opt) ? m[i] : NULL,
                                        uses_nu(opt) ? v[i] : NULL};
        static const char *const what[3] = {"grads", "mu", "nu"};
        for (int k = 0; k < 3 && ok; k++) {
            if (!checks[k]) continue;
            if (kiln_tensor_dtype(checks[k]) != kiln_tensor_dtype(p[i]) ||
                !kiln_shape_equal(kiln_tensor_shape(checks[k]), kiln_tensor_shape(p[i]))) {
                kiln_tree_leaf_path(params_def, i, path, sizeof path);
                kiln__nn_fail(cx, fn, "%s leaf '%s' is %s%s; expected the parameter's %s%s",
                              what[k], path, kiln_dtype_name(kiln_tensor_dtype(checks[k])),
                              kiln__nn_shape_str(checks[k], s1, sizeof s1),
                              kiln_dtype_name(kiln_tensor_dtype(p[i])),
                              kiln__nn_shape_str(p[i], s2, sizeof s2));
                ok = false;
            }
        }
        if (ok && !kiln_dtype_is_float(kiln_tensor_dtype(p[i])) && g[i]) {
            kiln_tree_leaf_path(params_def, i, path, sizeof path);
            kiln__nn_fail(cx, fn, "params leaf '%s' has dtype %s; expected a float dtype", path,
                          kiln_dtype_name(kiln_tensor_dtype(p[i])));
            ok = false;
        }
    }
    kiln__nn_free(cx, gs, (size_t)ng * sizeof *gs);
    kiln_tensor *t = NULL;
    if (ok && kiln__nn_begin(cx)) {
        t = kiln_add(cx, step, kiln_scalar_like(cx, step, 1));
        bias_corr bc = {.dtype = KILN_DTYPE_COUNT};
        for (int32_t i = 0; i < n; i++) {
            if (!g[i]) {
                np[i] = p[i];
                nm[i] = m[i];
                nv[i] = v[i];
                continue;
            }
            update_leaf(cx, opt, p[i], g[i], m[i], v[i], t, &bc, &np[i], &nm[i], &nv[i]);
        }
        /* Results made here leave the scope; unchanged leaves are the caller's already. */
        if (kiln_ctx_status(cx) == KILN_OK) {
            t = kiln_scope_escape(cx, t);
            for (int32_t i = 0; i < n; i++) {
                if (!g[i]) continue;
                np[i] = kiln_scope_escape(cx, np[i]);
                if (nm[i]) nm[i] = kiln_scope_escape(cx, nm[i]);
                if (nv[i]) nv[i] = kiln_scope_escape(cx, nv[i]);
            }
        }
        kiln_scope_end(cx);
        ok = kiln_ctx_status(cx) == KILN_OK;
    }
    if (ok) {
        memmove(out_params, params, params_def->size);
        kiln_tree_unflatten(cx, params_def, np, n, NULL, 0, out_params);
        if (uses_mu(opt)) {
            memmove(out_mu, mu, params_def->size);
            kiln_tree_unflatten(cx, params_def, nm, n, NULL, 0, out_mu);
        }
        if (uses_nu(opt)) {
            memmove(out_nu, nu, params_def->size);
            kiln_tree_unflatten(cx, params_def, nv, n, NULL, 0, out_nu);
        }
        *out_step = t;
    }
    kiln__nn_free(cx, buf, 7 * bytes);
    return kiln_ctx_status(cx);
}
