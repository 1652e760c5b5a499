/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU backend's execute: runs an executable (exe.h) on concrete tensors that
 * kiln_exe_call (src/runtime/call.c) has checked.
 *
 * A call takes a call state from the executable's pool, prepares the result tensors
 * (views of preserved arguments and constants, donated buffers the runtime lets it reuse,
 * pooled or new tensors), runs the entry block's ops (fused kernels on the tiled engine,
 * other ops with the evaluator kernels) over the planned arena, and finishes the results
 * that need a copy. Loops, branches and calls run their planned blocks the same way, into
 * the arena and their op's result slots: nothing is allocated per iteration. Regions that
 * evaluator kernels call back (custom reduce or sort bodies) run their compiled block op by
 * op with ordinary tensors, owned by the scope the kernel opened for the region call. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backends/cpu/eval/eval.h"
#include "backends/cpu/eval/eval_reduce.h"
#include "backends/cpu/engine/exe.h"
#include "base/alloc.h"
#include "base/ctx_internal.h"

/* The reference count of the tensor headers inside a call state: never reaches zero, so
 * that nothing frees or adopts them. */
#define PINNED_REFS (LONG_MAX / 4)

static const char call_fn[] = "kiln_exe_call";

/* ---- interpreting blocks ------------------------------------------------------------------ */

/* The values of one activation of a block, and of the blocks around it. */
typedef struct env {
    const kiln__xblock *blk;
    kiln_tensor *const *vals;
    const struct env *parent;
} env;

/* What a bound region's `user` points to: the block and the environment it runs in, and
 * (when not NULL) per slot of the block the tensor its op wrote on an earlier call of the
 * region during the same op: a kernel calling the region once per element (a reduce with
 * a custom body, such as argmax's) then reuses them instead of making and freeing a
 * tensor per op per element, which took 60% of a small training step. */
typedef struct frame {
    const kiln__xblock *blk;
    const env *parent;
    kiln_tensor **kept;
} frame;

static inline kiln_tensor *lookup(const env *e, kiln__xref r) {
    for (int32_t d = r.depth; d > 0; d--)
        e = e->parent;
    return e->vals[r.slot];
}

static const char *op_fn(const kiln__xop *op) {
    return op->attrs->fn ? op->attrs->fn : kiln__op_get_info(op->kind)->name;
}

static kiln_status interpret(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                             void *user);

#define FIXED_REGIONS 4

#define REDUCE_LANES_MAX 8 /* operands of a reduce whose body runs across its outputs */

static bool block_lanes_ok(const kiln__xblock *b);
static kiln_status interpret_block(kiln_ctx *cx, const kiln__xblock *b, const env *parent,
                                   kiln_tensor **kept, int64_t lanes, kiln_tensor *const *args,
                                   kiln_tensor **results);

/* The offsets of the elements an index of `dims` (strides `str`) walks, in row-major
 * order. */
static void walk_offsets(int nd, const int64_t *dims, const int64_t *str, int64_t count,
                         int64_t *offs) {
    int64_t idx[KILN_MAX_RANK] = {0}, off = 0;
    for (int64_t i = 0; i < count; i++) {
        offs[i] = off;
        for (int k = nd - 1; k >= 0; k--) {
            off += str[k];
            if (++idx[k] < dims[k]) break;
            off -= idx[k] * str[k];
            idx[k] = 0;
        }
    }
}

/* A reduce whose body runs across lanes (block_lanes_ok), over more than one output: the
 * accumulators of all n_out outputs are one tensor per operand, and each reduced element
 * in order is combined into all of them by one run of the body; per output the same
 * combinations in the same order as the evaluator's call per element (reduce_generic), so
 * the same bits, with the body run n_red times instead of n_out * n_red. */
