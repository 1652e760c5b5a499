/* SPDX-License-Identifier: Apache-2.0 */
/* The PJRT C API's binary interface, as far as kiln's plugin uses it: the handle types,
 * enums, callbacks and the argument structs of the functions libkiln_pjrt implements, at
 * API version 0.94. These declarations restate the layout published in openxla/xla's
 * xla/pjrt/c/pjrt_c_api.h (Apache License 2.0) at commit 0882740a8496c82a8dc8a25fadba88
 * ca342fb0aa, PJRT_API_MINOR 94; names are the API's, so that a reader can match each
 * field with its documentation there. The function table itself is pjrt/slots.def.
 *
 * Rules of the interface that every function here follows:
 * - Every struct starts with struct_size: a caller built against an older version passes
 *   a smaller one, a newer caller a larger one. A field is read only when the caller's
 *   struct_size covers it (KILN_PJRT_HAS); output fields past it are not written.
 * - Structs the plugin hands out (named values) carry the plugin's own struct_size.
 * - X_STRUCT_SIZE is the size up to and including X's last field, without padding.
 *
 * Moving to a newer version: read that version's header; append its new slots to
 * slots.def and its new fields at the ends of these structs (the API only ever appends
 * within a major version); raise KILN_PJRT_API_MINOR; implement or stub every new slot
 * (pjrt/README.md lists what jaxlib calls unconditionally at each minor version). */
#ifndef KILN_PJRT_ABI_H
#define KILN_PJRT_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KILN_PJRT_API_MAJOR 0
#define KILN_PJRT_API_MINOR 94

/* The size of T up to and including `last`, without trailing padding. */
#define KILN_PJRT_STRUCT_SIZE(T, last) (offsetof(T, last) + sizeof(((T *)0)->last))

/* Whether a caller's args struct (pointer a, of type T) reaches field f. */
#define KILN_PJRT_HAS(a, T, f) ((a)->struct_size >= KILN_PJRT_STRUCT_SIZE(T, f))

/* Structs kiln's plugin only passes by pointer. */
typedef struct PJRT_KeyValueGetCallback_Args PJRT_KeyValueGetCallback_Args;
typedef struct PJRT_KeyValueTryGetCallback_Args PJRT_KeyValueTryGetCallback_Args;
typedef struct PJRT_KeyValuePutCallback_Args PJRT_KeyValuePutCallback_Args;
typedef struct PJRT_Chunk PJRT_Chunk;
typedef struct PJRT_SendCallbackInfo PJRT_SendCallbackInfo;
typedef struct PJRT_RecvCallbackInfo PJRT_RecvCallbackInfo;

typedef struct PJRT_Error PJRT_Error;
typedef struct PJRT_Event PJRT_Event;
typedef struct PJRT_Client PJRT_Client;
typedef struct PJRT_Device PJRT_Device;
typedef struct PJRT_Memory PJRT_Memory;
typedef struct PJRT_DeviceDescription PJRT_DeviceDescription;
typedef struct PJRT_TopologyDescription PJRT_TopologyDescription;
typedef struct PJRT_Executable PJRT_Executable;
typedef struct PJRT_LoadedExecutable PJRT_LoadedExecutable;
typedef struct PJRT_Buffer PJRT_Buffer;
typedef struct PJRT_FulfillAliasBufferCallback PJRT_FulfillAliasBufferCallback;
typedef struct PJRT_AsyncHostToDeviceTransferManager PJRT_AsyncHostToDeviceTransferManager;
typedef struct PJRT_PhaseCompiler PJRT_PhaseCompiler;
typedef struct PJRT_Device_Attributes PJRT_Device_Attributes;
typedef struct PJRT_AsyncTrackingEvent PJRT_AsyncTrackingEvent;
typedef struct PJRT_ExecuteContext PJRT_ExecuteContext;
typedef struct PJRT_DeviceAssignmentSerialized PJRT_DeviceAssignmentSerialized;
typedef struct PJRT_CopyToDeviceStream PJRT_CopyToDeviceStream;
typedef struct PJRT_SerializedExecutable PJRT_SerializedExecutable;
typedef struct PJRT_SerializedCompileOptions PJRT_SerializedCompileOptions;
typedef struct PJRT_SerializedTopology PJRT_SerializedTopology;

typedef enum {
    PJRT_Extension_Type_Gpu_Custom_Call = 0,
    PJRT_Extension_Type_Profiler = 1,
    PJRT_Extension_Type_Custom_Partitioner = 2,
    PJRT_Extension_Type_Stream = 3,
    PJRT_Extension_Type_Layouts = 4,
    PJRT_Extension_Type_FFI = 5,
    PJRT_Extension_Type_MemoryDescriptions = 6,
    PJRT_Extension_Type_Triton = 7,
    PJRT_Extension_Type_RawBuffer = 8,
    PJRT_Extension_Type_PhaseCompile = 9,
    PJRT_Extension_Type_Example = 10,
    PJRT_Extension_Type_Unknown = 11,
    PJRT_Extension_Type_CrossHostTransfers = 12,
    PJRT_Extension_Type_ExecutableMetadata = 13,
    PJRT_Extension_Type_Callback = 14,
    PJRT_Extension_Type_HostAllocator = 15,
    PJRT_Extension_Type_TpuTopology = 16,
    PJRT_Extension_Type_TpuExecutable = 17,
    PJRT_Extension_Type_Megascale = 18,
    PJRT_Extension_Type_Shardings = 19,
    PJRT_Extension_Type_AbiVersion = 20,
    PJRT_Extension_Type_Collectives = 21,
} PJRT_Extension_Type;

typedef enum {
    PJRT_Error_Code_OK = 0,
    PJRT_Error_Code_CANCELLED = 1,
    PJRT_Error_Code_UNKNOWN = 2,
    PJRT_Error_Code_INVALID_ARGUMENT = 3,
    PJRT_Error_Code_DEADLINE_EXCEEDED = 4,
    PJRT_Error_Code_NOT_FOUND = 5,
    PJRT_Error_Code_ALREADY_EXISTS = 6,
    PJRT_Error_Code_PERMISSION_DENIED = 7,
    PJRT_Error_Code_RESOURCE_EXHAUSTED = 8,
    PJRT_Error_Code_FAILED_PRECONDITION = 9,
    PJRT_Error_Code_ABORTED = 10,
    PJRT_Error_Code_OUT_OF_RANGE = 11,
    PJRT_Error_Code_UNIMPLEMENTED = 12,
    PJRT_Error_Code_INTERNAL = 13,
    PJRT_Error_Code_UNAVAILABLE = 14,
    PJRT_Error_Code_DATA_LOSS = 15,
    PJRT_Error_Code_UNAUTHENTICATED = 16,
} PJRT_Error_Code;

typedef enum {
    PJRT_NamedValue_kString = 0,
    PJRT_NamedValue_kInt64 = 1,
    PJRT_NamedValue_kInt64List = 2,
    PJRT_NamedValue_kFloat = 3,
    PJRT_NamedValue_kBool = 4,
} PJRT_NamedValue_Type;

