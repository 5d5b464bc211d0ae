/*
 * autograd.c - recording: grad_fn nodes attached to the outputs of ops traced with an
 * operand that requires grad, the values they save, and a tensor's autograd state (PyTorch's
 * AutogradMeta, Node, SavedVariable). The backward walk is autograd_engine.c; views and
 * in-place writes are autograd_inplace.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"

_Thread_local bool ltc_grad_mode = true;

bool ltc_set_grad_enabled(bool on) {
    bool prev = ltc_grad_mode;
    ltc_grad_mode = on;
    return prev;
}

/* ---- a tensor's autograd state ------------------------------------------------------------ */

ltc_ag_meta *ltc_ag_meta_of(ltc_tensor *t) {
    if (!t->ag) {
        memset(&t->ag_meta, 0, sizeof t->ag_meta);
        t->ag = &t->ag_meta;
    }
    return t->ag;
}

/* Forgets that t is output nr of fn (fn's weak pointer to it). */
static void unlink_output(ltc_tensor *t, ltc_grad_fn *fn, int nr) {
    if (fn && fn->outs && nr < fn->n_outputs && fn->outs[nr] == t) fn->outs[nr] = NULL;
}

void ltc_ag_meta_free(ltc_tensor *t) {
    ltc_ag_meta *m = t->ag;
    t->ag = NULL;
    unlink_output(t, m->fn, m->nr);
    ltc_grad_fn_release(m->fn);
    ltc_tensor_release(m->grad);
    if (m->hooks) ltc_ag_hooks_free(m);
    if (m->savers && m->savers != m->few) free(m->savers);
}

ltc_status ltc_ag_set_history(ltc_tensor *t, ltc_grad_fn *fn, int nr, bool req) {
    if (!fn && !req && !t->ag) return LTC_OK;
    ltc_ag_meta *m = ltc_ag_meta_of(t);
    if (!m) return LTC_ERR_NOMEM;
    ltc_grad_fn_retain(fn);
    unlink_output(t, m->fn, m->nr);
    ltc_grad_fn_release(m->fn);
    m->fn = fn;
    m->nr = nr;
    m->requires_grad = fn != NULL || req;
    if (t->base) t->ag_gen = t->base->generation;
    return LTC_OK;
}

ltc_status ltc_ag_edge_of(ltc_tensor *t, ltc_edge *e) {
    memset(e, 0, sizeof *e);
    if (ltc_ag_stale(t)) {
        ltc_status st = ltc_ag_refresh(t);
        if (st) return st;
    }
    ltc_ag_meta *m = t->ag;
    if (!m || !m->requires_grad) return LTC_OK;
    if (m->fn) e->fn = m->fn, e->nr = m->nr;
    else e->leaf = t;
    return LTC_OK;
}

ltc_status ltc_ag_refresh(ltc_tensor *t) {
    ltc_tensor *base = t->base;
    t->ag_gen = base->generation;
    if (!ltc_grad_mode) return LTC_OK;
    if (!(base->ag && base->ag->requires_grad)) return ltc_ag_set_history(t, NULL, 0, false);
    ltc_tensor *x = ltc_tensor_retain(base);
    ltc_status st = LTC_OK;
    for (int i = 0; i < t->n_steps && !st; i++) {
        ltc_tensor *y = NULL;
        st = ltc_ag_apply_step(x, &t->steps[i], &y);
        ltc_tensor_release(x);
        x = y;
    }
    if (!st) {
        ltc_ag_meta *m = x->ag;
        st = ltc_ag_set_history(t, m ? m->fn : NULL, m ? m->nr : 0, m && m->requires_grad);
        t->ag_gen = base->generation;
    }
    ltc_tensor_release(x);
    return st;
}

/* ---- savers: which nodes saved a root or its views ------------------------------------- */

static ltc_tensor *root_of(ltc_tensor *t) { return t->base ? t->base : t; }

