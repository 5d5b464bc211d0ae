/*
 * debug.c - looking at graphs: the pending IR as text or Graphviz DOT, the backend's text of
 * the computation a graph compiles to, why the last compile-cache miss happened (against the
 * nearest recently compiled graph), LTC_SAVE_GRAPHS dumps, and the source locations of nodes
 * (LTC_IR_DEBUG). PyTorch LTC: core/ir_dump_util.cpp (ToText, ToDot), debug_util.cpp.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* ---- a growing string ------------------------------------------------------------------ */

typedef struct {
    char *s;
    size_t len, cap;
    bool failed;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(sbuf *b, const char *fmt, ...) {
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->failed = true;
            return;
        }
        if (b->s && b->len + (size_t)k < b->cap) {
            b->len += (size_t)k;
            return;
        }
        size_t nc = (b->cap + (size_t)k + 64) * 2;
        char *ns = realloc(b->s, nc);
        if (!ns) {
            b->failed = true;
            return;
        }
        b->s = ns, b->cap = nc;
    }
}

/* Hands the text to the caller (*out, malloc'ed) or fails with NOMEM. */
static ltc_status sb_finish(sbuf *b, char **out, const char *what) {
    if (b->failed || !b->s) {
        free(b->s);
        return ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory", what);
    }
    *out = b->s;
    return LTC_OK;
}

/* ---- formatting nodes ------------------------------------------------------------------ */

static void add_shape(sbuf *b, const ltc_shape *s) {
    char buf[LTC_MAX_DIMS * 21 + 4];
    sb_add(b, "%s%s", ltc_dtype_short(s->dtype), ltc_shape_str(s, buf, sizeof buf));
}

static void add_shapes(sbuf *b, const ltc_node *n) {
    if (n->n_outputs == 1) {
        add_shape(b, &n->shapes[0]);
        return;
    }
    sb_add(b, "(");
    for (int i = 0; i < n->n_outputs; i++) {
        if (i) sb_add(b, ", ");
        add_shape(b, &n->shapes[i]);
    }
    sb_add(b, ")");
}

/* One attribute's value as the user wrote it: dims 1-based, bools and dtypes by name. */
static void add_attr_value(sbuf *b, const ltc_attr *a, int type) {
    if (a->kind == LTC_ATTR_INTS) {
        sb_add(b, "{");
        for (int j = 0; j < a->n; j++) sb_add(b, j ? ",%lld" : "%lld", (long long)a->ints[j]);
        sb_add(b, "}");
        return;
    }
    if (a->kind == LTC_ATTR_FLOAT) {
        if (isnan(a->f)) sb_add(b, "none");
        else sb_add(b, "%.9g", a->f);
        return;
    }
    if (type != LTC_ATTR_T_BOOL && type != LTC_ATTR_T_DTYPE && a->i == LTC_NONE) {
        sb_add(b, "none");
        return;
    }
    switch (type) {
    case LTC_ATTR_T_DIM: sb_add(b, "%lld", (long long)a->i + 1); break;
    case LTC_ATTR_T_BOOL: sb_add(b, "%s", a->i ? "true" : "false"); break;
    case LTC_ATTR_T_DTYPE:
        if (a->i >= 0 && a->i < LTC_DTYPE_COUNT) sb_add(b, "%s", ltc_dtype_name((ltc_dtype)a->i));
        else sb_add(b, "none");
        break;
    default: sb_add(b, "%lld", (long long)a->i); break;
    }
}

/* The attributes as "dim=2, keepdim=true", named from the op's schema when the node's
 * attributes match it, else "a0=.., a1=..". */
static void add_attrs(sbuf *b, const ltc_node *n) {
    int n_info;
    const ltc_attr_info *info = ltc_op_attrs(n->op, &n_info);
    bool named = info && n_info == n->n_attrs;
    for (int i = 0; i < n->n_attrs && named; i++) {
        bool ints = info[i].type == LTC_ATTR_T_INTS, flt = info[i].type == LTC_ATTR_T_FLOAT;
        named = (n->attrs[i].kind == LTC_ATTR_INTS) == ints &&
                (n->attrs[i].kind == LTC_ATTR_FLOAT) == flt;
    }
    for (int i = 0; i < n->n_attrs; i++) {
        if (i) sb_add(b, ", ");
        if (named) sb_add(b, "%s=", info[i].name);
        else sb_add(b, "a%d=", i);
        add_attr_value(b, &n->attrs[i], named ? (int)info[i].type : LTC_ATTR_T_INT);
    }
}

