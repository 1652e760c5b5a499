/* SPDX-License-Identifier: Apache-2.0 */
#define _POSIX_C_SOURCE 200809L
/* The backend interface seen from outside: the registry and its listing, a toy backend
 * built here against backend/backend.h alone, logical CPU devices, moving tensors between
 * them, and events. */
#include <math.h>
#include <pthread.h>

#include "backend/event.h"
#include "backend/registry.h"
#include "test_util.h"
#include "toy_backend.h"

static kiln_ctx *ctx_with_devices(int n) {
    kiln_ctx_options o = kiln_ctx_options_default();
    o.cpu_devices = n;
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    return cx;
}

static kiln_status axpy(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_tensor *two = kiln_full(cx, KILN_F32, KILN_SHAPE(4), 2.0);
    out[0] = kiln_add(cx, kiln_multiply(cx, two, in[0]), kiln_negate(cx, in[1]));
    return kiln_ctx_status(cx);
}

static kiln_module *lower_axpy(kiln_ctx *cx) {
    kiln_arg_spec specs[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(4)},
                              {.dtype = KILN_F32, .shape = KILN_SHAPE(4)}};
    kiln_region fn = {axpy, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, specs, 2, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    return m;
}

static kiln_tensor *vec4(kiln_ctx *cx, float a, float b, float c, float d) {
    return kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), (float[]){a, b, c, d},
                                 4 * sizeof(float));
}

static void expect_values(const kiln_tensor *t, float a, float b, float c, float d) {
    cr_assert_not_null(t);
    const float *v = kiln_tensor_data(t), want[4] = {a, b, c, d};
    cr_assert_not_null(v);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(v[i], want[i], 0, "element %d: %g, expected %g", i, v[i], want[i]);
}

/* ---- the registry ------------------------------------------------------------------------ */

Test(backend, the_builtin_backends_are_listed) {
    kiln_ctx *cx = test_ctx();
    cr_assert_geq(kiln_backend_count(cx), 2);
    kiln_backend_info info;
    cr_assert_eq(kiln_backend_info_get(cx, 0, &info), KILN_OK);
    cr_assert_str_eq(info.name, "cpu");
    cr_assert(info.available);
    cr_assert_str_eq(info.reason, "");
    cr_assert_eq(info.device_type, KILN_DEVICE_TYPE_CPU);
    cr_assert_eq(info.n_devices, 1);
    cr_assert_eq(kiln_backend_info_get(cx, 1, &info), KILN_OK);
    cr_assert_str_eq(info.name, "interpreter");
    cr_assert(info.available);
    /* cuda is listed with the reason it cannot run (no driver here, or not complete yet) */
    cr_assert_eq(kiln_backend_info_get(cx, 2, &info), KILN_OK);
    cr_assert_str_eq(info.name, "cuda");
    cr_assert_eq(info.device_type, KILN_DEVICE_TYPE_CUDA);
    cr_assert_not(info.available);
    cr_assert(strstr(info.reason, "CUDA driver") || strstr(info.reason, "does not run programs"),
              "%s", info.reason);
    cr_assert_eq(kiln_backend_info_get(cx, 99, &info), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_backend_info_get: index 99 is out of range");
    cr_assert_eq(kiln_backend_info_get(cx, 0, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "out_info is NULL");
    cr_assert_eq(kiln_backend_info_get(NULL, 0, &info), KILN_INVALID_ARGUMENT);
    cr_assert_eq(kiln_backend_count(NULL), 0);
    cr_assert_eq(kiln_device_count(cx, KILN_DEVICE_TYPE_CPU), 1);
    cr_assert_eq(kiln_device_count(cx, KILN_DEVICE_TYPE_CUDA), 0);
    cr_assert_eq(kiln_device_count(NULL, KILN_DEVICE_TYPE_CPU), 0);
    kiln_ctx_release(cx);
}

Test(backend, unknown_and_unavailable_backends_are_reported_not_crashed_on) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = lower_axpy(cx);
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = "tpu";
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_NOT_FOUND);
    cr_assert_null(exe);
    expect_error(cx, KILN_NOT_FOUND,
                 "kiln_compile: no backend named 'tpu' (known: cpu, interpreter, cuda)");
    /* A backend that cannot run here stays listed, with its reason. */
    cr_assert_eq(kiln__backend_register(cx, &toy_missing_backend), KILN_OK);
    kiln_backend_info info;
    cr_assert_eq(kiln_backend_info_get(cx, kiln_backend_count(cx) - 1, &info), KILN_OK);
    cr_assert_str_eq(info.name, "toy-missing");
    cr_assert_not(info.available);
    cr_assert_str_eq(info.reason, "no toy accelerator in this machine");
    cr_assert_eq(info.n_devices, 0);
    o.backend = "toy-missing";
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_UNAVAILABLE);
    expect_error(cx, KILN_UNAVAILABLE,
                 "backend 'toy-missing' is unavailable: no toy accelerator in this machine");
    /* Its device type: the unavailable backend's reason, not a crash. */
    o.backend = NULL;
    o.device = (kiln_device){KILN_DEVICE_TYPE_CUDA, 0};
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_UNAVAILABLE);
    expect_error(cx, KILN_UNAVAILABLE, "device cuda:0: backend 'cuda' is unavailable");
    kiln_tensor *x = vec4(cx, 1, 2, 3, 4);
    cr_assert_null(kiln_tensor_to_device(cx, x, o.device));
    expect_error(cx, KILN_UNAVAILABLE, "kiln_tensor_to_device: device cuda:0");
    cr_assert_eq(kiln_device_count(cx, KILN_DEVICE_TYPE_CUDA), 0);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(backend, bad_tables_are_refused) {
    kiln_ctx *cx = test_ctx();
    kiln__backend b = toy_backend;
    b.version = 1;
    cr_assert_eq(kiln__backend_register(cx, &b), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "backend 'toy' is refused: it implements another");
    b = toy_backend;
    b.struct_size = 16;
    cr_assert_eq(kiln__backend_register(cx, &b), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "smaller than interface version 3");
    b = toy_backend;
    b.execute = NULL;
    cr_assert_eq(kiln__backend_register(cx, &b), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "a required entry is NULL");
    b = toy_backend;
    b.name = "cpu";
    cr_assert_eq(kiln__backend_register(cx, &b), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "a backend named 'cpu' is already listed");
    cr_assert_eq(kiln__backend_register(cx, NULL), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "backend is NULL");
    cr_assert_eq(kiln_backend_count(cx), 3);
    kiln_ctx_release(cx);
}

