/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/tensor.h: tensors: creation, reading back, printing, lifetime.
 *
 * A kiln_tensor is an n-dimensional array of one dtype on one device, backed by
 * refcounted storage. Every function that makes a tensor returns it owned by the ctx's
 * innermost scope (kiln/ctx.h), or NULL with the error recorded in the ctx; a NULL
 * tensor argument makes them return NULL without touching the first error, so calls chain:
 *
 *     kiln_scope_begin(cx);
 *     kiln_tensor *x = kiln_iota(cx, KILN_F32, KILN_SHAPE(2, 3), 1);
 *     kiln_tensor *y = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2), (float[]){1, 2},
 *                                            2 * sizeof(float));
 *     kiln_tensor_print(cx, x, stdout);        // f32[2,3] [[0, 1, 2], [0, 1, 2]]
 *     float back[6];
 *     kiln_tensor_to_host(cx, x, back, sizeof back);
 *     if (kiln_ctx_status(cx) != KILN_OK) fprintf(stderr, "%s\n", kiln_ctx_error_message(cx));
 *     kiln_tensor *kept = kiln_tensor_retain(x);   // survives the scope
 *     kiln_scope_end(cx);                          // releases y (and the scope's ref to x)
 *     kiln_tensor_release(kept);
 *
 * Tensors are immutable once made. Reference counts are atomic, so a retained tensor may
 * be read and released on any thread; a tensor still owned by a scope must be released
 * on its ctx's thread. Unless stated otherwise, functions taking a ctx have the ctx's
 * (lack of) thread-safety.
 *
 * Memory: a tensor's data lives while any tensor viewing it does. When the last goes, the
 * data returns to the ctx's buffer cache (kiln/ctx.h) at once, and the next tensor of about
 * its size takes it. So an eager loop that ends a scope per iteration, or releases each
 * temporary (kiln_tensor_release) as soon as it has served, runs in warm memory, and its
 * peak is what is alive at once, not every temporary it made:
 *
 *     kiln_tensor *t = kiln_multiply(cx, x, x);
 *     kiln_tensor *e = kiln_exponential(cx, kiln_negate(cx, t));
 *     kiln_tensor_release(t);   // t's memory serves the next result
 *
 * kiln_move (below) goes further: the next elementwise op writes its result over the moved
 * temporary when nothing else can see it.
 */
#ifndef KILN_TENSOR_H
#define KILN_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln/ctx.h"
#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/export.h"
#include "kiln/shape.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_tensor kiln_tensor;

/* ---- creation ---------------------------------------------------------------------- */
/* Errors common to all of these: INVALID_ARGUMENT for a NULL ctx-less argument, an invalid
 * dtype or shape, or a byte size that overflows; RESOURCE_EXHAUSTED when memory runs out.
 * Messages name the function and the argument. */

/* A tensor holding a copy of `nbytes` bytes at `data`, row-major; nbytes must equal the
 * shape's byte size (data may be NULL only when it is 0). */
KILN_API kiln_tensor *kiln_tensor_from_host(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape,
                                            const void *data, size_t nbytes);

/* Called once when the last tensor using wrapped memory goes away. */
typedef void (*kiln_deleter_fn)(void *data, void *user);

/* A tensor over the caller's memory without copying. `data` must hold `nbytes` bytes,
 * equal to the shape's byte size, aligned to the dtype's size, and must not change while
 * the tensor lives. kiln only reads it (it may be read-only memory): donating the tensor to
 * kiln_exe_call kills the tensor as usual, but the result aliased to it goes to fresh
 * memory and the caller's array keeps its values. When the last reference goes,
 * `deleter(data, user)` is called (if not NULL). On failure NULL is returned and the
 * deleter is NOT called: the memory stays the caller's. */
KILN_API kiln_tensor *kiln_tensor_wrap_host(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape,
                                            void *data, size_t nbytes, kiln_deleter_fn deleter,
                                            void *user);
/* kiln_tensor_wrap_host over memory that kiln may also write: donating the tensor lets the
 * result aliased to it take the memory in place (as for kiln's own buffers), so the
 * caller's array then holds that result, and the deleter runs when the last tensor using
 * the memory (the result included) goes. Same arguments and errors. */
