/* SPDX-License-Identifier: Apache-2.0 */
/* libkiln_pjrt through the PJRT C API alone, in the order jaxlib drives a plugin: load and
 * check the version, initialize, read the attributes, create a client, list devices and
 * memories, move arrays in (dense and strided) and out, compile a portable artifact and a
 * text program, execute (with a donated argument), read results, destroy everything; and
 * the errors: unimplemented slots, bad struct sizes, unsupported types, wrong arguments. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt_caller.h"

typedef PJRT_Error *(*fn_t)(void *);

static const pjrt_api *api;

static void load(void) {
    api = pjrt_load(KILN_PJRT_LIBRARY);
    cr_assert_not_null(api, "%s", dlerror());
}

static char *message_of(PJRT_Error *e) {
    static char buf[1024];
    PJRT_Error_Message_Args m = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE, .error = e};
    ((void (*)(PJRT_Error_Message_Args *))api->slots[S_Error_Message])(&m);
    snprintf(buf, sizeof buf, "%.*s", (int)m.message_size, m.message);
    return buf;
}

static PJRT_Error_Code code_of(PJRT_Error *e) {
    PJRT_Error_GetCode_Args g = {.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE, .error = e};
    cr_assert_null(CALL(Error_GetCode, &g));
    return g.code;
}

static void destroy_error(PJRT_Error *e) {
    PJRT_Error_Destroy_Args d = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE, .error = e};
    ((void (*)(PJRT_Error_Destroy_Args *))api->slots[S_Error_Destroy])(&d);
}

#define OK(call)                                                            \
    do {                                                                    \
        PJRT_Error *err_ = (call);                                          \
        if (err_) cr_assert_fail("%s failed: %s", #call, message_of(err_)); \
    } while (0)

/* The call fails with `code` and a message containing `text`. */
static void fails(PJRT_Error *e, PJRT_Error_Code code, const char *text) {
    cr_assert_not_null(e, "expected an error containing '%s'", text);
    cr_assert_eq(code_of(e), code, "code %d, expected %d: %s", (int)code_of(e), (int)code,
                 message_of(e));
    cr_assert(strstr(message_of(e), text), "'%s' not in '%s'", text, message_of(e));
    destroy_error(e);
}

static void destroy_event(PJRT_Event *e) {
    ARGS(Event_Destroy, .event = e);
    OK(CALL(Event_Destroy, &Event_Destroy));
}

/* The event completes without error (executions run on the client's worker: their events
 * complete later). */
static void ready(PJRT_Event *e) {
    cr_assert_not_null(e);
    ARGS(Event_Await, .event = e);
    OK(CALL(Event_Await, &Event_Await));
    ARGS(Event_IsReady, .event = e);
    OK(CALL(Event_IsReady, &Event_IsReady));
    cr_assert(Event_IsReady.is_ready);
    destroy_event(e);
}

/* A client; execution: where it runs executions ("inline", "worker"), or NULL. */
static PJRT_Client *client_with(const char *execution) {
    ARGS0(Plugin_Initialize);
    OK(CALL(Plugin_Initialize, &Plugin_Initialize));
    PJRT_NamedValue where = {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                             .name = "execution",
                             .name_size = 9,
                             .type = PJRT_NamedValue_kString,
                             .string_value = execution,
                             .value_size = execution ? strlen(execution) : 0};
    ARGS(Client_Create, .create_options = execution ? &where : NULL,
         .num_options = execution ? 1 : 0);
    /* the key-value callbacks are left as garbage, as jaxlib does in one process */
    memset(&Client_Create.kv_get_callback, 0xA5, 4 * sizeof(void *));
    OK(CALL(Client_Create, &Client_Create));
    cr_assert_not_null(Client_Create.client);
    return Client_Create.client;
}

static PJRT_Client *client_new(void) { return client_with(NULL); }

static void client_free(PJRT_Client *c) {
    ARGS(Client_Destroy, .client = c);
    OK(CALL(Client_Destroy, &Client_Destroy));
}

static PJRT_Buffer *upload(PJRT_Client *c, PJRT_Buffer_Type type, const void *data,
                           const int64_t *dims, size_t rank, const int64_t *strides) {
    ARGS(Client_BufferFromHostBuffer, .client = c, .data = data, .type = type, .dims = dims,
         .num_dims = rank, .byte_strides = strides, .num_byte_strides = strides ? rank : 0,
         .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableZeroCopy);
    OK(CALL(Client_BufferFromHostBuffer, &Client_BufferFromHostBuffer));
    /* the framework registers a callback on done_with_host_buffer at once */
    cr_assert_not_null(Client_BufferFromHostBuffer.done_with_host_buffer);
    ready(Client_BufferFromHostBuffer.done_with_host_buffer);
    return Client_BufferFromHostBuffer.buffer;
}

static void download(PJRT_Buffer *b, void *dst, size_t n) {
    ARGS(Buffer_ToHostBuffer, .src = b, .dst = NULL);
    OK(CALL(Buffer_ToHostBuffer, &Buffer_ToHostBuffer));
    cr_assert_eq(Buffer_ToHostBuffer.dst_size, n);
    int64_t m2m[8];
    ARGS(Buffer_Dimensions, .buffer = b);
    OK(CALL(Buffer_Dimensions, &Buffer_Dimensions));
    for (size_t i = 0; i < Buffer_Dimensions.num_dims; i++)
        m2m[i] = (int64_t)(Buffer_Dimensions.num_dims - 1 - i);
    PJRT_Buffer_MemoryLayout layout = {.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE,
                                       .type = PJRT_Buffer_MemoryLayout_Type_Tiled};
    layout.tiled.minor_to_major = m2m;
    layout.tiled.minor_to_major_size = Buffer_Dimensions.num_dims;
    Buffer_ToHostBuffer.dst = dst;
    Buffer_ToHostBuffer.dst_size = n;
    Buffer_ToHostBuffer.host_layout = &layout;
    OK(CALL(Buffer_ToHostBuffer, &Buffer_ToHostBuffer));
    ready(Buffer_ToHostBuffer.event);
}

static void destroy_buffer(PJRT_Buffer *b) {
    ARGS(Buffer_Destroy, .buffer = b);
    OK(CALL(Buffer_Destroy, &Buffer_Destroy));
}

