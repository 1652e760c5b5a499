/* SPDX-License-Identifier: Apache-2.0 */
/* One executable called from several threads at once, each thread with its own ctx, and
 * every result compared with the function run eagerly on that thread. Shared by the
 * Criterion suite (tests/runtime/test_threads.c) and the ThreadSanitizer program
 * (tests/tsan/threads_tsan.c), which cannot use Criterion. */
#include "threads_scenarios.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define THREADS 8
#define CALLS 150

static kiln_status emlx_step(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *acc = in[0];
    for (int i = 1; i <= 10; i++)
        acc = kiln_add(cx, kiln_multiply(cx, kiln_scalar(cx, i, KILN_F32), acc), in[1]);
    out[0] = acc;
    out[1] = in[1]; /* returned unchanged: a view of the caller's tensor */
    return kiln_ctx_status(cx);
}

static kiln_status count_cond(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_compare(cx, a[0], kiln_scalar(cx, 3, KILN_I32), KILN_CMP_LT, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}

static kiln_status max_plus(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    kiln_tensor *bias = u;
    r[0] = kiln_maximum(cx, a[0], kiln_add(cx, a[1], bias));
    return kiln_ctx_status(cx);
}

/* A loop whose body runs a custom reduce whose region uses a value of the function. */
typedef struct loop_env {
    kiln_tensor *y, *bias;
} loop_env;

static kiln_status body(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    loop_env *e = u;
    kiln_region region = {max_plus, e->bias};
    kiln_tensor *lowest = kiln_scalar(cx, -1e30, KILN_F32), *m = NULL;
    kiln_reduce(cx, &a[1], &lowest, 1, KILN_DIMS(1), &region, &m);
    r[0] = kiln_add(cx, a[0], kiln_scalar(cx, 1, KILN_I32));
    r[1] = kiln_subtract(cx, kiln_multiply(cx, a[1], e->y),
                         kiln_broadcast_in_dim(cx, m, KILN_SHAPE(4, 5), KILN_DIMS(0)));
    return kiln_ctx_status(cx);
}

static kiln_status looped(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    loop_env e = {.y = in[1],
                  .bias = kiln_reshape(
                      cx, kiln_slice(cx, in[1], KILN_DIMS(0, 0), KILN_DIMS(1, 1), KILN_DIMS_NONE),
                      KILN_SHAPE_SCALAR)};
    kiln_region cond = {count_cond, NULL}, b = {body, &e};
    kiln_tensor *init[2] = {kiln_scalar(cx, 0, KILN_I32), in[0]}, *w[2];
    if (kiln_while(cx, init, 2, &cond, &b, w) != KILN_OK) return kiln_ctx_status(cx);
    out[0] = w[1];
    out[1] = kiln_tanh(cx, w[1]);
    return kiln_ctx_status(cx);
}

typedef struct job {
    kiln_exe *exe;
    int device, n_devices; /* the thread's logical CPU device, of n_devices */
    kiln_region fn;
    kiln_shape shape;
    kiln_tensor *shared_y; /* made on the main thread, read by every thread */
    bool donate;
    int id, calls, done;
    char error[512];
} job;

static kiln_tensor *values(kiln_ctx *cx, kiln_shape shape, double start, double step) {
    kiln_tensor *t = kiln_iota(cx, KILN_F32, shape, shape.rank - 1);
    return kiln_add(cx, kiln_multiply(cx, t, kiln_scalar(cx, step, KILN_F32)),
                    kiln_scalar(cx, start, KILN_F32));
}

static bool same(const kiln_tensor *a, const kiln_tensor *b) {
    return a && b && kiln_tensor_nbytes(a) == kiln_tensor_nbytes(b) &&
           memcmp(kiln_tensor_data(a), kiln_tensor_data(b), kiln_tensor_nbytes(a)) == 0;
}

static void *worker(void *p) {
    job *j = p;
    kiln_ctx *cx = NULL;
    kiln_ctx_options o = kiln_ctx_options_default();
    o.cpu_devices = j->n_devices;
    o.device = (kiln_device){KILN_DEVICE_TYPE_CPU, j->device};
    if (kiln_ctx_create(&o, &cx) != KILN_OK) {
        snprintf(j->error, sizeof j->error, "thread %d: no ctx", j->id);
        return NULL;
    }
    for (int i = 0; i < j->calls && !j->error[0]; i++) {
        kiln_scope_begin(cx);
        double start = 0.01 * (j->id * 1000 + i);
        kiln_tensor *x = values(cx, j->shape, start, 0.125), *want[2] = {NULL, NULL};
        kiln_tensor *y = j->shared_y;
        j->fn.fn(cx, (kiln_tensor *[]){x, y}, want, j->fn.user);
        kiln_tensor *r[2] = {NULL, NULL};
        kiln_status s = kiln_exe_call(cx, j->exe, (kiln_tensor *[]){x, y}, r);
        if (s != KILN_OK)
            snprintf(j->error, sizeof j->error, "thread %d call %d: %s", j->id, i,
                     kiln_ctx_error_message(cx));
        else if (!same(r[0], want[0]) || !same(r[1], want[1]))
            snprintf(j->error, sizeof j->error, "thread %d call %d: results differ", j->id, i);
        else if (kiln_tensor_device(r[0]).id != j->device)
            snprintf(j->error, sizeof j->error, "thread %d call %d: a result on cpu:%d, not cpu:%d",
                     j->id, i, (int)kiln_tensor_device(r[0]).id, j->device);
        else if (j->donate && kiln_tensor_data(x))
            snprintf(j->error, sizeof j->error, "thread %d call %d: x not donated", j->id, i);
        else
            j->done++;
        kiln_scope_end(cx);
    }
    kiln_ctx_release(cx);
    kiln_exe_release(j->exe); /* each thread holds a reference; the last one frees */
    return NULL;
}

/* Compiles f with `backend` (NULL: the default) once for each of n_devices logical CPU
 * devices, calls it from THREADS threads CALLS times each (thread t on device t %
 * n_devices, with a ctx of its own there; every result compared with f run eagerly on that
 * thread) and checks the shared argument stayed as it was. */
static bool run_threads(kiln_region_fn f, kiln_shape shape, bool donate, const char *backend,
                        int n_devices, char *err, size_t cap) {
    kiln_ctx *cx = NULL;
    kiln_ctx_options co = kiln_ctx_options_default();
    co.cpu_devices = n_devices;
    if (kiln_ctx_create(&co, &cx) != KILN_OK) return snprintf(err, cap, "no ctx"), false;
    kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = shape, .donate = donate},
                             {.dtype = KILN_F32, .shape = shape}};
    kiln_region fn = {f, NULL};
    kiln_exe *exes[2] = {NULL, NULL};
    kiln_tensor *ys[2] = {NULL, NULL};
    kiln_tensor *y = values(cx, shape, -0.5, 0.0625);
    for (int d = 0; d < n_devices; d++) {
        kiln_module *m = NULL;
        kiln_compile_options o = kiln_compile_options_default();
        o.backend = backend;
        o.device = (kiln_device){KILN_DEVICE_TYPE_CPU, d};
        ys[d] = kiln_tensor_to_device(cx, y, o.device);
        if (!ys[d] || kiln_lower(cx, &fn, args, 2, 2, NULL, &m) != KILN_OK ||
            kiln_compile(cx, m, &o, &exes[d]) != KILN_OK) {
            snprintf(err, cap, "compile for cpu:%d: %s", d, kiln_ctx_error_message(cx));
            kiln_module_release(m);
            kiln_exe_release(exes[0]);
            kiln_ctx_release(cx);
            return false;
        }
        kiln_module_release(m);
    }
    job jobs[THREADS];
    pthread_t threads[THREADS];
    int started = 0;
    for (int t = 0; t < THREADS; t++) {
        int d = t % n_devices;
        jobs[t] = (job){.exe = kiln_exe_retain(exes[d]),
                        .device = d,
                        .n_devices = n_devices,
                        .fn = fn,
                        .shape = shape,
                        .shared_y = ys[d],
                        .donate = donate,
                        .id = t,
                        .calls = CALLS};
        if (pthread_create(&threads[t], NULL, worker, &jobs[t]) != 0) {
            kiln_exe_release(jobs[t].exe);
            snprintf(err, cap, "thread %d could not start", t);
            break;
        }
        started++;
    }
    for (int d = 0; d < n_devices; d++)
        kiln_exe_release(exes[d]); /* the threads keep them alive */
    bool ok = started == THREADS;
    for (int t = 0; t < started; t++) {
        pthread_join(threads[t], NULL);
        if (ok && jobs[t].error[0]) {
            snprintf(err, cap, "%s", jobs[t].error);
            ok = false;
        } else if (ok && jobs[t].done != CALLS) {
            snprintf(err, cap, "thread %d made %d of %d calls", t, jobs[t].done, CALLS);
            ok = false;
        }
    }
    for (int d = 0; d < n_devices && ok; d++)
        if (kiln_tensor_item(cx, ys[d], 0) != -0.5) {
            snprintf(err, cap, "the shared argument was written"); /* shared, never written */
            ok = false;
        }
    if (ok && kiln_ctx_status(cx) != KILN_OK) {
        snprintf(err, cap, "%s", kiln_ctx_error_message(cx));
        ok = false;
    }
    kiln_ctx_release(cx);
    return ok;
}

