/*
 * emit_autograd.c - derivative formulas (the `derivatives:` key of ops.yaml, like PyTorch's
 * tools/autograd/derivatives.yaml): their validation, and derivatives.lua, the backward
 * function of every op as Lua, which lua/ltc/autograd.lua records and calls.
 *
 * A formula is a Lua expression over `grad` (the gradient of the op's first output),
 * `grads` (all output gradients, a table), `result` (single-output ops) or the named
 * outputs, the op's arguments by schema name (dims as positive 1-based integers, defaults
 * filled in), and the helper tables `F` (lua/ltc/autograd.lua) and `ltc`. A formula keyed
 * by a Tensor[] argument returns a table with one gradient per entry. The engine sums
 * gradients back to each input's shape where the input was broadcast, and casts them to
 * the input's dtype.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* Names every formula may use besides the op's arguments and outputs. */
static const char *const common_names[] = {
    "grad", "grads", "F", "ltc", "math", "and", "or", "not", "nil", "true", "false", NULL,
};

static bool is_arg(const gen_op *op, const char *name, bool operand_only) {
    for (int i = 0; i < op->n_args; i++)
        if (!strcmp(op->args[i].name, name))
            return !operand_only || arg_is_operand(op->args[i].type) ||
                   op->args[i].type == ARG_TENSOR_LIST;
    return false;
}

static bool is_known(const gen_op *op, const char *name) {
    for (int i = 0; common_names[i]; i++)
        if (!strcmp(common_names[i], name)) return true;
    if (op->n_rets == 1 && !strcmp(name, "result")) return true;
    for (int i = 0; i < op->n_rets; i++)
        if (op->ret_names[i] && !strcmp(op->ret_names[i], name)) return true;
    /* grad_<output>: the gradient of a later output (grad is the first one's) */
    for (int i = 1; i < op->n_rets; i++)
        if (op->ret_names[i] && !strncmp(name, "grad_", 5) && !strcmp(op->ret_names[i], name + 5))
            return true;
    return is_arg(op, name, false);
}

/* Reports the first identifier in expr that is not a known name; false if there is one.
 * Field and method names (after `.` or `:`), string literals and numbers are skipped. */
static bool check_names(const gen_op *op, const char *input, const char *e) {
    const char *p = e;
    char prev = 0; /* the last non-blank character before the token */
    while (*p) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\'') {
            char q = *p++;
            while (*p && *p != q) p += (*p == '\\' && p[1]) ? 2 : 1;
            if (*p) p++;
            prev = q;
        } else if (isdigit(c)) {
            while (isalnum((unsigned char)*p) || *p == '.' || *p == '_' ||
                   ((*p == '-' || *p == '+') && (p[-1] == 'e' || p[-1] == 'E')))
                p++;
            prev = '0';
        } else if (isalpha(c) || c == '_') {
            const char *s = p;
            while (isalnum((unsigned char)*p) || *p == '_') p++;
            bool member = (prev == '.' && !(s >= e + 2 && s[-1] == '.' && s[-2] == '.')) ||
                          prev == ':';
            if (!member) {
                char *name = cg_strndup(s, (size_t)(p - s));
                bool ok = is_known(op, name);
                if (!ok) {
                    strbuf known = {0};
                    sb_puts(&known, "grad, grads");
                    if (op->n_rets == 1) sb_puts(&known, ", result");
                    for (int i = 0; i < op->n_rets; i++)
                        if (op->ret_names[i]) sb_printf(&known, ", %s", op->ret_names[i]);
                    for (int i = 1; i < op->n_rets; i++)
                        if (op->ret_names[i]) sb_printf(&known, ", grad_%s", op->ret_names[i]);
                    for (int i = 0; i < op->n_args; i++) sb_printf(&known, ", %s", op->args[i].name);
                    sb_puts(&known, ", F, ltc, math");
                    cg_error_at(op->file, op->deriv_line, op->deriv_col,
                                "op '%s': the derivative for '%s' uses the unknown name '%s' "
                                "(known names: %s)", op->full_name, input, name, known.s);
                    sb_free(&known);
                }
                free(name);
                if (!ok) return false;
            }
            prev = 'a';
        } else {
            if (!isspace(c)) prev = (char)c;
            p++;
        }
    }
    return true;
}

