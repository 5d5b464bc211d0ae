/*
 * schema.c - parsing of schema strings ("max.dim(Tensor self, dim dim, bool keepdim=False)
 * -> (Tensor values, Tensor indices)") and the facts about argument types that the
 * emitters share.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static const char *const type_names[ARG_TYPE_COUNT] = {
    [ARG_TENSOR] = "Tensor", [ARG_TENSOR_LIST] = "Tensor[]", [ARG_SCALAR] = "Scalar",
    [ARG_INT] = "int",       [ARG_INT_OPT] = "int?",         [ARG_INTS] = "int[]",
    [ARG_INDEX] = "index",   [ARG_DIM] = "dim",              [ARG_DIM_OPT] = "dim?",
    [ARG_FLOAT] = "float",   [ARG_FLOAT_OPT] = "float?",     [ARG_BOOL] = "bool",
    [ARG_DTYPE] = "ScalarType", [ARG_DTYPE_OPT] = "ScalarType?",
};

/* Argument names that would collide with the generated code's locals or with C. */
static const char *const reserved_names[] = {
    "L", "arg", "attrs", "d", "i", "n", "ndim", "ops", "out", "out_shapes", "outs", "promoted",
    "rng", "shapes", "st", "top", "auto", "bool", "break", "case", "char", "const", "continue",
    "default", "do", "double", "else", "enum", "extern", "float", "for", "goto", "if", "inline",
    "int", "long", "register", "restrict", "return", "short", "signed", "sizeof", "static",
    "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", NULL,
};

const char *arg_type_name(arg_type t) { return type_names[t]; }

bool arg_is_operand(arg_type t) { return t == ARG_TENSOR || t == ARG_SCALAR; }

bool arg_is_nullable(arg_type t) {
    return t == ARG_INT_OPT || t == ARG_DIM_OPT || t == ARG_FLOAT_OPT || t == ARG_DTYPE_OPT;
}

bool arg_is_optional(const gen_arg *a) {
    return a->def != DEF_ABSENT || arg_is_nullable(a->type) || a->generator;
}

/* A cursor over the schema string, with the op for error locations. */
typedef struct cursor {
    const char *s, *p;
    gen_op *op;
    bool failed;
} cursor;

/* Reports a schema error once per schema (the first problem is the useful one). */
static void fail(cursor *c, const char *what) {
    if (c->failed) return;
    c->failed = true;
    cg_error_at(c->op->file, c->op->line, c->op->col, "bad schema '%s': %s at column %d of it",
                c->s, what, (int)(c->p - c->s) + 1);
}

/* Reports a schema error at position `at` of the schema. */
static void fail_at(cursor *c, const char *at, const char *what) {
    c->p = at;
    fail(c, what);
}

/* Skips blanks. */
static void skip_space(cursor *c) {
    while (*c->p == ' ' || *c->p == '\t') c->p++;
}

/* Reads an identifier ([A-Za-z_][A-Za-z0-9_]*) into a new string; NULL if there is none. */
static char *read_ident(cursor *c) {
    skip_space(c);
    const char *start = c->p;
    if (!isalpha((unsigned char)*c->p) && *c->p != '_') return NULL;
    while (isalnum((unsigned char)*c->p) || *c->p == '_') c->p++;
    return cg_strndup(start, (size_t)(c->p - start));
}

/* Consumes `tok` (after spaces) if it is next. */
static bool accept(cursor *c, const char *tok) {
    skip_space(c);
    size_t n = strlen(tok);
    if (strncmp(c->p, tok, n) != 0) return false;
    c->p += n;
    return true;
}

