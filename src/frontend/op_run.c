/* SPDX-License-Identifier: Apache-2.0 */
#include "frontend/op_run.h"

#include <stdio.h>

#include "backend/registry.h"
#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "core/tensor_internal.h"
#include "frontend/trace.h"
#include "frontend/transfer.h"
#include "ops/widen.h"

#define MAX_FIXED 8

kiln__type kiln__type_of(const kiln_tensor *t) {
    return (kiln__type){.dtype = t->dtype, .shape = t->shape};
}

/* Operand i + 1 is on device b, not on operand 1's device a. */
static __attribute__((noinline, cold)) kiln_status
device_error(kiln_ctx *cx, const char *fn, kiln_device a, int i, kiln_device b) {
    char da[48], db[48];
    return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                              "%s: operand 1 is on device %s and operand %d on device %s; move "
                              "one with kiln_tensor_to_device",
                              fn, kiln__device_text(a, da, sizeof da), i + 1,
                              kiln__device_text(b, db, sizeof db));
}

/* A result in the device memory of a backend that allocates its own. */
static __attribute__((noinline)) kiln_tensor *device_result(kiln_ctx *cx, const kiln__backend *b,
                                                            const char *fn, const kiln__type *t,
                                                            kiln_device device) {
    size_t nbytes = 0;
    kiln_shape_nbytes(&t->shape, t->dtype, &nbytes);
    kiln__storage *st = kiln__storage_on(cx, b, fn, device, nbytes);
    return st ? kiln__tensor_new_on(cx, fn, t->dtype, t->shape, st) : NULL;
}

/* Whether a result of type t may take over `reuse`'s memory: the same shape and element
 * size, on the op's device, and nothing else can reach that memory (kiln__tensor_exclusive).
 * The kernels of elementwise ops read each element before they write it, so they may run
 * in place. */
static bool can_take_over(const kiln_tensor *reuse, const kiln__type *t, kiln_device device) {
    const kiln__storage *s = reuse->storage;
    return kiln__tensor_exclusive(reuse) && kiln_shape_equal(&reuse->shape, &t->shape) &&
           kiln_dtype_size(reuse->dtype) == kiln_dtype_size(t->dtype) &&
           s->device.type == device.type && s->device.id == device.id;
}

static kiln_tensor *result_over(kiln_ctx *cx, const char *fn, kiln_tensor *reuse,
                                const kiln__type *t) {
    atomic_fetch_add_explicit(&reuse->storage->refs, 1, memory_order_relaxed);
    kiln_tensor *r = kiln__tensor_new_on(cx, fn, t->dtype, t->shape, reuse->storage);
    if (r) r->byte_offset = reuse->byte_offset;
    return r;
}

/* A convert of t to `dtype` (a new tensor of the scope), or NULL with the error in cx. */
static kiln_tensor *converted(kiln_ctx *cx, kiln_tensor *t, kiln_dtype dtype, const char *fn) {
    kiln__attrs a = {.fn = fn};
    a.u.convert_to = dtype;
    return kiln__op_run1(cx, KILN_OP_CONVERT, &a, &t, 1);
}

/* An op on narrow types (ops/widen.h): its narrow operands converted to the wide types,
 * the op run there, its results converted back to `out`'s dtypes. The temporaries are
 * discarded. */
static __attribute__((noinline, cold)) kiln_status
run_widened(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs, kiln_tensor *const *operands,
            int n_operands, kiln_tensor **results, int n_results, const kiln__type *out) {
    const char *fn = attrs->fn ? attrs->fn : kiln__op_get_info(op)->name;
    enum { MAX = 8 };
    if (n_operands > MAX || n_results > MAX)
        return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED, "%s: too many values to widen", fn);
    kiln_tensor *wide_in[MAX] = {0}, *wide_out[MAX] = {0};
    kiln_status s = KILN_OK;
    for (int i = 0; i < n_operands && s == KILN_OK; i++) {
        kiln_dtype w = kiln__widened(operands[i]->dtype);
        wide_in[i] = w == operands[i]->dtype ? operands[i] : converted(cx, operands[i], w, fn);
        if (!wide_in[i]) s = kiln_ctx_status(cx);
    }
    kiln__attrs wa = *attrs;
    kiln__attrs_widen(op, &wa);
    if (s == KILN_OK) s = kiln__op_run(cx, op, &wa, wide_in, n_operands, wide_out, n_results);
    for (int r = 0; r < n_results && s == KILN_OK; r++) {
        if (wide_out[r]->dtype == out[r].dtype) {
            results[r] = wide_out[r];
            wide_out[r] = NULL;
        } else if (!(results[r] = converted(cx, wide_out[r], out[r].dtype, fn))) {
            s = kiln_ctx_status(cx);
        }
    }
    for (int i = 0; i < n_operands; i++)
        if (wide_in[i] && wide_in[i] != operands[i]) kiln__tensor_discard(wide_in[i]);
    for (int r = 0; r < n_results; r++)
        if (wide_out[r]) kiln__tensor_discard(wide_out[r]);
    if (s != KILN_OK)
        for (int r = 0; r < n_results; r++) {
            if (results[r]) kiln__tensor_discard(results[r]);
            results[r] = NULL;
        }
    return s;
}

/* kiln__op_run's body, inlined into it and into kiln__op_run1, so that the compiler
 * specialises the one-result case that most builders take (a few percent of an eager op). */
