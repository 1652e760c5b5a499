/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/buffer_cache.h"
#include "base/ctx_internal.h"
#include "base/scope.h"
#include "base/threads.h"

kiln_ctx_options kiln_ctx_options_default(void) {
    return (kiln_ctx_options){
        .struct_size = sizeof(kiln_ctx_options),
        .allocator = NULL,
        .log_fn = NULL,
        .log_user = NULL,
        .log_level = KILN_LOG_UNSET,
        .device = KILN_DEVICE_CPU,
        .num_threads = 0,
        .cpu_devices = 0,
        .backend = NULL,
        .cache_bytes = KILN_CACHE_BYTES_DEFAULT,
        .native = KILN_NATIVE_DEFAULT,
        .cache_dir = NULL,
    };
}

bool kiln_log_level_parse(const char *text, kiln_log_level *out_level) {
    static const struct {
        const char *name;
        kiln_log_level level;
    } names[] = {{"off", KILN_LOG_OFF},    {"none", KILN_LOG_OFF},     {"error", KILN_LOG_ERROR},
                 {"warn", KILN_LOG_WARN},  {"warning", KILN_LOG_WARN}, {"info", KILN_LOG_INFO},
                 {"debug", KILN_LOG_DEBUG}};
    if (!text || !out_level) return false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcasecmp(text, names[i].name) == 0) {
            *out_level = names[i].level;
            return true;
        }
    }
    return false;
}

/* KILN_CPU_DEVICES: a count from 1 to KILN__MAX_CPU_DEVICES; anything else means 1. */
static int32_t cpu_devices_from_env(void) {
    const char *env = getenv("KILN_CPU_DEVICES");
    if (!env || !*env) return 1;
    char *end = NULL;
    long n = strtol(env, &end, 10);
    if (*end != '\0' || n < 1 || n > KILN__MAX_CPU_DEVICES) return 1;
    return (int32_t)n;
}

/* Copies the fields an options struct of `struct_size` bytes actually has. */
#define HAS_FIELD(opts, field) \
    ((opts)->struct_size >= offsetof(kiln_ctx_options, field) + sizeof((opts)->field))

kiln_status kiln_ctx_create(const kiln_ctx_options *options, kiln_ctx **out_ctx) {
    if (!out_ctx) return KILN_INVALID_ARGUMENT;
    *out_ctx = NULL;
    kiln_ctx_options o = kiln_ctx_options_default();
    if (options) {
        if (!HAS_FIELD(options, allocator)) return KILN_INVALID_ARGUMENT;
        o.allocator = options->allocator;
        if (HAS_FIELD(options, log_fn)) o.log_fn = options->log_fn;
        if (HAS_FIELD(options, log_user)) o.log_user = options->log_user;
        if (HAS_FIELD(options, log_level)) o.log_level = options->log_level;
        if (HAS_FIELD(options, device)) o.device = options->device;
        if (HAS_FIELD(options, num_threads)) o.num_threads = options->num_threads;
        if (HAS_FIELD(options, cpu_devices)) o.cpu_devices = options->cpu_devices;
        if (HAS_FIELD(options, backend)) o.backend = options->backend;
        if (HAS_FIELD(options, cache_bytes)) o.cache_bytes = options->cache_bytes;
        if (HAS_FIELD(options, native)) o.native = options->native;
        if (HAS_FIELD(options, cache_dir)) o.cache_dir = options->cache_dir;
    }
    if (!o.backend) o.backend = getenv("KILN_BACKEND");
    if (o.backend && strlen(o.backend) >= sizeof((kiln_ctx *)0)->backend)
        return KILN_INVALID_ARGUMENT;
    if (o.cpu_devices < 0 || o.cpu_devices > KILN__MAX_CPU_DEVICES) return KILN_INVALID_ARGUMENT;
    if (o.cpu_devices == 0) o.cpu_devices = cpu_devices_from_env();
    if (o.allocator && (!o.allocator->alloc || !o.allocator->free)) return KILN_INVALID_ARGUMENT;
    if (o.log_level < KILN_LOG_UNSET || o.log_level > KILN_LOG_DEBUG) return KILN_INVALID_ARGUMENT;
    if (o.device.type != KILN_DEVICE_TYPE_CPU || o.device.id < 0 || o.device.id >= o.cpu_devices)
        return KILN_INVALID_ARGUMENT;
    if (o.num_threads < 0) return KILN_INVALID_ARGUMENT;
    if ((int)o.native < 0 || (int)o.native > (int)KILN_NATIVE_WAIT) return KILN_INVALID_ARGUMENT;
    if (o.cache_dir && strlen(o.cache_dir) >= sizeof((kiln_ctx *)0)->cache_dir)
        return KILN_INVALID_ARGUMENT;

    const kiln_allocator *a = o.allocator ? o.allocator : kiln_allocator_default();
    kiln_ctx *cx = kiln__raw_alloc(a, sizeof *cx, _Alignof(kiln_ctx));
    if (!cx) return KILN_RESOURCE_EXHAUSTED;
    memset(cx, 0, sizeof *cx);
    cx->allocator = *a;
    cx->cache = kiln__buffer_cache_new(a, o.cache_bytes);
    if (!cx->cache) {
        kiln__raw_free(a, cx, sizeof *cx);
        return KILN_RESOURCE_EXHAUSTED;
    }
    cx->log_fn = o.log_fn;
    cx->log_user = o.log_user;
    cx->device = o.device;
    cx->cpu_devices = o.cpu_devices;
    if (o.backend) strcpy(cx->backend, o.backend);
    cx->native = o.native;
    if (o.cache_dir) strcpy(cx->cache_dir, o.cache_dir);
    cx->status = KILN_OK;
    kiln__scope_init(&cx->root_scope, NULL);
    cx->scope = &cx->root_scope;

    kiln_log_level level = o.log_level;
    if (level == KILN_LOG_UNSET) {
        const char *env = getenv("KILN_LOG");
        if (!env || !kiln_log_level_parse(env, &level))
            level = o.log_fn ? KILN_LOG_WARN : KILN_LOG_OFF;
    }
    cx->log_level = level;
    if (o.num_threads > 0) kiln__threads_set_count(o.num_threads);
    *out_ctx = cx;
    return KILN_OK;
}

