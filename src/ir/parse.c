/* SPDX-License-Identifier: Apache-2.0 */
/* The text parser's module (ir/text.h): functions, calls (each call gets a copy of its
 * callee), the entry, its calling convention and checks; kiln_module_parse, which also
 * takes portable artifacts (ir/vhlo.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/file.h"
#include "core/tensor_internal.h"
#include "ir/clone.h"
#include "ir/text.h"
#include "ir/vhlo.h"

/* ---- functions and the module ---------------------------------------------------------- */

/* One func.func; results: room for MAX_VALUES declared result types (on the heap: the
 * body's regions nest below this frame). */
static bool func_def_into(parser *p, kiln__type *results) {
    kiln__text_skip(p);
    size_t fpos = p->pos;
    if (!kiln__text_expect_kw(p, "func.func", "")) return false;
    bool is_public = true;
    if (kiln__text_accept_kw(p, "public"))
        is_public = true;
    else if (kiln__text_accept_kw(p, "private"))
        is_public = false;
    else if (kiln__text_accept_kw(p, "nested"))
        is_public = false;
    if (!kiln__text_expect(p, '@', "before the function's name")) return false;
    pfunc f;
    memset(&f, 0, sizeof f);
    f.is_public = is_public;
    f.pos = fpos;
    kiln__text_skip(p);
    size_t npos = p->pos;
    if (!kiln__text_symbol_name(p, &f.name, &f.len, "the function's name")) return false;
    for (int32_t i = 0; i < p->n_funcs; i++)
        if (p->funcs[i].len == f.len && memcmp(p->funcs[i].name, f.name, f.len) == 0)
            return kiln__text_error(p, npos, "redefinition of function @%.*s",
                                    (int)(f.len > 60 ? 60 : f.len), f.name);
    f.body = kiln__block_new(p->m, NULL);
    if (!f.body) return kiln__text_oom(p);
    kiln__text_names_pop(p, 0);
    if (!kiln__text_expect(p, '(', "to open the arguments")) return false;
    int32_t cap = 0;
    if (!kiln__text_accept(p, ')')) {
        do {
            const char *name;
            size_t len, vpos;
            kiln__type t;
            if (!kiln__text_typed_value(p, &name, &len, &vpos, &t, "after an argument"))
                return false;
            if (f.body->n_args >= MAX_VALUES)
                return kiln__text_error(p, vpos, "too many arguments");
            kiln__value *v = kiln__block_add_arg(p->m, f.body, t);
            if (!v) return kiln__text_oom(p);
            int32_t i = f.body->n_args - 1;
            if (i >= cap) {
                int32_t nc = cap ? cap * 2 : 8;
                const char **names = kiln__text_aalloc(p, (size_t)nc * sizeof *names);
                bool *donor = kiln__text_aalloc(p, (size_t)nc * sizeof *donor);
                int32_t *alias = kiln__text_aalloc(p, (size_t)nc * sizeof *alias);
                const char **shard = kiln__text_aalloc(p, (size_t)nc * sizeof *shard);
                if (!names || !donor || !alias || !shard) return false;
                if (cap) {
                    memcpy(names, f.arg_names, (size_t)cap * sizeof *names);
                    memcpy(donor, f.donor, (size_t)cap * sizeof *donor);
                    memcpy(alias, f.alias_of_result, (size_t)cap * sizeof *alias);
                    memcpy(shard, f.arg_shardings, (size_t)cap * sizeof *shard);
                }
                f.arg_shardings = shard;
                f.arg_names = names;
                f.donor = donor;
                f.alias_of_result = alias;
                cap = nc;
            }
            f.arg_names[i] = NULL;
            f.arg_shardings[i] = NULL;
            f.donor[i] = false;
            f.alias_of_result[i] = -1;
            if (!kiln__text_define(p, vpos, name, len, &f.body->args[i], 1)) return false;
            if (kiln__text_accept(p, '{')) {
                attr d = {0};
                if (!kiln__text_attr_entries(p, &d, '}')) return false;
                const attr *path = kiln__text_dict_get(&d, "kiln.path");
                if (path && path->kind == A_STR &&
                    !(f.arg_names[i] = kiln__text_unescape(p, path->text, path->len)))
                    return kiln__text_oom(p);
                const attr *donor = kiln__text_dict_get(&d, "jax.buffer_donor");
                if (donor && donor->kind == A_BOOL) f.donor[i] = donor->i;
                const attr *alias = kiln__text_dict_get(&d, "tf.aliasing_output");
                if (alias && alias->kind == A_INT) {
                    f.alias_of_result[i] = (int32_t)alias->i;
                    f.donor[i] = true;
                }
                if (!kiln__text_sharding_attrs(p, &d, &f.arg_shardings[i])) return false;
            }
        } while (kiln__text_accept(p, ','));
        if (!kiln__text_expect(p, ')', "to close the arguments")) return false;
    }
    int32_t n_results = 0;
    size_t rpos = p->pos;
    kiln__text_skip(p);
    if (ch(p) == '-' && ch_at(p, p->pos + 1) == '>') {
        p->pos += 2;
        kiln__text_skip(p);
        rpos = p->pos;
        bool paren = kiln__text_accept(p, '(');
        if (!paren || !kiln__text_accept(p, ')')) {
            do {
                if (n_results >= MAX_VALUES) return kiln__text_error(p, p->pos, "too many results");
                if (!kiln__text_tensor_type(p, &results[n_results++])) return false;
                if (paren && kiln__text_accept(p, '{')) {
                    attr d = {0};
                    if (!kiln__text_attr_entries(p, &d, '}')) return false;
                    const char *sharding = NULL;
                    if (!kiln__text_sharding_attrs(p, &d, &sharding)) return false;
                    if (sharding && !f.result_shardings) {
                        f.result_shardings =
                            kiln__text_aalloc(p, MAX_VALUES * sizeof *f.result_shardings);
                        if (!f.result_shardings) return false;
                        memset(f.result_shardings, 0, MAX_VALUES * sizeof *f.result_shardings);
                    }
                    if (sharding) f.result_shardings[n_results - 1] = sharding;
                    const attr *info = kiln__text_dict_get(&d, "jax.result_info");
                    if (info && info->kind == A_STR) {
                        if (!f.result_names) {
                            f.result_names =
                                kiln__text_aalloc(p, MAX_VALUES * sizeof *f.result_names);
                            if (!f.result_names) return false;
                            memset(f.result_names, 0, MAX_VALUES * sizeof *f.result_names);
                        }
                        f.result_names[n_results - 1] =
                            kiln__text_unescape(p, info->text, info->len);
                        if (!f.result_names[n_results - 1]) return kiln__text_oom(p);
                    }
                }
            } while (paren && kiln__text_accept(p, ','));
            if (paren && !kiln__text_expect(p, ')', "to close the results")) return false;
        }
    }
    if (kiln__text_accept_kw(p, "attributes")) {
        attr d = {0};
        if (!kiln__text_expect(p, '{', "after 'attributes'") ||
            !kiln__text_attr_entries(p, &d, '}'))
            return false;
    }
    kiln__text_skip(p);
    size_t open = p->pos;
    if (!kiln__text_expect(p, '{', "to open the function's body")) return false;
    pfunc *saved = p->cur;
    p->cur = &f;
    p->nested = false;
    bool ok = kiln__text_block_body(p, f.body, true, open);
    p->cur = saved;
    if (!ok) return false;
    if (f.body->n_results != n_results)
        return kiln__text_error(p, rpos, "@%.*s returns %d values but declares %d results",
                                (int)(f.len > 60 ? 60 : f.len), f.name, (int)f.body->n_results,
                                (int)n_results);
    char tb[80], tb2[80];
    for (int32_t i = 0; i < n_results; i++)
        if (!kiln__text_same_type(f.body->results[i]->type, &results[i]))
            return kiln__text_error(p, rpos, "type mismatch: @%.*s result %d is %s, declared %s",
                                    (int)(f.len > 60 ? 60 : f.len), f.name, (int)i,
                                    kiln__text_type_str(f.body->results[i]->type, tb, sizeof tb),
                                    kiln__text_type_str(&results[i], tb2, sizeof tb2));
    pfunc *funcs = kiln__text_grow(p, p->funcs, &p->cap_funcs, p->n_funcs, sizeof *funcs, 8, true);
    if (!funcs) return false;
    p->funcs = funcs;
    p->funcs[p->n_funcs++] = f;
    return true;
}

