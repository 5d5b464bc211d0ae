/*
 * formula.c - a recursive-descent parser of the derivative formulas (formula.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formula.h"
#include "util.h"

typedef struct parser {
    const char *p;
    bool failed;
    char why[160];
} parser;

static void pfail(parser *ps, const char *msg) {
    if (!ps->failed) snprintf(ps->why, sizeof ps->why, "%s at '%.20s'", msg, ps->p);
    ps->failed = true;
}

static node *mk(node_kind k, const char *text, size_t n) {
    node *x = cg_calloc(1, sizeof *x);
    x->kind = k;
    if (text) x->text = cg_strndup(text, n);
    return x;
}

void formula_free(node *x) {
    if (!x) return;
    formula_free(x->a);
    formula_free(x->b);
    for (int i = 0; i < x->n_args; i++)
        formula_free(x->args[i]);
    free(x->args);
    free(x->text);
    free(x);
}

static void skip(parser *ps) {
    while (isspace((unsigned char)*ps->p))
        ps->p++;
}

/* Consumes `s` if it comes next (a word only when not followed by an identifier char). */
static bool accept(parser *ps, const char *s) {
    skip(ps);
    size_t n = strlen(s);
    if (strncmp(ps->p, s, n) != 0) return false;
    if (isalpha((unsigned char)s[0]) && (isalnum((unsigned char)ps->p[n]) || ps->p[n] == '_'))
        return false;
    /* `/` must not eat the first half of `//`, `=` ... handled by the callers' order */
    ps->p += n;
    return true;
}

static void expect(parser *ps, const char *s) {
    if (!accept(ps, s)) {
        char msg[40];
        snprintf(msg, sizeof msg, "'%s' expected", s);
        pfail(ps, msg);
    }
}

static node *parse_expr(parser *ps);

static void push_arg(node *x, node *a) {
    x->args = cg_realloc(x->args, (size_t)(x->n_args + 1) * sizeof *x->args);
    x->args[x->n_args++] = a;
}

/* `(` args `)` after a callee; the opening parenthesis is already consumed. */
static void parse_args(parser *ps, node *call) {
    if (accept(ps, ")")) return;
    do
        push_arg(call, parse_expr(ps));
    while (!ps->failed && accept(ps, ","));
    expect(ps, ")");
}

