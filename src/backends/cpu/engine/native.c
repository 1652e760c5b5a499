/* SPDX-License-Identifier: Apache-2.0 */
/* The native tier (native.h): jobs, the compile thread, the cache, loading. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/cpu/lib/vec_prims.h"
#include "backends/cpu/engine/native.h"
#include "base/ctx_internal.h"
#include "base/disk_cache.h"
#include "base/threads.h"
#include "codegen/kernel_source.h"
#include "ops/op_cost.h"

typedef kiln__native_args native_args;
typedef kiln__native_fn native_fn;

#define MAX_PRIMS 16 /* calls of vector math per kernel */

struct kiln__native {
    atomic_int refs;
    _Atomic(native_fn) fn;
    atomic_int failed;            /* the compiler or the loader failed: it stays tiled */
    kiln__kernel *kernel;         /* a copy of the description (no module pointers); until built */
    bool *call;                   /* which instructions are calls (qualifies()); until built */
    char *cache_dir;              /* the ctx's choice, NULL for the environment's; until built */
    kiln__vec_prim_fn prims[MAX_PRIMS]; /* what kiln_native_prims[] holds, once loaded */
    int32_t n_prims;
    struct kiln__native *next_job;
};

/* ---- the compiler, the caches, the queue ------------------------------------------------ */

#define MAX_CACHES 8 /* directories with a cache open; more share the environment's */

static struct {
    char cc[256];
    char cc_id[128];  /* the compiler's --version first line: part of the keys */
    char cpu_id[512]; /* the CPU's model and features: -march=native code is the CPU's */
    char why[256];    /* why nothing compiles, when so */
    bool have_cc;
    struct {
        char *dir; /* NULL: the environment's */
        kiln__disk_cache *cache;
    } caches[MAX_CACHES];
    int n_caches;
    kiln_ctx *cache_cx; /* the caches' ctx, for their log */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    kiln__native *queue, *tail; /* jobs for the compile thread, oldest first */
    bool thread_started;
    atomic_bool no_cc; /* probed, and there is no compiler */
    atomic_llong requested, compiled, from_cache, failed, ready, runs;
} tier = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static const char FLAGS[] = "-std=c11 -O3 -march=native -ffp-contract=off -fno-math-errno "
                            "-fno-tree-loop-distribute-patterns "
                            "-mprefer-vector-width=512 -fPIC -shared -w";

/* The mode a ctx asks for: its option, else KILN_NATIVE, else background. */
static kiln_native_mode mode_of(const kiln_ctx *cx) {
    if (cx && cx->native != KILN_NATIVE_DEFAULT) return cx->native;
    const char *p = getenv("KILN_NATIVE");
    if (!p || !*p || !strcmp(p, "background")) return KILN_NATIVE_BACKGROUND;
    return !strcmp(p, "off")    ? KILN_NATIVE_OFF
           : !strcmp(p, "wait") ? KILN_NATIVE_WAIT
                                : KILN_NATIVE_BACKGROUND;
}

/* "model name" and "flags" of /proc/cpuinfo's first processor (what -march=native reads). */
static void read_cpu_id(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    size_t used = 0;
    while (f && fgets(line, sizeof line, f) && line[0] != '\n') {
        if (strncmp(line, "model name", 10) && strncmp(line, "flags", 5)) continue;
        int w = snprintf(tier.cpu_id + used, sizeof tier.cpu_id - used, "%s", line);
        used = w > 0 && (size_t)w < sizeof tier.cpu_id - used ? used + (size_t)w
                                                              : sizeof tier.cpu_id - 1;
    }
    if (f) fclose(f);
    if (!tier.cpu_id[0]) snprintf(tier.cpu_id, sizeof tier.cpu_id, "unknown cpu");
}

/* Finds the compiler, once, on the thread that first compiles (never inside a call of
 * kiln_compile in the background mode). */
