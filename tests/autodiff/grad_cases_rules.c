/* SPDX-License-Identifier: Apache-2.0 */
/* Finite-difference cases for the rules of the contractions, indexing, window and sort
 * ops (src/autodiff/rules_{linalg,indexing,window,sort}.c), in the format of
 * grad_cases.h. Each configuration that takes a different path through a rule has a case
 * of its own: dimension numbers, strides, padding (negative too), dilations, groups,
 * out-of-range indices (clamped by gather and the dynamic slices, skipped by scatter),
 * repeated indices, init values that win a window, custom comparators. */
#include <math.h>
#include <stdlib.h>

#include "grad_cases.h"
#include "kiln/spmd.h"

/* Constant-expression forms of KILN_DIMS / KILN_SHAPE (compound literals are not constant
 * initializers in ISO C) for the static tables below. */
#define NUM(...) (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define DIMS(...)                                       \
    {                                                   \
        .count = NUM(__VA_ARGS__), .v = { __VA_ARGS__ } \
    }
#define SHAPE(...)                                        \
    {                                                     \
        .rank = NUM(__VA_ARGS__), .dims = { __VA_ARGS__ } \
    }
#define F64(lo_, hi_, ...) \
    { .dtype = KILN_F64, .shape = SHAPE(__VA_ARGS__), .lo = (lo_), .hi = (hi_) }

#define FIXED_INTS(dt, vals, ...)                                                  \
    {                                                                              \
        .dtype = (dt), .shape = SHAPE(__VA_ARGS__), .fixed = true, .ints = (vals), \
        .n_ints = (int32_t)(sizeof(vals) / sizeof((vals)[0]))                      \
    }
#define FIXED_SCALAR_INT(dt, vals) \
    { .dtype = (dt), .shape = {.rank = 0}, .fixed = true, .ints = (vals), .n_ints = 1 }
#define F64_SCALAR(lo_, hi_) \
    { .dtype = KILN_F64, .shape = {.rank = 0}, .lo = (lo_), .hi = (hi_) }

static kiln_status done(kiln_ctx *cx) { return kiln_ctx_status(cx); }

/* 0.05 * x plus distinct multiples of 0.25 in a shuffled order: the arguments of max, min,
 * select and sort stay at least 0.15 apart, so the finite differences never step across
 * a tie, while which element wins still varies from window to window. */
static kiln_tensor *spread(kiln_ctx *cx, kiln_tensor *x) {
    int64_t n = kiln_tensor_numel(x);
    double *c = malloc((size_t)(n + 1) * sizeof(double));
    if (!c) return NULL;
    for (int64_t k = 0; k < n; k++)
        c[k] = 0.25 * (double)k;
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (int64_t k = n - 1; k > 0; k--) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        int64_t j = (int64_t)((r >> 33) % (uint64_t)(k + 1));
        double t = c[k];
        c[k] = c[j];
        c[j] = t;
    }
    kiln_tensor *offsets =
        kiln_tensor_from_host(cx, KILN_F64, *kiln_tensor_shape(x), c, (size_t)n * sizeof(double));
    free(c);
    return kiln_add(cx, kiln_multiply(cx, x, kiln_scalar(cx, 0.05, KILN_F64)), offsets);
}

/* ---- triangular_solve and cholesky ------------------------------------------------------- */

/* x + k I over x's last two dimensions (x [..., n, n]): away from singular. */
static kiln_tensor *plus_diagonal(kiln_ctx *cx, kiln_tensor *x, double k) {
    const kiln_shape *s = kiln_tensor_shape(x);
    int64_t n = s->dims[s->rank - 1];
    double eye[16 * 16] = {0};
    for (int64_t i = 0; i < n && n <= 16; i++)
        eye[i * n + i] = k;
    kiln_tensor *d =
        kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(n, n), eye, (size_t)(n * n) * sizeof *eye);
    return kiln_add(cx, x, kiln_broadcast_to(cx, d, *s));
}

typedef struct {
    bool left, lower, unit;
    kiln_solve_transpose transpose;
} solve_case;

static kiln_status solve_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    const solve_case *c = user;
    out[0] = kiln_triangular_solve(cx, plus_diagonal(cx, in[0], 4), in[1], c->left, c->lower,
                                   c->unit, c->transpose);
    return done(cx);
}
static const solve_case solve_left_lower = {true, true, false, KILN_TRANSPOSE_NONE};
static const solve_case solve_left_upper_t = {true, false, false, KILN_TRANSPOSE_T};
static const solve_case solve_right_lower_t_unit = {false, true, true, KILN_TRANSPOSE_T};
static const solve_case solve_right_upper = {false, false, false, KILN_TRANSPOSE_NONE};

/* cholesky of x + 5 I (only the triangle read matters), or of x x^T + 3 I (the matrix a
 * user factors) */
static kiln_status cholesky_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *user) {
    const int *which = user; /* 0: lower, 1: upper, 2: lower of x x^T + 3 I */
    kiln_tensor *a = in[0];
    if (*which == 2) a = kiln_matmul(cx, a, kiln_transpose(cx, a, KILN_DIMS(1, 0)));
    out[0] = kiln_cholesky(cx, plus_diagonal(cx, a, *which == 2 ? 3 : 5), *which != 1);
    return done(cx);
}
static const int chol_which[3] = {0, 1, 2};

