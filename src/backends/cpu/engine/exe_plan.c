/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU backend's buffer plans (exe.h), for the entry block and every block it runs (the
 * bodies of its loops, branches and calls, nested): which slots live in the call's arena
 * and at which offsets (first fit by liveness, an elementwise op or kernel writing over an
 * operand that dies there), which results are written straight into the tensors the
 * block's caller hands it (result tensors, donated buffers, carry buffers), how each loop
 * keeps its carries, and the call state's layout. A block's regions are laid out above
 * the block's own values: a region runs inside one op, and everything it makes is dead
 * (or in its caller's buffers) when that op ends, so the regions of a block's ops share
 * the space above it. */
#include <string.h>

#include "backends/cpu/engine/exe.h"
#include "base/alloc.h"
#include "base/ctx_internal.h"

/* Buffers in the arena start on a cache line. */
#define BUFFER_ALIGN 64

static const char compile_fn[] = "kiln_compile";

#define PNEW(type, n) \
    ((type *)kiln__cpu_exe_alloc(cx, exe, (size_t)(n) * sizeof(type), _Alignof(type)))

static size_t align_up(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }

bool kiln__xop_inplace_ok(const kiln__xblock *b, const kiln__xop *op, int32_t i) {
    if (op->kernel) return op->in[i].depth == 0 && kiln__fused_inplace_ok(op->kernel, i);
    if (!kiln__op_has(op->kind, KILN_OPF_ELEMENTWISE) || op->n_out != 1 || op->in[i].depth != 0)
        return false;
    const kiln__type *x = b->types[op->in[i].slot], *r = b->types[op->out[0]];
    if (kiln_dtype_size(x->dtype) != kiln_dtype_size(r->dtype) ||
        !kiln_shape_equal(&x->shape, &r->shape))
        return false;
    /* These kernels memcpy the operand: not over itself. */
    if (op->kind == KILN_OP_CONVERT && x->dtype == r->dtype) return false;
    if (op->kind == KILN_OP_SELECT && b->types[op->in[0].slot]->shape.rank == 0) return false;
    return true;
}

/* Uses of a block's slots (depth `depth` from b) by ops of b and its regions count at k
 * (and as two reads each in uses). */
static void mark_uses(const kiln__xblock *b, int32_t depth, int32_t k, int32_t *last,
                      int32_t *uses) {
    for (int32_t j = 0; j < b->n_ops; j++) {
        const kiln__xop *op = &b->ops[j];
        for (int32_t i = 0; i < op->n_in; i++) {
            if (op->in[i].depth != depth) continue;
            if (last[op->in[i].slot] < k) last[op->in[i].slot] = k;
            uses[op->in[i].slot] += 2;
        }
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) mark_uses(op->regions[r], depth + 1, k, last, uses);
    }
    for (int32_t i = 0; i < b->n_results; i++) {
        if (b->results[i].depth != depth) continue;
        if (last[b->results[i].slot] < k) last[b->results[i].slot] = k;
        uses[b->results[i].slot] += 2;
    }
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
static bool direct_ok(const kiln__xblock *b, const int32_t *last, int32_t a, int32_t p,
                      int32_t first_write) {
    if (first_write < p) return last[a] < first_write; /* parts are written from there on */
    if (last[a] < p) return true;
    if (last[a] > p) return false;
    const kiln__xop *op = &b->ops[p];
    /* p's regions may read a anywhere while p writes its results (a branch, a loop body). */
    if (op->n_regions > 0) return false;
    for (int32_t i = 0; i < op->n_in; i++)
        if (op->in[i].depth == 0 && op->in[i].slot == a && !kiln__xop_inplace_ok(b, op, i))
            return false;
    return true;
}

typedef struct plan_scratch {
    int32_t *last, *def, *die_head, *die_next, *home;
    int32_t *uses;        /* reads by ops and results of the block; 2 for any read by a region */
    int32_t *first_write; /* where a value's buffer is first written (a concatenate's: its
                             first part's op) */
    bool *holds;
    interval *iv;
} plan_scratch;

/* What plans are made with: the executable, and the headers and pointers counted so far. */
typedef struct planner {
    kiln_ctx *cx;
    kiln__cpu_exe *exe;
    size_t end; /* the arena's size */
    int32_t n_headers, cap_headers;
    int32_t n_buffers; /* values and carries placed: some share a header */
    int32_t n_ptrs;
    int32_t cap_blocks;
    /* The headers of arena values by type and offset (shared_header): open addressing,
     * header index + 1 (0: empty), from the ctx's allocator for the plan only. */
    int32_t *by_place;
    size_t cap_by_place, n_by_place;
    int32_t first_places[32]; /* by_place while it is small */
} planner;

/* Whose block it is: the entry (results into the caller's tensors, donation), a loop's body
 * (result i may stay argument i, or be written over it), or another region. */
typedef enum block_role { ROLE_ENTRY, ROLE_BODY, ROLE_REGION } block_role;

/* A tensor header over [offset, ...) of the arena, with type t: its index. */
static int32_t add_header(planner *P, const kiln__type *t, size_t offset) {
    kiln__cpu_exe *exe = P->exe;
    if (P->n_headers == P->cap_headers) {
        int32_t cap = P->cap_headers ? 2 * P->cap_headers : 64;
        const kiln__type **types = kiln__cpu_exe_alloc_raw(P->cx, exe, (size_t)cap * sizeof *types,
                                                           _Alignof(const kiln__type *));
        size_t *offs = types ? kiln__cpu_exe_alloc_raw(P->cx, exe, (size_t)cap * sizeof *offs,
                                                       _Alignof(size_t))
                             : NULL;
        if (!offs) return -1;
        if (P->n_headers) {
            memcpy(types, exe->header_type, (size_t)P->n_headers * sizeof *types);
            memcpy(offs, exe->header_offset, (size_t)P->n_headers * sizeof *offs);
        }
        exe->header_type = types;
        exe->header_offset = offs;
        P->cap_headers = cap;
    }
    exe->header_type[P->n_headers] = t;
    exe->header_offset[P->n_headers] = offset;
    P->n_buffers++;
    return P->n_headers++;
}

static size_t place_hash(const kiln__type *t, size_t offset) {
    uint64_t h = ((uint64_t)(uintptr_t)t ^ ((uint64_t)offset << 17)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32);
}

/* The header of an arena value of type t (the executable's interned copy) at offset: one
 * for all the values of that type placed there, whose lifetimes never overlap (at most
 * one op reads one and writes the next over it, which is how it works in place anyway),
 * so that a call state of a 10^4-step unrolled loop holds a few headers, not one per
 * value. -1 when out of memory. */
static int32_t shared_header(planner *P, const kiln__type *t, size_t offset) {
    if (!P->by_place) {
        P->by_place = P->first_places; /* zeroed with the planner */
        P->cap_by_place = sizeof P->first_places / sizeof P->first_places[0];
    }
    if (2 * (P->n_by_place + 1) > P->cap_by_place) {
        size_t cap = 2 * P->cap_by_place;
        int32_t *m = kiln__calloc(P->cx, cap * sizeof *m, _Alignof(int32_t), "kiln_compile");
        if (!m) return -1;
        for (size_t i = 0; i < P->cap_by_place; i++) {
            int32_t h = P->by_place[i] - 1;
            if (h < 0) continue;
            size_t j = place_hash(P->exe->header_type[h], P->exe->header_offset[h]) & (cap - 1);
            while (m[j])
                j = (j + 1) & (cap - 1);
            m[j] = h + 1;
        }
        if (P->by_place != P->first_places)
            kiln__free(P->cx, P->by_place, P->cap_by_place * sizeof *P->by_place);
        P->by_place = m;
        P->cap_by_place = cap;
    }
    size_t i = place_hash(t, offset) & (P->cap_by_place - 1);
    for (; P->by_place[i]; i = (i + 1) & (P->cap_by_place - 1)) {
        int32_t h = P->by_place[i] - 1;
        if (P->exe->header_type[h] == t && P->exe->header_offset[h] == offset) {
            P->n_buffers++;
            return h;
        }
    }
    int32_t h = add_header(P, t, offset);
    if (h < 0) return -1;
    P->by_place[i] = h + 1;
    P->n_by_place++;
    return h;
}

static bool add_block(planner *P, kiln__xblock *b) {
    kiln__cpu_exe *exe = P->exe;
    if (exe->n_blocks == P->cap_blocks) {
        int32_t cap = P->cap_blocks ? 2 * P->cap_blocks : 8;
        kiln__xblock **blocks = kiln__cpu_exe_alloc_raw(P->cx, exe, (size_t)cap * sizeof *blocks,
                                                        _Alignof(kiln__xblock *));
        if (!blocks) return false;
        if (exe->n_blocks) memcpy(blocks, exe->blocks, (size_t)exe->n_blocks * sizeof *blocks);
        exe->blocks = blocks;
        P->cap_blocks = cap;
    }
    exe->blocks[exe->n_blocks++] = b;
    return true;
}

static kiln_status plan_block(planner *P, kiln__xblock *b, size_t base, block_role role,
                              bool assert_nonallocating);

/* Concatenates along a dimension with only 1s before it (each operand one run of the
 * result's bytes) whose operands are all made by ops of the block for this concatenate
 * alone: those ops write straight into the result, and the concatenate does not run. The
 * result's buffer is then written from its first part's op on. */
static void plan_parts(kiln__xblock *b, kiln__xplan *p, plan_scratch *s) {
    for (int32_t k = 0; k < b->n_ops; k++) {
        kiln__xop *op = &b->ops[k];
        if (op->kind != KILN_OP_CONCATENATE || op->kernel || op->n_out != 1) continue;
        int32_t v = op->out[0];
        const kiln__type *t = b->types[v];
        int64_t dim = op->attrs->u.dimension;
        bool ok = kiln__type_bytes(t) > 0 && p->slot_kind[v] == KILN__SLOT_ARENA;
        for (int64_t d = 0; d < dim && ok; d++)
            ok = t->shape.dims[d] == 1;
        int32_t first = k;
        for (int32_t i = 0; i < op->n_in && ok; i++) {
            int32_t u = op->in[i].slot;
            ok = op->in[i].depth == 0 && p->slot_kind[u] == KILN__SLOT_ARENA && s->def[u] >= 0 &&
                 s->uses[u] == 1 && p->part_of[u] < 0 && !b->ops[s->def[u]].in_place;
            if (ok && s->def[u] < first) first = s->def[u];
        }
        if (!ok) continue;
        size_t at = 0;
        for (int32_t i = 0; i < op->n_in; i++) {
            int32_t u = op->in[i].slot;
            p->part_of[u] = v;
            p->part_offset[u] = at;
            at += kiln__type_bytes(b->types[u]);
        }
        s->first_write[v] = first;
        op->in_place = true;
    }
}

/* How result r of b is made. The entry's follow donation and preserved arguments; a
 * region's are written into what its caller hands it (a loop body's may also stay its
 * argument, or overwrite it) or copied there at its end. */
static kiln_status plan_results(planner *P, kiln__xblock *b, kiln__xplan *p, block_role role,
                                const plan_scratch *s, bool assert_nonallocating) {
    kiln__cpu_exe *exe = P->exe;
    int32_t *home = s->home; /* per slot: the result it is written into, or -1 */
    for (int32_t r = 0; r < b->n_results; r++) {
        kiln__xref src = b->results[r];
        int32_t v = src.slot;
        int32_t a = role == ROLE_ENTRY ? exe->aliases[r] : -1;
        kiln__result_plan *rp = &p->results[r];
        *rp = (kiln__result_plan){
            .kind = KILN__RESULT_COPY, .depth = src.depth, .slot = v, .alias = a};
        if (src.depth > 0) continue; /* a value of a block around: copied */
        uint8_t kind = p->slot_kind[v];
        if (role == ROLE_ENTRY) {
            if (exe->preserved[r] >= 0 || kind == KILN__SLOT_ARG) {
                rp->kind = KILN__RESULT_ARG;
                rp->alias = -1;
            } else if (kind == KILN__SLOT_CONST) {
                if (a < 0) rp->kind = KILN__RESULT_CONST;
            } else if (home[v] < 0 &&
                       (a < 0 || direct_ok(b, s->last, a, s->def[v], s->first_write[v]))) {
                rp->kind = KILN__RESULT_DIRECT;
                home[v] = r;
                p->slot_kind[v] = KILN__SLOT_OUTPUT;
            }
            if (assert_nonallocating && exe->preserved[r] < 0 && a < 0) {
                char t[KILN__TYPE_TEXT];
                return kiln_ctx_set_error(
                    P->cx, KILN_FAILED_PRECONDITION,
                    "%s: assert_nonallocating: result %d (%s) reuses no donated or preserved "
                    "buffer (no donated argument of its dtype and byte size is left to alias)",
                    compile_fn, (int)r, kiln__type_text(b->types[v], t));
            }
            continue;
        }
        if (role == ROLE_BODY && kind == KILN__SLOT_ARG && v == r) {
            rp->kind = KILN__RESULT_ARG; /* passed through */
        } else if (kind == KILN__SLOT_ARENA && home[v] < 0 && s->def[v] >= 0) {
            rp->kind = KILN__RESULT_DIRECT;
            home[v] = r;
            p->slot_kind[v] = KILN__SLOT_OUTPUT;
            if (role == ROLE_BODY && r < b->n_args &&
                direct_ok(b, s->last, r, s->def[v], s->first_write[v]))
                rp->alias = r; /* may be written over carry r: updated in place */
        }
    }
    return KILN_OK;
}

/* The carries of a planned while (op of block b): how each is kept, its buffers above
 * `base`, and the plans of the condition and body (at `base` too: they never run at once,
 * and the body writes its results into the carry buffers). */
static kiln_status plan_loop(planner *P, const kiln__xblock *b, kiln__xop *op, size_t base,
                             size_t *end) {
    kiln_ctx *cx = P->cx;
    kiln__cpu_exe *exe = P->exe;
    kiln__xblock *cond = op->regions[0], *body = op->regions[1];
    kiln_status s = plan_block(P, cond, base, ROLE_REGION, false);
    if (s == KILN_OK) s = plan_block(P, body, base, ROLE_BODY, false);
    if (s != KILN_OK) return s;
    int32_t n = op->n_out;
    kiln__xloop *loop = kiln__cpu_exe_alloc(cx, exe, sizeof *loop, _Alignof(kiln__xloop));
    uint8_t *carry = PNEW(uint8_t, n);
    int32_t *buffer = PNEW(int32_t, n);
    if (!loop || !carry || !buffer) return KILN_RESOURCE_EXHAUSTED;
    size_t at = align_up(cond->plan->end > body->plan->end ? cond->plan->end : body->plan->end,
                         BUFFER_ALIGN);
    for (int32_t i = 0; i < n; i++) {
        const kiln__result_plan *rp = &body->plan->results[i];
        carry[i] = rp->kind == KILN__RESULT_ARG ? KILN__CARRY_PASS
                   : rp->alias == i             ? KILN__CARRY_INPLACE
                                                : KILN__CARRY_SWAP;
        buffer[i] = -1;
        int32_t copies = carry[i] == KILN__CARRY_PASS ? 0 : carry[i] == KILN__CARRY_INPLACE ? 1 : 2;
        const kiln__type *t = b->types[op->out[i]];
        size_t size = align_up(kiln__type_bytes(t), BUFFER_ALIGN);
        for (int32_t c = 0; c < copies; c++) {
            int32_t h = add_header(P, t, at);
            if (h < 0) return KILN_RESOURCE_EXHAUSTED;
            if (c == 0) buffer[i] = h;
            at += size;
        }
    }
    static const kiln__type pred = {.dtype = KILN_BOOL};
    loop->cond_buffer = add_header(P, &pred, at);
    if (loop->cond_buffer < 0) return KILN_RESOURCE_EXHAUSTED;
    at += BUFFER_ALIGN;
    loop->carry = carry;
    loop->buffer = buffer;
    loop->cur_at = P->n_ptrs;
    P->n_ptrs += 2 * n;
    op->loop = loop;
    *end = at;
    return KILN_OK;
}

/* The plans of the regions of b's CONTROL ops, laid out from `base` up; *end past them. */
static kiln_status plan_regions(planner *P, kiln__xblock *b, size_t base, size_t *end) {
    *end = base;
    for (int32_t k = 0; k < b->n_ops; k++) {
        kiln__xop *op = &b->ops[k];
        if (!op->control) continue;
        size_t op_end = base;
        kiln_status s = KILN_OK;
        if (op->kind == KILN_OP_WHILE) {
            s = plan_loop(P, b, op, base, &op_end);
        } else {
            for (int32_t r = 0; r < op->n_regions && s == KILN_OK; r++) {
                s = plan_block(P, op->regions[r], base, ROLE_REGION, false);
                if (s == KILN_OK && op->regions[r]->plan->end > op_end)
                    op_end = op->regions[r]->plan->end;
            }
        }
        if (s != KILN_OK) return s;
        if (op_end > *end) *end = op_end;
    }
    return KILN_OK;
}

/* The scratch of planning a block of n slots and n_ops ops, in one zeroed allocation of
 * the ctx (freed when the block is planned: it must not stay in the executable, a
 * 150,000-slot block's is 8 MB). */
typedef struct scratch_mem {
    void *p;
    size_t bytes;
} scratch_mem;

static bool scratch_new(kiln_ctx *cx, int32_t n, int32_t n_ops, plan_scratch *s, scratch_mem *mem) {
    size_t un = (size_t)n, ints = 6 * un + (size_t)n_ops + 1;
    size_t iv_at = align_up(ints * sizeof(int32_t), _Alignof(interval));
    size_t holds_at = iv_at + un * sizeof(interval);
    mem->bytes = holds_at + un * sizeof(bool);
    unsigned char *m = kiln__calloc(cx, mem->bytes, _Alignof(interval), compile_fn);
    mem->p = m;
    if (!m) return false;
    int32_t *i = (int32_t *)(void *)m;
    *s = (plan_scratch){.last = i,
                        .def = i + un,
                        .die_next = i + 2 * un,
                        .home = i + 3 * un,
                        .uses = i + 4 * un,
                        .first_write = i + 5 * un,
                        .die_head = i + 6 * un,
                        .iv = (interval *)(void *)(m + iv_at),
                        .holds = (bool *)(void *)(m + holds_at)};
    return true;
}

static kiln_status plan_values(planner *P, kiln__xblock *b, kiln__xplan *p, size_t base,
                               block_role role, bool assert_nonallocating, plan_scratch s);

static kiln_status plan_block(planner *P, kiln__xblock *b, size_t base, block_role role,
                              bool assert_nonallocating) {
    kiln_ctx *cx = P->cx;
    kiln__cpu_exe *exe = P->exe;
    int32_t n = b->n_slots;
    kiln__xplan *p = kiln__cpu_exe_alloc(cx, exe, sizeof *p, _Alignof(kiln__xplan));
    if (!p || !add_block(P, b)) return KILN_RESOURCE_EXHAUSTED;
    p->slot_kind = PNEW(uint8_t, n);
    p->slot_offset = PNEW(size_t, n);
    p->slot_tensor = PNEW(int32_t, n);
    p->results = PNEW(kiln__result_plan, b->n_results);
    p->part_of = PNEW(int32_t, n);
    p->part_offset = PNEW(size_t, n);
    plan_scratch s;
    scratch_mem mem;
    if (!p->slot_kind || !p->slot_offset || !p->slot_tensor || (b->n_results && !p->results) ||
        !p->part_of || !p->part_offset || !scratch_new(cx, n, b->n_ops, &s, &mem))
        return KILN_RESOURCE_EXHAUSTED;
    kiln_status st = plan_values(P, b, p, base, role, assert_nonallocating, s);
    kiln__free(cx, mem.p, mem.bytes);
    if (st != KILN_OK) return st;
    size_t regions_end;
    st = plan_regions(P, b, align_up(base + p->peak, BUFFER_ALIGN), &regions_end);
    if (st != KILN_OK) return st;
    p->end = regions_end > base + p->peak ? regions_end : base + p->peak;
    if (p->end > P->end) P->end = p->end;
    return KILN_OK;
}

/* Plans b's own values (slot kinds, results, arena offsets, tensor headers) with scratch s. */
static kiln_status plan_values(planner *P, kiln__xblock *b, kiln__xplan *p, size_t base,
                               block_role role, bool assert_nonallocating, plan_scratch s) {
    kiln_ctx *cx = P->cx;
    kiln__cpu_exe *exe = P->exe;
    int32_t n = b->n_slots, n_ops = b->n_ops;
    p->base = base;

    for (int32_t v = 0; v < n; v++) {
        s.last[v] = -1;
        s.def[v] = -1;
        s.home[v] = -1;
        s.first_write[v] = INT32_MAX;
        p->part_of[v] = -1;
        p->slot_tensor[v] = -1;
        p->slot_kind[v] = v < b->n_args  ? KILN__SLOT_ARG
                          : b->consts[v] ? KILN__SLOT_CONST
                                         : KILN__SLOT_ARENA;
    }
    for (int32_t k = 0; k < n_ops; k++) {
        const kiln__xop *op = &b->ops[k];
        for (int32_t i = 0; i < op->n_out; i++)
            s.def[op->out[i]] = s.first_write[op->out[i]] = k;
        for (int32_t i = 0; i < op->n_in; i++) {
            if (op->in[i].depth != 0) continue;
            if (s.last[op->in[i].slot] < k) s.last[op->in[i].slot] = k;
            s.uses[op->in[i].slot]++;
        }
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) mark_uses(op->regions[r], 1, k, s.last, s.uses);
    }
    for (int32_t r = 0; r < b->n_results; r++) {
        if (b->results[r].depth != 0) continue;
        s.last[b->results[r].slot] = n_ops;
        s.uses[b->results[r].slot] += 2;
    }
    for (int32_t v = b->n_args; v < n; v++)
        if (s.def[v] < 0 && p->slot_kind[v] == KILN__SLOT_ARENA)
            p->slot_kind[v] = KILN__SLOT_UNUSED;

    plan_parts(b, p, &s);
    kiln_status st = plan_results(P, b, p, role, &s, assert_nonallocating);
    if (st != KILN_OK) return st;
    for (int32_t v = 0; v < n; v++) {
        if (p->part_of[v] < 0 || p->slot_kind[p->part_of[v]] != KILN__SLOT_OUTPUT) continue;
        p->slot_kind[v] = KILN__SLOT_PART;
        p->n_parts++;
    }
    p->parts = PNEW(int32_t, p->n_parts);
    if (p->n_parts && !p->parts) return KILN_RESOURCE_EXHAUSTED;
    for (int32_t v = 0, i = 0; v < n; v++)
        if (p->slot_kind[v] == KILN__SLOT_PART) p->parts[i++] = v;

    /* Arena slots die after their last use (an unused result right after its op). */
    for (int32_t k = 0; k <= n_ops; k++)
        s.die_head[k] = -1;
    for (int32_t v = 0; v < n; v++) {
        s.die_next[v] = -1;
        if (p->slot_kind[v] != KILN__SLOT_ARENA) continue;
        p->n_arena++;
        int32_t end = s.last[v] >= 0 ? s.last[v] : s.def[v];
        s.die_next[v] = s.die_head[end];
        s.die_head[end] = v;
    }

    arena_plan ap = {.iv = s.iv};
    for (int32_t k = 0; k < n_ops; k++) {
        const kiln__xop *op = &b->ops[k];
        for (int32_t j = 0; j < op->n_out; j++) {
            int32_t v = op->out[j];
            if (p->slot_kind[v] != KILN__SLOT_ARENA || s.holds[v]) continue;
            int32_t whole = p->part_of[v];
            if (whole >= 0) { /* a part: its result's buffer is taken at the first part */
                if (!s.holds[whole]) {
                    p->slot_offset[whole] =
                        base + arena_take(&ap,
                                          align_up(kiln__type_bytes(b->types[whole]), BUFFER_ALIGN),
                                          whole);
                    s.holds[whole] = true;
                }
                p->slot_offset[v] = p->slot_offset[whole] + p->part_offset[v];
                continue;
            }
            size_t size = align_up(kiln__type_bytes(b->types[v]), BUFFER_ALIGN);
            if (size == 0) continue;
            int32_t reuse = -1;
            for (int32_t i = 0; i < op->n_in && reuse < 0; i++) {
                int32_t u = op->in[i].slot;
                if (op->in[i].depth == 0 && p->slot_kind[u] == KILN__SLOT_ARENA && s.holds[u] &&
                    s.last[u] == k &&
                    kiln__type_bytes(b->types[u]) == kiln__type_bytes(b->types[v]) &&
                    kiln__xop_inplace_ok(b, op, i))
                    reuse = u;
            }
            if (reuse >= 0) {
                p->slot_offset[v] = p->slot_offset[reuse];
                arena_rename(&ap, reuse, v);
                s.holds[reuse] = false;
            } else {
                p->slot_offset[v] = base + arena_take(&ap, size, v);
            }
            s.holds[v] = true;
        }
        for (int32_t v = s.die_head[k]; v >= 0; v = s.die_next[v]) {
            if (!s.holds[v]) continue;
            arena_give(&ap, v);
            s.holds[v] = false;
        }
    }
    p->peak = ap.peak;
    /* A part's header is pointed into its result when the block runs: its own. */
    for (int32_t v = 0; v < n; v++) {
        uint8_t kind = p->slot_kind[v];
        if (kind != KILN__SLOT_ARENA && kind != KILN__SLOT_PART) continue;
        p->slot_tensor[v] = kind == KILN__SLOT_ARENA
                                ? shared_header(P, b->types[v], p->slot_offset[v])
                                : add_header(P, b->types[v], p->slot_offset[v]);
        if (p->slot_tensor[v] < 0) return KILN_RESOURCE_EXHAUSTED;
    }
    p->vals_at = P->n_ptrs;
    P->n_ptrs += n + b->max_in + b->max_out;
    b->plan = p;
    return KILN_OK;
}

