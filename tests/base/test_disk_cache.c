/* SPDX-License-Identifier: Apache-2.0 */
/* The on-disk code cache (src/base/disk_cache.c): entries round-trip and are verified (a
 * corrupted or truncated one is a miss and is removed), keys, the size bound evicting the
 * least recently used, and the directory rules (made 0700; refused when writable by others,
 * a link, not a directory), all without ever failing hard. */
#define _DEFAULT_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/disk_cache.h"
#include "test_util.h"

static char *fresh_dir(void) {
    static char dir[256];
    snprintf(dir, sizeof dir, "%s/diskcacheXXXXXX", KILN_TEST_TMP_DIR);
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static kiln__disk_cache *open_in(kiln_ctx *cx, const char *dir, size_t max) {
    kiln__disk_cache *c = NULL;
    cr_assert_eq(kiln__disk_cache_open(cx, dir, max, &c), KILN_OK);
    cr_assert_not_null(c);
    return c;
}

Test(disk_cache, entries_round_trip_and_keys_are_stable) {
    kiln_ctx *cx = test_ctx();
    char *dir = fresh_dir();
    kiln__disk_cache *c = open_in(cx, dir, 0);
    const char *why;
    cr_assert(kiln__disk_cache_usable(c, &why), "%s", why);
    char k1[KILN__CACHE_KEY_HEX], k2[KILN__CACHE_KEY_HEX], k3[KILN__CACHE_KEY_HEX];
    kiln__cache_key("kernel source", 13, k1);
    const void *parts[2] = {"kernel", " source"};
    size_t sizes[2] = {6, 7};
    kiln__cache_key_parts(parts, sizes, 2, k2);
    kiln__cache_key("kernel sourcf", 13, k3);
    cr_assert_eq(strlen(k1), 32);
    cr_assert_str_neq(k1, k2, "the parts' lengths count");
    cr_assert_str_neq(k1, k3);
    char again[KILN__CACHE_KEY_HEX];
    kiln__cache_key("kernel source", 13, again);
    cr_assert_str_eq(k1, again);
    size_t n = 0;
    cr_assert_null(kiln__disk_cache_get(c, k1, &n), "a miss first");
    const char payload[] = "\x7f"
                           "ELF and some bytes";
    cr_assert(kiln__disk_cache_put(c, k1, payload, sizeof payload));
    void *got = kiln__disk_cache_get(c, k1, &n);
    cr_assert_not_null(got);
    cr_assert_eq(n, sizeof payload);
    cr_assert_eq(memcmp(got, payload, n), 0);
    free(got);
    /* an empty entry is an entry */
    cr_assert(kiln__disk_cache_put(c, k2, "", 0));
    got = kiln__disk_cache_get(c, k2, &n);
    cr_assert_not_null(got);
    cr_assert_eq(n, 0);
    free(got);
    cr_assert_gt(kiln__disk_cache_bytes(c), sizeof payload);
    /* keys that could name another file are refused */
    cr_assert_not(kiln__disk_cache_put(c, "../escape", payload, 4));
    cr_assert_null(kiln__disk_cache_get(c, "a/b", &n));
    cr_assert_not(kiln__disk_cache_put(c, "", payload, 4));
    kiln__disk_cache_close(c);
    kiln_ctx_release(cx);
}

Test(disk_cache, a_corrupted_or_truncated_entry_is_a_miss_and_is_removed) {
    kiln_ctx *cx = test_ctx();
    char *dir = fresh_dir();
    kiln__disk_cache *c = open_in(cx, dir, 0);
    char key[KILN__CACHE_KEY_HEX];
    kiln__cache_key("x", 1, key);
    char data[1000];
    for (int i = 0; i < 1000; i++)
        data[i] = (char)i;
    char path[512];
    snprintf(path, sizeof path, "%s/%s.kc", dir, key);
    for (int round = 0; round < 2; round++) {
        cr_assert(kiln__disk_cache_put(c, key, data, sizeof data));
        int fd = open(path, O_RDWR);
        cr_assert_geq(fd, 0);
        if (round == 0) { /* one flipped byte in the payload */
            char b;
            cr_assert_eq(pread(fd, &b, 1, 600), 1);
            b ^= 1;
            cr_assert_eq(pwrite(fd, &b, 1, 600), 1);
        } else { /* cut short */
            cr_assert_eq(ftruncate(fd, 500), 0);
        }
        close(fd);
        size_t n = 0;
        cr_assert_null(kiln__disk_cache_get(c, key, &n), "round %d", round);
        cr_assert_neq(access(path, F_OK), 0, "the bad entry is removed");
    }
    kiln__disk_cache_close(c);
    kiln_ctx_release(cx);
}

/* Sets an entry's modification time (eviction's order) to `t` seconds. */
static void age(const char *dir, const char *key, time_t t) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.kc", dir, key);
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

Test(disk_cache, the_size_bound_evicts_the_least_recently_used) {
    kiln_ctx *cx = test_ctx();
    char *dir = fresh_dir();
    /* room for three entries of 1000 bytes and their headers, not four */
    kiln__disk_cache *c = open_in(cx, dir, 3 * 1100);
    char keys[5][KILN__CACHE_KEY_HEX], data[1000] = {0};
    for (int i = 0; i < 3; i++) {
        char name[8] = {'k', (char)('0' + i)};
        kiln__cache_key(name, 2, keys[i]);
        cr_assert(kiln__disk_cache_put(c, keys[i], data, sizeof data));
        age(dir, keys[i], 1000000 + i); /* 0 oldest */
    }
    /* a read makes key 0 the most recently used */
    size_t n;
    void *got = kiln__disk_cache_get(c, keys[0], &n);
    cr_assert_not_null(got);
    free(got);
    kiln__cache_key("k3", 2, keys[3]);
    cr_assert(kiln__disk_cache_put(c, keys[3], data, sizeof data));
    cr_assert_leq(kiln__disk_cache_bytes(c), 3 * 1100);
    got = kiln__disk_cache_get(c, keys[1], &n);
    cr_assert_null(got, "the least recently used entry went");
    got = kiln__disk_cache_get(c, keys[0], &n);
    cr_assert_not_null(got, "the one read recently stayed");
    free(got);
    /* an entry bigger than the bound is not kept at all */
    char big[4000] = {0};
    kiln__cache_key("big", 3, keys[4]);
    cr_assert_not(kiln__disk_cache_put(c, keys[4], big, sizeof big));
    kiln__disk_cache_close(c);
    kiln_ctx_release(cx);
}

Test(disk_cache, directories_it_must_not_use_make_it_a_pass_through) {
    kiln_ctx *cx = test_ctx();
    kiln_ctx_set_log_level(cx, KILN_LOG_OFF);
    char *base = fresh_dir();
    char dir[512], link_path[512], file_path[512];
    const char *why;
    size_t n;
    /* missing: made, mode 0700 */
    snprintf(dir, sizeof dir, "%s/new", base);
    kiln__disk_cache *c = open_in(cx, dir, 0);
    cr_assert(kiln__disk_cache_usable(c, &why), "%s", why);
    struct stat st;
    cr_assert_eq(stat(dir, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700);
    kiln__disk_cache_close(c);
    /* writable by others */
    chmod(dir, 0777);
    c = open_in(cx, dir, 0);
    cr_assert_not(kiln__disk_cache_usable(c, &why));
    cr_assert(strstr(why, "writable by others"), "%s", why);
    cr_assert_not(kiln__disk_cache_put(c, "abcd", "x", 1));
    cr_assert_null(kiln__disk_cache_get(c, "abcd", &n));
    cr_assert_eq(kiln__disk_cache_bytes(c), 0);
    kiln__disk_cache_close(c);
    chmod(dir, 0700);
    /* a symbolic link to it */
    snprintf(link_path, sizeof link_path, "%s/link", base);
    cr_assert_eq(symlink(dir, link_path), 0);
    c = open_in(cx, link_path, 0);
    cr_assert_not(kiln__disk_cache_usable(c, &why));
    cr_assert(strstr(why, "symbolic link"), "%s", why);
    kiln__disk_cache_close(c);
    /* a file */
    snprintf(file_path, sizeof file_path, "%s/file", base);
    FILE *f = fopen(file_path, "w");
    fclose(f);
    c = open_in(cx, file_path, 0);
    cr_assert_not(kiln__disk_cache_usable(c, &why));
    cr_assert(strstr(why, "not a directory"), "%s", why);
    kiln__disk_cache_close(c);
    /* KILN_CACHE_DIR names the directory when the caller does not */
    setenv("KILN_CACHE_DIR", dir, 1);
    c = open_in(cx, NULL, 0);
    cr_assert_str_eq(kiln__disk_cache_dir(c), dir);
    cr_assert(kiln__disk_cache_usable(c, &why), "%s", why);
    kiln__disk_cache_close(c);
    unsetenv("KILN_CACHE_DIR");
    /* the directory went away under a usable cache: puts fail, nothing crashes */
    char gone[512];
    snprintf(gone, sizeof gone, "%s/gone", base);
    c = open_in(cx, gone, 0);
    cr_assert(kiln__disk_cache_usable(c, &why), "%s", why);
    cr_assert_eq(rmdir(gone), 0);
    cr_assert_not(kiln__disk_cache_put(c, "abcd", "x", 1));
    cr_assert_null(kiln__disk_cache_get(c, "abcd", &n));
    kiln__disk_cache_close(c);
    kiln_ctx_release(cx);
}
