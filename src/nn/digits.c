/* SPDX-License-Identifier: Apache-2.0 */
/* The digits data set from scikit-learn's gzipped CSV, read with zlib. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "nn_internal.h"

#define DIGITS_PIXELS 64

const char *kiln_nn_digits_default_path(void) {
    return "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
}

/* Reads the whole decompressed file into *out (ctx allocator). */
static bool read_gz(kiln_ctx *cx, const char *fn, const char *path, char **out, size_t *out_len,
                    size_t *out_cap) {
    *out = NULL;
    *out_len = *out_cap = 0;
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (!f) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR || e == 0)
            kiln_ctx_set_error(cx, KILN_NOT_FOUND,
                               "%s: the digits data set '%s' is missing: install Debian's "
                               "python3-sklearn (apt-get install python3-sklearn, or make deps)",
                               fn, path);
        else
            kiln_ctx_set_error(cx, e == EACCES ? KILN_PERMISSION_DENIED : KILN_UNAVAILABLE,
                               "%s: cannot open '%s': %s", fn, path, strerror(e));
        return false;
    }
    size_t cap = 1 << 18, len = 0;
    char *buf = kiln__nn_alloc(cx, fn, cap);
    while (buf) {
        if (cap - len < 65536) {
            char *bigger = kiln__nn_alloc(cx, fn, cap * 2);
            if (bigger) memcpy(bigger, buf, len);
            kiln__nn_free(cx, buf, cap);
            buf = bigger;
            cap *= 2;
            if (!buf) break;
        }
        int got = gzread(f, buf + len, (unsigned)(cap - len - 1));
        if (got < 0) {
            int zerr;
            const char *msg = gzerror(f, &zerr);
            kiln_ctx_set_error(cx, KILN_DATA_LOSS, "%s: '%s' is not a valid gzip file: %s", fn,
                               path, msg);
            kiln__nn_free(cx, buf, cap);
            buf = NULL;
            break;
        }
        if (got == 0) {
            /* A stream cut short ends like a complete one; only gzerror tells them apart. */
            int zerr;
            const char *msg = gzerror(f, &zerr);
            if (zerr != Z_OK) {
                kiln_ctx_set_error(cx, KILN_DATA_LOSS, "%s: '%s' is not a valid gzip file: %s", fn,
                                   path, msg);
                kiln__nn_free(cx, buf, cap);
                buf = NULL;
            }
            break;
        }
        len += (size_t)got;
    }
    gzclose(f);
    if (!buf) return false;
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    *out_cap = cap;
    return true;
}

/* Parses rows of 64 pixels and a label into pix (n * 64) and lab; returns the row count or
 * -1 with DATA_LOSS naming the line. pix/lab may be NULL to count only. */
static int64_t parse(kiln_ctx *cx, const char *fn, const char *path, const char *text, float *pix,
                     int32_t *lab) {
    int64_t row = 0, line = 0;
    const char *p = text;
    while (*p) {
        line++;
        const char *end = strchr(p, '\n');
        if (!end) end = p + strlen(p);
        if (end == p || (end == p + 1 && *p == '\r')) { /* blank line */
            p = *end ? end + 1 : end;
            continue;
        }
        const char *q = p;
        for (int k = 0; k <= DIGITS_PIXELS; k++) {
            char *after;
            double v = strtod(q, &after);
            double hi = k < DIGITS_PIXELS ? 16 : 9;
            if (after == q || after > end || !(v >= 0 && v <= hi) || v != floor(v)) {
                kiln_ctx_set_error(cx, KILN_DATA_LOSS,
                                   "%s: '%s' line %lld: value %d is missing or not an integer in "
                                   "0..%g (each line holds 64 pixels 0..16 and a label 0..9)",
                                   fn, path, (long long)line, k + 1, hi);
                return -1;
            }
            if (k < DIGITS_PIXELS) {
                if (pix) pix[row * DIGITS_PIXELS + k] = (float)(v / 16.0);
                if (*after != ',') {
                    kiln_ctx_set_error(cx, KILN_DATA_LOSS,
                                       "%s: '%s' line %lld has %d values; expected 65", fn, path,
                                       (long long)line, k + 1);
                    return -1;
                }
                q = after + 1;
            } else {
                if (lab) lab[row] = (int32_t)v;
                while (after < end && (*after == '\r' || *after == ' '))
                    after++;
                if (after != end) {
                    kiln_ctx_set_error(cx, KILN_DATA_LOSS,
                                       "%s: '%s' line %lld has more than 65 values", fn, path,
                                       (long long)line);
                    return -1;
                }
            }
        }
        row++;
        p = *end ? end + 1 : end;
    }
    return row;
}

