/* SPDX-License-Identifier: Apache-2.0 */
/* stablehlo.custom_call: read in JAX's pretty form and the generic one with every kind of
 * attribute, printed back and read again unchanged; every error of its parser; refused at
 * compile time (naming the target, the place and the backend), by vmap and by autodiff; and
 * StableHLO's portable artifacts of every version read past their custom_calls. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff/transform.h"
#include "base/strbuf.h"
#include "batching/batch.h"
#include "goldens.h"
#include "ir/vhlo.h"
#include "test_util.h"

/* The printed module, which must read back to itself. */
static char *print_round_trip(kiln_ctx *cx, const char *text) {
    kiln_module *m = test_parse(cx, text);
    char *once = kiln_module_to_string(cx, m);
    kiln_module_release(m);
    cr_assert_not_null(once, "%s", kiln_ctx_error_message(cx));
    kiln_module *again = test_parse(cx, once);
    char *twice = kiln_module_to_string(cx, again);
    kiln_module_release(again);
    cr_assert_str_eq(once, twice, "the printed module does not read back to itself");
    kiln_string_free(cx, twice);
    return once;
}

static void expect_line(const char *printed, const char *line) {
    cr_assert(strstr(printed, line) != NULL, "missing\n  %s\nin\n%s", line, printed);
}

static const char pretty_and_generic[] =
    "func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<f32>) -> tensor<4xf32> {\n"
    "  %0 = stablehlo.custom_call @foo(%arg0, %arg1) {has_side_effect = true, backend_config = "
    "\"\\08\\03\\1A\\02\", api_version = 2 : i32, mhlo.frontend_attributes = {_xla = \"x\"}, "
    "operand_layouts = [dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>], "
    "result_layouts = [dense<0> : tensor<1xindex>]} : (tensor<4xf32>, tensor<f32>) -> "
    "tensor<4xf32>\n"
    "  %1 = \"stablehlo.custom_call\"(%0) {\n"
    "    call_target_name = \"bar\",\n"
    "    // a comment inside the attributes\n"
    "    backend_config = {bar = 42 : i32, s = \"a, }b\\n\"},\n"
    "    api_version = 4 : i32,\n"
    "    called_computations = [@foo, @\"odd name\"],\n"
    "    output_operand_aliases = [\n"
    "      #stablehlo.output_operand_alias<output_tuple_indices = [],\n"
    "                                 operand_index = 0,\n"
    "                                 operand_tuple_indices = []>],\n"
    "    \"quoted.key\" = 1.5 : f32,\n"
    "    a_unit_attribute\n"
    "  } : (tensor<4xf32>) -> tensor<4xf32>\n"
    "  %2:2 = \"stablehlo.custom_call\"(%1) <{call_target_name = \"two\", api_version = 1 : "
    "i32, has_side_effect = false, backend_config = \"\"}> {mhlo.sharding = \"{replicated}\"} "
    ": (tensor<4xf32>) -> (tensor<4xf32>, tensor<2xi32>)\n"
    "  \"stablehlo.custom_call\"(%2#0) <{call_target_name = \"no results\", has_side_effect = "
    "true}> : (tensor<4xf32>) -> ()\n"
    "  %3 = stablehlo.custom_call @\"no.operands\"() : () -> tensor<f32>\n"
    "  return %2#0 : tensor<4xf32>\n"
    "}\n";

/* Both forms print in the pretty one, attributes as MLIR orders them (by name), values
 * normalized (comments gone, one space, MLIR's string escapes), defaults left out. */
Test(custom_call, both_forms_print_in_the_pretty_one_and_read_back) {
    kiln_ctx *cx = test_ctx();
    char *printed = print_round_trip(cx, pretty_and_generic);
    expect_line(printed,
                "%0 = stablehlo.custom_call @foo(%arg0, %arg1) {api_version = 2 : i32, "
                "backend_config = \"\\08\\03\\1A\\02\", has_side_effect = true, "
                "mhlo.frontend_attributes = {_xla = \"x\"}, operand_layouts = [dense<0> : "
                "tensor<1xindex>, dense<> : tensor<0xindex>], result_layouts = [dense<0> : "
                "tensor<1xindex>]} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>");
    expect_line(printed,
                "%1 = stablehlo.custom_call @bar(%0) {a_unit_attribute, api_version = 4 : i32, "
                "backend_config = {bar = 42 : i32, s = \"a, }b\\0A\"}, called_computations = "
                "[@foo, @\"odd name\"], output_operand_aliases = "
                "[#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 0, "
                "operand_tuple_indices = []>], quoted.key = 1.5 : f32} : (tensor<4xf32>) -> "
                "tensor<4xf32>");
    expect_line(printed, "%2:2 = stablehlo.custom_call @two(%1) {mhlo.sharding = "
                         "\"{replicated}\"} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<2xi32>)");
    expect_line(printed, "stablehlo.custom_call @\"no results\"(%2#0) {has_side_effect = true} "
                         ": (tensor<4xf32>) -> ()");
    /* without effects and unused: dead code, but kept as read */
    expect_line(printed, "stablehlo.custom_call @no.operands() : () -> tensor<f32>");
    kiln_string_free(cx, printed);
    kiln_ctx_release(cx);
}

