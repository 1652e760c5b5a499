/* SPDX-License-Identifier: Apache-2.0 */
/* Tensors made from values: zeros, ones, full, scalar, iota, arange, linspace. */
#include <math.h>
#include <string.h>

#include "base/ctx_internal.h"
#include "core/element.h"
#include "core/tensor_internal.h"

/* Fills t with copies of its first element. */
static void replicate_first(kiln_tensor *t) {
    size_t size = kiln_dtype_size(t->dtype);
    unsigned char *d = kiln__tensor_mutable_data(t);
    if (!d || t->nbytes <= size) return;
    /* Doubling copies: log2(n) memcpy calls. */
    size_t done = size;
    while (done < t->nbytes) {
        size_t chunk = done < t->nbytes - done ? done : t->nbytes - done;
        memcpy(d + done, d, chunk);
        done += chunk;
    }
}

/* A new tensor with every element a copy of `element` (its bytes, as stored for dtype;
 * dtype and shape are checked by the allocation). */
static kiln_tensor *new_filled(kiln_ctx *cx, const char *fn, kiln_dtype dtype, kiln_shape shape,
                               const unsigned char *element) {
    kiln_tensor *t = kiln__tensor_new(cx, fn, dtype, shape);
    if (!t || t->numel == 0) return t;
    memcpy(kiln__tensor_mutable_data(t), element, kiln_dtype_size(dtype));
    replicate_first(t);
    return t;
}

static kiln_tensor *full_checked(kiln_ctx *cx, const char *fn, kiln_dtype dtype, kiln_shape shape,
                                 double value) {
    if (!cx) return NULL;
    if (kiln_dtype_is_valid(dtype) && !kiln__element_fits(dtype, value)) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: value %.17g does not fit in %s", fn,
                           value, kiln_dtype_name(dtype));
        return NULL;
    }
    unsigned char element[16] = {0};
    kiln__element_store(element, dtype, 0, value);
    return new_filled(cx, fn, dtype, shape, element);
}

kiln_tensor *kiln_zeros(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape) {
    if (!cx) return NULL;
    kiln_tensor *t = kiln__tensor_new(cx, "kiln_zeros", dtype, shape);
    if (t && t->nbytes) memset(kiln__tensor_mutable_data(t), 0, t->nbytes);
    return t;
}

kiln_tensor *kiln_ones(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape) {
    return full_checked(cx, "kiln_ones", dtype, shape, 1.0);
}

kiln_tensor *kiln_full(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape, double value) {
    return full_checked(cx, "kiln_full", dtype, shape, value);
}

kiln_tensor *kiln_full_int(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape, int64_t value) {
    static const char fn[] = "kiln_full_int";
    if (!cx) return NULL;
    if (kiln_dtype_is_valid(dtype) && !kiln__element_fits_int(dtype, value)) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: value %lld does not fit in %s", fn,
                           (long long)value, kiln_dtype_name(dtype));
        return NULL;
    }
    unsigned char element[16] = {0};
    kiln__element_store_int(element, dtype, 0, value);
    return new_filled(cx, fn, dtype, shape, element);
}

kiln_tensor *kiln_scalar(kiln_ctx *cx, double value, kiln_dtype dtype) {
    return full_checked(cx, "kiln_scalar", dtype, KILN_SHAPE_SCALAR, value);
}

kiln_tensor *kiln_iota(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape, int32_t dim) {
    static const char fn[] = "kiln_iota";
    if (!cx) return NULL;
    if (shape.rank >= 0 && shape.rank <= KILN_MAX_RANK && (dim < 0 || dim >= shape.rank)) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: dim is %d; expected 0 to %d for a rank-%d shape", fn, (int)dim,
                           (int)shape.rank - 1, (int)shape.rank);
        return NULL;
    }
    kiln_tensor *t = kiln__tensor_new(cx, fn, dtype, shape);
    if (!t || t->numel == 0) return t;
    /* Element i's index along dim is (i / inner) % extent. */
    int64_t inner = 1;
    for (int32_t a = dim + 1; a < shape.rank; a++)
        inner *= shape.dims[a];
    int64_t extent = shape.dims[dim];
    void *d = kiln__tensor_mutable_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        kiln__element_store_int(d, dtype, i, (i / inner) % extent);
    return t;
}

kiln_tensor *kiln_arange(kiln_ctx *cx, kiln_dtype dtype, double start, double stop, double step) {
    static const char fn[] = "kiln_arange";
    if (!cx) return NULL;
    if (!isfinite(start) || !isfinite(stop) || !isfinite(step) || step == 0.0) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: start %g, stop %g and step %g must be finite, step non-zero", fn,
                           start, stop, step);
        return NULL;
    }
    double count = ceil((stop - start) / step);
    if (!(count <= 9007199254740992.0)) { /* also catches an overflowing quotient */
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: (stop - start) / step = %g elements is too many", fn, count);
        return NULL;
    }
    int64_t n = count > 0 ? (int64_t)count : 0;
    if (kiln_dtype_is_valid(dtype) && n > 0 &&
        (!kiln__element_fits(dtype, start) ||
         !kiln__element_fits(dtype, start + (double)(n - 1) * step))) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: values from %g to %g do not fit in %s",
                           fn, start, start + (double)(n - 1) * step, kiln_dtype_name(dtype));
        return NULL;
    }
    kiln_tensor *t = kiln__tensor_new(cx, fn, dtype, KILN_SHAPE(n));
    if (!t) return NULL;
    void *d = kiln__tensor_mutable_data(t);
    for (int64_t i = 0; i < n; i++)
        kiln__element_store(d, dtype, i, start + (double)i * step);
    return t;
}

kiln_tensor *kiln_linspace(kiln_ctx *cx, kiln_dtype dtype, double start, double stop, int64_t num) {
    static const char fn[] = "kiln_linspace";
    if (!cx) return NULL;
    if (!isfinite(start) || !isfinite(stop) || num < 0) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                           "%s: start %g and stop %g must be finite and num %lld >= 0", fn, start,
                           stop, (long long)num);
        return NULL;
    }
    if (kiln_dtype_is_valid(dtype) && num > 0 &&
        (!kiln__element_fits(dtype, start) || !kiln__element_fits(dtype, stop))) {
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: values from %g to %g do not fit in %s",
                           fn, start, stop, kiln_dtype_name(dtype));
        return NULL;
    }
    kiln_tensor *t = kiln__tensor_new(cx, fn, dtype, KILN_SHAPE(num));
    if (!t) return NULL;
    void *d = kiln__tensor_mutable_data(t);
    double step = num > 1 ? (stop - start) / (double)(num - 1) : 0.0;
    for (int64_t i = 0; i < num; i++)
        kiln__element_store(d, dtype, i, start + (double)i * step);
    if (num > 1) kiln__element_store(d, dtype, num - 1, stop);
    return t;
}
