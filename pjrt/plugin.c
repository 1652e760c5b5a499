/* SPDX-License-Identifier: Apache-2.0 */
/* libkiln_pjrt's entry point (GetPjrtApi) and its function table, with every slot filled;
 * errors, the plugin's attributes, and events. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/plugin.h"

/* ---- errors ------------------------------------------------------------------------------ */

/* What is returned when even an error cannot be allocated; never freed. */
static PJRT_Error out_of_memory = {NULL, PJRT_Error_Code_RESOURCE_EXHAUSTED, 0};

PJRT_Error *kiln_pjrt_error(PJRT_Error_Code code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char probe[1];
    int n = vsnprintf(probe, sizeof probe, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    PJRT_Error *e = malloc(sizeof *e + (size_t)n + 1);
    if (!e) return &out_of_memory;
    e->reserved = NULL;
    e->code = code;
    e->length = (size_t)n;
    va_start(ap, fmt);
    vsnprintf(e->message, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return e;
}

PJRT_Error *kiln_pjrt_ctx_error(kiln_ctx *cx, const char *what) {
    kiln_status s = kiln_ctx_status(cx);
    PJRT_Error_Code code = s == KILN_OK ? PJRT_Error_Code_INTERNAL : (PJRT_Error_Code)s;
    PJRT_Error *e =
        kiln_pjrt_error(code, "%s: %s", what, s == KILN_OK ? "failed" : kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);
    return e;
}

PJRT_Error *kiln_pjrt_unimplemented(const char *function, const char *why) {
    return kiln_pjrt_error(PJRT_Error_Code_UNIMPLEMENTED, "%s is not implemented by kiln%s%s",
                           function, why ? ": " : "", why ? why : "");
}

void kiln_pjrt_error_free(PJRT_Error *e) {
    if (e && e != &out_of_memory) free(e);
}

static void error_destroy(PJRT_Error_Destroy_Args *args) {
    if (args) kiln_pjrt_error_free(args->error);
}

static void error_message(PJRT_Error_Message_Args *args) {
    if (!args) return;
    static const char none[] = "(no error)", oom[] = "kiln: out of memory";
    if (!args->error || args->error == &out_of_memory) {
        args->message = args->error ? oom : none;
        args->message_size = args->error ? sizeof oom - 1 : sizeof none - 1;
        return;
    }
    args->message = args->error->message;
    args->message_size = args->error->length;
}

PJRT_Error *kiln_pjrt_Error_GetCode(PJRT_Error_GetCode_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Error_GetCode_Args, code);
    args->code = args->error ? args->error->code : PJRT_Error_Code_OK;
    return NULL;
}

/* ---- the plugin -------------------------------------------------------------------------- */

PJRT_Error *kiln_pjrt_Plugin_Initialize(PJRT_Plugin_Initialize_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Plugin_Initialize_Args, extension_start);
    return NULL;
}

/* The StableHLO versions kiln's artifact reader takes: the framework serializes the
 * programs it compiles to the current one (or its own newest, if older). */
static const int64_t stablehlo_current[3] = {1, 20, 0};
static const int64_t stablehlo_minimum[3] = {0, 9, 0};

#define NAMED_LIST(key, list)                                                                 \
    {                                                                                         \
        .struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = key, .name_size = sizeof key - 1, \
        .type = PJRT_NamedValue_kInt64List, .int64_array_value = list, .value_size = 3        \
    }

static const PJRT_NamedValue plugin_attributes[] = {
    NAMED_LIST("stablehlo_current_version", stablehlo_current),
    NAMED_LIST("stablehlo_minimum_version", stablehlo_minimum),
};

PJRT_Error *kiln_pjrt_Plugin_Attributes(PJRT_Plugin_Attributes_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Plugin_Attributes_Args, num_attributes);
    args->attributes = plugin_attributes;
    args->num_attributes = sizeof plugin_attributes / sizeof plugin_attributes[0];
    return NULL;
}

/* ---- events ------------------------------------------------------------------------------ */

/* A copy of n bytes of s, NUL-terminated; NULL when out of memory. */
static char *copy_string(const char *s, size_t n) {
    char *c = malloc(n + 1);
    if (!c) return NULL;
    if (n) memcpy(c, s, n);
    c[n] = 0;
    return c;
}

