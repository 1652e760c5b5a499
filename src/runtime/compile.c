/* kiln_compile: verify the module, simplify it (canonicalize, cse, dce), plan fusion, copy
 * it into the executable's own blocks (fused kernels built for the tiled engine, small
 * constant ops folded), plan the entry block's buffers (exec.h); and printing the result. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "backend/region.h"
#include "backends/cpu/eval.h"
#include "backends/cpu/fused.h"
#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "base/strbuf.h"
#include "ir/ir.h"
#include "passes/passes.h"
#include "runtime/exec.h"

/* Ops whose operands are all constants are run at compile time when their results take at
 * most this many bytes (a broadcast scalar, an iota index vector, ...). */
#define FOLD_MAX_BYTES 4096
/* Buffers in the arena start on a cache line. */
#define BUFFER_ALIGN 64
#define XMEM_BLOCK 16384

static const char compile_fn[] = "kiln_compile";

kiln_compile_options kiln_compile_options_default(void) {
    return (kiln_compile_options){.struct_size = sizeof(kiln_compile_options)};
}

/* ---- the executable's memory -------------------------------------------------------------- */

struct kiln__xmem_block {
    kiln__xmem_block *next;
    size_t size, used;
    _Alignas(64) unsigned char data[];
};

typedef struct compiler {
    kiln_ctx *cx;
    kiln_exe *exe;
    bool fold;                   /* evaluate small all-constant ops now */
    const kiln__fusion *fusion;  /* the entry block's, or NULL */
    const kiln__block *fused_ir; /* the block it plans */
} compiler;

static size_t align_up(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }

static void *xalloc(compiler *c, size_t size, size_t align) {
    kiln_exe *exe = c->exe;
    if (size == 0) size = 1;
    kiln__xmem_block *b = exe->mem;
    if (b) {
        size_t off = align_up(b->used, align);
        if (off <= b->size && size <= b->size - off) {
            b->used = off + size;
            return b->data + off;
        }
    }
    size_t data = size + align > XMEM_BLOCK ? size + align : XMEM_BLOCK;
    kiln__xmem_block *nb = kiln__raw_alloc(&exe->allocator, sizeof *nb + data, 64);
    if (!nb) {
        kiln_ctx_set_error(c->cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", compile_fn);
        return NULL;
    }
    nb->next = exe->mem;
    nb->size = data;
    nb->used = size;
    exe->mem = nb;
    return nb->data;
}

static void *xcalloc(compiler *c, size_t size, size_t align) {
    void *p = xalloc(c, size, align);
    if (p) memset(p, 0, size ? size : 1);
    return p;
}

#define XNEW(c, type, n) ((type *)xcalloc((c), (size_t)(n) * sizeof(type), _Alignof(type)))

/* Keeps t (a reference the caller holds, in no scope) for the executable's life. */
static bool own(compiler *c, kiln_tensor *t) {
    kiln_exe *exe = c->exe;
    if (exe->n_owned == exe->cap_owned) {
        int32_t cap = exe->cap_owned ? exe->cap_owned * 2 : 16;
        kiln_tensor **p = kiln__raw_alloc(&exe->allocator, (size_t)cap * sizeof *p, 16);
        if (!p) {
            kiln_ctx_set_error(c->cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", compile_fn);
            kiln_tensor_release(t);
            return false;
        }
        if (exe->owned) {
            memcpy(p, exe->owned, (size_t)exe->n_owned * sizeof *p);
            kiln__raw_free(&exe->allocator, exe->owned, (size_t)exe->cap_owned * sizeof *p);
        }
        exe->owned = p;
        exe->cap_owned = cap;
    }
    exe->owned[exe->n_owned++] = t;
    return true;
}

/* ---- copying blocks ----------------------------------------------------------------------- */

typedef struct cscope {
    const kiln__block *ir;
    kiln__xblock *x;
    const struct cscope *parent;
} cscope;

static bool resolve(compiler *c, const cscope *s, const kiln__value *v, kiln__xref *out) {
    const kiln__block *home = v->def ? v->def->block : v->block;
    for (int32_t d = 0; s; s = s->parent, d++) {
        if (s->ir == home) {
            *out = (kiln__xref){.depth = d, .slot = v->id};
            return true;
        }
    }
    kiln_ctx_set_error(c->cx, KILN_INTERNAL, "%s: internal: a value used outside its block",
                       compile_fn);
    return false;
}

static kiln_tensor *const_of(const cscope *s, kiln__xref r) {
    for (int32_t d = 0; d < r.depth; d++)
        s = s->parent;
    return s->x->consts[r.slot];
}

/* The executable's view of a constant op's value (shared storage, no copy). */
static kiln_tensor *constant_view(compiler *c, const kiln__ir_op *op) {
    kiln_tensor *t = (kiln_tensor *)op->attrs.u.constant;
    if (!t || t->trace) {
        kiln_ctx_set_error(c->cx, KILN_INTERNAL, "%s: internal: a constant without a value",
                           compile_fn);
        return NULL;
    }
    if (t->dead) {
        kiln__dead_error(c->cx, "kiln_compile: a constant of the module", t);
        return NULL;
    }
    kiln_tensor *v = kiln__tensor_view(c->cx, compile_fn, t, t->dtype, t->shape);
    if (!v) return NULL;
    kiln__owned_unlink(&v->owned);
    return own(c, v) ? v : NULL;
}

static size_t type_bytes(const kiln__type *t) {
    size_t n = 0;
    kiln_shape_nbytes(&t->shape, t->dtype, &n);
    return n;
}

static bool foldable(const compiler *c, const cscope *s, const kiln__ir_op *op,
                     const kiln__xref *in) {
    if (!c->fold) return false;
    if (kiln__op_has(op->kind, KILN_OPF_CONTROL) || op->n_regions > 0) return false;
    size_t bytes = 0;
    for (int32_t r = 0; r < op->n_results; r++) {
        bytes += type_bytes(&op->results[r]->type);
        if (bytes > FOLD_MAX_BYTES) return false;
    }
    for (int32_t i = 0; i < op->n_operands; i++)
        if (!const_of(s, in[i])) return false;
    return true;
}

/* Runs op now on its constant operands; its results become constants of the block. */
static bool fold(compiler *c, const cscope *s, const kiln__ir_op *op, const kiln__xref *in,
                 int32_t first) {
    kiln_ctx *cx = c->cx;
    int32_t n = op->n_operands + op->n_results;
    kiln_tensor *fixed[16];
    kiln_tensor **ts = fixed;
    size_t bytes = (size_t)n * sizeof *ts;
    if (n > 16 && !(ts = kiln__alloc(cx, bytes, _Alignof(kiln_tensor *), compile_fn))) return false;
    kiln_tensor **ins = ts, **outs = ts + op->n_operands;
    for (int32_t i = 0; i < op->n_operands; i++)
        ins[i] = const_of(s, in[i]);
    bool ok = true;
    for (int32_t r = 0; r < op->n_results && ok; r++) {
        const kiln__type *t = &op->results[r]->type;
        outs[r] = kiln__tensor_new(cx, compile_fn, t->dtype, t->shape);
        if (outs[r]) kiln__owned_unlink(&outs[r]->owned);
        ok = outs[r] && own(c, outs[r]);
        if (ok) s->x->consts[first + r] = outs[r];
    }
    if (ok) {
        kiln_status st = kiln__cpu_backend()->eval_op(cx, op->kind, &op->attrs, ins, op->n_operands,
                                                      outs, op->n_results);
        if (st != KILN_OK && kiln_ctx_status(cx) == KILN_OK)
            kiln_ctx_set_error(cx, st, "%s: folding %s failed", compile_fn,
                               kiln__op_get_info(op->kind)->name);
        ok = st == KILN_OK;
    }
    if (ts != fixed) kiln__free(cx, ts, bytes);
    return ok;
}

/* The backend's optional compile-time preparation of an op of `kind` with these operand
 * and result types. */
static bool prepare_types(compiler *c, kiln_op kind, const kiln__attrs *attrs,
                          const kiln__type *types, int32_t n_in, int32_t n_out) {
    const kiln__backend *be = kiln__cpu_backend();
    if (!be->prepare_op) return true;
    kiln_status s = be->prepare_op(c->cx, kind, attrs, types, n_in, types + n_in, n_out);
    if (s != KILN_OK && kiln_ctx_status(c->cx) == KILN_OK)
        kiln_ctx_set_error(c->cx, s, "%s: preparing %s failed", compile_fn,
                           kiln__op_get_info(kind)->name);
    return s == KILN_OK;
}

/* prepare_types for a single op of the module. */
static bool prepare(compiler *c, const kiln__ir_op *op) {
    if (!kiln__cpu_backend()->prepare_op) return true;
    kiln__type fixed[16];
    int32_t n = op->n_operands + op->n_results;
    kiln__type *types = n <= 16 ? fixed : XNEW(c, kiln__type, n);
    if (!types) return false;
    for (int32_t i = 0; i < op->n_operands; i++)
        types[i] = op->operands[i]->type;
    for (int32_t r = 0; r < op->n_results; r++)
        types[op->n_operands + r] = op->results[r]->type;
    return prepare_types(c, op->kind, &op->attrs, types, op->n_operands, op->n_results);
}

static void *xalloc_cb(void *user, size_t size, size_t align) { return xalloc(user, size, align); }

/* A copy of a kernel's description that outlives the module, for printing: the module's
 * values and ops it names become copies holding only their types, numbers and kinds. */
static kiln__value *keep_value(compiler *c, const kiln__value *v) {
    kiln__value *copy = XNEW(c, kiln__value, 1);
    if (copy) *copy = (kiln__value){.type = v->type, .index = v->index, .id = v->id};
    return copy;
}

static const kiln__kernel *keep_kernel(compiler *c, const kiln__kernel *k) {
    kiln__kernel *d = XNEW(c, kiln__kernel, 1);
    if (!d) return NULL;
    *d = *k;
    d->operands = XNEW(c, const kiln__value *, k->n_operands);
    d->inputs = XNEW(c, kiln__kinput, k->n_inputs);
    d->instrs = XNEW(c, kiln__kinstr, k->n_instrs);
    d->outputs = XNEW(c, kiln__koutput, k->n_outputs);
    d->ops = XNEW(c, const kiln__ir_op *, k->n_ops);
    if (!d->operands || !d->inputs || !d->instrs || !d->outputs || !d->ops) return NULL;
    for (int32_t i = 0; i < k->n_operands; i++)
        if (!(d->operands[i] = keep_value(c, k->operands[i]))) return NULL;
    memcpy(d->inputs, k->inputs, (size_t)k->n_inputs * sizeof *d->inputs);
    for (int32_t j = 0; j < k->n_instrs; j++) {
        d->instrs[j] = k->instrs[j];
        d->instrs[j].src = NULL;
    }
    for (int32_t o = 0; o < k->n_outputs; o++) {
        d->outputs[o].reg = k->outputs[o].reg;
        if (!(d->outputs[o].value = keep_value(c, k->outputs[o].value))) return NULL;
    }
    for (int32_t i = 0; i < k->n_ops; i++) {
        kiln__ir_op *op = XNEW(c, kiln__ir_op, 1);
        if (!op) return NULL;
        op->kind = k->ops[i]->kind;
        d->ops[i] = op;
    }
    d->reduce_op = NULL;
    if (k->reduce_value && !(d->reduce_value = keep_value(c, k->reduce_value))) return NULL;
    return d;
}

/* A fused kernel becomes one op of the block, at the position of its last op. */
static bool emit_kernel(compiler *c, const cscope *self, kiln__xblock *b, const kiln__kernel *k) {
    int32_t n_out = k->n_outputs + (k->reduce != KILN__KREDUCE_NONE);
    kiln__xref *in = XNEW(c, kiln__xref, k->n_operands);
    int32_t *out = XNEW(c, int32_t, n_out);
    if (!in || !out) return false;
    for (int32_t i = 0; i < k->n_operands; i++)
        if (!resolve(c, self, k->operands[i], &in[i])) return false;
    for (int32_t o = 0; o < k->n_outputs; o++)
        out[o] = k->outputs[o].value->id;
    if (k->reduce != KILN__KREDUCE_NONE) out[k->n_outputs] = k->reduce_value->id;
    const kiln__fused *fk = kiln__fused_build(c->cx, k, xalloc_cb, c);
    const kiln__kernel *kept = fk ? keep_kernel(c, k) : NULL;
    if (!kept) return false;
    const kiln__ir_op *last = k->ops[k->n_ops - 1];
    b->ops[b->n_ops] = (kiln__xop){.kind = last->kind,
                                   .n_in = k->n_operands,
                                   .n_out = n_out,
                                   .in = in,
                                   .out = out,
                                   .regions = NULL,
                                   .attrs = &last->attrs,
                                   .kernel = fk,
                                   .desc = kept};
    if (k->n_operands > b->max_in) b->max_in = k->n_operands;
    if (n_out > b->max_out) b->max_out = n_out;
    b->n_ops++;
    c->exe->n_kernels++;
    c->exe->n_fused_ops += k->n_ops;
    return true;
}

/* A convolution and its epilogue become one op at the position of the last epilogue op,
 * `last`, making that op's result. */
static bool emit_conv_epilogue(compiler *c, const cscope *self, kiln__xblock *b,
                               const kiln__conv_epilogue *e, const kiln__ir_op *last) {
    const kiln__ir_op *conv = e->conv;
    int32_t n_in = e->bias ? 3 : 2;
    kiln__xref *in = XNEW(c, kiln__xref, n_in);
    int32_t *out = XNEW(c, int32_t, 1);
    kiln__attrs *attrs = XNEW(c, kiln__attrs, 1);
    if (!in || !out || !attrs) return false;
    for (int32_t i = 0; i < 2; i++)
        if (!resolve(c, self, conv->operands[i], &in[i])) return false;
    if (e->bias && !resolve(c, self, e->bias, &in[2])) return false;
    out[0] = last->results[0]->id;
    *attrs = conv->attrs;
    b->ops[b->n_ops] = (kiln__xop){.kind = KILN_OP_CONVOLUTION,
                                   .n_in = n_in,
                                   .n_out = 1,
                                   .in = in,
                                   .out = out,
                                   .attrs = attrs,
                                   .conv_epilogue = true,
                                   .activation = e->relu ? KILN__ACT_RELU : KILN__ACT_NONE};
    if (n_in > b->max_in) b->max_in = n_in;
    if (1 > b->max_out) b->max_out = 1;
    b->n_ops++;
    c->exe->n_epilogues++;
    kiln__type types[4] = {conv->operands[0]->type, conv->operands[1]->type};
    if (e->bias) types[2] = e->bias->type;
    types[n_in] = last->results[0]->type;
    return prepare_types(c, KILN_OP_CONVOLUTION, attrs, types, n_in, 1);
}

static kiln__xblock *compile_block(compiler *c, const kiln__block *ir, const cscope *parent) {
    kiln__xblock *b = XNEW(c, kiln__xblock, 1);
    if (!b) return NULL;
    int32_t n_ops = 0, n_slots = ir->n_args;
    for (const kiln__ir_op *op = ir->first; op; op = op->next) {
        n_ops++;
        n_slots += op->n_results;
    }
    b->n_args = ir->n_args;
    b->n_slots = n_slots;
    b->n_results = ir->n_results;
    b->types = XNEW(c, kiln__type, n_slots);
    b->consts = XNEW(c, kiln_tensor *, n_slots);
    b->ops = XNEW(c, kiln__xop, n_ops);
    b->results = XNEW(c, kiln__xref, ir->n_results);
    if (!b->types || !b->consts || !b->ops || !b->results) return NULL;
    cscope self = {.ir = ir, .x = b, .parent = parent};
    for (int32_t i = 0; i < ir->n_args; i++) {
        ir->args[i]->id = i;
        b->types[i] = ir->args[i]->type;
    }
    int32_t slot = ir->n_args;
    const kiln__fusion *fz = c->fused_ir == ir ? c->fusion : NULL;
    int32_t index = -1;
    for (const kiln__ir_op *op = ir->first; op; op = op->next) {
        index++;
        int32_t first = slot;
        for (int32_t r = 0; r < op->n_results; r++) {
            op->results[r]->id = slot;
            b->types[slot++] = op->results[r]->type;
        }
        if (op->kind == KILN_OP_CONSTANT) {
            if (!(b->consts[first] = constant_view(c, op))) return NULL;
            continue;
        }
        if (fz && fz->role[index] == KILN__FUSE_VIEW) {
            c->exe->n_views++;
            continue;
        }
        if (fz && fz->epilogue[index] >= 0) {
            const kiln__conv_epilogue *e = &fz->epilogues[fz->epilogue[index]];
            if (e->last != index) continue; /* the call runs at its last epilogue op */
            if (!emit_conv_epilogue(c, &self, b, e, op)) return NULL;
            continue;
        }
        if (fz && fz->role[index] == KILN__FUSE_MEMBER) {
            const kiln__kernel *k = &fz->kernels[fz->kernel[index]];
            if (k->ops[k->n_ops - 1] != op) continue; /* the kernel runs at its last op */
            if (!emit_kernel(c, &self, b, k)) return NULL;
            continue;
        }
        kiln__xref *in = XNEW(c, kiln__xref, op->n_operands);
        if (!in) return NULL;
        for (int32_t i = 0; i < op->n_operands; i++)
            if (!resolve(c, &self, op->operands[i], &in[i])) return NULL;
        if (foldable(c, &self, op, in)) {
            if (!fold(c, &self, op, in, first)) return NULL;
            continue;
        }
        kiln__xop *x = &b->ops[b->n_ops];
        int32_t *out = XNEW(c, int32_t, op->n_results);
        kiln__xblock **regions = XNEW(c, kiln__xblock *, op->n_regions);
        kiln__attrs *attrs = XNEW(c, kiln__attrs, 1);
        if (!out || !regions || !attrs) return NULL;
        for (int32_t r = 0; r < op->n_results; r++)
            out[r] = first + r;
        *attrs = op->attrs;
        attrs->regions = NULL;
        attrs->n_regions = op->n_regions;
        for (int32_t i = 0; i < op->n_regions; i++) {
            const kiln_region *builtin = i < 2 ? op->attrs.region[i] : NULL;
            if (builtin) continue;
            if (!op->regions[i]) {
                kiln_ctx_set_error(c->cx, KILN_INTERNAL, "%s: internal: a missing region",
                                   compile_fn);
                return NULL;
            }
            if (!(regions[i] = compile_block(c, op->regions[i], &self))) return NULL;
        }
        *x = (kiln__xop){.kind = op->kind,
                         .control = kiln__op_has(op->kind, KILN_OPF_CONTROL),
                         .n_in = op->n_operands,
                         .n_out = op->n_results,
                         .n_regions = op->n_regions,
                         .in = in,
                         .out = out,
                         .regions = regions,
                         .attrs = attrs};
        if (x->n_in > b->max_in) b->max_in = x->n_in;
        if (x->n_out > b->max_out) b->max_out = x->n_out;
        b->n_ops++;
        if (!prepare(c, op)) return NULL;
    }
    for (int32_t i = 0; i < ir->n_results; i++)
        if (!resolve(c, &self, ir->results[i], &b->results[i])) return NULL;
    return b;
}

/* ---- the buffer plan ---------------------------------------------------------------------- */

bool kiln__xop_inplace_ok(const kiln__xblock *b, const kiln__xop *op, int32_t i) {
    if (op->kernel) return op->in[i].depth == 0 && kiln__fused_inplace_ok(op->kernel, i);
    if (!kiln__op_has(op->kind, KILN_OPF_ELEMENTWISE) || op->n_out != 1 || op->in[i].depth != 0)
        return false;
    const kiln__type *x = &b->types[op->in[i].slot], *r = &b->types[op->out[0]];
    if (kiln_dtype_size(x->dtype) != kiln_dtype_size(r->dtype) ||
        !kiln_shape_equal(&x->shape, &r->shape))
        return false;
    /* These kernels memcpy the operand: not over itself. */
    if (op->kind == KILN_OP_CONVERT && x->dtype == r->dtype) return false;
    if (op->kind == KILN_OP_SELECT && b->types[op->in[0].slot].shape.rank == 0) return false;
    return true;
}

/* Uses of entry slots (depth `depth` from b) by ops of b and its regions count at k. */
static void mark_uses(const kiln__xblock *b, int32_t depth, int32_t k, int32_t *last) {
    for (int32_t j = 0; j < b->n_ops; j++) {
        const kiln__xop *op = &b->ops[j];
        for (int32_t i = 0; i < op->n_in; i++)
            if (op->in[i].depth == depth && last[op->in[i].slot] < k) last[op->in[i].slot] = k;
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) mark_uses(op->regions[r], depth + 1, k, last);
    }
    for (int32_t i = 0; i < b->n_results; i++)
        if (b->results[i].depth == depth && last[b->results[i].slot] < k)
            last[b->results[i].slot] = k;
}

/* Live arena buffers, sorted by offset. */
typedef struct interval {
    size_t off, size;
    int32_t slot;
} interval;

typedef struct arena_plan {
    interval *iv;
    int32_t n;
    size_t peak;
} arena_plan;

/* First fit: the lowest gap that holds size bytes. */
static size_t arena_take(arena_plan *p, size_t size, int32_t slot) {
    size_t end = 0;
    int32_t at = p->n;
    for (int32_t i = 0; i < p->n; i++) {
        if (p->iv[i].off >= end && p->iv[i].off - end >= size) {
            at = i;
            break;
        }
        end = p->iv[i].off + p->iv[i].size;
    }
    memmove(&p->iv[at + 1], &p->iv[at], (size_t)(p->n - at) * sizeof *p->iv);
    p->iv[at] = (interval){.off = end, .size = size, .slot = slot};
    p->n++;
    if (end + size > p->peak) p->peak = end + size;
    return end;
}

static void arena_give(arena_plan *p, int32_t slot) {
    for (int32_t i = 0; i < p->n; i++) {
        if (p->iv[i].slot == slot) {
            memmove(&p->iv[i], &p->iv[i + 1], (size_t)(p->n - i - 1) * sizeof *p->iv);
            p->n--;
            return;
        }
    }
}

static void arena_rename(arena_plan *p, int32_t from, int32_t to) {
    for (int32_t i = 0; i < p->n; i++)
        if (p->iv[i].slot == from) p->iv[i].slot = to;
}

/* Can result r write straight into donated argument a's buffer from op p on? Only once
 * every other read of a is done: a is last used before p, or by p itself in place. */
static bool direct_ok(const kiln__xblock *b, const int32_t *last, int32_t a, int32_t p) {
    if (last[a] < p) return true;
    if (last[a] > p) return false;
    const kiln__xop *op = &b->ops[p];
    for (int32_t i = 0; i < op->n_in; i++)
        if (op->in[i].depth == 0 && op->in[i].slot == a && !kiln__xop_inplace_ok(b, op, i))
            return false;
    return true;
}

typedef struct plan_scratch {
    int32_t *last, *def, *die_head, *die_next;
    bool *holds;
    interval *iv;
} plan_scratch;

static kiln_status plan_entry(compiler *c, bool assert_nonallocating) {
    kiln_ctx *cx = c->cx;
    kiln_exe *exe = c->exe;
    const kiln__xblock *b = exe->entry;
    int32_t n = b->n_slots, n_ops = b->n_ops;
    exe->slot_kind = XNEW(c, uint8_t, n);
    exe->slot_offset = XNEW(c, size_t, n);
    exe->slot_tensor = XNEW(c, int32_t, n);
    exe->results = XNEW(c, kiln__result_plan, exe->n_results);
    /* Compile-time scratch goes in the executable's memory too: it is small. */
    plan_scratch s = {.last = XNEW(c, int32_t, n),
                      .def = XNEW(c, int32_t, n),
                      .die_head = XNEW(c, int32_t, n_ops + 1),
                      .die_next = XNEW(c, int32_t, n),
                      .holds = XNEW(c, bool, n),
                      .iv = XNEW(c, interval, n)};
    if (!exe->slot_kind || !exe->slot_offset || !exe->slot_tensor || !exe->results || !s.last ||
        !s.def || !s.die_head || !s.die_next || !s.holds || !s.iv)
        return KILN_RESOURCE_EXHAUSTED;

    for (int32_t v = 0; v < n; v++) {
        s.last[v] = -1;
        s.def[v] = -1;
        exe->slot_tensor[v] = -1;
        exe->slot_kind[v] = v < b->n_args  ? KILN__SLOT_ARG
                            : b->consts[v] ? KILN__SLOT_CONST
                                           : KILN__SLOT_ARENA;
    }
    for (int32_t k = 0; k < n_ops; k++) {
        const kiln__xop *op = &b->ops[k];
        for (int32_t i = 0; i < op->n_out; i++) {
            s.def[op->out[i]] = k;
            if (op->control) exe->slot_kind[op->out[i]] = KILN__SLOT_CONTROL;
        }
        for (int32_t i = 0; i < op->n_in; i++)
            if (s.last[op->in[i].slot] < k) s.last[op->in[i].slot] = k;
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) mark_uses(op->regions[r], 1, k, s.last);
    }
    for (int32_t r = 0; r < b->n_results; r++)
        s.last[b->results[r].slot] = n_ops;
    for (int32_t v = b->n_args; v < n; v++)
        if (s.def[v] < 0 && exe->slot_kind[v] == KILN__SLOT_ARENA)
            exe->slot_kind[v] = KILN__SLOT_UNUSED;

    /* Results. */
    bool *taken = s.holds; /* reused below, cleared after */
    int32_t *home = s.die_next;
    for (int32_t v = 0; v < n; v++)
        home[v] = -1;
    for (int32_t r = 0; r < exe->n_results; r++) {
        int32_t v = b->results[r].slot, a = exe->aliases[r];
        kiln__result_plan *rp = &exe->results[r];
        *rp = (kiln__result_plan){.kind = KILN__RESULT_COPY, .slot = v, .alias = a};
        uint8_t kind = exe->slot_kind[v];
        if (exe->preserved[r] >= 0 || kind == KILN__SLOT_ARG) {
            rp->kind = KILN__RESULT_ARG;
            rp->alias = -1;
        } else if (kind == KILN__SLOT_CONST) {
            if (a < 0) rp->kind = KILN__RESULT_CONST;
        } else if (kind == KILN__SLOT_CONTROL) {
            if (a < 0 && !taken[v]) {
                rp->kind = KILN__RESULT_TAKE;
                taken[v] = true;
            }
        } else if (home[v] < 0 && (a < 0 || direct_ok(b, s.last, a, s.def[v]))) {
            rp->kind = KILN__RESULT_DIRECT;
            home[v] = r;
            exe->slot_kind[v] = KILN__SLOT_OUTPUT;
        }
        if (assert_nonallocating && exe->preserved[r] < 0 && a < 0) {
            char t[KILN__TYPE_TEXT];
            return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                                      "%s: assert_nonallocating: result %d (%s) reuses no "
                                      "donated or preserved buffer (no donated argument of its "
                                      "dtype and byte size is left to alias)",
                                      compile_fn, (int)r, kiln__type_text(&b->types[v], t));
        }
    }
    memset(s.holds, 0, (size_t)n * sizeof *s.holds);

    /* Arena slots die after their last use (an unused result right after its op). */
    for (int32_t k = 0; k <= n_ops; k++)
        s.die_head[k] = -1;
    int32_t n_arena = 0, n_control = 0;
    for (int32_t v = 0; v < n; v++) {
        s.die_next[v] = -1;
        if (exe->slot_kind[v] == KILN__SLOT_CONTROL) n_control++;
        if (exe->slot_kind[v] != KILN__SLOT_ARENA) continue;
        exe->slot_tensor[v] = n_arena++;
        int32_t end = s.last[v] >= 0 ? s.last[v] : s.def[v];
        s.die_next[v] = s.die_head[end];
        s.die_head[end] = v;
    }
    exe->n_arena = n_arena;
    exe->n_control = n_control;
    exe->control_slots = XNEW(c, int32_t, n_control);
    if (!exe->control_slots) return KILN_RESOURCE_EXHAUSTED;
    for (int32_t v = 0, i = 0; v < n; v++)
        if (exe->slot_kind[v] == KILN__SLOT_CONTROL) exe->control_slots[i++] = v;

    arena_plan ap = {.iv = s.iv};
    for (int32_t k = 0; k < n_ops; k++) {
        const kiln__xop *op = &b->ops[k];
        for (int32_t j = 0; j < op->n_out && !op->control; j++) {
            int32_t v = op->out[j];
            if (exe->slot_kind[v] != KILN__SLOT_ARENA) continue;
            size_t size = align_up(type_bytes(&b->types[v]), BUFFER_ALIGN);
            if (size == 0) continue;
            int32_t reuse = -1;
            for (int32_t i = 0; i < op->n_in && reuse < 0; i++) {
                int32_t u = op->in[i].slot;
                if (op->in[i].depth == 0 && exe->slot_kind[u] == KILN__SLOT_ARENA && s.holds[u] &&
                    s.last[u] == k && type_bytes(&b->types[u]) == type_bytes(&b->types[v]) &&
                    kiln__xop_inplace_ok(b, op, i))
                    reuse = u;
            }
            if (reuse >= 0) {
                exe->slot_offset[v] = exe->slot_offset[reuse];
                arena_rename(&ap, reuse, v);
                s.holds[reuse] = false;
            } else {
                exe->slot_offset[v] = arena_take(&ap, size, v);
            }
            s.holds[v] = true;
        }
        for (int32_t v = s.die_head[k]; v >= 0; v = s.die_next[v]) {
            if (!s.holds[v]) continue;
            arena_give(&ap, v);
            s.holds[v] = false;
        }
    }
    exe->arena_bytes = ap.peak;
    exe->n_ops = n_ops;

    /* The call state's layout. */
    size_t off = align_up(sizeof(kiln__call_state), 64);
    exe->off_arena = off;
    off = align_up(off + exe->arena_bytes, 64);
    exe->off_tensors = off;
    off += (size_t)n_arena * sizeof(kiln_tensor);
    exe->off_vals = off = align_up(off, _Alignof(kiln_tensor *));
    off += (size_t)n * sizeof(kiln_tensor *);
    exe->off_scratch = off;
    off += (size_t)(b->max_in + b->max_out) * sizeof(kiln_tensor *);
    exe->off_outs = off;
    off += (size_t)exe->n_results * sizeof(kiln_tensor *);
    exe->off_msgs = off;
    off += (size_t)exe->n_args * sizeof(char *);
    exe->off_exclusive = off;
    off += (size_t)exe->n_args;
    exe->state_bytes = align_up(off, 64);
    return KILN_OK;
}

