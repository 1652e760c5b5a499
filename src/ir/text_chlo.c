/* SPDX-License-Identifier: Apache-2.0 */
/* The chlo ops that StableHLO's interpreter tests use, read as StableHLO's own
 * decompositions (stablehlo/transforms/ChloDecompositionPatterns.td, what
 * --chlo-legalize-to-stablehlo makes of them): the module holds the StableHLO ops they
 * stand for, so nothing after the parser sees chlo. chlo.mulhi is read; the others are
 * named as not read yet. */
#include <string.h>

#include "base/alloc.h"
#include "ir/emit.h"
#include "ir/text.h"

/* The integer type twice as wide, for n < 64 bits. */
static kiln_dtype twice_as_wide(kiln_dtype d) {
    switch (d) {
    case KILN_I2: return KILN_I4;
    case KILN_I4: return KILN_I8;
    case KILN_I8: return KILN_I16;
    case KILN_I16: return KILN_I32;
    case KILN_I32: return KILN_I64;
    case KILN_U2: return KILN_U4;
    case KILN_U4: return KILN_U8;
    case KILN_U8: return KILN_U16;
    case KILN_U16: return KILN_U32;
    case KILN_U32: return KILN_U64;
    default: return KILN_DTYPE_COUNT;
    }
}

static int bits_of(kiln_dtype d) {
    switch (d) {
    case KILN_I2:
    case KILN_U2: return 2;
    case KILN_I4:
    case KILN_U4: return 4;
    default: return (int)kiln_dtype_size(d) * 8;
    }
}

/* mulhi of ui64: the 32-bit halves' four products, the middle terms' carries added. */
static kiln__value *mulhi_u64(kiln__emitter *e, kiln__value *a, kiln__value *b) {
    kiln__value *k32 = kiln__emit_full_like(e, a, 32),
                *lo = kiln__emit_full_like(e, a, 4294967295.0);
    kiln__value *a_hi = kiln__emit_binary(e, KILN_OP_SHIFT_RIGHT_LOGICAL, a, k32);
    kiln__value *b_hi = kiln__emit_binary(e, KILN_OP_SHIFT_RIGHT_LOGICAL, b, k32);
    kiln__value *a_lo = kiln__emit_binary(e, KILN_OP_AND, a, lo);
    kiln__value *b_lo = kiln__emit_binary(e, KILN_OP_AND, b, lo);
    kiln__value *p0 = kiln__emit_mul(e, a_lo, b_lo), *p1 = kiln__emit_mul(e, a_lo, b_hi);
    kiln__value *p2 = kiln__emit_mul(e, a_hi, b_lo), *p3 = kiln__emit_mul(e, a_hi, b_hi);
    kiln__value *mid1 =
        kiln__emit_add(e, p1, kiln__emit_binary(e, KILN_OP_SHIFT_RIGHT_LOGICAL, p0, k32));
    kiln__value *mid2 = kiln__emit_add(e, p2, kiln__emit_binary(e, KILN_OP_AND, mid1, lo));
    kiln__value *hi =
        kiln__emit_add(e, p3, kiln__emit_binary(e, KILN_OP_SHIFT_RIGHT_LOGICAL, mid1, k32));
    return kiln__emit_add(e, hi, kiln__emit_binary(e, KILN_OP_SHIFT_RIGHT_LOGICAL, mid2, k32));
}

