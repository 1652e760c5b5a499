/* SPDX-License-Identifier: Apache-2.0 */
/* The tiled fused-kernel engine (fused.h). */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "backends/cpu/eval/eval_elementwise.h"
#include "backends/cpu/engine/fused.h"
#include "backends/cpu/lib/vec_prims.h"
#include "backends/cpu/engine/native.h"
#include "base/threads.h"
#include "core/half.h"
#include "core/tensor_internal.h"

/* Registers of one worker live in a stack buffer of this size; the tile length follows
 * from the number of registers. */
#define WORKSPACE_BYTES (128 * 1024)
#define MAX_TILE 1024
#define L1_TILE_BYTES (16 * 1024)
/* A kernel whose inputs and outputs take at most this many bytes in all stays in the L2
 * cache whatever its tile: it keeps the longest tile (fewer passes of its instructions). */
#define CACHED_KERNEL_BYTES (256 * 1024)
/* Kernels over fewer elements than this per thread stay on the calling thread. */
#define PARALLEL_MIN_ELEMS (1 << 16)
/* Extra tile buffers for the evaluator's f16/bf16 operands and result. */
#define N_SCRATCH 4

typedef struct finput {
    kiln__kaccess access;
    kiln_dtype dtype;
    bool half;
    size_t esize; /* bytes of an element in memory */
    int32_t operand;
    int64_t offset;
    int64_t st[KILN_MAX_RANK];
    uint64_t bits;
    bool is_constant;
    /* A strided read that is row-major over the iteration shape from `offset` on (a slice
     * of the outermost dimensions): read in place, as a contiguous one at an offset. */
    bool linear;
} finput;

typedef struct fstep {
    kiln__vec_prim_fn prim; /* NULL: the evaluator's kernel */
    kiln_op op;
    const kiln__attrs *attrs; /* for the evaluator's kernel (NULL with a primitive) */
    int32_t dst, args[3], n_args;
    kiln_dtype dtype, arg_dtype[3];
    bool round;          /* an f16/bf16 result computed by a primitive in f32 */
    uint8_t scalar_args; /* mask of the arguments the primitive reads as one value */
} fstep;

typedef struct foutput {
    int32_t reg;
    kiln_dtype dtype;
} foutput;

struct kiln__fused {
    int32_t rank;
    int64_t dims[KILN_MAX_RANK];
    int64_t n;
    int32_t n_inputs, n_steps, n_outputs, n_operands, n_regs, n_fallback;
    finput *inputs;
    fstep *steps;
    foutput *outputs;
    int32_t *out_of_reg; /* per register: the output storing it, or -1 */
    bool *inplace;       /* per operand */
    bool *fill_all;      /* per input: a scalar that some reader needs spread over the tile */
    kiln__kreduce reduce;
    int32_t reduce_reg, reduce_init;
    kiln_dtype reduce_dtype;
    int64_t out_st[KILN_MAX_RANK];
    int64_t tile;
    size_t reg_bytes;
    kiln__native *native; /* the native tier's version, when it has one (native.h) */
};

static bool is_half(kiln_dtype d) { return d == KILN_F16 || d == KILN_BF16; }

/* The dtype a register holds. */
static kiln_dtype compute_dtype(kiln_dtype d) { return is_half(d) ? KILN_F32 : d; }

/* ---- building ----------------------------------------------------------------------------- */

typedef struct builder {
    kiln_ctx *cx;
    void *(*alloc)(void *, size_t, size_t);
    void *user;
} builder;

static void *balloc(builder *b, size_t size, size_t align) {
    void *p = b->alloc(b->user, size ? size : 1, align);
    if (p) memset(p, 0, size ? size : 1);
    return p;
}

/* Drops dimensions of size 1 and merges neighbours that every input walks as one (and that
 * a reduction treats alike), so tiles run along long inner runs. */
static void collapse(kiln__fused *f, const kiln__kernel *k, bool *reduced) {
    int32_t r = 0;
    bool red_in[KILN_MAX_RANK] = {0};
    for (int32_t i = 0; i < k->reduce_dims.count; i++)
        red_in[k->reduce_dims.v[i]] = true;
    int64_t dims[KILN_MAX_RANK];
    int32_t map[KILN_MAX_RANK];
    for (int32_t d = 0; d < k->shape.rank; d++) {
        if (k->shape.dims[d] == 1) continue;
        map[r] = d;
        dims[r] = k->shape.dims[d];
        reduced[r] = red_in[d];
        r++;
    }
    for (int32_t i = 0; i < f->n_inputs; i++) {
        int64_t st[KILN_MAX_RANK];
        for (int32_t d = 0; d < r; d++)
            st[d] = k->inputs[i].strides[map[d]];
        memcpy(f->inputs[i].st, st, sizeof st);
    }
    /* Merge d into d+1 from the inside out. */
    int32_t out = 0;
    int64_t nd[KILN_MAX_RANK];
    bool nred[KILN_MAX_RANK];
    for (int32_t d = 0; d < r; d++) {
        if (out > 0 && nred[out - 1] == reduced[d]) {
            bool ok = true;
            for (int32_t i = 0; i < f->n_inputs && ok; i++)
                ok = f->inputs[i].st[out - 1] == f->inputs[i].st[d] * dims[d];
            if (ok) {
                nd[out - 1] *= dims[d];
                for (int32_t i = 0; i < f->n_inputs; i++)
                    f->inputs[i].st[out - 1] = f->inputs[i].st[d];
                continue;
            }
        }
        nd[out] = dims[d];
        nred[out] = reduced[d];
        for (int32_t i = 0; i < f->n_inputs; i++)
            f->inputs[i].st[out] = f->inputs[i].st[d];
        out++;
    }
    if (out == 0) {
        nd[0] = 1;
        nred[0] = false;
        for (int32_t i = 0; i < f->n_inputs; i++)
            f->inputs[i].st[0] = 0;
        out = 1;
    }
    f->rank = out;
    memcpy(f->dims, nd, sizeof nd);
    memcpy(reduced, nred, sizeof nred);
    f->n = 1;
    for (int32_t d = 0; d < out; d++)
        f->n *= nd[d];
}

