/*
 * debug_explain.c - why the last compile-cache miss happened: the compiled graph against the
 * nearest of the graphs compiled before it, aligned by structure. The two post orders are
 * diffed as a text diff would diff two files (Myers' O((N+M)D) shortest edit script), each
 * node keyed by its op and the source line that traced it (LTC_IR_DEBUG), so one extra term
 * early in a graph is one inserted node, not a dozen unrelated changes. The explanation names
 * the first real difference (a node that is new, gone, has other attributes, other operands,
 * or another shape that its operands do not explain) with its source line, lists the first
 * differing nodes and prints the diff. Compiles are numbered from 1 and the numbers restart
 * with ltc.metrics.reset() (graphs compiled before it are named "before metrics.reset()").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug_util.h"

/* A compiled graph, kept compactly: per node its op, output 0's shape, attributes, operand
 * positions and source line. */
typedef struct {
    uint16_t op;
    uint8_t n_attrs;
    uint16_t n_operands;
    ltc_shape shape;
    const char *source; /* interned (static) or NULL */
    int attr0, operand0; /* offsets into the graph's pools */
} sig_node;

typedef struct {
    ltc_hash hash;
    int64_t seq;   /* the compile's number in its epoch, 1 for the first */
    int64_t epoch; /* metrics.reset()s before it */
    int64_t order; /* compiles before it since the process started + 1; 0 = empty slot */
    int n;
    sig_node *nodes;
    ltc_attr *attrs;
    int32_t *operands; /* node index * 256 + output index */
} sig_graph;

#define RECENT 9 /* the last compiled graph and the 8 it is compared with */
static sig_graph recent[RECENT];
static int64_t compiles, epoch, order;
static sig_graph *last;      /* the last compiled graph (in recent) */
static char *explanation;    /* its explanation, made when first asked for */

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
                        .shape = n->shapes[0], .source = n->source, .attr0 = na,
                        .operand0 = no};
        memcpy(g->attrs + na, n->attrs, sizeof(ltc_attr) * n->n_attrs);
        na += n->n_attrs;
        for (int k = 0; k < n->n_operands; k++)
            g->operands[no++] = n->operands[k].node->index * 256 + n->operands[k].index;
    }
    return true;
}

/* ---- alignment: a diff of the post orders --------------------------------------------------- */

/* The key a text diff compares: op and source line (interned, so pointers compare). */
static bool key_equal(const sig_graph *a, int i, const sig_graph *b, int j) {
    return a->nodes[i].op == b->nodes[j].op && a->nodes[i].source == b->nodes[j].source;
}

/* Myers' shortest edit script of old[a0, a0+n) and now[b0, b0+m): writes match[b0 + y] =
 * a0 + x for the diagonal (kept) moves. False when more than dmax edits would be needed (or
 * out of memory): the caller falls back. Memory: (dmax + 1)^2 ints for the trace. */
static bool myers(const sig_graph *old, int a0, int n, const sig_graph *now, int b0, int m,
                  int *match, int dmax) {
    int max = n + m;
    if (dmax > max) dmax = max;
    int *v = malloc(sizeof(int) * (size_t)(2 * max + 3));
    int *trace = malloc(sizeof(int) * (size_t)(dmax + 1) * (size_t)(dmax + 1));
    if (!v || !trace) {
        free(v);
        free(trace);
        return false;
    }
    int *V = v + max + 1; /* V[k], k in [-max-1, max+1] */
#define TR(d, k) trace[(size_t)(d) * (size_t)(d) + (size_t)((k) + (d))]
    V[1] = 0;
    int D = -1;
    for (int d = 0; d <= dmax && D < 0; d++) {
        for (int k = -d; k <= d; k += 2) {
            int x = (k == -d || (k != d && V[k - 1] < V[k + 1])) ? V[k + 1] : V[k - 1] + 1;
            int y = x - k;
            while (x < n && y < m && key_equal(old, a0 + x, now, b0 + y)) x++, y++;
            V[k] = x;
            TR(d, k) = x;
            if (x >= n && y >= m) {
                D = d;
                break;
            }
        }
    }
    if (D < 0) {
        free(v);
        free(trace);
        return false;
    }
    int x = n, y = m;
    for (int d = D; d > 0; d--) {
        int k = x - y;
        bool down = k == -d || (k != d && TR(d - 1, k - 1) < TR(d - 1, k + 1));
        int pk = down ? k + 1 : k - 1, px = TR(d - 1, pk), py = px - pk;
        int mx = down ? px : px + 1; /* where the snake to (x, y) starts */
        while (x > mx) x--, y--, match[b0 + y] = a0 + x;
        x = px, y = py;
    }
    while (x > 0 && y > 0) x--, y--, match[b0 + y] = a0 + x;
#undef TR
    free(v);
    free(trace);
    return true;
}

