/* The StableHLO text parser: reads what kiln's printer writes, JAX's as_text() and the
 * StableHLO interpreter tests (pretty and generic op forms, the check dialect). A
 * character-level recursive descent over `length` bytes (never NUL-terminated), with a
 * nesting limit; every error is "FILE:LINE:COL: error: message". */
#include <ctype.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "base/file.h"
#include "base/stack.h"
#include "core/element.h"
#include "core/tensor_internal.h"
#include "ir/ir.h"
#include "ir/vhlo.h"
#include "kiln/parse.h"
#include "ops/op_syntax.h"

#define MAX_DEPTH 160  /* nesting of regions, lists and attributes (tracing stops at 128) */
#define MAX_VALUES 512 /* operands, results, arguments of one op or function */
#define MAX_CALL_DEPTH 64

/* ---- state ----------------------------------------------------------------------------- */

typedef struct pname {
    const char *name;
    size_t len;
    uint32_t hash;
    kiln__value **vals;
    int32_t n;
    int32_t chain; /* the entry defined before this one in its hash bucket, or -1 */
} pname;

typedef struct pcall {
    kiln__ir_op *op;
    const char *callee;
    size_t len, pos;
} pcall;

typedef struct pcheck {
    kiln_check check;
    int32_t value, expected; /* indices into the function's extra results, or -1 */
} pcheck;

typedef struct pfunc {
    const char *name;
    size_t len, pos;
    bool is_public;
    kiln__block *body;
    const char **arg_names;
    bool *donor;
    int32_t *alias_of_result; /* per argument: tf.aliasing_output, or -1 */
    kiln__value **extra;      /* check values appended to the results */
    int32_t n_extra, cap_extra;
    pcheck *checks;
    int32_t n_checks, cap_checks;
    size_t check_pos;
} pfunc;

typedef struct parser {
    kiln_ctx *cx;
    const char *s;
    size_t n, pos;
    const char *filename;
    int32_t first_line;
    bool allow_checks;
    bool failed;
    int depth;
    kiln_module *m;
    pname *names; /* in definition order; regions pop theirs (names_pop) */
    int32_t n_names, cap_names;
    int32_t *name_heads;             /* per hash bucket, the newest entry of names in it, or -1 */
    int32_t cap_heads;               /* a power of two, at least twice n_names */
    struct op_scratch *free_scratch; /* scratch of ops not being parsed (op_line) */
    pcall *calls;
    int32_t n_calls, cap_calls;
    pfunc *funcs;
    int32_t n_funcs, cap_funcs;
    pfunc *cur;  /* the function being parsed */
    bool nested; /* inside a region */
    /* MAX_VALUES types (some 70 KB, too much for a stack frame that regions nest in), made
     * on first use and kept for the parse, for code that parses no region while it holds
     * them (leaf_types). */
    kiln__type *leaf;
} parser;

/* ---- errors and characters --------------------------------------------------------------- */

