/*
 * executor.c - the graph executor: sync collects every live tensor with pending IR, walks
 * the graph in post order, hashes it, finds or compiles a computation, runs it and
 * installs the results. PyTorch LTC: lazy_graph_executor.cpp (SyncTensorsGraph).
 *
 * The graph hash covers, for each node in post order, its local hash (op, attributes,
 * output shapes; a parameter's dtype and shape) and the post-order positions of its
 * operands, then the roots. So parameters are hashed by dtype, shape and position, never
 * by content, and which parameter feeds which use is part of the hash: t0*t1+t2 and
 * t0*t2+t1 are one graph fed in different orders, t0*t0 and t0*t1 are two graphs.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "core.h"
#include "ltc_comm.h"
#include "ltc_graph.h"

typedef struct {
    ltc_tensor *t;
    int root; /* index of its value in graph.roots */
} pending;

typedef struct {
    ltc_node *n;
    int next;
} frame; /* the post-order walk's stack */

typedef struct {
    ltc_node **post;   /* post order */
    int n, cap;
    ltc_node **params; /* DEVICE_DATA nodes, in post order */
    int n_params, cap_params;
    ltc_value *roots;  /* distinct root values */
    int n_roots, cap_roots;
    pending *tensors;  /* every pending tensor */
    int n_tensors, cap_tensors;
    frame *stack;      /* the walk's, kept for the next root */
    int cap_stack;
    ltc_backend *backend; /* the device of the pending tensors (NULL: none, the default) */
    bool mixed;           /* pending tensors on several backends: one graph each */
} graph;

static _Thread_local uint32_t epoch; /* each thread walks its own tensors' nodes */
static int64_t *c_markstep, *c_cached, *c_uncached;

/* The arrays of this thread's last graph, kept for the next one (a traced step's graph is
 * much the same each time: no allocation, no growing by copies, in the steady state). One
 * pointer of thread-local storage (src/core keeps its TLS small); freed at thread exit. */
static _Thread_local graph *spare;
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void arrays_free(graph *g) {
    free(g->post);
    free(g->params);
    free(g->roots);
    free(g->tensors);
    free(g->stack);
}

static void spare_exit(void *p) {
    arrays_free(p);
    free(p);
}

static void make_spare_key(void) { (void)pthread_key_create(&spare_key, spare_exit); }

/* g (with no arrays yet) takes the spare arrays, emptied. */
static void graph_take_spare(graph *g) {
    if (!spare || g->post || g->params || g->roots || g->tensors || g->stack) return;
    g->post = spare->post, g->cap = spare->cap;
    g->params = spare->params, g->cap_params = spare->cap_params;
    g->roots = spare->roots, g->cap_roots = spare->cap_roots;
    g->tensors = spare->tensors, g->cap_tensors = spare->cap_tensors;
    g->stack = spare->stack, g->cap_stack = spare->cap_stack;
    memset(spare, 0, sizeof *spare);
}

static void graph_free(graph *g) {
    if (!spare && (spare = calloc(1, sizeof *spare))) {
        pthread_once(&spare_once, make_spare_key);
        if (pthread_setspecific(spare_key, spare)) {
            free(spare);
            spare = NULL;
        }
    }
    if (spare && !spare->post && !spare->params && !spare->roots && !spare->tensors &&
        !spare->stack) {
        graph kept = {.post = g->post, .cap = g->cap, .params = g->params,
                      .cap_params = g->cap_params, .roots = g->roots,
                      .cap_roots = g->cap_roots, .tensors = g->tensors,
                      .cap_tensors = g->cap_tensors, .stack = g->stack,
                      .cap_stack = g->cap_stack};
        *spare = kept;
    } else {
        arrays_free(g);
    }
    memset(g, 0, sizeof *g);
}

static bool grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int nc = *cap ? *cap * 2 : 64;
    while (nc < need) nc *= 2;
    void *np = realloc(*p, (size_t)nc * elem);
    if (!np) return false;
    *p = np;
    *cap = nc;
    return true;
}

