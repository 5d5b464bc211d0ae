/*
 * autograd_engine.c - the backward walk (PyTorch's autograd::Engine, single-threaded): the
 * nodes reachable from a tensor in reverse topological order, each one's backward called
 * with the sum of the gradients its outputs received, the results fitted to the inputs'
 * shapes and routed on, and gradients accumulated into the leaves.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"

static ltc_foreign_backward_fn foreign;
static void *foreign_ud;
static bool foreign_always;

void ltc_autograd_use_foreign(bool always) { foreign_always = always; }

void ltc_autograd_set_foreign(ltc_foreign_backward_fn fn, void *ud) {
    foreign = fn;
    foreign_ud = ud;
}

static _Thread_local uint32_t walk_mark;

/* Per-node arrays up to this size live on the stack of the backward walk. */
#define SMALL 8

/* ---- tensor hooks and retain_grad ---------------------------------------------------------- */

static ltc_hook_run_fn hook_run;
static ltc_hook_free_fn hook_free;
static void *hook_ud;

void ltc_autograd_set_hooks(ltc_hook_run_fn run, ltc_hook_free_fn free_fn, void *ud) {
    hook_run = run;
    hook_free = free_fn;
    hook_ud = ud;
}

void ltc_ag_hooks_free(ltc_ag_meta *m) {
    for (int i = 0; i < m->n_hooks; i++)
        if (hook_free) hook_free(hook_ud, m->hooks[i]);
    free(m->hooks);
    m->hooks = NULL;
    m->n_hooks = 0;
}

ltc_status ltc_register_hook(ltc_tensor *t, int id) {
    if (!ltc_requires_grad(t))
        return ltc_errorf(LTC_ERR_ARG, "register_hook: cannot register a hook on a tensor that "
                          "does not require grad");
    ltc_ag_meta *m = t->ag;
    int *h = realloc(m->hooks, sizeof *h * (size_t)(m->n_hooks + 1));
    if (!h) return ltc_errorf(LTC_ERR_NOMEM, "register_hook: out of memory");
    h[m->n_hooks++] = id;
    m->hooks = h;
    return LTC_OK;
}

bool ltc_remove_hook(ltc_tensor *t, int id) {
    ltc_ag_meta *m = t->ag;
    for (int i = 0; m && i < m->n_hooks; i++) {
        if (m->hooks[i] != id) continue;
        memmove(&m->hooks[i], &m->hooks[i + 1], sizeof *m->hooks * (size_t)(m->n_hooks - i - 1));
        m->n_hooks--;
        if (hook_free) hook_free(hook_ud, id);
        return true;
    }
    return false;
}

ltc_status ltc_retain_grad(ltc_tensor *t) {
    if (!ltc_requires_grad(t))
        return ltc_errorf(LTC_ERR_ARG, "retain_grad: can't retain_grad on a tensor that has "
                          "requires_grad=False");
    if (t->ag->fn) t->ag->retains_grad = true;
    return LTC_OK;
}

bool ltc_retains_grad(ltc_tensor *t) {
    return t->ag && t->ag->requires_grad && (!t->ag->fn || t->ag->retains_grad);
}

/* Runs t's hooks on *g (taken over; replaced by a hook's result). */
static ltc_status run_hooks(ltc_tensor *t, ltc_tensor **g) {
    ltc_ag_meta *m = t->ag;
    for (int i = 0; m && i < m->n_hooks && hook_run; i++) {
        ltc_tensor *r = NULL;
        ltc_status st = hook_run(hook_ud, m->hooks[i], *g, &r);
        if (st) return st;
        if (r) {
            ltc_tensor_release(*g);
            *g = r;
        }
    }
    return LTC_OK;
}

/* autograd.grad: the inputs whose gradients are captured instead of accumulated (NULL when
 * backward accumulates). */
typedef struct capture {
    ltc_tensor *const *inputs;
    ltc_edge *edges; /* each input's edge */
    ltc_tensor **grads;
    int n;
} capture;
static _Thread_local capture *capturing;

