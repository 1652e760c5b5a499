/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_compile: check the options, pick the backend for the target device, verify the
 * module, run the backend-neutral passes (canonicalize, cse, unroll, licm, dce), decide the calling
 * convention (donation, preserved results, aliases), and let the backend build its
 * executable; kiln_exe's lifetime, info and printing. */
#include <stdio.h>
#include <string.h>

#include "backend/registry.h"
#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "base/strbuf.h"
#include "ir/ir.h"
#include "kiln/custom_call.h"
#include "ops/custom_call.h"
#include "passes/passes.h"
#include "runtime/exe.h"

static const char compile_fn[] = "kiln_compile";

/* Whether backend be runs op: asked for its kind (KILN_DTYPE_COUNT), then for each element
 * type among its operands and results; the refused one, or KILN_DTYPE_COUNT for the kind,
 * into *refused. */
static bool runs_op(const kiln__backend *be, const kiln__ir_op *op, kiln_dtype *refused) {
    kiln_dtype last = KILN_DTYPE_COUNT;
    if (!be->supports_op(op->kind, KILN_DTYPE_COUNT) ||
        (op->kind == KILN_OP_CUSTOM_CALL &&
         !kiln_custom_call_is_registered(kiln__custom_call_target(op->attrs)))) {
        *refused = KILN_DTYPE_COUNT;
        return false;
    }
    for (int32_t i = 0; i < op->n_operands + op->n_results; i++) {
        const kiln__value *v =
            i < op->n_operands ? op->operands[i] : op->results[i - op->n_operands];
        kiln_dtype d = v->type->dtype;
        if (d == last) continue; /* the common case: one dtype throughout, asked once */
        if (!be->supports_op(op->kind, d)) {
            *refused = d;
            return false;
        }
        last = d;
    }
    return true;
}

/* The first op of block b (its regions' ops after it, in order) that backend be cannot run,
 * with where it is written into where[used..cap-1] ("@main, op 3, region 0, op 1", each
 * position counted from 0 in its block); NULL when be runs them all. */
static const kiln__ir_op *unsupported(const kiln__backend *be, const kiln__block *b, char *where,
                                      size_t cap, size_t used, kiln_dtype *refused) {
    int32_t position = 0;
    for (const kiln__ir_op *op = b->first; op; op = op->next, position++) {
        int n = snprintf(where + used, cap - used, ", op %d", (int)position);
        size_t at = used + (n > 0 && (size_t)n < cap - used ? (size_t)n : 0);
        if (!runs_op(be, op, refused)) return op;
        for (int32_t r = 0; r < op->n_regions; r++) {
            int k = snprintf(where + at, cap - at, ", region %d", (int)r);
            size_t in = at + (k > 0 && (size_t)k < cap - at ? (size_t)k : 0);
            const kiln__ir_op *bad = unsupported(be, op->regions[r], where, cap, in, refused);
            if (bad) return bad;
        }
    }
    where[used] = '\0';
    return NULL;
}

/* Whether backend be runs every op of block b and of its regions: the walk of a compile that
 * succeeds, so it formats nothing (unsupported, which writes where an op is, runs only when
 * an op is refused). */
static bool runs_all(const kiln__backend *be, const kiln__block *b) {
    kiln_dtype refused;
    for (const kiln__ir_op *op = b->first; op; op = op->next) {
        if (!runs_op(be, op, &refused)) return false;
        for (int32_t r = 0; r < op->n_regions; r++)
            if (!runs_all(be, op->regions[r])) return false;
    }
    return true;
}

/* UNIMPLEMENTED naming the first op of m that backend be cannot run, its place and the
 * backend, before the backend's own compile is asked; KILN_OK when it runs them all. */
/* Tuples have no run-time form: the entry takes and gives tensors and tokens (the tuples
 * of its body are taken apart by kiln__pass_untuple, those left are check_ops'). */
static kiln_status check_entry(kiln_ctx *cx, const kiln_module *m) {
    const kiln__func *f = m->funcs[0];
    for (int32_t i = 0; i < f->body->n_args + f->body->n_results; i++) {
        bool arg = i < f->body->n_args;
        const kiln__value *v = arg ? f->body->args[i] : f->body->results[i - f->body->n_args];
        if (kiln__is_tuple(v->type))
            return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                      "%s: @%s %s %d is a tuple; a program takes and gives "
                                      "tensors and tokens (pass the tuple's elements)",
                                      compile_fn, f->name, arg ? "argument" : "result",
                                      (int)(arg ? i : i - f->body->n_args));
    }
    return KILN_OK;
}