static kiln_status reduce_lanes(kiln_ctx *cx, const char *fn, const kiln__xblock *body,
                                const env *parent, kiln_tensor *const *operands, int n,
                                kiln_tensor **results, const kiln_dtype *types, int64_t n_out,
                                const kiln__reduce_walk *w) {
    const int64_t n_red = w->n_red;
    const kiln_shape lanes = KILN_SHAPE(n_out);
    size_t ob = (size_t)n_out * sizeof(int64_t);
    size_t rb = (size_t)(n_red > 0 ? n_red : 1) * sizeof(int64_t);
    int64_t *out_off = kiln__alloc(cx, ob, _Alignof(int64_t), fn);
    int64_t *red_off = out_off ? kiln__alloc(cx, rb, _Alignof(int64_t), fn) : NULL;
    if (!red_off) {
        if (out_off) kiln__free(cx, out_off, ob);
        return KILN_RESOURCE_EXHAUSTED;
    }
    walk_offsets(w->nk, w->kdim, w->kstride, n_out, out_off);
    walk_offsets(w->nr, w->rdim, w->rstride, n_red, red_off);
    kiln_status st = kiln_scope_begin(cx);
    if (st != KILN_OK) {
        kiln__free(cx, red_off, rb);
        kiln__free(cx, out_off, ob);
        return st;
    }
    kiln_tensor *args[2 * REDUCE_LANES_MAX];
    for (int i = 0; i < 2 * n && st == KILN_OK; i++)
        if (!(args[i] = kiln__tensor_new(cx, fn, types[i], lanes))) st = KILN_RESOURCE_EXHAUSTED;
    for (int j = 0; j < n && st == KILN_OK; j++) /* the accumulators start as the inits */
        kiln__fill_elements(kiln__out(args[j]), kiln__in(operands[n + j]),
                            kiln_dtype_size(types[j]), n_out);
    for (int64_t r = 0; r < n_red && st == KILN_OK; r++) {
        if ((st = kiln_scope_begin(cx)) != KILN_OK) break; /* this step's tensors */
        for (int j = 0; j < n; j++) {
            size_t es = kiln_dtype_size(types[j]);
            const char *x = (const char *)kiln__in(operands[j]) + (size_t)red_off[r] * es;
            char *lane = kiln__out(args[n + j]);
            for (int64_t o = 0; o < n_out; o++)
                memcpy(lane + (size_t)o * es, x + (size_t)out_off[o] * es, es);
        }
        kiln_tensor *res[REDUCE_LANES_MAX] = {NULL};
        st = interpret_block(cx, body, parent, NULL, n_out, args, res);
        for (int j = 0; j < n && st == KILN_OK; j++) /* res[j] may be args[j] */
            memmove(kiln__out(args[j]), kiln__in(res[j]),
                    (size_t)n_out * kiln_dtype_size(types[j]));
        kiln_scope_end(cx);
    }
    for (int j = 0; j < n && st == KILN_OK; j++)
        memcpy(kiln__out(results[j]), kiln__in(args[j]), (size_t)n_out * kiln_dtype_size(types[j]));
    kiln_scope_end(cx);
    kiln__free(cx, red_off, rb);
    kiln__free(cx, out_off, ob);
    return st;
}

/* run_op for a reduce whose body can run across its outputs; false (nothing done) for any
 * other op, which then takes the evaluator's kernel. */
static bool try_reduce_lanes(kiln_ctx *cx, const kiln__xop *op, const env *e,
                             kiln_tensor *const *in, kiln_tensor **out, kiln_status *status) {
    if (op->kind != KILN_OP_REDUCE || op->n_regions != 1 || !op->regions[0] || op->n_out < 1 ||
        op->n_out > REDUCE_LANES_MAX || op->n_in != 2 * op->n_out)
        return false;
    const int n = op->n_out;
    const int64_t n_out = out[0]->numel;
    if (n_out < 2 || !block_lanes_ok(op->regions[0])) return false;
    const kiln__xblock *body = op->regions[0];
    for (int j = 0; j < n; j++) /* the body's results, lanes of the accumulators' dtypes */
        if (in[j]->dtype != in[n + j]->dtype || out[j]->dtype != in[j]->dtype ||
            body->types[body->results[j].slot]->dtype != in[j]->dtype)
            return false; /* (block_lanes_ok: results are the body's own values) */
    kiln__reduce_walk w;
    kiln__reduce_walk_init(&w, &in[0]->shape, &op->attrs->u.reduce_dims);
    kiln_dtype types[2 * REDUCE_LANES_MAX];
    for (int j = 0; j < n; j++)
        types[j] = types[n + j] = in[j]->dtype;
    *status = reduce_lanes(cx, op_fn(op), op->regions[0], e, in, n, out, types, n_out, &w);
    return true;
}

/* Runs one op: in and out hold its operands and (unless it is a CONTROL op) its
 * preallocated results. Regions that are not builtins are bound to `interpret` in `e`. */
