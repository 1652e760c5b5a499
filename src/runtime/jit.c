/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_jit: a function with an executable cache keyed by its argument signature. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/ctx_internal.h"
#include "core/tensor_internal.h"
#include "frontend/trace.h"
#include "ir/ir.h"
#include "runtime/exe.h"
#include "runtime/jit_key.h"
#include "runtime/tree_internal.h"

#define JIT_MAX_ARGS 4096
#define JIT_DEFAULT_MAX_ENTRIES 64
#define JIT_REASON_MAX 512
#define JIT_GONE_MAX 32 /* departed signatures remembered, to explain their recompiles */

/* Why a signature left the cache. */
typedef enum jit_gone_why { GONE_MAX_ENTRIES, GONE_MAX_BYTES, GONE_CLEARED } jit_gone_why;

typedef struct jit_gone {
    uint64_t hash; /* of the key (a 64-bit hash: a false match only mislabels a log line) */
    jit_gone_why why;
} jit_gone;

/* One cached executable. */
typedef struct jit_entry {
    struct jit_entry *prev, *next; /* the LRU list: most recently used first */
    kiln__jit_key key;
    kiln_exe *exe;
    kiln_tree_static *out_statics; /* the static members of the result, from the trace */
    size_t bytes;                  /* the estimate counted against max_bytes */
} jit_entry;

struct kiln_jit {
    atomic_int refs;
    kiln_allocator allocator; /* the creating ctx's: the jit's own memory */
    pthread_mutex_t mutex;    /* guards everything below `cache` */

    char *name;
    bool tree;
    kiln_region region;  /* list mode */
    kiln_jit_fn tree_fn; /* tree mode */
    void *tree_user;
    kiln__jit_layout layout; /* leaves and statics of the input and output */
    bool *donate;            /* per input leaf */
    bool donate_all;
    bool has_compile;
    kiln_compile_options compile;
    int32_t max_entries;
    size_t max_bytes;
    int32_t max_specializations;

    /* cache */
    jit_entry *head, *tail;
    kiln_jit_stats stats;
    int64_t pending;        /* compiles under way, counted against max_specializations */
    kiln__jit_key last_key; /* the signature of the last successful call (words NULL: none) */
    kiln_exe *last_exe;
    jit_gone gone[JIT_GONE_MAX]; /* the latest departures, a ring */
    int32_t n_gone;              /* ever recorded */
};

/* ---- memory ------------------------------------------------------------------------------ */

static void *jit_alloc(kiln_ctx *cx, const kiln_allocator *a, size_t size, const char *what) {
    void *p = kiln__raw_alloc(a, size ? size : 1, 16);
    if (!p)
        kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory allocating %zu bytes for %s",
                           size, what);
    else
        memset(p, 0, size ? size : 1);
    return p;
}

static void jit_free(const kiln_allocator *a, void *p, size_t size) {
    kiln__raw_free(a, p, size ? size : 1);
}

static char *jit_strdup(kiln_ctx *cx, const kiln_allocator *a, const char *s, const char *what) {
    size_t n = strlen(s);
    char *d = jit_alloc(cx, a, n + 1, what);
    if (d) memcpy(d, s, n + 1);
    return d;
}

static void jit_strfree(const kiln_allocator *a, char *s) {
    if (s) jit_free(a, s, strlen(s) + 1);
}

/* ---- options and creation ----------------------------------------------------------------- */

kiln_jit_options kiln_jit_options_default(void) {
    return (kiln_jit_options){.struct_size = sizeof(kiln_jit_options),
                              .name = "jit",
                              .max_entries = JIT_DEFAULT_MAX_ENTRIES};
}

static void free_entry(kiln_jit *f, jit_entry *e) {
    kiln_exe_release(e->exe);
    kiln__jit_key_free(&f->allocator, &e->key);
    if (e->out_statics)
        jit_free(&f->allocator, e->out_statics,
                 (size_t)f->layout.n_out_statics * sizeof *e->out_statics);
    jit_free(&f->allocator, e, sizeof *e);
}

static void unlink_entry(kiln_jit *f, jit_entry *e) {
    if (e->prev)
        e->prev->next = e->next;
    else
        f->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        f->tail = e->prev;
    e->prev = e->next = NULL;
    f->stats.entries--;
    f->stats.bytes -= e->bytes;
}

static void push_front(kiln_jit *f, jit_entry *e) {
    e->prev = NULL;
    e->next = f->head;
    if (f->head) f->head->prev = e;
    f->head = e;
    if (!f->tail) f->tail = e;
    f->stats.entries++;
    f->stats.bytes += e->bytes;
}