static PJRT_LoadedExecutable *compile(PJRT_Client *c, const char *code, size_t n) {
    PJRT_Program p = {.struct_size = PJRT_Program_STRUCT_SIZE,
                      .code = (char *)code,
                      .code_size = n,
                      .format = "mlir",
                      .format_size = 4};
    ARGS(Client_Compile, .client = c, .program = &p);
    OK(CALL(Client_Compile, &Client_Compile));
    return Client_Compile.executable;
}

static void destroy_loaded(PJRT_LoadedExecutable *e) {
    ARGS(LoadedExecutable_Destroy, .executable = e);
    OK(CALL(LoadedExecutable_Destroy, &LoadedExecutable_Destroy));
}

Test(pjrt, loads_and_fills_every_slot) {
    load();
    cr_assert_eq(api->version.major_version, KILN_PJRT_API_MAJOR);
    cr_assert_eq(api->version.minor_version, KILN_PJRT_API_MINOR);
    cr_assert_eq(api->struct_size, sizeof(pjrt_api));
    for (int i = 0; i < 129; i++)
        cr_assert_not_null(api->slots[i], "slot %d is NULL", i);
    /* a slot kiln does not implement answers UNIMPLEMENTED naming its function */
    PJRT_Error *e = ((fn_t)api->slots[S_Client_DmaMap])(NULL);
    fails(e, PJRT_Error_Code_UNIMPLEMENTED, "PJRT_Client_DmaMap is not implemented");
    ARGS0(Plugin_Attributes);
    OK(CALL(Plugin_Attributes, &Plugin_Attributes));
    bool found = false;
    for (size_t i = 0; i < Plugin_Attributes.num_attributes; i++) {
        const PJRT_NamedValue *v = &Plugin_Attributes.attributes[i];
        if (v->name_size == 25 && memcmp(v->name, "stablehlo_current_version", 25) == 0) {
            cr_assert_eq(v->type, PJRT_NamedValue_kInt64List);
            cr_assert_eq(v->value_size, 3);
            found = true;
        }
    }
    cr_assert(found, "no stablehlo_current_version attribute");
}

Test(pjrt, client_devices_and_memories) {
    load();
    PJRT_Client *c = client_new();
    ARGS(Client_PlatformName, .client = c);
    OK(CALL(Client_PlatformName, &Client_PlatformName));
    cr_assert_eq(Client_PlatformName.platform_name_size, 4);
    cr_assert(memcmp(Client_PlatformName.platform_name, "kiln", 4) == 0);
    ARGS(Client_Devices, .client = c);
    OK(CALL(Client_Devices, &Client_Devices));
    cr_assert_geq(Client_Devices.num_devices, 1);
    PJRT_Device *d = Client_Devices.devices[0];
    ARGS(Device_GetDescription, .device = d);
    OK(CALL(Device_GetDescription, &Device_GetDescription));
    ARGS(DeviceDescription_Id, .device_description = Device_GetDescription.device_description);
    OK(CALL(DeviceDescription_Id, &DeviceDescription_Id));
    cr_assert_eq(DeviceDescription_Id.id, 0);
    ARGS(DeviceDescription_Attributes,
         .device_description = Device_GetDescription.device_description);
    OK(CALL(DeviceDescription_Attributes, &DeviceDescription_Attributes));
    ARGS(DeviceDescription_ToString,
         .device_description = Device_GetDescription.device_description);
    OK(CALL(DeviceDescription_ToString, &DeviceDescription_ToString));
    cr_assert(strstr(DeviceDescription_ToString.to_string, "KilnDevice"));
    ARGS(Client_LookupDevice, .client = c, .id = 0);
    OK(CALL(Client_LookupDevice, &Client_LookupDevice));
    cr_assert_eq(Client_LookupDevice.device, d);
    Client_LookupDevice.id = 99;
    fails(CALL(Client_LookupDevice, &Client_LookupDevice), PJRT_Error_Code_INVALID_ARGUMENT,
          "no kiln device with id 99");
    ARGS(Device_DefaultMemory, .device = d);
    OK(CALL(Device_DefaultMemory, &Device_DefaultMemory));
    ARGS(Memory_Kind, .memory = Device_DefaultMemory.memory);
    OK(CALL(Memory_Kind, &Memory_Kind));
    cr_assert(memcmp(Memory_Kind.kind, "device", 6) == 0);
    ARGS(Memory_AddressableByDevices, .memory = Device_DefaultMemory.memory);
    OK(CALL(Memory_AddressableByDevices, &Memory_AddressableByDevices));
    cr_assert_eq(Memory_AddressableByDevices.devices[0], d);
    /* the topology: the client's devices */
    ARGS(Client_TopologyDescription, .client = c);
    OK(CALL(Client_TopologyDescription, &Client_TopologyDescription));
    ARGS(TopologyDescription_GetDeviceDescriptions,
         .topology = Client_TopologyDescription.topology);
    OK(CALL(TopologyDescription_GetDeviceDescriptions, &TopologyDescription_GetDeviceDescriptions));
    cr_assert_eq(TopologyDescription_GetDeviceDescriptions.num_descriptions,
                 Client_Devices.num_devices);
    cr_assert_eq(TopologyDescription_GetDeviceDescriptions.descriptions[0],
                 Device_GetDescription.device_description);
    ARGS(TopologyDescription_PlatformName, .topology = Client_TopologyDescription.topology);
    OK(CALL(TopologyDescription_PlatformName, &TopologyDescription_PlatformName));
    cr_assert(memcmp(TopologyDescription_PlatformName.platform_name, "kiln", 4) == 0);
    ARGS(TopologyDescription_Attributes, .topology = Client_TopologyDescription.topology);
    OK(CALL(TopologyDescription_Attributes, &TopologyDescription_Attributes));
    ARGS(Device_PoisonExecution, .device = d, .launch_id = 3);
    OK(CALL(Device_PoisonExecution, &Device_PoisonExecution));
    cr_assert(!Device_PoisonExecution.poisoned);
    ARGS(Device_GetAttributes, .device = d);
    OK(CALL(Device_GetAttributes, &Device_GetAttributes));
    cr_assert_not_null(Device_GetAttributes.attributes_deleter);
    /* a struct_size too small for the output is refused, naming the function */
    PJRT_Client_Devices_Args small = {.struct_size = 8, .client = c};
    fails(CALL(Client_Devices, &small), PJRT_Error_Code_INVALID_ARGUMENT, "struct_size is 8");
    client_free(c);
}

