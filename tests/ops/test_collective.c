/* SPDX-License-Identifier: Apache-2.0 */
/* The collectives (kiln/spmd.h), eagerly, on the processes of a local communicator: what
 * each process gets, against values computed here from the spec's definitions. */
#include <math.h>
#include <string.h>

#include "kiln/kiln.h"
#include "kiln/spmd.h"
#include "op_cases.h"
#include "test_util.h"

#define MAXP 8

/* A grid and what each process's body does; out[p] holds process p's result. */
typedef struct run {
    int32_t replicas, partitions;
    kiln_tensor *(*body)(kiln_ctx *cx, int32_t process, const struct run *r);
    const kiln_replica_groups *groups;
    const int64_t *pairs;
    int32_t n_pairs;
    int64_t dim, dim2, count;
    kiln_dtype dtype;
    kiln_tensor *out[MAXP];
} run;

static kiln_status body_fn(kiln_ctx *cx, int32_t process, void *user) {
    run *r = user;
    kiln_tensor *t = r->body(cx, process, r);
    if (t) r->out[process] = kiln_tensor_retain(t);
    return kiln_ctx_status(cx);
}

static void run_all(kiln_ctx *cx, run *r) {
    kiln_comm_options o = kiln_comm_options_default();
    o.num_replicas = r->replicas;
    o.num_partitions = r->partitions;
    o.timeout_ms = 20000;
    kiln_comm *comm;
    cr_assert_eq(kiln_comm_create_local(cx, &o, &comm), KILN_OK, "%s", kiln_ctx_error_message(cx));
    memset(r->out, 0, sizeof r->out);
    kiln_status s = kiln_spmd_run(cx, comm, body_fn, r);
    kiln_comm_release(comm);
    cr_assert_eq(s, KILN_OK, "%s", kiln_ctx_error_message(cx));
}

static void release_all(run *r) {
    for (int i = 0; i < MAXP; i++)
        kiln_tensor_release(r->out[i]);
}

/* Process p's operand: n values 100 p + i (as the run's dtype). */
static kiln_tensor *operand(kiln_ctx *cx, int32_t p, kiln_shape shape, kiln_dtype dtype) {
    int64_t n = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        n *= shape.dims[d];
    double v[64];
    for (int64_t i = 0; i < n; i++)
        v[i] = 100.0 * p + (double)i;
    kiln_tensor *f = kiln_tensor_from_host(cx, KILN_F64, shape, v, (size_t)n * sizeof(double));
    return dtype == KILN_F64 ? f : kiln_convert(cx, f, dtype);
}

static double at(const kiln_tensor *t, int64_t i) {
    switch (kiln_tensor_dtype(t)) {
    case KILN_F32: return ((const float *)kiln_tensor_data(t))[i];
    case KILN_F64: return ((const double *)kiln_tensor_data(t))[i];
    case KILN_I64: return (double)((const int64_t *)kiln_tensor_data(t))[i];
    case KILN_I32: return ((const int32_t *)kiln_tensor_data(t))[i];
    case KILN_U32: return ((const uint32_t *)kiln_tensor_data(t))[i];
    default: cr_assert_fail("dtype"); return 0;
    }
}

/* ---- ids ------------------------------------------------------------------------------- */

static kiln_tensor *ids_body(kiln_ctx *cx, int32_t p, const run *r) {
    (void)p, (void)r;
    /* replica * 10 + partition, from the two ids */
    kiln_tensor *rep = kiln_convert(cx, kiln_replica_id(cx), KILN_I64);
    kiln_tensor *part = kiln_convert(cx, kiln_partition_id(cx), KILN_I64);
    return kiln_add(cx, kiln_multiply(cx, rep, kiln_full(cx, KILN_I64, KILN_SHAPE_SCALAR, 10)),
                    part);
}

