/*
 * emit_cpu.c - the backend's generated file (<backend>_ops.c): an elementwise kernel for
 * every full_codegen op (one inner loop per dtype, with a unit-stride fast path the
 * compiler vectorises), declarations of the hand-written kernels of `supported` ops, and
 * the kernel table indexed by ltc_op.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* The dtypes that get elementwise loops: ltc_dtype enumerator, suffix, C type. Bool
 * elements are bytes holding 0 or 1, computed on as integers (expr_int applies) and stored
 * as (value != 0). Ops with `dtypes: float` get the first two only. */
const ew_dtype ew_dtypes[EW_N_DTYPES] = {
    {"LTC_F32", "f32", "float", false},
    {"LTC_F64", "f64", "double", false},
    {"LTC_I32", "i32", "int32_t", true},
    {"LTC_I64", "i64", "int64_t", true},
    {"LTC_BOOL", "b8", "int8_t", true},
};
#define loop_dtypes ew_dtypes

int ew_n_dtypes(const gen_op *op) { return op->dtypes == DTYPES_FLOAT ? 2 : EW_N_DTYPES; }

bool ew_is_attr(const gen_arg *a) {
    return a->type == ARG_FLOAT || a->type == ARG_FLOAT_OPT || a->type == ARG_INT ||
           a->type == ARG_INT_OPT || a->type == ARG_BOOL;
}

int ew_attr_index(const gen_op *op, int arg) {
    int k = 0;
    for (int i = 0; i < arg; i++)
        k += !arg_is_operand(op->args[i].type) && op->args[i].type != ARG_TENSOR_LIST;
    return k;
}

int ew_dispatch_operand(const gen_op *op) {
    for (int k = 0; k < op_n_operands(op); k++)
        if (ew_operand_promoted(op, k)) return k;
    return 0;
}

bool ew_operand_promoted(const gen_op *op, int k) {
    return !op->promote_mask || (op->promote_mask >> k) & 1u;
}

void ew_store(strbuf *b, const char *indent, const char *otype, const char *expr) {
    if (!strcmp(otype, "int8_t") || !strcmp(otype, "bool")) {
        if (strlen(indent) + 17 + strlen(expr) <= 100)
            sb_printf(b, "%sO[i] = (%s) != 0;\n", indent, expr);
        else
            sb_printf(b, "%sO[i] = (\n%s    %s) != 0;\n", indent, indent, expr);
    } else if (strlen(indent) + 13 + strlen(otype) + strlen(expr) <= 100) {
        sb_printf(b, "%sO[i] = (%s)(%s);\n", indent, otype, expr);
    } else {
        sb_printf(b, "%sO[i] = (%s)(\n%s    %s);\n", indent, otype, indent, expr);
    }
}

/* True for characters that may continue an identifier or a number. */
static bool is_word_char(char c) {
    return c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

bool expr_uses(const char *expr, const char *ident) {
    size_t n = strlen(ident);
    for (const char *p = expr; *p; p++)
        if (!strncmp(p, ident, n) && (p == expr || !is_word_char(p[-1])) && !is_word_char(p[n]))
            return true;
    return false;
}

/* True if the one-letter identifier `v` ("x") occurs in expr as a whole token. */
static bool uses_var(const char *expr, char v) {
    char id[2] = {v, 0};
    return expr_uses(expr, id);
}

/* expr with its floating literals made float ("0.5" -> "0.5f"), for the float loops: a
 * double literal turned x * 0.5 * (1 + erf(x * 0.7071)) into double arithmetic and a double
 * erf (gelu over [16,64,512] f32 took 1.2 ms, 4x its float form). PyTorch computes float
 * tensors in float too. The caller frees the result. */
static char *float_literals(const char *expr) {
    strbuf b = {0};
    for (const char *p = expr; *p;) {
        bool start = *p >= '0' && *p <= '9' && (p == expr || !is_word_char(p[-1]));
        if (!start) {
            sb_printf(&b, "%c", *p++);
            continue;
        }
        const char *q = p;
        bool fl = false;
        while ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' ||
               ((*q == '+' || *q == '-') && (q[-1] == 'e' || q[-1] == 'E'))) {
            fl |= *q == '.' || *q == 'e' || *q == 'E';
            q++;
        }
        sb_printf(&b, "%.*s%s", (int)(q - p), p, fl ? "f" : "");
        p = q;
    }
    return b.s ? b.s : cg_strdup("");
}

/* Emits the inner loop of one op for one dtype.
 *
 * Every element goes through the same vectorized code: the loop walks chunks of
 * LTC_EW_CHUNK elements and evaluates the expression over a whole chunk with LTC_SIMD; a
 * strided, broadcast or partial chunk is first gathered into a small buffer (padded with
 * its first element). So a vector math function (libmvec's expf, say) is never mixed with
 * its scalar twin for the tail, and equal inputs give equal outputs wherever they sit. */
