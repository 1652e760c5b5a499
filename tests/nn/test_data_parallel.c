/* SPDX-License-Identifier: Apache-2.0 */
/* Data-parallel training (kiln_nn_data_parallel_grads, kiln_nn_check_replicated): R
 * replicas on a local communicator, each training a small MLP on its shard of every batch
 * with a jitted step, end with exactly the parameters of one process that computes the R
 * shards in sequence (R = 1, 2, 4), eagerly too; the replicas' parameters are checked
 * equal after every step, and a replica that drifts is caught; the errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"
#include "kiln/spmd.h"
#include "test_util.h"

typedef struct net {
    kiln_tensor *w1, *b1, *w2, *b2;
} net;
typedef struct batch {
    kiln_tensor *x, *y;
} batch;
typedef struct metrics {
    kiln_tensor *loss;
} metrics;
typedef struct loss_in {
    net params;
    kiln_tensor *x, *y;
} loss_in;
typedef struct step_in {
    net params;
    batch data;
} step_in;
typedef struct step_out {
    net params;
    metrics m;
} step_out;

KILN_TREE_DEF(net, KILN_FIELD(net, w1), KILN_FIELD(net, b1), KILN_FIELD(net, w2),
              KILN_FIELD(net, b2));
KILN_TREE_DEF(batch, KILN_FIELD(batch, x), KILN_FIELD(batch, y));
KILN_TREE_DEF(metrics, KILN_FIELD(metrics, loss));
KILN_TREE_DEF(loss_in, KILN_SUBTREE(loss_in, params, net), KILN_FIELD(loss_in, x),
              KILN_FIELD(loss_in, y));
KILN_TREE_DEF(step_in, KILN_SUBTREE(step_in, params, net), KILN_SUBTREE(step_in, data, batch));
KILN_TREE_DEF(step_out, KILN_SUBTREE(step_out, params, net), KILN_SUBTREE(step_out, m, metrics));

#define IN 8
#define HIDDEN 16
#define OUT 4
#define BATCH 8
#define STEPS 6
#define N_PARAMS (IN * HIDDEN + HIDDEN + HIDDEN * OUT + OUT)

static kiln_status loss_fn(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    (void)user;
    const loss_in *in = in_;
    metrics *out = out_;
    kiln_tensor *h = kiln_nn_relu(cx, kiln_nn_dense(cx, in->x, in->params.w1, in->params.b1));
    out->loss = kiln_nn_mse(cx, kiln_nn_dense(cx, h, in->params.w2, in->params.b2), in->y);
    return kiln_ctx_status(cx);
}

static kiln_status shard_grads(kiln_ctx *cx, const void *params, const void *shard, void *out_grads,
                               void *out_aux, void *user) {
    (void)user;
    const batch *b = shard;
    loss_in li = {*(const net *)params, b->x, b->y};
    loss_in g;
    memset(&g, 0, sizeof g);
    kiln_grad_options go = kiln_grad_options_default();
    go.wrt_paths = (const char *[]){"params"};
    go.n_wrt_paths = 1;
    if (kiln_value_and_grad_tree(cx, loss_fn, NULL, &kiln_tree_def_loss_in, &li,
                                 &kiln_tree_def_metrics, out_aux, &go, &g) != KILN_OK)
        return kiln_ctx_status(cx);
    *(net *)out_grads = g.params;
    return KILN_OK;
}

/* One SGD step on this process's data; `user` is the kiln_nn_data_parallel. */
static kiln_status train_step(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    const step_in *in = in_;
    step_out *out = out_;
    net g;
    if (kiln_nn_data_parallel_grads(cx, user, shard_grads, NULL, &kiln_tree_def_net, &in->params,
                                    &kiln_tree_def_batch, &in->data, &kiln_tree_def_metrics, &g,
                                    &out->m) != KILN_OK)
        return kiln_ctx_status(cx);
    kiln_tensor *const *p = &in->params.w1, *const *d = &g.w1;
    kiln_tensor **o = &out->params.w1;
    for (int i = 0; i < 4; i++)
        o[i] = kiln_subtract(cx, p[i], kiln_multiply(cx, d[i], kiln_scalar_like(cx, d[i], 0.02)));
    return kiln_ctx_status(cx);
}

