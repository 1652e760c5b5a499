/* SPDX-License-Identifier: Apache-2.0 */
/* The .npy format: a magic string, a version, a Python-dict header describing dtype,
 * order and shape, then the raw C-order data. Every length read from a file is checked
 * before it is used; nothing here trusts the header. */
#define _POSIX_C_SOURCE 200809L

#include "kiln/npy.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "base/file.h"
#include "core/tensor_internal.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
/* numpy itself refuses headers over 10000 bytes unless told otherwise; a generous cap
 * keeps a hostile length from turning into a huge allocation. */
#define NPY_MAX_HEADER (1u << 20)

typedef struct npy_info {
    kiln_dtype dtype;
    bool big_endian;
    bool fortran_order;
    kiln_shape shape;
} npy_info;

/* ---- header parsing ----------------------------------------------------------------- */

typedef struct cursor {
    const char *start, *p, *end;
    kiln_ctx *cx;
    const char *source; /* the file name, for messages */
} cursor;

static kiln_status bad(cursor *c, const char *what) {
    return kiln_ctx_set_error(c->cx, KILN_INVALID_ARGUMENT,
                              "%s: malformed .npy header: %s at byte %td of the header", c->source,
                              what, c->p - c->start);
}

static void skip_space(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool accept(cursor *c, char ch) {
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A quoted Python string without escapes; sets *s and *len to its contents. */
static bool parse_string(cursor *c, const char **s, size_t *len) {
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
    char q = *c->p++;
    const char *start = c->p;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\') return false;
        c->p++;
    }
    if (c->p >= c->end) return false;
    *s = start;
    *len = (size_t)(c->p - start);
    c->p++;
    return true;
}

static bool word(cursor *c, const char *w) {
    skip_space(c);
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
        c->p += n;
        return true;
    }
    return false;
}

static bool streq(const char *s, size_t len, const char *lit) {
    return strlen(lit) == len && memcmp(s, lit, len) == 0;
}

/* Header text for a message: at most 32 bytes of s, printable ASCII as it is and every
 * other byte as \xNN (a NUL would otherwise end the message unseen), "..." when cut. */
typedef struct {
    char text[32 * 4 + 4];
} quoted;

static quoted quote(const char *s, size_t len) {
    quoted q;
    size_t n = 0, shown = len > 32 ? 32 : len;
    for (size_t i = 0; i < shown; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\\')
            q.text[n++] = (char)ch;
        else
            n += (size_t)snprintf(q.text + n, sizeof q.text - n, "\\x%02x", ch);
    }
    if (shown < len) memcpy(q.text + n, "...", 3), n += 3;
    q.text[n] = 0;
    return q;
}

/* A numpy type string like '<f4'. */
static kiln_status parse_typestr(cursor *c, const char *s, size_t len, npy_info *info) {
    if (len < 2) goto unsupported;
    char order = s[0];
    const char *code = s + 1;
    size_t clen = len - 1;
    if (order != '<' && order != '>' && order != '|' && order != '=') goto unsupported;
    static const struct {
        const char *code;
        kiln_dtype dtype;
    } types[] = {{"b1", KILN_BOOL}, {"i1", KILN_I8},  {"i2", KILN_I16}, {"i4", KILN_I32},
                 {"i8", KILN_I64},  {"u1", KILN_U8},  {"u2", KILN_U16}, {"u4", KILN_U32},
                 {"u8", KILN_U64},  {"f2", KILN_F16}, {"f4", KILN_F32}, {"f8", KILN_F64},
                 {"c8", KILN_C64},  {"c16", KILN_C128}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (streq(code, clen, types[i].code)) {
            info->dtype = types[i].dtype;
            info->big_endian = order == '>';
            if (order == '|' && kiln_dtype_size(info->dtype) != 1) goto unsupported;
            return KILN_OK;
        }
    }
unsupported:
    return kiln_ctx_set_error(c->cx, KILN_UNIMPLEMENTED,
                              "%s: .npy dtype '%s' is not supported (kiln reads bool, i1-i8, "
                              "u1-u8, f2, f4, f8, c8, c16 and the bf16 convention of kiln/npy.h)",
                              c->source, quote(s, len).text);
}

