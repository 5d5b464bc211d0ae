/*
 * formula.h - the derivative formulas' language (a Lua expression, see emit_autograd.c) parsed
 * into a tree, for emit_derivs_c.c, which lowers it to C.
 */
#ifndef LTCGEN_FORMULA_H
#define LTCGEN_FORMULA_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    K_NUM,
    K_STR,
    K_NAME,
    K_NIL,
    K_TRUE,
    K_FALSE,
    K_UNOP,
    K_BINOP,
    K_CALL,
    K_INDEX,
    K_TABLE
} node_kind;

typedef struct node {
    node_kind kind;
    char *text;         /* K_NUM (literal), K_STR (contents), K_NAME, K_INDEX (field), K_CALL
                           (function or method name), K_UNOP/K_BINOP (operator) */
    bool is_int;        /* K_NUM */
    bool method;        /* K_CALL: recv:text(args) */
    struct node *a, *b; /* operands; K_CALL: a = receiver or the K_INDEX callee's table name */
    struct node **args; /* K_CALL and K_TABLE */
    int n_args;
} node;

/* Parses a whole formula: numbers, strings, names, nil/true/false, unary - and not, the
 * binary operators + - * / // % ^ == ~= < <= > >= and or (Lua 5.4's precedence), parentheses,
 * table constructors {a, b}, method calls x:f(args) and calls t.f(args). NULL with a reason
 * in why[0..nwhy) for anything else. Free the tree with formula_free. */
node *formula_parse(const char *text, char *why, size_t nwhy);
void formula_free(node *x);

#endif