/* ---- a backend from outside ------------------------------------------------------------- */

Test(backend, a_toy_backend_built_on_the_interface_alone_runs_a_program) {
    kiln_ctx *cx = test_ctx();
    cr_assert_eq(kiln__backend_register(cx, &toy_backend), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_module *m = lower_axpy(cx);
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = "toy";
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_exe_info info;
    cr_assert_eq(kiln_exe_info_get(cx, exe, &info), KILN_OK);
    cr_assert_str_eq(info.backend, "toy");
    cr_assert_eq(info.device.type, KILN_DEVICE_TYPE_CPU);
    char *text = kiln_exe_to_string(cx, exe);
    cr_assert_not_null(text);
    cr_assert(strstr(text, "backend toy prints nothing"), "%s", text);
    kiln_string_free(cx, text);
    /* Each call finishes on the toy's worker thread, through the interface's event. */
    for (int round = 0; round < 3; round++) {
        kiln_scope_begin(cx);
        kiln_tensor *x = vec4(cx, 1, 2, 3, (float)round), *y = vec4(cx, 10, 20, 30, 40), *r = NULL;
        cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, &r), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        expect_values(r, -8, -16, -24, 2.0f * (float)round - 40);
        kiln_scope_end(cx);
    }
    kiln_exe_release(exe);
    kiln_module_release(m);
    expect_ok(cx);
    kiln_ctx_release(cx);
}

static kiln_status uses_exp(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_exponential(cx, in[0]);
    return kiln_ctx_status(cx);
}

/* Registers the toy backend in a new ctx and lowers fn over one f32 or f64 [4] argument:
 * what the tests of a compile the toy refuses start from. */
static kiln_ctx *toy_module(kiln_region fn, kiln_dtype dtype, kiln_module **m) {
    kiln_ctx *cx = test_ctx();
    cr_assert_eq(kiln__backend_register(cx, &toy_backend), KILN_OK);
    kiln_arg_spec spec = {.dtype = dtype, .shape = KILN_SHAPE(4)};
    cr_assert_eq(kiln_lower(cx, &fn, &spec, 1, 1, NULL, m), KILN_OK);
    return cx;
}

Test(backend, a_backend_refuses_what_it_cannot_run) {
    kiln_module *m = NULL;
    kiln_ctx *cx = toy_module((kiln_region){uses_exp, NULL}, KILN_F32, &m);
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = "toy";
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_UNIMPLEMENTED);
    cr_assert_null(exe);
    /* kiln_compile asks supports_op first, and names the op, where it is and the backend */
    expect_error(cx, KILN_UNIMPLEMENTED,
                 "kiln_compile: backend 'toy' cannot run stablehlo.exponential (@main, op 0)");
    /* The builtins still compile it. */
    o.backend = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status negates(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_negate(cx, in[0]);
    return kiln_ctx_status(cx);
}

