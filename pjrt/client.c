/* SPDX-License-Identifier: Apache-2.0 */
/* The PJRT client: a kiln ctx and its logical CPU devices, each with one memory ("device",
 * the host memory the device's tensors live in), and what the framework asks of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/plugin.h"

/* The platform name: what device.platform says and what JAX lowers for (its generic
 * lowering rules; see pjrt/README.md). */
static const char platform_name[] = "kiln";
static const char memory_kind[] = "device";

kiln_ctx *kiln_pjrt_enter(PJRT_Client *c) {
    pthread_mutex_lock(&c->lock);
    kiln_ctx_clear_error(c->cx);
    if (kiln_scope_begin(c->cx) != KILN_OK) {
        pthread_mutex_unlock(&c->lock);
        return NULL;
    }
    return c->cx;
}

void kiln_pjrt_leave(PJRT_Client *c) {
    kiln_scope_end(c->cx);
    pthread_mutex_unlock(&c->lock);
}

/* An option the framework passed, or NULL. */
static const PJRT_NamedValue *option(const PJRT_Client_Create_Args *args, const char *name) {
    for (size_t i = 0; i < args->num_options; i++) {
        const PJRT_NamedValue *v = &args->create_options[i];
        if (v->name && v->name_size == strlen(name) && memcmp(v->name, name, v->name_size) == 0)
            return v;
    }
    return NULL;
}

static PJRT_Error *int_option(const PJRT_Client_Create_Args *args, const char *name, int *out) {
    const PJRT_NamedValue *v = option(args, name);
    if (!v) return NULL;
    if (v->type != PJRT_NamedValue_kInt64 || v->int64_value < 0 || v->int64_value > 1 << 20)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "PJRT_Client_Create: option '%s' must be a non-negative integer",
                               name);
    *out = (int)v->int64_value;
    return NULL;
}

/* Where executions run: the option "execution", else KILN_PJRT_EXECUTION, else inline. */
static PJRT_Error *execution_option(const PJRT_Client_Create_Args *args, int *out) {
    const PJRT_NamedValue *v = option(args, "execution");
    const char *text = getenv("KILN_PJRT_EXECUTION");
    size_t len = text ? strlen(text) : 0;
    if (v) {
        if (v->type != PJRT_NamedValue_kString)
            return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                                   "PJRT_Client_Create: option 'execution' must be a string");
        text = v->string_value;
        len = v->value_size;
    }
    if (!text || !len) return NULL;
    static const char *const names[] = {
        [KILN_PJRT_INLINE] = "inline", [KILN_PJRT_WORKER] = "worker"};
    for (int i = 0; i < 2; i++)
        if (len == strlen(names[i]) && memcmp(text, names[i], len) == 0) {
            *out = i;
            return NULL;
        }
    return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                           "PJRT_Client_Create: execution '%.*s' is not inline or worker",
                           (int)(len > 40 ? 40 : len), text);
}

static void client_free(PJRT_Client *c) {
    if (!c) return;
    kiln_pjrt_queue_stop(c);
    if (c->cx) kiln_ctx_release(c->cx);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->queue_lock);
    pthread_cond_destroy(&c->queue_wake);
    free(c->devices);
    free(c->topology.descriptions);
    free(c->device_list);
    free(c->memory_list);
    free(c);
}