/* ---- kiln_compile ------------------------------------------------------------------------- */

/* The combiner of a reduce that a kernel can end with (a builtin region). */
static kiln__kreduce reduce_kind(const kiln__ir_op *op) {
    if (op->n_regions != 1 || !op->attrs.region[0]) return KILN__KREDUCE_NONE;
    kiln_dtype dt = op->operands[0]->type.dtype;
    bool is_float = dt == KILN_F16 || dt == KILN_BF16 || dt == KILN_F32 || dt == KILN_F64;
    switch (kiln__region_kind_of(op->attrs.region[0])) {
    case KILN_REGION_ADD: return KILN__KREDUCE_ADD;
    case KILN_REGION_MULTIPLY: return KILN__KREDUCE_MUL;
    case KILN_REGION_MAXIMUM: return KILN__KREDUCE_MAX;
    case KILN_REGION_MINIMUM: return KILN__KREDUCE_MIN;
    case KILN_REGION_AND: return is_float ? KILN__KREDUCE_NONE : KILN__KREDUCE_AND;
    case KILN_REGION_OR: return is_float ? KILN__KREDUCE_NONE : KILN__KREDUCE_OR;
    default: return KILN__KREDUCE_NONE;
    }
}

static const char *copy_string(compiler *c, const char *text) {
    if (!text) return NULL;
    size_t n = strlen(text) + 1;
    char *s = xalloc(c, n, 1);
    if (s) memcpy(s, text, n);
    return s;
}