static bool func_def(parser *p) {
    kiln__type *results = kiln__alloc(p->cx, MAX_VALUES * sizeof *results, 16, "parser types");
    if (!results) return kiln__text_oom(p);
    bool ok = func_def_into(p, results);
    kiln__free(p->cx, results, MAX_VALUES * sizeof *results);
    return ok;
}

/* ---- calls: each gets a copy of its callee's body --------------------------------------- */

static const pfunc *find_func(const parser *p, const char *name, size_t len) {
    for (int32_t i = 0; i < p->n_funcs; i++)
        if (p->funcs[i].len == len && memcmp(p->funcs[i].name, name, len) == 0) return &p->funcs[i];
    return NULL;
}

/* How messages name one of a call's lists against its callee's: "@f takes 2 arguments, the
 * call passes 3"; "type mismatch: argument 0 of @f is f32[2], the call passes i32[2]". */
typedef struct list_words {
    const char *has, *items, *item, *verb;
} list_words;
static const list_words argument_words = {"takes", "arguments", "argument", "passes"};
static const list_words result_words = {"returns", "values", "result", "expects"};

/* The callee's list (n_callee values) has the call's count (n) and types. */
static bool same_values(parser *p, const pcall *c, const list_words *w, kiln__value *const *callee,
                        int32_t n_callee, kiln__value *const *call, int32_t n) {
    int len = (int)(c->len > 60 ? 60 : c->len);
    if (n_callee != n)
        return kiln__text_error(p, c->pos, "@%.*s %s %d %s, the call %s %d", len, c->callee,
                                w->has, (int)n_callee, w->items, w->verb, (int)n);
    for (int32_t i = 0; i < n; i++)
        if (!kiln__text_same_type(callee[i]->type, call[i]->type)) {
            char tb[80], tb2[80];
            return kiln__text_error(
                p, c->pos, "type mismatch: %s %d of @%.*s is %s, the call %s %s", w->item, (int)i,
                len, c->callee, kiln__text_type_str(callee[i]->type, tb, sizeof tb), w->verb,
                kiln__text_type_str(call[i]->type, tb2, sizeof tb2));
        }
    return true;
}