typedef enum {
    PJRT_ProcessState_kUnspecified = 0,
    PJRT_ProcessState_kUninitialized = 1,
    PJRT_ProcessState_kDisconnected = 2,
    PJRT_ProcessState_kConnected = 3,
    PJRT_ProcessState_kError = 4,
} PJRT_ProcessState;

typedef enum {
    PJRT_Buffer_Type_INVALID = 0,
    PJRT_Buffer_Type_PRED = 1,
    PJRT_Buffer_Type_S8 = 2,
    PJRT_Buffer_Type_S16 = 3,
    PJRT_Buffer_Type_S32 = 4,
    PJRT_Buffer_Type_S64 = 5,
    PJRT_Buffer_Type_U8 = 6,
    PJRT_Buffer_Type_U16 = 7,
    PJRT_Buffer_Type_U32 = 8,
    PJRT_Buffer_Type_U64 = 9,
    PJRT_Buffer_Type_F16 = 10,
    PJRT_Buffer_Type_F32 = 11,
    PJRT_Buffer_Type_F64 = 12,
    PJRT_Buffer_Type_BF16 = 13,
    PJRT_Buffer_Type_C64 = 14,
    PJRT_Buffer_Type_C128 = 15,
    PJRT_Buffer_Type_F8E5M2 = 16,
    PJRT_Buffer_Type_F8E4M3FN = 17,
    PJRT_Buffer_Type_F8E4M3B11FNUZ = 18,
    PJRT_Buffer_Type_F8E5M2FNUZ = 19,
    PJRT_Buffer_Type_F8E4M3FNUZ = 20,
    PJRT_Buffer_Type_S4 = 21,
    PJRT_Buffer_Type_U4 = 22,
    PJRT_Buffer_Type_TOKEN = 23,
    PJRT_Buffer_Type_S2 = 24,
    PJRT_Buffer_Type_U2 = 25,
    PJRT_Buffer_Type_F8E4M3 = 26,
    PJRT_Buffer_Type_F8E3M4 = 27,
    PJRT_Buffer_Type_F8E8M0FNU = 28,
    PJRT_Buffer_Type_F4E2M1FN = 29,
    PJRT_Buffer_Type_S1 = 30,
    PJRT_Buffer_Type_U1 = 31,
} PJRT_Buffer_Type;

typedef enum {
    PJRT_HostBufferSemantics_kImmutableOnlyDuringCall = 0,
    PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes = 1,
    PJRT_HostBufferSemantics_kImmutableZeroCopy = 2,
    PJRT_HostBufferSemantics_kMutableZeroCopy = 3,
} PJRT_HostBufferSemantics;

typedef enum {
    PJRT_Buffer_MemoryLayout_Type_Tiled = 0,
    PJRT_Buffer_MemoryLayout_Type_Strides = 1,
} PJRT_Buffer_MemoryLayout_Type;

typedef struct PJRT_Extension_Base PJRT_Extension_Base;
typedef struct PJRT_Api_Version PJRT_Api_Version;
typedef struct PJRT_Error_Destroy_Args PJRT_Error_Destroy_Args;
typedef struct PJRT_Error_Message_Args PJRT_Error_Message_Args;
typedef struct PJRT_Error_GetCode_Args PJRT_Error_GetCode_Args;
typedef struct PJRT_NamedValue PJRT_NamedValue;
typedef struct PJRT_Plugin_Initialize_Args PJRT_Plugin_Initialize_Args;
typedef struct PJRT_Plugin_Attributes_Args PJRT_Plugin_Attributes_Args;
typedef struct PJRT_Event_Destroy_Args PJRT_Event_Destroy_Args;
typedef struct PJRT_Event_IsReady_Args PJRT_Event_IsReady_Args;
typedef struct PJRT_Event_Error_Args PJRT_Event_Error_Args;
typedef struct PJRT_Event_Await_Args PJRT_Event_Await_Args;
typedef struct PJRT_Event_OnReady_Args PJRT_Event_OnReady_Args;
typedef struct PJRT_Event_Create_Args PJRT_Event_Create_Args;
typedef struct PJRT_Event_Set_Args PJRT_Event_Set_Args;
typedef struct PJRT_Client_Create_Args PJRT_Client_Create_Args;
typedef struct PJRT_Client_Destroy_Args PJRT_Client_Destroy_Args;
typedef struct PJRT_Client_PlatformName_Args PJRT_Client_PlatformName_Args;
typedef struct PJRT_Client_ProcessIndex_Args PJRT_Client_ProcessIndex_Args;
typedef struct PJRT_Client_PlatformVersion_Args PJRT_Client_PlatformVersion_Args;
typedef struct PJRT_Client_TopologyDescription_Args PJRT_Client_TopologyDescription_Args;
typedef struct PJRT_Client_Devices_Args PJRT_Client_Devices_Args;
typedef struct PJRT_Client_AddressableDevices_Args PJRT_Client_AddressableDevices_Args;
typedef struct PJRT_Client_LookupDevice_Args PJRT_Client_LookupDevice_Args;
typedef struct PJRT_Client_LookupAddressableDevice_Args PJRT_Client_LookupAddressableDevice_Args;
typedef struct PJRT_Client_AddressableMemories_Args PJRT_Client_AddressableMemories_Args;
typedef struct PJRT_Program PJRT_Program;
typedef struct PJRT_Client_Compile_Args PJRT_Client_Compile_Args;
typedef struct PJRT_Client_DefaultDeviceAssignment_Args PJRT_Client_DefaultDeviceAssignment_Args;
typedef struct PJRT_Buffer_MemoryLayout_Tiled PJRT_Buffer_MemoryLayout_Tiled;
typedef struct PJRT_Buffer_MemoryLayout_Strides PJRT_Buffer_MemoryLayout_Strides;
typedef struct PJRT_Buffer_MemoryLayout PJRT_Buffer_MemoryLayout;
typedef struct PJRT_Client_CreateUninitializedBuffer_Args
    PJRT_Client_CreateUninitializedBuffer_Args;
