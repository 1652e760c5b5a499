/* Builders for control flow, constants and random bits (include/kiln/ops_control.h), and
 * numpy's where and cast. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backend/region.h"
#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "core/tensor_internal.h"
#include "frontend/op_run.h"

/* Checks a count (>= 0) and the array it sizes (not NULL when the count is positive). */
static kiln_status check_list(kiln_ctx *cx, const char *fn, const char *count_name, int32_t n,
                              const char *what, const void *list) {
    if (n < 0)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: %s is %d; expected >= 0", fn,
                                  count_name, (int)n);
    if (n > 0 && !list) return kiln__null_argument(cx, fn, what);
    return KILN_OK;
}

kiln_status kiln_while(kiln_ctx *cx, kiln_tensor *const *inits, int32_t n, const kiln_region *cond,
                       const kiln_region *body, kiln_tensor **out) {
    static const char fn[] = "kiln_while";
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s;
    if ((s = check_list(cx, fn, "n", n, "out", out)) != KILN_OK) return s;
    for (int32_t i = 0; i < n; i++)
        out[i] = NULL;
    if ((s = check_list(cx, fn, "n", n, "inits", inits)) != KILN_OK) return s;
    kiln__attrs a = {.fn = fn, .region = {cond, body}, .n_regions = 2, .n_results = n};
    return kiln__op_run(cx, KILN_OP_WHILE, &a, inits, n, out, n);
}

/* ---- fori_loop: a while loop over (i, state...) ----------------------------------------- */

typedef struct fori_loop {
    int64_t upper;
    const kiln_region *body;
    int32_t n;
} fori_loop;

static kiln_tensor *i64_scalar(kiln_ctx *cx, int64_t v) {
    kiln_tensor *t = kiln__tensor_new(cx, "kiln_fori_loop", KILN_I64, KILN_SHAPE_SCALAR);
    if (t) memcpy(kiln__tensor_mutable_data(t), &v, sizeof v);
    return t;
}

/* The counter's test and increment are ops, so the loop traces as well as it runs. */
static kiln_status fori_cond(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                             void *user) {
    const fori_loop *loop = user;
    kiln_tensor *upper = kiln_full_int(cx, KILN_I64, KILN_SHAPE_SCALAR, loop->upper);
    results[0] = kiln_compare(cx, args[0], upper, KILN_CMP_LT, KILN_CMP_SIGNED);
    return results[0] ? KILN_OK : kiln_ctx_status(cx);
}

/* Gives a reference the caller holds to the innermost scope, as a borrowed pointer: a
 * tensor only we hold is adopted; one held elsewhere too stays alive through its other
 * holders (an argument, or a tensor from outside the region) while the region returns. */
static kiln_tensor *lend_to_scope(kiln_ctx *cx, kiln_tensor *t) {
    if (!t->owned.scope && atomic_load_explicit(&t->refs, memory_order_acquire) == 1)
        kiln__scope_adopt(cx, &t->owned);
    else
        kiln_tensor_release(t); /* a scope keeps it alive */
    return t;
}

static kiln_status fori_body(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                             void *user) {
    const fori_loop *loop = user;
    kiln_status s = kiln__region_call(cx, loop->body, "kiln_fori_loop: body", args, loop->n + 1,
                                      results + 1, loop->n);
    if (s != KILN_OK) return s;
    for (int32_t i = 0; i < loop->n; i++)
        results[1 + i] = lend_to_scope(cx, results[1 + i]);
    for (int32_t i = 0; i < loop->n; i++) {
        const kiln_tensor *r = results[1 + i], *a = args[1 + i];
        if (kiln_tensor_dtype(r) == kiln_tensor_dtype(a) &&
            kiln_shape_equal(kiln_tensor_shape(r), kiln_tensor_shape(a)))
            continue;
        char have[KILN__TYPE_TEXT], want[KILN__TYPE_TEXT];
        kiln__type h = kiln__type_of(r), w = kiln__type_of(a);
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "kiln_fori_loop: body result %d has type %s; expected %s (the "
                                  "type of init %d)",
                                  (int)i + 1, kiln__type_text(&h, have), kiln__type_text(&w, want),
                                  (int)i + 1);
    }
    results[0] = kiln_add(cx, args[0], kiln_full_int(cx, KILN_I64, KILN_SHAPE_SCALAR, 1));
    return results[0] ? KILN_OK : kiln_ctx_status(cx);
}

