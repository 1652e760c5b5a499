/* SPDX-License-Identifier: Apache-2.0 */
/* Compiling the programs the framework sends (a StableHLO portable artifact, read by
 * kiln_module_parse, compiled by kiln_compile), what a compiled program says of itself,
 * and executing it on buffers: donated arguments are consumed and then report deleted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/plugin.h"

/* The program of an (loaded) executable the args name, or an INVALID_ARGUMENT error. */
#define PROGRAM(args)                                                                      \
    if (!(args)->executable)                                                               \
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: executable is NULL", \
                               __func__);                                                  \
    kiln_pjrt_program *p = (args)->executable->program;

/* ---- programs ---------------------------------------------------------------------------- */

void kiln_pjrt_program_release(kiln_pjrt_program *p) {
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
    kiln_exe_release(p->exe);
    free(p->name);
    free(p->output_types);
    free(p->output_dims);
    free(p->output_ranks);
    free(p->output_kinds);
    free(p->output_kind_sizes);
    free(p->donated);
    free(p->options);
    free(p->code);
    free(atomic_load(&p->optimized));
    free(p);
}

static kiln_pjrt_program *retain(kiln_pjrt_program *p) {
    atomic_fetch_add(&p->refs, 1);
    return p;
}

static size_t spec_bytes(const kiln_arg_spec *s) {
    size_t n = kiln_dtype_size(s->dtype);
    for (int32_t d = 0; d < s->shape.rank; d++)
        n *= (size_t)s->shape.dims[d];
    return n;
}

/* What the framework asks of a compiled program, from its executable's signature. */
static PJRT_Error *describe(kiln_pjrt_program *p, kiln_ctx *cx) {
    kiln_exe_info info;
    if (kiln_exe_info_get(cx, p->exe, &info) != KILN_OK)
        return kiln_pjrt_ctx_error(cx, "PJRT_Client_Compile");
    p->n_args = info.n_args;
    p->n_outputs = info.n_results;
    size_t n = (size_t)(info.n_results ? info.n_results : 1);
    size_t total_dims = 1;
    for (int32_t r = 0; r < info.n_results; r++)
        total_dims += (size_t)info.results[r].shape.rank;
    p->output_types = calloc(n, sizeof *p->output_types);
    p->output_dims = calloc(total_dims, sizeof *p->output_dims);
    p->output_ranks = calloc(n, sizeof *p->output_ranks);
    p->output_kinds = calloc(n, sizeof *p->output_kinds);
    p->output_kind_sizes = calloc(n, sizeof *p->output_kind_sizes);
    p->donated = calloc((size_t)(info.n_args ? info.n_args : 1), sizeof *p->donated);
    if (!p->output_types || !p->output_dims || !p->output_ranks || !p->output_kinds ||
        !p->output_kind_sizes || !p->donated)
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED,
                               "PJRT_Client_Compile: out of memory");
    size_t at = 0;
    for (int32_t r = 0; r < info.n_results; r++) {
        const kiln_arg_spec *s = &info.results[r];
        p->output_types[r] = kiln_pjrt_buffer_type(s->dtype);
        p->output_ranks[r] = (size_t)s->shape.rank;
        for (int32_t d = 0; d < s->shape.rank; d++)
            p->output_dims[at++] = s->shape.dims[d];
        p->output_kinds[r] = "device";
        p->output_kind_sizes[r] = 6;
    }
    for (int32_t i = 0; i < info.n_args; i++) {
        p->donated[i] = info.args[i].donate;
        p->argument_bytes += (int64_t)spec_bytes(&info.args[i]);
    }
    for (int32_t r = 0; r < info.n_results; r++)
        p->output_bytes += (int64_t)spec_bytes(&info.results[r]);
    p->temp_bytes = (int64_t)info.arena_bytes;
    kiln_pjrt_cost_values(p, &info.cost);
    return NULL;
}

/* KILN_PJRT_DUMP=DIR: each program the framework sends is written to DIR/program_N.mlirbc
 * (for `kiln print` and bug reports), and its compile options to DIR/options_N.pb. */
static void dump(const PJRT_Program *prog) {
    const char *dir = getenv("KILN_PJRT_DUMP");
    if (!dir || !*dir) return;
    static atomic_int serial;
    char path[4096];
    snprintf(path, sizeof path, "%s/program_%d.mlirbc", dir, atomic_fetch_add(&serial, 1));
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(prog->code, 1, prog->code_size, f);
    fclose(f);
}