typedef struct PJRT_Client_CreateErrorBuffer_Args PJRT_Client_CreateErrorBuffer_Args;
typedef struct PJRT_Client_CreateAliasBuffer_Args PJRT_Client_CreateAliasBuffer_Args;
typedef struct PJRT_Client_FulfillAliasBuffer_Args PJRT_Client_FulfillAliasBuffer_Args;
typedef struct PJRT_Client_BufferFromHostBuffer_Args PJRT_Client_BufferFromHostBuffer_Args;
typedef struct PJRT_DeviceDescription_Id_Args PJRT_DeviceDescription_Id_Args;
typedef struct PJRT_DeviceDescription_ProcessIndex_Args PJRT_DeviceDescription_ProcessIndex_Args;
typedef struct PJRT_DeviceDescription_Attributes_Args PJRT_DeviceDescription_Attributes_Args;
typedef struct PJRT_DeviceDescription_Kind_Args PJRT_DeviceDescription_Kind_Args;
typedef struct PJRT_DeviceDescription_DebugString_Args PJRT_DeviceDescription_DebugString_Args;
typedef struct PJRT_DeviceDescription_ToString_Args PJRT_DeviceDescription_ToString_Args;
typedef struct PJRT_Device_GetDescription_Args PJRT_Device_GetDescription_Args;
typedef struct PJRT_Device_IsAddressable_Args PJRT_Device_IsAddressable_Args;
typedef struct PJRT_Device_LocalHardwareId_Args PJRT_Device_LocalHardwareId_Args;
typedef struct PJRT_Device_AddressableMemories_Args PJRT_Device_AddressableMemories_Args;
typedef struct PJRT_Device_DefaultMemory_Args PJRT_Device_DefaultMemory_Args;
typedef struct PJRT_Device_MemoryStats_Args PJRT_Device_MemoryStats_Args;
typedef struct PJRT_Device_PoisonExecution_Args PJRT_Device_PoisonExecution_Args;
typedef struct PJRT_Device_GetAttributes_Args PJRT_Device_GetAttributes_Args;
typedef struct PJRT_Device_CreateAsyncTrackingEvent_Args PJRT_Device_CreateAsyncTrackingEvent_Args;
typedef struct PJRT_AsyncTrackingEvent_Destroy_Args PJRT_AsyncTrackingEvent_Destroy_Args;
typedef struct PJRT_Memory_Id_Args PJRT_Memory_Id_Args;
typedef struct PJRT_Memory_Kind_Args PJRT_Memory_Kind_Args;
typedef struct PJRT_Memory_Kind_Id_Args PJRT_Memory_Kind_Id_Args;
typedef struct PJRT_Memory_DebugString_Args PJRT_Memory_DebugString_Args;
typedef struct PJRT_Memory_ToString_Args PJRT_Memory_ToString_Args;
typedef struct PJRT_Memory_AddressableByDevices_Args PJRT_Memory_AddressableByDevices_Args;
typedef struct PJRT_Executable_Destroy_Args PJRT_Executable_Destroy_Args;
typedef struct PJRT_LoadedExecutable_Destroy_Args PJRT_LoadedExecutable_Destroy_Args;
typedef struct PJRT_LoadedExecutable_GetExecutable_Args PJRT_LoadedExecutable_GetExecutable_Args;
typedef struct PJRT_LoadedExecutable_GetDeviceAssignment_Args
    PJRT_LoadedExecutable_GetDeviceAssignment_Args;
typedef struct PJRT_Executable_Name_Args PJRT_Executable_Name_Args;
typedef struct PJRT_Executable_NumReplicas_Args PJRT_Executable_NumReplicas_Args;
typedef struct PJRT_Executable_NumPartitions_Args PJRT_Executable_NumPartitions_Args;
typedef struct PJRT_LoadedExecutable_AddressableDevices_Args
    PJRT_LoadedExecutable_AddressableDevices_Args;
typedef struct PJRT_Executable_OptimizedProgram_Args PJRT_Executable_OptimizedProgram_Args;
typedef struct PJRT_LoadedExecutable_Delete_Args PJRT_LoadedExecutable_Delete_Args;
typedef struct PJRT_LoadedExecutable_IsDeleted_Args PJRT_LoadedExecutable_IsDeleted_Args;
typedef struct PJRT_ExecuteOptions PJRT_ExecuteOptions;
typedef struct PJRT_LoadedExecutable_Execute_Args PJRT_LoadedExecutable_Execute_Args;
typedef struct PJRT_Executable_NumOutputs_Args PJRT_Executable_NumOutputs_Args;
typedef struct PJRT_Executable_SizeOfGeneratedCodeInBytes_Args
    PJRT_Executable_SizeOfGeneratedCodeInBytes_Args;
typedef struct PJRT_Executable_Fingerprint_Args PJRT_Executable_Fingerprint_Args;
typedef struct PJRT_Executable_GetCostAnalysis_Args PJRT_Executable_GetCostAnalysis_Args;
typedef struct PJRT_Executable_GetCompiledMemoryStats_Args
    PJRT_Executable_GetCompiledMemoryStats_Args;
typedef struct PJRT_Executable_OutputElementTypes_Args PJRT_Executable_OutputElementTypes_Args;
typedef struct PJRT_Executable_OutputDimensions_Args PJRT_Executable_OutputDimensions_Args;
typedef struct PJRT_Executable_OutputMemoryKinds_Args PJRT_Executable_OutputMemoryKinds_Args;
typedef struct PJRT_Executable_Serialize_Args PJRT_Executable_Serialize_Args;
typedef struct PJRT_Executable_GetCompileOptions_Args PJRT_Executable_GetCompileOptions_Args;
typedef struct PJRT_Executable_DeserializeAndLoad_Args PJRT_Executable_DeserializeAndLoad_Args;
typedef struct PJRT_LoadedExecutable_Fingerprint_Args PJRT_LoadedExecutable_Fingerprint_Args;
typedef struct PJRT_Buffer_Destroy_Args PJRT_Buffer_Destroy_Args;
typedef struct PJRT_Buffer_ElementType_Args PJRT_Buffer_ElementType_Args;
typedef struct PJRT_Buffer_Dimensions_Args PJRT_Buffer_Dimensions_Args;
typedef struct PJRT_Buffer_UnpaddedDimensions_Args PJRT_Buffer_UnpaddedDimensions_Args;
typedef struct PJRT_Buffer_DynamicDimensionIndices_Args PJRT_Buffer_DynamicDimensionIndices_Args;
typedef struct PJRT_Buffer_GetMemoryLayout_Args PJRT_Buffer_GetMemoryLayout_Args;
typedef struct PJRT_Buffer_ToHostBuffer_Args PJRT_Buffer_ToHostBuffer_Args;
typedef struct PJRT_Buffer_OnDeviceSizeInBytes_Args PJRT_Buffer_OnDeviceSizeInBytes_Args;
typedef struct PJRT_Buffer_Delete_Args PJRT_Buffer_Delete_Args;
typedef struct PJRT_Buffer_IsDeleted_Args PJRT_Buffer_IsDeleted_Args;
typedef struct PJRT_Buffer_CopyRawToHost_Args PJRT_Buffer_CopyRawToHost_Args;
typedef struct PJRT_Buffer_CopyRawToHostFuture_Callback_Args
    PJRT_Buffer_CopyRawToHostFuture_Callback_Args;
