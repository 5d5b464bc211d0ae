/*
 * csource.c - finding a C function's declarations and definitions in source text (see
 * csource.h). Not a C parser: it blanks comments, literals and preprocessor lines, then
 * takes `<specifiers and type> name(<params>)` followed by ';' or '{' as a declaration or
 * a definition. A call has no type before the name (`return f(a);`, `x = f(a);`).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "csource.h"

static bool is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool is_ident(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Spaces over c[from, to), newlines kept. */
static void wipe(char *c, size_t from, size_t to) {
    for (size_t k = from; k < to; k++)
        if (c[k] != '\n') c[k] = ' ';
}

/* Blanks comments, string and character literals and preprocessor lines of `text` in
 * place (line continuations of directives included). */
static void blank(char *c) {
    size_t n = strlen(c), i = 0;
    bool line_start = true; /* only blanks since the last newline */
    while (i < n) {
        size_t j = i;
        if (c[i] == '/' && c[i + 1] == '*') {
            for (i += 2; i < n && !(c[i] == '*' && c[i + 1] == '/'); i++) {}
            i = i < n ? i + 2 : n;
            wipe(c, j, i);
        } else if (c[i] == '/' && c[i + 1] == '/') {
            while (i < n && c[i] != '\n') i++;
            wipe(c, j, i);
        } else if (c[i] == '"' || c[i] == '\'') {
            char q = c[i++];
            for (; i < n && c[i] != q && c[i] != '\n'; i++)
                if (c[i] == '\\' && i + 1 < n) i++;
            if (i < n && c[i] == q) i++;
            wipe(c, j, i);
            line_start = false;
        } else if (c[i] == '#' && line_start) {
            for (; i < n && c[i] != '\n'; i++)
                if (c[i] == '\\' && c[i + 1] == '\n') i++;
            wipe(c, j, i);
        } else {
            if (c[i] == '\n') line_start = true;
            else if (!isspace((unsigned char)c[i])) line_start = false;
            i++;
        }
    }
}

bool c_source_load(c_source *s, const char *path) {
    memset(s, 0, sizeof *s);
    char *text = cg_read_file(path, NULL);
    if (!text) return false;
    blank(text);
    s->path = cg_strdup(path);
    s->code = text;
    return true;
}

void c_source_free(c_source *s) {
    free(s->path);
    free(s->code);
    memset(s, 0, sizeof *s);
}

/* Words that may come right before a parenthesis without declaring a function. */
static bool is_statement_word(const char *w, size_t n) {
    static const char *const words[] = {"return", "else", "do", "case", "goto", "sizeof",
                                        "if", "while", "for", "switch", NULL};
    for (int i = 0; words[i]; i++)
        if (strlen(words[i]) == n && !strncmp(words[i], w, n)) return true;
    return false;
}

/* Words of a type that are never a parameter's name. */
static bool is_type_word(const char *w, size_t n) {
    static const char *const words[] = {"void", "char", "short", "int", "long", "float",
                                        "double", "signed", "unsigned", "bool", "_Bool",
                                        "const", "volatile", "restrict", "struct", NULL};
    for (int i = 0; words[i]; i++)
        if (strlen(words[i]) == n && !strncmp(words[i], w, n)) return true;
    return false;
}

/* Appends the tokens of c[from, to) to b separated by single spaces; drops the last one
 * when it is a parameter's name (an identifier after a type word, an identifier or '*'). */
static void append_tokens(strbuf *b, const char *c, size_t from, size_t to, bool drop_name) {
    const char *tok[64];
    size_t len[64];
    int n = 0;
    for (size_t i = from; i < to;) {
        if (isspace((unsigned char)c[i])) {
            i++;
            continue;
        }
        size_t j = i;
        if (is_ident(c[i]))
            while (i < to && is_ident(c[i])) i++;
        else
            i++;
        if (n < 64) tok[n] = c + j, len[n++] = i - j;
    }
    if (drop_name && n >= 2 && is_ident_start(tok[n - 1][0]) &&
        !is_type_word(tok[n - 1], len[n - 1]) &&
        (is_ident(tok[n - 2][0]) || tok[n - 2][0] == '*'))
        n--;
    if (n == 1 && len[0] == 4 && !strncmp(tok[0], "void", 4) && drop_name) return;
    for (int k = 0; k < n; k++) sb_printf(b, "%s%.*s", k ? " " : "", (int)len[k], tok[k]);
}

