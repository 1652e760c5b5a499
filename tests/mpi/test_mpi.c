/* SPDX-License-Identifier: Apache-2.0 */
/* The MPI communicator under mpirun (one process per rank; CTest runs it on 2 and 4
 * ranks): a compiled program with every collective, groups in a non-ascending order and a
 * collective in a loop gives each rank exactly the bits that the local communicator gives
 * (the same program on threads, computed on every rank as the oracle); ranks that
 * disagree all fail naming both ops and the communicator stays usable; a rank that never
 * arrives is a timeout, after which the communicator refuses work; bad arguments; MPI
 * started and finalized by kiln. A failed check aborts every rank (no hang). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"
#include "kiln/mpi.h"
#include "kiln/spmd.h"

static int g_rank = -1;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "mpi test: rank %d: %s:%d: check failed: %s: ", g_rank, __FILE__, \
                    __LINE__, #cond);                                                         \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fprintf(stderr, "\n");                                                            \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                     \
        }                                                                                     \
    } while (0)

static int g_size;

/* The halves of the ranks, each in reverse order: [[1, 0], [3, 2]] on 4 ranks. */
static int64_t g_pairs_ids[KILN_COMM_MAX_PROCESSES];

/* A fori_loop body: (i, y) -> all_reduce(y) / 4 */
static kiln_status halve(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                         void *user) {
    (void)user;
    results[0] = kiln_multiply(cx, kiln_all_reduce(cx, args[1], kiln_region_add(), NULL),
                               kiln_full(cx, KILN_F32, KILN_SHAPE_SCALAR, 0.25));
    return kiln_ctx_status(cx);
}

/* Every collective of x (f32[4n]), flattened and concatenated. */
static kiln_status program(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                           void *user) {
    (void)user;
    int64_t n = g_size;
    kiln_tensor *x = args[0];
    kiln_tensor *parts[9];
    parts[0] = kiln_all_reduce(cx, x, kiln_region_add(), NULL);
    parts[1] = kiln_all_reduce(cx, x, kiln_region_maximum(), NULL);
    parts[2] = kiln_all_gather(cx, x, 0, NULL);
    parts[3] = kiln_reduce_scatter(cx, x, 0, kiln_region_add(), NULL);
    parts[4] = kiln_all_to_all(cx, x, 0, 0, n, NULL);
    int64_t ring[2 * KILN_COMM_MAX_PROCESSES];
    for (int64_t i = 0; i < n; i++)
        ring[2 * i] = i, ring[2 * i + 1] = (i + 1) % n;
    parts[5] = kiln_collective_permute(cx, x, ring, (int32_t)n, 0);
    kiln_replica_groups pairs = {.ids = g_pairs_ids, .n_groups = (int32_t)(n / 2), .group_size = 2};
    parts[6] = kiln_all_gather(cx, x, 0, &pairs);
    parts[7] = kiln_collective_broadcast(cx, x, &pairs);
    kiln_region body = {.fn = halve};
    kiln_tensor *looped = NULL;
    kiln_status s = kiln_fori_loop(cx, 0, 5, &x, 1, &body, &looped);
    if (s != KILN_OK) return s;
    parts[8] = looped;
    results[0] = kiln_concatenate(cx, parts, 9, 0);
    return kiln_ctx_status(cx);
}

/* Rank r's input: values of very different sizes, so that the order of a sum shows. */
static void input(int r, float *x, int64_t len) {
    uint32_t h = 0x9e3779b9u * (uint32_t)(r + 1);
    for (int64_t i = 0; i < len; i++) {
        h ^= h << 13, h ^= h >> 17, h ^= h << 5;
        float m = (float)(h % 2001) / 1000.0f - 1.0f;
        x[i] = m * (i % 3 == 0 ? 1e7f : i % 3 == 1 ? 1.0f : 1e-7f);
    }
}