static kiln_status check_ops(kiln_ctx *cx, const kiln_module *m, const kiln__backend *be) {
    for (int32_t f = 0; f < m->n_funcs; f++) {
        if (runs_all(be, m->funcs[f]->body)) continue;
        char where[256];
        int n = snprintf(where, sizeof where, "@%s", m->funcs[f]->name);
        size_t used = n > 0 && (size_t)n < sizeof where ? (size_t)n : 0;
        kiln_dtype d = KILN_DTYPE_COUNT;
        const kiln__ir_op *op = unsupported(be, m->funcs[f]->body, where, sizeof where, used, &d);
        const char *target =
            op && op->kind == KILN_OP_CUSTOM_CALL ? kiln__custom_call_target(op->attrs) : NULL;
        bool unregistered = target && be->supports_op(op->kind, KILN_DTYPE_COUNT) &&
                            !kiln_custom_call_is_registered(target);
        if (op)
            return kiln_ctx_set_error(
                cx, KILN_UNIMPLEMENTED, "%s: backend '%s' cannot run stablehlo.%s%s%s%s%s (%s)%s",
                compile_fn, be->name, kiln__op_get_info(op->kind)->name, target ? " @" : "",
                target ? target : "", kiln_dtype_is_valid(d) ? " on " : "",
                kiln_dtype_is_valid(d) ? kiln_dtype_name(d) : "", where,
                unregistered ? ": no function is registered for the target "
                               "(kiln_custom_call_register)"
                             : "");
    }
    return KILN_OK;
}

kiln_compile_options kiln_compile_options_default(void) {
    return (kiln_compile_options){.struct_size = sizeof(kiln_compile_options)};
}

/* The fields an options struct of its struct_size has. */
#define HAS_FIELD(opts, field) \
    ((opts)->struct_size >= offsetof(kiln_compile_options, field) + sizeof((opts)->field))

/* The shell's arrays and strings, in one allocation of `size` bytes. */
typedef struct shell_mem {
    unsigned char *base;
    size_t used, size;
} shell_mem;

static void *take(shell_mem *m, size_t bytes, size_t align) {
    size_t off = (m->used + align - 1) & ~(align - 1);
    m->used = off + bytes;
    return m->base ? m->base + off : NULL;
}

static char *take_string(shell_mem *m, const char *text) {
    if (!text) return NULL;
    size_t n = strlen(text) + 1;
    char *s = take(m, n, 1);
    if (s) memcpy(s, text, n);
    return s;
}

/* Lays out (base NULL: measures) the shell's convention arrays from module m. */
static void lay_out(kiln_exe *exe, shell_mem *mem, const kiln_module *m) {
    const kiln__func *main_fn = m->funcs[0];
    const kiln__block *body = main_fn->body;
    int32_t na = body->n_args, nr = body->n_results;
    exe->name = take_string(mem, m->name ? m->name : "kiln");
    size_t notes = 0;
    for (int32_t i = 0; i < m->n_notes; i++)
        notes += strlen(m->notes[i]) + sizeof "note: \n" - 1;
    exe->notes = notes ? take(mem, notes + 1, 1) : NULL;
    if (exe->notes) {
        char *p = exe->notes;
        for (int32_t i = 0; i < m->n_notes; i++)
            p += sprintf(p, "note: %s\n", m->notes[i]);
    }
    exe->arg_names = take(mem, (size_t)na * sizeof *exe->arg_names, _Alignof(char *));
    exe->arg_types = take(mem, (size_t)na * sizeof *exe->arg_types, _Alignof(kiln__type));
    exe->arg_specs = take(mem, (size_t)na * sizeof *exe->arg_specs, _Alignof(kiln_arg_spec));
    exe->result_specs = take(mem, (size_t)nr * sizeof *exe->result_specs, _Alignof(kiln_arg_spec));
    exe->donated = take(mem, (size_t)na * sizeof *exe->donated, 1);
    exe->preserved = take(mem, (size_t)nr * sizeof *exe->preserved, _Alignof(int32_t));
    exe->aliases = take(mem, (size_t)nr * sizeof *exe->aliases, _Alignof(int32_t));
    for (int32_t i = 0; i < na; i++) {
        const char *name = main_fn->arg_names ? main_fn->arg_names[i] : NULL;
        char *copy = take_string(mem, name);
        if (mem->base) exe->arg_names[i] = copy;
    }
    for (int32_t r = 0; r < nr; r++) {
        const char *name = main_fn->result_names ? main_fn->result_names[r] : NULL;
        char *copy = take_string(mem, name);
        if (mem->base) exe->result_specs[r].name = copy;
    }
}

