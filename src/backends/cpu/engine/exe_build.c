/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU backend's compile: copy the module into the executable's own blocks (fusion's
 * kernels built for the tiled engine in every block, loop and branch bodies as the entry
 * function; convolution epilogues; small constant ops folded),
 * then plan the entry block's buffers (exe_plan.c). kiln_compile (src/runtime/compile.c)
 * has verified the module and run the backend-neutral passes already. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "backend/region.h"
#include "backends/cpu/engine/exe.h"
#include "backends/cpu/engine/fused.h"
#include "backends/cpu/engine/native.h"
#include "backends/cpu/eval/eval.h"
#include "base/alloc.h"
#include "base/arena.h"
#include "base/ctx_internal.h"
#include "ir/ir.h"
#include "passes/passes.h"

/* Ops whose operands are all constants are run at compile time when their results take at
 * most this many bytes (a broadcast scalar, an iota index vector, ...). */
#define FOLD_MAX_BYTES 4096

static const char compile_fn[] = "kiln_compile";

/* ---- the executable's memory -------------------------------------------------------------- */

typedef struct compiler {
    kiln_ctx *cx;
    kiln__cpu_exe *exe;
    bool fold; /* evaluate small all-constant ops now */
    /* Fusion, when on: the options every block's plan is made with (plans live in the
     * compile's scratch arena: the executable keeps copies of its kernels). */
    bool fuse;
    kiln__fusion_options fusion_options;
    kiln__arena *kernel_scratch; /* the description of the kernel being emitted */
    /* The executable's distinct types (keep_type): the table for the compile only, the
     * copies in the executable's memory. */
    kiln__type_set types;
    kiln__attrs_set attrs; /* its distinct attributes (copy_attrs), the same way */
    /* The executable's distinct kernels (shared_kernel): the table for the compile only,
     * `first_codes` while it is small. */
    struct kernel_code *codes;
    size_t cap_codes; /* the entries: exe->n_kernel_codes */
    struct kernel_code {
        uint64_t hash;
        const kiln__kernel *desc; /* the executable's copy */
        const kiln__fused *fused;
        const kiln__attrs *attrs; /* its last op's */
    } first_codes[16];
} compiler;

/* A kernel built once for every kernel of the executable that is the same code. */
typedef struct kernel_code kernel_code;

static void *xalloc(compiler *c, size_t size, size_t align) {
    return kiln__cpu_exe_alloc_raw(c->cx, c->exe, size, align);
}

static void *xcalloc(compiler *c, size_t size, size_t align) {
    return kiln__cpu_exe_alloc(c->cx, c->exe, size, align);
}

#define XNEW(c, type, n) ((type *)xcalloc((c), (size_t)(n) * sizeof(type), _Alignof(type)))

/* The executable's copy of type t, one per distinct type (a slot holds a pointer to it:
 * 10^5 slots of a few types must not hold 144 bytes each). NULL when out of memory. */
static void *type_alloc(void *c, size_t size, size_t align) { return xalloc(c, size, align); }

static const kiln__type *keep_type(compiler *c, const kiln__type *t) {
    return kiln__type_set_intern(&c->types, t, type_alloc, c);
}

/* The executable's copy of an op's attributes: the part its kind uses, with its region
 * count and no region array (builtin regions stay). One copy of equal attributes for ops
 * without regions (an unrolled loop's slices: one), which nothing changes. */
static void *attrs_alloc(void *c, size_t size, size_t align) { return xalloc(c, size, align); }

static bool own(compiler *c, kiln_tensor *t);