static kiln_status parse_descr(cursor *c, npy_info *info) {
    const char *s;
    size_t len;
    skip_space(c);
    if (c->p < c->end && *c->p == '[') {
        /* The one structured dtype kiln knows: [('bf16', '<u2')] */
        const char *start = c->p;
        c->p++;
        const char *name, *type;
        size_t name_len, type_len;
        if (accept(c, '(') && parse_string(c, &name, &name_len) && accept(c, ',') &&
            parse_string(c, &type, &type_len) && accept(c, ')') &&
            (accept(c, ','), accept(c, ']')) && streq(name, name_len, "bf16") &&
            (streq(type, type_len, "<u2") || streq(type, type_len, ">u2"))) {
            info->dtype = KILN_BF16;
            info->big_endian = type[0] == '>';
            return KILN_OK;
        }
        c->p = start;
        return kiln_ctx_set_error(c->cx, KILN_UNIMPLEMENTED,
                                  "%s: .npy structured dtype is not supported (only "
                                  "[('bf16', '<u2')], kiln's bf16 convention)",
                                  c->source);
    }
    if (!parse_string(c, &s, &len)) return bad(c, "'descr' is not a string");
    return parse_typestr(c, s, len, info);
}

static kiln_status parse_shape(cursor *c, npy_info *info) {
    if (!accept(c, '(')) return bad(c, "'shape' is not a tuple");
    kiln_shape shape = {.rank = 0};
    bool comma = false;
    for (;;) {
        if (accept(c, ')')) break;
        skip_space(c);
        if (c->p >= c->end || *c->p < '0' || *c->p > '9')
            return bad(c, "a dimension of 'shape' is not a non-negative integer");
        int64_t d = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (__builtin_mul_overflow(d, 10, &d) || __builtin_add_overflow(d, *c->p - '0', &d))
                return kiln_ctx_set_error(c->cx, KILN_INVALID_ARGUMENT,
                                          "%s: a dimension of 'shape' overflows int64", c->source);
            c->p++;
        }
        if (c->p < c->end && *c->p == 'L') c->p++; /* Python 2 long */
        if (shape.rank == KILN_MAX_RANK)
            return kiln_ctx_set_error(c->cx, KILN_INVALID_ARGUMENT,
                                      "%s: 'shape' has more than %d dimensions (KILN_MAX_RANK)",
                                      c->source, KILN_MAX_RANK);
        shape.dims[shape.rank++] = d;
        if (accept(c, ')')) break;
        if (!accept(c, ',')) return bad(c, "expected ',' or ')' in 'shape'");
        comma = true;
    }
    /* In Python "(3)" is the integer 3, not a tuple: numpy writes "(3,)". */
    if (shape.rank == 1 && !comma)
        return bad(c, "a one-dimensional 'shape' needs a comma, as in (3,)");
    info->shape = shape;
    return KILN_OK;
}