Test(collective, replica_and_partition_ids_in_a_2x3_grid) {
    kiln_ctx *cx = test_ctx();
    run r = {.replicas = 2, .partitions = 3, .body = ids_body};
    run_all(cx, &r);
    for (int p = 0; p < 6; p++)
        cr_assert_eq(at(r.out[p], 0), (p / 3) * 10 + p % 3, "process %d", p);
    release_all(&r);
    kiln_ctx_release(cx);
}

Test(collective, an_unbound_ctx_is_one_process) {
    kiln_ctx *cx = test_ctx();
    cr_assert_eq(at(kiln_replica_id(cx), 0), 0);
    cr_assert_eq(at(kiln_partition_id(cx), 0), 0);
    kiln_tensor *x = operand(cx, 3, KILN_SHAPE(4), KILN_F32);
    kiln_tensor *y = kiln_all_reduce(cx, x, kiln_region_add(), NULL);
    expect_ok(cx);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(at(y, i), at(x, i));
    kiln_ctx_release(cx);
}

/* ---- all_reduce ------------------------------------------------------------------------- */

static kiln_tensor *all_reduce_body(kiln_ctx *cx, int32_t p, const run *r) {
    return kiln_all_reduce(cx, operand(cx, p, KILN_SHAPE(5), r->dtype), kiln_region_add(),
                           r->groups);
}

/* f32 values whose sum depends on the order: 1e8 absorbs the 1 after it */
static const float order_values[4] = {1e8f, 1.0f, -1e8f, 3.0f};

static kiln_tensor *order_body(kiln_ctx *cx, int32_t p, const run *r) {
    (void)r;
    float v[5];
    for (int i = 0; i < 5; i++)
        v[i] = order_values[p] * (float)(i + 1);
    return kiln_all_reduce(cx, kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(5), v, sizeof v),
                           kiln_region_add(), NULL);
}

Test(collective, all_reduce_sums_in_group_order_bitwise) {
    kiln_ctx *cx = test_ctx();
    run r = {.replicas = 4, .partitions = 1, .body = order_body};
    run_all(cx, &r);
    for (int i = 0; i < 5; i++) {
        volatile float want = order_values[0] * (float)(i + 1);
        for (int p = 1; p < 4; p++)
            want = want + order_values[p] * (float)(i + 1);
        for (int p = 0; p < 4; p++)
            cr_assert_eq((float)at(r.out[p], i), want, "element %d of process %d: %g, want %g", i,
                         p, at(r.out[p], i), (double)want);
    }
    /* the fold in group order differs from the exact sum (4 (i + 1)) */
    cr_assert_neq((float)at(r.out[0], 0), 4.0f);
    release_all(&r);
    kiln_ctx_release(cx);
}

Test(collective, all_reduce_in_two_groups_of_a_reversed_order) {
    kiln_ctx *cx = test_ctx();
    int64_t ids[] = {3, 1, 0, 2};
    kiln_replica_groups g = {.ids = ids, .n_groups = 2, .group_size = 2};
    run r = {.replicas = 4, .partitions = 1, .dtype = KILN_I64, .groups = &g};
    r.body = all_reduce_body;
    run_all(cx, &r);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(at(r.out[1], i), 400 + 2 * i);
        cr_assert_eq(at(r.out[3], i), 400 + 2 * i);
        cr_assert_eq(at(r.out[0], i), 200 + 2 * i);
        cr_assert_eq(at(r.out[2], i), 200 + 2 * i);
    }
    release_all(&r);
    kiln_ctx_release(cx);
}

/* A region that is not a builtin: a*b + 1 (not associative, so the order shows). */
static kiln_status mul_add_one(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                               void *user) {
    (void)user;
    results[0] = kiln_add(cx, kiln_multiply(cx, args[0], args[1]),
                          kiln_full(cx, kiln_tensor_dtype(args[0]), KILN_SHAPE_SCALAR, 1));
    return kiln_ctx_status(cx);
}

static kiln_tensor *custom_body(kiln_ctx *cx, int32_t p, const run *r) {
    (void)r;
    kiln_region reg = {.fn = mul_add_one};
    return kiln_all_reduce(cx, kiln_full(cx, KILN_F64, KILN_SHAPE(3), p + 2.0), &reg, NULL);
}