static void probe(void) {
    const char *cc = getenv("KILN_CC");
    snprintf(tier.cc, sizeof tier.cc, "%s", cc && *cc ? cc : "cc");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "'%s' --version 2>/dev/null", tier.cc);
    FILE *f = popen(cmd, "r");
    if (!f || !fgets(tier.cc_id, sizeof tier.cc_id, f)) tier.cc_id[0] = 0;
    int rc = f ? pclose(f) : -1;
    tier.have_cc = rc == 0 && tier.cc_id[0];
    atomic_store(&tier.no_cc, !tier.have_cc);
    if (!tier.have_cc)
        snprintf(tier.why, sizeof tier.why, "no C compiler (%.200s --version failed)", tier.cc);
    read_cpu_id();
    if (kiln_ctx_create(NULL, &tier.cache_cx) != KILN_OK) tier.cache_cx = NULL;
}

/* The cache of `dir` (NULL: the environment's), opened on first use. Called with tier.mu
 * held. NULL when none could be made. */
static kiln__disk_cache *cache_for(const char *dir) {
    for (int i = 0; i < tier.n_caches; i++) {
        const char *d = tier.caches[i].dir;
        if ((!d && !dir) || (d && dir && !strcmp(d, dir))) return tier.caches[i].cache;
    }
    if (tier.n_caches == MAX_CACHES || !tier.cache_cx) return dir ? cache_for(NULL) : NULL;
    char *copy = dir ? strdup(dir) : NULL;
    kiln__disk_cache *c = NULL;
    if ((dir && !copy) || kiln__disk_cache_open(tier.cache_cx, dir, 0, &c) != KILN_OK) {
        free(copy);
        return NULL;
    }
    tier.caches[tier.n_caches].dir = copy;
    tier.caches[tier.n_caches++].cache = c;
    return c;
}

kiln_native_mode kiln__native_mode(const kiln_ctx *cx) { return mode_of(cx); }

bool kiln__native_compiler(const char **why) {
    pthread_once(&probe_once, probe);
    if (why) *why = tier.have_cc ? "" : tier.why;
    return tier.have_cc;
}

kiln__native_stats kiln__native_stats_get(void) {
    return (kiln__native_stats){atomic_load(&tier.requested),  atomic_load(&tier.compiled),
                                atomic_load(&tier.from_cache), atomic_load(&tier.failed),
                                atomic_load(&tier.ready),      atomic_load(&tier.runs)};
}

int kiln__native_state(const kiln__native *n) {
    kiln__native *m = (kiln__native *)n;
    return atomic_load(&m->fn) ? 1 : atomic_load(&m->failed) ? -1 : 0;
}

/* ---- which kernels ---------------------------------------------------------------------- */

/* Whether kernel k can be native, and how: instructions with the same bits in C inline;
 * the tiled engine's vector math (a unary f32/f64 transcendental with a primitive) called
 * on tiles, call[j] set and its function in prims[]. Anything else (a reduction, a
 * transcendental of f16/bf16, a float power or atan2) keeps the kernel on the tiled
 * engine, and so does a kernel of calls alone (nothing to fuse around them). */
static bool qualifies(const kiln__kernel *k, bool *call, kiln__vec_prim_fn *prims, int32_t *n_prims) {
    bool reduces = k->reduce != KILN__KREDUCE_NONE;
    if ((!reduces && k->n_outputs == 0) || k->n_instrs == 0 || k->n_instrs > 4096) return false;
    if (reduces) { /* its values of the reduced register, folded by the tiled engine */
        int32_t r = k->reduce_reg;
        kiln_dtype rd = r < k->n_inputs ? k->inputs[r].dtype : k->instrs[r - k->n_inputs].dtype;
        if (rd != k->reduce_dtype || rd == KILN_F16 || rd == KILN_BF16) return false;
    }
    *n_prims = 0;
    for (int32_t j = 0; j < k->n_instrs; j++) {
        const kiln__kinstr *in = &k->instrs[j];
        call[j] = false;
        if (!kiln__op_transcendental(in->op) ||
            (in->op == KILN_OP_POWER && !kiln_dtype_is_float(in->dtype)))
            continue; /* exact: C gives the same bits */
        int32_t a = in->args[0];
        kiln_dtype ad = a < k->n_inputs ? k->inputs[a].dtype : k->instrs[a - k->n_inputs].dtype;
        kiln__vec_prim_fn p =
            (in->dtype == KILN_F32 || in->dtype == KILN_F64) && in->n_args == 1 && ad == in->dtype
                ? kiln__vec_prim(in->op, in->dtype, 0)
                : NULL;
        if (!p || *n_prims == MAX_PRIMS) return false;
        call[j] = true;
        prims[(*n_prims)++] = p;
    }
    /* only calls: the tiled engine runs exactly that already (and measured faster) */
    return *n_prims < k->n_instrs;
}

