/* SPDX-License-Identifier: Apache-2.0 */
/* Finite-difference gradient cases, shared by the core rules (grad_cases_core.c) and the
 * indexing/linalg/window/sort rules (grad_cases_rules.c); test_grad_check.c runs them all.
 *
 * The format. A grad_case is a small function of a few arguments built with the public
 * builders (`fn`, a kiln_region over n_args inputs and n_out outputs) that must exercise
 * the op `op` (the coverage test lowers fn and looks for that op in the module, so every
 * differentiable row of ops.def needs at least one case). Each argument has a dtype and a
 * shape; float arguments are drawn uniformly from [lo, hi) in f64 (pick ranges away from
 * kinks and poles: the finite differences step up to 2e-3 from x), integer arguments take the
 * values in `ints` (cycled to fill the shape) or, when `ints` is NULL, uniform integers in
 * [lo, hi]. An argument with `fixed` set is held constant (not differentiated: index
 * operands, a predicate, a float that must stay where it is). The check draws random
 * inputs x, a random direction u for the float arguments and random cotangents v for
 * the float results, and compares <v, J u> computed three ways: by vjp (<vjp(v), u>), by
 * jvp (<v, jvp(u)>) and by a fourth-order central difference of <v, f(x + h u)> (h =
 * 1e-3), within `tol` (relative, default 1e-6); the vjp also runs inside kiln_jit and
 * must agree with the eager one. `flags` can skip a mode the op does not support. */
#ifndef KILN_TESTS_AUTODIFF_GRAD_CASES_H
#define KILN_TESTS_AUTODIFF_GRAD_CASES_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln/kiln.h"
#include "ops/op.h"

#define GRAD_CASE_MAX_ARGS 8

typedef struct grad_case_arg {
    kiln_dtype dtype; /* KILN_F64 for differentiated arguments */
    kiln_shape shape;
    double lo, hi;       /* the range of random values */
    bool fixed;          /* held constant (not differentiated) */
    const int64_t *ints; /* integer arguments: these values, cycled (NULL: random) */
    int32_t n_ints;
} grad_case_arg;

enum {
    GRAD_CASE_NO_JVP = 1u << 0, /* forward mode is not checked (e.g. custom_vjp) */
    GRAD_CASE_NO_VJP = 1u << 1,
};

typedef struct grad_case {
    const char *name;
    kiln_op op; /* the op the case must exercise */
    int32_t n_args;
    grad_case_arg args[GRAD_CASE_MAX_ARGS];
    int32_t n_out;
    kiln_region fn;
    double tol; /* relative tolerance; 0: 1e-6 */
    unsigned flags;
} grad_case;

/* Shorthand for an f64 argument of a shape with values in [lo, hi). */
#define GRAD_F64(lo_, hi_, ...) \
    { .dtype = KILN_F64, .shape = KILN_SHAPE(__VA_ARGS__), .lo = (lo_), .hi = (hi_) }

extern const grad_case kiln_test_cases_core[];
extern const int kiln_test_n_cases_core;
extern const grad_case kiln_test_cases_rules[];
extern const int kiln_test_n_cases_rules;

#endif
