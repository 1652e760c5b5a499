/* SPDX-License-Identifier: Apache-2.0 */
/* Printing a CPU executable (kiln_exe_print): every op and kernel, the bodies of loops and
 * branches under their op, the memory plan, how each result is made, the kernels' summed
 * cost. */
#include <stdio.h>
#include <string.h>

#include "backends/cpu/engine/exe.h"
#include "backends/cpu/engine/native.h"
#include "base/strbuf.h"

static const char *slot_kind_name(uint8_t kind) {
    switch (kind) {
    case KILN__SLOT_ARG: return "argument";
    case KILN__SLOT_CONST: return "constant";
    case KILN__SLOT_ARENA: return "arena";
    case KILN__SLOT_OUTPUT: return "result";
    case KILN__SLOT_PART: return "part of a result";
    default: return "never stored";
    }
}

static void print_slot(kiln__strbuf *sb, const kiln__cpu_exe *exe, int32_t v) {
    char t[KILN__TYPE_TEXT];
    kiln__strbuf_printf(sb, "%%%d %s", (int)v, kiln__type_text(exe->entry->types[v], t));
}

/* After a region's header line: how its values and results are kept, when it is planned
 * (a loop's carries under its body). */
static void print_region_plan(kiln__strbuf *sb, const kiln__xop *op, int32_t r,
                              const kiln__xblock *body) {
    const kiln__xplan *p = body->plan;
    if (!p) {
        kiln__strbuf_puts(sb, "; interpreted\n");
        return;
    }
    int32_t direct = 0, copied = 0;
    for (int32_t i = 0; i < body->n_results; i++) {
        direct += p->results[i].kind == KILN__RESULT_DIRECT;
        copied += p->results[i].kind == KILN__RESULT_COPY;
    }
    kiln__strbuf_printf(sb,
                        "; %d buffers, %zu bytes at offset %zu; %d results written in place, "
                        "%d copied",
                        (int)p->n_arena, p->peak, p->base, (int)direct, (int)copied);
    if (op->loop && r == 1) {
        static const char *const how[] = {"passed through", "updated in place", "two buffers"};
        kiln__strbuf_puts(sb, "; carries:");
        for (int32_t i = 0; i < op->n_out; i++)
            kiln__strbuf_printf(sb, "%s %s", i ? "," : "", how[op->loop->carry[i]]);
    }
    kiln__strbuf_puts(sb, "\n");
}

/* Prints the ops of block b, each line after `indent`; the bodies of loops and branches
 * follow their op, indented further, numbered in their own block. Adds the fused
 * kernels' costs, `times` over, to *total: a loop's body as often as it runs when its trip
 * count is known (a kiln_fori_loop), else once. */
static void print_block(kiln__strbuf *sb, const kiln__xblock *b, int depth, int64_t times,
                        kiln__cost *total) {
    char indent[2 * 8 + 1];
    int w = depth < 8 ? 2 * depth : 16;
    memset(indent, ' ', (size_t)w);
    indent[w] = '\0';
    char sub[sizeof indent + 2];
    snprintf(sub, sizeof sub, "%s  ", indent);
    for (int32_t k = 0; k < b->n_ops; k++) {
        const kiln__xop *op = &b->ops[k];
        kiln__strbuf_printf(sb, "%sop %d: ", indent, (int)k);
        if (op->desc) {
            kiln__cost c = kiln__kernel_cost(op->desc);
            kiln__cost_add_times(total, &c, times);
            kiln__strbuf_printf(sb, "fused, tile %lld elements, %d instructions on the evaluator\n",
                                (long long)kiln__fused_tile(op->kernel),
                                (int)kiln__fused_n_fallback(op->kernel));
            int32_t ids[KILN__KERNEL_MAX_INPUTS + 2], depths[KILN__KERNEL_MAX_INPUTS + 2];
            for (int32_t i = 0; i < op->n_in && i < KILN__KERNEL_MAX_INPUTS + 2; i++) {
                ids[i] = op->in[i].slot;
                depths[i] = op->in[i].depth;
            }
            const kiln__kernel_names names = {op->kernel_id, ids, depths, op->out};
            kiln__kernel_print(sb, op->desc, sub, &names);
            kiln__strbuf_printf(sb,
                                "%scost: %lld flops, %lld transcendentals, %lld bytes read, %lld "
                                "bytes written\n",
                                sub, (long long)c.flops, (long long)c.transcendentals,
                                (long long)c.bytes_read, (long long)c.bytes_written);
            continue;
        }
        kiln__strbuf_printf(sb, "%s", kiln__op_get_info(op->kind)->name);
        if (op->conv_epilogue)
            kiln__strbuf_printf(sb, " with epilogue%s%s", op->n_in > 2 ? " bias" : "",
                                op->activation == KILN__ACT_RELU ? " relu" : "");
        for (int32_t i = 0; i < op->n_in; i++) {
            kiln__strbuf_printf(sb, "%s%%%d", i ? ", " : " ", (int)op->in[i].slot);
            if (op->in[i].depth) kiln__strbuf_printf(sb, "^%d", (int)op->in[i].depth);
        }
        kiln__strbuf_puts(sb, " ->");
        for (int32_t i = 0; i < op->n_out; i++)
            kiln__strbuf_printf(sb, "%s%%%d", i ? ", " : " ", (int)op->out[i]);
        int64_t trip = op->kind == KILN_OP_WHILE ? kiln__loop_trip_count(op->attrs) : -1;
        if (trip >= 0) kiln__strbuf_printf(sb, " (%lld iterations)", (long long)trip);
        if (op->in_place) kiln__strbuf_puts(sb, " (in place: its operands' ops wrote into it)");
        kiln__strbuf_puts(sb, "\n");
        for (int32_t r = 0; r < op->n_regions; r++) {
            const kiln__xblock *body = op->regions ? op->regions[r] : NULL;
            if (!body) {
                kiln__strbuf_printf(sb, "%s  region %d: builtin\n", indent, (int)r);
                continue;
            }
            kiln__strbuf_printf(sb, "%s  region %d: %d args, %d ops, %d results", indent, (int)r,
                                (int)body->n_args, (int)body->n_ops, (int)body->n_results);
            print_region_plan(sb, op, r, body);
            int64_t runs = times;
            if (trip >= 0 && __builtin_mul_overflow(times, trip, &runs)) runs = INT64_MAX;
            print_block(sb, body, depth + 2, runs, total);
        }
    }
}