/* Remembers that the signature with `hash` left the cache, and why. Lock held. */
static void record_gone(kiln_jit *f, uint64_t hash, jit_gone_why why) {
    f->gone[f->n_gone % JIT_GONE_MAX] = (jit_gone){hash, why};
    f->n_gone++;
}

static const jit_gone *find_gone(const kiln_jit *f, uint64_t hash) {
    int32_t n = f->n_gone < JIT_GONE_MAX ? f->n_gone : JIT_GONE_MAX;
    for (int32_t k = 1; k <= n; k++) { /* the latest first */
        const jit_gone *g = &f->gone[(f->n_gone - k) % JIT_GONE_MAX];
        if (g->hash == hash) return g;
    }
    return NULL;
}

static void clear_entries(kiln_jit *f, bool record) {
    while (f->head) {
        jit_entry *e = f->head;
        if (record) record_gone(f, e->key.hash, GONE_CLEARED);
        unlink_entry(f, e);
        free_entry(f, e);
    }
}

static void destroy(kiln_jit *f) {
    clear_entries(f, false);
    kiln_exe_release(f->last_exe);
    kiln__jit_key_free(&f->allocator, &f->last_key);
    if (f->donate) jit_free(&f->allocator, f->donate, (size_t)f->layout.n_in * sizeof *f->donate);
    kiln__jit_layout_free(&f->allocator, &f->layout);
    jit_strfree(&f->allocator, f->name);
    jit_strfree(&f->allocator, (char *)f->compile.backend);
    pthread_mutex_destroy(&f->mutex);
    kiln_allocator a = f->allocator;
    jit_free(&a, f, sizeof *f);
}

/* Reads and checks the options shared by both kinds of jit (NULL: the defaults). */
static kiln_status read_options(kiln_ctx *cx, const char *api, const kiln_jit_options *options,
                                kiln_jit_options *out) {
    *out = kiln_jit_options_default();
    kiln_status s =
        kiln__options_read(cx, api, options, out, sizeof *out, "kiln_jit_options_default");
    if (s != KILN_OK) return s;
    const kiln_jit_options *o = out;
    if (o->max_entries < 0 || o->max_specializations < 0)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: max_entries (%d) and max_specializations (%d) must not be "
                                  "negative (0: no limit)",
                                  api, (int)o->max_entries, (int)o->max_specializations);
    if (o->n_donate_paths < 0 || (o->n_donate_paths > 0 && !o->donate_paths))
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: n_donate_paths is %d with donate_paths %s", api,
                                  (int)o->n_donate_paths, o->donate_paths ? "set" : "NULL");
    for (int32_t i = 0; i < o->n_donate_paths; i++)
        if (!o->donate_paths[i] || !o->donate_paths[i][0])
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: donate_paths[%d] is NULL or empty", api, (int)i);
    if (o->compile && o->compile->struct_size < sizeof(kiln_compile_options))
        return kiln__struct_too_small(cx, api, "options->compile", o->compile->struct_size,
                                      sizeof(kiln_compile_options), "kiln_compile_options_default");
    return KILN_OK;
}

/* Everything after the layout: names, donation, bounds. Takes f (layout built) and frees it
 * on failure. */
