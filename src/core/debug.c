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

#include "debug_util.h"

/* ---- a growing string ------------------------------------------------------------------ */

void ltc_sb_add(ltc_sbuf *b, const char *fmt, ...) {
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
ltc_status ltc_sb_finish(ltc_sbuf *b, char **out, const char *what) {
    if (b->failed || !b->s) {
        free(b->s);
        return ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory", what);
    }
    *out = b->s;
    return LTC_OK;
}

/* ---- formatting nodes ------------------------------------------------------------------ */

void ltc_debug_add_shape(ltc_sbuf *b, const ltc_shape *s) {
    char buf[LTC_MAX_DIMS * 21 + 4];
    ltc_sb_add(b, "%s%s", ltc_dtype_short(s->dtype), ltc_shape_str(s, buf, sizeof buf));
}

static void add_shapes(ltc_sbuf *b, const ltc_node *n) {
    if (n->n_outputs == 1) {
        ltc_debug_add_shape(b, &n->shapes[0]);
        return;
    }
    ltc_sb_add(b, "(");
    for (int i = 0; i < n->n_outputs; i++) {
        if (i) ltc_sb_add(b, ", ");
        ltc_debug_add_shape(b, &n->shapes[i]);
    }
    ltc_sb_add(b, ")");
}

/* One attribute's value as the user wrote it: dims 1-based, bools and dtypes by name. */
static void add_attr_value(ltc_sbuf *b, const ltc_attr *a, int type) {
    if (a->kind == LTC_ATTR_INTS) {
        ltc_sb_add(b, "{");
        for (int j = 0; j < a->n; j++) ltc_sb_add(b, j ? ",%lld" : "%lld", (long long)a->ints[j]);
        ltc_sb_add(b, "}");
        return;
    }
    if (a->kind == LTC_ATTR_FLOAT) {
        if (isnan(a->f)) ltc_sb_add(b, "none");
        else ltc_sb_add(b, "%.9g", a->f);
        return;
    }
    if (type != LTC_ATTR_T_BOOL && type != LTC_ATTR_T_DTYPE && a->i == LTC_NONE) {
        ltc_sb_add(b, "none");
        return;
    }
    switch (type) {
    case LTC_ATTR_T_DIM: ltc_sb_add(b, "%lld", (long long)a->i + 1); break;
    case LTC_ATTR_T_BOOL: ltc_sb_add(b, "%s", a->i ? "true" : "false"); break;
    case LTC_ATTR_T_DTYPE:
        if (a->i >= 0 && a->i < LTC_DTYPE_COUNT) ltc_sb_add(b, "%s", ltc_dtype_name((ltc_dtype)a->i));
        else ltc_sb_add(b, "none");
        break;
    default: ltc_sb_add(b, "%lld", (long long)a->i); break;
    }
}

/* The attributes as "dim=2, keepdim=true", named from the op's schema when the node's
 * attributes match it, else "a0=.., a1=..". */
void ltc_debug_add_attrs(ltc_sbuf *b, const ltc_node *n) {
    int n_info;
    const ltc_attr_info *info = ltc_op_attrs(n->op, &n_info);
    bool named = info && n_info == n->n_attrs;
    for (int i = 0; i < n->n_attrs && named; i++) {
        bool ints = info[i].type == LTC_ATTR_T_INTS, flt = info[i].type == LTC_ATTR_T_FLOAT;
        named = (n->attrs[i].kind == LTC_ATTR_INTS) == ints &&
                (n->attrs[i].kind == LTC_ATTR_FLOAT) == flt;
    }
    for (int i = 0; i < n->n_attrs; i++) {
        if (i) ltc_sb_add(b, ", ");
        if (named) ltc_sb_add(b, "%s=", info[i].name);
        else ltc_sb_add(b, "a%d=", i);
        add_attr_value(b, &n->attrs[i], named ? (int)info[i].type : LTC_ATTR_T_INT);
    }
}

static void add_ref(ltc_sbuf *b, ltc_value v) {
    if (v.node->n_outputs > 1) ltc_sb_add(b, "%%%d.%d", v.node->index, v.index + 1);
    else ltc_sb_add(b, "%%%d", v.node->index);
}

/* "op(%1, %2, dim=2)" */
static void add_call(ltc_sbuf *b, const ltc_node *n) {
    ltc_sb_add(b, "%s(", ltc_op_name(n->op));
    for (int i = 0; i < n->n_operands; i++) {
        if (i) ltc_sb_add(b, ", ");
        add_ref(b, n->operands[i]);
    }
    if (n->n_operands && n->n_attrs) ltc_sb_add(b, ", ");
    ltc_debug_add_attrs(b, n);
    ltc_sb_add(b, ")");
}

/* The value of a 0-d parameter (a Lua number in the graph), read through the backend. */
static bool param_scalar(const ltc_node *n, double *out) {
    const ltc_data *d = n->data;
    if (!d || n->shapes[0].ndim != 0 || !d->backend || !d->backend->iface->data_to_host)
        return false;
    uint64_t v[1];
    if (d->backend->iface->data_to_host(d->backend, d, v)) return false;
    *out = ltc_dtype_load_f64(v, d->shape.dtype, 0);
    return true;
}

/* Position of n among the parameters / roots, or -1. */
static int param_pos(const ltc_lowering_ctx *ctx, const ltc_node *n) {
    for (int i = 0; i < ctx->n_params; i++)
        if (ctx->params[i] == n) return i;
    return -1;
}

static void add_roots(ltc_sbuf *b, const ltc_lowering_ctx *ctx, const ltc_node *n, const char *sep) {
    for (int i = 0; i < ctx->n_roots; i++) {
        if (ctx->roots[i].node != n) continue;
        ltc_sb_add(b, "%sroot #%d", sep, i);
        if (n->n_outputs > 1) ltc_sb_add(b, " (output %d)", ctx->roots[i].index + 1);
    }
}

static void header(ltc_sbuf *b, const ltc_lowering_ctx *ctx, ltc_hash h) {
    ltc_sb_add(b, "graph: %d node%s, %d parameter%s, %d root%s; hash %016llx%016llx", ctx->n_nodes,
           ctx->n_nodes == 1 ? "" : "s", ctx->n_params, ctx->n_params == 1 ? "" : "s",
           ctx->n_roots, ctx->n_roots == 1 ? "" : "s", (unsigned long long)h.hi,
           (unsigned long long)h.lo);
}

static void ir_text(ltc_sbuf *b, const ltc_lowering_ctx *ctx, ltc_hash h) {
    header(b, ctx, h);
    ltc_sb_add(b, "\n");
    for (int i = 0; i < ctx->n_nodes; i++) {
        const ltc_node *n = ctx->post_order[i];
        ltc_sb_add(b, "%%%d = ", i);
        add_call(b, n);
        ltc_sb_add(b, " ");
        add_shapes(b, n);
        int p = n->op == LTC_OP_DEVICE_DATA ? param_pos(ctx, n) : -1;
        if (p >= 0) {
            double v;
            ltc_sb_add(b, " param #%d", p);
            if (param_scalar(n, &v)) ltc_sb_add(b, " = %.9g", v);
        }
        add_roots(b, ctx, n, " ");
        if (n->source) ltc_sb_add(b, "  -- %s", n->source);
        ltc_sb_add(b, "\n");
    }
}

/* Writes s into a DOT string literal (quotes and backslashes escaped, newlines as \n). */
static void add_dot_escaped(ltc_sbuf *b, const char *s) {
    for (; *s; s++) {
        if (*s == '\n') ltc_sb_add(b, "\\n");
        else ltc_sb_add(b, (*s == '"' || *s == '\\') ? "\\%c" : "%c", *s);
    }
}

static void ir_dot(ltc_sbuf *b, const ltc_lowering_ctx *ctx, ltc_hash h) {
    ltc_sbuf t = {0};
    header(&t, ctx, h);
    ltc_sb_add(b, "digraph ltc {\n  graph [label=\"");
    if (t.s) add_dot_escaped(b, t.s);
    ltc_sb_add(b, "\", labelloc=t, fontname=\"monospace\"];\n");
    ltc_sb_add(b, "  node [shape=box, fontname=\"monospace\", fontsize=10];\n");
    for (int i = 0; i < ctx->n_nodes; i++) {
        const ltc_node *n = ctx->post_order[i];
        t.len = 0;
        ltc_sb_add(&t, "%%%d %s", i, ltc_op_name(n->op));
        if (n->n_attrs) {
            ltc_sb_add(&t, "(");
            ltc_debug_add_attrs(&t, n);
            ltc_sb_add(&t, ")");
        }
        ltc_sb_add(&t, "\n");
        add_shapes(&t, n);
        int p = n->op == LTC_OP_DEVICE_DATA ? param_pos(ctx, n) : -1;
        double v;
        if (p >= 0) ltc_sb_add(&t, "\nparam #%d", p);
        if (p >= 0 && param_scalar(n, &v)) ltc_sb_add(&t, " = %.9g", v);
        add_roots(&t, ctx, n, "\n");
        if (n->source) ltc_sb_add(&t, "\n%s", n->source);
        bool root = false;
        for (int k = 0; k < ctx->n_roots; k++) root |= ctx->roots[k].node == n;
        ltc_sb_add(b, "  n%d [label=\"", i);
        if (t.s) add_dot_escaped(b, t.s);
        ltc_sb_add(b, "\"%s%s];\n", p >= 0 ? ", shape=ellipse" : "",
               root ? ", peripheries=2, style=bold" : "");
    }
    for (int i = 0; i < ctx->n_nodes; i++) {
        const ltc_node *n = ctx->post_order[i];
        for (int k = 0; k < n->n_operands; k++) {
            ltc_value o = n->operands[k];
            ltc_sb_add(b, "  n%d -> n%d", o.node->index, i);
            if (n->n_operands > 1 || o.node->n_outputs > 1) {
                ltc_sb_add(b, " [label=\"");
                if (o.node->n_outputs > 1) ltc_sb_add(b, ".%d", o.index + 1);
                if (n->n_operands > 1) ltc_sb_add(b, "%s%d", o.node->n_outputs > 1 ? "->" : "", k + 1);
                ltc_sb_add(b, "\"]");
            }
            ltc_sb_add(b, ";\n");
        }
    }
    ltc_sb_add(b, "}\n");
    if (t.failed) b->failed = true;
    free(t.s);
}

/* ---- text, DOT and backend text of given tensors ------------------------------------------ */

typedef struct {
    int what; /* 0 text, 1 dot, 2 backend text */
    char *out;
    ltc_backend *backend; /* the tensors' device (backend text) */
} visit_req;

static ltc_status backend_text(const ltc_lowering_ctx *ctx, ltc_hash h, ltc_sbuf *b,
                               ltc_backend *be) {
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
    char *txt = c->backend->iface->computation_text(c->backend, c); /* be or a composite */
    if (!cached) ltc_computation_free(c);
    if (!txt) return ltc_errorf(LTC_ERR_NOMEM, "backend_text: out of memory");
    ltc_sb_add(b, "backend %s, graph hash %016llx%016llx (%s)\n%s", be->name,
           (unsigned long long)h.hi, (unsigned long long)h.lo,
           cached ? "from the compile cache" : "compiled for this call, not cached", txt);
    free(txt);
    return LTC_OK;
}

static ltc_status visit(const ltc_lowering_ctx *ctx, ltc_hash h, void *ud) {
    visit_req *r = ud;
    ltc_sbuf b = {0};
    ltc_status st = LTC_OK;
    if (r->what == 0) ir_text(&b, ctx, h);
    else if (r->what == 1) ir_dot(&b, ctx, h);
    else st = backend_text(ctx, h, &b, r->backend);
    if (st) {
        free(b.s);
        return st;
    }
    return ltc_sb_finish(&b, &r->out, "debug");
}

static ltc_status debug_request(ltc_tensor *const *ts, int n, int what, char **out) {
    if (ts && n <= 0) return ltc_errorf(LTC_ERR_ARG, "no tensors given");
    visit_req r = {what, NULL, ts ? ts[0]->backend : ltc_backend_default()};
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

/* ---- the graph as data ------------------------------------------------------------------- */

static ltc_status export_visit(const ltc_lowering_ctx *ctx, ltc_hash h, void *ud) {
    ltc_debug_graph **out = ud;
    ltc_sbuf t = {0};
    ltc_sb_add(&t, "%s", "");
    int no = 0;
    for (int i = 0; i < ctx->n_nodes; i++) no += ctx->post_order[i]->n_operands;
    ltc_debug_graph *g = calloc(1, sizeof *g);
    ltc_debug_node *nodes = calloc((size_t)ctx->n_nodes + 1, sizeof *nodes);
    size_t *offs = malloc(sizeof *offs * 2 * ((size_t)ctx->n_nodes + 1));
    int32_t *ops = malloc(sizeof *ops * ((size_t)no + 1));
    ltc_sbuf hd = {0};
    header(&hd, ctx, h);
    if (!g || !nodes || !offs || !ops || hd.failed) goto fail;
    no = 0;
    for (int i = 0; i < ctx->n_nodes; i++) {
        const ltc_node *n = ctx->post_order[i];
        ltc_debug_node *d = &nodes[i];
        offs[2 * i] = t.len;
        ltc_debug_add_attrs(&t, n);
        ltc_sb_add(&t, "%c", 0);
        offs[2 * i + 1] = t.len;
        add_shapes(&t, n);
        ltc_sb_add(&t, "%c", 0);
        d->op = ltc_op_name(n->op);
        d->source = n->source;
        d->id = n;
        d->param = n->op == LTC_OP_DEVICE_DATA ? param_pos(ctx, n) : -1;
        d->data = d->param >= 0 ? (const void *)n->data : NULL;
        d->has_value = d->param >= 0 && param_scalar(n, &d->value);
        d->ndim = n->shapes[0].ndim;
        d->root = -1;
        for (int k = ctx->n_roots - 1; k >= 0; k--)
            if (ctx->roots[k].node == n) d->root = k;
        d->n_operands = n->n_operands;
        d->operands = ops + no;
        for (int k = 0; k < n->n_operands; k++)
            ops[no++] = n->operands[k].node->index * 256 + n->operands[k].index;
    }
    if (t.failed) goto fail;
    for (int i = 0; i < ctx->n_nodes; i++) {
        nodes[i].attrs = t.s + offs[2 * i];
        nodes[i].shape = t.s + offs[2 * i + 1];
    }
    free(offs);
    g->header = hd.s, g->n_nodes = ctx->n_nodes, g->nodes = nodes;
    /* one pool: the text and the operands, freed together */
    void **pool = malloc(2 * sizeof *pool);
    if (!pool) {
        offs = NULL;
        goto fail;
    }
    pool[0] = t.s, pool[1] = ops;
    g->pool = pool;
    *out = g;
    return LTC_OK;
fail:
    free(t.s);
    free(g);
    free(nodes);
    free(offs);
    free(ops);
    free(hd.s);
    return ltc_errorf(LTC_ERR_NOMEM, "debug: out of memory");
}

ltc_status ltc_debug_graph_export(ltc_tensor *const *ts, int n, ltc_debug_graph **out) {
    if (ts && n <= 0) return ltc_errorf(LTC_ERR_ARG, "no tensors given");
    *out = NULL;
    return ltc_graph_visit(ts, n, export_visit, out);
}

void ltc_debug_graph_free(ltc_debug_graph *g) {
    if (!g) return;
    void **pool = g->pool;
    if (pool) {
        free(pool[0]);
        free(pool[1]);
        free(pool);
    }
    free(g->nodes);
    free(g->header);
    free(g);
}

void ltc_debug_tensor_ids(const ltc_tensor *t, const void **node, const void **data) {
    *node = t->ir.node;
    *data = t->data;
}

void ltc_debug_save_graph(const ltc_lowering_ctx *ctx, ltc_hash h, const char *path, int64_t seq) {
    const char *fmt = ltc_config_get_str("LTC_SAVE_GRAPHS_FMT");
    bool dot = fmt && strcmp(fmt, "dot") == 0;
    ltc_sbuf b = {0};
    if (dot) {
        ltc_sb_add(&b, "// compile #%lld\n", (long long)seq);
        ir_dot(&b, ctx, h);
    } else {
        ltc_sb_add(&b, "-- compile #%lld\n", (long long)seq);
        ir_text(&b, ctx, h);
        ltc_sb_add(&b, "\n");
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
