/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-mpi-bench: kiln's all_reduce on the MPI communicator against MPI_Allreduce of the
 * same buffer, in the same run (run under mpirun; `make bench` starts it on 2 ranks).
 *
 *   mpirun -np 2 kiln-mpi-bench [--quick] [--json PATH]
 *
 * For f32 buffers of 1, 16 and 256 MiB: the median time of a compiled all_reduce (sum)
 * call and of MPI_Allreduce(MPI_SUM) over the ranks, as bus bandwidth (2 (n-1)/n x bytes
 * over time, the traffic an optimal all-reduce moves per rank, as nccl-tests reports it),
 * and how many elements' bits differ between the two (kiln folds in rank order; MPI in the
 * order of its algorithm). Rank 0 prints a table and, with --json, writes the figures. */
#define _POSIX_C_SOURCE 200809L
#include <kiln/kiln.h>
#include <kiln/mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static kiln_status sum_fn(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                          void *user) {
    (void)user;
    results[0] = kiln_all_reduce(cx, args[0], kiln_region_add(), NULL);
    return kiln_ctx_status(cx);
}

static int die(kiln_ctx *cx, const char *what) {
    fprintf(stderr, "kiln-mpi-bench: %s: %s\n", what, kiln_ctx_error_message(cx));
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

int main(int argc, char **argv) {
    bool quick = false;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else {
            fprintf(stderr, "usage: mpirun -np N kiln-mpi-bench [--quick] [--json PATH]\n");
            return 2;
        }
    }
    kiln_ctx *cx = NULL;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return 1;
    kiln_comm *comm = NULL;
    if (kiln_comm_create_mpi(cx, NULL, MPI_COMM_NULL, &comm) != KILN_OK) return die(cx, "MPI");
    int rank = kiln_comm_self(comm), n = kiln_comm_num_replicas(comm);
    if (kiln_ctx_set_comm(cx, comm, rank) != KILN_OK) return die(cx, "binding");
    const int64_t mib[] = {1, 16, 256};
    int n_sizes = quick ? 2 : 3;
    FILE *out = rank == 0 && json ? fopen(json, "w") : NULL;
    if (out) fprintf(out, "{\"ranks\": %d, \"cases\": [", n);
    if (rank == 0)
        printf("all_reduce (sum) of f32 across %d ranks: kiln against MPI_Allreduce, medians\n"
               "%8s %12s %12s %14s %14s %8s %14s\n",
               n, "MiB", "kiln", "MPI", "kiln GB/s", "MPI GB/s", "kiln/MPI", "bits differ");
    for (int s = 0; s < n_sizes; s++) {
        int64_t count = mib[s] * 1024 * 1024 / 4;
        size_t bytes = (size_t)count * 4;
        float *x = malloc(bytes), *mpi_out = malloc(bytes);
        if (!x || !mpi_out) return die(cx, "memory");
        uint32_t h = 0x9e3779b9u * (uint32_t)(rank + 1);
        for (int64_t i = 0; i < count; i++) {
            h ^= h << 13, h ^= h >> 17, h ^= h << 5;
            x[i] = ((float)(h % 20001) / 10000.0f - 1.0f) * (i % 3 ? 1.0f : 1e4f);
        }
        kiln_region r = {.fn = sum_fn};
        kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(count)};
        kiln_module *m = NULL;
        kiln_exe *exe = NULL;
        if (kiln_lower(cx, &r, &a, 1, 1, NULL, &m) != KILN_OK ||
            kiln_compile(cx, m, NULL, &exe) != KILN_OK)
            return die(cx, "compiling");
        kiln_module_release(m);
        kiln_tensor *arg = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(count), x, bytes);
        int reps = mib[s] >= 256 ? (quick ? 3 : 7) : mib[s] >= 16 ? 15 : 50;
        double tk[64], tm[64];
        int64_t differ = 0;
        for (int k = -1; k < reps; k++) { /* one warm-up call each */
            kiln_scope_begin(cx);
            kiln_tensor *res = NULL;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now();
            if (kiln_exe_call(cx, exe, &arg, &res) != KILN_OK) return die(cx, "all_reduce");
            double t1 = now();
            MPI_Barrier(MPI_COMM_WORLD);
            double t2 = now();
            MPI_Allreduce(x, mpi_out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t3 = now();
            if (k >= 0) tk[k] = t1 - t0, tm[k] = t3 - t2;
            if (k == reps - 1) {
                const float *kr = kiln_tensor_data(res);
                for (int64_t i = 0; i < count; i++)
                    differ += memcmp(&kr[i], &mpi_out[i], 4) != 0;
            }
            kiln_scope_end(cx);
        }
        /* the slowest rank's time is the collective's */
        double mk = median(tk, reps), mm = median(tm, reps), gk, gm;
        MPI_Allreduce(&mk, &gk, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&mm, &gm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        double bus = 2.0 * (n - 1) / n * (double)bytes / 1e9;
        if (rank == 0) {
            printf("%8lld %10.3f ms %10.3f ms %14.2f %14.2f %8.2f %8lld of %lld\n",
                   (long long)mib[s], 1e3 * gk, 1e3 * gm, bus / gk, bus / gm, gk / gm,
                   (long long)differ, (long long)count);
            if (out)
                fprintf(out,
                        "%s{\"mib\": %lld, \"kiln_s\": %.9g, \"mpi_s\": %.9g, \"kiln_bus_gbps\": "
                        "%.4g, \"mpi_bus_gbps\": %.4g, \"bits_differ\": %lld, \"count\": %lld}",
                        s ? ", " : "", (long long)mib[s], gk, gm, bus / gk, bus / gm,
                        (long long)differ, (long long)count);
        }
        kiln_tensor_release(arg);
        kiln_exe_release(exe);
        free(x);
        free(mpi_out);
        kiln_ctx_clear_error(cx);
    }
    if (out) {
        fprintf(out, "]}\n");
        fclose(out);
    }
    kiln_comm_release(comm);
    kiln_ctx_release(cx); /* the last communicator: MPI is finalized */
    return 0;
}