/* The normalised parameter types of the list c[open + 1, close). */
static char *param_types(const char *c, size_t open, size_t close) {
    strbuf b = {0};
    sb_puts(&b, "");
    int depth = 0;
    size_t start = open + 1;
    for (size_t i = open + 1; i <= close; i++) {
        if (c[i] == '(' || c[i] == '[') depth++;
        else if ((c[i] == ')' || c[i] == ']') && i < close) depth--;
        if ((c[i] == ',' && depth == 0) || i == close) {
            if (start != open + 1) sb_puts(&b, ", ");
            append_tokens(&b, c, start, i, true);
            start = i + 1;
        }
    }
    return b.s;
}

/* The index of the ')' matching the '(' at c[open], or 0 if there is none. */
static size_t matching_paren(const char *c, size_t open) {
    int depth = 0;
    for (size_t i = open; c[i]; i++) {
        if (c[i] == '(') depth++;
        else if (c[i] == ')' && --depth == 0) return i;
    }
    return 0;
}

static size_t skip_space(const char *c, size_t i) {
    while (c[i] && isspace((unsigned char)c[i])) i++;
    return i;
}

int c_source_find(const c_source *s, const char *name, c_func **out) {
    const char *c = s->code;
    size_t n = strlen(name);
    int count = 0;
    *out = NULL;
    for (const char *p = strstr(c, name); p; p = strstr(p + 1, name)) {
        size_t at = (size_t)(p - c);
        if ((at > 0 && is_ident(c[at - 1])) || is_ident(c[at + n])) continue;
        size_t open = skip_space(c, at + n);
        if (c[open] != '(') continue;
        /* the token before the name: a type (an identifier that is no statement word) or '*' */
        size_t k = at;
        while (k > 0 && isspace((unsigned char)c[k - 1])) k--;
        if (k == 0) continue;
        if (is_ident(c[k - 1])) {
            size_t e = k;
            while (k > 0 && is_ident(c[k - 1])) k--;
            if (is_statement_word(c + k, e - k)) continue;
        } else if (c[k - 1] != '*') {
            continue;
        }
        size_t close = matching_paren(c, open);
        if (!close) continue;
        /* then ';' or a body, maybe after __attribute__((...)) */
        size_t after = skip_space(c, close + 1);
        while (is_ident_start(c[after])) {
            while (is_ident(c[after])) after++;
            after = skip_space(c, after);
            if (c[after] == '(') after = skip_space(c, matching_paren(c, after) + 1);
        }
        if (c[after] != ';' && c[after] != '{') continue;
        /* the specifiers and return type: the identifiers and '*' right before the name
         * (back to a ';', a brace, or a macro call's ')' */
        size_t start = at;
        while (start > 0 && (is_ident(c[start - 1]) || c[start - 1] == '*' ||
                             isspace((unsigned char)c[start - 1])))
            start--;
        c_func f = {.definition = c[after] == '{'};
        strbuf ret = {0};
        sb_puts(&ret, "");
        for (size_t i = start; i < at;) {
            i = skip_space(c, i);
            if (i >= at) break;
            size_t j = i;
            if (is_ident(c[i]))
                while (i < at && is_ident(c[i])) i++;
            else
                i++;
            size_t len = i - j;
            bool is_static = len == 6 && !strncmp(c + j, "static", 6);
            f.is_static |= is_static;
            if (is_static || (len == 6 && (!strncmp(c + j, "extern", 6) ||
                                           !strncmp(c + j, "inline", 6))))
                continue;
            sb_printf(&ret, "%s%.*s", ret.len ? " " : "", (int)len, c + j);
        }
        f.ret = ret.s;
        f.params = param_types(c, open, close);
        f.line = 1;
        for (size_t i = 0; i < at; i++) f.line += c[i] == '\n';
        *out = cg_realloc(*out, sizeof **out * (size_t)(count + 1));
        (*out)[count++] = f;
    }
    return count;
}

void c_funcs_free(c_func *f, int n) {
    for (int i = 0; i < n; i++) {
        free(f[i].ret);
        free(f[i].params);
    }
    free(f);
}

char *c_decl_params(const char *decl) {
    const char *open = strchr(decl, '(');
    if (!open) return cg_strdup("");
    size_t o = (size_t)(open - decl), close = matching_paren(decl, o);
    if (!close) return cg_strdup("");
    return param_types(decl, o, close);
}
