/*
 * debug_util.h - what the debug files share (debug.c, debug_explain.c): a growing string and
 * the formatting of shapes and attributes as ltc.debug.ir prints them. Internal to the core.
 */
#ifndef LTC_DEBUG_UTIL_H
#define LTC_DEBUG_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "core.h"

/* A growing string: zero-initialise; `failed` is set once an allocation fails (later adds do
 * nothing). s is malloc'ed and NUL-terminated once anything was added. */
typedef struct {
    char *s;
    size_t len, cap;
    bool failed;
} ltc_sbuf;

void ltc_sb_add(ltc_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the text to the caller (*out, malloc'ed) or fails with NOMEM naming `what`. */
ltc_status ltc_sb_finish(ltc_sbuf *b, char **out, const char *what);

/* "f32[2,3]" */
void ltc_debug_add_shape(ltc_sbuf *b, const ltc_shape *s);
/* "dim=2, keepdim=true": named from the op's schema when n's attributes match it, else
 * "a0=.., a1=..". Reads n->op, n->n_attrs and n->attrs only. */
void ltc_debug_add_attrs(ltc_sbuf *b, const ltc_node *n);

/* LTC_SAVE_GRAPHS: appends the graph of compile #seq to path as text or DOT
 * (LTC_SAVE_GRAPHS_FMT); a failure to write is counted (SaveGraphsFailed) and warned once. */
void ltc_debug_save_graph(const ltc_lowering_ctx *ctx, ltc_hash h, const char *path, int64_t seq);

#endif