typedef struct PJRT_Buffer_CopyRawToHostFuture_Args PJRT_Buffer_CopyRawToHostFuture_Args;
typedef struct PJRT_Buffer_CopyToDevice_Args PJRT_Buffer_CopyToDevice_Args;
typedef struct PJRT_Buffer_CopyToMemory_Args PJRT_Buffer_CopyToMemory_Args;
typedef struct PJRT_Buffer_IsOnCpu_Args PJRT_Buffer_IsOnCpu_Args;
typedef struct PJRT_Buffer_Device_Args PJRT_Buffer_Device_Args;
typedef struct PJRT_Buffer_Memory_Args PJRT_Buffer_Memory_Args;
typedef struct PJRT_Buffer_ReadyEvent_Args PJRT_Buffer_ReadyEvent_Args;
typedef struct PJRT_Buffer_UnsafePointer_Args PJRT_Buffer_UnsafePointer_Args;
typedef struct PJRT_Buffer_IncreaseExternalReferenceCount_Args
    PJRT_Buffer_IncreaseExternalReferenceCount_Args;
typedef struct PJRT_Buffer_DecreaseExternalReferenceCount_Args
    PJRT_Buffer_DecreaseExternalReferenceCount_Args;
typedef struct PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args
    PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args;
typedef struct PJRT_Buffer_DonateWithControlDependency_Callback_Args
    PJRT_Buffer_DonateWithControlDependency_Callback_Args;
typedef struct PJRT_Buffer_DonateWithControlDependency_Args
    PJRT_Buffer_DonateWithControlDependency_Args;
typedef struct PJRT_TopologyDescription_Destroy_Args PJRT_TopologyDescription_Destroy_Args;
typedef struct PJRT_TopologyDescription_PlatformVersion_Args
    PJRT_TopologyDescription_PlatformVersion_Args;
typedef struct PJRT_TopologyDescription_PlatformName_Args
    PJRT_TopologyDescription_PlatformName_Args;
typedef struct PJRT_TopologyDescription_GetDeviceDescriptions_Args
    PJRT_TopologyDescription_GetDeviceDescriptions_Args;
typedef struct PJRT_TopologyDescription_Attributes_Args PJRT_TopologyDescription_Attributes_Args;

typedef PJRT_Error *(*PJRT_CallbackError)(PJRT_Error_Code code, const char *message,
                                          size_t message_size);
typedef void (*PJRT_Event_OnReadyCallback)(PJRT_Error *error, void *user_arg);
typedef void (*PJRT_KeyValueGetCallback_ValueDeleter)(char *value);
typedef PJRT_Error *(*PJRT_KeyValueGetCallback)(PJRT_KeyValueGetCallback_Args *args);
typedef void (*PJRT_KeyValueTryGetCallback_ValueDeleter)(char *value);
typedef PJRT_Error *(*PJRT_KeyValueTryGetCallback)(PJRT_KeyValueTryGetCallback_Args *args);
typedef PJRT_Error *(*PJRT_KeyValuePutCallback)(PJRT_KeyValuePutCallback_Args *args);
typedef PJRT_Error *(*PJRT_SendCallback)(PJRT_Chunk *chunk, PJRT_CallbackError *callback_error,
                                         size_t total_size_in_bytes, bool done, void *user_arg);
typedef void (*PJRT_RecvCallback)(PJRT_CopyToDeviceStream *stream, void *user_arg);

struct PJRT_Extension_Base {
    size_t struct_size;
    PJRT_Extension_Type type;
    struct PJRT_Extension_Base *next;
};
#define PJRT_Extension_Base_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Extension_Base, next)

struct PJRT_Api_Version {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    int major_version; /* out */
    int minor_version; /* out */
};
#define PJRT_Api_Version_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Api_Version, minor_version)

struct PJRT_Error_Destroy_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Error *error;
};
#define PJRT_Error_Destroy_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Error_Destroy_Args, error)

struct PJRT_Error_Message_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    const PJRT_Error *error;
    const char *message; /* out */
    size_t message_size; /* out */
};
#define PJRT_Error_Message_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Error_Message_Args, message_size)

struct PJRT_Error_GetCode_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    const PJRT_Error *error;
    PJRT_Error_Code code; /* out */
};
#define PJRT_Error_GetCode_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Error_GetCode_Args, code)

struct PJRT_NamedValue {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    const char *name;
    size_t name_size;
    PJRT_NamedValue_Type type;
    union {
        const char *string_value;
        int64_t int64_value;
        const int64_t *int64_array_value;
        float float_value;
        bool bool_value;
    };
    size_t value_size;
};
#define PJRT_NamedValue_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_NamedValue, value_size)

struct PJRT_Plugin_Initialize_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
};
#define PJRT_Plugin_Initialize_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Plugin_Initialize_Args, extension_start)

struct PJRT_Plugin_Attributes_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    const PJRT_NamedValue *attributes; /* out */
    size_t num_attributes;             /* out */
};
#define PJRT_Plugin_Attributes_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Plugin_Attributes_Args, num_attributes)

struct PJRT_Event_Destroy_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Event *event;
};
#define PJRT_Event_Destroy_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Event_Destroy_Args, event)

struct PJRT_Event_IsReady_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Event *event;
    bool is_ready; /* out */
};
#define PJRT_Event_IsReady_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Event_IsReady_Args, is_ready)

struct PJRT_Event_Error_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Event *event;
};
#define PJRT_Event_Error_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Event_Error_Args, event)

struct PJRT_Event_Await_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Event *event;
};
#define PJRT_Event_Await_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Event_Await_Args, event)

struct PJRT_Event_OnReady_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Event *event;
    PJRT_Event_OnReadyCallback callback;
    void *user_arg;
};
#define PJRT_Event_OnReady_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Event_OnReady_Args, user_arg)

struct PJRT_Event_Create_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Event *event; /* out */
};
#define PJRT_Event_Create_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Event_Create_Args, event)

struct PJRT_Event_Set_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Event *event;
    PJRT_Error_Code error_code;
    const char *error_message;
    size_t error_message_size;
};
#define PJRT_Event_Set_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Event_Set_Args, error_message_size)

struct PJRT_Client_Create_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    const PJRT_NamedValue *create_options;
    size_t num_options;
    PJRT_KeyValueGetCallback kv_get_callback;
    void *kv_get_user_arg;
    PJRT_KeyValuePutCallback kv_put_callback;
    void *kv_put_user_arg;
    PJRT_Client *client; /* out */
    PJRT_KeyValueTryGetCallback kv_try_get_callback;
    void *kv_try_get_user_arg;
};
#define PJRT_Client_Create_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_Create_Args, kv_try_get_user_arg)

struct PJRT_Client_Destroy_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
};
#define PJRT_Client_Destroy_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Client_Destroy_Args, client)

struct PJRT_Client_PlatformName_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    const char *platform_name; /* out */
    size_t platform_name_size; /* out */
};
#define PJRT_Client_PlatformName_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_PlatformName_Args, platform_name_size)

struct PJRT_Client_ProcessIndex_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    int process_index; /* out */
};
#define PJRT_Client_ProcessIndex_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_ProcessIndex_Args, process_index)

struct PJRT_Client_PlatformVersion_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    const char *platform_version; /* out */
    size_t platform_version_size; /* out */
};
#define PJRT_Client_PlatformVersion_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_PlatformVersion_Args, platform_version_size)