static void dump_options(const char *data, size_t n) {
    const char *dir = getenv("KILN_PJRT_DUMP");
    if (!dir || !*dir) return;
    static atomic_int serial;
    char path[4096];
    snprintf(path, sizeof path, "%s/options_%d.pb", dir, atomic_fetch_add(&serial, 1));
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(data, 1, n, f);
    fclose(f);
}

/* FNV-1a, 64 bits, over n bytes, continuing from h. */
static uint64_t fnv(uint64_t h, const void *data, size_t n) {
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * UINT64_C(1099511628211);
    return h;
}

/* The program's identity for caches: its bytes, its device and the kiln that compiled it. */
static void fingerprint(kiln_pjrt_program *p, const char *code, size_t code_size) {
    uint64_t h = fnv(UINT64_C(14695981039346656037), code, code_size);
    uint64_t g = fnv(h ^ UINT64_C(0x9e3779b97f4a7c15), &p->device->index, sizeof p->device->index);
    const char *version = kiln_version_string();
    g = fnv(g, version, strlen(version));
    snprintf(p->fingerprint, sizeof p->fingerprint, "kiln-%016llx%016llx", (unsigned long long)h,
             (unsigned long long)g);
}

/* ---- compile options ---------------------------------------------------------------------- */

/* A protobuf reader for the few fields of the serialized xla.CompileOptionsProto kiln reads:
 * executable_build_options (3) { device_ordinal (1), num_replicas (4), num_partitions (5),
 * device_assignment (9) { computation_devices (3) { replica_device_ids (1) } } }. */
typedef struct pb {
    const unsigned char *p, *end;
} pb;

static bool pb_varint(pb *b, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64 && b->p < b->end; shift += 7) {
        unsigned char c = *b->p++;
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (c < 0x80) return true;
    }
    return false;
}

/* The next field: its number, wire type, and (length-delimited) contents or (varint) value. */
static bool pb_field(pb *b, uint32_t *field, int *wire, pb *sub, uint64_t *value) {
    uint64_t key;
    if (!pb_varint(b, &key)) return false;
    *field = (uint32_t)(key >> 3);
    *wire = (int)(key & 7);
    switch (*wire) {
    case 0: return pb_varint(b, value);
    case 1:
    case 5: {
        size_t n = *wire == 1 ? 8 : 4;
        if ((size_t)(b->end - b->p) < n) return false;
        b->p += n;
        return true;
    }
    case 2: {
        uint64_t n;
        if (!pb_varint(b, &n) || n > (uint64_t)(b->end - b->p)) return false;
        *sub = (pb){b->p, b->p + n};
        b->p += n;
        return true;
    }
    default: return false;
    }
}

typedef struct options {
    int64_t replicas, partitions, device; /* device: -1 when none is named */
} options;

static bool assigned_device(pb a, int64_t *device) {
    uint32_t f;
    int w;
    pb sub;
    uint64_t v;
    while (a.p < a.end) {
        if (!pb_field(&a, &f, &w, &sub, &v)) return false;
        if (f != 3 || w != 2) continue;
        /* the first computation's replica devices: packed or not */
        while (sub.p < sub.end) {
            pb ids;
            if (!pb_field(&sub, &f, &w, &ids, &v)) return false;
            if (f != 1) continue;
            if (w == 0) {
                *device = (int64_t)v;
                return true;
            }
            if (w == 2 && ids.p < ids.end && pb_varint(&ids, &v)) {
                *device = (int64_t)v;
                return true;
            }
        }
        return true;
    }
    return true;
}

static bool read_options(const char *data, size_t n, options *o) {
    *o = (options){1, 1, -1};
    pb b = {(const unsigned char *)data, (const unsigned char *)data + n};
    uint32_t f;
    int w;
    pb build;
    uint64_t v;
    int64_t ordinal = -1, assigned = -1;
    while (b.p < b.end) {
        if (!pb_field(&b, &f, &w, &build, &v)) return false;
        if (f != 3 || w != 2) continue;
        while (build.p < build.end) {
            pb sub;
            if (!pb_field(&build, &f, &w, &sub, &v)) return false;
            if (f == 1 && w == 0) ordinal = (int64_t)v;
            if (f == 4 && w == 0) o->replicas = (int64_t)v;
            if (f == 5 && w == 0) o->partitions = (int64_t)v;
            if (f == 9 && w == 2 && !assigned_device(sub, &assigned)) return false;
        }
    }
    o->device = assigned >= 0 ? assigned : ordinal;
    return true;
}

