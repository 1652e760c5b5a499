/* SPDX-License-Identifier: Apache-2.0 */
/* Inference for control flow (while, if, case, call, optimization_barrier) and sources
 * (constant, iota, rng_bit_generator): the spec's constraints that can be checked before
 * anything runs. The result types of if, case and call are known only once a region has
 * run, so for those the kernel checks what the regions return. */
#include <stdio.h>

#include "ops/custom_call.h"
#include "ops/infer.h"

/* Checks a result type given as attributes (iota, rng_bit_generator): a valid dtype, a
 * rank within KILN_MAX_RANK and no negative dimension. */
static kiln_status check_type_attr(kiln_ctx *cx, const kiln__attrs *attrs, kiln_dtype dtype,
                                   const kiln_shape *shape) {
    if (!kiln_dtype_is_valid(dtype))
        return kiln__infer_error(cx, attrs, "dtype %d is not a valid kiln_dtype", (int)dtype);
    if (shape->rank < 0 || shape->rank > KILN_MAX_RANK)
        return kiln__infer_error(cx, attrs, "shape has rank %d; expected 0 to %d (KILN_MAX_RANK)",
                                 (int)shape->rank, KILN_MAX_RANK);
    for (int32_t d = 0; d < shape->rank; d++) {
        if (shape->dims[d] < 0) {
            char text[KILN__SHAPE_TEXT];
            return kiln__infer_error(cx, attrs, "shape %s has a negative dimension at axis %d",
                                     kiln__shape_text(shape, text), (int)d);
        }
    }
    return KILN_OK;
}

/* Checks that `t` is a rank-0 tensor of `dtype`; `what` names it. */
static kiln_status check_scalar(kiln_ctx *cx, const kiln__attrs *attrs, const char *what,
                                const kiln__type *t, kiln_dtype dtype) {
    if (t->dtype == dtype && t->shape.rank == 0) return KILN_OK;
    char have[KILN__TYPE_TEXT];
    return kiln__infer_error(cx, attrs, "%s has type %s; expected a rank-0 %s tensor", what,
                             kiln__type_text(t, have), kiln_dtype_name(dtype));
}

KILN__INFER(WHILE) {
    kiln_status s = kiln__check_result_slots(cx, attrs, n_results, n_operands);
    if (s != KILN_OK) return s;
    if (attrs->n_regions != 2)
        return kiln__infer_error(cx, attrs, "has %d regions; expected 2 (cond, body)",
                                 (int)attrs->n_regions);
    if ((s = kiln__check_region(cx, attrs, 0, "cond region")) != KILN_OK) return s;
    if ((s = kiln__check_region(cx, attrs, 1, "body region")) != KILN_OK) return s;
    /* (C3): the results have the types of the operands. */
    for (int i = 0; i < n_operands; i++)
        results[i] = operands[i];
    return KILN_OK;
}

KILN__INFER(IF) {
    (void)n_operands, (void)results, (void)n_results;
    kiln_status s = check_scalar(cx, attrs, "pred", &operands[0], KILN_BOOL);
    if (s != KILN_OK) return s;
    if (attrs->n_regions != 2)
        return kiln__infer_error(cx, attrs, "has %d regions; expected 2 (true, false)",
                                 (int)attrs->n_regions);
    if ((s = kiln__check_region(cx, attrs, 0, "true branch")) != KILN_OK) return s;
    return kiln__check_region(cx, attrs, 1, "false branch");
}

KILN__INFER(CASE) {
    (void)n_operands, (void)results, (void)n_results;
    kiln_status s = check_scalar(cx, attrs, "index", &operands[0], KILN_I32);
    if (s != KILN_OK) return s;
    /* (C1) */
    if (attrs->n_regions < 1)
        return kiln__infer_error(cx, attrs, "has %d branches; expected at least 1",
                                 (int)attrs->n_regions);
    for (int32_t i = 0; i < attrs->n_regions; i++) {
        char what[32];
        snprintf(what, sizeof what, "branch %d", (int)i);
        if ((s = kiln__check_region(cx, attrs, i, what)) != KILN_OK) return s;
    }
    return KILN_OK;
}

KILN__INFER(CALL) {
    (void)operands, (void)n_operands, (void)results, (void)n_results;
    if (attrs->n_regions != 1)
        return kiln__infer_error(cx, attrs, "has %d regions; expected 1 (the callee)",
                                 (int)attrs->n_regions);
    return kiln__check_region(cx, attrs, 0, "callee");
}

