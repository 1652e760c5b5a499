/* SPDX-License-Identifier: Apache-2.0 */
/* Fused-kernel descriptions: costs and text (see kernel.h). */
#include "ir/kernel.h"

#include <inttypes.h>

#include "ir/print.h"

static int64_t numel_of(const kiln_shape *s) {
    int64_t n = 1;
    for (int32_t d = 0; d < s->rank; d++)
        n *= s->dims[d];
    return n;
}

kiln__cost kiln__kernel_cost(const kiln__kernel *k) {
    kiln__cost c = {0};
    int64_t n = numel_of(&k->shape);
    for (int32_t j = 0; j < k->n_instrs; j++) {
        kiln_op op = k->instrs[j].op;
        if (kiln__op_transcendental(op))
            c.transcendentals += n;
        else if (op != KILN_OP_CONVERT && op != KILN_OP_SELECT)
            c.flops += n;
    }
    if (k->reduce != KILN__KREDUCE_NONE) c.flops += n;
    /* A buffer is read once, whole, unless every access to it is a scalar. */
    for (int32_t o = 0; o < k->n_operands; o++) {
        const kiln__value *v = k->operands[o];
        int64_t elems = numel_of(&v->type->shape);
        bool scalar_only = true;
        for (int32_t i = 0; i < k->n_inputs; i++)
            if (k->inputs[i].operand == o && k->inputs[i].access != KILN__KACCESS_SCALAR)
                scalar_only = false;
        if (k->reduce != KILN__KREDUCE_NONE && o == k->reduce_init) scalar_only = true;
        int64_t read = scalar_only ? 1 : elems < n ? elems : n;
        c.bytes_read += read * (int64_t)kiln_dtype_size(v->type->dtype);
    }
    for (int32_t o = 0; o < k->n_outputs; o++)
        c.bytes_written += n * (int64_t)kiln_dtype_size(k->outputs[o].value->type->dtype);
    if (k->reduce_value)
        c.bytes_written += numel_of(&k->reduce_value->type->shape) *
                           (int64_t)kiln_dtype_size(k->reduce_value->type->dtype);
    return c;
}

const char *kiln__kaccess_name(kiln__kaccess a) {
    switch (a) {
    case KILN__KACCESS_CONTIGUOUS: return "contiguous";
    case KILN__KACCESS_BROADCAST: return "broadcast";
    case KILN__KACCESS_STRIDED: return "strided";
    case KILN__KACCESS_SCALAR: return "scalar";
    case KILN__KACCESS_IOTA: return "iota";
    }
    return "?";
}

const char *kiln__kreduce_name(kiln__kreduce r) {
    static const char *const names[] = {"", "add", "multiply", "maximum", "minimum", "and", "or"};
    return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "?";
}

static void print_dims(kiln__strbuf *sb, const int64_t *d, int32_t n) {
    kiln__strbuf_puts(sb, "[");
    for (int32_t i = 0; i < n; i++)
        kiln__strbuf_printf(sb, "%s%" PRId64, i ? "," : "", d[i]);
    kiln__strbuf_puts(sb, "]");
}

static void print_type(kiln__strbuf *sb, kiln_dtype dt, const kiln_shape *s) {
    kiln__strbuf_puts(sb, kiln_dtype_name(dt));
    print_dims(sb, s->dims, s->rank);
}

static void print_reg(kiln__strbuf *sb, const kiln__kernel *k, int32_t r) {
    if (r < k->n_inputs)
        kiln__strbuf_printf(sb, "in%d", (int)r);
    else
        kiln__strbuf_printf(sb, "r%d", (int)r);
}

static void print_bits(kiln__strbuf *sb, kiln_dtype dt, uint64_t bits) {
    char text[KILN__FLOAT_TEXT];
    if (kiln__format_float(dt, bits, text)) {
        kiln__strbuf_puts(sb, text);
        return;
    }
    size_t size = kiln_dtype_size(dt);
    bool is_signed = dt == KILN_I8 || dt == KILN_I16 || dt == KILN_I32 || dt == KILN_I64;
    if (is_signed && size < 8 && (bits >> (size * 8 - 1)) & 1u) bits |= ~0ull << (size * 8);
    if (dt == KILN_BOOL)
        kiln__strbuf_puts(sb, bits ? "true" : "false");
    else if (is_signed)
        kiln__strbuf_printf(sb, "%" PRId64, (int64_t)bits);
    else
        kiln__strbuf_printf(sb, "%" PRIu64, bits);
}

