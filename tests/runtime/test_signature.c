/* SPDX-License-Identifier: Apache-2.0 */
/* Signatures: a module's and an executable's argument and result types, names, donation
 * (kiln_module_info_get, kiln_exe_info_get), result names kept through printing and
 * parsing (jax.result_info), and kiln_lower inferring its result count. */
#include "test_util.h"

typedef struct pair {
    kiln_tensor *w, *b;
} pair;

typedef struct step_out {
    kiln_tensor *loss;
    pair grads;
} step_out;

KILN_TREE_DEF(pair, KILN_FIELD(pair, w), KILN_FIELD(pair, b));
KILN_TREE_DEF(step_out, KILN_FIELD(step_out, loss), KILN_SUBTREE(step_out, grads, pair));

static kiln_status step(kiln_ctx *cx, const void *in, void *out, void *user) {
    (void)user;
    const pair *p = in;
    step_out *o = out;
    o->loss = kiln_sum(cx, kiln_multiply(cx, p->w, p->w), KILN_DIMS(0), false);
    o->grads.w = kiln_multiply(cx, p->w, kiln_scalar_like(cx, p->w, 2));
    o->grads.b = kiln_negate(cx, p->b);
    return kiln_ctx_status(cx);
}

static void expect_spec(const kiln_arg_spec *s, kiln_dtype dt, kiln_shape shape, const char *name,
                        bool donate) {
    cr_assert_eq(s->dtype, dt);
    cr_assert(kiln_shape_equal(&s->shape, &shape));
    if (name)
        cr_assert(s->name && strcmp(s->name, name) == 0, "name %s, expected %s",
                  s->name ? s->name : "(none)", name);
    else
        cr_assert_null(s->name, "unexpected name %s", s->name);
    cr_assert_eq(s->donate, donate);
}