static kiln_status finish_create(kiln_ctx *cx, const char *api, kiln_jit *f,
                                 const kiln_jit_options *o, kiln_jit **out_jit) {
    kiln_status s = KILN_OK;
    f->name = jit_strdup(cx, &f->allocator, o->name ? o->name : "jit", api);
    int32_t n = f->layout.n_in;
    f->donate = jit_alloc(cx, &f->allocator, (size_t)n * sizeof *f->donate, api);
    if (!f->name || !f->donate) s = KILN_RESOURCE_EXHAUSTED;
    for (int32_t i = 0; i < n && s == KILN_OK; i++) {
        f->donate[i] = o->donate && o->donate[i];
        if (f->donate[i] && f->layout.in_leaves[i].is_static)
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                   "%s: argument %d is static (static_argnums); it is not an "
                                   "argument of the compiled program and cannot be donated",
                                   api, (int)i);
    }
    for (int32_t p = 0; p < o->n_donate_paths && s == KILN_OK; p++) {
        bool matched = false;
        for (int32_t i = 0; i < n; i++)
            if (!f->layout.in_leaves[i].is_static &&
                kiln__tree_path_has_prefix(f->layout.in_leaves[i].path, o->donate_paths[p]))
                matched = f->donate[i] = true;
        if (!matched)
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                   "%s: donate path '%s' matches no argument of %s", api,
                                   o->donate_paths[p], f->name);
    }
    /* Every entry compiles with one backend: the one the options name, else the default
     * of the ctx creating the jit (KILN_BACKEND), so that calls from ctxs with other
     * defaults share the cache. The name is the caller's string: keep a copy. */
    const char *backend = o->compile && o->compile->backend ? o->compile->backend
                          : cx->backend[0]                  ? cx->backend
                                                            : NULL;
    if (s == KILN_OK && (o->compile || backend)) {
        f->has_compile = true;
        f->compile = o->compile ? *o->compile : kiln_compile_options_default();
        f->compile.backend = NULL;
        if (backend && !(f->compile.backend = jit_strdup(cx, &f->allocator, backend, api)))
            s = KILN_RESOURCE_EXHAUSTED;
    }
    if (s == KILN_OK && pthread_mutex_init(&f->mutex, NULL) != 0)
        s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: cannot make a mutex", api);
    if (s != KILN_OK) {
        if (f->donate) jit_free(&f->allocator, f->donate, (size_t)n * sizeof *f->donate);
        kiln__jit_layout_free(&f->allocator, &f->layout);
        jit_strfree(&f->allocator, f->name);
        jit_strfree(&f->allocator, (char *)f->compile.backend);
        kiln_allocator a = f->allocator;
        jit_free(&a, f, sizeof *f);
        return s;
    }
    f->donate_all = o->donate_all;
    f->max_entries = o->max_entries;
    f->max_bytes = o->max_bytes;
    f->max_specializations = o->max_specializations;
    atomic_init(&f->refs, 1);
    *out_jit = f;
    return KILN_OK;
}

static kiln_jit *new_jit(kiln_ctx *cx, const char *api) {
    kiln_jit *f = jit_alloc(cx, &cx->allocator, sizeof *f, api);
    if (f) f->allocator = cx->allocator;
    return f;
}

kiln_status kiln_jit_create(kiln_ctx *cx, const kiln_region *fn, int32_t n_in, int32_t n_out,
                            const kiln_jit_options *options, kiln_jit **out_jit) {
    static const char api[] = "kiln_jit_create";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_jit) return kiln__null_argument(cx, api, "out_jit");
    *out_jit = NULL;
    if (!fn || !fn->fn) return kiln__null_argument(cx, api, "fn");
    if (n_in < 0 || n_out < 0 || n_in > JIT_MAX_ARGS || n_out > JIT_MAX_ARGS)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: n_in %d and n_out %d must be within 0..%d", api, (int)n_in,
                                  (int)n_out, JIT_MAX_ARGS);
    kiln_jit_options o;
    kiln_status s = read_options(cx, api, options, &o);
    if (s != KILN_OK) return s;
    bool fixed[64] = {false}, *is_static = fixed;
    size_t sbytes = (size_t)(n_in ? n_in : 1);
    if (n_in > 64 && !(is_static = jit_alloc(cx, &cx->allocator, sbytes, api)))
        return KILN_RESOURCE_EXHAUSTED;
    if (is_static != fixed) memset(is_static, 0, sbytes);
    if (o.n_static_argnums < 0 || (o.n_static_argnums > 0 && !o.static_argnums))
        s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "%s: n_static_argnums is %d with static_argnums %s", api,
                               (int)o.n_static_argnums, o.static_argnums ? "set" : "NULL");
    for (int32_t k = 0; k < o.n_static_argnums && s == KILN_OK; k++) {
        int32_t a = o.static_argnums[k];
        if (a < 0 || a >= n_in)
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                   "%s: static_argnums[%d] is %d; expected 0 to %d", api, (int)k,
                                   (int)a, (int)n_in - 1);
        else if (is_static[a])
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                   "%s: static_argnums[%d] repeats argument %d", api, (int)k,
                                   (int)a);
        else
            is_static[a] = true;
    }
    kiln_jit *f = s == KILN_OK ? new_jit(cx, api) : NULL;
    if (f) {
        f->region = *fn;
        s = kiln__jit_layout_list(cx, &f->allocator, n_in, n_out, o.arg_names, is_static,
                                  &f->layout);
        if (s != KILN_OK) {
            jit_free(&f->allocator, f, sizeof *f);
            f = NULL;
        }
    } else if (s == KILN_OK) {
        s = KILN_RESOURCE_EXHAUSTED;
    }
    if (is_static != fixed) jit_free(&cx->allocator, is_static, sbytes);
    if (!f) return s;
    return finish_create(cx, api, f, &o, out_jit);
}