static kiln_status build(compiler *c, kiln_module *m, const kiln_compile_options *o) {
    kiln_exe *exe = c->exe;
    const kiln__func *main_fn = m->funcs[0];
    const kiln__block *body = main_fn->body;
    exe->n_args = body->n_args;
    exe->n_results = body->n_results;
    exe->name = copy_string(c, m->name ? m->name : "kiln");
    exe->arg_names = XNEW(c, const char *, exe->n_args);
    exe->arg_types = XNEW(c, kiln__type, exe->n_args);
    exe->donated = XNEW(c, bool, exe->n_args);
    exe->preserved = XNEW(c, int32_t, exe->n_results);
    exe->aliases = XNEW(c, int32_t, exe->n_results);
    if (!exe->name || !exe->arg_names || !exe->arg_types || !exe->donated || !exe->preserved ||
        !exe->aliases)
        return KILN_RESOURCE_EXHAUSTED;
    for (int32_t i = 0; i < exe->n_args; i++) {
        exe->arg_types[i] = body->args[i]->type;
        exe->donated[i] = m->donated && m->donated[i];
        exe->n_donated += exe->donated[i];
        const char *name = main_fn->arg_names ? main_fn->arg_names[i] : NULL;
        if (name && !(exe->arg_names[i] = copy_string(c, name))) return KILN_RESOURCE_EXHAUSTED;
    }
    for (int32_t r = 0; r < exe->n_results; r++) {
        exe->preserved[r] = m->preserved ? m->preserved[r] : -1;
        exe->aliases[r] = m->aliases ? m->aliases[r] : -1;
    }
    /* A donated argument that is also returned as it is must keep its values: no other
     * result may be written into its buffer (a parsed convention, or one a rewrite turned
     * into a returned argument, may say otherwise). */
    for (int32_t r = 0; r < exe->n_results; r++) {
        const kiln__value *v = body->results[r];
        int32_t returned = exe->preserved[r] >= 0          ? exe->preserved[r]
                           : (!v->def && v->block == body) ? v->index
                                                           : -1;
        if (returned < 0) continue;
        for (int32_t q = 0; q < exe->n_results; q++)
            if (exe->aliases[q] == returned) exe->aliases[q] = -1;
    }
    c->fold = !o->disable_constant_folding;
    kiln__fusion fusion;
    if (!o->disable_fusion) {
        kiln__fusion_options fo = {.fold_max_bytes = c->fold ? FOLD_MAX_BYTES : 0,
                                   .reduce_kind = reduce_kind,
                                   .conv_epilogue = true,
                                   .alloc = xalloc_cb,
                                   .alloc_user = c};
        kiln_status fs = kiln__fusion_plan(c->cx, body, &fo, &fusion);
        if (fs != KILN_OK) return fs;
        c->fusion = &fusion;
        c->fused_ir = body;
    }
    exe->entry = compile_block(c, body, NULL);
    c->fusion = NULL;
    if (!exe->entry)
        return kiln_ctx_status(c->cx) != KILN_OK ? kiln_ctx_status(c->cx) : KILN_RESOURCE_EXHAUSTED;
    return plan_entry(c, o->assert_nonallocating);
}