static void add_ref(sbuf *b, ltc_value v) {
    if (v.node->n_outputs > 1) sb_add(b, "%%%d.%d", v.node->index, v.index + 1);
    else sb_add(b, "%%%d", v.node->index);
}

/* "op(%1, %2, dim=2)" */
static void add_call(sbuf *b, const ltc_node *n) {
    sb_add(b, "%s(", ltc_op_name(n->op));
    for (int i = 0; i < n->n_operands; i++) {
        if (i) sb_add(b, ", ");
        add_ref(b, n->operands[i]);
    }
    if (n->n_operands && n->n_attrs) sb_add(b, ", ");
    add_attrs(b, n);
    sb_add(b, ")");
}

/* The value of a 0-d parameter (a Lua number in the graph), read through the backend. */
static bool param_scalar(const ltc_node *n, double *out) {
    const ltc_data *d = n->data;
    if (!d || n->shapes[0].ndim != 0 || !d->backend || !d->backend->iface->data_to_host)
        return false;
    union { float f32; double f64; int32_t i32; int64_t i64; uint8_t b; } v;
    if (d->backend->iface->data_to_host(d->backend, d, &v)) return false;
    switch (d->shape.dtype) {
    case LTC_F32: *out = v.f32; break;
    case LTC_F64: *out = v.f64; break;
    case LTC_I32: *out = v.i32; break;
    case LTC_I64: *out = (double)v.i64; break;
    default: *out = v.b; break;
    }
    return true;
}

/* Position of n among the parameters / roots, or -1. */
static int param_pos(const ltc_lowering_ctx *ctx, const ltc_node *n) {
    for (int i = 0; i < ctx->n_params; i++)
        if (ctx->params[i] == n) return i;
    return -1;
}

static void add_roots(sbuf *b, const ltc_lowering_ctx *ctx, const ltc_node *n, const char *sep) {
    for (int i = 0; i < ctx->n_roots; i++) {
        if (ctx->roots[i].node != n) continue;
        sb_add(b, "%sroot #%d", sep, i);
        if (n->n_outputs > 1) sb_add(b, " (output %d)", ctx->roots[i].index + 1);
    }
}

static void header(sbuf *b, const ltc_lowering_ctx *ctx, ltc_hash h) {
    sb_add(b, "graph: %d node%s, %d parameter%s, %d root%s; hash %016llx%016llx", ctx->n_nodes,
           ctx->n_nodes == 1 ? "" : "s", ctx->n_params, ctx->n_params == 1 ? "" : "s",
           ctx->n_roots, ctx->n_roots == 1 ? "" : "s", (unsigned long long)h.hi,
           (unsigned long long)h.lo);
}

static void ir_text(sbuf *b, const ltc_lowering_ctx *ctx, ltc_hash h) {
    header(b, ctx, h);
    sb_add(b, "\n");
    for (int i = 0; i < ctx->n_nodes; i++) {
        const ltc_node *n = ctx->post_order[i];
        sb_add(b, "%%%d = ", i);
        add_call(b, n);
        sb_add(b, " ");
        add_shapes(b, n);
        int p = n->op == LTC_OP_DEVICE_DATA ? param_pos(ctx, n) : -1;
        if (p >= 0) {
            double v;
            sb_add(b, " param #%d", p);
            if (param_scalar(n, &v)) sb_add(b, " = %.9g", v);
        }
        add_roots(b, ctx, n, " ");
        if (n->source) sb_add(b, "  -- %s", n->source);
        sb_add(b, "\n");
    }
}

/* Writes s into a DOT string literal (quotes and backslashes escaped, newlines as \n). */
static void add_dot_escaped(sbuf *b, const char *s) {
    for (; *s; s++) {
        if (*s == '\n') sb_add(b, "\\n");
        else sb_add(b, (*s == '"' || *s == '\\') ? "\\%c" : "%c", *s);
    }
}

