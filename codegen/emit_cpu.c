/*
 * emit_cpu.c - the backend's generated file (<backend>_ops.c): an elementwise kernel for
 * every full_codegen op (one inner loop per dtype, with a unit-stride fast path the
 * compiler vectorises), declarations of the hand-written kernels of `supported` ops, and
 * the kernel table indexed by ltc_op.
 */
#include <string.h>

#include "model.h"

/* The dtypes that get elementwise loops: ltc_dtype enumerator, suffix, C type. */
static const struct {
    const char *dtype, *suffix, *ctype;
    bool is_int;
} loop_dtypes[] = {
    {"LTC_F32", "f32", "float", false},
    {"LTC_F64", "f64", "double", false},
    {"LTC_I32", "i32", "int32_t", true},
    {"LTC_I64", "i64", "int64_t", true},
};
#define N_LOOP_DTYPES 4

/* True for characters that may continue an identifier or a number. */
static bool is_word_char(char c) {
    return c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

/* True if the one-letter identifier `v` ("x") occurs in expr as a whole token. */
static bool uses_var(const char *expr, char v) {
    for (const char *p = expr; *p; p++)
        if (*p == v && (p == expr || !is_word_char(p[-1])) && !is_word_char(p[1])) return true;
    return false;
}

/* Emits the operand bindings and the store of one loop body; `idx` is "i" or "i * s". */
static void emit_body(strbuf *b, const gen_op *op, const char *expr, const char *ctype,
                      const char *otype, bool strided) {
    int n = op_n_operands(op);
    sb_puts(b, "        for (int64_t i = 0; i < n; i++) {\n");
    for (int k = 0; k < n; k++) {
        char v = (char)('x' + k);
        if (!uses_var(expr, v)) continue;
        if (strided) sb_printf(b, "            const %s %c = %c[i * s%c];\n", ctype, v, v - 32, v);
        else sb_printf(b, "            const %s %c = %c[i];\n", ctype, v, v - 32);
    }
    if (12 + 13 + strlen(otype) + strlen(expr) <= 100)
        sb_printf(b, "            O[i] = (%s)(%s);\n        }\n", otype, expr);
    else
        sb_printf(b, "            O[i] = (%s)(\n                %s);\n        }\n", otype, expr);
}

/* Emits the inner loop of one op for one dtype. */
static void emit_loop(strbuf *b, const gen_op *op, int dt) {
    const char *ctype = loop_dtypes[dt].ctype;
    const char *otype = op->out_bool ? "bool" : ctype;
    const char *expr = loop_dtypes[dt].is_int && op->expr_int ? op->expr_int : op->expr;
    int n = op_n_operands(op);
    strbuf head = {0};
    sb_printf(&head, "static void ew_%s_%s(", op->cname, loop_dtypes[dt].suffix);
    sb_puts(b, "\n");
    sb_call(b, "", head.s, "int64_t n, void *out, const void *const *in, const int64_t *stride",
            ") {");
    sb_free(&head);
    sb_printf(b, "    %s *O = out;\n", otype);
    strbuf unit = {0};
    for (int k = 0; k < n; k++) {
        char v = (char)('x' + k);
        if (!uses_var(expr, v)) continue;
        sb_printf(b, "    const %s *%c = in[%d];\n    const int64_t s%c = stride[%d];\n", ctype,
                  v - 32, k, v, k);
        sb_printf(&unit, "%ss%c == 1", unit.s ? " && " : "", v);
    }
    if (unit.s) {
        sb_printf(b, "    if (%s) {\n", unit.s);
        emit_body(b, op, expr, ctype, otype, false);
        sb_puts(b, "    } else {\n");
        emit_body(b, op, expr, ctype, otype, true);
        sb_puts(b, "    }\n}\n");
    } else {
        sb_puts(b, "    (void)in;\n    (void)stride;\n    {\n");
        emit_body(b, op, expr, ctype, otype, false);
        sb_puts(b, "    }\n}\n");
    }
    sb_free(&unit);
}

/* Emits the loops and the kernel of one full_codegen op. */
static void emit_kernel(strbuf *b, const gen_op *op, const char *be) {
    int n_dt = op->dtypes == DTYPES_FLOAT ? 2 : N_LOOP_DTYPES;
    sb_printf(b, "\n/* ---- %s: %s */\n", op->full_name, op->expr);
    for (int dt = 0; dt < n_dt; dt++) emit_loop(b, op, dt);
    sb_printf(b, "\nstatic ltc_status k_%s(const ltc_kernel_args *a) {\n", op->cname);
    sb_puts(b, "    static const ltc_ew_loop loops[LTC_DTYPE_COUNT] = {\n");
    for (int dt = 0; dt < n_dt; dt++)
        sb_printf(b, "        [%s] = ew_%s_%s,\n", loop_dtypes[dt].dtype, op->cname,
                  loop_dtypes[dt].suffix);
    sb_puts(b, "    };\n    ltc_dtype dt = a->in_shapes[0].dtype;\n"
               "    ltc_ew_loop loop = (int)dt >= 0 && (int)dt < LTC_DTYPE_COUNT ? loops[dt] "
               ": NULL;\n");
    strbuf args = {0};
    sb_printf(&args, "LTC_ERR_ARG, \"%s: not implemented for dtype %%s\", ltc_dtype_name(dt)",
              op->base_name);
    sb_puts(b, "    if (!loop)\n");
    sb_call(b, "        ", "return ltc_errorf(", args.s, ");");
    sb_free(&args);
    sb_printf(b, "    return ltc_%s_elementwise(a, loop);\n}\n", be);
}

void emit_backend_c(const gen_model *m, const gen_options *o, strbuf *b) {
    const char *be = o->backend_name;
    strbuf file = {0}, what = {0};
    sb_printf(&file, "%s_ops.c", be);
    sb_printf(&what, "The %s backend's kernels: generated elementwise kernels of the "
                     "full_codegen ops, the hand-written kernels of the supported ops (in %s), "
                     "and the table indexed by ltc_op (NULL: the op falls back to the reference "
                     "backend).", be, o->impl_path);
    emit_banner(b, o, file.s, what.s);
    sb_free(&file);
    sb_free(&what);
    sb_puts(b, "#include <stdbool.h>\n#include <tgmath.h>\n\n#include \"elementwise.h\"\n"
               "#include \"ltc_kernel.h\"\n");
    for (int i = 0; i < m->n_ops; i++)
        if (m->ops[i].lower == LOWER_FULL && !m->ops[i].non_native) emit_kernel(b, &m->ops[i], be);
    sb_puts(b, "\n/* ---- hand-written kernels (supported ops) ---------------------------"
               "-------------- */\n\n");
    for (int i = 0; i < m->n_ops; i++)
        if (m->ops[i].lower == LOWER_SUPPORTED)
            sb_printf(b, "ltc_status ltc_%s_kernel_%s(const ltc_kernel_args *a);\n", be,
                      m->ops[i].cname);
    sb_printf(b, "\nconst ltc_kernel_fn ltc_%s_kernels[LTC_OP_COUNT] = {\n", be);
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (op->lower == LOWER_FULL) sb_printf(b, "    [%s] = k_%s,\n", op->enum_name, op->cname);
        else if (op->lower == LOWER_SUPPORTED)
            sb_printf(b, "    [%s] = ltc_%s_kernel_%s,\n", op->enum_name, be, op->cname);
    }
    sb_puts(b, "};\n");
}