static void emit_loop(strbuf *b, const gen_op *op, int dt) {
    const char *ctype = loop_dtypes[dt].ctype;
    const char *otype = op->out_bool ? "bool" : ctype;
    const char *expr = loop_dtypes[dt].is_int && op->expr_int ? op->expr_int : op->expr;
    char *fexpr = !strcmp(ctype, "float") ? float_literals(expr) : NULL;
    if (fexpr) expr = fexpr;
    int n = op_n_operands(op);
    strbuf head = {0};
    sb_printf(&head, "static void ew_%s_%s(", op->cname, loop_dtypes[dt].suffix);
    sb_puts(b, "\nLTC_EW_CLONES\n");
    sb_call(b, "", head.s, "int64_t n, void *out, const void *const *in, const int64_t *stride",
            ") {");
    sb_free(&head);
    sb_printf(b, "    %s *O_ = out;\n", otype);
    for (int i = 0, j = 0; i < op->n_args; i++) {
        if (!ew_is_attr(&op->args[i])) continue;
        if (expr_uses(expr, op->args[i].name))
            sb_printf(b, "    const double %s = *(const double *)in[%d];\n", op->args[i].name,
                      n + j);
        j++;
    }
    bool any = false;
    for (int k = 0; k < n; k++) {
        char v = (char)('x' + k);
        if (!uses_var(expr, v)) continue;
        any = true;
        sb_printf(b, "    const %s *%c_ = in[%d];\n    const int64_t s%c = stride[%d];\n",
                  ew_operand_promoted(op, k) ? ctype : "uint8_t", v - 32, k, v, k);
    }
    if (!any) sb_puts(b, "    (void)in;\n    (void)stride;\n");
    /* unit strides: one vectorized loop over the whole chunks (a multiple of every vector
     * width, so the compiler's scalar epilogue never runs), then the padded last chunk */
    sb_puts(b, "    int64_t i0 = 0;\n");
    if (any) {
        strbuf unit = {0};
        for (int k = 0; k < n; k++) {
            char v = (char)('x' + k);
            if (uses_var(expr, v)) sb_printf(&unit, "%ss%c == 1", unit.s ? " && " : "", v);
        }
        sb_printf(b, "    if (%s) {\n        %s *const O = O_;\n        i0 = n - n %% LTC_EW_CHUNK;\n",
                  unit.s, otype);
        sb_puts(b, "        LTC_SIMD\n        for (int64_t i = 0; i < i0; i++) {\n");
        for (int k = 0; k < n; k++) {
            char v = (char)('x' + k);
            const char *t = ew_operand_promoted(op, k) ? ctype : "uint8_t";
            if (uses_var(expr, v)) sb_printf(b, "            const %s %c = %c_[i];\n", t, v, v - 32);
        }
        ew_store(b, "            ", otype, expr);
        sb_puts(b, "        }\n    }\n");
        sb_free(&unit);
    }
    sb_puts(b, "    for (; i0 < n; i0 += LTC_EW_CHUNK) {\n"
               "        const int64_t m = n - i0 < LTC_EW_CHUNK ? n - i0 : LTC_EW_CHUNK;\n");
    sb_printf(b, "        %s Ob[LTC_EW_CHUNK], *O = m == LTC_EW_CHUNK ? O_ + i0 : Ob;\n", otype);
    for (int k = 0; k < n; k++) {
        char v = (char)('x' + k), V = (char)(v - 32);
        const char *t = ew_operand_promoted(op, k) ? ctype : "uint8_t";
        if (!uses_var(expr, v)) continue;
        sb_printf(b, "        %s %cb[LTC_EW_CHUNK];\n", t, V);
        sb_printf(b, "        const %s *%c = %cb;\n", t, V, V);
        sb_printf(b, "        if (m == LTC_EW_CHUNK && s%c == 1)\n            %c = %c_ + i0;\n", v,
                  V, V);
        sb_printf(b, "        else\n            for (int64_t j = 0; j < LTC_EW_CHUNK; j++)\n"
                     "                %cb[j] = %c_[(i0 + (j < m ? j : 0)) * s%c];\n", V, V, v);
    }
    sb_puts(b, "        LTC_SIMD\n        for (int64_t i = 0; i < LTC_EW_CHUNK; i++) {\n");
    for (int k = 0; k < n; k++) {
        char v = (char)('x' + k);
        const char *t = ew_operand_promoted(op, k) ? ctype : "uint8_t";
        if (!uses_var(expr, v)) continue;
        sb_printf(b, "            const %s %c = %c[i];\n", t, v, v - 32);
    }
    ew_store(b, "            ", otype, expr);
    sb_puts(b, "        }\n"
               "        if (m < LTC_EW_CHUNK)\n"
               "            for (int64_t j = 0; j < m; j++) O_[i0 + j] = Ob[j];\n"
               "    }\n}\n");
    free(fexpr);
}