PJRT_Error *kiln_pjrt_Client_Create(PJRT_Client_Create_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_Create_Args, client);
    /* The key-value callbacks are for several processes (and garbage otherwise): unused. */
    kiln_ctx_options o = kiln_ctx_options_default();
    PJRT_Error *e = int_option(args, "cpu_devices", &o.cpu_devices);
    if (!e) e = int_option(args, "num_threads", &o.num_threads);
    if (e) return e;
    int execution = KILN_PJRT_INLINE;
    e = execution_option(args, &execution);
    if (e) return e;
    PJRT_Client *c = calloc(1, sizeof *c);
    if (!c)
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "PJRT_Client_Create: out "
                                                                   "of memory");
    c->execution = execution;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->queue_lock, NULL);
    pthread_cond_init(&c->queue_wake, NULL);
    kiln_status s = kiln_ctx_create(&o, &c->cx);
    if (s != KILN_OK) {
        client_free(c);
        return kiln_pjrt_error((PJRT_Error_Code)s,
                               "PJRT_Client_Create: kiln_ctx_create failed "
                               "(%s)",
                               kiln_status_name(s));
    }
    int n = kiln_device_count(c->cx, KILN_DEVICE_TYPE_CPU);
    c->n_devices = n > 0 ? n : 1;
    c->devices = calloc((size_t)c->n_devices, sizeof *c->devices);
    c->device_list = calloc((size_t)c->n_devices, sizeof *c->device_list);
    c->memory_list = calloc((size_t)c->n_devices, sizeof *c->memory_list);
    c->topology = (PJRT_TopologyDescription){
        .client = c,
        .descriptions = calloc((size_t)c->n_devices, sizeof(PJRT_DeviceDescription *))};
    if (!c->devices || !c->device_list || !c->memory_list || !c->topology.descriptions) {
        client_free(c);
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "PJRT_Client_Create: out "
                                                                   "of memory");
    }
    for (int i = 0; i < c->n_devices; i++) {
        PJRT_Device *d = &c->devices[i];
        d->client = c;
        d->index = i;
        d->description.id = i;
        snprintf(d->description.kind, sizeof d->description.kind, "kiln cpu");
        snprintf(d->description.debug, sizeof d->description.debug, "kiln:%d", i);
        snprintf(d->description.text, sizeof d->description.text, "KilnDevice(id=%d)", i);
        d->memory = (PJRT_Memory){.client = c, .id = i, .device = d};
        snprintf(d->memory.debug, sizeof d->memory.debug, "kiln:%d %s", i, memory_kind);
        snprintf(d->memory.text, sizeof d->memory.text, "Memory(kind=%s, device=kiln:%d)",
                 memory_kind, i);
        d->memories[0] = &d->memory;
        c->device_list[i] = d;
        c->topology.descriptions[i] = &d->description;
        c->memory_list[i] = &d->memory;
    }
    snprintf(c->version, sizeof c->version, "kiln %s (PJRT C API %d.%d)", kiln_version_string(),
             KILN_PJRT_API_MAJOR, KILN_PJRT_API_MINOR);
    args->client = c;
    return NULL;
}

PJRT_Error *kiln_pjrt_Client_Destroy(PJRT_Client_Destroy_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_Destroy_Args, client);
    client_free(args->client);
    return NULL;
}

#define CHECK_HANDLE(h) \
    if (!(h))           \
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: %s is NULL", __func__, #h);

PJRT_Error *kiln_pjrt_Client_PlatformName(PJRT_Client_PlatformName_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_PlatformName_Args, platform_name_size);
    args->platform_name = platform_name;
    args->platform_name_size = sizeof platform_name - 1;
    return NULL;
}

PJRT_Error *kiln_pjrt_Client_ProcessIndex(PJRT_Client_ProcessIndex_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_ProcessIndex_Args, process_index);
    args->process_index = 0;
    return NULL;
}

PJRT_Error *kiln_pjrt_Client_PlatformVersion(PJRT_Client_PlatformVersion_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_PlatformVersion_Args, platform_version_size);
    CHECK_HANDLE(args->client);
    args->platform_version = args->client->version;
    args->platform_version_size = strlen(args->client->version);
    return NULL;
}

PJRT_Error *kiln_pjrt_Client_Devices(PJRT_Client_Devices_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_Devices_Args, num_devices);
    CHECK_HANDLE(args->client);
    args->devices = args->client->device_list;
    args->num_devices = (size_t)args->client->n_devices;
    return NULL;
}

PJRT_Error *kiln_pjrt_Client_AddressableDevices(PJRT_Client_AddressableDevices_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_AddressableDevices_Args, num_addressable_devices);
    CHECK_HANDLE(args->client);
    args->addressable_devices = args->client->device_list;
    args->num_addressable_devices = (size_t)args->client->n_devices;
    return NULL;
}

static PJRT_Error *device_by_id(PJRT_Client *c, int id, PJRT_Device **out) {
    if (!c) return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "client is NULL");
    if (id < 0 || id >= c->n_devices)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "no kiln device with id %d (there are %d)", id, c->n_devices);
    *out = &c->devices[id];
    return NULL;
}

PJRT_Error *kiln_pjrt_Client_LookupDevice(PJRT_Client_LookupDevice_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_LookupDevice_Args, device);
    return device_by_id(args->client, args->id, &args->device);
}

PJRT_Error *
kiln_pjrt_Client_LookupAddressableDevice(PJRT_Client_LookupAddressableDevice_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_LookupAddressableDevice_Args, addressable_device);
    return device_by_id(args->client, args->local_hardware_id, &args->addressable_device);
}

PJRT_Error *kiln_pjrt_Client_AddressableMemories(PJRT_Client_AddressableMemories_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_AddressableMemories_Args, num_addressable_memories);
    CHECK_HANDLE(args->client);
    args->addressable_memories = args->client->memory_list;
    args->num_addressable_memories = (size_t)args->client->n_devices;
    return NULL;
}