static kiln_exe *compile_program(kiln_ctx *cx, int64_t len, const char *backend) {
    kiln_region r = {.fn = program};
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(len)};
    kiln_module *m = NULL;
    kiln_status s = kiln_lower(cx, &r, &a, 1, 1, NULL, &m);
    CHECK(s == KILN_OK, "lower: %s", kiln_ctx_error_message(cx));
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = backend;
    kiln_exe *exe = NULL;
    s = kiln_compile(cx, m, &o, &exe);
    CHECK(s == KILN_OK, "compile: %s", kiln_ctx_error_message(cx));
    kiln_module_release(m);
    return exe;
}

/* The ranks' results equal those of the same program on a local communicator. */
static void same_bits_as_local(kiln_ctx *cx, const char *backend) {
    int64_t len = 4 * (int64_t)g_size;
    kiln_exe *exe = compile_program(cx, len, backend);
    float *mine = malloc((size_t)len * sizeof *mine);
    input(g_rank, mine, len);
    kiln_tensor *x =
        kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(len), mine, (size_t)len * sizeof *mine);
    kiln_tensor *out = NULL;
    kiln_status s = kiln_exe_call(cx, exe, &x, &out);
    CHECK(s == KILN_OK, "%s: call: %s", backend, kiln_ctx_error_message(cx));

    kiln_ctx *oracle = NULL;
    CHECK(kiln_ctx_create(NULL, &oracle) == KILN_OK, "ctx");
    kiln_comm_options o = kiln_comm_options_default();
    o.num_replicas = g_size;
    kiln_comm *local = NULL;
    CHECK(kiln_comm_create_local(oracle, &o, &local) == KILN_OK, "%s",
          kiln_ctx_error_message(oracle));
    /* traced as process 0 of the grid: groups of all replicas have g_size processes */
    CHECK(kiln_ctx_set_comm(oracle, local, 0) == KILN_OK, "%s", kiln_ctx_error_message(oracle));
    kiln_exe *exe2 = compile_program(oracle, len, backend);
    kiln_ctx_set_comm(oracle, NULL, 0);
    kiln_tensor *args[KILN_COMM_MAX_PROCESSES], *outs[KILN_COMM_MAX_PROCESSES];
    for (int p = 0; p < g_size; p++) {
        input(p, mine, len);
        args[p] = kiln_tensor_from_host(oracle, KILN_F32, KILN_SHAPE(len), mine,
                                        (size_t)len * sizeof *mine);
    }
    s = kiln_exe_call_spmd(oracle, exe2, local, args, outs);
    CHECK(s == KILN_OK, "local: %s", kiln_ctx_error_message(oracle));
    size_t nbytes = kiln_tensor_nbytes(out);
    CHECK(nbytes == kiln_tensor_nbytes(outs[g_rank]), "sizes %zu, %zu", nbytes,
          kiln_tensor_nbytes(outs[g_rank]));
    const float *a = kiln_tensor_data(out), *b = kiln_tensor_data(outs[g_rank]);
    for (size_t i = 0; i < nbytes / sizeof(float); i++)
        CHECK(memcmp(&a[i], &b[i], sizeof *a) == 0, "%s: element %zu: %.9g on MPI, %.9g local",
              backend, i, (double)a[i], (double)b[i]);
    /* and the sum is not trivially order-free: the ranks' values are all there */
    CHECK(a[0] != mine[0] || g_size == 1, "%s: the all_reduce changed nothing", backend);
    kiln_exe_release(exe2);
    kiln_comm_release(local);
    kiln_ctx_release(oracle);
    kiln_exe_release(exe);
    free(mine);
}

/* Above 256 KiB the all_reduce moves chunks (MPI's all-to-all, then all-gather), the last
 * one padded here; each element is still the fold in rank order. */
