/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_vmap against its definition: every case runs batched (eagerly, and traced under
 * kiln_jit) and one example at a time, and the two must agree, bitwise for exact ops. The
 * cases cover every batching rule (the op table's column is checked too), the loop for ops
 * without one, control flow with shared and per-example conditions, composition with
 * autodiff and with itself, the options, tree mode and the errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "batching/batch.h"
#include "test_util.h"

/* ---- data and comparisons ------------------------------------------------------------- */

static uint32_t next_rand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Reproducible values: floats in [-2, 2), integers in [-20, 20) ([0, 40) unsigned). */
static kiln_tensor *rnd(kiln_ctx *cx, kiln_dtype dt, kiln_shape shape, uint32_t seed) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        uint32_t r = next_rand(&seed);
        v[i] = kiln_dtype_is_float(dt) ? (double)(r % 4096) / 1024.0 - 2.0
                                       : (double)(r % 40) - (kiln_dtype_is_signed(dt) ? 20 : 0);
    }
    kiln_tensor *f = kiln_tensor_from_host(cx, KILN_F64, shape, v, (size_t)n * sizeof *v);
    free(v);
    return dt == KILN_F64 ? f : kiln_convert(cx, f, dt);
}

/* Example b of x along `axis` (the axis removed). */
static kiln_tensor *example_of(kiln_ctx *cx, kiln_tensor *x, int32_t axis, int64_t b) {
    const kiln_shape *s = kiln_tensor_shape(x);
    if (axis < 0) axis += s->rank;
    kiln_dims start = {.count = s->rank}, limit = {.count = s->rank};
    kiln_shape rest = {.rank = s->rank - 1};
    for (int32_t d = 0, k = 0; d < s->rank; d++) {
        start.v[d] = d == axis ? b : 0;
        limit.v[d] = d == axis ? b + 1 : s->dims[d];
        if (d != axis) rest.dims[k++] = s->dims[d];
    }
    return kiln_reshape(cx, kiln_slice(cx, x, start, limit, KILN_DIMS_NONE), rest);
}

/* got == want: the same type, and every element equal (bitwise when tol is 0, else within
 * tol relative to the magnitude). */
static void expect_same(kiln_ctx *cx, kiln_tensor *got, kiln_tensor *want, double tol,
                        const char *what) {
    cr_assert_not_null(got, "%s: no result (%s)", what, kiln_ctx_error_message(cx));
    cr_assert_not_null(want, "%s: no reference (%s)", what, kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_dtype(got), kiln_tensor_dtype(want), "%s: dtype", what);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(got), kiln_tensor_shape(want)), "%s: shape", what);
    int64_t n = kiln_tensor_numel(got);
    if (tol == 0) {
        size_t bytes = (size_t)n * kiln_dtype_size(kiln_tensor_dtype(got));
        cr_assert(memcmp(kiln_tensor_data(got), kiln_tensor_data(want), bytes) == 0,
                  "%s: not bitwise equal", what);
        return;
    }
    kiln_tensor *g = kiln_convert(cx, got, KILN_F64), *w = kiln_convert(cx, want, KILN_F64);
    const double *a = kiln_tensor_data(g), *e = kiln_tensor_data(w);
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(a[i] - e[i]) <= tol * (1 + fabs(e[i])) || (isnan(a[i]) && isnan(e[i])),
                  "%s: element %lld is %.9g, expected %.9g", what, (long long)i, a[i], e[i]);
}

/* ---- the harness -------------------------------------------------------------------------- */

typedef struct vcase {
    const char *name;
    kiln_region_fn fn;
    int32_t n_in, n_out;
    int32_t in_axes[4];
    double tol;   /* 0: bitwise */
    bool by_loop; /* an op of it has no batching rule */
} vcase;

static kiln_vmap_options options_of(const vcase *c) {
    kiln_vmap_options o = kiln_vmap_options_default();
    o.in_axes = c->in_axes;
    return o;
}

static kiln_status vmapped(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    const vcase *c = user;
    kiln_vmap_options o = options_of(c);
    return kiln_vmap(cx, &(kiln_region){c->fn, NULL}, c->n_in, in, c->n_out, &o, out);
}

static bool on_cpu(kiln_ctx *cx, kiln_exe *exe) {
    kiln_exe_info info;
    cr_assert_eq(kiln_exe_info_get(cx, exe, &info), KILN_OK);
    return strcmp(info.backend, "cpu") == 0;
}