static void ir_dot(sbuf *b, const ltc_lowering_ctx *ctx, ltc_hash h) {
    sbuf t = {0};
    header(&t, ctx, h);
    sb_add(b, "digraph ltc {\n  graph [label=\"");
    if (t.s) add_dot_escaped(b, t.s);
    sb_add(b, "\", labelloc=t, fontname=\"monospace\"];\n");
    sb_add(b, "  node [shape=box, fontname=\"monospace\", fontsize=10];\n");
    for (int i = 0; i < ctx->n_nodes; i++) {
        const ltc_node *n = ctx->post_order[i];
        t.len = 0;
        sb_add(&t, "%%%d %s", i, ltc_op_name(n->op));
        if (n->n_attrs) {
            sb_add(&t, "(");
            add_attrs(&t, n);
            sb_add(&t, ")");
        }
        sb_add(&t, "\n");
        add_shapes(&t, n);
        int p = n->op == LTC_OP_DEVICE_DATA ? param_pos(ctx, n) : -1;
        double v;
        if (p >= 0) sb_add(&t, "\nparam #%d", p);
        if (p >= 0 && param_scalar(n, &v)) sb_add(&t, " = %.9g", v);
        add_roots(&t, ctx, n, "\n");
        if (n->source) sb_add(&t, "\n%s", n->source);
        bool root = false;
        for (int k = 0; k < ctx->n_roots; k++) root |= ctx->roots[k].node == n;
        sb_add(b, "  n%d [label=\"", i);
        if (t.s) add_dot_escaped(b, t.s);
        sb_add(b, "\"%s%s];\n", p >= 0 ? ", shape=ellipse" : "",
               root ? ", peripheries=2, style=bold" : "");
    }
    for (int i = 0; i < ctx->n_nodes; i++) {
        const ltc_node *n = ctx->post_order[i];
        for (int k = 0; k < n->n_operands; k++) {
            ltc_value o = n->operands[k];
            sb_add(b, "  n%d -> n%d", o.node->index, i);
            if (n->n_operands > 1 || o.node->n_outputs > 1) {
                sb_add(b, " [label=\"");
                if (o.node->n_outputs > 1) sb_add(b, ".%d", o.index + 1);
                if (n->n_operands > 1) sb_add(b, "%s%d", o.node->n_outputs > 1 ? "->" : "", k + 1);
                sb_add(b, "\"]");
            }
            sb_add(b, ";\n");
        }
    }
    sb_add(b, "}\n");
    if (t.failed) b->failed = true;
    free(t.s);
}

/* ---- text, DOT and backend text of given tensors ------------------------------------------ */

typedef struct {
    int what; /* 0 text, 1 dot, 2 backend text */
    char *out;
} visit_req;

static ltc_status backend_text(const ltc_lowering_ctx *ctx, ltc_hash h, sbuf *b) {
    ltc_backend *be = ltc_backend_default();
    if (!be) return ltc_errorf(LTC_ERR_STATE, "backend_text: no backend registered");
    if (!be->iface->computation_text)
        return ltc_errorf(LTC_ERR_STATE, "backend_text: backend '%s' has no computation text",
                          be->name);
    ltc_computation *c = ltc_cache_get(h);
    bool cached = c != NULL;
    if (!c) {
        ltc_status st = ltc_graph_compile(ctx, be, h, &c);
        if (st) return st;
    }
    char *txt = be->iface->computation_text(be, c);
    if (!cached) ltc_computation_free(c);
    if (!txt) return ltc_errorf(LTC_ERR_NOMEM, "backend_text: out of memory");
    sb_add(b, "backend %s, graph hash %016llx%016llx (%s)\n%s", be->name,
           (unsigned long long)h.hi, (unsigned long long)h.lo,
           cached ? "from the compile cache" : "compiled for this call, not cached", txt);
    free(txt);
    return LTC_OK;
}

