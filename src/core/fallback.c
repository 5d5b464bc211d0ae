/*
 * fallback.c - the eager fallback, one for every backend (PyTorch LTC: the CPU fallback that
 * runs an op with no lowering on another device, moving its operands there and its results
 * back, counted per op).
 *
 * When a graph has nodes that its backend does not lower (the backend's `lowers` slot says
 * no), the core compiles it as a composite computation: the post order is cut into runs of
 * nodes that one backend computes, the graph's backend or the one its
 * eager_fallback_device_type names; each run is compiled by its backend as a graph of its
 * own (its inputs become parameters); running the composite runs the pieces in order,
 * moving values between backends through their transfer slots (data_to_host, then
 * data_from_host) where producer and consumer differ, and counts EagerFallback::<op> for
 * each fallback node at each run. The composite is cached like any computation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

typedef struct {
    int seg;   /* -1: graph parameter `index`; else output `index` of segment `seg` */
    int index;
} src_ref;

typedef struct {
    ltc_backend *backend;
    ltc_computation *comp;
    int n_in;
    src_ref *in;
    int n_counters;
    int64_t **counters; /* EagerFallback::<op> of its nodes, when on the fallback backend */
    int n_nodes;
    int *node_of;       /* its post order's index -> the graph's (-1: an input parameter), so
                         * a failing node is named in the graph's terms (ltc_error_set_node) */
} segment;

typedef struct {
    ltc_backend *home;
    int n_segs;
    segment *segs;
    int n_roots;
    src_ref *roots;
} composite;

static void composite_free(composite *k) {
    if (!k) return;
    for (int s = 0; s < k->n_segs; s++) {
        ltc_computation_free(k->segs[s].comp);
        free(k->segs[s].in);
        free(k->segs[s].counters);
        free(k->segs[s].node_of);
    }
    free(k->segs);
    free(k->roots);
    free(k);
}

static void comp_free(ltc_backend *self, ltc_computation *c) {
    (void)self;
    composite_free(c->impl);
    c->impl = NULL;
}

static ltc_status comp_execute(ltc_backend *self, ltc_computation *c, ltc_data *const *args,
                               ltc_data **outs) {
    (void)self;
    composite *k = c->impl;
    ltc_status st = LTC_OK;
    ltc_data ***vals = calloc((size_t)k->n_segs, sizeof *vals);
    ltc_data **ins = NULL, **moved = NULL;
    int max_in = 1;
    for (int s = 0; s < k->n_segs; s++)
        if (k->segs[s].n_in > max_in) max_in = k->segs[s].n_in;
    if (!vals || !(ins = calloc((size_t)max_in, sizeof *ins)) ||
        !(moved = calloc((size_t)max_in, sizeof *moved))) {
        st = ltc_errorf(LTC_ERR_NOMEM, "eager fallback: out of memory");
        goto done;
    }
    for (int s = 0; s < k->n_segs && !st; s++) {
        segment *sg = &k->segs[s];
        if (!(vals[s] = calloc((size_t)sg->comp->n_outputs + 1, sizeof **vals))) {
            st = ltc_errorf(LTC_ERR_NOMEM, "eager fallback: out of memory");
            break;
        }
        for (int i = 0; i < sg->n_in && !st; i++) {
            src_ref r = sg->in[i];
            ltc_data *d = r.seg < 0 ? args[r.index] : vals[r.seg][r.index];
            if (!ltc_data_on(d, sg->backend)) st = ltc_data_transfer(d, sg->backend, &moved[i]), d = moved[i];
            ins[i] = d;
        }
        if (!st) {
            ltc_error_set_node(-1);
            st = ltc_execute(sg->comp, ins, vals[s]);
            if (st) { /* the piece names its own node: name the graph's */
                int f = ltc_error_node();
                ltc_error_set_node(f >= 0 && f < sg->n_nodes ? sg->node_of[f] : -1);
            }
        } else {
            ltc_error_set_node(-1);
        }
        for (int i = 0; i < sg->n_in; i++) ltc_data_release(moved[i]), moved[i] = NULL;
        for (int i = 0; i < sg->n_counters && !st; i++)
            __atomic_fetch_add(sg->counters[i], 1, __ATOMIC_RELAXED);
    }
    for (int r = 0; r < k->n_roots && !st; r++) {
        src_ref ref = k->roots[r];
        ltc_data *d = ref.seg < 0 ? args[ref.index] : vals[ref.seg][ref.index];
        if (!ltc_data_on(d, k->home)) st = ltc_data_transfer(d, k->home, &outs[r]);
        else outs[r] = ltc_data_retain(d);
    }
    if (st)
        for (int r = 0; r < k->n_roots; r++) ltc_data_release(outs[r]), outs[r] = NULL;
done:
    for (int s = 0; vals && s < k->n_segs; s++) {
        for (int i = 0; vals[s] && i < k->segs[s].comp->n_outputs; i++) ltc_data_release(vals[s][i]);
        free(vals[s]);
    }
    free(vals);
    free(ins);
    free(moved);
    return st;
}