PJRT_Error *
kiln_pjrt_Client_DefaultDeviceAssignment(PJRT_Client_DefaultDeviceAssignment_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_DefaultDeviceAssignment_Args, default_assignment);
    CHECK_HANDLE(args->client);
    size_t n = (size_t)args->num_replicas * (size_t)args->num_partitions;
    if (args->num_replicas < 1 || args->num_partitions < 1 || n > (size_t)args->client->n_devices)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "PJRT_Client_DefaultDeviceAssignment: %d replicas x %d partitions "
                               "need more than the %d kiln devices",
                               args->num_replicas, args->num_partitions, args->client->n_devices);
    if (args->default_assignment_size < n || !args->default_assignment)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "PJRT_Client_DefaultDeviceAssignment: default_assignment holds %zu "
                               "entries; %zu needed",
                               args->default_assignment_size, n);
    for (size_t i = 0; i < n; i++)
        args->default_assignment[i] = (int)i;
    return NULL;
}

/* ---- device descriptions ----------------------------------------------------------------- */

#define DESCRIPTION(args) CHECK_HANDLE((args)->device_description)

PJRT_Error *kiln_pjrt_DeviceDescription_Id(PJRT_DeviceDescription_Id_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_Id_Args, id);
    DESCRIPTION(args);
    args->id = args->device_description->id;
    return NULL;
}

PJRT_Error *
kiln_pjrt_DeviceDescription_ProcessIndex(PJRT_DeviceDescription_ProcessIndex_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_ProcessIndex_Args, process_index);
    DESCRIPTION(args);
    args->process_index = 0;
    return NULL;
}

PJRT_Error *kiln_pjrt_DeviceDescription_Attributes(PJRT_DeviceDescription_Attributes_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_Attributes_Args, attributes);
    DESCRIPTION(args);
    args->num_attributes = 0;
    args->attributes = NULL;
    return NULL;
}

PJRT_Error *kiln_pjrt_DeviceDescription_Kind(PJRT_DeviceDescription_Kind_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_Kind_Args, device_kind_size);
    DESCRIPTION(args);
    args->device_kind = args->device_description->kind;
    args->device_kind_size = strlen(args->device_description->kind);
    return NULL;
}

PJRT_Error *kiln_pjrt_DeviceDescription_DebugString(PJRT_DeviceDescription_DebugString_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_DebugString_Args, debug_string_size);
    DESCRIPTION(args);
    args->debug_string = args->device_description->debug;
    args->debug_string_size = strlen(args->device_description->debug);
    return NULL;
}

PJRT_Error *kiln_pjrt_DeviceDescription_ToString(PJRT_DeviceDescription_ToString_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_ToString_Args, to_string_size);
    DESCRIPTION(args);
    args->to_string = args->device_description->text;
    args->to_string_size = strlen(args->device_description->text);
    return NULL;
}

/* ---- devices ----------------------------------------------------------------------------- */

PJRT_Error *kiln_pjrt_Device_GetDescription(PJRT_Device_GetDescription_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Device_GetDescription_Args, device_description);
    CHECK_HANDLE(args->device);
    args->device_description = &args->device->description;
    return NULL;
}

PJRT_Error *kiln_pjrt_Device_IsAddressable(PJRT_Device_IsAddressable_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Device_IsAddressable_Args, is_addressable);
    CHECK_HANDLE(args->device);
    args->is_addressable = true;
    return NULL;
}

PJRT_Error *kiln_pjrt_Device_LocalHardwareId(PJRT_Device_LocalHardwareId_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Device_LocalHardwareId_Args, local_hardware_id);
    CHECK_HANDLE(args->device);
    args->local_hardware_id = args->device->index;
    return NULL;
}

PJRT_Error *kiln_pjrt_Device_AddressableMemories(PJRT_Device_AddressableMemories_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Device_AddressableMemories_Args, num_memories);
    CHECK_HANDLE(args->device);
    args->memories = args->device->memories;
    args->num_memories = 1;
    return NULL;
}

PJRT_Error *kiln_pjrt_Device_DefaultMemory(PJRT_Device_DefaultMemory_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Device_DefaultMemory_Args, memory);
    CHECK_HANDLE(args->device);
    args->memory = &args->device->memory;
    return NULL;
}

static void no_attributes_deleter(PJRT_Device_Attributes *attributes) { (void)attributes; }

PJRT_Error *kiln_pjrt_Device_GetAttributes(PJRT_Device_GetAttributes_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Device_GetAttributes_Args, attributes_deleter);
    CHECK_HANDLE(args->device);
    args->attributes = NULL;
    args->num_attributes = 0;
    args->device_attributes = NULL;
    args->attributes_deleter = no_attributes_deleter;
    return NULL;
}

/* A profiler's marker around work on a device: kiln records nothing for it. */
struct PJRT_AsyncTrackingEvent {
    int unused;
};
static PJRT_AsyncTrackingEvent tracking_event;