/* Appends the nodes reachable from `root` that are not yet marked, in post order. */
static ltc_status post_order_from(graph *g, ltc_node *root) {
    frame *stack = g->stack;
    int len = 0, cap = g->cap_stack;
    if (root->mark == epoch) return LTC_OK;
    if (!grow((void **)&stack, &cap, 1, sizeof *stack)) goto nomem;
    root->mark = epoch;
    stack[len++] = (frame){root, 0};
    while (len) {
        frame *f = &stack[len - 1];
        if (f->next < f->n->n_operands) {
            ltc_node *o = f->n->operands[f->next++].node;
            if (o->mark == epoch) continue;
            o->mark = epoch;
            if (!grow((void **)&stack, &cap, len + 1, sizeof *stack)) goto nomem;
            stack[len++] = (frame){o, 0};
            continue;
        }
        ltc_node *n = f->n;
        len--;
        if (!grow((void **)&g->post, &g->cap, g->n + 1, sizeof *g->post)) goto nomem;
        n->index = g->n;
        g->post[g->n++] = n;
        if (n->op == LTC_OP_DEVICE_DATA) {
            if (!grow((void **)&g->params, &g->cap_params, g->n_params + 1, sizeof *g->params))
                goto nomem;
            g->params[g->n_params++] = n;
        }
    }
    g->stack = stack, g->cap_stack = cap;
    return LTC_OK;
nomem:
    g->stack = stack, g->cap_stack = cap;
    return ltc_errorf(LTC_ERR_NOMEM, "sync: out of memory walking the graph");
}

/* The post order of the roots (its arrays are the last graph's, graph_take_spare). */
static ltc_status walk_roots(graph *g) {
    for (int i = 0; i < g->n_roots; i++) {
        ltc_status st = post_order_from(g, g->roots[i].node);
        if (st) return st;
    }
    return LTC_OK;
}

/* Collects pending tensors and their distinct values, then the post order: every live
 * tensor of this thread, or (only != NULL) just the `n_only` tensors of `only`. */
static ltc_status collect_from(graph *g, ltc_tensor *const *only, int n_only) {
    graph_take_spare(g);
    epoch++;
    int k = 0;
    for (ltc_tensor *t = only ? (n_only ? only[0] : NULL) : ltc_live_first(); t;
         t = only ? (++k < n_only ? only[k] : NULL) : t->next) {
        if (ltc_view_stale(t)) {
            ltc_status st = ltc_view_refresh(t);
            if (st) return st;
        }
        if (!ltc_tensor_is_pending(t)) continue;
        if (!g->backend) g->backend = t->backend;
        else if (t->backend != g->backend) g->mixed = true;
        if (!grow((void **)&g->roots, &g->cap_roots, g->n_roots + 1, sizeof *g->roots) ||
            !grow((void **)&g->tensors, &g->cap_tensors, g->n_tensors + 1, sizeof *g->tensors))
            return ltc_errorf(LTC_ERR_NOMEM, "sync: out of memory");
        ltc_node *n = t->ir.node;
        int r = -1;
        if (n->mark == epoch) /* node seen: find the same output among its roots */
            for (int k = n->index; k < g->n_roots; k++)
                if (g->roots[k].node == n && g->roots[k].index == t->ir.index) {
                    r = k;
                    break;
                }
        if (r < 0) {
            if (n->mark != epoch) n->mark = epoch, n->index = g->n_roots;
            r = g->n_roots;
            g->roots[g->n_roots++] = t->ir;
        }
        g->tensors[g->n_tensors++] = (pending){t, r};
    }
    epoch++;
    return walk_roots(g);
}

/* As collect, for the given tensors only: each one's value is a root (a tensor holding data
 * enters as its DEVICE_DATA node). No `tensors` entries: nothing will be installed. */
static ltc_status collect(graph *g) { return collect_from(g, NULL, 0); }