/* A uniform integer in [0, n) from Philox at counter i. */
static uint64_t draw(kiln_key key, uint64_t i, uint64_t n) {
    uint32_t ctr[4] = {(uint32_t)i, (uint32_t)(i >> 32), 0, 0}, out[4];
    kiln_philox4x32_10(ctr, key.words, out);
    return (((uint64_t)out[1] << 32) | out[0]) % n;
}

kiln_status kiln_nn_digits_load(kiln_ctx *cx, const char *path, uint64_t seed, double test_fraction,
                                kiln_nn_digits *out) {
    static const char fn[] = "kiln_nn_digits_load";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (kiln_ctx_status(cx) != KILN_OK) return kiln_ctx_status(cx);
    if (!out) return kiln__nn_fail(cx, fn, "out is NULL"), kiln_ctx_status(cx);
    memset(out, 0, sizeof *out);
    if (!(test_fraction > 0 && test_fraction < 1))
        return kiln__nn_fail(cx, fn, "test_fraction = %g; expected 0 < test_fraction < 1",
                             test_fraction),
               kiln_ctx_status(cx);
    if (!path) path = kiln_nn_digits_default_path();
    char *text;
    size_t len, cap;
    if (!read_gz(cx, fn, path, &text, &len, &cap)) return kiln_ctx_status(cx);
    int64_t n = parse(cx, fn, path, text, NULL, NULL);
    int64_t n_test = n > 0 ? (int64_t)llround((double)n * test_fraction) : 0;
    if (n >= 0 && (n_test < 1 || n_test >= n))
        kiln_ctx_set_error(cx, KILN_DATA_LOSS,
                           "%s: '%s' has %lld rows: too few to split with test_fraction %g", fn,
                           path, (long long)n, test_fraction);
    float *pix = NULL, *pix2 = NULL;
    int32_t *lab = NULL, *lab2 = NULL;
    int64_t *perm = NULL;
    size_t npix = 0;
    if (kiln_ctx_status(cx) == KILN_OK) {
        npix = (size_t)n * DIGITS_PIXELS;
        pix = kiln__nn_alloc(cx, fn, npix * sizeof *pix);
        pix2 = kiln__nn_alloc(cx, fn, npix * sizeof *pix);
        lab = kiln__nn_alloc(cx, fn, (size_t)n * sizeof *lab);
        lab2 = kiln__nn_alloc(cx, fn, (size_t)n * sizeof *lab);
        perm = kiln__nn_alloc(cx, fn, (size_t)n * sizeof *perm);
    }
    if (kiln_ctx_status(cx) == KILN_OK) {
        parse(cx, fn, path, text, pix, lab);
        /* Fisher-Yates with Philox draws: the same seed splits the same way everywhere. */
        kiln_key key = kiln_key_from_seed(seed);
        for (int64_t i = 0; i < n; i++)
            perm[i] = i;
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)draw(key, (uint64_t)i, (uint64_t)i + 1);
            int64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (int64_t i = 0; i < n; i++) {
            memcpy(pix2 + i * DIGITS_PIXELS, pix + perm[i] * DIGITS_PIXELS,
                   DIGITS_PIXELS * sizeof *pix);
            lab2[i] = lab[perm[i]];
        }
        int64_t n_train = n - n_test;
        kiln_nn_digits d = {.n_train = n_train, .n_test = n_test};
        d.train_images = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(n_train, 1, 8, 8), pix2,
                                               (size_t)n_train * DIGITS_PIXELS * sizeof *pix);
        d.train_labels = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(n_train), lab2,
                                               (size_t)n_train * sizeof *lab);
        d.test_images = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(n_test, 1, 8, 8),
                                              pix2 + n_train * DIGITS_PIXELS,
                                              (size_t)n_test * DIGITS_PIXELS * sizeof *pix);
        d.test_labels = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(n_test), lab2 + n_train,
                                              (size_t)n_test * sizeof *lab);
        if (kiln_ctx_status(cx) == KILN_OK) *out = d;
    }
    kiln__nn_free(cx, pix, npix * sizeof *pix);
    kiln__nn_free(cx, pix2, npix * sizeof *pix);
    kiln__nn_free(cx, lab, (size_t)(n > 0 ? n : 0) * sizeof *lab);
    kiln__nn_free(cx, lab2, (size_t)(n > 0 ? n : 0) * sizeof *lab);
    kiln__nn_free(cx, perm, (size_t)(n > 0 ? n : 0) * sizeof *perm);
    kiln__nn_free(cx, text, cap);
    return kiln_ctx_status(cx);
}