/* The call's callee, checked against the call's signature. */
static const pfunc *callee_of(parser *p, const pcall *c) {
    const char *name = c->callee;
    int len = (int)(c->len > 60 ? 60 : c->len);
    const pfunc *f = find_func(p, c->callee, c->len);
    if (!f) {
        kiln__text_error(p, c->pos, "call to undefined function @%.*s", len, name);
        return NULL;
    }
    if (f->n_checks) {
        kiln__text_error(p, c->pos, "@%.*s holds check ops and cannot be called", len, name);
        return NULL;
    }
    const kiln__block *body = f->body;
    const kiln__ir_op *call = c->op;
    /* a call passes all its operands; run_parallel's program r its share */
    int32_t n_in = call->n_operands, n_out = call->n_results, in0 = 0, out0 = 0;
    if (call->kind == KILN_OP_RUN_PARALLEL) {
        n_in = call->attrs->u.grid.n_args;
        n_out = call->attrs->u.grid.n_results;
        in0 = c->region * n_in;
        out0 = c->region * n_out;
    }
    if (!same_values(p, c, &argument_words, body->args, body->n_args, call->operands + in0, n_in) ||
        !same_values(p, c, &result_words, body->results, body->n_results, call->results + out0,
                     n_out))
        return NULL;
    return f;
}