/* Deterministic values of mixed sizes, so that the order of a sum shows in the bits. */
static kiln_tensor *values(kiln_ctx *cx, kiln_shape shape, uint32_t seed, int64_t first_row,
                           int64_t rows) {
    int64_t cols = 1;
    for (int32_t a = 1; a < shape.rank; a++)
        cols *= shape.dims[a];
    float buf[BATCH * 64];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            uint32_t h = (uint32_t)((first_row + r) * cols + c + 1) * 0x9e3779b9u ^ seed;
            h ^= h >> 15, h *= 0x85ebca6bu, h ^= h >> 13;
            buf[r * cols + c] = ((float)(h % 2000) / 1000.0f - 1.0f) * (c % 3 ? 0.3f : 2.1f);
        }
    shape.dims[0] = rows;
    return kiln_tensor_from_host(cx, KILN_F32, shape, buf, (size_t)(rows * cols) * sizeof(float));
}

static net init_net(kiln_ctx *cx) {
    net n = {values(cx, KILN_SHAPE(IN, HIDDEN), 11, 0, IN),
             values(cx, KILN_SHAPE(HIDDEN), 12, 0, HIDDEN),
             values(cx, KILN_SHAPE(HIDDEN, OUT), 13, 0, HIDDEN),
             values(cx, KILN_SHAPE(OUT), 14, 0, OUT)};
    for (int i = 0; i < 4; i++)
        kiln_tensor_retain((&n.w1)[i]);
    return n;
}

/* Rows [first, first + rows) of step t's global batch. */
static batch batch_rows(kiln_ctx *cx, int t, int64_t first, int64_t rows) {
    return (batch){values(cx, KILN_SHAPE(BATCH, IN), 100u + (uint32_t)t, first, rows),
                   values(cx, KILN_SHAPE(BATCH, OUT), 200u + (uint32_t)t, first, rows)};
}

static void copy_params(const net *n, float *dst) {
    size_t at = 0;
    for (int i = 0; i < 4; i++) {
        size_t nb = kiln_tensor_nbytes((&n->w1)[i]);
        memcpy((char *)dst + at, kiln_tensor_data((&n->w1)[i]), nb);
        at += nb;
    }
}

typedef struct run {
    int32_t replicas, shards;
    bool eager, drift; /* drift: replica 1 nudges a weight before its last check */
    float params[KILN_COMM_MAX_PROCESSES][N_PARAMS];
    float loss[KILN_COMM_MAX_PROCESSES];
} run;

/* STEPS steps of one process: replica `process` of run->replicas, n_shards run->shards. */
static kiln_status train(kiln_ctx *cx, int32_t process, void *user) {
    run *r = user;
    kiln_nn_data_parallel dp = kiln_nn_data_parallel_default();
    dp.n_shards = r->shards;
    kiln_jit *jit = NULL;
    if (!r->eager && kiln_jit_create_tree(cx, train_step, &dp, &kiln_tree_def_step_in,
                                          &kiln_tree_def_step_out, NULL, &jit) != KILN_OK)
        return kiln_ctx_status(cx);
    net params = init_net(cx);
    int64_t rows = BATCH / r->replicas;
    for (int t = 0; t < STEPS && kiln_ctx_status(cx) == KILN_OK; t++) {
        kiln_scope_begin(cx);
        step_in in = {params, batch_rows(cx, t, process * rows, rows)};
        step_out out;
        if (r->eager)
            train_step(cx, &in, &out, &dp);
        else
            kiln_jit_call(cx, jit, &in, &out);
        if (kiln_ctx_status(cx) == KILN_OK) {
            for (int i = 0; i < 4; i++) {
                kiln_tensor_release((&params.w1)[i]);
                (&params.w1)[i] = kiln_tensor_retain((&out.params.w1)[i]);
            }
            r->loss[process] = (float)kiln_tensor_item(cx, out.m.loss, 0);
            if (getenv("KILN_TEST_VERBOSE"))
                fprintf(stderr, "R %d S %d p %d step %d loss %.9g\n", (int)r->replicas,
                        (int)r->shards, (int)process, t, (double)r->loss[process]);
            if (r->drift && process == 1 && t == STEPS - 1)
                ((float *)kiln_tensor_data(params.b2))[0] += 1e-6f;
            kiln_nn_check_replicated(cx, &kiln_tree_def_net, &params);
        }
        kiln_scope_end(cx);
    }
    if (kiln_ctx_status(cx) == KILN_OK) copy_params(&params, r->params[process]);
    for (int i = 0; i < 4; i++)
        kiln_tensor_release((&params.w1)[i]);
    kiln_jit_release(jit);
    return kiln_ctx_status(cx);
}