Test(collective, all_reduce_with_a_region_of_its_own) {
    kiln_ctx *cx = test_ctx();
    run r = {.replicas = 3, .partitions = 1, .body = custom_body};
    run_all(cx, &r);
    double want = ((2.0 * 3.0 + 1) * 4.0) + 1;
    for (int p = 0; p < 3; p++)
        cr_assert_eq(at(r.out[p], 2), want, "process %d: %g", p, at(r.out[p], 2));
    release_all(&r);
    kiln_ctx_release(cx);
}

static kiln_tensor *max_nan_body(kiln_ctx *cx, int32_t p, const run *r) {
    (void)r;
    double v[3] = {p == 1 ? NAN : 1.0, p == 0 ? -0.0 : 0.0, (double)p};
    return kiln_all_reduce(cx, kiln_tensor_from_host(cx, KILN_F64, KILN_SHAPE(3), v, sizeof v),
                           kiln_region_maximum(), NULL);
}

Test(collective, all_reduce_maximum_keeps_nan_and_orders_zeros) {
    kiln_ctx *cx = test_ctx();
    run r = {.replicas = 2, .partitions = 1, .body = max_nan_body};
    run_all(cx, &r);
    for (int p = 0; p < 2; p++) {
        cr_assert(isnan(at(r.out[p], 0)));
        cr_assert(at(r.out[p], 1) == 0.0 && !signbit(at(r.out[p], 1)));
        cr_assert_eq(at(r.out[p], 2), 1.0);
    }
    release_all(&r);
    kiln_ctx_release(cx);
}

/* cross_replica_and_partition and flattened ids on a 2x2 grid */
Test(collective, all_reduce_across_replicas_and_partitions) {
    kiln_ctx *cx = test_ctx();
    int64_t ids[] = {0, 1};
    kiln_replica_groups g = {.ids = ids, .n_groups = 1, .group_size = 2, .channel_id = 1};
    run r = {.replicas = 2, .partitions = 2, .dtype = KILN_I64, .groups = &g};
    r.body = all_reduce_body;
    run_all(cx, &r);
    for (int p = 0; p < 4; p++) /* all four processes: 0+100+200+300 */
        cr_assert_eq(at(r.out[p], 1), 600 + 4, "process %d", p);
    release_all(&r);
    int64_t flat[] = {0, 3, 1, 2};
    kiln_replica_groups f = {.ids = flat,
                             .n_groups = 2,
                             .group_size = 2,
                             .channel_id = 1,
                             .use_global_device_ids = true};
    run r2 = {.replicas = 2, .partitions = 2, .dtype = KILN_I64, .groups = &f};
    r2.body = all_reduce_body;
    run_all(cx, &r2);
    cr_assert_eq(at(r2.out[0], 0), 300);
    cr_assert_eq(at(r2.out[3], 0), 300);
    cr_assert_eq(at(r2.out[1], 0), 300);
    cr_assert_eq(at(r2.out[2], 0), 300);
    cr_assert_eq(at(r2.out[1], 1), 302);
    release_all(&r2);
    kiln_ctx_release(cx);
}

/* ---- movement -------------------------------------------------------------------------- */

static kiln_tensor *gather_body(kiln_ctx *cx, int32_t p, const run *r) {
    return kiln_all_gather(cx, operand(cx, p, KILN_SHAPE(2, 3), KILN_I64), r->dim, r->groups);
}

