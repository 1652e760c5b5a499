/* SPDX-License-Identifier: Apache-2.0 */
/* The process's custom-call registry (kiln/custom_call.h): targets kept sorted, looked up
 * by binary search under a read lock, so that calls on many threads do not wait on each
 * other; the typed attribute accessors, which read the values' text in the op's record. */
#define _POSIX_C_SOURCE 200809L /* pthread_rwlock_t, strdup */

#include "backend/custom_calls.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ctx_internal.h"
#include "ops/custom_call.h"

typedef struct entry {
    char *target;
    kiln_custom_call_fn fn;
    void *user;
} entry;

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static entry *entries; /* sorted by target; process lifetime (not freed at exit) */
static int32_t n_entries, cap_entries;

/* The index of target, or where it would go (as -(index + 1)). */
static int32_t locate(const char *target) {
    int32_t lo = 0, hi = n_entries;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(entries[mid].target, target);
        if (c == 0) return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -(lo + 1);
}

kiln_status kiln_custom_call_register(kiln_ctx *cx, const char *target, kiln_custom_call_fn fn,
                                      void *user) {
    static const char name[] = "kiln_custom_call_register";
    if (!target || !target[0])
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: target is %s", name,
                                  target ? "empty" : "NULL");
    if (!fn) return kiln__null_argument(cx, name, "fn");
    kiln_status s = KILN_OK;
    pthread_rwlock_wrlock(&lock);
    int32_t at = locate(target);
    if (at >= 0) {
        if (entries[at].fn != fn || entries[at].user != user)
            s = kiln_ctx_set_error(cx, KILN_ALREADY_EXISTS,
                                   "%s: another function is registered for @%s (unregister it "
                                   "first)",
                                   name, target);
    } else if (n_entries == cap_entries &&
               !(entries =
                     realloc(entries, (size_t)(cap_entries = cap_entries ? cap_entries * 2 : 16) *
                                          sizeof *entries))) {
        s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", name);
    } else {
        char *copy = strdup(target);
        if (!copy) {
            s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: out of memory", name);
        } else {
            int32_t i = -at - 1;
            memmove(&entries[i + 1], &entries[i], (size_t)(n_entries - i) * sizeof *entries);
            entries[i] = (entry){copy, fn, user};
            n_entries++;
        }
    }
    pthread_rwlock_unlock(&lock);
    return s;
}

kiln_status kiln_custom_call_unregister(kiln_ctx *cx, const char *target) {
    if (!target) return kiln__null_argument(cx, "kiln_custom_call_unregister", "target");
    pthread_rwlock_wrlock(&lock);
    int32_t at = locate(target);
    if (at >= 0) {
        free(entries[at].target);
        memmove(&entries[at], &entries[at + 1], (size_t)(n_entries - at - 1) * sizeof *entries);
        n_entries--;
    }
    pthread_rwlock_unlock(&lock);
    if (at < 0)
        return kiln_ctx_set_error(cx, KILN_NOT_FOUND,
                                  "kiln_custom_call_unregister: no function is registered for @%s",
                                  target);
    return KILN_OK;
}

bool kiln__custom_call_find(const char *target, kiln_custom_call_fn *fn, void **user) {
    if (!target) return false;
    pthread_rwlock_rdlock(&lock);
    int32_t at = locate(target);
    if (at >= 0) {
        if (fn) *fn = entries[at].fn;
        if (user) *user = entries[at].user;
    }
    pthread_rwlock_unlock(&lock);
    return at >= 0;
}

bool kiln_custom_call_is_registered(const char *target) {
    return kiln__custom_call_find(target, NULL, NULL);
}