static void run_replicas(kiln_ctx *cx, run *r) {
    if (r->replicas == 1) {
        cr_assert_eq(train(cx, 0, r), KILN_OK, "%s", kiln_ctx_error_message(cx));
        return;
    }
    kiln_comm_options o = kiln_comm_options_default();
    o.num_replicas = r->replicas;
    kiln_comm *comm = NULL;
    cr_assert_eq(kiln_comm_create_local(cx, &o, &comm), KILN_OK);
    kiln_status s = kiln_spmd_run(cx, comm, train, r);
    kiln_comm_release(comm);
    cr_assert_eq(s, KILN_OK, "%d replicas: %s", (int)r->replicas, kiln_ctx_error_message(cx));
}

static void replicas_equal_shards_in_sequence(bool eager) {
    kiln_ctx *cx = test_ctx();
    static run oracle, dist;
    for (int32_t R = 1; R <= 4; R *= 2) {
        memset(&oracle, 0, sizeof oracle);
        memset(&dist, 0, sizeof dist);
        oracle = (run){.replicas = 1, .shards = R, .eager = eager};
        dist = (run){.replicas = R, .shards = 1, .eager = eager};
        run_replicas(cx, &oracle);
        run_replicas(cx, &dist);
        for (int i = 0; i < N_PARAMS; i++)
            cr_assert(isfinite(oracle.params[0][i]), "R = %d: parameter %d is %g", (int)R, i,
                      (double)oracle.params[0][i]);
        cr_assert_lt(oracle.loss[0], 10.0f, "R = %d: the loss went down", (int)R);
        for (int32_t p = 0; p < R; p++) {
            cr_assert_eq(memcmp(dist.params[p], oracle.params[0], sizeof oracle.params[0]), 0,
                         "%s, R = %d: replica %d's parameters differ from the sequential run's",
                         eager ? "eager" : "compiled", (int)R, (int)p);
            cr_assert_eq(memcmp(&dist.loss[p], &oracle.loss[0], sizeof(float)), 0,
                         "R = %d: the averaged loss", (int)R);
        }
    }
    /* and the training moved the parameters: the sequential mode of 4 differs from 1 */
    static run one;
    one = (run){.replicas = 1, .shards = 1, .eager = eager};
    run_replicas(cx, &one);
    cr_assert_neq(memcmp(one.params[0], oracle.params[0], sizeof one.params[0]), 0,
                  "4 shards summed in order round differently from one batch somewhere");
    kiln_ctx_release(cx);
}

Test(data_parallel, replicas_equal_shards_in_sequence_compiled) {
    replicas_equal_shards_in_sequence(false);
}

Test(data_parallel, replicas_equal_shards_in_sequence_eager) {
    replicas_equal_shards_in_sequence(true);
}

Test(data_parallel, shards_within_replicas_accumulate) {
    kiln_ctx *cx = test_ctx();
    static run oracle, mixed;
    oracle = (run){.replicas = 1, .shards = 4};
    mixed = (run){.replicas = 2, .shards = 2};
    run_replicas(cx, &oracle);
    run_replicas(cx, &mixed);
    /* (g0 + g1) + (g2 + g3) against ((g0 + g1) + g2) + g3: close, not necessarily equal */
    for (int i = 0; i < N_PARAMS; i++)
        cr_assert(fabsf(mixed.params[1][i] - oracle.params[0][i]) <=
                      1e-5f * (1 + fabsf(oracle.params[0][i])),
                  "parameter %d: %g against %g", i, (double)mixed.params[1][i],
                  (double)oracle.params[0][i]);
    cr_assert_eq(memcmp(mixed.params[0], mixed.params[1], sizeof mixed.params[0]), 0);
    kiln_ctx_release(cx);
}

