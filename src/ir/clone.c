/* SPDX-License-Identifier: Apache-2.0 */
#include "ir/clone.h"

#include <string.h>

#include "base/alloc.h"
#include "base/stack.h"

static size_t slot_of(const kiln__vmap *map, const kiln__value *k) {
    uintptr_t h = (uintptr_t)k;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    size_t i = (size_t)h & (map->cap - 1);
    while (map->keys[i] && map->keys[i] != k)
        i = (i + 1) & (map->cap - 1);
    return i;
}

void kiln__vmap_init(kiln__vmap *map, kiln_ctx *cx) {
    memset(map, 0, sizeof *map);
    map->cx = cx;
}

void kiln__vmap_free(kiln__vmap *map) {
    if (map->keys) {
        kiln__free(map->cx, map->keys, map->cap * sizeof *map->keys);
        kiln__free(map->cx, map->vals, map->cap * sizeof *map->vals);
    }
    map->keys = NULL;
    map->vals = NULL;
    map->cap = map->n = 0;
}

static bool grow(kiln__vmap *map) {
    size_t cap = map->cap ? map->cap * 2 : 64;
    const kiln__value **keys =
        kiln__calloc(map->cx, cap * sizeof *keys, _Alignof(void *), "kiln autodiff value map");
    kiln__value **vals =
        keys ? kiln__calloc(map->cx, cap * sizeof *vals, _Alignof(void *), "kiln value map") : NULL;
    if (!vals) {
        if (keys) kiln__free(map->cx, keys, cap * sizeof *keys);
        return false;
    }
    kiln__vmap old = *map;
    map->keys = keys;
    map->vals = vals;
    map->cap = cap;
    map->n = 0;
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.keys[i]) continue;
        size_t s = slot_of(map, old.keys[i]);
        map->keys[s] = old.keys[i];
        map->vals[s] = old.vals[i];
        map->n++;
    }
    if (old.keys) {
        kiln__free(map->cx, old.keys, old.cap * sizeof *old.keys);
        kiln__free(map->cx, old.vals, old.cap * sizeof *old.vals);
    }
    return true;
}

bool kiln__vmap_put(kiln__vmap *map, const kiln__value *k, kiln__value *v) {
    if ((map->n + 1) * 2 > map->cap && !grow(map)) return false;
    size_t s = slot_of(map, k);
    if (!map->keys[s]) {
        map->keys[s] = k;
        map->n++;
    }
    map->vals[s] = v;
    return true;
}

kiln__value *kiln__vmap_get(const kiln__vmap *map, const kiln__value *k) {
    if (!map->cap || !k) return NULL;
    size_t s = slot_of(map, k);
    return map->keys[s] ? map->vals[s] : NULL;
}

#define MAX_VALUES 256

/* The copy's results, region by region. Not inlined (nor is append_copy): their arrays of
 * MAX_VALUES live only for the call, not in every level of the recursion over regions,
 * so a nesting level costs a small frame and deep programs copy on small stacks. */
static __attribute__((noinline)) kiln_status set_results(kiln_module *dst, kiln__block *b,
                                                         const kiln__block *src, kiln__vmap *map) {
    kiln_ctx *cx = dst->cx;
    kiln__value *stack[MAX_VALUES];
    kiln__value **res = stack;
    size_t bytes = (size_t)(src->n_results ? src->n_results : 1) * sizeof *res;
    if (src->n_results > MAX_VALUES) {
        res = kiln__alloc(cx, bytes, _Alignof(void *), "copying IR");
        if (!res) return KILN_RESOURCE_EXHAUSTED;
    }
    kiln_status s = KILN_OK;
    for (int32_t i = 0; i < src->n_results && s == KILN_OK; i++) {
        res[i] = kiln__vmap_get(map, src->results[i]);
        if (!res[i])
            s = kiln_ctx_set_error(cx, KILN_INTERNAL,
                                   "internal: copying IR: a region result is not defined");
    }
    if (s == KILN_OK) s = kiln__block_set_results(dst, b, res, src->n_results);
    if (res != stack) kiln__free(cx, res, bytes);
    return s;
}

