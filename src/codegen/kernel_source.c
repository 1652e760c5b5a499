/* SPDX-License-Identifier: Apache-2.0 */
/* C and CUDA C from a fused kernel's description (ir/kernel.h): one function per kernel, a
 * grid-stride loop over its iteration space, each input read through its access pattern
 * (contiguous, broadcast, strided, a scalar or constant, an iota), the instructions in
 * order on registers of their dtype (prelude.cu gives them StableHLO's semantics), and the
 * outputs stored; a kernel that ends in a reduction folds in a fixed order per block
 * (reduction()). Constants are written as their exact bit patterns. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "codegen/kernel_source.h"

extern const char kiln__kernel_prelude_text[];

const char *kiln__kernel_prelude(void) { return kiln__kernel_prelude_text; }

/* ---- types ----------------------------------------------------------------------------- */

static const char *ctype(kiln_dtype d) {
    switch (d) {
    case KILN_BOOL: return "kiln_pred";
    case KILN_I8: return "kiln_i8";
    case KILN_I16: return "kiln_i16";
    case KILN_I32: return "kiln_i32";
    case KILN_I64: return "kiln_i64";
    case KILN_U8: return "kiln_u8";
    case KILN_U16: return "kiln_u16";
    case KILN_U32: return "kiln_u32";
    case KILN_U64: return "kiln_u64";
    case KILN_F16:
    case KILN_BF16: return "kiln_u16";
    case KILN_F32: return "float";
    case KILN_F64: return "double";
    default: return NULL;
    }
}

/* The unsigned type of an integer dtype's width (wrapping arithmetic). */
static const char *utype(kiln_dtype d) {
    switch (kiln_dtype_size(d)) {
    case 1: return "kiln_u8";
    case 2: return "kiln_u16";
    case 4: return "kiln_u32";
    default: return "kiln_u64";
    }
}

static bool is_half(kiln_dtype d) { return d == KILN_F16 || d == KILN_BF16; }
static bool is_float(kiln_dtype d) { return kiln_dtype_is_float(d); }
static bool is_signed(kiln_dtype d) { return d >= KILN_I8 && d <= KILN_I64; }
static int bits_of(kiln_dtype d) { return d == KILN_BOOL ? 1 : (int)kiln_dtype_size(d) * 8; }

/* ---- writing ----------------------------------------------------------------------------- */

typedef struct gen {
    kiln__strbuf *sb;
    const kiln__kernel *k;
    const char *unsupported; /* set when something cannot be generated */
    bool values;             /* host form of a reduction: the reduced register's values */
} gen;

#define P(...) kiln__strbuf_printf(g->sb, __VA_ARGS__)

/* Register r as a value of the computation type: f16/bf16 widened to f32. */
static void arg(gen *g, int32_t r, kiln_dtype d) {
    if (d == KILN_F16)
        P("kiln_f16_to_f32(r%d)", (int)r);
    else if (d == KILN_BF16)
        P("kiln_bf16_to_f32(r%d)", (int)r);
    else
        P("r%d", (int)r);
}

static kiln_dtype reg_dtype(const kiln__kernel *k, int32_t r) {
    return r < k->n_inputs ? k->inputs[r].dtype : k->instrs[r - k->n_inputs].dtype;
}

/* The constant `bits` of dtype d, exactly. */
static void literal(gen *g, kiln_dtype d, uint64_t bits) {
    switch (d) {
    case KILN_F32: P("kiln_f32_of(0x%08" PRIx32 "u)", (uint32_t)bits); break;
    case KILN_F64: P("kiln_f64_of(0x%016" PRIx64 "ULL)", bits); break;
    case KILN_BOOL: P("(kiln_pred)%u", (unsigned)(bits & 1u)); break;
    default: {
        uint64_t mask = bits_of(d) == 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits_of(d)) - 1);
        P("(%s)0x%" PRIx64 "ULL", ctype(d), bits & mask);
    }
    }
}

static const char *float_fn(kiln_op op) {
    switch (op) {
    case KILN_OP_FLOOR: return "floor";
    case KILN_OP_CEIL: return "ceil";
    case KILN_OP_ROUND_NEAREST_AFZ: return "round";
    case KILN_OP_ROUND_NEAREST_EVEN: return "rint";
    case KILN_OP_SQRT: return "sqrt";
    case KILN_OP_CBRT: return "cbrt";
    case KILN_OP_EXPONENTIAL: return "exp";
    case KILN_OP_EXPONENTIAL_MINUS_ONE: return "expm1";
    case KILN_OP_LOG: return "log";
    case KILN_OP_LOG_PLUS_ONE: return "log1p";
    case KILN_OP_SINE: return "sin";
    case KILN_OP_COSINE: return "cos";
    case KILN_OP_TAN: return "tan";
    case KILN_OP_TANH: return "tanh";
    case KILN_OP_ABS: return "fabs";
    default: return NULL;
    }
}

