/* SPDX-License-Identifier: Apache-2.0 */
/* SPMD programs as JAX exports them with Shardy: mhlo.num_partitions / num_replicas, the
 * sdy.mesh declarations and the arguments' and results' shardings are kept and printed
 * back; sdy.manual_computation (shard_map) is expanded into per-device slices, the body
 * and all-gathers, and runs on the module's grid with each device's results whole; the
 * forms kiln does not take are errors that say why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"
#include "kiln/parse.h"
#include "kiln/spmd.h"
#include "test_util.h"

/* A 2 x 2 mesh: x (f32[4,6]) sharded by "x" along rows and "y" along columns; the body
 * adds its partition id's share and sums its block over all four devices. */
static const char program[] =
    "module @jit_f attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 4 : "
    "i32, mhlo.num_replicas = 1 : i32} {\n"
    "  sdy.mesh @mesh = <[\"x\"=2, \"y\"=2]> {stablehlo.mesh = {axes = [{name = \"x\", size = 2 "
    ": i64}, {name = \"y\", size = 2 : i64}]}} loc(#loc)\n"
    "  func.func public @main(%arg0: tensor<4x6xf32> {sdy.sharding = #sdy.sharding<@mesh, "
    "[{\"x\"}, {\"y\"}]>} loc(\"x\")) -> (tensor<4x6xf32> {jax.result_info = \"result[0]\", "
    "sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {\"y\"}]>}, tensor<f32> {jax.result_info = "
    "\"result[1]\", sdy.sharding = #sdy.sharding<@mesh, []>}) {\n"
    "    %0:2 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{\"x\"}, {\"y\"}]>] "
    "out_shardings=[<@mesh, [{\"x\"}, {\"y\"}]>, <@mesh, []>] manual_axes={\"x\", \"y\"} "
    "(%arg1: tensor<2x3xf32> loc(\"shard_map:\"(#loc5))) {\n"
    "      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "      %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<2x3xf32>\n"
    "      %1 = stablehlo.add %arg1, %cst_0 : tensor<2x3xf32>\n"
    "      %2 = stablehlo.reduce(%arg1 init: %cst) applies stablehlo.add across dimensions = "
    "[0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>\n"
    "      %3 = \"stablehlo.all_reduce\"(%2) <{channel_handle = #stablehlo.channel_handle<handle "
    "= 1, type = 0>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, "
    "use_global_device_ids}> ({\n"
    "      ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "        %4 = stablehlo.add %a, %b : tensor<f32>\n"
    "        stablehlo.return %4 : tensor<f32>\n"
    "      }) : (tensor<f32>) -> tensor<f32>\n"
    "      sdy.return %1, %3 : tensor<2x3xf32>, tensor<f32> loc(#loc17)\n"
    "    } : (tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<f32>) loc(#loc40)\n"
    "    return %0#0, %0#1 : tensor<4x6xf32>, tensor<f32>\n"
    "  }\n"
    "}\n"
    "#loc = loc(unknown)\n"
    "#loc5 = loc(\"shard_map\")\n"
    "#loc17 = loc(\"shard_map:\"(#loc5))\n"
    "#loc40 = loc(\"jit(f)/shard_map\"(#loc5))\n";

static kiln_module *parse(kiln_ctx *cx, const char *text) {
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    return m;
}