static kiln_status parse_dict(cursor *c, npy_info *info) {
    bool have_descr = false, have_order = false, have_shape = false;
    if (!accept(c, '{')) return bad(c, "it does not start with '{'");
    for (;;) {
        if (accept(c, '}')) break;
        const char *key;
        size_t key_len;
        if (!parse_string(c, &key, &key_len)) return bad(c, "expected a quoted key");
        if (!accept(c, ':')) return bad(c, "expected ':' after a key");
        kiln_status s = KILN_OK;
        if (streq(key, key_len, "descr") && !have_descr) {
            have_descr = true;
            s = parse_descr(c, info);
        } else if (streq(key, key_len, "fortran_order") && !have_order) {
            have_order = true;
            if (word(c, "True"))
                info->fortran_order = true;
            else if (word(c, "False"))
                info->fortran_order = false;
            else
                return bad(c, "'fortran_order' is not True or False");
        } else if (streq(key, key_len, "shape") && !have_shape) {
            have_shape = true;
            s = parse_shape(c, info);
        } else {
            return kiln_ctx_set_error(c->cx, KILN_INVALID_ARGUMENT,
                                      "%s: malformed .npy header: unexpected or repeated key "
                                      "'%s'",
                                      c->source, quote(key, key_len).text);
        }
        if (s != KILN_OK) return s;
        if (accept(c, '}')) break;
        if (!accept(c, ',')) return bad(c, "expected ',' or '}' after a value");
    }
    if (!have_descr || !have_order || !have_shape)
        return kiln_ctx_set_error(c->cx, KILN_INVALID_ARGUMENT,
                                  "%s: malformed .npy header: missing key '%s'", c->source,
                                  !have_descr   ? "descr"
                                  : !have_order ? "fortran_order"
                                                : "shape");
    skip_space(c);
    if (c->p != c->end) return bad(c, "unexpected text after the dictionary");
    if (info->fortran_order) {
        /* Fortran and C order are the same bytes when at most one dimension exceeds 1. */
        int long_dims = 0;
        for (int32_t i = 0; i < info->shape.rank; i++)
            long_dims += info->shape.dims[i] > 1;
        if (long_dims > 1)
            return kiln_ctx_set_error(c->cx, KILN_UNIMPLEMENTED,
                                      "%s: Fortran-order .npy files are not supported "
                                      "(save with numpy.ascontiguousarray)",
                                      c->source);
    }
    return KILN_OK;
}

/* Reads the preamble: magic, version and header length. `avail` bytes are at `bytes`.
 * On success *out_header_len is the header's length and *out_prefix the bytes before it. */
/* Reads the magic, version and header length from the first `avail` bytes of a source of
 * `total` bytes, and checks that the header fits in it. */
static kiln_status parse_preamble(kiln_ctx *cx, const char *source, const unsigned char *bytes,
                                  size_t avail, size_t total, size_t *out_prefix,
                                  size_t *out_header_len) {
    size_t magic_seen = avail < NPY_MAGIC_LEN ? avail : NPY_MAGIC_LEN;
    if (avail > 0 && avail < NPY_MAGIC_LEN + 2 && memcmp(bytes, NPY_MAGIC, magic_seen) == 0)
        return kiln_ctx_set_error(cx, KILN_DATA_LOSS, "%s: truncated .npy file (%zu bytes)", source,
                                  avail);
    if (avail < NPY_MAGIC_LEN + 2 || memcmp(bytes, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: not a .npy file (it does not start with \\x93NUMPY)",
                                  source);
    unsigned major = bytes[6], minor = bytes[7];
    size_t prefix, len;
    if (major == 1) {
        prefix = 10;
        if (avail < prefix) goto truncated;
        len = (size_t)bytes[8] | (size_t)bytes[9] << 8;
    } else if (major == 2 || major == 3) {
        prefix = 12;
        if (avail < prefix) goto truncated;
        len = (size_t)bytes[8] | (size_t)bytes[9] << 8 | (size_t)bytes[10] << 16 |
              (size_t)bytes[11] << 24;
    } else {
        return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                  "%s: .npy version %u.%u is not supported (1.0, 2.0, 3.0 are)",
                                  source, major, minor);
    }
    if (len > NPY_MAX_HEADER)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: .npy header length %zu exceeds the limit of %u bytes",
                                  source, len, NPY_MAX_HEADER);
    if (total - prefix < len)
        return kiln_ctx_set_error(cx, KILN_DATA_LOSS,
                                  "%s: truncated .npy header: %zu bytes announced, %zu present",
                                  source, len, total - prefix);
    *out_prefix = prefix;
    *out_header_len = len;
    return KILN_OK;
truncated:
    return kiln_ctx_set_error(cx, KILN_DATA_LOSS, "%s: truncated .npy file (%zu bytes)", source,
                              avail);
}