/* The call's region: a copy of the callee's body (ir/clone.h), whose own calls are
 * complete already. */
static bool copy_callee(parser *p, kiln__ir_op *call, int32_t region, const pfunc *g) {
    const kiln__block *body = g->body;
    kiln__block *nb = kiln__block_new(p->m, call);
    if (!nb) return kiln__text_oom(p);
    if (!(nb->name = kiln__arena_strndup(&p->m->arena, g->name, g->len))) return kiln__text_oom(p);
    kiln__vmap map;
    kiln__vmap_init(&map, p->cx);
    kiln_status s = KILN_OK;
    for (int32_t i = 0; i < body->n_args && s == KILN_OK; i++) {
        kiln__value *v = kiln__block_add_arg(p->m, nb, *body->args[i]->type);
        if (!v || !kiln__vmap_put(&map, body->args[i], v)) s = KILN_RESOURCE_EXHAUSTED;
    }
    if (s == KILN_OK) s = kiln__clone_ops(p->m, nb, body, &map);
    if (s == KILN_OK) {
        kiln__value **res = kiln__text_aalloc(p, (size_t)body->n_results * sizeof *res);
        for (int32_t i = 0; res && i < body->n_results && s == KILN_OK; i++)
            if (!(res[i] = kiln__vmap_get(&map, body->results[i]))) s = KILN_INTERNAL;
        s = !res           ? KILN_RESOURCE_EXHAUSTED
            : s == KILN_OK ? kiln__block_set_results(p->m, nb, res, body->n_results)
                           : s;
    }
    kiln__vmap_free(&map);
    if (s != KILN_OK) {
        if (kiln_ctx_status(p->cx) == KILN_OK) kiln__text_oom(p);
        p->failed = true; /* the copy's own error (out of memory, a stack too small) stands */
        return false;
    }
    call->regions[region] = nb;
    return true;
}

/* Gives every call in function fi a copy of its callee, the callee's own calls first, so
 * that what is copied is complete. owner[c]: the function call c is in. A function whose
 * calls are being resolved is on the current chain: calling it again is recursion. */
static bool resolve_calls(parser *p, int32_t fi, const int32_t *owner, uint8_t *state, int depth) {
    if (state[fi] == 2) return true;
    state[fi] = 1;
    for (int32_t c = 0; c < p->n_calls; c++) {
        if (owner[c] != fi) continue;
        const pcall *call = &p->calls[c];
        const pfunc *g = callee_of(p, call);
        if (!g) return false;
        int32_t gi = (int32_t)(g - p->funcs);
        if (state[gi] == 1)
            return kiln__text_error(p, call->pos, "@%.*s calls itself (recursion?)",
                                    (int)(g->len > 60 ? 60 : g->len), g->name);
        if (depth >= MAX_CALL_DEPTH)
            return kiln__text_error(p, call->pos, "calls nested more than %d deep", MAX_CALL_DEPTH);
        if (!resolve_calls(p, gi, owner, state, depth + 1) ||
            !copy_callee(p, call->op, call->region, g))
            return false;
    }
    state[fi] = 2;
    return true;
}

/* Resolves the calls reachable from the entry; every call anywhere must name a defined
 * function. */
static bool resolve_entry_calls(parser *p, int32_t entry) {
    int32_t *owner = kiln__text_aalloc(p, (size_t)p->n_calls * sizeof *owner);
    uint8_t *state = kiln__text_aalloc(p, (size_t)p->n_funcs);
    if (!owner || !state) return false;
    memset(state, 0, (size_t)p->n_funcs);
    for (int32_t c = 0; c < p->n_calls; c++) {
        const kiln__block *b = p->calls[c].op->block;
        while (b->parent)
            b = b->parent->block;
        owner[c] = -1;
        for (int32_t f = 0; f < p->n_funcs; f++)
            if (p->funcs[f].body == b) owner[c] = f;
    }
    if (!resolve_calls(p, entry, owner, state, 0)) return false;
    for (int32_t c = 0; c < p->n_calls; c++)
        if (!find_func(p, p->calls[c].callee, p->calls[c].len))
            return kiln__text_error(p, p->calls[c].pos, "call to undefined function @%.*s",
                                    (int)(p->calls[c].len > 60 ? 60 : p->calls[c].len),
                                    p->calls[c].callee);
    return true;
}