static ltc_status visit(const ltc_lowering_ctx *ctx, ltc_hash h, void *ud) {
    visit_req *r = ud;
    sbuf b = {0};
    ltc_status st = LTC_OK;
    if (r->what == 0) ir_text(&b, ctx, h);
    else if (r->what == 1) ir_dot(&b, ctx, h);
    else st = backend_text(ctx, h, &b);
    if (st) {
        free(b.s);
        return st;
    }
    return sb_finish(&b, &r->out, "debug");
}

static ltc_status debug_request(ltc_tensor *const *ts, int n, int what, char **out) {
    visit_req r = {what, NULL};
    if (ts && n <= 0) return ltc_errorf(LTC_ERR_ARG, "no tensors given");
    ltc_status st = ltc_graph_visit(ts, n, visit, &r);
    if (!st) *out = r.out;
    return st;
}

ltc_status ltc_debug_ir_text(ltc_tensor *const *ts, int n, char **out) {
    return debug_request(ts, n, 0, out);
}

ltc_status ltc_debug_ir_dot(ltc_tensor *const *ts, int n, char **out) {
    return debug_request(ts, n, 1, out);
}

ltc_status ltc_debug_backend_text(ltc_tensor *const *ts, int n, char **out) {
    return debug_request(ts, n, 2, out);
}

/* ---- explaining compile-cache misses ------------------------------------------------------- */

/* A compiled graph, kept compactly: per node its op, output 0's shape, attributes and
 * operand positions. */
typedef struct {
    uint16_t op;
    uint8_t n_attrs;
    uint16_t n_operands;
    ltc_shape shape;
    int attr0, operand0; /* offsets into the graph's pools */
} sig_node;

typedef struct {
    ltc_hash hash;
    int64_t seq; /* the compile's number, 1 for the first */
    int n;
    sig_node *nodes;
    ltc_attr *attrs;
    int32_t *operands; /* node index * 256 + output index */
} sig_graph;

#define RECENT 8
static sig_graph recent[RECENT]; /* a ring; seq 0 = empty */
static int64_t compiles;
static char *explanation;

static void sig_free(sig_graph *g) {
    free(g->nodes);
    free(g->attrs);
    free(g->operands);
    memset(g, 0, sizeof *g);
}

static bool sig_make(const ltc_lowering_ctx *ctx, ltc_hash h, sig_graph *g) {
    int na = 0, no = 0;
    for (int i = 0; i < ctx->n_nodes; i++)
        na += ctx->post_order[i]->n_attrs, no += ctx->post_order[i]->n_operands;
    g->nodes = malloc(sizeof *g->nodes * (size_t)(ctx->n_nodes + 1));
    g->attrs = malloc(sizeof *g->attrs * (size_t)(na + 1));
    g->operands = malloc(sizeof *g->operands * (size_t)(no + 1));
    if (!g->nodes || !g->attrs || !g->operands) {
        sig_free(g);
        return false;
    }
    g->hash = h;
    g->n = ctx->n_nodes;
    na = no = 0;
    for (int i = 0; i < ctx->n_nodes; i++) {
        const ltc_node *n = ctx->post_order[i];
        sig_node *s = &g->nodes[i];
        *s = (sig_node){.op = n->op, .n_attrs = n->n_attrs, .n_operands = n->n_operands,
                        .shape = n->shapes[0], .attr0 = na, .operand0 = no};
        memcpy(g->attrs + na, n->attrs, sizeof(ltc_attr) * n->n_attrs);
        na += n->n_attrs;
        for (int k = 0; k < n->n_operands; k++)
            g->operands[no++] = n->operands[k].node->index * 256 + n->operands[k].index;
    }
    return true;
}

static bool attr_equal(const ltc_attr *a, const ltc_attr *b) {
    if (a->kind != b->kind) return false;
    if (a->kind == LTC_ATTR_INTS)
        return a->n == b->n && memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n) == 0;
    return a->i == b->i; /* a float's bits */
}

/* The alignment of graph `now` with `old`: match[j] is the old node matched with new node j,
 * or -1. The longest common subsequence of their op sequences in post order, so an inserted
 * or removed node does not shift every later one; positions when the graphs are too large. */