/* A copy of n bytes (NULL for none); *ok false when out of memory. */
static char *copy_bytes(const char *data, size_t n, bool *ok) {
    if (!n) return NULL;
    char *c = malloc(n);
    if (!c) {
        *ok = false;
        return NULL;
    }
    memcpy(c, data, n);
    return c;
}

/* Compiles a StableHLO program (text or portable artifact) with its serialized compile
 * options into a loaded executable; fn names the caller in errors. */
static PJRT_Error *compile_program(PJRT_Client *c, const char *code, size_t code_size,
                                   const char *options_data, size_t options_size, const char *fn,
                                   PJRT_LoadedExecutable **out) {
    /* The compile options say how many replicas and partitions, and on which device */
    options opt = {1, 1, -1};
    if (options_size && !read_options(options_data, options_size, &opt))
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "%s: compile_options is not a serialized CompileOptionsProto", fn);
    if (opt.replicas * opt.partitions != 1)
        return kiln_pjrt_error(PJRT_Error_Code_UNIMPLEMENTED,
                               "%s: kiln runs a program on one device; %lld replicas x %lld "
                               "partitions were asked for",
                               fn, (long long)opt.replicas, (long long)opt.partitions);
    if (opt.device >= c->n_devices)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "%s: the program is assigned to device %lld; kiln has %d", fn,
                               (long long)opt.device, c->n_devices);
    kiln_pjrt_program *p = calloc(1, sizeof *p);
    if (!p) return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    atomic_init(&p->refs, 1);
    p->client = c;
    p->device = &c->devices[opt.device >= 0 ? opt.device : 0];
    kiln_ctx *cx = kiln_pjrt_enter(c);
    if (!cx) {
        free(p);
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    PJRT_Error *e = NULL;
    kiln_module *m = NULL;
    kiln_parse_options po = kiln_parse_options_default();
    po.filename = "the program";
    if (kiln_module_parse(cx, code, code_size, &po, &m) != KILN_OK) {
        e = kiln_pjrt_ctx_error(cx, fn);
    } else {
        kiln_compile_options o = kiln_compile_options_default();
        o.device = (kiln_device){KILN_DEVICE_TYPE_CPU, p->device->index};
        if (kiln_compile(cx, m, &o, &p->exe) != KILN_OK) e = kiln_pjrt_ctx_error(cx, fn);
    }
    if (!e) e = describe(p, cx);
    if (!e) {
        fingerprint(p, code, code_size);
        bool ok = true;
        p->options = copy_bytes(options_data, options_size, &ok);
        p->options_size = options_size;
        p->code = copy_bytes(code, code_size, &ok);
        p->code_size = code_size;
        if (!ok) e = kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
    kiln_module_release(m);
    kiln_pjrt_leave(c);
    PJRT_LoadedExecutable *le = e ? NULL : calloc(1, sizeof *le);
    if (!e && !le) e = kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    if (e) {
        kiln_pjrt_program_release(p);
        return e;
    }
    le->program = p;
    *out = le;
    return NULL;
}

PJRT_Error *kiln_pjrt_Client_Compile(PJRT_Client_Compile_Args *args) {
    static const char fn[] = "PJRT_Client_Compile";
    KILN_PJRT_CHECK_ARGS(args, PJRT_Client_Compile_Args, executable);
    PJRT_Client *c = args->client;
    const PJRT_Program *prog = args->program;
    if (!c || !prog)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                               c ? "program" : "client");
    if (!prog->format || prog->format_size != 4 || memcmp(prog->format, "mlir", 4) != 0)
        return kiln_pjrt_error(PJRT_Error_Code_UNIMPLEMENTED,
                               "%s: kiln compiles programs of format \"mlir\" (StableHLO), not "
                               "\"%.*s\"",
                               fn, prog->format ? (int)prog->format_size : 0,
                               prog->format ? prog->format : "");
    dump(prog);
    dump_options(args->compile_options, args->compile_options_size);
    return compile_program(c, prog->code, prog->code_size, args->compile_options,
                           args->compile_options_size, fn, &args->executable);
}

/* ---- serialized executables ---------------------------------------------------------------
 * kiln compiles in microseconds, so a serialized executable is its program and compile
 * options, compiled again when loaded: "KILNEXE1", then the options' and the program's
 * sizes (8 bytes each, little-endian) and bytes. */