/* ---- compiling and loading ------------------------------------------------------------- */

/* The job's part, freed once built. */
static void drop_job(kiln__native *n) {
    free(n->kernel), free(n->call), free(n->cache_dir);
    n->kernel = NULL, n->call = NULL, n->cache_dir = NULL;
}

static void release(kiln__native *n) {
    if (n && atomic_fetch_sub(&n->refs, 1) == 1) {
        drop_job(n);
        free(n);
    }
}

/* What the generator reads of k, in one block of its own: the description without the
 * module's values and ops, which the compile that made it frees. */
static kiln__kernel *detach(const kiln__kernel *k) {
    size_t head = (sizeof *k + 15) / 16 * 16;
    size_t si = (size_t)k->n_inputs * sizeof *k->inputs,
           sj = (size_t)k->n_instrs * sizeof *k->instrs;
    size_t sj16 = (sj + 15) / 16 * 16, si16 = (si + 15) / 16 * 16;
    size_t so = (size_t)k->n_outputs * sizeof *k->outputs;
    char *m = malloc(head + si16 + sj16 + so);
    if (!m) return NULL;
    kiln__kernel *d = (kiln__kernel *)(void *)m;
    *d = *k;
    d->operands = NULL, d->ops = NULL, d->n_ops = 0, d->reduce_value = NULL, d->reduce_op = NULL;
    d->inputs = si ? memcpy(m + head, k->inputs, si) : NULL;
    d->instrs = sj ? memcpy(m + head + si16, k->instrs, sj) : NULL;
    d->outputs = so ? memcpy(m + head + si16 + sj16, k->outputs, so) : NULL;
    return d;
}

/* The job's C source (prelude and kernel), or NULL. */
static char *source_of(const kiln__native *n) {
    kiln_ctx *cx = NULL;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return NULL;
    kiln__strbuf sb;
    kiln__strbuf_init(&sb, cx);
    kiln__strbuf_puts(&sb, kiln__kernel_prelude());
    kiln__strbuf_puts(&sb, "\n");
    bool host_form = n->n_prims || n->kernel->reduce != KILN__KREDUCE_NONE;
    kiln_status s = host_form
                        ? kiln__kernel_source_tiled(cx, n->kernel, "kiln_native", n->call, &sb)
                        : kiln__kernel_source(cx, n->kernel, "kiln_native", &sb);
    char *text = kiln__strbuf_take(&sb), *copy = NULL;
    if (s == KILN_OK && text) copy = strdup(text);
    if (text) kiln__strbuf_free_string(cx, text);
    kiln_ctx_release(cx);
    return copy;
}

void kiln__native_release(kiln__native *n) { release(n); }

/* Loads a shared object's bytes: written to a private file in the cache's directory (or
 * the temporary one), opened, unlinked (the mapping stays); sets its kiln_native_prims. */
