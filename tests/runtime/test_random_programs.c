/* Random programs, eager against compiled (issue 7's correctness net).
 *
 * Each program comes from one 64-bit seed: a random DAG of 1..40 ops over random dtypes
 * (f32, f64, f16, bf16, i32, i64, i8, ui8, i1) and shapes (rank 0..4, small dimensions,
 * many of them 1 so that operands broadcast), built through the public builders inside a
 * kiln_region. The region runs eagerly on seeded random inputs (the evaluator: the
 * reference) and is lowered, compiled and called on the same inputs; every result must
 * agree. Variants of the same program (every third one): compiled without the
 * simplification passes and without constant folding, lowered with donate_all (donation
 * must not change any bit), and printed, parsed back and compiled. Constants that equal an
 * iota become stablehlo.iota ops again before compiling (tracing folds kiln_iota). One
 * program in ten has larger tensors (several tiles); random_programs/threads runs larger
 * programs at 1 to 4 threads (results must be bitwise the same for every count).
 *
 * Agreement. A value computed only by exact ops (integer and movement ops, float add,
 * subtract, multiply, divide, sqrt, convert, max/min, compare, select, ...) must match bit
 * for bit (all NaNs match each other: StableHLO leaves NaN payloads to the
 * implementation). Transcendentals (SLEEF or libm: a few ulps), float sums and
 * contractions (the order of the additions is the implementation's) may differ; for those
 * the generator carries a first-order forward error bound E through the DAG, using the
 * magnitudes of the eager values:
 *   transcendental result r:        E = E_x * L + 4 eps |r|max   (L: 1, or |r|max for exp)
 *   a + b, a - b:                   E = E_a + E_b + eps |r|max
 *   a * b:                          E = E_a |b|max + E_b |a|max + E_a E_b + eps |r|max
 *   sum of n terms:                 E = n E_x + (n + 1) eps n |x|max
 *   contraction over k terms:       E = k (E_a |b|max + E_b |a|max) + (k + 1) eps k |a|max |b|max
 *   movement, max/min, select:      the largest E of the operands
 * (eps: the result dtype's unit roundoff) and a result element passes when
 * |eager - compiled| <= 4 E. So that the bound holds, an inexact value never feeds an op
 * that is discontinuous or unboundedly sensitive: compare, floor/ceil/round/sign,
 * float->int convert, is_finite, divide, remainder, power, atan2, sqrt, rsqrt, cbrt, log,
 * log_plus_one, tan (the generator picks an exact operand for those).
 *
 * A failure prints the program (the generator's listing and the lowered module), the
 * seed and the first differing element, then a minimised program: only what the failing
 * result needs, with ops bypassed or replaced by fresh inputs while the mismatch stays
 * (KILN_RPG_NO_MINIMISE=1 skips that). KILN_RPG_SEED=<seed> KILN_RPG_COUNT=1 test_runtime
 * --filter 'random_programs/batch_0' (or 'random_programs/threads' when the report says
 * so) reruns the program. KILN_RPG_COUNT=N runs N programs per batch test (the default is
 * smaller under the sanitizers), KILN_RPG_SECONDS=S runs each batch for S seconds instead
 * (`make fuzz-programs`). A batch stops after 3 failures (KILN_RPG_MAX_FAILURES=N: N).
 * KILN_RPG_VERBOSE=1 prints every program.
 *
 * Regression tests at the end hold the minimised programs of bugs this generator found. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/threads.h"
#include "ir/ir.h"
#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define RPG_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RPG_SANITIZED 1
#endif
#endif
#ifndef RPG_SANITIZED
#define RPG_SANITIZED 0
#endif

/* Programs per batch test (4 batches); the sanitizers make each one ~10x slower. */
#ifndef KILN_RPG_DEFAULT_COUNT
#define KILN_RPG_DEFAULT_COUNT (RPG_SANITIZED ? 300 : 1000)
#endif
#define N_BATCHES 4
/* Larger programs run at several thread counts. */
#define THREAD_PROGRAMS (RPG_SANITIZED ? 12 : 40)

#define MAX_NODES 160
#define MAX_IN 8
#define MAX_OUT 6
#define MAX_OPS 40