struct PJRT_Client_TopologyDescription_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    PJRT_TopologyDescription *topology; /* out */
};
#define PJRT_Client_TopologyDescription_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_TopologyDescription_Args, topology)

struct PJRT_Client_Devices_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    PJRT_Device *const *devices; /* out */
    size_t num_devices;          /* out */
};
#define PJRT_Client_Devices_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_Devices_Args, num_devices)

struct PJRT_Client_AddressableDevices_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    PJRT_Device *const *addressable_devices; /* out */
    size_t num_addressable_devices;          /* out */
};
#define PJRT_Client_AddressableDevices_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_AddressableDevices_Args, num_addressable_devices)

struct PJRT_Client_LookupDevice_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    int id;
    PJRT_Device *device; /* out */
};
#define PJRT_Client_LookupDevice_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_LookupDevice_Args, device)

struct PJRT_Client_LookupAddressableDevice_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    int local_hardware_id;
    PJRT_Device *addressable_device; /* out */
};
#define PJRT_Client_LookupAddressableDevice_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_LookupAddressableDevice_Args, addressable_device)

struct PJRT_Client_AddressableMemories_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    PJRT_Memory *const *addressable_memories; /* out */
    size_t num_addressable_memories;          /* out */
};
#define PJRT_Client_AddressableMemories_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_AddressableMemories_Args, num_addressable_memories)

struct PJRT_Program {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    char *code;         /* in/out */
    size_t code_size;   /* in/out */
    const char *format; /* in/out */
    size_t format_size; /* in/out */
};
#define PJRT_Program_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Program, format_size)

struct PJRT_Client_Compile_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    const PJRT_Program *program;
    const char *compile_options;
    size_t compile_options_size;
    PJRT_LoadedExecutable *executable; /* out */
};
#define PJRT_Client_Compile_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_Compile_Args, executable)

struct PJRT_Client_DefaultDeviceAssignment_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    int num_replicas;
    int num_partitions;
    size_t default_assignment_size;
    int *default_assignment;
};
#define PJRT_Client_DefaultDeviceAssignment_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_DefaultDeviceAssignment_Args, default_assignment)

struct PJRT_Buffer_MemoryLayout_Tiled {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    const int64_t *minor_to_major; /* in/out */
    size_t minor_to_major_size;    /* in/out */
    const int64_t *tile_dims;      /* in/out */
    const size_t *tile_dim_sizes;  /* in/out */
    size_t num_tiles;              /* in/out */
};
#define PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_MemoryLayout_Tiled, num_tiles)

struct PJRT_Buffer_MemoryLayout_Strides {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    const int64_t *byte_strides; /* in/out */
    size_t num_byte_strides;     /* in/out */
};
#define PJRT_Buffer_MemoryLayout_Strides_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_MemoryLayout_Strides, num_byte_strides)

struct PJRT_Buffer_MemoryLayout {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    union {
        PJRT_Buffer_MemoryLayout_Tiled tiled;
        PJRT_Buffer_MemoryLayout_Strides strides;
    };                                  /* in/out */
    PJRT_Buffer_MemoryLayout_Type type; /* in/out */
};
#define PJRT_Buffer_MemoryLayout_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_MemoryLayout, type)

struct PJRT_Client_CreateUninitializedBuffer_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    const int64_t *shape_dims;
    size_t shape_num_dims;
    PJRT_Buffer_Type shape_element_type;
    PJRT_Buffer_MemoryLayout *shape_layout;
    PJRT_Device *device;
    PJRT_Memory *memory;
    PJRT_Buffer *buffer; /* out */
};
#define PJRT_Client_CreateUninitializedBuffer_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_CreateUninitializedBuffer_Args, buffer)

struct PJRT_Client_CreateErrorBuffer_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    PJRT_Error_Code error_code;
    const char *error_message;
    size_t error_message_size;
    const int64_t *shape_dims;
    size_t shape_num_dims;
    PJRT_Buffer_Type shape_element_type;
    PJRT_Buffer_MemoryLayout *shape_layout;
    PJRT_Memory *memory;
    PJRT_Buffer *buffer; /* out */
};
#define PJRT_Client_CreateErrorBuffer_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_CreateErrorBuffer_Args, buffer)

struct PJRT_Client_CreateAliasBuffer_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    PJRT_Memory *memory;
    const int64_t *shape_dims;
    size_t shape_num_dims;
    PJRT_Buffer_Type shape_element_type;
    PJRT_Buffer_MemoryLayout *shape_layout;
    PJRT_Buffer *alias_buffer;                                /* out */
    PJRT_FulfillAliasBufferCallback *fulfill_alias_buffer_cb; /* out */
};
#define PJRT_Client_CreateAliasBuffer_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_CreateAliasBuffer_Args, fulfill_alias_buffer_cb)

struct PJRT_Client_FulfillAliasBuffer_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    PJRT_Buffer *buffer;
    PJRT_Error_Code status_code;
    const char *error_message;
    size_t error_message_size;
    PJRT_FulfillAliasBufferCallback *fulfill_alias_buffer_cb;
};
#define PJRT_Client_FulfillAliasBuffer_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_FulfillAliasBuffer_Args, fulfill_alias_buffer_cb)

struct PJRT_Client_BufferFromHostBuffer_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    const void *data;
    PJRT_Buffer_Type type;
    const int64_t *dims;
    size_t num_dims;
    const int64_t *byte_strides;
    size_t num_byte_strides;
    PJRT_HostBufferSemantics host_buffer_semantics;
    PJRT_Device *device;
    PJRT_Memory *memory;
    PJRT_Buffer_MemoryLayout *device_layout;
    PJRT_Event *done_with_host_buffer; /* out */
    PJRT_Buffer *buffer;               /* out */
};
#define PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Client_BufferFromHostBuffer_Args, buffer)

struct PJRT_DeviceDescription_Id_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_DeviceDescription *device_description;
    int id; /* out */
};
#define PJRT_DeviceDescription_Id_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_Id_Args, id)

struct PJRT_DeviceDescription_ProcessIndex_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_DeviceDescription *device_description;
    int process_index; /* out */
};
#define PJRT_DeviceDescription_ProcessIndex_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_ProcessIndex_Args, process_index)

struct PJRT_DeviceDescription_Attributes_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_DeviceDescription *device_description;
    size_t num_attributes;             /* out */
    const PJRT_NamedValue *attributes; /* out */
};
#define PJRT_DeviceDescription_Attributes_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_Attributes_Args, attributes)

struct PJRT_DeviceDescription_Kind_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_DeviceDescription *device_description;
    const char *device_kind; /* out */
    size_t device_kind_size; /* out */
};
#define PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_Kind_Args, device_kind_size)

struct PJRT_DeviceDescription_DebugString_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_DeviceDescription *device_description;
    const char *debug_string; /* out */
    size_t debug_string_size; /* out */
};
#define PJRT_DeviceDescription_DebugString_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_DebugString_Args, debug_string_size)