bool validate_derivatives(const gen_model *m) {
    bool ok = true;
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        for (int k = 0; k < op->n_derivs; k++) {
            const char *in = op->deriv_inputs[k];
            if (!is_arg(op, in, true)) {
                strbuf list = {0};
                for (int j = 0; j < op->n_args; j++)
                    if (arg_is_operand(op->args[j].type) || op->args[j].type == ARG_TENSOR_LIST)
                        sb_printf(&list, "%s%s", list.len ? ", " : "", op->args[j].name);
                cg_error_at(op->file, op->deriv_line, op->deriv_col,
                            "op '%s': derivatives names '%s', which is not a Tensor, Scalar or "
                            "Tensor[] argument (those are: %s)", op->full_name, in,
                            list.len ? list.s : "none");
                sb_free(&list);
                ok = false;
                continue;
            }
            for (int j = 0; j < k; j++)
                if (!strcmp(op->deriv_inputs[j], in)) {
                    cg_error_at(op->file, op->deriv_line, op->deriv_col,
                                "op '%s': derivative for '%s' given twice", op->full_name, in);
                    ok = false;
                }
            ok &= check_names(op, in, op->deriv_exprs[k]);
        }
    }
    return ok;
}

/* The kind string of an argument, as lua/ltc/autograd.lua's normaliser reads it. */
static const char *arg_kind(const gen_op *op, int i) {
    switch (op->args[i].type) {
    case ARG_TENSOR: case ARG_SCALAR: return "tensor";
    case ARG_TENSOR_LIST: return "list";
    case ARG_INTS: {
        bool varargs = true; /* as emit_lua.c: a run of integers when nothing required follows */
        for (int j = i + 1; j < op->n_args; j++)
            varargs &= arg_is_optional(&op->args[j]) || op->args[j].type == ARG_DTYPE;
        return varargs ? "ints_varargs" : "ints";
    }
    case ARG_DIM: case ARG_DIM_OPT: return "dim";
    case ARG_INDEX: return "index";
    default: return "value";
    }
}

/* The Lua literal of an argument's default, or "nil". */
static const char *lua_default(const gen_arg *a) {
    switch (a->def) {
    case DEF_TRUE: return "true";
    case DEF_FALSE: return "false";
    case DEF_INT:
    case DEF_FLOAT: return a->def_text;
    default: return "nil";
    }
}

/* The formula for argument `name`, or NULL. */
static const char *formula(const gen_op *op, const char *name) {
    for (int k = 0; k < op->n_derivs; k++)
        if (!strcmp(op->deriv_inputs[k], name)) return op->deriv_exprs[k];
    return NULL;
}

static bool uses_name(const gen_op *op, const char *name) {
    for (int k = 0; k < op->n_derivs; k++) {
        const char *e = op->deriv_exprs[k], *p = e;
        size_t n = strlen(name);
        while ((p = strstr(p, name))) {
            bool start = p == e || !(isalnum((unsigned char)p[-1]) || p[-1] == '_' ||
                                     p[-1] == '.' || p[-1] == ':');
            bool end = !(isalnum((unsigned char)p[n]) || p[n] == '_');
            if (start && end) return true;
            p += n;
        }
    }
    return false;
}

bool deriv_uses_name(const gen_op *op, const char *name) { return uses_name(op, name); }

/* Lua's reserved words: an argument so named (lerp's `end`) is the local `<name>_` in the
 * generated function, and formulas that name it are rewritten to match. */
static const char *const lua_keywords[] = {
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
    "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while", NULL,
};

static bool is_keyword(const char *s, size_t n) {
    for (int i = 0; lua_keywords[i]; i++)
        if (strlen(lua_keywords[i]) == n && !strncmp(lua_keywords[i], s, n)) return true;
    return false;
}