kiln_status kiln_compile(kiln_ctx *cx, kiln_module *m, const kiln_compile_options *options,
                         kiln_exe **out_exe) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_exe) return kiln__null_argument(cx, compile_fn, "out_exe");
    *out_exe = NULL;
    if (!m) return kiln__null_argument(cx, compile_fn, "module");
    kiln_compile_options o = kiln_compile_options_default();
    if (options) {
        if (options->struct_size < sizeof(kiln_compile_options))
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: options->struct_size is %zu; expected %zu (use "
                                      "kiln_compile_options_default)",
                                      compile_fn, options->struct_size,
                                      sizeof(kiln_compile_options));
        o = *options;
    }
    if (o.device.type == 0) o.device = cx->device;
    if (o.device.type != KILN_DEVICE_TYPE_CPU)
        return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                  "%s: device %s:%d is not supported (only the CPU is)", compile_fn,
                                  kiln_device_type_name(o.device.type), (int)o.device.id);
    if (m->n_funcs < 1)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: the module has no function",
                                  compile_fn);

    /* The verifier records errors in the module's ctx. */
    kiln_status s = kiln__module_verify(m);
    if (s != KILN_OK) {
        if (m->cx != cx) kiln_ctx_set_error(cx, s, "%s", kiln_ctx_error_message(m->cx));
        return s;
    }
    if (o.disable_passes)
        kiln__module_dce(m);
    else
        kiln__passes_simplify(m); /* canonicalize, cse, dce to a fixed point */

    kiln_exe *exe = kiln__calloc(cx, sizeof *exe, _Alignof(kiln_exe), compile_fn);
    if (!exe) return KILN_RESOURCE_EXHAUSTED;
    atomic_init(&exe->refs, 1);
    exe->allocator = cx->allocator;
    if (pthread_mutex_init(&exe->lock, NULL) != 0) {
        kiln__free(cx, exe, sizeof *exe);
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: no mutex", compile_fn);
    }
    exe->lock_made = true;
    exe->device = o.device;
    compiler c = {.cx = cx, .exe = exe};
    s = build(&c, m, &o);
    if (s != KILN_OK) {
        if (kiln_ctx_status(cx) == KILN_OK)
            kiln_ctx_set_error(cx, s, "%s: out of memory", compile_fn);
        kiln_exe_release(exe);
        return s;
    }
    kiln__exe_make_result_pool(exe);
    if ((s = kiln__exe_prime(cx, exe)) != KILN_OK) {
        kiln_exe_release(exe);
        return s;
    }
    *out_exe = exe;
    return KILN_OK;
}