static const char serial_magic[8] = {'K', 'I', 'L', 'N', 'E', 'X', 'E', '1'};

struct PJRT_SerializedExecutable {
    size_t size;
    char bytes[];
};

static void free_serialized(PJRT_SerializedExecutable *s) { free(s); }

static void put_u64(char *at, uint64_t v) {
    for (int i = 0; i < 8; i++)
        at[i] = (char)(v >> (8 * i));
}

static uint64_t get_u64(const char *at) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)(unsigned char)at[i] << (8 * i);
    return v;
}

PJRT_Error *kiln_pjrt_Executable_Serialize(PJRT_Executable_Serialize_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_Serialize_Args, serialized_executable_deleter);
    PROGRAM(args);
    size_t n = sizeof serial_magic + 16 + p->options_size + p->code_size;
    PJRT_SerializedExecutable *s = malloc(sizeof *s + n);
    if (!s)
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", __func__);
    s->size = n;
    char *at = s->bytes;
    memcpy(at, serial_magic, sizeof serial_magic);
    at += sizeof serial_magic;
    put_u64(at, p->options_size);
    put_u64(at + 8, p->code_size);
    at += 16;
    if (p->options_size) memcpy(at, p->options, p->options_size);
    if (p->code_size) memcpy(at + p->options_size, p->code, p->code_size);
    args->serialized_bytes = s->bytes;
    args->serialized_bytes_size = s->size;
    args->serialized_executable = s;
    args->serialized_executable_deleter = free_serialized;
    return NULL;
}

PJRT_Error *kiln_pjrt_Executable_DeserializeAndLoad(PJRT_Executable_DeserializeAndLoad_Args *args) {
    static const char fn[] = "PJRT_Executable_DeserializeAndLoad";
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_DeserializeAndLoad_Args, loaded_executable);
    const char *b = args->serialized_executable;
    size_t n = args->serialized_executable_size;
    if (!args->client || (!b && n))
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                               args->client ? "serialized_executable" : "client");
    if (n < sizeof serial_magic + 16 || memcmp(b, serial_magic, sizeof serial_magic) != 0)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "%s: not an executable kiln serialized (%zu bytes)", fn, n);
    uint64_t options_size = get_u64(b + 8), code_size = get_u64(b + 16);
    size_t rest = n - sizeof serial_magic - 16;
    if (options_size > rest || code_size != rest - options_size)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "%s: the serialized executable's sizes (%llu + %llu bytes) do not "
                               "match its %zu bytes",
                               fn, (unsigned long long)options_size, (unsigned long long)code_size,
                               rest);
    const char *options_data = b + sizeof serial_magic + 16;
    size_t options_n = (size_t)options_size;
    if (KILN_PJRT_HAS(args, PJRT_Executable_DeserializeAndLoad_Args,
                      overridden_serialized_compile_options_size) &&
        args->overridden_serialized_compile_options) {
        options_data = args->overridden_serialized_compile_options;
        options_n = args->overridden_serialized_compile_options_size;
    }
    return compile_program(args->client, b + sizeof serial_magic + 16 + options_size,
                           (size_t)code_size, options_data, options_n, fn,
                           &args->loaded_executable);
}

/* ---- what a program says of itself ------------------------------------------------------- */

PJRT_Error *kiln_pjrt_Executable_Destroy(PJRT_Executable_Destroy_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_Destroy_Args, executable);
    if (!args->executable) return NULL;
    kiln_pjrt_program_release(args->executable->program);
    free(args->executable);
    return NULL;
}

PJRT_Error *kiln_pjrt_Executable_Name(PJRT_Executable_Name_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_Name_Args, executable_name_size);
    PROGRAM(args);
    static const char name[] = "kiln";
    args->executable_name = name;
    args->executable_name_size = sizeof name - 1;
    (void)p;
    return NULL;
}

PJRT_Error *kiln_pjrt_Executable_NumReplicas(PJRT_Executable_NumReplicas_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_NumReplicas_Args, num_replicas);
    PROGRAM(args);
    (void)p;
    args->num_replicas = 1;
    return NULL;
}

PJRT_Error *kiln_pjrt_Executable_NumPartitions(PJRT_Executable_NumPartitions_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_NumPartitions_Args, num_partitions);
    PROGRAM(args);
    (void)p;
    args->num_partitions = 1;
    return NULL;
}

