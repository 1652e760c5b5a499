/* The native tier (native.h): jobs, the compile thread, the cache, loading. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cpu/native.h"
#include "base/disk_cache.h"
#include "base/threads.h"
#include "codegen/kernel_source.h"
#include "ops/op_cost.h"

/* The generated kernels' argument block (codegen/prelude.cu's kiln_args). */
typedef struct native_args {
    const void *in[24];
    void *out[8];
    long long n, first, last;
} native_args;
typedef void (*native_fn)(native_args);

struct kiln__native {
    atomic_int refs;
    _Atomic(native_fn) fn;
    char *source; /* until compiled */
    char key[KILN__CACHE_KEY_HEX];
    struct kiln__native *next_job;
};

/* ---- the policy and the compiler ------------------------------------------------------- */

enum { OFF, BACKGROUND, WAIT };

static struct {
    int policy;
    char cc[256];
    char cc_id[128]; /* the compiler's --version first line: part of the keys */
    char why[256];   /* why off */
    kiln__disk_cache *cache;
    kiln_ctx *cache_cx; /* the cache's own ctx, for its log */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    kiln__native *queue; /* jobs for the compile thread */
    bool thread_started;
    atomic_llong requested, compiled, from_cache, failed, ready, runs;
} tier = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static pthread_once_t once = PTHREAD_ONCE_INIT;

static const char FLAGS[] =
    "-std=c11 -O3 -march=native -ffp-contract=off -fno-math-errno -fPIC -shared -w";

static void setup(void) {
    const char *p = getenv("KILN_NATIVE");
    tier.policy = !p || !strcmp(p, "off") || !*p ? OFF : !strcmp(p, "wait") ? WAIT : BACKGROUND;
    if (tier.policy == OFF) {
        snprintf(tier.why, sizeof tier.why, "KILN_NATIVE is not set");
        return;
    }
    const char *cc = getenv("KILN_CC");
    snprintf(tier.cc, sizeof tier.cc, "%s", cc && *cc ? cc : "cc");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "'%s' --version 2>/dev/null", tier.cc);
    FILE *f = popen(cmd, "r");
    if (!f || !fgets(tier.cc_id, sizeof tier.cc_id, f)) tier.cc_id[0] = 0;
    int rc = f ? pclose(f) : -1;
    if (rc != 0 || !tier.cc_id[0]) {
        snprintf(tier.why, sizeof tier.why, "no C compiler (%.200s --version failed)", tier.cc);
        tier.policy = OFF;
        return;
    }
    if (kiln_ctx_create(NULL, &tier.cache_cx) == KILN_OK)
        kiln__disk_cache_open(tier.cache_cx, NULL, 0, &tier.cache);
}

const char *kiln__native_policy(const char **why) {
    pthread_once(&once, setup);
    if (why) *why = tier.policy == OFF ? tier.why : "";
    return tier.policy == OFF ? "off" : tier.policy == WAIT ? "wait" : "background";
}

kiln__native_stats kiln__native_stats_get(void) {
    return (kiln__native_stats){atomic_load(&tier.requested),  atomic_load(&tier.compiled),
                                atomic_load(&tier.from_cache), atomic_load(&tier.failed),
                                atomic_load(&tier.ready),      atomic_load(&tier.runs)};
}

/* ---- which kernels ---------------------------------------------------------------------- */

/* The tiled engine's transcendentals are its own vector math: C's would give other bits.
 * Integer power is exact. */
static bool exact(const kiln__kinstr *in) {
    return !kiln__op_transcendental(in->op) ||
           (in->op == KILN_OP_POWER && !kiln_dtype_is_float(in->dtype));
}

static bool qualifies(const kiln__kernel *k) {
    if (k->reduce != KILN__KREDUCE_NONE || k->n_outputs == 0) return false;
    for (int32_t j = 0; j < k->n_instrs; j++)
        if (!exact(&k->instrs[j])) return false;
    return true;
}

/* ---- compiling and loading ------------------------------------------------------------- */

static void release(kiln__native *n) {
    if (n && atomic_fetch_sub(&n->refs, 1) == 1) {
        free(n->source);
        free(n);
    }
}

void kiln__native_release(kiln__native *n) { release(n); }

