/*
 * csource.h - finding a C function's declarations and definitions in source text, for the
 * generator's checks (validate.c): comments, string and character literals and
 * preprocessor lines do not count, calls are told from declarations, and a parameter list
 * is compared by its types (parameter names may differ).
 */
#ifndef LTCGEN_CSOURCE_H
#define LTCGEN_CSOURCE_H

#include <stdbool.h>

#include "util.h"

/* A C file: its path, and its text with comments, string and character literals and
 * preprocessor lines blanked to spaces (newlines kept, so offsets give line numbers). */
typedef struct c_source {
    char *path;
    char *code;
} c_source;

/* Reads path into s; false (s zeroed) if it cannot be read. Free with c_source_free. */
bool c_source_load(c_source *s, const char *path);
void c_source_free(c_source *s);

/* One declaration or definition of a function found in a c_source. */
typedef struct c_func {
    int line;          /* 1-based line of the name */
    bool definition;   /* followed by a body, not by ';' */
    bool is_static;    /* `static` among the specifiers */
    char *ret;         /* the return type as written, normalised ("ltc_status") */
    char *params;      /* the parameter types, names dropped: "const ltc_shape *, ltc_shape *" */
} c_func;

/* Finds the declarations and definitions of the function `name` in s (not its calls, nor
 * the name in a comment, string or macro). Returns how many were found and sets *out to a
 * new array of them (free with c_funcs_free). */
int c_source_find(const c_source *s, const char *name, c_func **out);
void c_funcs_free(c_func *f, int n);

/* The parameter types of a declaration written as text ("ltc_status f(int a, double *b);"
 * gives "int, double *"), as c_source_find normalises them; a new string. */
char *c_decl_params(const char *decl);

#endif
