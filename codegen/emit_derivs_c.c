/*
 * emit_derivs_c.c - derivatives.c: the derivative formulas of ops.yaml translated to C, for
 * the autograd engine in src/core (the interface is src/core/ltc_derivative.h). Beside
 * derivatives.lua (emit_autograd.c), which runs the same formulas as Lua.
 *
 * Each op's formulas are parsed (formula.c) and lowered to a backward function
 * (derivs_lower.c); this file writes those and the table of every op with an entry point. A
 * formula outside what the translator knows leaves its op's backward NULL; the generator then
 * says which and why.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formula.h"

/* Whether formula e names `name` (a whole word, not a member after `.` or `:`). */
static bool formula_reads(const char *e, const char *name) {
    size_t n = strlen(name);
    for (const char *p = e; (p = strstr(p, name)); p += n) {
        bool start = p == e || !(isalnum((unsigned char)p[-1]) || p[-1] == '_' ||
                                 p[-1] == '.' || p[-1] == ':');
        bool end = !(isalnum((unsigned char)p[n]) || p[n] == '_');
        if (start && end) return true;
    }
    return false;
}

/* Per argument j, the arguments i (bit i) whose formula reads argument j; false when that
 * cannot be told (more than 64 arguments, a formula keyed by another name): the engine then
 * saves what any formula reads. */
static bool reads_masks(const gen_op *op, uint64_t *mask) {
    if (op->n_args > 64) return false;
    for (int j = 0; j < op->n_args; j++) mask[j] = 0;
    for (int k = 0; k < op->n_derivs; k++) {
        int i = 0;
        while (i < op->n_args && strcmp(op->args[i].name, op->deriv_inputs[k])) i++;
        if (i == op->n_args) return false;
        for (int j = 0; j < op->n_args; j++)
            if (formula_reads(op->deriv_exprs[k], op->args[j].name)) mask[j] |= (uint64_t)1 << i;
    }
    return true;
}

static const char *ag_kind(arg_type t) {
    switch (t) {
    case ARG_TENSOR:
    case ARG_SCALAR:
        return "LTC_AG_TENSOR";
    case ARG_TENSOR_LIST:
        return "LTC_AG_LIST";
    case ARG_INTS:
        return "LTC_AG_INTS";
    case ARG_FLOAT:
    case ARG_FLOAT_OPT:
        return "LTC_AG_FLOAT";
    case ARG_BOOL:
        return "LTC_AG_BOOL";
    case ARG_DTYPE:
    case ARG_DTYPE_OPT:
        return "LTC_AG_DTYPE";
    default:
        return "LTC_AG_INT";
    }
}