struct PJRT_DeviceDescription_ToString_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_DeviceDescription *device_description;
    const char *to_string; /* out */
    size_t to_string_size; /* out */
};
#define PJRT_DeviceDescription_ToString_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_ToString_Args, to_string_size)

struct PJRT_Device_GetDescription_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Device *device;
    PJRT_DeviceDescription *device_description; /* out */
};
#define PJRT_Device_GetDescription_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Device_GetDescription_Args, device_description)

struct PJRT_Device_IsAddressable_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Device *device;
    bool is_addressable; /* out */
};
#define PJRT_Device_IsAddressable_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Device_IsAddressable_Args, is_addressable)

struct PJRT_Device_LocalHardwareId_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Device *device;
    int local_hardware_id; /* out */
};
#define PJRT_Device_LocalHardwareId_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Device_LocalHardwareId_Args, local_hardware_id)

struct PJRT_Device_AddressableMemories_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Device *device;
    PJRT_Memory *const *memories; /* out */
    size_t num_memories;          /* out */
};
#define PJRT_Device_AddressableMemories_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Device_AddressableMemories_Args, num_memories)

struct PJRT_Device_DefaultMemory_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Device *device;
    PJRT_Memory *memory; /* out */
};
#define PJRT_Device_DefaultMemory_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Device_DefaultMemory_Args, memory)

struct PJRT_Device_MemoryStats_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Device *device;
    int64_t bytes_in_use;                 /* out */
    int64_t peak_bytes_in_use;            /* out */
    bool peak_bytes_in_use_is_set;        /* out */
    int64_t num_allocs;                   /* out */
    bool num_allocs_is_set;               /* out */
    int64_t largest_alloc_size;           /* out */
    bool largest_alloc_size_is_set;       /* out */
    int64_t bytes_limit;                  /* out */
    bool bytes_limit_is_set;              /* out */
    int64_t bytes_reserved;               /* out */
    bool bytes_reserved_is_set;           /* out */
    int64_t peak_bytes_reserved;          /* out */
    bool peak_bytes_reserved_is_set;      /* out */
    int64_t bytes_reservable_limit;       /* out */
    bool bytes_reservable_limit_is_set;   /* out */
    int64_t largest_free_block_bytes;     /* out */
    bool largest_free_block_bytes_is_set; /* out */
    int64_t pool_bytes;                   /* out */
    bool pool_bytes_is_set;               /* out */
    int64_t peak_pool_bytes;              /* out */
    bool peak_pool_bytes_is_set;          /* out */
};
#define PJRT_Device_MemoryStats_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Device_MemoryStats_Args, peak_pool_bytes_is_set)

struct PJRT_Device_PoisonExecution_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Device *device;
    int32_t launch_id;
    PJRT_Error_Code error_code;
    const char *error_message;
    size_t error_message_size;
    bool poisoned; /* out */
};
#define PJRT_Device_PoisonExecution_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Device_PoisonExecution_Args, poisoned)

struct PJRT_Device_GetAttributes_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Device *device;
    const PJRT_NamedValue *attributes;                                     /* out */
    size_t num_attributes;                                                 /* out */
    PJRT_Device_Attributes *device_attributes;                             /* out */
    void (*attributes_deleter)(PJRT_Device_Attributes *device_attributes); /* out */
};
#define PJRT_Device_GetAttributes_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Device_GetAttributes_Args, attributes_deleter)

struct PJRT_Device_CreateAsyncTrackingEvent_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Device *device;
    const char *description;
    size_t description_size;
    PJRT_AsyncTrackingEvent *event; /* out */
};
#define PJRT_Device_CreateAsyncTrackingEvent_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Device_CreateAsyncTrackingEvent_Args, event)

struct PJRT_AsyncTrackingEvent_Destroy_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_AsyncTrackingEvent *event;
};
#define PJRT_AsyncTrackingEvent_Destroy_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_AsyncTrackingEvent_Destroy_Args, event)

struct PJRT_Memory_Id_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Memory *memory;
    int id; /* out */
};
#define PJRT_Memory_Id_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Memory_Id_Args, id)

struct PJRT_Memory_Kind_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Memory *memory;
    const char *kind; /* out */
    size_t kind_size; /* out */
};
#define PJRT_Memory_Kind_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Memory_Kind_Args, kind_size)

struct PJRT_Memory_Kind_Id_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Memory *memory;
    int kind_id; /* out */
};
#define PJRT_Memory_Kind_Id_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Memory_Kind_Id_Args, kind_id)

struct PJRT_Memory_DebugString_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Memory *memory;
    const char *debug_string; /* out */
    size_t debug_string_size; /* out */
};
#define PJRT_Memory_DebugString_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Memory_DebugString_Args, debug_string_size)

struct PJRT_Memory_ToString_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Memory *memory;
    const char *to_string; /* out */
    size_t to_string_size; /* out */
};
#define PJRT_Memory_ToString_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Memory_ToString_Args, to_string_size)

struct PJRT_Memory_AddressableByDevices_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Memory *memory;
    PJRT_Device *const *devices; /* out */
    size_t num_devices;          /* out */
};
#define PJRT_Memory_AddressableByDevices_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Memory_AddressableByDevices_Args, num_devices)

struct PJRT_Executable_Destroy_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
};
#define PJRT_Executable_Destroy_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_Destroy_Args, executable)

struct PJRT_LoadedExecutable_Destroy_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_LoadedExecutable *executable;
};
#define PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_Destroy_Args, executable)

struct PJRT_LoadedExecutable_GetExecutable_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_LoadedExecutable *loaded_executable;
    PJRT_Executable *executable; /* out */
};
#define PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_GetExecutable_Args, executable)

struct PJRT_LoadedExecutable_GetDeviceAssignment_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_LoadedExecutable *executable;
    const char *serialized_bytes;                                                      /* out */
    size_t serialized_bytes_size;                                                      /* out */
    PJRT_DeviceAssignmentSerialized *serialized_device_assignment;                     /* out */
    void (*serialized_device_assignment_deleter)(PJRT_DeviceAssignmentSerialized *da); /* out */
};
#define PJRT_LoadedExecutable_GetDeviceAssignment_Args_STRUCT_SIZE        \
    KILN_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_GetDeviceAssignment_Args, \
                          serialized_device_assignment_deleter)

struct PJRT_Executable_Name_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
    const char *executable_name; /* out */
    size_t executable_name_size; /* out */
};
#define PJRT_Executable_Name_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_Name_Args, executable_name_size)

struct PJRT_Executable_NumReplicas_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
    size_t num_replicas; /* out */
};
#define PJRT_Executable_NumReplicas_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_NumReplicas_Args, num_replicas)

struct PJRT_Executable_NumPartitions_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
    size_t num_partitions; /* out */
};
#define PJRT_Executable_NumPartitions_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_NumPartitions_Args, num_partitions)

