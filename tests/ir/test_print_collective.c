/* SPDX-License-Identifier: Apache-2.0 */
/* The printer's goldens for the collectives (kiln/spmd.h): every builder lowered into one
 * module, and the forms only text makes (collective_reduce, a dynamic root, flattened ids,
 * interpreter.run_parallel). */
#include <stdio.h>
#include <string.h>

#include "goldens.h"
#include "ir/ir.h"
#include "kiln/spmd.h"
#include "test_util.h"

static kiln_status collectives(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                               void *user) {
    (void)user;
    int64_t ids[] = {0, 1, 2, 3};
    kiln_replica_groups g = {.ids = ids, .n_groups = 2, .group_size = 2, .channel_id = 1};
    int64_t pairs[] = {0, 1, 1, 0};
    kiln_tensor *x = in[0];
    kiln_tensor *id =
        kiln_convert(cx, kiln_add(cx, kiln_replica_id(cx), kiln_partition_id(cx)), KILN_F32);
    kiln_tensor *s = kiln_all_reduce(cx, kiln_multiply(cx, x, id), kiln_region_maximum(), &g);
    out[0] = kiln_all_gather(cx, s, 0, NULL);
    out[1] = kiln_reduce_scatter(cx, x, 1, kiln_region_add(), NULL);
    out[2] = kiln_all_to_all(cx, x, 1, 0, 2, NULL);
    out[3] = kiln_collective_permute(cx, x, pairs, 2, 0);
    out[4] = kiln_collective_broadcast(cx, x, NULL);
    return kiln_ctx_status(cx);
}

const char *const golden_collective =
    "module @kiln {\n"
    "  // calling convention of @main: 1 arguments, 5 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<2x4xf32>) -> (tensor<4x4xf32>, tensor<2x2xf32>, "
    "tensor<4x2xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {\n"
    "    %0 = stablehlo.partition_id : tensor<ui32>\n"
    "    %1 = stablehlo.replica_id : tensor<ui32>\n"
    "    %2 = stablehlo.add %1, %0 : tensor<ui32>\n"
    "    %3 = stablehlo.convert %2 : (tensor<ui32>) -> tensor<f32>\n"
    "    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<2x4xf32>\n"
    "    %5 = stablehlo.multiply %arg0, %4 : tensor<2x4xf32>\n"
    "    %6 = \"stablehlo.all_reduce\"(%5) <{channel_handle = "
    "#stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1], [2, "
    "3]]> : tensor<2x2xi64>}> ({\n"
    "    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):\n"
    "      %12 = stablehlo.maximum %arg1, %arg2 : tensor<f32>\n"
    "      stablehlo.return %12 : tensor<f32>\n"
    "    }) : (tensor<2x4xf32>) -> tensor<2x4xf32>\n"
    "    %7 = \"stablehlo.all_gather\"(%6) <{all_gather_dim = 0 : i64, replica_groups = "
    "dense<> : tensor<0x0xi64>}> : (tensor<2x4xf32>) -> tensor<4x4xf32>\n"
    "    %8 = \"stablehlo.reduce_scatter\"(%arg0) <{replica_groups = dense<> : "
    "tensor<0x0xi64>, scatter_dimension = 1 : i64}> ({\n"
    "    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):\n"
    "      %12 = stablehlo.add %arg1, %arg2 : tensor<f32>\n"
    "      stablehlo.return %12 : tensor<f32>\n"
    "    }) : (tensor<2x4xf32>) -> tensor<2x2xf32>\n"
    "    %9 = \"stablehlo.all_to_all\"(%arg0) <{concat_dimension = 0 : i64, replica_groups = "
    "dense<> : tensor<0x0xi64>, split_count = 2 : i64, split_dimension = 1 : i64}> : "
    "(tensor<2x4xf32>) -> tensor<4x2xf32>\n"
    "    %10 = \"stablehlo.collective_permute\"(%arg0) <{source_target_pairs = dense<[[0, "
    "1], [1, 0]]> : tensor<2x2xi64>}> : (tensor<2x4xf32>) -> tensor<2x4xf32>\n"
    "    %11 = \"stablehlo.collective_broadcast\"(%arg0) <{replica_groups = dense<> : "
    "tensor<0x0xi64>}> : (tensor<2x4xf32>) -> tensor<2x4xf32>\n"
    "    return %7, %8, %9, %10, %11 : tensor<4x4xf32>, tensor<2x2xf32>, tensor<4x2xf32>, "
    "tensor<2x4xf32>, tensor<2x4xf32>\n"
    "  }\n"
    "}\n";

