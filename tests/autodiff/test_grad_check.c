/* SPDX-License-Identifier: Apache-2.0 */
/* Every differentiation rule against finite differences, from the cases of grad_cases.h:
 * <v, J u> by vjp, by jvp and by a fourth-order central difference of <v, f(x + h u)>, all
 * in f64. The coverage test fails when a differentiable op of ops.def has no case, or its
 * rules are still the defaults of rules.c. */
#include <math.h>
#include <stdio.h>

#include "autodiff/rules.h"
#include "grad_cases.h"
#include "test_util.h"

#define MAX_OUT 8

typedef struct rng {
    uint64_t s;
} rng;
static double uniform(rng *r) {
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(r->s >> 11) * (1.0 / 9007199254740992.0);
}

static kiln_tensor *f64_tensor(kiln_ctx *cx, kiln_shape shape, const double *data) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    return kiln_tensor_from_host(cx, KILN_F64, shape, data, (size_t)n * sizeof(double));
}

static int64_t numel(const kiln_shape *s) {
    int64_t n = 1;
    for (int32_t d = 0; d < s->rank; d++)
        n *= s->dims[d];
    return n;
}

typedef struct inputs {
    kiln_tensor *args[GRAD_CASE_MAX_ARGS];
    double *x[GRAD_CASE_MAX_ARGS], *u[GRAD_CASE_MAX_ARGS]; /* float args: values, direction */
} inputs;

static bool differentiated(const grad_case_arg *a) { return a->dtype == KILN_F64 && !a->fixed; }

static void make_inputs(kiln_ctx *cx, const grad_case *c, rng *r, inputs *in) {
    for (int32_t i = 0; i < c->n_args; i++) {
        const grad_case_arg *a = &c->args[i];
        int64_t n = numel(&a->shape);
        in->x[i] = in->u[i] = NULL;
        if (a->dtype == KILN_F64) {
            in->x[i] = calloc((size_t)n + 1, sizeof(double));
            in->u[i] = calloc((size_t)n + 1, sizeof(double));
            for (int64_t k = 0; k < n; k++) {
                in->x[i][k] = a->lo + (a->hi - a->lo) * uniform(r);
                in->u[i][k] = a->fixed ? 0.0 : 2.0 * uniform(r) - 1.0;
            }
            in->args[i] = f64_tensor(cx, a->shape, in->x[i]);
        } else {
            int64_t *v = calloc((size_t)n + 1, sizeof(int64_t));
            for (int64_t k = 0; k < n; k++)
                v[k] = a->ints ? a->ints[k % a->n_ints]
                               : (int64_t)floor(a->lo + (a->hi - a->lo + 1) * uniform(r));
            kiln_tensor *t =
                kiln_tensor_from_host(cx, KILN_I64, a->shape, v, (size_t)n * sizeof(int64_t));
            in->args[i] = a->dtype == KILN_I64 ? t : kiln_convert(cx, t, a->dtype);
            free(v);
        }
    }
}

static void free_inputs(const grad_case *c, inputs *in) {
    for (int32_t i = 0; i < c->n_args; i++) {
        free(in->x[i]);
        free(in->u[i]);
    }
}

/* <v, f(x + h u)> evaluated eagerly. */
static double probe(kiln_ctx *cx, const grad_case *c, const inputs *in, double *const *v,
                    double h) {
    kiln_scope_begin(cx);
    kiln_tensor *args[GRAD_CASE_MAX_ARGS], *out[MAX_OUT] = {0};
    for (int32_t i = 0; i < c->n_args; i++) {
        args[i] = in->args[i];
        if (!differentiated(&c->args[i])) continue;
        int64_t n = numel(&c->args[i].shape);
        double *p = malloc((size_t)(n + 1) * sizeof(double));
        for (int64_t k = 0; k < n; k++)
            p[k] = in->x[i][k] + h * in->u[i][k];
        args[i] = f64_tensor(cx, c->args[i].shape, p);
        free(p);
    }
    double sum = 0;
    if (c->fn.fn(cx, args, out, c->fn.user) == KILN_OK) {
        for (int32_t j = 0; j < c->n_out; j++) {
            if (!out[j] || kiln_tensor_dtype(out[j]) != KILN_F64) continue;
            const double *y = kiln_tensor_data(out[j]);
            for (int64_t k = 0; k < kiln_tensor_numel(out[j]); k++)
                sum += v[j][k] * y[k];
        }
    }
    kiln_scope_end(cx);
    return sum;
}