/* Adds g (a new reference, kept) to the captured gradient k. */
static ltc_status capture_add(int k, ltc_tensor *g) {
    ltc_tensor *prev = capturing->grads[k];
    if (!prev) {
        capturing->grads[k] = ltc_tensor_retain(g);
        return LTC_OK;
    }
    ltc_tensor *sum = NULL;
    ltc_status st = ltc_add(prev, g, &sum);
    if (st) return st;
    ltc_tensor_release(prev);
    capturing->grads[k] = sum;
    return LTC_OK;
}

/* g summed over the dims it was broadcast along down to `s`, in s's dtype (new reference;
 * takes over g's). */
static ltc_status fit(ltc_tensor *g, const ltc_shape *s, ltc_tensor **out) {
    ltc_status st = LTC_OK;
    ltc_tensor *x = NULL;
    bool same = g->shape.ndim == s->ndim &&
                (!memcmp(g->shape.dims, s->dims, sizeof *s->dims * (size_t)s->ndim) ||
                 ltc_shape_numel(&g->shape) == ltc_shape_numel(s));
    if (!same) {
        for (int k = g->shape.ndim - s->ndim; k > 0 && !st; k--) {
            if (!(st = ltc_sum(g, 1, false, &x))) {
                ltc_tensor_release(g);
                g = x;
            }
        }
        for (int i = 0; i < s->ndim && !st; i++) {
            if (s->dims[i] != 1 || g->shape.dims[i] == 1) continue;
            if (!(st = ltc_sum(g, i + 1, true, &x))) {
                ltc_tensor_release(g);
                g = x;
            }
        }
    }
    if (!st && g->shape.dtype != s->dtype && !(st = ltc_to(g, s->dtype, &x))) {
        ltc_tensor_release(g);
        g = x;
    }
    if (st) ltc_tensor_release(g);
    else *out = g;
    return st;
}

static bool requires(ltc_tensor *t) { return t->ag && t->ag->requires_grad; }

/* Adds g (taken over) into leaf t's grad. An existing gradient of its own that needs no grad
 * is updated in place (so a sync that fails restores it, issue 17); one shared with another
 * tensor is copied first. */
static ltc_status accumulate(ltc_tensor *t, ltc_tensor *g) {
    ltc_ag_meta *m = ltc_ag_meta_of(t);
    if (!m) {
        ltc_tensor_release(g);
        return LTC_ERR_NOMEM;
    }
    ltc_ag_drop_failed_grad(m);
    ltc_tensor *prev = m->grad, *sum = NULL;
    ltc_status st = LTC_OK;
    if (!prev) {
        m->grad = g;
        m->grad_owned = false;
        return LTC_OK;
    }
    if (requires(prev) || requires(g)) {
        if (!(st = ltc_add(prev, g, &sum))) {
            ltc_tensor_release(prev);
            m->grad = sum;
            m->grad_owned = false;
        }
        ltc_tensor_release(g);
        return st;
    }
    if (!m->grad_owned) {
        ltc_tensor *c = NULL;
        if ((st = ltc_clone(prev, &c))) goto done;
        ltc_tensor_release(prev);
        m->grad = prev = c;
        m->grad_owned = true;
    }
    if (!(st = ltc_add(prev, g, &sum))) st = ltc_tensor_assign_raw(prev, sum);
done:
    ltc_tensor_release(sum);
    ltc_tensor_release(g);
    return st;
}

/* Leaf t's gradient g (taken over), its hooks run: into t's grad, or autograd.grad's capture. */
static ltc_status deliver(ltc_tensor *t, ltc_tensor *g) {
    ltc_status st = run_hooks(t, &g);
    if (st) {
        ltc_tensor_release(g);
        return st;
    }
    if (!capturing) return accumulate(t, g);
    for (int k = 0; k < capturing->n && !st; k++)
        if (capturing->edges[k].leaf == t) st = capture_add(k, g);
    ltc_tensor_release(g);
    return st;
}