static const char *cmp_op(kiln_compare_direction d) {
    static const char *const ops[] = {"==", "!=", ">=", ">", "<=", "<"};
    return (unsigned)d < 6 ? ops[d] : "==";
}

/* The float expression of instruction `in` (f16/bf16 computed in f32). */
static void float_expr(gen *g, const kiln__kinstr *in) {
    kiln_dtype d = in->dtype, cd = is_half(d) ? KILN_F32 : d;
    bool f = cd == KILN_F32;
    const char *sfx = f ? "f" : "";
    const int32_t *a = in->args;
    kiln_dtype ad = reg_dtype(g->k, a[0]);
    const char *fn = float_fn(in->op);
    if (fn) {
        P("%s%s(", fn, sfx);
        arg(g, a[0], ad);
        P(")");
        return;
    }
    switch (in->op) {
    case KILN_OP_NEGATE: P("-"), arg(g, a[0], ad); return;
    case KILN_OP_SIGN: P("kiln_sign%s(", sfx), arg(g, a[0], ad), P(")"); return;
    case KILN_OP_RSQRT: P(f ? "1.0f / sqrtf(" : "1.0 / sqrt("), arg(g, a[0], ad), P(")"); return;
    case KILN_OP_LOGISTIC:
        P(f ? "1.0f / (1.0f + expf(-" : "1.0 / (1.0 + exp(-"), arg(g, a[0], ad), P("))");
        return;
    case KILN_OP_ADD: /* which NaN two NaNs give: see kernel_source.h */
    case KILN_OP_SUBTRACT:
    case KILN_OP_MULTIPLY:
    case KILN_OP_DIVIDE: {
        const char *o = in->op == KILN_OP_ADD        ? "+"
                        : in->op == KILN_OP_SUBTRACT ? "-"
                        : in->op == KILN_OP_MULTIPLY ? "*"
                                                     : "/";
        arg(g, a[0], ad), P(" %s ", o), arg(g, a[1], ad);
        return;
    }
    case KILN_OP_REMAINDER:
        P("fmod%s(", sfx), arg(g, a[0], ad), P(", "), arg(g, a[1], ad), P(")");
        return;
    case KILN_OP_POWER:
        P("pow%s(", sfx), arg(g, a[0], ad), P(", "), arg(g, a[1], ad), P(")");
        return;
    case KILN_OP_ATAN2:
        P("atan2%s(", sfx), arg(g, a[0], ad), P(", "), arg(g, a[1], ad), P(")");
        return;
    case KILN_OP_MAXIMUM:
    case KILN_OP_MINIMUM:
        P("kiln_%s%s(", in->op == KILN_OP_MAXIMUM ? "max" : "min", sfx), arg(g, a[0], ad), P(", ");
        arg(g, a[1], ad), P(")");
        return;
    case KILN_OP_CLAMP: /* clamp(lo, x, hi) = min(max(x, lo), hi) */
        P("kiln_min%s(kiln_max%s(", sfx, sfx), arg(g, a[1], ad), P(", "), arg(g, a[0], ad);
        P("), "), arg(g, a[2], ad), P(")");
        return;
    default: g->unsupported = kiln__op_get_info(in->op)->name; return;
    }
}