/* Parses a type: an identifier with an optional "[]", "[N]" (int only) or "?" suffix. */
static bool read_type(cursor *c, gen_arg *a) {
    skip_space(c);
    const char *start = c->p;
    char *id = read_ident(c);
    if (!id) {
        fail(c, "expected a type");
        return false;
    }
    char name[64];
    if (!strcmp(id, "int") && c->p[0] == '[' && c->p[1] >= '1' && c->p[1] <= '8' &&
        c->p[2] == ']') {
        a->fixed_len = c->p[1] - '0';
        c->p += 3;
        snprintf(name, sizeof name, "int[]");
    } else {
        const char *suffix = strncmp(c->p, "[]", 2) == 0 ? "[]" : *c->p == '?' ? "?" : "";
        c->p += strlen(suffix);
        snprintf(name, sizeof name, "%.40s%s", id, suffix);
    }
    free(id);
    if (strcmp(name, "Generator?") == 0) { /* a Tensor (the state) that may be nil */
        a->type = ARG_TENSOR;
        a->generator = true;
        return true;
    }
    for (int t = 0; t < ARG_TYPE_COUNT; t++) {
        if (strcmp(name, type_names[t]) == 0) {
            a->type = (arg_type)t;
            return true;
        }
    }
    fail_at(c, start, "unknown type (expected Tensor, Tensor[], Scalar, int, int?, int[], "
                      "int[N], index, dim, dim?, float, float?, bool, ScalarType, ScalarType? "
                      "or Generator?)");
    return false;
}

/* True if s is an integer literal (optional minus sign, digits). */
static bool is_int_literal(const char *s) {
    if (*s == '-') s++;
    if (!isdigit((unsigned char)*s)) return false;
    while (isdigit((unsigned char)*s)) s++;
    return *s == '\0';
}

/* True if s is a float literal that C and Lua both read (digits, '.', exponent). */
static bool is_float_literal(const char *s) {
    char *end;
    if (!*s || strspn(s, "0123456789.eE+-") != strlen(s)) return false;
    strtod(s, &end);
    return *end == '\0';
}

/* Parses "=default" (already past '=') into a, checking it fits the type. */
static void read_default(cursor *c, gen_arg *a) {
    skip_space(c);
    const char *start = c->p;
    while (*c->p && *c->p != ',' && *c->p != ')' && *c->p != ' ') c->p++;
    char *text = cg_strndup(start, (size_t)(c->p - start));
    arg_type t = a->type;
    bool numeric = t == ARG_INT || t == ARG_INT_OPT || t == ARG_INDEX || t == ARG_DIM ||
                   t == ARG_DIM_OPT || t == ARG_FLOAT || t == ARG_FLOAT_OPT ||
                   (t == ARG_INTS && a->fixed_len);
    bool ok = true;
    if (strcmp(text, "None") == 0) {
        a->def = DEF_NONE;
        ok = arg_is_nullable(t);
    } else if (strcmp(text, "True") == 0 || strcmp(text, "False") == 0) {
        a->def = text[0] == 'T' ? DEF_TRUE : DEF_FALSE;
        ok = t == ARG_BOOL;
    } else if (is_int_literal(text)) {
        a->def = DEF_INT;
        a->def_text = text;
        ok = numeric && !((t == ARG_DIM || t == ARG_DIM_OPT || t == ARG_INDEX) && atoll(text) == 0);
        text = NULL;
    } else if (is_float_literal(text)) {
        a->def = DEF_FLOAT;
        a->def_text = text;
        ok = t == ARG_FLOAT || t == ARG_FLOAT_OPT;
        text = NULL;
    } else if (t == ARG_INTS && a->fixed_len && (isalpha((unsigned char)*text) || *text == '_')) {
        a->def = DEF_ARG; /* read_args checks that it names an earlier int[N] */
        a->def_text = text;
        text = NULL;
    } else {
        fail_at(c, start, "bad default (expected None, True, False, an integer or a float)");
    }
    if (!ok) {
        fail_at(c, start,
                "default does not fit the argument's type (dims and indices are 1-based)");
    }
    free(text);
}

/* Where a required argument follows a default. */
#define LEAD_DEFAULT_RULE                                                                       \
    "a required argument follows a default (only `int a=N, int b, int[] c` may, as PyTorch's "  \
    "randint(low=0, high, size): Lua leaves a out when a table stands in b's place)"

