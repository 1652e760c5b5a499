/* SPDX-License-Identifier: Apache-2.0 */
/* The on-disk cache of compiled code (disk_cache.h). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/disk_cache.h"

#define MAGIC "kiln-cache-1\n\0\0\0"
#define MAGIC_LEN 16
#define DEFAULT_MAX ((size_t)256 << 20)

/* An entry's header, before its payload. */
typedef struct header {
    char magic[MAGIC_LEN];
    uint64_t size;
    uint64_t hash;
} header;

struct kiln__disk_cache {
    kiln_ctx *cx; /* for its log (outlives the cache) */
    pthread_mutex_t mu;
    char dir[1024];
    bool usable;
    char why[1536];
    size_t max_bytes;
};

/* ---- keys and hashes -------------------------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* A 64-bit mix of the FNV state (splitmix64's finalizer), so that close inputs spread. */
static uint64_t mix(uint64_t x) {
    x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27, x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void kiln__cache_key_parts(const void *const *parts, const size_t *sizes, int n,
                           char out[KILN__CACHE_KEY_HEX]) {
    uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
    for (int i = 0; i < n; i++) {
        uint64_t len = sizes[i];
        a = fnv(fnv(a, &len, sizeof len), parts[i], sizes[i]);
        b = fnv(fnv(b, parts[i], sizes[i]), &len, sizeof len);
    }
    snprintf(out, KILN__CACHE_KEY_HEX, "%016llx%016llx", (unsigned long long)mix(a),
             (unsigned long long)mix(b ^ a));
}

void kiln__cache_key(const void *data, size_t n, char out[KILN__CACHE_KEY_HEX]) {
    kiln__cache_key_parts(&data, &n, 1, out);
}

static uint64_t payload_hash(const void *data, size_t n) {
    return mix(fnv(0x9e3779b97f4a7c15ull, data, n));
}

/* ---- the directory -------------------------------------------------------------------- */

static void pass_through(kiln__disk_cache *c, int err, const char *fmt, ...) KILN_PRINTF_LIKE(3, 4);
static void pass_through(kiln__disk_cache *c, int err, const char *fmt, ...) {
    char reason[1280];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    if (err)
        snprintf(c->why, sizeof c->why, "%s (%s)", reason, strerror(err));
    else
        snprintf(c->why, sizeof c->why, "%s", reason);
    c->usable = false;
    kiln_ctx_log(c->cx, KILN_LOG_WARN, "the code cache is off: %s", c->why);
}

/* The directory the environment names, into buf; false when none can be found. */
static bool default_dir(char *buf, size_t cap) {
    const char *env = getenv("KILN_CACHE_DIR");
    if (env && *env) return (size_t)snprintf(buf, cap, "%s", env) < cap;
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && *xdg) return (size_t)snprintf(buf, cap, "%s/kiln", xdg) < cap;
    const char *home = getenv("HOME");
    if (home && *home) return (size_t)snprintf(buf, cap, "%s/.cache/kiln", home) < cap;
    return false;
}

/* The directory, made (mode 0700, with its parent for the XDG default) if missing, then
 * checked: a directory, not a link, ours, writable by no one else. */
static void check_dir(kiln__disk_cache *c) {
    struct stat st;
    if (lstat(c->dir, &st) != 0) {
        if (errno != ENOENT) {
            pass_through(c, errno, "cannot look at %s", c->dir);
            return;
        }
        char parent[1024];
        snprintf(parent, sizeof parent, "%s", c->dir);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
            *slash = 0;
            if (mkdir(parent, 0700) != 0 && errno != EEXIST) {
                pass_through(c, errno, "cannot make %s", parent);
                return;
            }
        }
        if (mkdir(c->dir, 0700) != 0 && errno != EEXIST) {
            pass_through(c, errno, "cannot make %s", c->dir);
            return;
        }
        if (lstat(c->dir, &st) != 0) {
            pass_through(c, errno, "cannot look at %s", c->dir);
            return;
        }
    }
    if (S_ISLNK(st.st_mode)) {
        pass_through(c, 0, "%s is a symbolic link", c->dir);
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        pass_through(c, 0, "%s is not a directory", c->dir);
        return;
    }
    if (st.st_uid != geteuid()) {
        pass_through(c, 0, "%s belongs to another user", c->dir);
        return;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        pass_through(c, 0, "%s is writable by others (it must be mode 0700 or like it)", c->dir);
        return;
    }
    if (access(c->dir, R_OK | W_OK | X_OK) != 0) {
        pass_through(c, errno, "%s is not readable and writable", c->dir);
        return;
    }
    c->usable = true;
}

kiln_status kiln__disk_cache_open(kiln_ctx *cx, const char *dir, size_t max_bytes,
                                  kiln__disk_cache **out) {
    *out = NULL;
    kiln__disk_cache *c = kiln__calloc(cx, sizeof *c, _Alignof(kiln__disk_cache), "code cache");
    if (!c) return KILN_RESOURCE_EXHAUSTED;
    c->cx = cx;
    pthread_mutex_init(&c->mu, NULL);
    c->max_bytes = max_bytes ? max_bytes : DEFAULT_MAX;
    c->usable = true; /* until check_dir says otherwise */
    if (dir && *dir) {
        if ((size_t)snprintf(c->dir, sizeof c->dir, "%s", dir) >= sizeof c->dir)
            pass_through(c, 0, "the directory name is too long: %s", dir);
        else
            check_dir(c);
    } else if (!default_dir(c->dir, sizeof c->dir)) {
        pass_through(c, 0, "%s", "no directory: set KILN_CACHE_DIR (or HOME)");
    } else {
        check_dir(c);
    }
    *out = c;
    return KILN_OK;
}