static native_fn load(kiln__disk_cache *cache, const void *image, size_t size,
                      const kiln__native *n) {
    const char *dir = cache && kiln__disk_cache_usable(cache, NULL)
                          ? kiln__disk_cache_dir(cache)
                          : (getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    char path[1200];
    snprintf(path, sizeof path, "%.1100s/.load-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    bool ok = write(fd, image, size) == (ssize_t)size;
    close(fd);
    void *lib = ok ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    unlink(path);
    if (!lib) return NULL;
    if (n->n_prims) {
        void **slots = dlsym(lib, "kiln_native_prims");
        if (!slots) return NULL;
        for (int32_t i = 0; i < n->n_prims; i++)
            slots[i] = (void *)(uintptr_t)n->prims[i];
    }
    return (native_fn)(uintptr_t)dlsym(lib, "kiln_native");
}

static void *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    void *data = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)n)) &&
        fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *size = data ? (size_t)n : 0;
    return data;
}

/* ---- running the compiler ------------------------------------------------------------- */

/* The builds in progress: their directories from the moment they are made, and their
 * compilers' process groups while they run. A process that exits during a build stops the
 * compiler and removes the directory (atexit), instead of leaving both behind; everything
 * a build creates is created under the lock after checking that the process is not
 * exiting, so nothing appears after that. */
extern char **environ;
#define MAX_BUILDS 8
static struct {
    pthread_mutex_t mu;
    struct {
        bool used;
        pid_t pid; /* > 0 while the compiler runs */
        char dir[600];
    } run[MAX_BUILDS];
    bool exiting;
} builds = {.mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t builds_once = PTHREAD_ONCE_INIT;

/* Removes a build directory and what is in it (the source, the object, the compiler's
 * temporary files: it runs with TMPDIR there). */
static void remove_build(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[900];
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%.250s", dir, e->d_name);
        unlink(path);
    }
    if (d) closedir(d);
    rmdir(dir);
}

static void stop_builds(void) {
    pthread_mutex_lock(&builds.mu);
    builds.exiting = true;
    for (int i = 0; i < MAX_BUILDS; i++) {
        if (!builds.run[i].used) continue;
        if (builds.run[i].pid > 0) {
            kill(-builds.run[i].pid, SIGTERM); /* gcc removes its temporary files on SIGTERM */
            waitpid(builds.run[i].pid, NULL, 0);
        }
        remove_build(builds.run[i].dir);
        builds.run[i].used = false, builds.run[i].pid = 0;
    }
    pthread_mutex_unlock(&builds.mu);
}

/* A child of fork runs none of its parent's builds. */
static void forget_builds(void) {
    pthread_mutex_init(&builds.mu, NULL);
    for (int i = 0; i < MAX_BUILDS; i++)
        builds.run[i].used = false, builds.run[i].pid = 0;
}

static void hook_builds(void) {
    atexit(stop_builds);
    pthread_atfork(NULL, NULL, forget_builds);
}

/* Compiles source with `cc FLAGS -o k.so k.c -lm` in a build directory of its own (in
 * TMPDIR), the compiler in a process group of its own with its output discarded; the
 * shared object's bytes (free()), or NULL. */