static ltc_status add_saver(ltc_tensor *t, ltc_grad_fn *fn, int slot) {
    ltc_ag_meta *m = ltc_ag_meta_of(root_of(t));
    if (!m->savers) {
        m->savers = m->few;
        m->cap_savers = 2;
    }
    if (m->n_savers == m->cap_savers) {
        int nc = m->cap_savers * 2;
        struct ltc_ag_saver *ns = m->savers == m->few ? malloc(sizeof *ns * (size_t)nc)
                                                      : realloc(m->savers, sizeof *ns * (size_t)nc);
        if (!ns) return ltc_errorf(LTC_ERR_NOMEM, "autograd: out of memory");
        if (m->savers == m->few) memcpy(ns, m->few, sizeof m->few);
        m->savers = ns;
        m->cap_savers = nc;
    }
    m->savers[m->n_savers++] = (struct ltc_ag_saver){fn, slot};
    return LTC_OK;
}

static void remove_saver(ltc_tensor *t, ltc_grad_fn *fn, int slot) {
    ltc_ag_meta *m = root_of(t)->ag;
    for (int i = m ? m->n_savers - 1 : -1; i >= 0; i--)
        if (m->savers[i].fn == fn && m->savers[i].slot == slot) {
            m->savers[i] = m->savers[--m->n_savers];
            return;
        }
}

/* A new tensor holding x's current value (its data, or its pending value), no history. */
static ltc_status snapshot(ltc_tensor *x, ltc_tensor **out) {
    ltc_value v;
    ltc_status st = ltc_tensor_value(x, &v);
    if (!st) st = ltc_tensor_from_value(v, out);
    if (!st) (*out)->backend = x->backend, (*out)->ordinal = x->ordinal;
    return st;
}

ltc_status ltc_ag_preserve(ltc_tensor *r) {
    ltc_ag_meta *m = r->ag;
    if (!m || !m->n_savers) return LTC_OK;
    ltc_status st = LTC_OK;
    while (m->n_savers > 0 && !st) {
        struct ltc_ag_saver sv = m->savers[--m->n_savers];
        ag_saved *s = &sv.fn->saved[sv.slot];
        if (!s->t) continue;
        ltc_tensor *snap = NULL;
        if ((st = snapshot(s->t, &snap))) {
            m->n_savers++; /* kept: tried again at the next write */
            break;
        }
        ltc_tensor_release(s->t);
        s->t = snap;
        s->registered = false;
        s->version = ltc_ag_version(snap);
    }
    return st;
}

/* ---- autograd history beside the value history of in-place writes ---------------------- */

void ltc_ag_history_save(ltc_tensor *t, int i) {
    ltc_ag_meta *m = t->ag;
    t->ag_history[i] = (ltc_ag_hist){m ? ltc_grad_fn_retain(m->fn) : NULL, m ? m->nr : 0,
                                     m && m->requires_grad};
}

/* Releases of nodes the value history held, deferred to a safe point: they happen while the
 * executor installs results (ltc_tensor_set_data) or rewinds tensors after a failed run
 * (executor.c's recovery), and a node's last release may free tensors the executor is still
 * walking. */
static _Thread_local ltc_grad_fn **deferred;
static _Thread_local int n_deferred, cap_deferred;

void ltc_ag_flush_deferred(void) {
    while (n_deferred > 0) ltc_grad_fn_release(deferred[--n_deferred]);
}

/* One reference to fn, released at the next ltc_ag_flush_deferred. */
static void defer_release(ltc_grad_fn *fn) {
    if (n_deferred == cap_deferred) {
        int nc = cap_deferred ? cap_deferred * 2 : 64;
        ltc_grad_fn **nd = realloc(deferred, sizeof *nd * (size_t)nc);
        if (!nd) return; /* cannot defer: kept (a leak), never freed under the executor */
        deferred = nd;
        cap_deferred = nc;
    }
    deferred[n_deferred++] = fn;
}

/* The node t had until now is released at the end of the sync, not here: the recovery of a
 * failed run calls this while it walks the run's tensors, and that node's saved tensors (an
 * in-place lerp_'s result, for one) may be among them (fuzz seed 357833, program 1751: a
 * use after free in rewind_dependents, then a crash in the slab). */
