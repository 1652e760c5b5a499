/* SPDX-License-Identifier: Apache-2.0 */
/* SPMD programs compiled and run on a local communicator (kiln_exe_call_spmd): collectives
 * in the entry and in loop bodies, on both backends; what the passes must not do to them;
 * and the errors (processes that disagree, one that never arrives, one that fails, bad
 * groups and options). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kiln/kiln.h"
#include "kiln/spmd.h"
#include "test_util.h"

static kiln_comm *local(kiln_ctx *cx, int32_t replicas, int32_t partitions, int64_t timeout_ms) {
    kiln_comm_options o = kiln_comm_options_default();
    o.num_replicas = replicas;
    o.num_partitions = partitions;
    o.timeout_ms = timeout_ms;
    kiln_comm *c = NULL;
    cr_assert_eq(kiln_comm_create_local(cx, &o, &c), KILN_OK, "%s", kiln_ctx_error_message(cx));
    return c;
}

static kiln_exe *compile_fn(kiln_ctx *cx, kiln_region_fn fn, kiln_dtype dtype, kiln_shape shape,
                            const char *backend) {
    kiln_region r = {.fn = fn};
    kiln_arg_spec a = {.dtype = dtype, .shape = shape};
    kiln_module *m;
    cr_assert_eq(kiln_lower(cx, &r, &a, 1, 1, NULL, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = backend;
    kiln_exe *exe;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    return exe;
}

/* x + sum over the replicas of x * replica_id, then 3 steps of y = all_reduce(y) / n */
static kiln_status program(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                           void *user) {
    (void)user;
    kiln_tensor *id = kiln_convert(cx, kiln_replica_id(cx), KILN_F32);
    kiln_tensor *y = kiln_all_reduce(cx, kiln_multiply(cx, args[0], id), kiln_region_add(), NULL);
    results[0] = kiln_add(cx, args[0], y);
    return kiln_ctx_status(cx);
}

static kiln_status mean_step(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                             void *user) {
    (void)user;
    kiln_tensor *s = kiln_all_reduce(cx, args[1], kiln_region_add(), NULL);
    results[0] = kiln_add(cx, kiln_multiply(cx, s, kiln_full(cx, KILN_F32, KILN_SHAPE_SCALAR, 0.5)),
                          kiln_full(cx, KILN_F32, KILN_SHAPE_SCALAR, 1));
    return kiln_ctx_status(cx);
}

static kiln_status looped(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                          void *user) {
    (void)user;
    kiln_region body = {.fn = mean_step};
    return kiln_fori_loop(cx, 0, 40, args, 1, &body, results);
}

static float value(const kiln_tensor *t, int64_t i) {
    return ((const float *)kiln_tensor_data(t))[i];
}
static uint32_t at_u32(const kiln_tensor *t) { return *(const uint32_t *)kiln_tensor_data(t); }