Test(pjrt, buffers_in_and_out) {
    load();
    PJRT_Client *c = client_new();
    float data[6] = {1, 2, 3, 4, 5, 6}, back[6] = {0};
    int64_t dims[2] = {2, 3};
    PJRT_Buffer *b = upload(c, PJRT_Buffer_Type_F32, data, dims, 2, NULL);
    download(b, back, sizeof back);
    cr_assert(memcmp(back, data, sizeof data) == 0);
    ARGS(Buffer_ElementType, .buffer = b);
    OK(CALL(Buffer_ElementType, &Buffer_ElementType));
    cr_assert_eq(Buffer_ElementType.type, PJRT_Buffer_Type_F32);
    ARGS(Buffer_ReadyEvent, .buffer = b);
    OK(CALL(Buffer_ReadyEvent, &Buffer_ReadyEvent));
    ready(Buffer_ReadyEvent.event);
    /* a strided view (every other column of a 3x4 array), as numpy hands a [:, ::2] */
    int32_t wide[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, got[6];
    int64_t vdims[2] = {3, 2}, strides[2] = {16, 8};
    PJRT_Buffer *v = upload(c, PJRT_Buffer_Type_S32, wide, vdims, 2, strides);
    download(v, got, sizeof got);
    int32_t want[6] = {0, 2, 4, 6, 8, 10};
    cr_assert(memcmp(got, want, sizeof want) == 0);
    /* deleting: the buffer then reports deleted and refuses to be read */
    ARGS(Buffer_Delete, .buffer = v);
    OK(CALL(Buffer_Delete, &Buffer_Delete));
    ARGS(Buffer_IsDeleted, .buffer = v);
    OK(CALL(Buffer_IsDeleted, &Buffer_IsDeleted));
    cr_assert(Buffer_IsDeleted.is_deleted);
    ARGS(Buffer_ToHostBuffer, .src = v, .dst = got, .dst_size = sizeof got);
    fails(CALL(Buffer_ToHostBuffer, &Buffer_ToHostBuffer), PJRT_Error_Code_FAILED_PRECONDITION,
          "deleted");
    /* element types kiln has not */
    ARGS(Client_BufferFromHostBuffer, .client = c, .data = data, .type = PJRT_Buffer_Type_S1,
         .dims = dims, .num_dims = 1);
    fails(CALL(Client_BufferFromHostBuffer, &Client_BufferFromHostBuffer),
          PJRT_Error_Code_UNIMPLEMENTED, "kiln has no element type s1");
    destroy_buffer(v);
    destroy_buffer(b);
    client_free(c);
}

/* a + b, b returned unchanged... the first argument donated to the result */
static const char add_text[] =
    "func.func @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32}, %b: tensor<4xf32>) "
    "-> tensor<4xf32> {\n"
    "  %0 = stablehlo.add %a, %b : tensor<4xf32>\n"
    "  %1 = stablehlo.multiply %0, %0 : tensor<4xf32>\n"
    "  return %1 : tensor<4xf32>\n"
    "}\n";

static PJRT_Buffer *execute1(PJRT_LoadedExecutable *e, PJRT_Buffer **args, size_t n) {
    PJRT_Buffer *out[1] = {NULL};
    PJRT_Buffer **outs[1] = {out};
    PJRT_Buffer *const *lists[1] = {args};
    PJRT_Event *done[1] = {NULL};
    PJRT_ExecuteOptions o = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
    ARGS(LoadedExecutable_Execute, .executable = e, .options = &o, .argument_lists = lists,
         .num_devices = 1, .num_args = n, .output_lists = outs, .device_complete_events = done);
    OK(CALL(LoadedExecutable_Execute, &LoadedExecutable_Execute));
    ready(done[0]);
    return out[0];
}

/* With the calling thread's and the worker's execution alike. */
static void compile_and_execute_with_donation(const char *execution);

Test(pjrt, compile_and_execute_with_donation) {
    compile_and_execute_with_donation("inline");
    compile_and_execute_with_donation("worker");
    compile_and_execute_with_donation(NULL);
}

static void compile_and_execute_with_donation(const char *execution) {
    load();
    PJRT_Client *c = client_with(execution);
    PJRT_LoadedExecutable *e = compile(c, add_text, sizeof add_text - 1);
    ARGS(LoadedExecutable_GetExecutable, .loaded_executable = e);
    OK(CALL(LoadedExecutable_GetExecutable, &LoadedExecutable_GetExecutable));
    PJRT_Executable *x = LoadedExecutable_GetExecutable.executable;
    ARGS(Executable_NumOutputs, .executable = x);
    OK(CALL(Executable_NumOutputs, &Executable_NumOutputs));
    cr_assert_eq(Executable_NumOutputs.num_outputs, 1);
    ARGS(Executable_OutputDimensions, .executable = x);
    OK(CALL(Executable_OutputDimensions, &Executable_OutputDimensions));
    cr_assert_eq(Executable_OutputDimensions.dim_sizes[0], 1);
    cr_assert_eq(Executable_OutputDimensions.dims[0], 4);
    ARGS(Executable_OutputElementTypes, .executable = x);
    OK(CALL(Executable_OutputElementTypes, &Executable_OutputElementTypes));
    cr_assert_eq(Executable_OutputElementTypes.output_types[0], PJRT_Buffer_Type_F32);
    ARGS(Executable_OutputMemoryKinds, .executable = x);
    OK(CALL(Executable_OutputMemoryKinds, &Executable_OutputMemoryKinds));
    cr_assert(memcmp(Executable_OutputMemoryKinds.memory_kinds[0], "device", 6) == 0);
    ARGS(LoadedExecutable_GetDeviceAssignment, .executable = e);
    OK(CALL(LoadedExecutable_GetDeviceAssignment, &LoadedExecutable_GetDeviceAssignment));
    LoadedExecutable_GetDeviceAssignment.serialized_device_assignment_deleter(
        LoadedExecutable_GetDeviceAssignment.serialized_device_assignment);
    ARGS(Executable_GetCompiledMemoryStats, .executable = x);
    OK(CALL(Executable_GetCompiledMemoryStats, &Executable_GetCompiledMemoryStats));
    cr_assert_eq(Executable_GetCompiledMemoryStats.argument_size_in_bytes, 32);
    cr_assert_eq(Executable_GetCompiledMemoryStats.output_size_in_bytes, 16);
    ARGS(Executable_Destroy, .executable = x);
    OK(CALL(Executable_Destroy, &Executable_Destroy));

    float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1}, r[4];
    int64_t dims[1] = {4};
    PJRT_Buffer *args[2] = {upload(c, PJRT_Buffer_Type_F32, a, dims, 1, NULL),
                            upload(c, PJRT_Buffer_Type_F32, b, dims, 1, NULL)};
    PJRT_Buffer *out = execute1(e, args, 2);
    download(out, r, sizeof r);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(r[i], (a[i] + 1) * (a[i] + 1));
    /* the donated argument is consumed; the other is not */
    ARGS(Buffer_IsDeleted, .buffer = args[0]);
    OK(CALL(Buffer_IsDeleted, &Buffer_IsDeleted));
    cr_assert(Buffer_IsDeleted.is_deleted);
    Buffer_IsDeleted.buffer = args[1];
    OK(CALL(Buffer_IsDeleted, &Buffer_IsDeleted));
    cr_assert(!Buffer_IsDeleted.is_deleted);
    /* executing on a consumed argument is an error, not a crash */
    PJRT_Buffer *out2[1] = {NULL};
    PJRT_Buffer **outs2[1] = {out2};
    PJRT_Buffer *const *lists[1] = {args};
    PJRT_Event *done[1] = {NULL};
    ARGS(LoadedExecutable_Execute, .executable = e, .argument_lists = lists, .num_devices = 1,
         .num_args = 2, .output_lists = outs2, .device_complete_events = done);
    fails(CALL(LoadedExecutable_Execute, &LoadedExecutable_Execute),
          PJRT_Error_Code_FAILED_PRECONDITION, "argument 0 was deleted or donated");
    LoadedExecutable_Execute.num_args = 1;
    fails(CALL(LoadedExecutable_Execute, &LoadedExecutable_Execute),
          PJRT_Error_Code_INVALID_ARGUMENT, "1 arguments; the program takes 2");
    /* a donated argument the caller marks non-donatable survives */
    PJRT_Buffer *consumed = args[0];
    PJRT_Buffer *kept = upload(c, PJRT_Buffer_Type_F32, a, dims, 1, NULL);
    args[0] = kept;
    int64_t keep[1] = {0};
    PJRT_ExecuteOptions o = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE,
                             .non_donatable_input_indices = keep,
                             .num_non_donatable_input_indices = 1};
    LoadedExecutable_Execute.num_args = 2;
    LoadedExecutable_Execute.options = &o;
    OK(CALL(LoadedExecutable_Execute, &LoadedExecutable_Execute));
    ready(done[0]);
    Buffer_IsDeleted.buffer = kept;
    OK(CALL(Buffer_IsDeleted, &Buffer_IsDeleted));
    cr_assert(!Buffer_IsDeleted.is_deleted);
    download(kept, r, sizeof r);
    cr_assert(memcmp(r, a, sizeof a) == 0, "the kept argument changed");
    destroy_buffer(out2[0]);
    destroy_buffer(kept);
    destroy_buffer(out);
    destroy_buffer(args[1]);
    destroy_buffer(consumed);
    destroy_loaded(e);
    client_free(c);
}