/* ---- dot_general ------------------------------------------------------------------------ */

static kiln_status dot_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    out[0] = kiln_dot_general(cx, in[0], in[1], user, KILN_DTYPE_COUNT);
    return done(cx);
}

static kiln_dot_params dot_matmul = {.lhs_contracting_dims = DIMS(1),
                                     .rhs_contracting_dims = DIMS(0)};
/* lhs [b, k, i], rhs [j, b, k] -> [b, i, j]: batch dims in different places, the
 * contraction over the middle of lhs and the end of rhs. */
static kiln_dot_params dot_batch_transposed = {.lhs_batching_dims = DIMS(0),
                                               .rhs_batching_dims = DIMS(1),
                                               .lhs_contracting_dims = DIMS(1),
                                               .rhs_contracting_dims = DIMS(2)};
/* Two contracting dimensions paired in crossed order. */
static kiln_dot_params dot_two_contractions = {.lhs_contracting_dims = DIMS(0, 2),
                                               .rhs_contracting_dims = DIMS(2, 0)};
static kiln_dot_params dot_inner = {.lhs_contracting_dims = DIMS(0),
                                    .rhs_contracting_dims = DIMS(0)};
/* A batched outer product: no contraction, batch dimensions last on the rhs. */
static kiln_dot_params dot_batched_outer = {.lhs_batching_dims = DIMS(0),
                                            .rhs_batching_dims = DIMS(1)};
/* Two batch dimensions given in swapped order. */
static kiln_dot_params dot_two_batches = {.lhs_batching_dims = DIMS(0, 1),
                                          .rhs_batching_dims = DIMS(2, 0),
                                          .lhs_contracting_dims = DIMS(3),
                                          .rhs_contracting_dims = DIMS(1)};

/* f64 x f32 -> f64: the f32 operand is converted to the result dtype before multiplying,
 * and so is it in the cotangent contraction. */
static kiln_status dot_mixed_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                void *user) {
    (void)user;
    out[0] = kiln_dot_general(cx, in[0], in[1], &dot_matmul, KILN_F64);
    return done(cx);
}

/* ---- convolution ------------------------------------------------------------------------ */

static kiln_status conv_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    out[0] = kiln_convolution(cx, in[0], in[1], user, KILN_DTYPE_COUNT);
    return done(cx);
}

/* NCHW input, OIHW kernel, NCHW output; lists in parentheses. */
#define NCHW(strides, low, high, lhs_dil, rhs_dil, fgc, bgc)                                   \
    {                                                                                          \
        .input_batch_dimension = 0, .input_feature_dimension = 1,                              \
        .input_spatial_dimensions = DIMS(2, 3), .kernel_input_feature_dimension = 1,           \
        .kernel_output_feature_dimension = 0, .kernel_spatial_dimensions = DIMS(2, 3),         \
        .output_batch_dimension = 0, .output_feature_dimension = 1,                            \
        .output_spatial_dimensions = DIMS(2, 3), .window_strides = DIMS strides,               \
        .padding_low = DIMS low, .padding_high = DIMS high, .lhs_dilation = DIMS lhs_dil,      \
        .rhs_dilation = DIMS rhs_dil, .feature_group_count = (fgc), .batch_group_count = (bgc) \
    }
/* NHWC input, HWIO kernel, NHWC output. */
#define NHWC(strides, low, high, lhs_dil, rhs_dil, fgc, bgc)                                   \
    {                                                                                          \
        .input_batch_dimension = 0, .input_feature_dimension = 3,                              \
        .input_spatial_dimensions = DIMS(1, 2), .kernel_input_feature_dimension = 2,           \
        .kernel_output_feature_dimension = 3, .kernel_spatial_dimensions = DIMS(0, 1),         \
        .output_batch_dimension = 0, .output_feature_dimension = 3,                            \
        .output_spatial_dimensions = DIMS(1, 2), .window_strides = DIMS strides,               \
        .padding_low = DIMS low, .padding_high = DIMS high, .lhs_dilation = DIMS lhs_dil,      \
        .rhs_dilation = DIMS rhs_dil, .feature_group_count = (fgc), .batch_group_count = (bgc) \
    }

static kiln_conv_params conv_plain = NCHW((1, 1), (0, 0), (0, 0), (1, 1), (1, 1), 1, 1);
static kiln_conv_params conv_stride_pad = NCHW((2, 2), (1, 0), (2, 1), (1, 1), (1, 1), 1, 1);
static kiln_conv_params conv_dilations = NCHW((1, 1), (1, 1), (1, 0), (2, 1), (2, 2), 1, 1);
static kiln_conv_params conv_negative_pad = NCHW((1, 2), (-1, 1), (0, -1), (1, 1), (1, 1), 1, 1);
static kiln_conv_params conv_feature_groups = NCHW((2, 1), (1, 1), (1, 1), (1, 1), (1, 1), 2, 1);
static kiln_conv_params conv_batch_groups = NCHW((1, 1), (0, 1), (1, 0), (1, 1), (1, 1), 1, 2);
static kiln_conv_params conv_nhwc = NHWC((2, 1), (1, 1), (1, 1), (1, 1), (1, 1), 1, 1);
static kiln_conv_params conv_nhwc_depthwise = NHWC((1, 1), (1, 2), (1, 2), (1, 1), (1, 2), 3, 1);
static kiln_conv_params conv_nhwc_batch_groups = NHWC((2, 2), (0, 0), (0, 0), (1, 1), (1, 1), 1, 3);