struct kiln_pjrt_callback {
    PJRT_Event_OnReadyCallback fn;
    void *user;
    struct kiln_pjrt_callback *next;
};

static PJRT_Error *event_error(const PJRT_Event *e) {
    if (e->code == PJRT_Error_Code_OK) return NULL;
    return kiln_pjrt_error(e->code, "%s", e->message ? e->message : "failed");
}

PJRT_Event *kiln_pjrt_event_new(bool ready, const PJRT_Error *error) {
    PJRT_Event *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    atomic_init(&e->refs, 1);
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->done, NULL);
    e->ready = ready;
    e->code = PJRT_Error_Code_OK;
    if (error && error->code != PJRT_Error_Code_OK) {
        e->code = error->code;
        const char *text = error == &out_of_memory ? "kiln: out of memory" : error->message;
        e->message = copy_string(text, strlen(text));
    }
    return e;
}

void kiln_pjrt_event_complete(PJRT_Event *e, PJRT_Error_Code code, const char *message) {
    pthread_mutex_lock(&e->lock);
    if (e->ready) {
        pthread_mutex_unlock(&e->lock);
        return;
    }
    e->ready = true;
    e->code = code;
    if (code != PJRT_Error_Code_OK) {
        const char *text = message ? message : "failed";
        e->message = copy_string(text, strlen(text));
    }
    struct kiln_pjrt_callback *cb = e->callbacks;
    e->callbacks = NULL;
    pthread_cond_broadcast(&e->done);
    pthread_mutex_unlock(&e->lock);
    /* outside the lock, and holding a reference: a callback may release the event */
    kiln_pjrt_event_retain(e);
    while (cb) {
        struct kiln_pjrt_callback *next = cb->next;
        cb->fn(event_error(e), cb->user);
        free(cb);
        cb = next;
    }
    kiln_pjrt_event_release(e);
}

#define CHECK_EVENT(args) \
    if (!(args)->event)   \
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: event is NULL", __func__);

PJRT_Event *kiln_pjrt_event_retain(PJRT_Event *e) {
    if (e) atomic_fetch_add(&e->refs, 1);
    return e;
}

void kiln_pjrt_event_release(PJRT_Event *e) {
    if (!e || atomic_fetch_sub(&e->refs, 1) != 1) return;
    /* callbacks still registered never run: every holder gave the event up */
    for (struct kiln_pjrt_callback *cb = e->callbacks, *next; cb; cb = next) {
        next = cb->next;
        free(cb);
    }
    pthread_cond_destroy(&e->done);
    pthread_mutex_destroy(&e->lock);
    free(e->message);
    free(e);
}

PJRT_Error *kiln_pjrt_event_wait(PJRT_Event *e) {
    pthread_mutex_lock(&e->lock);
    while (!e->ready)
        pthread_cond_wait(&e->done, &e->lock);
    pthread_mutex_unlock(&e->lock);
    return event_error(e);
}

PJRT_Error *kiln_pjrt_Event_Destroy(PJRT_Event_Destroy_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Event_Destroy_Args, event);
    kiln_pjrt_event_release(args->event);
    return NULL;
}

PJRT_Error *kiln_pjrt_Event_IsReady(PJRT_Event_IsReady_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Event_IsReady_Args, is_ready);
    CHECK_EVENT(args);
    pthread_mutex_lock(&args->event->lock);
    args->is_ready = args->event->ready;
    pthread_mutex_unlock(&args->event->lock);
    return NULL;
}

PJRT_Error *kiln_pjrt_Event_Error(PJRT_Event_Error_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Event_Error_Args, event);
    CHECK_EVENT(args);
    pthread_mutex_lock(&args->event->lock);
    bool ready = args->event->ready;
    pthread_mutex_unlock(&args->event->lock);
    if (!ready)
        return kiln_pjrt_error(PJRT_Error_Code_FAILED_PRECONDITION,
                               "PJRT_Event_Error: the event is not ready");
    return event_error(args->event);
}

PJRT_Error *kiln_pjrt_Event_Await(PJRT_Event_Await_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Event_Await_Args, event);
    CHECK_EVENT(args);
    return kiln_pjrt_event_wait(args->event);
}