static void *compile_source(const char *source, size_t *size) {
    pthread_once(&builds_once, hook_builds);
    const char *tmp = getenv("TMPDIR");
    char dir[600], src[700], so[700];
    snprintf(dir, sizeof dir, "%.500s/kiln-native-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    /* the directory and the source, registered as they are made */
    pthread_mutex_lock(&builds.mu);
    int slot = -1;
    for (int i = 0; i < MAX_BUILDS && slot < 0; i++)
        if (!builds.run[i].used) slot = i;
    bool ok = !builds.exiting && slot >= 0 && mkdtemp(dir), registered = ok;
    if (ok) {
        builds.run[slot].used = true, builds.run[slot].pid = 0;
        snprintf(builds.run[slot].dir, sizeof builds.run[slot].dir, "%s", dir);
        snprintf(src, sizeof src, "%s/k.c", dir);
        snprintf(so, sizeof so, "%s/k.so", dir);
        FILE *f = fopen(src, "w");
        ok = f && fputs(source, f) >= 0;
        if (f && fclose(f) != 0) ok = false;
    }
    pthread_mutex_unlock(&builds.mu);
    if (!registered) return NULL; /* no slot free, or exiting */
    char flags[sizeof FLAGS];
    memcpy(flags, FLAGS, sizeof FLAGS);
    char *argv[32];
    int argc = 0;
    argv[argc++] = tier.cc;
    for (char *save = NULL, *t = strtok_r(flags, " ", &save); t && argc < 26;
         t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    argv[argc++] = "-o", argv[argc++] = so, argv[argc++] = src;
    argv[argc++] = "-lm", argv[argc] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    /* the environment, with TMPDIR in the build directory: the compiler's temporary files
     * go there too, and are removed with it */
    size_t n_env = 0;
    while (environ[n_env])
        n_env++;
    char **envp = calloc(n_env + 2, sizeof *envp), tmpdir_var[620];
    size_t k = 0;
    for (size_t i = 0; envp && i < n_env; i++)
        if (strncmp(environ[i], "TMPDIR=", 7) != 0) envp[k++] = environ[i];
    snprintf(tmpdir_var, sizeof tmpdir_var, "TMPDIR=%s", dir);
    if (envp) envp[k++] = tmpdir_var;
    pid_t pid = -1;
    pthread_mutex_lock(&builds.mu);
    ok = ok && envp && !builds.exiting && posix_spawnp(&pid, tier.cc, &fa, &at, argv, envp) == 0;
    if (ok) builds.run[slot].pid = pid;
    pthread_mutex_unlock(&builds.mu);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(envp);
    int status = 0;
    pid_t w = -1;
    if (ok)
        while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
        }
    void *image =
        ok && w == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? read_all(so, size) : NULL;
    pthread_mutex_lock(&builds.mu);
    if (!builds.exiting) { /* when exiting, stop_builds has removed it */
        remove_build(dir);
        builds.run[slot].used = false, builds.run[slot].pid = 0;
    }
    bool exiting = builds.exiting;
    pthread_mutex_unlock(&builds.mu);
    if (exiting) {
        free(image);
        return NULL;
    }
    return image;
}

/* Compiles (or finds in the cache) and loads one job; the function goes live at the end. */
static void build(kiln__native *n) {
    pthread_once(&probe_once, probe);
    char *source = tier.have_cc ? source_of(n) : NULL;
    if (!source) {
        drop_job(n);
        atomic_fetch_add(&tier.failed, 1);
        atomic_store(&n->failed, 1);
        return;
    }
    char key[KILN__CACHE_KEY_HEX];
    const void *parts[4] = {source, tier.cc_id, FLAGS, tier.cpu_id};
    size_t sizes[4] = {strlen(source), strlen(tier.cc_id), strlen(FLAGS), strlen(tier.cpu_id)};
    kiln__cache_key_parts(parts, sizes, 4, key);
    pthread_mutex_lock(&tier.mu);
    kiln__disk_cache *cache = cache_for(n->cache_dir);
    pthread_mutex_unlock(&tier.mu);
    size_t size = 0;
    void *image = cache ? kiln__disk_cache_get(cache, key, &size) : NULL;
    bool cached = image != NULL;
    if (!image) {
        image = compile_source(source, &size);
        if (image && cache) kiln__disk_cache_put(cache, key, image, size);
    }
    native_fn fn = image ? load(cache, image, size, n) : NULL;
    free(image);
    free(source);
    drop_job(n);
    if (!fn) {
        atomic_fetch_add(&tier.failed, 1);
        atomic_store(&n->failed, 1);
        return;
    }
    atomic_fetch_add(cached ? &tier.from_cache : &tier.compiled, 1);
    atomic_fetch_add(&tier.ready, 1);
    atomic_store(&n->fn, fn);
}

static void *compile_thread(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&tier.mu);
        while (!tier.queue)
            pthread_cond_wait(&tier.cv, &tier.mu);
        kiln__native *n = tier.queue;
        tier.queue = n->next_job;
        pthread_mutex_unlock(&tier.mu);
        if (atomic_load(&n->refs) > 1) build(n); /* nobody else holds it: not worth it */
        release(n);
    }
    return NULL;
}