void ltc_ag_history_restore(ltc_tensor *t, int i) {
    ltc_ag_hist *a = &t->ag_history[i];
    ltc_grad_fn *old = t->ag ? t->ag->fn : NULL;
    if (old) {
        ltc_grad_fn_retain(old);
        defer_release(old);
    }
    (void)ltc_ag_set_history(t, a->fn, a->nr, a->requires_grad);
}

void ltc_ag_history_drop(ltc_tensor *t, int from, int n) {
    for (int i = from; i < n; i++) {
        ltc_grad_fn *fn = t->ag_history[i].fn;
        t->ag_history[i].fn = NULL;
        if (fn) defer_release(fn);
    }
}

/* ---- nodes ----------------------------------------------------------------------------------- */

/* Carves n items of size sz (aligned to 8) from *p. */
static void *carve(char **p, size_t n, size_t sz) {
    void *r = *p;
    *p += (n * sz + 7) & ~(size_t)7;
    return r;
}

/* One block holds the node and its arrays (a node is made per recorded op: one malloc). */
ltc_grad_fn *ltc_grad_fn_new(ag_kind kind, int n_args, int n_saved, int n_outputs) {
    size_t na = (size_t)(n_args ? n_args : 1), ns = (size_t)(n_saved ? n_saved : 1),
           no = (size_t)(n_outputs ? n_outputs : 1);
    size_t size = ((sizeof(ltc_grad_fn) + 7) & ~(size_t)7) + ((na * sizeof(ltc_ag_arg) + 7) & ~(size_t)7) +
                  ((na * sizeof(bool) + 7) & ~(size_t)7) + ((ns * sizeof(ag_saved) + 7) & ~(size_t)7) +
                  ((ns * sizeof(ltc_edge) + 7) & ~(size_t)7) + ((ns * sizeof(ltc_shape) + 7) & ~(size_t)7) +
                  ((no * sizeof(ltc_shape) + 7) & ~(size_t)7) + ((no * sizeof(ltc_tensor *) + 7) & ~(size_t)7) +
                  ((no * sizeof(uint64_t) + 7) & ~(size_t)7) +
                  ((no * sizeof(ltc_tensor *) + 7) & ~(size_t)7);
    char *p = ltc_slab_alloc(size);
    if (p) memset(p, 0, size);
    if (!p) {
        ltc_errorf(LTC_ERR_NOMEM, "autograd: out of memory recording an op");
        return NULL;
    }
    ltc_grad_fn *fn = carve(&p, 1, sizeof *fn);
    fn->refcount = 1;
    fn->size = size;
    fn->kind = kind;
    fn->n_args = n_args;
    fn->n_saved = n_saved;
    fn->n_outputs = n_outputs;
    fn->args = carve(&p, na, sizeof *fn->args);
    fn->needs = carve(&p, na, sizeof *fn->needs);
    fn->saved = carve(&p, ns, sizeof *fn->saved);
    fn->edges = carve(&p, ns, sizeof *fn->edges);
    fn->in_shapes = carve(&p, ns, sizeof *fn->in_shapes);
    fn->out_shapes = carve(&p, no, sizeof *fn->out_shapes);
    fn->outs = carve(&p, no, sizeof *fn->outs);
    fn->out_versions = carve(&p, no, sizeof *fn->out_versions);
    fn->gbuf = carve(&p, no, sizeof *fn->gbuf);
    return fn;
}

ltc_grad_fn *ltc_grad_fn_retain(ltc_grad_fn *fn) {
    if (fn) fn->refcount++;
    return fn;
}

void ltc_grad_fn_free_saved(ltc_grad_fn *fn) {
    for (int i = 0; i < fn->n_saved; i++) {
        if (fn->saved[i].t && fn->saved[i].registered) remove_saver(fn->saved[i].t, fn, i);
        ltc_tensor_release(fn->saved[i].t);
        ltc_node_release(fn->saved[i].value.node);
        fn->saved[i].t = NULL;
        fn->saved[i].value = (ltc_value){0};
    }
    if (fn->out_values)
        for (int r = 0; r < fn->n_outputs; r++) {
            ltc_node_release(fn->out_values[r].node);
            fn->out_values[r] = (ltc_value){0};
        }
    fn->freed = true;
}

