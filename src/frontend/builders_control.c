/* SPDX-License-Identifier: Apache-2.0 */
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
#include "frontend/trace.h"

/* Checks a count (>= 0) and the array it sizes (not NULL when the count is positive). */
static kiln_status check_list(kiln_ctx *cx, const char *fn, const char *count_name, int32_t n,
                              const char *what, const void *list) {
    if (n < 0)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: %s is %d; expected >= 0", fn,
                                  count_name, (int)n);
    if (n > 0 && !list) return kiln__null_argument(cx, fn, what);
    return KILN_OK;
}

/* Checks an output array of n tensors as check_list does and clears it, so that a caller
 * finds NULLs wherever the builder fails afterwards. */
static kiln_status check_out(kiln_ctx *cx, const char *fn, const char *count_name, int32_t n,
                             const char *what, kiln_tensor **out) {
    kiln_status s = check_list(cx, fn, count_name, n, what, out);
    if (s != KILN_OK) return s;
    for (int32_t i = 0; i < n; i++)
        out[i] = NULL;
    return KILN_OK;
}

kiln_status kiln_while(kiln_ctx *cx, kiln_tensor *const *inits, int32_t n, const kiln_region *cond,
                       const kiln_region *body, kiln_tensor **out) {
    static const char fn[] = "kiln_while";
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s;
    if ((s = check_out(cx, fn, "n", n, "out", out)) != KILN_OK) return s;
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
    if ((s = check_out(cx, fn, "n", n, "out", out)) != KILN_OK) return s;
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

/* ---- scan: a fori loop over the rows of xs, stacking ys ---------------------------------- */

kiln_scan_options kiln_scan_options_default(void) {
    return (kiln_scan_options){.struct_size = sizeof(kiln_scan_options), .unroll = 1};
}

typedef struct scan_loop {
    const kiln_region *body;
    kiln_tensor *const *xs;
    int32_t n_carry, n_xs, n_ys, unroll;
    int64_t length, start; /* steps start..length-1 run in the loop and after it */
    bool reverse;
    const kiln_shape *x_shapes, *y_shapes; /* one row of each */
} scan_loop;

/* One step at t (an i64 rank-0 tensor): state = (carries..., stacks of ys...) in `state`,
 * the next state into `next` (tensors of the innermost scope). */
static kiln_status scan_step(kiln_ctx *cx, const scan_loop *sc, kiln_tensor *t,
                             kiln_tensor *const *state, kiln_tensor **next) {
    kiln_tensor *at =
        sc->reverse
            ? kiln_subtract(cx, kiln_full_int(cx, KILN_I64, KILN_SHAPE_SCALAR, sc->length - 1), t)
            : t;
    kiln_tensor *zero = kiln_full_int(cx, KILN_I64, KILN_SHAPE_SCALAR, 0);
    kiln_tensor *starts[KILN_MAX_RANK], *args[64 + 64], *res[64 + 64];
    starts[0] = at;
    for (int32_t d = 1; d < KILN_MAX_RANK; d++)
        starts[d] = zero;
    for (int32_t k = 0; k < sc->n_carry; k++)
        args[k] = state[k];
    for (int32_t k = 0; k < sc->n_xs; k++) {
        const kiln_shape *row = &sc->x_shapes[k];
        kiln_dims sizes = {.count = row->rank + 1, .v = {1}};
        for (int32_t d = 0; d < row->rank; d++)
            sizes.v[d + 1] = row->dims[d];
        args[sc->n_carry + k] =
            kiln_reshape(cx, kiln_dynamic_slice(cx, sc->xs[k], starts, sizes), *row);
    }
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    int32_t n_res = sc->n_carry + sc->n_ys;
    kiln_status s = kiln__region_call(cx, sc->body, "kiln_scan: body", args, sc->n_carry + sc->n_xs,
                                      res, n_res);
    if (s != KILN_OK) return s;
    for (int32_t j = 0; j < n_res; j++)
        res[j] = lend_to_scope(cx, res[j]);
    for (int32_t k = 0; k < sc->n_carry; k++)
        next[k] = res[k];
    for (int32_t k = 0; k < sc->n_ys; k++) {
        if (!state[sc->n_carry + k]) { /* no stack yet: the first step's y as it is */
            next[sc->n_carry + k] = res[sc->n_carry + k];
            continue;
        }
        const kiln_shape *row = &sc->y_shapes[k];
        kiln_shape one = {.rank = row->rank + 1, .dims = {1}};
        for (int32_t d = 0; d < row->rank; d++)
            one.dims[d + 1] = row->dims[d];
        next[sc->n_carry + k] = kiln_dynamic_update_slice(
            cx, state[sc->n_carry + k], kiln_reshape(cx, res[sc->n_carry + k], one), starts);
    }
    return kiln_ctx_status(cx);
}

/* The loop's body: `unroll` steps at t = start + i * unroll + u. */
static kiln_status scan_trip(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                             void *user) {
    const scan_loop *sc = user;
    int32_t n = sc->n_carry + sc->n_ys;
    kiln_tensor *a[128], *b[128];
    for (int32_t k = 0; k < n; k++)
        a[k] = args[k + 1];
    kiln_tensor *base =
        kiln_multiply(cx, args[0], kiln_full_int(cx, KILN_I64, KILN_SHAPE_SCALAR, sc->unroll));
    for (int32_t u = 0; u < sc->unroll; u++) {
        kiln_tensor *t =
            kiln_add(cx, base, kiln_full_int(cx, KILN_I64, KILN_SHAPE_SCALAR, sc->start + u));
        kiln_status s = scan_step(cx, sc, t, a, b);
        if (s != KILN_OK) return s;
        memcpy(a, b, (size_t)n * sizeof *a);
    }
    for (int32_t k = 0; k < n; k++)
        results[k] = a[k];
    return kiln_ctx_status(cx);
}

/* The arrays of one kiln_scan, off the stack (scans nest inside control flow). */
typedef struct scan_scratch {
    kiln_shape x_rows[64], y_rows[64];
    kiln__type types[128], got[128];
    kiln_tensor *state[128], *final[128], *next[128];
} scan_scratch;

static kiln_status scan_run(kiln_ctx *cx, const kiln_region *body, kiln_tensor *const *init,
                            int32_t n_carry, kiln_tensor *const *xs, int32_t n_xs, int32_t n_ys,
                            const kiln_scan_options *o, scan_scratch *m, kiln_tensor **out_carry,
                            kiln_tensor **out_ys) {
    static const char fn[] = "kiln_scan";
    kiln_status s;
    char what[32];
    /* The length: every xs[k]'s leading dimension, or options->length. */
    int64_t length = o->length;
    kiln_shape *x_rows = m->x_rows, *y_rows = m->y_rows;
    kiln__type *types = m->types, *got = m->got;
    for (int32_t k = 0; k < n_xs; k++) {
        if (!xs[k]) {
            snprintf(what, sizeof what, "xs[%d]", (int)k);
            return kiln__null_argument(cx, fn, what);
        }
        const kiln_shape *sh = kiln_tensor_shape(xs[k]);
        if (sh->rank < 1)
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: xs[%d] is rank 0; each x is scanned along its axis 0",
                                      fn, (int)k);
        if ((k > 0 || o->length) && sh->dims[0] != length)
            return kiln_ctx_set_error(
                cx, KILN_INVALID_ARGUMENT, "%s: xs[%d] has %lld rows; %s %lld", fn, (int)k,
                (long long)sh->dims[0], k > 0 ? "xs[0] has" : "options->length is",
                (long long)length);
        length = sh->dims[0];
        x_rows[k] = (kiln_shape){.rank = sh->rank - 1};
        for (int32_t d = 1; d < sh->rank; d++)
            x_rows[k].dims[d - 1] = sh->dims[d];
    }
    for (int32_t k = 0; k < n_carry; k++)
        types[k] = kiln__type_of(init[k]);
    for (int32_t k = 0; k < n_xs; k++)
        types[n_carry + k] = (kiln__type){.dtype = kiln_tensor_dtype(xs[k]), .shape = x_rows[k]};
    scan_loop sc = {.body = body,
                    .xs = xs,
                    .n_carry = n_carry,
                    .n_xs = n_xs,
                    .n_ys = n_ys,
                    .unroll = o->unroll,
                    .length = length,
                    .reverse = o->reverse,
                    .x_shapes = x_rows,
                    .y_shapes = y_rows};
    int32_t n = n_carry + n_ys;
    kiln_tensor **state = m->state, ** final = m->final;
    /* What the body returns: eagerly, its first step runs (the body may read values, as
     * eager code does); traced, or with no step to run, it is traced once. */
    bool first_step = !kiln__tracing(cx) && length > 0;
    if (first_step) {
        for (int32_t k = 0; k < n_carry; k++)
            state[k] = init[k];
        for (int32_t k = 0; k < n_ys; k++)
            state[n_carry + k] = NULL;
        kiln_tensor *t0 = kiln_full_int(cx, KILN_I64, KILN_SHAPE_SCALAR, 0);
        s = t0 ? scan_step(cx, &sc, t0, state, m->next) : kiln_ctx_status(cx);
        for (int32_t j = 0; j < n && s == KILN_OK; j++)
            got[j] = kiln__type_of(m->next[j]);
    } else {
        s = kiln__trace_result_types(cx, "kiln_scan: body", body, types, n_carry + n_xs, n, got);
    }
    if (s != KILN_OK) return s;
    for (int32_t k = 0; k < n_carry; k++) {
        if (got[k].dtype == types[k].dtype && kiln_shape_equal(&got[k].shape, &types[k].shape))
            continue;
        char have[KILN__TYPE_TEXT], want[KILN__TYPE_TEXT];
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: body result %d (carry %d) has type %s; expected %s (the "
                                  "type of init[%d])",
                                  fn, (int)k, (int)k, kiln__type_text(&got[k], have),
                                  kiln__type_text(&types[k], want), (int)k);
    }
    /* The state: the carries, then a stack of `length` rows per y (holding the first
     * step's y when it ran). */
    for (int32_t k = 0; k < n_carry; k++)
        state[k] = first_step ? m->next[k] : init[k];
    kiln_tensor *zero = kiln_full_int(cx, KILN_I64, KILN_SHAPE_SCALAR, 0);
    kiln_tensor *starts[KILN_MAX_RANK] = {
        kiln_full_int(cx, KILN_I64, KILN_SHAPE_SCALAR, o->reverse ? length - 1 : 0)};
    for (int32_t d = 1; d < KILN_MAX_RANK; d++)
        starts[d] = zero;
    for (int32_t k = 0; k < n_ys; k++) {
        y_rows[k] = got[n_carry + k].shape;
        if (y_rows[k].rank >= KILN_MAX_RANK)
            return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                      "%s: body result %d (y %d) has rank %d; stacked it would "
                                      "pass %d dimensions",
                                      fn, (int)(n_carry + k), (int)k, (int)y_rows[k].rank,
                                      KILN_MAX_RANK);
        kiln_shape st = {.rank = y_rows[k].rank + 1, .dims = {length}};
        for (int32_t d = 0; d < y_rows[k].rank; d++)
            st.dims[d + 1] = y_rows[k].dims[d];
        state[n_carry + k] = kiln_full(cx, got[n_carry + k].dtype, st, 0);
        if (first_step) {
            st.dims[0] = 1;
            state[n_carry + k] = kiln_dynamic_update_slice(
                cx, state[n_carry + k], kiln_reshape(cx, m->next[n_carry + k], st), starts);
        }
    }
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    sc.start = first_step;
    int64_t trips = (length - sc.start) / o->unroll, rest = (length - sc.start) % o->unroll;
    s = kiln_fori_loop(cx, 0, trips, state, n, &(kiln_region){scan_trip, &sc}, final);
    /* The steps that do not fill a whole trip, after the loop. */
    for (int64_t u = 0; u < rest && s == KILN_OK; u++) {
        kiln_tensor *t =
            kiln_full_int(cx, KILN_I64, KILN_SHAPE_SCALAR, sc.start + trips * o->unroll + u);
        s = t ? scan_step(cx, &sc, t, final, m->next) : kiln_ctx_status(cx);
        if (s == KILN_OK) memcpy(final, m->next, (size_t)n * sizeof *final);
    }
    if (s != KILN_OK) return s;
    for (int32_t k = 0; k < n_carry; k++)
        out_carry[k] = final[k];
    for (int32_t k = 0; k < n_ys; k++)
        out_ys[k] = final[n_carry + k];
    return KILN_OK;
}

