/* SPDX-License-Identifier: Apache-2.0 */
/* A third backend, built outside src/ against the backend interface alone
 * (backend/backend.h): "toy" runs f32 programs of add, multiply and negate (and their
 * constants) with loops of its own, on one CPU device, and finishes every execution on a
 * worker thread of its own, completing the interface's event from there. It proves that a
 * backend needs nothing of kiln but the interface.
 *
 * "toy-device" is the same engine on two devices of its own ("ext:0", "ext:1") with memory
 * the host may not read in place: it allocates its buffers itself (counting them, freed
 * through the storage's recycle hook), and copies between them and the host on worker
 * threads, completing events, as a GPU backend would. */
#include "toy_backend.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct toy_op {
    kiln_op kind;
    int32_t in[2]; /* slots */
    int32_t out;
} toy_op;

typedef struct toy_exe {
    bool device_memory; /* compiled for toy-device: results in its own buffers */
    kiln_device device;
    int32_t n_args, n_slots, n_ops, n_results;
    int64_t *numel; /* per slot */
    float **consts; /* per slot: a constant's values (owned), or NULL */
    toy_op *ops;
    int32_t *results;   /* slots */
    kiln_shape *shapes; /* per result */
} toy_exe;

static bool toy_supports(kiln_op op, kiln_dtype dtype) {
    (void)dtype; /* refused at compile, by toy_compile, when not f32 */
    return op == KILN_OP_ADD || op == KILN_OP_MULTIPLY || op == KILN_OP_NEGATE ||
           op == KILN_OP_CONSTANT;
}

static void apply(kiln_op kind, const float *a, const float *b, float *r, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        r[i] = kind == KILN_OP_ADD ? a[i] + b[i] : kind == KILN_OP_MULTIPLY ? a[i] * b[i] : -a[i];
}

/* A tensor's bytes, wherever they are (the toy's device memory is the host's, really). */
static float *bytes_of(const kiln_tensor *t) {
    return (float *)((char *)t->storage->data + t->byte_offset);
}

static kiln_status toy_eval(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                            kiln_tensor *const *operands, int n_operands, kiln_tensor **results,
                            int n_results) {
    (void)attrs, (void)n_results;
    if (op == KILN_OP_CONSTANT || !toy_supports(op, kiln_tensor_dtype(operands[0])) || kiln_tensor_dtype(operands[0]) != KILN_F32)
        return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED, "toy: %s is not supported",
                                  kiln__op_get_info(op)->name);
    apply(op, bytes_of(operands[0]), n_operands > 1 ? bytes_of(operands[1]) : NULL,
          bytes_of(results[0]), kiln_tensor_numel(results[0]));
    return KILN_OK;
}

static int32_t toy_device_count(const kiln_ctx *cx) {
    (void)cx;
    return 1;
}

static const kiln__memory_space toy_memory[] = {
    {.kind = KILN__MEMORY_HOST, .name = "unpinned_host", .host_visible = true}};

static kiln_status toy_device_info(const kiln_ctx *cx, int32_t id, kiln__device_info *out) {
    (void)cx;
    if (id != 0) return KILN_INVALID_ARGUMENT;
    *out = (kiln__device_info){
        .device = KILN_DEVICE_CPU, .kind = "toy", .n_memories = 1, .memories = toy_memory};
    return KILN_OK;
}

/* ---- toy-device's memory and copies ---------------------------------------------------- */

atomic_int toy_live_buffers;

static void toy_buffer_free(kiln__storage *s) {
    atomic_fetch_sub(&toy_live_buffers, 1);
    kiln__storage_free(s);
}

static kiln_status toy_buffer_alloc(kiln_ctx *cx, kiln_device device, size_t nbytes,
                                    kiln__storage **out_storage) {
    *out_storage = NULL;
    if (device.type != KILN_DEVICE_TYPE_EXT || device.id < 0 || device.id > 1)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "toy: no device ext:%d",
                                  (int)device.id);
    kiln__storage *s = kiln__storage_new(cx, "toy", nbytes);
    if (!s) return kiln_ctx_status(cx);
    s->device = device;
    s->recycle = toy_buffer_free;
    atomic_fetch_add(&toy_live_buffers, 1);
    *out_storage = s;
    return KILN_OK;
}