/* Runs case c on args (the batch of `size` along each mapped argument's axis). */
static void check_case(kiln_ctx *cx, const vcase *c, kiln_tensor *const *args, int64_t size) {
    kiln_tensor *out[4] = {NULL}, *res[4] = {NULL}, *jitted[4] = {NULL}, *ex[4];
    kiln_vmap_options o = options_of(c);
    kiln_region f = {c->fn, NULL};
    cr_assert_eq(kiln_vmap(cx, &f, c->n_in, args, c->n_out, &o, out), KILN_OK, "%s: %s", c->name,
                 kiln_ctx_error_message(cx));
    char what[128];
    for (int64_t b = 0; b < size; b++) {
        cr_assert_eq(kiln_scope_begin(cx), KILN_OK);
        for (int32_t i = 0; i < c->n_in; i++)
            ex[i] = c->in_axes[i] == KILN_VMAP_NONE ? args[i]
                                                    : example_of(cx, args[i], c->in_axes[i], b);
        cr_assert_eq(c->fn(cx, ex, res, NULL), KILN_OK, "%s: example %lld: %s", c->name,
                     (long long)b, kiln_ctx_error_message(cx));
        for (int32_t j = 0; j < c->n_out; j++) {
            snprintf(what, sizeof what, "%s: result %d of example %lld", c->name, (int)j,
                     (long long)b);
            expect_same(cx, example_of(cx, out[j], 0, b), res[j], c->tol, what);
        }
        kiln_scope_end(cx);
    }
    /* Traced: the batched function recorded into a jit's trace, compiled as one program. */
    kiln_jit *jit = NULL;
    cr_assert_eq(
        kiln_jit_create(cx, &(kiln_region){vmapped, (void *)c}, c->n_in, c->n_out, NULL, &jit),
        KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_jit_call_list(cx, jit, args, jitted), KILN_OK, "%s: jit: %s", c->name,
                 kiln_ctx_error_message(cx));
    for (int32_t j = 0; j < c->n_out; j++) {
        snprintf(what, sizeof what, "%s: jitted result %d", c->name, (int)j);
        expect_same(cx, jitted[j], out[j], c->tol, what);
    }
    kiln_exe *exe = kiln_jit_last_exe(jit);
    if (on_cpu(cx, exe)) {
        char *text = kiln_exe_to_string(cx, exe);
        cr_assert_not_null(text);
        bool loop = strstr(text, "a loop over the batch") != NULL;
        cr_assert_eq(loop, c->by_loop, "%s: the executable %s a loop over the batch:\n%s", c->name,
                     loop ? "has" : "lacks", text);
        kiln_string_free(cx, text);
    }
    kiln_exe_release(exe);
    /* The printed module carries the note too. */
    kiln_module *m = NULL;
    cr_assert_eq(kiln_jit_lower(cx, jit, args, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    char *mtext = kiln_module_to_string(cx, m);
    cr_assert_eq(strstr(mtext, "// note: kiln_vmap:") != NULL, c->by_loop, "%s: %s", c->name,
                 mtext);
    kiln_string_free(cx, mtext);
    kiln_module_release(m);
    kiln_jit_release(jit);
}

#define N KILN_VMAP_NONE

/* ---- elementwise ------------------------------------------------------------------------ */

static kiln_status c_elementwise(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = in[0], *y = in[1];
    out[0] = kiln_add(cx, kiln_multiply(cx, x, y), kiln_sine(cx, x));
    out[1] = kiln_clamp(cx, kiln_scalar(cx, -0.5, KILN_F32), x, kiln_scalar(cx, 1.0, KILN_F32));
    kiln_tensor *pos =
        kiln_compare(cx, x, kiln_scalar_like(cx, x, 0), KILN_CMP_GT, KILN_CMP_DEFAULT);
    out[2] = kiln_select(cx, pos, x, kiln_broadcast_to(cx, y, *kiln_tensor_shape(x)));
    return kiln_ctx_status(cx);
}

Test(vmap, elementwise_with_a_shared_argument) {
    kiln_ctx *cx = test_ctx();
    vcase c = {"elementwise", c_elementwise, 2, 3, {0, N}, 0, false};
    kiln_tensor *args[2] = {rnd(cx, KILN_F32, KILN_SHAPE(5, 3, 4), 1),
                            rnd(cx, KILN_F32, KILN_SHAPE(4), 2)};
    check_case(cx, &c, args, 5);
    /* Both batched, the second along its last axis. */
    vcase d = {"elementwise, both mapped", c_elementwise, 2, 3, {0, -1}, 0, false};
    kiln_tensor *args2[2] = {rnd(cx, KILN_F32, KILN_SHAPE(5, 3, 4), 3),
                             rnd(cx, KILN_F32, KILN_SHAPE(4, 5), 4)};
    check_case(cx, &d, args2, 5);
    kiln_ctx_release(cx);
}

static kiln_status c_integer(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *a = in[0], *b = in[1];
    kiln_tensor *one = kiln_scalar_like(cx, a, 1);
    out[0] = kiln_xor(cx, kiln_add(cx, a, b), kiln_shift_right_arithmetic(cx, a, one));
    out[1] = kiln_popcnt(cx, kiln_multiply(cx, a, b));
    out[2] = kiln_convert(cx, kiln_compare(cx, a, b, KILN_CMP_LT, KILN_CMP_DEFAULT), KILN_I32);
    out[3] = kiln_bitcast_convert(cx, kiln_convert(cx, a, KILN_F32), KILN_U32);
    return kiln_ctx_status(cx);
}

Test(vmap, integer_ops_bitwise_with_the_batch_on_an_inner_axis) {
    kiln_ctx *cx = test_ctx();
    vcase c = {"integer", c_integer, 2, 4, {1, 0}, 0, false};
    kiln_tensor *args[2] = {rnd(cx, KILN_I32, KILN_SHAPE(6, 3), 5),
                            rnd(cx, KILN_I32, KILN_SHAPE(3, 6), 6)};
    check_case(cx, &c, args, 3);
    kiln_ctx_release(cx);
}

/* ---- data movement ---------------------------------------------------------------------- */

static kiln_status c_movement(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = in[0]; /* [2, 3] */
    out[0] = kiln_reverse(cx, kiln_transpose(cx, x, KILN_DIMS(1, 0)), KILN_DIMS(0));
    out[1] = kiln_slice(cx, kiln_reshape(cx, x, KILN_SHAPE(3, 2)), KILN_DIMS(1, 0), KILN_DIMS(3, 2),
                        KILN_DIMS(1, 2));
    out[2] = kiln_pad(cx, x, kiln_scalar(cx, 7, KILN_F32), KILN_DIMS(1, 0), KILN_DIMS(0, 2),
                      KILN_DIMS(0, 1));
    out[3] = kiln_concatenate(cx, (kiln_tensor *[]){x, in[1]}, 2, 1);
    return kiln_ctx_status(cx);
}

static kiln_status c_pad_value(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u; /* x f32[2, 3], the padding value f32[]: padded, cropped and dilated */
    out[0] = kiln_pad(cx, in[0], in[1], KILN_DIMS(1, -1), KILN_DIMS(0, 2), KILN_DIMS(1, 1));
    return kiln_ctx_status(cx);
}

Test(vmap, movement) {
    kiln_ctx *cx = test_ctx();
    vcase c = {"movement", c_movement, 2, 4, {0, N}, 0, false};
    kiln_tensor *args[2] = {rnd(cx, KILN_F32, KILN_SHAPE(4, 2, 3), 7),
                            rnd(cx, KILN_F32, KILN_SHAPE(2, 5), 8)};
    check_case(cx, &c, args, 4);
    vcase pv = {"pad, a padding value per example", c_pad_value, 2, 1, {0, 0}, 0, false};
    check_case(cx, &pv,
               (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(4, 2, 3), 52),
                                 rnd(cx, KILN_F32, KILN_SHAPE(4), 53)},
               4);
    vcase pv_shared = {"pad, shared operand", c_pad_value, 2, 1, {N, 0}, 0, false};
    check_case(cx, &pv_shared,
               (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(2, 3), 54),
                                 rnd(cx, KILN_F32, KILN_SHAPE(4), 55)},
               4);
    vcase d = {"movement, both mapped", c_movement, 2, 4, {2, 1}, 0, false};
    kiln_tensor *args2[2] = {rnd(cx, KILN_F32, KILN_SHAPE(2, 3, 4), 9),
                             rnd(cx, KILN_F32, KILN_SHAPE(2, 4, 5), 10)};
    check_case(cx, &d, args2, 4);
    kiln_ctx_release(cx);
}

