/* The pass manager and the use-replacement helper. */
#include "passes/passes.h"

int32_t kiln__passes_run(kiln_module *m, const kiln__pass *passes, int32_t n_passes,
                         int32_t max_rounds) {
    int32_t total = 0;
    for (int32_t round = 0; round < max_rounds; round++) {
        int32_t changed = 0;
        for (int32_t i = 0; i < n_passes; i++)
            changed += passes[i].run(m);
        total += changed;
        if (changed == 0) break;
    }
    return total;
}

int32_t kiln__pass_dce(kiln_module *m) { return kiln__module_dce(m); }

int32_t kiln__passes_simplify(kiln_module *m) {
    static const kiln__pass simplify[] = {
        {"canonicalize", kiln__pass_canonicalize},
        {"cse", kiln__pass_cse},
        {"dce", kiln__pass_dce},
    };
    return kiln__passes_run(m, simplify, (int32_t)(sizeof simplify / sizeof simplify[0]), 8);
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