/* Tensors released on other threads while their ctx makes more and then goes: their
 * records and data go back to the ctx's buffer cache (a spin lock guards it), and the
 * cache itself goes with the last block, whichever thread gives it back. */
#define RELEASERS 4
#define RELEASED 400

typedef struct {
    kiln_tensor *ts[RELEASED];
    int n;
    double sum; /* of every tensor's last element, read before releasing it */
} releaser;

static void *release_all(void *user) {
    releaser *r = user;
    for (int i = 0; i < r->n; i++) {
        const float *v = kiln_tensor_data(r->ts[i]); /* readable on any thread */
        r->sum += v[kiln_tensor_numel(r->ts[i]) - 1];
        kiln_tensor_release(r->ts[i]);
    }
    return NULL;
}

static bool release_elsewhere(char *err, size_t cap) {
    kiln_ctx *cx = NULL;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return snprintf(err, cap, "no ctx"), false;
    static releaser rs[RELEASERS];
    double want[RELEASERS] = {0};
    kiln_scope_begin(cx);
    for (int t = 0; t < RELEASERS; t++) {
        rs[t].n = RELEASED;
        rs[t].sum = 0;
        for (int i = 0; i < RELEASED; i++) {
            /* small ones (record and data in one block) and big ones (data apart) */
            int64_t n = i % 3 == 2 ? 5000 + i : 1 + i % 50;
            rs[t].ts[i] = kiln_tensor_retain(kiln_full(cx, KILN_F32, KILN_SHAPE(n), t + i));
            want[t] += t + i;
        }
    }
    kiln_scope_end(cx); /* the retained references are the last */
    pthread_t threads[RELEASERS];
    int started = 0;
    for (int t = 0; t < RELEASERS; t++)
        if (pthread_create(&threads[t], NULL, release_all, &rs[t]) == 0) started++;
    bool ok = started == RELEASERS;
    if (!ok) snprintf(err, cap, "only %d of %d threads started", started, RELEASERS);
    /* Meanwhile this thread takes blocks from the same cache, then releases the ctx. */
    for (int k = 0; k < 200 && ok; k++) {
        kiln_scope_begin(cx);
        kiln_tensor *x = kiln_full(cx, KILN_F32, KILN_SHAPE(1 + k % 300), 2);
        kiln_tensor *y = kiln_add(cx, kiln_multiply(cx, x, x), kiln_scalar(cx, 1, KILN_F32));
        if (kiln_tensor_item(cx, y, 0) != 5) {
            snprintf(err, cap, "step %d: %s", k, kiln_ctx_error_message(cx));
            ok = false;
        }
        kiln_scope_end(cx);
    }
    kiln_ctx_release(cx);
    for (int t = 0; t < started; t++) {
        pthread_join(threads[t], NULL);
        if (ok && rs[t].sum != want[t]) {
            snprintf(err, cap, "thread %d read %g; expected %g", t, rs[t].sum, want[t]);
            ok = false;
        }
    }
    if (!ok)
        for (int t = started; t < RELEASERS; t++)
            release_all(&rs[t]);
    return ok;
}