static bool perr(parser *p, size_t pos, const char *fmt, ...) KILN_PRINTF_LIKE(3, 4);
static bool perr(parser *p, size_t pos, const char *fmt, ...) {
    if (p->failed) return false;
    p->failed = true;
    if (pos > p->n) pos = p->n;
    int64_t line = p->first_line, col = 1;
    for (size_t i = 0; i < pos; i++) {
        if (p->s[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kiln_ctx_clear_error(p->cx);
    kiln_ctx_set_error(p->cx, KILN_INVALID_ARGUMENT, "%s:%" PRId64 ":%" PRId64 ": error: %s",
                       p->filename, line, col, msg);
    return false;
}

static bool oom(parser *p) { return perr(p, p->pos, "out of memory"); }

static int ch(const parser *p) { return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1; }
static int ch_at(const parser *p, size_t at) { return at < p->n ? (unsigned char)p->s[at] : -1; }

/* If a location starts at `at` ("loc(" as a token of its own, or an alias definition
 * "#loc12 = loc("), the position after its closing parenthesis; else `at`. Locations are
 * debug information (JAX keeps them, with their aliases before and after the module):
 * they are skipped as whitespace is. An unbalanced one is left for the parser to refuse. */
static size_t after_location(const parser *p, size_t at) {
    const char *s = p->s;
    size_t n = p->n, q = at;
    if (s[q] == '#') {
        if (n - q < 4 || memcmp(s + q, "#loc", 4) != 0) return at;
        for (q += 4; q < n && (isalnum((unsigned char)s[q]) || s[q] == '_'); q++) {
        }
        while (q < n && (s[q] == ' ' || s[q] == '\t'))
            q++;
        if (q >= n || s[q] != '=') return at;
        for (q++; q < n && (s[q] == ' ' || s[q] == '\t'); q++) {
        }
    } else if (q > 0) {
        char prev = s[q - 1];
        if (isalnum((unsigned char)prev) || strchr("_.$%@#^!-\"", prev)) return at;
    }
    if (n - q < 4 || memcmp(s + q, "loc(", 4) != 0) return at;
    int depth = 0;
    for (q += 3; q < n; q++) {
        char c = s[q];
        if (c == '"') {
            for (q++; q < n && s[q] != '"'; q++)
                if (s[q] == '\\') q++;
        } else if (c == '(') {
            depth++;
        } else if (c == ')' && --depth == 0) {
            return q + 1;
        }
    }
    return at;
}

static void skip(parser *p) {
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            p->pos++;
        } else if (c == '/' && ch_at(p, p->pos + 1) == '/') {
            while (p->pos < p->n && p->s[p->pos] != '\n')
                p->pos++;
        } else if ((c == 'l' || c == '#') && after_location(p, p->pos) != p->pos) {
            p->pos = after_location(p, p->pos);
        } else {
            break;
        }
    }
}

static bool peek(parser *p, char c) {
    skip(p);
    return ch(p) == (unsigned char)c;
}

static bool accept(parser *p, char c) {
    if (!peek(p, c)) return false;
    p->pos++;
    return true;
}

static const char *char_text(parser *p, char *buf) {
    skip(p);
    int c = ch(p);
    if (c < 0) return "end of input";
    if (c < 0x20 || c >= 0x7F) {
        snprintf(buf, 16, "\\x%02X", (unsigned)c & 0xFFu);
        return buf;
    }
    snprintf(buf, 16, "'%c'", c);
    return buf;
}

static bool expect(parser *p, char c, const char *what) {
    if (p->failed) return false;
    if (accept(p, c)) return true;
    char buf[16];
    return perr(p, p->pos, "expected '%c' %s, found %s", c, what, char_text(p, buf));
}

static bool is_id_start(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_id_char(int c) {
    return is_id_start(c) || (c >= '0' && c <= '9') || c == '$' || c == '.';
}
static bool is_digit(int c) { return c >= '0' && c <= '9'; }

static size_t ident(parser *p, const char **out) {
    skip(p);
    size_t start = p->pos;
    if (!is_id_start(ch(p))) return 0;
    while (is_id_char(ch(p)))
        p->pos++;
    *out = p->s + start;
    return p->pos - start;
}

static bool accept_kw(parser *p, const char *kw) {
    skip(p);
    size_t len = strlen(kw);
    if (p->n - p->pos < len || memcmp(p->s + p->pos, kw, len) != 0) return false;
    if (is_id_start((unsigned char)kw[len - 1]) || is_digit((unsigned char)kw[len - 1]))
        if (is_id_char(ch_at(p, p->pos + len))) return false;
    p->pos += len;
    return true;
}

static bool expect_kw(parser *p, const char *kw, const char *what) {
    if (p->failed) return false;
    if (accept_kw(p, kw)) return true;
    char buf[16];
    return perr(p, p->pos, "expected '%s' %s, found %s", kw, what, char_text(p, buf));
}

static bool span_is(const char *s, size_t len, const char *word) {
    return strlen(word) == len && memcmp(s, word, len) == 0;
}

static bool int64_lit(parser *p, int64_t *out, const char *what) {
    skip(p);
    size_t start = p->pos;
    bool neg = false;
    if (ch(p) == '-') {
        neg = true;
        p->pos++;
    }
    if (!is_digit(ch(p))) {
        p->pos = start;
        char buf[16];
        return perr(p, start, "expected an integer %s, found %s", what, char_text(p, buf));
    }
    uint64_t v = 0;
    while (is_digit(ch(p))) {
        unsigned d = (unsigned)(ch(p) - '0');
        if (v > (UINT64_MAX - d) / 10) return perr(p, start, "integer %s out of range", what);
        v = v * 10 + d;
        p->pos++;
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
        return perr(p, start, "integer %s out of range", what);
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static bool enter(parser *p) {
    if (++p->depth > MAX_DEPTH)
        return perr(p, p->pos, "nesting too deep (more than %d levels)", MAX_DEPTH);
    if (kiln__stack_low(KILN__STACK_RESERVE))
        return perr(p, p->pos, "nesting too deep for this thread's stack (%d levels)", p->depth);
    return true;
}
static void leave(parser *p) { p->depth--; }

/* A string literal "..." (escapes kept as written); returns its content's span. */
static bool string_lit(parser *p, const char **out, size_t *len) {
    skip(p);
    size_t start = p->pos;
    if (ch(p) != '"') return perr(p, start, "expected a string");
    p->pos++;
    while (p->pos < p->n && p->s[p->pos] != '"') {
        if (p->s[p->pos] == '\\') p->pos++;
        if (p->pos < p->n && p->s[p->pos] == '\n') return perr(p, start, "unterminated string");
        p->pos++;
    }
    if (p->pos >= p->n) return perr(p, start, "unterminated string");
    *out = p->s + start + 1;
    *len = p->pos - start - 1;
    p->pos++;
    return true;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes MLIR's string escapes (\\, \", \n, \t, \XX) into the arena. */
static char *unescape(parser *p, const char *s, size_t len) {
    char *out = kiln__arena_alloc(&p->m->arena, len + 1, 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\' || i + 1 >= len) {
            out[o++] = s[i];
            continue;
        }
        char c = s[++i];
        if (c == 'n')
            out[o++] = '\n';
        else if (c == 't')
            out[o++] = '\t';
        else if (i + 1 < len && hexval((unsigned char)c) >= 0 &&
                 hexval((unsigned char)s[i + 1]) >= 0) {
            out[o++] = (char)(hexval((unsigned char)c) * 16 + hexval((unsigned char)s[i + 1]));
            i++;
        } else
            out[o++] = c;
    }
    out[o] = '\0';
    return out;
}

/* ---- types ------------------------------------------------------------------------------- */

static bool element_type(parser *p, kiln_dtype *out) {
    skip(p);
    size_t start = p->pos;
    const char *id;
    size_t len = ident(p, &id);
    if (len == 0) {
        char buf[16];
        if (peek(p, '!')) /* !quant.uniform, !stablehlo.token, ... */
            return perr(p, start, "unsupported element type: kiln has no '!' dialect types");
        return perr(p, start, "expected an element type, found %s", char_text(p, buf));
    }
    if (len == 7 && memcmp(id, "complex", 7) == 0)
        return perr(p, start, "unsupported element type 'complex'");
    char name[16];
    if (len < sizeof name) {
        memcpy(name, id, len);
        name[len] = '\0';
        if (kiln_dtype_parse(name, out)) return true;
    }
    return perr(p, start, "unsupported element type '%.*s'", (int)(len > 40 ? 40 : len), id);
}

/* tensor<2x3xf32> */
static bool tensor_type(parser *p, kiln__type *t) {
    skip(p);
    size_t start = p->pos;
    if (!accept_kw(p, "tensor")) {
        if (peek(p, '!') || peek(p, 't')) {
            const char *id;
            size_t save = p->pos;
            if (ch(p) == '!') p->pos++;
            size_t len = ident(p, &id);
            p->pos = save;
            if (len)
                return perr(p, start, "unsupported type '%.*s'", (int)(len > 40 ? 40 : len), id);
        }
        char buf[16];
        return perr(p, start, "expected a tensor type, found %s", char_text(p, buf));
    }
    if (!expect(p, '<', "after 'tensor'")) return false;
    t->shape.rank = 0;
    skip(p);
    while (is_digit(ch(p)) || ch(p) == '?') {
        size_t dpos = p->pos;
        if (ch(p) == '?') return perr(p, dpos, "dynamic dimensions are not supported");
        int64_t d;
        if (!int64_lit(p, &d, "dimension")) return false;
        if (ch(p) != 'x') return perr(p, p->pos, "expected 'x' after a dimension");
        p->pos++;
        if (t->shape.rank >= KILN_MAX_RANK)
            return perr(p, dpos, "more than %d dimensions", KILN_MAX_RANK);
        t->shape.dims[t->shape.rank++] = d;
    }
    if (!element_type(p, &t->dtype)) return false;
    if (peek(p, ',')) return perr(p, p->pos, "tensor encodings are not supported");
    return expect(p, '>', "to close the tensor type");
}

static bool same_type(const kiln__type *a, const kiln__type *b) {
    return a->dtype == b->dtype && kiln_shape_equal(&a->shape, &b->shape);
}

static const char *type_str(const kiln__type *t, char *buf, size_t cap) {
    size_t o = (size_t)snprintf(buf, cap, "tensor<");
    for (int32_t d = 0; d < t->shape.rank && o < cap; d++)
        o += (size_t)snprintf(buf + o, cap - o, "%" PRId64 "x", t->shape.dims[d]);
    if (o < cap) snprintf(buf + o, cap - o, "%s>", kiln_dtype_name(t->dtype));
    return buf;
}

/* "T, T" list (with or without parentheses handled by the caller). */
static bool type_list(parser *p, kiln__type *out, int32_t cap, int32_t *n) {
    *n = 0;
    do {
        if (*n >= cap) return perr(p, p->pos, "too many types");
        if (!tensor_type(p, &out[(*n)++])) return false;
    } while (accept(p, ','));
    return true;
}

/* ": (A, B) -> C" or "-> (C, D)"; or a single type T (all operands and results T). */
typedef struct sig {
    kiln__type in[MAX_VALUES], out[MAX_VALUES];
    int32_t n_in, n_out;
    bool functional;
    size_t pos;
} sig;

static bool functional_type(parser *p, sig *s) {
    skip(p);
    s->pos = p->pos;
    s->n_in = s->n_out = 0;
    s->functional = false;
    if (accept(p, '(')) {
        s->functional = true;
        if (!accept(p, ')')) {
            if (!type_list(p, s->in, MAX_VALUES, &s->n_in)) return false;
            if (!expect(p, ')', "to close the operand types")) return false;
        }
        skip(p);
        if (!(ch(p) == '-' && ch_at(p, p->pos + 1) == '>'))
            return perr(p, p->pos, "expected '->' in a function type");
        p->pos += 2;
        if (accept(p, '(')) {
            if (!accept(p, ')')) {
                if (!type_list(p, s->out, MAX_VALUES, &s->n_out)) return false;
                if (!expect(p, ')', "to close the result types")) return false;
            }
        } else {
            if (!tensor_type(p, &s->out[0])) return false;
            s->n_out = 1;
        }
        return true;
    }
    if (!tensor_type(p, &s->out[0])) return false;
    s->n_out = 1;
    return true;
}

/* The parser's scratch types (see parser.leaf), or NULL with the error recorded. */
static kiln__type *leaf_types(parser *p) {
    if (!p->leaf) p->leaf = kiln__alloc(p->cx, MAX_VALUES * sizeof *p->leaf, 16, "parser types");
    if (!p->leaf) oom(p);
    return p->leaf;
}

/* Reads a functional type whose types are not needed (a sig lives on the heap here: two
 * arrays of MAX_VALUES types). */
static bool skip_functional_type(parser *p) {
    sig *s = kiln__alloc(p->cx, sizeof *s, _Alignof(sig), "parser types");
    if (!s) return oom(p);
    bool ok = functional_type(p, s);
    kiln__free(p->cx, s, sizeof *s);
    return ok;
}

/* ---- dense literals ------------------------------------------------------------------ */

enum { E_INT, E_FLOAT, E_HEX, E_TRUE, E_FALSE };

typedef struct elem {
    size_t pos, len;
    uint8_t kind;
} elem;

typedef struct dense {
    elem *e;
    int32_t n, cap;
    bool list, empty, blob;
    int32_t rank;
    int64_t dims[KILN_MAX_RANK + 1];
    int32_t leaf_depth;
    uint32_t dims_set;
    size_t pos, blob_pos, blob_len;
} dense;

static void dense_free(parser *p, dense *d) {
    if (d->e) kiln__free(p->cx, d->e, (size_t)d->cap * sizeof *d->e);
    d->e = NULL;
    d->n = d->cap = 0;
}

static bool dense_add(parser *p, dense *d, elem e) {
    if (d->n == d->cap) {
        int32_t cap = d->cap ? d->cap * 2 : 16;
        if (cap > (1 << 28)) return oom(p);
        elem *items =
            kiln__alloc(p->cx, (size_t)cap * sizeof *items, _Alignof(elem), "parser literal");
        if (!items) return oom(p);
        if (d->n) memcpy(items, d->e, (size_t)d->n * sizeof *items);
        if (d->e) kiln__free(p->cx, d->e, (size_t)d->cap * sizeof *d->e);
        d->e = items;
        d->cap = cap;
    }
    d->e[d->n++] = e;
    return true;
}

/* A number or true/false token. */
static bool scalar_token(parser *p, elem *e) {
    skip(p);
    size_t start = p->pos;
    e->pos = start;
    if (accept_kw(p, "true")) {
        e->kind = E_TRUE;
    } else if (accept_kw(p, "false")) {
        e->kind = E_FALSE;
    } else {
        if (ch(p) == '-' || ch(p) == '+') p->pos++;
        if (ch(p) == '0' && (ch_at(p, p->pos + 1) == 'x' || ch_at(p, p->pos + 1) == 'X')) {
            p->pos += 2;
            size_t digits = p->pos;
            while (hexval(ch(p)) >= 0)
                p->pos++;
            if (p->pos == digits) return perr(p, start, "expected hex digits");
            e->kind = E_HEX;
        } else {
            bool digits = false, fp = false;
            while (is_digit(ch(p)))
                p->pos++, digits = true;
            if (ch(p) == '.') {
                fp = true;
                p->pos++;
                while (is_digit(ch(p)))
                    p->pos++, digits = true;
            }
            if (digits && (ch(p) == 'e' || ch(p) == 'E')) {
                size_t save = p->pos;
                p->pos++;
                if (ch(p) == '+' || ch(p) == '-') p->pos++;
                if (!is_digit(ch(p))) {
                    p->pos = save;
                } else {
                    fp = true;
                    while (is_digit(ch(p)))
                        p->pos++;
                }
            }
            if (!digits) {
                p->pos = start;
                char buf[16];
                return perr(p, start, "expected a number, found %s", char_text(p, buf));
            }
            if (ch(p) == 'n' || ch(p) == 'i' || is_id_start(ch(p)))
                return perr(p, start, "malformed number");
            e->kind = fp ? E_FLOAT : E_INT;
        }
    }
    e->len = p->pos - start;
    return true;
}

static bool dense_tree(parser *p, dense *d, int32_t depth) {
    skip(p);
    if (ch(p) == '(') return perr(p, p->pos, "complex literals are not supported");
    if (!accept(p, '[')) {
        elem e;
        if (!scalar_token(p, &e)) return false;
        if (d->leaf_depth < 0)
            d->leaf_depth = depth;
        else if (d->leaf_depth != depth)
            return perr(p, e.pos, "inconsistent nesting in a dense literal");
        return dense_add(p, d, e);
    }
    size_t open = p->pos - 1;
    if (depth >= KILN_MAX_RANK) return perr(p, open, "dense literal nested too deeply");
    int64_t count = 0;
    if (!accept(p, ']')) {
        do {
            if (!dense_tree(p, d, depth + 1)) return false;
            count++;
        } while (accept(p, ','));
        if (!expect(p, ']', "to close a list in a dense literal")) return false;
    } else if (d->leaf_depth >= 0 && d->leaf_depth != depth + 1) {
        return perr(p, open, "inconsistent nesting in a dense literal");
    } else if (d->leaf_depth < 0) {
        d->leaf_depth = depth + 1;
    }
    if (depth + 1 > d->rank) d->rank = depth + 1;
    if (!(d->dims_set & (1u << depth))) {
        d->dims_set |= 1u << depth;
        d->dims[depth] = count;
    } else if (d->dims[depth] != count) {
        return perr(p, open,
                    "inconsistent list lengths in a dense literal (%" PRId64 " and %" PRId64 ")",
                    d->dims[depth], count);
    }
    return true;
}

/* After "dense<": the body up to and including '>'. */
static bool dense_body(parser *p, dense *d) {
    memset(d, 0, sizeof *d);
    d->leaf_depth = -1;
    skip(p);
    d->pos = p->pos;
    if (accept(p, '>')) {
        d->empty = true;
        return true;
    }
    if (peek(p, '"')) {
        const char *s;
        size_t len;
        size_t at = p->pos;
        if (!string_lit(p, &s, &len)) return false;
        if (len < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || len % 2)
            return perr(p, at, "expected a hex blob \"0x...\" with an even number of digits");
        for (size_t i = 2; i < len; i++)
            if (hexval((unsigned char)s[i]) < 0)
                return perr(p, at + 1 + i, "bad hex digit in a blob");
        d->blob = true;
        d->blob_pos = (size_t)(s - p->s) + 2;
        d->blob_len = (len - 2) / 2;
        return expect(p, '>', "to close the dense literal");
    }
    d->list = peek(p, '[');
    if (!dense_tree(p, d, 0)) return false;
    return expect(p, '>', "to close the dense literal");
}

/* Text to double with the C locale's rules whatever the current locale. */
static double decimal_value(const char *s, size_t len, bool as_float, float *fout) {
    char buf[128];
    const char *radix = localeconv()->decimal_point;
    size_t rlen = radix ? strlen(radix) : 0, o = 0;
    char *heap = NULL;
    char *out = buf;
    size_t cap = sizeof buf;
    if (len * (rlen + 1) + 1 > cap) {
        cap = len * (rlen + 1) + 1;
        heap = malloc(cap);
        if (!heap) return NAN;
        out = heap;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.' && rlen && strcmp(radix, ".") != 0) {
            memcpy(out + o, radix, rlen);
            o += rlen;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    double d = strtod(out, NULL);
    if (as_float) *fout = strtof(out, NULL);
    free(heap);
    return d;
}

static bool hex_bits(const parser *p, const elem *e, uint64_t *bits, int *digits) {
    size_t i = e->pos;
    bool neg = p->s[i] == '-';
    if (neg || p->s[i] == '+') i++;
    i += 2;
    uint64_t v = 0;
    int n = 0;
    for (; i < e->pos + e->len; i++) {
        if (v >> 60) return false;
        v = v * 16 + (uint64_t)hexval((unsigned char)p->s[i]);
        n++;
    }
    while (n > 1 && p->s[i - (size_t)n] == '0' && false)
        n--;
    *bits = neg ? 0 - v : v;
    *digits = n;
    return true;
}

/* One element into `out` (dtype's size). */
static bool store_elem(parser *p, const elem *e, kiln_dtype dt, unsigned char *out) {
    const char *s = p->s + e->pos;
    size_t size = kiln_dtype_size(dt);
    if (dt == KILN_BOOL) {
        uint8_t b;
        if (e->kind == E_TRUE)
            b = 1;
        else if (e->kind == E_FALSE)
            b = 0;
        else if (e->kind == E_INT && e->len == 1 && (s[0] == '0' || s[0] == '1'))
            b = (uint8_t)(s[0] - '0');
        else
            return perr(p, e->pos, "expected true, false, 0 or 1 for an i1 element");
        *out = b;
        return true;
    }
    if (kiln_dtype_is_float(dt)) {
        uint64_t bits = 0;
        if (e->kind == E_HEX) {
            int digits;
            if (!hex_bits(p, e, &bits, &digits) || (size < 8 && bits >> (size * 8)))
                return perr(p, e->pos, "hex literal too wide for %s", kiln_dtype_name(dt));
        } else if (e->kind == E_INT || e->kind == E_FLOAT) {
            float f = 0;
            double d = decimal_value(s, e->len, dt == KILN_F32, &f);
            switch (dt) {
            case KILN_F16: bits = kiln__f64_to_f16(d); break;
            case KILN_BF16: bits = kiln__f64_to_bf16(d); break;
            case KILN_F32: {
                uint32_t b;
                memcpy(&b, &f, 4);
                bits = b;
                break;
            }
            default: memcpy(&bits, &d, 8); break;
            }
        } else {
            return perr(p, e->pos, "expected a number for a %s element", kiln_dtype_name(dt));
        }
        switch (size) {
        case 2: {
            uint16_t v = (uint16_t)bits;
            memcpy(out, &v, 2);
            break;
        }
        case 4: {
            uint32_t v = (uint32_t)bits;
            memcpy(out, &v, 4);
            break;
        }
        default: memcpy(out, &bits, 8); break;
        }
        return true;
    }
    /* integers */
    uint64_t mag = 0;
    bool neg = false;
    if (e->kind == E_HEX) {
        int digits;
        if (!hex_bits(p, e, &mag, &digits) || (size < 8 && mag >> (size * 8)))
            return perr(p, e->pos, "hex literal too wide for %s", kiln_dtype_name(dt));
    } else if (e->kind == E_INT) {
        size_t i = 0;
        if (s[0] == '-' || s[0] == '+') neg = s[i++] == '-';
        for (; i < e->len; i++) {
            unsigned dgt = (unsigned)(s[i] - '0');
            if (mag > (UINT64_MAX - dgt) / 10)
                return perr(p, e->pos, "integer literal out of range for %s", kiln_dtype_name(dt));
            mag = mag * 10 + dgt;
        }
        bool sgn = kiln_dtype_is_signed(dt);
        int bitsz = (int)size * 8;
        uint64_t maxpos = sgn ? (UINT64_C(1) << (bitsz - 1)) - 1
                              : (bitsz == 64 ? UINT64_MAX : (UINT64_C(1) << bitsz) - 1);
        uint64_t maxneg = sgn ? (UINT64_C(1) << (bitsz - 1)) : 0;
        if (neg ? mag > maxneg : mag > maxpos)
            return perr(p, e->pos, "integer literal %.*s out of range for %s",
                        (int)(e->len > 40 ? 40 : e->len), s, kiln_dtype_name(dt));
        if (neg) mag = 0 - mag;
    } else {
        return perr(p, e->pos, "expected an integer for a %s element", kiln_dtype_name(dt));
    }
    switch (size) {
    case 1: {
        uint8_t v = (uint8_t)mag;
        memcpy(out, &v, 1);
        break;
    }
    case 2: {
        uint16_t v = (uint16_t)mag;
        memcpy(out, &v, 2);
        break;
    }
    case 4: {
        uint32_t v = (uint32_t)mag;
        memcpy(out, &v, 4);
        break;
    }
    default: memcpy(out, &mag, 8); break;
    }
    return true;
}

/* Fills numel elements of esize bytes at buf from the first one, by doubling copies (a
 * splat of millions of elements costs a few dozen memcpys, not one call per element). */
static void splat_fill(unsigned char *buf, int64_t numel, size_t esize) {
    size_t total = (size_t)numel * esize, have = esize;
    while (have < total) {
        size_t n = have < total - have ? have : total - have;
        memcpy(buf + have, buf, n);
        have += n;
    }
}

/* The literal as a tensor of type t (a new reference, not owned by a scope), or NULL. The
 * literal is checked against the type before any memory is taken, and its elements are
 * written straight into the tensor. */
static kiln_tensor *dense_tensor(parser *p, const dense *d, const kiln__type *t) {
    int64_t numel;
    if (!kiln_shape_numel(&t->shape, &numel) || numel > (INT64_C(1) << 40)) {
        perr(p, d->pos, "tensor too large");
        return NULL;
    }
    size_t esize = kiln_dtype_size(t->dtype);
    size_t nbytes = (size_t)numel * esize;
    char tb[64];
    if (d->empty && numel != 0) {
        perr(p, d->pos, "dense<> has no elements but %s has %" PRId64, type_str(t, tb, sizeof tb),
             numel);
        return NULL;
    }
    if (d->blob && d->blob_len != nbytes && !(d->blob_len == esize && numel > 0)) {
        perr(p, d->pos, "hex blob has %zu bytes; %s needs %zu", d->blob_len,
             type_str(t, tb, sizeof tb), nbytes);
        return NULL;
    }
    if (d->list) {
        bool shape_ok = d->rank == t->shape.rank;
        for (int32_t i = 0; shape_ok && i < d->rank; i++)
            shape_ok = d->dims[i] == t->shape.dims[i];
        if (d->leaf_depth >= 0 && d->n > 0 && d->leaf_depth != d->rank) shape_ok = false;
        if (!shape_ok || d->n != numel) {
            perr(p, d->pos, "dense literal shape does not match %s", type_str(t, tb, sizeof tb));
            return NULL;
        }
    }
    kiln_tensor *tensor = kiln__tensor_new(p->cx, "parser constant", t->dtype, t->shape);
    if (!tensor) {
        oom(p);
        return NULL;
    }
    unsigned char *buf = kiln__tensor_mutable_data(tensor);
    bool ok = true;
    if (d->blob) {
        const char *h = p->s + d->blob_pos;
        size_t n = d->blob_len == nbytes ? nbytes : esize;
        for (size_t i = 0; i < n; i++)
            buf[i] = (unsigned char)(hexval((unsigned char)h[2 * i]) * 16 +
                                     hexval((unsigned char)h[2 * i + 1]));
        if (n < nbytes) splat_fill(buf, numel, esize);
        if (t->dtype == KILN_BOOL)
            for (size_t i = 0; ok && i < n; i++)
                if (buf[i] > 1) ok = perr(p, d->pos, "i1 blob byte %zu is not 0 or 1", i);
    } else if (!d->list && !d->empty) {
        if (numel > 0) ok = store_elem(p, &d->e[0], t->dtype, buf);
        if (ok && numel > 1) splat_fill(buf, numel, esize);
    } else if (d->list) {
        for (int32_t i = 0; ok && i < d->n; i++)
            ok = store_elem(p, &d->e[i], t->dtype, buf + (size_t)i * esize);
    }
    if (!ok) {
        kiln_tensor_release(tensor);
        return NULL;
    }
    return tensor;
}

/* ---- attributes ------------------------------------------------------------------------ */

typedef enum akind {
    A_INT,
    A_FLOAT,
    A_BOOL,
    A_STR,
    A_SYM,
    A_LIST,
    A_ARRAY,
    A_DENSE,
    A_DICT,
    A_ENUM,
    A_STRUCT,
    A_UNIT,
    A_OPAQUE,
    A_CONV
} akind;

typedef struct attr attr;
struct attr {
    akind kind;
    size_t pos;
    int64_t i;
    const char *text; /* A_STR, A_SYM, A_ENUM: the span */
    size_t len;
    attr *items;       /* A_LIST, A_DICT, A_STRUCT values; A_ARRAY unused */
    const char **keys; /* A_DICT, A_STRUCT */
    size_t *key_lens;
    int32_t n;
    int64_t *ints; /* A_ARRAY, A_DENSE (integer), values */
    int64_t dims[2];
    int32_t rank;
    kiln_conv_params conv;
};

static void *aalloc(parser *p, size_t size) {
    void *r = kiln__arena_alloc(&p->m->arena, size ? size : 1, 16);
    if (!r) oom(p);
    return r;
}

static bool attr_value(parser *p, attr *a);
static bool conv_layouts(parser *p, kiln_conv_params *c);

static bool grow_attrs(parser *p, attr **items, const char ***keys, size_t **lens, int32_t n,
                       int32_t *cap) {
    if (n < *cap) return true;
    int32_t nc = *cap ? *cap * 2 : 8;
    attr *ni = aalloc(p, (size_t)nc * sizeof *ni);
    if (!ni) return false;
    if (n) memcpy(ni, *items, (size_t)n * sizeof *ni);
    *items = ni;
    if (keys) {
        const char **nk = aalloc(p, (size_t)nc * sizeof *nk);
        size_t *nl = aalloc(p, (size_t)nc * sizeof *nl);
        if (!nk || !nl) return false;
        if (n) memcpy(nk, *keys, (size_t)n * sizeof *nk), memcpy(nl, *lens, (size_t)n * sizeof *nl);
        *keys = nk;
        *lens = nl;
    }
    *cap = nc;
    return true;
}

/* { key = value, key, ... } or (struct) key = value, ... up to `close`. */
static bool attr_entries(parser *p, attr *a, char close) {
    int32_t cap = 0;
    a->n = 0;
    if (accept(p, close)) return true;
    do {
        skip(p);
        size_t kpos = p->pos;
        const char *key;
        size_t klen;
        if (peek(p, '"')) {
            if (!string_lit(p, &key, &klen)) return false;
        } else if (!(klen = ident(p, &key))) {
            char buf[16];
            return perr(p, kpos, "expected an attribute name, found %s", char_text(p, buf));
        }
        if (!grow_attrs(p, &a->items, &a->keys, &a->key_lens, a->n, &cap)) return false;
        attr *v = &a->items[a->n];
        memset(v, 0, sizeof *v);
        a->keys[a->n] = key;
        a->key_lens[a->n] = klen;
        a->n++;
        v->pos = kpos;
        if (accept(p, '=')) {
            if (!attr_value(p, v)) return false;
        } else {
            v->kind = A_UNIT;
        }
    } while (accept(p, ','));
    char what[32];
    snprintf(what, sizeof what, "to close the attributes");
    return expect(p, close, what);
}

/* Skips a balanced <...> (strings respected). */
static bool skip_angles(parser *p, size_t start) {
    int depth = 0;
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c == '"') {
            const char *s;
            size_t l;
            if (!string_lit(p, &s, &l)) return false;
            continue;
        }
        p->pos++;
        if (c == '<')
            depth++;
        else if (c == '>' && p->s[p->pos - 2] != '-') {
            if (--depth == 0) return true;
        }
    }
    return perr(p, start, "unterminated attribute");
}

static bool int_list_attr(parser *p, attr *a) {
    /* [1, 2] into ints (used by structs and lists of integers) */
    int32_t cap = 0;
    a->kind = A_ARRAY;
    a->n = 0;
    if (accept(p, ']')) return true;
    do {
        int64_t v;
        if (!int64_lit(p, &v, "in a list")) return false;
        if (a->n == cap) {
            int32_t nc = cap ? cap * 2 : 8;
            int64_t *ni = aalloc(p, (size_t)nc * sizeof *ni);
            if (!ni) return false;
            if (a->n) memcpy(ni, a->ints, (size_t)a->n * sizeof *ni);
            a->ints = ni;
            cap = nc;
        }
        a->ints[a->n++] = v;
    } while (accept(p, ','));
    return expect(p, ']', "to close the list");
}

static bool attr_value(parser *p, attr *a) {
    if (!enter(p)) return false;
    skip(p);
    a->pos = p->pos;
    bool ok = true;
    int c = ch(p);
    if (c == '[') {
        p->pos++;
        /* A list of integers becomes an A_ARRAY; anything else an A_LIST. */
        size_t save = p->pos;
        skip(p);
        if (is_digit(ch(p)) || ch(p) == '-' || ch(p) == ']') {
            size_t save2 = p->pos;
            bool was_failed = p->failed;
            (void)save2;
            /* try integers */
            size_t q = p->pos;
            bool ints = true;
            while (q < p->n && p->s[q] != ']') {
                char d = p->s[q];
                if (!(is_digit((unsigned char)d) || d == '-' || d == ',' || d == ' ' || d == '\n' ||
                      d == '\t' || d == '\r')) {
                    ints = false;
                    break;
                }
                q++;
            }
            (void)was_failed;
            if (ints) {
                ok = int_list_attr(p, a);
                leave(p);
                return ok;
            }
        }
        p->pos = save;
        a->kind = A_LIST;
        int32_t cap = 0;
        a->n = 0;
        if (!accept(p, ']')) {
            do {
                if (!grow_attrs(p, &a->items, NULL, NULL, a->n, &cap)) return false;
                memset(&a->items[a->n], 0, sizeof(attr));
                if (!attr_value(p, &a->items[a->n++])) return false;
            } while (accept(p, ','));
            ok = expect(p, ']', "to close the list");
        }
    } else if (c == '{') {
        p->pos++;
        a->kind = A_DICT;
        ok = attr_entries(p, a, '}');
    } else if (c == '"') {
        a->kind = A_STR;
        ok = string_lit(p, &a->text, &a->len);
        if (ok && accept(p, ':')) { /* "text" : type, rare */
            kiln__type t;
            ok = tensor_type(p, &t);
        }
    } else if (c == '@') {
        p->pos++;
        a->kind = A_SYM;
        if (peek(p, '"'))
            ok = string_lit(p, &a->text, &a->len);
        else if (!(a->len = ident(p, &a->text)))
            ok = perr(p, a->pos, "expected a symbol name");
    } else if (c == '#') {
        p->pos++;
        const char *id;
        size_t len = ident(p, &id);
        if (!len)
            ok = perr(p, a->pos, "expected an attribute after '#'");
        else if (!accept(p, '<'))
            ok = perr(p, p->pos, "expected '<' after #%.*s", (int)len, id);
        else if (span_is(id, len, "stablehlo.gather") || span_is(id, len, "stablehlo.scatter") ||
                 span_is(id, len, "stablehlo.dot")) {
            a->kind = A_STRUCT;
            ok = attr_entries(p, a, '>');
        } else if (span_is(id, len, "stablehlo.conv")) {
            a->kind = A_CONV;
            if (accept_kw(p, "raw"))
                ok = perr(p, p->pos, "#stablehlo.conv<raw ...> is not supported");
            else
                ok = conv_layouts(p, &a->conv) && expect(p, '>', "to close #stablehlo.conv");
        } else if (span_is(id, len, "stablehlo")) {
            /* #stablehlo<comparison_direction LT> */
            const char *k;
            if (!ident(p, &k)) {
                ok = perr(p, p->pos, "expected an enum kind");
            } else {
                a->kind = A_ENUM;
                skip(p);
                a->pos = p->pos;
                if (!(a->len = ident(p, &a->text)))
                    ok = perr(p, p->pos, "expected an enum value");
                else
                    ok = expect(p, '>', "to close the enum");
            }
        } else {
            a->kind = A_OPAQUE;
            p->pos--;
            ok = skip_angles(p, a->pos);
        }
    } else if (accept_kw(p, "array")) {
        a->kind = A_ARRAY;
        kiln_dtype dt;
        int32_t cap = 0;
        a->n = 0;
        ok = expect(p, '<', "after 'array'") && element_type(p, &dt);
        if (ok && accept(p, ':')) {
            do {
                int64_t v;
                skip(p);
                if (accept_kw(p, "true"))
                    v = 1;
                else if (accept_kw(p, "false"))
                    v = 0;
                else if (!int64_lit(p, &v, "in an array")) {
                    ok = false;
                    break;
                }
                if (a->n == cap) {
                    int32_t nc = cap ? cap * 2 : 8;
                    int64_t *ni = aalloc(p, (size_t)nc * sizeof *ni);
                    if (!ni) return false;
                    if (a->n) memcpy(ni, a->ints, (size_t)a->n * sizeof *ni);
                    a->ints = ni;
                    cap = nc;
                }
                a->ints[a->n++] = v;
            } while (accept(p, ','));
        }
        ok = ok && expect(p, '>', "to close the array");
    } else if (accept_kw(p, "dense")) {
        dense d;
        kiln__type t;
        memset(&d, 0, sizeof d);
        ok = expect(p, '<', "after 'dense'") && dense_body(p, &d);
        if (ok) {
            ok = expect(p, ':', "and a type after a dense attribute") && tensor_type(p, &t);
            if (ok && kiln_dtype_is_float(t.dtype))
                ok = perr(p, a->pos, "float dense attributes are not supported here");
            if (ok && t.shape.rank > 2) ok = perr(p, a->pos, "dense attribute of rank above 2");
            if (ok) {
                t.dtype = KILN_I64;
                kiln_tensor *x = dense_tensor(p, &d, &t);
                if (!x) {
                    ok = false;
                } else {
                    int64_t numel = 1;
                    for (int32_t i = 0; i < t.shape.rank; i++)
                        numel *= t.shape.dims[i];
                    a->kind = A_DENSE;
                    a->rank = t.shape.rank;
                    a->dims[0] = t.shape.rank > 0 ? t.shape.dims[0] : 1;
                    a->dims[1] = t.shape.rank > 1 ? t.shape.dims[1] : 1;
                    a->n = (int32_t)numel;
                    a->ints = aalloc(p, (size_t)numel * sizeof(int64_t));
                    if (!a->ints || numel > 1 << 20)
                        ok = a->ints ? perr(p, a->pos, "dense attribute too large") : false;
                    else if (numel)
                        memcpy(a->ints, kiln_tensor_data(x), (size_t)numel * sizeof(int64_t));
                    kiln_tensor_release(x);
                }
            }
        }
        dense_free(p, &d);
    } else if (accept_kw(p, "true") || accept_kw(p, "false")) {
        a->kind = A_BOOL;
        a->i = p->s[a->pos] == 't';
    } else if (accept_kw(p, "unit")) {
        a->kind = A_UNIT;
    } else if (is_digit(c) || c == '-') {
        elem e;
        ok = scalar_token(p, &e);
        if (ok) {
            if (e.kind == E_INT) {
                size_t save = p->pos;
                p->pos = e.pos;
                ok = int64_lit(p, &a->i, "attribute");
                p->pos = save;
                a->kind = A_INT;
            } else {
                a->kind = A_FLOAT;
            }
            size_t save = p->pos;
            if (ok && accept(p, ':')) {
                kiln_dtype dt;
                skip(p);
                if (accept_kw(p, "tensor"))
                    p->pos = save;
                else
                    ok = element_type(p, &dt);
            }
        }
    } else {
        char buf[16];
        ok = perr(p, a->pos, "expected an attribute value, found %s", char_text(p, buf));
    }
    leave(p);
    return ok;
}

static const attr *dict_get(const attr *d, const char *key) {
    if (!d) return NULL;
    for (int32_t i = 0; i < d->n; i++)
        if (span_is(d->keys[i], d->key_lens[i], key)) return &d->items[i];
    return NULL;
}

/* ---- conv dim numbers ------------------------------------------------------------------ */

/* [b, 0, 1, f] */
static bool conv_layout(parser *p, char c1, char c2, int64_t *d1, int64_t *d2, kiln_dims *spatial) {
    if (!expect(p, '[', "to open a convolution layout")) return false;
    int64_t pos = 0;
    *d1 = *d2 = -1;
    int64_t sp[KILN_MAX_RANK];
    bool seen[KILN_MAX_RANK] = {0};
    int32_t nsp = 0;
    do {
        skip(p);
        size_t at = p->pos;
        if (pos >= KILN_MAX_RANK) return perr(p, at, "convolution layout too long");
        if (is_digit(ch(p))) {
            int64_t s;
            if (!int64_lit(p, &s, "spatial dimension")) return false;
            if (s < 0 || s >= KILN_MAX_RANK || seen[s])
                return perr(p, at, "bad spatial dimension %" PRId64, s);
            seen[s] = true;
            sp[s] = pos;
            nsp++;
        } else if (ch(p) == c1 && !is_id_char(ch_at(p, p->pos + 1))) {
            p->pos++;
            *d1 = pos;
        } else if (ch(p) == c2 && !is_id_char(ch_at(p, p->pos + 1))) {
            p->pos++;
            *d2 = pos;
        } else {
            return perr(p, at, "expected '%c', '%c' or a spatial dimension in a convolution layout",
                        c1, c2);
        }
        pos++;
    } while (accept(p, ','));
    if (!expect(p, ']', "to close a convolution layout")) return false;
    if (*d1 < 0 || *d2 < 0) return perr(p, p->pos, "convolution layout lacks '%c' or '%c'", c1, c2);
    for (int32_t i = 0; i < nsp; i++)
        if (!seen[i])
            return perr(p, p->pos, "convolution layout skips spatial dimension %d", (int)i);
    spatial->count = nsp;
    for (int32_t i = 0; i < nsp; i++)
        spatial->v[i] = sp[i];
    return true;
}

static bool conv_layouts(parser *p, kiln_conv_params *c) {
    if (!conv_layout(p, 'b', 'f', &c->input_batch_dimension, &c->input_feature_dimension,
                     &c->input_spatial_dimensions))
        return false;
    skip(p);
    if (ch(p) != 'x') return perr(p, p->pos, "expected 'x' between convolution layouts");
    p->pos++;
    if (!conv_layout(p, 'i', 'o', &c->kernel_input_feature_dimension,
                     &c->kernel_output_feature_dimension, &c->kernel_spatial_dimensions))
        return false;
    skip(p);
    if (!(ch(p) == '-' && ch_at(p, p->pos + 1) == '>'))
        return perr(p, p->pos, "expected '->' between convolution layouts");
    p->pos += 2;
    return conv_layout(p, 'b', 'f', &c->output_batch_dimension, &c->output_feature_dimension,
                       &c->output_spatial_dimensions);
}

/* ---- attributes into kiln__attrs --------------------------------------------------------- */

static bool to_dims(parser *p, const attr *a, const char *name, kiln_dims *out) {
    out->count = 0;
    if (!a) return true;
    if (a->kind != A_ARRAY && !(a->kind == A_DENSE && a->rank <= 1))
        return perr(p, a->pos, "attribute '%s' must be a list of integers", name);
    if (a->n > KILN_MAX_RANK)
        return perr(p, a->pos, "attribute '%s' has more than %d entries", name, KILN_MAX_RANK);
    out->count = a->n;
    for (int32_t i = 0; i < a->n; i++)
        out->v[i] = a->ints[i];
    return true;
}

/* padding = dense<[[lo, hi], ...]> : tensor<Nx2xi64> */
static bool get_padding(parser *p, const attr *a, const char *name, int32_t rank, kiln_dims *lo,
                        kiln_dims *hi) {
    lo->count = hi->count = rank;
    for (int32_t i = 0; i < rank; i++)
        lo->v[i] = hi->v[i] = 0;
    if (!a) return true;
    if (a->kind == A_LIST) { /* [[1, 1], [0, 2]] */
        if (a->n != rank) return perr(p, a->pos, "attribute '%s' needs %d pairs", name, (int)rank);
        for (int32_t i = 0; i < rank; i++) {
            const attr *pr = &a->items[i];
            if (pr->kind != A_ARRAY || pr->n != 2)
                return perr(p, pr->pos, "attribute '%s' needs [low, high] pairs", name);
            lo->v[i] = pr->ints[0];
            hi->v[i] = pr->ints[1];
        }
        return true;
    }
    if (a->kind == A_ARRAY && a->n == 0 && rank == 0) return true;
    if (a->kind != A_DENSE || (a->n != 2 * rank && !(a->n == 1 && a->rank == 0)))
        return perr(p, a->pos, "attribute '%s' must be dense<...> : tensor<%dx2xi64>", name,
                    (int)rank);
    for (int32_t i = 0; i < rank; i++) {
        lo->v[i] = a->n == 1 ? a->ints[0] : a->ints[2 * i];
        hi->v[i] = a->n == 1 ? a->ints[0] : a->ints[2 * i + 1];
    }
    return true;
}

static bool enum_value(parser *p, const attr *a, const char *name, const char *const *names, int n,
                       int *out) {
    if (a->kind != A_ENUM) return perr(p, a->pos, "attribute '%s' must be an enum", name);
    for (int i = 0; i < n; i++)
        if (span_is(a->text, a->len, names[i])) {
            *out = i;
            return true;
        }
    return perr(p, a->pos, "unknown %s '%.*s'", name, (int)(a->len > 40 ? 40 : a->len), a->text);
}

static bool int_value(parser *p, const attr *a, const char *name, int64_t *out) {
    if (a->kind != A_INT) return perr(p, a->pos, "attribute '%s' must be an integer", name);
    *out = a->i;
    return true;
}

/* A struct attribute's fields (#stablehlo.gather<...>): lists and integers, each may be
 * left out (empty, 0). */
static bool struct_fields(parser *p, const kiln__attr_desc *d, const attr *s, kiln__attrs *a) {
    for (int32_t i = 0; i < d->n_fields; i++) {
        const kiln__attr_field *f = &d->fields[i];
        const attr *v = dict_get(s, f->name);
        void *at = kiln__attr_at(a, f->offset);
        if (f->kind == KILN__AK_DIMS) {
            if (!to_dims(p, v, f->name, at)) return false;
        } else if (v && !int_value(p, v, f->name, at)) {
            return false;
        }
    }
    return true;
}

/* One attribute of the op's schema from the dict (v: its entry, or NULL). */
static bool decode_attr(parser *p, kiln_op kind, const kiln__attr_desc *d, const attr *v,
                        size_t pos, int32_t rank0, kiln__attrs *a) {
    const char *op_name = kiln__op_get_info(kind)->name;
    void *at = kiln__attr_at(a, d->offset);
    if (!v && d->required) {
        if (d->kind == KILN__AK_STRUCT)
            return perr(p, pos, "%s needs %s = #stablehlo.%s<...>", op_name, d->name, d->mnemonic);
        if (d->kind == KILN__AK_CONV) return perr(p, pos, "%s needs %s", op_name, d->name);
        return perr(p, pos, "missing attribute '%s'", d->name);
    }
    switch (d->kind) {
    case KILN__AK_I64: *(int64_t *)at = d->fill; return !v || int_value(p, v, d->name, at);
    case KILN__AK_BOOL:
        if (v && v->kind != A_BOOL && v->kind != A_UNIT)
            return perr(p, v->pos, "attribute '%s' must be true or false", d->name);
        *(bool *)at = v && (v->kind == A_UNIT || v->i);
        return true;
    case KILN__AK_DIMS: return to_dims(p, v, d->name, at);
    case KILN__AK_PADDING:
        return get_padding(p, v, d->name, kiln__attr_count_of(d, a, rank0), at,
                           kiln__attr_at(a, d->offset2));
    case KILN__AK_ENUM: {
        int e = (int)d->fill;
        if (v && !enum_value(p, v, d->name, d->enum_names, d->n_enum, &e)) return false;
        *(int *)at = e;
        return true;
    }
    case KILN__AK_STRUCT:
        if (v->kind != A_STRUCT)
            return perr(p, v->pos, "%s needs %s = #stablehlo.%s<...>", op_name, d->name,
                        d->mnemonic);
        return struct_fields(p, d, v, a);
    case KILN__AK_CONV:
        if (v->kind != A_CONV) return perr(p, v->pos, "%s needs %s", op_name, d->name);
        *(kiln_conv_params *)at = v->conv;
        return true;
    case KILN__AK_NO_TRUE:
        if (v && v->kind == A_ARRAY)
            for (int32_t i = 0; i < v->n; i++)
                if (v->ints[i]) return perr(p, v->pos, "%s is not supported", d->name);
        return true;
    }
    return perr(p, pos, "internal: attribute kind %d", (int)d->kind);
}

/* Fills op attributes from the dict through the op's schema, then what its operand and
 * result types say. */
static bool build_attrs(parser *p, kiln_op kind, const attr *d, size_t pos, const kiln__type *in,
                        int32_t n_in, const kiln__type *out, int32_t n_out, kiln__attrs *a) {
    const kiln__op_syntax *syn = kiln__op_syntax_get(kind);
    int32_t rank0 = n_in > 0 ? in[0].shape.rank : 0;
    for (int32_t i = 0; i < syn->n_attrs; i++)
        if (!decode_attr(p, kind, &syn->attrs[i], dict_get(d, syn->attrs[i].name), pos, rank0, a))
            return false;
    kiln__op_types t = {.n_in = n_in, .n_out = n_out};
    if (n_in > 0) {
        t.in0_dtype = in[0].dtype;
        t.in0_rank = in[0].shape.rank;
    }
    for (int32_t i = 0; i < n_out && i < 2; i++) {
        t.out_dtype[i] = out[i].dtype;
        t.out_shape[i] = out[i].shape;
    }
    kiln__attrs_complete(kind, a, &t);
    return true;
}

/* ---- values ------------------------------------------------------------------------------ */

static uint32_t hash_name(const char *s, size_t len) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* %name: its span (without '%'). */
static bool value_name(parser *p, const char **name, size_t *len) {
    skip(p);
    size_t start = p->pos;
    if (ch(p) != '%') {
        char buf[16];
        return perr(p, start, "expected a value (%%name), found %s", char_text(p, buf));
    }
    p->pos++;
    size_t s = p->pos;
    while (is_id_char(ch(p)) || ch(p) == '-')
        p->pos++;
    if (p->pos == s) return perr(p, start, "expected a value name after '%%'");
    *name = p->s + s;
    *len = p->pos - s;
    return true;
}

/* Names are found through hash buckets (each a chain from its newest entry back), so a
 * lookup costs the same in a program of a million values as in one of ten. */
static pname *find_name(parser *p, const char *name, size_t len) {
    if (!p->name_heads) return NULL;
    uint32_t h = hash_name(name, len);
    for (int32_t i = p->name_heads[h & (uint32_t)(p->cap_heads - 1)]; i >= 0; i = p->names[i].chain)
        if (p->names[i].hash == h && p->names[i].len == len &&
            memcmp(p->names[i].name, name, len) == 0)
            return &p->names[i];
    return NULL;
}

/* Rebuilds the buckets for cap of them (a power of two). */
static bool names_rehash(parser *p, int32_t cap) {
    int32_t *heads =
        kiln__alloc(p->cx, (size_t)cap * sizeof *heads, _Alignof(int32_t), "parser names");
    if (!heads) return oom(p);
    for (int32_t i = 0; i < cap; i++)
        heads[i] = -1;
    for (int32_t i = 0; i < p->n_names; i++) {
        int32_t *head = &heads[p->names[i].hash & (uint32_t)(cap - 1)];
        p->names[i].chain = *head;
        *head = i;
    }
    if (p->name_heads) kiln__free(p->cx, p->name_heads, (size_t)p->cap_heads * sizeof *heads);
    p->name_heads = heads;
    p->cap_heads = cap;
    return true;
}

/* Forgets the names defined after the first `mark` (a region's, at its end). */
static void names_pop(parser *p, int32_t mark) {
    for (int32_t i = p->n_names - 1; i >= mark; i--)
        p->name_heads[p->names[i].hash & (uint32_t)(p->cap_heads - 1)] = p->names[i].chain;
    p->n_names = mark;
}

static bool define(parser *p, size_t pos, const char *name, size_t len, kiln__value **vals,
                   int32_t n) {
    if (find_name(p, name, len))
        return perr(p, pos, "redefinition of value '%%%.*s'", (int)(len > 60 ? 60 : len), name);
    if (p->n_names == p->cap_names) {
        int32_t cap = p->cap_names ? p->cap_names * 2 : 64;
        pname *items =
            kiln__alloc(p->cx, (size_t)cap * sizeof *items, _Alignof(pname), "parser names");
        if (!items) return oom(p);
        if (p->n_names) memcpy(items, p->names, (size_t)p->n_names * sizeof *items);
        if (p->names) kiln__free(p->cx, p->names, (size_t)p->cap_names * sizeof *items);
        p->names = items;
        p->cap_names = cap;
    }
    if (2 * (p->n_names + 1) > p->cap_heads &&
        !names_rehash(p, p->cap_heads ? 2 * p->cap_heads : 128))
        return false;
    uint32_t h = hash_name(name, len);
    int32_t *head = &p->name_heads[h & (uint32_t)(p->cap_heads - 1)];
    p->names[p->n_names] = (pname){name, len, h, vals, n, *head};
    *head = p->n_names++;
    return true;
}

/* %name or %name#i */
static kiln__value *use_value(parser *p) {
    skip(p);
    size_t start = p->pos;
    const char *name;
    size_t len;
    if (!value_name(p, &name, &len)) return NULL;
    int64_t index = -1;
    if (ch(p) == '#') {
        p->pos++;
        if (!int64_lit(p, &index, "result number")) return NULL;
    }
    pname *n = find_name(p, name, len);
    if (!n) {
        perr(p, start, "use of undefined value '%%%.*s'", (int)(len > 60 ? 60 : len), name);
        return NULL;
    }
    if (index < 0) {
        if (n->n != 1) {
            perr(p, start, "value '%%%.*s' has %d results: name one with #",
                 (int)(len > 60 ? 60 : len), name, (int)n->n);
            return NULL;
        }
        return n->vals[0];
    }
    if (index >= n->n) {
        perr(p, start, "result #%" PRId64 " of '%%%.*s' does not exist (it has %d)", index,
             (int)(len > 60 ? 60 : len), name, (int)n->n);
        return NULL;
    }
    return n->vals[index];
}

static bool operand_list(parser *p, kiln__value **out, int32_t *n, size_t *positions) {
    *n = 0;
    if (!peek(p, '%')) return true;
    do {
        if (*n >= MAX_VALUES) return perr(p, p->pos, "too many operands");
        skip(p);
        if (positions) positions[*n] = p->pos;
        kiln__value *v = use_value(p);
        if (!v) return false;
        out[(*n)++] = v;
        size_t save = p->pos;
        if (!accept(p, ',')) break;
        if (!peek(p, '%')) {
            p->pos = save;
            break;
        }
    } while (true);
    return true;
}

/* ---- ops --------------------------------------------------------------------------------- */

typedef struct lhs {
    const char *names[MAX_VALUES];
    size_t lens[MAX_VALUES];
    size_t pos[MAX_VALUES];
    int32_t n_names;
    int32_t count; /* results declared */
    bool grouped;  /* %x:N */
} lhs;

typedef struct opdesc {
    kiln_op kind;
    size_t pos;
    kiln__value *operands[MAX_VALUES];
    int32_t n_operands;
    attr dict;
    kiln__block *regions[MAX_VALUES];
    int32_t n_regions;
    sig s;
    bool have_sig;
    const char *callee;
    size_t callee_len, callee_pos;
} opdesc;

static bool block_body(parser *p, kiln__block *b, bool function, size_t open_pos);

typedef struct op_scratch {
    lhs l;
    opdesc o;
    struct op_scratch *next; /* in parser.free_scratch */
} op_scratch;

static bool dict_add(parser *p, attr *d, const char *key, attr v) {
    int32_t cap = d->n; /* grows by reallocating: few entries */
    attr *items = aalloc(p, (size_t)(cap + 1) * sizeof *items);
    const char **keys = aalloc(p, (size_t)(cap + 1) * sizeof *keys);
    size_t *lens = aalloc(p, (size_t)(cap + 1) * sizeof *lens);
    if (!items || !keys || !lens) return false;
    if (d->n) {
        memcpy(items, d->items, (size_t)d->n * sizeof *items);
        memcpy(keys, d->keys, (size_t)d->n * sizeof *keys);
        memcpy(lens, d->key_lens, (size_t)d->n * sizeof *lens);
    }
    items[d->n] = v;
    keys[d->n] = key;
    lens[d->n] = strlen(key);
    d->items = items;
    d->keys = keys;
    d->key_lens = lens;
    d->n++;
    return true;
}

static bool dict_merge(parser *p, attr *d, const attr *more) {
    for (int32_t i = 0; i < more->n; i++) {
        char *k = kiln__arena_strndup(&p->m->arena, more->keys[i], more->key_lens[i]);
        if (!k) return oom(p);
        if (!dict_add(p, d, k, more->items[i])) return false;
    }
    return true;
}

/* A region: { [^bb0(%a: T, ...):] ops stablehlo.return ... } */
static bool region(parser *p, kiln__block **out, const kiln__type *args, int32_t n_args,
                   const char *const *arg_names, const size_t *arg_lens) {
    skip(p);
    size_t open = p->pos;
    if (!expect(p, '{', "to open a region")) return false;
    if (!enter(p)) return false;
    kiln__block *b = kiln__block_new(p->m, NULL);
    if (!b) return oom(p);
    int32_t mark = p->n_names;
    bool saved_nested = p->nested;
    p->nested = true;
    for (int32_t i = 0; i < n_args; i++) {
        kiln__value *v = kiln__block_add_arg(p->m, b, args[i]);
        if (!v) return oom(p);
        if (arg_names && !define(p, open, arg_names[i], arg_lens[i], &b->args[i], 1)) return false;
    }
    if (peek(p, '^')) {
        size_t at = p->pos;
        p->pos++;
        const char *id;
        if (!ident(p, &id)) return perr(p, at, "expected a block name");
        if (accept(p, '(') && !accept(p, ')')) {
            do {
                const char *name;
                size_t len;
                skip(p);
                size_t vpos = p->pos;
                kiln__type t;
                if (!value_name(p, &name, &len) || !expect(p, ':', "after a block argument") ||
                    !tensor_type(p, &t))
                    return false;
                kiln__value *v = kiln__block_add_arg(p->m, b, t);
                if (!v) return oom(p);
                if (!define(p, vpos, name, len, &b->args[b->n_args - 1], 1)) return false;
            } while (accept(p, ','));
            if (!expect(p, ')', "to close the block arguments")) return false;
        }
        if (!expect(p, ':', "after the block header")) return false;
    }
    if (!block_body(p, b, false, open)) return false;
    names_pop(p, mark);
    p->nested = saved_nested;
    leave(p);
    *out = b;
    return true;
}

static bool regions_list(parser *p, opdesc *o) {
    /* ({...}, {...}) */
    if (!expect(p, '(', "to open the regions")) return false;
    do {
        if (o->n_regions >= MAX_VALUES) return perr(p, p->pos, "too many regions");
        if (!region(p, &o->regions[o->n_regions++], NULL, 0, NULL, NULL)) return false;
    } while (accept(p, ','));
    return expect(p, ')', "to close the regions");
}

static bool generic_op(parser *p, opdesc *o) {
    /* after "name": (operands) <{props}>? (regions)? {attrs}? : functype */
    if (!expect(p, '(', "to open the operands")) return false;
    if (!operand_list(p, o->operands, &o->n_operands, NULL)) return false;
    if (!expect(p, ')', "to close the operands")) return false;
    skip(p);
    if (ch(p) == '<' && ch_at(p, p->pos + 1) == '{') {
        p->pos += 2;
        attr props = {0};
        if (!attr_entries(p, &props, '}') || !expect(p, '>', "to close the properties"))
            return false;
        if (!dict_merge(p, &o->dict, &props)) return false;
    }
    if (peek(p, '(')) {
        if (!regions_list(p, o)) return false;
    }
    if (accept(p, '{')) {
        attr more = {0};
        if (!attr_entries(p, &more, '}') || !dict_merge(p, &o->dict, &more)) return false;
    }
    if (!expect(p, ':', "before the op's type")) return false;
    if (!functional_type(p, &o->s)) return false;
    if (!o->s.functional)
        return perr(p, o->s.pos, "expected a function type (operands) -> results");
    o->have_sig = true;
    return true;
}

static bool enum_word(parser *p, opdesc *o, const char *key) {
    attr v = {0};
    skip(p);
    v.pos = p->pos;
    v.kind = A_ENUM;
    if (!(v.len = ident(p, &v.text))) {
        char buf[16];
        return perr(p, v.pos, "expected %s, found %s", key, char_text(p, buf));
    }
    return dict_add(p, &o->dict, key, v);
}

static bool int_attr(parser *p, opdesc *o, const char *key) {
    attr v = {0};
    skip(p);
    v.pos = p->pos;
    v.kind = A_INT;
    if (!int64_lit(p, &v.i, key)) return false;
    return dict_add(p, &o->dict, key, v);
}

/* "[1] x [0]" into two dict entries */
static bool dims_pair(parser *p, opdesc *o, const char *k1, const char *k2) {
    attr a = {0}, b = {0};
    skip(p);
    a.pos = p->pos;
    if (!expect(p, '[', "to open a list") || !int_list_attr(p, &a)) return false;
    skip(p);
    if (ch(p) != 'x') return perr(p, p->pos, "expected 'x' between dimension lists");
    p->pos++;
    skip(p);
    b.pos = p->pos;
    if (!expect(p, '[', "to open a list") || !int_list_attr(p, &b)) return false;
    return dict_add(p, &o->dict, k1, a) && dict_add(p, &o->dict, k2, b);
}

static bool pretty_type(parser *p, opdesc *o) {
    if (!expect(p, ':', "before the op's type")) return false;
    if (!functional_type(p, &o->s)) return false;
    o->have_sig = true;
    return true;
}

/* Names and types of a region's arguments, kept on the heap: the regions they open nest
 * (a while in a while ...), and arrays of MAX_VALUES types in every level's stack frame
 * would overflow a thread's stack long before the nesting limit. */
typedef struct region_args {
    const char *names[MAX_VALUES];
    size_t lens[MAX_VALUES];
    kiln__type types[MAX_VALUES];
    const char *pair_names[MAX_VALUES];
    size_t pair_lens[MAX_VALUES];
    kiln__type pair_types[MAX_VALUES];
} region_args;

static bool with_region_args(parser *p, opdesc *o, bool (*fn)(parser *, opdesc *, region_args *)) {
    region_args *a = kiln__alloc(p->cx, sizeof *a, _Alignof(region_args), "parser region");
    if (!a) return oom(p);
    bool ok = fn(p, o, a);
    kiln__free(p->cx, a, sizeof *a);
    return ok;
}

/* After "reducer": reducer(%a: T, %c: T) (%b: T, %d: T) { ... } */
static bool reducer_region(parser *p, opdesc *o, region_args *a) {
    const char **names = a->names;
    size_t *lens = a->lens;
    kiln__type *types = a->types;
    int32_t na = 0;
    for (int g = 0; g < 2; g++) {
        if (!expect(p, '(', "to open reducer arguments")) return false;
        do {
            if (na >= MAX_VALUES) return perr(p, p->pos, "too many reducer arguments");
            if (!value_name(p, &names[na], &lens[na]) ||
                !expect(p, ':', "after a reducer argument") || !tensor_type(p, &types[na]))
                return false;
            na++;
        } while (accept(p, ','));
        if (!expect(p, ')', "to close reducer arguments")) return false;
    }
    /* JAX prints (%acc, %x) pairs per input: the region takes the accumulators, then the
     * inputs. */
    const char **rn = a->pair_names;
    size_t *rl = a->pair_lens;
    kiln__type *rt = a->pair_types;
    int32_t half = na / 2;
    for (int32_t i = 0; i < half; i++) {
        rn[i] = names[2 * i];
        rl[i] = lens[2 * i];
        rt[i] = types[2 * i];
        rn[half + i] = names[2 * i + 1];
        rl[half + i] = lens[2 * i + 1];
        rt[half + i] = types[2 * i + 1];
    }
    return region(p, &o->regions[o->n_regions++], rt, na, rn, rl);
}

/* After "stablehlo.while": (%iterArg = %c, ...) : T, T cond { } do { } */
static bool while_regions(parser *p, opdesc *o, region_args *a) {
    if (!expect(p, '(', "to open the loop variables")) return false;
    const char **names = a->names;
    size_t *lens = a->lens;
    int32_t n = 0;
    if (!accept(p, ')')) {
        do {
            if (n >= MAX_VALUES) return perr(p, p->pos, "too many loop variables");
            if (!value_name(p, &names[n], &lens[n]) || !expect(p, '=', "after a loop variable"))
                return false;
            kiln__value *v = use_value(p);
            if (!v) return false;
            o->operands[n++] = v;
        } while (accept(p, ','));
        if (!expect(p, ')', "to close the loop variables")) return false;
    }
    o->n_operands = n;
    kiln__type *types = a->types;
    int32_t nt = 0;
    if (n > 0) {
        if (!expect(p, ':', "before the loop types")) return false;
        size_t tp = p->pos;
        if (!type_list(p, types, MAX_VALUES, &nt)) return false;
        if (nt != n) return perr(p, tp, "%d loop variables but %d types", (int)n, (int)nt);
    }
    o->s.n_in = o->s.n_out = n;
    for (int32_t i = 0; i < n; i++)
        o->s.in[i] = o->s.out[i] = types[i];
    o->s.functional = true;
    o->have_sig = true;
    if (!expect_kw(p, "cond", "after the loop variables")) return false;
    if (!region(p, &o->regions[0], types, n, names, lens)) return false;
    if (!expect_kw(p, "do", "after the loop condition")) return false;
    if (!region(p, &o->regions[1], types, n, names, lens)) return false;
    o->n_regions = 2;
    return true;
}

/* An attribute's value in a pretty form ([1, 2], 3, or an enum's name) into the dict. */
static bool pretty_value(parser *p, opdesc *o, const kiln__attr_desc *d) {
    switch (d->kind) {
    case KILN__AK_I64: return int_attr(p, o, d->name);
    case KILN__AK_ENUM: return enum_word(p, o, d->name);
    case KILN__AK_DIMS: {
        attr v = {0};
        skip(p);
        v.pos = p->pos;
        return expect(p, '[', "to open the list") && int_list_attr(p, &v) &&
               dict_add(p, &o->dict, d->name, v);
    }
    default: return perr(p, p->pos, "internal: %s has no pretty form", d->name);
    }
}

/* The pretty form of the op schema (KILN__FORM_INLINE), after the op name:
 * [enum, ]operands[, keyword = value ...] : type */
static bool pretty_inline(parser *p, opdesc *o) {
    const kiln__op_syntax *syn = kiln__op_syntax_get(o->kind);
    bool any = false;
    for (int32_t i = 0; i < syn->n_attrs; i++) {
        const kiln__attr_desc *d = &syn->attrs[i];
        if (!d->in_pretty || !d->before_operands) continue;
        if (any && !expect(p, ',', "between attributes")) return false;
        if (!pretty_value(p, o, d)) return false;
        any = true;
    }
    if (kiln__op_get_info(o->kind)->n_operands != 0) {
        if (any && !expect(p, ',', "before the operands")) return false;
        if (!operand_list(p, o->operands, &o->n_operands, NULL)) return false;
        any = true;
    }
    for (int32_t i = 0; i < syn->n_attrs; i++) {
        const kiln__attr_desc *d = &syn->attrs[i];
        if (!d->in_pretty || d->before_operands) continue;
        if (d->pretty_optional) {
            if (!accept(p, ',')) continue;
        } else if (any && !expect(p, ',', "before an attribute")) {
            return false;
        }
        if (d->pretty &&
            (!expect_kw(p, d->pretty, "attribute") || !expect(p, '=', "after the attribute name")))
            return false;
        if (!pretty_value(p, o, d)) return false;
        any = true;
    }
    return pretty_type(p, o);
}

/* The pretty forms, after the op name: the schema's, and those of their own. */
static bool pretty_op(parser *p, opdesc *o, kiln__value **result_hint) {
    (void)result_hint;
    switch (o->kind) {
    case KILN_OP_CONSTANT: {
        skip(p);
        size_t at = p->pos;
        if (!accept_kw(p, "dense")) {
            char buf[16];
            return perr(p, at, "expected dense<...> after stablehlo.constant, found %s",
                        char_text(p, buf));
        }
        if (!expect(p, '<', "after 'dense'")) return false;
        dense d;
        bool ok = dense_body(p, &d) && pretty_type(p, o);
        if (ok && (o->s.functional || o->s.n_out != 1))
            ok = perr(p, o->s.pos, "a constant has one result type");
        if (ok) {
            kiln_tensor *t = dense_tensor(p, &d, &o->s.out[0]);
            if (!t)
                ok = false;
            else {
                ok = kiln__module_keep_constant(p->m, t) == KILN_OK;
                kiln_tensor_release(t);
                if (!ok)
                    oom(p);
                else
                    o->dict.rank = 1; /* marks "constant held as m->constants[last]" */
            }
        }
        dense_free(p, &d);
        return ok;
    }
    case KILN_OP_SLICE: {
        kiln__value *v = use_value(p);
        if (!v) return false;
        o->operands[o->n_operands++] = v;
        attr st = {.kind = A_ARRAY}, li = {.kind = A_ARRAY}, sd = {.kind = A_ARRAY};
        skip(p);
        st.pos = li.pos = sd.pos = p->pos;
        st.ints = aalloc(p, KILN_MAX_RANK * sizeof(int64_t));
        li.ints = aalloc(p, KILN_MAX_RANK * sizeof(int64_t));
        sd.ints = aalloc(p, KILN_MAX_RANK * sizeof(int64_t));
        if (!st.ints || !li.ints || !sd.ints) return false;
        if (!expect(p, '[', "to open the slice")) return false;
        if (!accept(p, ']')) {
            do {
                if (st.n >= KILN_MAX_RANK) return perr(p, p->pos, "too many slice dimensions");
                int64_t a, b, c = 1;
                if (!int64_lit(p, &a, "slice start") || !expect(p, ':', "in a slice") ||
                    !int64_lit(p, &b, "slice limit"))
                    return false;
                if (accept(p, ':') && !int64_lit(p, &c, "slice stride")) return false;
                st.ints[st.n++] = a;
                li.ints[li.n++] = b;
                sd.ints[sd.n++] = c;
            } while (accept(p, ','));
            if (!expect(p, ']', "to close the slice")) return false;
        }
        if (!dict_add(p, &o->dict, "start_indices", st) ||
            !dict_add(p, &o->dict, "limit_indices", li) || !dict_add(p, &o->dict, "strides", sd))
            return false;
        return pretty_type(p, o);
    }
    case KILN_OP_DOT_GENERAL: {
        if (!operand_list(p, o->operands, &o->n_operands, NULL)) return false;
        attr s = {0};
        s.kind = A_STRUCT;
        s.pos = p->pos;
        attr save = o->dict;
        o->dict = (attr){0};
        if (!expect(p, ',', "before the dimension numbers")) return false;
        if (accept_kw(p, "batching_dims")) {
            if (!expect(p, '=', "after batching_dims") ||
                !dims_pair(p, o, "lhs_batching_dimensions", "rhs_batching_dimensions") ||
                !expect(p, ',', "after batching_dims"))
                return false;
        }
        if (!expect_kw(p, "contracting_dims", "attribute") ||
            !expect(p, '=', "after contracting_dims") ||
            !dims_pair(p, o, "lhs_contracting_dimensions", "rhs_contracting_dimensions"))
            return false;
        s.items = o->dict.items;
        s.keys = o->dict.keys;
        s.key_lens = o->dict.key_lens;
        s.n = o->dict.n;
        o->dict = save;
        if (!dict_add(p, &o->dict, "dot_dimension_numbers", s)) return false;
        while (accept(p, ',')) {
            const char *id;
            skip(p);
            size_t at = p->pos;
            size_t len = ident(p, &id);
            if (!len || !expect(p, '=', "after an attribute name"))
                return perr(p, at, "expected an attribute");
            attr junk = {0};
            skip(p);
            if (ch(p) == '[') {
                /* precision = [DEFAULT, DEFAULT] */
                int depth = 0;
                do {
                    if (ch(p) == '[') depth++;
                    if (ch(p) == ']') depth--;
                    p->pos++;
                } while (depth > 0 && p->pos < p->n);
                if (depth) return perr(p, at, "unterminated list");
            } else if (ch(p) == '<') {
                if (!skip_angles(p, at)) return false;
            } else if (!attr_value(p, &junk)) {
                return false;
            }
        }
        if (accept(p, '{')) {
            attr more = {0};
            if (!attr_entries(p, &more, '}')) return false;
        }
        return pretty_type(p, o);
    }
    case KILN_OP_CONVOLUTION: {
        if (!expect(p, '(', "to open the operands") ||
            !operand_list(p, o->operands, &o->n_operands, NULL) ||
            !expect(p, ')', "to close the operands"))
            return false;
        attr dn = {0};
        dn.kind = A_CONV;
        skip(p);
        dn.pos = p->pos;
        if (!expect_kw(p, "dim_numbers", "after the operands") ||
            !expect(p, '=', "after dim_numbers") || !conv_layouts(p, &dn.conv))
            return false;
        if (!dict_add(p, &o->dict, "dimension_numbers", dn)) return false;
        if (!expect(p, ',', "before window") || !expect_kw(p, "window", "attribute") ||
            !expect(p, '=', "after window") || !expect(p, '{', "to open the window"))
            return false;
        if (!accept(p, '}')) {
            do {
                const char *id;
                skip(p);
                size_t at = p->pos;
                size_t len = ident(p, &id);
                if (!len) return perr(p, at, "expected a window attribute");
                if (!expect(p, '=', "after a window attribute")) return false;
                attr v = {0};
                if (!attr_value(p, &v)) return false;
                const char *key = span_is(id, len, "stride")       ? "window_strides"
                                  : span_is(id, len, "pad")        ? "padding"
                                  : span_is(id, len, "lhs_dilate") ? "lhs_dilation"
                                  : span_is(id, len, "rhs_dilate") ? "rhs_dilation"
                                  : span_is(id, len, "reverse")    ? "window_reversal"
                                                                   : NULL;
                if (!key)
                    return perr(p, at, "unknown window attribute '%.*s'",
                                (int)(len > 40 ? 40 : len), id);
                if (v.kind == A_LIST && v.n == 0) v.kind = A_ARRAY;
                if (span_is(id, len, "reverse") && v.kind == A_LIST) {
                    /* [false, true] */
                    for (int32_t i = 0; i < v.n; i++)
                        if (v.items[i].kind == A_BOOL && v.items[i].i)
                            return perr(p, at, "window reversal is not supported");
                    continue;
                }
                if (!dict_add(p, &o->dict, key, v)) return false;
            } while (accept(p, ','));
            if (!expect(p, '}', "to close the window")) return false;
        }
        if (accept(p, '{')) {
            attr more = {0};
            if (!attr_entries(p, &more, '}') || !dict_merge(p, &o->dict, &more)) return false;
        }
        return pretty_type(p, o);
    }
    case KILN_OP_REDUCE: {
        /* (%a init: %b), ... applies stablehlo.add across dimensions = [1] : type
           or ... across dimensions = [..] : type reducer(%a: T, %b: T) (...) { ... } */
        /* The inputs go to operands[0..k-1], the inits first to the upper half, then right
         * after the inputs (no arrays on the stack of a frame that regions nest in). */
        int32_t k = 0;
        kiln__value **ins = o->operands, **inits = o->operands + MAX_VALUES / 2;
        do {
            if (k >= MAX_VALUES / 2) return perr(p, p->pos, "too many operands");
            if (!expect(p, '(', "to open a reduce operand")) return false;
            if (!(ins[k] = use_value(p))) return false;
            if (!expect_kw(p, "init", "in a reduce operand") || !expect(p, ':', "after 'init'"))
                return false;
            if (!(inits[k] = use_value(p))) return false;
            if (!expect(p, ')', "to close a reduce operand")) return false;
            k++;
        } while (accept(p, ','));
        for (int32_t i = 0; i < k; i++)
            o->operands[k + i] = inits[i];
        o->n_operands = 2 * k;
        kiln_op body = KILN_OP_COUNT;
        size_t body_pos = 0;
        if (accept_kw(p, "applies")) {
            skip(p);
            body_pos = p->pos;
            const char *id;
            size_t len = ident(p, &id);
            if (len < 11 || memcmp(id, "stablehlo.", 10) != 0)
                return perr(p, body_pos, "expected stablehlo.<op> after 'applies'");
            body = kiln__op_from_name(id + 10, len - 10);
            if (body == KILN_OP_COUNT || kiln__op_get_info(body)->n_operands != 2 ||
                !kiln__op_has(body, KILN_OPF_ELEMENTWISE))
                return perr(p, body_pos, "unsupported reducer '%.*s'", (int)(len > 40 ? 40 : len),
                            id);
        }
        if (!expect_kw(p, "across", "in a reduce") || !expect_kw(p, "dimensions", "in a reduce") ||
            !expect(p, '=', "after dimensions"))
            return false;
        attr v = {0};
        skip(p);
        v.pos = p->pos;
        if (!expect(p, '[', "to open the list") || !int_list_attr(p, &v) ||
            !dict_add(p, &o->dict, "dimensions", v))
            return false;
        if (!pretty_type(p, o)) return false;
        if (body != KILN_OP_COUNT) {
            /* build the region: ^bb0(acc.., x..): op per pair */
            if (k != 1) return perr(p, body_pos, "'applies' needs one input");
            kiln__block *b = kiln__block_new(p->m, NULL);
            if (!b) return oom(p);
            kiln__type et = {.dtype = ins[0]->type.dtype, .shape = {.rank = 0}};
            kiln__value *x = kiln__block_add_arg(p->m, b, et),
                        *y = kiln__block_add_arg(p->m, b, et);
            if (!x || !y) return oom(p);
            kiln__value *xy[2] = {x, y};
            kiln__attrs ia = {0};
            ia.fn = "stablehlo.reduce";
            kiln__ir_op *op = kiln__block_append(p->m, b, body, &ia, xy, 2, &et, 1, 0);
            if (!op || kiln__block_set_results(p->m, b, op->results, 1) != KILN_OK) return oom(p);
            o->regions[o->n_regions++] = b;
        } else {
            /* reducer(%a: T, %c: T) (%b: T, %d: T) { ... } */
            if (!expect_kw(p, "reducer", "after the reduce's type")) return false;
            if (!with_region_args(p, o, reducer_region)) return false;
        }
        return true;
    }
    case KILN_OP_WHILE: return with_region_args(p, o, while_regions);
    case KILN_OP_OPTIMIZATION_BARRIER:
        if (accept(p, '(')) {
            if (!expect(p, ')', "after stablehlo.optimization_barrier(")) return false;
            o->s.n_in = o->s.n_out = 0;
            o->s.functional = true;
            o->have_sig = true;
            return true;
        }
        if (!operand_list(p, o->operands, &o->n_operands, NULL)) return false;
        if (!expect(p, ':', "before the op's types")) return false;
        if (!type_list(p, o->s.in, MAX_VALUES, &o->s.n_in)) return false;
        o->s.n_out = o->s.n_in;
        memcpy(o->s.out, o->s.in, (size_t)o->s.n_in * sizeof o->s.in[0]);
        o->s.functional = true;
        o->have_sig = true;
        return true;
    case KILN_OP_SELECT: {
        if (!operand_list(p, o->operands, &o->n_operands, NULL)) return false;
        if (!expect(p, ':', "before the op's type")) return false;
        skip(p);
        o->s.pos = p->pos;
        if (peek(p, '(')) {
            if (!functional_type(p, &o->s)) return false;
        } else {
            kiln__type t[2];
            int32_t nt;
            if (!type_list(p, t, 2, &nt)) return false;
            if (nt != 2) return perr(p, o->s.pos, "select takes 'pred type, result type'");
            o->s.functional = true;
            o->s.n_in = 3;
            o->s.in[0] = t[0];
            o->s.in[1] = o->s.in[2] = o->s.out[0] = t[1];
            o->s.n_out = 1;
        }
        o->have_sig = true;
        return true;
    }
    default: break;
    }
    switch (kiln__op_syntax_get(o->kind)->form) {
    case KILN__FORM_PLAIN:
        return operand_list(p, o->operands, &o->n_operands, NULL) && pretty_type(p, o);
    case KILN__FORM_INLINE: return pretty_inline(p, o);
    default:
        return perr(p, o->pos, "stablehlo.%s has no pretty form here: use the generic form",
                    kiln__op_get_info(o->kind)->name);
    }
}

static const kiln_region *builtin_region(const kiln__block *b, kiln_op owner) {
    if (!b || b->n_args != 2 || b->n_results != 1 || !b->first || b->first != b->last) return NULL;
    const kiln__ir_op *op = b->first;
    if (op->n_operands != 2 || op->n_results != 1 || b->results[0] != op->results[0]) return NULL;
    bool same = op->operands[0] == b->args[0] && op->operands[1] == b->args[1];
    if (!same) return NULL;
    if (owner == KILN_OP_SORT || owner == KILN_OP_SELECT_AND_SCATTER) {
        if (op->kind != KILN_OP_COMPARE) return NULL;
        kiln_compare_type ct = op->attrs.u.compare.type;
        if (ct == KILN_CMP_TOTALORDER) return NULL;
        if (owner == KILN_OP_SORT && kiln_dtype_is_float(op->operands[0]->type.dtype)) return NULL;
        switch (op->attrs.u.compare.direction) {
        case KILN_CMP_LT: return kiln_region_less();
        case KILN_CMP_GT: return kiln_region_greater();
        case KILN_CMP_GE: return kiln_region_greater_equal();
        case KILN_CMP_LE: return kiln_region_less_equal();
        default: return NULL;
        }
    }
    if (owner == KILN_OP_SORT) return NULL;
    switch (op->kind) {
    case KILN_OP_ADD: return kiln_region_add();
    case KILN_OP_MULTIPLY: return kiln_region_multiply();
    case KILN_OP_MAXIMUM: return kiln_region_maximum();
    case KILN_OP_MINIMUM: return kiln_region_minimum();
    case KILN_OP_AND: return kiln_region_and();
    case KILN_OP_OR: return kiln_region_or();
    default: return NULL;
    }
}

static kiln_status never_called(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                                void *user) {
    (void)args, (void)results, (void)user;
    return kiln_ctx_set_error(cx, KILN_INTERNAL, "internal: the parser called a region");
}

/* The check dialect */
static bool check_op(parser *p, size_t pos, const char *name, size_t len, bool custom);

/* Not inlined: its arrays live only while an op is appended, not while regions nest. */
static __attribute__((noinline)) bool append_op(parser *p, kiln__block *b, opdesc *o, lhs *l) {
    const kiln__op_info *info = kiln__op_get_info(o->kind);
    char tb[80], tb2[80];
    if (!o->have_sig) return perr(p, o->pos, "missing type");
    /* operand types */
    if (o->s.functional) {
        if (o->s.n_in != o->n_operands)
            return perr(p, o->s.pos, "%d operands but %d operand types", (int)o->n_operands,
                        (int)o->s.n_in);
    } else {
        o->s.n_in = o->n_operands;
        for (int32_t i = 0; i < o->n_operands; i++)
            o->s.in[i] = o->s.out[0];
        if (info->n_results >= 0 && info->n_results != 1)
            return perr(p, o->s.pos, "stablehlo.%s needs a function type", info->name);
    }
    for (int32_t i = 0; i < o->n_operands; i++)
        if (!same_type(&o->operands[i]->type, &o->s.in[i]))
            return perr(p, o->s.pos, "type mismatch: operand %d is %s, the op's type says %s",
                        (int)i, type_str(&o->operands[i]->type, tb, sizeof tb),
                        type_str(&o->s.in[i], tb2, sizeof tb2));
    if (info->n_operands >= 0 && o->n_operands != info->n_operands)
        return perr(p, o->pos, "stablehlo.%s takes %d operands, got %d", info->name,
                    info->n_operands, (int)o->n_operands);
    if (info->n_results >= 0 && o->s.n_out != info->n_results)
        return perr(p, o->s.pos, "stablehlo.%s has %d results, the type gives %d", info->name,
                    info->n_results, (int)o->s.n_out);
    if (l->count >= 0 && l->count != o->s.n_out)
        return perr(p, o->pos, "%d results named but the op has %d", (int)l->count,
                    (int)o->s.n_out);
    kiln__attrs a;
    memset(&a, 0, sizeof a);
    a.fn = "stablehlo parser";
    if (!build_attrs(p, o->kind, &o->dict, o->pos, o->s.in, o->s.n_in, o->s.out, o->s.n_out, &a))
        return false;
    if (o->kind == KILN_OP_CONSTANT) {
        if (o->dict.rank != 1) return perr(p, o->pos, "a constant needs a value");
        a.u.constant = p->m->constants[p->m->n_constants - 1];
    }
    bool regions_op = kiln__op_has(o->kind, KILN_OPF_REGIONS) || o->kind == KILN_OP_CALL;
    if (!regions_op && o->n_regions)
        return perr(p, o->pos, "stablehlo.%s has no regions", info->name);
    int32_t want_regions = o->n_regions;
    switch (o->kind) {
    case KILN_OP_SORT:
    case KILN_OP_REDUCE:
    case KILN_OP_REDUCE_WINDOW:
    case KILN_OP_SCATTER: want_regions = 1; break;
    case KILN_OP_SELECT_AND_SCATTER:
    case KILN_OP_WHILE:
    case KILN_OP_IF: want_regions = 2; break;
    case KILN_OP_CALL: want_regions = 1; break;
    case KILN_OP_CASE:
        if (o->n_regions < 1) return perr(p, o->pos, "stablehlo.case needs at least one branch");
        break;
    default: break;
    }
    if (o->kind != KILN_OP_CALL && o->n_regions != want_regions)
        return perr(p, o->pos, "stablehlo.%s needs %d regions, got %d", info->name,
                    (int)want_regions, (int)o->n_regions);
    a.n_regions = want_regions;
    for (int32_t r = 0; r < want_regions && r < 2 && o->kind != KILN_OP_CALL; r++)
        a.region[r] = builtin_region(o->regions[r], o->kind);
    kiln__ir_op *op = kiln__block_append(p->m, b, o->kind, &a, o->operands, o->n_operands, o->s.out,
                                         o->s.n_out, want_regions);
    if (!op) return oom(p);
    for (int32_t r = 0; r < o->n_regions && o->kind != KILN_OP_CALL; r++) {
        op->regions[r] = o->regions[r];
        o->regions[r]->parent = op;
    }
    /* region signatures */
    for (int32_t r = 0; r < o->n_regions && o->kind != KILN_OP_CALL; r++) {
        kiln__type *args = leaf_types(p);
        if (!args) return false;
        int32_t n_res = 0;
        int32_t n = kiln__region_signature(p->cx, o->kind, &op->attrs, o->s.in, o->n_operands, r,
                                           args, MAX_VALUES, &n_res);
        if (n < 0) return perr(p, o->pos, "%s", kiln_ctx_error_message(p->cx));
        const kiln__block *rb = o->regions[r];
        if (rb->n_args != n)
            return perr(p, o->pos, "region %d of stablehlo.%s takes %d arguments, got %d",
                        (int)r + 1, info->name, (int)n, (int)rb->n_args);
        for (int32_t i = 0; i < n; i++)
            if (!same_type(&rb->args[i]->type, &args[i]))
                return perr(p, o->pos, "region %d argument %d of stablehlo.%s is %s; expected %s",
                            (int)r + 1, (int)i, info->name,
                            type_str(&rb->args[i]->type, tb, sizeof tb),
                            type_str(&args[i], tb2, sizeof tb2));
        if (rb->n_results != n_res)
            return perr(p, o->pos, "region %d of stablehlo.%s returns %d values; expected %d",
                        (int)r + 1, info->name, (int)rb->n_results, (int)n_res);
        if (o->kind == KILN_OP_IF || o->kind == KILN_OP_CASE ||
            (o->kind == KILN_OP_WHILE && r == 1)) {
            for (int32_t i = 0; i < n_res; i++)
                if (!same_type(&rb->results[i]->type, &o->s.out[i]))
                    return perr(
                        p, o->pos,
                        "region %d of stablehlo.%s returns %s as result %d; the op's type says %s",
                        (int)r + 1, info->name, type_str(&rb->results[i]->type, tb, sizeof tb),
                        (int)i, type_str(&o->s.out[i], tb2, sizeof tb2));
        }
        if (o->kind == KILN_OP_WHILE && r == 0 &&
            (rb->results[0]->type.dtype != KILN_BOOL || rb->results[0]->type.shape.rank != 0))
            return perr(p, o->pos, "the condition of stablehlo.while must return tensor<i1>");
    }
    if (o->kind == KILN_OP_WHILE)
        for (int32_t i = 0; i < o->n_operands; i++)
            if (!same_type(&o->s.in[i], &o->s.out[i]))
                return perr(p, o->s.pos, "stablehlo.while results must match its operands");
    /* inference */
    if (!kiln__op_has(o->kind, KILN_OPF_CONTROL) && o->kind != KILN_OP_CALL) {
        kiln__attrs bound;
        kiln_region storage[MAX_VALUES];
        kiln__ir_bind_regions(op, &bound, storage, never_called);
        kiln__type *out = leaf_types(p);
        if (!out) return false;
        if (kiln__infer(p->cx, o->kind, &bound, o->s.in, o->n_operands, out, o->s.n_out) !=
            KILN_OK) {
            char msg[400];
            snprintf(msg, sizeof msg, "%s", kiln_ctx_error_message(p->cx));
            return perr(p, o->pos, "%s", msg);
        }
        for (int32_t i = 0; i < o->s.n_out; i++)
            if (!same_type(&out[i], &o->s.out[i]))
                return perr(p, o->s.pos,
                            "type mismatch: stablehlo.%s result %d is %s, the op's type says %s",
                            info->name, (int)i, type_str(&out[i], tb, sizeof tb),
                            type_str(&o->s.out[i], tb2, sizeof tb2));
    }
    if (o->kind == KILN_OP_CALL) {
        if (p->n_calls == p->cap_calls) {
            int32_t cap = p->cap_calls ? p->cap_calls * 2 : 8;
            pcall *items =
                kiln__alloc(p->cx, (size_t)cap * sizeof *items, _Alignof(pcall), "parser calls");
            if (!items) return oom(p);
            if (p->n_calls) memcpy(items, p->calls, (size_t)p->n_calls * sizeof *items);
            if (p->calls) kiln__free(p->cx, p->calls, (size_t)p->cap_calls * sizeof *items);
            p->calls = items;
            p->cap_calls = cap;
        }
        p->calls[p->n_calls++] = (pcall){op, o->callee, o->callee_len, o->callee_pos};
    }
    /* names */
    if (l->grouped) {
        if (!define(p, l->pos[0], l->names[0], l->lens[0], op->results, op->n_results))
            return false;
    } else {
        for (int32_t i = 0; i < l->n_names; i++)
            if (!define(p, l->pos[i], l->names[i], l->lens[i], &op->results[i], 1)) return false;
    }
    return true;
}

/* An op's scratch (its left-hand side and description, some 160 KB of arrays) comes from
 * the parser's free list: one per nesting level is made for the whole parse, instead of an
 * allocation per op, and only the fields before the arrays are cleared. */
static op_scratch *scratch_get(parser *p) {
    op_scratch *s = p->free_scratch;
    if (s)
        p->free_scratch = s->next;
    else if (!(s = kiln__alloc(p->cx, sizeof *s, _Alignof(op_scratch), "parser op")))
        return NULL;
    lhs *l = &s->l;
    l->n_names = 0, l->count = -1, l->grouped = false;
    opdesc *o = &s->o;
    o->kind = (kiln_op)0, o->pos = 0, o->n_operands = 0, o->n_regions = 0;
    memset(&o->dict, 0, sizeof o->dict);
    o->s.n_in = o->s.n_out = 0, o->s.functional = false, o->s.pos = 0;
    o->have_sig = false, o->callee = NULL, o->callee_len = 0, o->callee_pos = 0;
    return s;
}

static void scratch_put(parser *p, op_scratch *s) {
    s->next = p->free_scratch;
    p->free_scratch = s;
}

/* One op line (not a terminator). */
static bool op_line(parser *p, kiln__block *b) {
    op_scratch *scratch = scratch_get(p);
    if (!scratch) return oom(p);
    lhs *l = &scratch->l;
    opdesc *o = &scratch->o;
    bool ok = true;
    skip(p);
    if (ch(p) == '%') {
        l->count = 0;
        do {
            if (l->n_names >= MAX_VALUES) {
                ok = perr(p, p->pos, "too many results");
                break;
            }
            skip(p);
            l->pos[l->n_names] = p->pos;
            if (!value_name(p, &l->names[l->n_names], &l->lens[l->n_names])) {
                ok = false;
                break;
            }
            l->n_names++;
            if (ch(p) == ':') {
                p->pos++;
                int64_t c;
                if (!int64_lit(p, &c, "result count") || c < 1 || c > MAX_VALUES) {
                    ok = perr(p, p->pos, "bad result count");
                    break;
                }
                if (l->n_names != 1 || peek(p, ',')) {
                    ok = perr(p, p->pos, "%%name:N names all of an op's results");
                    break;
                }
                l->grouped = true;
                l->count = (int32_t)c;
            } else {
                l->count++;
            }
        } while (accept(p, ','));
        if (ok) ok = expect(p, '=', "after the result names");
    }
    if (ok) {
        skip(p);
        o->pos = p->pos;
        const char *id;
        size_t len;
        bool generic = false;
        if (ch(p) == '"') {
            generic = true;
            ok = string_lit(p, &id, &len);
        } else {
            len = ident(p, &id);
            if (!len) {
                char buf[16];
                ok = perr(p, o->pos, "expected an operation, found %s", char_text(p, buf));
            }
        }
        if (ok) {
            if (span_is(id, len, "func.call") || span_is(id, len, "call")) {
                skip(p);
                o->callee_pos = p->pos;
                o->kind = KILN_OP_CALL;
                if (!expect(p, '@', "before the callee"))
                    ok = false;
                else if (peek(p, '"'))
                    ok = string_lit(p, &o->callee, &o->callee_len);
                else if (!(o->callee_len = ident(p, &o->callee)))
                    ok = perr(p, o->callee_pos, "expected the callee's name");
                ok = ok && expect(p, '(', "to open the call's operands") &&
                     operand_list(p, o->operands, &o->n_operands, NULL) &&
                     expect(p, ')', "to close the call's operands") &&
                     expect(p, ':', "before the call's type") && functional_type(p, &o->s);
                if (ok && !o->s.functional) ok = perr(p, o->s.pos, "a call needs a function type");
                o->have_sig = ok;
                if (ok) ok = append_op(p, b, o, l);
            } else if (len > 6 && memcmp(id, "check.", 6) == 0) {
                if (l->count >= 0)
                    ok = perr(p, o->pos, "check ops have no results");
                else
                    ok = check_op(p, o->pos, id, len, false);
            } else if (span_is(id, len, "stablehlo.custom_call")) {
                skip(p);
                size_t at = p->pos;
                const char *target = NULL;
                size_t tlen = 0;
                if (generic) {
                    ok = perr(p, o->pos, "unsupported op 'stablehlo.custom_call' (generic form)");
                } else if (accept(p, '@')) {
                    if (peek(p, '"'))
                        ok = string_lit(p, &target, &tlen);
                    else
                        tlen = ident(p, &target);
                }
                if (ok && tlen > 6 && memcmp(target, "check.", 6) == 0) {
                    if (l->count > 0)
                        ok = perr(p, o->pos, "check ops have no results");
                    else
                        ok = check_op(p, at, target, tlen, true);
                } else if (ok) {
                    ok = perr(p, o->pos, "unsupported custom_call target '%.*s'",
                              (int)(tlen > 60 ? 60 : tlen), target ? target : "");
                }
            } else {
                kiln_op kind = KILN_OP_COUNT;
                if (len > 10 && memcmp(id, "stablehlo.", 10) == 0)
                    kind = kiln__op_from_name(id + 10, len - 10);
                if (kind == KILN_OP_COUNT || kind == KILN_OP_CALL) {
                    ok = perr(p, o->pos, "unknown op '%.*s'", (int)(len > 60 ? 60 : len), id);
                } else {
                    o->kind = kind;
                    ok = generic ? generic_op(p, o) : pretty_op(p, o, NULL);
                    if (ok && generic && kind == KILN_OP_CONSTANT) {
                        const attr *v = dict_get(&o->dict, "value");
                        ok = perr(
                            p, o->pos,
                            v ? "generic stablehlo.constant is not supported: use the pretty form"
                              : "a constant needs a value");
                    }
                    if (ok) ok = append_op(p, b, o, l);
                }
            }
        }
    }
    scratch_put(p, scratch);
    return ok;
}

/* A block's terminator after its keyword (or, generic, at its quoted name): the returned
 * values, their types, and the closing brace. Not inlined: its arrays (some 80 KB) then
 * live only while a terminator is read, not in every nesting level of block_body. */
static __attribute__((noinline)) bool block_terminator(parser *p, kiln__block *b, bool generic) {
    if (generic) {
        const char *s;
        size_t l;
        string_lit(p, &s, &l);
        kiln__value *vals[MAX_VALUES];
        int32_t n = 0;
        if (!expect(p, '(', "to open the operands") || !operand_list(p, vals, &n, NULL) ||
            !expect(p, ')', "to close the operands"))
            return false;
        if (!expect(p, ':', "before the type") || !skip_functional_type(p)) return false;
        if (kiln__block_set_results(p->m, b, vals, n) != KILN_OK) return oom(p);
        return expect(p, '}', "after the terminator");
    }
    kiln__value *vals[MAX_VALUES];
    int32_t n = 0;
    skip(p);
    if (!operand_list(p, vals, &n, NULL)) return false;
    if (n > 0) {
        if (!expect(p, ':', "before the returned types")) return false;
        kiln__type *ts = leaf_types(p);
        int32_t nt;
        size_t tp = p->pos;
        if (!ts || !type_list(p, ts, MAX_VALUES, &nt)) return false;
        if (nt != n) return perr(p, tp, "%d values returned but %d types", (int)n, (int)nt);
        char tb[80], tb2[80];
        for (int32_t i = 0; i < n; i++)
            if (!same_type(&vals[i]->type, &ts[i]))
                return perr(p, tp, "type mismatch: returned value %d is %s, declared %s", (int)i,
                            type_str(&vals[i]->type, tb, sizeof tb),
                            type_str(&ts[i], tb2, sizeof tb2));
    }
    if (kiln__block_set_results(p->m, b, vals, n) != KILN_OK) return oom(p);
    return expect(p, '}', "after the terminator");
}

/* Ops up to the terminator, then '}'. */
static bool block_body(parser *p, kiln__block *b, bool function, size_t open_pos) {
    for (;;) {
        skip(p);
        if (p->pos >= p->n) return perr(p, open_pos, "unterminated region: expected '}'");
        if (ch(p) == '}')
            return perr(p, p->pos, "missing terminator (%s) before '}'",
                        function ? "return" : "stablehlo.return");
        size_t at = p->pos;
        bool term = false;
        if (accept_kw(p, "stablehlo.return")) {
            if (function)
                return perr(p, at, "stablehlo.return ends a region, not a function: use return");
            term = true;
        } else if (accept_kw(p, "func.return") || accept_kw(p, "return")) {
            if (!function)
                return perr(p, at, "return ends a function; a region ends with stablehlo.return");
            term = true;
        } else if (ch(p) == '"' && (p->n - p->pos > 18) &&
                   (memcmp(p->s + p->pos, "\"stablehlo.return\"", 18) == 0 ||
                    memcmp(p->s + p->pos, "\"func.return\"", 13) == 0)) {
            return block_terminator(p, b, true);
        }
        if (term) return block_terminator(p, b, false);
        if (!op_line(p, b)) return false;
    }
}

/* ---- checks ---------------------------------------------------------------------------- */

static bool add_extra(parser *p, pfunc *f, kiln__value *v, int32_t *index) {
    if (f->n_extra == f->cap_extra) {
        int32_t cap = f->cap_extra ? f->cap_extra * 2 : 8;
        kiln__value **items = aalloc(p, (size_t)cap * sizeof *items);
        if (!items) return false;
        if (f->n_extra) memcpy(items, f->extra, (size_t)f->n_extra * sizeof *items);
        f->extra = items;
        f->cap_extra = cap;
    }
    *index = f->n_extra;
    f->extra[f->n_extra++] = v;
    return true;
}

static int32_t line_of(const parser *p, size_t pos) {
    int32_t line = p->first_line;
    for (size_t i = 0; i < pos && i < p->n; i++)
        if (p->s[i] == '\n') line++;
    return line;
}

static double attr_number(const parser *p, const attr *a) {
    if (a->kind == A_INT) return (double)a->i;
    size_t e = a->pos;
    while (e < p->n && (is_digit((unsigned char)p->s[e]) || p->s[e] == '+' || p->s[e] == '-' ||
                        p->s[e] == '.' || p->s[e] == 'e' || p->s[e] == 'E'))
        e++;
    return decimal_value(p->s + a->pos, e - a->pos, false, NULL);
}

static bool check_op(parser *p, size_t pos, const char *name, size_t len, bool custom) {
    if (!p->allow_checks)
        return perr(p, pos, "check op '%.*s' needs allow_checks", (int)(len > 60 ? 60 : len), name);
    if (p->nested) return perr(p, pos, "check ops must be at the top level of a function");
    pcheck c;
    memset(&c, 0, sizeof c);
    c.check.tolerance = 1e-4;
    c.check.max_ulp = 1;
    c.check.min_ulp = 0;
    c.check.line = line_of(p, pos);
    c.value = c.expected = -1;
    bool has_const = false;
    const char *op = name + 6;
    size_t olen = len - 6;
    if (span_is(op, olen, "expect_eq") || span_is(op, olen, "eq"))
        c.check.kind = KILN_CHECK_EQ;
    else if (span_is(op, olen, "expect_eq_const"))
        c.check.kind = KILN_CHECK_EQ, has_const = true;
    else if (span_is(op, olen, "expect_almost_eq"))
        c.check.kind = KILN_CHECK_ALMOST_EQ;
    else if (span_is(op, olen, "expect_almost_eq_const"))
        c.check.kind = KILN_CHECK_ALMOST_EQ, has_const = true;
    else if (span_is(op, olen, "expect_close"))
        c.check.kind = KILN_CHECK_CLOSE;
    else
        return perr(p, pos, "unsupported check op '%.*s'", (int)(len > 60 ? 60 : len), name);
    if (custom && has_const) return perr(p, pos, "unsupported check op '%.*s'", (int)len, name);
    if (custom && !expect(p, '(', "to open the check's operands")) return false;
    kiln__value *a = use_value(p), *b = NULL;
    if (!a) return false;
    kiln_tensor *expected = NULL;
    if (!expect(p, ',', "after the checked value")) return false;
    if (has_const) {
        skip(p);
        if (!expect_kw(p, "dense", "for the expected value") || !expect(p, '<', "after dense"))
            return false;
        dense d;
        if (!dense_body(p, &d)) {
            dense_free(p, &d);
            return false;
        }
        kiln__type t;
        bool ok = expect(p, ':', "before the check's type") && tensor_type(p, &t);
        if (ok && !same_type(&t, &a->type)) {
            char tb[80], tb2[80];
            ok = perr(p, pos, "type mismatch: the checked value is %s, the check says %s",
                      type_str(&a->type, tb, sizeof tb), type_str(&t, tb2, sizeof tb2));
        }
        if (ok) expected = dense_tensor(p, &d, &t);
        dense_free(p, &d);
        if (!expected) return false;
        kiln_status s = kiln__module_keep_constant(p->m, expected);
        kiln_tensor_release(expected);
        if (s != KILN_OK) return oom(p);
        c.check.expected = p->m->constants[p->m->n_constants - 1];
    } else {
        if (!(b = use_value(p))) return false;
        while (accept(p, ',')) {
            const char *k;
            skip(p);
            size_t at = p->pos;
            size_t kl = ident(p, &k);
            if (!kl || !expect(p, '=', "after a check attribute"))
                return perr(p, at, "expected a check attribute");
            attr v = {0};
            if (!attr_value(p, &v)) return false;
            if (span_is(k, kl, "tolerance") && (v.kind == A_FLOAT || v.kind == A_INT)) {
                c.check.tolerance = attr_number(p, &v);
            } else if (span_is(k, kl, "max_ulp_difference") && v.kind == A_INT) {
                c.check.max_ulp = v.i;
            } else if (span_is(k, kl, "min_ulp_difference") && v.kind == A_INT) {
                c.check.min_ulp = v.i;
            } else {
                return perr(p, at, "bad check attribute '%.*s'", (int)(kl > 40 ? 40 : kl), k);
            }
        }
        if (custom && !expect(p, ')', "to close the check's operands")) return false;
    }
    if (accept(p, '{')) {
        attr more = {0};
        if (!attr_entries(p, &more, '}')) return false;
        const attr *tol = dict_get(&more, "tolerance");
        if (tol && (tol->kind == A_FLOAT || tol->kind == A_INT))
            c.check.tolerance = attr_number(p, tol);
        const attr *mx = dict_get(&more, "max_ulp_difference");
        if (mx && mx->kind == A_INT) c.check.max_ulp = mx->i;
    }
    if (has_const) {
    } else if (!expect(p, ':', "before the check's type")) {
        return false;
    } else if (custom) {
        if (!skip_functional_type(p)) return false;
    } else {
        kiln__type ts[2];
        int32_t nt;
        if (!type_list(p, ts, 2, &nt)) return false;
        char tb[80], tb2[80];
        if (!same_type(&ts[0], &a->type))
            return perr(p, pos, "type mismatch: the checked value is %s, the check says %s",
                        type_str(&a->type, tb, sizeof tb), type_str(&ts[0], tb2, sizeof tb2));
    }
    if (accept(p, '{')) {
        attr more = {0};
        if (!attr_entries(p, &more, '}')) return false;
        const attr *tol = dict_get(&more, "tolerance");
        if (tol && (tol->kind == A_FLOAT || tol->kind == A_INT))
            c.check.tolerance = attr_number(p, tol);
    }
    if (b && !same_type(&a->type, &b->type)) {
        char tb[80], tb2[80];
        return perr(p, pos, "type mismatch: checking %s against %s",
                    type_str(&a->type, tb, sizeof tb), type_str(&b->type, tb2, sizeof tb2));
    }
    if ((c.check.kind == KILN_CHECK_ALMOST_EQ || c.check.kind == KILN_CHECK_CLOSE) &&
        !kiln_dtype_is_float(a->type.dtype))
        return perr(p, pos, "%.*s needs a float tensor", (int)len, name);
    pfunc *f = p->cur;
    if (!add_extra(p, f, a, &c.value)) return false;
    if (b && !add_extra(p, f, b, &c.expected)) return false;
    if (f->n_checks == f->cap_checks) {
        int32_t cap = f->cap_checks ? f->cap_checks * 2 : 8;
        pcheck *items = aalloc(p, (size_t)cap * sizeof *items);
        if (!items) return false;
        if (f->n_checks) memcpy(items, f->checks, (size_t)f->n_checks * sizeof *items);
        f->checks = items;
        f->cap_checks = cap;
    }
    if (!f->n_checks) f->check_pos = pos;
    f->checks[f->n_checks++] = c;
    return true;
}

/* ---- functions and the module ---------------------------------------------------------- */

/* One func.func; results: room for MAX_VALUES declared result types (on the heap: the
 * body's regions nest below this frame). */
static bool func_def_into(parser *p, kiln__type *results) {
    skip(p);
    size_t fpos = p->pos;
    if (!expect_kw(p, "func.func", "")) return false;
    bool is_public = true;
    if (accept_kw(p, "public"))
        is_public = true;
    else if (accept_kw(p, "private"))
        is_public = false;
    else if (accept_kw(p, "nested"))
        is_public = false;
    if (!expect(p, '@', "before the function's name")) return false;
    pfunc f;
    memset(&f, 0, sizeof f);
    f.is_public = is_public;
    f.pos = fpos;
    skip(p);
    size_t npos = p->pos;
    if (peek(p, '"')) {
        if (!string_lit(p, &f.name, &f.len)) return false;
    } else if (!(f.len = ident(p, &f.name))) {
        return perr(p, npos, "expected the function's name");
    }
    for (int32_t i = 0; i < p->n_funcs; i++)
        if (p->funcs[i].len == f.len && memcmp(p->funcs[i].name, f.name, f.len) == 0)
            return perr(p, npos, "redefinition of function @%.*s", (int)(f.len > 60 ? 60 : f.len),
                        f.name);
    f.body = kiln__block_new(p->m, NULL);
    if (!f.body) return oom(p);
    names_pop(p, 0);
    if (!expect(p, '(', "to open the arguments")) return false;
    int32_t cap = 0;
    if (!accept(p, ')')) {
        do {
            const char *name;
            size_t len;
            skip(p);
            size_t vpos = p->pos;
            kiln__type t;
            if (!value_name(p, &name, &len) || !expect(p, ':', "after an argument") ||
                !tensor_type(p, &t))
                return false;
            if (f.body->n_args >= MAX_VALUES) return perr(p, vpos, "too many arguments");
            kiln__value *v = kiln__block_add_arg(p->m, f.body, t);
            if (!v) return oom(p);
            int32_t i = f.body->n_args - 1;
            if (i >= cap) {
                int32_t nc = cap ? cap * 2 : 8;
                const char **names = aalloc(p, (size_t)nc * sizeof *names);
                bool *donor = aalloc(p, (size_t)nc * sizeof *donor);
                int32_t *alias = aalloc(p, (size_t)nc * sizeof *alias);
                if (!names || !donor || !alias) return false;
                if (cap) {
                    memcpy(names, f.arg_names, (size_t)cap * sizeof *names);
                    memcpy(donor, f.donor, (size_t)cap * sizeof *donor);
                    memcpy(alias, f.alias_of_result, (size_t)cap * sizeof *alias);
                }
                f.arg_names = names;
                f.donor = donor;
                f.alias_of_result = alias;
                cap = nc;
            }
            f.arg_names[i] = NULL;
            f.donor[i] = false;
            f.alias_of_result[i] = -1;
            if (!define(p, vpos, name, len, &f.body->args[i], 1)) return false;
            if (accept(p, '{')) {
                attr d = {0};
                if (!attr_entries(p, &d, '}')) return false;
                const attr *path = dict_get(&d, "kiln.path");
                if (path && path->kind == A_STR &&
                    !(f.arg_names[i] = unescape(p, path->text, path->len)))
                    return oom(p);
                const attr *donor = dict_get(&d, "jax.buffer_donor");
                if (donor && donor->kind == A_BOOL) f.donor[i] = donor->i;
                const attr *alias = dict_get(&d, "tf.aliasing_output");
                if (alias && alias->kind == A_INT) {
                    f.alias_of_result[i] = (int32_t)alias->i;
                    f.donor[i] = true;
                }
            }
        } while (accept(p, ','));
        if (!expect(p, ')', "to close the arguments")) return false;
    }
    int32_t n_results = 0;
    size_t rpos = p->pos;
    skip(p);
    if (ch(p) == '-' && ch_at(p, p->pos + 1) == '>') {
        p->pos += 2;
        skip(p);
        rpos = p->pos;
        bool paren = accept(p, '(');
        if (!paren || !accept(p, ')')) {
            do {
                if (n_results >= MAX_VALUES) return perr(p, p->pos, "too many results");
                if (!tensor_type(p, &results[n_results++])) return false;
                if (paren && accept(p, '{')) {
                    attr d = {0};
                    if (!attr_entries(p, &d, '}')) return false;
                }
            } while (paren && accept(p, ','));
            if (paren && !expect(p, ')', "to close the results")) return false;
        }
    }
    if (accept_kw(p, "attributes")) {
        attr d = {0};
        if (!expect(p, '{', "after 'attributes'") || !attr_entries(p, &d, '}')) return false;
    }
    skip(p);
    size_t open = p->pos;
    if (!expect(p, '{', "to open the function's body")) return false;
    pfunc *saved = p->cur;
    p->cur = &f;
    p->nested = false;
    bool ok = block_body(p, f.body, true, open);
    p->cur = saved;
    if (!ok) return false;
    if (f.body->n_results != n_results)
        return perr(p, rpos, "@%.*s returns %d values but declares %d results",
                    (int)(f.len > 60 ? 60 : f.len), f.name, (int)f.body->n_results, (int)n_results);
    char tb[80], tb2[80];
    for (int32_t i = 0; i < n_results; i++)
        if (!same_type(&f.body->results[i]->type, &results[i]))
            return perr(p, rpos, "type mismatch: @%.*s result %d is %s, declared %s",
                        (int)(f.len > 60 ? 60 : f.len), f.name, (int)i,
                        type_str(&f.body->results[i]->type, tb, sizeof tb),
                        type_str(&results[i], tb2, sizeof tb2));
    if (p->n_funcs == p->cap_funcs) {
        int32_t nc = p->cap_funcs ? p->cap_funcs * 2 : 8;
        pfunc *items =
            kiln__alloc(p->cx, (size_t)nc * sizeof *items, _Alignof(pfunc), "parser functions");
        if (!items) return oom(p);
        if (p->n_funcs) memcpy(items, p->funcs, (size_t)p->n_funcs * sizeof *items);
        if (p->funcs) kiln__free(p->cx, p->funcs, (size_t)p->cap_funcs * sizeof *items);
        p->funcs = items;
        p->cap_funcs = nc;
    }
    p->funcs[p->n_funcs++] = f;
    return true;
}

static bool func_def(parser *p) {
    kiln__type *results = kiln__alloc(p->cx, MAX_VALUES * sizeof *results, 16, "parser types");
    if (!results) return oom(p);
    bool ok = func_def_into(p, results);
    kiln__free(p->cx, results, MAX_VALUES * sizeof *results);
    return ok;
}

/* ---- calls: clone the callee's body ------------------------------------------------------ */

typedef struct vmap {
    const kiln__value **from;
    kiln__value **to;
    int32_t n, cap;
} vmap;

static kiln__value *vmap_get(const vmap *m, const kiln__value *v) {
    for (int32_t i = m->n - 1; i >= 0; i--)
        if (m->from[i] == v) return m->to[i];
    return NULL;
}

static bool vmap_put(parser *p, vmap *m, const kiln__value *from, kiln__value *to) {
    if (m->n == m->cap) {
        int32_t cap = m->cap ? m->cap * 2 : 64;
        const kiln__value **f =
            kiln__alloc(p->cx, (size_t)cap * sizeof *f, _Alignof(void *), "parser clone");
        kiln__value **t =
            kiln__alloc(p->cx, (size_t)cap * sizeof *t, _Alignof(void *), "parser clone");
        if (!f || !t) {
            if (f) kiln__free(p->cx, (void *)f, (size_t)cap * sizeof *f);
            if (t) kiln__free(p->cx, t, (size_t)cap * sizeof *t);
            return oom(p);
        }
        if (m->n) {
            memcpy(f, m->from, (size_t)m->n * sizeof *f);
            memcpy(t, m->to, (size_t)m->n * sizeof *t);
        }
        if (m->from) kiln__free(p->cx, (void *)m->from, (size_t)m->cap * sizeof *f);
        if (m->to) kiln__free(p->cx, m->to, (size_t)m->cap * sizeof *t);
        m->from = f;
        m->to = t;
        m->cap = cap;
    }
    m->from[m->n] = from;
    m->to[m->n++] = to;
    return true;
}

static bool resolve_call(parser *p, kiln__ir_op *call, const char *name, size_t len, size_t pos,
                         int depth);

/* One op of clone_block, its regions left empty; NULL on error. Not inlined: its operand
 * array then lives only while the op is appended, not in every level of the recursion over
 * regions and calls (the types are the parser's leaf_types). */
static __attribute__((noinline)) kiln__ir_op *clone_one(parser *p, const kiln__ir_op *op,
                                                        kiln__block *dst, vmap *map) {
    kiln__value *ops[MAX_VALUES];
    kiln__type *types = leaf_types(p);
    if (!types) return NULL;
    if (op->n_operands > MAX_VALUES || op->n_results > MAX_VALUES) {
        perr(p, 0, "op too large to clone");
        return NULL;
    }
    for (int32_t i = 0; i < op->n_operands; i++)
        if (!(ops[i] = vmap_get(map, op->operands[i]))) {
            perr(p, 0, "internal: clone lost a value");
            return NULL;
        }
    for (int32_t i = 0; i < op->n_results; i++)
        types[i] = op->results[i]->type;
    kiln__ir_op *c = kiln__block_append(p->m, dst, op->kind, &op->attrs, ops, op->n_operands, types,
                                        op->n_results, op->n_regions);
    if (!c) {
        oom(p);
        return NULL;
    }
    for (int32_t i = 0; i < op->n_results; i++)
        if (!vmap_put(p, map, op->results[i], c->results[i])) return NULL;
    return c;
}

/* The results of a cloned block. Not inlined, as clone_one. */
static __attribute__((noinline)) bool clone_results(parser *p, const kiln__block *src,
                                                    kiln__block *dst, vmap *map) {
    kiln__value *vals[MAX_VALUES];
    if (src->n_results > MAX_VALUES) return perr(p, 0, "too many results to clone");
    for (int32_t i = 0; i < src->n_results; i++)
        if (!(vals[i] = vmap_get(map, src->results[i])))
            return perr(p, 0, "internal: clone lost a value");
    return kiln__block_set_results(p->m, dst, vals, src->n_results) == KILN_OK || oom(p);
}

static bool clone_block(parser *p, const kiln__block *src, kiln__block *dst, vmap *map, int depth) {
    for (int32_t i = 0; i < src->n_args; i++) {
        kiln__value *v = kiln__block_add_arg(p->m, dst, src->args[i]->type);
        if (!v || !vmap_put(p, map, src->args[i], v)) return v ? false : oom(p);
    }
    for (const kiln__ir_op *op = src->first; op; op = op->next) {
        kiln__ir_op *c = clone_one(p, op, dst, map);
        if (!c) return false;
        if (op->kind == KILN_OP_CALL && op->n_regions == 1 && !op->regions[0]) {
            /* an unresolved call inside the callee */
            int32_t k = 0;
            while (k < p->n_calls && p->calls[k].op != op)
                k++;
            if (k == p->n_calls) return perr(p, 0, "internal: unknown call");
            pcall pc = p->calls[k];
            if (!resolve_call(p, c, pc.callee, pc.len, pc.pos, depth + 1)) return false;
            continue;
        }
        for (int32_t r = 0; r < op->n_regions; r++) {
            if (!op->regions[r]) continue;
            kiln__block *nb = kiln__block_new(p->m, c);
            if (!nb) return oom(p);
            c->regions[r] = nb;
            if (!clone_block(p, op->regions[r], nb, map, depth)) return false;
        }
    }
    return clone_results(p, src, dst, map);
}

static bool resolve_call(parser *p, kiln__ir_op *call, const char *name, size_t len, size_t pos,
                         int depth) {
    if (depth > MAX_CALL_DEPTH)
        return perr(p, pos, "calls nested more than %d deep (recursion?)", MAX_CALL_DEPTH);
    const pfunc *f = NULL;
    for (int32_t i = 0; i < p->n_funcs; i++)
        if (p->funcs[i].len == len && memcmp(p->funcs[i].name, name, len) == 0) f = &p->funcs[i];
    if (!f)
        return perr(p, pos, "call to undefined function @%.*s", (int)(len > 60 ? 60 : len), name);
    if (f->n_checks)
        return perr(p, pos, "@%.*s holds check ops and cannot be called",
                    (int)(len > 60 ? 60 : len), name);
    const kiln__block *body = f->body;
    char tb[80], tb2[80];
    if (body->n_args != call->n_operands)
        return perr(p, pos, "@%.*s takes %d arguments, the call passes %d",
                    (int)(len > 60 ? 60 : len), name, (int)body->n_args, (int)call->n_operands);
    for (int32_t i = 0; i < body->n_args; i++)
        if (!same_type(&body->args[i]->type, &call->operands[i]->type))
            return perr(p, pos, "type mismatch: argument %d of @%.*s is %s, the call passes %s",
                        (int)i, (int)(len > 60 ? 60 : len), name,
                        type_str(&body->args[i]->type, tb, sizeof tb),
                        type_str(&call->operands[i]->type, tb2, sizeof tb2));
    if (body->n_results != call->n_results)
        return perr(p, pos, "@%.*s returns %d values, the call expects %d",
                    (int)(len > 60 ? 60 : len), name, (int)body->n_results, (int)call->n_results);
    for (int32_t i = 0; i < body->n_results; i++)
        if (!same_type(&body->results[i]->type, &call->results[i]->type))
            return perr(p, pos, "type mismatch: result %d of @%.*s is %s, the call expects %s",
                        (int)i, (int)(len > 60 ? 60 : len), name,
                        type_str(&body->results[i]->type, tb, sizeof tb),
                        type_str(&call->results[i]->type, tb2, sizeof tb2));
    kiln__block *nb = kiln__block_new(p->m, call);
    if (!nb) return oom(p);
    vmap map = {0};
    bool ok = clone_block(p, body, nb, &map, depth);
    if (map.from) kiln__free(p->cx, (void *)map.from, (size_t)map.cap * sizeof *map.from);
    if (map.to) kiln__free(p->cx, map.to, (size_t)map.cap * sizeof *map.to);
    if (ok) call->regions[0] = nb;
    return ok;
}

static bool finish(parser *p, const char *entry_name) {
    if (p->n_funcs == 0) return perr(p, p->n, "no function to run");
    int32_t entry = -1;
    const char *want = entry_name ? entry_name : "main";
    for (int32_t i = 0; i < p->n_funcs; i++)
        if (span_is(p->funcs[i].name, p->funcs[i].len, want)) entry = i;
    if (entry < 0 && !entry_name && p->n_funcs == 1) entry = 0;
    if (entry < 0) {
        if (entry_name) return perr(p, 0, "no function @%s", entry_name);
        return perr(p, 0, "several functions and none is @main: set the entry");
    }
    for (int32_t i = 0; i < p->n_funcs; i++)
        if (i != entry && p->funcs[i].n_checks)
            return perr(p, p->funcs[i].check_pos,
                        "check ops are only allowed in the entry function");
    /* calls: resolve those made in the entry (callees cloned recursively) */
    int32_t n_calls = p->n_calls;
    for (int32_t i = 0; i < n_calls; i++) {
        kiln__ir_op *op = p->calls[i].op;
        /* only calls that belong to the entry's tree */
        const kiln__block *b = op->block;
        while (b->parent)
            b = b->parent->block;
        if (b != p->funcs[entry].body) continue;
        if (!resolve_call(p, op, p->calls[i].callee, p->calls[i].len, p->calls[i].pos, 0))
            return false;
    }
    /* every call anywhere must name a defined function */
    for (int32_t i = 0; i < n_calls; i++) {
        bool found = false;
        for (int32_t j = 0; j < p->n_funcs; j++)
            found |= p->funcs[j].len == p->calls[i].len &&
                     memcmp(p->funcs[j].name, p->calls[i].callee, p->calls[i].len) == 0;
        if (!found)
            return perr(p, p->calls[i].pos, "call to undefined function @%.*s",
                        (int)(p->calls[i].len > 60 ? 60 : p->calls[i].len), p->calls[i].callee);
    }
    pfunc *f = &p->funcs[entry];
    char *name = kiln__arena_strndup(&p->m->arena, f->name, f->len);
    if (!name) return oom(p);
    kiln__func *fn = kiln__module_add_func(p->m, name, f->is_public);
    if (!fn) return oom(p);
    fn->body = f->body;
    fn->arg_names = f->arg_names;
    kiln__block *body = f->body;
    int32_t n_ret = body->n_results;
    if (f->n_extra) {
        int32_t total = n_ret + f->n_extra;
        kiln__value **all = aalloc(p, (size_t)total * sizeof *all);
        if (!all) return false;
        for (int32_t i = 0; i < n_ret; i++) {
            all[i] = body->results[i];
            body->results[i]->uses--;
        }
        memcpy(all + n_ret, f->extra, (size_t)f->n_extra * sizeof *all);
        if (kiln__block_set_results(p->m, body, all, total) != KILN_OK) return oom(p);
        kiln_check *checks = aalloc(p, (size_t)f->n_checks * sizeof *checks);
        if (!checks) return false;
        for (int32_t i = 0; i < f->n_checks; i++) {
            checks[i] = f->checks[i].check;
            checks[i].result = n_ret + f->checks[i].value;
            checks[i].expected_result =
                f->checks[i].expected >= 0 ? n_ret + f->checks[i].expected : -1;
        }
        p->m->checks = checks;
        p->m->n_checks = f->n_checks;
    }
    /* the calling convention */
    int32_t n_args = body->n_args, n_res = body->n_results;
    kiln_module *m = p->m;
    m->donated = aalloc(p, (size_t)(n_args ? n_args : 1) * sizeof(bool));
    m->preserved = aalloc(p, (size_t)(n_res ? n_res : 1) * sizeof(int32_t));
    m->aliases = aalloc(p, (size_t)(n_res ? n_res : 1) * sizeof(int32_t));
    if (!m->donated || !m->preserved || !m->aliases) return false;
    for (int32_t a = 0; a < n_args; a++)
        m->donated[a] = f->donor ? f->donor[a] : false;
    for (int32_t r = 0; r < n_res; r++) {
        const kiln__value *v = body->results[r];
        m->preserved[r] = v->block == body ? v->index : -1;
        m->aliases[r] = -1;
    }
    for (int32_t a = 0; a < n_args; a++) {
        int32_t r = f->alias_of_result ? f->alias_of_result[a] : -1;
        if (r < 0) continue;
        if (r >= n_ret)
            return perr(p, f->pos, "tf.aliasing_output = %d of argument %d names no result", (int)r,
                        (int)a);
        if (m->aliases[r] >= 0)
            return perr(p, f->pos, "result %d is aliased to two arguments", (int)r);
        if (m->preserved[r] >= 0 || !same_type(&body->args[a]->type, &body->results[r]->type)) {
            m->donated[a] = true;
            continue;
        }
        m->aliases[r] = a;
    }
    return true;
}

static bool module_text(parser *p, const char *entry) {
    skip(p);
    bool wrapped = false;
    size_t mpos = p->pos;
    if (accept_kw(p, "module")) {
        wrapped = true;
        if (accept(p, '@')) {
            const char *name;
            size_t len;
            skip(p);
            if (peek(p, '"')) {
                if (!string_lit(p, &name, &len)) return false;
            } else if (!(len = ident(p, &name))) {
                return perr(p, p->pos, "expected the module's name");
            }
            char *n = unescape(p, name, len);
            if (!n) return oom(p);
            p->m->name = n;
        }
        if (accept_kw(p, "attributes")) {
            attr d = {0};
            if (!expect(p, '{', "after 'attributes'") || !attr_entries(p, &d, '}')) return false;
        }
        if (!expect(p, '{', "to open the module")) return false;
    }
    for (;;) {
        skip(p);
        if (p->pos >= p->n) {
            if (wrapped) return perr(p, mpos, "unterminated module: expected '}'");
            break;
        }
        if (wrapped && accept(p, '}')) {
            skip(p);
            if (p->pos < p->n) return perr(p, p->pos, "unexpected text after the module");
            break;
        }
        if (!func_def(p)) return false;
    }
    return finish(p, entry);
}

/* ---- API --------------------------------------------------------------------------------- */

kiln_parse_options kiln_parse_options_default(void) {
    return (kiln_parse_options){
        .struct_size = sizeof(kiln_parse_options), .filename = NULL, .first_line = 1};
}

kiln_status kiln_module_parse(kiln_ctx *cx, const char *text, size_t length,
                              const kiln_parse_options *options, kiln_module **out_module) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_module) return kiln__null_argument(cx, "kiln_module_parse", "out_module");
    *out_module = NULL;
    if (!text && length) return kiln__null_argument(cx, "kiln_module_parse", "text");
    kiln_parse_options o = kiln_parse_options_default();
    if (options) {
        if (options->struct_size != sizeof(kiln_parse_options))
            return kiln_ctx_set_error(
                cx, KILN_INVALID_ARGUMENT,
                "kiln_module_parse: options->struct_size is %zu; expected %zu",
                options->struct_size, sizeof(kiln_parse_options));
        o = *options;
    }
    /* A portable artifact (MLIR bytecode) becomes text first. */
    if (kiln__bc_is_bytecode(text, length))
        return kiln__vhlo_parse(cx, text, length, &o, out_module);
    /* ... as does the one inside a file of jax.export's Exported.serialize(). */
    size_t art_off, art_len;
    if (kiln__jax_export_artifact(text, length, &art_off, &art_len))
        return kiln__vhlo_parse(cx, text + art_off, art_len, &o, out_module);
    parser p;
    memset(&p, 0, sizeof p);
    p.cx = cx;
    p.s = text ? text : "";
    p.n = length;
    p.filename = o.filename ? o.filename : "<text>";
    p.first_line = o.first_line ? o.first_line : 1;
    p.allow_checks = o.allow_checks;
    p.m = kiln__module_new(cx, "kiln");
    if (!p.m)
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "kiln_module_parse: out of memory");
    bool ok = module_text(&p, o.entry);
    if (p.names) kiln__free(cx, p.names, (size_t)p.cap_names * sizeof *p.names);
    if (p.name_heads) kiln__free(cx, p.name_heads, (size_t)p.cap_heads * sizeof *p.name_heads);
    while (p.free_scratch) {
        struct op_scratch *next = p.free_scratch->next;
        kiln__free(cx, p.free_scratch, sizeof *p.free_scratch);
        p.free_scratch = next;
    }
    if (p.calls) kiln__free(cx, p.calls, (size_t)p.cap_calls * sizeof *p.calls);
    if (p.funcs) kiln__free(cx, p.funcs, (size_t)p.cap_funcs * sizeof *p.funcs);
    if (p.leaf) kiln__free(cx, p.leaf, MAX_VALUES * sizeof *p.leaf);
    if (!ok) {
        kiln_module_release(p.m);
        return kiln_ctx_status(cx) != KILN_OK ? kiln_ctx_status(cx) : KILN_INVALID_ARGUMENT;
    }
    *out_module = p.m;
    return KILN_OK;
}