/* Elementwise kernels: the tile shrinks (to a power of two, at least 64) until the registers
 * that its instructions write would fit in L1_TILE_BYTES. Measured on 1e7 f32, one thread,
 * tiles of 1024 / 512 / 256: exp(-x*x)*sin(x)+0.5*x (7 instructions) 16.3 / 15.2 / 11.8 ms,
 * x*x*0.5-x (4) 5.5 / 2.9 / 3.7 ms, cos (1) 5.44 / 5.54 / 5.79 ms. The time lost with long
 * tiles is the first instruction waiting for its input and the last for its output memory
 * (a tile of 1024 f32 is a whole 4 KiB page, and the hardware's stream prefetch stops at
 * pages); kernels with more instructions per tile suffer more. Software prefetching of the
 * next tile, and sharing buffers between registers whose lives do not overlap, measured no
 * better. Reductions keep their tiles: their float sums are combined per tile. */
static int64_t l1_tile(int64_t tile, int32_t n_steps) {
    int64_t cap = L1_TILE_BYTES / 8 / (n_steps > 0 ? n_steps : 1), p = 64;
    while (p * 2 <= cap)
        p *= 2;
    return tile < p ? tile : p;
}

kiln__fused *kiln__fused_build(kiln_ctx *cx, const kiln__kernel *k,
                               void *(*alloc)(void *user, size_t size, size_t align), void *user) {
    builder b = {cx, alloc, user};
    kiln__fused *f = balloc(&b, sizeof *f, _Alignof(kiln__fused));
    if (!f) return NULL;
    f->n_inputs = k->n_inputs;
    f->n_steps = k->n_instrs;
    f->n_outputs = k->n_outputs;
    f->n_operands = k->n_operands;
    f->n_regs = k->n_inputs + k->n_instrs;
    f->inputs = balloc(&b, (size_t)k->n_inputs * sizeof *f->inputs, _Alignof(finput));
    f->steps = balloc(&b, (size_t)k->n_instrs * sizeof *f->steps, _Alignof(fstep));
    f->outputs = balloc(&b, (size_t)k->n_outputs * sizeof *f->outputs, _Alignof(foutput));
    f->inplace = balloc(&b, (size_t)k->n_operands * sizeof *f->inplace, 1);
    f->out_of_reg = balloc(&b, (size_t)f->n_regs * sizeof *f->out_of_reg, _Alignof(int32_t));
    f->fill_all = balloc(&b, (size_t)k->n_inputs * sizeof *f->fill_all, 1);
    if (!f->inputs || !f->steps || !f->outputs || !f->inplace || !f->out_of_reg || !f->fill_all)
        return NULL;
    for (int32_t r = 0; r < f->n_regs; r++)
        f->out_of_reg[r] = -1;
    for (int32_t i = 0; i < k->n_inputs; i++) {
        const kiln__kinput *in = &k->inputs[i];
        f->inputs[i] = (finput){.access = in->access,
                                .dtype = in->dtype,
                                .half = is_half(in->dtype),
                                .esize = kiln_dtype_size(in->dtype),
                                .operand = in->operand,
                                .offset = in->offset,
                                .bits = in->bits,
                                .is_constant = in->is_constant};
    }
    bool reduced[KILN_MAX_RANK] = {0};
    collapse(f, k, reduced);
    for (int32_t i = 0; i < k->n_inputs; i++) {
        finput *in = &f->inputs[i];
        if (in->access != KILN__KACCESS_STRIDED || in->half) continue;
        int64_t m = 1;
        bool linear = true;
        for (int32_t d = f->rank - 1; d >= 0 && linear; d--) {
            linear = f->dims[d] == 1 || in->st[d] == m;
            m *= f->dims[d];
        }
        in->linear = linear;
    }
    for (int32_t j = 0; j < k->n_instrs; j++) {
        const kiln__kinstr *ins = &k->instrs[j];
        fstep *s = &f->steps[j];
        *s = (fstep){
            .op = ins->op, .dst = k->n_inputs + j, .n_args = ins->n_args, .dtype = ins->dtype};
        for (int32_t a = 0; a < ins->n_args; a++) {
            s->args[a] = ins->args[a];
            int32_t r = ins->args[a];
            s->arg_dtype[a] =
                r < k->n_inputs ? k->inputs[r].dtype : k->instrs[r - k->n_inputs].dtype;
        }
        /* A primitive applies when every float operand has the result's compute dtype; abs
         * and negate of f16/bf16 act on the bits in the evaluator (NaN payloads). */
        kiln_dtype ct = compute_dtype(ins->dtype);
        bool args_ok = true;
        for (int32_t a = 0; a < ins->n_args; a++) {
            bool pred = ins->op == KILN_OP_SELECT && a == 0;
            if (pred ? s->arg_dtype[a] != KILN_BOOL : s->arg_dtype[a] != ins->dtype)
                args_ok = false;
        }
        bool half_bits =
            is_half(ins->dtype) && (ins->op == KILN_OP_ABS || ins->op == KILN_OP_NEGATE);
        s->prim = args_ok && !half_bits ? kiln__vec_prim(ins->op, ct, 0) : NULL;
        /* Scalar operands are read as one value, not spread, where the primitive has that
         * variant (some operand must be an array: it sets the tile). */
        unsigned scalars = 0;
        for (int32_t a = 0; a < ins->n_args; a++) {
            int32_t r = ins->args[a];
            if (r < k->n_inputs && k->inputs[r].access == KILN__KACCESS_SCALAR) scalars |= 1u << a;
        }
        kiln__vec_prim_fn p = s->prim && scalars && scalars != (1u << ins->n_args) - 1
                            ? kiln__vec_prim(ins->op, ct, scalars)
                            : NULL;
        if (p) {
            s->prim = p;
            s->scalar_args = (uint8_t)scalars;
        }
        s->round = s->prim && is_half(ins->dtype) && ins->op != KILN_OP_SELECT;
        if (!s->prim) {
            f->n_fallback++;
            kiln__attrs *at = balloc(&b, sizeof *at, _Alignof(kiln__attrs));
            if (!at) return NULL;
            at->fn = kiln__op_get_info(ins->op)->name;
            if (ins->op == KILN_OP_COMPARE) {
                at->u.compare.direction = ins->direction;
                at->u.compare.type = ins->compare_type;
            } else if (ins->op == KILN_OP_CONVERT) {
                at->u.convert_to = ins->dtype;
            }
            s->attrs = at;
        }
    }
    for (int32_t j = 0; j < f->n_steps; j++)
        for (int32_t a = 0; a < f->steps[j].n_args; a++)
            if (f->steps[j].args[a] < k->n_inputs && !(f->steps[j].scalar_args >> a & 1u))
                f->fill_all[f->steps[j].args[a]] = true;
    for (int32_t o = 0; o < k->n_outputs; o++) {
        int32_t r = k->outputs[o].reg;
        f->outputs[o] = (foutput){.reg = r,
                                  .dtype = r < k->n_inputs ? k->inputs[r].dtype
                                                           : k->instrs[r - k->n_inputs].dtype};
        if (r >= k->n_inputs && f->out_of_reg[r] < 0) f->out_of_reg[r] = o;
    }
    f->reduce = k->reduce;
    if (k->reduce != KILN__KREDUCE_NONE) {
        f->reduce_reg = k->reduce_reg;
        f->reduce_init = k->reduce_init;
        f->reduce_dtype = k->reduce_dtype;
        int64_t m = 1;
        for (int32_t d = f->rank - 1; d >= 0; d--) {
            f->out_st[d] = reduced[d] ? 0 : m;
            if (!reduced[d]) m *= f->dims[d];
        }
    }
    for (int32_t o = 0; o < k->n_operands; o++) {
        bool ok = k->reduce == KILN__KREDUCE_NONE && k->shape.rank > 0;
        bool read = false;
        for (int32_t i = 0; i < k->n_inputs; i++) {
            if (k->inputs[i].operand != o) continue;
            read = true;
            if (k->inputs[i].access != KILN__KACCESS_CONTIGUOUS) ok = false;
        }
        f->inplace[o] = ok && read;
    }
    int64_t per = (int64_t)(WORKSPACE_BYTES / (size_t)(f->n_regs + N_SCRATCH) / 8) - 16;
    int64_t tile = per > MAX_TILE ? MAX_TILE : per >= 64 ? per / 64 * 64 : per;
    /* A kernel whose elements fit one full tile stays one tile: there is no stream to keep
     * in L1, and a second tile would only run every instruction once more (the 100-element
     * EMLX step: 0.37 us as one tile, 0.45 us as two). */
    int64_t n_elems = 1;
    for (int32_t d = 0; d < k->shape.rank; d++)
        n_elems *= k->shape.dims[d];
    /* Registers that fit L1 pay when the kernel streams its data from memory; one whose
     * data stays in L2 keeps the longest tile instead, since each tile runs every
     * instruction's loop once more (a 4,094-element stencil step in a loop: 5.3 us with
     * tiles of 256, 4.5 us with tiles of 1,024). */
    int64_t data_bytes = 0; /* stops counting past the bound (no overflow) */
    for (int32_t i = 0; i < k->n_inputs + k->n_outputs && data_bytes <= CACHED_KERNEL_BYTES; i++) {
        bool scalar = i < k->n_inputs && k->inputs[i].access == KILN__KACCESS_SCALAR;
        kiln_dtype dt = i < k->n_inputs ? k->inputs[i].dtype : f->outputs[i - k->n_inputs].dtype;
        if (!scalar)
            data_bytes +=
                n_elems > CACHED_KERNEL_BYTES ? n_elems : n_elems * (int64_t)kiln_dtype_size(dt);
    }
    if (k->reduce == KILN__KREDUCE_NONE && n_elems > tile && data_bytes > CACHED_KERNEL_BYTES)
        tile = l1_tile(tile, f->n_steps);
    if (tile < 1) tile = 1;
    f->tile = tile;
    f->reg_bytes = (size_t)tile * 8;
    f->native = kiln__native_request(cx, k);
    return f;
}