static kiln_status run_op(kiln_ctx *cx, const kiln__xop *op, const env *e, kiln_tensor *const *in,
                          kiln_tensor **out) {
    kiln_status s;
    if (try_reduce_lanes(cx, op, e, in, out, &s)) {
        /* done across the outputs */
    } else if (op->conv_epilogue) {
        s = kiln__cpu_conv_bias_act(cx, op->attrs, in[0], in[1], op->n_in > 2 ? in[2] : NULL,
                                    op->activation, out[0]);
    } else if (op->n_regions == 0) {
        s = kiln__cpu_eval_op(cx, op->kind, op->attrs, in, op->n_in, out, op->n_out);
    } else {
        kiln_region fixed_r[FIXED_REGIONS];
        frame fixed_f[FIXED_REGIONS];
        kiln_region *rs = fixed_r;
        frame *fs = fixed_f;
        int32_t n = op->n_regions;
        size_t rb = (size_t)n * sizeof *rs, fb = (size_t)n * sizeof *fs;
        if (n > FIXED_REGIONS) {
            rs = kiln__alloc(cx, rb, _Alignof(kiln_region), op_fn(op));
            fs = rs ? kiln__alloc(cx, fb, _Alignof(frame), op_fn(op)) : NULL;
            if (!fs) {
                if (rs) kiln__free(cx, rs, rb);
                return KILN_RESOURCE_EXHAUSTED;
            }
        }
        for (int32_t i = 0; i < n; i++) {
            if (op->regions[i]) {
                const kiln__xblock *b = op->regions[i];
                kiln_tensor **kept =
                    kiln__alloc(cx, (size_t)b->n_slots * sizeof *kept, _Alignof(kiln_tensor *),
                                op_fn(op)); /* NULL: no reuse, only slower */
                if (kept) memset(kept, 0, (size_t)b->n_slots * sizeof *kept);
                fs[i] = (frame){.blk = b, .parent = e, .kept = kept};
                rs[i] = (kiln_region){.fn = interpret, .user = &fs[i]};
            } else {
                rs[i] = *op->attrs->region[i];
            }
        }
        kiln__attrs a;
        kiln__attrs_copy(&a, op->attrs, op->kind);
        a.regions = rs;
        a.n_regions = n;
        s = kiln__cpu_eval_op(cx, op->kind, &a, in, op->n_in, out, op->n_out);
        for (int32_t i = 0; i < n; i++) {
            if (!op->regions[i] || !fs[i].kept) continue;
            for (int32_t v = 0; v < op->regions[i]->n_slots; v++)
                kiln_tensor_release(fs[i].kept[v]);
            kiln__free(cx, fs[i].kept, (size_t)op->regions[i]->n_slots * sizeof *fs[i].kept);
        }
        if (rs != fixed_r) {
            kiln__free(cx, rs, rb);
            kiln__free(cx, fs, fb);
        }
    }
    if (s != KILN_OK && kiln_ctx_status(cx) == KILN_OK) /* a kernel must say why it failed */
        kiln_ctx_set_error(cx, s, "%s failed (%s)", op_fn(op), kiln_status_name(s));
    return s;
}

#define FIXED_VALS 48

/* Runs block b on args in `parent`. lanes == 0: on the block's own types, reusing the
 * tensors in `kept` (per slot, or NULL) that nothing else holds since the previous call;
 * lanes > 0: on rank-1 arguments of `lanes` elements, the constants spread over them
 * (block_lanes_ok blocks only). Result tensors of its ops belong to the innermost scope;
 * the results are borrowed pointers. */