Test(collective, all_gather_along_each_dimension) {
    kiln_ctx *cx = test_ctx();
    for (int64_t dim = 0; dim < 2; dim++) {
        run r = {.replicas = 3, .partitions = 1, .body = gather_body, .dim = dim};
        run_all(cx, &r);
        for (int p = 0; p < 3; p++) {
            const kiln_shape *s = kiln_tensor_shape(r.out[p]);
            cr_assert_eq(s->dims[dim], dim == 0 ? 6 : 9);
            /* element (i, j) of the result is sender k's (i', j') */
            for (int64_t i = 0; i < s->dims[0]; i++)
                for (int64_t j = 0; j < s->dims[1]; j++) {
                    int64_t k = dim == 0 ? i / 2 : j / 3, ii = dim == 0 ? i % 2 : i,
                            jj = dim == 0 ? j : j % 3;
                    cr_assert_eq(at(r.out[p], i * s->dims[1] + j), 100 * k + ii * 3 + jj);
                }
        }
        release_all(&r);
    }
    kiln_ctx_release(cx);
}

static kiln_tensor *scatter_body(kiln_ctx *cx, int32_t p, const run *r) {
    return kiln_reduce_scatter(cx, operand(cx, p, KILN_SHAPE(4, 2), KILN_I64), r->dim,
                               kiln_region_add(), NULL);
}

Test(collective, reduce_scatter_keeps_each_process_its_part) {
    kiln_ctx *cx = test_ctx();
    run r = {.replicas = 2, .partitions = 1, .body = scatter_body, .dim = 0};
    run_all(cx, &r);
    for (int p = 0; p < 2; p++) {
        cr_assert_eq(kiln_tensor_shape(r.out[p])->dims[0], 2);
        for (int i = 0; i < 4; i++) /* rows 2p, 2p+1 of the sum 100 + 2 v */
            cr_assert_eq(at(r.out[p], i), 100 + 2 * (p * 4 + i));
    }
    release_all(&r);
    kiln_ctx_release(cx);
}

static kiln_tensor *all_to_all_body(kiln_ctx *cx, int32_t p, const run *r) {
    return kiln_all_to_all(cx, operand(cx, p, KILN_SHAPE(2, 4), KILN_I64), r->dim, r->dim2,
                           r->count, NULL);
}

Test(collective, all_to_all_splits_and_concatenates) {
    kiln_ctx *cx = test_ctx();
    run r = {
        .replicas = 2, .partitions = 1, .body = all_to_all_body, .dim = 1, .dim2 = 0, .count = 2};
    run_all(cx, &r);
    /* process q gets columns [2q, 2q+2) of every sender, stacked by sender */
    for (int q = 0; q < 2; q++) {
        const kiln_shape *s = kiln_tensor_shape(r.out[q]);
        cr_assert(s->dims[0] == 4 && s->dims[1] == 2);
        for (int64_t i = 0; i < 4; i++)
            for (int64_t j = 0; j < 2; j++)
                cr_assert_eq(at(r.out[q], i * 2 + j), 100 * (i / 2) + (i % 2) * 4 + 2 * q + j);
    }
    release_all(&r);
    kiln_ctx_release(cx);
}

static kiln_tensor *permute_body(kiln_ctx *cx, int32_t p, const run *r) {
    return kiln_collective_permute(cx, operand(cx, p, KILN_SHAPE(3), KILN_F32), r->pairs,
                                   r->n_pairs, 0);
}

Test(collective, collective_permute_shifts_and_zeros_the_rest) {
    kiln_ctx *cx = test_ctx();
    int64_t pairs[] = {0, 1, 1, 2, 2, 0};
    run r = {.replicas = 4, .partitions = 1, .body = permute_body, .pairs = pairs, .n_pairs = 3};
    run_all(cx, &r);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(at(r.out[1], i), i);
        cr_assert_eq(at(r.out[2], i), 100 + i);
        cr_assert_eq(at(r.out[0], i), 200 + i);
        cr_assert_eq(at(r.out[3], i), 0); /* no source */
    }
    release_all(&r);
    kiln_ctx_release(cx);
}

static kiln_tensor *broadcast_body(kiln_ctx *cx, int32_t p, const run *r) {
    return kiln_collective_broadcast(cx, operand(cx, p, KILN_SHAPE(2), KILN_I32), r->groups);
}