kiln_status kiln__custom_call_run(kiln_ctx *cx, const kiln__attrs *attrs,
                                  const kiln_custom_call_buffer *operands, int32_t n_operands,
                                  const kiln_custom_call_buffer *results, int32_t n_results) {
    const char *target = kiln__custom_call_target(attrs);
    kiln_custom_call_fn fn;
    void *user;
    if (!kiln__custom_call_find(target, &fn, &user))
        return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                  "stablehlo.custom_call @%s: no function is registered for the "
                                  "target (kiln_custom_call_register)",
                                  target ? target : "?");
    int64_t version = 1;
    for (int32_t i = 0; i < kiln__custom_call_n_attrs(attrs); i++) {
        const char *name, *value;
        if (kiln__custom_call_attr(attrs, i, &name, &value) && strcmp(name, "api_version") == 0)
            version = strtoll(value, NULL, 10);
    }
    struct kiln__custom_call_site site = {attrs};
    kiln_custom_call_frame call = {.target = target,
                                   .n_operands = n_operands,
                                   .n_results = n_results,
                                   .operands = operands,
                                   .results = results,
                                   .api_version = (int32_t)version,
                                   .site = &site};
    kiln_status before = kiln_ctx_status(cx);
    kiln_status s = fn(cx, &call, user);
    if (s == KILN_OK) return KILN_OK;
    /* the function's message, named; or a message of our own when it left none */
    if (before == KILN_OK && kiln_ctx_status(cx) != KILN_OK) {
        char message[sizeof cx->message];
        snprintf(message, sizeof message, "%s", kiln_ctx_error_message(cx));
        kiln_status st = kiln_ctx_status(cx);
        kiln_ctx_clear_error(cx);
        return kiln_ctx_set_error(cx, st, "stablehlo.custom_call @%s: %s", target, message);
    }
    return kiln_ctx_set_error(cx, s, "stablehlo.custom_call @%s: the function returned %s", target,
                              kiln_status_name(s));
}

/* ---- attributes ---------------------------------------------------------------------------- */

/* The text of the attribute `name` (len bytes at *value): an entry of the backend_config
 * dictionary, else one of the call's own attributes. */
static bool find_text(const kiln__attrs *attrs, const char *name, const char **value, size_t *len);

/* The value after `key = ` of a dictionary's top-level entry (normalized text: "{a = 1 : i64,
 * b = \"x\"}"). */
static bool dict_entry(const char *d, const char *key, const char **value, size_t *len) {
    size_t n = strlen(d), klen = strlen(key);
    if (n < 2 || d[0] != '{' || d[n - 1] != '}') return false;
    size_t i = 1;
    while (i < n - 1) {
        /* the entry's key: bare, or a quoted string */
        size_t ks = i, ke;
        bool quoted = d[i] == '"';
        if (quoted) {
            ke = ++i;
            while (ke < n - 1 && d[ke] != '"')
                ke += d[ke] == '\\' ? 2 : 1;
            ks = i;
            i = ke + 1;
        } else {
            while (i < n - 1 && d[i] != ' ' && d[i] != ',' && d[i] != '=')
                i++;
            ke = i;
        }
        /* " = " then the value up to the next top-level comma */
        while (i < n - 1 && (d[i] == ' ' || d[i] == '='))
            i++;
        size_t vs = i;
        int depth = 0;
        bool in_string = false;
        for (; i < n - 1; i++) {
            char c = d[i];
            if (in_string) {
                if (c == '\\')
                    i++;
                else if (c == '"')
                    in_string = false;
                continue;
            }
            if (c == '"') in_string = true;
            if (c == '[' || c == '{' || c == '(' || c == '<') depth++;
            if (c == ']' || c == '}' || c == ')' || c == '>') depth--;
            if (c == ',' && depth == 0) break;
        }
        size_t ve = i;
        if (ke - ks == klen && memcmp(d + ks, key, klen) == 0) {
            *value = d + vs;
            *len = ve - vs;
            return true;
        }
        i++; /* the comma */
        while (i < n - 1 && d[i] == ' ')
            i++;
    }
    return false;
}