static kiln_status interpret_block(kiln_ctx *cx, const kiln__xblock *b, const env *parent,
                                   kiln_tensor **kept, int64_t lanes, kiln_tensor *const *args,
                                   kiln_tensor **results) {
    size_t n = (size_t)b->n_slots + (size_t)b->max_in + (size_t)b->max_out;
    kiln_tensor *fixed[FIXED_VALS];
    kiln_tensor **vals = fixed;
    if (n > FIXED_VALS &&
        !(vals = kiln__alloc(cx, n * sizeof *vals, _Alignof(kiln_tensor *), "region")))
        return KILN_RESOURCE_EXHAUSTED;
    kiln_tensor **in = vals + b->n_slots, **out = in + b->max_in;
    const kiln_shape lane_shape = KILN_SHAPE(lanes);
    kiln_status s = KILN_OK;
    for (int32_t i = 0; i < b->n_slots; i++)
        vals[i] = i < b->n_args ? args[i] : b->consts[i];
    for (int32_t i = b->n_args; lanes > 0 && i < b->n_slots && s == KILN_OK; i++) {
        const kiln_tensor *c = b->consts[i];
        if (!c) continue;
        if (!(vals[i] = kiln__tensor_new(cx, "region", c->dtype, lane_shape)))
            s = KILN_RESOURCE_EXHAUSTED;
        else
            kiln__fill_elements(kiln__out(vals[i]), kiln__in(c), kiln_dtype_size(c->dtype), lanes);
    }
    env e = {.blk = b, .vals = vals, .parent = parent};
    for (int32_t k = 0; k < b->n_ops && s == KILN_OK; k++) {
        const kiln__xop *op = &b->ops[k];
        for (int32_t j = 0; j < op->n_in; j++)
            in[j] = lookup(&e, op->in[j]);
        for (int32_t j = 0; j < op->n_out; j++) {
            out[j] = NULL;
            if (op->control) continue;
            kiln_tensor **keep = kept ? &kept[op->out[j]] : NULL;
            /* the tensor of an earlier call that nothing else holds any more */
            if (keep && *keep && atomic_load_explicit(&(*keep)->refs, memory_order_acquire) == 1) {
                out[j] = *keep;
                continue;
            }
            const kiln__type *t = b->types[op->out[j]];
            out[j] = kiln__tensor_new(cx, op_fn(op), t->dtype, lanes > 0 ? lane_shape : t->shape);
            if (!out[j]) {
                s = KILN_RESOURCE_EXHAUSTED;
                break;
            }
            if (keep) { /* kept past this call's scope, for the next call */
                kiln_tensor_release(*keep);
                *keep = kiln_tensor_retain(out[j]);
            }
        }
        if (s == KILN_OK)
            s = op->kernel ? kiln__fused_run(cx, op->kernel, in, out) : run_op(cx, op, &e, in, out);
        for (int32_t j = 0; j < op->n_out && s == KILN_OK; j++)
            vals[op->out[j]] = out[j];
    }
    for (int32_t i = 0; i < b->n_results && s == KILN_OK; i++)
        results[i] = lookup(&e, b->results[i]);
    if (vals != fixed) kiln__free(cx, vals, n * sizeof *vals);
    return s;
}

/* A region that is not a builtin (a kiln_region_fn): its block, in its frame. */
static kiln_status interpret(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                             void *user) {
    const frame *f = user;
    return interpret_block(cx, f->blk, f->parent, f->kept, 0, args, results);
}

/* ---- a region across lanes -------------------------------------------------------- */

/* Ops whose kernels compute each element the same way whatever the element count. */
static bool lane_op(kiln_op k) {
    switch (k) {
    case KILN_OP_COMPARE:
    case KILN_OP_SELECT:
    case KILN_OP_AND:
    case KILN_OP_OR:
    case KILN_OP_XOR:
    case KILN_OP_NOT:
    case KILN_OP_ADD:
    case KILN_OP_SUBTRACT:
    case KILN_OP_MULTIPLY:
    case KILN_OP_DIVIDE:
    case KILN_OP_MAXIMUM:
    case KILN_OP_MINIMUM:
    case KILN_OP_NEGATE:
    case KILN_OP_ABS:
    case KILN_OP_CLAMP:
    case KILN_OP_CONVERT: return true;
    default: return false;
    }
}

/* Whether block b computes only with lane_op kernels on rank-0 values of its own: then
 * interpret_block with lanes = n on rank-1 arguments is n calls, lane by lane, bit for bit. */
static bool block_lanes_ok(const kiln__xblock *b) {
    for (int32_t v = 0; v < b->n_slots; v++)
        if (b->types[v] && b->types[v]->shape.rank != 0) return false;
    for (int32_t k = 0; k < b->n_ops; k++) {
        const kiln__xop *op = &b->ops[k];
        if (op->control || op->n_regions || op->kernel || op->conv_epilogue || !lane_op(op->kind))
            return false;
        for (int32_t j = 0; j < op->n_in; j++)
            if (op->in[j].depth != 0) return false; /* a value from outside: not per lane */
    }
    for (int32_t i = 0; i < b->n_results; i++)
        if (b->results[i].depth != 0) return false;
    return true;
}

/* ---- call states -------------------------------------------------------------------------- */

static void *at(kiln__call_state *st, size_t offset) { return (unsigned char *)st + offset; }