PJRT_Error *kiln_pjrt_Event_OnReady(PJRT_Event_OnReady_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Event_OnReady_Args, user_arg);
    CHECK_EVENT(args);
    if (!args->callback)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "PJRT_Event_OnReady: callback is NULL");
    PJRT_Event *e = args->event;
    pthread_mutex_lock(&e->lock);
    if (!e->ready) {
        struct kiln_pjrt_callback *cb = malloc(sizeof *cb);
        if (!cb) {
            pthread_mutex_unlock(&e->lock);
            return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED,
                                   "PJRT_Event_OnReady: out of memory");
        }
        *cb = (struct kiln_pjrt_callback){args->callback, args->user_arg, e->callbacks};
        e->callbacks = cb;
        pthread_mutex_unlock(&e->lock);
        return NULL;
    }
    pthread_mutex_unlock(&e->lock);
    args->callback(event_error(e), args->user_arg);
    return NULL;
}

PJRT_Error *kiln_pjrt_Event_Create(PJRT_Event_Create_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Event_Create_Args, event);
    args->event = kiln_pjrt_event_new(false, NULL);
    if (!args->event)
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "PJRT_Event_Create: out of "
                                                                   "memory");
    return NULL;
}

PJRT_Error *kiln_pjrt_Event_Set(PJRT_Event_Set_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Event_Set_Args, error_message_size);
    CHECK_EVENT(args);
    char *message = NULL;
    if (args->error_code != PJRT_Error_Code_OK) {
        message = copy_string(args->error_message ? args->error_message : "",
                              args->error_message ? args->error_message_size : 0);
        if (!message)
            return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED,
                                   "PJRT_Event_Set: out of memory");
    }
    kiln_pjrt_event_complete(args->event, args->error_code, message);
    free(message);
    return NULL;
}

/* ---- the function table ------------------------------------------------------------------ */

typedef void (*kiln_pjrt_fn)(void);

/* Every slot's fallback: UNIMPLEMENTED naming its function (never a NULL slot: the
 * framework calls some without checking). */
#define PJRT_SLOT(index, name)                               \
    static PJRT_Error *unimplemented_##name(void *args) {    \
        (void)args;                                          \
        return kiln_pjrt_unimplemented("PJRT_" #name, NULL); \
    }
#include "pjrt/slots.def"
#undef PJRT_SLOT

enum {
#define PJRT_SLOT(index, name) SLOT_##name = index,
#include "pjrt/slots.def"
#undef PJRT_SLOT
    SLOT_COUNT
};
_Static_assert(SLOT_COUNT == 129, "API version 0.94 has 129 slots");

/* The table the framework reads: struct_size covers the 0.94 slots. Newer frameworks test
 * a few slots past it for NULL without checking struct_size, so the table goes on with
 * NULLs well beyond (a newer version's slots up to 0.112 and more). */
typedef struct kiln_pjrt_api {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Api_Version version;
    kiln_pjrt_fn slots[SLOT_COUNT];
    kiln_pjrt_fn beyond[64];
} kiln_pjrt_api;
_Static_assert(offsetof(kiln_pjrt_api, slots) == 40, "the version is 24 bytes at offset 16");

static kiln_pjrt_api api = {
    .struct_size = offsetof(kiln_pjrt_api, beyond),
    .version = {.struct_size = KILN_PJRT_STRUCT_SIZE(PJRT_Api_Version, minor_version),
                .major_version = KILN_PJRT_API_MAJOR,
                .minor_version = KILN_PJRT_API_MINOR},
    .slots =
        {
#define PJRT_SLOT(index, name) [index] = (kiln_pjrt_fn)unimplemented_##name,
#include "pjrt/slots.def"
#undef PJRT_SLOT
        },
};

static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void fill_api(void) {
    api.slots[SLOT_Error_Destroy] = (kiln_pjrt_fn)error_destroy;
    api.slots[SLOT_Error_Message] = (kiln_pjrt_fn)error_message;
#define KILN_PJRT_DECLARE(name) api.slots[SLOT_##name] = (kiln_pjrt_fn)kiln_pjrt_##name;
#include "pjrt/implemented.def"
#undef KILN_PJRT_DECLARE
}

/* The one symbol the library exports. */
__attribute__((visibility("default"))) const void *GetPjrtApi(void) {
    pthread_once(&api_once, fill_api);
    return &api;
}