static kiln_status c_dynamic(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = in[0], *i = in[1]; /* f32[6, 2], i32[] */
    out[0] = kiln_dynamic_slice(cx, x, (kiln_tensor *[]){i, kiln_scalar(cx, 0, KILN_I32)},
                                KILN_DIMS(3, 2));
    out[1] = kiln_dynamic_update_slice(cx, x, kiln_full(cx, KILN_F32, KILN_SHAPE(2, 1), 9),
                                       (kiln_tensor *[]){i, kiln_scalar(cx, 1, KILN_I32)});
    return kiln_ctx_status(cx);
}

static kiln_status c_window(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u; /* x f32[6, 2], starts i32[] and i32[] */
    out[0] = kiln_dynamic_slice(cx, in[0], (kiln_tensor *[]){in[1], in[2]}, KILN_DIMS(3, 1));
    return kiln_ctx_status(cx);
}

Test(vmap, dynamic_slices_with_shared_and_per_example_starts) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = rnd(cx, KILN_F32, KILN_SHAPE(3, 6, 2), 11);
    vcase shared = {"dynamic slice, shared start", c_dynamic, 2, 2, {0, N}, 0, false};
    check_case(cx, &shared, (kiln_tensor *[]){x, kiln_scalar(cx, 2, KILN_I32)}, 3);
    /* A start per example (clamped as the ops clamp): a gather and a scatter. */
    vcase own = {"dynamic slice, per-example start", c_dynamic, 2, 2, {0, 0}, 0, false};
    kiln_tensor *starts = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(3), (int32_t[]){0, 5, 2},
                                                3 * sizeof(int32_t));
    check_case(cx, &own, (kiln_tensor *[]){x, starts}, 3);
    kiln_tensor *below = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(3), (int32_t[]){-3, 9, 1},
                                               3 * sizeof(int32_t));
    check_case(cx, &own, (kiln_tensor *[]){x, below}, 3);
    /* dynamic_slice alone with per-example starts: a gather, clamped the same way (5 and
     * 4 are past the end), with the operand batched or shared. */
    kiln_tensor *cols = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(3), (int32_t[]){1, 0, 4},
                                              3 * sizeof(int32_t));
    vcase window = {"dynamic_slice by gather", c_window, 3, 1, {0, 0, 0}, 0, false};
    check_case(cx, &window, (kiln_tensor *[]){x, starts, cols}, 3);
    vcase shared_x = {
        "dynamic_slice by gather, shared operand", c_window, 3, 1, {N, 0, N}, 0, false};
    check_case(cx, &shared_x,
               (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(6, 2), 51), starts,
                                 kiln_scalar(cx, 1, KILN_I32)},
               3);
    kiln_ctx_release(cx);
}

static kiln_status c_take(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_take(cx, in[0], in[1], 0);
    return kiln_ctx_status(cx);
}

/* counts (f32[5, 2]) with updates (f32[n, 2]) added at rows idx (i32[n]). */
static kiln_status c_scatter(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_scatter_params sp = {.update_window_dims = KILN_DIMS(1),
                              .inserted_window_dims = KILN_DIMS(0),
                              .scatter_dims_to_operand_dims = KILN_DIMS(0),
                              .index_vector_dim = 1};
    return kiln_scatter(cx, &in[0], 1, in[1], &in[2], &sp, kiln_region_add(), out);
}

/* Random bits from a state: batched by the loop (no rule). */
static kiln_status c_bits(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_rng_bit_generator(cx, in[0], KILN_RNG_THREE_FRY, KILN_U32, KILN_SHAPE(4), NULL);
    return kiln_ctx_status(cx);
}

Test(vmap, gather_and_scatter_fold_the_batch) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *table = rnd(cx, KILN_F32, KILN_SHAPE(4, 5, 2), 12);
    kiln_tensor *idx = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(4, 3),
                                             (int32_t[]){0, 4, 1, 2, 2, 3, 4, 0, 0, 1, 9, -1},
                                             12 * sizeof(int32_t));
    vcase both = {"take, both mapped", c_take, 2, 1, {0, 0}, 0, false};
    check_case(cx, &both, (kiln_tensor *[]){table, idx}, 4);
    vcase shared_table = {"take, shared table", c_take, 2, 1, {N, 0}, 0, false};
    check_case(cx, &shared_table, (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(5, 2), 13), idx},
               4);
    kiln_tensor *one_idx = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(3), (int32_t[]){4, 0, 2},
                                                 3 * sizeof(int32_t));
    vcase shared_idx = {"take, shared indices", c_take, 2, 1, {0, N}, 0, false};
    check_case(cx, &shared_idx, (kiln_tensor *[]){table, one_idx}, 4);
    /* Scatter: duplicates accumulate in order, per example. */
    kiln_tensor *counts = rnd(cx, KILN_F32, KILN_SHAPE(4, 5, 2), 14);
    kiln_tensor *ups = rnd(cx, KILN_F32, KILN_SHAPE(4, 3, 2), 15);
    kiln_tensor *dup = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(4, 3),
                                             (int32_t[]){0, 0, 1, 4, 4, 4, 2, 3, 2, 1, 0, 1},
                                             12 * sizeof(int32_t));
    vcase sc = {"scatter, all mapped", c_scatter, 3, 1, {0, 0, 0}, 0, false};
    check_case(cx, &sc, (kiln_tensor *[]){counts, dup, ups}, 4);
    vcase sc_shared = {"scatter, shared input and indices", c_scatter, 3, 1, {N, N, 0}, 0, false};
    check_case(cx, &sc_shared,
               (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(5, 2), 16), one_idx, ups}, 4);
    /* An op without a rule: the loop, noted in kiln_exe_print. */
    kiln_tensor *states = kiln_tensor_from_host(cx, KILN_U64, KILN_SHAPE(3, 2),
                                                (uint64_t[]){1, 0, 2, 0, 3, 5}, 6 * 8);
    vcase bits = {"rng_bit_generator", c_bits, 1, 1, {0}, 0, true};
    check_case(cx, &bits, &states, 3);
    kiln_ctx_release(cx);
}

/* ---- reductions and sorting ------------------------------------------------------------ */