static kiln__call_state *state_new(kiln_ctx *cx, kiln__cpu_exe *exe) {
    kiln__call_state *st = kiln__raw_alloc(&exe->allocator, exe->state_bytes, 64);
    if (!st) {
        kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED,
                           "%s: out of memory for a call state of %zu bytes", call_fn,
                           exe->state_bytes);
        return NULL;
    }
    memset(st, 0, exe->off_arena);
    memset(at(st, exe->off_tensors), 0, exe->state_bytes - exe->off_tensors);
    kiln__storage *sto = &st->storage;
    atomic_init(&sto->refs, PINNED_REFS);
    sto->device = exe->device;
    sto->data = exe->arena_bytes ? at(st, exe->off_arena) : NULL;
    kiln__advise_huge(sto->data, exe->arena_bytes);
    sto->nbytes = exe->arena_bytes;
    sto->allocator = exe->allocator;
    sto->wrapped = true; /* nothing to free: the arena is part of the state */
    kiln_tensor *headers = at(st, exe->off_tensors);
    for (int32_t h = 0; h < exe->n_headers; h++) {
        kiln_tensor *t = &headers[h];
        atomic_init(&t->refs, PINNED_REFS);
        t->dtype = exe->header_type[h]->dtype;
        t->shape = exe->header_type[h]->shape;
        kiln_shape_numel(&t->shape, &t->numel);
        kiln_shape_nbytes(&t->shape, t->dtype, &t->nbytes);
        t->storage = sto;
        t->byte_offset = exe->header_offset[h];
        t->allocator = exe->allocator;
    }
    kiln_tensor **ptrs = at(st, exe->off_ptrs);
    for (int32_t i = 0; i < exe->n_blocks; i++) {
        const kiln__xblock *b = exe->blocks[i];
        const kiln__xplan *p = b->plan;
        kiln_tensor **vals = ptrs + p->vals_at;
        for (int32_t v = 0; v < b->n_slots; v++) {
            if (p->slot_kind[v] == KILN__SLOT_CONST) vals[v] = b->consts[v];
            if (p->slot_kind[v] == KILN__SLOT_ARENA || p->slot_kind[v] == KILN__SLOT_PART)
                vals[v] = &headers[p->slot_tensor[v]];
        }
    }
    return st;
}

static void lock(kiln__cpu_exe *exe) { pthread_mutex_lock(&exe->lock); }

static void unlock(kiln__cpu_exe *exe) { pthread_mutex_unlock(&exe->lock); }

static kiln__call_state *state_acquire(kiln_ctx *cx, kiln__cpu_exe *exe) {
    lock(exe);
    kiln__call_state *st = exe->pool;
    if (st) exe->pool = st->next;
    unlock(exe);
    return st ? st : state_new(cx, exe);
}

static void state_return(kiln__cpu_exe *exe, kiln__call_state *st) {
    lock(exe);
    st->next = exe->pool;
    exe->pool = st;
    unlock(exe);
}

/* ---- result buffers ----------------------------------------------------------------------- */

/* The pool's own reference and one per buffer it made (waiting here or held by a tensor),
 * so that it lives while any of its buffers does. */
struct kiln__result_pool {
    atomic_long refs;
    pthread_mutex_t lock; /* guards everything below */
    bool closed;          /* the executable is gone: buffers coming back are freed */
    size_t bytes, cap;    /* bytes waiting, and their bound */
    kiln__storage *free;  /* waiting buffers, linked through recycle_next */
    kiln_allocator allocator;
};

static void result_pool_unref(kiln__result_pool *p) {
    if (atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1) return;
    pthread_mutex_destroy(&p->lock);
    kiln_allocator a = p->allocator;
    kiln__raw_free(&a, p, sizeof *p);
}

/* A buffer's last reference went: keep it while there is room, else free it. */
static void result_recycle(kiln__storage *s) {
    kiln__result_pool *p = s->recycle_user;
    pthread_mutex_lock(&p->lock);
    bool keep = !p->closed && p->bytes + s->nbytes <= p->cap;
    if (keep) {
        s->recycle_next = p->free;
        p->free = s;
        p->bytes += s->nbytes;
    }
    pthread_mutex_unlock(&p->lock);
    if (keep) return;
    kiln__storage_free(s);
    result_pool_unref(p);
}

static bool same_allocator(const kiln_allocator *a, const kiln_allocator *b) {
    return a->alloc == b->alloc && a->free == b->free && a->user == b->user;
}

/* The bytes of the result buffers one call makes afresh. */
static size_t fresh_result_bytes(const kiln__cpu_exe *exe) {
    size_t per_call = 0;
    for (int32_t r = 0; r < exe->n_results; r++) {
        const kiln__result_plan *rp = &exe->results[r];
        if (rp->kind != KILN__RESULT_DIRECT && rp->kind != KILN__RESULT_COPY) continue;
        size_t nbytes = 0;
        kiln_shape_nbytes(&exe->entry->types[rp->slot]->shape, exe->entry->types[rp->slot]->dtype,
                          &nbytes);
        per_call += nbytes;
    }
    return per_call;
}