/* Output dimensions in yet another order: [spatial0, feature, batch, spatial1]. */
static kiln_conv_params conv_odd_output = {
    .input_batch_dimension = 1,
    .input_feature_dimension = 0,
    .input_spatial_dimensions = DIMS(3, 2),
    .kernel_input_feature_dimension = 3,
    .kernel_output_feature_dimension = 1,
    .kernel_spatial_dimensions = DIMS(0, 2),
    .output_batch_dimension = 2,
    .output_feature_dimension = 1,
    .output_spatial_dimensions = DIMS(0, 3),
    .window_strides = DIMS(2, 1),
    .padding_low = DIMS(0, 1),
    .padding_high = DIMS(1, 0),
    .lhs_dilation = DIMS(1, 2),
    .rhs_dilation = DIMS(1, 1),
    .feature_group_count = 2,
    .batch_group_count = 1,
};
/* 1-D, stride 3: the last input element is in no window. */
static kiln_conv_params conv_1d_uncovered = {
    .input_batch_dimension = 0,
    .input_feature_dimension = 1,
    .input_spatial_dimensions = DIMS(2),
    .kernel_input_feature_dimension = 1,
    .kernel_output_feature_dimension = 0,
    .kernel_spatial_dimensions = DIMS(2),
    .output_batch_dimension = 0,
    .output_feature_dimension = 1,
    .output_spatial_dimensions = DIMS(2),
    .window_strides = DIMS(3),
    .padding_low = DIMS(0),
    .padding_high = DIMS(0),
    .lhs_dilation = DIMS(1),
    .rhs_dilation = DIMS(1),
    .feature_group_count = 1,
    .batch_group_count = 1,
};

/* ---- reduce_window, select_and_scatter ------------------------------------------------- */

typedef struct window_case {
    kiln_window_params w;
    const kiln_region *(*region)(void);
    double init; /* used when the init value is not an argument */
} window_case;

static kiln_status window_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    const window_case *c = user;
    kiln_tensor *init = kiln_scalar(cx, c->init, KILN_F64), *x = spread(cx, in[0]);
    return kiln_reduce_window(cx, &x, &init, 1, &c->w, c->region(), out);
}

/* The init value is argument 1 (differentiated). */
static kiln_status window_init_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                  void *user) {
    const window_case *c = user;
    kiln_tensor *x = spread(cx, in[0]);
    return kiln_reduce_window(cx, &x, &in[1], 1, &c->w, c->region(), out);
}

static window_case win_max_2x2 = {
    .w = {.window_dimensions = DIMS(2, 2), .window_strides = DIMS(2, 2)},
    .region = kiln_region_maximum,
    .init = -INFINITY};
static window_case win_max_overlap_pad = {.w = {.window_dimensions = DIMS(3, 3),
                                                .window_strides = DIMS(2, 2),
                                                .padding_low = DIMS(1, 1),
                                                .padding_high = DIMS(1, 0)},
                                          .region = kiln_region_maximum,
                                          .init = -INFINITY};
static window_case win_min_strided = {
    .w = {.window_dimensions = DIMS(2, 3), .window_strides = DIMS(1, 2)},
    .region = kiln_region_minimum,
    .init = INFINITY};
static window_case win_max_dilated = {.w = {.window_dimensions = DIMS(2, 2),
                                            .window_strides = DIMS(1, 2),
                                            .window_dilations = DIMS(2, 1),
                                            .base_dilations = DIMS(1, 2),
                                            .padding_low = DIMS(0, 1),
                                            .padding_high = DIMS(1, 1)},
                                      .region = kiln_region_maximum,
                                      .init = -INFINITY};
/* A finite init value that wins some windows (spread inputs from 0 to 4.8, init near
 * 2.41, away from them all). */
static window_case win_max_init_wins = {.w = {.window_dimensions = DIMS(2, 2),
                                              .window_strides = DIMS(1, 2),
                                              .padding_low = DIMS(1, 0),
                                              .padding_high = DIMS(0, 1)},
                                        .region = kiln_region_maximum};
/* Disjoint windows (stride >= window) with padding and skipped elements, and an init
 * value that wins some of them. */
static window_case win_max_disjoint_init = {.w = {.window_dimensions = DIMS(2, 2),
                                                  .window_strides = DIMS(2, 3),
                                                  .padding_low = DIMS(1, 0),
                                                  .padding_high = DIMS(0, 1)},
                                            .region = kiln_region_maximum};
static window_case win_min_disjoint = {
    .w = {.window_dimensions = DIMS(3, 1), .window_strides = DIMS(3, 1)},
    .region = kiln_region_minimum,
    .init = INFINITY};
static window_case win_max_init_dilated = {
    .w = {.window_dimensions = DIMS(2, 2), .window_dilations = DIMS(2, 1)},
    .region = kiln_region_maximum};
static window_case win_add = {.w = {.window_dimensions = DIMS(3, 2),
                                    .window_strides = DIMS(2, 1),
                                    .padding_low = DIMS(1, 0),
                                    .padding_high = DIMS(1, 1)},
                              .region = kiln_region_add};