kiln_status kiln__cpu_plan(kiln_ctx *cx, kiln__cpu_exe *exe, bool assert_nonallocating) {
    planner P = {.cx = cx, .exe = exe};
    kiln_status s = plan_block(&P, exe->entry, 0, ROLE_ENTRY, assert_nonallocating);
    if (P.by_place && P.by_place != P.first_places)
        kiln__free(cx, P.by_place, P.cap_by_place * sizeof *P.by_place);
    if (s != KILN_OK) return s;
    exe->results = exe->entry->plan->results;
    exe->arena_bytes = P.end;
    exe->n_headers = P.n_headers;
    exe->n_buffers = P.n_buffers;
    exe->n_ptrs = P.n_ptrs;
    exe->n_ops = exe->entry->n_ops;

    /* The call state's layout. */
    size_t off = align_up(sizeof(kiln__call_state), 64);
    exe->off_arena = off;
    off = align_up(off + exe->arena_bytes, 64);
    exe->off_tensors = off;
    off += (size_t)exe->n_headers * sizeof(kiln_tensor);
    exe->off_ptrs = off = align_up(off, _Alignof(kiln_tensor *));
    off += (size_t)exe->n_ptrs * sizeof(kiln_tensor *);
    exe->off_outs = off;
    off += (size_t)exe->n_results * sizeof(kiln_tensor *);
    exe->state_bytes = align_up(off, 64);
    return KILN_OK;
}