/* The integer (or i1) expression of instruction `in`. */
static void int_expr(gen *g, const kiln__kinstr *in) {
    kiln_dtype d = in->dtype;
    const char *t = ctype(d), *u = utype(d);
    const int32_t *a = in->args;
    bool sg = is_signed(d), pred = d == KILN_BOOL;
    int w = bits_of(d);
    switch (in->op) {
    case KILN_OP_ADD:
        if (pred) {
            P("(kiln_pred)(r%d | r%d)", a[0], a[1]);
            return;
        }
        P("(%s)((%s)r%d + (%s)r%d)", t, u, a[0], u, a[1]);
        return;
    case KILN_OP_SUBTRACT: P("(%s)((%s)r%d - (%s)r%d)", t, u, a[0], u, a[1]); return;
    case KILN_OP_MULTIPLY:
        if (pred) {
            P("(kiln_pred)(r%d & r%d)", a[0], a[1]);
            return;
        }
        P("(%s)((%s)r%d * (%s)r%d)", t, u, a[0], u, a[1]);
        return;
    case KILN_OP_DIVIDE:
        P("(r%d == 0 ? (%s)-1 : ", a[1], t);
        if (sg) P("r%d == (%s)-1 ? (%s)(0 - (%s)r%d) : ", a[1], t, t, u, a[0]);
        P("(%s)(r%d / r%d))", t, a[0], a[1]);
        return;
    case KILN_OP_REMAINDER:
        P("(r%d == 0 ? r%d : ", a[1], a[0]);
        if (sg) P("r%d == (%s)-1 ? (%s)0 : ", a[1], t, t);
        P("(%s)(r%d %% r%d))", t, a[0], a[1]);
        return;
    case KILN_OP_POWER:
        if (sg)
            P("(%s)kiln_ipow_signed((kiln_i64)r%d, (kiln_i64)r%d)", t, a[0], a[1]);
        else
            P("(%s)kiln_ipow((kiln_u64)r%d, (kiln_u64)r%d)", t, a[0], a[1]);
        return;
    case KILN_OP_MAXIMUM:
        if (pred) {
            P("(kiln_pred)(r%d | r%d)", a[0], a[1]);
            return;
        }
        P("(r%d > r%d ? r%d : r%d)", a[0], a[1], a[0], a[1]);
        return;
    case KILN_OP_MINIMUM:
        if (pred) {
            P("(kiln_pred)(r%d & r%d)", a[0], a[1]);
            return;
        }
        P("(r%d < r%d ? r%d : r%d)", a[0], a[1], a[0], a[1]);
        return;
    case KILN_OP_CLAMP: /* min(max(x, lo), hi) */
        if (pred) {
            P("(kiln_pred)((r%d | r%d) & r%d)", a[1], a[0], a[2]);
            return;
        }
        P("(%s)(r%d > r%d ? (r%d < r%d ? r%d : r%d) : (r%d < r%d ? r%d : r%d))", t, a[1], a[0],
          a[1], a[2], a[1], a[2], a[0], a[2], a[0], a[2]);
        return;
    case KILN_OP_AND: P("(%s)(r%d & r%d)", t, a[0], a[1]); return;
    case KILN_OP_OR: P("(%s)(r%d | r%d)", t, a[0], a[1]); return;
    case KILN_OP_XOR: P("(%s)(r%d ^ r%d)", t, a[0], a[1]); return;
    case KILN_OP_NOT:
        if (pred)
            P("(kiln_pred)(r%d ^ 1)", a[0]);
        else
            P("(%s)~r%d", t, a[0]);
        return;
    case KILN_OP_SHIFT_LEFT:
        P("((%s)r%d >= %d ? (%s)0 : (%s)((%s)r%d << (%s)r%d))", u, a[1], w, t, t, u, a[0], u, a[1]);
        return;
    case KILN_OP_SHIFT_RIGHT_LOGICAL:
        P("((%s)r%d >= %d ? (%s)0 : (%s)((%s)r%d >> (%s)r%d))", u, a[1], w, t, t, u, a[0], u, a[1]);
        return;
    case KILN_OP_SHIFT_RIGHT_ARITHMETIC: {
        const char *s = w == 8    ? "kiln_i8"
                        : w == 16 ? "kiln_i16"
                        : w == 32 ? "kiln_i32"
                                  : "kiln_i64";
        P("((%s)r%d >= %d ? (%s)((%s)r%d < 0 ? -1 : 0) : (%s)((%s)r%d >> (%s)r%d))", u, a[1], w, t,
          s, a[0], t, s, a[0], u, a[1]);
        return;
    }
    case KILN_OP_NEGATE: P("(%s)(0 - (%s)r%d)", t, u, a[0]); return;
    case KILN_OP_ABS:
        if (!sg) {
            P("r%d", a[0]);
            return;
        }
        P("(%s)(r%d < 0 ? 0 - (%s)r%d : (%s)r%d)", t, a[0], u, a[0], u, a[0]);
        return;
    case KILN_OP_SIGN:
        if (sg)
            P("(%s)((r%d > 0) - (r%d < 0))", t, a[0], a[0]);
        else
            P("(%s)(r%d > 0)", t, a[0]);
        return;
    case KILN_OP_POPCNT: P("(%s)kiln_popc64((kiln_u64)(%s)r%d)", t, u, a[0]); return;
    case KILN_OP_COUNT_LEADING_ZEROS:
        P("(%s)kiln_clz((kiln_u64)(%s)r%d, %d)", t, u, a[0], w);
        return;
    default: g->unsupported = kiln__op_get_info(in->op)->name; return;
    }
}

static void compare_expr(gen *g, const kiln__kinstr *in) {
    kiln_dtype d = in->in_dtype;
    const int32_t *a = in->args;
    const char *o = cmp_op(in->direction);
    if (is_float(d) && in->compare_type == KILN_CMP_TOTALORDER) {
        const char *key = is_half(d)      ? "kiln_total16"
                          : d == KILN_F32 ? "kiln_total32"
                                          : "kiln_total64";
        P("(kiln_pred)(%s(r%d) %s %s(r%d))", key, a[0], o, key, a[1]);
        return;
    }
    P("(kiln_pred)(");
    arg(g, a[0], d), P(" %s ", o), arg(g, a[1], d);
    P(")");
}