static ltc_status collect_given(graph *g, ltc_tensor *const *ts, int n) {
    graph_take_spare(g);
    epoch++;
    for (int i = 0; i < n; i++) {
        ltc_value v;
        ltc_status st = ltc_view_stale(ts[i]) ? ltc_view_refresh(ts[i]) : LTC_OK;
        if (st || (st = ltc_tensor_value(ts[i], &v))) return st;
        if (!g->backend) g->backend = ts[i]->backend;
        if (!grow((void **)&g->roots, &g->cap_roots, g->n_roots + 1, sizeof *g->roots))
            return ltc_errorf(LTC_ERR_NOMEM, "graph: out of memory");
        bool seen = false;
        if (v.node->mark == epoch)
            for (int k = v.node->index; k < g->n_roots && !seen; k++)
                seen = g->roots[k].node == v.node && g->roots[k].index == v.index;
        if (seen) continue;
        if (v.node->mark != epoch) v.node->mark = epoch, v.node->index = g->n_roots;
        g->roots[g->n_roots++] = v;
    }
    epoch++;
    return walk_roots(g);
}

/* Bytes for the streaming hash, gathered in a buffer: XXH3's update costs as much per call
 * as hashing 8 bytes many times over, and the graph hash feeds it 8 or 16 bytes at a time.
 * The digest is that of the same bytes fed one by one. */
typedef struct {
    XXH3_state_t st;
    size_t n;
    unsigned char buf[2048];
} hash_buf;

static void hash_put(hash_buf *h, const void *p, size_t n) {
    if (h->n + n > sizeof h->buf) {
        XXH3_128bits_update(&h->st, h->buf, h->n);
        h->n = 0;
    }
    memcpy(h->buf + h->n, p, n);
    h->n += n;
}

/* The graph's hash for backend b: the backend's name comes first, so one graph compiled for
 * two backends is two cache entries (switching backends needs no cache flush); then the
 * compile options (ltc_config_compile_key), for the same reason. */
static ltc_hash graph_hash(const graph *g, const ltc_backend *b) {
    hash_buf local, *h = &local;
    XXH3_INITSTATE(&h->st);
    XXH3_128bits_reset(&h->st);
    h->n = 0;
    if (b) XXH3_128bits_update(&h->st, b->name, strlen(b->name));
    uint64_t key = ltc_config_compile_key();
    hash_put(h, &key, sizeof key);
    for (int i = 0; i < g->n; i++) {
        const ltc_node *n = g->post[i];
        hash_put(h, &n->hash, sizeof n->hash);
        for (int k = 0; k < n->n_operands; k++) {
            int32_t ref[2] = {n->operands[k].node->index, n->operands[k].index};
            hash_put(h, ref, sizeof ref);
        }
    }
    for (int i = 0; i < g->n_roots; i++) {
        int32_t ref[2] = {g->roots[i].node->index, g->roots[i].index};
        hash_put(h, ref, sizeof ref);
    }
    XXH3_128bits_update(&h->st, h->buf, h->n);
    XXH128_hash_t x = XXH3_128bits_digest(&h->st);
    return (ltc_hash){x.low64, x.high64};
}

