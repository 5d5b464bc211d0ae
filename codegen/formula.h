/*
 * formula.h - the derivative formulas' language (a Lua expression, see emit_autograd.c):
 * parsed into a tree (formula.c) and lowered to C backward functions (derivs_lower.c), for
 * emit_derivs_c.c.
 */
#ifndef LTCGEN_FORMULA_H
#define LTCGEN_FORMULA_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"

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

/* The formula given for op's argument `name`, or NULL (derivs_lower.c). */
const char *formula_of(const gen_op *op, const char *name);
/* Appends to out the C backward function of op (`static ltc_status bw_<cname>(...)`, of type
 * ltc_backward_fn) lowered from its formulas (derivs_lower.c). False, with nothing appended
 * and the reason in why[0..nwhy), when a formula is outside what the lowering knows. */
bool formula_emit_backward(const gen_model *m, const gen_op *op, strbuf *out, char *why,
                           size_t nwhy);

#endif