/* convert from the source register's dtype s to d (the evaluator's rules). */
static void convert_expr(gen *g, const kiln__kinstr *in) {
    kiln_dtype s = in->in_dtype, d = in->dtype;
    int32_t r = in->args[0];
    if (d == KILN_BOOL) {
        P("(kiln_pred)(");
        arg(g, r, s);
        P(" != 0)");
        return;
    }
    if (d == KILN_BF16 && !is_float(s)) { /* integers: round to odd, then to bf16 */
        P(is_signed(s) ? "kiln_i64_to_bf16((kiln_i64)r%d)" : "kiln_u64_to_bf16((kiln_u64)r%d)", r);
        return;
    }
    if (is_half(d) && s == KILN_F64) {
        P("%s(kiln_f64_to_f32_odd(r%d))", d == KILN_F16 ? "kiln_f32_to_f16" : "kiln_f32_to_bf16",
          r);
        return;
    }
    if (is_float(d)) {
        const char *to = d == KILN_F16    ? "kiln_f32_to_f16"
                         : d == KILN_BF16 ? "kiln_f32_to_bf16"
                                          : "";
        bool via64 = d == KILN_F64 || s == KILN_F64;
        P("%s((%s)(", to, d == KILN_F64 ? "double" : "float");
        if (via64 && d != KILN_F64) P("(double)");
        arg(g, r, s);
        P("))");
        return;
    }
    if (is_float(s)) { /* truncate, saturate, NaN -> 0 */
        static const char *const names[] = {"",   "i8",  "i16", "i32", "i64",
                                            "u8", "u16", "u32", "u64"};
        P("kiln_%c2%s(", s == KILN_F64 ? 'd' : 'f', names[d]);
        arg(g, r, s);
        P(")");
        return;
    }
    P("(%s)(%s)r%d", ctype(d), is_signed(s) ? "kiln_i64" : "kiln_u64", r);
}

static void instr(gen *g, int32_t reg, const kiln__kinstr *in) {
    kiln_dtype d = in->dtype;
    P("const %s r%d = ", ctype(d), (int)reg);
    if (in->op == KILN_OP_COMPARE) {
        compare_expr(g, in);
    } else if (in->op == KILN_OP_CONVERT) {
        convert_expr(g, in);
    } else if (in->op == KILN_OP_SELECT) {
        P("r%d ? r%d : r%d", in->args[0], in->args[1], in->args[2]);
    } else if (in->op == KILN_OP_IS_FINITE) {
        kiln_dtype s = in->in_dtype;
        P("(kiln_pred)isfinite(");
        arg(g, in->args[0], s);
        P(")");
    } else if (is_half(d) && (in->op == KILN_OP_ABS || in->op == KILN_OP_NEGATE) &&
               reg_dtype(g->k, in->args[0]) == d) {
        /* on the bits, as the evaluator: a NaN keeps its payload */
        P(in->op == KILN_OP_ABS ? "(kiln_u16)(r%d & 0x7fffu)" : "(kiln_u16)(r%d ^ 0x8000u)",
          (int)in->args[0]);
    } else if (is_float(d)) {
        if (d == KILN_F16) P("kiln_f32_to_f16(");
        if (d == KILN_BF16) P("kiln_f32_to_bf16(");
        float_expr(g, in);
        if (is_half(d)) P(")");
    } else {
        int_expr(g, in);
    }
    P(";\n");
}

/* The element index of input `in` at the loop's coordinates. */
static void index_expr(gen *g, const kiln__kinput *in) {
    if (in->access == KILN__KACCESS_CONTIGUOUS) {
        P("i");
        return;
    }
    P("%" PRId64, in->offset);
    for (int32_t d = 0; d < g->k->shape.rank; d++)
        if (in->strides[d]) P(" + x%d * %" PRId64, (int)d, in->strides[d]);
}

/* The inputs' reads, each line after `ind`. */
static void reads(gen *g, const char *ind) {
    const kiln__kernel *k = g->k;
    for (int32_t i = 0; i < k->n_inputs; i++) {
        const kiln__kinput *in = &k->inputs[i];
        const char *t = ctype(in->dtype);
        P("%sconst %s r%d = ", ind, t, (int)i);
        if (in->is_constant) {
            literal(g, in->dtype, in->bits);
        } else if (in->access == KILN__KACCESS_IOTA) {
            if (is_half(in->dtype))
                P("%s((float)(", in->dtype == KILN_F16 ? "kiln_f32_to_f16" : "kiln_f32_to_bf16");
            else
                P("(%s)(", t);
            index_expr(g, in);
            P(is_half(in->dtype) ? "))" : ")");
        } else {
            P("((const %s *)a.in[%d])[", t, (int)in->operand);
            if (in->access == KILN__KACCESS_SCALAR)
                P("%" PRId64, in->offset);
            else
                index_expr(g, in);
            P("]");
        }
        P(";\n");
    }
}