static double dot(const double *a, const double *b, int64_t n) {
    double s = 0;
    for (int64_t k = 0; k < n; k++)
        s += a[k] * b[k];
    return s;
}

/* The vjp of a case as a function for kiln_jit: (args..., cotangents of the float
 * results...) -> cotangents of the float arguments. */
typedef struct jit_vjp {
    const grad_case *c;
    int32_t float_out[MAX_OUT], n_float_out;
} jit_vjp;

static kiln_status vjp_in_jit(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    const jit_vjp *j = u;
    const grad_case *c = j->c;
    kiln_tensor *cts[MAX_OUT] = {0}, *g[GRAD_CASE_MAX_ARGS] = {0};
    for (int32_t k = 0; k < j->n_float_out; k++)
        cts[j->float_out[k]] = in[c->n_args + k];
    kiln_status s = kiln_vjp(cx, &c->fn, c->n_args, in, c->n_out, cts, NULL, g);
    if (s != KILN_OK) return s;
    for (int32_t i = 0, k = 0; i < c->n_args; i++)
        if (c->args[i].dtype == KILN_F64) out[k++] = g[i];
    return KILN_OK;
}

/* The jitted vjp equals the eager one (gx: the eager cotangents). */
static bool check_jit(kiln_ctx *cx, const grad_case *c, kiln_tensor *const *args,
                      kiln_tensor *const *cts, kiln_tensor *const *gx) {
    jit_vjp j = {.c = c};
    kiln_tensor *in[GRAD_CASE_MAX_ARGS + MAX_OUT], *out[GRAD_CASE_MAX_ARGS] = {0};
    for (int32_t i = 0; i < c->n_args; i++)
        in[i] = args[i];
    for (int32_t k = 0; k < c->n_out; k++)
        if (cts[k]) {
            in[c->n_args + j.n_float_out] = cts[k];
            j.float_out[j.n_float_out++] = k;
        }
    int32_t n_float_in = 0;
    for (int32_t i = 0; i < c->n_args; i++)
        n_float_in += c->args[i].dtype == KILN_F64;
    kiln_jit *f = NULL;
    bool ok = kiln_jit_create(cx, &(kiln_region){vjp_in_jit, &j}, c->n_args + j.n_float_out,
                              n_float_in, NULL, &f) == KILN_OK &&
              kiln_jit_call_list(cx, f, in, out) == KILN_OK;
    if (!ok) {
        cr_log_error("%s: the vjp inside kiln_jit failed: %s", c->name, kiln_ctx_error_message(cx));
        kiln_ctx_clear_error(cx);
    }
    for (int32_t i = 0, k = 0; ok && i < c->n_args; i++) {
        if (c->args[i].dtype != KILN_F64) continue;
        const double *a = kiln_tensor_data(gx[i]), *b = kiln_tensor_data(out[k++]);
        for (int64_t e = 0; e < kiln_tensor_numel(gx[i]); e++)
            if (!(fabs(a[e] - b[e]) <= 1e-12 * (1 + fabs(a[e])))) {
                cr_log_error("%s: argument %d element %lld: eager vjp %.17g, jitted %.17g", c->name,
                             (int)i, (long long)e, a[e], b[e]);
                ok = false;
                break;
            }
    }
    kiln_jit_release(f);
    return ok;
}