kiln_status kiln_jit_create_tree(kiln_ctx *cx, kiln_jit_fn fn, void *user,
                                 const kiln_tree_def *in_def, const kiln_tree_def *out_def,
                                 const kiln_jit_options *options, kiln_jit **out_jit) {
    static const char api[] = "kiln_jit_create_tree";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_jit) return kiln__null_argument(cx, api, "out_jit");
    *out_jit = NULL;
    if (!fn) return kiln__null_argument(cx, api, "fn");
    if (!in_def) return kiln__null_argument(cx, api, "in_def");
    if (!out_def) return kiln__null_argument(cx, api, "out_def");
    kiln_jit_options o;
    kiln_status s = read_options(cx, api, options, &o);
    if (s != KILN_OK) return s;
    if (o.n_static_argnums != 0)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: static_argnums is for list mode; a tree function's "
                                  "statics are its KILN_STATIC members",
                                  api);
    kiln_jit *f = new_jit(cx, api);
    if (!f) return KILN_RESOURCE_EXHAUSTED;
    f->tree = true;
    f->tree_fn = fn;
    f->tree_user = user;
    s = kiln__jit_layout_tree(cx, api, &f->allocator, in_def, out_def, &f->layout);
    if (s != KILN_OK) {
        jit_free(&f->allocator, f, sizeof *f);
        return s;
    }
    return finish_create(cx, api, f, &o, out_jit);
}

kiln_jit *kiln_jit_retain(kiln_jit *f) {
    if (f) atomic_fetch_add(&f->refs, 1);
    return f;
}

void kiln_jit_release(kiln_jit *f) {
    if (f && atomic_fetch_sub(&f->refs, 1) == 1) destroy(f);
}

/* ---- tracing ------------------------------------------------------------------------------ */

typedef struct trace_call {
    kiln_jit *f;
    const void *in;                /* the caller's input struct */
    kiln_tree_static *out_statics; /* receives the result's statics */
} trace_call;

/* The kiln_region kiln_lower traces: rebuilds the input struct around the traced leaves,
 * runs the user's function, and lists its results. */
static kiln_status trace_adapter(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                                 void *user) {
    trace_call *tc = user;
    kiln_jit *f = tc->f;
    const kiln__jit_layout *l = &f->layout;
    void *in = jit_alloc(cx, &cx->allocator, l->in_size, f->name);
    void *out = jit_alloc(cx, &cx->allocator, l->out_size, f->name);
    kiln_status s = in && out ? KILN_OK : KILN_RESOURCE_EXHAUSTED;
    if (s == KILN_OK) {
        if (l->in_size) memcpy(in, tc->in, l->in_size); /* static leaves stay the caller's */
        for (int32_t i = 0, k = 0; i < l->n_in; i++)
            if (!l->in_leaves[i].is_static)
                memcpy((unsigned char *)in + l->in_leaves[i].offset, &args[k++],
                       sizeof(kiln_tensor *));
        if (f->tree)
            s = f->tree_fn(cx, in, out, f->tree_user);
        else
            s = f->region.fn(cx, in, out, f->region.user);
        if (s == KILN_OK) s = kiln_ctx_status(cx);
    }
    for (int32_t r = 0; r < l->n_out && s == KILN_OK; r++) {
        memcpy(&results[r], (unsigned char *)out + l->out_leaves[r].offset, sizeof(kiln_tensor *));
        if (!results[r])
            s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                   "%s: the function stored no tensor for result %d%s%s%s", f->name,
                                   (int)r, l->out_leaves[r].path ? " '" : "",
                                   l->out_leaves[r].path ? l->out_leaves[r].path : "",
                                   l->out_leaves[r].path ? "'" : "");
    }
    for (int32_t i = 0; i < l->n_out_statics && s == KILN_OK; i++)
        tc->out_statics[i] =
            kiln__tree_static_read(l->out_statics[i].kind, l->out_statics[i].size,
                                   (unsigned char *)out + l->out_statics[i].offset);
    if (in) jit_free(&cx->allocator, in, l->in_size);
    if (out) jit_free(&cx->allocator, out, l->out_size);
    return s;
}