KILN__INFER(OPTIMIZATION_BARRIER) {
    kiln_status s = kiln__check_result_slots(cx, attrs, n_results, n_operands);
    if (s != KILN_OK) return s;
    for (int i = 0; i < n_operands; i++) /* (C1) */
        results[i] = operands[i];
    return KILN_OK;
}

KILN__INFER(CONSTANT) {
    (void)operands, (void)n_operands, (void)n_results;
    const kiln_tensor *value = attrs->u.constant;
    if (!value) return kiln__infer_error(cx, attrs, "the constant's value is NULL");
    results[0].dtype = kiln_tensor_dtype(value); /* (C1) */
    results[0].shape = *kiln_tensor_shape(value);
    return KILN_OK;
}

KILN__INFER(IOTA) {
    (void)operands, (void)n_operands, (void)n_results;
    const kiln_shape *shape = &attrs->u.iota.shape;
    kiln_status s = check_type_attr(cx, attrs, attrs->u.iota.dtype, shape);
    if (s != KILN_OK) return s;
    int64_t dim = attrs->u.iota.dimension;
    if (dim < 0 || dim >= shape->rank) { /* (C1) */
        if (shape->rank == 0)
            return kiln__infer_error(cx, attrs,
                                     "iota dimension is %lld, but a rank-0 shape has no "
                                     "dimension; expected a shape of rank >= 1",
                                     (long long)dim);
        return kiln__infer_error(cx, attrs,
                                 "iota dimension is %lld; expected 0 to %d for a rank-%d shape",
                                 (long long)dim, (int)shape->rank - 1, (int)shape->rank);
    }
    results[0].dtype = attrs->u.iota.dtype;
    results[0].shape = *shape;
    return KILN_OK;
}

KILN__INFER(RNG_BIT_GENERATOR) {
    (void)n_operands, (void)n_results;
    kiln_rng_algorithm alg = attrs->u.rng.algorithm;
    const char *alg_name;
    int64_t lo = 2, hi = 3;
    switch (alg) {
    case KILN_RNG_DEFAULT: alg_name = "DEFAULT (PHILOX)"; break;
    case KILN_RNG_PHILOX: alg_name = "PHILOX"; break;
    case KILN_RNG_THREE_FRY:
        alg_name = "THREE_FRY";
        hi = 2;
        break;
    default:
        return kiln__infer_error(cx, attrs,
                                 "algorithm %d is not a kiln_rng_algorithm (DEFAULT, THREE_FRY "
                                 "or PHILOX)",
                                 (int)alg);
    }
    /* (I2), (C2): a ui64 vector of 2 (THREE_FRY) or 2 or 3 (PHILOX, DEFAULT) words. */
    const kiln__type *state = &operands[0];
    if (state->dtype != KILN_U64 || state->shape.rank != 1 || state->shape.dims[0] < lo ||
        state->shape.dims[0] > hi) {
        char have[KILN__TYPE_TEXT];
        if (lo == hi)
            return kiln__infer_error(cx, attrs, "state has type %s; expected ui64[%lld] for %s",
                                     kiln__type_text(state, have), (long long)lo, alg_name);
        return kiln__infer_error(
            cx, attrs, "state has type %s; expected ui64[%lld] or ui64[%lld] for %s",
            kiln__type_text(state, have), (long long)lo, (long long)hi, alg_name);
    }
    kiln_dtype dtype = attrs->u.rng.dtype;
    kiln_status s = check_type_attr(cx, attrs, dtype, &attrs->u.rng.shape);
    if (s != KILN_OK) return s;
    if (dtype == KILN_BOOL || kiln_dtype_is_complex(dtype)) /* the spec: integer or float */
        return kiln__infer_error(cx, attrs,
                                 "output dtype is %s; expected an integer or floating-point type",
                                 kiln_dtype_name(dtype));
    results[0] = *state; /* (C1) */
    results[1].dtype = dtype;
    results[1].shape = attrs->u.rng.shape;
    return KILN_OK;
}

/* custom_call: what kiln does not know it cannot infer; its result types are the text's,
 * kept in its record. */
KILN__INFER(CUSTOM_CALL) {
    (void)operands, (void)n_operands;
    int32_t n = kiln__custom_call_results(attrs, results, n_results);
    if (n < 0) return kiln__infer_error(cx, attrs, "stablehlo.custom_call without its record");
    if (n != n_results)
        return kiln__infer_error(cx, attrs, "stablehlo.custom_call has %d results; asked for %d",
                                 (int)n, n_results);
    return KILN_OK;
}