/* Instructions [from, to), each line after `ind`; those with skip[j] set are not computed
 * here (skip may be NULL). */
static void instrs(gen *g, const char *ind, int32_t from, int32_t to, const bool *skip) {
    const kiln__kernel *k = g->k;
    for (int32_t j = from; j < to && !g->unsupported; j++) {
        if (!ctype(k->instrs[j].dtype)) g->unsupported = "a dtype";
        if (skip && skip[j]) continue;
        P("%s", ind);
        instr(g, k->n_inputs + j, &k->instrs[j]);
    }
}

/* The inputs' reads and the instructions, each line after `ind`. */
static void body(gen *g, const char *ind) {
    reads(g, ind);
    instrs(g, ind, 0, g->k->n_instrs, NULL);
}

/* x<d> = the coordinate of dimension d, for the dimensions `dims` (last fastest) of the
 * flat index `var` (consumed). */
static void coordinates(gen *g, const char *ind, const char *var, const int32_t *dims, int32_t n) {
    const kiln__kernel *k = g->k;
    for (int32_t j = n - 1; j >= 0; j--) {
        int32_t d = dims[j];
        if (j == 0)
            P("%sconst long long x%d = %s;\n", ind, (int)d, var);
        else
            P("%sconst long long x%d = %s %% %" PRId64 "; %s /= %" PRId64 ";\n", ind, (int)d, var,
              k->shape.dims[d], var, k->shape.dims[d]);
    }
}

/* The coordinates x<d> of the flat index i, last dimension fastest, when some input's
 * access needs them. */
static void loop_coordinates(gen *g, const char *ind) {
    const kiln__kernel *k = g->k;
    bool coords = false;
    for (int32_t i = 0; i < k->n_inputs; i++)
        coords |= k->inputs[i].access == KILN__KACCESS_BROADCAST ||
                  k->inputs[i].access == KILN__KACCESS_STRIDED ||
                  k->inputs[i].access == KILN__KACCESS_IOTA;
    if (!coords) return;
    int32_t dims[KILN_MAX_RANK];
    for (int32_t d = 0; d < k->shape.rank; d++)
        dims[d] = d;
    P("%slong long q = i;\n", ind);
    coordinates(g, ind, "q", dims, k->shape.rank);
    P("%s(void)q;\n", ind);
}

/* The reduced register's value of element i, into the part's array (host form). */
static void value_store(gen *g, const char *ind) {
    const kiln__kernel *k = g->k;
    if (g->values)
        P("%s((%s *)a.out[%d])[i - KILN_FIRST] = r%d;\n", ind, ctype(reg_dtype(k, k->reduce_reg)),
          (int)k->n_outputs, (int)k->reduce_reg);
}

static void stores(gen *g, const char *ind) {
    const kiln__kernel *k = g->k;
    for (int32_t o = 0; o < k->n_outputs; o++) {
        int32_t r = k->outputs[o].reg;
        P("%s((%s *)a.out[%d])[i] = r%d;\n", ind, ctype(reg_dtype(k, r)), (int)o, (int)r);
    }
    value_store(g, ind);
}

static void elementwise(gen *g, const char *name) {
    P("KILN_KERNEL %s(kiln_args a) {\n", name);
    P("    for (long long i = KILN_FIRST; i < KILN_LAST; i += KILN_STEP) {\n");
    loop_coordinates(g, "        ");
    body(g, "        ");
    stores(g, "        ");
    P("    }\n}\n");
}

/* The host's tiled form (kiln__kernel_source_tiled): the instructions marked in `call`
 * split the others into segments; each tile of TILE elements runs segment 0 as a loop
 * over its elements, then call 0 over arrays of the tile, then segment 1, and so on, the
 * last segment storing the outputs. A register lives in an array of the tile when it
 * crosses a segment (a call's argument and result always do); the inputs are read again in
 * every segment that uses them (the compiler drops the reads a segment does not use).
 * Two arrays need no copy: a call reads a contiguous input where it lies, and the last
 * call writes an output where it goes when the last segment reads no input (an output may
 * be in the place of an input, which the segments after such a write would read). */
#define TILE 512
typedef enum tarray { T_NONE, T_STACK, T_INPUT, T_OUTPUT } tarray;