/* The generic form and the pretty one of one call are one module. */
Test(custom_call, the_generic_form_and_the_pretty_one_are_the_same_op) {
    kiln_ctx *cx = test_ctx();
    const char *generic =
        "func.func @main(%a: tensor<2xi32>) -> tensor<2xi32> {\n"
        "  %0 = \"stablehlo.custom_call\"(%a) <{api_version = 2 : i32, backend_config = \"cfg\", "
        "call_target_name = \"t\", has_side_effect = true}> {mhlo.frontend_attributes = {k = "
        "\"v\"}} : (tensor<2xi32>) -> tensor<2xi32>\n"
        "  return %0 : tensor<2xi32>\n}\n";
    const char *pretty = "func.func @main(%a: tensor<2xi32>) -> tensor<2xi32> {\n"
                         "  %0 = stablehlo.custom_call @t(%a) {mhlo.frontend_attributes = {k = "
                         "\"v\"}, has_side_effect = true, backend_config = \"cfg\", api_version "
                         "= 2 : i32} : (tensor<2xi32>) -> tensor<2xi32>\n"
                         "  return %0 : tensor<2xi32>\n}\n";
    char *a = print_round_trip(cx, generic), *b = print_round_trip(cx, pretty);
    cr_assert_str_eq(a, b);
    kiln_string_free(cx, a);
    kiln_string_free(cx, b);
    kiln_ctx_release(cx);
}

static void expect_parse_error(kiln_ctx *cx, const char *op_line, const char *fragment) {
    char text[2048];
    snprintf(text, sizeof text,
             "func.func @main(%%a: tensor<2xf32>) -> tensor<2xf32> {\n  %s\n  return %%a : "
             "tensor<2xf32>\n}\n",
             op_line);
    kiln_module *m = NULL;
    cr_assert_neq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "parsed: %s",
                  op_line);
    cr_assert(strstr(kiln_ctx_error_message(cx), fragment) != NULL,
              "message \"%s\" lacks \"%s\" (for %s)", kiln_ctx_error_message(cx), fragment,
              op_line);
    cr_assert(strstr(kiln_ctx_error_message(cx), ":2:") != NULL, "no line in \"%s\"",
              kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);
}