void kiln__exe_make_result_pool(kiln__cpu_exe *exe) {
    size_t per_call = fresh_result_bytes(exe);
    if (per_call == 0 || per_call > SIZE_MAX / 2) return;
    kiln__result_pool *p = kiln__raw_alloc(&exe->allocator, sizeof *p, _Alignof(kiln__result_pool));
    if (!p) return;
    memset(p, 0, sizeof *p);
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        kiln__raw_free(&exe->allocator, p, sizeof *p);
        return;
    }
    atomic_init(&p->refs, 1);
    p->cap = 2 * per_call;
    p->allocator = exe->allocator;
    exe->result_pool = p;
}

/* Small results are made at compile time too: a first call then allocates no result buffer
 * (a quarter of the first call of the 100-element EMLX step). Large ones are not: a fresh
 * buffer that nobody writes yet costs nothing but memory, and they are where memory counts. */
#define PRIME_RESULT_BYTES 4096

kiln_status kiln__exe_prime(kiln_ctx *cx, kiln__cpu_exe *exe) {
    kiln__call_state *st = state_new(cx, exe);
    if (!st) return kiln_ctx_status(cx);
    state_return(exe, st);
    kiln__result_pool *p = exe->result_pool;
    if (!p || fresh_result_bytes(exe) > PRIME_RESULT_BYTES) return KILN_OK;
    for (int32_t r = 0; r < exe->n_results; r++) {
        const kiln__result_plan *rp = &exe->results[r];
        if (rp->kind != KILN__RESULT_DIRECT && rp->kind != KILN__RESULT_COPY) continue;
        size_t nbytes = 0;
        const kiln__type *t = exe->entry->types[rp->slot];
        if (!kiln_shape_nbytes(&t->shape, t->dtype, &nbytes) || nbytes == 0) continue;
        kiln__storage *s = kiln__storage_new(cx, "kiln_compile", nbytes);
        if (!s) return kiln_ctx_status(cx);
        atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
        s->recycle = result_recycle;
        s->recycle_user = p;
        result_recycle(s); /* waits in the pool for the first call */
    }
    return KILN_OK;
}

/* A result tensor: a waiting buffer of the same size, allocator and device as cx's, or a
 * fresh one that will come back to the pool. */
static kiln_tensor *result_new(kiln_ctx *cx, kiln__cpu_exe *exe, const kiln__type *t) {
    kiln__result_pool *p = exe->result_pool;
    size_t nbytes = 0;
    if (!p || !kiln_shape_nbytes(&t->shape, t->dtype, &nbytes) || nbytes == 0) {
        return kiln__tensor_new(cx, call_fn, t->dtype, t->shape);
    }
    kiln__storage *s = NULL;
    pthread_mutex_lock(&p->lock);
    for (kiln__storage **link = &p->free; *link; link = &(*link)->recycle_next) {
        const kiln__storage *w = *link;
        if (w->nbytes != nbytes || !same_allocator(&w->allocator, &cx->allocator) ||
            w->device.type != cx->device.type || w->device.id != cx->device.id)
            continue;
        s = *link;
        *link = s->recycle_next;
        p->bytes -= nbytes;
        break;
    }
    pthread_mutex_unlock(&p->lock);
    if (s) {
        s->recycle_next = NULL;
        atomic_store_explicit(&s->refs, 1, memory_order_relaxed);
    } else {
        if (!(s = kiln__storage_new(cx, call_fn, nbytes))) return NULL;
        atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
        s->recycle = result_recycle;
        s->recycle_user = p;
    }
    return kiln__tensor_new_on(cx, call_fn, t->dtype, t->shape, s);
}

void kiln__exe_free_states(kiln__cpu_exe *exe) {
    while (exe->pool) {
        kiln__call_state *st = exe->pool;
        exe->pool = st->next;
        kiln__raw_free(&exe->allocator, st, exe->state_bytes);
    }
    kiln__result_pool *p = exe->result_pool;
    if (!p) return;
    exe->result_pool = NULL;
    pthread_mutex_lock(&p->lock);
    p->closed = true;
    kiln__storage *list = p->free;
    p->free = NULL;
    p->bytes = 0;
    pthread_mutex_unlock(&p->lock);
    while (list) {
        kiln__storage *next = list->recycle_next;
        kiln__storage_free(list);
        result_pool_unref(p);
        list = next;
    }
    result_pool_unref(p);
}

/* ---- planned blocks ----------------------------------------------------------------------- */

/* What the blocks of one call run over: the call state's tensor headers and pointers. */
typedef struct runner {
    kiln_tensor *headers;
    kiln_tensor **ptrs;
} runner;

static void copy_tensor(kiln_tensor *to, const kiln_tensor *from) {
    if (to->nbytes) memcpy(kiln__tensor_mutable_data(to), kiln_tensor_data(from), to->nbytes);
}