bool kiln__fused_inplace_ok(const kiln__fused *f, int32_t operand) {
    return operand >= 0 && operand < f->n_operands && f->inplace[operand];
}

int64_t kiln__fused_tile(const kiln__fused *f) { return f->tile; }

int32_t kiln__fused_n_fallback(const kiln__fused *f) { return f->n_fallback; }

struct kiln__native *kiln__fused_native(const kiln__fused *f) {
    return f->native;
}

/* ---- loading and storing ------------------------------------------------------------------ */

/* In place: f32 element j overwrites 16-bit elements 2j and 2j+1, both read by then. */
static void widen_in_place(kiln_dtype dt, void *buf, int64_t n) {
    uint16_t *src = buf;
    float *dst = buf;
    for (int64_t i = n - 1; i >= 0; i--) {
        uint16_t h = src[i];
        dst[i] = dt == KILN_F16 ? kiln__f16_to_f32_inline(h) : kiln__bf16_to_f32_inline(h);
    }
}

/* Back to 16 bits for a value that came from 16 bits (a loaded or rounded register):
 * exact, NaN payloads (signalling ones too) included, as the evaluator's kernels that
 * work on the bits expect. */
static inline uint16_t narrow(kiln_dtype dt, float x) {
    if (x != x) {
        uint32_t b;
        memcpy(&b, &x, sizeof b);
        return dt == KILN_F16 ? (uint16_t)(((b >> 16) & 0x8000u) | 0x7c00u | ((b >> 13) & 0x3ffu))
                              : (uint16_t)(b >> 16);
    }
    return dt == KILN_F16 ? kiln_f32_to_f16(x) : kiln_f32_to_bf16(x);
}