/* The local variable name of argument `name` in the generated function. */
static void sb_local(strbuf *b, const char *name) {
    sb_puts(b, name);
    if (is_keyword(name, strlen(name))) sb_puts(b, "_");
}

/* Appends formula e with the arguments named by Lua keywords renamed (as sb_local); string
 * literals, numbers and member names (after `.` or `:`) are copied as they are. */
static void sb_formula(strbuf *b, const gen_op *op, const char *e) {
    const char *p = e;
    char prev = 0;
    while (*p) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\'') {
            const char *s = p;
            char q = *p++;
            while (*p && *p != q) p += (*p == '\\' && p[1]) ? 2 : 1;
            if (*p) p++;
            char *lit = cg_strndup(s, (size_t)(p - s));
            sb_puts(b, lit);
            free(lit);
            prev = q;
        } else if (isalpha(c) || c == '_') {
            const char *s = p;
            while (isalnum((unsigned char)*p) || *p == '_') p++;
            char *name = cg_strndup(s, (size_t)(p - s));
            sb_puts(b, name);
            if (prev != '.' && prev != ':' && is_keyword(s, (size_t)(p - s)) && is_arg(op, name, false))
                sb_puts(b, "_");
            free(name);
            prev = 'a';
        } else {
            if (!isspace(c)) prev = (char)c;
            char ch[2] = {(char)c, 0};
            sb_puts(b, ch);
            p++;
        }
    }
}

/* Emits one op's entry of the table D. */
static void emit_entry(strbuf *b, const gen_op *op) {
    sb_printf(b, "\n-- %s\nD[\"%s\"] = {\n  name = \"%s\",\n", op->schema, op->full_name,
              op->full_name);
    sb_puts(b, "  args = {");
    for (int i = 0; i < op->n_args; i++)
        sb_printf(b, "%s{\"%s\", \"%s\", %s}", i ? ", " : "", op->args[i].name, arg_kind(op, i),
                  lua_default(&op->args[i]));
    sb_printf(b, "},\n  n_outputs = %d,\n", op->n_rets);
    if (op->view) sb_puts(b, "  view = true,\n");
    if (!op->has_derivs) {
        sb_puts(b, "  -- no `derivatives:` in ops.yaml: differentiating it is an error\n}\n");
        return;
    }
    if (op->not_differentiable) {
        sb_puts(b, "  not_differentiable = true,\n}\n");
        return;
    }
    sb_puts(b, "  formulas = {");
    bool first = true;
    for (int i = 0; i < op->n_args; i++) {
        const gen_arg *a = &op->args[i];
        if (!arg_is_operand(a->type) && a->type != ARG_TENSOR_LIST) continue;
        sb_printf(b, "%s%s", first ? "" : ", ", formula(op, a->name) ? "true" : "false");
        first = false;
    }
    bool save_result = op->n_rets == 1 ? uses_name(op, "result") : false;
    for (int r = 0; r < op->n_rets && !save_result; r++)
        save_result = op->ret_names[r] && uses_name(op, op->ret_names[r]);
    sb_printf(b, "},\n  save_result = %s,\n", save_result ? "true" : "false");
    sb_puts(b, "  backward = function(a, grads, needs)\n");
    sb_puts(b, "    local grad = grads[1]\n");
    if (op->n_rets == 1 && uses_name(op, "result")) sb_puts(b, "    local result = a.result[1]\n");
    for (int r = 0; r < op->n_rets; r++)
        if (op->ret_names[r] && uses_name(op, op->ret_names[r]))
            sb_printf(b, "    local %s = a.result[%d]\n", op->ret_names[r], r + 1);
    /* grad_<output>: the gradient of another named output (grad is the first's) */
    for (int r = 1; r < op->n_rets; r++) {
        char gname[128];
        if (!op->ret_names[r]) continue;
        snprintf(gname, sizeof gname, "grad_%s", op->ret_names[r]);
        if (uses_name(op, gname) && !is_arg(op, gname, false))
            sb_printf(b, "    local %s = grads[%d]\n", gname, r + 1);
    }
    for (int i = 0; i < op->n_args; i++)
        if (uses_name(op, op->args[i].name)) {
            sb_puts(b, "    local ");
            sb_local(b, op->args[i].name);
            sb_printf(b, " = a[%d]\n", i + 1);
        }
    sb_puts(b, "    local g = {}\n");
    int k = 0;
    for (int i = 0; i < op->n_args; i++) {
        const gen_arg *a = &op->args[i];
        if (!arg_is_operand(a->type) && a->type != ARG_TENSOR_LIST) continue;
        k++;
        const char *f = formula(op, a->name);
        if (f) {
            sb_printf(b, "    if needs[%d] then g[%d] = ", k, k);
            sb_formula(b, op, f);
            sb_puts(b, " end\n");
        }
    }
    sb_puts(b, "    return g\n  end,\n}\n");
}