/* Loads a shared object's bytes: written to a private file in the cache's directory (or
 * the temporary one), opened, unlinked (the mapping stays). */
static native_fn load(const void *image, size_t size) {
    const char *dir = tier.cache && kiln__disk_cache_usable(tier.cache, NULL)
                          ? kiln__disk_cache_dir(tier.cache)
                          : (getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    char path[1200];
    snprintf(path, sizeof path, "%.1100s/.load-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    bool ok = write(fd, image, size) == (ssize_t)size;
    close(fd);
    void *lib = ok ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    unlink(path);
    return lib ? (native_fn)(uintptr_t)dlsym(lib, "kiln_native") : NULL;
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

/* Compiles (or finds in the cache) and loads one job; the function goes live at the end. */
static void build(kiln__native *n) {
    size_t size = 0;
    void *image = tier.cache ? kiln__disk_cache_get(tier.cache, n->key, &size) : NULL;
    bool cached = image != NULL;
    if (!image) {
        const char *tmp = getenv("TMPDIR");
        char dir[600], src[700], so[700], cmd[2000];
        snprintf(dir, sizeof dir, "%.500s/kiln-native-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(dir)) {
            snprintf(src, sizeof src, "%s/k.c", dir);
            snprintf(so, sizeof so, "%s/k.so", dir);
            FILE *f = fopen(src, "w");
            bool written = f && fputs(n->source, f) >= 0;
            if (f) fclose(f);
            snprintf(cmd, sizeof cmd, "'%s' %s -o '%s' '%s' -lm > /dev/null 2>&1", tier.cc, FLAGS,
                     so, src);
            if (written && system(cmd) == 0) image = read_all(so, &size);
            unlink(src), unlink(so), rmdir(dir);
        }
        if (image && tier.cache) kiln__disk_cache_put(tier.cache, n->key, image, size);
    }
    native_fn fn = image ? load(image, size) : NULL;
    free(image);
    free(n->source);
    n->source = NULL;
    if (!fn) {
        atomic_fetch_add(&tier.failed, 1);
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
    pthread_once(&once, setup);
    if (tier.policy == OFF || !qualifies(k) || kiln_ctx_status(cx) != KILN_OK) return NULL;
    /* the source, made with the compiling ctx (one thread); a kernel the generator does not
     * take stays on the tiled engine, its error not the caller's */
    kiln__strbuf sb;
    kiln__strbuf_init(&sb, cx);
    kiln__strbuf_puts(&sb, kiln__kernel_prelude());
    kiln__strbuf_puts(&sb, "\n");
    kiln_status s = kiln__kernel_source(cx, k, "kiln_native", &sb);
    if (s != KILN_OK) kiln_ctx_clear_error(cx);
    char *source = kiln__strbuf_take(&sb);
    if (s != KILN_OK || !source) {
        if (source) kiln__strbuf_free_string(cx, source);
        return NULL;
    }
    kiln__native *n = calloc(1, sizeof *n);
    size_t len = strlen(source);
    if (n) n->source = malloc(len + 1);
    if (!n || !n->source) {
        free(n);
        kiln__strbuf_free_string(cx, source);
        return NULL;
    }
    memcpy(n->source, source, len + 1);
    kiln__strbuf_free_string(cx, source);
    const void *parts[3] = {n->source, tier.cc_id, FLAGS};
    size_t sizes[3] = {len, strlen(tier.cc_id), strlen(FLAGS)};
    kiln__cache_key_parts(parts, sizes, 3, n->key);
    atomic_init(&n->refs, 1);
    atomic_init(&n->fn, NULL);
    atomic_fetch_add(&tier.requested, 1);
    if (tier.policy == WAIT) {
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
        kiln__native **at = &tier.queue;
        while (*at)
            at = &(*at)->next_job;
        *at = n;
        pthread_cond_signal(&tier.cv);
    } else {
        atomic_fetch_sub(&n->refs, 1);
    }
    pthread_mutex_unlock(&tier.mu);
    return n;
}

/* ---- running ------------------------------------------------------------------------------ */

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
    run r = {fn, &a};
    kiln__parallel_for((count + CHUNK - 1) / CHUNK, 4, run_range, &r);
    atomic_fetch_add(&tier.runs, 1);
    return true;
}