/* map: inputs of one shape (C1), dimensions = [0, rank) (C3), a computation of as many
 * scalars as inputs (its types are checked where it is traced or read); the result has the
 * inputs' shape and the computation's result dtype (C4, C6). */
KILN__INFER(MAP) {
    (void)n_results;
    if (n_operands < 1) return kiln__infer_error(cx, attrs, "stablehlo.map needs an input");
    if (!kiln__attrs_region(attrs, 0))
        return kiln__infer_error(cx, attrs, "stablehlo.map needs a computation");
    char have[KILN__TYPE_TEXT], want[KILN__TYPE_TEXT];
    for (int i = 1; i < n_operands; i++)
        if (!kiln_shape_equal(&operands[i].shape, &operands[0].shape))
            return kiln__infer_error(cx, attrs,
                                     "input %d is %s; input 0 is %s: map's inputs "
                                     "have one shape",
                                     i, kiln__type_text(&operands[i], have),
                                     kiln__type_text(&operands[0], want));
    const kiln_dims *d = &attrs->u.map_dims;
    bool every = d->count == operands[0].shape.rank;
    for (int32_t i = 0; every && i < d->count; i++)
        every = d->v[i] == i;
    if (!every)
        return kiln__infer_error(cx, attrs, "dimensions must be every dimension in order, [0, %d)",
                                 (int)operands[0].shape.rank);
    if (!kiln_dtype_is_valid(attrs->result_dtype))
        return kiln__infer_error(cx, attrs, "result dtype %d is not a dtype",
                                 (int)attrs->result_dtype);
    results[0].dtype = attrs->result_dtype;
    results[0].shape = operands[0].shape;
    return KILN_OK;
}

/* after_all: tokens in, a token out (C1). */
KILN__INFER(AFTER_ALL) {
    for (int i = 0; i < n_operands; i++)
        if (!kiln__is_token(&operands[i])) {
            char t[KILN__TYPE_TEXT];
            return kiln__infer_error(cx, attrs, "operand %d is %s; after_all joins tokens", i + 1,
                                     kiln__type_text(&operands[i], t));
        }
    (void)n_results;
    results[0] = kiln__token_type();
    return KILN_OK;
}

KILN__INFER(CREATE_TOKEN) {
    (void)cx, (void)attrs, (void)operands, (void)n_operands, (void)n_results;
    results[0] = kiln__token_type();
    return KILN_OK;
}

/* tuple: its type (declared, in attrs) has the operands' types as its elements. */
KILN__INFER(TUPLE) {
    (void)n_results;
    const kiln__type *t = attrs->u.tuple_type;
    if (!t || !kiln__is_tuple(t) || !t->tuple)
        return kiln__infer_error(cx, attrs, "stablehlo.tuple without its tuple type");
    if (t->tuple->n != n_operands)
        return kiln__infer_error(cx, attrs, "the tuple type has %d elements; %d operands",
                                 (int)t->tuple->n, n_operands);
    for (int i = 0; i < n_operands; i++)
        if (!kiln__type_equal(&operands[i], &t->tuple->elems[i])) {
            char have[KILN__TYPE_TEXT], want[KILN__TYPE_TEXT];
            return kiln__infer_error(cx, attrs, "operand %d is %s; the tuple type's element is %s",
                                     i + 1, kiln__type_text(&operands[i], have),
                                     kiln__type_text(&t->tuple->elems[i], want));
        }
    results[0] = *t;
    return KILN_OK;
}

/* get_tuple_element: an index of the tuple (C1), its element's type (C2). */
KILN__INFER(GET_TUPLE_ELEMENT) {
    (void)n_operands, (void)n_results;
    const kiln__type *t = &operands[0];
    if (!kiln__is_tuple(t) || !t->tuple) {
        char have[KILN__TYPE_TEXT];
        return kiln__infer_error(cx, attrs, "operand 1 is %s; expected a tuple",
                                 kiln__type_text(t, have));
    }
    int64_t i = attrs->u.tuple_index;
    if (i < 0 || i >= t->tuple->n)
        return kiln__infer_error(cx, attrs, "index is %lld; the tuple has %d elements",
                                 (long long)i, (int)t->tuple->n);
    results[0] = t->tuple->elems[i];
    return KILN_OK;
}