static bool finish(parser *p, const char *entry_name) {
    if (p->n_funcs == 0) return kiln__text_error(p, p->n, "no function to run");
    int32_t entry = -1;
    const char *want = entry_name ? entry_name : "main";
    for (int32_t i = 0; i < p->n_funcs; i++)
        if (span_is(p->funcs[i].name, p->funcs[i].len, want)) entry = i;
    if (entry < 0 && !entry_name && p->n_funcs == 1) entry = 0;
    if (entry < 0) {
        if (entry_name) return kiln__text_error(p, 0, "no function @%s", entry_name);
        return kiln__text_error(p, 0, "several functions and none is @main: set the entry");
    }
    for (int32_t i = 0; i < p->n_funcs; i++)
        if (i != entry && p->funcs[i].n_checks)
            return kiln__text_error(p, p->funcs[i].check_pos,
                                    "check ops are only allowed in the entry function");
    if (!resolve_entry_calls(p, entry)) return false;
    pfunc *f = &p->funcs[entry];
    char *name = kiln__arena_strndup(&p->m->arena, f->name, f->len);
    if (!name) return kiln__text_oom(p);
    kiln__func *fn = kiln__module_add_func(p->m, name, f->is_public);
    if (!fn) return kiln__text_oom(p);
    fn->body = f->body;
    fn->arg_names = f->arg_names;
    fn->result_names = f->result_names; /* room for MAX_VALUES: checks' results have none */
    fn->arg_shardings = f->arg_shardings;
    fn->result_shardings = f->result_shardings;
    kiln__block *body = f->body;
    int32_t n_ret = body->n_results;
    if (f->n_extra) {
        int32_t total = n_ret + f->n_extra;
        kiln__value **all = kiln__text_aalloc(p, (size_t)total * sizeof *all);
        if (!all) return false;
        for (int32_t i = 0; i < n_ret; i++) {
            all[i] = body->results[i];
            body->results[i]->uses--;
        }
        memcpy(all + n_ret, f->extra, (size_t)f->n_extra * sizeof *all);
        if (kiln__block_set_results(p->m, body, all, total) != KILN_OK) return kiln__text_oom(p);
        kiln_check *checks = kiln__text_aalloc(p, (size_t)f->n_checks * sizeof *checks);
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
    m->donated = kiln__text_aalloc(p, (size_t)(n_args ? n_args : 1) * sizeof(bool));
    m->preserved = kiln__text_aalloc(p, (size_t)(n_res ? n_res : 1) * sizeof(int32_t));
    m->aliases = kiln__text_aalloc(p, (size_t)(n_res ? n_res : 1) * sizeof(int32_t));
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
            return kiln__text_error(p, f->pos,
                                    "tf.aliasing_output = %d of argument %d names no result",
                                    (int)r, (int)a);
        if (m->aliases[r] >= 0)
            return kiln__text_error(p, f->pos, "result %d is aliased to two arguments", (int)r);
        if (m->preserved[r] >= 0 ||
            !kiln__text_same_type(body->args[a]->type, body->results[r]->type)) {
            m->donated[a] = true;
            continue;
        }
        m->aliases[r] = a;
    }
    return true;
}

