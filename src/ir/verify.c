/* SPDX-License-Identifier: Apache-2.0 */
/* Region signatures and the verifier. */
#include <stdio.h>

#include "base/ctx_internal.h"
#include "ir/ir.h"

static kiln__type scalar_of(kiln_dtype dtype) {
    return (kiln__type){.dtype = dtype, .shape = {.rank = 0}};
}

int32_t kiln__region_signature(kiln_ctx *cx, kiln_op op, const kiln__attrs *attrs,
                               const kiln__type *operands, int32_t n_operands, int32_t region,
                               kiln__type *out_args, int32_t cap, int32_t *out_n_results) {
    int32_t n = 0, results = 0;
    switch (op) {
    case KILN_OP_REDUCE:
    case KILN_OP_REDUCE_WINDOW: {
        int32_t k = n_operands / 2; /* inputs then inits: accumulators first, then elements */
        for (int32_t i = 0; i < k && n < cap; i++)
            out_args[n++] = scalar_of(operands[k + i].dtype);
        for (int32_t i = 0; i < k && n < cap; i++)
            out_args[n++] = scalar_of(operands[i].dtype);
        results = k;
        break;
    }
    case KILN_OP_SCATTER: {
        int32_t k = (n_operands - 1) / 2;
        for (int32_t i = 0; i < k && n < cap; i++)
            out_args[n++] = scalar_of(operands[i].dtype);
        for (int32_t i = 0; i < k && n < cap; i++)
            out_args[n++] = scalar_of(operands[k + 1 + i].dtype);
        results = k;
        break;
    }
    case KILN_OP_SORT:
        for (int32_t i = 0; i < n_operands && n + 1 < cap; i++) { /* interleaved a_i, b_i */
            out_args[n++] = scalar_of(operands[i].dtype);
            out_args[n++] = scalar_of(operands[i].dtype);
        }
        results = 1;
        break;
    case KILN_OP_MAP: /* one scalar of each input */
        for (int32_t i = 0; i < n_operands && n < cap; i++)
            out_args[n++] = scalar_of(operands[i].dtype);
        results = 1;
        break;
    case KILN_OP_SELECT_AND_SCATTER: {
        kiln_dtype d = region == 0 ? operands[0].dtype : operands[1].dtype;
        if (cap >= 2) {
            out_args[n++] = scalar_of(d);
            out_args[n++] = scalar_of(d);
        }
        results = 1;
        break;
    }
    case KILN_OP_WHILE:
        for (int32_t i = 0; i < n_operands && n < cap; i++)
            out_args[n++] = operands[i];
        results = region == 0 ? 1 : n_operands;
        break;
    case KILN_OP_IF:
    case KILN_OP_CASE: results = attrs->n_results; break;
    case KILN_OP_ALL_REDUCE:
    case KILN_OP_REDUCE_SCATTER:
    case KILN_OP_COLLECTIVE_REDUCE: /* computation: two values of the operands' type into one */
        if (cap >= 2 && n_operands > 0) {
            out_args[n++] = scalar_of(operands[0].dtype);
            out_args[n++] = scalar_of(operands[0].dtype);
        }
        results = 1;
        break;
    case KILN_OP_RUN_PARALLEL: /* program `region`: its share of the operands */
        for (int32_t i = 0; i < attrs->u.grid.n_args && n < cap; i++)
            out_args[n++] = operands[region * attrs->u.grid.n_args + i];
        results = attrs->u.grid.n_results;
        break;
    case KILN_OP_CALL:
        for (int32_t i = 0; i < n_operands && n < cap; i++)
            out_args[n++] = operands[i];
        results = attrs->n_results;
        break;
    default:
        kiln_ctx_set_error(cx, KILN_INTERNAL, "internal: op %s has no regions",
                           kiln__op_get_info(op)->name);
        return -1;
    }
    if (out_n_results) *out_n_results = results;
    return n;
}

/* Inference only checks that regions exist; it never calls them. */
static kiln_status never_called(kiln_ctx *cx, kiln_tensor *const *args, kiln_tensor **results,
                                void *user) {
    (void)args, (void)results, (void)user;
    return kiln_ctx_set_error(cx, KILN_INTERNAL, "internal: the verifier called a region");
}