/* ---- the random source ------------------------------------------------------------------ */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next_u64(rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static int64_t below(rng *r, int64_t n) {
    return n <= 1 ? 0 : (int64_t)(next_u64(r) % (uint64_t)n);
}
static bool chance(rng *r, int percent) { return below(r, 100) < percent; }
static double uniform(rng *r, double lo, double hi) {
    return lo + (hi - lo) * (double)(next_u64(r) >> 11) * 0x1p-53;
}

/* ---- programs ----------------------------------------------------------------------------- */

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

static const char *const kind_names[] = {
    "input",   "constant", "iota",        "unary",     "binary",      "compare",    "select",
    "clamp",   "convert",  "bitcast",     "broadcast", "reshape",     "transpose",  "slice",
    "reverse", "pad",      "concatenate", "reduce",    "dot_general", "convolution"};

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

static const unary_op unary_ops[] = {
    {"abs", kiln_abs, C_F | C_SI, false, false, false, false},
    {"negate", kiln_negate, C_NUM, false, false, false, false},
    {"sign", kiln_sign, C_F | C_SI, false, true, false, false},
    {"not", kiln_not, C_INT | C_B, false, false, false, false},
    {"floor", kiln_floor, C_F, false, true, false, false},
    {"ceil", kiln_ceil, C_F, false, true, false, false},
    {"round_nearest_afz", kiln_round_nearest_afz, C_F, false, true, false, false},
    {"round_nearest_even", kiln_round_nearest_even, C_F, false, true, false, false},
    {"sqrt", kiln_sqrt, C_F, false, true, false, false},
    {"rsqrt", kiln_rsqrt, C_F, true, true, false, false},
    {"cbrt", kiln_cbrt, C_F, true, true, false, false},
    {"exponential", kiln_exponential, C_F, true, false, false, true},
    {"exponential_minus_one", kiln_exponential_minus_one, C_F, true, false, false, true},
    {"log", kiln_log, C_F, true, true, false, false},
    {"log_plus_one", kiln_log_plus_one, C_F, true, true, false, false},
    {"logistic", kiln_logistic, C_F, true, false, false, false},
    {"sine", kiln_sine, C_F, true, false, false, false},
    {"cosine", kiln_cosine, C_F, true, false, false, false},
    {"tan", kiln_tan, C_F, true, true, false, false},
    {"tanh", kiln_tanh, C_F, true, false, false, false},
    {"is_finite", kiln_is_finite, C_F, false, true, true, false},
    {"popcnt", kiln_popcnt, C_INT, false, false, false, false},
    {"count_leading_zeros", kiln_count_leading_zeros, C_INT, false, false, false, false},
};
#define N_UNARY_OPS ((int)(sizeof unary_ops / sizeof unary_ops[0]))

typedef enum bin_rule { B_ADD, B_MUL, B_MAXMIN, B_OTHER } bin_rule;

typedef struct binary_op {
    const char *name;
    binary_fn fn;
    int classes;
    bool approx, fragile;
    bin_rule rule;
} binary_op;

static const binary_op binary_ops[] = {
    {"add", kiln_add, C_ALL, false, false, B_ADD},
    {"subtract", kiln_subtract, C_NUM, false, false, B_ADD},
    {"multiply", kiln_multiply, C_ALL, false, false, B_MUL},
    {"maximum", kiln_maximum, C_ALL, false, false, B_MAXMIN},
    {"minimum", kiln_minimum, C_ALL, false, false, B_MAXMIN},
    {"divide", kiln_divide, C_NUM, false, true, B_OTHER},
    {"remainder", kiln_remainder, C_NUM, false, true, B_OTHER},
    {"power", kiln_power, C_NUM, true, true, B_OTHER},
    {"atan2", kiln_atan2, C_F, true, true, B_OTHER},
    {"and", kiln_and, C_INT | C_B, false, false, B_OTHER},
    {"or", kiln_or, C_INT | C_B, false, false, B_OTHER},
    {"xor", kiln_xor, C_INT | C_B, false, false, B_OTHER},
    {"shift_left", kiln_shift_left, C_INT, false, false, B_OTHER},
    {"shift_right_arithmetic", kiln_shift_right_arithmetic, C_INT, false, false, B_OTHER},
    {"shift_right_logical", kiln_shift_right_logical, C_INT, false, false, B_OTHER},
};
#define N_BINARY_OPS ((int)(sizeof binary_ops / sizeof binary_ops[0]))

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

/* ---- helpers ------------------------------------------------------------------------------ */

static int class_of(kiln_dtype d) {
    if (d == KILN_BOOL) return C_B;
    if (kiln_dtype_is_float(d)) return C_F;
    return kiln_dtype_is_signed(d) ? C_SI : C_UI;
}

static int64_t numel(const kiln_shape *s) {
    int64_t n = 1;
    for (int32_t i = 0; i < s->rank; i++)
        n *= s->dims[i];
    return n;
}

static int64_t cap(const prog *p) { return p->big ? 24576 : 512; }

static kiln_dtype random_dtype(rng *r) {
    static const kiln_dtype pick[] = {KILN_F32, KILN_F32, KILN_F32, KILN_F64, KILN_F16, KILN_BF16,
                                      KILN_I32, KILN_I32, KILN_I64, KILN_I8,  KILN_U8,  KILN_BOOL};
    return pick[below(r, (int64_t)(sizeof pick / sizeof pick[0]))];
}

static int64_t random_dim(rng *r, bool big) {
    static const int64_t small[] = {1, 1, 2, 3, 4, 5, 6, 8};
    if (big && chance(r, 60)) return 8 + below(r, 57);
    return small[below(r, 8)];
}

static kiln_shape random_shape(rng *r, const prog *p) {
    static const int ranks[] = {0, 1, 1, 2, 2, 2, 3, 3, 4, 4};
    kiln_shape s = {.rank = ranks[below(r, 10)]};
    if (p->big && s.rank == 0) s.rank = 2;
    for (int tries = 0; tries < 8; tries++) {
        for (int32_t i = 0; i < s.rank; i++)
            s.dims[i] = random_dim(r, p->big);
        if (numel(&s) <= cap(p)) return s;
    }
    for (int32_t i = 0; i < s.rank; i++)
        s.dims[i] = 1 + below(r, 3);
    return s;
}

/* numpy broadcasting of a and b; false when they do not broadcast. */
static bool broadcast_shapes(const kiln_shape *a, const kiln_shape *b, kiln_shape *out) {
    int32_t rank = a->rank > b->rank ? a->rank : b->rank;
    out->rank = rank;
    for (int32_t i = 0; i < rank; i++) {
        int32_t ia = a->rank - rank + i, ib = b->rank - rank + i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        out->dims[i] = da == 1 ? db : da;
    }
    return true;
}

/* A shape that broadcasts with s: trailing dims kept, set to 1, or (where s has 1) grown;
 * maybe fewer or more leading dims. */
static kiln_shape compatible_shape(rng *r, const prog *p, const kiln_shape *s) {
    kiln_shape t = *s;
    if (t.rank > 0 && chance(r, 25)) { /* drop leading dims */
        int32_t drop = (int32_t)below(r, t.rank + 1);
        for (int32_t i = 0; i + drop < t.rank; i++)
            t.dims[i] = t.dims[i + drop];
        t.rank -= drop;
    } else if (t.rank < 4 && chance(r, 15)) { /* add a leading dim */
        for (int32_t i = t.rank; i > 0; i--)
            t.dims[i] = t.dims[i - 1];
        t.dims[0] = 1 + below(r, 3);
        t.rank++;
    }
    for (int32_t i = 0; i < t.rank; i++) {
        if (t.dims[i] == 1 && chance(r, 30))
            t.dims[i] = 2 + below(r, 3);
        else if (chance(r, 30))
            t.dims[i] = 1;
    }
    kiln_shape out;
    if (!broadcast_shapes(s, &t, &out) || numel(&out) > cap(p)) return *s;
    return t;
}

static node *add_node(prog *p, node_kind kind, kiln_dtype dtype, kiln_shape shape) {
    if (p->n >= MAX_NODES) return NULL;
    node *n = &p->nodes[p->n++];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->dtype = dtype;
    n->shape = shape;
    return n;
}

static int idx(const prog *p, const node *n) { return (int)(n - p->nodes); }

static void use(prog *p, node *n, int operand) {
    n->a[n->n_a++] = operand;
    p->nodes[operand].users++;
    n->approx |= p->nodes[operand].approx;
    n->dep |= p->nodes[operand].dep;
}

static void set_splat(rng *r, node *n) {
    static const double values[] = {0.0, 1.0, -0.0, -1.0, 2.0};
    n->i1 = 1;
    n->value = values[below(r, 5)];
    if (n->dtype == KILN_BOOL) n->value = fabs(n->value) > 1 ? 1 : fabs(n->value);
    if (n->dtype == KILN_U8 && n->value < 0) n->value = 255;
}

/* A new leaf of the given type: an input while there is room, else a constant or iota. */
static int leaf(rng *r, prog *p, kiln_dtype dtype, kiln_shape shape) {
    node *n;
    if (p->n_in < MAX_IN && (p->n_in == 0 || chance(r, 70))) {
        n = add_node(p, N_INPUT, dtype, shape);
        if (!n) return -1;
        n->i1 = p->n_in;
        n->dep = true;
        p->in_node[p->n_in++] = idx(p, n);
    } else if (shape.rank > 0 && dtype != KILN_BOOL && chance(r, 25)) {
        n = add_node(p, N_IOTA, dtype, shape);
        if (!n) return -1;
        n->i1 = below(r, shape.rank);
    } else {
        n = add_node(p, N_CONST, dtype, shape);
        if (!n) return -1;
        if (chance(r, 35)) set_splat(r, n);
    }
    n->seed = next_u64(r);
    return idx(p, n);
}

/* A constant whose elements are all one value: the identities canonicalize looks for (0,
 * -0, 1) and near misses. A rank-0 splat reaches binary ops as a broadcast. */
static int splat_leaf(rng *r, prog *p, kiln_dtype dtype, kiln_shape shape) {
    node *n = add_node(p, N_CONST, dtype, shape);
    if (!n) return -1;
    set_splat(r, n);
    return idx(p, n);
}

/* An existing node satisfying ok(), biased to recent ones; -1 when none. */
typedef bool (*node_pred)(const prog *p, const node *n, const void *arg);

static int pick(rng *r, const prog *p, node_pred ok, const void *arg) {
    int cands[MAX_NODES], nc = 0;
    for (int i = 0; i < p->n; i++)
        if (ok(p, &p->nodes[i], arg)) cands[nc++] = i;
    if (nc == 0) return -1;
    if (nc > 4 && chance(r, 60)) return cands[nc - 1 - below(r, 4)];
    return cands[below(r, nc)];
}

typedef struct want {
    int classes;
    bool exact; /* must not be approximate */
    int min_rank, max_rank;
    kiln_dtype dtype;             /* KILN_DTYPE_COUNT: any in classes */
    const kiln_shape *bcast_with; /* must broadcast with this shape */
    int64_t cap;
} want;

static bool wants(const prog *p, const node *n, const void *arg) {
    (void)p;
    const want *w = arg;
    if (!(class_of(n->dtype) & w->classes)) return false;
    if (w->dtype != KILN_DTYPE_COUNT && n->dtype != w->dtype) return false;
    if (w->exact && n->approx) return false;
    if (n->shape.rank < w->min_rank || n->shape.rank > w->max_rank) return false;
    if (w->bcast_with) {
        kiln_shape out;
        if (!broadcast_shapes(w->bcast_with, &n->shape, &out) || numel(&out) > w->cap) return false;
    }
    return true;
}

static want want_any(int classes) {
    return (want){.classes = classes, .max_rank = 4, .dtype = KILN_DTYPE_COUNT};
}

/* An operand with the wanted properties: an existing node, or a new leaf. */
static int operand(rng *r, prog *p, const want *w, int reuse_percent) {
    if (chance(r, reuse_percent)) {
        int i = pick(r, p, wants, w);
        if (i >= 0) return i;
    }
    kiln_dtype dt = w->dtype;
    for (int t = 0; dt == KILN_DTYPE_COUNT && t < 64; t++) {
        kiln_dtype c = random_dtype(r);
        if (class_of(c) & w->classes) dt = c;
    }
    if (dt == KILN_DTYPE_COUNT) return -1;
    kiln_shape s = w->bcast_with ? compatible_shape(r, p, w->bcast_with) : random_shape(r, p);
    for (int t = 0; t < 16 && (s.rank < w->min_rank || s.rank > w->max_rank); t++)
        s = random_shape(r, p);
    if (s.rank < w->min_rank || s.rank > w->max_rank) return -1;
    return leaf(r, p, dt, s);
}

static double rnd_scalar(rng *r, kiln_dtype dt) {
    if (dt == KILN_BOOL) return (double)below(r, 2);
    if (dt == KILN_U8) return (double)below(r, 256);
    if (kiln_dtype_is_integer(dt)) return (double)(below(r, 21) - 10);
    static const double f[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.25, 1e-3};
    if (chance(r, 50)) return f[below(r, 8)];
    return uniform(r, -4, 4);
}

/* ---- op generators: each adds one node (and maybe leaves), or returns false ------------- */

static int unary_index(const char *name) {
    for (int i = 0; i < N_UNARY_OPS; i++)
        if (strcmp(unary_ops[i].name, name) == 0) return i;
    return 0;
}

static int binary_index(const char *name) {
    for (int i = 0; i < N_BINARY_OPS; i++)
        if (strcmp(binary_ops[i].name, name) == 0) return i;
    return 0;
}

/* Mostly keeps the operands of sqrt, rsqrt, log and log_plus_one in their domain (an abs
 * in front), so that fewer of their results are NaN and carry nothing. */
static int in_domain(rng *r, prog *p, int a, const char *op) {
    static const char *const partial[] = {"sqrt", "rsqrt", "log", "log_plus_one"};
    if (!kiln_dtype_is_float(p->nodes[a].dtype) || !chance(r, 70)) return a;
    for (size_t i = 0; i < sizeof partial / sizeof partial[0]; i++) {
        if (strcmp(op, partial[i]) != 0) continue;
        node *n = add_node(p, N_UNARY, p->nodes[a].dtype, p->nodes[a].shape);
        if (!n) return -1;
        n->op = unary_index("abs");
        use(p, n, a);
        return p->n - 1;
    }
    return a;
}

static bool gen_unary(rng *r, prog *p) {
    int k = (int)below(r, N_UNARY_OPS);
    const unary_op *u = &unary_ops[k];
    want w = want_any(u->classes);
    w.exact = u->fragile;
    int a = operand(r, p, &w, 85);
    if (a < 0 || (a = in_domain(r, p, a, u->name)) < 0) return false;
    const node *x = &p->nodes[a];
    node *n = add_node(p, N_UNARY, u->to_bool ? KILN_BOOL : x->dtype, x->shape);
    if (!n) return false;
    n->op = k;
    use(p, n, a);
    if (u->approx && kiln_dtype_is_float(x->dtype)) n->approx = n->own_approx = true;
    if (u->to_bool) n->approx = false;
    return true;
}

static bool gen_binary(rng *r, prog *p) {
    int k = (int)below(r, N_BINARY_OPS);
    const binary_op *b = &binary_ops[k];
    want w = want_any(b->classes);
    w.exact = b->fragile;
    int a = operand(r, p, &w, 85);
    if (a < 0) return false;
    want w2 = w;
    w2.dtype = p->nodes[a].dtype;
    w2.bcast_with = &p->nodes[a].shape;
    w2.cap = cap(p);
    int c = chance(r, 15) ? splat_leaf(r, p, w2.dtype,
                                       chance(r, 50) ? (kiln_shape){.rank = 0} : p->nodes[a].shape)
                          : operand(r, p, &w2, 50);
    if (c < 0) return false;
    if (chance(r, 50)) {
        int t = a;
        a = c;
        c = t;
    }
    kiln_shape s;
    if (!broadcast_shapes(&p->nodes[a].shape, &p->nodes[c].shape, &s)) return false;
    node *n = add_node(p, N_BINARY, p->nodes[a].dtype, s);
    if (!n) return false;
    n->op = k;
    use(p, n, a);
    use(p, n, c);
    if (b->approx && kiln_dtype_is_float(n->dtype)) n->approx = n->own_approx = true;
    return true;
}

static bool gen_compare(rng *r, prog *p) {
    want w = want_any(C_ALL);
    w.exact = true;
    int a = operand(r, p, &w, 85);
    if (a < 0) return false;
    want w2 = w;
    w2.dtype = p->nodes[a].dtype;
    w2.bcast_with = &p->nodes[a].shape;
    w2.cap = cap(p);
    int c = operand(r, p, &w2, 50);
    if (c < 0) return false;
    kiln_shape s;
    if (!broadcast_shapes(&p->nodes[a].shape, &p->nodes[c].shape, &s)) return false;
    node *n = add_node(p, N_COMPARE, KILN_BOOL, s);
    if (!n) return false;
    n->op = (int)below(r, 6);
    use(p, n, a);
    use(p, n, c);
    return true;
}

static bool gen_select(rng *r, prog *p) {
    int a = operand(r, p, &(want){.classes = C_ALL, .max_rank = 4, .dtype = KILN_DTYPE_COUNT}, 90);
    if (a < 0) return false;
    want wb = want_any(C_ALL);
    wb.dtype = p->nodes[a].dtype;
    wb.bcast_with = &p->nodes[a].shape;
    wb.cap = cap(p);
    int b = operand(r, p, &wb, 50);
    if (b < 0) return false;
    kiln_shape s;
    if (!broadcast_shapes(&p->nodes[a].shape, &p->nodes[b].shape, &s)) return false;
    want wp = want_any(C_B);
    wp.exact = true;
    wp.dtype = KILN_BOOL;
    wp.bcast_with = &s;
    wp.cap = cap(p);
    int pr = operand(r, p, &wp, 60);
    if (pr < 0) return false;
    kiln_shape s2;
    if (!broadcast_shapes(&s, &p->nodes[pr].shape, &s2)) return false;
    node *n = add_node(p, N_SELECT, p->nodes[a].dtype, s2);
    if (!n) return false;
    use(p, n, pr);
    use(p, n, a);
    use(p, n, b);
    return true;
}

static bool gen_clamp(rng *r, prog *p) {
    int a = operand(r, p, &(want){.classes = C_ALL, .max_rank = 4, .dtype = KILN_DTYPE_COUNT}, 90);
    if (a < 0) return false;
    kiln_dtype dt = p->nodes[a].dtype;
    kiln_shape shape = p->nodes[a].shape;
    /* lo: a scalar constant, or (i1 = 1) a tensor of x's shape: a leaf or x itself. */
    int lo = -1;
    if (chance(r, 40)) {
        want w = want_any(C_ALL);
        w.dtype = dt;
        lo = pick(r, p, wants, &w);
        if (lo < 0 || !kiln_shape_equal(&p->nodes[lo].shape, &shape)) lo = leaf(r, p, dt, shape);
        if (lo < 0) return false;
    }
    node *n = add_node(p, N_CLAMP, dt, shape);
    if (!n) return false;
    n->value = rnd_scalar(r, dt);
    n->value2 = rnd_scalar(r, dt);
    if (n->value > n->value2 && chance(r, 80)) {
        double t = n->value;
        n->value = n->value2;
        n->value2 = t;
    }
    use(p, n, a);
    if (lo >= 0) {
        n->i1 = 1;
        use(p, n, lo);
    }
    return true;
}

static bool gen_convert(rng *r, prog *p) {
    kiln_dtype to = random_dtype(r);
    want w = want_any(C_ALL);
    w.exact = class_of(to) != C_F; /* float -> int or i1 is discontinuous */
    int a = operand(r, p, &w, 90);
    if (a < 0) return false;
    const node *x = &p->nodes[a];
    node *n = add_node(p, N_CONVERT, to, x->shape);
    if (!n) return false;
    use(p, n, a);
    return true;
}

static bool gen_bitcast(rng *r, prog *p) {
    want w = want_any(C_INT);
    w.dtype = chance(r, 50) ? KILN_I8 : KILN_U8;
    int a = operand(r, p, &w, 90);
    if (a < 0) return false;
    node *n = add_node(p, N_BITCAST, w.dtype == KILN_I8 ? KILN_U8 : KILN_I8, p->nodes[a].shape);
    if (!n) return false;
    use(p, n, a);
    return true;
}

static bool gen_bcast(rng *r, prog *p) {
    int a = operand(r, p, &(want){.classes = C_ALL, .max_rank = 4, .dtype = KILN_DTYPE_COUNT}, 90);
    if (a < 0) return false;
    const node *x = &p->nodes[a];
    int32_t rank = x->shape.rank + (int32_t)below(r, 4 - x->shape.rank + 1);
    /* Choose which target dims x's dims map to: increasing, or sometimes any order. */
    int64_t slots[4] = {0, 1, 2, 3};
    for (int32_t i = rank - 1; i > 0; i--) {
        int64_t j = below(r, i + 1), t = slots[i];
        slots[i] = slots[j];
        slots[j] = t;
    }
    kiln_dims dims = {.count = x->shape.rank};
    for (int32_t i = 0; i < x->shape.rank; i++)
        dims.v[i] = slots[i];
    if (chance(r, 75)) /* sorted */
        for (int32_t i = 1; i < dims.count; i++)
            for (int32_t j = i; j > 0 && dims.v[j - 1] > dims.v[j]; j--) {
                int64_t t = dims.v[j];
                dims.v[j] = dims.v[j - 1];
                dims.v[j - 1] = t;
            }
    kiln_shape t = {.rank = rank};
    for (int32_t i = 0; i < rank; i++)
        t.dims[i] = 1 + below(r, p->big ? 6 : 4);
    for (int32_t i = 0; i < x->shape.rank; i++) {
        int64_t d = x->shape.dims[i];
        if (d != 1)
            t.dims[dims.v[i]] = d;
        else if (chance(r, 50))
            t.dims[dims.v[i]] = 1;
    }
    if (numel(&t) > cap(p)) return false;
    node *n = add_node(p, N_BCAST, x->dtype, t);
    if (!n) return false;
    n->target = t;
    n->d1 = dims;
    use(p, n, a);
    return true;
}

static bool gen_reshape(rng *r, prog *p) {
    int a = operand(r, p, &(want){.classes = C_ALL, .max_rank = 4, .dtype = KILN_DTYPE_COUNT}, 90);
    if (a < 0) return false;
    const node *x = &p->nodes[a];
    int64_t left = numel(&x->shape);
    kiln_shape t = {.rank = 0};
    int32_t want_rank = 1 + (int32_t)below(r, 4);
    while (t.rank < want_rank - 1 && left > 1) {
        int64_t divs[64], nd = 0;
        for (int64_t d = 1; d <= left && nd < 64; d++)
            if (left % d == 0) divs[nd++] = d;
        int64_t d = divs[below(r, nd)];
        t.dims[t.rank++] = d;
        left /= d;
    }
    if (left > 1 || t.rank == 0 || chance(r, 30)) t.dims[t.rank++] = left;
    if (numel(&x->shape) == 1 && chance(r, 40)) t.rank = 0;
    node *n = add_node(p, N_RESHAPE, x->dtype, t);
    if (!n) return false;
    n->target = t;
    use(p, n, a);
    return true;
}

static bool gen_transpose(rng *r, prog *p) {
    int a = operand(
        r, p, &(want){.classes = C_ALL, .min_rank = 2, .max_rank = 4, .dtype = KILN_DTYPE_COUNT},
        90);
    if (a < 0) return false;
    const node *x = &p->nodes[a];
    kiln_dims perm = {.count = x->shape.rank};
    for (int32_t i = 0; i < perm.count; i++)
        perm.v[i] = i;
    for (int32_t i = perm.count - 1; i > 0; i--) {
        int64_t j = below(r, i + 1), t = perm.v[i];
        perm.v[i] = perm.v[j];
        perm.v[j] = t;
    }
    kiln_shape s = {.rank = perm.count};
    for (int32_t i = 0; i < perm.count; i++)
        s.dims[i] = x->shape.dims[perm.v[i]];
    node *n = add_node(p, N_TRANSPOSE, x->dtype, s);
    if (!n) return false;
    n->d1 = perm;
    use(p, n, a);
    return true;
}

static bool gen_slice(rng *r, prog *p) {
    int a = operand(
        r, p, &(want){.classes = C_ALL, .min_rank = 1, .max_rank = 4, .dtype = KILN_DTYPE_COUNT},
        90);
    if (a < 0) return false;
    const node *x = &p->nodes[a];
    int32_t rank = x->shape.rank;
    kiln_dims st = {.count = rank}, li = {.count = rank}, sd = {.count = rank};
    kiln_shape s = {.rank = rank};
    for (int32_t i = 0; i < rank; i++) {
        int64_t d = x->shape.dims[i];
        st.v[i] = below(r, d);
        li.v[i] = st.v[i] + 1 + below(r, d - st.v[i]);
        sd.v[i] = 1 + below(r, 3);
        s.dims[i] = (li.v[i] - st.v[i] + sd.v[i] - 1) / sd.v[i];
    }
    node *n = add_node(p, N_SLICE, x->dtype, s);
    if (!n) return false;
    n->d1 = st;
    n->d2 = li;
    n->d3 = sd;
    use(p, n, a);
    return true;
}

static bool gen_reverse(rng *r, prog *p) {
    int a = operand(
        r, p, &(want){.classes = C_ALL, .min_rank = 1, .max_rank = 4, .dtype = KILN_DTYPE_COUNT},
        90);
    if (a < 0) return false;
    const node *x = &p->nodes[a];
    kiln_dims dims = {.count = 0};
    for (int32_t i = 0; i < x->shape.rank; i++)
        if (chance(r, 50)) dims.v[dims.count++] = i;
    if (dims.count == 0) dims.v[dims.count++] = below(r, x->shape.rank);
    node *n = add_node(p, N_REVERSE, x->dtype, x->shape);
    if (!n) return false;
    n->d1 = dims;
    use(p, n, a);
    return true;
}

static bool gen_pad(rng *r, prog *p) {
    int a = operand(
        r, p, &(want){.classes = C_ALL, .min_rank = 1, .max_rank = 4, .dtype = KILN_DTYPE_COUNT},
        90);
    if (a < 0) return false;
    const node *x = &p->nodes[a];
    int32_t rank = x->shape.rank;
    kiln_dims lo = {.count = rank}, hi = {.count = rank}, in = {.count = rank};
    kiln_shape s = {.rank = rank};
    for (int32_t i = 0; i < rank; i++) {
        int64_t d = x->shape.dims[i];
        in.v[i] = chance(r, 25) ? below(r, 3) : 0;
        int64_t full = d + (d - 1) * in.v[i];
        lo.v[i] = below(r, 4) - 1;
        hi.v[i] = below(r, 4) - 1;
        if (full + lo.v[i] + hi.v[i] < 1) lo.v[i] = hi.v[i] = 0;
        s.dims[i] = full + lo.v[i] + hi.v[i];
    }
    if (numel(&s) > cap(p)) return false;
    node *n = add_node(p, N_PAD, x->dtype, s);
    if (!n) return false;
    n->d1 = lo;
    n->d2 = hi;
    n->d3 = in;
    n->value = rnd_scalar(r, x->dtype);
    use(p, n, a);
    return true;
}

static bool gen_concat(rng *r, prog *p) {
    int a = operand(
        r, p, &(want){.classes = C_ALL, .min_rank = 1, .max_rank = 4, .dtype = KILN_DTYPE_COUNT},
        90);
    if (a < 0) return false;
    kiln_dtype dt = p->nodes[a].dtype;
    kiln_shape s = p->nodes[a].shape;
    int64_t axis = below(r, s.rank);
    int parts[3] = {a, -1, -1}, np = 2 + (int)below(r, 2);
    for (int i = 1; i < np; i++) {
        if (chance(r, 30)) {
            parts[i] = a; /* the same value twice */
        } else {
            kiln_shape t = p->nodes[a].shape;
            t.dims[axis] = 1 + below(r, 3);
            parts[i] = leaf(r, p, dt, t);
            if (parts[i] < 0) return false;
        }
        s.dims[axis] += p->nodes[parts[i]].shape.dims[axis];
    }
    if (numel(&s) > cap(p)) return false;
    if (chance(r, 50)) { /* the traced value need not come first */
        int t = parts[0];
        parts[0] = parts[np - 1];
        parts[np - 1] = t;
    }
    node *n = add_node(p, N_CONCAT, dt, s);
    if (!n) return false;
    n->i1 = axis;
    for (int i = 0; i < np; i++)
        use(p, n, parts[i]);
    return true;
}

static bool gen_reduce(rng *r, prog *p) {
    int kind = (int)below(r, 5);
    int classes = kind == R_SUM ? C_ALL : kind == R_REDUCE_ADD ? C_NUM : C_ALL;
    int a = operand(
        r, p, &(want){.classes = classes, .min_rank = 1, .max_rank = 4, .dtype = KILN_DTYPE_COUNT},
        90);
    if (a < 0) return false;
    const node *x = &p->nodes[a];
    int32_t rank = x->shape.rank;
    kiln_dims axes = {.count = 0};
    for (int32_t i = 0; i < rank; i++)
        if (chance(r, 50)) axes.v[axes.count++] = i;
    if (axes.count == 0) axes.v[axes.count++] = below(r, rank);
    bool keep = kind <= R_MIN && chance(r, 40);
    kiln_shape s = {.rank = 0};
    int64_t terms = 1;
    for (int32_t i = 0, k = 0; i < rank; i++) {
        bool reduced = k < axes.count && axes.v[k] == i;
        if (reduced) {
            k++;
            terms *= x->shape.dims[i];
            if (keep) s.dims[s.rank++] = 1;
        } else {
            s.dims[s.rank++] = x->shape.dims[i];
        }
    }
    kiln_dtype dt = x->dtype;
    if (kind == R_SUM && dt == KILN_BOOL) dt = KILN_I64;
    node *n = add_node(p, N_REDUCE, dt, s);
    if (!n) return false;
    n->op = kind;
    n->d1 = axes;
    n->i1 = keep;
    n->terms = terms + (kind >= R_REDUCE_ADD ? 1 : 0);
    n->value = rnd_scalar(r, x->dtype);
    if (kind == R_REDUCE_MAX && kiln_dtype_is_float(dt) && chance(r, 50)) n->value = -INFINITY;
    use(p, n, a);
    if ((kind == R_SUM || kind == R_REDUCE_ADD) && kiln_dtype_is_float(dt) && terms > 1)
        n->approx = n->own_approx = true;
    return true;
}

static kiln_dtype widened(rng *r, kiln_dtype dt) {
    if (!chance(r, 25)) return KILN_DTYPE_COUNT;
    if (kiln_dtype_is_float(dt)) return chance(r, 50) ? KILN_F32 : KILN_F64;
    return chance(r, 50) ? KILN_I32 : KILN_I64;
}

static bool gen_dot(rng *r, prog *p) {
    int a = operand(
        r, p, &(want){.classes = C_NUM, .min_rank = 1, .max_rank = 3, .dtype = KILN_DTYPE_COUNT},
        90);
    if (a < 0) return false;
    const node *x = &p->nodes[a];
    int32_t rank = x->shape.rank;
    /* Each lhs dim is batch (b), contracting (c) or free (f). */
    char role[4];
    int nc = 0;
    for (int32_t i = 0; i < rank; i++) {
        int64_t t = below(r, 10);
        role[i] = t < 5 ? 'c' : t < 7 ? 'b' : 'f';
        nc += role[i] == 'c';
    }
    if (nc == 0 && chance(r, 70)) role[0] = 'c'; /* else sometimes an outer product */
    /* rhs dims: the same batch and contracting dims, and 0..2 free dims, in random order. */
    int64_t rdims[6], rn = 0;
    int32_t rrole_src[6]; /* lhs dim for b/c; -1 for free */
    for (int32_t i = 0; i < rank; i++)
        if (role[i] != 'f') {
            rrole_src[rn] = i;
            rdims[rn++] = x->shape.dims[i];
        }
    int64_t nfree = below(r, 3);
    for (int64_t i = 0; i < nfree && rn < 4; i++) {
        rrole_src[rn] = -1;
        rdims[rn++] = 1 + below(r, p->big ? 24 : 5);
    }
    if (rn == 0) return false;
    for (int64_t i = rn - 1; i > 0; i--) {
        int64_t j = below(r, i + 1);
        int64_t td = rdims[i];
        rdims[i] = rdims[j];
        rdims[j] = td;
        int32_t ts = rrole_src[i];
        rrole_src[i] = rrole_src[j];
        rrole_src[j] = ts;
    }
    kiln_dot_params dp = {0};
    kiln_shape rs = {.rank = (int32_t)rn};
    for (int32_t i = 0; i < rs.rank; i++)
        rs.dims[i] = rdims[i];
    /* Batching dims pair up in lhs order; contracting dims too. */
    int64_t terms = 1;
    for (int32_t i = 0; i < rank; i++) {
        if (role[i] == 'f') continue;
        int32_t j = 0;
        while (rrole_src[j] != i)
            j++;
        if (role[i] == 'b') {
            dp.lhs_batching_dims.v[dp.lhs_batching_dims.count++] = i;
            dp.rhs_batching_dims.v[dp.rhs_batching_dims.count++] = j;
        } else {
            dp.lhs_contracting_dims.v[dp.lhs_contracting_dims.count++] = i;
            dp.rhs_contracting_dims.v[dp.rhs_contracting_dims.count++] = j;
            terms *= x->shape.dims[i];
        }
    }
    kiln_shape s = {.rank = 0};
    for (int32_t i = 0; i < dp.lhs_batching_dims.count; i++)
        s.dims[s.rank++] = x->shape.dims[dp.lhs_batching_dims.v[i]];
    for (int32_t i = 0; i < rank; i++)
        if (role[i] == 'f') s.dims[s.rank++] = x->shape.dims[i];
    for (int32_t i = 0; i < rs.rank; i++)
        if (rrole_src[i] < 0) s.dims[s.rank++] = rs.dims[i];
    if (numel(&s) > cap(p) || s.rank > 4) return false;
    kiln_dtype dt = x->dtype;
    int b = leaf(r, p, dt, rs);
    if (b < 0) return false;
    kiln_dtype res = widened(r, dt);
    node *n = add_node(p, N_DOT, res == KILN_DTYPE_COUNT ? dt : res, s);
    if (!n) return false;
    n->i1 = res;
    n->dot = dp;
    n->terms = terms;
    use(p, n, a);
    use(p, n, b);
    if (kiln_dtype_is_float(n->dtype) && terms > 1) n->approx = n->own_approx = true;
    if (chance(r, 30)) { /* the traced value as rhs: swap the operands and the params */
        n->a[0] = b;
        n->a[1] = a;
        kiln_dot_params q = {dp.rhs_batching_dims, dp.lhs_batching_dims, dp.rhs_contracting_dims,
                             dp.lhs_contracting_dims};
        n->dot = q;
        /* Result: batch, then the (new) lhs free dims, then the rhs free dims. */
        kiln_shape s2 = {.rank = 0};
        for (int32_t i = 0; i < dp.lhs_batching_dims.count; i++)
            s2.dims[s2.rank++] = x->shape.dims[dp.lhs_batching_dims.v[i]];
        for (int32_t i = 0; i < rs.rank; i++)
            if (rrole_src[i] < 0) s2.dims[s2.rank++] = rs.dims[i];
        for (int32_t i = 0; i < rank; i++)
            if (role[i] == 'f') s2.dims[s2.rank++] = x->shape.dims[i];
        n->shape = s2;
    }
    return true;
}

/* A random permutation of 0..n-1, or the identity. */
static void layout(rng *r, int32_t n, bool shuffle, int64_t *perm) {
    for (int32_t i = 0; i < n; i++)
        perm[i] = i;
    for (int32_t i = n - 1; shuffle && i > 0; i--) {
        int64_t j = below(r, i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* A small convolution of an existing rank-3/4 value with a new kernel: NCHW/OIHW/NCHW, or
 * (half the time) every operand's dimension roles in a random order; strides, padding,
 * dilations and feature groups at random. */
static bool gen_conv(rng *r, prog *p) {
    int a = operand(
        r, p,
        &(want){.classes = C_F | C_SI, .min_rank = 3, .max_rank = 4, .dtype = KILN_DTYPE_COUNT},
        90);
    if (a < 0) return false;
    const node *x = &p->nodes[a];
    if (x->dtype == KILN_I8 || x->dtype == KILN_I64) return false;
    int32_t rank = x->shape.rank, sp = rank - 2;
    bool shuffle = chance(r, 50);
    int64_t in[4], ker[4], out[4]; /* batch/out-feature, feature/in-feature, spatial... */
    layout(r, rank, shuffle, in);
    layout(r, rank, shuffle, ker);
    layout(r, rank, shuffle, out);
    kiln_conv_params cp = kiln_conv_params_nchw(sp);
    cp.input_batch_dimension = in[0];
    cp.input_feature_dimension = in[1];
    cp.kernel_output_feature_dimension = ker[0];
    cp.kernel_input_feature_dimension = ker[1];
    cp.output_batch_dimension = out[0];
    cp.output_feature_dimension = out[1];
    int64_t c = x->shape.dims[in[1]], g = 1;
    if (c > 1 && chance(r, 30)) {
        for (int64_t d = c; d >= 1; d--)
            if (c % d == 0 && chance(r, 50)) {
                g = d;
                break;
            }
    }
    cp.feature_group_count = g;
    int64_t o = g * (1 + below(r, 2));
    kiln_shape ks = {.rank = rank}, s = {.rank = rank};
    ks.dims[ker[0]] = o;
    ks.dims[ker[1]] = c / g;
    s.dims[out[0]] = x->shape.dims[in[0]];
    s.dims[out[1]] = o;
    int64_t terms = c / g;
    for (int32_t i = 0; i < sp; i++) {
        cp.input_spatial_dimensions.v[i] = in[2 + i];
        cp.kernel_spatial_dimensions.v[i] = ker[2 + i];
        cp.output_spatial_dimensions.v[i] = out[2 + i];
        int64_t size = x->shape.dims[in[2 + i]], k = 1 + below(r, 3);
        ks.dims[ker[2 + i]] = k;
        cp.window_strides.v[i] = 1 + below(r, 2);
        cp.padding_low.v[i] = below(r, 2);
        cp.padding_high.v[i] = below(r, 2);
        cp.rhs_dilation.v[i] = 1 + (chance(r, 20) ? 1 : 0);
        cp.lhs_dilation.v[i] = 1 + (chance(r, 10) ? 1 : 0);
        int64_t padded =
            cp.padding_low.v[i] + (size - 1) * cp.lhs_dilation.v[i] + 1 + cp.padding_high.v[i];
        int64_t win = (k - 1) * cp.rhs_dilation.v[i] + 1;
        if (padded < win) return false;
        s.dims[out[2 + i]] = (padded - win) / cp.window_strides.v[i] + 1;
        terms *= k;
    }
    cp.input_spatial_dimensions.count = cp.kernel_spatial_dimensions.count = sp;
    cp.output_spatial_dimensions.count = sp;
    cp.window_strides.count = cp.padding_low.count = cp.padding_high.count = sp;
    cp.rhs_dilation.count = cp.lhs_dilation.count = sp;
    if (numel(&s) > cap(p)) return false;
    int b = leaf(r, p, x->dtype, ks);
    if (b < 0) return false;
    node *n = add_node(p, N_CONV, x->dtype, s);
    if (!n) return false;
    n->conv = cp;
    n->terms = terms;
    n->i1 = KILN_DTYPE_COUNT;
    use(p, n, a);
    use(p, n, b);
    if (kiln_dtype_is_float(n->dtype) && terms > 1) n->approx = n->own_approx = true;
    return true;
}

/* The library-call epilogues fusion looks for: dot_general or convolution, plus a bias
 * broadcast along one dimension (the output feature dimension for a convolution), then
 * maybe an activation (relu as maximum with 0, tanh or logistic). */
static bool gen_epilogue(rng *r, prog *p) {
    bool conv = chance(r, 40);
    if (!(conv ? gen_conv(r, p) : gen_dot(r, p))) return false;
    int l = p->n - 1;
    const node *c = &p->nodes[l];
    if (!kiln_dtype_is_float(c->dtype) || c->shape.rank == 0) return true;
    kiln_shape bs = c->shape;
    int32_t keep = conv ? (int32_t)c->conv.output_feature_dimension : (int32_t)below(r, bs.rank);
    for (int32_t i = 0; i < bs.rank; i++)
        if (i != keep) bs.dims[i] = 1;
    int bias = leaf(r, p, c->dtype, bs);
    if (bias < 0) return false;
    node *n = add_node(p, N_BINARY, p->nodes[l].dtype, p->nodes[l].shape);
    if (!n) return false;
    n->op = binary_index("add");
    use(p, n, l);
    use(p, n, bias);
    int sum = p->n - 1;
    int64_t act = below(r, 4);
    if (act == 0) return true;
    if (act == 1) {
        int zero = splat_leaf(r, p, p->nodes[sum].dtype, (kiln_shape){.rank = 0});
        if (zero < 0) return false;
        p->nodes[zero].value = 0.0;
        n = add_node(p, N_BINARY, p->nodes[sum].dtype, p->nodes[sum].shape);
        if (!n) return false;
        n->op = binary_index("maximum");
        use(p, n, sum);
        use(p, n, zero);
        return true;
    }
    n = add_node(p, N_UNARY, p->nodes[sum].dtype, p->nodes[sum].shape);
    if (!n) return false;
    n->op = unary_index(act == 2 ? "tanh" : "logistic");
    use(p, n, sum);
    n->approx = n->own_approx = true;
    return true;
}

typedef bool (*gen_fn)(rng *, prog *);

static const struct {
    gen_fn fn;
    int weight;
} gens[] = {
    {gen_unary, 16},  {gen_binary, 24}, {gen_compare, 5},  {gen_select, 4},  {gen_clamp, 3},
    {gen_convert, 6}, {gen_bitcast, 1}, {gen_bcast, 6},    {gen_reshape, 5}, {gen_transpose, 5},
    {gen_slice, 5},   {gen_reverse, 3}, {gen_pad, 3},      {gen_concat, 3},  {gen_reduce, 7},
    {gen_dot, 4},     {gen_conv, 2},    {gen_epilogue, 3},
};
#define N_GENS ((int)(sizeof gens / sizeof gens[0]))

/* Program `seed`; one in ten is a larger one (and all of them with `big`). */
static void gen_program(prog *p, uint64_t seed, bool big) {
    big = big || seed % 10 == 9;
    memset(p, 0, sizeof *p);
    p->seed = seed;
    p->big = big;
    p->threads_test = false;
    rng r = {seed};
    int total = 0;
    for (int i = 0; i < N_GENS; i++)
        total += gens[i].weight;
    int target = 1 + (int)below(&r, big ? 20 : MAX_OPS);
    for (int i = 0, n_in = 1 + (int)below(&r, 3); i < n_in; i++)
        leaf(&r, p, random_dtype(&r), random_shape(&r, p));
    int made = 0;
    for (int tries = 0; made < target && tries < 400 && p->n < MAX_NODES - 8; tries++) {
        int w = (int)below(&r, total), g = 0;
        while (w >= gens[g].weight)
            w -= gens[g++].weight;
        int before = p->n;
        if (gens[g].fn(&r, p) && p->nodes[p->n - 1].dep) {
            made++;
        } else {
            /* Undo: drop the nodes this attempt added, and their uses. */
            for (int i = p->n - 1; i >= before; i--) {
                node *n = &p->nodes[i];
                for (int k = 0; k < n->n_a; k++)
                    p->nodes[n->a[k]].users--;
                if (n->kind == N_INPUT) p->n_in--;
            }
            p->n = before;
        }
    }
    /* Results: the traced sinks (at most MAX_OUT, the latest first), else the last traced
     * node. */
    for (int i = p->n - 1; i >= 0 && p->n_out < MAX_OUT; i--)
        if (p->nodes[i].dep && p->nodes[i].users == 0 && p->nodes[i].kind != N_INPUT)
            p->out_node[p->n_out++] = i;
    if (p->n_out == 0)
        for (int i = p->n - 1; i >= 0; i--)
            if (p->nodes[i].dep) {
                p->out_node[p->n_out++] = i;
                break;
            }
}

/* ---- data --------------------------------------------------------------------------------- */

static void fill_random(uint64_t seed, kiln_dtype dt, int64_t n, unsigned char *out) {
    rng r = {seed};
    size_t w = kiln_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
        unsigned char *e = out + (size_t)i * w;
        if (kiln_dtype_is_float(dt)) {
            static const double specials[] = {0.0,   -0.0, INFINITY, -INFINITY, NAN,
                                              1e-40, 1.0,  0.5,      -2.0};
            double v = chance(&r, 6) ? specials[below(&r, 9)] : uniform(&r, -4, 4);
            if (dt == KILN_F64) {
                memcpy(e, &v, 8);
            } else if (dt == KILN_F32) {
                float f = (float)v;
                memcpy(e, &f, 4);
            } else {
                uint16_t h =
                    dt == KILN_F16 ? kiln_f32_to_f16((float)v) : kiln_f32_to_bf16((float)v);
                memcpy(e, &h, 2);
            }
        } else {
            uint64_t v = next_u64(&r);
            if (dt == KILN_BOOL)
                v &= 1;
            else if (chance(&r, 50))
                v = (uint64_t)(below(&r, 21) - 10); /* small, for / % << */
            memcpy(e, &v, w);                       /* little-endian: the low bytes */
        }
    }
}

static kiln_tensor *random_tensor(kiln_ctx *cx, uint64_t seed, kiln_dtype dt, kiln_shape s) {
    int64_t n = numel(&s);
    size_t bytes = (size_t)n * kiln_dtype_size(dt);
    unsigned char *buf = malloc(bytes ? bytes : 1);
    fill_random(seed, dt, n, buf);
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, s, buf, bytes);
    free(buf);
    return t;
}

static double element(const kiln_tensor *t, int64_t i) {
    const unsigned char *p = kiln_tensor_data(t);
    kiln_dtype dt = kiln_tensor_dtype(t);
    size_t w = kiln_dtype_size(dt);
    p += (size_t)i * w;
    switch (dt) {
    case KILN_F64: {
        double v;
        memcpy(&v, p, 8);
        return v;
    }
    case KILN_F32: {
        float v;
        memcpy(&v, p, 4);
        return v;
    }
    case KILN_F16:
    case KILN_BF16: {
        uint16_t h;
        memcpy(&h, p, 2);
        return dt == KILN_F16 ? kiln_f16_to_f32(h) : kiln_bf16_to_f32(h);
    }
    case KILN_BOOL:
    case KILN_U8: return p[0];
    case KILN_I8: return (int8_t)p[0];
    case KILN_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case KILN_I64: {
        int64_t v;
        memcpy(&v, p, 8);
        return (double)v;
    }
    default: return 0;
    }
}

/* ---- running a program -------------------------------------------------------------------- */

typedef struct run_env {
    const prog *p;
    kiln_tensor **keep; /* eager: every node's value, retained (NULL: not kept) */
} run_env;

static kiln_status run_prog(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    const run_env *env = user;
    const prog *p = env->p;
    kiln_tensor *v[MAX_NODES];
    for (int i = 0; i < p->n; i++) {
        const node *n = &p->nodes[i];
        kiln_tensor *a = n->n_a > 0 ? v[n->a[0]] : NULL, *b = n->n_a > 1 ? v[n->a[1]] : NULL;
        kiln_tensor *t = NULL;
        switch (n->kind) {
        case N_INPUT: t = in[n->i1]; break;
        case N_CONST:
            t = n->i1 ? kiln_full(cx, n->dtype, n->shape, n->value)
                      : random_tensor(cx, n->seed, n->dtype, n->shape);
            break;
        case N_IOTA: t = kiln_iota(cx, n->dtype, n->shape, (int32_t)n->i1); break;
        case N_UNARY: t = unary_ops[n->op].fn(cx, a); break;
        case N_BINARY: t = binary_ops[n->op].fn(cx, a, b); break;
        case N_COMPARE:
            t = kiln_compare(cx, a, b, (kiln_compare_direction)n->op, KILN_CMP_DEFAULT);
            break;
        case N_SELECT: t = kiln_select(cx, a, b, v[n->a[2]]); break;
        case N_CLAMP:
            t = kiln_clamp(cx, n->i1 ? b : kiln_scalar(cx, n->value, n->dtype), a,
                           kiln_scalar(cx, n->value2, n->dtype));
            break;
        case N_CONVERT: t = kiln_convert(cx, a, n->dtype); break;
        case N_BITCAST: t = kiln_bitcast_convert(cx, a, n->dtype); break;
        case N_BCAST: t = kiln_broadcast_in_dim(cx, a, n->target, n->d1); break;
        case N_RESHAPE: t = kiln_reshape(cx, a, n->target); break;
        case N_TRANSPOSE: t = kiln_transpose(cx, a, n->d1); break;
        case N_SLICE: t = kiln_slice(cx, a, n->d1, n->d2, n->d3); break;
        case N_REVERSE: t = kiln_reverse(cx, a, n->d1); break;
        case N_PAD:
            t = kiln_pad(cx, a, kiln_scalar(cx, n->value, n->dtype), n->d1, n->d2, n->d3);
            break;
        case N_CONCAT: {
            kiln_tensor *xs[3];
            for (int k = 0; k < n->n_a; k++)
                xs[k] = v[n->a[k]];
            t = kiln_concatenate(cx, xs, n->n_a, n->i1);
            break;
        }
        case N_REDUCE:
            switch (n->op) {
            case R_SUM: t = kiln_sum(cx, a, n->d1, n->i1 != 0); break;
            case R_MAX: t = kiln_max(cx, a, n->d1, n->i1 != 0); break;
            case R_MIN: t = kiln_min(cx, a, n->d1, n->i1 != 0); break;
            default: {
                kiln_tensor *init = kiln_scalar(cx, n->value, n->dtype);
                kiln_reduce(cx, &a, &init, 1, n->d1,
                            n->op == R_REDUCE_ADD ? kiln_region_add() : kiln_region_maximum(), &t);
                break;
            }
            }
            break;
        case N_DOT: t = kiln_dot_general(cx, a, b, &n->dot, (kiln_dtype)n->i1); break;
        case N_CONV: t = kiln_convolution(cx, a, b, &n->conv, KILN_DTYPE_COUNT); break;
        }
        if (!t) return kiln_ctx_status(cx) != KILN_OK ? kiln_ctx_status(cx) : KILN_INTERNAL;
        v[i] = t;
        if (env->keep) env->keep[i] = kiln_tensor_retain(t);
    }
    for (int i = 0; i < p->n_out; i++)
        out[i] = v[p->out_node[i]];
    return kiln_ctx_status(cx);
}

/* ---- describing a program (printed with a failure) ----------------------------------------- */

static void describe(const prog *p, FILE *f) {
    fprintf(f, "program seed %llu (%d nodes, %d inputs, %d results)\n", (unsigned long long)p->seed,
            p->n, p->n_in, p->n_out);
    for (int i = 0; i < p->n; i++) {
        const node *n = &p->nodes[i];
        char sh[128];
        kiln_shape_format(&n->shape, sh, sizeof sh);
        fprintf(f, "  v%d = %s", i, kind_names[n->kind]);
        if (n->kind == N_UNARY) fprintf(f, ".%s", unary_ops[n->op].name);
        if (n->kind == N_BINARY) fprintf(f, ".%s", binary_ops[n->op].name);
        for (int k = 0; k < n->n_a; k++)
            fprintf(f, " v%d", n->a[k]);
        fprintf(f, " : %s%s%s", kiln_dtype_name(n->dtype), sh, n->approx ? " (inexact)" : "");
        if (n->kind == N_INPUT || (n->kind == N_CONST && !n->i1))
            fprintf(f, " (data seed %llu)", (unsigned long long)n->seed);
        fprintf(f, "\n");
    }
    fprintf(f, "  results:");
    for (int i = 0; i < p->n_out; i++)
        fprintf(f, " v%d", p->out_node[i]);
    fprintf(f, "\n");
}

/* ---- error bounds ------------------------------------------------------------------------- */

static double unit_roundoff(kiln_dtype dt) {
    switch (dt) {
    case KILN_F64: return 0x1p-53;
    case KILN_F32: return 0x1p-24;
    case KILN_F16: return 0x1p-11;
    case KILN_BF16: return 0x1p-8;
    default: return 0;
    }
}

static double max_finite(kiln_dtype dt) {
    switch (dt) {
    case KILN_F64: return DBL_MAX;
    case KILN_F32: return FLT_MAX;
    case KILN_F16: return 65504.0;
    case KILN_BF16: return 3.3895313892515355e38;
    default: return 0;
    }
}

/* Largest finite |element| of each node's eager value. */
static void magnitudes(const prog *p, kiln_tensor *const *vals, double *mag) {
    for (int i = 0; i < p->n; i++) {
        double m = 0;
        int64_t n = kiln_tensor_numel(vals[i]);
        for (int64_t k = 0; k < n; k++) {
            double x = fabs(element(vals[i], k));
            if (isfinite(x) && x > m) m = x;
        }
        mag[i] = m;
    }
}

/* The forward error bound E of every node (the header comment). */
static void error_bounds(const prog *p, const double *mag, double *err) {
    for (int i = 0; i < p->n; i++) {
        const node *n = &p->nodes[i];
        double ea = n->n_a > 0 ? err[n->a[0]] : 0, eb = n->n_a > 1 ? err[n->a[1]] : 0;
        double ma = n->n_a > 0 ? mag[n->a[0]] : 0, mb = n->n_a > 1 ? mag[n->a[1]] : 0;
        double u = unit_roundoff(n->dtype), m = mag[i], e = 0;
        if (!kiln_dtype_is_float(n->dtype) || !n->approx) {
            err[i] = 0;
            continue;
        }
        switch (n->kind) {
        case N_UNARY: {
            const unary_op *op = &unary_ops[n->op];
            e = op->exp_like ? ea * (m + 1) : ea;
            if (op->approx) e += 4 * u * m;
            break;
        }
        case N_BINARY:
            switch (binary_ops[n->op].rule) {
            case B_ADD: e = ea + eb + u * m; break;
            case B_MUL: e = ea * mb + eb * ma + ea * eb + u * m; break;
            case B_MAXMIN: e = fmax(ea, eb); break;
            default: e = 4 * u * m; break; /* exact operands */
            }
            break;
        case N_SELECT: e = fmax(eb, err[n->a[2]]); break;
        case N_CONCAT:
        case N_CLAMP:
            for (int k = 0; k < n->n_a; k++)
                e = fmax(e, err[n->a[k]]);
            break;
        case N_CONVERT: e = ea + u * m; break;
        case N_REDUCE: {
            double t = (double)n->terms;
            if (n->op == R_SUM || n->op == R_REDUCE_ADD)
                e = t * ea + (t + 1) * u * t * fmax(ma, fabs(n->value));
            else
                e = ea;
            break;
        }
        case N_DOT:
        case N_CONV: {
            double t = (double)n->terms;
            e = t * (ea * mb + eb * ma) + (t + 1) * u * t * ma * mb;
            break;
        }
        default: e = ea; break; /* movement, clamp */
        }
        err[i] = e;
    }
}

/* ---- comparing ---------------------------------------------------------------------------- */

static void format_index(const kiln_shape *s, int64_t flat, char *buf, size_t size) {
    int64_t idx[KILN_MAX_RANK];
    for (int32_t d = s->rank - 1; d >= 0; d--) {
        idx[d] = s->dims[d] ? flat % s->dims[d] : 0;
        flat = s->dims[d] ? flat / s->dims[d] : 0;
    }
    size_t at = 0;
    at += (size_t)snprintf(buf + at, size - at, "[");
    for (int32_t d = 0; d < s->rank && at < size; d++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", d ? ", " : "", (long long)idx[d]);
    if (at < size) snprintf(buf + at, size - at, "]");
}

/* Whether got matches ref within `bound` (0: bitwise, NaNs alike). On a mismatch writes
 * what differs to why. */
static bool same(const kiln_tensor *ref, const kiln_tensor *got, double bound, char *why,
                 size_t size) {
    kiln_dtype dt = kiln_tensor_dtype(ref);
    if (kiln_tensor_dtype(got) != dt ||
        !kiln_shape_equal(kiln_tensor_shape(got), kiln_tensor_shape(ref))) {
        char a[128], b[128];
        kiln_shape_format(kiln_tensor_shape(ref), a, sizeof a);
        kiln_shape_format(kiln_tensor_shape(got), b, sizeof b);
        snprintf(why, size, "type %s%s, expected %s%s", kiln_dtype_name(kiln_tensor_dtype(got)), b,
                 kiln_dtype_name(dt), a);
        return false;
    }
    int64_t n = kiln_tensor_numel(ref);
    size_t w = kiln_dtype_size(dt);
    const unsigned char *pa = kiln_tensor_data(ref), *pb = kiln_tensor_data(got);
    bool fl = kiln_dtype_is_float(dt);
    for (int64_t i = 0; i < n; i++) {
        bool ok;
        double x = element(ref, i), y = element(got, i);
        if (!fl) {
            ok = memcmp(pa + (size_t)i * w, pb + (size_t)i * w, w) == 0;
        } else if (isnan(x) || isnan(y)) {
            ok = isnan(x) && isnan(y);
        } else if (bound == 0) {
            ok = memcmp(pa + (size_t)i * w, pb + (size_t)i * w, w) == 0;
        } else if (isinf(x) || isinf(y)) {
            double big = max_finite(dt) / 2;
            ok = x == y || (signbit(x) == signbit(y) && fabs(x) > big && fabs(y) > big);
        } else {
            ok = fabs(x - y) <= bound;
        }
        if (!ok) {
            char ix[160];
            format_index(kiln_tensor_shape(ref), i, ix, sizeof ix);
            uint64_t bx = 0, by = 0;
            memcpy(&bx, pa + (size_t)i * w, w);
            memcpy(&by, pb + (size_t)i * w, w);
            snprintf(why, size,
                     "element %s (flat %lld): got %.17g (bits 0x%llx), expected %.17g (bits 0x%llx)"
                     "; allowed error %.3g",
                     ix, (long long)i, y, (unsigned long long)by, x, (unsigned long long)bx, bound);
            return false;
        }
    }
    return true;
}

/* ---- one program, every variant ---------------------------------------------------------- */

typedef struct variant {
    const char *name;
    bool donate, no_passes;
    int threads;         /* 0: leave the count alone */
    bool reparse;        /* compile the module read back from its printed text */
    const char *backend; /* NULL: the default ("cpu") */
} variant;

static bool verbose(void) {
    const char *v = getenv("KILN_RPG_VERBOSE");
    return v && *v && strcmp(v, "0") != 0;
}

/* While minimising, the failing candidates are not reported. */
static bool quiet;

static void report(kiln_ctx *cx, const prog *p, const char *text, const char *what) {
    if (quiet) return;
    fprintf(stderr, "\n==== random program %s: %s\n",
            p->minimised ? "mismatch, minimised" : "mismatch", what);
    describe(p, stderr);
    fprintf(stderr, "lowered module:\n%s\n", text ? text : "(not lowered)");
    fprintf(stderr,
            "reproduce: KILN_RPG_SEED=%llu KILN_RPG_COUNT=1 ./tests/test_runtime --filter "
            "'random_programs/%s'\n",
            (unsigned long long)p->seed, p->threads_test ? "threads" : "batch_0");
    if (p->minimised)
        fprintf(stderr, "(the seed reruns the whole program; the module above is the cut-down "
                        "one, also runnable with `kiln run`)\n");
    (void)cx;
}

/* Tracing runs kiln_iota eagerly (it has no traced operand), so the module holds a
 * constant; turning every constant that equals an iota back into a stablehlo.iota op lets
 * compiled iotas (fused producers, kernels) run too. */
static void iotaize(kiln_ctx *cx, kiln_module *m) {
    for (kiln__ir_op *op = m->funcs[0]->body->first; op; op = op->next) {
        const kiln_tensor *c = op->kind == KILN_OP_CONSTANT ? op->attrs->u.constant : NULL;
        if (!c || kiln_tensor_rank(c) < 1 || kiln_tensor_dtype(c) == KILN_BOOL) continue;
        for (int32_t d = 0; d < kiln_tensor_rank(c); d++) {
            kiln_scope_begin(cx);
            kiln_tensor *t = kiln_iota(cx, kiln_tensor_dtype(c), *kiln_tensor_shape(c), d);
            bool eq =
                t && memcmp(kiln_tensor_data(t), kiln_tensor_data(c), kiln_tensor_nbytes(c)) == 0;
            kiln_scope_end(cx);
            if (!eq) continue;
            /* The tensor stays alive in the module's list of constants. */
            kiln_dtype dtype = kiln_tensor_dtype(c);
            kiln_shape shape = *kiln_tensor_shape(c);
            kiln__attrs *a = kiln__op_set_kind(m, op, KILN_OP_IOTA);
            if (!a) break; /* out of memory: keep it */
            a->u.iota.dtype = dtype;
            a->u.iota.shape = shape;
            a->u.iota.dimension = d;
            break;
        }
    }
}

/* Convolutions compiled with a fused bias/ReLU epilogue, in this test process (so that a
 * batch can tell that the generator's epilogue patterns reach that path). */
static long conv_epilogues_seen;

/* Lowers, compiles and calls p on copies of `in` (copies, because donation kills them). */
static bool run_compiled(kiln_ctx *cx, const prog *p, kiln_tensor *const *in, const variant *v,
                         kiln_tensor **out, char **text, char *why, size_t size) {
    run_env env = {p, NULL};
    kiln_region fn = {run_prog, &env};
    kiln_arg_spec specs[MAX_IN];
    for (int i = 0; i < p->n_in; i++) {
        const node *n = &p->nodes[p->in_node[i]];
        specs[i] = (kiln_arg_spec){.dtype = n->dtype, .shape = n->shape};
    }
    kiln_lower_options lo = kiln_lower_options_default();
    lo.donate_all = v->donate;
    kiln_module *m = NULL;
    if (kiln_lower(cx, &fn, specs, p->n_in, p->n_out, &lo, &m) != KILN_OK) {
        snprintf(why, size, "%s: lower: %s", v->name, kiln_ctx_error_message(cx));
        return false;
    }
    iotaize(cx, m);
    if (text && !*text) *text = kiln_module_to_string(cx, m);
    if (v->reparse) {
        kiln_module *back = NULL;
        kiln_status ps =
            *text ? kiln_module_parse(cx, *text, strlen(*text), NULL, &back) : kiln_ctx_status(cx);
        kiln_module_release(m);
        if (ps != KILN_OK) {
            snprintf(why, size, "%s: parse of the printed module: %s", v->name,
                     kiln_ctx_error_message(cx));
            return false;
        }
        m = back;
    }
    kiln_compile_options co = kiln_compile_options_default();
    co.backend = v->backend;
    co.disable_passes = v->no_passes;
    /* Without passes, also without folding: every op then runs at call time. */
    co.disable_constant_folding = v->no_passes;
    kiln_exe *exe = NULL;
    kiln_status s = kiln_compile(cx, m, &co, &exe);
    kiln_module_release(m);
    if (s != KILN_OK) {
        snprintf(why, size, "%s: compile: %s", v->name, kiln_ctx_error_message(cx));
        return false;
    }
    kiln_exe_info info;
    if (kiln_exe_info_get(cx, exe, &info) == KILN_OK) conv_epilogues_seen += info.n_conv_epilogues;
    kiln_tensor *args[MAX_IN];
    for (int i = 0; i < p->n_in; i++)
        args[i] = kiln_tensor_from_host(cx, kiln_tensor_dtype(in[i]), *kiln_tensor_shape(in[i]),
                                        kiln_tensor_data(in[i]), kiln_tensor_nbytes(in[i]));
    if (v->threads) kiln__threads_set_count(v->threads);
    s = kiln_exe_call(cx, exe, args, out);
    if (v->threads) kiln__threads_set_count(0);
    kiln_exe_release(exe);
    if (s != KILN_OK) {
        snprintf(why, size, "%s: call: %s", v->name, kiln_ctx_error_message(cx));
        return false;
    }
    return true;
}

/* Runs program p eagerly and in every variant; false (after printing a report) on a
 * mismatch. */
static bool check_program(const prog *p, const variant *variants, int n_variants,
                          bool threads_bitwise, int *bad_variant, int *bad_out) {
    kiln_ctx *cx = test_ctx();
    bool ok = true;
    char why[512] = "";
    char *text = NULL;
    kiln_tensor *in[MAX_IN] = {0}, *keep[MAX_NODES] = {0}, *eager[MAX_OUT] = {0};
    for (int i = 0; i < p->n_in; i++) {
        const node *n = &p->nodes[p->in_node[i]];
        in[i] = kiln_tensor_retain(random_tensor(cx, n->seed, n->dtype, n->shape));
    }
    /* Eager: the reference. */
    run_env env = {p, keep};
    kiln_scope_begin(cx);
    kiln_status s = run_prog(cx, in, eager, &env);
    kiln_scope_end(cx);
    if (s != KILN_OK) {
        snprintf(why, sizeof why, "eager run failed: %s", kiln_ctx_error_message(cx));
        report(cx, p, NULL, why);
        ok = false;
    }
    double mag[MAX_NODES], err[MAX_NODES];
    if (ok) {
        magnitudes(p, keep, mag);
        error_bounds(p, mag, err);
    }
    kiln_tensor *first[MAX_OUT] = {0};
    *bad_variant = *bad_out = -1;
    for (int vi = 0; ok && vi < n_variants; vi++) {
        const variant *v = &variants[vi];
        kiln_tensor *got[MAX_OUT] = {0};
        if (text) kiln_string_free(cx, text);
        text = NULL;
        kiln_scope_begin(cx);
        if (!run_compiled(cx, p, in, v, got, &text, why, sizeof why)) {
            report(cx, p, text, why);
            ok = false;
        }
        for (int r = 0; ok && r < p->n_out; r++) {
            int o = p->out_node[r];
            char detail[400];
            if (!same(keep[o], got[r], 4 * err[o], detail, sizeof detail)) {
                snprintf(why, sizeof why, "%s: result %d (v%d) against eager: %s", v->name, r, o,
                         detail);
                report(cx, p, text, why);
                ok = false;
                *bad_variant = vi;
                *bad_out = r;
            } else if (threads_bitwise && first[r] &&
                       !same(first[r], got[r], 0, detail, sizeof detail)) {
                snprintf(why, sizeof why, "%s: result %d (v%d) against %s: %s", v->name, r, o,
                         variants[0].name, detail);
                report(cx, p, text, why);
                ok = false;
                *bad_variant = vi;
                *bad_out = r;
            }
        }
        for (int r = 0; r < p->n_out; r++)
            if (vi == 0 && threads_bitwise && got[r]) first[r] = kiln_tensor_retain(got[r]);
        kiln_scope_end(cx);
        kiln_ctx_clear_error(cx);
    }
    if (ok && verbose()) {
        describe(p, stderr);
        fprintf(stderr, "%s\n", text ? text : "");
    }
    for (int r = 0; r < MAX_OUT; r++)
        kiln_tensor_release(first[r]);
    if (text) kiln_string_free(cx, text);
    for (int i = 0; i < p->n; i++)
        kiln_tensor_release(keep[i]);
    for (int i = 0; i < p->n_in; i++)
        kiln_tensor_release(in[i]);
    kiln_ctx_release(cx);
    return ok;
}

/* ---- minimising a failing program ------------------------------------------------------ */

/* Recomputes what the generator tracked per node after an edit: approximation and
 * dependence on inputs flow from the operands. */
static void refresh(prog *p) {
    for (int i = 0; i < p->n; i++) {
        node *n = &p->nodes[i];
        n->approx = n->own_approx;
        n->dep = n->kind == N_INPUT;
        n->users = 0;
        for (int k = 0; k < n->n_a; k++) {
            n->approx |= p->nodes[n->a[k]].approx;
            n->dep |= p->nodes[n->a[k]].dep;
        }
        if (n->kind == N_UNARY && unary_ops[n->op].to_bool) n->approx = false;
    }
    for (int i = 0; i < p->n; i++)
        for (int k = 0; k < p->nodes[i].n_a; k++)
            p->nodes[p->nodes[i].a[k]].users++;
}

/* q = the nodes of p that result `root` needs, renumbered, with that one result. */
static void cone(const prog *p, int root, prog *q) {
    bool need[MAX_NODES] = {false};
    need[root] = true;
    for (int i = root; i >= 0; i--)
        if (need[i])
            for (int k = 0; k < p->nodes[i].n_a; k++)
                need[p->nodes[i].a[k]] = true;
    int map[MAX_NODES] = {0};
    *q = *p;
    q->n = q->n_in = 0;
    for (int i = 0; i < p->n; i++) {
        if (!need[i]) continue;
        map[i] = q->n;
        node *n = &q->nodes[q->n++];
        *n = p->nodes[i];
        for (int k = 0; k < n->n_a; k++)
            n->a[k] = map[n->a[k]];
        if (n->kind == N_INPUT) {
            n->i1 = q->n_in;
            q->in_node[q->n_in++] = q->n - 1;
        }
    }
    q->n_out = 1;
    q->out_node[0] = map[root];
    q->minimised = true;
    refresh(q);
}

static bool still_fails(const prog *q, const variant *variants, int n_variants,
                        bool threads_bitwise) {
    if (!q->nodes[q->out_node[0]].dep || q->n_in > MAX_IN) return false;
    int bv, bo;
    return !check_program(q, variants, n_variants, threads_bitwise, &bv, &bo);
}

/* Cuts a failing program down and reports the smaller one: keep only what the failing
 * result needs; then, while the mismatch stays, bypass ops whose operand has their type,
 * and turn ops into fresh inputs. */
static void minimise(const prog *p, const variant *variants, int bad_variant, int bad_out,
                     bool threads_bitwise) {
    variant vs[2];
    int nv = 0;
    if (threads_bitwise && bad_variant > 0) vs[nv++] = variants[0];
    vs[nv++] = variants[bad_variant];
    prog *q = malloc(sizeof *q), *t = malloc(sizeof *t), *c = malloc(sizeof *c);
    if (!q || !t || !c) goto done;
    quiet = true;
    cone(p, p->out_node[bad_out], q);
    if (!still_fails(q, vs, nv, threads_bitwise)) goto done;
    for (int budget = 0, progress = 1; progress && budget < 300;) {
        progress = 0;
        int root = q->out_node[0];
        for (int k = q->n - 1; k >= 0 && !progress && budget < 300; k--) {
            const node *n = &q->nodes[k];
            if (n->kind == N_INPUT) continue;
            /* Bypass: users of k read one of k's operands instead. */
            for (int j = 0; j < n->n_a && !progress && k != root; j++) {
                const node *a = &q->nodes[n->a[j]];
                if (a->dtype != n->dtype || !kiln_shape_equal(&a->shape, &n->shape)) continue;
                *t = *q;
                for (int i = k + 1; i < t->n; i++)
                    for (int m = 0; m < t->nodes[i].n_a; m++)
                        if (t->nodes[i].a[m] == k) t->nodes[i].a[m] = n->a[j];
                cone(t, root, c);
                budget++;
                if (still_fails(c, vs, nv, threads_bitwise)) {
                    *q = *c;
                    progress = 1;
                }
            }
            if (progress || k == root || n->n_a == 0) continue;
            /* Cut: k becomes an input of its own type (its value random, not computed). */
            *t = *q;
            node *cut = &t->nodes[k];
            cut->kind = N_INPUT;
            cut->n_a = 0;
            cut->own_approx = false;
            cut->seed = p->seed ^ ((uint64_t)k << 32);
            cone(t, root, c);
            budget++;
            if (still_fails(c, vs, nv, threads_bitwise)) {
                *q = *c;
                progress = 1;
            }
        }
    }
    quiet = false;
    int bv, bo;
    check_program(q, vs, nv, threads_bitwise, &bv, &bo); /* reports it */
done:
    quiet = false;
    free(q);
    free(t);
    free(c);
}

/* Checks p; on a mismatch (reported) also reports a minimised program. */
static bool check_and_minimise(const prog *p, const variant *variants, int n_variants,
                               bool threads_bitwise) {
    int bv = -1, bo = -1;
    if (check_program(p, variants, n_variants, threads_bitwise, &bv, &bo)) return true;
    if (bv >= 0 && bo >= 0 && !getenv("KILN_RPG_NO_MINIMISE"))
        minimise(p, variants, bv, bo, threads_bitwise);
    return false;
}

/* ---- the tests ---------------------------------------------------------------------------- */

static long env_long(const char *name, long fallback) {
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    char *end;
    long x = strtol(v, &end, 10);
    return *end ? fallback : x;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Programs base+0 .. base+count-1 of batch `batch` (seeds spread so that batches differ);
 * KILN_RPG_SEED replaces the seeds (batch 0 only), KILN_RPG_SECONDS runs until the time
 * is up. */
static void run_batch(int batch) {
    const char *fixed = getenv("KILN_RPG_SEED");
    long count = env_long("KILN_RPG_COUNT", KILN_RPG_DEFAULT_COUNT);
    double seconds = (double)env_long("KILN_RPG_SECONDS", 0);
    uint64_t base;
    if (fixed && *fixed) {
        if (batch != 0) return;
        base = strtoull(fixed, NULL, 10);
    } else {
        base = (uint64_t)batch << 40;
    }
    /* The same four variants on every registered backend; the first of each backend's on
     * every program, all of them on some. */
    static const variant kinds[] = {
        {"compiled", false, false, 0, false, NULL},
        {"compiled without passes or folding", false, true, 0, false, NULL},
        {"compiled with donate_all", true, false, 0, false, NULL},
        {"printed, parsed back and compiled", false, false, 0, true, NULL},
    };
    enum { N_KINDS = sizeof kinds / sizeof kinds[0] };
    const char *backends[TEST_MAX_BACKENDS];
    int n_backends = test_backends(backends, TEST_MAX_BACKENDS);
    variant variants[TEST_MAX_BACKENDS * N_KINDS], cheap[TEST_MAX_BACKENDS];
    char names[TEST_MAX_BACKENDS * N_KINDS][96];
    for (int b = 0; b < n_backends; b++) {
        for (int k = 0; k < N_KINDS; k++) {
            variant *v = &variants[b * N_KINDS + k];
            *v = kinds[k];
            snprintf(names[b * N_KINDS + k], sizeof names[0], "%s: %s", backends[b], kinds[k].name);
            v->name = names[b * N_KINDS + k];
            v->backend = backends[b];
        }
        cheap[b] = variants[b * N_KINDS];
    }
    prog *p = malloc(sizeof *p);
    cr_assert_not_null(p);
    double start = now_seconds();
    long failures = 0, done = 0;
    for (long i = 0; seconds > 0 ? now_seconds() - start < seconds : i < count; i++) {
        uint64_t seed = base + (uint64_t)i;
        gen_program(p, seed, false);
        bool all = i % 3 == 0;
        if (!check_and_minimise(p, all ? variants : cheap, all ? n_backends * N_KINDS : n_backends,
                                false))
            failures++;
        done++;
        if (failures >= env_long("KILN_RPG_MAX_FAILURES", 3)) break;
    }
    free(p);
    if (getenv("KILN_RPG_SECONDS"))
        fprintf(stderr, "random_programs batch %d: %ld programs, %ld convolution epilogues\n",
                batch, done, conv_epilogues_seen);
    /* About one program in 25 has one (a bias add after a convolution of a float dtype). */
    cr_assert(done < 250 || failures > 0 || conv_epilogues_seen > 0,
              "%ld programs compiled no convolution epilogue", done);
    cr_assert_eq(failures, 0, "%ld of %ld random programs differ (the reports above)", failures,
                 done);
}

Test(random_programs, batch_0) { run_batch(0); }
Test(random_programs, batch_1) { run_batch(1); }
Test(random_programs, batch_2) { run_batch(2); }
Test(random_programs, batch_3) { run_batch(3); }

/* Larger tensors, so that kernels split their work across threads: every thread count
 * gives the same bits (NaNs alike: BLAS makes NaNs of either sign depending on how it
 * splits the work), and agrees with eager. */
Test(random_programs, threads) {
    const variant v[] = {
        {"compiled, 1 thread", false, false, 1, false, NULL},
        {"compiled, 2 threads", false, false, 2, false, NULL},
        {"compiled, 3 threads, donate_all", true, false, 3, false, NULL},
        {"compiled, 4 threads", false, false, 4, false, NULL},
    };
    const char *fixed = getenv("KILN_RPG_SEED");
    uint64_t base = fixed && *fixed ? strtoull(fixed, NULL, 10) : (uint64_t)7 << 40;
    long count = fixed && *fixed ? env_long("KILN_RPG_COUNT", 1) : THREAD_PROGRAMS;
    prog *p = malloc(sizeof *p);
    cr_assert_not_null(p);
    long failures = 0;
    double seconds = (double)env_long("KILN_RPG_SECONDS", 0), start = now_seconds();
    for (long i = 0; (seconds > 0 ? now_seconds() - start < seconds : i < count) &&
                     failures < env_long("KILN_RPG_MAX_FAILURES", 3);
         i++) {
        gen_program(p, base + (uint64_t)i, true);
        p->threads_test = true;
        if (!check_and_minimise(p, v, 4, true)) failures++;
    }
    free(p);
    cr_assert_eq(failures, 0, "%ld larger random programs differ (the reports above)", failures);
}

/* The generator itself: every program is valid (the eager run succeeded above), and over a
 * few hundred seeds every node kind and every unary and binary op appears, with results of
 * every dtype, so that a change to the weights cannot silently drop coverage. */
Test(random_programs, generator_covers_every_op) {
    prog *p = malloc(sizeof *p);
    cr_assert_not_null(p);
    int kinds[N_CONV + 1] = {0}, un[N_UNARY_OPS] = {0}, bin[N_BINARY_OPS] = {0};
    int dtypes[KILN_DTYPE_COUNT] = {0}, max_ops = 0, min_ops = MAX_NODES;
    for (uint64_t s = 0; s < 600; s++) {
        gen_program(p, s, false);
        int ops = 0;
        for (int i = 0; i < p->n; i++) {
            const node *n = &p->nodes[i];
            kinds[n->kind]++;
            if (n->kind == N_UNARY) un[n->op]++;
            if (n->kind == N_BINARY) bin[n->op]++;
            if (n->kind > N_IOTA) ops++;
            dtypes[n->dtype]++;
        }
        if (ops > max_ops) max_ops = ops;
        if (ops < min_ops) min_ops = ops;
        cr_assert_gt(p->n_out, 0, "seed %llu has no result", (unsigned long long)s);
    }
    free(p);
    for (int k = 0; k <= N_CONV; k++)
        cr_expect_gt(kinds[k], 0, "no %s node in 600 programs", kind_names[k]);
    for (int k = 0; k < N_UNARY_OPS; k++)
        cr_expect_gt(un[k], 0, "no %s in 600 programs", unary_ops[k].name);
    for (int k = 0; k < N_BINARY_OPS; k++)
        cr_expect_gt(bin[k], 0, "no %s in 600 programs", binary_ops[k].name);
    static const kiln_dtype all[] = {KILN_F32, KILN_F64, KILN_F16, KILN_BF16, KILN_I32,
                                     KILN_I64, KILN_I8,  KILN_U8,  KILN_BOOL};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        cr_expect_gt(dtypes[all[k]], 0, "no %s value in 600 programs", kiln_dtype_name(all[k]));
    cr_expect_leq(min_ops, 2);
    cr_expect_geq(max_ops, 30);
}

/* The comparison can fail: one flipped bit of an exact result, a NaN against a number, and
 * an error just past the bound are all mismatches; a NaN with another payload is not. */
Test(random_programs, comparison_detects_differences) {
    kiln_ctx *cx = test_ctx();
    float a[4] = {1.0f, -0.0f, NAN, 3.0f}, b[4];
    memcpy(b, a, sizeof a);
    kiln_tensor *ta = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), a, sizeof a);
    char why[512];
    uint32_t bits;
    memcpy(&bits, &b[2], 4);
    bits ^= 0x80000001u; /* another NaN */
    memcpy(&b[2], &bits, 4);
    kiln_tensor *tb = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), b, sizeof b);
    cr_assert(same(ta, tb, 0, why, sizeof why), "%s", why);
    b[1] = 0.0f; /* +0 against -0 */
    kiln_tensor *tc = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), b, sizeof b);
    cr_assert_not(same(ta, tc, 0, why, sizeof why));
    cr_assert(strstr(why, "element [1]") != NULL, "%s", why);
    b[1] = -0.0f;
    b[3] = nextafterf(3.0f, 4.0f);
    kiln_tensor *td = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), b, sizeof b);
    cr_assert_not(same(ta, td, 0, why, sizeof why));
    cr_assert(same(ta, td, 1e-6, why, sizeof why), "%s", why);
    cr_assert_not(same(ta, td, 1e-7, why, sizeof why));
    b[2] = 0.0f;
    kiln_tensor *te = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), b, sizeof b);
    cr_assert_not(same(ta, te, 1.0, why, sizeof why));
    kiln_tensor *tf = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 2), a, sizeof a);
    cr_assert_not(same(ta, tf, 0, why, sizeof why));
    cr_assert(strstr(why, "type") != NULL, "%s", why);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