/* Nodes are freed with an explicit stack: a long chain of histories (an RNN over many steps)
 * would otherwise recurse once per node. */
void ltc_grad_fn_release(ltc_grad_fn *fn) {
    if (!fn || fn->refcount > 1) { /* (the common case: not the last reference) */
        if (fn) fn->refcount--;
        return;
    }
    ltc_grad_fn **stack = NULL;
    int n = 0, cap = 0;
    while (fn) {
        if (--fn->refcount == 0) {
            for (int i = 0; i < fn->n_saved; i++) {
                ltc_edge *e = &fn->edges[i];
                if (e->fn) {
                    if (n == cap) {
                        int nc = cap ? cap * 2 : 64;
                        ltc_grad_fn **ns = realloc(stack, sizeof *ns * (size_t)nc);
                        if (!ns) { /* cannot defer: release recursively */
                            ltc_grad_fn_release(e->fn);
                            e->fn = NULL;
                            continue;
                        }
                        stack = ns;
                        cap = nc;
                    }
                    stack[n++] = e->fn;
                }
                ltc_tensor_release(e->leaf);
            }
            if (!fn->freed) ltc_grad_fn_free_saved(fn);
            for (int i = 0; i < fn->n_args; i++) {
                if (fn->args[i].ints) free(fn->args[i].ints);
                if (fn->args[i].list) free(fn->args[i].list);
            }
            for (int r = 0; r < fn->n_outputs; r++) ltc_tensor_release(fn->gbuf[r]);
            if (fn->out_values) free(fn->out_values);
            if (fn->steps) free(fn->steps);
            if (fn->view_shape) free(fn->view_shape);
            ltc_slab_free(fn, fn->size);
        }
        fn = n ? stack[--n] : NULL;
    }
    free(stack);
}

ltc_status ltc_ag_save(ltc_grad_fn *fn, int i, ltc_tensor *t, const ltc_edge *e) {
    fn->in_shapes[i] = t->shape;
    if (e) {
        fn->edges[i] = *e;
        ltc_grad_fn_retain(e->fn);
        ltc_tensor_retain(e->leaf);
    }
    if (!fn->saves_values) return LTC_OK;
    ltc_value v;
    ltc_status st = ltc_tensor_value(t, &v);
    if (st) return st;
    /* (a Lua number's weak scalar is never written in place and has no history: nothing
     * to preserve, so it is not registered with its savers) */
    bool number = t->weak && !t->base;
    if (!number && (st = add_saver(t, fn, i))) return st;
    fn->saved[i].kept = true;
    fn->saved[i].registered = !number;
    fn->saved[i].t = ltc_tensor_retain(t);
    fn->saved[i].version = ltc_ag_version(t);
    fn->saved[i].value = v;
    ltc_node_retain(v.node);
    return LTC_OK;
}

ltc_status ltc_ag_set_outputs(ltc_grad_fn *fn, ltc_tensor *const *outs, int n) {
    for (int r = 0; r < n; r++) {
        ltc_tensor *o = outs[r];
        if (!o) continue;
        fn->out_shapes[r] = o->shape;
        fn->out_versions[r] = ltc_ag_version(o);
        if (!ltc_dtype_is_float(o->shape.dtype)) continue;
        ltc_status st = ltc_ag_set_history(o, fn, r, true);
        if (st) return st;
        fn->outs[r] = o;
    }
    return LTC_OK;
}

static ltc_status with_edge(ltc_tensor *t, const ltc_edge *e, ltc_grad_fn *self_fn, int self_nr) {
    if (!ltc_grad_mode) return LTC_OK;
    if (self_fn) return ltc_ag_set_history(t, self_fn, self_nr, true);
    if (e && e->fn) return ltc_ag_set_history(t, e->fn, e->nr, true);
    return LTC_OK;
}

