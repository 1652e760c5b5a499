/* The CPU backend's buffer plan for an executable's entry block (exe.h): which slots live
 * in the call's arena and at which offsets (first fit by liveness, an elementwise op or
 * kernel writing over an operand that dies there), which results are written straight
 * into their tensors or into donated buffers, and the call state's layout. */
#include <string.h>

#include "backends/cpu/exe.h"
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

kiln_status kiln__cpu_plan(kiln_ctx *cx, kiln__cpu_exe *exe, bool assert_nonallocating) {
    const kiln__xblock *b = exe->entry;
    int32_t n = b->n_slots, n_ops = b->n_ops;
    exe->slot_kind = PNEW(uint8_t, n);
    exe->slot_offset = PNEW(size_t, n);
    exe->slot_tensor = PNEW(int32_t, n);
    exe->results = PNEW(kiln__result_plan, exe->n_results);
    /* Compile-time scratch goes in the executable's memory too: it is small. */
    plan_scratch s = {.last = PNEW(int32_t, n),
                      .def = PNEW(int32_t, n),
                      .die_head = PNEW(int32_t, n_ops + 1),
                      .die_next = PNEW(int32_t, n),
                      .holds = PNEW(bool, n),
                      .iv = PNEW(interval, n)};
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
                                      compile_fn, (int)r, kiln__type_text(b->types[v], t));
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
    exe->control_slots = PNEW(int32_t, n_control);
    if (!exe->control_slots) return KILN_RESOURCE_EXHAUSTED;
    for (int32_t v = 0, i = 0; v < n; v++)
        if (exe->slot_kind[v] == KILN__SLOT_CONTROL) exe->control_slots[i++] = v;

    arena_plan ap = {.iv = s.iv};
    for (int32_t k = 0; k < n_ops; k++) {
        const kiln__xop *op = &b->ops[k];
        for (int32_t j = 0; j < op->n_out && !op->control; j++) {
            int32_t v = op->out[j];
            if (exe->slot_kind[v] != KILN__SLOT_ARENA) continue;
            size_t size = align_up(kiln__type_bytes(b->types[v]), BUFFER_ALIGN);
            if (size == 0) continue;
            int32_t reuse = -1;
            for (int32_t i = 0; i < op->n_in && reuse < 0; i++) {
                int32_t u = op->in[i].slot;
                if (op->in[i].depth == 0 && exe->slot_kind[u] == KILN__SLOT_ARENA && s.holds[u] &&
                    s.last[u] == k &&
                    kiln__type_bytes(b->types[u]) == kiln__type_bytes(b->types[v]) &&
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
    exe->state_bytes = align_up(off, 64);
    return KILN_OK;
}