/* A copy finished on a worker thread. */
typedef struct toy_copy {
    void *dst;
    const void *src;
    size_t n;
    kiln__event *done;
} toy_copy;

static void *copy_worker(void *arg) {
    toy_copy *c = arg;
    memcpy(c->dst, c->src, c->n);
    kiln__event_complete(c->done, KILN_OK, NULL);
    kiln__event_release(c->done);
    free(c);
    return NULL;
}

static kiln_status copy_async(kiln_ctx *cx, void *dst, const void *src, size_t n,
                              kiln__event **out_event) {
    *out_event = NULL;
    toy_copy *c = malloc(sizeof *c);
    if (!c) return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "toy: out of memory");
    *c = (toy_copy){.dst = dst, .src = src, .n = n, .done = kiln__event_new(cx, "toy")};
    if (!c->done) {
        free(c);
        return kiln_ctx_status(cx);
    }
    *out_event = kiln__event_retain(c->done);
    pthread_t t;
    if (pthread_create(&t, NULL, copy_worker, c) != 0) {
        memcpy(dst, src, n); /* no thread: copy now */
        kiln__event_complete(c->done, KILN_OK, NULL);
        kiln__event_release(c->done);
        free(c);
        return KILN_OK;
    }
    pthread_detach(t);
    return KILN_OK;
}

atomic_int toy_copies;

static kiln_status toy_copy_to_host(kiln_ctx *cx, const kiln__storage *src, size_t offset,
                                    void *dst, size_t nbytes, kiln__event **out_event) {
    atomic_fetch_add(&toy_copies, 1);
    return copy_async(cx, dst, (const char *)src->data + offset, nbytes, out_event);
}

static kiln_status toy_copy_from_host(kiln_ctx *cx, const void *src, kiln__storage *dst,
                                      size_t offset, size_t nbytes, kiln__event **out_event) {
    atomic_fetch_add(&toy_copies, 1);
    return copy_async(cx, (char *)dst->data + offset, src, nbytes, out_event);
}

static kiln_status toy_copy_buffer(kiln_ctx *cx, const kiln__storage *src, size_t src_offset,
                                   kiln__storage *dst, size_t dst_offset, size_t nbytes,
                                   kiln__event **out_event) {
    atomic_fetch_add(&toy_copies, 1);
    return copy_async(cx, (char *)dst->data + dst_offset, (const char *)src->data + src_offset,
                      nbytes, out_event);
}

static int32_t toy_device_count2(const kiln_ctx *cx) {
    (void)cx;
    return 2;
}

static const kiln__memory_space toy_device_memory[] = {
    {.kind = KILN__MEMORY_DEVICE, .name = "device", .host_visible = false}};

static kiln_status toy_device_info2(const kiln_ctx *cx, int32_t id, kiln__device_info *out) {
    (void)cx;
    if (id < 0 || id > 1) return KILN_INVALID_ARGUMENT;
    *out = (kiln__device_info){.device = {KILN_DEVICE_TYPE_EXT, id},
                               .kind = "toy accelerator",
                               .n_memories = 1,
                               .memories = toy_device_memory};
    return KILN_OK;
}

static void toy_release(kiln__executable *e) {
    toy_exe *x = (toy_exe *)e;
    if (!x) return;
    for (int32_t i = 0; x->consts && i < x->n_slots; i++)
        free(x->consts[i]);
    free(x->consts);
    free(x->numel);
    free(x->ops);
    free(x->results);
    free(x->shapes);
    free(x);
}