static bool module_text(parser *p, const char *entry) {
    kiln__text_skip(p);
    bool wrapped = false;
    size_t mpos = p->pos;
    if (kiln__text_accept_kw(p, "module")) {
        wrapped = true;
        if (kiln__text_accept(p, '@')) {
            const char *name;
            size_t len;
            if (!kiln__text_symbol_name(p, &name, &len, "the module's name")) return false;
            char *n = kiln__text_unescape(p, name, len);
            if (!n) return kiln__text_oom(p);
            p->m->name = n;
        }
        if (kiln__text_accept_kw(p, "attributes")) {
            attr d = {0};
            if (!kiln__text_expect(p, '{', "after 'attributes'") ||
                !kiln__text_attr_entries(p, &d, '}'))
                return false;
            /* the grid of an SPMD program, as JAX exports it */
            const char *keys[2] = {"mhlo.num_replicas", "mhlo.num_partitions"};
            int32_t *dst[2] = {&p->m->num_replicas, &p->m->num_partitions};
            for (int k = 0; k < 2; k++) {
                const attr *v = kiln__text_dict_get(&d, keys[k]);
                if (!v) continue;
                if (v->kind != A_INT || v->i < 1 || v->i > KILN_COMM_MAX_PROCESSES)
                    return kiln__text_error(p, v->pos, "%s must be an integer from 1 to %d",
                                            keys[k], KILN_COMM_MAX_PROCESSES);
                *dst[k] = (int32_t)v->i;
            }
        }
        if (!kiln__text_expect(p, '{', "to open the module")) return false;
    }
    for (;;) {
        kiln__text_skip(p);
        if (p->pos >= p->n) {
            if (wrapped) return kiln__text_error(p, mpos, "unterminated module: expected '}'");
            break;
        }
        if (wrapped && kiln__text_accept(p, '}')) {
            kiln__text_skip(p);
            if (p->pos < p->n)
                return kiln__text_error(p, p->pos, "unexpected text after the module");
            break;
        }
        size_t at = p->pos;
        if (kiln__text_accept_kw(p, "sdy.mesh")) {
            if (!kiln__text_sdy_mesh(p, at)) return false;
            continue;
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

/* The module of StableHLO text, parsed under options o. */
static kiln_status parse_text(kiln_ctx *cx, const char *text, size_t length,
                              const kiln_parse_options *o, kiln_module **out_module) {
    parser p;
    memset(&p, 0, sizeof p);
    p.cx = cx;
    p.s = text ? text : "";
    p.n = length;
    p.filename = o->filename ? o->filename : "<text>";
    p.first_line = o->first_line ? o->first_line : 1;
    p.allow_checks = o->allow_checks;
    p.m = kiln__module_new(cx, "kiln");
    if (!p.m)
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "kiln_module_parse: out of memory");
    bool ok = module_text(&p, o->entry);
    kiln__text_ops_free(&p);
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

/* The module of a portable artifact: the VHLO reader translates it to text, which is parsed
 * here; the text's errors name the artifact and say they are in its StableHLO form. */
static kiln_status parse_artifact(kiln_ctx *cx, const void *data, size_t size,
                                  const kiln_parse_options *options, kiln_module **out_module) {
    const char *file = options->filename ? options->filename : "<bytecode>";
    char *text = NULL;
    kiln_status s = kiln__vhlo_translate(cx, data, size, file, &text);
    if (s != KILN_OK) return s;
    char name[512];
    snprintf(name, sizeof name, "%s (as StableHLO text)", file);
    kiln_parse_options o = *options;
    o.filename = name;
    o.first_line = 1;
    s = parse_text(cx, text, strlen(text), &o, out_module);
    kiln__strbuf_free_string(cx, text);
    return s;
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
    /* A portable artifact (MLIR bytecode) becomes text first, as does the one inside a
     * file of jax.export's Exported.serialize(). */
    size_t art_off = 0, art_len = length;
    if (kiln__bc_is_bytecode(text, length) ||
        kiln__jax_export_artifact(text, length, &art_off, &art_len))
        return parse_artifact(cx, text + art_off, art_len, &o, out_module);
    return parse_text(cx, text, length, &o, out_module);
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
