/* SPDX-License-Identifier: Apache-2.0 */
/* The StableHLO text parser's state and the functions its files share. The parser
 * (kiln_module_parse, parse.c) reads what kiln's printer writes, JAX's as_text() and the
 * StableHLO interpreter tests (pretty and generic op forms, the check dialect): a
 * character-level recursive descent over `length` bytes (never NUL-terminated), with a
 * nesting limit; every error is "FILE:LINE:COL: error: message". Its files, one job each:
 * text_lex.c, text_literal.c, text_attrs.c, text_ops.c, text_checks.c and parse.c (the
 * module: functions, calls, the entry and its calling convention). */
#ifndef KILN_IR_TEXT_H
#define KILN_IR_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/ctx_internal.h"
#include "ir/ir.h"
#include "kiln/parse.h"
#include "kiln/spmd.h"
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
    int32_t region; /* the op's region the callee's body goes to (run_parallel: a program) */
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
    const char **result_names; /* jax.result_info, per declared result (NULL: none) */
    const char **arg_shardings, **result_shardings; /* kiln__func's, or NULL */
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
    int32_t in_manual; /* inside sdy.manual_computation bodies: sdy.return ends them */
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

/* ---- types, literals and attributes -------------------------------------------------- */

typedef struct sig {
    kiln__type in[MAX_VALUES], out[MAX_VALUES];
    int32_t n_in, n_out;
    bool functional;
    size_t pos;
} sig;

enum { E_INT, E_FLOAT, E_HEX, E_TRUE, E_FALSE, E_COMPLEX /* "(re, im)" */ };

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

/* ---- characters (inline: the innermost loops) ---------------------------------------- */

static inline int ch(const parser *p) { return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1; }

static inline int ch_at(const parser *p, size_t at) {
    return at < p->n ? (unsigned char)p->s[at] : -1;
}