Test(print, collectives) {
    kiln_ctx *cx = test_ctx();
    /* traced on process 0 of a 2-replica grid: the groups' sizes follow from it */
    kiln_comm_options o = kiln_comm_options_default();
    o.num_replicas = 2;
    kiln_comm *comm;
    cr_assert_eq(kiln_comm_create_local(cx, &o, &comm), KILN_OK);
    cr_assert_eq(kiln_ctx_set_comm(cx, comm, 0), KILN_OK);
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(2, 4)};
    kiln_region r = {.fn = collectives};
    kiln_module *m;
    cr_assert_eq(kiln_lower(cx, &r, &a, 1, 5, NULL, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln__module_verify(m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text);
    if (strcmp(text, golden_collective) != 0) {
        FILE *f = fopen(test_tmp_path("print_collective.mlir"), "w");
        if (f) fputs(text, f), fclose(f);
        cr_assert_fail("the text differs from the golden (written to %s)",
                       test_tmp_path("print_collective.mlir"));
    }
    kiln_string_free(cx, text);
    kiln_module_release(m);
    kiln_comm_release(comm);
    kiln_ctx_release(cx);
}

const char *const golden_collective_text =
    "module @kiln {\n"
    "  // calling convention of @main: 2 arguments, 3 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<4xi64>, %arg1: tensor<1xi32>) -> (tensor<4xi64>, "
    "tensor<4xi64>, tensor<4xi64>) {\n"
    "    %0 = \"stablehlo.collective_reduce\"(%arg0) <{channel_handle = "
    "#stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<[[0, 1]]> : "
    "tensor<1x2xi64>}> ({\n"
    "    ^bb0(%arg2: tensor<i64>, %arg3: tensor<i64>):\n"
    "      %3 = stablehlo.add %arg2, %arg3 : tensor<i64>\n"
    "      stablehlo.return %3 : tensor<i64>\n"
    "    }) : (tensor<4xi64>) -> tensor<4xi64>\n"
    "    %1 = \"stablehlo.collective_broadcast\"(%arg0, %arg1) <{has_dynamic_root, "
    "replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>}> : (tensor<4xi64>, tensor<1xi32>) "
    "-> tensor<4xi64>\n"
    "    %2 = \"stablehlo.all_reduce\"(%arg0) <{channel_handle = "
    "#stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 3], [1, "
    "-1]]> : tensor<2x2xi64>, use_global_device_ids}> ({\n"
    "    ^bb0(%arg2: tensor<i64>, %arg3: tensor<i64>):\n"
    "      %3 = stablehlo.multiply %arg2, %arg3 : tensor<i64>\n"
    "      stablehlo.return %3 : tensor<i64>\n"
    "    }) : (tensor<4xi64>) -> tensor<4xi64>\n"
    "    return %0, %1, %2 : tensor<4xi64>, tensor<4xi64>, tensor<4xi64>\n"
    "  }\n"
    "}\n";

Test(print, collectives_only_text_makes) {
    kiln_ctx *cx = test_ctx();
    const char *src =
        "func.func @main(%x: tensor<4xi64>, %r: tensor<1xi32>) -> (tensor<4xi64>, tensor<4xi64>, "
        "tensor<4xi64>) {\n"
        "  %0 = \"stablehlo.collective_reduce\"(%x) ({\n"
        "  ^bb0(%a: tensor<i64>, %b: tensor<i64>):\n"
        "    %s = stablehlo.add %a, %b : tensor<i64>\n"
        "    stablehlo.return %s : tensor<i64>\n"
        "  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = "
        "#stablehlo.channel_handle<handle = 2, type = 1>} : (tensor<4xi64>) -> tensor<4xi64>\n"
        "  %1 = \"stablehlo.collective_broadcast\"(%x, %r) {replica_groups = dense<[[1, 0]]> : "
        "tensor<1x2xi64>, has_dynamic_root} : (tensor<4xi64>, tensor<1xi32>) -> tensor<4xi64>\n"
        "  %2 = \"stablehlo.all_reduce\"(%x) ({\n"
        "  ^bb0(%a: tensor<i64>, %b: tensor<i64>):\n"
        "    %s = stablehlo.multiply %a, %b : tensor<i64>\n"
        "    stablehlo.return %s : tensor<i64>\n"
        "  }) {replica_groups = dense<[[0, 3], [1, -1]]> : tensor<2x2xi64>, channel_handle = "
        "#stablehlo.channel_handle<handle = 1, type = 0>, use_global_device_ids} : "
        "(tensor<4xi64>) -> tensor<4xi64>\n"
        "  return %0, %1, %2 : tensor<4xi64>, tensor<4xi64>, tensor<4xi64>\n"
        "}\n";
    kiln_module *m;
    cr_assert_eq(kiln_module_parse(cx, src, strlen(src), NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text);
    if (strcmp(text, golden_collective_text) != 0) {
        FILE *f = fopen(test_tmp_path("print_collective_text.mlir"), "w");
        if (f) fputs(text, f), fclose(f);
        cr_assert_fail("the text differs from the golden (written to %s)",
                       test_tmp_path("print_collective_text.mlir"));
    }
    kiln_string_free(cx, text);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

const char *const golden_run_parallel =
    "module @kiln {\n"
    "  // calling convention of @main: 2 arguments, 2 results\n"
    "  //   donated arguments: none\n"
    "  //   preserved results (returned unchanged): none\n"
    "  //   aliased results (may reuse a donated buffer): none\n"
    "  func.func public @main(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>) -> (tensor<2xf32>, "
    "tensor<2xf32>) {\n"
    "    %0:2 = \"interpreter.run_parallel\"(%arg0, %arg1) ({\n"
    "    ^bb0(%arg2: tensor<2xf32>):\n"
    "      %1 = \"stablehlo.all_reduce\"(%arg2) <{replica_groups = dense<[[0, 1]]> : "
    "tensor<1x2xi64>}> ({\n"
    "      ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):\n"
    "        %2 = stablehlo.add %arg3, %arg4 : tensor<f32>\n"
    "        stablehlo.return %2 : tensor<f32>\n"
    "      }) : (tensor<2xf32>) -> tensor<2xf32>\n"
    "      stablehlo.return %1 : tensor<2xf32>\n"
    "    }, {\n"
    "    ^bb0(%arg2: tensor<2xf32>):\n"
    "      %1 = \"stablehlo.all_reduce\"(%arg2) <{replica_groups = dense<[[0, 1]]> : "
    "tensor<1x2xi64>}> ({\n"
    "      ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):\n"
    "        %2 = stablehlo.add %arg3, %arg4 : tensor<f32>\n"
    "        stablehlo.return %2 : tensor<f32>\n"
    "      }) : (tensor<2xf32>) -> tensor<2xf32>\n"
    "      stablehlo.return %1 : tensor<2xf32>\n"
    "    }) {num_partitions = 1 : i32, num_replicas = 2 : i32} : (tensor<2xf32>, "
    "tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)\n"
    "    return %0#0, %0#1 : tensor<2xf32>, tensor<2xf32>\n"
    "  }\n"
    "}\n";

/* run_parallel prints its programs inline (the interpreter's form names functions). */
Test(print, run_parallel) {
    kiln_ctx *cx = test_ctx();
    const char *src =
        "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %r = \"stablehlo.all_reduce\"(%x) ({\n"
        "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
        "    %s = stablehlo.add %a, %b : tensor<f32>\n"
        "    stablehlo.return %s : tensor<f32>\n"
        "  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xf32>) -> "
        "tensor<2xf32>\n"
        "  return %r : tensor<2xf32>\n"
        "}\n"
        "func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) "
        "{\n"
        "  %r:2 = \"interpreter.run_parallel\"(%a, %b) {programs = [[@f], [@f]]} :\n"
        "    (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)\n"
        "  return %r#0, %r#1 : tensor<2xf32>, tensor<2xf32>\n"
        "}\n";
    kiln_module *m;
    cr_assert_eq(kiln_module_parse(cx, src, strlen(src), NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text);
    if (strcmp(text, golden_run_parallel) != 0) {
        FILE *f = fopen(test_tmp_path("print_run_parallel.mlir"), "w");
        if (f) fputs(text, f), fclose(f);
        cr_assert_fail("the text differs from the golden (written to %s)",
                       test_tmp_path("print_run_parallel.mlir"));
    }
    kiln_string_free(cx, text);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}
