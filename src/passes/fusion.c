/* SPDX-License-Identifier: Apache-2.0 */
/* Fusion: which ops of a function body run together as kernels (passes.h, ir/kernel.h).
 *
 * One forward walk over the body groups ops; a group stays open until something outside
 * it uses one of its values (then it is sealed), so that every kernel can run at the
 * position of its last op: its inputs are made before it, and its values are used after
 * it. The same walk gives a convolution the bias add and ReLU that follow it as its
 * epilogue (take_epilogue). A backward walk then decides which views something other than
 * a kernel needs. */
#include <stddef.h>
#include <string.h>

#include "passes/passes.h"

/* How a value is read: element `off + sum(idx[d] * st[d])` of value `base` (its row-major
 * buffer), or, for an iota, that expression is the element itself. */
typedef struct view {
    const kiln__value *base; /* NULL for an iota */
    kiln_dtype iota_dtype;
    int64_t off;
    int64_t st[KILN_MAX_RANK];
} view;

/* How many of the most recent kernels an op without a producer among them may join. */
#define SIBLING_WINDOW 8

typedef struct group {
    int32_t n_members, n_leaves;
    bool sealed, reduces;
    bool reads_views;        /* a member reads a value through a view (kiln__fusion_group) */
    const kiln_shape *shape; /* of the first member's result (its interned type's) */
} group;

/* A view as the plan keeps it: its strides up to the value's rank only (a plan of 10^5
 * slices must not hold 16 strides for each). */
typedef struct stored_view {
    const kiln__value *base;
    kiln_dtype iota_dtype;
    int32_t rank;
    int64_t off;
    int64_t st[];
} stored_view;

typedef struct kiln__fuser fuser;

struct kiln__fuser {
    kiln_ctx *cx;
    const kiln__block *b; /* the block planned */
    const kiln__fusion_options *o;
    int32_t max_instrs;
    int32_t n_vals, n_ops;
    const kiln__ir_op **ops;
    int32_t *def;        /* per value: the op index defining it, or -1 */
    stored_view **views; /* per value: its view when it is a view op's result */
    bool *is_const;      /* per value: a constant, or foldable from constants */
    int32_t *in_group;   /* per value: uses by ops of its own kernel */
    int32_t *absorbed;   /* per value: uses by kernels and unmaterialized views */
    group *groups;
    int32_t n_groups;
    kiln__fusion *f;
    /* Each kernel's members, in block order: members[first[g] .. first[g + 1]). */
    int32_t *first, *members;
    int32_t *reg_of_op; /* per op index: its register in the kernel being built, or -1 */
    /* Where the description of the kernel being built goes (kiln__fusion_kernel). */
    void *(*kalloc)(void *user, size_t size, size_t align);
    void *kalloc_user;
    /* A kernel's inputs and operands while build_kernel gathers them. */
    kiln__kinput inputs[KILN__KERNEL_MAX_INPUTS + 1];
    const kiln__value *operands[KILN__KERNEL_MAX_INPUTS + 2];
};

/* Zeroed memory from alloc(user, ...), NULL when it fails. */
static void *zalloc(void *(*alloc)(void *, size_t, size_t), void *user, size_t size, size_t align) {
    void *p = alloc(user, size ? size : 1, align);
    if (p) memset(p, 0, size ? size : 1);
    return p;
}

/* The plan's memory (the options' allocator). */
static void *falloc(fuser *z, size_t size, size_t align) {
    return zalloc(z->o->alloc, z->o->alloc_user, size, align);
}

#define FNEW(z, type, n) ((type *)falloc((z), (size_t)(n) * sizeof(type), _Alignof(type)))

static int64_t numel(const kiln_shape *s) {
    int64_t n = 1;
    for (int32_t d = 0; d < s->rank; d++)
        n *= s->dims[d];
    return n;
}