Test(backend, an_op_the_backend_supports_may_still_be_refused_by_its_compile) {
    kiln_module *m = NULL;
    kiln_ctx *cx = toy_module((kiln_region){negates, NULL}, KILN_F64, &m);
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = "toy";
    kiln_exe *exe = NULL;
    /* negate is supported; an f64 one is not, and the toy's compile says so */
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_UNIMPLEMENTED);
    cr_assert_null(exe);
    expect_error(cx, KILN_UNIMPLEMENTED, "toy: cannot compile negate");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status counts_below(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_compare(cx, s[0], s[1], KILN_CMP_LT, KILN_CMP_DEFAULT);
    return kiln_ctx_status(cx);
}

static kiln_status exp_step(kiln_ctx *cx, kiln_tensor *const *s, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_add(cx, s[0], kiln_scalar_like(cx, s[0], 1));
    r[1] = s[1];
    r[2] = kiln_exponential(cx, s[2]);
    return kiln_ctx_status(cx);
}

static kiln_status exp_loop(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    kiln_region cond = {counts_below, NULL}, body = {exp_step, NULL};
    kiln_tensor *w[3], *init[3] = {kiln_scalar_like(cx, in[0], 0), in[0], in[1]};
    if (kiln_while(cx, init, 3, &cond, &body, w) != KILN_OK) return kiln_ctx_status(cx);
    out[0] = w[2];
    return kiln_ctx_status(cx);
}

static bool all_but_exponential(kiln_op op, kiln_dtype dtype) {
    (void)dtype;
    return op != KILN_OP_EXPONENTIAL;
}

Test(backend, the_first_op_a_backend_cannot_run_is_named_inside_its_region) {
    kiln_ctx *cx = test_ctx();
    kiln__backend b = toy_backend;
    b.name = "toy-no-exp";
    b.supports_op = all_but_exponential;
    cr_assert_eq(kiln__backend_register(cx, &b), KILN_OK);
    kiln_arg_spec specs[2] = {{.dtype = KILN_I64, .shape = KILN_SHAPE_SCALAR},
                              {.dtype = KILN_F32, .shape = KILN_SHAPE(4)}};
    kiln_region fn = {exp_loop, NULL};
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, specs, 2, 1, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = "toy-no-exp";
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_UNIMPLEMENTED);
    cr_assert_null(exe);
    /* the while's body is its region 1 */
    cr_assert(strstr(kiln_ctx_error_message(cx), ", region 1, op "), "%s",
              kiln_ctx_error_message(cx));
    expect_error(cx, KILN_UNIMPLEMENTED,
                 "kiln_compile: backend 'toy-no-exp' cannot run stablehlo.exponential (@main, op ");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* ---- logical CPU devices ---------------------------------------------------------------- */

Test(backend, cpu_devices_are_counted_and_checked) {
    kiln_ctx *cx = ctx_with_devices(3);
    cr_assert_eq(kiln_device_count(cx, KILN_DEVICE_TYPE_CPU), 3);
    kiln_backend_info info;
    cr_assert_eq(kiln_backend_info_get(cx, 0, &info), KILN_OK);
    cr_assert_eq(info.n_devices, 3);
    kiln_ctx_release(cx);
    kiln_ctx_options o = kiln_ctx_options_default();
    kiln_ctx *bad = (kiln_ctx *)1;
    o.cpu_devices = 2;
    o.device = (kiln_device){KILN_DEVICE_TYPE_CPU, 2};
    cr_assert_eq(kiln_ctx_create(&o, &bad), KILN_INVALID_ARGUMENT);
    cr_assert_null(bad);
    o.device = KILN_DEVICE_CPU;
    o.cpu_devices = -1;
    cr_assert_eq(kiln_ctx_create(&o, &bad), KILN_INVALID_ARGUMENT);
    o.cpu_devices = 257;
    cr_assert_eq(kiln_ctx_create(&o, &bad), KILN_INVALID_ARGUMENT);
    /* The default comes from KILN_CPU_DEVICES; nonsense there means 1. */
    setenv("KILN_CPU_DEVICES", "4", 1);
    cx = test_ctx();
    cr_assert_eq(kiln_device_count(cx, KILN_DEVICE_TYPE_CPU), 4);
    kiln_ctx_release(cx);
    setenv("KILN_CPU_DEVICES", "lots", 1);
    cx = test_ctx();
    cr_assert_eq(kiln_device_count(cx, KILN_DEVICE_TYPE_CPU), 1);
    kiln_ctx_release(cx);
    unsetenv("KILN_CPU_DEVICES");
}