static void narrow_all(kiln_dtype dt, const float *x, uint16_t *h, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        h[i] = narrow(dt, x[i]);
}

static void round_half(kiln_dtype dt, float *x, int64_t n) {
    if (dt == KILN_F16) {
        for (int64_t i = 0; i < n; i++)
            x[i] = kiln__f16_to_f32_inline(kiln_f32_to_f16(x[i]));
    } else {
        for (int64_t i = 0; i < n; i++)
            x[i] = kiln__bf16_to_f32_inline(kiln_f32_to_bf16(x[i]));
    }
}

/* The multi-index of flat element `flat`. */
static void index_of(const kiln__fused *f, int64_t flat, int64_t *idx) {
    for (int32_t d = f->rank - 1; d >= 0; d--) {
        idx[d] = flat % f->dims[d];
        flat /= f->dims[d];
    }
}

static void advance(const kiln__fused *f, int64_t *idx, int64_t run) {
    int32_t d = f->rank - 1;
    idx[d] += run;
    while (d > 0 && idx[d] >= f->dims[d]) {
        idx[d] = 0;
        idx[--d]++;
    }
}

/* Typed strided copies and fills, one per element size (copy_run_N, fill_value_N). */
#define ELEMENT_SIZE_BODY "backends/cpu/eval/strided_copy.inc"
#include "backends/cpu/eval/per_element_size.h"
#define ELEMENT_SIZE_BODY "backends/cpu/eval/fill_value.inc"
#include "backends/cpu/eval/per_element_size.h"

static void copy_strided(void *dst, const unsigned char *src, size_t esize, int64_t stride,
                         int64_t n) {
    if (stride == 1) {
        memcpy(dst, src, (size_t)n * esize);
        return;
    }
    switch (esize) {
    case 1: copy_run_1(dst, src, 0, n, stride); break;
    case 2: copy_run_2(dst, src, 0, n, stride); break;
    case 4: copy_run_4(dst, src, 0, n, stride); break;
    case 8: copy_run_8(dst, src, 0, n, stride); break;
    default: copy_run_16(dst, src, 0, n, stride); break;
    }
}

static void iota_fill(kiln_dtype dt, void *dst, int64_t v0, int64_t step, int64_t n) {
    switch (dt) {
#define FILL(T)                         \
    {                                   \
        T *d = dst;                     \
        for (int64_t j = 0; j < n; j++) \
            d[j] = (T)(v0 + j * step);  \
    }                                   \
    break;
    case KILN_BOOL: {
        uint8_t *d = dst;
        for (int64_t j = 0; j < n; j++)
            d[j] = v0 + j * step != 0;
        break;
    }
    case KILN_I8: FILL(int8_t)
    case KILN_I16: FILL(int16_t)
    case KILN_I32: FILL(int32_t)
    case KILN_I64: FILL(int64_t)
    case KILN_U8: FILL(uint8_t)
    case KILN_U16: FILL(uint16_t)
    case KILN_U32: FILL(uint32_t)
    case KILN_U64: FILL(uint64_t)
    case KILN_F64: FILL(double)
    default: FILL(float)
#undef FILL
    }
}