void kiln__disk_cache_close(kiln__disk_cache *c) {
    if (!c) return;
    pthread_mutex_destroy(&c->mu);
    kiln__free(c->cx, c, sizeof *c);
}

bool kiln__disk_cache_usable(const kiln__disk_cache *c, const char **why) {
    if (why) *why = c->usable ? "" : c->why;
    return c->usable;
}

const char *kiln__disk_cache_dir(const kiln__disk_cache *c) { return c->dir; }

/* ---- entries ---------------------------------------------------------------------------- */

static bool key_ok(const char *key) {
    size_t n = strlen(key);
    if (n == 0 || n > 64) return false;
    for (size_t i = 0; i < n; i++)
        if (!((key[i] >= '0' && key[i] <= '9') || (key[i] >= 'a' && key[i] <= 'f'))) return false;
    return true;
}

static void entry_path(const kiln__disk_cache *c, const char *key, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s.kc", c->dir, key);
}

void *kiln__disk_cache_get(kiln__disk_cache *c, const char *key, size_t *size) {
    *size = 0;
    if (!c->usable || !key_ok(key)) return NULL;
    char path[1200];
    entry_path(c, key, path, sizeof path);
    int fd = open(path, O_RDONLY | O_NOFOLLOW);
    if (fd < 0) return NULL;
    struct stat st;
    header h;
    void *data = NULL;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
              (size_t)st.st_size >= sizeof h && read(fd, &h, sizeof h) == (ssize_t)sizeof h &&
              memcmp(h.magic, MAGIC, MAGIC_LEN) == 0 && h.size == (uint64_t)st.st_size - sizeof h;
    if (ok && (data = malloc(h.size ? h.size : 1)) != NULL) {
        size_t got = 0;
        while (got < h.size) {
            ssize_t r = read(fd, (char *)data + got, h.size - got);
            if (r <= 0) break;
            got += (size_t)r;
        }
        ok = got == h.size && payload_hash(data, h.size) == h.hash;
    }
    close(fd);
    if (!ok || !data) { /* corrupt or truncated: gone, and a miss */
        free(data);
        if (!ok) unlink(path);
        return NULL;
    }
    /* used now: eviction goes by modification time */
    utimensat(AT_FDCWD, path, NULL, 0);
    *size = h.size;
    return data;
}

/* Entries, oldest first, and their total size; evicts until the total fits. Called with
 * the lock held. */
typedef struct item {
    char name[96];
    off_t size;
    struct timespec when;
} item;

static int older(const void *a, const void *b) {
    const item *x = a, *y = b;
    if (x->when.tv_sec != y->when.tv_sec) return x->when.tv_sec < y->when.tv_sec ? -1 : 1;
    if (x->when.tv_nsec != y->when.tv_nsec) return x->when.tv_nsec < y->when.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

static uint64_t scan(kiln__disk_cache *c, bool evict) {
    DIR *d = opendir(c->dir);
    if (!d) return 0;
    item *items = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 4 || len >= sizeof items[0].name || strcmp(e->d_name + len - 3, ".kc") != 0)
            continue;
        char path[1400];
        snprintf(path, sizeof path, "%s/%.255s", c->dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        total += (uint64_t)st.st_size;
        if (!evict) continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            item *grown = realloc(items, nc * sizeof *items);
            if (!grown) break;
            items = grown, cap = nc;
        }
        memcpy(items[n].name, e->d_name, len + 1); /* len < sizeof name: checked above */
        items[n].size = st.st_size;
        items[n].when = st.st_mtim;
        n++;
    }
    closedir(d);
    if (evict && total > c->max_bytes) {
        qsort(items, n, sizeof *items, older);
        for (size_t i = 0; i < n && total > c->max_bytes; i++) {
            char path[1400];
            snprintf(path, sizeof path, "%s/%s", c->dir, items[i].name);
            if (unlink(path) == 0) total -= (uint64_t)items[i].size;
        }
    }
    free(items);
    return total;
}

bool kiln__disk_cache_put(kiln__disk_cache *c, const char *key, const void *data, size_t size) {
    if (!c->usable || !key_ok(key)) return false;
    if (size + sizeof(header) > c->max_bytes) return false; /* it would evict everything */
    pthread_mutex_lock(&c->mu);
    char tmp[1100], path[1100];
    snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", c->dir);
    entry_path(c, key, path, sizeof path);
    int fd = mkstemp(tmp);
    bool ok = fd >= 0;
    int err = ok ? 0 : errno;
    if (ok) {
        header h;
        memcpy(h.magic, MAGIC, MAGIC_LEN);
        h.size = size;
        h.hash = payload_hash(data, size);
        const char *parts[2] = {(const char *)&h, data};
        size_t sizes[2] = {sizeof h, size};
        for (int i = 0; i < 2 && ok; i++)
            for (size_t done = 0; done < sizes[i] && ok;) {
                ssize_t w = write(fd, parts[i] + done, sizes[i] - done);
                if (w <= 0)
                    ok = false, err = errno;
                else
                    done += (size_t)w;
            }
        if (close(fd) != 0 && ok) ok = false, err = errno;
        if (ok && rename(tmp, path) != 0) ok = false, err = errno;
        if (!ok) unlink(tmp);
    }
    if (!ok && (err == ENOSPC || err == EROFS || err == EDQUOT || err == EACCES))
        pass_through(c, err, "cannot write in %s", c->dir);
    if (ok) scan(c, true);
    pthread_mutex_unlock(&c->mu);
    return ok;
}

uint64_t kiln__disk_cache_bytes(kiln__disk_cache *c) {
    if (!c->usable) return 0;
    pthread_mutex_lock(&c->mu);
    uint64_t b = scan(c, false);
    pthread_mutex_unlock(&c->mu);
    return b;
}