/* True if args i and i + 1 (of those parsed so far) are `int a=N, int b`, the first default. */
static bool lead_default_pair(const gen_op *op, int i) {
    if (i < 0 || i + 1 >= op->n_args) return false;
    const gen_arg *a = &op->args[i], *b = &op->args[i + 1];
    for (int j = 0; j < i; j++)
        if (op->args[j].def != DEF_ABSENT) return false;
    return a->type == ARG_INT && a->def == DEF_INT && b->type == ARG_INT && b->def == DEF_ABSENT;
}

bool arg_leads_default(const gen_op *op, int i) {
    if (!lead_default_pair(op, i) || i + 2 >= op->n_args) return false;
    const gen_arg *c = &op->args[i + 2];
    return c->type == ARG_INTS && !c->fixed_len && c->def == DEF_ABSENT;
}

/* Parses the argument list (after '(') up to and including ')'. */
static void read_args(cursor *c, gen_op *op) {
    int cap = 4;
    op->args = cg_calloc((size_t)cap, sizeof *op->args);
    if (accept(c, ")")) return;
    bool seen_default = false;
    int lead_ints = -1; /* a leading default's shape: the index where its int[] must come */
    do {
        if (op->n_args == cap) {
            cap *= 2;
            op->args = cg_realloc(op->args, (size_t)cap * sizeof *op->args);
        }
        gen_arg *a = &op->args[op->n_args];
        memset(a, 0, sizeof *a);
        if (!read_type(c, a)) return;
        const char *at = c->p;
        if (!(a->name = read_ident(c))) {
            fail(c, "expected an argument name");
            return;
        }
        op->n_args++;
        for (int i = 0; reserved_names[i]; i++)
            if (strcmp(a->name, reserved_names[i]) == 0) fail_at(c, at, "reserved name");
        if (!strncmp(a->name, "n_", 2) || !strncmp(a->name, "p_", 2))
            fail_at(c, at, "argument names may not start with n_ or p_");
        for (int i = 0; i < op->n_args - 1; i++)
            if (strcmp(a->name, op->args[i].name) == 0) fail_at(c, at, "duplicate name");
        if (accept(c, "=")) read_default(c, a);
        if (a->def == DEF_ARG) {
            int j = 0;
            while (j < op->n_args - 1 && strcmp(op->args[j].name, a->def_text)) j++;
            if (j == op->n_args - 1 || op->args[j].fixed_len != a->fixed_len)
                fail_at(c, at, "an int[N] default names an earlier int[N] argument");
        }
        int i = op->n_args - 1;
        if (i == lead_ints) { /* `int a=N, int b` goes on with `int[] c` */
            if (a->type != ARG_INTS || a->fixed_len || a->def != DEF_ABSENT)
                fail_at(c, at, LEAD_DEFAULT_RULE);
            seen_default = false;
        } else if (a->def != DEF_ABSENT) {
            seen_default = true;
        } else if (seen_default) {
            /* PyTorch's randint(low=0, high, size): the one default before required ones */
            if (lead_default_pair(op, i - 1)) lead_ints = i + 1;
            else fail_at(c, at, LEAD_DEFAULT_RULE);
        }
        if (c->failed) return;
    } while (accept(c, ","));
    if (lead_ints == op->n_args) fail(c, LEAD_DEFAULT_RULE);
    if (!accept(c, ")")) fail(c, "expected ',' or ')'");
}