kiln_exe *kiln_exe_retain(kiln_exe *exe) {
    if (exe) atomic_fetch_add_explicit(&exe->refs, 1, memory_order_relaxed);
    return exe;
}

void kiln_exe_release(kiln_exe *exe) {
    if (!exe || atomic_fetch_sub_explicit(&exe->refs, 1, memory_order_acq_rel) != 1) return;
    kiln_allocator a = exe->allocator;
    kiln__exe_free_states(exe);
    if (exe->lock_made) pthread_mutex_destroy(&exe->lock);
    for (int32_t i = 0; i < exe->n_owned; i++)
        kiln_tensor_release(exe->owned[i]);
    if (exe->owned) kiln__raw_free(&a, exe->owned, (size_t)exe->cap_owned * sizeof *exe->owned);
    for (kiln__xmem_block *b = exe->mem; b;) {
        kiln__xmem_block *next = b->next;
        kiln__raw_free(&a, b, sizeof *b + b->size);
        b = next;
    }
    kiln__raw_free(&a, exe, sizeof *exe);
}

kiln_status kiln_exe_info_get(kiln_ctx *cx, const kiln_exe *exe, kiln_exe_info *out_info) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!exe) return kiln__null_argument(cx, "kiln_exe_info_get", "exe");
    if (!out_info) return kiln__null_argument(cx, "kiln_exe_info_get", "out_info");
    *out_info = (kiln_exe_info){.n_args = exe->n_args,
                                .n_results = exe->n_results,
                                .aliases = exe->aliases,
                                .preserved = exe->preserved,
                                .n_ops = exe->n_ops,
                                .arena_bytes = exe->arena_bytes,
                                .n_buffers = exe->n_arena,
                                .n_kernels = exe->n_kernels,
                                .n_fused_ops = exe->n_fused_ops,
                                .n_conv_epilogues = exe->n_epilogues};
    return KILN_OK;
}