PJRT_Error *kiln_pjrt_Executable_NumOutputs(PJRT_Executable_NumOutputs_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_NumOutputs_Args, num_outputs);
    PROGRAM(args);
    args->num_outputs = (size_t)p->n_outputs;
    return NULL;
}

PJRT_Error *kiln_pjrt_Executable_SizeOfGeneratedCodeInBytes(
    PJRT_Executable_SizeOfGeneratedCodeInBytes_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_SizeOfGeneratedCodeInBytes_Args, size_in_bytes);
    PROGRAM(args);
    (void)p;
    args->size_in_bytes = 0; /* kiln generates no code: it runs precompiled kernels */
    return NULL;
}

PJRT_Error *kiln_pjrt_Executable_OutputElementTypes(PJRT_Executable_OutputElementTypes_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_OutputElementTypes_Args, num_output_types);
    PROGRAM(args);
    args->output_types = p->output_types;
    args->num_output_types = (size_t)p->n_outputs;
    return NULL;
}

PJRT_Error *kiln_pjrt_Executable_OutputDimensions(PJRT_Executable_OutputDimensions_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_OutputDimensions_Args, dim_sizes);
    PROGRAM(args);
    args->num_outputs = (size_t)p->n_outputs;
    args->dims = p->output_dims;
    args->dim_sizes = p->output_ranks;
    return NULL;
}

PJRT_Error *kiln_pjrt_Executable_OutputMemoryKinds(PJRT_Executable_OutputMemoryKinds_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_OutputMemoryKinds_Args, memory_kind_sizes);
    PROGRAM(args);
    args->num_outputs = (size_t)p->n_outputs;
    args->memory_kinds = p->output_kinds;
    args->memory_kind_sizes = p->output_kind_sizes;
    return NULL;
}

PJRT_Error *kiln_pjrt_Executable_Fingerprint(PJRT_Executable_Fingerprint_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_Fingerprint_Args, executable_fingerprint_size);
    PROGRAM(args);
    args->executable_fingerprint = p->fingerprint;
    args->executable_fingerprint_size = strlen(p->fingerprint);
    return NULL;
}

PJRT_Error *kiln_pjrt_LoadedExecutable_Fingerprint(PJRT_LoadedExecutable_Fingerprint_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_Fingerprint_Args, executable_fingerprint_size);
    PROGRAM(args);
    args->executable_fingerprint = p->fingerprint;
    args->executable_fingerprint_size = strlen(p->fingerprint);
    return NULL;
}

/* The options a program was compiled with, as the framework passed them (a copy the caller
 * frees through the deleter). */
struct PJRT_SerializedCompileOptions {
    size_t size;
    char bytes[];
};

static void free_options(PJRT_SerializedCompileOptions *o) { free(o); }

PJRT_Error *kiln_pjrt_Executable_GetCompileOptions(PJRT_Executable_GetCompileOptions_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_GetCompileOptions_Args,
                         serialized_compile_options_deleter);
    PROGRAM(args);
    PJRT_SerializedCompileOptions *o = malloc(sizeof *o + p->options_size + 1);
    if (!o)
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", __func__);
    o->size = p->options_size;
    if (p->options_size) memcpy(o->bytes, p->options, p->options_size);
    args->serialized_bytes = o->bytes;
    args->serialized_bytes_size = o->size;
    args->serialized_compile_options = o;
    args->serialized_compile_options_deleter = free_options;
    return NULL;
}

/* jax's memory_analysis(): arguments, outputs and the intermediates' arena of one call. */
PJRT_Error *
kiln_pjrt_Executable_GetCompiledMemoryStats(PJRT_Executable_GetCompiledMemoryStats_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_Executable_GetCompiledMemoryStats_Args, total_size_in_bytes);
    PROGRAM(args);
    args->generated_code_size_in_bytes = 0;
    args->argument_size_in_bytes = p->argument_bytes;
    args->output_size_in_bytes = p->output_bytes;
    args->alias_size_in_bytes = 0;
    args->temp_size_in_bytes = p->temp_bytes;
    args->host_generated_code_size_in_bytes = 0;
    args->host_argument_size_in_bytes = 0;
    args->host_output_size_in_bytes = 0;
    args->host_alias_size_in_bytes = 0;
    args->host_temp_size_in_bytes = 0;
    args->peak_memory_in_bytes = p->argument_bytes + p->output_bytes + p->temp_bytes;
    args->total_size_in_bytes = args->peak_memory_in_bytes;
    return NULL;
}