/* Convolutions compiled and called at once on several threads, three geometries shared
 * among them: compiling queues each geometry's oneDNN primitives for the builder thread,
 * and the first calls race it (a call builds a geometry still queued itself, and waits for
 * one being built). Every result must equal the same convolution run eagerly. */
#define CONV_THREADS 6
#define CONV_CALLS 12

static kiln_status conv_fn(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_nn_conv2d_params p = {.padding = {1, 1}};
    out[0] = kiln_nn_conv2d(cx, in[0], in[1], NULL, &p);
    return kiln_ctx_status(cx);
}

typedef struct conv_job {
    int id;
    char error[256];
} conv_job;

static void *conv_worker(void *p) {
    conv_job *j = p;
    kiln_ctx *cx = NULL;
    /* One thread for kernels: each calling thread would start an OpenMP team of its own
     * for oneDNN's parallel loops, and GNU OpenMP, not built for ThreadSanitizer, then
     * shows as races in its thread-local storage. The cache and its builder are what run
     * concurrently here. */
    kiln_ctx_options o = kiln_ctx_options_default();
    o.num_threads = 1;
    if (kiln_ctx_create(&o, &cx) != KILN_OK) {
        snprintf(j->error, sizeof j->error, "thread %d: no ctx", j->id);
        return NULL;
    }
    int64_t hw = 16 + 2 * (j->id % 3); /* 8 * 16 * 16 * 16 * 9 multiply-adds and more */
    kiln_arg_spec args[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(1, 8, hw, hw)},
                             {.dtype = KILN_F32, .shape = KILN_SHAPE(16, 8, 3, 3)}};
    kiln_region fn = {conv_fn, NULL};
    kiln_module *m = NULL;
    kiln_exe *exe = NULL;
    if (kiln_lower(cx, &fn, args, 2, 1, NULL, &m) != KILN_OK ||
        kiln_compile(cx, m, NULL, &exe) != KILN_OK)
        snprintf(j->error, sizeof j->error, "thread %d: compile: %s", j->id,
                 kiln_ctx_error_message(cx));
    kiln_module_release(m);
    for (int i = 0; i < CONV_CALLS && exe && !j->error[0]; i++) {
        kiln_scope_begin(cx);
        kiln_tensor *x = values(cx, args[0].shape, 0.01 * (j->id * 100 + i), 0.03125);
        kiln_tensor *w = values(cx, args[1].shape, -0.25, 0.00390625);
        kiln_tensor *want = NULL, *got = NULL;
        conv_fn(cx, (kiln_tensor *[]){x, w}, &want, NULL);
        if (kiln_exe_call(cx, exe, (kiln_tensor *[]){x, w}, &got) != KILN_OK)
            snprintf(j->error, sizeof j->error, "thread %d call %d: %s", j->id, i,
                     kiln_ctx_error_message(cx));
        else if (!same(got, want))
            snprintf(j->error, sizeof j->error, "thread %d call %d: results differ", j->id, i);
        kiln_scope_end(cx);
    }
    kiln_exe_release(exe);
    kiln_ctx_release(cx);
    return NULL;
}

