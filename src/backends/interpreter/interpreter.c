/* SPDX-License-Identifier: Apache-2.0 */
/* The interpreter backend: the evaluator alone, op by op, no fusion, no folding, no buffer
 * plan. Every op runs through the CPU evaluator's reference kernel on fresh tensors, as
 * eager mode runs it, so compiled backends are tested against it (as XLA keeps an
 * interpreter platform).
 *
 * Compiling copies the entry function into a module of the executable's own, held by a
 * private ctx (a module belongs to its ctx, and an executable may outlive the compiling
 * one), and numbers each block's values (arguments, then op results). Executing walks the
 * copy: each activation of a block has an array of its values; a region that is not a
 * builtin becomes a callback that walks its block in an environment chain, so region
 * bodies see the values of the blocks around them. The copy is only read while running,
 * so one executable serves several threads at once. */
#include <string.h>

#include "backend/backend.h"
#include "backends/cpu/eval/eval.h"
#include "backends/interpreter/interpreter.h"
#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "ir/clone.h"
#include "ir/ir.h"

static const char compile_fn[] = "kiln_compile";
static const char call_fn[] = "kiln_exe_call";

typedef struct interp_exe {
    kiln_ctx *own_cx; /* owns the module */
    kiln_module *module;
    const kiln__block *entry;
    int32_t n_ops;
    kiln_allocator allocator;
} interp_exe;

/* ---- compile ----------------------------------------------------------------------------- */

/* Numbers the values of b and of its regions' blocks; counts b's ops (not constants). */
static int32_t number(const kiln__block *b) {
    int32_t id = 0, n_ops = 0;
    for (int32_t i = 0; i < b->n_args; i++)
        b->args[i]->id = id++;
    for (const kiln__ir_op *op = b->first; op; op = op->next) {
        for (int32_t r = 0; r < op->n_results; r++)
            op->results[r]->id = id++;
        for (int32_t i = 0; i < op->n_regions; i++)
            if (op->regions[i]) number(op->regions[i]);
        n_ops += op->kind != KILN_OP_CONSTANT;
    }
    return n_ops;
}

/* The values one activation of b needs. */
static int32_t slots(const kiln__block *b) {
    int32_t n = b->n_args;
    for (const kiln__ir_op *op = b->first; op; op = op->next)
        n += op->n_results;
    return n;
}

/* Copies m's entry function into x->module (in x->own_cx). */
static kiln_status copy_entry(interp_exe *x, const kiln_module *m) {
    kiln_ctx *pcx = x->own_cx;
    const kiln__block *src = m->funcs[0]->body;
    x->module = kiln__module_new(pcx, m->name ? m->name : "kiln");
    if (!x->module) return kiln_ctx_status(pcx);
    kiln__func *f =
        kiln__module_add_func(x->module, m->funcs[0]->name ? m->funcs[0]->name : "main", true);
    if (!f) return KILN_RESOURCE_EXHAUSTED;
    kiln__vmap map;
    kiln__vmap_init(&map, pcx);
    kiln_status s = KILN_OK;
    for (int32_t i = 0; i < src->n_args && s == KILN_OK; i++) {
        kiln__value *a = kiln__block_add_arg(x->module, f->body, *src->args[i]->type);
        if (!a || !kiln__vmap_put(&map, src->args[i], a)) s = KILN_RESOURCE_EXHAUSTED;
    }
    if (s == KILN_OK) s = kiln__clone_ops(x->module, f->body, src, &map);
    kiln__value *fixed[16], **results = fixed;
    size_t bytes = (size_t)src->n_results * sizeof *results;
    if (s == KILN_OK && src->n_results > 16 &&
        !(results = kiln__alloc(pcx, bytes, _Alignof(kiln__value *), compile_fn)))
        s = KILN_RESOURCE_EXHAUSTED;
    for (int32_t r = 0; r < src->n_results && s == KILN_OK; r++)
        if (!(results[r] = kiln__vmap_get(&map, src->results[r])))
            s = kiln_ctx_set_error(pcx, KILN_INTERNAL, "%s: a result outside the function",
                                   compile_fn);
    if (s == KILN_OK) s = kiln__block_set_results(x->module, f->body, results, src->n_results);
    if (results != fixed && results) kiln__free(pcx, results, bytes);
    kiln__vmap_free(&map);
    x->entry = f->body;
    return s;
}