ltc_status ltc_graph_compile(const ltc_lowering_ctx *ctx, ltc_backend *b, ltc_hash h,
                             ltc_computation **out) {
    ltc_status st = LTC_OK;
    ltc_computation *c = calloc(1, sizeof *c);
    if (!c) return ltc_errorf(LTC_ERR_NOMEM, "sync: out of memory compiling");
    c->backend = b;
    c->hash = h;
    c->n_params = ctx->n_params;
    c->n_outputs = ctx->n_roots;
    c->param_shapes = malloc(sizeof(ltc_shape) * (size_t)(ctx->n_params + 1));
    c->out_shapes = malloc(sizeof(ltc_shape) * (size_t)(ctx->n_roots + 1));
    if (!c->param_shapes || !c->out_shapes) {
        st = ltc_errorf(LTC_ERR_NOMEM, "sync: out of memory compiling");
        goto fail;
    }
    for (int i = 0; i < ctx->n_params; i++) c->param_shapes[i] = ctx->params[i]->shapes[0];
    for (int i = 0; i < ctx->n_roots; i++)
        c->out_shapes[i] = ctx->roots[i].node->shapes[ctx->roots[i].index];
    memset(ctx->emitted, 0, (size_t)ctx->n_nodes);
    const ltc_lowering_ctx *ctxs[1] = {ctx};
    if (ltc_fallback_needed(ctx, b)) st = ltc_fallback_compile(ctx, b, h, &c);
    else st = b->iface->compile(b, ctxs, 1, &c);
    if (st) goto fail;
    *out = c;
    return LTC_OK;
fail:
    free(c->param_shapes);
    free(c->out_shapes);
    free(c);
    return st;
}

/* Lowers and compiles the graph on backend b (a compile-cache miss of a sync). */
static ltc_status compile(graph *g, ltc_backend *b, ltc_hash h, ltc_computation **out) {
    uint8_t *emitted = calloc((size_t)g->n + 1, 1);
    if (!emitted) return ltc_errorf(LTC_ERR_NOMEM, "sync: out of memory compiling");
    ltc_lowering_ctx ctx = {
        .name = "SyncTensorsGraph", .post_order = g->post, .n_nodes = g->n,
        .roots = g->roots, .n_roots = g->n_roots, .params = g->params,
        .n_params = g->n_params, .emitted = emitted,
    };
    double t0 = ltc_now_ns();
    ltc_status st = ltc_graph_compile(&ctx, b, h, out);
    ltc_metric_add_sample("CompileTime", ltc_now_ns() - t0);
    if (!st) ltc_debug_note_compile(&ctx, h);
    free(emitted);
    return st;
}

ltc_status ltc_execute(ltc_computation *c, ltc_data *const *args, ltc_data **outs) {
    ltc_backend *b = c->backend;
    if ((b->iface->flags & LTC_BACKEND_FILLS_PLACEHOLDERS) && b->iface->data_placeholder)
        /* PyTorch: a computation's outputs are placeholders that running it fills */
        for (int i = 0; i < c->n_outputs; i++)
            if (ltc_data_placeholder(b, &c->out_shapes[i], &outs[i])) {
                for (int k = 0; k < i; k++) ltc_data_release(outs[k]), outs[k] = NULL;
                return ltc_error_prefix(LTC_ERR_NOMEM, "sync");
            }
    ltc_status st = b->iface->execute(b, c, args, outs);
    if (st)
        for (int i = 0; i < c->n_outputs; i++) ltc_data_release(outs[i]), outs[i] = NULL;
    return st;
}

static int64_t computed_bytes;
static _Thread_local bool trimming;

int64_t ltc_computed_bytes(void) { return __atomic_load_n(&computed_bytes, __ATOMIC_RELAXED); }

/* Hashes, looks up or compiles, executes and installs a collected graph. */
/* A node that failed while g ran and was traced by a composite op (ltc_op_scope_enter):
 * the message names the op the user called, not the internal one ("one_hot: index 5 out of
 * range" from index_fill becomes "index_fill: index 5 out of range"). */
static void name_user_op(const graph *g) {
    int f = ltc_error_node();
    if (f < 0 || f >= g->n || !g->post[f]->user_op) return;
    const char *label = g->post[f]->user_op, *msg = ltc_last_error(), *inner = ltc_op_name(g->post[f]->op);
    size_t n = strlen(inner);
    if (!strncmp(msg, inner, n) && msg[n] == ':' && msg[n + 1] == ' ') msg += n + 2;
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", msg);
    ltc_errorf(LTC_ERR_ARG, "%s: %s", label, tmp); /* the status is run_graph's */
}