typedef struct verifier {
    kiln_ctx *cx;
    const char *func;
    int32_t position;
} verifier;

static kiln_status verify_block(verifier *v, const kiln__block *b);

#define MAX_TYPES 64

static kiln_status fail(verifier *v, const kiln__ir_op *op, const char *what) {
    return kiln_ctx_set_error(v->cx, KILN_INTERNAL, "verifier: @%s, op %d (stablehlo.%s): %s",
                              v->func, v->position, kiln__op_get_info(op->kind)->name, what);
}

static kiln_status verify_op(verifier *v, const kiln__ir_op *op) {
    const kiln__op_info *info = kiln__op_get_info(op->kind);
    if (!info) return fail(v, op, "unknown op");
    if (info->n_operands >= 0 && op->n_operands != info->n_operands)
        return fail(v, op, "wrong operand count");
    if (info->n_results >= 0 && op->n_results != info->n_results)
        return fail(v, op, "wrong result count");
    if (op->n_operands > MAX_TYPES || op->n_results > MAX_TYPES)
        return fail(v, op, "too many operands or results to verify");
    kiln__type in[MAX_TYPES], out[MAX_TYPES];
    for (int32_t i = 0; i < op->n_operands; i++)
        in[i] = *op->operands[i]->type;
    /* run_parallel's results are its programs' (checked with its regions below) */
    if (!(info->flags & KILN_OPF_CONTROL) && op->kind != KILN_OP_RUN_PARALLEL) {
        kiln__attrs attrs;
        kiln_region bound[MAX_TYPES];
        if (op->n_regions > MAX_TYPES) return fail(v, op, "too many regions to verify");
        kiln__ir_bind_regions(op, &attrs, bound, never_called);
        if (kiln__infer(v->cx, op->kind, &attrs, in, op->n_operands, out, op->n_results) != KILN_OK)
            return kiln_ctx_status(v->cx);
        for (int32_t i = 0; i < op->n_results; i++) {
            const kiln__type *want = &out[i], *have = op->results[i]->type;
            if (want->dtype != have->dtype || !kiln_shape_equal(&want->shape, &have->shape))
                return fail(v, op, "a result type differs from the inferred one");
        }
    }
    for (int32_t r = 0; r < op->n_regions; r++) {
        const kiln__block *b = op->regions[r];
        if (!b) return fail(v, op, "a region is missing");
        kiln__type args[MAX_TYPES];
        int32_t n_results = 0;
        int32_t n = kiln__region_signature(v->cx, op->kind, op->attrs, in, op->n_operands, r, args,
                                           MAX_TYPES, &n_results);
        if (n < 0) return kiln_ctx_status(v->cx);
        if (b->n_args != n) return fail(v, op, "a region has the wrong number of arguments");
        for (int32_t i = 0; i < n; i++)
            if (b->args[i]->type->dtype != args[i].dtype ||
                !kiln_shape_equal(&b->args[i]->type->shape, &args[i].shape))
                return fail(v, op, "a region argument has the wrong type");
        if (b->n_results != n_results) return fail(v, op, "a region returns the wrong count");
        int32_t saved = v->position;
        kiln_status s = verify_block(v, b);
        v->position = saved;
        if (s != KILN_OK) return s;
    }
    return KILN_OK;
}

static kiln_status verify_block(verifier *v, const kiln__block *b) {
    v->position = 0;
    for (const kiln__ir_op *op = b->first; op; op = op->next) {
        kiln_status s = verify_op(v, op);
        if (s != KILN_OK) return s;
        v->position++;
    }
    return KILN_OK;
}

kiln_status kiln__module_verify(kiln_module *m) {
    for (int32_t f = 0; f < m->n_funcs; f++) {
        verifier v = {.cx = m->cx, .func = m->funcs[f]->name};
        kiln_status s = verify_block(&v, m->funcs[f]->body);
        if (s != KILN_OK) return s;
    }
    return KILN_OK;
}