kiln_status kiln_fori_loop(kiln_ctx *cx, int64_t lower, int64_t upper, kiln_tensor *const *inits,
                           int32_t n, const kiln_region *body, kiln_tensor **out) {
    static const char fn[] = "kiln_fori_loop";
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s;
    if ((s = check_list(cx, fn, "n", n, "out", out)) != KILN_OK) return s;
    for (int32_t i = 0; i < n; i++)
        out[i] = NULL;
    if ((s = check_list(cx, fn, "n", n, "inits", inits)) != KILN_OK) return s;
    if (n == INT32_MAX)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: n is too large", fn);
    if (!body) return kiln__null_argument(cx, fn, "body");
    if (!body->fn) return kiln__null_argument(cx, fn, "body->fn");
    for (int32_t i = 0; i < n; i++) {
        if (!inits[i]) {
            char what[32];
            snprintf(what, sizeof what, "inits[%d]", (int)i);
            return kiln__null_argument(cx, fn, what);
        }
    }

    /* The loop state is (i, inits...); the results drop i. */
    size_t count = (size_t)n + 1, bytes = count * sizeof(kiln_tensor *);
    kiln_tensor *fixed_in[9], *fixed_out[9];
    kiln_tensor **state = fixed_in, **results = fixed_out;
    if (count > 9) {
        state = kiln__alloc(cx, bytes, _Alignof(kiln_tensor *), fn);
        results = state ? kiln__alloc(cx, bytes, _Alignof(kiln_tensor *), fn) : NULL;
        if (!results) {
            if (state) kiln__free(cx, state, bytes);
            return KILN_RESOURCE_EXHAUSTED;
        }
    }
    fori_loop loop = {.upper = upper, .body = body, .n = n};
    const kiln_region cond_region = {fori_cond, &loop}, body_region = {fori_body, &loop};
    state[0] = i64_scalar(cx, lower);
    s = state[0] ? KILN_OK : KILN_RESOURCE_EXHAUSTED;
    if (s == KILN_OK) {
        for (int32_t i = 0; i < n; i++)
            state[1 + i] = inits[i];
        kiln__attrs a = {
            .fn = fn, .region = {&cond_region, &body_region}, .n_regions = 2, .n_results = n + 1};
        a.u.loop.lower = lower; /* the trip count, for costs */
        a.u.loop.upper = upper;
        a.u.loop.known = true;
        s = kiln__op_run(cx, KILN_OP_WHILE, &a, state, n + 1, results, n + 1);
        kiln__tensor_discard(state[0]);
    }
    if (s == KILN_OK) {
        kiln__tensor_discard(results[0]); /* the final i */
        for (int32_t i = 0; i < n; i++)
            out[i] = results[1 + i];
    }
    if (state != fixed_in) {
        kiln__free(cx, state, bytes);
        kiln__free(cx, results, bytes);
    }
    return s;
}

/* ---- cond, case, call, optimization_barrier --------------------------------------------- */

kiln_status kiln_cond(kiln_ctx *cx, kiln_tensor *pred, const kiln_region *on_true,
                      const kiln_region *on_false, int32_t n_results, kiln_tensor **out) {
    static const char fn[] = "kiln_cond";
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s;
    if ((s = check_list(cx, fn, "n_results", n_results, "out", out)) != KILN_OK) return s;
    for (int32_t i = 0; i < n_results; i++)
        out[i] = NULL;
    kiln__attrs a = {
        .fn = fn, .region = {on_true, on_false}, .n_regions = 2, .n_results = n_results};
    return kiln__op_run(cx, KILN_OP_IF, &a, &pred, 1, out, n_results);
}

kiln_status kiln_case(kiln_ctx *cx, kiln_tensor *index, const kiln_region *branches,
                      int32_t n_branches, int32_t n_results, kiln_tensor **out) {
    static const char fn[] = "kiln_case";
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s;
    if ((s = check_list(cx, fn, "n_results", n_results, "out", out)) != KILN_OK) return s;
    for (int32_t i = 0; i < n_results; i++)
        out[i] = NULL;
    if ((s = check_list(cx, fn, "n_branches", n_branches, "branches", branches)) != KILN_OK)
        return s;
    kiln__attrs a = {
        .fn = fn, .regions = branches, .n_regions = n_branches, .n_results = n_results};
    return kiln__op_run(cx, KILN_OP_CASE, &a, &index, 1, out, n_results);
}

kiln_status kiln_call(kiln_ctx *cx, const kiln_region *callee, kiln_tensor *const *args,
                      int32_t n_args, int32_t n_results, kiln_tensor **out) {
    static const char fn[] = "kiln_call";
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s;
    if ((s = check_list(cx, fn, "n_results", n_results, "out", out)) != KILN_OK) return s;
    for (int32_t i = 0; i < n_results; i++)
        out[i] = NULL;
    if ((s = check_list(cx, fn, "n_args", n_args, "args", args)) != KILN_OK) return s;
    kiln__attrs a = {.fn = fn, .region = {callee}, .n_regions = 1, .n_results = n_results};
    return kiln__op_run(cx, KILN_OP_CALL, &a, args, n_args, out, n_results);
}