static bool convolutions_at_once(char *err, size_t cap) {
    conv_job jobs[CONV_THREADS];
    pthread_t threads[CONV_THREADS];
    int started = 0;
    for (int t = 0; t < CONV_THREADS; t++) {
        jobs[t] = (conv_job){.id = t};
        if (pthread_create(&threads[t], NULL, conv_worker, &jobs[t]) != 0) break;
        started++;
    }
    bool ok = started == CONV_THREADS;
    if (!ok) snprintf(err, cap, "only %d of %d threads started", started, CONV_THREADS);
    for (int t = 0; t < started; t++) {
        pthread_join(threads[t], NULL);
        if (ok && jobs[t].error[0]) {
            snprintf(err, cap, "%s", jobs[t].error);
            ok = false;
        }
    }
    return ok;
}

const char *const kiln_test_thread_scenarios[KILN_TEST_N_THREAD_SCENARIOS] = {
    "one_executable_from_many_threads",
    "regions_interpreted_on_many_threads",
    "donation_on_many_threads",
    "executables_on_two_devices_at_once",
    "interpreter_backend_on_many_threads",
    "tensors_released_on_other_threads_as_the_ctx_goes",
    "convolutions_compiled_and_called_on_many_threads"};

bool kiln_test_thread_scenario(int which, char *err, size_t cap) {
    err[0] = 0;
    switch (which) {
    case 0: return run_threads(emlx_step, KILN_SHAPE(10, 10), false, NULL, 1, err, cap);
    case 1: return run_threads(looped, KILN_SHAPE(4, 5), false, NULL, 1, err, cap);
    case 2:
        return run_threads(emlx_step, KILN_SHAPE(10, 10), true, NULL, 1, err, cap) &&
               run_threads(looped, KILN_SHAPE(4, 5), true, NULL, 1, err, cap);
    case 3:
        return run_threads(emlx_step, KILN_SHAPE(10, 10), true, NULL, 2, err, cap) &&
               run_threads(looped, KILN_SHAPE(4, 5), false, NULL, 2, err, cap);
    case 4:
        return run_threads(emlx_step, KILN_SHAPE(10, 10), true, "interpreter", 2, err, cap) &&
               run_threads(looped, KILN_SHAPE(4, 5), false, "interpreter", 1, err, cap);
    case 5: return release_elsewhere(err, cap);
    case 6: return convolutions_at_once(err, cap);
    default: snprintf(err, cap, "no scenario %d", which); return false;
    }
}