struct PJRT_LoadedExecutable_AddressableDevices_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_LoadedExecutable *executable;
    PJRT_Device *const *addressable_devices; /* out */
    size_t num_addressable_devices;          /* out */
};
#define PJRT_LoadedExecutable_AddressableDevices_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_AddressableDevices_Args, num_addressable_devices)

struct PJRT_Executable_OptimizedProgram_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
    PJRT_Program *program; /* out */
};
#define PJRT_Executable_OptimizedProgram_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_OptimizedProgram_Args, program)

struct PJRT_LoadedExecutable_Delete_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_LoadedExecutable *executable;
};
#define PJRT_LoadedExecutable_Delete_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_Delete_Args, executable)

struct PJRT_LoadedExecutable_IsDeleted_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_LoadedExecutable *executable;
    bool is_deleted; /* out */
};
#define PJRT_LoadedExecutable_IsDeleted_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_IsDeleted_Args, is_deleted)

struct PJRT_ExecuteOptions {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_SendCallbackInfo **send_callbacks;
    PJRT_RecvCallbackInfo **recv_callbacks;
    size_t num_send_ops;
    size_t num_recv_ops;
    int launch_id;
    const int64_t *non_donatable_input_indices;
    size_t num_non_donatable_input_indices;
    PJRT_ExecuteContext *context;
    const char *call_location;
    size_t num_tasks;
    int *task_ids;
    int64_t *incarnation_ids;
};
#define PJRT_ExecuteOptions_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_ExecuteOptions, incarnation_ids)

struct PJRT_LoadedExecutable_Execute_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_LoadedExecutable *executable;
    PJRT_ExecuteOptions *options;
    PJRT_Buffer *const *const *argument_lists;
    size_t num_devices;
    size_t num_args;
    PJRT_Buffer **const *output_lists;   /* in/out */
    PJRT_Event **device_complete_events; /* in/out */
    PJRT_Device *execute_device;
};
#define PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_Execute_Args, execute_device)

struct PJRT_Executable_NumOutputs_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
    size_t num_outputs; /* out */
};
#define PJRT_Executable_NumOutputs_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_NumOutputs_Args, num_outputs)

struct PJRT_Executable_SizeOfGeneratedCodeInBytes_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
    int64_t size_in_bytes; /* out */
};
#define PJRT_Executable_SizeOfGeneratedCodeInBytes_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args, size_in_bytes)

struct PJRT_Executable_Fingerprint_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
    const char *executable_fingerprint; /* out */
    size_t executable_fingerprint_size; /* out */
};
#define PJRT_Executable_Fingerprint_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_Fingerprint_Args, executable_fingerprint_size)

struct PJRT_Executable_GetCostAnalysis_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
    size_t num_properties;             /* out */
    const PJRT_NamedValue *properties; /* out */
};
#define PJRT_Executable_GetCostAnalysis_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_GetCostAnalysis_Args, properties)

struct PJRT_Executable_GetCompiledMemoryStats_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
    int64_t generated_code_size_in_bytes;      /* out */
    int64_t argument_size_in_bytes;            /* out */
    int64_t output_size_in_bytes;              /* out */
    int64_t alias_size_in_bytes;               /* out */
    int64_t temp_size_in_bytes;                /* out */
    int64_t host_generated_code_size_in_bytes; /* out */
    int64_t host_argument_size_in_bytes;       /* out */
    int64_t host_output_size_in_bytes;         /* out */
    int64_t host_alias_size_in_bytes;          /* out */
    int64_t host_temp_size_in_bytes;           /* out */
    int64_t peak_memory_in_bytes;              /* out */
    int64_t total_size_in_bytes;               /* out */
};
#define PJRT_Executable_GetCompiledMemoryStats_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_GetCompiledMemoryStats_Args, total_size_in_bytes)

struct PJRT_Executable_OutputElementTypes_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
    PJRT_Buffer_Type *output_types; /* out */
    size_t num_output_types;        /* out */
};
#define PJRT_Executable_OutputElementTypes_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_OutputElementTypes_Args, num_output_types)

struct PJRT_Executable_OutputDimensions_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
    size_t num_outputs;
    const int64_t *dims;     /* out */
    const size_t *dim_sizes; /* out */
};
#define PJRT_Executable_OutputDimensions_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_OutputDimensions_Args, dim_sizes)

struct PJRT_Executable_OutputMemoryKinds_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
    size_t num_outputs;
    const char *const *memory_kinds; /* out */
    const size_t *memory_kind_sizes; /* out */
};
#define PJRT_Executable_OutputMemoryKinds_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_OutputMemoryKinds_Args, memory_kind_sizes)

struct PJRT_Executable_Serialize_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    const PJRT_Executable *executable;
    const char *serialized_bytes;                                           /* out */
    size_t serialized_bytes_size;                                           /* out */
    PJRT_SerializedExecutable *serialized_executable;                       /* out */
    void (*serialized_executable_deleter)(PJRT_SerializedExecutable *exec); /* out */
};
#define PJRT_Executable_Serialize_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_Serialize_Args, serialized_executable_deleter)

struct PJRT_Executable_GetCompileOptions_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
    const char *serialized_bytes;                                                       /* out */
    size_t serialized_bytes_size;                                                       /* out */
    PJRT_SerializedCompileOptions *serialized_compile_options;                          /* out */
    void (*serialized_compile_options_deleter)(PJRT_SerializedCompileOptions *options); /* out */
};
#define PJRT_Executable_GetCompileOptions_Args_STRUCT_SIZE        \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_GetCompileOptions_Args, \
                          serialized_compile_options_deleter)

struct PJRT_Executable_DeserializeAndLoad_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    const char *serialized_executable;
    size_t serialized_executable_size;
    PJRT_LoadedExecutable *loaded_executable; /* out */
    const char *overridden_serialized_compile_options;
    size_t overridden_serialized_compile_options_size;
};
#define PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE        \
    KILN_PJRT_STRUCT_SIZE(PJRT_Executable_DeserializeAndLoad_Args, \
                          overridden_serialized_compile_options_size)

struct PJRT_LoadedExecutable_Fingerprint_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_LoadedExecutable *executable;
    const char *executable_fingerprint; /* out */
    size_t executable_fingerprint_size; /* out */
};
#define PJRT_LoadedExecutable_Fingerprint_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_Fingerprint_Args, executable_fingerprint_size)

struct PJRT_Buffer_Destroy_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
};
#define PJRT_Buffer_Destroy_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_Destroy_Args, buffer)

struct PJRT_Buffer_ElementType_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    PJRT_Buffer_Type type; /* out */
};
#define PJRT_Buffer_ElementType_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_ElementType_Args, type)

struct PJRT_Buffer_Dimensions_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    const int64_t *dims; /* out */
    size_t num_dims;     /* out */
};
#define PJRT_Buffer_Dimensions_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_Dimensions_Args, num_dims)