/* The leaves with hooks that one backward reached: the gradient of each is summed over all
 * its edges and its hooks run once, on the sum, when the walk ends (PyTorch's hooks of a
 * leaf are pre-hooks of its AccumulateGrad node: `y = x * x` calls x's hook once with 2x g,
 * not once per operand). */
typedef struct held_leaf {
    ltc_tensor *leaf, *g; /* references of their own */
} held_leaf;
typedef struct held_leaves {
    held_leaf *v;
    int n, cap;
} held_leaves;
static _Thread_local held_leaves *held; /* the running walk's (NULL outside a walk) */

static ltc_status hold(ltc_tensor *t, ltc_tensor *g) {
    for (int i = 0; i < held->n; i++) {
        if (held->v[i].leaf != t) continue;
        ltc_tensor *sum = NULL;
        ltc_status st = ltc_add(held->v[i].g, g, &sum);
        ltc_tensor_release(g);
        if (st) return st;
        ltc_tensor_release(held->v[i].g);
        held->v[i].g = sum;
        return LTC_OK;
    }
    if (held->n == held->cap) {
        int cap = held->cap ? held->cap * 2 : 8;
        held_leaf *v = realloc(held->v, sizeof *v * (size_t)cap);
        if (!v) {
            ltc_tensor_release(g);
            return ltc_errorf(LTC_ERR_NOMEM, "backward: out of memory");
        }
        held->v = v;
        held->cap = cap;
    }
    held->v[held->n++] = (held_leaf){.leaf = ltc_tensor_retain(t), .g = g};
    return LTC_OK;
}

/* Sends g (taken over) along edge e into an input of shape s. */
static ltc_status route(const ltc_edge *e, ltc_tensor *g, const ltc_shape *s) {
    ltc_status st = fit(g, s, &g);
    if (st) return st;
    if (e->leaf) {
        if (held && e->leaf->ag && e->leaf->ag->n_hooks) return hold(e->leaf, g);
        return deliver(e->leaf, g);
    }
    ltc_grad_fn *fn = e->fn;
    ltc_tensor *prev = fn->gbuf[e->nr];
    if (!prev) {
        fn->gbuf[e->nr] = g;
        return LTC_OK;
    }
    ltc_tensor *sum = NULL;
    st = ltc_add(prev, g, &sum);
    ltc_tensor_release(g);
    if (st) return st;
    ltc_tensor_release(prev);
    fn->gbuf[e->nr] = sum;
    return LTC_OK;
}

/* The nodes reachable from root, consumers before producers (a depth-first post order,
 * reversed) into *order (malloc'd). */
static ltc_status topo(ltc_grad_fn *const *roots, int n_roots, ltc_grad_fn ***order,
                       int *n_order) {
    uint32_t mark = ++walk_mark;
    int cap = 64, n = 0, sp = 0, scap = 64;
    ltc_grad_fn **out = malloc(sizeof *out * (size_t)cap);
    ltc_grad_fn **stack = malloc(sizeof *stack * (size_t)scap);
    if (!out || !stack) goto nomem;
    for (int ri = 0; ri < n_roots; ri++) {
    ltc_grad_fn *root = roots[ri];
    if (!root || root->mark == mark) continue;
    root->mark = mark;
    root->kid_at = 0;
    stack[sp++] = root;
    while (sp > 0) {
        ltc_grad_fn *fn = stack[sp - 1];
        ltc_grad_fn *kid = NULL;
        while (fn->kid_at < fn->n_saved && !kid) {
            ltc_grad_fn *k = fn->edges[fn->kid_at++].fn;
            if (k && k->mark != mark) kid = k;
        }
        if (!kid) {
            sp--;
            if (n == cap) {
                ltc_grad_fn **no = realloc(out, sizeof *no * (size_t)(cap *= 2));
                if (!no) goto nomem;
                out = no;
            }
            out[n++] = fn;
            continue;
        }
        kid->mark = mark;
        kid->kid_at = 0;
        if (sp == scap) {
            ltc_grad_fn **ns = realloc(stack, sizeof *ns * (size_t)(scap *= 2));
            if (!ns) goto nomem;
            stack = ns;
        }
        stack[sp++] = kid;
    }
    }
    for (int i = 0; i < n / 2; i++) {
        ltc_grad_fn *x = out[i];
        out[i] = out[n - 1 - i];
        out[n - 1 - i] = x;
    }
    free(stack);
    *order = out;
    *n_order = n;
    return LTC_OK;
nomem:
    free(out);
    free(stack);
    return ltc_errorf(LTC_ERR_NOMEM, "backward: out of memory");
}