void emit_derivs_c(const gen_model *m, const gen_options *o, strbuf *b) {
    emit_banner(b, o, "derivatives.c",
                "The derivative formulas of ops.yaml as C (codegen/emit_derivs_c.c): for every op "
                "with an entry point its ltc_derivative (src/core/ltc_derivative.h), with the "
                "backward function translated from the formulas, NULL where they could not be.",
                false);
    sb_puts(b, "#include <math.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
               "#include \"grad_formulas.h\"\n#include \"ltc_derivative.h\"\n\n"
               "#define TRY(x)                                                              "
               "           \\\n"
               "    do {                                                                      "
               "             \\\n"
               "        if ((st = (x)) != LTC_OK) goto done;                                  "
               "             \\\n"
               "    } while (0)\n\n"
               "static void release_all(ltc_tensor **t, int n) {\n"
               "    for (int i = 0; i < n; i++) ltc_tensor_release(t[i]);\n}\n\n"
               "/* A helper's tensor list that was not moved into g: its entries and itself. */\n"
               "static void release_list(ltc_tensor **s, int n) {\n"
               "    if (s) release_all(s, n);\n    free(s);\n}\n\n"
               "/* On failure: g back to all NULL, every reference in it released. */\n"
               "static void clear_grads(ltc_ag_grad *g, int n) {\n"
               "    for (int i = 0; i < n; i++) {\n"
               "        ltc_tensor_release(g[i].t);\n"
               "        release_list(g[i].list, g[i].n);\n"
               "        g[i].t = NULL, g[i].list = NULL, g[i].n = 0;\n"
               "    }\n}\n");
    bool *has_bw = cg_calloc((size_t)m->n_ops + 1, sizeof *has_bw);
    int n_diff = 0, n_done = 0;
    strbuf left = {0};
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (!op_has_entry(op) || !op->has_derivs || op->not_differentiable) continue;
        n_diff++;
        char why[256] = "";
        has_bw[i] = formula_emit_backward(m, op, b, why, sizeof why);
        if (has_bw[i])
            n_done++;
        else
            sb_printf(&left, "  %s: %s\n", op->full_name, why);
    }
    sb_puts(b, "\n/* ---- the table ---- */\n");
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (!op_has_entry(op) || !op->n_args) continue;
        sb_printf(b, "static const ltc_ag_kind kinds_%s[] = {", op->cname);
        for (int k = 0; k < op->n_args; k++)
            sb_printf(b, "%s%s", k ? ", " : "", ag_kind(op->args[k].type));
        sb_printf(b, "};\nstatic const bool formulas_%s[] = {", op->cname);
        for (int k = 0; k < op->n_args; k++)
            sb_printf(b, "%s%s", k ? ", " : "",
                      !op->not_differentiable && formula_of(op, op->args[k].name) ? "true" : "false");
        sb_printf(b, "};\nstatic const bool saves_%s[] = {", op->cname);
        for (int k = 0; k < op->n_args; k++)
            sb_printf(b, "%s%s", k ? ", " : "",
                      !op->not_differentiable && deriv_uses_name(op, op->args[k].name) ? "true" : "false");
        sb_puts(b, "};\n");
        uint64_t mask[64];
        if (!op->not_differentiable && reads_masks(op, mask)) {
            sb_printf(b, "static const uint64_t reads_%s[] = {", op->cname);
            for (int k = 0; k < op->n_args; k++)
                sb_printf(b, "%s0x%llxull", k ? ", " : "", (unsigned long long)mask[k]);
            sb_puts(b, "};\n");
        }
    }
    sb_puts(b, "\nstatic const ltc_derivative table[] = {\n");
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (!op_has_entry(op)) continue;
        bool save = false;
        if (!op->not_differentiable) {
            if (op->n_rets == 1) save = deriv_uses_name(op, "result");
            for (int r = 0; r < op->n_rets; r++)
                save |= op->ret_names[r] && deriv_uses_name(op, op->ret_names[r]);
        }
        sb_printf(b, "    {\"%s\", %s, %d, %d, ", op->full_name, op->enum_name, op->n_args, op->n_rets);
        if (op->n_args) sb_printf(b, "kinds_%s, ", op->cname);
        else sb_puts(b, "NULL, ");
        sb_printf(b, "%s, %s, %s, ", op->not_differentiable ? "true" : "false",
                  op->view ? "true" : "false", save ? "true" : "false");
        if (op->n_args) sb_printf(b, "formulas_%s, ", op->cname);
        else sb_puts(b, "NULL, ");
        if (has_bw[i]) sb_printf(b, "bw_%s, ", op->cname);
        else sb_puts(b, "NULL, ");
        if (op->n_args) sb_printf(b, "saves_%s, ", op->cname);
        else sb_puts(b, "NULL, ");
        uint64_t mask[64];
        if (op->n_args && !op->not_differentiable && reads_masks(op, mask))
            sb_printf(b, "reads_%s},\n", op->cname);
        else sb_puts(b, "NULL},\n");
    }
    sb_puts(b, "};\n\n#define N_TABLE ((int)(sizeof table / sizeof table[0]))\n\n");
    sb_puts(b, "/* LTC_OP_* -> 1 + its index in table (0: no entry) */\n"
               "static const short table_index[LTC_OP_COUNT] = {\n");
    for (int i = 0, k = 0; i < m->n_ops; i++) {
        if (!op_has_entry(&m->ops[i])) continue;
        sb_printf(b, "    [%s] = %d,\n", m->ops[i].enum_name, ++k);
    }
    sb_puts(b, "};\n\n"
               "const ltc_derivative *ltc_derivative_of(int op) {\n"
               "    if (op < 0 || op >= LTC_OP_COUNT || !table_index[op]) return NULL;\n"
               "    return &table[table_index[op] - 1];\n}\n\n"
               "const ltc_derivative *ltc_derivative_find(const char *name) {\n"
               "    for (int i = 0; name && i < N_TABLE; i++)\n"
               "        if (!strcmp(table[i].name, name)) return &table[i];\n"
               "    return NULL;\n}\n");
    sb_printf(b, "\n/* %d of the %d differentiable ops have a C backward. */\n", n_done, n_diff);
    /* said only when some are missing: a run that changes nothing prints nothing */
    if (left.s)
        printf("ltcgen: derivatives.c: %d of %d differentiable ops have a C backward; "
               "left to the foreign backward:\n%s",
               n_done, n_diff, left.s);
    sb_free(&left);
    free(has_bw);
}