Test(backend, tensors_move_between_devices_and_ops_run_where_their_operands_are) {
    kiln_ctx *cx = ctx_with_devices(2);
    kiln_device d0 = KILN_DEVICE_CPU, d1 = {KILN_DEVICE_TYPE_CPU, 1};
    kiln_tensor *x = vec4(cx, 1, 2, 3, 4);
    cr_assert_eq(kiln_tensor_device(x).id, 0);
    kiln_tensor *x1 = kiln_tensor_to_device(cx, x, d1);
    cr_assert_not_null(x1, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_device(x1).id, 1);
    cr_assert_neq(kiln_tensor_data(x1), kiln_tensor_data(x), "a copy, not a view");
    expect_values(x1, 1, 2, 3, 4);
    /* An eager op runs on its operands' device, and its result lives there. */
    kiln_tensor *y1 = kiln_multiply(cx, x1, x1);
    cr_assert_not_null(y1, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_device(y1).id, 1);
    expect_values(y1, 1, 4, 9, 16);
    /* Made without operands: on the ctx's device. */
    cr_assert_eq(kiln_tensor_device(kiln_zeros(cx, KILN_F32, KILN_SHAPE(2))).id, 0);
    /* Mixing devices is refused, naming both. */
    cr_assert_null(kiln_add(cx, x, x1));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_add: operand 1 is on device cpu:0 and operand 2 on device cpu:1");
    /* Back again; to the same device is a view. */
    kiln_tensor *back = kiln_tensor_to_device(cx, y1, d0);
    cr_assert_eq(kiln_tensor_device(back).id, 0);
    expect_values(back, 1, 4, 9, 16);
    kiln_tensor *same = kiln_tensor_to_device(cx, back, d0);
    cr_assert_eq(kiln_tensor_data(same), kiln_tensor_data(back));
    /* Errors. */
    cr_assert_null(kiln_tensor_to_device(cx, x, (kiln_device){KILN_DEVICE_TYPE_CPU, 2}));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_tensor_to_device: no device cpu:2");
    cr_assert_null(kiln_tensor_to_device(cx, NULL, d1));
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_tensor_to_device: tensor is NULL");
    cr_assert_null(kiln_tensor_to_device(NULL, x, d1));
    kiln_ctx_release(cx);
}

/* Runs an executable compiled for each device on its own thread, at once. */
typedef struct device_job {
    kiln_exe *exe;
    int device;
    float got[4];
    char error[256];
} device_job;

static void *device_worker(void *p) {
    device_job *j = p;
    kiln_ctx *cx = ctx_with_devices(2);
    kiln_device d = {KILN_DEVICE_TYPE_CPU, j->device};
    for (int i = 0; i < 200 && !j->error[0]; i++) {
        kiln_scope_begin(cx);
        kiln_tensor *x = kiln_tensor_to_device(cx, vec4(cx, 1, 2, 3, (float)j->device), d);
        kiln_tensor *y = kiln_tensor_to_device(cx, vec4(cx, 1, 1, 1, 1), d), *r = NULL;
        if (kiln_exe_call(cx, j->exe, (kiln_tensor *[]){x, y}, &r) != KILN_OK)
            snprintf(j->error, sizeof j->error, "%s", kiln_ctx_error_message(cx));
        else if (kiln_tensor_device(r).id != j->device)
            snprintf(j->error, sizeof j->error, "result on cpu:%d", kiln_tensor_device(r).id);
        else
            memcpy(j->got, kiln_tensor_data(r), sizeof j->got);
        kiln_scope_end(cx);
    }
    kiln_ctx_release(cx);
    return NULL;
}