static kiln_status c_reduce(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *x = in[0]; /* [4, 5] */
    out[0] = kiln_sum(cx, x, KILN_DIMS(1), false);
    out[1] = kiln_max(cx, x, KILN_DIMS(0), false);
    out[2] = kiln_argmax(cx, x, 1, false);
    kiln_tensor *sorted[2];
    kiln_sort(cx, (kiln_tensor *[]){x, kiln_negate(cx, x)}, 2, 1, true, kiln_region_less(), sorted);
    out[3] = sorted[1];
    return kiln_ctx_status(cx);
}

Test(vmap, reductions_and_sort) {
    kiln_ctx *cx = test_ctx();
    vcase c = {"reduce", c_reduce, 1, 4, {1}, 1e-6, false};
    check_case(cx, &c, (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(4, 3, 5), 13)}, 3);
    kiln_ctx_release(cx);
}

static kiln_status c_pool(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_window_params p = {.window_dimensions = KILN_DIMS(1, 1, 2, 2),
                            .window_strides = KILN_DIMS(1, 1, 2, 2),
                            .base_dilations = KILN_DIMS(1, 1, 1, 1),
                            .window_dilations = KILN_DIMS(1, 1, 1, 1),
                            .padding_low = KILN_DIMS(0, 0, 0, 0),
                            .padding_high = KILN_DIMS(0, 0, 0, 0)};
    kiln_tensor *init = kiln_scalar(cx, -INFINITY, KILN_F32);
    kiln_reduce_window(cx, in, &init, 1, &p, kiln_region_maximum(), out);
    return kiln_ctx_status(cx);
}

Test(vmap, reduce_window) {
    kiln_ctx *cx = test_ctx();
    vcase c = {"max pool", c_pool, 1, 1, {0}, 0, false};
    check_case(cx, &c, (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(3, 1, 2, 4, 4), 14)}, 3);
    kiln_ctx_release(cx);
}

static kiln_status c_select_scatter(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                    void *u) {
    (void)u; /* in[0] f32[4, 4], in[1] the source f32[2, 2] */
    kiln_window_params p = {.window_dimensions = KILN_DIMS(2, 2),
                            .window_strides = KILN_DIMS(2, 2),
                            .base_dilations = KILN_DIMS(1, 1),
                            .window_dilations = KILN_DIMS(1, 1),
                            .padding_low = KILN_DIMS(0, 0),
                            .padding_high = KILN_DIMS(0, 0)};
    out[0] = kiln_select_and_scatter(cx, in[0], in[1], kiln_scalar(cx, 0, KILN_F32), &p,
                                     kiln_region_greater_equal(), kiln_region_add());
    return kiln_ctx_status(cx);
}

Test(vmap, select_and_scatter) {
    kiln_ctx *cx = test_ctx();
    vcase c = {"select_and_scatter", c_select_scatter, 2, 1, {0, 0}, 0, false};
    check_case(cx, &c,
               (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(3, 4, 4), 44),
                                 rnd(cx, KILN_F32, KILN_SHAPE(3, 2, 2), 45)},
               3);
    vcase shared = {"select_and_scatter, shared source", c_select_scatter, 2, 1, {0, N}, 0, false};
    check_case(cx, &shared,
               (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(3, 4, 4), 46),
                                 rnd(cx, KILN_F32, KILN_SHAPE(2, 2), 47)},
               3);
    kiln_ctx_release(cx);
}

/* ---- calls, barriers, custom derivatives ------------------------------------------------- */

static kiln_status callee(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_multiply(cx, kiln_sine(cx, a[0]), a[1]);
    return kiln_ctx_status(cx);
}

static kiln_status c_call_and_barrier(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                      void *u) {
    (void)u;
    kiln_tensor *r = NULL;
    if (kiln_call(cx, &(kiln_region){callee, NULL}, in, 2, 1, &r) != KILN_OK)
        return kiln_ctx_status(cx);
    out[0] = kiln_add(cx, kiln_stop_gradient(cx, r), in[1]);
    kiln_tensor *b[2];
    if (kiln_optimization_barrier(cx, in, 2, b) != KILN_OK) return kiln_ctx_status(cx);
    out[1] = kiln_subtract(cx, b[0], b[1]);
    return kiln_ctx_status(cx);
}

/* A custom derivative: square with a vjp of 3 x (deliberately not 2 x). */
static kiln_status sq_fwd(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_multiply(cx, a[0], a[0]);
    r[1] = a[0]; /* residual */
    return kiln_ctx_status(cx);
}

static kiln_status sq_bwd(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u; /* a[0] the residual x, a[1] the cotangent */
    r[0] = kiln_multiply(cx, kiln_multiply(cx, a[0], kiln_scalar_like(cx, a[0], 3)), a[1]);
    return kiln_ctx_status(cx);
}

static kiln_status custom_loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_custom_vjp def = {{sq_fwd, NULL}, {sq_bwd, NULL}, 1, 1, 1, "sq"};
    kiln_tensor *y = NULL;
    if (kiln_custom_vjp_call(cx, &def, in, &y) != KILN_OK) return kiln_ctx_status(cx);
    out[0] = kiln_sum(cx, y, KILN_DIMS(0), false);
    return kiln_ctx_status(cx);
}

static kiln_status c_custom_grad(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    return kiln_grad(cx, &(kiln_region){custom_loss, NULL}, 1, in, NULL, out);
}

static kiln_status batched_custom_loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                       void *u) {
    (void)u;
    kiln_tensor *each = NULL;
    if (kiln_vmap(cx, &(kiln_region){custom_loss, NULL}, 1, in, 1, NULL, &each) != KILN_OK)
        return kiln_ctx_status(cx);
    out[0] = kiln_sum(cx, each, KILN_DIMS(0), false);
    return kiln_ctx_status(cx);
}

Test(vmap, calls_barriers_and_custom_derivatives) {
    kiln_ctx *cx = test_ctx();
    vcase c = {"call and barriers", c_call_and_barrier, 2, 2, {0, N}, 1e-6, false};
    check_case(cx, &c,
               (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(4, 3), 48),
                                 rnd(cx, KILN_F32, KILN_SHAPE(3), 49)},
               4);
    /* A custom_vjp call runs per example (a loop), so its own derivative stays: the
     * per-example gradients are 3 x, not 2 x. */
    vcase g = {"vmap of grad through custom_vjp", c_custom_grad, 1, 1, {0}, 0, true};
    kiln_tensor *x = rnd(cx, KILN_F32, KILN_SHAPE(3, 2), 50), *gx = NULL;
    check_case(cx, &g, &x, 3);
    kiln_vmap(cx, &(kiln_region){c_custom_grad, NULL}, 1, &x, 1, NULL, &gx);
    expect_same(cx, gx, kiln_multiply(cx, x, kiln_scalar(cx, 3, KILN_F32)), 0, "3 x");
    /* And the gradient of the batched function goes through the loop to the same rule. */
    kiln_tensor *g2 = NULL;
    cr_assert_eq(kiln_grad(cx, &(kiln_region){batched_custom_loss, NULL}, 1, &x, NULL, &g2),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_same(cx, g2, kiln_multiply(cx, x, kiln_scalar(cx, 3, KILN_F32)), 0, "grad of vmap");
    kiln_ctx_release(cx);
}