static kiln_status run_block(kiln_ctx *cx, const runner *R, const kiln__xblock *b,
                             const env *parent, kiln_tensor *const *args, kiln_tensor *const *outs);

/* A planned while: the condition, then the body, into the carry buffers (exe.h); at the end
 * the carries are copied into the op's results. */
static kiln_status run_while(kiln_ctx *cx, const runner *R, const kiln__xop *op, const env *e,
                             kiln_tensor *const *in, kiln_tensor *const *out) {
    const kiln__xloop *L = op->loop;
    const kiln__xblock *cond = op->regions[0], *body = op->regions[1];
    int32_t n = op->n_in;
    kiln_tensor **cur = R->ptrs + L->cur_at, **next = cur + n;
    kiln_tensor *pred = &R->headers[L->cond_buffer];
    for (int32_t i = 0; i < n; i++) {
        cur[i] = next[i] = in[i];
        if (L->carry[i] == KILN__CARRY_INPLACE) {
            cur[i] = next[i] = &R->headers[L->buffer[i]];
            copy_tensor(cur[i], in[i]);
        }
    }
    kiln_status s;
    for (;;) {
        s = run_block(cx, R, cond, e, cur, &pred);
        if (s != KILN_OK || !*(const uint8_t *)kiln_tensor_data(pred)) break;
        for (int32_t i = 0; i < n; i++) {
            if (L->carry[i] != KILN__CARRY_SWAP) continue;
            kiln_tensor *first = &R->headers[L->buffer[i]];
            next[i] = cur[i] == first ? first + 1 : first;
        }
        s = run_block(cx, R, body, e, cur, next);
        if (s != KILN_OK) break;
        for (int32_t i = 0; i < n; i++)
            cur[i] = next[i];
    }
    for (int32_t i = 0; i < n && s == KILN_OK; i++)
        copy_tensor(out[i], cur[i]);
    return s;
}

/* A CONTROL op of a planned block: its regions' planned blocks, into its result slots. */
static kiln_status run_control(kiln_ctx *cx, const runner *R, const kiln__xop *op, const env *e,
                               kiln_tensor *const *in, kiln_tensor *const *out) {
    int32_t branch = 0;
    switch (op->kind) {
    case KILN_OP_WHILE: return run_while(cx, R, op, e, in, out);
    case KILN_OP_CALL: return run_block(cx, R, op->regions[0], e, in, out);
    case KILN_OP_IF: branch = *(const uint8_t *)kiln_tensor_data(in[0]) ? 0 : 1; break;
    case KILN_OP_CASE:
        memcpy(&branch, kiln_tensor_data(in[0]), sizeof branch);
        if (branch < 0 || branch >= op->n_regions) branch = op->n_regions - 1; /* the last */
        break;
    default:
        return kiln_ctx_set_error(cx, KILN_INTERNAL, "%s: internal: a control op %s", call_fn,
                                  op_fn(op));
    }
    return run_block(cx, R, op->regions[branch], e, NULL, out);
}

/* Points the headers of b's PART slots into the results they are parts of (once vals holds
 * those results' tensors). */
static void point_parts(const kiln__xplan *p, kiln_tensor *const *vals) {
    for (int32_t i = 0; i < p->n_parts; i++) {
        int32_t u = p->parts[i];
        kiln_tensor *part = vals[u];
        const kiln_tensor *whole = vals[p->part_of[u]];
        part->storage = whole->storage;
        part->byte_offset = whole->byte_offset + p->part_offset[u];
    }
}

/* Runs the ops of planned block b over e->vals. */
static kiln_status run_ops(kiln_ctx *cx, const runner *R, const kiln__xblock *b, const env *e) {
    kiln_tensor **vals = (kiln_tensor **)e->vals;
    kiln_tensor **in = vals + b->n_slots, **out = in + b->max_in;
    for (int32_t k = 0; k < b->n_ops; k++) {
        const kiln__xop *op = &b->ops[k];
        if (op->in_place) continue;
        for (int32_t j = 0; j < op->n_in; j++)
            in[j] = op->in[j].depth == 0 ? vals[op->in[j].slot] : lookup(e, op->in[j]);
        for (int32_t j = 0; j < op->n_out; j++)
            out[j] = vals[op->out[j]];
        kiln_status s = op->kernel    ? kiln__fused_run(cx, op->kernel, in, out)
                        : op->control ? run_control(cx, R, op, e, in, out)
                                      : run_op(cx, op, e, in, out);
        if (s != KILN_OK) return s;
    }
    return KILN_OK;
}

