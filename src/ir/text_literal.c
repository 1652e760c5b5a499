/* SPDX-License-Identifier: Apache-2.0 */
/* The text parser's types (tensor<2x3xf32>, function types) and dense literals
 * (dense<...> into tensors, checked against their type before memory is taken). */
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "core/element.h"
#include "core/tensor_internal.h"
#include "ir/text.h"

/* ---- types ------------------------------------------------------------------------------- */

bool kiln__text_element_type(parser *p, kiln_dtype *out) {
    kiln__text_skip(p);
    size_t start = p->pos;
    const char *id;
    size_t len = kiln__text_ident(p, &id);
    if (len == 0) {
        char buf[16];
        if (kiln__text_peek(p, '!')) /* !quant.uniform, !stablehlo.token, ... */
            return kiln__text_error(p, start,
                                    "unsupported element type: kiln has no '!' dialect types");
        return kiln__text_error(p, start, "expected an element type, found %s",
                                kiln__text_char_text(p, buf));
    }
    if (len == 7 && memcmp(id, "complex", 7) == 0) { /* complex<f32>, complex<f64> */
        if (!kiln__text_expect(p, '<', "after 'complex'")) return false;
        kiln__text_skip(p);
        size_t part = p->pos;
        const char *pid;
        size_t plen = kiln__text_ident(p, &pid);
        bool f32 = plen == 3 && memcmp(pid, "f32", 3) == 0;
        if (!f32 && !(plen == 3 && memcmp(pid, "f64", 3) == 0))
            return kiln__text_error(p, part,
                                    "unsupported element type 'complex<%.*s>' (kiln has "
                                    "complex<f32> and complex<f64>)",
                                    (int)(plen > 40 ? 40 : plen), pid);
        *out = f32 ? KILN_C64 : KILN_C128;
        return kiln__text_expect(p, '>', "to close the complex type");
    }
    char name[16];
    if (len < sizeof name) {
        memcpy(name, id, len);
        name[len] = '\0';
        if (kiln_dtype_parse(name, out)) return true;
    }
    return kiln__text_error(p, start, "unsupported element type '%.*s'", (int)(len > 40 ? 40 : len),
                            id);
}

bool kiln__text_tensor_type(parser *p, kiln__type *t);

/* tuple<T, ...> after "tuple": its elements in the parser's memory (a module interns
 * them when a value takes the type). */
static bool tuple_type(parser *p, kiln__type *t) {
    if (!kiln__text_expect(p, '<', "after 'tuple'")) return false;
    kiln__type first[4], *elems = first;
    int32_t n = 0, cap = 4;
    if (!kiln__text_accept(p, '>')) {
        do {
            if (!(elems = kiln__text_grow(p, elems, &cap, n, sizeof *elems, 8, false)))
                return false;
            if (!kiln__text_enter(p)) return false;
            bool ok = kiln__text_tensor_type(p, &elems[n++]);
            leave(p);
            if (!ok) return false;
        } while (kiln__text_accept(p, ','));
        if (!kiln__text_expect(p, '>', "to close the tuple type")) return false;
    }
    kiln__tuple_type *tt = kiln__text_aalloc(p, sizeof *tt + (size_t)n * sizeof elems[0]);
    if (!tt) return false;
    tt->n = n;
    for (int32_t i = 0; i < n; i++)
        tt->elems[i] = elems[i];
    *t = kiln__tuple_of(tt);
    return true;
}