static tarray *tile_arrays(gen *g, const bool *call, int32_t *seg, int32_t *n_calls_out,
                           int32_t *direct_output) {
    const kiln__kernel *k = g->k;
    const int32_t ni = k->n_inputs, nr = ni + k->n_instrs;
    tarray *array = calloc((size_t)nr, sizeof *array);
    if (!array) return NULL;
    int32_t n_calls = 0, last_call = -1;
    for (int32_t r = 0; r < ni; r++)
        seg[r] = -1;
    for (int32_t j = 0; j < k->n_instrs; j++) {
        seg[ni + j] = call[j] ? n_calls + 1 : n_calls;
        if (call[j]) array[ni + j] = T_STACK, n_calls++, last_call = j;
    }
    bool final_reads_input = false;
    for (int32_t j = 0, s = 0; j < k->n_instrs; j++) {
        const kiln__kinstr *in = &k->instrs[j];
        for (int32_t a = 0; a < in->n_args; a++) {
            int32_t r = in->args[a];
            if (r < ni && s == n_calls) final_reads_input = true;
            if (call[j] && r < ni && array[r] == T_NONE) { /* before its first call */
                const kiln__kinput *x = &k->inputs[r];
                bool direct = x->access == KILN__KACCESS_CONTIGUOUS && !x->is_constant;
                array[r] = direct ? T_INPUT : T_STACK;
                seg[r] = s;
            }
            if (r >= ni && (call[j] || seg[r] != s) && array[r] == T_NONE) array[r] = T_STACK;
        }
        s += call[j];
    }
    *direct_output = -1;
    for (int32_t o = 0; o < k->n_outputs; o++) {
        int32_t r = k->outputs[o].reg;
        if (r < ni) final_reads_input = true;
        if (r >= ni && seg[r] != n_calls && array[r] == T_NONE) array[r] = T_STACK;
    }
    if (g->values) { /* the reduced register is stored by the last segment too */
        int32_t r = k->reduce_reg;
        if (r < ni) final_reads_input = true;
        if (r >= ni && seg[r] != n_calls && array[r] == T_NONE) array[r] = T_STACK;
    }
    for (int32_t o = 0; o < k->n_outputs && last_call >= 0 && !final_reads_input; o++)
        if (k->outputs[o].reg == ni + last_call) {
            array[ni + last_call] = T_OUTPUT;
            *direct_output = o;
            break;
        }
    *n_calls_out = n_calls;
    return array;
}

static void tiled(gen *g, const char *name, const bool *call) {
    const kiln__kernel *k = g->k;
    const int32_t ni = k->n_inputs, nr = ni + k->n_instrs;
    int32_t n_calls = 0, direct_output = -1;
    int32_t *seg = calloc((size_t)nr, sizeof *seg);
    tarray *array = seg ? tile_arrays(g, call, seg, &n_calls, &direct_output) : NULL;
    if (!array) {
        g->unsupported = "a kernel this large (out of memory)";
        free(seg);
        return;
    }
    P("void *kiln_native_prims[%d]; /* the calls' functions, set when loaded */\n", (int)n_calls);
    P("typedef void (*kiln_prim)(void *, const void *, const void *, const void *, long);\n");
    P("KILN_KERNEL %s(kiln_args a) {\n", name);
    P("    for (long long base = KILN_FIRST; base < KILN_LAST; base += %d) {\n", TILE);
    P("        const long long len = KILN_LAST - base < %d ? KILN_LAST - base : %d;\n", TILE, TILE);
    for (int32_t r = 0; r < nr; r++) {
        const char *t = ctype(reg_dtype(k, r));
        if (array[r] == T_STACK) P("        %s t%d[%d];\n", t, (int)r, TILE);
        if (array[r] == T_INPUT)
            P("        const %s *const t%d = (const %s *)a.in[%d] + base;\n", t, (int)r, t,
              (int)k->inputs[r].operand);
        if (array[r] == T_OUTPUT)
            P("        %s *const t%d = (%s *)a.out[%d] + base;\n", t, (int)r, t,
              (int)direct_output);
    }
    int32_t from = 0; /* the segment's first instruction */
    for (int32_t s = 0; s <= n_calls && !g->unsupported; s++) {
        int32_t to = from; /* the call that ends it, or the end */
        while (to < k->n_instrs && !call[to])
            to++;
        P("        for (long long e = 0; e < len; e++) {\n");
        P("            const long long i = base + e;\n");
        loop_coordinates(g, "            ");
        reads(g, "            ");
        for (int32_t r = ni; r < nr; r++) /* earlier segments' values */
            if (array[r] && seg[r] < s + (call[r - ni] ? 1 : 0))
                P("            const %s r%d = t%d[e];\n", ctype(reg_dtype(k, r)), (int)r, (int)r);
        instrs(g, "            ", from, to, call);
        for (int32_t r = 0; r < nr; r++) /* this segment's values that later ones read */
            if (array[r] == T_STACK && !(r >= ni && call[r - ni]) && seg[r] == s)
                P("            t%d[e] = r%d;\n", (int)r, (int)r);
        if (s == n_calls)
            for (int32_t o = 0; o < k->n_outputs; o++) {
                int32_t r = k->outputs[o].reg;
                if (o != direct_output)
                    P("            ((%s *)a.out[%d])[i] = r%d;\n", ctype(reg_dtype(k, r)), (int)o,
                      (int)r);
            }
        if (s == n_calls) value_store(g, "            ");
        P("        }\n");
        if (s < n_calls) {
            const kiln__kinstr *c = &k->instrs[to];
            P("        ((kiln_prim)kiln_native_prims[%d])(t%d, t%d, 0, 0, (long)len);\n", (int)s,
              (int)(ni + to), (int)c->args[0]);
        }
        from = to + 1;
    }
    P("    }\n}\n");
    free(array);
    free(seg);
}
#undef TILE