/* ---- loaded executables ------------------------------------------------------------------ */

PJRT_Error *kiln_pjrt_LoadedExecutable_Destroy(PJRT_LoadedExecutable_Destroy_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_Destroy_Args, executable);
    if (!args->executable) return NULL;
    kiln_pjrt_program_release(args->executable->program);
    free(args->executable);
    return NULL;
}

PJRT_Error *
kiln_pjrt_LoadedExecutable_GetExecutable(PJRT_LoadedExecutable_GetExecutable_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_GetExecutable_Args, executable);
    if (!args->loaded_executable)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: loaded_executable is NULL",
                               __func__);
    PJRT_Executable *x = calloc(1, sizeof *x);
    if (!x)
        return kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", __func__);
    x->program = retain(args->loaded_executable->program);
    args->executable = x;
    return NULL;
}

PJRT_Error *
kiln_pjrt_LoadedExecutable_AddressableDevices(PJRT_LoadedExecutable_AddressableDevices_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_AddressableDevices_Args,
                         num_addressable_devices);
    PROGRAM(args);
    args->addressable_devices = &p->client->device_list[p->device->index];
    args->num_addressable_devices = 1;
    return NULL;
}

static void no_assignment_deleter(PJRT_DeviceAssignmentSerialized *da) { (void)da; }

PJRT_Error *kiln_pjrt_LoadedExecutable_GetDeviceAssignment(
    PJRT_LoadedExecutable_GetDeviceAssignment_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_GetDeviceAssignment_Args,
                         serialized_device_assignment_deleter);
    PROGRAM(args);
    (void)p;
    /* none recorded: the framework takes the program as portable */
    args->serialized_bytes = NULL;
    args->serialized_bytes_size = 0;
    args->serialized_device_assignment = NULL;
    args->serialized_device_assignment_deleter = no_assignment_deleter;
    return NULL;
}

PJRT_Error *kiln_pjrt_LoadedExecutable_Delete(PJRT_LoadedExecutable_Delete_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_Delete_Args, executable);
    if (!args->executable)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: executable is NULL",
                               __func__);
    atomic_store(&args->executable->deleted, true);
    return NULL;
}

PJRT_Error *kiln_pjrt_LoadedExecutable_IsDeleted(PJRT_LoadedExecutable_IsDeleted_Args *args) {
    KILN_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_IsDeleted_Args, is_deleted);
    if (!args->executable)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: executable is NULL",
                               __func__);
    args->is_deleted = atomic_load(&args->executable->deleted);
    return NULL;
}

/* ---- executing --------------------------------------------------------------------------- */

/* Whether the framework said argument i must not be donated. */
static bool not_donatable(const PJRT_ExecuteOptions *o, int32_t i) {
    if (!o || !KILN_PJRT_HAS(o, PJRT_ExecuteOptions, num_non_donatable_input_indices)) return false;
    for (size_t k = 0; k < o->num_non_donatable_input_indices; k++)
        if (o->non_donatable_input_indices[k] == i) return true;
    return false;
}

/* One execution: the program, its arguments' tensors (taken when it is queued, for those
 * ready then) or buffers (held, for outputs of executions still to run), its output
 * buffers and completion event (references held), filled when it has run. */
typedef struct kiln_pjrt_job {
    kiln_pjrt_task task; /* its place in the client's queue */
    kiln_pjrt_program *program;
    kiln_tensor **in;   /* per argument: its tensor, once taken */
    PJRT_Buffer **args; /* per argument not ready when queued: its buffer */
    bool *consume;      /* per argument: donated (its tensor goes to the call) */
    bool *keep;         /* per argument: donated by the program but kept by the caller */
    int32_t n_deferred; /* arguments not ready when queued */
    PJRT_Error *error;  /* an argument's, found when queued: the execution fails with it */
    PJRT_Buffer **outs;
    PJRT_Event *done;
} kiln_pjrt_job;

static void job_free(kiln_pjrt_job *j) {
    kiln_pjrt_program *p = j->program;
    for (int32_t i = 0; i < p->n_args; i++) {
        kiln_pjrt_buffer_release(j->args[i]);
        kiln_tensor_release(j->in[i]);
    }
    for (int32_t r = 0; r < p->n_outputs; r++)
        kiln_pjrt_buffer_release(j->outs[r]);
    kiln_pjrt_event_release(j->done);
    kiln_pjrt_error_free(j->error);
    kiln_pjrt_program_release(p);
    free(j->in);
    free(j->args);
    free(j->consume);
    free(j->keep);
    free(j->outs);
    free(j);
}