/* The program jax.jit sent for sin(a) * b + 1 on f32[2,3] (tests/data). */
Test(pjrt, a_program_jax_jit_sent_runs) {
    load();
    FILE *f = fopen(KILN_TEST_DATA_DIR "/jax_jit_sin_mul_add.mlirbc", "rb");
    cr_assert_not_null(f);
    char code[8192];
    size_t n = fread(code, 1, sizeof code, f);
    fclose(f);
    PJRT_Client *c = client_new();
    PJRT_LoadedExecutable *e = compile(c, code, n);
    float a[6] = {0, 1, 2, 3, 4, 5}, r[6];
    int64_t dims[2] = {2, 3};
    PJRT_Buffer *x = upload(c, PJRT_Buffer_Type_F32, a, dims, 2, NULL);
    PJRT_Buffer *args[2] = {x, x};
    PJRT_Buffer *out = execute1(e, args, 2);
    download(out, r, sizeof r);
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(r[i], sinf(a[i]) * a[i] + 1, 1e-6f);
    destroy_buffer(out);
    destroy_buffer(x);
    destroy_loaded(e);
    client_free(c);
}

Test(pjrt, compile_errors_are_errors) {
    load();
    PJRT_Client *c = client_new();
    static const char bad[] = "func.func @main() -> tensor<f32> {\n  %0 = stablehlo.bogus : "
                              "tensor<f32>\n  return %0 : tensor<f32>\n}\n";
    PJRT_Program p = {.struct_size = PJRT_Program_STRUCT_SIZE,
                      .code = (char *)bad,
                      .code_size = sizeof bad - 1,
                      .format = "mlir",
                      .format_size = 4};
    ARGS(Client_Compile, .client = c, .program = &p);
    fails(CALL(Client_Compile, &Client_Compile), PJRT_Error_Code_INVALID_ARGUMENT,
          "unknown op 'stablehlo.bogus'");
    p.format = "hlo";
    p.format_size = 3;
    fails(CALL(Client_Compile, &Client_Compile), PJRT_Error_Code_UNIMPLEMENTED, "not \"hlo\"");
    client_free(c);
}

static int fired;
static PJRT_Error_Code seen;

static void on_ready(PJRT_Error *err, void *user) {
    (*(int *)user)++;
    seen = err ? code_of(err) : PJRT_Error_Code_OK;
    if (err) destroy_error(err);
}

Test(pjrt, events_run_their_callbacks) {
    load();
    ARGS0(Event_Create);
    OK(CALL(Event_Create, &Event_Create));
    PJRT_Event *e = Event_Create.event;
    ARGS(Event_IsReady, .event = e);
    OK(CALL(Event_IsReady, &Event_IsReady));
    cr_assert(!Event_IsReady.is_ready);
    ARGS(Event_OnReady, .event = e, .user_arg = &fired);
    fails(CALL(Event_OnReady, &Event_OnReady), PJRT_Error_Code_INVALID_ARGUMENT,
          "callback is NULL");
    /* registered while pending: runs when the event is set, with its error */
    fired = 0;
    Event_OnReady.callback = on_ready;
    OK(CALL(Event_OnReady, &Event_OnReady));
    cr_assert_eq(fired, 0);
    ARGS(Event_Set, .event = e, .error_code = PJRT_Error_Code_ABORTED, .error_message = "stop",
         .error_message_size = 4);
    OK(CALL(Event_Set, &Event_Set));
    cr_assert_eq(fired, 1);
    cr_assert_eq(seen, PJRT_Error_Code_ABORTED);
    /* registered once complete: runs at once */
    OK(CALL(Event_OnReady, &Event_OnReady));
    cr_assert_eq(fired, 2);
    ARGS(Event_Error, .event = e);
    fails(CALL(Event_Error, &Event_Error), PJRT_Error_Code_ABORTED, "stop");
    destroy_event(e);
}