KILN_API kiln_tensor *kiln_tensor_wrap_host_writable(kiln_ctx *cx, kiln_dtype dtype,
                                                     kiln_shape shape, void *data, size_t nbytes,
                                                     kiln_deleter_fn deleter, void *user);

/* Tensors filled with 0, 1, or `value`. Integer dtypes truncate a fractional value toward
 * zero (as numpy does); a value outside the dtype's range, or NaN for an integer or bool,
 * is INVALID_ARGUMENT. For bool, any non-zero value is true. */
KILN_API kiln_tensor *kiln_zeros(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape);
KILN_API kiln_tensor *kiln_ones(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape);
KILN_API kiln_tensor *kiln_full(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape, double value);
/* kiln_full for integers beyond double's 53-bit precision (any dtype). */
KILN_API kiln_tensor *kiln_full_int(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape,
                                    int64_t value);
/* A rank-0 tensor: kiln_full(cx, dtype, KILN_SHAPE_SCALAR, value). */
KILN_API kiln_tensor *kiln_scalar(kiln_ctx *cx, double value, kiln_dtype dtype);

/* StableHLO iota: element [i0, i1, ...] holds i_dim, the index along `dim`. dim must be in
 * 0..rank-1 (so rank >= 1). Values past the dtype's range wrap for integers (as the spec's
 * convert does not define; kiln wraps modulo 2^bits) and round for floats. */
KILN_API kiln_tensor *kiln_iota(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape, int32_t dim);

/* numpy.arange: a rank-1 tensor of ceil((stop - start) / step) elements start + i*step
 * (0 elements when that is negative). step 0, a non-finite argument, or more than 2^53
 * elements is INVALID_ARGUMENT. */
KILN_API kiln_tensor *kiln_arange(kiln_ctx *cx, kiln_dtype dtype, double start, double stop,
                                  double step);

/* numpy.linspace with endpoint=True: `num` evenly spaced values from start to stop, both
 * included (the last is exactly stop). num < 0 or a non-finite bound is INVALID_ARGUMENT. */
KILN_API kiln_tensor *kiln_linspace(kiln_ctx *cx, kiln_dtype dtype, double start, double stop,
                                    int64_t num);

/* ---- reading ----------------------------------------------------------------------- */

/* Properties. On a NULL tensor they return an invalid dtype / rank -1 / 0 / NULL. */
KILN_API kiln_dtype kiln_tensor_dtype(const kiln_tensor *t);
KILN_API int32_t kiln_tensor_rank(const kiln_tensor *t);
/* Dimension `axis`; negative axes count from the end. -1 when out of range. */
KILN_API int64_t kiln_tensor_dim(const kiln_tensor *t, int32_t axis);
/* The shape, borrowed: lives as long as the tensor. */
KILN_API const kiln_shape *kiln_tensor_shape(const kiln_tensor *t);
KILN_API int64_t kiln_tensor_numel(const kiln_tensor *t);
KILN_API size_t kiln_tensor_nbytes(const kiln_tensor *t);
KILN_API kiln_device kiln_tensor_device(const kiln_tensor *t);
/* The row-major elements of a tensor on a host-visible device (the CPU devices), borrowed:
 * valid as long as the tensor. NULL for an empty tensor, a NULL tensor or device memory
 * (read that with kiln_tensor_to_host). Read only. */
KILN_API const void *kiln_tensor_data(const kiln_tensor *t);

/* True for a traced tensor: a placeholder for a value inside kiln_lower (kiln/jit.h),
 * which has a dtype and shape but no data (reading it is FAILED_PRECONDITION). */
KILN_API bool kiln_tensor_is_traced(const kiln_tensor *t);

/* Copies the tensor's bytes into dst, from whatever device it is on (device memory
 * through its backend; the copy has completed when the call returns). nbytes must equal
 * kiln_tensor_nbytes(t), else INVALID_ARGUMENT naming both sizes (nothing is written).
 * FAILED_PRECONDITION for a traced or dead tensor; what the backend's copy reports. */
KILN_API kiln_status kiln_tensor_to_host(kiln_ctx *cx, const kiln_tensor *t, void *dst,
                                         size_t nbytes);