/* The alignment of `now` with `old`: match[j] is the old node kept as new node j, or -1.
 * Common prefix and suffix first, Myers in between (up to DIFF_MAX_EDITS edits); past that,
 * equal keys at equal offsets. */
#define DIFF_MAX_EDITS 2048
static int *align(const sig_graph *old, const sig_graph *now) {
    int *match = malloc(sizeof(int) * (size_t)(now->n + 1));
    if (!match) return NULL;
    for (int j = 0; j < now->n; j++) match[j] = -1;
    int p = 0;
    while (p < old->n && p < now->n && key_equal(old, p, now, p)) match[p] = p, p++;
    int s = 0;
    while (s < old->n - p && s < now->n - p && key_equal(old, old->n - 1 - s, now, now->n - 1 - s))
        match[now->n - 1 - s] = old->n - 1 - s, s++;
    int n = old->n - p - s, m = now->n - p - s;
    if (!myers(old, p, n, now, p, m, match, DIFF_MAX_EDITS))
        for (int j = 0; j < n && j < m; j++)
            if (key_equal(old, p + j, now, p + j)) match[p + j] = p + j;
    return match;
}

static bool attr_equal(const ltc_attr *a, const ltc_attr *b) {
    if (a->kind != b->kind) return false;
    if (a->kind == LTC_ATTR_INTS)
        return a->n == b->n && memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n) == 0;
    return a->i == b->i; /* a float's bits */
}

enum { SAME, NEW, SHAPE, ATTRS, OPERAND };

/* Compares new node j with its matched old node i: SAME, or what differs first: SHAPE,
 * ATTRS, OPERAND (through the alignment; *k = the operand). */
static int pair_diff(const sig_graph *old, int i, const sig_graph *now, int j, const int *match,
                     int *k_out) {
    const sig_node *x = &old->nodes[i], *y = &now->nodes[j];
    if (!ltc_shape_equal(&x->shape, &y->shape)) return SHAPE;
    if (x->n_attrs != y->n_attrs) return ATTRS;
    for (int k = 0; k < x->n_attrs; k++)
        if (!attr_equal(&old->attrs[x->attr0 + k], &now->attrs[y->attr0 + k])) return ATTRS;
    for (int k = 0; k < x->n_operands || k < y->n_operands; k++) {
        *k_out = k;
        if (k >= x->n_operands || k >= y->n_operands) return OPERAND;
        int32_t ro = old->operands[x->operand0 + k], rn = now->operands[y->operand0 + k];
        if (match[rn / 256] != ro / 256 || rn % 256 != ro % 256) return OPERAND;
    }
    return SAME;
}

/* Per new node: why[j] (SAME, NEW, ...), k[j] (the operand for OPERAND) and real[j]: the
 * difference is not explained by a differing operand (attributes differ, a new node, an
 * operand that is another unchanged node, or a shape change of a node whose operands are
 * all unchanged). Operands come before their users in post order. */
typedef struct {
    int *match;
    uint8_t *why, *real;
    int *k;
    int equal;
} alignment;

static void alignment_free(alignment *a) {
    free(a->match);
    free(a->why);
    free(a->real);
    free(a->k);
    memset(a, 0, sizeof *a);
}

