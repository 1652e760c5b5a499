/* SPDX-License-Identifier: Apache-2.0 */
/* The dynamic-shape ops' static forms (dynamic.h). */
#include "ops/dynamic.h"

#include <string.h>

#include "core/element.h"

int32_t kiln__dynamic_data_operands(kiln_op kind) {
    switch (kind) {
    case KILN_OP_DYNAMIC_IOTA: return 0;
    case KILN_OP_DYNAMIC_BROADCAST_IN_DIM:
    case KILN_OP_DYNAMIC_RESHAPE: return 1;
    case KILN_OP_DYNAMIC_PAD:
    case KILN_OP_DYNAMIC_GATHER:
    case KILN_OP_DYNAMIC_CONV: return 2;
    default: return -1;
    }
}

static const char *op_text_name(kiln_op kind) {
    switch (kind) {
    case KILN_OP_DYNAMIC_IOTA: return "stablehlo.dynamic_iota";
    case KILN_OP_DYNAMIC_BROADCAST_IN_DIM: return "stablehlo.dynamic_broadcast_in_dim";
    case KILN_OP_DYNAMIC_RESHAPE: return "stablehlo.dynamic_reshape";
    case KILN_OP_DYNAMIC_PAD: return "stablehlo.dynamic_pad";
    case KILN_OP_DYNAMIC_GATHER: return "stablehlo.dynamic_gather";
    case KILN_OP_DYNAMIC_CONV: return "stablehlo.dynamic_conv";
    default: return "kiln";
    }
}

/* The shape operand's name in the spec, for messages. */
static const char *shape_operand_name(kiln_op kind, int32_t i) {
    switch (kind) {
    case KILN_OP_DYNAMIC_IOTA:
    case KILN_OP_DYNAMIC_RESHAPE: return "output_shape";
    case KILN_OP_DYNAMIC_BROADCAST_IN_DIM: return "output_dimensions";
    case KILN_OP_DYNAMIC_PAD: {
        static const char *const names[] = {"edge_padding_low", "edge_padding_high",
                                            "interior_padding"};
        return i >= 0 && i < 3 ? names[i] : "padding";
    }
    case KILN_OP_DYNAMIC_GATHER: return "slice_sizes";
    default: return "padding";
    }
}

/* The values of a shape operand that lists the result's dimensions, checked against the
 * declared result shape. */
static kiln_status check_output_shape(kiln_ctx *cx, const kiln__attrs *a, kiln_op kind,
                                      const kiln__type *shape_operand, const int64_t *v,
                                      const kiln_shape *declared) {
    int64_t n = shape_operand->shape.rank == 1 ? shape_operand->shape.dims[0] : -1;
    bool same = n == declared->rank;
    for (int32_t d = 0; same && d < declared->rank; d++)
        same = v[d] == declared->dims[d];
    if (same) return KILN_OK;
    char want[KILN__SHAPE_TEXT], have[KILN__SHAPE_TEXT * 2] = "[";
    size_t at = 1;
    for (int64_t i = 0; i < n && i < KILN_MAX_RANK; i++)
        at +=
            (size_t)snprintf(have + at, sizeof have - at, "%s%lld", i ? "," : "", (long long)v[i]);
    snprintf(have + at, sizeof have - at, "]");
    return kiln__infer_error(cx, a, "%s is %s; the result type's shape is %s",
                             shape_operand_name(kind, 0), have, kiln__shape_text(declared, want));
}

/* A kiln_dims of n values (n <= KILN_MAX_RANK, which the inference checked). */
static kiln_dims dims_of(const int64_t *v, int64_t n, int64_t stride, int64_t first) {
    kiln_dims d = {.count = (int32_t)n};
    for (int64_t i = 0; i < n; i++)
        d.v[i] = v[i * stride + first];
    return d;
}