/* tensor<2x3xf32>, !stablehlo.token, or tuple<...> */
bool kiln__text_tensor_type(parser *p, kiln__type *t) {
    kiln__text_skip(p);
    size_t start = p->pos;
    if (kiln__text_accept_kw(p, "!stablehlo.token")) {
        *t = kiln__token_type();
        return true;
    }
    if (kiln__text_accept_kw(p, "tuple")) return tuple_type(p, t);
    t->kind = KILN__KIND_TENSOR;
    if (!kiln__text_accept_kw(p, "tensor")) {
        if (kiln__text_peek(p, '!') || kiln__text_peek(p, 't')) {
            const char *id;
            size_t save = p->pos;
            if (ch(p) == '!') p->pos++;
            size_t len = kiln__text_ident(p, &id);
            p->pos = save;
            if (len)
                return kiln__text_error(p, start, "unsupported type '%.*s'",
                                        (int)(len > 40 ? 40 : len), id);
        }
        char buf[16];
        return kiln__text_error(p, start, "expected a tensor type, found %s",
                                kiln__text_char_text(p, buf));
    }
    if (!kiln__text_expect(p, '<', "after 'tensor'")) return false;
    t->shape.rank = 0;
    kiln__text_skip(p);
    while (is_digit(ch(p)) || ch(p) == '?') {
        size_t dpos = p->pos;
        if (ch(p) == '?') return kiln__text_error(p, dpos, "dynamic dimensions are not supported");
        int64_t d;
        if (!kiln__text_int64_lit(p, &d, "dimension")) return false;
        if (ch(p) != 'x') return kiln__text_error(p, p->pos, "expected 'x' after a dimension");
        p->pos++;
        if (t->shape.rank >= KILN_MAX_RANK)
            return kiln__text_error(p, dpos, "more than %d dimensions", KILN_MAX_RANK);
        t->shape.dims[t->shape.rank++] = d;
    }
    if (!kiln__text_element_type(p, &t->dtype)) return false;
    if (kiln__text_peek(p, ','))
        return kiln__text_error(p, p->pos, "tensor encodings are not supported");
    size_t bytes;
    if (!kiln_shape_nbytes(&t->shape, t->dtype, &bytes))
        return kiln__text_error(p, start,
                                "tensor type too large: the product of its dimensions overflows");
    return kiln__text_expect(p, '>', "to close the tensor type");
}

bool kiln__text_same_type(const kiln__type *a, const kiln__type *b) {
    return kiln__type_equal(a, b);
}

const char *kiln__text_type_str(const kiln__type *t, char *buf, size_t cap) {
    if (kiln__is_token(t)) {
        snprintf(buf, cap, "!stablehlo.token");
        return buf;
    }
    if (kiln__is_tuple(t)) {
        snprintf(buf, cap, "a tuple of %d", t->tuple ? (int)t->tuple->n : 0);
        return buf;
    }
    size_t o = (size_t)snprintf(buf, cap, "tensor<");
    for (int32_t d = 0; d < t->shape.rank && o < cap; d++)
        o += (size_t)snprintf(buf + o, cap - o, "%" PRId64 "x", t->shape.dims[d]);
    if (o < cap) snprintf(buf + o, cap - o, "%s>", kiln_dtype_name(t->dtype));
    return buf;
}

/* "T, T" list (with or without parentheses handled by the caller). */
bool kiln__text_type_list(parser *p, kiln__type *out, int32_t cap, int32_t *n) {
    *n = 0;
    do {
        if (*n >= cap) return kiln__text_error(p, p->pos, "too many types");
        if (!kiln__text_tensor_type(p, &out[(*n)++])) return false;
    } while (kiln__text_accept(p, ','));
    return true;
}

/* ": (A, B) -> C" or "-> (C, D)"; or a single type T (all operands and results T). */
bool kiln__text_functional_type(parser *p, sig *s) {
    kiln__text_skip(p);
    s->pos = p->pos;
    s->n_in = s->n_out = 0;
    s->functional = false;
    if (kiln__text_accept(p, '(')) {
        s->functional = true;
        if (!kiln__text_accept(p, ')')) {
            if (!kiln__text_type_list(p, s->in, MAX_VALUES, &s->n_in)) return false;
            if (!kiln__text_expect(p, ')', "to close the operand types")) return false;
        }
        kiln__text_skip(p);
        if (!(ch(p) == '-' && ch_at(p, p->pos + 1) == '>'))
            return kiln__text_error(p, p->pos, "expected '->' in a function type");
        p->pos += 2;
        if (kiln__text_accept(p, '(')) {
            if (!kiln__text_accept(p, ')')) {
                if (!kiln__text_type_list(p, s->out, MAX_VALUES, &s->n_out)) return false;
                if (!kiln__text_expect(p, ')', "to close the result types")) return false;
            }
        } else {
            if (!kiln__text_tensor_type(p, &s->out[0])) return false;
            s->n_out = 1;
        }
        return true;
    }
    if (!kiln__text_tensor_type(p, &s->out[0])) return false;
    s->n_out = 1;
    return true;
}

/* The parser's scratch types (see parser.leaf), or NULL with the error recorded. */
kiln__type *kiln__text_leaf_types(parser *p) {
    if (!p->leaf) p->leaf = kiln__alloc(p->cx, MAX_VALUES * sizeof *p->leaf, 16, "parser types");
    if (!p->leaf) kiln__text_oom(p);
    return p->leaf;
}

/* Reads a functional type whose types are not needed (a sig lives on the heap here: two
 * arrays of MAX_VALUES types). */