kiln_status kiln_optimization_barrier(kiln_ctx *cx, kiln_tensor *const *inputs, int32_t n,
                                      kiln_tensor **out) {
    static const char fn[] = "kiln_optimization_barrier";
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s;
    if ((s = check_list(cx, fn, "n", n, "out", out)) != KILN_OK) return s;
    for (int32_t i = 0; i < n; i++)
        out[i] = NULL;
    if ((s = check_list(cx, fn, "n", n, "inputs", inputs)) != KILN_OK) return s;
    kiln__attrs a = {.fn = fn, .n_results = n};
    return kiln__op_run(cx, KILN_OP_OPTIMIZATION_BARRIER, &a, inputs, n, out, n);
}

/* ---- sources ---------------------------------------------------------------------------- */

kiln_tensor *kiln_constant(kiln_ctx *cx, kiln_dtype dtype, kiln_shape shape, const void *data,
                           size_t nbytes) {
    static const char fn[] = "kiln_constant";
    if (!cx) return NULL;
    int64_t numel;
    size_t need;
    if (!kiln__check_dtype_shape(cx, fn, dtype, &shape, &numel, &need)) return NULL;
    if (nbytes != need) {
        char text[KILN__SHAPE_TEXT];
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: nbytes is %zu; a %s%s tensor needs %zu",
                           fn, nbytes, kiln_dtype_name(dtype), kiln__shape_text(&shape, text),
                           need);
        return NULL;
    }
    if (!data && need > 0) {
        kiln__null_argument(cx, fn, "data");
        return NULL;
    }
    /* The value: the caller's memory itself when aligned (the op copies it once). */
    kiln_tensor *value =
        (uintptr_t)data % kiln_dtype_size(dtype) == 0
            ? kiln_tensor_wrap_host(cx, dtype, shape, (void *)(uintptr_t)data, nbytes, NULL, NULL)
            : kiln_tensor_from_host(cx, dtype, shape, data, nbytes);
    if (!value) return NULL;
    kiln__attrs a = {.fn = fn};
    a.u.constant = value;
    kiln_tensor *r = kiln__op_run1(cx, KILN_OP_CONSTANT, &a, NULL, 0);
    kiln__tensor_discard(value);
    return r;
}

kiln_tensor *kiln_rng_bit_generator(kiln_ctx *cx, kiln_tensor *state, kiln_rng_algorithm algorithm,
                                    kiln_dtype dtype, kiln_shape shape, kiln_tensor **out_state) {
    if (out_state) *out_state = NULL;
    if (!cx) return NULL;
    kiln__attrs a = {.fn = "kiln_rng_bit_generator", .n_results = 2};
    a.u.rng.algorithm = algorithm;
    a.u.rng.dtype = dtype;
    a.u.rng.shape = shape;
    kiln_tensor *r[2];
    if (kiln__op_run(cx, KILN_OP_RNG_BIT_GENERATOR, &a, &state, 1, r, 2) != KILN_OK) return NULL;
    if (out_state) *out_state = r[0];
    return r[1];
}

/* ---- numpy conveniences ----------------------------------------------------------------- */

kiln_tensor *kiln_where(kiln_ctx *cx, kiln_tensor *pred, kiln_tensor *a, kiln_tensor *b) {
    static const char fn[] = "kiln_where";
    if (!cx) return NULL;
    kiln_tensor *operands[3] = {pred, a, b};
    static const char *const names[3] = {"pred", "a", "b"};
    for (int i = 0; i < 3; i++) {
        if (!operands[i]) {
            kiln__null_argument(cx, fn, names[i]);
            return NULL;
        }
    }
    if (kiln_tensor_dtype(pred) != KILN_BOOL) {
        /* numpy reads the condition as truthiness: non-zero is true (convert to i1). */
        kiln__attrs c = {.fn = fn};
        c.u.convert_to = KILN_BOOL;
        operands[0] = kiln__op_run1(cx, KILN_OP_CONVERT, &c, &pred, 1);
        if (!operands[0]) return NULL;
    }
    if (kiln__broadcast_operands(cx, fn, operands, 3) != KILN_OK) return NULL;
    kiln__attrs s = {.fn = fn};
    return kiln__op_run1(cx, KILN_OP_SELECT, &s, operands, 3);
}

kiln_tensor *kiln_cast(kiln_ctx *cx, kiln_tensor *x, kiln_dtype dtype) {
    kiln__attrs a = {.fn = "kiln_cast"};
    a.u.convert_to = dtype;
    return kiln__op_run1(cx, KILN_OP_CONVERT, &a, &x, 1);
}