static void interp_release(kiln__executable *e) {
    interp_exe *x = (interp_exe *)e;
    if (!x) return;
    kiln_module_release(x->module);
    kiln_ctx_release(x->own_cx);
    kiln_allocator a = x->allocator;
    kiln__raw_free(&a, x, sizeof *x);
}

static kiln_status interp_compile(kiln_ctx *cx, const kiln__compile_request *req,
                                  kiln__executable **out_exe) {
    *out_exe = NULL;
    for (int32_t r = 0; r < req->n_results && req->options->assert_nonallocating; r++)
        if (req->preserved[r] < 0)
            return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                                      "%s: assert_nonallocating: the interpreter backend makes "
                                      "result %d afresh (it reuses no donated buffer)",
                                      compile_fn, (int)r);
    interp_exe *x = kiln__calloc(cx, sizeof *x, _Alignof(interp_exe), compile_fn);
    if (!x) return KILN_RESOURCE_EXHAUSTED;
    x->allocator = cx->allocator;
    kiln_ctx_options o = kiln_ctx_options_default();
    o.allocator = &cx->allocator;
    o.log_level = KILN_LOG_OFF;
    o.cpu_devices = cx->cpu_devices;
    o.device = req->device;
    if (kiln_ctx_create(&o, &x->own_cx) != KILN_OK) {
        kiln__raw_free(&x->allocator, x, sizeof *x);
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", compile_fn);
    }
    kiln_status s = copy_entry(x, req->module);
    if (s != KILN_OK) {
        kiln_ctx_set_error(cx, s, "%s: interpreter: %s", compile_fn,
                           kiln_ctx_status(x->own_cx) != KILN_OK ? kiln_ctx_error_message(x->own_cx)
                                                                 : "out of memory");
        interp_release((kiln__executable *)x);
        return s;
    }
    x->n_ops = number(x->entry);
    *out_exe = (kiln__executable *)x;
    return KILN_OK;
}

/* ---- execute ----------------------------------------------------------------------------- */

/* The values of one activation of a block, and of the blocks around it. */
typedef struct env {
    const kiln__block *blk;
    kiln_tensor **vals;
    const struct env *parent;
} env;

/* What a bound region's `user` points to. */
typedef struct frame {
    const kiln__block *blk;
    const env *parent;
} frame;

static kiln_tensor *lookup(const env *e, const kiln__value *v) {
    const kiln__block *home = kiln__value_home(v);
    while (e && e->blk != home)
        e = e->parent;
    return e ? e->vals[v->id] : NULL;
}

static kiln_status run_block(kiln_ctx *cx, const kiln__block *b, const env *parent,
                             kiln_tensor *const *args, kiln_tensor **results);

/* A region that is not a builtin: runs its block; results are borrowed (they belong to
 * the scope kiln__region_call opened). */
static kiln_status region_fn(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                             void *user) {
    const frame *f = user;
    return run_block(cx, f->blk, f->parent, args, results);
}

#define FIXED 16

static const char *op_fn(const kiln__ir_op *op) {
    return op->attrs->fn ? op->attrs->fn : kiln__op_get_info(op->kind)->name;
}