/* Operand o's value as %<id> (with ^<depth> when it is of an enclosing block). */
static void print_operand(kiln__strbuf *sb, const kiln__kernel *k, const kiln__kernel_names *n,
                          int32_t o) {
    if (!n) {
        kiln__strbuf_printf(sb, "%%%d", (int)k->operands[o]->id);
        return;
    }
    kiln__strbuf_printf(sb, "%%%d", (int)n->operands[o]);
    if (n->operand_depths && n->operand_depths[o])
        kiln__strbuf_printf(sb, "^%d", (int)n->operand_depths[o]);
}

/* Output o's value (o == n_outputs: the reduction's result). */
static int32_t output_id(const kiln__kernel *k, const kiln__kernel_names *n, int32_t o) {
    if (n) return n->outputs[o];
    return o < k->n_outputs ? k->outputs[o].value->id : k->reduce_value->id;
}

void kiln__kernel_print(kiln__strbuf *sb, const kiln__kernel *k, const char *indent,
                        const kiln__kernel_names *names) {
    kiln__strbuf_printf(sb, "%skernel #%d ", indent, (int)(names ? names->id : k->id));
    print_type(sb,
               k->n_outputs      ? k->outputs[0].value->type->dtype
               : k->reduce_value ? k->instrs[k->n_instrs - 1].dtype
                                 : KILN_F32,
               &k->shape);
    kiln__strbuf_printf(sb, " (%d ops:", (int)k->n_ops);
    for (int32_t i = 0; i < k->n_ops; i++)
        kiln__strbuf_printf(sb, " %s", kiln__op_get_info(k->ops[i]->kind)->name);
    kiln__strbuf_puts(sb, ")\n");
    for (int32_t i = 0; i < k->n_inputs; i++) {
        const kiln__kinput *in = &k->inputs[i];
        kiln__strbuf_printf(sb, "%s  in%d = %s ", indent, (int)i, kiln__kaccess_name(in->access));
        if (in->access == KILN__KACCESS_IOTA) {
            kiln__strbuf_printf(sb, "%s offset %" PRId64 " strides ", kiln_dtype_name(in->dtype),
                                in->offset);
            print_dims(sb, in->strides, k->shape.rank);
        } else {
            print_operand(sb, k, names, in->operand);
            kiln__strbuf_puts(sb, " ");
            print_type(sb, in->dtype, &k->operands[in->operand]->type->shape);
            if (in->is_constant) {
                kiln__strbuf_puts(sb, " = ");
                print_bits(sb, in->dtype, in->bits);
            } else if (in->access != KILN__KACCESS_CONTIGUOUS &&
                       in->access != KILN__KACCESS_SCALAR) {
                kiln__strbuf_printf(sb, " offset %" PRId64 " strides ", in->offset);
                print_dims(sb, in->strides, k->shape.rank);
            } else if (in->access == KILN__KACCESS_SCALAR && in->offset) {
                kiln__strbuf_printf(sb, " offset %" PRId64, in->offset);
            }
        }
        kiln__strbuf_puts(sb, "\n");
    }
    for (int32_t j = 0; j < k->n_instrs; j++) {
        const kiln__kinstr *ins = &k->instrs[j];
        kiln__strbuf_printf(sb, "%s  ", indent);
        print_reg(sb, k, k->n_inputs + j);
        kiln__strbuf_printf(sb, " = %s", kiln__op_get_info(ins->op)->name);
        if (ins->op == KILN_OP_COMPARE) {
            static const char *const dir[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
            unsigned d = (unsigned)ins->direction;
            kiln__strbuf_printf(sb, " %s", d < 6 ? dir[d] : "?");
        }
        for (int32_t a = 0; a < ins->n_args; a++) {
            kiln__strbuf_puts(sb, a ? ", " : " ");
            print_reg(sb, k, ins->args[a]);
        }
        kiln__strbuf_printf(sb, " : %s\n", kiln_dtype_name(ins->dtype));
    }
    for (int32_t o = 0; o < k->n_outputs; o++) {
        kiln__strbuf_printf(sb, "%s  out ", indent);
        print_reg(sb, k, k->outputs[o].reg);
        kiln__strbuf_printf(sb, " -> %%%d\n", (int)output_id(k, names, o));
    }
    if (k->reduce != KILN__KREDUCE_NONE) {
        kiln__strbuf_printf(sb, "%s  reduce %s ", indent, kiln__kreduce_name(k->reduce));
        print_reg(sb, k, k->reduce_reg);
        kiln__strbuf_puts(sb, " dims ");
        print_dims(sb, k->reduce_dims.v, k->reduce_dims.count);
        kiln__strbuf_puts(sb, " init ");
        print_operand(sb, k, names, k->reduce_init);
        kiln__strbuf_printf(sb, " -> %%%d\n", (int)output_id(k, names, k->n_outputs));
    }
}

/* ---- identity: kernels that are the same code ------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_type(uint64_t h, const kiln__type *t) {
    h = mix(mix(h, (uint64_t)t->dtype), (uint64_t)t->shape.rank);
    for (int32_t d = 0; d < t->shape.rank; d++)
        h = mix(h, (uint64_t)t->shape.dims[d]);
    return h;
}

uint64_t kiln__kernel_hash(const kiln__kernel *k) {
    uint64_t h = mix(mix((uint64_t)k->n_instrs, (uint64_t)k->n_inputs), (uint64_t)k->n_ops);
    h = mix(mix(h, (uint64_t)k->shape.rank), (uint64_t)numel_of(&k->shape));
    for (int32_t o = 0; o < k->n_operands; o++)
        h = hash_type(h, k->operands[o]->type);
    for (int32_t i = 0; i < k->n_inputs; i++) {
        const kiln__kinput *in = &k->inputs[i];
        h = mix(mix(mix(h, (uint64_t)in->access), (uint64_t)in->operand), (uint64_t)in->offset);
        h = mix(h, in->bits);
    }
    for (int32_t j = 0; j < k->n_instrs; j++)
        h = mix(mix(h, (uint64_t)k->instrs[j].op), (uint64_t)k->instrs[j].dtype);
    for (int32_t o = 0; o < k->n_outputs; o++)
        h = mix(h, (uint64_t)k->outputs[o].reg);
    return mix(h, (uint64_t)k->reduce);
}

static bool type_same(const kiln__type *a, const kiln__type *b) {
    return a == b || (a->dtype == b->dtype && kiln_shape_equal(&a->shape, &b->shape));
}

static bool input_same(const kiln__kinput *a, const kiln__kinput *b, int32_t rank) {
    if (a->access != b->access || a->dtype != b->dtype || a->operand != b->operand ||
        a->offset != b->offset || a->is_constant != b->is_constant || a->bits != b->bits)
        return false;
    for (int32_t d = 0; d < rank; d++)
        if (a->strides[d] != b->strides[d]) return false;
    return true;
}

static bool instr_same(const kiln__kinstr *a, const kiln__kinstr *b) {
    if (a->op != b->op || a->dtype != b->dtype || a->in_dtype != b->in_dtype ||
        a->n_args != b->n_args)
        return false;
    for (int32_t i = 0; i < a->n_args; i++)
        if (a->args[i] != b->args[i]) return false;
    return a->op != KILN_OP_COMPARE ||
           (a->direction == b->direction && a->compare_type == b->compare_type);
}

bool kiln__kernel_same(const kiln__kernel *a, const kiln__kernel *b) {
    if (a->n_operands != b->n_operands || a->n_inputs != b->n_inputs ||
        a->n_instrs != b->n_instrs || a->n_outputs != b->n_outputs || a->n_ops != b->n_ops ||
        a->reduce != b->reduce || !kiln_shape_equal(&a->shape, &b->shape))
        return false;
    for (int32_t o = 0; o < a->n_operands; o++)
        if (!type_same(a->operands[o]->type, b->operands[o]->type)) return false;
    for (int32_t i = 0; i < a->n_inputs; i++)
        if (!input_same(&a->inputs[i], &b->inputs[i], a->shape.rank)) return false;
    for (int32_t j = 0; j < a->n_instrs; j++)
        if (!instr_same(&a->instrs[j], &b->instrs[j])) return false;
    for (int32_t o = 0; o < a->n_outputs; o++)
        if (a->outputs[o].reg != b->outputs[o].reg ||
            !type_same(a->outputs[o].value->type, b->outputs[o].value->type))
            return false;
    for (int32_t m = 0; m < a->n_ops; m++)
        if (a->ops[m]->kind != b->ops[m]->kind) return false;
    if (a->reduce == KILN__KREDUCE_NONE) return true;
    if (a->reduce_reg != b->reduce_reg || a->reduce_init != b->reduce_init ||
        a->reduce_dtype != b->reduce_dtype || a->reduce_dims.count != b->reduce_dims.count ||
        !type_same(a->reduce_value->type, b->reduce_value->type))
        return false;
    for (int32_t i = 0; i < a->reduce_dims.count; i++)
        if (a->reduce_dims.v[i] != b->reduce_dims.v[i]) return false;
    return true;
}