kiln_status kiln_scan(kiln_ctx *cx, const kiln_region *body, kiln_tensor *const *init,
                      int32_t n_carry, kiln_tensor *const *xs, int32_t n_xs, int32_t n_ys,
                      const kiln_scan_options *options, kiln_tensor **out_carry,
                      kiln_tensor **out_ys) {
    static const char fn[] = "kiln_scan";
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s;
    if ((s = check_list(cx, fn, "n_carry", n_carry, "out_carry", out_carry)) != KILN_OK) return s;
    if ((s = check_list(cx, fn, "n_ys", n_ys, "out_ys", out_ys)) != KILN_OK) return s;
    for (int32_t k = 0; k < n_carry; k++)
        out_carry[k] = NULL;
    for (int32_t k = 0; k < n_ys; k++)
        out_ys[k] = NULL;
    if ((s = check_list(cx, fn, "n_carry", n_carry, "init", init)) != KILN_OK) return s;
    if ((s = check_list(cx, fn, "n_xs", n_xs, "xs", xs)) != KILN_OK) return s;
    if (n_carry > 64 || n_xs > 64 || n_ys > 64)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: n_carry %d, n_xs %d and n_ys %d: at most 64 each", fn,
                                  (int)n_carry, (int)n_xs, (int)n_ys);
    if (!body) return kiln__null_argument(cx, fn, "body");
    if (!body->fn) return kiln__null_argument(cx, fn, "body->fn");
    kiln_scan_options o = kiln_scan_options_default();
    kiln_status os = kiln__options_read(cx, fn, options, &o, sizeof o, "kiln_scan_options_default");
    if (os != KILN_OK) return os;
    if (o.unroll < 1)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: options->unroll is %d; expected >= 1", fn, (int)o.unroll);
    if (o.length < 0)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: options->length is %lld; expected >= 0", fn,
                                  (long long)o.length);
    char what[32];
    for (int32_t k = 0; k < n_carry; k++)
        if (!init[k]) {
            snprintf(what, sizeof what, "init[%d]", (int)k);
            return kiln__null_argument(cx, fn, what);
        }
    scan_scratch *m = kiln__alloc(cx, sizeof *m, _Alignof(scan_scratch), fn);
    if (!m) return KILN_RESOURCE_EXHAUSTED;
    s = scan_run(cx, body, init, n_carry, xs, n_xs, n_ys, &o, m, out_carry, out_ys);
    kiln__free(cx, m, sizeof *m);
    return s;
}

