/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU backend's executables: what its compile builds (exe_build.c, exe_plan.c) and its
 * execute runs (exe_run.c); kiln_compile and kiln_exe_call (src/runtime/) reach them only
 * through the backend interface.
 *
 * Compiling copies the module into blocks of its own (kiln__xblock): every value of a block
 * is a slot; an operand names a slot of its block or of an enclosing one (regions may use
 * the values of the blocks around them); constants, and small ops whose operands are all
 * constants (folded at compile time), become tensors the executable owns. Regions that are
 * not builtins are interpreted, op by op, over an environment chain of slot arrays.
 *
 * In the entry block, groups of ops that fusion (src/passes/fusion.c) put together are one
 * op each: a fused kernel run by the tiled engine (fused.h) at the
 * position of its last module op; the views and values used only inside a kernel are never
 * stored (KILN__SLOT_UNUSED).
 *
 * Every block that runs as part of the program (the entry block, and the bodies of the
 * while, if, case and call ops in such a block) runs over a static buffer plan
 * (kiln__xplan): every intermediate value has an offset in the call's one arena (values
 * whose lifetimes do not overlap share space; an elementwise op may write over an operand
 * that dies there), and a block's results are written straight into the tensors its
 * caller hands it (the entry's result tensors or donated buffers, a loop's carry buffers,
 * the outputs of an if) or copied there at its end. A block's regions lay out their
 * values above the block's own, so nothing a call makes is allocated while it runs. Loops
 * keep their carries in buffers of their own (kiln__xloop): updated in place where the
 * body may write a carry over itself, else in two buffers taking turns, or not at all
 * when the body passes it through. Regions that evaluator kernels call back (a reduce's or
 * sort's custom body) are interpreted instead, op by op, with fresh tensors.
 * The executable is immutable after compiling; each call takes a call
 * state (the arena, tensor headers over it, the slot arrays) from a pool, or makes one. */
#ifndef KILN_BACKENDS_CPU_EXE_H
#define KILN_BACKENDS_CPU_EXE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backends/cpu/eval/eval_linalg.h"
#include "backends/cpu/engine/fused.h"
#include "core/tensor_internal.h"
#include "kiln/jit.h"
#include "ops/attrs.h"
#include "ops/infer.h"

/* The bytes of a value of type t (0 when they overflow, which verification rules out). */
static inline size_t kiln__type_bytes(const kiln__type *t) {
    size_t n = 0;
    kiln_shape_nbytes(&t->shape, t->dtype, &n);
    return n;
}

/* A value: `depth` blocks out from the block using it (0: its own), slot `slot` there. */
typedef struct kiln__xref {
    int32_t depth;
    int32_t slot;
} kiln__xref;

typedef struct kiln__xblock kiln__xblock;
typedef struct kiln__xplan kiln__xplan;
typedef struct kiln__xloop kiln__xloop;

typedef struct kiln__xop {
    kiln_op kind;
    /* A CONTROL op (while, if, case, call): in a planned block it runs its regions into
     * its result slots; in an interpreted one the evaluator makes its result tensors. */
    bool control;
    int32_t n_in, n_out, n_regions;
    const kiln__xref *in;
    const int32_t *out;           /* result slots, in the op's own block */
    kiln__xblock *const *regions; /* per region: the block to interpret, or NULL for a builtin */
    const kiln__attrs *attrs;     /* as recorded; builtin regions in attrs->region[0..1] */
    /* A fused kernel (kind is its last op's): in are its operands, out its outputs and
     * then its reduction's result. NULL for a single op. */
    const kiln__fused *kernel;
    /* Its description, for printing (the executable's copy). Kernels that are the same
     * code (kiln__kernel_same) share both: the description's values are those of the
     * first; `in` and `out` name this one's, and kernel_id is its number in its block. */
    const kiln__kernel *desc;
    int32_t kernel_id;
    /* A convolution with a fused epilogue (kiln__conv_epilogue): in[2], when n_in is 3, is
     * the bias; then the activation (KILN__ACT_*). Runs as kiln__cpu_conv_bias_act. */
    bool conv_epilogue;
    int32_t activation;
    const kiln__xloop *loop; /* a planned while: where its carries live */
    /* A concatenate whose operands their ops wrote into its result already (the plan made
     * each one a part of it): nothing to run. */
    bool in_place;
} kiln__xop;

struct kiln__xblock {
    int32_t n_args; /* slots 0..n_args-1 */
    int32_t n_slots, n_ops, n_results;
    kiln__xop *ops;
    kiln__xref *results;
    /* per slot: the executable's copy of its type, one per distinct type */
    const kiln__type **types;
    kiln_tensor **consts; /* per slot: a constant's value (owned by the executable), or NULL */
    int32_t max_in, max_out;
    const kiln__xplan *plan; /* NULL: interpreted (a region an evaluator kernel calls) */
};

/* What a slot of a planned block is at run time. */
enum {
    KILN__SLOT_ARG,    /* an argument: the caller's, a loop's carry, a call's operand */
    KILN__SLOT_CONST,  /* a constant of the executable */
    KILN__SLOT_ARENA,  /* an intermediate in the call's arena */
    KILN__SLOT_OUTPUT, /* written straight into a result tensor the block's caller hands it */
    KILN__SLOT_UNUSED, /* never made: a view, or a value used only inside its kernel */
    /* A part of an OUTPUT slot (an operand of a concatenate written in place): its tensor
     * header is pointed into that result's buffer when the block starts. */
    KILN__SLOT_PART,
};

/* How a block makes result r. */
typedef enum kiln__result_kind {
    /* An argument returned unchanged: the entry's results are views of it; a loop body's
     * carry that it passes through (result r is argument r) stays where it is. */
    KILN__RESULT_ARG,
    KILN__RESULT_CONST,  /* the entry's constant result: a view of it */
    KILN__RESULT_DIRECT, /* the op writes into the result tensor (which may be a donated buffer) */
    KILN__RESULT_COPY,   /* copied at the end into the result tensor (or donated buffer) */
} kiln__result_kind;

typedef struct kiln__result_plan {
    kiln__result_kind kind;
    int32_t depth, slot; /* the value (depth > 0: of a block around, copied) */
    /* The entry: the donated argument whose buffer it reuses, or -1. A loop body: its
     * argument r when the result may be written over it (the carry is updated in place). */
    int32_t alias;
} kiln__result_plan;

/* A planned block's buffers. Offsets are from the start of the call's arena; the block's
 * own values lie in [base, base + peak), its regions' above. */
struct kiln__xplan {
    uint8_t *slot_kind;   /* per slot */
    size_t *slot_offset;  /* arena slots: the byte offset */
    int32_t *slot_tensor; /* arena slots: the index of its tensor header in a call state */
    kiln__result_plan *results;
    size_t base, peak, end; /* end: past everything it and its regions use */
    int32_t n_arena;        /* arena slots */
    /* Operands of concatenates written straight into the result (kiln__xop.in_place): per
     * slot the result it is part of (-1: none), and its byte offset there. */
    int32_t *part_of;
    size_t *part_offset;
    int32_t *parts; /* the PART slots, whose headers a run points into their result */
    int32_t n_parts;
    int32_t vals_at; /* its slot array, then its operand and result scratch, among the
                        call state's pointers */
};

/* How a planned while keeps carry i. */
enum {
    KILN__CARRY_PASS,    /* the body passes it through: the init, read in place */
    KILN__CARRY_INPLACE, /* one buffer, the init copied in, the body writing over it */
    KILN__CARRY_SWAP,    /* two buffers: the body reads one and writes the other */
};

struct kiln__xloop {
    uint8_t *carry;      /* per carry: KILN__CARRY_* */
    int32_t *buffer;     /* per carry: its first buffer's tensor header (SWAP: and the next) */
    int32_t cond_buffer; /* the condition's result */
    int32_t cur_at;      /* the carries now, then the body's results, among the pointers */
};

/* Memory that lives as long as the executable. */
typedef struct kiln__xmem_block kiln__xmem_block;

typedef struct kiln__call_state kiln__call_state;

/* Result buffers kept for reuse (exec.c): a result tensor the caller releases gives its
 * buffer back here, and a later call of the same executable takes it instead of
 * allocating (and page-faulting) a fresh one. Outlives the executable while pooled
 * buffers are still in use. */
typedef struct kiln__result_pool kiln__result_pool;

typedef struct kiln__cpu_exe {
    kiln_allocator allocator; /* of the compiling ctx: the executable's memory, call states */
    kiln__xmem_block *mem;
    kiln_device device;
    const char *name; /* the module's */
    int32_t n_args, n_results;
    int32_t *aliases; /* per result: the donated argument whose buffer it may take, or -1 */
    int32_t *preserved;

    kiln__xblock *entry;
    kiln__result_plan *results; /* the entry's (entry->plan->results) */
    /* Every planned block, for making call states, and the tensor headers over the arena:
     * each one's type and offset. */
    kiln__xblock **blocks;
    int32_t n_blocks;
    const kiln__type **header_type;
    size_t *header_offset;
    int32_t n_headers;
    int32_t n_buffers; /* values and carries placed in the arena (some share a header) */
    int32_t n_ptrs;    /* the call state's tensor pointers (slot arrays, scratch, carries) */
    size_t arena_bytes;
    int32_t n_ops;
    int32_t n_kernels, n_fused_ops; /* kernels among the ops, and the module ops they replace */
    int32_t n_kernel_codes;         /* distinct kernels among them (the rest share one) */
    int32_t n_views;                /* view ops that kernels read in place */
    int32_t n_epilogues;            /* convolutions with a fused epilogue */
    /* Layout assignment (passes.h): convolutions computing channels last, and the
     * transposes left at the ends of their chains. */
    int32_t n_layout_convs, n_layout_transposes;

    kiln_tensor **owned; /* constants and folded values, released with the executable */
    int32_t n_owned, cap_owned;
    struct kiln__native **natives; /* the kernels' native versions, released with it */
    int32_t n_natives, cap_natives;
    kiln_native_mode native_mode; /* the ctx's when it was compiled (native.h) */

    /* Call states: one allocation of state_bytes, laid out at these offsets. */
    size_t state_bytes, off_arena, off_tensors, off_ptrs, off_outs;
    pthread_mutex_t lock; /* guards pool */
    bool lock_made;
    kiln__call_state *pool;
    kiln__result_pool *result_pool; /* NULL: results are always fresh buffers */
} kiln__cpu_exe;

/* A call state (exec.c makes and pools them). */
struct kiln__call_state {
    kiln__call_state *next; /* in the pool */
    kiln__storage storage;  /* the arena, never freed through tensors */
};

/* Frees the pooled call states and closes the result pool (exe release). */
void kiln__exe_free_states(kiln__cpu_exe *exe);

/* Makes exe's result pool, holding at most twice the bytes of one call's fresh results
 * (so that a caller keeping one call's results while making the next still reuses).
 * Without one (no fresh results, or out of memory) results are fresh buffers. */
void kiln__exe_make_result_pool(kiln__cpu_exe *exe);

/* Makes the first call state ahead of the first call (kiln_compile), so that the first
 * call costs about what later ones do. Errors: RESOURCE_EXHAUSTED. */
kiln_status kiln__exe_prime(kiln_ctx *cx, kiln__cpu_exe *exe);

/* Can an elementwise op write its result over operand `i` (same shape and element size,
 * and a kernel that reads each element before writing it)? */
bool kiln__xop_inplace_ok(const kiln__xblock *b, const kiln__xop *op, int32_t i);

/* Memory that lives as long as exe (exe_mem.c), zero-filled or not: NULL with
 * RESOURCE_EXHAUSTED recorded. kiln__cpu_exe_free_mem frees all of it. */
void *kiln__cpu_exe_alloc(kiln_ctx *cx, kiln__cpu_exe *exe, size_t size, size_t align);
void *kiln__cpu_exe_alloc_raw(kiln_ctx *cx, kiln__cpu_exe *exe, size_t size, size_t align);
void kiln__cpu_exe_free_mem(kiln__cpu_exe *exe);

/* Plans the buffers of the entry block and of every block it runs (exe_plan.c): slot kinds,
 * arena offsets, how each result is made, loops' carries, the call state's layout. Errors:
 * RESOURCE_EXHAUSTED, FAILED_PRECONDITION (an assert_nonallocating result that reuses nothing). */
kiln_status kiln__cpu_plan(kiln_ctx *cx, kiln__cpu_exe *exe, bool assert_nonallocating);

/* The backend interface's executable entries (kiln__cpu_backend()). */
kiln_status kiln__cpu_compile(kiln_ctx *cx, const kiln__compile_request *req,
                              kiln__executable **out_exe);
kiln_status kiln__cpu_execute(kiln_ctx *cx, const kiln__executable *exe,
                              const kiln__execute_args *args, kiln__event **out_event);
void kiln__cpu_release(kiln__executable *exe);
void kiln__cpu_info(const kiln__executable *exe, kiln__executable_info *out);
void kiln__cpu_native_status(const kiln__executable *exe, int32_t *n_native, int32_t *n_ready);
void kiln__cpu_print(kiln__strbuf *sb, const kiln__executable *exe);

#endif
