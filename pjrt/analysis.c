/* SPDX-License-Identifier: Apache-2.0 */
/* What a compiled program says of itself for people and tools: its optimized program
 * (jax's `compiled.as_text()`) and its cost analysis (`compiled.cost_analysis()`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/plugin.h"

/* The program as kiln optimized it: the module after kiln_compile's passes, printed as
 * StableHLO text (format "mlir": the framework parses it and converts it to HLO). Made
 * again from the program's bytes when first asked for (kiln compiles in microseconds),
 * so compiling costs nothing extra; kept with the program afterwards. */
static PJRT_Error *optimized_text(kiln_pjrt_program *p, const char **out, size_t *out_size) {
    static const char fn[] = "PJRT_Executable_OptimizedProgram";
    char *have = atomic_load(&p->optimized);
    if (!have) {
        kiln_ctx *cx = kiln_pjrt_enter(p->client);
        if (!cx) return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
        PJRT_Error *e = NULL;
        kiln_module *m = NULL;
        kiln_exe *exe = NULL;
        kiln_parse_options po = kiln_parse_options_default();
        po.filename = "the program";
        kiln_compile_options o = kiln_compile_options_default();
        o.device = (kiln_device){KILN_DEVICE_TYPE_CPU, p->device->index};
        char *text = NULL;
        if (kiln_module_parse(cx, p->code, p->code_size, &po, &m) != KILN_OK ||
            kiln_compile(cx, m, &o, &exe) != KILN_OK ||
            !(text = kiln_module_to_string(cx, m)))
            e = kiln_pjrt_ctx_error(cx, fn);
        size_t n = text ? strlen(text) + 1 : 0;
        char *copy = text ? malloc(n) : NULL;
        if (copy)
            memcpy(copy, text, n);
        else if (text)
            e = kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
        kiln_string_free(cx, text);
        kiln_exe_release(exe);
        kiln_module_release(m);
        kiln_pjrt_leave(p->client);
        if (e) return e;
        char *expected = NULL;
        if (atomic_compare_exchange_strong(&p->optimized, &expected, copy)) {
            have = copy;
        } else {
            free(copy); /* another thread made it first */
            have = expected;
        }
    }
    *out = have;
    *out_size = strlen(have);
    return NULL;
}

/* Called twice by the framework: with program->code NULL for the size, then with a
 * buffer of that size to fill. */
PJRT_Error *kiln_pjrt_Executable_OptimizedProgram(PJRT_Executable_OptimizedProgram_Args *args) {
    static const char fn[] = "PJRT_Executable_OptimizedProgram";
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_OptimizedProgram_Args, program);
    if (!args->executable)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: executable is NULL", fn);
    PJRT_Program *prog = args->program;
    if (!prog) return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: program is NULL", fn);
    const char *text = NULL;
    size_t size = 0;
    PJRT_Error *e = optimized_text(args->executable->program, &text, &size);
    if (e) return e;
    prog->format = "mlir";
    prog->format_size = 4;
    if (!prog->code) {
        prog->code_size = size;
        return NULL;
    }
    if (prog->code_size < size)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "%s: program->code_size is %zu bytes; the program needs %zu", fn,
                               prog->code_size, size);
    memcpy(prog->code, text, size);
    prog->code_size = size;
    return NULL;
}

/* The names XLA's cost analysis uses (jax reads them as a dict of floats): "flops",
 * "transcendentals", "bytes accessed" (read and written) and "bytes accessedout{}" (the
 * written part). Filled once, when the program is described. */
void kiln_pjrt_cost_values(kiln_pjrt_program *p, const kiln_cost *c) {
    static const char *const names[KILN_PJRT_COST_VALUES] = {"flops", "transcendentals",
                                                             "bytes accessed",
                                                             "bytes accessedout{}"};
    const double values[KILN_PJRT_COST_VALUES] = {
        (double)c->flops, (double)c->transcendentals,
        (double)c->bytes_read + (double)c->bytes_written, (double)c->bytes_written};
    for (int i = 0; i < KILN_PJRT_COST_VALUES; i++)
        p->cost[i] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                                       .name = names[i],
                                       .name_size = strlen(names[i]),
                                       .type = PJRT_NamedValue_kFloat,
                                       .float_value = (float)values[i],
                                       .value_size = 1};
}

PJRT_Error *kiln_pjrt_Executable_GetCostAnalysis(PJRT_Executable_GetCostAnalysis_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_GetCostAnalysis_Args, properties);
    if (!args->executable)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "PJRT_Executable_GetCostAnalysis: executable is NULL");
    args->properties = args->executable->program->cost;
    args->num_properties = KILN_PJRT_COST_VALUES;
    return NULL;
}