Test(backend, an_executable_per_device_runs_concurrently_and_checks_its_arguments_device) {
    kiln_ctx *cx = ctx_with_devices(2);
    kiln_module *m = lower_axpy(cx);
    device_job jobs[2] = {{0}, {0}};
    for (int d = 0; d < 2; d++) {
        kiln_compile_options o = kiln_compile_options_default();
        o.device = (kiln_device){KILN_DEVICE_TYPE_CPU, d};
        o.backend = d ? "interpreter" : NULL;
        cr_assert_eq(kiln_compile(cx, m, &o, &jobs[d].exe), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        kiln_exe_info info;
        cr_assert_eq(kiln_exe_info_get(cx, jobs[d].exe, &info), KILN_OK);
        cr_assert_eq(info.device.id, d);
        cr_assert_str_eq(info.backend, d ? "interpreter" : "cpu");
        jobs[d].device = d;
    }
    pthread_t t[2];
    for (int d = 0; d < 2; d++)
        cr_assert_eq(pthread_create(&t[d], NULL, device_worker, &jobs[d]), 0);
    for (int d = 0; d < 2; d++) {
        pthread_join(t[d], NULL);
        cr_assert_str_eq(jobs[d].error, "", "device %d: %s", d, jobs[d].error);
        cr_assert_float_eq(jobs[d].got[3], 2.0f * (float)d - 1, 0);
    }
    /* An argument on the other device is refused, naming both devices. */
    kiln_tensor *x = vec4(cx, 1, 2, 3, 4), *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, jobs[1].exe, (kiln_tensor *[]){x, x}, &r),
                 KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_exe_call: args[0] is on device cpu:0, not on the executable's device cpu:1");
    /* A device the ctx does not have. */
    kiln_compile_options o = kiln_compile_options_default();
    o.device = (kiln_device){KILN_DEVICE_TYPE_CPU, 5};
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_compile: no device cpu:5 (backend 'cpu' offers cpu:0 to cpu:1)");
    for (int d = 0; d < 2; d++)
        kiln_exe_release(jobs[d].exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

static kiln_status double_it(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *u) {
    (void)u;
    out[0] = kiln_add(cx, in[0], in[0]);
    return kiln_ctx_status(cx);
}

Test(backend, the_jit_cache_keys_on_the_device) {
    kiln_ctx *c0 = ctx_with_devices(2);
    kiln_ctx_options o = kiln_ctx_options_default();
    o.cpu_devices = 2;
    o.device = (kiln_device){KILN_DEVICE_TYPE_CPU, 1};
    kiln_ctx *c1 = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &c1), KILN_OK);
    kiln_jit *f = NULL;
    cr_assert_eq(kiln_jit_create(c0, &(kiln_region){double_it, NULL}, 1, 1, NULL, &f), KILN_OK,
                 "%s", kiln_ctx_error_message(c0));
    kiln_ctx *cs[2] = {c0, c1};
    for (int round = 0; round < 2; round++)
        for (int d = 0; d < 2; d++) {
            kiln_scope_begin(cs[d]);
            kiln_tensor *x = vec4(cs[d], 1, 2, 3, 4), *y = NULL;
            cr_assert_eq(kiln_tensor_device(x).id, d);
            cr_assert_eq(kiln_jit_call_list(cs[d], f, &x, &y), KILN_OK, "%s",
                         kiln_ctx_error_message(cs[d]));
            cr_assert_eq(kiln_tensor_device(y).id, d);
            expect_values(y, 2, 4, 6, 8);
            kiln_scope_end(cs[d]);
        }
    kiln_jit_stats st;
    cr_assert_eq(kiln_jit_stats_get(c0, f, &st), KILN_OK);
    cr_assert_eq(st.compiles, 2, "one specialization per device");
    kiln_jit_release(f);
    kiln_ctx_release(c1);
    kiln_ctx_release(c0);
}

/* ---- events ----------------------------------------------------------------------------- */

static void *complete_later(void *p) {
    kiln__event *e = p;
    kiln__event_complete(e, KILN_DATA_LOSS, "the copy lost bytes");
    kiln__event_complete(e, KILN_OK, NULL); /* the first completion stays */
    kiln__event_release(e);
    return NULL;
}

Test(backend, events_complete_on_another_thread_with_their_status) {
    kiln_ctx *cx = test_ctx();
    kiln__event *e = kiln__event_new(cx, "test");
    cr_assert_not_null(e);
    cr_assert_not(kiln__event_ready(e));
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, complete_later, kiln__event_retain(e)), 0);
    cr_assert_eq(kiln__event_wait(cx, e), KILN_DATA_LOSS);
    expect_error(cx, KILN_DATA_LOSS, "the copy lost bytes");
    cr_assert(kiln__event_ready(e));
    pthread_join(t, NULL);
    kiln__event_release(e);
    cr_assert(kiln__event_ready(NULL));
    cr_assert_eq(kiln__event_finish(cx, NULL), KILN_OK);
    kiln_ctx_release(cx);
}

