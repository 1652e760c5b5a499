/* SPDX-License-Identifier: Apache-2.0 */
/* The random-program generator (random_prog.h). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "random_prog.h"

/* ---- the random source ------------------------------------------------------------------ */

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

const char *const kind_names[] = {
    "input",   "constant", "iota",        "unary",     "binary",      "compare",    "select",
    "clamp",   "convert",  "bitcast",     "broadcast", "reshape",     "transpose",  "slice",
    "reverse", "pad",      "concatenate", "reduce",    "dot_general", "convolution"};

const unary_op unary_ops[] = {
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

const binary_op binary_ops[] = {
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
void gen_program(prog *p, uint64_t seed, bool big) {
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

kiln_tensor *random_tensor(kiln_ctx *cx, uint64_t seed, kiln_dtype dt, kiln_shape s) {
    int64_t n = numel(&s);
    size_t bytes = (size_t)n * kiln_dtype_size(dt);
    unsigned char *buf = malloc(bytes ? bytes : 1);
    fill_random(seed, dt, n, buf);
    kiln_tensor *t = kiln_tensor_from_host(cx, dt, s, buf, bytes);
    free(buf);
    return t;
}

double element(const kiln_tensor *t, int64_t i) {
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

kiln_status run_prog(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
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

void describe(const prog *p, FILE *f) {
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
void magnitudes(const prog *p, kiln_tensor *const *vals, double *mag) {
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
void error_bounds(const prog *p, const double *mag, double *err) {
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
bool same(const kiln_tensor *ref, const kiln_tensor *got, double bound, char *why, size_t size) {
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

_Static_assert(sizeof unary_ops / sizeof unary_ops[0] == N_UNARY_OPS, "N_UNARY_OPS");
_Static_assert(sizeof binary_ops / sizeof binary_ops[0] == N_BINARY_OPS, "N_BINARY_OPS");
