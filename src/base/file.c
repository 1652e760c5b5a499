/* SPDX-License-Identifier: Apache-2.0 */
/* Shared file handling of the readers and writers of files (file.h). */
#define _POSIX_C_SOURCE 200809L
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"

kiln_status kiln__file_error(kiln_ctx *cx, const char *path, const char *what, int err) {
    kiln_status s = err == ENOENT                                     ? KILN_NOT_FOUND
                    : (err == EACCES || err == EPERM || err == EROFS) ? KILN_PERMISSION_DENIED
                                                                      : KILN_UNAVAILABLE;
    return kiln_ctx_set_error(cx, s, "%s: cannot %s: %s", path, what, strerror(err));
}

kiln_status kiln__file_open_read(kiln_ctx *cx, const char *path, FILE **out_f, size_t *out_size) {
    *out_f = NULL;
    /* O_NONBLOCK so that opening a FIFO does not wait for a writer; it is refused below, and
     * for a regular file the flag changes nothing. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return kiln__file_error(cx, path, "open for reading", errno);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        kiln_status e = kiln__file_error(cx, path, "open for reading", errno);
        close(fd);
        return e;
    }
    struct stat sb;
    kiln_status s = KILN_OK;
    if (fstat(fileno(f), &sb) != 0)
        s = kiln__file_error(cx, path, "stat", errno);
    else if (!S_ISREG(sb.st_mode))
        s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: not a regular file", path);
    else if ((uintmax_t)sb.st_size > SIZE_MAX)
        s = kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: file too large", path);
    if (s != KILN_OK) {
        fclose(f);
        return s;
    }
    *out_f = f;
    *out_size = (size_t)sb.st_size;
    return KILN_OK;
}

kiln_status kiln__file_read_exact(kiln_ctx *cx, const char *path, FILE *f, void *dst, size_t n,
                                  const char *what, const char *why) {
    if (n == 0) return KILN_OK;
    size_t got = fread(dst, 1, n, f);
    if (got == n) return KILN_OK;
    if (ferror(f)) return kiln__file_error(cx, path, "read", errno ? errno : EIO);
    return kiln_ctx_set_error(cx, KILN_DATA_LOSS, "%s: truncated %s: %zu of %zu bytes%s", path,
                              what, got, n, why);
}

kiln_status kiln__file_save_atomic(kiln_ctx *cx, const char *fn, const char *path,
                                   bool (*write)(void *user, FILE *f), void *user) {
    /* A unique name beside the target: the rename stays on one file system. */
    static atomic_uint counter;
    size_t tmp_size = strlen(path) + 48;
    char *tmp = kiln__alloc(cx, tmp_size, 1, fn);
    if (!tmp) return KILN_RESOURCE_EXHAUSTED;
    int fd = -1;
    for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
        snprintf(tmp, tmp_size, "%s.tmp%ld.%u", path, (long)getpid(),
                 atomic_fetch_add(&counter, 1u));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        kiln_status s = kiln__file_error(cx, path, "create a file beside", errno);
        kiln__free(cx, tmp, tmp_size);
        return s;
    }
    kiln_status s = KILN_OK;
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        s = kiln__file_error(cx, path, "open for writing", errno);
        close(fd);
    } else {
        errno = 0;
        if (!write(user, f)) s = kiln__file_error(cx, path, "write", errno ? errno : EIO);
        if (fclose(f) != 0 && s == KILN_OK) s = kiln__file_error(cx, path, "write", errno);
    }
    if (s == KILN_OK && rename(tmp, path) != 0) s = kiln__file_error(cx, path, "replace", errno);
    if (s != KILN_OK) unlink(tmp);
    kiln__free(cx, tmp, tmp_size);
    return s;
}