/* Whether fn's recorded arguments can go to its backward as they are: no tensor lists, every
 * saved tensor (and result, when read) still holding its value at record time with the
 * history it had (what ltc_ag_unpack would return), and the C formula to run. */
static bool args_current(ltc_grad_fn *fn, ltc_tensor **results) {
    const ltc_derivative *d = fn->d;
    if (!d->backward || (foreign_always && foreign)) return false;
    for (int i = 0, k = 0; i < fn->n_args; i++) {
        ltc_ag_kind kind = fn->args[i].kind;
        if (kind == LTC_AG_LIST) return false;
        if (kind != LTC_AG_TENSOR) continue;
        const ag_saved *s = &fn->saved[k++];
        if (s->kept && !(s->t && (s->registered || (s->t->weak && !s->t->base)) &&
                         ltc_ag_version(s->t) == s->version && !s->t->failed))
            return false;
    }
    for (int r = 0; d->save_result && r < fn->n_outputs; r++) {
        ltc_tensor *o = fn->outs[r];
        if (!(o && ltc_ag_version(o) == fn->out_versions[r] && !o->failed)) return false;
        results[r] = o;
    }
    return true;
}

/* Calls an op node's backward: its arguments with the saved values unpacked. */
static ltc_status op_backward(ltc_grad_fn *fn, ltc_tensor *const *grads, ltc_ag_grad *g) {
    const ltc_derivative *d = fn->d;
    ltc_tensor *r_fast[SMALL];
    /* the common case: the recorded arguments (tensors borrowed from saved) as they are */
    if (fn->n_outputs < SMALL && fn->ok_formulas && args_current(fn, r_fast))
        return d->backward(fn->args, r_fast, grads, fn->needs, g);
    bool any = false;
    for (int i = 0; i < fn->n_args; i++) any |= d->has_formula[i];
    if (!any)
        return ltc_errorf(LTC_ERR_ARG, "backward: op '%s' has no derivative formula (add "
                          "`derivatives:` to its entry in codegen/ops.yaml)", d->name);
    for (int i = 0; i < fn->n_args; i++)
        if (fn->needs[i] && !d->has_formula[i])
            return ltc_errorf(LTC_ERR_ARG, "backward: the derivative of op '%s' with respect to "
                              "its argument %d is not implemented (codegen/ops.yaml)", d->name,
                              i + 1);
    if (!d->backward && !foreign)
        return ltc_errorf(LTC_ERR_ARG, "backward: op '%s' has no derivative formula (add "
                          "`derivatives:` to its entry in codegen/ops.yaml)", d->name);
    ltc_status st = LTC_OK;
    ltc_ag_arg a_small[SMALL];
    ltc_tensor *r_small[SMALL];
    /* (only the entries used are cleared: this runs once per node of every backward) */
    ltc_ag_arg *a = fn->n_args < SMALL ? memset(a_small, 0, sizeof *a * (size_t)fn->n_args)
                                      : calloc((size_t)fn->n_args + 1, sizeof *a);
    ltc_tensor **results = fn->n_outputs < SMALL
                               ? memset(r_small, 0, sizeof *results * (size_t)fn->n_outputs)
                               : calloc((size_t)fn->n_outputs + 1, sizeof *results);
    if (!a || !results) {
        st = ltc_errorf(LTC_ERR_NOMEM, "backward: out of memory");
        goto done;
    }
    for (int i = 0, k = 0; i < fn->n_args && !st; i++) {
        a[i] = fn->args[i];
        if (a[i].kind == LTC_AG_TENSOR) {
            a[i].t = NULL;
            st = ltc_ag_unpack(fn, k++, &a[i].t);
        } else if (a[i].kind == LTC_AG_LIST) {
            a[i].list = calloc((size_t)a[i].n + 1, sizeof *a[i].list);
            if (!a[i].list) st = ltc_errorf(LTC_ERR_NOMEM, "backward: out of memory");
            for (int j = 0; j < a[i].n && !st; j++) st = ltc_ag_unpack(fn, k++, &a[i].list[j]);
        }
    }
    for (int r = 0; r < fn->n_outputs && !st && d->save_result; r++)
        st = ltc_ag_unpack_result(fn, r, &results[r]);
    if (!st) {
        st = d->backward && !(foreign_always && foreign)
                 ? d->backward(a, results, grads, fn->needs, g)
                 : foreign(foreign_ud, d, a, results, grads, fn->needs, g);
    }
done:
    for (int i = 0; a && i < fn->n_args; i++) {
        if (a[i].kind == LTC_AG_TENSOR) ltc_tensor_release(a[i].t);
        else if (a[i].kind == LTC_AG_LIST && a[i].list) {
            for (int j = 0; j < a[i].n; j++) ltc_tensor_release(a[i].list[j]);
            free(a[i].list);
        }
    }
    for (int r = 0; results && r < fn->n_outputs; r++) ltc_tensor_release(results[r]);
    if (a != a_small) free(a);
    if (results != r_small) free(results);
    return st;
}

