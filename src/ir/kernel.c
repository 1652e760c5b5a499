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

void kiln__kernel_print(kiln__strbuf *sb, const kiln__kernel *k, const char *indent) {
    kiln__strbuf_printf(sb, "%skernel #%d ", indent, (int)k->id);
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
            kiln__strbuf_printf(sb, "%%%d ", (int)k->operands[in->operand]->id);
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
        kiln__strbuf_printf(sb, " -> %%%d\n", (int)k->outputs[o].value->id);
    }
    if (k->reduce != KILN__KREDUCE_NONE) {
        kiln__strbuf_printf(sb, "%s  reduce %s ", indent, kiln__kreduce_name(k->reduce));
        print_reg(sb, k, k->reduce_reg);
        kiln__strbuf_puts(sb, " dims ");
        print_dims(sb, k->reduce_dims.v, k->reduce_dims.count);
        kiln__strbuf_printf(sb, " init %%%d -> %%%d\n", (int)k->operands[k->reduce_init]->id,
                            (int)k->reduce_value->id);
    }
}