static bool find_text(const kiln__attrs *attrs, const char *name, const char **value, size_t *len) {
    int32_t n = kiln__custom_call_n_attrs(attrs);
    for (int32_t i = 0; i < n; i++) {
        const char *an, *av;
        if (kiln__custom_call_attr(attrs, i, &an, &av) && strcmp(an, "mhlo.backend_config") == 0 &&
            dict_entry(av, name, value, len))
            return true;
    }
    for (int32_t i = 0; i < n; i++) {
        const char *an, *av;
        if (kiln__custom_call_attr(attrs, i, &an, &av) && strcmp(an, name) == 0) {
            *value = av;
            *len = strlen(av);
            return true;
        }
    }
    return false;
}

static kiln_status attr_text(kiln_ctx *cx, const kiln_custom_call_frame *call, const char *fn,
                             const char *name, const char **value, size_t *len) {
    if (!call || !call->site) return kiln__null_argument(cx, fn, "call");
    if (!name) return kiln__null_argument(cx, fn, "name");
    if (!find_text(call->site->attrs, name, value, len))
        return kiln_ctx_set_error(cx, KILN_NOT_FOUND, "%s: @%s has no attribute '%s'", fn,
                                  call->target, name);
    return KILN_OK;
}

static kiln_status wrong_kind(kiln_ctx *cx, const kiln_custom_call_frame *call, const char *fn,
                              const char *name, const char *value, size_t len, const char *want) {
    return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                              "%s: @%s's attribute '%s' is %.*s; "
                              "expected %s",
                              fn, call->target, name, (int)(len > 60 ? 60 : len), value, want);
}

/* The number before " : type" (or the whole text). */
static size_t number_len(const char *v, size_t len) {
    for (size_t i = 0; i + 2 < len; i++)
        if (v[i] == ' ' && v[i + 1] == ':') return i;
    return len;
}

static bool parse_i64(const char *v, size_t len, int64_t *out) {
    if (len == 4 && memcmp(v, "true", 4) == 0) return (*out = 1), true;
    if (len == 5 && memcmp(v, "false", 5) == 0) return (*out = 0), true;
    char buf[32];
    size_t n = number_len(v, len);
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, v, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    if (*end || errno) return false;
    *out = x;
    return true;
}

kiln_status kiln_custom_call_attr_i64(kiln_ctx *cx, const kiln_custom_call_frame *call,
                                      const char *name, int64_t *out) {
    static const char fn[] = "kiln_custom_call_attr_i64";
    const char *v;
    size_t len;
    kiln_status s = attr_text(cx, call, fn, name, &v, &len);
    if (s != KILN_OK) return s;
    if (!out) return kiln__null_argument(cx, fn, "out");
    size_t n = number_len(v, len);
    bool is_float = n < len && (strstr(v + n, ": f") != NULL || strstr(v + n, ": bf") != NULL);
    if (is_float || !parse_i64(v, len, out))
        return wrong_kind(cx, call, fn, name, v, len, "an integer");
    return KILN_OK;
}

/* A float's value: decimal text, or an MLIR hex literal of the type's bits. */
static bool parse_f64(const char *v, size_t len, double *out) {
    char buf[64];
    size_t n = number_len(v, len);
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, v, n);
    buf[n] = '\0';
    const char *type = n < len ? v + n + 3 : "";
    if (n > 2 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')) {
        char *end;
        unsigned long long bits = strtoull(buf, &end, 16);
        if (*end) return false;
        if (strncmp(type, "f64", 3) == 0) {
            memcpy(out, &bits, sizeof *out);
            return true;
        }
        if (strncmp(type, "f32", 3) == 0) {
            uint32_t b = (uint32_t)bits;
            float f;
            memcpy(&f, &b, sizeof f);
            *out = f;
            return true;
        }
        return false;
    }
    int64_t i;
    if (parse_i64(v, len, &i) && !(len >= 4 && (v[0] == 't' || v[0] == 'f'))) {
        *out = (double)i;
        return true;
    }
    char *end;
    *out = strtod(buf, &end);
    return *end == '\0';
}

kiln_status kiln_custom_call_attr_f64(kiln_ctx *cx, const kiln_custom_call_frame *call,
                                      const char *name, double *out) {
    static const char fn[] = "kiln_custom_call_attr_f64";
    const char *v;
    size_t len;
    kiln_status s = attr_text(cx, call, fn, name, &v, &len);
    if (s != KILN_OK) return s;
    if (!out) return kiln__null_argument(cx, fn, "out");
    if (!parse_f64(v, len, out)) return wrong_kind(cx, call, fn, name, v, len, "a number");
    return KILN_OK;
}