Test(parse_sdy, annotations_are_kept_and_printed_back) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = parse(cx, program);
    kiln_module_info info;
    cr_assert_eq(kiln_module_info_get(cx, m, &info), KILN_OK);
    cr_assert_eq(info.num_partitions, 4);
    cr_assert_eq(info.num_replicas, 1);
    char *once = kiln_module_to_string(cx, m);
    cr_assert_not_null(once, "%s", kiln_ctx_error_message(cx));
    const char *want[] = {
        "module @jit_f attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32}",
        "  sdy.mesh @mesh = <[\"x\"=2, \"y\"=2]>\n",
        "%arg0: tensor<4x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {\"y\"}]>}",
        "tensor<f32> {jax.result_info = \"result[1]\", sdy.sharding = #sdy.sharding<@mesh, []>}",
        "stablehlo.partition_id",
        "stablehlo.dynamic_slice",
        "\"stablehlo.all_gather\""};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(once, want[i]), "lacks '%s':\n%s", want[i], once);
    /* and the printed module reads back to itself */
    kiln_module *m2 = parse(cx, once);
    char *twice = kiln_module_to_string(cx, m2);
    cr_assert_str_eq(twice, once);
    kiln_string_free(cx, once);
    kiln_string_free(cx, twice);
    kiln_module_release(m2);

    /* an mhlo.sharding string (the GSPMD form) is kept too */
    const char *gspmd =
        "module @g attributes {mhlo.num_partitions = 2 : i32} {\n"
        "  func.func @main(%a: tensor<2xf32> {mhlo.sharding = \"{devices=[2]<=[2]}\"}) -> "
        "(tensor<2xf32> {mhlo.sharding = \"{replicated}\"}) {\n"
        "    return %a : tensor<2xf32>\n  }\n}\n";
    kiln_module *g = parse(cx, gspmd);
    char *text = kiln_module_to_string(cx, g);
    cr_assert(strstr(text, "attributes {mhlo.num_partitions = 2 : i32}") &&
                  strstr(text, "%arg0: tensor<2xf32> {mhlo.sharding = \"{devices=[2]<=[2]}\"}") &&
                  strstr(text, "-> (tensor<2xf32> {mhlo.sharding = \"{replicated}\"})"),
              "%s", text);
    kiln_string_free(cx, text);
    kiln_module_release(g);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(parse_sdy, a_manual_computation_runs_on_the_grid) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = parse(cx, program);
    const char *backends[] = {"cpu", "interpreter"};
    float x[24];
    double total = 0;
    for (int i = 0; i < 24; i++)
        total += x[i] = (float)(i * 0.25 - 2);
    kiln_comm_options o = kiln_comm_options_default();
    o.num_partitions = 4;
    kiln_comm *comm;
    cr_assert_eq(kiln_comm_create_local(cx, &o, &comm), KILN_OK);
    for (int b = 0; b < 2; b++) {
        kiln_compile_options co = kiln_compile_options_default();
        co.backend = backends[b];
        kiln_exe *exe;
        cr_assert_eq(kiln_compile(cx, m, &co, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
        kiln_tensor *args[4], *out[8];
        for (int p = 0; p < 4; p++)
            args[p] = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4, 6), x, sizeof x);
        cr_assert_eq(kiln_exe_call_spmd(cx, exe, comm, args, out), KILN_OK, "%s: %s", backends[b],
                     kiln_ctx_error_message(cx));
        for (int p = 0; p < 4; p++) {
            const float *y = kiln_tensor_data(out[2 * p]);
            for (int i = 0; i < 24; i++)
                cr_assert_eq(y[i], x[i] + 1.0f, "%s: process %d, element %d: %g", backends[b], p, i,
                             (double)y[i]);
            cr_assert_float_eq(*(const float *)kiln_tensor_data(out[2 * p + 1]), (float)total, 1e-4,
                               "%s: the sum over the devices", backends[b]);
        }
        kiln_exe_release(exe);
    }
    kiln_comm_release(comm);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* The program with one substring replaced. */
static char *variant(const char *from, const char *to) {
    const char *at = strstr(program, from);
    cr_assert_not_null(at, "%s", from);
    size_t n = strlen(program) - strlen(from) + strlen(to) + 1;
    char *s = malloc(n);
    snprintf(s, n, "%.*s%s%s", (int)(at - program), program, to, at + strlen(from));
    return s;
}

static void fails(const char *from, const char *to, const char *message) {
    kiln_ctx *cx = test_ctx();
    char *text = variant(from, to);
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &m), KILN_INVALID_ARGUMENT,
                 "accepted with '%s'", to);
    cr_assert(strstr(kiln_ctx_error_message(cx), message), "'%s': %s", to,
              kiln_ctx_error_message(cx));
    free(text);
    kiln_ctx_release(cx);
}

Test(parse_sdy, what_kiln_does_not_take_is_an_error_that_says_why) {
    fails("manual_axes={\"x\", \"y\"}", "manual_axes={\"x\"}",
          "mesh axis \"y\" is not manual: manual computations over part of a mesh need "
          "automatic partitioning");
    fails("mhlo.num_partitions = 4", "mhlo.num_partitions = 2",
          "mesh @mesh has 4 devices; the module has 1 replicas x 2 partitions");
    fails("in_shardings=[<@mesh,", "in_shardings=[<@other,",
          "sharding over undeclared mesh @other");
    fails("in_shardings=[<@mesh, [{\"x\"}", "in_shardings=[<@mesh, [{\"z\"}",
          "mesh @mesh has no axis \"z\"");
    fails("in_shardings=[<@mesh, [{\"x\"}", "in_shardings=[<@mesh, [{\"x\":(1)2}",
          "sub-axes (\"x\":(...)) are not supported");
    fails("<[\"x\"=2, \"y\"=2]>", "<[\"x\"=2, \"y\"=2], device_ids=[3, 2, 1, 0]>",
          "meshes with device_ids are not supported");
    fails("(%arg1: tensor<2x3xf32>", "(%arg1: tensor<2x2xf32>",
          "operand 0 is tensor<4x6xf32>; sharded by in_shardings[0] its shards are not the "
          "body's tensor<2x2xf32>");
    fails("} : (tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<f32>)",
          "} : (tensor<4x6xf32>) -> (tensor<4x3xf32>, tensor<f32>)",
          "result 0: its shards make tensor<4x6xf32>; declared tensor<4x3xf32>");
    fails("mhlo.num_partitions = 4", "mhlo.num_partitions = 0",
          "mhlo.num_partitions must be an integer from 1 to 256");
    fails("sdy.return %1, %3", "sdy.return %1", "1 values returned but 2 out_shardings");
    fails("sdy.mesh @mesh = <[\"x\"=2, \"y\"=2]>",
          "sdy.mesh @mesh = <[\"x\"=2, \"y\"=2]>\n  sdy.mesh @mesh = <[\"x\"=4]>",
          "mesh @mesh is declared twice");
}