/* Gathers elements [start, start+len) of an affine or iota input into buf. */
static void gather(const kiln__fused *f, const finput *in, const unsigned char *base, int64_t start,
                   int64_t len, void *buf) {
    int64_t idx[KILN_MAX_RANK];
    index_of(f, start, idx);
    int32_t last = f->rank - 1;
    size_t esize =
        in->access == KILN__KACCESS_IOTA ? kiln_dtype_size(compute_dtype(in->dtype)) : in->esize;
    unsigned char *out = buf;
    int64_t done = 0;
    while (done < len) {
        int64_t run = f->dims[last] - idx[last];
        if (run > len - done) run = len - done;
        int64_t off = in->offset;
        for (int32_t d = 0; d < f->rank; d++)
            off += idx[d] * in->st[d];
        if (in->access == KILN__KACCESS_IOTA) {
            iota_fill(compute_dtype(in->dtype), out + (size_t)done * esize, off, in->st[last], run);
        } else {
            copy_strided(out + (size_t)done * esize, base + off * (int64_t)esize, esize,
                         in->st[last], run);
        }
        done += run;
        advance(f, idx, run);
    }
    if (in->half) {
        if (in->access == KILN__KACCESS_IOTA)
            round_half(in->dtype, buf, len);
        else
            widen_in_place(in->dtype, buf, len);
    }
}

/* ---- running ------------------------------------------------------------------------------ */

/* The tensors an evaluator kernel sees for one tile's step: three operands and the result,
 * 1-D, over registers. Built once per thread and only re-pointed per step (zeroing four
 * tensors per tile took ~40% of a compare kernel's time). */
typedef struct tile_tensors {
    kiln__storage sto[4];
    kiln_tensor t[4];
} tile_tensors;

static void tile_tensors_init(tile_tensors *tt) {
    memset(tt, 0, sizeof *tt);
    for (int i = 0; i < 4; i++) {
        tt->sto[i].device.type = KILN_DEVICE_TYPE_CPU;
        atomic_init(&tt->sto[i].refs, 1);
        atomic_init(&tt->t[i].refs, 1);
        tt->t[i].shape.rank = 1;
        tt->t[i].storage = &tt->sto[i];
    }
}

static kiln_tensor *tile_tensor(tile_tensors *tt, int i, kiln_dtype dt, void *data, int64_t n) {
    kiln_tensor *t = &tt->t[i];
    t->storage->data = data;
    t->storage->nbytes = (size_t)n * kiln_dtype_size(dt);
    t->dtype = dt;
    t->shape.dims[0] = n;
    t->numel = n;
    t->nbytes = t->storage->nbytes;
    return t;
}

/* An instruction without a primitive: the evaluator's kernel on the tile. f16/bf16
 * operands go back to their dtype (exactly: registers hold their values). */
static kiln_status eval_step(kiln_ctx *cx, const fstep *s, void *const *regs, void *const *scratch,
                             tile_tensors *tt, int64_t n) {
    kiln_tensor *ins[3], *outs[1];
    for (int32_t a = 0; a < s->n_args; a++) {
        void *data = regs[s->args[a]];
        if (is_half(s->arg_dtype[a])) {
            narrow_all(s->arg_dtype[a], data, scratch[a], n);
            data = scratch[a];
        }
        ins[a] = tile_tensor(tt, a, s->arg_dtype[a], data, n);
    }
    bool half = is_half(s->dtype);
    outs[0] = tile_tensor(tt, 3, s->dtype, half ? scratch[3] : regs[s->dst], n);
    kiln_status st = kiln__cpu_eval_op(cx, s->op, s->attrs, ins, s->n_args, outs, 1);
    if (st == KILN_OK && half) kiln__ew_load_half(s->dtype, scratch[3], regs[s->dst], n);
    return st;
}

typedef struct run_ctx {
    kiln_ctx *cx;
    const kiln__fused *f;
    const unsigned char *const *in_data; /* per operand */
    unsigned char *const *out_data;      /* per output */
    void *acc;                           /* the reduction's accumulators */
    const bool *direct;                  /* per output: computed straight into its memory */
    /* Rows mode (a reduction over the inner axis): items are groups of whole rows. */
    int64_t row_len, rows, rows_per_item;
    atomic_int status;
} run_ctx;

static void reduce_tile(const kiln__fused *f, void *acc, const void *vals, int64_t start,
                        int64_t len);

