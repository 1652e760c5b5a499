/* SPDX-License-Identifier: Apache-2.0 */
/* The op schema: for each op, how StableHLO writes it. Its attributes (StableHLO's names,
 * their kinds, where each is held in kiln__attrs, whether it may be left out and what it
 * then means) and the shape of its pretty form. One description read by the text parser,
 * the printer and the portable-artifact reader (src/ir), so that an op's syntax is one
 * entry of the table in op_syntax.c.
 *
 * What the table cannot say stays with the op's semantics: attributes that mirror the
 * op's types (convert's target dtype, iota's shape, dot's result dtype) and defaults that
 * depend on operand ranks are filled by kiln__attrs_complete. */
#ifndef KILN_OPS_OP_SYNTAX_H
#define KILN_OPS_OP_SYNTAX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/attrs.h"

/* How an attribute is written (generic form / pretty form). */
typedef enum kiln__attr_kind {
    KILN__AK_I64,     /* 3 : i64 / 3 */
    KILN__AK_BOOL,    /* true */
    KILN__AK_DIMS,    /* array<i64: 1, 2> / [1, 2] (a kiln_dims) */
    KILN__AK_PADDING, /* dense<[[lo, hi], ...]> : tensor<Nx2xi64> (two kiln_dims) */
    KILN__AK_ENUM,    /* #stablehlo<comparison_direction EQ> / EQ (an enum held as int) */
    KILN__AK_STRUCT,  /* #stablehlo.gather<offset_dims = [0], ...> (fields: I64 or DIMS) */
    KILN__AK_CONV,    /* #stablehlo.conv<[b, 0, 1, f]x[o, i, 0, 1]->[b, 0, 1, f]> */
    KILN__AK_NO_TRUE, /* a list of booleans kiln reads but supports only as all false */
    KILN__AK_GROUPS,  /* dense<[[0, 1], [2, 3]]> : tensor<2x2xi64> (a kiln__groups) */
    KILN__AK_UNIT,    /* use_global_device_ids: present or not (a bool; written only if true) */
    KILN__AK_CHANNEL, /* #stablehlo.channel_handle<handle = 1, type = 0> (two int64_t:
                       * handle, type; left out, and not written, when both are 0) */
} kiln__attr_kind;

/* How many entries an attribute left out (or a padding) gets. */
typedef enum kiln__attr_count {
    KILN__AC_NONE,    /* none: the attribute is required, or empty when left out */
    KILN__AC_RANK,    /* the rank of operand 0 */
    KILN__AC_SPATIAL, /* the convolution's spatial dimensions */
    KILN__AC_FIRST,   /* as many as the op's first attribute (slice's start_indices) */
} kiln__attr_count;

/* A field of a STRUCT attribute: a list left out when empty, an integer when 0 (as
 * StableHLO prints them). */
typedef struct kiln__attr_field {
    const char *name;
    kiln__attr_kind kind; /* I64 or DIMS */
    uint16_t offset;      /* in kiln__attrs */
} kiln__attr_field;

typedef struct kiln__attr_desc {
    const char *name; /* StableHLO's */
    kiln__attr_kind kind;
    uint16_t offset;  /* of the value in kiln__attrs */
    uint16_t offset2; /* PADDING: of the high side (offset: the low side) */
    bool required;
    kiln__attr_count count; /* DIMS left out: `fill` repeated; PADDING: its pairs */
    int64_t fill;           /* DIMS, I64, ENUM and BOOL: the value when left out */
    const char *int_type;   /* I64 in the generic form: its MLIR type (NULL: "i64") */
    /* The pretty form: the keyword before " = " (NULL: written without one, an ENUM before
     * the operands, or after them; pretty_optional: may be left out there). */
    const char *pretty;
    bool in_pretty, before_operands, pretty_optional;
    /* ENUM in the pretty form: without the space MLIR writes before most enums' keyword
     * (stablehlo.fft's type = FFT, where compare has "  LT"). */
    bool tight;
    const char *mnemonic;           /* ENUM: "comparison_direction"; STRUCT: "gather" */
    const char *const *enum_names;  /* ENUM: value i is enum_names[i] (StableHLO's order) */
    int32_t n_enum;                 /* ENUM */
    const kiln__attr_field *fields; /* STRUCT */
    int32_t n_fields;
} kiln__attr_desc;