/* Parses the returns after "->": Tensor, or (Tensor a, Tensor b, ...). */
static void read_returns(cursor *c, gen_op *op) {
    op->ret_names = cg_calloc(8, sizeof *op->ret_names);
    if (!accept(c, "(")) {
        if (accept(c, "Tensor")) op->n_rets = 1;
        else fail(c, "expected Tensor or (Tensor a, Tensor b)");
        return;
    }
    do {
        char *name = NULL;
        if (op->n_rets == 8) fail(c, "more than 8 returns");
        else if (!accept(c, "Tensor")) fail(c, "expected Tensor");
        else if (!(name = read_ident(c))) fail(c, "expected a return name");
        if (!name) return;
        op->ret_names[op->n_rets++] = name;
    } while (accept(c, ","));
    if (!accept(c, ")")) fail(c, "expected ',' or ')'");
}

bool schema_parse(gen_op *op, const char *schema) {
    cursor c = {.s = schema, .p = schema, .op = op};
    char *base = read_ident(&c);
    if (!base) {
        fail(&c, "expected the op name");
        return false;
    }
    char *overload = NULL;
    if (*c.p == '.') {
        c.p++;
        if (!(overload = read_ident(&c))) fail(&c, "expected an overload name after '.'");
    }
    op->base_name = base;
    size_t n = strlen(base) + (overload ? strlen(overload) + 1 : 0);
    op->full_name = cg_malloc(n + 1);
    snprintf(op->full_name, n + 1, "%s%s%s", base, overload ? "." : "", overload ? overload : "");
    free(overload);
    op->cname = cg_c_name(op->full_name, false);
    char *upper = cg_c_name(op->full_name, true);
    op->enum_name = cg_malloc(strlen(upper) + 8);
    sprintf(op->enum_name, "LTC_OP_%s", upper);
    free(upper);
    if (!c.failed && !accept(&c, "(")) fail(&c, "expected '('");
    if (!c.failed) read_args(&c, op);
    if (!c.failed && !accept(&c, "->")) fail(&c, "expected '->'");
    if (!c.failed) read_returns(&c, op);
    skip_space(&c);
    if (!c.failed && *c.p) fail(&c, "unexpected text after the returns");
    return !c.failed;
}

int op_n_operands(const gen_op *op) {
    int n = 0;
    for (int i = 0; i < op->n_args; i++) n += arg_is_operand(op->args[i].type);
    return n;
}

bool op_has_list(const gen_op *op) {
    for (int i = 0; i < op->n_args; i++)
        if (op->args[i].type == ARG_TENSOR_LIST) return true;
    return false;
}

/* One argument as a C parameter: of the op's C entry (`entry`) or of its shape function
 * (tensors are then their shapes). The table of src/core/shape_inference.h's comment. */
static void arg_param(const gen_arg *a, bool entry, strbuf *b) {
    const char *nm = a->name;
    switch (a->type) {
    case ARG_TENSOR:
    case ARG_SCALAR: sb_printf(b, entry ? "ltc_tensor *%s, " : "const ltc_shape *%s, ", nm); break;
    case ARG_TENSOR_LIST:
        sb_printf(b, entry ? "ltc_tensor *const *%s, int n_%s, " : "const ltc_shape *%s, int n_%s, ",
                  nm, nm);
        break;
    case ARG_INTS: sb_printf(b, "const int64_t *%s, int n_%s, ", nm, nm); break;
    case ARG_FLOAT:
    case ARG_FLOAT_OPT: sb_printf(b, "double %s, ", nm); break;
    case ARG_BOOL: sb_printf(b, "bool %s, ", nm); break;
    case ARG_DTYPE:
    case ARG_DTYPE_OPT: sb_printf(b, "ltc_dtype %s, ", nm); break;
    default: sb_printf(b, "int64_t %s, ", nm); break;
    }
}

void op_shape_decl(const gen_op *op, strbuf *b) {
    sb_printf(b, "ltc_status %s(", op->shape);
    for (int i = 0; i < op->n_args; i++) arg_param(&op->args[i], false, b);
    sb_puts(b, "ltc_shape *out);");
}

void emit_entry_params(const gen_op *op, strbuf *b) {
    for (int i = 0; i < op->n_args; i++) arg_param(&op->args[i], true, b);
    sb_puts(b, "ltc_tensor **out");
}
