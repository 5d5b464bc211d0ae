/*
 * emit_ref.c - the reference backend's generated file (ref_ops.c): for every op with an
 * `expr` (elementwise), obvious per-element loops, one per dtype, that compute each input's
 * offset for each output index explicitly (ltc_ref_offset: broadcasting, no coalescing, no
 * fast paths); declarations of the hand-written kernels of every other op
 * (ltc_ref_kernel_<op> in the reference implementation path); and the kernel table
 * ltc_ref_kernels[LTC_OP_COUNT], which covers every op of ops.yaml.
 */
#include <string.h>

#include "model.h"

/* Emits the loop of one elementwise op for one dtype. */
static void emit_ref_loop(strbuf *b, const gen_op *op, int dt) {
    const ew_dtype *d = &ew_dtypes[dt];
    const char *otype = op->out_bool ? "bool" : d->ctype;
    const char *expr = d->is_int && op->expr_int ? op->expr_int : op->expr;
    int n = op_n_operands(op);
    sb_printf(b, "\nstatic void ref_%s_%s(const ltc_kernel_args *a) {\n", op->cname, d->suffix);
    for (int i = 0; i < op->n_args; i++) {
        const gen_arg *g = &op->args[i];
        if (!ew_is_attr(g) || !expr_uses(expr, g->name)) continue;
        bool f = g->type == ARG_FLOAT || g->type == ARG_FLOAT_OPT;
        sb_printf(b, "    const double %s = %sa->attrs[%d].%s;\n", g->name, f ? "" : "(double)",
                  ew_attr_index(op, i), f ? "f" : "i");
    }
    for (int k = 0; k < n; k++) {
        char v = (char)('x' + k);
        char id[2] = {v, 0};
        if (!expr_uses(expr, id)) continue;
        sb_printf(b, "    const %s *%c = a->in[%d];\n",
                  ew_operand_promoted(op, k) ? d->ctype : "uint8_t", v - 32, k);
    }
    sb_printf(b, "    %s *O = a->out[0];\n", otype);
    sb_puts(b, "    const ltc_shape *os = &a->out_shapes[0];\n"
               "    const int64_t n = ltc_shape_numel(os);\n"
               "    for (int64_t i = 0; i < n; i++) {\n");
    for (int k = 0; k < n; k++) {
        char v = (char)('x' + k);
        char id[2] = {v, 0};
        if (!expr_uses(expr, id)) continue;
        sb_printf(b, "        const %s %c = %c[ltc_ref_offset(os, &a->in_shapes[%d], i)];\n",
                  ew_operand_promoted(op, k) ? d->ctype : "uint8_t", v, v - 32, k);
    }
    ew_store(b, "        ", otype, expr);
    sb_puts(b, "    }\n}\n");
}

/* Emits the loops and the dtype dispatch of one elementwise op. */
static void emit_ref_kernel(strbuf *b, const gen_op *op) {
    int n_dt = ew_n_dtypes(op);
    sb_printf(b, "\n/* ---- %s: %s */\n", op->full_name, op->expr);
    for (int dt = 0; dt < n_dt; dt++) emit_ref_loop(b, op, dt);
    sb_printf(b, "\nstatic ltc_status ref_%s(const ltc_kernel_args *a) {\n", op->cname);
    sb_printf(b, "    switch (a->in_shapes[%d].dtype) {\n", ew_dispatch_operand(op));
    for (int dt = 0; dt < n_dt; dt++)
        sb_printf(b, "    case %s: ref_%s_%s(a); return LTC_OK;\n", ew_dtypes[dt].dtype,
                  op->cname, ew_dtypes[dt].suffix);
    sb_printf(b, "    default:\n        return ltc_errorf(LTC_ERR_ARG, \"%s: not implemented for "
                 "dtype %%s\",\n                          ltc_dtype_name(a->in_shapes[%d].dtype));"
                 "\n    }\n}\n", op->base_name, ew_dispatch_operand(op));
}

void emit_ref_c(const gen_model *m, const gen_options *o, strbuf *b) {
    strbuf what = {0};
    sb_printf(&what, "The reference backend's kernels: obvious per-element loops for the "
                     "elementwise ops (those with an expr), the hand-written kernels of the "
                     "others (in %s), and the table indexed by ltc_op. Written to be read, "
                     "not to be fast: it is the oracle the CPU backend is tested against and "
                     "the eager fallback for ops the CPU backend does not lower.",
              o->ref_impl_path);
    emit_banner(b, o, "ref_ops.c", what.s, false);
    sb_free(&what);
    sb_puts(b, "#include <stdbool.h>\n#include <stdint.h>\n#include <tgmath.h>\n\n"
               "#include \"ltc_kernel.h\"\n#include \"ref.h\"\n");
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (op->non_native || !op_has_entry(op) || !op->expr) continue;
        emit_ref_kernel(b, op);
    }
    sb_puts(b, "\n/* ---- hand-written kernels ------------------------------------------"
               "------------------ */\n\n");
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (op->non_native || !op_has_entry(op) || op->expr) continue;
        sb_printf(b, "ltc_status ltc_ref_kernel_%s(const ltc_kernel_args *a);\n", op->cname);
    }
    sb_puts(b, "\nconst ltc_kernel_fn ltc_ref_kernels[LTC_OP_COUNT] = {\n");
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (op->non_native || !op_has_entry(op)) continue;
        if (op->expr) sb_printf(b, "    [%s] = ref_%s,\n", op->enum_name, op->cname);
        else sb_printf(b, "    [%s] = ltc_ref_kernel_%s,\n", op->enum_name, op->cname);
    }
    sb_puts(b, "};\n");
}