static void run_tiles(void *user, int64_t begin, int64_t end) {
    run_ctx *rc = user;
    const kiln__fused *f = rc->f;
    _Alignas(64) unsigned char ws[WORKSPACE_BYTES];
    void *regs[KILN__KERNEL_MAX_INPUTS + KILN__KERNEL_MAX_INSTRS + 1];
    void *bufs[KILN__KERNEL_MAX_INPUTS + KILN__KERNEL_MAX_INSTRS + 1];
    void *scratch[N_SCRATCH];
    tile_tensors tt;
    if (f->n_fallback > 0) tile_tensors_init(&tt);
    int64_t tile = f->tile;
    /* Registers only as long as the tile needs, 64 bytes apart from a multiple of 4 KiB so
     * that they do not all fall into the same cache sets. */
    size_t len_max = (size_t)(f->n < tile ? f->n : tile);
    size_t stride = (len_max * 8 + 63) / 64 * 64 + 64;
    for (int32_t r = 0; r < f->n_regs; r++)
        bufs[r] = regs[r] = ws + (size_t)r * stride;
    for (int32_t i = 0; i < N_SCRATCH; i++)
        scratch[i] = ws + (size_t)(f->n_regs + i) * stride;
    /* Scalars are the same for every tile. */
    for (int32_t i = 0; i < f->n_inputs; i++) {
        const finput *in = &f->inputs[i];
        if (in->access != KILN__KACCESS_SCALAR) continue;
        unsigned char one[16] = {0}; /* the largest element: complex<f64> */
        if (in->is_constant)
            memcpy(one, &in->bits, in->esize);
        else
            memcpy(one, rc->in_data[in->operand] + in->offset * (int64_t)in->esize, in->esize);
        if (in->half) {
            uint16_t h;
            memcpy(&h, one, 2);
            float v =
                in->dtype == KILN_F16 ? kiln__f16_to_f32_inline(h) : kiln__bf16_to_f32_inline(h);
            memcpy(one, &v, 4);
        }
        size_t cs = in->half ? 4 : in->esize;
        int64_t m = !f->fill_all[i] ? 1 : f->n < tile ? f->n : tile;
        switch (cs) {
        case 1: fill_value_1(bufs[i], one, m); break;
        case 2: fill_value_2(bufs[i], one, m); break;
        case 4: fill_value_4(bufs[i], one, m); break;
        case 8: fill_value_8(bufs[i], one, m); break;
        default: fill_value_16(bufs[i], one, m); break;
        }
    }
    kiln__native_part part;
    const bool native_part =
        f->native && f->reduce != KILN__KREDUCE_NONE &&
        kiln__native_part_begin(f->native, rc->in_data, f->n_operands, rc->out_data, f->n_outputs,
                                bufs[f->reduce_reg], &part);
    for (int64_t t = begin; t < end; t++) {
        /* Item t: one tile, or (rows mode) whole rows, cut into tiles that never cross a
         * row longer than a tile; either way the cuts do not depend on the thread count. */
        int64_t item_start, item_end, c = rc->row_len;
        if (c > 0) {
            int64_t r0 = t * rc->rows_per_item, r1 = r0 + rc->rows_per_item;
            if (r1 > rc->rows) r1 = rc->rows;
            item_start = r0 * c;
            item_end = r1 * c;
        } else {
            item_start = t * tile;
            item_end = f->n - item_start < tile ? f->n : item_start + tile;
        }
        for (int64_t start = item_start, len = 0; start < item_end; start += len) {
            len = item_end - start < tile ? item_end - start : tile;
            if (c > tile && len > (start / c + 1) * c - start) len = (start / c + 1) * c - start;
            /* a reduction's native part computes the tile's values (native.h); they are
             * folded below, as the engine's own */
            if (native_part) {
                kiln__native_part_run(&part, start, start + len);
                reduce_tile(f, rc->acc, bufs[f->reduce_reg], start, len);
                continue;
            }
            for (int32_t i = 0; i < f->n_inputs; i++) {
                const finput *in = &f->inputs[i];
                const unsigned char *base = in->operand >= 0 ? rc->in_data[in->operand] : NULL;
                switch (in->access) {
                case KILN__KACCESS_SCALAR: break;
                case KILN__KACCESS_CONTIGUOUS:
                    if (in->half)
                        kiln__ew_load_half(in->dtype,
                                           (const uint16_t *)(const void *)base + start, bufs[i],
                                           len);
                    else
                        regs[i] = (void *)(base + start * (int64_t)in->esize);
                    break;
                default:
                    if (in->linear)
                        regs[i] = (void *)(base + (in->offset + start) * (int64_t)in->esize);
                    else
                        gather(f, in, base, start, len, bufs[i]);
                }
            }
            for (int32_t j = 0; j < f->n_steps; j++) {
                const fstep *s = &f->steps[j];
                int32_t o = f->out_of_reg[s->dst];
                regs[s->dst] = o >= 0 && rc->direct[o]
                                   ? rc->out_data[o] + start * (int64_t)kiln_dtype_size(s->dtype)
                                   : bufs[s->dst];
                if (s->prim) {
                    s->prim(regs[s->dst], regs[s->args[0]], s->n_args > 1 ? regs[s->args[1]] : NULL,
                            s->n_args > 2 ? regs[s->args[2]] : NULL, len);
                    if (s->round) round_half(s->dtype, regs[s->dst], len);
                } else {
                    kiln_status st = eval_step(rc->cx, s, regs, scratch, &tt, len);
                    if (st != KILN_OK) {
                        atomic_store(&rc->status, (int)st);
                        return;
                    }
                }
            }
            for (int32_t o = 0; o < f->n_outputs; o++) {
                const foutput *out = &f->outputs[o];
                if (rc->direct[o] && f->out_of_reg[out->reg] == o) continue;
                size_t es = kiln_dtype_size(out->dtype);
                unsigned char *dst = rc->out_data[o] + (size_t)start * es;
                if (is_half(out->dtype)) {
                    narrow_all(out->dtype, regs[out->reg], (uint16_t *)(void *)dst, len);
                } else {
                    memcpy(dst, regs[out->reg], (size_t)len * es);
                }
            }
            if (f->reduce != KILN__KREDUCE_NONE)
                reduce_tile(f, rc->acc, regs[f->reduce_reg], start, len);
        }
    }
}

/* ---- reductions --------------------------------------------------------------------------- */

/* The reductions of each dtype (fused_reduce_type.inc): reduce_<dtype>_{identity,tile,init}.
 * On i1 add and maximum are or, multiply and minimum are and; integers wrap. */
