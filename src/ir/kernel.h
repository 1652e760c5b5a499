/* SPDX-License-Identifier: Apache-2.0 */
/* Fused kernels: the backend-neutral description of a loop nest that the fusion pass
 * (src/passes/fusion.c) makes out of a group of ops, and that a backend executes (the CPU
 * tiled engine, src/backends/cpu/fused_*.c) or generates code from (later: C, CUDA).
 *
 * A kernel iterates over one shape (its iteration space, row-major). It reads inputs
 * through access patterns, runs a straight-line program of elementwise instructions on
 * each element, writes some of the instruction results as outputs of the iteration shape
 * (multi-output fusion), and may end in one reduction of one register over some axes
 * (input fusion), whose result has the iteration shape without those axes.
 *
 * Registers: 0..n_inputs-1 are the inputs, n_inputs + j is the result of instrs[j].
 * Every register has one dtype; instructions follow StableHLO semantics exactly (the
 * evaluator's: src/backends/cpu/eval_*.c). */
#ifndef KILN_IR_KERNEL_H
#define KILN_IR_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "ir/ir.h"
#include "ops/op_cost.h"

/* Size limits of one kernel (the fusion pass respects them). */
#define KILN__KERNEL_MAX_INSTRS 48
#define KILN__KERNEL_MAX_INPUTS 24
#define KILN__KERNEL_MAX_OUTPUTS 8

/* How an input's element for iteration index idx[] is found. Every pattern but IOTA is
 * affine: element `offset + sum(idx[d] * strides[d])` of the operand buffer (strides in
 * elements, possibly 0 or negative). The kinds say which special case the map is. */
typedef enum kiln__kaccess {
    KILN__KACCESS_CONTIGUOUS, /* offset 0, row-major strides of the iteration shape */
    KILN__KACCESS_BROADCAST,  /* some strides 0 (a broadcast_in_dim) */
    KILN__KACCESS_STRIDED,    /* any other affine map: transposed, sliced, reversed */
    KILN__KACCESS_SCALAR,     /* every stride 0: one element, read once */
    KILN__KACCESS_IOTA,       /* no buffer: the value offset + sum(idx[d] * strides[d]) */
} kiln__kaccess;

typedef struct kiln__kinput {
    kiln__kaccess access;
    kiln_dtype dtype;
    int32_t operand; /* index into the kernel's operands; -1 for IOTA */
    int64_t offset;  /* elements */
    int64_t strides[KILN_MAX_RANK];
    bool is_constant; /* SCALAR of a constant op: `bits` holds its value */
    uint64_t bits;    /* the element's bytes, little-endian, zero-extended */
} kiln__kinput;

typedef struct kiln__kinstr {
    kiln_op op;          /* an ELEMENTWISE op of ops.def */
    kiln_dtype dtype;    /* result dtype */
    kiln_dtype in_dtype; /* dtype of args[0] (compare's operands, convert's source) */
    int32_t args[3];     /* registers */
    int32_t n_args;      /* 1, 2 or 3 */
    /* The only attributes of elementwise ops: compare's direction and type, convert's
     * target (also in dtype). */
    kiln_compare_direction direction;
    kiln_compare_type compare_type;
    const kiln__ir_op *src; /* the op it came from */
} kiln__kinstr;

/* A result of the kernel: register `reg` stored with the iteration shape. */
typedef struct kiln__koutput {
    int32_t reg;
    const kiln__value *value;
} kiln__koutput;

/* The combiner of a fused reduction (a reduce op with a builtin region). */
typedef enum kiln__kreduce {
    KILN__KREDUCE_NONE = 0,
    KILN__KREDUCE_ADD,
    KILN__KREDUCE_MUL,
    KILN__KREDUCE_MAX,
    KILN__KREDUCE_MIN,
    KILN__KREDUCE_AND,
    KILN__KREDUCE_OR,
} kiln__kreduce;

typedef struct kiln__kernel {
    int32_t id;
    kiln_shape shape; /* the iteration space */
    /* The buffers the kernel reads (distinct values of the module); inputs index them. */
    const kiln__value **operands;
    int32_t n_operands;
    kiln__kinput *inputs;
    int32_t n_inputs;
    kiln__kinstr *instrs;
    int32_t n_instrs;
    kiln__koutput *outputs;
    int32_t n_outputs;
    /* The reduction, if any: register reduce_reg over reduce_dims (of the iteration
     * shape), combined once with the rank-0 operand reduce_init; the result is
     * reduce_value, of dtype reduce_dtype. */
    kiln__kreduce reduce;
    int32_t reduce_reg;
    kiln_dims reduce_dims;
    int32_t reduce_init; /* operand index */
    kiln_dtype reduce_dtype;
    const kiln__value *reduce_value;
    const kiln__ir_op *reduce_op;
    /* The module ops the kernel replaces, in block order; the last one is where it runs. */
    const kiln__ir_op **ops;
    int32_t n_ops;
} kiln__kernel;

/* The cost of one run (ops/op_cost.h), for printing and heuristics: one flop per
 * arithmetic instruction and element and per reduced element; a broadcast input reads its
 * source. Thread-safe. */
kiln__cost kiln__kernel_cost(const kiln__kernel *k);

/* The name of an access pattern ("contiguous", "broadcast", ...). */
const char *kiln__kaccess_name(kiln__kaccess a);
/* The name of a reduction combiner ("add", ...), "" for NONE. */
const char *kiln__kreduce_name(kiln__kreduce r);

/* Kernels that compute the same thing: the same iteration shape, instructions, access
 * patterns (offsets, strides, constants' bits), outputs and reduction, over operands of the
 * same types and ending in the same ops. Two such kernels run as one code on different
 * buffers (a backend builds it once: an unrolled loop or a repeated layer makes the same
 * kernel thousands of times). Which values the operands are does not matter. The hash is
 * equal for kernels that are the same. Thread-safe. */
uint64_t kiln__kernel_hash(const kiln__kernel *k);
bool kiln__kernel_same(const kiln__kernel *a, const kiln__kernel *b);

/* The numbers a kernel's values print with, when they are not the values' own ids (a
 * kernel description shared by several kernels of an executable): per operand its
 * number and how many blocks out it lives (NULL: 0), per output and then the reduction's
 * result its number, and the kernel's own number. */
typedef struct kiln__kernel_names {
    int32_t id;
    const int32_t *operands, *operand_depths, *outputs;
} kiln__kernel_names;

/* Appends the kernel as text, one line per input, instruction and output:
 *     kernel #0 f32[10,10] (2 ops)
 *       in0 = contiguous %arg0 f32
 *       r2 = multiply in0, in1 : f32
 *       out r2 -> %3
 * Values print as %<id> with the ids the caller set on the module's values, or with
 * `names` when not NULL (an operand of an enclosing block as %<id>^<depth>). */
void kiln__kernel_print(kiln__strbuf *sb, const kiln__kernel *k, const char *indent,
                        const kiln__kernel_names *names);

#endif
