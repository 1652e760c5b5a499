/* SPDX-License-Identifier: Apache-2.0 */
/* Communicators over a transport of the caller's (kiln_comm_create): one ctx per "OS
 * process" (here: threads that share nothing but a small in-memory transport, as MPI ranks
 * would), bound with kiln_ctx_set_comm, running a compiled program with its collectives;
 * results equal the local communicator's. And the errors: bad arguments (the transport is
 * destroyed even then), a transport that fails, kiln_spmd_run on such a communicator. */
#define _POSIX_C_SOURCE 200809L /* pthread barriers */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kiln/kiln.h"
#include "kiln/spmd.h"
#include "test_util.h"

#define N 3

/* The transport: a slot per process and a barrier. */
typedef struct shared {
    pthread_barrier_t barrier;
    const void *send[N];
    size_t nbytes[N];
    uint64_t sig[N];
    const char *what[N];
    int calls;
} shared;

typedef struct endpoint {
    shared *sh;
    int32_t self;
    int *destroyed;
} endpoint;

static kiln_status post(endpoint *e, kiln_ctx *cx, const void *send, size_t nbytes,
                        const char *what, uint64_t sig) {
    shared *sh = e->sh;
    sh->send[e->self] = send;
    sh->nbytes[e->self] = nbytes;
    sh->sig[e->self] = sig;
    sh->what[e->self] = what;
    pthread_barrier_wait(&sh->barrier);
    for (int p = 0; p < N; p++)
        if (sh->sig[p] != sig)
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "fake: %s against %s", what,
                                      sh->what[p]);
    return KILN_OK;
}

static kiln_status fake_all_gather(void *user, kiln_ctx *cx, const int32_t *members,
                                   int32_t n_members, const void *send, size_t nbytes, void *recv,
                                   const char *what, uint64_t sig) {
    endpoint *e = user;
    kiln_status s = post(e, cx, send, nbytes, what, sig);
    for (int32_t k = 0; k < n_members && s == KILN_OK; k++)
        memcpy((char *)recv + (size_t)k * nbytes, e->sh->send[members[k]], nbytes);
    if (e->self == 0) e->sh->calls++;
    pthread_barrier_wait(&e->sh->barrier);
    return s;
}

static kiln_status fake_permute(void *user, kiln_ctx *cx, int32_t to, int32_t from,
                                const void *send, size_t nbytes, void *recv, const char *what,
                                uint64_t sig) {
    (void)to;
    endpoint *e = user;
    kiln_status s = post(e, cx, send, nbytes, what, sig);
    if (s == KILN_OK && from >= 0) memcpy(recv, e->sh->send[from], nbytes);
    pthread_barrier_wait(&e->sh->barrier);
    return s;
}

static void fake_destroy(void *user) {
    endpoint *e = user;
    (*e->destroyed)++;
}

static kiln_comm_impl fake_impl(endpoint *e) {
    return (kiln_comm_impl){.struct_size = sizeof(kiln_comm_impl),
                            .kind = "fake",
                            .self = e->self,
                            .user = e,
                            .all_gather = fake_all_gather,
                            .permute = fake_permute,
                            .destroy = fake_destroy};
}

/* all_reduce of x * (replica + 1), an all_gather of it, a ring permute, and an all_to_all
 * and a reduce_scatter of it three times over (the transport has no all_to_all: kiln
 * builds one from its all_gather) */