static kiln_status constant_and_sum(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                    void *u) {
    (void)u;
    kiln_tensor *c = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), (float[]){5, 6, 7, 8},
                                           4 * sizeof(float));
    out[0] = c; /* a constant of the module, made on the ctx's device (cpu:0) */
    out[1] = kiln_add(cx, in[0], c);
    return kiln_ctx_status(cx);
}

Test(backend, every_result_of_an_executable_is_on_its_device) {
    kiln_ctx *cx = ctx_with_devices(2);
    kiln_arg_spec spec = {.dtype = KILN_F32, .shape = KILN_SHAPE(4)};
    kiln_region fn = {constant_and_sum, NULL};
    kiln_device d1 = {KILN_DEVICE_TYPE_CPU, 1};
    const char *backends[TEST_MAX_BACKENDS];
    int n = test_backends(backends, TEST_MAX_BACKENDS);
    for (int b = 0; b < n; b++) {
        for (int fold = 0; fold < 2; fold++) {
            kiln_module *m = NULL;
            cr_assert_eq(kiln_lower(cx, &fn, &spec, 1, 2, NULL, &m), KILN_OK);
            kiln_compile_options o = kiln_compile_options_default();
            o.device = d1;
            o.backend = backends[b];
            o.disable_constant_folding = fold == 0;
            kiln_exe *exe = NULL;
            cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
            kiln_module_release(m);
            kiln_scope_begin(cx);
            kiln_tensor *x = kiln_tensor_to_device(cx, vec4(cx, 1, 1, 1, 1), d1), *r[2] = {0};
            cr_assert_eq(kiln_exe_call(cx, exe, &x, r), KILN_OK, "%s", kiln_ctx_error_message(cx));
            for (int i = 0; i < 2; i++)
                cr_assert_eq(kiln_tensor_device(r[i]).id, 1, "%s: result %d on cpu:%d", backends[b],
                             i, (int)kiln_tensor_device(r[i]).id);
            expect_values(r[0], 5, 6, 7, 8);
            expect_values(r[1], 6, 7, 8, 9);
            kiln_scope_end(cx);
            kiln_exe_release(exe);
        }
    }
    kiln_ctx_release(cx);
}

Test(backend, the_ctx_names_kiln_compiles_default_backend) {
    kiln_ctx_options o = kiln_ctx_options_default();
    o.backend = "interpreter";
    kiln_ctx *cx = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_OK);
    kiln_module *m = lower_axpy(cx);
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_exe_info info;
    cr_assert_eq(kiln_exe_info_get(cx, exe, &info), KILN_OK);
    cr_assert_str_eq(info.backend, "interpreter");
    char *text = kiln_exe_to_string(cx, exe);
    cr_assert(strstr(text, "(interpreter): 2 args, 1 results, 3 ops"), "%s", text);
    cr_assert(strstr(text, "stablehlo.multiply"), "%s", text);
    kiln_string_free(cx, text);
    kiln_exe_release(exe);
    /* The compile options still choose. */
    kiln_compile_options co = kiln_compile_options_default();
    co.backend = "cpu";
    cr_assert_eq(kiln_compile(cx, m, &co, &exe), KILN_OK);
    cr_assert_eq(kiln_exe_info_get(cx, exe, &info), KILN_OK);
    cr_assert_str_eq(info.backend, "cpu");
    kiln_exe_release(exe);
    /* The interpreter makes every result afresh: it cannot promise no allocation. */
    co.backend = "interpreter";
    co.assert_nonallocating = true;
    cr_assert_eq(kiln_compile(cx, m, &co, &exe), KILN_FAILED_PRECONDITION);
    expect_error(cx, KILN_FAILED_PRECONDITION,
                 "assert_nonallocating: the interpreter backend makes result 0 afresh");
    kiln_module_release(m);
    kiln_ctx_release(cx);

    /* From the environment; an unknown name is reported when compiling. */
    setenv("KILN_BACKEND", "abacus", 1);
    cx = test_ctx();
    m = lower_axpy(cx);
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_NOT_FOUND);
    expect_error(cx, KILN_NOT_FOUND, "no backend named 'abacus'");
    kiln_module_release(m);
    kiln_ctx_release(cx);
    unsetenv("KILN_BACKEND");
    char long_name[80];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    o.backend = long_name;
    cx = (kiln_ctx *)1;
    cr_assert_eq(kiln_ctx_create(&o, &cx), KILN_INVALID_ARGUMENT);
    cr_assert_null(cx);
}

/* ---- a backend with device memory ------------------------------------------------------- */