#define LCS_MAX_CELLS (4 << 20)
static int *align(const sig_graph *old, const sig_graph *now) {
    int *match = malloc(sizeof(int) * (size_t)(now->n + 1));
    if (!match) return NULL;
    for (int j = 0; j < now->n; j++) match[j] = -1;
    int64_t w = now->n + 1, cells = (int64_t)(old->n + 1) * w;
    uint32_t *t = cells <= LCS_MAX_CELLS ? malloc(sizeof *t * (size_t)cells) : NULL;
    if (!t) {
        for (int j = 0; j < now->n && j < old->n; j++)
            if (old->nodes[j].op == now->nodes[j].op) match[j] = j;
        return match;
    }
    for (int i = old->n; i >= 0; i--)
        for (int j = now->n; j >= 0; j--) {
            uint32_t v = 0;
            if (i < old->n && j < now->n) {
                if (old->nodes[i].op == now->nodes[j].op) v = t[(i + 1) * w + j + 1] + 1;
                else v = t[(i + 1) * w + j] > t[i * w + j + 1] ? t[(i + 1) * w + j]
                                                              : t[i * w + j + 1];
            }
            t[i * w + j] = v;
        }
    for (int i = 0, j = 0; i < old->n && j < now->n;) {
        if (old->nodes[i].op == now->nodes[j].op) match[j++] = i++;
        else if (t[(i + 1) * w + j] >= t[i * w + j + 1]) i++;
        else j++;
    }
    free(t);
    return match;
}

/* Compares new node j with its matched old node i: 0 equal, else what differs first:
 * 2 shape, 3 attributes, 4 operands (through the alignment; *k = the operand). */
static int pair_diff(const sig_graph *old, int i, const sig_graph *now, int j, const int *match,
                     int *k_out) {
    const sig_node *x = &old->nodes[i], *y = &now->nodes[j];
    if (!ltc_shape_equal(&x->shape, &y->shape)) return 2;
    if (x->n_attrs != y->n_attrs) return 3;
    for (int k = 0; k < x->n_attrs; k++)
        if (!attr_equal(&old->attrs[x->attr0 + k], &now->attrs[y->attr0 + k])) return 3;
    for (int k = 0; k < x->n_operands || k < y->n_operands; k++) {
        *k_out = k;
        if (k >= x->n_operands || k >= y->n_operands) return 4;
        int32_t ro = old->operands[x->operand0 + k], rn = now->operands[y->operand0 + k];
        if (match[rn / 256] != ro / 256 || rn % 256 != ro % 256) return 4;
    }
    return 0;
}

/* Attributes of a signature node, formatted through a stand-in node. */
static void add_sig_attrs(sbuf *b, const sig_graph *g, int i) {
    ltc_node n = {.op = g->nodes[i].op, .n_attrs = g->nodes[i].n_attrs,
                  .attrs = g->attrs + g->nodes[i].attr0};
    add_attrs(b, &n);
}

/* "%3 device_data" for operand k of node i of g, or "nothing". */
static void add_sig_operand(sbuf *b, const sig_graph *g, int i, int k) {
    if (k >= g->nodes[i].n_operands) {
        sb_add(b, "nothing");
        return;
    }
    int32_t r = g->operands[g->nodes[i].operand0 + k];
    sb_add(b, "%%%d", r / 256);
    if (r % 256) sb_add(b, ".%d", r % 256 + 1);
    sb_add(b, " %s", ltc_op_name(g->nodes[r / 256].op));
}

/* One line on new node j against its matched old node i. */
static void explain_node(sbuf *b, const sig_graph *old, int i, const sig_graph *now, int j,
                         int why, int k) {
    sb_add(b, "node %%%d %s: ", j, ltc_op_name(now->nodes[j].op));
    switch (why) {
    case 2:
        sb_add(b, "shape ");
        add_shape(b, &old->nodes[i].shape);
        sb_add(b, " now ");
        add_shape(b, &now->nodes[j].shape);
        break;
    case 3:
        sb_add(b, "attributes (");
        add_sig_attrs(b, old, i);
        sb_add(b, ") now (");
        add_sig_attrs(b, now, j);
        sb_add(b, ")");
        break;
    default:
        sb_add(b, "operand %d is ", k + 1);
        add_sig_operand(b, now, j, k);
        sb_add(b, ", was ");
        add_sig_operand(b, old, i, k);
        break;
    }
    sb_add(b, "\n");
}