Test(pjrt, a_bad_execution_option_is_refused) {
    load();
    ARGS0(Plugin_Initialize);
    OK(CALL(Plugin_Initialize, &Plugin_Initialize));
    PJRT_NamedValue where = {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                             .name = "execution",
                             .name_size = 9,
                             .type = PJRT_NamedValue_kString,
                             .string_value = "later",
                             .value_size = 5};
    ARGS(Client_Create, .create_options = &where, .num_options = 1);
    fails(CALL(Client_Create, &Client_Create), PJRT_Error_Code_INVALID_ARGUMENT,
          "execution 'later' is not inline or worker");
}

/* A CompileOptionsProto naming num_replicas, num_partitions and the one device. */
static const char options_on_device_1[] = {0x1a, 0x0b, 0x20, 0x01, 0x28, 0x01, 0x4a,
                                           0x05, 0x1a, 0x03, 0x0a, 0x01, 0x01};
static const char options_two_replicas[] = {0x1a, 0x04, 0x20, 0x02, 0x28, 0x01};

Test(pjrt, compile_options_place_the_program) {
    load();
    ARGS0(Plugin_Initialize);
    OK(CALL(Plugin_Initialize, &Plugin_Initialize));
    PJRT_NamedValue two = {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                           .name = "cpu_devices",
                           .name_size = 11,
                           .type = PJRT_NamedValue_kInt64,
                           .int64_value = 2,
                           .value_size = 1};
    ARGS(Client_Create, .create_options = &two, .num_options = 1);
    OK(CALL(Client_Create, &Client_Create));
    PJRT_Client *c = Client_Create.client;
    ARGS(Client_Devices, .client = c);
    OK(CALL(Client_Devices, &Client_Devices));
    cr_assert_eq(Client_Devices.num_devices, 2);
    PJRT_Program p = {.struct_size = PJRT_Program_STRUCT_SIZE,
                      .code = (char *)add_text,
                      .code_size = sizeof add_text - 1,
                      .format = "mlir",
                      .format_size = 4};
    ARGS(Client_Compile, .client = c, .program = &p, .compile_options = options_on_device_1,
         .compile_options_size = sizeof options_on_device_1);
    OK(CALL(Client_Compile, &Client_Compile));
    PJRT_LoadedExecutable *e = Client_Compile.executable;
    ARGS(LoadedExecutable_AddressableDevices, .executable = e);
    OK(CALL(LoadedExecutable_AddressableDevices, &LoadedExecutable_AddressableDevices));
    cr_assert_eq(LoadedExecutable_AddressableDevices.num_addressable_devices, 1);
    cr_assert_eq(LoadedExecutable_AddressableDevices.addressable_devices[0],
                 Client_Devices.devices[1]);
    /* the fingerprint names the program on its device */
    ARGS(LoadedExecutable_Fingerprint, .executable = e);
    OK(CALL(LoadedExecutable_Fingerprint, &LoadedExecutable_Fingerprint));
    cr_assert_gt(LoadedExecutable_Fingerprint.executable_fingerprint_size, 10);
    char on_1[64];
    snprintf(on_1, sizeof on_1, "%s", LoadedExecutable_Fingerprint.executable_fingerprint);
    /* inputs on device 1 run there, and the result is there */
    float a[4] = {1, 2, 3, 4}, r[4];
    int64_t dims[1] = {4};
    ARGS(Client_BufferFromHostBuffer, .client = c, .data = a, .type = PJRT_Buffer_Type_F32,
         .dims = dims, .num_dims = 1, .device = Client_Devices.devices[1]);
    OK(CALL(Client_BufferFromHostBuffer, &Client_BufferFromHostBuffer));
    ready(Client_BufferFromHostBuffer.done_with_host_buffer);
    PJRT_Buffer *x = Client_BufferFromHostBuffer.buffer;
    OK(CALL(Client_BufferFromHostBuffer, &Client_BufferFromHostBuffer));
    ready(Client_BufferFromHostBuffer.done_with_host_buffer);
    PJRT_Buffer *y = Client_BufferFromHostBuffer.buffer;
    PJRT_Buffer *args[2] = {x, y};
    PJRT_Buffer *out = execute1(e, args, 2);
    ARGS(Buffer_Device, .buffer = out);
    OK(CALL(Buffer_Device, &Buffer_Device));
    cr_assert_eq(Buffer_Device.device, Client_Devices.devices[1]);
    download(out, r, sizeof r);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(r[i], 4 * a[i] * a[i]);
    /* the same program on the default device: another fingerprint */
    Client_Compile.compile_options = NULL;
    Client_Compile.compile_options_size = 0;
    OK(CALL(Client_Compile, &Client_Compile));
    LoadedExecutable_Fingerprint.executable = Client_Compile.executable;
    OK(CALL(LoadedExecutable_Fingerprint, &LoadedExecutable_Fingerprint));
    cr_assert_str_neq(on_1, LoadedExecutable_Fingerprint.executable_fingerprint);
    destroy_loaded(Client_Compile.executable);
    /* the compile options come back as they were given */
    ARGS(LoadedExecutable_GetExecutable, .loaded_executable = e);
    OK(CALL(LoadedExecutable_GetExecutable, &LoadedExecutable_GetExecutable));
    ARGS(Executable_GetCompileOptions, .executable = LoadedExecutable_GetExecutable.executable);
    OK(CALL(Executable_GetCompileOptions, &Executable_GetCompileOptions));
    cr_assert_eq(Executable_GetCompileOptions.serialized_bytes_size, sizeof options_on_device_1);
    cr_assert(memcmp(Executable_GetCompileOptions.serialized_bytes, options_on_device_1,
                     sizeof options_on_device_1) == 0);
    Executable_GetCompileOptions.serialized_compile_options_deleter(
        Executable_GetCompileOptions.serialized_compile_options);
    ARGS(Executable_Destroy, .executable = LoadedExecutable_GetExecutable.executable);
    OK(CALL(Executable_Destroy, &Executable_Destroy));
    /* a raw copy to memory named later: the bytes arrive when the callback gives it */
    float raw[2] = {0, 0};
    ARGS(Buffer_CopyRawToHostFuture, .buffer = out, .offset = 4, .transfer_size = 8);
    OK(CALL(Buffer_CopyRawToHostFuture, &Buffer_CopyRawToHostFuture));
    ARGS(Event_IsReady, .event = Buffer_CopyRawToHostFuture.event);
    OK(CALL(Event_IsReady, &Event_IsReady));
    cr_assert(!Event_IsReady.is_ready);
    PJRT_Buffer_CopyRawToHostFuture_Callback_Args cb = {
        .struct_size = PJRT_Buffer_CopyRawToHostFuture_Callback_Args_STRUCT_SIZE,
        .callback_data = Buffer_CopyRawToHostFuture.callback_data,
        .dst = raw};
    Buffer_CopyRawToHostFuture.future_ready_callback(&cb);
    ready(Buffer_CopyRawToHostFuture.event);
    cr_assert(raw[0] == 4 * a[1] * a[1] && raw[1] == 4 * a[2] * a[2]);
    Buffer_CopyRawToHostFuture.offset = 12;
    fails(CALL(Buffer_CopyRawToHostFuture, &Buffer_CopyRawToHostFuture),
          PJRT_Error_Code_OUT_OF_RANGE, "bytes [12, +8) of a buffer of 16");
    /* what kiln cannot honour is refused by name */
    Client_Compile.compile_options = options_two_replicas;
    Client_Compile.compile_options_size = sizeof options_two_replicas;
    fails(CALL(Client_Compile, &Client_Compile), PJRT_Error_Code_UNIMPLEMENTED,
          "2 replicas x 1 partitions");
    static const char garbage[] = {0x1a, 0x7f, 0x01};
    Client_Compile.compile_options = garbage;
    Client_Compile.compile_options_size = sizeof garbage;
    fails(CALL(Client_Compile, &Client_Compile), PJRT_Error_Code_INVALID_ARGUMENT,
          "not a serialized CompileOptionsProto");
    destroy_buffer(out);
    destroy_buffer(y);
    destroy_buffer(x);
    destroy_loaded(e);
    client_free(c);
}