Test(backend, device_memory_is_allocated_and_copied_by_its_backend_through_events) {
    kiln_ctx *cx = test_ctx();
    cr_assert_eq(kiln__backend_register(cx, &toy_device_backend), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_device_count(cx, KILN_DEVICE_TYPE_EXT), 2);
    int live = atomic_load(&toy_live_buffers), copies = atomic_load(&toy_copies);
    kiln_device e0 = {KILN_DEVICE_TYPE_EXT, 0}, e1 = {KILN_DEVICE_TYPE_EXT, 1};
    kiln_scope_begin(cx);
    kiln_tensor *x = vec4(cx, 1, 2, 3, 4);
    kiln_tensor *xd = kiln_tensor_to_device(cx, x, e0); /* host -> device */
    cr_assert_not_null(xd, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_device(xd).type, KILN_DEVICE_TYPE_EXT);
    cr_assert_eq(atomic_load(&toy_live_buffers), live + 1);
    /* The host cannot read it in place: every reader says so. */
    cr_assert_null(kiln_tensor_data(xd));
    cr_assert(isnan(kiln_tensor_item(cx, xd, 0)));
    expect_error(cx, KILN_FAILED_PRECONDITION,
                 "kiln_tensor_item: the tensor is on device ext:0, whose memory the host cannot "
                 "read");
    cr_assert_null(kiln_tensor_to_string(cx, xd, NULL));
    expect_error(cx, KILN_FAILED_PRECONDITION, "kiln_tensor_to_string: the tensor is on device");
    void *npy = NULL;
    size_t npy_size = 0;
    cr_assert_eq(kiln_npy_save_buffer(cx, xd, &npy, &npy_size), KILN_FAILED_PRECONDITION);
    expect_error(cx, KILN_FAILED_PRECONDITION, "kiln_npy_save_buffer: the tensor is on device");
    /* Eager ops run on the device's backend, into its memory. */
    kiln_tensor *yd = kiln_add(cx, xd, kiln_multiply(cx, xd, xd));
    cr_assert_not_null(yd, "%s", kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_device(yd).type, KILN_DEVICE_TYPE_EXT);
    float back[4];
    cr_assert_eq(kiln_tensor_to_host(cx, yd, back, sizeof back), KILN_OK, "%s", /* device -> host */
                 kiln_ctx_error_message(cx));
    cr_assert_float_eq(back[3], 20, 0);
    /* What the backend cannot run, and mixing memories, are refused. */
    cr_assert_null(kiln_exponential(cx, xd));
    expect_error(cx, KILN_UNIMPLEMENTED, "toy: exponential is not supported");
    cr_assert_null(kiln_add(cx, x, xd));
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "operand 1 is on device cpu:0 and operand 2 on device ext:0");
    /* Device to device, and back to a CPU device. */
    kiln_tensor *y1 = kiln_tensor_to_device(cx, yd, e1);
    cr_assert_eq(kiln_tensor_device(y1).id, 1);
    kiln_tensor *yc = kiln_tensor_to_device(cx, y1, KILN_DEVICE_CPU);
    expect_values(yc, 2, 6, 12, 20);
    cr_assert_geq(atomic_load(&toy_copies), copies + 4, "every move went through the backend");
    /* A program compiled for the device: the device type's only backend takes it. */
    kiln_module *m = lower_axpy(cx);
    kiln_compile_options o = kiln_compile_options_default();
    o.device = e1;
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_exe_info info;
    cr_assert_eq(kiln_exe_info_get(cx, exe, &info), KILN_OK);
    cr_assert_str_eq(info.backend, "toy-device");
    kiln_tensor *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){y1, y1}, &r), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_tensor_device(r).type, KILN_DEVICE_TYPE_EXT);
    expect_values(kiln_tensor_to_device(cx, r, KILN_DEVICE_CPU), 2, 6, 12, 20);
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, x}, &r), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "args[0] is on device cpu:0, not on the executable's "
                 "device ext:1");
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_scope_end(cx);
    cr_assert_eq(atomic_load(&toy_live_buffers), live, "every device buffer was freed");
    expect_ok(cx);
    kiln_ctx_release(cx);
}

Test(backend, a_device_backend_without_copies_is_refused) {
    kiln_ctx *cx = test_ctx();
    kiln__backend b = toy_device_backend;
    b.copy_to_host = NULL;
    cr_assert_eq(kiln__backend_register(cx, &b), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "cannot copy to and from the host");
    kiln_ctx_release(cx);
}

static void keep_line(void *user, kiln_log_level level, const char *message) {
    (void)level;
    char *buf = user;
    if (strstr(message, "compiled specialization")) snprintf(buf, 512, "%s", message);
}