static void a_large_all_reduce(kiln_ctx *cx) {
    enum { N = 100003 };
    static float x[N], want[N];
    for (int p = 0; p < g_size; p++) {
        input(p, x, N);
        for (int i = 0; i < N; i++)
            want[i] = p == 0 ? x[i] : want[i] + x[i];
    }
    input(g_rank, x, N);
    kiln_scope_begin(cx);
    kiln_tensor *t = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(N), x, sizeof x);
    kiln_tensor *y = kiln_all_reduce(cx, t, kiln_region_add(), NULL);
    CHECK(y, "%s", kiln_ctx_error_message(cx));
    const float *got = kiln_tensor_data(y);
    for (int i = 0; i < N; i++)
        CHECK(memcmp(&got[i], &want[i], 4) == 0, "element %d: %.9g, want %.9g", i, (double)got[i],
              (double)want[i]);
    kiln_scope_end(cx);
}

static void disagreeing_ranks_all_fail(kiln_ctx *cx) {
    kiln_tensor *x = kiln_zeros(cx, KILN_F32, g_rank == 1 ? KILN_SHAPE(3) : KILN_SHAPE(2));
    (void)kiln_all_reduce(cx, x, kiln_region_add(), NULL);
    CHECK(kiln_ctx_status(cx) == KILN_INVALID_ARGUMENT, "%s",
          kiln_status_name(kiln_ctx_status(cx)));
    const char *msg = kiln_ctx_error_message(cx);
    CHECK(strstr(msg, "process 0 runs stablehlo.all_reduce of f32[2]") &&
              strstr(msg, "process 1 runs stablehlo.all_reduce of f32[3]"),
          "%s", msg);
    kiln_ctx_clear_error(cx);
    /* still usable: the data never moved */
    kiln_tensor *y =
        kiln_all_reduce(cx, kiln_full(cx, KILN_F32, KILN_SHAPE(2), 1.0), kiln_region_add(), NULL);
    CHECK(y && ((const float *)kiln_tensor_data(y))[1] == (float)g_size, "%s",
          kiln_ctx_error_message(cx));
}

static void bad_arguments(kiln_ctx *cx) {
    kiln_comm *c = NULL;
    kiln_comm_options o = kiln_comm_options_default();
    o.num_replicas = g_size + 1;
    CHECK(kiln_comm_create_mpi(cx, &o, MPI_COMM_WORLD, &c) == KILN_INVALID_ARGUMENT, "grid");
    CHECK(strstr(kiln_ctx_error_message(cx), "the MPI communicator has") && !c, "%s",
          kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);
    o = kiln_comm_options_default();
    o.num_replicas = g_size;
    o.timeout_ms = -1;
    CHECK(kiln_comm_create_mpi(cx, &o, MPI_COMM_WORLD, &c) == KILN_INVALID_ARGUMENT, "timeout");
    CHECK(strstr(kiln_ctx_error_message(cx), "timeout_ms"), "%s", kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);
    CHECK(kiln_comm_create_mpi(cx, NULL, MPI_COMM_WORLD, NULL) == KILN_INVALID_ARGUMENT, "out");
    CHECK(strstr(kiln_ctx_error_message(cx), "out_comm"), "%s", kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);
    CHECK(kiln_spmd_run(cx, kiln_ctx_comm(cx, NULL), NULL, NULL) == KILN_INVALID_ARGUMENT, "run");
    kiln_ctx_clear_error(cx);
}

/* A shard_map program exported by JAX (tests/data/spmd/make.py) for this many devices, as
 * one partition per rank: every rank gets JAX's results (to float tolerance) and the
 * local communicator's bits. */
static kiln_tensor *load(kiln_ctx *cx, const char *stem, const char *what) {
    char path[512];
    snprintf(path, sizeof path, "%s/spmd/%s.%s.npy", KILN_TEST_DATA_DIR, stem, what);
    kiln_tensor *t = NULL;
    CHECK(kiln_npy_load(cx, path, &t) == KILN_OK, "%s", kiln_ctx_error_message(cx));
    return t;
}