/* Lowers f for the leaves `args` of the caller's struct `in`. */
static kiln_status lower(kiln_ctx *cx, kiln_jit *f, const void *in, kiln_tensor *const *args,
                         kiln_tree_static *out_statics, kiln_module **out_module) {
    const kiln__jit_layout *l = &f->layout;
    kiln_arg_spec *specs = jit_alloc(cx, &cx->allocator, (size_t)l->n_in * sizeof *specs, f->name);
    if (!specs) return KILN_RESOURCE_EXHAUSTED;
    int32_t n_traced = 0;
    for (int32_t i = 0; i < l->n_in; i++)
        if (!l->in_leaves[i].is_static)
            specs[n_traced++] = (kiln_arg_spec){.dtype = kiln_tensor_dtype(args[i]),
                                                .shape = *kiln_tensor_shape(args[i]),
                                                .name = l->in_leaves[i].path,
                                                .donate = f->donate[i]};
    kiln_lower_options lo = kiln_lower_options_default();
    lo.name = f->name;
    lo.donate_all = f->donate_all;
    const char **result_names =
        jit_alloc(cx, &cx->allocator, (size_t)(l->n_out ? l->n_out : 1) * sizeof(char *), f->name);
    if (!result_names) {
        jit_free(&cx->allocator, specs, (size_t)l->n_in * sizeof *specs);
        return KILN_RESOURCE_EXHAUSTED;
    }
    for (int32_t j = 0; j < l->n_out; j++)
        result_names[j] = l->out_leaves[j].path;
    lo.result_names = result_names;
    trace_call tc = {.f = f, .in = in, .out_statics = out_statics};
    kiln_region region = {trace_adapter, &tc};
    kiln_status s = kiln_lower(cx, &region, specs, n_traced, l->n_out, &lo, out_module);
    jit_free(&cx->allocator, result_names, (size_t)(l->n_out ? l->n_out : 1) * sizeof(char *));
    jit_free(&cx->allocator, specs, (size_t)l->n_in * sizeof *specs);
    return s;
}

/* ---- calls -------------------------------------------------------------------------------- */

/* Per-call scratch: the leaves and results, on the stack when few. */
typedef struct call_buffers {
    kiln_tensor *small[32];
    kiln_tensor **args, **results;
    size_t bytes;
} call_buffers;

static kiln_status buffers_init(kiln_ctx *cx, const kiln_jit *f, call_buffers *b) {
    size_t n = (size_t)f->layout.n_in + (size_t)f->layout.n_out;
    b->bytes = 0;
    b->args = b->small;
    if (n > sizeof b->small / sizeof b->small[0]) {
        b->bytes = n * sizeof(kiln_tensor *);
        b->args = jit_alloc(cx, &cx->allocator, b->bytes, f->name);
        if (!b->args) return KILN_RESOURCE_EXHAUSTED;
    }
    b->results = b->args + f->layout.n_in;
    return KILN_OK;
}

static void buffers_free(kiln_ctx *cx, call_buffers *b) {
    if (b->bytes) jit_free(&cx->allocator, b->args, b->bytes);
}

/* Reads the leaves of `in`, rejecting NULL, traced and dead ones (before a miss compiles
 * anything). */
static kiln_status gather(kiln_ctx *cx, const kiln_jit *f, const void *in, kiln_tensor **args) {
    const kiln__jit_layout *l = &f->layout;
    for (int32_t i = 0; i < l->n_in; i++) {
        memcpy(&args[i], (const unsigned char *)in + l->in_leaves[i].offset, sizeof(kiln_tensor *));
        if (args[i] && !kiln_tensor_is_traced(args[i]) && !kiln__tensor_dead(args[i])) continue;
        char who[KILN_TREE_PATH_MAX + 32];
        kiln__jit_arg_name(l, i, who, sizeof who);
        if (!args[i])
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: %s is NULL", f->name, who);
        if (kiln__tensor_dead(args[i]))
            return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION, "%s: %s is dead: %s", f->name,
                                      who, kiln__tensor_dead(args[i]));
        return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                                  "%s: %s is a traced tensor (inside a traced function, call "
                                  "the function itself rather than its jit)",
                                  f->name, who);
    }
    return KILN_OK;
}

/* Checks a call's arguments (`out` only when with_out). */
static kiln_status check_call(kiln_ctx *cx, const char *api, kiln_jit *f, const void *in,
                              bool with_out, const void *out) {
    if (!f) return kiln__null_argument(cx, api, "f");
    if (!in && f->layout.in_size > 0) return kiln__null_argument(cx, api, "in");
    if (with_out && !out && f->layout.out_size > 0) return kiln__null_argument(cx, api, "out");
    if (kiln__tracing(cx))
        return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                                  "%s: %s called while tracing (call the function itself inside "
                                  "a traced function)",
                                  f->name, api);
    return KILN_OK;
}