static kiln_status toy_compile(kiln_ctx *cx, const kiln__compile_request *req,
                               kiln__executable **out_exe) {
    const kiln__block *body = req->module->funcs[0]->body;
    toy_exe *x = calloc(1, sizeof *x);
    if (!x) return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "toy: out of memory");
    int32_t n = body->n_args, n_ops = 0;
    for (const kiln__ir_op *op = body->first; op; op = op->next) {
        if (!toy_supports(op->kind, op->results[0]->type->dtype) || op->n_regions || op->results[0]->type->dtype != KILN_F32) {
            free(x);
            return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                      "toy: cannot compile %s (only f32 add, multiply, negate)",
                                      kiln__op_get_info(op->kind)->name);
        }
        n += op->n_results;
        n_ops++;
    }
    for (int32_t i = 0; i < body->n_args; i++)
        if (body->args[i]->type->dtype != KILN_F32) {
            free(x);
            return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED, "toy: argument %d is not f32",
                                      (int)i);
        }
    x->device_memory = req->device.type == KILN_DEVICE_TYPE_EXT;
    x->device = req->device;
    x->n_args = body->n_args;
    x->n_slots = n;
    x->n_results = body->n_results;
    x->numel = calloc((size_t)n, sizeof *x->numel);
    x->consts = calloc((size_t)n, sizeof *x->consts);
    x->ops = calloc((size_t)n_ops + 1, sizeof *x->ops);
    x->results = calloc((size_t)body->n_results + 1, sizeof *x->results);
    x->shapes = calloc((size_t)body->n_results + 1, sizeof *x->shapes);
    if (!x->numel || !x->consts || !x->ops || !x->results || !x->shapes) {
        toy_release((kiln__executable *)x);
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "toy: out of memory");
    }
    int32_t slot = 0;
    for (int32_t i = 0; i < body->n_args; i++) {
        body->args[i]->id = slot;
        kiln_shape_numel(&body->args[i]->type->shape, &x->numel[slot++]);
    }
    for (const kiln__ir_op *op = body->first; op; op = op->next) {
        kiln__value *r = op->results[0];
        r->id = slot;
        kiln_shape_numel(&r->type->shape, &x->numel[slot]);
        if (op->kind == KILN_OP_CONSTANT) {
            const kiln_tensor *c = op->attrs->u.constant;
            size_t bytes = (size_t)x->numel[slot] * sizeof(float);
            if (!(x->consts[slot] = malloc(bytes ? bytes : 1))) {
                toy_release((kiln__executable *)x);
                return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "toy: out of memory");
            }
            if (bytes) memcpy(x->consts[slot], kiln_tensor_data(c), bytes);
        } else {
            x->ops[x->n_ops++] =
                (toy_op){.kind = op->kind,
                         .in = {op->operands[0]->id, op->n_operands > 1 ? op->operands[1]->id : 0},
                         .out = slot};
        }
        slot++;
    }
    for (int32_t r = 0; r < body->n_results; r++) {
        x->results[r] = body->results[r]->id;
        x->shapes[r] = body->results[r]->type->shape;
    }
    *out_exe = (kiln__executable *)x;
    return KILN_OK;
}

/* One execution, finished on a worker thread. */
typedef struct toy_run {
    const toy_exe *x;
    const float **in; /* per slot */
    float **out;      /* per result: where the result's values go */
    kiln__event *done;
} toy_run;

static void *toy_worker(void *arg) {
    toy_run *run = arg;
    const toy_exe *x = run->x;
    float **vals = calloc((size_t)x->n_slots, sizeof *vals);
    bool ok = vals != NULL;
    for (int32_t i = 0; ok && i < x->n_slots; i++) {
        if (i < x->n_args || x->consts[i]) {
            vals[i] = (float *)(i < x->n_args ? run->in[i] : x->consts[i]);
        } else if (!(vals[i] = malloc((size_t)x->numel[i] * sizeof(float) + 1))) {
            ok = false;
        }
    }
    for (int32_t k = 0; ok && k < x->n_ops; k++) {
        const toy_op *op = &x->ops[k];
        apply(op->kind, vals[op->in[0]], vals[op->in[1]], vals[op->out], x->numel[op->out]);
    }
    for (int32_t r = 0; ok && r < x->n_results; r++)
        memcpy(run->out[r], vals[x->results[r]], (size_t)x->numel[x->results[r]] * sizeof(float));
    for (int32_t i = x->n_args; vals && i < x->n_slots; i++)
        if (!x->consts[i]) free(vals[i]);
    free(vals);
    kiln__event_complete(run->done, ok ? KILN_OK : KILN_RESOURCE_EXHAUSTED,
                         ok ? NULL : "toy: out of memory on the worker");
    kiln__event_release(run->done);
    free(run->in);
    free(run->out);
    free(run);
    return NULL;
}