/* ---- cond, case, call, optimization_barrier --------------------------------------------- */

/* A branch called with the operands of its cond or case, as the op's region (no arguments:
 * the operands reach it from outside, as StableHLO's if and case capture them). */
typedef struct branch_call {
    const kiln_region *branch;
    kiln_tensor *const *operands;
} branch_call;

static kiln_status call_branch(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                               void *user) {
    (void)args;
    const branch_call *c = user;
    return c->branch->fn(cx, c->operands, results, c->branch->user);
}

#define FIXED_BRANCHES 8

/* cond and case: checks the operands and makes every branch a region over them. */
static kiln_status run_branches(kiln_ctx *cx, const char *fn, kiln_op kind, kiln_tensor *selector,
                                const kiln_region *const *branches, int32_t n_branches,
                                kiln_tensor *const *operands, int32_t n_operands, int32_t n_results,
                                kiln_tensor **out) {
    kiln_status s;
    if ((s = check_list(cx, fn, "n_operands", n_operands, "operands", operands)) != KILN_OK)
        return s;
    for (int32_t i = 0; i < n_operands; i++)
        if (!operands[i]) {
            char what[32];
            snprintf(what, sizeof what, "operands[%d]", (int)i);
            return kiln__null_argument(cx, fn, what);
        }
    branch_call fixed_calls[FIXED_BRANCHES], *calls = fixed_calls;
    kiln_region fixed_regions[FIXED_BRANCHES], *regions = fixed_regions;
    size_t cbytes = (size_t)n_branches * sizeof *calls,
           rbytes = (size_t)n_branches * sizeof *regions;
    if (n_branches > FIXED_BRANCHES) {
        calls = kiln__alloc(cx, cbytes, _Alignof(branch_call), fn);
        regions = calls ? kiln__alloc(cx, rbytes, _Alignof(kiln_region), fn) : NULL;
        if (!regions) {
            if (calls) kiln__free(cx, calls, cbytes);
            return KILN_RESOURCE_EXHAUSTED;
        }
    }
    for (int32_t r = 0; r < n_branches; r++) {
        calls[r] = (branch_call){branches[r], operands};
        regions[r] = (kiln_region){call_branch, &calls[r]};
    }
    s = KILN_OK;
    if (s == KILN_OK) {
        kiln__attrs a = {.fn = fn, .n_results = n_results};
        for (int32_t r = 0; r < n_branches; r++)
            if (!branches[r] || !branches[r]->fn) {
                /* The op reports a missing branch by its own rules. */
                regions[r] = branches[r] ? *branches[r] : (kiln_region){0};
            }
        if (kind == KILN_OP_IF) {
            a.region[0] = branches[0] ? &regions[0] : NULL;
            a.region[1] = branches[1] ? &regions[1] : NULL;
            a.n_regions = 2;
        } else {
            a.regions = regions;
            a.n_regions = n_branches;
        }
        s = kiln__op_run(cx, kind, &a, &selector, 1, out, n_results);
    }
    if (calls != fixed_calls) {
        kiln__free(cx, calls, cbytes);
        kiln__free(cx, regions, rbytes);
    }
    return s;
}