static bool shape_eq(const kiln_shape *a, const kiln_shape *b) {
    if (a->rank != b->rank) return false;
    for (int32_t i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

static void row_major(const kiln_shape *s, int64_t *st) {
    int64_t m = 1;
    for (int32_t d = s->rank - 1; d >= 0; d--) {
        st[d] = m;
        m *= s->dims[d];
    }
}

/* Strides equal up to dimensions of size 1 (whose stride never matters). */
static bool strides_are(const kiln_shape *s, const int64_t *st, const int64_t *want) {
    for (int32_t d = 0; d < s->rank; d++)
        if (s->dims[d] != 1 && st[d] != want[d]) return false;
    return true;
}

static view identity_view(const kiln__value *v) {
    view w = {.base = v};
    row_major(&v->type->shape, w.st);
    return w;
}

/* The index of v in the per-value arrays: its number when it is a value of the block
 * planned; one index past them, never a kernel's or a view's, when it comes from a block
 * around it (a loop body reading the function's values). */
static int32_t vid(const fuser *z, const kiln__value *v) {
    bool local = v->def ? v->def->block == z->b : v->block == z->b;
    return local ? v->id : z->n_vals;
}

static view view_of(const fuser *z, const kiln__value *v) {
    const stored_view *s = z->views[vid(z, v)];
    if (!s) return identity_view(v);
    view w = {.base = s->base, .iota_dtype = s->iota_dtype, .off = s->off};
    memcpy(w.st, s->st, (size_t)s->rank * sizeof *w.st);
    return w;
}

/* The buffer v is read from (view_of(z, v).base without building the view): NULL for an
 * iota. */
static const kiln__value *view_base(const fuser *z, const kiln__value *v) {
    const stored_view *s = z->views[vid(z, v)];
    return s ? s->base : v;
}

/* The view an op's result is of its operand's view, when it is one. */
static bool make_view(const fuser *z, const kiln__ir_op *op, view *out) {
    const kiln__type *rt = op->results[0]->type;
    int32_t r = rt->shape.rank;
    if (op->kind == KILN_OP_IOTA) {
        *out = (view){.base = NULL, .iota_dtype = rt->dtype};
        out->st[op->attrs->u.iota.dimension] = 1;
        return true;
    }
    const kiln__value *x = op->operands[0];
    view in = view_of(z, x);
    view w = in;
    memset(w.st, 0, sizeof w.st);
    switch (op->kind) {
    case KILN_OP_BROADCAST_IN_DIM: {
        const kiln_dims *dims = &op->attrs->u.broadcast.dims;
        for (int32_t j = 0; j < dims->count; j++) {
            int64_t d = dims->v[j];
            w.st[d] = x->type->shape.dims[j] == 1 && rt->shape.dims[d] != 1 ? 0 : in.st[j];
        }
        break;
    }
    case KILN_OP_TRANSPOSE:
        for (int32_t i = 0; i < r; i++)
            w.st[i] = in.st[op->attrs->u.permutation.v[i]];
        break;
    case KILN_OP_SLICE:
        for (int32_t d = 0; d < r; d++) {
            w.off += op->attrs->u.slice.start.v[d] * in.st[d];
            w.st[d] = in.st[d] * op->attrs->u.slice.strides.v[d];
        }
        break;
    case KILN_OP_REVERSE:
        for (int32_t d = 0; d < r; d++)
            w.st[d] = in.st[d];
        for (int32_t i = 0; i < op->attrs->u.reverse_dims.count; i++) {
            int64_t d = op->attrs->u.reverse_dims.v[i];
            if (rt->shape.dims[d] > 0) w.off += (rt->shape.dims[d] - 1) * in.st[d];
            w.st[d] = -in.st[d];
        }
        break;
    case KILN_OP_RESHAPE: {
        /* Only a row-major operand view stays affine. */
        int64_t rm[KILN_MAX_RANK];
        row_major(&x->type->shape, rm);
        if (!in.base || !strides_are(&x->type->shape, in.st, rm)) return false;
        row_major(&rt->shape, w.st);
        break;
    }
    default: return false;
    }
    *out = w;
    return true;
}

static bool is_view_kind(kiln_op k) {
    return k == KILN_OP_BROADCAST_IN_DIM || k == KILN_OP_TRANSPOSE || k == KILN_OP_SLICE ||
           k == KILN_OP_REVERSE || k == KILN_OP_RESHAPE || k == KILN_OP_IOTA;
}

static int32_t group_of_value(const fuser *z, const kiln__value *v) {
    if (!v) return -1;
    int32_t d = z->def[vid(z, v)];
    return d >= 0 && z->f->role[d] == KILN__FUSE_MEMBER ? z->f->kernel[d] : -1;
}

static void seal_base(fuser *z, const kiln__value *v) {
    int32_t g = group_of_value(z, view_base(z, v));
    if (g >= 0) z->groups[g].sealed = true;
}

static size_t type_bytes(const kiln__type *t) {
    return (size_t)numel(&t->shape) * kiln_dtype_size(t->dtype);
}

/* Does op `k` join group g? Every use of one of g's values must be a direct one of the
 * iteration shape (a register, not a view of it). */
static bool can_join(const fuser *z, const kiln__ir_op *op, int32_t g, const kiln_shape *shape) {
    const group *gr = &z->groups[g];
    if (gr->sealed || gr->reduces || gr->n_members >= z->max_instrs) return false;
    if (!shape_eq(gr->shape, shape)) return false;
    int32_t leaves = gr->n_leaves;
    for (int32_t i = 0; i < op->n_operands; i++) {
        const kiln__value *u = op->operands[i];
        if (group_of_value(z, u) == g) {
            if (!shape_eq(&u->type->shape, shape)) return false;
            continue;
        }
        if (group_of_value(z, view_base(z, u)) == g) return false;
        leaves++;
    }
    return leaves <= KILN__KERNEL_MAX_INPUTS - 1;
}

static int32_t new_group(fuser *z, const kiln_shape *shape) {
    group *gr = &z->groups[z->n_groups];
    *gr = (group){.shape = shape};
    return z->n_groups++;
}

/* Op k became a kernel member or an epilogue op: the views it reads are absorbed (read by
 * a kernel or a library call, which materialize counts against their uses), and a
 * member's kernel notes that it reads views. */
static void absorb_operands(fuser *z, int32_t k, int32_t g) {
    const kiln__ir_op *op = z->ops[k];
    for (int32_t i = 0; i < op->n_operands; i++) {
        int32_t u = vid(z, op->operands[i]);
        int32_t d = z->def[u];
        if (d >= 0 && z->f->role[d] == KILN__FUSE_VIEW) z->absorbed[u]++;
        if (g >= 0 && z->views[u] && group_of_value(z, op->operands[i]) != g)
            z->groups[g].reads_views = true;
    }
}

static void add_member(fuser *z, int32_t k, int32_t g) {
    const kiln__ir_op *op = z->ops[k];
    z->f->role[k] = KILN__FUSE_MEMBER;
    z->f->kernel[k] = g;
    z->groups[g].n_members++;
    for (int32_t i = 0; i < op->n_operands; i++) {
        const kiln__value *u = op->operands[i];
        if (group_of_value(z, u) == g && z->def[vid(z, u)] != k)
            z->in_group[vid(z, u)]++;
        else
            z->groups[g].n_leaves++;
    }
    if (z->groups[g].n_members >= z->max_instrs) z->groups[g].sealed = true;
    absorb_operands(z, k, g);
}

static bool all_const_operands(const fuser *z, const kiln__ir_op *op) {
    for (int32_t i = 0; i < op->n_operands; i++) {
        const kiln__value *b = view_base(z, op->operands[i]);
        if (b && !z->is_const[vid(z, b)]) return false;
    }
    return true;
}

/* Whether kernels have primitives for dtype: not for complex values (more than 8 bytes an
 * element) nor for the narrow types (which only convert and move). */
static bool fusable_dtype(kiln_dtype dtype) {
    return !kiln_dtype_is_complex(dtype) && !kiln_dtype_is_narrow(dtype);
}

/* Whether an operand or result of op has a dtype kernels cannot hold. */
static bool has_unfusable(const kiln__ir_op *op) {
    for (int32_t i = 0; i < op->n_operands; i++)
        if (!fusable_dtype(op->operands[i]->type->dtype)) return true;
    for (int32_t r = 0; r < op->n_results; r++)
        if (!fusable_dtype(op->results[r]->type->dtype)) return true;
    return false;
}

static bool reduce_dtype_ok(kiln_dtype dt) { return dt != KILN_F16 && dt != KILN_BF16; }

/* ---- convolution epilogues ---------------------------------------------------------------- */

static bool is_float(kiln_dtype dt) {
    return dt == KILN_F16 || dt == KILN_BF16 || dt == KILN_F32 || dt == KILN_F64;
}

/* The value v reads element c of at output feature c (nothing else varies), or NULL: the
 * bias of `add(conv, broadcast(bias))`, through whatever views made the broadcast. The bias
 * holds just those values: [C], or [1, C, 1, 1] and the like. */
static const kiln__value *feature_vector(const fuser *z, const kiln__value *v, int64_t fdim) {
    view w = view_of(z, v);
    const kiln__value *b = w.base;
    const kiln_shape *s = &v->type->shape;
    if (!b || w.off != 0 || b->type->dtype != v->type->dtype ||
        numel(&b->type->shape) != s->dims[fdim])
        return NULL;
    int32_t big = 0;
    for (int32_t d = 0; d < b->type->shape.rank; d++)
        big += b->type->shape.dims[d] != 1;
    if (big > 1) return NULL;
    for (int32_t d = 0; d < s->rank; d++)
        if (s->dims[d] != 1 && w.st[d] != (d == fdim ? 1 : 0)) return NULL;
    return b;
}

/* Does v read only +0 (all bits zero) from a constant? maximum(x, +0) is the ReLU the library
 * call applies; -0 would differ at x = -0. */
static bool reads_plus_zero(const fuser *z, const kiln__value *v) {
    const kiln__value *b = view_base(z, v);
    const kiln__ir_op *d = b ? b->def : NULL;
    if (!d || d->kind != KILN_OP_CONSTANT || !d->attrs->u.constant) return false;
    const kiln_tensor *t = d->attrs->u.constant;
    const unsigned char *p = kiln_tensor_data(t);
    size_t n = (size_t)kiln_tensor_numel(t) * kiln_dtype_size(kiln_tensor_dtype(t));
    for (size_t i = 0; i < n; i++)
        if (p[i]) return false;
    return true;
}

/* Op k as the next epilogue op of a convolution: an add of a feature vector or a maximum
 * with +0, whose other operand is the convolution's result or its last epilogue op's, used
 * nowhere else. */
static bool take_epilogue(fuser *z, int32_t k) {
    kiln__fusion *f = z->f;
    const kiln__ir_op *op = z->ops[k];
    if ((op->kind != KILN_OP_ADD && op->kind != KILN_OP_MAXIMUM) || op->n_operands != 2 ||
        op->n_results != 1 || !is_float(op->results[0]->type->dtype))
        return false;
    for (int32_t i = 0; i < 2; i++) {
        const kiln__value *x = op->operands[i], *other = op->operands[1 - i];
        int32_t d = z->def[vid(z, x)];
        if (d < 0 || x->uses != 1 || z->is_const[vid(z, x)]) continue;
        int32_t e = f->epilogue[d];
        bool fresh = z->ops[d]->kind == KILN_OP_CONVOLUTION && f->role[d] == KILN__FUSE_NONE &&
                     e < 0 && z->ops[d]->n_results == 1;
        if (!fresh && !(f->role[d] == KILN__FUSE_EPILOGUE && f->epilogues[e].last == d)) continue;
        kiln__conv_epilogue cand =
            fresh ? (kiln__conv_epilogue){.conv = z->ops[d]} : f->epilogues[e];
        const kiln__ir_op *conv = cand.conv;
        const kiln__value *bias = NULL;
        if (op->kind == KILN_OP_ADD && !cand.bias && !cand.relu)
            bias = feature_vector(z, other, conv->attrs->u.conv.output_feature_dimension);
        bool relu = op->kind == KILN_OP_MAXIMUM && !cand.relu && reads_plus_zero(z, other);
        if (!bias && !relu) continue;
        if (fresh) {
            e = f->n_epilogues++;
            f->epilogue[d] = e;
        }
        if (bias) cand.bias = bias;
        cand.relu |= relu;
        cand.last = k;
        f->epilogues[e] = cand;
        f->role[k] = KILN__FUSE_EPILOGUE;
        absorb_operands(z, k, -1);
        f->epilogue[k] = e;
        /* The call runs here: the kernel making the bias must have run. */
        seal_base(z, other);
        return true;
    }
    return false;
}

static void walk(fuser *z) {
    kiln__fusion *f = z->f;
    for (int32_t k = 0; k < z->n_ops; k++) {
        const kiln__ir_op *op = z->ops[k];
        f->kernel[k] = -1;
        f->epilogue[k] = -1;
        if (op->kind == KILN_OP_CONSTANT) {
            z->is_const[vid(z, op->results[0])] = true;
            continue;
        }
        if (has_unfusable(op)) {
            /* An op on complex or narrow values runs by itself, after its operands'
             * kernels. */
            for (int32_t i = 0; i < op->n_operands; i++)
                seal_base(z, op->operands[i]);
            continue;
        }
        if (is_view_kind(op->kind) && op->n_results == 1) {
            view w;
            if (make_view(z, op, &w)) {
                int32_t rank = op->results[0]->type->shape.rank;
                stored_view *stored = falloc(z, sizeof *stored + (size_t)rank * sizeof *stored->st,
                                             _Alignof(stored_view));
                if (!stored) return;
                *stored = (stored_view){
                    .base = w.base, .iota_dtype = w.iota_dtype, .rank = rank, .off = w.off};
                memcpy(stored->st, w.st, (size_t)rank * sizeof *w.st);
                z->views[vid(z, op->results[0])] = stored;
                f->role[k] = KILN__FUSE_VIEW;
                /* A view of a kernel's value is read after that kernel. */
                if (op->n_operands) seal_base(z, op->operands[0]);
                continue;
            }
        }
        bool folds = z->o->fold_max_bytes && op->n_regions == 0 &&
                     !kiln__op_has(op->kind, KILN_OPF_CONTROL | KILN_OPF_COLLECTIVE) &&
                     all_const_operands(z, op);
        for (int32_t r = 0; r < op->n_results && folds; r++)
            folds = type_bytes(op->results[r]->type) <= z->o->fold_max_bytes;
        if (folds) {
            for (int32_t r = 0; r < op->n_results; r++)
                z->is_const[vid(z, op->results[r])] = true;
            for (int32_t i = 0; i < op->n_operands; i++)
                seal_base(z, op->operands[i]);
            continue;
        }
        if (z->o->conv_epilogue && take_epilogue(z, k)) continue;
        if (kiln__op_has(op->kind, KILN_OPF_ELEMENTWISE) && op->n_results == 1 &&
            op->n_regions == 0) {
            const kiln_shape *shape = &op->results[0]->type->shape;
            int32_t g = -1;
            for (int32_t i = 0; i < op->n_operands && g < 0; i++) {
                int32_t c = group_of_value(z, op->operands[i]);
                if (c >= 0 && can_join(z, op, c, shape)) g = c;
            }
            /* Otherwise a recent open kernel of the same shape takes it (sibling fusion:
             * one pass over memory instead of two); it runs after all of op's operands. */
            for (int32_t c = z->n_groups - 1; c >= 0 && c >= z->n_groups - SIBLING_WINDOW && g < 0;
                 c--)
                if (can_join(z, op, c, shape)) g = c;
            for (int32_t i = 0; i < op->n_operands; i++) {
                const kiln__value *u = op->operands[i];
                if (g >= 0 && group_of_value(z, u) == g) continue;
                seal_base(z, u);
            }
            /* Sealing may have closed g itself (an operand from another kernel read through
             * a view of g is excluded by can_join, so only g's own size can). */
            if (g < 0) g = new_group(z, shape);
            add_member(z, k, g);
            continue;
        }
        if (op->kind == KILN_OP_REDUCE && z->o->reduce_kind && op->n_operands == 2 &&
            op->n_results == 1 && reduce_dtype_ok(op->operands[0]->type->dtype) &&
            z->o->reduce_kind(op) != KILN__KREDUCE_NONE) {
            const kiln__value *x = op->operands[0], *init = op->operands[1];
            int32_t g = group_of_value(z, x);
            if (g >= 0 && !z->groups[g].sealed && !z->groups[g].reduces &&
                z->groups[g].n_members < z->max_instrs &&
                group_of_value(z, view_base(z, init)) != g) {
                seal_base(z, init);
                f->role[k] = KILN__FUSE_MEMBER;
                f->kernel[k] = g;
                absorb_operands(z, k, g);
                z->groups[g].n_members++;
                z->groups[g].reduces = true;
                z->groups[g].sealed = true;
                z->in_group[vid(z, x)]++;
                continue;
            }
        }
        /* Any other op: its operands' kernels must run first. A region may read any value
         * of the body, so every open kernel is sealed. */
        for (int32_t i = 0; i < op->n_operands; i++)
            seal_base(z, op->operands[i]);
        if (op->n_regions > 0 || kiln__op_has(op->kind, KILN_OPF_CONTROL))
            for (int32_t g = 0; g < z->n_groups; g++)
                z->groups[g].sealed = true;
    }
}

/* Views that something other than a kernel (or another unmaterialized view) uses become ops
 * again. */
static void materialize(fuser *z) {
    kiln__fusion *f = z->f;
    /* The reads by kernels and epilogues were counted as the walk took them
     * (absorb_operands); the views' own reads of views are counted here, from the last. */
    for (int32_t k = z->n_ops - 1; k >= 0; k--) {
        if (f->role[k] != KILN__FUSE_VIEW) continue;
        const kiln__ir_op *op = z->ops[k];
        const kiln__value *r = op->results[0];
        if (r->uses > z->absorbed[vid(z, r)]) {
            f->role[k] = KILN__FUSE_NONE;
            continue;
        }
        if (op->n_operands) {
            int32_t d = z->def[vid(z, op->operands[0])];
            if (d >= 0 && f->role[d] == KILN__FUSE_VIEW) z->absorbed[vid(z, op->operands[0])]++;
        }
    }
}

/* ---- building kernels --------------------------------------------------------------------- */

static int32_t add_operand(fuser *z, kiln__kernel *k, const kiln__value *v) {
    (void)z;
    for (int32_t o = 0; o < k->n_operands; o++)
        if (k->operands[o] == v) return o;
    k->operands[k->n_operands] = v;
    return k->n_operands++;
}

static uint64_t constant_bits(const kiln__value *base, int64_t off) {
    const kiln__ir_op *op = base->def;
    const kiln_tensor *t = op ? op->attrs->u.constant : NULL;
    uint64_t bits = 0;
    const unsigned char *data = t ? kiln_tensor_data(t) : NULL;
    size_t size = kiln_dtype_size(base->type->dtype);
    if (data && size <= 8) memcpy(&bits, data + (size_t)off * size, size);
    return bits;
}

static int32_t add_input(fuser *z, kiln__kernel *k, const kiln__value *u) {
    view w = view_of(z, u);
    kiln__kinput in = {.dtype = u->type->dtype, .operand = -1, .offset = w.off};
    const kiln_shape *s = &k->shape;
    bool scalar = !shape_eq(&u->type->shape, s);
    bool all_zero = true;
    for (int32_t d = 0; d < s->rank; d++) {
        in.strides[d] = scalar || s->dims[d] == 1 ? 0 : w.st[d];
        if (in.strides[d]) all_zero = false;
    }
    if (!w.base) {
        in.access = KILN__KACCESS_IOTA;
    } else {
        int64_t rm[KILN_MAX_RANK] = {0}; /* compared whole below */
        row_major(s, rm);
        bool has_zero = false;
        for (int32_t d = 0; d < s->rank; d++)
            if (s->dims[d] != 1 && in.strides[d] == 0) has_zero = true;
        in.access = all_zero                                       ? KILN__KACCESS_SCALAR
                    : w.off == 0 && strides_are(s, in.strides, rm) ? KILN__KACCESS_CONTIGUOUS
                    : has_zero                                     ? KILN__KACCESS_BROADCAST
                                                                   : KILN__KACCESS_STRIDED;
        if (in.access == KILN__KACCESS_CONTIGUOUS) memcpy(in.strides, rm, sizeof rm);
        in.operand = add_operand(z, k, w.base);
        const kiln__ir_op *bd = w.base->def;
        if (in.access == KILN__KACCESS_SCALAR && bd && bd->kind == KILN_OP_CONSTANT) {
            in.is_constant = true;
            in.bits = constant_bits(w.base, w.off);
        }
    }
    for (int32_t i = 0; i < k->n_inputs; i++) {
        const kiln__kinput *e = &k->inputs[i];
        if (e->access == in.access && e->dtype == in.dtype && e->operand == in.operand &&
            e->offset == in.offset && memcmp(e->strides, in.strides, sizeof in.strides) == 0)
            return i;
    }
    k->inputs[k->n_inputs] = in;
    return k->n_inputs++;
}

/* The memory of the kernel description being built (kiln__fusion_kernel's allocator). */
#define KNEW(z, type, n) \
    ((type *)zalloc((z)->kalloc, (z)->kalloc_user, (size_t)(n) * sizeof(type), _Alignof(type)))

/* Builds kernel g from its members, the ops members[0..n_members-1] in block order. */
static kiln_status build_kernel(fuser *z, int32_t g, kiln__kernel *k, const int32_t *members,
                                int32_t n_members) {
    int32_t *reg_of_op = z->reg_of_op;
    *k = (kiln__kernel){.id = g, .shape = *z->groups[g].shape};
    k->ops = KNEW(z, const kiln__ir_op *, n_members);
    k->instrs = KNEW(z, kiln__kinstr, n_members);
    /* Inputs and operands gather in the fuser's arrays of the most a kernel can have, and
     * are copied to arrays of their own size at the end. */
    k->inputs = z->inputs;
    k->operands = z->operands;
    k->outputs = KNEW(z, kiln__koutput, n_members);
    if (!k->ops || !k->instrs || !k->outputs) return KILN_RESOURCE_EXHAUSTED;
    /* Inputs first (registers 0..n_inputs-1), then one register per instruction. */
    for (int32_t pass = 0; pass < 2; pass++) {
        for (int32_t m = 0; m < n_members; m++) {
            int32_t j = members[m];
            const kiln__ir_op *op = z->ops[j];
            if (op->kind == KILN_OP_REDUCE) {
                if (pass == 1) {
                    k->reduce = z->o->reduce_kind(op);
                    k->reduce_reg = reg_of_op[z->def[vid(z, op->operands[0])]];
                    k->reduce_dims = op->attrs->u.reduce_dims;
                    k->reduce_init = add_operand(z, k, op->operands[1]);
                    k->reduce_dtype = op->results[0]->type->dtype;
                    k->reduce_value = op->results[0];
                    k->reduce_op = op;
                    k->ops[k->n_ops++] = op;
                    /* The iteration space is the reduced operand's. */
                }
                continue;
            }
            if (pass == 0) {
                for (int32_t i = 0; i < op->n_operands; i++)
                    if (group_of_value(z, op->operands[i]) != g) add_input(z, k, op->operands[i]);
                continue;
            }
            kiln__kinstr *ins = &k->instrs[k->n_instrs];
            *ins = (kiln__kinstr){.op = op->kind,
                                  .dtype = op->results[0]->type->dtype,
                                  .in_dtype = op->operands[0]->type->dtype,
                                  .n_args = op->n_operands,
                                  .src = op};
            if (op->kind == KILN_OP_COMPARE) {
                ins->direction = op->attrs->u.compare.direction;
                ins->compare_type = op->attrs->u.compare.type;
            }
            for (int32_t i = 0; i < op->n_operands; i++) {
                const kiln__value *u = op->operands[i];
                ins->args[i] =
                    group_of_value(z, u) == g ? reg_of_op[z->def[vid(z, u)]] : add_input(z, k, u);
            }
            reg_of_op[j] = k->n_inputs + k->n_instrs;
            k->n_instrs++;
            k->ops[k->n_ops++] = op;
            const kiln__value *v = op->results[0];
            if (v->uses > z->in_group[vid(z, v)])
                k->outputs[k->n_outputs++] = (kiln__koutput){.reg = reg_of_op[j], .value = v};
        }
    }
    kiln__kinput *inputs = KNEW(z, kiln__kinput, k->n_inputs);
    const kiln__value **operands = KNEW(z, const kiln__value *, k->n_operands);
    if (!inputs || !operands) return KILN_RESOURCE_EXHAUSTED;
    memcpy(inputs, k->inputs, (size_t)k->n_inputs * sizeof *inputs);
    memcpy(operands, k->operands, (size_t)k->n_operands * sizeof *operands);
    k->inputs = inputs;
    k->operands = operands;
    return KILN_OK;
}

kiln_status kiln__fusion_plan(kiln_ctx *cx, const kiln__block *b, const kiln__fusion_options *o,
                              kiln__fusion *out) {
    memset(out, 0, sizeof *out);
    /* The plan's state outlives this call (kiln__fusion_kernel). */
    fuser *z = o->alloc(o->alloc_user, sizeof *z, _Alignof(fuser));
    if (!z) return KILN_RESOURCE_EXHAUSTED;
    /* The staging arrays at its end are written before they are read: not cleared (a
     * tiny program is planned in well under a microsecond). */
    memset(z, 0, offsetof(fuser, inputs));
    z->cx = cx;
    z->b = b;
    z->o = o;
    z->f = out;
    z->max_instrs = o->max_instrs > 0 && o->max_instrs < KILN__KERNEL_MAX_INSTRS
                        ? o->max_instrs
                        : KILN__KERNEL_MAX_INSTRS;
    if (z->max_instrs > KILN__KERNEL_MAX_OUTPUTS * 6) z->max_instrs = KILN__KERNEL_MAX_OUTPUTS * 6;
    /* One walk of the list (the block counts its ops); the rest index this array. */
    int32_t n_ops = b->n_ops, n_vals = b->n_args, n_convs = 0;
    z->ops = FNEW(z, const kiln__ir_op *, n_ops);
    if (!z->ops) return KILN_RESOURCE_EXHAUSTED;
    int32_t k = 0;
    for (const kiln__ir_op *op = b->first; op && k < n_ops; op = op->next, k++) {
        z->ops[k] = op;
        n_vals += op->n_results;
        n_convs += op->kind == KILN_OP_CONVOLUTION;
    }
    n_ops = k;
    z->n_ops = n_ops;
    z->n_vals = n_vals;
    out->n_ops = n_ops;
    z->def = FNEW(z, int32_t, n_vals + 1);
    z->views = FNEW(z, stored_view *, n_vals + 1);
    z->is_const = FNEW(z, bool, n_vals + 1);
    z->in_group = FNEW(z, int32_t, n_vals + 1);
    z->absorbed = FNEW(z, int32_t, n_vals + 1);
    z->groups = FNEW(z, group, n_ops);
    out->role = FNEW(z, uint8_t, n_ops);
    out->kernel = FNEW(z, int32_t, n_ops);
    out->epilogue = FNEW(z, int32_t, n_ops);
    /* One epilogue at most per convolution. */
    out->epilogues = FNEW(z, kiln__conv_epilogue, n_convs);
    z->reg_of_op = FNEW(z, int32_t, n_ops);
    if (!z->def || !z->views || !z->is_const || !z->in_group || !z->absorbed || !z->groups ||
        !out->role || !out->kernel || !out->epilogue || !out->epilogues || !z->reg_of_op)
        return KILN_RESOURCE_EXHAUSTED;
    z->def[n_vals] = -1; /* values of the blocks around b (vid) */
    for (int32_t i = 0; i < b->n_args; i++) {
        b->args[i]->id = i;
        z->def[i] = -1;
    }
    int32_t id = b->n_args;
    for (k = 0; k < n_ops; k++) {
        const kiln__ir_op *op = z->ops[k];
        for (int32_t r = 0; r < op->n_results; r++) {
            op->results[r]->id = id;
            z->def[id++] = k;
        }
    }
    walk(z);
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    materialize(z);
    out->kernels = FNEW(z, kiln__fusion_group, z->n_groups);
    /* Each kernel's members, in block order: one pass over the ops for all kernels, not
     * one per kernel. */
    int32_t *first = FNEW(z, int32_t, z->n_groups + 1), *members = FNEW(z, int32_t, n_ops);
    int32_t *fill = FNEW(z, int32_t, z->n_groups + 1);
    if (!out->kernels || !first || !members || !fill) return KILN_RESOURCE_EXHAUSTED;
    for (int32_t j = 0; j < n_ops; j++)
        if (out->role[j] == KILN__FUSE_MEMBER) first[out->kernel[j] + 1]++;
    for (int32_t g = 0; g < z->n_groups; g++)
        first[g + 1] += first[g];
    memcpy(fill, first, (size_t)(z->n_groups + 1) * sizeof *fill);
    for (int32_t j = 0; j < n_ops; j++) {
        if (out->role[j] != KILN__FUSE_MEMBER) continue;
        int32_t g = out->kernel[j];
        members[fill[g]++] = j;
        kiln__fusion_group *s = &out->kernels[g];
        s->shape = z->groups[g].shape;
        s->last = j;
        s->reduces = z->groups[g].reduces;
        s->reads_views = z->groups[g].reads_views;
    }
    z->first = first;
    z->members = members;
    out->n_kernels = z->n_groups;
    out->fuser = z;
    return KILN_OK;
}

kiln_status kiln__fusion_kernel(kiln__fusion *f, int32_t g, kiln__kernel *out,
                                void *(*alloc)(void *user, size_t size, size_t align), void *user) {
    fuser *z = f->fuser;
    z->f = f;
    z->kalloc = alloc;
    z->kalloc_user = user;
    return build_kernel(z, g, out, z->members + z->first[g], z->first[g + 1] - z->first[g]);
}

void kiln__fusion_print(kiln__strbuf *sb, const kiln__block *b, kiln__fusion *f) {
    int32_t k = 0;
    for (const kiln__ir_op *op = b->first; op && k < f->n_ops; op = op->next, k++) {
        if (op->n_results) kiln__strbuf_printf(sb, "%%%d = ", (int)op->results[0]->id);
        kiln__strbuf_printf(sb, "%s: ", kiln__op_get_info(op->kind)->name);
        switch (f->role[k]) {
        case KILN__FUSE_MEMBER: kiln__strbuf_printf(sb, "kernel #%d\n", (int)f->kernel[k]); break;
        case KILN__FUSE_VIEW: kiln__strbuf_puts(sb, "view\n"); break;
        case KILN__FUSE_EPILOGUE:
            kiln__strbuf_printf(sb, "epilogue of convolution %%%d\n",
                                (int)f->epilogues[f->epilogue[k]].conv->results[0]->id);
            break;
        default:
            if (f->epilogue[k] >= 0) {
                const kiln__conv_epilogue *e = &f->epilogues[f->epilogue[k]];
                kiln__strbuf_printf(sb, "op with epilogue%s%s\n", e->bias ? " bias" : "",
                                    e->relu ? " relu" : "");
            } else {
                kiln__strbuf_puts(sb, op->kind == KILN_OP_CONSTANT ? "constant\n" : "op\n");
            }
        }
    }
    for (int32_t i = 0; i < f->n_kernels; i++) {
        kiln__kernel kernel;
        if (kiln__fusion_kernel(f, i, &kernel, f->fuser->o->alloc, f->fuser->o->alloc_user) !=
            KILN_OK)
            return;
        kiln__kernel_print(sb, &kernel, "", NULL);
    }
}