Test(collective, collective_broadcast_from_the_first_of_each_group) {
    kiln_ctx *cx = test_ctx();
    int64_t ids[] = {2, 1};
    kiln_replica_groups g = {.ids = ids, .n_groups = 1, .group_size = 2};
    run r = {.replicas = 3, .partitions = 1, .body = broadcast_body, .groups = &g};
    run_all(cx, &r);
    cr_assert_eq(at(r.out[1], 1), 201);
    cr_assert_eq(at(r.out[2], 1), 201);
    cr_assert_eq(at(r.out[0], 1), 0); /* in no group */
    release_all(&r);
    kiln_ctx_release(cx);
}

/* collective_reduce and the interpreter's run_parallel have no builders: parsed text. */
Test(collective, collective_reduce_and_run_parallel_from_text) {
    kiln_ctx *cx = test_ctx();
    const char *text =
        "module {\n"
        "  func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "    %r = \"stablehlo.collective_reduce\"(%x) ({\n"
        "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
        "      %m = stablehlo.multiply %a, %b : tensor<f32>\n"
        "      stablehlo.return %m : tensor<f32>\n"
        "    }) {replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>} : (tensor<2xf32>) -> "
        "tensor<2xf32>\n"
        "    return %r : tensor<2xf32>\n"
        "  }\n"
        "  func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) "
        "{\n"
        "    %r:2 = \"interpreter.run_parallel\"(%a, %b) {programs = [[@f], [@f]]} :\n"
        "      (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)\n"
        "    return %r#0, %r#1 : tensor<2xf32>, tensor<2xf32>\n"
        "  }\n"
        "}\n";
    kiln_module *m;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    const char *backends[] = {"cpu", "interpreter"};
    for (int b = 0; b < 2; b++) {
        kiln_compile_options o = kiln_compile_options_default();
        o.backend = backends[b];
        kiln_exe *exe;
        cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
        float a[2] = {2, 3}, bb[2] = {5, 7};
        kiln_tensor *args[2] = {kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2), a, sizeof a),
                                kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2), bb, sizeof bb)};
        kiln_tensor *out[2];
        cr_assert_eq(kiln_exe_call(cx, exe, args, out), KILN_OK, "%s", kiln_ctx_error_message(cx));
        /* the root is process 1 (first of the group): 5*2, 7*3; process 0 gets zeros */
        cr_assert(at(out[1], 0) == 10 && at(out[1], 1) == 21);
        cr_assert(at(out[0], 0) == 0 && at(out[0], 1) == 0);
        kiln_exe_release(exe);
    }
    char *printed = kiln_module_to_string(cx, m);
    cr_assert(printed && strstr(printed, "\"stablehlo.collective_reduce\""), "%s", printed);
    cr_assert(strstr(printed, "replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>"), "%s", printed);
    kiln_string_free(cx, printed);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

const kiln_op_coverage kiln_cover_collective[] = {
    {KILN_OP_REPLICA_ID, "collective/replica_and_partition_ids_in_a_2x3_grid"},
    {KILN_OP_PARTITION_ID, "collective/replica_and_partition_ids_in_a_2x3_grid"},
    {KILN_OP_ALL_REDUCE, "collective/all_reduce_sums_in_group_order_bitwise"},
    {KILN_OP_ALL_GATHER, "collective/all_gather_along_each_dimension"},
    {KILN_OP_REDUCE_SCATTER, "collective/reduce_scatter_keeps_each_process_its_part"},
    {KILN_OP_ALL_TO_ALL, "collective/all_to_all_splits_and_concatenates"},
    {KILN_OP_COLLECTIVE_PERMUTE, "collective/collective_permute_shifts_and_zeros_the_rest"},
    {KILN_OP_COLLECTIVE_BROADCAST, "collective/collective_broadcast_from_the_first_of_each_group"},
    {KILN_OP_COLLECTIVE_REDUCE, "collective/collective_reduce_and_run_parallel_from_text"},
    {KILN_OP_RUN_PARALLEL, "collective/collective_reduce_and_run_parallel_from_text"},
    {KILN_OP_COUNT, NULL},
};