PJRT_Error *
kiln_pjrt_Device_CreateAsyncTrackingEvent(PJRT_Device_CreateAsyncTrackingEvent_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Device_CreateAsyncTrackingEvent_Args, event);
    args->event = &tracking_event;
    return NULL;
}

PJRT_Error *kiln_pjrt_AsyncTrackingEvent_Destroy(PJRT_AsyncTrackingEvent_Destroy_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_AsyncTrackingEvent_Destroy_Args, event);
    return NULL;
}

/* ---- memories ---------------------------------------------------------------------------- */

PJRT_Error *kiln_pjrt_Memory_Id(PJRT_Memory_Id_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Memory_Id_Args, id);
    CHECK_HANDLE(args->memory);
    args->id = args->memory->id;
    return NULL;
}

PJRT_Error *kiln_pjrt_Memory_Kind(PJRT_Memory_Kind_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Memory_Kind_Args, kind_size);
    CHECK_HANDLE(args->memory);
    args->kind = memory_kind;
    args->kind_size = sizeof memory_kind - 1;
    return NULL;
}

PJRT_Error *kiln_pjrt_Memory_Kind_Id(PJRT_Memory_Kind_Id_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Memory_Kind_Id_Args, kind_id);
    CHECK_HANDLE(args->memory);
    args->kind_id = 0; /* the one kind */
    return NULL;
}

PJRT_Error *kiln_pjrt_Memory_DebugString(PJRT_Memory_DebugString_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Memory_DebugString_Args, debug_string_size);
    CHECK_HANDLE(args->memory);
    args->debug_string = args->memory->debug;
    args->debug_string_size = strlen(args->memory->debug);
    return NULL;
}

PJRT_Error *kiln_pjrt_Memory_ToString(PJRT_Memory_ToString_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Memory_ToString_Args, to_string_size);
    CHECK_HANDLE(args->memory);
    args->to_string = args->memory->text;
    args->to_string_size = strlen(args->memory->text);
    return NULL;
}

PJRT_Error *kiln_pjrt_Memory_AddressableByDevices(PJRT_Memory_AddressableByDevices_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Memory_AddressableByDevices_Args, num_devices);
    CHECK_HANDLE(args->memory);
    PJRT_Device *d = args->memory->device;
    args->devices = &d->client->device_list[d->index];
    args->num_devices = 1;
    return NULL;
}

/* ---- the topology: the client's devices ---------------------------------------------------- */

PJRT_Error *kiln_pjrt_Client_TopologyDescription(PJRT_Client_TopologyDescription_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_TopologyDescription_Args, topology);
    CHECK_HANDLE(args->client);
    args->topology = &args->client->topology;
    return NULL;
}

PJRT_Error *kiln_pjrt_TopologyDescription_Destroy(PJRT_TopologyDescription_Destroy_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_TopologyDescription_Destroy_Args, topology);
    /* kiln's topologies are its clients': they go with the client */
    return NULL;
}

PJRT_Error *
kiln_pjrt_TopologyDescription_PlatformName(PJRT_TopologyDescription_PlatformName_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_TopologyDescription_PlatformName_Args, platform_name_size);
    CHECK_HANDLE(args->topology);
    args->platform_name = platform_name;
    args->platform_name_size = sizeof platform_name - 1;
    return NULL;
}

PJRT_Error *
kiln_pjrt_TopologyDescription_PlatformVersion(PJRT_TopologyDescription_PlatformVersion_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_TopologyDescription_PlatformVersion_Args,
                         platform_version_size);
    CHECK_HANDLE(args->topology);
    args->platform_version = args->topology->client->version;
    args->platform_version_size = strlen(args->topology->client->version);
    return NULL;
}

PJRT_Error *kiln_pjrt_TopologyDescription_GetDeviceDescriptions(
    PJRT_TopologyDescription_GetDeviceDescriptions_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_TopologyDescription_GetDeviceDescriptions_Args,
                         num_descriptions);
    CHECK_HANDLE(args->topology);
    args->descriptions = args->topology->descriptions;
    args->num_descriptions = (size_t)args->topology->client->n_devices;
    return NULL;
}

PJRT_Error *
kiln_pjrt_TopologyDescription_Attributes(PJRT_TopologyDescription_Attributes_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_TopologyDescription_Attributes_Args, num_attributes);
    CHECK_HANDLE(args->topology);
    args->attributes = NULL;
    args->num_attributes = 0;
    return NULL;
}

PJRT_Error *kiln_pjrt_Device_PoisonExecution(PJRT_Device_PoisonExecution_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Device_PoisonExecution_Args, poisoned);
    CHECK_HANDLE(args->device);
    /* kiln runs each execution to its end before Execute returns: none is left to poison */
    args->poisoned = false;
    return NULL;
}