static void free_grads(ltc_ag_grad *g, int n) {
    for (int i = 0; i < n; i++) {
        ltc_tensor_release(g[i].t);
        for (int j = 0; g[i].list && j < g[i].n; j++) ltc_tensor_release(g[i].list[j]);
        free(g[i].list);
        g[i] = (ltc_ag_grad){0};
    }
}

/* Runs one node: its backward, then the gradients routed to its inputs. */
static ltc_status run_node_here(ltc_grad_fn *fn, bool retain);
/* run_node_here on the device of the node's incoming gradient (that of its outputs), so
 * that what it creates from nothing (zeros for a missing gradient, a formula's ones or
 * scalars, a Lua formula's ltc.zeros) is made there, as PyTorch's engine runs a node under
 * its stream's device guard: the seed is on the root's device and .grad on the leaf's. */
static ltc_status run_node(ltc_grad_fn *fn, bool retain) {
    const ltc_tensor *on = NULL;
    for (int r = 0; r < fn->n_outputs && !on; r++) on = fn->gbuf[r];
    ltc_device prev;
    bool moved = ltc_device_follow(on, &prev);
    ltc_status st = run_node_here(fn, retain);
    if (moved) ltc_device_guard(prev, NULL);
    return st;
}

static ltc_status run_node_here(ltc_grad_fn *fn, bool retain) {
    ltc_status st = LTC_OK;
    ltc_tensor *grads_small[SMALL];
    ltc_ag_grad g_small[SMALL];
    ltc_tensor **grads = fn->n_outputs < SMALL
                             ? grads_small
                             : calloc((size_t)fn->n_outputs + 1, sizeof *grads);
    ltc_ag_grad *g = fn->n_args < SMALL ? g_small : calloc((size_t)fn->n_args + 1, sizeof *g);
    /* (only the entries used are cleared: this runs once per node of every backward) */
    for (int r = 0; grads == grads_small && r < fn->n_outputs; r++) grads[r] = NULL;
    for (int i = 0; g == g_small && i < fn->n_args; i++) g[i] = (ltc_ag_grad){0};
    if (!grads || !g) {
        st = ltc_errorf(LTC_ERR_NOMEM, "backward: out of memory");
        goto done;
    }
    for (int r = 0; r < fn->n_outputs && !st; r++) {
        grads[r] = fn->gbuf[r];
        fn->gbuf[r] = NULL;
        ltc_tensor *o = fn->outs[r];
        if (grads[r] && o && o->ag && o->ag->fn == fn && o->ag->nr == r) {
            if (o->ag->n_hooks && (st = run_hooks(o, &grads[r]))) break;
            if (o->ag->retains_grad && !capturing)
                st = accumulate(o, ltc_tensor_retain(grads[r]));
        }
        for (int k = 0; grads[r] && capturing && k < capturing->n && !st; k++)
            if (capturing->edges[k].fn == fn && capturing->edges[k].nr == r)
                st = capture_add(k, grads[r]);
        if (!grads[r]) {
            const ltc_shape *s = &fn->out_shapes[r];
            st = ltc_zeros(s->dims, s->ndim, s->dtype, &grads[r]);
        }
    }
    if (st) goto done;
    if (fn->kind == AG_OP) {
        if (fn->freed) {
            st = ltc_errorf(LTC_ERR_STATE, "backward: trying to backward through %s a second time "
                            "(its saved tensors were freed; pass {retain_graph = true} to the "
                            "first backward)", fn->name);
            goto done;
        }
        if ((st = op_backward(fn, grads, g))) goto done;
        for (int i = 0, k = 0; i < fn->n_args && !st; i++) {
            const ltc_ag_arg *a = &fn->args[i];
            if (a->kind == LTC_AG_TENSOR) {
                if (fn->needs[i] && g[i].t && (fn->edges[k].fn || fn->edges[k].leaf)) {
                    st = route(&fn->edges[k], g[i].t, &fn->in_shapes[k]);
                    g[i].t = NULL;
                }
                k++;
            } else if (a->kind == LTC_AG_LIST) {
                for (int j = 0; j < a->n && !st; j++, k++) {
                    if (!fn->needs[i] || !g[i].list || j >= g[i].n || !g[i].list[j]) continue;
                    if (fn->edges[k].fn || fn->edges[k].leaf) {
                        st = route(&fn->edges[k], g[i].list[j], &fn->in_shapes[k]);
                        g[i].list[j] = NULL;
                    }
                }
            }
        }
        if (!st && !retain) ltc_grad_fn_free_saved(fn);
    } else if (fn->kind == AG_TO_DEVICE) { /* the gradient back on the source's device */
        ltc_tensor *gi = NULL;
        if (!(st = ltc_tensor_to_device(grads[0], fn->dev, &gi))) {
            st = route(&fn->edges[0], gi, &fn->in_shapes[0]);
        } else { /* (a capture, say: the user wrote no read, the backward of t:to did) */
            char from[64], to[64];
            ltc_device_format(ltc_tensor_device(grads[0]), from, sizeof from);
            ltc_device_format(fn->dev, to, sizeof to);
            st = ltc_errorf(st, "backward: moving the gradient of t:to(\"%s\") back to %s: %s",
                            from, to, ltc_last_error());
        }
    } else {
        ltc_tensor *gi[2] = {NULL, NULL};
        if ((st = ltc_ag_inplace_backward(fn, grads[0], gi))) goto done;
        for (int i = 0; i < fn->n_saved; i++) {
            if (!gi[i]) continue;
            if (!st && (fn->edges[i].fn || fn->edges[i].leaf))
                st = route(&fn->edges[i], gi[i], &fn->in_shapes[i]);
            else ltc_tensor_release(gi[i]);
        }
    }
done:
    if (g) free_grads(g, fn->n_args);
    for (int r = 0; grads && r < fn->n_outputs; r++) ltc_tensor_release(grads[r]);
    if (grads != grads_small) free(grads);
    if (g != g_small) free(g);
    return st;
}