/* Runs one op (not a constant) of the activation e. */
static kiln_status run_op(kiln_ctx *cx, const kiln__ir_op *op, env *e) {
    kiln_tensor *fixed_t[2 * FIXED];
    kiln_region fixed_r[FIXED];
    frame fixed_f[FIXED];
    int32_t n_in = op->n_operands, n_out = op->n_results, n_reg = op->n_regions;
    size_t tb = (size_t)(n_in + n_out) * sizeof(kiln_tensor *);
    size_t rb = (size_t)n_reg * sizeof(kiln_region), fb = (size_t)n_reg * sizeof(frame);
    kiln_tensor **ts = n_in + n_out <= 2 * FIXED
                           ? fixed_t
                           : kiln__alloc(cx, tb, _Alignof(kiln_tensor *), op_fn(op));
    kiln_region *rs =
        n_reg <= FIXED ? fixed_r : kiln__alloc(cx, rb, _Alignof(kiln_region), op_fn(op));
    frame *fs = n_reg <= FIXED ? fixed_f : kiln__alloc(cx, fb, _Alignof(frame), op_fn(op));
    kiln_status s = ts && rs && fs ? KILN_OK : KILN_RESOURCE_EXHAUSTED;
    kiln_tensor **in = ts, **out = ts ? ts + n_in : NULL;
    bool control = kiln__op_has(op->kind, KILN_OPF_CONTROL);
    for (int32_t i = 0; i < n_in && s == KILN_OK; i++)
        if (!(in[i] = lookup(e, op->operands[i])))
            s = kiln_ctx_set_error(cx, KILN_INTERNAL,
                                   "%s: internal: a value used outside its block", call_fn);
    for (int32_t r = 0; r < n_out && s == KILN_OK; r++) {
        out[r] = NULL;
        if (control) continue;
        const kiln__type *t = op->results[r]->type;
        if (!(out[r] = kiln__tensor_new(cx, op_fn(op), t->dtype, t->shape)))
            s = KILN_RESOURCE_EXHAUSTED;
    }
    if (s == KILN_OK) {
        kiln__attrs a;
        kiln__attrs_copy(&a, op->attrs, op->kind);
        for (int32_t i = 0; i < n_reg; i++) {
            const kiln_region *builtin = i < 2 ? op->attrs->region[i] : NULL;
            fs[i] = (frame){.blk = op->regions[i], .parent = e};
            rs[i] = builtin ? *builtin : (kiln_region){.fn = region_fn, .user = &fs[i]};
        }
        a.regions = n_reg ? rs : NULL;
        a.n_regions = n_reg;
        s = kiln__cpu_eval_op(cx, op->kind, &a, in, n_in, out, n_out);
        if (s != KILN_OK && kiln_ctx_status(cx) == KILN_OK)
            kiln_ctx_set_error(cx, s, "%s failed (%s)", op_fn(op), kiln_status_name(s));
    }
    for (int32_t r = 0; r < n_out && s == KILN_OK; r++)
        e->vals[op->results[r]->id] = out[r];
    if (ts && ts != fixed_t) kiln__free(cx, ts, tb);
    if (rs && rs != fixed_r) kiln__free(cx, rs, rb);
    if (fs && fs != fixed_f) kiln__free(cx, fs, fb);
    return s;
}

/* Runs block b on args; results[i] are borrowed from the innermost scope (or are
 * arguments and constants). */
static kiln_status run_block(kiln_ctx *cx, const kiln__block *b, const env *parent,
                             kiln_tensor *const *args, kiln_tensor **results) {
    int32_t n = slots(b);
    kiln_tensor *fixed[32];
    size_t bytes = (size_t)n * sizeof(kiln_tensor *);
    kiln_tensor **vals =
        n <= 32 ? fixed : kiln__alloc(cx, bytes, _Alignof(kiln_tensor *), "region");
    if (!vals) return KILN_RESOURCE_EXHAUSTED;
    for (int32_t i = 0; i < b->n_args; i++)
        vals[i] = args[i];
    env e = {.blk = b, .vals = vals, .parent = parent};
    kiln_status s = KILN_OK;
    for (const kiln__ir_op *op = b->first; op && s == KILN_OK; op = op->next) {
        if (op->kind == KILN_OP_CONSTANT)
            vals[op->results[0]->id] = (kiln_tensor *)op->attrs->u.constant;
        else
            s = run_op(cx, op, &e);
    }
    for (int32_t i = 0; i < b->n_results && s == KILN_OK; i++)
        results[i] = lookup(&e, b->results[i]);
    if (vals != fixed) kiln__free(cx, vals, bytes);
    return s;
}