/* An argument's error, naming the argument. */
static PJRT_Error *argument_error(PJRT_Error *e, int32_t i) {
    PJRT_Error *named = kiln_pjrt_error(e->code, "argument %d: %s", (int)i, e->message);
    kiln_pjrt_error_free(e);
    return named;
}

/* Runs a job: takes the arguments still to come, calls the program, fills its outputs (or
 * gives them the error) and completes its event. */
static void job_run(void *arg) {
    kiln_pjrt_job *j = arg;
    static const char fn[] = "PJRT_LoadedExecutable_Execute";
    kiln_pjrt_program *p = j->program;
    kiln_tensor **out = calloc((size_t)(p->n_outputs ? p->n_outputs : 1), sizeof *out);
    PJRT_Error *e = j->error;
    j->error = NULL;
    if (!e && !out)
        e = kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    for (int32_t i = 0; i < p->n_args && !e; i++)
        if (j->args[i]) {
            e = kiln_pjrt_buffer_take(j->args[i], fn,
                                      j->consume[i] ? KILN_PJRT_CONSUME : KILN_PJRT_USE, &j->in[i]);
            if (e) e = argument_error(e, i);
        }
    kiln_ctx *cx = e ? NULL : kiln_pjrt_enter(p->client);
    if (!e && !cx) e = kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    if (cx) {
        /* an argument the program donates but the caller keeps: a tensor of its own over
         * the same buffer, which the call consumes instead (the buffer is not reused) */
        for (int32_t i = 0; i < p->n_args && !e; i++)
            if (j->keep[i]) {
                kiln_tensor *view =
                    kiln_tensor_to_device(cx, j->in[i], kiln_tensor_device(j->in[i]));
                if (!view) {
                    e = kiln_pjrt_ctx_error(cx, fn);
                } else {
                    kiln_tensor_release(j->in[i]);
                    j->in[i] = kiln_tensor_retain(view);
                }
            }
        if (!e && kiln_exe_call_n(cx, p->exe, j->in, p->n_args, out, p->n_outputs) != KILN_OK)
            e = kiln_pjrt_ctx_error(cx, fn);
        for (int32_t r = 0; r < p->n_outputs && !e; r++)
            kiln_tensor_retain(out[r]);
        kiln_pjrt_leave(p->client);
    }
    for (int32_t r = 0; r < p->n_outputs; r++)
        kiln_pjrt_buffer_fulfill(j->outs[r], e ? NULL : out[r], e ? e->code : PJRT_Error_Code_OK,
                                 e ? e->message : NULL);
    kiln_pjrt_event_complete(j->done, e ? e->code : PJRT_Error_Code_OK, e ? e->message : NULL);
    kiln_pjrt_error_free(e);
    free(out);
    job_free(j);
}