/* Backward from roots[0..n) with gradients gs (new references, taken over). */
static ltc_status walk(ltc_tensor *const *roots, ltc_tensor **gs, int n_roots, bool retain) {
    ltc_status st = LTC_OK;
    held_leaves mine = {0}, *outer = held;
    held = &mine;
    ltc_grad_fn **tops = calloc((size_t)n_roots + 1, sizeof *tops);
    ltc_grad_fn **order = NULL;
    int n = 0;
    if (!tops) st = ltc_errorf(LTC_ERR_NOMEM, "backward: out of memory");
    for (int i = 0; i < n_roots && !st; i++) { /* leaves first: their gradient is the grad */
        ltc_ag_meta *m = roots[i]->ag;
        if (m->fn) {
            tops[i] = ltc_grad_fn_retain(m->fn);
            continue;
        }
        ltc_edge e = {.leaf = roots[i]};
        st = route(&e, gs[i], &roots[i]->shape);
        gs[i] = NULL;
    }
    if (!st) st = topo(tops, n_roots, &order, &n);
    for (int i = 0; i < n_roots && !st; i++) {
        ltc_grad_fn *top = tops[i];
        if (!top) continue;
        int nr = roots[i]->ag->nr;
        if (top->gbuf[nr]) {
            ltc_tensor *sum = NULL;
            if ((st = ltc_add(top->gbuf[nr], gs[i], &sum))) break;
            ltc_tensor_release(top->gbuf[nr]);
            ltc_tensor_release(gs[i]);
            top->gbuf[nr] = sum;
        } else {
            top->gbuf[nr] = gs[i];
        }
        gs[i] = NULL;
    }
    for (int i = 0; i < n && !st; i++) {
        ltc_grad_fn *fn = order[i];
        bool any = false;
        for (int r = 0; r < fn->n_outputs; r++) any |= fn->gbuf[r] != NULL;
        if (any) st = run_node(fn, retain);
    }
    held = outer; /* a hook may run a backward of its own */
    for (int i = 0; i < mine.n; i++) {
        if (!st) st = deliver(mine.v[i].leaf, mine.v[i].g);
        else ltc_tensor_release(mine.v[i].g);
        ltc_tensor_release(mine.v[i].leaf);
    }
    free(mine.v);
    for (int i = 0; st && i < n; i++) { /* after a failure: the gradients in flight (on
                                          * success every node ran and took its own) */
        ltc_grad_fn *fn = order[i];
        for (int r = 0; r < fn->n_outputs; r++) {
            ltc_tensor_release(fn->gbuf[r]);
            fn->gbuf[r] = NULL;
        }
    }
    for (int i = 0; i < n_roots; i++) {
        ltc_tensor_release(gs[i]);
        gs[i] = NULL;
        if (tops) ltc_grad_fn_release(tops[i]);
    }
    free(order);
    free(tops);
    return st;
}