static char *comp_text(ltc_backend *self, const ltc_computation *c) {
    (void)self;
    const composite *k = c->impl;
    size_t cap = 256, len = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    len = (size_t)snprintf(out, cap, "eager fallback: %d pieces on %s and its fallback\n",
                           k->n_segs, k->home->name);
    for (int s = 0; s < k->n_segs; s++) {
        ltc_backend *b = k->segs[s].backend;
        char *t = b->iface->computation_text ? b->iface->computation_text(b, k->segs[s].comp) : NULL;
        size_t need = len + (t ? strlen(t) : 0) + 128;
        if (need > cap) {
            char *n = realloc(out, cap = need * 2);
            if (!n) {
                free(t);
                free(out);
                return NULL;
            }
            out = n;
        }
        len += (size_t)snprintf(out + len, cap - len, "piece %d on %s%s:\n%s%s", s + 1, b->name,
                                b == k->home ? "" : " (eager fallback)", t ? t : "(no text)\n",
                                t && t[0] && t[strlen(t) - 1] == '\n' ? "" : "\n");
        free(t);
    }
    return out;
}

/* Not registered: the composite's computations point at it for execute, free and text. */
static const struct ltc_backend_i composite_iface = {
    .version = LTC_BACKEND_IFACE_VERSION,
    .computation_free = comp_free,
    .execute = comp_execute,
    .computation_text = comp_text,
};
static ltc_backend composite_backend = {.name = "eager-fallback", .iface = &composite_iface};

static ltc_status compile_pieces(const ltc_lowering_ctx *ctx, ltc_backend *b, ltc_hash h,
                                 ltc_computation **out);

bool ltc_fallback_needed(const ltc_lowering_ctx *ctx, ltc_backend *b) {
    if (!b->iface->lowers) return false;
    for (int i = 0; i < ctx->n_nodes; i++) {
        const ltc_node *n = ctx->post_order[i];
        if (n->op != LTC_OP_DEVICE_DATA && !b->iface->lowers(b, n)) return true;
    }
    return false;
}

bool ltc_tensor_lowered(const ltc_tensor *t) {
    const ltc_node *n = t->ir.node;
    if (!n || n->op == LTC_OP_DEVICE_DATA || !t->backend || !t->backend->iface->lowers)
        return true;
    return t->backend->iface->lowers(t->backend, n);
}

bool ltc_device_lowers_op(ltc_device dev, int op, ltc_dtype dtype) {
    ltc_backend *b = dev.type ? ltc_backend_get(dev.type) : NULL;
    if (!b || op < 0 || op >= LTC_OP_COUNT) return false;
    if (b->iface->lowers_op) return b->iface->lowers_op(b, op, dtype);
    return !b->iface->lowers;
}

/* How deep fallbacks chain on this thread (a piece on the fallback backend may itself need
 * that backend's fallback: toy -> cpu -> ref); past LTC_MAX_BACKENDS the chain is a cycle. */
static _Thread_local int depth;

ltc_status ltc_fallback_compile(const ltc_lowering_ctx *ctx, ltc_backend *b, ltc_hash h,
                                ltc_computation **out) {
    if (depth >= LTC_MAX_BACKENDS)
        return ltc_errorf(LTC_ERR_BACKEND, "eager fallback: the backends' fallbacks form a cycle "
                          "(at '%s'), and none lowers every node", b->name);
    depth++;
    ltc_status st = compile_pieces(ctx, b, h, out);
    depth--;
    return st;
}