/* A region's planned block: args are its arguments, outs the tensors its results go to. */
static kiln_status run_block(kiln_ctx *cx, const runner *R, const kiln__xblock *b,
                             const env *parent, kiln_tensor *const *args,
                             kiln_tensor *const *outs) {
    const kiln__xplan *p = b->plan;
    kiln_tensor **vals = R->ptrs + p->vals_at;
    for (int32_t i = 0; i < b->n_args; i++)
        vals[i] = args[i];
    for (int32_t r = 0; r < b->n_results; r++)
        if (p->results[r].kind == KILN__RESULT_DIRECT) vals[p->results[r].slot] = outs[r];
    point_parts(p, vals);
    const env e = {.blk = b, .vals = vals, .parent = parent};
    kiln_status s = run_ops(cx, R, b, &e);
    for (int32_t r = 0; r < b->n_results && s == KILN_OK; r++) {
        const kiln__result_plan *rp = &p->results[r];
        if (rp->kind == KILN__RESULT_COPY)
            copy_tensor(outs[r], lookup(&e, (kiln__xref){.depth = rp->depth, .slot = rp->slot}));
    }
    return s;
}

/* ---- calls -------------------------------------------------------------------------------- */

static void release_outs(kiln_tensor **outs, int32_t n) {
    for (int32_t r = 0; r < n; r++) {
        kiln_tensor_release(outs[r]);
        outs[r] = NULL;
    }
}

/* The result tensors made before the run. */
static kiln_status prepare(kiln_ctx *cx, const kiln__cpu_exe *exe, kiln_tensor *const *args,
                           bool *reusable, kiln_tensor **vals, kiln_tensor **outs) {
    const kiln__xblock *b = exe->entry;
    for (int32_t r = 0; r < exe->n_results; r++) {
        const kiln__result_plan *rp = &exe->results[r];
        const kiln__type *t = b->types[rp->slot];
        kiln_tensor *o = NULL;
        switch (rp->kind) {
        case KILN__RESULT_ARG:
        case KILN__RESULT_CONST:
            o = kiln__tensor_view(cx, call_fn, vals[rp->slot], t->dtype, t->shape);
            break;
        case KILN__RESULT_DIRECT:
        case KILN__RESULT_COPY:
            if (rp->alias >= 0 && reusable[rp->alias]) {
                o = kiln__tensor_view(cx, call_fn, args[rp->alias], t->dtype, t->shape);
                reusable[rp->alias] = false;
            } else {
                o = result_new(cx, (kiln__cpu_exe *)exe, t);
            }
            if (o && rp->kind == KILN__RESULT_DIRECT) vals[rp->slot] = o;
            break;
        }
        if (!o) return KILN_RESOURCE_EXHAUSTED;
        outs[r] = o;
    }
    return KILN_OK;
}

kiln_status kiln__cpu_execute(kiln_ctx *cx, const kiln__executable *x, const kiln__execute_args *a,
                              kiln__event **out_event) {
    kiln__cpu_exe *exe = (kiln__cpu_exe *)x; /* only its pools change, under their locks */
    *out_event = NULL;
    kiln__call_state *st = state_acquire(cx, exe);
    if (!st) return KILN_RESOURCE_EXHAUSTED;
    const runner R = {.headers = at(st, exe->off_tensors), .ptrs = at(st, exe->off_ptrs)};
    const kiln__xblock *entry = exe->entry;
    kiln_tensor **vals = R.ptrs + entry->plan->vals_at;
    kiln_tensor **outs = at(st, exe->off_outs);
    for (int32_t i = 0; i < exe->n_args; i++)
        vals[i] = a->args[i];
    for (int32_t r = 0; r < exe->n_results; r++)
        outs[r] = NULL;

    kiln_status s = prepare(cx, exe, a->args, a->reusable, vals, outs);
    if (s == KILN_OK) {
        *a->started = true;
        point_parts(entry->plan, vals);
        const env e = {.blk = entry, .vals = vals, .parent = NULL};
        s = run_ops(cx, &R, entry, &e);
    }
    for (int32_t r = 0; r < exe->n_results && s == KILN_OK; r++) {
        const kiln__result_plan *rp = &exe->results[r];
        if (rp->kind == KILN__RESULT_COPY && outs[r]) copy_tensor(outs[r], vals[rp->slot]);
    }
    if (s != KILN_OK) {
        release_outs(outs, exe->n_results);
    } else {
        for (int32_t r = 0; r < exe->n_results; r++)
            a->results[r] = outs[r];
    }
    state_return(exe, st);
    return s;
}