static kiln_status parse_header(kiln_ctx *cx, const char *source, const char *text, size_t len,
                                npy_info *info) {
    cursor c = {.start = text, .p = text, .end = text + len, .cx = cx, .source = source};
    info->fortran_order = false;
    return parse_dict(&c, info);
}

/* Checks that `available` bytes of data are exactly what the header's dtype and shape need
 * (*out_nbytes), and makes the tensor to hold them. */
static kiln_status new_tensor(kiln_ctx *cx, const char *fn, const char *source,
                              const npy_info *info, size_t available, size_t *out_nbytes,
                              kiln_tensor **out) {
    int64_t numel;
    size_t nbytes;
    char shape[KILN_MAX_RANK * 21 + 3];
    kiln_shape_format(&info->shape, shape, sizeof shape);
    if (!kiln_shape_numel(&info->shape, &numel) ||
        !kiln_shape_nbytes(&info->shape, info->dtype, &nbytes))
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: .npy shape %s of %s is too large: its byte size overflows",
                                  source, shape, kiln_dtype_name(info->dtype));
    if (available < nbytes)
        return kiln_ctx_set_error(cx, KILN_DATA_LOSS,
                                  "%s: truncated .npy data: %s%s needs %zu bytes, the file has %zu",
                                  source, kiln_dtype_name(info->dtype), shape, nbytes, available);
    if (available > nbytes)
        return kiln_ctx_set_error(
            cx, KILN_DATA_LOSS, "%s: .npy data has %zu bytes after the %zu that %s%s needs", source,
            available - nbytes, nbytes, kiln_dtype_name(info->dtype), shape);
    *out_nbytes = nbytes;
    *out = kiln__tensor_new(cx, fn, info->dtype, info->shape);
    return *out ? KILN_OK : KILN_RESOURCE_EXHAUSTED; /* dtype and shape were checked above */
}

static void swap_bytes(void *data, size_t nbytes, size_t size) {
    unsigned char *p = data;
    for (size_t i = 0; i + size <= nbytes; i += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = p[i + a];
            p[i + a] = p[i + b];
            p[i + b] = t;
        }
}

/* Brings loaded bytes to kiln's form: native byte order, and bools as 0 or 1. */
static void fix_up_data(const npy_info *info, void *data, size_t nbytes) {
    /* a complex number's parts are swapped each on its own */
    size_t part = kiln_dtype_size(kiln_dtype_component(info->dtype));
    if (info->big_endian) swap_bytes(data, nbytes, part);
    if (info->dtype == KILN_BOOL) {
        unsigned char *b = data;
        for (size_t i = 0; i < nbytes; i++)
            b[i] = b[i] != 0;
    }
}

/* ---- loading ---------------------------------------------------------------------- */

kiln_status kiln_npy_load_buffer(kiln_ctx *cx, const void *data, size_t size,
                                 kiln_tensor **out_tensor) {
    static const char fn[] = "kiln_npy_load_buffer";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_tensor) return kiln__null_argument(cx, fn, "out_tensor");
    *out_tensor = NULL;
    if (!data && size > 0) return kiln__null_argument(cx, fn, "data");
    const char *source = "<buffer>";
    const unsigned char *bytes = data;
    size_t prefix = 0, header_len = 0;
    kiln_status s = parse_preamble(cx, source, bytes, size, size, &prefix, &header_len);
    if (s != KILN_OK) return s;
    npy_info info;
    s = parse_header(cx, source, (const char *)bytes + prefix, header_len, &info);
    if (s != KILN_OK) return s;
    size_t nbytes;
    kiln_tensor *t;
    s = new_tensor(cx, fn, source, &info, size - prefix - header_len, &nbytes, &t);
    if (s != KILN_OK) return s;
    if (nbytes) {
        void *dst = kiln__tensor_mutable_data(t);
        memcpy(dst, bytes + prefix + header_len, nbytes);
        fix_up_data(&info, dst, nbytes);
    }
    *out_tensor = t;
    return KILN_OK;
}