/* Executions are queued on the client's worker: one can take the outputs of the one before
 * it without waiting, a pending output can be deleted or dropped, and an error reaches the
 * outputs and the completion event. */
Test(pjrt, queued_executions_chain_and_fail_through_events) {
    load();
    PJRT_Client *c = client_with("worker");
    static const char twice[] = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                                "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n"
                                "  return %0 : tensor<4xf32>\n}\n";
    PJRT_LoadedExecutable *e = compile(c, twice, sizeof twice - 1);
    float a[4] = {1, 2, 3, 4}, r[4];
    int64_t dims[1] = {4};
    PJRT_Buffer *x = upload(c, PJRT_Buffer_Type_F32, a, dims, 1, NULL);
    /* 10 executions, each on the last one's output, none waited for */
    PJRT_Buffer *chain[11] = {x};
    PJRT_Event *done[10];
    for (int k = 0; k < 10; k++) {
        PJRT_Buffer *out[1] = {NULL};
        PJRT_Buffer **outs[1] = {out};
        PJRT_Buffer *const *lists[1] = {&chain[k]};
        PJRT_Event *ev[1] = {NULL};
        ARGS(LoadedExecutable_Execute, .executable = e, .argument_lists = lists, .num_devices = 1,
             .num_args = 1, .output_lists = outs, .device_complete_events = ev);
        OK(CALL(LoadedExecutable_Execute, &LoadedExecutable_Execute));
        chain[k + 1] = out[0];
        done[k] = ev[0];
    }
    download(chain[10], r, sizeof r);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(r[i], a[i] * 1024);
    for (int k = 0; k < 10; k++)
        ready(done[k]);
    /* a pending output dropped at once, before it is made */
    PJRT_Buffer *out[1] = {NULL};
    PJRT_Buffer **outs[1] = {out};
    PJRT_Buffer *const *lists[1] = {&chain[10]};
    PJRT_Event *ev[1] = {NULL};
    ARGS(LoadedExecutable_Execute, .executable = e, .argument_lists = lists, .num_devices = 1,
         .num_args = 1, .output_lists = outs, .device_complete_events = ev);
    OK(CALL(LoadedExecutable_Execute, &LoadedExecutable_Execute));
    ARGS(Buffer_Delete, .buffer = out[0]);
    OK(CALL(Buffer_Delete, &Buffer_Delete));
    destroy_buffer(out[0]);
    ready(ev[0]);
    /* an argument that holds an error: the execution fails through its events */
    ARGS(Client_CreateErrorBuffer, .client = c, .error_code = PJRT_Error_Code_DATA_LOSS,
         .error_message = "lost", .error_message_size = 4, .shape_dims = dims, .shape_num_dims = 1,
         .shape_element_type = PJRT_Buffer_Type_F32);
    OK(CALL(Client_CreateErrorBuffer, &Client_CreateErrorBuffer));
    PJRT_Buffer *bad = Client_CreateErrorBuffer.buffer;
    lists[0] = &bad;
    OK(CALL(LoadedExecutable_Execute, &LoadedExecutable_Execute));
    ARGS(Event_Await, .event = ev[0]);
    fails(CALL(Event_Await, &Event_Await), PJRT_Error_Code_DATA_LOSS, "argument 0: lost");
    destroy_event(ev[0]);
    ARGS(Buffer_ToHostBuffer, .src = out[0], .dst = r, .dst_size = sizeof r);
    fails(CALL(Buffer_ToHostBuffer, &Buffer_ToHostBuffer), PJRT_Error_Code_DATA_LOSS, "lost");
    destroy_buffer(out[0]);
    destroy_buffer(bad);
    for (int k = 0; k <= 10; k++)
        destroy_buffer(chain[k]);
    destroy_loaded(e);
    client_free(c);
}

/* An alias buffer, used before it is fulfilled (an execution waits for it on the worker),
 * then fulfilled; and a donation that waits for a dependency. */