Test(spmd, compiled_collectives_on_both_backends) {
    kiln_ctx *cx = test_ctx();
    kiln_comm *comm = local(cx, 3, 1, 20000);
    const char *backends[] = {"cpu", "interpreter"};
    for (int b = 0; b < 2; b++) {
        kiln_exe *exe = compile_fn(cx, program, KILN_F32, KILN_SHAPE(4), backends[b]);
        kiln_tensor *args[3], *out[3];
        for (int p = 0; p < 3; p++)
            args[p] = kiln_full(cx, KILN_F32, KILN_SHAPE(4), p + 1.0);
        cr_assert_eq(kiln_exe_call_spmd(cx, exe, comm, args, out), KILN_OK, "%s: %s", backends[b],
                     kiln_ctx_error_message(cx));
        /* sum of (p + 1) p = 0 + 2 + 6 = 8 */
        for (int p = 0; p < 3; p++)
            cr_assert_eq(value(out[p], 3), p + 1.0f + 8.0f, "%s: process %d", backends[b], p);
        kiln_exe_release(exe);
    }
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

Test(spmd, a_collective_inside_a_loop_runs_every_iteration) {
    kiln_ctx *cx = test_ctx();
    kiln_comm *comm = local(cx, 2, 1, 20000);
    const char *backends[] = {"cpu", "interpreter"};
    for (int b = 0; b < 2; b++) {
        kiln_exe *exe = compile_fn(cx, looped, KILN_F32, KILN_SHAPE(2), backends[b]);
        kiln_tensor *args[2] = {kiln_full(cx, KILN_F32, KILN_SHAPE(2), 0.0),
                                kiln_full(cx, KILN_F32, KILN_SHAPE(2), 6.0)};
        kiln_tensor *out[2];
        cr_assert_eq(kiln_exe_call_spmd(cx, exe, comm, args, out), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        /* y' = (y0 + y1) / 2 + 1, the same on both processes: 4, 5, 6, ... after 40 steps 43 */
        for (int p = 0; p < 2; p++)
            cr_assert_eq(value(out[p], 0), 43.0f, "%s: process %d: %g", backends[b], p,
                         (double)value(out[p], 0));
        kiln_exe_release(exe);
    }
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

/* A collective whose result is unused must still run (the others wait for it), and
 * replica_id must not be folded into a constant. */
static kiln_status unused_collective(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                                     void *user) {
    (void)user;
    (void)kiln_all_reduce(cx, args[0], kiln_region_add(), NULL);
    results[0] = kiln_convert(cx, kiln_replica_id(cx), KILN_F32);
    return kiln_ctx_status(cx);
}

Test(spmd, passes_keep_collectives_and_ids) {
    kiln_ctx *cx = test_ctx();
    kiln_comm *comm = local(cx, 2, 1, 20000);
    kiln_exe *exe = compile_fn(cx, unused_collective, KILN_F32, KILN_SHAPE(2), "cpu");
    char *text = kiln_exe_to_string(cx, exe);
    cr_assert(text && strstr(text, "op 0: all_reduce") && strstr(text, ": replica_id"), "%s", text);
    kiln_string_free(cx, text);
    kiln_tensor *args[2] = {kiln_zeros(cx, KILN_F32, KILN_SHAPE(2)),
                            kiln_zeros(cx, KILN_F32, KILN_SHAPE(2))};
    kiln_tensor *out[2];
    cr_assert_eq(kiln_exe_call_spmd(cx, exe, comm, args, out), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_eq(value(out[0], 0), 0.0f);
    cr_assert_eq(value(out[1], 0), 1.0f);
    kiln_exe_release(exe);
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

/* ---- errors ------------------------------------------------------------------------------ */

static kiln_status disagree(kiln_ctx *cx, int32_t process, void *user) {
    (void)user;
    /* process 1 reduces a longer vector */
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, process == 1 ? KILN_SHAPE(5) : KILN_SHAPE(4));
    (void)kiln_all_reduce(cx, x, kiln_region_add(), NULL);
    return kiln_ctx_status(cx);
}

Test(spmd, processes_that_disagree_all_fail_naming_both) {
    kiln_ctx *cx = test_ctx();
    kiln_comm *comm = local(cx, 3, 1, 20000);
    cr_assert_eq(kiln_spmd_run(cx, comm, disagree, NULL), KILN_INVALID_ARGUMENT);
    const char *msg = kiln_ctx_error_message(cx);
    cr_assert(strstr(msg, "disagree") && strstr(msg, "f32[4]") && strstr(msg, "f32[5]"), "%s", msg);
    /* the communicator is usable again */
    kiln_ctx_clear_error(cx);
    cr_assert_eq(kiln_spmd_run(cx, comm, disagree, NULL), KILN_INVALID_ARGUMENT);
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

static kiln_status one_stays_away(kiln_ctx *cx, int32_t process, void *user) {
    (void)user;
    if (process == 0) return KILN_OK;
    (void)kiln_all_reduce(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(2)), kiln_region_add(), NULL);
    return kiln_ctx_status(cx);
}

Test(spmd, a_process_that_never_arrives_is_a_timeout_not_a_hang) {
    kiln_ctx *cx = test_ctx();
    /* process 0 returns at once: its thread ends without failing, so only the timeout
     * frees the others */
    kiln_comm *comm = local(cx, 2, 1, 200);
    cr_assert_eq(kiln_spmd_run(cx, comm, one_stays_away, NULL), KILN_DEADLINE_EXCEEDED);
    cr_assert(strstr(kiln_ctx_error_message(cx), "waited 200 ms"), "%s",
              kiln_ctx_error_message(cx));
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

static kiln_status one_fails(kiln_ctx *cx, int32_t process, void *user) {
    (void)user;
    if (process == 2) return kiln_ctx_set_error(cx, KILN_DATA_LOSS, "the data of process 2 is bad");
    (void)kiln_all_reduce(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(2)), kiln_region_add(), NULL);
    return kiln_ctx_status(cx);
}

Test(spmd, a_failing_process_stops_the_others_and_its_error_is_reported) {
    kiln_ctx *cx = test_ctx();
    kiln_comm *comm = local(cx, 3, 1, 0); /* no timeout: only the failure frees them */
    cr_assert_eq(kiln_spmd_run(cx, comm, one_fails, NULL), KILN_DATA_LOSS);
    cr_assert(strstr(kiln_ctx_error_message(cx), "process 2: the data of process 2 is bad"), "%s",
              kiln_ctx_error_message(cx));
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

typedef struct bad_groups {
    int which;
} bad_groups;

static kiln_status bad_group_body(kiln_ctx *cx, int32_t process, void *user) {
    (void)process;
    const bad_groups *b = user;
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(4));
    int64_t ids[] = {0, 5};
    kiln_replica_groups g = {.ids = ids, .n_groups = 1, .group_size = 2};
    if (b->which == 0) (void)kiln_all_reduce(cx, x, kiln_region_add(), &g);
    if (b->which == 1) { /* traced for groups of 2, run in groups of 1 */
        int64_t one[] = {0, 1};
        kiln_replica_groups pairs = {.ids = one, .n_groups = 2, .group_size = 1};
        (void)kiln_all_gather(cx, x, 0, &pairs);
        kiln_ctx_clear_error(cx);
        (void)kiln_reduce_scatter(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(3)), 0, kiln_region_add(),
                                  NULL);
    }
    return kiln_ctx_status(cx);
}

Test(spmd, groups_outside_the_grid_and_parts_that_do_not_split) {
    kiln_ctx *cx = test_ctx();
    kiln_comm *comm = local(cx, 2, 1, 20000);
    bad_groups b = {0};
    cr_assert_eq(kiln_spmd_run(cx, comm, bad_group_body, &b), KILN_INVALID_ARGUMENT);
    cr_assert(strstr(kiln_ctx_error_message(cx), "replica 5; the grid has 2 replicas"), "%s",
              kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);
    b.which = 1;
    cr_assert_eq(kiln_spmd_run(cx, comm, bad_group_body, &b), KILN_INVALID_ARGUMENT);
    cr_assert(strstr(kiln_ctx_error_message(cx), "does not split into 2 equal parts"), "%s",
              kiln_ctx_error_message(cx));
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

Test(spmd, group_size_the_result_type_was_not_made_for) {
    kiln_ctx *cx = test_ctx();
    /* traced on an unbound ctx, all_gather with no groups gathers one process's part;
     * run on two processes it must refuse rather than write past the result */
    kiln_comm *comm = local(cx, 2, 1, 20000);
    const char *groups[] = {"dense<> : tensor<0x0xi64>", "dense<[[0]]> : tensor<1x1xi64>"};
    const char *want[] = {"has 2 processes; the result type was made for groups of 1",
                          "process 1 (replica 1, partition 0) is in no group"};
    for (int k = 0; k < 2; k++) {
        char text[512];
        snprintf(text, sizeof text,
                 "func.func @main(%%x: tensor<2xf32>) -> tensor<2xf32> {\n"
                 "  %%r = \"stablehlo.all_gather\"(%%x) {all_gather_dim = 0 : i64,\n"
                 "        replica_groups = %s} : (tensor<2xf32>) -> tensor<2xf32>\n"
                 "  return %%r : tensor<2xf32>\n"
                 "}\n",
                 groups[k]);
        kiln_module *m;
        cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        kiln_exe *exe;
        cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
        kiln_module_release(m);
        kiln_tensor *args[2] = {kiln_zeros(cx, KILN_F32, KILN_SHAPE(2)),
                                kiln_zeros(cx, KILN_F32, KILN_SHAPE(2))};
        kiln_tensor *out[2];
        cr_assert_eq(kiln_exe_call_spmd(cx, exe, comm, args, out), KILN_INVALID_ARGUMENT);
        cr_assert(strstr(kiln_ctx_error_message(cx), want[k]), "%s", kiln_ctx_error_message(cx));
        cr_assert(out[0] == NULL && out[1] == NULL);
        kiln_ctx_clear_error(cx);
        kiln_exe_release(exe);
    }
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

Test(spmd, option_and_argument_errors) {
    kiln_ctx *cx = test_ctx();
    kiln_comm *c = NULL;
    kiln_comm_options o = kiln_comm_options_default();
    o.num_replicas = 0;
    cr_assert_eq(kiln_comm_create_local(cx, &o, &c), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "num_replicas (0)");
    o = kiln_comm_options_default();
    o.num_replicas = 16;
    o.num_partitions = 17;
    cr_assert_eq(kiln_comm_create_local(cx, &o, &c), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "at most 256");
    o = kiln_comm_options_default();
    o.timeout_ms = -1;
    cr_assert_eq(kiln_comm_create_local(cx, &o, &c), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "timeout_ms is negative");
    o = kiln_comm_options_default();
    o.struct_size = 4;
    cr_assert_eq(kiln_comm_create_local(cx, &o, &c), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "struct_size");
    cr_assert_eq(kiln_comm_create_local(cx, NULL, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_comm");

    c = local(cx, 2, 2, 1000);
    cr_assert_eq(kiln_comm_num_replicas(c), 2);
    cr_assert_eq(kiln_comm_num_partitions(c), 2);
    cr_assert_eq(kiln_comm_self(c), -1);
    cr_assert_str_eq(kiln_comm_kind(c), "local");
    cr_assert_eq(kiln_ctx_set_comm(cx, c, 4), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "process 4 is outside the grid of 2 x 2");
    cr_assert_eq(kiln_spmd_run(cx, c, NULL, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "fn");
    cr_assert_eq(kiln_spmd_run(cx, NULL, disagree, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "comm");
    cr_assert_eq(kiln_exe_call_spmd(cx, NULL, c, NULL, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "exe is NULL");

    /* a bound ctx runs its collectives as its process: alone, it waits for the others */
    cr_assert_eq(kiln_ctx_set_comm(cx, c, 3), KILN_OK);
    int32_t p = -1;
    cr_assert_eq(kiln_ctx_comm(cx, &p), c);
    cr_assert_eq(p, 3);
    cr_assert_eq(at_u32(kiln_replica_id(cx)), 1);
    cr_assert_eq(at_u32(kiln_partition_id(cx)), 1);
    cr_assert_eq(kiln_ctx_set_comm(cx, NULL, 0), KILN_OK);
    cr_assert_null(kiln_ctx_comm(cx, NULL));
    kiln_comm_release(c);

    int64_t ids[] = {0, 1, 2};
    kiln_replica_groups g = {.ids = ids, .n_groups = 1, .group_size = 300};
    cr_assert_null(
        kiln_all_reduce(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(1)), kiln_region_add(), &g));
    expect_error(cx, KILN_INVALID_ARGUMENT, "must be 1 to 256 ids");
    int64_t neg[] = {-3};
    kiln_replica_groups gn = {.ids = neg, .n_groups = 1, .group_size = 1};
    cr_assert_null(kiln_all_gather(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(1)), 0, &gn));
    expect_error(cx, KILN_INVALID_ARGUMENT, "groups->ids[0] is -3");
    int64_t dup[] = {0, 0};
    kiln_replica_groups gd = {.ids = dup, .n_groups = 1, .group_size = 2};
    cr_assert_null(kiln_collective_broadcast(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(1)), &gd));
    expect_error(cx, KILN_INVALID_ARGUMENT, "id 0 appears twice");
    cr_assert_null(kiln_all_gather(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(1)), 1, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "all_gather_dim 1 is out of range");
    cr_assert_null(kiln_all_to_all(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(3)), 0, 0, 2, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "does not split into split_count = 2");
    cr_assert_null(
        kiln_collective_permute(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(1)), NULL, 2, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_pairs is 2");
    int64_t twice[] = {0, 1, 0, 2};
    cr_assert_null(
        kiln_collective_permute(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(1)), twice, 2, 0));
    expect_error(cx, KILN_INVALID_ARGUMENT, "source 0 appears twice");
    kiln_replica_groups glob = {.use_global_device_ids = true};
    cr_assert_null(
        kiln_all_reduce(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(1)), kiln_region_add(), &glob));
    expect_error(cx, KILN_INVALID_ARGUMENT, "use_global_device_ids needs a channel_handle > 0");
    cr_assert_null(kiln_all_reduce(cx, kiln_zeros(cx, KILN_F32, KILN_SHAPE(1)), NULL, NULL));
    expect_error(cx, KILN_INVALID_ARGUMENT, "computation region is NULL");
    kiln_ctx_release(cx);
}

/* ---- vmap of collectives ------------------------------------------------------------------ */

static kiln_status gather_and_sum(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                                  void *user) {
    (void)user;
    results[0] = kiln_all_gather(cx, args[0], 0, NULL);
    results[1] = kiln_all_reduce(cx, args[0], kiln_region_add(), NULL);
    results[2] = kiln_all_to_all(cx, args[0], 0, 0, 2, NULL);
    return kiln_ctx_status(cx);
}

typedef struct vmapped {
    kiln_tensor *out[2][3];
} vmapped;

static kiln_status vmap_body(kiln_ctx *cx, int32_t process, void *user) {
    vmapped *v = user;
    float x[3][2];
    for (int e = 0; e < 3; e++)
        for (int i = 0; i < 2; i++)
            x[e][i] = (float)(10 * e + i + 100 * process);
    kiln_tensor *arg = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(3, 2), x, sizeof x);
    kiln_region f = {.fn = gather_and_sum};
    kiln_tensor *out[3];
    kiln_status s = kiln_vmap(cx, &f, 1, &arg, 3, NULL, out);
    for (int j = 0; j < 3 && s == KILN_OK; j++)
        v->out[process][j] = kiln_tensor_retain(out[j]);
    return s;
}

Test(spmd, vmap_of_collectives_is_the_collective_of_each_example) {
    kiln_ctx *cx = test_ctx();
    kiln_comm *comm = local(cx, 2, 1, 20000);
    vmapped v = {0};
    cr_assert_eq(kiln_spmd_run(cx, comm, vmap_body, &v), KILN_OK, "%s", kiln_ctx_error_message(cx));
    for (int p = 0; p < 2; p++) {
        const kiln_shape *g = kiln_tensor_shape(v.out[p][0]);
        cr_assert(g->rank == 2 && g->dims[0] == 3 && g->dims[1] == 4);
        for (int e = 0; e < 3; e++)
            for (int k = 0; k < 4; k++) {
                /* example e gathers [x_e@0, x_e@1] */
                float want = (float)(10 * e + k % 2 + 100 * (k / 2));
                cr_assert_eq(value(v.out[p][0], e * 4 + k), want);
            }
        for (int e = 0; e < 3; e++)
            for (int i = 0; i < 2; i++) {
                cr_assert_eq(value(v.out[p][1], e * 2 + i), (float)(2 * (10 * e + i) + 100));
                /* all_to_all of a 2-vector: element p of each sender, in sender order */
                cr_assert_eq(value(v.out[p][2], e * 2 + i), (float)(10 * e + p + 100 * i));
            }
        for (int j = 0; j < 3; j++)
            kiln_tensor_release(v.out[p][j]);
    }
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

/* ---- eager equals compiled --------------------------------------------------------------- */

static kiln_status every_collective(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                                    void *user) {
    (void)user;
    kiln_tensor *x = args[0];
    kiln_tensor *id =
        kiln_convert(cx,
                     kiln_add(cx, kiln_replica_id(cx),
                              kiln_multiply(cx, kiln_partition_id(cx),
                                            kiln_full(cx, KILN_U32, KILN_SHAPE_SCALAR, 7))),
                     KILN_F32);
    kiln_tensor *y = kiln_sine(
        cx, kiln_multiply(cx, x, kiln_add(cx, id, kiln_full(cx, KILN_F32, KILN_SHAPE_SCALAR, 1))));
    int64_t pairs[] = {0, 1, 1, 0};
    int64_t flat[] = {0, 3, 1, 2};
    kiln_replica_groups flattened = {.ids = flat,
                                     .n_groups = 2,
                                     .group_size = 2,
                                     .channel_id = 1,
                                     .use_global_device_ids = true};
    kiln_replica_groups across = {.channel_id = 2}; /* all replicas, in every partition */
    results[0] = kiln_all_reduce(cx, y, kiln_region_add(), &flattened);
    results[1] = kiln_all_gather(cx, y, 1, &across);
    results[2] = kiln_reduce_scatter(cx, y, 0, kiln_region_maximum(), NULL);
    results[3] = kiln_all_to_all(cx, y, 1, 0, 2, NULL);
    results[4] = kiln_collective_permute(cx, y, pairs, 2, 1); /* across partitions */
    results[5] = kiln_collective_broadcast(cx, y, NULL);
    return kiln_ctx_status(cx);
}

typedef struct eager_run {
    kiln_tensor *out[4][6];
} eager_run;

static kiln_tensor *grid_input(kiln_ctx *cx, int32_t process) {
    float v[16];
    for (int i = 0; i < 16; i++)
        v[i] = 0.37f * (float)i - 1.1f * (float)process;
    return kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4, 4), v, sizeof v);
}

static kiln_status eager_body(kiln_ctx *cx, int32_t process, void *user) {
    eager_run *r = user;
    kiln_tensor *x = grid_input(cx, process);
    kiln_tensor *out[6];
    kiln_status s = every_collective(cx, &x, out, NULL);
    for (int j = 0; j < 6 && s == KILN_OK; j++)
        r->out[process][j] = kiln_tensor_retain(out[j]);
    return s;
}

Test(spmd, eager_equals_compiled_on_a_grid) {
    kiln_ctx *cx = test_ctx();
    kiln_comm *comm = local(cx, 2, 2, 20000);
    eager_run eager = {0};
    cr_assert_eq(kiln_spmd_run(cx, comm, eager_body, &eager), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    /* traced on process 0 of the grid, so that the groups' sizes are the grid's */
    cr_assert_eq(kiln_ctx_set_comm(cx, comm, 0), KILN_OK);
    kiln_region r = {.fn = every_collective};
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(4, 4)};
    kiln_module *m;
    cr_assert_eq(kiln_lower(cx, &r, &a, 1, 6, NULL, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_ctx_set_comm(cx, NULL, 0), KILN_OK);
    const char *backends[] = {"cpu", "interpreter"};
    for (int b = 0; b < 2; b++) {
        kiln_compile_options o = kiln_compile_options_default();
        o.backend = backends[b];
        kiln_exe *exe;
        cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
        kiln_tensor *args[4], *out[24];
        for (int p = 0; p < 4; p++)
            args[p] = grid_input(cx, p);
        cr_assert_eq(kiln_exe_call_spmd(cx, exe, comm, args, out), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        for (int p = 0; p < 4; p++)
            for (int j = 0; j < 6; j++) {
                const kiln_tensor *e = eager.out[p][j], *c = out[p * 6 + j];
                cr_assert(kiln_shape_equal(kiln_tensor_shape(e), kiln_tensor_shape(c)));
                cr_assert(memcmp(kiln_tensor_data(e), kiln_tensor_data(c), kiln_tensor_nbytes(e)) ==
                              0,
                          "%s: process %d result %d differs from eager", backends[b], p, j);
            }
        kiln_exe_release(exe);
    }
    for (int p = 0; p < 4; p++)
        for (int j = 0; j < 6; j++)
            kiln_tensor_release(eager.out[p][j]);
    kiln_module_release(m);
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

/* ---- gradients across processes ------------------------------------------------------------ */

/* Each process p pulls cotangent w_p back through a collective of x; the cotangent of x_p
 * must be the gradient of sum_q <w_q, C(x)_q> with respect to x_p. */
typedef struct grad_run {
    int which;
    kiln_tensor *ct[2];
} grad_run;

static kiln_status one_collective(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                                  void *user) {
    const grad_run *g = user;
    static const int64_t swap[] = {0, 1, 1, 0};
    kiln_tensor *x = args[0];
    switch (g->which) {
    case 0: results[0] = kiln_all_reduce(cx, x, kiln_region_add(), NULL); break;
    case 1: results[0] = kiln_all_gather(cx, x, 0, NULL); break;
    case 2: results[0] = kiln_collective_permute(cx, x, swap, 2, 0); break;
    case 3: results[0] = kiln_reduce_scatter(cx, x, 0, kiln_region_add(), NULL); break;
    default: results[0] = kiln_collective_broadcast(cx, x, NULL); break;
    }
    return kiln_ctx_status(cx);
}

static kiln_status grad_body(kiln_ctx *cx, int32_t process, void *user) {
    grad_run *g = user;
    float x[4] = {1, 2, 3, 4};
    kiln_tensor *arg = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), x, sizeof x);
    int64_t n_out = g->which == 1 ? 8 : g->which == 3 ? 2 : 4;
    float w[8];
    for (int i = 0; i < n_out; i++)
        w[i] = (float)(10 * (process + 1) + i);
    kiln_tensor *ct =
        kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(n_out), w, (size_t)n_out * sizeof(float));
    kiln_region f = {.fn = one_collective, .user = g};
    kiln_tensor *res, *dx;
    kiln_status s = kiln_vjp(cx, &f, 1, &arg, 1, &ct, &res, &dx);
    if (s == KILN_OK) g->ct[process] = kiln_tensor_retain(dx);
    return s;
}

Test(spmd, gradients_flow_back_through_every_collective) {
    kiln_ctx *cx = test_ctx();
    kiln_comm *comm = local(cx, 2, 1, 20000);
    /* w_q[i] = 10 (q + 1) + i */
    float want[5][2][4] = {
        {{30, 32, 34, 36}, {30, 32, 34, 36}}, /* all_reduce: sum_q w_q */
        {{10 + 20, 11 + 21, 12 + 22, 13 + 23}, {14 + 24, 15 + 25, 16 + 26, 17 + 27}}, /* block p */
        {{20, 21, 22, 23}, {10, 11, 12, 13}}, /* the swap's inverse */
        {{10, 11, 20, 21}, {10, 11, 20, 21}}, /* concatenated */
        {{30, 32, 34, 36}, {0, 0, 0, 0}},     /* to the root */
    };
    for (int which = 0; which < 5; which++) {
        grad_run g = {.which = which};
        cr_assert_eq(kiln_spmd_run(cx, comm, grad_body, &g), KILN_OK, "case %d: %s", which,
                     kiln_ctx_error_message(cx));
        for (int p = 0; p < 2; p++) {
            for (int i = 0; i < 4; i++)
                cr_assert_eq(value(g.ct[p], i), want[which][p][i], "case %d process %d [%d]: %g",
                             which, p, i, (double)value(g.ct[p], i));
            kiln_tensor_release(g.ct[p]);
        }
    }
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

/* ---- large operands: chunks instead of whole copies ---------------------------------------- */

static kiln_status big_collectives(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                                   void *user) {
    (void)user;
    results[0] = kiln_all_reduce(cx, args[0], kiln_region_add(), NULL);
    results[1] = kiln_all_reduce(cx, args[0], kiln_region_maximum(), NULL);
    return kiln_ctx_status(cx);
}

/* Above 256 KiB an all_reduce moves chunks (an all_to_all, each process reducing one, an
 * all_gather); an element count the processes do not divide pads the last chunk. Every
 * element is still the fold in group order: ((x0 + x1) + x2), NaN kept by max. */
Test(spmd, a_large_all_reduce_moves_chunks_and_keeps_the_order) {
    kiln_ctx *cx = test_ctx();
    enum { P = 3, N = 100003 };
    kiln_comm *comm = local(cx, P, 1, 20000);
    cr_assert_eq(kiln_ctx_set_comm(cx, comm, 0), KILN_OK); /* traced for the grid */
    kiln_region r = {.fn = big_collectives};
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(N)};
    kiln_module *m;
    cr_assert_eq(kiln_lower(cx, &r, &a, 1, 2, NULL, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_ctx_set_comm(cx, NULL, 0), KILN_OK);
    static float x[P][N];
    for (int p = 0; p < P; p++)
        for (int i = 0; i < N; i++) {
            uint32_t h = (uint32_t)(i * P + p + 1) * 0x9e3779b9u;
            h ^= h >> 15, h *= 0x85ebca6bu, h ^= h >> 13;
            x[p][i] = ((float)(h % 20001) / 10000.0f - 1.0f) * (i % 3 ? 1.0f : 3e7f);
        }
    x[1][77] = NAN;
    const char *backends[] = {"cpu", "interpreter"};
    for (int b = 0; b < 2; b++) {
        kiln_compile_options o = kiln_compile_options_default();
        o.backend = backends[b];
        kiln_exe *exe;
        cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
        kiln_tensor *args[P], *out[2 * P];
        for (int p = 0; p < P; p++)
            args[p] = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(N), x[p], sizeof x[p]);
        cr_assert_eq(kiln_exe_call_spmd(cx, exe, comm, args, out), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        for (int p = 0; p < P; p++) {
            const float *sum = kiln_tensor_data(out[2 * p]),
                        *max = kiln_tensor_data(out[2 * p + 1]);
            for (int i = 0; i < N; i++) {
                float want = (x[0][i] + x[1][i]) + x[2][i];
                float mx = fmaxf(fmaxf(x[0][i], x[1][i]), x[2][i]);
                if (i == 77) {
                    cr_assert(isnan(sum[i]) && isnan(max[i]), "%s: NaN at 77", backends[b]);
                    continue;
                }
                cr_assert_eq(memcmp(&sum[i], &want, 4), 0,
                             "%s: process %d, element %d: %.9g, want %.9g", backends[b], p, i,
                             (double)sum[i], (double)want);
                cr_assert_eq(max[i], mx, "%s: max at %d", backends[b], i);
            }
        }
        kiln_exe_release(exe);
    }
    kiln_module_release(m);
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

/* ---- branches -------------------------------------------------------------------------- */

static kiln_status sum_branch(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                              void *user) {
    (void)user;
    results[0] = kiln_all_reduce(cx, args[0], kiln_region_add(), NULL);
    return kiln_ctx_status(cx);
}

static kiln_status max_branch(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                              void *user) {
    (void)user;
    results[0] = kiln_all_reduce(cx, args[0], kiln_region_maximum(), NULL);
    return kiln_ctx_status(cx);
}

/* flag > 0 ? all_reduce(x, add) : all_reduce(x, max); flag is the same on every process */
static kiln_status branched(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                            void *user) {
    (void)user;
    kiln_tensor *pred =
        kiln_compare(cx, args[1], kiln_scalar_like(cx, args[1], 0), KILN_CMP_GT, KILN_CMP_DEFAULT);
    return kiln_cond(cx, pred, &(kiln_region){.fn = sum_branch}, &(kiln_region){.fn = max_branch},
                     &args[0], 1, 1, results);
}

Test(spmd, collectives_inside_branches) {
    kiln_ctx *cx = test_ctx();
    kiln_comm *comm = local(cx, 3, 1, 20000);
    cr_assert_eq(kiln_ctx_set_comm(cx, comm, 0), KILN_OK);
    kiln_region r = {.fn = branched};
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(2)},
                          {.dtype = KILN_F32, .shape = KILN_SHAPE_SCALAR}};
    kiln_module *m;
    cr_assert_eq(kiln_lower(cx, &r, a, 2, 1, NULL, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_ctx_set_comm(cx, NULL, 0), KILN_OK);
    const char *backends[] = {"cpu", "interpreter"};
    for (int b = 0; b < 2; b++)
        for (int flag = -1; flag <= 1; flag += 2) {
            kiln_compile_options o = kiln_compile_options_default();
            o.backend = backends[b];
            kiln_exe *exe;
            cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
            kiln_tensor *args[6], *out[3];
            for (int p = 0; p < 3; p++) {
                args[2 * p] = kiln_full(cx, KILN_F32, KILN_SHAPE(2), p + 1.0);
                args[2 * p + 1] = kiln_scalar(cx, flag, KILN_F32);
            }
            cr_assert_eq(kiln_exe_call_spmd(cx, exe, comm, args, out), KILN_OK, "%s",
                         kiln_ctx_error_message(cx));
            for (int p = 0; p < 3; p++)
                cr_assert_eq(value(out[p], 1), flag > 0 ? 6.0f : 3.0f, "%s, flag %d, process %d",
                             backends[b], flag, p);
            kiln_exe_release(exe);
        }
    kiln_module_release(m);
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}
