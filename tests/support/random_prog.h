/* SPDX-License-Identifier: Apache-2.0 */
/* The random-program generator the correctness tests share (tests/runtime's eager against
 * compiled, tests/batching's batched against one example at a time): a random DAG of ops
 * from one 64-bit seed, built through the public builders; its inputs; a first-order error
 * bound per value; and the comparison against it. What the programs cover and how the bound
 * is carried: tests/runtime/test_random_programs.c. */
#ifndef KILN_TEST_RANDOM_PROG_H
#define KILN_TEST_RANDOM_PROG_H

#include <kiln/kiln.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_NODES 160
#define MAX_IN 8
#define MAX_OUT 6
#define MAX_OPS 40

typedef struct rng {
    uint64_t s;
} rng;

typedef enum node_kind {
    N_INPUT,
    N_CONST,
    N_IOTA,
    N_UNARY,
    N_BINARY,
    N_COMPARE,
    N_SELECT,
    N_CLAMP,
    N_CONVERT,
    N_BITCAST,
    N_BCAST,
    N_RESHAPE,
    N_TRANSPOSE,
    N_SLICE,
    N_REVERSE,
    N_PAD,
    N_CONCAT,
    N_REDUCE,
    N_DOT,
    N_CONV,
} node_kind;

/* Dtype classes for the op tables. */
enum { C_F = 1, C_SI = 2, C_UI = 4, C_B = 8, C_INT = C_SI | C_UI, C_NUM = C_F | C_INT, C_ALL = 15 };

typedef kiln_tensor *(*unary_fn)(kiln_ctx *, kiln_tensor *);
typedef kiln_tensor *(*binary_fn)(kiln_ctx *, kiln_tensor *, kiln_tensor *);

typedef struct unary_op {
    const char *name;
    unary_fn fn;
    int classes;
    bool approx;   /* inexact for floats: transcendental */
    bool fragile;  /* needs an exact operand (discontinuous or unbounded sensitivity) */
    bool to_bool;  /* result i1 */
    bool exp_like; /* error grows with the result */
} unary_op;

typedef enum bin_rule { B_ADD, B_MUL, B_MAXMIN, B_OTHER } bin_rule;

typedef struct binary_op {
    const char *name;
    binary_fn fn;
    int classes;
    bool approx, fragile;
    bin_rule rule;
} binary_op;

enum { R_SUM, R_MAX, R_MIN, R_REDUCE_ADD, R_REDUCE_MAX };

typedef struct node {
    node_kind kind;
    int op;           /* unary/binary table index, compare direction, reduce kind */
    int a[3], n_a;    /* operand nodes */
    kiln_dtype dtype; /* result */
    kiln_shape shape;
    kiln_dims d1, d2, d3; /* perm; slice start/limit/strides; pad low/high/interior; axes */
    kiln_shape target;    /* broadcast and reshape target */
    int64_t i1;           /* input index, iota dim, concat dim, keepdims, result dtype */
    double value;         /* pad value, reduce init, clamp bounds (with value2) */
    double value2;
    uint64_t seed; /* data of constants */
    kiln_dot_params dot;
    kiln_conv_params conv;
    bool approx;     /* may differ from the evaluator within E */
    bool own_approx; /* inexact by itself (not only through an operand) */
    bool dep;        /* depends on an input (so it is traced, not a constant) */
    int64_t terms;   /* sum / contraction length, for E */
    int users;
} node;

typedef struct prog {
    uint64_t seed;
    bool big;          /* larger tensors: several tiles, several threads */
    bool threads_test; /* made by random_programs/threads */
    bool minimised;    /* cut down from a failing program */
    int n;
    node nodes[MAX_NODES];
    int n_in, in_node[MAX_IN];
    int n_out, out_node[MAX_OUT];
} prog;

typedef struct run_env {
    const prog *p;
    kiln_tensor **keep; /* eager: every node's value, retained (NULL: not kept) */
} run_env;

extern const char *const kind_names[];
extern const unary_op unary_ops[];
extern const binary_op binary_ops[];
#define N_UNARY_OPS 23 /* entries of the tables */
#define N_BINARY_OPS 15

/* A program from `seed` (big: larger tensors, several tiles). */
void gen_program(prog *p, uint64_t seed, bool big);
/* Reproducible data of dtype dt and shape s. */
kiln_tensor *random_tensor(kiln_ctx *cx, uint64_t seed, kiln_dtype dt, kiln_shape s);
/* Element i of t as a double. */
double element(const kiln_tensor *t, int64_t i);
/* The program as a kiln_region (user: a run_env). */
kiln_status run_prog(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user);
/* Its listing. */
void describe(const prog *p, FILE *f);
/* The largest magnitude of each node's eager value, and each node's error bound. */
void magnitudes(const prog *p, kiln_tensor *const *vals, double *mag);
void error_bounds(const prog *p, const double *mag, double *err);
/* Whether got matches ref within `bound` (bitwise for exact values); the first difference
 * into why. */
bool same(const kiln_tensor *ref, const kiln_tensor *got, double bound, char *why, size_t size);

#endif
