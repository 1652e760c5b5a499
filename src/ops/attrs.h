/* SPDX-License-Identifier: Apache-2.0 */
/* Op attributes: everything about an op call that is not an operand. Builders fill a
 * whole kiln__attrs on the stack; a module's op holds only the part its kind uses
 * (kiln__attrs_size: the common fields and one member of the union), so an op costs what
 * its attributes hold, not the 1,200 bytes of the largest member. Code reading an op's
 * attributes reads only the member of the op's kind, and copies them with
 * kiln__attrs_copy, never by assignment. */
#ifndef KILN_OPS_ATTRS_H
#define KILN_OPS_ATTRS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/ops.h"
#include "ops/op.h"

/* A collective's groups of process ids: replica_groups (`rows` groups of `cols` ids, -1
 * padding the shorter ones) or collective_permute's source_target_pairs (`rows` pairs,
 * `cols` 2). At most KILN__MAX_GROUP_IDS ids, so that the op's attributes keep a fixed
 * size no larger than the other kinds'. */
#define KILN__MAX_GROUP_IDS 256
typedef struct kiln__groups {
    int32_t rows, cols;
    int32_t ids[KILN__MAX_GROUP_IDS];
} kiln__groups;

typedef struct kiln__attrs {
    /* dot_general, convolution: the requested result type; map: its computation's */
    kiln_dtype result_dtype;
    /* Regions, in the op's order: scatter/reduce/reduce_window: [update]; sort:
     * [comparator]; map: [computation]; select_and_scatter: [select, scatter];
     * while: [cond, body];     * if: [true, false]; case: the branches; all_reduce, reduce_scatter:
     * [computation]; run_parallel: one program per process. */
    const kiln_region *regions;   /* an array of n_regions, when the op's regions are a list */
    const kiln_region *region[2]; /* or up to two separately */
    int32_t n_regions;
    int32_t n_results; /* for ops with a variable result count */
    const char *fn;    /* the public builder, for messages only */
    uint8_t mark;      /* what the op means beyond its kind (kiln__mark) */
    /* The op's own attributes: the member its kind uses (kiln__attrs_size). Last, so that
     * an op in a module holds only the bytes of its member. */
    union {
        struct {
            kiln_compare_direction direction;
            kiln_compare_type type; /* never DEFAULT once built: resolved from the dtype */
        } compare;
        kiln_dtype convert_to; /* convert, bitcast_convert */
        struct {
            int64_t exponent_bits, mantissa_bits; /* >= 1, >= 0 */
        } precision;                              /* reduce_precision */
        /* constant: the value (a concrete tensor); custom_call: its record, the target and
         * attributes as written (ops/custom_call.h) */
        const kiln_tensor *constant;
        struct {
            kiln_dtype dtype;
            kiln_shape shape;
            int64_t dimension;
        } iota;
        struct {
            kiln_rng_algorithm algorithm;
            kiln_dtype dtype;
            kiln_shape shape;
        } rng;
        struct {
            kiln_shape shape;
            kiln_dims dims;
        } broadcast;
        /* dynamic_broadcast_in_dim: broadcast's, and the operand dimensions known to
         * expand (size 1 to more) or not to, as written (empty when left out) */
        struct {
            kiln_shape shape;
            kiln_dims dims, expanding, nonexpanding;
        } dynamic_broadcast;
        kiln_shape reshape;      /* fully known: no -1 (dynamic_reshape: the declared result's) */
        kiln_shape result_shape; /* dynamic_pad: the declared result's */
        kiln_dims permutation;
        kiln_dims reverse_dims;
        struct {
            kiln_dims start, limit, strides; /* strides filled in: all > 0 */
        } slice;
        kiln_dims slice_sizes; /* dynamic_slice */
        struct {
            kiln_dims low, high, interior; /* count == rank */
        } pad;
        int64_t dimension; /* concatenate, get_dimension_size */
        /* tuple: its type (in the module's types: the parser interns the declared one) */
        const struct kiln__type *tuple_type;
        int64_t tuple_index; /* get_tuple_element */
        kiln_gather_params gather;
        kiln_scatter_params scatter;
        struct {
            int64_t dimension;
            bool stable;
        } sort;
        kiln_dims reduce_dims;
        kiln_dims map_dims;        /* map: every dimension of the inputs, in order */
        kiln_window_params window; /* reduce_window, select_and_scatter; defaults filled in */
        kiln_dot_params dot;
        struct {
            bool left_side, lower, unit_diagonal; /* cholesky: lower alone */
            kiln_solve_transpose transpose_a;
        } triangular; /* triangular_solve, cholesky */
        struct {
            kiln_fft_type type;
            kiln_dims length; /* the sizes of the last length.count dimensions, 1 to 3 */
        } fft;
        kiln_conv_params conv; /* defaults filled in */
        /* dynamic_conv: convolution's, but for its padding (an operand), and the declared
         * result shape. conv first: the schema's counts read u.conv.input_spatial_dimensions */
        struct {
            kiln_conv_params conv;
            kiln_shape shape;
        } dynamic_conv;
        struct {
            kiln__groups groups;
            int64_t channel_handle, channel_type; /* 0, 0 when left out */
            /* all_gather_dim, scatter_dimension, all_to_all's split_dimension */
            int64_t dimension;
            int64_t concat_dimension; /* all_to_all */
            /* all_to_all: split_count. all_gather, reduce_scatter: the size of each
             * process group the result type was made for (filled from the types; a
             * cross_replica_and_partition group spans the partitions too). */
            int64_t split_count;
            bool use_global_device_ids;
            /* collective_broadcast, collective_reduce: the last operand holds each data
             * operand's root (an index into the group) */
            bool has_dynamic_root;
        } collective;
        struct {
            int32_t num_replicas, num_partitions; /* run_parallel's grid */
            int32_t n_args, n_results;            /* of each program */
        } grid;
        struct {
            /* while: its trip count, when kiln_fori_loop made it (known: upper - lower
             * iterations, or none when upper <= lower). For costs only; never semantics. */
            int64_t lower, upper;
            bool known;
        } loop;
    } u;
} kiln__attrs;