Test(custom_call, every_parser_error_names_what_is_wrong) {
    kiln_ctx *cx = test_ctx();
    const char *ty = ": (tensor<2xf32>) -> tensor<2xf32>";
    char line[512];
#define BAD(op, attrs, fragment)                                      \
    do {                                                              \
        snprintf(line, sizeof line, "%%0 = %s %s %s", op, attrs, ty); \
        expect_parse_error(cx, line, fragment);                       \
    } while (0)
    const char *generic = "\"stablehlo.custom_call\"(%a)";
    const char *pretty = "stablehlo.custom_call @t(%a)";
    BAD(generic, "", "stablehlo.custom_call needs a target: call_target_name");
    BAD(generic, "{api_version = 2 : i32}", "needs a target");
    BAD("stablehlo.custom_call (%a)", "", "expected '@' and the target after");
    BAD(generic, "{call_target_name = 3}", "call_target_name must be a string, found '3'");
    BAD(pretty, "{call_target_name = \"u\"}", "the target is given twice");
    BAD(pretty, "{has_side_effect = 1}", "has_side_effect must be true or false, found '1'");
    BAD(pretty, "{api_version = 7 : i32}", "api_version must be an integer 0 to 4");
    BAD(pretty, "{api_version = \"2\"}", "api_version must be an integer 0 to 4");
    BAD(pretty, "{backend_config = [1]}", "backend_config must be a string or a dictionary");
    BAD(pretty, "{called_computations = [\"f\"]}", "called_computations must be a list of symbols");
    BAD(pretty, "{called_computations = @f}", "called_computations must be a list of symbols");
    BAD(pretty, "{operand_layouts = dense<0> : tensor<1xindex>}",
        "operand_layouts must be a list of layouts");
    BAD(pretty, "{result_layouts = 0}", "result_layouts must be a list of layouts");
    BAD(pretty, "{output_operand_aliases = 0}", "output_operand_aliases must be a list");
    BAD(pretty, "{backend_config = \"a\", backend_config = \"b\"}",
        "attribute 'backend_config' given twice");
    BAD(pretty, "{backend_config = }", "expected a value for attribute 'backend_config'");
    BAD(pretty, "{= 3}", "expected an attribute name");
    BAD(pretty, "{backend_config = \"a\" \"b\"}",
        "backend_config must be a string or a dictionary");
    expect_parse_error(cx, "%0 = stablehlo.custom_call @t(%a) : tensor<2xf32>",
                       "stablehlo.custom_call needs a function type");
    expect_parse_error(
        cx, "%0 = stablehlo.custom_call @t(%a) {k = [1, 2 : (tensor<2xf32>) -> tensor<2xf32>",
        "is not closed");
    expect_parse_error(
        cx, "%0 = stablehlo.custom_call @t(%a, %b) : (tensor<2xf32>) -> tensor<2xf32>", "%b");
    expect_parse_error(cx, "%0 = stablehlo.custom_call @t(%a) : (tensor<3xf32>) -> tensor<2xf32>",
                       "type mismatch: operand 0 is tensor<2xf32>");
    expect_parse_error(cx,
                       "%0, %1 = stablehlo.custom_call @t(%a) : (tensor<2xf32>) -> tensor<2xf32>",
                       "2 results named but the op has 1");
#undef BAD
    kiln_ctx_release(cx);
}

/* kiln's printed form of a custom_call: what it reads back as itself. */
const char *const golden_custom_call =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 1 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
    "    %0:2 = stablehlo.custom_call @lapack_sgetrf_ffi(%arg0) {api_version = 4 : i32, "
    "mhlo.backend_config = {}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], "
    "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], "
    "operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : "
    "tensor<2xindex>, dense<0> : tensor<1xindex>]} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, "
    "tensor<2xi32>)\n"
    "    return %0#0 : tensor<2x3xf32>\n"
    "  }\n"
    "}\n";

Test(custom_call, the_golden_prints_as_itself) {
    kiln_ctx *cx = test_ctx();
    char *printed = print_round_trip(cx, golden_custom_call);
    cr_assert_str_eq(printed, golden_custom_call);
    kiln_string_free(cx, printed);
    kiln_ctx_release(cx);
}

static const char one_call[] =
    "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
    "  %0 = stablehlo.add %a, %a : tensor<2xf32>\n"
    "  %1 = stablehlo.custom_call @lapack_spotrf(%0) {api_version = 4 : i32} : "
    "(tensor<2xf32>) -> tensor<2xf32>\n"
    "  return %1 : tensor<2xf32>\n}\n";

/* No backend runs one: kiln_compile refuses the program naming the op, its target, where
 * it stands and the backend. */
Test(custom_call, compiling_one_is_refused_naming_the_target_and_the_backend) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = test_parse(cx, one_call);
    kiln_exe *exe = NULL;
    cr_assert_neq(kiln_compile(cx, m, NULL, &exe), KILN_OK);
    expect_error(cx, KILN_UNIMPLEMENTED,
                 "kiln_compile: backend 'cpu' cannot run stablehlo.custom_call @lapack_spotrf "
                 "(@main, op 1)");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(custom_call, vmap_and_autodiff_refuse_it_by_name) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = test_parse(cx, one_call);
    kiln_module *dst = kiln__module_new(cx, "batched");
    cr_assert_not_null(dst);
    int32_t in_axes[1] = {0}, out_axes[1] = {0};
    kiln__func *g = NULL;
    cr_assert_neq(
        kiln__batch_func(cx, "kiln_vmap", m->funcs[0], NULL, 0, dst, in_axes, out_axes, 3, &g),
        KILN_OK);
    expect_error(cx, KILN_UNIMPLEMENTED, "stablehlo.custom_call @lapack_spotrf cannot be batched");
    kiln_module_release(dst);
    dst = kiln__module_new(cx, "grad");
    bool wrt[1] = {true}, seed[1] = {true};
    kiln__ad_hooks hooks = {0};
    cr_assert_neq(kiln__vjp_func(cx, "kiln_vjp", m->funcs[0], NULL, 0, dst, wrt, seed, &hooks, &g),
                  KILN_OK);
    expect_error(cx, KILN_UNIMPLEMENTED, "stablehlo.custom_call");
    kiln_module_release(dst);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* ---- StableHLO's artifacts ---------------------------------------------------------------- */