/* ---- regressions: programs this generator found, minimised ---------------------------- */

/* Lowers fn over args (lower options lo, may be NULL) and compiles it. */
static kiln_exe *lower_and_compile(kiln_ctx *cx, kiln_region_fn fn, const kiln_arg_spec *args,
                                   int32_t n_args, int32_t n_results,
                                   const kiln_lower_options *lo) {
    kiln_region r = {fn, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &r, args, n_args, n_results, lo, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    return exe;
}

/* Calls exe (two f32[4] arguments x, y; results x + y and x) and checks both results. */
static void expect_sum_and_x(kiln_ctx *cx, kiln_exe *exe) {
    float xv[4] = {1, 2, 3, 4}, yv[4] = {10, 20, 30, 40};
    kiln_tensor *x = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), xv, sizeof xv);
    kiln_tensor *y = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), yv, sizeof yv);
    kiln_tensor *out[2];
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, out), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    const float *sum = kiln_tensor_data(out[0]), *same_x = kiln_tensor_data(out[1]);
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(sum[i], xv[i] + yv[i], "sum[%d] = %g", i, (double)sum[i]);
        cr_expect_eq(same_x[i], xv[i], "result 1 [%d] = %g, expected %g", i, (double)same_x[i],
                     (double)xv[i]);
    }
}

