/* SPDX-License-Identifier: Apache-2.0 */
/* The IR: a module of functions; a function is a block; a block has arguments, a list of
 * ops and the values it returns; an op has operands, results, attributes and regions
 * (blocks of its own). Values are SSA: defined once, by an op result or a block argument.
 * Everything lives in the module's arena and goes away with the module. Op semantics and
 * verifier rules are the op table's (src/ops). */
#ifndef KILN_IR_IR_H
#define KILN_IR_IR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "kiln/jit.h"
#include "ops/attrs.h"
#include "ops/attrs_set.h"
#include "ops/infer.h"
#include "ops/op.h"
#include "ops/type_set.h"

typedef struct kiln__value kiln__value;
typedef struct kiln__block kiln__block;
typedef struct kiln__ir_op kiln__ir_op;
typedef struct kiln__func kiln__func;

struct kiln__value {
    /* Interned in the module (kiln__module_type): equal types are the same pointer, so a
     * value is small and types compare by address. Set with kiln__value_set_type. */
    const kiln__type *type;
    kiln__ir_op *def;   /* the op whose result this is; NULL for a block argument */
    kiln__block *block; /* the block whose argument this is; NULL for an op result */
    int32_t index;      /* result or argument index */
    int32_t uses;       /* operand and return uses, kept by the builder and by dce */
    int32_t id;         /* scratch number for printers and executors */
};

struct kiln__block {
    kiln__value **args;
    int32_t n_args;
    kiln__ir_op *first, *last;
    int32_t n_ops; /* in the list first..last (kept by kiln__block_append and the removals) */
    kiln__value **results; /* what the block returns (its terminator's operands) */
    int32_t n_results;
    kiln__ir_op *parent; /* the op this block is a region of; NULL for a function body */
    /* A call's region: the name of the function it is a copy of (parsed, in the module's
     * arena), printed as the callee's name; NULL when it has none. */
    const char *name;
};

struct kiln__ir_op {
    kiln_op kind;
    /* attrs is the module's interned copy (ops without regions, calls aside), which other
     * ops may share: kiln__op_attrs_mut gives the op a copy of its own to change. */
    bool attrs_shared;
    /* The part of a kiln__attrs its kind uses (kiln__attrs_size), in the module's arena:
     * read only the member of the op's kind, copy with kiln__attrs_copy, change it through
     * kiln__op_attrs_mut and the kind with kiln__op_set_kind. Region pointers are kept
     * only for builtin regions (static, recognised by backends for fast paths); every
     * region is also traced into `regions`. attrs->fn is a static string.
     * attrs->u.constant is retained by the module. */
    const kiln__attrs *attrs;
    kiln__value **operands;
    int32_t n_operands;
    kiln__value **results;
    int32_t n_results;
    kiln__block **regions;
    int32_t n_regions;
    kiln__ir_op *prev, *next;
    kiln__block *block;
};

struct kiln__func {
    const char *name;
    bool is_public;
    kiln__block *body;
    const char **arg_names; /* leaf paths ("params.w1"), or NULL entries */
    /* Per result: its name (a leaf path, or what JAX's jax.result_info says), or NULL (the
     * array itself may be NULL). */
    const char **result_names;
    /* Per argument and result: the sharding annotations as written (`mhlo.sharding = "..."`,
     * `sdy.sharding = #sdy.sharding<...>`, joined by ", "), kept to print back, or NULL
     * entries (the arrays themselves may be NULL). */
    const char **arg_shardings, **result_shardings;
};

/* A Shardy mesh (sdy.mesh @name = <["x"=4, "y"=2]>): named axes, major to minor; device d
 * of the mesh has the coordinates of d in row-major order. */
#define KILN__MESH_MAX_AXES 8
typedef struct kiln__mesh {
    const char *name;
    int32_t n_axes;
    const char *axis_names[KILN__MESH_MAX_AXES];
    int64_t axis_sizes[KILN__MESH_MAX_AXES];
} kiln__mesh;

/* The calling convention kiln_lower records (readable through kiln_module_info). */
struct kiln_module {
    atomic_int refs;
    kiln_ctx *cx;
    kiln__arena arena;
    /* Op headers (kiln__ir_op) and SSA values alone, in order of creation: a walk over a
     * block's ops then reads consecutive memory (an op, its results, the next op) instead
     * of skipping over each op's attributes and operand lists, which is what keeps passes
     * over 10^5 ops fast. */
    kiln__arena node_arena;
    const char *name;
    kiln__func **funcs; /* funcs[0] is the entry */
    int32_t n_funcs, cap_funcs;
    kiln_tensor **constants; /* retained concrete tensors of constant ops */
    int32_t n_constants, cap_constants;
    int32_t *preserved; /* per result: the argument it returns unchanged, or -1 */
    bool *donated;      /* per argument */
    int32_t *aliases;   /* per result: the donated argument whose buffer it may reuse, or -1 */
    /* The check dialect's records (kiln/parse.h, allow_checks), in the arena; their
     * constants are among `constants`. */
    struct kiln_check *checks;
    int32_t n_checks;
    /* The module's distinct value types (kiln__module_type); the copies in the arena. */
    kiln__type_set types;
    /* The distinct attributes of its ops that cannot change (kiln__block_append); the
     * copies in the arena. */
    kiln__attrs_set attrs;
    /* Notes for people about how the program was made ("kiln_vmap: stablehlo.gather ...
     * runs in a loop over the batch"), distinct, in the arena: carried by the transforms
     * and inlining into the modules they make, and printed by kiln_exe_print. */
    const char **notes;
    int32_t n_notes, cap_notes;
    /* The grid the module was written for (mhlo.num_replicas / mhlo.num_partitions; 0 when
     * it does not say) and its Shardy meshes, in the arena. */
    int32_t num_replicas, num_partitions;
    kiln__mesh *meshes;
    int32_t n_meshes;
    /* kiln_module_info_get's signature arrays, made on the first call (in the arena). */
    kiln_arg_spec *info_args, *info_results;
    int32_t info_n_args, info_n_results;
};