static inline bool is_id_start(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static inline bool is_id_char(int c) {
    return is_id_start(c) || (c >= '0' && c <= '9') || c == '$' || c == '.';
}

static inline bool is_digit(int c) { return c >= '0' && c <= '9'; }

static inline bool span_is(const char *s, size_t len, const char *word) {
    return strlen(word) == len && memcmp(s, word, len) == 0;
}

static inline int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static inline void leave(parser *p) { p->depth--; }

/* text_lex.c: errors, characters, whitespace and locations, tokens, nesting */
/* Records "FILE:LINE:COL: error: message" for byte `pos` (the first error only); false. */
bool kiln__text_error(parser *p, size_t pos, const char *fmt, ...) KILN_PRINTF_LIKE(3, 4);
/* An out-of-memory error at the current position; false. */
bool kiln__text_oom(parser *p);
/* Skips whitespace, // comments and locations (loc(...), #loc aliases). */
void kiln__text_skip(parser *p);
/* After skipping: whether the next character is c (peek) or, taking it, was (accept). */
bool kiln__text_peek(parser *p, char c);
bool kiln__text_accept(parser *p, char c);
/* The next character for a message: 'x', \xNN or "end of input" (buf: 16 bytes). */
const char *kiln__text_char_text(parser *p, char *buf);
/* Takes character c or records "expected 'c' WHAT, found ...". */
bool kiln__text_expect(parser *p, char c, const char *what);
/* An identifier ([A-Za-z_][\w$.]*): its length (0: none) and start. */
size_t kiln__text_ident(parser *p, const char **out);
/* An attribute's `name =`: the name's length and start, and where it stands in *at; 0 after
 * recording `missing` at *at where the name or the '=' (`after`: where it goes) is missing. */
size_t kiln__text_attr_key(parser *p, const char **name, size_t *at, const char *after,
                           const char *missing);
/* An attribute's name, an identifier or a string literal (its escapes as written): its
 * span and where it stands; "expected an attribute name" where there is neither. */
bool kiln__text_attr_name(parser *p, const char **name, size_t *len, size_t *at);
/* A keyword as a whole token: taken (accept) or an error naming it (expect). */
bool kiln__text_accept_kw(parser *p, const char *kw);
bool kiln__text_expect_kw(parser *p, const char *kw, const char *what);
/* A decimal int64 (what: for the message). */
bool kiln__text_int64_lit(parser *p, int64_t *out, const char *what);
/* One more nesting level (leave() ends it): an error past MAX_DEPTH or near the
 * end of the thread's stack. */
bool kiln__text_enter(parser *p);
/* Room for one more item in `items` (n used of *cap, each `size` bytes): items itself, or
 * a copy twice as large (`first` items the first time) on the ctx's heap (the old one
 * freed) or in the module's arena; NULL with the error recorded. */
void *kiln__text_grow(parser *p, void *items, int32_t *cap, int32_t n, size_t size, int32_t first,
                      bool heap);
/* A string literal "..." (escapes kept as written); returns its content's span. */
bool kiln__text_string_lit(parser *p, const char **out, size_t *len);
/* A symbol's name after its '@': an identifier or a string literal (escapes kept as
 * written); "expected WHAT" where there is neither. */
bool kiln__text_symbol_name(parser *p, const char **name, size_t *len, const char *what);
/* Decodes MLIR's string escapes (\\, \", \n, \t, \XX) into the arena. */
char *kiln__text_unescape(parser *p, const char *s, size_t len);

/* text_literal.c: types and dense literals */
/* f32, i1, ui8, bf16, ... */
bool kiln__text_element_type(parser *p, kiln_dtype *out);
/* tensor<2x3xf32> */
bool kiln__text_tensor_type(parser *p, kiln__type *t);
/* Equal dtype and shape; the type as text (for messages) in buf. */
bool kiln__text_same_type(const kiln__type *a, const kiln__type *b);
const char *kiln__text_type_str(const kiln__type *t, char *buf, size_t cap);
/* "T, T" list (with or without parentheses handled by the caller). */
bool kiln__text_type_list(parser *p, kiln__type *out, int32_t cap, int32_t *n);
/* ": (A, B) -> C" or "-> (C, D)"; or a single type T (all operands and results T). */
bool kiln__text_functional_type(parser *p, sig *s);
/* The parser's scratch types (see parser.leaf), or NULL with the error recorded. */
kiln__type *kiln__text_leaf_types(parser *p);
/* Reads a functional type whose types are not needed (a sig lives on the heap here: two
 * arrays of MAX_VALUES types). */
bool kiln__text_skip_functional_type(parser *p);
/* Frees a dense literal's element list. */
void kiln__text_dense_free(parser *p, dense *d);
/* A number or true/false token. */
bool kiln__text_scalar_token(parser *p, elem *e);
/* After "dense<": the body up to and including '>'. */
bool kiln__text_dense_body(parser *p, dense *d);
/* Text to double with the C locale's rules whatever the current locale. */
double kiln__text_decimal_value(const char *s, size_t len, bool as_float, float *fout);
/* The literal as a tensor of type t (a new reference, not owned by a scope), or NULL. The
 * literal is checked against the type before any memory is taken, and its elements are
 * written straight into the tensor. */
kiln_tensor *kiln__text_dense_tensor(parser *p, const dense *d, const kiln__type *t);

/* text_attrs.c: attribute values, and kiln__attrs from them through the op schema */
/* size bytes of the module's arena (an error recorded when there is none). */
void *kiln__text_aalloc(parser *p, size_t size);
/* { key = value, key, ... } or (struct) key = value, ... up to `close`. */
bool kiln__text_attr_entries(parser *p, attr *a, char close);
/* Skips a balanced <...> (strings respected). */
bool kiln__text_skip_angles(parser *p, size_t start);
/* After '[': integers up to ']' as an A_ARRAY. */
bool kiln__text_int_list_attr(parser *p, attr *a);
/* Any attribute value (integers, floats, lists, arrays, dense, dicts, strings, symbols,
 * enums, structs, convolution layouts; other #dialect<...> kept opaque). */
bool kiln__text_attr_value(parser *p, attr *a);
/* The entry `key` of a dict or struct attribute, or NULL. */
const attr *kiln__text_dict_get(const attr *d, const char *key);
/* [b, 0, 1, f]x[o, i, 0, 1]->[b, 0, 1, f] into the convolution's dimension numbers. */
bool kiln__text_conv_layouts(parser *p, kiln_conv_params *c);
/* Fills op attributes from the dict through the op's schema, then what its operand and
 * result types say. */
bool kiln__text_build_attrs(parser *p, kiln_op kind, const attr *d, size_t pos,
                            const kiln__type *in, int32_t n_in, const kiln__type *out,
                            int32_t n_out, kiln__attrs *a);

/* text_ops.c: value names, regions, the generic and pretty op forms, blocks */
/* %name: its span (without '%'). */
bool kiln__text_value_name(parser *p, const char **name, size_t *len);
/* "%name: type", an argument of a function, block, region or body: the name's span, where
 * it stands (in *pos, when pos is not NULL) and the type; `after` ends the message of a
 * missing ':' ("after an argument"). */
bool kiln__text_typed_value(parser *p, const char **name, size_t *len, size_t *pos, kiln__type *t,
                            const char *after);
/* Forgets the names defined after the first `mark` (a region's, at its end). */
void kiln__text_names_pop(parser *p, int32_t mark);
/* Defines %name as `vals` (n values: %name#i); a name defined twice in scope is an
 * error at pos. */
bool kiln__text_define(parser *p, size_t pos, const char *name, size_t len, kiln__value **vals,
                       int32_t n);
/* %name or %name#i */
kiln__value *kiln__text_use_value(parser *p);
/* Frees what the ops file keeps for the whole parse (value names, op scratch). */
void kiln__text_ops_free(parser *p);
/* Ops up to the terminator, then '}'. */
bool kiln__text_block_body(parser *p, kiln__block *b, bool function, size_t open_pos);

/* text_checks.c: the check dialect (the StableHLO interpreter tests' expectations) */
/* A check.* op (name: after "check."), recorded in the current function. */
bool kiln__text_check_op(parser *p, size_t pos, const char *name, size_t len, bool custom);

/* One op (with its results' names) into b; the operands %a, %b, ... at the cursor (at most
 * cap of them, none when the next token is not a value). */
bool kiln__text_op_line(parser *p, kiln__block *b);
bool kiln__text_operands(parser *p, kiln__value **out, int32_t *n, int32_t cap);

/* ---- chlo (text_chlo.c) ------------------------------------------------------------------ */

/* A chlo op after its name (id, len; generic: it was quoted), read as StableHLO's
 * decomposition of it: the ops appended to b, the result defined under the line's names. */
bool kiln__text_chlo(parser *p, kiln__block *b, size_t pos, bool generic, const char *id,
                     size_t len, const char *const *names, const size_t *lens,
                     const size_t *name_pos, int32_t n_names);

/* ---- custom_call and composite (text_custom_call.c)
 * ---------------------------------------------------- */

/* stablehlo.custom_call after its name (generic: the quoted form; else the pretty form,
 * whose @target, as written, is target): its operands, its type into s and its record
 * (ops/custom_call.h, held by the module) into *record. */
bool kiln__text_custom_call(parser *p, size_t op_pos, bool generic, const char *target,
                            size_t target_len, kiln__value **operands, int32_t *n_operands, sig *s,
                            const kiln_tensor **record);

/* stablehlo.composite after its name: its operands, its type into s, its record (the
 * composite's name, composite_attributes and version, as a custom_call's record) into
 * *record, and its decomposition (the function it calls) into callee. */
bool kiln__text_composite(parser *p, size_t op_pos, bool generic, kiln__value **operands,
                          int32_t *n_operands, sig *s, const kiln_tensor **record,
                          const char **callee, size_t *callee_len, size_t *callee_pos);

/* ---- Shardy (text_sdy.c) ---------------------------------------------------------------- */

/* A module-level `sdy.mesh @name = <[...]>` after its keyword, into p->m's meshes. */
bool kiln__text_sdy_mesh(parser *p, size_t pos);
/* The sharding annotations among an argument's or result's attribute entries (d), as
 * text to keep (NULL when none); false on error. */
bool kiln__text_sharding_attrs(parser *p, const attr *d, const char **out);
/* `sdy.manual_computation(...) ... : (...) -> (...)` after its name, expanded into b; its
 * results are given the names in `names` (n_names of them; grouped: %x:N). */
bool kiln__text_sdy_manual(parser *p, kiln__block *b, size_t pos, const char *const *names,
                           const size_t *lens, const size_t *name_pos, int32_t n_names,
                           int32_t count, bool grouped);

#endif