/* ---- contractions ------------------------------------------------------------------------ */

static kiln_status c_matmul(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_matmul(cx, in[0], in[1]);
    return kiln_ctx_status(cx);
}

Test(vmap, dot_general_folds_the_batch) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *a = rnd(cx, KILN_F32, KILN_SHAPE(2, 3), 15),
                *b = rnd(cx, KILN_F32, KILN_SHAPE(3, 4), 16);
    kiln_tensor *as = rnd(cx, KILN_F32, KILN_SHAPE(5, 2, 3), 17);
    kiln_tensor *bs = rnd(cx, KILN_F32, KILN_SHAPE(3, 5, 4), 18);
    vcase lhs = {"matmul, lhs mapped", c_matmul, 2, 1, {0, N}, 1e-6, false};
    check_case(cx, &lhs, (kiln_tensor *[]){as, b}, 5);
    vcase rhs = {"matmul, rhs mapped", c_matmul, 2, 1, {N, 1}, 1e-6, false};
    check_case(cx, &rhs, (kiln_tensor *[]){a, bs}, 5);
    vcase both = {"matmul, both mapped", c_matmul, 2, 1, {0, 1}, 1e-6, false};
    check_case(cx, &both, (kiln_tensor *[]){as, bs}, 5);
    /* A batched matmul of its own (dot_general with batch dimensions), batched again. */
    kiln_tensor *a3 = rnd(cx, KILN_F32, KILN_SHAPE(3, 2, 2, 3), 19);
    kiln_tensor *b3 = rnd(cx, KILN_F32, KILN_SHAPE(2, 3, 4), 20);
    vcase batched = {"batched matmul, lhs mapped", c_matmul, 2, 1, {0, N}, 1e-6, false};
    check_case(cx, &batched, (kiln_tensor *[]){a3, b3}, 3);
    kiln_ctx_release(cx);
}

static kiln_status c_conv(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_conv_params p = kiln_conv_params_nchw(2);
    p.padding_low = KILN_DIMS(1, 0);
    p.padding_high = KILN_DIMS(1, 1);
    out[0] = kiln_convolution(cx, in[0], in[1], &p, KILN_DTYPE_COUNT);
    return kiln_ctx_status(cx);
}

Test(vmap, convolution_folds_the_batch) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = rnd(cx, KILN_F32, KILN_SHAPE(2, 2, 5, 5), 21);
    kiln_tensor *k = rnd(cx, KILN_F32, KILN_SHAPE(3, 2, 3, 3), 22);
    kiln_tensor *xs = rnd(cx, KILN_F32, KILN_SHAPE(3, 2, 2, 5, 5), 23);
    kiln_tensor *ks = rnd(cx, KILN_F32, KILN_SHAPE(3, 3, 2, 3, 3), 24);
    vcase lhs = {"convolution, input mapped", c_conv, 2, 1, {0, N}, 1e-5, false};
    check_case(cx, &lhs, (kiln_tensor *[]){xs, k}, 3);
    vcase rhs = {"convolution, kernel mapped", c_conv, 2, 1, {N, 0}, 1e-5, false};
    check_case(cx, &rhs, (kiln_tensor *[]){x, ks}, 3);
    vcase both = {"convolution, both mapped", c_conv, 2, 1, {0, 0}, 1e-5, false};
    check_case(cx, &both, (kiln_tensor *[]){xs, ks}, 3);
    kiln_ctx_release(cx);
}

/* ---- control flow ---------------------------------------------------------------------- */

static kiln_status halve_step(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u; /* s[0] the counter, s[1] the state */
    r[0] = kiln_add(cx, kiln_multiply(cx, s[1], kiln_scalar_like(cx, s[1], 0.5)),
                    kiln_convert(cx, s[0], KILN_F32));
    return kiln_ctx_status(cx);
}

static kiln_status c_fori(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    return kiln_fori_loop(cx, 0, 6, in, 1, &(kiln_region){halve_step, NULL}, out);
}

/* Collatz: steps until n is 1 (a condition per example). */
static kiln_status collatz_cond(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_compare(cx, s[0], kiln_scalar_like(cx, s[0], 1), KILN_CMP_GT, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}

static kiln_status collatz_body(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *n = s[0], *two = kiln_scalar_like(cx, n, 2);
    kiln_tensor *odd = kiln_compare(cx, kiln_remainder(cx, n, two), kiln_scalar_like(cx, n, 1),
                                    KILN_CMP_EQ, KILN_CMP_DEFAULT);
    kiln_tensor *up =
        kiln_add(cx, kiln_multiply(cx, n, kiln_scalar_like(cx, n, 3)), kiln_scalar_like(cx, n, 1));
    r[0] = kiln_select(cx, odd, up, kiln_divide(cx, n, two));
    r[1] = kiln_add(cx, s[1], kiln_scalar_like(cx, s[1], 1));
    r[2] = kiln_add(cx, s[2], s[3]); /* a carry of its own */
    r[3] = s[3];                     /* passed through: stays shared */
    return kiln_ctx_status(cx);
}

static kiln_status c_collatz(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *inits[4] = {in[0], kiln_scalar(cx, 0, KILN_I32), kiln_scalar(cx, 0, KILN_F32),
                             kiln_scalar(cx, 0.25, KILN_F32)};
    return kiln_while(cx, inits, 4, &(kiln_region){collatz_cond, NULL},
                      &(kiln_region){collatz_body, NULL}, out);
}

Test(vmap, loops_with_shared_and_per_example_conditions) {
    kiln_ctx *cx = test_ctx();
    vcase fori = {"fori_loop", c_fori, 1, 1, {0}, 0, false};
    check_case(cx, &fori, (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(4, 3), 25)}, 4);
    kiln_tensor *n = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(5), (int32_t[]){1, 6, 27, 7, 2},
                                           5 * sizeof(int32_t));
    vcase collatz = {"collatz", c_collatz, 1, 4, {0}, 0, false};
    check_case(cx, &collatz, &n, 5);
    kiln_ctx_release(cx);
}