/* Calls exe on args with 1 and with 2 threads: result 0 must be the same bits. */
static void expect_same_bits_on_1_and_2_threads(kiln_ctx *cx, kiln_exe *exe,
                                                kiln_tensor *const *args) {
    kiln_tensor *r1[1], *r2[1];
    kiln__threads_set_count(1);
    cr_assert_eq(kiln_exe_call(cx, exe, args, r1), KILN_OK);
    kiln__threads_set_count(2);
    cr_assert_eq(kiln_exe_call(cx, exe, args, r2), KILN_OK);
    kiln__threads_set_count(0);
    char why[512];
    cr_expect(same(r1[0], r2[0], 0, why, sizeof why), "2 threads against 1: %s", why);
}

static kiln_status donated_forwarded(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                     void *user) {
    (void)user;
    out[0] = kiln_add(cx, in[0], in[1]);             /* may reuse x's donated buffer */
    out[1] = kiln_reshape(cx, in[0], KILN_SHAPE(4)); /* x itself once canonicalized */
    return kiln_ctx_status(cx);
}

/* Seed 1099511627857 and others: with donate_all, result 0 may reuse x's buffer; the
 * passes then turn result 1 into x, which the call must not overwrite (the pass manager
 * now marks such a result preserved and drops the other result's alias). */