/* Runs one case; returns false (after logging why) on a mismatch or an error. */
static bool check_case(kiln_ctx *cx, const grad_case *c, uint64_t seed, bool jit) {
    rng r = {seed};
    inputs in;
    kiln_scope_begin(cx);
    make_inputs(cx, c, &r, &in);
    bool ok = true;
    /* The outputs' types, and random cotangents for the float ones. */
    kiln_tensor *y[MAX_OUT] = {0};
    double *v[MAX_OUT] = {0};
    kiln_tensor *cts[MAX_OUT] = {0};
    if (c->fn.fn(cx, in.args, y, c->fn.user) != KILN_OK || kiln_ctx_status(cx) != KILN_OK) {
        cr_log_error("%s: the function failed eagerly: %s", c->name, kiln_ctx_error_message(cx));
        kiln_ctx_clear_error(cx);
        ok = false;
        goto out;
    }
    for (int32_t j = 0; j < c->n_out; j++) {
        int64_t n = kiln_tensor_numel(y[j]);
        v[j] = calloc((size_t)n + 1, sizeof(double));
        if (kiln_tensor_dtype(y[j]) != KILN_F64) continue;
        for (int64_t k = 0; k < n; k++)
            v[j][k] = 2.0 * uniform(&r) - 1.0;
        cts[j] = f64_tensor(cx, *kiln_tensor_shape(y[j]), v[j]);
    }
    const double h = 1e-3;
    double fd = (8.0 * (probe(cx, c, &in, v, h) - probe(cx, c, &in, v, -h)) -
                 (probe(cx, c, &in, v, 2 * h) - probe(cx, c, &in, v, -2 * h))) /
                (12.0 * h);
    double tol = c->tol > 0 ? c->tol : 1e-6;
    if (!(c->flags & GRAD_CASE_NO_VJP)) {
        kiln_tensor *gx[GRAD_CASE_MAX_ARGS] = {0};
        if (kiln_vjp(cx, &c->fn, c->n_args, in.args, c->n_out, cts, NULL, gx) != KILN_OK) {
            cr_log_error("%s: kiln_vjp failed: %s", c->name, kiln_ctx_error_message(cx));
            kiln_ctx_clear_error(cx);
            ok = false;
        } else {
            double s = 0;
            for (int32_t i = 0; i < c->n_args; i++)
                if (differentiated(&c->args[i]) && gx[i])
                    s += dot(kiln_tensor_data(gx[i]), in.u[i], numel(&c->args[i].shape));
            if (!(fabs(s - fd) <= tol * (1.0 + fabs(fd)))) {
                cr_log_error("%s: vjp gives <ct, u> = %.12g; finite differences %.12g", c->name, s,
                             fd);
                ok = false;
            }
            if (jit && !check_jit(cx, c, in.args, cts, gx)) ok = false;
        }
    }
    if (!(c->flags & GRAD_CASE_NO_JVP)) {
        kiln_tensor *t[GRAD_CASE_MAX_ARGS] = {0}, *ty[MAX_OUT] = {0};
        for (int32_t i = 0; i < c->n_args; i++)
            if (differentiated(&c->args[i])) t[i] = f64_tensor(cx, c->args[i].shape, in.u[i]);
        if (kiln_jvp(cx, &c->fn, c->n_args, in.args, t, c->n_out, NULL, ty) != KILN_OK) {
            cr_log_error("%s: kiln_jvp failed: %s", c->name, kiln_ctx_error_message(cx));
            kiln_ctx_clear_error(cx);
            ok = false;
        } else {
            double s = 0;
            for (int32_t j = 0; j < c->n_out; j++)
                if (ty[j]) s += dot(kiln_tensor_data(ty[j]), v[j], kiln_tensor_numel(ty[j]));
            if (!(fabs(s - fd) <= tol * (1.0 + fabs(fd)))) {
                cr_log_error("%s: jvp gives <v, t> = %.12g; finite differences %.12g", c->name, s,
                             fd);
                ok = false;
            }
        }
    }
out:
    for (int32_t j = 0; j < MAX_OUT; j++)
        free(v[j]);
    free_inputs(c, &in);
    kiln_scope_end(cx);
    return ok;
}