static kiln_status load_file(kiln_ctx *cx, const char *path, FILE *f, size_t file_size,
                             kiln_tensor **out) {
    static const char fn[] = "kiln_npy_load";
    unsigned char pre[12];
    size_t pre_len = file_size < sizeof pre ? file_size : sizeof pre;
    kiln_status s = kiln__file_read_exact(cx, path, f, pre, pre_len, ".npy preamble", "");
    if (s != KILN_OK) return s;
    size_t prefix = 0, header_len = 0;
    s = parse_preamble(cx, path, pre, pre_len, file_size, &prefix, &header_len);
    if (s != KILN_OK) return s;
    if (fseek(f, (long)prefix, SEEK_SET) != 0) return kiln__file_error(cx, path, "seek", errno);
    char *header = header_len ? kiln__alloc(cx, header_len, 1, "kiln_npy_load: header") : NULL;
    if (header_len && !header) return KILN_RESOURCE_EXHAUSTED;
    s = kiln__file_read_exact(cx, path, f, header, header_len, ".npy header", "");
    npy_info info;
    if (s == KILN_OK) s = parse_header(cx, path, header, header_len, &info);
    if (header) kiln__free(cx, header, header_len);
    if (s != KILN_OK) return s;
    size_t nbytes;
    kiln_tensor *t;
    s = new_tensor(cx, fn, path, &info, file_size - prefix - header_len, &nbytes, &t);
    if (s != KILN_OK) return s;
    void *dst = kiln__tensor_mutable_data(t);
    s = kiln__file_read_exact(cx, path, f, dst, nbytes, ".npy data", "");
    if (s != KILN_OK) {
        kiln_tensor_release(t);
        return s;
    }
    fix_up_data(&info, dst, nbytes);
    *out = t;
    return KILN_OK;
}

kiln_status kiln_npy_load(kiln_ctx *cx, const char *path, kiln_tensor **out_tensor) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_tensor) return kiln__null_argument(cx, "kiln_npy_load", "out_tensor");
    *out_tensor = NULL;
    if (!path) return kiln__null_argument(cx, "kiln_npy_load", "path");
    FILE *f;
    size_t size;
    kiln_status s = kiln__file_open_read(cx, path, &f, &size);
    if (s != KILN_OK) return s;
    s = load_file(cx, path, f, size, out_tensor);
    fclose(f);
    return s;
}

/* ---- saving ----------------------------------------------------------------------- */

static const char *descr_of(kiln_dtype dtype) {
    static const char *const names[KILN_DTYPE_COUNT] = {[KILN_BOOL] = "'|b1'",
                                                        [KILN_I8] = "'|i1'",
                                                        [KILN_I16] = "'<i2'",
                                                        [KILN_I32] = "'<i4'",
                                                        [KILN_I64] = "'<i8'",
                                                        [KILN_U8] = "'|u1'",
                                                        [KILN_U16] = "'<u2'",
                                                        [KILN_U32] = "'<u4'",
                                                        [KILN_U64] = "'<u8'",
                                                        [KILN_F16] = "'<f2'",
                                                        [KILN_BF16] = "[('bf16', '<u2')]",
                                                        [KILN_F32] = "'<f4'",
                                                        [KILN_F64] = "'<f8'",
                                                        [KILN_C64] = "'<c8'",
                                                        [KILN_C128] = "'<c16'"};
    return names[dtype];
}

/* Writes the preamble and header into buf (at least 256 + 21 * rank bytes) and returns
 * their total length, a multiple of 64 as numpy writes it. */
