/* SPDX-License-Identifier: Apache-2.0 */
/* The PJRT plugin from several threads under ThreadSanitizer (make test-tsan): as jaxlib
 * uses it, one thread compiles while others move arrays in, execute (queued on the
 * client's worker, each execution on the pending output of the one before) and read
 * results back. ThreadSanitizer reports any data race (the test fails on its report); this
 * program checks the results. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tests/pjrt/pjrt_caller.h"

static const pjrt_api *api;
static PJRT_Client *client;
static const char program[] = "func.func @main(%a: tensor<64xf32>) -> tensor<64xf32> {\n"
                              "  %0 = stablehlo.add %a, %a : tensor<64xf32>\n"
                              "  return %0 : tensor<64xf32>\n}\n";

static int failures;
static pthread_mutex_t report = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what, PJRT_Error *e) {
    PJRT_Error_Message_Args m = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE, .error = e};
    if (e) ((void (*)(PJRT_Error_Message_Args *))api->slots[S_Error_Message])(&m);
    pthread_mutex_lock(&report);
    printf("FAIL %s: %.*s\n", what, e ? (int)m.message_size : 0, e ? m.message : "");
    failures++;
    pthread_mutex_unlock(&report);
}

#define OK(what, call)             \
    do {                           \
        PJRT_Error *err_ = (call); \
        if (err_) {                \
            fail(what, err_);      \
            return NULL;           \
        }                          \
    } while (0)

static void event_done(PJRT_Event *e) {
    ARGS(Event_Await, .event = e);
    PJRT_Error *err = CALL(Event_Await, &Event_Await);
    if (err) fail("await", err);
    ARGS(Event_Destroy, .event = e);
    CALL(Event_Destroy, &Event_Destroy);
}

static PJRT_LoadedExecutable *compile(void) {
    PJRT_Program p = {.struct_size = PJRT_Program_STRUCT_SIZE,
                      .code = (char *)program,
                      .code_size = sizeof program - 1,
                      .format = "mlir",
                      .format_size = 4};
    ARGS(Client_Compile, .client = client, .program = &p);
    PJRT_Error *e = CALL(Client_Compile, &Client_Compile);
    if (e) fail("compile", e);
    return Client_Compile.executable;
}

/* Uploads an array, doubles it 8 times through queued executions, reads it back. */
static void *execute_thread(void *arg) {
    PJRT_LoadedExecutable *x = arg;
    for (int round = 0; round < 20; round++) {
        float a[64], r[64];
        for (int i = 0; i < 64; i++)
            a[i] = (float)(i + round);
        int64_t dims[1] = {64};
        ARGS(Client_BufferFromHostBuffer, .client = client, .data = a, .type = PJRT_Buffer_Type_F32,
             .dims = dims, .num_dims = 1);
        OK("upload", CALL(Client_BufferFromHostBuffer, &Client_BufferFromHostBuffer));
        event_done(Client_BufferFromHostBuffer.done_with_host_buffer);
        PJRT_Buffer *b = Client_BufferFromHostBuffer.buffer;
        for (int k = 0; k < 8; k++) {
            PJRT_Buffer *out[1] = {NULL};
            PJRT_Buffer **outs[1] = {out};
            PJRT_Buffer *const *lists[1] = {&b};
            PJRT_Event *done[1] = {NULL};
            ARGS(LoadedExecutable_Execute, .executable = x, .argument_lists = lists,
                 .num_devices = 1, .num_args = 1, .output_lists = outs,
                 .device_complete_events = done);
            OK("execute", CALL(LoadedExecutable_Execute, &LoadedExecutable_Execute));
            ARGS(Buffer_Destroy, .buffer = b);
            CALL(Buffer_Destroy, &Buffer_Destroy); /* the queued execution holds it */
            ARGS(Event_Destroy, .event = done[0]);
            CALL(Event_Destroy, &Event_Destroy);
            b = out[0];
        }
        ARGS(Buffer_ToHostBuffer, .src = b, .dst = r, .dst_size = sizeof r);
        OK("download", CALL(Buffer_ToHostBuffer, &Buffer_ToHostBuffer));
        event_done(Buffer_ToHostBuffer.event);
        for (int i = 0; i < 64; i++)
            if (r[i] != a[i] * 256) {
                fail("result", NULL);
                break;
            }
        ARGS(Buffer_Destroy, .buffer = b);
        CALL(Buffer_Destroy, &Buffer_Destroy);
    }
    return NULL;
}

static void *compile_thread(void *arg) {
    (void)arg;
    for (int i = 0; i < 20; i++) {
        PJRT_LoadedExecutable *x = compile();
        if (!x) return NULL;
        ARGS(LoadedExecutable_Destroy, .executable = x);
        CALL(LoadedExecutable_Destroy, &LoadedExecutable_Destroy);
    }
    return NULL;
}

int main(void) {
    api = pjrt_load(KILN_PJRT_LIBRARY);
    if (!api) {
        printf("FAIL dlopen: %s\n", dlerror());
        return 1;
    }
    PJRT_NamedValue worker = {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                              .name = "execution",
                              .name_size = 9,
                              .type = PJRT_NamedValue_kString,
                              .string_value = "worker",
                              .value_size = 6};
    ARGS(Client_Create, .create_options = &worker, .num_options = 1);
    PJRT_Error *e = CALL(Client_Create, &Client_Create);
    if (e) {
        fail("client", e);
        return 1;
    }
    client = Client_Create.client;
    PJRT_LoadedExecutable *x = compile();
    pthread_t threads[3];
    pthread_create(&threads[0], NULL, execute_thread, x);
    pthread_create(&threads[1], NULL, execute_thread, x);
    pthread_create(&threads[2], NULL, compile_thread, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(threads[i], NULL);
    ARGS(LoadedExecutable_Destroy, .executable = x);
    CALL(LoadedExecutable_Destroy, &LoadedExecutable_Destroy);
    ARGS(Client_Destroy, .client = client);
    CALL(Client_Destroy, &Client_Destroy);
    printf("pjrt_tsan: %s\n", failures ? "failed" : "2 threads executing, 1 compiling: ok");
    return failures ? 1 : 0;
}