static ltc_status run_graph(graph *g) {
    ltc_computation *held = NULL;
    ltc_data **args = NULL, **outs = NULL, **moved = NULL;
    ltc_status st = LTC_OK;
    if (g->n_roots == 0) return LTC_OK;
    ltc_backend *b = g->backend ? g->backend : ltc_backend_default();
    if (!b) return ltc_errorf(LTC_ERR_STATE, "sync: no backend is registered");
    if ((st = ltc_capture_check_backend(b))) return st;
    ltc_hash h = graph_hash(g, b);
    /* under the cache's lock from look-up to insert; the sync then holds a reference of its
     * own (`held`), so another thread's eviction cannot free c while it runs */
    ltc_cache_lock();
    ltc_computation *c = ltc_cache_get(h);
    if (c) {
        LTC_COUNT(c_cached, "CachedCompile", 1);
        held = ltc_computation_retain(c);
    } else if (!(st = compile(g, b, h, &c))) {
        LTC_COUNT(c_uncached, "UncachedCompile", 1);
        held = c;
        if (ltc_cache_put(h, c)) ltc_computation_retain(c);
    }
    ltc_cache_unlock();
    if (st) goto done;
    args = malloc(sizeof *args * (size_t)(g->n_params + 1));
    outs = calloc((size_t)g->n_roots + 1, sizeof *outs);
    if (!args || !outs) {
        st = ltc_errorf(LTC_ERR_NOMEM, "sync: out of memory");
        goto done;
    }
    /* the parameters: b's data of each DEVICE_DATA node (its data_of_node slot), or the
     * node's data, moved to b when another backend holds it (a Lua number's data is made on
     * the default device) */
    for (int i = 0; i < g->n_params; i++) {
        ltc_node *p = g->params[i];
        ltc_data *d = b->iface->data_of_node ? b->iface->data_of_node(b, p) : NULL;
        bool taken = d != NULL; /* the backend takes what data_of_node gave, as it is */
        if (!d) d = p->data;
        if (!taken && !ltc_data_on(d, b)) {
            if (!moved && !(moved = calloc((size_t)g->n_params, sizeof *moved))) {
                st = ltc_errorf(LTC_ERR_NOMEM, "sync: out of memory");
                goto done;
            }
            if ((st = ltc_data_transfer(d, b, &moved[i]))) goto done;
            d = moved[i];
        }
        args[i] = d;
    }
    ltc_error_set_node(-1);
    double t0 = ltc_now_ns();
    st = ltc_execute(c, args, outs); /* on b, or the composite of an eager fallback */
    ltc_metric_add_sample("ExecuteTime", ltc_now_ns() - t0);
    if (st) {
        name_user_op(g);
        goto done;
    }
    int64_t made = 0;
    for (int i = 0; i < g->n_roots; i++) made += outs[i] ? (int64_t)outs[i]->nbytes : 0;
    __atomic_add_fetch(&computed_bytes, made, __ATOMIC_RELAXED);
    if (ltc_capture_active() && (st = ltc_capture_note_sync(c, args, outs))) {
        for (int i = 0; i < g->n_roots; i++) ltc_data_release(outs[i]);
        goto done;
    }
    for (int i = 0; i < g->n_tensors; i++)
        ltc_tensor_set_data(g->tensors[i].t, outs[g->tensors[i].root]);
    for (int i = 0; i < g->n_roots; i++) ltc_data_release(outs[i]);
done:
    ltc_computation_free(held);
    for (int i = 0; moved && i < g->n_params; i++) ltc_data_release(moved[i]);
    free(moved);
    free(args);
    free(outs);
    return st;
}

static void isolate_failure(graph *g, ltc_status st);

/* Pending tensors on several backends: one graph (and sync) per backend, in the order the
 * backends first appear. An op's operands share a device, so no graph spans two. */