static kiln_device target_device(kiln_ctx *cx, const kiln_jit *f) {
    if (f->has_compile && f->compile.device.type != 0) return f->compile.device;
    return kiln_ctx_device(cx);
}

/* Bytes of the module's constants (retained by the executable). */
static size_t constant_bytes(const kiln_module *m) {
    size_t n = 0;
    for (int32_t i = 0; i < m->n_constants; i++)
        n += kiln_tensor_nbytes(m->constants[i]);
    return n;
}

static jit_entry *find(kiln_jit *f, const kiln__jit_key *key) {
    for (jit_entry *e = f->head; e; e = e->next)
        if (kiln__jit_key_equal(&e->key, key)) return e;
    return NULL;
}

/* Evicts least recently used entries beyond the bounds, sparing `keep`. Returns how many
 * went and which bound made them go. Lock held. */
static int32_t evict(kiln_jit *f, const jit_entry *keep, const char **why) {
    int32_t n = 0;
    for (;;) {
        bool over_count = f->max_entries > 0 && f->stats.entries > f->max_entries;
        bool over_bytes = f->max_bytes > 0 && f->stats.bytes > f->max_bytes;
        jit_entry *victim = f->tail;
        if (!(over_count || over_bytes) || !victim || victim == keep) break;
        *why = over_count ? "max_entries" : "max_bytes";
        record_gone(f, victim->key.hash, over_count ? GONE_MAX_ENTRIES : GONE_MAX_BYTES);
        unlink_entry(f, victim);
        free_entry(f, victim); /* last_exe and running calls hold their own references */
        f->stats.evictions++;
        n++;
    }
    return n;
}

/* Records a successful lookup: the signature and executable of this call. Lock held. */
static void remember(kiln_jit *f, const kiln__jit_key *key, kiln_exe *exe) {
    kiln__jit_key_assign(&f->allocator, &f->last_key, key);
    if (f->last_exe != exe) {
        kiln_exe_release(f->last_exe);
        f->last_exe = exe ? kiln_exe_retain(exe) : NULL;
    }
}

static void write_out_statics(const kiln_jit *f, const kiln_tree_static *values, void *out) {
    const kiln__jit_layout *l = &f->layout;
    for (int32_t i = 0; i < l->n_out_statics; i++)
        kiln__tree_static_write(&values[i], l->out_statics[i].size,
                                (unsigned char *)out + l->out_statics[i].offset);
}

/* A miss: trace, compile and cache. On success *out_exe is a new reference. Lock not held
 * on entry or exit. */
static kiln_status miss(kiln_ctx *cx, kiln_jit *f, const void *in, kiln_tensor *const *args,
                        kiln__jit_key *key, const char *reason, void *out, kiln_exe **out_exe) {
    const kiln__jit_layout *l = &f->layout;
    jit_entry *e = jit_alloc(cx, &f->allocator, sizeof *e, f->name);
    if (!e) return KILN_RESOURCE_EXHAUSTED;
    kiln_status s = KILN_OK;
    if (l->n_out_statics > 0) {
        e->out_statics = jit_alloc(cx, &f->allocator,
                                   (size_t)l->n_out_statics * sizeof *e->out_statics, f->name);
        if (!e->out_statics) s = KILN_RESOURCE_EXHAUSTED;
    }
    int64_t t0 = kiln__now_ns();
    kiln_module *m = NULL;
    if (s == KILN_OK) s = lower(cx, f, in, args, e->out_statics, &m);
    if (s == KILN_OK) s = kiln_compile(cx, m, f->has_compile ? &f->compile : NULL, &e->exe);
    int64_t dt = kiln__now_ns() - t0;
    if (s == KILN_OK) {
        kiln_exe_info info;
        size_t arena = 0;
        if (kiln_exe_info_get(cx, e->exe, &info) == KILN_OK) arena = info.arena_bytes;
        e->bytes = arena + constant_bytes(m);
    }
    kiln_module_release(m);
    if (s == KILN_OK) {
        e->key = *key; /* the entry takes the key's words */
        *key = (kiln__jit_key){0};
    }

    char line[JIT_REASON_MAX + 160] = "";
    const char *why = NULL;
    int32_t evicted = 0;
    pthread_mutex_lock(&f->mutex);
    f->pending--;
    jit_entry *use = e;
    if (s == KILN_OK) {
        f->stats.compiles++;
        f->stats.compile_ns += dt;
        jit_entry *twin = find(f, &e->key);
        if (twin) {
            /* Another thread cached the same signature meanwhile: use theirs. */
            unlink_entry(f, twin);
            push_front(f, twin);
            use = twin;
        } else {
            push_front(f, e);
            evicted = evict(f, e, &why);
        }
        remember(f, &use->key, use->exe);
        *out_exe = kiln_exe_retain(use->exe);
        if (l->n_out_statics > 0) write_out_statics(f, use->out_statics, out);
        snprintf(line, sizeof line, "%s: %s; compiled specialization %lld in %.3f ms (backend %s)",
                 f->name, reason, (long long)f->stats.compiles, (double)dt / 1e6,
                 use->exe->backend->name);
    }
    pthread_mutex_unlock(&f->mutex);
    if (s != KILN_OK || use != e) free_entry(f, e);
    if (s == KILN_OK) {
        kiln_ctx_log(cx, KILN_LOG_INFO, "%s", line);
        if (evicted > 0)
            kiln_ctx_log(cx, KILN_LOG_DEBUG, "%s: evicted %d least recently used entr%s (%s)",
                         f->name, (int)evicted, evicted == 1 ? "y" : "ies", why);
    }
    return s;
}