static kiln_status toy_execute(kiln_ctx *cx, const kiln__executable *e, const kiln__execute_args *a,
                               kiln__event **out_event) {
    const toy_exe *x = (const toy_exe *)e;
    *out_event = NULL;
    toy_run *run = calloc(1, sizeof *run);
    if (!run) return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "toy: out of memory");
    run->x = x;
    run->in = calloc((size_t)x->n_args + 1, sizeof *run->in);
    run->out = calloc((size_t)x->n_results + 1, sizeof *run->out);
    kiln_status s = run->in && run->out ? KILN_OK : KILN_RESOURCE_EXHAUSTED;
    for (int32_t i = 0; i < x->n_args && s == KILN_OK; i++)
        run->in[i] = bytes_of(a->args[i]);
    /* Results are made here, on the calling thread (scopes belong to it). */
    for (int32_t r = 0; r < x->n_results && s == KILN_OK; r++) {
        if (x->device_memory) {
            kiln__storage *st = NULL;
            size_t nbytes = (size_t)x->numel[x->results[r]] * sizeof(float);
            s = toy_buffer_alloc(cx, x->device, nbytes, &st);
            a->results[r] =
                s == KILN_OK ? kiln__tensor_new_on(cx, "toy", KILN_F32, x->shapes[r], st) : NULL;
        } else {
            a->results[r] = kiln__tensor_new(cx, "toy", KILN_F32, x->shapes[r]);
        }
        if (!a->results[r])
            s = KILN_RESOURCE_EXHAUSTED;
        else
            run->out[r] = bytes_of(a->results[r]);
    }
    if (s == KILN_OK && !(run->done = kiln__event_new(cx, "toy"))) s = KILN_RESOURCE_EXHAUSTED;
    pthread_t t;
    if (s == KILN_OK) {
        *out_event = kiln__event_retain(run->done); /* the caller's reference */
        *a->started = true;
        if (pthread_create(&t, NULL, toy_worker, run) != 0) {
            kiln__event_complete(run->done, KILN_UNAVAILABLE, "toy: no worker thread");
            kiln__event_release(run->done);
            run->done = NULL;
            s = KILN_OK; /* the event carries the failure */
        } else {
            pthread_detach(t);
            return KILN_OK;
        }
    }
    if (s != KILN_OK)
        for (int32_t r = 0; r < x->n_results; r++) {
            kiln_tensor_release(a->results[r]);
            a->results[r] = NULL;
        }
    free(run->in);
    free(run->out);
    free(run);
    return s;
}

const kiln__backend toy_backend = {
    .struct_size = sizeof(kiln__backend),
    .version = KILN_BACKEND_VERSION,
    .name = "toy",
    .device_type = KILN_DEVICE_TYPE_CPU,
    .device_count = toy_device_count,
    .device_info = toy_device_info,
    .supports_op = toy_supports,
    .eval_op = toy_eval,
    .compile = toy_compile,
    .execute = toy_execute,
    .release = toy_release,
};

static kiln_status no_hardware(char *reason, size_t cap) {
    strncpy(reason, "no toy accelerator in this machine", cap - 1);
    reason[cap - 1] = '\0';
    return KILN_UNAVAILABLE;
}

const kiln__backend toy_missing_backend = {
    .struct_size = sizeof(kiln__backend),
    .version = KILN_BACKEND_VERSION,
    .name = "toy-missing",
    .device_type = KILN_DEVICE_TYPE_CUDA,
    .available = no_hardware,
    .device_count = toy_device_count,
    .device_info = toy_device_info,
    .supports_op = toy_supports,
    .eval_op = toy_eval,
    .compile = toy_compile,
    .execute = toy_execute,
    .release = toy_release,
};

const kiln__backend toy_device_backend = {
    .struct_size = sizeof(kiln__backend),
    .version = KILN_BACKEND_VERSION,
    .name = "toy-device",
    .device_type = KILN_DEVICE_TYPE_EXT,
    .device_count = toy_device_count2,
    .device_info = toy_device_info2,
    .supports_op = toy_supports,
    .eval_op = toy_eval,
    .buffer_alloc = toy_buffer_alloc,
    .copy_to_host = toy_copy_to_host,
    .copy_from_host = toy_copy_from_host,
    .copy_buffer = toy_copy_buffer,
    .compile = toy_compile,
    .execute = toy_execute,
    .release = toy_release,
};
