/* SPDX-License-Identifier: Apache-2.0 */
/* The text parser's check dialect: the StableHLO interpreter tests' expectations
 * (check.expect_eq, expect_almost_eq, ...) as checks on the entry's extra results. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "core/tensor_internal.h"
#include "ir/text.h"

/* ---- checks ---------------------------------------------------------------------------- */

static bool add_extra(parser *p, pfunc *f, kiln__value *v, int32_t *index) {
    kiln__value **extra =
        kiln__text_grow(p, f->extra, &f->cap_extra, f->n_extra, sizeof *extra, 8, false);
    if (!extra) return false;
    f->extra = extra;
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
    return kiln__text_decimal_value(p->s + a->pos, e - a->pos, false, NULL);
}

/* Reads an optional `{tolerance = ...}` after a check, with max_ulp_difference too where
 * `with_ulp` (before the type only); other entries are passed over. */
static bool check_dict(parser *p, pcheck *c, bool with_ulp) {
    if (!kiln__text_accept(p, '{')) return true;
    attr more = {0};
    if (!kiln__text_attr_entries(p, &more, '}')) return false;
    const attr *tol = kiln__text_dict_get(&more, "tolerance");
    if (tol && (tol->kind == A_FLOAT || tol->kind == A_INT))
        c->check.tolerance = attr_number(p, tol);
    if (!with_ulp) return true;
    const attr *mx = kiln__text_dict_get(&more, "max_ulp_difference");
    if (mx && mx->kind == A_INT) c->check.max_ulp = mx->i;
    return true;
}

bool kiln__text_check_op(parser *p, size_t pos, const char *name, size_t len, bool custom) {
    if (!p->allow_checks)
        return kiln__text_error(p, pos, "check op '%.*s' needs allow_checks",
                                (int)(len > 60 ? 60 : len), name);
    if (p->nested)
        return kiln__text_error(p, pos, "check ops must be at the top level of a function");
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
        return kiln__text_error(p, pos, "unsupported check op '%.*s'", (int)(len > 60 ? 60 : len),
                                name);
    if (custom && has_const)
        return kiln__text_error(p, pos, "unsupported check op '%.*s'", (int)len, name);
    if (custom && !kiln__text_expect(p, '(', "to open the check's operands")) return false;
    kiln__value *a = kiln__text_use_value(p), *b = NULL;
    if (!a) return false;
    kiln_tensor *expected = NULL;
    if (!kiln__text_expect(p, ',', "after the checked value")) return false;
    if (has_const) {
        kiln__text_skip(p);
        if (!kiln__text_expect_kw(p, "dense", "for the expected value") ||
            !kiln__text_expect(p, '<', "after dense"))
            return false;
        dense d;
        if (!kiln__text_dense_body(p, &d)) {
            kiln__text_dense_free(p, &d);
            return false;
        }
        kiln__type t;
        bool ok =
            kiln__text_expect(p, ':', "before the check's type") && kiln__text_tensor_type(p, &t);
        if (ok && !kiln__text_same_type(&t, a->type)) {
            char tb[80], tb2[80];
            ok = kiln__text_error(p, pos,
                                  "type mismatch: the checked value is %s, the check says %s",
                                  kiln__text_type_str(a->type, tb, sizeof tb),
                                  kiln__text_type_str(&t, tb2, sizeof tb2));
        }
        if (ok) expected = kiln__text_dense_tensor(p, &d, &t);
        kiln__text_dense_free(p, &d);
        if (!expected) return false;
        kiln_status s = kiln__module_keep_constant(p->m, expected);
        kiln_tensor_release(expected);
        if (s != KILN_OK) return kiln__text_oom(p);
        c.check.expected = p->m->constants[p->m->n_constants - 1];
    } else {
        if (!(b = kiln__text_use_value(p))) return false;
        while (kiln__text_accept(p, ',')) {
            const char *k;
            size_t at;
            size_t kl = kiln__text_attr_key(p, &k, &at, "after a check attribute",
                                            "expected a check attribute");
            if (!kl) return false;
            attr v = {0};
            if (!kiln__text_attr_value(p, &v)) return false;
            if (span_is(k, kl, "tolerance") && (v.kind == A_FLOAT || v.kind == A_INT)) {
                c.check.tolerance = attr_number(p, &v);
            } else if (span_is(k, kl, "max_ulp_difference") && v.kind == A_INT) {
                c.check.max_ulp = v.i;
            } else if (span_is(k, kl, "min_ulp_difference") && v.kind == A_INT) {
                c.check.min_ulp = v.i;
            } else {
                return kiln__text_error(p, at, "bad check attribute '%.*s'",
                                        (int)(kl > 40 ? 40 : kl), k);
            }
        }
        if (custom && !kiln__text_expect(p, ')', "to close the check's operands")) return false;
    }
    if (!check_dict(p, &c, true)) return false;
    if (has_const) {
    } else if (!kiln__text_expect(p, ':', "before the check's type")) {
        return false;
    } else if (custom) {
        if (!kiln__text_skip_functional_type(p)) return false;
    } else {
        kiln__type ts[2];
        int32_t nt;
        if (!kiln__text_type_list(p, ts, 2, &nt)) return false;
        char tb[80], tb2[80];
        if (!kiln__text_same_type(&ts[0], a->type))
            return kiln__text_error(p, pos,
                                    "type mismatch: the checked value is %s, the check says %s",
                                    kiln__text_type_str(a->type, tb, sizeof tb),
                                    kiln__text_type_str(&ts[0], tb2, sizeof tb2));
    }
    if (!check_dict(p, &c, false)) return false;
    if (b && !kiln__text_same_type(a->type, b->type)) {
        char tb[80], tb2[80];
        return kiln__text_error(p, pos, "type mismatch: checking %s against %s",
                                kiln__text_type_str(a->type, tb, sizeof tb),
                                kiln__text_type_str(b->type, tb2, sizeof tb2));
    }
    if ((c.check.kind == KILN_CHECK_ALMOST_EQ || c.check.kind == KILN_CHECK_CLOSE) &&
        !kiln_dtype_is_float(a->type->dtype) && !kiln_dtype_is_complex(a->type->dtype))
        return kiln__text_error(p, pos, "%.*s needs a float or complex tensor", (int)len, name);
    pfunc *f = p->cur;
    if (!add_extra(p, f, a, &c.value)) return false;
    if (b && !add_extra(p, f, b, &c.expected)) return false;
    pcheck *checks =
        kiln__text_grow(p, f->checks, &f->cap_checks, f->n_checks, sizeof *checks, 8, false);
    if (!checks) return false;
    f->checks = checks;
    if (!f->n_checks) f->check_pos = pos;
    f->checks[f->n_checks++] = c;
    return true;
}
