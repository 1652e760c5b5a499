/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/shape.h: shapes.
 *
 * A shape is a rank and int64_t dimensions, outermost first (numpy order). Rank 0 is a
 * scalar; zero-size dimensions are allowed. Element counts and byte sizes are computed
 * with overflow checks.
 *
 *     kiln_shape s = KILN_SHAPE(2, 3, 4);     // rank 3
 *     kiln_shape scalar = KILN_SHAPE_SCALAR;  // rank 0
 *     int64_t n;
 *     if (kiln_shape_numel(&s, &n)) printf("%lld elements\n", (long long)n);
 */
#ifndef KILN_SHAPE_H
#define KILN_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/dtype.h"
#include "kiln/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest rank kiln supports. */
#define KILN_MAX_RANK 16

typedef struct kiln_shape {
    int32_t rank;
    int64_t dims[KILN_MAX_RANK];
} kiln_shape;

/* A shape from its dimensions: KILN_SHAPE(10, 10). At least one dimension; more than
 * KILN_MAX_RANK is a compile error. */
#define KILN_SHAPE(...)                                                                  \
    ((kiln_shape){.rank = (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                  .dims = {__VA_ARGS__}})
#define KILN_SHAPE_SCALAR ((kiln_shape){.rank = 0})

/* A shape from an array of `rank` dimensions. Returns false (and leaves *out_shape alone)
 * when rank is outside 0..KILN_MAX_RANK, dims is NULL with rank > 0, or a dimension is
 * negative. */
KILN_API bool kiln_shape_make(int32_t rank, const int64_t *dims, kiln_shape *out_shape);

/* True when rank is within 0..KILN_MAX_RANK and no dimension is negative. */
KILN_API bool kiln_shape_is_valid(const kiln_shape *shape);

/* The element count. Returns false when the shape is invalid or the product of its
 * non-zero dimensions overflows int64_t: a zero-size tensor is empty, but its strides
 * must still be representable, so [0, 2^62, 3] is refused. */
KILN_API bool kiln_shape_numel(const kiln_shape *shape, int64_t *out_numel);

/* numel * kiln_dtype_size(dtype). Returns false on an invalid shape or dtype, or when the
 * size overflows size_t or int64_t, counting the non-zero dimensions of an empty shape
 * (so that every byte offset of a valid shape fits). */
KILN_API bool kiln_shape_nbytes(const kiln_shape *shape, kiln_dtype dtype, size_t *out_nbytes);

/* True when both shapes have the same rank and dimensions (the unused tail is ignored). */
KILN_API bool kiln_shape_equal(const kiln_shape *a, const kiln_shape *b);

/* Writes "[2,3,4]" ("[]" for a scalar) into buf, truncated to fit and always terminated
 * when size > 0. Returns the length the full text needs, like snprintf. */
KILN_API int kiln_shape_format(const kiln_shape *shape, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