static window_case win_add_dilated = {.w = {.window_dimensions = DIMS(2, 3),
                                            .window_strides = DIMS(3, 1),
                                            .base_dilations = DIMS(2, 1),
                                            .window_dilations = DIMS(1, 2),
                                            .padding_low = DIMS(-1, 2),
                                            .padding_high = DIMS(2, 0)},
                                      .region = kiln_region_add};

static kiln_status add_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, a[0], a[1]);
    return done(cx);
}
static kiln_status max_region(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_maximum(cx, a[0], a[1]);
    return done(cx);
}

/* A traced (non-builtin) add region and a traced max region. */
static kiln_status window_traced_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                    void *user) {
    (void)user;
    kiln_window_params w = {.window_dimensions = DIMS(2, 2), .window_strides = DIMS(1, 2)};
    kiln_region add = {add_region, NULL}, max = {max_region, NULL};
    kiln_tensor *zero = kiln_scalar(cx, 0, KILN_F64), *low = kiln_scalar(cx, -1e300, KILN_F64);
    kiln_tensor *s, *m;
    kiln_reduce_window(cx, in, &zero, 1, &w, &add, &s);
    kiln_tensor *x = spread(cx, in[0]);
    kiln_reduce_window(cx, &x, &low, 1, &w, &max, &m);
    out[0] = kiln_add(cx, s, kiln_multiply(cx, m, m));
    return done(cx);
}

typedef struct sas_case {
    kiln_window_params w;
    const kiln_region *(*select)(void);
} sas_case;

/* select_and_scatter(operand, source, init): all three are arguments. */
static kiln_status sas_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    const sas_case *c = user;
    out[0] = kiln_select_and_scatter(cx, spread(cx, in[0]), in[1], in[2], &c->w, c->select(),
                                     kiln_region_add());
    return done(cx);
}

static sas_case sas_pool = {.w = {.window_dimensions = DIMS(2, 2), .window_strides = DIMS(2, 2)},
                            .select = kiln_region_greater_equal};
static sas_case sas_overlap = {.w = {.window_dimensions = DIMS(3, 3),
                                     .window_strides = DIMS(2, 2),
                                     .padding_low = DIMS(1, 1),
                                     .padding_high = DIMS(1, 1)},
                               .select = kiln_region_less_equal};

/* ---- gather, scatter -------------------------------------------------------------------- */

static kiln_status take_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    out[0] = kiln_take(cx, in[0], in[1], *(const int64_t *)user);
    return done(cx);
}
static const int64_t axis0 = 0, axis1 = 1;

static kiln_status gather_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    out[0] = kiln_gather(cx, in[0], in[1], user);
    return done(cx);
}

/* Rows of [6,4] at clamped starts: whole rows (collapsed) ... */
static kiln_gather_params gather_rows = {.offset_dims = DIMS(1),
                                         .collapsed_slice_dims = DIMS(0),
                                         .start_index_map = DIMS(0),
                                         .index_vector_dim = 1,
                                         .slice_sizes = DIMS(1, 4)};
/* ... and 2x3 windows (not collapsed), starting past either end. */
static kiln_gather_params gather_windows = {.offset_dims = DIMS(1, 2),
                                            .start_index_map = DIMS(0),
                                            .index_vector_dim = 1,
                                            .slice_sizes = DIMS(2, 3)};
/* 2-D starts (index vectors along dimension 0 of the indices) into [5,6]. */
static kiln_gather_params gather_2d = {.offset_dims = DIMS(1, 2),
                                       .start_index_map = DIMS(1, 0),
                                       .index_vector_dim = 0,
                                       .slice_sizes = DIMS(2, 2)};
/* take_along_axis through batching dimensions: out[b, j] = x[b, idx[b, j]]. */
static kiln_gather_params gather_batched = {.collapsed_slice_dims = DIMS(1),
                                            .operand_batching_dims = DIMS(0),
                                            .start_indices_batching_dims = DIMS(0),
                                            .start_index_map = DIMS(1),
                                            .index_vector_dim = 2,
                                            .slice_sizes = DIMS(1, 1)};

typedef struct scatter_case {
    kiln_scatter_params p;
    const kiln_region *(*region)(void);
} scatter_case;

static kiln_status scatter_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    const scatter_case *c = user;
    return kiln_scatter(cx, &in[0], 1, in[1], &in[2], &c->p, c->region(), out);
}

/* Rows added into [5,3] (the one-hot / embedding-gradient pattern), with a repeated
 * row and rows past either end (skipped). */
static scatter_case scatter_rows_add = {.p = {.update_window_dims = DIMS(1),
                                              .inserted_window_dims = DIMS(0),
                                              .scatter_dims_to_operand_dims = DIMS(0),
                                              .index_vector_dim = 1},
                                        .region = kiln_region_add};
static scatter_case scatter_rows_replace = {.p = {.update_window_dims = DIMS(1),
                                                  .inserted_window_dims = DIMS(0),
                                                  .scatter_dims_to_operand_dims = DIMS(0),
                                                  .index_vector_dim = 1},
                                            .region = kiln_region_replace};
static scatter_case scatter_rows_max = {.p = {.update_window_dims = DIMS(1),
                                              .inserted_window_dims = DIMS(0),
                                              .scatter_dims_to_operand_dims = DIMS(0),
                                              .index_vector_dim = 1},
                                        .region = kiln_region_maximum};