static size_t format_header(const kiln_tensor *t, char *buf, size_t cap) {
    char dict[512 + KILN_MAX_RANK * 22];
    int n = snprintf(dict, sizeof dict, "{'descr': %s, 'fortran_order': False, 'shape': (",
                     descr_of(t->dtype));
    for (int32_t i = 0; i < t->shape.rank; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld%s", (long long)t->shape.dims[i],
                      t->shape.rank == 1 || i + 1 < t->shape.rank ? ", " : "");
    if (t->shape.rank == 1) n -= 1; /* "(5,)" */
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    /* The header is short (under 1 KiB), so version 1.0 with a 2-byte length always fits. */
    size_t prefix = 10;
    size_t total = prefix + (size_t)n + 1;
    total = (total + 63) / 64 * 64;
    size_t header_len = total - prefix;
    if (total > cap) return 0;
    memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (char)(header_len & 0xff);
    buf[9] = (char)(header_len >> 8);
    memcpy(buf + prefix, dict, (size_t)n);
    memset(buf + prefix + n, ' ', header_len - (size_t)n - 1);
    buf[total - 1] = '\n';
    return total;
}

#define HEADER_CAP 1024

/* Checks that t is a live host tensor that can be saved and formats its .npy header into
 * header (HEADER_CAP bytes), its length into *hlen. */
static kiln_status save_header(kiln_ctx *cx, const char *fn, const kiln_tensor *t,
                               char header[HEADER_CAP], size_t *hlen) {
    if (!t) return kiln__null_argument(cx, fn, "tensor");
    if (kiln__tensor_trace(t)) return kiln__traced_error(cx, fn);
    if (kiln__tensor_dead(t)) return kiln__dead_error(cx, fn, t);
    if (kiln__host_check(cx, fn, t) != KILN_OK) return kiln_ctx_status(cx);
    *hlen = format_header(t, header, HEADER_CAP);
    if (*hlen == 0) return kiln_ctx_set_error(cx, KILN_INTERNAL, "%s: header too long", fn);
    return KILN_OK;
}

kiln_status kiln_npy_save_buffer(kiln_ctx *cx, const kiln_tensor *t, void **out_data,
                                 size_t *out_size) {
    static const char fn[] = "kiln_npy_save_buffer";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_data) return kiln__null_argument(cx, fn, "out_data");
    *out_data = NULL;
    if (!out_size) return kiln__null_argument(cx, fn, "out_size");
    *out_size = 0;
    char header[HEADER_CAP];
    size_t hlen = 0;
    kiln_status s = save_header(cx, fn, t, header, &hlen);
    if (s != KILN_OK) return s;
    if (t->nbytes > SIZE_MAX - hlen)
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "%s: tensor too large", fn);
    size_t total = hlen + t->nbytes;
    unsigned char *out = kiln__alloc(cx, total, 64, fn);
    if (!out) return KILN_RESOURCE_EXHAUSTED;
    memcpy(out, header, hlen);
    if (t->nbytes) memcpy(out + hlen, kiln_tensor_data(t), t->nbytes);
    *out_data = out;
    *out_size = total;
    return KILN_OK;
}

void kiln_buffer_free(kiln_ctx *cx, void *data, size_t size) {
    if (cx && data) kiln__free(cx, data, size);
}

/* What kiln_npy_save writes: the header, then the data. */
typedef struct npy_write {
    const char *header;
    size_t header_len;
    const kiln_tensor *t;
} npy_write;

static bool write_npy(void *user, FILE *f) {
    const npy_write *w = user;
    size_t n = w->t->nbytes;
    return fwrite(w->header, 1, w->header_len, f) == w->header_len &&
           (!n || fwrite(kiln_tensor_data(w->t), 1, n, f) == n);
}

kiln_status kiln_npy_save(kiln_ctx *cx, const char *path, const kiln_tensor *t) {
    static const char fn[] = "kiln_npy_save";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!path) return kiln__null_argument(cx, fn, "path");
    char header[HEADER_CAP];
    size_t hlen = 0;
    kiln_status s = save_header(cx, fn, t, header, &hlen);
    if (s != KILN_OK) return s;

    npy_write w = {header, hlen, t};
    return kiln__file_save_atomic(cx, fn, path, write_npy, &w);
}