static ltc_status run_per_backend(graph *all) {
    ltc_status st = LTC_OK;
    ltc_tensor **ts = malloc(sizeof *ts * (size_t)all->n_tensors);
    if (!ts) return ltc_errorf(LTC_ERR_NOMEM, "sync: out of memory");
    for (int first = 0; first < all->n_tensors && !st; first++) {
        ltc_backend *b = all->tensors[first].t->backend;
        int n = 0;
        bool seen = false;
        for (int i = 0; i < all->n_tensors && !seen; i++) {
            if (all->tensors[i].t->backend != b) continue;
            if (i < first) seen = true; /* done with an earlier tensor */
            else ts[n++] = all->tensors[i].t;
        }
        if (seen) continue;
        graph one = {0};
        st = collect_from(&one, ts, n);
        if (!st) st = run_graph(&one);
        if (st && !trimming && !ltc_capture_active()) isolate_failure(&one, st);
        graph_free(&one);
    }
    free(ts);
    return st;
}

/* ---- a failed sync loses nothing ------------------------------------------------------ */

/* A sync failed at compile or execute (a label out of range, an index out of bounds, out of
 * memory, ...). Its tensors must leave the pending set, or the failure comes back on every
 * later sync of unrelated work, and what does not depend on the failure must not be lost.
 *
 * When the backend names the failing node (ltc_error_node), the nodes that depend on it are
 * marked, and each pending tensor whose value depends on it goes back to the newest value
 * it held that does not (its history of in-place writes since it was last computed: the
 * valid writes before the failing one stay; its data from before the step when every write
 * depends on the failure). A view is re-derived from its base. A new result with no such
 * value is marked failed (using it raises the error). Then everything is computed again in
 * one graph: the part of the step that does not depend on the failure costs one more run
 * (PyTorch, eager, would have stopped at the failing op with the earlier ops done). Another
 * failure in that run repeats this; a failure at an unknown node falls back to computing
 * each pending tensor on its own. Not for a trim sync (its error is reported by the next
 * sync, which does this) or inside a graph capture (the capture ends with the error). The
 * original error stays the thread's last error. */

/* Whether value v is a node of g that depends on the failing node (dep, by post order). */
static bool depends(const graph *g, const uint8_t *dep, ltc_value v) {
    const ltc_node *n = v.node;
    return n && n->mark == epoch && n->index >= 0 && n->index < g->n && g->post[n->index] == n &&
           dep[n->index];
}

/* Puts t back on a value that does not depend on the failure, or marks it failed. */
static void rewind_tensor(ltc_tensor *t, const graph *g, const uint8_t *dep, const char *msg) {
    int h = t->n_history - 1;
    while (h >= 0 && depends(g, dep, t->history[h])) h--;
    ltc_node_release(t->ir.node);
    t->ir = (ltc_value){NULL, 0};
    if (h >= 0 && t->history[h].node) { /* an earlier pending value: computed again */
        t->ir = t->history[h];
        t->history[h].node = NULL;
        for (int i = h + 1; i < t->n_history; i++) ltc_node_release(t->history[i].node);
        /* its autograd history goes back with its value: the failed writes never happened */
        ltc_ag_history_restore(t, h);
        ltc_ag_history_drop(t, h, t->n_history);
        t->n_history = h;
    } else if (t->committed) { /* its data from before the writes */
        t->data = t->committed;
        t->committed = NULL;
        if (t->n_history) ltc_ag_history_restore(t, h > 0 ? h : 0);
        ltc_tensor_history_clear(t);
    } else {
        ltc_tensor_history_clear(t);
        if (!t->failed) t->failed = strdup(msg);
    }
    t->generation++; /* its views are re-derived from the value it went back to */
}

/* One round of recovery from a failure at post-order node f of g: the number of tensors
 * put back or marked failed (0 also when out of memory). */