_Static_assert(offsetof(kiln__attrs, u.dynamic_conv.conv) == offsetof(kiln__attrs, u.conv),
               "dynamic_conv's convolution attributes are where convolution's are");

/* attrs.mark: a stop_gradient (an optimization_barrier that differentiation treats as a
 * constant) and a custom_vjp call (a call whose attrs.u.constant is a u8 tensor holding the
 * runtime's record of the rule). Transforms other than autodiff keep them: batching runs
 * such a call per example so that its rule survives. The mark is a common field, so
 * kiln__attrs_copy keeps it. */
enum kiln__mark {
    KILN__MARK_NONE,
    KILN__MARK_STOP_GRADIENT,
    KILN__MARK_CUSTOM_VJP,
    /* a stablehlo.composite: a call of its decomposition whose attrs.u.constant is a record
     * (ops/custom_call.h) of its name (the target), composite_attributes and version */
    KILN__MARK_COMPOSITE,
};

/* The bytes of a kiln__attrs that an op of `kind` uses: the common fields and the union
 * member of its kind (none for most elementwise ops). */
size_t kiln__attrs_size(kiln_op kind);

/* Copies the part of *src an op of `kind` uses into *dst (which holds at least that much:
 * a whole kiln__attrs, or an op's own attributes of that kind). */
void kiln__attrs_copy(kiln__attrs *dst, const kiln__attrs *src, kiln_op kind);

/* The compare type DEFAULT stands for on operands of `dtype`: FLOAT for floats and complex,
 * SIGNED for signed integers, UNSIGNED otherwise (i1 included). */
kiln_compare_type kiln__compare_type_of(kiln_dtype dtype);

/* The i-th region of an op call (from `region` or `regions`), or NULL. */
static inline const kiln_region *kiln__attrs_region(const kiln__attrs *a, int32_t i) {
    if (i < 0 || i >= a->n_regions) return NULL;
    return a->regions ? &a->regions[i] : a->region[i];
}

#endif