/* The native tier's part: how many distinct kernels run native code, and why the others
 * do not. */
static void print_native(kiln__strbuf *sb, const kiln__cpu_exe *exe) {
    int32_t n = exe->n_kernel_codes;
    if (n == 0) return;
    const char *why = "";
    if (exe->native_mode == KILN_NATIVE_OFF) {
        kiln__strbuf_printf(sb, "native kernels: off: the tiled engine runs all %d\n", (int)n);
        return;
    }
    if (!kiln__native_compiler(&why)) {
        kiln__strbuf_printf(sb, "native kernels: none, %s: the tiled engine runs all %d\n", why,
                            (int)n);
        return;
    }
    int32_t ready = 0, failed = 0;
    for (int32_t i = 0; i < exe->n_natives; i++) {
        int st = kiln__native_state(exe->natives[i]);
        ready += st > 0, failed += st < 0;
    }
    kiln__strbuf_printf(sb, "native kernels (%s): %d of %d distinct ready",
                        exe->native_mode == KILN_NATIVE_WAIT ? "wait" : "background", (int)ready,
                        (int)n);
    if (exe->n_natives - ready - failed > 0)
        kiln__strbuf_printf(sb, ", %d compiling", (int)(exe->n_natives - ready - failed));
    if (failed) kiln__strbuf_printf(sb, ", %d failed to compile", (int)failed);
    if (n > exe->n_natives)
        kiln__strbuf_printf(sb, ", %d on the tiled engine (reductions, f16/bf16 transcendentals)",
                            (int)(n - exe->n_natives));
    kiln__strbuf_puts(sb, "\n");
}

void kiln__cpu_print(kiln__strbuf *sb, const kiln__executable *x) {
    const kiln__cpu_exe *exe = (const kiln__cpu_exe *)x;
    const kiln__xblock *b = exe->entry;
    kiln__cost total = {0};
    kiln__strbuf_printf(sb,
                        "executable @%s: %d args, %d results, %d ops (%d fused kernels replacing "
                        "%d ops, %d distinct; %d views read in place; %d convolution "
                        "epilogues)\n",
                        exe->name, (int)exe->n_args, (int)exe->n_results, (int)exe->n_ops,
                        (int)exe->n_kernels, (int)exe->n_fused_ops, (int)exe->n_kernel_codes,
                        (int)exe->n_views, (int)exe->n_epilogues);
    if (exe->n_layout_convs > 0)
        kiln__strbuf_printf(sb,
                            "layout: %d convolutions compute channels last ([N, H, W, C]); %d "
                            "transposes at the ends of their chains\n",
                            (int)exe->n_layout_convs, (int)exe->n_layout_transposes);
    print_block(sb, b, 0, 1, &total);
    const kiln__xplan *p = b->plan;
    kiln__strbuf_printf(sb, "memory plan: arena peak %zu bytes, %d buffers\n", exe->arena_bytes,
                        (int)exe->n_buffers);
    for (int32_t v = b->n_args; v < b->n_slots; v++) {
        uint8_t kind = p->slot_kind[v];
        if (kind == KILN__SLOT_CONST || kind == KILN__SLOT_UNUSED) continue;
        kiln__strbuf_puts(sb, "  ");
        print_slot(sb, exe, v);
        if (kind == KILN__SLOT_ARENA)
            kiln__strbuf_printf(sb, ": offset %zu, %zu bytes\n", p->slot_offset[v],
                                kiln__type_bytes(b->types[v]));
        else
            kiln__strbuf_printf(sb, ": %s\n", slot_kind_name(kind));
    }
    static const char *const result_kind[] = {"argument", "constant", "written in place", "copied"};
    for (int32_t r = 0; r < exe->n_results; r++) {
        const kiln__result_plan *rp = &exe->results[r];
        kiln__strbuf_printf(sb, "result %d: ", (int)r);
        print_slot(sb, exe, rp->slot);
        kiln__strbuf_printf(sb, " %s", result_kind[rp->kind]);
        if (rp->alias >= 0) kiln__strbuf_printf(sb, ", into donated argument %d", (int)rp->alias);
        kiln__strbuf_puts(sb, "\n");
    }
    kiln__strbuf_printf(sb,
                        "kernel cost: %lld flops, %lld transcendentals, %lld bytes read, %lld "
                        "bytes written\n",
                        (long long)total.flops, (long long)total.transcendentals,
                        (long long)total.bytes_read, (long long)total.bytes_written);
    print_native(sb, exe);
}