static bool classify(const sig_graph *old, const sig_graph *now, alignment *a) {
    a->match = align(old, now);
    a->why = malloc((size_t)now->n + 1);
    a->real = malloc((size_t)now->n + 1);
    a->k = malloc(sizeof(int) * ((size_t)now->n + 1));
    if (!a->match || !a->why || !a->real || !a->k) {
        alignment_free(a);
        return false;
    }
    a->equal = 0;
    for (int j = 0; j < now->n; j++) {
        int i = a->match[j], k = 0;
        int why = i < 0 ? NEW : pair_diff(old, i, now, j, a->match, &k);
        bool operands_same = true;
        const sig_node *y = &now->nodes[j];
        for (int q = 0; q < y->n_operands; q++)
            operands_same &= a->why[now->operands[y->operand0 + q] / 256] == SAME;
        bool real = why == NEW || why == ATTRS || (why == SHAPE && operands_same);
        if (why == OPERAND) {
            int on = now->operands[y->operand0 + k] / 256;
            real = k >= y->n_operands || k >= old->nodes[i].n_operands || a->why[on] == SAME;
        }
        a->why[j] = (uint8_t)why, a->real[j] = real, a->k[j] = k;
        a->equal += why == SAME;
    }
    return true;
}

/* ---- the explanation ------------------------------------------------------------------------ */

static void add_name(ltc_sbuf *b, const sig_graph *g) {
    ltc_sb_add(b, "compile #%lld", (long long)g->seq);
    if (g->epoch != epoch) ltc_sb_add(b, " (before metrics.reset())");
}

static void add_source(ltc_sbuf *b, const sig_node *n) {
    if (n->source) ltc_sb_add(b, " at %s", n->source);
}

/* Attributes of a signature node, formatted through a stand-in node. */
static void add_sig_attrs(ltc_sbuf *b, const sig_graph *g, int i) {
    ltc_node n = {.op = g->nodes[i].op, .n_attrs = g->nodes[i].n_attrs,
                  .attrs = g->attrs + g->nodes[i].attr0};
    ltc_debug_add_attrs(b, &n);
}

static void add_operand_ref(ltc_sbuf *b, int32_t r) {
    ltc_sb_add(b, "%%%d", r / 256);
    if (r % 256) ltc_sb_add(b, ".%d", r % 256 + 1);
}

/* "%3 device_data" for operand k of node i of g, or "nothing". */
static void add_sig_operand(ltc_sbuf *b, const sig_graph *g, int i, int k) {
    if (k >= g->nodes[i].n_operands) {
        ltc_sb_add(b, "nothing");
        return;
    }
    int32_t r = g->operands[g->nodes[i].operand0 + k];
    add_operand_ref(b, r);
    ltc_sb_add(b, " %s", ltc_op_name(g->nodes[r / 256].op));
}

/* What differs between new node j and its matched old node i (after "node %j op: "). */
static void add_change(ltc_sbuf *b, const sig_graph *old, int i, const sig_graph *now, int j,
                       int why, int k) {
    switch (why) {
    case NEW:
        ltc_sb_add(b, "new, ");
        add_name(b, old);
        ltc_sb_add(b, " has no such node here");
        break;
    case SHAPE:
        ltc_sb_add(b, "shape ");
        ltc_debug_add_shape(b, &old->nodes[i].shape);
        ltc_sb_add(b, " now ");
        ltc_debug_add_shape(b, &now->nodes[j].shape);
        break;
    case ATTRS:
        ltc_sb_add(b, "attributes (");
        add_sig_attrs(b, old, i);
        ltc_sb_add(b, ") now (");
        add_sig_attrs(b, now, j);
        ltc_sb_add(b, ")");
        break;
    default:
        ltc_sb_add(b, "operand %d is ", k + 1);
        add_sig_operand(b, now, j, k);
        ltc_sb_add(b, ", was ");
        add_sig_operand(b, old, i, k);
        break;
    }
}

/* One node as a diff line: "%5 = matmul(%3, %4) f32[64,3]  -- file:line". */
static void add_line(ltc_sbuf *b, char mark, const sig_graph *g, int i) {
    const sig_node *n = &g->nodes[i];
    ltc_sb_add(b, "%c %%%d = %s(", mark, i, ltc_op_name(n->op));
    for (int k = 0; k < n->n_operands; k++) {
        if (k) ltc_sb_add(b, ", ");
        add_operand_ref(b, g->operands[n->operand0 + k]);
    }
    if (n->n_operands && n->n_attrs) ltc_sb_add(b, ", ");
    add_sig_attrs(b, g, i);
    ltc_sb_add(b, ") ");
    ltc_debug_add_shape(b, &n->shape);
    if (n->source) ltc_sb_add(b, "  -- %s", n->source);
    ltc_sb_add(b, "\n");
}