kiln_module *kiln__module_new(kiln_ctx *cx, const char *name);
kiln__func *kiln__module_add_func(kiln_module *m, const char *name, bool is_public);
kiln__block *kiln__block_new(kiln_module *m, kiln__ir_op *parent);
kiln__value *kiln__block_add_arg(kiln_module *m, kiln__block *block, kiln__type type);
/* The module's copy of type t (dimensions past the rank ignored): the same pointer for
 * equal types. NULL, with RESOURCE_EXHAUSTED in the module's ctx, when out of memory. */
const kiln__type *kiln__module_type(kiln_module *m, const kiln__type *t);
/* Gives v the type t (interned); false when out of memory (v unchanged). */
bool kiln__value_set_type(kiln_module *m, kiln__value *v, const kiln__type *t);
/* Appends an op; result values get `result_types`. NULL on allocation failure. */
kiln__ir_op *kiln__block_append(kiln_module *m, kiln__block *block, kiln_op kind,
                                const kiln__attrs *attrs, kiln__value *const *operands,
                                int32_t n_operands, const kiln__type *result_types,
                                int32_t n_results, int32_t n_regions);
/* The op's attributes to change in place: its own copy (made in the module's arena when
 * they were shared). NULL, with RESOURCE_EXHAUSTED in the module's ctx and the op
 * unchanged, when out of memory. */
kiln__attrs *kiln__op_attrs_mut(kiln_module *m, kiln__ir_op *op);
/* Makes op an op of `kind` (a rewrite in place): its attributes keep their common fields
 * and get a zeroed member of the new kind, in a copy of the op's own (made in the module's
 * arena when they were shared or the new kind's member is larger). Returns them, to fill
 * in; NULL, with RESOURCE_EXHAUSTED in the module's ctx and op unchanged, when that
 * allocation fails. */
kiln__attrs *kiln__op_set_kind(kiln_module *m, kiln__ir_op *op, kiln_op kind);
/* The block a value belongs to: its op's block, or the block it is an argument of. */
static inline const kiln__block *kiln__value_home(const kiln__value *v) {
    return v->def ? v->def->block : v->block;
}
/* Is v defined in `root` or in a block nested in one of root's ops (a region, any depth)? */
bool kiln__value_defined_in(const kiln__value *v, const kiln__block *root);
/* Takes op out of its block's list (its uses are the caller's to drop). */
void kiln__op_unlink(kiln__ir_op *op);
/* Moves op from its block to just before `at` (in at's block, which must see every
 * operand of op there: the caller keeps SSA). */
void kiln__op_move_before(kiln__ir_op *op, kiln__ir_op *at);
kiln_status kiln__block_set_results(kiln_module *m, kiln__block *block, kiln__value *const *values,
                                    int32_t n);
/* Adds a note (copied; a note the module has already is not added twice). Out of memory
 * is recorded in the module's ctx. */
kiln_status kiln__module_note(kiln_module *m, const char *text);
/* Adds src's notes to dst. */
kiln_status kiln__module_copy_notes(kiln_module *dst, const kiln_module *src);
/* Keeps a reference to a constant's tensor for the module's life. */
kiln_status kiln__module_keep_constant(kiln_module *m, kiln_tensor *t);

/* Makes `attrs` a copy of op->attrs whose regions are callable: builtin regions stay (for
 * fast paths), every other region i becomes {fn, op->regions[i]} in storage[i] (room for
 * op->n_regions entries). */
void kiln__ir_bind_regions(const kiln__ir_op *op, kiln__attrs *attrs, kiln_region *storage,
                           kiln_region_fn fn);

/* Removes ops whose results are unused and have no effects, in every block (regions
 * included). Returns the number removed. */
int32_t kiln__module_dce(kiln_module *m);

/* Checks every op against the op table: operand counts, inference on the operand types
 * giving the recorded result types, region argument and result counts. Records an error
 * naming the function, the op and its position. */
kiln_status kiln__module_verify(kiln_module *m);

/* The argument types a region of `op` receives, and the number of results it returns
 * (shared by tracing, the verifier and the parser). `operands` are the op's operand types.
 * Writes at most `cap` types. Returns the argument count, or -1 with an error recorded. */
int32_t kiln__region_signature(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                               const kiln__type *operands, int32_t n_operands, int32_t region,
                               kiln__type *out_args, int32_t cap, int32_t *out_n_results);

#endif