Test(random_programs, regression_donated_argument_forwarded_by_passes) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(4)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(4)}};
    kiln_lower_options lo = kiln_lower_options_default();
    lo.donate_all = true;
    kiln_exe *exe = lower_and_compile(cx, donated_forwarded, a, 2, 2, &lo);
    expect_sum_and_x(cx, exe);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

static kiln_status i8_sum(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_tensor *init = kiln_scalar(cx, 4, KILN_I8), *x = kiln_negate(cx, in[0]);
    kiln_reduce(cx, &x, &init, 1, KILN_DIMS(0), kiln_region_add(), &out[0]);
    kiln_reduce(cx, &in[0], &init, 1, KILN_DIMS(0), kiln_region_add(), &out[1]);
    return kiln_ctx_status(cx);
}

/* Seeds 3298534884092 and 2199023257025: a full add-reduction of i8 that fuses its
 * producer summed only part of the elements once there were 16 or more (i8[32] of -1:
 * 4 - 12 instead of 4 - 32). */
Test(random_programs, regression_i8_sum_of_fused_producer) {
    kiln_ctx *cx = test_ctx();
    static const int64_t sizes[] = {15, 16, 17, 32, 33, 100};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int64_t n = sizes[k];
        kiln_arg_spec a = {.dtype = KILN_I8, .shape = KILN_SHAPE(n)};
        kiln_exe *exe = lower_and_compile(cx, i8_sum, &a, 1, 2, NULL);
        int8_t v[100];
        for (int64_t i = 0; i < n; i++)
            v[i] = (int8_t)(i % 3 - 1); /* -1, 0, 1, ... */
        int64_t sum = 0;
        for (int64_t i = 0; i < n; i++)
            sum += v[i];
        kiln_scope_begin(cx);
        kiln_tensor *x = kiln_tensor_from_host(cx, KILN_I8, KILN_SHAPE(n), v, (size_t)n);
        kiln_tensor *out[2];
        cr_assert_eq(kiln_exe_call(cx, exe, &x, out), KILN_OK, "%s", kiln_ctx_error_message(cx));
        /* Small sums: no wrapping. */
        cr_expect_eq(*(const int8_t *)kiln_tensor_data(out[0]), (int8_t)(4 - sum),
                     "i8[%lld]: sum of -x + 4 is %d, expected %d", (long long)n,
                     *(const int8_t *)kiln_tensor_data(out[0]), (int)(4 - sum));
        cr_expect_eq(*(const int8_t *)kiln_tensor_data(out[1]), (int8_t)(4 + sum),
                     "i8[%lld]: sum of x + 4 is %d, expected %d", (long long)n,
                     *(const int8_t *)kiln_tensor_data(out[1]), (int)(4 + sum));
        kiln_scope_end(cx);
        kiln_exe_release(exe);
    }
    kiln_ctx_release(cx);
}