/* "2x3" (as Lua's table.concat(t:size(), "x")). */
static const char *size_x(const ltc_shape *s, char *buf, size_t n) {
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < s->ndim && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? "x" : "", (long long)s->dims[i]);
    return buf;
}

/* The gradient of root t: grad checked against t's size, or ones for a one-element t (new
 * reference in *out). `op` names the caller in errors. */
static ltc_status root_grad(const char *op, ltc_tensor *t, ltc_tensor *grad, ltc_tensor **out) {
    ltc_status st;
    char a[160], b[160];
    if (ltc_ag_stale(t) && (st = ltc_ag_refresh(t))) return st;
    if (!(t->ag && t->ag->requires_grad))
        return ltc_errorf(LTC_ERR_ARG, "%s: the tensor does not require grad and has no "
                          "grad_fn", op);
    if (!grad) {
        if (ltc_shape_numel(&t->shape) != 1)
            return ltc_errorf(LTC_ERR_ARG, "%s: grad can be implicitly created only for a "
                              "tensor with one element, not size %s; pass grad", op,
                              size_x(&t->shape, a, sizeof a));
        ltc_device prev;
        bool moved = ltc_device_follow(t, &prev); /* the seed on t's device */
        st = ltc_ones(t->shape.dims, t->shape.ndim, t->shape.dtype, out);
        if (moved) ltc_device_guard(prev, NULL);
        return st;
    }
    if (grad->shape.ndim != t->shape.ndim ||
        memcmp(grad->shape.dims, t->shape.dims, sizeof(int64_t) * (size_t)t->shape.ndim))
        return ltc_errorf(LTC_ERR_ARG, "%s: grad has size %s, the tensor %s", op,
                          size_x(&grad->shape, a, sizeof a), size_x(&t->shape, b, sizeof b));
    *out = ltc_tensor_retain(grad);
    return LTC_OK;
}