Test(data_parallel, a_replica_that_drifts_is_caught_on_every_replica) {
    kiln_ctx *cx = test_ctx();
    static run r;
    r = (run){.replicas = 2, .shards = 1, .drift = true};
    kiln_comm_options o = kiln_comm_options_default();
    o.num_replicas = 2;
    kiln_comm *comm = NULL;
    cr_assert_eq(kiln_comm_create_local(cx, &o, &comm), KILN_OK);
    cr_assert_eq(kiln_spmd_run(cx, comm, train, &r), KILN_DATA_LOSS);
    const char *msg = kiln_ctx_error_message(cx);
    cr_assert(strstr(msg, "kiln_nn_check_replicated: the replicas hold different net") &&
                  strstr(msg, "replica 1's"),
              "%s", msg);
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

/* ---- errors ------------------------------------------------------------------------------ */

static kiln_status wrong_shape(kiln_ctx *cx, const void *params, const void *shard, void *out_grads,
                               void *out_aux, void *user) {
    (void)shard, (void)out_aux, (void)user;
    *(net *)out_grads = *(const net *)params;
    ((net *)out_grads)->b1 = kiln_zeros(cx, KILN_F32, KILN_SHAPE(3));
    return KILN_OK;
}

static kiln_status fails_quietly(kiln_ctx *cx, const void *params, const void *shard,
                                 void *out_grads, void *out_aux, void *user) {
    (void)cx, (void)params, (void)shard, (void)out_grads, (void)out_aux, (void)user;
    return KILN_UNIMPLEMENTED;
}

Test(data_parallel, errors_name_the_argument_and_write_nothing) {
    kiln_ctx *cx = test_ctx();
    net params = init_net(cx);
    batch b = batch_rows(cx, 0, 0, BATCH);
    net g = {0};
    metrics m = {0};
    kiln_nn_data_parallel dp = kiln_nn_data_parallel_default();
#define EXPECT(call, text)                                                                     \
    do {                                                                                       \
        cr_assert_eq((call), KILN_INVALID_ARGUMENT, "%s", text);                               \
        cr_assert(strstr(kiln_ctx_error_message(cx), text), "%s", kiln_ctx_error_message(cx)); \
        cr_assert_null(g.w1);                                                                  \
        kiln_ctx_clear_error(cx);                                                              \
    } while (0)
    EXPECT(kiln_nn_data_parallel_grads(cx, NULL, NULL, NULL, &kiln_tree_def_net, &params,
                                       &kiln_tree_def_batch, &b, NULL, &g, NULL),
           "fn is NULL");
    EXPECT(kiln_nn_data_parallel_grads(cx, NULL, shard_grads, NULL, &kiln_tree_def_net, &params,
                                       &kiln_tree_def_batch, &b, &kiln_tree_def_metrics, &g, NULL),
           "out_aux is NULL");
    dp.n_shards = 0;
    EXPECT(kiln_nn_data_parallel_grads(cx, &dp, shard_grads, NULL, &kiln_tree_def_net, &params,
                                       &kiln_tree_def_batch, &b, &kiln_tree_def_metrics, &g, &m),
           "dp->n_shards is 0");
    dp.n_shards = 3;
    EXPECT(kiln_nn_data_parallel_grads(cx, &dp, shard_grads, NULL, &kiln_tree_def_net, &params,
                                       &kiln_tree_def_batch, &b, &kiln_tree_def_metrics, &g, &m),
           "batch.x has shape [8,8]; 3 shards");
    dp = kiln_nn_data_parallel_default();
    dp.struct_size = 4;
    EXPECT(kiln_nn_data_parallel_grads(cx, &dp, shard_grads, NULL, &kiln_tree_def_net, &params,
                                       &kiln_tree_def_batch, &b, &kiln_tree_def_metrics, &g, &m),
           "dp->struct_size");
    EXPECT(kiln_nn_data_parallel_grads(cx, NULL, wrong_shape, NULL, &kiln_tree_def_net, &params,
                                       &kiln_tree_def_batch, &b, NULL, &g, NULL),
           "grads.b1 is f32[3]; expected f32[16] (the parameter's)");
    cr_assert_eq(kiln_nn_data_parallel_grads(cx, NULL, fails_quietly, NULL, &kiln_tree_def_net,
                                             &params, &kiln_tree_def_batch, &b, NULL, &g, NULL),
                 KILN_UNIMPLEMENTED);
    cr_assert(strstr(kiln_ctx_error_message(cx), "fn returned UNIMPLEMENTED for shard 0"), "%s",
              kiln_ctx_error_message(cx));
    cr_assert_null(g.w1);
    kiln_ctx_clear_error(cx);

    /* unbound: the check passes; NULL arguments do not */
    cr_assert_eq(kiln_nn_check_replicated(cx, &kiln_tree_def_net, &params), KILN_OK);
    cr_assert_eq(kiln_nn_check_replicated(cx, &kiln_tree_def_net, NULL), KILN_INVALID_ARGUMENT);
    cr_assert(strstr(kiln_ctx_error_message(cx), "tree is NULL"), "%s", kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);
    for (int i = 0; i < 4; i++)
        kiln_tensor_release((&params.w1)[i]);
    kiln_ctx_release(cx);
}