static kiln_status big_dot(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    kiln_dot_params d = {.lhs_contracting_dims = KILN_DIMS(0, 2),
                         .rhs_contracting_dims = KILN_DIMS(2, 1)};
    out[0] = kiln_dot_general(cx, in[0], in[1], &d, KILN_DTYPE_COUNT);
    return kiln_ctx_status(cx);
}

/* Seed 7696581395531 of random_programs/threads (open): an f64 dot_general large enough for
 * BLAS (61 x 323 x 120) gives other last bits on 2 threads than on 1 (40.580101968675081
 * against ...116 at [39, 9, 7]); results must not depend on the thread count. */
Test(random_programs, regression_dot_f64_bits_per_thread_count) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {{.dtype = KILN_F64, .shape = KILN_SHAPE(60, 61, 2)},
                          {.dtype = KILN_F64, .shape = KILN_SHAPE(19, 2, 60, 17)}};
    kiln_exe *exe = lower_and_compile(cx, big_dot, a, 2, 1, NULL);
    /* The data of the minimised program (its inputs' seeds). */
    kiln_tensor *x = random_tensor(cx, UINT64_C(3942478486504282552), KILN_F64, a[0].shape);
    kiln_tensor *y = random_tensor(cx, UINT64_C(4708212403713858285), KILN_F64, a[1].shape);
    expect_same_bits_on_1_and_2_threads(cx, exe, (kiln_tensor *[]){x, y});
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