typedef struct captured {
    kiln_tensor *x;
} captured;

static kiln_status br_sum(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a;
    r[0] = kiln_sum(cx, ((captured *)u)->x, KILN_DIMS(0), false);
    return kiln_ctx_status(cx);
}

static kiln_status br_max(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a;
    r[0] = kiln_negate(cx, kiln_max(cx, ((captured *)u)->x, KILN_DIMS(0), false));
    return kiln_ctx_status(cx);
}

static kiln_status br_const(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)a, (void)u;
    r[0] = kiln_scalar(cx, 42, KILN_F32); /* the same for every example */
    return kiln_ctx_status(cx);
}

static kiln_status c_cond(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    captured c = {in[0]};
    kiln_tensor *p =
        kiln_compare(cx, in[1], kiln_scalar_like(cx, in[1], 0), KILN_CMP_GT, KILN_CMP_DEFAULT);
    return kiln_cond(cx, p, &(kiln_region){br_sum, &c}, &(kiln_region){br_const, &c}, NULL, 0, 1,
                     out);
}

static kiln_status c_case(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    captured c = {in[0]};
    kiln_region br[3] = {{br_sum, &c}, {br_max, &c}, {br_const, &c}};
    return kiln_case(cx, in[1], br, 3, NULL, 0, 1, out);
}

Test(vmap, branches_with_shared_and_per_example_selectors) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *xs = rnd(cx, KILN_F32, KILN_SHAPE(6, 4), 26);
    kiln_tensor *ps = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(6),
                                            (float[]){1, -1, 2, -3, 0, 5}, 6 * sizeof(float));
    vcase shared = {"if, shared predicate", c_cond, 2, 1, {0, N}, 1e-6, false};
    check_case(cx, &shared, (kiln_tensor *[]){xs, kiln_scalar(cx, 1, KILN_F32)}, 6);
    vcase own = {"if, per-example predicate", c_cond, 2, 1, {0, 0}, 1e-6, false};
    check_case(cx, &own, (kiln_tensor *[]){xs, ps}, 6);
    kiln_tensor *ks = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(6),
                                            (int32_t[]){0, 1, 2, 7, -1, 1}, 6 * sizeof(int32_t));
    vcase cases = {"case, per-example index", c_case, 2, 1, {0, 0}, 1e-6, false};
    check_case(cx, &cases, (kiln_tensor *[]){xs, ks}, 6);
    vcase shared_case = {"case, shared index", c_case, 2, 1, {0, N}, 1e-6, false};
    check_case(cx, &shared_case, (kiln_tensor *[]){xs, kiln_scalar(cx, 1, KILN_I32)}, 6);
    kiln_ctx_release(cx);
}

/* scan: a carry over the rows of x, the running values stacked. */
static kiln_status running(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, kiln_multiply(cx, a[0], kiln_scalar_like(cx, a[0], 0.5)), a[1]);
    r[1] = kiln_tanh(cx, r[0]);
    return kiln_ctx_status(cx);
}

static kiln_status c_scan(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u; /* in[0] the initial carry f32[2], in[1] the rows f32[5, 2] */
    kiln_scan_options o = kiln_scan_options_default();
    o.unroll = 2;
    return kiln_scan(cx, &(kiln_region){running, NULL}, &in[0], 1, &in[1], 1, 1, &o, &out[0],
                     &out[1]);
}

Test(vmap, scan_batched) {
    kiln_ctx *cx = test_ctx();
    vcase c = {"scan", c_scan, 2, 2, {0, 1}, 1e-6, false};
    check_case(cx, &c,
               (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(3, 2), 40),
                                 rnd(cx, KILN_F32, KILN_SHAPE(5, 3, 2), 41)},
               3);
    vcase shared = {"scan, shared rows", c_scan, 2, 2, {0, N}, 1e-6, false};
    check_case(cx, &shared,
               (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(3, 2), 42),
                                 rnd(cx, KILN_F32, KILN_SHAPE(5, 2), 43)},
               3);
    kiln_ctx_release(cx);
}

/* ---- composition ----------------------------------------------------------------------- */

static kiln_status loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u; /* in[0] weights f32[3], in[1] one example f32[3] */
    out[0] = kiln_sum(cx, kiln_tanh(cx, kiln_multiply(cx, in[0], in[1])), KILN_DIMS(0), false);
    return kiln_ctx_status(cx);
}

static kiln_status c_grad(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    return kiln_grad(cx, &(kiln_region){loss, NULL}, 2, in, NULL, out);
}

static kiln_status c_row(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_add(cx, kiln_multiply(cx, in[0], in[1]), kiln_scalar(cx, 1, KILN_F32));
    return kiln_ctx_status(cx);
}

static kiln_status c_nested(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u; /* x f32[3], y f32[4]: out[j][i] = x[i] * y[j] + 1 */
    kiln_vmap_options o = kiln_vmap_options_default();
    o.in_axes = (int32_t[]){N, 0};
    return kiln_vmap(cx, &(kiln_region){c_row, NULL}, 2, in, 1, &o, out);
}

Test(vmap, per_example_gradients_and_nested_batches) {
    kiln_ctx *cx = test_ctx();
    vcase g = {"vmap of grad", c_grad, 2, 1, {N, 0}, 1e-6, false};
    check_case(cx, &g,
               (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(3), 27),
                                 rnd(cx, KILN_F32, KILN_SHAPE(5, 3), 28)},
               5);
    vcase nested = {"nested vmap", c_nested, 2, 1, {0, N}, 0, false};
    check_case(cx, &nested,
               (kiln_tensor *[]){rnd(cx, KILN_F32, KILN_SHAPE(2, 3), 29),
                                 rnd(cx, KILN_F32, KILN_SHAPE(4), 30)},
               2);
    kiln_ctx_release(cx);
}

/* The mean loss over a batch, through kiln_vmap: its gradient is the mean of the
 * per-example gradients. */
static kiln_status batch_loss(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_vmap_options o = kiln_vmap_options_default();
    o.in_axes = (int32_t[]){N, 0};
    kiln_tensor *each = NULL;
    if (kiln_vmap(cx, &(kiln_region){loss, NULL}, 2, in, 1, &o, &each) != KILN_OK)
        return kiln_ctx_status(cx);
    out[0] = kiln_mean(cx, each, KILN_DIMS(0), false);
    return kiln_ctx_status(cx);
}

