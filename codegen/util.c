/*
 * util.c - allocation, string buffers, error reporting and file helpers of ltcgen.
 */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_errors;

/* Exits after an allocation failure: the generator cannot do anything useful without memory. */
static void out_of_memory(void) {
    fputs("error: out of memory\n", stderr);
    exit(1);
}

void *cg_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) out_of_memory();
    return p;
}

void *cg_calloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) out_of_memory();
    return p;
}

void *cg_realloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) out_of_memory();
    return p;
}

char *cg_strdup(const char *s) { return cg_strndup(s, strlen(s)); }

char *cg_strndup(const char *s, size_t n) {
    char *p = cg_malloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* Makes room for `extra` more characters plus the terminator. */
static void sb_reserve(strbuf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    b->s = cg_realloc(b->s, cap);
    b->cap = cap;
}

void sb_puts(strbuf *b, const char *s) {
    size_t n = strlen(s);
    sb_reserve(b, n);
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void sb_printf(strbuf *b, const char *fmt, ...) {
    va_list ap;
    sb_reserve(b, 64);
    va_start(ap, fmt);
    int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->s[b->len] = '\0';
        return;
    }
    if ((size_t)n >= b->cap - b->len) {
        sb_reserve(b, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

void sb_free(strbuf *b) {
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

void cg_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    n_errors++;
}

void cg_error_at(const char *file, int line, int col, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d:%d: ", file, line, col);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    n_errors++;
}

int cg_error_count(void) { return n_errors; }

char *cg_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    strbuf b = {0};
    char chunk[8192];
    size_t n;
    sb_reserve(&b, 0);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        sb_reserve(&b, n);
        memcpy(b.s + b.len, chunk, n);
        b.len += n;
        b.s[b.len] = '\0';
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        sb_free(&b);
        errno = EIO;
        return NULL;
    }
    if (len) *len = b.len;
    return b.s;
}

char *cg_c_name(const char *full_name, bool upper) {
    char *s = cg_strdup(full_name);
    for (char *p = s; *p; p++) {
        if (*p == '.') *p = '_';
        else if (upper) *p = (char)toupper((unsigned char)*p);
    }
    return s;
}

void sb_wrap(strbuf *b, const char *prefix, const char *text, int width) {
    int avail = width - (int)strlen(prefix);
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == '\n') p++;
        if (!*p) break;
        /* take words while they fit (at least one) */
        const char *end = p, *q = p;
        while (*q && *q != '\n') {
            const char *w = q;
            while (*w == ' ') w++;
            const char *we = w;
            while (*we && *we != ' ' && *we != '\n') we++;
            if (we == w) break;
            if (end != p && we - p > avail) break;
            end = q = we;
        }
        sb_puts(b, prefix);
        for (const char *c = p; c < end; c++) {
            sb_printf(b, "%c", *c);
            if (c[0] == '*' && c[1] == '/') sb_puts(b, " ");
        }
        sb_puts(b, "\n");
        p = end;
    }
}

/* The next ", " in p outside a string literal, or NULL. */
static const char *next_comma(const char *p) {
    bool quoted = false;
    for (; *p; p++) {
        if (*p == '"' && (!quoted || p[-1] != '\\')) quoted = !quoted;
        else if (!quoted && p[0] == ',' && p[1] == ' ') return p;
    }
    return NULL;
}

void sb_call(strbuf *b, const char *indent, const char *head, const char *args,
             const char *tail) {
    const int width = 100;
    size_t cont = strlen(indent) + strlen(head);
    if (cont > 60) cont = strlen(indent) + 8;
    int col = (int)(strlen(indent) + strlen(head));
    sb_puts(b, indent);
    sb_puts(b, head);
    const char *p = args;
    bool first = true;
    while (*p) {
        const char *comma = next_comma(p);
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        /* the piece, plus ", " or the tail after the last one */
        int need = (int)n + (comma ? 1 : (int)strlen(tail));
        if (!first && col + 1 + need > width) {
            sb_puts(b, "\n");
            for (size_t i = 0; i < cont; i++) sb_puts(b, " ");
            col = (int)cont;
        } else if (!first) {
            sb_puts(b, " ");
            col++;
        }
        char *piece = cg_strndup(p, n);
        sb_puts(b, piece);
        free(piece);
        col += (int)n;
        if (comma) {
            sb_puts(b, ",");
            col++;
        }
        first = false;
        p = comma ? comma + 2 : p + n;
    }
    sb_puts(b, tail);
    sb_puts(b, "\n");
}