kiln_status kiln__clone_region(kiln_module *dst, kiln__ir_op *parent, int32_t r,
                               const kiln__block *src, kiln__vmap *map) {
    kiln_ctx *cx = dst->cx;
    if (kiln__stack_low(KILN__STACK_RESERVE))
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED,
                                  "copying IR: regions nested too deep for this thread's stack");
    kiln__block *b = kiln__block_new(dst, parent);
    if (!b) return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory copying IR");
    parent->regions[r] = b;
    if (src->name && !(b->name = kiln__arena_strndup(&dst->arena, src->name, strlen(src->name))))
        return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory copying IR");
    for (int32_t i = 0; i < src->n_args; i++) {
        kiln__value *v = kiln__block_add_arg(dst, b, *src->args[i]->type);
        if (!v || !kiln__vmap_put(map, src->args[i], v))
            return kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory copying IR");
    }
    kiln_status s = kiln__clone_ops(dst, b, src, map);
    return s == KILN_OK ? set_results(dst, b, src, map) : s;
}

/* op appended to `into` with its operands through map, its regions not yet copied. */
static __attribute__((noinline)) kiln__ir_op *append_copy(kiln_module *dst, kiln__block *into,
                                                          const kiln__ir_op *op, kiln__vmap *map) {
    kiln_ctx *cx = dst->cx;
    kiln__value *stack[MAX_VALUES];
    kiln__type tstack[MAX_VALUES];
    kiln__value **operands = stack;
    kiln__type *types = tstack;
    size_t obytes = (size_t)(op->n_operands ? op->n_operands : 1) * sizeof *operands;
    size_t tbytes = (size_t)(op->n_results ? op->n_results : 1) * sizeof *types;
    if (op->n_operands > MAX_VALUES) {
        operands = kiln__alloc(cx, obytes, _Alignof(void *), "copying IR");
        if (!operands) return NULL;
    }
    if (op->n_results > MAX_VALUES) {
        types = kiln__alloc(cx, tbytes, _Alignof(kiln__type), "copying IR");
        if (!types) {
            if (operands != stack) kiln__free(cx, operands, obytes);
            return NULL;
        }
    }
    kiln__ir_op *copy = NULL;
    bool ok = true;
    for (int32_t i = 0; i < op->n_operands && ok; i++) {
        operands[i] = kiln__vmap_get(map, op->operands[i]);
        if (!operands[i]) {
            kiln_ctx_set_error(cx, KILN_INTERNAL,
                               "internal: copying IR: operand %d of stablehlo.%s is not defined",
                               (int)i, kiln__op_get_info(op->kind)->name);
            ok = false;
        }
    }
    for (int32_t i = 0; i < op->n_results; i++)
        types[i] = *op->results[i]->type;
    /* A call's attrs.u.constant, when set, is a record some transform attached, and a
     * custom_call's its attributes (kept like a constant's value). */
    if (ok &&
        (op->kind == KILN_OP_CONSTANT || op->kind == KILN_OP_CALL ||
         op->kind == KILN_OP_CUSTOM_CALL) &&
        op->attrs->u.constant &&
        kiln__module_keep_constant(dst, (kiln_tensor *)op->attrs->u.constant) != KILN_OK)
        ok = false;
    if (ok) {
        copy = kiln__block_append(dst, into, op->kind, op->attrs, operands, op->n_operands, types,
                                  op->n_results, op->n_regions);
        if (!copy) kiln_ctx_set_error(cx, KILN_RESOURCE_EXHAUSTED, "out of memory copying IR");
    }
    if (operands != stack) kiln__free(cx, operands, obytes);
    if (types != tstack) kiln__free(cx, types, tbytes);
    return copy;
}