Test(vmap, grad_of_vmap_is_the_mean_of_per_example_gradients) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *w = rnd(cx, KILN_F32, KILN_SHAPE(3), 31),
                *xs = rnd(cx, KILN_F32, KILN_SHAPE(4, 3), 32);
    kiln_tensor *g = NULL, *each = NULL;
    cr_assert_eq(
        kiln_grad(cx, &(kiln_region){batch_loss, NULL}, 2, (kiln_tensor *[]){w, xs}, NULL, &g),
        KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_vmap_options o = kiln_vmap_options_default();
    o.in_axes = (int32_t[]){N, 0};
    cr_assert_eq(
        kiln_vmap(cx, &(kiln_region){c_grad, NULL}, 2, (kiln_tensor *[]){w, xs}, 1, &o, &each),
        KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_same(cx, g, kiln_mean(cx, each, KILN_DIMS(0), false), 1e-6, "grad of vmap");
    /* jvp through the batch too: the directional derivative along w. */
    kiln_tensor *value = NULL, *tangent = NULL, *dw = kiln_full(cx, KILN_F32, KILN_SHAPE(3), 1);
    cr_assert_eq(kiln_jvp(cx, &(kiln_region){batch_loss, NULL}, 2, (kiln_tensor *[]){w, xs},
                          (kiln_tensor *[]){dw, NULL}, 1, &value, &tangent),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    expect_same(cx, tangent, kiln_sum(cx, g, KILN_DIMS(0), false), 1e-6, "jvp of vmap");
    kiln_ctx_release(cx);
}

/* ---- options ---------------------------------------------------------------------------- */

static kiln_status c_two(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u; /* in[0] f32[2, 3] */
    out[0] = kiln_exponential(cx, in[0]);
    out[1] = kiln_scalar(cx, 3, KILN_F32); /* independent of the batch */
    return kiln_ctx_status(cx);
}

Test(vmap, out_axes_and_axis_size) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = rnd(cx, KILN_F32, KILN_SHAPE(4, 2, 3), 33), *out[2];
    kiln_vmap_options o = kiln_vmap_options_default();
    o.out_axes = (int32_t[]){-1, N};
    kiln_region f = {c_two, NULL};
    cr_assert_eq(kiln_vmap(cx, &f, 1, &x, 2, &o, out), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert(kiln_shape_equal(kiln_tensor_shape(out[0]), &KILN_SHAPE(2, 3, 4)));
    cr_assert_eq(kiln_tensor_shape(out[1])->rank, 0);
    expect_same(cx, out[0], kiln_transpose(cx, kiln_exponential(cx, x), KILN_DIMS(1, 2, 0)), 0,
                "out axis -1");
    /* The default repeats a result that does not depend on the batch. */
    cr_assert_eq(kiln_vmap(cx, &f, 1, &x, 2, NULL, out), KILN_OK);
    expect_same(cx, out[1], kiln_full(cx, KILN_F32, KILN_SHAPE(4), 3), 0, "repeated");
    /* No mapped argument: axis_size says how many. */
    o = kiln_vmap_options_default();
    o.in_axes = (int32_t[]){N};
    o.axis_size = 3;
    kiln_tensor *one = rnd(cx, KILN_F32, KILN_SHAPE(2, 3), 34);
    cr_assert_eq(kiln_vmap(cx, &f, 1, &one, 2, &o, out), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert(kiln_shape_equal(kiln_tensor_shape(out[0]), &KILN_SHAPE(3, 2, 3)));
    kiln_ctx_release(cx);
}

static kiln_status c_deep(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u; /* a value of the most dimensions a tensor may have, for one example */
    kiln_shape s = {.rank = KILN_MAX_RANK};
    for (int32_t d = 0; d < KILN_MAX_RANK; d++)
        s.dims[d] = 1;
    out[0] = kiln_reshape(cx, in[0], s);
    out[1] = in[0];
    return kiln_ctx_status(cx);
}

Test(vmap, errors_name_the_argument) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *x = rnd(cx, KILN_F32, KILN_SHAPE(4, 3), 35),
                *y = rnd(cx, KILN_F32, KILN_SHAPE(5, 3), 36);
    kiln_tensor *out[2] = {x, x};
    kiln_region f = {c_matmul, NULL}, two = {c_two, NULL};
    kiln_vmap_options o = kiln_vmap_options_default();
    cr_assert_eq(kiln_vmap(NULL, &f, 1, &x, 1, NULL, out), KILN_INVALID_ARGUMENT);
    cr_assert_eq(kiln_vmap(cx, NULL, 1, &x, 1, NULL, out), KILN_INVALID_ARGUMENT);
    cr_assert_null(out[0]);
    expect_error(cx, KILN_INVALID_ARGUMENT, "f");
    kiln_vmap(cx, &f, 2, (kiln_tensor *[]){x, NULL}, 1, NULL, out);
    expect_error(cx, KILN_INVALID_ARGUMENT, "args[1] is NULL");
    kiln_vmap(cx, &f, -1, &x, 1, NULL, out);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_in -1");
    kiln_vmap(cx, &f, 2, (kiln_tensor *[]){x, y}, 1, NULL, out);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "argument 1 has 5 examples along its axis 0; argument 0 has 4");
    o.in_axes = (int32_t[]){2, N};
    kiln_vmap(cx, &f, 2, (kiln_tensor *[]){x, y}, 1, &o, out);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "the in axis of argument 0 is 2; it is f32[4,3] (rank 2)");
    o.in_axes = (int32_t[]){N, N};
    kiln_vmap(cx, &f, 2, (kiln_tensor *[]){x, y}, 1, &o, out);
    expect_error(cx, KILN_INVALID_ARGUMENT, "give options->axis_size");
    o.in_axes = (int32_t[]){0};
    o.axis_size = 3;
    kiln_vmap(cx, &two, 1, &x, 2, &o, out);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "argument 0 has 4 examples along its axis 0; options->axis_size is 3");
    o = kiln_vmap_options_default();
    o.out_axes = (int32_t[]){N, 0};
    kiln_vmap(cx, &two, 1, &x, 2, &o, out);
    expect_error(cx, KILN_INVALID_ARGUMENT, "result 0 depends on a mapped argument");
    o.out_axes = (int32_t[]){3, 0};
    kiln_vmap(cx, &two, 1, &x, 2, &o, out);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_axes[0] is 3; result 0 is f32[3]");
    o = kiln_vmap_options_default();
    o.axis_size = -1;
    kiln_vmap(cx, &two, 1, &x, 2, &o, out);
    expect_error(cx, KILN_INVALID_ARGUMENT, "options->axis_size is -1");
    o = kiln_vmap_options_default();
    o.struct_size = 8;
    kiln_vmap(cx, &two, 1, &x, 2, &o, out);
    expect_error(cx, KILN_INVALID_ARGUMENT, "options->struct_size is 8");
    /* An inner rank past the limit once the batch is added. */
    kiln_tensor *deep = kiln_full(cx, KILN_F32, KILN_SHAPE(2, 1), 1);
    kiln_region e = {c_deep, NULL};
    o = kiln_vmap_options_default();
    kiln_vmap(cx, &e, 1, &deep, 2, &o, out);
    expect_error(cx, KILN_UNIMPLEMENTED,
                 "stablehlo.reshape: a value of rank 16 cannot gain a batch dimension");
    /* The function's own error comes through. */
    kiln_vmap(cx, &f, 2, (kiln_tensor *[]){x, kiln_full(cx, KILN_F32, KILN_SHAPE(4, 2), 1)}, 1,
              NULL, out);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_matmul");
    kiln_ctx_release(cx);
}

