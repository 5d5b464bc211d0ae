/*
 * emit_attrs.c - the attribute table in ltc_ops.c: for every op, the names and kinds of its
 * node attributes (its non-tensor arguments in schema order), read by ltc_op_attrs() so that
 * IR dumps can print `sum(%1, dim=2, keepdim=true)` with dims back in 1-based form.
 */
#include "model.h"

/* The ltc_attr_type (ltc_ir.h) of a non-tensor argument type. */
static const char *attr_type(arg_type t) {
    switch (t) {
    case ARG_INT:
    case ARG_INT_OPT: return "LTC_ATTR_T_INT";
    case ARG_INTS: return "LTC_ATTR_T_INTS";
    case ARG_INDEX: return "LTC_ATTR_T_INDEX";
    case ARG_DIM:
    case ARG_DIM_OPT: return "LTC_ATTR_T_DIM";
    case ARG_FLOAT:
    case ARG_FLOAT_OPT: return "LTC_ATTR_T_FLOAT";
    case ARG_BOOL: return "LTC_ATTR_T_BOOL";
    case ARG_DTYPE:
    case ARG_DTYPE_OPT: return "LTC_ATTR_T_DTYPE";
    default: return NULL; /* Tensor, Scalar, Tensor[]: operands, not attributes */
    }
}

void emit_op_attrs(const gen_model *m, strbuf *b) {
    sb_puts(b, "/* Attribute names and kinds per op (ltc_op_attrs), in attribute order. */\n");
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        int n = 0;
        for (int k = 0; k < op->n_args; k++) n += attr_type(op->args[k].type) != NULL;
        if (!n) continue;
        sb_printf(b, "static const ltc_attr_info attrs_%s[] = {", op->cname);
        n = 0;
        for (int k = 0; k < op->n_args; k++) {
            const char *t = attr_type(op->args[k].type);
            if (t) sb_printf(b, "%s{\"%s\", %s}", n++ ? ", " : "", op->args[k].name, t);
        }
        sb_puts(b, "};\n");
    }
    sb_puts(b, "static const struct {\n    const ltc_attr_info *info;\n    int n;\n}"
               " op_attrs[LTC_OP_COUNT] = {\n");
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        int n = 0;
        for (int k = 0; k < op->n_args; k++) n += attr_type(op->args[k].type) != NULL;
        if (n) sb_printf(b, "    [%s] = {attrs_%s, %d},\n", op->enum_name, op->cname, n);
    }
    sb_puts(b, "};\n\nconst ltc_attr_info *ltc_op_attrs(int op, int *n) {\n"
               "    if (op < 0 || op >= LTC_OP_COUNT || !op_attrs[op].n) {\n"
               "        *n = 0;\n        return NULL;\n    }\n"
               "    *n = op_attrs[op].n;\n    return op_attrs[op].info;\n}\n\n");
}