static ltc_status compile_pieces(const ltc_lowering_ctx *ctx, ltc_backend *b, ltc_hash h,
                                 ltc_computation **out) {
    ltc_status st = LTC_OK;
    int n = ctx->n_nodes;
    const char *fbname = b->iface->eager_fallback_device_type
                             ? b->iface->eager_fallback_device_type(b) : NULL;
    ltc_backend *fb = fbname ? ltc_backend_get(fbname) : NULL;
    int *seg_of = malloc(sizeof(int) * (size_t)(n + 1));     /* -1 for parameters */
    int *param_no = malloc(sizeof(int) * (size_t)(n + 1));
    int *first_out = malloc(sizeof(int) * (size_t)(n + 1));  /* offset of its outputs */
    int n_vals = 0;
    for (int i = 0; i < n; i++) n_vals += ctx->post_order[i]->n_outputs;
    int *export_idx = malloc(sizeof(int) * (size_t)(n_vals + 1)); /* -1: not exported */
    composite *k = calloc(1, sizeof *k);
    ltc_node **nodes = malloc(sizeof *nodes * (size_t)(2 * n + 1)); /* a segment's graph */
    ltc_value *map = malloc(sizeof *map * (size_t)(n_vals + 1));      /* value -> its clone */
    int *in_of = malloc(sizeof(int) * (size_t)(n_vals + 1));         /* value -> input no */
    ltc_value *roots = malloc(sizeof *roots * (size_t)(n_vals + 1));
    uint8_t *emitted = malloc((size_t)(2 * n + 1));
    int n_nodes = 0;
    if (!seg_of || !param_no || !first_out || !export_idx || !k || !nodes || !map || !in_of ||
        !roots || !emitted)
        goto nomem;
    k->home = b;
    /* which backend computes each node, and the segments (runs of one backend) */
    int params = 0, vals = 0, cur = -1;
    ltc_backend *cur_b = NULL;
    for (int i = 0; i < n; i++) {
        const ltc_node *nd = ctx->post_order[i];
        first_out[i] = vals;
        vals += nd->n_outputs;
        if (nd->op == LTC_OP_DEVICE_DATA) {
            seg_of[i] = -1;
            param_no[i] = params++;
            continue;
        }
        ltc_backend *on = b->iface->lowers(b, nd) ? b : fb;
        if (!on) {
            st = ltc_errorf(LTC_ERR_BACKEND, "%s: backend '%s' does not lower this op and has no "
                            "eager fallback%s%s", ltc_op_name(nd->op), b->name,
                            fbname ? ": no backend named " : "", fbname ? fbname : "");
            goto fail;
        }
        if (on != cur_b) {
            segment *ns = realloc(k->segs, sizeof *ns * (size_t)(k->n_segs + 1));
            if (!ns) goto nomem;
            k->segs = ns;
            memset(&ns[k->n_segs], 0, sizeof *ns);
            ns[k->n_segs].backend = on;
            cur = k->n_segs++;
            cur_b = on;
        }
        seg_of[i] = cur;
    }
    /* exported values: used by a later segment, or a root; numbered per segment */
    for (int v = 0; v < n_vals; v++) export_idx[v] = -1;
    for (int i = 0; i < n; i++) {
        const ltc_node *nd = ctx->post_order[i];
        for (int j = 0; j < nd->n_operands; j++) {
            ltc_value o = nd->operands[j];
            int p = o.node->index;
            if (seg_of[p] >= 0 && seg_of[p] != seg_of[i]) export_idx[first_out[p] + o.index] = 0;
        }
    }
    for (int r = 0; r < ctx->n_roots; r++) {
        int p = ctx->roots[r].node->index;
        if (seg_of[p] >= 0) export_idx[first_out[p] + ctx->roots[r].index] = 0;
    }
    /* each segment: clone its nodes over parameters for its inputs, compile */
    for (int s = 0; s < k->n_segs; s++) {
        segment *sg = &k->segs[s];
        int n_in = 0, n_clones = 0, n_roots = 0, n_counted = 0;
        for (int v = 0; v < n_vals; v++) in_of[v] = -1;
        n_nodes = 0;
        /* inputs first: the parameters and earlier segments' values this one reads */
        for (int i = 0; i < n; i++) {
            if (seg_of[i] != s) continue;
            const ltc_node *nd = ctx->post_order[i];
            n_counted++;
            for (int j = 0; j < nd->n_operands; j++) {
                ltc_value o = nd->operands[j];
                int p = o.node->index, v = first_out[p] + o.index;
                if (seg_of[p] == s || in_of[v] >= 0) continue;
                ltc_node *pn = ltc_node_new(LTC_OP_DEVICE_DATA, NULL, 0, NULL, 0,
                                            &o.node->shapes[o.index], 1);
                src_ref *ni = realloc(sg->in, sizeof *ni * (size_t)(n_in + 1));
                if (!pn || !ni) {
                    ltc_node_release(pn);
                    if (ni) sg->in = ni;
                    goto nomem;
                }
                sg->in = ni;
                sg->in[n_in] = seg_of[p] < 0 ? (src_ref){-1, param_no[p]}
                                             : (src_ref){seg_of[p], export_idx[v]};
                in_of[v] = n_in++;
                pn->index = n_nodes;
                nodes[n_nodes++] = pn;
                map[v] = (ltc_value){pn, 0};
            }
        }
        sg->n_in = n_in;
        int n_params = n_nodes;
        if (!(sg->node_of = malloc(sizeof(int) * (size_t)(n_params + n_counted + 1)))) goto nomem;
        for (int i = 0; i < n_params; i++) sg->node_of[i] = -1;
        for (int i = 0; i < n; i++) {
            if (seg_of[i] != s) continue;
            const ltc_node *nd = ctx->post_order[i];
            ltc_value ops[64];
            for (int j = 0; j < nd->n_operands && j < 64; j++) {
                ltc_value o = nd->operands[j];
                ops[j] = map[first_out[o.node->index] + o.index];
            }
            ltc_node *c = ltc_node_new(nd->op, ops, nd->n_operands, nd->attrs, nd->n_attrs,
                                       nd->shapes, nd->n_outputs);
            if (!c) goto nomem;
            c->index = n_nodes;
            sg->node_of[n_nodes] = i;
            nodes[n_nodes++] = c;
            sg->n_nodes = n_nodes;
            n_clones++;
            for (int o = 0; o < nd->n_outputs; o++) {
                int v = first_out[i] + o;
                map[v] = (ltc_value){c, o};
                if (export_idx[v] >= 0) {
                    export_idx[v] = n_roots;
                    roots[n_roots++] = map[v];
                }
            }
        }
        if (sg->backend != b) { /* count each fallback node at each run */
            if (!(sg->counters = calloc((size_t)n_counted, sizeof *sg->counters))) goto nomem;
            for (int i = 0; i < n; i++) {
                if (seg_of[i] != s) continue;
                char name[96];
                snprintf(name, sizeof name, "EagerFallback::%s", ltc_op_name(ctx->post_order[i]->op));
                if ((sg->counters[sg->n_counters] = ltc_counter_slot(name))) sg->n_counters++;
            }
        }
        ltc_lowering_ctx sctx = {
            .name = "EagerFallbackPiece", .post_order = nodes, .n_nodes = n_nodes,
            .roots = roots, .n_roots = n_roots, .params = nodes, .n_params = n_params,
            .emitted = emitted,
        };
        ltc_hash hs = ltc_hash_bytes(&s, sizeof s, h);
        st = ltc_graph_compile(&sctx, sg->backend, hs, &sg->comp);
        for (int i = 0; i < n_nodes; i++) ltc_node_release(nodes[i]);
        n_nodes = 0;
        (void)n_clones;
        if (st) goto fail;
    }
    /* the graph's roots */
    k->n_roots = ctx->n_roots;
    if (!(k->roots = malloc(sizeof *k->roots * (size_t)(ctx->n_roots + 1)))) goto nomem;
    for (int r = 0; r < ctx->n_roots; r++) {
        int p = ctx->roots[r].node->index;
        k->roots[r] = seg_of[p] < 0 ? (src_ref){-1, param_no[p]}
                                    : (src_ref){seg_of[p], export_idx[first_out[p] + ctx->roots[r].index]};
    }
    (*out)->impl = k;
    (*out)->backend = &composite_backend;
    k = NULL;
    goto done;
nomem:
    st = ltc_errorf(LTC_ERR_NOMEM, "eager fallback: out of memory compiling");
fail:
    for (int i = 0; i < n_nodes; i++) ltc_node_release(nodes[i]);
done:
    composite_free(k);
    free(seg_of);
    free(param_no);
    free(first_out);
    free(export_idx);
    free(nodes);
    free(map);
    free(in_of);
    free(roots);
    free(emitted);
    return st;
}