Test(signature, tree_paths_name_arguments_and_results_through_print_and_parse) {
    kiln_ctx *cx = test_ctx();
    kiln_jit_options jo = kiln_jit_options_default();
    jo.donate_all = true;
    kiln_jit *jit;
    cr_assert_eq(kiln_jit_create_tree(cx, step, NULL, &kiln_tree_def_pair, &kiln_tree_def_step_out,
                                      &jo, &jit),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    pair in = {kiln_ones(cx, KILN_F32, KILN_SHAPE(3)), kiln_ones(cx, KILN_F32, KILN_SHAPE(2))};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_jit_lower(cx, jit, &in, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_info info;
    cr_assert_eq(kiln_module_info_get(cx, m, &info), KILN_OK);
    cr_assert_eq(info.n_args, 2);
    cr_assert_eq(info.n_results, 3);
    expect_spec(&info.args[0], KILN_F32, KILN_SHAPE(3), "w", true);
    expect_spec(&info.args[1], KILN_F32, KILN_SHAPE(2), "b", true);
    expect_spec(&info.results[0], KILN_F32, KILN_SHAPE_SCALAR, "loss", false);
    expect_spec(&info.results[1], KILN_F32, KILN_SHAPE(3), "grads.w", false);
    expect_spec(&info.results[2], KILN_F32, KILN_SHAPE(2), "grads.b", false);
    /* Printed as JAX prints them, and read back. */
    char *text = kiln_module_to_string(cx, m);
    cr_assert_not_null(text);
    cr_assert(strstr(text, "{jax.result_info = \"grads.w\"}"), "%s", text);
    kiln_module *back = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, strlen(text), NULL, &back), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_string_free(cx, text);
    cr_assert_eq(kiln_module_info_get(cx, back, &info), KILN_OK);
    expect_spec(&info.args[0], KILN_F32, KILN_SHAPE(3), "w", true);
    expect_spec(&info.results[0], KILN_F32, KILN_SHAPE_SCALAR, "loss", false);
    expect_spec(&info.results[2], KILN_F32, KILN_SHAPE(2), "grads.b", false);
    /* The executable has them too. */
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, back, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_exe_info ei;
    cr_assert_eq(kiln_exe_info_get(cx, exe, &ei), KILN_OK);
    expect_spec(&ei.args[1], KILN_F32, KILN_SHAPE(2), "b", true);
    expect_spec(&ei.results[1], KILN_F32, KILN_SHAPE(3), "grads.w", false);
    kiln_exe_release(exe);
    kiln_module_release(back);
    kiln_module_release(m);
    kiln_jit_release(jit);
    kiln_ctx_release(cx);
}

Test(signature, jax_result_info_is_read) {
    kiln_ctx *cx = test_ctx();
    static const char text[] =
        "module @jit_f {\n"
        "  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32> {jax.result_info = "
        "\"[0]\"}, tensor<f32> {jax.result_info = \"[1]['total']\"}) {\n"
        "    %0 = stablehlo.sine %arg0 : tensor<3xf32>\n"
        "    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
        "    %1 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = "
        "[0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>\n"
        "    return %0, %1 : tensor<3xf32>, tensor<f32>\n"
        "  }\n"
        "}\n";
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, text, sizeof text - 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_module_info info;
    cr_assert_eq(kiln_module_info_get(cx, m, &info), KILN_OK);
    expect_spec(&info.args[0], KILN_F32, KILN_SHAPE(3), NULL, false);
    expect_spec(&info.results[0], KILN_F32, KILN_SHAPE(3), "[0]", false);
    expect_spec(&info.results[1], KILN_F32, KILN_SHAPE_SCALAR, "[1]['total']", false);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status three_results(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_sine(cx, in[0]);
    out[1] = kiln_cosine(cx, in[0]);
    out[2] = kiln_add(cx, out[0], out[1]);
    return kiln_ctx_status(cx);
}

static kiln_status gap(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_sine(cx, in[0]);
    out[2] = kiln_cosine(cx, in[0]); /* out[1] left NULL */
    return kiln_ctx_status(cx);
}

Test(signature, lower_infers_the_result_count) {
    kiln_ctx *cx = test_ctx();
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(4)};
    kiln_module *m = NULL;
    kiln_lower_options lo = kiln_lower_options_default();
    lo.result_names = (const char *[]){"sin", NULL, "sum"};
    cr_assert_eq(kiln_lower(cx, &(kiln_region){three_results, NULL}, &a, 1,
                            KILN_LOWER_INFER_RESULTS, &lo, &m),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_info info;
    cr_assert_eq(kiln_module_info_get(cx, m, &info), KILN_OK);
    cr_assert_eq(info.n_results, 3);
    expect_spec(&info.results[0], KILN_F32, KILN_SHAPE(4), "sin", false);
    expect_spec(&info.results[1], KILN_F32, KILN_SHAPE(4), NULL, false);
    expect_spec(&info.results[2], KILN_F32, KILN_SHAPE(4), "sum", false);
    kiln_module_release(m);
    kiln_lower(cx, &(kiln_region){gap, NULL}, &a, 1, KILN_LOWER_INFER_RESULTS, NULL, &m);
    expect_error(cx, KILN_INVALID_ARGUMENT, "the function stored no tensor for result 2");
    kiln_lower(cx, &(kiln_region){gap, NULL}, &a, 1, -2, NULL, &m);
    expect_error(cx, KILN_INVALID_ARGUMENT, "n_results -2");
    kiln_ctx_release(cx);
}

Test(signature, static_argnums_are_for_list_mode) {
    kiln_ctx *cx = test_ctx();
    kiln_jit_options o = kiln_jit_options_default();
    o.static_argnums = (int32_t[]){0};
    o.n_static_argnums = 1;
    kiln_jit *jit = NULL;
    kiln_jit_create_tree(cx, step, NULL, &kiln_tree_def_pair, &kiln_tree_def_step_out, &o, &jit);
    expect_error(cx, KILN_INVALID_ARGUMENT, "static_argnums is for list mode");
    cr_assert_null(jit);
    kiln_ctx_release(cx);
}

Test(signature, lower_tree_traces_a_function_of_structs) {
    kiln_ctx *cx = test_ctx();
    pair in = {kiln_ones(cx, KILN_F32, KILN_SHAPE(3)), kiln_ones(cx, KILN_F32, KILN_SHAPE(2))};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower_tree(cx, step, NULL, &kiln_tree_def_pair, &in, &kiln_tree_def_step_out,
                                 NULL, &m),
                 KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_module_info info;
    cr_assert_eq(kiln_module_info_get(cx, m, &info), KILN_OK);
    expect_spec(&info.args[1], KILN_F32, KILN_SHAPE(2), "b", false);
    expect_spec(&info.results[1], KILN_F32, KILN_SHAPE(3), "grads.w", false);
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK);
    kiln_tensor *r[3];
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){in.w, in.b}, r), KILN_OK);
    cr_assert_float_eq(*(const float *)kiln_tensor_data(r[0]), 3.0f, 0);
    kiln_exe_release(exe);
    kiln_module_release(m);
    pair missing = {in.w, NULL};
    kiln_lower_tree(cx, step, NULL, &kiln_tree_def_pair, &missing, &kiln_tree_def_step_out, NULL,
                    &m);
    expect_error(cx, KILN_INVALID_ARGUMENT, "'b' is NULL");
    kiln_lower_tree(cx, step, NULL, NULL, &in, &kiln_tree_def_step_out, NULL, &m);
    expect_error(cx, KILN_INVALID_ARGUMENT, "in_def");
    kiln_lower_options lo = kiln_lower_options_default();
    lo.struct_size = 4;
    kiln_lower_tree(cx, step, NULL, &kiln_tree_def_pair, &in, &kiln_tree_def_step_out, &lo, &m);
    expect_error(cx, KILN_INVALID_ARGUMENT, "options->struct_size is 4");
    cr_assert_null(m);
    kiln_ctx_release(cx);
}