/* Why `key` missed: compiled before and since evicted or cleared (said so), else its
 * differences from the closest cached signature (the fewest), else from the last call's
 * (the cache is empty), else the first call. Lock held. */
static void explain_miss(kiln_jit *f, const kiln__jit_key *key, char *reason, size_t size) {
    const jit_gone *g = find_gone(f, key->hash);
    if (g) {
        if (g->why == GONE_CLEARED)
            snprintf(reason, size, "compiled before, and kiln_jit_clear emptied the cache since");
        else if (g->why == GONE_MAX_ENTRIES)
            snprintf(reason, size,
                     "compiled before, and evicted since (the cache holds at most %d entries: "
                     "max_entries)",
                     (int)f->max_entries);
        else
            snprintf(reason, size,
                     "compiled before, and evicted since (the cache holds at most %zu bytes: "
                     "max_bytes)",
                     f->max_bytes);
        return;
    }
    const jit_entry *closest = NULL;
    int best = 0;
    char scratch[JIT_REASON_MAX];
    for (const jit_entry *e = f->head; e; e = e->next) {
        int n = kiln__jit_key_explain(&f->layout, &e->key, key, scratch, sizeof scratch);
        if (!closest || n < best) {
            closest = e;
            best = n;
        }
    }
    const kiln__jit_key *before = closest ? &closest->key : f->last_key.words ? &f->last_key : NULL;
    kiln__jit_key_explain(&f->layout, before, key, reason, size);
}

/* Finds or makes the executable for the signature of `in`; writes the result's statics. */
static kiln_status lookup(kiln_ctx *cx, kiln_jit *f, const void *in, kiln_tensor *const *args,
                          void *out, kiln_exe **out_exe) {
    kiln__jit_key key = {0};
    kiln_status s =
        kiln__jit_key_build(cx, &f->allocator, &f->layout, target_device(cx, f), in, args, &key);
    if (s != KILN_OK) return s;
    char reason[JIT_REASON_MAX];
    pthread_mutex_lock(&f->mutex);
    jit_entry *e = find(f, &key);
    if (e) {
        f->stats.hits++;
        if (e != f->head) {
            unlink_entry(f, e);
            push_front(f, e);
        }
        remember(f, &key, e->exe);
        *out_exe = kiln_exe_retain(e->exe);
        if (f->layout.n_out_statics > 0) write_out_statics(f, e->out_statics, out);
        pthread_mutex_unlock(&f->mutex);
        kiln__jit_key_free(&f->allocator, &key);
        return KILN_OK;
    }
    f->stats.misses++;
    explain_miss(f, &key, reason, sizeof reason);
    if (f->max_specializations > 0 && f->stats.compiles + f->pending >= f->max_specializations) {
        pthread_mutex_unlock(&f->mutex);
        kiln__jit_key_free(&f->allocator, &key);
        return kiln_ctx_set_error(cx, KILN_FAILED_PRECONDITION,
                                  "%s: a new specialization would exceed max_specializations "
                                  "(%d); the cache missed because %s",
                                  f->name, (int)f->max_specializations, reason);
    }
    f->pending++;
    pthread_mutex_unlock(&f->mutex);
    s = miss(cx, f, in, args, &key, reason, out, out_exe);
    kiln__jit_key_free(&f->allocator, &key);
    return s;
}