ltc_status ltc_backward(ltc_tensor *t, ltc_tensor *grad, bool retain_graph, bool create_graph) {
    ltc_tensor *g = NULL;
    ltc_ag_flush_deferred();
    ltc_status st = root_grad("backward", t, grad, &g);
    if (st) return st;
    bool prev = ltc_set_grad_enabled(create_graph);
    capture *outer = capturing;
    capturing = NULL;
    st = walk(&t, &g, 1, retain_graph || create_graph);
    capturing = outer;
    ltc_set_grad_enabled(prev);
    return st;
}

ltc_status ltc_autograd_grad(ltc_tensor *const *outputs, ltc_tensor *const *grad_outputs,
                             int n_out, ltc_tensor *const *inputs, int n_in, bool retain_graph,
                             bool create_graph, bool allow_unused, ltc_tensor **grads) {
    ltc_status st = LTC_OK;
    ltc_tensor **gs = calloc((size_t)n_out + 1, sizeof *gs);
    ltc_edge *edges = calloc((size_t)n_in + 1, sizeof *edges);
    if (!gs || !edges) st = ltc_errorf(LTC_ERR_NOMEM, "grad: out of memory");
    for (int k = 0; k < n_in; k++) grads[k] = NULL;
    for (int i = 0; i < n_out && !st; i++)
        st = root_grad("grad", outputs[i], grad_outputs ? grad_outputs[i] : NULL, &gs[i]);
    for (int k = 0; k < n_in && !st; k++) {
        if ((st = ltc_ag_edge_of(inputs[k], &edges[k]))) break;
        if (!edges[k].fn && !edges[k].leaf)
            st = ltc_errorf(LTC_ERR_ARG, "grad: input %d does not require grad", k + 1);
    }
    if (!st) {
        capture c = {inputs, edges, grads, n_in};
        capture *outer = capturing;
        bool prev = ltc_set_grad_enabled(create_graph);
        capturing = &c;
        st = walk(outputs, gs, n_out, retain_graph || create_graph);
        capturing = outer;
        ltc_set_grad_enabled(prev);
    }
    for (int k = 0; k < n_in && !st; k++)
        if (!grads[k] && !allow_unused)
            st = ltc_errorf(LTC_ERR_ARG, "grad: input %d was not used in the graph of the "
                            "outputs (pass allow_unused = true to get nil for it)", k + 1);
    if (!st) /* each gradient in its input's size and dtype (broadcast operands summed) */
        for (int k = 0; k < n_in && !st; k++)
            if (grads[k]) {
                ltc_tensor *x = grads[k];
                grads[k] = NULL;
                st = fit(x, &inputs[k]->shape, &grads[k]);
            }
    if (st)
        for (int k = 0; k < n_in; k++) {
            ltc_tensor_release(grads[k]);
            grads[k] = NULL;
        }
    for (int i = 0; gs && i < n_out; i++) ltc_tensor_release(gs[i]);
    free(gs);
    free(edges);
    return st;
}