ltc_status ltc_ag_unpack(ltc_grad_fn *fn, int i, ltc_tensor **out) {
    ag_saved *s = &fn->saved[i];
    if (!s->kept) { /* not saved: no formula reads it */
        *out = NULL;
        return LTC_OK;
    }
    if (fn->freed || !s->t)
        return ltc_errorf(LTC_ERR_STATE, "backward: trying to backward through %s a second time "
                          "(its saved tensors were freed; pass {retain_graph = true} to the "
                          "first backward)", fn->name);
    if (ltc_ag_version(s->t) == s->version && !s->t->failed) {
        /* a copy preserve made holds the old value: with the history the value had */
        if (!s->registered) {
            ltc_status st = with_edge(s->t, &fn->edges[i], NULL, 0);
            if (st) return st;
        }
        *out = ltc_tensor_retain(s->t);
        return LTC_OK;
    }
    /* written in place since: its value then, with the history it had then */
    ltc_tensor *t;
    ltc_status st = ltc_tensor_from_value(s->value, &t);
    if (st) return st;
    t->backend = s->t->backend, t->ordinal = s->t->ordinal;
    /* (a leaf's old value gets no history: a leaf that requires grad is only written under
     * no_grad, and then PyTorch raises at backward) */
    if ((st = with_edge(t, &fn->edges[i], NULL, 0))) {
        ltc_tensor_release(t);
        return st;
    }
    *out = t;
    return LTC_OK;
}

ltc_status ltc_ag_unpack_result(ltc_grad_fn *fn, int r, ltc_tensor **out) {
    ltc_tensor *o = fn->outs[r];
    if (o && ltc_ag_version(o) == fn->out_versions[r] && !o->failed) {
        *out = ltc_tensor_retain(o);
        return LTC_OK;
    }
    if (fn->freed || !fn->out_values || !fn->out_values[r].node)
        return ltc_errorf(LTC_ERR_STATE, "backward: trying to backward through %s a second time "
                          "(its saved tensors were freed; pass {retain_graph = true} to the "
                          "first backward)", fn->name);
    ltc_tensor *t;
    ltc_status st = ltc_tensor_from_value(fn->out_values[r], &t);
    if (st) return st;
    if ((st = with_edge(t, NULL, fn, r))) {
        ltc_tensor_release(t);
        return st;
    }
    *out = t;
    return LTC_OK;
}

/* ---- recording (called by the generated op entries) ------------------------------------- */

bool ltc_ag_wants(const ltc_tensor *t) {
    return t && ((t->ag && t->ag->requires_grad) || (t->base && !t->ag_detached && t->base->ag));
}

bool ltc_ag_wants_list(ltc_tensor *const *ts, int n) {
    for (int i = 0; i < n; i++)
        if (ltc_ag_wants(ts[i])) return true;
    return false;
}

/* ltc_ag_edge_of without its call for a tensor that is no stale view (the common case). */
static inline ltc_status edge_fast(ltc_tensor *t, ltc_edge *e) {
    if (ltc_ag_stale(t)) return ltc_ag_edge_of(t, e);
    const ltc_ag_meta *m = t->ag;
    if (!m || !m->requires_grad) *e = (ltc_edge){0};
    else if (m->fn) *e = (ltc_edge){.fn = m->fn, .nr = m->nr};
    else *e = (ltc_edge){.leaf = t};
    return LTC_OK;
}

static int count_saved(const ltc_ag_arg *args, int n_args) {
    int k = 0;
    for (int i = 0; i < n_args; i++)
        k += args[i].kind == LTC_AG_TENSOR ? 1 : args[i].kind == LTC_AG_LIST ? args[i].n : 0;
    return k;
}