/* The combination of a and b (C expressions of dtype d) under the reduction. */
static void combine(gen *g, kiln_dtype d, const char *x, const char *y) {
    const char *t = ctype(d), *u = utype(d);
    bool f = is_float(d), pred = d == KILN_BOOL;
    const char *sfx = d == KILN_F32 ? "f" : "";
    bool add = g->k->reduce == KILN__KREDUCE_ADD, max = g->k->reduce == KILN__KREDUCE_MAX;
    switch (g->k->reduce) {
    case KILN__KREDUCE_ADD:
    case KILN__KREDUCE_MUL: {
        const char *op = add ? "+" : "*";
        if (f)
            P("%s %s %s", x, op, y);
        else if (pred)
            P("(kiln_pred)(%s %s %s)", x, add ? "|" : "&", y);
        else
            P("(%s)((%s)%s %s (%s)%s)", t, u, x, op, u, y);
        return;
    }
    case KILN__KREDUCE_MAX:
    case KILN__KREDUCE_MIN:
        if (f)
            P("kiln_%s%s(%s, %s)", max ? "max" : "min", sfx, x, y);
        else
            P("(%s %s %s ? %s : %s)", x, max ? ">" : "<", y, x, y);
        return;
    case KILN__KREDUCE_AND: P("(%s)(%s & %s)", t, x, y); return;
    case KILN__KREDUCE_OR: P("(%s)(%s | %s)", t, x, y); return;
    default: g->unsupported = "a reduction"; return;
    }
}

/* The reduction's identity, the starting value of every thread's share. */
static void identity(gen *g, kiln_dtype d) {
    bool f = is_float(d), s = is_signed(d);
    int w = bits_of(d);
    switch (g->k->reduce) {
    case KILN__KREDUCE_ADD:
    case KILN__KREDUCE_OR: P("(%s)0", ctype(d)); return;
    case KILN__KREDUCE_MUL: P("(%s)1", ctype(d)); return;
    case KILN__KREDUCE_AND:
        P(d == KILN_BOOL ? "(kiln_pred)1" : "(%s)~(%s)0", ctype(d), utype(d));
        return;
    case KILN__KREDUCE_MAX:
        if (f)
            literal(g, d, d == KILN_F32 ? 0xff800000u : 0xfff0000000000000ull);
        else if (s)
            P("(%s)((%s)1 << %d)", ctype(d), utype(d), w - 1);
        else
            P("(%s)0", ctype(d));
        return;
    case KILN__KREDUCE_MIN:
        if (f)
            literal(g, d, d == KILN_F32 ? 0x7f800000u : 0x7ff0000000000000ull);
        else if (s)
            P("(%s)~((%s)1 << %d)", ctype(d), utype(d), w - 1);
        else
            P("(%s)~(%s)0", ctype(d), utype(d));
        return;
    default: g->unsupported = "a reduction"; return;
    }
}

/* One block per result element: each thread folds the reduced elements j = thread,
 * thread + blockDim, ... in order, then the block combines its threads' shares by a fixed
 * tree in shared memory (blockDim a power of two), then the init: the same order on every
 * run, so the same bits. */