static kiln_status call(kiln_ctx *cx, const char *api, kiln_jit *f, const void *in, void *out) {
    kiln_status s = check_call(cx, api, f, in, true, out);
    if (s != KILN_OK) return s;
    const kiln__jit_layout *l = &f->layout;
    call_buffers b;
    s = buffers_init(cx, f, &b);
    if (s != KILN_OK) return s;
    /* The leaves are read before the results are cleared: out may be in. */
    s = gather(cx, f, in, b.args);
    kiln_tensor *none = NULL;
    for (int32_t r = 0; r < l->n_out; r++)
        memcpy((unsigned char *)out + l->out_leaves[r].offset, &none, sizeof none);
    kiln_exe *exe = NULL;
    if (s == KILN_OK) s = lookup(cx, f, in, b.args, out, &exe);
    if (s == KILN_OK && l->n_static_leaves) {
        /* The program's arguments: the leaves that are not static, in order (in place:
         * the static ones are the caller's and were only keyed on). */
        for (int32_t i = 0, k = 0; i < l->n_in; i++)
            if (!l->in_leaves[i].is_static) b.args[k++] = b.args[i];
    }
    if (s == KILN_OK) s = kiln_exe_call(cx, exe, b.args, b.results);
    if (s == KILN_OK)
        for (int32_t r = 0; r < l->n_out; r++)
            memcpy((unsigned char *)out + l->out_leaves[r].offset, &b.results[r],
                   sizeof(kiln_tensor *));
    kiln_exe_release(exe);
    buffers_free(cx, &b);
    return s;
}

kiln_status kiln_jit_call(kiln_ctx *cx, kiln_jit *f, const void *in, void *out) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    return call(cx, "kiln_jit_call", f, in, out);
}

kiln_status kiln_jit_call_list(kiln_ctx *cx, kiln_jit *f, kiln_tensor *const *args,
                               kiln_tensor **out_results) {
    static const char api[] = "kiln_jit_call_list";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (f && f->tree)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: %s takes structs (made by kiln_jit_create_tree): use "
                                  "kiln_jit_call",
                                  api, f->name);
    return call(cx, api, f, args, out_results);
}

kiln_status kiln_jit_lower(kiln_ctx *cx, kiln_jit *f, const void *in, kiln_module **out_module) {
    static const char api[] = "kiln_jit_lower";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_module) return kiln__null_argument(cx, api, "out_module");
    *out_module = NULL;
    kiln_status s = check_call(cx, api, f, in, false, NULL);
    if (s != KILN_OK) return s;
    call_buffers b;
    s = buffers_init(cx, f, &b);
    if (s != KILN_OK) return s;
    kiln_tree_static *statics = NULL;
    size_t statics_bytes = (size_t)f->layout.n_out_statics * sizeof *statics;
    s = gather(cx, f, in, b.args);
    if (s == KILN_OK && statics_bytes) {
        statics = jit_alloc(cx, &cx->allocator, statics_bytes, api);
        if (!statics) s = KILN_RESOURCE_EXHAUSTED;
    }
    if (s == KILN_OK) s = lower(cx, f, in, b.args, statics, out_module);
    if (statics) jit_free(&cx->allocator, statics, statics_bytes);
    buffers_free(cx, &b);
    return s;
}

kiln_exe *kiln_jit_last_exe(kiln_jit *f) {
    if (!f) return NULL;
    pthread_mutex_lock(&f->mutex);
    kiln_exe *exe = f->last_exe ? kiln_exe_retain(f->last_exe) : NULL;
    pthread_mutex_unlock(&f->mutex);
    return exe;
}

kiln_status kiln_jit_stats_get(kiln_ctx *cx, kiln_jit *f, kiln_jit_stats *out_stats) {
    static const char api[] = "kiln_jit_stats_get";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!f) return kiln__null_argument(cx, api, "f");
    if (!out_stats) return kiln__null_argument(cx, api, "out_stats");
    pthread_mutex_lock(&f->mutex);
    *out_stats = f->stats;
    pthread_mutex_unlock(&f->mutex);
    return KILN_OK;
}

void kiln_jit_clear(kiln_jit *f) {
    if (!f) return;
    pthread_mutex_lock(&f->mutex);
    clear_entries(f, true);
    pthread_mutex_unlock(&f->mutex);
}
