/* SPDX-License-Identifier: Apache-2.0 */
/* Module-to-module rewrites (docs/ARCHITECTURE.md, section 1): a small pass manager and the passes.
 * Every pass rewrites a module in place, keeps SSA and the `uses` counters right, cannot
 * fail (what it allocates is optional: without it a rewrite is skipped), and returns how
 * many changes it made. */
#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include <stdint.h>

#include "ir/ir.h"
#include "ir/kernel.h"

/* A pass: returns the number of changes it made to m (0: nothing to do). */
typedef int32_t (*kiln__pass_fn)(kiln_module *m);

/* What the manager may assume of a pass (flags of kiln__pass; 0 assumes nothing). */
enum {
    /* Run again at once, it finds nothing: it needs to run again only after another
     * pass changed something. */
    KILN__PASS_IDEMPOTENT = 1u << 0,
    /* Its changes (removing dead ops) give no other pass anything new to do. */
    KILN__PASS_ENABLES_NOTHING = 1u << 1,
};

typedef struct kiln__pass {
    const char *name;
    kiln__pass_fn run;
    unsigned flags;
} kiln__pass;

/* Runs the passes in order, round after round, until none has anything left to do or
 * `max_rounds` rounds have run. Within a round a pass is skipped when nothing it could
 * act on changed since it last ran (by its flags: a module of 10^5 ops must not be walked
 * by every pass once more only to find nothing). Returns the total number of changes. */
int32_t kiln__passes_run(kiln_module *m, const kiln__pass *passes, int32_t n_passes,
                         int32_t max_rounds);

/* Calls loop(m, op) for every while op of m's functions, inner loops (in its regions) before
 * outer ones, and returns the sum of what it returns. The op after each is taken before the
 * call, so that loop may replace op. */
int32_t kiln__pass_each_while(kiln_module *m, int32_t (*loop)(kiln_module *m, kiln__ir_op *op));

/* canonicalize, cse, unroll, licm, dce (bounded). Returns the total number of changes. */
enum { KILN__SIMPLIFY_KEEP_LOOPS = 1u << 0 /* no unrolling */ };
int32_t kiln__passes_simplify(kiln_module *m, unsigned flags);

/* Makes every op that computes on a narrow type (ops/widen.h) compute in the widened
 * types, between converts. Not an optimization: kiln_compile runs it before any other pass,
 * and backends see no such op. Returns the number of ops rewritten. */
int32_t kiln__pass_widen(kiln_module *m);

/* Takes tuples apart (untuple.c): each get_tuple_element of a tuple made in the module is
 * replaced by the tuple's element, so that the tuples are dead. Not an optimization: tuples
 * have no run-time form, so kiln_compile runs it with the other passes or without them,
 * and refuses the tuple ops that are left. Returns the uses replaced. */
int32_t kiln__pass_untuple(kiln_module *m);

/* Algebraic identities (see README.md); constant folding is kiln_compile's. */
int32_t kiln__pass_canonicalize(kiln_module *m);
/* Common-subexpression elimination within each block. */
int32_t kiln__pass_cse(kiln_module *m);
/* kiln__module_dce as a pass. */
int32_t kiln__pass_dce(kiln_module *m);
/* Unrolls while loops that count from a constant to a constant in a few iterations
 * (unroll.c says which) into copies of their body. */
int32_t kiln__pass_unroll(kiln_module *m);
/* Loop-invariant code motion: ops of while bodies that compute the same in every
 * iteration move before their loop (licm.c says which). */
int32_t kiln__pass_licm(kiln_module *m);

/* Layout assignment for convolutions (layout.c): rank-4 float convolutions without groups
 * compute their results channels last ([N, H, W, C]), and the transposes back to the
 * logical layout move down through elementwise ops, pooling (reduce_window,
 * select_and_scatter) and reductions into the next convolution's dimension numbers, so
 * that a chain of layers changes layout only at its ends. Results are bitwise unchanged.
 * Run kiln__pass_canonicalize and dce after it (the transposes that meet cancel). Returns
 * the number of changes; `stats` (may be NULL) gets what it did. */
typedef struct kiln__layout_stats {
    int32_t convolutions; /* convolutions now computing their result channels last */
} kiln__layout_stats;
int32_t kiln__layout_assign(kiln_module *m, kiln__layout_stats *stats);
/* The transposes layout assignment made that are still in m (every block): where its
 * chains end. */
int32_t kiln__layout_transposes(const kiln_module *m);

/* Whether two dimension lists are the same, entry for entry. */
bool kiln__dims_equal(const kiln_dims *a, const kiln_dims *b);

/* Makes operand i of op the value v, keeping both values' uses counters right. */
void kiln__set_operand(kiln__ir_op *op, int32_t i, kiln__value *v);

/* Makes every use of `from` (an op result or argument defined in `b`) after `after` (NULL:
 * from the block's start) use `to` instead: operands of the later ops of b and of their
 * regions, and b's results. Keeps the uses counters right. Returns the uses replaced. */
int32_t kiln__replace_uses(kiln__block *b, const kiln__ir_op *after, kiln__value *from,
                           kiln__value *to);