static void reduction(gen *g, const char *name) {
    const kiln__kernel *k = g->k;
    kiln_dtype d = k->reduce_dtype;
    const char *t = ctype(d);
    bool red[KILN_MAX_RANK] = {false};
    for (int32_t i = 0; i < k->reduce_dims.count; i++)
        red[k->reduce_dims.v[i]] = true;
    int32_t kept[KILN_MAX_RANK], reduced[KILN_MAX_RANK], nk = 0, nr = 0;
    int64_t n_out = 1, n_red = 1;
    for (int32_t dim = 0; dim < k->shape.rank; dim++) {
        if (red[dim])
            reduced[nr++] = dim, n_red *= k->shape.dims[dim];
        else
            kept[nk++] = dim, n_out *= k->shape.dims[dim];
    }
    P("KILN_KERNEL %s(kiln_args a) {\n", name);
    P("    __shared__ %s part[KILN_REDUCE_THREADS];\n", t);
    P("    const %s init = ((const %s *)a.in[%d])[0];\n", t, t, (int)k->reduce_init);
    P("    for (long long o = KILN_ROWS_FIRST; o < KILN_ROWS_LAST(%" PRId64
      "LL); o += KILN_ROWS_STEP) {\n",
      n_out);
    P("        long long q = o;\n");
    coordinates(g, "        ", "q", kept, nk);
    P("        (void)q;\n");
    P("        %s acc = ", t);
    identity(g, d);
    P(";\n");
    P("        for (long long j = threadIdx.x; j < %" PRId64 "LL; j += blockDim.x) {\n", n_red);
    P("            long long p = j;\n");
    coordinates(g, "            ", "p", reduced, nr);
    P("            (void)p;\n");
    P("            const long long i = 0");
    int64_t stride = 1, strides[KILN_MAX_RANK];
    for (int32_t dim = k->shape.rank - 1; dim >= 0; dim--)
        strides[dim] = stride, stride *= k->shape.dims[dim];
    for (int32_t dim = 0; dim < k->shape.rank; dim++)
        P(" + x%d * %" PRId64, (int)dim, strides[dim]);
    P(";\n            (void)i;\n");
    body(g, "            ");
    for (int32_t o = 0; o < k->n_outputs; o++) { /* each element is visited once */
        int32_t reg = k->outputs[o].reg;
        P("            ((%s *)a.out[%d])[i] = r%d;\n", ctype(reg_dtype(k, reg)), (int)o, (int)reg);
    }
    char r[32];
    snprintf(r, sizeof r, "r%d", (int)k->reduce_reg);
    P("            acc = ");
    combine(g, d, "acc", r);
    P(";\n        }\n");
    P("        part[threadIdx.x] = acc;\n");
    P("        __syncthreads();\n");
    P("        for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n");
    P("            if (threadIdx.x < s) part[threadIdx.x] = ");
    combine(g, d, "part[threadIdx.x]", "part[threadIdx.x + s]");
    P(";\n            __syncthreads();\n        }\n");
    P("        if (threadIdx.x == 0) ((%s *)a.out[%d])[o] = ", t, (int)k->n_outputs);
    combine(g, d, "init", "part[0]");
    P(";\n        __syncthreads();\n    }\n}\n");
}

static kiln_status source(kiln_ctx *cx, const kiln__kernel *k, const char *name, const bool *call,
                          kiln__strbuf *sb) {
    gen gs = {.sb = sb, .k = k, .values = call && k->reduce != KILN__KREDUCE_NONE}, *g = &gs;
    bool reduces = k->reduce != KILN__KREDUCE_NONE && !call;
    if ((reduces || g->values) && (!ctype(k->reduce_dtype) || is_half(k->reduce_dtype)))
        return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                  "codegen: kernel #%d: a reduction of %s is not generated yet",
                                  (int)k->id, kiln_dtype_name(k->reduce_dtype));
    for (int32_t i = 0; i < k->n_inputs; i++)
        if (!ctype(k->inputs[i].dtype))
            return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED, "codegen: input %d's dtype", (int)i);
    P("/* kernel #%d: ", (int)k->id);
    for (int32_t d = 0; d < k->shape.rank; d++)
        P("%s%" PRId64, d ? "x" : "", k->shape.dims[d]);
    P("%s, %d inputs, %d instructions, %d outputs", k->shape.rank ? "" : "scalar", (int)k->n_inputs,
      (int)k->n_instrs, (int)k->n_outputs);
    if (k->reduce != KILN__KREDUCE_NONE)
        P(", %s over %d dimensions%s", kiln__kreduce_name(k->reduce), (int)k->reduce_dims.count,
          g->values ? " (its values: the caller reduces)" : "");
    P(" */\n");
    if (reduces)
        reduction(g, name);
    else if (call)
        tiled(g, name, call);
    else
        elementwise(g, name);
    if (g->unsupported)
        return kiln_ctx_set_error(cx, KILN_UNIMPLEMENTED,
                                  "codegen: kernel #%d: %s is not generated yet", (int)k->id,
                                  g->unsupported);
    if (sb->failed)
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "codegen: out of memory");
    return KILN_OK;
}

kiln_status kiln__kernel_source(kiln_ctx *cx, const kiln__kernel *k, const char *name,
                                kiln__strbuf *sb) {
    return source(cx, k, name, NULL, sb);
}

kiln_status kiln__kernel_source_tiled(kiln_ctx *cx, const kiln__kernel *k, const char *name,
                                      const bool *call, kiln__strbuf *sb) {
    return source(cx, k, name, call, sb);
}