/* Emits the loops and the kernel of one full_codegen op. */
static void emit_kernel(strbuf *b, const gen_op *op, const char *be) {
    int n_dt = ew_n_dtypes(op);
    sb_printf(b, "\n/* ---- %s: %s */\n", op->full_name, op->expr);
    for (int dt = 0; dt < n_dt; dt++) emit_loop(b, op, dt);
    sb_printf(b, "\nstatic ltc_status k_%s(const ltc_kernel_args *a) {\n", op->cname);
    sb_puts(b, "    static const ltc_ew_loop loops[LTC_DTYPE_COUNT] = {\n");
    for (int dt = 0; dt < n_dt; dt++)
        sb_printf(b, "        [%s] = ew_%s_%s,\n", loop_dtypes[dt].dtype, op->cname,
                  loop_dtypes[dt].suffix);
    sb_printf(b, "    };\n    ltc_dtype dt = a->in_shapes[%d].dtype;\n", ew_dispatch_operand(op));
    sb_puts(b, ""
               "    ltc_ew_loop loop = (int)dt >= 0 && (int)dt < LTC_DTYPE_COUNT ? loops[dt] "
               ": NULL;\n");
    strbuf args = {0};
    sb_printf(&args, "LTC_ERR_ARG, \"%s: not implemented for dtype %%s\", ltc_dtype_name(dt)",
              op->base_name);
    sb_puts(b, "    if (!loop)\n");
    sb_call(b, "        ", "return ltc_errorf(", args.s, ");");
    sb_free(&args);
    int n_attrs = 0;
    for (int i = 0; i < op->n_args; i++) n_attrs += ew_is_attr(&op->args[i]);
    if (!n_attrs) {
        sb_printf(b, "    return ltc_%s_elementwise(a, loop);\n}\n", be);
        return;
    }
    sb_printf(b, "    const double attrs[%d] = {", n_attrs);
    for (int i = 0, j = 0; i < op->n_args; i++) {
        if (!ew_is_attr(&op->args[i])) continue;
        int k = ew_attr_index(op, i);
        bool f = op->args[i].type == ARG_FLOAT || op->args[i].type == ARG_FLOAT_OPT;
        sb_printf(b, "%sa->attrs[%d].%s", j++ ? ", " : "", k, f ? "f" : "i");
    }
    sb_printf(b, "};\n    return ltc_%s_elementwise_attrs(a, loop, attrs, %d);\n}\n", be,
              n_attrs);
}

/* The table of elementwise loops and how to call them (ltc_ew_info, elementwise.h), for the
 * fused steps of the plan: every full_codegen op with at most 4 attributes. */
static void emit_ew_info(strbuf *b, const gen_model *m, const char *be) {
    sb_printf(b, "\nconst ltc_ew_info ltc_%s_ew_info[LTC_OP_COUNT] = {\n", be);
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (op->lower != LOWER_FULL || op->non_native) continue;
        int n_attrs = 0;
        for (int a = 0; a < op->n_args; a++) n_attrs += ew_is_attr(&op->args[a]);
        if (n_attrs > 4) continue;
        sb_printf(b, "    [%s] = {\n        .loops = {\n", op->enum_name);
        for (int dt = 0; dt < ew_n_dtypes(op); dt++)
            sb_printf(b, "            [%s] = ew_%s_%s,\n", loop_dtypes[dt].dtype, op->cname,
                      loop_dtypes[dt].suffix);
        sb_printf(b, "        },\n        .dispatch = %d, .n_attrs = %d", ew_dispatch_operand(op),
                  n_attrs);
        if (n_attrs) {
            strbuf idx = {0}, flt = {0};
            for (int a = 0, j = 0; a < op->n_args; a++) {
                if (!ew_is_attr(&op->args[a])) continue;
                bool f = op->args[a].type == ARG_FLOAT || op->args[a].type == ARG_FLOAT_OPT;
                sb_printf(&idx, "%s%d", j ? ", " : "", ew_attr_index(op, a));
                sb_printf(&flt, "%s%s", j++ ? ", " : "", f ? "true" : "false");
            }
            sb_printf(b, ",\n        .attr = {%s}, .attr_float = {%s}", idx.s, flt.s);
            sb_free(&idx);
            sb_free(&flt);
        }
        sb_puts(b, ",\n    },\n");
    }
    sb_puts(b, "};\n");
}

void emit_backend_c(const gen_model *m, const gen_options *o, strbuf *b) {
    const char *be = o->backend_name;
    strbuf file = {0}, what = {0};
    sb_printf(&file, "%s_ops.c", be);
    sb_printf(&what, "The %s backend's kernels: generated elementwise kernels of the "
                     "full_codegen ops, the hand-written kernels of the supported ops (in %s), "
                     "and the table indexed by ltc_op (NULL: the op falls back to the reference "
                     "backend).", be, o->impl_path);
    emit_banner(b, o, file.s, what.s, true);
    sb_free(&file);
    sb_free(&what);
    sb_puts(b, "#include <stdbool.h>\n#include <stdint.h>\n#include <tgmath.h>\n\n"
               "#include \"elementwise.h\"\n"
               "#include \"ltc_kernel.h\"\n"
               "#include \"vmath.h\"\n");
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
    sb_printf(b, "\n/* the backend YAML's skips_unread_outputs */\n"
                 "const bool ltc_%s_skips_unread[LTC_OP_COUNT] = {\n", be);
    for (int i = 0; i < m->n_ops; i++)
        if (m->ops[i].skips_unread) sb_printf(b, "    [%s] = true,\n", m->ops[i].enum_name);
    sb_puts(b, "};\n");
    emit_ew_info(b, m, be);
}