static kiln_status grouped_conv(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                void *user) {
    (void)user;
    kiln_conv_params cp = kiln_conv_params_nchw(1);
    cp.window_strides = KILN_DIMS(2);
    cp.padding_low = KILN_DIMS(0);
    cp.padding_high = KILN_DIMS(1);
    cp.feature_group_count = 3;
    out[0] = kiln_convolution(cx, in[0], in[1], &cp, KILN_DTYPE_COUNT);
    return kiln_ctx_status(cx);
}

/* Seed 7696581413430 of random_programs/threads (open), and four more like it, all with
 * feature_group_count > 1: a grouped f32 convolution, here of f32[1,3,2] with f32[6,1,3]
 * (3 groups, stride 2, padding [0, 1]: three products per result), gives another last bit
 * on 2 threads than on 1 (2.6070058345794678 against 2.6070055961608887 at [0, 0, 0]). */
Test(random_programs, regression_grouped_conv_bits_per_thread_count) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(1, 3, 2)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE(6, 1, 3)}};
    kiln_exe *exe = lower_and_compile(cx, grouped_conv, a, 2, 1, NULL);
    kiln_tensor *args[2] = {random_tensor(cx, UINT64_C(7700876380726), KILN_F32, a[0].shape),
                            random_tensor(cx, UINT64_C(5003933868078492007), KILN_F32, a[1].shape)};
    expect_same_bits_on_1_and_2_threads(cx, exe, args);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}

/* The root of regression_donated_argument_forwarded_by_passes, without the passes: a
 * module whose convention lets result 0 reuse donated %arg0 while result 1 returns %arg0
 * (the text says so, or a rewrite made it so) computed result 1 as result 0's values;
 * kiln_compile drops such an alias. */
Test(random_programs, regression_returned_argument_also_aliased) {
    static const char *const text =
        "func.func public @main(%arg0: tensor<4xf32> {tf.aliasing_output = 0 : i32}, %arg1: "
        "tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {\n"
        "  %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>\n"
        "  return %0, %arg0 : tensor<4xf32>, tensor<4xf32>\n"
        "}\n";
    kiln_ctx *cx = test_ctx();
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_compile_options o = kiln_compile_options_default();
    o.disable_passes = true;
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    expect_sum_and_x(cx, exe);
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
}