kiln_status kiln__dynamic_static_form(kiln_ctx *cx, kiln_op kind, const kiln__attrs *a,
                                      const kiln__type *operands, int32_t n_operands,
                                      const kiln__type *result, const int64_t *const *values,
                                      kiln__static_form *out) {
    /* an op's attributes hold only its kind's member (attrs.h): copied so, not whole */
    kiln__attrs named;
    memset(&named, 0, sizeof named);
    kiln__attrs_copy(&named, a, kind);
    named.fn = op_text_name(kind); /* the messages name the op (the parser's fn, itself) */
    named.fn = op_text_name(kind);
    int32_t data = kiln__dynamic_data_operands(kind);
    if (data < 0 || n_operands <= data)
        return kiln_ctx_set_error(cx, KILN_INTERNAL, "%s is not a dynamic-shape op",
                                  kiln__op_get_info(kind)->name);
    /* the shape operands' lengths: what the inference checked, at most KILN_MAX_RANK each
     * (a padding: 2 per dimension) */
    int64_t most = kind == KILN_OP_DYNAMIC_CONV ? 2 * KILN_MAX_RANK : KILN_MAX_RANK;
    for (int32_t i = data; i < n_operands; i++) {
        int64_t n = 0;
        if (!kiln_shape_numel(&operands[i].shape, &n) || n > most)
            return kiln__infer_error(cx, &named, "%s has %lld values; expected at most %lld",
                                     shape_operand_name(kind, i - data), (long long)n,
                                     (long long)most);
    }
    kiln__static_form f = {.n_operands = data};
    f.attrs = named;
    memset(&f.attrs.u, 0, sizeof f.attrs.u);
    const kiln__type *s0 = &operands[data];
    int64_t n0 = s0->shape.rank == 1 ? s0->shape.dims[0] : 0;
    kiln_status s = KILN_OK;
    switch (kind) {
    case KILN_OP_DYNAMIC_IOTA:
        f.kind = KILN_OP_IOTA;
        f.attrs.u.iota = a->u.iota;
        s = check_output_shape(cx, &named, kind, s0, values[0], &result->shape);
        break;
    case KILN_OP_DYNAMIC_BROADCAST_IN_DIM:
        f.kind = KILN_OP_BROADCAST_IN_DIM;
        f.attrs.u.broadcast.shape = a->u.dynamic_broadcast.shape;
        f.attrs.u.broadcast.dims = a->u.dynamic_broadcast.dims;
        s = check_output_shape(cx, &named, kind, s0, values[0], &result->shape);
        break;
    case KILN_OP_DYNAMIC_RESHAPE:
        f.kind = KILN_OP_RESHAPE;
        f.attrs.u.reshape = a->u.reshape;
        s = check_output_shape(cx, &named, kind, s0, values[0], &result->shape);
        break;
    case KILN_OP_DYNAMIC_PAD:
        f.kind = KILN_OP_PAD;
        f.attrs.u.pad.low = dims_of(values[0], n0, 1, 0);
        f.attrs.u.pad.high = dims_of(values[1], n0, 1, 0);
        f.attrs.u.pad.interior = dims_of(values[2], n0, 1, 0);
        break;
    case KILN_OP_DYNAMIC_GATHER:
        f.kind = KILN_OP_GATHER;
        f.attrs.u.gather = a->u.gather;
        f.attrs.u.gather.slice_sizes = dims_of(values[0], n0, 1, 0);
        break;
    case KILN_OP_DYNAMIC_CONV: {
        f.kind = KILN_OP_CONVOLUTION;
        f.attrs.u.conv = a->u.dynamic_conv.conv;
        /* padding: [spatial dimensions, 2], each row (low, high) */
        int64_t rows = s0->shape.rank == 2 ? s0->shape.dims[0] : 0;
        f.attrs.u.conv.padding_low = dims_of(values[0], rows, 2, 0);
        f.attrs.u.conv.padding_high = dims_of(values[0], rows, 2, 1);
        break;
    }
    default: break;
    }
    if (s != KILN_OK) return s;
    /* The static op's own checks, and its result type against the declared one. */
    kiln__type got;
    s = kiln__infer(cx, f.kind, &f.attrs, operands, data, &got, 1);
    if (s != KILN_OK) return s;
    if (got.dtype != result->dtype || !kiln_shape_equal(&got.shape, &result->shape)) {
        char have[KILN__TYPE_TEXT], want[KILN__TYPE_TEXT];
        const char *what = kind == KILN_OP_DYNAMIC_PAD      ? "the paddings give"
                           : kind == KILN_OP_DYNAMIC_GATHER ? "slice_sizes give"
                                                            : "the padding gives";
        return kiln__infer_error(cx, &named, "%s a result of type %s; the result type is %s", what,
                                 kiln__type_text(&got, have), kiln__type_text(result, want));
    }
    *out = f;
    return KILN_OK;
}

void kiln__gather_sizes_from_type(kiln_gather_params *g, int32_t operand_rank,
                                  const kiln_shape *result) {
    kiln_dims sizes = {.count = operand_rank > KILN_MAX_RANK ? KILN_MAX_RANK : operand_rank};
    int32_t offset = 0;
    for (int32_t d = 0; d < sizes.count; d++) {
        bool one = false;
        for (int32_t k = 0; k < g->collapsed_slice_dims.count; k++)
            one |= g->collapsed_slice_dims.v[k] == d;
        for (int32_t k = 0; k < g->operand_batching_dims.count; k++)
            one |= g->operand_batching_dims.v[k] == d;
        if (one) {
            sizes.v[d] = 1;
            continue;
        }
        int64_t at = offset < g->offset_dims.count ? g->offset_dims.v[offset] : -1;
        offset++;
        /* an offset dimension outside the result: gather's inference says so */
        sizes.v[d] = at >= 0 && at < result->rank ? result->dims[at] : 0;
    }
    g->slice_sizes = sizes;
}

bool kiln__dynamic_values(const kiln_tensor *t, int64_t *out, int64_t cap) {
    kiln_dtype dt = kiln_tensor_dtype(t);
    int64_t n = kiln_tensor_numel(t);
    if (!kiln_dtype_is_integer(dt) || dt == KILN_BOOL || n > cap) return false;
    const void *p = kiln_tensor_data(t);
    if (n > 0 && !p) return false;
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case KILN_I8: out[i] = ((const int8_t *)p)[i]; break;
        case KILN_I16: out[i] = ((const int16_t *)p)[i]; break;
        case KILN_I32: out[i] = ((const int32_t *)p)[i]; break;
        case KILN_I64: out[i] = ((const int64_t *)p)[i]; break;
        case KILN_U8: out[i] = ((const uint8_t *)p)[i]; break;
        case KILN_U16: out[i] = ((const uint16_t *)p)[i]; break;
        case KILN_U32: out[i] = ((const uint32_t *)p)[i]; break;
        case KILN_U64: {
            uint64_t v = ((const uint64_t *)p)[i];
            out[i] = v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
            break;
        }
        default: out[i] = kiln__narrow_value(dt, ((const uint8_t *)p)[i]); break;
        }
    }
    return true;
}