/* The calling convention: what the module recorded, made safe. */
static void convention(kiln_exe *exe, const kiln_module *m) {
    const kiln__block *body = m->funcs[0]->body;
    exe->n_args = body->n_args;
    exe->n_results = body->n_results;
    for (int32_t i = 0; i < exe->n_args; i++) {
        exe->arg_types[i] = *body->args[i]->type;
        exe->donated[i] = m->donated && m->donated[i];
        exe->n_donated += exe->donated[i];
        exe->arg_specs[i] = (kiln_arg_spec){.dtype = exe->arg_types[i].dtype,
                                            .shape = exe->arg_types[i].shape,
                                            .name = exe->arg_names[i],
                                            .donate = exe->donated[i]};
    }
    for (int32_t r = 0; r < exe->n_results; r++) {
        const kiln__type *t = body->results[r]->type;
        exe->result_specs[r] = (kiln_arg_spec){
            .dtype = t->dtype, .shape = t->shape, .name = exe->result_specs[r].name};
        exe->preserved[r] = m->preserved ? m->preserved[r] : -1;
        exe->aliases[r] = m->aliases ? m->aliases[r] : -1;
    }
    /* A donated argument that is also returned as it is must keep its values: no other
     * result may be written into its buffer (a parsed convention, or one a rewrite turned
     * into a returned argument, may say otherwise). */
    for (int32_t r = 0; r < exe->n_results; r++) {
        const kiln__value *v = body->results[r];
        int32_t returned = exe->preserved[r] >= 0          ? exe->preserved[r]
                           : (!v->def && v->block == body) ? v->index
                                                           : -1;
        if (returned < 0) continue;
        for (int32_t q = 0; q < exe->n_results; q++)
            if (exe->aliases[q] == returned) exe->aliases[q] = -1;
    }
}

/* The shell, with its convention, for module m; NULL with the error recorded. */
static kiln_exe *shell_new(kiln_ctx *cx, const kiln_module *m) {
    kiln_exe probe = {0};
    shell_mem mem = {0};
    take(&mem, sizeof(kiln_exe), _Alignof(kiln_exe));
    lay_out(&probe, &mem, m);
    size_t size = mem.used;
    unsigned char *base = kiln__calloc(cx, size, _Alignof(kiln_exe), compile_fn);
    if (!base) return NULL;
    mem = (shell_mem){.base = base, .size = size};
    kiln_exe *exe = take(&mem, sizeof(kiln_exe), _Alignof(kiln_exe));
    lay_out(exe, &mem, m);
    atomic_init(&exe->refs, 1);
    exe->allocator = cx->allocator;
    exe->shell_size = size;
    convention(exe, m);
    return exe;
}

kiln_status kiln_compile(kiln_ctx *cx, kiln_module *m, const kiln_compile_options *options,
                         kiln_exe **out_exe) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_exe) return kiln__null_argument(cx, compile_fn, "out_exe");
    *out_exe = NULL;
    if (!m) return kiln__null_argument(cx, compile_fn, "module");
    kiln_compile_options o = kiln_compile_options_default();
    if (options) {
        if (!HAS_FIELD(options, disable_fusion))
            return kiln__struct_too_small(cx, compile_fn, "options", options->struct_size,
                                          sizeof(kiln_compile_options),
                                          "kiln_compile_options_default");
        memcpy(&o, options, options->struct_size < sizeof o ? options->struct_size : sizeof o);
        o.struct_size = sizeof o;
        if (!HAS_FIELD(options, backend)) o.backend = NULL;
        if (!HAS_FIELD(options, disable_unrolling)) o.disable_unrolling = false;
        if (!HAS_FIELD(options, disable_layout_assignment)) o.disable_layout_assignment = false;
    }
    if (o.device.type == 0) o.device = cx->device;
    /* The ctx's default backend (KILN_BACKEND) applies to devices of its type; an unknown
     * name is reported below. */
    if (!o.backend && cx->backend[0]) {
        const kiln__backend *named = kiln__backend_named(cx, cx->backend);
        if (!named || named->device_type == o.device.type) o.backend = cx->backend;
    }
    const kiln__backend *be = kiln__backend_for(cx, compile_fn, o.device, o.backend);
    if (!be) return kiln_ctx_status(cx);
    if (m->n_funcs < 1)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: the module has no function",
                                  compile_fn);

    /* The verifier records errors in the module's ctx. */
    kiln_status s = kiln__module_verify(m);
    if (s != KILN_OK) {
        if (m->cx != cx) kiln_ctx_set_error(cx, s, "%s", kiln_ctx_error_message(m->cx));
        return s;
    }
    kiln__pass_widen(m);
    kiln__pass_untuple(m);
    s = kiln_ctx_status(m->cx);
    if (s != KILN_OK) { /* out of memory while widening */
        if (m->cx != cx) kiln_ctx_set_error(cx, s, "%s", kiln_ctx_error_message(m->cx));
        return s;
    }
    if (o.disable_passes)
        kiln__module_dce(m);
    else
        kiln__passes_simplify(m, o.disable_unrolling ? KILN__SIMPLIFY_KEEP_LOOPS : 0);

    s = check_entry(cx, m);
    if (s == KILN_OK) s = check_ops(cx, m, be);
    if (s != KILN_OK) return s;

    kiln_exe *exe = shell_new(cx, m);
    if (!exe) return KILN_RESOURCE_EXHAUSTED;
    exe->backend = be;
    exe->device = o.device;
    kiln__compile_request req = {.module = m,
                                 .device = o.device,
                                 .options = &o,
                                 .n_args = exe->n_args,
                                 .n_results = exe->n_results,
                                 .donated = exe->donated,
                                 .preserved = exe->preserved,
                                 .aliases = exe->aliases};
    /* What the backend makes while compiling (folded constants) goes on the device. */
    kiln_device saved = kiln__ctx_use_device(cx, o.device);
    s = be->compile(cx, &req, &exe->impl);
    kiln__ctx_use_device(cx, saved);
    if (s != KILN_OK) {
        if (kiln_ctx_status(cx) == KILN_OK)
            kiln_ctx_set_error(cx, s, "%s: backend '%s' failed (%s)", compile_fn, be->name,
                               kiln_status_name(s));
        kiln_exe_release(exe);
        return s;
    }
    if (KILN__BACKEND_HAS(be, info)) be->info(exe->impl, &exe->info);
    *out_exe = exe;
    return KILN_OK;
}