static int run_all(const grad_case *cases, int n, uint64_t seed) {
    kiln_ctx *cx = test_ctx();
    int failures = 0;
    for (int i = 0; i < n; i++)
        for (uint64_t k = 0; k < 2; k++)
            failures += !check_case(cx, &cases[i], seed + 7919 * (uint64_t)i + k, k == 0);
    kiln_ctx_release(cx);
    return failures;
}

Test(grad_check, core_rules_match_finite_differences) {
    int failures = run_all(kiln_test_cases_core, kiln_test_n_cases_core, 1234);
    cr_assert_eq(failures, 0, "%d core case runs failed (see the log)", failures);
}

Test(grad_check, indexing_linalg_window_sort_rules_match_finite_differences) {
    int failures = run_all(kiln_test_cases_rules, kiln_test_n_cases_rules, 4321);
    cr_assert_eq(failures, 0, "%d rules case runs failed (see the log)", failures);
}

/* ---- coverage ------------------------------------------------------------------------------- */

static bool block_has(const kiln__block *b, kiln_op op) {
    for (const kiln__ir_op *o = b->first; o; o = o->next) {
        if (o->kind == op) return true;
        for (int32_t r = 0; r < o->n_regions; r++)
            if (o->regions[r] && block_has(o->regions[r], op)) return true;
    }
    return false;
}

static bool case_exercises(kiln_ctx *cx, const grad_case *c, bool log) {
    kiln_arg_spec specs[GRAD_CASE_MAX_ARGS];
    for (int32_t i = 0; i < c->n_args; i++)
        specs[i] = (kiln_arg_spec){.dtype = c->args[i].dtype, .shape = c->args[i].shape};
    kiln_module *m = NULL;
    if (kiln_lower(cx, &c->fn, specs, c->n_args, c->n_out, NULL, &m) != KILN_OK) {
        cr_log_error("%s: kiln_lower failed: %s", c->name, kiln_ctx_error_message(cx));
        kiln_ctx_clear_error(cx);
        return false;
    }
    bool found = false;
    for (int32_t f = 0; f < m->n_funcs && !found; f++)
        found = block_has(m->funcs[f]->body, c->op);
    kiln_module_release(m);
    if (!found && log)
        cr_log_error("%s: the lowered function has no stablehlo.%s", c->name,
                     kiln__op_get_info(c->op)->name);
    return found;
}

Test(grad_check, every_differentiable_op_has_rules_and_a_case) {
    kiln_ctx *cx = test_ctx();
    int missing = 0;
    for (int k = 0; k < KILN_OP_COUNT; k++) {
        kiln_op op = (kiln_op)k;
        if (!kiln__op_has(op, KILN_OPF_DIFFERENTIABLE)) continue;
        const char *name = kiln__op_get_info(op)->name;
        if (kiln__ad_rule_is_default(op, true) || kiln__ad_rule_is_default(op, false)) {
            cr_log_error("stablehlo.%s still has the default (unimplemented) rule", name);
            missing++;
        }
        bool covered = false;
        for (int set = 0; set < 2 && !covered; set++) {
            const grad_case *cs = set ? kiln_test_cases_rules : kiln_test_cases_core;
            int n = set ? kiln_test_n_cases_rules : kiln_test_n_cases_core;
            for (int i = 0; i < n && !covered; i++)
                if (cs[i].op == op) covered = case_exercises(cx, &cs[i], true);
        }
        if (!covered) {
            cr_log_error("stablehlo.%s has no finite-difference case exercising it", name);
            missing++;
        }
    }
    kiln_ctx_release(cx);
    cr_assert_eq(missing, 0, "%d differentiable ops lack a rule or a case (see the log)", missing);
}

Test(grad_check, the_coverage_check_can_fail) {
    /* A case naming an op its function does not use is caught. */
    kiln_ctx *cx = test_ctx();
    grad_case wrong = kiln_test_cases_core[0];
    wrong.op = KILN_OP_DOT_GENERAL;
    cr_assert_not(case_exercises(cx, &wrong, false));
    kiln_ctx_release(cx);
}