static void a_jax_shard_map_program(void) {
    char stem[32], path[512];
    snprintf(stem, sizeof stem, "rows%d", g_size);
    snprintf(path, sizeof path, "%s/spmd/%s.mlir.bc", KILN_TEST_DATA_DIR, stem);
    kiln_ctx *cx = NULL;
    CHECK(kiln_ctx_create(NULL, &cx) == KILN_OK, "ctx");
    kiln_module *m = NULL;
    CHECK(kiln_module_parse_file(cx, path, NULL, &m) == KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_info info;
    CHECK(kiln_module_info_get(cx, m, &info) == KILN_OK && info.num_partitions == g_size &&
              info.num_replicas == 1,
          "the artifact's grid: %d x %d", info.num_replicas, info.num_partitions);
    kiln_comm_options o = kiln_comm_options_default();
    o.num_partitions = g_size; /* a mesh's devices are partitions */
    kiln_comm *comm = NULL;
    CHECK(kiln_comm_create_mpi(cx, &o, MPI_COMM_WORLD, &comm) == KILN_OK, "%s",
          kiln_ctx_error_message(cx));
    CHECK(kiln_ctx_set_comm(cx, comm, kiln_comm_self(comm)) == KILN_OK, "bind");
    kiln_exe *exe = NULL;
    CHECK(kiln_compile(cx, m, NULL, &exe) == KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *args[2] = {load(cx, stem, "in0"), load(cx, stem, "in1")}, *out[2];
    CHECK(kiln_exe_call(cx, exe, args, out) == KILN_OK, "%s", kiln_ctx_error_message(cx));
    for (int r = 0; r < 2; r++) {
        kiln_tensor *want = load(cx, stem, r ? "want1" : "want0");
        CHECK(kiln_tensor_nbytes(want) == kiln_tensor_nbytes(out[r]), "result %d's size", r);
        const float *a = kiln_tensor_data(out[r]), *b = kiln_tensor_data(want);
        for (size_t i = 0; i < kiln_tensor_nbytes(want) / 4; i++)
            CHECK(fabsf(a[i] - b[i]) <= 1e-5f * (1 + fabsf(b[i])), "result %d[%zu]: %g, JAX %g", r,
                  i, (double)a[i], (double)b[i]);
    }
    /* the same bits as the local communicator's */
    kiln_ctx *lx = NULL;
    CHECK(kiln_ctx_create(NULL, &lx) == KILN_OK, "ctx");
    kiln_comm *local = NULL;
    CHECK(kiln_comm_create_local(lx, &o, &local) == KILN_OK, "local");
    kiln_exe *lexe = NULL;
    CHECK(kiln_compile(lx, m, NULL, &lexe) == KILN_OK, "%s", kiln_ctx_error_message(lx));
    kiln_tensor *largs[2 * KILN_COMM_MAX_PROCESSES], *lout[2 * KILN_COMM_MAX_PROCESSES];
    for (int p = 0; p < g_size; p++)
        largs[2 * p] = load(lx, stem, "in0"), largs[2 * p + 1] = load(lx, stem, "in1");
    CHECK(kiln_exe_call_spmd(lx, lexe, local, largs, lout) == KILN_OK, "%s",
          kiln_ctx_error_message(lx));
    for (int r = 0; r < 2; r++)
        CHECK(memcmp(kiln_tensor_data(out[r]), kiln_tensor_data(lout[2 * g_rank + r]),
                     kiln_tensor_nbytes(out[r])) == 0,
              "result %d differs from the local communicator's", r);
    kiln_exe_release(lexe);
    kiln_comm_release(local);
    kiln_ctx_release(lx);
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

/* Rank 0 never runs the collective: the others time out, then refuse. */
static void a_rank_that_never_arrives(void) {
    kiln_ctx *cx = NULL;
    CHECK(kiln_ctx_create(NULL, &cx) == KILN_OK, "ctx");
    kiln_comm_options o = kiln_comm_options_default();
    o.num_replicas = g_size;
    o.timeout_ms = 300;
    kiln_comm *c = NULL;
    CHECK(kiln_comm_create_mpi(cx, &o, MPI_COMM_WORLD, &c) == KILN_OK, "%s",
          kiln_ctx_error_message(cx));
    CHECK(kiln_ctx_set_comm(cx, c, kiln_comm_self(c)) == KILN_OK, "%s", kiln_ctx_error_message(cx));
    if (g_rank != 0) {
        kiln_tensor *x = kiln_zeros(cx, KILN_F32, KILN_SHAPE(2));
        (void)kiln_all_reduce(cx, x, kiln_region_add(), NULL);
        CHECK(kiln_ctx_status(cx) == KILN_DEADLINE_EXCEEDED, "%s", kiln_ctx_error_message(cx));
        CHECK(strstr(kiln_ctx_error_message(cx), "waited 300 ms"), "%s",
              kiln_ctx_error_message(cx));
        kiln_ctx_clear_error(cx);
        (void)kiln_all_reduce(cx, x, kiln_region_add(), NULL);
        CHECK(kiln_ctx_status(cx) == KILN_ABORTED, "%s", kiln_ctx_error_message(cx));
        CHECK(strstr(kiln_ctx_error_message(cx), "cannot be used after an earlier failure"), "%s",
              kiln_ctx_error_message(cx));
    }
    kiln_comm_release(c);
    kiln_ctx_release(cx);
}

int main(void) {
    kiln_ctx *cx = NULL;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return 1;
    kiln_comm *comm = NULL;
    /* MPI is not initialized: kiln starts it (and finalizes it with the last communicator) */
    if (kiln_comm_create_mpi(cx, NULL, MPI_COMM_NULL, &comm) != KILN_OK) {
        fprintf(stderr, "mpi test: %s\n", kiln_ctx_error_message(cx));
        return 1;
    }
    g_rank = kiln_comm_self(comm);
    g_size = kiln_comm_num_replicas(comm);
    CHECK(g_size >= 2 && g_size % 2 == 0, "run on an even number of ranks, not %d", g_size);
    CHECK(strcmp(kiln_comm_kind(comm), "mpi") == 0, "%s", kiln_comm_kind(comm));
    for (int i = 0; i < g_size; i++)
        g_pairs_ids[i] = i ^ 1;
    CHECK(kiln_ctx_set_comm(cx, comm, g_rank) == KILN_OK, "%s", kiln_ctx_error_message(cx));
    CHECK(kiln_ctx_set_comm(cx, comm, (g_rank + 1) % g_size) == KILN_INVALID_ARGUMENT,
          "another rank's process");
    kiln_ctx_clear_error(cx);

    same_bits_as_local(cx, "cpu");
    same_bits_as_local(cx, "interpreter");
    a_large_all_reduce(cx);
    disagreeing_ranks_all_fail(cx);
    bad_arguments(cx);
    a_jax_shard_map_program();
    a_rank_that_never_arrives();
    MPI_Barrier(MPI_COMM_WORLD);

    kiln_comm_release(comm);
    kiln_ctx_set_comm(cx, NULL, 0); /* the last communicator: MPI is finalized */
    int finalized = 0;
    MPI_Finalized(&finalized);
    CHECK(finalized, "MPI is still running");
    kiln_comm *again = NULL;
    if (kiln_comm_create_mpi(cx, NULL, MPI_COMM_NULL, &again) != KILN_UNAVAILABLE ||
        !strstr(kiln_ctx_error_message(cx), "finalized")) {
        fprintf(stderr, "mpi test: rank %d: after finalize: %s\n", g_rank,
                kiln_ctx_error_message(cx));
        return 1;
    }
    kiln_ctx_release(cx);
    printf("mpi test: rank %d of %d: all checks passed\n", g_rank, g_size);
    return 0;
}