kiln_exe *kiln_exe_retain(kiln_exe *exe) {
    if (exe) atomic_fetch_add_explicit(&exe->refs, 1, memory_order_relaxed);
    return exe;
}

void kiln_exe_release(kiln_exe *exe) {
    if (!exe || atomic_fetch_sub_explicit(&exe->refs, 1, memory_order_acq_rel) != 1) return;
    if (exe->impl) exe->backend->release(exe->impl);
    kiln_allocator a = exe->allocator;
    kiln__raw_free(&a, exe, exe->shell_size);
}

kiln_status kiln_exe_info_get(kiln_ctx *cx, const kiln_exe *exe, kiln_exe_info *out_info) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!exe) return kiln__null_argument(cx, "kiln_exe_info_get", "exe");
    if (!out_info) return kiln__null_argument(cx, "kiln_exe_info_get", "out_info");
    const kiln__executable_info *i = &exe->info;
    int32_t n_native = 0, n_ready = 0; /* what changes after compiling */
    if (KILN__BACKEND_HAS(exe->backend, native_status))
        exe->backend->native_status(exe->impl, &n_native, &n_ready);
    *out_info = (kiln_exe_info){
        .n_args = exe->n_args,
        .n_results = exe->n_results,
        .aliases = exe->aliases,
        .preserved = exe->preserved,
        .n_ops = i->n_ops,
        .arena_bytes = i->arena_bytes,
        .n_buffers = i->n_buffers,
        .n_kernels = i->n_kernels,
        .n_fused_ops = i->n_fused_ops,
        .n_conv_epilogues = i->n_conv_epilogues,
        .backend = exe->backend->name,
        .device = exe->device,
        .args = exe->arg_specs,
        .results = exe->result_specs,
        .cost = {i->cost.flops, i->cost.transcendentals, i->cost.bytes_read, i->cost.bytes_written},
        .n_native_kernels = n_native,
        .n_native_ready = n_ready};
    return KILN_OK;
}

char *kiln_exe_to_string(kiln_ctx *cx, const kiln_exe *exe) {
    if (!cx) return NULL;
    if (!exe) return kiln__null_argument_ptr(cx, "kiln_exe_to_string", "exe");
    kiln__strbuf sb;
    kiln__strbuf_init(&sb, cx);
    if (KILN__BACKEND_HAS(exe->backend, print))
        exe->backend->print(&sb, exe->impl);
    else
        kiln__strbuf_printf(&sb,
                            "executable @%s: %d args, %d results (backend %s prints nothing)\n",
                            exe->name, (int)exe->n_args, (int)exe->n_results, exe->backend->name);
    if (exe->notes) kiln__strbuf_puts(&sb, exe->notes);
    return kiln__strbuf_take(&sb);
}

kiln_status kiln_exe_print(kiln_ctx *cx, const kiln_exe *exe, FILE *stream) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!exe) return kiln__null_argument(cx, "kiln_exe_print", "exe");
    if (!stream) return kiln__null_argument(cx, "kiln_exe_print", "stream");
    char *text = kiln_exe_to_string(cx, exe);
    if (!text)
        return kiln_ctx_status(cx) != KILN_OK ? kiln_ctx_status(cx) : KILN_RESOURCE_EXHAUSTED;
    int rc = fputs(text, stream);
    kiln__strbuf_free_string(cx, text);
    if (rc < 0 || ferror(stream))
        return kiln_ctx_set_error(cx, KILN_UNAVAILABLE, "kiln_exe_print: writing failed");
    return KILN_OK;
}