bool kiln__text_skip_functional_type(parser *p) {
    sig *s = kiln__alloc(p->cx, sizeof *s, _Alignof(sig), "parser types");
    if (!s) return kiln__text_oom(p);
    bool ok = kiln__text_functional_type(p, s);
    kiln__free(p->cx, s, sizeof *s);
    return ok;
}

/* ---- dense literals ------------------------------------------------------------------ */

void kiln__text_dense_free(parser *p, dense *d) {
    if (d->e) kiln__free(p->cx, d->e, (size_t)d->cap * sizeof *d->e);
    d->e = NULL;
    d->n = d->cap = 0;
}

static bool dense_add(parser *p, dense *d, elem e) {
    if (d->n == d->cap && d->cap >= (1 << 28)) return kiln__text_oom(p);
    elem *items = kiln__text_grow(p, d->e, &d->cap, d->n, sizeof *items, 16, true);
    if (!items) return false;
    d->e = items;
    d->e[d->n++] = e;
    return true;
}

/* A number or true/false token. */
bool kiln__text_scalar_token(parser *p, elem *e) {
    kiln__text_skip(p);
    size_t start = p->pos;
    e->pos = start;
    if (kiln__text_accept_kw(p, "true")) {
        e->kind = E_TRUE;
    } else if (kiln__text_accept_kw(p, "false")) {
        e->kind = E_FALSE;
    } else {
        if (ch(p) == '-' || ch(p) == '+') p->pos++;
        if (ch(p) == '0' && (ch_at(p, p->pos + 1) == 'x' || ch_at(p, p->pos + 1) == 'X')) {
            p->pos += 2;
            size_t digits = p->pos;
            while (hexval(ch(p)) >= 0)
                p->pos++;
            if (p->pos == digits) return kiln__text_error(p, start, "expected hex digits");
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
                return kiln__text_error(p, start, "expected a number, found %s",
                                        kiln__text_char_text(p, buf));
            }
            if (ch(p) == 'n' || ch(p) == 'i' || is_id_start(ch(p)))
                return kiln__text_error(p, start, "malformed number");
            e->kind = fp ? E_FLOAT : E_INT;
        }
    }
    e->len = p->pos - start;
    return true;
}

/* A complex element "(re, im)": one elem spanning the parentheses, read again part by part
 * when it is stored (see complex_parts), so that an elem stays three words. */
static bool complex_token(parser *p, elem *e) {
    size_t open = p->pos;
    p->pos++;
    elem re, im;
    if (!kiln__text_scalar_token(p, &re)) return false;
    if (!kiln__text_expect(p, ',', "between the real and imaginary parts of a complex literal"))
        return false;
    if (!kiln__text_scalar_token(p, &im)) return false;
    if (!kiln__text_expect(p, ')', "after the imaginary part of a complex literal")) return false;
    *e = (elem){.pos = open, .len = p->pos - open, .kind = E_COMPLEX};
    return true;
}

static bool dense_tree(parser *p, dense *d, int32_t depth) {
    kiln__text_skip(p);
    if (!kiln__text_accept(p, '[')) {
        elem e;
        if (!(ch(p) == '(' ? complex_token(p, &e) : kiln__text_scalar_token(p, &e))) return false;
        if (d->leaf_depth < 0)
            d->leaf_depth = depth;
        else if (d->leaf_depth != depth)
            return kiln__text_error(p, e.pos, "inconsistent nesting in a dense literal");
        return dense_add(p, d, e);
    }
    size_t open = p->pos - 1;
    if (depth >= KILN_MAX_RANK) return kiln__text_error(p, open, "dense literal nested too deeply");
    int64_t count = 0;
    if (!kiln__text_accept(p, ']')) {
        do {
            if (!dense_tree(p, d, depth + 1)) return false;
            count++;
        } while (kiln__text_accept(p, ','));
        if (!kiln__text_expect(p, ']', "to close a list in a dense literal")) return false;
    } else if (d->leaf_depth >= 0 && d->leaf_depth != depth + 1) {
        return kiln__text_error(p, open, "inconsistent nesting in a dense literal");
    } else if (d->leaf_depth < 0) {
        d->leaf_depth = depth + 1;
    }
    if (depth + 1 > d->rank) d->rank = depth + 1;
    if (!(d->dims_set & (1u << depth))) {
        d->dims_set |= 1u << depth;
        d->dims[depth] = count;
    } else if (d->dims[depth] != count) {
        return kiln__text_error(
            p, open, "inconsistent list lengths in a dense literal (%" PRId64 " and %" PRId64 ")",
            d->dims[depth], count);
    }
    return true;
}

