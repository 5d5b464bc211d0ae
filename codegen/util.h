/*
 * util.h - small helpers of the code generator: checked allocation, a growable string
 * buffer with printf-style appends, and error reporting that counts errors so that
 * validation can report all of them before the program exits with status 1.
 */
#ifndef LTCGEN_UTIL_H
#define LTCGEN_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* malloc/calloc/realloc/strdup that exit(1) with a message when memory runs out. */
void *cg_malloc(size_t n);
void *cg_calloc(size_t n, size_t size);
void *cg_realloc(void *p, size_t n);
char *cg_strdup(const char *s);
char *cg_strndup(const char *s, size_t n);

/* A growable NUL-terminated string. Zero-initialise, append, free with sb_free. */
typedef struct strbuf {
    char *s;
    size_t len, cap;
} strbuf;

void sb_puts(strbuf *b, const char *s);
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_free(strbuf *b);

/* Prints "error: <msg>" to stderr and counts it. */
void cg_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "<file>:<line>:<col>: <msg>" to stderr (1-based line and column) and counts it. */
void cg_error_at(const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Number of errors reported so far. */
int cg_error_count(void);

/* Reads a whole file into a new NUL-terminated buffer; NULL (errno set) on failure. */
char *cg_read_file(const char *path, size_t *len);

/* "max.dim" -> "max_dim" (new string); upper-cases too when `upper`. */
char *cg_c_name(const char *full_name, bool upper);

/* Appends `text` word-wrapped so that lines (with `prefix`, e.g. " * ") stay within `width`
 * columns; each line ends with '\n'. "*" "/" is broken up so the text can sit in a C comment. */
void sb_wrap(strbuf *b, const char *prefix, const char *text, int width);

/* Appends indent + head + args + tail + '\n' (a call or a declaration: head ends with '(',
 * args are separated by ", "), breaking after commas to keep lines within 100 columns;
 * continuation lines align after the '(' (or indent by 8 when that is too deep). */
void sb_call(strbuf *b, const char *indent, const char *head, const char *args,
             const char *tail);

#endif