static int rewind_dependents(graph *g, int f, const char *msg) {
    uint8_t *dep = calloc((size_t)g->n + 1, 1);
    if (!dep) return 0;
    int changed = 0;
    epoch++; /* g's marks and indices again (a graph dump during the run may have walked) */
    for (int i = 0; i < g->n; i++) g->post[i]->mark = epoch, g->post[i]->index = i;
    dep[f] = 1;
    for (int i = f + 1; i < g->n; i++) {
        const ltc_node *n = g->post[i];
        for (int k = 0; k < n->n_operands && !dep[i]; k++) dep[i] = dep[n->operands[k].node->index];
    }
    /* bases and plain tensors first, then views (re-derived from their bases' new values) */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < g->n_tensors; i++) {
            ltc_tensor *t = g->tensors[i].t;
            if (!!t->base != pass || !depends(g, dep, t->ir)) continue;
            changed++;
            if (!t->base) {
                rewind_tensor(t, g, dep, msg);
                continue;
            }
            ltc_node_release(t->ir.node);
            t->ir = (ltc_value){NULL, 0};
            ltc_data_release(t->committed);
            t->committed = NULL;
            /* a detach() alias has a history of its own: back to before the step's writes */
            if (t->ag_detached && t->n_history) ltc_ag_history_restore(t, 0);
            ltc_tensor_history_clear(t);
            if (t->base->failed) {
                if (!t->failed) t->failed = strdup(msg);
                t->generation = t->base->generation;
            } else {
                t->generation = t->base->generation - 1; /* stale: refreshed when read */
            }
        }
    free(dep);
    return changed;
}

/* The old way, when the failing node is unknown: each pending tensor computed on its own.
 * A graph with collectives (ltc_comm.h) is not run again piecewise: the other ranks would
 * not run the same pieces, and the ranks would fall out of step. Each of its tensors goes
 * back to its value or is marked failed. */
static void isolate_each(graph *g) {
    bool collective = false;
    for (int i = 0; i < g->n && !collective; i++) collective = ltc_op_is_collective(g->post[i]->op);
    for (int i = 0; i < g->n_tensors; i++) {
        ltc_tensor *t = g->tensors[i].t;
        if (!ltc_tensor_is_pending(t)) continue; /* computed with an earlier one */
        ltc_status rst = LTC_ERR_STATE;
        if (!collective) {
            graph one = {0};
            rst = collect_from(&one, &t, 1);
            if (!rst) rst = run_graph(&one);
            graph_free(&one);
        }
        if (!rst) continue;
        ltc_node_release(t->ir.node);
        t->ir = (ltc_value){NULL, 0};
        ltc_tensor_history_clear(t);
        if (t->committed) {
            ltc_data_release(t->data);
            t->data = t->committed;
            t->committed = NULL;
        } else if (!t->failed) {
            t->failed = strdup(ltc_last_error());
        }
    }
}

static char *dup_error(void) {
    size_t len = strlen(ltc_last_error());
    char *msg = malloc(len + 1);
    if (msg) memcpy(msg, ltc_last_error(), len + 1);
    return msg;
}

static void isolate_failure(graph *g, ltc_status st) {
    char *orig = dup_error(), *msg = dup_error();
    graph cur = *g, next = {0};
    bool own = false; /* cur is ours to free (not the caller's g) */
    /* collectives: no second run (see isolate_each) */
    bool collective = false;
    for (int i = 0; i < g->n && !collective; i++) collective = ltc_op_is_collective(g->post[i]->op);
    for (int round = 0; round < 16; round++) {
        int f = ltc_error_node();
        if (!msg || collective || f < 0 || f >= cur.n || !rewind_dependents(&cur, f, msg)) {
            isolate_each(&cur);
            break;
        }
        ltc_error_set_node(-1);
        if (collect(&next)) break;
        if (next.mixed) { /* several devices: each graph recovers on its own */
            run_per_backend(&next);
            break;
        }
        if (!run_graph(&next)) break; /* the rest computed */
        if (own) graph_free(&cur);
        cur = next, own = true;
        memset(&next, 0, sizeof next);
        free(msg);
        msg = dup_error();
    }
    graph_free(&next);
    if (own) graph_free(&cur);
    if (orig) ltc_errorf(st, "%s", orig);
    free(orig);
    free(msg);
}

