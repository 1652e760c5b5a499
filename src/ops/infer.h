/* SPDX-License-Identifier: Apache-2.0 */
/* Shape and dtype inference: the verifier rules of each op, shared by eager builders,
 * tracing and the parser. One function per op (kiln__infer_<name>), found through the
 * table generated from ops.def. */
#ifndef KILN_OPS_INFER_H
#define KILN_OPS_INFER_H

#include "kiln/ctx.h"
#include "kiln/dtype.h"
#include "kiln/shape.h"
#include "ops/attrs.h"
#include "ops/op.h"

/* What a value is: a tensor, a !stablehlo.token (ordering, no data), or a tuple of values.
 * A token is carried at run time as an empty i1 tensor (dtype KILN_BOOL, shape [0]), as
 * JAX passes tokens across a program's boundary, so that buffers, calls and control flow
 * need nothing of their own for it. A tuple has no run-time form: canonicalize takes its
 * elements out (get_tuple_element of a tuple), and what is left is refused at compile
 * time; its dtype and shape are a token's, so code that looks at those alone sees an empty
 * tensor. */
typedef enum kiln__value_kind {
    KILN__KIND_TENSOR,
    KILN__KIND_TOKEN,
    KILN__KIND_TUPLE,
} kiln__value_kind;

struct kiln__tuple_type;

/* The type of a value: dtype and shape (a token's are its run-time tensor's). */
typedef struct kiln__type {
    kiln_dtype dtype;
    uint8_t kind; /* kiln__value_kind: zero, a tensor, unless said */
    kiln_shape shape;
    /* a tuple's elements, held by whoever made the type (a module's types: its arena) */
    const struct kiln__tuple_type *tuple;
} kiln__type;

typedef struct kiln__tuple_type {
    int32_t n;
    kiln__type elems[]; /* n of them */
} kiln__tuple_type;

/* Whether a and b are the same type (tuples element by element). */
bool kiln__type_equal(const kiln__type *a, const kiln__type *b);

/* !stablehlo.token's type. */
static inline kiln__type kiln__token_type(void) {
    return (kiln__type){.dtype = KILN_BOOL, .kind = KILN__KIND_TOKEN, .shape = {.rank = 1}};
}
static inline bool kiln__is_token(const kiln__type *t) { return t->kind == KILN__KIND_TOKEN; }
static inline bool kiln__is_tuple(const kiln__type *t) { return t->kind == KILN__KIND_TUPLE; }
/* A tuple type of `elems` (held by the caller: the tuple struct it points into). */
static inline kiln__type kiln__tuple_of(const kiln__tuple_type *elems) {
    kiln__type t = kiln__token_type();
    t.kind = KILN__KIND_TUPLE;
    t.tuple = elems;
    return t;
}

/* Checks the operand types and attributes of an op call against the spec's constraints
 * and computes the result types. On error records INVALID_ARGUMENT in cx, naming
 * attrs->fn and the operand or attribute ("kiln_add: operand 2 has shape [3,5]; expected
 * [3,4]"), and returns it. n_results is the number of slots in `results` (set from the op
 * table or attrs->n_results by the caller). kiln__infer has checked the counts the op table
 * fixes before the op's function runs, so a function checks only the variable ones. */
#define KILN__INFER_PARAMS                                                              \
    kiln_ctx *cx, const kiln__attrs *attrs, const kiln__type *operands, int n_operands, \
        kiln__type *results, int n_results
typedef kiln_status (*kiln__infer_fn)(KILN__INFER_PARAMS);

/* The inference function of op NAME (a row of ops.def); a definition is
 * `KILN__INFER(TRANSPOSE) { ... }`. */
#define KILN__INFER(NAME) kiln_status kiln__infer_##NAME(KILN__INFER_PARAMS)

#define KILN_OP(name, text, nin, nout, flags) KILN__INFER(name);
#include "ops/ops.def"
#undef KILN_OP

/* Checks the operand and result counts the op table fixes ("got 2 operands; expected 1"),
 * then runs the op's inference function. */
kiln_status kiln__infer(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                        const kiln__type *operands, int n_operands, kiln__type *results,
                        int n_results);

/* Helpers for inference functions and messages. */
/* "[3,4]" into buf (at least KILN__SHAPE_TEXT bytes). */
#define KILN__SHAPE_TEXT (KILN_MAX_RANK * 21 + 3)
const char *kiln__shape_text(const kiln_shape *shape, char *buf);
/* "f32[3,4]" into buf (at least KILN__TYPE_TEXT bytes). */
#define KILN__TYPE_TEXT (KILN__SHAPE_TEXT + 8)
const char *kiln__type_text(const kiln__type *type, char *buf);
/* Records "<fn>: <message>" as INVALID_ARGUMENT and returns it. */
kiln_status kiln__infer_error(kiln_ctx *cx, const kiln__attrs *attrs, const char *fmt, ...)
    KILN_PRINTF_LIKE(3, 4);
/* Checks that the caller gave as many result slots as the op has results; a mismatch is the
 * caller's bug, so it is INTERNAL, not INVALID_ARGUMENT. */
kiln_status kiln__check_result_slots(kiln_ctx *cx, const kiln__attrs *attrs, int n_results,
                                     int expected);
/* Checks that region i exists and has a function; `what` names it ("body region"). */
kiln_status kiln__check_region(kiln_ctx *cx, const kiln__attrs *attrs, int32_t i, const char *what);
/* Checks that dims are distinct and in [0, rank); `what` names the attribute. */
kiln_status kiln__check_dims(kiln_ctx *cx, const kiln__attrs *attrs, const char *what,
                             const kiln_dims *dims, int32_t rank);

#endif