kiln_status kiln_custom_call_attr_bool(kiln_ctx *cx, const kiln_custom_call_frame *call,
                                       const char *name, bool *out) {
    static const char fn[] = "kiln_custom_call_attr_bool";
    const char *v;
    size_t len;
    kiln_status s = attr_text(cx, call, fn, name, &v, &len);
    if (s != KILN_OK) return s;
    if (!out) return kiln__null_argument(cx, fn, "out");
    int64_t i;
    size_t n = number_len(v, len);
    bool is_float = n < len && strstr(v + n, ": f") != NULL;
    if (is_float || !parse_i64(v, len, &i) || (i != 0 && i != 1))
        return wrong_kind(cx, call, fn, name, v, len, "true, false, 0 or 1");
    *out = i != 0;
    return KILN_OK;
}

static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string's contents, MLIR's escapes undone, into buf (cap > 0); its whole length. */
static size_t unescape(const char *v, size_t len, char *buf, size_t cap) {
    size_t o = 0;
    for (size_t i = 1; i + 1 < len; i++) {
        char c = v[i];
        if (c == '\\' && i + 2 < len) {
            int h = hex(v[i + 1]), l = hex(v[i + 2]);
            if (h >= 0 && l >= 0) {
                c = (char)(h * 16 + l);
                i += 2;
            } else {
                c = v[++i]; /* \\ and \" */
            }
        }
        if (o + 1 < cap) buf[o] = c;
        o++;
    }
    buf[o + 1 < cap ? o : cap - 1] = '\0';
    return o;
}

static kiln_status string_out(kiln_ctx *cx, const kiln_custom_call_frame *call, const char *fn,
                              const char *name, const char *v, size_t len, char *buf, size_t cap,
                              size_t *out_len) {
    if (!buf || cap == 0) return kiln__null_argument(cx, fn, "buf");
    size_t n = unescape(v, len, buf, cap);
    if (out_len) *out_len = n;
    if (n + 1 > cap)
        return kiln_ctx_set_error(cx, KILN_OUT_OF_RANGE,
                                  "%s: @%s's %s has %zu bytes; buf holds %zu", fn, call->target,
                                  name, n, cap - 1);
    return KILN_OK;
}

kiln_status kiln_custom_call_attr_string(kiln_ctx *cx, const kiln_custom_call_frame *call,
                                         const char *name, char *buf, size_t cap, size_t *len) {
    static const char fn[] = "kiln_custom_call_attr_string";
    const char *v;
    size_t vlen;
    kiln_status s = attr_text(cx, call, fn, name, &v, &vlen);
    if (s != KILN_OK) return s;
    if (vlen < 2 || v[0] != '"' || v[vlen - 1] != '"')
        return wrong_kind(cx, call, fn, name, v, vlen, "a string");
    return string_out(cx, call, fn, name, v, vlen, buf, cap, len);
}

kiln_status kiln_custom_call_backend_config(kiln_ctx *cx, const kiln_custom_call_frame *call,
                                            char *buf, size_t cap, size_t *len) {
    static const char fn[] = "kiln_custom_call_backend_config";
    if (!call || !call->site) return kiln__null_argument(cx, fn, "call");
    int32_t n = kiln__custom_call_n_attrs(call->site->attrs);
    for (int32_t i = 0; i < n; i++) {
        const char *an, *av;
        if (kiln__custom_call_attr(call->site->attrs, i, &an, &av) &&
            strcmp(an, "backend_config") == 0 && av[0] == '"')
            return string_out(cx, call, fn, "backend_config", av, strlen(av), buf, cap, len);
    }
    if (!buf || cap == 0) return kiln__null_argument(cx, fn, "buf");
    buf[0] = '\0';
    if (len) *len = 0;
    return KILN_OK;
}