ltc_status ltc_ag_record(int op, const ltc_ag_arg *args, int n_args, ltc_tensor **outs,
                         int n_outs) {
    const ltc_derivative *d = ltc_derivative_of(op);
    if (!d || d->not_differentiable) return LTC_OK;
    if (n_deferred) ltc_ag_flush_deferred();
    /* the operands' edges first: nothing is made when none needs grad */
    ltc_edge stack_edges[8], *edges = stack_edges;
    int n_saved = count_saved(args, n_args);
    if (n_saved > 8 && !(edges = calloc((size_t)n_saved, sizeof *edges)))
        return ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory recording for autograd", d->name);
    ltc_status st = LTC_OK;
    uint64_t needed = 0; /* bit i: argument i needs a gradient (i < 64) */
    bool any = false;
    for (int i = 0, k = 0; i < n_args && !st; i++) {
        bool need = false;
        if (args[i].kind == LTC_AG_TENSOR) {
            if (!(st = edge_fast(args[i].t, &edges[k]))) need = edges[k].fn || edges[k].leaf;
            k++;
        } else if (args[i].kind == LTC_AG_LIST) {
            for (int j = 0; j < args[i].n && !st; j++, k++)
                if (!(st = ltc_ag_edge_of(args[i].list[j], &edges[k])))
                    need |= edges[k].fn || edges[k].leaf;
        }
        any |= need;
        if (need && i < 64) needed |= (uint64_t)1 << i;
    }
    if (st || !any) goto done;
    ltc_grad_fn *fn = ltc_grad_fn_new(AG_OP, n_args, n_saved, n_outs);
    if (!fn) {
        st = LTC_ERR_NOMEM;
        goto done;
    }
    fn->d = d;
    fn->name = d->name;
    for (int i = 0, k = 0; i < n_args && !st; i++) {
        ltc_ag_arg *a = &fn->args[i];
        *a = args[i];
        a->ints = NULL, a->list = NULL;
        /* saved when a formula reads it, and (when known) one that will run: that of an
         * argument needing a gradient */
        fn->saves_values = (!d->saves || d->saves[i]) &&
                           (!d->reads || n_args > 64 || (d->reads[i] & needed));
        if (args[i].kind == LTC_AG_TENSOR) {
            if (!(st = ltc_ag_save(fn, k, args[i].t, &edges[k]))) {
                a->t = fn->saved[k].t;
                fn->needs[i] = edges[k].fn || edges[k].leaf;
            }
            k++;
        } else if (args[i].kind == LTC_AG_LIST) {
            if (!(a->list = malloc(sizeof *a->list * (size_t)(args[i].n + 1)))) {
                st = ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory recording for autograd", d->name);
                break;
            }
            for (int j = 0; j < args[i].n && !st; j++, k++) {
                if (!(st = ltc_ag_save(fn, k, args[i].list[j], &edges[k]))) {
                    a->list[j] = fn->saved[k].t;
                    fn->needs[i] |= edges[k].fn || edges[k].leaf;
                }
            }
        } else if (args[i].kind == LTC_AG_INTS) {
            if (!(a->ints = malloc(sizeof *a->ints * (size_t)(args[i].n + 1)))) {
                st = ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory recording for autograd", d->name);
                break;
            }
            if (args[i].n) memcpy(a->ints, args[i].ints, sizeof *a->ints * (size_t)args[i].n);
        }
    }
    fn->saves_values = true;
    /* a formula at all, and one for every argument needing a gradient (else backward raises) */
    bool any_formula = false, all_needed = true;
    for (int i = 0; i < n_args; i++) {
        any_formula |= d->has_formula[i];
        all_needed &= !fn->needs[i] || d->has_formula[i];
    }
    fn->ok_formulas = any_formula && all_needed;
    if (!st && d->save_result) {
        if (!(fn->out_values = calloc((size_t)n_outs, sizeof *fn->out_values)))
            st = ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory recording for autograd", d->name);
        for (int r = 0; r < n_outs && !st; r++) {
            ltc_value v;
            if (!(st = ltc_tensor_value(outs[r], &v))) {
                fn->out_values[r] = v;
                ltc_node_retain(v.node);
            }
        }
    }
    if (!st) st = ltc_ag_set_outputs(fn, outs, n_outs);
    ltc_grad_fn_release(fn); /* the outputs hold it */
done:
    if (edges != stack_edges) free(edges);
    return st;
}