/* ---- fusion (fusion.c) ----------------------------------------------------------------
 *
 * Unlike the passes above, fusion does not rewrite the module: it decides which ops of a
 * function body run together as fused kernels (ir/kernel.h) and describes each kernel.
 * Elementwise ops join the kernel of an elementwise producer; broadcast_in_dim, reshape (of
 * a row-major view), transpose, slice, reverse and iota are not run at all but read by
 * kernels through access patterns ("views"), and are materialized as ops of their own only
 * when something other than a kernel uses them; a reduce with a builtin combiner may end
 * the kernel of its producer. An op belongs to at most one kernel: only views are read by
 * several kernels, so no work is ever done twice. A kernel is closed (nothing more joins
 * it) once anything outside it uses one of its values, so kernels can run in block order at
 * the position of their last op. Everything else (dot_general, convolution, control flow,
 * data movement that is not a view) stays a single op. */

/* What fusion decided for an op of the body (per op, in block order). */
enum {
    KILN__FUSE_NONE = 0, /* runs as a single op (constants: owned by the executable) */
    KILN__FUSE_MEMBER,   /* part of a kernel */
    KILN__FUSE_VIEW,     /* not run: kernels read it through an access pattern */
    KILN__FUSE_EPILOGUE, /* runs inside its convolution's library call (kiln__conv_epilogue) */
};

/* A convolution whose bias add and ReLU run inside its library call, so that the
 * convolution's result never goes through memory again:
 *     y = maximum(add(convolution(lhs, rhs), broadcast(bias)), broadcast(+0))
 * with either of the two epilogue ops absent. `bias` is a value of the result's dtype
 * holding one element per output feature ([C], or [1, C, 1, 1] and the like), read through
 * any chain of views that puts element c at feature c; the ReLU operand is a constant of +0
 * bits. Each epilogue op is the only user of
 * the value before it. The call runs at the position of the last epilogue op and makes its
 * result; the convolution's own result is never stored. */
typedef struct kiln__conv_epilogue {
    const kiln__ir_op *conv; /* the convolution */
    int32_t last;            /* op index of the last epilogue op */
    const kiln__value *bias; /* or NULL */
    bool relu;
} kiln__conv_epilogue;

typedef struct kiln__fusion_options {
    /* The most instructions in a kernel (0: KILN__KERNEL_MAX_INSTRS). */
    int32_t max_instrs;
    /* Elementwise ops whose operands are all constants and whose result takes at most this
     * many bytes are left unfused (constant folding evaluates them). 0: none. */
    size_t fold_max_bytes;
    /* The builtin combiner of a reduce op, or KILN__KREDUCE_NONE; NULL fuses no reduce. */
    kiln__kreduce (*reduce_kind)(const kiln__ir_op *op);
    /* Whether convolutions with a float result (f16, bf16, f32, f64) take a bias add and
     * ReLU epilogue (kiln__conv_epilogue): the backend's library call can run them. */
    bool conv_epilogue;
    /* Where the plan's memory comes from (it lives as long as that memory). NULL on failure:
     * the allocator records the error. */
    void *(*alloc)(void *user, size_t size, size_t align);
    void *alloc_user;
} kiln__fusion_options;

/* What the plan knows of kernel g without building its description: enough for a backend
 * to choose how to run it before its last op is reached. */
typedef struct kiln__fusion_group {
    const kiln_shape *shape; /* the iteration space (a value type's, the module's) */
    int32_t last;            /* op index of its last member: where it runs */
    bool reduces;            /* ends in a reduce */
    bool reads_views;        /* some member reads a view (not a buffer as it is) */
} kiln__fusion_group;

typedef struct kiln__fuser kiln__fuser;

typedef struct kiln__fusion {
    int32_t n_kernels;
    kiln__fusion_group *kernels; /* per kernel */
    int32_t n_ops;               /* ops of the body */
    uint8_t *role;               /* per op: KILN__FUSE_* */
    int32_t *kernel;             /* per op: the index of its kernel, or -1 */
    kiln__conv_epilogue *epilogues;
    int32_t n_epilogues;
    int32_t *epilogue;  /* per op: for a convolution and its epilogue ops, the index into
                           epilogues, or -1 */
    kiln__fuser *fuser; /* the plan's state, for kiln__fusion_kernel */
} kiln__fusion;

/* Plans the fusion of block `b` (a function body whose values the plan refers to; values'
 * `id` fields are set: arguments 0.., then op results in order). Returns KILN_OK, or the
 * allocator's error (KILN_RESOURCE_EXHAUSTED). The plan lives in the options' memory and
 * refers to them (they must outlive it). Not thread-safe for one block. */
kiln_status kiln__fusion_plan(kiln_ctx *cx, const kiln__block *b, const kiln__fusion_options *o,
                              kiln__fusion *out);

/* Describes kernel g of the plan in *out, its arrays from alloc(user, size, align) (which
 * the caller may free once done with the kernel: a plan of 10^4 kernels never holds all
 * their descriptions at once). The block's values keep the ids the plan gave them.
 * Returns KILN_OK, or RESOURCE_EXHAUSTED when alloc fails (it records the error). Not
 * thread-safe for one plan. */
kiln_status kiln__fusion_kernel(kiln__fusion *f, int32_t g, kiln__kernel *out,
                                void *(*alloc)(void *user, size_t size, size_t align), void *user);

/* The plan as text: one line per op of the body ("%3 = multiply: kernel #0"), then the
 * kernels (kiln__kernel_print), described with the plan's own memory. */
void kiln__fusion_print(kiln__strbuf *sb, const kiln__block *b, kiln__fusion *f);

#endif