static inline __attribute__((always_inline)) kiln_status
run(kiln_ctx *cx, kiln_op op, kiln__attrs *attrs, kiln_tensor *const *operands, int n_operands,
    kiln_tensor **results, int n_results, kiln_tensor *reuse) {
    const char *fn = attrs->fn ? attrs->fn : kiln__op_get_info(op)->name;
    for (int i = 0; i < n_results; i++)
        results[i] = NULL;
    if (!cx) return KILN_INVALID_ARGUMENT;
    for (int i = 0; i < n_operands; i++) {
        if (!operands[i]) {
            char what[32];
            snprintf(what, sizeof what, "operand %d", i + 1);
            return kiln__null_argument(cx, fn, what);
        }
        if (operands[i]->dead) {
            char what[96];
            snprintf(what, sizeof what, "%s: operand %d", fn, i + 1);
            return kiln__dead_error(cx, what, operands[i]);
        }
    }
    if (kiln__trace_wants(cx, op, operands, n_operands)) {
        attrs->fn = fn;
        kiln_status t = kiln__trace_op(cx, op, attrs, operands, n_operands, results, n_results);
        if (t != KILN_OK) {
            for (int i = 0; i < n_results; i++)
                results[i] = NULL;
            if (kiln_ctx_status(cx) == KILN_OK)
                kiln_ctx_set_error(cx, t, "%s failed while tracing (%s)", fn, kiln_status_name(t));
        }
        return t;
    }
    kiln__type fixed_in[MAX_FIXED], fixed_out[MAX_FIXED];
    kiln__type *in = fixed_in, *out = fixed_out;
    size_t in_bytes = (size_t)n_operands * sizeof *in, out_bytes = (size_t)n_results * sizeof *out;
    if (n_operands > MAX_FIXED && !(in = kiln__alloc(cx, in_bytes, _Alignof(kiln__type), fn)))
        return KILN_RESOURCE_EXHAUSTED;
    if (n_results > MAX_FIXED && !(out = kiln__alloc(cx, out_bytes, _Alignof(kiln__type), fn))) {
        if (in != fixed_in) kiln__free(cx, in, in_bytes);
        return KILN_RESOURCE_EXHAUSTED;
    }
    for (int i = 0; i < n_operands; i++)
        in[i] = kiln__type_of(operands[i]);
    for (int i = 0; i < n_results; i++)
        out[i] = (kiln__type){0};

    kiln_status s = kiln__infer(cx, op, attrs, in, n_operands, out, n_results);
    if (s == KILN_OK && kiln__op_widens(op, in, n_operands, out, n_results)) {
        s = run_widened(cx, op, attrs, operands, n_operands, results, n_results, out);
        if (in != fixed_in) kiln__free(cx, in, in_bytes);
        if (out != fixed_out) kiln__free(cx, out, out_bytes);
        return s;
    }
    /* The op runs where its operands are (the ctx's device for an op without operands),
     * and so do the tensors it makes. */
    kiln_device device = n_operands ? operands[0]->storage->device : cx->device;
    const kiln__backend *backend = NULL;
    for (int i = 1; i < n_operands && s == KILN_OK; i++) {
        kiln_device d = operands[i]->storage->device;
        if (d.type != device.type || d.id != device.id) s = device_error(cx, fn, device, i, d);
    }
    if (s == KILN_OK && !(backend = kiln__backend_eager(cx, fn, device))) s = kiln_ctx_status(cx);
    kiln_device saved = kiln__ctx_use_device(cx, device);
    if (s == KILN_OK && !kiln__op_has(op, KILN_OPF_CONTROL)) {
        int first = 0;
        if (reuse && n_results > 0 && !KILN__BACKEND_HAS(backend, buffer_alloc) &&
            can_take_over(reuse, &out[0], device)) {
            first = 1;
            if (!(results[0] = result_over(cx, fn, reuse, &out[0]))) s = KILN_RESOURCE_EXHAUSTED;
        }
        for (int i = first; i < n_results && s == KILN_OK; i++) {
            results[i] = KILN__BACKEND_HAS(backend, buffer_alloc)
                             ? device_result(cx, backend, fn, &out[i], device)
                             : kiln__tensor_new(cx, fn, out[i].dtype, out[i].shape);
            if (!results[i]) s = KILN_RESOURCE_EXHAUSTED;
        }
    }
    if (s == KILN_OK) s = backend->eval_op(cx, op, attrs, operands, n_operands, results, n_results);
    kiln__ctx_use_device(cx, saved);
    if (s != KILN_OK) {
        for (int i = 0; i < n_results; i++) {
            kiln_tensor_release(results[i]);
            results[i] = NULL;
        }
        if (kiln_ctx_status(cx) == KILN_OK) /* a kernel must say why it failed */
            kiln_ctx_set_error(cx, s, "%s failed (%s)", fn, kiln_status_name(s));
    }
    if (in != fixed_in) kiln__free(cx, in, in_bytes);
    if (out != fixed_out) kiln__free(cx, out, out_bytes);
    return s;
}

kiln_status kiln__op_run(kiln_ctx *cx, kiln_op op, kiln__attrs *attrs, kiln_tensor *const *operands,
                         int n_operands, kiln_tensor **results, int n_results) {
    return run(cx, op, attrs, operands, n_operands, results, n_results, NULL);
}

kiln_tensor *kiln__op_run1(kiln_ctx *cx, kiln_op op, kiln__attrs *attrs,
                           kiln_tensor *const *operands, int n_operands) {
    kiln_tensor *r = NULL;
    run(cx, op, attrs, operands, n_operands, &r, 1, NULL);
    return r;
}

kiln_tensor *kiln__op_run1_over(kiln_ctx *cx, kiln_op op, kiln__attrs *attrs,
                                kiln_tensor *const *operands, int n_operands, kiln_tensor *reuse) {
    kiln_tensor *r = NULL;
    run(cx, op, attrs, operands, n_operands, &r, 1, reuse);
    return r;
}