/* A tensor with t's dtype, shape and values on `device` (one of cx's devices:
 * kiln_device_count), owned by cx's innermost scope. A tensor already on that device
 * comes back as a new tensor sharing its buffer (no copy); otherwise the bytes are copied
 * by the devices' backends and the copy has completed when the call returns. Errors:
 * INVALID_ARGUMENT (a NULL tensor, a device cx does not have), UNIMPLEMENTED (a device
 * type no backend runs on), FAILED_PRECONDITION (a traced or dead tensor),
 * RESOURCE_EXHAUSTED, and what a backend's copy reports; NULL on error. */
KILN_API kiln_tensor *kiln_tensor_to_device(kiln_ctx *cx, kiln_tensor *t, kiln_device device);

/* Element `index` (row-major flat index) converted to double, as a convenience for tests
 * and printing (i64/u64 beyond 2^53 are rounded). Out of range is OUT_OF_RANGE, returning
 * NaN. */
KILN_API double kiln_tensor_item(kiln_ctx *cx, const kiln_tensor *t, int64_t index);

/* ---- printing ---------------------------------------------------------------------- */

typedef struct kiln_print_options {
    size_t struct_size; /* sizeof(kiln_print_options) */
    int precision;      /* significant digits for floats (default 8, at most 17) */
    int64_t threshold;  /* tensors with more elements are elided (default 1000) */
    int64_t edge_items; /* items kept at each end of an elided axis (default 3) */
    int line_width;     /* wrap rows longer than this (default 75) */
} kiln_print_options;

/* Options with every field at its default (the values above). */
KILN_API kiln_print_options kiln_print_options_default(void);

/* Formats like numpy: a header line "f32[2,3]" then the values, nested brackets per axis,
 * columns right-aligned, large tensors elided with "...". `options` may be NULL.
 * kiln_tensor_to_string returns a NUL-terminated string allocated with the ctx's
 * allocator, to be freed with kiln_string_free; NULL on error. */
KILN_API char *kiln_tensor_to_string(kiln_ctx *cx, const kiln_tensor *t,
                                     const kiln_print_options *options);
KILN_API void kiln_string_free(kiln_ctx *cx, char *text);
/* Writes kiln_tensor_to_string(...) and a newline to `stream`. */
KILN_API kiln_status kiln_tensor_print(kiln_ctx *cx, const kiln_tensor *t, FILE *stream);

/* ---- lifetime ---------------------------------------------------------------------- */

/* Adds a reference the caller owns; returns t (NULL for NULL). Thread-safe. */
KILN_API kiln_tensor *kiln_tensor_retain(kiln_tensor *t);

/* Drops one reference; the tensor is freed when none remain. Releasing a tensor that only
 * its scope owns frees it early (the scope forgets it). NULL is a no-op. */
KILN_API void kiln_tensor_release(kiln_tensor *t);

/* Gives one reference to t to the next eager elementwise builder that takes t as an operand
 * (kiln/ops_elementwise.h: the unary and binary ops, compare, select, clamp, convert and
 * bitcast_convert), which drops it after it has run, as kiln_tensor_release would. When that
 * reference was the last and no view shares t's memory (and the memory is kiln's: not
 * wrapped with kiln_tensor_wrap_host), the builder writes its result over t's data, so a
 * chain runs in one buffer, the way numpy reuses its temporaries:
 *
 *     kiln_tensor *g = kiln_exponential(cx, kiln_move(kiln_negate(cx, kiln_move(
 *                                           kiln_multiply(cx, x, x)))));   // one buffer
 *
 * After that builder t is gone unless the caller holds another reference (kiln_tensor_retain),
 * which then sees t unchanged: memory another reference can reach is never written. Passing
 * t twice to the builder gives it once. If the builder fails, t keeps its values and the
 * reference (the mark is cleared). Other builders treat a moved tensor as an ordinary one,
 * and so does every builder while tracing (kiln_lower; a traced tensor is never marked), so
 * one function serves both. Returns t; NULL is returned as is. */
KILN_API kiln_tensor *kiln_move(kiln_tensor *t);

/* Moves the scope's reference to t from the innermost scope to the one around it, so t
 * outlives kiln_scope_end (the usual way to return a result from a scoped helper). A
 * tensor not owned by the innermost scope is FAILED_PRECONDITION; at the outermost scope
 * the reference passes to the caller. Returns t, or NULL on error. */
KILN_API kiln_tensor *kiln_scope_escape(kiln_ctx *cx, kiln_tensor *t);

#ifdef __cplusplus
}
#endif

#endif