ltc_status ltc_ag_record_move(ltc_tensor *src, ltc_tensor *out) {
    if (!ltc_grad_mode || !ltc_ag_wants(src) || !ltc_dtype_is_float(out->shape.dtype))
        return LTC_OK;
    if (n_deferred) ltc_ag_flush_deferred();
    ltc_edge e;
    ltc_status st = ltc_ag_edge_of(src, &e);
    if (st || (!e.fn && !e.leaf)) return st;
    ltc_grad_fn *fn = ltc_grad_fn_new(AG_TO_DEVICE, 1, 1, 1);
    if (!fn) return LTC_ERR_NOMEM;
    fn->name = "to_copy";
    fn->dev = (ltc_device){src->backend->name, src->ordinal};
    fn->edges[0] = e;
    ltc_grad_fn_retain(e.fn);
    ltc_tensor_retain(e.leaf);
    fn->in_shapes[0] = src->shape;
    fn->needs[0] = true;
    fn->freed = true; /* saves no values: the backward needs only src's device */
    st = ltc_ag_set_outputs(fn, &out, 1);
    ltc_grad_fn_release(fn); /* the output holds it */
    return st;
}

/* ---- the tensor API ---------------------------------------------------------------------- */

bool ltc_requires_grad(ltc_tensor *t) {
    if (ltc_ag_stale(t) && ltc_ag_refresh(t)) return false;
    return t->ag && t->ag->requires_grad;
}

ltc_status ltc_set_requires_grad(ltc_tensor *t, bool flag) {
    if (ltc_ag_stale(t)) {
        ltc_status st = ltc_ag_refresh(t);
        if (st) return st;
    }
    if (t->ag && t->ag->fn)
        return ltc_errorf(LTC_ERR_ARG, "requires_grad: only leaf tensors can be changed (use "
                          "detach())");
    if (flag && !ltc_dtype_is_float(t->shape.dtype))
        return ltc_errorf(LTC_ERR_ARG, "requires_grad: only floating-point tensors can require "
                          "grad, not %s", ltc_dtype_name(t->shape.dtype));
    return ltc_ag_set_history(t, NULL, 0, flag);
}

bool ltc_is_leaf(ltc_tensor *t) {
    if (ltc_ag_stale(t)) (void)ltc_ag_refresh(t);
    return !(t->ag && t->ag->fn);
}

const char *ltc_grad_fn_name(ltc_tensor *t, int *output) {
    if (ltc_ag_stale(t)) (void)ltc_ag_refresh(t);
    if (!t->ag || !t->ag->fn) return NULL;
    if (output) *output = t->ag->nr + 1;
    return t->ag->fn->name;
}

void ltc_ag_drop_failed_grad(ltc_ag_meta *m) {
    if (m && m->grad && m->grad->failed) {
        ltc_tensor_release(m->grad);
        m->grad = NULL;
        m->grad_owned = false;
    }
}

ltc_tensor *ltc_grad_get(ltc_tensor *t) {
    ltc_ag_drop_failed_grad(t->ag);
    return t->ag ? t->ag->grad : NULL;
}

void ltc_grad_set(ltc_tensor *t, ltc_tensor *g) {
    if (!g && !t->ag) return;
    ltc_ag_meta *m = ltc_ag_meta_of(t);
    if (!m) return;
    ltc_tensor_retain(g);
    ltc_tensor_release(m->grad);
    m->grad = g;
    m->grad_owned = false;
}

ltc_status ltc_detach(ltc_tensor *t, ltc_tensor **out) {
    bool prev = ltc_set_grad_enabled(false);
    ltc_status st = ltc_view(t, t->shape.dims, t->shape.ndim, out);
    ltc_set_grad_enabled(prev);
    if (!st) (*out)->ag_detached = true;
    return st;
}