static const char *vhlo_dir(void) { return KILN_CONFORMANCE_DIR "/vhlo"; }

/* The functions of an artifact's text with custom_call in their name, each read from the
 * artifact alone (kiln__vhlo_to_text's only_func) and parsed: how many read, and whether
 * the whole artifact still stops at a custom_call. */
static int custom_call_functions(kiln_ctx *cx, const char *mlir, const unsigned char *bc, size_t n,
                                 int *tried, bool *stops_at_custom_call) {
    int read = 0;
    kiln__bc r;
    kiln__strbuf sb;
    cr_assert(kiln__bc_open(&r, cx, bc, n), "%s", r.error);
    kiln__strbuf_init(&sb, cx);
    bool whole = kiln__vhlo_to_text(&r, &sb, NULL);
    *stops_at_custom_call = !whole && strstr(r.error, "custom_call") != NULL;
    kiln__bc_close(&r);
    kiln__strbuf_free_string(cx, kiln__strbuf_take(&sb));
    for (const char *p = mlir; (p = strstr(p, "\nfunc.func"));) {
        p++;
        const char *at = strchr(p, '@');
        char name[200];
        int k = 0;
        for (at++; at[k] && at[k] != '(' && k < 199; k++)
            name[k] = at[k];
        name[k] = 0;
        if (!strstr(name, "custom_call")) continue;
        (*tried)++;
        cr_assert(kiln__bc_open(&r, cx, bc, n), "%s", r.error);
        kiln__strbuf_init(&sb, cx);
        bool ok = kiln__vhlo_to_text(&r, &sb, name);
        char *text = kiln__strbuf_take(&sb);
        if (!ok) fprintf(stderr, "    @%s: %s\n", name, r.error);
        kiln__bc_close(&r);
        kiln_module *m = NULL;
        if (ok && kiln_module_parse(cx, text, strlen(text), NULL, &m) == KILN_OK) {
            read++;
        } else if (ok) {
            fprintf(stderr, "    @%s: %s\n", name, kiln_ctx_error_message(cx));
            kiln_ctx_clear_error(cx);
        }
        kiln_module_release(m);
        kiln__strbuf_free_string(cx, text);
    }
    return read;
}

/* Every artifact reads past its custom_calls (what stops it now is another op or type),
 * and its functions made of custom_calls of tensors read from the artifact alone (those
 * with a tuple, token or memref type need those types, which kiln lacks). */
Test(custom_call, every_artifact_reads_past_its_custom_calls) {
    DIR *d = opendir(vhlo_dir());
    if (!d) {
        fprintf(stderr, "SKIPPED: %s is missing (the conformance data beside the checkout)\n",
                vhlo_dir());
        cr_skip_test("no conformance data");
    }
    kiln_ctx *cx = test_ctx();
    struct dirent *e;
    int versions = 0, read = 0, tried = 0, stopped = 0;
    while ((e = readdir(d))) {
        const char *prefix = "stablehlo_legalize_to_vhlo.";
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || len < 8 ||
            strcmp(e->d_name + len - 8, ".mlir.bc") != 0)
            continue;
        char bc_path[512], text_path[512];
        snprintf(bc_path, sizeof bc_path, "%s/%s", vhlo_dir(), e->d_name);
        snprintf(text_path, sizeof text_path, "%s/%.*s", vhlo_dir(), (int)(len - 3), e->d_name);
        size_t nb, nt;
        unsigned char *bc = test_read_file(bc_path, &nb), *text = test_read_file(text_path, &nt);
        cr_assert(bc && text, "%s or its text is missing", bc_path);
        bool stops = false;
        int t = 0, r = custom_call_functions(cx, (const char *)text, bc, nb, &t, &stops);
        fprintf(stderr, "vhlo %s: %d of %d custom_call functions read\n", e->d_name, r, t);
        stopped += stops;
        read += r;
        tried += t;
        versions++;
        free(bc);
        free(text);
    }
    closedir(d);
    fprintf(stderr, "custom_call: %d versions, %d of %d functions read\n", versions, read, tried);
    cr_assert_geq(versions, 32, "only %d versions found", versions);
    cr_assert_eq(stopped, 0, "%d artifacts still stop at a custom_call", stopped);
    cr_assert_geq(read, 229, "only %d custom_call functions read", read);
    kiln_ctx_release(cx);
}