ltc_status ltc_sync(void) {
    graph g = {0};
    ltc_status st;
    if ((st = ltc_capture_check_sync())) return st;
    LTC_COUNT(c_markstep, "MarkStep", 1);
    ltc_tensor_counts_flush();
    ltc_trace_sync_reset();
    if ((st = collect(&g))) goto done;
    if (g.mixed) st = run_per_backend(&g);
    else if ((st = run_graph(&g)) && !trimming && !ltc_capture_active()) isolate_failure(&g, st);
done:
    graph_free(&g);
    ltc_ag_flush_deferred(); /* nodes the installed values' histories held */
    return st;
}

ltc_status ltc_graph_visit(ltc_tensor *const *ts, int n, ltc_graph_fn fn, void *ud) {
    graph g = {0};
    uint8_t *emitted = NULL;
    ltc_status st = ts ? collect_given(&g, ts, n) : collect(&g);
    if (st) goto done;
    if (!(emitted = calloc((size_t)g.n + 1, 1))) {
        st = ltc_errorf(LTC_ERR_NOMEM, "graph: out of memory");
        goto done;
    }
    ltc_lowering_ctx ctx = {
        .name = "SyncTensorsGraph", .post_order = g.post, .n_nodes = g.n,
        .roots = g.roots, .n_roots = g.n_roots, .params = g.params,
        .n_params = g.n_params, .emitted = emitted,
    };
    st = fn(&ctx, graph_hash(&g, g.backend ? g.backend : ltc_backend_default()), ud);
done:
    free(emitted);
    graph_free(&g);
    return st;
}

/* Graph trimming (PyTorch LTC's trim_graph_size): nodes traced since the last sync; past
 * LTC_TRIM_GRAPH_SIZE (0: never) the trace is cut by a sync, counted as TrimIrGraph, so a
 * loop that never syncs does not grow its graph (and memory) without bound. A node is
 * complete when it is ticked, so the sync computes every live pending tensor, this node's
 * outputs too. Not while this thread captures a graph (the capture records its own syncs).
 * A failing trim leaves the graph pending: the next sync reports the error. */
static _Thread_local int64_t traced_since_sync;
static int64_t *trim_limit;
static _Thread_local void (*trim_hook)(void *ud);
static _Thread_local void *trim_hook_ud;

void ltc_set_trim_hook(void (*fn)(void *ud), void *ud) {
    trim_hook = fn;
    trim_hook_ud = ud;
}

void ltc_trace_tick(void) {
    static int64_t *c_trim;
    if (!trim_limit) trim_limit = ltc_config_slot("LTC_TRIM_GRAPH_SIZE");
    if (++traced_since_sync <= *trim_limit || *trim_limit == 0 || trimming ||
        ltc_capture_active())
        return;
    trimming = true;
    LTC_COUNT(c_trim, "TrimIrGraph", 1);
    if (trim_hook) trim_hook(trim_hook_ud); /* e.g. the binding collects dead tensors first */
    (void)ltc_sync();
    trimming = false;
}
void ltc_trace_sync_reset(void) { traced_since_sync = 0; }

int64_t ltc_pending_node_count(void) {
    graph g = {0};
    int64_t n = 0;
    if (collect(&g) == LTC_OK) n = g.n;
    graph_free(&g);
    return n;
}

void ltc_shutdown(void) {
    ltc_ag_flush_deferred();
    ltc_cache_clear();
    /* PyTorch's PrepareToExit: each backend frees what it caches (the CPU backend: its
     * host-memory cache), after the compile cache let go of the computations */
    for (int i = 0; i < ltc_backend_count(); i++) {
        ltc_backend *b = ltc_backend_get_index(i);
        if (b->iface->prepare_to_exit) b->iface->prepare_to_exit(b);
    }
    ltc_debug_reset();
    ltc_scalar_cache_clear();
    ltc_slab_trim();
}