/* The diff as a text diff prints it: "-" lines of old, "+" lines of now, changed nodes as a
 * "-" and a "+" line, CONTEXT unchanged lines around them, "..." for what is left out; at most
 * DIFF_LINES changed lines. */
#define CONTEXT 2
#define DIFF_LINES 40
typedef struct { int i, j; } diff_entry; /* i old (-1: none), j new (-1: none) */

static void add_diff(ltc_sbuf *b, const sig_graph *old, const sig_graph *now, const alignment *a,
                     const diff_entry *e, int ne) {
    ltc_sb_add(b, "diff of the post orders (op and source line as the key; - ");
    add_name(b, old);
    ltc_sb_add(b, ", + ");
    add_name(b, now);
    ltc_sb_add(b, "):\n");
    int shown = 0, last_out = -1, changed = 0;
    for (int x = 0; x < ne; x++) changed += e[x].i < 0 || e[x].j < 0 || a->why[e[x].j] != SAME;
    for (int x = 0; x < ne && shown < DIFF_LINES; x++) {
        bool same = e[x].i >= 0 && e[x].j >= 0 && a->why[e[x].j] == SAME;
        if (same) continue;
        int from = x - CONTEXT < last_out + 1 ? last_out + 1 : x - CONTEXT;
        if (from > last_out + 1) ltc_sb_add(b, "  ...\n");
        for (int c = from; c < x; c++) add_line(b, ' ', now, e[c].j);
        if (e[x].i >= 0) add_line(b, '-', old, e[x].i);
        if (e[x].j >= 0) add_line(b, '+', now, e[x].j);
        shown++;
        last_out = x;
        /* context after: unchanged entries up to the next change */
        for (int c = x + 1; c < ne && c <= x + CONTEXT; c++) {
            if (!(e[c].i >= 0 && e[c].j >= 0 && a->why[e[c].j] == SAME)) break;
            add_line(b, ' ', now, e[c].j);
            last_out = c;
        }
    }
    if (changed > shown) ltc_sb_add(b, "  ... and %d more changed node%s\n", changed - shown,
                                    changed - shown == 1 ? "" : "s");
    else if (last_out < ne - 1) ltc_sb_add(b, "  ...\n");
}

