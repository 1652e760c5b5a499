/* SPDX-License-Identifier: Apache-2.0 */
/* The op schema's table (op_syntax.h): one entry per op with attributes or a form other
 * than the plain one. Attributes are listed in the order of the generic form, which is
 * StableHLO's (by name); enum names in StableHLO's order, which is also VHLO's encoding. */
#include "ops/op_syntax.h"

#include <stddef.h>
#include <string.h>

#include "kiln/dtype.h"
#include "ops/dynamic.h"

#define AT(member) ((uint16_t)offsetof(kiln__attrs, member))

/* One attribute: its name, kind and member of kiln__attrs, then designated fields. */
#define ATTR(attr_name, attr_kind, member, ...) \
    { .name = attr_name, .kind = KILN__AK_##attr_kind, .offset = AT(member), __VA_ARGS__ }
#define REQUIRED .required = true
#define OPTIONAL .required = false
#define ONES(from) .count = KILN__AC_##from, .fill = 1
/* Written in the pretty form as "keyword = value". */
#define PRETTY(keyword) .pretty = keyword, .in_pretty = true
#define ENUM_NAMES(mnem, names) \
    .mnemonic = mnem, .enum_names = names, .n_enum = (int32_t)(sizeof names / sizeof names[0])
#define STRUCT(attr_name, mnem, list)                                                   \
    {                                                                                   \
        .name = attr_name, .kind = KILN__AK_STRUCT, .required = true, .mnemonic = mnem, \
        .fields = list, .n_fields = (int32_t)(sizeof list / sizeof list[0])             \
    }
#define PADDING(attr_name, low, high, from)                                                  \
    {                                                                                        \
        .name = attr_name, .kind = KILN__AK_PADDING, .offset = AT(low), .offset2 = AT(high), \
        .count = KILN__AC_##from                                                             \
    }
#define FIELD(field_name, field_kind, member) \
    { field_name, KILN__AK_##field_kind, AT(member) }
#define ATTRS(list) .attrs = list, .n_attrs = (int32_t)(sizeof list / sizeof list[0])

static const char *const direction_names[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
/* NOTYPE (0) is KILN_CMP_DEFAULT: the type follows from the dtype. */
static const char *const compare_type_names[] = {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED",
                                                 "UNSIGNED"};
static const char *const rng_names[] = {"DEFAULT", "THREE_FRY", "PHILOX"};
static const char *const fft_names[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
static const char *const transpose_names[] = {"TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE",
                                              "ADJOINT"};

static const kiln__attr_desc compare_attrs[] = {
    /* stablehlo.compare  LT, %a, %b,  FLOAT : ... */
    ATTR("compare_type", ENUM, u.compare.type, ENUM_NAMES("comparison_type", compare_type_names),
         .in_pretty = true, .pretty_optional = true),
    ATTR("comparison_direction", ENUM, u.compare.direction, REQUIRED,
         ENUM_NAMES("comparison_direction", direction_names), .in_pretty = true,
         .before_operands = true),
};
static const kiln__attr_desc iota_attrs[] = {
    ATTR("iota_dimension", I64, u.iota.dimension, REQUIRED, PRETTY("dim"))};
static const kiln__attr_desc rng_attrs[] = {
    ATTR("rng_algorithm", ENUM, u.rng.algorithm, ENUM_NAMES("rng_algorithm", rng_names),
         PRETTY("algorithm")),
};
static const kiln__attr_desc fft_attrs[] = {
    /* stablehlo.fft %x, type = FFT, length = [4] : ... */
    ATTR("fft_length", DIMS, u.fft.length, REQUIRED, PRETTY("length")),
    ATTR("fft_type", ENUM, u.fft.type, REQUIRED, ENUM_NAMES("fft_type", fft_names), PRETTY("type"),
         .tight = true),
};
static const uint8_t fft_pretty_order[] = {1, 0}; /* type, then length */
/* triangular_solve has the generic form only */
static const kiln__attr_desc triangular_solve_attrs[] = {
    ATTR("left_side", BOOL, u.triangular.left_side, REQUIRED),
    ATTR("lower", BOOL, u.triangular.lower, REQUIRED),
    ATTR("transpose_a", ENUM, u.triangular.transpose_a, REQUIRED,
         ENUM_NAMES("transpose", transpose_names)),
    ATTR("unit_diagonal", BOOL, u.triangular.unit_diagonal, REQUIRED),
};
static const kiln__attr_desc cholesky_attrs[] = {
    /* stablehlo.cholesky %a, lower = true : ... (false: left out) */
    ATTR("lower", BOOL, u.triangular.lower, OPTIONAL, PRETTY("lower"), .pretty_optional = true),
};
/* stablehlo.reduce_precision %x, format = e5m10 : ... (both in one word: the parser and
 * printer write it by hand) */
static const kiln__attr_desc reduce_precision_attrs[] = {
    ATTR("exponent_bits", I64, u.precision.exponent_bits, REQUIRED, .int_type = "i32"),
    ATTR("mantissa_bits", I64, u.precision.mantissa_bits, REQUIRED, .int_type = "i32"),
};
static const kiln__attr_desc map_attrs[] = {ATTR("dimensions", DIMS, u.map_dims, REQUIRED)};
static const kiln__attr_desc broadcast_attrs[] = {
    ATTR("broadcast_dimensions", DIMS, u.broadcast.dims, REQUIRED, PRETTY("dims"))};
static const kiln__attr_desc transpose_attrs[] = {
    ATTR("permutation", DIMS, u.permutation, REQUIRED, PRETTY("dims"))};
static const kiln__attr_desc reverse_attrs[] = {
    ATTR("dimensions", DIMS, u.reverse_dims, REQUIRED, PRETTY("dims"))};
/* slice's pretty form ([start:limit:stride, ...]) is its own */
static const kiln__attr_desc slice_attrs[] = {
    ATTR("start_indices", DIMS, u.slice.start, REQUIRED),
    ATTR("limit_indices", DIMS, u.slice.limit, REQUIRED),
    ATTR("strides", DIMS, u.slice.strides, ONES(FIRST)),
};
static const kiln__attr_desc dynamic_slice_attrs[] = {
    ATTR("slice_sizes", DIMS, u.slice_sizes, REQUIRED, PRETTY("sizes"))};
static const kiln__attr_desc pad_attrs[] = {
    ATTR("edge_padding_low", DIMS, u.pad.low, REQUIRED, PRETTY("low")),
    ATTR("edge_padding_high", DIMS, u.pad.high, REQUIRED, PRETTY("high")),
    ATTR("interior_padding", DIMS, u.pad.interior, REQUIRED, PRETTY("interior")),
};
/* The dynamic-shape ops: their static op's attributes but for those given by operands */
static const kiln__attr_desc dynamic_iota_attrs[] = {
    ATTR("iota_dimension", I64, u.iota.dimension, REQUIRED, PRETTY("dim"))};
/* stablehlo.dynamic_broadcast_in_dim %x, %shape, dims = [0, 2] {known_...} : ... */
static const kiln__attr_desc dynamic_broadcast_attrs[] = {
    ATTR("broadcast_dimensions", DIMS, u.dynamic_broadcast.dims, REQUIRED, PRETTY("dims")),
    ATTR("known_expanding_dimensions", DIMS, u.dynamic_broadcast.expanding, OPTIONAL),
    ATTR("known_nonexpanding_dimensions", DIMS, u.dynamic_broadcast.nonexpanding, OPTIONAL),
};
static const kiln__attr_desc get_dimension_size_attrs[] = {
    ATTR("dimension", I64, u.dimension, REQUIRED, PRETTY("dim"))};
/* stablehlo.get_tuple_element %t[0] : ... (the parser and printer write it by hand) */
static const kiln__attr_desc get_tuple_element_attrs[] = {
    ATTR("index", I64, u.tuple_index, REQUIRED, .int_type = "i32")};
static const kiln__attr_desc concatenate_attrs[] = {
    ATTR("dimension", I64, u.dimension, REQUIRED, PRETTY("dim"))};

static const kiln__attr_field gather_fields[] = {
    FIELD("offset_dims", DIMS, u.gather.offset_dims),
    FIELD("collapsed_slice_dims", DIMS, u.gather.collapsed_slice_dims),
    FIELD("operand_batching_dims", DIMS, u.gather.operand_batching_dims),
    FIELD("start_indices_batching_dims", DIMS, u.gather.start_indices_batching_dims),
    FIELD("start_index_map", DIMS, u.gather.start_index_map),
    FIELD("index_vector_dim", I64, u.gather.index_vector_dim),
};
static const kiln__attr_desc gather_attrs[] = {
    STRUCT("dimension_numbers", "gather", gather_fields),
    ATTR("indices_are_sorted", BOOL, u.gather.indices_are_sorted, OPTIONAL),
    ATTR("slice_sizes", DIMS, u.gather.slice_sizes, REQUIRED),
};
/* dynamic_gather: slice_sizes is an operand (attrs_complete fills them from the type) */
static const kiln__attr_desc dynamic_gather_attrs[] = {
    STRUCT("dimension_numbers", "gather", gather_fields),
    ATTR("indices_are_sorted", BOOL, u.gather.indices_are_sorted, OPTIONAL),
};

static const kiln__attr_field scatter_fields[] = {
    FIELD("update_window_dims", DIMS, u.scatter.update_window_dims),
    FIELD("inserted_window_dims", DIMS, u.scatter.inserted_window_dims),
    FIELD("input_batching_dims", DIMS, u.scatter.input_batching_dims),
    FIELD("scatter_indices_batching_dims", DIMS, u.scatter.scatter_indices_batching_dims),
    FIELD("scatter_dims_to_operand_dims", DIMS, u.scatter.scatter_dims_to_operand_dims),
    FIELD("index_vector_dim", I64, u.scatter.index_vector_dim),
};
static const kiln__attr_desc scatter_attrs[] = {
    ATTR("indices_are_sorted", BOOL, u.scatter.indices_are_sorted, OPTIONAL),
    STRUCT("scatter_dimension_numbers", "scatter", scatter_fields),
    ATTR("unique_indices", BOOL, u.scatter.unique_indices, OPTIONAL),
};

static const kiln__attr_desc sort_attrs[] = {
    ATTR("dimension", I64, u.sort.dimension, .fill = -1),
    ATTR("is_stable", BOOL, u.sort.stable, OPTIONAL),
};
static const kiln__attr_desc reduce_attrs[] = {ATTR("dimensions", DIMS, u.reduce_dims, REQUIRED)};

static const kiln__attr_desc reduce_window_attrs[] = {
    ATTR("base_dilations", DIMS, u.window.base_dilations, ONES(RANK)),
    PADDING("padding", u.window.padding_low, u.window.padding_high, RANK),
    ATTR("window_dilations", DIMS, u.window.window_dilations, ONES(RANK)),
    ATTR("window_dimensions", DIMS, u.window.window_dimensions, REQUIRED),
    ATTR("window_strides", DIMS, u.window.window_strides, ONES(RANK)),
};
static const kiln__attr_desc select_and_scatter_attrs[] = {
    PADDING("padding", u.window.padding_low, u.window.padding_high, RANK),
    ATTR("window_dimensions", DIMS, u.window.window_dimensions, REQUIRED),
    ATTR("window_strides", DIMS, u.window.window_strides, ONES(RANK)),
};

static const kiln__attr_field dot_fields[] = {
    FIELD("lhs_batching_dimensions", DIMS, u.dot.lhs_batching_dims),
    FIELD("rhs_batching_dimensions", DIMS, u.dot.rhs_batching_dims),
    FIELD("lhs_contracting_dimensions", DIMS, u.dot.lhs_contracting_dims),
    FIELD("rhs_contracting_dimensions", DIMS, u.dot.rhs_contracting_dims),
};
/* dot_general's pretty form (batching_dims = [0] x [0], contracting_dims = ...) is its own;
 * precision_config and the algorithm only bound the precision from below (kiln accumulates
 * in the operands' type or wider), so they are read and not kept. */
static const kiln__attr_desc dot_general_attrs[] = {
    STRUCT("dot_dimension_numbers", "dot", dot_fields)};

/* convolution: dimension_numbers first (the counts of the others follow from it); its
 * pretty form (dim_numbers = ..., window = {...}) is its own. */
static const kiln__attr_desc convolution_attrs[] = {
    ATTR("dimension_numbers", CONV, u.conv, REQUIRED),
    ATTR("window_strides", DIMS, u.conv.window_strides, ONES(SPATIAL)),
    PADDING("padding", u.conv.padding_low, u.conv.padding_high, SPATIAL),
    ATTR("lhs_dilation", DIMS, u.conv.lhs_dilation, ONES(SPATIAL)),
    ATTR("rhs_dilation", DIMS, u.conv.rhs_dilation, ONES(SPATIAL)),
    {.name = "window_reversal", .kind = KILN__AK_NO_TRUE},
    ATTR("feature_group_count", I64, u.conv.feature_group_count, .fill = 1),
    ATTR("batch_group_count", I64, u.conv.batch_group_count, .fill = 1),
};
/* dynamic_conv (generic form only): convolution's but for the padding, an operand; by
 * name, but for the dimension numbers first (they are read whole, and the counts of the
 * others follow from them) */
#define DCONV(m) u.dynamic_conv.conv.m
static const kiln__attr_desc dynamic_conv_attrs[] = {
    ATTR("dimension_numbers", CONV, u.dynamic_conv.conv, REQUIRED),
    ATTR("batch_group_count", I64, DCONV(batch_group_count), .fill = 1),
    ATTR("feature_group_count", I64, DCONV(feature_group_count), .fill = 1),
    ATTR("lhs_dilation", DIMS, DCONV(lhs_dilation), ONES(SPATIAL)),
    ATTR("rhs_dilation", DIMS, DCONV(rhs_dilation), ONES(SPATIAL)),
    {.name = "window_reversal", .kind = KILN__AK_NO_TRUE},
    ATTR("window_strides", DIMS, DCONV(window_strides), ONES(SPATIAL)),
};
#undef DCONV

/* Collectives: StableHLO writes them in the generic form, attributes by name. */
#define CHANNEL ATTR("channel_handle", CHANNEL, u.collective.channel_handle, OPTIONAL)
#define GROUPS(attr_name) ATTR(attr_name, GROUPS, u.collective.groups, REQUIRED)
#define GLOBAL_IDS ATTR("use_global_device_ids", UNIT, u.collective.use_global_device_ids, OPTIONAL)
static const kiln__attr_desc all_reduce_attrs[] = {CHANNEL, GROUPS("replica_groups"), GLOBAL_IDS};
static const kiln__attr_desc all_gather_attrs[] = {
    ATTR("all_gather_dim", I64, u.collective.dimension, REQUIRED),
    CHANNEL,
    GROUPS("replica_groups"),
    GLOBAL_IDS,
};
static const kiln__attr_desc reduce_scatter_attrs[] = {
    CHANNEL,
    GROUPS("replica_groups"),
    ATTR("scatter_dimension", I64, u.collective.dimension, REQUIRED),
    GLOBAL_IDS,
};
static const kiln__attr_desc all_to_all_attrs[] = {
    CHANNEL,
    ATTR("concat_dimension", I64, u.collective.concat_dimension, REQUIRED),
    GROUPS("replica_groups"),
    ATTR("split_count", I64, u.collective.split_count, REQUIRED),
    ATTR("split_dimension", I64, u.collective.dimension, REQUIRED),
};
static const kiln__attr_desc collective_permute_attrs[] = {CHANNEL, GROUPS("source_target_pairs")};
static const kiln__attr_desc collective_broadcast_attrs[] = {
    CHANNEL,
    ATTR("has_dynamic_root", UNIT, u.collective.has_dynamic_root, OPTIONAL),
    GROUPS("replica_groups"),
};

#define PLAIN_FUNCTIONAL \
    { .form = KILN__FORM_PLAIN, .type = KILN__TYPE_FUNCTIONAL }
#define INLINE(type_form, list) \
    { .form = KILN__FORM_INLINE, .type = KILN__TYPE_##type_form, ATTRS(list) }
#define GENERIC(list) \
    { .form = KILN__FORM_GENERIC, ATTRS(list) }
#define GENERIC_NO_ATTRS \
    { .form = KILN__FORM_GENERIC }
#define CUSTOM(list) \
    { .form = KILN__FORM_CUSTOM, ATTRS(list) }
#define CUSTOM_NO_ATTRS \
    { .form = KILN__FORM_CUSTOM }

/* The elementwise ops not named here are plain, with one type when operands and results
 * agree (StableHLO's SameOperandsAndResultType ops). */
static const kiln__op_syntax table[KILN_OP_COUNT] = {
    [KILN_OP_IS_FINITE] = PLAIN_FUNCTIONAL,
    [KILN_OP_COMPLEX] = {.form = KILN__FORM_PLAIN, .type = KILN__TYPE_PARTS},
    [KILN_OP_BITCAST_CONVERT] = PLAIN_FUNCTIONAL,
    [KILN_OP_REDUCE_PRECISION] = {.form = KILN__FORM_CUSTOM,
                                  .type = KILN__TYPE_SAME,
                                  ATTRS(reduce_precision_attrs)},
    [KILN_OP_RESHAPE] = PLAIN_FUNCTIONAL,
    [KILN_OP_DYNAMIC_UPDATE_SLICE] = PLAIN_FUNCTIONAL,
    [KILN_OP_COMPARE] = INLINE(FUNCTIONAL, compare_attrs),
    [KILN_OP_IOTA] = INLINE(RESULT, iota_attrs),
    [KILN_OP_RNG_BIT_GENERATOR] = INLINE(FUNCTIONAL, rng_attrs),
    [KILN_OP_TRIANGULAR_SOLVE] = GENERIC(triangular_solve_attrs),
    [KILN_OP_CHOLESKY] = INLINE(SAME, cholesky_attrs),
    [KILN_OP_FFT] = {.form = KILN__FORM_INLINE,
                     .type = KILN__TYPE_FUNCTIONAL,
                     .pretty_order = fft_pretty_order,
                     ATTRS(fft_attrs)},
    [KILN_OP_BROADCAST_IN_DIM] = INLINE(FUNCTIONAL, broadcast_attrs),
    [KILN_OP_TRANSPOSE] = INLINE(FUNCTIONAL, transpose_attrs),
    [KILN_OP_REVERSE] = INLINE(SAME, reverse_attrs),
    [KILN_OP_DYNAMIC_SLICE] = {.form = KILN__FORM_INLINE,
                               .min_pretty_operands = 2,
                               ATTRS(dynamic_slice_attrs)},
    [KILN_OP_PAD] = INLINE(FUNCTIONAL, pad_attrs),
    [KILN_OP_CONCATENATE] = INLINE(FUNCTIONAL, concatenate_attrs),
    [KILN_OP_GATHER] = GENERIC(gather_attrs),
    [KILN_OP_DYNAMIC_IOTA] = INLINE(FUNCTIONAL, dynamic_iota_attrs),
    [KILN_OP_DYNAMIC_BROADCAST_IN_DIM] = INLINE(FUNCTIONAL, dynamic_broadcast_attrs),
    [KILN_OP_DYNAMIC_RESHAPE] = PLAIN_FUNCTIONAL,
    [KILN_OP_DYNAMIC_PAD] = PLAIN_FUNCTIONAL,
    [KILN_OP_DYNAMIC_GATHER] = GENERIC(dynamic_gather_attrs),
    [KILN_OP_DYNAMIC_CONV] = GENERIC(dynamic_conv_attrs),
    [KILN_OP_GET_DIMENSION_SIZE] = INLINE(FUNCTIONAL, get_dimension_size_attrs),
    [KILN_OP_SCATTER] = GENERIC(scatter_attrs),
    [KILN_OP_SORT] = GENERIC(sort_attrs),
    [KILN_OP_REDUCE_WINDOW] = GENERIC(reduce_window_attrs),
    [KILN_OP_SELECT_AND_SCATTER] = GENERIC(select_and_scatter_attrs),
    [KILN_OP_MAP] = GENERIC(map_attrs),
    [KILN_OP_IF] = GENERIC_NO_ATTRS,
    [KILN_OP_CASE] = GENERIC_NO_ATTRS,
    [KILN_OP_SLICE] = CUSTOM(slice_attrs),
    [KILN_OP_REDUCE] = CUSTOM(reduce_attrs),
    [KILN_OP_DOT_GENERAL] = CUSTOM(dot_general_attrs),
    [KILN_OP_CONVOLUTION] = CUSTOM(convolution_attrs),
    [KILN_OP_CONSTANT] = CUSTOM_NO_ATTRS,
    [KILN_OP_SELECT] = CUSTOM_NO_ATTRS,
    [KILN_OP_WHILE] = CUSTOM_NO_ATTRS,
    [KILN_OP_CALL] = CUSTOM_NO_ATTRS,
    [KILN_OP_OPTIMIZATION_BARRIER] = CUSTOM_NO_ATTRS,
    [KILN_OP_REPLICA_ID] = {.form = KILN__FORM_INLINE, .type = KILN__TYPE_RESULT},
    [KILN_OP_PARTITION_ID] = {.form = KILN__FORM_INLINE, .type = KILN__TYPE_RESULT},
    [KILN_OP_ALL_REDUCE] = GENERIC(all_reduce_attrs),
    [KILN_OP_ALL_GATHER] = GENERIC(all_gather_attrs),
    [KILN_OP_REDUCE_SCATTER] = GENERIC(reduce_scatter_attrs),
    [KILN_OP_ALL_TO_ALL] = GENERIC(all_to_all_attrs),
    [KILN_OP_COLLECTIVE_PERMUTE] = GENERIC(collective_permute_attrs),
    [KILN_OP_COLLECTIVE_BROADCAST] = GENERIC(collective_broadcast_attrs),
    [KILN_OP_COLLECTIVE_REDUCE] = GENERIC(collective_broadcast_attrs),
    [KILN_OP_RUN_PARALLEL] = CUSTOM_NO_ATTRS,
    /* `stablehlo.custom_call @target(%a) {attributes} : (...) -> ...` and the generic form:
     * its attributes are an open set, kept as written in its record (ops/custom_call.h,
     * whose table checks the known ones) */
    [KILN_OP_CUSTOM_CALL] = CUSTOM_NO_ATTRS,
    [KILN_OP_AFTER_ALL] = {.form = KILN__FORM_INLINE, .type = KILN__TYPE_SAME},
    [KILN_OP_CREATE_TOKEN] = {.form = KILN__FORM_INLINE, .type = KILN__TYPE_RESULT},
    [KILN_OP_TUPLE] = {.form = KILN__FORM_INLINE, .type = KILN__TYPE_TUPLE},
    [KILN_OP_GET_TUPLE_ELEMENT] = CUSTOM(get_tuple_element_attrs),
};

static const kiln__op_syntax same_type_plain = {.form = KILN__FORM_PLAIN, .type = KILN__TYPE_SAME};
static const kiln__op_syntax no_text_form = CUSTOM_NO_ATTRS;

const kiln__op_syntax *kiln__op_syntax_get(kiln_op op) {
    if ((unsigned)op >= KILN_OP_COUNT) return &no_text_form;
    if (table[op].form != KILN__FORM_UNLISTED) return &table[op];
    return kiln__op_has(op, KILN_OPF_ELEMENTWISE) ? &same_type_plain : &no_text_form;
}

const kiln__attr_desc *kiln__op_attr_find(kiln_op op, const char *name, size_t len) {
    const kiln__op_syntax *s = kiln__op_syntax_get(op);
    for (int32_t i = 0; i < s->n_attrs; i++)
        if (strlen(s->attrs[i].name) == len && memcmp(s->attrs[i].name, name, len) == 0)
            return &s->attrs[i];
    return NULL;
}

int32_t kiln__attr_count_of(const kiln__attr_desc *d, const kiln__attrs *a, int32_t rank0) {
    switch (d->count) {
    case KILN__AC_RANK: return rank0;
    case KILN__AC_SPATIAL: return a->u.conv.input_spatial_dimensions.count;
    case KILN__AC_FIRST: return a->u.slice.start.count;
    default: return 0;
    }
}

/* Lists left out get their count of `fill`; paddings left out, zeros. */
static void fill_left_out(kiln_op op, kiln__attrs *a, int32_t rank0) {
    const kiln__op_syntax *s = kiln__op_syntax_get(op);
    for (int32_t i = 0; i < s->n_attrs; i++) {
        const kiln__attr_desc *d = &s->attrs[i];
        if (d->count == KILN__AC_NONE) continue;
        int32_t n = kiln__attr_count_of(d, a, rank0);
        kiln_dims *lists[2] = {kiln__attr_at(a, d->offset),
                               d->kind == KILN__AK_PADDING ? kiln__attr_at(a, d->offset2) : NULL};
        for (int k = 0; k < 2; k++) {
            kiln_dims *l = lists[k];
            if (!l || l->count) continue;
            l->count = n;
            for (int32_t j = 0; j < n; j++)
                l->v[j] = d->kind == KILN__AK_PADDING ? 0 : d->fill;
        }
    }
}

static void ones(kiln_dims *d, int32_t n) {
    d->count = n;
    for (int32_t i = 0; i < n; i++)
        d->v[i] = 1;
}

void kiln__attrs_complete(kiln_op op, kiln__attrs *a, const kiln__op_types *t) {
    int32_t rank0 = t->n_in > 0 ? t->in0_rank : 0;
    fill_left_out(op, a, rank0);
    switch (op) {
    case KILN_OP_COMPARE:
        if (a->u.compare.type == KILN_CMP_DEFAULT && t->n_in > 0)
            a->u.compare.type = kiln__compare_type_of(t->in0_dtype);
        break;
    case KILN_OP_CONVERT:
    case KILN_OP_BITCAST_CONVERT:
        if (t->n_out > 0) a->u.convert_to = t->out_dtype[0];
        break;
    case KILN_OP_IOTA:
        if (t->n_out > 0) {
            a->u.iota.dtype = t->out_dtype[0];
            a->u.iota.shape = t->out_shape[0];
        }
        break;
    case KILN_OP_RNG_BIT_GENERATOR:
        if (t->n_out > 1) {
            a->u.rng.dtype = t->out_dtype[1];
            a->u.rng.shape = t->out_shape[1];
        }
        break;
    case KILN_OP_BROADCAST_IN_DIM:
        if (t->n_out > 0) a->u.broadcast.shape = t->out_shape[0];
        break;
    case KILN_OP_RESHAPE:
    case KILN_OP_DYNAMIC_RESHAPE:
        if (t->n_out > 0) a->u.reshape = t->out_shape[0];
        break;
    case KILN_OP_DYNAMIC_IOTA:
        if (t->n_out > 0) {
            a->u.iota.dtype = t->out_dtype[0];
            a->u.iota.shape = t->out_shape[0];
        }
        break;
    case KILN_OP_DYNAMIC_BROADCAST_IN_DIM:
        if (t->n_out > 0) a->u.dynamic_broadcast.shape = t->out_shape[0];
        break;
    case KILN_OP_DYNAMIC_PAD:
        if (t->n_out > 0) a->u.result_shape = t->out_shape[0];
        break;
    case KILN_OP_DYNAMIC_GATHER:
        if (t->n_in > 0 && t->n_out > 0)
            kiln__gather_sizes_from_type(&a->u.gather, t->in0_rank, &t->out_shape[0]);
        break;
    case KILN_OP_DYNAMIC_CONV:
        if (t->n_out > 0) {
            a->result_dtype = t->out_dtype[0];
            a->u.dynamic_conv.shape = t->out_shape[0];
        }
        break;
    case KILN_OP_SORT:
        a->n_results = t->n_out;
        if (a->u.sort.dimension < 0 && t->n_in > 0) a->u.sort.dimension += t->in0_rank;
        break;
    case KILN_OP_DOT_GENERAL:
    case KILN_OP_CONVOLUTION:
    case KILN_OP_MAP:
        if (t->n_out > 0) a->result_dtype = t->out_dtype[0];
        break;
    case KILN_OP_SELECT_AND_SCATTER:
        /* the window geometry it shares with reduce_window, without dilations */
        ones(&a->u.window.base_dilations, rank0);
        ones(&a->u.window.window_dilations, rank0);
        a->n_results = t->n_out;
        break;
    case KILN_OP_ALL_GATHER:
    case KILN_OP_REDUCE_SCATTER: {
        /* The group size the types say (the processes of a cross_replica_and_partition
         * group are not known from the attributes alone); replica_groups' width when the
         * dimension is empty. */
        a->n_results = t->n_out;
        int64_t d = a->u.collective.dimension, f = a->u.collective.groups.cols;
        if (t->n_in > 0 && t->n_out > 0 && d >= 0 && d < t->in0_rank && d < t->out_shape[0].rank) {
            int64_t in = t->in0_shape.dims[d], out = t->out_shape[0].dims[d];
            if (op == KILN_OP_ALL_GATHER && in > 0 && out % in == 0) f = out / in;
            if (op == KILN_OP_REDUCE_SCATTER && out > 0 && in % out == 0) f = in / out;
        }
        a->u.collective.split_count = f;
        break;
    }
    case KILN_OP_SCATTER:
    case KILN_OP_REDUCE:
    case KILN_OP_REDUCE_WINDOW:
    case KILN_OP_WHILE:
    case KILN_OP_IF:
    case KILN_OP_CASE:
    case KILN_OP_CALL:
    case KILN_OP_OPTIMIZATION_BARRIER:
    case KILN_OP_ALL_REDUCE:
    case KILN_OP_ALL_TO_ALL:
    case KILN_OP_COLLECTIVE_BROADCAST:
    case KILN_OP_COLLECTIVE_REDUCE:
    case KILN_OP_CUSTOM_CALL:
    case KILN_OP_RUN_PARALLEL: a->n_results = t->n_out; break;
    default: break;
    }
}