/* After "dense<": the body up to and including '>'. */
bool kiln__text_dense_body(parser *p, dense *d) {
    memset(d, 0, sizeof *d);
    d->leaf_depth = -1;
    kiln__text_skip(p);
    d->pos = p->pos;
    if (kiln__text_accept(p, '>')) {
        d->empty = true;
        return true;
    }
    if (kiln__text_peek(p, '"')) {
        const char *s;
        size_t len;
        size_t at = p->pos;
        if (!kiln__text_string_lit(p, &s, &len)) return false;
        if (len < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || len % 2)
            return kiln__text_error(p, at,
                                    "expected a hex blob \"0x...\" with an even number of digits");
        for (size_t i = 2; i < len; i++)
            if (hexval((unsigned char)s[i]) < 0)
                return kiln__text_error(p, at + 1 + i, "bad hex digit in a blob");
        d->blob = true;
        d->blob_pos = (size_t)(s - p->s) + 2;
        d->blob_len = (len - 2) / 2;
        return kiln__text_expect(p, '>', "to close the dense literal");
    }
    d->list = kiln__text_peek(p, '[');
    if (!dense_tree(p, d, 0)) return false;
    return kiln__text_expect(p, '>', "to close the dense literal");
}

/* Text to double with the C locale's rules whatever the current locale. */
double kiln__text_decimal_value(const char *s, size_t len, bool as_float, float *fout) {
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

/* The low `size` bytes' worth of `bits` (1, 2, 4 or 8 bytes) into out, as that width's
 * unsigned integer. */
static void store_bits(unsigned char *out, uint64_t bits, size_t size) {
    switch (size) {
    case 1: {
        uint8_t v = (uint8_t)bits;
        memcpy(out, &v, 1);
        break;
    }
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
}

/* The two parts of a complex elem, which complex_token has already read once. */
static void complex_parts(parser *p, const elem *e, elem *re, elem *im) {
    size_t save = p->pos;
    p->pos = e->pos + 1;
    kiln__text_scalar_token(p, re);
    kiln__text_accept(p, ',');
    kiln__text_scalar_token(p, im);
    p->pos = save;
}

static bool store_elem(parser *p, const elem *e, kiln_dtype dt, unsigned char *out);

/* A complex element: each part as the component type, real part first. */
static bool store_complex(parser *p, const elem *e, kiln_dtype dt, unsigned char *out) {
    if (e->kind != E_COMPLEX)
        return kiln__text_error(p, e->pos, "expected a complex literal (re, im) for a %s element",
                                kiln_dtype_name(dt));
    elem re, im;
    complex_parts(p, e, &re, &im);
    kiln_dtype part = kiln_dtype_component(dt);
    return store_elem(p, &re, part, out) && store_elem(p, &im, part, out + kiln_dtype_size(part));
}

/* One element into `out` (dtype's size). */
static bool store_elem(parser *p, const elem *e, kiln_dtype dt, unsigned char *out) {
    const char *s = p->s + e->pos;
    size_t size = kiln_dtype_size(dt);
    if (kiln_dtype_is_complex(dt)) return store_complex(p, e, dt, out);
    if (e->kind == E_COMPLEX)
        return kiln__text_error(p, e->pos, "a complex literal (re, im) for a %s element",
                                kiln_dtype_name(dt));
    if (dt == KILN_BOOL) {
        uint8_t b;
        if (e->kind == E_TRUE)
            b = 1;
        else if (e->kind == E_FALSE)
            b = 0;
        else if (e->kind == E_INT && e->len == 1 && (s[0] == '0' || s[0] == '1'))
            b = (uint8_t)(s[0] - '0');
        else
            return kiln__text_error(p, e->pos, "expected true, false, 0 or 1 for an i1 element");
        *out = b;
        return true;
    }
    if (kiln_dtype_is_float(dt)) {
        uint64_t bits = 0;
        if (e->kind == E_HEX) {
            int digits;
            uint32_t width = kiln_dtype_bits(dt);
            if (!hex_bits(p, e, &bits, &digits) || (width < 64 && bits >> width))
                return kiln__text_error(p, e->pos, "hex literal too wide for %s",
                                        kiln_dtype_name(dt));
        } else if (e->kind == E_INT || e->kind == E_FLOAT) {
            float f = 0;
            double d = kiln__text_decimal_value(s, e->len, dt == KILN_F32, &f);
            switch (dt) {
            case KILN_F16: bits = kiln__f64_to_f16(d); break;
            case KILN_BF16: bits = kiln__f64_to_bf16(d); break;
            case KILN_F64: memcpy(&bits, &d, 8); break;
            case KILN_F32: {
                uint32_t b;
                memcpy(&b, &f, 4);
                bits = b;
                break;
            }
            default: bits = kiln_small_float_encode(dt, d); break;
            }
        } else {
            return kiln__text_error(p, e->pos, "expected a number for a %s element",
                                    kiln_dtype_name(dt));
        }
        store_bits(out, bits, size);
        return true;
    }
    /* integers */
    uint64_t mag = 0;
    bool neg = false;
    if (e->kind == E_HEX) {
        int digits;
        uint32_t width = kiln_dtype_bits(dt);
        if (!hex_bits(p, e, &mag, &digits) || (width < 64 && mag >> width))
            return kiln__text_error(p, e->pos, "hex literal too wide for %s", kiln_dtype_name(dt));
    } else if (e->kind == E_INT) {
        size_t i = 0;
        if (s[0] == '-' || s[0] == '+') neg = s[i++] == '-';
        for (; i < e->len; i++) {
            unsigned dgt = (unsigned)(s[i] - '0');
            if (mag > (UINT64_MAX - dgt) / 10)
                return kiln__text_error(p, e->pos, "integer literal out of range for %s",
                                        kiln_dtype_name(dt));
            mag = mag * 10 + dgt;
        }
        bool sgn = kiln_dtype_is_signed(dt);
        int bitsz = (int)kiln_dtype_bits(dt);
        uint64_t maxpos = sgn ? (UINT64_C(1) << (bitsz - 1)) - 1
                              : (bitsz == 64 ? UINT64_MAX : (UINT64_C(1) << bitsz) - 1);
        uint64_t maxneg = sgn ? (UINT64_C(1) << (bitsz - 1)) : 0;
        if (neg ? mag > maxneg : mag > maxpos)
            return kiln__text_error(p, e->pos, "integer literal %.*s out of range for %s",
                                    (int)(e->len > 40 ? 40 : e->len), s, kiln_dtype_name(dt));
        if (neg) mag = 0 - mag;
        if (bitsz < 8) mag &= (UINT64_C(1) << bitsz) - 1; /* the sub-byte types' low bits */
    } else {
        return kiln__text_error(p, e->pos, "expected an integer for a %s element",
                                kiln_dtype_name(dt));
    }
    store_bits(out, mag, size);
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
kiln_tensor *kiln__text_dense_tensor(parser *p, const dense *d, const kiln__type *t) {
    int64_t numel;
    if (!kiln_shape_numel(&t->shape, &numel) || numel > (INT64_C(1) << 40)) {
        kiln__text_error(p, d->pos, "tensor too large");
        return NULL;
    }
    size_t esize = kiln_dtype_size(t->dtype);
    size_t nbytes = (size_t)numel * esize;
    char tb[64];
    if (d->empty && numel != 0) {
        kiln__text_error(p, d->pos, "dense<> has no elements but %s has %" PRId64,
                         kiln__text_type_str(t, tb, sizeof tb), numel);
        return NULL;
    }
    if (d->blob && d->blob_len != nbytes && !(d->blob_len == esize && numel > 0)) {
        kiln__text_error(p, d->pos, "hex blob has %zu bytes; %s needs %zu", d->blob_len,
                         kiln__text_type_str(t, tb, sizeof tb), nbytes);
        return NULL;
    }
    if (d->list) {
        bool shape_ok = d->rank == t->shape.rank;
        for (int32_t i = 0; shape_ok && i < d->rank; i++)
            shape_ok = d->dims[i] == t->shape.dims[i];
        if (d->leaf_depth >= 0 && d->n > 0 && d->leaf_depth != d->rank) shape_ok = false;
        if (!shape_ok || d->n != numel) {
            kiln__text_error(p, d->pos, "dense literal shape does not match %s",
                             kiln__text_type_str(t, tb, sizeof tb));
            return NULL;
        }
    }
    kiln_tensor *tensor = kiln__tensor_new(p->cx, "parser constant", t->dtype, t->shape);
    if (!tensor) {
        kiln__text_oom(p);
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
                if (buf[i] > 1)
                    ok = kiln__text_error(p, d->pos, "i1 blob byte %zu is not 0 or 1", i);
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