static kiln_status interp_execute(kiln_ctx *cx, const kiln__executable *e,
                                  const kiln__execute_args *a, kiln__event **out_event) {
    const interp_exe *x = (const interp_exe *)e;
    *out_event = NULL;
    int32_t n = a->n_results;
    kiln_tensor *fixed[FIXED];
    size_t bytes = (size_t)n * sizeof(kiln_tensor *);
    kiln_tensor **held =
        n <= FIXED ? fixed : kiln__alloc(cx, bytes, _Alignof(kiln_tensor *), call_fn);
    if (!held) return KILN_RESOURCE_EXHAUSTED;
    kiln_status s = kiln_scope_begin(cx);
    if (s != KILN_OK) {
        if (held != fixed) kiln__free(cx, held, bytes);
        return s;
    }
    *a->started = true; /* never writes an argument, but may fail anywhere from here */
    s = run_block(cx, x->entry, NULL, a->args, held);
    for (int32_t r = 0; r < n; r++) {
        if (s == KILN_OK)
            kiln_tensor_retain(held[r]);
        else
            held[r] = NULL;
    }
    kiln_scope_end(cx);
    /* Every result is a tensor of its own in the caller's scope: a view of an argument or
     * a constant returned as it is, else of the value the ops made; a value returned
     * again, or a constant of another CPU device, is copied (onto cx's device, the
     * executable's now), as the compiled backends make them. */
    for (int32_t r = 0; r < n; r++) {
        if (s == KILN_OK) {
            kiln_tensor *v = held[r];
            const kiln__value *iv = x->entry->results[r];
            bool made = iv->def && iv->def->kind != KILN_OP_CONSTANT, again = false;
            for (int32_t q = 0; q < r && made && !again; q++)
                again = held[q] == v;
            kiln_device d = v->storage->device;
            bool here = d.type == cx->device.type && d.id == cx->device.id && !again;
            kiln_tensor *o = here ? kiln__tensor_view(cx, call_fn, v, v->dtype, v->shape)
                                  : kiln__tensor_new(cx, call_fn, v->dtype, v->shape);
            if (o && !here && v->nbytes)
                memcpy(kiln__tensor_mutable_data(o), kiln_tensor_data(v), v->nbytes);
            if (!(a->results[r] = o)) s = KILN_RESOURCE_EXHAUSTED;
        }
        kiln_tensor_release(held[r]);
    }
    if (s != KILN_OK)
        for (int32_t r = 0; r < n; r++) {
            kiln_tensor_release(a->results[r]);
            a->results[r] = NULL;
        }
    if (held != fixed) kiln__free(cx, held, bytes);
    return s;
}

/* ---- describing ------------------------------------------------------------------------- */

static const kiln__type *ir_op_type(const void *holder, int32_t i) {
    const kiln__ir_op *op = holder;
    return i < op->n_operands ? op->operands[i]->type : op->results[i - op->n_operands]->type;
}

/* The block's ops' costs; a loop whose trip count is known adds its regions that often. */
static kiln__cost block_cost(const kiln__block *b) {
    kiln__cost total = {0};
    for (const kiln__ir_op *op = b->first; op; op = op->next) {
        if (op->kind == KILN_OP_CONSTANT) continue;
        kiln__cost c = kiln__op_cost(op->kind, op->attrs, op->n_operands, op->n_results,
                                     ir_op_type, op);
        int64_t trip = op->kind == KILN_OP_WHILE ? kiln__loop_trip_count(op->attrs) : -1;
        for (int32_t r = 0; trip > 0 && r < op->n_regions; r++)
            if (op->regions[r]) {
                kiln__cost body = block_cost(op->regions[r]);
                kiln__cost_add_times(&c, &body, trip);
            }
        kiln__cost_add(&total, &c);
    }
    return total;
}

static void interp_info(const kiln__executable *e, kiln__executable_info *out) {
    const interp_exe *x = (const interp_exe *)e;
    *out = (kiln__executable_info){.n_ops = x->n_ops, .cost = block_cost(x->entry)};
}

static void interp_print(kiln__strbuf *sb, const kiln__executable *e) {
    const interp_exe *x = (const interp_exe *)e;
    kiln__strbuf_printf(sb,
                        "executable @%s (interpreter): %d args, %d results, %d ops, each run on "
                        "its own by the evaluator\n",
                        x->module->name ? x->module->name : "kiln", (int)x->entry->n_args,
                        (int)x->entry->n_results, (int)x->n_ops);
    char *text = kiln_module_to_string(sb->cx, x->module);
    if (text) {
        kiln__strbuf_puts(sb, text);
        kiln_string_free(sb->cx, text);
    }
}

static const kiln__backend interpreter = {
    .struct_size = sizeof(kiln__backend),
    .version = KILN_BACKEND_VERSION,
    .name = "interpreter",
    .device_type = KILN_DEVICE_TYPE_CPU,
    .device_count = kiln__cpu_device_count,
    .device_info = kiln__cpu_device_info,
    .supports_op = kiln__cpu_supports_op,
    .eval_op = kiln__cpu_eager_op,
    .compile = interp_compile,
    .execute = interp_execute,
    .release = interp_release,
    .info = interp_info,
    .print = interp_print,
};

const kiln__backend *kiln__interpreter_backend(void) { return &interpreter; }