static void explain(ltc_sbuf *b, const sig_graph *now) {
    add_name(b, now);
    ltc_sb_add(b, ": a graph of %d node%s (hash %016llx%016llx) missed the compile cache\n",
               now->n, now->n == 1 ? "" : "s", (unsigned long long)now->hash.hi,
               (unsigned long long)now->hash.lo);
    const sig_graph *best = NULL;
    alignment al = {0};
    for (int r = 0; r < RECENT; r++) {
        const sig_graph *g = &recent[r];
        if (!g->order || g == now) continue;
        if (ltc_hash_equal(g->hash, now->hash)) {
            ltc_sb_add(b, "the same graph was compiled as ");
            add_name(b, g);
            ltc_sb_add(b, " and has been evicted from the compile cache "
                          "(LTC_COMPILE_CACHE_SIZE=%lld)\n",
                       (long long)ltc_config_get_int("LTC_COMPILE_CACHE_SIZE"));
            alignment_free(&al);
            return;
        }
        alignment c = {0};
        if (!classify(g, now, &c)) continue;
        if (!best || c.equal > al.equal || (c.equal == al.equal && g->order > best->order)) {
            alignment_free(&al);
            best = g, al = c;
        } else {
            alignment_free(&c);
        }
    }
    if (!best) {
        ltc_sb_add(b, "no graph was compiled before it: nothing to compare with\n");
        return;
    }
    ltc_sb_add(b, "nearest compiled graph: ");
    add_name(b, best);
    ltc_sb_add(b, ", %d node%s; %d of %d nodes equal\n", best->n, best->n == 1 ? "" : "s",
               al.equal, now->n);
    /* the diff script: old nodes not kept, new nodes not kept, kept pairs, in order */
    uint8_t *used = calloc((size_t)best->n + 1, 1);
    diff_entry *e = malloc(sizeof *e * ((size_t)best->n + (size_t)now->n + 1));
    if (!used || !e) {
        free(used);
        free(e);
        alignment_free(&al);
        b->failed = true;
        return;
    }
    for (int j = 0; j < now->n; j++)
        if (al.match[j] >= 0) used[al.match[j]] = 1;
    int ne = 0;
    for (int i = 0, j = 0; i < best->n || j < now->n;) {
        if (i < best->n && !used[i]) e[ne++] = (diff_entry){i++, -1};
        else if (j < now->n && al.match[j] < 0) e[ne++] = (diff_entry){-1, j++};
        else e[ne++] = (diff_entry){i++, j++};
    }
    /* the first real difference, then the first differing nodes */
    int first = -1, shown = 0, more = 0;
    for (int x = 0; x < ne && first < 0; x++)
        if (e[x].j < 0 || (al.why[e[x].j] != SAME && al.real[e[x].j])) first = x;
    for (int pass = 0; pass < 2; pass++) {
        for (int x = pass ? 0 : first; x >= 0 && x < ne; x++) {
            int i = e[x].i, j = e[x].j;
            if (j >= 0 && al.why[j] == SAME) continue;
            if (pass && shown == 8) {
                more++;
                continue;
            }
            if (!pass) ltc_sb_add(b, "first difference: ");
            else shown++;
            if (j < 0) {
                ltc_sb_add(b, "node %%%d %s of ", i, ltc_op_name(best->nodes[i].op));
                add_name(b, best);
                if (!pass) add_source(b, &best->nodes[i]);
                ltc_sb_add(b, ": gone\n");
            } else {
                ltc_sb_add(b, "node %%%d %s", j, ltc_op_name(now->nodes[j].op));
                if (!pass) add_source(b, &now->nodes[j]);
                ltc_sb_add(b, ": ");
                add_change(b, best, i, now, j, al.why[j], al.k[j]);
                if (pass && !al.real[j]) ltc_sb_add(b, " (follows from its operands)");
                ltc_sb_add(b, "\n");
            }
            if (!pass) break;
        }
    }
    if (more) ltc_sb_add(b, "... and %d more difference%s\n", more, more == 1 ? "" : "s");
    if (!shown) ltc_sb_add(b, "every node is equal: the roots differ\n");
    else add_diff(b, best, now, &al, e, ne);
    free(used);
    free(e);
    alignment_free(&al);
}

/* ---- the core's calls ------------------------------------------------------------------------ */

void ltc_debug_note_compile(const ltc_lowering_ctx *ctx, ltc_hash h) {
    compiles++;
    order++;
    const char *path = ltc_config_get_str("LTC_SAVE_GRAPHS");
    if (path && *path) ltc_debug_save_graph(ctx, h, path, compiles);
    free(explanation);
    explanation = NULL;
    last = NULL;
    sig_graph now = {0};
    if (!sig_make(ctx, h, &now)) return; /* out of memory: no explanation this time */
    now.seq = compiles, now.epoch = epoch, now.order = order;
    sig_graph *slot = &recent[0];
    for (int r = 1; r < RECENT; r++)
        if (recent[r].order < slot->order) slot = &recent[r];
    sig_free(slot);
    *slot = now;
    last = slot;
}

char *ltc_debug_explain_recompile(void) {
    if (last && !explanation) {
        ltc_sbuf b = {0};
        explain(&b, last);
        if (b.failed) free(b.s);
        else explanation = b.s;
    }
    const char *s = explanation ? explanation : last ? NULL : "no compile-cache miss yet\n";
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *out = malloc(n);
    if (out) memcpy(out, s, n);
    return out;
}

void ltc_debug_metrics_reset(void) {
    compiles = 0;
    epoch++;
    free(explanation); /* its numbers are those of the old epoch */
    explanation = NULL;
}

void ltc_debug_reset(void) {
    for (int r = 0; r < RECENT; r++) sig_free(&recent[r]);
    free(explanation);
    explanation = NULL;
    last = NULL;
}