/* Nodes of `now` equal to their matched node of `old`. */
static int count_equal(const sig_graph *old, const sig_graph *now, const int *match) {
    int eq = 0, k;
    for (int j = 0; j < now->n; j++)
        eq += match[j] >= 0 && !pair_diff(old, match[j], now, j, match, &k);
    return eq;
}

static void explain(sbuf *b, const sig_graph *now) {
    sb_add(b, "compile #%lld: a graph of %d node%s (hash %016llx%016llx) missed the compile "
              "cache\n", (long long)now->seq, now->n, now->n == 1 ? "" : "s",
           (unsigned long long)now->hash.hi,
           (unsigned long long)now->hash.lo);
    const sig_graph *best = NULL;
    int *best_match = NULL, best_equal = -1;
    for (int r = 0; r < RECENT; r++) {
        const sig_graph *g = &recent[r];
        if (!g->seq) continue;
        if (ltc_hash_equal(g->hash, now->hash)) {
            sb_add(b, "the same graph was compiled as compile #%lld and has been evicted from "
                      "the compile cache (LTC_COMPILE_CACHE_SIZE=%lld)\n", (long long)g->seq,
                   (long long)ltc_config_get_int("LTC_COMPILE_CACHE_SIZE"));
            free(best_match);
            return;
        }
        int *match = align(g, now);
        if (!match) continue;
        int eq = count_equal(g, now, match);
        if (eq > best_equal || (eq == best_equal && g->seq > best->seq)) {
            free(best_match);
            best = g, best_match = match, best_equal = eq;
        } else {
            free(match);
        }
    }
    if (!best) {
        sb_add(b, "no graph was compiled before it: nothing to compare with\n");
        return;
    }
    sb_add(b, "nearest compiled graph: compile #%lld, %d node%s; %d of %d nodes equal\n",
           (long long)best->seq, best->n, best->n == 1 ? "" : "s", best_equal, now->n);
    int shown = 0, more = 0, k = 0;
    for (int j = 0; j < now->n; j++) {
        int i = best_match[j], why = i < 0 ? 1 : pair_diff(best, i, now, j, best_match, &k);
        if (!why) continue;
        if (shown == 8) {
            more++;
            continue;
        }
        shown++;
        if (i >= 0) explain_node(b, best, i, now, j, why, k);
        else sb_add(b, "node %%%d %s: new, compile #%lld has no such node here\n", j,
                    ltc_op_name(now->nodes[j].op), (long long)best->seq);
    }
    uint8_t *used = calloc((size_t)best->n + 1, 1);
    for (int j = 0; used && j < now->n; j++)
        if (best_match[j] >= 0) used[best_match[j]] = 1;
    for (int i = 0; used && i < best->n; i++) {
        if (used[i]) continue;
        if (shown == 8) {
            more++;
            continue;
        }
        shown++;
        sb_add(b, "node %%%d %s of compile #%lld: gone\n", i, ltc_op_name(best->nodes[i].op),
               (long long)best->seq);
    }
    free(used);
    if (more) sb_add(b, "... and %d more difference%s\n", more, more == 1 ? "" : "s");
    if (!shown) sb_add(b, "every node is equal: the roots differ\n");
    free(best_match);
}

static void save_graph(const ltc_lowering_ctx *ctx, ltc_hash h, const char *path) {
    const char *fmt = ltc_config_get_str("LTC_SAVE_GRAPHS_FMT");
    bool dot = fmt && strcmp(fmt, "dot") == 0;
    sbuf b = {0};
    if (dot) {
        sb_add(&b, "// compile #%lld\n", (long long)compiles);
        ir_dot(&b, ctx, h);
    } else {
        sb_add(&b, "-- compile #%lld\n", (long long)compiles);
        ir_text(&b, ctx, h);
        sb_add(&b, "\n");
    }
    FILE *f = b.failed ? NULL : fopen(path, "a");
    bool ok = f && fwrite(b.s, 1, b.len, f) == b.len;
    if (f) ok &= fclose(f) == 0;
    if (!ok) {
        /* counted every time, reported once (the compile itself goes on) */
        static bool warned;
        ltc_counter_add("SaveGraphsFailed", 1);
        if (!warned) {
            warned = true;
            fprintf(stderr, "ltc: warning: LTC_SAVE_GRAPHS: cannot write %s: %s (counted as "
                    "SaveGraphsFailed)\n", path, b.failed ? "out of memory" : strerror(errno));
        }
    }
    free(b.s);
}

