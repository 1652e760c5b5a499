/* SPDX-License-Identifier: Apache-2.0 */
/* The pass manager and the use-replacement helper. */
#include "kiln/ctx.h"
#include "passes/passes.h"

/* Keeps the entry function's calling convention true to its body after a rewrite: a
 * result that has become an argument (an identity reshape forwarded, x * 1, ...) is
 * preserved, and no other result may then reuse that argument's donated buffer, which
 * the preserved result still reads after the call. */
static void update_convention(kiln_module *m) {
    if (m->n_funcs < 1 || !m->funcs[0] || !m->funcs[0]->body) return;
    const kiln__block *body = m->funcs[0]->body;
    for (int32_t r = 0; r < body->n_results; r++) {
        const kiln__value *v = body->results[r];
        if (v->def || v->block != body) continue;
        int32_t a = v->index;
        if (m->preserved) m->preserved[r] = a;
        if (!m->aliases) continue;
        m->aliases[r] = -1; /* it returns the argument itself */
        for (int32_t k = 0; k < body->n_results; k++)
            if (m->aliases[k] == a) m->aliases[k] = -1;
    }
}

/* With the module's ctx logging at debug level (KILN_LOG=debug), the module is logged
 * before the passes and after each pass that changed it, so every rewrite can be read
 * before and after. Best effort: printing that fails leaves no error behind. */
static void log_module(kiln_module *m, const char *what, int32_t round, int32_t changes) {
    kiln_ctx *cx = m->cx;
    if (!cx || kiln_ctx_log_level(cx) < KILN_LOG_DEBUG) return;
    bool had_error = kiln_ctx_status(cx) != KILN_OK;
    char *text = kiln_module_to_string(cx, m);
    if (!text) {
        if (!had_error) kiln_ctx_clear_error(cx);
        return;
    }
    if (round < 0)
        kiln_ctx_log(cx, KILN_LOG_DEBUG, "passes: the module before the passes:\n%s", text);
    else
        kiln_ctx_log(cx, KILN_LOG_DEBUG, "passes: round %d: %s made %d changes:\n%s",
                     (int)round + 1, what, (int)changes, text);
    kiln_string_free(cx, text);
}

static int32_t each_while(kiln_module *m, kiln__block *b,
                          int32_t (*loop)(kiln_module *m, kiln__ir_op *op)) {
    int32_t changes = 0;
    for (kiln__ir_op *op = b->first, *next; op; op = next) {
        next = op->next;
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) changes += each_while(m, op->regions[r], loop);
        if (op->kind == KILN_OP_WHILE) changes += loop(m, op);
    }
    return changes;
}

int32_t kiln__pass_each_while(kiln_module *m, int32_t (*loop)(kiln_module *m, kiln__ir_op *op)) {
    int32_t changes = 0;
    for (int32_t f = 0; f < m->n_funcs; f++)
        changes += each_while(m, m->funcs[f]->body, loop);
    return changes;
}

int32_t kiln__passes_run(kiln_module *m, const kiln__pass *passes, int32_t n_passes,
                         int32_t max_rounds) {
    enum { MAX_PASSES = 16 };
    bool stale[MAX_PASSES]; /* may find something: it has not run since a change it sees */
    if (n_passes > MAX_PASSES) n_passes = MAX_PASSES;
    for (int32_t i = 0; i < n_passes; i++)
        stale[i] = true;
    int32_t total = 0;
    if (max_rounds > 0) log_module(m, NULL, -1, 0);
    for (int32_t round = 0; round < max_rounds; round++) {
        bool ran = false;
        for (int32_t i = 0; i < n_passes; i++) {
            if (!stale[i]) continue;
            ran = true;
            int32_t c = passes[i].run(m);
            stale[i] = c > 0 && !(passes[i].flags & KILN__PASS_IDEMPOTENT);
            if (c <= 0) continue;
            log_module(m, passes[i].name, round, c);
            total += c;
            if (!(passes[i].flags & KILN__PASS_ENABLES_NOTHING))
                for (int32_t j = 0; j < n_passes; j++)
                    if (j != i) stale[j] = true;
        }
        if (!ran) break;
    }
    if (total > 0) update_convention(m);
    return total;
}

int32_t kiln__pass_dce(kiln_module *m) { return kiln__module_dce(m); }

int32_t kiln__passes_simplify(kiln_module *m, unsigned flags) {
    static const kiln__pass simplify[] = {
        /* First, so that canonicalize looks at one op where a trace made thousands of
         * equal ones (an unrolled loop's constants). One walk merges chains too: uses move
         * as the walk reaches them. */
        {"cse", kiln__pass_cse, KILN__PASS_IDEMPOTENT},
        {"canonicalize", kiln__pass_canonicalize, 0},
        /* One walk unrolls every loop it can (inner loops first). */
        {"unroll", kiln__pass_unroll, KILN__PASS_IDEMPOTENT},
        /* One walk moves everything that can move: run again, it finds nothing. */
        {"licm", kiln__pass_licm, KILN__PASS_IDEMPOTENT},
        /* One backward walk removes every dead op; removing enables nothing. */
        {"dce", kiln__pass_dce, KILN__PASS_IDEMPOTENT | KILN__PASS_ENABLES_NOTHING},
    };
    enum { N = sizeof simplify / sizeof simplify[0], UNROLL = 2 };
    kiln__pass chosen[N];
    int32_t n = 0;
    for (int32_t i = 0; i < N; i++)
        if (i != UNROLL || !(flags & KILN__SIMPLIFY_KEEP_LOOPS)) chosen[n++] = simplify[i];
    return kiln__passes_run(m, chosen, n, 8);
}

bool kiln__dims_equal(const kiln_dims *a, const kiln_dims *b) {
    if (a->count != b->count) return false;
    for (int32_t i = 0; i < a->count; i++)
        if (a->v[i] != b->v[i]) return false;
    return true;
}

void kiln__set_operand(kiln__ir_op *op, int32_t i, kiln__value *v) {
    op->operands[i]->uses--;
    v->uses++;
    op->operands[i] = v;
}

static int32_t replace_in_block(kiln__block *b, kiln__ir_op *start, kiln__value *from,
                                kiln__value *to) {
    int32_t n = 0;
    for (kiln__ir_op *op = start; op; op = op->next) {
        for (int32_t i = 0; i < op->n_operands; i++)
            if (op->operands[i] == from) {
                op->operands[i] = to;
                n++;
            }
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r])
                n += replace_in_block(op->regions[r], op->regions[r]->first, from, to);
    }
    for (int32_t i = 0; i < b->n_results; i++)
        if (b->results[i] == from) {
            b->results[i] = to;
            n++;
        }
    return n;
}

int32_t kiln__replace_uses(kiln__block *b, const kiln__ir_op *after, kiln__value *from,
                           kiln__value *to) {
    if (from == to) return 0;
    int32_t n = replace_in_block(b, after ? after->next : b->first, from, to);
    from->uses -= n;
    to->uses += n;
    return n;
}