/* The job for one execution, its arguments checked; NULL with the error in *err. */
static kiln_pjrt_job *job_new(kiln_pjrt_program *p, PJRT_Buffer *const *in,
                              const PJRT_ExecuteOptions *o, PJRT_Error **err) {
    static const char fn[] = "PJRT_LoadedExecutable_Execute";
    for (int32_t i = 0; i < p->n_args; i++) {
        PJRT_Buffer *b = in[i];
        if (!b) {
            *err = kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: argument %d is NULL", fn,
                                   (int)i);
            return NULL;
        }
        if (b->device != p->device) {
            *err = kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                                   "%s: argument %d is on kiln:%d; the program runs on kiln:%d", fn,
                                   (int)i, b->device->index, p->device->index);
            return NULL;
        }
        for (int32_t k = 0; k < i; k++)
            if (in[k] == b && p->donated[i] && !not_donatable(o, i)) {
                *err = kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                                       "%s: argument %d is donated and also passed as argument "
                                       "%d",
                                       fn, (int)i, (int)k);
                return NULL;
            }
        pthread_mutex_lock(&b->lock);
        bool gone = b->deleted;
        pthread_mutex_unlock(&b->lock);
        if (gone) {
            *err = kiln_pjrt_error(PJRT_Error_Code_FAILED_PRECONDITION,
                                   "%s: argument %d was deleted or donated", fn, (int)i);
            return NULL;
        }
    }
    kiln_pjrt_job *j = calloc(1, sizeof *j);
    size_t n_args = (size_t)(p->n_args ? p->n_args : 1);
    size_t n_out = (size_t)(p->n_outputs ? p->n_outputs : 1);
    if (j) {
        j->in = calloc(n_args, sizeof *j->in);
        j->args = calloc(n_args, sizeof *j->args);
        j->consume = calloc(n_args, sizeof *j->consume);
        j->keep = calloc(n_args, sizeof *j->keep);
        j->outs = calloc(n_out, sizeof *j->outs);
        j->done = kiln_pjrt_event_new(false, NULL);
        j->program = p;
        atomic_fetch_add(&p->refs, 1);
    }
    bool ok = j && j->in && j->args && j->consume && j->keep && j->outs && j->done;
    for (int32_t r = 0; ok && r < p->n_outputs; r++) {
        const int64_t *dims = p->output_dims;
        for (int32_t q = 0; q < r; q++)
            dims += p->output_ranks[q];
        j->outs[r] = kiln_pjrt_buffer_pending(p->client, p->device, p->output_types[r],
                                              (int32_t)p->output_ranks[r], dims);
        ok = j->outs[r] != NULL;
    }
    if (!ok) {
        if (j && j->in && j->args && j->consume && j->keep && j->outs)
            job_free(j);
        else if (j) {
            free(j->in);
            free(j->args);
            free(j->consume);
            free(j->keep);
            free(j->outs);
            kiln_pjrt_event_release(j->done);
            kiln_pjrt_program_release(p);
            free(j);
        }
        *err = kiln_pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
        return NULL;
    }
    /* Arguments ready now are taken now (a donated one consumed: the framework sees it
     * deleted at once, as after XLA's executions); the others when the job runs. */
    for (int32_t i = 0; i < p->n_args; i++) {
        PJRT_Buffer *b = in[i];
        j->keep[i] = p->donated[i] && not_donatable(o, i);
        j->consume[i] = p->donated[i] && !j->keep[i];
        if (kiln_pjrt_buffer_is_ready(b)) {
            PJRT_Error *e = kiln_pjrt_buffer_take(
                b, fn, j->consume[i] ? KILN_PJRT_CONSUME : KILN_PJRT_USE, &j->in[i]);
            if (e && !j->error)
                j->error = argument_error(e, i);
            else
                kiln_pjrt_error_free(e);
        } else {
            j->args[i] = kiln_pjrt_buffer_retain(b);
            j->n_deferred++;
        }
        if (j->consume[i]) kiln_pjrt_buffer_mark_deleted(b);
    }
    return j;
}

PJRT_Error *kiln_pjrt_LoadedExecutable_Execute(PJRT_LoadedExecutable_Execute_Args *args) {
    static const char fn[] = "PJRT_LoadedExecutable_Execute";
    KILN_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_Execute_Args, device_complete_events);
    PROGRAM(args);
    if (atomic_load(&args->executable->deleted))
        return kiln_pjrt_error(PJRT_Error_Code_FAILED_PRECONDITION,
                               "%s: the executable was deleted", fn);
    if (args->num_devices != 1)
        return kiln_pjrt_error(PJRT_Error_Code_UNIMPLEMENTED,
                               "%s: kiln runs a program on one device; %zu were asked for", fn,
                               args->num_devices);
    if (args->num_args != (size_t)p->n_args)
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "%s: %zu arguments; the program takes %d", fn, args->num_args,
                               (int)p->n_args);
    if (!args->argument_lists || !args->output_lists || !args->output_lists[0] ||
        (p->n_args && !args->argument_lists[0]))
        return kiln_pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
                               "%s: argument_lists or output_lists is NULL", fn);
    PJRT_Error *e = NULL;
    kiln_pjrt_job *j = job_new(p, p->n_args ? args->argument_lists[0] : NULL, args->options, &e);
    if (!j) return e;
    /* the framework's references: the outputs and the completion event */
    for (int32_t r = 0; r < p->n_outputs; r++)
        args->output_lists[0][r] = kiln_pjrt_buffer_retain(j->outs[r]);
    if (args->device_complete_events)
        args->device_complete_events[0] = kiln_pjrt_event_retain(j->done);
    /* an argument still to come (an alias not yet fulfilled) would block the caller */
    kiln_pjrt_queue_submit(p->client, &j->task, job_run, j, j->n_deferred > 0);
    return NULL;
}