kiln__native *kiln__native_request(kiln_ctx *cx, const kiln__kernel *k) {
    kiln_native_mode mode = mode_of(cx);
    if (mode == KILN_NATIVE_OFF || kiln_ctx_status(cx) != KILN_OK) return NULL;
    /* before any build can start: an exit from now on stops it */
    pthread_once(&builds_once, hook_builds);
    if (atomic_load(&tier.no_cc)) return NULL; /* known: nothing would compile it */
    /* what the build needs, copied (a kernel that does not qualify stays tiled); the
     * source is written by whoever builds it, so compiling costs a copy */
    kiln__native *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->call = calloc((size_t)(k->n_instrs > 0 ? k->n_instrs : 1), sizeof *n->call);
    if (!n->call || !qualifies(k, n->call, n->prims, &n->n_prims) || !(n->kernel = detach(k)) ||
        (cx->cache_dir[0] && !(n->cache_dir = strdup(cx->cache_dir)))) {
        drop_job(n);
        free(n);
        return NULL;
    }
    atomic_init(&n->refs, 1);
    atomic_init(&n->fn, NULL);
    atomic_init(&n->failed, 0);
    atomic_fetch_add(&tier.requested, 1);
    if (mode == KILN_NATIVE_WAIT) {
        build(n);
        return n;
    }
    atomic_fetch_add(&n->refs, 1); /* the job's */
    pthread_mutex_lock(&tier.mu);
    if (!tier.thread_started) {
        pthread_t t;
        if (pthread_create(&t, NULL, compile_thread, NULL) == 0) {
            pthread_detach(t);
            tier.thread_started = true;
        }
    }
    if (tier.thread_started) {
        /* last in, first out would starve early kernels: append */
        if (tier.queue)
            tier.tail->next_job = n;
        else
            tier.queue = n;
        tier.tail = n;
        pthread_cond_signal(&tier.cv);
    } else {
        atomic_fetch_sub(&n->refs, 1);
    }
    pthread_mutex_unlock(&tier.mu);
    return n;
}

/* ---- running ------------------------------------------------------------------------------ */

bool kiln__native_part_begin(const kiln__native *n, const unsigned char *const *in, int32_t n_in,
                             unsigned char *const *out, int32_t n_out, void *values,
                             kiln__native_part *p) {
    native_fn fn = atomic_load(&((kiln__native *)n)->fn);
    if (!fn || n_in > 24 || n_out > 7) return false;
    memset(p, 0, sizeof *p);
    p->fn = fn;
    for (int32_t i = 0; i < n_in; i++)
        p->a.in[i] = in[i];
    for (int32_t i = 0; i < n_out; i++)
        p->a.out[i] = out[i];
    p->a.out[n_out] = values;
    atomic_fetch_add_explicit(&tier.runs, 1, memory_order_relaxed);
    return true;
}

typedef struct run {
    native_fn fn;
    const native_args *a;
} run;

#define CHUNK 16384 /* elements per item of the thread pool */

static void run_range(void *user, int64_t begin, int64_t end) {
    const run *r = user;
    native_args a = *r->a;
    a.first = begin * CHUNK;
    a.last = end * CHUNK < a.n ? end * CHUNK : a.n;
    r->fn(a);
}

bool kiln__native_run(const kiln__native *n, const unsigned char *const *in, int32_t n_in,
                      unsigned char *const *out, int32_t n_out, int64_t count) {
    native_fn fn = atomic_load(&((kiln__native *)n)->fn);
    if (!fn || n_in > 24 || n_out > 8) return false;
    native_args a = {.n = count};
    for (int32_t i = 0; i < n_in; i++)
        a.in[i] = in[i];
    for (int32_t i = 0; i < n_out; i++)
        a.out[i] = out[i];
    if (count <= 4 * CHUNK) { /* what the pool would give one thread: no dispatch */
        a.first = 0, a.last = count;
        fn(a);
    } else {
        run r = {fn, &a};
        kiln__parallel_for((count + CHUNK - 1) / CHUNK, 4, run_range, &r);
    }
    atomic_fetch_add(&tier.runs, 1);
    return true;
}