void ltc_debug_note_compile(const ltc_lowering_ctx *ctx, ltc_hash h) {
    compiles++;
    const char *path = ltc_config_get_str("LTC_SAVE_GRAPHS");
    if (path && *path) save_graph(ctx, h, path);
    sig_graph now = {0};
    if (!sig_make(ctx, h, &now)) return; /* out of memory: no explanation this time */
    now.seq = compiles;
    sbuf b = {0};
    explain(&b, &now);
    free(explanation);
    explanation = b.failed ? NULL : b.s;
    if (b.failed) free(b.s);
    sig_graph *slot = &recent[0];
    for (int r = 1; r < RECENT; r++)
        if (recent[r].seq < slot->seq) slot = &recent[r];
    sig_free(slot);
    *slot = now;
}

char *ltc_debug_explain_recompile(void) {
    const char *s = explanation ? explanation : "no compile-cache miss yet\n";
    size_t n = strlen(s) + 1;
    char *out = malloc(n);
    if (out) memcpy(out, s, n);
    return out;
}

void ltc_debug_reset(void) {
    for (int r = 0; r < RECENT; r++) sig_free(&recent[r]);
    free(explanation);
    explanation = NULL;
}

/* ---- source locations (LTC_IR_DEBUG) ------------------------------------------------------- */

/* The hook is per thread: each thread runs its own Lua state (tensors belong to the thread
 * that made them). Interned strings are shared, under a mutex. */
static _Thread_local ltc_source_fn source_fn;
static _Thread_local void *source_ud;
static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static char **interned; /* open addressing; strings live until the process ends */
static size_t interned_cap, interned_n;

void ltc_debug_set_source_hook(ltc_source_fn fn, void *ud) {
    source_fn = fn;
    source_ud = ud;
}

ltc_source_fn ltc_debug_source_hook(void **ud) {
    if (ud) *ud = source_ud;
    return source_fn;
}

static size_t str_hash(const char *s) {
    size_t h = 1469598103934665603u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static const char *intern_locked(const char *s);

const char *ltc_debug_intern(const char *s) {
    pthread_mutex_lock(&intern_lock);
    const char *r = intern_locked(s);
    pthread_mutex_unlock(&intern_lock);
    return r;
}

static const char *intern_locked(const char *s) {
    if (interned_n * 2 >= interned_cap) {
        size_t nc = interned_cap ? interned_cap * 2 : 256;
        char **nt = calloc(nc, sizeof *nt);
        if (!nt) return NULL;
        for (size_t i = 0; i < interned_cap; i++) {
            if (!interned[i]) continue;
            size_t k = str_hash(interned[i]) & (nc - 1);
            while (nt[k]) k = (k + 1) & (nc - 1);
            nt[k] = interned[i];
        }
        free(interned);
        interned = nt;
        interned_cap = nc;
    }
    size_t k = str_hash(s) & (interned_cap - 1);
    for (; interned[k]; k = (k + 1) & (interned_cap - 1))
        if (strcmp(interned[k], s) == 0) return interned[k];
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (!c) return NULL;
    memcpy(c, s, n);
    interned[k] = c;
    interned_n++;
    return c;
}

const char *ltc_debug_source(int op) {
    static int64_t *flag;
    if (!source_fn || op == LTC_OP_DEVICE_DATA) return NULL;
    if (!flag) flag = ltc_config_slot("LTC_IR_DEBUG");
    if (!flag || !*flag) return NULL;
    char buf[256];
    if (!source_fn(source_ud, buf, sizeof buf)) return NULL;
    return ltc_debug_intern(buf);
}