static const kiln__attrs *copy_attrs(compiler *c, const kiln__ir_op *op) {
    /* a custom_call's attributes are its record (ops/custom_call.h), which the module holds:
     * the executable holds it too, as it outlives the module */
    if (op->kind == KILN_OP_CUSTOM_CALL && op->attrs->u.constant &&
        !own(c, kiln_tensor_retain((kiln_tensor *)op->attrs->u.constant)))
        return NULL;
    kiln__attrs local;
    kiln__attrs_copy(&local, op->attrs, op->kind);
    local.regions = NULL;
    local.n_regions = op->n_regions;
    if (op->n_regions == 0)
        return kiln__attrs_set_intern(&c->attrs, op->kind, &local, attrs_alloc, c);
    kiln__attrs *a = xalloc(c, kiln__attrs_size(op->kind), _Alignof(kiln__attrs));
    if (a) kiln__attrs_copy(a, &local, op->kind);
    return a;
}

/* An array of the executable's, of n elements of `size` bytes and *cap of room, with room
 * for one more: `items` itself while there is room, else a copy twice as large (the old one
 * freed, *cap updated); NULL with the error recorded when out of memory (items kept). */
static void *room_for_one(compiler *c, void *items, int32_t n, int32_t *cap, size_t size) {
    if (n < *cap) return items;
    kiln__cpu_exe *exe = c->exe;
    int32_t grown = *cap ? *cap * 2 : 16;
    void *p = kiln__raw_alloc(&exe->allocator, (size_t)grown * size, 16);
    if (!p) {
        kiln_ctx_set_error(c->cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", compile_fn);
        return NULL;
    }
    if (items) {
        memcpy(p, items, (size_t)n * size);
        kiln__raw_free(&exe->allocator, items, (size_t)*cap * size);
    }
    *cap = grown;
    return p;
}

/* Keeps a kernel's native version (its reference) until the executable is released. */
static bool keep_native(compiler *c, struct kiln__native *n) {
    kiln__cpu_exe *exe = c->exe;
    struct kiln__native **p =
        room_for_one(c, exe->natives, exe->n_natives, &exe->cap_natives, sizeof *p);
    if (!p) {
        kiln__native_release(n);
        return false;
    }
    exe->natives = p;
    exe->natives[exe->n_natives++] = n;
    return true;
}

/* Keeps t (a reference the caller holds, in no scope) for the executable's life. */
static bool own(compiler *c, kiln_tensor *t) {
    kiln__cpu_exe *exe = c->exe;
    kiln_tensor **p = room_for_one(c, exe->owned, exe->n_owned, &exe->cap_owned, sizeof *p);
    if (!p) {
        kiln_tensor_release(t);
        return false;
    }
    exe->owned = p;
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
    const kiln__block *home = kiln__value_home(v);
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
    kiln_tensor *t = (kiln_tensor *)op->attrs->u.constant;
    if (!t || t->trace) {
        kiln_ctx_set_error(c->cx, KILN_INTERNAL, "%s: internal: a constant without a value",
                           compile_fn);
        return NULL;
    }
    if (t->dead) {
        kiln__dead_error(c->cx, "kiln_compile: a constant of the module", t);
        return NULL;
    }
    /* A constant made on another CPU device is copied onto the executable's, so that what
     * the executable hands out (a constant result) is on its device. */
    kiln_device d = t->storage->device;
    bool here = d.type == c->exe->device.type && d.id == c->exe->device.id;
    kiln_tensor *v = here ? kiln__tensor_view(c->cx, compile_fn, t, t->dtype, t->shape)
                          : kiln__tensor_new(c->cx, compile_fn, t->dtype, t->shape);
    if (!v) return NULL;
    if (!here && t->nbytes) memcpy(kiln__tensor_mutable_data(v), kiln_tensor_data(t), t->nbytes);
    kiln__owned_unlink(&v->owned);
    return own(c, v) ? v : NULL;
}

static bool foldable(const compiler *c, const cscope *s, const kiln__ir_op *op,
                     const kiln__xref *in) {
    if (!c->fold) return false;
    if (kiln__op_has(op->kind, KILN_OPF_CONTROL | KILN_OPF_COLLECTIVE) || op->n_regions > 0)
        return false;
    if (op->kind == KILN_OP_CUSTOM_CALL) return false; /* the user's code runs when called */
    size_t bytes = 0;
    for (int32_t r = 0; r < op->n_results; r++) {
        bytes += kiln__type_bytes(op->results[r]->type);
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
        const kiln__type *t = op->results[r]->type;
        outs[r] = kiln__tensor_new(cx, compile_fn, t->dtype, t->shape);
        if (outs[r]) kiln__owned_unlink(&outs[r]->owned);
        ok = outs[r] && own(c, outs[r]);
        if (ok) s->x->consts[first + r] = outs[r];
    }
    if (ok) {
        kiln_status st =
            kiln__cpu_eval_op(cx, op->kind, op->attrs, ins, op->n_operands, outs, op->n_results);
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
    kiln_status s = kiln__cpu_prepare_op(c->cx, kind, attrs, types, n_in, types + n_in, n_out);
    if (s != KILN_OK && kiln_ctx_status(c->cx) == KILN_OK)
        kiln_ctx_set_error(c->cx, s, "%s: preparing %s failed", compile_fn,
                           kiln__op_get_info(kind)->name);
    return s == KILN_OK;
}

/* prepare_types for a single op of the module. */
static bool prepare(compiler *c, const kiln__ir_op *op) {
    kiln__type fixed[16];
    int32_t n = op->n_operands + op->n_results;
    kiln__type *types = n <= 16 ? fixed : XNEW(c, kiln__type, n);
    if (!types) return false;
    for (int32_t i = 0; i < op->n_operands; i++)
        types[i] = *op->operands[i]->type;
    for (int32_t r = 0; r < op->n_results; r++)
        types[op->n_operands + r] = *op->results[r]->type;
    return prepare_types(c, op->kind, op->attrs, types, op->n_operands, op->n_results);
}

static void *xalloc_cb(void *user, size_t size, size_t align) { return xalloc(user, size, align); }
static void *scratch_alloc(void *user, size_t size, size_t align) {
    return kiln__arena_alloc(user, size, align);
}

/* A copy of a kernel's description that outlives the module, for printing: the module's
 * values and ops it names become copies holding only their types, numbers and kinds. */
static kiln__value *keep_value(compiler *c, const kiln__value *v) {
    kiln__value *copy = XNEW(c, kiln__value, 1);
    const kiln__type *t = keep_type(c, v->type);
    if (!copy || !t) return NULL;
    *copy = (kiln__value){.type = t, .index = v->index, .id = v->id};
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

/* The table slot of kernel k (hash h): its code's, or the empty slot where it goes. */
static kernel_code *code_slot(compiler *c, const kiln__kernel *k, uint64_t h) {
    for (size_t i = (size_t)(h * 0x9e3779b97f4a7c15ull >> 32) & (c->cap_codes - 1);;
         i = (i + 1) & (c->cap_codes - 1)) {
        kernel_code *e = &c->codes[i];
        if (!e->desc || (e->hash == h && kiln__kernel_same(e->desc, k))) return e;
    }
}

/* Grows the table (twice the capacity) when it is half full. False when out of memory. */
static bool codes_room(compiler *c) {
    if (!c->codes) {
        c->codes = c->first_codes;
        c->cap_codes = sizeof c->first_codes / sizeof c->first_codes[0];
    }
    if (2 * ((size_t)c->exe->n_kernel_codes + 1) <= c->cap_codes) return true;
    size_t cap = 2 * c->cap_codes;
    kernel_code *old = c->codes;
    size_t old_cap = c->cap_codes;
    c->codes = kiln__calloc(c->cx, cap * sizeof *c->codes, _Alignof(kernel_code), compile_fn);
    if (!c->codes) {
        c->codes = old;
        return false;
    }
    c->cap_codes = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].desc) *code_slot(c, old[i].desc, old[i].hash) = old[i];
    if (old != c->first_codes) kiln__free(c->cx, old, old_cap * sizeof *old);
    return true;
}

/* The code of kernel k: built (the tiled engine's form, a description for printing, its
 * last op's attributes) the first time a kernel that is the same is seen, then shared. */
static const kernel_code *shared_kernel(compiler *c, const kiln__kernel *k) {
    if (!codes_room(c)) return NULL;
    uint64_t h = kiln__kernel_hash(k);
    kernel_code *e = code_slot(c, k, h);
    if (e->desc) return e;
    const kiln__fused *fk = kiln__fused_build(c->cx, k, xalloc_cb, c);
    if (fk && kiln__fused_native(fk) && !keep_native(c, kiln__fused_native(fk))) return NULL;
    const kiln__kernel *kept = fk ? keep_kernel(c, k) : NULL;
    const kiln__attrs *attrs = kept ? copy_attrs(c, k->ops[k->n_ops - 1]) : NULL;
    if (!attrs) return NULL;
    *e = (kernel_code){.hash = h, .desc = kept, .fused = fk, .attrs = attrs};
    c->exe->n_kernel_codes++;
    return e;
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
    const kernel_code *code = shared_kernel(c, k);
    if (!code) return false;
    b->ops[b->n_ops] = (kiln__xop){.kind = k->ops[k->n_ops - 1]->kind,
                                   .n_in = k->n_operands,
                                   .n_out = n_out,
                                   .in = in,
                                   .out = out,
                                   .regions = NULL,
                                   .attrs = code->attrs,
                                   .kernel = code->fused,
                                   .desc = code->desc,
                                   .kernel_id = k->id};
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
    const kiln__attrs *attrs = copy_attrs(c, conv);
    if (!in || !out || !attrs) return false;
    for (int32_t i = 0; i < 2; i++)
        if (!resolve(c, self, conv->operands[i], &in[i])) return false;
    if (e->bias && !resolve(c, self, e->bias, &in[2])) return false;
    out[0] = last->results[0]->id;
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
    kiln__type types[4] = {*conv->operands[0]->type, *conv->operands[1]->type};
    if (e->bias) types[2] = *e->bias->type;
    types[n_in] = *last->results[0]->type;
    return prepare_types(c, KILN_OP_CONVOLUTION, attrs, types, n_in, 1);
}

/* A kernel over one element whose ops read their operands themselves (no view): the
 * evaluator's kernels run its ops for less than the tiled engine's setup (a loop's
 * counter and condition), so they stay single ops. */
static bool runs_alone(const kiln__fusion_group *g) {
    if (g->reduces || g->reads_views) return false;
    for (int32_t d = 0; d < g->shape->rank; d++)
        if (g->shape->dims[d] != 1) return false;
    return true;
}

/* How many ops a fused block can have at most: the module's, less views, the kernel
 * members that do not run the kernel, and the epilogue ops before the last. */
static int32_t ops_after_fusion(const kiln__fusion *f) {
    int32_t n = 0;
    for (int32_t k = 0; k < f->n_ops; k++) {
        if (f->role[k] == KILN__FUSE_VIEW) continue;
        if (f->epilogue[k] >= 0 && f->epilogues[f->epilogue[k]].last != k) continue;
        if (f->role[k] == KILN__FUSE_MEMBER) {
            const kiln__fusion_group *g = &f->kernels[f->kernel[k]];
            if (!runs_alone(g) && g->last != k) continue;
        }
        n++;
    }
    return n;
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
    /* Every block is fused, the bodies of loops and branches as the entry function: its own
     * plan, made before the block's values are numbered as slots (the plan numbers them
     * the same way). */
    kiln__fusion plan;
    const kiln__fusion *fz = NULL;
    if (c->fuse && ir->n_ops > 0) {
        if (kiln__fusion_plan(c->cx, ir, &c->fusion_options, &plan) != KILN_OK) return NULL;
        fz = &plan;
    }
    b->types = XNEW(c, const kiln__type *, n_slots);
    b->consts = XNEW(c, kiln_tensor *, n_slots);
    b->ops = XNEW(c, kiln__xop, fz ? ops_after_fusion(fz) : n_ops);
    b->results = XNEW(c, kiln__xref, ir->n_results);
    if (!b->types || !b->consts || !b->ops || !b->results) return NULL;
    cscope self = {.ir = ir, .x = b, .parent = parent};
    for (int32_t i = 0; i < ir->n_args; i++) {
        ir->args[i]->id = i;
        if (!(b->types[i] = keep_type(c, ir->args[i]->type))) return NULL;
    }
    int32_t slot = ir->n_args;
    int32_t index = -1;
    for (const kiln__ir_op *op = ir->first; op; op = op->next) {
        index++;
        int32_t first = slot;
        for (int32_t r = 0; r < op->n_results; r++) {
            op->results[r]->id = slot;
            if (!(b->types[slot++] = keep_type(c, op->results[r]->type))) return NULL;
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
        if (fz && fz->role[index] == KILN__FUSE_MEMBER &&
            !runs_alone(&fz->kernels[fz->kernel[index]])) {
            if (fz->kernels[fz->kernel[index]].last != index) continue; /* it runs at its last op */
            /* Its description only while it is emitted (the executable keeps a copy). */
            kiln__kernel k;
            bool ok = kiln__fusion_kernel(&plan, fz->kernel[index], &k, scratch_alloc,
                                          c->kernel_scratch) == KILN_OK &&
                      emit_kernel(c, &self, b, &k);
            kiln__arena_reset(c->kernel_scratch);
            if (!ok) return NULL;
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
        const kiln__attrs *attrs = copy_attrs(c, op);
        if (!out || !regions || !attrs) return NULL;
        for (int32_t r = 0; r < op->n_results; r++)
            out[r] = first + r;
        for (int32_t i = 0; i < op->n_regions; i++) {
            const kiln_region *builtin = i < 2 ? op->attrs->region[i] : NULL;
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

/* ---- compile ------------------------------------------------------------------------------ */

/* The combiner of a reduce that a kernel can end with (a builtin region). */
static kiln__kreduce reduce_kind(const kiln__ir_op *op) {
    if (op->n_regions != 1 || !op->attrs->region[0]) return KILN__KREDUCE_NONE;
    kiln_dtype dt = op->operands[0]->type->dtype;
    bool is_float = dt == KILN_F16 || dt == KILN_BF16 || dt == KILN_F32 || dt == KILN_F64;
    switch (kiln__region_kind_of(op->attrs->region[0])) {
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

/* Convolution chains channels last (passes.h, kiln__layout_assign): oneDNN's kernels read
 * and write [N, H, W, C] directly, so the layout changes around each convolution (VGG11
 * at 1x3x224x224: ~12 ms a call) happen once at a chain's ends. The transposes that meet
 * cancel in canonicalize. Rewrites the lent module in place, as kiln_compile's passes do. */
static void assign_layout(compiler *c, kiln_module *m) {
    kiln__layout_stats st;
    if (kiln__layout_assign(m, &st) == 0) return;
    static const kiln__pass cleanup[] = {
        {"canonicalize", kiln__pass_canonicalize, 0},
        {"cse", kiln__pass_cse, KILN__PASS_IDEMPOTENT},
        {"dce", kiln__pass_dce, KILN__PASS_IDEMPOTENT | KILN__PASS_ENABLES_NOTHING},
    };
    kiln__passes_run(m, cleanup, 3, 4);
    c->exe->n_layout_convs = st.convolutions;
    c->exe->n_layout_transposes = kiln__layout_transposes(m);
}

static kiln_status build(compiler *c, const kiln__compile_request *req) {
    kiln__cpu_exe *exe = c->exe;
    const kiln_compile_options *o = req->options;
    kiln_module *m = req->module;
    if (!o->disable_passes && !o->disable_layout_assignment) assign_layout(c, m);
    const kiln__block *body = m->funcs[0]->body;
    exe->n_args = req->n_args;
    exe->n_results = req->n_results;
    exe->name = copy_string(c, m->name ? m->name : "kiln");
    exe->native_mode = kiln__native_mode(c->cx);
    exe->preserved = XNEW(c, int32_t, exe->n_results);
    exe->aliases = XNEW(c, int32_t, exe->n_results);
    if (!exe->name || !exe->preserved || !exe->aliases) return KILN_RESOURCE_EXHAUSTED;
    memcpy(exe->preserved, req->preserved, (size_t)exe->n_results * sizeof *exe->preserved);
    memcpy(exe->aliases, req->aliases, (size_t)exe->n_results * sizeof *exe->aliases);
    c->fold = !o->disable_constant_folding;
    /* The fusion plans are needed while the blocks are built only (the executable keeps
     * copies of its kernels), so they live in an arena of the compile. */
    kiln__arena scratch, kernel_scratch;
    _Alignas(64) unsigned char first_block[4096], kernel_block[16384];
    kiln__arena_init_buffer(&scratch, c->cx, first_block, sizeof first_block, 8192);
    kiln__arena_init_buffer(&kernel_scratch, c->cx, kernel_block, sizeof kernel_block, 16384);
    c->kernel_scratch = &kernel_scratch;
    c->fuse = !o->disable_fusion;
    c->fusion_options = (kiln__fusion_options){.fold_max_bytes = c->fold ? FOLD_MAX_BYTES : 0,
                                               .reduce_kind = reduce_kind,
                                               .conv_epilogue = true,
                                               .alloc = scratch_alloc,
                                               .alloc_user = &scratch};
    exe->entry = compile_block(c, body, NULL);
    kiln__arena_destroy(&scratch);
    kiln__arena_destroy(&kernel_scratch);
    if (!exe->entry)
        return kiln_ctx_status(c->cx) != KILN_OK ? kiln_ctx_status(c->cx) : KILN_RESOURCE_EXHAUSTED;
    return kiln__cpu_plan(c->cx, exe, o->assert_nonallocating);
}

kiln_status kiln__cpu_compile(kiln_ctx *cx, const kiln__compile_request *req,
                              kiln__executable **out_exe) {
    *out_exe = NULL;
    kiln__cpu_exe *exe = kiln__calloc(cx, sizeof *exe, _Alignof(kiln__cpu_exe), compile_fn);
    if (!exe) return KILN_RESOURCE_EXHAUSTED;
    exe->allocator = cx->allocator;
    if (pthread_mutex_init(&exe->lock, NULL) != 0) {
        kiln__free(cx, exe, sizeof *exe);
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: no mutex", compile_fn);
    }
    exe->lock_made = true;
    exe->device = req->device;
    compiler c = {.cx = cx, .exe = exe};
    kiln__type_set_init(&c.types, cx);
    kiln__attrs_set_init(&c.attrs, cx);
    kiln_status s = build(&c, req);
    kiln__type_set_free(&c.types);
    kiln__attrs_set_free(&c.attrs);
    if (c.codes && c.codes != c.first_codes) kiln__free(cx, c.codes, c.cap_codes * sizeof *c.codes);
    if (s == KILN_OK) {
        kiln__exe_make_result_pool(exe);
        s = kiln__exe_prime(cx, exe);
    }
    if (s != KILN_OK) {
        if (kiln_ctx_status(cx) == KILN_OK)
            kiln_ctx_set_error(cx, s, "%s: out of memory", compile_fn);
        kiln__cpu_release((kiln__executable *)exe);
        return s;
    }
    *out_exe = (kiln__executable *)exe;
    return KILN_OK;
}

void kiln__cpu_release(kiln__executable *x) {
    kiln__cpu_exe *exe = (kiln__cpu_exe *)x;
    if (!exe) return;
    kiln_allocator a = exe->allocator;
    kiln__exe_free_states(exe);
    if (exe->lock_made) pthread_mutex_destroy(&exe->lock);
    for (int32_t i = 0; i < exe->n_owned; i++)
        kiln_tensor_release(exe->owned[i]);
    if (exe->owned) kiln__raw_free(&a, exe->owned, (size_t)exe->cap_owned * sizeof *exe->owned);
    for (int32_t i = 0; i < exe->n_natives; i++)
        kiln__native_release(exe->natives[i]);
    if (exe->natives)
        kiln__raw_free(&a, exe->natives, (size_t)exe->cap_natives * sizeof *exe->natives);
    kiln__cpu_exe_free_mem(exe);
    kiln__raw_free(&a, exe, sizeof *exe);
}

/* A block and the blocks around it (an operand at depth d is a slot of the d-th). */
typedef struct block_chain {
    const kiln__xblock *b;
    const struct block_chain *parent;
} block_chain;

typedef struct xop_types {
    const block_chain *chain;
    const kiln__xop *op;
} xop_types;

static const kiln__type *xop_type(const void *holder, int32_t i) {
    const xop_types *h = holder;
    if (i >= h->op->n_in) return h->chain->b->types[h->op->out[i - h->op->n_in]];
    const block_chain *c = h->chain;
    for (int32_t d = h->op->in[i].depth; d > 0 && c->parent; d--)
        c = c->parent;
    return c->b->types[h->op->in[i].slot];
}

static kiln__cost block_cost(const block_chain *chain);

/* The cost of one op of a block: its kernel's, or the op's own; a loop whose trip count is
 * known adds its condition and body that many times. */
static kiln__cost xop_cost(const block_chain *chain, const kiln__xop *op) {
    if (op->desc) return kiln__kernel_cost(op->desc);
    xop_types h = {chain, op};
    kiln__cost c = kiln__op_cost(op->kind, op->attrs, op->n_in, op->n_out, xop_type, &h);
    int64_t trip = op->kind == KILN_OP_WHILE ? kiln__loop_trip_count(op->attrs) : -1;
    for (int32_t r = 0; trip > 0 && r < op->n_regions; r++)
        if (op->regions && op->regions[r]) {
            const block_chain inner = {op->regions[r], chain};
            kiln__cost body = block_cost(&inner);
            kiln__cost_add_times(&c, &body, trip);
        }
    return c;
}

static kiln__cost block_cost(const block_chain *chain) {
    kiln__cost total = {0};
    for (int32_t k = 0; k < chain->b->n_ops; k++) {
        kiln__cost c = xop_cost(chain, &chain->b->ops[k]);
        kiln__cost_add(&total, &c);
    }
    return total;
}

void kiln__cpu_native_status(const kiln__executable *x, int32_t *n_native, int32_t *n_ready) {
    const kiln__cpu_exe *exe = (const kiln__cpu_exe *)x;
    *n_native = exe->n_natives;
    *n_ready = 0;
    for (int32_t i = 0; i < exe->n_natives; i++)
        *n_ready += kiln__native_state(exe->natives[i]) > 0;
}

void kiln__cpu_info(const kiln__executable *x, kiln__executable_info *out) {
    const kiln__cpu_exe *exe = (const kiln__cpu_exe *)x;
    *out = (kiln__executable_info){.n_ops = exe->n_ops,
                                   .arena_bytes = exe->arena_bytes,
                                   .n_buffers = exe->n_buffers,
                                   .n_kernels = exe->n_kernels,
                                   .n_fused_ops = exe->n_fused_ops,
                                   .n_conv_epilogues = exe->n_epilogues};
    const block_chain entry = {exe->entry, NULL};
    out->cost = block_cost(&entry);
}