static scatter_case scatter_rows_multiply_unique = {.p = {.update_window_dims = DIMS(1),
                                                          .inserted_window_dims = DIMS(0),
                                                          .scatter_dims_to_operand_dims = DIMS(0),
                                                          .index_vector_dim = 1,
                                                          .unique_indices = true},
                                                    .region = kiln_region_multiply};
/* 3x4 windows into [6,4] straddling the edges: their in-bounds parts land. */
static scatter_case scatter_straddle = {.p = {.update_window_dims = DIMS(1, 2),
                                              .scatter_dims_to_operand_dims = DIMS(0),
                                              .index_vector_dim = 1},
                                        .region = kiln_region_add};
/* Scalars at 2-D positions (index vectors last), replace with a repeated position. */
static scatter_case scatter_points_replace = {.p = {.inserted_window_dims = DIMS(0, 1),
                                                    .scatter_dims_to_operand_dims = DIMS(1, 0),
                                                    .index_vector_dim = 1},
                                              .region = kiln_region_replace};

static scatter_case scatter_straddle_min = {.p = {.update_window_dims = DIMS(1, 2),
                                                  .scatter_dims_to_operand_dims = DIMS(0),
                                                  .index_vector_dim = 1},
                                            .region = kiln_region_minimum};

/* max/min with the input and the updates spread apart (no near ties). */
static kiln_status scatter_spread_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                     void *user) {
    const scatter_case *c = user;
    kiln_tensor *x = spread(cx, in[0]), *u = spread(cx, in[2]);
    u = kiln_add(cx, u, kiln_scalar(cx, 0.125, KILN_F64));
    return kiln_scatter(cx, &x, 1, in[1], &u, &c->p, c->region(), out);
}

/* A traced add region: recognised as add. */
static kiln_status scatter_traced_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                     void *user) {
    (void)user;
    kiln_region add = {add_region, NULL};
    return kiln_scatter(cx, &in[0], 1, in[1], &in[2], &scatter_rows_add.p, &add, out);
}

/* ---- dynamic slices -------------------------------------------------------------------- */

static kiln_status dynamic_slice_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                    void *user) {
    out[0] = kiln_dynamic_slice(cx, in[0], &in[1], *(const kiln_dims *)user);
    return done(cx);
}
static const kiln_dims ds_sizes_33 = DIMS(3, 3), ds_sizes_32 = DIMS(3, 2);

static kiln_status dus_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)user;
    out[0] = kiln_dynamic_update_slice(cx, in[0], in[1], &in[2]);
    return done(cx);
}

/* ---- sort --------------------------------------------------------------------------------- */

typedef struct sort_case {
    int32_t n;
    int64_t dim;
    bool custom; /* a traced comparator (descending by input 1) instead of kiln_region_less() */
} sort_case;

static kiln_status by_second_desc(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_compare(cx, a[2], a[3], KILN_CMP_GT, KILN_CMP_DEFAULT);
    return done(cx);
}

/* Sorts the arguments together and mixes the results (so each one's cotangent matters). */
static kiln_status sort_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    const sort_case *c = user;
    kiln_region custom = {by_second_desc, NULL};
    kiln_tensor *sorted[3];
    kiln_tensor *keys[3] = {in[0], c->n > 1 ? in[1] : NULL, c->n > 2 ? in[2] : NULL};
    keys[c->custom ? 1 : 0] = spread(cx, keys[c->custom ? 1 : 0]);
    kiln_status s =
        kiln_sort(cx, keys, c->n, c->dim, true, c->custom ? &custom : kiln_region_less(), sorted);
    if (s != KILN_OK) return s;
    for (int32_t i = 0; i < c->n; i++)
        out[i] = sorted[i];
    return done(cx);
}
static sort_case sort_one = {1, 1, false}, sort_two_dim0 = {2, 0, false},
                 sort_custom = {2, -1, true}, sort_three = {3, -1, false};

/* ---- the cases -------------------------------------------------------------------------- */

static const int64_t rows_4[] = {2, 0, 4, 2};
static const int64_t cols_2x2[] = {4, 1, 1, 3};
static const int64_t clamp_rows[] = {-2, 9, 3};
static const int64_t starts_2d[] = {0, 4, 5, -1, 2, 2, 3, 1}; /* [2,4]: (col, row) pairs */
static const int64_t along[] = {3, 0, 0, 2, 1, 1, 0, 3, 2, 2, 2, 0};
static const int64_t scatter_rows[] = {1, 3, 1, 9, -1};
static const int64_t straddle_rows[] = {4, -1};
static const int64_t unique_rows[] = {3, 0, 7};
static const int64_t points[] = {1, 2, 3, 0, 1, 2, 0, 4}; /* [4,2]: (col, row), repeated */
static const int64_t start_2[] = {2}, start_1[] = {1}, start_5[] = {5}, start_m3[] = {-3},
                     start_4[] = {4};

/* CASE(name, op, n_out, fn, user, args...) */
#define CASE(name_, op_, n_out_, fn_, user_, ...)                                            \
    {                                                                                        \
        .name = (name_), .op = KILN_OP_##op_,                                                \
        .n_args = (int32_t)(sizeof((grad_case_arg[]){__VA_ARGS__}) / sizeof(grad_case_arg)), \
        .args = {__VA_ARGS__}, .n_out = (n_out_), .fn = {                                    \
            (fn_),                                                                           \
            (void *)(user_)                                                                  \
        }                                                                                    \
    }