/* In both modes: inline, an execution on an alias not yet fulfilled goes to the worker. */
static void alias_buffers_and_donations(const char *execution);

Test(pjrt, alias_buffers_and_donations_with_a_dependency) {
    alias_buffers_and_donations("worker");
    alias_buffers_and_donations("inline");
}

static void alias_buffers_and_donations(const char *execution) {
    load();
    PJRT_Client *c = client_with(execution);
    static const char twice[] = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                                "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n"
                                "  return %0 : tensor<4xf32>\n}\n";
    PJRT_LoadedExecutable *e = compile(c, twice, sizeof twice - 1);
    int64_t dims[1] = {4};
    ARGS(Client_CreateAliasBuffer, .client = c, .shape_dims = dims, .shape_num_dims = 1,
         .shape_element_type = PJRT_Buffer_Type_F32);
    OK(CALL(Client_CreateAliasBuffer, &Client_CreateAliasBuffer));
    PJRT_Buffer *alias = Client_CreateAliasBuffer.alias_buffer;
    /* an execution on the alias, queued before the alias has its values */
    PJRT_Buffer *out[1] = {NULL};
    PJRT_Buffer **outs[1] = {out};
    PJRT_Buffer *const *lists[1] = {&alias};
    PJRT_Event *done[1] = {NULL};
    ARGS(LoadedExecutable_Execute, .executable = e, .argument_lists = lists, .num_devices = 1,
         .num_args = 1, .output_lists = outs, .device_complete_events = done);
    OK(CALL(LoadedExecutable_Execute, &LoadedExecutable_Execute));
    float a[4] = {1, 2, 3, 4}, r[4];
    PJRT_Buffer *src = upload(c, PJRT_Buffer_Type_F32, a, dims, 1, NULL);
    ARGS(Client_FulfillAliasBuffer, .client = c, .buffer = src,
         .fulfill_alias_buffer_cb = Client_CreateAliasBuffer.fulfill_alias_buffer_cb);
    OK(CALL(Client_FulfillAliasBuffer, &Client_FulfillAliasBuffer));
    ready(done[0]);
    download(out[0], r, sizeof r);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(r[i], 2 * a[i]);
    download(alias, r, sizeof r);
    cr_assert(memcmp(r, a, sizeof a) == 0);
    /* an alias fulfilled with an error gives it to its readers */
    OK(CALL(Client_CreateAliasBuffer, &Client_CreateAliasBuffer));
    PJRT_Buffer *failed = Client_CreateAliasBuffer.alias_buffer;
    Client_FulfillAliasBuffer.fulfill_alias_buffer_cb =
        Client_CreateAliasBuffer.fulfill_alias_buffer_cb;
    Client_FulfillAliasBuffer.status_code = PJRT_Error_Code_ABORTED;
    Client_FulfillAliasBuffer.error_message = "no values";
    Client_FulfillAliasBuffer.error_message_size = 9;
    OK(CALL(Client_FulfillAliasBuffer, &Client_FulfillAliasBuffer));
    ARGS(Buffer_ToHostBuffer, .src = failed, .dst = r, .dst_size = sizeof r);
    fails(CALL(Buffer_ToHostBuffer, &Buffer_ToHostBuffer), PJRT_Error_Code_ABORTED, "no values");
    /* a donation waiting for a dependency: the old buffer is gone at once, the new one
     * holds the values once the dependency is met */
    ARGS(Buffer_DonateWithControlDependency, .buffer = src);
    OK(CALL(Buffer_DonateWithControlDependency, &Buffer_DonateWithControlDependency));
    ARGS(Buffer_IsDeleted, .buffer = src);
    OK(CALL(Buffer_IsDeleted, &Buffer_IsDeleted));
    cr_assert(Buffer_IsDeleted.is_deleted);
    PJRT_Buffer *moved = Buffer_DonateWithControlDependency.out_buffer;
    ARGS(Buffer_ReadyEvent, .buffer = moved);
    OK(CALL(Buffer_ReadyEvent, &Buffer_ReadyEvent));
    ARGS(Event_IsReady, .event = Buffer_ReadyEvent.event);
    OK(CALL(Event_IsReady, &Event_IsReady));
    cr_assert(!Event_IsReady.is_ready);
    PJRT_Buffer_DonateWithControlDependency_Callback_Args dep = {
        .struct_size = PJRT_Buffer_DonateWithControlDependency_Callback_Args_STRUCT_SIZE,
        .callback_data = Buffer_DonateWithControlDependency.callback_data};
    Buffer_DonateWithControlDependency.dependency_ready_callback(&dep);
    ready(Buffer_ReadyEvent.event);
    download(moved, r, sizeof r);
    cr_assert(memcmp(r, a, sizeof a) == 0);
    fails(CALL(Buffer_DonateWithControlDependency, &Buffer_DonateWithControlDependency),
          PJRT_Error_Code_FAILED_PRECONDITION, "deleted or donated");
    destroy_buffer(moved);
    destroy_buffer(failed);
    destroy_buffer(src);
    destroy_buffer(out[0]);
    destroy_buffer(alias);
    destroy_loaded(e);
    client_free(c);
}

/* A serialized executable (what JAX's persistent compilation cache stores) loads back and
 * runs; bytes kiln did not write are refused. */