Test(backend, a_jit_compiles_with_its_creating_ctxs_default_backend) {
    char line_i[512] = "", line_d[512] = "";
    kiln_ctx_options o = kiln_ctx_options_default();
    o.backend = "interpreter";
    o.log_fn = keep_line;
    o.log_user = line_i;
    o.log_level = KILN_LOG_INFO;
    kiln_ctx *ci = NULL, *cd = NULL;
    cr_assert_eq(kiln_ctx_create(&o, &ci), KILN_OK);
    o.backend = NULL;
    o.log_user = line_d;
    cr_assert_eq(kiln_ctx_create(&o, &cd), KILN_OK);
    kiln_jit *f = NULL;
    cr_assert_eq(kiln_jit_create(ci, &(kiln_region){double_it, NULL}, 1, 1, NULL, &f), KILN_OK);
    /* Called first from a ctx whose default is the cpu backend: the jit's is the
     * interpreter, and both ctxs share its one entry. */
    kiln_ctx *cs[2] = {cd, ci};
    for (int i = 0; i < 2; i++) {
        kiln_scope_begin(cs[i]);
        kiln_tensor *x = vec4(cs[i], 1, 2, 3, 4), *y = NULL;
        cr_assert_eq(kiln_jit_call_list(cs[i], f, &x, &y), KILN_OK, "%s",
                     kiln_ctx_error_message(cs[i]));
        expect_values(y, 2, 4, 6, 8);
        kiln_scope_end(cs[i]);
    }
    cr_assert(strstr(line_d, "(backend interpreter)"), "%s", line_d);
    cr_assert_str_eq(line_i, "", "one compile only");
    kiln_jit_stats st;
    cr_assert_eq(kiln_jit_stats_get(ci, f, &st), KILN_OK);
    cr_assert_eq(st.compiles, 1);
    kiln_jit_release(f);
    kiln_ctx_release(cd);
    kiln_ctx_release(ci);
}

Test(backend, the_list_has_room_for_sixteen_backends) {
    kiln_ctx *cx = test_ctx();
    static char names[KILN__MAX_BACKENDS][16];
    static kiln__backend tables[KILN__MAX_BACKENDS];
    int32_t listed = kiln_backend_count(cx);
    for (int32_t i = 0; i < KILN__MAX_BACKENDS; i++) {
        snprintf(names[i], sizeof names[i], "toy%d", (int)i);
        tables[i] = toy_backend;
        tables[i].name = names[i];
    }
    for (int32_t i = 0; listed + i < KILN__MAX_BACKENDS; i++)
        cr_assert_eq(kiln__backend_register(cx, &tables[i]), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_backend_count(cx), KILN__MAX_BACKENDS);
    cr_assert_eq(kiln__backend_register(cx, &tables[KILN__MAX_BACKENDS - 1]),
                 KILN_RESOURCE_EXHAUSTED);
    expect_error(cx, KILN_RESOURCE_EXHAUSTED, "16 backends are listed already");
    kiln_ctx_release(cx);
}

Test(backend, a_named_backend_must_run_on_the_device_asked_for) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = lower_axpy(cx);
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = "interpreter";
    o.device = (kiln_device){KILN_DEVICE_TYPE_CUDA, 0};
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_INVALID_ARGUMENT);
    cr_assert_null(exe);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "kiln_compile: backend 'interpreter' runs on cpu devices, not on cuda:0");
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(backend, a_donated_tensor_cannot_move) {
    kiln_ctx *cx = ctx_with_devices(2);
    kiln_arg_spec specs[2] = {{.dtype = KILN_F32, .shape = KILN_SHAPE(4), .donate = true},
                              {.dtype = KILN_F32, .shape = KILN_SHAPE(4)}};
    kiln_region fn = {axpy, NULL};
    kiln_module *m = NULL;
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, specs, 2, 1, NULL, &m), KILN_OK);
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *x = vec4(cx, 1, 2, 3, 4), *y = vec4(cx, 1, 1, 1, 1), *r = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){x, y}, &r), KILN_OK);
    cr_assert_null(kiln_tensor_to_device(cx, x, (kiln_device){KILN_DEVICE_TYPE_CPU, 1}));
    expect_error(cx, KILN_FAILED_PRECONDITION, "kiln_tensor_to_device: tensor was donated");
    float back[4];
    cr_assert_eq(kiln_tensor_to_host(cx, x, back, sizeof back), KILN_FAILED_PRECONDITION);
    expect_error(cx, KILN_FAILED_PRECONDITION, "kiln_tensor_to_host: tensor was donated");
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}