/* The collectives on one process (an unbound ctx): each is the identity there, so these
 * check that the rules emit well-formed transposes; tests/runtime/test_spmd.c checks the
 * gradients across processes. */
static kiln_status collective_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                 void *user) {
    int which = *(const int *)user;
    static const int64_t self[] = {0, 0};
    kiln_tensor *x = kiln_sine(cx, in[0]);
    switch (which) {
    case 0: out[0] = kiln_all_reduce(cx, x, kiln_region_add(), NULL); break;
    case 1: out[0] = kiln_all_gather(cx, x, 1, NULL); break;
    case 2: out[0] = kiln_reduce_scatter(cx, x, 0, kiln_region_add(), NULL); break;
    case 3: out[0] = kiln_all_to_all(cx, x, 1, 0, 1, NULL); break;
    case 4: out[0] = kiln_collective_permute(cx, x, self, 1, 0); break;
    case 5: out[0] = kiln_collective_broadcast(cx, x, NULL); break;
    default: out[0] = kiln_collective_reduce(cx, x, kiln_region_add(), NULL); break;
    }
    return kiln_ctx_status(cx);
}
static const int coll_which[7] = {0, 1, 2, 3, 4, 5, 6};

const grad_case kiln_test_cases_rules[] = {
    CASE("all_reduce sum", ALL_REDUCE, 1, collective_fn, &coll_which[0], F64(-1, 1, 2, 3)),
    CASE("all_gather", ALL_GATHER, 1, collective_fn, &coll_which[1], F64(-1, 1, 2, 3)),
    CASE("reduce_scatter sum", REDUCE_SCATTER, 1, collective_fn, &coll_which[2], F64(-1, 1, 2, 3)),
    CASE("all_to_all", ALL_TO_ALL, 1, collective_fn, &coll_which[3], F64(-1, 1, 2, 3)),
    CASE("collective_permute", COLLECTIVE_PERMUTE, 1, collective_fn, &coll_which[4],
         F64(-1, 1, 2, 3)),
    CASE("collective_broadcast", COLLECTIVE_BROADCAST, 1, collective_fn, &coll_which[5],
         F64(-1, 1, 2, 3)),
    CASE("collective_reduce sum", COLLECTIVE_REDUCE, 1, collective_fn, &coll_which[6],
         F64(-1, 1, 2, 3)),
    /* dot_general */
    CASE("dot_general matmul", DOT_GENERAL, 1, dot_fn, &dot_matmul, F64(-1, 1, 3, 4),
         F64(-1, 1, 4, 5)),
    CASE("dot_general batch and transposed contraction", DOT_GENERAL, 1, dot_fn,
         &dot_batch_transposed, F64(-1, 1, 2, 4, 3), F64(-1, 1, 5, 2, 4)),
    CASE("dot_general two crossed contractions", DOT_GENERAL, 1, dot_fn, &dot_two_contractions,
         F64(-1, 1, 3, 2, 4), F64(-1, 1, 4, 5, 3)),
    CASE("dot_general inner product", DOT_GENERAL, 1, dot_fn, &dot_inner, F64(-1, 1, 6),
         F64(-1, 1, 6)),
    CASE("dot_general batched outer product", DOT_GENERAL, 1, dot_fn, &dot_batched_outer,
         F64(-1, 1, 2, 3), F64(-1, 1, 4, 2)),
    CASE("dot_general two swapped batch dims", DOT_GENERAL, 1, dot_fn, &dot_two_batches,
         F64(-1, 1, 2, 3, 4, 5), F64(-1, 1, 3, 5, 2, 2)),
    CASE("dot_general f64 x f32 operands to f64", DOT_GENERAL, 1, dot_mixed_fn, NULL,
         F64(-1, 1, 3, 4),
         {.dtype = KILN_F32, .shape = SHAPE(4, 2), .lo = -1, .hi = 1, .fixed = true}),
    /* triangular_solve, cholesky */
    CASE("triangular_solve left lower", TRIANGULAR_SOLVE, 1, solve_fn, &solve_left_lower,
         F64(-1, 1, 3, 3), F64(-1, 1, 3, 4)),
    CASE("triangular_solve left upper transposed, batched", TRIANGULAR_SOLVE, 1, solve_fn,
         &solve_left_upper_t, F64(-1, 1, 2, 3, 3), F64(-1, 1, 2, 3, 2)),
    CASE("triangular_solve right lower transposed unit", TRIANGULAR_SOLVE, 1, solve_fn,
         &solve_right_lower_t_unit, F64(-1, 1, 3, 3), F64(-1, 1, 4, 3)),
    CASE("triangular_solve right upper", TRIANGULAR_SOLVE, 1, solve_fn, &solve_right_upper,
         F64(-1, 1, 4, 4), F64(-1, 1, 2, 4)),
    CASE("cholesky lower", CHOLESKY, 1, cholesky_fn, &chol_which[0], F64(-0.5, 0.5, 3, 3)),
    CASE("cholesky upper, batched", CHOLESKY, 1, cholesky_fn, &chol_which[1],
         F64(-0.5, 0.5, 2, 3, 3)),
    CASE("cholesky of x x^T + 3 I", CHOLESKY, 1, cholesky_fn, &chol_which[2], F64(-1, 1, 3, 3)),
    /* convolution */
    CASE("convolution NCHW", CONVOLUTION, 1, conv_fn, &conv_plain, F64(-1, 1, 2, 3, 5, 5),
         F64(-1, 1, 4, 3, 3, 3)),
    CASE("convolution stride 2 asymmetric padding", CONVOLUTION, 1, conv_fn, &conv_stride_pad,
         F64(-1, 1, 1, 2, 7, 6), F64(-1, 1, 3, 2, 3, 2)),
    CASE("convolution lhs and rhs dilation", CONVOLUTION, 1, conv_fn, &conv_dilations,
         F64(-1, 1, 1, 2, 5, 4), F64(-1, 1, 2, 2, 2, 3)),
    CASE("convolution negative padding", CONVOLUTION, 1, conv_fn, &conv_negative_pad,
         F64(-1, 1, 2, 2, 6, 7), F64(-1, 1, 3, 2, 2, 3)),
    CASE("convolution feature groups", CONVOLUTION, 1, conv_fn, &conv_feature_groups,
         F64(-1, 1, 2, 4, 5, 4), F64(-1, 1, 6, 2, 3, 3)),
    CASE("convolution batch groups", CONVOLUTION, 1, conv_fn, &conv_batch_groups,
         F64(-1, 1, 4, 3, 5, 4), F64(-1, 1, 4, 3, 2, 3)),
    CASE("convolution NHWC HWIO", CONVOLUTION, 1, conv_fn, &conv_nhwc, F64(-1, 1, 2, 6, 5, 3),
         F64(-1, 1, 3, 3, 3, 4)),
    CASE("convolution NHWC depthwise dilated", CONVOLUTION, 1, conv_fn, &conv_nhwc_depthwise,
         F64(-1, 1, 1, 5, 6, 3), F64(-1, 1, 3, 2, 1, 6)),
    CASE("convolution NHWC batch groups stride 2", CONVOLUTION, 1, conv_fn, &conv_nhwc_batch_groups,
         F64(-1, 1, 6, 5, 5, 2), F64(-1, 1, 2, 2, 2, 3)),
    CASE("convolution permuted dimension numbers", CONVOLUTION, 1, conv_fn, &conv_odd_output,
         F64(-1, 1, 4, 2, 5, 3), F64(-1, 1, 2, 4, 2, 2)),
    CASE("convolution 1-D stride 3 uncovered tail", CONVOLUTION, 1, conv_fn, &conv_1d_uncovered,
         F64(-1, 1, 2, 2, 10), F64(-1, 1, 3, 2, 3)),
    /* reduce_window */
    CASE("reduce_window max 2x2 stride 2", REDUCE_WINDOW, 1, window_fn, &win_max_2x2,
         F64(-1, 1, 4, 6)),
    CASE("reduce_window max 3x3 stride 2 padded", REDUCE_WINDOW, 1, window_fn, &win_max_overlap_pad,
         F64(-1, 1, 5, 6)),
    CASE("reduce_window min strided", REDUCE_WINDOW, 1, window_fn, &win_min_strided,
         F64(-1, 1, 4, 7)),
    CASE("reduce_window max dilated", REDUCE_WINDOW, 1, window_fn, &win_max_dilated,
         F64(-1, 1, 5, 4)),
    CASE("reduce_window max with a winning init", REDUCE_WINDOW, 1, window_init_fn,
         &win_max_init_wins, F64(0, 1, 4, 5), F64_SCALAR(2.4, 2.42)),
    CASE("reduce_window max disjoint padded with a winning init", REDUCE_WINDOW, 1, window_init_fn,
         &win_max_disjoint_init, F64(0, 1, 5, 7), F64_SCALAR(2.4, 2.42)),
    CASE("reduce_window min disjoint", REDUCE_WINDOW, 1, window_fn, &win_min_disjoint,
         F64(-1, 1, 6, 4)),
    CASE("reduce_window max dilated with a winning init", REDUCE_WINDOW, 1, window_init_fn,
         &win_max_init_dilated, F64(0, 1, 5, 4), F64_SCALAR(2.4, 2.42)),
    CASE("reduce_window add padded", REDUCE_WINDOW, 1, window_init_fn, &win_add, F64(-1, 1, 5, 4),
         F64_SCALAR(-1, 1)),
    CASE("reduce_window add dilated", REDUCE_WINDOW, 1, window_init_fn, &win_add_dilated,
         F64(-1, 1, 4, 5), F64_SCALAR(-1, 1)),
    CASE("reduce_window traced add and max regions", REDUCE_WINDOW, 1, window_traced_fn, NULL,
         F64(-1, 1, 3, 6)),
    /* select_and_scatter */
    CASE("select_and_scatter ge 2x2", SELECT_AND_SCATTER, 1, sas_fn, &sas_pool, F64(-1, 1, 4, 6),
         F64(-1, 1, 2, 3), F64_SCALAR(-1, 1)),
    CASE("select_and_scatter le overlapping padded", SELECT_AND_SCATTER, 1, sas_fn, &sas_overlap,
         F64(-1, 1, 5, 6), F64(-1, 1, 3, 3), F64_SCALAR(-1, 1)),
    /* gather */
    CASE("gather take rows repeated", GATHER, 1, take_fn, (void *)&axis0, F64(-1, 1, 5, 3),
         FIXED_INTS(KILN_I32, rows_4, 4)),
    CASE("gather take 2-D indices axis 1", GATHER, 1, take_fn, (void *)&axis1, F64(-1, 1, 3, 5),
         FIXED_INTS(KILN_I64, cols_2x2, 2, 2)),
    CASE("gather rows clamped", GATHER, 1, gather_fn, &gather_rows, F64(-1, 1, 6, 4),
         FIXED_INTS(KILN_I32, clamp_rows, 3, 1)),
    CASE("gather windows clamped", GATHER, 1, gather_fn, &gather_windows, F64(-1, 1, 6, 4),
         FIXED_INTS(KILN_I8, clamp_rows, 3, 1)),
    CASE("gather 2-D starts clamped", GATHER, 1, gather_fn, &gather_2d, F64(-1, 1, 5, 6),
         FIXED_INTS(KILN_I32, starts_2d, 2, 4)),
    CASE("gather batched take_along_axis", GATHER, 1, gather_fn, &gather_batched, F64(-1, 1, 3, 4),
         FIXED_INTS(KILN_I32, along, 3, 4)),
    /* scatter */
    CASE("scatter add rows out of range", SCATTER, 1, scatter_fn, &scatter_rows_add,
         F64(-1, 1, 5, 3), FIXED_INTS(KILN_I32, scatter_rows, 5, 1), F64(-1, 1, 5, 3)),
    CASE("scatter replace rows repeated", SCATTER, 1, scatter_fn, &scatter_rows_replace,
         F64(-1, 1, 5, 3), FIXED_INTS(KILN_I32, scatter_rows, 5, 1), F64(-1, 1, 5, 3)),
    CASE("scatter add windows straddling edges", SCATTER, 1, scatter_fn, &scatter_straddle,
         F64(-1, 1, 6, 4), FIXED_INTS(KILN_I64, straddle_rows, 2, 1), F64(-1, 1, 2, 3, 4)),
    CASE("scatter replace points repeated", SCATTER, 1, scatter_fn, &scatter_points_replace,
         F64(-1, 1, 5, 3), FIXED_INTS(KILN_U32, points, 4, 2), F64(-1, 1, 4)),
    CASE("scatter max rows repeated and out of range", SCATTER, 1, scatter_spread_fn,
         &scatter_rows_max, F64(-1, 1, 5, 3), FIXED_INTS(KILN_I32, scatter_rows, 5, 1),
         F64(-1, 1, 5, 3)),
    CASE("scatter min windows straddling edges", SCATTER, 1, scatter_spread_fn,
         &scatter_straddle_min, F64(-1, 1, 6, 4), FIXED_INTS(KILN_I64, straddle_rows, 2, 1),
         F64(-1, 1, 2, 3, 4)),
    CASE("scatter multiply unique rows", SCATTER, 1, scatter_fn, &scatter_rows_multiply_unique,
         F64(-1, 1, 5, 3), FIXED_INTS(KILN_I32, unique_rows, 3, 1), F64(-1, 1, 3, 3)),
    CASE("scatter traced add region", SCATTER, 1, scatter_traced_fn, NULL, F64(-1, 1, 5, 3),
         FIXED_INTS(KILN_I32, scatter_rows, 5, 1), F64(-1, 1, 5, 3)),
    /* dynamic_slice, dynamic_update_slice */
    CASE("dynamic_slice in range", DYNAMIC_SLICE, 1, dynamic_slice_fn, (void *)&ds_sizes_33,
         F64(-1, 1, 6, 5), FIXED_SCALAR_INT(KILN_I32, start_2),
         FIXED_SCALAR_INT(KILN_I32, start_1)),
    CASE("dynamic_slice out-of-range starts", DYNAMIC_SLICE, 1, dynamic_slice_fn,
         (void *)&ds_sizes_32, F64(-1, 1, 6, 5), FIXED_SCALAR_INT(KILN_I64, start_5),
         FIXED_SCALAR_INT(KILN_I64, start_m3)),
    CASE("dynamic_update_slice clamped", DYNAMIC_UPDATE_SLICE, 1, dus_fn, NULL, F64(-1, 1, 5, 5),
         F64(-1, 1, 2, 3), FIXED_SCALAR_INT(KILN_I32, start_4),
         FIXED_SCALAR_INT(KILN_I32, start_1)),
    /* sort */
    CASE("sort one input along dim 1", SORT, 1, sort_fn, &sort_one, F64(-1, 1, 3, 5)),
    CASE("sort keys and values along dim 0", SORT, 2, sort_fn, &sort_two_dim0, F64(-1, 1, 4, 3),
         F64(-1, 1, 4, 3)),
    CASE("sort traced comparator on input 2", SORT, 2, sort_fn, &sort_custom, F64(-1, 1, 3, 4),
         F64(-1, 1, 3, 4)),
    CASE("sort three inputs dim -1", SORT, 3, sort_fn, &sort_three, F64(-1, 1, 2, 5),
         F64(-1, 1, 2, 5), F64(-1, 1, 2, 5)),
};

const int kiln_test_n_cases_rules =
    (int)(sizeof kiln_test_cases_rules / sizeof kiln_test_cases_rules[0]);