/* The high half of each product a * b (chlo.mulhi), of operands of one integer type. */
static kiln__value *mulhi(kiln__emitter *e, kiln__value *a, kiln__value *b) {
    kiln_dtype d = a->type->dtype;
    kiln_dtype wide = twice_as_wide(d);
    if (wide != KILN_DTYPE_COUNT) { /* downcast((upcast(a) * upcast(b)) >> N) */
        kiln__value *p =
            kiln__emit_mul(e, kiln__emit_convert(e, a, wide), kiln__emit_convert(e, b, wide));
        kiln_op shift =
            kiln_dtype_is_signed(d) ? KILN_OP_SHIFT_RIGHT_ARITHMETIC : KILN_OP_SHIFT_RIGHT_LOGICAL;
        kiln__value *hi = kiln__emit_binary(e, shift, p, kiln__emit_full_like(e, p, bits_of(d)));
        return kiln__emit_convert(e, hi, d);
    }
    if (d == KILN_U64) return mulhi_u64(e, a, b);
    /* i64: the unsigned product's high half, less b where a < 0 and a where b < 0 */
    kiln__value *ua = kiln__emit_convert(e, a, KILN_U64), *ub = kiln__emit_convert(e, b, KILN_U64);
    kiln__value *hi = mulhi_u64(e, ua, ub), *zero = kiln__emit_full_like(e, a, 0);
    kiln__value *uzero = kiln__emit_full_like(e, ua, 0);
    hi = kiln__emit_sub(
        e, hi, kiln__emit_select(e, kiln__emit_compare(e, KILN_CMP_LT, a, zero), ub, uzero));
    hi = kiln__emit_sub(
        e, hi, kiln__emit_select(e, kiln__emit_compare(e, KILN_CMP_LT, b, zero), ua, uzero));
    return kiln__emit_convert(e, hi, KILN_I64);
}

bool kiln__text_chlo(parser *p, kiln__block *b, size_t pos, bool generic, const char *id,
                     size_t len, const char *const *names, const size_t *lens,
                     const size_t *name_pos, int32_t n_names) {
    if (!span_is(id, len, "chlo.mulhi"))
        return kiln__text_error(p, pos, "unknown op '%.*s' (of chlo, kiln reads chlo.mulhi)",
                                (int)(len > 60 ? 60 : len), id);
    kiln__value *operands[2];
    int32_t n = 0;
    bool ok = true;
    if (generic) ok = kiln__text_expect(p, '(', "to open the operands");
    if (ok) ok = kiln__text_operands(p, operands, &n, 2);
    if (ok && generic) ok = kiln__text_expect(p, ')', "to close the operands");
    if (ok && kiln__text_accept(p, '{')) { /* discardable attributes, not kept */
        attr more = {0};
        ok = kiln__text_attr_entries(p, &more, '}');
    }
    if (!ok || !kiln__text_expect(p, ':', "before the op's type")) return false;
    sig *s = kiln__alloc(p->cx, sizeof *s, _Alignof(sig), "parser");
    if (!s) return kiln__text_oom(p);
    size_t type_pos = p->pos;
    ok = kiln__text_functional_type(p, s);
    const kiln__type *t = ok && s->n_out == 1 ? &s->out[0] : NULL;
    char tb[80];
    if (ok && n != 2) ok = kiln__text_error(p, pos, "chlo.mulhi takes 2 operands, got %d", (int)n);
    if (ok && (!t || (s->functional && s->n_in != 2)))
        ok = kiln__text_error(p, type_pos, "chlo.mulhi has the type (T, T) -> T");
    for (int32_t i = 0; ok && i < 2; i++) {
        const kiln__type *want = s->functional ? &s->in[i] : t;
        if (!kiln__type_equal(operands[i]->type, want) || !kiln__type_equal(want, t))
            ok = kiln__text_error(p, type_pos,
                                  "type mismatch: chlo.mulhi's operands and result are one type; "
                                  "operand %d is %s",
                                  (int)i, kiln__text_type_str(operands[i]->type, tb, sizeof tb));
    }
    kiln_dtype d = t ? t->dtype : KILN_DTYPE_COUNT;
    if (ok &&
        (!kiln_dtype_is_integer(d) || d == KILN_BOOL || kiln__is_token(t) || kiln__is_tuple(t)))
        ok = kiln__text_error(p, type_pos, "chlo.mulhi takes integers; the type is %s",
                              kiln__text_type_str(t, tb, sizeof tb));
    kiln__free(p->cx, s, sizeof *s);
    if (!ok) return false;
    if (n_names > 1)
        return kiln__text_error(p, pos, "%d results named but chlo.mulhi has 1", n_names);
    kiln__emitter e = {.cx = p->cx, .m = p->m, .block = b, .fn = "chlo.mulhi"};
    kiln__value *r = mulhi(&e, operands[0], operands[1]);
    if (!r) return kiln__text_error(p, pos, "chlo.mulhi: %s", kiln_ctx_error_message(p->cx));
    return n_names == 0 || kiln__text_define(p, name_pos[0], names[0], lens[0], &r, 1);
}