static node *parse_primary(parser *ps) {
    skip(ps);
    const char *s = ps->p;
    unsigned char c = (unsigned char)*s;
    if (ps->failed) return mk(K_NIL, NULL, 0);
    if (isdigit(c) || (c == '.' && isdigit((unsigned char)s[1]))) {
        bool is_int = true;
        while (isalnum((unsigned char)*ps->p) || *ps->p == '.' ||
               ((*ps->p == '-' || *ps->p == '+') && (ps->p[-1] == 'e' || ps->p[-1] == 'E'))) {
            if (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E') is_int = false;
            if (*ps->p == 'x' || *ps->p == 'X') pfail(ps, "hex literal");
            ps->p++;
        }
        node *x = mk(K_NUM, s, (size_t)(ps->p - s));
        x->is_int = is_int;
        return x;
    }
    if (c == '\'' || c == '"') {
        const char *e = strchr(s + 1, (char)c);
        if (!e || memchr(s + 1, '\\', (size_t)(e - s - 1))) {
            pfail(ps, "string");
            return mk(K_NIL, NULL, 0);
        }
        ps->p = e + 1;
        return mk(K_STR, s + 1, (size_t)(e - s - 1));
    }
    if (accept(ps, "(")) {
        node *x = parse_expr(ps);
        expect(ps, ")");
        return x;
    }
    if (accept(ps, "{")) {
        node *x = mk(K_TABLE, NULL, 0);
        if (accept(ps, "}")) return x;
        do
            push_arg(x, parse_expr(ps));
        while (!ps->failed && accept(ps, ","));
        expect(ps, "}");
        return x;
    }
    if (isalpha(c) || c == '_') {
        while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
            ps->p++;
        size_t n = (size_t)(ps->p - s);
        if (n == 3 && !strncmp(s, "nil", 3)) return mk(K_NIL, NULL, 0);
        if (n == 4 && !strncmp(s, "true", 4)) return mk(K_TRUE, NULL, 0);
        if (n == 5 && !strncmp(s, "false", 5)) return mk(K_FALSE, NULL, 0);
        return mk(K_NAME, s, n);
    }
    pfail(ps, "unexpected character");
    return mk(K_NIL, NULL, 0);
}

/* primary { `.` name | `:` name `(` args `)` | `(` args `)` } */
static node *parse_suffixed(parser *ps) {
    node *x = parse_primary(ps);
    while (!ps->failed) {
        skip(ps);
        if (*ps->p == '.' && ps->p[1] != '.') {
            ps->p++;
            skip(ps);
            const char *s = ps->p;
            while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
                ps->p++;
            node *y = mk(K_INDEX, s, (size_t)(ps->p - s));
            y->a = x;
            x = y;
        } else if (*ps->p == ':') {
            ps->p++;
            skip(ps);
            const char *s = ps->p;
            while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
                ps->p++;
            node *y = mk(K_CALL, s, (size_t)(ps->p - s));
            y->method = true;
            y->a = x;
            expect(ps, "(");
            if (!ps->failed) parse_args(ps, y);
            x = y;
        } else if (*ps->p == '(') {
            ps->p++;
            if (x->kind != K_INDEX || x->a->kind != K_NAME) {
                pfail(ps, "call of something other than ltc.f or F.f");
                return x;
            }
            node *y = mk(K_CALL, x->text, strlen(x->text));
            y->a = x->a;
            x->a = NULL;
            formula_free(x);
            parse_args(ps, y);
            x = y;
        } else {
            break;
        }
    }
    return x;
}

static node *binop(const char *op, node *a, node *b) {
    node *x = mk(K_BINOP, op, strlen(op));
    x->a = a, x->b = b;
    return x;
}

/* Lua 5.4's precedence, lowest first; `^` is right associative and binds tighter than a
 * unary operator on its left. */
static node *parse_unary(parser *ps);

static node *parse_pow(parser *ps) {
    node *x = parse_suffixed(ps);
    if (!ps->failed && accept(ps, "^")) x = binop("^", x, parse_unary(ps));
    return x;
}

static node *parse_unary(parser *ps) {
    if (accept(ps, "not")) {
        node *x = mk(K_UNOP, "not", 3);
        x->a = parse_unary(ps);
        return x;
    }
    skip(ps);
    if (*ps->p == '-') {
        ps->p++;
        node *x = mk(K_UNOP, "-", 1);
        x->a = parse_unary(ps);
        return x;
    }
    return parse_pow(ps);
}

static node *parse_mul(parser *ps) {
    node *x = parse_unary(ps);
    while (!ps->failed) {
        if (accept(ps, "//"))
            x = binop("//", x, parse_unary(ps));
        else if (accept(ps, "*"))
            x = binop("*", x, parse_unary(ps));
        else if (accept(ps, "/"))
            x = binop("/", x, parse_unary(ps));
        else if (accept(ps, "%"))
            x = binop("%", x, parse_unary(ps));
        else
            break;
    }
    return x;
}

static node *parse_add(parser *ps) {
    node *x = parse_mul(ps);
    while (!ps->failed) {
        if (accept(ps, "+"))
            x = binop("+", x, parse_mul(ps));
        else if (accept(ps, "-"))
            x = binop("-", x, parse_mul(ps));
        else
            break;
    }
    return x;
}

static node *parse_cmp(parser *ps) {
    node *x = parse_add(ps);
    static const char *const ops[] = {"==", "~=", "<=", ">=", "<", ">", NULL};
    while (!ps->failed) {
        int k = 0;
        while (ops[k] && !accept(ps, ops[k]))
            k++;
        if (!ops[k]) break;
        x = binop(ops[k], x, parse_add(ps));
    }
    return x;
}

static node *parse_and(parser *ps) {
    node *x = parse_cmp(ps);
    while (!ps->failed && accept(ps, "and"))
        x = binop("and", x, parse_cmp(ps));
    return x;
}

static node *parse_expr(parser *ps) {
    node *x = parse_and(ps);
    while (!ps->failed && accept(ps, "or"))
        x = binop("or", x, parse_and(ps));
    return x;
}

node *formula_parse(const char *text, char *why, size_t nwhy) {
    parser ps = {.p = text};
    node *e = parse_expr(&ps);
    skip(&ps);
    if (!ps.failed && *ps.p) pfail(&ps, "text after the expression");
    if (ps.failed) {
        snprintf(why, nwhy, "%s", ps.why);
        formula_free(e);
        return NULL;
    }
    return e;
}