kiln_status kiln_module_parse_file(kiln_ctx *cx, const char *path,
                                   const kiln_parse_options *options, kiln_module **out_module) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!out_module) return kiln__null_argument(cx, "kiln_module_parse_file", "out_module");
    *out_module = NULL;
    if (!path) return kiln__null_argument(cx, "kiln_module_parse_file", "path");
    /* A regular file only, read to its size: a FIFO is never waited on and a device such
     * as /dev/zero is not read without end. */
    FILE *f = NULL;
    size_t size = 0;
    kiln_status st = kiln__file_open_read(cx, path, &f, &size);
    if (st != KILN_OK) return st;
    size_t cap = size ? size : 1, n = 0;
    char *buf = kiln__alloc(cx, cap, 16, "kiln_module_parse_file");
    if (buf) n = fread(buf, 1, size, f);
    bool err = buf && n != size;
    fclose(f);
    if (!buf)
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED,
                                  "kiln_module_parse_file: out of memory reading '%s' (%zu bytes)",
                                  path, size);
    if (err) {
        kiln__free(cx, buf, cap);
        return kiln_ctx_set_error(cx, KILN_UNAVAILABLE,
                                  "kiln_module_parse_file: reading '%s' failed after %zu of %zu "
                                  "bytes",
                                  path, n, size);
    }
    kiln_parse_options o = kiln_parse_options_default();
    if (options) {
        if (options->struct_size != sizeof(kiln_parse_options)) {
            kiln__free(cx, buf, cap);
            return kiln_ctx_set_error(
                cx, KILN_INVALID_ARGUMENT,
                "kiln_module_parse_file: options->struct_size is %zu; expected %zu",
                options->struct_size, sizeof(kiln_parse_options));
        }
        o = *options;
    }
    if (!o.filename) o.filename = path;
    kiln_status s = kiln_module_parse(cx, buf, n, &o, out_module);
    kiln__free(cx, buf, cap);
    return s;
}