typedef enum kiln__op_form {
    KILN__FORM_UNLISTED, /* not in the table (kiln__op_syntax_get never returns it) */
    KILN__FORM_PLAIN,    /* stablehlo.add %a, %b : type */
    KILN__FORM_INLINE,   /* stablehlo.pad %x, %v, low = [0], high = [1], interior = [0] : ... */
    KILN__FORM_GENERIC,  /* "stablehlo.sort"(%x) <{dimension = 0 : i64, ...}> ({...}) : ... */
    KILN__FORM_CUSTOM,   /* a form of its own, written by hand in the parser and printer */
} kiln__op_form;

/* The type after " : " in a pretty form. */
typedef enum kiln__type_form {
    KILN__TYPE_FUNCTIONAL, /* (operand types) -> result types */
    KILN__TYPE_SAME,       /* one type when operands and result agree, else functional */
    KILN__TYPE_RESULT,     /* the result's type alone */
    KILN__TYPE_PARTS,      /* the result's type alone when the operands are its parts' type
                            * (stablehlo.complex), else functional */
    KILN__TYPE_TUPLE,      /* the result's type alone, a tuple of the operands' types */
} kiln__type_form;

typedef struct kiln__op_syntax {
    kiln__op_form form;
    kiln__type_form type;
    /* INLINE: below this many operands the op is printed in the generic form (the pretty
     * form of dynamic_slice cannot say "no start indices"). */
    int32_t min_pretty_operands;
    const kiln__attr_desc *attrs; /* in the generic form's order (StableHLO's: by name) */
    int32_t n_attrs;
    /* INLINE: the attributes' indices in the pretty form's order where it is not the
     * generic one's (stablehlo.fft %x, type = FFT, length = [4]); NULL: the same. */
    const uint8_t *pretty_order;
} kiln__op_syntax;

/* The i-th attribute of the pretty form. */
static inline const kiln__attr_desc *kiln__op_pretty_attr(const kiln__op_syntax *s, int32_t i) {
    return &s->attrs[s->pretty_order ? s->pretty_order[i] : i];
}

/* The op's syntax (every op in the table has one). */
const kiln__op_syntax *kiln__op_syntax_get(kiln_op op);

/* The attribute of `op` named `name` (len bytes), or NULL. */
const kiln__attr_desc *kiln__op_attr_find(kiln_op op, const char *name, size_t len);

/* The value an attribute holds. */
static inline void *kiln__attr_at(kiln__attrs *a, uint16_t offset) {
    return (unsigned char *)a + offset;
}
static inline const void *kiln__attr_at_const(const kiln__attrs *a, uint16_t offset) {
    return (const unsigned char *)a + offset;
}

/* What kiln__attrs_complete reads of an op's types. */
typedef struct kiln__op_types {
    int32_t n_in, n_out;
    kiln_dtype in0_dtype; /* operand 0's, when n_in > 0 */
    int32_t in0_rank;
    kiln_shape in0_shape;
    kiln_dtype out_dtype[2]; /* the first two results', when there are that many */
    kiln_shape out_shape[2];
} kiln__op_types;

/* Fills, after the attributes are read, what the op's types say and the defaults that
 * depend on them: convert's, dot's and convolution's result dtype, iota's and rng's dtype
 * and shape, broadcast's and reshape's shape, the result count of variadic ops, compare's
 * type from the dtype, sort's negative dimension, and every list left out (as many as
 * its desc's count says). */
void kiln__attrs_complete(kiln_op op, kiln__attrs *a, const kiln__op_types *t);

/* How many entries the attribute's count names for this op (its rank, spatial dims...). */
int32_t kiln__attr_count_of(const kiln__attr_desc *d, const kiln__attrs *a, int32_t rank0);

#endif