struct PJRT_Buffer_UnpaddedDimensions_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    const int64_t *unpadded_dims; /* out */
    size_t num_dims;              /* out */
};
#define PJRT_Buffer_UnpaddedDimensions_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_UnpaddedDimensions_Args, num_dims)

struct PJRT_Buffer_DynamicDimensionIndices_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    const size_t *dynamic_dim_indices; /* out */
    size_t num_dynamic_dims;           /* out */
};
#define PJRT_Buffer_DynamicDimensionIndices_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_DynamicDimensionIndices_Args, num_dynamic_dims)

struct PJRT_Buffer_GetMemoryLayout_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    PJRT_Buffer_MemoryLayout layout; /* out */
};
#define PJRT_Buffer_GetMemoryLayout_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_GetMemoryLayout_Args, layout)

struct PJRT_Buffer_ToHostBuffer_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *src;
    PJRT_Buffer_MemoryLayout *host_layout;
    void *dst;         /* in/out */
    size_t dst_size;   /* in/out */
    PJRT_Event *event; /* out */
};
#define PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_ToHostBuffer_Args, event)

struct PJRT_Buffer_OnDeviceSizeInBytes_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    size_t on_device_size_in_bytes; /* out */
};
#define PJRT_Buffer_OnDeviceSizeInBytes_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_OnDeviceSizeInBytes_Args, on_device_size_in_bytes)

struct PJRT_Buffer_Delete_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
};
#define PJRT_Buffer_Delete_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_Delete_Args, buffer)

struct PJRT_Buffer_IsDeleted_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    bool is_deleted; /* out */
};
#define PJRT_Buffer_IsDeleted_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_IsDeleted_Args, is_deleted)

struct PJRT_Buffer_CopyRawToHost_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    void *dst;
    int64_t offset;
    int64_t transfer_size;
    PJRT_Event *event; /* out */
};
#define PJRT_Buffer_CopyRawToHost_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_CopyRawToHost_Args, event)

struct PJRT_Buffer_CopyRawToHostFuture_Callback_Args {
    size_t struct_size;
    void *callback_data;
    PJRT_Error_Code error_code;
    const char *error_message;
    size_t error_message_size;
    void *dst;
};
#define PJRT_Buffer_CopyRawToHostFuture_Callback_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_CopyRawToHostFuture_Callback_Args, dst)

struct PJRT_Buffer_CopyRawToHostFuture_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    int64_t offset;
    int64_t transfer_size;
    PJRT_Event *event;                                                                  /* out */
    void *callback_data;                                                                /* out */
    void (*future_ready_callback)(PJRT_Buffer_CopyRawToHostFuture_Callback_Args *args); /* out */
};
#define PJRT_Buffer_CopyRawToHostFuture_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_CopyRawToHostFuture_Args, future_ready_callback)

struct PJRT_Buffer_CopyToDevice_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    PJRT_Device *dst_device;
    PJRT_Buffer *dst_buffer; /* out */
};
#define PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_CopyToDevice_Args, dst_buffer)

struct PJRT_Buffer_CopyToMemory_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    PJRT_Memory *dst_memory;
    PJRT_Buffer *dst_buffer; /* out */
};
#define PJRT_Buffer_CopyToMemory_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_CopyToMemory_Args, dst_buffer)

struct PJRT_Buffer_IsOnCpu_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    bool is_on_cpu; /* out */
};
#define PJRT_Buffer_IsOnCpu_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_IsOnCpu_Args, is_on_cpu)

struct PJRT_Buffer_Device_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    PJRT_Device *device; /* out */
};
#define PJRT_Buffer_Device_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_Device_Args, device)

struct PJRT_Buffer_Memory_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    PJRT_Memory *memory; /* out */
};
#define PJRT_Buffer_Memory_Args_STRUCT_SIZE KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_Memory_Args, memory)

struct PJRT_Buffer_ReadyEvent_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    PJRT_Event *event; /* out */
};
#define PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_ReadyEvent_Args, event)

struct PJRT_Buffer_UnsafePointer_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    uintptr_t buffer_pointer; /* out */
};
#define PJRT_Buffer_UnsafePointer_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_UnsafePointer_Args, buffer_pointer)

struct PJRT_Buffer_IncreaseExternalReferenceCount_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
};
#define PJRT_Buffer_IncreaseExternalReferenceCount_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_IncreaseExternalReferenceCount_Args, buffer)

struct PJRT_Buffer_DecreaseExternalReferenceCount_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
};
#define PJRT_Buffer_DecreaseExternalReferenceCount_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_DecreaseExternalReferenceCount_Args, buffer)

struct PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    void *device_memory_ptr; /* out */
};
#define PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args, device_memory_ptr)

struct PJRT_Buffer_DonateWithControlDependency_Callback_Args {
    size_t struct_size;
    void *callback_data;
    PJRT_Error_Code error_code;
    const char *error_message;
    size_t error_message_size;
};
#define PJRT_Buffer_DonateWithControlDependency_Callback_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_DonateWithControlDependency_Callback_Args, error_message_size)

struct PJRT_Buffer_DonateWithControlDependency_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    void *callback_data; /* out */
    void (*dependency_ready_callback)(
        PJRT_Buffer_DonateWithControlDependency_Callback_Args *args); /* out */
    PJRT_Buffer *out_buffer;                                          /* out */
};
#define PJRT_Buffer_DonateWithControlDependency_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_Buffer_DonateWithControlDependency_Args, out_buffer)

struct PJRT_TopologyDescription_Destroy_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_TopologyDescription *topology;
};
#define PJRT_TopologyDescription_Destroy_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_TopologyDescription_Destroy_Args, topology)

struct PJRT_TopologyDescription_PlatformVersion_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_TopologyDescription *topology;
    const char *platform_version; /* out */
    size_t platform_version_size; /* out */
};
#define PJRT_TopologyDescription_PlatformVersion_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_TopologyDescription_PlatformVersion_Args, platform_version_size)

struct PJRT_TopologyDescription_PlatformName_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    const PJRT_TopologyDescription *topology;
    const char *platform_name; /* out */
    size_t platform_name_size; /* out */
};
#define PJRT_TopologyDescription_PlatformName_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_TopologyDescription_PlatformName_Args, platform_name_size)

struct PJRT_TopologyDescription_GetDeviceDescriptions_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    const PJRT_TopologyDescription *topology;
    PJRT_DeviceDescription *const *descriptions; /* out */
    size_t num_descriptions;                     /* out */
};
#define PJRT_TopologyDescription_GetDeviceDescriptions_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_TopologyDescription_GetDeviceDescriptions_Args, num_descriptions)

struct PJRT_TopologyDescription_Attributes_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_TopologyDescription *topology;
    const PJRT_NamedValue *attributes; /* out */
    size_t num_attributes;             /* out */
};
#define PJRT_TopologyDescription_Attributes_Args_STRUCT_SIZE \
    KILN_PJRT_STRUCT_SIZE(PJRT_TopologyDescription_Attributes_Args, num_attributes)

#endif