void kiln_ctx_release(kiln_ctx *cx) {
    if (!cx) return;
    while (cx->scope_depth > 0)
        kiln_scope_end(cx);
    kiln__scope_drain(&cx->root_scope);
    if (cx->comm && cx->comm_release) cx->comm_release(cx->comm);
    kiln__buffer_cache_close(cx->cache);
    kiln_allocator a = cx->allocator;
    kiln__raw_free(&a, cx, sizeof *cx);
}

kiln_status kiln_ctx_cache_stats(kiln_ctx *cx, kiln_cache_stats *out) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out) return kiln__null_argument(cx, "kiln_ctx_cache_stats", "out");
    kiln__buffer_cache_stats(cx->cache, out);
    return KILN_OK;
}

size_t kiln_ctx_trim(kiln_ctx *cx) { return cx ? kiln__buffer_cache_trim(cx->cache) : 0; }

void kiln_ctx_set_cache_limit(kiln_ctx *cx, size_t bytes) {
    if (cx) kiln__buffer_cache_set_limit(cx->cache, bytes);
}

kiln_status kiln_ctx_status(const kiln_ctx *cx) { return cx ? cx->status : KILN_INVALID_ARGUMENT; }

const char *kiln_ctx_error_message(const kiln_ctx *cx) {
    if (!cx) return "kiln: the ctx is NULL";
    return cx->message;
}

void kiln_ctx_clear_error(kiln_ctx *cx) {
    if (!cx) return;
    cx->status = KILN_OK;
    cx->message[0] = '\0';
}

static void log_line(kiln_ctx *cx, kiln_log_level level, const char *line) {
    if (cx->log_fn) {
        cx->log_fn(cx->log_user, level, line);
        return;
    }
    static const char *const tags[] = {"", "error", "warn", "info", "debug"};
    fprintf(stderr, "kiln %s: %s\n", tags[level], line);
}

static kiln_status set_error_v(kiln_ctx *cx, kiln_status status, const char *fmt, va_list ap)
    KILN_PRINTF_LIKE(3, 0);

static kiln_status set_error_v(kiln_ctx *cx, kiln_status status, const char *fmt, va_list ap) {
    if (!cx) return status;
    if (status == KILN_OK) return KILN_OK;
    if (cx->status != KILN_OK) return status; /* sticky: keep the first */
    cx->status = status;
    vsnprintf(cx->message, sizeof cx->message, fmt, ap);
    if (cx->log_level >= KILN_LOG_DEBUG) log_line(cx, KILN_LOG_DEBUG, cx->message);
    return status;
}

kiln_status kiln_ctx_set_error(kiln_ctx *cx, kiln_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kiln_status s = set_error_v(cx, status, fmt ? fmt : "(no message)", ap);
    va_end(ap);
    return s;
}

kiln_status kiln__null_argument(kiln_ctx *cx, const char *fn, const char *arg) {
    if (cx && cx->status == KILN_OK)
        kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: %s is NULL", fn, arg);
    return KILN_INVALID_ARGUMENT;
}

void *kiln__null_argument_ptr(kiln_ctx *cx, const char *fn, const char *arg) {
    kiln__null_argument(cx, fn, arg);
    return NULL;
}

kiln_status kiln__struct_too_small(kiln_ctx *cx, const char *fn, const char *what, size_t size,
                                   size_t expected, const char *defaults) {
    return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                              "%s: %s->struct_size is %zu; expected %zu (use %s)", fn, what, size,
                              expected, defaults);
}

kiln_status kiln__options_read(kiln_ctx *cx, const char *fn, const void *options, void *o,
                               size_t size, const char *defaults) {
    if (!options) return KILN_OK;
    size_t have;
    memcpy(&have, options, sizeof have);
    if (have < size) return kiln__struct_too_small(cx, fn, "options", have, size, defaults);
    memcpy(o, options, size);
    return KILN_OK;
}

const kiln_allocator *kiln_ctx_allocator(const kiln_ctx *cx) {
    return cx ? &cx->allocator : kiln_allocator_default();
}

kiln_device kiln_ctx_device(const kiln_ctx *cx) { return cx ? cx->device : KILN_DEVICE_CPU; }

kiln_log_level kiln_ctx_log_level(const kiln_ctx *cx) { return cx ? cx->log_level : KILN_LOG_OFF; }

void kiln_ctx_set_log_level(kiln_ctx *cx, kiln_log_level level) {
    if (!cx || level < KILN_LOG_OFF || level > KILN_LOG_DEBUG) return;
    cx->log_level = level;
}

void kiln_ctx_log(kiln_ctx *cx, kiln_log_level level, const char *fmt, ...) {
    if (!cx || !fmt || level <= KILN_LOG_OFF || level > KILN_LOG_DEBUG) return;
    if (level > cx->log_level) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    log_line(cx, level, line);
}
