/* SPDX-License-Identifier: Apache-2.0 */
#include "kiln/shape.h"

#include <stdio.h>
#include <string.h>

bool kiln_shape_is_valid(const kiln_shape *shape) {
    if (!shape || shape->rank < 0 || shape->rank > KILN_MAX_RANK) return false;
    for (int32_t i = 0; i < shape->rank; i++)
        if (shape->dims[i] < 0) return false;
    return true;
}

bool kiln_shape_make(int32_t rank, const int64_t *dims, kiln_shape *out_shape) {
    if (!out_shape || rank < 0 || rank > KILN_MAX_RANK || (rank > 0 && !dims)) return false;
    kiln_shape s = {.rank = rank};
    for (int32_t i = 0; i < rank; i++) {
        if (dims[i] < 0) return false;
        s.dims[i] = dims[i];
    }
    *out_shape = s;
    return true;
}

/* The product of the non-zero dimensions: every stride and element offset of the shape
 * is at most this, so it must fit even when a zero dimension makes the tensor empty
 * (tensor<0x4611686018427387904x3xf32> has a stride of 3 * 2^62). */
static bool extent(const kiln_shape *shape, int64_t *out, bool *empty) {
    int64_t n = 1;
    *empty = false;
    for (int32_t i = 0; i < shape->rank; i++) {
        if (shape->dims[i] == 0) {
            *empty = true;
            continue;
        }
        if (__builtin_mul_overflow(n, shape->dims[i], &n)) return false;
    }
    *out = n;
    return true;
}

bool kiln_shape_numel(const kiln_shape *shape, int64_t *out_numel) {
    if (!kiln_shape_is_valid(shape) || !out_numel) return false;
    int64_t n;
    bool empty;
    if (!extent(shape, &n, &empty)) return false;
    *out_numel = empty ? 0 : n;
    return true;
}

bool kiln_shape_nbytes(const kiln_shape *shape, kiln_dtype dtype, size_t *out_nbytes) {
    if (!kiln_dtype_is_valid(dtype) || !out_nbytes || !kiln_shape_is_valid(shape)) return false;
    int64_t n, bytes;
    bool empty;
    if (!extent(shape, &n, &empty)) return false;
    /* The byte offset of the last element position must fit as well. */
    if (__builtin_mul_overflow(n, (int64_t)kiln_dtype_size(dtype), &bytes)) return false;
    if ((uint64_t)bytes > (uint64_t)SIZE_MAX) return false;
    *out_nbytes = empty ? 0 : (size_t)bytes;
    return true;
}

bool kiln_shape_equal(const kiln_shape *a, const kiln_shape *b) {
    if (!a || !b || a->rank != b->rank || a->rank < 0 || a->rank > KILN_MAX_RANK) return false;
    return memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) == 0;
}

int kiln_shape_format(const kiln_shape *shape, char *buf, size_t size) {
    char tmp[KILN_MAX_RANK * 21 + 3];
    size_t n = 0;
    tmp[n++] = '[';
    int32_t rank = shape ? shape->rank : 0;
    if (rank < 0 || rank > KILN_MAX_RANK) rank = 0;
    for (int32_t i = 0; i < rank; i++) {
        n += (size_t)snprintf(tmp + n, sizeof tmp - n, "%s%lld", i ? "," : "",
                              (long long)shape->dims[i]);
    }
    tmp[n++] = ']';
    tmp[n] = '\0';
    if (buf && size > 0) snprintf(buf, size, "%s", tmp);
    return (int)n;
}