/* Full names of the ops with a Lua binding and this base name, in the order the generated
 * dispatcher (emit_lua.c) tries them: decreasing count of required arguments. */
static int overload_order(const gen_model *m, int first, int count, const gen_op **order) {
    int n = 0;
    for (int i = first; i < first + count; i++)
        if (op_has_entry(&m->ops[i])) order[n++] = &m->ops[i];
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            int rj = 0, rk = 0;
            for (int a = 0; a < order[j]->n_args; a++)
                if (!arg_is_optional(&order[j]->args[a])) rj = a + 1;
            for (int a = 0; a < order[j - 1]->n_args; a++)
                if (!arg_is_optional(&order[j - 1]->args[a])) rk = a + 1;
            if (rj <= rk) break;
            const gen_op *t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    return n;
}

void emit_autograd_lua(const gen_model *m, const gen_options *o, strbuf *b) {
    sb_printf(b, "-- derivatives.lua - GENERATED by ltcgen from %s; do not edit.\n--\n",
              o->source);
    sb_puts(b, "-- The backward function of every op, from the `derivatives:` formulas of ops.yaml.\n"
               "-- lua/ltc/autograd.lua loads it with the module and its helper table F; it returns\n"
               "-- D (full op name -> entry) and O (Lua function name -> its overloads, tried in\n"
               "-- order: {full name, count of required arguments}). An entry: args ({name, kind,\n"
               "-- default} in schema order), n_outputs, view (the result is a view of the first\n"
               "-- argument), and either not_differentiable, or formulas\n"
               "-- (per Tensor/Scalar/Tensor[] argument: has one), save_result and\n"
               "-- backward(a, grads, needs) -> {gradient per such argument}, where a holds the\n"
               "-- normalised arguments (a.result the outputs) and needs says which are wanted.\n");
    sb_puts(b, "return function(ltc, F)\n");
    sb_puts(b, "local D, O = {}, {}\n");
    for (int i = 0; i < m->n_ops; i++)
        if (op_has_entry(&m->ops[i])) emit_entry(b, &m->ops[i]);
    sb_puts(b, "\n-- Lua function name -> overloads in dispatch order\n");
    const gen_op **order = cg_calloc((size_t)m->n_ops + 1, sizeof *order);
    for (int i = 0, n; i < m->n_ops; i += n) {
        n = 1;
        while (i + n < m->n_ops && !strcmp(m->ops[i + n].base_name, m->ops[i].base_name)) n++;
        int k = overload_order(m, i, n, order);
        if (!k) continue;
        sb_printf(b, "O[\"%s\"] = {", order[0]->base_name);
        for (int j = 0; j < k; j++) {
            int r = 0;
            for (int a = 0; a < order[j]->n_args; a++)
                if (!arg_is_optional(&order[j]->args[a])) r = a + 1;
            sb_printf(b, "%s{\"%s\", %d}", j ? ", " : "", order[j]->full_name, r);
        }
        sb_puts(b, "}\n");
    }
    free(order);
    sb_puts(b, "return D, O\nend\n");
}