static kiln_status program(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                           void *user) {
    (void)user;
    kiln_tensor *id = kiln_convert(cx, kiln_replica_id(cx), KILN_F32);
    kiln_tensor *scaled =
        kiln_multiply(cx, args[0], kiln_add(cx, id, kiln_full(cx, KILN_F32, KILN_SHAPE_SCALAR, 1)));
    kiln_tensor *sum = kiln_all_reduce(cx, scaled, kiln_region_add(), NULL);
    kiln_tensor *all = kiln_all_gather(cx, scaled, 0, NULL);
    int64_t ring[] = {0, 1, 1, 2, 2, 0};
    kiln_tensor *next = kiln_collective_permute(cx, scaled, ring, 3, 0);
    kiln_tensor *wide = kiln_concatenate(cx, (kiln_tensor *[]){scaled, scaled, scaled}, 3, 0);
    kiln_tensor *a2a = kiln_all_to_all(cx, wide, 0, 0, 3, NULL);
    kiln_tensor *rs = kiln_reduce_scatter(cx, wide, 0, kiln_region_add(), NULL);
    results[0] = kiln_concatenate(cx, (kiln_tensor *[]){sum, all, next, a2a, rs}, 5, 0);
    return kiln_ctx_status(cx);
}

static kiln_exe *compile_program(kiln_ctx *cx) {
    kiln_region r = {.fn = program};
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(2)};
    kiln_module *m;
    cr_assert_eq(kiln_lower(cx, &r, &a, 1, 1, NULL, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_exe *exe;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    return exe;
}

typedef struct rank {
    pthread_t thread;
    shared *sh;
    int32_t self;
    int destroyed;
    bool x_is_two;
    kiln_status status;
    char message[512];
    float out[2 + 2 * N + 2 + 6 + 2];
} rank;

/* One "OS process": its own ctx, its own communicator over the transport. */
static void *rank_main(void *arg) {
    rank *r = arg;
    kiln_ctx *cx = test_ctx();
    endpoint e = {.sh = r->sh, .self = r->self, .destroyed = &r->destroyed};
    kiln_comm_options o = kiln_comm_options_default();
    o.num_replicas = N;
    kiln_comm_impl impl = fake_impl(&e);
    kiln_comm *comm = NULL;
    r->status = kiln_comm_create(cx, &o, &impl, &comm);
    if (r->status == KILN_OK) r->status = kiln_ctx_set_comm(cx, comm, r->self);
    kiln_comm_release(comm); /* the ctx holds it now */
    kiln_exe *exe = r->status == KILN_OK ? compile_program(cx) : NULL;
    if (r->status == KILN_OK) {
        kiln_tensor *x = kiln_full(cx, KILN_F32, KILN_SHAPE(2), 1.0 + (r->x_is_two ? 1 : 0));
        kiln_tensor *out = NULL;
        r->status = kiln_exe_call(cx, exe, &x, &out);
        if (r->status == KILN_OK) memcpy(r->out, kiln_tensor_data(out), sizeof r->out);
    }
    snprintf(r->message, sizeof r->message, "%s", kiln_ctx_error_message(cx));
    kiln_exe_release(exe);
    kiln_ctx_release(cx); /* releases the communicator: the transport is destroyed */
    return NULL;
}

static void run_ranks(rank *ranks, shared *sh) {
    pthread_barrier_init(&sh->barrier, NULL, N);
    for (int p = 0; p < N; p++) {
        ranks[p].sh = sh;
        ranks[p].self = p;
        cr_assert_eq(pthread_create(&ranks[p].thread, NULL, rank_main, &ranks[p]), 0);
    }
    for (int p = 0; p < N; p++)
        pthread_join(ranks[p].thread, NULL);
    pthread_barrier_destroy(&sh->barrier);
}

Test(comm_custom, a_compiled_program_on_one_communicator_per_process) {
    shared sh = {0};
    rank ranks[N] = {0};
    run_ranks(ranks, &sh);
    for (int p = 0; p < N; p++) {
        cr_assert_eq(ranks[p].status, KILN_OK, "process %d: %s", p, ranks[p].message);
        cr_assert_eq(ranks[p].destroyed, 1, "process %d", p);
        const float *o = ranks[p].out;
        /* sum: 1 + 2 + 3; all: 1 1 2 2 3 3; next: from the process before in the ring */
        cr_assert_eq(o[0], 6.0f, "process %d", p);
        cr_assert_eq(o[1], 6.0f);
        for (int q = 0; q < N; q++)
            cr_assert_eq(o[2 + 2 * q], q + 1.0f, "process %d: part %d", p, q);
        cr_assert_eq(o[2 + 2 * N], (float)((p + N - 1) % N + 1), "process %d", p);
        /* all_to_all: part q of wide comes from process q (value q + 1) */
        for (int q = 0; q < N; q++)
            cr_assert_eq(o[2 + 2 * N + 2 + 2 * q], q + 1.0f, "process %d: a2a %d", p, q);
        /* reduce_scatter: process p's part of the sum of wide, 6 */
        cr_assert_eq(o[2 + 2 * N + 2 + 6], 6.0f, "process %d: reduce_scatter", p);
    }
    cr_assert_gt(sh.calls, 0, "the collectives went through the transport");

    /* the local communicator gives the same bits */
    kiln_ctx *cx = test_ctx();
    kiln_comm_options o = kiln_comm_options_default();
    o.num_replicas = N;
    kiln_comm *comm;
    cr_assert_eq(kiln_comm_create_local(cx, &o, &comm), KILN_OK);
    cr_assert_eq(kiln_ctx_set_comm(cx, comm, 0), KILN_OK); /* traced for the grid */
    kiln_exe *exe = compile_program(cx);
    cr_assert_eq(kiln_ctx_set_comm(cx, NULL, 0), KILN_OK);
    kiln_tensor *args[N], *out[N];
    for (int p = 0; p < N; p++)
        args[p] = kiln_full(cx, KILN_F32, KILN_SHAPE(2), 1.0);
    cr_assert_eq(kiln_exe_call_spmd(cx, exe, comm, args, out), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    for (int p = 0; p < N; p++)
        cr_assert_eq(memcmp(kiln_tensor_data(out[p]), ranks[p].out, sizeof ranks[p].out), 0,
                     "process %d", p);
    kiln_exe_release(exe);
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

Test(comm_custom, each_process_brings_its_own_data) {
    shared sh = {0};
    rank ranks[N] = {0};
    ranks[1].x_is_two = true;
    run_ranks(ranks, &sh);
    for (int p = 0; p < N; p++)
        cr_assert_eq(ranks[p].status, KILN_OK, "process %d: %s", p, ranks[p].message);
    cr_assert_eq(ranks[0].out[0], 1.0f + 4.0f + 3.0f);
}

typedef struct mismatch {
    pthread_t thread;
    shared *sh;
    int32_t self;
    int destroyed;
    kiln_status status;
    char message[512];
} mismatch;

static void *mismatch_main(void *arg) {
    mismatch *r = arg;
    kiln_ctx *cx = test_ctx();
    endpoint e = {.sh = r->sh, .self = r->self, .destroyed = &r->destroyed};
    kiln_comm_options o = kiln_comm_options_default();
    o.num_replicas = N;
    kiln_comm_impl impl = fake_impl(&e);
    kiln_comm *comm = NULL;
    cr_assert_eq(kiln_comm_create(cx, &o, &impl, &comm), KILN_OK);
    cr_assert_str_eq(kiln_comm_kind(comm), "fake");
    cr_assert_eq(kiln_comm_self(comm), r->self);
    cr_assert_eq(kiln_ctx_set_comm(cx, comm, r->self), KILN_OK);
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, r->self == 2 ? KILN_SHAPE(3) : KILN_SHAPE(2));
    (void)kiln_all_reduce(cx, x, kiln_region_add(), NULL); /* eager */
    r->status = kiln_ctx_status(cx);
    snprintf(r->message, sizeof r->message, "%s", kiln_ctx_error_message(cx));
    kiln_ctx_release(cx);
    kiln_comm_release(comm);
    return NULL;
}

Test(comm_custom, processes_that_disagree_fail_with_the_transports_message) {
    shared sh = {0};
    mismatch ranks[N] = {0};
    pthread_barrier_init(&sh.barrier, NULL, N);
    for (int p = 0; p < N; p++) {
        ranks[p].sh = &sh;
        ranks[p].self = p;
        cr_assert_eq(pthread_create(&ranks[p].thread, NULL, mismatch_main, &ranks[p]), 0);
    }
    for (int p = 0; p < N; p++)
        pthread_join(ranks[p].thread, NULL);
    pthread_barrier_destroy(&sh.barrier);
    for (int p = 0; p < N; p++) {
        cr_assert_eq(ranks[p].status, KILN_INVALID_ARGUMENT, "process %d", p);
        cr_assert(strstr(ranks[p].message, "fake:") && strstr(ranks[p].message, "f32[3]") &&
                      strstr(ranks[p].message, "f32[2]"),
                  "process %d: %s", p, ranks[p].message);
        cr_assert_eq(ranks[p].destroyed, 1);
    }
}

/* ---- bad arguments ------------------------------------------------------------------------- */

static kiln_status nothing(kiln_ctx *cx, int32_t process, void *user) {
    (void)cx, (void)process, (void)user;
    return KILN_OK;
}

Test(comm_custom, bad_arguments_name_the_argument_and_destroy_the_transport) {
    kiln_ctx *cx = test_ctx();
    int destroyed = 0;
    endpoint e = {.self = 0, .destroyed = &destroyed};
    kiln_comm *comm = (kiln_comm *)&e;
    kiln_comm_impl impl = fake_impl(&e);

    cr_assert_eq(kiln_comm_create(cx, NULL, NULL, &comm), KILN_INVALID_ARGUMENT);
    cr_assert_null(comm);
    cr_assert(strstr(kiln_ctx_error_message(cx), "impl"), "%s", kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);

    cr_assert_eq(kiln_comm_create(cx, NULL, &impl, NULL), KILN_INVALID_ARGUMENT);
    cr_assert(strstr(kiln_ctx_error_message(cx), "out_comm"), "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(destroyed, 1);
    kiln_ctx_clear_error(cx);

    kiln_comm_impl no_permute = impl;
    no_permute.permute = NULL;
    cr_assert_eq(kiln_comm_create(cx, NULL, &no_permute, &comm), KILN_INVALID_ARGUMENT);
    cr_assert(strstr(kiln_ctx_error_message(cx), "permute"), "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(destroyed, 2);
    kiln_ctx_clear_error(cx);

    kiln_comm_impl outside = impl;
    outside.self = 2; /* the default grid has one process */
    cr_assert_eq(kiln_comm_create(cx, NULL, &outside, &comm), KILN_INVALID_ARGUMENT);
    cr_assert(strstr(kiln_ctx_error_message(cx), "impl->self is 2"), "%s",
              kiln_ctx_error_message(cx));
    cr_assert_eq(destroyed, 3);
    kiln_ctx_clear_error(cx);

    kiln_comm_options o = kiln_comm_options_default();
    o.num_partitions = 0;
    cr_assert_eq(kiln_comm_create(cx, &o, &impl, &comm), KILN_INVALID_ARGUMENT);
    cr_assert(strstr(kiln_ctx_error_message(cx), "num_partitions"), "%s",
              kiln_ctx_error_message(cx));
    cr_assert_eq(destroyed, 4);
    kiln_ctx_clear_error(cx);

    /* one process per OS process: kiln_spmd_run refuses it, set_comm wants its self */
    o = kiln_comm_options_default();
    o.num_replicas = 2;
    cr_assert_eq(kiln_comm_create(cx, &o, &impl, &comm), KILN_OK);
    cr_assert_eq(kiln_spmd_run(cx, comm, nothing, NULL), KILN_INVALID_ARGUMENT);
    cr_assert(strstr(kiln_ctx_error_message(cx), "one process per OS process"), "%s",
              kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);
    cr_assert_eq(kiln_ctx_set_comm(cx, comm, 1), KILN_INVALID_ARGUMENT);
    cr_assert(strstr(kiln_ctx_error_message(cx), "process 0 of the fake communicator"), "%s",
              kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);
    cr_assert_eq(destroyed, 4);
    kiln_comm_release(comm);
    cr_assert_eq(destroyed, 5);
    kiln_ctx_release(cx);
}