#define T uint8_t
#define TFN(name) reduce_i1_##name
#define OP_ADD(a, b) (uint8_t)(a | b)
#define OP_MUL(a, b) (uint8_t)(a & b)
#define OP_MAX(a, b) (uint8_t)(a | b)
#define OP_MIN(a, b) (uint8_t)(a & b)
#define OP_AND(a, b) (uint8_t)(a & b)
#define OP_OR(a, b) (uint8_t)(a | b)
#define ZERO 0
#define ONE 1
#define LOW 0
#define HIGH 1
#define ONES 1
#include "backends/cpu/engine/fused_reduce_type.inc"

#define T int8_t
#define W uint32_t
#define TFN(name) reduce_i8_##name
#define LOW INT8_MIN
#define HIGH INT8_MAX
#include "backends/cpu/engine/fused_reduce_int.inc"

#define T int16_t
#define W uint32_t
#define TFN(name) reduce_i16_##name
#define LOW INT16_MIN
#define HIGH INT16_MAX
#include "backends/cpu/engine/fused_reduce_int.inc"

#define T int32_t
#define W uint32_t
#define TFN(name) reduce_i32_##name
#define LOW INT32_MIN
#define HIGH INT32_MAX
#include "backends/cpu/engine/fused_reduce_int.inc"

#define T int64_t
#define W uint64_t
#define TFN(name) reduce_i64_##name
#define LOW INT64_MIN
#define HIGH INT64_MAX
#include "backends/cpu/engine/fused_reduce_int.inc"

#define T uint8_t
#define W uint32_t
#define TFN(name) reduce_u8_##name
#define LOW 0
#define HIGH UINT8_MAX
#include "backends/cpu/engine/fused_reduce_int.inc"

#define T uint16_t
#define W uint32_t
#define TFN(name) reduce_u16_##name
#define LOW 0
#define HIGH UINT16_MAX
#include "backends/cpu/engine/fused_reduce_int.inc"

#define T uint32_t
#define W uint32_t
#define TFN(name) reduce_u32_##name
#define LOW 0
#define HIGH UINT32_MAX
#include "backends/cpu/engine/fused_reduce_int.inc"

#define T uint64_t
#define W uint64_t
#define TFN(name) reduce_u64_##name
#define LOW 0
#define HIGH UINT64_MAX
#include "backends/cpu/engine/fused_reduce_int.inc"

#define T float
#define TFN(name) reduce_f32_##name
#define OP_ADD(a, b) a + b
#define OP_MUL(a, b) a * b
#define OP_MAX(a, b) kiln__nanmaxf(a, b)
#define OP_MIN(a, b) kiln__nanminf(a, b)
#define OP_AND(a, b) a
#define OP_OR(a, b) a
#define ZERO -0.0f
#define ONE 1.0f
#define LOW -INFINITY
#define HIGH INFINITY
#define ONES 0.0f
#include "backends/cpu/engine/fused_reduce_type.inc"

#define T double
#define TFN(name) reduce_f64_##name
#define OP_ADD(a, b) a + b
#define OP_MUL(a, b) a * b
#define OP_MAX(a, b) kiln__nanmax(a, b)
#define OP_MIN(a, b) kiln__nanmin(a, b)
#define OP_AND(a, b) a
#define OP_OR(a, b) a
#define ZERO -0.0
#define ONE 1.0
#define LOW -INFINITY
#define HIGH INFINITY
#define ONES 0.0
#include "backends/cpu/engine/fused_reduce_type.inc"

/* Identity fill of the accumulators. */
static void reduce_identity(const kiln__fused *f, void *acc, int64_t n_acc) {
    switch (f->reduce_dtype) {
    case KILN_BOOL: reduce_i1_identity(f, acc, n_acc); break;
    case KILN_I8: reduce_i8_identity(f, acc, n_acc); break;
    case KILN_I16: reduce_i16_identity(f, acc, n_acc); break;
    case KILN_I32: reduce_i32_identity(f, acc, n_acc); break;
    case KILN_I64: reduce_i64_identity(f, acc, n_acc); break;
    case KILN_U8: reduce_u8_identity(f, acc, n_acc); break;
    case KILN_U16: reduce_u16_identity(f, acc, n_acc); break;
    case KILN_U32: reduce_u32_identity(f, acc, n_acc); break;
    case KILN_U64: reduce_u64_identity(f, acc, n_acc); break;
    case KILN_F32: reduce_f32_identity(f, acc, n_acc); break;
    case KILN_F64: reduce_f64_identity(f, acc, n_acc); break;
    default: break;
    }
}

/* acc[o(idx)] = combine(acc[o(idx)], vals[i]) along the tile (fused_reduce_kind.inc). */
static void reduce_tile(const kiln__fused *f, void *acc, const void *vals, int64_t start,
                        int64_t len) {
    switch (f->reduce_dtype) {
    case KILN_BOOL: reduce_i1_tile(f, acc, vals, start, len); break;
    case KILN_I8: reduce_i8_tile(f, acc, vals, start, len); break;
    case KILN_I16: reduce_i16_tile(f, acc, vals, start, len); break;
    case KILN_I32: reduce_i32_tile(f, acc, vals, start, len); break;
    case KILN_I64: reduce_i64_tile(f, acc, vals, start, len); break;
    case KILN_U8: reduce_u8_tile(f, acc, vals, start, len); break;
    case KILN_U16: reduce_u16_tile(f, acc, vals, start, len); break;
    case KILN_U32: reduce_u32_tile(f, acc, vals, start, len); break;
    case KILN_U64: reduce_u64_tile(f, acc, vals, start, len); break;
    case KILN_F32: reduce_f32_tile(f, acc, vals, start, len); break;
    case KILN_F64: reduce_f64_tile(f, acc, vals, start, len); break;
    default: break;
    }
}

