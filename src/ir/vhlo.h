/* SPDX-License-Identifier: Apache-2.0 */
/* Reading StableHLO portable artifacts: MLIR bytecode of the versioned VHLO dialect
 * (bytecode.h is the container), turned into the StableHLO text that kiln's parser reads,
 * so that an artifact gives exactly the module its text gives.
 *
 * vhlo_attrs.c decodes the VHLO and builtin attributes and types (their binary encodings
 * from stablehlo/dialect/VhloBytecode.cpp and MLIR's BuiltinDialectBytecode) and writes
 * them as StableHLO text; vhlo.c walks the IR section and writes each op, mapping VHLO op
 * versions and their attributes to the StableHLO ops kiln has. Anything kiln does not have
 * (an op, a type, an attribute value) is refused by name, and a version newer than the
 * reader knows is refused up front. */
#ifndef KILN_IR_VHLO_H
#define KILN_IR_VHLO_H

#include "base/strbuf.h"
#include "ir/bytecode.h"
#include "kiln/parse.h"

/* The newest VHLO version the reader knows (the producer string's StableHLO_vX.Y.Z). */
#define KILN__VHLO_MAX_MAJOR 1
#define KILN__VHLO_MAX_MINOR 20

/* A decoded attribute. Lists (arrays, dictionaries) keep the position of their items. */
typedef enum kiln__vattr_kind {
    KILN__VA_ARRAY,  /* n items (attribute indices) at `items` */
    KILN__VA_DICT,   /* n (name attr, value attr) pairs at `items` */
    KILN__VA_BOOL,   /* value */
    KILN__VA_ENUM,   /* code: the VHLO attribute code; value: the enum number */
    KILN__VA_FLOAT,  /* type; value: the bit pattern */
    KILN__VA_INT,    /* type; value: the bits (sign-extend from the type's width) */
    KILN__VA_STRING, /* text, len */
    KILN__VA_TENSOR, /* type; blob */
    KILN__VA_TYPE,   /* type */
    KILN__VA_UNIT,
    KILN__VA_LOC,             /* any location */
    KILN__VA_RESULT_ACCURACY, /* value: 1 when it is the default (no tolerance, DEFAULT mode) */
    KILN__VA_OTHER,           /* one kiln has no use for: name says which */
} kiln__vattr_kind;

typedef struct kiln__vattr {
    kiln__vattr_kind kind;
    uint32_t code, n, type;
    uint64_t value;
    const char *text; /* STRING: the bytes (not NUL-terminated) */
    size_t len;
    kiln__bc_span items, blob;
    const char *name; /* OTHER: what it is, e.g. "vhlo.output_operand_alias" */
} kiln__vattr;

/* What a decoded type is. */
typedef enum kiln__vtype_kind {
    KILN__VT_ELEMENT, /* a scalar element type: dtype */
    KILN__VT_TENSOR,  /* rank, dims, elem (a type index of an ELEMENT) */
    KILN__VT_FUNCTION,
    KILN__VT_TOKEN,
    KILN__VT_TUPLE, /* inputs, n_inputs: its element types (count, then indices) */
    KILN__VT_OTHER, /* name says which */
} kiln__vtype_kind;

typedef struct kiln__vtype {
    kiln__vtype_kind kind;
    int dtype; /* kiln_dtype of an ELEMENT (or a tensor's elements) */
    int32_t rank;
    int64_t dims[16];
    uint32_t elem;
    kiln__bc_span inputs, outputs; /* FUNCTION: the two type lists (count, then indices) */
    uint32_t n_inputs, n_outputs;
    const char *name;
} kiln__vtype;

bool kiln__vhlo_attr(kiln__bc *bc, uint32_t index, kiln__vattr *out);
bool kiln__vhlo_type(kiln__bc *bc, uint32_t index, kiln__vtype *out);

/* Item i of an ARRAY (an attribute index), or of a DICT (its name and value indices). */
bool kiln__vhlo_array_item(kiln__bc *bc, const kiln__vattr *a, uint32_t i, uint32_t *out);
bool kiln__vhlo_dict_item(kiln__bc *bc, const kiln__vattr *d, uint32_t i, uint32_t *name,
                          uint32_t *value);
/* Type i of a FUNCTION's inputs (outputs false) or outputs. */
bool kiln__vhlo_function_type(kiln__bc *bc, const kiln__vtype *f, bool outputs, uint32_t i,
                              uint32_t *out);

/* Writes type `index` as StableHLO text ("tensor<2x3xf32>"); false (the error recorded,
 * naming the type) for one kiln has no dtype or static shape for. */
bool kiln__vhlo_type_text(kiln__bc *bc, kiln__strbuf *sb, uint32_t index);

/* Writes a TensorV1 as a dense literal with its type: `dense<"0x...">  : tensor<...>`
 * (booleans unpacked to a byte each). */
bool kiln__vhlo_dense_text(kiln__bc *bc, kiln__strbuf *sb, const kiln__vattr *t);

/* The integers of an integer TensorV1 (at most cap of them; *n is the element count, a
 * splat repeated), for dimension lists and paddings; also its shape. */
bool kiln__vhlo_tensor_ints(kiln__bc *bc, const kiln__vattr *t, int64_t *out, int32_t cap,
                            int32_t *n, kiln__vtype *type);

/* Any attribute as StableHLO text, as MLIR prints it (vhlo_attr_text.c): strings,
 * booleans, integers and floats with their types, arrays, dictionaries, integer and index
 * tensors (`dense<[1, 0]> : tensor<2xindex>`), custom_call's api_version and output operand
 * aliases, attributes of other dialects kept as text. False, the error recorded, for one
 * it cannot write. */
bool kiln__vhlo_attr_text(kiln__bc *bc, uint32_t index, kiln__strbuf *sb);
/* A string literal with MLIR's escapes (\\, \", \XX). */
void kiln__vhlo_string_text(kiln__strbuf *sb, const char *s, size_t len);
/* An attribute's name: as it stands when it is an identifier, else a string literal. */
void kiln__vhlo_key_text(kiln__strbuf *sb, const char *s, size_t len);

/* Translates the artifact in bc (opened) into StableHLO text. With only_func, just that
 * function (for comparing one function at a time). False with bc->error set. */
/* Shardy's attributes (vhlo_sdy.c): whether attribute `index` is one, and its text form
 * (#sdy.sharding<...>, #sdy.mesh<...>, #sdy.sharding_per_value<...>, #sdy<manual_axes...>)
 * appended to sb. */
bool kiln__vhlo_is_sdy(const kiln__bc *bc, uint32_t index);
bool kiln__vhlo_sdy_text(kiln__bc *bc, uint32_t index, kiln__strbuf *sb);

bool kiln__vhlo_to_text(kiln__bc *bc, kiln__strbuf *sb, const char *only_func);

/* Finds the portable artifact inside a file of jax.export's Exported.serialize()
 * (jax_export.c): true, with its span, when data is such a FlatBuffer. */
bool kiln__jax_export_artifact(const void *data, size_t size, size_t *out_off, size_t *out_len);

/* A portable artifact translated to StableHLO text, which kiln_module_parse then parses: in
 * *out_text (freed with kiln__strbuf_free_string), or an error naming file. The reader only
 * translates; it never parses the text. */
kiln_status kiln__vhlo_translate(kiln_ctx *cx, const void *data, size_t size, const char *file,
                                 char **out_text);

#endif