kiln__ir_op *kiln__clone_op(kiln_module *dst, kiln__block *into, const kiln__ir_op *op,
                            kiln__vmap *map) {
    kiln__ir_op *copy = append_copy(dst, into, op, map);
    for (int32_t r = 0; copy && r < op->n_regions; r++)
        if (kiln__clone_region(dst, copy, r, op->regions[r], map) != KILN_OK) copy = NULL;
    for (int32_t i = 0; copy && i < op->n_results; i++)
        if (!kiln__vmap_put(map, op->results[i], copy->results[i])) copy = NULL;
    return copy;
}

kiln_status kiln__clone_ops(kiln_module *dst, kiln__block *into, const kiln__block *src,
                            kiln__vmap *map) {
    for (const kiln__ir_op *op = src->first; op; op = op->next)
        if (!kiln__clone_op(dst, into, op, map)) return kiln_ctx_status(dst->cx);
    return KILN_OK;
}

kiln_status kiln__inline_block(kiln_module *dst, kiln__block *into, const kiln__block *src,
                               kiln__value *const *args, kiln__value **out_results) {
    kiln__vmap map;
    kiln__vmap_init(&map, dst->cx);
    kiln_status s = KILN_OK;
    for (int32_t i = 0; i < src->n_args && s == KILN_OK; i++)
        if (!kiln__vmap_put(&map, src->args[i], args[i])) s = kiln_ctx_status(dst->cx);
    if (s == KILN_OK) s = kiln__clone_ops(dst, into, src, &map);
    for (int32_t i = 0; i < src->n_results && s == KILN_OK; i++) {
        out_results[i] = kiln__vmap_get(&map, src->results[i]);
        if (!out_results[i])
            s = kiln_ctx_set_error(dst->cx, KILN_INTERNAL,
                                   "internal: inlining: result %d is not defined", (int)i);
    }
    kiln__vmap_free(&map);
    return s;
}

static void drop_uses(kiln__block *b) {
    for (kiln__ir_op *op = b->first; op; op = op->next) {
        for (int32_t i = 0; i < op->n_operands; i++)
            op->operands[i]->uses--;
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) drop_uses(op->regions[r]);
    }
    for (int32_t i = 0; i < b->n_results; i++)
        b->results[i]->uses--;
}

void kiln__op_remove(kiln__ir_op *op) {
    for (int32_t i = 0; i < op->n_operands; i++)
        op->operands[i]->uses--;
    for (int32_t r = 0; r < op->n_regions; r++)
        if (op->regions[r]) drop_uses(op->regions[r]);
    kiln__op_unlink(op);
}

/* ---- free values ------------------------------------------------------------------------ */

typedef struct free_walk {
    const kiln__block *root;
    bool float_only;
    const kiln__value **out;
    int32_t cap, n;
    kiln__vmap seen;
    bool failed;
} free_walk;

static void free_use(free_walk *w, const kiln__value *v) {
    if (w->failed || kiln__value_defined_in(v, w->root)) return;
    if (w->float_only && !kiln_dtype_is_float(v->type->dtype)) return;
    if (kiln__vmap_get(&w->seen, v)) return;
    if (w->n >= w->cap || !kiln__vmap_put(&w->seen, v, (kiln__value *)v)) {
        w->failed = true;
        return;
    }
    w->out[w->n++] = v;
}

static void free_block(free_walk *w, const kiln__block *b) {
    for (const kiln__ir_op *op = b->first; op; op = op->next) {
        for (int32_t i = 0; i < op->n_operands; i++)
            free_use(w, op->operands[i]);
        for (int32_t r = 0; r < op->n_regions; r++)
            if (op->regions[r]) free_block(w, op->regions[r]);
    }
    for (int32_t i = 0; i < b->n_results; i++)
        free_use(w, b->results[i]);
}

int32_t kiln__block_free_values(kiln_ctx *cx, const kiln__block *b, bool float_only,
                                const kiln__value **out, int32_t cap) {
    free_walk w = {.root = b, .float_only = float_only, .out = out, .cap = cap};
    kiln__vmap_init(&w.seen, cx);
    free_block(&w, b);
    kiln__vmap_free(&w.seen);
    return w.failed ? -1 : w.n;
}