/* acc[i] = combine(init, acc[i]): the init value is combined once. */
static void reduce_init(const kiln__fused *f, void *acc, int64_t n_acc, const void *init) {
    switch (f->reduce_dtype) {
    case KILN_BOOL: reduce_i1_init(f, acc, n_acc, init); break;
    case KILN_I8: reduce_i8_init(f, acc, n_acc, init); break;
    case KILN_I16: reduce_i16_init(f, acc, n_acc, init); break;
    case KILN_I32: reduce_i32_init(f, acc, n_acc, init); break;
    case KILN_I64: reduce_i64_init(f, acc, n_acc, init); break;
    case KILN_U8: reduce_u8_init(f, acc, n_acc, init); break;
    case KILN_U16: reduce_u16_init(f, acc, n_acc, init); break;
    case KILN_U32: reduce_u32_init(f, acc, n_acc, init); break;
    case KILN_U64: reduce_u64_init(f, acc, n_acc, init); break;
    case KILN_F32: reduce_f32_init(f, acc, n_acc, init); break;
    case KILN_F64: reduce_f64_init(f, acc, n_acc, init); break;
    default: break;
    }
}

kiln_status kiln__fused_run(kiln_ctx *cx, const kiln__fused *f, kiln_tensor *const *operands,
                            kiln_tensor **results) {
    const unsigned char *in_data[KILN__KERNEL_MAX_INPUTS + 2];
    unsigned char *out_data[KILN__KERNEL_MAX_INSTRS + 1];
    for (int32_t o = 0; o < f->n_operands; o++)
        in_data[o] = kiln__in(operands[o]);
    for (int32_t o = 0; o < f->n_outputs; o++)
        out_data[o] = kiln__out(results[o]);
    /* the native version, once it is there: the same bits (native.h) */
    if (f->native && f->reduce == KILN__KREDUCE_NONE &&
        kiln__native_run(f->native, in_data, f->n_operands, out_data, f->n_outputs, f->n))
        return KILN_OK;
    /* An output computed in place of its register must not be memory that a later
     * instruction of the same tile still reads: only outputs sharing no bytes with any
     * operand qualify (f16/bf16 outputs are rounded on the way out instead). */
    bool direct[KILN__KERNEL_MAX_INSTRS + 1];
    for (int32_t o = 0; o < f->n_outputs; o++) {
        const kiln_tensor *t = results[o];
        uintptr_t b0 = (uintptr_t)out_data[o], b1 = b0 + t->nbytes;
        bool ok = !is_half(f->outputs[o].dtype) && out_data[o];
        for (int32_t i = 0; i < f->n_operands && ok; i++) {
            uintptr_t a0 = (uintptr_t)in_data[i], a1 = a0 + operands[i]->nbytes;
            if (a0 < b1 && b0 < a1) ok = false;
        }
        for (int32_t p = 0; p < f->n_outputs && ok; p++) {
            uintptr_t a0 = (uintptr_t)out_data[p], a1 = a0 + results[p]->nbytes;
            if (p != o && a0 < b1 && b0 < a1) ok = false;
        }
        direct[o] = ok;
    }
    run_ctx rc = {.cx = cx, .f = f, .in_data = in_data, .out_data = out_data, .direct = direct};
    atomic_init(&rc.status, KILN_OK);
    int64_t n_tiles = f->n == 0 ? 0 : (f->n + f->tile - 1) / f->tile;
    if (f->reduce != KILN__KREDUCE_NONE) {
        kiln_tensor *r = results[f->n_outputs];
        int64_t n_acc = kiln_tensor_numel(r);
        rc.acc = kiln__out(r);
        if (n_acc == 0) return KILN_OK;
        reduce_identity(f, rc.acc, n_acc);
        if (f->rank == 2 && f->out_st[0] == 1 && f->out_st[1] == 0 && f->n > 0) {
            /* Every row is reduced on its own, by one thread: rows can be split. */
            rc.row_len = f->dims[1];
            rc.rows = f->dims[0];
            rc.rows_per_item = rc.row_len <= f->tile ? f->tile / rc.row_len : 1;
            int64_t items = (rc.rows + rc.rows_per_item - 1) / rc.rows_per_item;
            int64_t per = rc.rows_per_item * rc.row_len;
            kiln__parallel_for(items, (PARALLEL_MIN_ELEMS + per - 1) / per, run_tiles, &rc);
        } else if (n_tiles) {
            run_tiles(&rc, 0, n_tiles);
        }
        if (atomic_load(&rc.status) == KILN_OK)
            reduce_init(f, rc.acc, n_acc, in_data[f->reduce_init]);
    } else if (n_tiles) {
        int64_t grain = (PARALLEL_MIN_ELEMS + f->tile - 1) / f->tile;
        kiln__parallel_for(n_tiles, grain, run_tiles, &rc);
    }
    kiln_status st = (kiln_status)atomic_load(&rc.status);
    if (st != KILN_OK && kiln_ctx_status(cx) == KILN_OK)
        kiln_ctx_set_error(cx, st, "fused kernel failed (%s)", kiln_status_name(st));
    return st;
}