/* ---- printing ----------------------------------------------------------------------------- */

static const char *slot_kind_name(uint8_t kind) {
    switch (kind) {
    case KILN__SLOT_ARG: return "argument";
    case KILN__SLOT_CONST: return "constant";
    case KILN__SLOT_ARENA: return "arena";
    case KILN__SLOT_OUTPUT: return "result";
    case KILN__SLOT_CONTROL: return "made by its op";
    default: return "never stored";
    }
}

static void print_slot(kiln__strbuf *sb, const kiln_exe *exe, int32_t v) {
    char t[KILN__TYPE_TEXT];
    kiln__strbuf_printf(sb, "%%%d %s", (int)v, kiln__type_text(&exe->entry->types[v], t));
}

static void exe_text(kiln__strbuf *sb, const kiln_exe *exe) {
    const kiln__xblock *b = exe->entry;
    kiln__kcost total = {0};
    kiln__strbuf_printf(sb,
                        "executable @%s: %d args, %d results, %d ops (%d fused kernels replacing "
                        "%d ops; %d views read in place; %d convolution epilogues)\n",
                        exe->name, (int)exe->n_args, (int)exe->n_results, (int)exe->n_ops,
                        (int)exe->n_kernels, (int)exe->n_fused_ops, (int)exe->n_views,
                        (int)exe->n_epilogues);
    for (int32_t k = 0; k < b->n_ops; k++) {
        const kiln__xop *op = &b->ops[k];
        kiln__strbuf_printf(sb, "op %d: ", (int)k);
        if (op->desc) {
            kiln__kcost c = kiln__kernel_cost(op->desc);
            total.flops += c.flops;
            total.transcendentals += c.transcendentals;
            total.bytes_read += c.bytes_read;
            total.bytes_written += c.bytes_written;
            kiln__strbuf_printf(sb, "fused, tile %lld elements, %d instructions on the evaluator\n",
                                (long long)kiln__fused_tile(op->kernel),
                                (int)kiln__fused_n_fallback(op->kernel));
            kiln__kernel_print(sb, op->desc, "  ");
            kiln__strbuf_printf(sb,
                                "  cost: %lld flops, %lld transcendentals, %lld bytes read, %lld "
                                "bytes written\n",
                                (long long)c.flops, (long long)c.transcendentals,
                                (long long)c.bytes_read, (long long)c.bytes_written);
            continue;
        }
        kiln__strbuf_printf(sb, "%s", kiln__op_get_info(op->kind)->name);
        if (op->conv_epilogue)
            kiln__strbuf_printf(sb, " with epilogue%s%s", op->n_in > 2 ? " bias" : "",
                                op->activation == KILN__ACT_RELU ? " relu" : "");
        for (int32_t i = 0; i < op->n_in; i++)
            kiln__strbuf_printf(sb, "%s%%%d", i ? ", " : " ", (int)op->in[i].slot);
        kiln__strbuf_puts(sb, " ->");
        for (int32_t i = 0; i < op->n_out; i++)
            kiln__strbuf_printf(sb, "%s%%%d", i ? ", " : " ", (int)op->out[i]);
        kiln__strbuf_puts(sb, "\n");
    }
    kiln__strbuf_printf(sb, "memory plan: arena peak %zu bytes, %d buffers\n", exe->arena_bytes,
                        (int)exe->n_arena);
    for (int32_t v = b->n_args; v < b->n_slots; v++) {
        uint8_t kind = exe->slot_kind[v];
        if (kind == KILN__SLOT_CONST || kind == KILN__SLOT_UNUSED) continue;
        kiln__strbuf_puts(sb, "  ");
        print_slot(sb, exe, v);
        if (kind == KILN__SLOT_ARENA)
            kiln__strbuf_printf(sb, ": offset %zu, %zu bytes\n", exe->slot_offset[v],
                                type_bytes(&b->types[v]));
        else
            kiln__strbuf_printf(sb, ": %s\n", slot_kind_name(kind));
    }
    static const char *const result_kind[] = {"argument", "constant", "written in place",
                                              "made by its op", "copied"};
    for (int32_t r = 0; r < exe->n_results; r++) {
        const kiln__result_plan *rp = &exe->results[r];
        kiln__strbuf_printf(sb, "result %d: ", (int)r);
        print_slot(sb, exe, rp->slot);
        kiln__strbuf_printf(sb, " %s", result_kind[rp->kind]);
        if (rp->alias >= 0) kiln__strbuf_printf(sb, ", into donated argument %d", (int)rp->alias);
        kiln__strbuf_puts(sb, "\n");
    }
    kiln__strbuf_printf(sb,
                        "kernel cost: %lld flops, %lld transcendentals, %lld bytes read, %lld "
                        "bytes written\n",
                        (long long)total.flops, (long long)total.transcendentals,
                        (long long)total.bytes_read, (long long)total.bytes_written);
}

char *kiln_exe_to_string(kiln_ctx *cx, const kiln_exe *exe) {
    if (!cx) return NULL;
    if (!exe) {
        kiln__null_argument(cx, "kiln_exe_to_string", "exe");
        return NULL;
    }
    kiln__strbuf sb;
    kiln__strbuf_init(&sb, cx);
    exe_text(&sb, exe);
    return kiln__strbuf_take(&sb);
}

kiln_status kiln_exe_print(kiln_ctx *cx, const kiln_exe *exe, FILE *stream) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!exe) return kiln__null_argument(cx, "kiln_exe_print", "exe");
    if (!stream) return kiln__null_argument(cx, "kiln_exe_print", "stream");
    char *text = kiln_exe_to_string(cx, exe);
    if (!text)
        return kiln_ctx_status(cx) != KILN_OK ? kiln_ctx_status(cx) : KILN_RESOURCE_EXHAUSTED;
    int rc = fputs(text, stream);
    kiln__strbuf_free_string(cx, text);
    if (rc < 0 || ferror(stream))
        return kiln_ctx_set_error(cx, KILN_UNAVAILABLE, "kiln_exe_print: writing failed");
    return KILN_OK;
}