/* ---- tree mode -------------------------------------------------------------------------- */

typedef struct model {
    kiln_tensor *w, *b;
    int32_t scale; /* static */
} model;

typedef struct io {
    model m;
    kiln_tensor *x;
} io;

typedef struct pred {
    kiln_tensor *y;
} pred;

KILN_TREE_DEF(model, KILN_FIELD(model, w), KILN_FIELD(model, b), KILN_STATIC(model, scale));
KILN_TREE_DEF(io, KILN_SUBTREE(io, m, model), KILN_FIELD(io, x));
KILN_TREE_DEF(pred, KILN_FIELD(pred, y));

static kiln_status predict(kiln_ctx *cx, const void *in, void *out, void *user) {
    (void)user;
    const io *a = in;
    pred *p = out;
    p->y = kiln_multiply(cx, kiln_add(cx, kiln_matmul(cx, a->x, a->m.w), a->m.b),
                         kiln_scalar(cx, a->m.scale, KILN_F32));
    return kiln_ctx_status(cx);
}

Test(vmap, tree_mode_axes_by_path) {
    kiln_ctx *cx = test_ctx();
    io a = {{rnd(cx, KILN_F32, KILN_SHAPE(3, 2), 37), rnd(cx, KILN_F32, KILN_SHAPE(2), 38), 2},
            rnd(cx, KILN_F32, KILN_SHAPE(5, 3), 39)};
    pred p = {0};
    kiln_vmap_options o = kiln_vmap_options_default();
    o.in_paths = (const char *[]){"m"};
    o.in_path_axes = (int32_t[]){N};
    o.n_in_paths = 1;
    cr_assert_eq(
        kiln_vmap_tree(cx, predict, NULL, &kiln_tree_def_io, &a, &kiln_tree_def_pred, &p, &o),
        KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *want = kiln_multiply(cx, kiln_add(cx, kiln_matmul(cx, a.x, a.m.w), a.m.b),
                                      kiln_scalar(cx, 2, KILN_F32));
    expect_same(cx, p.y, want, 1e-6, "tree mode");
    o.in_paths = (const char *[]){"params"};
    kiln_vmap_tree(cx, predict, NULL, &kiln_tree_def_io, &a, &kiln_tree_def_pred, &p, &o);
    expect_error(cx, KILN_INVALID_ARGUMENT, "in_paths[0] 'params' matches no leaf");
    o.in_paths = (const char *[]){NULL};
    kiln_vmap_tree(cx, predict, NULL, &kiln_tree_def_io, &a, &kiln_tree_def_pred, &p, &o);
    expect_error(cx, KILN_INVALID_ARGUMENT, "in_paths[0] is NULL");
    o.n_in_paths = -1;
    kiln_vmap_tree(cx, predict, NULL, &kiln_tree_def_io, &a, &kiln_tree_def_pred, &p, &o);
    expect_error(cx, KILN_INVALID_ARGUMENT, "options->n_in_paths is -1");
    kiln_vmap_tree(cx, predict, NULL, &kiln_tree_def_io, &a, &kiln_tree_def_pred, NULL, NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out");
    kiln_vmap_tree(cx, predict, NULL, NULL, &a, &kiln_tree_def_pred, &p, &o);
    expect_error(cx, KILN_INVALID_ARGUMENT, "in_def");
    /* Messages name leaves by their paths. */
    o = kiln_vmap_options_default(); /* every leaf along axis 0: w has 3 rows, b 2 */
    kiln_vmap_tree(cx, predict, NULL, &kiln_tree_def_io, &a, &kiln_tree_def_pred, &p, &o);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "leaf 'm.b' has 2 examples along its axis 0; leaf 'm.w' has 3");
    kiln_ctx_release(cx);
}

/* ---- the rule column ------------------------------------------------------------------- */

Test(vmap, every_op_has_a_rule_but_those_batched_by_a_loop) {
    /* The ops without a batching rule; an op added to the table without one fails here. */
    /* The dynamic-shape ops (read from text only) too: per example, each runs its static
     * form for that example's shape operands. */
    static const kiln_op by_loop[] = {KILN_OP_CONSTANT,           KILN_OP_IOTA,
                                      KILN_OP_RNG_BIT_GENERATOR,  KILN_OP_RUN_PARALLEL,
                                      KILN_OP_DYNAMIC_IOTA,       KILN_OP_DYNAMIC_BROADCAST_IN_DIM,
                                      KILN_OP_DYNAMIC_RESHAPE,    KILN_OP_DYNAMIC_PAD,
                                      KILN_OP_DYNAMIC_GATHER,     KILN_OP_DYNAMIC_CONV,
                                      KILN_OP_GET_DIMENSION_SIZE, KILN_OP_AFTER_ALL,
                                      KILN_OP_CREATE_TOKEN,       KILN_OP_TUPLE,
                                      KILN_OP_GET_TUPLE_ELEMENT};
    for (int k = 0; k < KILN_OP_COUNT; k++) {
        bool listed = false;
        for (size_t i = 0; i < sizeof by_loop / sizeof by_loop[0]; i++)
            listed |= by_loop[i] == (kiln_op)k;
        cr_assert_eq(kiln__batch_rule_is_loop((kiln_op)k), listed,
                     "stablehlo.%s %s a batching rule", kiln__op_get_info((kiln_op)k)->name,
                     listed ? "has" : "lacks");
    }
}