Test(pjrt, executables_serialize_and_load_back) {
    load();
    PJRT_Client *c = client_new();
    PJRT_LoadedExecutable *e = compile(c, add_text, sizeof add_text - 1);
    ARGS(LoadedExecutable_GetExecutable, .loaded_executable = e);
    OK(CALL(LoadedExecutable_GetExecutable, &LoadedExecutable_GetExecutable));
    ARGS(Executable_Serialize, .executable = LoadedExecutable_GetExecutable.executable);
    OK(CALL(Executable_Serialize, &Executable_Serialize));
    ARGS(Executable_DeserializeAndLoad, .client = c,
         .serialized_executable = Executable_Serialize.serialized_bytes,
         .serialized_executable_size = Executable_Serialize.serialized_bytes_size);
    OK(CALL(Executable_DeserializeAndLoad, &Executable_DeserializeAndLoad));
    PJRT_LoadedExecutable *loaded = Executable_DeserializeAndLoad.loaded_executable;
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1}, r[4];
    int64_t dims[1] = {4};
    PJRT_Buffer *args[2] = {upload(c, PJRT_Buffer_Type_F32, a, dims, 1, NULL),
                            upload(c, PJRT_Buffer_Type_F32, b, dims, 1, NULL)};
    PJRT_Buffer *out = execute1(loaded, args, 2);
    download(out, r, sizeof r);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(r[i], (a[i] + 1) * (a[i] + 1));
    /* the same program, so the same fingerprint */
    ARGS(LoadedExecutable_Fingerprint, .executable = e);
    OK(CALL(LoadedExecutable_Fingerprint, &LoadedExecutable_Fingerprint));
    char first[64];
    snprintf(first, sizeof first, "%s", LoadedExecutable_Fingerprint.executable_fingerprint);
    LoadedExecutable_Fingerprint.executable = loaded;
    OK(CALL(LoadedExecutable_Fingerprint, &LoadedExecutable_Fingerprint));
    cr_assert_str_eq(first, LoadedExecutable_Fingerprint.executable_fingerprint);
    /* bytes kiln did not write, and a truncated executable */
    Executable_DeserializeAndLoad.serialized_executable = "not kiln";
    Executable_DeserializeAndLoad.serialized_executable_size = 8;
    fails(CALL(Executable_DeserializeAndLoad, &Executable_DeserializeAndLoad),
          PJRT_Error_Code_INVALID_ARGUMENT, "not an executable kiln serialized");
    Executable_DeserializeAndLoad.serialized_executable = Executable_Serialize.serialized_bytes;
    Executable_DeserializeAndLoad.serialized_executable_size =
        Executable_Serialize.serialized_bytes_size - 1;
    fails(CALL(Executable_DeserializeAndLoad, &Executable_DeserializeAndLoad),
          PJRT_Error_Code_INVALID_ARGUMENT, "do not match");
    Executable_Serialize.serialized_executable_deleter(Executable_Serialize.serialized_executable);
    ARGS(Executable_Destroy, .executable = LoadedExecutable_GetExecutable.executable);
    OK(CALL(Executable_Destroy, &Executable_Destroy));
    destroy_buffer(out);
    destroy_buffer(args[0]);
    destroy_buffer(args[1]);
    destroy_loaded(loaded);
    destroy_loaded(e);
    client_free(c);
}

static int count_of(const char *text, size_t n, const char *word) {
    int k = 0;
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++)
        k += memcmp(text + i, word, w) == 0;
    return k;
}

/* jax's compiled.as_text() and cost_analysis(): the program after kiln's passes (the
 * duplicate add merged, the dead exponential gone), asked for in two calls as the
 * framework does; and the cost of one call. */
Test(pjrt, optimized_program_and_cost_analysis) {
    static const char text[] =
        "func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = stablehlo.add %a, %b : tensor<4xf32>\n"
        "  %1 = stablehlo.add %a, %b : tensor<4xf32>\n"
        "  %2 = stablehlo.multiply %0, %1 : tensor<4xf32>\n"
        "  %3 = stablehlo.exponential %a : tensor<4xf32>\n"
        "  return %2 : tensor<4xf32>\n"
        "}\n";
    load();
    PJRT_Client *c = client_new();
    PJRT_LoadedExecutable *e = compile(c, text, sizeof text - 1);
    ARGS(LoadedExecutable_GetExecutable, .loaded_executable = e);
    OK(CALL(LoadedExecutable_GetExecutable, &LoadedExecutable_GetExecutable));
    PJRT_Executable *x = LoadedExecutable_GetExecutable.executable;
    PJRT_Program prog = {.struct_size = PJRT_Program_STRUCT_SIZE};
    ARGS(Executable_OptimizedProgram, .executable = x, .program = &prog);
    OK(CALL(Executable_OptimizedProgram, &Executable_OptimizedProgram));
    cr_assert_eq(prog.format_size, 4);
    cr_assert(memcmp(prog.format, "mlir", 4) == 0);
    size_t size = prog.code_size;
    cr_assert_gt(size, 0);
    char *code = malloc(size);
    cr_assert(code);
    /* a buffer too small is refused, saying how much is needed */
    prog.code = code;
    prog.code_size = size - 1;
    fails(CALL(Executable_OptimizedProgram, &Executable_OptimizedProgram),
          PJRT_Error_Code_INVALID_ARGUMENT, "code_size");
    prog.code_size = size;
    OK(CALL(Executable_OptimizedProgram, &Executable_OptimizedProgram));
    cr_assert_eq(prog.code_size, size);
    cr_assert_eq(count_of(code, size, "stablehlo.add"), 1, "%.*s", (int)size, code);
    cr_assert_eq(count_of(code, size, "stablehlo.multiply"), 1);
    cr_assert_eq(count_of(code, size, "exponential"), 0);
    free(code);
    Executable_OptimizedProgram.program = NULL;
    fails(CALL(Executable_OptimizedProgram, &Executable_OptimizedProgram),
          PJRT_Error_Code_INVALID_ARGUMENT, "program is NULL");

    ARGS(Executable_GetCostAnalysis, .executable = x);
    OK(CALL(Executable_GetCostAnalysis, &Executable_GetCostAnalysis));
    double flops = -1, transcendentals = -1, accessed = -1;
    for (size_t i = 0; i < Executable_GetCostAnalysis.num_properties; i++) {
        const PJRT_NamedValue *v = &Executable_GetCostAnalysis.properties[i];
        cr_assert_eq(v->type, PJRT_NamedValue_kFloat);
        if (v->name_size == 5 && memcmp(v->name, "flops", 5) == 0) flops = v->float_value;
        if (v->name_size == 15 && memcmp(v->name, "transcendentals", 15) == 0)
            transcendentals = v->float_value;
        if (v->name_size == 14 && memcmp(v->name, "bytes accessed", 14) == 0)
            accessed = v->float_value;
    }
    cr_assert_eq(flops, 8);           /* an add and a multiply of 4 elements */
    cr_assert_eq(transcendentals, 0); /* the exponential was dead */
    cr_assert_geq(accessed, 3 * 16);  /* two arguments read, a result written */
    Executable_GetCostAnalysis.executable = NULL;
    fails(CALL(Executable_GetCostAnalysis, &Executable_GetCostAnalysis),
          PJRT_Error_Code_INVALID_ARGUMENT, "executable is NULL");
    ARGS(Executable_Destroy, .executable = x);
    OK(CALL(Executable_Destroy, &Executable_Destroy));
    destroy_loaded(e);
    client_free(c);
}