kiln_status kiln_cond(kiln_ctx *cx, kiln_tensor *pred, const kiln_region *on_true,
                      const kiln_region *on_false, kiln_tensor *const *operands, int32_t n_operands,
                      int32_t n_results, kiln_tensor **out) {
    static const char fn[] = "kiln_cond";
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s;
    if ((s = check_out(cx, fn, "n_results", n_results, "out", out)) != KILN_OK) return s;
    const kiln_region *branches[2] = {on_true, on_false};
    return run_branches(cx, fn, KILN_OP_IF, pred, branches, 2, operands, n_operands, n_results,
                        out);
}

kiln_status kiln_case(kiln_ctx *cx, kiln_tensor *index, const kiln_region *branches,
                      int32_t n_branches, kiln_tensor *const *operands, int32_t n_operands,
                      int32_t n_results, kiln_tensor **out) {
    static const char fn[] = "kiln_case";
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s;
    if ((s = check_out(cx, fn, "n_results", n_results, "out", out)) != KILN_OK) return s;
    if ((s = check_list(cx, fn, "n_branches", n_branches, "branches", branches)) != KILN_OK)
        return s;
    if (n_branches > 4096)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: n_branches is %d; at most 4096",
                                  fn, (int)n_branches);
    const kiln_region *fixed[FIXED_BRANCHES], **list = fixed;
    size_t bytes = (size_t)n_branches * sizeof *list;
    if (n_branches > FIXED_BRANCHES && !(list = kiln__alloc(cx, bytes, _Alignof(void *), fn)))
        return KILN_RESOURCE_EXHAUSTED;
    for (int32_t r = 0; r < n_branches; r++)
        list[r] = &branches[r];
    s = run_branches(cx, fn, KILN_OP_CASE, index, list, n_branches, operands, n_operands, n_results,
                     out);
    if (list != fixed) kiln__free(cx, list, bytes);
    return s;
}

kiln_status kiln_call(kiln_ctx *cx, const kiln_region *callee, kiln_tensor *const *args,
                      int32_t n_args, int32_t n_results, kiln_tensor **out) {
    static const char fn[] = "kiln_call";
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s;
    if ((s = check_out(cx, fn, "n_results", n_results, "out", out)) != KILN_OK) return s;
    if ((s = check_list(cx, fn, "n_args", n_args, "args", args)) != KILN_OK) return s;
    kiln__attrs a = {.fn = fn, .region = {callee}, .n_regions = 1, .n_results = n_results};
    return kiln__op_run(cx, KILN_OP_CALL, &a, args, n_args, out, n_results);
}

kiln_status kiln_optimization_barrier(kiln_ctx *cx, kiln_tensor *const *inputs, int32_t n,
                                      kiln_tensor **out) {
    static const char fn[] = "kiln_optimization_barrier";
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s;
    if ((s = check_out(cx, fn, "n", n, "out", out)) != KILN_OK) return s;
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
    if (!data && need > 0) return kiln__null_argument_ptr(cx, fn, "data");
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
    for (int i = 0; i < 3; i++)
        if (!operands[i]) return kiln__null_argument_ptr(cx, fn, names[i]);
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
