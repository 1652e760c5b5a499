/* SPDX-License-Identifier: Apache-2.0 */
/* The part of a kiln__attrs each kind of op uses (attrs.h). */
#include "ops/attrs.h"

#include <string.h>

#define MEMBER(m) (offsetof(kiln__attrs, u) + sizeof(((kiln__attrs *)0)->u.m))

size_t kiln__attrs_size(kiln_op kind) {
    switch (kind) {
    case KILN_OP_COMPARE: return MEMBER(compare);
    case KILN_OP_CONVERT:
    case KILN_OP_BITCAST_CONVERT: return MEMBER(convert_to);
    case KILN_OP_REDUCE_PRECISION: return MEMBER(precision);
    /* a call: a record a transform attached; a custom_call: its attributes (custom_call.h) */
    case KILN_OP_CONSTANT:
    case KILN_OP_CALL:
    case KILN_OP_CUSTOM_CALL: return MEMBER(constant);
    case KILN_OP_IOTA: return MEMBER(iota);
    case KILN_OP_RNG_BIT_GENERATOR: return MEMBER(rng);
    case KILN_OP_BROADCAST_IN_DIM: return MEMBER(broadcast);
    case KILN_OP_DYNAMIC_IOTA: return MEMBER(iota);
    case KILN_OP_DYNAMIC_BROADCAST_IN_DIM: return MEMBER(dynamic_broadcast);
    case KILN_OP_DYNAMIC_RESHAPE: return MEMBER(reshape);
    case KILN_OP_DYNAMIC_PAD: return MEMBER(result_shape);
    case KILN_OP_DYNAMIC_GATHER: return MEMBER(gather);
    case KILN_OP_DYNAMIC_CONV: return MEMBER(dynamic_conv);
    case KILN_OP_GET_DIMENSION_SIZE: return MEMBER(dimension);
    case KILN_OP_TUPLE: return MEMBER(tuple_type);
    case KILN_OP_GET_TUPLE_ELEMENT: return MEMBER(tuple_index);
    case KILN_OP_RESHAPE: return MEMBER(reshape);
    case KILN_OP_TRANSPOSE: return MEMBER(permutation);
    case KILN_OP_REVERSE: return MEMBER(reverse_dims);
    case KILN_OP_SLICE: return MEMBER(slice);
    case KILN_OP_DYNAMIC_SLICE: return MEMBER(slice_sizes);
    case KILN_OP_PAD: return MEMBER(pad);
    case KILN_OP_CONCATENATE: return MEMBER(dimension);
    case KILN_OP_GATHER: return MEMBER(gather);
    case KILN_OP_SCATTER: return MEMBER(scatter);
    case KILN_OP_SORT: return MEMBER(sort);
    case KILN_OP_REDUCE: return MEMBER(reduce_dims);
    case KILN_OP_MAP: return MEMBER(map_dims);
    case KILN_OP_REDUCE_WINDOW:
    case KILN_OP_SELECT_AND_SCATTER: return MEMBER(window);
    case KILN_OP_DOT_GENERAL: return MEMBER(dot);
    case KILN_OP_CONVOLUTION: return MEMBER(conv);
    case KILN_OP_FFT: return MEMBER(fft);
    case KILN_OP_TRIANGULAR_SOLVE:
    case KILN_OP_CHOLESKY: return MEMBER(triangular);
    case KILN_OP_WHILE: return MEMBER(loop);
    case KILN_OP_ALL_REDUCE:
    case KILN_OP_ALL_GATHER:
    case KILN_OP_REDUCE_SCATTER:
    case KILN_OP_ALL_TO_ALL:
    case KILN_OP_COLLECTIVE_PERMUTE:
    case KILN_OP_COLLECTIVE_BROADCAST:
    case KILN_OP_COLLECTIVE_REDUCE: return MEMBER(collective);
    case KILN_OP_RUN_PARALLEL: return MEMBER(grid);
    default: return offsetof(kiln__attrs, u);
    }
}

kiln_compare_type kiln__compare_type_of(kiln_dtype dtype) {
    if (kiln_dtype_is_float(dtype) || kiln_dtype_is_complex(dtype)) return KILN_CMP_FLOAT;
    return kiln_dtype_is_signed(dtype) ? KILN_CMP_SIGNED : KILN_CMP_UNSIGNED;
}

void kiln__attrs_copy(kiln__attrs *dst, const kiln__attrs *src, kiln_op kind) {
    memcpy(dst, src, kiln__attrs_size(kind));
}
